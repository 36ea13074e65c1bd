/* worker.c -- the fault-injection workload: one client process of several.
 *
 * Each thread loops: acquire the resource with redlock_acquire_ex, read the
 * protected value (a file that is not a lock node), spend a while "working",
 * write the value + 1 back, release, and append one history record to the
 * process's log. The checker (checker.c) merges the logs of every process
 * and proves from them that no two holders overlapped and no update was lost.
 *
 * All times are CLOCK_MONOTONIC microseconds: every process runs on this one
 * machine, so windows of different processes are comparable.
 *
 * History record (one line, fields separated by one space):
 *   R pid tid tok t0 acq dl rel rd_cnt rd_tag wr_cnt wr_tag trd twr relrc yes kind
 *     tok     first 8 hex characters of the lock token ("-" without a lock)
 *     t0      granted: t0 of the winning attempt, derived from the deadline
 *             and the default drift (0.01 x TTL + 2 ms)
 *     acq     when redlock_acquire_ex returned (the holder knows it holds)
 *     dl      the lock's local deadline t0 + TTL - drift (a lower bound: the
 *             public API gives the validity in whole milliseconds)
 *     rel     when the holder called redlock_release (its work was over)
 *     rd_*    the value read (counter and writer tag)
 *     wr_*    the value written ("- -" when the write was skipped because
 *             the validity was gone)
 *     trd     just before the read; twr just after the write returned
 *     relrc   redlock_release's result (OK, NOT_HELD, NO_QUORUM, ...)
 *     yes     "yes" votes counted in the winning attempt (the round stops
 *             at the quorum, so 3 of 5 does not mean the others refused)
 *     kind    normal, stall (paused past its TTL, then wrote without a
 *             validity check), nolock (no lock at all: the bypass run)
 *   The holder's window is [acq, min(rel, dl)].
 * At exit each process appends one summary line:
 *   S pid acquired N taken N no_quorum N expired N other N skipped N
 *     rel_ok N rel_not_held N rel_other N refused N
 *     (refused: acquire calls the nodes' membership records refused)
 *
 * The protected value is a fixed-size record "COUNTER TAG\n" at offset 0 of
 * a file, read with pread and written with pwrite: nothing but the lock
 * keeps two read-modify-writes apart. TAG (pid.tid.seq) makes every written
 * value unique, so the checker can chain each write to the one it read.
 *
 * Stall mode (--stall-at N): thread 0's Nth acquisition reads the value,
 * writes DIR/stalled.PID (PID and deadline) and stops the whole process with
 * SIGSTOP; the harness resumes it with SIGCONT well past the TTL. The thread
 * then writes anyway, without checking the validity, as a client that was
 * paused (GC, swap, SIGSTOP) would: the violation that fencing tokens close.
 * --stall-sleep-ms M sleeps M ms instead of stopping.
 *
 * SIGTERM / SIGINT: every thread finishes its current cycle (releasing its
 * lock) and the process exits after writing its summary.
 *
 * Exit status: 0 ok, 1 a runtime failure (log file, value file, redlock_new),
 * 2 usage error. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "redlock.h"

#define VALUE_LEN 64 /* bytes of the value record in the file */
#define MAX_THREADS 64

typedef struct config {
    char *nodes_csv, *next_csv;
    const char *nodes[REDLOCK_MAX_NODES], *next[REDLOCK_MAX_NODES];
    size_t n_nodes, n_next; /* next: a joint handle's next list (--next-nodes) */
    const char *resource, *value_path, *log_path, *stall_dir;
    int threads;
    uint32_t duration_ms, ttl_ms, hold_min_ms, hold_max_ms, margin_ms, pause_ms;
    uint32_t op_timeout_ms, connect_timeout_ms, retry_delay_ms, retry_jitter_ms, wait_ms;
    uint32_t min_replicas; /* votes counted after replication to this many replicas */
    uint32_t node_down_ms, reconnect_max_ms;
    uint32_t max_acq; /* per thread; 0: no bound */
    int no_lock;
    uint32_t stall_at;       /* 0: never */
    uint32_t stall_sleep_ms; /* 0: SIGSTOP */
} config_t;

typedef struct counters {
    uint64_t acquired, taken, no_quorum, expired, other, skipped, rel_ok, rel_not_held, rel_other;
    uint64_t refused; /* acquire calls the nodes' membership records refused */
} counters_t;

static config_t cfg;
static redlock_t *rl;
static int log_fd = -1, value_fd = -1;
static atomic_int stop_flag;
static uint64_t end_us;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static counters_t totals;

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_us(uint64_t us) {
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* xorshift64*: per-thread pseudo-random numbers, no shared state. */
static uint64_t rnd(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static uint32_t rnd_between(uint64_t *s, uint32_t lo, uint32_t hi) {
    return hi <= lo ? lo : lo + (uint32_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static void on_signal(int sig) {
    (void)sig;
    atomic_store(&stop_flag, 1);
}

/* Writes all of buf to fd (one write() for a short line on an O_APPEND file,
 * so lines of different threads never interleave). */
static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Reads the protected value: "COUNTER TAG". Returns 0, or -1 with cnt = -1
 * and tag "unreadable" when the record cannot be parsed (a torn or corrupt
 * record is itself evidence of concurrent writers). */
static int value_read(long long *cnt, char *tag, size_t taglen) {
    char buf[VALUE_LEN + 1];
    ssize_t r = pread(value_fd, buf, VALUE_LEN, 0);
    if (r <= 0) goto bad;
    buf[r] = '\0';
    char t[VALUE_LEN];
    if (sscanf(buf, "%lld %63s", cnt, t) != 2) goto bad;
    snprintf(tag, taglen, "%s", t);
    return 0;
bad:
    *cnt = -1;
    snprintf(tag, taglen, "unreadable");
    return -1;
}

/* Writes the protected value as one fixed-size record at offset 0. */
static int value_write(long long cnt, const char *tag) {
    char buf[VALUE_LEN + 1];
    memset(buf, ' ', VALUE_LEN);
    int n = snprintf(buf, sizeof buf, "%lld %s", cnt, tag);
    if (n < 0 || n >= VALUE_LEN) return -1;
    buf[n] = ' ';
    buf[VALUE_LEN - 1] = '\n';
    return pwrite(value_fd, buf, VALUE_LEN, 0) == VALUE_LEN ? 0 : -1;
}

static const char *rc_name(int rc) {
    switch (rc) {
    case REDLOCK_OK: return "OK";
    case REDLOCK_ERR_TAKEN: return "TAKEN";
    case REDLOCK_ERR_NO_QUORUM: return "NO_QUORUM";
    case REDLOCK_ERR_EXPIRED: return "EXPIRED";
    case REDLOCK_ERR_NOT_HELD: return "NOT_HELD";
    case REDLOCK_ERR_IO: return "IO";
    case REDLOCK_ERR_TIMEOUT: return "TIMEOUT";
    case REDLOCK_ERR_SERVER: return "SERVER";
    case REDLOCK_ERR_AUTH: return "AUTH";
    default: return "OTHER";
    }
}

/* The stall: tell the harness where we are, then stop (or sleep). */
static void stall(int tid, int64_t dl_us) {
    if (cfg.stall_sleep_ms) {
        fprintf(stderr, "worker %d.%d: holding the lock, sleeping %u ms past its TTL\n", (int)getpid(), tid,
                cfg.stall_sleep_ms);
        sleep_us((uint64_t)cfg.stall_sleep_ms * 1000u);
        return;
    }
    char path[4096], tmp[4200], line[128];
    snprintf(path, sizeof path, "%s/stalled.%d", cfg.stall_dir, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int n = snprintf(line, sizeof line, "%d %" PRId64 "\n", (int)getpid(), dl_us);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        write_all(fd, line, (size_t)n);
        close(fd);
        rename(tmp, path);
    }
    fprintf(stderr, "worker %d.%d: holding the lock, stopping myself with SIGSTOP\n", (int)getpid(), tid);
    raise(SIGSTOP); /* the harness sends SIGCONT */
    fprintf(stderr, "worker %d.%d: resumed; writing without checking the validity\n", (int)getpid(), tid);
}

typedef struct thread_arg {
    int tid;
    pthread_t th;
} thread_arg_t;

static void *thread_main(void *p) {
    thread_arg_t *ta = p;
    int tid = ta->tid;
    uint64_t seed = ((uint64_t)getpid() << 20) ^ ((uint64_t)tid << 8) ^ now_us() ^ 0x9e3779b97f4a7c15ull;
    if (!seed) seed = 1;
    counters_t c = {0};
    uint64_t seq = 0;
    uint64_t drift_us = (uint64_t)cfg.ttl_ms * 10u + 2000u; /* the defaults: 0.01 x TTL + 2 ms */
    for (uint32_t n = 0; !atomic_load(&stop_flag) && (!cfg.max_acq || n < cfg.max_acq);) {
        uint64_t now = now_us();
        if (now >= end_us) break;
        redlock_lock_t *lock = NULL;
        redlock_report_t rep;
        int64_t t0 = 0, acq, dl;
        const char *kind = "normal";
        size_t yes = 0;
        char tok[9] = "-";
        if (cfg.no_lock) {
            sleep_us(rnd_between(&seed, cfg.retry_delay_ms / 2, cfg.retry_delay_ms) * 1000u);
            acq = t0 = (int64_t)now_us();
            dl = INT64_MAX;
            kind = "nolock";
        } else {
            uint64_t left_ms = (end_us - now) / 1000u;
            int64_t wait = (int64_t)(left_ms < cfg.wait_ms ? left_ms : cfg.wait_ms);
            int rc = redlock_acquire_ex(rl, cfg.resource, cfg.ttl_ms, wait, &lock, &rep);
            acq = (int64_t)now_us(); /* before the validity query: dl below is a lower bound */
            if (rc != REDLOCK_OK) {
                if (rc == REDLOCK_ERR_TAKEN)
                    c.taken++;
                else if (rc == REDLOCK_ERR_NO_QUORUM)
                    c.no_quorum++;
                else if (rc == REDLOCK_ERR_EXPIRED)
                    c.expired++;
                else if (rc == REDLOCK_ERR_MEMBERSHIP) { /* a client left behind by a change of the node set */
                    c.refused++;
                    sleep_us(20000);
                } else {
                    c.other++;
                    fprintf(stderr, "worker %d.%d: acquire: %s: %s\n", (int)getpid(), tid, redlock_strerror(rc),
                            rep.message);
                    if (rc == REDLOCK_ERR_INVALID || rc == REDLOCK_ERR_CONFIG) break;
                    sleep_us(50000);
                }
                continue;
            }
            c.acquired++;
            yes = rep.yes;
            snprintf(tok, sizeof tok, "%.8s", redlock_lock_token(lock));
            dl = acq + redlock_lock_validity_ms(lock) * 1000;
            t0 = dl + (int64_t)drift_us - (int64_t)cfg.ttl_ms * 1000;
        }
        n++;
        seq++;
        int stalling = cfg.stall_at && tid == 0 && n == cfg.stall_at;
        if (stalling) kind = "stall";

        /* The read-modify-write of the protected value. */
        long long rd_cnt;
        char rd_tag[VALUE_LEN];
        int64_t trd = (int64_t)now_us();
        value_read(&rd_cnt, rd_tag, sizeof rd_tag);
        uint32_t hold = rnd_between(&seed, cfg.hold_min_ms, cfg.hold_max_ms);
        if (hold) sleep_us((uint64_t)hold * 1000u);
        if (stalling) stall(tid, dl);
        char wr_cnt[32] = "-", wr_tag[VALUE_LEN] = "-";
        int64_t twr = 0;
        /* A careful client checks, right before the side effect, that the
         * lock is still valid with a margin; the stalled one does not. */
        if (cfg.no_lock || stalling || redlock_lock_valid(lock, cfg.margin_ms)) {
            char tag[VALUE_LEN];
            snprintf(tag, sizeof tag, "%d.%d.%" PRIu64, (int)getpid(), tid, seq);
            long long next = rd_cnt < 0 ? 0 : rd_cnt + 1;
            if (value_write(next, tag) != 0) {
                fprintf(stderr, "worker %d.%d: cannot write %s: %s\n", (int)getpid(), tid, cfg.value_path,
                        strerror(errno));
                atomic_store(&stop_flag, 1);
            } else {
                twr = (int64_t)now_us();
                snprintf(wr_cnt, sizeof wr_cnt, "%lld", next);
                snprintf(wr_tag, sizeof wr_tag, "%s", tag);
            }
        } else {
            c.skipped++;
        }
        int64_t rel = (int64_t)now_us();
        const char *relrc = "-";
        if (lock) {
            int rrc = redlock_release_ex(rl, lock, NULL);
            relrc = rc_name(rrc);
            if (rrc == REDLOCK_OK)
                c.rel_ok++;
            else if (rrc == REDLOCK_ERR_NOT_HELD)
                c.rel_not_held++;
            else
                c.rel_other++;
        }
        if (cfg.no_lock) dl = rel;

        char line[512];
        int len = snprintf(line, sizeof line,
                           "R %d %d %s %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %lld %s %s %s %" PRId64
                           " %" PRId64 " %s %zu %s\n",
                           (int)getpid(), tid, tok, t0, acq, dl, rel, rd_cnt, rd_tag, wr_cnt, wr_tag, trd, twr, relrc,
                           yes, kind);
        if (len > 0 && write_all(log_fd, line, (size_t)len) != 0) {
            fprintf(stderr, "worker %d.%d: cannot write %s: %s\n", (int)getpid(), tid, cfg.log_path, strerror(errno));
            atomic_store(&stop_flag, 1);
        }
        if (cfg.pause_ms) sleep_us(rnd_between(&seed, 0, cfg.pause_ms) * 1000u);
    }
    pthread_mutex_lock(&count_mu);
    totals.acquired += c.acquired;
    totals.taken += c.taken;
    totals.no_quorum += c.no_quorum;
    totals.expired += c.expired;
    totals.other += c.other;
    totals.skipped += c.skipped;
    totals.rel_ok += c.rel_ok;
    totals.rel_not_held += c.rel_not_held;
    totals.rel_other += c.rel_other;
    totals.refused += c.refused;
    pthread_mutex_unlock(&count_mu);
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f, "usage: fault_worker --nodes URI[,URI...] --value FILE --log FILE [options]\n"
               "  --next-nodes URI[,URI...]  a joint handle: its next list\n"
               "  --resource NAME          lock resource (default fault:resource)\n"
               "  --threads N              contending threads in this process (default 2)\n"
               "  --duration-ms MS         stop starting new cycles after MS (default 8000)\n"
               "  --ttl-ms MS              lock TTL (default 1000)\n"
               "  --hold-ms MIN[-MAX]      work between read and write (default 1-8)\n"
               "  --margin-ms MS           validity required right before the write (default 200)\n"
               "  --pause-ms MS            random pause up to MS between cycles (default 0)\n"
               "  --op-timeout-ms MS       (default 100)   --connect-timeout-ms MS (default 200)\n"
               "  --retry-delay-ms MS      (default 40)    --retry-jitter-ms MS    (default 30)\n"
               "  --wait-ms MS             bound of one acquire call's retries (default 2000)\n"
               "  --min-replicas N         votes count once N replicas have the write (default 0)\n"
               "  --node-down-ms MS        library default unless given\n"
               "  --reconnect-max-ms MS    library default unless given\n"
               "  --max-acquisitions N     per thread (default: no bound)\n"
               "  --no-lock                bypass the lock entirely (the checker must object)\n"
               "  --stall-at N             thread 0's Nth acquisition stalls past its TTL, then writes\n"
               "  --stall-dir DIR          where the stall marker stalled.PID goes (default: the log's dir)\n"
               "  --stall-sleep-ms MS      stall by sleeping MS instead of SIGSTOP\n");
}

static int parse_u32(const char *s, uint32_t *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > UINT32_MAX) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Splits a comma-separated node list (NULL: none) in place into out. */
static int split_list(char *csv, const char **out, size_t *n) {
    for (char *save = NULL, *u = csv ? strtok_r(csv, ",", &save) : NULL; u; u = strtok_r(NULL, ",", &save)) {
        if (*n == REDLOCK_MAX_NODES) {
            fprintf(stderr, "fault_worker: more than %d nodes in a list\n", REDLOCK_MAX_NODES);
            return -1;
        }
        out[(*n)++] = u;
    }
    return 0;
}

static int parse_args(int argc, char **argv) {
    cfg.resource = "fault:resource";
    cfg.threads = 2;
    cfg.duration_ms = 8000;
    cfg.ttl_ms = 1000;
    cfg.hold_min_ms = 1;
    cfg.hold_max_ms = 8;
    cfg.margin_ms = 200;
    cfg.op_timeout_ms = 100;
    cfg.connect_timeout_ms = 200;
    cfg.retry_delay_ms = 40;
    cfg.retry_jitter_ms = 30;
    cfg.wait_ms = 2000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        uint32_t u = 0;
#define U32_OPT(name, field)                         \
    if (!strcmp(a, name)) {                          \
        if (!v || parse_u32(v, &cfg.field)) bad = 1; \
        i++;                                         \
    } else
        if (!strcmp(a, "--nodes") && v) {
            free(cfg.nodes_csv);
            cfg.nodes_csv = strdup(v);
            i++;
        } else if (!strcmp(a, "--next-nodes") && v) {
            free(cfg.next_csv);
            cfg.next_csv = strdup(v);
            i++;
        } else if (!strcmp(a, "--value") && v) {
            cfg.value_path = v;
            i++;
        } else if (!strcmp(a, "--log") && v) {
            cfg.log_path = v;
            i++;
        } else if (!strcmp(a, "--resource") && v) {
            cfg.resource = v;
            i++;
        } else if (!strcmp(a, "--stall-dir") && v) {
            cfg.stall_dir = v;
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (!v || parse_u32(v, &u) || u < 1 || u > MAX_THREADS) bad = 1;
            cfg.threads = (int)u;
            i++;
        } else if (!strcmp(a, "--hold-ms")) {
            char *dash = v ? strchr(v, '-') : NULL;
            if (!v) {
                bad = 1;
            } else if (dash) {
                char lo[32];
                snprintf(lo, sizeof lo, "%.*s", (int)(dash - v), v);
                bad = parse_u32(lo, &cfg.hold_min_ms) || parse_u32(dash + 1, &cfg.hold_max_ms) ||
                      cfg.hold_max_ms < cfg.hold_min_ms;
            } else {
                bad = parse_u32(v, &cfg.hold_min_ms);
                cfg.hold_max_ms = cfg.hold_min_ms;
            }
            i++;
        } else if (!strcmp(a, "--no-lock")) {
            cfg.no_lock = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else
            U32_OPT("--duration-ms", duration_ms)
        U32_OPT("--ttl-ms", ttl_ms)
        U32_OPT("--margin-ms", margin_ms)
        U32_OPT("--pause-ms", pause_ms)
        U32_OPT("--op-timeout-ms", op_timeout_ms)
        U32_OPT("--connect-timeout-ms", connect_timeout_ms)
        U32_OPT("--retry-delay-ms", retry_delay_ms)
        U32_OPT("--retry-jitter-ms", retry_jitter_ms)
        U32_OPT("--wait-ms", wait_ms)
        U32_OPT("--min-replicas", min_replicas)
        U32_OPT("--node-down-ms", node_down_ms)
        U32_OPT("--reconnect-max-ms", reconnect_max_ms)
        U32_OPT("--max-acquisitions", max_acq)
        U32_OPT("--stall-at", stall_at)
        U32_OPT("--stall-sleep-ms", stall_sleep_ms) {
            fprintf(stderr, "fault_worker: unknown or incomplete option '%s'\n", a);
            return -1;
        }
#undef U32_OPT
        if (bad) {
            fprintf(stderr, "fault_worker: bad value for %s: '%s'\n", a, v ? v : "(missing)");
            return -1;
        }
    }
    if ((!cfg.nodes_csv && !cfg.no_lock) || !cfg.value_path || !cfg.log_path) {
        fprintf(stderr, "fault_worker: --nodes, --value and --log are required\n");
        return -1;
    }
    if (cfg.retry_jitter_ms > cfg.retry_delay_ms) {
        fprintf(stderr, "fault_worker: --retry-jitter-ms must not exceed --retry-delay-ms\n");
        return -1;
    }
    if (split_list(cfg.nodes_csv, cfg.nodes, &cfg.n_nodes) < 0 || split_list(cfg.next_csv, cfg.next, &cfg.n_next) < 0)
        return -1;
    return 0;
}

/* The stall marker goes next to the log unless --stall-dir says otherwise. */
static char stall_dir_buf[4096];

int main(int argc, char **argv) {
    if (parse_args(argc, argv) != 0) {
        usage(stderr);
        return 2;
    }
    if (!cfg.stall_dir) {
        snprintf(stall_dir_buf, sizeof stall_dir_buf, "%s", cfg.log_path);
        char *slash = strrchr(stall_dir_buf, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(stall_dir_buf, sizeof stall_dir_buf, ".");
        cfg.stall_dir = stall_dir_buf;
    }
    log_fd = open(cfg.log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "fault_worker: cannot open %s: %s\n", cfg.log_path, strerror(errno));
        return 1;
    }
    value_fd = open(cfg.value_path, O_RDWR);
    if (value_fd < 0) {
        fprintf(stderr, "fault_worker: cannot open %s: %s\n", cfg.value_path, strerror(errno));
        return 1;
    }
    if (!cfg.no_lock) {
        redlock_options_t o;
        redlock_options_init(&o);
        o.nodes = cfg.nodes;
        o.n_nodes = cfg.n_nodes;
        o.next_nodes = cfg.n_next ? cfg.next : NULL;
        o.n_next_nodes = cfg.n_next;
        o.op_timeout_ms = cfg.op_timeout_ms;
        o.connect_timeout_ms = cfg.connect_timeout_ms;
        o.retry_delay_ms = cfg.retry_delay_ms;
        o.retry_jitter_ms = cfg.retry_jitter_ms;
        o.retry_count = 100000; /* the wait bound (--wait-ms) ends the retries */
        if (cfg.node_down_ms) o.node_down_ms = cfg.node_down_ms;
        if (cfg.reconnect_max_ms) o.reconnect_max_ms = cfg.reconnect_max_ms;
        o.reentrant = 0; /* every cycle is a fresh acquisition */
        o.min_replicas = cfg.min_replicas;
        char err[256];
        int rc = redlock_new_ex(&rl, &o, err, sizeof err);
        if (rc != REDLOCK_OK) {
            fprintf(stderr, "fault_worker: redlock_new: %s: %s\n", redlock_strerror(rc), err);
            return 1;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    end_us = now_us() + (uint64_t)cfg.duration_ms * 1000u;
    thread_arg_t ta[MAX_THREADS];
    int started = 0;
    for (int t = 0; t < cfg.threads; t++) {
        ta[t].tid = t;
        if (pthread_create(&ta[t].th, NULL, thread_main, &ta[t]) != 0) {
            fprintf(stderr, "fault_worker: pthread_create failed\n");
            atomic_store(&stop_flag, 1);
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++) pthread_join(ta[t].th, NULL);
    redlock_free(rl);

    char line[512];
    int len = snprintf(line, sizeof line,
                       "S %d acquired %" PRIu64 " taken %" PRIu64 " no_quorum %" PRIu64 " expired %" PRIu64
                       " other %" PRIu64 " skipped %" PRIu64 " rel_ok %" PRIu64 " rel_not_held %" PRIu64
                       " rel_other %" PRIu64 " refused %" PRIu64 "\n",
                       (int)getpid(), totals.acquired, totals.taken, totals.no_quorum, totals.expired, totals.other,
                       totals.skipped, totals.rel_ok, totals.rel_not_held, totals.rel_other, totals.refused);
    if (len > 0) {
        write_all(log_fd, line, (size_t)len);
        fputs(line + 2, stdout);
    }
    close(log_fd);
    close(value_fd);
    free(cfg.nodes_csv);
    free(cfg.next_csv);
    return started == cfg.threads ? 0 : 1;
}
