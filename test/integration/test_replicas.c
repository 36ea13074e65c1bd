/* test_replicas.c -- votes counted after replication (min_replicas, a
 * node's replicas=N) against the fixture's 5 masters, which have no
 * replicas: a write waits for replicas no master has, so its node's vote
 * fails and says why; replicas=0 on a node's URI lets its vote count on
 * the master's word. (Sentinel groups with real replicas: test_sentinel.)
 * Built twice: blocking, and through the async API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(replicas, .init = setup, .timeout = 120);

/* A handle over the 5 nodes with min_replicas; the nodes in zero[] (n of
 * them, node indexes) get ?replicas=0 on their URI. */
static redlock_t *replicas_rl(uint32_t min_replicas, const int *zero, size_t n) {
    static char uris[5][512];
    static const char *nodes[5];
    for (int i = 0; i < 5; i++) {
        int z = 0;
        for (size_t k = 0; k < n; k++) z |= zero[k] == i;
        snprintf(uris[i], sizeof uris[i], "%s%s", C.uri[i], z ? "?replicas=0" : "");
        nodes[i] = uris[i];
    }
    redlock_options_t o;
    rt_options(&o);
    o.nodes = nodes;
    o.n_nodes = 5;
    o.op_timeout_ms = 1000; /* a WAIT's answer must beat it under valgrind on a busy machine (200 ms did not) */
    o.min_replicas = min_replicas;
    redlock_t *rl = NULL;
    char err[256] = "";
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    return rl;
}

Test(replicas, a_vote_waits_for_replicas_and_says_how_many_acknowledged) {
    redlock_t *rl = replicas_rl(1, NULL, 0);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, "replicas:none", 10000, 0, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM, "granted though no master has a replica: %s", rep.message);
    int told = 0;
    for (int i = 0; i < 5; i++) {
        if (rep.nodes[i].vote == REDLOCK_VOTE_NONE) continue; /* (not waited for once the outcome was known) */
        cr_assert_neq(rep.nodes[i].vote, REDLOCK_VOTE_YES, "node %d", i);
        /* a node whose WAIT answer came after its deadline (a slow machine) timed out */
        int err = rep.nodes[i].err;
        cr_assert(err == REDLOCK_ERR_REPLICATION || err == REDLOCK_ERR_TIMEOUT || err == REDLOCK_ERR_SUSPECT,
                  "node %d: %s", i, redlock_strerror(err));
        if (err != REDLOCK_ERR_REPLICATION) continue;
        told++;
#ifndef RL_TEST_ASYNC /* (the async report's detail is the error's text) */
        cr_assert(strstr(rep.nodes[i].detail, "replicated to 0 of 1"), "node %d: '%s'", i, rep.nodes[i].detail);
#endif
    }
    cr_assert_geq(told, 1, "no node said its write was not replicated");
    /* the failed attempt cleaned up: no node keeps the key (a node's
     * clean-up may land a moment after the call returned: waited for) */
    int left = 5;
    for (int t = 0; t < 100 && left; t++, rt_sleep_ms(10)) {
        left = 0;
        for (int i = 0; i < 5; i++) {
            char *v = tc_get(&C, i, "replicas:none");
            left += v != NULL;
            free(v);
        }
    }
    cr_assert_eq(left, 0, "%d nodes kept the key of a refused attempt", left);
    redlock_free(rl);
}

Test(replicas, replicas_0_on_a_uri_counts_that_node_on_its_masters_word) {
    static const int all[5] = {0, 1, 2, 3, 4};
    redlock_t *rl = replicas_rl(1, all, 5);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "replicas:zero", 10000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

/* Calls of WAIT on each node so far (INFO commandstats), into waits[]. */
static void wait_calls(long waits[5]) {
    for (int i = 0; i < 5; i++) {
        redisContext *c = tc_connect(&C, i);
        cr_assert_not_null(c, "node %d", i);
        redisReply *r = redisCommand(c, "INFO commandstats");
        cr_assert(r && r->type == REDIS_REPLY_STRING, "INFO commandstats on node %d", i);
        const char *at = strstr(r->str, "cmdstat_wait:calls=");
        waits[i] = at ? atol(at + strlen("cmdstat_wait:calls=")) : 0;
        freeReplyObject(r);
        redisFree(c);
    }
}

/* A node's vote in a round that ended at its quorum: not yes. */
static void not_yes(const redlock_report_t *rep, int i, const char *what) {
    cr_assert_neq(rep->nodes[i].vote, REDLOCK_VOTE_YES, "%s: node %d, which waits for a replica it lacks, said yes",
                  what, i);
}

Test(replicas, acquire_and_extend_count_only_the_replicated_votes) {
    /* nodes 0..2 count on their master's word, 3 and 4 wait for a replica
     * they do not have: a quorum of 3 yes, never a yes from 3 or 4, and
     * only 3 and 4 are sent a WAIT */
    static const int three[3] = {0, 1, 2};
    redlock_t *rl = replicas_rl(1, three, 3);
    long before[5], after[5];
    wait_calls(before);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "replicas:mixed", 10000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    for (int i = 0; i < 3; i++) cr_assert_eq(rep.nodes[i].vote, REDLOCK_VOTE_YES, "node %d", i);
    for (int i = 3; i < 5; i++) not_yes(&rep, i, "acquire");
    int64_t validity = redlock_lock_validity_ms(lk);
    cr_assert_gt(validity, 0);
    cr_assert_leq(validity, 10000);
    cr_assert_eq(redlock_extend_ex(rl, lk, 10000, &rep), REDLOCK_OK, "%s", rep.message);
    for (int i = 0; i < 3; i++) cr_assert_eq(rep.nodes[i].vote, REDLOCK_VOTE_YES, "extend: node %d", i);
    for (int i = 3; i < 5; i++) not_yes(&rep, i, "extend");
    /* the acquire's and the extend's WAITs reach nodes 3 and 4 (each answers
     * at its timeout, after the call returned: waited for, up to 10 s) */
    int done = 0;
    for (int t = 0; t < 1000 && !done; t++, rt_sleep_ms(10)) {
        wait_calls(after);
        done = after[3] - before[3] >= 2 && after[4] - before[4] >= 2;
    }
    for (int i = 0; i < 3; i++)
        cr_assert_eq(after[i], before[i], "node %d, replicas=0 on its URI, was sent %ld WAITs", i,
                     after[i] - before[i]);
    for (int i = 3; i < 5; i++)
        cr_assert_geq(after[i] - before[i], 2, "node %d was sent %ld WAITs for an acquire and an extend", i,
                      after[i] - before[i]);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(replicas, min_replicas_out_of_range_is_refused_by_name) {
    redlock_options_t o;
    rt_options(&o);
    o.min_replicas = 1001;
    redlock_t *rl = NULL;
    char err[256] = "";
    cr_assert_eq(rt_try_new(&C, 5, &o, &rl, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "min_replicas=1001"), "'%s'", err);
    cr_assert_null(rl);
}
