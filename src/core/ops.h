/* ops.h -- the Redlock operations as state machines (doc/design.md, "One core, two drivers").
 *
 * An operation never does I/O, sleeps or locks. Its driver calls
 * op->next(op, now) to start it and again whenever what it asked for has
 * happened; next answers with what it needs now:
 *   RL_STEP_ROUND  it sent a round through rl->send: call again once that
 *                  round is decided (a blocking send has already waited);
 *   RL_STEP_WAIT   call again at op->wake_us (a retry's delay);
 *   RL_STEP_DONE   finished: op->rc says how (acquire: a->lock is set).
 * The report (op->rep, may be NULL) is filled as the op goes: attempts,
 * votes, validity; the driver ends it. The blocking API drives an op on
 * the caller's stack to completion; the async handle keeps it on the heap
 * and resumes it from loop events. The op's two rounds live where its
 * driver puts them (r, aux and seen are set before the op's init:
 * RL_ROUND on the stack, or room for n nodes after an async call). Only a
 * fenced acquire uses aux and seen (its token's write-back and the
 * counters it starts from); clean-ups go out unwaited
 * through a scratch round on the stack. */
#ifndef RL_OPS_H
#define RL_OPS_H
#include <stdint.h>

#include "rl.h"

enum { RL_STEP_ROUND = 1, RL_STEP_WAIT, RL_STEP_DONE };

typedef struct rl_op rl_op_t;

struct rl_op {
    int (*next)(rl_op_t *op, uint64_t now);
    /* an op a driver may cancel while it waits (acquire): switches it to
     * its clean-up, then DONE with rc; NULL for the others */
    int (*cancel)(rl_op_t *op, int rc);
    redlock_t *rl;
    redlock_report_t *rep; /* NULL: no per-node detail is kept (the async handle) */
    rl_round_t *r;         /* the op's main round: its votes are the report's */
    rl_round_t *aux;       /* a fencing write-back (NULL when the handle has no fencing) */
    uint64_t *seen;        /* with aux: n entries, each node's fence counter as the fenced
                            * attempt read it (0: none), set where the node granted */
    uint64_t wake_us;
    int rc;
    int phase;
    void *waiter; /* the driver's: whom queue_moved wakes for this op (a sleeping
                   * thread, an async call), or NULL */
};

/* Sets op up for a new operation of rl: next and cancel its steps (cancel
 * NULL when it cannot be cancelled), rep its report (NULL: none), phase
 * its first; the rounds its driver gave it (r, aux, seen) stay. */
static inline void rl_op_setup(rl_op_t *op, int (*next)(rl_op_t *, uint64_t), int (*cancel)(rl_op_t *, int),
                               redlock_t *rl, redlock_report_t *rep, int phase) {
    *op = (rl_op_t){.next = next,
                    .cancel = cancel,
                    .rl = rl,
                    .rep = rep,
                    .r = op->r,
                    .aux = op->aux,
                    .seen = op->seen,
                    .wake_us = 0,
                    .rc = REDLOCK_OK,
                    .phase = phase,
                    .waiter = NULL};
}

/* Fallback polls of waiting acquires a handle sends at most per
 * retry_delay_ms (attempt.c). */
#define RL_POLLS_PER_INTERVAL 256u

/* Acquire: attempts (SET NX PX, the multi-key script, or the fenced
 * transaction and its write-back), the validity check, the clean-up release
 * after a failed attempt, and jittered retries within wait_ms. */
typedef struct rl_acquire_op {
    rl_op_t op;
    rl_keys_t keys; /* the caller's names (must outlive the op) */
    char token[REDLOCK_TOKEN_LEN + 1];
    /* (the small fields together, no padding between: a pending async acquire holds an op) */
    uint8_t last;   /* the current attempt is the one at the wait deadline */
    uint8_t splits; /* attempts in a row that split the vote (see attempt.c) */
    uint8_t poll;   /* the coming attempt is a fallback poll (the retry delay ran out) */
    uint8_t fenced;
    uint8_t queued;    /* in the handle's local queue (waitq.c) */
    uint8_t woken;     /* a release of its resource was heard: attempt at woke_at_us (under held_mu) */
    uint8_t listening; /* counted among its resource's channel's waiters (waitq.c) */
    uint8_t limit;     /* a permit of a semaphore with this limit (permit.c); 0: a mutex */
    int8_t only;       /* permit: this attempt takes only this slot (-1: the first free) */
    uint8_t shared;    /* a reader of the resource's read-write lock */
    uint8_t note;      /* what the report's message says beyond the counts (RL_NOTE_*) */
    uint8_t lined;     /* an attempt asked for the handle's place in the resource's line */
    uint8_t *free;     /* permit: nodes that said each slot is free or ours, REDLOCK_MAX_PERMITS
                        * counts in the driver's room (see rl_acquire_op_permit) */
    uint32_t ttl_ms;
    uint32_t n;             /* retries made on the retry timer (what retry_count bounds) */
    uint32_t tries;         /* attempts sent, also those a heard release prompted */
    uint32_t split_refused; /* the last split's refusing nodes, folded to 32 bits, when a quorum; else 0 */
    int64_t wait_ms;
    uint64_t start_us;
    uint64_t fence_max; /* highest fence counter the granting nodes returned */
    uint64_t deadline_us;
    redlock_lock_t *lock; /* RL_STEP_DONE with rc OK: the new lock */
    uint64_t woke_at_us;
    struct rl_acquire_op *qnext; /* the next in its line (waitq.c) */
    struct rl_waitline *line;    /* its resource's line while queued */
} rl_acquire_op_t;

/* permit.c: the semaphore's attempt. rl_permit_send_attempt sends a's
 * slot probe on op.r; rl_permit_attempted judges it (REDLOCK_OK: a->lock
 * is the permit, on its slot's key) and releases stray slots without
 * waiting; rl_permit_cleanup sends the clean-up of a failed one, unwaited,
 * through the round r (the caller's scratch room).
 * rl_permit_key writes "<res>:permit:<slot>" (0 when it does not fit in
 * cap); rl_permit_suffix_len is the length of its ":permit:<slot>". */
void rl_permit_send_attempt(rl_acquire_op_t *a);
#define RL_PERMIT_AGAIN 1 /* rl_permit_attempted: a second round went out (one slot a quorum has free) */
#define RL_PERMIT_FENCE 2 /* rl_permit_attempted: won; the slot's fencing token is being written (op.aux) */
/* after init: a permit (limit 0: a mutex); free, REDLOCK_MAX_PERMITS bytes of the driver's
 * (unused for a mutex, may be NULL then), lives as long as the op */
void rl_acquire_op_permit(rl_acquire_op_t *a, unsigned limit, uint8_t *free);
void rl_acquire_op_shared(rl_acquire_op_t *a); /* after init: a reader (attempt.c) */
int rl_permit_attempted(rl_acquire_op_t *a, uint64_t now);
void rl_permit_cleanup(rl_acquire_op_t *a, rl_round_t *r);
size_t rl_permit_key(char *buf, size_t cap, const char *res, size_t len, int slot);
size_t rl_permit_suffix_len(int slot);

/* waitq.c: the local queue of waiters. rl_waitq_join appends a and
 * returns 1 when it is the head (first for its resource); rl_waitq_is_head
 * tells whether it is now; rl_waitq_leave takes it out (no-op when not
 * queued) and, when that makes another waiter head, calls rl->queue_moved;
 * it returns 1 when no waiter of the handle is left in a's line. */
int rl_waitq_join(rl_acquire_op_t *a);
int rl_waitq_is_head(const rl_acquire_op_t *a);
int rl_waitq_leave(rl_acquire_op_t *a);

/* waitq.c: a release of res (len bytes) was made here (rl_waitq_wake: the
 * head attempts at once) or announced on its channel (rl_waitq_heard).
 * An announcement that names this handle (next, nlen bytes: its line_id)
 * wakes the head at once; one that names another handle leaves a head
 * that has a place in the line asleep (that one's turn); one that names
 * none wakes it at a random instant within RL_HEARD_SPREAD_US, so the
 * heads of several processes woken by one announcement do not all
 * collide. The head of its local queue is marked woken and the driver
 * told (rl->queue_moved) when that is sooner than it was to attempt.
 * rl_waitq_woken says whether a was marked (and from when it may
 * attempt, in *at_us), clearing the mark when clear is 1. */
#define RL_HEARD_SPREAD_US 1000u
void rl_waitq_wake(redlock_t *rl, const char *res, size_t len);
void rl_waitq_heard(redlock_t *rl, const char *res, size_t len, int announced, const char *next, size_t nlen);
int rl_waitq_woken(rl_acquire_op_t *a, int clear, uint64_t *at_us);

/* waitq.c: a queued a that is going to wait listens on its resource's
 * release channel until it leaves the queue (once; no-op when not queued
 * or the driver has no channels). */
void rl_waitq_listen(rl_acquire_op_t *a);

/* attempt.c: 1 when a waits for something its driver is told of through
 * rl->queue_moved: its turn in the local queue, or (woken) a heard release.
 * Read on the driver's thread (the async handle's). */
int rl_acquire_op_in_line(const rl_acquire_op_t *a);

/* Notes for an acquire's report message, written by rl_acquire_op_describe
 * (the op itself with a report, or the async handle at its callback). */
enum { RL_NOTE_NONE = 0, RL_NOTE_QUEUED, RL_NOTE_WAITED, RL_NOTE_FENCE };
void rl_acquire_op_describe(const rl_acquire_op_t *a, redlock_report_t *rep, uint64_t now);

/* Prepares a for keys (checked by the caller) with a fresh token. */
void rl_acquire_op_init(rl_acquire_op_t *a, redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, int64_t wait_ms,
                        redlock_report_t *rep, uint64_t now);

/* Ends a pending acquire with rc (REDLOCK_ERR_CANCELLED): RL_STEP_DONE,
 * after sending (unwaited) the release of what its attempt may have set.
 * The round in flight, if any, must have been abandoned by the driver
 * (its requests still go out). */
int rl_acquire_op_cancel(rl_acquire_op_t *a, int rc);

/* Extend or release of keys/token: one round. Extend's result on OK: t0
 * and deadline (validity in the report). */
typedef struct rl_life_op {
    rl_op_t op;
    rl_keys_t keys;
    const char *token;
    uint32_t ttl_ms;
    int slot;         /* a permit's (its key "<resource>:permit:<slot>"), else -1 */
    unsigned limit;   /* a permit's semaphore's limit, else 0 */
    uint8_t shared;   /* a reader's lock (the resource's hash of readers) */
    uint8_t by_token; /* named by resource and token (adopt, release by token), not a lock object */
    uint64_t t0_us, deadline_us;
} rl_life_op_t;

void rl_extend_op_init(rl_life_op_t *e, redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms,
                       redlock_report_t *rep);
void rl_release_op_init(rl_life_op_t *e, redlock_t *rl, const rl_keys_t *keys, const char *token,
                        redlock_report_t *rep);
/* After either init: the op is for a lock of lock's kind (a permit, a
 * reader's); NULL: a plain mutex named by its resource and token, where a
 * quorum of keys of another kind is REDLOCK_ERR_INVALID (the caller named
 * the wrong kind), not NOT_HELD as for a lock object. */
void rl_life_op_kind(rl_life_op_t *e, const redlock_lock_t *lock);

/* autoextend.c: auto-extension policy. rl_autoextend_setup fills l's watch fields
 * from opt (NULL: defaults); INVALID when the interval is not below the
 * TTL. rl_autoextend_due, when l's next_us has come: REDLOCK_ERR_EXPIRED (its
 * validity is gone: lost), 1 (capped: next_us moved to its deadline, no
 * extension), 0 (extend it now by rl_autoextend_ttl: its TTL, the last one
 * before the hold cap cut to end at the cap). rl_autoextend_after takes the
 * extension's rc: 0 (next_us set: keep watching) or the reason l is lost.
 * rl_autoextend_lost marks l lost, counts and logs it (the caller then runs
 * on_lost). */
int rl_autoextend_setup(redlock_lock_t *l, const redlock_autoextend_options_t *opt, redlock_lost_fn on_lost, void *arg,
                        uint64_t now);
int rl_autoextend_due(redlock_lock_t *l, uint64_t now);
uint32_t rl_autoextend_ttl(const redlock_lock_t *l, uint64_t now);
int rl_autoextend_after(redlock_lock_t *l, int rc, uint64_t now);
void rl_autoextend_lost(redlock_t *rl, redlock_lock_t *l, int reason);

/* fence.c: the fenced attempt's rounds (see fence.c for why two).
 * rl_fence_attempted judges a mutex's attempt and sends its write-back
 * (MULTI, GET, INCRBY, EXEC to the nodes that granted) on op.aux;
 * rl_fence_write sends a permit's (fence_set.lua on every node, token
 * a->fence_max + 1, key its slot's). rl_fence_written makes the lock, or
 * fences the permit's lock already made (and frees it when the write-back
 * failed). */
void rl_fence_send_attempt(rl_acquire_op_t *a);
void rl_fence_write(rl_acquire_op_t *a, const char *key, size_t len);
int rl_fence_attempted(rl_acquire_op_t *a, uint64_t now); /* 1: write-back sent, 0: failed (op.rc set) */
int rl_fence_written(rl_acquire_op_t *a, uint64_t now);   /* REDLOCK_OK or why the write-back failed */

/* fence.c: a node's vote on a mutex's write-back, from EXEC's reply (see
 * fence.c): yes for [token, integer], no for [anything else, integer],
 * else an error vote (*err, detail). token: REDLOCK_TOKEN_LEN bytes. */
redlock_vote_t rl_fence_judge(const void *reply, const char *token, int *err, char *detail, size_t n);

#endif
