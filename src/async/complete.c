/* complete.c -- the end of an async call: its report (built from the
 * op's main round: per-node votes, errors, round trips), its counting,
 * the lock's new state, and the caller's callback, run exactly once. */
#include <stdio.h>
#include <string.h>

#include "async.h"
#include "timing.h"

/* Fills rep for call c that ended with rc at now. */
static void build_report(redlock_async_t *a, rl_call_t *c, redlock_report_t *rep, uint64_t now) {
    rl_op_t *op = &c->u.op;
    rl_report_begin(&a->ctx, rep);
    rep->attempts = c->kind == RL_CALL_ACQUIRE ? c->u.acq.tries : 1;
    if (op->r && op->r->t0_us)
        rl_report_votes(&a->ctx, rep, op->r); /* (no room: cancelled while it waited, or out of memory) */
    uint64_t start = c->kind == RL_CALL_ACQUIRE ? c->u.acq.start_us : op->r ? op->r->t0_us : 0;
    rep->elapsed_us = start && now > start ? (int64_t)(now - start) : 0;
}

/* Applies a finished extend to its lock (if the lock is still there). */
static void apply_extend(rl_call_t *c) {
    redlock_lock_t *l = c->lock;
    if (!l || c->u.op.rc != REDLOCK_OK) return;
    atomic_store(&l->deadline_us, c->u.life.deadline_us);
    atomic_store(&l->ttl_ms, c->u.life.ttl_ms);
}

void rl_call_complete(redlock_async_t *a, rl_call_t *c, uint64_t now) {
    int rc = c->u.op.rc;
    redlock_report_t rep;
    build_report(a, c, &rep, now);
    redlock_lock_t *lock = NULL;
    if (c->kind == RL_CALL_ACQUIRE) {
        lock = rc == REDLOCK_OK ? c->u.acq.lock : NULL;
        if (lock) rep.validity_ms = redlock_lock_validity_ms(lock), rep.slot = lock->slot;
        if (lock) rl_async_lock_add(a, lock);
        if (rc != REDLOCK_OK) rl_acquire_op_describe(&c->u.acq, &rep, now); /* how long it waited, a write-back */
        rl_stats_call(a->ctx.stats, RL_STAT_ACQUIRE, rc);
    } else if (c->kind == RL_CALL_EXTEND) {
        apply_extend(c);
        if (rc == REDLOCK_OK && c->lock) rep.validity_ms = redlock_lock_validity_ms(c->lock);
        rl_stats_call(a->ctx.stats, RL_STAT_EXTEND, rc);
    } else {
        if (c->lock) rl_async_lock_drop(a, c->lock);
        if (c->lock) rl_lock_destroy(c->lock); /* the release frees the handle */
        c->lock = NULL;
        rl_stats_call(a->ctx.stats, RL_STAT_RELEASE, rc);
    }
    rl_report_end(NULL, &rep, rc, NULL);
    redlock_acquire_cb acb = c->acb;
    redlock_done_cb dcb = c->dcb;
    void *arg = c->arg;
    int kind = c->kind;
    rl_call_recycle(a, c); /* before the callback: it may start calls or free the handle */
    if (kind == RL_CALL_ACQUIRE)
        acb(lock, rc, &rep, arg);
    else if (dcb)
        dcb(rc, &rep, arg);
}
