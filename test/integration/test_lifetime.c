/* test_lifetime.c -- lock lifetime against 5 real masters: the watchdog
 * (auto-extension, caps, loss detection), the validity check, reentrancy
 * and multi-resource locks. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(lifetime, .init = setup, .timeout = 120);

typedef struct lost_log {
    atomic_int calls;
    atomic_int reason;
    atomic_ullong at_us;
} lost_log_t;

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    lost_log_t *l = arg;
    cr_assert(redlock_lock_lost(lock));
    cr_assert_leq(redlock_lock_validity_ms(lock), 0);
    atomic_store(&l->reason, reason);
    atomic_store(&l->at_us, rt_now_us());
    atomic_fetch_add(&l->calls, 1);
}

Test(lifetime, watchdog_keeps_a_short_lock_held_while_a_competitor_fails) {
    /* the competitor waits up to 500 ms per node, so a scheduling stall on a
     * loaded machine (sanitizers) yields its real answer, not a timeout */
    redlock_options_t patient;
    rt_options(&patient);
    patient.op_timeout_ms = 500;
    redlock_t *rl = rt_new(&C, 5, NULL), *other = rt_new(&C, 5, &patient);
    redlock_lock_t *lk = NULL, *theirs = NULL;
    lost_log_t log = {0};
    cr_assert_eq(redlock_acquire(rl, "w:keep", 1000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_autoextend(rl, lk, NULL, on_lost, &log), REDLOCK_OK);
    uint64_t until = rt_now_us() + 5000000;
    int tries = 0;
    while (rt_now_us() < until) {
        int trc = redlock_try_acquire(other, "w:keep", 1000, &theirs);
        cr_assert_eq(trc, REDLOCK_ERR_TAKEN, "%s after %d tries", redlock_strerror(trc), tries);
        cr_assert(redlock_lock_valid(lk, 0), "lock expired while auto-extended");
        tries++;
        rt_sleep_ms(50);
    }
    cr_assert_gt(tries, 50);
    cr_assert_geq(redlock_lock_extensions(lk), 10, "1000 ms TTL over 5 s needs >= 10 extensions at TTL/3");
    cr_assert_eq(atomic_load(&log.calls), 0);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(other, "w:keep", 1000, &theirs), REDLOCK_OK);
    cr_assert_eq(redlock_release(other, theirs), REDLOCK_OK);
    redlock_free(rl);
    redlock_free(other);
}

Test(lifetime, watchdog_keeps_many_locks_and_stops_them_one_by_one) {
    /* 300 locks with a 1 s TTL, due together in batches: every one stays
     * valid for 3 s, each is extended about every 333 ms; releasing half
     * of them meanwhile (from this thread, while batches run) loses none */
    enum { K = 300 };
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 500; /* (a busy machine: the 300 locks' batches and the releases share the nodes) */
    redlock_t *rl = rt_new(&C, 5, &o);
    static redlock_lock_t *lk[K];
    lost_log_t log = {0};
    char res[32];
    for (int i = 0; i < K; i++) {
        snprintf(res, sizeof res, "w:many:%d", i);
        cr_assert_eq(redlock_acquire(rl, res, 1000, &lk[i]), REDLOCK_OK, "lock %d", i);
        cr_assert_eq(redlock_autoextend(rl, lk[i], NULL, on_lost, &log), REDLOCK_OK);
    }
    uint64_t start = rt_now_us();
    while (rt_now_us() - start < 3000000) {
        for (int i = 0; i < K; i++)
            if (lk[i]) cr_assert(redlock_lock_valid(lk[i], 0), "lock %d expired while auto-extended", i);
        rt_sleep_ms(20);
        int i = (int)((rt_now_us() - start) / 20000u); /* a release every 20 ms, the odd ones */
        if (i % 2 && i < K && lk[i]) {
            int rc = redlock_release(rl, lk[i]);
            cr_assert_eq(rc, REDLOCK_OK, "lock %d: %s", i, redlock_strerror(rc));
            lk[i] = NULL;
        }
    }
    cr_assert_eq(atomic_load(&log.calls), 0, "locks lost: %d", atomic_load(&log.calls));
    for (int i = 0; i < K; i++) {
        if (!lk[i]) continue;
        cr_assert_geq(redlock_lock_extensions(lk[i]), 6, "lock %d: %u extensions in 3 s", i,
                      redlock_lock_extensions(lk[i]));
        cr_assert_eq(redlock_release(rl, lk[i]), REDLOCK_OK, "lock %d", i);
    }
    redlock_free(rl);
}

Test(lifetime, takeover_on_a_majority_triggers_on_lost_within_an_extension_period) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    lost_log_t log = {0};
    cr_assert_eq(redlock_acquire(rl, "w:taken", 1500, &lk), REDLOCK_OK);
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.interval_ms = 300;
    cr_assert_eq(redlock_autoextend(rl, lk, &ao, on_lost, &log), REDLOCK_OK);
    rt_sleep_ms(400);
    uint64_t t = rt_now_us();
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, "w:taken", "foreign-token", 10000), 0);
    while (!atomic_load(&log.calls) && rt_now_us() - t < 3000000) rt_sleep_ms(10);
    cr_assert_eq(atomic_load(&log.calls), 1, "on_lost not called");
    cr_assert_eq(atomic_load(&log.reason), REDLOCK_ERR_NOT_HELD);
    uint64_t ms = (atomic_load(&log.at_us) - t) / 1000;
    cr_assert_lt(ms, 300 + 400, "on_lost came %llu ms after the takeover (interval 300 ms)", (unsigned long long)ms);
    cr_assert(redlock_lock_lost(lk));
    cr_assert(!redlock_lock_valid(lk, 0));
    cr_assert_leq(redlock_lock_validity_ms(lk), 0);
    rt_sleep_ms(700);
    cr_assert_eq(atomic_load(&log.calls), 1, "on_lost must be called once");
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_ERR_NOT_HELD);
    cr_assert_eq(tc_count_value(&C, "w:taken", "foreign-token"), 3, "release must not delete the new owner's keys");
    redlock_free(rl);
}

Test(lifetime, extension_stops_after_the_cap_then_the_lock_is_lost) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    lost_log_t log = {0};
    cr_assert_eq(redlock_acquire(rl, "w:cap", 600, &lk), REDLOCK_OK);
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.max_extensions = 2;
    cr_assert_eq(redlock_autoextend(rl, lk, &ao, on_lost, &log), REDLOCK_OK);
    uint64_t t = rt_now_us();
    while (!atomic_load(&log.calls) && rt_now_us() - t < 4000000) rt_sleep_ms(10);
    cr_assert_eq(atomic_load(&log.calls), 1, "lock never declared lost after the cap");
    cr_assert_eq(atomic_load(&log.reason), REDLOCK_ERR_EXPIRED);
    cr_assert_eq(redlock_lock_extensions(lk), 2);
    uint64_t ms = (atomic_load(&log.at_us) - t) / 1000;
    cr_assert(ms > 400 + 300 && ms < 2500, "lost after %llu ms: two 200 ms-spaced extensions of 600 ms",
              (unsigned long long)ms);
    rt_sleep_ms(50); /* the local deadline comes drift (8 ms) before the keys' own expiry */
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_pttl(&C, i, "w:cap"), -2, "node %d still holds the key", i);
    redlock_lock_free(lk);
    redlock_free(rl);
}

/* A 1100 ms cap on a 500 ms lock extended every 166 ms: the full
 * extensions end at about 1000 ms, and the last one is cut to end at the
 * cap, not left 100 ms short of it. */
Test(lifetime, hold_time_cap_bounds_the_total_hold) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    lost_log_t log = {0};
    uint64_t t = rt_now_us(); /* (before the acquire: the cap counts from its start) */
    cr_assert_eq(redlock_acquire(rl, "w:hold", 500, &lk), REDLOCK_OK);
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.max_hold_ms = 1100;
    cr_assert_eq(redlock_autoextend(rl, lk, &ao, on_lost, &log), REDLOCK_OK);
    while (!atomic_load(&log.calls) && rt_now_us() - t < 5000000) rt_sleep_ms(10);
    cr_assert_eq(atomic_load(&log.calls), 1);
    cr_assert_eq(atomic_load(&log.reason), REDLOCK_ERR_EXPIRED);
    uint64_t ms = (atomic_load(&log.at_us) - t) / 1000;
    cr_assert(ms >= 1050 && ms <= 1100 + 400, "lost %llu ms after the acquire with a 1100 ms cap",
              (unsigned long long)ms);
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(lifetime, watchdog_never_extends_an_expired_lock) {
    redlock_options_t o;
    rt_options(&o);
    o.drift_min_ms = 700; /* local validity ends ~300 ms before the keys expire */
    redlock_t *rl = rt_new(&C, 5, &o);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "w:expired", 1000, &lk), REDLOCK_OK);
    rt_sleep_ms(350);
    cr_assert_eq(redlock_autoextend(rl, lk, NULL, on_lost, NULL), REDLOCK_ERR_NOT_HELD);
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(lifetime, release_stops_the_watchdog) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    lost_log_t log = {0};
    for (int k = 0; k < 20; k++) { /* release racing an extension in progress */
        cr_assert_eq(redlock_acquire(rl, "w:stop", 300, &lk), REDLOCK_OK);
        redlock_autoextend_options_t ao;
        redlock_autoextend_options_init(&ao);
        ao.interval_ms = 5;
        cr_assert_eq(redlock_autoextend(rl, lk, &ao, on_lost, &log), REDLOCK_OK);
        rt_sleep_ms((unsigned)(k % 7));
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    }
    rt_sleep_ms(100); /* (a lost-lock callback after the releases would come meanwhile) */
    cr_assert_eq(atomic_load(&log.calls), 0);
    cr_assert_eq(tc_await_count(&C, "w:stop", NULL, 0), 0, "a release left the key");
    redlock_free(rl);
}

Test(lifetime, valid_honours_the_margin) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "w:margin", 1000, &lk), REDLOCK_OK);
    cr_assert(redlock_lock_valid(lk, 500));
    cr_assert(!redlock_lock_valid(lk, 990), "validity is at most TTL - drift (988 ms)");
    rt_sleep_ms(600);
    cr_assert(!redlock_lock_valid(lk, 500));
    cr_assert(redlock_lock_valid(lk, 100));
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert(!redlock_lock_valid(NULL, 0));
    redlock_free(rl);
}

/* ------------------------------------------------------------ reentrancy */

#ifndef RL_TEST_ASYNC /* re-entry is per thread: a blocking-API notion (asyncmode.h) */

static redlock_t *shared_rl;

static void *other_thread_acquire(void *arg) {
    redlock_lock_t *lk = NULL;
    *(int *)arg = redlock_try_acquire(shared_rl, "r:res", 5000, &lk);
    if (lk) redlock_release(shared_rl, lk);
    return NULL;
}

Test(lifetime, reentrant_acquire_needs_no_round_trip_and_counts_releases) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    shared_rl = rl;
    redlock_lock_t *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(redlock_acquire(rl, "r:res", 5000, &a), REDLOCK_OK);
    char token[41];
    strcpy(token, redlock_lock_token(a));
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_node_pause(&C, i), 0); /* no node can answer now */
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "r:res", 5000, 0, &b, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(b, a, "re-entry returns the held lock");
    cr_assert_eq(rep.yes, 0, "no round was sent");
    cr_assert_eq(redlock_try_acquire(rl, "r:res", 5000, &c), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, c), REDLOCK_OK); /* inner holds: no network */
    cr_assert_eq(redlock_release(rl, b), REDLOCK_OK);
    cr_assert(redlock_lock_valid(a, 0));
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_node_resume(&C, i), 0);
    /* (an acquire returns at its quorum: the rest are written meanwhile) */
    cr_assert_eq(tc_await_count(&C, "r:res", token, 5), 5, "inner releases must not touch the nodes");
    int other_rc = 0;
    pthread_t t;
    pthread_create(&t, NULL, other_thread_acquire, &other_rc);
    pthread_join(t, NULL);
    cr_assert_eq(other_rc, REDLOCK_ERR_TAKEN, "another thread is another owner");
    cr_assert_eq(redlock_release(rl, a), REDLOCK_OK); /* the last one releases on the nodes */
    cr_assert_eq(tc_await_count(&C, "r:res", token, 0), 0);
    cr_assert_eq(redlock_try_acquire(rl, "r:res", 5000, &a), REDLOCK_OK, "a fresh acquire after the last release");
    cr_assert_neq(strcmp(redlock_lock_token(a), token), 0);
    cr_assert_eq(redlock_release(rl, a), REDLOCK_OK);
    redlock_free(rl);
}

Test(lifetime, reentrancy_can_be_turned_off) {
    redlock_options_t o;
    rt_options(&o);
    o.reentrant = 0;
    redlock_t *rl = rt_new(&C, 5, &o);
    redlock_lock_t *a = NULL, *b = NULL;
    cr_assert_eq(redlock_acquire(rl, "r:off", 5000, &a), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(rl, "r:off", 5000, &b), REDLOCK_ERR_TAKEN);
    cr_assert_eq(redlock_release(rl, a), REDLOCK_OK);
    redlock_free(rl);
}
#endif

/* ------------------------------------------------------- multi-resource */

static const char *SET3[] = {"m:a", "m:b", "m:c"};

/* Number of nodes on which key holds token. */
/* The nodes holding key with token, once that is want (at most about 1 s
 * later: a call returns at its quorum, the rest are written meanwhile). */
static int holding(const char *key, const char *token, int want) {
    return tc_await_count(&C, key, token, want);
}

Test(lifetime, multi_resource_lock_takes_the_whole_set) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_multi(rl, SET3, 3, 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_lock_resource_count(lk), 3);
    for (size_t i = 0; i < 3; i++) cr_assert_str_eq(redlock_lock_resource_at(lk, i), SET3[i]);
    cr_assert_null(redlock_lock_resource_at(lk, 3));
    const char *tok = redlock_lock_token(lk);
    for (int k = 0; k < 3; k++) cr_assert_eq(holding(SET3[k], tok, 5), 5, "%s", SET3[k]);
    cr_assert_eq(redlock_extend(rl, lk, 9000), REDLOCK_OK);
    for (int k = 0; k < 3; k++) cr_assert_gt(tc_pttl(&C, 0, SET3[k]), 8000);
    /* one key of the set taken over on a majority: the set can no longer be extended */
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, "m:b", "foreign-token", 10000), 0);
    cr_assert_eq(redlock_extend(rl, lk, 9000), REDLOCK_ERR_NOT_HELD);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_ERR_NOT_HELD);
    rt_sleep_ms(30);
    cr_assert_eq(tc_count_value(&C, "m:b", "foreign-token"), 3, "another owner's key is never deleted");
    cr_assert_eq(tc_await_count(&C, "m:a", NULL, 0), 0, "our keys are deleted");
    redlock_free(rl);
}

Test(lifetime, multi_resource_is_all_or_nothing_on_each_node) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    /* m:b held elsewhere on 2 nodes (a minority): granted by the other 3, and
     * the 2 refusing nodes hold none of our keys */
    for (int i = 0; i < 2; i++) cr_assert_eq(tc_set(&C, i, "m:b", "foreign-token", 10000), 0);
    cr_assert_eq(redlock_acquire_multi(rl, SET3, 3, 5000, 0, &lk, NULL), REDLOCK_OK);
    const char *tok = redlock_lock_token(lk);
    cr_assert_eq(holding("m:a", tok, 3), 3);
    cr_assert_eq(holding("m:c", tok, 3), 3);
    for (int i = 0; i < 2; i++) {
        char *a = tc_get(&C, i, "m:a"), *c = tc_get(&C, i, "m:c");
        cr_assert(!a && !c, "node %d took part of the set", i);
    }
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    rt_sleep_ms(30);
    cr_assert_eq(tc_count_value(&C, "m:b", "foreign-token"), 2);
    /* held on 3 nodes (a majority): refused as TAKEN and nothing of ours stays anywhere */
    cr_assert_eq(tc_set(&C, 2, "m:b", "foreign-token", 10000), 0);
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_multi(rl, SET3, 3, 5000, 0, &lk, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    for (int tries = 0; tries < 50; tries++) {
        int left = 0;
        for (int i = 0; i < 5; i++) left += tc_pttl(&C, i, "m:a") != -2 || tc_pttl(&C, i, "m:c") != -2;
        if (!left) break;
        cr_assert_lt(tries, 49, "keys of a refused set left on %d nodes", left);
        rt_sleep_ms(10);
    }
    redlock_free(rl);
}

Test(lifetime, multi_resource_rejects_bad_sets) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    const char *dup[] = {"m:x", "m:y", "m:x"};
    cr_assert_eq(redlock_acquire_multi(rl, dup, 3, 5000, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "m:x") && strstr(rep.message, "twice"), "%s", rep.message);
    cr_assert_eq(redlock_acquire_multi(rl, dup, 0, 5000, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_acquire_multi(rl, NULL, 2, 5000, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    const char *withnull[] = {"m:x", NULL};
    cr_assert_eq(redlock_acquire_multi(rl, withnull, 2, 5000, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    redlock_free(rl);
}
