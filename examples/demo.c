/* demo.c -- threads sharing one redlock_t: acquire, contend, release.
 *
 * Several threads share one redlock_t. Each repeatedly takes the lock on
 * "demo:counter", reads a shared counter, sleeps a little inside the
 * critical section (so that two holders at once would lose an update),
 * writes the counter back plus one, and releases. If the lock is mutually
 * exclusive the final counter equals threads x rounds.
 *
 * Each acquire call makes one attempt (wait_ms = 0) so the demo can count
 * exactly how often the lock was found taken; it retries itself after a
 * short random pause.
 *
 *   REDLOCK_NODES=redis://127.0.0.1:P1,redis://127.0.0.1:P2,... demo
 *   demo URI...
 *
 * Exit status: 0 when the counter is right and nothing failed, 1 otherwise,
 * 2 on a usage error. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

enum {
    N_THREADS = 4,
    ROUNDS = 40,          /* increments per thread */
    TTL_MS = 1000,        /* lock time-to-live */
    HOLD_US = 2000,       /* sleep inside the critical section */
    THINK_US = 500,       /* pause between a release and the next acquire */
    BACKOFF_MIN_US = 500, /* pause after finding the lock taken ... */
    BACKOFF_MAX_US = 3000,
    TIME_LIMIT_S = 15, /* each thread gives up after this long ... */
    MAX_ERRORS = 5     /* ... or after this many failed calls */
};

static const char *const RESOURCE = "demo:counter";

/* The shared counter. Its read and its write are separate atomic
 * operations, so only the Redis lock keeps increments from being lost. */
static atomic_long counter;

typedef struct worker {
    redlock_t *rl;
    int id;
    uint64_t rng; /* per-thread xorshift state */
    /* results */
    long acquired, taken, errors;
    long committed;         /* increments written while holding the lock */
    long lost_validity;     /* critical sections that ran past the lock's validity */
    int64_t acquire_us_sum; /* time of the successful acquire calls */
    int64_t wait_us_max;    /* longest wait from first try to grant */
    int last_error;
    char last_message[256];
} worker_t;

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us) {
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Returns a pseudo-random number in [lo, hi] from the worker's state. */
static int64_t random_between(worker_t *w, int64_t lo, int64_t hi) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return lo + (int64_t)(w->rng % (uint64_t)(hi - lo + 1));
}

/* Records an unexpected failure of a call. */
static void record_error(worker_t *w, int rc, const redlock_report_t *rep) {
    w->errors++;
    w->last_error = rc;
    snprintf(w->last_message, sizeof w->last_message, "%s", rep->message);
}

static void *work(void *arg) {
    worker_t *w = arg;
    redlock_report_t rep;
    int64_t give_up = now_us() + (int64_t)TIME_LIMIT_S * 1000000;

    for (int done = 0; done < ROUNDS;) {
        if (now_us() > give_up) {
            w->errors++;
            snprintf(w->last_message, sizeof w->last_message, "gave up after %d s with %d of %d increments",
                     TIME_LIMIT_S, done, ROUNDS);
            break;
        }
        /* Acquire, counting every "taken" answer until we get it. */
        redlock_lock_t *lock = NULL;
        int64_t first_try = now_us(), t0;
        int rc;
        for (;;) {
            t0 = now_us();
            rc = redlock_acquire_ex(w->rl, RESOURCE, TTL_MS, 0, &lock, &rep);
            if (rc != REDLOCK_ERR_TAKEN || now_us() > give_up) break;
            w->taken++;
            sleep_us(random_between(w, BACKOFF_MIN_US, BACKOFF_MAX_US));
        }
        if (rc != REDLOCK_OK) {
            if (rc == REDLOCK_ERR_TAKEN) continue; /* out of time: the check above ends the loop */
            record_error(w, rc, &rep);
            if (w->errors >= MAX_ERRORS) break;
            sleep_us(random_between(w, BACKOFF_MIN_US, BACKOFF_MAX_US));
            continue;
        }
        int64_t granted = now_us();
        w->acquired++;
        w->acquire_us_sum += granted - t0;
        if (granted - first_try > w->wait_us_max) w->wait_us_max = granted - first_try;

        /* Critical section: read, dawdle, write back. Only commit while
         * the lock is still valid. */
        long value = atomic_load(&counter);
        sleep_us(HOLD_US);
        if (redlock_lock_validity_ms(lock) > 0) {
            atomic_store(&counter, value + 1);
            w->committed++;
            done++;
        } else {
            w->lost_validity++;
        }

        rc = redlock_release_ex(w->rl, lock, &rep);      /* frees lock */
        if (rc != REDLOCK_OK) record_error(w, rc, &rep); /* NOT_HELD: it expired under us */
        sleep_us(THINK_US);
    }
    return NULL;
}

/* Prints one call's per-node report. */
static void print_report(const char *title, const redlock_report_t *rep) {
    printf("\n%s\n", title);
    printf("  %-28s %-8s %8s  %s\n", "node", "vote", "rtt_us", "detail");
    int pending = 0;
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const redlock_node_report_t *nr = &rep->nodes[i];
        if (nr->vote == REDLOCK_VOTE_NONE) pending = 1;
        char rtt[24] = "-";
        if (nr->rtt_us >= 0) snprintf(rtt, sizeof rtt, "%lld", (long long)nr->rtt_us);
        printf("  %-28s %-8s %8s  %s\n", nr->node, redlock_vote_name(nr->vote), rtt, nr->detail);
    }
    if (rep->result == REDLOCK_OK)
        printf("  => granted: %zu yes, %zu no, %zu failed of %zu nodes (quorum %zu); round %lld us, valid %lld ms\n",
               rep->yes, rep->no, rep->failed, rep->n_nodes, rep->quorum, (long long)rep->elapsed_us,
               (long long)rep->validity_ms);
    else
        printf("  => refused with %d (%s); round %lld us\n     report.message: %s\n", rep->result,
               redlock_strerror(rep->result), (long long)rep->elapsed_us, rep->message);
    if (pending) printf("  (pending: the outcome was decided before this node answered, so it was not waited for)\n");
}

/* One granted acquire and one refused while it is held, node by node.
 * Returns 0 when both behaved as expected. */
static int show_one_acquire(redlock_t *rl) {
    redlock_report_t rep, rep2;
    redlock_lock_t *held = NULL, *other = NULL;
    int rc = redlock_acquire_ex(rl, RESOURCE, TTL_MS, 2000, &held, &rep);
    print_report("One acquire, node by node:", &rep);
    if (rc != REDLOCK_OK) return 1;

    int rc2 = redlock_acquire_ex(rl, RESOURCE, TTL_MS, 0, &other, &rep2);
    print_report("A second acquire while that lock is held (why it was not granted):", &rep2);
    if (rc2 == REDLOCK_OK) redlock_release(rl, other);

    int rc3 = redlock_release(rl, held);
    printf("\nrelease of the first lock: %s\n", redlock_strerror(rc3));
    return rc2 == REDLOCK_ERR_TAKEN && rc3 == REDLOCK_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *nodes[REDLOCK_MAX_NODES];
    size_t n_nodes = 0;
    char *env_copy = NULL;
    if (argc > 1) {
        for (int i = 1; i < argc && n_nodes < REDLOCK_MAX_NODES; i++) nodes[n_nodes++] = argv[i];
    } else if (getenv("REDLOCK_NODES")) {
        const char *env = getenv("REDLOCK_NODES");
        if (!(env_copy = malloc(strlen(env) + 1))) return 1;
        strcpy(env_copy, env);
        for (char *uri = strtok(env_copy, ","); uri && n_nodes < REDLOCK_MAX_NODES; uri = strtok(NULL, ","))
            nodes[n_nodes++] = uri;
    }
    if (n_nodes == 0) {
        fprintf(stderr, "usage: REDLOCK_NODES=URI,URI,... %s   or   %s URI...\n", argv[0], argv[0]);
        free(env_copy);
        return 2;
    }

    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = nodes;
    opt.n_nodes = n_nodes;
    opt.reentrant = 0; /* show_one_acquire asks again from the same thread: contend, do not re-enter */
    /* 500 ms a node rather than the default 50: on a busy machine (a test
     * suite beside it) a loopback node can take longer to answer, and the
     * demo counts a call that fails so as an error */
    opt.op_timeout_ms = 500;
    opt.connect_timeout_ms = 500;
    char err[256];
    redlock_t *rl = NULL;
    int rc = redlock_new_ex(&rl, &opt, err, sizeof err);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "redlock_new: %s: %s\n", redlock_strerror(rc), err);
        free(env_copy);
        return 1;
    }

    printf("libredlock %s demo: %d threads share one redlock_t and each adds 1 to a counter %d times,\n",
           REDLOCK_VERSION, N_THREADS, ROUNDS);
    printf("holding lock \"%s\" (ttl %d ms, %d ms asleep inside) on %zu nodes, quorum %zu.\n", RESOURCE, TTL_MS,
           HOLD_US / 1000, n_nodes, redlock_quorum(n_nodes));

    worker_t w[N_THREADS];
    pthread_t tid[N_THREADS];
    int started = 0;
    int64_t t_start = now_us();
    for (int i = 0; i < N_THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].rl = rl;
        w[i].id = i;
        w[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)t_start;
        if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    double seconds = (double)(now_us() - t_start) / 1e6;

    printf("\n%-6s %9s %14s %7s %15s %12s\n", "thread", "acquired", "taken-retries", "errors", "avg-acquire-us",
           "max-wait-ms");
    long acquired = 0, taken = 0, errors = 0, committed = 0, lost_validity = 0;
    int64_t us_sum = 0, wait_max = 0;
    for (int i = 0; i < started; i++) {
        printf("%-6d %9ld %14ld %7ld %15lld %12.1f\n", i, w[i].acquired, w[i].taken, w[i].errors,
               (long long)(w[i].acquired ? w[i].acquire_us_sum / w[i].acquired : 0), (double)w[i].wait_us_max / 1e3);
        acquired += w[i].acquired;
        taken += w[i].taken;
        errors += w[i].errors;
        committed += w[i].committed;
        lost_validity += w[i].lost_validity;
        us_sum += w[i].acquire_us_sum;
        if (w[i].wait_us_max > wait_max) wait_max = w[i].wait_us_max;
    }
    printf("%-6s %9ld %14ld %7ld %15lld %12.1f\n", "all", acquired, taken, errors,
           (long long)(acquired ? us_sum / acquired : 0), (double)wait_max / 1e3);
    for (int i = 0; i < started; i++)
        if (w[i].errors) printf("thread %d: last error %d: %s\n", i, w[i].last_error, w[i].last_message);
    if (lost_validity)
        printf("%ld critical section(s) outlived the lock's validity and did not write\n", lost_validity);

    long expected = (long)N_THREADS * ROUNDS;
    long final = atomic_load(&counter);
    printf("\ncounter: %ld, expected %ld", final, expected);
    if (final == committed)
        printf(" (%ld increments made under the lock, none lost)", committed);
    else
        printf(" (%ld increments made under the lock, %ld LOST)", committed, committed - final);
    printf("; %.2f s, %.0f locks/s\n", seconds, seconds > 0 ? (double)acquired / seconds : 0.0);

    int show_failed = show_one_acquire(rl);
    redlock_free(rl);
    free(env_copy);

    int ok = started == N_THREADS && final == expected && errors == 0 && !show_failed;
    if (ok)
        printf("\nverdict: PASS -- %ld increments under the lock, none lost, no errors\n", expected);
    else
        printf("\nverdict: FAIL -- counter %ld of %ld, %ld lost, %ld error(s)%s\n", final, expected, committed - final,
               errors, show_failed ? ", the per-node check did not behave as expected" : "");
    return ok ? 0 : 1;
}
