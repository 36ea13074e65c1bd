/* attempt.c -- the acquire operation (see ops.h): one attempt (SET NX PX
 * on every node, the all-or-nothing script for a set, or the fenced
 * transaction and its write-back, fence.c), the validity check, the
 * clean-up after a failed attempt, and the jittered retries up to the
 * wait deadline. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "timing.h"
#include "token.h"

enum { ACQ_START = 0, ACQ_ATTEMPTED, ACQ_WRITTEN, ACQ_CLEANED, ACQ_RETRY, ACQ_QUEUED };

/* The lock-delay's refusal in reply ("DELAY <left> <ago>", see
 * acquire_wait.lua): 1 with *left and *ago (ms), else 0. */
static int delay_refusal(const redisReply *r, long long *left, long long *ago) {
    return r->type == REDIS_REPLY_STATUS && r->len > 6 && !memcmp(r->str, "DELAY ", 6) &&
           sscanf(r->str + 6, "%lld %lld", left, ago) == 2 && *left >= 0 && *ago >= 0;
}

/* A waiting attempt's reply: 1 set, <= -1 taken, "DELAY ..." refused by
 * the lock-delay (see acquire_wait.lua: a "no" whose err is TAKEN). */
static redlock_vote_t classify_wait(const void *reply, int *err, char *detail, size_t n) {
    const redisReply *r = reply;
    long long left, ago;
    if (r->type == REDIS_REPLY_INTEGER && r->integer <= -1) return REDLOCK_VOTE_NO;
    if (delay_refusal(r, &left, &ago)) {
        *err = REDLOCK_ERR_TAKEN;
        rl_delay_detail(detail, n, ago, left);
        return REDLOCK_VOTE_NO;
    }
    return rl_classify_int(reply, err, detail, n);
}

/* Keeps what a refusal says of the holder's remaining TTL, or of the
 * lock-delay's (on_reply). */
static void note_left(void *arg, size_t node, const void *reply) {
    const redisReply *r = reply;
    rl_round_t *round = arg;
    long long left, ago;
    if (!delay_refusal(r, &left, &ago)) {
        if (r->type != REDIS_REPLY_INTEGER || r->integer > -1) return; /* (a "no" follows: the slot is done with) */
        left = -1 - r->integer;
    }
    round->pn[node].u.left_ms = left > INT32_MAX ? INT32_MAX : (int32_t)left;
}

/* Sends the attempt's command to every node: plain SET NX PX for one
 * resource (the format every Redlock client shares), the same SET in a
 * script that also tells how long a holder has left when the caller will
 * wait, or the all-or-nothing script for a set. */
static int send_attempt(rl_acquire_op_t *a) {
    rl_op_t *op = &a->op;
    redlock_t *rl = op->rl;
    /* a token per attempt: an earlier attempt's clean-up that a redirect
       delays behind this attempt cannot delete what this one sets */
    if (a->tries) rl_token_new(a->token);
    a->tries++;
    if (op->rep) op->rep->attempts = a->tries;
    op->phase = ACQ_ATTEMPTED;
    rl_waitq_woken(a, 1, NULL); /* a release heard before now is seen by this attempt */
    a->note = RL_NOTE_NONE;
    if (a->fenced && !a->limit) {
        rl_fence_send_attempt(a);
        return RL_STEP_ROUND;
    }
    if (a->limit) {
        a->only = -1; /* the first free slot; a second round may ask for one (permit.c) */
        rl_permit_send_attempt(a);
        return RL_STEP_ROUND;
    }
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", a->ttl_ms);
    rl_round_begin(rl, op->r, RL_STOP_MAJORITY, op->rep ? op->rep->nodes : NULL);
    op->r->grants = 1;
    op->r->replicate = 1;
    if (a->keys.n > 1) {
        rl_run_script(rl, op->r, rl->s_acquire_multi, &a->keys, a->token, ttl);
        return RL_STEP_ROUND;
    }
    if (a->shared) { /* a reader: an entry in the resource's hash; says when a writer's key expires */
        if (a->wait_ms != 0 && rl->opt.retry_count > 0) op->r->stop = RL_STOP_GRANT;
        op->r->on_reply = note_left;
        op->r->reply_arg = op->r;
        rl_run_script_as(rl, op->r, rl->s_acquire_shared, &a->keys, a->token, ttl, classify_wait);
        return RL_STEP_ROUND;
    }
    int waits = a->wait_ms != 0 && rl->opt.retry_count > 0;
    if (waits || rl->opt.lock_delay_ms) {       /* (a lock-delay is checked in the same script) */
        if (waits) op->r->stop = RL_STOP_GRANT; /* it will wait anyway: hear every node out */
        op->r->on_reply = note_left;
        op->r->reply_arg = op->r;
        /* the writer's mark outlives its next attempt: a retry delay, jitter and a round's timeout, twice */
        char mark[16] = "0", delay[16];
        if (waits)
            snprintf(mark, sizeof mark, "%u",
                     2u * (rl->opt.retry_delay_ms + rl->opt.retry_jitter_ms + rl->opt.op_timeout_ms) + 100u);
        snprintf(delay, sizeof delay, "%u", rl->opt.lock_delay_ms);
        /* a waiter keeps the handle's place in the resource's line for as long as the mark */
        const char *extra[4] = {ttl, mark, delay, rl->line_id};
        a->lined |= (uint8_t)waits;
        rl_run_script_args(rl, op->r, rl->s_acquire_wait, &a->keys, a->token, extra, waits ? 4 : 3, classify_wait);
        return RL_STEP_ROUND;
    }
    const char *argv[6] = {"SET", a->keys.k[0], a->token, "NX", "PX", ttl};
    size_t lens[6] = {3, a->keys.len[0], REDLOCK_TOKEN_LEN, 2, 2, strlen(ttl)};
    rl_run_command(rl, op->r, 6, argv, lens, rl_classify_set);
    return RL_STEP_ROUND;
}

static int cleaned(rl_acquire_op_t *a, uint64_t now);

/* Sends the release of whatever the attempt set (a node that timed out
 * may still have applied it) to every node without waiting for it: each
 * node's connection carries it ahead of the next attempt, so nothing is
 * gained by waiting, and the op needs no room for it. The op then decides
 * about retrying at once. */
static int cleanup(rl_acquire_op_t *a, uint64_t now) {
    RL_ROUND(r);
    redlock_t *rl = a->op.rl;
    a->op.phase = ACQ_CLEANED;
    if (a->limit) {
        rl_permit_cleanup(a, r);
    } else {
        rl_round_begin(rl, r, RL_STOP_RESOLVE, NULL);
        r->done = 1; /* goes out to every node, answers dropped */
        rl_run_script_as(rl, r, rl_release_script(rl, &a->keys, a->shared), &a->keys, a->token, NULL, rl_classify_mine);
    }
    return cleaned(a, now);
}

/* After a failed attempt: the clean-up, unless every node refused it
 * (then none of them set anything and there is nothing to undo). */
static int undo(rl_acquire_op_t *a, uint64_t now) {
    const rl_round_t *r = a->op.r;
    if (r->no < r->n) return cleanup(a, now);
    a->op.phase = ACQ_CLEANED;
    return cleaned(a, now);
}

/* Why a quorum did not grant the attempt. A reader refused by a quorum
 * of server errors (a key of another type: "WRONGTYPE <key> holds a
 * list") is REDLOCK_ERR_SERVER, the nodes' words in the report. */
static int refusal(const rl_acquire_op_t *a) {
    const rl_round_t *r = a->op.r;
    int rc = rl_round_reason(r, REDLOCK_ERR_TAKEN);
    if (rc != REDLOCK_ERR_NO_QUORUM || !a->shared) return rc;
    uint8_t server[REDLOCK_MAX_NODES];
    for (size_t i = 0; i < r->n; i++) server[i] = r->pn[i].err == REDLOCK_ERR_SERVER;
    return rl_round_beyond_slack(r, server) ? REDLOCK_ERR_SERVER : rc;
}

/* Makes the lock once a quorum granted it, if validity remains. */
static int grant(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    if (rl_validity_us(a->deadline_us, now) <= 0) return REDLOCK_ERR_EXPIRED;
    a->lock = rl_lock_new(op->rl, &a->keys, a->token, a->ttl_ms, op->r->t0_us, a->deadline_us);
    if (!a->lock) return REDLOCK_ERR_NOMEM;
    a->lock->shared = a->shared;
    if (op->rep) op->rep->validity_ms = rl_validity_ms(rl_validity_us(a->deadline_us, now));
    return REDLOCK_OK;
}

/* The attempt's round is decided. */
static int attempted(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    redlock_t *rl = op->rl;
    rl_report_round(op->rep, op->r, now);
    a->deadline_us = rl_deadline_us(op->r->t0_us, a->ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
    if (a->fenced && !a->limit) {
        if (rl_fence_attempted(a, now)) {
            op->phase = ACQ_WRITTEN;
            return RL_STEP_ROUND;
        }
        return undo(a, now);
    }
    if (a->limit)
        op->rc = rl_permit_attempted(a, now);
    else
        op->rc = rl_round_won(op->r) ? grant(a, now) : refusal(a);
    if (op->rc == RL_PERMIT_AGAIN) return RL_STEP_ROUND; /* (phase ATTEMPTED still) */
    if (op->rc == RL_PERMIT_FENCE) {                     /* won a slot: its fencing token is being written */
        op->phase = ACQ_WRITTEN;
        return RL_STEP_ROUND;
    }
    return op->rc == REDLOCK_OK ? RL_STEP_DONE : undo(a, now);
}

/* Returns 1 when an attempt that failed with rc is worth repeating. */
static int retryable(int rc) {
    return rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM || rc == REDLOCK_ERR_EXPIRED;
}

void rl_acquire_op_describe(const rl_acquire_op_t *a, redlock_report_t *rep, uint64_t now) {
    const rl_round_t *r = a->op.r, *w = a->op.aux;
    if (!rep) return;
    char *m = rep->message;
    size_t n = sizeof rep->message;
    unsigned long long ms = (unsigned long long)((now - a->start_us) / 1000);
    char votes[160];
    if (a->note == RL_NOTE_QUEUED)
        snprintf(m, n, "%s: waited %llu ms behind earlier local waiters for the same resource (wait_ms=%lld)",
                 redlock_strerror(a->op.rc), ms, (long long)a->wait_ms);
    else if (a->note == RL_NOTE_WAITED) {
        rl_round_count_text(r, votes, sizeof votes);
        snprintf(m, n, "%s: %s at the last of %u attempts; waited %llu ms", redlock_strerror(a->op.rc), votes, a->tries,
                 ms);
    } else if (a->note == RL_NOTE_FENCE) {
        rl_round_count_text(w, votes, sizeof votes);
        snprintf(m, n, "fencing token write-back: %s", votes);
    }
}

/* Ends the op with a note for its report (see rl_acquire_op_describe). */
static int noted(rl_acquire_op_t *a, int note, uint64_t now) {
    a->note = (uint8_t)note;
    rl_acquire_op_describe(a, a->op.rep, now);
    return RL_STEP_DONE;
}

/* Ends a wait that found the lock still taken, the report saying how long
 * it waited and what the last attempt got. */
static int waited(rl_acquire_op_t *a, uint64_t now) {
    return noted(a, a->op.rc == REDLOCK_ERR_CANCELLED ? RL_NOTE_NONE : RL_NOTE_WAITED, now);
}

/* When a quorum of nodes may be free of the holder's key, on what the
 * refused attempt's nodes said of its remaining TTL. Only the nodes that
 * granted are known to be free; the others (refused, failed, not heard
 * after the round was decided) are not, so the wait is for the k-th
 * earliest expiry among the refusals that said when, k = quorum - grants,
 * counted in the list whose bit is `list` (a joint round's). 0 when the
 * list has its quorum; UINT64_MAX when too few refusals said when. */
static uint64_t holder_gone_in(const rl_round_t *r, const rl_tally_t *t, unsigned list) {
    if (t->yes >= t->quorum) return 0;
    size_t k = t->quorum - t->yes;  /* refusals that must expire, >= 1 */
    uint64_t at[REDLOCK_MAX_NODES]; /* each refusal's expiry, earliest first */
    size_t m = 0;
    for (size_t i = 0; i < r->n; i++) {
        const rl_round_node_t *p = &r->pn[i];
        if (p->vote != REDLOCK_VOTE_NO || p->u.left_ms <= 0 || (r->lists && !(r->lists[i] & list))) continue;
        /* counted from the reply's arrival: late by at most half a round trip, never early */
        uint64_t t = r->t0_us + (uint64_t)(p->rtt_us > 0 ? p->rtt_us : 0) + ((uint64_t)p->u.left_ms + 1) * 1000u;
        size_t j = m++;
        for (; j > 0 && at[j - 1] > t; j--) at[j] = at[j - 1];
        at[j] = t;
    }
    return m < k ? UINT64_MAX : at[k - 1];
}

/* The same for every list of r (a joint round's: the later of the two). */
static uint64_t holder_gone_us(const rl_round_t *r) {
    if (rl_round_won(r) || r->no == 0) return 0;
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    uint64_t last = 0;
    for (size_t k = 0; k < nt; k++) {
        uint64_t at = holder_gone_in(r, &t[k], nt == 1 ? ~0u : 1u << k);
        if (at > last) last = at;
    }
    return last == UINT64_MAX ? 0 : last;
}

/* 1 when every "no" of r is a lock-delay's (err TAKEN, see classify_wait):
 * nothing but the markers' expiry frees the resource, so a waiter sleeps
 * until then instead of polling. */
static int delayed_only(const rl_round_t *r) {
    for (size_t i = 0; i < r->n; i++)
        if (r->pn[i].vote == REDLOCK_VOTE_NO && r->pn[i].err != REDLOCK_ERR_TAKEN) return 0;
    return r->no > 0;
}

/* The nodes of r that refused, one bit each, beyond 32 nodes folded onto
 * the first 32 (the op keeps 32 bits: a pending acquire stays small); 0
 * unless the refusals alone make a quorum of some list of r. */
static uint32_t quorum_refused(const rl_round_t *r) {
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t), k = 0;
    while (k < nt && t[k].no < t[k].quorum) k++;
    if (k == nt) return 0;
    uint64_t mask = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->pn[i].vote == REDLOCK_VOTE_NO) mask |= (uint64_t)1 << i;
    return (uint32_t)(mask ^ (mask >> 32));
}

/* 1 when a's attempt split the vote: some yes, some no, no quorum (another
 * contender, likely another process's head, got the rest). Counts it,
 * and the splits in a row (reset by an attempt that did not split). A
 * split whose refusals are a quorum, the same nodes as the last split's,
 * is not a collision but a holder (who won without a node or two): it is
 * waited out as a refusal, not retried a fraction of a round trip on. */
static int split_vote(rl_acquire_op_t *a) {
    const rl_round_t *r = a->op.r;
    int split = !a->limit && !a->shared && r->yes && r->no && !rl_round_won(r);
    uint32_t refused = split ? quorum_refused(r) : 0;
    int held = refused && refused == a->split_refused;
    a->split_refused = refused;
    if (!split || held) {
        a->splits = 0;
        return 0;
    }
    rl_stats_split(a->op.rl->stats);
    if (a->splits < 10) a->splits++;
    return 1;
}

/* After a split, the next attempt comes a random fraction of a round trip
 * later rather than at the retry delay, so two contenders that collided
 * stop colliding (doc/design.md, "A silent minority"): within [0, 2^(k-1)
 * round trips] after the k-th split in a row, capped at cap_us (0: no
 * cap). Returns >= 1 µs. */
static uint64_t split_backoff_us(const rl_acquire_op_t *a, uint64_t cap_us) {
    uint64_t rtt = (uint64_t)rl_round_slowest_us(a->op.r);
    if (rtt < 100) rtt = 100;
    uint64_t span = rtt << (a->splits - 1);
    if (cap_us && span > cap_us) span = cap_us;
    return 1 + (uint64_t)rl_random_between(0, (unsigned)(span > UINT32_MAX ? UINT32_MAX : span));
}

/* The wait deadline (UINT64_MAX without a bound). */
static uint64_t wait_end(const rl_acquire_op_t *a) {
    return a->wait_ms < 0 ? UINT64_MAX : a->start_us + (uint64_t)a->wait_ms * 1000u;
}

/* The clean-up is done: finish, or wait for the next attempt: until the
 * holder's key expires when the refusals said when, else a jittered
 * retry delay (like flock -w, never past the wait deadline: the last
 * attempt is made at it). */
static int cleaned(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    const redlock_options_t *o = &op->rl->opt;
    int split = op->rc != REDLOCK_ERR_CANCELLED && split_vote(a);
    if (!retryable(op->rc) || a->wait_ms == 0) return RL_STEP_DONE;
    uint64_t at = 0;
    int heard = rl_waitq_woken(a, 0, &at); /* a release was heard while the attempt was out */
    if (a->last || (a->n >= o->retry_count && !heard)) return a->tries > 1 ? waited(a, now) : RL_STEP_DONE;
    uint64_t d =
        (uint64_t)rl_random_between(o->retry_delay_ms - o->retry_jitter_ms, o->retry_delay_ms + o->retry_jitter_ms) *
        1000u;
    uint64_t gone = op->rc == REDLOCK_ERR_TAKEN || op->rc == REDLOCK_ERR_NO_QUORUM ? holder_gone_us(op->r) : 0;
    int until_gone = gone && (gone < now + d || delayed_only(op->r));
    a->poll = !heard && !until_gone;
    if (until_gone) d = gone > now ? gone - now : 0;
    if (heard) d = at > now ? at - now : 0;
    int aimed = heard || until_gone; /* d then ends when the resource may be free: a backoff comes after it */
    if (split) d = (aimed ? d : 0) + split_backoff_us(a, aimed ? 0 : d), a->poll = 0;
    uint64_t end = wait_end(a);
    if (now >= end) return waited(a, now);
    if (d >= end - now) d = end - now, a->last = 1;
    op->wake_us = now + d;
    op->phase = ACQ_RETRY;
    rl_waitq_listen(a);
    return RL_STEP_WAIT;
}

/* A queued waiter (not the head of its resource's local queue): contends
 * once it is the head, gives up TAKEN at the wait deadline. */
static int queued(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    if (rl_waitq_is_head(a)) return send_attempt(a);
    if (now >= wait_end(a)) {
        op->rc = REDLOCK_ERR_TAKEN;
        return noted(a, RL_NOTE_QUEUED, now);
    }
    op->phase = ACQ_QUEUED;
    op->wake_us = wait_end(a);
    rl_waitq_listen(a);
    return RL_STEP_WAIT;
}

/* The first step: a caller that will wait for one resource joins the
 * local queue, and only its head contends. */
static int start(rl_acquire_op_t *a, uint64_t now) {
    if (a->wait_ms != 0 && a->keys.n == 1 && a->op.rl->opt.retry_count > 0 && !rl_waitq_join(a)) return queued(a, now);
    return send_attempt(a);
}

/* 1 when a fallback poll may go now: the handle sends at most
 * RL_POLLS_PER_INTERVAL of them per retry_delay_ms window (doc/design.md,
 * "Cost flat in locks and waiters"); else *later is a random instant in the
 * next window. Attempts prompted by a heard release or a holder's expiry
 * are not polls and not counted. */
static int poll_allowed(redlock_t *rl, uint64_t now, uint64_t *later) {
    uint64_t window = (uint64_t)(rl->opt.retry_delay_ms ? rl->opt.retry_delay_ms : 1) * 1000u;
    pthread_mutex_lock(&rl->held_mu);
    if (now >= rl->poll_window_us + window) rl->poll_window_us = now, rl->poll_used = 0;
    int ok = rl->poll_used < RL_POLLS_PER_INTERVAL;
    if (ok) rl->poll_used++;
    uint64_t next = rl->poll_window_us + window;
    pthread_mutex_unlock(&rl->held_mu);
    if (!ok) *later = next + rl_random_between(0, (unsigned)(window > UINT32_MAX ? UINT32_MAX : window));
    return ok;
}

/* Waiting to attempt again: a heard release lets it attempt from its
 * woke_at_us (not a retry; before the wait deadline, not the last one
 * either); else the retry delay must pass, and a poll its turn within the
 * handle's budget. */
static int retry(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    uint64_t at = 0, later = 0;
    int heard = rl_waitq_woken(a, 0, &at);
    if (heard && now >= at) {
        if (now < wait_end(a)) a->last = 0; /* the attempt at the deadline is still to come */
        return send_attempt(a);
    }
    if (now < op->wake_us) {
        if (heard && at < op->wake_us) op->wake_us = at;
        return RL_STEP_WAIT; /* (woken early for another's sake) */
    }
    if (a->poll && !a->last && !poll_allowed(op->rl, now, &later)) {
        uint64_t end = wait_end(a);
        op->wake_us = later < end ? later : end;
        a->last = later >= end;
        return RL_STEP_WAIT; /* over the handle's poll budget: the next window */
    }
    a->n++;
    return send_attempt(a);
}

/* The acquire's steps (see ops.h). */
static int acquire_step(rl_op_t *op, uint64_t now) {
    rl_acquire_op_t *a = (rl_acquire_op_t *)op;
    switch (op->phase) {
    case ACQ_START: return start(a, now);
    case ACQ_QUEUED: return queued(a, now);
    case ACQ_ATTEMPTED: return attempted(a, now);
    case ACQ_WRITTEN:
        op->rc = rl_fence_written(a, now);
        if (op->rc == REDLOCK_OK) return RL_STEP_DONE;
        rl_acquire_op_describe(a, op->rep, now);
        return cleanup(a, now);
    case ACQ_CLEANED: return cleaned(a, now);
    default: /* ACQ_RETRY */ return retry(a, now);
    }
}

/* Takes a out of the local queue; an acquire that ends without the lock,
 * the handle's last waiter for the resource, also gives up the handle's
 * place in the nodes' line (unwaited), so no release names it. */
static void leave(rl_acquire_op_t *a) {
    redlock_t *rl = a->op.rl;
    if (!rl_waitq_leave(a) || !a->lined || a->op.rc == REDLOCK_OK) return;
    a->lined = 0; /* (once) */
    RL_ROUND(r);
    rl_round_begin(rl, r, RL_STOP_RESOLVE, NULL);
    r->done = 1;
    rl_run_script_as(rl, r, rl->s_line_leave, &a->keys, rl->line_id, NULL, rl_classify_mine);
}

/* The acquire's next step; an acquire that ends leaves the local queue. */
static int acquire_next(rl_op_t *op, uint64_t now) {
    int step = acquire_step(op, now);
    if (step == RL_STEP_DONE) leave((rl_acquire_op_t *)op);
    return step;
}

/* op->cancel of an acquire. */
static int acquire_cancel(rl_op_t *op, int rc) {
    return rl_acquire_op_cancel((rl_acquire_op_t *)op, rc);
}

void rl_acquire_op_init(rl_acquire_op_t *a, redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, int64_t wait_ms,
                        redlock_report_t *rep, uint64_t now) {
    rl_op_setup(&a->op, acquire_next, acquire_cancel, rl, rep, ACQ_START);
    a->keys = *keys;
    rl_token_new(a->token); /* the first attempt's (send_attempt draws one for each further attempt) */
    a->ttl_ms = ttl_ms;
    a->wait_ms = wait_ms;
    a->start_us = now;
    a->n = 0;
    a->tries = 0;
    a->last = 0;
    a->splits = 0;
    a->split_refused = 0;
    a->poll = 0;
    a->fenced = rl->opt.fencing && keys->n == 1;
    a->limit = 0;
    a->shared = 0;
    a->fence_max = 0;
    a->lock = NULL;
    a->queued = 0;
    a->woken = 0;
    a->woke_at_us = 0;
    a->listening = 0;
    a->qnext = NULL;
    a->line = NULL;
    a->note = RL_NOTE_NONE;
    a->lined = 0;
}

int rl_acquire_op_cancel(rl_acquire_op_t *a, int rc) {
    a->op.rc = rc;
    a->last = 1;   /* no retry after the clean-up */
    if (a->lock) { /* granted but not yet handed over: it is released too */
        rl_lock_destroy(a->lock);
        a->lock = NULL;
    }
    /* nothing sent yet, or the last attempt's clean-up already sent: done */
    int p = a->op.phase;
    if (p == ACQ_START || p == ACQ_QUEUED || p == ACQ_CLEANED || p == ACQ_RETRY) {
        leave(a);
        return RL_STEP_DONE;
    }
    int step = cleanup(a, a->op.rl->clock()); /* (DONE: a cancelled op is not retried) */
    leave(a);
    return step;
}

void rl_acquire_op_shared(rl_acquire_op_t *a) {
    a->shared = 1;
    a->fenced = 0; /* readers write nothing: no fencing token */
}

int rl_acquire_op_in_line(const rl_acquire_op_t *a) {
    return a->op.phase == ACQ_QUEUED || (a->op.phase == ACQ_RETRY && a->woken);
}
