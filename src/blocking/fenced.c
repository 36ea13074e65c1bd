/* fenced.c -- the fenced write helper of a store (redlock_fenced_set):
 * a write that a quorum applies only if its fencing token is not older
 * than one the store has seen for the key. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "blocking.h"

#define RL_SEEN_SUFFIX ":redlock:fence-seen"

int redlock_fenced_set(redlock_t *store, const char *key, const char *value, uint64_t fence, redlock_report_t *rep) {
    char msg[256], seen[REDLOCK_MAX_RESOURCE + 32], tok[24];
    rl_report_begin(store, rep);
    if (!store) return rl_report_end(NULL, rep, REDLOCK_ERR_INVALID, "store is NULL");
    size_t len = 0;
    rl_keys_t one = {1, &key, &len};
    int rc = rl_check_request(store, &one, INT32_MAX, msg, sizeof msg);
    if (rc) return rl_report_end(store, rep, rc, msg);
    if (!value) return rl_report_end(store, rep, REDLOCK_ERR_INVALID, "value is NULL");
    if (fence == 0) return rl_report_end(store, rep, REDLOCK_ERR_INVALID, "fence=0: not a fencing token");
    size_t seen_len = rl_key_with(seen, sizeof seen, key, len, RL_SEEN_SUFFIX);
    snprintf(tok, sizeof tok, "%" PRIu64, fence);
    RL_ROUND(r);
    rl_round_begin(store, r, RL_STOP_RESOLVE, rep ? rep->nodes : NULL);
    const char *argv[7] = {"EVALSHA", store->s_fenced_set->sha1, "2", key, seen, tok, value};
    size_t lens[7] = {7, 40, 1, len, seen_len, strlen(tok), strlen(value)};
    rl_run_round(store, r, 7, argv, lens, store->s_fenced_set, rl_classify_int);
    rl_report_round(rep, r, store->clock());
    if (rl_round_won(r)) return rl_report_end(store, rep, REDLOCK_OK, NULL);
    if (rl_round_refused(r)) return rl_report_end(store, rep, REDLOCK_ERR_STALE, NULL);
    return rl_report_end(store, rep, rl_round_reason(r, REDLOCK_ERR_STALE), NULL);
}
