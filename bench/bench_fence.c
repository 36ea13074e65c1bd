/* bench_fence.c -- what a fencing token costs next to a plain lock,
 * through the public API (include/redlock.h) with the library's default
 * options, and a floor of raw round trips over hiredis.
 *
 *   bench_fence -u URI,URI,... [-r ROUNDS] [-b CYCLES] [-t THREADS]
 *               [--tr ROUNDS] [-d SECONDS] [--warmup CYCLES] [--ttl MS]
 *               [--lua DIR] [--no-floor] [--only plain|fenced]
 *   bench_fence --version
 *
 * Two handles on the same nodes, one with opt.fencing = 1, used as a new
 * user would. Every cycle is acquire (one attempt, wait_ms 0) + release of
 * a resource of the variant's own.
 *
 * Serial (one caller): ROUNDS rounds (default 30), each a block of CYCLES
 * cycles (default 300) of every variant, the order rotated by one each
 * round, so that the noise of a shared machine falls on all alike:
 *   plain    redlock_acquire_ex + redlock_release on the plain handle
 *   fenced   the same on the fencing handle (two rounds per acquire)
 *   floor    commands sent by hand over non-blocking hiredis contexts
 *            in one poll() loop, each round ending at the first quorum
 *            of yes, with no library and no checks (the release is
 *            release.lua each time; scripts are read from --lua DIR):
 *            1 RT: SET NX PX | EVALSHA of `return 1` | the old fenced
 *            attempt's script (acquire_fenced.lua at 5fc8f4a) |
 *            MULTI SET NX PX, GET, TIME EXEC (the fenced attempt now);
 *            2 RT: SET NX PX then a plain SET (two plain round trips) |
 *            the old script then fence_set.lua | MULTI .. EXEC then
 *            fence_set.lua (the fenced acquire before its write-back
 *            became a transaction) | MULTI .. EXEC then MULTI, GET,
 *            INCRBY by each granting node's own difference, EXEC, sent
 *            only to the nodes that granted (a fenced acquire's two
 *            round trips now, and nothing more) | MULTI .. EXEC then
 *            MULTI, ZADD GT, GET, EXEC (a write-back not taken).
 * Acquire p50 / p99 (the acquire alone) and cycle p50 / p99 (acquire +
 * release) over all rounds; the ratio of the acquire p50 to plain's (for
 * the floor rows: to the floor's SET NX PX) and its range over the rounds
 * (each round's block p50s).
 *
 * Throughput: THREADS threads (default 32) share each handle, each thread
 * cycling on a resource of its own; --tr rounds (default 10) of a block of
 * SECONDS (default 1) per handle, plain and fenced alternating which goes
 * first. Cycles per second over all blocks, the fenced / plain ratio and
 * its range over the rounds, and the acquires refused (counted, not fatal:
 * on a loaded machine a node may miss op_timeout_ms; the thread pauses 1 ms
 * and goes on: retried at once, the refusals fed on themselves and whole
 * blocks failed).
 * --only plain|fenced: throughput blocks of that kind alone (for perf).
 *
 * Prints markdown tables on stdout (bench/fence.sh judges the targets of
 * bench/targets.tsv from them); exits 1 when a serial acquire failed. BENCH_FENCE_LOG=1: the library's warnings
 * on stderr. Diagnostics go to stderr; tokens are never printed. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <redlock.h>

#include "common.h"
#include "handle.h"

#define FLOOR_TIMEOUT_MS 2000

static struct {
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes, quorum;
    unsigned rounds, block, warmup, threads, trounds, floor;
    double secs;
    unsigned ttl_ms;
    const char *lua_dir;
    int only; /* --only plain|fenced: throughput blocks of that kind alone (for a profiler), -1: both */
} cfg = {.only = -1,
         .rounds = 30,
         .block = 300,
         .warmup = 300,
         .threads = 32,
         .trounds = 10,
         .floor = 1,
         .secs = 1.0,
         .ttl_ms = 10000,
         .lua_dir = BENCH_LUA_DIR};

/* ------------------------------------------------------------- the floor */

typedef struct fnode {
    redisContext *c;
    unsigned stale; /* replies owed by earlier rounds, dropped on arrival */
    unsigned got;   /* replies of the current round read so far */
    int answered, want_write;
    int vote;                /* in the last round: 1 yes, 0 no, -1 failed or not asked */
    unsigned long long seen; /* the counter its last grant of a MULTI attempt read (0: none) */
} fnode_t;

static fnode_t fnodes[BENCH_MAX_NODES];
static char sha_old[41], sha_nop[41], sha_set[41], sha_rel[41];
static char floor_max[48]; /* the highest counter (or node clock) of the last round one */

/* The fenced attempt's script before it became a transaction
 * (lua/acquire_fenced.lua at 5fc8f4a), for the floor row that shows what
 * it cost. */
static const char OLD_ACQUIRE_FENCED[] = "if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
                                         "    return false\n"
                                         "end\n"
                                         "local t = redis.call('TIME')\n"
                                         "local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
                                         "local c = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
                                         "if c < floor then\n"
                                         "    c = floor\n"
                                         "end\n"
                                         "return string.format('%.0f', c)\n";

/* How a node's reply is read: SET NX (OK / nil), a script's 1 / 0, a
 * string (the old script's counter, SCRIPT LOAD's sha1), EXEC's array
 * {SET, GET, TIME} behind MULTI and three QUEUED (5 replies), or EXEC's
 * array {ZADD, GET of the lock} behind MULTI and two QUEUED (4 replies:
 * yes when the lock still holds floor_tok), or EXEC's array {GET of the
 * lock, INCRBY} the same way. */
enum { KIND_SET, KIND_INT, KIND_STR, KIND_MULTI, KIND_ZADD, KIND_INCR };
static const char *floor_tok;

/* Keeps the decimal number s (len bytes) in floor_max when it is higher
 * (also the sha1 of SCRIPT LOAD: the same length on every node). */
static void keep_max(const char *s, size_t len) {
    if (len >= sizeof floor_max) return;
    size_t have = strlen(floor_max);
    if (have < len || (have == len && memcmp(floor_max, s, len) < 0)) {
        memcpy(floor_max, s, len);
        floor_max[len] = '\0';
    }
}

/* 1 yes, 0 no, -1 failed. */
static int classify(const redisReply *r, int kind) {
    if (kind == KIND_SET) {
        if (r->type == REDIS_REPLY_STATUS && r->len == 2 && !memcmp(r->str, "OK", 2)) return 1;
        return r->type == REDIS_REPLY_NIL ? 0 : -1;
    }
    if (kind == KIND_STR) {
        if (r->type == REDIS_REPLY_NIL) return 0;
        if (r->type != REDIS_REPLY_STRING) return -1;
        keep_max(r->str, r->len);
        return 1;
    }
    if (kind == KIND_MULTI) {
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) return -1;
        int v = classify(r->element[0], KIND_SET);
        if (v != 1) return v;
        if (r->element[1]->type == REDIS_REPLY_STRING) keep_max(r->element[1]->str, r->element[1]->len);
        const redisReply *t = r->element[2];
        if (t->type != REDIS_REPLY_ARRAY || t->elements != 2) return -1;
        char us[32];
        int n = snprintf(us, sizeof us, "%llu",
                         strtoull(t->element[0]->str, NULL, 10) * 1000000ull + strtoull(t->element[1]->str, NULL, 10));
        keep_max(us, (size_t)n);
        return 1;
    }
    if (kind == KIND_ZADD || kind == KIND_INCR) {
        size_t gi = kind == KIND_ZADD ? 1 : 0; /* where GET's reply is; the other is an integer */
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[1 - gi]->type != REDIS_REPLY_INTEGER)
            return -1;
        const redisReply *g = r->element[gi];
        return g->type == REDIS_REPLY_STRING && g->len == 40 && !memcmp(g->str, floor_tok, 40);
    }
    if (r->type == REDIS_REPLY_INTEGER) return r->integer == 1 ? 1 : 0;
    return -1;
}

static void fnode_fail(fnode_t *nd, const char *why) {
    if (!nd->c) return;
    fprintf(stderr, "bench_fence: floor node fd %d failed: %s\n", nd->c->fd, why);
    redisFree(nd->c);
    nd->c = NULL;
}

/* Reads what a node has for us: drops stale replies, then the per replies
 * of ours, of which the last votes. Returns 1 yes, 0 no, -1 failed, 2 not
 * all of ours yet. */
static int fnode_read(fnode_t *nd, int kind, unsigned per) {
    if (redisBufferRead(nd->c) != REDIS_OK) {
        fnode_fail(nd, nd->c->errstr);
        return -1;
    }
    for (;;) {
        void *rep = NULL;
        if (redisGetReply(nd->c, &rep) != REDIS_OK) {
            fnode_fail(nd, nd->c->errstr);
            return -1;
        }
        if (!rep) return 2;
        if (nd->stale) {
            nd->stale--;
            freeReplyObject(rep);
            continue;
        }
        int last = ++nd->got == per, v = last ? classify(rep, kind) : 0;
        if (last && kind == KIND_MULTI) { /* the counter this node read, for a write-back by difference */
            const redisReply *c = v == 1 ? ((redisReply *)rep)->element[1] : NULL;
            nd->seen = c && c->type == REDIS_REPLY_STRING ? strtoull(c->str, NULL, 10) : 0;
        }
        freeReplyObject(rep);
        if (last) return v;
    }
}

/* Sends node i its encoded command cmds[i] (lens[i] bytes, per commands
 * pipelined; NULL: nothing, a node not asked) and waits until `need` said
 * yes (or that became impossible). Returns the yes count. */
static size_t fan_out_each(const char *const *cmds, const size_t *lens, int kind, size_t need, unsigned per) {
    size_t yes = 0, pending = 0;
    for (size_t i = 0; i < cfg.n_nodes; i++) {
        fnode_t *nd = &fnodes[i];
        nd->answered = !cmds[i]; /* (one not asked owes nothing) */
        nd->got = 0;
        nd->vote = -1;
        if (!nd->c || !cmds[i]) continue;
        int done = 0;
        if (redisAppendFormattedCommand(nd->c, cmds[i], lens[i]) != REDIS_OK ||
            redisBufferWrite(nd->c, &done) != REDIS_OK) {
            fnode_fail(nd, nd->c->errstr);
            continue;
        }
        nd->want_write = !done;
        pending++;
    }
    struct pollfd pfd[BENCH_MAX_NODES];
    size_t map[BENCH_MAX_NODES];
    uint64_t give_up = bench_now_ns() + (uint64_t)FLOOR_TIMEOUT_MS * 1000000u;
    while (yes < need && yes + pending >= need) {
        nfds_t k = 0;
        for (size_t i = 0; i < cfg.n_nodes; i++) {
            fnode_t *nd = &fnodes[i];
            if (!nd->c || nd->answered) continue;
            pfd[k] = (struct pollfd){.fd = nd->c->fd, .events = (short)(POLLIN | (nd->want_write ? POLLOUT : 0))};
            map[k++] = i;
        }
        int ready = poll(pfd, k, FLOOR_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0 || bench_now_ns() > give_up) break;
        for (nfds_t j = 0; j < k; j++) {
            fnode_t *nd = &fnodes[map[j]];
            if (!pfd[j].revents || !nd->c) continue;
            if ((pfd[j].revents & POLLOUT) && nd->want_write) {
                int done = 0;
                if (redisBufferWrite(nd->c, &done) != REDIS_OK) {
                    fnode_fail(nd, nd->c->errstr);
                    pending--;
                    continue;
                }
                nd->want_write = !done;
            }
            if (!(pfd[j].revents & (POLLIN | POLLERR | POLLHUP))) continue;
            int v = fnode_read(nd, kind, per);
            if (v == 2) continue;
            nd->answered = 1;
            nd->vote = v;
            pending--;
            if (v == 1) yes++;
        }
    }
    for (size_t i = 0; i < cfg.n_nodes; i++) /* what the slower nodes still owe is dropped when it comes */
        if (fnodes[i].c && !fnodes[i].answered) fnodes[i].stale += per - fnodes[i].got;
    return yes;
}

/* fan_out_each with the same command for every node. */
static size_t fan_out_n(const char *cmd, size_t len, int kind, size_t need, unsigned per) {
    const char *cmds[BENCH_MAX_NODES];
    size_t lens[BENCH_MAX_NODES];
    for (size_t i = 0; i < cfg.n_nodes; i++) {
        cmds[i] = cmd;
        lens[i] = len;
    }
    return fan_out_each(cmds, lens, kind, need, per);
}

static size_t fan_out(const char *cmd, size_t len, int kind, size_t need) {
    return fan_out_n(cmd, len, kind, need, 1);
}

/* Reads lua/name; exits on failure. */
static char *slurp(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", cfg.lua_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_fence: cannot read %s (see --lua DIR)\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) exit(1);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* SCRIPT LOAD of text on every node; the sha1 it answers. */
static void load_script(const char *what, const char *text, char sha[41]) {
    char *cmd = NULL;
    int len = redisFormatCommand(&cmd, "SCRIPT LOAD %s", text);
    floor_max[0] = '\0';
    if (len < 0 || fan_out(cmd, (size_t)len, KIND_STR, cfg.n_nodes) < cfg.n_nodes || strlen(floor_max) != 40) {
        fprintf(stderr, "bench_fence: SCRIPT LOAD of %s failed on some node\n", what);
        exit(1);
    }
    memcpy(sha, floor_max, 41);
    redisFreeCommand(cmd);
}

static void load_file(const char *name, char sha[41]) {
    char *text = slurp(name);
    load_script(name, text, sha);
    free(text);
}

/* Connects every node (non-blocking, 2 s each) and loads the scripts. */
static void floor_connect(void) {
    for (size_t i = 0; i < cfg.n_nodes; i++) {
        char host[256], path[512];
        int port = 0;
        if (bench_parse_uri(cfg.uris[i], host, sizeof host, &port, path, sizeof path) < 0) {
            fprintf(stderr, "bench_fence: unsupported URI '%s' for the floor (try --no-floor)\n", cfg.uris[i]);
            exit(2);
        }
        redisContext *c = path[0] ? redisConnectUnixNonBlock(path) : redisConnectNonBlock(host, port);
        struct pollfd p = {.fd = c ? c->fd : -1, .events = POLLOUT};
        int err = 0;
        socklen_t elen = sizeof err;
        if (!c || c->err || poll(&p, 1, 2000) != 1 || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
            fprintf(stderr, "bench_fence: connect %s failed\n", cfg.uris[i]);
            exit(1);
        }
        if (!path[0]) {
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        fnodes[i].c = c;
    }
    load_script("the old acquire_fenced.lua", OLD_ACQUIRE_FENCED, sha_old);
    load_script("return 1", "return 1", sha_nop);
    load_file("fence_set.lua", sha_set);
    load_file("release.lua", sha_rel);
}

/* ---------------------------------------------------------- the variants */

typedef enum kind { V_PLAIN, V_FENCED, V_FLOOR } kind_t;
enum { ONE_SET, ONE_NOP, ONE_OLD, ONE_MULTI };             /* a floor's first round */
enum { TWO_NONE, TWO_SET, TWO_FENCE, TWO_INCR, TWO_ZADD }; /* and its second */

typedef struct variant {
    const char *name;
    kind_t kind;
    int one, two; /* V_FLOOR: its rounds */
    char resource[96];
    bench_samples_t acq, cyc;
    double *round_p50; /* each round's block p50 of the acquire, µs */
    uint64_t errors;
} variant_t;

static variant_t vs[] = {
    {.name = "plain (`redlock_acquire_ex` + `redlock_release`)", .kind = V_PLAIN},
    {.name = "fenced (`opt.fencing = 1`, the same calls)", .kind = V_FENCED},
    {.name = "floor: 1 RT `SET NX PX`", .kind = V_FLOOR, .one = ONE_SET},
    {.name = "floor: 1 RT `EVALSHA` of `return 1`", .kind = V_FLOOR, .one = ONE_NOP},
    {.name = "floor: 1 RT the old `acquire_fenced.lua`", .kind = V_FLOOR, .one = ONE_OLD},
    {.name = "floor: 1 RT `MULTI` `SET NX PX` `GET` `TIME` `EXEC`", .kind = V_FLOOR, .one = ONE_MULTI},
    {.name = "floor: 2 RT `SET NX PX`, then a plain `SET` (two plain round trips)",
     .kind = V_FLOOR,
     .one = ONE_SET,
     .two = TWO_SET},
    {.name = "floor: 2 RT the old `acquire_fenced.lua`, then `fence_set.lua`",
     .kind = V_FLOOR,
     .one = ONE_OLD,
     .two = TWO_FENCE},
    {.name = "floor: 2 RT `MULTI` .. `EXEC`, then `fence_set.lua`",
     .kind = V_FLOOR,
     .one = ONE_MULTI,
     .two = TWO_FENCE},
    {.name = "floor: 2 RT `MULTI` .. `EXEC`, then `MULTI` `GET` `INCRBY` `EXEC` (the write-back now: to the "
             "granting nodes, each by its own difference)",
     .kind = V_FLOOR,
     .one = ONE_MULTI,
     .two = TWO_INCR},
    {.name = "floor: 2 RT `MULTI` .. `EXEC`, then `MULTI` `ZADD GT` `GET` `EXEC` (another script-free write-back: "
             "not done, it needs the counter as a sorted set)",
     .kind = V_FLOOR,
     .one = ONE_MULTI,
     .two = TWO_ZADD},
};
#define N_VARIANTS (sizeof vs / sizeof vs[0])
#define FLOOR_BASE 2 /* the floor rows' base: the floor's SET NX PX */

static redlock_t *h_plain, *h_fenced;
static uint64_t tok_state;

/* A token for the floor (xorshift64*, no crypto: the floor does no checks). */
static void floor_token(char tok[41]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 40; i += 16) {
        tok_state ^= tok_state >> 12, tok_state ^= tok_state << 25, tok_state ^= tok_state >> 27;
        uint64_t r = tok_state * 0x2545F4914F6CDD1DULL;
        for (int j = 0; j < 16 && i + j < 40; j++, r >>= 4) tok[i + j] = hex[r & 15];
    }
    tok[40] = '\0';
}

/* Runs one encoded round (per replies a node) to a quorum; returns 1 when
 * a quorum said yes. */
static int floor_round(int kind, unsigned per, const char *buf, size_t len) {
    return fan_out_n(buf, len, kind, cfg.quorum, per) >= cfg.quorum;
}

/* Writes MULTI, the two encoded commands a and b (la, lb bytes), EXEC
 * into buf (cap bytes); returns the length. Exits when it does not fit. */
static int multi_of(char *buf, size_t cap, const char *a, int la, const char *b, int lb) {
    static const char m[] = "*1\r\n$5\r\nMULTI\r\n", e[] = "*1\r\n$4\r\nEXEC\r\n";
    int len = snprintf(buf, cap, "%s%.*s%.*s%s", m, la, a, lb, b, e);
    if (len < 0 || (size_t)len >= cap) exit(1);
    return len;
}

/* The write-back now (fence.c): to each node that granted the last round
 * one, MULTI, GET of the lock, INCRBY of its counter by the token less
 * what that node read, EXEC; no command to the others. 1 when a quorum
 * still held the lock. */
static int floor_incr(const variant_t *v, const char *tok, const char *fkey) {
    static char bufs[BENCH_MAX_NODES][512];
    const char *cmds[BENCH_MAX_NODES];
    size_t lens[BENCH_MAX_NODES];
    unsigned long long t = strtoull(floor_max, NULL, 10) + 1;
    for (size_t i = 0; i < cfg.n_nodes; i++) {
        cmds[i] = NULL;
        if (fnodes[i].vote != 1) continue;
        char *get = NULL, *incr = NULL;
        int lg = redisFormatCommand(&get, "GET %s", v->resource);
        int li = redisFormatCommand(&incr, "INCRBY %s %llu", fkey, t - fnodes[i].seen);
        lens[i] = (size_t)multi_of(bufs[i], sizeof bufs[i], get, lg, incr, li);
        cmds[i] = bufs[i];
        redisFreeCommand(get);
        redisFreeCommand(incr);
    }
    floor_tok = tok;
    return fan_out_each(cmds, lens, KIND_INCR, cfg.quorum, 4) >= cfg.quorum;
}

/* The floor's acquire of v: 1 when a quorum granted every round of it. */
static int floor_acquire(const variant_t *v, const char *tok, const char *fkey, const char *ttl) {
    char *cmd = NULL, buf[1024];
    int len = -1, ok;
    floor_max[0] = '\0';
    switch (v->one) {
    case ONE_SET: len = redisFormatCommand(&cmd, "SET %s %s NX PX %s", v->resource, tok, ttl); break;
    case ONE_NOP:
    case ONE_OLD:
        len = redisFormatCommand(&cmd, "EVALSHA %s 2 %s %s %s %s", v->one == ONE_OLD ? sha_old : sha_nop, v->resource,
                                 fkey, tok, ttl);
        break;
    default: { /* MULTI, SET NX PX, GET, TIME, EXEC in one write */
        char *set = NULL, *get = NULL;
        int ls = redisFormatCommand(&set, "SET %s %s NX PX %s", v->resource, tok, ttl);
        int lg = redisFormatCommand(&get, "GET %s", fkey);
        static const char m[] = "*1\r\n$5\r\nMULTI\r\n", t[] = "*1\r\n$4\r\nTIME\r\n", e[] = "*1\r\n$4\r\nEXEC\r\n";
        len = snprintf(buf, sizeof buf, "%s%.*s%.*s%s%s", m, ls, set, lg, get, t, e);
        redisFreeCommand(set);
        redisFreeCommand(get);
        if (len < 0 || (size_t)len >= sizeof buf) exit(1);
    }
    }
    if (v->one == ONE_MULTI)
        ok = floor_round(KIND_MULTI, 5, buf, (size_t)len);
    else
        ok = floor_round(v->one == ONE_OLD ? KIND_STR : v->one == ONE_SET ? KIND_SET : KIND_INT, 1, cmd, (size_t)len);
    redisFreeCommand(cmd);
    if (!ok || v->two == TWO_NONE) return ok;
    if (v->two == TWO_INCR) {
        ok = floor_incr(v, tok, fkey);
        cmd = NULL;
    } else if (v->two == TWO_SET) {
        len = redisFormatCommand(&cmd, "SET %s %s", fkey, tok);
        ok = floor_round(KIND_SET, 1, cmd, (size_t)len);
    } else if (v->two == TWO_ZADD) { /* set-if-greater natively, then whether the lock is still ours */
        char *z = NULL, *get = NULL, fence[32];
        snprintf(fence, sizeof fence, "%llu", strtoull(floor_max, NULL, 10) + 1);
        int lz = redisFormatCommand(&z, "ZADD %s-z GT %s c", fkey, fence);
        int lg = redisFormatCommand(&get, "GET %s", v->resource);
        len = multi_of(buf, sizeof buf, z, lz, get, lg);
        redisFreeCommand(z);
        redisFreeCommand(get);
        floor_tok = tok;
        ok = floor_round(KIND_ZADD, 4, buf, (size_t)len);
    } else {
        char fence[32];
        snprintf(fence, sizeof fence, "%llu", strtoull(floor_max, NULL, 10) + 1);
        len = redisFormatCommand(&cmd, "EVALSHA %s 2 %s %s %s %s", sha_set, v->resource, fkey, tok, fence);
        ok = floor_round(KIND_INT, 1, cmd, (size_t)len);
    }
    redisFreeCommand(cmd);
    return ok;
}

/* One acquire + release of v; records its times when record is set. */
static void cycle(variant_t *v, int record) {
    uint64_t t0 = bench_now_ns(), t1;
    if (v->kind == V_PLAIN || v->kind == V_FENCED) {
        redlock_t *rl = v->kind == V_FENCED ? h_fenced : h_plain;
        redlock_lock_t *lk = NULL;
        int rc = redlock_acquire_ex(rl, v->resource, cfg.ttl_ms, 0, &lk, NULL);
        t1 = bench_now_ns();
        if (rc != REDLOCK_OK || (v->kind == V_FENCED && redlock_lock_fence(lk) == 0)) {
            v->errors++;
            if (lk) redlock_release(rl, lk);
            return;
        }
        redlock_release(rl, lk);
    } else {
        char tok[41], fkey[128], ttl[16], *cmd = NULL;
        floor_token(tok);
        snprintf(fkey, sizeof fkey, "%s:redlock:fence", v->resource);
        snprintf(ttl, sizeof ttl, "%u", (unsigned)cfg.ttl_ms);
        int ok = floor_acquire(v, tok, fkey, ttl);
        t1 = bench_now_ns();
        int len = redisFormatCommand(&cmd, "EVALSHA %s 1 %s %s 1", sha_rel, v->resource, tok);
        fan_out(cmd, (size_t)len, KIND_INT, cfg.quorum);
        redisFreeCommand(cmd);
        if (!ok) {
            v->errors++;
            return;
        }
    }
    if (!record) return;
    bench_samples_add(&v->acq, t1 - t0);
    bench_samples_add(&v->cyc, bench_now_ns() - t0);
}

/* The p50 in µs of the last n acquire samples of v (a copy is sorted). */
static double block_p50(const variant_t *v, size_t n, bench_samples_t *scratch) {
    scratch->n = 0;
    for (size_t i = v->acq.n - n; i < v->acq.n; i++) bench_samples_add(scratch, v->acq.v[i]);
    return bench_quantile_us(scratch, 0.5);
}

/* The serial rounds: in round r every variant runs a block, starting with
 * variant r mod N. */
static void run_serial(size_t nv) {
    bench_samples_t scratch;
    bench_samples_init(&scratch, cfg.block);
    for (unsigned r = 0; r < cfg.rounds; r++) {
        for (size_t k = 0; k < nv; k++) {
            variant_t *v = &vs[(r + k) % nv];
            size_t before = v->acq.n;
            for (unsigned c = 0; c < cfg.block; c++) cycle(v, 1);
            v->round_p50[r] = v->acq.n > before ? block_p50(v, v->acq.n - before, &scratch) : 0;
        }
        fprintf(stderr, "bench_fence: serial round %u/%u done\n", r + 1, cfg.rounds);
    }
    bench_samples_free(&scratch);
}

/* ------------------------------------------------------------ throughput */

static pthread_barrier_t go, gone;
static atomic_int stop_flag, quit_flag;
static redlock_t *_Atomic t_handle; /* the handle of the block under way */
static atomic_ullong t_errors[2];   /* refused acquires in the throughput blocks: plain, fenced */

typedef struct worker {
    pthread_t th;
    unsigned idx;
    uint64_t cycles; /* this block's */
} worker_t;

static void *worker_main(void *arg) {
    worker_t *w = arg;
    char res[96];
    for (;;) {
        pthread_barrier_wait(&go);
        if (atomic_load(&quit_flag)) return NULL;
        redlock_t *rl = atomic_load(&t_handle);
        snprintf(res, sizeof res, "bench:fence:%u:t%u:%s", (unsigned)getpid(), w->idx, rl == h_fenced ? "f" : "p");
        uint64_t n = 0;
        while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
            redlock_lock_t *lk = NULL;
            int rc = redlock_acquire_ex(rl, res, cfg.ttl_ms, 0, &lk, NULL);
            if (rc != REDLOCK_OK) {
                if (atomic_fetch_add(&t_errors[rl == h_fenced], 1) < 5)
                    fprintf(stderr, "bench_fence: %s acquire: %s\n", rl == h_fenced ? "fenced" : "plain",
                            redlock_strerror(rc));
                /* a pause, not a hot loop: each refused attempt also sends every node its clean-up,
                 * and 32 threads retrying at once kept slow nodes slow (whole blocks refused) */
                nanosleep(&(struct timespec){0, 1000000}, NULL);
                continue;
            }
            redlock_release(rl, lk);
            n++;
        }
        w->cycles = n;
        pthread_barrier_wait(&gone);
    }
}

/* One block: every worker cycles on rl for secs; returns cycles per second. */
static double block(worker_t *ws, redlock_t *rl, double secs) {
    atomic_store(&t_handle, rl);
    atomic_store(&stop_flag, 0);
    pthread_barrier_wait(&go);
    uint64_t t0 = bench_now_ns();
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    atomic_store(&stop_flag, 1);
    pthread_barrier_wait(&gone);
    double el = (double)(bench_now_ns() - t0) / 1e9;
    uint64_t n = 0;
    for (unsigned i = 0; i < cfg.threads; i++) n += ws[i].cycles;
    return el > 0 ? (double)n / el : 0;
}

typedef struct thru {
    double plain_sum, fenced_sum, lo, hi;
} thru_t;

static thru_t run_threads(void) {
    thru_t t = {0};
    worker_t *ws = calloc(cfg.threads, sizeof *ws);
    if (!ws) exit(1);
    pthread_barrier_init(&go, NULL, cfg.threads + 1);
    pthread_barrier_init(&gone, NULL, cfg.threads + 1);
    for (unsigned i = 0; i < cfg.threads; i++) {
        ws[i].idx = i;
        if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i])) exit(1);
    }
    block(ws, h_plain, cfg.secs / 4), block(ws, h_fenced, cfg.secs / 4); /* warm-up: every thread's resources */
    for (unsigned r = 0; r < cfg.trounds; r++) {
        double p = 0, f = 0;
        if (cfg.only >= 0) {
            *(cfg.only ? &f : &p) = block(ws, cfg.only ? h_fenced : h_plain, cfg.secs);
            fprintf(stderr, "bench_fence: throughput round %u/%u: %s %.0f/s\n", r + 1, cfg.trounds,
                    cfg.only ? "fenced" : "plain", cfg.only ? f : p);
            continue;
        }
        if (r % 2 == 0)
            p = block(ws, h_plain, cfg.secs), f = block(ws, h_fenced, cfg.secs);
        else
            f = block(ws, h_fenced, cfg.secs), p = block(ws, h_plain, cfg.secs);
        t.plain_sum += p, t.fenced_sum += f;
        double x = p > 0 ? f / p : 0;
        if (r == 0 || x < t.lo) t.lo = x;
        if (r == 0 || x > t.hi) t.hi = x;
        fprintf(stderr, "bench_fence: throughput round %u/%u: plain %.0f/s, fenced %.0f/s (%.2fx)\n", r + 1,
                cfg.trounds, p, f, x);
    }
    atomic_store(&quit_flag, 1);
    pthread_barrier_wait(&go);
    for (unsigned i = 0; i < cfg.threads; i++) pthread_join(ws[i].th, NULL);
    pthread_barrier_destroy(&go);
    pthread_barrier_destroy(&gone);
    free(ws);
    return t;
}

/* ----------------------------------------------------------------- report */

static void round_ratio_range(const variant_t *v, const variant_t *base, double *lo, double *hi) {
    *lo = *hi = 0;
    for (unsigned r = 0; r < cfg.rounds; r++) {
        if (base->round_p50[r] <= 0 || v->round_p50[r] <= 0) continue;
        double x = v->round_p50[r] / base->round_p50[r];
        if (*lo == 0 || x < *lo) *lo = x;
        if (x > *hi) *hi = x;
    }
}

/* Prints the tables; returns 1 when some acquire failed. */
static int report(size_t nv, const thru_t *t) {
    printf("| variant | acquire p50 µs | acquire p99 µs | acquire + release p50 µs | acquire + release p99 µs "
           "| acquire p50 ÷ base | per-round range | cycle p50 ÷ base |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    int bad = 0;
    for (size_t i = 0; i < nv; i++) {
        variant_t *v = &vs[i];
        variant_t *base = v->kind == V_FLOOR ? &vs[FLOOR_BASE] : &vs[0];
        double a50 = bench_quantile_us(&v->acq, 0.5), a99 = bench_quantile_us(&v->acq, 0.99);
        double c50 = bench_quantile_us(&v->cyc, 0.5), c99 = bench_quantile_us(&v->cyc, 0.99);
        double ba = bench_quantile_us(&base->acq, 0.5), bc = bench_quantile_us(&base->cyc, 0.5), lo, hi;
        round_ratio_range(v, base, &lo, &hi);
        double ra = ba > 0 ? a50 / ba : 0;
        printf("| %s | %.0f | %.0f | %.0f | %.0f | %.2f× | %.2f–%.2f | %.2f× |\n", v->name, a50, a99, c50, c99, ra, lo,
               hi, bc > 0 ? c50 / bc : 0);
    }
    printf("\n%zu nodes; serial: %u rounds × %u cycles per variant (%zu cycles each in all), TTL %u ms; the base of "
           "the library rows is plain, of the floor rows the floor's `SET NX PX`.\n",
           cfg.n_nodes, cfg.rounds, cfg.block, vs[0].acq.n, (unsigned)cfg.ttl_ms);
    if (t) {
        double n = cfg.trounds, p = t->plain_sum / n, f = t->fenced_sum / n, x = p > 0 ? f / p : 0;
        printf("\n| %u threads, one handle each kind | acquire + release cycles/s | ÷ plain | per-round range |\n",
               cfg.threads);
        printf("|---|---:|---:|---:|\n");
        printf("| plain | %.0f | 1.00× | — |\n", p);
        printf("| fenced | %.0f | %.3f× | %.2f–%.2f |\n", f, x, t->lo, t->hi);
        printf("\nthroughput: %u rounds of a %.1f s block per kind, plain and fenced alternating which goes first; "
               "refused acquires (nodes too slow for op_timeout_ms on a loaded machine; the thread pauses 1 ms): "
               "plain %llu, fenced %llu.\n",
               cfg.trounds, cfg.secs, (unsigned long long)atomic_load(&t_errors[0]),
               (unsigned long long)atomic_load(&t_errors[1]));
    }
    for (size_t i = 0; i < nv; i++)
        if (vs[i].errors) {
            printf("ERRORS: %s: %llu failed acquires.\n", vs[i].name, (unsigned long long)vs[i].errors);
            bad++;
        }
    fflush(stdout);
    return bad;
}

/* ------------------------------------------------------------------- main */

static void log_stderr(void *arg, int level, const char *msg) {
    (void)level;
    fprintf(stderr, "bench_fence: %s handle: %s\n", (const char *)arg, msg);
}

/* A handle with the default options, fencing or not; exits if refused. */
static redlock_t *make_handle(int fencing) {
    redlock_options_t opt;
    bench_options_init(&opt, cfg.uris, cfg.n_nodes, 0);
    opt.fencing = fencing;
    if (getenv("BENCH_FENCE_LOG")) { /* the library's warnings on stderr */
        opt.log = log_stderr;
        opt.log_arg = fencing ? "fenced" : "plain";
    }
    return bench_handle_new(&opt, "bench_fence: redlock_new");
}

/* Reads the command line into cfg; exits on a bad one. */
static void parse_args(int argc, char **argv) {
    char *uri_list = NULL;
    const char *only = NULL;
    int no_floor = 0;
    const bench_opt_t opts[] = {
        {"--no-floor", .set = &no_floor}, {"--only", .str = &only},       {"-u", .list = &uri_list},
        {"-r", .uns = &cfg.rounds},       {"-b", .uns = &cfg.block},      {"-t", .uns = &cfg.threads},
        {"--tr", .uns = &cfg.trounds},    {"-d", .num = &cfg.secs},       {"--warmup", .uns = &cfg.warmup},
        {"--ttl", .uns = &cfg.ttl_ms},    {"--lua", .str = &cfg.lua_dir},
    };
    int bad = bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], bench_print_version) != 0;
    if (no_floor) cfg.floor = 0;
    if (only && strcmp(only, "plain") && strcmp(only, "fenced")) bad = 1;
    if (only) cfg.only = !strcmp(only, "fenced");
    if (uri_list) cfg.n_nodes = bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES);
    if (bad || !uri_list || !cfg.n_nodes || !cfg.rounds || !cfg.block || !cfg.ttl_ms || (cfg.trounds && !cfg.threads))
        bench_usage(argv[0],
                    "-u URI,URI,... [-r ROUNDS] [-b CYCLES] [-t THREADS] [--tr ROUNDS] [-d SECONDS]\n"
                    "          [--warmup CYCLES] [--ttl MS] [--lua DIR] [--no-floor] [--only plain|fenced]\n",
                    1);
    cfg.quorum = cfg.n_nodes / 2 + 1;
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    h_plain = make_handle(0);
    h_fenced = make_handle(1);
    tok_state = bench_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ULL;
    if (cfg.floor) floor_connect();
    size_t nv = cfg.floor ? N_VARIANTS : 2;
    unsigned pid = (unsigned)getpid();
    for (size_t i = 0; i < nv; i++) {
        variant_t *v = &vs[i];
        snprintf(v->resource, sizeof v->resource, "bench:fence:%u:%zu", pid, i);
        bench_samples_init(&v->acq, (size_t)cfg.rounds * cfg.block);
        bench_samples_init(&v->cyc, (size_t)cfg.rounds * cfg.block);
        v->round_p50 = calloc(cfg.rounds, sizeof *v->round_p50);
        if (!v->round_p50) exit(1);
        for (unsigned c = 0; c < cfg.warmup; c++) cycle(v, 0); /* connections, scripts, buffers */
        v->errors = 0;
    }
    run_serial(nv);
    thru_t t = {0};
    if (cfg.trounds) t = run_threads();
    int bad = report(nv, cfg.trounds ? &t : NULL);
    for (size_t i = 0; i < nv; i++) {
        bench_samples_free(&vs[i].acq);
        bench_samples_free(&vs[i].cyc);
        free(vs[i].round_p50);
    }
    for (size_t i = 0; i < cfg.n_nodes; i++)
        if (fnodes[i].c) redisFree(fnodes[i].c);
    redlock_free(h_fenced);
    redlock_free(h_plain);
    return bad ? 1 : 0;
}
