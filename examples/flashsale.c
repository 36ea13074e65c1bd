/* flashsale.c -- the `make demo` flash sale: overselling without a lock,
 * exact sales with libredlock while nodes are killed, paused and restarted.
 *
 * A stock of 100 units lives in a shared store that is not a lock node: a
 * file in a temporary directory, changed with a read-modify-write. A dozen
 * buyer processes (fork) compete for it. Each buyer repeatedly reads the
 * stock, dawdles a few milliseconds (payment, say), writes stock - 1 and
 * appends the unit it sold to a sales log.
 *
 *   run 1  without any lock: buyers overlap, units are sold twice and the
 *          shop sells more than it has (oversold, lost updates);
 *   run 2  each buyer holds the Redlock "sale:stock" (TTL 2 s) around the
 *          read-modify-write and checks redlock_lock_valid() right before
 *          writing, while the parent kills, pauses and restarts lock nodes
 *          with deploy/cluster.sh -- never more than 2 of the 5 at once.
 *          A killed node comes back only after one TTL: it has no
 *          persistence, so it returns empty, and by then every lock it
 *          voted for has expired (the restart rule of the Redlock paper).
 *
 * Then it prints one table comparing both runs and a verdict line.
 *
 *   REDLOCK_NODES=URI,URI,... REDLOCK_CLUSTER_DIR=DIR flashsale
 *   flashsale [--stock N] [--buyers N] [--no-faults] [URI...]
 *
 * Nodes come from the arguments, else REDLOCK_NODES, else
 * $REDLOCK_CLUSTER_DIR/nodes. Faults need the cluster directory
 * (REDLOCK_CLUSTER_DIR) of a deploy/cluster.sh cluster; the script is
 * $REDLOCK_CLUSTER_SH, else the one in the source tree. Without a cluster
 * directory, or with --no-faults, run 2 runs without faults.
 *
 * Exit status: 0 when the locked run sold exactly the stock with no
 * oversold unit and no lost update, 1 otherwise, 2 on a usage error.
 * Buyers die with the parent (PR_SET_PDEATHSIG) and are killed on every
 * failure path. */
#define _GNU_SOURCE /* prctl, mkdtemp */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <redlock.h>

#ifndef FLASHSALE_CLUSTER_SH
#define FLASHSALE_CLUSTER_SH "deploy/cluster.sh"
#endif

enum {
    DEFAULT_STOCK = 100,
    DEFAULT_BUYERS = 12,
    MAX_BUYERS = 64,
    MAX_NODES = 16,
    TTL_MS = 2000,      /* lock time-to-live */
    MARGIN_MS = 500,    /* validity a buyer needs left before it writes */
    HOLD_MIN_US = 3000, /* read .. write: the window a race needs */
    HOLD_MAX_US = 12000,
    THINK_MIN_MS = 200, /* a buyer's pause between purchases */
    THINK_MAX_MS = 1000,
    TAKEN_BACKOFF_MIN_MS = 5, /* pause after finding the lock taken */
    TAKEN_BACKOFF_MAX_MS = 30,
    FAIL_BACKOFF_MIN_MS = 50, /* pause after no quorum or another failure */
    FAIL_BACKOFF_MAX_MS = 150,
    MAX_ERRORS = 20,                /* a buyer gives up after this many other errors */
    BUYER_LIMIT_MS = 35000,         /* a buyer stops by itself after this long */
    SALE_LIMIT_MS = 40000,          /* the parent kills the buyers after this long */
    REJOIN_AFTER_MS = TTL_MS + 300, /* a killed (empty) node stays down this long */
    MAX_AFFECTED = 2                /* nodes down or paused at once: a minority of 5 */
};

static const char *const RESOURCE = "sale:stock";

/* ------------------------------------------------------------ utilities */

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us) {
    if (us <= 0) return;
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* xorshift64: each buyer has its own state. */
static int64_t random_between(uint64_t *s, int64_t lo, int64_t hi) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return lo + (int64_t)(*s % (uint64_t)(hi - lo + 1));
}

static volatile sig_atomic_t interrupted; /* SIGINT / SIGTERM / SIGHUP in the parent */

static void on_signal(int sig) {
    interrupted = sig;
}

/* ------------------------------------------------------------ the store */

/* The shop's stock: a file holding one number, replaced atomically by
 * rename so a reader always sees a whole number. The read-modify-write is
 * what needs the lock. */
static char store_dir[64];
static char stock_path[128];
static char sales_path[128];

static int stock_read(void) {
    int fd = open(stock_path, O_RDONLY);
    if (fd < 0) return -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    return atoi(buf);
}

static int stock_write(int value) {
    char tmp[160], buf[32];
    snprintf(tmp, sizeof tmp, "%s.%ld", stock_path, (long)getpid());
    int len = snprintf(buf, sizeof buf, "%d\n", value);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    int ok = write(fd, buf, (size_t)len) == len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, stock_path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Appends "UNIT BUYER" to the sales log in one write (O_APPEND). */
static int sale_record(int unit, int buyer) {
    char line[48];
    int len = snprintf(line, sizeof line, "%d %d\n", unit, buyer);
    int fd = open(sales_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return -1;
    int ok = write(fd, line, (size_t)len) == len;
    close(fd);
    return ok ? 0 : -1;
}

static int store_reset(int stock) {
    unlink(sales_path);
    int fd = open(sales_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    close(fd);
    return stock_write(stock);
}

static void store_remove(void) {
    if (!store_dir[0]) return;
    unlink(stock_path);
    unlink(sales_path);
    rmdir(store_dir);
}

/* ------------------------------------------------------------ buyers */

typedef struct buyer_stats {
    long sold;             /* sales recorded */
    long attempts;         /* acquire attempts (one round each) */
    long granted;          /* ... granted */
    long granted_degraded; /* ... granted although some node failed to vote */
    long taken;            /* ... answered TAKEN */
    long no_quorum;        /* ... NO_QUORUM or EXPIRED */
    long other_errors;     /* any other failed call */
    long skipped;          /* writes skipped: validity below the margin */
    long release_not_held; /* releases that found the lock already gone */
    long release_unknown;  /* releases without a quorum of answers */
    int last_error;
    char last_message[200];
    int finished; /* 1 sold out, 2 gave up (time or errors) */
} buyer_stats_t;

typedef struct sale_config {
    int stock, buyers, locked;
    const char *const *nodes;
    size_t n_nodes;
} sale_config_t;

static void buyer_error(buyer_stats_t *st, int rc, const char *what, const char *msg) {
    st->other_errors++;
    st->last_error = rc;
    snprintf(st->last_message, sizeof st->last_message, "%s: %s (%s)", what, redlock_strerror(rc), msg);
}

/* One buyer without a lock: read, dawdle, write, record. */
static void buy_unlocked(int id, buyer_stats_t *st, uint64_t *rng, int64_t deadline) {
    while (now_us() < deadline) {
        sleep_us(random_between(rng, THINK_MIN_MS, THINK_MAX_MS) * 1000);
        int stock = stock_read();
        if (stock < 0) {
            buyer_error(st, REDLOCK_ERR_IO, "stock read", strerror(errno));
            return;
        }
        if (stock == 0) {
            st->finished = 1;
            return;
        }
        sleep_us(random_between(rng, HOLD_MIN_US, HOLD_MAX_US));
        if (stock_write(stock - 1) != 0 || sale_record(stock, id) != 0) {
            buyer_error(st, REDLOCK_ERR_IO, "stock write", strerror(errno));
            return;
        }
        st->sold++;
    }
    st->finished = 2;
}

/* One buyer with the lock. Each acquire is one attempt (wait 0), so every
 * TAKEN and NO_QUORUM answer is counted; the buyer retries after a short
 * random pause. */
static void buy_locked(int id, buyer_stats_t *st, uint64_t *rng, int64_t deadline, const sale_config_t *cfg) {
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = cfg->nodes;
    opt.n_nodes = cfg->n_nodes;
    char err[256];
    redlock_t *rl = NULL;
    int rc = redlock_new_ex(&rl, &opt, err, sizeof err);
    if (rc != REDLOCK_OK) {
        buyer_error(st, rc, "redlock_new", err);
        st->finished = 2;
        return;
    }
    redlock_report_t rep;
    int think = 1;
    while (now_us() < deadline) {
        if (think) sleep_us(random_between(rng, THINK_MIN_MS, THINK_MAX_MS) * 1000);
        think = 1;

        redlock_lock_t *lock = NULL;
        st->attempts++;
        rc = redlock_acquire_ex(rl, RESOURCE, TTL_MS, 0, &lock, &rep);
        if (rc == REDLOCK_ERR_TAKEN) {
            st->taken++;
            think = 0;
            sleep_us(random_between(rng, TAKEN_BACKOFF_MIN_MS, TAKEN_BACKOFF_MAX_MS) * 1000);
            continue;
        }
        if (rc == REDLOCK_ERR_NO_QUORUM || rc == REDLOCK_ERR_EXPIRED) {
            st->no_quorum++;
            think = 0;
            sleep_us(random_between(rng, FAIL_BACKOFF_MIN_MS, FAIL_BACKOFF_MAX_MS) * 1000);
            continue;
        }
        if (rc != REDLOCK_OK) {
            buyer_error(st, rc, "acquire", rep.message);
            if (st->other_errors >= MAX_ERRORS) break;
            think = 0;
            sleep_us(random_between(rng, FAIL_BACKOFF_MIN_MS, FAIL_BACKOFF_MAX_MS) * 1000);
            continue;
        }
        st->granted++;
        if (rep.failed > 0) st->granted_degraded++;

        /* The critical section. */
        int stock = stock_read();
        int sold_out = stock == 0, failed = stock < 0;
        if (stock > 0) {
            sleep_us(random_between(rng, HOLD_MIN_US, HOLD_MAX_US));
            if (!redlock_lock_valid(lock, MARGIN_MS)) {
                st->skipped++; /* too little validity left: do not write */
                think = 0;
            } else if (stock_write(stock - 1) != 0 || sale_record(stock, id) != 0) {
                failed = 1;
            } else {
                st->sold++;
            }
        }
        int errno_saved = errno;

        rc = redlock_release_ex(rl, lock, &rep); /* frees lock */
        if (rc == REDLOCK_ERR_NOT_HELD)
            st->release_not_held++;
        else if (rc != REDLOCK_OK)
            st->release_unknown++;

        if (failed) {
            buyer_error(st, REDLOCK_ERR_IO, "stock", strerror(errno_saved));
            break;
        }
        if (sold_out) {
            st->finished = 1;
            redlock_free(rl);
            return;
        }
    }
    st->finished = 2;
    redlock_free(rl);
}

/* The body of a buyer process. Never returns. */
static void buyer_main(int id, int start_fd, buyer_stats_t *st, const sale_config_t *cfg, pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the demo */
    if (getppid() != parent) _exit(1);
    signal(SIGPIPE, SIG_IGN);
    char c;
    while (read(start_fd, &c, 1) < 0 && errno == EINTR) { /* EOF: the parent said go */
    }
    close(start_fd);
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1) ^ (uint64_t)now_us() ^ ((uint64_t)getpid() << 32);
    int64_t deadline = now_us() + (int64_t)BUYER_LIMIT_MS * 1000;
    if (cfg->locked)
        buy_locked(id, st, &rng, deadline, cfg);
    else
        buy_unlocked(id, st, &rng, deadline);
    _exit(0);
}

/* ------------------------------------------------------------ cluster faults */

typedef enum { F_KILL, F_PAUSE, F_RESUME, F_RESTART } fault_kind_t;
static const char *const FAULT_VERB[] = {"kill", "pause", "resume", "restart"};

typedef struct fault_step {
    int at_ms; /* from the start of the sale, within one cycle */
    fault_kind_t kind;
    int node; /* rotated by 1 every cycle */
} fault_step_t;

/* One cycle of the schedule (5 nodes): at most 2 nodes down or paused at
 * any moment, and a killed node rejoins REJOIN_AFTER_MS later at the
 * earliest (the runner enforces both and delays a step if needed). */
static const fault_step_t SCHEDULE[] = {
    {300, F_KILL, 0},    {700, F_PAUSE, 3},    {1500, F_RESUME, 3}, {1800, F_PAUSE, 1},
    {2600, F_RESUME, 1}, {2700, F_RESTART, 0}, {3000, F_KILL, 4},   {3300, F_PAUSE, 2},
    {4100, F_RESUME, 2}, {4400, F_PAUSE, 0},   {5000, F_RESUME, 0}, {5400, F_RESTART, 4},
};
enum { SCHEDULE_LEN = sizeof SCHEDULE / sizeof SCHEDULE[0], SCHEDULE_CYCLE_MS = 5600 };

typedef enum { NODE_UP = 0, NODE_PAUSED, NODE_DOWN } node_state_t;

typedef struct faults {
    const char *script, *dir;
    int n;
    node_state_t state[MAX_NODES];
    int64_t down_since[MAX_NODES];
    long count[4]; /* by fault_kind_t */
    long failed;   /* cluster.sh calls that failed */
    size_t next;   /* index of the next step (over all cycles) */
    int64_t t0;
} faults_t;

/* Runs `cluster.sh VERB [I] [--flush] -d DIR`, stdout into out (if any).
 * Returns the exit status, -1 if it could not run. */
static int cluster_sh(const faults_t *f, const char *verb, int node, char *out, size_t outlen) {
    int pfd[2] = {-1, -1};
    if (out && pipe(pfd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        if (out) {
            close(pfd[0]);
            close(pfd[1]);
        }
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (out) {
            dup2(pfd[1], 1);
            close(pfd[0]);
            close(pfd[1]);
        } else if (devnull >= 0) {
            dup2(devnull, 1);
        }
        if (devnull >= 0) dup2(devnull, 2); /* cluster.sh logs its progress on stderr */
        char idx[16];
        snprintf(idx, sizeof idx, "%d", node);
        if (node >= 0)
            execl(f->script, f->script, verb, idx, "-d", f->dir, (char *)NULL);
        else
            execl(f->script, f->script, verb, "-d", f->dir, (char *)NULL);
        _exit(127);
    }
    size_t used = 0;
    if (out) {
        close(pfd[1]);
        ssize_t n;
        while ((n = read(pfd[0], out + used, outlen - 1 - used)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0) used += (size_t)n;
        out[used] = '\0';
        close(pfd[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Reads every node's state from `cluster.sh status`. 0 ok, -1 failed. */
static int faults_read_status(faults_t *f) {
    char out[4096];
    if (cluster_sh(f, "status", -1, out, sizeof out) != 0) return -1;
    int n = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        int idx;
        char uri[256], pid[32], state[32];
        if (sscanf(line, "%d %255s %31s %31s", &idx, uri, pid, state) != 4 || idx < 0 || idx >= MAX_NODES) return -1;
        f->state[idx] = !strcmp(state, "up") ? NODE_UP : !strcmp(state, "paused") ? NODE_PAUSED : NODE_DOWN;
        f->down_since[idx] = 0;
        if (idx + 1 > n) n = idx + 1;
    }
    f->n = n;
    return n > 0 ? 0 : -1;
}

/* Brings every node back: resumes the paused ones, restarts the dead ones.
 * Returns the number of nodes that could not be brought back. */
static int faults_heal(faults_t *f) {
    if (faults_read_status(f) != 0) return f->n > 0 ? f->n : 1;
    int bad = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->state[i] == NODE_PAUSED && cluster_sh(f, "resume", i, NULL, 0) != 0) bad++;
        if (f->state[i] == NODE_DOWN && cluster_sh(f, "restart", i, NULL, 0) != 0) bad++;
        f->state[i] = NODE_UP;
    }
    return bad;
}

static int faults_affected(const faults_t *f) {
    int k = 0;
    for (int i = 0; i < f->n; i++) k += f->state[i] != NODE_UP;
    return k;
}

static void print_affected(const faults_t *f) {
    int any = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->state[i] == NODE_UP) continue;
        printf("%snode %d %s", any ? ", " : "", i, f->state[i] == NODE_DOWN ? "down" : "paused");
        any = 1;
    }
    if (!any) printf("all nodes up");
}

/* Runs every schedule step that is due. Steps that would break the rules
 * (more than MAX_AFFECTED nodes affected, a node rejoining too early) wait
 * until they no longer would. */
static void faults_tick(faults_t *f) {
    for (;;) {
        size_t cycle = f->next / SCHEDULE_LEN;
        const fault_step_t *s = &SCHEDULE[f->next % SCHEDULE_LEN];
        int64_t due = f->t0 + ((int64_t)cycle * SCHEDULE_CYCLE_MS + s->at_ms) * 1000;
        int64_t now = now_us();
        if (now < due) return;
        int node = (s->node + (int)cycle) % f->n;
        node_state_t want;
        switch (s->kind) {
        case F_KILL:
        case F_PAUSE:
            if (f->state[node] != NODE_UP) { /* already affected: skip the step */
                f->next++;
                continue;
            }
            if (faults_affected(f) >= MAX_AFFECTED) return; /* wait for a node to come back */
            want = s->kind == F_KILL ? NODE_DOWN : NODE_PAUSED;
            break;
        case F_RESUME:
            if (f->state[node] != NODE_PAUSED) {
                f->next++;
                continue;
            }
            want = NODE_UP;
            break;
        default: /* F_RESTART */
            if (f->state[node] != NODE_DOWN) {
                f->next++;
                continue;
            }
            if (now - f->down_since[node] < (int64_t)REJOIN_AFTER_MS * 1000) return;
            want = NODE_UP;
            break;
        }
        int rc = cluster_sh(f, FAULT_VERB[s->kind], node, NULL, 0);
        if (rc == 0) {
            f->state[node] = want;
            if (want == NODE_DOWN) f->down_since[node] = now_us();
            f->count[s->kind]++;
        } else {
            f->failed++;
        }
        int stock = stock_read();
        printf("  [%5.2f s] stock %3d  %-7s node %d%s  (", (double)(now_us() - f->t0) / 1e6, stock, FAULT_VERB[s->kind],
               node, rc == 0 ? "" : " FAILED");
        print_affected(f);
        printf(")\n");
        fflush(stdout);
        f->next++;
    }
}

/* ------------------------------------------------------------ one sale */

typedef struct sale_result {
    double seconds;
    long sold, final_stock, oversold, lost, twice, bad_units;
    buyer_stats_t total;
    int buyers_ok; /* every buyer ran to the end by itself */
    int killed;    /* buyers killed at the time limit or on a signal */
    char first_error[240];
} sale_result_t;

static pid_t buyer_pid[MAX_BUYERS];
static int buyers_alive;

static void kill_buyers(void) {
    for (int i = 0; i < MAX_BUYERS; i++)
        if (buyer_pid[i] > 0) kill(buyer_pid[i], SIGKILL);
    for (int i = 0; i < MAX_BUYERS; i++) {
        if (buyer_pid[i] <= 0) continue;
        while (waitpid(buyer_pid[i], NULL, 0) < 0 && errno == EINTR) {
        }
        buyer_pid[i] = 0;
    }
    buyers_alive = 0;
}

/* Reaps buyers that exited; returns how many still run. */
static int reap_buyers(int *abnormal) {
    for (int i = 0; i < MAX_BUYERS; i++) {
        if (buyer_pid[i] <= 0) continue;
        int status;
        pid_t r = waitpid(buyer_pid[i], &status, WNOHANG);
        if (r == buyer_pid[i]) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) (*abnormal)++;
            buyer_pid[i] = 0;
            buyers_alive--;
        }
    }
    return buyers_alive;
}

/* Counts the sales log: sold units, units sold more than once, units that
 * do not exist. */
static void audit(const sale_config_t *cfg, sale_result_t *res) {
    long *times = calloc((size_t)cfg->stock + 1, sizeof *times);
    FILE *fp = fopen(sales_path, "r");
    int unit, buyer;
    res->sold = res->twice = res->bad_units = 0;
    while (fp && fscanf(fp, "%d %d", &unit, &buyer) == 2) {
        res->sold++;
        if (unit < 1 || unit > cfg->stock || !times)
            res->bad_units++;
        else if (times[unit]++ > 0)
            res->twice++;
    }
    if (fp) fclose(fp);
    free(times);
    res->final_stock = stock_read();
    res->oversold = res->sold > cfg->stock ? res->sold - cfg->stock : 0;
    /* Every sale should have taken one unit off the stock. */
    long decrease = cfg->stock - (res->final_stock < 0 ? cfg->stock : res->final_stock);
    res->lost = res->sold > decrease ? res->sold - decrease : 0;
}

static void add_stats(buyer_stats_t *t, const buyer_stats_t *s) {
    t->sold += s->sold;
    t->attempts += s->attempts;
    t->granted += s->granted;
    t->granted_degraded += s->granted_degraded;
    t->taken += s->taken;
    t->no_quorum += s->no_quorum;
    t->other_errors += s->other_errors;
    t->skipped += s->skipped;
    t->release_not_held += s->release_not_held;
    t->release_unknown += s->release_unknown;
}

/* Runs one sale with cfg->buyers processes; with faults (may be NULL) it
 * runs the fault schedule meanwhile. Returns 0, or -1 if it could not run. */
static int run_sale(const sale_config_t *cfg, faults_t *faults, sale_result_t *res) {
    memset(res, 0, sizeof *res);
    if (store_reset(cfg->stock) != 0) {
        fprintf(stderr, "flashsale: cannot write %s: %s\n", stock_path, strerror(errno));
        return -1;
    }
    buyer_stats_t *stats =
        mmap(NULL, sizeof *stats * (size_t)cfg->buyers, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (stats == MAP_FAILED) {
        perror("flashsale: mmap");
        return -1;
    }
    memset(stats, 0, sizeof *stats * (size_t)cfg->buyers);
    int start[2];
    if (pipe(start) != 0) {
        perror("flashsale: pipe");
        munmap(stats, sizeof *stats * (size_t)cfg->buyers);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    for (int i = 0; i < cfg->buyers; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("flashsale: fork");
            close(start[0]);
            close(start[1]);
            kill_buyers();
            munmap(stats, sizeof *stats * (size_t)cfg->buyers);
            return -1;
        }
        if (pid == 0) {
            close(start[1]);
            buyer_main(i, start[0], &stats[i], cfg, parent);
        }
        buyer_pid[i] = pid;
        buyers_alive++;
    }
    close(start[0]);
    int64_t t0 = now_us();
    close(start[1]); /* go */
    if (faults) faults->t0 = t0;

    int abnormal = 0;
    while (reap_buyers(&abnormal) > 0) {
        if (interrupted || now_us() - t0 > (int64_t)SALE_LIMIT_MS * 1000) {
            res->killed = buyers_alive;
            kill_buyers();
            break;
        }
        if (faults) faults_tick(faults);
        sleep_us(10000);
    }
    res->seconds = (double)(now_us() - t0) / 1e6;

    for (int i = 0; i < cfg->buyers; i++) {
        add_stats(&res->total, &stats[i]);
        if (stats[i].other_errors && !res->first_error[0])
            snprintf(res->first_error, sizeof res->first_error, "buyer %d: %s", i, stats[i].last_message);
        if (stats[i].finished != 1) abnormal++;
    }
    res->buyers_ok = abnormal == 0 && res->killed == 0;
    munmap(stats, sizeof *stats * (size_t)cfg->buyers);
    audit(cfg, res);
    return 0;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *to, const char *prog) {
    fprintf(to,
            "usage: %s [--stock N] [--buyers N] [--no-faults] [URI...]\n"
            "  nodes: the URIs, else REDLOCK_NODES (comma-separated), else $REDLOCK_CLUSTER_DIR/nodes\n"
            "  faults: on the deploy/cluster.sh cluster in $REDLOCK_CLUSTER_DIR (script: $REDLOCK_CLUSTER_SH)\n",
            prog);
}

/* Splits s at commas / newlines into nodes (pointers into s). */
static size_t split_nodes(char *s, const char **nodes, size_t max) {
    size_t n = 0;
    for (char *uri = strtok(s, ",\n"); uri && n < max; uri = strtok(NULL, ",\n"))
        if (*uri) nodes[n++] = uri;
    return n;
}

static char *read_file(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    char *buf = malloc(8192);
    size_t n = buf ? fread(buf, 1, 8191, fp) : 0;
    fclose(fp);
    if (buf) buf[n] = '\0';
    return buf;
}

/* path relative to the working directory when it lies below it. */
static const char *shorten(const char *path) {
    static char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return path;
    size_t n = strlen(cwd);
    return strncmp(path, cwd, n) == 0 && path[n] == '/' ? path + n + 1 : path;
}

static void print_row(const char *name, const char *a, const char *b) {
    printf("  %-36s %-14s %s\n", name, a, b);
}

int main(int argc, char **argv) {
    sale_config_t cfg = {DEFAULT_STOCK, DEFAULT_BUYERS, 0, NULL, 0};
    int use_faults = 1;
    const char *nodes[MAX_NODES];
    size_t n_nodes = 0;
    char *node_text = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stock") && i + 1 < argc) {
            cfg.stock = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--buyers") && i + 1 < argc) {
            cfg.buyers = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-faults")) {
            use_faults = 0;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout, argv[0]);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "flashsale: unknown option '%s'\n", argv[i]);
            usage(stderr, argv[0]);
            return 2;
        } else if (n_nodes < MAX_NODES) {
            nodes[n_nodes++] = argv[i];
        }
    }
    if (cfg.stock < 1 || cfg.stock > 100000 || cfg.buyers < 2 || cfg.buyers > MAX_BUYERS) {
        fprintf(stderr, "flashsale: --stock must be 1..100000 and --buyers 2..%d\n", MAX_BUYERS);
        return 2;
    }
    const char *cluster_dir = getenv("REDLOCK_CLUSTER_DIR");
    if (cluster_dir && !*cluster_dir) cluster_dir = NULL;
    if (n_nodes == 0 && getenv("REDLOCK_NODES") && *getenv("REDLOCK_NODES")) {
        node_text = strdup(getenv("REDLOCK_NODES"));
        if (node_text) n_nodes = split_nodes(node_text, nodes, MAX_NODES);
    }
    if (n_nodes == 0 && cluster_dir) {
        char path[600];
        snprintf(path, sizeof path, "%s/nodes", cluster_dir);
        if ((node_text = read_file(path))) n_nodes = split_nodes(node_text, nodes, MAX_NODES);
    }
    if (n_nodes == 0) {
        fprintf(stderr, "flashsale: no lock nodes\n");
        usage(stderr, argv[0]);
        return 2;
    }
    cfg.nodes = nodes;
    cfg.n_nodes = n_nodes;

    /* Check the node list once before forking a dozen buyers with it. */
    {
        redlock_options_t opt;
        redlock_options_init(&opt);
        opt.nodes = nodes;
        opt.n_nodes = n_nodes;
        char err[256];
        redlock_t *probe = NULL;
        int rc = redlock_new_ex(&probe, &opt, err, sizeof err);
        if (rc != REDLOCK_OK) {
            fprintf(stderr, "flashsale: %s: %s\n", redlock_strerror(rc), err);
            free(node_text);
            return 2;
        }
        redlock_free(probe);
    }

    faults_t faults;
    memset(&faults, 0, sizeof faults);
    faults.script = getenv("REDLOCK_CLUSTER_SH") && *getenv("REDLOCK_CLUSTER_SH") ? getenv("REDLOCK_CLUSTER_SH")
                                                                                  : FLASHSALE_CLUSTER_SH;
    faults.dir = cluster_dir;
    const char *no_faults_why = NULL;
    if (!use_faults)
        no_faults_why = "--no-faults";
    else if (!cluster_dir)
        no_faults_why = "no REDLOCK_CLUSTER_DIR";
    else if (faults_read_status(&faults) != 0)
        no_faults_why = "cluster.sh status failed";
    else if (faults.n != (int)n_nodes)
        no_faults_why = "the cluster's node count differs from the node list";
    else if (faults.n < 5)
        no_faults_why = "the schedule needs at least 5 nodes";
    if (no_faults_why) use_faults = 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    snprintf(store_dir, sizeof store_dir, "/tmp/flashsale.XXXXXX");
    if (!mkdtemp(store_dir)) {
        perror("flashsale: mkdtemp");
        store_dir[0] = '\0';
        free(node_text);
        return 1;
    }
    snprintf(stock_path, sizeof stock_path, "%s/stock", store_dir);
    snprintf(sales_path, sizeof sales_path, "%s/sales.log", store_dir);

    printf("Flash sale: %d units, %d buyer processes, stock in %s (a file, not a lock node).\n", cfg.stock, cfg.buyers,
           stock_path);
    printf("Each buyer: read stock, wait %d-%d ms, write stock-1, log the sale; %d-%d ms between purchases.\n",
           HOLD_MIN_US / 1000, HOLD_MAX_US / 1000, THINK_MIN_MS, THINK_MAX_MS);

    sale_result_t plain, locked;
    int rc_run;

    printf("\nRun 1: no lock.\n");
    fflush(stdout);
    cfg.locked = 0;
    rc_run = run_sale(&cfg, NULL, &plain);
    if (rc_run == 0)
        printf("  %ld units sold in %.1f s; stock ends at %ld.\n", plain.sold, plain.seconds, plain.final_stock);

    int heal_failed = 0;
    if (rc_run == 0 && !interrupted) {
        printf("\nRun 2: lock \"%s\" on %zu nodes (quorum %zu), TTL %d ms, write only if > %d ms validity left.\n",
               RESOURCE, n_nodes, redlock_quorum(n_nodes), TTL_MS, MARGIN_MS);
        if (use_faults) {
            printf("Faults by %s on %s: at most %d nodes down or paused at once;\n"
                   "a killed node restarts empty, so it stays down >= %d ms (one TTL) first.\n",
                   shorten(faults.script), shorten(faults.dir), MAX_AFFECTED, REJOIN_AFTER_MS);
            heal_failed = faults_heal(&faults);
        } else {
            printf("No faults injected (%s).\n", no_faults_why);
        }
        fflush(stdout);
        cfg.locked = 1;
        rc_run = run_sale(&cfg, use_faults ? &faults : NULL, &locked);
        if (use_faults) heal_failed += faults_heal(&faults); /* leave the cluster whole */
        if (rc_run == 0)
            printf("  %ld units sold in %.1f s; stock ends at %ld.\n", locked.sold, locked.seconds, locked.final_stock);
    }
    kill_buyers(); /* none should be left; this makes sure */
    store_remove();
    free(node_text);

    if (rc_run != 0 || interrupted) {
        fprintf(stderr, "flashsale: %s\n", interrupted ? "interrupted" : "the sale could not run");
        return 1;
    }

    /* The table. */
    char a[64], b[96], name[64];
    printf("\n");
    print_row("", "no lock", use_faults ? "libredlock + faults" : "libredlock");
    snprintf(name, sizeof name, "units sold (stock %d)", cfg.stock);
    snprintf(a, sizeof a, "%ld", plain.sold);
    snprintf(b, sizeof b, "%ld", locked.sold);
    print_row(name, a, b);
    snprintf(a, sizeof a, "%ld", plain.oversold);
    snprintf(b, sizeof b, "%ld", locked.oversold);
    print_row("oversold", a, b);
    snprintf(a, sizeof a, "%ld", plain.lost);
    snprintf(b, sizeof b, "%ld", locked.lost);
    print_row("lost updates (sales - stock taken)", a, b);
    snprintf(a, sizeof a, "%ld", plain.twice);
    snprintf(b, sizeof b, "%ld", locked.twice);
    print_row("units sold twice or more", a, b);
    snprintf(b, sizeof b, "%ld (%ld with 1-2 nodes failing)", locked.total.granted, locked.total.granted_degraded);
    print_row("lock acquisitions", "-", b);
    snprintf(b, sizeof b, "%ld of %ld attempts (%ld TAKEN, %ld no quorum)", locked.total.taken + locked.total.no_quorum,
             locked.total.attempts, locked.total.taken, locked.total.no_quorum);
    print_row("retries", "-", b);
    snprintf(b, sizeof b, "%ld", locked.total.skipped);
    print_row("writes skipped (validity < margin)", "-", b);
    if (locked.total.release_not_held || locked.total.release_unknown) {
        snprintf(b, sizeof b, "%ld expired, %ld unknown", locked.total.release_not_held, locked.total.release_unknown);
        print_row("releases that found no lock", "-", b);
    }
    if (use_faults)
        snprintf(b, sizeof b, "%ld kill, %ld pause, %ld restart", faults.count[F_KILL], faults.count[F_PAUSE],
                 faults.count[F_RESTART]);
    else
        snprintf(b, sizeof b, "none (%s)", no_faults_why);
    print_row("faults injected", "-", b);
    snprintf(a, sizeof a, "%.1f s", plain.seconds);
    snprintf(b, sizeof b, "%.1f s", locked.seconds);
    print_row("time", a, b);
    if (plain.first_error[0]) printf("  run 1 error: %s\n", plain.first_error);
    if (locked.first_error[0]) printf("  run 2 error: %s\n", locked.first_error);
    if (use_faults && faults.failed) printf("  %ld fault command(s) failed\n", faults.failed);
    if (heal_failed) printf("  %d node(s) could not be brought back after the sale\n", heal_failed);

    /* The verdict. */
    int safe = locked.oversold == 0 && locked.lost == 0 && locked.twice == 0 && locked.bad_units == 0;
    int complete = locked.sold == cfg.stock && locked.final_stock == 0 && locked.buyers_ok;
    printf("\n");
    if (plain.oversold || plain.lost || plain.twice)
        printf("Without a lock the shop sold %ld units of %d: %ld oversold, %ld lost updates.\n", plain.sold, cfg.stock,
               plain.oversold, plain.lost);
    else
        printf("Without a lock the race did not strike this time (it usually does).\n");
    if (safe && complete && !heal_failed)
        printf("verdict: PASS -- with libredlock exactly %d units sold, none oversold, no lost update%s.\n", cfg.stock,
               use_faults ? ", through every fault" : "");
    else if (safe)
        printf("verdict: FAIL -- nothing oversold, but the locked sale did not complete (%ld of %d sold%s)\n",
               locked.sold, cfg.stock, locked.killed ? ", buyers killed at the time limit" : "");
    else
        printf("verdict: FAIL -- the locked sale oversold %ld and lost %ld update(s)\n", locked.oversold, locked.lost);
    return safe && complete && !heal_failed ? 0 : 1;
}
