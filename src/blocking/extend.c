/* extend.c -- extending a held lock (blocking): the extend operation
 * of the core, serialised with other extends of the same lock (a caller
 * and the watchdog). */
#include <stdio.h>

#include "blocking.h"
#include "timing.h"

int rl_extend_round(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_report_t *rep,
                    const redlock_lock_t *kind, uint64_t *t0, uint64_t *deadline) {
    rl_life_op_t e;
    RL_ROUND(r);
    e.op.r = r;
    e.op.aux = NULL;
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

