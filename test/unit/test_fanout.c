/* test_fanout.c -- vote counting, stop rules and reply classifiers of one
 * fan-out round (src/core/round.c), pure logic, no I/O.
 *
 * The stop rules are checked against a model that knows nothing of the
 * code's formulas: a round is decided exactly when its outcome class is the
 * same however the nodes still pending vote. For RL_STOP_MAJORITY the
 * classes are "quorum of yes", "failed with more than N-Q no votes" (TAKEN)
 * and "failed otherwise"; for RL_STOP_RESOLVE they are "quorum of yes",
 * "quorum of no" and "neither". Every sequence of votes from {YES, NO,
 * TIMEOUT, ERROR(AUTH)} of length N is played for N = 1..7.
 *
 * The fenced mutex's write-back is judged by rl_fence_judge (fence.c) from
 * EXEC arrays built by hand.
 *
 * rl_round_vote's return value means "this vote decided the round"; the
 * engine then sets r->done (finish_round in src/core/nodeset.c), which these tests do
 * the same way.
 */
#include <criterion/criterion.h>

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "round.h"
#include "ops.h"
#include "redlock.h"

TestSuite(round, .timeout = 30);
TestSuite(classify, .timeout = 30);

/* ---- model -------------------------------------------------------------- */

enum { K_YES, K_NO, K_TIMEOUT, K_AUTH, K_KINDS };

typedef struct model {
    size_t n, q, yes, no, failed, auth, pending;
} model_t;

static model_t model_new(size_t n) {
    return (model_t){.n = n, .q = n / 2 + 1, .pending = n};
}

static void model_vote(model_t *m, int kind) {
    m->pending--;
    if (kind == K_YES)
        m->yes++;
    else if (kind == K_NO)
        m->no++;
    else
        m->failed++;
    if (kind == K_AUTH) m->auth++;
}

/* Outcome classes: a quorum of yes; TAKEN / a quorum of no; AUTH; other. */
enum { C_QUORUM, C_SECOND, C_AUTH, C_OTHER };

static int outcome_class(int stop, size_t n, size_t q, size_t yes, size_t no, size_t auth) {
    if (yes >= q) return C_QUORUM;
    if (stop == RL_STOP_MAJORITY) {
        if (auth > n - q) return C_AUTH;
        return no > n - q ? C_SECOND : C_OTHER;
    }
    if (no >= q) return C_SECOND;
    return auth > n - q ? C_AUTH : C_OTHER;
}

/* 1 when every way the pending nodes may still vote (y yes, x no, a auth
 * refusals, the rest timed out) leads to the same outcome class: the
 * round's result, reason included, is known. */
static int model_decided(const model_t *m, int stop) {
    int seen = -1;
    for (size_t y = 0; y <= m->pending; y++)
        for (size_t x = 0; x + y <= m->pending; x++)
            for (size_t a = 0; a + x + y <= m->pending; a++) {
                int c = outcome_class(stop, m->n, m->q, m->yes + y, m->no + x, m->auth + a);
                if (seen >= 0 && c != seen) return 0;
                seen = c;
            }
    return 1;
}

/* The rule for RL_STOP_MAJORITY as round.c states it, as a cross-check
 * of the model itself. */
static int stated_majority_rule(const model_t *m) {
    size_t slack = m->n - m->q;
    if (m->pending == 0 || m->yes >= m->q) return 1;
    if (m->yes + m->pending >= m->q) return 0;
    if (m->auth > slack) return 1;
    int auth_settled = m->auth + m->pending <= slack;
    return auth_settled && (m->no > slack || m->no + m->pending <= slack);
}

/* The documented failure reason (round.h): AUTH first, then no_code. */
static int model_reason(const model_t *m, int no_code) {
    size_t slack = m->n - m->q;
    if (m->auth > slack) return REDLOCK_ERR_AUTH;
    if (m->no > slack) return no_code;
    return REDLOCK_ERR_NO_QUORUM;
}

/* ---- helpers ------------------------------------------------------------ */

static const char *const kind_name[K_KINDS] = {"Y", "N", "T", "A"};

/* Casts a vote of kind k for node i; returns rl_round_vote's result. */
static int cast(rl_round_t *r, size_t i, int k) {
    switch (k) {
    case K_YES: return rl_round_vote(r, i, REDLOCK_VOTE_YES, REDLOCK_OK, 100 + (int64_t)i, NULL);
    case K_NO: return rl_round_vote(r, i, REDLOCK_VOTE_NO, REDLOCK_OK, 200 + (int64_t)i, NULL);
    case K_TIMEOUT: return rl_round_vote(r, i, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, "timed out");
    default:
        return rl_round_vote(r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_AUTH, 300 + (int64_t)i,
                             "NOAUTH Authentication required.");
    }
}

static redlock_vote_t kind_vote(int k) {
    static const redlock_vote_t v[K_KINDS] = {REDLOCK_VOTE_YES, REDLOCK_VOTE_NO, REDLOCK_VOTE_TIMEOUT,
                                              REDLOCK_VOTE_ERROR};
    return v[k];
}

/* Writes the sequence's first len kinds as letters into buf. */
static const char *seq_str(const int *kinds, size_t len, char *buf) {
    for (size_t i = 0; i < len; i++) buf[i] = kind_name[kinds[i]][0];
    buf[len] = '\0';
    return buf;
}

/* ---- rl_round_init ------------------------------------------------------ */

Test(round, init_for_1_to_9_nodes) {
    static const int stops[] = {RL_STOP_MAJORITY, RL_STOP_RESOLVE, RL_STOP_ALL};
    for (size_t n = 1; n <= 9; n++)
        for (size_t s = 0; s < 3; s++) {
            RL_ROUND(r);
            redlock_node_report_t rep[10];
            memset(&r_room_, 0x5A, sizeof r_room_);
            memset(rep, 0x5A, sizeof rep);
            rl_round_init(r, n, stops[s], rep);
            cr_assert_eq(r->n, n);
            cr_assert_eq(r->quorum, n / 2 + 1, "n %zu: quorum %zu", n, r->quorum);
            cr_assert_eq(r->stop, stops[s]);
            cr_assert_eq(r->send_all, stops[s] == RL_STOP_RESOLVE, "n %zu stop %d: send_all %d", n, stops[s],
                         r->send_all);
            cr_assert_eq(r->pending, n);
            cr_assert(r->yes == 0 && r->no == 0 && r->failed == 0 && r->auth_failed == 0, "n %zu: counts not zero", n);
            cr_assert_eq(r->done, 0);
            cr_assert(r->cmd == NULL && r->script == NULL && r->classify == NULL);
            cr_assert(r->cmd_len == 0);
            cr_assert_eq(r->nodes, rep);
            cr_assert_null(r->owner);
            for (size_t i = 0; i < n; i++) {
                cr_assert_eq(r->pn[i].vote, REDLOCK_VOTE_NONE, "n %zu: vote[%zu]", n, i);
                cr_assert_eq(r->pn[i].u.slot, RL_NO_SLOT, "n %zu: slot[%zu]", n, i);
                cr_assert(r->pn[i].err == 0 && r->pn[i].rtt_us == -1, "n %zu: compact result %zu not reset", n, i);
                cr_assert_eq(rep[i].vote, REDLOCK_VOTE_NONE);
                cr_assert_eq(rep[i].err, REDLOCK_OK);
                cr_assert_eq(rep[i].rtt_us, -1);
                cr_assert_str_empty(rep[i].detail);
            }
            /* Entries past n are not the round's. */
            cr_assert_eq(rep[n].rtt_us, (int64_t)0x5A5A5A5A5A5A5A5Aull, "n %zu: report entry n was written", n);
            cr_assert_not(rl_round_decided(r), "n %zu stop %d: decided before any vote", n, stops[s]);
        }
}

Test(round, init_without_reports_and_at_max_nodes) {
    RL_ROUND(r);
    rl_round_init(r, REDLOCK_MAX_NODES, RL_STOP_MAJORITY, NULL);
    cr_assert_null(r->nodes);
    cr_assert_eq(r->quorum, REDLOCK_MAX_NODES / 2 + 1);
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++) {
        int decided = rl_round_vote(r, i, REDLOCK_VOTE_YES, REDLOCK_OK, 1, "x");
        cr_assert_eq(decided, i + 1 == r->quorum, "vote %zu", i);
        if (decided) r->done = 1;
    }
    cr_assert_eq(r->yes, REDLOCK_MAX_NODES);
    cr_assert_eq(r->pending, 0);
}

/* ---- RL_STOP_MAJORITY --------------------------------------------------- */

Test(round, majority_decides_at_quorum_of_yes) {
    for (size_t n = 1; n <= 9; n++) {
        RL_ROUND(r);
        rl_round_init(r, n, RL_STOP_MAJORITY, NULL);
        size_t q = n / 2 + 1;
        for (size_t i = 0; i < n; i++) {
            int ret = cast(r, i, K_YES);
            cr_assert_eq(ret, i + 1 == q, "n %zu: yes vote %zu returned %d", n, i + 1, ret);
            cr_assert_eq(rl_round_decided(r), i + 1 >= q, "n %zu after %zu yes", n, i + 1);
            if (ret) r->done = 1;
        }
    }
}

Test(round, majority_waits_until_the_reason_is_settled) {
    /* N = 3, Q = 2, slack 1. NO then TIMEOUT: no quorum of yes is possible,
     * but the last node decides between TAKEN (2 no) and NO_QUORUM. */
    RL_ROUND(r);
    rl_round_init(r, 3, RL_STOP_MAJORITY, NULL);
    cr_assert_eq(cast(r, 0, K_NO), 0);
    cr_assert_eq(cast(r, 1, K_TIMEOUT), 0);
    cr_assert_not(rl_round_decided(r), "decided before the reason was known");
    cr_assert_eq(cast(r, 2, K_NO), 1);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_TAKEN);

    rl_round_init(r, 3, RL_STOP_MAJORITY, NULL);
    cast(r, 0, K_NO);
    cast(r, 1, K_TIMEOUT);
    cr_assert_eq(cast(r, 2, K_TIMEOUT), 1);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_NO_QUORUM);

    /* N = 5, Q = 3, slack 2: three no votes settle TAKEN at once. */
    rl_round_init(r, 5, RL_STOP_MAJORITY, NULL);
    cr_assert_eq(cast(r, 0, K_NO), 0);
    cr_assert_eq(cast(r, 1, K_NO), 0);
    cr_assert_eq(cast(r, 2, K_NO), 1);
    cr_assert_eq(r->pending, 2);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_TAKEN);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_NOT_HELD), REDLOCK_ERR_NOT_HELD, "no_code is passed through");

    /* N = 5: three timeouts settle NO_QUORUM (at most 2 no can follow). */
    rl_round_init(r, 5, RL_STOP_MAJORITY, NULL);
    cast(r, 0, K_TIMEOUT);
    cast(r, 1, K_TIMEOUT);
    cr_assert_eq(cast(r, 2, K_TIMEOUT), 1);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_NO_QUORUM);

    /* N = 5: three AUTH refusals -> AUTH. */
    rl_round_init(r, 5, RL_STOP_MAJORITY, NULL);
    cast(r, 0, K_AUTH);
    cast(r, 1, K_AUTH);
    cr_assert_eq(cast(r, 2, K_AUTH), 1);
    cr_assert_eq(r->auth_failed, 3);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_AUTH);

    /* N = 5: 2 yes, 2 no: the last vote decides quorum or not. */
    rl_round_init(r, 5, RL_STOP_MAJORITY, NULL);
    cast(r, 0, K_YES);
    cast(r, 1, K_NO);
    cast(r, 2, K_YES);
    cr_assert_eq(cast(r, 3, K_NO), 0);
    cr_assert_eq(cast(r, 4, K_YES), 1);
    cr_assert_eq(r->yes, 3);
}

/* A permit node's yes for slot s (permit.c keeps it in u.left_ms). */
static int cast_slot(rl_round_t *r, size_t i, int s) {
    r->pn[i].u.left_ms = s;
    return rl_round_vote(r, i, REDLOCK_VOTE_YES, REDLOCK_OK, 100, NULL);
}

Test(round, slot_waits_until_the_reason_is_settled) {
    /* N = 5, Q = 3, slack 2. A slot with a quorum decides at once. */
    RL_ROUND(r);
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    cr_assert_eq(cast_slot(r, 0, 1), 0);
    cr_assert_eq(cast_slot(r, 1, 0), 0);
    cr_assert_eq(cast_slot(r, 2, 1), 0);
    cr_assert_eq(cast_slot(r, 3, 1), 1);

    /* 2 full, 1 quarantined: no slot can win, but the two pending nodes
     * decide between TAKEN (full there too) and NO_QUORUM. */
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    cast(r, 0, K_NO);
    cast(r, 1, K_TIMEOUT);
    cr_assert_eq(cast(r, 2, K_NO), 0);
    cr_assert_not(rl_round_decided(r), "decided before the reason was known");
    cr_assert_eq(cast(r, 3, K_NO), 1, "three full nodes settle TAKEN");
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_TAKEN);

    /* 3 failed: NO_QUORUM whatever follows. */
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    cast(r, 0, K_TIMEOUT);
    cast(r, 1, K_TIMEOUT);
    cr_assert_eq(cast(r, 2, K_TIMEOUT), 1);
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_NO_QUORUM);

    /* slots split with no failure: every node must be heard (a split over
     * all of them is TAKEN) */
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    cast_slot(r, 0, 0);
    cast_slot(r, 1, 1);
    cast_slot(r, 2, 2);
    cr_assert_eq(cast(r, 3, K_NO), 0, "best 1 + 1 pending < Q, but no failure yet");
    cr_assert_eq(cast(r, 4, K_NO), 1);

    /* a failure with the reason beyond doubt: 1 failed, 2 split, 0 no, 2
     * pending -> at most 2 no can follow: NO_QUORUM is settled */
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    cast(r, 0, K_TIMEOUT);
    cast_slot(r, 1, 0);
    cr_assert_eq(cast_slot(r, 2, 1), 0, "best 1 + 2 pending can still reach Q");
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    cast(r, 0, K_TIMEOUT);
    cast(r, 1, K_TIMEOUT);
    cast_slot(r, 2, 0);
    cr_assert_eq(cast_slot(r, 3, 1), 1, "best 1 + 1 pending < Q; 0 no + 1 pending <= slack");
    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), REDLOCK_ERR_NO_QUORUM);
}

/* Plays every sequence of n votes drawn from the four kinds, the votes
 * landing on the nodes in a rotated order, and checks at every prefix that
 * the round is decided exactly when the model says so, that rl_round_vote
 * returns 1 once (on the deciding vote), and the counts and reasons. */
static void exhaustive(int stop) {
    for (size_t n = 1; n <= 7; n++) {
        size_t total = 1;
        for (size_t i = 0; i < n; i++) total *= K_KINDS;
        for (size_t seq = 0; seq < total; seq++) {
            int kinds[8];
            size_t code = seq;
            for (size_t i = 0; i < n; i++, code /= K_KINDS) kinds[i] = (int)(code % K_KINDS);
            size_t rot = seq % n; /* the k-th vote goes to node (k + rot) % n */
            redlock_node_report_t rep[7];
            RL_ROUND(r);
            rl_round_init(r, n, stop, (seq & 1) ? rep : NULL);
            model_t m = model_new(n);
            int model_was_decided = 0;
            size_t no_at_decision = 0, auth_at_decision = 0;
            char sbuf[16];
            for (size_t k = 0; k < n; k++) {
                size_t node = (k + rot) % n;
                int ret = cast(r, node, kinds[k]);
                model_vote(&m, kinds[k]);
                int want = model_decided(&m, stop);
                const char *s = seq_str(kinds, k + 1, sbuf);
                if (stop == RL_STOP_MAJORITY)
                    cr_assert_eq(want, stated_majority_rule(&m), "model disagrees with the stated rule: n %zu %s", n,
                                 s);
                cr_assert(!model_was_decided || want, "model: n %zu %s undecided again", n, s);
                cr_assert_eq(rl_round_decided(r), want, "n %zu stop %d votes %s: decided %d, want %d", n, stop, s,
                             rl_round_decided(r), want);
                cr_assert_eq(ret, want && !model_was_decided, "n %zu stop %d votes %s: rl_round_vote returned %d", n,
                             stop, s, ret);
                cr_assert(r->yes == m.yes && r->no == m.no && r->failed == m.failed && r->pending == m.pending &&
                              r->auth_failed == m.auth,
                          "n %zu votes %s: counts %zu/%zu/%zu/%zu auth %zu, want %zu/%zu/%zu/%zu auth %zu", n, s,
                          r->yes, r->no, r->failed, r->pending, r->auth_failed, m.yes, m.no, m.failed, m.pending,
                          m.auth);
                if (ret) {
                    r->done = 1; /* what the engine's finish_round does */
                    no_at_decision = r->no;
                    auth_at_decision = r->auth_failed;
                }
                model_was_decided = want;
            }
            const char *s = seq_str(kinds, n, sbuf);
            cr_assert(r->done, "n %zu %s: never decided", n, s);
            if (stop == RL_STOP_MAJORITY) {
                int reason = rl_round_reason(r, REDLOCK_ERR_TAKEN);
                cr_assert_eq(reason, model_reason(&m, REDLOCK_ERR_TAKEN), "n %zu votes %s: reason %d, want %d", n, s,
                             reason, model_reason(&m, REDLOCK_ERR_TAKEN));
                if (r->yes < r->quorum) {
                    /* Stopping early never changed the reason: the AUTH and
                     * no counts were already on their final side of N-Q. */
                    size_t slack = n - r->quorum;
                    cr_assert_eq(auth_at_decision > slack, r->auth_failed > slack,
                                 "n %zu votes %s: AUTH not settled at decision", n, s);
                    if (r->auth_failed <= slack)
                        cr_assert_eq(no_at_decision > slack, r->no > slack,
                                     "n %zu votes %s: TAKEN not settled at decision", n, s);
                }
            }
            if (r->nodes)
                for (size_t k = 0; k < n; k++) {
                    const redlock_node_report_t *nr = &rep[(k + rot) % n];
                    cr_assert_eq(nr->vote, kind_vote(kinds[k]), "n %zu votes %s: report of vote %zu", n, s, k);
                }
        }
    }
}

Test(round, majority_exhaustive_1_to_7) {
    exhaustive(RL_STOP_MAJORITY);
}

Test(round, majority_reason_rule) {
    /* Final reasons for whole rounds, N = 1..9, all splits of the votes. */
    for (size_t n = 1; n <= 9; n++) {
        size_t q = n / 2 + 1, slack = n - q;
        for (size_t yes = 0; yes < q; yes++)
            for (size_t no = 0; yes + no <= n; no++)
                for (size_t auth = 0; yes + no + auth <= n; auth++) {
                    RL_ROUND(r);
                    rl_round_init(r, n, RL_STOP_MAJORITY, NULL);
                    size_t i = 0;
                    for (size_t j = 0; j < auth; j++) cast(r, i++, K_AUTH);
                    for (size_t j = 0; j < no; j++) cast(r, i++, K_NO);
                    for (size_t j = 0; j < yes; j++) cast(r, i++, K_YES);
                    while (i < n) cast(r, i++, K_TIMEOUT);
                    int want = auth > slack ? REDLOCK_ERR_AUTH : no > slack ? REDLOCK_ERR_TAKEN : REDLOCK_ERR_NO_QUORUM;
                    cr_assert_eq(rl_round_reason(r, REDLOCK_ERR_TAKEN), want,
                                 "n %zu: %zu yes %zu no %zu auth: reason %d, want %d", n, yes, no, auth,
                                 rl_round_reason(r, REDLOCK_ERR_TAKEN), want);
                    cr_assert(rl_round_decided(r));
                }
    }
}

/* ---- RL_STOP_RESOLVE / RL_STOP_ALL -------------------------------------- */

Test(round, resolve_exhaustive_1_to_7) {
    exhaustive(RL_STOP_RESOLVE);
}

Test(round, resolve_examples) {
    RL_ROUND(r);
    /* N = 5, Q = 3: three no votes are a quorum of "not there". */
    rl_round_init(r, 5, RL_STOP_RESOLVE, NULL);
    cr_assert_eq(cast(r, 0, K_NO), 0);
    cr_assert_eq(cast(r, 1, K_NO), 0);
    cr_assert_eq(cast(r, 2, K_NO), 1);
    /* N = 5: 2 yes, 2 no -> the last vote decides. */
    rl_round_init(r, 5, RL_STOP_RESOLVE, NULL);
    cast(r, 0, K_YES);
    cast(r, 1, K_NO);
    cast(r, 2, K_YES);
    cr_assert_eq(cast(r, 3, K_NO), 0);
    cr_assert_eq(cast(r, 4, K_TIMEOUT), 1);
    /* N = 5: 1 yes, 1 no, 2 failed -> neither quorum reachable. */
    rl_round_init(r, 5, RL_STOP_RESOLVE, NULL);
    cast(r, 0, K_YES);
    cast(r, 1, K_NO);
    cr_assert_eq(cast(r, 2, K_AUTH), 0);
    cr_assert_eq(cast(r, 3, K_TIMEOUT), 1);
    cr_assert_eq(r->pending, 1);
}

Test(round, stop_all_waits_for_every_node) {
    for (size_t n = 1; n <= 9; n++) {
        RL_ROUND(r);
        rl_round_init(r, n, RL_STOP_ALL, NULL);
        for (size_t i = 0; i < n; i++) {
            int ret = cast(r, i, K_YES);
            cr_assert_eq(ret, i + 1 == n, "n %zu vote %zu", n, i + 1);
            cr_assert_eq(rl_round_decided(r), i + 1 == n);
        }
    }
}

/* ---- second votes, per-node reports ------------------------------------- */

Test(round, second_vote_for_a_node_is_ignored) {
    redlock_node_report_t rep[5];
    RL_ROUND(r);
    rl_round_init(r, 5, RL_STOP_MAJORITY, rep);
    cr_assert_eq(rl_round_vote(r, 1, REDLOCK_VOTE_YES, REDLOCK_OK, 42, "first"), 0);
    static const redlock_vote_t again[] = {REDLOCK_VOTE_YES, REDLOCK_VOTE_NO, REDLOCK_VOTE_TIMEOUT, REDLOCK_VOTE_DOWN,
                                           REDLOCK_VOTE_ERROR};
    for (size_t j = 0; j < sizeof again / sizeof again[0]; j++) {
        cr_assert_eq(rl_round_vote(r, 1, again[j], REDLOCK_ERR_AUTH, 99, "second"), 0);
        cr_assert(r->yes == 1 && r->no == 0 && r->failed == 0 && r->auth_failed == 0 && r->pending == 4,
                  "second vote %s changed the counts", redlock_vote_name(again[j]));
        cr_assert_eq(r->pn[1].vote, REDLOCK_VOTE_YES);
        cr_assert_eq(rep[1].vote, REDLOCK_VOTE_YES);
        cr_assert_eq(rep[1].err, REDLOCK_OK);
        cr_assert_eq(rep[1].rtt_us, 42);
        cr_assert_str_eq(rep[1].detail, "first");
    }
    /* A repeated yes cannot make a quorum of one node's votes. */
    cr_assert_not(rl_round_decided(r));
    /* After the round is decided, repeats are still ignored. */
    cast(r, 0, K_YES);
    cr_assert_eq(cast(r, 2, K_YES), 1);
    r->done = 1;
    cr_assert_eq(cast(r, 2, K_NO), 0);
    cr_assert_eq(cast(r, 0, K_AUTH), 0);
    cr_assert(r->yes == 3 && r->no == 0 && r->failed == 0 && r->pending == 2);
    /* A late first vote from a pending node is still recorded, without
     * deciding the round a second time. */
    cr_assert_eq(cast(r, 3, K_NO), 0);
    cr_assert_eq(r->no, 1);
    cr_assert_eq(rep[3].vote, REDLOCK_VOTE_NO);
}

Test(round, node_reports_record_each_vote) {
    struct {
        redlock_node_report_t rep[6];
        unsigned char guard[64];
    } b;
    memset(&b, 0x77, sizeof b);
    RL_ROUND(r);
    rl_round_init(r, 6, RL_STOP_RESOLVE, b.rep);
    char long_detail[600];
    memset(long_detail, 'd', sizeof long_detail - 1);
    long_detail[sizeof long_detail - 1] = '\0';
    rl_round_vote(r, 0, REDLOCK_VOTE_YES, REDLOCK_OK, 1500, NULL);
    rl_round_vote(r, 2, REDLOCK_VOTE_ERROR, REDLOCK_ERR_AUTH, 2500, "WRONGPASS invalid username-password pair");
    rl_round_vote(r, 3, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, "no reply within 50 ms");
    rl_round_vote(r, 5, REDLOCK_VOTE_DOWN, REDLOCK_ERR_IO, -1, long_detail);

    const redlock_node_report_t *rep = b.rep;
    cr_assert_eq(rep[0].vote, REDLOCK_VOTE_YES);
    cr_assert_eq(rep[0].err, REDLOCK_OK);
    cr_assert_eq(rep[0].rtt_us, 1500);
    cr_assert_str_empty(rep[0].detail, "NULL detail must read as empty, is '%s'", rep[0].detail);

    cr_assert_eq(rep[2].vote, REDLOCK_VOTE_ERROR);
    cr_assert_eq(rep[2].err, REDLOCK_ERR_AUTH);
    cr_assert_eq(rep[2].rtt_us, 2500);
    cr_assert_str_eq(rep[2].detail, "WRONGPASS invalid username-password pair");

    cr_assert_eq(rep[3].vote, REDLOCK_VOTE_TIMEOUT);
    cr_assert_eq(rep[3].err, REDLOCK_ERR_TIMEOUT);
    cr_assert_eq(rep[3].rtt_us, -1);
    cr_assert_str_eq(rep[3].detail, "no reply within 50 ms");

    cr_assert_eq(rep[5].vote, REDLOCK_VOTE_DOWN);
    cr_assert_eq(rep[5].err, REDLOCK_ERR_IO);
    cr_assert_eq(strlen(rep[5].detail), sizeof rep[5].detail - 1, "long detail not truncated to fit");
    cr_assert_eq(strncmp(rep[5].detail, long_detail, sizeof rep[5].detail - 1), 0);
    for (size_t i = 0; i < sizeof b.guard; i++) cr_assert_eq(b.guard[i], 0x77, "guard byte %zu overwritten", i);

    for (size_t i = 1; i < 6; i += 3) { /* nodes 1 and 4 never voted */
        cr_assert_eq(rep[i].vote, REDLOCK_VOTE_NONE, "node %zu", i);
        cr_assert_eq(rep[i].err, REDLOCK_OK, "node %zu", i);
        cr_assert_eq(rep[i].rtt_us, -1, "node %zu", i);
        cr_assert_str_empty(rep[i].detail, "node %zu", i);
    }
    cr_assert(r->yes == 1 && r->no == 0 && r->failed == 3 && r->auth_failed == 1 && r->pending == 2);
}

/* ---- classifiers -------------------------------------------------------- */

typedef redlock_vote_t (*classify_fn)(const void *, int *, char *, size_t);

/* Classifies rep with fn into a 128-byte detail followed by guard bytes;
 * checks the guard and termination; returns the vote, *err and detail. */
static redlock_vote_t run_classify(classify_fn fn, const redisReply *rep, int *err, char *detail_out) {
    struct {
        char detail[128];
        unsigned char guard[64];
    } b;
    memset(&b, 0x3C, sizeof b);
    b.detail[0] = '\0';
    *err = 12345;
    redlock_vote_t v = fn(rep, err, b.detail, sizeof b.detail);
    cr_assert_not_null(memchr(b.detail, '\0', sizeof b.detail), "detail not NUL-terminated");
    for (size_t i = 0; i < sizeof b.guard; i++) cr_assert_eq(b.guard[i], 0x3C, "guard byte %zu overwritten", i);
    memcpy(detail_out, b.detail, sizeof b.detail);
    return v;
}

static redisReply status_reply(char *s) {
    return (redisReply){.type = REDIS_REPLY_STATUS, .str = s, .len = strlen(s)};
}

static redisReply error_reply(char *s) {
    return (redisReply){.type = REDIS_REPLY_ERROR, .str = s, .len = strlen(s)};
}

/* Expects fn(rep) to be an ERROR vote with error code want_err and a detail
 * equal to want_detail (or holding it, when contains is set). */
static void expect_error(classify_fn fn, const redisReply *rep, int want_err, const char *want_detail, int contains,
                         const char *what) {
    int err;
    char detail[128];
    redlock_vote_t v = run_classify(fn, rep, &err, detail);
    cr_assert_eq(v, REDLOCK_VOTE_ERROR, "%s: vote %s, want error", what, redlock_vote_name(v));
    cr_assert_eq(err, want_err, "%s: err %d (%s), want %d (%s)", what, err, redlock_strerror(err), want_err,
                 redlock_strerror(want_err));
    if (contains)
        cr_assert_not_null(strstr(detail, want_detail), "%s: detail '%s' lacks '%s'", what, detail, want_detail);
    else
        cr_assert_str_eq(detail, want_detail, "%s", what);
}

Test(classify, set_ok_is_yes_nil_is_no) {
    int err;
    char detail[128];
    redisReply ok = {.type = REDIS_REPLY_STATUS, .str = "OK", .len = 2};
    cr_assert_eq(run_classify(rl_classify_set, &ok, &err, detail), REDLOCK_VOTE_YES);
    redisReply nil = {.type = REDIS_REPLY_NIL};
    cr_assert_eq(run_classify(rl_classify_set, &nil, &err, detail), REDLOCK_VOTE_NO);
}

Test(classify, set_auth_errors) {
    static char *texts[] = {"NOAUTH Authentication required.",
                            "WRONGPASS invalid username-password pair or user is disabled.",
                            "NOPERM this user has no permissions to run the 'set' command"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        redisReply e = error_reply(texts[i]);
        expect_error(rl_classify_set, &e, REDLOCK_ERR_AUTH, texts[i], 0, texts[i]);
    }
}

Test(classify, set_server_errors) {
    static char *texts[] = {"OOM command not allowed when used memory > 'maxmemory'.",
                            "READONLY You can't write against a read only replica.",
                            "LOADING Redis is loading the dataset in memory", "ERR unknown command 'SET'",
                            "MISCONF Redis is configured to save RDB snapshots"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        redisReply e = error_reply(texts[i]);
        expect_error(rl_classify_set, &e, REDLOCK_ERR_SERVER, texts[i], 0, texts[i]);
    }
}

Test(classify, set_unexpected_replies) {
    redisReply one = {.type = REDIS_REPLY_INTEGER, .integer = 1};
    expect_error(rl_classify_set, &one, REDLOCK_ERR_IO, "unexpected reply type", 1, "SET -> integer 1");
    static char *statuses[] = {"QUEUED", "OKAY", "ok", "O", ""};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        redisReply s = status_reply(statuses[i]);
        expect_error(rl_classify_set, &s, REDLOCK_ERR_IO, "unexpected reply type", 1, statuses[i]);
    }
    redisReply bulk_ok = {.type = REDIS_REPLY_STRING, .str = "OK", .len = 2};
    expect_error(rl_classify_set, &bulk_ok, REDLOCK_ERR_IO, "unexpected reply type", 1, "SET -> bulk \"OK\"");
    redisReply arr = {.type = REDIS_REPLY_ARRAY, .elements = 0};
    expect_error(rl_classify_set, &arr, REDLOCK_ERR_IO, "unexpected reply type", 1, "SET -> empty array");
}

Test(classify, int_one_is_yes_zero_is_no) {
    int err;
    char detail[128];
    redisReply one = {.type = REDIS_REPLY_INTEGER, .integer = 1};
    cr_assert_eq(run_classify(rl_classify_int, &one, &err, detail), REDLOCK_VOTE_YES);
    redisReply zero = {.type = REDIS_REPLY_INTEGER, .integer = 0};
    cr_assert_eq(run_classify(rl_classify_int, &zero, &err, detail), REDLOCK_VOTE_NO);
}

Test(classify, int_unexpected_replies) {
    static const long long odd[] = {2, -1, 10, INT64_MAX, INT64_MIN, 1LL << 32, (1LL << 32) + 1};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        redisReply r = {.type = REDIS_REPLY_INTEGER, .integer = odd[i]};
        char what[48];
        snprintf(what, sizeof what, "integer %lld", odd[i]);
        expect_error(rl_classify_int, &r, REDLOCK_ERR_IO, "unexpected reply type", 1, what);
    }
    redisReply str1 = {.type = REDIS_REPLY_STRING, .str = "1", .len = 1};
    expect_error(rl_classify_int, &str1, REDLOCK_ERR_IO, "unexpected reply type", 1, "bulk \"1\"");
    redisReply ok = {.type = REDIS_REPLY_STATUS, .str = "OK", .len = 2};
    expect_error(rl_classify_int, &ok, REDLOCK_ERR_IO, "unexpected reply type", 1, "status OK");
    redisReply nil = {.type = REDIS_REPLY_NIL};
    expect_error(rl_classify_int, &nil, REDLOCK_ERR_IO, "unexpected reply type", 1, "nil");
}

Test(classify, int_error_replies) {
    redisReply noscript = error_reply("NOSCRIPT No matching script. Please use EVAL.");
    expect_error(rl_classify_int, &noscript, REDLOCK_ERR_SERVER, "NOSCRIPT No matching script. Please use EVAL.", 0,
                 "NOSCRIPT");
    redisReply busy = error_reply("BUSY Redis is busy running a script.");
    expect_error(rl_classify_int, &busy, REDLOCK_ERR_SERVER, "BUSY Redis is busy running a script.", 0, "BUSY");
    redisReply noauth = error_reply("NOAUTH Authentication required.");
    expect_error(rl_classify_int, &noauth, REDLOCK_ERR_AUTH, "NOAUTH Authentication required.", 0, "NOAUTH");
    redisReply noperm = error_reply("NOPERM this user has no permissions to run the 'evalsha' command");
    expect_error(rl_classify_int, &noperm, REDLOCK_ERR_AUTH, "NOPERM", 1, "NOPERM");
}

Test(classify, long_error_text_is_truncated_safely) {
    static char text[501];
    memcpy(text, "ERR long:", 9);
    for (size_t i = 9; i < 500; i++) text[i] = (char)('a' + i % 26);
    text[500] = '\0';
    redisReply e = {.type = REDIS_REPLY_ERROR, .str = text, .len = 500};
    classify_fn fns[] = {rl_classify_set, rl_classify_int};
    for (size_t f = 0; f < 2; f++) {
        int err;
        char detail[128];
        cr_assert_eq(run_classify(fns[f], &e, &err, detail), REDLOCK_VOTE_ERROR);
        cr_assert_eq(err, REDLOCK_ERR_SERVER);
        size_t len = strlen(detail);
        cr_assert(len > 16 && len < 128, "detail length %zu", len);
        cr_assert_eq(strncmp(detail, text, len), 0, "detail is not a prefix of the error text");
    }
    /* Smaller detail buffers are respected too. */
    static const size_t sizes[] = {1, 2, 16, 121};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        struct {
            char detail[121];
            unsigned char guard[32];
        } b;
        memset(&b, 0x3C, sizeof b);
        int err = 0;
        cr_assert_eq(rl_classify_int(&e, &err, b.detail, sizes[s]), REDLOCK_VOTE_ERROR);
        cr_assert_eq(strlen(b.detail), sizes[s] - 1, "n %zu: detail length %zu", sizes[s], strlen(b.detail));
        for (size_t i = sizes[s]; i < sizeof b.detail; i++)
            cr_assert_eq((unsigned char)b.detail[i], 0x3C, "n %zu: byte %zu written", sizes[s], i);
        for (size_t i = 0; i < sizeof b.guard; i++) cr_assert_eq(b.guard[i], 0x3C, "n %zu: guard %zu", sizes[s], i);
    }
}

Test(classify, error_code_of_texts) {
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"NOAUTH Authentication required.", REDLOCK_ERR_AUTH},
        {"WRONGPASS invalid username-password pair", REDLOCK_ERR_AUTH},
        {"NOPERM this user has no permissions", REDLOCK_ERR_AUTH},
        {"ERR AUTH <password> called without any password configured", REDLOCK_ERR_AUTH},
        {"ERR invalid password", REDLOCK_ERR_AUTH},
        {"OOM command not allowed when used memory > 'maxmemory'.", REDLOCK_ERR_SERVER},
        {"READONLY You can't write against a read only replica.", REDLOCK_ERR_SERVER},
        {"LOADING Redis is loading the dataset in memory", REDLOCK_ERR_SERVER},
        {"NOSCRIPT No matching script.", REDLOCK_ERR_SERVER},
        {"ERR wrong number of arguments", REDLOCK_ERR_SERVER},
        {"", REDLOCK_ERR_SERVER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(rl_error_code(cases[i].text), cases[i].want, "'%s': %d, want %d", cases[i].text,
                     rl_error_code(cases[i].text), cases[i].want);
}

/* ---- settled outcomes and the grace (doc/design.md, "A silent minority") --------------------- */

/* The outcome class a stop rule's round ends in, without its reason:
 * MAJORITY and GRANT: a quorum of yes or not; RESOLVE: a quorum of yes, a
 * quorum of no, or neither. */
static int outcome_only(int stop, size_t q, size_t yes, size_t no) {
    if (yes >= q) return 0;
    if (stop == RL_STOP_RESOLVE && no >= q) return 1;
    return 2;
}

/* 1 when every way the pending nodes may still vote leads to the same
 * outcome class (the model of rl_round_settled). */
static int model_settled(const model_t *m, int stop) {
    int seen = -1;
    for (size_t y = 0; y <= m->pending; y++)
        for (size_t x = 0; x + y <= m->pending; x++) {
            int c = outcome_only(stop, m->q, m->yes + y, m->no + x);
            if (seen >= 0 && c != seen) return 0;
            seen = c;
        }
    return 1;
}

/* Plays every sequence of votes for N = 1..7 and checks rl_round_settled
 * against the model after each vote: settled exactly when the outcome is
 * known, never unsettled again, and always once the round is decided. */
static void settled_exhaustive(int stop) {
    for (size_t n = 1; n <= 7; n++) {
        size_t total = 1;
        for (size_t i = 0; i < n; i++) total *= K_KINDS;
        for (size_t code = 0; code < total; code++) {
            int kinds[8];
            char sbuf[9];
            size_t c = code;
            for (size_t i = 0; i < n; i++, c /= K_KINDS) kinds[i] = (int)(c % K_KINDS);
            RL_ROUND(r);
            rl_round_init(r, n, stop, NULL);
            model_t m = model_new(n);
            int was = 0;
            for (size_t i = 0; i < n; i++) {
                cast(r, i, kinds[i]);
                model_vote(&m, kinds[i]);
                int want = model_settled(&m, stop);
                const char *s = seq_str(kinds, i + 1, sbuf);
                cr_assert_eq(rl_round_settled(r), want, "n %zu stop %d votes %s: settled %d, want %d", n, stop, s,
                             rl_round_settled(r), want);
                cr_assert(!was || want, "n %zu stop %d votes %s: unsettled again", n, stop, s);
                cr_assert(!rl_round_decided(r) || rl_round_settled(r), "n %zu stop %d votes %s: decided, not settled",
                          n, stop, s);
                was = want;
            }
        }
    }
}

Test(round, majority_settled_exhaustive_1_to_7) {
    settled_exhaustive(RL_STOP_MAJORITY);
}

Test(round, grant_settled_exhaustive_1_to_7) {
    settled_exhaustive(RL_STOP_GRANT);
}

Test(round, resolve_settled_exhaustive_1_to_7) {
    settled_exhaustive(RL_STOP_RESOLVE);
}

Test(round, grant_is_settled_once_a_quorum_of_yes_is_out_of_reach) {
    /* A waiting attempt hears every node out to learn the holder's TTL;
     * once no quorum of yes is possible the outcome is known, and the
     * silent fifth node is waited for only a grace. */
    RL_ROUND(r);
    rl_round_init(r, 5, RL_STOP_GRANT, NULL);
    cast(r, 0, K_NO);
    cast(r, 1, K_NO);
    cr_assert_not(rl_round_settled(r), "2 no of 5: three yes are still possible");
    cast(r, 2, K_NO);
    cr_assert(rl_round_settled(r), "3 no of 5: no quorum of yes");
    cast(r, 3, K_NO);
    cr_assert_not(rl_round_decided(r), "GRANT still waits for the fifth");
    cr_assert(rl_round_settled(r));
    /* a split: 2 yes 2 no with one unheard is not settled (its yes decides) */
    rl_round_init(r, 5, RL_STOP_GRANT, NULL);
    cast(r, 0, K_YES);
    cast(r, 1, K_NO);
    cast(r, 2, K_YES);
    cast(r, 3, K_NO);
    cr_assert_not(rl_round_settled(r), "2 yes 2 no: the fifth node's vote decides the outcome");
}

Test(round, slot_settled_examples) {
    /* permit rounds: a yes node's slot is in u.left_ms */
    RL_ROUND(r);
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    int slots[4] = {0, 1, 0, 1};
    for (size_t i = 0; i < 4; i++) {
        r->pn[i].u.left_ms = slots[i];
        rl_round_vote(r, i, REDLOCK_VOTE_YES, REDLOCK_OK, 100, NULL);
    }
    /* slots 0 and 1 have two each: the fifth node may give either a quorum */
    cr_assert_not(rl_round_settled(r));
    rl_round_init(r, 5, RL_STOP_SLOT, NULL);
    int three[3] = {0, 1, 2};
    for (size_t i = 0; i < 3; i++) {
        r->pn[i].u.left_ms = three[i];
        rl_round_vote(r, i, REDLOCK_VOTE_YES, REDLOCK_OK, 100, NULL);
    }
    rl_round_vote(r, 3, REDLOCK_VOTE_NO, REDLOCK_OK, 100, NULL);
    cr_assert(rl_round_settled(r), "best slot 1 + 1 pending < 3: no slot can reach a quorum");
}

Test(round, stop_all_never_settles_early) {
    RL_ROUND(r);
    rl_round_init(r, 5, RL_STOP_ALL, NULL);
    for (size_t i = 0; i < 4; i++) {
        cast(r, i, K_NO);
        cr_assert_not(rl_round_settled(r), "status and ping hear every node: vote %zu", i);
    }
    cast(r, 4, K_NO);
    cr_assert(rl_round_settled(r));
}

Test(round, grace_is_a_few_round_trips_of_the_slowest_answer) {
    RL_ROUND(r);
    rl_round_init(r, 5, RL_STOP_GRANT, NULL);
    cr_assert_eq(rl_round_slowest_us(r), 0);
    cr_assert_eq(rl_round_grace_us(r, 4, 50000), RL_GRACE_MIN_US, "no answer yet: the floor");
    rl_round_vote(r, 0, REDLOCK_VOTE_NO, REDLOCK_OK, 300, NULL);
    rl_round_vote(r, 1, REDLOCK_VOTE_NO, REDLOCK_OK, 900, NULL);
    rl_round_vote(r, 2, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, "timed out");
    cr_assert_eq(rl_round_slowest_us(r), 900);
    cr_assert_eq(rl_round_grace_us(r, 4, 50000), 3600u, "4 x the slowest answer");
    cr_assert_eq(rl_round_grace_us(r, 1, 50000), 900u);
    cr_assert_eq(rl_round_grace_us(r, 100, 50000), 50000u, "capped at the op timeout");
    cr_assert_eq(rl_round_grace_us(r, 4, 2000), 2000u);
    rl_round_init(r, 3, RL_STOP_MAJORITY, NULL);
    rl_round_vote(r, 0, REDLOCK_VOTE_NO, REDLOCK_OK, 20, NULL);
    cr_assert_eq(rl_round_grace_us(r, 4, 50000), RL_GRACE_MIN_US, "80 us is below the floor");
}

/* ---- the fencing write-back's EXEC (fence.c) ------------------------------ */

static const char k_token[] = "0123456789abcdef0123456789abcdef01234567";

/* rl_fence_judge with k_token, shaped as a classifier for run_classify. */
static redlock_vote_t judge_ours(const void *reply, int *err, char *detail, size_t n) {
    return rl_fence_judge(reply, k_token, err, detail, n);
}

/* EXEC's array [get, incr] in rep (elems: room for its two elements). */
static void exec_of(redisReply *rep, redisReply **elems, redisReply *get, redisReply *incr) {
    elems[0] = get;
    elems[1] = incr;
    *rep = (redisReply){.type = REDIS_REPLY_ARRAY, .elements = 2, .element = elems};
}

Test(classify, fence_write_back_yes_only_for_our_token_and_a_count) {
    redisReply ours = {.type = REDIS_REPLY_STRING, .str = (char *)k_token, .len = REDLOCK_TOKEN_LEN};
    redisReply count = {.type = REDIS_REPLY_INTEGER, .integer = 9000000000000001LL};
    redisReply rep, *el[2];
    int err;
    char detail[128];
    exec_of(&rep, el, &ours, &count);
    cr_assert_eq(run_classify(judge_ours, &rep, &err, detail), REDLOCK_VOTE_YES);
    /* another holder's token, a prefix of ours, none: no (the INCRBY landed, harmless) */
    static char other[] = "fedcba9876543210fedcba9876543210fedcba98";
    redisReply theirs = {.type = REDIS_REPLY_STRING, .str = other, .len = REDLOCK_TOKEN_LEN};
    redisReply prefix = {.type = REDIS_REPLY_STRING, .str = (char *)k_token, .len = REDLOCK_TOKEN_LEN - 1};
    redisReply nil = {.type = REDIS_REPLY_NIL};
    redisReply *nos[] = {&theirs, &prefix, &nil};
    for (size_t i = 0; i < 3; i++) {
        exec_of(&rep, el, nos[i], &count);
        cr_assert_eq(run_classify(judge_ours, &rep, &err, detail), REDLOCK_VOTE_NO, "case %zu", i);
        cr_assert_not_null(strstr(detail, "no longer ours"), "case %zu: %s", i, detail);
    }
}

Test(classify, fence_write_back_errors_name_what_failed) {
    redisReply ours = {.type = REDIS_REPLY_STRING, .str = (char *)k_token, .len = REDLOCK_TOKEN_LEN};
    redisReply count = {.type = REDIS_REPLY_INTEGER, .integer = 7};
    redisReply overflow = error_reply("ERR increment or decrement would overflow");
    redisReply wrongtype = error_reply("WRONGTYPE Operation against a key holding the wrong kind of value");
    redisReply rep, *el[2];
    exec_of(&rep, el, &ours, &overflow);
    expect_error(judge_ours, &rep, REDLOCK_ERR_SERVER,
                 "INCRBY of the fencing counter: ERR increment or decrement "
                 "would overflow",
                 0, "overflow (no ACL hint)");
    exec_of(&rep, el, &wrongtype, &count);
    expect_error(judge_ours, &rep, REDLOCK_ERR_SERVER, "GET of the lock: WRONGTYPE", 1, "GET WRONGTYPE");
    exec_of(&rep, el, &ours, &wrongtype);
    expect_error(judge_ours, &rep, REDLOCK_ERR_SERVER, "INCRBY of the fencing counter: WRONGTYPE", 1,
                 "INCRBY WRONGTYPE");
    /* the transaction refused as a whole */
    redisReply abort = error_reply("EXECABORT Transaction discarded because of previous errors.");
    expect_error(judge_ours, &abort, REDLOCK_ERR_SERVER, "EXEC: EXECABORT", 1, "EXECABORT");
    expect_error(judge_ours, &abort, REDLOCK_ERR_SERVER, "+incrby", 1, "EXECABORT's ACL hint");
    redisReply noperm = error_reply("NOPERM User locker has no permissions to run the 'exec' command");
    expect_error(judge_ours, &noperm, REDLOCK_ERR_AUTH, "+incrby", 1, "NOPERM");
    /* other shapes */
    redisReply status = status_reply("OK");
    expect_error(judge_ours, &status, REDLOCK_ERR_IO, "unexpected reply to the fencing write-back", 1, "status");
    redisReply nil = {.type = REDIS_REPLY_NIL};
    expect_error(judge_ours, &nil, REDLOCK_ERR_IO, "unexpected reply to the fencing write-back", 1, "nil EXEC");
    redisReply one[1] = {{.type = REDIS_REPLY_INTEGER, .integer = 1}};
    redisReply *one_el[1] = {&one[0]};
    redisReply short_arr = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = one_el};
    expect_error(judge_ours, &short_arr, REDLOCK_ERR_IO, "1 elements", 1, "one element");
    redisReply bulk_count = {.type = REDIS_REPLY_STRING, .str = "7", .len = 1};
    exec_of(&rep, el, &ours, &bulk_count);
    expect_error(judge_ours, &rep, REDLOCK_ERR_IO, "INCRBY type", 1, "INCRBY as bulk");
    exec_of(&rep, el, &count, &count);
    expect_error(judge_ours, &rep, REDLOCK_ERR_IO, "GET type", 1, "GET as integer");
}
