/* bench_scale.c -- cost in the number of locks and waiters (doc/design.md,
 * "Cost flat in locks and waiters"), through the public
 * API only (include/redlock.h and the libuv adapter). Options are the
 * library's defaults (redlock_options_init, only the nodes set): what a
 * user who changes nothing gets.
 *
 *   bench_scale -u URI,URI,... -w held|async|blocking|autoext [options]
 *   bench_scale --version
 *
 * held      One redlock_t. 16 threads (--threads) take distinct resources
 *           (TTL 600 s, one attempt each) in slices of --slice (10 000)
 *           locks until the handle holds each of --levels (default
 *           0,1000,10000,100000) in turn; at each level the main thread,
 *           holding nothing itself, runs --probes (300) acquire + release
 *           cycles of ONE other resource (wait_ms 0) and the p50 / p99 are
 *           printed. Each slice's wall time / its locks is the time per lock
 *           in that slice (flat: linear total; growing: quadratic). At the
 *           largest level reached: heap in use (mallinfo2, every arena) and
 *           RSS against the start, per held lock; then every lock is
 *           released (the same threads, the same slices, timed), and heap and
 *           RSS are read again (RSS also after malloc_trim(0)).
 *           --bound SECONDS bounds each step (one level to the next, and the
 *           release): a step past it stops taking (or releasing), the level
 *           is reported as not reached (reached=0, with how many were held)
 *           and the run goes on with what it has.
 * async     Handoff on the non-blocking API: a holder redlock_async_t takes
 *           -k N resources (TTL 600 s); a waiter redlock_async_t on the same
 *           libuv loop asks for each of them with wait_ms -1 (an acquire that
 *           still ends REDLOCK_ERR_TAKEN after its retry_count retries is
 *           asked again at once, as bench_handoff does). Once the waiter's
 *           stats count N waits (or 3 s after the last was asked:
 *           all_waiting=0), 200 ms settle (the burst of N attempts and
 *           subscriptions has left the connections' buffers: heap read at
 *           the moment N counted is heap_per_pending_burst), heap and RSS
 *           are read (bytes per pending acquire), then --samples (30)
 *           times: the holder releases ONE
 *           resource (a different one each time when N > 1); the handoff is
 *           the time from just before the release call to the start of the
 *           waiter's grant callback for it. The waiter then releases it, the
 *           holder takes it again and the waiter asks again (so N stay
 *           pending), and --settle-ms (50) pass before the next sample.
 * blocking  The same with the blocking API: a holder redlock_t (main thread)
 *           and one waiter redlock_t shared by N threads (one per resource,
 *           each in redlock_acquire_ex with wait_ms -1, 256 KiB stacks).
 * autoext   One redlock_t; --threads threads take -k K resources (TTL --ttl,
 *           10 000 ms) and start redlock_autoextend on each (default
 *           options: every ttl/3). Once every lock has been extended at
 *           least once, a window of --window (20) seconds: process CPU
 *           (getrusage, minus the sampling thread's own) per second of wall
 *           time, and every 100 ms each lock's redlock_lock_validity_ms. An
 *           extension on time leaves validity at least
 *             due = ttl - drift(ttl) - interval,  drift = ttl/100 + 2 ms
 *           (the validity a fresh extension gives, one interval later);
 *           lateness = due - the least validity seen (0 when never below).
 *           The sampling misses up to 100 ms of a lateness (plus one sweep).
 *           Then every lock is released (timed).
 *
 * Every run prints its rows and machine-readable lines on stdout:
 *   RESULT impl=libredlock workload=NAME key=value ...
 * (latencies in µs). Diagnostics go to stderr. A run that passes
 * --deadline SECONDS in all prints what it has with timed_out=1 and exits;
 * one whose own checks cannot run (a loop that never returns to its timer)
 * is ended 15 s later by a thread of its own, with hung=1. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <redlock.h>
#include <redlock/libuv.h>

#include "common.h"
#include "handle.h"

#define HELD_TTL_MS 600000u

typedef struct config {
    const char *workload;
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    const char *levels;
    double slice, threads, probes, bound, k, samples, settle_ms, ttl, window, deadline;
} config_t;

static config_t cfg = {
    .levels = "0,1000,10000,100000",
    .slice = 10000,
    .threads = 16,
    .probes = 300,
    .bound = 120,
    .k = 1000,
    .samples = 30,
    .settle_ms = 50,
    .ttl = 10000,
    .window = 20,
    .deadline = 300,
};

static redlock_options_t defaults;
static uint64_t t_start_ns;

static void die(const char *what, int rc) {
    fprintf(stderr, "bench_scale: %s: %s\n", what, redlock_strerror(rc));
    exit(1);
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "bench_scale: out of memory\n");
        exit(1);
    }
    return p;
}

static double secs_since(uint64_t t0) {
    return (double)(bench_now_ns() - t0) / 1e9;
}

/* The whole run's bound: past it, print what is known and leave. */
static int past_deadline(void) {
    return secs_since(t_start_ns) > cfg.deadline;
}

/* Heap bytes in use, all arenas: small chunks plus mmap'd ones. */
static double heap_bytes(void) {
    struct mallinfo2 m = mallinfo2();
    return (double)(m.uordblks + m.hblkhd);
}

static uint64_t thread_cpu_us(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void name_of(char *buf, size_t len, const char *kind, size_t i) {
    snprintf(buf, len, "bench:scale:%ld:%s:%zu", (long)getpid(), kind, i);
}

/* A blocking handle with the defaults, connected to every node with the
 * scripts loaded before any clock starts; exits if refused. */
static redlock_t *new_blocking(void) {
    char prefix[48];
    snprintf(prefix, sizeof prefix, "bench:scale:%ld", (long)getpid());
    return bench_handle_warm(bench_handle_new(&defaults, "bench_scale: redlock_new"), prefix);
}

/* ------------------------------------------------------- parallel filling */

/* A batch of resources 0..n-1 taken (or released) by cfg.threads threads,
 * each claiming the next index, until done or past stop_ns. */
typedef struct batch {
    redlock_t *rl;
    const char *kind;
    redlock_lock_t **locks;
    size_t from, to;
    atomic_size_t next;
    atomic_ulong errors;
    uint64_t stop_ns;
    uint32_t ttl_ms;
    int release, autoextend;
} batch_t;

static atomic_ulong lost_locks;

static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    (void)lock;
    (void)reason;
    (void)arg;
    atomic_fetch_add(&lost_locks, 1);
}

static void *batch_main(void *arg) {
    batch_t *b = arg;
    char name[96];
    for (;;) {
        if (bench_now_ns() > b->stop_ns) break;
        size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->to) break;
        if (b->release) {
            if (b->locks[i]) {
                int rc = redlock_release(b->rl, b->locks[i]);
                b->locks[i] = NULL;
                if (rc != REDLOCK_OK && atomic_fetch_add(&b->errors, 1) < 3)
                    fprintf(stderr, "bench_scale: release: %s\n", redlock_strerror(rc));
            }
            continue;
        }
        name_of(name, sizeof name, b->kind, i);
        int rc = REDLOCK_OK;
        for (int attempt = 0; attempt < 3; attempt++) {
            rc = redlock_try_acquire(b->rl, name, b->ttl_ms, &b->locks[i]);
            if (rc == REDLOCK_OK) break;
        }
        if (rc != REDLOCK_OK) {
            if (atomic_fetch_add(&b->errors, 1) < 3)
                fprintf(stderr, "bench_scale: acquire: %s\n", redlock_strerror(rc));
            continue;
        }
        if (b->autoextend) {
            rc = redlock_autoextend(b->rl, b->locks[i], NULL, on_lost, NULL);
            if (rc != REDLOCK_OK && atomic_fetch_add(&b->errors, 1) < 3)
                fprintf(stderr, "bench_scale: autoextend: %s\n", redlock_strerror(rc));
        }
    }
    return NULL;
}

/* Runs the batch from..to; returns the index reached (every index below it
 * was handled), which is below `to` when stop_ns came first. */
static size_t batch_run(batch_t *b, size_t from, size_t to) {
    unsigned n = (unsigned)cfg.threads;
    pthread_t th[256];
    if (n > 256) n = 256;
    if (n < 1) n = 1;
    b->from = from;
    b->to = to;
    atomic_store(&b->next, from);
    for (unsigned i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, batch_main, b) != 0) {
            fprintf(stderr, "bench_scale: pthread_create failed\n");
            exit(1);
        }
    for (unsigned i = 0; i < n; i++) pthread_join(th[i], NULL);
    size_t reached = atomic_load(&b->next);
    return reached < to ? reached : to;
}

/* -------------------------------------------------------------------- held */

static size_t parse_levels(size_t *lv, size_t max) {
    size_t n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", cfg.levels);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        lv[n++] = (size_t)bench_arg_num("--levels", t);
    for (size_t i = 1; i < n; i++)
        if (lv[i] <= lv[i - 1]) {
            fprintf(stderr, "bench_scale: --levels must grow\n");
            exit(2);
        }
    return n;
}

static void probe(redlock_t *rl, size_t held, int reached, double step_s) {
    char name[96];
    name_of(name, sizeof name, "probe", 0);
    bench_samples_t s;
    size_t n = (size_t)cfg.probes;
    bench_samples_init(&s, n);
    unsigned errors = 0;
    for (size_t i = 0; i < n + 20; i++) { /* 20 first cycles: warm-up */
        redlock_lock_t *lk = NULL;
        uint64_t t0 = bench_now_ns();
        int rc = redlock_acquire_ex(rl, name, 10000, 0, &lk, NULL);
        if (rc == REDLOCK_OK) rc = redlock_release(rl, lk);
        uint64_t t1 = bench_now_ns();
        if (rc != REDLOCK_OK) {
            errors++;
            continue;
        }
        if (i >= 20) bench_samples_add(&s, t1 - t0);
    }
    double p50 = bench_quantile_us(&s, 0.5), p99 = bench_quantile_us(&s, 0.99);
    fprintf(stderr, "held %7zu%s: acquire+release p50 %8.1f us  p99 %8.1f us  (%zu cycles, %u errors)\n", held,
            reached ? "" : " (level not reached)", p50, p99, s.n, errors);
    bench_line_begin("libredlock", "held");
    bench_kv_u64("held", held);
    bench_kv_u64("reached", (uint64_t)reached);
    bench_kv_f("step_s", step_s);
    bench_kv_u64("cycles", s.n);
    bench_kv_u64("errors", errors);
    bench_kv_f("p50_us", p50);
    bench_kv_f("p99_us", p99);
    bench_line_end();
    bench_samples_free(&s);
}

static int run_held(void) {
    size_t lv[32];
    size_t n_lv = parse_levels(lv, 32), max = lv[n_lv - 1];
    size_t slice = cfg.slice >= 1 ? (size_t)cfg.slice : 10000;
    redlock_t *rl = new_blocking();
    batch_t b = {.rl = rl, .kind = "h", .locks = xcalloc(max, sizeof(redlock_lock_t *)), .ttl_ms = HELD_TTL_MS};
    char name[96];
    name_of(name, sizeof name, "h", max - 1);
    size_t name_len = strlen(name) + 1;

    probe(rl, 0, 1, 0); /* level 0 also warms the handle up */
    double heap0 = heap_bytes();
    long rss0 = bench_rss_kb();
    uint64_t fill_t0 = bench_now_ns();
    size_t held = 0;
    int stopped = 0;
    for (size_t l = 0; l < n_lv && !stopped; l++) {
        if (lv[l] == 0) continue;
        uint64_t step_t0 = bench_now_ns();
        b.stop_ns = step_t0 + (uint64_t)(cfg.bound * 1e9);
        while (held < lv[l]) {
            size_t to = (held / slice + 1) * slice;
            if (to > lv[l]) to = lv[l];
            uint64_t t0 = bench_now_ns();
            size_t reached = batch_run(&b, held, to);
            double s = secs_since(t0);
            bench_line_begin("libredlock", "held_slice");
            bench_kv_u64("from", held);
            bench_kv_u64("to", reached);
            bench_kv_f("secs", s);
            bench_kv_f("us_per_lock", reached > held ? s * 1e6 / (double)(reached - held) : 0);
            bench_kv_u64("complete", reached == to);
            bench_line_end();
            fprintf(stderr, "  took %zu..%zu: %.2f s, %.1f us per lock\n", held, reached, s,
                    reached > held ? s * 1e6 / (double)(reached - held) : 0);
            held = reached;
            if (reached < to) {
                stopped = 1;
                break;
            }
        }
        probe(rl, stopped ? held : lv[l], !stopped, secs_since(step_t0));
        if (stopped) {
            fprintf(stderr, "bench_scale: level %zu not reached in %.0f s (bound): %zu held\n", lv[l], cfg.bound, held);
            bench_line_begin("libredlock", "held_bound");
            bench_kv_u64("level", lv[l]);
            bench_kv_u64("held", held);
            bench_kv_f("bound_s", cfg.bound);
            bench_line_end();
        }
    }
    double fill_s = secs_since(fill_t0);
    double heap1 = heap_bytes();
    long rss1 = bench_rss_kb();

    /* release everything, timed by slice, bounded */
    uint64_t rel_t0 = bench_now_ns();
    b.release = 1;
    b.stop_ns = rel_t0 + (uint64_t)(cfg.bound * 1e9);
    size_t released = 0;
    while (released < held) {
        size_t to = released + slice < held ? released + slice : held;
        uint64_t t0 = bench_now_ns();
        size_t reached = batch_run(&b, released, to);
        double s = secs_since(t0);
        bench_line_begin("libredlock", "release_slice");
        bench_kv_u64("from", released);
        bench_kv_u64("to", reached);
        bench_kv_f("secs", s);
        bench_kv_f("us_per_lock", reached > released ? s * 1e6 / (double)(reached - released) : 0);
        bench_line_end();
        released = reached;
        if (reached < to) break;
    }
    double rel_s = secs_since(rel_t0);
    double heap2 = heap_bytes();
    long rss2 = bench_rss_kb();
    malloc_trim(0);
    long rss3 = bench_rss_kb();
    double per = held ? (heap1 - heap0) / (double)held : 0;
    fprintf(stderr,
            "took %zu locks in %.1f s; heap %.0f B per lock (%.0f beyond the %zu-byte name), RSS %.0f B per lock;\n"
            "released %zu in %.1f s: heap %+.0f KiB vs start (peak %+.0f KiB), RSS %+ld KiB (%+ld after malloc_trim)\n",
            held, fill_s, per, per - (double)name_len, name_len,
            held ? ((double)rss1 - (double)rss0) * 1024.0 / (double)held : 0, released, rel_s, (heap2 - heap0) / 1024.0,
            (heap1 - heap0) / 1024.0, rss2 - rss0, rss3 - rss0);
    bench_line_begin("libredlock", "held_mem");
    bench_kv_u64("held", held);
    bench_kv_u64("target", max);
    bench_kv_f("fill_s", fill_s);
    bench_kv_u64("name_bytes", name_len);
    bench_kv_f("heap_per_lock", per);
    bench_kv_f("heap_per_lock_beyond_name", per - (double)name_len);
    bench_kv_f("rss_per_lock", held ? ((double)rss1 - (double)rss0) * 1024.0 / (double)held : 0);
    bench_kv_f("heap_start_kb", heap0 / 1024.0);
    bench_kv_f("heap_peak_kb", heap1 / 1024.0);
    bench_kv_f("heap_after_release_kb", heap2 / 1024.0);
    bench_kv_u64("rss_start_kb", (uint64_t)rss0);
    bench_kv_u64("rss_peak_kb", (uint64_t)rss1);
    bench_kv_u64("rss_after_release_kb", (uint64_t)rss2);
    bench_kv_u64("rss_after_trim_kb", (uint64_t)rss3);
    bench_kv_u64("released", released);
    bench_kv_f("release_s", rel_s);
    bench_kv_u64("errors", atomic_load(&b.errors));
    bench_line_end();
    if (released < held) {
        fprintf(stderr, "bench_scale: release stopped at its bound: %zu locks left to expire\n", held - released);
        fflush(NULL);
        _exit(0); /* freeing would release them: the cluster is flushed by the script */
    }
    free(b.locks);
    redlock_free(rl);
    return 0;
}

/* ------------------------------------------------------------------- async */

static uv_loop_t loop;
static redlock_async_t *holder_a, *waiter_a;

typedef struct res {
    size_t i;
    redlock_lock_t *held; /* the holder's lock */
} res_t;

static struct {
    size_t n, issued_hold, done_hold, issued_wait, sample_i, settle_left;
    res_t *res;
    bench_samples_t handoff;
    uint64_t t0_ns, phase_t0;
    uint64_t reissues, stray_grants, errors, missed;
    int phase; /* 0 hold, 1 wait, 2 ready, 3 sampling, 4 done */
    int sampling, stopping;
    int all_waiting; /* the waiter's stats counted N waits when memory was read (else 3 s had passed) */
    double heap0, heap1, heap_burst;
    long rss0, rss1;
    uint64_t cpu0, rounds0, wall0;
    double cpu_pct, rounds_per_s;
} as;

static void as_issue_wait(res_t *r);

static uint64_t async_rounds(redlock_async_t *a) {
    static redlock_stats_t st;
    return redlock_async_stats(a, &st) == REDLOCK_OK ? st.rounds.count : 0;
}

static uint64_t async_waits(redlock_async_t *a) {
    static redlock_stats_t st;
    return redlock_async_stats(a, &st) == REDLOCK_OK ? st.waits : 0;
}

static void on_hold(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    res_t *r = arg;
    as.done_hold++;
    if (rc == REDLOCK_ERR_TAKEN && as.phase == 3 && !as.stopping) {
        /* the waiter's release had not reached a quorum yet: again */
        char name[96];
        name_of(name, sizeof name, "w", r->i);
        as.done_hold--;
        rc = redlock_async_acquire(holder_a, name, HELD_TTL_MS, 0, on_hold, r);
        if (rc != REDLOCK_OK) die("redlock_async_acquire (holder)", rc);
        return;
    }
    if (rc != REDLOCK_OK && !as.stopping) { /* e.g. a round timed out under the load: again, bounded */
        if (as.errors++ < 3) fprintf(stderr, "bench_scale: holder acquire: %s (asked again)\n", redlock_strerror(rc));
        if (as.errors > 1000) die("holder acquire, 1000 failures", rc);
        char name[96];
        name_of(name, sizeof name, "w", r->i);
        as.done_hold--;
        rc = redlock_async_acquire(holder_a, name, HELD_TTL_MS, 0, on_hold, r);
        if (rc != REDLOCK_OK) die("redlock_async_acquire (holder)", rc);
        return;
    }
    if (rc != REDLOCK_OK) return;
    r->held = lock;
    if (as.phase == 3) as_issue_wait(r); /* taken again after a sample: the waiter asks again */
}

static void on_wait(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    res_t *r = arg;
    uint64_t t1 = bench_now_ns();
    if (rc == REDLOCK_ERR_CANCELLED || as.stopping) {
        if (lock) redlock_lock_free(lock);
        return;
    }
    if (rc == REDLOCK_ERR_TAKEN) { /* out of retries: still waiting, ask again */
        as.reissues++;
        as_issue_wait(r);
        return;
    }
    if (rc != REDLOCK_OK) {
        if (as.errors++ < 3) fprintf(stderr, "bench_scale: waiter acquire: %s\n", redlock_strerror(rc));
        as_issue_wait(r);
        return;
    }
    if (as.sampling && r->i == as.sample_i) {
        bench_samples_add(&as.handoff, t1 - as.t0_ns);
        as.sampling = 0;
        as.settle_left = (size_t)(cfg.settle_ms / 10) + 1;
    } else {
        as.stray_grants++;
    }
    redlock_async_release(waiter_a, lock, NULL, NULL);
    /* the holder takes it back, then the waiter asks again (on_hold) */
    char name[96];
    name_of(name, sizeof name, "w", r->i);
    rc = redlock_async_acquire(holder_a, name, HELD_TTL_MS, 0, on_hold, r);
    if (rc != REDLOCK_OK) die("redlock_async_acquire (holder)", rc);
}

static void as_issue_wait(res_t *r) {
    char name[96];
    name_of(name, sizeof name, "w", r->i);
    int rc = redlock_async_acquire(waiter_a, name, 10000, -1, on_wait, r);
    if (rc != REDLOCK_OK) die("redlock_async_acquire (waiter)", rc);
}

static void as_report(int timed_out) {
    size_t n = as.n;
    double per = (as.heap1 - as.heap0) / (double)n;
    char name[96];
    name_of(name, sizeof name, "w", n - 1);
    size_t name_len = strlen(name) + 1;
    double p50 = bench_quantile_us(&as.handoff, 0.5), p99 = bench_quantile_us(&as.handoff, 0.99);
    fprintf(stderr,
            "async, %zu waiting: handoff p50 %.1f us p99 %.1f us (%zu samples, %llu missed); %.0f B heap per "
            "pending acquire; waiter rounds %.0f/s, CPU %.0f %% of a core; %llu re-asked after TAKEN%s\n",
            n, p50, p99, as.handoff.n, (unsigned long long)as.missed, per, as.rounds_per_s, as.cpu_pct,
            (unsigned long long)as.reissues, timed_out ? " (TIMED OUT)" : "");
    bench_line_begin("libredlock", "async");
    bench_kv_u64("waiters", n);
    bench_kv_u64("timed_out", (uint64_t)timed_out);
    bench_kv_u64("phase", (uint64_t)as.phase);
    bench_kv_u64("all_waiting", (uint64_t)as.all_waiting);
    bench_kv_u64("samples", as.handoff.n);
    bench_kv_u64("missed", as.missed);
    bench_kv_f("handoff_p50_us", p50);
    bench_kv_f("handoff_p99_us", p99);
    bench_kv_f("handoff_max_us", bench_quantile_us(&as.handoff, 1.0));
    bench_kv_u64("name_bytes", name_len);
    bench_kv_f("heap_per_pending", as.phase >= 3 ? per : 0);
    bench_kv_f("heap_per_pending_beyond_name", as.phase >= 3 ? per - (double)name_len : 0);
    bench_kv_f("heap_per_pending_burst", as.phase >= 2 ? (as.heap_burst - as.heap0) / (double)n : 0);
    bench_kv_f("rss_per_pending", as.phase >= 3 ? ((double)as.rss1 - (double)as.rss0) * 1024.0 / (double)n : 0);
    bench_kv_f("waiter_rounds_per_s", as.rounds_per_s);
    bench_kv_f("cpu_pct", as.cpu_pct);
    bench_kv_u64("reissues", as.reissues);
    bench_kv_u64("stray_grants", as.stray_grants);
    bench_kv_u64("errors", as.errors);
    bench_line_end();
}

/* Every 10 ms: moves the run along (filling in batches, waiting for the
 * waits, pacing the samples). */
static void on_tick(uv_timer_t *t) {
    if (past_deadline()) {
        as_report(1);
        fflush(NULL);
        _exit(0); /* the keys are left to the script's flush */
    }
    switch (as.phase) {
    case 0: /* the holder takes every resource, 100 in flight at most */
        while (as.issued_hold < as.n && as.issued_hold - as.done_hold < 100) {
            res_t *r = &as.res[as.issued_hold++];
            char name[96];
            name_of(name, sizeof name, "w", r->i);
            int rc = redlock_async_acquire(holder_a, name, HELD_TTL_MS, 0, on_hold, r);
            if (rc != REDLOCK_OK) die("redlock_async_acquire (holder)", rc);
        }
        if (as.done_hold == as.n) {
            as.heap0 = heap_bytes();
            as.rss0 = bench_rss_kb();
            as.phase = 1;
        }
        break;
    case 1: /* the waiter asks for each, 200 per tick */
        for (size_t k = 0; k < 200 && as.issued_wait < as.n; k++) as_issue_wait(&as.res[as.issued_wait++]);
        if (as.issued_wait < as.n) as.phase_t0 = bench_now_ns(); /* then: since the last was asked */
        as.all_waiting = async_waits(waiter_a) >= as.n;
        if (as.issued_wait == as.n && (as.all_waiting || bench_now_ns() - as.phase_t0 > 3000000000ull)) {
            as.heap_burst = heap_bytes();
            as.phase = 2;
            as.settle_left = 20; /* 200 ms */
            as.wall0 = bench_now_ns();
            as.cpu0 = bench_cpu_us();
            as.rounds0 = async_rounds(waiter_a);
        }
        break;
    case 2: /* the waits settle: then what they hold is read */
        if (--as.settle_left) break;
        as.heap1 = heap_bytes();
        as.rss1 = bench_rss_kb();
        as.phase = 3;
        break;
    case 3:
        if (as.sampling) {
            if (bench_now_ns() - as.t0_ns > 10000000000ull) { /* 10 s without the grant */
                as.missed++;
                as.sampling = 0;
                as.settle_left = 1;
            }
            break;
        }
        if (as.settle_left && --as.settle_left) break;
        if (as.handoff.n + as.missed >= (size_t)cfg.samples) {
            double wall = (double)(bench_now_ns() - as.wall0) / 1e9;
            as.cpu_pct = (double)(bench_cpu_us() - as.cpu0) / 1e4 / wall;
            as.rounds_per_s = (double)(async_rounds(waiter_a) - as.rounds0) / wall;
            as.phase = 4;
            uv_timer_stop(t);
            uv_stop(&loop);
            break;
        }
        {
            size_t k = as.handoff.n + as.missed;
            res_t *r = &as.res[(k * 7919u) % as.n];
            if (!r->held) { /* not taken back yet */
                as.settle_left = 1;
                break;
            }
            as.sample_i = r->i;
            as.sampling = 1;
            redlock_lock_t *lk = r->held;
            r->held = NULL;
            as.t0_ns = bench_now_ns();
            int rc = redlock_async_release(holder_a, lk, NULL, NULL);
            if (rc != REDLOCK_OK) die("redlock_async_release (holder)", rc);
        }
        break;
    default: break;
    }
}

static redlock_async_t *new_async(void) {
    char err[256];
    redlock_async_t *a = NULL;
    int rc = redlock_async_new_ex(&a, &defaults, err, sizeof err);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "bench_scale: redlock_async_new: %s: %s\n", redlock_strerror(rc), err);
        exit(1);
    }
    rc = redlock_libuv_attach(a, &loop);
    if (rc != REDLOCK_OK) die("redlock_libuv_attach", rc);
    return a;
}

static void on_release_counted(int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    size_t *left = arg;
    if (rc != REDLOCK_OK) as.errors++;
    if (--*left == 0) uv_stop(&loop);
}

static int run_async(void) {
    as.n = cfg.k >= 1 ? (size_t)cfg.k : 1;
    as.res = xcalloc(as.n, sizeof *as.res);
    for (size_t i = 0; i < as.n; i++) as.res[i].i = i;
    bench_samples_init(&as.handoff, (size_t)cfg.samples + 1);
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "bench_scale: uv_loop_init failed\n");
        return 1;
    }
    holder_a = new_async();
    waiter_a = new_async();
    as.phase_t0 = bench_now_ns();
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_tick, 10, 10);
    uv_run(&loop, UV_RUN_DEFAULT);
    as_report(0);

    /* the end: the waiter's pending acquires are cancelled by its free, then
     * the holder releases what it holds */
    as.stopping = 1;
    uv_timer_stop(&tick);
    uv_close((uv_handle_t *)&tick, NULL);
    redlock_async_free(waiter_a);
    size_t left = 1;
    for (size_t i = 0; i < as.n; i++)
        if (as.res[i].held) {
            left++;
            if (redlock_async_release(holder_a, as.res[i].held, on_release_counted, &left) != REDLOCK_OK) left--;
            as.res[i].held = NULL;
        }
    if (--left) uv_run(&loop, UV_RUN_DEFAULT);
    redlock_async_free(holder_a);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) fprintf(stderr, "bench_scale: uv_loop_close: live handles left\n");
    bench_samples_free(&as.handoff);
    free(as.res);
    return 0;
}

/* ---------------------------------------------------------------- blocking */

enum { CMD_WAIT, CMD_PAUSE, CMD_STOP };

typedef struct bwaiter {
    pthread_t th;
    size_t i;
    int cmd;        /* under bs.mu */
    int granted;    /* under bs.mu: the grant of the current sample came */
    uint64_t t1_ns; /* when it came */
} bwaiter_t;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    redlock_t *holder, *waiter;
    bwaiter_t *w;
    size_t n;
    atomic_ulong reissues, errors, stray;
    atomic_size_t joined;
    size_t sample_i;
    int sampling;
} bs = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *bwaiter_main(void *arg) {
    bwaiter_t *w = arg;
    char name[96];
    name_of(name, sizeof name, "b", w->i);
    for (;;) {
        pthread_mutex_lock(&bs.mu);
        while (w->cmd == CMD_PAUSE) pthread_cond_wait(&bs.cond, &bs.mu);
        int stop = w->cmd == CMD_STOP;
        pthread_mutex_unlock(&bs.mu);
        if (stop) break;
        redlock_lock_t *lk = NULL;
        int rc = redlock_acquire_ex(bs.waiter, name, 10000, -1, &lk, NULL);
        uint64_t t1 = bench_now_ns();
        if (rc == REDLOCK_ERR_TAKEN) {
            atomic_fetch_add(&bs.reissues, 1);
            continue;
        }
        if (rc == REDLOCK_ERR_CANCELLED) continue;
        if (rc != REDLOCK_OK) {
            if (atomic_fetch_add(&bs.errors, 1) < 3) fprintf(stderr, "bench_scale: waiter: %s\n", redlock_strerror(rc));
            bench_sleep_ms(1);
            continue;
        }
        redlock_release(bs.waiter, lk);
        pthread_mutex_lock(&bs.mu);
        if (bs.sampling && bs.sample_i == w->i) {
            w->granted = 1;
            w->t1_ns = t1;
        } else {
            atomic_fetch_add(&bs.stray, 1);
        }
        if (w->cmd != CMD_STOP) w->cmd = CMD_PAUSE;
        pthread_cond_broadcast(&bs.cond);
        pthread_mutex_unlock(&bs.mu);
    }
    atomic_fetch_add(&bs.joined, 1);
    return NULL;
}

static uint64_t blocking_waits(redlock_t *rl) {
    static redlock_stats_t st;
    return redlock_stats(rl, &st) == REDLOCK_OK ? st.waits : 0;
}

static uint64_t blocking_rounds(redlock_t *rl) {
    static redlock_stats_t st;
    return redlock_stats(rl, &st) == REDLOCK_OK ? st.rounds.count : 0;
}

static int run_blocking(void) {
    size_t n = cfg.k >= 1 ? (size_t)cfg.k : 1;
    bs.n = n;
    bs.holder = new_blocking();
    bs.waiter = new_blocking();
    redlock_lock_t **held = xcalloc(n, sizeof *held);
    char name[96];
    uint64_t setup_t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        name_of(name, sizeof name, "b", i);
        int rc = redlock_try_acquire(bs.holder, name, HELD_TTL_MS, &held[i]);
        if (rc != REDLOCK_OK) die("holder acquire", rc);
    }
    bs.w = xcalloc(n, sizeof *bs.w);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (size_t i = 0; i < n; i++) {
        bs.w[i].i = i;
        if (pthread_create(&bs.w[i].th, &attr, bwaiter_main, &bs.w[i]) != 0) {
            fprintf(stderr, "bench_scale: pthread_create failed at %zu threads\n", i);
            exit(1);
        }
    }
    pthread_attr_destroy(&attr);
    int timed_out = 0;
    while (blocking_waits(bs.waiter) < n) {
        if (past_deadline()) {
            timed_out = 1;
            break;
        }
        bench_sleep_ms(10);
    }
    double setup_s = secs_since(setup_t0);
    bench_sleep_ms(200);
    bench_samples_t s;
    bench_samples_init(&s, (size_t)cfg.samples + 1);
    uint64_t missed = 0, wall0 = bench_now_ns(), cpu0 = bench_cpu_us(), rounds0 = blocking_rounds(bs.waiter);
    for (size_t k = 0; !timed_out && k < (size_t)cfg.samples; k++) {
        if (past_deadline()) {
            timed_out = 1;
            break;
        }
        size_t i = (k * 7919u) % n;
        bwaiter_t *w = &bs.w[i];
        pthread_mutex_lock(&bs.mu);
        bs.sample_i = i;
        bs.sampling = 1;
        w->granted = 0;
        pthread_mutex_unlock(&bs.mu);
        uint64_t t0 = bench_now_ns();
        int rc = redlock_release(bs.holder, held[i]);
        held[i] = NULL;
        if (rc != REDLOCK_OK) die("holder release", rc);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&bs.mu);
        while (!w->granted && pthread_cond_timedwait(&bs.cond, &bs.mu, &until) == 0) {
        }
        int got = w->granted;
        uint64_t t1 = w->t1_ns;
        bs.sampling = 0;
        pthread_mutex_unlock(&bs.mu);
        if (got)
            bench_samples_add(&s, t1 - t0);
        else
            missed++;
        /* the holder takes it back (the waiter has released it), then the
         * waiter waits again */
        for (int tries = 0; tries < 100; tries++) {
            name_of(name, sizeof name, "b", i);
            rc = redlock_try_acquire(bs.holder, name, HELD_TTL_MS, &held[i]);
            if (rc == REDLOCK_OK) break;
            bench_sleep_ms(1);
        }
        if (rc != REDLOCK_OK) die("holder acquire again", rc);
        pthread_mutex_lock(&bs.mu);
        if (w->cmd == CMD_PAUSE) w->cmd = CMD_WAIT;
        pthread_cond_broadcast(&bs.cond);
        pthread_mutex_unlock(&bs.mu);
        bench_sleep_ms(cfg.settle_ms);
    }
    double wall = secs_since(wall0);
    double cpu_pct = (double)(bench_cpu_us() - cpu0) / 1e4 / wall;
    double rounds_per_s = (double)(blocking_rounds(bs.waiter) - rounds0) / wall;
    double p50 = bench_quantile_us(&s, 0.5), p99 = bench_quantile_us(&s, 0.99);
    fprintf(stderr,
            "blocking, %zu waiting threads: handoff p50 %.1f us p99 %.1f us (%zu samples, %llu missed); waiter rounds "
            "%.0f/s, CPU %.0f %% of a core; %lu re-asked after TAKEN%s\n",
            n, p50, p99, s.n, (unsigned long long)missed, rounds_per_s, cpu_pct, atomic_load(&bs.reissues),
            timed_out ? " (TIMED OUT)" : "");
    bench_line_begin("libredlock", "blocking");
    bench_kv_u64("waiters", n);
    bench_kv_u64("timed_out", (uint64_t)timed_out);
    bench_kv_u64("samples", s.n);
    bench_kv_u64("missed", missed);
    bench_kv_f("handoff_p50_us", p50);
    bench_kv_f("handoff_p99_us", p99);
    bench_kv_f("handoff_max_us", bench_quantile_us(&s, 1.0));
    bench_kv_f("setup_s", setup_s);
    bench_kv_f("waiter_rounds_per_s", rounds_per_s);
    bench_kv_f("cpu_pct", cpu_pct);
    bench_kv_u64("reissues", atomic_load(&bs.reissues));
    bench_kv_u64("stray_grants", atomic_load(&bs.stray));
    bench_kv_u64("errors", atomic_load(&bs.errors));
    bench_line_end();
    if (timed_out) {
        fflush(NULL);
        _exit(0);
    }

    /* stop every waiter: cancel until all have left */
    pthread_mutex_lock(&bs.mu);
    for (size_t i = 0; i < n; i++) bs.w[i].cmd = CMD_STOP;
    pthread_cond_broadcast(&bs.cond);
    pthread_mutex_unlock(&bs.mu);
    for (int i = 0; atomic_load(&bs.joined) < n; i++) {
        redlock_cancel_waits(bs.waiter);
        bench_sleep_ms(20);
        if (i == 1500) {
            fprintf(stderr, "bench_scale: %zu waiter threads still waiting after 30 s\n", n - atomic_load(&bs.joined));
            fflush(NULL);
            _exit(0);
        }
    }
    for (size_t i = 0; i < n; i++) pthread_join(bs.w[i].th, NULL);
    for (size_t i = 0; i < n; i++)
        if (held[i]) redlock_release(bs.holder, held[i]);
    redlock_free(bs.waiter);
    redlock_free(bs.holder);
    free(bs.w);
    free(held);
    bench_samples_free(&s);
    return 0;
}

/* ----------------------------------------------------------------- autoext */

static int run_autoext(void) {
    size_t n = cfg.k >= 1 ? (size_t)cfg.k : 1;
    uint32_t ttl = (uint32_t)cfg.ttl;
    double interval = ttl / 3.0; /* the default interval_ms */
    double due = (double)ttl - ((double)ttl * defaults.drift_factor + defaults.drift_min_ms) - interval;
    redlock_t *rl = new_blocking();
    batch_t b = {.rl = rl, .kind = "x", .locks = xcalloc(n, sizeof(redlock_lock_t *)), .ttl_ms = ttl, .autoextend = 1};
    uint64_t t0 = bench_now_ns();
    b.stop_ns = t0 + (uint64_t)(cfg.bound * 1e9);
    size_t got = batch_run(&b, 0, n);
    double fill_s = secs_since(t0);
    int timed_out = got < n;
    /* warm: until every lock was extended once (bounded) */
    uint64_t w0 = bench_now_ns();
    for (;;) {
        size_t not_yet = 0;
        for (size_t i = 0; i < got; i++)
            if (b.locks[i] && redlock_lock_extensions(b.locks[i]) == 0) not_yet++;
        if (!not_yet) break;
        if (secs_since(w0) > cfg.bound || past_deadline()) {
            fprintf(stderr, "bench_scale: %zu locks not extended once in %.0f s\n", not_yet, cfg.bound);
            timed_out = 1;
            break;
        }
        bench_sleep_ms(100);
    }
    double warm_s = secs_since(w0);
    uint64_t ext0 = 0, ext1 = 0;
    for (size_t i = 0; i < got; i++)
        if (b.locks[i]) ext0 += redlock_lock_extensions(b.locks[i]);
    unsigned long lost0 = atomic_load(&lost_locks);
    double min_v = 1e18, sweep_max_ms = 0;
    uint64_t sweeps = 0;
    uint64_t wall0 = bench_now_ns(), cpu0 = bench_cpu_us(), self0 = thread_cpu_us();
    uint64_t end = wall0 + (uint64_t)(cfg.window * 1e9);
    while (!timed_out && bench_now_ns() < end) {
        uint64_t s0 = bench_now_ns();
        for (size_t i = 0; i < got; i++)
            if (b.locks[i]) {
                double v = (double)redlock_lock_validity_ms(b.locks[i]);
                if (v < min_v) min_v = v;
            }
        double sweep = (double)(bench_now_ns() - s0) / 1e6;
        if (sweep > sweep_max_ms) sweep_max_ms = sweep;
        sweeps++;
        bench_sleep_ms(100);
    }
    double wall = secs_since(wall0);
    uint64_t self = thread_cpu_us() - self0;
    double cpu_pct = ((double)(bench_cpu_us() - cpu0) - (double)self) / 1e4 / wall;
    for (size_t i = 0; i < got; i++)
        if (b.locks[i]) ext1 += redlock_lock_extensions(b.locks[i]);
    unsigned long lost = atomic_load(&lost_locks) - lost0;
    double late = due - min_v > 0 ? due - min_v : 0;
    double expected = (double)got * wall / (interval / 1000.0);
    /* release, timed */
    uint64_t r0 = bench_now_ns();
    b.release = 1;
    b.stop_ns = r0 + (uint64_t)(cfg.bound * 1e9);
    size_t released = batch_run(&b, 0, got);
    double rel_s = secs_since(r0);
    fprintf(stderr,
            "autoext %zu locks (TTL %u ms, every %.0f ms): CPU %.2f %% of a core; least validity %.0f ms (%.1f %% of "
            "TTL, due floor %.0f ms); worst lateness %.0f ms (%.1f %% of TTL); %llu extensions in %.1f s (%.0f "
            "expected); %lu lost; took in %.1f s, released in %.1f s\n",
            got, ttl, interval, cpu_pct, min_v, 100 * min_v / ttl, due, late, 100 * late / ttl,
            (unsigned long long)(ext1 - ext0), wall, expected, lost, fill_s, rel_s);
    bench_line_begin("libredlock", "autoext");
    bench_kv_u64("locks", got);
    bench_kv_u64("target", n);
    bench_kv_u64("timed_out", (uint64_t)timed_out);
    bench_kv_u64("ttl_ms", ttl);
    bench_kv_f("interval_ms", interval);
    bench_kv_f("window_s", wall);
    bench_kv_f("cpu_pct", cpu_pct);
    bench_kv_f("min_validity_ms", min_v < 1e17 ? min_v : 0);
    bench_kv_f("min_validity_pct", min_v < 1e17 ? 100 * min_v / ttl : 0);
    bench_kv_f("due_ms", due);
    bench_kv_f("late_ms", late);
    bench_kv_f("late_pct", 100 * late / ttl);
    bench_kv_u64("extensions", ext1 - ext0);
    bench_kv_f("extensions_expected", expected);
    bench_kv_u64("lost", lost);
    bench_kv_u64("sweeps", sweeps);
    bench_kv_f("sweep_max_ms", sweep_max_ms);
    bench_kv_f("fill_s", fill_s);
    bench_kv_f("warm_s", warm_s);
    bench_kv_u64("released", released);
    bench_kv_f("release_s", rel_s);
    bench_kv_u64("errors", atomic_load(&b.errors));
    bench_line_end();
    if (released < got) {
        fflush(NULL);
        _exit(0);
    }
    free(b.locks);
    redlock_free(rl);
    return 0;
}

/* -------------------------------------------------------------------- main */

/* The last resort behind --deadline: a run whose own checks cannot run (a
 * loop that never comes back to its timer) is ended 15 s past it from this
 * thread, with what can be read from outside the run (racy, and said so). */
static void *watchdog_main(void *arg) {
    (void)arg;
    bench_sleep_ms((cfg.deadline + 15) * 1000);
    bench_line_begin("libredlock", cfg.workload);
    if (!strcmp(cfg.workload, "async")) {
        bench_kv_u64("waiters", as.n);
        bench_kv_u64("phase", (uint64_t)as.phase);
        bench_kv_u64("all_waiting", 0);
        bench_kv_u64("samples", as.handoff.n);
        bench_kv_u64("issued", as.issued_wait);
        if (as.phase >= 1 && as.issued_wait == as.n) { /* every acquire asked: the heap now, per acquire */
            char name[96];
            name_of(name, sizeof name, "w", as.n - 1);
            double per = (heap_bytes() - as.heap0) / (double)as.n;
            bench_kv_f("heap_per_pending", per);
            bench_kv_f("heap_per_pending_beyond_name", per - (double)(strlen(name) + 1));
            bench_kv_f("rss_per_pending", ((double)bench_rss_kb() - (double)as.rss0) * 1024.0 / (double)as.n);
        }
    } else {
        bench_kv_u64("waiters", (uint64_t)cfg.k);
        bench_kv_u64("target", (uint64_t)cfg.k);
    }
    bench_kv_u64("timed_out", 1);
    bench_kv_u64("hung", 1);
    bench_line_end();
    fprintf(stderr, "bench_scale: %s did not end by its deadline (%.0f s) + 15 s: stopped from outside\n", cfg.workload,
            cfg.deadline);
    fflush(NULL);
    _exit(0);
    return NULL;
}

static const char USAGE[] =
    "-u URI,URI,... -w held|async|blocking|autoext [--levels L,L,..] [--slice N] [--threads N]\n"
    "          [--probes N] [--bound SECONDS] [-k N] [--samples N] [--settle-ms MS] [--ttl MS]\n"
    "          [--window SECONDS] [--deadline SECONDS]\n";

static void print_version(void) {
    printf("libredlock=%s libuv=%s\n", REDLOCK_VERSION, uv_version_string());
}

int main(int argc, char **argv) {
    char *uri_list = NULL;
    const bench_opt_t opts[] = {
        {"-u", .list = &uri_list},
        {"-w", .str = &cfg.workload},
        {"--levels", .str = &cfg.levels},
        {"--slice", .num = &cfg.slice},
        {"--threads", .num = &cfg.threads},
        {"--probes", .num = &cfg.probes},
        {"--bound", .num = &cfg.bound},
        {"-k", .num = &cfg.k},
        {"--samples", .num = &cfg.samples},
        {"--settle-ms", .num = &cfg.settle_ms},
        {"--ttl", .num = &cfg.ttl},
        {"--window", .num = &cfg.window},
        {"--deadline", .num = &cfg.deadline},
    };
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], print_version) != 0)
        bench_usage(argv[0], USAGE, 1);
    if (uri_list) cfg.n_nodes = bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES);
    if (!cfg.workload || !cfg.n_nodes) bench_usage(argv[0], USAGE, 1);
    bench_options_init(&defaults, cfg.uris, cfg.n_nodes, 0);
    t_start_ns = bench_now_ns();
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog_main, NULL) != 0 || pthread_detach(wd) != 0) {
        fprintf(stderr, "bench_scale: pthread_create failed\n");
        return 1;
    }
    if (!strcmp(cfg.workload, "held")) return run_held();
    if (!strcmp(cfg.workload, "async")) return run_async();
    if (!strcmp(cfg.workload, "blocking")) return run_blocking();
    if (!strcmp(cfg.workload, "autoext")) return run_autoext();
    bench_usage(argv[0], USAGE, 1);
    return 2;
}
