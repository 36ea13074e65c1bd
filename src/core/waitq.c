/* waitq.c -- the local queues of waiters (doc/design.md, "Waiting"):
 * callers of one handle that wait for the same resource line up in arrival
 * order, and only the first of them (the head) contends on the nodes; the
 * others wait without a round until they are first. A head keeps its place
 * until its acquire ends (granted, given up, cancelled); then the next
 * becomes head and the driver is told (rl->queue_moved) so it can wake that
 * one waiter (no other is disturbed).
 *
 * One line per resource and kind (its mutex, its semaphore's permits, its
 * readers), found through a hash table (doc/design.md, "Cost flat in locks
 * and waiters"): joining, leaving and waking cost the same with 10 000
 * resources waited on as with one. held_mu guards the lines (the blocking
 * handle's threads share them).
 *
 * While a resource has waiters here that found it taken (refused, or
 * queued behind a head), its release channel is listened on
 * (rl->channel; an uncontended acquire subscribes to nothing); a release
 * heard there, or made by this handle, marks the head woken
 * (rl_waitq_wake), so it attempts at once instead of at the end of its
 * retry delay. */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "stats.h"
#include "token.h"

/* The kinds of lock a resource's waiters may want. */
enum { LINE_MUTEX = 0, LINE_PERMIT, LINE_SHARED, LINE_KINDS };

/* A line is never empty (the last to leave frees it), so its name is its
 * head's: no copy of it (one line per resource waited on). */
typedef struct rl_waitline {
    rl_map_node_t node; /* in rl->waitq */
    rl_acquire_op_t *head, *tail;
    uint32_t len; /* the resource's bytes: head->keys.k[0] */
    uint8_t kind;
} rl_waitline_t;

static int kind_of(const rl_acquire_op_t *a) {
    return a->limit ? LINE_PERMIT : a->shared ? LINE_SHARED : LINE_MUTEX;
}

/* The line of res for kind, or NULL (held_mu held). */
static rl_waitline_t *find_line(const redlock_t *rl, const char *res, size_t len, int kind) {
    uint64_t h = rl_map_hash2(&rl->waitq, res, len, (uint64_t)kind);
    for (rl_map_node_t *x = rl_map_first(&rl->waitq, h); x; x = rl_map_next(x)) {
        rl_waitline_t *w = RL_MAP_ENTRY(x, rl_waitline_t, node);
        if (w->kind == kind && w->len == len && !memcmp(w->head->keys.k[0], res, len)) return w;
    }
    return NULL;
}

/* a's line, made (empty) when it has none yet; NULL when out of memory
 * (held_mu held). */
static rl_waitline_t *line_for(redlock_t *rl, const rl_acquire_op_t *a) {
    const char *res = a->keys.k[0];
    size_t len = a->keys.len[0];
    int kind = kind_of(a);
    rl_waitline_t *w = find_line(rl, res, len, kind);
    if (w || !(w = malloc(sizeof *w))) return w;
    w->head = w->tail = NULL; /* (a joins it at once: never empty in the table) */
    w->len = (uint32_t)len;
    w->kind = (uint8_t)kind;
    rl_map_insert(&rl->waitq, &w->node, rl_map_hash2(&rl->waitq, res, len, (uint64_t)kind));
    return w;
}

int rl_waitq_join(rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    rl_waitline_t *w = line_for(rl, a);
    if (w) {
        a->qnext = NULL;
        if (w->tail)
            w->tail->qnext = a;
        else
            w->head = a;
        w->tail = a;
    }
    a->line = w;
    a->queued = w != NULL; /* out of memory: it contends unqueued, as a head */
    a->woken = 0;
    int head = !w || w->head == a;
    pthread_mutex_unlock(&rl->held_mu);
    return head;
}

int rl_waitq_is_head(const rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    int head = !a->queued || a->line->head == a;
    pthread_mutex_unlock(&rl->held_mu);
    return head;
}

/* Takes a out of its line, dropping the line once empty; returns the new
 * head when a was the head and others remain, else NULL (held_mu held). */
static rl_acquire_op_t *unlink_op(redlock_t *rl, rl_acquire_op_t *a) {
    rl_waitline_t *w = a->line;
    int was_head = w->head == a;
    rl_acquire_op_t *prev = NULL;
    for (rl_acquire_op_t *q = w->head; q && q != a; q = q->qnext) prev = q;
    if (prev)
        prev->qnext = a->qnext;
    else
        w->head = a->qnext;
    if (w->tail == a) w->tail = prev;
    a->qnext = NULL;
    a->line = NULL;
    a->queued = 0;
    if (w->head) return was_head ? w->head : NULL;
    rl_map_remove(&rl->waitq, &w->node);
    free(w);
    return NULL;
}

int rl_waitq_leave(rl_acquire_op_t *a) {
    if (!a->queued) return 1;
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    int alone = a->line->head == a && a->line->tail == a;
    rl_acquire_op_t *head = unlink_op(rl, a);
    if (head && rl->queue_moved) rl->queue_moved(rl, head); /* a new head: wake it */
    pthread_mutex_unlock(&rl->held_mu);
    if (a->listening && rl->channel) rl->channel(rl, a->keys.k[0], a->keys.len[0], 0);
    a->listening = 0;
    return alone;
}

void rl_waitq_listen(rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    if (!a->queued || a->listening || !rl->channel) return;
    a->listening = 1;
    rl_stats_wait(rl->stats);
    rl->channel(rl, a->keys.k[0], a->keys.len[0], 1);
}

/* Marks the heads of res's lines (its mutex's, its semaphore's, its
 * readers': one channel for all) woken from at_us and tells the driver
 * when that is sooner than before; other_named: the release named another
 * handle, whose turn it is (a head with a place in the line sleeps on).
 * Returns 1 when that woke one (it was not woken already). */
static int wake_at(redlock_t *rl, const char *res, size_t len, uint64_t at_us, int other_named) {
    int woke = 0;
    pthread_mutex_lock(&rl->held_mu);
    for (int kind = 0; kind < LINE_KINDS; kind++) {
        rl_waitline_t *w = find_line(rl, res, len, kind);
        if (!w || (other_named && w->head->lined)) continue;
        rl_acquire_op_t *q = w->head;
        int sooner = !q->woken || at_us < q->woke_at_us;
        woke |= !q->woken;
        if (sooner) q->woke_at_us = at_us;
        q->woken = 1;
        if (sooner && rl->queue_moved) rl->queue_moved(rl, q); /* (else it was told already) */
    }
    pthread_mutex_unlock(&rl->held_mu);
    return woke;
}

void rl_waitq_wake(redlock_t *rl, const char *res, size_t len) {
    (void)wake_at(rl, res, len, 0, 0);
}

void rl_waitq_heard(redlock_t *rl, const char *res, size_t len, int announced, const char *next, size_t nlen) {
    int me = nlen == REDLOCK_TOKEN_LEN && !memcmp(next, rl->line_id, nlen);
    uint64_t now = rl->clock();
    int woke = wake_at(rl, res, len, me ? now : now + rl_random_between(0, RL_HEARD_SPREAD_US), nlen && !me);
    if (woke && announced) rl_stats_wakeup(rl->stats);
}

int rl_waitq_woken(rl_acquire_op_t *a, int clear, uint64_t *at_us) {
    if (!a->queued) return 0;
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    int w = a->woken;
    if (at_us) *at_us = a->woke_at_us;
    if (clear) a->woken = 0;
    pthread_mutex_unlock(&rl->held_mu);
    return w;
}
