/* bench_async.c -- libredlock's non-blocking API (redlock_async_*) driven
 * by one libuv loop on one thread, through the public headers only
 * (include/redlock.h and the header-only adapter include/redlock/libuv.h).
 *
 *   bench_async -u URI,URI,... -w inflight|pending [-k COUNT] [-d SECONDS]
 *               [--warmup CYCLES] [--ttl MS] [--op-timeout MS] [--wait MS]
 *               [--impl NAME]
 *   bench_async --version
 *
 * Workloads (each prints one RESULT line, see common.h):
 *   inflight  COUNT (default 256) acquire + release cycles kept in flight on
 *             the loop thread, each slot on keys of its own (a new key per
 *             cycle, as bench_redlock's concurrent workload; one attempt per
 *             acquire, wait_ms 0). A slot starts its next cycle from the
 *             release's callback. After --warmup cycles (default
 *             max(2000, 8 x COUNT)) the cycles finished within SECONDS are
 *             counted: cycles/s, cycle latency (acquire call to release
 *             callback), CPU per cycle, heap calls per cycle (allocs.c).
 *   pending   COUNT (default 10000) acquires left pending on one resource
 *             that a blocking redlock_t of the same process holds, with a
 *             long wait bound (--wait, default 120000 ms) and a retry delay
 *             longer than the run. Heap in use (mallinfo2: uordblks +
 *             hblkhd, every arena) of the warm handle with none pending, with
 *             COUNT/10 and with COUNT pending; then one redlock_async_cancel
 *             for all of them, whose callbacks are counted, and the heap once
 *             they have run and it settled again.
 * Both also print the handle's node counters over the whole run (votes by
 * kind, reconnects): on distinct keys a vote other than YES is a sign of an
 * overloaded node.
 *
 * Diagnostics go to stderr; a run that could not measure what it was asked
 * exits non-zero (its RESULT line, when printed, says why). */
#define _POSIX_C_SOURCE 200809L
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include <redlock.h>
#include <redlock/libuv.h>

#include "allocs.h"
#include "common.h"
#include "handle.h"

typedef struct config {
    const char *workload, *impl;
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    double count, secs, warmup, ttl, op_timeout, wait;
} config_t;

static config_t cfg = {
    .impl = "libredlock-async",
    .secs = 2,
    .warmup = -1, /* < 0: max(2000, 8 x count) */
    .ttl = 10000,
    .op_timeout = 1000,
    .wait = 120000,
};

static unsigned pid;
static uv_loop_t loop;
static redlock_async_t *handle;
static int freeing; /* redlock_async_free is running: callbacks start nothing */

/* The library's warnings, to stderr: the first 20 of a run (a run that
 * hits trouble says what it was without drowning the output). */
static void log_to_stderr(void *arg, int level, const char *msg) {
    static unsigned n;
    (void)arg;
    if (n++ < 20) fprintf(stderr, "bench_async: libredlock [%d]: %s\n", level, msg);
}

/* Fills opt for the bench nodes with the suite's settings (bench_redlock's
 * make_redlock): generous timeouts, no retries unless asked. */
static void bench_options(redlock_options_t *opt, uint32_t retry_count, uint32_t retry_delay_ms) {
    bench_options_init(opt, cfg.uris, cfg.n_nodes, (uint32_t)cfg.op_timeout);
    opt->connect_timeout_ms = 1000;
    opt->retry_count = retry_count;
    opt->retry_delay_ms = retry_delay_ms;
    opt->retry_jitter_ms = retry_delay_ms ? 1 : 0;
    opt->log = log_to_stderr;
    opt->log_level = REDLOCK_LOG_WARN;
}

/* Makes the loop and the async handle attached to it; exits on failure. */
static void open_handle(const redlock_options_t *opt) {
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "bench_async: uv_loop_init failed\n");
        exit(1);
    }
    int rc = redlock_async_new(&handle, opt);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "bench_async: redlock_async_new: %s\n", redlock_strerror(rc));
        exit(1);
    }
    rc = redlock_libuv_attach(handle, &loop);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "bench_async: redlock_libuv_attach: %s\n", redlock_strerror(rc));
        exit(1);
    }
}

/* Frees the handle, lets the loop run the adapter's close callbacks, closes
 * the loop. Returns 0, or 1 when the loop still had live handles (the
 * adapter did not close everything it opened). */
static int close_handle(void) {
    freeing = 1;
    redlock_async_free(handle);
    handle = NULL;
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) {
        fprintf(stderr, "bench_async: uv_loop_close: the loop still has live handles after redlock_async_free\n");
        return 1;
    }
    return 0;
}

/* Adds the handle's node counters to the RESULT line (whole run, warm-up
 * included): every vote that was not a YES, and reconnects. On distinct
 * keys each of these is a hiccup worth a look (a NO means a key was there). */
static void kv_node_health(void) {
    static redlock_stats_t st; /* large: not on the stack */
    uint64_t yes = 0, no = 0, timeout = 0, error = 0, down = 0, quarantined = 0, reconnects = 0;
    if (redlock_async_stats(handle, &st) == REDLOCK_OK)
        for (size_t i = 0; i < st.n_nodes; i++) {
            yes += st.nodes[i].yes;
            no += st.nodes[i].no;
            timeout += st.nodes[i].timeout;
            error += st.nodes[i].error;
            down += st.nodes[i].down;
            quarantined += st.nodes[i].quarantined;
            reconnects += st.nodes[i].reconnects;
        }
    uint64_t all = yes + no + timeout + error + down + quarantined;
    bench_kv_u64("votes_yes", yes);
    bench_kv_f("votes_not_yes_pct", all ? 100.0 * (double)(all - yes) / (double)all : 0);
    bench_kv_u64("votes_no", no);
    bench_kv_u64("votes_timeout", timeout);
    bench_kv_u64("votes_error", error);
    bench_kv_u64("votes_down", down + quarantined);
    bench_kv_u64("reconnects", reconnects);
}

/* Heap bytes in use, all arenas: small chunks plus mmap'd ones. */
static size_t heap_in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* ---------------------------------------------------------------- inflight */

enum phase { WARM, MEASURE, STOP };

typedef struct slot {
    unsigned id;
    uint64_t n;  /* cycles this slot started */
    uint64_t t0; /* when its current cycle started */
} slot_t;

static struct {
    enum phase phase;
    slot_t *slots;
    unsigned count, live;            /* slots, and slots with a cycle in flight */
    uint64_t warm_target, warm_done; /* cycles finished in the warm-up */
    uint64_t cycles, errors, start_errors;
    uint64_t t_start, deadline, t_begin;
    uint64_t cpu_start, cpu_used;
    bench_allocs_t allocs;
    bench_samples_t lat;
    int first_error;
    unsigned stuck;
} run;

static void start_cycle(slot_t *s);

/* Closes the measured window (once): heap calls and CPU up to now. */
static void end_window(void) {
    if (run.phase != MEASURE) return;
    run.allocs = bench_allocs_stop();
    run.cpu_used = bench_cpu_us() - run.cpu_start;
    run.phase = STOP;
}

/* A slot's cycle is over (ok or not): counts it, then starts the slot's
 * next cycle, or retires the slot once the window is closed. */
static void finish_cycle(slot_t *s, int rc) {
    uint64_t now = bench_now_ns();
    if (rc != REDLOCK_OK && !run.first_error) run.first_error = rc;
    if (run.phase == MEASURE && now >= run.deadline) end_window();
    if (run.phase == MEASURE) {
        run.cycles++;
        if (rc != REDLOCK_OK) run.errors++;
        bench_samples_add(&run.lat, now - s->t0);
    } else if (run.phase == WARM && ++run.warm_done >= run.warm_target) {
        run.phase = MEASURE;
        run.t_start = now;
        run.deadline = now + (uint64_t)(cfg.secs * 1e9);
        run.cpu_start = bench_cpu_us();
        bench_allocs_start();
    }
    if (run.phase == STOP || freeing) {
        if (--run.live == 0) uv_stop(&loop);
        return;
    }
    start_cycle(s);
}

/* The release is done: the cycle is over. */
static void on_released(int rc, const redlock_report_t *report, void *arg) {
    (void)report;
    finish_cycle(arg, rc);
}

/* The acquire is done: release at once (the cycle goes on), or end the
 * cycle with the acquire's error. */
static void on_acquired(redlock_lock_t *lock, int rc, const redlock_report_t *report, void *arg) {
    slot_t *s = arg;
    (void)report;
    if (rc != REDLOCK_OK) {
        finish_cycle(s, rc);
        return;
    }
    if (freeing) {
        redlock_lock_free(lock);
        finish_cycle(s, rc);
        return;
    }
    int r = redlock_async_release(handle, lock, on_released, s);
    if (r != REDLOCK_OK) {
        redlock_lock_free(lock);
        finish_cycle(s, r);
    }
}

/* Starts the slot's next cycle on a key no other cycle used. A call that
 * fails at once retires the slot (it would fail again). */
static void start_cycle(slot_t *s) {
    char key[96];
    snprintf(key, sizeof key, "bench:async:%u:s%u:%llu", pid, s->id, (unsigned long long)s->n++);
    s->t0 = bench_now_ns();
    int rc = redlock_async_acquire(handle, key, (uint32_t)cfg.ttl, 0, on_acquired, s);
    if (rc != REDLOCK_OK) {
        if (!run.first_error) run.first_error = rc;
        run.start_errors++;
        if (--run.live == 0) uv_stop(&loop);
    }
}

/* Every 100 ms: closes the window if no cycle finished since the deadline,
 * and gives up on cycles still in flight 10 s after it (or on a warm-up
 * that takes a minute). */
static void on_guard(uv_timer_t *t) {
    (void)t;
    uint64_t now = bench_now_ns();
    if (run.phase == WARM && now - run.t_begin > 60ull * 1000000000u) {
        fprintf(stderr, "bench_async: warm-up of %llu cycles not done after 60 s (%llu finished, %u in flight)\n",
                (unsigned long long)run.warm_target, (unsigned long long)run.warm_done, run.live);
        run.stuck = run.live;
        uv_stop(&loop);
    } else if (run.phase == MEASURE && now >= run.deadline) {
        end_window();
    }
    if (run.phase == STOP && now >= run.deadline + 10ull * 1000000000u && run.live) {
        fprintf(stderr, "bench_async: %u cycles still in flight 10 s after the end of the run\n", run.live);
        run.stuck = run.live;
        uv_stop(&loop);
    }
}

/* Keeps k slots cycling on the loop: warm-up cycles first, then the
 * measured window of cfg.secs, then every slot retires; returns when none
 * is in flight (or the guard gave up on them). Results are left in `run`. */
static void run_slots(unsigned k, uint64_t warm) {
    run.count = k;
    run.slots = calloc(k, sizeof *run.slots);
    if (!run.slots) exit(1);
    run.warm_target = warm;
    run.phase = warm ? WARM : MEASURE;
    run.t_begin = bench_now_ns();
    if (run.phase == MEASURE) { /* no warm-up: the window starts now */
        run.t_start = run.t_begin;
        run.deadline = run.t_begin + (uint64_t)(cfg.secs * 1e9);
        run.cpu_start = bench_cpu_us();
        bench_allocs_start();
    }
    uv_timer_t guard;
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, on_guard, 100, 100);
    run.live = k;
    for (unsigned i = 0; i < k; i++) {
        run.slots[i].id = i;
        start_cycle(&run.slots[i]);
    }
    if (run.live) uv_run(&loop, UV_RUN_DEFAULT);
    end_window();
    uv_timer_stop(&guard);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&loop, UV_RUN_NOWAIT); /* the guard's close */
    free(run.slots);
    run.slots = NULL;
}

static int run_inflight(void) {
    unsigned k = cfg.count > 0 ? (unsigned)cfg.count : 256;
    redlock_options_t opt;
    bench_options(&opt, 0, 0);
    open_handle(&opt);
    bench_samples_init(&run.lat, (size_t)(cfg.secs * 200000.0) + 1000);
    run_slots(k, cfg.warmup >= 0 ? (uint64_t)cfg.warmup : (k * 8u > 2000u ? k * 8u : 2000u));

    double secs = run.cycles ? cfg.secs : 0;
    double c = run.cycles ? (double)run.cycles : 1;
    bench_line_begin(cfg.impl, "inflight");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("threads", 1);
    bench_kv_u64("inflight", k);
    bench_kv_u64("warmup_cycles", run.warm_done);
    bench_kv_u64("cycles", run.cycles);
    bench_kv_f("secs", secs);
    bench_kv_f("cps", secs > 0 ? (double)run.cycles / secs : 0);
    bench_kv_quantiles("cyc", &run.lat);
    bench_kv_f("cpu_us_per_cycle", (double)run.cpu_used / c);
    bench_kv_f("allocs_per_cycle", (double)run.allocs.allocs / c);
    bench_kv_f("frees_per_cycle", (double)run.allocs.frees / c);
    bench_kv_f("own_allocs_per_cycle", (double)run.allocs.own_allocs / c);
    bench_kv_f("own_frees_per_cycle", (double)run.allocs.own_frees / c);
    bench_kv_u64("errors", run.errors + run.start_errors);
    bench_kv_str("first_error", run.first_error ? redlock_strerror(run.first_error) : "none");
    bench_kv_u64("stuck", run.stuck);
    kv_node_health();
    bench_line_end();
    int loop_err = close_handle();
    if (run.first_error) fprintf(stderr, "bench_async: first error: %s\n", redlock_strerror(run.first_error));
    bench_samples_free(&run.lat);
    return run.cycles && !run.stuck && !loop_err && !run.start_errors ? 0 : 1;
}

/* ----------------------------------------------------------------- pending */

enum pstate { ISSUE, SETTLE, CANCEL_WAIT, DRAIN, DONE };

#define PENDING_BATCH 500            /* acquires started per timer tick */
#define SETTLE_MIN_NS 1000000000ull  /* a stage lasts at least this long */
#define SETTLE_MAX_NS 15000000000ull /* and at most this long */
#define SETTLE_TICKS 20              /* unchanged heap (+-256 B) this many ticks in a row */

static struct {
    enum pstate state;
    const char *resource;
    char tag;                 /* &tag is every pending acquire's arg */
    uint64_t stage_target[2]; /* COUNT/10, COUNT */
    int stage;
    uint64_t issued, refused, callbacks, cancelled, granted;
    size_t heap_base, heap_stage[2], heap_after_cancel, last_heap;
    long rss_base, rss_stage[2];
    uint64_t stage_ns[2]; /* how long each stage took to settle */
    int stable;
    uint64_t since;
    int cancel_rc;
    int other_rc;
} pend;

/* A pending acquire's only callback: CANCELLED is the expected end; a grant
 * or another error means the run measured something else. */
static void on_pending_done(redlock_lock_t *lock, int rc, const redlock_report_t *report, void *arg) {
    (void)report;
    (void)arg;
    pend.callbacks++;
    if (rc == REDLOCK_ERR_CANCELLED) {
        pend.cancelled++;
    } else if (rc == REDLOCK_OK) {
        pend.granted++;
        redlock_lock_free(lock);
    } else if (!pend.other_rc) {
        pend.other_rc = rc;
    }
}

/* One tick of waiting for the heap to settle (SETTLE_TICKS ticks within
 * 256 bytes, and SETTLE_MIN_NS since `since`; or SETTLE_MAX_NS since
 * then). Returns 1 once settled, with the figure in *heap. */
static int heap_settled(uint64_t now, size_t *heap) {
    size_t h = heap_in_use();
    size_t d = h > pend.last_heap ? h - pend.last_heap : pend.last_heap - h;
    pend.stable = d <= 256 ? pend.stable + 1 : 0;
    pend.last_heap = h;
    *heap = h;
    return (pend.stable >= SETTLE_TICKS && now - pend.since >= SETTLE_MIN_NS) || now - pend.since >= SETTLE_MAX_NS;
}

/* Starts waiting for the heap to settle, in state st. */
static void settle_from(enum pstate st, uint64_t now) {
    pend.state = st;
    pend.since = now;
    pend.stable = 0;
    pend.last_heap = heap_in_use();
}

/* Every 10 ms: starts the next batch of pending acquires, or waits for the
 * heap to settle and records the stage, or cancels them all, waits for
 * their callbacks and for the heap to settle again. */
static void on_pending_tick(uv_timer_t *t) {
    uint64_t now = bench_now_ns();
    size_t h;
    if (pend.state == ISSUE) {
        uint64_t goal = pend.stage_target[pend.stage];
        for (int i = 0; i < PENDING_BATCH && pend.issued < goal; i++) {
            int rc = redlock_async_acquire(handle, pend.resource, (uint32_t)cfg.ttl, (int64_t)cfg.wait, on_pending_done,
                                           &pend.tag);
            if (rc != REDLOCK_OK) {
                pend.refused++;
                if (!pend.other_rc) pend.other_rc = rc;
                pend.state = DONE;
                uv_stop(&loop);
                return;
            }
            pend.issued++;
        }
        if (pend.issued == goal) settle_from(SETTLE, now);
    } else if (pend.state == SETTLE) {
        if (!heap_settled(now, &h)) return;
        pend.heap_stage[pend.stage] = h;
        pend.rss_stage[pend.stage] = bench_rss_kb();
        pend.stage_ns[pend.stage] = now - pend.since;
        if (++pend.stage < 2) {
            pend.state = ISSUE;
            return;
        }
        pend.cancel_rc = redlock_async_cancel(handle, &pend.tag);
        pend.state = CANCEL_WAIT;
        pend.since = now;
    } else if (pend.state == CANCEL_WAIT) {
        if (pend.callbacks >= pend.issued || now - pend.since >= SETTLE_MAX_NS) settle_from(DRAIN, now);
    } else if (pend.state == DRAIN) {
        if (!heap_settled(now, &h)) return;
        pend.heap_after_cancel = h;
        pend.state = DONE;
        uv_timer_stop(t);
        uv_stop(&loop);
    }
}

/* Warms the handle up the way inflight runs it (connections, scripts, its
 * pools): k slots cycling until `cycles` cycles are done. */
static void warm_handle(unsigned k, uint64_t cycles) {
    double secs = cfg.secs;
    cfg.secs = 0; /* the window closes as it opens: the slots retire */
    bench_samples_init(&run.lat, 1);
    run_slots(k, cycles);
    bench_samples_free(&run.lat);
    cfg.secs = secs;
}

static int run_pending(void) {
    uint64_t n = cfg.count > 0 ? (uint64_t)cfg.count : 10000u;
    char resource[96];
    snprintf(resource, sizeof resource, "bench:async:%u:held", pid);
    pend.resource = resource;

    /* the holder: a blocking redlock_t of this process, on the same nodes */
    redlock_options_t hopt;
    bench_options(&hopt, 0, 0);
    redlock_t *holder = NULL;
    char err[256];
    int rc = redlock_new_ex(&holder, &hopt, err, sizeof err);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "bench_async: redlock_new: %s: %s\n", redlock_strerror(rc), err);
        return 1;
    }
    redlock_lock_t *held = NULL;
    uint32_t hold_ttl = (uint32_t)cfg.wait + 300000u; /* outlives the run and every waiter's bound */
    rc = redlock_try_acquire(holder, resource, hold_ttl, &held);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "bench_async: the holder could not take %s: %s\n", resource, redlock_strerror(rc));
        redlock_free(holder);
        return 1;
    }

    /* waiters: retry far later than the run lasts, so that each stays
     * pending after its first refused attempt (they start in batches of
     * PENDING_BATCH, well under max_inflight requests owed to a node) */
    redlock_options_t opt;
    bench_options(&opt, 1000000u, (uint32_t)cfg.wait);
    opt.reentrant = 0;
    open_handle(&opt);
    uint64_t warm_cycles = cfg.warmup >= 0 ? (uint64_t)cfg.warmup : 4000u;
    if (warm_cycles) warm_handle(256, warm_cycles);

    pend.stage_target[0] = n / 10 ? n / 10 : 1;
    pend.stage_target[1] = n;
    pend.state = ISSUE;
    pend.heap_base = heap_in_use();
    pend.rss_base = bench_rss_kb();
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_pending_tick, 10, 10);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_timer_stop(&tick);
    uv_close((uv_handle_t *)&tick, NULL);

    size_t name = strlen(resource) + 1;
    uint64_t a = pend.stage_target[0];
    double per = ((double)pend.heap_stage[1] - (double)pend.heap_base) / (double)n;
    double marginal = n > a ? ((double)pend.heap_stage[1] - (double)pend.heap_stage[0]) / (double)(n - a) : per;
    bench_line_begin(cfg.impl, "pending");
    bench_kv_u64("nodes", cfg.n_nodes);
    bench_kv_u64("pending", n);
    bench_kv_u64("issued", pend.issued);
    bench_kv_u64("resource_bytes", name);
    bench_kv_u64("heap_base_b", pend.heap_base);
    bench_kv_u64("heap_at_tenth_b", pend.heap_stage[0]);
    bench_kv_u64("heap_at_all_b", pend.heap_stage[1]);
    bench_kv_u64("heap_after_cancel_b", pend.heap_after_cancel);
    bench_kv_f("bytes_per_pending", per);
    bench_kv_f("bytes_per_pending_beyond_name", per - (double)name);
    bench_kv_f("bytes_per_pending_marginal", marginal);
    bench_kv_f("rss_kb_per_1000_pending", ((double)pend.rss_stage[1] - (double)pend.rss_base) * 1000.0 / (double)n);
    bench_kv_f("settle_s_tenth", (double)pend.stage_ns[0] / 1e9);
    bench_kv_f("settle_s_all", (double)pend.stage_ns[1] / 1e9);
    bench_kv_u64("cancel_returned", (uint64_t)(pend.cancel_rc < 0 ? 0 : pend.cancel_rc));
    bench_kv_u64("callbacks", pend.callbacks);
    bench_kv_u64("cancelled", pend.cancelled);
    bench_kv_u64("granted", pend.granted);
    bench_kv_str("other_error", pend.other_rc ? redlock_strerror(pend.other_rc) : "none");
    kv_node_health();
    bench_line_end();
    int loop_err = close_handle();
    redlock_release(holder, held);
    redlock_free(holder);
    int ok = pend.issued == n && pend.cancel_rc == (int)n && pend.cancelled == n && !pend.granted && !pend.other_rc;
    if (!ok)
        fprintf(stderr,
                "bench_async: pending: issued %llu of %llu, cancel returned %d, %llu callbacks (%llu cancelled, "
                "%llu granted), other error: %s\n",
                (unsigned long long)pend.issued, (unsigned long long)n, pend.cancel_rc,
                (unsigned long long)pend.callbacks, (unsigned long long)pend.cancelled,
                (unsigned long long)pend.granted, pend.other_rc ? redlock_strerror(pend.other_rc) : "none");
    return ok && !loop_err ? 0 : 1;
}

/* -------------------------------------------------------------------- main */

static const char USAGE[] = "-u URI,URI,... -w inflight|pending [-k COUNT] [-d SECONDS] [--warmup CYCLES]\n"
                            "          [--ttl MS] [--op-timeout MS] [--wait MS] [--impl NAME]\n";

static void print_version(void) {
    printf("libredlock=%s libuv=%s\n", REDLOCK_VERSION, uv_version_string());
}

int main(int argc, char **argv) {
    char *uri_list = NULL;
    const bench_opt_t opts[] = {
        {"-u", .list = &uri_list},    {"-w", .str = &cfg.workload},
        {"--impl", .str = &cfg.impl}, {"-k", .num = &cfg.count},
        {"-d", .num = &cfg.secs},     {"--warmup", .num = &cfg.warmup},
        {"--ttl", .num = &cfg.ttl},   {"--op-timeout", .num = &cfg.op_timeout},
        {"--wait", .num = &cfg.wait},
    };
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], print_version) != 0)
        bench_usage(argv[0], USAGE, 1);
    if (!uri_list || !cfg.workload || !cfg.impl) bench_usage(argv[0], USAGE, 1);
    cfg.n_nodes = bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES);
    if (!cfg.n_nodes) bench_usage(argv[0], USAGE, 1);
    pid = (unsigned)getpid();
    if (!strcmp(cfg.workload, "inflight")) return run_inflight();
    if (!strcmp(cfg.workload, "pending")) return run_pending();
    bench_usage(argv[0], USAGE, 1);
    return 2;
}
