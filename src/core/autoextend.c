/* autoextend.c -- the auto-extension policy (see redlock_autoextend), shared
 * by the blocking watchdog thread and the async handle's timers: when a
 * watched lock is due, what to do, and what an extension's outcome means.
 * Callers hold whatever guards the lock's watch fields. */
#include "ops.h"
#include "timing.h"

int rl_autoextend_setup(redlock_lock_t *l, const redlock_autoextend_options_t *opt, redlock_lost_fn on_lost, void *arg,
                        uint64_t now) {
    redlock_autoextend_options_t d = {0, 0, 0};
    if (!opt) opt = &d;
    uint32_t ttl = atomic_load(&l->ttl_ms);
    uint32_t interval = opt->interval_ms ? opt->interval_ms : ttl / 3;
    if (interval == 0 || interval >= ttl) return REDLOCK_ERR_INVALID; /* it would expire between extensions */
    l->interval_ms = interval;
    l->max_ext = opt->max_extensions;
    l->hold_until_us = opt->max_hold_ms ? l->acquired_us + opt->max_hold_ms * 1000u : 0;
    l->hold_reached = 0;
    l->on_lost = on_lost;
    l->lost_arg = arg;
    l->next_us = now + (uint64_t)interval * 1000u;
    return REDLOCK_OK;
}

uint32_t rl_autoextend_ttl(const redlock_lock_t *l, uint64_t now) {
    uint32_t ttl = atomic_load(&l->ttl_ms);
    if (!l->hold_until_us || now + (uint64_t)ttl * 1000u <= l->hold_until_us) return ttl;
    return now >= l->hold_until_us ? 0 : (uint32_t)((l->hold_until_us - now) / 1000u);
}

/* 1 when the lock's cap forbids another extension at now: the extensions
 * are used up, or the hold cap is reached or leaves nothing to extend. */
static int capped(const redlock_lock_t *l, uint64_t now) {
    if (l->max_ext && atomic_load(&l->extensions) >= l->max_ext) return 1;
    if (!l->hold_until_us) return 0;
    return l->hold_reached || rl_autoextend_ttl(l, now) == 0 || l->hold_until_us <= atomic_load(&l->deadline_us);
}

int rl_autoextend_due(redlock_lock_t *l, uint64_t now) {
    if (rl_validity_us(atomic_load(&l->deadline_us), now) <= 0) return REDLOCK_ERR_EXPIRED;
    if (capped(l, now)) { /* no more extensions: lost once it expires */
        l->next_us = atomic_load(&l->deadline_us);
        return 1;
    }
    return 0;
}

int rl_autoextend_after(redlock_lock_t *l, int rc, uint64_t now) {
    if (rc == REDLOCK_OK) {
        atomic_fetch_add(&l->extensions, 1);
        l->next_us = now + (uint64_t)l->interval_ms * 1000u;
        if (l->hold_until_us && now + (uint64_t)atomic_load(&l->ttl_ms) * 1000u >= l->hold_until_us) {
            l->hold_reached = 1; /* (cut to the cap: it is lost when its validity ends) */
            if (l->next_us > atomic_load(&l->deadline_us)) l->next_us = atomic_load(&l->deadline_us);
        }
        return 0;
    }
    if (rc == REDLOCK_ERR_NOT_HELD || rc == REDLOCK_ERR_AUTH) return rc;
    /* no quorum this time: try again soon, while validity lasts; never sooner than
     * 1 ms, so rounds that fail at once (every node down) do not spin */
    int64_t left = rl_validity_us(atomic_load(&l->deadline_us), now);
    if (left <= 0) return rc;
    uint64_t retry = (uint64_t)l->interval_ms * 250u; /* a quarter interval, in µs */
    if (retry > (uint64_t)left / 2) retry = (uint64_t)left / 2;
    if (retry < 1000u) retry = 1000u;
    l->next_us = now + retry;
    return 0;
}

void rl_autoextend_lost(redlock_t *rl, redlock_lock_t *l, int reason) {
    atomic_store(&l->lost, 1);
    rl_stats_lost(rl->stats);
    rl_logf(&rl->log, REDLOCK_LOG_WARN, "lock on '%.60s' lost: %s", l->res[0], redlock_strerror(reason));
}
