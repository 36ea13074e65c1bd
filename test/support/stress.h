/* stress.h -- what the plain-program stress tests (test/stress/) share:
 * they run without Criterion (its runner cannot run under
 * ThreadSanitizer), so checks are counted here and each program prints
 * one line per failed check and "N passed, M failed". Header-only: a
 * program includes it once. Needs the fixture cluster
 * ($REDLOCK_CLUSTER_DIR) and pthreads. */
#ifndef REDLOCK_TEST_SUPPORT_STRESS_H
#define REDLOCK_TEST_SUPPORT_STRESS_H
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster.h"
#include "redlock.h"
#include "rttime.h"

static tc_cluster_t C;
static int passed, failed;

#define CHECK(cond, ...)                                \
    do {                                                \
        if (cond) {                                     \
            passed++;                                   \
        } else {                                        \
            failed++;                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
        }                                               \
    } while (0)

/* Options over the cluster's nodes with generous timeouts for slow builds,
 * retrying every delay_ms +- jitter_ms, waiting op_timeout_ms for a reply.
 * uris must outlive the call to stress_rl. */
static inline void stress_options(redlock_options_t *o, const char *uris[TC_MAX_NODES], uint32_t retries,
                                  uint32_t delay_ms, uint32_t jitter_ms, uint32_t op_timeout_ms) {
    for (int i = 0; i < C.n; i++) uris[i] = C.uri[i];
    redlock_options_init(o);
    o->nodes = uris;
    o->n_nodes = (size_t)C.n;
    o->op_timeout_ms = op_timeout_ms;
    o->connect_timeout_ms = 2000;
    o->node_down_ms = 5000;
    o->retry_count = retries;
    o->retry_delay_ms = delay_ms;
    o->retry_jitter_ms = jitter_ms;
}

/* A redlock_t from o; exits the program when it cannot be made. */
static inline redlock_t *stress_rl(const redlock_options_t *o) {
    redlock_t *rl = NULL;
    char err[256];
    if (redlock_new_ex(&rl, o, err, sizeof err) != REDLOCK_OK) {
        printf("redlock_new: %s\n", err);
        exit(1);
    }
    return rl;
}

/* Starts fn on the n threads t[0..n-1], each given its index; exits the
 * program when one cannot be made. */
static inline void start_threads(pthread_t *t, int n, void *(*fn)(void *)) {
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i) != 0) {
            printf("pthread_create failed\n");
            exit(1);
        }
}

static inline void join_threads(pthread_t *t, int n) {
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

/* Runs fn on n (<= 64) threads, each given its index, and waits for them. */
static inline void run_threads(int n, void *(*fn)(void *)) {
    pthread_t t[64];
    start_threads(t, n, fn);
    join_threads(t, n);
}

/* Seconds from the environment variable var when it says more than 2,
 * else dflt (the sanitizer and valgrind runs set it short). */
static inline int stress_seconds(const char *var, int dflt) {
    const char *env = getenv(var);
    return env && atoi(env) > 2 ? atoi(env) : dflt;
}

/* Loads and heals the cluster; exits when there is none. */
static inline void stress_begin(void) {
    if (tc_cluster_load(&C) != 0) {
        printf("no test cluster\n");
        exit(1);
    }
    tc_cluster_heal(&C);
}

/* Heals the cluster, prints the tally and returns the exit status. */
static inline int stress_end(void) {
    tc_cluster_heal(&C);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
