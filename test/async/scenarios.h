/* scenarios.h -- redlock_async_t scenarios written once and run on each
 * event loop adapter (test_libuv_adapter.c, test_libevent_adapter.c).
 *
 * A loop is described by a small table of operations; every scenario makes
 * its own loop and handle, attaches the adapter under test, runs the loop
 * until it returns by itself and checks with Criterion asserts, from inside
 * the callbacks and afterwards. They need the fixture cluster (rt_setup). */
#ifndef REDLOCK_TEST_ASYNC_SCENARIOS_H
#define REDLOCK_TEST_ASYNC_SCENARIOS_H

#include "rltest.h"

typedef struct async_loop_ops {
    const char *name;
    void *(*loop_new)(void);                       /* a fresh loop, NULL on failure */
    int (*attach)(redlock_async_t *a, void *loop); /* the adapter's attach function */
    /* Calls fn(arg) once, from the loop, after ms milliseconds; 0 when armed. */
    int (*after)(void *loop, unsigned ms, void (*fn)(void *arg), void *arg);
    int (*run)(void *loop);       /* runs until nothing is left; < 0 on a loop error */
    int (*loop_free)(void *loop); /* frees the loop; 0 when nothing was left on it */
} async_loop_ops_t;

/* callers callers (at most 64) contend for `resources` resources (at most
 * 8) on one loop and one handle, each making `cycles` cycles of acquire
 * (wait_ms > 0) -> a 1-3 ms hold on a loop timer -> release. Asserts that
 * no two callers ever hold a resource at once (an owner table and a
 * read-modify-write counter per resource), that every call's callback runs
 * exactly once and never from inside the call, that the loop returns by
 * itself once the last release callback has freed the handle, and that the
 * nodes keep no key. */
void scenario_contend(const async_loop_ops_t *ops, const tc_cluster_t *c, int callers, int resources, int cycles);

/* Acquires pending (waiting on a key another client holds) and a release
 * just asked for when the handle is freed from a plain loop timer: each
 * acquire's callback runs once, from inside redlock_async_free, with
 * REDLOCK_ERR_CANCELLED and no lock; the other client's key is untouched;
 * the pending release still deletes its key on every node; the loop then
 * returns by itself. */
void scenario_free_pending(const async_loop_ops_t *ops, const tc_cluster_t *c);

/* A granted lock not released when the handle is freed is detached: it
 * stays valid and set on the nodes, and redlock_lock_free frees it without
 * releasing anything. */
void scenario_free_detaches(const async_loop_ops_t *ops, const tc_cluster_t *c);

/* redlock_async_cancel of one of two waiters: it returns 1, the cancelled
 * callback runs later from the loop with REDLOCK_ERR_CANCELLED, the other
 * waiter is granted once the holder releases, and the loop ends. */
void scenario_cancel(const async_loop_ops_t *ops, const tc_cluster_t *c);

/* An acquire cancelled while it waits between attempts: CANCELLED from the
 * loop, its attempts and no votes in its report (it holds no round while it
 * waits, and the room it gets back shows no other call's), nodes clean. */
void scenario_cancel_waiting(const async_loop_ops_t *ops, const tc_cluster_t *c);

/* The adapter's errors: NULL arguments and a second attach of the same
 * handle are refused with REDLOCK_ERR_INVALID and leave nothing behind on
 * the loop. */
void scenario_attach_errors(const async_loop_ops_t *ops, const tc_cluster_t *c);

#endif
