/* asyncmode.c -- the async side of asyncmode.h: one libuv loop on a
 * background thread, an async handle per redlock_t (made on first use
 * from its options), and each call posted to the loop thread, which
 * starts the async call; the test thread waits for its callback. */
#define RL_ASYNCMODE_IMPL /* the real calls below, not the macros */
#include "asyncmode.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <redlock/libuv.h>

#include "rl.h"

#define TA_MAX 64

/* One request to the loop thread, and its answer. */
typedef struct ta_job {
    void (*fn)(struct ta_job *j); /* runs on the loop thread */
    redlock_t *rl;
    redlock_async_t *a;
    const char *resource;
    unsigned limit; /* a permit's acquire: its limit; 0 a mutex */
    int shared;     /* a reader's acquire */
    uint32_t ttl_ms;
    int64_t wait_ms;
    redlock_lock_t *lock;
    redlock_report_t *rep;
    const redlock_autoextend_options_t *aopt;
    redlock_lost_fn lost;
    void *lost_arg;
    redlock_stats_t *stats;
    int rc;
    int called; /* the call returned (rc) */
    int done;   /* the callback ran (or the call failed) */
    struct ta_job *next;
} ta_job_t;

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    ta_job_t *jobs;
    redlock_t *rl[TA_MAX];
    redlock_async_t *a[TA_MAX];
} T = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Marks j answered and wakes the test thread (loop thread). */
static void finish(ta_job_t *j) {
    pthread_mutex_lock(&T.mu);
    j->done = 1;
    pthread_cond_broadcast(&T.cv);
    pthread_mutex_unlock(&T.mu);
}

/* Runs the jobs posted since the last wake-up (loop thread). */
static void on_wake(uv_async_t *h) {
    (void)h;
    pthread_mutex_lock(&T.mu);
    ta_job_t *j = T.jobs;
    T.jobs = NULL;
    pthread_mutex_unlock(&T.mu);
    while (j) {
        ta_job_t *next = j->next;
        j->fn(j);
        j = next;
    }
}

/* The loop thread: runs forever (the test process exits around it). */
static void *loop_main(void *arg) {
    (void)arg;
    uv_run(&T.loop, UV_RUN_DEFAULT);
    return NULL;
}

/* Starts the loop thread once. */
static void start_loop(void) {
    uv_loop_init(&T.loop);
    uv_async_init(&T.loop, &T.wake, on_wake);
    pthread_create(&T.thread, NULL, loop_main, NULL);
}

/* Posts j to the loop thread and waits until it is answered. */
static int run(ta_job_t *j) {
    pthread_once(&T.once, start_loop);
    pthread_mutex_lock(&T.mu);
    j->next = T.jobs;
    T.jobs = j;
    pthread_mutex_unlock(&T.mu);
    uv_async_send(&T.wake);
    pthread_mutex_lock(&T.mu);
    while (!j->done) pthread_cond_wait(&T.cv, &T.mu);
    pthread_mutex_unlock(&T.mu);
    return j->rc;
}

/* The async handle paired with rl, made on first use (loop thread). */
static redlock_async_t *pair(redlock_t *rl) {
    for (int i = 0; i < TA_MAX; i++)
        if (T.rl[i] == rl) return T.a[i];
    for (int i = 0; i < TA_MAX; i++)
        if (!T.rl[i]) {
            redlock_async_t *a = NULL;
            redlock_options_t o;
            const char *cur[REDLOCK_MAX_NODES], *next[REDLOCK_MAX_NODES];
            rl_joint_options(rl, &o, cur, next);
            if (redlock_async_new(&a, &o) != REDLOCK_OK) return NULL;
            redlock_libuv_attach(a, &T.loop);
            T.rl[i] = rl;
            T.a[i] = a;
            return a;
        }
    return NULL;
}

/* Copies the callback's report into the caller's (if any). */
static void keep_report(ta_job_t *j, const redlock_report_t *rep) {
    if (j->rep && rep) memcpy(j->rep, rep, sizeof *rep);
}

static void acquired(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    ta_job_t *j = arg;
    j->lock = lock;
    j->rc = rc;
    keep_report(j, rep);
    finish(j);
}

static void done(int rc, const redlock_report_t *rep, void *arg) {
    ta_job_t *j = arg;
    j->rc = rc;
    keep_report(j, rep);
    finish(j);
}

/* Answers j with the call's rc when the call itself failed. */
static void called(ta_job_t *j, int rc) {
    j->called = 1;
    if (rc == REDLOCK_OK) return;
    j->rc = rc;
    finish(j);
}

static void do_acquire(ta_job_t *j) {
    j->a = pair(j->rl);
    if (j->shared)
        called(j, redlock_async_acquire_shared(j->a, j->resource, j->ttl_ms, j->wait_ms, acquired, j));
    else if (j->limit)
        called(j, redlock_async_acquire_permit(j->a, j->resource, j->limit, j->ttl_ms, j->wait_ms, acquired, j));
    else
        called(j, redlock_async_acquire(j->a, j->resource, j->ttl_ms, j->wait_ms, acquired, j));
}

static void do_release(ta_job_t *j) {
    called(j, redlock_async_release(pair(j->rl), j->lock, done, j));
}

static void do_extend(ta_job_t *j) {
    called(j, redlock_async_extend(pair(j->rl), j->lock, j->ttl_ms, done, j));
}

static void do_autoextend(ta_job_t *j) {
    j->rc = redlock_async_autoextend_ex(pair(j->rl), j->lock, j->aopt, j->lost, j->lost_arg);
    finish(j);
}

static void do_autoextend_stop(ta_job_t *j) {
    j->rc = redlock_async_autoextend_stop(pair(j->rl), j->lock);
    finish(j);
}

static void do_lock_free(ta_job_t *j) {
    redlock_lock_free(j->lock);
    finish(j);
}

static void do_free(ta_job_t *j) {
    for (int i = 0; i < TA_MAX; i++)
        if (T.rl[i] == j->rl) {
            redlock_async_free(T.a[i]);
            T.rl[i] = NULL;
            T.a[i] = NULL;
        }
    finish(j);
}

/* 1 when lock came from rl's paired async handle (else it is a blocking
 * lock: a set, or one made before the pairing). */
static int async_lock(const redlock_lock_t *lock) {
    return lock && lock->owner && lock->owner->is_async;
}

/* Fills rep (if any) for a call the async API refused as bad input. */
static void refused(redlock_t *rl, redlock_report_t *rep, const char *msg) {
    rl_report_begin(rl, rep);
    if (rep) rl_report_end(NULL, rep, REDLOCK_ERR_INVALID, msg);
}

#define TA_REFUSED 1 /* run_acquire: input refused: the caller makes the blocking call for its words */

/* Runs acquire job j; sets *out. Returns its code, or TA_REFUSED. */
static int run_acquire(ta_job_t *j, redlock_lock_t **out) {
    int rc = run(j);
    if (rc == REDLOCK_ERR_INVALID && !j->lock) return TA_REFUSED;
    *out = j->lock;
    return rc;
}

int ta_acquire_ex(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                  redlock_report_t *rep) {
    if (!rl || !out) return redlock_acquire_ex(rl, resource, ttl_ms, wait_ms, out, rep);
    ta_job_t j = {.fn = do_acquire, .rl = rl, .resource = resource, .ttl_ms = ttl_ms, .wait_ms = wait_ms, .rep = rep};
    int rc = run_acquire(&j, out);
    return rc == TA_REFUSED ? redlock_acquire_ex(rl, resource, ttl_ms, wait_ms, out, rep) : rc;
}

int ta_acquire_permit(redlock_t *rl, const char *resource, unsigned limit, uint32_t ttl_ms, int64_t wait_ms,
                      redlock_lock_t **out, redlock_report_t *rep) {
    if (!rl || !out || !limit) return redlock_acquire_permit(rl, resource, limit, ttl_ms, wait_ms, out, rep);
    ta_job_t j = {.fn = do_acquire,
                  .rl = rl,
                  .resource = resource,
                  .limit = limit,
                  .ttl_ms = ttl_ms,
                  .wait_ms = wait_ms,
                  .rep = rep};
    int rc = run_acquire(&j, out);
    return rc == TA_REFUSED ? redlock_acquire_permit(rl, resource, limit, ttl_ms, wait_ms, out, rep) : rc;
}

int ta_acquire_shared(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                      redlock_report_t *rep) {
    if (!rl || !out) return redlock_acquire_shared(rl, resource, ttl_ms, wait_ms, out, rep);
    ta_job_t j = {.fn = do_acquire,
                  .rl = rl,
                  .resource = resource,
                  .shared = 1,
                  .ttl_ms = ttl_ms,
                  .wait_ms = wait_ms,
                  .rep = rep};
    int rc = run_acquire(&j, out);
    return rc == TA_REFUSED ? redlock_acquire_shared(rl, resource, ttl_ms, wait_ms, out, rep) : rc;
}

int ta_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep) {
    if (!rl || !async_lock(lock)) return redlock_release_ex(rl, lock, rep);
    ta_job_t j = {.fn = do_release, .rl = rl, .lock = lock, .rep = rep};
    int rc = run(&j);
    if (rc == REDLOCK_ERR_INVALID) { /* refused: reported, and the handle freed, as the blocking call does */
        refused(rl, rep, "lock was acquired through another handle, or already released");
        ta_lock_free(lock);
    }
    return rc;
}

int ta_extend_ex(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep) {
    if (!rl || !async_lock(lock)) return redlock_extend_ex(rl, lock, ttl_ms, rep);
    ta_job_t j = {.fn = do_extend, .rl = rl, .lock = lock, .ttl_ms = ttl_ms, .rep = rep};
    int rc = run(&j);
    char msg[256];
    if (rc == REDLOCK_ERR_INVALID)
        refused(rl, rep, rl_check_ttl(rl, ttl_ms, msg, sizeof msg) ? msg : "lock was acquired through another handle");
    return rc;
}

int ta_autoextend(redlock_t *rl, redlock_lock_t *lock, const redlock_autoextend_options_t *opt, redlock_lost_fn fn,
                  void *arg) {
    if (!rl || !async_lock(lock)) return redlock_autoextend(rl, lock, opt, fn, arg);
    ta_job_t j = {.fn = do_autoextend, .rl = rl, .lock = lock, .aopt = opt, .lost = fn, .lost_arg = arg};
    return run(&j);
}

int ta_autoextend_stop(redlock_t *rl, redlock_lock_t *lock) {
    if (!rl || !async_lock(lock)) return redlock_autoextend_stop(rl, lock);
    ta_job_t j = {.fn = do_autoextend_stop, .rl = rl, .lock = lock};
    return run(&j);
}

void ta_lock_free(redlock_lock_t *lock) {
    if (!async_lock(lock)) {
        redlock_lock_free(lock);
        return;
    }
    ta_job_t j = {.fn = do_lock_free, .lock = lock};
    run(&j);
}

void ta_free(redlock_t *rl) {
    if (rl) {
        ta_job_t j = {.fn = do_free, .rl = rl};
        run(&j);
    }
    redlock_free(rl);
}

/* The paired async handle's counters (loop thread). */
static void do_stats(ta_job_t *j) {
    redlock_async_t *a = pair(j->rl);
    j->rc = a ? redlock_async_stats(a, j->stats) : REDLOCK_ERR_NOMEM;
    finish(j);
}

int ta_stats(redlock_t *rl, redlock_stats_t *out) {
    if (!rl) return redlock_stats(rl, out);
    ta_job_t j = {.fn = do_stats, .rl = rl, .stats = out};
    return run(&j);
}
