/* test_silent.c -- a silent minority (doc/design.md) against real
 * redis-server processes: a node paused with SIGSTOP (its TCP stays up, it
 * answers nothing) is waited for once, then suspect and skipped until a
 * probe answers; after SIGCONT it rejoins within a probe interval; a round
 * whose outcome is known does not wait for it; split votes are counted.
 * Built twice: blocking, and through the async API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

/* Resumes every node (a failed assertion leaves none paused for the next test). */
static void teardown(void) {
    for (int i = 0; i < 5; i++) tc_node_resume(&C, i);
}

TestSuite(silent, .init = setup, .fini = teardown, .timeout = 120);

/* Options: the given op timeout, retries and grace (in round trips, see
 * grace_rtts), probes every 20..100 ms; silent_rl_retries: the default
 * grace; silent_rl: 3 retries. */
static redlock_t *silent_rl_grace(uint32_t op_timeout_ms, uint32_t retries, uint32_t grace_rtts) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = op_timeout_ms;
    o.retry_count = retries;
    o.probe_min_ms = 20;
    o.probe_max_ms = 100;
    o.grace_rtts = grace_rtts;
    return rt_new(&C, 5, &o);
}

static redlock_t *silent_rl_retries(uint32_t op_timeout_ms, uint32_t retries) {
    redlock_options_t o;
    redlock_options_init(&o);
    return silent_rl_grace(op_timeout_ms, retries, o.grace_rtts);
}

static redlock_t *silent_rl(uint32_t op_timeout_ms) {
    return silent_rl_retries(op_timeout_ms, 3);
}

/* One acquire + release of res; returns node's vote in the acquire and
 * its error in *err. */
static redlock_vote_t cycle(redlock_t *rl, const char *res, size_t node, int *err, char *detail, size_t n) {
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, res, 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "a minority is paused: %s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    *err = rep.nodes[node].err;
    if (detail) snprintf(detail, n, "%s", rep.nodes[node].detail);
    return rep.nodes[node].vote;
}

Test(silent, a_paused_node_is_skipped_after_its_first_timeout) {
    redlock_t *rl = silent_rl(200);
    int err;
    cycle(rl, "silent:warm", 2, &err, NULL, 0); /* connected, scripts loaded */
    cr_assert_eq(tc_node_pause(&C, 2), 0);
    /* A quorum of the others grants at once; node 2's request times out
     * behind the rounds and makes it suspect. From then on every round
     * skips it: a suspect vote, with no request sent and none waited for. */
    int suspect = 0;
    char detail[256] = "";
    uint64_t until = rt_now_us() + 5000000;
    while (!suspect && rt_now_us() < until) {
        suspect =
            cycle(rl, "silent:res", 2, &err, detail, sizeof detail) == REDLOCK_VOTE_DOWN && err == REDLOCK_ERR_SUSPECT;
        rt_sleep_ms(5);
    }
    cr_assert(suspect, "the paused node never became suspect: last detail '%s'", detail);
#ifndef RL_TEST_ASYNC /* (the async report's detail is the error's text) */
    cr_assert(strstr(detail, "suspect") && strstr(detail, "no reply within"), "detail: '%s'", detail);
#endif
    redlock_stats_t s0, s1;
    cr_assert_eq(redlock_stats(rl, &s0), REDLOCK_OK);
    for (int k = 0; k < 30; k++) {
        cr_assert_eq(cycle(rl, "silent:res", 2, &err, detail, sizeof detail), REDLOCK_VOTE_DOWN, "cycle %d", k);
        cr_assert_eq(err, REDLOCK_ERR_SUSPECT, "cycle %d: %s", k, detail);
    }
    cr_assert_eq(redlock_stats(rl, &s1), REDLOCK_OK);
    const redlock_node_stats_t *a = &s0.nodes[2], *b = &s1.nodes[2];
    cr_assert_eq(b->timeout, a->timeout, "a suspect node was waited for again: %llu more timeouts",
                 (unsigned long long)(b->timeout - a->timeout));
    cr_assert_geq(b->suspect - a->suspect, 30, "suspect votes: %llu", (unsigned long long)(b->suspect - a->suspect));
    cr_assert_eq(b->suspected, 1, "it became suspect once (suspected %llu)", (unsigned long long)b->suspected);
    cr_assert_gt(b->probes, 0, "no probe was sent");
    cr_assert_eq(b->yes, a->yes, "a paused node cannot vote yes");
    for (int i = 0; i < 5; i++)
        if (i != 2) cr_assert_eq(s1.nodes[i].suspect + s1.nodes[i].timeout, 0, "healthy node %d", i);
    cr_assert_eq(tc_node_resume(&C, 2), 0);
    redlock_free(rl);
}

Test(silent, a_resumed_node_rejoins_within_one_probe_interval) {
    redlock_t *rl = silent_rl(200);
    int err;
    cr_assert_eq(tc_node_pause(&C, 3), 0);
    uint64_t until = rt_now_us() + 5000000;
    while (rt_now_us() < until &&
           !(cycle(rl, "silent:back", 3, &err, NULL, 0) == REDLOCK_VOTE_DOWN && err == REDLOCK_ERR_SUSPECT))
        rt_sleep_ms(5);
    cr_assert_eq(err, REDLOCK_ERR_SUSPECT, "node 3 never became suspect");
    rt_sleep_ms(1000); /* long enough for the probe backoff to reach its cap (100 ms) */
    cr_assert_eq(cycle(rl, "silent:back", 3, &err, NULL, 0), REDLOCK_VOTE_DOWN, "still paused");
    cr_assert_eq(tc_node_resume(&C, 3), 0);
    uint64_t t0 = rt_now_us();
    redlock_vote_t v = REDLOCK_VOTE_NONE;
    /* a probe (PING within op + connect timeouts) goes at most every 100 ms */
    while (rt_now_us() - t0 < 3000000 && (v = cycle(rl, "silent:back", 3, &err, NULL, 0)) != REDLOCK_VOTE_YES)
        rt_sleep_ms(2);
    uint64_t ms = (rt_now_us() - t0) / 1000;
    cr_assert_eq(v, REDLOCK_VOTE_YES, "node 3 did not rejoin within 3 s of SIGCONT (vote %d, err %d)", v, err);
    /* one probe interval (100 ms) plus one probe's own deadline (300 ms), with room for a slow machine */
    cr_assert_lt(ms, 1500, "rejoined %llu ms after SIGCONT", (unsigned long long)ms);
    redlock_free(rl);
}

Test(silent, a_waiting_acquire_does_not_wait_for_a_silent_node_once_refused) {
    /* op_timeout 1 s: a round that waited for the paused node would take
     * it. Another client holds the key on the live nodes for 400 ms (set
     * one node after another: a retry at the first expiry may come early,
     * so the waiter has retries to spare). */
    redlock_t *rl = silent_rl_retries(1000, 100);
    redlock_lock_t *lk = NULL;
    int err;
    cycle(rl, "silent:wait:warm", 1, &err, NULL, 0); /* connected, scripts loaded */
    cr_assert_eq(tc_node_pause(&C, 1), 0);
    for (int i = 0; i < 5; i++)
        if (i != 1) cr_assert_eq(tc_set(&C, i, "silent:wait", "another-client", 400), 0);
    /* Every attempt hears the live nodes out (four refusals settle that
     * no quorum is possible, and say when the holder's key expires), then
     * waits only a short grace for node 1, never its 1 s timeout. */
    redlock_report_t rep;
    uint64_t t0 = rt_now_us();
    int rc = redlock_acquire_ex(rl, "silent:wait", 5000, 5000, &lk, &rep);
    uint64_t ms = (rt_now_us() - t0) / 1000;
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    cr_assert_lt(ms, 950, "granted after %llu ms: the attempt waited for the paused node", (unsigned long long)ms);
    cr_assert_neq(rep.nodes[1].vote, REDLOCK_VOTE_YES);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(tc_node_resume(&C, 1), 0);
    redlock_free(rl);
}

Test(silent, a_refused_attempt_reports_the_unheard_node_as_not_waited_for) {
    redlock_t *holder = silent_rl(1000), *rl = silent_rl(1000);
    redlock_lock_t *held = NULL, *lk = NULL;
    cr_assert_eq(redlock_try_acquire(holder, "silent:why", 10000, &held), REDLOCK_OK);
    int err;
    cycle(rl, "silent:why:warm", 4, &err, NULL, 0);
    cr_assert_eq(tc_node_pause(&C, 4), 0);
    redlock_report_t rep;
    uint64_t t0 = rt_now_us();
    int rc = redlock_acquire_ex(rl, "silent:why", 5000, 300, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_lt((rt_now_us() - t0) / 1000, 950, "a refused wait of 300 ms outlasted the node's 1 s timeout");
    cr_assert(rep.nodes[4].vote == REDLOCK_VOTE_NONE || rep.nodes[4].err == REDLOCK_ERR_SUSPECT ||
                  rep.nodes[4].vote == REDLOCK_VOTE_TIMEOUT,
              "node 4: vote %d", rep.nodes[4].vote);
#ifndef RL_TEST_ASYNC
    cr_assert(rep.nodes[4].detail[0], "node 4's vote says nothing of why");
#endif
    redlock_lock_free(held);
    cr_assert_eq(tc_node_resume(&C, 4), 0);
    redlock_free(holder);
    redlock_free(rl);
}

Test(silent, a_split_vote_is_counted) {
    /* Another client holds the key on nodes 0 and 1, node 4 is paused
     * and suspect: an attempt gets yes from 2 and 3, no from 0 and 1.
     * Once 0 and 1 said no the outcome is known, and a round waits for
     * the rest only its grace, a few round trips: here up to the op
     * timeout, 1 s, so that 2's and 3's yes are heard however slowly
     * they come (valgrind on a busy machine: after 2.2 ms, past a grace
     * of four round trips). */
    redlock_t *rl = silent_rl_grace(1000, 3, 1000);
    int err;
    cr_assert_eq(tc_node_pause(&C, 4), 0);
    uint64_t until = rt_now_us() + 20000000;
    while (rt_now_us() < until &&
           !(cycle(rl, "silent:split:warm", 4, &err, NULL, 0) == REDLOCK_VOTE_DOWN && err == REDLOCK_ERR_SUSPECT))
        rt_sleep_ms(5);
    cr_assert_eq(err, REDLOCK_ERR_SUSPECT, "node 4 never became suspect");
    for (int i = 0; i < 2; i++) cr_assert_eq(tc_set(&C, i, "silent:split", "another-client", 30000), 0);
    redlock_stats_t s0, s1;
    cr_assert_eq(redlock_stats(rl, &s0), REDLOCK_OK);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "silent:split", 5000, 0, &lk, &rep), REDLOCK_ERR_NO_QUORUM, "%s", rep.message);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rep.nodes[i].vote, i < 2 ? REDLOCK_VOTE_NO : REDLOCK_VOTE_YES, "node %d: vote %d (%s); %s", i,
                     rep.nodes[i].vote, rep.nodes[i].detail, rep.message);
    /* a waiting acquire backs off a fraction of a round trip after each split, not the retry delay */
    cr_assert_eq(redlock_acquire_ex(rl, "silent:split", 5000, 200, &lk, &rep), REDLOCK_ERR_NO_QUORUM, "%s",
                 rep.message);
    cr_assert_eq(redlock_stats(rl, &s1), REDLOCK_OK);
    cr_assert_geq(s1.splits - s0.splits, 2, "splits counted: %llu", (unsigned long long)(s1.splits - s0.splits));
    cr_assert_geq(rep.attempts, 2, "attempts %u", rep.attempts);
    for (int i = 0; i < 2; i++) cr_assert_eq(tc_redis_cmd(&C, i, "FLUSHALL"), 0);
    cr_assert_eq(tc_node_resume(&C, 4), 0);
    redlock_free(rl);
}
