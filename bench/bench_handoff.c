/* bench_handoff.c -- waiting for a taken lock, through
 * the public API only (include/redlock.h). Options are the library's
 * defaults (redlock_options_init, only the nodes set): this measures what a
 * user who changes nothing gets.
 *
 *   bench_handoff -u URI,URI,... -w contend|idle [-d SECONDS] [-t THREADS]
 *                 [--handles one|each] [--hold-ms MS] [--work-ms MS]
 *                 [--ttl MS] [--wait-ms MS] [--settle SECONDS] [--retry-count N]
 *                 [--samples FILE] [--impl NAME] [--key NAME]
 *                 [--shared-counter FILE] [--timeline FILE]
 *   bench_handoff --version
 *
 * contend  THREADS threads (default 8) on ONE resource for SECONDS (default
 *          6). Each loops: acquire with wait_ms (default -1: no bound; an
 *          acquire that still ends REDLOCK_ERR_TAKEN after retry_count
 *          retries is called again at once, the thread still waiting), hold
 *          --hold-ms (5), release, then work --work-ms (5) elsewhere (a
 *          sleep). Measured:
 *            handoff  the time from a release made while another thread was
 *                     waiting (inside acquire) to the next grant. The release
 *                     time is read just before redlock_release is called and
 *                     published on a shared monotonic clock; the next grant,
 *                     read as its acquire returns, takes it (each release
 *                     gives at most one sample). Releases with no waiter give
 *                     none.
 *            busy     grants x hold time / run time, and the held time
 *                     measured (grant to release call, within the run) / run
 *                     time.
 *            fairness grants per thread; least / mean; and how many handoffs
 *                     went back to the thread that made the release.
 *          Also counts overlapping holders (must be 0). --samples FILE writes
 *          every handoff in µs, one a line, sorted.
 *          --shared-counter FILE: the holder count, the waiter count and the
 *          last release live in FILE (created if missing, mmap'd), so every
 *          process given the same FILE and --key takes part: an overlap is
 *          counted across the processes (violations: this process's grants
 *          that found another holder in), and a handoff from one process's
 *          release to another's grant is measured (one monotonic clock).
 *          --timeline FILE: one line per grant, in time order: its wall-clock
 *          time (CLOCK_REALTIME, seconds since the epoch) and its handoff in
 *          µs ("-" when the grant gave no sample); the RESULT line has the
 *          run's start_epoch and end_epoch on the same clock.
 * idle     THREADS waiters (default 64) wait on a resource that a separate
 *          redlock_t holds for the whole run (TTL longer than the run). After
 *          --settle (1 s) the nodes' INFO counters are read, then again after
 *          SECONDS (default 5): commands each node processed per second
 *          (total_commands_processed; each of this program's INFO calls, one
 *          per node per reading, is taken off), and that per waiter per
 *          fallback interval (retry_delay_ms). Commands a script runs inside
 *          Redis count too; the per-command split is printed (cmds_*).
 *          requests_per_waiter_per_interval: the rounds the waiters sent (each
 *          one request to every node, from redlock_stats) per waiter per
 *          fallback interval.
 * --retry-count N: instead of the default retry_count (3): an idle waiter
 *          whose wait does not end after 3 polls.
 * --retry-jitter MS: instead of the default retry_jitter_ms (half the
 *          delay): 0 makes an idle waiter poll at exactly retry_delay_ms
 *          plus its attempt's round trip, so a count of its polls has no
 *          sampling noise from the random jitter.
 * --handles one: every thread shares one redlock_t (default); each: one
 *          redlock_t per thread, as separate processes would have.
 * --key NAME: the resource (default bench:handoff:PID, this process's own).
 *
 * Every run prints a table and one machine-readable line on stdout:
 *   RESULT impl=NAME workload=contend|idle key=value ...
 * (latencies in µs, see common.h). Diagnostics go to stderr. The run ends by
 * redlock_cancel_waits on every handle, so no wait outlives it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <redlock.h>

#include "common.h"
#include "handle.h"

typedef struct config {
    const char *workload, *impl, *samples, *shared_counter, *timeline;
    const char *uris[BENCH_MAX_NODES];
    size_t n_nodes;
    double secs, threads, hold_ms, work_ms, ttl, settle;
    int64_t wait_ms;
    int each; /* one redlock_t per thread */
} config_t;

static config_t cfg = {
    .impl = "libredlock",
    .secs = -1, /* by workload: 6 (contend), 5 (idle) */
    .threads = 0,
    .hold_ms = 5,
    .work_ms = 5,
    .ttl = 10000,
    .settle = 1,
};

static redlock_options_t defaults; /* redlock_options_init + the nodes */
static char key[96];

/* A handle with the defaults, connected to every node with the scripts
 * loaded; exits if refused. */
static redlock_t *new_handle(void) {
    return bench_handle_warm(bench_handle_new(&defaults, "bench_handoff: redlock_new"), key);
}

static void sleep_until(uint64_t t_ns) {
    uint64_t now = bench_now_ns();
    if (t_ns > now) bench_sleep_ns(t_ns - now);
}

typedef struct worker {
    pthread_t th;
    redlock_t *rl;
    uint64_t grants, held_ns, taken, errors, release_errors;
    uint64_t regrants; /* counted handoffs that went back to this worker, its own release */
    uint64_t id;       /* this process's pid and the worker's number: who made a release */
    bench_samples_t handoff;
    bench_samples_t grant_rt, grant_handoff; /* --timeline: each grant's wall clock, its handoff (0: none) */
} worker_t;

/* The handles of a run: one shared, or one per worker. */
typedef struct pool {
    worker_t *ws;
    unsigned n;
    redlock_t **handles;
    unsigned n_handles;
} pool_t;

static pthread_barrier_t start_barrier;
static atomic_int stop_flag;
static uint64_t deadline_ns; /* contend: end of the run (written before the barrier) */

/* contend: what the contenders share -- this process's threads, or with
 * --shared-counter every process that maps the same file (so the atomics
 * must be lock-free, and the mutex process-shared). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "--shared-counter needs lock-free atomics");
#define SHARED_MAGIC 0x52444c4bu
typedef struct shared_state {
    atomic_uint ready;  /* SHARED_MAGIC once mu is initialised (a mapped file) */
    atomic_int waiting; /* threads inside acquire (wanting the lock) */
    atomic_int holders; /* threads that believe they hold it */
    pthread_mutex_t mu; /* guards last_release */
    /* The last release not yet followed by a grant (the next grant takes it). */
    struct {
        uint64_t t_ns;       /* read just before redlock_release was called */
        uint64_t by;         /* the releasing worker's id */
        int pending, waited; /* not taken yet; another thread was inside acquire then */
    } last_release;
} shared_state_t;
static shared_state_t local_state = {.mu = PTHREAD_MUTEX_INITIALIZER};
static shared_state_t *S = &local_state;
static atomic_ullong violations; /* this process's grants while another held it */

/* --shared-counter FILE: maps FILE as S. The process that creates it
 * initialises it; the others wait until it is ready (a few seconds at most). */
static void shared_map(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600), creator = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = open(path, O_RDWR);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    if (creator && ftruncate(fd, sizeof *S) != 0) {
        perror(path);
        exit(1);
    }
    struct stat st;
    for (int i = 0; !creator; i++) { /* mapping a page past its end would fault */
        if (fstat(fd, &st) != 0 || i == 5000) {
            fprintf(stderr, "bench_handoff: %s: not made ready by another process\n", path);
            exit(1);
        }
        if ((size_t)st.st_size >= sizeof *S) break;
        bench_sleep_ns(1000000);
    }
    void *m = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        perror(path);
        exit(1);
    }
    S = m;
    if (creator) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&S->mu, &a);
        pthread_mutexattr_destroy(&a);
        atomic_store(&S->ready, SHARED_MAGIC);
    }
    for (int i = 0; atomic_load(&S->ready) != SHARED_MAGIC; i++) {
        if (i == 5000) {
            fprintf(stderr, "bench_handoff: %s: not made ready by another process\n", path);
            exit(1);
        }
        bench_sleep_ns(1000000);
    }
}

static uint64_t now_rt_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pool_start(pool_t *p, unsigned n, int each, void *(*fn)(void *), size_t sample_cap) {
    p->n = n;
    p->n_handles = each ? n : 1;
    p->ws = calloc(n, sizeof *p->ws);
    p->handles = calloc(p->n_handles, sizeof *p->handles);
    if (!p->ws || !p->handles) {
        fprintf(stderr, "bench_handoff: out of memory\n");
        exit(1);
    }
    for (unsigned i = 0; i < p->n_handles; i++) p->handles[i] = new_handle();
    pthread_barrier_init(&start_barrier, NULL, n + 1);
    atomic_store(&stop_flag, 0);
    for (unsigned i = 0; i < n; i++) {
        p->ws[i].rl = p->handles[each ? i : 0];
        p->ws[i].id = (uint64_t)getpid() << 20 | (i + 1);
        bench_samples_init(&p->ws[i].handoff, sample_cap);
        bench_samples_init(&p->ws[i].grant_rt, cfg.timeline ? sample_cap : 1);
        bench_samples_init(&p->ws[i].grant_handoff, cfg.timeline ? sample_cap : 1);
        if (pthread_create(&p->ws[i].th, NULL, fn, &p->ws[i]) != 0) {
            fprintf(stderr, "bench_handoff: pthread_create failed\n");
            exit(1);
        }
    }
}

/* Stops the workers: the flag, then every wait in progress on the pool's
 * handles ends (a wait started just after a worker read the flag is not
 * cancelled: it ends by a grant, which the worker gives back). */
static void pool_cancel(pool_t *p) {
    atomic_store(&stop_flag, 1);
    for (unsigned i = 0; i < p->n_handles; i++) redlock_cancel_waits(p->handles[i]);
}

static void pool_join(pool_t *p) {
    for (unsigned i = 0; i < p->n; i++) pthread_join(p->ws[i].th, NULL);
    pthread_barrier_destroy(&start_barrier);
}

static void pool_free(pool_t *p) {
    for (unsigned i = 0; i < p->n; i++) {
        bench_samples_free(&p->ws[i].handoff);
        bench_samples_free(&p->ws[i].grant_rt);
        bench_samples_free(&p->ws[i].grant_handoff);
    }
    for (unsigned i = 0; i < p->n_handles; i++) redlock_free(p->handles[i]);
    free(p->ws);
    free(p->handles);
}

/* Acquires the bench key with the configured wait, calling again after an
 * acquire that ran out of retries, until granted or the run stops.
 * Returns the last code. */
static int acquire_waiting(worker_t *w, redlock_lock_t **lk) {
    for (;;) {
        int rc = redlock_acquire_ex(w->rl, key, (uint32_t)cfg.ttl, cfg.wait_ms, lk, NULL);
        if (rc == REDLOCK_OK) return rc;
        if (atomic_load(&stop_flag)) return rc;
        if (rc == REDLOCK_ERR_TAKEN) {
            w->taken++;
        } else {
            w->errors++;
            if (w->errors <= 3) fprintf(stderr, "bench_handoff: acquire: %s\n", redlock_strerror(rc));
            bench_sleep_ns(1000000); /* no busy loop on a failing cluster */
        }
    }
}

/* ----------------------------------------------------------------- contend */

static void *contend_main(void *arg) {
    worker_t *w = arg;
    uint64_t hold_ns = (uint64_t)(cfg.hold_ms * 1e6), work_ns = (uint64_t)(cfg.work_ms * 1e6);
    pthread_barrier_wait(&start_barrier);
    while (!atomic_load(&stop_flag)) {
        redlock_lock_t *lk = NULL;
        atomic_fetch_add(&S->waiting, 1);
        int rc = acquire_waiting(w, &lk);
        uint64_t granted = bench_now_ns(), granted_rt = now_rt_ns();
        atomic_fetch_sub(&S->waiting, 1);
        if (rc != REDLOCK_OK) break;
        if (atomic_fetch_add(&S->holders, 1) != 0) atomic_fetch_add(&violations, 1);
        pthread_mutex_lock(&S->mu);
        int counted = S->last_release.pending && S->last_release.waited && granted > S->last_release.t_ns;
        uint64_t handoff = granted - S->last_release.t_ns;
        int same = S->last_release.by == w->id;
        S->last_release.pending = 0;
        pthread_mutex_unlock(&S->mu);
        if (granted >= deadline_ns) { /* after the run: not counted */
            atomic_fetch_sub(&S->holders, 1);
            redlock_release(w->rl, lk);
            break;
        }
        if (counted) {
            bench_samples_add(&w->handoff, handoff);
            w->regrants += same;
        }
        bench_samples_add(&w->grant_rt, granted_rt);
        bench_samples_add(&w->grant_handoff, counted ? handoff : 0);
        w->grants++;
        bench_sleep_ns(hold_ns);
        uint64_t t = bench_now_ns();
        w->held_ns += (t < deadline_ns ? t : deadline_ns) - granted;
        atomic_fetch_sub(&S->holders, 1);
        pthread_mutex_lock(&S->mu);
        S->last_release.t_ns = t;
        S->last_release.by = w->id;
        S->last_release.waited = atomic_load(&S->waiting) > 0;
        S->last_release.pending = 1;
        pthread_mutex_unlock(&S->mu);
        if (redlock_release(w->rl, lk) != REDLOCK_OK) w->release_errors++;
        bench_sleep_ns(work_ns);
    }
    return NULL;
}

/* Writes the run's retry_jitter_ms into buf (n bytes): "auto" for the
 * default (half the delay, at most 100 ms), else the number of ms.
 * Returns buf. */
static const char *jitter_text(char *buf, size_t n) {
    if (defaults.retry_jitter_ms == REDLOCK_RETRY_JITTER_AUTO)
        snprintf(buf, n, "auto");
    else
        snprintf(buf, n, "%u", defaults.retry_jitter_ms);
    return buf;
}

/* Adds retry_jitter_ms to the RESULT line (jitter_text). */
static void kv_jitter(void) {
    char buf[16];
    bench_kv_str("retry_jitter_ms", jitter_text(buf, sizeof buf));
}

/* Prints p50/p90/p99/max of s (sorted by the first call) as PREFIX_*_us;
 * q[] gets them too. */
static void kv_handoff(bench_samples_t *s, double q[4]) {
    static const char *names[] = {"handoff_p50_us", "handoff_p90_us", "handoff_p99_us", "handoff_max_us"};
    static const double at[] = {0.50, 0.90, 0.99, 1.0};
    for (int i = 0; i < 4; i++) {
        q[i] = bench_quantile_us(s, at[i]);
        bench_kv_f(names[i], q[i]);
    }
}

static void write_samples(const bench_samples_t *s) {
    if (!cfg.samples) return;
    FILE *f = fopen(cfg.samples, "w");
    if (!f) {
        perror(cfg.samples);
        exit(1);
    }
    for (size_t i = 0; i < s->n; i++) fprintf(f, "%.3f\n", (double)s->v[i] / 1000.0);
    if (fclose(f) != 0) {
        perror(cfg.samples);
        exit(1);
    }
}

/* --timeline: every worker's grants, merged in time order. */
typedef struct grant_at {
    uint64_t rt_ns, handoff_ns;
} grant_at_t;

static int by_time(const void *a, const void *b) {
    uint64_t x = ((const grant_at_t *)a)->rt_ns, y = ((const grant_at_t *)b)->rt_ns;
    return (x > y) - (x < y);
}

static void write_timeline(const pool_t *p) {
    if (!cfg.timeline) return;
    size_t n = 0, k = 0;
    for (unsigned i = 0; i < p->n; i++) n += p->ws[i].grant_rt.n;
    grant_at_t *g = malloc((n ? n : 1) * sizeof *g);
    FILE *f = fopen(cfg.timeline, "w");
    if (!g || !f) {
        perror(cfg.timeline);
        exit(1);
    }
    for (unsigned i = 0; i < p->n; i++)
        for (size_t j = 0; j < p->ws[i].grant_rt.n; j++)
            g[k++] = (grant_at_t){p->ws[i].grant_rt.v[j], p->ws[i].grant_handoff.v[j]};
    qsort(g, n, sizeof *g, by_time);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%llu.%06llu ", (unsigned long long)(g[i].rt_ns / 1000000000u),
                (unsigned long long)(g[i].rt_ns % 1000000000u / 1000u));
        if (g[i].handoff_ns)
            fprintf(f, "%.3f\n", (double)g[i].handoff_ns / 1000.0);
        else
            fputs("-\n", f);
    }
    free(g);
    if (fclose(f) != 0) {
        perror(cfg.timeline);
        exit(1);
    }
}

/* Acquire attempts of the pool's handles that split the vote (some yes,
 * some no, no quorum): two contenders colliding, each then backing off. */
static uint64_t splits_of(const pool_t *p) {
    redlock_stats_t *st = malloc(sizeof *st);
    uint64_t n = 0;
    for (unsigned h = 0; st && h < p->n_handles; h++)
        if (redlock_stats(p->handles[h], st) == REDLOCK_OK) n += st->splits;
    free(st);
    return n;
}

static int run_contend(void) {
    unsigned n = cfg.threads > 0 ? (unsigned)cfg.threads : 8;
    double secs = cfg.secs >= 0 ? cfg.secs : 6;
    pool_t p;
    /* a handoff every few ms at most */
    pool_start(&p, n, cfg.each, contend_main, (size_t)(secs * 2000.0) + 1000);
    uint64_t t0 = bench_now_ns(), t0_rt = now_rt_ns();
    deadline_ns = t0 + (uint64_t)(secs * 1e9);
    pthread_barrier_wait(&start_barrier);
    sleep_until(deadline_ns);
    pool_cancel(&p);
    pool_join(&p);
    double run_s = (double)(deadline_ns - t0) / 1e9;

    bench_samples_t all;
    bench_samples_init(&all, 1);
    uint64_t grants = 0, held_ns = 0, taken = 0, errors = 0, rel_errors = 0, regrants = 0, gmin = UINT64_MAX, gmax = 0;
    for (unsigned i = 0; i < n; i++) {
        worker_t *w = &p.ws[i];
        bench_samples_merge(&all, &w->handoff);
        grants += w->grants;
        held_ns += w->held_ns;
        taken += w->taken;
        errors += w->errors;
        rel_errors += w->release_errors;
        regrants += w->regrants;
        if (w->grants < gmin) gmin = w->grants;
        if (w->grants > gmax) gmax = w->grants;
    }
    double mean = (double)grants / n;
    double busy = 100.0 * (double)grants * cfg.hold_ms / 1000.0 / run_s;
    double held = 100.0 * (double)held_ns / 1e9 / run_s;
    double fair = mean > 0 ? (double)gmin / mean : 0;

    /* the machine-readable line first: it sorts the samples */
    double q[4];
    bench_line_begin(cfg.impl, "contend");
    bench_kv_u64("nodes", defaults.n_nodes);
    bench_kv_u64("threads", n);
    bench_kv_u64("handles", p.n_handles);
    bench_kv_f("secs", run_s);
    bench_kv_f("start_epoch", (double)t0_rt / 1e9);
    bench_kv_f("end_epoch", (double)t0_rt / 1e9 + run_s);
    bench_kv_u64("shared_counter", cfg.shared_counter != NULL);
    bench_kv_f("wait_ms", (double)cfg.wait_ms);
    bench_kv_f("hold_ms", cfg.hold_ms);
    bench_kv_f("work_ms", cfg.work_ms);
    bench_kv_u64("handoffs", all.n);
    kv_handoff(&all, q);
    bench_kv_f("busy_pct", busy);
    bench_kv_f("held_pct", held);
    bench_kv_u64("grants", grants);
    bench_kv_u64("grants_min", gmin);
    bench_kv_f("grants_mean", mean);
    bench_kv_u64("grants_max", gmax);
    bench_kv_f("min_over_mean", fair);
    bench_kv_f("back_to_releaser_pct", all.n ? 100.0 * (double)regrants / (double)all.n : 0);
    printf(" grants_per_thread=");
    for (unsigned i = 0; i < n; i++) printf("%s%llu", i ? "/" : "", (unsigned long long)p.ws[i].grants);
    bench_kv_u64("retry_delay_ms", defaults.retry_delay_ms);
    kv_jitter();
    bench_kv_u64("retry_count", defaults.retry_count);
    bench_kv_u64("taken_recalls", taken);
    bench_kv_u64("splits", splits_of(&p));
    bench_kv_u64("violations", atomic_load(&violations));
    bench_kv_u64("errors", errors);
    bench_kv_u64("release_errors", rel_errors);
    bench_line_end();

    char jitter[16];
    jitter_text(jitter, sizeof jitter);
    printf("%s: %u threads on one resource, %u redlock_t, %zu nodes, default options (retry_delay %u ms +- %s, "
           "retry_count %u), hold %.0f ms, work %.0f ms, %.1f s\n",
           cfg.impl, n, p.n_handles, defaults.n_nodes, defaults.retry_delay_ms, jitter, defaults.retry_count,
           cfg.hold_ms, cfg.work_ms, run_s);
    printf("  %8s %10s %10s %10s %10s %7s %7s %7s %15s\n", "handoffs", "p50 us", "p90 us", "p99 us", "max us", "busy %",
           "held %", "grants", "min thread/mean");
    printf("  %8zu %10.1f %10.1f %10.1f %10.1f %7.1f %7.1f %7llu %15.2f\n", all.n, q[0], q[1], q[2], q[3], busy, held,
           (unsigned long long)grants, fair);
    fflush(stdout);
    write_samples(&all);
    write_timeline(&p);
    if (atomic_load(&violations))
        fprintf(stderr, "bench_handoff: %llu overlapping grants!\n", (unsigned long long)atomic_load(&violations));
    bench_samples_free(&all);
    pool_free(&p);
    return grants && !atomic_load(&violations) ? 0 : 1;
}

/* -------------------------------------------------------------------- idle */

static atomic_ullong idle_grants; /* grants before the stop: the holder's lock was lost */

static void *idle_main(void *arg) {
    worker_t *w = arg;
    pthread_barrier_wait(&start_barrier);
    while (!atomic_load(&stop_flag)) {
        redlock_lock_t *lk = NULL;
        if (acquire_waiting(w, &lk) != REDLOCK_OK) break;
        if (!atomic_load(&stop_flag)) atomic_fetch_add(&idle_grants, 1);
        redlock_release(w->rl, lk);
    }
    return NULL;
}

#define MAX_CMDS 32
typedef struct node_counts {
    unsigned long long total;
    size_t n_cmds;
    char name[MAX_CMDS][32];
    unsigned long long calls[MAX_CMDS];
} node_counts_t;

static redisContext *info_connect(const char *uri) {
    char host[256], path[256];
    int port;
    if (bench_parse_uri(uri, host, sizeof host, &port, path, sizeof path) != 0) {
        fprintf(stderr, "bench_handoff: cannot read INFO of '%s' (redis://host:port or unix:// only)\n", uri);
        exit(1);
    }
    struct timeval tv = {2, 0};
    redisContext *c = path[0] ? redisConnectUnixWithTimeout(path, tv) : redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        fprintf(stderr, "bench_handoff: connect %s: %s\n", uri, c ? c->errstr : "out of memory");
        exit(1);
    }
    return c;
}

/* One INFO ALL: total_commands_processed and every cmdstat_*'s calls. */
static void info_read(redisContext *c, node_counts_t *out) {
    memset(out, 0, sizeof *out);
    redisReply *r = redisCommand(c, "INFO all");
    if (!r || r->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "bench_handoff: INFO failed: %s\n", r ? "unexpected reply" : c->errstr);
        exit(1);
    }
    for (char *save = NULL, *line = strtok_r(r->str, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
        if (!strncmp(line, "total_commands_processed:", 25)) {
            out->total = strtoull(line + 25, NULL, 10);
        } else if (!strncmp(line, "cmdstat_", 8) && out->n_cmds < MAX_CMDS) {
            const char *colon = strchr(line, ':'), *calls = strstr(line, "calls=");
            if (!colon || !calls) continue;
            size_t len = (size_t)(colon - (line + 8));
            if (len >= sizeof out->name[0]) len = sizeof out->name[0] - 1;
            memcpy(out->name[out->n_cmds], line + 8, len);
            out->name[out->n_cmds][len] = '\0';
            out->calls[out->n_cmds++] = strtoull(calls + 6, NULL, 10);
        }
    }
    freeReplyObject(r);
}

static unsigned long long calls_of(const node_counts_t *c, const char *name) {
    for (size_t i = 0; i < c->n_cmds; i++)
        if (!strcmp(c->name[i], name)) return c->calls[i];
    return 0;
}

/* Rounds the pool's handles made (each sends its command to every node;
 * votes are not counted per node, since a node whose reply comes after the
 * round was decided gives none); with the lock held by another handle,
 * the rounds are the refused attempts and their clean-ups. */
static uint64_t rounds_of(const pool_t *p, redlock_stats_t *st) {
    uint64_t r = 0;
    for (unsigned h = 0; h < p->n_handles; h++) {
        redlock_stats(p->handles[h], st);
        r += st->rounds.count;
    }
    return r;
}

static int run_idle(void) {
    unsigned n = cfg.threads > 0 ? (unsigned)cfg.threads : 64;
    double secs = cfg.secs >= 0 ? cfg.secs : 5;
    size_t nn = defaults.n_nodes;
    redlock_stats_t *st = malloc(sizeof *st);
    node_counts_t *before = calloc(nn, sizeof *before), *after = calloc(nn, sizeof *after);
    redisContext **info = calloc(nn, sizeof *info);
    if (!st || !before || !after || !info) {
        fprintf(stderr, "bench_handoff: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nn; i++) info[i] = info_connect(defaults.nodes[i]);

    /* the holder: a handle of its own, a TTL that outlasts the run */
    redlock_t *holder = new_handle();
    redlock_lock_t *held = NULL;
    uint32_t hold_ttl = (uint32_t)((cfg.settle + secs) * 1000.0) + 60000;
    int rc = redlock_try_acquire(holder, key, hold_ttl, &held);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "bench_handoff: the holder could not take %s: %s\n", key, redlock_strerror(rc));
        return 1;
    }

    pool_t p;
    pool_start(&p, n, cfg.each, idle_main, 1);
    pthread_barrier_wait(&start_barrier);
    bench_sleep_ns((uint64_t)(cfg.settle * 1e9));
    uint64_t rounds0 = rounds_of(&p, st), tr0 = bench_now_ns(); /* the rounds' own span: not the INFO readings' */
    for (size_t i = 0; i < nn; i++) info_read(info[i], &before[i]);
    uint64_t t0 = bench_now_ns();
    bench_sleep_ns((uint64_t)(secs * 1e9));
    double window = 0;
    double rate_sum = 0, rate_max = 0;
    double *rate = calloc(nn, sizeof *rate);
    if (!rate) return 1;
    for (size_t i = 0; i < nn; i++) {
        info_read(info[i], &after[i]);
        if (i == 0) window = (double)(bench_now_ns() - t0) / 1e9;
        /* the first reading's INFO is in the delta; the second's is not yet */
        unsigned long long d = after[i].total - before[i].total;
        rate[i] = (double)(d ? d - 1 : 0) / window;
        rate_sum += rate[i];
        if (rate[i] > rate_max) rate_max = rate[i];
    }
    uint64_t rounds1 = rounds_of(&p, st), tr1 = bench_now_ns();
    double rounds_per_s = (double)(rounds1 - rounds0) / ((double)(tr1 - tr0) / 1e9);
    uint64_t waits = 0, wakeups = 0;
    for (unsigned h = 0; h < p.n_handles; h++) {
        redlock_stats(p.handles[h], st);
        waits += st->waits;
        wakeups += st->wakeups;
    }
    pool_cancel(&p);
    redlock_release(holder, held); /* before the join: a late wait ends by a grant */
    pool_join(&p);

    double interval_s = defaults.retry_delay_ms / 1000.0;
    double mean = rate_sum / (double)nn;
    uint64_t taken = 0, errors = 0;
    for (unsigned i = 0; i < n; i++) taken += p.ws[i].taken, errors += p.ws[i].errors;

    bench_line_begin(cfg.impl, "idle");
    bench_kv_u64("nodes", nn);
    bench_kv_u64("waiters", n);
    bench_kv_u64("handles", p.n_handles);
    bench_kv_f("window_s", window);
    bench_kv_u64("retry_delay_ms", defaults.retry_delay_ms);
    bench_kv_u64("retry_count", defaults.retry_count);
    kv_jitter();
    for (size_t i = 0; i < nn; i++) {
        char k[48];
        snprintf(k, sizeof k, "cmds_per_s_node%zu", i);
        bench_kv_f(k, rate[i]);
    }
    bench_kv_f("cmds_per_s_mean", mean);
    bench_kv_f("cmds_per_s_max", rate_max);
    bench_kv_f("per_waiter_per_interval_mean", mean / n * interval_s);
    bench_kv_f("per_waiter_per_interval_max", rate_max / n * interval_s);
    bench_kv_f("rounds_per_s", rounds_per_s);
    /* each round is one request to every node */
    bench_kv_f("requests_per_waiter_per_interval", rounds_per_s / n * interval_s);
    /* the split by command, all nodes together, per node per second */
    for (size_t c = 0; c < after[0].n_cmds; c++) {
        const char *name = after[0].name[c];
        if (!strcmp(name, "info")) continue;
        unsigned long long d = 0;
        for (size_t i = 0; i < nn; i++) d += calls_of(&after[i], name) - calls_of(&before[i], name);
        if (!d) continue;
        char k[48];
        snprintf(k, sizeof k, "cmds_%s", name);
        bench_kv_f(k, (double)d / (double)nn / window);
    }
    bench_kv_u64("waits", waits);
    bench_kv_u64("wakeups", wakeups);
    bench_kv_u64("taken_recalls", taken);
    bench_kv_u64("grants", atomic_load(&idle_grants));
    bench_kv_u64("errors", errors);
    bench_line_end();

    printf("%s: %u idle waiters on %u redlock_t, the lock held by another redlock_t; %.1f s counted after %.1f s\n",
           cfg.impl, n, p.n_handles, window, cfg.settle);
    printf("  %-32s %10s %24s\n", "node", "cmds/s", "per waiter per interval");
    for (size_t i = 0; i < nn; i++)
        printf("  %-32s %10.1f %24.3f\n", defaults.nodes[i], rate[i], rate[i] / n * interval_s);
    printf("  %-32s %10.1f %24.3f\n", "mean", mean, mean / n * interval_s);
    printf("  (interval: retry_delay_ms = %u ms; rounds sent to every node: %.1f/s)\n", defaults.retry_delay_ms,
           rounds_per_s);
    fflush(stdout);

    pool_free(&p);
    redlock_free(holder);
    for (size_t i = 0; i < nn; i++) redisFree(info[i]);
    free(info);
    free(rate);
    free(before);
    free(after);
    free(st);
    return errors || atomic_load(&idle_grants) ? 1 : 0;
}

/* -------------------------------------------------------------------- main */

static const char USAGE[] =
    "-u URI,URI,... -w contend|idle [-d SECONDS] [-t THREADS] [--handles one|each]\n"
    "          [--hold-ms MS] [--work-ms MS] [--ttl MS] [--wait-ms MS] [--settle SECONDS]\n"
    "          [--retry-count N] [--retry-jitter MS]\n"
    "          [--samples FILE] [--impl NAME] [--key NAME] [--shared-counter FILE] [--timeline FILE]\n";

static void print_version(void) {
    printf("libredlock %s\n", REDLOCK_VERSION);
}

/* Every option takes a value: a string or a number (bench_arg_num: not
 * negative, except --wait-ms -1). */
int main(int argc, char **argv) {
    const char *uri_arg = NULL, *handles = "one", *key_arg = NULL, *wait_arg = NULL;
    double retry_count = -1, retry_jitter = -1;
    const bench_opt_t opts[] = {
        {"-u", .str = &uri_arg},
        {"-w", .str = &cfg.workload},
        {"--impl", .str = &cfg.impl},
        {"--samples", .str = &cfg.samples},
        {"--handles", .str = &handles},
        {"--key", .str = &key_arg},
        {"--shared-counter", .str = &cfg.shared_counter},
        {"--timeline", .str = &cfg.timeline},
        {"-d", .num = &cfg.secs},
        {"-t", .num = &cfg.threads},
        {"--hold-ms", .num = &cfg.hold_ms},
        {"--work-ms", .num = &cfg.work_ms},
        {"--ttl", .num = &cfg.ttl},
        {"--settle", .num = &cfg.settle},
        {"--wait-ms", .str = &wait_arg},
        {"--retry-count", .num = &retry_count},
        {"--retry-jitter", .num = &retry_jitter},
    };
    if (bench_parse_opts(argc, argv, opts, sizeof opts / sizeof opts[0], print_version) != 0)
        bench_usage(argv[0], USAGE, 1);
    if (!uri_arg || !cfg.workload || (strcmp(handles, "one") && strcmp(handles, "each")))
        bench_usage(argv[0], USAGE, 1);
    cfg.each = !strcmp(handles, "each");
    double wait = !wait_arg || !strcmp(wait_arg, "-1") ? -1 : bench_arg_num("--wait-ms", wait_arg);
    cfg.wait_ms = (int64_t)wait;
    char *uri_list = strdup(uri_arg);
    cfg.n_nodes = uri_list ? bench_split_uris(uri_list, cfg.uris, BENCH_MAX_NODES) : 0;
    if (!cfg.n_nodes || cfg.ttl < 1 || cfg.ttl > 4e9) bench_usage(argv[0], USAGE, 1);
    if (key_arg && (!key_arg[0] || strlen(key_arg) >= sizeof key)) bench_usage(argv[0], USAGE, 1);
    if (key_arg)
        snprintf(key, sizeof key, "%s", key_arg);
    else
        snprintf(key, sizeof key, "bench:handoff:%u", (unsigned)getpid());
    if (cfg.shared_counter) shared_map(cfg.shared_counter);

    bench_options_init(&defaults, cfg.uris, cfg.n_nodes, 0);
    if (retry_count >= 0) defaults.retry_count = retry_count > 4e9 ? 4000000000u : (uint32_t)retry_count;
    if (retry_jitter >= 0) defaults.retry_jitter_ms = retry_jitter > 4e9 ? 4000000000u : (uint32_t)retry_jitter;

    int rc = 2;
    if (!strcmp(cfg.workload, "contend"))
        rc = run_contend();
    else if (!strcmp(cfg.workload, "idle"))
        rc = run_idle();
    else
        bench_usage(argv[0], USAGE, 1);
    free(uri_list);
    return rc;
}
