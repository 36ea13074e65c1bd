/* lifetime.c -- extending and releasing a held lock. */
#include <stdio.h>

#include "rl.h"
#include "timing.h"

/* Checks that lock may be used with rl; returns 0 or INVALID with msg. */
static int check_lock(const redlock_t *rl, const redlock_lock_t *lock, char *msg, size_t n) {
    if (!rl) return snprintf(msg, n, "redlock_t is NULL"), REDLOCK_ERR_INVALID;
    if (!lock) return snprintf(msg, n, "lock is NULL"), REDLOCK_ERR_INVALID;
    if (lock->owner != rl)
        return snprintf(msg, n, "lock on '%.60s' was acquired through another redlock_t", lock->res[0]),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

int rl_extend_round(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_report_t *rep,
                    uint64_t *t0, uint64_t *deadline) {
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    rl_round_t r;
    rl_round_init(&r, rl->opt.n_nodes, RL_STOP_MAJORITY, rep ? rep->nodes : NULL);
    rl_run_script(rl, &r, keys->n == 1 ? rl->s_extend : rl->s_extend_multi, keys, token, ttl);
    uint64_t now = rl->clock();
    rl_report_round(rep, &r, now);
    if (r.yes < r.quorum) return rl_round_reason(&r, REDLOCK_ERR_NOT_HELD);
    *t0 = r.t0_us;
    *deadline = rl_deadline_us(r.t0_us, ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
    if (rl_validity_us(*deadline, now) <= 0) return REDLOCK_ERR_EXPIRED;
    if (rep) rep->validity_ms = rl_validity_ms(rl_validity_us(*deadline, now));
    return REDLOCK_OK;
}

/* The extension itself, with lock->mu held. */
static int extend_held(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep) {
    if (atomic_load(&lock->lost) || rl_validity_us(atomic_load(&lock->deadline_us), rl->clock()) <= 0)
        return rl_report_end(rl, rep, REDLOCK_ERR_NOT_HELD, NULL); /* never a silent re-acquire */
    rl_keys_t keys = rl_lock_keys(lock);
    uint64_t t0, deadline;
    int rc = rl_extend_round(rl, &keys, lock->token, ttl_ms, rep, &t0, &deadline);
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
    int rc = check_lock(rl, lock, msg, sizeof msg);
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

int rl_release_keys(redlock_t *rl, const rl_keys_t *keys, const char *token, redlock_report_t *rep) {
    rl_round_t r;
    rl_release_round(rl, &r, keys, token, rep ? rep->nodes : NULL);
    rl_report_round(rep, &r, rl->clock());
    if (r.yes >= r.quorum) return REDLOCK_OK;
    if (r.no >= r.quorum) return REDLOCK_ERR_NOT_HELD;
    return r.auth_failed > r.n - r.quorum ? REDLOCK_ERR_AUTH : REDLOCK_ERR_NO_QUORUM;
}

/* redlock_release_ex without the counting. */
static int release_lock(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep) {
    char msg[256];
    rl_report_begin(rl, rep);
    int rc = check_lock(rl, lock, msg, sizeof msg);
    if (rc) {
        redlock_lock_free(lock); /* release always frees the handle, even on bad input */
        return rl_report_end(rl, rep, rc, msg);
    }
    if (rep) rep->attempts = 1;
    if (lock->registered && rl_held_drop(lock)) { /* an outer hold of this thread remains */
        if (rep) {
            rep->validity_ms = redlock_lock_validity_ms(lock);
            snprintf(rep->message, sizeof rep->message, "re-entered lock: an outer hold remains");
        }
        return rl_report_end(rl, rep, REDLOCK_OK, NULL);
    }
    if (lock->wd_attached) rl_watch_stop(lock);
    rl_keys_t keys = rl_lock_keys(lock);
    rc = rl_release_keys(rl, &keys, lock->token, rep);
    rl_lock_destroy(lock);
    return rl_report_end(rl, rep, rc, NULL);
}

int redlock_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep) {
    int rc = release_lock(rl, lock, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_RELEASE, rc);
    return rc;
}

int redlock_release(redlock_t *rl, redlock_lock_t *lock) {
    return redlock_release_ex(rl, lock, NULL);
}
