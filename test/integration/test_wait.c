/* test_wait.c -- waiting for a taken lock (doc/design.md, "Waiting"): the release
 * announces itself on redlock:released:<resource> and the announcement
 * wakes a waiter of another client long before its poll (and still
 * reaches it by polling when its subscriber connections are killed); a
 * waiter tries again when the holder's key expires rather than a whole
 * retry delay later; local waiters queue in arrival order; waits can be
 * cancelled from another thread or a signal handler with nothing left
 * set; bad waits are refused at once. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "rltest.h"
#include "waiting.h"

static tc_cluster_t C;
static void setup(void) {
    rt_setup(&C);
}
TestSuite(wait, .init = setup, .timeout = 120);

/* Sets key = value with a TTL on every node: a holder that never releases. */
static void hold_raw(const char *key, const char *value, long long px) {
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_set(&C, i, key, value, px), 0);
}

/* A subscriber on node 0 to the release channel of resource. */
static redisContext *subscribe(const char *resource) {
    redisContext *s = tc_connect(&C, 0);
    cr_assert_not_null(s);
    redisReply *r = redisCommand(s, "SUBSCRIBE redlock:released:%s", resource);
    cr_assert_not_null(r);
    freeReplyObject(r);
    redisSetTimeout(s, (struct timeval){0, 500000});
    return s;
}

/* The next message's channel on s, or "" when none came within 500 ms. */
static void next_message(redisContext *s, char *channel, size_t n) {
    channel[0] = '\0';
    redisReply *r = NULL;
    if (redisGetReply(s, (void **)&r) != REDIS_OK || !r) return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && !strcmp(r->element[0]->str, "message"))
        snprintf(channel, n, "%s", r->element[1]->str);
    freeReplyObject(r);
}

Test(wait, a_release_announces_itself_and_a_clean_up_does_not) {
    static const char *const names[] = {"w:pub", "w:ü {x} *?[a] \\x\"q",
                                        "w:"
                                        "\x01\x7f\xfe"};
    redlock_t *rl = rt_new(&C, 5, NULL);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        redisContext *s = subscribe(names[k]);
        redlock_lock_t *l = NULL;
        cr_assert_eq(redlock_acquire(rl, names[k], 10000, &l), REDLOCK_OK);
        cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
        char ch[512], want[512];
        next_message(s, ch, sizeof ch);
        snprintf(want, sizeof want, "redlock:released:%s", names[k]);
        cr_assert_str_eq(ch, want, "name %zu", k);
        /* a refused attempt's clean-up releases nothing of another's and says nothing */
        hold_raw(names[k], "someone-else", 10000);
        cr_assert_eq(redlock_try_acquire(rl, names[k], 10000, &l), REDLOCK_ERR_TAKEN);
        next_message(s, ch, sizeof ch);
        cr_assert_str_empty(ch, "a clean-up announced a release");
        for (int i = 0; i < C.n; i++) tc_del(&C, i, names[k]);
        redisFree(s);
    }
    redlock_free(rl);
}

Test(wait, a_crashed_holder_is_succeeded_when_its_ttl_ends_not_a_poll_later) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 100;
    o.retry_delay_ms = 2000; /* a poll would come 2 s after the attempt */
    o.retry_jitter_ms = 0;
    o.op_timeout_ms = 1000; /* a slow (sanitized, loaded) run must not turn refusals into timeouts */
    o.node_down_ms = 5000;
    redlock_t *rl = rt_new(&C, 5, &o);
    hold_raw("w:crashed", "crashed-holder", 600); /* its holder is gone: nobody releases */
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    uint64_t t = rt_now_us();
    cr_assert_eq(redlock_acquire_ex(rl, "w:crashed", 5000, 5000, &l, &rep), REDLOCK_OK, "%s", rep.message);
    uint64_t took = (rt_now_us() - t) / 1000;
    cr_assert_geq(took, 550, "granted before the holder's key expired (%llu ms)", (unsigned long long)took);
    cr_assert_lt(took, 1500, "granted %llu ms after the start: the 2 s poll, not the holder's TTL",
                 (unsigned long long)took);
    cr_assert(rep.attempts >= 2 && rep.attempts <= 3, "%u attempts", rep.attempts);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    redlock_free(rl);
}

/* ------------------------------------------------- waking on a release */

/* Options for the wake-up tests: a poll would come 2 s after a refusal. */
static void slow_poll_options(redlock_options_t *o, uint32_t delay_ms) {
    rt_options(o);
    o->retry_count = 100;
    o->retry_delay_ms = delay_ms;
    o->retry_jitter_ms = 0;
    o->op_timeout_ms = 1000; /* a slow (sanitized, loaded) run must not turn refusals into timeouts */
    o->node_down_ms = 5000;
}

Test(wait, a_release_wakes_a_waiter_of_another_client_long_before_its_poll) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    redlock_t *h = rt_new(&C, 5, NULL), *w = rt_new(&C, 5, &o);
    unsigned attempts = 0;
    uint64_t ms = handoff_ms(h, w, "w:wake ü *?[x] \x01", &attempts); /* any bytes make a channel */
    cr_assert_lt(ms, 500, "granted %llu ms after the release: the 2 s poll, not the announcement",
                 (unsigned long long)ms);
    /* refused, once more when the subscription was confirmed, granted; no poll */
    cr_assert(attempts >= 2 && attempts <= 4, "%u attempts", attempts);
#ifndef RL_TEST_ASYNC
    redlock_stats_t st;
    cr_assert_eq(redlock_stats(w, &st), REDLOCK_OK);
    cr_assert_eq(st.waits, 1, "waits %llu", (unsigned long long)st.waits);
    /* one per node's announcement at most (one when the first wakes it before the others arrive) */
    cr_assert(st.wakeups >= 1 && st.wakeups <= 5, "wakeups %llu", (unsigned long long)st.wakeups);
#endif
    redlock_free(w);
    redlock_free(h);
}

/* A waiter whose wait ends before its next poll would come (wait_ms
 * shorter than the retry delay) still waits its whole bound: the attempt
 * its subscription prompts early is not its last. */
typedef struct short_waiter {
    redlock_t *rl;
    const char *resource;
    int64_t wait_ms;
    int rc;
    unsigned attempts;
    uint64_t took_ms;
    char message[256];
} short_waiter_t;

static void *short_wait_thread(void *arg) {
    short_waiter_t *w = arg;
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    uint64_t t = rt_now_us();
    w->rc = redlock_acquire_ex(w->rl, w->resource, 5000, w->wait_ms, &l, &rep);
    w->took_ms = (rt_now_us() - t) / 1000;
    w->attempts = rep.attempts;
    snprintf(w->message, sizeof w->message, "%s", rep.message);
    if (w->rc == REDLOCK_OK) w->rc = redlock_release(w->rl, l);
    return NULL;
}

/* ------------------------------------------------- the line of handles */

/* HLEN of resource's line on node i (-1: unreachable or an error). */
static long long line_len(int i, const char *resource) {
    redisContext *c = tc_connect(&C, i);
    if (!c) return -1;
    redisReply *r = redisCommand(c, "HLEN %s:redlock:line", resource);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Waits (at most 10 s) until resource's line on every node has want
 * places; returns 1 when it did. */
static int await_line(const char *resource, long long want) {
    for (int t = 0; t < 1000; t++) {
        int ok = 1;
        for (int i = 0; i < C.n && ok; i++) ok = line_len(i, resource) == want;
        if (ok) return 1;
        rt_sleep_ms(10);
    }
    return 0;
}

/* The messages that reach s (a subscriber, or a pattern subscriber when
 * pattern) until none comes for 500 ms: how many, and the last one's text
 * into last. */
static int drain_messages(redisContext *s, int pattern, char *last, size_t n) {
    int count = 0;
    last[0] = '\0';
    redisReply *r = NULL;
    while (redisGetReply(s, (void **)&r) == REDIS_OK && r) {
        size_t at = pattern ? 3 : 2;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == at + 1 && r->element[at]->type == REDIS_REPLY_STRING)
            count++, snprintf(last, n, "%s", r->element[at]->str);
        freeReplyObject(r);
        r = NULL;
    }
    return count;
}

Test(wait, a_release_names_the_longest_waiting_handle_and_wakes_only_it) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    const char *res = "w:line";
    redlock_t *h = rt_new(&C, 5, NULL), *w[3];
    redlock_lock_t *l = hold(h, res);
    /* what node 0 announces: on the resource's channel, and on the handles' own */
    redisContext *everyone = subscribe(res), *own = tc_connect(&C, 0);
    cr_assert_not_null(own);
    redisReply *pr = redisCommand(own, "PSUBSCRIBE redlock:next:*");
    cr_assert_not_null(pr);
    freeReplyObject(pr);
    redisSetTimeout(own, (struct timeval){0, 500000});
    waiter_t ww[3];
    pthread_t t[3];
    for (int k = 0; k < 3; k++) { /* each queued on every node before the next starts */
        w[k] = rt_new(&C, 5, &o);
        ww[k] = (waiter_t){w[k], res, 1, 0, 0};
        pthread_create(&t[k], NULL, wait_thread, &ww[k]);
        cr_assert(await_line(res, k + 1), "waiter %d has no place in the line after 10 s", k);
    }
    rt_sleep_ms(100); /* (each has heard its subscription confirmed and tried once more) */
    cr_assert_eq(redlock_release(h, l), REDLOCK_OK);
    for (int k = 0; k < 3; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(ww[k].rc, REDLOCK_OK, "waiter %d: %s", k, redlock_strerror(ww[k].rc));
        if (k) cr_assert_gt(ww[k].done_us, ww[k - 1].done_us, "waiter %d was granted before waiter %d", k, k - 1);
        /* refused, once more when its subscription was confirmed, then only when named: never
         * woken by a release that named another (a named attempt that reached a node before the
         * release did splits the vote, and is made again when that node names it too) */
        redlock_stats_t st;
        cr_assert_eq(redlock_stats(w[k], &st), REDLOCK_OK);
        cr_assert_leq(ww[k].attempts, 3 + st.splits, "waiter %d made %u attempts, %llu of them split", k,
                      ww[k].attempts, (unsigned long long)st.splits);
    }
    cr_assert(await_line(res, 0), "places are left in the line after every waiter was granted and released");
    /* each release named the next waiter on its own channel; only the last, naming nobody, went to all */
    char last[128];
    int named = drain_messages(own, 1, last, sizeof last);
    cr_assert_eq(named, 3, "%d releases were announced to a handle alone", named);
    cr_assert_str_eq(last, res, "a handle was told of '%s'", last);
    int told = drain_messages(everyone, 0, last, sizeof last);
    cr_assert_eq(told, 1, "%d releases were announced to every handle", told);
    cr_assert_str_empty(last, "the last release named '%s'", last);
    redisFree(own);
    redisFree(everyone);
    for (int k = 0; k < 3; k++) redlock_free(w[k]);
    redlock_free(h);
}

Test(wait, a_named_handle_that_let_its_turn_pass_costs_a_poll_and_loses_its_place) {
    redlock_options_t o;
    slow_poll_options(&o, 600);
    const char *res = "w:line-gone";
    redlock_t *h = rt_new(&C, 5, NULL), *w = rt_new(&C, 5, &o);
    redlock_lock_t *l = hold(h, res);
    /* a handle that queued first and is gone since (its place lives for minutes more) */
    for (int i = 0; i < C.n; i++)
        cr_assert_eq(tc_redis_cmd(&C, i, "HSET %s:redlock:line gone-handle %s", res, "1 99999999999999 0"), 0);
    waiter_t ww = {w, res, 1, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &ww);
    cr_assert(await_line(res, 2), "the waiter has no place in the line after 10 s");
    rt_sleep_ms(100);
    uint64_t ms = release_and_join_ms(h, l, t, &ww);
    /* the release named the gone handle: the waiter slept on to its poll, which took the lock */
    cr_assert_geq(ms, 250, "granted %llu ms after a release that named another", (unsigned long long)ms);
    cr_assert_lt(ms, 5000, "granted %llu ms after the release: its poll did not come", (unsigned long long)ms);
    /* the waiter's release found the gone handle named before and not queued since: deleted */
    cr_assert(await_line(res, 0), "the gone handle (or the waiter) kept its place");
    redlock_free(w);
    redlock_free(h);
}

Test(wait, a_waiter_that_gives_up_leaves_the_line) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    const char *res = "w:line-give-up";
    redlock_t *w = rt_new(&C, 5, &o);
    hold_raw(res, "holder", 30000);
    short_waiter_t sw = {w, res, 500, 1, 0, 0, ""};
    pthread_t t;
    pthread_create(&t, NULL, short_wait_thread, &sw);
    cr_assert(await_line(res, 1), "the waiter has no place in the line after 10 s");
    pthread_join(t, NULL);
    cr_assert_eq(sw.rc, REDLOCK_ERR_TAKEN, "%s", redlock_strerror(sw.rc));
    cr_assert(await_line(res, 0), "a waiter that gave up kept its place in the line");
    for (int i = 0; i < C.n; i++) tc_del(&C, i, res);
    redlock_free(w);
}

Test(wait, a_wait_shorter_than_the_retry_delay_lasts_its_whole_bound) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    redlock_t *w = rt_new(&C, 5, &o);
    hold_raw("w:short", "holder", 60000); /* nobody releases it */
    short_waiter_t sw = {w, "w:short", 600, 0, 0, 0, ""};
    short_wait_thread(&sw);
    cr_assert_eq(sw.rc, REDLOCK_ERR_TAKEN, "%s", redlock_strerror(sw.rc));
    cr_assert(sw.took_ms >= 550 && sw.took_ms < 2000, "gave up after %llu ms of a 600 ms wait: %s",
              (unsigned long long)sw.took_ms, sw.message);
    /* refused, once more when the subscription was confirmed, and the last at the bound */
    cr_assert(sw.attempts >= 3, "%u attempts: %s", sw.attempts, sw.message);
    redlock_free(w);
}

Test(wait, a_wait_shorter_than_the_retry_delay_is_granted_by_a_release_within_it) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    redlock_t *h = rt_new(&C, 5, NULL), *w = rt_new(&C, 5, &o);
    redlock_lock_t *l = NULL;
    cr_assert_eq(redlock_acquire(h, "w:short:released", 30000, &l), REDLOCK_OK);
    short_waiter_t sw = {w, "w:short:released", 1500, 1, 0, 0, ""};
    pthread_t t;
    pthread_create(&t, NULL, short_wait_thread, &sw);
    rt_sleep_ms(400); /* refused, subscribed; its next poll would come after its bound */
    cr_assert_eq(redlock_release(h, l), REDLOCK_OK);
    pthread_join(t, NULL);
    cr_assert_eq(sw.rc, REDLOCK_OK, "%s after %llu ms: %s", redlock_strerror(sw.rc), (unsigned long long)sw.took_ms,
                 sw.message);
    redlock_free(w);
    redlock_free(h);
}

Test(wait, a_release_by_the_same_handle_wakes_its_local_waiter) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    redlock_t *rl = rt_new(&C, 5, &o);
    uint64_t ms = handoff_ms(rl, rl, "w:wake-local", NULL);
    cr_assert_lt(ms, 500, "granted %llu ms after the release", (unsigned long long)ms);
    redlock_free(rl);
}

#ifndef RL_TEST_ASYNC
/* Kills every pub/sub connection on every node (the waiters' subscribers). */
static void kill_subscribers(void) {
    for (int i = 0; i < C.n; i++) tc_redis_cmd(&C, i, "CLIENT KILL TYPE pubsub");
}

Test(wait, a_waiter_whose_subscribers_are_killed_falls_back_to_polling_then_resubscribes) {
    redlock_options_t o;
    slow_poll_options(&o, 600);
    o.reconnect_min_ms = 100;
    redlock_t *h = rt_new(&C, 5, NULL), *w = rt_new(&C, 5, &o);
    redlock_lock_t *l = NULL;
    cr_assert_eq(redlock_acquire(h, "w:fallback", 30000, &l), REDLOCK_OK);
    waiter_t ww = {w, "w:fallback", 1, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &ww);
    rt_sleep_ms(200);
    kill_subscribers(); /* the announcement is lost: only the poll can find the lock free */
    uint64_t ms = release_and_join_ms(h, l, t, &ww);
    cr_assert_lt(ms, 1500, "not granted by the 600 ms poll either (%llu ms)", (unsigned long long)ms);
    /* the subscribers come back: the next release wakes at once again */
    rt_sleep_ms(500);
    uint64_t again = handoff_ms(h, w, "w:fallback", NULL);
    cr_assert_lt(again, 300, "after the reconnect, granted %llu ms after the release", (unsigned long long)again);
    redlock_free(w);
    redlock_free(h);
}
#endif

/* ------------------------------------------------------ the local queue */

Test(wait, staggered_expiries_are_waited_for_until_a_quorum_is_free) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 100;
    o.retry_delay_ms = 2000;
    o.retry_jitter_ms = 0;
    o.op_timeout_ms = 1000;
    o.node_down_ms = 5000;
    redlock_t *rl = rt_new(&C, 5, &o);
    uint64_t t = rt_now_us();
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_set(&C, i, "w:stagger", "gone", 400 + 100 * i), 0);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "w:stagger", 5000, 5000, &l, &rep), REDLOCK_OK, "%s", rep.message);
    uint64_t took = (rt_now_us() - t) / 1000;
    /* a quorum (3 of 5) is free once the third key expires, 600 ms after they were set */
    cr_assert_geq(took, 580, "granted at %llu ms, before a quorum was free", (unsigned long long)took);
    cr_assert_lt(took, 1500, "granted at %llu ms: the 2 s poll, not the expiries", (unsigned long long)took);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    redlock_free(rl);
}

/* A holder's keys on 3 of 5 nodes: the first attempt splits (2 yes, 3 no).
 * The split's backoff must come after the keys' expiry, not in place of
 * it, or the default 3 retries are spent within a few round trips. */
Test(wait, a_split_by_a_holders_keys_is_waited_out_with_the_default_retries) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 3;       /* the default */
    o.retry_delay_ms = 2000; /* a poll would come after the wait's end */
    o.retry_jitter_ms = 0;
    o.op_timeout_ms = 1000;
    o.node_down_ms = 5000;
    redlock_t *rl = rt_new(&C, 5, &o);
    uint64_t t = rt_now_us();
    for (int i = 2; i < C.n; i++) cr_assert_eq(tc_set(&C, i, "w:split", "gone", 500), 0);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "w:split", 5000, 1500, &l, &rep), REDLOCK_OK, "%s", rep.message);
    uint64_t took = (rt_now_us() - t) / 1000;
    cr_assert_geq(took, 480, "granted at %llu ms, before the keys expired", (unsigned long long)took);
    cr_assert_leq(rep.attempts, 4, "%u attempts", rep.attempts);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    redlock_free(rl);
}

/* A holder that won without node 0 (another client's key was there) holds
 * 4 of 5 nodes: a waiter's attempts get node 0's yes and split. The same
 * quorum refusing twice is that holder, not a collision: the waiter waits
 * for the release as after a refusal, not retrying a fraction of a round
 * trip later again and again (an attempt and a clean-up each time). */
Test(wait, a_holder_short_of_a_node_is_waited_for_not_split_on_again_and_again) {
    redlock_options_t o;
    slow_poll_options(&o, 2000);
    redlock_t *h = rt_new(&C, 5, NULL), *w = rt_new(&C, 5, &o);
    cr_assert_eq(tc_set(&C, 0, "w:short", "another-client", 30000), 0);
    redlock_lock_t *l = hold(h, "w:short");
    /* h's refusal by node 0 (answered after its quorum) left h's place in node 0's line */
    for (int k = 0; k < 1000 && line_len(0, "w:short") < 1; k++) rt_sleep_ms(10);
    cr_assert_eq(tc_del(&C, 0, "w:short"), 1, "node 0 still had the other client's key");
    redlock_stats_t s0, s1;
    cr_assert_eq(redlock_stats(w, &s0), REDLOCK_OK);
    waiter_t ww = {w, "w:short", 1, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &ww);
    /* its first attempt (a fresh handle: it connects first) splits; then 500 ms of waiting */
    for (int k = 0; k < 1000 && (redlock_stats(w, &s1) != REDLOCK_OK || s1.splits == s0.splits); k++) rt_sleep_ms(10);
    cr_assert_gt(s1.splits, s0.splits, "the waiter's attempt did not split in 10 s");
    rt_sleep_ms(500);
    cr_assert_eq(redlock_stats(w, &s1), REDLOCK_OK);
    uint64_t released = rt_now_us();
    redlock_report_t rep;
    cr_assert_eq(redlock_release_ex(h, l, &rep), REDLOCK_OK, "%s", rep.message);
    pthread_join(t, NULL);
    cr_assert_eq(ww.rc, REDLOCK_OK, "%s", redlock_strerror(ww.rc));
    uint64_t ms = (ww.done_us - released) / 1000;
    cr_assert_lt(ms, 1500, "granted %llu ms after the release: the 2 s poll, not the announcement",
                 (unsigned long long)ms);
    /* one split, or two when a slow node's vote failed the first time; polling in splits makes dozens */
    unsigned long long splits = (unsigned long long)(s1.splits - s0.splits);
    cr_assert(splits >= 1 && splits <= 2, "%llu split votes until 500 ms after the first", splits);
    cr_assert_leq(ww.attempts, 5, "%u attempts", ww.attempts);
    redlock_free(w);
    redlock_free(h);
}

typedef struct fifo {
    redlock_t *rl;
    const char *resource;
    int id;
    atomic_int *next_rank;
    int rank; /* order of the grant, from 0 */
    int rc;
} fifo_t;

/* A waiter that, once granted, holds for 20 ms and releases. */
static void *fifo_waiter(void *arg) {
    fifo_t *f = arg;
    redlock_lock_t *l = NULL;
    f->rc = redlock_acquire_ex(f->rl, f->resource, 5000, 20000, &l, NULL);
    if (f->rc != REDLOCK_OK) return NULL;
    f->rank = atomic_fetch_add(f->next_rank, 1);
    rt_sleep_ms(20);
    f->rc = redlock_release(f->rl, l);
    return NULL;
}

/* Waits (up to 10 s) until n callers of rl have begun to wait for a
 * release (its waits counter): the n-th waiter has joined the local queue.
 * Returns the count reached. */
static unsigned long long await_waiters(redlock_t *rl, unsigned long long n) {
    redlock_stats_t st = {0};
    for (int i = 0; i < 2000; i++) {
        if (redlock_stats(rl, &st) == REDLOCK_OK && st.waits >= n) break;
        rt_sleep_ms(5);
    }
    return st.waits;
}

Test(wait, local_waiters_are_granted_in_arrival_order) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 100000;
    o.retry_delay_ms = 30;
    o.retry_jitter_ms = 10;
    redlock_t *rl = rt_new(&C, 5, &o);
    hold_raw("w:fifo", "holder", 60000);
    atomic_int next_rank = 0;
    fifo_t f[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) { /* arrive one after another: each queued before the next starts */
        f[i] = (fifo_t){rl, "w:fifo", i, &next_rank, -1, 1};
        pthread_create(&t[i], NULL, fifo_waiter, &f[i]);
        unsigned long long w = await_waiters(rl, (unsigned long long)i + 1);
        cr_assert_geq(w, (unsigned long long)i + 1, "waiter %d not waiting after 10 s (%llu waiting)", i, w);
        rt_sleep_ms(10);
    }
    for (int i = 0; i < C.n; i++) tc_del(&C, i, "w:fifo"); /* the holder goes */
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(f[i].rc, REDLOCK_OK, "waiter %d: %s", i, redlock_strerror(f[i].rc));
        cr_assert_eq(f[i].rank, i, "waiter %d (arrived %d-th) was granted %d-th", i, i, f[i].rank);
    }
    redlock_free(rl);
}

Test(wait, a_queued_waiter_gives_up_at_its_deadline_and_says_how_long_it_waited) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 100000;
    o.retry_delay_ms = 50;
    o.retry_jitter_ms = 10;
    redlock_t *rl = rt_new(&C, 5, &o);
    hold_raw("w:queued", "holder", 60000);
    atomic_int rank = 0;
    fifo_t head = {rl, "w:queued", 0, &rank, -1, 1};
    pthread_t t;
    pthread_create(&t, NULL, fifo_waiter, &head); /* the head of the local queue */
    rt_sleep_ms(100);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    uint64_t start = rt_now_us();
    int rc = redlock_acquire_ex(rl, "w:queued", 5000, 300, &l, &rep); /* queued behind it */
    uint64_t took = (rt_now_us() - start) / 1000;
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN, "%s", redlock_strerror(rc));
    cr_assert(took >= 280 && took < 2000, "gave up after %llu ms", (unsigned long long)took);
    cr_assert(strstr(rep.message, "waited") && strstr(rep.message, "ms"), "how long it waited: %s", rep.message);
    for (int i = 0; i < C.n; i++) tc_del(&C, i, "w:queued"); /* the holder goes: the head gets it */
    pthread_join(t, NULL);
    cr_assert_eq(head.rc, REDLOCK_OK, "%s", redlock_strerror(head.rc));
    redlock_free(rl);
}

#ifndef RL_TEST_ASYNC /* redlock_cancel_waits and re-entry belong to the blocking API */
/* A handle over the 5 nodes whose callers retry (every delay_ms) while they may wait. */
static redlock_t *waiting_rl(uint32_t delay_ms, int reentrant) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 1000;
    o.retry_delay_ms = delay_ms;
    o.reentrant = reentrant;
    return rt_new(&C, 5, &o);
}

Test(wait, cancel_waits_from_another_thread_ends_every_wait_with_nothing_set) {
    redlock_t *rl = waiting_rl(200, 1);
    hold_raw("w:cancel", "holder", 30000);
    waiter_t w[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (waiter_t){rl, "w:cancel", 1, 0, 0};
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    }
    rt_sleep_ms(500);
    uint64_t at = rt_now_us();
    redlock_cancel_waits(rl);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].rc, REDLOCK_ERR_CANCELLED, "waiter %d: %s", i, redlock_strerror(w[i].rc));
        cr_assert_lt((w[i].done_us - at) / 1000, 500, "waiter %d took %llu ms to stop", i,
                     (unsigned long long)((w[i].done_us - at) / 1000));
    }
    cr_assert_eq(tc_count_value(&C, "w:cancel", "holder"), 5, "the holder's key is untouched everywhere");
    /* a wait that starts after the cancel is not cancelled: it waits its bound */
    redlock_report_t rep;
    redlock_lock_t *l = NULL;
    cr_assert_eq(redlock_acquire_ex(rl, "w:cancel", 5000, 300, &l, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    redlock_free(rl);
}

static redlock_t *g_sig_rl;

/* SIGUSR1: ends the waits of g_sig_rl (async-signal-safe). */
static void on_usr1(int sig) {
    (void)sig;
    redlock_cancel_waits(g_sig_rl);
}

typedef struct poke {
    pthread_t target;
    unsigned after_ms;
} poke_t;

/* Sends SIGUSR1 to the target thread after a while. */
static void *poke_thread(void *arg) {
    poke_t *p = arg;
    rt_sleep_ms(p->after_ms);
    pthread_kill(p->target, SIGUSR1);
    return NULL;
}

Test(wait, cancel_waits_from_a_signal_handler) {
    redlock_t *rl = g_sig_rl = waiting_rl(300, 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    hold_raw("w:signal", "holder", 30000);
    poke_t p = {pthread_self(), 400};
    pthread_t t;
    pthread_create(&t, NULL, poke_thread, &p);
    redlock_lock_t *l = NULL;
    uint64_t start = rt_now_us();
    int rc = redlock_acquire_ex(rl, "w:signal", 5000, 20000, &l, NULL);
    uint64_t took = (rt_now_us() - start) / 1000;
    pthread_join(t, NULL);
    cr_assert_eq(rc, REDLOCK_ERR_CANCELLED, "%s", redlock_strerror(rc));
    cr_assert_lt(took, 1500, "the wait went on for %llu ms", (unsigned long long)took);
    cr_assert_eq(tc_count_value(&C, "w:signal", "holder"), 5);
    redlock_free(rl);
}

Test(wait, waiting_for_ones_own_lock_without_reentrancy_is_a_deadlock_error) {
    redlock_t *rl = waiting_rl(200, 0);
    redlock_lock_t *l = NULL, *again = NULL;
    cr_assert_eq(redlock_acquire(rl, "w:self", 10000, &l), REDLOCK_OK);
    redlock_report_t rep;
    uint64_t t = rt_now_us();
    cr_assert_eq(redlock_acquire_ex(rl, "w:self", 10000, 5000, &again, &rep), REDLOCK_ERR_DEADLOCK);
    cr_assert_lt((rt_now_us() - t) / 1000, 100, "refused at once");
    cr_assert(strstr(rep.message, "w:self") && strstr(rep.message, "reentrancy is off"), "%s", rep.message);
    cr_assert_null(again);
    /* one attempt (no wait) is simply refused */
    cr_assert_eq(redlock_try_acquire(rl, "w:self", 10000, &again), REDLOCK_ERR_TAKEN);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    redlock_free(rl);
}

#endif

Test(wait, wait_below_minus_one_is_invalid_and_names_the_value) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "w:bad", 10000, -2, &l, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "wait_ms=-2"), "%s", rep.message);
    const char *set[2] = {"w:a", "w:b"};
    cr_assert_eq(redlock_acquire_multi(rl, set, 2, 10000, -7, &l, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "wait_ms=-7"), "%s", rep.message);
    cr_assert_null(l);
    redlock_free(rl);
}
