/* test_stats.c -- redlock_stats and redlock_stats_prometheus against the
 * 5-master fixture cluster: the counters match exactly what a test did
 * (grants, refusals as taken, no quorum with three nodes paused, the
 * paused nodes' timeouts, extends, a lock lost by the watchdog, a node
 * killed and reconnected), histogram counts sum to the rounds run, the
 * Prometheus text parses with the official client's parser
 * (test/support/prom_dump.py, Debian's python3-prometheus-client) and says
 * what redlock_stats says, and the buffer contract is snprintf's. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rltest.h"

#ifndef REDLOCK_PROM_DUMP
#error "REDLOCK_PROM_DUMP (path of test/support/prom_dump.py) must be defined by the build"
#endif

static tc_cluster_t C;
static redlock_t *g_rl, *g_other;
static redlock_stats_t S; /* ~15 KB: off the stack */
static char g_text[262144], g_dump[262144];

static void setup(void) {
    rt_setup(&C);
}

static void teardown(void) {
    for (int i = 0; i < C.n; i++) tc_node_resume(&C, i);
    redlock_free(g_rl);
    redlock_free(g_other);
    g_rl = g_other = NULL;
}

TestSuite(stats, .init = setup, .fini = teardown, .timeout = 300);

/* Under valgrind every reply is slow: a healthy node must not time out. */
static uint32_t op_timeout(void) {
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload") ? 2000 : 300;
}

/* A handle over the 5 nodes with no retries, op_timeout() per node, and a
 * node never marked down for silence (paused nodes only time out). */
static redlock_t *new_rl(int stats) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = op_timeout();
    o.connect_timeout_ms = 2000;
    o.node_down_ms = 600000;
    o.stats = stats;
    return rt_new(&C, 5, &o);
}

/* Sum of a result-code array. */
static uint64_t total(const uint64_t *by_code) {
    uint64_t t = 0;
    for (int i = 0; i < REDLOCK_STATS_CODES; i++) t += by_code[i];
    return t;
}

/* A histogram's own consistency: count is the sum of its buckets. */
static void check_hist(const redlock_histogram_t *h, const char *what) {
    uint64_t sum = 0;
    for (int i = 0; i < REDLOCK_STATS_BUCKETS; i++) sum += h->bucket[i];
    cr_assert_eq(sum, h->count, "%s: buckets sum to %llu, count %llu", what, (unsigned long long)sum,
                 (unsigned long long)h->count);
    cr_assert(h->count == 0 || h->sum_us > 0, "%s: %llu observations summing to 0 us", what,
              (unsigned long long)h->count);
}

static void acquire_ok(redlock_t *rl, const char *res, redlock_lock_t **lk) {
    int rc = redlock_try_acquire(rl, res, 10000, lk);
    cr_assert_eq(rc, REDLOCK_OK, "acquire %s: %s", res, redlock_strerror(rc));
}

Test(stats, counters_match_what_was_done) {
    enum { N = 4, E = 2, M = 3, K = 2 };
    g_rl = new_rl(1);
    g_other = new_rl(1);
    char res[64];
    for (int i = 0; i < N; i++) { /* N granted, the first extended E times */
        redlock_lock_t *lk;
        snprintf(res, sizeof res, "stats:g:%d", i);
        acquire_ok(g_rl, res, &lk);
        for (int e = 0; i == 0 && e < E; e++) cr_assert_eq(redlock_extend(g_rl, lk, 10000), REDLOCK_OK);
        cr_assert_eq(redlock_release(g_rl, lk), REDLOCK_OK);
    }
    redlock_lock_t *held;
    acquire_ok(g_other, "stats:held", &held);
    for (int j = 0; j < M; j++) { /* M refused as taken */
        redlock_lock_t *lk = NULL;
        cr_assert_eq(redlock_try_acquire(g_rl, "stats:held", 10000, &lk), REDLOCK_ERR_TAKEN);
    }
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_pause(&C, i), 0);
    for (int k = 0; k < K; k++) { /* K without a quorum */
        redlock_lock_t *lk = NULL;
        snprintf(res, sizeof res, "stats:nq:%d", k);
        cr_assert_eq(redlock_try_acquire(g_rl, res, 10000, &lk), REDLOCK_ERR_NO_QUORUM);
    }
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_resume(&C, i), 0);
    cr_assert_eq(redlock_stats(g_rl, &S), REDLOCK_OK);

    cr_assert_eq(S.acquires[0], N);
    cr_assert_eq(S.acquires[-REDLOCK_ERR_TAKEN], M);
    cr_assert_eq(S.acquires[-REDLOCK_ERR_NO_QUORUM], K);
    cr_assert_eq(total(S.acquires), N + M + K);
    cr_assert_eq(S.extends[0], E);
    cr_assert_eq(total(S.extends), E);
    cr_assert_eq(S.releases[0], N);
    cr_assert_eq(total(S.releases), N);
    cr_assert_eq(total(S.adopts), 0);
    cr_assert_eq(S.locks_lost, 0);
    cr_assert_eq(S.waits + S.wakeups, 0);
    /* rounds: acquire + release per grant, one per extend, the attempt per
     * refusal (its clean-up goes out unwaited: not a round, no votes) */
    cr_assert_eq(S.rounds.count, 2 * N + E + M + K, "rounds %llu", (unsigned long long)S.rounds.count);
    check_hist(&S.rounds, "rounds");
    uint64_t slow = 0; /* rounds that waited for the paused nodes' deadline */
    for (int b = 0; b < REDLOCK_STATS_BUCKETS; b++)
        if (redlock_stats_bucket_us(b) == UINT64_MAX || redlock_stats_bucket_us(b) >= op_timeout() * 1000u)
            slow += S.rounds.bucket[b];
    /* the paused nodes are a majority: without them no quorum is possible,
     * so every attempt asks them though they are suspect after the first
     * (skipping is for a minority), and waits for them up to op_timeout */
    cr_assert_geq(slow, 1, "no round in the buckets at or above op_timeout");
    cr_assert_leq(slow, K, "%llu rounds waited op_timeout: more than the %d attempts", (unsigned long long)slow, K);
    /* only a refusal can split (yes from nodes the holder's first SETs had not reached yet) */
    cr_assert_leq(S.splits, M, "%llu split votes", (unsigned long long)S.splits);

    cr_assert_eq(S.n_nodes, 5);
    uint64_t yes = 0, no = 0;
    for (int i = 0; i < 5; i++) {
        const redlock_node_stats_t *n = &S.nodes[i];
        cr_assert_str_eq(n->node, C.uri[i]);
        /* each paused node timed out in the first attempt; in the K - 1
         * after, it was asked again (timeout) or, while its connection was
         * being closed after its probe's timeout, skipped (suspect);
         * clean-ups count no votes */
        cr_assert(i < 3 ? n->timeout >= 1 : n->timeout == 0, "node %d: %llu timeouts", i,
                  (unsigned long long)n->timeout);
        cr_assert_eq(n->timeout + n->suspect, i < 3 ? K : 0, "node %d: %llu timeouts, %llu suspect votes", i,
                     (unsigned long long)n->timeout, (unsigned long long)n->suspect);
        cr_assert_eq(n->suspected, i < 3 ? 1 : 0, "node %d: suspected %llu times", i, (unsigned long long)n->suspected);
        cr_assert(i < 3 ? n->probes >= 1 : n->probes == 0, "node %d: %llu probes", i, (unsigned long long)n->probes);
        cr_assert_eq(n->down + n->quarantined + n->error, 0, "node %d", i);
        if (i >= 3) cr_assert_eq(n->reconnects, 0, "node %d", i);
        cr_assert_eq(n->rtt.count, n->yes + n->no, "node %d: every answered vote has a round trip", i);
        check_hist(&n->rtt, "rtt");
        yes += n->yes;
        no += n->no;
    }
    /* a decided round stops counting at its quorum (3 of 5); the first
     * no-quorum attempt and its clean-up count both healthy nodes' yes, the
     * later ones may be decided by the suspect nodes' votes before them */
    cr_assert(yes >= 3 * (2 * N + E) + 2 && yes <= 5 * (2 * N + E) + 4 * K, "yes votes %llu", (unsigned long long)yes);
    cr_assert(no >= 3 * M && no <= 5 * M, "no votes %llu", (unsigned long long)no);
    redlock_lock_free(held);
}

/* on_lost: counts calls. */
static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    (void)lock, (void)reason;
    atomic_fetch_add((atomic_int *)arg, 1);
}

Test(stats, lost_lock_and_its_extends) {
    g_rl = new_rl(1);
    redlock_lock_t *lk;
    int rc = redlock_try_acquire(g_rl, "stats:lost", 3000, &lk);
    cr_assert_eq(rc, REDLOCK_OK);
    atomic_int lost = 0;
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.interval_ms = 300;
    cr_assert_eq(redlock_autoextend(g_rl, lk, &ao, on_lost, &lost), REDLOCK_OK);
    rt_sleep_ms(800); /* a couple of extensions */
    for (int i = 0; i < 5; i++) cr_assert_geq(tc_del(&C, i, "stats:lost"), 0);
    for (int t = 0; t < 100 && !atomic_load(&lost); t++) rt_sleep_ms(50);
    cr_assert_eq(atomic_load(&lost), 1, "the watchdog did not find the lock lost");
    cr_assert_eq(redlock_stats(g_rl, &S), REDLOCK_OK);
    cr_assert_eq(S.locks_lost, 1);
    cr_assert_eq(S.extends[0], redlock_lock_extensions(lk), "extends %llu, extensions %u",
                 (unsigned long long)S.extends[0], redlock_lock_extensions(lk));
    cr_assert_geq(S.extends[0], 1);
    cr_assert_eq(S.extends[-REDLOCK_ERR_NOT_HELD], 1);
    cr_assert_eq(total(S.extends), S.extends[0] + 1);
    redlock_lock_free(lk);
}

Test(stats, killed_node_reconnects) {
    g_rl = new_rl(1);
    redlock_lock_t *lk;
    acquire_ok(g_rl, "stats:k:0", &lk); /* every node connected */
    cr_assert_eq(redlock_release(g_rl, lk), REDLOCK_OK);
    cr_assert_eq(tc_node_kill(&C, 4), 0);
    char res[64];
    for (int k = 1; k <= 20; k++) { /* a quorum of 4 keeps granting; node 4 fails, then is retried */
        snprintf(res, sizeof res, "stats:k:%d", k);
        acquire_ok(g_rl, res, &lk);
        redlock_release(g_rl, lk);
        rt_sleep_ms(30);
    }
    cr_assert_eq(tc_node_restart(&C, 4, 1), 0);
    uint64_t yes_before = 0;
    cr_assert_eq(redlock_stats(g_rl, &S), REDLOCK_OK);
    yes_before = S.nodes[4].yes;
    for (int k = 0; k < 100 && S.nodes[4].yes == yes_before; k++) { /* until node 4 votes again */
        snprintf(res, sizeof res, "stats:k:back:%d", k);
        acquire_ok(g_rl, res, &lk);
        redlock_release(g_rl, lk);
        rt_sleep_ms(30);
        redlock_stats(g_rl, &S);
    }
    cr_assert_gt(S.nodes[4].yes, yes_before, "node 4 never voted again after its restart");
    cr_assert_geq(S.nodes[4].reconnects, 1);
    cr_assert_geq(S.nodes[4].error + S.nodes[4].down, 1, "the killed node's failures are counted");
    for (int i = 0; i < 4; i++) cr_assert_eq(S.nodes[i].reconnects + S.nodes[i].error + S.nodes[i].down, 0);
    cr_assert_eq(total(S.acquires), S.acquires[0], "every acquire was granted");
}

Test(stats, off_counts_nothing) {
    g_rl = new_rl(0);
    redlock_lock_t *lk;
    acquire_ok(g_rl, "stats:off", &lk);
    cr_assert_eq(redlock_release(g_rl, lk), REDLOCK_OK);
    memset(&S, 0xff, sizeof S);
    cr_assert_eq(redlock_stats(g_rl, &S), REDLOCK_OK);
    cr_assert_eq(total(S.acquires) + total(S.releases) + S.rounds.count + S.rounds.sum_us, 0);
    cr_assert_eq(S.n_nodes, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_str_eq(S.nodes[i].node, C.uri[i]);
        cr_assert_eq(S.nodes[i].yes + S.nodes[i].rtt.count, 0);
    }
}

Test(stats, bad_arguments) {
    g_rl = new_rl(1);
    char buf[8];
    cr_assert_eq(redlock_stats(NULL, &S), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_stats(g_rl, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_stats_prometheus(NULL, buf, sizeof buf), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_stats_prometheus(g_rl, NULL, 5), REDLOCK_ERR_INVALID);
    cr_assert_gt(redlock_stats_prometheus(g_rl, NULL, 0), 0);
    cr_assert_eq(redlock_stats_bucket_us(0), 50);
    cr_assert_eq(redlock_stats_bucket_us(REDLOCK_STATS_BUCKETS - 1), UINT64_MAX);
    cr_assert_eq(redlock_stats_bucket_us(1000), UINT64_MAX);
}

/* ------------------------------------------------------------ Prometheus */

/* Parses text with prom_dump.py into g_dump; fails the test if it does not parse. */
static void parse_with_client(const char *text) {
    char path[] = "/tmp/redlock-prom.XXXXXX", cmd[512];
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s < %s", REDLOCK_PROM_DUMP, path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(g_dump, 1, sizeof g_dump - 1, p);
    g_dump[n] = '\0';
    int st = pclose(p);
    unlink(path);
    cr_assert_eq(st, 0, "the Prometheus client's parser refused the text (status %d):\n%s", st, text);
}

/* 1 when g_dump has the line "sample NAME LABELS VALUE" (value printed as %llu). */
static int has_sample(const char *name, const char *labels, unsigned long long v) {
    char want[512];
    snprintf(want, sizeof want, "\nsample %s %s %llu\n", name, labels, v);
    return strstr(g_dump, want) != NULL || !strncmp(g_dump, want + 1, strlen(want + 1));
}

static void expect_sample(const char *name, const char *labels, unsigned long long v) {
    cr_assert(has_sample(name, labels, v), "no sample %s{%s} = %llu in:\n%s", name, labels, v, g_dump);
}

/* The text's per-node samples against the snapshot S. */
static void expect_nodes(void) {
    char l[256];
    for (size_t i = 0; i < S.n_nodes; i++) {
        const redlock_node_stats_t *n = &S.nodes[i];
        const char *kinds[] = {"yes", "no", "timeout", "down", "quarantined", "error", "suspect"};
        const uint64_t v[] = {n->yes, n->no, n->timeout, n->down, n->quarantined, n->error, n->suspect};
        for (int k = 0; k < 7; k++) {
            snprintf(l, sizeof l, "node=%s,vote=%s", n->node, kinds[k]);
            expect_sample("redlock_node_votes_total", l, v[k]);
        }
        snprintf(l, sizeof l, "node=%s", n->node);
        expect_sample("redlock_node_reconnects_total", l, n->reconnects);
        expect_sample("redlock_node_suspected_total", l, n->suspected);
        expect_sample("redlock_node_probes_total", l, n->probes);
        expect_sample("redlock_node_rtt_seconds_count", l, n->rtt.count);
        snprintf(l, sizeof l, "le=+Inf,node=%s", n->node);
        expect_sample("redlock_node_rtt_seconds_bucket", l, n->rtt.count);
    }
}

Test(stats, prometheus_text_parses_and_says_what_was_done) {
    g_rl = new_rl(1);
    g_other = new_rl(1);
    redlock_lock_t *a, *b, *held, *none = NULL;
    acquire_ok(g_rl, "stats:p:a", &a);
    acquire_ok(g_rl, "stats:p:b", &b);
    acquire_ok(g_other, "stats:p:held", &held);
    cr_assert_eq(redlock_try_acquire(g_rl, "stats:p:held", 10000, &none), REDLOCK_ERR_TAKEN);
    cr_assert_eq(redlock_release(g_rl, a), REDLOCK_OK);
    cr_assert_eq(redlock_release(g_rl, b), REDLOCK_OK);
    int need = redlock_stats_prometheus(g_rl, g_text, sizeof g_text);
    cr_assert(need > 0 && (size_t)need < sizeof g_text);
    cr_assert_eq(strlen(g_text), (size_t)need);
    cr_assert_eq(redlock_stats(g_rl, &S), REDLOCK_OK); /* nothing ran in between */
    parse_with_client(g_text);

    static const char *const families[] = {"family redlock_nodes gauge",
                                           "family redlock_acquires counter",
                                           "family redlock_extends counter",
                                           "family redlock_releases counter",
                                           "family redlock_adopts counter",
                                           "family redlock_locks_lost counter",
                                           "family redlock_waits counter",
                                           "family redlock_wakeups counter",
                                           "family redlock_round_duration_seconds histogram",
                                           "family redlock_node_votes counter",
                                           "family redlock_node_reconnects counter",
                                           "family redlock_node_rtt_seconds histogram",
                                           "family redlock_split_votes counter",
                                           "family redlock_node_suspected counter",
                                           "family redlock_node_probes counter"};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        cr_assert(strstr(g_dump, families[i]), "missing '%s' in:\n%s", families[i], g_dump);
    expect_sample("redlock_nodes", "-", 5);
    expect_sample("redlock_acquires_total", "result=ok", 2);
    expect_sample("redlock_acquires_total", "result=taken", 1);
    expect_sample("redlock_acquires_total", "result=no_quorum", 0);
    expect_sample("redlock_releases_total", "result=ok", 2);
    expect_sample("redlock_extends_total", "result=ok", 0);
    expect_sample("redlock_locks_lost_total", "-", 0);
    expect_sample("redlock_waits_total", "-", 0);
    expect_sample("redlock_round_duration_seconds_count", "-", 5); /* 2 + 1 (taken: the attempt) + 2 */
    expect_sample("redlock_round_duration_seconds_bucket", "le=+Inf", 5);
    expect_nodes();
    redlock_lock_free(held);
}

Test(stats, prometheus_masks_passwords) {
    redlock_options_t o;
    rt_options(&o);
    const char *nodes[] = {"redis://ops:s3cret-pw@127.0.0.1:1", "redis://:other-pw@127.0.0.1:2/3"};
    o.nodes = nodes;
    o.n_nodes = 2;
    cr_assert_eq(redlock_new(&g_rl, &o), REDLOCK_OK);
    int need = redlock_stats_prometheus(g_rl, g_text, sizeof g_text);
    cr_assert(need > 0 && (size_t)need < sizeof g_text);
    cr_assert_null(strstr(g_text, "s3cret"), "a password in:\n%s", g_text);
    cr_assert_null(strstr(g_text, "other-pw"), "a password in:\n%s", g_text);
    parse_with_client(g_text);
    cr_assert(strstr(g_dump, "node=redis://ops:***@127.0.0.1:1,vote=yes"), "%s", g_dump);
}

Test(stats, prometheus_buffer_like_snprintf) {
    g_rl = new_rl(1);
    redlock_lock_t *lk;
    acquire_ok(g_rl, "stats:buf", &lk);
    cr_assert_eq(redlock_release(g_rl, lk), REDLOCK_OK);
    int need = redlock_stats_prometheus(g_rl, NULL, 0);
    cr_assert_gt(need, 1000);
    cr_assert_eq(redlock_stats_prometheus(g_rl, g_text, sizeof g_text), need);
    static char small[sizeof g_text];
    memset(small, 'X', sizeof small);
    cr_assert_eq(redlock_stats_prometheus(g_rl, small, 0), need, "len 0: the needed length");
    for (size_t i = 0; i < sizeof small; i++) cr_assert_eq(small[i], 'X', "len 0 wrote byte %zu", i);
    size_t lens[] = {1, 2, 64, 1000, (size_t)need - 1, (size_t)need};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        memset(small, 'X', sizeof small);
        cr_assert_eq(redlock_stats_prometheus(g_rl, small, lens[k]), need, "len %zu", lens[k]);
        cr_assert_eq(small[lens[k] - 1], '\0', "len %zu: not terminated", lens[k]);
        cr_assert_eq(strlen(small), lens[k] - 1);
        cr_assert_eq(memcmp(small, g_text, lens[k] - 1), 0, "len %zu: not a prefix of the text", lens[k]);
        cr_assert_eq(small[lens[k]], 'X', "len %zu: wrote past the buffer", lens[k]);
    }
    memset(small, 'X', sizeof small);
    cr_assert_eq(redlock_stats_prometheus(g_rl, small, (size_t)need + 1), need);
    cr_assert_str_eq(small, g_text);
}
