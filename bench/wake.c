/* wake.c -- what one thread waking another costs on this machine, for
 * reading the blocking API's figures: each blocking call sleeps while its
 * round is out and is woken once it is decided, so a call pays at least one
 * wake-up and one context switch, which the non-blocking API, one loop
 * thread, does not.
 *
 *   wake [-n ROUND_TRIPS]
 *
 * Two threads pass a turn back and forth on two futex words (FUTEX_WAIT /
 * FUTEX_WAKE, as the blocking engine's sleepers do): a round trip is two
 * wake-ups and two context switches. Measured twice: free to run on any
 * core (the other thread's core is usually idle, so the wake-up must
 * rouse it), then both threads pinned to one core (the wake-up only
 * switches). One RESULT line on stdout: the mean µs per round trip of each. */
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_SET */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static _Atomic uint32_t turn_word[2]; /* 1: that side may go */
static unsigned trips = 100000;
static int pin_core = -1; /* the core both threads run on, or -1: any */

/* Gives the turn to side i and wakes it. */
static void give(int i) {
    atomic_store_explicit(&turn_word[i], 1, memory_order_release);
    syscall(SYS_futex, &turn_word[i], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleeps until side i has the turn, and takes it. */
static void take(int i) {
    while (!atomic_load_explicit(&turn_word[i], memory_order_acquire))
        syscall(SYS_futex, &turn_word[i], FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    atomic_store_explicit(&turn_word[i], 0, memory_order_relaxed);
}

/* Pins the calling thread to pin_core, when one is set. Returns 0/-1. */
static int pin(void) {
    if (pin_core < 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin_core, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
}

/* The other side: answers every turn it is given. */
static void *partner(void *arg) {
    (void)arg;
    if (pin() < 0) return NULL;
    for (unsigned k = 0; k < trips; k++) {
        take(1);
        give(0);
    }
    return NULL;
}

/* Times `trips` round trips with the threads on core `core` (-1: any).
 * Returns the mean µs per round trip, or -1 when a thread could not start
 * or be pinned. */
static double round_trip_us(int core) {
    pin_core = core;
    atomic_store(&turn_word[0], 0);
    atomic_store(&turn_word[1], 0);
    pthread_t th;
    if (pthread_create(&th, NULL, partner, NULL) != 0) return -1;
    int ok = pin() == 0;
    uint64_t t0 = bench_now_ns();
    for (unsigned k = 0; ok && k < trips; k++) {
        give(1);
        take(0);
    }
    uint64_t t1 = bench_now_ns();
    if (!ok) give(1); /* (the partner may be waiting for its first turn) */
    pthread_join(th, NULL);
    return ok ? (double)(t1 - t0) / 1e3 / trips : -1;
}

int main(int argc, char **argv) {
    const bench_opt_t opts[] = {{.flag = "-n", .uns = &trips}};
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], NULL) != 0)
        bench_usage(argv[0], "[-n ROUND_TRIPS]\n", 0);
    if (!trips) trips = 1;
    double any = round_trip_us(-1);
    int core = sched_getcpu();
    double one = round_trip_us(core < 0 ? 0 : core);
    bench_line_begin("futex", "wake");
    bench_kv_u64("round_trips", trips);
    bench_kv_f("any_core_us", any);
    bench_kv_f("one_core_us", one);
    bench_line_end();
    return any < 0 || one < 0 ? 1 : 0;
}
