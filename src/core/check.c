/* check.c -- argument checks shared by every call: resource sets and TTLs.
 * Each returns REDLOCK_OK or REDLOCK_ERR_INVALID with the bad value named. */
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "rl.h"
#include "slot.h"
#include "timing.h"

int rl_check_ttl(const redlock_t *rl, uint32_t ttl_ms, char *msg, size_t n) {
    uint64_t drift_ms = (rl_drift_us(ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms) + 999) / 1000;
    if (ttl_ms == 0 || ttl_ms > INT32_MAX)
        return snprintf(msg, n, "ttl_ms=%u is out of range: it must be 1..%d", ttl_ms, INT32_MAX), REDLOCK_ERR_INVALID;
    if (rl->opt.max_ttl_ms && ttl_ms > rl->opt.max_ttl_ms)
        return snprintf(msg, n, "ttl_ms=%u exceeds max_ttl_ms=%u (the quarantines rely on it)", ttl_ms,
                        rl->opt.max_ttl_ms),
               REDLOCK_ERR_INVALID;
    if ((uint64_t)ttl_ms <= drift_ms + rl->opt.op_timeout_ms)
        return snprintf(msg, n,
                        "ttl_ms=%u is too short to ever be valid: it must exceed drift (%llu ms) + "
                        "op_timeout_ms (%u ms)",
                        ttl_ms, (unsigned long long)drift_ms, rl->opt.op_timeout_ms),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

/* Checks one resource name; returns 0 or INVALID with msg. */
static int check_resource(const char *res, size_t *len, char *msg, size_t n) {
    if (!res) return snprintf(msg, n, "resource is NULL"), REDLOCK_ERR_INVALID;
    *len = strnlen(res, REDLOCK_MAX_RESOURCE + 1);
    if (*len == 0) return snprintf(msg, n, "resource is empty"), REDLOCK_ERR_INVALID;
    if (*len > REDLOCK_MAX_RESOURCE)
        return snprintf(msg, n, "resource '%.40s...' is longer than %d bytes", res, REDLOCK_MAX_RESOURCE),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

int rl_check_keys(const rl_keys_t *keys, char *msg, size_t n) {
    if (keys->n == 0 || keys->n > REDLOCK_MAX_RESOURCES)
        return snprintf(msg, n, "%zu resources: a lock takes 1..%d", keys->n, REDLOCK_MAX_RESOURCES),
               REDLOCK_ERR_INVALID;
    for (size_t i = 0; i < keys->n; i++) {
        size_t len;
        int rc = check_resource(keys->k[i], &len, msg, n);
        if (rc) return rc;
        keys->len[i] = len;
        for (size_t j = 0; j < i; j++)
            if (keys->len[j] == len && !memcmp(keys->k[j], keys->k[i], len))
                return snprintf(msg, n, "resource '%.60s' appears twice in the set", keys->k[i]), REDLOCK_ERR_INVALID;
    }
    return REDLOCK_OK;
}

/* The slot resource res (len bytes) lives in on a cluster node. */
static uint16_t cluster_slot(const char *res, size_t len) {
    char k[REDLOCK_MAX_RESOURCE + RL_CLUSTER_KEY_EXTRA + 1];
    size_t kn = rl_cluster_key(k, sizeof k, res, len);
    return kn ? rl_key_slot(k, kn) : rl_key_slot(res, len);
}

/* On a Redis Cluster node a lock's keys are set by one script, so they
 * must share a slot: 0, or INVALID naming two resources that do not. */
static int check_slots(const redlock_t *rl, const rl_keys_t *keys, char *msg, size_t n) {
    if (!rl->cluster_nodes || keys->n < 2) return REDLOCK_OK;
    uint16_t first = cluster_slot(keys->k[0], keys->len[0]);
    for (size_t i = 1; i < keys->n; i++) {
        uint16_t s = cluster_slot(keys->k[i], keys->len[i]);
        if (s == first) continue;
        return snprintf(msg, n,
                        "resources '%.60s' (slot %u) and '%.60s' (slot %u) fall in different slots of a "
                        "Redis Cluster node: give them one hash tag, as in '{%.40s}:a' and '{%.40s}:b'",
                        keys->k[0], first, keys->k[i], s, keys->k[0], keys->k[0]),
               REDLOCK_ERR_INVALID;
    }
    return REDLOCK_OK;
}

int rl_check_request(const redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, char *msg, size_t n) {
    int rc = rl_check_keys(keys, msg, n);
    if (!rc) rc = check_slots(rl, keys, msg, n);
    return rc ? rc : rl_check_ttl(rl, ttl_ms, msg, n);
}


/* Checks that lock may be used with rl; returns 0 or INVALID with msg. */
int rl_check_lock(const redlock_t *rl, const redlock_lock_t *lock, char *msg, size_t n) {
    if (!rl) return snprintf(msg, n, "redlock_t is NULL"), REDLOCK_ERR_INVALID;
    if (!lock) return snprintf(msg, n, "lock is NULL"), REDLOCK_ERR_INVALID;
    if (lock->owner != rl)
        return snprintf(msg, n, "lock on '%.60s' was acquired through another redlock_t", lock->res[0]),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

int rl_check_wait(int64_t wait_ms, char *msg, size_t n) {
    if (wait_ms >= -1) return REDLOCK_OK;
    return snprintf(msg, n, "wait_ms=%lld: it must be -1 (no bound), 0 (one attempt) or a bound in ms",
                    (long long)wait_ms),
           REDLOCK_ERR_INVALID;
}

int rl_check_delay(const redlock_t *rl, const char *kind, char *msg, size_t n) {
    if (!rl->opt.lock_delay_ms) return REDLOCK_OK;
    return snprintf(msg, n,
                    "lock_delay_ms=%u: %s have no lock-delay (only a mutex of one resource has): use a handle "
                    "without it for them",
                    rl->opt.lock_delay_ms, kind),
           REDLOCK_ERR_CONFIG;
}

int rl_check_permit(const redlock_t *rl, const rl_keys_t *keys, unsigned limit, char *msg, size_t n) {
    if (limit < 1 || limit > REDLOCK_MAX_PERMITS)
        return snprintf(msg, n, "limit=%u: a semaphore has 1 to %d permits", limit, REDLOCK_MAX_PERMITS),
               REDLOCK_ERR_INVALID;
    size_t longest = keys->len[0] + rl_permit_suffix_len((int)limit - 1);
    if (longest > REDLOCK_MAX_RESOURCE)
        return snprintf(msg, n,
                        "resource '%.40s...' (%zu bytes): its slot key '<resource>:permit:%u' would be %zu bytes, "
                        "more than %d",
                        keys->k[0], keys->len[0], limit - 1, longest, REDLOCK_MAX_RESOURCE),
               REDLOCK_ERR_INVALID;
    (void)rl;
    return REDLOCK_OK;
}
