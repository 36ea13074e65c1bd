/* test_quarantine.c -- restart quarantine against real masters. A lock is
 * held on 5 nodes; 3 of them are killed and restarted empty at once.
 * Without quarantine a second client acquires at once although the first
 * still holds the lock (the known Redlock weakness, shown here); with
 * max_ttl_ms set, the restarted nodes get no vote until max_ttl_ms after
 * their restart, and the second client is refused until then. */
#include <criterion/criterion.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(quarantine, .init = setup, .timeout = 120);

static redlock_t *client(uint32_t max_ttl_ms) {
    redlock_options_t o;
    rt_options(&o);
    o.max_ttl_ms = max_ttl_ms;
    o.reconnect_min_ms = 10;
    o.reconnect_max_ms = 50;
    return rt_new(&C, 5, &o);
}

Test(quarantine, restarted_majority_gets_no_vote_until_max_ttl_passed) {
    /* (long enough that three restarts on a loaded machine, which took
     * 2.4 s in one run, leave the quarantine plenty of its length) */
    const uint32_t TTL = 6000;
    redlock_t *a = client(TTL), *guarded = client(TTL), *naive = client(0);
    redlock_lock_t *la = NULL, *lb = NULL;
    /* earlier tests may have restarted nodes: wait until none is in quarantine
     * (this client then also holds its connections from before the restart) */
    int warm = 0;
    for (uint64_t t0 = rt_now_us(); !warm && rt_now_us() - t0 < (TTL + 3000) * 1000ull;) {
        warm = redlock_acquire(guarded, "q:warm", 1000, &lb) == REDLOCK_OK;
        if (warm)
            cr_assert_eq(redlock_release(guarded, lb), REDLOCK_OK);
        else
            rt_sleep_ms(100);
    }
    cr_assert(warm, "nodes never left quarantine");
    cr_assert_eq(redlock_acquire(a, "q:res", TTL, &la), REDLOCK_OK);
    uint64_t t = rt_now_us();
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_restart(&C, i, 1), 0); /* empty: A's keys gone there */
    uint64_t restart_ms = (rt_now_us() - t) / 1000;

    /* the weakness: without quarantine a second holder is let in at once */
    redlock_report_t rep;
    int rc = redlock_acquire_ex(naive, "q:res", TTL, 0, &lb, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "without quarantine the restarted nodes grant: %s", rep.message);
    cr_assert_gt(redlock_lock_validity_ms(la), 0, "A still believes it holds the lock: two holders");
    cr_assert_eq(redlock_release(naive, lb), REDLOCK_OK);

    /* with quarantine: refused while the restarted nodes are quarantined */
    int refused = 0, saw_detail = 0;
    while ((rt_now_us() - t) / 1000 < TTL - 500) {
        rc = redlock_acquire_ex(guarded, "q:res", TTL, 0, &lb, &rep);
        cr_assert_neq(rc, REDLOCK_OK, "acquired %llu ms after the restart, inside the quarantine",
                      (unsigned long long)((rt_now_us() - t) / 1000));
        refused++;
        for (int i = 0; i < 3; i++)
            if (rep.nodes[i].err == REDLOCK_ERR_QUARANTINED) {
                saw_detail += strstr(rep.nodes[i].detail, "quarantined (restarted") != NULL;
                cr_assert_eq(rep.nodes[i].vote, REDLOCK_VOTE_DOWN);
            }
        rt_sleep_ms(100);
    }
    cr_assert_gt(refused, 0, "no attempt inside the quarantine (the restarts took %llu ms)",
                 (unsigned long long)restart_ms);
    cr_assert_gt(saw_detail, 0, "the report never said 'quarantined'");

    /* after the quarantine (A's lock has expired by then too) it is granted */
    int got = 0;
    while (!got && (rt_now_us() - t) / 1000 < TTL + 3000) {
        got = redlock_acquire_ex(guarded, "q:res", TTL, 0, &lb, &rep) == REDLOCK_OK;
        if (!got) rt_sleep_ms(100);
    }
    cr_assert(got, "still refused after the quarantine: %s", rep.message);
    uint64_t at = (rt_now_us() - t) / 1000;
    char votes[512] = "";
    for (int i = 0; i < 5; i++)
        snprintf(votes + strlen(votes), sizeof votes - strlen(votes), " [%d %s %s]", i,
                 redlock_vote_name(rep.nodes[i].vote), rep.nodes[i].detail);
    cr_assert_geq(at, TTL - 100, "granted %llu ms after the restart:%s (restarts took %llu ms)", (unsigned long long)at,
                  votes, (unsigned long long)restart_ms);
    cr_assert_eq(redlock_release(guarded, lb), REDLOCK_OK);
    redlock_lock_free(la);
    redlock_free(a);
    redlock_free(guarded);
    redlock_free(naive);
}

Test(quarantine, ttl_above_max_ttl_is_refused) {
    redlock_t *rl = client(2000);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "q:long", 2001, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "max_ttl_ms=2000"), "%s", rep.message);
    redlock_free(rl);
}

Test(quarantine, nodes_up_for_long_vote_normally) {
    for (int i = 0; i < 5; i++) cr_assert_eq(tc_node_restart(&C, i, 1), 0);
    rt_sleep_ms(2100); /* up for more than max_ttl_ms below, even counting whole seconds of uptime */
    redlock_t *rl = client(1000);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "q:fine", 1000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}
