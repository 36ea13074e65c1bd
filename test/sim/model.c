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
    resp_cmd_t **queued;
    size_t nq, capq;
    sbuf_t *chans; /* channels subscribed */
    size_t nch, capch;
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

/* A new key name of type t with no expiry (the caller made sure it was
 * absent). */
static mkey_t *key_add(model_t *m, const char *name, size_t n, int t) {
    if (m->nkeys >= m->nb) grow(m);
    mkey_t *k = calloc(1, sizeof *k);
    if (!k || !(k->name = malloc(n + 1))) abort();
    memcpy(k->name, name, n);
    k->name[n] = '\0';
    k->nlen = n;
    k->type = t;
    k->expire_ms = -1;
    mkey_t **at = &m->b[hash(name, n) & (m->nb - 1)];
    k->next = *at;
    *at = k;
    m->nkeys++;
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
    if (s && s->nch) {
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

/* WAIT numreplicas timeout: a master without replicas acknowledges 0. */
static void c_wait(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m, (void)s;
    long long a, b;
    if (parse_ll(c->argv[1], c->len[1], &a) || parse_ll(c->argv[2], c->len[2], &b)) {
        resp_error(o, E_NOTINT);
        return;
    }
    if (b < 0) {
        resp_error(o, "ERR timeout is negative");
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

/* The index of channel ch (n bytes) among s's, or -1. */
static long chan_find(const model_session_t *s, const char *ch, size_t n) {
    for (size_t i = 0; i < s->nch; i++)
        if (sb_pending(&s->chans[i]) == n && memcmp(sb_data(&s->chans[i]), ch, n) == 0) return (long)i;
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

/* SUBSCRIBE ch...: one confirmation per channel. */
static void c_subscribe(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    for (int i = 1; i < c->argc; i++) {
        if (chan_find(s, c->argv[i], c->len[i]) < 0) {
            if (s->nch == s->capch) {
                s->capch = s->capch ? s->capch * 2 : 4;
                if (!(s->chans = realloc(s->chans, s->capch * sizeof *s->chans))) abort();
            }
            memset(&s->chans[s->nch], 0, sizeof s->chans[0]);
            sb_add(&s->chans[s->nch++], c->argv[i], c->len[i]);
        }
        sub_reply(o, "subscribe", c->argv[i], c->len[i], s->nch);
    }
}

/* Drops channel i of s. */
static void chan_drop(model_session_t *s, size_t i) {
    sb_free(&s->chans[i]);
    memmove(&s->chans[i], &s->chans[i + 1], (s->nch - i - 1) * sizeof *s->chans);
    s->nch--;
}

/* UNSUBSCRIBE [ch...]: every channel when none is named. */
static void c_unsubscribe(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)m;
    if (c->argc == 1) {
        if (!s->nch) sub_reply(o, "unsubscribe", NULL, 0, 0);
        while (s->nch) {
            sbuf_t ch = s->chans[0];
            s->chans[0] = (sbuf_t){0};
            chan_drop(s, 0);
            sub_reply(o, "unsubscribe", sb_data(&ch), sb_pending(&ch), s->nch);
            sb_free(&ch);
        }
        return;
    }
    for (int i = 1; i < c->argc; i++) {
        long at = chan_find(s, c->argv[i], c->len[i]);
        if (at >= 0) chan_drop(s, (size_t)at);
        sub_reply(o, "unsubscribe", c->argv[i], c->len[i], s->nch);
    }
}

/* PUBLISH ch msg: every subscribed session gets ["message", ch, msg];
 * replies how many. */
static void c_publish(model_t *m, model_session_t *s, const resp_cmd_t *c, sbuf_t *o) {
    (void)s;
    long long n = 0;
    sbuf_t msg = {0};
    resp_array(&msg, 3);
    resp_str(&msg, "message");
    resp_bulk(&msg, c->argv[1], c->len[1]);
    resp_bulk(&msg, c->argv[2], c->len[2]);
    for (model_session_t *t = m->sessions; t; t = t->next) {
        if (chan_find(t, c->argv[1], c->len[1]) < 0) continue;
        n++;
        if (m->push) m->push(m->push_arg, t, sb_data(&msg), sb_pending(&msg));
    }
    sb_free(&msg);
    resp_int(o, n);
}

/* ------------------------------------------------------------ the table */

enum { F_NOSCRIPT = 1, F_SUBOK = 2, F_NOMULTI = 4 };

typedef struct mcmd {
    const char *name;
    int arity; /* Redis's: n exactly, -n at least n */
    int flags;
    void (*fn)(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
} mcmd_t;

static void c_multi(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
/* EXEC: runs the queued commands at once, their replies in one array
 * (EXECABORT when one was refused while queueing). */
static void c_exec(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);
/* DISCARD: ends the transaction unrun. */
static void c_discard(model_t *, model_session_t *, const resp_cmd_t *, sbuf_t *);

static const mcmd_t cmds[] = {
    {"get", 2, 0, c_get},
    {"set", -3, 0, c_set},
    {"del", -2, 0, c_del},
    {"exists", -2, 0, c_exists},
    {"pexpire", -3, 0, c_pexpire},
    {"pttl", 2, 0, c_pttl},
    {"pexpiretime", 2, 0, c_pexpiretime},
    {"type", 2, 0, c_type},
    {"mget", -2, 0, c_mget},
    {"incrby", 3, 0, c_incrby},
    {"hset", -4, 0, c_hset},
    {"hget", 3, 0, c_hget},
    {"hdel", -3, 0, c_hdel},
    {"hlen", 2, 0, c_hlen},
    {"hgetall", 2, 0, c_hgetall},
    {"hexists", 3, 0, c_hexists},
    {"time", 1, 0, c_time},
    {"ping", -1, F_SUBOK, c_ping},
    {"echo", 2, 0, c_echo},
    {"publish", 3, 0, c_publish},
    {"info", -1, 0, c_info},
    {"wait", 3, F_NOSCRIPT, c_wait},
    {"role", 1, 0, c_role},
    {"select", 2, F_NOSCRIPT, c_select},
    {"auth", -2, F_NOSCRIPT, c_auth},
    {"flushall", -1, 0, c_flushall},
    {"dbsize", 1, 0, c_dbsize},
    {"eval", -3, F_NOSCRIPT, c_eval},
    {"evalsha", -3, F_NOSCRIPT, c_evalsha},
    {"script", -2, F_NOSCRIPT, c_script},
    {"subscribe", -2, F_NOSCRIPT | F_SUBOK | F_NOMULTI, c_subscribe},
    {"unsubscribe", -1, F_NOSCRIPT | F_SUBOK | F_NOMULTI, c_unsubscribe},
    {"multi", 1, F_NOSCRIPT | F_NOMULTI, c_multi},
    {"exec", 1, F_NOSCRIPT | F_NOMULTI, c_exec},
    {"discard", 1, F_NOSCRIPT | F_NOMULTI, c_discard},
};

/* The table entry for c's command, or NULL. */
static const mcmd_t *lookup(const resp_cmd_t *c) {
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strlen(cmds[i].name) == c->len[0] && strncasecmp(cmds[i].name, c->argv[0], c->len[0]) == 0) return &cmds[i];
    return NULL;
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
    if ((t->arity > 0 && c->argc != t->arity) || (t->arity < 0 && c->argc < -t->arity)) {
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
    resp_array(o, (long long)s->nq);
    for (size_t i = 0; i < s->nq; i++) lookup(s->queued[i])->fn(m, s, s->queued[i], o);
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

/* ------------------------------------------------------------ execution */

void model_exec(model_t *m, model_session_t *s, const resp_cmd_t *c, uint64_t now_us, sbuf_t *o) {
    m->now_us = now_us;
    m->now_ms = (int64_t)(now_us / 1000u);
    const mcmd_t *t = lookup(c);
    if (s->in_multi && !(t && (t->flags & F_NOMULTI))) {
        enqueue(s, t, c, o);
        return;
    }
    if (check(t, c, o)) return;
    if (s->nch && !(t->flags & F_SUBOK)) {
        char buf[200];
        snprintf(buf, sizeof buf,
                 "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
                 "in this context",
                 t->name);
        {
            resp_error(o, buf);
            return;
        }
    }
    t->fn(m, s, c, o);
}

/* A command from a script: refused when scripts may not run it. */
void model_script_call(model_t *m, const resp_cmd_t *c, sbuf_t *o) {
    const mcmd_t *t = lookup(c);
    if (t && (t->flags & F_NOSCRIPT)) {
        resp_error(o, "ERR This Redis command is not allowed from script");
        return;
    }
    if (check(t, c, o)) return;
    t->fn(m, NULL, c, o);
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
    while (s->nch) chan_drop(s, s->nch - 1);
    free(s->chans);
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
