/* test_cluster.c -- each Redlock node a whole Redis Cluster (doc/design.md, "Cluster routing"),
 * against the `clusters3` fixture: 3 local Redis Clusters of 3 primaries
 * and a replica each (deploy/cluster.sh start --cluster-shards 3
 * --replicas 1). Keys land on the shard of their slot under their cluster
 * names; many threads on many resources never overlap; permits, readers,
 * writers and fencing keep their keys in one slot; a waiter is woken by the
 * sharded release announcement; auto-extension; a slot resharded while a
 * lock is held (ASK, then MOVED); a shard primary failed over to a replica
 * that lacks the lock, with no second holder. Also built with
 * -DRL_TEST_ASYNC (the async API) where the calls are single-resource. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rltest.h"

static tc_clusters_t CS;
static void setup(void) {
    cr_assert_eq(tc_clusters_load(&CS), 0, "no Redis Clusters (REDLOCK_CLUSTER_DIR)");
    cr_assert_eq(tc_clusters_heal(&CS), 0, "the clusters could not be healed");
}
TestSuite(cluster, .init = setup, .timeout = 180);

/* The tests' options with a round timeout long enough that a loaded
 * machine (CI runs test groups side by side) does not make a shard
 * suspect: these tests are about where keys go, not about timeouts. */
static void opts(redlock_options_t *o) {
    rt_options(o);
    o->op_timeout_ms = 500;
}

/* A handle over the three clusters with options o (NULL: opts'). */
static redlock_t *handle(const redlock_options_t *o) {
    redlock_options_t d;
    if (!o) {
        opts(&d);
        o = &d;
    }
    return rt_new(&CS.base, (size_t)CS.base.n, o);
}

/* The name key takes on a cluster: "{key}" unless it has a hash tag. */
static const char *cname(const char *key, char *buf, size_t n) {
    const char *open = strchr(key, '{'), *close = open ? strchr(open + 1, '}') : NULL;
    if (close && close > open + 1)
        snprintf(buf, n, "%s", key);
    else
        snprintf(buf, n, "{%s}", key);
    return buf;
}

/* Clusters on which resource's cluster key holds value, once rl's
 * requests went out and the clusters had time to apply them: up to 2 s for
 * the count to reach want. A call returns at its quorum; a shard whose
 * connection was still being made then gets its request once that
 * connection is up, from the handle's idle driver, with no further call
 * (rl is unused: that is the point). */
static int clusters_holding(redlock_t *rl, const char *resource, const char *value, int want) {
    (void)rl;
    char k[256];
    cname(resource, k, sizeof k);
    int n = -1;
    for (int t = 0; t < 400; t++, rt_sleep_ms(5))
        if ((n = tc_rc_count_value(&CS, k, value)) == want) break;
    return n;
}

/* 1 once key's TYPE on cluster c is type, 0 if it is not within 2 s (a
 * call returns at its quorum: the last cluster may not be written yet). */
static int await_type(int c, const char *key, const char *type) {
    for (int t = 0; t < 400; t++, rt_sleep_ms(5)) {
        redisReply *r = tc_rc_command(&CS, c, key, NULL, "TYPE %s", key);
        int ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, type);
        if (r) freeReplyObject(r);
        if (ok) return 1;
    }
    return 0;
}

/* PTTL of key (its cluster name) on cluster c once rl's requests went out
 * and it is gone, or what it still is after 2 s (as in clusters_holding). */
static long long pttl_gone(redlock_t *rl, int c, const char *key) {
    (void)rl;
    long long p = 0;
    for (int t = 0; t < 400; t++, rt_sleep_ms(5))
        if ((p = tc_rc_pttl(&CS, c, key)) == -2) break;
    return p;
}

Test(cluster, keys_land_on_the_shard_of_their_slot) {
    redlock_t *rl = handle(NULL);
    int shards_used[TC_MAX_MEMBERS] = {0};
    for (int i = 0; i < 60; i++) {
        char res[32], k[64];
        snprintf(res, sizeof res, "route:%d", i);
        redlock_lock_t *l = NULL;
        redlock_report_t rep;
        cr_assert_eq(redlock_acquire_ex(rl, res, 10000, 0, &l, &rep), REDLOCK_OK, "%s: %s", res, rep.message);
        cr_assert_eq(clusters_holding(rl, res, redlock_lock_token(l), 3), 3, "%s not on every cluster: %s | %s | %s",
                     res, rep.nodes[0].detail, rep.nodes[1].detail, rep.nodes[2].detail);
        int owner = tc_rc_slot_owner(&CS, 0, tc_slot(cname(res, k, sizeof k)));
        cr_assert_geq(owner, 0);
        shards_used[owner] = 1;
        /* the plain name is nowhere: it is stored under its tag */
        char *plain = tc_rc_get(&CS, 0, res);
        cr_assert_null(plain, "'%s' stored under its plain name", res);
        cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
        cr_assert_eq(pttl_gone(rl, 0, k), -2, "%s left after the release", k);
    }
    int used = 0;
    for (int m = 0; m < TC_MAX_MEMBERS; m++) used += shards_used[m];
    cr_assert_eq(used, 3, "60 resources used %d of the 3 shards", used);
    redlock_free(rl);
}

Test(cluster, a_tagged_resource_is_kept_as_it_is) {
    redlock_t *rl = handle(NULL);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    /* (a fresh handle's first call waits for the slot maps: on a loaded
     * machine one attempt may not do, and this test is about key names) */
    cr_assert_eq(redlock_acquire_ex(rl, "{orders}:7", 10000, 3000, &l, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(clusters_holding(rl, "{orders}:7", redlock_lock_token(l), 3), 3,
                 "the tagged key is stored under its own name");
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    redlock_free(rl);
}

#ifndef RL_TEST_ASYNC
Test(cluster, several_resources_need_one_slot) {
    redlock_t *rl = handle(NULL);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    const char *apart[] = {"a", "b"};
    cr_assert_eq(redlock_acquire_multi(rl, apart, 2, 10000, 0, &l, &rep), REDLOCK_ERR_INVALID);
    cr_assert(strstr(rep.message, "'a' (slot 15495)") && strstr(rep.message, "'b' (slot 3300)") &&
                  strstr(rep.message, "hash tag"),
              "message: %s", rep.message);
    const char *together[] = {"{cart}:1", "{cart}:2", "{cart}:3"};
    cr_assert_eq(redlock_acquire_multi(rl, together, 3, 10000, 0, &l, &rep), REDLOCK_OK, "%s", rep.message);
    for (int i = 0; i < 3; i++) cr_assert_eq(clusters_holding(rl, together[i], redlock_lock_token(l), 3), 3);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(pttl_gone(rl, 2, together[i]), -2);
    redlock_free(rl);
}

/* ---- many threads, many resources ---------------------------------------- */

#define MX_RES 24
#define MX_THREADS 8
#define MX_ROUNDS 60

typedef struct mx {
    int inside[MX_RES]; /* holders in each critical section (under mu) */
    long count[MX_RES]; /* a lost update shows as a short count */
    int overlaps, grants, errors;
    pthread_mutex_t mu;
} mx_t;

typedef struct mx_arg {
    mx_t *m;
    redlock_t *rl;
    unsigned seed;
} mx_arg_t;

static void *mx_thread(void *arg) {
    mx_arg_t *a = arg;
    mx_t *m = a->m;
    unsigned s = a->seed;
    for (int it = 0; it < MX_ROUNDS; it++) {
        s = s * 1103515245u + 12345u;
        int r = (int)((s >> 8) % MX_RES);
        char res[32];
        snprintf(res, sizeof res, "mx:%d", r * 977); /* spread over the slots */
        redlock_lock_t *l = NULL;
        if (redlock_acquire_ex(a->rl, res, 5000, 5000, &l, NULL) != REDLOCK_OK) {
            pthread_mutex_lock(&m->mu);
            m->errors++;
            pthread_mutex_unlock(&m->mu);
            continue;
        }
        pthread_mutex_lock(&m->mu);
        if (m->inside[r]++) m->overlaps++;
        long c = m->count[r];
        pthread_mutex_unlock(&m->mu);
        rt_sleep_ms(1);
        pthread_mutex_lock(&m->mu);
        m->count[r] = c + 1;
        m->inside[r]--;
        m->grants++;
        pthread_mutex_unlock(&m->mu);
        redlock_release(a->rl, l);
    }
    return NULL;
}

Test(cluster, many_threads_on_many_resources_never_overlap) {
    redlock_options_t o;
    opts(&o);
    o.retry_count = 1000;
    o.retry_delay_ms = 20;
    o.retry_jitter_ms = 10;
    static mx_t m;
    memset(&m, 0, sizeof m);
    pthread_mutex_init(&m.mu, NULL);
    redlock_t *h[2] = {handle(&o), handle(&o)}; /* two clients, four threads each */
    pthread_t t[MX_THREADS];
    mx_arg_t args[MX_THREADS];
    for (int i = 0; i < MX_THREADS; i++) {
        args[i] = (mx_arg_t){&m, h[i % 2], 7919u * (unsigned)(i + 1)};
        cr_assert_eq(pthread_create(&t[i], NULL, mx_thread, &args[i]), 0);
    }
    for (int i = 0; i < MX_THREADS; i++) pthread_join(t[i], NULL);
    long total = 0;
    for (int r = 0; r < MX_RES; r++) total += m.count[r];
    cr_assert_eq(m.overlaps, 0, "%d overlaps", m.overlaps);
    cr_assert_eq(total, m.grants, "lost updates: %ld counted, %d grants", total, m.grants);
    cr_assert_gt(m.grants, MX_THREADS * MX_ROUNDS * 9 / 10, "only %d of %d grants (%d errors)", m.grants,
                 MX_THREADS * MX_ROUNDS, m.errors);
    redlock_free(h[0]);
    redlock_free(h[1]);
    pthread_mutex_destroy(&m.mu);
}
#endif

/* ---- the lock kinds ------------------------------------------------------ */

Test(cluster, permits_keep_their_slots_under_the_tag) {
    redlock_t *rl = handle(NULL);
    redlock_lock_t *p[3] = {NULL, NULL, NULL};
    redlock_report_t rep;
    for (int i = 0; i < 2; i++)
        cr_assert_eq(redlock_acquire_permit(rl, "sem", 2, 10000, 0, &p[i], &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_permit(rl, "sem", 2, 10000, 0, &p[2], &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    for (int i = 0; i < 2; i++) {
        char k[32];
        snprintf(k, sizeof k, "{sem}:permit:%d", i);
        cr_assert_eq(clusters_holding(rl, k, redlock_lock_token(p[i]), 3), 3, "slot %d not under %s", i, k);
        cr_assert_eq(tc_slot(k), tc_slot("{sem}"));
    }
    cr_assert_eq(redlock_extend(rl, p[0], 20000), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, p[1]), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_permit(rl, "sem", 2, 10000, 0, &p[2], &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(rep.slot, 1, "the freed slot");
    cr_assert_eq(redlock_release(rl, p[0]), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, p[2]), REDLOCK_OK);
    cr_assert_eq(pttl_gone(rl, 0, "{sem}:permit:0"), -2);
    redlock_free(rl);
}

Test(cluster, readers_and_writers) {
    redlock_t *rl = handle(NULL);
    redlock_lock_t *r1 = NULL, *r2 = NULL, *w = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_shared(rl, "doc", 10000, 0, &r1, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_shared(rl, "doc", 10000, 0, &r2, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_ex(rl, "doc", 10000, 0, &w, &rep), REDLOCK_ERR_TAKEN, "a writer among readers");
    cr_assert(await_type(0, "{doc}", "hash"), "readers under {doc}");
    cr_assert_eq(redlock_release(rl, r1), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, r2), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_ex(rl, "doc", 10000, 0, &w, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_shared(rl, "doc", 10000, 0, &r1, &rep), REDLOCK_ERR_TAKEN, "a reader beside a writer");
    cr_assert_eq(redlock_release(rl, w), REDLOCK_OK);
    redlock_free(rl);
}

Test(cluster, fencing_tokens_grow) {
    redlock_options_t o;
    opts(&o);
    o.fencing = 1;
    redlock_t *rl = handle(&o);
    uint64_t last = 0;
    for (int i = 0; i < 5; i++) {
        redlock_lock_t *l = NULL;
        redlock_report_t rep;
        cr_assert_eq(redlock_acquire_ex(rl, "fenced", 10000, 0, &l, &rep), REDLOCK_OK, "%s", rep.message);
        uint64_t f = redlock_lock_fence(l);
        cr_assert_gt(f, last, "token %llu after %llu", (unsigned long long)f, (unsigned long long)last);
        last = f;
        cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    }
    int at = 0; /* the last write-back raised the counter under its cluster name to the token on a quorum */
    for (int k = 0; k < 3; k++) {
        char *c = tc_rc_get(&CS, k, "{fenced}:redlock:fence");
        at += c && strtoull(c, NULL, 10) == last;
        free(c);
    }
    cr_assert_geq(at, 2, "the counter under {fenced}:redlock:fence is the token on %d clusters", at);
    redlock_free(rl);
}

/* ---- waiting and auto-extension ------------------------------------------ */

typedef struct waiter {
    redlock_t *rl;
    int rc;
    uint64_t done_us;
} waiter_t;

static void *wait_thread(void *arg) {
    waiter_t *w = arg;
    redlock_lock_t *l = NULL;
    w->rc = redlock_acquire_ex(w->rl, "queue", 5000, 20000, &l, NULL);
    w->done_us = rt_now_us();
    if (w->rc == REDLOCK_OK) redlock_release(w->rl, l);
    return NULL;
}

Test(cluster, a_waiter_is_woken_by_the_sharded_announcement) {
    redlock_options_t o;
    opts(&o);
    o.retry_count = 100;
    o.retry_delay_ms = 5000; /* a poll would come seconds late */
    o.retry_jitter_ms = 0;
    redlock_t *h = handle(NULL), *wrl = handle(&o);
    redlock_lock_t *l = NULL;
    cr_assert_eq(redlock_acquire(h, "queue", 30000, &l), REDLOCK_OK);
    waiter_t w = {wrl, 1, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &w);
    rt_sleep_ms(500); /* it tried, subscribed, and sleeps */
    uint64_t released = rt_now_us();
    cr_assert_eq(redlock_release(h, l), REDLOCK_OK);
    pthread_join(t, NULL);
    cr_assert_eq(w.rc, REDLOCK_OK);
    uint64_t ms = (w.done_us - released) / 1000;
    cr_assert_lt(ms, 2500, "granted %llu ms after the release: not woken", (unsigned long long)ms);
    redlock_free(h);
    redlock_free(wrl);
}

Test(cluster, auto_extension_keeps_the_lock) {
    redlock_t *rl = handle(NULL);
    redlock_lock_t *l = NULL;
    cr_assert_eq(redlock_acquire(rl, "kept", 1500, &l), REDLOCK_OK);
    cr_assert_eq(redlock_autoextend(rl, l, NULL, NULL, NULL), REDLOCK_OK);
    rt_sleep_ms(3500);
    long long pttl = tc_rc_pttl(&CS, 1, "{kept}");
    cr_assert(pttl > 0 && pttl <= 1500, "PTTL %lld after 3.5 s of a 1.5 s lock", pttl);
    cr_assert_eq(clusters_holding(rl, "kept", redlock_lock_token(l), 3), 3);
    cr_assert_eq(redlock_autoextend_stop(rl, l), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    redlock_free(rl);
}

/* ---- resharding and failover ------------------------------------------- */

/* A primary member of cluster c other than m. */
static int other_primary(int c, int m) {
    tc_clusters_refresh(&CS, c);
    for (int j = 0; j < CS.c[c].n; j++)
        if (j != m && CS.c[c].m[j].primary == 1) return j;
    return -1;
}

Test(cluster, a_slot_resharded_while_a_lock_is_held) {
    redlock_t *rl = handle(NULL);
    redlock_lock_t *held = NULL, *other = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire(rl, "{mig}:held", 20000, &held), REDLOCK_OK);
    /* every cluster holds it on the slot's owner before the move begins */
    cr_assert_eq(clusters_holding(rl, "{mig}:held", redlock_lock_token(held), 3), 3);
    int slot = tc_slot("{mig}");
    int to[3], from[3];
    for (int c = 0; c < 3; c++) { /* the slot starts moving on every cluster: its keys stay behind */
        int owner = tc_rc_slot_owner(&CS, c, slot);
        to[c] = other_primary(c, owner);
        cr_assert_geq(to[c], 0);
        from[c] = tc_rc_slot_begin_move(&CS, c, slot, to[c]);
        cr_assert_eq(from[c], owner, "cluster %d: the move did not begin", c);
    }
    /* a key of the slot not on its owner yet is asked for on the importing shard (ASK) */
    cr_assert_eq(redlock_acquire_ex(rl, "{mig}:new", 20000, 0, &other, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_extend(rl, held, 20000), REDLOCK_OK, "the held lock extends on its old shard");
    /* its keys move; then the slot is handed over (MOVED from then on) */
    for (int c = 0; c < 3; c++) {
        int moved = tc_rc_slot_move_keys(&CS, c, slot, from[c], to[c], 0);
        cr_assert_geq(moved, 1, "cluster %d: %d keys of slot %d moved from member %d to %d", c, moved, slot, from[c],
                      to[c]);
        cr_assert_eq(tc_rc_slot_end_move(&CS, c, slot, from[c], to[c]), 0);
    }
    cr_assert_eq(redlock_extend(rl, held, 20000), REDLOCK_OK, "the held lock extends on its new shard");
    cr_assert_eq(clusters_holding(rl, "{mig}:held", redlock_lock_token(held), 3), 3);
    redlock_t *other_client = handle(NULL);
    redlock_lock_t *third = NULL;
    cr_assert_eq(redlock_acquire_ex(other_client, "{mig}:held", 20000, 0, &third, &rep), REDLOCK_ERR_TAKEN,
                 "a second holder after the move: %s", rep.message);
    redlock_free(other_client);
    cr_assert_eq(redlock_release(rl, held), REDLOCK_OK);
    cr_assert_eq(redlock_release(rl, other), REDLOCK_OK);
    for (int c = 0; c < 3; c++) {
        cr_assert_eq(pttl_gone(rl, c, "{mig}:held"), -2, "cluster %d keeps the released key", c);
        cr_assert_eq(tc_rc_slot_owner(&CS, c, slot), to[c]);
    }
    redlock_free(rl);
}

/* Waits (up to 30 s) until every member of every cluster has been up for
 * secs seconds: a member restarted more recently is quarantined, which is
 * not what the failover test is about. */
static void wait_uptime(long secs) {
    for (int tries = 0; tries < 300; tries++) {
        long least = secs;
        for (int c = 0; c < CS.base.n; c++)
            for (int m = 0; m < CS.c[c].n; m++) {
                redisReply *r = tc_member_command(&CS, c, m, "INFO server");
                const char *u = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "uptime_in_seconds:") : NULL;
                long up = u ? atol(u + 18) : 0;
                if (up < least) least = up;
                freeReplyObject(r);
            }
        if (least >= secs) return;
        rt_sleep_ms(100);
    }
    cr_assert_fail("the cluster members were restarted less than %ld s ago", secs);
}

/* The member of cluster c that is a replica now (after a refresh) and was
 * created as primary's replica, or -1. */
static int current_replica_of(int c, int primary) {
    tc_clusters_refresh(&CS, c);
    for (int j = 0; j < CS.c[c].n; j++)
        if (CS.c[c].m[j].primary == 0 && CS.c[c].m[j].created_of == primary) return j;
    return -1;
}

/* The failover both tests below begin with: b learns the slot maps (with
 * their replicas), a takes resource (its cluster key `key`), then on
 * clusters 0 and 1 the shard primary holding it dies and its replica takes
 * over without the key (replication is asynchronous: the test deletes it
 * on the promoted replica, the write it may not have received). Fills
 * rep_m with the promoted members; returns a's lock (of ttl ms). */
static redlock_lock_t *fail_over_two(redlock_t *a, redlock_t *b, const char *resource, const char *key, uint32_t ttl,
                                     int rep_m[2]) {
    int slot = tc_slot(key), prim[2];
    for (int c = 0; c < 2; c++) {
        prim[c] = tc_rc_slot_owner(&CS, c, slot);
        rep_m[c] = current_replica_of(c, prim[c]);
        cr_assert_geq(rep_m[c], 0, "cluster %d: no replica of member %d", c, prim[c]);
    }
    redlock_lock_t *probe = NULL, *held = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(b, resource, 5000, 0, &probe, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(b, probe), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_ex(a, resource, ttl, 0, &held, &rep), REDLOCK_OK, "%s", rep.message);
    for (int c = 0; c < 2; c++) {
        cr_assert_eq(tc_member_kill(&CS, c, prim[c]), 0);
        cr_assert_eq(tc_member_failover(&CS, c, rep_m[c], NULL), 0, "cluster %d: no takeover", c);
        redisReply *r = tc_member_command(&CS, c, rep_m[c], "DEL %s", key);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "cluster %d's new primary refused DEL", c);
        freeReplyObject(r);
    }
    return held;
}

/* Without the quarantine a second client would find the key missing on a
 * quorum after fail_over_two; it must not get the lock. */
Test(cluster, a_failover_to_a_replica_that_lost_the_lock_gives_no_second_holder) {
    redlock_options_t o;
    opts(&o);
    o.max_ttl_ms = 20000; /* the quarantines' length: also a restarted member's (uptime below it) */
    o.retry_count = 3;
    o.retry_delay_ms = 300;
    wait_uptime(o.max_ttl_ms / 1000 + 2);
    redlock_t *a = handle(&o), *b = handle(&o);
    int rep_m[2];
    redlock_lock_t *held = fail_over_two(a, b, "fo", "{fo}", 20000, rep_m), *second = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(b, "fo", 5000, 1500, &second, &rep);
    /* (b's refusal is the quarantine's, as the report says below, whether
     * or not a slow failover let a's lock run out meanwhile) */
    cr_assert_neq(rc, REDLOCK_OK, "a second holder after the failover");
    int promoted = 0;
    for (size_t i = 0; i < rep.n_nodes; i++) promoted += strstr(rep.nodes[i].detail, "promoted") != NULL;
    cr_assert_geq(promoted, 1, "no vote says the shard's primary was promoted: %s / %s / %s", rep.nodes[0].detail,
                  rep.nodes[1].detail, rep.nodes[2].detail);
    redlock_lock_free(held);
    redlock_free(a);
    redlock_free(b);
}

/* Moves slot of cluster c from member `from` to member `to`, keys and all. */
static void move_slot(int c, int slot, int from, int to) {
    cr_assert_geq(to, 0);
    cr_assert_eq(tc_rc_slot_begin_move(&CS, c, slot, to), from, "cluster %d: the move of slot %d did not begin", c,
                 slot);
    cr_assert_geq(tc_rc_slot_move_keys(&CS, c, slot, from, to, 0), 0, "cluster %d: keys of slot %d", c, slot);
    cr_assert_eq(tc_rc_slot_end_move(&CS, c, slot, from, to), 0);
}

/* After fail_over_two the slot moves on from each promoted replica (which
 * lost the lock) to another primary, empty too. A handle that saw the
 * failover must keep the new owner out of acquires as it kept the
 * promoted replica: the keys the replica lacked are lacking there too. */
Test(cluster, a_slot_moved_off_a_quarantined_shard_takes_its_quarantine_along) {
    redlock_options_t o;
    opts(&o);
    o.max_ttl_ms = 15000;
    wait_uptime(o.max_ttl_ms / 1000 + 2);
    redlock_t *a = handle(&o), *b = handle(&o);
    int rep_m[2], slot = tc_slot("{sq}");
    redlock_lock_t *held = fail_over_two(a, b, "sq", "{sq}", 15000, rep_m), *second = NULL;
    redlock_report_t rep;
    /* b sees both failovers (its votes there are quarantined) ... */
    int seen = 0;
    for (int t = 0; t < 50 && seen < 2; t++, rt_sleep_ms(100)) {
        cr_assert_neq(redlock_acquire_ex(b, "sq", 5000, 0, &second, &rep), REDLOCK_OK, "a second holder");
        seen = (strstr(rep.nodes[0].detail, "promoted") != NULL) + (strstr(rep.nodes[1].detail, "promoted") != NULL);
    }
    cr_assert_eq(seen, 2, "b did not see both failovers: %s / %s", rep.nodes[0].detail, rep.nodes[1].detail);
    /* ... and then the slot moves on to a shard that never had the key */
    int sto[2], ofrom[2], oto[2];
    for (int c = 0; c < 2; c++) move_slot(c, slot, rep_m[c], sto[c] = other_primary(c, rep_m[c]));
    /* b's requests for it go nowhere while the promoted replica is
     * quarantined (a quarantined shard is skipped), so b learns the move
     * from the next map: another resource's slot moves, and its MOVED has
     * b load the map again */
    char other[16];
    int oslot = -1;
    for (int k = 0; oslot < 0; k++) {
        snprintf(other, sizeof other, "{sr%d}", k);
        int s0 = tc_slot(other), o0 = tc_rc_slot_owner(&CS, 0, s0), o1 = tc_rc_slot_owner(&CS, 1, s0);
        if (o0 != rep_m[0] && o1 != rep_m[1] && s0 != slot) oslot = s0;
    }
    for (int c = 0; c < 2; c++) { /* (to the third primary: the promoted replica keeps its slots) */
        int from = ofrom[c] = tc_rc_slot_owner(&CS, c, oslot), to = -1;
        tc_clusters_refresh(&CS, c);
        for (int j = 0; j < CS.c[c].n; j++)
            if (j != from && j != rep_m[c] && CS.c[c].m[j].primary == 1) to = j;
        move_slot(c, oslot, from, oto[c] = to);
    }
    redlock_lock_t *olock = NULL;
    if (redlock_acquire_ex(b, other, 5000, 0, &olock, &rep) == REDLOCK_OK) redlock_release(b, olock);
    int inherited = 0;
    for (int t = 0; t < 50 && inherited < 2; t++, rt_sleep_ms(100)) {
        int rc = redlock_acquire_ex(b, "sq", 5000, 0, &second, &rep);
        cr_assert_neq(rc, REDLOCK_OK, "a second holder after the slot moved off the promoted replicas");
        inherited = (strstr(rep.nodes[0].detail, "took slots over") != NULL) +
                    (strstr(rep.nodes[1].detail, "took slots over") != NULL);
    }
    cr_assert_eq(inherited, 2, "the new owners' votes: %s / %s / %s", rep.nodes[0].detail, rep.nodes[1].detail,
                 rep.nodes[2].detail);
    for (int c = 0; c < 2; c++) { /* the slots go back: the clusters heal from a plain failover */
        move_slot(c, oslot, oto[c], ofrom[c]);
        move_slot(c, slot, sto[c], rep_m[c]);
    }
    redlock_lock_free(held);
    redlock_free(a);
    redlock_free(b);
}

/* ---- plain and cluster nodes in one handle ------------------------------ */

static char plain_dir[64];

/* Runs cluster.sh with args (a plain node of this test's own). */
static int plain_sh(const char *args) {
    const char *sh = getenv("REDLOCK_CLUSTER_SH");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "bash '%s' %s -d '%s' >/dev/null", sh ? sh : "deploy/cluster.sh", args, plain_dir);
    return system(cmd);
}

static void stop_plain(void) {
    if (plain_dir[0]) plain_sh("stop");
    plain_dir[0] = '\0';
}

Test(cluster, plain_and_cluster_nodes_mixed, .fini = stop_plain) {
    snprintf(plain_dir, sizeof plain_dir, "/tmp/redlock-mixed.%d", (int)getpid());
    cr_assert_eq(plain_sh("start -n 1"), 0, "no plain node");
    char path[128], uri[256] = "";
    snprintf(path, sizeof path, "%s/nodes", plain_dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(uri, sizeof uri, f));
    fclose(f);
    uri[strcspn(uri, "\n")] = '\0';
    redlock_options_t o;
    opts(&o);
    const char *nodes[3] = {CS.base.uri[0], uri, CS.base.uri[1]};
    o.nodes = nodes;
    o.n_nodes = 3;
    redlock_t *rl = NULL;
    char err[256];
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    redlock_lock_t *l = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "mixed", 10000, 0, &l, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_geq(rep.yes, 2, "%s", rep.message);
    /* the round is decided at 2 of 3: a cluster still loading its slot map may not have
     * answered (nor been written) yet; each cluster that said yes holds the cluster name */
    int said_yes = (rep.nodes[0].vote == REDLOCK_VOTE_YES) + (rep.nodes[2].vote == REDLOCK_VOTE_YES);
    cr_assert_geq(said_yes, 1, "%s", rep.message);
    cr_assert_geq(clusters_holding(rl, "mixed", redlock_lock_token(l), 2), said_yes, "the clusters hold {mixed}");
    redisContext *ctx = redisConnect("127.0.0.1", atoi(strrchr(uri, ':') + 1));
    cr_assert(ctx && !ctx->err);
    redisReply *r = NULL;
    int held = 0; /* (decided at 2 of 3: the plain node may be written after the clusters) */
    for (int t = 0; t < 400 && !held; t++, rt_sleep_ms(5)) {
        r = redisCommand(ctx, "GET mixed");
        held = r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, redlock_lock_token(l));
        if (r) freeReplyObject(r);
    }
    cr_assert(held, "the plain node holds the plain name");
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    long long left = 1;
    for (int t = 0; t < 200 && left; t++, rt_sleep_ms(5)) {
        r = redisCommand(ctx, "EXISTS mixed");
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        left = r->integer;
        freeReplyObject(r);
    }
    cr_assert_eq(left, 0, "the plain node keeps the released key");
    redisFree(ctx);
    redlock_free(rl);
}

Test(cluster, one_cluster_node_is_a_single_instance_lock) {
    redlock_options_t o;
    opts(&o);
    redlock_t *rl = rt_new(&CS.base, 1, &o), *other = rt_new(&CS.base, 1, &o);
    redlock_lock_t *l = NULL, *l2 = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "solo", 10000, 0, &l, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(rep.n_nodes, 1);
    cr_assert_eq(rep.quorum, 1);
    char *v = tc_rc_get(&CS, 0, "{solo}");
    cr_assert(v && !strcmp(v, redlock_lock_token(l)), "the key is on the one cluster");
    free(v);
    cr_assert_eq(redlock_acquire_ex(other, "solo", 10000, 0, &l2, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, l), REDLOCK_OK);
    cr_assert_eq(tc_rc_pttl(&CS, 0, "{solo}"), -2);
    redlock_free(rl);
    redlock_free(other);
}
