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
    for (size_t i = 0; i < n; i++)
        r->pn[i] = (rl_round_node_t){.u.slot = RL_NO_SLOT, .rtt_us = -1, .vote = REDLOCK_VOTE_NONE};
    r->yes = r->no = r->failed = r->auth_failed = 0;
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

/* 1 when count can no longer cross the slack either way: it already
 * exceeds it, or even every pending vote would not make it. */
static int settled(size_t count, size_t pending, size_t slack) {
    return count > slack || count + pending <= slack;
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

int rl_round_decided(const rl_round_t *r) {
    if (r->pending == 0) return 1;
    size_t slack = r->n - r->quorum;
    switch (r->stop) {
    case RL_STOP_MAJORITY:
        /* Once a quorum of yes is out of reach, wait only until the reason
         * is settled too (AUTH, then TAKEN / NOT_HELD, else NO_QUORUM).
         * Healthy nodes settle it at once. */
        if (r->yes >= r->quorum) return 1;
        if (r->yes + r->pending >= r->quorum) return 0;
        if (r->auth_failed > slack) return 1;
        return settled(r->auth_failed, r->pending, slack) && settled(r->no, r->pending, slack);
    case RL_STOP_GRANT: return r->yes >= r->quorum;
    case RL_STOP_SLOT: {
        /* As MAJORITY, by slot: once no slot can reach a quorum, wait until
         * the reason is settled (AUTH; TAKEN when more nodes than the slack
         * have no slot free; NO_QUORUM once one failed -- while none has,
         * slots split over every node are TAKEN, so that needs them all). */
        size_t best = rl_round_best_slot(r, NULL);
        if (best >= r->quorum) return 1;
        if (best + r->pending >= r->quorum) return 0;
        if (r->auth_failed > slack) return 1;
        return settled(r->auth_failed, r->pending, slack) && settled(r->no, r->pending, slack) &&
               (r->no > slack || r->failed > 0);
    }
    case RL_STOP_RESOLVE:
        if (r->yes >= r->quorum || r->no >= r->quorum) return 1;
        if (r->yes + r->pending >= r->quorum || r->no + r->pending >= r->quorum) return 0;
        return settled(r->auth_failed, r->pending, slack);
    default: return 0;
    }
}

int rl_round_settled(const rl_round_t *r) {
    if (rl_round_decided(r)) return 1;
    switch (r->stop) {
    case RL_STOP_MAJORITY:
    case RL_STOP_GRANT: return r->yes >= r->quorum || r->yes + r->pending < r->quorum;
    case RL_STOP_SLOT: {
        size_t best = rl_round_best_slot(r, NULL);
        return best >= r->quorum || best + r->pending < r->quorum;
    }
    case RL_STOP_RESOLVE: return r->yes + r->pending < r->quorum && r->no + r->pending < r->quorum;
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

int rl_round_vote(rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt_us, const char *detail) {
    if (r->pn[i].vote != REDLOCK_VOTE_NONE) return 0; /* already counted */
    r->pn[i].vote = (uint8_t)v;
    r->pn[i].err = (int8_t)err;
    r->pn[i].rtt_us = rtt_us > INT32_MAX ? INT32_MAX : (int32_t)rtt_us;
    r->pending--;
    if (v == REDLOCK_VOTE_YES)
        r->yes++;
    else if (v == REDLOCK_VOTE_NO)
        r->no++;
    else {
        r->failed++;
        if (err == REDLOCK_ERR_AUTH) r->auth_failed++;
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
    size_t slack = r->n - r->quorum; /* votes that may be lost and still leave a quorum */
    if (r->auth_failed > slack) return REDLOCK_ERR_AUTH;
    if (r->no > slack) return no_code;
    return REDLOCK_ERR_NO_QUORUM;
}

int rl_error_code(const char *text) {
    if (!strncmp(text, "NOAUTH", 6) || !strncmp(text, "WRONGPASS", 9) || !strncmp(text, "NOPERM", 6) ||
        !strncmp(text, "ERR AUTH", 8) || strstr(text, "invalid password"))
        return REDLOCK_ERR_AUTH;
    return REDLOCK_ERR_SERVER;
}

/* Fills err/detail from an error reply or an unexpected type; returns ERROR. */
static redlock_vote_t unexpected(const redisReply *rep, int *err, char *detail, size_t n) {
    if (rep->type == REDIS_REPLY_ERROR) {
        *err = rl_error_code(rep->str);
        snprintf(detail, n, "%.*s", (int)(rep->len > 120 ? 120 : rep->len), rep->str);
        if (!detail[0]) snprintf(detail, n, "error reply with no text");
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
