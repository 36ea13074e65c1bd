/* test_joint.c -- a joint handle (next_nodes set) against real redis-server
 * processes: every grant needs a quorum of the current list AND of the
 * next one, releases reach both, fencing tokens never go back when a node
 * joins empty, and the report names each node's list(s).
 *
 * The 5-node fixture holds both lists: OLD and NEW below are 3-node
 * subsets (quorum 2 each) that share nodes, as a real change does.
 * Built twice: blocking, and through the async API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(joint, .init = setup, .timeout = 120);

typedef rt_list_t list_t;

/* A handle over cur and, when next is not NULL, next; o: options (NULL:
 * the tests' defaults). */
static redlock_t *handle(const list_t *cur, const list_t *next, const redlock_options_t *o) {
    return rt_new_lists(&C, cur, next, o);
}

/* The fixture nodes holding key with value val, as a bit mask. */
static unsigned holders(const char *key, const char *val) {
    unsigned mask = 0;
    for (int i = 0; i < 5; i++) {
        char *v = tc_get(&C, i, key);
        if (v && !strcmp(v, val)) mask |= 1u << i;
        free(v);
    }
    return mask;
}

/* holders() once it is want, or after 2 s (a call returns at its quorum;
 * the other nodes' writes and deletes land a moment later). */
static unsigned await_holders(const char *key, const char *val, unsigned want) {
    unsigned got = holders(key, val);
    for (int i = 0; i < 200 && got != want; i++) {
        rt_sleep_ms(10);
        got = holders(key, val);
    }
    return got;
}

/* Puts another owner's key on the nodes of mask (10 s TTL). */
static void foreign(const char *key, unsigned mask) {
    for (int i = 0; i < 5; i++)
        if (mask & (1u << i)) cr_assert_eq(tc_set(&C, i, key, "someone-else", 10000), 0, "SET on node %d", i);
}

static const list_t OLD = {3, {0, 1, 2}}, NEW = {3, {2, 3, 4}}, OLD_SHIFTED = {3, {1, 2, 3}};

Test(joint, a_grant_is_written_to_both_lists_and_released_from_both) {
    redlock_t *rl = handle(&OLD, &OLD_SHIFTED, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "joint:both", 10000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(rep.n_nodes, 4, "one node per distinct server: %zu", rep.n_nodes);
    cr_assert_eq(rep.n_lists, 2);
    const unsigned want[4] = {REDLOCK_IN_NODES, REDLOCK_IN_NODES | REDLOCK_IN_NEXT_NODES,
                              REDLOCK_IN_NODES | REDLOCK_IN_NEXT_NODES, REDLOCK_IN_NEXT_NODES};
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(rep.nodes[i].lists, want[i], "node %zu: lists %u", i, rep.nodes[i].lists);
    cr_assert_eq(rep.lists[0].n_nodes, 3);
    cr_assert_eq(rep.lists[1].n_nodes, 3);
    cr_assert_geq(rep.lists[0].yes, 2, "old list: %zu yes", rep.lists[0].yes);
    cr_assert_geq(rep.lists[1].yes, 2, "new list: %zu yes", rep.lists[1].yes);
    char token[REDLOCK_TOKEN_LEN + 1];
    strcpy(token, redlock_lock_token(lk));
    cr_assert_eq(await_holders("joint:both", token, 0xf), 0xf, "the lock is not on nodes 0..3 only: mask %#x",
                 holders("joint:both", token));
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(await_holders("joint:both", token, 0), 0, "the release left the key on mask %#x",
                 holders("joint:both", token));
    redlock_free(rl);
}

/* A joint acquire of key while another owner holds it on the nodes of
 * taken, which leave list k (0 OLD, 1 NEW) short of its quorum while the
 * other list has every node free: refused, the message giving both
 * tallies, the other owner's keys untouched and the attempt's cleaned up.
 * (The round ends once list k cannot make its quorum: the other list's
 * count may be partial.) */
static void refused_for_one_list(const char *key, unsigned taken, int k) {
    static const char *const name[2] = {"OLD", "NEW"};
    foreign(key, taken);
    redlock_t *rl = handle(&OLD, &NEW, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, key, 10000, 0, &lk, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_null(lk);
    cr_assert_lt(rep.lists[k].yes, 2, "%s gave a quorum: %zu", name[k], rep.lists[k].yes);
    cr_assert_eq(rep.lists[k].no, 2, "%s's two taken nodes did not both refuse: %zu", name[k], rep.lists[k].no);
    cr_assert(strstr(rep.message, " of 3 (quorum 2), new ") && strstr(rep.message, "old "), "message: %s", rep.message);
    cr_assert_eq(await_holders(key, "someone-else", taken), taken, "the other owner's keys were touched");
    cr_assert_eq(tc_await_count(&C, key, NULL, 2), 2, "the refused attempt's keys were not cleaned up");
    redlock_free(rl);
}

Test(joint, refused_with_a_quorum_of_new_but_not_of_old) {
    refused_for_one_list("joint:old-taken", 0x3, 0); /* nodes 0 and 1: OLD has only node 2 free */
}

Test(joint, refused_with_a_quorum_of_old_but_not_of_new) {
    refused_for_one_list("joint:new-taken", 0x18, 1); /* nodes 3 and 4: NEW has only node 2 free */
}

Test(joint, an_old_and_a_new_handle_both_win_where_a_joint_one_is_refused) {
    /* What the joint handle exists for: node 2, the only one the lists
     * share, is taken, so OLD's nodes 0,1 and NEW's 3,4 make two quorums. */
    foreign("joint:split", 0x4);
    redlock_t *old = handle(&OLD, NULL, NULL), *new = handle(&NEW, NULL, NULL), *joint = handle(&OLD, &NEW, NULL);
    redlock_lock_t *a = NULL, *b = NULL, *j = NULL;
    cr_assert_eq(redlock_try_acquire(old, "joint:split", 10000, &a), REDLOCK_OK, "old handle refused");
    cr_assert_eq(redlock_try_acquire(new, "joint:split", 10000, &b), REDLOCK_OK,
                 "new handle refused: the two-holder case this test shows did not happen");
    cr_assert_eq(redlock_release(old, a), REDLOCK_OK);
    cr_assert_eq(redlock_release(new, b), REDLOCK_OK);
    /* the same two clients with a joint handle on one side: exclusion */
    cr_assert_eq(redlock_try_acquire(old, "joint:split", 10000, &a), REDLOCK_OK);
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(joint, "joint:split", 10000, 0, &j, &rep), REDLOCK_ERR_TAKEN,
                 "joint handle beside an old holder: %s", rep.message);
    cr_assert_eq(redlock_release_ex(old, a, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(tc_await_count(&C, "joint:split", NULL, 1), 1, "the old handle's release left keys: %d nodes",
                 tc_count_value(&C, "joint:split", NULL));
    /* a joint holder (OLD's 0,1 and NEW's 3,4) keeps both kinds out */
    cr_assert_eq(redlock_try_acquire(joint, "joint:split", 10000, &j), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(old, "joint:split", 10000, &a), REDLOCK_ERR_TAKEN,
                 "old handle granted while a joint handle holds");
    cr_assert_eq(redlock_try_acquire(new, "joint:split", 10000, &b), REDLOCK_ERR_TAKEN,
                 "new handle granted while a joint handle holds");
    cr_assert_eq(redlock_release(joint, j), REDLOCK_OK);
    redlock_free(old);
    redlock_free(new);
    redlock_free(joint);
}

Test(joint, a_joint_holder_excludes_old_and_new_handles) {
    redlock_t *old = handle(&OLD, NULL, NULL), *new = handle(&NEW, NULL, NULL), *joint = handle(&OLD, &NEW, NULL);
    redlock_lock_t *j = NULL, *x = NULL;
    cr_assert_eq(redlock_try_acquire(joint, "joint:excl", 10000, &j), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(old, "joint:excl", 10000, &x), REDLOCK_ERR_TAKEN, "old handle granted");
    cr_assert_eq(redlock_try_acquire(new, "joint:excl", 10000, &x), REDLOCK_ERR_TAKEN, "new handle granted");
    cr_assert_eq(redlock_release(joint, j), REDLOCK_OK);
    cr_assert_eq(tc_await_count(&C, "joint:excl", NULL, 0), 0, "the joint release left keys");
    cr_assert_eq(redlock_try_acquire(new, "joint:excl", 10000, &x), REDLOCK_OK, "new handle refused after release");
    cr_assert_eq(redlock_release(new, x), REDLOCK_OK);
    redlock_free(old);
    redlock_free(new);
    redlock_free(joint);
}

Test(joint, an_extend_needs_both_quorums) {
    redlock_t *rl = handle(&OLD, &NEW, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_try_acquire(rl, "joint:extend", 10000, &lk), REDLOCK_OK);
    cr_assert_eq(await_holders("joint:extend", redlock_lock_token(lk), 0x1f), 0x1f, "not on all five nodes");
    cr_assert_eq(redlock_extend_ex(rl, lk, 10000, &rep), REDLOCK_OK, "%s", rep.message);
    /* NEW loses its quorum: nodes 3 and 4 no longer hold the token */
    cr_assert_eq(tc_del(&C, 3, "joint:extend"), 1);
    cr_assert_eq(tc_del(&C, 4, "joint:extend"), 1);
    cr_assert_eq(redlock_extend_ex(rl, lk, 10000, &rep), REDLOCK_ERR_NOT_HELD, "%s", rep.message);
    cr_assert_leq(rep.lists[1].yes, 1, "NEW holds on node 2 only, yet %zu said yes", rep.lists[1].yes);
    cr_assert_eq(rep.lists[1].no, 2, "NEW's nodes 3 and 4 did not both refuse: %zu", rep.lists[1].no);
    redlock_release(rl, lk);
    redlock_free(rl);
}

Test(joint, fencing_tokens_keep_rising_when_a_node_joins_empty) {
    redlock_options_t o;
    rt_options(&o);
    o.fencing = 1;
    /* OLD's nodes count up to some token; node 3 joins with no counter */
    redlock_t *old = handle(&OLD, NULL, &o), *joint = handle(&OLD, &OLD_SHIFTED, &o),
              *new = handle(&OLD_SHIFTED, NULL, &o);
    uint64_t last = 0;
    for (int i = 0; i < 5; i++) {
        redlock_lock_t *lk = NULL;
        cr_assert_eq(redlock_try_acquire(old, "joint:fence", 10000, &lk), REDLOCK_OK);
        cr_assert_gt(redlock_lock_fence(lk), last);
        last = redlock_lock_fence(lk);
        cr_assert_eq(redlock_release(old, lk), REDLOCK_OK);
    }
    redlock_t *order[2] = {joint, new};
    for (int k = 0; k < 2; k++) {
        redlock_lock_t *lk = NULL;
        redlock_report_t rep;
        cr_assert_eq(redlock_acquire_ex(order[k], "joint:fence", 10000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
        cr_assert_gt(redlock_lock_fence(lk), last, "%s handle's token %llu is not above %llu",
                     k ? "the new" : "a joint", (unsigned long long)redlock_lock_fence(lk), (unsigned long long)last);
        last = redlock_lock_fence(lk);
        cr_assert_eq(redlock_release(order[k], lk), REDLOCK_OK);
        cr_assert_eq(tc_await_count(&C, "joint:fence", NULL, 0), 0, "a release left keys");
    }
    redlock_free(old);
    redlock_free(joint);
    redlock_free(new);
}

Test(joint, a_permit_needs_its_slot_on_both_quorums) {
    redlock_t *old = handle(&OLD, NULL, NULL), *joint = handle(&OLD, &NEW, NULL);
    redlock_lock_t *p = NULL, *q = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_permit(old, "joint:sem", 1, 10000, 0, &p, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_permit(joint, "joint:sem", 1, 10000, 0, &q, &rep), REDLOCK_ERR_TAKEN,
                 "a joint handle took the only permit an old handle holds: %s", rep.message);
    cr_assert_eq(redlock_release(old, p), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_permit(joint, "joint:sem", 1, 10000, 0, &q, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_geq(rep.lists[0].yes, 2);
    cr_assert_geq(rep.lists[1].yes, 2);
    cr_assert_eq(redlock_acquire_permit(old, "joint:sem", 1, 10000, 0, &p, &rep), REDLOCK_ERR_TAKEN,
                 "an old handle took the permit a joint handle holds");
    cr_assert_eq(redlock_release(joint, q), REDLOCK_OK);
    redlock_free(old);
    redlock_free(joint);
}

Test(joint, a_writer_and_readers_exclude_across_handles) {
    redlock_t *new = handle(&NEW, NULL, NULL), *joint = handle(&OLD, &NEW, NULL);
    redlock_lock_t *r = NULL, *w = NULL;
    cr_assert_eq(redlock_acquire_shared(joint, "joint:rw", 10000, 0, &r, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(new, "joint:rw", 10000, &w), REDLOCK_ERR_TAKEN,
                 "a new handle's writer got in beside a joint reader");
    cr_assert_eq(redlock_release(joint, r), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(new, "joint:rw", 10000, &w), REDLOCK_OK);
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(joint, "joint:rw", 10000, 0, &r, &rep), REDLOCK_ERR_TAKEN,
                 "a joint reader beside a new handle's writer: %s", rep.message);
    cr_assert_eq(redlock_release(new, w), REDLOCK_OK);
    redlock_free(new);
    redlock_free(joint);
}

Test(joint, a_waiting_joint_acquire_is_granted_once_the_old_holder_releases) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 100; /* attempts while waiting */
    redlock_t *old = handle(&OLD, NULL, NULL), *joint = handle(&OLD, &NEW, &o);
    redlock_lock_t *a = NULL, *j = NULL;
    cr_assert_eq(redlock_acquire_ex(old, "joint:wait", 600, 0, &a, NULL), REDLOCK_OK);
    /* the old holder never releases: its 600 ms TTL ends it, within the wait */
    redlock_lock_free(a);
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(joint, "joint:wait", 10000, 10000, &j, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(joint, j), REDLOCK_OK);
    redlock_free(old);
    redlock_free(joint);
}

#ifndef RL_TEST_ASYNC
Test(joint, a_set_needs_both_quorums) {
    foreign("joint:set:b", 0x18);
    redlock_t *rl = handle(&OLD, &NEW, NULL);
    const char *res[2] = {"joint:set:a", "joint:set:b"};
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_multi(rl, res, 2, 10000, 0, &lk, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_eq(tc_await_count(&C, "joint:set:a", NULL, 0), 0, "the refused set left keys");
    redlock_free(rl);
}

/* What redlock_new_ex says of a bad next list. */
static void refused(const redlock_options_t *o, const char *want) {
    redlock_t *rl = NULL;
    char err[256] = "";
    cr_assert_eq(redlock_new_ex(&rl, o, err, sizeof err), REDLOCK_ERR_CONFIG, "accepted, wanted: %s", want);
    cr_assert_null(rl);
    cr_assert(strstr(err, want), "error '%s' does not say '%s'", err, want);
}

Test(joint, bad_next_lists_are_refused_naming_the_value) {
    redlock_options_t o;
    rt_options(&o);
    const char *cur[3] = {C.uri[0], C.uri[1], C.uri[2]}, *same[3] = {C.uri[2], C.uri[0], C.uri[1]};
    o.nodes = cur;
    o.n_nodes = 3;
    o.n_next_nodes = 2;
    refused(&o, "next_nodes=NULL with n_next_nodes=2");
    o.next_nodes = same;
    o.n_next_nodes = 0;
    refused(&o, "next_nodes=set with n_next_nodes=0");
    o.n_next_nodes = 3;
    refused(&o, "next_nodes names the same 3 nodes as nodes");
    const char *bad[2] = {C.uri[3], "redis://127.0.0.1:99999"};
    o.next_nodes = bad;
    o.n_next_nodes = 2;
    refused(&o, "redis://127.0.0.1:99999");
    char db1[300];
    snprintf(db1, sizeof db1, "%s/1", C.uri[0]);
    const char *otherdb[1] = {db1};
    o.next_nodes = otherdb;
    o.n_next_nodes = 1;
    refused(&o, "next_nodes[0]");
    static char many[2][REDLOCK_MAX_NODES][40];
    const char *a[REDLOCK_MAX_NODES], *b[REDLOCK_MAX_NODES];
    for (int i = 0; i < REDLOCK_MAX_NODES; i++) {
        snprintf(many[0][i], sizeof many[0][i], "redis://127.0.0.1:%d", 40000 + i);
        snprintf(many[1][i], sizeof many[1][i], "redis://127.0.0.1:%d", 41000 + i);
        a[i] = many[0][i];
        b[i] = many[1][i];
    }
    o.nodes = a;
    o.n_nodes = REDLOCK_MAX_NODES;
    o.next_nodes = b;
    o.n_next_nodes = 1;
    refused(&o, "name 65 distinct nodes together: at most 64");
}
#endif
