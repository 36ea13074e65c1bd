/* stress_threads.c -- the threaded parts under stress, as a plain program
 * (Criterion's runner cannot run under ThreadSanitizer): one redlock_t
 * shared by many threads on distinct and on one shared resource, the
 * watchdog extending while owners read validity and release, a takeover
 * racing the owner's release, and redlock_free with the watchdog running.
 * Needs the fixture cluster ($REDLOCK_CLUSTER_DIR). Prints one line per
 * check and "N passed, M failed"; exits 1 on any failure. */
#include <stdatomic.h>
#include <string.h>

#include "stress.h"

/* A redlock_t over the 5 nodes, retrying every delay_ms +- jitter_ms,
 * waiting op_timeout_ms for a reply. */
static redlock_t *new_rl(uint32_t retries, uint32_t delay_ms, uint32_t jitter_ms, uint32_t op_timeout_ms) {
    const char *uris[TC_MAX_NODES];
    redlock_options_t o;
    stress_options(&o, uris, retries, delay_ms, jitter_ms, op_timeout_ms);
    return stress_rl(&o);
}

/* The same, retrying every 3 +- 2 ms, waiting 500 ms for a reply. */
static redlock_t *make_rl(uint32_t retries) {
    return new_rl(retries, 3, 2, 500);
}

/* ------------------------------------------------------------------ work */

static redlock_t *RL;
static atomic_int inside, overlaps, errors;
static long counter;
static _Atomic(const char *) first_error = "";
static char first_report[1536];
static atomic_flag report_kept;

/* Counts a failed call; keeps the first failure's error name. */
static void failed_call(int rc) {
    const char *none = "";
    if (atomic_fetch_add(&errors, 1) == 0) atomic_compare_exchange_strong(&first_error, &none, redlock_strerror(rc));
}

/* Keeps the first failed acquire's report in words, with every node's vote,
 * round trip and detail, for the check that fails to print. */
static void keep_report(const redlock_report_t *rep) {
    if (atomic_flag_test_and_set(&report_kept)) return;
    int at = snprintf(first_report, sizeof first_report, "%s", rep->message);
    for (size_t n = 0; n < rep->n_nodes && at > 0 && (size_t)at < sizeof first_report; n++)
        at += snprintf(first_report + at, sizeof first_report - (size_t)at, "; %s %ld us %s",
                       redlock_vote_name(rep->nodes[n].vote), (long)rep->nodes[n].rtt_us, rep->nodes[n].detail);
}

static int distinct_rounds = 60; /* acquire + release cycles per thread */

static void *distinct(void *arg) {
    char key[32];
    snprintf(key, sizeof key, "st:%d", (int)(intptr_t)arg);
    for (int i = 0; i < distinct_rounds; i++) {
        redlock_lock_t *lk = NULL;
        redlock_report_t rep;
        int rc = redlock_acquire_ex(RL, key, 10000, 0, &lk, &rep);
        if (rc != REDLOCK_OK) keep_report(&rep);
        if (rc == REDLOCK_OK) rc = redlock_release(RL, lk);
        if (rc != REDLOCK_OK) failed_call(rc);
    }
    return NULL;
}

static void *shared(void *arg) {
    (void)arg;
    for (int i = 0; i < 8; i++) {
        redlock_lock_t *lk = NULL;
        int rc = redlock_acquire(RL, "st:shared", 10000, &lk);
        if (rc != REDLOCK_OK) {
            failed_call(rc);
            continue;
        }
        if (atomic_fetch_add(&inside, 1)) atomic_fetch_add(&overlaps, 1);
        long v = counter;
        rt_sleep_ms(1);
        counter = v + 1;
        atomic_fetch_sub(&inside, 1);
        rc = redlock_release(RL, lk);
        if (rc != REDLOCK_OK) failed_call(rc);
    }
    return NULL;
}

/* Owners hold auto-extended locks while reading their validity. */
static void *watched(void *arg) {
    char key[32];
    snprintf(key, sizeof key, "st:w%d", (int)(intptr_t)arg);
    redlock_lock_t *lk = NULL;
    int rc = redlock_acquire(RL, key, 10000, &lk);
    if (rc != REDLOCK_OK) {
        failed_call(rc);
        return NULL;
    }
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.interval_ms = 20;
    rc = redlock_autoextend(RL, lk, &ao, NULL, NULL);
    if (rc != REDLOCK_OK) failed_call(rc);
    for (int i = 0; i < 40; i++) {
        if (!redlock_lock_valid(lk, 0)) failed_call(REDLOCK_ERR_NOT_HELD);
        rt_sleep_ms(5);
    }
    rc = redlock_release(RL, lk);
    if (rc != REDLOCK_OK) failed_call(rc);
    return NULL;
}

static atomic_int lost_calls;
static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    (void)reason;
    (void)arg;
    if (redlock_lock_lost(lock)) atomic_fetch_add(&lost_calls, 1);
}

/* ---------------------------------------------------------------- checks */

static void check_distinct_and_shared(void) {
    /* Thread safety is checked here, not timing: under valgrind on a busy
     * machine a reply can take most of a second to be read. */
    RL = new_rl(100000, 3, 2, 5000);
    run_threads(16, distinct);
    CHECK(atomic_load(&errors) == 0, "distinct resources: %d failed calls, the first: %s (%s)", atomic_load(&errors),
          atomic_load(&first_error), first_report);
    atomic_store(&errors, 0);
    atomic_store(&first_error, "");
    run_threads(16, shared);
    CHECK(atomic_load(&errors) == 0, "shared resource: %d failed calls, the first: %s", atomic_load(&errors),
          atomic_load(&first_error));
    CHECK(atomic_load(&overlaps) == 0, "shared resource: %d overlaps", atomic_load(&overlaps));
    CHECK(counter == 16 * 8, "shared resource: counter %ld, want %d", counter, 16 * 8);
    redlock_free(RL);
}

/* More callers than the engine's wake word has bits (32): sleepers past
 * the 32nd share a bit, may wake for another's round and must sleep again. */
static void check_more_sleepers_than_wake_bits(void) {
    RL = new_rl(100000, 3, 2, 5000);
    atomic_store(&errors, 0);
    atomic_store(&first_error, "");
    distinct_rounds = 20;
    run_threads(48, distinct);
    CHECK(atomic_load(&errors) == 0, "48 threads, distinct resources: %d failed calls, the first: %s (%s)",
          atomic_load(&errors), atomic_load(&first_error), first_report);
    redlock_free(RL);
}

/* max_inflight 4 (a ring of 4 requests beyond a connection's set-up)
 * under 32 callers: a caller that finds its node's ring full marks the
 * node down and closes its connection, maybe while the leader writes to
 * it without the engine mutex. Calls may fail (IO, no quorum), but none
 * may crash or hang, and the handle must work again afterwards. */
static atomic_int full_ok;
static void *tiny_ring(void *arg) {
    char key[32];
    snprintf(key, sizeof key, "st:ring%d", (int)(intptr_t)arg);
    for (int i = 0; i < 20; i++) {
        redlock_lock_t *lk = NULL;
        if (redlock_acquire(RL, key, 10000, &lk) != REDLOCK_OK) continue;
        if (redlock_release(RL, lk) == REDLOCK_OK) atomic_fetch_add(&full_ok, 1);
    }
    return NULL;
}

static void check_full_rings(void) {
    const char *uris[TC_MAX_NODES];
    redlock_options_t o;
    stress_options(&o, uris, 0, 3, 2, 2000);
    o.max_inflight = 4;
    RL = stress_rl(&o);
    run_threads(32, tiny_ring);
    int after = REDLOCK_ERR_IO;
    for (int tries = 0; tries < 100 && after != REDLOCK_OK; tries++) { /* the nodes reconnect after a backoff */
        redlock_lock_t *lk = NULL;
        after = redlock_acquire(RL, "st:ring-after", 10000, &lk);
        if (after == REDLOCK_OK) after = redlock_release(RL, lk);
        if (after != REDLOCK_OK) rt_sleep_ms(50);
    }
    CHECK(after == REDLOCK_OK,
          "max_inflight 4: the handle still fails after its nodes came back: %s (%d cycles of 640 had succeeded)",
          redlock_strerror(after), atomic_load(&full_ok));
    printf("  max_inflight 4, 32 threads: %d of 640 cycles succeeded\n", atomic_load(&full_ok));
    redlock_free(RL);
}

static void check_watchdog(void) {
    atomic_store(&errors, 0);
    atomic_store(&first_error, "");
    RL = new_rl(0, 3, 2, 2000);
    run_threads(8, watched);
    CHECK(atomic_load(&errors) == 0, "watchdog: %d errors while owners held and released, the first: %s",
          atomic_load(&errors), atomic_load(&first_error));
    /* takeover racing the owner: on_lost and release must not collide */
    for (int k = 0; k < 10; k++) {
        redlock_lock_t *lk = NULL;
        if (redlock_acquire(RL, "st:race", 5000, &lk) != REDLOCK_OK) {
            CHECK(0, "race %d: acquire failed", k);
            continue;
        }
        redlock_autoextend_options_t ao;
        redlock_autoextend_options_init(&ao);
        ao.interval_ms = 10;
        redlock_autoextend(RL, lk, &ao, on_lost, NULL);
        for (int i = 0; i < C.n; i++) tc_set(&C, i, "st:race", "foreign-token", 5000);
        rt_sleep_ms((unsigned)(k * 3));
        redlock_release(RL, lk); /* NOT_HELD or OK: either way no crash, no race */
        for (int i = 0; i < C.n; i++) tc_del(&C, i, "st:race");
    }
    CHECK(atomic_load(&lost_calls) <= 10, "on_lost called %d times for 10 locks", atomic_load(&lost_calls));
    /* redlock_free while the watchdog still extends a lock */
    redlock_lock_t *lk = NULL;
    CHECK(redlock_acquire(RL, "st:free", 5000, &lk) == REDLOCK_OK, "acquire before free");
    if (lk) redlock_autoextend(RL, lk, NULL, NULL, NULL);
    rt_sleep_ms(50);
    redlock_free(RL);
    redlock_lock_free(lk); /* after redlock_free: must not touch the freed redlock_t */
    CHECK(1, "free with the watchdog running");
}

/* A waiter on a held resource: its wait ends by redlock_cancel_waits. */
static atomic_int cancelled_waits, finished_waits;
static void *cancel_waiter(void *arg) {
    (void)arg;
    redlock_lock_t *lk = NULL;
    int rc = redlock_acquire_ex(RL, "st:held", 5000, 30000, &lk, NULL);
    if (rc == REDLOCK_ERR_CANCELLED) atomic_fetch_add(&cancelled_waits, 1);
    if (lk) redlock_release(RL, lk);
    atomic_fetch_add(&finished_waits, 1);
    return NULL;
}

/* Cancels RL's waits from another thread, repeatedly, while the waiters
 * come and go: the cancel pipe and generation under ThreadSanitizer. */
static void check_cancel_waits(void) {
    RL = make_rl(1000000);
    for (int i = 0; i < C.n; i++) tc_set(&C, i, "st:held", "someone", 60000);
    for (int round = 0; round < 3; round++) {
        pthread_t t[8];
        atomic_store(&cancelled_waits, 0);
        atomic_store(&finished_waits, 0);
        for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, cancel_waiter, NULL);
        /* cancel until every waiter is back (a slow thread may start its wait after a cancel) */
        for (int k = 0; k < 400 && atomic_load(&finished_waits) < 8; k++) {
            rt_sleep_ms(50);
            redlock_cancel_waits(RL);
        }
        for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
        CHECK(atomic_load(&cancelled_waits) == 8, "cancel round %d: %d of 8 waits cancelled", round,
              atomic_load(&cancelled_waits));
    }
    CHECK(tc_count_value(&C, "st:held", "someone") == C.n, "the holder's key stayed on every node");
    for (int i = 0; i < C.n; i++) tc_del(&C, i, "st:held");
    redlock_free(RL);
}

/* ------------------------------------------ contention with a node paused */

static redlock_t *RL2;
static atomic_int stop_contending, gave_up, release_failed;
static atomic_long grants;

/* Waits for st:contend (through RL or RL2: two clients), holds it ~1 ms,
 * releases, works ~1 ms elsewhere; counts overlapping holders. */
static void *contender(void *arg) {
    redlock_t *rl = (intptr_t)arg % 2 ? RL2 : RL;
    while (!atomic_load(&stop_contending)) {
        redlock_lock_t *lk = NULL;
        int rc = redlock_acquire_ex(rl, "st:contend", 2000, 5000, &lk, NULL);
        if (rc != REDLOCK_OK) {
            atomic_fetch_add(rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM ? &gave_up : &errors, 1);
            if (rc != REDLOCK_ERR_TAKEN && rc != REDLOCK_ERR_NO_QUORUM) printf("acquire: %s\n", redlock_strerror(rc));
            continue;
        }
        if (atomic_fetch_add(&inside, 1)) atomic_fetch_add(&overlaps, 1);
        rt_sleep_ms(1);
        atomic_fetch_sub(&inside, 1);
        atomic_fetch_add(&grants, 1);
        if ((rc = redlock_release(rl, lk)) != REDLOCK_OK) { /* a slow node (loaded, sanitized run): it expires */
            atomic_fetch_add(rc == REDLOCK_ERR_NO_QUORUM ? &release_failed : &errors, 1);
            if (rc != REDLOCK_ERR_NO_QUORUM) printf("release: %s\n", redlock_strerror(rc));
        }
        rt_sleep_ms(1);
    }
    return NULL;
}

/* A handle with the default retry delay (200 +- 100 ms): waiters are
 * woken by releases, the delay is only the fallback. Two clients' heads
 * woken by one release may split the votes; with a node paused a split
 * waits op_timeout_ms for it, so that is kept short. */
static redlock_t *waking_rl(void) {
    return new_rl(1000000, 200, 100, 300);
}

/* Nodes that have key for good (no TTL), or, except for node skip, at all. */
static int nodes_with(const char *key, int skip) {
    int k = 0;
    for (int i = 0; i < C.n; i++) {
        long long pttl = tc_pttl(&C, i, key);
        k += pttl == -1 || (i != skip && pttl >= 0);
    }
    return k;
}

/* 8 threads on two handles contend for one resource for STRESS_CONTEND_S
 * seconds (default 30); node 2 is paused (SIGSTOP) for a third of the run
 * in the middle. No two holders at once, the lock keeps changing hands,
 * and nothing is left on the nodes. */
static void check_contention_with_a_pause(void) {
    int secs = stress_seconds("STRESS_CONTEND_S", 30);
    RL = waking_rl();
    RL2 = waking_rl();
    atomic_store(&inside, 0);
    atomic_store(&overlaps, 0);
    atomic_store(&errors, 0);
    pthread_t t[8];
    for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, contender, (void *)(intptr_t)i);
    rt_sleep_ms((unsigned)secs * 1000 / 3);
    int paused = tc_node_pause(&C, 2);
    long before = atomic_load(&grants);
    rt_sleep_ms((unsigned)secs * 1000 / 3);
    long during = atomic_load(&grants) - before;
    tc_node_resume(&C, 2);
    rt_sleep_ms((unsigned)secs * 1000 / 3);
    atomic_store(&stop_contending, 1);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    CHECK(paused == 0, "node 2 could not be paused");
    CHECK(atomic_load(&overlaps) == 0, "contention: %d overlapping holders", atomic_load(&overlaps));
    CHECK(atomic_load(&errors) == 0, "contention: %d failed calls", atomic_load(&errors));
    /* more than one grant a second of the pause (which lasts secs / 3:
     * 10 s in the plain build, 2 s under valgrind, where 7 came) */
    CHECK(during > secs / 3, "contention: only %ld grants while node 2 was paused", during);
    printf("contention %d s: %ld grants (%ld with node 2 paused), %d waits gave up after 5 s, %d releases "
           "without a quorum\n",
           secs, atomic_load(&grants), during, atomic_load(&gave_up), atomic_load(&release_failed));
    /* node 2 may keep an attempt's key whose clean-up was lost with its
     * connection (too many requests queued while it was paused), and a
     * release without a quorum leaves its key: both expire (TTL 2 s) */
    rt_sleep_ms(atomic_load(&release_failed) ? 2200 : 200);
    CHECK(nodes_with("st:contend", 2) == 0, "a key was left on %d nodes", nodes_with("st:contend", 2));
    redlock_free(RL2);
    redlock_free(RL);
}

int main(void) {
    stress_begin();
    check_distinct_and_shared();
    check_more_sleepers_than_wake_bits();
    check_full_rings();
    check_watchdog();
    check_cancel_waits();
    check_contention_with_a_pause();
    return stress_end();
}
