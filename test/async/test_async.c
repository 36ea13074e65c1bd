/* test_async.c -- the async API's own rules on a real libuv loop against
 * the fixture cluster: each callback runs exactly once, never from inside
 * the call, under a grant, TAKEN, NO_QUORUM and a node paused mid-round;
 * free from inside a callback; bad input refused with no callback;
 * extend, fencing and auto-extension through the handle. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <redlock/libuv.h>

#include "rltest.h"

static tc_cluster_t C;
static void setup(void) {
    rt_setup(&C);
}
TestSuite(async, .init = setup, .timeout = 300);

/* What the callbacks saw. */
static struct {
    redlock_async_t *a;
    int in_call; /* 1 while a redlock_async_* call runs: a callback then is a defect */
    int cbs, rc, last_rc;
    redlock_lock_t *lock;
    size_t yes, no, failed;
    int free_in_cb; /* the acquire callback frees the handle */
    int other_cbs, other_rc;
} S;

static uv_loop_t L;

/* A handle on the first n fixture nodes (or on uris when given). */
static redlock_async_t *new_handle(const char *const *uris, size_t n, redlock_options_t *o) {
    redlock_options_t d;
    if (!o) {
        rt_options(&d);
        o = &d;
    }
    const char *nodes[TC_MAX_NODES];
    for (size_t i = 0; i < n; i++) nodes[i] = uris ? uris[i] : C.uri[i];
    o->nodes = nodes;
    o->n_nodes = n;
    redlock_async_t *a = NULL;
    int rc = redlock_async_new(&a, o);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_async_new: %s", redlock_strerror(rc));
    cr_assert_eq(redlock_libuv_attach(a, &L), REDLOCK_OK);
    memset(&S, 0, sizeof S);
    S.a = a;
    return a;
}

static void on_acquire(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    cr_assert_not(S.in_call, "callback ran from inside the call");
    S.cbs++;
    S.rc = rc;
    S.lock = lock;
    S.yes = rep->yes, S.no = rep->no, S.failed = rep->failed;
    cr_assert_eq(rep->result, rc);
    if (rc == REDLOCK_OK) cr_assert_not_null(lock);
    if (S.free_in_cb) redlock_async_free(S.a);
}

static void on_other(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)lock, (void)rep, (void)arg;
    S.other_cbs++;
    S.other_rc = rc;
}

static void on_done(int rc, const redlock_report_t *rep, void *arg) {
    (void)rep, (void)arg;
    cr_assert_not(S.in_call, "callback ran from inside the call");
    S.cbs++;
    S.last_rc = rc;
}

/* How many nodes hold key = value (NULL: any value), polled for up to a
 * second until it is want: a round stops at its quorum, and the last
 * nodes' writes may land a moment after the callback. */
static int count_soon(const char *key, const char *value, int want) {
    int n = tc_count_value(&C, key, value);
    for (int tries = 0; n != want && tries < 100; tries++) rt_sleep_ms(10), n = tc_count_value(&C, key, value);
    return n;
}

/* Starts an acquire with the in-call guard; returns the call's rc. */
static int acquire(const char *res, uint32_t ttl, int64_t wait_ms) {
    S.in_call = 1;
    int rc = redlock_async_acquire(S.a, res, ttl, wait_ms, on_acquire, NULL);
    S.in_call = 0;
    return rc;
}

/* Starts a release of S.lock with the in-call guard; returns the call's rc. */
static int release_held(void) {
    S.in_call = 1;
    int rc = redlock_async_release(S.a, S.lock, on_done, NULL);
    S.in_call = 0;
    return rc;
}

/* Runs the loop until *count reaches want, for up to 60 s. Never
 * UV_RUN_ONCE: a callback run from the handle's timer (a round decided by
 * the replies its deadline check reads) would leave it waiting in a poll
 * that nothing wakes. */
static void run_count(const int *count, int want) {
    for (int t = 0; *count < want; t++) {
        cr_assert_lt(t, 60000, "%d of %d callbacks within 60 s", *count, want);
        uv_run(&L, UV_RUN_NOWAIT);
        if (*count < want) rt_sleep_ms(1);
    }
}

/* Runs the loop until the callbacks counted reach want. */
static void run_until(int want) {
    run_count(&S.cbs, want);
}

/* Frees the handle and runs the loop until it is empty. */
static void finish(void) {
    redlock_async_free(S.a);
    cr_assert_eq(uv_run(&L, UV_RUN_DEFAULT), 0, "something left on the loop");
    cr_assert_eq(uv_loop_close(&L), 0);
}

Test(async, granted_then_taken_then_released_each_callback_once) {
    uv_loop_init(&L);
    new_handle(NULL, (size_t)C.n, NULL);
    cr_assert_eq(acquire("async:once", 10000, 0), REDLOCK_OK);
    cr_assert_eq(S.cbs, 0, "no callback from inside the call");
    run_until(1);
    cr_assert_eq(S.rc, REDLOCK_OK);
    cr_assert_geq(S.yes, redlock_quorum((size_t)C.n), "the round stops at a quorum");
    redlock_lock_t *held = S.lock;
    cr_assert_eq(count_soon("async:once", redlock_lock_token(held), C.n), C.n);
    cr_assert_eq(acquire("async:once", 10000, 0), REDLOCK_OK);
    run_until(2);
    cr_assert_eq(S.rc, REDLOCK_ERR_TAKEN);
    cr_assert_null(S.lock);
    cr_assert_geq(S.no, redlock_quorum((size_t)C.n));
    S.in_call = 1;
    cr_assert_eq(redlock_async_release(S.a, held, on_done, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_async_release(S.a, held, on_done, NULL), REDLOCK_ERR_INVALID, "double release");
    S.in_call = 0;
    run_until(3);
    cr_assert_eq(S.last_rc, REDLOCK_OK);
    cr_assert_eq(count_soon("async:once", NULL, 0), 0);
    for (int i = 0; i < 20; i++) uv_run(&L, UV_RUN_NOWAIT);
    cr_assert_eq(S.cbs, 3, "a callback ran twice");
    finish();
}

Test(async, no_quorum_with_dead_nodes_reports_each_vote) {
    uv_loop_init(&L);
    const char *uris[3] = {C.uri[0], "redis://127.0.0.1:1", "redis://127.0.0.1:2"};
    new_handle(uris, 3, NULL);
    cr_assert_eq(acquire("async:nq", 10000, 0), REDLOCK_OK);
    run_until(1);
    cr_assert_eq(S.rc, REDLOCK_ERR_NO_QUORUM);
    cr_assert_eq(S.failed, 2u, "both dead nodes failed");
    cr_assert_eq(count_soon("async:nq", NULL, 0), 0, "the clean-up released node 0");
    finish();
}

Test(async, node_paused_mid_round_still_one_callback) {
    uv_loop_init(&L);
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 200;
    new_handle(NULL, (size_t)C.n, &o);
    cr_assert_eq(tc_node_pause(&C, 0), 0);
    cr_assert_eq(acquire("async:paused", 10000, 0), REDLOCK_OK);
    run_until(1);
    cr_assert_eq(tc_node_resume(&C, 0), 0);
    cr_assert_eq(S.rc, REDLOCK_OK, "four of five nodes grant");
    cr_assert_geq(S.yes, redlock_quorum((size_t)C.n));
    cr_assert_eq(release_held(), REDLOCK_OK);
    run_until(2);
    for (int i = 0; i < 10; i++) uv_run(&L, UV_RUN_NOWAIT);
    cr_assert_eq(S.cbs, 2);
    finish();
}

Test(async, node_killed_mid_round_still_one_callback) {
    uv_loop_init(&L);
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 2000;
    o.node_down_ms = 5000;
    new_handle(NULL, (size_t)C.n, &o);
    cr_assert_eq(acquire("async:warm", 10000, 0), REDLOCK_OK); /* connections open first */
    run_until(1);
    cr_assert_eq(release_held(), REDLOCK_OK);
    run_until(2);
    /* nodes 0 and 1 stop answering, then die while the round waits for them */
    cr_assert_eq(tc_node_pause(&C, 0), 0);
    cr_assert_eq(tc_node_pause(&C, 1), 0);
    cr_assert_eq(acquire("async:killed", 10000, 0), REDLOCK_OK);
    for (int i = 0; i < 5; i++) uv_run(&L, UV_RUN_NOWAIT); /* the SETs are written */
    cr_assert_eq(tc_node_kill(&C, 0), 0);
    cr_assert_eq(tc_node_kill(&C, 1), 0);
    run_until(3);
    cr_assert_eq(S.rc, REDLOCK_OK, "three of five still grant: %s", redlock_strerror(S.rc));
    cr_assert_eq(release_held(), REDLOCK_OK);
    run_until(4);
    for (int i = 0; i < 10; i++) uv_run(&L, UV_RUN_NOWAIT);
    cr_assert_eq(S.cbs, 4, "a callback ran twice");
    finish();
    tc_cluster_heal(&C);
}

Test(async, free_from_inside_a_callback_cancels_the_rest) {
    uv_loop_init(&L);
    redlock_t *rl = rt_new(&C, (size_t)C.n, NULL);
    redlock_lock_t *busy = NULL;
    cr_assert_eq(redlock_acquire(rl, "async:busy", 30000, &busy), REDLOCK_OK);
    redlock_options_t o; /* retries, so the waiting acquire is still pending when the handle goes */
    rt_options(&o);
    o.retry_count = 3;
    new_handle(NULL, (size_t)C.n, &o);
    cr_assert_eq(redlock_async_acquire(S.a, "async:busy", 5000, 20000, on_other, NULL), REDLOCK_OK);
    S.free_in_cb = 1;
    cr_assert_eq(acquire("async:free-in-cb", 5000, 0), REDLOCK_OK);
    cr_assert_eq(uv_run(&L, UV_RUN_DEFAULT), 0, "the loop ends once the handle is freed");
    cr_assert_eq(S.cbs, 1);
    cr_assert_eq(S.rc, REDLOCK_OK);
    cr_assert_eq(S.other_cbs, 1);
    cr_assert_eq(S.other_rc, REDLOCK_ERR_CANCELLED, "other: %s", redlock_strerror(S.other_rc));
    cr_assert_eq(count_soon("async:busy", redlock_lock_token(busy), C.n), C.n, "the holder's key is untouched");
    redlock_lock_free(S.lock); /* detached by the free: still set until its TTL */
    cr_assert_eq(uv_loop_close(&L), 0);
    cr_assert_eq(redlock_release(rl, busy), REDLOCK_OK);
    redlock_free(rl);
}

Test(async, bad_options_are_refused_naming_the_value) {
    redlock_options_t o;
    rt_options(&o);
    const char *nodes[1] = {"redis://127.0.0.1:notaport"};
    o.nodes = nodes;
    o.n_nodes = 1;
    redlock_async_t *a = (redlock_async_t *)&o; /* must be set to NULL */
    char err[256];
    cr_assert_eq(redlock_async_new_ex(&a, &o, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_null(a);
    cr_assert(strstr(err, "notaport"), "%s", err);
    rt_options(&o);
    o.nodes = (const char *[]){C.uri[0]};
    o.n_nodes = 1;
    o.op_timeout_ms = 0;
    cr_assert_eq(redlock_async_new_ex(&a, &o, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "op_timeout_ms"), "%s", err);
    cr_assert_eq(redlock_async_new_ex(NULL, &o, err, sizeof err), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_new(&a, NULL), REDLOCK_ERR_INVALID);
    redlock_async_free(NULL); /* NULL-safe */
}

Test(async, bad_input_is_invalid_and_runs_no_callback) {
    uv_loop_init(&L);
    redlock_options_t o;
    rt_options(&o);
    o.max_ttl_ms = 60000;
    new_handle(NULL, (size_t)C.n, &o);
    char longname[REDLOCK_MAX_RESOURCE + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    S.in_call = 1;
    cr_assert_eq(redlock_async_acquire(NULL, "r", 1000, 0, on_acquire, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_acquire(S.a, "r", 1000, 0, NULL, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_acquire(S.a, "", 1000, 0, on_acquire, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_acquire(S.a, NULL, 1000, 0, on_acquire, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_acquire(S.a, longname, 1000, 0, on_acquire, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_acquire(S.a, "r", 0, 0, on_acquire, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_acquire(S.a, "r", 60001, 0, on_acquire, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_extend(S.a, NULL, 1000, on_done, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_release(S.a, NULL, on_done, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_cancel(NULL, NULL), REDLOCK_ERR_INVALID);
    S.in_call = 0;
    /* a lock of another handle (a blocking one) */
    redlock_t *rl = rt_new(&C, (size_t)C.n, NULL);
    redlock_lock_t *foreign = NULL;
    cr_assert_eq(redlock_acquire(rl, "async:foreign", 10000, &foreign), REDLOCK_OK);
    cr_assert_eq(redlock_async_release(S.a, foreign, on_done, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_extend(S.a, foreign, 1000, on_done, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_autoextend(S.a, foreign, NULL), REDLOCK_ERR_INVALID);
    for (int i = 0; i < 10; i++) uv_run(&L, UV_RUN_NOWAIT);
    cr_assert_eq(S.cbs, 0, "a refused call ran its callback");
    cr_assert_eq(redlock_release(rl, foreign), REDLOCK_OK);
    redlock_free(rl);
    finish();
}

Test(async, extend_fencing_and_autoextend_through_the_handle) {
    uv_loop_init(&L);
    redlock_options_t o;
    rt_options(&o);
    o.fencing = 1;
    new_handle(NULL, (size_t)C.n, &o);
    cr_assert_eq(acquire("async:fenced", 300, 0), REDLOCK_OK);
    run_until(1);
    cr_assert_eq(S.rc, REDLOCK_OK);
    redlock_lock_t *l = S.lock;
    uint64_t f1 = redlock_lock_fence(l);
    cr_assert_gt(f1, 0u, "a fenced lock has a token");
    S.in_call = 1;
    cr_assert_eq(redlock_async_extend(S.a, l, 2000, on_done, NULL), REDLOCK_OK);
    S.in_call = 0;
    run_until(2);
    cr_assert_eq(S.last_rc, REDLOCK_OK);
    cr_assert_gt(redlock_lock_validity_ms(l), 1000, "extended to 2 s");
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.interval_ms = 100;
    cr_assert_eq(redlock_async_autoextend(S.a, l, &ao), REDLOCK_OK);
    cr_assert_eq(redlock_async_autoextend(S.a, l, &ao), REDLOCK_ERR_INVALID, "already auto-extended");
    uint64_t end = rt_now_us() + 700000;
    while (rt_now_us() < end) uv_run(&L, UV_RUN_ONCE);
    cr_assert_geq(redlock_lock_extensions(l), 3u, "about 6 extensions in 700 ms at 100 ms");
    cr_assert(redlock_lock_valid(l, 0));
    cr_assert_geq(tc_count_value(&C, "async:fenced", redlock_lock_token(l)), 3);
    S.in_call = 1;
    cr_assert_eq(redlock_async_release(S.a, l, on_done, NULL), REDLOCK_OK);
    S.in_call = 0;
    run_until(3);
    cr_assert_eq(S.last_rc, REDLOCK_OK);
    /* the next holder's fence is greater */
    cr_assert_eq(acquire("async:fenced", 1000, 0), REDLOCK_OK);
    run_until(4);
    cr_assert_eq(S.rc, REDLOCK_OK);
    cr_assert_gt(redlock_lock_fence(S.lock), f1);
    S.in_call = 1;
    cr_assert_eq(redlock_async_release(S.a, S.lock, NULL, NULL), REDLOCK_OK);
    S.in_call = 0;
    finish();
}

/* Counts the callbacks of the many-waiters test. */
static int g_many_done, g_many_taken;
static void on_many(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)lock, (void)rep, (void)arg;
    g_many_done++;
    g_many_taken += rc == REDLOCK_ERR_TAKEN;
}

Test(async, many_waiters_poll_within_the_handles_budget) {
    /* 600 waiters on 600 resources another client holds with plain SET NX
     * (it never announces a release): without a bound they would poll
     * every retry delay, 600 rounds per 100 ms; the handle sends at most
     * RL_POLLS_PER_INTERVAL (256) fallback polls per retry delay. */
    enum { W = 600 };
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 1000;
    o.retry_delay_ms = 100;
    o.retry_jitter_ms = 50;
    o.op_timeout_ms = 1000; /* the budget is the subject: no timeout under valgrind beside another test */
    uv_loop_init(&L);
    redlock_async_t *a = new_handle(NULL, 5, &o);
    static char res[W][24];
    for (int i = 0; i < W; i++) {
        snprintf(res[i], sizeof res[i], "poll:%d", i);
        for (int n = 0; n < 5; n++) cr_assert_eq(tc_set(&C, n, res[i], "another-client", 600000), 0);
    }
    g_many_done = g_many_taken = 0;
    uint64_t t0 = rt_now_us();
    for (int i = 0; i < W; i++) cr_assert_eq(redlock_async_acquire(a, res[i], 10000, 1000, on_many, NULL), REDLOCK_OK);
    run_count(&g_many_done, W);
    uint64_t ms = (rt_now_us() - t0) / 1000;
    redlock_stats_t s;
    cr_assert_eq(redlock_async_stats(a, &s), REDLOCK_OK);
    cr_assert_eq(g_many_taken, W);
    /* each attempt is one round (a refusal by all needs no clean-up) */
    /* first attempts, a wake-up when each subscription is confirmed (a
     * release just before it would have been missed), polls, last attempts */
    uint64_t windows = ms / 100 + 2, bound = 3 * W + 256 * windows;
    cr_assert_leq(s.rounds.count, bound, "%llu rounds in %llu ms for %d waiters (bound %llu)",
                  (unsigned long long)s.rounds.count, (unsigned long long)ms, W, (unsigned long long)bound);
    cr_assert_geq(s.rounds.count, 2 * W, "every waiter attempts at least twice (first and last)");
    finish();
    for (int n = 0; n < 5; n++) tc_redis_cmd(&C, n, "FLUSHALL");
}

/* What the batch tests saw: the batch's own acquires, and the keys'
 * presence on the nodes while the batch's function ran. */
static struct {
    redlock_lock_t *lock[3];
    int rc[3], cbs;
    int seen_inside; /* nodes holding a batch key while fn ran */
    int free_in_fn;
} B;

static const char *const batch_keys[3] = {"async:batch:0", "async:batch:1", "async:batch:2"};

static void on_batch_acquire(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    int i = (int)(intptr_t)arg;
    B.lock[i] = lock;
    B.rc[i] = rc;
    B.cbs++;
}

/* The batch: starts the three acquires, then watches the nodes for 300 ms
 * (the calls, written at once, would be on them by then: see the control
 * in the test) and counts every node that holds one of the keys. */
static void batch_fn(redlock_async_t *a, void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(redlock_async_acquire(a, batch_keys[i], 10000, 0, on_batch_acquire, (void *)(intptr_t)i),
                     REDLOCK_OK);
    for (int t = 0; t < 30; t++, rt_sleep_ms(10))
        for (int i = 0; i < 3; i++) B.seen_inside += tc_count_value(&C, batch_keys[i], NULL);
    cr_assert_eq(B.cbs, 0, "no callback from inside the batch");
    if (B.free_in_fn) redlock_async_free(a);
}

Test(async, a_batch_sends_its_calls_when_it_returns) {
    uv_loop_init(&L);
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 1000; /* the calls' rounds start in the batch, which waits before they leave */
    new_handle(NULL, (size_t)C.n, &o);
    memset(&B, 0, sizeof B);
    /* A first cycle opens the connections. */
    cr_assert_eq(acquire("async:batch:open", 10000, 0), REDLOCK_OK);
    run_until(1);
    cr_assert_eq(S.rc, REDLOCK_OK);
    cr_assert_eq(redlock_async_release(S.a, S.lock, on_done, NULL), REDLOCK_OK);
    run_until(2);
    /* The control: a call started outside any callback is on the nodes
     * without the loop running. */
    cr_assert_eq(acquire("async:batch:control", 10000, 0), REDLOCK_OK);
    cr_assert_eq(count_soon("async:batch:control", NULL, C.n), C.n, "a lone call is written at once");
    run_until(3);
    cr_assert_eq(S.rc, REDLOCK_OK);
    cr_assert_eq(redlock_async_release(S.a, S.lock, on_done, NULL), REDLOCK_OK);
    run_until(4);

    cr_assert_eq(redlock_async_batch(S.a, batch_fn, NULL), REDLOCK_OK);
    cr_assert_eq(B.seen_inside, 0, "a batch's call left before the batch returned");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(count_soon(batch_keys[i], NULL, C.n), C.n, "%s is written when the batch returns", batch_keys[i]);
    run_count(&B.cbs, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(B.rc[i], REDLOCK_OK, "%s: %s", batch_keys[i], redlock_strerror(B.rc[i]));
        cr_assert_eq(count_soon(batch_keys[i], redlock_lock_token(B.lock[i]), C.n), C.n);
        cr_assert_eq(redlock_async_release(S.a, B.lock[i], NULL, NULL), REDLOCK_OK);
    }
    for (int i = 0; i < 3; i++) cr_assert_eq(count_soon(batch_keys[i], NULL, 0), 0, "%s released", batch_keys[i]);
    cr_assert_eq(redlock_async_batch(NULL, batch_fn, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_async_batch(S.a, NULL, NULL), REDLOCK_ERR_INVALID);
    finish();
}

Test(async, a_batch_may_free_its_handle) {
    uv_loop_init(&L);
    new_handle(NULL, (size_t)C.n, NULL);
    memset(&B, 0, sizeof B);
    B.free_in_fn = 1;
    cr_assert_eq(redlock_async_batch(S.a, batch_fn, NULL), REDLOCK_OK);
    cr_assert_eq(B.cbs, 3, "each of the batch's calls ran its callback once, from the free");
    for (int i = 0; i < 3; i++) cr_assert_eq(B.rc[i], REDLOCK_ERR_CANCELLED);
    for (int i = 0; i < 3; i++) cr_assert_eq(count_soon(batch_keys[i], NULL, 0), 0, "%s never set", batch_keys[i]);
    cr_assert_eq(uv_run(&L, UV_RUN_DEFAULT), 0, "something left on the loop");
    cr_assert_eq(uv_loop_close(&L), 0);
}

/* A loop that stalls past op_timeout_ms (its thread descheduled on a busy
 * machine) finds the nodes' replies waiting in its sockets. libuv runs its
 * due timers before it polls, so the handle's deadline timer comes first:
 * the replies must be read and counted, not the nodes timed out. */
Test(async, a_loop_stalled_past_the_op_timeout_counts_the_replies_waiting) {
    uv_loop_init(&L);
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 50;
    new_handle(NULL, (size_t)C.n, &o);
    cr_assert_eq(acquire("async:stall:warm", 10000, 0), REDLOCK_OK); /* connected */
    run_until(1);
    cr_assert_eq(S.rc, REDLOCK_OK);
    cr_assert_eq(release_held(), REDLOCK_OK);
    run_until(2);
    cr_assert_eq(S.last_rc, REDLOCK_OK);
    for (int cycle = 0; cycle < 3; cycle++) {
        int base = S.cbs;
        cr_assert_eq(acquire("async:stall", 10000, 0), REDLOCK_OK); /* written at once */
        rt_sleep_ms(300);                                           /* the stall: every node answers meanwhile */
        run_until(base + 1);
        cr_assert_eq(S.rc, REDLOCK_OK, "cycle %d: the acquire after a 300 ms stall: %zu yes, %zu no, %zu failed", cycle,
                     S.yes, S.no, S.failed);
        cr_assert_eq(S.failed, 0u, "cycle %d: a node whose reply waited in its socket failed", cycle);
        cr_assert_eq(release_held(), REDLOCK_OK);
        rt_sleep_ms(300);
        run_until(base + 2);
        cr_assert_eq(S.last_rc, REDLOCK_OK, "cycle %d: the release after a 300 ms stall", cycle);
        cr_assert_eq(count_soon("async:stall", NULL, 0), 0, "cycle %d", cycle);
    }
    finish();
}
