/* acquire.c -- acquiring a lock: one attempt (SET NX PX on every node, or
 * the all-or-nothing script for a set), the validity check, the clean-up
 * after a failed attempt, and the jittered retries. */
#include <stdio.h>
#include <string.h>

#include "rl.h"
#include "timing.h"
#include "token.h"

/* Sends the attempt's command to every node: plain SET NX PX for one
 * resource (the format every Redlock client shares), else the script. */
static void send_attempt(redlock_t *rl, rl_round_t *r, const rl_keys_t *keys, const char *token, const char *ttl) {
    if (keys->n > 1) {
        rl_run_script(rl, r, rl->s_acquire_multi, keys, token, ttl);
        return;
    }
    const char *argv[6] = {"SET", keys->k[0], token, "NX", "PX", ttl};
    size_t lens[6] = {3, keys->len[0], REDLOCK_TOKEN_LEN, 2, 2, strlen(ttl)};
    rl_run_command(rl, r, 6, argv, lens, rl_classify_set);
}

/* One attempt. Returns REDLOCK_OK with *out set, or why it failed (after
 * sending the release to every node: a node that timed out may still have
 * applied the SET). */
static int attempt(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_lock_t **out,
                   redlock_report_t *rep) {
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    rl_round_t r;
    rl_round_init(&r, rl->opt.n_nodes, RL_STOP_MAJORITY, rep ? rep->nodes : NULL);
    r.grants = 1;
    send_attempt(rl, &r, keys, token, ttl);
    uint64_t now = rl->clock();
    rl_report_round(rep, &r, now);
    int rc = REDLOCK_ERR_EXPIRED;
    if (r.yes >= r.quorum) {
        uint64_t deadline = rl_deadline_us(r.t0_us, ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
        if (rl_validity_us(deadline, now) > 0) {
            *out = rl_lock_new(rl, keys, token, ttl_ms, r.t0_us, deadline);
            if (*out) {
                if (rep) rep->validity_ms = rl_validity_ms(rl_validity_us(deadline, now));
                return REDLOCK_OK;
            }
            rc = REDLOCK_ERR_NOMEM;
        }
    } else {
        rc = rl_round_reason(&r, REDLOCK_ERR_TAKEN);
    }
    rl_round_t cleanup;
    rl_release_round(rl, &cleanup, keys, token, NULL);
    return rc;
}

/* One attempt, fenced when the options ask for it. */
static int attempt_any(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms,
                       redlock_lock_t **out, redlock_report_t *rep) {
    if (rl->opt.fencing && keys->n == 1) return rl_attempt_fenced(rl, keys, token, ttl_ms, out, rep);
    return attempt(rl, keys, token, ttl_ms, out, rep);
}

/* Returns 1 when an attempt that failed with rc is worth repeating. */
static int retryable(int rc) {
    return rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM || rc == REDLOCK_ERR_EXPIRED;
}

/* Attempts until success, a final error, or retry_count retries; with
 * wait_ms > 0 the last attempt is made at the deadline at the latest. */
static int acquire_keys(redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                        redlock_report_t *rep) {
    char token[REDLOCK_TOKEN_LEN + 1];
    rl_token_new(token); /* one token for every attempt of this call */
    uint64_t start = rl->clock();
    int rc;
    for (uint32_t n = 0;; n++) {
        if (rep) rep->attempts = n + 1;
        rc = attempt_any(rl, keys, token, ttl_ms, out, rep);
        if (rc == REDLOCK_OK || !retryable(rc) || n >= rl->opt.retry_count || wait_ms == 0) break;
        uint64_t d = (uint64_t)rl_random_between(rl->opt.retry_delay_ms - rl->opt.retry_jitter_ms,
                                                 rl->opt.retry_delay_ms + rl->opt.retry_jitter_ms) * 1000u;
        int last = 0;
        if (wait_ms > 0) { /* like flock -w: never sleep past the deadline, try once more at it */
            uint64_t now = rl->clock(), end = start + (uint64_t)wait_ms * 1000u;
            if (now >= end) break;
            if (now + d >= end) d = end - now, last = 1;
        }
        rl_sleep_us(d);
        if (last) {
            if (rep) rep->attempts = n + 2;
            rc = attempt_any(rl, keys, token, ttl_ms, out, rep);
            break;
        }
    }
    if (rc == REDLOCK_OK && keys->n == 1) rl_held_add(rl, *out); /* tracked for re-entry and redlock_free */
    return rl_report_end(rl, rep, rc, NULL);
}

/* Common checks of the acquire calls; returns 0 or the error (reported). */
static int begin(redlock_t *rl, redlock_lock_t **out, redlock_report_t *rep) {
    if (out) *out = NULL;
    rl_report_begin(rl, rep);
    if (!rl || !out) return rl_report_end(rl, rep, REDLOCK_ERR_INVALID, rl ? "out is NULL" : "redlock_t is NULL");
    return REDLOCK_OK;
}

/* redlock_acquire_ex without the counting. */
static int acquire_one(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                       redlock_report_t *rep) {
    int rc = begin(rl, out, rep);
    if (rc) return rc;
    char msg[256];
    size_t len;
    rl_keys_t keys = {1, &resource, &len};
    if ((rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg))) return rl_report_end(rl, rep, rc, msg);
    if (rl->opt.reentrant && (*out = rl_held_reenter(rl, resource, len))) {
        if (rep) {
            rep->validity_ms = redlock_lock_validity_ms(*out);
            snprintf(rep->message, sizeof rep->message, "already held by this thread: re-entered");
        }
        return rl_report_end(rl, rep, REDLOCK_OK, NULL);
    }
    return acquire_keys(rl, &keys, ttl_ms, wait_ms, out, rep);
}

int redlock_acquire_ex(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                       redlock_report_t *rep) {
    int rc = acquire_one(rl, resource, ttl_ms, wait_ms, out, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_ACQUIRE, rc);
    return rc;
}

int redlock_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out) {
    return redlock_acquire_ex(rl, resource, ttl_ms, -1, out, NULL);
}

int redlock_try_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out) {
    return redlock_acquire_ex(rl, resource, ttl_ms, 0, out, NULL);
}

/* redlock_acquire_multi without the counting. */
static int acquire_set(redlock_t *rl, const char *const *resources, size_t n, uint32_t ttl_ms, int64_t wait_ms,
                       redlock_lock_t **out, redlock_report_t *rep) {
    int rc = begin(rl, out, rep);
    if (rc) return rc;
    char msg[256];
    size_t lens[REDLOCK_MAX_RESOURCES];
    if (!resources) return rl_report_end(rl, rep, REDLOCK_ERR_INVALID, "resources is NULL");
    rl_keys_t keys = {n, resources, lens};
    if ((rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg))) return rl_report_end(rl, rep, rc, msg);
    return acquire_keys(rl, &keys, ttl_ms, wait_ms, out, rep);
}

int redlock_acquire_multi(redlock_t *rl, const char *const *resources, size_t n, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_lock_t **out, redlock_report_t *rep) {
    int rc = acquire_set(rl, resources, n, ttl_ms, wait_ms, out, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_ACQUIRE, rc);
    return rc;
}
