/* autoextend.c -- a lock kept alive while work outlasts its TTL: the
 * watchdog extends it every third of its 1 s TTL during 2.5 s of work,
 * and would call lost() once if it could not (taken over, or no quorum
 * before the validity ran out); the work checks validity before each step.
 *
 *   autoextend URI...   (exit 0 when the lock lasted the work) */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <redlock.h>

/* Runs once, on the watchdog's thread: tells the work to stop. */
static void lost(redlock_lock_t *lock, int reason, void *arg) {
    (void)lock;
    fprintf(stderr, "lock lost: %s\n", redlock_strerror(reason));
    atomic_store((atomic_int *)arg, 1);
}

int main(int argc, char **argv) {
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 1;
    opt.n_nodes = (size_t)(argc - 1);
    redlock_t *rl;
    if (redlock_new(&rl, &opt) != REDLOCK_OK) return 2;
    static atomic_int stop = 0;
    redlock_lock_t *lock = NULL;
    int ok = redlock_acquire(rl, "report:daily", 1000, &lock) == REDLOCK_OK;
    if (ok && redlock_autoextend(rl, lock, NULL, lost, &stop) != REDLOCK_OK) ok = 0;
    for (int step = 0; ok && step < 25; step++) {                         /* 25 steps of 100 ms */
        if (atomic_load(&stop) || !redlock_lock_valid(lock, 200)) ok = 0; /* right before a side effect */
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    if (lock) printf("extended %u times; %s\n", redlock_lock_extensions(lock), ok ? "never lost" : "lost");
    ok = ok && redlock_lock_extensions(lock) >= 2;
    if (lock && redlock_release(rl, lock) != REDLOCK_OK) ok = 0; /* stops the watchdog first */
    redlock_free(rl);
    return ok ? 0 : 1;
}
