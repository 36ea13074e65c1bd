/* test_lockdelay.c -- lock_delay_ms against 5 real masters
 * (doc/safety.md, "Lock-delay"): a lock abandoned by its holder (freed,
 * not released) is refused to everyone for the delay after its keys
 * expire, saying so, and granted once it has passed; a waiter sleeps
 * until the delay ends (no polls) and is granted right after it, not
 * before; a released lock is granted at once;
 * an extend keeps the marker a delay beyond the lock; the other kinds of
 * lock refuse the option. Built twice: blocking, and through the async
 * API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(lockdelay, .init = setup, .timeout = 120);

#define DELAY_MS 1500
#define MARKER(res) res ":redlock:delay"

/* A handle over the 5 nodes with a lock-delay of delay_ms. */
static redlock_t *delayed(uint32_t delay_ms) {
    redlock_options_t o;
    rt_options(&o);
    o.lock_delay_ms = delay_ms;
    return rt_new(&C, 5, &o);
}

/* Waits (at most 10 s) until no node holds key; returns when that was
 * seen (µs), or 0. */
static uint64_t await_gone(const char *key) {
    for (int t = 0; t < 2000; t++) {
        if (tc_count_value(&C, key, NULL) == 0) return rt_now_us();
        rt_sleep_ms(5);
    }
    return 0;
}

/* 1 when a node's detail in rep says what. */
static int said(const redlock_report_t *rep, const char *what) {
    for (size_t i = 0; i < rep->n_nodes; i++)
        if (strstr(rep->nodes[i].detail, what)) return 1;
    return 0;
}

/* Releases lk through rl: no node may keep its marker (a release returns
 * at its quorum: the other nodes are waited for, bounded). */
static void release_cleanly(redlock_t *rl, redlock_lock_t *lk, const char *marker) {
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(tc_await_count(&C, marker, NULL, 0), 0, "the release left markers");
}

/* Takes res for ttl_ms through rl and abandons it (frees the lock object
 * without a release, as a holder that died would); returns when its keys
 * were seen to expire. */
static uint64_t abandon(redlock_t *rl, const char *res, uint32_t ttl_ms) {
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire_ex(rl, res, ttl_ms, 0, &lk, NULL), REDLOCK_OK);
    redlock_lock_free(lk);
    uint64_t gone = await_gone(res);
    cr_assert_gt(gone, 0, "the abandoned lock's keys did not expire");
    return gone;
}

Test(lockdelay, an_abandoned_lock_is_refused_for_the_delay_after_its_expiry) {
    redlock_t *a = delayed(DELAY_MS), *b = delayed(DELAY_MS);
    uint64_t expired = abandon(a, "ld:abandoned", 400);
    cr_assert_geq(tc_count_value(&C, MARKER("ld:abandoned"), NULL), 3, "no marker outlived the abandoned lock");
    uint64_t now = rt_now_us();
    if (now < expired + 500000) rt_sleep_ms((unsigned)((expired + 500000 - now) / 1000));
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(b, "ld:abandoned", 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN, "0.5 s after the expiry: %s (%s)", redlock_strerror(rc), rep.message);
    cr_assert(said(&rep, "lock-delay: the previous holder's lock expired"), "no node said why: %s", rep.message);
    cr_assert_eq(tc_count_value(&C, "ld:abandoned", NULL), 0, "the refused attempt left keys");
    cr_assert_gt(await_gone(MARKER("ld:abandoned")), 0, "the markers did not expire");
    rc = redlock_acquire_ex(b, "ld:abandoned", 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "after the delay: %s (%s)", redlock_strerror(rc), rep.message);
    release_cleanly(b, lk, MARKER("ld:abandoned"));
    redlock_free(a);
    redlock_free(b);
}

Test(lockdelay, a_released_lock_is_granted_at_once) {
    redlock_t *a = delayed(DELAY_MS), *b = delayed(DELAY_MS);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire_ex(a, "ld:released", 5000, 0, &lk, NULL), REDLOCK_OK);
    cr_assert_geq(tc_await_count(&C, MARKER("ld:released"), NULL, 5), 3, "no markers beside the lock");
    cr_assert_eq(redlock_release(a, lk), REDLOCK_OK);
    redlock_report_t rep;
    int rc = redlock_acquire_ex(b, "ld:released", 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "right after a release: %s (%s)", redlock_strerror(rc), rep.message);
    release_cleanly(b, lk, MARKER("ld:released"));
    redlock_free(a);
    redlock_free(b);
}

Test(lockdelay, a_waiter_is_granted_right_after_the_delay_not_before) {
    redlock_options_t o;
    rt_options(&o);
    o.lock_delay_ms = DELAY_MS;
    o.retry_count = 3; /* polling at the retry delay would spend them long before the delay ends */
    redlock_t *a = delayed(DELAY_MS), *b = rt_new(&C, 5, &o);
    uint64_t t0 = rt_now_us(); /* before the abandoned lock's SETs reached any node */
    uint64_t expired = abandon(a, "ld:waited", 300);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(b, "ld:waited", 5000, 10000, &lk, &rep);
    uint64_t granted = rt_now_us();
    cr_assert_eq(rc, REDLOCK_OK, "%s (%s)", redlock_strerror(rc), rep.message);
    cr_assert_leq(rep.attempts, 3, "%u attempts: the waiter polled instead of sleeping until the delay ended",
                  rep.attempts);
    /* Each node's marker outlives its key by the delay, and no key was set
     * before t0: no grant before t0 + TTL + delay (the polled expiry may be
     * seen late on a busy machine, so it bounds only the other side). */
    uint64_t since_ms = (granted - t0) / 1000, after_ms = (granted - expired) / 1000;
    cr_assert_geq(since_ms, 300 + DELAY_MS - 2,
                  "granted %llu ms after the abandoned acquire began, inside its 300 ms TTL and the %d ms delay",
                  (unsigned long long)since_ms, DELAY_MS);
    cr_assert_lt(after_ms, DELAY_MS + 3000, "granted only %llu ms after the expiry (delay %d ms)",
                 (unsigned long long)after_ms, DELAY_MS);
    cr_assert_eq(redlock_release(b, lk), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
}

Test(lockdelay, an_extend_keeps_the_marker_a_delay_beyond_the_lock) {
    redlock_t *a = delayed(DELAY_MS);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire_ex(a, "ld:extended", 500, 0, &lk, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_extend(a, lk, 4000), REDLOCK_OK);
    int longer = 0;
    for (int t = 0; t < 100 && longer < 5; t++) { /* (the extend returns at its quorum) */
        if (t) rt_sleep_ms(10);
        longer = 0;
        for (int i = 0; i < 5; i++) longer += tc_pttl(&C, i, MARKER("ld:extended")) > 4000 + DELAY_MS - 1000;
    }
    cr_assert_eq(longer, 5, "%d of 5 markers outlive the extended lock by the delay", longer);
    release_cleanly(a, lk, MARKER("ld:extended"));
    redlock_free(a);
}

Test(lockdelay, permits_and_readers_refuse_it) {
    redlock_t *a = delayed(DELAY_MS);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire_permit(a, "ld:permit", 3, 5000, 0, &lk, NULL), REDLOCK_ERR_CONFIG);
    cr_assert_eq(redlock_acquire_shared(a, "ld:shared", 5000, 0, &lk, NULL), REDLOCK_ERR_CONFIG);
    cr_assert_eq(tc_count_value(&C, "ld:permit:permit:0", NULL), 0);
    cr_assert_eq(tc_count_value(&C, "ld:shared", NULL), 0);
    redlock_free(a);
}

#ifndef RL_TEST_ASYNC
Test(lockdelay, sets_and_fencing_refuse_it_and_say_which) {
    redlock_t *a = delayed(DELAY_MS);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    const char *set[2] = {"ld:set1", "ld:set2"};
    cr_assert_eq(redlock_acquire_multi(a, set, 2, 5000, 0, &lk, &rep), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(rep.message, "sets of resources"), "%s", rep.message);
    cr_assert_eq(redlock_acquire_permit(a, "ld:permit", 3, 5000, 0, &lk, &rep), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(rep.message, "lock_delay_ms=1500: permits"), "%s", rep.message);
    redlock_free(a);
    redlock_options_t o;
    rt_options(&o);
    o.lock_delay_ms = DELAY_MS;
    o.fencing = 1;
    char err[256] = "";
    redlock_t *f = NULL;
    cr_assert_eq(rt_try_new(&C, 5, &o, &f, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "fencing"), "%s", err);
    o.fencing = 0;
    o.lock_delay_ms = 3600001;
    cr_assert_eq(rt_try_new(&C, 5, &o, &f, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "lock_delay_ms=3600001"), "%s", err);
}
#endif
