/* dtexpiry.c -- the differential test's expiry check (see difftest.h):
 * when a key expires, to the millisecond, on the model and on the real
 * redis-server, at the TTLs the scenarios use (ttls.h), for every way the
 * library sets a TTL: SET NX PX, PEXPIRE, and the scripts that acquire
 * and extend (plain, multi-key, permit, shared).
 *
 * The model runs on Redis's own clock. Each step goes to the server
 * pipelined between two TIME commands, followed by each key's PTTL and
 * PEXPIRETIME (and a reader's hash). Redis computes expiry instants and
 * remaining TTLs from the same clock TIME reads, within the two TIMEs;
 * when both read the same millisecond the server ran the step in that
 * millisecond, so the model runs it at the first TIME and every reply
 * must match exactly. A trial whose TIMEs straddle a millisecond (the
 * machine paused the server or the test) is dropped: its keys are
 * deleted on both sides, and it counts for nothing.
 *
 * Then each key is probed (TIME, PTTL, TIME) from 2 ms before its expiry
 * instant until 2 ms after it, every probe whose TIMEs agree compared
 * exactly: at its expiry millisecond the key is still there (PTTL 0) on
 * both, the millisecond after it is gone on both. Rounds of trials go on
 * until enough trials were compared and enough keys were seen at both
 * edges, or a bound runs out (dt_expiry_report then fails, saying what
 * fell short). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "difftest.h"
#include "scripts.h"
#include "ttls.h"

enum { X_SET_NX, X_PEXPIRE, X_WAIT, X_EXTEND, X_MULTI, X_EXTEND_MULTI, X_PERMIT, X_SHARED, X_EXTEND_SHARED, X_KINDS };

static const char *const xnames[X_KINDS] = {
    "SET NX PX",         "PEXPIRE",          "acquire_wait.lua",   "extend.lua",
    "acquire_multi.lua", "extend_multi.lua", "acquire_permit.lua", "acquire_shared.lua",
    "extend_shared.lua"};

#define X_TRIALS 36  /* trials a round (4 of each kind): their keys are probed in one pass */
#define X_KEYS 2     /* keys a trial may give a TTL */
#define X_MAX_CMDS 8 /* a timed step's commands */

/* A key that got a TTL, and what its probes saw. */
typedef struct xkey {
    char name[32];
    int64_t expire_ms; /* its expiry instant, the same on both sides */
    int at_edge, past_edge;
} xkey_t;

/* One command's arguments. */
typedef struct xcmd {
    int argc;
    const char *argv[12];
    size_t lens[12];
} xcmd_t;

/* Fills c with the arguments given (ended by NULL). */
static void mk(xcmd_t *c, const char *first, ...) {
    va_list ap;
    va_start(ap, first);
    c->argc = 0;
    for (const char *a = first; a && c->argc < 12; a = va_arg(ap, const char *)) {
        c->argv[c->argc] = a;
        c->lens[c->argc++] = strlen(a);
    }
    va_end(ap);
}

/* µs since the epoch from a TIME reply, or 0 when it is not one. */
static uint64_t time_us(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return 0;
    return strtoull(r->element[0]->str, NULL, 10) * 1000000u + strtoull(r->element[1]->str, NULL, 10);
}

/* The next reply on connection c (exits when the server is gone). */
static redisReply *next_reply(redisContext *c) {
    void *rv = NULL;
    if (redisGetReply(c, &rv) != REDIS_OK || !rv) {
        fprintf(stderr, "difftest: no reply from redis-server (%s)\n", c->errstr);
        exit(2);
    }
    return rv;
}

/* Runs c on the model at now_us and returns its reply (the caller frees it). */
static redisReply *on_model(diff_t *d, const xcmd_t *c, uint64_t now_us) {
    resp_cmd_t *rc = resp_cmd_make(c->argc, c->argv, c->lens);
    model_exec(d->m, d->a.ms, rc, now_us, &d->a.pushed);
    free(rc);
    return dt_parse_model(&d->a.pushed);
}

/* Compares the server's reply r to c with the model's m, exactly; says so
 * and counts a mismatch when they differ. */
static void expect_same(diff_t *d, const xcmd_t *c, redisReply *r, redisReply *m, uint64_t at_us) {
    if (m && dt_same(r, m, 0)) return;
    d->mismatches++;
    fprintf(stderr, "MISMATCH expiry check at %llu.%03llu ms (both sides):", (unsigned long long)(at_us / 1000),
            (unsigned long long)(at_us % 1000));
    dt_show_pair(stderr, c->argc, c->argv, c->lens, r, m);
}

/* Sends the n commands of c to the server between two TIMEs (the first
 * into *at_us). When both TIMEs read one millisecond, runs them on the
 * model at the first and compares every reply exactly, the replies kept
 * in out (the caller frees them); returns 1. Otherwise runs only c[0] on
 * the model (to follow the server) and returns 0. */
static int timed(diff_t *d, xcmd_t *c, int n, redisReply **out, uint64_t *at_us) {
    const char *tv[1] = {"TIME"};
    size_t tl[1] = {4};
    redisAppendCommandArgv(d->a.real, 1, tv, tl);
    for (int i = 0; i < n; i++) redisAppendCommandArgv(d->a.real, c[i].argc, c[i].argv, c[i].lens);
    redisAppendCommandArgv(d->a.real, 1, tv, tl);
    redisReply *t0 = next_reply(d->a.real), *r[X_MAX_CMDS];
    for (int i = 0; i < n; i++) r[i] = next_reply(d->a.real);
    redisReply *t1 = next_reply(d->a.real);
    uint64_t us0 = time_us(t0), us1 = time_us(t1);
    int tight = us0 && us0 / 1000 == us1 / 1000;
    *at_us = us0;
    freeReplyObject(t0);
    freeReplyObject(t1);
    for (int i = 0; i < n; i++) {
        redisReply *m = tight || i == 0 ? on_model(d, &c[i], us0) : NULL;
        if (tight) expect_same(d, &c[i], r[i], m, us0);
        if (m) freeReplyObject(m);
        if (tight && out)
            out[i] = r[i];
        else
            freeReplyObject(r[i]);
    }
    d->steps += (uint64_t)n;
    return tight;
}

/* Deletes the n keys on both sides (a dropped trial), unchecked. */
static void drop(diff_t *d, char (*keys)[32], int n) {
    for (int i = 0; i < n; i++) {
        xcmd_t c;
        mk(&c, "DEL", keys[i], NULL);
        redisReply *m = on_model(d, &c, dt_real_us());
        if (m) freeReplyObject(m);
        freeReplyObject(redisCommandArgv(d->a.real, c.argc, c.argv, c.lens));
    }
}

/* EVAL of the project's script `name` with nk keys then arguments (NULL-ended). */
static void script(xcmd_t *c, const char *name, const char *nk, ...) {
    const rl_script_t *s = rl_script_find(name);
    va_list ap;
    va_start(ap, nk);
    c->argc = 0;
    c->argv[c->argc++] = "EVAL";
    c->argv[c->argc++] = s->text;
    c->argv[c->argc++] = nk;
    for (const char *a = va_arg(ap, const char *); a && c->argc < 12; a = va_arg(ap, const char *))
        c->argv[c->argc++] = a;
    va_end(ap);
    for (int i = 0; i < c->argc; i++) c->lens[i] = strlen(c->argv[i]);
}

/* Trial kind's setup on keys k (what it extends must be there first),
 * into c; returns 0 when it needs none. */
static int setup(int kind, char (*k)[32], xcmd_t *c) {
    switch (kind) {
    case X_PEXPIRE: mk(c, "SET", k[0], "t1", NULL); return 1;
    case X_EXTEND: mk(c, "SET", k[0], "t1", "PX", "60000", NULL); return 1;
    case X_EXTEND_MULTI: script(c, "acquire_multi", "2", k[0], k[1], "t1", "60000", NULL); return 1;
    case X_EXTEND_SHARED: script(c, "acquire_shared", "1", k[0], "t1", "60000", NULL); return 1;
    }
    return 0;
}

/* Trial kind's step giving keys k a TTL of ttl (text), into c; its
 * keys into k (how many is returned) and whether k[0] is a reader's hash
 * into *hash. */
static int step(int kind, const char *base, char (*k)[32], const char *ttl, xcmd_t *c, int *hash) {
    snprintf(k[0], 32, "%s", base);
    snprintf(k[1], 32, "%sb", base);
    *hash = kind == X_SHARED || kind == X_EXTEND_SHARED;
    switch (kind) {
    case X_SET_NX: mk(c, "SET", k[0], "t1", "NX", "PX", ttl, NULL); return 1;
    case X_PEXPIRE: mk(c, "PEXPIRE", k[0], ttl, NULL); return 1;
    case X_WAIT: script(c, "acquire_wait", "1", k[0], "t1", ttl, NULL); return 1;
    case X_EXTEND: script(c, "extend", "1", k[0], "t1", ttl, NULL); return 1;
    case X_MULTI: script(c, "acquire_multi", "2", k[0], k[1], "t1", ttl, NULL); return 2;
    case X_EXTEND_MULTI: script(c, "extend_multi", "2", k[0], k[1], "t1", ttl, NULL); return 2;
    case X_PERMIT:
        snprintf(k[0], 32, "%s:permit:0", base);
        snprintf(k[1], 32, "%s:permit:1", base);
        script(c, "acquire_permit", "1", base, "t1", ttl, "2", NULL);
        return 2;
    case X_SHARED: script(c, "acquire_shared", "1", k[0], "t1", ttl, NULL); return 1;
    default: script(c, "extend_shared", "1", k[0], "t1", ttl, NULL); return 1;
    }
}

/* A TTL the scenarios use: mostly safe's range (which holds the breaking
 * scenarios'), sometimes wan's. */
static uint64_t draw_ttl(rng_t *r) {
    return rng_chance(r, 0.15) ? SIM_TTL_WAN : (uint64_t)rng_range(r, SIM_TTL_SAFE_MIN, SIM_TTL_SAFE_MAX);
}

/* Runs trial kind with ttl on key base: its setup and its step, each
 * timed; the keys it gave a TTL go into out (returns how many). A trial
 * with a step that could not be compared is dropped: its keys deleted on
 * both sides, 0 returned. */
static int trial(diff_t *d, int kind, const char *base, uint64_t ttl, xkey_t *out, dt_expiry_stats_t *st) {
    char k[X_KEYS][32], t[24];
    xcmd_t c[X_MAX_CMDS], su;
    redisReply *r[X_MAX_CMDS];
    uint64_t at;
    int hash, n = 0;
    snprintf(t, sizeof t, "%llu", (unsigned long long)ttl);
    int nk = step(kind, base, k, t, &c[0], &hash), nc = 1;
    for (int i = 0; i < nk; i++) {
        mk(&c[nc++], "PTTL", k[i], NULL);
        mk(&c[nc++], "PEXPIRETIME", k[i], NULL);
    }
    if (hash) mk(&c[nc++], "HGETALL", k[0], NULL);
    st->trials++;
    if ((setup(kind, k, &su) && !timed(d, &su, 1, NULL, &at)) || !timed(d, c, nc, r, &at)) {
        drop(d, k, nk);
        st->dropped++;
        return 0;
    }
    st->compared++;
    st->by_kind[kind]++;
    if (!st->ttl_lo || ttl < st->ttl_lo) st->ttl_lo = ttl;
    if (ttl > st->ttl_hi) st->ttl_hi = ttl;
    for (int i = 0; i < nk; i++)
        if (r[2 + 2 * i]->type == REDIS_REPLY_INTEGER && r[2 + 2 * i]->integer >= 0) {
            snprintf(out[n].name, sizeof out[n].name, "%s", k[i]);
            out[n].expire_ms = r[2 + 2 * i]->integer;
            out[n].at_edge = out[n].past_edge = 0;
            n++;
        }
    for (int i = 0; i < nc; i++) freeReplyObject(r[i]);
    return n;
}

/* The earliest expiry instant of the keys not yet done (INT64_MAX: none). */
static int64_t earliest(const xkey_t *k, const int *done, int n) {
    int64_t e = INT64_MAX;
    for (int i = 0; i < n; i++)
        if (!done[i] && k[i].expire_ms < e) e = k[i].expire_ms;
    return e;
}

/* Counts key k, done, into st. */
static void key_done(const xkey_t *k, dt_expiry_stats_t *st) {
    st->keys++;
    st->at_edge += (uint64_t)k->at_edge;
    st->past_edge += (uint64_t)k->past_edge;
    st->both += (uint64_t)(k->at_edge && k->past_edge);
}

/* Probes the n keys around their expiry instants: waits until 2 ms
 * before the earliest, then PTTL (between two TIMEs) of every key due
 * within 2 ms, until each is 2 ms past its instant; every probe whose
 * TIMEs agree is compared exactly and marks the keys seen at their
 * expiry millisecond and the one after. */
static void probe(diff_t *d, xkey_t *k, int n, dt_expiry_stats_t *st) {
    int done[X_TRIALS * X_KEYS] = {0}, left = n;
    while (left) {
        uint64_t wake = (uint64_t)(earliest(k, done, n) - 2) * 1000, now = dt_real_us();
        if (now < wake) { /* (the server's clock is this machine's: TIME reads it) */
            usleep((useconds_t)(wake - now));
            continue;
        }
        int64_t now_ms = (int64_t)(now / 1000);
        xcmd_t c[X_MAX_CMDS];
        redisReply *r[X_MAX_CMDS];
        int idx[X_MAX_CMDS], m = 0;
        for (int i = 0; i < n && m < X_MAX_CMDS; i++)
            if (!done[i] && k[i].expire_ms <= now_ms + 2) mk(&c[m], "PTTL", k[i].name, NULL), idx[m++] = i;
        uint64_t at;
        int tight = timed(d, c, m, r, &at);
        int64_t t = (int64_t)(at / 1000);
        for (int j = 0; j < m; j++) {
            xkey_t *x = &k[idx[j]];
            if (tight) {
                freeReplyObject(r[j]);
                st->probes++;
                x->at_edge |= t == x->expire_ms;
                x->past_edge |= t == x->expire_ms + 1;
            }
            if (t >= x->expire_ms + 2) done[idx[j]] = 1, left--, key_done(x, st);
        }
    }
}

/* Runs rounds of X_TRIALS trials (each key probed to its expiry) until
 * want more trials were compared and want more keys seen at both edges,
 * at most 8 rounds (one is enough on a quiet machine for want up to
 * X_TRIALS). */
uint64_t dt_expiry(diff_t *d, rng_t *r, uint64_t want, dt_expiry_stats_t *st) {
    uint64_t before = d->mismatches, compared = st->compared + want, both = st->both + want;
    uint64_t rounds = 8 * ((want + X_TRIALS - 1) / X_TRIALS);
    for (uint64_t round = 0; round < rounds && (st->compared < compared || st->both < both); round++) {
        xkey_t keys[X_TRIALS * X_KEYS];
        int n = 0;
        for (int i = 0; i < X_TRIALS; i++) {
            char base[16];
            snprintf(base, sizeof base, "x%d", i);
            n += trial(d, (int)(st->trials % X_KINDS), base, draw_ttl(r), keys + n, st);
        }
        probe(d, keys, n, st);
    }
    return d->mismatches - before;
}

/* Prints what the expiry check covered; returns 0 when it met its
 * floors (want trials compared, want keys seen at both edges, each kind
 * of trial compared twice), else 1 after saying what fell short. */
int dt_expiry_report(const dt_expiry_stats_t *s, uint64_t want) {
    printf("expiry: %llu trials at TTLs of %llu-%llu ms, %llu compared to the millisecond, %llu dropped (their TIMEs "
           "a millisecond apart); %llu keys expired, %llu seen at their expiry millisecond (PTTL 0 on both), %llu the "
           "millisecond after (gone on both), %llu both; %llu probes compared\n",
           (unsigned long long)s->trials, (unsigned long long)s->ttl_lo, (unsigned long long)s->ttl_hi,
           (unsigned long long)s->compared, (unsigned long long)s->dropped, (unsigned long long)s->keys,
           (unsigned long long)s->at_edge, (unsigned long long)s->past_edge, (unsigned long long)s->both,
           (unsigned long long)s->probes);
    int bad = 0;
    printf("expiry trials compared by kind:");
    for (int k = 0; k < X_KINDS; k++) {
        printf(" %s %llu%s", xnames[k], (unsigned long long)s->by_kind[k], k + 1 < X_KINDS ? "," : "\n");
        bad |= s->by_kind[k] < 2;
    }
    if (bad) fprintf(stderr, "difftest: a kind of expiry trial was compared fewer than 2 times\n");
    if (s->compared < want || s->both < want) {
        fprintf(stderr,
                "difftest: the expiry check needs %llu trials compared and %llu keys seen at both edges; "
                "it got %llu and %llu before its bound\n",
                (unsigned long long)want, (unsigned long long)want, (unsigned long long)s->compared,
                (unsigned long long)s->both);
        bad = 1;
    }
    return bad;
}
