/* fuzz_round.c -- libFuzzer target for a fan-out round's vote counting and
 * stop rules (src/core/round.c: rl_round_init / rl_round_vote /
 * rl_round_decided / rl_round_reason).
 *
 * Input: byte 0 gives N (1..9), byte 1 a few options (per-node reports or
 * not, the rtt), then each pair of bytes is one vote: the node (mod N), the
 * kind (YES, NO, TIMEOUT, DOWN, ERROR), its error code and its words. The
 * same votes are cast, in order, into a round under each stop rule
 * (RL_STOP_MAJORITY, RL_STOP_RESOLVE, RL_STOP_ALL); a node's second vote
 * must be ignored. The harness acts as the engine does: when a vote
 * returns 1 the round is done (votes that come later still count).
 *
 * After every vote: yes + no + failed + pending == N and they match a
 * count kept here; once decided, a round stays decided; a vote returns 1
 * exactly once, on the vote that decided the round. The outcome the caller
 * will read (acquire and extend: yes >= Q, else rl_round_reason; release:
 * yes >= Q, no >= Q, else AUTH or NO_QUORUM, as src/core/lifeops.c does) is worked
 * out for every way the pending nodes could still vote: a MAJORITY or
 * RESOLVE round must be decided exactly when that outcome can no longer
 * change (never early, which would report a wrong result, and never late,
 * which would wait on nodes for nothing); an ALL round exactly when no node
 * is pending. rl_round_reason gives AUTH, TAKEN / NOT_HELD or NO_QUORUM
 * when yes < Q, by the rule round.h states.
 */
#include <string.h>

#include "round.h"
#include "fuzz.h"
#include "redlock.h"

#define MAX_N 9

static const redlock_vote_t kinds[] = {REDLOCK_VOTE_YES, REDLOCK_VOTE_NO, REDLOCK_VOTE_TIMEOUT, REDLOCK_VOTE_DOWN,
                                       REDLOCK_VOTE_ERROR};
static const int fail_codes[] = {REDLOCK_ERR_AUTH, REDLOCK_ERR_SERVER, REDLOCK_ERR_IO, REDLOCK_ERR_TIMEOUT,
                                 REDLOCK_ERR_NOMEM};

/* Votes counted by category, kept by the harness. */
typedef struct tally {
    size_t yes, no, auth, other; /* other: failed, not for AUTH */
} tally_t;

/* The result a caller reads from a round with these votes (see above). */
static int outcome(int stop, size_t n, const tally_t *t) {
    size_t q = redlock_quorum(n), slack = n - q;
    if (t->yes >= q) return REDLOCK_OK;
    if (stop == RL_STOP_RESOLVE) {
        if (t->no >= q) return REDLOCK_ERR_NOT_HELD;
        return t->auth > slack ? REDLOCK_ERR_AUTH : REDLOCK_ERR_NO_QUORUM;
    }
    if (t->auth > slack) return REDLOCK_ERR_AUTH;
    if (t->no > slack) return REDLOCK_ERR_TAKEN;
    return REDLOCK_ERR_NO_QUORUM;
}

/* 1 when every way the pending nodes may still vote gives the same outcome. */
static int determined(int stop, size_t n, const tally_t *t, size_t pending) {
    if (stop == RL_STOP_ALL) return pending == 0;
    int first = outcome(stop, n, t);
    for (size_t y = 0; y <= pending; y++)
        for (size_t no = 0; y + no <= pending; no++)
            for (size_t a = 0; y + no + a <= pending; a++) {
                tally_t u = {t->yes + y, t->no + no, t->auth + a, t->other + (pending - y - no - a)};
                if (outcome(stop, n, &u) != first) return 0;
            }
    return 1;
}

static const char *const details[] = {
    NULL,
    "",
    "NOAUTH Authentication required.",
    "no reply within 50 ms",
    "OOM command not allowed when used memory > 'maxmemory'. xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
};

static void run(int stop, size_t n, int with_nodes, int64_t rtt, const uint8_t *v, size_t nv) {
    RL_ROUND(r);
    redlock_node_report_t nodes[MAX_N];
    memset(&r_room_, 0xa5, sizeof r_room_); /* init must set all it uses */
    memset(nodes, 0xa5, sizeof nodes);
    rl_round_init(r, n, stop, with_nodes ? nodes : NULL);
    size_t q = redlock_quorum(n);
    FUZZ_CHECK(r->n == n && r->quorum == q && q >= 1 && q <= n && 2 * q > n);
    FUZZ_CHECK(r->yes == 0 && r->no == 0 && r->failed == 0 && r->auth_failed == 0 && r->pending == n && !r->done);
    FUZZ_CHECK(r->send_all == (stop == RL_STOP_RESOLVE));
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(r->pn[i].vote == REDLOCK_VOTE_NONE && r->pn[i].u.slot == RL_NO_SLOT);
        if (with_nodes) FUZZ_CHECK(nodes[i].vote == REDLOCK_VOTE_NONE && nodes[i].detail[0] == '\0');
    }

    tally_t t = {0, 0, 0, 0};
    uint8_t cast[MAX_N] = {0};
    int decided = rl_round_decided(r);
    FUZZ_CHECK(decided == determined(stop, n, &t, n));
    FUZZ_CHECK(!decided); /* nothing is known before any vote */
    int fired = 0, settled_outcome = 0;

    for (size_t k = 0; k + 1 < nv; k += 2) {
        size_t i = v[k] % n;
        redlock_vote_t kind = kinds[v[k + 1] % 5];
        int failing = kind != REDLOCK_VOTE_YES && kind != REDLOCK_VOTE_NO;
        int err = failing ? fail_codes[(v[k + 1] / 5) % 5] : REDLOCK_OK;
        const char *detail = details[(v[k] / MAX_N) % 5];
        rl_round_room_t before_room = r_room_;
        const rl_round_t *before = &before_room.r;

        int ret = rl_round_vote(r, i, kind, err, failing ? -1 : rtt, detail);
        if (cast[i]) { /* a second vote from the same node changes nothing */
            FUZZ_CHECK(ret == 0);
            FUZZ_CHECK(r->yes == before->yes && r->no == before->no && r->failed == before->failed &&
                       r->pending == before->pending && r->auth_failed == before->auth_failed &&
                       r->pn[i].vote == before->pn[i].vote);
            continue;
        }
        cast[i] = 1;
        if (kind == REDLOCK_VOTE_YES)
            t.yes++;
        else if (kind == REDLOCK_VOTE_NO)
            t.no++;
        else if (err == REDLOCK_ERR_AUTH)
            t.auth++;
        else
            t.other++;

        size_t pending = n - (t.yes + t.no + t.auth + t.other);
        FUZZ_CHECK(r->pn[i].vote == (uint8_t)kind);
        FUZZ_CHECK(r->yes == t.yes && r->no == t.no && r->failed == t.auth + t.other && r->auth_failed == t.auth);
        FUZZ_CHECK(r->pending == pending && (size_t)(r->yes + r->no + r->failed + r->pending) == n);
        if (with_nodes) {
            FUZZ_CHECK(nodes[i].vote == kind && nodes[i].err == err && nodes[i].rtt_us == (failing ? -1 : rtt));
            FUZZ_CHECK(memchr(nodes[i].detail, '\0', sizeof nodes[i].detail));
            const char *d = detail ? detail : "";
            size_t dl = strlen(d) < sizeof nodes[i].detail - 1 ? strlen(d) : sizeof nodes[i].detail - 1;
            FUZZ_CHECK(strlen(nodes[i].detail) == dl && !memcmp(nodes[i].detail, d, dl));
        }

        int now = rl_round_decided(r);
        FUZZ_CHECK(!decided || now); /* monotonic */
        FUZZ_CHECK(now == determined(stop, n, &t, pending));
        FUZZ_CHECK(ret == (now && !decided && !r->done)); /* 1 exactly on the deciding vote */
        if (ret) {
            FUZZ_CHECK(!fired);
            fired = 1;
            r->done = 1; /* what the engine's finish_round does */
            settled_outcome = outcome(stop, n, &t);
        }
        if (fired && stop != RL_STOP_ALL) FUZZ_CHECK(outcome(stop, n, &t) == settled_outcome);
        if (pending == 0) FUZZ_CHECK(now);
        decided = now;

        if (r->yes < r->quorum) {
            size_t slack = n - q;
            for (int j = 0; j < 2; j++) {
                int no_code = j ? REDLOCK_ERR_NOT_HELD : REDLOCK_ERR_TAKEN;
                int why = rl_round_reason(r, no_code);
                FUZZ_CHECK(why == REDLOCK_ERR_AUTH || why == no_code || why == REDLOCK_ERR_NO_QUORUM);
                FUZZ_CHECK(why == (t.auth > slack ? REDLOCK_ERR_AUTH : t.no > slack ? no_code : REDLOCK_ERR_NO_QUORUM));
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t n = 1 + data[0] % MAX_N;
    int with_nodes = data[1] & 1;
    int64_t rtt = (int64_t)(data[1] >> 1) * 997;
    static const int stops[] = {RL_STOP_MAJORITY, RL_STOP_RESOLVE, RL_STOP_ALL};
    for (size_t s = 0; s < 3; s++) run(stops[s], n, with_nodes, rtt, data + 2, size - 2);
    return 0;
}
