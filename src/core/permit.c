/* permit.c -- the semaphore's attempt (doc/design.md, "Semaphores and
 * read-write locks"): a permit of a resource with limit k is a Redlock
 * mutex on one of the slot keys "<resource>:permit:<i>", i < k. One round
 * asks every node for the first free slot (lua/acquire_permit.lua, the same
 * order everywhere); the attempt wins slot s when a quorum of nodes gave it
 * s, and the lock is then an ordinary lock on s's key. Slots the attempt
 * set elsewhere are released: by the clean-up round when it failed, by a
 * round sent without waiting for its answer when it won. With fencing, the
 * winner then writes its slot's fencing token back (fence.c): a permit's
 * token counts the holders of its slot, each slot on its own counter. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "timing.h"

#define SLOT_INFIX ":permit:"

size_t rl_permit_suffix_len(int slot) {
    char digits[16];
    return strlen(SLOT_INFIX) + (size_t)snprintf(digits, sizeof digits, "%d", slot);
}

size_t rl_permit_key(char *buf, size_t cap, const char *res, size_t len, int slot) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, SLOT_INFIX "%d", slot);
    return rl_key_with(buf, cap, res, len, suffix);
}

/* The slot in a node's reply (see acquire_permit.lua): {slot, left,
 * free[, fence]}, or the slot alone when every slot was free there (or
 * the token's); INT32_MIN when it is not shaped so. */
static long long reply_slot(const redisReply *r) {
    if (r->type == REDIS_REPLY_INTEGER) return r->integer >= 0 ? r->integer : INT32_MIN;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER || r->element[2]->type != REDIS_REPLY_STRING)
        return INT32_MIN;
    return r->element[0]->integer;
}

/* A node's reply: the slot it gave (>= 0), or -1 when every slot is held. */
static redlock_vote_t classify_permit(const void *reply, int *err, char *detail, size_t n) {
    long long slot = reply_slot(reply);
    if (slot >= 0 && slot < REDLOCK_MAX_PERMITS) return REDLOCK_VOTE_YES;
    if (slot == -1) return REDLOCK_VOTE_NO;
    return rl_classify_int(reply, err, detail, n); /* an error reply, or a shape out of range: an error */
}

/* on_reply: keeps the slot a node gave (or when the holders in the way
 * expire) in its pn[].u.left_ms, and counts the slots it has free. */
static void note_permit(void *arg, size_t node, const void *reply) {
    rl_acquire_op_t *a = arg;
    const redisReply *r = reply;
    long long slot = reply_slot(r);
    if (slot == INT32_MIN) return;
    if (r->type == REDIS_REPLY_INTEGER) { /* (a slot given, every slot free there) */
        a->op.r->pn[node].u.left_ms = slot > INT32_MAX ? INT32_MAX : (int32_t)slot;
        for (size_t i = 0; i < a->limit; i++) a->free[i]++;
        return;
    }
    long long v = slot >= 0 ? slot : r->element[1]->integer;
    a->op.r->pn[node].u.left_ms = v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int32_t)v;
    const redisReply *f = r->element[2];
    for (size_t i = 0; i < f->len && i < a->limit; i++) a->free[i] += f->str[i] == '1';
    if (slot >= 0 && r->elements == 4 && r->element[3]->type == REDIS_REPLY_STRING) {
        /* the highest counter of any slot given: at least the winning slot's on its quorum (fence.c) */
        uint64_t v = strtoull(r->element[3]->str, NULL, 10);
        if (v > a->fence_max) a->fence_max = v;
    }
}

void rl_acquire_op_permit(rl_acquire_op_t *a, unsigned limit, uint8_t *free) {
    a->limit = (uint8_t)limit;
    a->free = free;
    a->only = -1;
}

void rl_permit_send_attempt(rl_acquire_op_t *a) {
    rl_op_t *op = &a->op;
    char ttl[16], limit[8], only[8];
    snprintf(ttl, sizeof ttl, "%u", a->ttl_ms);
    snprintf(limit, sizeof limit, "%u", a->limit);
    const char *extra[4] = {ttl, limit, only, a->fenced ? "f" : "-"};
    int n_extra = 2; /* (the first free slot, unfenced: the script's defaults) */
    if (a->only >= 0 || a->fenced) {
        snprintf(only, sizeof only, "%d", a->only);
        n_extra = 4;
    }
    memset(a->free, 0, REDLOCK_MAX_PERMITS);
    a->fence_max = 0;
    rl_round_begin(op->rl, op->r, RL_STOP_SLOT, op->rep ? op->rep->nodes : NULL);
    op->r->grants = 1;
    op->r->replicate = 1;
    op->r->on_reply = note_permit;
    op->r->reply_arg = a;
    rl_run_script_args(op->rl, op->r, op->rl->s_acquire_permit, &a->keys, a->token, extra, n_extra, classify_permit);
}

/* Sends the release of every slot the attempt set except keep (-1: all),
 * on r: the clean-up (its owner waits) or, decided already, without
 * waiting for the answers. */
static void send_release(rl_acquire_op_t *a, rl_round_t *r, int keep, int wait) {
    char limit[8], kept[8];
    snprintf(limit, sizeof limit, "%u", a->limit);
    snprintf(kept, sizeof kept, "%d", keep);
    const char *extra[2] = {limit, kept};
    rl_round_begin(a->op.rl, r, RL_STOP_RESOLVE, NULL);
    if (!wait) r->done = 1; /* goes out to every node, answers dropped */
    rl_run_script_args(a->op.rl, r, a->op.rl->s_release_permit, &a->keys, a->token, extra, 2, rl_classify_any);
}

void rl_permit_cleanup(rl_acquire_op_t *a, rl_round_t *r) {
    send_release(a, r, -1, 0);
}

/* 1 when some node that answered may hold a slot of this attempt other
 * than s: it gave another one, or failed (a timed-out script may still
 * have run). Nodes the round did not wait for are left out: they nearly
 * always give s too, and whatever they gave is cleared by the permit's
 * release (release.lua deletes the token's other slots of the semaphore)
 * or expires with the TTL, so a grant costs no clean-up script on every
 * node. */
static int strays(const rl_round_t *r, int s) {
    for (size_t i = 0; i < r->n; i++) {
        const rl_round_node_t *p = &r->pn[i];
        if (p->vote == REDLOCK_VOTE_NONE || p->vote == REDLOCK_VOTE_NO ||
            (p->vote == REDLOCK_VOTE_YES && p->u.left_ms == s))
            continue;
        return 1;
    }
    return 0;
}

/* A slot that a quorum of nodes said is free (or ours), the one most
 * said so; -1 when none. */
static int free_on_a_quorum(const rl_acquire_op_t *a) {
    int best = -1;
    for (int i = 0; i < a->limit; i++)
        if (a->free[i] >= a->op.r->quorum && (best < 0 || a->free[i] > a->free[best])) best = i;
    return best;
}

int rl_permit_attempted(rl_acquire_op_t *a, uint64_t now) {
    rl_op_t *op = &a->op;
    const rl_round_t *r = op->r;
    int s;
    if (!rl_round_slot_won(r, &s)) {
        if (a->only < 0 && (s = free_on_a_quorum(a)) >= 0) { /* the nodes disagree on what is free: ask for s */
            a->only = (int8_t)s;
            rl_permit_send_attempt(a);
            return RL_PERMIT_AGAIN;
        }
        int rc = rl_round_reason(r, REDLOCK_ERR_TAKEN);
        return rc == REDLOCK_ERR_NO_QUORUM && r->yes + r->no == r->n ? REDLOCK_ERR_TAKEN : rc; /* split slots */
    }
    if (rl_validity_us(a->deadline_us, now) <= 0) return REDLOCK_ERR_EXPIRED;
    char key[REDLOCK_MAX_RESOURCE + 32];
    size_t len = rl_permit_key(key, sizeof key, a->keys.k[0], a->keys.len[0], s);
    const char *k = key;
    rl_keys_t keys = {1, &k, &len};
    a->lock = rl_lock_new(op->rl, &keys, a->token, a->ttl_ms, r->t0_us, a->deadline_us);
    if (!a->lock) return REDLOCK_ERR_NOMEM;
    a->lock->slot = s;
    a->lock->limit = a->limit;
    if (op->rep) {
        op->rep->slot = s;
        op->rep->validity_ms = rl_validity_ms(rl_validity_us(a->deadline_us, now));
    }
    if (strays(r, s)) {
        RL_ROUND(scratch); /* (goes out at once, unwaited) */
        send_release(a, scratch, s, 0);
    }
    if (!a->fenced) return REDLOCK_OK;
    rl_fence_write(a, key, len);
    return RL_PERMIT_FENCE;
}
