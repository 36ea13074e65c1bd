/* waitq.c -- the local queue of waiters (DESIGN.md 6): callers of one
 * handle that wait for the same resource line up in arrival order, and
 * only the first of them (the head) contends on the nodes; the others
 * wait without a round until they are first. A head keeps its place until
 * its acquire ends (granted, given up, cancelled); then the next becomes
 * head and the driver is told (rl->queue_moved) so it can wake it.
 *
 * One list per handle, in arrival order across resources (a head is the
 * first entry of its resource); it is short (the waiting callers), and
 * held_mu guards it (the blocking handle's threads share it).
 *
 * While a resource has waiters here that found it taken (refused, or
 * queued behind a head), its release channel is listened on
 * (rl->channel; an uncontended acquire subscribes to nothing); a release
 * heard there, or made by this handle, marks
 * the head woken (rl_waitq_wake), so it attempts at once instead of at
 * the end of its retry delay. */
#include <string.h>

#include "ops.h"
#include "stats.h"
#include "token.h"

/* 1 when a and b wait for the same lock: the same resource, both for
 * its mutex (a writer), both for a permit of its semaphore, or both to
 * read it. */
static int same_resource(const rl_acquire_op_t *a, const rl_acquire_op_t *b) {
    return a->keys.len[0] == b->keys.len[0] && !memcmp(a->keys.k[0], b->keys.k[0], a->keys.len[0]) &&
           !a->limit == !b->limit && a->shared == b->shared;
}

/* 1 when no earlier entry waits for a's resource (held_mu held). */
static int first_of_its_resource(const redlock_t *rl, const rl_acquire_op_t *a) {
    for (const rl_acquire_op_t *q = rl->waitq; q && q != a; q = q->qnext)
        if (same_resource(q, a)) return 0;
    return 1;
}

int rl_waitq_join(rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    rl_acquire_op_t **p = &rl->waitq;
    while (*p) p = &(*p)->qnext;
    *p = a;
    a->qnext = NULL;
    a->queued = 1;
    a->woken = 0;
    int head = first_of_its_resource(rl, a);
    pthread_mutex_unlock(&rl->held_mu);
    return head;
}

int rl_waitq_is_head(const rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    int head = !a->queued || first_of_its_resource(rl, a);
    pthread_mutex_unlock(&rl->held_mu);
    return head;
}

void rl_waitq_leave(rl_acquire_op_t *a) {
    if (!a->queued) return;
    redlock_t *rl = a->op.rl;
    pthread_mutex_lock(&rl->held_mu);
    int was_head = first_of_its_resource(rl, a), others = 0;
    for (rl_acquire_op_t **p = &rl->waitq; *p; p = &(*p)->qnext)
        if (*p == a) {
            *p = a->qnext;
            break;
        }
    a->queued = 0;
    for (const rl_acquire_op_t *q = rl->waitq; q && !others; q = q->qnext) others = same_resource(q, a);
    pthread_mutex_unlock(&rl->held_mu);
    if (a->listening && rl->channel) rl->channel(rl, a->keys.k[0], a->keys.len[0], 0);
    a->listening = 0;
    if (was_head && others && rl->queue_moved) rl->queue_moved(rl); /* a new head: wake it */
}

void rl_waitq_listen(rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    if (!a->queued || a->listening || !rl->channel) return;
    a->listening = 1;
    rl_stats_wait(rl->stats);
    rl->channel(rl, a->keys.k[0], a->keys.len[0], 1);
}

/* Marks the heads of res's local queues (its mutex's and its semaphore's)
 * woken from at_us and tells the driver. Returns 1 when that woke one
 * (it was not woken already). */
static int wake_at(redlock_t *rl, const char *res, size_t len, uint64_t at_us) {
    int woke = 0, found = 0;
    pthread_mutex_lock(&rl->held_mu);
    for (rl_acquire_op_t *q = rl->waitq; q; q = q->qnext) {
        if (q->keys.len[0] != len || memcmp(q->keys.k[0], res, len) || !first_of_its_resource(rl, q)) continue;
        found = 1; /* the head of the mutex's queue, or of the semaphore's (one channel for both) */
        woke |= !q->woken;
        if (!q->woken || at_us < q->woke_at_us) q->woke_at_us = at_us;
        q->woken = 1;
    }
    pthread_mutex_unlock(&rl->held_mu);
    if (found && rl->queue_moved) rl->queue_moved(rl);
    return woke;
}

void rl_waitq_wake(redlock_t *rl, const char *res, size_t len) {
    (void)wake_at(rl, res, len, 0);
}

void rl_waitq_heard(redlock_t *rl, const char *res, size_t len, int announced) {
    int woke = wake_at(rl, res, len, rl->clock() + rl_random_between(0, RL_HEARD_SPREAD_US));
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
