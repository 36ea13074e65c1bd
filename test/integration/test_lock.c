/* test_lock.c -- lock semantics against 5 real redis-server masters:
 * acquire/release, contention, non-owner release, extend, SCRIPT FLUSH,
 * expired validity, binary-safe names. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(lock, .init = setup, .timeout = 60);

/* The suite's options: 250 ms per node, so that a slow run (valgrind, a
 * loaded machine) does not turn answers into timeouts; still short enough
 * for the TTLs of 300 ms below. */
static void lock_options(redlock_options_t *o) {
    rt_options(o);
    o->op_timeout_ms = 250;
}

/* A handle on the 5 nodes with options o (NULL: the suite's), its
 * connections opened by a lock taken and released first (up to 10 s):
 * under valgrind a fresh handle's first round may take longer than its
 * connect timeout and the short TTLs below. */
static redlock_t *lock_new(const redlock_options_t *o) {
    redlock_options_t d;
    if (!o) lock_options(&d);
    redlock_t *rl = rt_new(&C, 5, o ? o : &d);
    redlock_lock_t *w = NULL;
    int rc = REDLOCK_ERR_NO_QUORUM;
    for (int t = 0; t < 100 && rc != REDLOCK_OK; t++) {
        rc = redlock_acquire_ex(rl, "t:warm", 10000, 0, &w, NULL);
        if (rc == REDLOCK_OK) rc = redlock_release(rl, w);
        if (rc != REDLOCK_OK) rt_sleep_ms(100);
    }
    cr_assert_eq(rc, REDLOCK_OK, "the handle's connections did not open within 10 s: %s", redlock_strerror(rc));
    return rl;
}

/* Number of the 5 nodes whose key equals the lock's token. */
static int holders(const char *key, const char *token) {
    return tc_count_value(&C, key, token);
}

/* Sends DEBUG SLEEP to node i without waiting for it; returns the context
 * whose reply the caller collects later. */
static redisContext *sleep_node(int i, double secs) {
    redisContext *ctx = tc_connect(&C, i);
    cr_assert_not_null(ctx);
    redisAppendCommand(ctx, "DEBUG SLEEP %f", secs);
    int done = 0;
    while (!done) cr_assert_eq(redisBufferWrite(ctx, &done), REDIS_OK);
    return ctx;
}

/* Collects the DEBUG SLEEP reply and closes the context. */
static void sleep_done(redisContext *ctx) {
    redisSetTimeout(ctx, (struct timeval){5, 0});
    void *r = NULL;
    redisGetReply(ctx, &r);
    freeReplyObject(r);
    redisFree(ctx);
}

Test(lock, acquire_sets_token_on_every_node_and_release_deletes_it) {
    redlock_t *rl = lock_new(NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, "t:basic", 10000, -1, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    cr_assert_not_null(lk);
    cr_assert_eq(rep.attempts, 1);
    cr_assert_geq(rep.yes, 3);
    cr_assert_str_eq(redlock_lock_resource(lk), "t:basic");
    cr_assert_eq(strlen(redlock_lock_token(lk)), 40);
    int64_t v = redlock_lock_validity_ms(lk);
    cr_assert(v > 9000 && v <= 10000 - 102, "validity %lld", (long long)v);
    /* the SET reached the nodes that had not answered yet too */
    for (int tries = 0; tries < 50 && holders("t:basic", redlock_lock_token(lk)) < 5; tries++) rt_sleep_ms(10);
    cr_assert_eq(holders("t:basic", redlock_lock_token(lk)), 5);
    for (int i = 0; i < 5; i++) {
        long long pttl = tc_pttl(&C, i, "t:basic");
        cr_assert(pttl > 9000 && pttl <= 10000, "node %d pttl %lld", i, pttl);
    }
    rc = redlock_release_ex(rl, lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    cr_assert_geq(rep.yes, 3);
    for (int tries = 0; tries < 50; tries++) {
        int left = 0;
        for (int i = 0; i < 5; i++) {
            char *s = tc_get(&C, i, "t:basic");
            left += s != NULL;
            free(s);
        }
        if (!left) break;
        cr_assert(tries < 49, "key left on %d nodes after release", left);
        rt_sleep_ms(10);
    }
    redlock_free(rl);
}

Test(lock, second_client_gets_taken_until_release) {
    redlock_t *a = lock_new(NULL), *b = lock_new(NULL);
    redlock_lock_t *la = NULL, *lb = NULL;
    cr_assert_eq(redlock_acquire(a, "t:contend", 10000, &la), REDLOCK_OK);
    /* a's SET on the nodes that answered late first (one could grant b) */
    cr_assert_eq(tc_await_count(&C, "t:contend", redlock_lock_token(la), 5), 5);
    redlock_report_t rep;
    int rc = redlock_acquire_ex(b, "t:contend", 10000, 0, &lb, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN, "got %s: %s", redlock_strerror(rc), rep.message);
    cr_assert_null(lb);
    cr_assert_geq(rep.no, 3);
    for (size_t i = 0; i < 5; i++)
        if (rep.nodes[i].vote == REDLOCK_VOTE_NO) cr_assert_eq(rep.nodes[i].err, REDLOCK_OK);
    /* b's failed attempt must not have disturbed a's keys */
    cr_assert_eq(holders("t:contend", redlock_lock_token(la)), 5);
    cr_assert_eq(redlock_release(a, la), REDLOCK_OK);
    rc = redlock_try_acquire(b, "t:contend", 10000, &lb);
    cr_assert_eq(rc, REDLOCK_OK, "%s", redlock_strerror(rc));
    cr_assert_eq(redlock_release(b, lb), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
}

Test(lock, retries_until_the_holder_releases) {
    redlock_options_t o;
    lock_options(&o);
    o.retry_count = 50;
    o.retry_delay_ms = 20;
    o.retry_jitter_ms = 10;
    redlock_t *a = lock_new(NULL), *b = lock_new(&o);
    redlock_lock_t *la = NULL, *lb = NULL;
    cr_assert_eq(redlock_acquire(a, "t:retry", 300, &la), REDLOCK_OK);
    redlock_report_t rep;
    int rc = redlock_acquire_ex(b, "t:retry", 10000, -1, &lb, &rep); /* a's lock expires by TTL */
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    cr_assert_gt(rep.attempts, 1, "a 300 ms lock should have taken several 20 ms retries");
    redlock_lock_free(la);
    cr_assert_eq(redlock_release(b, lb), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
}

Test(lock, wait_bound_stops_retries) {
    redlock_options_t o;
    lock_options(&o);
    o.retry_count = 1000;
    o.retry_delay_ms = 20;
    o.retry_jitter_ms = 0;
    redlock_t *a = lock_new(NULL), *b = lock_new(&o);
    redlock_lock_t *la = NULL, *lb = NULL;
    cr_assert_eq(redlock_acquire(a, "t:wait", 10000, &la), REDLOCK_OK);
    redlock_report_t rep;
    uint64_t t = rt_now_us();
    int rc = redlock_acquire_ex(b, "t:wait", 10000, 200, &lb, &rep);
    uint64_t took_ms = (rt_now_us() - t) / 1000;
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN);
    cr_assert(rep.attempts >= 2 && rep.attempts < 1000, "attempts %u", rep.attempts);
    cr_assert_lt(took_ms, 5000, "wait bound of 200 ms ignored (%llu ms)", (unsigned long long)took_ms);
    cr_assert_eq(redlock_release(a, la), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
}

Test(lock, release_by_non_owner_deletes_nothing) {
    redlock_t *rl = lock_new(NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:stolen", 10000, &lk), REDLOCK_OK);
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_set(&C, i, "t:stolen", "foreign-token", 10000), 0);
    redlock_report_t rep;
    int rc = redlock_release_ex(rl, lk, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_NOT_HELD, "got %s", redlock_strerror(rc));
    cr_assert_geq(rep.no, 3);
    rt_sleep_ms(50); /* let every node run the script */
    cr_assert_eq(tc_count_value(&C, "t:stolen", "foreign-token"), 5);
    redlock_free(rl);
}

Test(lock, release_after_partial_takeover_reports_majority) {
    redlock_t *rl = lock_new(NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:partial", 10000, &lk), REDLOCK_OK);
    char token[41];
    strcpy(token, redlock_lock_token(lk));
    for (int tries = 0; tries < 50 && holders("t:partial", token) < 5; tries++) rt_sleep_ms(10);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, "t:partial", "foreign-token", 10000), 0);
    int rc = redlock_release(rl, lk);
    cr_assert_eq(rc, REDLOCK_ERR_NOT_HELD, "a majority was taken over: %s", redlock_strerror(rc));
    rt_sleep_ms(50);
    cr_assert_eq(tc_count_value(&C, "t:partial", "foreign-token"), 3);
    cr_assert_eq(holders("t:partial", token), 0, "our own keys on the other nodes are deleted");
    redlock_free(rl);
}

Test(lock, extend_resets_ttl_rather_than_adding) {
    redlock_t *rl = lock_new(NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:extend", 10000, &lk), REDLOCK_OK);
    rt_sleep_ms(100);
    redlock_report_t rep;
    int rc = redlock_extend_ex(rl, lk, 3000, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    int64_t v = redlock_lock_validity_ms(lk);
    cr_assert(v > 2500 && v <= 3000 - 32, "validity after extend %lld", (long long)v);
    int reset = 0;
    for (int i = 0; i < 5; i++) {
        long long pttl = tc_pttl(&C, i, "t:extend");
        cr_assert(pttl <= 3000, "node %d pttl %lld: extend added instead of reset", i, pttl);
        reset += pttl > 2500;
    }
    cr_assert_geq(reset, 3);
    rc = redlock_extend(rl, lk, 20000);
    cr_assert_eq(rc, REDLOCK_OK);
    cr_assert_gt(redlock_lock_validity_ms(lk), 19000);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(lock, extend_refused_once_local_validity_is_gone) {
    redlock_options_t o;
    lock_options(&o);
    o.drift_min_ms = 700; /* local deadline t0 + 1000 - 710: the keys outlive it */
    redlock_t *rl = lock_new(&o);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:late", 1000, &lk), REDLOCK_OK);
    rt_sleep_ms(400);
    cr_assert_leq(redlock_lock_validity_ms(lk), 0);
    cr_assert_gt(tc_pttl(&C, 0, "t:late"), 0, "key should still exist on the node");
    int rc = redlock_extend(rl, lk, 5000);
    cr_assert_eq(rc, REDLOCK_ERR_NOT_HELD, "got %s", redlock_strerror(rc));
    for (int i = 0; i < 5; i++) cr_assert_leq(tc_pttl(&C, i, "t:late"), 700, "extend must not touch the nodes");
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(lock, extend_of_a_taken_over_lock_fails_and_keeps_deadline) {
    redlock_t *rl = lock_new(NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:extend2", 5000, &lk), REDLOCK_OK);
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_set(&C, i, "t:extend2", "foreign-token", 10000), 0);
    int64_t before = redlock_lock_validity_ms(lk);
    int rc = redlock_extend(rl, lk, 30000);
    cr_assert_eq(rc, REDLOCK_ERR_NOT_HELD, "got %s", redlock_strerror(rc));
    cr_assert_leq(redlock_lock_validity_ms(lk), before, "failed extend must keep the old deadline");
    cr_assert_eq(tc_count_value(&C, "t:extend2", "foreign-token"), 5);
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(lock, release_and_extend_after_script_flush) {
    redlock_t *rl = lock_new(NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:flush", 10000, &lk), REDLOCK_OK);
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_redis_cmd(&C, i, "SCRIPT FLUSH"), 0);
    redlock_report_t rep;
    int rc = redlock_extend_ex(rl, lk, 8000, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "extend after SCRIPT FLUSH: %s", rep.message);
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_redis_cmd(&C, i, "SCRIPT FLUSH"), 0);
    rc = redlock_release_ex(rl, lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "release after SCRIPT FLUSH: %s", rep.message);
    /* Release returns at a quorum; the other nodes' NOSCRIPT -> EVAL
     * fallback completes as the connections are driven by later calls.
     * Every node must end up without the key, and the connections stay in
     * step: new cycles keep working meanwhile. */
    for (int tries = 0;; tries++) {
        int left = 0;
        for (int i = 0; i < 5; i++) {
            char *v = tc_get(&C, i, "t:flush");
            left += v != NULL;
            free(v);
        }
        if (!left) break;
        cr_assert_lt(tries, 100, "%d nodes still hold the key after release", left);
        cr_assert_eq(redlock_acquire(rl, "t:flush-other", 10000, &lk), REDLOCK_OK);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
        rt_sleep_ms(10);
    }
    cr_assert_eq(redlock_acquire(rl, "t:flush", 10000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

/* With requests answered within op_timeout_ms the TTL check (TTL > drift +
 * op_timeout) rules EXPIRED out; it can happen while connecting, when a
 * node's deadline is connect_timeout_ms + op_timeout_ms. Here every node is
 * busy in DEBUG SLEEP when a fresh redlock_t connects: the kernel accepts
 * the connections, the replies come after the sleep, past the validity. */
Test(lock, quorum_granted_after_validity_ran_out_is_expired_and_cleaned) {
    redlock_options_t o;
    lock_options(&o);
    o.connect_timeout_ms = 3000;
    o.op_timeout_ms = 100;
    redlock_t *rl = rt_new(&C, 5, &o); /* fresh: it connects during the sleep */
    redisContext *s[5];
    for (int i = 0; i < 5; i++) s[i] = sleep_node(i, 0.8);
    rt_sleep_ms(20);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, "t:expired", 500, 0, &lk, &rep);
    for (int i = 0; i < 5; i++) sleep_done(s[i]);
    cr_assert_eq(rc, REDLOCK_ERR_EXPIRED, "got %s: %s", redlock_strerror(rc), rep.message);
    cr_assert_geq(rep.yes, 3);
    cr_assert_gt(rep.elapsed_us, 500000);
    cr_assert_null(lk);
    /* (its clean-up is sent, not waited for) */
    cr_assert_eq(tc_await_count(&C, "t:expired", NULL, 0), 0, "nodes kept the expired lock");
    redlock_free(rl);
}

Test(lock, timed_out_request_does_not_desynchronise_the_connection) {
    redlock_options_t o;
    lock_options(&o);
    o.op_timeout_ms = 100;
    redlock_t *rl = rt_new(&C, 1, &o);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "t:warm1", 5000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redisContext *s = sleep_node(0, 0.4);
    rt_sleep_ms(20);
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, "t:slow", 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM, "got %s", redlock_strerror(rc));
    cr_assert_eq(rep.nodes[0].vote, REDLOCK_VOTE_TIMEOUT);
    cr_assert_eq(rep.nodes[0].err, REDLOCK_ERR_TIMEOUT);
    sleep_done(s);
    /* The node that timed out is suspect (doc/design.md, "A silent minority"): skipped until a
     * probe answers, then back at once. The late SET reply and the
     * clean-up's are read and dropped; the next calls get their own. */
    uint64_t until = rt_now_us() + 3000000;
    while ((rc = redlock_acquire_ex(rl, "t:other", 5000, 0, &lk, &rep)) != REDLOCK_OK && rt_now_us() < until) {
        cr_assert_eq(rep.nodes[0].err, REDLOCK_ERR_SUSPECT, "%s: %s", rep.message, rep.nodes[0].detail);
        rt_sleep_ms(10);
    }
    cr_assert_eq(rc, REDLOCK_OK, "after a timeout: %s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    rc = redlock_acquire_ex(rl, "t:slow", 5000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "the clean-up after the timeout must have released t:slow: %s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(lock, resource_names_are_binary_safe) {
    static const char *names[] = {
        "with space",
        "quote'\"",
        "new\nline",
        "lua]]..redis.call('FLUSHALL')--",
        "\xc3\xa9t\xc3\xa9 \xe2\x98\x83 \xff\xfe",
        "*3\r\n$3\r\nSET\r\n",
    };
    redlock_t *rl = lock_new(NULL);
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        redlock_lock_t *lk = NULL;
        cr_assert_eq(redlock_acquire(rl, names[k], 10000, &lk), REDLOCK_OK, "name %zu", k);
        cr_assert_eq(redlock_extend(rl, lk, 10000), REDLOCK_OK, "name %zu", k);
        redisContext *ctx = tc_connect(&C, 0);
        redisReply *r = NULL;
        int held = 0; /* the acquire is decided by a quorum: node 0's SET may still be on its way */
        for (int tries = 0; tries < 100 && !held; tries++) {
            if (tries) rt_sleep_ms(10);
            r = redisCommand(ctx, "GET %s", names[k]);
            held = r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, redlock_lock_token(lk));
            freeReplyObject(r);
        }
        cr_assert(held, "name %zu: node 0 does not hold the lock", k);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK, "name %zu", k);
        long long left = -1; /* the release is decided by a quorum: node 0's may still be on its way */
        for (int tries = 0; tries < 50 && left != 0; tries++) {
            if (tries) rt_sleep_ms(10);
            r = redisCommand(ctx, "DBSIZE");
            cr_assert(r && r->type == REDIS_REPLY_INTEGER);
            left = r->integer;
            freeReplyObject(r);
        }
        cr_assert_eq(left, 0, "name %zu left keys behind", k);
        redisFree(ctx);
    }
    redlock_free(rl);
}

/* max_inflight bounds what a node owes for rounds: the requests a
 * connection's opening queues (a SCRIPT LOAD per script, the health
 * checks) come on top, so even the smallest limit leaves a round room. */
Test(lock, the_smallest_max_inflight_still_grants) {
    redlock_options_t o;
    lock_options(&o);
    o.max_inflight = 1;
    redlock_t *rl = lock_new(&o);
    for (int k = 0; k < 3; k++) {
        redlock_lock_t *lk = NULL;
        redlock_report_t rep;
        int rc = redlock_acquire_ex(rl, "t:inflight1", 10000, -1, &lk, &rep);
        cr_assert_eq(rc, REDLOCK_OK, "acquire %d with max_inflight 1: %s", k, rep.message);
        cr_assert_geq(rep.yes, 3);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK, "release %d", k);
    }
    redlock_free(rl);
}
