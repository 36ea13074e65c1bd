/* stress_permits.c -- a semaphore under contention and a node crash:
 * 16 threads on two handles contend for the permits of one
 * semaphore of limit 3 for STRESS_PERMITS_S seconds (default 20); node 1
 * is killed (SIGKILL) a third of the way in and restarted, empty, at two
 * thirds. The fixture's nodes keep no data on disk, so the handles run
 * with the restart quarantine (max_ttl_ms): the restarted node gets no vote
 * until every lock it forgot has expired (the run starts once the
 * fixture's nodes are past that age themselves). Checked: the number of holders
 * in this process never exceeds 3, no slot is ever held twice, permits are
 * still granted while the node is down, and at the end every slot is free
 * (no key left on any node, and a fresh client takes all 3 permits).
 * A plain program (see support/stress.h), also run under ThreadSanitizer. */
#include <stdatomic.h>
#include <hiredis/hiredis.h>
#include <string.h>

#include "stress.h"

#define LIMIT 3
#define THREADS 16
#define TTL_MS 3000
#define RESOURCE "sp:sem"

static redlock_t *RL[2];
static atomic_int stop, inside, most, overlaps, errors;
static atomic_int slot_users[LIMIT];
static atomic_long grants, gave_up, release_failed;

/* A handle that waits for permits (woken by releases, retrying every 100
 * +- 50 ms) and quarantines a restarted node for the TTL. */
static redlock_t *permit_rl(void) {
    const char *uris[TC_MAX_NODES];
    redlock_options_t o;
    stress_options(&o, uris, 1000000, 100, 50, 300);
    o.max_ttl_ms = TTL_MS;
    return stress_rl(&o);
}

/* Counts one more holder (and of its slot); records the most seen. */
static void enter(int slot) {
    int now = atomic_fetch_add(&inside, 1) + 1;
    for (int seen = atomic_load(&most); now > seen && !atomic_compare_exchange_weak(&most, &seen, now);) {
    }
    if (now > LIMIT) atomic_fetch_add(&overlaps, 1);
    if (slot < 0 || slot >= LIMIT || atomic_fetch_add(&slot_users[slot], 1)) atomic_fetch_add(&overlaps, 1);
}

static void leave(int slot) {
    if (slot >= 0 && slot < LIMIT) atomic_fetch_sub(&slot_users[slot], 1);
    atomic_fetch_sub(&inside, 1);
}

/* One contender: takes a permit (waiting up to 5 s), holds it 1-4 ms,
 * releases it, until told to stop. */
static void *contender(void *arg) {
    intptr_t id = (intptr_t)arg;
    redlock_t *rl = RL[id % 2];
    while (!atomic_load(&stop)) {
        redlock_lock_t *lk = NULL;
        int rc = redlock_acquire_permit(rl, RESOURCE, LIMIT, TTL_MS, 5000, &lk, NULL);
        if (rc != REDLOCK_OK) {
            if (rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM) {
                atomic_fetch_add(&gave_up, 1);
            } else {
                atomic_fetch_add(&errors, 1);
                printf("acquire: %s\n", redlock_strerror(rc));
            }
            continue;
        }
        int slot = redlock_lock_slot(lk);
        enter(slot);
        rt_sleep_ms(1 + (unsigned)(id % 4));
        leave(slot);
        atomic_fetch_add(&grants, 1);
        if ((rc = redlock_release(rl, lk)) != REDLOCK_OK) { /* the dead node and a slow one: it expires */
            if (rc == REDLOCK_ERR_NO_QUORUM) {
                atomic_fetch_add(&release_failed, 1);
            } else {
                atomic_fetch_add(&errors, 1);
                printf("release: %s\n", redlock_strerror(rc));
            }
        }
    }
    return NULL;
}

/* Nodes on which some slot key of the semaphore is left. */
static int nodes_with_slots(void) {
    int k = 0;
    for (int i = 0; i < C.n; i++) {
        int any = 0;
        for (int s = 0; s < LIMIT; s++) {
            char key[64];
            snprintf(key, sizeof key, RESOURCE ":permit:%d", s);
            any |= tc_pttl(&C, i, key) != -2;
        }
        k += any;
    }
    return k;
}

/* A fresh client takes all LIMIT permits at once (every slot is free),
 * and no more; then gives them back. */
static void check_all_free(void) {
    redlock_t *rl = permit_rl();
    redlock_lock_t *p[LIMIT + 1] = {NULL};
    int got = 0;
    for (int i = 0; i < LIMIT; i++) got += redlock_acquire_permit(rl, RESOURCE, LIMIT, TTL_MS, 0, &p[i], NULL) == 0;
    CHECK(got == LIMIT, "at the end a fresh client got %d of %d permits", got, LIMIT);
    int rc = redlock_acquire_permit(rl, RESOURCE, LIMIT, TTL_MS, 0, &p[LIMIT], NULL);
    CHECK(rc == REDLOCK_ERR_TAKEN, "a permit beyond the limit: %s", redlock_strerror(rc));
    for (int i = 0; i <= LIMIT; i++)
        if (p[i]) CHECK(redlock_release(rl, p[i]) == REDLOCK_OK, "releasing permit %d", i);
    redlock_free(rl);
}

/* The seconds node i has been up (INFO server), or -1. */
static long uptime_s(int i) {
    redisContext *c = tc_connect(&C, i);
    redisReply *r = c ? redisCommand(c, "INFO server") : NULL;
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "uptime_in_seconds:") : NULL;
    long up = p ? strtol(p + 18, NULL, 10) : -1;
    if (r) freeReplyObject(r);
    if (c) redisFree(c);
    return up;
}

/* The fixture's nodes may have just started: a handle with max_ttl_ms
 * quarantines a node up for less than that, so wait until every node is
 * past it (the library takes a second off the uptime it reads). */
static void wait_out_quarantine(void) {
    long need = TTL_MS / 1000 + 2;
    for (int i = 0; i < C.n; i++) {
        long up = uptime_s(i);
        if (up >= 0 && up < need) rt_sleep_ms((unsigned)(need - up) * 1000);
    }
}

int main(void) {
    stress_begin();
    wait_out_quarantine();
    int secs = stress_seconds("STRESS_PERMITS_S", 20);
    RL[0] = permit_rl();
    RL[1] = permit_rl();
    pthread_t t[THREADS];
    start_threads(t, THREADS, contender);
    rt_sleep_ms((unsigned)secs * 1000 / 3);
    int killed = tc_node_kill(&C, 1);
    long before = atomic_load(&grants);
    rt_sleep_ms((unsigned)secs * 1000 / 3);
    long during = atomic_load(&grants) - before;
    int restarted = tc_node_restart(&C, 1, 1);
    rt_sleep_ms((unsigned)secs * 1000 / 3);
    atomic_store(&stop, 1);
    join_threads(t, THREADS);
    CHECK(killed == 0 && restarted == 0, "node 1: kill %d, restart %d", killed, restarted);
    CHECK(atomic_load(&overlaps) == 0, "%d times more than %d holders, or a slot held twice", atomic_load(&overlaps),
          LIMIT);
    CHECK(atomic_load(&most) == LIMIT, "at most %d holders at once: the semaphore was never full", atomic_load(&most));
    CHECK(atomic_load(&errors) == 0, "%d failed calls", atomic_load(&errors));
    CHECK(during > 10, "only %ld grants while node 1 was down", during);
    printf("permits %d s, %d threads, limit %d: %ld grants (%ld with node 1 down), most holders at once %d, "
           "%ld waits gave up after 5 s, %ld releases without a quorum\n",
           secs, THREADS, LIMIT, atomic_load(&grants), during, atomic_load(&most), atomic_load(&gave_up),
           atomic_load(&release_failed));
    redlock_free(RL[1]);
    redlock_free(RL[0]);
    /* a release without a quorum leaves its slot keys until the TTL */
    rt_sleep_ms(atomic_load(&release_failed) ? TTL_MS + 200 : 200);
    CHECK(nodes_with_slots() == 0, "slot keys left on %d nodes", nodes_with_slots());
    check_all_free();
    return stress_end();
}
