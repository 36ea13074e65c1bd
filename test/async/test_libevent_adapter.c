/* test_libevent_adapter.c -- include/redlock/libevent.h driving a
 * redlock_async_t on one libevent base against the 5 fixture masters
 * (scenarios.c). */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdlib.h>

#include <redlock/libevent.h>

#include "scenarios.h"

static tc_cluster_t C;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(libevent_adapter, .init = setup, .timeout = 600);

/* A fresh event base. */
static void *ev_loop_new_(void) {
    return event_base_new();
}

/* The adapter under test. */
static int ev_attach_(redlock_async_t *a, void *loop) {
    return redlock_libevent_attach(a, loop);
}

/* What a one-shot timer calls. */
typedef struct ev_after {
    void (*fn)(void *);
    void *arg;
} ev_after_t;

/* Fires a one-shot timer (libevent frees the event itself). */
static void ev_after_fired_(evutil_socket_t fd, short what, void *arg) {
    ev_after_t x = *(ev_after_t *)arg;
    (void)fd;
    (void)what;
    free(arg);
    x.fn(x.arg);
}

/* Arms fn(arg) in ms milliseconds with event_base_once. */
static int ev_after_(void *loop, unsigned ms, void (*fn)(void *), void *arg) {
    ev_after_t *x = malloc(sizeof *x);
    if (!x) return -1;
    x->fn = fn;
    x->arg = arg;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (long)(ms % 1000) * 1000};
    if (event_base_once(loop, -1, EV_TIMEOUT, ev_after_fired_, x, &tv) != 0) {
        free(x);
        return -1;
    }
    return 0;
}

/* event_base_dispatch returns 0 (or 1: nothing was ever pending) once no
 * event is left, -1 on a backend error. */
static int ev_run_(void *loop) {
    return event_base_dispatch(loop) < 0 ? -1 : 0;
}

/* Counts what is still added or active on the base, then frees it. */
static int ev_loop_free_(void *loop) {
    int left = event_base_get_num_events(loop, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE);
    event_base_free(loop);
    return left;
}

static const async_loop_ops_t EV_OPS = {
    .name = "libevent",
    .loop_new = ev_loop_new_,
    .attach = ev_attach_,
    .after = ev_after_,
    .run = ev_run_,
    .loop_free = ev_loop_free_,
};

Test(libevent_adapter, callers_64_contend_for_4_resources_on_one_loop) {
    scenario_contend(&EV_OPS, &C, 64, 4, 8);
}

Test(libevent_adapter, free_with_acquires_pending_cancels_them_and_the_loop_ends) {
    scenario_free_pending(&EV_OPS, &C);
}

Test(libevent_adapter, free_detaches_granted_locks_still_valid) {
    scenario_free_detaches(&EV_OPS, &C);
}

Test(libevent_adapter, cancel_one_waiter_the_other_gets_the_lock) {
    scenario_cancel(&EV_OPS, &C);
}

Test(libevent_adapter, cancelled_while_waiting_reports_no_stale_votes) {
    scenario_cancel_waiting(&EV_OPS, &C);
}

Test(libevent_adapter, attach_errors_leave_nothing_on_the_loop) {
    scenario_attach_errors(&EV_OPS, &C);
}
