/* fence.c -- fencing tokens: the fenced acquire's two rounds, run by the
 * acquire op (attempt.c): an attempt that reads each granting node's
 * counter, then a write-back that raises a quorum's counters to the token
 * (why that is safe: doc/design.md, "Safety beyond the algorithm"). */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "resp.h"
#include "slot.h"
#include "timing.h"

#define RL_FENCE_SUFFIX ":redlock:fence"
#define RL_SEEN_SUFFIX ":redlock:fence-seen"

/* Reads a decimal number of up to 19 digits (a counter, TIME's fields):
 * 0 and *v, or -1 when s is not one. */
static int decimal(const redisReply *s, uint64_t *v) {
    if (s->type != REDIS_REPLY_STRING || s->len == 0 || s->len > 19) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->str[i] < '0' || s->str[i] > '9') return -1;
        x = x * 10 + (uint64_t)(s->str[i] - '0');
    }
    *v = x;
    return 0;
}

/* A node's answer to the fenced attempt: EXEC's array of the replies to
 * SET NX PX (OK granted, nil taken), GET of the counter (nil: none yet)
 * and TIME. A grant's *raw is the counter (0: none), its *value the same
 * but never less than the node's clock in microseconds. Anything else is
 * a failed vote, also a grant whose counter or clock cannot be read (its
 * key is released with the attempt's clean-up if the attempt fails, as
 * for any failed vote). */
static redlock_vote_t fenced_reply(const redisReply *r, uint64_t *value, uint64_t *raw, int *err, char *detail,
                                   size_t n) {
    if (r->type == REDIS_REPLY_ERROR &&
        (!strncmp(r->str, "ERR EXEC without MULTI", 22) || !strncmp(r->str, "EXECABORT", 9))) {
        /* MULTI refused (the SET then ran alone: the clean-up undoes it), EXEC refused, or a
         * command refused as queued (none ran); the refusals themselves were in dropped replies */
        int acl = strstr(r->str, "NOPERM") || r->str[1] == 'R'; /* (only an ACL refuses MULTI) */
        *err = acl ? REDLOCK_ERR_AUTH : REDLOCK_ERR_SERVER;
        snprintf(detail, n,
                 "%.120s (the fenced attempt is MULTI, SET, GET, TIME, EXEC: an ACL user needs "
                 "+multi +exec +time%s)",
                 r->str, acl ? "" : "; or a read-only replica, out of memory ...");
        return REDLOCK_VOTE_ERROR;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        if (r->type == REDIS_REPLY_ERROR) return rl_classify_int(r, err, detail, n); /* in the node's words */
        *err = REDLOCK_ERR_IO;
        snprintf(detail, n, "unexpected reply to the fenced attempt (type %d)", r->type);
        return REDLOCK_VOTE_ERROR;
    }
    const redisReply *set = r->element[0], *cnt = r->element[1], *t = r->element[2];
    if (set->type == REDIS_REPLY_NIL) return REDLOCK_VOTE_NO;
    redlock_vote_t v = rl_classify_set(set, err, detail, n);
    if (v != REDLOCK_VOTE_YES) return v;
    if (cnt->type == REDIS_REPLY_ERROR) return rl_classify_int(cnt, err, detail, n); /* WRONGTYPE .. */
    uint64_t c = 0, sec, usec;
    if ((cnt->type != REDIS_REPLY_NIL && decimal(cnt, &c) < 0) || t->type != REDIS_REPLY_ARRAY || t->elements != 2 ||
        decimal(t->element[0], &sec) < 0 || decimal(t->element[1], &usec) < 0 || sec > UINT64_MAX / 2000000u) {
        *err = REDLOCK_ERR_IO;
        snprintf(detail, n, "granted, but the fencing counter or the node's TIME is not a number");
        return REDLOCK_VOTE_ERROR;
    }
    uint64_t floor = sec * 1000000u + usec;
    *raw = c;
    *value = c > floor ? c : floor;
    return REDLOCK_VOTE_YES;
}

static redlock_vote_t classify_fenced(const void *reply, int *err, char *detail, size_t n) {
    uint64_t v, c;
    return fenced_reply(reply, &v, &c, err, detail, n);
}

/* Keeps the highest counter the granting nodes returned (floored by their
 * clocks), and each one's own counter in seen[node] for its write-back
 * (on_reply, arg the acquire op: runs just before the same reply is
 * classified). */
static void take_max(void *arg, size_t node, const void *reply) {
    rl_acquire_op_t *a = arg;
    uint64_t v = 0, c = 0;
    int err;
    char detail[RL_DETAIL_LEN]; /* (unused: only a yes matters here) */
    if (fenced_reply(reply, &v, &c, &err, detail, sizeof detail) != REDLOCK_VOTE_YES) return;
    if (v > a->fence_max) a->fence_max = v;
    a->op.seen[node] = c;
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

/* Appends the encoded command argv to buf at *at (cap bytes); *at moves
 * past it, also when it does not fit (the caller then checks *at <= cap). */
static void put(char *buf, size_t cap, size_t *at, int argc, const char *const *argv, const size_t *lens) {
    *at += rl_resp_encode(buf + (*at < cap ? *at : cap), *at < cap ? cap - *at : 0, argc, argv, lens);
}

/* Encodes the fenced attempt on key and its counter fkey into cmd (cap
 * bytes): MULTI, SET key token NX PX ttl, GET fkey, TIME, EXEC -- one
 * round trip, no script. The read comes after the SET on each node: where
 * the SET granted, every earlier holder's write-back there that counted
 * is then already in the counter. MULTI and the three QUEUED replies are
 * dropped (round.skip); EXEC's array votes (fenced_reply). Returns its
 * length (more than cap: it did not fit).
 * With g (the guarded acquire script) its SET is the guarded form instead:
 * EVAL of g's text with the fingerprint fp, so that a membership record
 * refuses the grant in the same transaction (EVAL: inside MULTI a NOSCRIPT
 * could not fall back). */
static size_t encode_guarded_attempt(char *cmd, size_t cap, const char *key, size_t klen, const char *fkey, size_t flen,
                                     const char *token, const char *ttl, const rl_script_t *g, const char *fp) {
    size_t at = 0, tlen = strlen(ttl);
    const char *multi[] = {"MULTI"}, *clk[] = {"TIME"}, *exec[] = {"EXEC"}, *get[] = {"GET", fkey};
    const char *set[] = {"SET", key, token, "NX", "PX", ttl};
    const char *eval[] = {"EVAL", g ? g->text : "", "1", key, fp, token, ttl};
    const size_t multi_l[] = {5}, clk_l[] = {4}, exec_l[] = {4}, get_l[] = {3, flen};
    const size_t set_l[] = {3, klen, REDLOCK_TOKEN_LEN, 2, 2, tlen};
    const size_t eval_l[] = {4, g ? g->len : 0, 1, klen, fp ? strlen(fp) : 0, REDLOCK_TOKEN_LEN, tlen};
    put(cmd, cap, &at, 1, multi, multi_l);
    if (g)
        put(cmd, cap, &at, 7, eval, eval_l);
    else
        put(cmd, cap, &at, 6, set, set_l);
    put(cmd, cap, &at, 2, get, get_l);
    put(cmd, cap, &at, 1, clk, clk_l);
    put(cmd, cap, &at, 1, exec, exec_l);
    return at;
}

/* Room for a guarded fenced attempt: the guarded acquire's text and two keys. */
#define RL_FENCE_GUARDED_MAX (2 * REDLOCK_MAX_RESOURCE + 4096)

/* encode_attempt without the guard. */
static size_t encode_attempt(char *cmd, size_t cap, const char *key, size_t klen, const char *fkey, size_t flen,
                             const char *token, const char *ttl) {
    return encode_guarded_attempt(cmd, cap, key, klen, fkey, flen, token, ttl, NULL, NULL);
}

/* The same for the handle's Redis Cluster nodes (doc/design.md, "Cluster routing"): the keys
 * named as there, both in the slot r->hslot is set to. Returns its
 * length, or 0 when it does not fit. */
static size_t encode_cluster_attempt(rl_round_t *r, char *cmd, size_t cap, const char *key, size_t klen,
                                     const char *fkey, size_t flen, const char *token, const char *ttl) {
    char ck[REDLOCK_MAX_RESOURCE + 8], cf[REDLOCK_MAX_RESOURCE + 40];
    size_t ckl = rl_cluster_key(ck, sizeof ck, key, klen), cfl = rl_cluster_key(cf, sizeof cf, fkey, flen);
    if (!ckl || !cfl) return 0;
    r->hslot = rl_key_slot(ck, ckl);
    size_t at = encode_attempt(cmd, cap, ck, ckl, cf, cfl, token, ttl);
    return at <= cap ? at : 0;
}

void rl_fence_send_attempt(rl_acquire_op_t *a) {
    rl_op_t *op = &a->op;
    rl_round_t *r = op->r;
    char fkey[REDLOCK_MAX_RESOURCE + 32], ttl[16], cmd[2 * REDLOCK_MAX_RESOURCE + 256];
    char ccmd[2 * REDLOCK_MAX_RESOURCE + 256];
    size_t flen = rl_key_with(fkey, sizeof fkey, a->keys.k[0], a->keys.len[0], RL_FENCE_SUFFIX);
    snprintf(ttl, sizeof ttl, "%u", a->ttl_ms);
    size_t at = encode_attempt(cmd, sizeof cmd, a->keys.k[0], a->keys.len[0], fkey, flen, a->token, ttl), cat = 0;
    a->fence_max = 0;
    rl_round_begin(op->rl, r, RL_STOP_MAJORITY, op->rep ? op->rep->nodes : NULL);
    if (op->rl->cluster_nodes)
        cat = encode_cluster_attempt(r, ccmd, sizeof ccmd, a->keys.k[0], a->keys.len[0], fkey, flen, a->token, ttl);
    if (!flen || at > sizeof cmd ||
        (op->rl->cluster_nodes && !cat)) { /* (never: a resource is checked to fit long before) */
        for (size_t i = 0; i < r->n; i++) rl_round_vote(r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_INVALID, -1, "too long");
        r->t0_us = op->rl->clock();
        op->rl->send(op->rl, r); /* (no command: the driver only notes the round is decided) */
        return;
    }
    r->grants = 1;
    r->replicate = 1;
    r->skip = 4;
    r->on_reply = take_max;
    r->reply_arg = a;
    r->cmd = cmd;
    r->cmd_len = at;
    if (cat) {
        r->ccmd = ccmd;
        r->ccmd_len = cat;
    }
    r->classify = classify_fenced;
    /* its guarded form, for plain nodes that may hold a membership record */
    char gcmd[RL_FENCE_GUARDED_MAX];
    const rl_script_t *g = rl_script_guarded(op->rl->s_acquire);
    if (op->rl->cluster_nodes < op->rl->opt.n_nodes) {
        r->gcmd = gcmd; /* (it fits: the resource was checked) */
        r->gcmd_len = encode_guarded_attempt(gcmd, sizeof gcmd, a->keys.k[0], a->keys.len[0], fkey, flen, a->token, ttl,
                                             g, op->rl->fp);
        r->gscript = NULL; /* (an EVAL: no fallback needed) */
    }
    op->rl->send(op->rl, r); /* the driver copies cmd before it returns */
    r->gcmd = NULL;
}

/* ------------------------------------------------- a mutex's write-back */

/* rl_round_t.node_cmd of the write-back (arg: the acquire op): for a node
 * that granted the attempt, MULTI, GET <lock>, INCRBY <counter> (token -
 * its counter as read), EXEC into buf (cap bytes); returns the length
 * (more than cap: it did not fit). For any other node 0 and *why. */
static size_t write_cmd(void *arg, size_t node, int cluster, char *buf, size_t cap, const char **why) {
    const rl_acquire_op_t *a = arg;
    if (a->op.r->pn[node].vote != REDLOCK_VOTE_YES) { /* (a quarantined node's grant is DOWN) */
        *why = "not granted in the fenced attempt";
        return 0;
    }
    char plain[REDLOCK_MAX_RESOURCE + 32], ck[REDLOCK_MAX_RESOURCE + 8], cf[REDLOCK_MAX_RESOURCE + 40], by[24];
    const char *key = a->keys.k[0], *fkey = plain;
    size_t klen = a->keys.len[0], flen = rl_key_with(plain, sizeof plain, key, klen, RL_FENCE_SUFFIX), at = 0;
    if (cluster && flen) { /* the names on a cluster node, both in the round's slot */
        klen = rl_cluster_key(ck, sizeof ck, key, klen);
        flen = rl_cluster_key(cf, sizeof cf, plain, flen);
        key = ck;
        fkey = cf;
    }
    if (!klen || !flen) return cap + 1;
    uint64_t t = a->fence_max + 1, c = a->op.seen[node]; /* (c < t: t is above every grant's reading) */
    int bl = snprintf(by, sizeof by, "%" PRIu64, t > c ? t - c : 0);
    const char *multi[] = {"MULTI"}, *exec[] = {"EXEC"}, *get[] = {"GET", key}, *incr[] = {"INCRBY", fkey, by};
    const size_t multi_l[] = {5}, exec_l[] = {4}, get_l[] = {3, klen}, incr_l[] = {6, flen, (size_t)bl};
    put(buf, cap, &at, 1, multi, multi_l);
    put(buf, cap, &at, 2, get, get_l);
    put(buf, cap, &at, 3, incr, incr_l);
    put(buf, cap, &at, 1, exec, exec_l);
    return at;
}

/* Fills err/detail for an error reply of the write-back (MULTI, GET,
 * INCRBY, EXEC; what: the command it answers), with the commands an ACL
 * user needs when the refusal may be the ACL's; returns
 * REDLOCK_VOTE_ERROR. */
static redlock_vote_t write_error(const redisReply *e, const char *what, int *err, char *detail, size_t n) {
    *err = rl_error_code(e->str);
    int acl =
        *err == REDLOCK_ERR_AUTH || !strncmp(e->str, "EXECABORT", 9) || !strncmp(e->str, "ERR EXEC without MULTI", 22);
    snprintf(detail, n, "%s: %.120s%s", what, e->str, acl ? " (an ACL user needs +multi +exec +get +incrby)" : "");
    return REDLOCK_VOTE_ERROR;
}

redlock_vote_t rl_fence_judge(const void *reply, const char *token, int *err, char *detail, size_t n) {
    const redisReply *r = reply;
    if (r->type == REDIS_REPLY_ERROR) /* MULTI or a command refused (EXECABORT: none ran), EXEC refused */
        return write_error(r, "EXEC", err, detail, n);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        *err = REDLOCK_ERR_IO;
        snprintf(detail, n, "unexpected reply to the fencing write-back (type %d, %zu elements)", r->type,
                 r->type == REDIS_REPLY_ARRAY ? r->elements : (size_t)0);
        return REDLOCK_VOTE_ERROR;
    }
    const redisReply *get = r->element[0], *incr = r->element[1];
    if (get->type == REDIS_REPLY_ERROR) return write_error(get, "GET of the lock", err, detail, n);
    if (incr->type == REDIS_REPLY_ERROR) return write_error(incr, "INCRBY of the fencing counter", err, detail, n);
    if (incr->type != REDIS_REPLY_INTEGER || (get->type != REDIS_REPLY_STRING && get->type != REDIS_REPLY_NIL)) {
        *err = REDLOCK_ERR_IO;
        snprintf(detail, n, "unexpected reply to the fencing write-back (GET type %d, INCRBY type %d)", get->type,
                 incr->type);
        return REDLOCK_VOTE_ERROR;
    }
    if (get->type == REDIS_REPLY_STRING && get->len == REDLOCK_TOKEN_LEN && !memcmp(get->str, token, REDLOCK_TOKEN_LEN))
        return REDLOCK_VOTE_YES;
    snprintf(detail, n, "the lock is no longer ours on this node (its counter was raised all the same)");
    return REDLOCK_VOTE_NO;
}

/* rl_round_t.judge of the write-back (arg: the acquire op). */
static redlock_vote_t judge_write(void *arg, size_t node, const void *reply, int *err, char *detail, size_t n) {
    (void)node;
    const rl_acquire_op_t *a = arg;
    return rl_fence_judge(reply, a->token, err, detail, n);
}

/* Sends a mutex's write-back on op.aux: each node's own transaction
 * (write_cmd), judged by judge_write; MULTI's OK and two QUEUED are
 * dropped (skip), EXEC's array votes. */
static void write_back(rl_acquire_op_t *a) {
    rl_op_t *op = &a->op;
    rl_round_t *w = op->aux;
    rl_round_begin(op->rl, w, RL_STOP_MAJORITY, NULL);
    w->replicate = 1;            /* (a counter a promoted replica lacked would repeat tokens) */
    if (op->rl->cluster_nodes) { /* the slot of both keys on a cluster node (one hash tag) */
        char ck[REDLOCK_MAX_RESOURCE + 8];
        size_t ckl = rl_cluster_key(ck, sizeof ck, a->keys.k[0], a->keys.len[0]);
        w->hslot = ckl ? rl_key_slot(ck, ckl) : RL_SLOT_MIXED; /* (a resource is checked to fit long before) */
    }
    w->cmd = ""; /* (never sent: node_cmd makes each node's; non-NULL for the drivers) */
    w->node_cmd = write_cmd;
    w->judge = judge_write;
    w->node_arg = a;
    w->skip = 3;
    op->rl->send(op->rl, w);
}

int rl_fence_attempted(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    (void)now;
    if (!rl_round_won(op->r)) {
        op->rc = rl_round_reason(op->r, REDLOCK_ERR_TAKEN);
        return 0;
    }
    write_back(a);
    return 1;
}

/* ------------------------------------------------ a permit's write-back */

void rl_fence_write(rl_acquire_op_t *a, const char *key, size_t len) {
    rl_op_t *op = &a->op;
    char fkey[REDLOCK_MAX_RESOURCE + 64], fence[24];
    const char *k[2];
    size_t klen[2];
    rl_keys_t both;
    fence_keys(key, len, fkey, sizeof fkey, k, klen, &both);
    snprintf(fence, sizeof fence, "%" PRIu64, a->fence_max + 1);
    rl_round_begin(op->rl, op->aux, RL_STOP_MAJORITY, NULL);
    op->aux->replicate = 1;
    rl_run_script(op->rl, op->aux, op->rl->s_fence_set, &both, a->token, fence);
}

int rl_fence_written(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    const rl_round_t *w = op->aux;
    int rc = REDLOCK_OK;
    if (rl_validity_us(a->deadline_us, now) <= 0)
        rc = REDLOCK_ERR_EXPIRED;
    else if (!rl_round_won(w))
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
