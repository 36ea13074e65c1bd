/* acquire.c -- the blocking acquire calls: argument checks, re-entry,
 * counting; the attempts themselves are the core's acquire operation. */
#include <stdio.h>
#include <string.h>

#include "blocking.h"

enum { KIND_MUTEX = 0, KIND_SHARED = -1 }; /* else a permit's limit */

/* Attempts until success, a final error, or retry_count retries (the
 * acquire operation of core/attempt.c, driven on this thread). kind:
 * KIND_MUTEX, KIND_SHARED, or a permit's limit. */
static int acquire_keys(redlock_t *rl, const rl_keys_t *keys, int kind, uint32_t ttl_ms, int64_t wait_ms,
                        redlock_lock_t **out, redlock_report_t *rep) {
    rl_acquire_op_t a;
    RL_ROUND(r);
    RL_ROUND(aux);
    uint64_t seen[REDLOCK_MAX_NODES];
    uint8_t free_slots[REDLOCK_MAX_PERMITS];
    a.op.r = r;
    a.op.aux = aux;
    a.op.seen = seen;
    rl_acquire_op_init(&a, rl, keys, ttl_ms, wait_ms, rep, rl->clock());
    if (kind > 0) rl_acquire_op_permit(&a, (unsigned)kind, free_slots);
    if (kind == KIND_SHARED) rl_acquire_op_shared(&a);
    int rc = rl_drive(&a.op);
    *out = a.lock;
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
    if ((rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg)) || (rc = rl_check_wait(wait_ms, msg, sizeof msg)))
        return rl_report_end(rl, rep, rc, msg);
    if (!rl->opt.reentrant && wait_ms != 0 && rl_held_by_me(rl, resource, len, 0)) {
        snprintf(msg, sizeof msg,
                 "'%.60s' is already held by this thread and reentrancy is off: waiting for it "
                 "would never end",
                 resource);
        return rl_report_end(rl, rep, REDLOCK_ERR_DEADLOCK, msg);
    }
    if (wait_ms != 0 && rl_held_by_me(rl, resource, len, 1)) {
        snprintf(msg, sizeof msg,
                 "this thread reads '%.60s' (a shared lock): waiting to write it would never end "
                 "(release the read lock first)",
                 resource);
        return rl_report_end(rl, rep, REDLOCK_ERR_DEADLOCK, msg);
    }
    if (rl->opt.reentrant && (*out = rl_held_reenter(rl, resource, len))) {
        if (rep) {
            rep->validity_ms = redlock_lock_validity_ms(*out);
            snprintf(rep->message, sizeof rep->message, "already held by this thread: re-entered");
        }
        return rl_report_end(rl, rep, REDLOCK_OK, NULL);
    }
    return acquire_keys(rl, &keys, KIND_MUTEX, ttl_ms, wait_ms, out, rep);
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
    if ((rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg)) || (rc = rl_check_wait(wait_ms, msg, sizeof msg)) ||
        (n > 1 && (rc = rl_check_delay(rl, "sets of resources", msg, sizeof msg))))
        return rl_report_end(rl, rep, rc, msg);
    return acquire_keys(rl, &keys, KIND_MUTEX, ttl_ms, wait_ms, out, rep);
}

int redlock_acquire_multi(redlock_t *rl, const char *const *resources, size_t n, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_lock_t **out, redlock_report_t *rep) {
    int rc = acquire_set(rl, resources, n, ttl_ms, wait_ms, out, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_ACQUIRE, rc);
    return rc;
}

/* redlock_acquire_permit without the counting. */
static int acquire_permit(redlock_t *rl, const char *resource, unsigned limit, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_lock_t **out, redlock_report_t *rep) {
    int rc = begin(rl, out, rep);
    if (rc) return rc;
    char msg[256];
    size_t len;
    rl_keys_t keys = {1, &resource, &len};
    if ((rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg)) || (rc = rl_check_wait(wait_ms, msg, sizeof msg)) ||
        (rc = rl_check_permit(rl, &keys, limit, msg, sizeof msg)) ||
        (rc = rl_check_delay(rl, "permits", msg, sizeof msg)))
        return rl_report_end(rl, rep, rc, msg);
    return acquire_keys(rl, &keys, (int)limit, ttl_ms, wait_ms, out, rep);
}

int redlock_acquire_permit(redlock_t *rl, const char *resource, unsigned limit, uint32_t ttl_ms, int64_t wait_ms,
                           redlock_lock_t **out, redlock_report_t *rep) {
    int rc = acquire_permit(rl, resource, limit, ttl_ms, wait_ms, out, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_ACQUIRE, rc);
    return rc;
}

/* redlock_acquire_shared without the counting. */
static int acquire_shared(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                          redlock_report_t *rep) {
    int rc = begin(rl, out, rep);
    if (rc) return rc;
    char msg[256];
    size_t len;
    rl_keys_t keys = {1, &resource, &len};
    if ((rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg)) || (rc = rl_check_wait(wait_ms, msg, sizeof msg)) ||
        (rc = rl_check_delay(rl, "readers' locks", msg, sizeof msg)))
        return rl_report_end(rl, rep, rc, msg);
    if (wait_ms != 0 && rl_held_by_me(rl, resource, len, 0)) {
        snprintf(msg, sizeof msg, "this thread holds '%.60s' exclusively: waiting to read it would never end",
                 resource);
        return rl_report_end(rl, rep, REDLOCK_ERR_DEADLOCK, msg);
    }
    return acquire_keys(rl, &keys, KIND_SHARED, ttl_ms, wait_ms, out, rep);
}

int redlock_acquire_shared(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                           redlock_report_t *rep) {
    int rc = acquire_shared(rl, resource, ttl_ms, wait_ms, out, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_ACQUIRE, rc);
    return rc;
}
