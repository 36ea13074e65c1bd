/* adopt.c -- redlock_lock_adopt: taking over a lock another process
 * acquired, from its token. The check and the re-extension are one round
 * of the extend script (extend.c's rl_extend_round), so an adoption
 * follows extend's rules exactly; and the other end of a hand-over,
 * releasing a lock from its token alone. */
#include <stdio.h>

#include "blocking.h"
#include "token.h"

/* The adoption once the arguments are checked. */
static int adopt(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_lock_t **out,
                 redlock_report_t *rep) {
    if (rep) rep->attempts = 1;
    uint64_t t0 = 0, deadline = 0;
    int rc = rl_extend_round(rl, keys, token, ttl_ms, rep, NULL, &t0, &deadline);
    if (rc == REDLOCK_OK && !(*out = rl_lock_new(rl, keys, token, ttl_ms, t0, deadline))) rc = REDLOCK_ERR_NOMEM;
    if (rc == REDLOCK_OK) rl_held_add(rl, *out); /* tracked like an acquired lock: re-entry, redlock_free */
    return rl_report_end(rl, rep, rc, NULL);
}

/* redlock_lock_adopt without the counting. */
static int adopt_checked(redlock_t *rl, const char *resource, const char *token, uint32_t ttl_ms, redlock_lock_t **out,
                         redlock_report_t *rep) {
    char msg[256];
    if (out) *out = NULL;
    rl_report_begin(rl, rep);
    if (!rl || !out) return rl_report_end(rl, rep, REDLOCK_ERR_INVALID, rl ? "out is NULL" : "redlock_t is NULL");
    size_t len;
    rl_keys_t keys = {1, &resource, &len};
    int rc = rl_check_request(rl, &keys, ttl_ms, msg, sizeof msg);
    if (rc == REDLOCK_OK && rl_token_check(token, msg, sizeof msg) < 0) rc = REDLOCK_ERR_INVALID;
    if (rc) return rl_report_end(rl, rep, rc, msg);
    return adopt(rl, &keys, token, ttl_ms, out, rep);
}

int redlock_lock_adopt(redlock_t *rl, const char *resource, const char *token, uint32_t ttl_ms, redlock_lock_t **out,
                       redlock_report_t *report) {
    int rc = adopt_checked(rl, resource, token, ttl_ms, out, report);
    if (rl) rl_stats_call(rl->stats, RL_STAT_ADOPT, rc);
    return rc;
}

int rl_release_token(redlock_t *rl, const char *resource, const char *token, redlock_report_t *rep) {
    char msg[256];
    size_t len;
    rl_keys_t keys = {1, &resource, &len};
    rl_report_begin(rl, rep);
    if (!rl) return rl_report_end(NULL, rep, REDLOCK_ERR_INVALID, "redlock_t is NULL");
    int rc = rl_check_keys(&keys, msg, sizeof msg);
    if (rc == REDLOCK_OK && rl_token_check(token, msg, sizeof msg) < 0) rc = REDLOCK_ERR_INVALID;
    if (rc) {
        rl_stats_call(rl->stats, RL_STAT_RELEASE, rc);
        return rl_report_end(rl, rep, rc, msg);
    }
    if (rep) rep->attempts = 1;
    rc = rl_release_keys(rl, &keys, token, NULL, rep);
    rl_stats_call(rl->stats, RL_STAT_RELEASE, rc);
    return rl_report_end(rl, rep, rc, NULL);
}
