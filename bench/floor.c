/* floor.c -- the hand-written floor for libredlock's benchmarks.
 *
 * The least a Redlock client can do per lock cycle, with no library and no
 * checks: N non-blocking hiredis contexts in one poll() loop; `SET key tok NX
 * PX ttl` is formatted once, appended to every context and written at once;
 * the acquire returns as soon as a majority said OK; then the
 * compare-and-delete EVAL goes out the same way and returns at the majority.
 * Replies still owed by the slower nodes are read and dropped at the start of
 * the next round on that connection (they arrive in order).
 *
 *   floor -u URI,URI,... [-w serial|cpu] [-n CYCLES] [-d SECONDS]
 *         [--warmup CYCLES] [--ttl MS] [--impl NAME] [--wait-replicas N]
 *
 * --wait-replicas N: each SET is followed in the same write by `WAIT N T`
 * (T: the round's timeout), and a node's yes counts once WAIT reports at
 * least N replicas: the least a client that counts votes after
 * replication can do.
 *
 * serial: one caller, distinct keys; per-cycle latency samples of the
 *         acquire and of the whole cycle, plus CPU µs/cycle (getrusage) and
 *         heap calls per cycle (hiredis's own, counted by allocs.c).
 * cpu:    the same loop without any per-cycle clock reads: CPU µs/cycle only.
 *
 * The run stops after CYCLES cycles or SECONDS seconds, whichever is first.
 * One RESULT line on stdout (see common.h); diagnostics on stderr. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "allocs.h"
#include "common.h"

#define ROUND_TIMEOUT_MS 5000 /* a round that cannot reach a majority gives up */

static const char RELEASE_LUA[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

typedef struct node {
    redisContext *c; /* NULL once failed */
    unsigned stale;  /* replies owed by earlier rounds, dropped on arrival */
    int answered;    /* answered in the current round */
    unsigned owed;   /* replies of the current round still to read (a SET and its WAIT: 2) */
    int vote;        /* the current round's vote so far */
    int want_write;  /* hiredis still holds output for this node */
} node_t;

static node_t nodes[BENCH_MAX_NODES];
static size_t n_nodes, quorum;
static long long wait_replicas; /* --wait-replicas: 0, no WAIT */

/* ------------------------------------------------------------ connections */

static void node_fail(node_t *nd, const char *why) {
    if (!nd->c) return;
    fprintf(stderr, "floor: node fd %d failed: %s\n", nd->c->fd, why);
    redisFree(nd->c);
    nd->c = NULL;
}

/* Connects every node (non-blocking), waits up to 2 s for each connect.
 * Returns the number of live nodes. */
static size_t connect_all(const char **uris) {
    size_t live = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        char host[256], path[512];
        int port = 0;
        if (bench_parse_uri(uris[i], host, sizeof host, &port, path, sizeof path) < 0) {
            fprintf(stderr, "floor: unsupported URI '%s'\n", uris[i]);
            exit(2);
        }
        redisContext *c = path[0] ? redisConnectUnixNonBlock(path) : redisConnectNonBlock(host, port);
        if (!c || c->err) {
            fprintf(stderr, "floor: connect %s: %s\n", uris[i], c ? c->errstr : "out of memory");
            if (c) redisFree(c);
            continue;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        int err = 0;
        socklen_t len = sizeof err;
        if (poll(&p, 1, 2000) != 1 || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            fprintf(stderr, "floor: connect %s: %s\n", uris[i], err ? strerror(err) : "timed out");
            redisFree(c);
            continue;
        }
        if (!path[0]) {
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        nodes[i].c = c;
        live++;
    }
    return live;
}

/* ------------------------------------------------------------------ rounds */

enum { KIND_SET, KIND_INT, KIND_SETWAIT };

/* 1 yes, 0 no, -1 failed. */
static int classify(const redisReply *r, int kind) {
    if (kind == KIND_SET) {
        if (r->type == REDIS_REPLY_STATUS && r->len == 2 && !memcmp(r->str, "OK", 2)) return 1;
        return r->type == REDIS_REPLY_NIL ? 0 : -1;
    }
    if (r->type == REDIS_REPLY_INTEGER) return r->integer == 1 ? 1 : 0;
    return -1;
}

/* Reads what node i has for us: drops stale replies, classifies ours.
 * Returns 1 yes, 0 no, -1 failed, 2 nothing of ours yet. */
static int node_read(node_t *nd, int kind) {
    if (redisBufferRead(nd->c) != REDIS_OK) {
        node_fail(nd, nd->c->errstr);
        return -1;
    }
    for (;;) {
        void *rep = NULL;
        if (redisGetReply(nd->c, &rep) != REDIS_OK) {
            node_fail(nd, nd->c->errstr);
            return -1;
        }
        if (!rep) return 2;
        if (nd->stale) {
            nd->stale--;
            freeReplyObject(rep);
            continue;
        }
        const redisReply *r = rep;
        if (kind != KIND_SETWAIT) {
            nd->vote = classify(r, kind);
        } else if (nd->owed == 2) { /* the SET */
            nd->vote = classify(r, KIND_SET);
        } else if (nd->vote == 1) { /* its WAIT: enough replicas have it? */
            nd->vote = r->type == REDIS_REPLY_INTEGER && r->integer >= wait_replicas ? 1 : -1;
        }
        freeReplyObject(rep);
        if (--nd->owed == 0) return nd->vote;
    }
}

/* Sends the formatted command cmd to every live node and waits for a
 * majority of yes (or until one is impossible). Returns the yes count. */
static size_t fan_out(const char *cmd, size_t len, int kind) {
    size_t yes = 0, no = 0, failed = 0, pending = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        node_t *nd = &nodes[i];
        nd->answered = 0;
        if (!nd->c) {
            failed++;
            continue;
        }
        int done = 0;
        if (redisAppendFormattedCommand(nd->c, cmd, len) != REDIS_OK || redisBufferWrite(nd->c, &done) != REDIS_OK) {
            node_fail(nd, nd->c->errstr);
            failed++;
            continue;
        }
        nd->want_write = !done;
        nd->owed = kind == KIND_SETWAIT ? 2 : 1;
        pending++;
    }
    struct pollfd pfd[BENCH_MAX_NODES];
    size_t map[BENCH_MAX_NODES];
    uint64_t give_up = bench_now_ns() + (uint64_t)ROUND_TIMEOUT_MS * 1000000u;
    while (yes < quorum && yes + pending >= quorum) {
        nfds_t k = 0;
        for (size_t i = 0; i < n_nodes; i++) {
            node_t *nd = &nodes[i];
            if (!nd->c || nd->answered) continue;
            pfd[k] = (struct pollfd){.fd = nd->c->fd, .events = (short)(POLLIN | (nd->want_write ? POLLOUT : 0))};
            map[k++] = i;
        }
        int ready = poll(pfd, k, ROUND_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0 || bench_now_ns() > give_up) break;
        for (nfds_t j = 0; j < k; j++) {
            node_t *nd = &nodes[map[j]];
            if (!pfd[j].revents || !nd->c) continue;
            if ((pfd[j].revents & POLLOUT) && nd->want_write) {
                int done = 0;
                if (redisBufferWrite(nd->c, &done) != REDIS_OK) {
                    node_fail(nd, nd->c->errstr);
                    pending--, failed++;
                    continue;
                }
                nd->want_write = !done;
            }
            if (!(pfd[j].revents & (POLLIN | POLLERR | POLLHUP))) continue;
            int v = node_read(nd, kind);
            if (v == 2) continue;
            nd->answered = 1;
            pending--;
            if (v == 1)
                yes++;
            else if (v == 0)
                no++;
            else
                failed++;
        }
    }
    /* The nodes still owing this round's reply: drop it when it comes. */
    for (size_t i = 0; i < n_nodes; i++)
        if (nodes[i].c && !nodes[i].answered) nodes[i].stale += nodes[i].owed;
    return yes;
}

/* ------------------------------------------------------------------- main */

static uint64_t rng_state;

/* xorshift64*: a cheap token source (the floor does no crypto). */
static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static void make_token(char tok[41]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 40; i += 16) {
        uint64_t r = rng_next();
        for (int j = 0; j < 16 && i + j < 40; j++, r >>= 4) tok[i + j] = hex[r & 15];
    }
    tok[40] = '\0';
}

static const char USAGE[] = "-u URI,URI,... [-w serial|cpu] [-n CYCLES] [-d SECONDS] [--warmup CYCLES]\n"
                            "          [--ttl MS] [--impl NAME] [--wait-replicas N]\n";

int main(int argc, char **argv) {
    char *uri_list = NULL;
    const char *workload = "serial", *impl = "floor";
    double max_cycles = 0, secs = 2, warmup = 200, ttl = 10000, replicas = 0;
    const bench_opt_t opts[] = {
        {"-u", .list = &uri_list},    {"-w", .str = &workload},
        {"-n", .num = &max_cycles},   {"-d", .num = &secs},
        {"--warmup", .num = &warmup}, {"--ttl", .num = &ttl},
        {"--impl", .str = &impl},     {"--wait-replicas", .num = &replicas},
    };
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], NULL) != 0) bench_usage(argv[0], USAGE, 0);
    wait_replicas = (long long)replicas;
    if (!uri_list || !workload || !impl) bench_usage(argv[0], USAGE, 0);
    int timed = !strcmp(workload, "serial");
    if (!timed && strcmp(workload, "cpu")) bench_usage(argv[0], USAGE, 0);

    const char *uris[BENCH_MAX_NODES];
    n_nodes = bench_split_uris(uri_list, uris, BENCH_MAX_NODES);
    if (!n_nodes) bench_usage(argv[0], USAGE, 0);
    quorum = n_nodes / 2 + 1;
    size_t live = connect_all(uris);
    rng_state = bench_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ULL;
    if (!rng_state) rng_state = 1;

    size_t cap = max_cycles > 0 ? (size_t)max_cycles : (size_t)(secs * 200000.0) + 1000;
    bench_samples_t acq, cyc;
    if (timed) {
        bench_samples_init(&acq, cap);
        bench_samples_init(&cyc, cap);
    }

    char key[96], tok[41];
    char *set_cmd = NULL, *rel_cmd = NULL;
    char ttl_s[24];
    snprintf(ttl_s, sizeof ttl_s, "%.0f", ttl);
    unsigned pid = (unsigned)getpid();
    uint64_t failed_acq = 0, failed_rel = 0, cycles = 0, total = (uint64_t)warmup;
    uint64_t t_start = 0, cpu_start = 0, deadline = 0;
    bench_allocs_t al = {0};
    for (uint64_t i = 0;; i++) {
        if (i == total) { /* warm-up done: start measuring */
            t_start = bench_now_ns();
            deadline = t_start + (uint64_t)(secs * 1e9);
            cpu_start = bench_cpu_us();
            bench_allocs_start();
        }
        if (i >= total) {
            if (max_cycles > 0 && cycles >= (uint64_t)max_cycles) break;
            if ((timed || (cycles & 63) == 0) && bench_now_ns() >= deadline) break;
        }
        snprintf(key, sizeof key, "bench:floor:%u:%llu", pid, (unsigned long long)i);
        make_token(tok);
        uint64_t t0 = timed ? bench_now_ns() : 0;
        int set_len = redisFormatCommand(&set_cmd, "SET %s %s NX PX %s", key, tok, ttl_s);
        size_t yes;
        if (wait_replicas) { /* SET and WAIT in one write */
            char *w = NULL, both[512];
            int wl = redisFormatCommand(&w, "WAIT %lld %d", wait_replicas, ROUND_TIMEOUT_MS);
            size_t n = (size_t)set_len + (size_t)wl;
            if (n > sizeof both) abort(); /* (keys and tokens are short) */
            memcpy(both, set_cmd, (size_t)set_len);
            memcpy(both + set_len, w, (size_t)wl);
            redisFreeCommand(w);
            yes = fan_out(both, n, KIND_SETWAIT);
        } else {
            yes = fan_out(set_cmd, (size_t)set_len, KIND_SET);
        }
        redisFreeCommand(set_cmd);
        uint64_t t1 = timed ? bench_now_ns() : 0;
        if (yes < quorum) failed_acq++;
        /* Release on every node whether or not the acquire won. */
        int rel_len = redisFormatCommand(&rel_cmd, "EVAL %s 1 %s %s", RELEASE_LUA, key, tok);
        if (fan_out(rel_cmd, (size_t)rel_len, KIND_INT) < quorum && yes >= quorum) failed_rel++;
        redisFreeCommand(rel_cmd);
        if (i < total) continue;
        if (timed) {
            uint64_t t2 = bench_now_ns();
            bench_samples_add(&acq, t1 - t0);
            bench_samples_add(&cyc, t2 - t0);
        }
        cycles++;
    }
    al = bench_allocs_stop();
    uint64_t cpu = bench_cpu_us() - cpu_start;
    double elapsed = (double)(bench_now_ns() - t_start) / 1e9;

    bench_line_begin(impl, workload);
    bench_kv_u64("nodes", n_nodes);
    bench_kv_u64("live", live);
    bench_kv_u64("threads", 1);
    bench_kv_u64("cycles", cycles);
    bench_kv_f("secs", elapsed);
    bench_kv_f("cps", elapsed > 0 ? (double)cycles / elapsed : 0);
    if (timed) {
        bench_kv_quantiles("acq", &acq);
        bench_kv_quantiles("cyc", &cyc);
    }
    bench_kv_f("cpu_us_per_cycle", cycles ? (double)cpu / (double)cycles : 0);
    bench_kv_f("allocs_per_cycle", cycles ? (double)al.allocs / (double)cycles : 0);
    bench_kv_f("frees_per_cycle", cycles ? (double)al.frees / (double)cycles : 0);
    bench_kv_u64("failed_acquires", failed_acq);
    bench_kv_u64("failed_releases", failed_rel);
    bench_line_end();

    if (timed) {
        bench_samples_free(&acq);
        bench_samples_free(&cyc);
    }
    for (size_t i = 0; i < n_nodes; i++)
        if (nodes[i].c) redisFree(nodes[i].c);
    return cycles ? 0 : 1;
}
