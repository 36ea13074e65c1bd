/* test_fence.c -- fencing tokens against real masters: strictly increasing
 * across alternating holders while random minorities of nodes are paused,
 * killed or restarted without their data; still increasing after every
 * node restarts empty; still increasing between clients of several threads
 * at once; each granting node's counter raised exactly to the token by the
 * write-back; and a holder paused past its TTL is refused by the fenced
 * write helper once a newer holder wrote. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(fence, .init = setup, .timeout = 300);

/* A fencing redlock_t over the first n nodes. */
static redlock_t *fenced_rl(size_t n) {
    redlock_options_t o;
    rt_options(&o);
    o.fencing = 1;
    o.op_timeout_ms = 100;
    o.retry_count = 200;
    o.retry_delay_ms = 20;
    o.retry_jitter_ms = 10;
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 100;
    return rt_new(&C, n, &o);
}

/* Acquires res through rl (retrying) and returns the lock's fence. */
static uint64_t take(redlock_t *rl, const char *res, redlock_lock_t **lk) {
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, res, 3000, 10000, lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    uint64_t f = redlock_lock_fence(*lk);
    cr_assert_gt(f, 0);
    return f;
}

Test(fence, tokens_strictly_increase_across_holders_and_minority_faults) {
    redlock_t *cl[3] = {fenced_rl(5), fenced_rl(5), fenced_rl(5)};
    uint64_t last = 0;
    int faults = 0, down[5] = {0}; /* 0 up, 1 paused, 2 killed */
    srand(12345);
    for (int round = 0; round < 200; round++) {
        if (round % 10 == 0) { /* heal, then hit a random minority (0-2 nodes) */
            for (int i = 0; i < 5; i++) {
                if (down[i] == 1) cr_assert_eq(tc_node_resume(&C, i), 0);
                if (down[i] == 2) cr_assert_eq(tc_node_restart(&C, i, 1), 0); /* restarted without its data */
                down[i] = 0;
            }
            int k = rand() % 3;
            for (int j = 0; j < k; j++) {
                int i = rand() % 5;
                if (down[i]) continue;
                down[i] = 1 + rand() % 2;
                cr_assert_eq(down[i] == 1 ? tc_node_pause(&C, i) : tc_node_kill(&C, i), 0);
                faults++;
            }
        }
        redlock_lock_t *lk = NULL;
        redlock_t *who = cl[rand() % 3];
        uint64_t f = take(who, "fence:res", &lk);
        cr_assert_gt(f, last, "round %d: token %llu not above the previous %llu", round, (unsigned long long)f,
                     (unsigned long long)last);
        last = f;
        redlock_release(who, lk); /* may report NOT_HELD/NO_QUORUM under faults: the token order is what counts */
    }
    for (int i = 0; i < 5; i++) {
        if (down[i] == 1) tc_node_resume(&C, i);
        if (down[i] == 2) tc_node_restart(&C, i, 1);
    }
    cr_assert_gt(faults, 10);
    for (int i = 0; i < 3; i++) redlock_free(cl[i]);
}

Test(fence, tokens_still_increase_after_every_node_restarts_empty) {
    redlock_t *rl = fenced_rl(5);
    redlock_lock_t *lk = NULL;
    uint64_t a = take(rl, "fence:wipe", &lk);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    uint64_t b = take(rl, "fence:wipe", &lk);
    cr_assert_gt(b, a); /* rising, not consecutive: counters never fall below the node clocks (µs) */
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_node_restart(&C, i, 1), 0); /* every counter lost */
    uint64_t c = take(rl, "fence:wipe", &lk);
    cr_assert_gt(c, b, "after a restart without data the node clocks keep tokens rising (%llu <= %llu)",
                 (unsigned long long)c, (unsigned long long)b);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(fence, holder_paused_past_its_ttl_is_refused_by_the_fenced_store) {
    /* lock nodes 0-2; the protected data lives on node 4, which is not a lock node */
    redlock_t *a = fenced_rl(3), *b = fenced_rl(3);
    const char *store_uri[1] = {C.uri[4]};
    redlock_options_t so;
    rt_options(&so);
    so.nodes = store_uri;
    so.n_nodes = 1;
    redlock_t *store = NULL;
    cr_assert_eq(redlock_new(&store, &so), REDLOCK_OK);

    redlock_lock_t *la = NULL, *lb = NULL;
    cr_assert_eq(redlock_acquire(a, "fence:job", 300, &la), REDLOCK_OK);
    uint64_t fa = redlock_lock_fence(la);
    cr_assert_eq(redlock_fenced_set(store, "fence:data", "written by A (early)", fa, NULL), REDLOCK_OK);
    rt_sleep_ms(450); /* A stalls past its TTL (a GC pause, a stopped VM...) */
    cr_assert_leq(redlock_lock_validity_ms(la), 0);
    cr_assert_eq(redlock_acquire(b, "fence:job", 3000, &lb), REDLOCK_OK);
    uint64_t fb = redlock_lock_fence(lb);
    cr_assert_gt(fb, fa);
    cr_assert_eq(redlock_fenced_set(store, "fence:data", "written by B", fb, NULL), REDLOCK_OK);
    redlock_report_t rep;
    int rc = redlock_fenced_set(store, "fence:data", "written by A (late)", fa, &rep); /* A wakes and writes */
    cr_assert_eq(rc, REDLOCK_ERR_STALE, "a stale token was accepted: %s", redlock_strerror(rc));
    char *v = tc_get(&C, 4, "fence:data");
    cr_assert(v && !strcmp(v, "written by B"), "store holds '%s'", v ? v : "(nil)");
    free(v);
    cr_assert_eq(redlock_fenced_set(store, "fence:data", "B again", fb, NULL), REDLOCK_OK,
                 "the same token may write again");
    redlock_lock_free(la);
    cr_assert_eq(redlock_release(b, lb), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
    redlock_free(store);
}

Test(fence, no_token_without_fencing_or_for_sets) {
    redlock_t *plain = rt_new(&C, 5, NULL), *f = fenced_rl(5);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(plain, "fence:none", 3000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_lock_fence(lk), 0);
    cr_assert_eq(redlock_release(plain, lk), REDLOCK_OK);
    const char *set[] = {"fence:s1", "fence:s2"};
    cr_assert_eq(redlock_acquire_multi(f, set, 2, 3000, 0, &lk, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_lock_fence(lk), 0);
    cr_assert_eq(redlock_release(f, lk), REDLOCK_OK);
    redlock_report_t rep;
    cr_assert_eq(redlock_fenced_set(f, "fence:x", "v", 0, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "fence=0"), "%s", rep.message);
    cr_assert_eq(redlock_fenced_set(f, "fence:x", NULL, 5, &rep), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_lock_fence(NULL), 0);
    redlock_free(plain);
    redlock_free(f);
}

Test(fence, taken_lock_yields_no_token) {
    redlock_t *a = fenced_rl(5), *b = fenced_rl(5);
    redlock_lock_t *la = NULL, *lb = NULL;
    uint64_t fa = take(a, "fence:held", &la);
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(b, "fence:held", 3000, 0, &lb, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_null(lb);
    cr_assert_eq(redlock_release(a, la), REDLOCK_OK);
    uint64_t fb = take(b, "fence:held", &lb);
    cr_assert_gt(fb, fa);
    cr_assert_eq(redlock_release(b, lb), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
}

Test(fence, token_follows_the_counters_above_the_node_clocks) {
    /* a counter far ahead of every node's clock: the token is the highest + 1, then rises by one */
    char big[32];
    uint64_t v = (uint64_t)4e15; /* µs: about the year 2096 */
    snprintf(big, sizeof big, "%llu", (unsigned long long)v);
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_set(&C, i, "fence:ahead:redlock:fence", big, 0), 0);
    redlock_t *rl = fenced_rl(5);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(take(rl, "fence:ahead", &lk), v + 1);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(take(rl, "fence:ahead", &lk), v + 2);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    snprintf(big, sizeof big, "%llu", (unsigned long long)(v + 2));
    /* written back where the attempt was granted (a quorum), each counter exactly to the token */
    cr_assert_geq(tc_count_value(&C, "fence:ahead:redlock:fence", big), 3, "the write-back reached a quorum");
    for (int i = 0; i < 5; i++) {
        char *c = tc_get(&C, i, "fence:ahead:redlock:fence");
        unsigned long long x = c ? strtoull(c, NULL, 10) : 0;
        cr_assert(x >= v && x <= v + 2, "node %d: counter %s", i, c ? c : "(nil)");
        free(c);
    }
    redlock_free(rl);
}

Test(fence, unreadable_counter_is_a_failed_vote_and_leaves_no_key) {
    /* a counter that is no number on 3 nodes, of another type on 2: no grant counts, and the
     * keys the attempt set are released */
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, "fence:bad:redlock:fence", "12ab", 0), 0);
    for (int i = 3; i < 5; i++) cr_assert_eq(tc_redis_cmd(&C, i, "RPUSH fence:bad:redlock:fence x"), 0);
    redlock_t *rl = fenced_rl(5);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, "fence:bad", 3000, 0, &lk, &rep);
    cr_assert_neq(rc, REDLOCK_OK);
    cr_assert_null(lk);
    size_t failed = 0;
    for (size_t i = 0; i < rep.n_nodes; i++) {
        const redlock_node_report_t *n = &rep.nodes[i];
        if (n->vote == REDLOCK_VOTE_NONE) continue;
        cr_assert_eq(n->vote, REDLOCK_VOTE_ERROR, "node %zu: %s", i, n->detail);
        cr_assert(n->err == REDLOCK_ERR_IO || n->err == REDLOCK_ERR_SERVER, "node %zu: %s", i,
                  redlock_strerror(n->err));
        cr_assert(strstr(n->detail, "not a number") || strstr(n->detail, "WRONGTYPE") ||
                      !strcmp(n->detail, redlock_strerror(n->err)), /* (the async driver keeps no node's words) */
                  "node %zu: %s", i, n->detail);
        failed++;
    }
    cr_assert_geq(failed, 3, "%s", rep.message);
    uint64_t until = rt_now_us() + 2000000u; /* the clean-up goes out unwaited */
    int left = 5;
    while (left && rt_now_us() < until) {
        left = 0;
        for (int i = 0; i < 5; i++) {
            char *v = tc_get(&C, i, "fence:bad");
            left += v != NULL;
            free(v);
        }
        if (left) rt_sleep_ms(10);
    }
    cr_assert_eq(left, 0, "the clean-up left the lock's key on %d nodes", left);
    for (int i = 0; i < 5; i++) tc_del(&C, i, "fence:bad:redlock:fence");
    redlock_free(rl);
}

/* Expects node i's counter of res to read want (NULL: none). */
static void expect_counter(int i, const char *fkey, const char *want) {
    char *v = tc_get(&C, i, fkey);
    cr_assert(want ? v && !strcmp(v, want) : !v, "node %d: counter %s, want %s", i, v ? v : "(nil)",
              want ? want : "(nil)");
    free(v);
}

Test(fence, each_granting_node_counter_is_raised_exactly_to_the_token) {
    /* counters that differ per node: node 0 far above every clock, node 1 below them, node 2 none;
     * nodes 3 and 4 are held by someone else, so exactly nodes 0-2 grant */
    const char *fk = "fence:differ:redlock:fence";
    for (int i = 0; i < 5; i++) tc_del(&C, i, fk);
    cr_assert_eq(tc_set(&C, 0, fk, "9000000000000000", 0), 0);
    cr_assert_eq(tc_set(&C, 1, fk, "12345", 0), 0);
    for (int i = 3; i < 5; i++) {
        cr_assert_eq(tc_set(&C, i, fk, "5", 0), 0);
        cr_assert_eq(tc_set(&C, i, "fence:differ", "someone else's token", 0), 0);
    }
    redlock_t *rl = fenced_rl(5);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(take(rl, "fence:differ", &lk), 9000000000000001ULL);
    for (int i = 0; i < 3; i++) expect_counter(i, fk, "9000000000000001"); /* each raised by its own difference */
    for (int i = 3; i < 5; i++) expect_counter(i, fk, "5");                /* no write-back where not granted */
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    /* again: the counters rise by one, they do not compound */
    cr_assert_eq(take(rl, "fence:differ", &lk), 9000000000000002ULL);
    for (int i = 0; i < 3; i++) expect_counter(i, fk, "9000000000000002");
    for (int i = 3; i < 5; i++) expect_counter(i, fk, "5");
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    for (int i = 0; i < 5; i++) {
        tc_del(&C, i, fk);
        tc_del(&C, i, "fence:differ");
    }
    redlock_free(rl);
}

Test(fence, counter_that_cannot_grow_fails_the_write_back) {
    /* a counter at the largest integer on nodes 0-2, none elsewhere: the token is above what INCRBY
     * can reach there, so at most 2 nodes confirm the write-back and no lock is given */
    const char *fk = "fence:full:redlock:fence";
    for (int i = 0; i < 5; i++) tc_del(&C, i, fk);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, fk, "9223372036854775807", 0), 0);
    redlock_t *rl = fenced_rl(5);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_neq(redlock_acquire_ex(rl, "fence:full", 3000, 0, &lk, &rep), REDLOCK_OK);
    cr_assert_null(lk);
    cr_assert(strstr(rep.message, "write-back"), "%s", rep.message);
    for (int i = 0; i < 3; i++) expect_counter(i, fk, "9223372036854775807");
    for (int i = 0; i < 5; i++) tc_del(&C, i, fk);
    redlock_free(rl);
}

/* ---- many clients at once ------------------------------------------------ */

static _Atomic uint64_t g_last; /* the token of the latest holder of fence:many */
static atomic_int g_bad;        /* holders whose token was not above the one before */

typedef struct contender {
    pthread_t th;
    redlock_t *rl;
    int n, failed;
} contender_t;

/* A thread's n acquires of fence:many, each checking its token against the
 * last holder's while it holds the lock (no assertions off the main thread). */
static void *contend(void *arg) {
    contender_t *c = arg;
    for (int i = 0; i < c->n; i++) {
        redlock_lock_t *lk = NULL;
        if (redlock_acquire_ex(c->rl, "fence:many", 3000, 20000, &lk, NULL) != REDLOCK_OK) {
            c->failed++;
            continue;
        }
        uint64_t f = redlock_lock_fence(lk);
        if (f <= atomic_exchange(&g_last, f)) atomic_fetch_add(&g_bad, 1);
        redlock_release(c->rl, lk);
    }
    return NULL;
}

Test(fence, tokens_strictly_increase_between_clients_of_many_threads) {
    /* counters above every clock, a different one on each node, so the tokens come from the
     * counters and their write-backs (not from the node clocks, which rise on their own) */
    enum { THREADS = 6, EACH = 20 };
    const uint64_t base = 8000000000000000ULL;
    for (int i = 0; i < 5; i++) {
        char v[32];
        snprintf(v, sizeof v, "%llu", (unsigned long long)(base + 1000u * (unsigned)i));
        cr_assert_eq(tc_set(&C, i, "fence:many:redlock:fence", v, 0), 0);
    }
    contender_t c[THREADS];
    for (int i = 0; i < THREADS; i++) {
        c[i] = (contender_t){.rl = fenced_rl(5), .n = EACH};
        cr_assert_eq(pthread_create(&c[i].th, NULL, contend, &c[i]), 0);
    }
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(c[i].th, NULL);
        failed += c[i].failed;
        redlock_free(c[i].rl);
    }
    cr_assert_eq(atomic_load(&g_bad), 0, "%d holders got a token not above the previous holder's", atomic_load(&g_bad));
    cr_assert_leq(failed, THREADS * EACH / 10, "%d of %d acquires failed", failed, THREADS * EACH);
    cr_assert_gt(atomic_load(&g_last), base, "the tokens came from the counters");
    for (int i = 0; i < 5; i++) tc_del(&C, i, "fence:many:redlock:fence");
}
