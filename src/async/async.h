/* async.h -- the async handle's private structures (src/async/): the
 * second driver of the core. One loop thread; no mutex, no thread, no
 * blocking call. A call is an rl_call_t holding a core operation; the
 * handle resumes it when its round is decided (round_done puts it on the
 * ready list) or its retry timer is due (a min-heap of wake-up times),
 * and runs the caller's callback when the operation is done. */
#ifndef RL_ASYNC_H
#define RL_ASYNC_H
#include <stdint.h>

#include "nodeset.h"
#include "ops.h"
#include "rl.h"
#include "subs.h"

enum { RL_CALL_ACQUIRE = 1, RL_CALL_EXTEND, RL_CALL_RELEASE, RL_CALL_AUTOEXTEND };

typedef struct rl_call rl_call_t;

struct rl_call {
    union {
        rl_op_t op; /* all start with it */
        rl_acquire_op_t acq;
        rl_life_op_t life;
        struct {
            rl_life_op_t op;                   /* (life) */
            char token[REDLOCK_TOKEN_LEN + 1]; /* a release's copy of the lock's token */
        } rel;
    } u;
    redlock_acquire_cb acb;
    redlock_done_cb dcb;
    void *arg;
    redlock_lock_t *lock; /* extend, release, auto-extension: the lock */
    char *name;           /* acquire: a copy of the resource (kept when pooled) */
    size_t name_len;
    const char *name_ptr;     /* what the op's keys point at */
    rl_call_t *next, *prev;   /* the pending list */
    rl_call_t *rnext, *rprev; /* the ready list */
    uint8_t *free_slots;      /* a permit's acquire: its op's counts of free slots, REDLOCK_MAX_PERMITS
                               * (made on the first, kept when pooled: not every call pays for them) */
    uint32_t name_cap;
    uint32_t heap_at; /* index in the timer heap, or RL_NOT_IN_HEAP */
    /* (small types: a pending acquire is a call) */
    uint8_t kind;    /* RL_CALL_* */
    uint8_t started; /* its op has been stepped at least once */
    uint8_t cancelled;
    uint8_t answered;    /* op.rc is the answer already: complete at the first step */
    uint8_t queued;      /* on the ready list */
    unsigned char *room; /* where the op's rounds live (rl_call_room); NULL while an acquire
                          * waits on the heap: only calls with a round to run hold one */
};

#define RL_NOT_IN_HEAP UINT32_MAX

/* What a loop adapter was told to watch for one place. */
typedef struct rl_io {
    int fd; /* -1: nothing announced */
    uint8_t rd, wr;
} rl_io_t;

struct redlock_async {
    redlock_t ctx; /* the core's context (ctx.send = send_async) */
    rl_nodes_t ns;
    rl_subs_t subs;       /* the release channels (connected on the first wait) */
    int wake_rd, wake_wr; /* name lookups write wake_wr when they end */
    redlock_async_hooks_t hooks;
    int hooked;
    rl_io_t wake_io;          /* what is watched of wake_rd (a connection's is in it) */
    rl_call_t *pending;       /* calls started and not called back yet */
    rl_call_t *ready, *rtail; /* calls whose round was decided: to step */
    rl_call_t **heap;         /* calls waiting for a wake-up time, earliest first */
    size_t heap_n, heap_cap;
    rl_call_t *pool;       /* finished calls kept for reuse */
    unsigned char *rooms;  /* spare rooms (each starts with the next one's address) */
    size_t rooms_n;        /* how many: at most RL_SPARE_ROOMS */
    redlock_lock_t *locks; /* granted and not yet released (detached by free) */
    rl_call_t *current;    /* the call being stepped (its op's rounds belong to it) */
    uint64_t timer_at;     /* the timer asked for (0: none) */
    int depth;             /* nesting of handle_* / free inside callbacks */
    int dead;              /* freed from inside a callback: torn down at depth 0 */
    int fire_and_forget;   /* rounds sent now have no owner (freeing) */
};

/* queue.c: calls' places. rl_call_get: a zeroed call on the pending
 * list (from the pool), or NULL; rl_call_recycle takes it off every list
 * into the pool. The heap holds calls by u.op.wake_us (rl_async_wait
 * sets it); the ready list, calls to step. -1 from a push: out of memory. */
rl_call_t *rl_call_get(redlock_async_t *a);
void rl_call_recycle(redlock_async_t *a, rl_call_t *c);

/* queue.c: a call's room for its op's rounds. rl_call_room gives c one
 * when it has none (spare or new, holding no round): 0, or -1 out of
 * memory; rl_call_unroom takes it back while c waits, keeping at most
 * RL_SPARE_ROOMS spare; rl_rooms_free frees the spares. */
#define RL_SPARE_ROOMS 256
int rl_call_room(redlock_async_t *a, rl_call_t *c);
void rl_call_unroom(redlock_async_t *a, rl_call_t *c);
void rl_rooms_free(redlock_async_t *a);
int rl_async_wait(redlock_async_t *a, rl_call_t *c, uint64_t at);
int rl_heap_push(redlock_async_t *a, rl_call_t *c);
void rl_heap_remove(redlock_async_t *a, rl_call_t *c);
void rl_ready_push(redlock_async_t *a, rl_call_t *c);
void rl_ready_remove(redlock_async_t *a, rl_call_t *c);

/* queue.c: the handle's live locks (linked by held_next / held_prev). */
void rl_async_lock_add(redlock_async_t *a, redlock_lock_t *l);
void rl_async_lock_drop(redlock_async_t *a, redlock_lock_t *l);

/* loop.c: the driver. */
int rl_async_init(redlock_async_t *a, const redlock_options_t *opt, char *err, size_t n);
void rl_call_step(redlock_async_t *a, rl_call_t *c); /* steps c's op until it waits; completes it */
/* flush, run ready calls (run = 1), announce fds/timer */
void rl_async_sync(redlock_async_t *a, int run);
/* c wakes at `at`; -1 out of memory */
int rl_async_wait(redlock_async_t *a, rl_call_t *c, uint64_t at);
void rl_async_enter(redlock_async_t *a);
int rl_async_leave(redlock_async_t *a); /* 1 when a was torn down (do not touch it) */
void rl_async_cancel_call(redlock_async_t *a, rl_call_t *c, int rc);
void rl_async_teardown(redlock_async_t *a);    /* closes, cleans the hooks up, frees a */
void rl_async_release_all(redlock_async_t *a); /* free: every pending call called back CANCELLED */

/* complete.c: runs c's callback with its report and recycles c. */
void rl_call_complete(redlock_async_t *a, rl_call_t *c, uint64_t now);

/* autoextend.c: the handle's auto-extension (an auto-extension call per lock). */
void rl_async_autoextend_done(redlock_async_t *a, rl_call_t *c, uint64_t now);
void rl_async_autoextend_stop(redlock_async_t *a, redlock_lock_t *lock);

#endif
