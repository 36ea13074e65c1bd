/* model.c -- the simulated Redis master (see model.h): keyspace, TTLs,
 * commands, MULTI/EXEC, pub/sub. Error texts are Redis 7.0's. */
#include "model.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { MT_STRING = 1, MT_HASH };

typedef struct mkey {
    struct mkey *next; /* its bucket's chain */
    char *name;
    size_t nlen;
    int type;
    sbuf_t str;    /* MT_STRING */
    sbuf_t *f, *v; /* MT_HASH: fields and values in insertion order */
    size_t nf, capf;
    int64_t expire_ms; /* -1: none */
} mkey_t;

struct model_session {
    model_t *m;
    void *owner;
    model_session_t *next, *prev;
    int in_multi, dirty;
    uint64_t woff; /* the replication offset of its last write (WAIT) */
    resp_cmd_t **queued;
    size_t nq, capq;
    sbuf_t *chans[2]; /* channels subscribed: [0] plain (SUBSCRIBE), [1] shard (SSUBSCRIBE) */
    size_t nch[2], capch[2];
    int asking; /* ASKING came before this command (cluster mode) */
};

struct model {
    mkey_t **b; /* buckets (a power of two) */
    size_t nb, nkeys;
    uint64_t start_us;
    uint64_t now_us; /* of the command being run */
    int64_t now_ms;
    int in_script;
    model_session_t *sessions;
    model_push_fn push;
    void *push_arg;
    model_scripts_t scripts;
    model_wait_fn wait;
    void *wait_arg;
    int recording;           /* keys' changes are kept for replicas (model_take_fx) */
    model_fx_t *touched;     /* the command's keys as they were before it (recording) */
    uint64_t repl_off;       /* batches of changes taken so far */
    model_session_t *writer; /* whose command the touched keys are */
    model_route_fn route;    /* cluster mode: where keyed commands go (NULL: a plain master) */
    model_slots_fn slots;
    void *cluster_arg;
};

/* A batch of changes: each key as it now is (k NULL: gone), or, for a
 * full resync, every key (flush). */
struct model_fx {
    int refs, flush;
    uint64_t off;
    size_t n, cap;
    char **name;
    size_t *nlen;
    struct mkey **k;
};

/* ------------------------------------------------------------ keyspace */

static const char E_WRONGTYPE[] = "WRONGTYPE Operation against a key holding the wrong kind of value";
static const char E_NOTINT[] = "ERR value is not an integer or out of range";
static const char E_SYNTAX[] = "ERR syntax error";

/* FNV-1a of the n bytes at p. */
static uint64_t hash(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* Frees key k's memory (k already unlinked). */
static void key_free(mkey_t *k) {
    sb_free(&k->str);
    for (size_t i = 0; i < k->nf; i++) sb_free(&k->f[i]), sb_free(&k->v[i]);
    free(k->f);
    free(k->v);
    free(k->name);
    free(k);
}

/* The link that points at key name (n bytes) in its chain, or at the
 * chain's end when absent. */
static mkey_t **key_slot(model_t *m, const char *name, size_t n) {
    mkey_t **at = &m->b[hash(name, n) & (m->nb - 1)];
    while (*at && !((*at)->nlen == n && memcmp((*at)->name, name, n) == 0)) at = &(*at)->next;
    return at;
}

/* Removes key name if present; returns 1 when it was. */
static int key_delete(model_t *m, const char *name, size_t n) {
    mkey_t **at = key_slot(m, name, n), *k = *at;
    if (!k) return 0;
    *at = k->next;
    key_free(k);
    m->nkeys--;
    return 1;
}

/* The live key name, or NULL; an expired one is deleted on the way (as
 * Redis's lookups do). */
static mkey_t *key_find(model_t *m, const char *name, size_t n) {
    mkey_t *k = *key_slot(m, name, n);
    if (k && k->expire_ms >= 0 && m->now_ms > k->expire_ms) {
        key_delete(m, name, n);
        return NULL;
    }
    return k;
}

/* Doubles the bucket array once keys outnumber buckets. */
static void grow(model_t *m) {
    size_t nb = m->nb * 2;
    mkey_t **b = calloc(nb, sizeof *b);
    if (!b) abort();
    for (size_t i = 0; i < m->nb; i++)
        for (mkey_t *k = m->b[i], *nx; k; k = nx) {
            nx = k->next;
            size_t j = hash(k->name, k->nlen) & (nb - 1);
            k->next = b[j];
            b[j] = k;
        }
    free(m->b);
    m->b = b;
    m->nb = nb;
}

/* Puts key k (whose name is absent from m) into m's chains. */
static void key_link(model_t *m, mkey_t *k) {
    if (m->nkeys >= m->nb) grow(m);
    mkey_t **at = &m->b[hash(k->name, k->nlen) & (m->nb - 1)];
    k->next = *at;
    *at = k;
    m->nkeys++;
}

/* A new key name of type t with no expiry (the caller made sure it was
 * absent). */
static mkey_t *key_add(model_t *m, const char *name, size_t n, int t) {
    mkey_t *k = calloc(1, sizeof *k);
    if (!k || !(k->name = malloc(n + 1))) abort();
    memcpy(k->name, name, n);
    k->name[n] = '\0';
    k->nlen = n;
    k->type = t;
    k->expire_ms = -1;
    key_link(m, k);
    return k;
}

/* Empties every key. */
static void flush_keys(model_t *m) {
    for (size_t i = 0; i < m->nb; i++)
        for (mkey_t *k = m->b[i], *nx; k; k = nx) {
            nx = k->next;
            key_free(k);
        }
    memset(m->b, 0, m->nb * sizeof *m->b);
    m->nkeys = 0;
}

/* ----------------------------------------------------------- arguments */

/* Parses arg (n bytes) as a whole signed 64-bit decimal; 0 or -1. */
static int parse_ll(const char *arg, size_t n, long long *v) {
    if (n == 0 || n > 20) return -1;
    char buf[24];
    memcpy(buf, arg, n);
    buf[n] = '\0';
    if (buf[0] == '+' || isspace((unsigned char)buf[0])) return -1;
    if (n > 1 && buf[0] == '0') return -1;
    if (n > 2 && buf[0] == '-' && buf[1] == '0') return -1;
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (errno || *end) return -1;
    *v = x;
    return 0;
}

/* 1 when argument i of c is word (case-insensitive). */
static int is(const resp_cmd_t *c, int i, const char *word) {
    return i < c->argc && strlen(word) == c->len[i] && strncasecmp(c->argv[i], word, c->len[i]) == 0;
}

/* -------------------------------------------------------------- strings */

/* Sets k (a string) to the n bytes at v. */
static void str_set(mkey_t *k, const char *v, size_t n) {
    sb_reset(&k->str);
    sb_add(&k->str, v, n);
}

/* SET key value [NX|XX] [GET] [EX s|PX ms|KEEPTTL]. */
static void c_set(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int nx = 0, xx = 0, get = 0, keepttl = 0;
    long long ttl = -1;
    for (int i = 3; i < c->argc; i++) {
        int more = i + 1 < c->argc;
        if (is(c, i, "NX") && !xx)
            nx = 1;
        else if (is(c, i, "XX") && !nx)
            xx = 1;
        else if (is(c, i, "GET"))
            get = 1;
        else if (is(c, i, "KEEPTTL") && ttl < 0)
            keepttl = 1;
        else if ((is(c, i, "PX") || is(c, i, "EX")) && more && ttl < 0 && !keepttl) {
            long long v;
            if (parse_ll(c->argv[i + 1], c->len[i + 1], &v)) {
                resp_error(o, E_NOTINT);
                return;
            }
            if (v <= 0 || (is(c, i, "EX") && v > INT64_MAX / 1000)) {
                resp_error(o, "ERR invalid expire time in 'set' command");
                return;
            }
            ttl = is(c, i, "EX") ? v * 1000 : v;
            i++;
        } else {
            {
                resp_error(o, E_SYNTAX);
                return;
            }
        }
    }
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    if (get && k && k->type != MT_STRING) {
        resp_error(o, E_WRONGTYPE);
        return;
    }
    if (get) {
        if (k)
            resp_bulk(o, sb_data(&k->str), sb_pending(&k->str));
        else
            resp_nil(o);
    }
    if ((nx && k) || (xx && !k)) {
        if (!get) resp_nil(o);
        return;
    }
    int64_t keep = k && keepttl ? k->expire_ms : -1;
    if (k) key_delete(m, c->argv[1], c->len[1]);
    k = key_add(m, c->argv[1], c->len[1], MT_STRING);
    str_set(k, c->argv[2], c->len[2]);
    k->expire_ms = ttl > 0 ? m->now_ms + ttl : keep;
    if (!get) resp_status(o, "OK");
}

/* GET key. */
static void c_get(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    if (!k) {
        resp_nil(o);
        return;
    }
    if (k->type != MT_STRING) {
        resp_error(o, E_WRONGTYPE);
        return;
    }
    resp_bulk(o, sb_data(&k->str), sb_pending(&k->str));
}

/* MGET key...: nil for absent keys and keys of another type. */
static void c_mget(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    resp_array(o, c->argc - 1);
    for (int i = 1; i < c->argc; i++) {
        mkey_t *k = key_find(m, c->argv[i], c->len[i]);
        if (k && k->type == MT_STRING)
            resp_bulk(o, sb_data(&k->str), sb_pending(&k->str));
        else
            resp_nil(o);
    }
}

/* INCRBY key n: the string as a 64-bit integer plus n (its TTL kept). */
static void c_incrby(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    long long by, v = 0;
    if (parse_ll(c->argv[2], c->len[2], &by)) {
        resp_error(o, E_NOTINT);
        return;
    }
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    if (k && k->type != MT_STRING) {
        resp_error(o, E_WRONGTYPE);
        return;
    }
    if (k && parse_ll(sb_data(&k->str), sb_pending(&k->str), &v)) {
        resp_error(o, E_NOTINT);
        return;
    }
    if ((by < 0 && v < 0 && by < INT64_MIN - v) || (by > 0 && v > 0 && by > INT64_MAX - v)) {
        resp_error(o, "ERR increment or decrement would overflow");
        return;
    }
    v += by;
    if (!k) k = key_add(m, c->argv[1], c->len[1], MT_STRING);
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    str_set(k, buf, (size_t)n);
    resp_int(o, v);
}

/* --------------------------------------------------------- any key type */

/* DEL key...: how many existed. */
static void c_del(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    long long n = 0;
    for (int i = 1; i < c->argc; i++)
        if (key_find(m, c->argv[i], c->len[i])) n += key_delete(m, c->argv[i], c->len[i]);
    resp_int(o, n);
}

/* EXISTS key...: how many exist (a key named twice counts twice). */
static void c_exists(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    long long n = 0;
    for (int i = 1; i < c->argc; i++) n += key_find(m, c->argv[i], c->len[i]) != NULL;
    resp_int(o, n);
}

/* PEXPIRE key ms [NX|XX|GT|LT]: 1 when set; a time already past deletes. */
static void c_pexpire(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    long long ms;
    if (parse_ll(c->argv[2], c->len[2], &ms)) {
        resp_error(o, E_NOTINT);
        return;
    }
    int nx = 0, xx = 0, gt = 0, lt = 0;
    for (int i = 3; i < c->argc; i++) {
        if (is(c, i, "NX"))
            nx = 1;
        else if (is(c, i, "XX"))
            xx = 1;
        else if (is(c, i, "GT"))
            gt = 1;
        else if (is(c, i, "LT"))
            lt = 1;
        else {
            resp_error(o, "ERR Unsupported option ");
            return;
        }
    }
    if (nx && (xx || gt || lt)) {
        resp_error(o, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if (gt && lt) {
        resp_error(o, "ERR GT and LT options at the same time are not compatible");
        return;
    }
    if (ms > INT64_MAX - m->now_ms) {
        resp_error(o, "ERR invalid expire time in 'pexpire' command");
        return;
    }
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    if (!k) {
        resp_int(o, 0);
        return;
    }
    int64_t when = m->now_ms + ms, cur = k->expire_ms;
    if ((nx && cur >= 0) || (xx && cur < 0) || (gt && (cur < 0 || when <= cur)) || (lt && cur >= 0 && when >= cur)) {
        resp_int(o, 0);
        return;
    }
    if (when <= m->now_ms) {
        key_delete(m, c->argv[1], c->len[1]);
        {
            resp_int(o, 1);
            return;
        }
    }
    k->expire_ms = when;
    resp_int(o, 1);
}

/* PTTL key: ms left, -1 with no expiry, -2 with no key. */
static void c_pttl(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    if (!k) {
        resp_int(o, -2);
        return;
    }
    if (k->expire_ms < 0) {
        resp_int(o, -1);
        return;
    }
    long long left = k->expire_ms - m->now_ms;
    resp_int(o, left < 0 ? 0 : left);
}

/* PEXPIRETIME key: when it expires (ms since the epoch on the node's
 * clock), -1 with no expiry, -2 with no key. */
static void c_pexpiretime(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    resp_int(o, !k ? -2 : k->expire_ms < 0 ? -1 : k->expire_ms);
}

/* TYPE key: a status. */
static void c_type(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    resp_status(o, !k ? "none" : k->type == MT_STRING ? "string" : "hash");
}

/* ---------------------------------------------------------------- hashes */

/* The index of field f (n bytes) in hash k, or -1. */
static long hfind(const mkey_t *k, const char *f, size_t n) {
    for (size_t i = 0; i < k->nf; i++)
        if (sb_pending(&k->f[i]) == n && memcmp(sb_data(&k->f[i]), f, n) == 0) return (long)i;
    return -1;
}

/* The hash key named by argument 1 of c; NULL when absent (*bad set when
 * it is of another type, the error replied). create: make it when absent. */
static mkey_t *hash_arg(model_t *m, const resp_cmd_t *c, sbuf_t *o, int create, int *bad) {
    mkey_t *k = key_find(m, c->argv[1], c->len[1]);
    *bad = 0;
    if (k && k->type != MT_HASH) {
        *bad = 1;
        resp_error(o, E_WRONGTYPE);
        return NULL;
    }
    if (!k && create) k = key_add(m, c->argv[1], c->len[1], MT_HASH);
    return k;
}

/* HSET key f v [f v ...]: how many fields are new. */
static void c_hset(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    if (c->argc % 2) {
        resp_error(o, "ERR wrong number of arguments for 'hset' command");
        return;
    }
    int bad;
    mkey_t *k = hash_arg(m, c, o, 1, &bad);
    if (bad) return;
    long long added = 0;
    for (int i = 2; i < c->argc; i += 2) {
        long at = hfind(k, c->argv[i], c->len[i]);
        if (at < 0) {
            if (k->nf == k->capf) {
                k->capf = k->capf ? k->capf * 2 : 4;
                k->f = realloc(k->f, k->capf * sizeof *k->f);
                k->v = realloc(k->v, k->capf * sizeof *k->v);
                if (!k->f || !k->v) abort();
            }
            at = (long)k->nf++;
            memset(&k->f[at], 0, sizeof k->f[at]);
            memset(&k->v[at], 0, sizeof k->v[at]);
            sb_add(&k->f[at], c->argv[i], c->len[i]);
            added++;
        }
        sb_reset(&k->v[at]);
        sb_add(&k->v[at], c->argv[i + 1], c->len[i + 1]);
    }
    resp_int(o, added);
}

/* HGET key f. */
static void c_hget(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int bad;
    mkey_t *k = hash_arg(m, c, o, 0, &bad);
    if (bad) return;
    long at = k ? hfind(k, c->argv[2], c->len[2]) : -1;
    if (at < 0) {
        resp_nil(o);
        return;
    }
    resp_bulk(o, sb_data(&k->v[at]), sb_pending(&k->v[at]));
}

/* HMGET key f...: each field's value, or nil. */
static void c_hmget(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int bad;
    mkey_t *k = hash_arg(m, c, o, 0, &bad);
    if (bad) return;
    resp_array(o, c->argc - 2);
    for (int i = 2; i < c->argc; i++) {
        long at = k ? hfind(k, c->argv[i], c->len[i]) : -1;
        if (at < 0)
            resp_nil(o);
        else
            resp_bulk(o, sb_data(&k->v[at]), sb_pending(&k->v[at]));
    }
}

/* HEXISTS key f. */
static void c_hexists(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int bad;
    mkey_t *k = hash_arg(m, c, o, 0, &bad);
    if (!bad) resp_int(o, k && hfind(k, c->argv[2], c->len[2]) >= 0);
}

/* HDEL key f...: how many were there; an emptied hash goes. */
static void c_hdel(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int bad;
    mkey_t *k = hash_arg(m, c, o, 0, &bad);
    if (bad) return;
    long long n = 0;
    for (int i = 2; k && i < c->argc; i++) {
        long at = hfind(k, c->argv[i], c->len[i]);
        if (at < 0) continue;
        sb_free(&k->f[at]);
        sb_free(&k->v[at]);
        memmove(&k->f[at], &k->f[at + 1], (k->nf - (size_t)at - 1) * sizeof *k->f);
        memmove(&k->v[at], &k->v[at + 1], (k->nf - (size_t)at - 1) * sizeof *k->v);
        k->nf--;
        n++;
    }
    if (k && k->nf == 0) key_delete(m, c->argv[1], c->len[1]);
    resp_int(o, n);
}

/* HLEN key. */
static void c_hlen(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int bad;
    mkey_t *k = hash_arg(m, c, o, 0, &bad);
    if (!bad) resp_int(o, k ? (long long)k->nf : 0);
}

/* HGETALL key: field, value, ... in insertion order (a small hash's
 * listpack order in Redis). */
static void c_hgetall(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    int bad;
    mkey_t *k = hash_arg(m, c, o, 0, &bad);
    if (bad) return;
    resp_array(o, k ? 2 * (long long)k->nf : 0);
    for (size_t i = 0; k && i < k->nf; i++) {
        resp_bulk(o, sb_data(&k->f[i]), sb_pending(&k->f[i]));
        resp_bulk(o, sb_data(&k->v[i]), sb_pending(&k->v[i]));
    }
}

/* --------------------------------------------------------------- server */

/* PING [msg] (in a subscribed session: ["pong", msg]). */
static void c_ping(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    if (c->argc > 2) {
        resp_error(o, "ERR wrong number of arguments for 'ping' command");
        return;
    }
    if (s && (s->nch[0] || s->nch[1])) {
        resp_array(o, 2);
        resp_str(o, "pong");
        resp_bulk(o, c->argc > 1 ? c->argv[1] : "", c->argc > 1 ? c->len[1] : 0);
        return;
    }
    if (c->argc > 1)
        resp_bulk(o, c->argv[1], c->len[1]);
    else
        resp_status(o, "PONG");
}

/* ECHO msg. */
static void c_echo(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)s;
    resp_bulk(o, c->argv[1], c->len[1]);
}

/* TIME: [seconds, microseconds] of the node's clock. */
static void c_time(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s, (void)c;
    char a[24], b[24];
    snprintf(a, sizeof a, "%llu", (unsigned long long)(m->now_us / 1000000u));
    snprintf(b, sizeof b, "%llu", (unsigned long long)(m->now_us % 1000000u));
    resp_array(o, 2);
    resp_str(o, a);
    resp_str(o, b);
}

/* INFO [section]: the Server section, with uptime_in_seconds counted from
 * whole-second readings as Redis does. */
static void c_info(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s, (void)c;
    unsigned long long up = m->now_us / 1000000u - m->start_us / 1000000u;
    sbuf_t t = {0};
    sb_printf(&t,
              "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nprocess_id:1\r\n"
              "tcp_port:6379\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n",
              up, up / 86400u);
    resp_bulk(o, sb_data(&t), sb_pending(&t));
    sb_free(&t);
}

/* WAIT numreplicas timeout: the replicas' hook answers (or blocks s); a
 * master without replicas acknowledges 0. */
static void c_wait(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    long long a, b;
    if (parse_ll(c->argv[1], c->len[1], &a) || parse_ll(c->argv[2], c->len[2], &b)) {
        resp_error(o, E_NOTINT);
        return;
    }
    if (b < 0) {
        resp_error(o, "ERR timeout is negative");
        return;
    }
    if (m->wait && s && !s->in_multi) {
        m->wait(m->wait_arg, s, a, b, o);
        return;
    }
    resp_int(o, 0);
}

/* ROLE: a master with no replicas. */
static void c_role(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)s, (void)c;
    resp_array(o, 3);
    resp_str(o, "master");
    resp_int(o, 0);
    resp_array(o, 0);
}

/* SELECT db: database 0..15 (one keyspace: the simulator uses db 0). */
static void c_select(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)s;
    long long db;
    if (parse_ll(c->argv[1], c->len[1], &db)) {
        resp_error(o, E_NOTINT);
        return;
    }
    if (db < 0 || db > 15) {
        resp_error(o, "ERR DB index is out of range");
        return;
    }
    resp_status(o, "OK");
}

/* AUTH: no password is configured on a simulated node. */
static void c_auth(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)s, (void)c;
    resp_error(o, "ERR AUTH <password> called without any password configured for the default user. "
                  "Are you sure your configuration is correct?");
}

/* FLUSHALL [SYNC|ASYNC]. */
static void c_flushall(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    if (c->argc > 2 || (c->argc == 2 && !is(c, 1, "SYNC") && !is(c, 1, "ASYNC"))) {
        resp_error(o, E_SYNTAX);
        return;
    }
    flush_keys(m);
    resp_status(o, "OK");
}

/* DBSIZE. */
static void c_dbsize(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s, (void)c;
    resp_int(o, (long long)m->nkeys);
}

/* -------------------------------------------------------------- scripts */

static void c_eval(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    mlua_eval(m, c, 0, o);
}

/* EVALSHA sha numkeys key... arg... */
static void c_evalsha(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    mlua_eval(m, c, 1, o);
}

/* SCRIPT LOAD body | EXISTS sha... | FLUSH [SYNC|ASYNC]. */
static void c_script(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    if (is(c, 1, "LOAD") && c->argc == 3) {
        char sha[41], err[256];
        if (mlua_load(m, c->argv[2], c->len[2], sha, err, sizeof err)) {
            resp_error(o, err);
            return;
        }
        {
            resp_bulk(o, sha, 40);
            return;
        }
    }
    if (is(c, 1, "EXISTS") && c->argc >= 3) {
        resp_array(o, c->argc - 2);
        for (int i = 2; i < c->argc; i++) resp_int(o, c->len[i] == 40 && mlua_known(m, c->argv[i]));
        return;
    }
    if (is(c, 1, "FLUSH") && (c->argc == 2 || (c->argc == 3 && (is(c, 2, "SYNC") || is(c, 2, "ASYNC"))))) {
        mlua_forget(m);
        {
            resp_status(o, "OK");
            return;
        }
    }
    resp_error(o, "ERR unknown subcommand or wrong number of arguments for 'script' command");
}

/* --------------------------------------------------------------- pub/sub */

/* The index of channel ch (n bytes) among s's of kind k (0 plain, 1
 * shard), or -1. */
static long chan_find(const model_session_t *s, int k, const char *ch, size_t n) {
    for (size_t i = 0; i < s->nch[k]; i++)
        if (sb_pending(&s->chans[k][i]) == n && memcmp(sb_data(&s->chans[k][i]), ch, n) == 0) return (long)i;
    return -1;
}

/* Appends [kind, ch, count] to o. */
static void sub_reply(sbuf_t *o, const char *kind, const char *ch, size_t n, size_t count) {
    resp_array(o, 3);
    resp_str(o, kind);
    if (ch)
        resp_bulk(o, ch, n);
    else
        resp_nil(o);
    resp_int(o, (long long)count);
}

/* (S)SUBSCRIBE ch...: one confirmation per channel. */
static void subscribe(model_session_t *s, int k, const resp_cmd_t *c, sbuf_t *o) {
    for (int i = 1; i < c->argc; i++) {
        if (chan_find(s, k, c->argv[i], c->len[i]) < 0) {
            if (s->nch[k] == s->capch[k]) {
                s->capch[k] = s->capch[k] ? s->capch[k] * 2 : 4;
                if (!(s->chans[k] = realloc(s->chans[k], s->capch[k] * sizeof *s->chans[k]))) abort();
            }
            memset(&s->chans[k][s->nch[k]], 0, sizeof s->chans[k][0]);
            sb_add(&s->chans[k][s->nch[k]++], c->argv[i], c->len[i]);
        }
        sub_reply(o, k ? "ssubscribe" : "subscribe", c->argv[i], c->len[i], s->nch[k]);
    }
}

static void c_subscribe(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    subscribe(s, 0, c, o);
}

static void c_ssubscribe(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    subscribe(s, 1, c, o);
}

/* Drops channel i of kind k of s. */
static void chan_drop(model_session_t *s, int k, size_t i) {
    sb_free(&s->chans[k][i]);
    memmove(&s->chans[k][i], &s->chans[k][i + 1], (s->nch[k] - i - 1) * sizeof *s->chans[k]);
    s->nch[k]--;
}

/* Drops channel i of kind k of s and appends its confirmation to o. */
static void unsub_one(model_session_t *s, int k, size_t i, sbuf_t *o) {
    sbuf_t ch = s->chans[k][i];
    s->chans[k][i] = (sbuf_t){0};
    chan_drop(s, k, i);
    sub_reply(o, k ? "sunsubscribe" : "unsubscribe", sb_data(&ch), sb_pending(&ch), s->nch[k]);
    sb_free(&ch);
}

/* (S)UNSUBSCRIBE [ch...]: every channel of the kind when none is named. */
static void unsubscribe(model_session_t *s, int k, const resp_cmd_t *c, sbuf_t *o) {
    if (c->argc == 1) {
        if (!s->nch[k]) sub_reply(o, k ? "sunsubscribe" : "unsubscribe", NULL, 0, 0);
        while (s->nch[k]) unsub_one(s, k, 0, o);
        return;
    }
    for (int i = 1; i < c->argc; i++) {
        long at = chan_find(s, k, c->argv[i], c->len[i]);
        if (at >= 0) chan_drop(s, k, (size_t)at);
        sub_reply(o, k ? "sunsubscribe" : "unsubscribe", c->argv[i], c->len[i], s->nch[k]);
    }
}

static void c_unsubscribe(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    unsubscribe(s, 0, c, o);
}

static void c_sunsubscribe(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    unsubscribe(s, 1, c, o);
}

/* (S)PUBLISH ch msg: every session subscribed to ch (of kind k) gets
 * ["message", ch, msg] (["smessage", ...]); replies how many. */
static void publish(model_t *m, int k, const resp_cmd_t *c, sbuf_t *o) {
    long long n = 0;
    sbuf_t msg = {0};
    resp_array(&msg, 3);
    resp_str(&msg, k ? "smessage" : "message");
    resp_bulk(&msg, c->argv[1], c->len[1]);
    resp_bulk(&msg, c->argv[2], c->len[2]);
    for (model_session_t *t = m->sessions; t; t = t->next) {
        if (chan_find(t, k, c->argv[1], c->len[1]) < 0) continue;
        n++;
        if (m->push) m->push(m->push_arg, t, sb_data(&msg), sb_pending(&msg));
    }
    sb_free(&msg);
    resp_int(o, n);
}

static void c_publish(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    publish(m, 0, c, o);
}

static void c_spublish(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    publish(m, 1, c, o);
}

/* ------------------------------------------------------------ the table */

/* F_WRITE: the command changes the key in argv[1], or every key argument
 * with F_KEYS (DEL), or every key with F_ALL (FLUSHALL): replicas are sent
 * what it changed. In cluster mode a command is routed by its keys: argv[1]
 * (F_KEY), every argument (F_KEYS), a script's declared keys (F_NUMKEYS),
 * or its shard channels (F_CHANS). */
enum {
    F_NOSCRIPT = 1,
    F_SUBOK = 2,
    F_NOMULTI = 4,
    F_WRITE = 8,
    F_KEYS = 16,
    F_ALL = 32,
    F_KEY = 64,
    F_NUMKEYS = 128,
    F_CHANS = 256
};

typedef struct mcmd {
    const char *name;
    int arity; /* Redis's: n exactly, -n at least n */
    int flags;
    void (*fn)(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
} mcmd_t;

static void c_multi(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
static void c_asking(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
static int routed(model_t *m, const model_session_t *s, const resp_cmd_t *const *cmds, size_t n, sbuf_t *o);
static void c_cluster(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
/* EXEC: runs the queued commands at once, their replies in one array
 * (EXECABORT when one was refused while queueing). */
static void c_exec(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
/* DISCARD: ends the transaction unrun. */
static void c_discard(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);

static const mcmd_t cmds[] = {
    {"get", 2, F_KEY, c_get},
    {"set", -3, F_WRITE | F_KEY, c_set},
    {"del", -2, F_WRITE | F_KEYS, c_del},
    {"exists", -2, F_KEYS, c_exists},
    {"pexpire", -3, F_WRITE | F_KEY, c_pexpire},
    {"pttl", 2, F_KEY, c_pttl},
    {"pexpiretime", 2, F_KEY, c_pexpiretime},
    {"type", 2, F_KEY, c_type},
    {"mget", -2, F_KEYS, c_mget},
    {"incrby", 3, F_WRITE | F_KEY, c_incrby},
    {"hset", -4, F_WRITE | F_KEY, c_hset},
    {"hget", 3, F_KEY, c_hget},
    {"hmget", -3, F_KEY, c_hmget},
    {"hdel", -3, F_WRITE | F_KEY, c_hdel},
    {"hlen", 2, F_KEY, c_hlen},
    {"hgetall", 2, F_KEY, c_hgetall},
    {"hexists", 3, F_KEY, c_hexists},
    {"time", 1, 0, c_time},
    {"ping", -1, F_SUBOK, c_ping},
    {"echo", 2, 0, c_echo},
    {"publish", 3, 0, c_publish},
    {"info", -1, 0, c_info},
    {"wait", 3, F_NOSCRIPT, c_wait},
    {"role", 1, 0, c_role},
    {"select", 2, F_NOSCRIPT, c_select},
    {"auth", -2, F_NOSCRIPT, c_auth},
    {"flushall", -1, F_WRITE | F_ALL, c_flushall},
    {"dbsize", 1, 0, c_dbsize},
    {"eval", -3, F_NOSCRIPT | F_NUMKEYS, c_eval},
    {"evalsha", -3, F_NOSCRIPT | F_NUMKEYS, c_evalsha},
    {"script", -2, F_NOSCRIPT, c_script},
    {"subscribe", -2, F_NOSCRIPT | F_SUBOK | F_NOMULTI, c_subscribe},
    {"unsubscribe", -1, F_NOSCRIPT | F_SUBOK | F_NOMULTI, c_unsubscribe},
    {"ssubscribe", -2, F_NOSCRIPT | F_SUBOK | F_NOMULTI | F_CHANS, c_ssubscribe},
    {"sunsubscribe", -1, F_NOSCRIPT | F_SUBOK | F_NOMULTI, c_sunsubscribe},
    {"spublish", 3, F_CHANS, c_spublish},
    {"asking", 1, F_NOSCRIPT, c_asking},
    {"cluster", -2, F_NOSCRIPT, c_cluster},
    {"multi", 1, F_NOSCRIPT | F_NOMULTI, c_multi},
    {"exec", 1, F_NOSCRIPT | F_NOMULTI, c_exec},
    {"discard", 1, F_NOSCRIPT | F_NOMULTI, c_discard},
};

/* Runs command c (entry t) for session s (NULL in a script), first
 * keeping the keys it may change when m records for replicas. */
static void run(model_t *m, model_session_t *s, const mcmd_t *t, const resp_cmd_t *c, sbuf_t *o);

/* The table entry for c's command, or NULL. */
static const mcmd_t *lookup(const resp_cmd_t *c) {
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strlen(cmds[i].name) == c->len[0] && strncasecmp(cmds[i].name, c->argv[0], c->len[0]) == 0) return &cmds[i];
    return NULL;
}

/* 1 when c has as many arguments as its entry t wants. */
static int arity_ok(const mcmd_t *t, const resp_cmd_t *c) {
    return t->arity > 0 ? c->argc == t->arity : c->argc >= -t->arity;
}

/* Checks c against its entry t (NULL: unknown): replies the error and
 * returns -1, or returns 0. */
static int check(const mcmd_t *t, const resp_cmd_t *c, sbuf_t *o) {
    char buf[200];
    if (!t) {
        snprintf(buf, sizeof buf, "ERR unknown command '%.60s', with args beginning with: ", c->argv[0]);
        resp_error(o, buf);
        return -1;
    }
    if (!arity_ok(t, c)) {
        snprintf(buf, sizeof buf, "ERR wrong number of arguments for '%s' command", t->name);
        resp_error(o, buf);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ MULTI/EXEC */

static void c_multi(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)c;
    if (s->in_multi) {
        resp_error(o, "ERR MULTI calls can not be nested");
        return;
    }
    s->in_multi = 1;
    s->dirty = 0;
    resp_status(o, "OK");
}

/* Ends s's transaction, freeing its queue. */
static void multi_end(model_session_t *s) {
    for (size_t i = 0; i < s->nq; i++) free(s->queued[i]);
    s->nq = 0;
    s->in_multi = s->dirty = 0;
}

/* DISCARD: ends the transaction unrun. */
static void c_discard(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)c;
    if (!s->in_multi) {
        resp_error(o, "ERR DISCARD without MULTI");
        return;
    }
    multi_end(s);
    resp_status(o, "OK");
}

/* EXEC: runs the queued commands at once, their replies in one array
 * (EXECABORT when one was refused while queueing). */
static void c_exec(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)c;
    if (!s->in_multi) {
        resp_error(o, "ERR EXEC without MULTI");
        return;
    }
    if (s->dirty) {
        multi_end(s);
        {
            resp_error(o, "EXECABORT Transaction discarded because of previous errors.");
            return;
        }
    }
    if (m->route &&
        routed(m, s, (const resp_cmd_t *const *)s->queued, s->nq, o)) { /* (the slot moved since they were queued) */
        multi_end(s);
        return;
    }
    resp_array(o, (long long)s->nq);
    for (size_t i = 0; i < s->nq; i++) run(m, s, lookup(s->queued[i]), s->queued[i], o);
    multi_end(s);
}

/* Queues c in s's transaction (checked first: a bad one dirties it). */
static void enqueue(model_session_t *s, const mcmd_t *t, const resp_cmd_t *c, sbuf_t *o) {
    if (check(t, c, o)) {
        s->dirty = 1;
        return;
    }
    if (s->nq == s->capq) {
        s->capq = s->capq ? s->capq * 2 : 8;
        if (!(s->queued = realloc(s->queued, s->capq * sizeof *s->queued))) abort();
    }
    s->queued[s->nq++] = resp_cmd_make(c->argc, (const char *const *)c->argv, c->len);
    resp_status(o, "QUEUED");
}

/* ---------------------------------------------------------- cluster mode */

static mkey_t *key_clone(const mkey_t *k);
static void touch(model_t *m, const char *name, size_t n);

/* ASKING: the next command may be served from a slot being imported. */
static void c_asking(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)c;
    if (!m->route) {
        resp_error(o, "ERR This instance has cluster support disabled");
        return;
    }
    if (s) s->asking = 1;
    resp_status(o, "OK");
}

/* CLUSTER SLOTS (the only subcommand the library sends). */
static void c_cluster(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    if (!m->route) {
        resp_error(o, "ERR This instance has cluster support disabled");
        return;
    }
    if (c->argc == 2 && is(c, 1, "SLOTS")) {
        m->slots(m->cluster_arg, o);
        return;
    }
    resp_error(o, "ERR unknown subcommand or wrong number of arguments for 'cluster' command");
}

/* CRC16-CCITT (XMODEM), as Redis Cluster hashes keys. */
static unsigned crc16(const char *p, size_t n) {
    unsigned crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (unsigned)(unsigned char)p[i] << 8;
        for (int b = 0; b < 8; b++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
        crc &= 0xffff;
    }
    return crc;
}

int model_key_slot(const char *key, size_t n) {
    const char *open = memchr(key, '{', n);
    if (open) {
        const char *close = memchr(open + 1, '}', n - (size_t)(open + 1 - key));
        if (close && close > open + 1) return (int)(crc16(open + 1, (size_t)(close - open - 1)) & 16383);
    }
    return (int)(crc16(key, n) & 16383);
}

/* The range [*lo, *hi] of c's arguments that route it (entry t); 0 when
 * it has none (or a bad key count, which the command itself refuses). */
static int route_args(const mcmd_t *t, const resp_cmd_t *c, int *lo, int *hi) {
    long long nk;
    if (t->flags & F_KEY) return *lo = *hi = 1;
    if (t->flags & (F_KEYS | F_CHANS)) {
        *lo = 1;
        *hi = t->arity < 0 ? c->argc - 1 : 1;
        return 1;
    }
    if (!(t->flags & F_NUMKEYS) || parse_ll(c->argv[2], c->len[2], &nk) || nk < 1 || nk > c->argc - 3) return 0;
    *lo = 3;
    *hi = 2 + (int)nk;
    return 1;
}

/* Adds c's keys to the slot (*slot, -1 before the first; -2 once mixed)
 * and counts them and those m holds. */
static void route_count(model_t *m, const resp_cmd_t *c, int *slot, int *nkeys, int *present) {
    const mcmd_t *t = lookup(c);
    int lo, hi;
    if (!t || !route_args(t, c, &lo, &hi)) return;
    for (int i = lo; i <= hi; i++) {
        int k = model_key_slot(c->argv[i], c->len[i]);
        *slot = *slot == -1 || *slot == k ? k : -2;
        (*nkeys)++;
        *present += (t->flags & F_CHANS) || key_find(m, c->argv[i], c->len[i]) != NULL;
    }
}

/* Cluster mode: where the n commands cmds (one, EXEC's queue, or a
 * script's call) go: NULL to run here, else the redirect or error. */
static const char *route_error(model_t *m, int asking, const resp_cmd_t *const *cmds, size_t n) {
    int slot = -1, nkeys = 0, present = 0;
    for (size_t i = 0; i < n; i++) route_count(m, cmds[i], &slot, &nkeys, &present);
    if (slot == -1) return NULL;
    if (slot == -2) return "CROSSSLOT Keys in request don't hash to the same slot";
    return m->route(m->cluster_arg, slot, nkeys, present, asking);
}

/* Routes the commands for session s (see route_error): returns 0 when
 * they run here, else 1 after replying why not. */
static int routed(model_t *m, const model_session_t *s, const resp_cmd_t *const *cmds, size_t n, sbuf_t *o) {
    const char *err = route_error(m, s && s->asking, cmds, n);
    if (err) resp_error(o, err);
    return err != NULL;
}

void model_set_cluster(model_t *m, model_route_fn route, model_slots_fn slots, void *arg) {
    m->route = route;
    m->slots = slots;
    m->cluster_arg = arg;
}

/* The first live key of slot in m, or NULL. */
static mkey_t *slot_key(model_t *m, int slot) {
    for (size_t i = 0; i < m->nb; i++)
        for (mkey_t *k = m->b[i], *nx; k; k = nx) {
            nx = k->next;
            if (model_key_slot(k->name, k->nlen) != slot) continue;
            if (key_find(m, k->name, k->nlen)) return k;
        }
    return NULL;
}

int model_migrate_one(model_t *from, model_t *to, int slot, uint64_t from_now_us, uint64_t to_now_us) {
    from->now_us = from_now_us, from->now_ms = (int64_t)(from_now_us / 1000u);
    to->now_us = to_now_us, to->now_ms = (int64_t)(to_now_us / 1000u);
    mkey_t *k = slot_key(from, slot);
    if (!k) return 0;
    if (to->recording) touch(to, k->name, k->nlen);
    key_delete(to, k->name, k->nlen);
    mkey_t *copy = key_clone(k);
    key_link(to, copy);
    if (k->expire_ms >= 0) copy->expire_ms = to->now_ms + (k->expire_ms - from->now_ms); /* (RESTORE's relative TTL) */
    if (from->recording) touch(from, k->name, k->nlen);
    key_delete(from, k->name, k->nlen);
    return 1;
}

void model_slot_gone(model_t *m, int slot) {
    for (model_session_t *t = m->sessions; t; t = t->next)
        for (size_t i = 0; i < t->nch[1];) {
            if (model_key_slot(sb_data(&t->chans[1][i]), sb_pending(&t->chans[1][i])) != slot) {
                i++;
                continue;
            }
            sbuf_t o = {0};
            unsub_one(t, 1, i, &o);
            if (m->push) m->push(m->push_arg, t, sb_data(&o), sb_pending(&o));
            sb_free(&o);
        }
}

/* ----------------------------------------------------------- replication */

/* A new empty batch of changes (one reference). */
static model_fx_t *fx_new(void) {
    model_fx_t *fx = calloc(1, sizeof *fx);
    if (!fx) abort();
    fx->refs = 1;
    return fx;
}

/* Copies buffer b's bytes onto the end of d. */
static void sb_copy(sbuf_t *d, const sbuf_t *b) {
    if (sb_pending(b)) sb_add(d, sb_data(b), sb_pending(b));
}

/* 1 when buffers a and b hold the same bytes. */
static int sb_same(const sbuf_t *a, const sbuf_t *b) {
    size_t n = sb_pending(a);
    return n == sb_pending(b) && (n == 0 || memcmp(sb_data(a), sb_data(b), n) == 0);
}

/* A copy of key k (name, value, expiry), linked nowhere. */
static mkey_t *key_clone(const mkey_t *k) {
    mkey_t *c = calloc(1, sizeof *c);
    if (!c || !(c->name = malloc(k->nlen + 1))) abort();
    memcpy(c->name, k->name, k->nlen + 1);
    c->nlen = k->nlen;
    c->type = k->type;
    c->expire_ms = k->expire_ms;
    sb_copy(&c->str, &k->str);
    if (k->nf) {
        c->nf = c->capf = k->nf;
        if (!(c->f = calloc(k->nf, sizeof *c->f)) || !(c->v = calloc(k->nf, sizeof *c->v))) abort();
        for (size_t i = 0; i < k->nf; i++) sb_copy(&c->f[i], &k->f[i]), sb_copy(&c->v[i], &k->v[i]);
    }
    return c;
}

/* 1 when keys a and b (either may be NULL: absent) are alike. */
static int key_same(const mkey_t *a, const mkey_t *b) {
    if (!a || !b) return a == b;
    if (a->type != b->type || a->expire_ms != b->expire_ms || a->nf != b->nf || !sb_same(&a->str, &b->str)) return 0;
    for (size_t i = 0; i < a->nf; i++)
        if (!sb_same(&a->f[i], &b->f[i]) || !sb_same(&a->v[i], &b->v[i])) return 0;
    return 1;
}

/* Appends key name (n bytes) to fx as k (taken; NULL: gone). */
static void fx_add(model_fx_t *fx, const char *name, size_t n, mkey_t *k) {
    if (fx->n == fx->cap) {
        fx->cap = fx->cap ? fx->cap * 2 : 4;
        fx->name = realloc(fx->name, fx->cap * sizeof *fx->name);
        fx->nlen = realloc(fx->nlen, fx->cap * sizeof *fx->nlen);
        fx->k = realloc(fx->k, fx->cap * sizeof *fx->k);
        if (!fx->name || !fx->nlen || !fx->k) abort();
    }
    if (!(fx->name[fx->n] = malloc(n + 1))) abort();
    memcpy(fx->name[fx->n], name, n);
    fx->name[fx->n][n] = '\0';
    fx->nlen[fx->n] = n;
    fx->k[fx->n++] = k;
}

/* Before a write changes key name: keeps how it was (once per command). */
static void touch(model_t *m, const char *name, size_t n) {
    if (!m->touched) m->touched = fx_new();
    for (size_t i = 0; i < m->touched->n; i++)
        if (m->touched->nlen[i] == n && memcmp(m->touched->name[i], name, n) == 0) return;
    mkey_t *k = *key_slot(m, name, n);
    fx_add(m->touched, name, n, k ? key_clone(k) : NULL);
}

static void run(model_t *m, model_session_t *s, const mcmd_t *t, const resp_cmd_t *c, sbuf_t *o) {
    if (m->recording && (t->flags & F_WRITE)) {
        if (t->flags & F_ALL) {
            for (size_t i = 0; i < m->nb; i++)
                for (mkey_t *k = m->b[i]; k; k = k->next) touch(m, k->name, k->nlen);
        } else {
            int last = t->flags & F_KEYS ? c->argc - 1 : 1;
            for (int i = 1; i <= last; i++) touch(m, c->argv[i], c->len[i]);
        }
    }
    t->fn(m, s, c, o);
}

void model_set_recording(model_t *m, int on) {
    m->recording = on;
    if (!on) model_fx_free(m->touched), m->touched = NULL;
}

model_fx_t *model_take_fx(model_t *m) {
    model_fx_t *was = m->touched, *fx = NULL;
    model_session_t *writer = m->writer;
    m->touched = NULL;
    m->writer = NULL;
    for (size_t i = 0; was && i < was->n; i++) {
        mkey_t *now = *key_slot(m, was->name[i], was->nlen[i]);
        if (key_same(was->k[i], now)) continue;
        if (!fx) fx = fx_new();
        fx_add(fx, was->name[i], was->nlen[i], now ? key_clone(now) : NULL);
    }
    model_fx_free(was);
    if (!fx) return NULL;
    fx->off = ++m->repl_off;
    if (writer) writer->woff = fx->off;
    return fx;
}

model_fx_t *model_full_fx(model_t *m) {
    model_fx_t *fx = fx_new();
    fx->flush = 1;
    fx->off = m->repl_off;
    for (size_t i = 0; i < m->nb; i++)
        for (mkey_t *k = m->b[i]; k; k = k->next) fx_add(fx, k->name, k->nlen, key_clone(k));
    return fx;
}

void model_apply_fx(model_t *m, const model_fx_t *fx) {
    if (fx->flush) flush_keys(m);
    for (size_t i = 0; i < fx->n; i++) {
        key_delete(m, fx->name[i], fx->nlen[i]);
        if (fx->k[i]) key_link(m, key_clone(fx->k[i]));
    }
    m->repl_off = fx->off;
}

model_fx_t *model_fx_ref(model_fx_t *fx) {
    fx->refs++;
    return fx;
}

void model_fx_free(model_fx_t *fx) {
    if (!fx || --fx->refs > 0) return;
    for (size_t i = 0; i < fx->n; i++) {
        free(fx->name[i]);
        if (fx->k[i]) key_free(fx->k[i]);
    }
    free(fx->name);
    free(fx->nlen);
    free(fx->k);
    free(fx);
}

uint64_t model_fx_offset(const model_fx_t *fx) {
    return fx->off;
}

size_t model_fx_keys(const model_fx_t *fx) {
    return fx->n;
}

uint64_t model_repl_offset(const model_t *m) {
    return m->repl_off;
}

void model_set_wait(model_t *m, model_wait_fn fn, void *arg) {
    m->wait = fn;
    m->wait_arg = arg;
}

uint64_t model_session_woff(const model_session_t *s) {
    return s->woff;
}

/* ------------------------------------------------------------ execution */

/* In a subscribed session only the pub/sub commands run: refuses t
 * (replying why) and returns 1, or returns 0. */
static int subscribed_refusal(const model_session_t *s, const mcmd_t *t, sbuf_t *o) {
    if (!(s->nch[0] + s->nch[1]) || (t->flags & F_SUBOK)) return 0;
    char buf[200];
    snprintf(buf, sizeof buf,
             "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
             "in this context",
             t->name);
    resp_error(o, buf);
    return 1;
}

void model_exec(model_t *m, model_session_t *s, const resp_cmd_t *c, uint64_t now_us, sbuf_t *o) {
    m->now_us = now_us;
    m->now_ms = (int64_t)(now_us / 1000u);
    const mcmd_t *t = lookup(c);
    if (s->in_multi && !(t && (t->flags & F_NOMULTI))) {
        if (m->route && t && arity_ok(t, c) && routed(m, s, &c, 1, o))
            s->dirty = 1; /* (a redirected command aborts its transaction) */
        else
            enqueue(s, t, c, o);
        return;
    }
    if (!check(t, c, o) && !subscribed_refusal(s, t, o) && !(m->route && routed(m, s, &c, 1, o))) {
        m->writer = s;
        run(m, s, t, c, o);
    }
    if (t && t->fn != c_asking && !s->in_multi) s->asking = 0; /* (ASKING lasts one command, or a transaction) */
}

/* A command from a script: refused when scripts may not run it. */
void model_script_call(model_t *m, const resp_cmd_t *c, sbuf_t *o) {
    const mcmd_t *t = lookup(c);
    if (t && (t->flags & F_NOSCRIPT)) {
        resp_error(o, "ERR This Redis command is not allowed from script");
        return;
    }
    if (check(t, c, o)) return;
    /* a script's own commands are routed too (with its caller's ASKING), as Redis 7.0 does */
    if (m->route && route_error(m, m->writer && m->writer->asking, &c, 1)) {
        resp_error(o, "ERR Script attempted to access a non local key in a cluster node");
        return;
    }
    run(m, NULL, t, c, o);
}

/* ---------------------------------------------------------- life cycle */

model_t *model_new(uint64_t start_us) {
    model_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->nb = 64;
    if (!(m->b = calloc(m->nb, sizeof *m->b))) {
        free(m);
        return NULL;
    }
    m->start_us = m->now_us = start_us;
    m->now_ms = (int64_t)(start_us / 1000u);
    return m;
}

/* Frees m, its keys and its sessions. */
void model_free(model_t *m) {
    if (!m) return;
    while (m->sessions) model_session_free(m->sessions);
    flush_keys(m);
    free(m->b);
    free(m->scripts.sha);
    model_fx_free(m->touched);
    free(m);
}

/* Sets where PUBLISH delivers. */
void model_set_push(model_t *m, model_push_fn fn, void *arg) {
    m->push = fn;
    m->push_arg = arg;
}

/* Empties m (keys, scripts) and restarts its uptime at now_us. */
void model_restart(model_t *m, uint64_t now_us) {
    flush_keys(m);
    mlua_forget(m);
    m->start_us = now_us;
}

/* Keeps m's keys, forgets its scripts, restarts its uptime at now_us. */
void model_reboot(model_t *m, uint64_t now_us) {
    mlua_forget(m);
    m->start_us = now_us;
}

/* How many keys m holds (expired ones not yet reclaimed included). */
size_t model_dbsize(const model_t *m) {
    return m->nkeys;
}

/* m's loaded scripts, for mlua.c. */
model_scripts_t *model_scripts(model_t *m) {
    return &m->scripts;
}

/* A new connection on m (owner is the caller's); freed by
 * model_session_free or with m. */
model_session_t *model_session_new(model_t *m, void *owner) {
    model_session_t *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->m = m;
    s->owner = owner;
    s->next = m->sessions;
    if (m->sessions) m->sessions->prev = s;
    m->sessions = s;
    return s;
}

/* Ends session s: its transaction and subscriptions go. NULL-safe. */
void model_session_free(model_session_t *s) {
    if (!s) return;
    multi_end(s);
    free(s->queued);
    for (int k = 0; k < 2; k++) {
        while (s->nch[k]) chan_drop(s, k, s->nch[k] - 1);
        free(s->chans[k]);
    }
    if (s->prev)
        s->prev->next = s->next;
    else
        s->m->sessions = s->next;
    if (s->next) s->next->prev = s->prev;
    free(s);
}

/* The owner s was made with. */
void *model_session_owner(const model_session_t *s) {
    return s->owner;
}
