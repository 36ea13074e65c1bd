/* simcheck.c -- the checkers (see sim.h).
 *
 * Mutual exclusion in simulated real time: every holder's validity window
 * runs from the moment its acquire called back to its deadline (its own
 * clock's reading turned into real time), or to its release or loss if
 * sooner; an extension moves the deadline. Windows of one resource must
 * not overlap: a mutex's at all, a k-permit semaphore's never more than k
 * at once, a writer's with no other. Fencing tokens of a mutex must rise
 * from one holder to the next.
 *
 * The protected store beside each mutex: a holder reads its version,
 * works, checks its validity, and writes version + 1. A write that
 * lands on a version other than the one its writer read overwrote a
 * write it never saw: a lost update. A fenced store (Kleppmann's) refuses
 * reads and writes that carry a token below the highest it has seen, so
 * fenced writes never lose updates while tokens rise. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Counts a violation of kind, traces it, and keeps the words of the run's first. */
void violation(int kind, int res, long long x, long long y, const char *fmt, ...) {
    S->violations++;
    S->vkind[kind]++;
    trace_rec(T_VIOLATION, res, kind, x, y);
    if (S->first_violation[0]) return;
    S->violation_at = kind == V_TWO_HOLDERS ? (uint64_t)x : S->now;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->first_violation, sizeof S->first_violation, fmt, ap);
    va_end(ap);
}

/* The highest fence of the windows of res's slot opened so far, but
 * those of lock `except`. */
static uint64_t max_fence(int res, int slot, long except) {
    uint64_t m = 0;
    for (size_t i = 0; i < S->nwins; i++) {
        const swin_t *w = &S->wins[i];
        if (w->res == res && w->slot == slot && w->lock_id != except && w->fence > m) m = w->fence;
    }
    return m;
}

/* Opens a holder's window now (see sim.h); a fenced mutex's token must
 * be above every earlier holder's of the same key. */
int check_open(int res, int kind, int client, int actor, uint64_t deadline_real, const redlock_lock_t *lock, int prev) {
    if (S->nwins == S->capwins) {
        S->capwins = S->capwins ? S->capwins * 2 : 256;
        if (!(S->wins = realloc(S->wins, S->capwins * sizeof *S->wins))) abort();
    }
    swin_t *w = &S->wins[S->nwins];
    uint64_t fence = redlock_lock_fence(lock);
    *w = (swin_t){res,
                  kind,
                  client,
                  actor,
                  S->now,
                  deadline_real,
                  fence,
                  redlock_lock_slot(lock),
                  prev >= 0 ? S->wins[prev].lock_id : S->next_lock_id++};
    if (fence && prev < 0) {
        uint64_t m = max_fence(res, w->slot, w->lock_id);
        if (fence <= m)
            violation(V_TOKEN_ORDER, res, (long long)fence, (long long)m,
                      "fencing token %llu of client %d is not above %llu, an earlier holder's of %s (slot %d)",
                      (unsigned long long)fence, client, (unsigned long long)m, S->cfg.res[res].name, w->slot);
    }
    return (int)S->nwins++;
}

/* Window win's deadline moved later. */
void check_extend(int win, uint64_t deadline_real) {
    if (win >= 0 && deadline_real > S->wins[win].end) S->wins[win].end = deadline_real;
}

/* Window win ends at `at` if that is before its deadline. */
void check_close(int win, uint64_t at) {
    if (win >= 0 && at < S->wins[win].end) S->wins[win].end = at;
}

/* Orders windows by start. */
static int by_start(const void *x, const void *y) {
    const swin_t *a = *(const swin_t *const *)x, *b = *(const swin_t *const *)y;
    return a->start < b->start ? -1 : a->start > b->start ? 1 : (a->lock_id > b->lock_id) - (a->lock_id < b->lock_id);
}

/* 1 when windows a and b of one resource may not overlap. */
static int exclusive(const swin_t *a, const swin_t *b) {
    if (a->lock_id == b->lock_id) return 0;
    if (a->kind == AK_PERMIT) return 0; /* counted instead */
    return !(a->kind == AK_READER && b->kind == AK_READER);
}

/* A window kind's name for messages. */
static const char *kind_name(int k) {
    return k == AK_PERMIT ? "permit" : k == AK_READER ? "reader" : k == AK_WRITER ? "writer" : "mutex";
}

/* Checks the windows of resource res (sorted by start, n of them). */
static void check_res(int res, swin_t **w, size_t n) {
    const sres_t *r = &S->cfg.res[res];
    for (size_t i = 0; i < n; i++) {
        unsigned permits = 1;
        for (size_t j = 0; j < i; j++) {
            if (w[j]->end <= w[i]->start || w[j]->lock_id == w[i]->lock_id) continue;
            if (w[i]->kind == AK_PERMIT) permits++;
            if (exclusive(w[j], w[i]))
                violation(V_TWO_HOLDERS, res, (long long)w[i]->start, (long long)(w[j]->end - w[i]->start),
                          "%s %s of client %d (from %.3f ms) overlaps %s of client %d (until %.3f ms) by %.3f ms",
                          r->name, kind_name(w[i]->kind), w[i]->client, (double)w[i]->start / 1000.0,
                          kind_name(w[j]->kind), w[j]->client, (double)w[j]->end / 1000.0,
                          (double)(w[j]->end - w[i]->start) / 1000.0);
        }
        if (w[i]->kind == AK_PERMIT && permits > r->limit)
            violation(V_TWO_HOLDERS, res, (long long)w[i]->start, permits, "%s: %u permit holders at %.3f ms, limit %u",
                      r->name, permits, (double)w[i]->start / 1000.0, r->limit);
    }
}

/* Checks every resource's windows at the end of the run. */
void check_windows(void) {
    swin_t **w = malloc((S->nwins + 1) * sizeof *w);
    if (!w) abort();
    for (int res = 0; res < S->cfg.n_res; res++) {
        size_t n = 0;
        for (size_t i = 0; i < S->nwins; i++)
            if (S->wins[i].res == res && S->wins[i].end > S->wins[i].start) w[n++] = &S->wins[i];
        qsort(w, n, sizeof *w, by_start);
        check_res(res, w, n);
    }
    free(w);
}

/* An operation reaches a protected store: applied (a write over a
 * version its writer did not read is a lost update) or, fenced with a
 * token below the highest seen, refused; the reply goes back. */
void store_event(sev_t *e) {
    sop_t *op = e->p;
    sstore_t *st = &S->stores[op->res];
    if (op->fenced && op->fence < st->seen) {
        op->applied = 0; /* stale: refused (reads too) */
        S->cov[op->write ? COV_STALE_WRITES : COV_STALE_READS]++;
    } else {
        if (op->fenced) st->seen = op->fence;
        if (!op->write) {
            op->version = st->version;
        } else {
            op->applied = 1;
            S->cov[COV_STORE_WRITES]++;
            if (op->read_version != st->version) {
                S->lost_updates++;
                violation(V_LOST_UPDATE, op->res, (long long)op->read_version, (long long)st->version,
                          "lost update on %s's store: client %d wrote over version %llu, having read %llu%s",
                          S->cfg.res[op->res].name, e->a, (unsigned long long)st->version,
                          (unsigned long long)op->read_version, op->fenced ? " (a fenced write)" : "");
            }
            st->version++;
        }
    }
    sim_push(E_STORE_REPLY, S->now + 200 + rng_below(&S->r_net, 400), e->a, e->b, e->g, op, e->n);
    e->p = NULL;
}
