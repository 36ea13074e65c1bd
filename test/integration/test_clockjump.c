/* test_clockjump.c -- clock-jump detection against real masters.
 *
 * SIMULATED: Debian's redis-server cannot run under libfaketime, so a node's
 * clock jump is simulated by test/support/timeproxy, which sits between the
 * library and one real node and adds an offset to that node's TIME replies
 * only. The node's real clock does not move; where a test needs the effect of
 * a forward step on the node's keys (they expire early), it also rewrites
 * their TTLs (PEXPIRE to PTTL - step), as doc/design.md, "Testing" prescribes.
 * What is tested is that the library notices the step, refuses the node's
 * vote in acquires for max_ttl_ms, says so in the report, and releases the
 * grant it got there. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"
#include "timeproxy.h"

static tc_cluster_t C;
static tp_proxy_t *P;

static void setup(void) {
    rt_setup(&C);
    P = tp_start(C.port[0]);
    cr_assert_not_null(P, "cannot start the TIME proxy");
}

static void teardown(void) {
    tp_stop(P);
    P = NULL;
}

TestSuite(clockjump, .init = setup, .fini = teardown, .timeout = 60);

/* A client over nodes 0..n-1, node i reached through proxy px[i] where
 * that is set. */
static redlock_t *client_via(size_t n, tp_proxy_t *const *px, uint32_t max_ttl_ms, uint32_t jump_ms,
                             uint32_t check_ms) {
    char proxied[TC_MAX_NODES][64];
    const char *uris[TC_MAX_NODES];
    for (size_t i = 0; i < n; i++) {
        snprintf(proxied[i], sizeof proxied[i], "redis://127.0.0.1:%d", px[i] ? tp_port(px[i]) : 0);
        uris[i] = px[i] ? proxied[i] : C.uri[i];
    }
    redlock_options_t o;
    rt_options(&o);
    o.nodes = uris;
    o.n_nodes = n;
    o.max_ttl_ms = max_ttl_ms;
    o.quarantine = 0; /* the fixture's nodes may have just started: only the clock is under test */
    o.clock_jump_ms = jump_ms;
    o.clock_check_ms = check_ms;
    o.op_timeout_ms = 800; /* the proxy answers one command at a time; slow under valgrind */
    o.node_down_ms = 3000;
    redlock_t *rl = NULL;
    char err[256];
    int rc = redlock_new_ex(&rl, &o, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_new: %s", err);
    return rl;
}

/* A client over the proxied node 0 and then real nodes 1..n-1. */
static redlock_t *client(size_t n, uint32_t max_ttl_ms, uint32_t jump_ms, uint32_t check_ms) {
    tp_proxy_t *px[TC_MAX_NODES] = {P};
    return client_via(n, px, max_ttl_ms, jump_ms, check_ms);
}

/* Acquires and releases res; returns the acquire's code, report in *rep. */
static int cycle(redlock_t *rl, const char *res, redlock_report_t *rep) {
    redlock_lock_t *l = NULL;
    int rc = redlock_acquire_ex(rl, res, 1000, 0, &l, rep);
    if (rc == REDLOCK_OK) cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    return rc;
}

/* The jump in ms quoted by a "quarantined (clock jumped %+d ms, ...)" detail,
 * or 0 when the detail does not say that. */
static long quoted_jump(const char *detail) {
    const char *p = strstr(detail, "quarantined (clock jumped ");
    return p ? strtol(p + 26, NULL, 10) : 0;
}

/* One node whose clock steps by offset_ms: refused at once (the sample goes
 * ahead of the grant), the grant released, granted again after max_ttl_ms. */
static void jump_quarantines(long offset_ms) {
    const uint32_t MAX_TTL = 1500;
    redlock_t *rl = client(1, MAX_TTL, 100, 0);
    redlock_report_t rep;
    cr_assert_eq(cycle(rl, "cj:a", &rep), REDLOCK_OK, "%s", rep.message);
    long before = tp_time_count(P);
    tp_set_offset_ms(P, offset_ms);

    uint64_t t = rt_now_us();
    int rc = cycle(rl, "cj:a", &rep);
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM, "granted by a node whose clock jumped: %s (%s)", redlock_strerror(rc),
                 rep.nodes[0].detail);
    cr_assert_gt(tp_time_count(P), before, "no TIME sample was taken");
    cr_assert_eq(rep.nodes[0].vote, REDLOCK_VOTE_DOWN);
    cr_assert_eq(rep.nodes[0].err, REDLOCK_ERR_QUARANTINED);
    long q = quoted_jump(rep.nodes[0].detail);
    /* the quoted jump is the step less the sampling uncertainty (round trips; long under valgrind) */
    cr_assert(labs(q) <= labs(offset_ms) && labs(q) >= labs(offset_ms) / 2 && (q > 0) == (offset_ms > 0),
              "report says '%s' for a %+ld ms step", rep.nodes[0].detail, offset_ms);
    /* the refused grant's clean-up goes out unwaited: give it a moment */
    char *left = tc_get(&C, 0, "cj:a");
    for (int tries = 0; left && tries < 100; tries++) {
        free(left);
        rt_sleep_ms(10);
        left = tc_get(&C, 0, "cj:a");
    }
    cr_assert_null(left, "the refused grant was left on the node");

    int got = 0;
    while (!got && rt_now_us() - t < (MAX_TTL + 3000) * 1000ull) {
        rc = cycle(rl, "cj:a", &rep);
        if (rc == REDLOCK_OK) break;
        cr_assert_eq(rep.nodes[0].err, REDLOCK_ERR_QUARANTINED, "%s", rep.nodes[0].detail);
        rt_sleep_ms(50);
    }
    uint64_t at_ms = (rt_now_us() - t) / 1000;
    cr_assert_eq(rc, REDLOCK_OK, "still refused %llu ms after the jump", (unsigned long long)at_ms);
    cr_assert_geq(at_ms, MAX_TTL - 50, "quarantine ended after %llu ms, before max_ttl_ms", (unsigned long long)at_ms);
    redlock_free(rl);
}

Test(clockjump, forward_step_quarantines_the_node_for_max_ttl) {
    jump_quarantines(5000);
}

Test(clockjump, backward_step_quarantines_the_node_too) {
    jump_quarantines(-5000);
}

Test(clockjump, without_detection_the_step_goes_unseen) {
    redlock_t *rl = client(1, 1500, 0, 0); /* clock_jump_ms = 0: off */
    redlock_report_t rep;
    cr_assert_eq(cycle(rl, "cj:b", &rep), REDLOCK_OK, "%s: %s", rep.message, rep.nodes[0].detail);
    tp_set_offset_ms(P, 5000);
    cr_assert_eq(cycle(rl, "cj:b", &rep), REDLOCK_OK, "%s: %s", rep.message, rep.nodes[0].detail);
    cr_assert_eq(tp_time_count(P), 0, "TIME was sampled although detection is off");
    redlock_free(rl);
}

Test(clockjump, a_step_below_the_threshold_is_not_a_jump) {
    redlock_t *rl = client(1, 1500, 100, 0);
    redlock_report_t rep;
    cr_assert_eq(cycle(rl, "cj:c", &rep), REDLOCK_OK, "%s", rep.message);
    tp_set_offset_ms(P, 30);
    for (int i = 0; i < 20; i++) cr_assert_eq(cycle(rl, "cj:c", &rep), REDLOCK_OK, "%s", rep.nodes[0].detail);
    cr_assert_geq(tp_time_count(P), 20, "TIME was not sampled on every acquire");
    redlock_free(rl);
}

Test(clockjump, a_minority_with_a_jumped_clock_leaves_the_quorum_intact) {
    redlock_t *rl = client(3, 1500, 100, 0);
    redlock_report_t rep;
    cr_assert_eq(cycle(rl, "cj:d", &rep), REDLOCK_OK, "%s", rep.message);
    /* the round ended at the quorum: wait until node 0 answered its first sample (the
     * baseline; samples are compared in the order they were answered) */
    for (int i = 0; i < 500 && tp_time_count(P) < 1; i++) rt_sleep_ms(10);
    cr_assert_geq(tp_time_count(P), 1, "node 0 never answered TIME");
    tp_set_offset_ms(P, 3000);
    /* The round may end at the quorum before node 0 (behind the proxy) answers,
     * so its vote can be missing from a report; but its TIME reply always comes
     * before its grant (one connection, in order), so it never votes yes again,
     * and once the jump is known it is refused at once. */
    int seen = 0;
    for (uint64_t t = rt_now_us(); !seen && rt_now_us() - t < 5000000u; rt_sleep_ms(10)) {
        cr_assert_eq(cycle(rl, "cj:d", &rep), REDLOCK_OK, "%s", rep.message);
        cr_assert_neq(rep.nodes[0].vote, REDLOCK_VOTE_YES, "node 0 granted after its clock jumped");
        cr_assert_eq(rep.nodes[1].vote, REDLOCK_VOTE_YES);
        cr_assert_eq(rep.nodes[2].vote, REDLOCK_VOTE_YES);
        seen = rep.nodes[0].err == REDLOCK_ERR_QUARANTINED;
    }
    cr_assert(seen, "node 0 was never reported quarantined: %s", rep.nodes[0].detail);
    cr_assert_gt(quoted_jump(rep.nodes[0].detail), 1500, "%s", rep.nodes[0].detail);
    redlock_free(rl);
}

Test(clockjump, samples_are_rate_limited_by_clock_check_ms) {
    redlock_t *rl = client(1, 1500, 100, 400);
    redlock_report_t rep;
    uint64_t t = rt_now_us();
    for (int i = 0; i < 10; i++) cr_assert_eq(cycle(rl, "cj:e", &rep), REDLOCK_OK, "%s", rep.message);
    long n = tp_time_count(P);
    if (rt_now_us() - t < 350000) /* nearly always: ten local cycles take a few ms */
        cr_assert_eq(n, 1, "%ld TIME samples in under 400 ms (only the one on connect expected)", n);
    tp_set_offset_ms(P, 2000);
    rt_sleep_ms(450); /* the next acquire samples again and sees the step */
    cr_assert_eq(cycle(rl, "cj:e", &rep), REDLOCK_ERR_NO_QUORUM, "%s", rep.message);
    cr_assert_eq(rep.nodes[0].err, REDLOCK_ERR_QUARANTINED, "%s", rep.nodes[0].detail);
    redlock_free(rl);
}

/* Simulates a forward clock step of step_ms on node i for key: the proxy
 * shifts the node's TIME, and the key's TTL is cut by the step, which is
 * what the node's own expiry would do (PEXPIRE to PTTL - step; a result at
 * or below zero deletes the key). */
static void step_forward(tp_proxy_t *px, int i, const char *key, long step_ms) {
    tp_set_offset_ms(px, step_ms);
    long long pttl = tc_pttl(&C, i, key);
    cr_assert_gt(pttl, 0, "node %d: no lock key to age (PTTL %lld)", i, pttl);
    cr_assert_eq(tc_redis_cmd(&C, i, "PEXPIRE %s %lld", key, pttl - step_ms), 0);
}

Test(clockjump, majority_stepping_forward_would_let_a_second_holder_in) {
    /* A holds a lock on 3 nodes; the clocks of nodes 0 and 1 step 10 s forward,
     * so A's keys there expire at once. A second client without detection takes
     * the lock: two holders. One with detection (and a sample of each node from
     * before the step) refuses both nodes and is not let in. */
    tp_proxy_t *p1 = tp_start(C.port[1]);
    cr_assert_not_null(p1);
    tp_proxy_t *px[3] = {P, p1, NULL};
    redlock_t *a = client_via(3, px, 5000, 100, 0), *naive = client_via(3, px, 5000, 0, 0),
              *guarded = client_via(3, px, 5000, 100, 0);
    redlock_report_t rep;
    cr_assert_eq(cycle(guarded, "cj:warm", &rep), REDLOCK_OK, "%s", rep.message); /* its baseline samples */
    for (int i = 0; i < 500 && (tp_time_count(P) < 2 || tp_time_count(p1) < 2); i++) rt_sleep_ms(10);
    cr_assert(tp_time_count(P) >= 2 && tp_time_count(p1) >= 2, "the proxied nodes never answered TIME");
    redlock_lock_t *la = NULL, *lb = NULL;
    cr_assert_eq(redlock_acquire_ex(a, "cj:f", 4000, 0, &la, &rep), REDLOCK_OK, "%s", rep.message);
    for (int i = 0; i < 100 && tc_count_value(&C, "cj:f", redlock_lock_token(la)) < 3; i++) rt_sleep_ms(20);
    cr_assert_eq(tc_count_value(&C, "cj:f", redlock_lock_token(la)), 3, "A's lock is not on all 3 nodes");
    step_forward(P, 0, "cj:f", 10000);
    step_forward(p1, 1, "cj:f", 10000);

    int rc = redlock_acquire_ex(guarded, "cj:f", 4000, 0, &lb, &rep);
    cr_assert_neq(rc, REDLOCK_OK, "a second holder was let in by nodes whose clocks stepped");
    /* the round may be decided before both stepped nodes are heard from */
    cr_assert(rep.nodes[0].err == REDLOCK_ERR_QUARANTINED || rep.nodes[1].err == REDLOCK_ERR_QUARANTINED,
              "node 0: %s; node 1: %s", rep.nodes[0].detail, rep.nodes[1].detail);
    cr_assert(rep.nodes[0].vote != REDLOCK_VOTE_YES && rep.nodes[1].vote != REDLOCK_VOTE_YES);
    /* the grants it got there are released (the release may still be on its way) */
    int left = 2;
    for (int i = 0; i < 100 && left; i++, rt_sleep_ms(10)) {
        char *v0 = tc_get(&C, 0, "cj:f"), *v1 = tc_get(&C, 1, "cj:f");
        left = (v0 != NULL) + (v1 != NULL);
        free(v0);
        free(v1);
    }
    cr_assert_eq(left, 0, "a refused grant was left on a stepped node");

    rc = redlock_acquire_ex(naive, "cj:f", 4000, 0, &lb, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "without detection the stepped nodes should grant: %s", rep.message);
    cr_assert_gt(redlock_lock_validity_ms(la), 0, "A still believes it holds the lock: two holders");
    cr_assert_eq(redlock_release(naive, lb), REDLOCK_OK);
    redlock_release(a, la); /* NOT_HELD on the stepped nodes is expected */
    redlock_free(a);
    redlock_free(naive);
    redlock_free(guarded);
    tp_stop(p1);
}
