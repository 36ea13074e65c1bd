/* test_outage.c -- work a handle finishes with no further call, and a
 * majority outage it recovers from at once, against real redis-server
 * processes (5 nodes, quorum 3).
 *
 * - A release returns at its quorum; the nodes that answer later, and the
 *   EVAL fallback a NOSCRIPT answer needs, complete without the caller
 *   making another call (a blocking handle's idle driver; the async
 *   handle's loop).
 * - While a majority is paused (SIGSTOP: TCP stays up, nothing answers)
 *   attempts fail; the nodes become suspect (the handle's statistics count
 *   it). Once they answer again, a single attempt succeeds: suspect nodes
 *   are skipped only while the others can make a quorum, so this attempt
 *   asks them, and their answer ends the suspicion.
 * Built twice: blocking, and through the async API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

/* Resumes every node (a failed assertion leaves none paused). */
static void teardown(void) {
    for (int i = 0; i < 5; i++) tc_node_resume(&C, i);
}

TestSuite(outage, .init = setup, .fini = teardown, .timeout = 120);

/* One attempt per call and the library's probe backoff (50 ms doubling to
 * 1 s); 300 ms per node, so that a loaded machine does not time out a node
 * that answers. */
static redlock_t *outage_rl(void) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 0;
    o.op_timeout_ms = 300;
    return rt_new(&C, 5, &o);
}

Test(outage, a_release_after_script_flush_leaves_no_key_and_needs_no_further_call) {
    /* op timeout 500 ms: the paused nodes below are late, not timed out */
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 0;
    o.op_timeout_ms = 500;
    redlock_t *rl = rt_new(&C, 5, &o);
    for (int cycle = 0; cycle < 6; cycle++) {
        redlock_lock_t *lk = NULL;
        cr_assert_eq(redlock_try_acquire(rl, "outage:flush", 10000, &lk), REDLOCK_OK, "cycle %d", cycle);
        cr_assert_eq(tc_await_count(&C, "outage:flush", redlock_lock_token(lk), 5), 5,
                     "cycle %d: the lock is not on every node", cycle);
        /* what a restart of the script cache, a failover or an operator does:
         * every node answers the release's EVALSHA with NOSCRIPT, and the
         * EVAL fallback is a second send to each */
        for (int i = 0; i < 5; i++) cr_assert_eq(tc_redis_cmd(&C, i, "SCRIPT FLUSH"), 0);
        /* every other cycle two nodes answer only after the release returned
         * at its quorum (paused for its duration): their NOSCRIPT, and the
         * EVAL it calls for, come once the caller has moved on */
        int late = cycle % 2;
        for (int i = 3; late && i < 5; i++) cr_assert_eq(tc_node_pause(&C, i), 0);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK, "cycle %d", cycle);
        for (int i = 3; late && i < 5; i++) cr_assert_eq(tc_node_resume(&C, i), 0);
        /* no further call of the library: the nodes still owed their EVAL
         * get it all the same (waited for, up to 5 s) */
        int left = tc_count_value(&C, "outage:flush", NULL);
        for (int t = 0; t < 500 && left; t++, rt_sleep_ms(10)) left = tc_count_value(&C, "outage:flush", NULL);
        cr_assert_eq(left, 0, "cycle %d%s: %d node(s) still hold the key 5 s after the release", cycle,
                     late ? " (2 late nodes)" : "", left);
    }
    redlock_free(rl);
}

/* Waits, up to 10 s, until node i answers a PING of the test's own. */
static int answers(int i) {
    for (int t = 0; t < 1000; t++, rt_sleep_ms(10))
        if (tc_redis_cmd(&C, i, "PING") == 0) return 1;
    return 0;
}

/* Writes each node's vote and detail in rep into buf (n bytes); returns buf. */
static const char *votes_of(const redlock_report_t *rep, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < rep->n_nodes && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "\n  node %zu: %s (%s)", i, redlock_vote_name(rep->nodes[i].vote),
                               rep->nodes[i].detail);
    return buf;
}

/* Pauses nodes 0, 1 and 2 for pause_ms while the handle keeps trying
 * (every attempt must fail, and the three become suspect), resumes them,
 * and once they answer again makes one attempt, which must succeed. */
static void majority_outage(unsigned pause_ms) {
    redlock_t *rl = outage_rl();
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_try_acquire(rl, "outage:warm", 5000, &lk), REDLOCK_OK); /* connected */
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_stats_t before, after;
    cr_assert_eq(redlock_stats(rl, &before), REDLOCK_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_pause(&C, i), 0, "pause node %d", i);
    uint64_t t0 = rt_now_us();
    unsigned attempts = 0;
    redlock_report_t rep;
    do {
        int rc = redlock_acquire_ex(rl, "outage:res", 5000, 0, &lk, &rep);
        cr_assert_neq(rc, REDLOCK_OK, "granted with a majority paused");
        attempts++;
        rt_sleep_ms(10);
    } while (rt_now_us() - t0 < (uint64_t)pause_ms * 1000u);
    cr_assert_eq(redlock_stats(rl, &after), REDLOCK_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_gt(after.nodes[i].suspected, before.nodes[i].suspected,
                     "paused node %d never became suspect in %u attempts", i, attempts);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_resume(&C, i), 0, "resume node %d", i);
    for (int i = 0; i < 3; i++) cr_assert(answers(i), "node %d does not answer after SIGCONT", i);
    int rc = redlock_acquire_ex(rl, "outage:res", 5000, 0, &lk, &rep);
    char votes[5 * 300];
    cr_assert_eq(rc, REDLOCK_OK, "after %u ms paused (%u attempts), the first attempt once the nodes answer: %s%s",
                 pause_ms, attempts, rep.message, votes_of(&rep, votes, sizeof votes));
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(outage, a_majority_paused_for_300_ms_answers_the_first_attempt_after) {
    majority_outage(300);
}

Test(outage, a_majority_paused_for_2_s_answers_the_first_attempt_after) {
    majority_outage(2000);
}

Test(outage, a_majority_paused_for_5_s_answers_the_first_attempt_after) {
    majority_outage(5000);
}

/* 1 when rep says nodes 0, 1 and 2 were skipped as suspect. */
static int skipped_as_suspect(const redlock_report_t *rep) {
    for (int i = 0; i < 3; i++)
        if (rep->nodes[i].vote != REDLOCK_VOTE_DOWN || rep->nodes[i].err != REDLOCK_ERR_SUSPECT) return 0;
    return 1;
}

/* The paused majority is resumed the moment an attempt skips it: each
 * node's probe has timed out and the close of its connection waits for
 * the clean-ups of the attempts it still owes. The nodes answer all of
 * it once resumed; the next attempt must take those answers (the async
 * handle has not run its loop since, so nothing else read them) rather
 * than skip the nodes until the close. */
Test(outage, a_majority_resumed_while_its_close_is_pending_answers_the_first_attempt_after) {
    redlock_t *rl = outage_rl();
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_try_acquire(rl, "outage:warm", 5000, &lk), REDLOCK_OK); /* connected */
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_pause(&C, i), 0, "pause node %d", i);
    redlock_report_t rep;
    char votes[5 * 300];
    unsigned attempts = 0;
    uint64_t t0 = rt_now_us();
    do { /* bounded: 20 s */
        cr_assert_neq(redlock_acquire_ex(rl, "outage:pend", 5000, 0, &lk, &rep), REDLOCK_OK,
                      "granted with a majority paused");
        attempts++;
        cr_assert_lt(rt_now_us() - t0, 20000000u, "no attempt skipped the paused nodes in 20 s (%u attempts):%s",
                     attempts, votes_of(&rep, votes, sizeof votes));
    } while (!skipped_as_suspect(&rep));
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_resume(&C, i), 0, "resume node %d", i);
    for (int i = 0; i < 3; i++) cr_assert(answers(i), "node %d does not answer after SIGCONT", i);
    int rc = redlock_acquire_ex(rl, "outage:pend", 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "skipped after %u attempts, the first attempt once the nodes answer: %s%s", attempts,
                 rep.message, votes_of(&rep, votes, sizeof votes));
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}
