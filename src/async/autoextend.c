/* autoextend.c -- auto-extension on the loop (redlock_async_autoextend): one
 * auto-extension call per watched lock, waiting in the timer heap until the lock's
 * next extension is due, then running the core's extend operation; the
 * policy (when, caps, retries, when a lock is lost) is core/autoextend.c's,
 * shared with the blocking watchdog. */
#include "async.h"

/* Ends the auto-extension of c's lock: marks it lost and runs on_lost (from the
 * loop), or just forgets it (reason 0). */
static void end_autoextend(redlock_async_t *a, rl_call_t *c, int reason) {
    redlock_lock_t *l = c->lock;
    rl_call_recycle(a, c);
    if (!l) return;
    l->autoext = NULL;
    if (!reason) return;
    rl_autoextend_lost(&a->ctx, l, reason);
    if (l->on_lost) l->on_lost(l, reason, l->lost_arg); /* may release or free l */
}

void rl_async_autoextend_done(redlock_async_t *a, rl_call_t *c, uint64_t now) {
    redlock_lock_t *l = c->lock;
    if (!l) {
        end_autoextend(a, c, 0);
        return;
    }
    if (c->started) { /* an extension ended */
        c->started = 0;
        int rc = c->u.op.rc;
        if (rc == REDLOCK_OK) {
            atomic_store(&l->deadline_us, c->u.life.deadline_us);
            atomic_store(&l->ttl_ms, c->u.life.ttl_ms);
        }
        rl_stats_call(a->ctx.stats, RL_STAT_EXTEND, rc);
        int lost = rl_autoextend_after(l, rc, now);
        if (lost) {
            end_autoextend(a, c, lost);
            return;
        }
    } else { /* its time came */
        int due = rl_autoextend_due(l, now);
        if (due < 0) {
            end_autoextend(a, c, due);
            return;
        }
        if (due == 0) {
            rl_keys_t keys = rl_lock_keys(l);
            rl_extend_op_init(&c->u.life, &a->ctx, &keys, l->token, rl_autoextend_ttl(l, now), NULL);
            rl_life_op_kind(&c->u.life, l);
            c->started = 1;
            if (c->u.op.next(&c->u.op, now) == RL_STEP_ROUND) return;
            c->started = 0; /* cannot happen: an extend's first step sends its round */
        }
    }
    if (rl_async_wait(a, c, l->next_us) < 0) end_autoextend(a, c, REDLOCK_ERR_NOMEM);
}

void rl_async_autoextend_stop(redlock_async_t *a, redlock_lock_t *lock) {
    rl_call_t *c = lock->autoext;
    lock->autoext = NULL;
    if (!c) return;
    rl_nodes_abandon(&a->ns, c->u.op.r);
    c->lock = NULL;
    rl_call_recycle(a, c);
}
