/* async_uv.c -- a lock taken and released on a libuv loop, through the
 * non-blocking API: every call returns at once and its callback runs
 * later from the loop, which never blocks meanwhile.
 *
 *   async_uv URI...   (exit 0: granted and released; 1: not; 2: bad nodes) */
#define _POSIX_C_SOURCE 200809L /* uv.h needs the POSIX types under -std=c11 */
#include <stdio.h>
#include <uv.h>

#include <redlock.h>
#include <redlock/libuv.h>

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
    uv_loop_t *loop = uv_default_loop();
    if (redlock_libuv_attach(a, loop) != REDLOCK_OK ||
        redlock_async_acquire(a, "my-resource", 2000, 1000, acquired, a) != REDLOCK_OK) { /* 2 s lock, wait 1 s */
        redlock_async_free(a);
        status = 1;
    }
    uv_run(loop, UV_RUN_DEFAULT); /* returns once the handle is freed and its libuv handles closed */
    uv_loop_close(loop);
    return status;
}
