/* bench_redlock.c -- libredlock under the benchmark workloads, through the
 * public API only (include/redlock.h).
 *
 *   bench_redlock -u URI,URI,... -w WORKLOAD [-n CYCLES] [-d SECONDS] [-t THREADS]
 *                 [--warmup CYCLES] [--ttl MS] [--op-timeout MS] [--hold-us US]
 *                 [--retry-delay MS] [--retry-jitter MS] [--impl NAME]
 *                 [--fencing] [--max-ttl MS] [--clock-check MS] [--min-replicas N] [--no-stats]
 *                 [--next-uris URI,URI,...] [--lock-delay MS]
 *   bench_redlock --version
 *
 * Workloads (every one prints one RESULT line, see common.h):
 *   serial      one caller, acquire + release on distinct keys: latency
 *               p50/p99/p999 of the acquire and of the whole cycle, cycles/s,
 *               CPU µs per cycle (getrusage), heap calls per cycle.
 *   cpu         the same loop without per-cycle clock reads (CPU only).
 *   concurrent  THREADS threads sharing one redlock_t, each cycling on its own
 *               distinct keys, for SECONDS: cycles/s and cycle latency.
 *   contended   THREADS threads (8 by default) on ONE key, acquiring with the
 *               library's retries (short retry delay): grants/s and the
 *               handoff time, from the moment the holder calls
 *               redlock_release to the moment the next holder's acquire
 *               returns. Also checks that no two threads ever held it at once.
 *   stats       what redlock_stats' counters cost: two handles, counters on
 *               and off, one caller alternating blocks of 100 cycles between
 *               them for SECONDS, the process's CPU time of each block added
 *               to its handle's sum (blocks a few ms apart see the same
 *               machine, which separate runs a second apart do not):
 *               CPU µs per cycle of each and the difference in %.
 *   memory      THREADS threads run CYCLES cycles in total, after a warm-up of
 *               max(5000, 1 %) cycles in the same threads; VmRSS after the
 *               warm-up, at 25/50/75 % and at the end (and the largest seen).
 *
 * Degraded runs are the orchestrator's business (bench/core.sh pauses or kills
 * nodes before starting this program): the library returns at the quorum,
 * and op_timeout_ms defaults to a generous 1000 ms here so that a paused
 * node's requests are not what decides a round. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <redlock.h>

#include "allocs.h"
#include "common.h"
#include "handle.h"

typedef struct config {
    const char *workload, *impl;
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    const char *next_uris[BENCH_MAX_NODES]; /* a joint handle's next list (bench/membership.sh) */
    size_t n_next;
    double max_cycles, secs, warmup, threads, ttl, op_timeout, hold_us, retry_delay, retry_jitter;
    int fencing; /* with max_ttl and clock_check: the safety features whose cost the suite reports */
    double max_ttl, clock_check;
    double min_replicas; /* votes counted after replication (bench/replicated.sh) */
    int no_stats;        /* redlock_options_t.stats = 0: what the counters cost */
    double lock_delay;   /* redlock_options_t.lock_delay_ms (bench/lockdelay.sh) */
} config_t;

static config_t cfg = {
    .workload = NULL,
    .impl = "libredlock",
    .secs = 2,
    .warmup = 200,
    .threads = 0,
    .ttl = 10000,
    .op_timeout = 1000,
    .retry_delay = 2,
    .retry_jitter = 1,
    .clock_check = 1000,
};

static redlock_t *rl;
static unsigned pid;

/* The handle of the run: the suite's settings (generous timeouts, the
 * command line's safety features) with retry_count retries. */
static redlock_t *make_redlock(uint32_t retry_count) {
    redlock_options_t opt;
    bench_options_init(&opt, cfg.uris, cfg.n_nodes, (uint32_t)cfg.op_timeout);
    opt.connect_timeout_ms = 1000;
    opt.retry_count = retry_count;
    opt.retry_delay_ms = (uint32_t)cfg.retry_delay;
    opt.retry_jitter_ms = (uint32_t)cfg.retry_jitter;
    opt.fencing = cfg.fencing != 0;
    opt.max_ttl_ms = (uint32_t)cfg.max_ttl; /* > 0: restart quarantine and clock-jump checks */
    opt.clock_check_ms = (uint32_t)cfg.clock_check;
    opt.min_replicas = (uint32_t)cfg.min_replicas;
    opt.next_nodes = cfg.n_next ? cfg.next_uris : NULL;
    opt.n_next_nodes = cfg.n_next;
    opt.stats = cfg.no_stats == 0;
    opt.lock_delay_ms = (uint32_t)cfg.lock_delay;
    return bench_handle_new(&opt, "bench_redlock: redlock_new");
}

/* One acquire + release on key; returns the acquire's code. t_acq gets the
 * time the acquire returned (when non-NULL). */
static int cycle(const char *key, uint64_t *t_acq) {
    redlock_lock_t *lk = NULL;
    int rc = redlock_try_acquire(rl, key, (uint32_t)cfg.ttl, &lk);
    if (t_acq) *t_acq = bench_now_ns();
    if (rc == REDLOCK_OK) redlock_release(rl, lk);
    return rc;
}

/* Warm-up: connects and loads the scripts, fills the buffers. */
static void warm_up(uint64_t n) {
    char key[96];
    for (uint64_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "bench:lib:%u:warm:%llu", pid, (unsigned long long)i);
        cycle(key, NULL);
    }
}

/* ------------------------------------------------------------------- stats */

/* Runs n cycles on distinct keys through h (the run's handle meanwhile),
 * numbered from *seq, adding their heap calls to *al. Returns the process
 * CPU µs they took; *errors counts the acquires refused. */
static uint64_t stats_block(redlock_t *h, uint64_t n, uint64_t *seq, uint64_t *errors, bench_allocs_t *al) {
    char key[96];
    rl = h;
    bench_allocs_start();
    uint64_t cpu0 = bench_cpu_us();
    for (uint64_t i = 0; i < n; i++, (*seq)++) {
        snprintf(key, sizeof key, "bench:lib:%u:%llu", pid, (unsigned long long)*seq);
        if (cycle(key, NULL) != REDLOCK_OK) (*errors)++;
    }
    uint64_t cpu = bench_cpu_us() - cpu0;
    bench_allocs_t b = bench_allocs_stop();
    al->allocs += b.allocs;
    al->own_allocs += b.own_allocs;
    return cpu;
}

static int run_stats(void) {
    enum { BLOCK = 100 };
    redlock_t *h[2]; /* [0] counters off, [1] on */
    cfg.no_stats = 1;
    h[0] = make_redlock(0);
    cfg.no_stats = 0;
    h[1] = make_redlock(0);
    redlock_t *own = rl;
    for (int k = 0; k < 2; k++) rl = h[k], warm_up((uint64_t)cfg.warmup);
    uint64_t cpu[2] = {0, 0}, cycles[2] = {0, 0}, seq = 0, errors = 0;
    bench_allocs_t al[2] = {{0}, {0}};
    uint64_t t_start = bench_now_ns(), deadline = t_start + (uint64_t)(cfg.secs * 1e9);
    for (unsigned b = 0; bench_now_ns() < deadline; b++) {
        int k = (int)((b ^ (b >> 1)) & 1); /* off, on, on, off, ...: neither always goes first */
        cpu[k] += stats_block(h[k], BLOCK, &seq, &errors, &al[k]);
        cycles[k] += BLOCK;
    }
    double elapsed = (double)(bench_now_ns() - t_start) / 1e9;
    rl = own;
    for (int k = 0; k < 2; k++) redlock_free(h[k]);
    double off = cycles[0] ? (double)cpu[0] / (double)cycles[0] : 0,
           on = cycles[1] ? (double)cpu[1] / (double)cycles[1] : 0;
    bench_line_begin(cfg.impl, "stats");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("cycles", cycles[0] + cycles[1]);
    bench_kv_u64("block", BLOCK);
    bench_kv_f("secs", elapsed);
    bench_kv_f("cps", elapsed > 0 ? (double)(cycles[0] + cycles[1]) / elapsed : 0);
    bench_kv_f("cpu_off_us_per_cycle", off);
    bench_kv_f("cpu_on_us_per_cycle", on);
    bench_kv_f("stats_pct", off > 0 ? (on / off - 1) * 100 : 0);
    static const char *const side[2] = {"off", "on"};
    char name[48];
    for (int k = 0; k < 2; k++) {
        double c = cycles[k] ? (double)cycles[k] : 1;
        snprintf(name, sizeof name, "allocs_%s_per_cycle", side[k]);
        bench_kv_f(name, (double)al[k].allocs / c);
        snprintf(name, sizeof name, "own_allocs_%s_per_cycle", side[k]);
        bench_kv_f(name, (double)al[k].own_allocs / c);
    }
    bench_kv_u64("errors", errors);
    bench_line_end();
    return cycles[0] && cycles[1] ? 0 : 1;
}

/* ------------------------------------------------------------------ serial */

static int run_serial(int timed) {
    size_t cap = cfg.max_cycles > 0 ? (size_t)cfg.max_cycles : (size_t)(cfg.secs * 200000.0) + 1000;
    bench_samples_t acq = {0}, cyc = {0};
    if (timed) {
        bench_samples_init(&acq, cap);
        bench_samples_init(&cyc, cap);
    }
    warm_up((uint64_t)cfg.warmup);
    char key[96];
    uint64_t cycles = 0, errors = 0;
    uint64_t t_start = bench_now_ns(), deadline = t_start + (uint64_t)(cfg.secs * 1e9);
    uint64_t cpu_start = bench_cpu_us();
    bench_allocs_start();
    for (;; cycles++) {
        if (cfg.max_cycles > 0 && cycles >= (uint64_t)cfg.max_cycles) break;
        if ((timed || (cycles & 63) == 0) && bench_now_ns() >= deadline) break;
        snprintf(key, sizeof key, "bench:lib:%u:%llu", pid, (unsigned long long)cycles);
        if (timed) {
            uint64_t t0 = bench_now_ns(), t1;
            if (cycle(key, &t1) != REDLOCK_OK) errors++;
            uint64_t t2 = bench_now_ns();
            bench_samples_add(&acq, t1 - t0);
            bench_samples_add(&cyc, t2 - t0);
        } else if (cycle(key, NULL) != REDLOCK_OK) {
            errors++;
        }
    }
    bench_allocs_t al = bench_allocs_stop();
    uint64_t cpu = bench_cpu_us() - cpu_start;
    double elapsed = (double)(bench_now_ns() - t_start) / 1e9;

    bench_line_begin(cfg.impl, timed ? "serial" : "cpu");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("threads", 1);
    bench_kv_u64("cycles", cycles);
    bench_kv_f("secs", elapsed);
    bench_kv_f("cps", elapsed > 0 ? (double)cycles / elapsed : 0);
    if (timed) {
        bench_kv_quantiles("acq", &acq);
        bench_kv_quantiles("cyc", &cyc);
    }
    double c = cycles ? (double)cycles : 1;
    bench_kv_f("cpu_us_per_cycle", (double)cpu / c);
    bench_kv_f("allocs_per_cycle", (double)al.allocs / c);
    bench_kv_f("frees_per_cycle", (double)al.frees / c);
    bench_kv_f("own_allocs_per_cycle", (double)al.own_allocs / c);
    bench_kv_f("own_frees_per_cycle", (double)al.own_frees / c);
    bench_kv_u64("errors", errors);
    bench_line_end();
    if (timed) {
        bench_samples_free(&acq);
        bench_samples_free(&cyc);
    }
    return cycles ? 0 : 1;
}

/* -------------------------------------------------------- threaded workloads */

typedef struct worker {
    pthread_t th;
    unsigned id;
    uint64_t cycles, errors, quota; /* quota: memory workload's share, else 0 */
    uint64_t warm;                  /* memory: warm-up cycles before the measured part */
    bench_samples_t lat;            /* concurrent: cycle; contended: handoff */
    uint64_t finished_ns;
} worker_t;

static pthread_barrier_t start_barrier;
static pthread_barrier_t warm_barrier, go_barrier; /* memory: after the workers' warm-up */
static atomic_int stop_flag;
static atomic_ullong progress; /* memory: cycles done by all workers */
static long rss_quarter_kb[4]; /* memory: VmRSS once 25/50/75/100 % of the cycles were done */
static uint64_t run_start_ns;

/* contended */
static atomic_ullong last_release_ns; /* when the last holder called redlock_release */
static atomic_int holders;            /* threads that believe they hold the lock */
static atomic_ullong violations;      /* times two held it at once */

static void *concurrent_main(void *arg) {
    worker_t *w = arg;
    char key[96];
    pthread_barrier_wait(&start_barrier);
    if (w->warm) { /* memory: every thread warms up (its arena, its stack), then the RSS is read */
        for (uint64_t k = 0; k < w->warm; k++) {
            snprintf(key, sizeof key, "bench:lib:%u:t%u:warm:%llu", pid, w->id, (unsigned long long)k);
            cycle(key, NULL);
        }
        pthread_barrier_wait(&warm_barrier);
        pthread_barrier_wait(&go_barrier);
    }
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed) && (!w->quota || w->cycles < w->quota)) {
        snprintf(key, sizeof key, "bench:lib:%u:t%u:%llu", pid, w->id, (unsigned long long)w->cycles);
        uint64_t t0 = bench_now_ns();
        if (cycle(key, NULL) != REDLOCK_OK) w->errors++;
        bench_samples_add(&w->lat, bench_now_ns() - t0);
        w->cycles++;
        if (w->quota) atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    w->finished_ns = bench_now_ns();
    return NULL;
}

static void *contended_main(void *arg) {
    worker_t *w = arg;
    char key[96];
    snprintf(key, sizeof key, "bench:lib:%u:contended", pid);
    struct timespec hold = {0, (long)(cfg.hold_us * 1000.0)};
    pthread_barrier_wait(&start_barrier);
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        redlock_lock_t *lk = NULL;
        /* bounded wait so the thread notices the end of the run */
        int rc = redlock_acquire_ex(rl, key, (uint32_t)cfg.ttl, 500, &lk, NULL);
        if (rc != REDLOCK_OK) {
            if (rc != REDLOCK_ERR_TAKEN) w->errors++;
            continue;
        }
        uint64_t granted = bench_now_ns();
        if (atomic_fetch_add(&holders, 1) != 0) atomic_fetch_add(&violations, 1);
        uint64_t prev = atomic_load(&last_release_ns);
        if (prev && granted > prev) bench_samples_add(&w->lat, granted - prev);
        w->cycles++;
        if (hold.tv_nsec) nanosleep(&hold, NULL);
        atomic_fetch_sub(&holders, 1);
        atomic_store(&last_release_ns, bench_now_ns());
        redlock_release(rl, lk);
    }
    w->finished_ns = bench_now_ns();
    return NULL;
}

/* Starts n workers on fn, lets them run for cfg.secs (or until their quotas
 * are done), joins them. Returns the workers (caller frees). With a quota
 * (memory), each worker first runs `warm` cycles; then *rss_before_kb is
 * read and heap counting starts, and *rss_max_kb tracks VmRSS. */
static worker_t *run_workers(unsigned n, void *(*fn)(void *), uint64_t total_quota, uint64_t warm, size_t lat_cap,
                             long *rss_before_kb, long *rss_max_kb) {
    worker_t *ws = calloc(n, sizeof *ws);
    if (!ws) exit(1);
    pthread_barrier_init(&start_barrier, NULL, n + 1);
    pthread_barrier_init(&warm_barrier, NULL, n + 1);
    pthread_barrier_init(&go_barrier, NULL, n + 1);
    atomic_store(&stop_flag, 0);
    for (unsigned i = 0; i < n; i++) {
        ws[i].id = i;
        ws[i].quota = total_quota ? total_quota / n + (i < total_quota % n) : 0;
        ws[i].warm = total_quota ? warm : 0;
        bench_samples_init(&ws[i].lat, lat_cap);
        if (pthread_create(&ws[i].th, NULL, fn, &ws[i]) != 0) {
            fprintf(stderr, "bench_redlock: pthread_create failed\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&start_barrier);
    if (total_quota && warm) {
        pthread_barrier_wait(&warm_barrier);
        if (rss_before_kb) *rss_before_kb = bench_rss_kb();
        if (rss_max_kb) *rss_max_kb = rss_before_kb ? *rss_before_kb : 0;
        bench_allocs_start();
        pthread_barrier_wait(&go_barrier);
    }
    run_start_ns = bench_now_ns();
    if (total_quota) { /* memory: run until the quotas are done, sampling RSS */
        for (;;) {
            struct timespec tick = {0, 200 * 1000 * 1000};
            nanosleep(&tick, NULL);
            long kb = bench_rss_kb();
            if (rss_max_kb && kb > *rss_max_kb) *rss_max_kb = kb;
            uint64_t p = atomic_load_explicit(&progress, memory_order_relaxed);
            for (int q = 0; q < 4; q++)
                if (!rss_quarter_kb[q] && p * 4 >= total_quota * (uint64_t)(q + 1)) rss_quarter_kb[q] = kb;
            uint64_t done = 0;
            for (unsigned i = 0; i < n; i++) done += ws[i].finished_ns != 0;
            if (done == n) break;
        }
    } else {
        struct timespec d = {(time_t)cfg.secs, (long)((cfg.secs - (double)(time_t)cfg.secs) * 1e9)};
        nanosleep(&d, NULL);
        atomic_store(&stop_flag, 1);
    }
    for (unsigned i = 0; i < n; i++) pthread_join(ws[i].th, NULL);
    pthread_barrier_destroy(&start_barrier);
    pthread_barrier_destroy(&warm_barrier);
    pthread_barrier_destroy(&go_barrier);
    return ws;
}

/* Totals of a finished run. */
typedef struct totals {
    uint64_t cycles, errors;
    double elapsed;
    bench_samples_t lat;
} totals_t;

static totals_t sum_workers(worker_t *ws, unsigned n) {
    totals_t t = {0};
    uint64_t end = run_start_ns;
    bench_samples_init(&t.lat, 1);
    for (unsigned i = 0; i < n; i++) {
        t.cycles += ws[i].cycles;
        t.errors += ws[i].errors;
        if (ws[i].finished_ns > end) end = ws[i].finished_ns;
        bench_samples_merge(&t.lat, &ws[i].lat);
        bench_samples_free(&ws[i].lat);
    }
    t.elapsed = (double)(end - run_start_ns) / 1e9;
    return t;
}

static int run_concurrent(void) {
    unsigned n = cfg.threads > 0 ? (unsigned)cfg.threads : 1;
    warm_up((uint64_t)cfg.warmup);
    size_t cap = (size_t)(cfg.secs * 200000.0 / n) + 1000;
    uint64_t cpu_start = bench_cpu_us();
    bench_allocs_start();
    worker_t *ws = run_workers(n, concurrent_main, 0, 0, cap, NULL, NULL);
    bench_allocs_t al = bench_allocs_stop();
    uint64_t cpu = bench_cpu_us() - cpu_start;
    totals_t t = sum_workers(ws, n);
    double c = t.cycles ? (double)t.cycles : 1;
    bench_line_begin(cfg.impl, "concurrent");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("threads", n);
    bench_kv_u64("cycles", t.cycles);
    bench_kv_f("secs", t.elapsed);
    bench_kv_f("cps", t.elapsed > 0 ? (double)t.cycles / t.elapsed : 0);
    bench_kv_quantiles("cyc", &t.lat);
    bench_kv_f("cpu_us_per_cycle", (double)cpu / c);
    bench_kv_f("allocs_per_cycle", (double)al.allocs / c);
    bench_kv_f("own_allocs_per_cycle", (double)al.own_allocs / c);
    bench_kv_u64("errors", t.errors);
    bench_line_end();
    bench_samples_free(&t.lat);
    free(ws);
    return t.cycles ? 0 : 1;
}

static int run_contended(void) {
    unsigned n = cfg.threads > 0 ? (unsigned)cfg.threads : 8;
    size_t cap = (size_t)(cfg.secs * 100000.0) + 1000;
    worker_t *ws = run_workers(n, contended_main, 0, 0, cap, NULL, NULL);
    totals_t t = sum_workers(ws, n);
    bench_line_begin(cfg.impl, "contended");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("threads", n);
    bench_kv_u64("grants", t.cycles);
    bench_kv_f("secs", t.elapsed);
    bench_kv_f("grants_per_s", t.elapsed > 0 ? (double)t.cycles / t.elapsed : 0);
    bench_kv_quantiles("handoff", &t.lat);
    bench_kv_f("retry_delay_ms", cfg.retry_delay);
    bench_kv_f("retry_jitter_ms", cfg.retry_jitter);
    bench_kv_u64("violations", atomic_load(&violations));
    bench_kv_u64("errors", t.errors);
    bench_line_end();
    bench_samples_free(&t.lat);
    free(ws);
    return t.cycles && !atomic_load(&violations) ? 0 : 1;
}

static int run_memory(void) {
    unsigned n = cfg.threads > 0 ? (unsigned)cfg.threads : 1;
    uint64_t total = cfg.max_cycles > 0 ? (uint64_t)cfg.max_cycles : 1000000u;
    long rss_start = bench_rss_kb();
    warm_up((uint64_t)cfg.warmup);
    /* each thread warms up too, the threads together at least 5000 cycles
     * (or 1 % of the run): enough for the request ring of every node (4096
     * slots by default, two requests per cycle) to have been walked once,
     * so that its pages -- calloc'd, resident only once touched -- are in
     * the "before" figure and a growth afterwards means something. */
    uint64_t warm = (total / 100 > 5000 ? total / 100 : 5000) / n;
    if (warm < 200) warm = 200;
    long rss_before = 0, rss_max = 0;
    worker_t *ws = run_workers(n, concurrent_main, total, warm, 1, &rss_before, &rss_max);
    bench_allocs_t al = bench_allocs_stop();
    long rss_after = bench_rss_kb();
    if (rss_after > rss_max) rss_max = rss_after;
    totals_t t = sum_workers(ws, n);
    bench_line_begin(cfg.impl, "memory");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("threads", n);
    bench_kv_u64("cycles", t.cycles);
    bench_kv_f("secs", t.elapsed);
    bench_kv_f("cps", t.elapsed > 0 ? (double)t.cycles / t.elapsed : 0);
    bench_kv_u64("rss_start_kb", (uint64_t)rss_start);
    bench_kv_u64("rss_before_kb", (uint64_t)rss_before);
    bench_kv_u64("rss_after_kb", (uint64_t)rss_after);
    bench_kv_u64("rss_max_kb", (uint64_t)rss_max);
    for (int q = 0; q < 3; q++) { /* the last quarter is rss_after */
        char k[32];
        snprintf(k, sizeof k, "rss_at_%d_pct_kb", 25 * (q + 1));
        bench_kv_u64(k, (uint64_t)(rss_quarter_kb[q] ? rss_quarter_kb[q] : rss_after));
    }
    bench_kv_f("allocs_per_cycle", t.cycles ? (double)al.allocs / (double)t.cycles : 0);
    bench_kv_f("frees_per_cycle", t.cycles ? (double)al.frees / (double)t.cycles : 0);
    bench_kv_u64("errors", t.errors);
    bench_line_end();
    bench_samples_free(&t.lat);
    free(ws);
    return t.cycles == total ? 0 : 1;
}

/* -------------------------------------------------------------------- main */

static const char USAGE[] =
    "-u URI,URI,... -w serial|cpu|stats|concurrent|contended|memory\n"
    "          [-n CYCLES] [-d SECONDS] [-t THREADS] [--warmup CYCLES] [--ttl MS]\n"
    "          [--op-timeout MS] [--hold-us US] [--retry-delay MS] [--retry-jitter MS]\n"
    "          [--impl NAME] [--fencing] [--max-ttl MS] [--clock-check MS] [--min-replicas N]"
    " [--no-stats]\n"
    "          [--lock-delay MS]\n"
    "          [--next-uris URI,URI,... (a joint handle: every grant needs a quorum of each list)]\n";

int main(int argc, char **argv) {
    char *uri_list = NULL, *next_list = NULL;
    const bench_opt_t opts[] = {
        {"-u", .list = &uri_list},
        {"--next-uris", .list = &next_list},
        {"-w", .str = &cfg.workload},
        {"--impl", .str = &cfg.impl},
        {"-n", .num = &cfg.max_cycles},
        {"-d", .num = &cfg.secs},
        {"-t", .num = &cfg.threads},
        {"--warmup", .num = &cfg.warmup},
        {"--ttl", .num = &cfg.ttl},
        {"--op-timeout", .num = &cfg.op_timeout},
        {"--hold-us", .num = &cfg.hold_us},
        {"--retry-delay", .num = &cfg.retry_delay},
        {"--retry-jitter", .num = &cfg.retry_jitter},
        {"--fencing", .set = &cfg.fencing},
        {"--no-stats", .set = &cfg.no_stats},
        {"--max-ttl", .num = &cfg.max_ttl},
        {"--clock-check", .num = &cfg.clock_check},
        {"--min-replicas", .num = &cfg.min_replicas},
        {"--lock-delay", .num = &cfg.lock_delay},
    };
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], bench_print_version) != 0)
        bench_usage(argv[0], USAGE, 1);
    if (!uri_list || !cfg.workload || !cfg.impl) bench_usage(argv[0], USAGE, 1);
    cfg.n_nodes = bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES);
    if (!cfg.n_nodes) bench_usage(argv[0], USAGE, 1);
    if (next_list && !(cfg.n_next = bench_split_uris(next_list, cfg.next_uris, BENCH_MAX_NODES)))
        bench_usage(argv[0], USAGE, 1);
    if (cfg.hold_us >= 1e6) cfg.hold_us = 999999;
    pid = (unsigned)getpid();

    const char *w = cfg.workload;
    int contended = !strcmp(w, "contended");
    /* distinct keys: one attempt per acquire; contended: retry until the wait bound */
    rl = make_redlock(contended ? 1000000u : 0u);
    int rc;
    if (!strcmp(w, "serial"))
        rc = run_serial(1);
    else if (!strcmp(w, "cpu"))
        rc = run_serial(0);
    else if (!strcmp(w, "stats"))
        rc = run_stats();
    else if (!strcmp(w, "concurrent"))
        rc = run_concurrent();
    else if (contended)
        rc = run_contended();
    else if (!strcmp(w, "memory"))
        rc = run_memory();
    else
        bench_usage(argv[0], USAGE, 1), rc = 2;
    redlock_free(rl);
    return rc;
}
