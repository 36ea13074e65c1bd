/* fence.c -- fencing tokens: the two-round fenced acquire and the
 * fenced write helper (see redlock_lock_fence in redlock.h).
 *
 * Why two rounds: the maximum of the counters one quorum returns is not
 * enough, since the next holder's quorum may meet ours in a single node
 * that need not hold the maximum. Writing max + 1 back to a quorum (set if
 * greater) before using it makes it reach every later holder: any later
 * read quorum meets our write quorum in at least one node, whose counter
 * is then at least our token, so the later maximum + 1 is greater. */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl.h"
#include "timing.h"

#define RL_FENCE_SUFFIX ":redlock:fence"
#define RL_SEEN_SUFFIX ":redlock:fence-seen"

/* A granted fenced acquire answers the counter as a string; nil is taken. */
static redlock_vote_t classify_fenced(const void *reply, int *err, char *detail, size_t n) {
    const redisReply *r = reply;
    if (r->type == REDIS_REPLY_STRING) return REDLOCK_VOTE_YES;
    if (r->type == REDIS_REPLY_NIL) return REDLOCK_VOTE_NO;
    return rl_classify_int(reply, err, detail, n); /* errors and odd types in words */
}

/* Keeps the highest counter the granting nodes returned. */
static void take_max(void *arg, size_t node, const void *reply) {
    (void)node;
    const redisReply *r = reply;
    if (r->type != REDIS_REPLY_STRING) return;
    uint64_t v = strtoull(r->str, NULL, 10);
    uint64_t *max = arg;
    if (v > *max) *max = v;
}

/* Builds "<resource><suffix>" into buf (cap bytes); returns its length. */
static size_t key_with(char *buf, size_t cap, const char *res, size_t len, const char *suffix) {
    size_t sl = strlen(suffix);
    if (len + sl + 1 > cap) return 0;
    memcpy(buf, res, len);
    memcpy(buf + len, suffix, sl + 1);
    return len + sl;
}

int rl_attempt_fenced(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms,
                      redlock_lock_t **out, redlock_report_t *rep) {
    char fkey[REDLOCK_MAX_RESOURCE + 32], ttl[16], fence[24];
    const char *k[2] = {keys->k[0], fkey};
    size_t klen[2] = {keys->len[0], key_with(fkey, sizeof fkey, keys->k[0], keys->len[0], RL_FENCE_SUFFIX)};
    rl_keys_t both = {2, k, klen};
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    uint64_t max = 0;
    rl_round_t r;
    rl_round_init(&r, rl->opt.n_nodes, RL_STOP_MAJORITY, rep ? rep->nodes : NULL);
    r.grants = 1;
    r.on_reply = take_max;
    r.reply_arg = &max;
    rl_run_script_as(rl, &r, rl->s_acquire_fenced, &both, token, ttl, classify_fenced);
    uint64_t deadline = rl_deadline_us(r.t0_us, ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
    rl_report_round(rep, &r, rl->clock());
    int rc = r.yes < r.quorum ? rl_round_reason(&r, REDLOCK_ERR_TAKEN) : REDLOCK_OK;
    if (rc == REDLOCK_OK) { /* round two: write max + 1 back where the lock is ours */
        snprintf(fence, sizeof fence, "%" PRIu64, max + 1);
        rl_round_t w;
        rl_round_init(&w, rl->opt.n_nodes, RL_STOP_MAJORITY, NULL);
        rl_run_script(rl, &w, rl->s_fence_set, &both, token, fence);
        uint64_t now = rl->clock();
        if (rl_validity_us(deadline, now) <= 0)
            rc = REDLOCK_ERR_EXPIRED;
        else if (w.yes < w.quorum)
            rc = rl_round_reason(&w, REDLOCK_ERR_NO_QUORUM);
        else if (!(*out = rl_lock_new(rl, keys, token, ttl_ms, r.t0_us, deadline)))
            rc = REDLOCK_ERR_NOMEM;
        if (rc == REDLOCK_OK) {
            (*out)->fence = max + 1;
            if (rep) rep->validity_ms = rl_validity_ms(rl_validity_us(deadline, now));
            return REDLOCK_OK;
        }
        if (rep) snprintf(rep->message, sizeof rep->message, "fencing token write-back: %zu of %zu nodes (quorum %zu)",
                          w.yes, w.n, w.quorum);
    }
    rl_round_t cleanup;
    rl_release_round(rl, &cleanup, keys, token, NULL);
    return rc;
}

int redlock_fenced_set(redlock_t *store, const char *key, const char *value, uint64_t fence,
                       redlock_report_t *rep) {
    char msg[256], seen[REDLOCK_MAX_RESOURCE + 32], tok[24];
    rl_report_begin(store, rep);
    if (!store) return rl_report_end(NULL, rep, REDLOCK_ERR_INVALID, "store is NULL");
    size_t len = 0;
    rl_keys_t one = {1, &key, &len};
    int rc = rl_check_request(store, &one, INT32_MAX, msg, sizeof msg);
    if (rc) return rl_report_end(store, rep, rc, msg);
    if (!value) return rl_report_end(store, rep, REDLOCK_ERR_INVALID, "value is NULL");
    if (fence == 0) return rl_report_end(store, rep, REDLOCK_ERR_INVALID, "fence=0: not a fencing token");
    size_t seen_len = key_with(seen, sizeof seen, key, len, RL_SEEN_SUFFIX);
    snprintf(tok, sizeof tok, "%" PRIu64, fence);
    rl_round_t r;
    rl_round_init(&r, store->opt.n_nodes, RL_STOP_RESOLVE, rep ? rep->nodes : NULL);
    const char *argv[7] = {"EVALSHA", store->s_fenced_set->sha1, "2", key, seen, tok, value};
    size_t lens[7] = {7, 40, 1, len, seen_len, strlen(tok), strlen(value)};
    rl_run_round(store, &r, 7, argv, lens, store->s_fenced_set, rl_classify_int);
    rl_report_round(rep, &r, store->clock());
    if (r.yes >= r.quorum) return rl_report_end(store, rep, REDLOCK_OK, NULL);
    if (r.no >= r.quorum) return rl_report_end(store, rep, REDLOCK_ERR_STALE, NULL);
    return rl_report_end(store, rep, rl_round_reason(&r, REDLOCK_ERR_STALE), NULL);
}
