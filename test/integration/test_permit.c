/* test_permit.c -- semaphores (doc/design.md, "Semaphores and read-write
 * locks"): a permit is a Redlock mutex on one of `limit` slot keys
 * "<resource>:permit:<i>"; never more than `limit` holders; a release frees
 * a slot for a waiter, waking it; the permit extends and releases like any
 * lock; bad limits and names are refused at once. Also built with
 * -DRL_TEST_ASYNC (the async API). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"
#include "waiting.h"

static tc_cluster_t C;
static void setup(void) {
    rt_setup(&C);
}
TestSuite(permit, .init = setup, .timeout = 120);

/* Nodes on which key holds value. */
static int nodes_holding(const char *key, const char *value) {
    return tc_count_value(&C, key, value);
}

Test(permit, at_most_limit_holders_each_on_its_own_slot) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *p[3] = {NULL, NULL, NULL};
    redlock_report_t rep;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(redlock_acquire_permit(rl, "p:two", 2, 10000, 0, &p[i], &rep), REDLOCK_OK, "%s", rep.message);
        cr_assert_eq(rep.slot, i, "permit %d took slot %d", i, rep.slot);
        cr_assert_eq(redlock_lock_slot(p[i]), i);
        char key[64];
        snprintf(key, sizeof key, "p:two:permit:%d", i);
        cr_assert_str_eq(redlock_lock_resource(p[i]), key);
        cr_assert_eq(tc_await_count(&C, key, redlock_lock_token(p[i]), 5), 5, "slot %d on every node", i);
    }
    cr_assert_eq(redlock_acquire_permit(rl, "p:two", 2, 10000, 0, &p[2], &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_null(p[2]);
    cr_assert_eq(rep.slot, -1);
    /* nothing of the refused attempt stays on any slot */
    cr_assert_eq(nodes_holding("p:two:permit:0", redlock_lock_token(p[0])), 5);
    cr_assert_eq(nodes_holding("p:two:permit:1", redlock_lock_token(p[1])), 5);
    cr_assert_eq(redlock_extend(rl, p[0], 20000), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, p[1]), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_permit(rl, "p:two", 2, 10000, 0, &p[2], &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(rep.slot, 1, "the freed slot");
    cr_assert_eq(redlock_release(rl, p[0]), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, p[2]), REDLOCK_OK);
    for (int i = 0; i < 2; i++) {
        char key[64];
        snprintf(key, sizeof key, "p:two:permit:%d", i);
        for (int n = 0; n < C.n; n++) { /* (a node that answered the release late deletes it a moment after) */
            long long pttl = tc_pttl(&C, n, key);
            for (int tries = 0; pttl != -2 && tries < 100; tries++) rt_sleep_ms(10), pttl = tc_pttl(&C, n, key);
            cr_assert_eq(pttl, -2, "%s left on node %d", key, n);
        }
    }
    redlock_free(rl);
}

/* A node the attempt did not wait for may have given the token another
 * slot (a stray) than the one the quorum gave: the permit's release
 * deletes it there, and leaves other holders' alone. (A token holds one
 * slot of a semaphore on a node at the most -- acquire_permit.lua keeps
 * the one it has -- so nodes 3 and 4 here hold the strays instead of
 * slot 0.) */
Test(permit, a_release_clears_the_tokens_stray_slots) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *p = NULL;
    cr_assert_eq(redlock_acquire_permit(rl, "p:stray", 4, 10000, 0, &p, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_lock_slot(p), 0);
    const char *token = redlock_lock_token(p);
    for (int n = 3; n <= 4; n++) /* (wait for the slot the attempt set there: the round did not) */
        for (int t = 0; t < 200 && tc_pttl(&C, n, "p:stray:permit:0") < 0; t++) rt_sleep_ms(5);
    tc_del(&C, 4, "p:stray:permit:0");
    tc_del(&C, 3, "p:stray:permit:0");
    cr_assert_eq(tc_set(&C, 4, "p:stray:permit:2", token, 10000), 0);
    cr_assert_eq(tc_set(&C, 3, "p:stray:permit:3", token, 10000), 0);
    cr_assert_eq(tc_set(&C, 2, "p:stray:permit:1", "another-holder", 10000), 0);
    cr_assert_eq(redlock_release(rl, p), REDLOCK_OK);
    cr_assert_eq(tc_pttl(&C, 4, "p:stray:permit:2"), -2, "the stray on node 4 is left");
    cr_assert_eq(tc_pttl(&C, 3, "p:stray:permit:3"), -2, "the stray on node 3 is left");
    char *v = tc_get(&C, 2, "p:stray:permit:1");
    cr_assert(v && !strcmp(v, "another-holder"), "another holder's slot was touched");
    free(v);
    for (int n = 0; n < C.n; n++) cr_assert_eq(tc_pttl(&C, n, "p:stray:permit:0"), -2, "slot 0 left on node %d", n);
    tc_del(&C, 2, "p:stray:permit:1");
    redlock_free(rl);
}

Test(permit, a_mutex_lock_and_a_permit_of_the_same_name_do_not_meet) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *m = NULL, *p = NULL;
    cr_assert_eq(redlock_acquire(rl, "p:name", 10000, &m), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_permit(rl, "p:name", 1, 10000, 0, &p, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_lock_slot(m), -1);
    cr_assert_eq(redlock_release(rl, p), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, m), REDLOCK_OK);
    redlock_free(rl);
}

typedef struct permit_waiter {
    redlock_t *rl;
    int rc;
    uint64_t done_us;
} permit_waiter_t;

/* Waits up to 8 s for the permit of p:wake, notes when, releases it. */
static void *permit_waiter(void *arg) {
    permit_waiter_t *w = arg;
    redlock_lock_t *l = NULL;
    w->rc = redlock_acquire_permit(w->rl, "p:wake", 1, 5000, 8000, &l, NULL);
    w->done_us = rt_now_us();
    if (w->rc == REDLOCK_OK) w->rc = redlock_release(w->rl, l);
    return NULL;
}

Test(permit, a_release_wakes_a_waiter_for_a_permit_long_before_its_poll) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 100;
    o.retry_delay_ms = 2000;
    o.retry_jitter_ms = 0;
    o.op_timeout_ms = 1000;
    redlock_t *h = rt_new(&C, 5, NULL), *w = rt_new(&C, 5, &o);
    redlock_lock_t *held = NULL;
    cr_assert_eq(redlock_acquire_permit(h, "p:wake", 1, 30000, 0, &held, NULL), REDLOCK_OK);
    permit_waiter_t pw = {w, 1, 0};
    pthread_t t;
    pthread_create(&t, NULL, permit_waiter, &pw);
    rt_sleep_ms(300);
    uint64_t released = rt_now_us();
    cr_assert_eq(redlock_release(h, held), REDLOCK_OK);
    pthread_join(t, NULL);
    cr_assert_eq(pw.rc, REDLOCK_OK, "%s", redlock_strerror(pw.rc));
    uint64_t ms = (pw.done_us - released) / 1000;
    cr_assert_lt(ms, 500, "granted %llu ms after the release: the 2 s poll", (unsigned long long)ms);
    redlock_free(w);
    redlock_free(h);
}

#ifndef RL_TEST_ASYNC
/* Another client holds slot 0 of a limit-2 semaphore on nodes 0-2 only (a
 * quorum: nodes 3 and 4 were away when it took it), so those two have slot
 * 0 free. With nodes 0 and 1 paused the nodes that answer disagree on the
 * first free slot (2 says 1, 3 and 4 say 0), yet slot 1 is free on all
 * three: a second round asks for it and the permit is granted there. */
Test(permit, nodes_that_disagree_on_the_free_slot_still_grant_one_a_quorum_has_free) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 200;
    o.node_down_ms = 10000;
    redlock_t *rl = rt_new(&C, 5, &o);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, "p:split:permit:0", "other-holder", 20000), 0);
    redlock_lock_t *p = NULL;
    redlock_report_t rep;
    cr_assert_eq(tc_node_pause(&C, 0), 0);
    cr_assert_eq(tc_node_pause(&C, 1), 0);
    int rc = redlock_acquire_permit(rl, "p:split", 2, 20000, 0, &p, &rep);
    tc_node_resume(&C, 0);
    tc_node_resume(&C, 1);
    cr_assert_eq(rc, REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(rep.slot, 1);
    rt_sleep_ms(300); /* the paused nodes answer what was queued for them */
    cr_assert_eq(nodes_holding("p:split:permit:0", "other-holder"), 3, "the other holder's slot is untouched");
    cr_assert_eq(nodes_holding("p:split:permit:0", redlock_lock_token(p)), 0, "no stray of ours on slot 0");
    cr_assert_geq(nodes_holding("p:split:permit:1", redlock_lock_token(p)), 3);
    cr_assert_eq(redlock_release(rl, p), REDLOCK_OK);
    for (int i = 0; i < 3; i++) tc_del(&C, i, "p:split:permit:0");
    redlock_free(rl);
}
#endif

Test(permit, each_slot_has_its_own_growing_fencing_token) {
    redlock_options_t o;
    rt_options(&o);
    o.fencing = 1;
    redlock_t *rl = rt_new(&C, 5, &o);
    redlock_lock_t *a = NULL, *b = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_permit(rl, "p:fence", 2, 10000, 0, &a, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_permit(rl, "p:fence", 2, 10000, 0, &b, &rep), REDLOCK_OK, "%s", rep.message);
    uint64_t fa = redlock_lock_fence(a), fb = redlock_lock_fence(b);
    cr_assert(fa > 0 && fb > 0, "tokens %llu %llu", (unsigned long long)fa, (unsigned long long)fb);
    /* recorded on the slot's own counter, on every node */
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)fa);
    cr_assert_eq(tc_await_count(&C, "p:fence:permit:0:redlock:fence", want, 5), 5);
    int slot_a = redlock_lock_slot(a);
    cr_assert_eq(redlock_release(rl, a), REDLOCK_OK);
    redlock_lock_t *c = NULL;
    cr_assert_eq(redlock_acquire_permit(rl, "p:fence", 2, 10000, 0, &c, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_lock_slot(c), slot_a, "the freed slot again");
    cr_assert_gt(redlock_lock_fence(c), fa, "the next holder of a slot gets a greater token");
    cr_assert_eq(redlock_release(rl, b), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, c), REDLOCK_OK);
    redlock_free(rl);
}

Test(permit, bad_limits_and_names_are_invalid_and_named) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *p = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_permit(rl, "p:bad", 0, 10000, 0, &p, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "limit=0"), "%s", rep.message);
    cr_assert_eq(redlock_acquire_permit(rl, "p:bad", 65, 10000, 0, &p, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "limit=65"), "%s", rep.message);
    static char big[1025];
    memset(big, 'x', 1020);
    big[1020] = '\0';
    cr_assert_eq(redlock_acquire_permit(rl, big, 8, 10000, 0, &p, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, ":permit:7"), "%s", rep.message);
    cr_assert_eq(redlock_acquire_permit(rl, "p:bad", 2, 10000, -2, &p, &rep), REDLOCK_ERR_INVALID);
    cr_assert_null(p);
    redlock_free(rl);
}
