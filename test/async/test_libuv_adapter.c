/* test_libuv_adapter.c -- include/redlock/libuv.h driving a redlock_async_t
 * on one libuv loop against the 5 fixture masters (scenarios.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <uv.h>

#include <redlock/libuv.h>

#include "scenarios.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(libuv_adapter, .init = setup, .timeout = 600);

/* A private loop (not the default one), on the heap. */
static void *uv_loop_new_(void) {
    uv_loop_t *loop = malloc(sizeof *loop);
    if (loop && uv_loop_init(loop) != 0) {
        free(loop);
        loop = NULL;
    }
    return loop;
}

/* The adapter under test. */
static int uv_attach_(redlock_async_t *a, void *loop) {
    return redlock_libuv_attach(a, loop);
}

/* A one-shot timer that closes (and frees) itself when it fires. */
typedef struct uv_after {
    uv_timer_t t;
    void (*fn)(void *);
    void *arg;
} uv_after_t;

/* Close callback of a one-shot timer. */
static void uv_after_closed_(uv_handle_t *h) {
    free(h->data);
}

/* Fires a one-shot timer: closes it first, then calls the scenario. */
static void uv_after_fired_(uv_timer_t *t) {
    uv_after_t *x = t->data;
    uv_close((uv_handle_t *)t, uv_after_closed_);
    x->fn(x->arg);
}

/* Arms fn(arg) in ms milliseconds. */
static int uv_after_(void *loop, unsigned ms, void (*fn)(void *), void *arg) {
    uv_after_t *x = malloc(sizeof *x);
    if (!x) return -1;
    x->fn = fn;
    x->arg = arg;
    x->t.data = x;
    if (uv_timer_init(loop, &x->t) != 0) {
        free(x);
        return -1;
    }
    return uv_timer_start(&x->t, uv_after_fired_, ms, 0);
}

/* uv_run returns 0 once no handle is active or closing any more. */
static int uv_run_(void *loop) {
    return uv_run(loop, UV_RUN_DEFAULT) == 0 ? 0 : -1;
}

/* uv_loop_close refuses (UV_EBUSY) while any handle is left on the loop;
 * the loop's memory is then kept (the test fails anyway). */
static int uv_loop_free_(void *loop) {
    int rc = uv_loop_close(loop);
    if (rc == 0) free(loop);
    return rc;
}

static const async_loop_ops_t UV_OPS = {
    .name = "libuv",
    .loop_new = uv_loop_new_,
    .attach = uv_attach_,
    .after = uv_after_,
    .run = uv_run_,
    .loop_free = uv_loop_free_,
};

Test(libuv_adapter, callers_64_contend_for_4_resources_on_one_loop) {
    scenario_contend(&UV_OPS, &C, 64, 4, 8);
}

Test(libuv_adapter, free_with_acquires_pending_cancels_them_and_the_loop_ends) {
    scenario_free_pending(&UV_OPS, &C);
}

Test(libuv_adapter, free_detaches_granted_locks_still_valid) {
    scenario_free_detaches(&UV_OPS, &C);
}

Test(libuv_adapter, cancel_one_waiter_the_other_gets_the_lock) {
    scenario_cancel(&UV_OPS, &C);
}

Test(libuv_adapter, cancelled_while_waiting_reports_no_stale_votes) {
    scenario_cancel_waiting(&UV_OPS, &C);
}

Test(libuv_adapter, attach_errors_leave_nothing_on_the_loop) {
    scenario_attach_errors(&UV_OPS, &C);
}
