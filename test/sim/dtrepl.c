/* dtrepl.c -- the differential test's replication check (difftest.h):
 * the random sequences run on a real master with one real replica and on
 * a model master whose changes (model_take_fx) go to a model replica
 * after every command. WAIT must agree, and so must what the two replicas
 * hold, key by key: type, value, expiry instant. The real replica's
 * instants must also be its master's to the millisecond, which is what
 * the simulator's replicas assume (an expiry travels as an instant), and
 * the model's replica must answer exactly as the model's master. */
#include <stdlib.h>
#include <string.h>

#include "difftest.h"

void dt_replicate(diff_t *d) {
    if (!d->rm) return;
    model_fx_t *fx = model_take_fx(d->m);
    if (!fx) return;
    model_apply_fx(d->rm, fx);
    model_fx_free(fx);
}

void dt_replica_wait_hook(void *arg, model_session_t *s, long long n, long long timeout_ms, sbuf_t *out) {
    (void)arg, (void)s, (void)n, (void)timeout_ms;
    resp_int(out, 1); /* (its one replica took every change at once) */
}

/* `verb key` on model m (session s) at now_us, its reply parsed (the
 * caller frees it). */
static redisReply *on_model(model_t *m, model_session_t *s, const char *verb, const char *key, uint64_t now_us) {
    const char *argv[2] = {verb, key};
    size_t lens[2] = {strlen(verb), strlen(key)};
    resp_cmd_t *c = resp_cmd_make(2, argv, lens);
    sbuf_t out = {0};
    model_exec(m, s, c, now_us, &out);
    free(c);
    redisReply *r = dt_parse_model(&out);
    sb_free(&out);
    return r;
}

/* `verb key` on the model's replica. */
static redisReply *on_replica(diff_t *d, const char *verb, const char *key) {
    return on_model(d->rm, d->rms, verb, key, dt_real_us());
}

/* Compares replies a and b (tol as dt_same's), printing a mismatch of
 * `verb key` under what (a's and b's sides named), and frees both.
 * Returns 1 when they agree. */
static int same_pair(diff_t *d, const char *what, const char *verb, const char *key, const char *an, redisReply *a,
                     const char *bn, redisReply *b, int tol) {
    int ok = a && b && dt_same(a, b, tol);
    if (!ok) {
        fprintf(stderr, "MISMATCH %s after step %llu: %s %s\n    %s: ", what, (unsigned long long)d->steps, verb, key,
                an);
        if (a) dt_show(stderr, a);
        fprintf(stderr, "\n    %s: ", bn);
        if (b) dt_show(stderr, b);
        fprintf(stderr, "\n");
    }
    if (a) freeReplyObject(a);
    if (b) freeReplyObject(b);
    return ok;
}

/* 1 when `verb key` answers the same on the model's master and its
 * replica, at one instant: the replica got the master's very state. */
static int model_kept(diff_t *d, model_session_t *ms, const char *verb, const char *key) {
    uint64_t now = dt_real_us();
    return same_pair(d, "model replica", verb, key, "master", on_model(d->m, ms, verb, key, now), "replica",
                     on_model(d->rm, d->rms, verb, key, now), 0);
}

/* Compares `verb key` on the real replica and the model's (tol as
 * dt_same's); prints a mismatch. Returns 1 when they agree. */
static int agree(diff_t *d, const char *verb, const char *key, int tol) {
    return same_pair(d, "replica", verb, key, "redis", redisCommand(d->rreal, "%s %s", verb, key), "model",
                     on_replica(d, verb, key), tol);
}

/* The type key has on the real replica ("none" when absent or unknown). */
static void real_type(diff_t *d, const char *key, char *buf, size_t n) {
    redisReply *r = redisCommand(d->rreal, "TYPE %s", key);
    snprintf(buf, n, "%s", r && r->type == REDIS_REPLY_STATUS ? r->str : "none");
    if (r) freeReplyObject(r);
}

/* 1 when key's expiry instant (PEXPIRETIME) is the same on the real master
 * and its replica; counts the keys that have one. */
static int instant_kept(diff_t *d, const char *key) {
    redisReply *m = redisCommand(d->a.real, "PEXPIRETIME %s", key), *r = redisCommand(d->rreal, "PEXPIRETIME %s", key);
    int ok = m && r && m->type == REDIS_REPLY_INTEGER && r->type == REDIS_REPLY_INTEGER && m->integer == r->integer;
    if (ok && m->integer > 0) d->instants_exact++;
    if (!ok)
        fprintf(stderr, "MISMATCH replica after step %llu: PEXPIRETIME %s: master %lld, replica %lld\n",
                (unsigned long long)d->steps, key, m && m->type == REDIS_REPLY_INTEGER ? m->integer : -99,
                r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99);
    if (m) freeReplyObject(m);
    if (r) freeReplyObject(r);
    return ok;
}

uint64_t dt_replica_check(diff_t *d, const char *const *keys, size_t n) {
    uint64_t bad = 0;
    model_session_t *ms = model_session_new(d->m, NULL); /* (reads only: no change to replicate) */
    d->checks++;
    for (size_t i = 0; i < n; i++) {
        static const char *const verbs[] = {"TYPE", "GET", "HGETALL", "PEXPIRETIME"};
        for (size_t v = 0; v < 4; v++) bad += !model_kept(d, ms, verbs[v], keys[i]);
        char type[32];
        real_type(d, keys[i], type, sizeof type);
        bad += !agree(d, "TYPE", keys[i], 0);
        if (!strcmp(type, "string")) bad += !agree(d, "GET", keys[i], 1);   /* (fencing counters come from TIME) */
        if (!strcmp(type, "hash")) bad += !agree(d, "HGETALL", keys[i], 1); /* (a reader's field is an instant) */
        bad += !agree(d, "PEXPIRETIME", keys[i], 1); /* (the two masters ran the command a moment apart) */
        bad += !instant_kept(d, keys[i]);
        d->keys_compared++;
    }
    model_session_free(ms);
    d->mismatches += bad;
    return bad;
}
