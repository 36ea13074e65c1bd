/* fencing.c -- fencing tokens, and a write the store refuses when stale.
 * Each holder of "invoice:42" gets a token greater than every earlier
 * holder's; the store (a Redis node that is not a lock node) keeps the
 * highest token it saw for the key and refuses a write with a lower one,
 * as it would from a holder that paused past its lock's validity.
 *
 *   fencing STORE_URI LOCK_URI...   (exit 0 when the stale write was refused) */
#include <inttypes.h>
#include <stdio.h>

#include <redlock.h>

/* Takes "invoice:42" once, returns its fencing token (0 if refused). */
static uint64_t hold(redlock_t *locks) {
    redlock_lock_t *lock;
    redlock_report_t rep;
    if (redlock_acquire_ex(locks, "invoice:42", 5000, 2000, &lock, &rep) != REDLOCK_OK) {
        fprintf(stderr, "not granted: %s\n", rep.message);
        return 0;
    }
    uint64_t fence = redlock_lock_fence(lock);
    redlock_release(locks, lock);
    return fence;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 2;
    opt.n_nodes = (size_t)(argc - 2);
    opt.fencing = 1; /* locks get fencing tokens (one more round trip each) */
    redlock_t *locks, *store;
    if (redlock_new(&locks, &opt) != REDLOCK_OK) return 2;
    opt.nodes = (const char *const *)argv + 1; /* the store: one node of its own */
    opt.n_nodes = 1;
    opt.fencing = 0;
    if (redlock_new(&store, &opt) != REDLOCK_OK) {
        redlock_free(locks);
        return 2;
    }

    uint64_t old = hold(locks), now = hold(locks); /* two holders, one after the other */
    printf("tokens: %" PRIu64 " then %" PRIu64 "\n", old, now);
    int fresh = redlock_fenced_set(store, "invoice:42:state", "paid", now, NULL);
    int stale = redlock_fenced_set(store, "invoice:42:state", "draft", old, NULL); /* the late holder */
    printf("newer holder's write: %s; older holder's write: %s\n", redlock_strerror(fresh), redlock_strerror(stale));
    redlock_free(store);
    redlock_free(locks);
    return old && now > old && fresh == REDLOCK_OK && stale == REDLOCK_ERR_STALE ? 0 : 1;
}
