/* test_threads.c -- 16 threads sharing one redlock_t over 5 real masters:
 * on distinct resources every call succeeds at once; on one shared
 * resource the critical sections never overlap and no update is lost. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "rltest.h"

#define THREADS 16

static tc_cluster_t C;
static redlock_t *RL;

static void setup(void) {
    rt_setup(&C);
}

TestSuite(threads, .init = setup, .timeout = 300);

/* Writes the call's result and the first failed node's detail into buf. */
static void describe_failure(char *buf, size_t n, int rc, const redlock_report_t *rep) {
    const redlock_node_report_t *bad = NULL;
    for (size_t i = 0; i < rep->n_nodes && !bad; i++)
        if (rep->nodes[i].vote >= REDLOCK_VOTE_TIMEOUT) bad = &rep->nodes[i];
    snprintf(buf, n, "%s; %zu yes %zu no %zu failed; first failure: %s %s (%.60s)", redlock_strerror(rc), rep->yes,
             rep->no, rep->failed, bad ? bad->node : "-", bad ? redlock_vote_name(bad->vote) : "-",
             bad ? bad->detail : "");
}

typedef struct worker {
    int id, rounds, ok, failed;
    char error[256];
} worker_t;

/* Distinct resources: each thread locks its own key `rounds` times. */
static void *distinct_worker(void *arg) {
    worker_t *w = arg;
    char key[32];
    snprintf(key, sizeof key, "thr:%d", w->id);
    for (int i = 0; i < w->rounds; i++) {
        redlock_lock_t *lk = NULL;
        redlock_report_t rep;
        int rc = redlock_acquire_ex(RL, key, 10000, 0, &lk, &rep);
        if (rc == REDLOCK_OK) rc = redlock_release(RL, lk);
        if (rc == REDLOCK_OK) {
            w->ok++;
        } else {
            w->failed++;
            describe_failure(w->error, sizeof w->error, rc, &rep);
        }
    }
    return NULL;
}

Test(threads, distinct_resources_all_succeed) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 1000; /* 16 threads on 2 cores, maybe under a sanitizer */
    RL = rt_new(&C, 5, &o);
    pthread_t t[THREADS];
    worker_t w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){.id = i, .rounds = 100};
        pthread_create(&t[i], NULL, distinct_worker, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failed, 0, "thread %d: %d failures, last: %s", i, w[i].failed, w[i].error);
    /* Releases return at a quorum; the other nodes finish theirs a moment
     * later. Every key must be gone from every node. */
    for (int i = 0; i < 5; i++) {
        long long keys = -1;
        for (int tries = 0; tries < 200 && keys != 0; tries++) {
            redisContext *ctx = tc_connect(&C, i);
            redisReply *r = redisCommand(ctx, "DBSIZE");
            keys = r ? r->integer : -1;
            freeReplyObject(r);
            redisFree(ctx);
            if (keys) rt_sleep_ms(10);
        }
        cr_assert_eq(keys, 0, "node %d kept %lld keys", i, keys);
    }
    redlock_free(RL);
}

/* Shared state guarded only by the distributed lock. */
static atomic_int inside;   /* holders currently in the critical section */
static atomic_int overlaps; /* times a holder found another inside */
static long counter;        /* plain read-modify-write: races show as lost updates */

/* Shared resource: acquire with retries, then a read-sleep-write. */
static void *shared_worker(void *arg) {
    worker_t *w = arg;
    for (int i = 0; i < w->rounds; i++) {
        redlock_lock_t *lk = NULL;
        redlock_report_t rep;
        int rc = redlock_acquire_ex(RL, "thr:shared", 5000, -1, &lk, &rep);
        if (rc != REDLOCK_OK) {
            w->failed++;
            describe_failure(w->error, sizeof w->error, rc, &rep);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0) atomic_fetch_add(&overlaps, 1);
        long v = counter;
        rt_sleep_ms(1);
        counter = v + 1;
        atomic_fetch_sub(&inside, 1);
        int64_t left = redlock_lock_validity_ms(lk);
        rc = redlock_release(RL, lk);
        if (rc != REDLOCK_OK) {
            w->failed++;
            snprintf(w->error, sizeof w->error, "release: %s (validity left %lld ms)", redlock_strerror(rc),
                     (long long)left);
            continue;
        }
        w->ok++;
    }
    return NULL;
}

Test(threads, shared_resource_is_mutually_exclusive) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 1000;
    o.retry_count = 100000;
    o.retry_delay_ms = 4;
    o.retry_jitter_ms = 3;
    RL = rt_new(&C, 5, &o);
    atomic_store(&inside, 0);
    atomic_store(&overlaps, 0);
    counter = 0;
    pthread_t t[THREADS];
    worker_t w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){.id = i, .rounds = 15};
        pthread_create(&t[i], NULL, shared_worker, &w[i]);
    }
    int ok = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ok += w[i].ok;
        cr_assert_eq(w[i].failed, 0, "thread %d: %d failures, last: %s", i, w[i].failed, w[i].error);
    }
    cr_assert_eq(atomic_load(&overlaps), 0, "critical sections overlapped %d times", atomic_load(&overlaps));
    cr_assert_eq(ok, THREADS * 15);
    cr_assert_eq(counter, ok, "lost updates: counter %ld after %d locked increments", counter, ok);
    redlock_free(RL);
}
