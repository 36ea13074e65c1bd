/* bench_front.c -- the floor of a blocking API under many threads: COUNT
 * threads make blocking acquire + release calls, each handed to one libuv
 * loop thread that runs the non-blocking API (redlock_async_*), its thread
 * asleep until the call's callback wakes it. What it costs beyond one loop
 * thread with COUNT cycles in flight is what a thread per call costs: a
 * sleep and a wake-up each call, calls arriving one thread at a time.
 *
 *   bench_front -u URI,URI,... [-k THREADS] [-d SECONDS] [--warmup SECONDS]
 *               [--ttl MS] [--op-timeout MS] [--impl NAME]
 *   bench_front --version
 *
 * The front is built for speed: a thread queues its call and wakes the loop
 * (uv_async_send, which coalesces), then sleeps on a futex word of its own;
 * the loop starts every queued call in one redlock_async_batch(), from the
 * wake-up and from each callback, so the calls leave in one write per node
 * as the async API's own do. Each thread cycles on keys of its own (a new
 * key per cycle, as bench_redlock's concurrent workload). One RESULT line
 * (common.h): cycles/s over SECONDS after the warm-up, CPU per cycle of the
 * whole process. Diagnostics go to stderr; a run with an error exits 1. */
#define _GNU_SOURCE /* syscall */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <uv.h>

#include <redlock.h>
#include <redlock/libuv.h>

#include "common.h"
#include "handle.h"

enum { CALL_ACQUIRE = 1, CALL_RELEASE };

/* One thread of the front, and its call while it is out. */
typedef struct worker {
    struct worker *next; /* the loop's queue */
    int kind;
    char key[96];
    redlock_lock_t *lock;
    int rc;
    _Atomic uint32_t done; /* 1 once the call's callback ran */
    _Atomic uint64_t cycles;
    unsigned id;
    pthread_t thread;
} worker_t;

static struct {
    const char *impl;
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    double threads, secs, warmup, ttl, op_timeout;
} cfg = {.impl = "libredlock-front", .threads = 32, .secs = 2, .warmup = 0.5, .ttl = 10000, .op_timeout = 1000};

static uv_loop_t loop;
static uv_async_t wake;
static redlock_async_t *handle;
static pthread_mutex_t queue_mu = PTHREAD_MUTEX_INITIALIZER;
static worker_t *queue_head, *queue_tail;
static _Atomic int stopping, closing;
static _Atomic int first_error;

static void drain(void);

/* Ends w's call with rc and wakes its thread. */
static void finish(worker_t *w, int rc) {
    w->rc = rc;
    atomic_store_explicit(&w->done, 1, memory_order_release);
    syscall(SYS_futex, &w->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void on_acquired(redlock_lock_t *lock, int rc, const redlock_report_t *report, void *arg) {
    (void)report;
    worker_t *w = arg;
    w->lock = lock;
    finish(w, rc);
    drain(); /* what arrived meanwhile leaves with this dispatch */
}

static void on_released(int rc, const redlock_report_t *report, void *arg) {
    (void)report;
    finish(arg, rc);
    drain();
}

/* Starts the calls queued now (the loop's thread). */
static void start_queued(redlock_async_t *a, void *arg) {
    (void)arg;
    pthread_mutex_lock(&queue_mu);
    worker_t *w = queue_head;
    queue_head = queue_tail = NULL;
    pthread_mutex_unlock(&queue_mu);
    while (w) {
        worker_t *next = w->next;
        int rc = w->kind == CALL_ACQUIRE ? redlock_async_acquire(a, w->key, (uint32_t)cfg.ttl, 0, on_acquired, w)
                                         : redlock_async_release(a, w->lock, on_released, w);
        if (rc != REDLOCK_OK) finish(w, rc);
        w = next;
    }
}

static void drain(void) {
    redlock_async_batch(handle, start_queued, NULL);
}

/* The loop's wake-up: starts what was queued; at the end, frees the handle
 * and closes the wake-up so that uv_run returns. */
static void on_wake(uv_async_t *h) {
    drain();
    if (atomic_load(&closing)) {
        redlock_async_free(handle);
        handle = NULL;
        uv_close((uv_handle_t *)h, NULL);
    }
}

/* A blocking call through the front: queues w's call for the loop and
 * sleeps until its callback ran. Returns the call's code. */
static int call(worker_t *w, int kind) {
    w->kind = kind;
    w->next = NULL;
    atomic_store_explicit(&w->done, 0, memory_order_relaxed);
    pthread_mutex_lock(&queue_mu);
    if (queue_tail)
        queue_tail->next = w;
    else
        queue_head = w;
    queue_tail = w;
    pthread_mutex_unlock(&queue_mu);
    uv_async_send(&wake);
    while (!atomic_load_explicit(&w->done, memory_order_acquire))
        syscall(SYS_futex, &w->done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return w->rc;
}

/* A thread of the front: acquire + release cycles until the run stops. */
static void *work(void *arg) {
    worker_t *w = arg;
    for (uint64_t n = 0; !atomic_load(&stopping); n++) {
        snprintf(w->key, sizeof w->key, "bench:front:%u:t%u:%llu", (unsigned)getpid(), w->id, (unsigned long long)n);
        int rc = call(w, CALL_ACQUIRE);
        if (rc == REDLOCK_OK) rc = call(w, CALL_RELEASE);
        if (rc != REDLOCK_OK) {
            int none = 0;
            atomic_compare_exchange_strong(&first_error, &none, rc);
            break;
        }
        atomic_fetch_add_explicit(&w->cycles, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *run_loop(void *arg) {
    (void)arg;
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

static uint64_t total_cycles(const worker_t *w, unsigned n) {
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++) sum += atomic_load_explicit(&w[i].cycles, memory_order_relaxed);
    return sum;
}

/* Makes the loop and the handle on it; exits on failure. */
static void open_front(void) {
    redlock_options_t opt;
    bench_options_init(&opt, cfg.uris, cfg.n_nodes, (uint32_t)cfg.op_timeout);
    opt.connect_timeout_ms = 1000;
    opt.retry_count = 0;
    opt.retry_delay_ms = 0;
    opt.retry_jitter_ms = 0;
    int rc = uv_loop_init(&loop);
    if (rc == 0) rc = redlock_async_new(&handle, &opt) == REDLOCK_OK ? 0 : -1;
    if (rc == 0) rc = redlock_libuv_attach(handle, &loop) == REDLOCK_OK ? 0 : -1;
    if (rc == 0) rc = uv_async_init(&loop, &wake, on_wake);
    if (rc != 0) {
        fprintf(stderr, "bench_front: could not open the loop and its handle\n");
        exit(1);
    }
}

static void print_version(void) {
    printf("libredlock=%s libuv=%s\n", REDLOCK_VERSION, uv_version_string());
}

int main(int argc, char **argv) {
    static const char usage[] = "-u URI,URI,... [-k THREADS] [-d SECONDS] [--warmup SECONDS] [--ttl MS]\n"
                                "          [--op-timeout MS] [--impl NAME]\n";
    char *uri_list = NULL;
    const bench_opt_t opts[] = {
        {"-u", .list = &uri_list},
        {"-k", .num = &cfg.threads},
        {"-d", .num = &cfg.secs},
        {"--impl", .str = &cfg.impl},
        {"--warmup", .num = &cfg.warmup},
        {"--ttl", .num = &cfg.ttl},
        {"--op-timeout", .num = &cfg.op_timeout},
    };
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], print_version) != 0)
        bench_usage(argv[0], usage, 1);
    if (!uri_list || cfg.threads < 1 || cfg.threads > 4096 || cfg.secs <= 0) bench_usage(argv[0], usage, 1);
    cfg.n_nodes = bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES);
    if (!cfg.n_nodes) bench_usage(argv[0], usage, 1);
    unsigned n = (unsigned)cfg.threads;
    worker_t *w = calloc(n, sizeof *w);
    if (!w) return 1;
    open_front();
    pthread_t loop_thread;
    if (pthread_create(&loop_thread, NULL, run_loop, NULL) != 0) return 1;
    for (unsigned i = 0; i < n; i++) {
        w[i].id = i;
        if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) return 1;
    }
    bench_sleep_ms(cfg.warmup * 1000.0);
    uint64_t c0 = total_cycles(w, n), cpu0 = bench_cpu_us(), t0 = bench_now_ns();
    bench_sleep_ms(cfg.secs * 1000.0);
    uint64_t c1 = total_cycles(w, n), cpu1 = bench_cpu_us(), t1 = bench_now_ns();
    atomic_store(&stopping, 1);
    for (unsigned i = 0; i < n; i++) pthread_join(w[i].thread, NULL);
    atomic_store(&closing, 1);
    uv_async_send(&wake);
    pthread_join(loop_thread, NULL);
    int loop_err = uv_loop_close(&loop) != 0;

    uint64_t cycles = c1 - c0;
    double secs = (double)(t1 - t0) / 1e9;
    int err = atomic_load(&first_error);
    bench_line_begin(cfg.impl, "threads");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("threads", n);
    bench_kv_u64("cycles", cycles);
    bench_kv_f("secs", secs);
    bench_kv_f("cps", (double)cycles / secs);
    bench_kv_f("cpu_us_per_cycle", cycles ? (double)(cpu1 - cpu0) / (double)cycles : 0);
    bench_kv_str("first_error", err ? redlock_strerror(err) : "none");
    bench_line_end();
    free(w);
    if (err) fprintf(stderr, "bench_front: first error: %s\n", redlock_strerror(err));
    if (loop_err) fprintf(stderr, "bench_front: the loop still has live handles after redlock_async_free\n");
    return cycles && !err && !loop_err ? 0 : 1;
}
