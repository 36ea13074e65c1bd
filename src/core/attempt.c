/* attempt.c -- the acquire operation (see ops.h): one attempt (SET NX PX
 * on every node, the all-or-nothing script for a set, or the fenced
 * script), the validity check, the clean-up after a failed attempt, and
 * the jittered retries up to the wait deadline. */
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "timing.h"
#include "token.h"

enum { ACQ_START = 0, ACQ_ATTEMPTED, ACQ_WRITTEN, ACQ_CLEANED, ACQ_RETRY };

/* Sends the attempt's command to every node: plain SET NX PX for one
 * resource (the format every Redlock client shares), else the script. */
static int send_attempt(rl_acquire_op_t *a) {
    rl_op_t *op = &a->op;
    redlock_t *rl = op->rl;
    if (op->rep) op->rep->attempts = a->n + 1;
    op->phase = ACQ_ATTEMPTED;
    if (a->fenced) {
        rl_fence_send_attempt(a);
        return RL_STEP_ROUND;
    }
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", a->ttl_ms);
    rl_round_init(op->r, rl->opt.n_nodes, RL_STOP_MAJORITY, op->rep ? op->rep->nodes : NULL);
    op->r->grants = 1;
    if (a->keys.n > 1) {
        rl_run_script(rl, op->r, rl->s_acquire_multi, &a->keys, a->token, ttl);
        return RL_STEP_ROUND;
    }
    const char *argv[6] = {"SET", a->keys.k[0], a->token, "NX", "PX", ttl};
    size_t lens[6] = {3, a->keys.len[0], REDLOCK_TOKEN_LEN, 2, 2, strlen(ttl)};
    rl_run_command(rl, op->r, 6, argv, lens, rl_classify_set);
    return RL_STEP_ROUND;
}

/* Sends the release of whatever the attempt set (a node that timed out
 * may still have applied it); the op then decides about retrying. */
static int cleanup(rl_acquire_op_t *a) {
    a->op.phase = ACQ_CLEANED;
    rl_release_round(a->op.rl, a->op.aux, &a->keys, a->token, NULL);
    return RL_STEP_ROUND;
}

/* Makes the lock once a quorum granted it, if validity remains. */
static int grant(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    if (rl_validity_us(a->deadline_us, now) <= 0) return REDLOCK_ERR_EXPIRED;
    a->lock = rl_lock_new(op->rl, &a->keys, a->token, a->ttl_ms, op->r->t0_us, a->deadline_us);
    if (!a->lock) return REDLOCK_ERR_NOMEM;
    if (op->rep) op->rep->validity_ms = rl_validity_ms(rl_validity_us(a->deadline_us, now));
    return REDLOCK_OK;
}

/* The attempt's round is decided. */
static int attempted(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    redlock_t *rl = op->rl;
    rl_report_round(op->rep, op->r, now);
    a->deadline_us = rl_deadline_us(op->r->t0_us, a->ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
    if (a->fenced) {
        if (rl_fence_attempted(a, now)) {
            op->phase = ACQ_WRITTEN;
            return RL_STEP_ROUND;
        }
        return cleanup(a);
    }
    op->rc = op->r->yes >= op->r->quorum ? grant(a, now) : rl_round_reason(op->r, REDLOCK_ERR_TAKEN);
    return op->rc == REDLOCK_OK ? RL_STEP_DONE : cleanup(a);
}

/* Returns 1 when an attempt that failed with rc is worth repeating. */
static int retryable(int rc) {
    return rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM || rc == REDLOCK_ERR_EXPIRED;
}

/* The clean-up is done: finish, or wait for the next attempt (like flock
 * -w, never past the wait deadline: the last attempt is made at it). */
static int cleaned(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    const redlock_options_t *o = &op->rl->opt;
    if (!retryable(op->rc) || a->n >= o->retry_count || a->wait_ms == 0 || a->last) return RL_STEP_DONE;
    uint64_t d = (uint64_t)rl_random_between(o->retry_delay_ms - o->retry_jitter_ms,
                                             o->retry_delay_ms + o->retry_jitter_ms) * 1000u;
    if (a->wait_ms > 0) {
        uint64_t end = a->start_us + (uint64_t)a->wait_ms * 1000u;
        if (now >= end) return RL_STEP_DONE;
        if (now + d >= end) d = end - now, a->last = 1;
    }
    op->wake_us = now + d;
    op->phase = ACQ_RETRY;
    return RL_STEP_WAIT;
}

/* The acquire's next step (see ops.h). */
static int acquire_next(rl_op_t *op, uint64_t now) {
    rl_acquire_op_t *a = (rl_acquire_op_t *)op;
    switch (op->phase) {
    case ACQ_START:
        return send_attempt(a);
    case ACQ_ATTEMPTED:
        return attempted(a, now);
    case ACQ_WRITTEN:
        op->rc = rl_fence_written(a, now);
        return op->rc == REDLOCK_OK ? RL_STEP_DONE : cleanup(a);
    case ACQ_CLEANED:
        return cleaned(a, now);
    default: /* ACQ_RETRY: the delay passed */
        a->n++;
        return send_attempt(a);
    }
}

void rl_acquire_op_init(rl_acquire_op_t *a, redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, int64_t wait_ms,
                        redlock_report_t *rep, uint64_t now) {
    a->op.next = acquire_next;
    a->op.rl = rl;
    a->op.rep = rep;
    a->op.rc = REDLOCK_OK;
    a->op.phase = ACQ_START;
    a->op.wake_us = 0;
    a->keys = *keys;
    rl_token_new(a->token); /* one token for every attempt of this call */
    a->ttl_ms = ttl_ms;
    a->wait_ms = wait_ms;
    a->start_us = now;
    a->n = 0;
    a->last = 0;
    a->fenced = rl->opt.fencing && keys->n == 1;
    a->fence_max = 0;
    a->lock = NULL;
}

int rl_acquire_op_cancel(rl_acquire_op_t *a, int rc) {
    a->op.rc = rc;
    a->last = 1; /* no retry after the clean-up */
    if (a->lock) { /* granted but not yet handed over: it is released too */
        rl_lock_destroy(a->lock);
        a->lock = NULL;
    }
    return cleanup(a);
}
