/* async_event.c -- a lock taken and released on a libevent loop, through the
 * non-blocking API: every call returns at once and its callback runs
 * later from the loop, which never blocks meanwhile.
 *
 *   async_event URI...   (exit 0: granted and released; 1: not; 2: bad nodes) */
#include <event2/event.h>
#include <stdio.h>

#include <redlock.h>
#include <redlock/libevent.h>

static int status = 1;

/* The release's callback: the work is done, so the handle goes too. */
static void released(int rc, const redlock_report_t *rep, void *arg) {
    printf("released: %s\n", rc == REDLOCK_OK ? "by a quorum" : rep->message);
    status = rc == REDLOCK_OK ? 0 : 1;
    redlock_async_free(arg); /* allowed from its own callback; the loop then ends */
}

/* The acquire's callback: lock is ours when rc is REDLOCK_OK. */
static void acquired(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    redlock_async_t *a = arg;
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "not granted: %s\n", rep->message);
        redlock_async_free(a);
        return;
    }
    printf("granted after %u attempt(s), valid for %lld ms\n", rep->attempts,
           (long long)redlock_lock_validity_ms(lock));
    if (redlock_async_release(a, lock, released, a) != REDLOCK_OK) { /* it did nothing: free what we hold */
        redlock_lock_free(lock);                                     /* its keys expire by their TTL */
        redlock_async_free(a);
    }
}

int main(int argc, char **argv) {
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 1;
    opt.n_nodes = (size_t)(argc - 1);
    redlock_async_t *a;
    if (redlock_async_new(&a, &opt) != REDLOCK_OK) return 2;
    struct event_base *base = event_base_new();
    if (!base || redlock_libevent_attach(a, base) != REDLOCK_OK ||
        redlock_async_acquire(a, "my-resource", 2000, 1000, acquired, a) != REDLOCK_OK) { /* 2 s lock, wait 1 s */
        redlock_async_free(a);
        status = 1;
    }
    if (base) event_base_dispatch(base); /* returns once the handle is freed: no event is left */
    if (base) event_base_free(base);
    return status;
}
