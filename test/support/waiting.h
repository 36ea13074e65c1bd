/* waiting.h -- a waiter thread and a timed handoff for the tests of
 * waking on release (doc/design.md, "Waiting"). Header-only, so a test built with
 * -DRL_TEST_ASYNC (asyncmode.h) runs it through the async API too;
 * include it after rltest.h. Needs pthreads and Criterion. */
#ifndef REDLOCK_TEST_SUPPORT_WAITING_H
#define REDLOCK_TEST_SUPPORT_WAITING_H
#include <criterion/criterion.h>
#include <pthread.h>

#include "rltest.h"

typedef struct waiter {
    redlock_t *rl;
    const char *resource;
    int rc;
    unsigned attempts;
    uint64_t done_us;
} waiter_t;

/* A thread that waits up to 20 s for the resource, notes when it was
 * answered, and releases what it got. */
static inline void *wait_thread(void *arg) {
    waiter_t *w = arg;
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    w->rc = redlock_acquire_ex(w->rl, w->resource, 5000, 20000, &l, &rep);
    w->done_us = rt_now_us();
    w->attempts = rep.attempts;
    if (w->rc == REDLOCK_OK) w->rc = redlock_release(w->rl, l);
    return NULL;
}

/* Holder h takes resource for 30 s, tried for up to 10 s (h may be fresh:
 * under valgrind its first round can outlast its connect timeout).
 * Returns the lock; the caller releases it. */
static inline redlock_lock_t *hold(redlock_t *h, const char *resource) {
    redlock_lock_t *l = NULL;
    int rc = REDLOCK_ERR_NO_QUORUM;
    for (int t = 0; t < 100 && rc != REDLOCK_OK; t++)
        if ((rc = redlock_acquire(h, resource, 30000, &l)) != REDLOCK_OK) rt_sleep_ms(100);
    cr_assert_eq(rc, REDLOCK_OK, "the holder's acquire: %s", redlock_strerror(rc));
    return l;
}

/* h releases l, then the waiter thread t (running wait_thread on *ww) is
 * joined and must have been granted. Returns how many ms after the
 * release that was. */
static inline uint64_t release_and_join_ms(redlock_t *h, redlock_lock_t *l, pthread_t t, waiter_t *ww) {
    uint64_t released = rt_now_us();
    cr_assert_eq(redlock_release(h, l), REDLOCK_OK);
    pthread_join(t, NULL);
    cr_assert_eq(ww->rc, REDLOCK_OK, "%s", redlock_strerror(ww->rc));
    return ww->done_us > released ? (ww->done_us - released) / 1000 : 0;
}

/* Holder h takes resource; a waiter on its own handle w (another client
 * to it) starts waiting; after 300 ms h releases. Returns how many ms
 * after the release the waiter was granted. */
static inline uint64_t handoff_ms(redlock_t *h, redlock_t *w, const char *resource, unsigned *attempts) {
    redlock_lock_t *l = hold(h, resource);
    waiter_t ww = {w, resource, 1, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &ww);
    rt_sleep_ms(300); /* refused, subscribed, waiting for its 2 s poll (the holder's TTL is 30 s) */
    uint64_t ms = release_and_join_ms(h, l, t, &ww);
    if (attempts) *attempts = ww.attempts;
    return ms;
}

#endif
