/* fence.c -- fencing tokens: the fenced acquire's two rounds (see
 * redlock_lock_fence in redlock.h); the acquire op (attempt.c) runs them.
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

#include "ops.h"
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
size_t rl_key_with(char *buf, size_t cap, const char *res, size_t len, const char *suffix) {
    size_t sl = strlen(suffix);
    if (len + sl + 1 > cap) return 0;
    memcpy(buf, res, len);
    memcpy(buf + len, suffix, sl + 1);
    return len + sl;
}

/* Builds the pair {key, key:redlock:fence} into both/k/klen. */
static void fence_keys(const char *key, size_t len, char *fkey, size_t cap, const char **k, size_t *klen,
                       rl_keys_t *both) {
    k[0] = key;
    k[1] = fkey;
    klen[0] = len;
    klen[1] = rl_key_with(fkey, cap, key, len, RL_FENCE_SUFFIX);
    *both = (rl_keys_t){2, k, klen};
}

void rl_fence_send_attempt(rl_acquire_op_t *a) {
    rl_op_t *op = &a->op;
    char fkey[REDLOCK_MAX_RESOURCE + 32], ttl[16];
    const char *k[2];
    size_t klen[2];
    rl_keys_t both;
    fence_keys(a->keys.k[0], a->keys.len[0], fkey, sizeof fkey, k, klen, &both);
    snprintf(ttl, sizeof ttl, "%u", a->ttl_ms);
    a->fence_max = 0;
    rl_round_init(op->r, op->rl->opt.n_nodes, RL_STOP_MAJORITY, op->rep ? op->rep->nodes : NULL);
    op->r->grants = 1;
    op->r->on_reply = take_max;
    op->r->reply_arg = &a->fence_max;
    rl_run_script_as(op->rl, op->r, op->rl->s_acquire_fenced, &both, a->token, ttl, classify_fenced);
}

int rl_fence_attempted(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    (void)now;
    if (op->r->yes < op->r->quorum) {
        op->rc = rl_round_reason(op->r, REDLOCK_ERR_TAKEN);
        return 0;
    }
    rl_fence_write(a, a->keys.k[0], a->keys.len[0]);
    return 1;
}

void rl_fence_write(rl_acquire_op_t *a, const char *key, size_t len) {
    rl_op_t *op = &a->op;
    char fkey[REDLOCK_MAX_RESOURCE + 64], fence[24];
    const char *k[2];
    size_t klen[2];
    rl_keys_t both;
    fence_keys(key, len, fkey, sizeof fkey, k, klen, &both);
    snprintf(fence, sizeof fence, "%" PRIu64, a->fence_max + 1);
    rl_round_init(op->aux, op->rl->opt.n_nodes, RL_STOP_MAJORITY, NULL);
    rl_run_script(op->rl, op->aux, op->rl->s_fence_set, &both, a->token, fence);
}

int rl_fence_written(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    const rl_round_t *w = op->aux;
    int rc = REDLOCK_OK;
    if (rl_validity_us(a->deadline_us, now) <= 0)
        rc = REDLOCK_ERR_EXPIRED;
    else if (w->yes < w->quorum)
        rc = rl_round_reason(w, REDLOCK_ERR_NO_QUORUM);
    else if (!a->lock && !(a->lock = rl_lock_new(op->rl, &a->keys, a->token, a->ttl_ms, op->r->t0_us, a->deadline_us)))
        rc = REDLOCK_ERR_NOMEM; /* (a permit's lock is made with its slot key already) */
    if (rc == REDLOCK_OK) {
        a->lock->fence = a->fence_max + 1;
        if (op->rep) op->rep->validity_ms = rl_validity_ms(rl_validity_us(a->deadline_us, now));
        return REDLOCK_OK;
    }
    rl_lock_destroy(a->lock); /* a permit's, made before the write-back */
    a->lock = NULL;
    if (op->rep) op->rep->slot = -1;
    a->note = RL_NOTE_FENCE; /* the acquire op writes it into the report */
    return rc;
}
