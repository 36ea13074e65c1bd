/* round.c -- vote counting and stop rules for one round. */
#include "round.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void rl_round_init(rl_round_t *r, size_t n, int stop, redlock_node_report_t *nodes) {
    r->cmd = NULL;
    r->cmd_len = 0;
    r->ccmd = NULL;
    r->ccmd_len = 0;
    r->gcmd = NULL;
    r->gcmd_len = 0;
    r->gscript = NULL;
    r->hslot = RL_SLOT_NONE;
    r->script = NULL;
    r->classify = NULL;
    r->on_reply = NULL;
    r->reply_arg = NULL;
    r->node_cmd = NULL;
    r->judge = NULL;
    r->node_arg = NULL;
    r->stop = stop;
    r->send_all = stop == RL_STOP_RESOLVE;
    r->grants = 0;
    r->replicate = 0;
    r->skip = 0;
    r->n = n;
    r->quorum = redlock_quorum(n);
    r->nodes = nodes;
    r->lists = NULL;
    for (size_t i = 0; i < n; i++)
        r->pn[i] = (rl_round_node_t){.u.slot = RL_NO_SLOT, .rtt_us = -1, .vote = REDLOCK_VOTE_NONE};
    r->yes = r->no = r->failed = r->auth_failed = r->refused = 0;
    r->pending = n;
    r->done = 0;
    r->t0_us = 0;
    r->grace_us = 0;
    r->owner = NULL;
    for (size_t i = 0; nodes && i < n; i++) {
        nodes[i].vote = REDLOCK_VOTE_NONE;
        nodes[i].err = REDLOCK_OK;
        nodes[i].rtt_us = -1;
        nodes[i].detail[0] = '\0';
    }
}

void rl_round_lists(rl_round_t *r, const uint8_t *lists) {
    r->lists = lists;
    memset(r->lt, 0, sizeof r->lt);
    for (size_t i = 0; i < r->n; i++)
        for (unsigned k = 0; k < 2; k++) r->lt[k].n += (lists[i] >> k) & 1u;
    for (unsigned k = 0; k < 2; k++) {
        r->lt[k].quorum = (uint8_t)redlock_quorum(r->lt[k].n);
        r->lt[k].pending = r->lt[k].n;
    }
}

size_t rl_round_tallies(const rl_round_t *r, rl_tally_t *t) {
    if (r->lists) {
        t[0] = r->lt[0];
        t[1] = r->lt[1];
        return 2;
    }
    t[0] = (rl_tally_t){.n = r->n,
                        .quorum = r->quorum,
                        .yes = r->yes,
                        .no = r->no,
                        .failed = r->failed,
                        .pending = r->pending,
                        .auth_failed = r->auth_failed,
                        .refused = r->refused};
    return 1;
}

/* 1 when count can no longer cross the slack either way: it already
 * exceeds it, or even every pending vote would not make it. */
static int settled(size_t count, size_t pending, size_t slack) {
    return count > slack || count + pending <= slack;
}

/* A list that can no longer make its quorum of yes: 1 once the reason is
 * settled (AUTH, then TAKEN / NOT_HELD, else NO_QUORUM). */
static int lost_settled(const rl_tally_t *t) {
    size_t slack = t->n - t->quorum;
    if (t->auth_failed > slack || t->refused > slack) return 1;
    return settled(t->auth_failed, t->pending, slack) && settled(t->refused, t->pending, slack) &&
           settled(t->no, t->pending, slack);
}

int rl_round_won(const rl_round_t *r) {
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    for (size_t k = 0; k < nt; k++)
        if (t[k].yes < t[k].quorum) return 0;
    return 1;
}

int rl_round_refused(const rl_round_t *r) {
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    for (size_t k = 0; k < nt; k++)
        if (t[k].no >= t[k].quorum) return 1;
    return 0;
}

int rl_round_beyond_slack(const rl_round_t *r, const uint8_t *hit) {
    size_t count[2] = {0, 0};
    for (size_t i = 0; i < r->n; i++)
        for (unsigned k = 0; hit[i] && k < 2; k++) count[k] += r->lists ? (r->lists[i] >> k) & 1u : k == 0;
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    for (size_t k = 0; k < nt; k++)
        if (count[k] > (size_t)(t[k].n - t[k].quorum)) return 1;
    return 0;
}

void rl_round_count_text(const rl_round_t *r, char *buf, size_t n) {
    if (!r->lists)
        snprintf(buf, n, "%u yes, %u no, %u failed of %u nodes (quorum %u)", r->yes, r->no, r->failed, r->n, r->quorum);
    else
        snprintf(buf, n, "%u yes, %u no, %u failed of %u nodes: old %u of %u (quorum %u), new %u of %u (quorum %u)",
                 r->yes, r->no, r->failed, r->n, r->lt[0].yes, r->lt[0].n, r->lt[0].quorum, r->lt[1].yes, r->lt[1].n,
                 r->lt[1].quorum);
}

size_t rl_round_best_slot(const rl_round_t *r, int *slot) {
    size_t best = 0;
    int at = -1;
    for (size_t i = 0; i < r->n; i++) {
        if (r->pn[i].vote != REDLOCK_VOTE_YES) continue;
        size_t same = 0;
        for (size_t j = 0; j < r->n; j++)
            same += r->pn[j].vote == REDLOCK_VOTE_YES && r->pn[j].u.left_ms == r->pn[i].u.left_ms;
        if (same > best) best = same, at = r->pn[i].u.left_ms;
    }
    if (slot) *slot = at;
    return best;
}

/* How far slot s is from a quorum in the worst-off list: the least, over
 * the lists, of its yes votes (plus pending ones when with_pending) less
 * the list's quorum. */
static int slot_margin(const rl_round_t *r, int32_t s, int with_pending) {
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    int worst = INT32_MAX;
    for (size_t k = 0; k < nt; k++) {
        int got = with_pending ? t[k].pending : 0;
        for (size_t i = 0; i < r->n; i++)
            got += r->pn[i].vote == REDLOCK_VOTE_YES && r->pn[i].u.left_ms == s &&
                   (!r->lists || ((r->lists[i] >> k) & 1u));
        if (got - t[k].quorum < worst) worst = got - t[k].quorum;
    }
    return worst;
}

int rl_round_slot_won(const rl_round_t *r, int *slot) {
    if (!r->lists) {
        size_t best = rl_round_best_slot(r, slot);
        return best >= r->quorum;
    }
    int at = -1, best = INT32_MIN;
    for (size_t i = 0; i < r->n; i++) {
        if (r->pn[i].vote != REDLOCK_VOTE_YES) continue;
        int m = slot_margin(r, r->pn[i].u.left_ms, 0);
        if (m > best) best = m, at = r->pn[i].u.left_ms;
    }
    if (slot) *slot = at;
    return at >= 0 && best >= 0;
}

/* 1 when no slot can reach a quorum any more (of each list, joint): not
 * one already named, nor one the pending nodes alone could give. */
static int slots_out_of_reach(const rl_round_t *r) {
    if (!r->lists) return rl_round_best_slot(r, NULL) + r->pending < r->quorum;
    for (unsigned k = 0; k < 2; k++)
        if (r->lt[k].pending >= r->lt[k].quorum) return 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->pn[i].vote == REDLOCK_VOTE_YES && slot_margin(r, r->pn[i].u.left_ms, 1) >= 0) return 0;
    return 1;
}

/* MAJORITY: decided once every list has its quorum of yes, or one list
 * cannot have it and the reason is settled there. */
static int majority_decided(const rl_tally_t *t, size_t nt) {
    int won = 1;
    for (size_t k = 0; k < nt; k++) {
        if (t[k].yes >= t[k].quorum) continue;
        won = 0;
        if (t[k].yes + t[k].pending < t[k].quorum && lost_settled(&t[k])) return 1;
    }
    return won;
}

/* RESOLVE (a release): a list is decided once yes or no has its quorum,
 * or neither can and the AUTH count is settled. */
static int resolve_decided(const rl_tally_t *t) {
    if (t->yes >= t->quorum || t->no >= t->quorum) return 1;
    if (t->yes + t->pending >= t->quorum || t->no + t->pending >= t->quorum) return 0;
    return settled(t->auth_failed, t->pending, t->n - t->quorum);
}

int rl_round_decided(const rl_round_t *r) {
    if (r->pending == 0) return 1;
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    switch (r->stop) {
    case RL_STOP_MAJORITY: return majority_decided(t, nt);
    case RL_STOP_GRANT: return rl_round_won(r);
    case RL_STOP_SLOT: {
        /* As MAJORITY, by slot: once no slot can reach a quorum, wait until
         * the reason is settled (AUTH; TAKEN when more nodes than the slack
         * have no slot free; NO_QUORUM once one failed -- while none has,
         * slots split over every node are TAKEN, so that needs them all). */
        if (rl_round_slot_won(r, NULL)) return 1;
        if (!slots_out_of_reach(r)) return 0;
        for (size_t k = 0; k < nt; k++) {
            size_t slack = t[k].n - t[k].quorum;
            if (t[k].auth_failed > slack || t[k].refused > slack) return 1;
            if (!(settled(t[k].auth_failed, t[k].pending, slack) && settled(t[k].refused, t[k].pending, slack) &&
                  settled(t[k].no, t[k].pending, slack) && (t[k].no > slack || t[k].failed > 0)))
                return 0;
        }
        return 1;
    }
    case RL_STOP_RESOLVE:
        for (size_t k = 0; k < nt; k++)
            if (!resolve_decided(&t[k])) return 0;
        return 1;
    default: return 0;
    }
}

int rl_round_settled(const rl_round_t *r) {
    if (rl_round_decided(r)) return 1;
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    switch (r->stop) {
    case RL_STOP_MAJORITY:
    case RL_STOP_GRANT:
        if (rl_round_won(r)) return 1;
        for (size_t k = 0; k < nt; k++)
            if (t[k].yes + t[k].pending < t[k].quorum) return 1;
        return 0;
    case RL_STOP_SLOT: return rl_round_slot_won(r, NULL) || slots_out_of_reach(r);
    case RL_STOP_RESOLVE:
        for (size_t k = 0; k < nt; k++)
            if (t[k].yes + t[k].pending >= t[k].quorum || t[k].no + t[k].pending >= t[k].quorum) return 0;
        return 1;
    default: return 0;
    }
}

int64_t rl_round_slowest_us(const rl_round_t *r) {
    int64_t slow = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->pn[i].rtt_us > slow) slow = r->pn[i].rtt_us;
    return slow;
}

uint64_t rl_round_grace_us(const rl_round_t *r, uint32_t rtts, uint64_t cap_us) {
    uint64_t g = (uint64_t)rl_round_slowest_us(r) * rtts;
    if (g < RL_GRACE_MIN_US) g = RL_GRACE_MIN_US;
    return g < cap_us ? g : cap_us;
}

/* One vote into a set of counters (a round's, or one list's). */
#define count(pending, yes, no, failed, auth, refused, v, err) \
    do {                                                       \
        (pending)--;                                           \
        if ((v) == REDLOCK_VOTE_YES)                           \
            (yes)++;                                           \
        else if ((v) == REDLOCK_VOTE_NO)                       \
            (no)++;                                            \
        else {                                                 \
            (failed)++;                                        \
            if ((err) == REDLOCK_ERR_AUTH) (auth)++;           \
            if ((err) == REDLOCK_ERR_MEMBERSHIP) (refused)++;  \
        }                                                      \
    } while (0)

int rl_round_vote(rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt_us, const char *detail) {
    if (r->pn[i].vote != REDLOCK_VOTE_NONE) return 0; /* already counted */
    r->pn[i].vote = (uint8_t)v;
    r->pn[i].err = (int8_t)err;
    r->pn[i].rtt_us = rtt_us > INT32_MAX ? INT32_MAX : (int32_t)rtt_us;
    count(r->pending, r->yes, r->no, r->failed, r->auth_failed, r->refused, v, err);
    for (unsigned k = 0; r->lists && k < 2; k++)
        if ((r->lists[i] >> k) & 1u) {
            rl_tally_t *t = &r->lt[k];
            count(t->pending, t->yes, t->no, t->failed, t->auth_failed, t->refused, v, err);
        }
    if (r->nodes) {
        redlock_node_report_t *nr = &r->nodes[i];
        nr->vote = v;
        nr->err = err;
        nr->rtt_us = rtt_us;
        snprintf(nr->detail, sizeof nr->detail, "%s", detail ? detail : "");
    }
    return !r->done && rl_round_decided(r);
}

int rl_round_reason(const rl_round_t *r, int no_code) {
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t), k = 0;
    /* the list that cannot make its quorum (else the first without one) */
    while (k + 1 < nt && t[k].yes + t[k].pending >= t[k].quorum) k++;
    if (t[k].yes + t[k].pending >= t[k].quorum)
        for (k = 0; k + 1 < nt && t[k].yes >= t[k].quorum;) k++;
    size_t slack = t[k].n - t[k].quorum; /* votes that may be lost and still leave a quorum */
    if (t[k].auth_failed > slack) return REDLOCK_ERR_AUTH;
    if (t[k].refused > slack) return REDLOCK_ERR_MEMBERSHIP;
    if (t[k].no > slack) return no_code;
    return REDLOCK_ERR_NO_QUORUM;
}

int rl_error_code(const char *text) {
    if (!strncmp(text, "MEMBERSHIP", 10)) return REDLOCK_ERR_MEMBERSHIP; /* lua/guard/membership.lua */
    if (!strncmp(text, "NOAUTH", 6) || !strncmp(text, "WRONGPASS", 9) || !strncmp(text, "NOPERM", 6) ||
        !strncmp(text, "ERR AUTH", 8) || strstr(text, "invalid password"))
        return REDLOCK_ERR_AUTH;
    return REDLOCK_ERR_SERVER;
}

/* Fills err/detail from an error reply or an unexpected type; returns
 * ERROR, or MEMBERSHIP for the guard's refusal (its words kept whole for
 * the node set, which explains them). */
static redlock_vote_t unexpected(const redisReply *rep, int *err, char *detail, size_t n) {
    if (rep->type == REDIS_REPLY_ERROR) {
        *err = rl_error_code(rep->str);
        snprintf(detail, n, "%.*s", (int)(rep->len > 120 ? 120 : rep->len), rep->str);
        if (!detail[0]) snprintf(detail, n, "error reply with no text");
        if (*err == REDLOCK_ERR_MEMBERSHIP) return REDLOCK_VOTE_MEMBERSHIP;
    } else {
        *err = REDLOCK_ERR_IO;
        snprintf(detail, n, "unexpected reply type %d", rep->type);
    }
    return REDLOCK_VOTE_ERROR;
}

redlock_vote_t rl_classify_set(const void *reply, int *err, char *detail, size_t n) {
    const redisReply *rep = reply;
    if (rep->type == REDIS_REPLY_STATUS && rep->len == 2 && !memcmp(rep->str, "OK", 2)) return REDLOCK_VOTE_YES;
    if (rep->type == REDIS_REPLY_NIL) return REDLOCK_VOTE_NO;
    return unexpected(rep, err, detail, n);
}

redlock_vote_t rl_classify_int(const void *reply, int *err, char *detail, size_t n) {
    const redisReply *rep = reply;
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1) return REDLOCK_VOTE_YES;
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) return REDLOCK_VOTE_NO;
    return unexpected(rep, err, detail, n);
}

redlock_vote_t rl_classify_mine(const void *reply, int *err, char *detail, size_t n) {
    const redisReply *rep = reply;
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer != -1) return rl_classify_int(reply, err, detail, n);
    *err = REDLOCK_ERR_INVALID;
    snprintf(detail, n, "%s", RL_WRONG_KIND);
    return REDLOCK_VOTE_NO;
}

redlock_vote_t rl_classify_any(const void *reply, int *err, char *detail, size_t n) {
    const redisReply *rep = reply;
    if (rep->type != REDIS_REPLY_ERROR) return REDLOCK_VOTE_YES;
    return unexpected(rep, err, detail, n);
}
