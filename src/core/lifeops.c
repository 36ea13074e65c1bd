/* lifeops.c -- the extend and release operations (see ops.h): one round
 * each, and their verdicts (doc/design.md, "The algorithm": extend from a fresh t0,
 * release on every node). */
#include <stdio.h>

#include "ops.h"
#include "timing.h"

enum { LIFE_START = 0, LIFE_SENT };

/* rc, or REDLOCK_ERR_INVALID when e names its lock by token and more nodes
 * than a quorum can spare found a key of another kind there (a reader's
 * token adopted or released as a mutex's): the message says so. */
static int wrong_kind(rl_life_op_t *e, int rc) {
    if (!e->by_token || rc != REDLOCK_ERR_NOT_HELD) return rc;
    const rl_round_t *r = e->op.r;
    size_t wrong = 0;
    uint8_t hit[REDLOCK_MAX_NODES];
    for (size_t i = 0; i < r->n; i++)
        wrong += hit[i] = r->pn[i].vote == REDLOCK_VOTE_NO && r->pn[i].err == REDLOCK_ERR_INVALID;
    if (!rl_round_beyond_slack(r, hit)) return rc;
    if (e->op.rep)
        snprintf(e->op.rep->message, sizeof e->op.rep->message, "resource '%.60s' on %zu of %u nodes: %s", e->keys.k[0],
                 wrong, r->n, RL_WRONG_KIND);
    return REDLOCK_ERR_INVALID;
}

/* Extend: sends the script, then judges the quorum and the new validity. */
static int extend_next(rl_op_t *op, uint64_t now) {
    rl_life_op_t *e = (rl_life_op_t *)op;
    redlock_t *rl = op->rl;
    if (op->phase == LIFE_START) {
        char ttl[16];
        snprintf(ttl, sizeof ttl, "%u", e->ttl_ms);
        rl_round_begin(rl, op->r, RL_STOP_MAJORITY, op->rep ? op->rep->nodes : NULL);
        op->r->replicate = 1;
        op->phase = LIFE_SENT;
        const rl_script_t *script = e->shared        ? rl->s_extend_shared
                                    : e->keys.n == 1 ? rl->s_extend
                                                     : rl->s_extend_multi;
        char delay[16]; /* a mutex's lock-delay marker outlives the new TTL by the delay */
        const char *extra[2] = {ttl, delay};
        int delayed = rl->opt.lock_delay_ms && script == rl->s_extend && e->slot < 0;
        if (delayed) snprintf(delay, sizeof delay, "%u", rl->opt.lock_delay_ms);
        rl_run_script_args(rl, op->r, script, &e->keys, e->token, extra, delayed ? 2 : 1, rl_classify_mine);
        return RL_STEP_ROUND;
    }
    rl_report_round(op->rep, op->r, now);
    if (!rl_round_won(op->r)) {
        op->rc = wrong_kind(e, rl_round_reason(op->r, REDLOCK_ERR_NOT_HELD));
        return RL_STEP_DONE;
    }
    e->t0_us = op->r->t0_us;
    e->deadline_us = rl_deadline_us(op->r->t0_us, e->ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
    int64_t left = rl_validity_us(e->deadline_us, now);
    op->rc = left > 0 ? REDLOCK_OK : REDLOCK_ERR_EXPIRED;
    if (left > 0 && op->rep) op->rep->validity_ms = rl_validity_ms(left);
    return RL_STEP_DONE;
}

/* Release: sends the script to every node, wakes the handle's waiters
 * for the resources, then the verdict. */
static int release_next(rl_op_t *op, uint64_t now) {
    rl_life_op_t *e = (rl_life_op_t *)op;
    if (op->phase == LIFE_START) {
        op->phase = LIFE_SENT;
        rl_round_begin(op->rl, op->r, RL_STOP_RESOLVE, op->rep ? op->rep->nodes : NULL);
        char limit[8] = ""; /* a permit's: its release also clears the token's stray slots */
        if (e->slot >= 0) snprintf(limit, sizeof limit, "%u", e->limit);
        /* a mutex's: the handle's id, whose place in the line goes (release.lua) */
        int mutex = e->slot < 0 && e->keys.n == 1 && !e->shared;
        const char *extra[2] = {e->slot >= 0 ? "p" : "1", e->slot >= 0 ? limit : op->rl->line_id};
        rl_run_script_args(op->rl, op->r, rl_release_script(op->rl, &e->keys, e->shared), &e->keys, e->token, extra,
                           e->slot >= 0 || mutex ? 2 : 1, rl_classify_mine);
        return RL_STEP_ROUND;
    }
    const rl_round_t *r = op->r;
    rl_report_round(op->rep, r, now);
    /* this handle's own waiters attempt at once: each node runs their
     * attempt after the delete, the connection keeping the order */
    for (size_t i = 0; r->yes && i < e->keys.n; i++)
        rl_waitq_wake(op->rl, e->keys.k[i], e->keys.len[i] - (e->slot >= 0 ? rl_permit_suffix_len(e->slot) : 0));
    if (rl_round_won(r))
        op->rc = REDLOCK_OK;
    else if (rl_round_refused(r))
        op->rc = wrong_kind(e, REDLOCK_ERR_NOT_HELD);
    else
        op->rc = rl_round_reason(r, REDLOCK_ERR_NO_QUORUM);
    return RL_STEP_DONE;
}

/* Fills the fields both kinds share. */
static void life_init(rl_life_op_t *e, int (*next)(rl_op_t *, uint64_t), redlock_t *rl, const rl_keys_t *keys,
                      const char *token, uint32_t ttl_ms, redlock_report_t *rep) {
    rl_op_setup(&e->op, next, NULL, rl, rep, LIFE_START);
    e->keys = *keys;
    e->token = token;
    e->ttl_ms = ttl_ms;
    e->slot = -1;
    e->limit = 0;
    e->shared = 0;
    e->by_token = 0;
    e->t0_us = e->deadline_us = 0;
}

void rl_life_op_kind(rl_life_op_t *e, const redlock_lock_t *lock) {
    e->slot = lock ? lock->slot : -1;
    e->limit = lock ? lock->limit : 0;
    e->shared = lock ? lock->shared : 0;
    e->by_token = !lock;
}

void rl_extend_op_init(rl_life_op_t *e, redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms,
                       redlock_report_t *rep) {
    life_init(e, extend_next, rl, keys, token, ttl_ms, rep);
}

void rl_release_op_init(rl_life_op_t *e, redlock_t *rl, const rl_keys_t *keys, const char *token,
                        redlock_report_t *rep) {
    life_init(e, release_next, rl, keys, token, 0, rep);
}
