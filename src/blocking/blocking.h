/* blocking.h -- what the blocking handle's files (src/blocking/) share:
 * driving an operation to its end, re-entry, the watchdog, queries and
 * the token-only release. */
#ifndef RL_BLOCKING_H
#define RL_BLOCKING_H
#include <pthread.h>
#include <stdatomic.h>

#include "ops.h"
#include "rl.h"

struct rl_engine;
struct rl_watchdog;
struct rl_listener;

/* A blocking handle: the context the core sees (redlock_t points at its
 * rl) and what only the blocking driver uses. */
typedef struct rl_blocking {
    struct redlock rl;      /* first: rl_blocking_of */
    struct rl_engine *eng;  /* the leader/follower engine the rounds run on (engine.c) */
    struct rl_watchdog *wd; /* started on the first redlock_autoextend (watchdog.c) */
    pthread_mutex_t wd_start_mu;
    /* redlock_cancel_waits: a generation and a pipe that waiting threads poll (drive.c) */
    atomic_uint cancel_gen;
    atomic_uint poke_gen; /* bumped when a local queue moved: waiters look again */
    atomic_int waiters;
    int cancel_rd, cancel_wr;
    pthread_mutex_t sleep_mu;     /* guards the eventfd of each blocking waiter (drive.c) */
    struct rl_listener *listener; /* the release channels' thread, from the first wait (listen.c) */
} rl_blocking_t;

/* The blocking handle rl is (rl must come from redlock_new). */
static inline rl_blocking_t *rl_blocking_of(redlock_t *rl) {
    return (rl_blocking_t *)(void *)rl;
}

/* drive.c: steps op to its end on this thread (rounds on the engine,
 * sleeps through retry delays). Returns op->rc. rl_send_blocking is a
 * blocking handle's rl->send. */
int rl_drive(rl_op_t *op);
void rl_send_blocking(redlock_t *rl, rl_round_t *r);
void rl_poke_waiter(redlock_t *rl, rl_acquire_op_t *a); /* rl->queue_moved: a's thread looks again */
/* drive.c: while on (this thread only), rl_send_blocking starts rounds
 * without waiting for them; rl_drive_started counts the rounds so started
 * (the caller then waits for each with rl_engine_wait). */
void rl_drive_defer(int on);
unsigned rl_drive_started(void);

/* listen.c: the release channels' thread. rl_listener_new sets it up (no
 * thread, no connection yet) and sets rl->channel; returns 0 or
 * REDLOCK_ERR_NOMEM. rl_listener_free stops and frees it (NULL-safe).
 * rl_listener_watch listens for membership steps from now on (starting
 * the thread); its caller claimed the watch (rl_record_claim_watch). */
typedef struct rl_listener rl_listener_t;
int rl_listener_new(redlock_t *rl);
void rl_listener_free(redlock_t *rl);
void rl_listener_watch(redlock_t *rl);

/* extend.c: the extend round for keys/token (doc/design.md, "The algorithm":
 * extend from a fresh t0): REDLOCK_OK when a quorum extended and validity
 * remains, with *t0 and *deadline set and rep's validity; else NOT_HELD,
 * EXPIRED or NO_QUORUM / AUTH. The caller ends the report. */
int rl_extend_round(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_report_t *rep,
                    const redlock_lock_t *kind, uint64_t *t0, uint64_t *deadline);
/* release.c: the release round for keys/token and its verdict: OK,
 * NOT_HELD, AUTH or NO_QUORUM. The caller ends the report. */
/* kind: the lock whose kind (permit, reader) the release is for; NULL a mutex's */
int rl_release_keys(redlock_t *rl, const rl_keys_t *keys, const char *token, const redlock_lock_t *kind,
                    redlock_report_t *rep);
/* extend.c: extends lock to ttl_ms (see redlock_extend_ex), serialised
 * with other extends of the same lock; counts the call. */
int rl_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep);
/* extend.c: extends the locks of n jobs to their ttl_ms at once (the
 * watchdog's extensions that fall due together): every round is sent
 * before any is waited for, so they leave in one write per node. Each
 * job's rc is what rl_extend would have returned, or RL_EXTEND_BUSY;
 * every extension made is counted. */
typedef struct rl_extend_job {
    redlock_lock_t *lock;
    uint32_t ttl_ms;
    int rc;
    int sent; /* its round was started */
    rl_life_op_t e;
    rl_round_t *r; /* room for its round (rl_round_size of the node count), the caller's */
} rl_extend_job_t;
void rl_extend_many(redlock_t *rl, rl_extend_job_t *jobs, size_t n);
#define RL_EXTEND_BUSY 1 /* a job's rc: skipped, another extend of its lock was under way */
/* adopt.c: releases the lock on resource that token holds, with no lock
 * handle (the `redlock release RESOURCE TOKEN` step): checks both
 * (INVALID names what is wrong, never the token), runs the release round,
 * counts the call as a release and ends the report. */
int rl_release_token(redlock_t *rl, const char *resource, const char *token, redlock_report_t *rep);

/* query.c: sends one command to every node and waits for every answer or
 * deadline (no early stop). fn (may be NULL) sees each node's hiredis
 * reply, from inside the engine: copy what you need, quickly. rep (may be
 * NULL) gets each node's vote (yes = any non-error reply), round trip and
 * error text. Returns how many nodes answered without error. */
typedef void (*rl_reply_fn)(void *arg, size_t node, const void *reply);
size_t rl_query(redlock_t *rl, int argc, const char **argv, const size_t *lens, rl_reply_fn fn, void *arg,
                redlock_report_t *rep);
/* query.c: the same with an embedded script (EVALSHA, EVAL fallback) on keys/args. */
size_t rl_query_script(redlock_t *rl, const char *script, int nkeys, int argc, const char **argv, const size_t *lens,
                       rl_reply_fn fn, void *arg, redlock_report_t *rep);

/* held.c: every outstanding single-resource lock is registered (for
 * re-entry and so that redlock_free can detach them). rl_held_reenter
 * returns the calling thread's valid lock on resource (holds + 1), or
 * NULL. rl_held_add registers a new lock. rl_held_drop returns 1 when the
 * caller's hold was not the last (the lock stays), 0 when it was (now
 * unregistered). rl_held_forget_all detaches every lock (owner = NULL). */
redlock_lock_t *rl_held_reenter(redlock_t *rl, const char *resource, size_t len);
/* 1 when this thread holds a valid lock of resource: its mutex (shared 0), or a reader's lock (1) */
int rl_held_by_me(redlock_t *rl, const char *resource, size_t len, int shared);
void rl_held_add(redlock_t *rl, redlock_lock_t *lock);
int rl_held_drop(redlock_lock_t *lock);
void rl_held_forget_all(redlock_t *rl);

/* watchdog.c: stops lock's auto-extension if it has one (waits for an
 * extension in progress); rl_watchdog_free stops the thread and detaches
 * every watched lock. */
void rl_watchdog_stop(redlock_lock_t *lock);
void rl_watchdog_free(redlock_t *rl);

#endif
