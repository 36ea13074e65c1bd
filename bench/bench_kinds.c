/* bench_kinds.c -- what a permit of a semaphore and a reader's lock cost
 * next to a plain mutex, through the public API only
 * (include/redlock.h), with the library's default options.
 *
 *   bench_kinds -u URI,URI,... [-r ROUNDS] [-b CYCLES] [--warmup CYCLES] [--ttl MS]
 *   bench_kinds --version
 *
 * One caller; every variant is an acquire + release cycle on a resource of
 * its own, one attempt (wait_ms 0) unless said otherwise:
 *   mutex          redlock_acquire_ex + redlock_release (plain SET NX PX):
 *                  the baseline of every ratio
 *   mutex, waiting the same with wait_ms 1000 (the attempt is the script
 *                  acquire_wait.lua), for reference
 *   permit         redlock_acquire_permit at limit 1, 8 and 64, every slot
 *                  free; then limit 8 with 7 slots and limit 64 with 63
 *                  slots held by another handle for the whole run (the
 *                  probe walks past the taken slots to the last one)
 *   shared         redlock_acquire_shared (a reader), alone and with 8 other
 *                  readers holding the resource
 * The variants run interleaved: ROUNDS rounds (default 30), each a block of
 * CYCLES cycles (default 300) of every variant, the order rotated by one
 * each round, so that the noise of a shared machine falls on all alike.
 *
 * Prints a markdown table on stdout: acquire and cycle p50/p99 over all
 * rounds, the cycle p50 over the mutex's, and the range of that ratio over
 * the rounds (each round's block p50s); bench/kinds.sh judges the targets
 * (bench/targets.tsv). Exits 1 when an acquire failed or a permit got an
 * unexpected slot, else 0. Diagnostics go to stderr; tokens are never
 * printed. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <redlock.h>

#include "common.h"
#include "handle.h"

typedef enum kind { K_MUTEX, K_PERMIT, K_SHARED } kind_t;

typedef struct variant {
    const char *name; /* its row in the table */
    kind_t kind;
    unsigned limit;  /* K_PERMIT: the semaphore's limit */
    unsigned held;   /* permits (or readers) another handle holds for the whole run */
    int64_t wait_ms; /* passed to the acquire */
    char resource[96];
    redlock_lock_t *others[REDLOCK_MAX_PERMITS]; /* what the other handle holds */
    bench_samples_t acq, cyc;                    /* every measured cycle */
    double *round_p50;                           /* each round's block p50 of the cycle, µs */
    uint64_t errors;                             /* refused acquires, unexpected slots */
} variant_t;

static variant_t vs[] = {
    {.name = "mutex (`redlock_acquire_ex` + `redlock_release`)", .kind = K_MUTEX},
    {.name = "mutex, waiting caller (wait_ms 1000)", .kind = K_MUTEX, .wait_ms = 1000},
    {.name = "permit, limit 1", .kind = K_PERMIT, .limit = 1},
    {.name = "permit, limit 8", .kind = K_PERMIT, .limit = 8},
    {.name = "permit, limit 64", .kind = K_PERMIT, .limit = 64},
    {.name = "permit, limit 8, 7 slots held by others", .kind = K_PERMIT, .limit = 8, .held = 7},
    {.name = "permit, limit 64, 63 slots held by others", .kind = K_PERMIT, .limit = 64, .held = 63},
    {.name = "shared (a reader)", .kind = K_SHARED},
    {.name = "shared, 8 other readers in", .kind = K_SHARED, .held = 8},
};
#define N_VARIANTS (sizeof vs / sizeof vs[0])

#define OTHERS_TTL_MS 600000u /* the other handle's holds outlast any run */

static struct {
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    unsigned rounds, block, warmup;
    unsigned ttl_ms;
} cfg = {.rounds = 30, .block = 300, .warmup = 200, .ttl_ms = 10000};

/* A handle with the default options and the bench's nodes; reentrant 0 for
 * the handle whose one thread holds several permits of one semaphore. */
static redlock_t *make_handle(int reentrant) {
    redlock_options_t opt;
    bench_options_init(&opt, cfg.uris, cfg.n_nodes, 0);
    opt.reentrant = reentrant;
    return bench_handle_new(&opt, "bench_kinds: redlock_new");
}

/* Acquires v's resource by v's kind on rl with ttl_ms and wait_ms. */
static int acquire(redlock_t *rl, const variant_t *v, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **lk) {
    switch (v->kind) {
    case K_PERMIT: return redlock_acquire_permit(rl, v->resource, v->limit, ttl_ms, wait_ms, lk, NULL);
    case K_SHARED: return redlock_acquire_shared(rl, v->resource, ttl_ms, wait_ms, lk, NULL);
    default: return redlock_acquire_ex(rl, v->resource, ttl_ms, wait_ms, lk, NULL);
    }
}

/* Makes the other holders of v on the handle others: v->held permits (the
 * slots 0 .. held-1, taken in order) or readers. Exits when one is refused. */
static void hold_others(redlock_t *others, variant_t *v) {
    for (unsigned i = 0; i < v->held; i++) {
        int rc = acquire(others, v, OTHERS_TTL_MS, 0, &v->others[i]);
        if (rc != REDLOCK_OK || (v->kind == K_PERMIT && redlock_lock_slot(v->others[i]) != (int)i)) {
            fprintf(stderr, "bench_kinds: %s: the other holder %u: %s\n", v->name, i, redlock_strerror(rc));
            exit(1);
        }
    }
}

/* Releases what hold_others made. */
static void release_others(redlock_t *others, variant_t *v) {
    for (unsigned i = 0; i < v->held; i++)
        if (v->others[i]) redlock_release(others, v->others[i]);
}

/* One acquire + release of v; adds its two times to v's samples when
 * record is set. A refusal, or a permit in another slot than the first free
 * one, counts as an error. */
static void cycle(redlock_t *rl, variant_t *v, int record) {
    redlock_lock_t *lk = NULL;
    uint64_t t0 = bench_now_ns();
    int rc = acquire(rl, v, cfg.ttl_ms, v->wait_ms, &lk);
    uint64_t t1 = bench_now_ns();
    if (rc != REDLOCK_OK) {
        v->errors++;
        return;
    }
    if (v->kind == K_PERMIT && redlock_lock_slot(lk) != (int)v->held) v->errors++;
    redlock_release(rl, lk);
    uint64_t t2 = bench_now_ns();
    if (!record) return;
    bench_samples_add(&v->acq, t1 - t0);
    bench_samples_add(&v->cyc, t2 - t0);
}

/* The p50 in µs of the last n cycle samples of v (a copy is sorted). */
static double block_p50(const variant_t *v, size_t n, bench_samples_t *scratch) {
    scratch->n = 0;
    for (size_t i = v->cyc.n - n; i < v->cyc.n; i++) bench_samples_add(scratch, v->cyc.v[i]);
    return bench_quantile_us(scratch, 0.5);
}

/* The rounds: in round r every variant runs a block, starting with
 * variant r mod N_VARIANTS. */
static void run_rounds(redlock_t *rl) {
    bench_samples_t scratch;
    bench_samples_init(&scratch, cfg.block);
    for (unsigned r = 0; r < cfg.rounds; r++) {
        for (size_t k = 0; k < N_VARIANTS; k++) {
            variant_t *v = &vs[(r + k) % N_VARIANTS];
            size_t before = v->cyc.n;
            for (unsigned c = 0; c < cfg.block; c++) cycle(rl, v, 1);
            v->round_p50[r] = v->cyc.n > before ? block_p50(v, v->cyc.n - before, &scratch) : 0;
        }
        fprintf(stderr, "bench_kinds: round %u/%u done\n", r + 1, cfg.rounds);
    }
    bench_samples_free(&scratch);
}

/* The least and the largest over the rounds of v's block p50 / the mutex's. */
static void round_ratio_range(const variant_t *v, double *lo, double *hi) {
    *lo = *hi = 0;
    for (unsigned r = 0; r < cfg.rounds; r++) {
        if (vs[0].round_p50[r] <= 0 || v->round_p50[r] <= 0) continue;
        double x = v->round_p50[r] / vs[0].round_p50[r];
        if (*lo == 0 || x < *lo) *lo = x;
        if (x > *hi) *hi = x;
    }
}

/* One row of the table for v; the mutex's cycle p50 is base (µs). */
static void print_row(variant_t *v, double base) {
    double a50 = bench_quantile_us(&v->acq, 0.5), a99 = bench_quantile_us(&v->acq, 0.99);
    double c50 = bench_quantile_us(&v->cyc, 0.5), c99 = bench_quantile_us(&v->cyc, 0.99);
    double ratio = base > 0 ? c50 / base : 0, lo, hi;
    round_ratio_range(v, &lo, &hi);
    printf("| %s | %.0f | %.0f | %.0f | %.0f | %.2f× | %.2f–%.2f |\n", v->name, a50, a99, c50, c99, ratio, lo, hi);
}

/* The table of every variant, then a line of totals. Returns the number of
 * variants with errors. */
static int print_table(void) {
    printf("| variant | acquire p50 µs | acquire p99 µs | acquire + release p50 µs | acquire + release p99 µs "
           "| p50 ÷ mutex | per-round range |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    double base = bench_quantile_us(&vs[0].cyc, 0.5);
    int bad = 0;
    for (size_t i = 0; i < N_VARIANTS; i++) print_row(&vs[i], base);
    printf("\n%zu nodes; %u rounds × %u cycles per variant (%zu cycles each in all), TTL %u ms.\n", cfg.n_nodes,
           cfg.rounds, cfg.block, vs[0].cyc.n, (unsigned)cfg.ttl_ms);
    for (size_t i = 0; i < N_VARIANTS; i++)
        if (vs[i].errors) {
            printf("ERRORS: %s: %llu refused acquires or unexpected slots.\n", vs[i].name,
                   (unsigned long long)vs[i].errors);
            bad++;
        }
    fflush(stdout);
    return bad;
}

/* Reads the command line into cfg; exits on a bad one. */
static void parse_args(int argc, char **argv) {
    char *uri_list = NULL;
    const bench_opt_t opts[] = {
        {"-u", .list = &uri_list},        {"-r", .uns = &cfg.rounds},    {"-b", .uns = &cfg.block},
        {"--warmup", .uns = &cfg.warmup}, {"--ttl", .uns = &cfg.ttl_ms},
    };
    int bad = bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], bench_print_version) != 0;
    if (uri_list) cfg.n_nodes = bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES);
    if (bad || !uri_list || !cfg.n_nodes || !cfg.rounds || !cfg.block || !cfg.ttl_ms)
        bench_usage(argv[0], "-u URI,URI,... [-r ROUNDS] [-b CYCLES] [--warmup CYCLES] [--ttl MS]\n", 1);
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    redlock_t *rl = make_handle(1), *others = make_handle(0);
    unsigned pid = (unsigned)getpid();
    for (size_t i = 0; i < N_VARIANTS; i++) {
        variant_t *v = &vs[i];
        snprintf(v->resource, sizeof v->resource, "bench:kinds:%u:%zu", pid, i);
        bench_samples_init(&v->acq, (size_t)cfg.rounds * cfg.block);
        bench_samples_init(&v->cyc, (size_t)cfg.rounds * cfg.block);
        v->round_p50 = calloc(cfg.rounds, sizeof *v->round_p50);
        if (!v->round_p50) exit(1);
        hold_others(others, v);
        for (unsigned c = 0; c < cfg.warmup; c++) cycle(rl, v, 0); /* connections, scripts, buffers */
    }
    run_rounds(rl);
    int bad = print_table();
    for (size_t i = 0; i < N_VARIANTS; i++) {
        release_others(others, &vs[i]);
        bench_samples_free(&vs[i].acq);
        bench_samples_free(&vs[i].cyc);
        free(vs[i].round_p50);
    }
    redlock_free(others);
    redlock_free(rl);
    return bad ? 1 : 0;
}
