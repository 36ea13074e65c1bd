/* test_rwlock.c -- read-write locks (doc/design.md, "Semaphores and
 * read-write locks"): readers share the resource's key (a hash of reader
 * token -> expiry), a writer is a plain exclusive lock on it, and the two
 * exclude each other, also against other clients' plain SET NX; expired
 * readers free the key; a waiting writer is granted before the readers
 * that came after it; a key of another type is a clear server error. Also
 * built with -DRL_TEST_ASYNC. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

static tc_cluster_t C;
static void setup(void) {
    rt_setup(&C);
}
TestSuite(rwlock, .init = setup, .timeout = 120);

/* A handle whose callers may wait (retrying every 200 ms, woken by releases). */
static redlock_t *waiting_rl(void) {
    redlock_options_t o;
    rt_options(&o);
    o.retry_count = 1000;
    o.op_timeout_ms = 300;
    return rt_new(&C, 5, &o);
}

/* An integer reply of the command on node i, -1 for any other reply. */
static long long int_of(int i, const char *fmt, const char *key, const char *field) {
    redisContext *c = tc_connect(&C, i);
    cr_assert_not_null(c);
    redisReply *r = redisCommand(c, fmt, key, field);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Readers recorded in key on node i (its fields but the hash's clock
 * '@end'), -1 when it is not a hash. */
static long long readers_on(int i, const char *key) {
    long long n = int_of(i, "HLEN %s", key, NULL);
    return n < 0 ? n : n - int_of(i, "HEXISTS %s %s", key, "@end");
}

Test(rwlock, readers_share_and_exclude_writers_both_ways) {
    redlock_t *a = rt_new(&C, 5, NULL), *b = rt_new(&C, 5, NULL);
    redlock_lock_t *r1 = NULL, *r2 = NULL, *r3 = NULL, *w = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(a, "rw:doc", 10000, 0, &r1, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_shared(b, "rw:doc", 10000, 0, &r2, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_shared(b, "rw:doc", 10000, 0, &r3, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert(redlock_lock_is_shared(r1) && !redlock_lock_fence(r1));
    /* (a round stops at its quorum: the last nodes' entries may land a moment later) */
    for (int i = 0; i < C.n; i++) {
        long long n = readers_on(i, "rw:doc");
        for (int tries = 0; n != 3 && tries < 100; tries++) rt_sleep_ms(10), n = readers_on(i, "rw:doc");
        cr_assert_eq(n, 3, "node %d", i);
    }
    /* a writer (ours, or any client's SET NX) is refused while one reader stays */
    cr_assert_eq(redlock_try_acquire(a, "rw:doc", 10000, &w), REDLOCK_ERR_TAKEN);
    cr_assert_eq(redlock_release(a, r1), REDLOCK_OK);
    cr_assert_eq(redlock_release(b, r2), REDLOCK_OK);
    cr_assert_eq(redlock_try_acquire(a, "rw:doc", 10000, &w), REDLOCK_ERR_TAKEN);
    cr_assert_eq(redlock_extend(b, r3, 20000), REDLOCK_OK, "a reader extends");
    cr_assert_eq(redlock_release(b, r3), REDLOCK_OK);
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_pttl(&C, i, "rw:doc"), -2, "the last reader deletes the key");
    /* the writer now; readers are refused while it holds */
    cr_assert_eq(redlock_try_acquire(a, "rw:doc", 10000, &w), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_shared(b, "rw:doc", 10000, 0, &r1, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_eq(redlock_release(a, w), REDLOCK_OK);
    redlock_free(b);
    redlock_free(a);
}

Test(rwlock, another_clients_plain_exclusive_lock_blocks_readers) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_set(&C, i, "rw:foreign", "node-redlock-token", 10000), 0);
    redlock_lock_t *r = NULL;
    cr_assert_eq(redlock_acquire_shared(rl, "rw:foreign", 10000, 0, &r, NULL), REDLOCK_ERR_TAKEN);
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_count_value(&C, "rw:foreign", "node-redlock-token"), 5);
    for (int i = 0; i < C.n; i++) tc_del(&C, i, "rw:foreign");
    redlock_free(rl);
}

Test(rwlock, readers_that_expire_without_release_free_the_key_for_a_writer) {
    redlock_t *rl = waiting_rl();
    redlock_lock_t *r = NULL, *w = NULL;
    cr_assert_eq(redlock_acquire_shared(rl, "rw:expire", 600, 0, &r, NULL), REDLOCK_OK);
    redlock_lock_free(r); /* a crashed reader: never released */
    uint64_t t = rt_now_us();
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "rw:expire", 5000, 5000, &w, &rep), REDLOCK_OK, "%s", rep.message);
    uint64_t ms = (rt_now_us() - t) / 1000;
    cr_assert_geq(ms, 500, "the writer got it after %llu ms (the reader had 600 ms)", (unsigned long long)ms);
    cr_assert_eq(redlock_release(rl, w), REDLOCK_OK);
    redlock_free(rl);
}

/* Moves every value of the hash key on node i by `by` ms: its readers'
 * expiries and its clock, as a server with a clock `by` ms off wrote them. */
static void shift_hash(int i, const char *key, long long by) {
    redisContext *c = tc_connect(&C, i);
    cr_assert_not_null(c);
    redisReply *all = redisCommand(c, "HGETALL %s", key);
    cr_assert(all && all->type == REDIS_REPLY_ARRAY && all->elements >= 2, "node %d: no hash %s", i, key);
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        long long v = strtoll(all->element[k + 1]->str, NULL, 10);
        redisReply *r = redisCommand(c, "HSET %s %s %lld", key, all->element[k]->str, v + by);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "node %d: HSET failed", i);
        freeReplyObject(r);
    }
    freeReplyObject(all);
    redisFree(c);
}

/* A readers' hash written on a server whose clock is 10 minutes behind
 * (a Redis Cluster slot migrated, a replica promoted) keeps its reader:
 * another reader's grant and release there do not prune it or cut the
 * key's life, the writer stays out, and the reader can still extend. */
Test(rwlock, a_readers_hash_from_a_server_whose_clock_is_behind_keeps_its_readers) {
    redlock_t *a = rt_new(&C, 5, NULL), *b = rt_new(&C, 5, NULL), *wl = waiting_rl();
    redlock_lock_t *r1 = NULL, *r2 = NULL, *w = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(a, "rw:moved", 20000, 0, &r1, &rep), REDLOCK_OK, "%s", rep.message);
    for (int i = 0; i < C.n; i++) {
        long long n = readers_on(i, "rw:moved");
        for (int tries = 0; n != 1 && tries < 100; tries++) rt_sleep_ms(10), n = readers_on(i, "rw:moved");
        cr_assert_eq(n, 1, "node %d", i);
        shift_hash(i, "rw:moved", -600000);
    }
    cr_assert_eq(redlock_acquire_shared(b, "rw:moved", 1000, 0, &r2, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(b, r2), REDLOCK_OK);
    for (int i = 0; i < C.n; i++) {
        long long n = readers_on(i, "rw:moved"), ms = tc_pttl(&C, i, "rw:moved");
        for (int tries = 0; n != 1 && tries < 100; tries++) rt_sleep_ms(10), n = readers_on(i, "rw:moved");
        cr_assert_eq(n, 1, "node %d: the first reader's entry is not alone", i);
        cr_assert_gt(ms, 10000, "node %d: the key's life was cut to %lld ms", i, ms);
    }
    cr_assert_eq(redlock_try_acquire(wl, "rw:moved", 10000, &w), REDLOCK_ERR_TAKEN);
    cr_assert_eq(redlock_extend_ex(a, r1, 20000, &rep), REDLOCK_OK, "%s: %s", redlock_strerror(rep.result),
                 rep.message);
    cr_assert_eq(redlock_release(a, r1), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_ex(wl, "rw:moved", 10000, 5000, &w, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(wl, w), REDLOCK_OK);
    redlock_free(a);
    redlock_free(b);
    redlock_free(wl);
}

/* One blocking acquire, run on a thread of its own: the writer's or a
 * reader's, as `shared` says. done is set once it returned. */
typedef struct waiter {
    redlock_t *rl;
    const char *resource;
    int shared;
    int rc;
    redlock_lock_t *lk;
    atomic_int done;
    pthread_t t;
} waiter_t;

static void *waiter_run(void *arg) {
    waiter_t *w = arg;
    w->rc = w->shared ? redlock_acquire_shared(w->rl, w->resource, 20000, 10000, &w->lk, NULL)
                      : redlock_acquire_ex(w->rl, w->resource, 20000, 10000, &w->lk, NULL);
    atomic_store(&w->done, 1);
    return NULL;
}

static void waiter_start(waiter_t *w, redlock_t *rl, const char *resource, int shared) {
    memset(w, 0, sizeof *w);
    w->rl = rl;
    w->resource = resource;
    w->shared = shared;
    cr_assert_eq(pthread_create(&w->t, NULL, waiter_run, w), 0);
}

/* Waits, up to 10 s, until w returned. Returns 1 then. */
static int waiter_await(waiter_t *w) {
    for (int t = 0; t < 1000 && !atomic_load(&w->done); t++) rt_sleep_ms(10);
    return atomic_load(&w->done);
}

/* Writer preference, shown by the order of events rather than by time: a
 * reader holds; a writer starts waiting and leaves its mark; a new reader
 * is refused; another reader starts waiting too; once the first reader
 * leaves, the writer is granted while that reader still waits, and the
 * reader gets in only after the writer's release. */
Test(rwlock, a_waiting_writer_is_not_starved_by_new_readers) {
    redlock_t *a = waiting_rl(), *b = waiting_rl(), *c = waiting_rl();
    redlock_lock_t *r1 = NULL, *r2 = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(a, "rw:pref", 20000, 0, &r1, &rep), REDLOCK_OK, "%s", rep.message);
    waiter_t w, r3;
    waiter_start(&w, b, "rw:pref", 0);
    /* the writer's refused attempt left its mark on a quorum */
    int marked = 0;
    for (int t = 0; t < 1000 && marked < 3; t++, rt_sleep_ms(10))
        marked = tc_count_value(&C, "rw:pref:redlock:writer", NULL);
    cr_assert_geq(marked, 3, "the waiting writer's mark is on %d nodes", marked);
    cr_assert_eq(atomic_load(&w.done), 0, "the writer returned while a reader holds: %s", redlock_strerror(w.rc));
    int rc = redlock_acquire_shared(a, "rw:pref", 20000, 0, &r2, &rep);
    cr_assert_neq(rc, REDLOCK_OK, "a new reader was admitted while a writer waits");
    /* a second new reader waits (it found the lock taken: the stats say so) */
    redlock_stats_t st = {0};
    waiter_start(&r3, c, "rw:pref", 1);
    for (int t = 0; t < 1000 && (redlock_stats(c, &st) != REDLOCK_OK || st.waits == 0); t++) rt_sleep_ms(10);
    cr_assert_geq(st.waits, 1, "the second reader never waited");
    cr_assert_eq(redlock_release(a, r1), REDLOCK_OK);
    cr_assert(waiter_await(&w), "the writer was not granted within 10 s of the reader's release");
    cr_assert_eq(w.rc, REDLOCK_OK, "the writer: %s", redlock_strerror(w.rc));
    cr_assert_eq(atomic_load(&r3.done), 0, "the waiting reader returned (%s) before the writer released",
                 redlock_strerror(r3.rc));
    cr_assert_geq(tc_count_value(&C, "rw:pref", redlock_lock_token(w.lk)), 3, "the writer's key is not on a quorum");
    cr_assert_eq(redlock_release(b, w.lk), REDLOCK_OK);
    cr_assert(waiter_await(&r3), "the waiting reader was not granted within 10 s of the writer's release");
    cr_assert_eq(r3.rc, REDLOCK_OK, "the reader after the writer: %s", redlock_strerror(r3.rc));
    cr_assert_eq(redlock_release(c, r3.lk), REDLOCK_OK);
    pthread_join(w.t, NULL);
    pthread_join(r3.t, NULL);
    redlock_free(c);
    redlock_free(b);
    redlock_free(a);
}

Test(rwlock, a_key_of_another_type_is_a_server_error_naming_it) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_redis_cmd(&C, i, "RPUSH rw:list x"), 0);
    redlock_lock_t *r = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(rl, "rw:list", 10000, 0, &r, &rep), REDLOCK_ERR_SERVER, "%s",
                 redlock_strerror(rep.result));
    cr_assert_null(r);
#ifndef RL_TEST_ASYNC /* (an async report's node detail is the error's name, not the reply's words) */
    /* the round ends once a quorum's errors settle it: look at every node */
    int named = 0;
    for (size_t i = 0; i < rep.n_nodes; i++) named += strstr(rep.nodes[i].detail, "WRONGTYPE rw:list") != NULL;
    cr_assert_geq(named, 3, "%d nodes name the key; node 0: %s", named, rep.nodes[0].detail);
#endif
    for (int i = 0; i < C.n; i++) tc_del(&C, i, "rw:list");
    redlock_free(rl);
}

#ifndef RL_TEST_ASYNC /* re-entry belongs to the blocking API */
Test(rwlock, waiting_to_write_what_this_thread_reads_is_a_deadlock_error) {
    redlock_t *rl = waiting_rl();
    redlock_lock_t *r = NULL, *w = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(rl, "rw:up", 10000, 0, &r, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_ex(rl, "rw:up", 10000, 5000, &w, &rep), REDLOCK_ERR_DEADLOCK);
    cr_assert(strstr(rep.message, "rw:up"), "%s", rep.message);
    cr_assert_eq(redlock_release(rl, r), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_ex(rl, "rw:up", 10000, 0, &w, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_shared(rl, "rw:up", 10000, 5000, &r, &rep), REDLOCK_ERR_DEADLOCK);
    cr_assert_eq(redlock_release(rl, w), REDLOCK_OK);
    redlock_free(rl);
}
#endif

#ifndef RL_TEST_ASYNC /* adoption belongs to the blocking API */
/* The by-token functions are for exclusive locks: a reader's token adopted
 * as a mutex finds the readers' hash on every node, which is a clear
 * INVALID naming the resource (not a quorum lost to errors), and the
 * readers keep their lock. */
Test(rwlock, a_readers_token_adopted_as_a_mutex_is_invalid) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *r = NULL, *w = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(rl, "rw:kind", 10000, 0, &r, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_lock_adopt(rl, "rw:kind", redlock_lock_token(r), 10000, &w, &rep), REDLOCK_ERR_INVALID,
                 "%s: %s", redlock_strerror(rep.result), rep.message);
    cr_assert_null(w);
    cr_assert(strstr(rep.message, "rw:kind") && strstr(rep.message, "not an exclusive lock"), "%s", rep.message);
    cr_assert_null(strstr(rep.message, redlock_lock_token(r)), "the token is shown: %s", rep.message);
    for (int i = 0; i < C.n; i++) { /* (a node that answered the acquire late gets the reader a moment after) */
        long long n = readers_on(i, "rw:kind");
        for (int tries = 0; n != 1 && tries < 100; tries++) rt_sleep_ms(10), n = readers_on(i, "rw:kind");
        cr_assert_eq(n, 1, "node %d lost the reader", i);
    }
    cr_assert_eq(redlock_extend(rl, r, 10000), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, r), REDLOCK_OK);
    redlock_free(rl);
}

/* A mutex whose key became a readers' hash on every node (it expired and
 * readers took the resource) is simply not held any more: its extension
 * and release say NOT_HELD, and leave the readers alone. */
Test(rwlock, a_mutex_whose_key_became_readers_is_not_held) {
    redlock_t *rl = rt_new(&C, 5, NULL);
    redlock_lock_t *w = NULL;
    cr_assert_eq(redlock_acquire(rl, "rw:gone", 10000, &w), REDLOCK_OK);
    /* the SET on the nodes that answered late first, or it could land after the DEL */
    cr_assert_eq(tc_await_count(&C, "rw:gone", redlock_lock_token(w), C.n), C.n);
    for (int i = 0; i < C.n; i++) {
        tc_del(&C, i, "rw:gone");
        cr_assert_eq(tc_redis_cmd(&C, i, "HSET rw:gone someone 99999999999999"), 0);
    }
    redlock_report_t rep;
    cr_assert_eq(redlock_extend_ex(rl, w, 10000, &rep), REDLOCK_ERR_NOT_HELD, "%s: %s", redlock_strerror(rep.result),
                 rep.message);
    cr_assert_eq(redlock_release(rl, w), REDLOCK_ERR_NOT_HELD);
    for (int i = 0; i < C.n; i++) {
        cr_assert_eq(readers_on(i, "rw:gone"), 1, "node %d", i);
        tc_del(&C, i, "rw:gone");
    }
    redlock_free(rl);
}
#endif
