/* bench_cluster.c -- acquire + release on Redlock nodes that are whole
 * Redis Clusters against plain single-master nodes (doc/design.md,
 * "Cluster routing"), through the public API only (include/redlock.h),
 * with the library's default options.
 *
 *   bench_cluster -p URI,URI,... -c URI,URI,... [-r ROUNDS] [-b CYCLES]
 *                 [-t THREADS] [-d MS] [--warmup CYCLES] [--ttl MS] [--tag TAG]
 *                 [--op-timeout MS]
 *   bench_cluster --version
 *
 * Two redlock_t handles in one process: "plain" over the -p nodes
 * (redis://) and "cluster" over the -c nodes (redis+cluster://). Every
 * cycle is redlock_acquire_ex (one attempt, wait_ms 0) + redlock_release of
 * a resource never used before, so that on cluster nodes the keys spread
 * over the shards as an application's would. ROUNDS rounds (default 30);
 * in each, both handles run
 *   serial      a block of CYCLES cycles (default 300) from one thread, and
 *   concurrent  THREADS threads (default 8) on the one handle, each
 *               cycling resources of its own, for MS milliseconds (default
 *               1000),
 * the handle that goes first alternating from round to round, so that the
 * noise of a shared machine falls on both alike.
 *
 * --tag TAG names every resource of the cluster handle "{TAG}:...": all its
 * keys then fall in one slot, so each cluster node serves them from one
 * shard, over one connection, as a plain node does; set against the run
 * without it, this tells the cost of the routing itself (the same code
 * path either way) from the cost of spreading the keys over more server
 * processes and connections (which on a small machine is scheduling).
 *
 * Prints a markdown table on stdout: for each measure (acquire and cycle
 * p50/p99, cycles/s) its value on plain and on cluster nodes over all the
 * rounds, cluster / plain, and the spread of that ratio over the rounds
 * (computed inside each round from its two blocks): median, least and
 * largest. A last line on stderr gives the calls made
 * ("bench_cluster: calls plain_acquires=... cluster_releases=..."), for the
 * caller that counts the commands the nodes saw. Exits 1 when an acquire
 * or a release failed (they are counted in the table), else 0.
 * Diagnostics go to stderr; tokens are never printed. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <redlock.h>

#include "common.h"
#include "handle.h"

/* The measures of the table, in its order. */
enum {
    M_ACQ50, /* serial: acquire p50 */
    M_ACQ99,
    M_CYC50, /* serial: acquire + release p50 */
    M_CYC99,
    M_RATE,   /* serial: cycles/s */
    M_CRATE,  /* concurrent: cycles/s of all the threads */
    M_CCYC50, /* concurrent: acquire + release p50 */
    M_CCYC99,
    N_MEASURES
};

static const char *measure_name[N_MEASURES] = {
    [M_ACQ50] = "serial: acquire p50 µs",
    [M_ACQ99] = "serial: acquire p99 µs",
    [M_CYC50] = "serial: acquire + release p50 µs",
    [M_CYC99] = "serial: acquire + release p99 µs",
    [M_RATE] = "serial: cycles/s",
    [M_CRATE] = "%u threads: cycles/s",
    [M_CCYC50] = "%u threads: acquire + release p50 µs",
    [M_CCYC99] = "%u threads: acquire + release p99 µs",
};

typedef struct variant {
    const char *name; /* "plain" or "cluster" */
    char *uri_list;   /* the command line's list, split in place */
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    redlock_t *rl;
    atomic_ullong seq;                /* the next resource number (every thread draws from it) */
    bench_samples_t acq, cyc;         /* serial: every measured cycle of every round */
    bench_samples_t ccyc;             /* concurrent: every measured cycle of every round */
    uint64_t serial_ns, serial_n;     /* serial: time in the blocks, cycles done */
    uint64_t conc_ns, conc_n;         /* concurrent: likewise */
    double *round[N_MEASURES];        /* each round's value of each measure */
    atomic_ullong acquires, releases; /* calls made, warm-up included */
    atomic_ullong acq_fail, rel_fail; /* of which failed */
    atomic_int last_err;              /* the last failure's return code */
} variant_t;

static variant_t vs[2] = {{.name = "plain"}, {.name = "cluster"}};

static struct {
    unsigned rounds, block, threads, warmup;
    unsigned conc_ms;
    unsigned ttl_ms;
    const char *tag; /* --tag: the cluster handle's resources all carry this hash tag */
    unsigned pid;
    unsigned op_timeout_ms; /* --op-timeout: both handles' op_timeout_ms (0: the default) */
} cfg = {.rounds = 30, .block = 300, .threads = 8, .warmup = 300, .conc_ms = 1000, .ttl_ms = 10000};

/* A handle with the default options over v's nodes; exits if refused. */
static redlock_t *make_handle(const variant_t *v) {
    redlock_options_t opt;
    bench_options_init(&opt, v->uris, v->n_nodes, cfg.op_timeout_ms);
    char who[64];
    snprintf(who, sizeof who, "bench_cluster: redlock_new (%s nodes)", v->name);
    return bench_handle_new(&opt, who);
}

/* One acquire + release of a fresh resource of v ("bench:cluster:PID:NAME:SEQ",
 * on the cluster handle with --tag "{TAG}:bench:cluster:PID:NAME:SEQ");
 * on success sets *acq_ns and *cyc_ns and returns 1, else counts the failure
 * and returns 0. */
static int cycle(variant_t *v, uint64_t *acq_ns, uint64_t *cyc_ns) {
    char res[96];
    unsigned long long n = atomic_fetch_add_explicit(&v->seq, 1, memory_order_relaxed);
    if (v == &vs[1] && cfg.tag)
        snprintf(res, sizeof res, "{%s}:bench:cluster:%u:%s:%llu", cfg.tag, cfg.pid, v->name, n);
    else
        snprintf(res, sizeof res, "bench:cluster:%u:%s:%llu", cfg.pid, v->name, n);
    redlock_lock_t *lk = NULL;
    uint64_t t0 = bench_now_ns();
    int rc = redlock_acquire_ex(v->rl, res, cfg.ttl_ms, 0, &lk, NULL);
    uint64_t t1 = bench_now_ns();
    atomic_fetch_add_explicit(&v->acquires, 1, memory_order_relaxed);
    if (rc != REDLOCK_OK) {
        atomic_fetch_add_explicit(&v->acq_fail, 1, memory_order_relaxed);
        atomic_store_explicit(&v->last_err, rc, memory_order_relaxed);
        return 0;
    }
    rc = redlock_release(v->rl, lk);
    uint64_t t2 = bench_now_ns();
    atomic_fetch_add_explicit(&v->releases, 1, memory_order_relaxed);
    if (rc != REDLOCK_OK) {
        atomic_fetch_add_explicit(&v->rel_fail, 1, memory_order_relaxed);
        atomic_store_explicit(&v->last_err, rc, memory_order_relaxed);
        return 0;
    }
    *acq_ns = t1 - t0;
    *cyc_ns = t2 - t0;
    return 1;
}

/* The q-quantile in µs of the last n samples of s (a copy is sorted). */
static double tail_quantile(const bench_samples_t *s, size_t n, double q, bench_samples_t *scratch) {
    scratch->n = 0;
    for (size_t i = s->n - n; i < s->n; i++) bench_samples_add(scratch, s->v[i]);
    return bench_quantile_us(scratch, q);
}

/* Round r's serial block of v. */
static void serial_block(variant_t *v, unsigned r, bench_samples_t *scratch) {
    size_t before = v->cyc.n;
    uint64_t t0 = bench_now_ns(), a, c;
    unsigned done = 0;
    for (unsigned i = 0; i < cfg.block; i++)
        if (cycle(v, &a, &c)) {
            bench_samples_add(&v->acq, a);
            bench_samples_add(&v->cyc, c);
            done++;
        }
    uint64_t ns = bench_now_ns() - t0;
    v->serial_ns += ns;
    v->serial_n += done;
    size_t n = v->cyc.n - before;
    v->round[M_ACQ50][r] = n ? tail_quantile(&v->acq, n, 0.50, scratch) : 0;
    v->round[M_ACQ99][r] = n ? tail_quantile(&v->acq, n, 0.99, scratch) : 0;
    v->round[M_CYC50][r] = n ? tail_quantile(&v->cyc, n, 0.50, scratch) : 0;
    v->round[M_CYC99][r] = n ? tail_quantile(&v->cyc, n, 0.99, scratch) : 0;
    v->round[M_RATE][r] = ns ? (double)done * 1e9 / (double)ns : 0;
}

/* One thread of a concurrent block. */
typedef struct worker {
    pthread_t th;
    variant_t *v;
    bench_samples_t cyc;
    uint64_t done;
} worker_t;

static pthread_barrier_t go;
static atomic_int stop;

static void *worker_main(void *arg) {
    worker_t *w = arg;
    uint64_t a, c;
    pthread_barrier_wait(&go);
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        if (cycle(w->v, &a, &c)) {
            bench_samples_add(&w->cyc, c);
            w->done++;
        }
    return NULL;
}

/* THREADS threads on v's handle for ms milliseconds. With r < rounds the
 * block is measured as round r's (else it is a warm-up). The time runs
 * from the start signal until every thread has finished the cycle it was
 * in when told to stop; those cycles count. */
static void concurrent_block(variant_t *v, unsigned r, unsigned ms, bench_samples_t *scratch) {
    worker_t *ws = calloc(cfg.threads, sizeof *ws);
    if (!ws) exit(1);
    size_t cap = (size_t)ms * 50 + 1000; /* far above what one thread can do (20 µs a cycle) */
    atomic_store(&stop, 0);
    pthread_barrier_init(&go, NULL, cfg.threads + 1);
    for (unsigned i = 0; i < cfg.threads; i++) {
        ws[i].v = v;
        bench_samples_init(&ws[i].cyc, cap);
        if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]) != 0) {
            fprintf(stderr, "bench_cluster: pthread_create failed\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&go);
    uint64_t t0 = bench_now_ns();
    bench_sleep_ms(ms);
    atomic_store(&stop, 1);
    uint64_t done = 0;
    size_t before = v->ccyc.n;
    for (unsigned i = 0; i < cfg.threads; i++) {
        pthread_join(ws[i].th, NULL);
        done += ws[i].done;
    }
    uint64_t ns = bench_now_ns() - t0;
    pthread_barrier_destroy(&go);
    if (r < cfg.rounds) {
        for (unsigned i = 0; i < cfg.threads; i++) bench_samples_merge(&v->ccyc, &ws[i].cyc);
        v->conc_ns += ns;
        v->conc_n += done;
        size_t n = v->ccyc.n - before;
        v->round[M_CRATE][r] = ns ? (double)done * 1e9 / (double)ns : 0;
        v->round[M_CCYC50][r] = n ? tail_quantile(&v->ccyc, n, 0.50, scratch) : 0;
        v->round[M_CCYC99][r] = n ? tail_quantile(&v->ccyc, n, 0.99, scratch) : 0;
    }
    for (unsigned i = 0; i < cfg.threads; i++) bench_samples_free(&ws[i].cyc);
    free(ws);
}

/* The rounds: in round r the variant r mod 2 goes first, in both parts. */
static void run_rounds(void) {
    bench_samples_t scratch;
    bench_samples_init(&scratch, cfg.block > 1000 ? cfg.block : 1000);
    for (unsigned r = 0; r < cfg.rounds; r++) {
        for (unsigned k = 0; k < 2; k++) serial_block(&vs[(r + k) % 2], r, &scratch);
        for (unsigned k = 0; k < 2; k++) concurrent_block(&vs[(r + k) % 2], r, cfg.conc_ms, &scratch);
        fprintf(stderr, "bench_cluster: round %u/%u done (%s first)\n", r + 1, cfg.rounds, vs[r % 2].name);
    }
    bench_samples_free(&scratch);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median, least and largest over the rounds of measure m's
 * cluster / plain (rounds where either is missing are left out). Returns
 * the number of rounds counted. */
static unsigned round_ratios(int m, double *med, double *lo, double *hi) {
    double *x = calloc(cfg.rounds, sizeof *x);
    if (!x) exit(1);
    unsigned n = 0;
    for (unsigned r = 0; r < cfg.rounds; r++)
        if (vs[0].round[m][r] > 0 && vs[1].round[m][r] > 0) x[n++] = vs[1].round[m][r] / vs[0].round[m][r];
    *med = *lo = *hi = 0;
    if (n) {
        qsort(x, n, sizeof *x, cmp_double);
        *med = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
        *lo = x[0];
        *hi = x[n - 1];
    }
    free(x);
    return n;
}

/* Measure m over all the rounds of v. */
static double overall(variant_t *v, int m) {
    switch (m) {
    case M_ACQ50: return bench_quantile_us(&v->acq, 0.50);
    case M_ACQ99: return bench_quantile_us(&v->acq, 0.99);
    case M_CYC50: return bench_quantile_us(&v->cyc, 0.50);
    case M_CYC99: return bench_quantile_us(&v->cyc, 0.99);
    case M_RATE: return v->serial_ns ? (double)v->serial_n * 1e9 / (double)v->serial_ns : 0;
    case M_CRATE: return v->conc_ns ? (double)v->conc_n * 1e9 / (double)v->conc_ns : 0;
    case M_CCYC50: return bench_quantile_us(&v->ccyc, 0.50);
    default: return bench_quantile_us(&v->ccyc, 0.99);
    }
}

/* The table, then a paragraph of totals. Returns the number of failed calls. */
static unsigned long long print_table(void) {
    printf("| measure | plain nodes | cluster nodes%s | cluster ÷ plain | per-round ratio: median (least–largest) |\n",
           cfg.tag ? ", every key in one slot" : "");
    printf("|---|---:|---:|---:|---:|\n");
    for (int m = 0; m < N_MEASURES; m++) {
        char name[96];
        snprintf(name, sizeof name, measure_name[m], cfg.threads);
        double p = overall(&vs[0], m), c = overall(&vs[1], m), med, lo, hi;
        round_ratios(m, &med, &lo, &hi);
        printf("| %s | %.0f | %.0f | %.2f× | %.2f× (%.2f–%.2f) |\n", name, p, c, p > 0 ? c / p : 0, med, lo, hi);
    }
    printf("\n%zu plain nodes, %zu cluster nodes; %u rounds, each a serial block of %u cycles and a %u ms block of "
           "%u threads per handle, the handle going first alternating. Cycles measured, serial: %llu plain, %llu "
           "cluster; concurrent: %llu plain, %llu cluster. TTL %u ms, one attempt per acquire (wait_ms 0), op "
           "timeout %s%u ms.\n",
           vs[0].n_nodes, vs[1].n_nodes, cfg.rounds, cfg.block, cfg.conc_ms, cfg.threads,
           (unsigned long long)vs[0].serial_n, (unsigned long long)vs[1].serial_n, (unsigned long long)vs[0].conc_n,
           (unsigned long long)vs[1].conc_n, (unsigned)cfg.ttl_ms, cfg.op_timeout_ms ? "" : "the default ",
           (unsigned)(cfg.op_timeout_ms ? cfg.op_timeout_ms : 50u));
    unsigned long long bad = 0;
    for (int i = 0; i < 2; i++) {
        unsigned long long af = atomic_load(&vs[i].acq_fail), rf = atomic_load(&vs[i].rel_fail);
        if (af || rf)
            printf("\nFAILURES on %s nodes: %llu of %llu acquires, %llu of %llu releases (last: %s).\n", vs[i].name, af,
                   (unsigned long long)atomic_load(&vs[i].acquires), rf,
                   (unsigned long long)atomic_load(&vs[i].releases), redlock_strerror(atomic_load(&vs[i].last_err)));
        bad += af + rf;
    }
    fflush(stdout);
    return bad;
}

/* Reads the command line into cfg and vs; exits on a bad one. */
static void parse_args(int argc, char **argv) {
    const bench_opt_t opts[] = {
        {"-p", .list = &vs[0].uri_list},  {"-c", .list = &vs[1].uri_list},
        {"-r", .uns = &cfg.rounds},       {"-b", .uns = &cfg.block},
        {"-t", .uns = &cfg.threads},      {"-d", .uns = &cfg.conc_ms},
        {"--warmup", .uns = &cfg.warmup}, {"--ttl", .uns = &cfg.ttl_ms},
        {"--tag", .str = &cfg.tag},       {"--op-timeout", .uns = &cfg.op_timeout_ms},
    };
    int bad = bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], bench_print_version) != 0;
    for (int i = 0; i < 2; i++)
        if (vs[i].uri_list) vs[i].n_nodes = bench_split_uris(vs[i].uri_list, vs[i].uris, BENCH_MAX_NODES);
    if (cfg.tag && (!*cfg.tag || strpbrk(cfg.tag, "{}") || strlen(cfg.tag) > 32)) bad = 1;
    if (bad || !vs[0].n_nodes || !vs[1].n_nodes || !cfg.rounds || !cfg.block || !cfg.threads || !cfg.conc_ms ||
        !cfg.ttl_ms)
        bench_usage(argv[0],
                    "-p URI,URI,... -c URI,URI,... [-r ROUNDS] [-b CYCLES] [-t THREADS] [-d MS]\n"
                    "          [--warmup CYCLES] [--ttl MS] [--tag TAG] [--op-timeout MS]\n",
                    1);
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    cfg.pid = (unsigned)getpid();
    for (int i = 0; i < 2; i++) {
        variant_t *v = &vs[i];
        v->rl = make_handle(v);
        bench_samples_init(&v->acq, (size_t)cfg.rounds * cfg.block);
        bench_samples_init(&v->cyc, (size_t)cfg.rounds * cfg.block);
        bench_samples_init(&v->ccyc, 1024);
        for (int m = 0; m < N_MEASURES; m++) {
            v->round[m] = calloc(cfg.rounds, sizeof *v->round[m]);
            if (!v->round[m]) exit(1);
        }
    }
    /* Warm-up, not measured: connections (on cluster nodes the slot map and
     * one connection per shard), scripts, buffers, the threads' paths. */
    bench_samples_t scratch;
    bench_samples_init(&scratch, 1000);
    for (int i = 0; i < 2; i++) {
        uint64_t a, c;
        for (unsigned k = 0; k < cfg.warmup; k++) cycle(&vs[i], &a, &c);
        concurrent_block(&vs[i], cfg.rounds, cfg.conc_ms / 4 + 1, &scratch);
    }
    bench_samples_free(&scratch);
    for (int i = 0; i < 2; i++)
        if (atomic_load(&vs[i].acq_fail) || atomic_load(&vs[i].rel_fail))
            fprintf(stderr, "bench_cluster: warm-up on %s nodes: %llu acquires and %llu releases failed (last: %s)\n",
                    vs[i].name, (unsigned long long)atomic_load(&vs[i].acq_fail),
                    (unsigned long long)atomic_load(&vs[i].rel_fail), redlock_strerror(atomic_load(&vs[i].last_err)));
    run_rounds();
    unsigned long long bad = print_table();
    fprintf(stderr,
            "bench_cluster: calls plain_acquires=%llu plain_releases=%llu cluster_acquires=%llu "
            "cluster_releases=%llu\n",
            (unsigned long long)atomic_load(&vs[0].acquires), (unsigned long long)atomic_load(&vs[0].releases),
            (unsigned long long)atomic_load(&vs[1].acquires), (unsigned long long)atomic_load(&vs[1].releases));
    for (int i = 0; i < 2; i++) {
        redlock_free(vs[i].rl);
        bench_samples_free(&vs[i].acq);
        bench_samples_free(&vs[i].cyc);
        bench_samples_free(&vs[i].ccyc);
        for (int m = 0; m < N_MEASURES; m++) free(vs[i].round[m]);
    }
    return bad ? 1 : 0;
}
