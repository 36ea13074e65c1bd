/* test_faults.c -- quorum under real faults. For N in {1, 3, 5}, nodes are
 * pre-locked by a foreign token, paused with SIGSTOP or killed with
 * SIGKILL; the acquire must succeed exactly when the free nodes reach the
 * quorum, say why when it does not, and leave no key with its token behind. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

enum { FREE = 0, FOREIGN, PAUSED, KILLED, NSTATES };
static const char *state_name[] = {"free", "foreign", "paused", "killed"};
static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(faults, .init = setup, .timeout = 300);

/* Puts node i into state s. */
static void apply(int i, int s, const char *key) {
    if (s == FOREIGN) cr_assert_eq(tc_set(&C, i, key, "foreign-token", 30000), 0);
    if (s == PAUSED) cr_assert_eq(tc_node_pause(&C, i), 0);
    if (s == KILLED) cr_assert_eq(tc_node_kill(&C, i), 0);
}

/* Undoes state s of node i and empties the node. */
static void undo(int i, int s) {
    if (s == PAUSED) cr_assert_eq(tc_node_resume(&C, i), 0);
    if (s == KILLED) cr_assert_eq(tc_node_restart(&C, i, 1), 0);
    cr_assert_eq(tc_redis_cmd(&C, i, "FLUSHALL"), 0, "node %d", i);
}

/* Describes a case for failure messages. */
static const char *describe(const int *st, int n, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; i < n; i++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", state_name[st[i]]);
    return buf;
}

/* Waits until no reachable node holds key = token (the clean-up release
 * is sent before the call returns but may land a moment later). */
static void assert_token_gone(const int *st, int n, const char *key, const char *token, const char *what) {
    for (int tries = 0;; tries++) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (st[i] == PAUSED || st[i] == KILLED) continue;
            char *v = tc_get(&C, i, key);
            left += v && !strcmp(v, token);
            free(v);
        }
        if (!left) return;
        cr_assert_lt(tries, 50, "[%s] our token left on %d reachable nodes", what, left);
        rt_sleep_ms(10);
    }
}

/* Runs one case: nodes 0..n-1 in states st. */
static void run_case(const int *st, int n, int case_no) {
    char key[32], what[64];
    snprintf(key, sizeof key, "f:%d:%d", n, case_no);
    describe(st, n, what, sizeof what);
    int count[NSTATES] = {0};
    for (int i = 0; i < n; i++) count[st[i]]++;
    for (int i = 0; i < n; i++) apply(i, st[i], key);

    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 100;
    redlock_t *rl = rt_new(&C, (size_t)n, &o);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, key, 10000, 0, &lk, &rep);

    int q = n / 2 + 1, slack = n - q;
    int expect = count[FREE] >= q ? REDLOCK_OK : count[FOREIGN] > slack ? REDLOCK_ERR_TAKEN : REDLOCK_ERR_NO_QUORUM;
    cr_assert_eq(rc, expect, "[%s] expected %s, got %s (%s)", what, redlock_strerror(expect), redlock_strerror(rc),
                 rep.message);
    for (int i = 0; i < n; i++) { /* every vote that was counted matches the node's state */
        redlock_vote_t v = rep.nodes[i].vote;
        if (v == REDLOCK_VOTE_NONE) continue;
        int ok = st[i] == FREE      ? v == REDLOCK_VOTE_YES
                 : st[i] == FOREIGN ? v == REDLOCK_VOTE_NO
                 : st[i] == PAUSED  ? v == REDLOCK_VOTE_TIMEOUT
                                    : (v == REDLOCK_VOTE_ERROR || v == REDLOCK_VOTE_DOWN);
        cr_assert(ok, "[%s] node %d voted %s (%s)", what, i, redlock_vote_name(v), rep.nodes[i].detail);
    }
    if (rc == REDLOCK_OK) {
        char token[41];
        strcpy(token, redlock_lock_token(lk));
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK, "[%s]", what);
        assert_token_gone(st, n, key, token, what);
    } else {
        /* the failed attempt was cleaned up: free nodes hold nothing, foreign ones keep their value */
        for (int tries = 0;; tries++) {
            int bad = 0;
            for (int i = 0; i < n; i++) {
                if (st[i] == PAUSED || st[i] == KILLED) continue;
                char *v = tc_get(&C, i, key);
                bad += st[i] == FREE ? v != NULL : (!v || strcmp(v, "foreign-token") != 0);
                free(v);
            }
            if (!bad) break;
            cr_assert_lt(tries, 50, "[%s] %d reachable nodes not as before the attempt", what, bad);
            rt_sleep_ms(10);
        }
    }
    redlock_free(rl);
    for (int i = 0; i < n; i++) undo(i, st[i]);
}

/* Every assignment of the 4 states to n nodes (4^n cases). */
static void all_mixes(int n) {
    int st[5], total = 1;
    for (int i = 0; i < n; i++) total *= NSTATES;
    for (int c = 0; c < total; c++) {
        for (int i = 0, x = c; i < n; i++, x /= NSTATES) st[i] = x % NSTATES;
        run_case(st, n, c);
    }
}

Test(faults, n1_every_state) {
    all_mixes(1);
}

Test(faults, n3_every_mix_of_states) {
    all_mixes(3);
}

/* N = 5: every subset of nodes put in one fault state (3 x 32 cases). */
Test(faults, n5_every_subset_of_each_fault) {
    int st[5];
    for (int s = FOREIGN; s < NSTATES; s++)
        for (int mask = 0; mask < 32; mask++) {
            for (int i = 0; i < 5; i++) st[i] = (mask >> i) & 1 ? s : FREE;
            run_case(st, 5, s * 32 + mask);
        }
}

/* A paused node costs at most op_timeout_ms, and nothing once a quorum of
 * other nodes answered. */
Test(faults, paused_node_costs_at_most_op_timeout) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 200;
    redlock_t *one = rt_new(&C, 1, &o), *five = rt_new(&C, 5, &o);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(one, "p:warm", 5000, &lk), REDLOCK_OK); /* connections open */
    cr_assert_eq(redlock_release(one, lk), REDLOCK_OK);
    cr_assert_eq(redlock_acquire(five, "p:warm", 5000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_release(five, lk), REDLOCK_OK);
    cr_assert_eq(tc_node_pause(&C, 0), 0);
    cr_assert_eq(tc_node_pause(&C, 1), 0);

    uint64_t t = rt_now_us();
    int rc = redlock_try_acquire(one, "p:one", 5000, &lk);
    uint64_t ms = (rt_now_us() - t) / 1000;
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM);
    cr_assert(ms >= 190 && ms < 200 + 400, "single paused node took %llu ms (op_timeout 200)", (unsigned long long)ms);

    for (int k = 0; k < 5; k++) {
        t = rt_now_us();
        rc = redlock_try_acquire(five, "p:five", 5000, &lk);
        ms = (rt_now_us() - t) / 1000;
        cr_assert_eq(rc, REDLOCK_OK);
        cr_assert_lt(ms, 200, "2 of 5 paused: quorum of the others should return early, took %llu ms",
                     (unsigned long long)ms);
        t = rt_now_us();
        cr_assert_eq(redlock_release(five, lk), REDLOCK_OK);
        ms = (rt_now_us() - t) / 1000;
        cr_assert_lt(ms, 200, "release with 2 of 5 paused took %llu ms", (unsigned long long)ms);
    }
    cr_assert_eq(tc_node_resume(&C, 0), 0);
    cr_assert_eq(tc_node_resume(&C, 1), 0);
    redlock_free(one);
    redlock_free(five);
}

/* Acquires key through rl until node i holds our token again (within
 * about 3 s). Returns 1 if it did. */
static int rejoins(redlock_t *rl, int i, const char *key) {
    for (int tries = 0; tries < 150; tries++) {
        redlock_lock_t *lk = NULL;
        rt_sleep_ms(20);
        cr_assert_eq(redlock_try_acquire(rl, key, 5000, &lk), REDLOCK_OK);
        int held = 0;
        for (int k = 0; k < 10 && !held; k++) {
            char *v = tc_get(&C, i, key);
            held = v && !strcmp(v, redlock_lock_token(lk));
            free(v);
            if (!held) rt_sleep_ms(2);
        }
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
        if (held) return 1;
    }
    return 0;
}

/* A killed node is skipped (vote DOWN, no connect attempt) until its
 * backoff passes, and rejoins after it comes back. */
Test(faults, killed_node_is_skipped_then_rejoins) {
    redlock_options_t o;
    rt_options(&o);
    o.reconnect_min_ms = 100;
    o.reconnect_max_ms = 400;
    redlock_t *rl = rt_new(&C, 5, &o);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "k:warm", 5000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(tc_node_kill(&C, 4), 0);
    redlock_report_t rep;
    int down = 0, calls = 0;
    uint64_t t0 = 0, until = rt_now_us() + 5000000;
    while (calls < 40 && rt_now_us() < until) {
        cr_assert_eq(redlock_acquire_ex(rl, "k:res", 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
        redlock_vote_t v = rep.nodes[4].vote;
        if (!t0 && v == REDLOCK_VOTE_NONE) continue; /* its closed connection not read yet: quorum came first */
        if (!t0) t0 = rt_now_us();
        calls++;
        down += v == REDLOCK_VOTE_DOWN;
        if (v == REDLOCK_VOTE_DOWN) /* (or, on a busy machine, silent past op_timeout_ms first: suspect) */
            cr_assert(strstr(rep.nodes[4].detail, "down") || strstr(rep.nodes[4].detail, "suspect"), "detail: %s",
                      rep.nodes[4].detail);
        else /* the failure itself, or a connect once its backoff passed: it fails, or is not in yet */
            cr_assert(v == REDLOCK_VOTE_ERROR || v == REDLOCK_VOTE_NONE, "call %d: vote %d (%s)", calls, v,
                      rep.nodes[4].detail);
    }
    cr_assert(t0, "the killed node's closed connection was never noticed");
    /* once noticed, one connect per backoff (at least reconnect_min_ms) at
     * most besides the failure itself: a slow machine tries more */
    long long ms = (long long)(rt_now_us() - t0) / 1000, tried = calls - down;
    cr_assert_leq(tried, ms / 100 + 2, "%lld connects in %lld ms: the killed node is not skipped while backing off",
                  tried, ms);
    cr_assert_gt(down, 0, "the killed node was never skipped (%d calls in %lld ms)", calls, ms);
    cr_assert_eq(tc_node_restart(&C, 4, 1), 0);
    cr_assert(rejoins(rl, 4, "k:res"), "restarted node never rejoined");
    redlock_free(rl);
}

/* A paused node is marked suspect after its first timeout (or down after
 * node_down_ms of silence: its backlog is bounded), skipped, and comes back
 * after it resumes. */
Test(faults, silent_node_is_marked_down_and_recovers) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 50;
    o.node_down_ms = 200;
    o.reconnect_min_ms = 50;
    o.reconnect_max_ms = 200;
    redlock_t *rl = rt_new(&C, 3, &o);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "s:warm", 5000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(tc_node_pause(&C, 2), 0);
    redlock_report_t rep;
    int saw_down = 0;
    uint64_t until = rt_now_us() + 1500000;
    while (rt_now_us() < until && !saw_down) {
        cr_assert_eq(redlock_acquire_ex(rl, "s:res", 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
        cr_assert_eq(redlock_release_ex(rl, lk, &rep), REDLOCK_OK);
        rt_sleep_ms(20);
        cr_assert_eq(redlock_acquire_ex(rl, "s:res", 5000, 0, &lk, &rep), REDLOCK_OK);
        saw_down = rep.nodes[2].vote == REDLOCK_VOTE_DOWN || rep.nodes[2].vote == REDLOCK_VOTE_TIMEOUT;
        saw_down = saw_down && (strstr(rep.nodes[2].detail, "silent") || strstr(rep.nodes[2].detail, "down") ||
                                strstr(rep.nodes[2].detail, "suspect"));
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    }
    cr_assert(saw_down, "paused node never marked down: last detail '%s'", rep.nodes[2].detail);
    cr_assert_eq(tc_node_resume(&C, 2), 0);
    cr_assert(rejoins(rl, 2, "s:res"), "resumed node never rejoined");
    redlock_free(rl);
}
