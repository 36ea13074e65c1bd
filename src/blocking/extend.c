/* extend.c -- extending a held lock (blocking): the extend operation
 * of the core, serialised with other extends of the same lock (a caller
 * and the watchdog). */
#include <stdio.h>

#include "blocking.h"
#include "engine.h"
#include "timing.h"

int rl_extend_round(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_report_t *rep,
                    const redlock_lock_t *kind, uint64_t *t0, uint64_t *deadline) {
    rl_life_op_t e;
    RL_ROUND(r);
    e.op.r = r;
    e.op.aux = NULL;
    e.op.seen = NULL;
    rl_extend_op_init(&e, rl, keys, token, ttl_ms, rep);
    rl_life_op_kind(&e, kind);
    int rc = rl_drive(&e.op);
    *t0 = e.t0_us;
    *deadline = e.deadline_us;
    return rc;
}

/* The extension itself, with lock->mu held. */
static int extend_held(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep) {
    if (atomic_load(&lock->lost) || rl_validity_us(atomic_load(&lock->deadline_us), rl->clock()) <= 0)
        return rl_report_end(rl, rep, REDLOCK_ERR_NOT_HELD, NULL); /* never a silent re-acquire */
    rl_keys_t keys = rl_lock_keys(lock);
    uint64_t t0, deadline;
    int rc = rl_extend_round(rl, &keys, lock->token, ttl_ms, rep, lock, &t0, &deadline);
    if (rc == REDLOCK_OK) {
        atomic_store(&lock->deadline_us, deadline);
        atomic_store(&lock->ttl_ms, ttl_ms);
    }
    return rl_report_end(rl, rep, rc, NULL);
}

int rl_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep) {
    if (rep) rep->attempts = 1;
    pthread_mutex_lock(&lock->mu);
    int rc = extend_held(rl, lock, ttl_ms, rep);
    pthread_mutex_unlock(&lock->mu);
    rl_stats_call(rl->stats, RL_STAT_EXTEND, rc);
    return rc;
}

/* Starts job j's extension (its lock's mu taken here, released by
 * finish_job): the lock must still be valid, as for rl_extend. Its rc is
 * RL_EXTEND_BUSY when another extend of the lock holds its mu. */
static void start_job(redlock_t *rl, rl_extend_job_t *j, uint64_t now) {
    redlock_lock_t *l = j->lock;
    j->sent = 0;
    /* a batch holds many locks' mu at once, so it never waits for one (a
     * caller's extend in progress): that lock is retried a moment later */
    if (pthread_mutex_trylock(&l->mu) != 0) {
        j->rc = RL_EXTEND_BUSY;
        return;
    }
    if (atomic_load(&l->lost) || rl_validity_us(atomic_load(&l->deadline_us), now) <= 0) {
        j->rc = REDLOCK_ERR_NOT_HELD;
        return;
    }
    rl_keys_t keys = rl_lock_keys(l);
    j->e.op.r = j->r;
    j->e.op.aux = NULL;
    j->e.op.seen = NULL;
    rl_extend_op_init(&j->e, rl, &keys, l->token, j->ttl_ms, NULL);
    rl_life_op_kind(&j->e, l);
    unsigned before = rl_drive_started();
    int step = j->e.op.next(&j->e.op, now);
    j->sent = rl_drive_started() != before;
    if (step == RL_STEP_DONE || !j->sent) j->rc = step == RL_STEP_DONE ? j->e.op.rc : REDLOCK_ERR_NOMEM;
}

/* Waits for job j's round, judges it and updates its lock. */
static void finish_job(redlock_t *rl, rl_extend_job_t *j) {
    redlock_lock_t *l = j->lock;
    if (j->rc == RL_EXTEND_BUSY) return;
    if (j->sent) {
        rl_engine_wait(rl_blocking_of(rl)->eng, j->r);
        uint64_t now = rl->clock();
        rl_stats_round(rl->stats, now - j->r->t0_us);
        j->e.op.next(&j->e.op, now);
        j->rc = j->e.op.rc;
        if (j->rc == REDLOCK_OK) {
            atomic_store(&l->deadline_us, j->e.deadline_us);
            atomic_store(&l->ttl_ms, j->ttl_ms);
        }
    }
    pthread_mutex_unlock(&l->mu);
    rl_stats_call(rl->stats, RL_STAT_EXTEND, j->rc);
}

void rl_extend_many(redlock_t *rl, rl_extend_job_t *jobs, size_t n) {
    uint64_t now = rl->clock();
    rl_drive_defer(1);
    for (size_t i = 0; i < n; i++) start_job(rl, &jobs[i], now);
    rl_drive_defer(0);
    for (size_t i = 0; i < n; i++) finish_job(rl, &jobs[i]);
}

int redlock_extend_ex(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep) {
    char msg[256];
    rl_report_begin(rl, rep);
    int rc = rl_check_lock(rl, lock, msg, sizeof msg);
    if (rc == REDLOCK_OK) rc = rl_check_ttl(rl, ttl_ms, msg, sizeof msg);
    if (rc) {
        if (rl) rl_stats_call(rl->stats, RL_STAT_EXTEND, rc);
        return rl_report_end(rl, rep, rc, msg);
    }
    return rl_extend(rl, lock, ttl_ms, rep); /* counts the call */
}

int redlock_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms) {
    return redlock_extend_ex(rl, lock, ttl_ms, NULL);
}
