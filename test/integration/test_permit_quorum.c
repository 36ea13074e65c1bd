/* test_permit_quorum.c -- the majority-of-admits counter-example
 * (doc/design.md, "Semaphores and read-write locks") as a regression
 * test. Limit 2 on 5 nodes A..E (0..4);
 * three holders are admitted while nodes {D,E}, then {A,B}, then {C,E}
 * are paused (SIGSTOP). The library's permits (a slot held on a quorum)
 * grant the first two and refuse the third; with every node back a fourth
 * is refused until a holder releases. The naive scheme -- one counter per
 * node (a ZSET of live holders) that admits while it has fewer than
 * `limit` entries, granted when a majority admits -- written here, run on
 * the same schedule, admits all three: the schedule bites.
 *
 * A paused node keeps the requests sent to it in its socket buffer and
 * runs them when resumed; in the counter-example (a pause or partition
 * that the client gave up on) they are lost. The test simulates the loss:
 * right after the resume, once the node has run what was queued, it
 * removes what the holder's requests wrote there (forget_*). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "rltest.h"

#define LIMIT 2
#define TTL_MS 20000
#define HOLDERS 4
#define SLOTS_RES "pq:slots"
#define NAIVE_KEY "pq:naive"

static tc_cluster_t C;
static void setup(void) {
    rt_setup(&C);
}
/* Runs after a failed assertion too: no node stays paused. */
static void resume_all(void) {
    for (int i = 0; i < C.n; i++) tc_node_resume(&C, i);
}
TestSuite(permit_quorum, .init = setup, .fini = resume_all, .timeout = 120);

/* The nodes paused while holder h is admitted: {D,E}, {A,B}, {C,E}. */
static const int AWAY[3][2] = {{3, 4}, {0, 1}, {2, 4}};

/* One way of admitting holders 0..2 under the limit. */
typedef struct scheme {
    int (*admit)(int h);             /* 1 when holder h is granted */
    void (*forget)(int node, int h); /* node never heard holder h */
} scheme_t;

/* Resumes node i and waits until it has run the requests queued for it
 * (they were readable before the PING's connection was accepted). */
static void resume_and_settle(int i) {
    cr_assert_eq(tc_node_resume(&C, i), 0, "node %d did not resume", i);
    rt_sleep_ms(200);
    cr_assert_eq(tc_redis_cmd(&C, i, "PING"), 0, "node %d does not answer", i);
}

/* Admits holders 0..2, each with its pair of nodes paused, and says which
 * were granted. Assertions wait until the pair is resumed. */
static int run_schedule(const scheme_t *s, int granted[3]) {
    int n = 0;
    for (int h = 0; h < 3; h++) {
        int p0 = tc_node_pause(&C, AWAY[h][0]), p1 = tc_node_pause(&C, AWAY[h][1]);
        granted[h] = p0 == 0 && p1 == 0 ? s->admit(h) : 0;
        for (int k = 0; k < 2; k++) resume_and_settle(AWAY[h][k]);
        cr_assert(p0 == 0 && p1 == 0, "could not pause nodes %d and %d", AWAY[h][0], AWAY[h][1]);
        for (int k = 0; k < 2; k++) s->forget(AWAY[h][k], h);
        n += granted[h];
    }
    return n;
}

/* ------------------------------------------------- the library's permits */

static redlock_t *RL[HOLDERS];
static redlock_lock_t *PERMIT[HOLDERS];
static redlock_report_t REP[HOLDERS];
static int RC[HOLDERS];

/* A client of its own for each holder: a paused node costs 150 ms. */
static redlock_t *permit_client(void) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = 150;
    o.node_down_ms = 10000;
    return rt_new(&C, 5, &o);
}

/* One attempt of holder h for a permit; 1 when granted. */
static int admit_permit(int h) {
    RC[h] = redlock_acquire_permit(RL[h], SLOTS_RES, LIMIT, TTL_MS, 0, &PERMIT[h], &REP[h]);
    return RC[h] == REDLOCK_OK;
}

/* Deletes on node the slots that hold holder h's token. */
static void forget_permit(int node, int h) {
    const char *token = PERMIT[h] ? redlock_lock_token(PERMIT[h]) : NULL;
    for (int slot = 0; token && slot < LIMIT; slot++) {
        char key[64];
        snprintf(key, sizeof key, SLOTS_RES ":permit:%d", slot);
        char *v = tc_get(&C, node, key);
        if (v && strcmp(v, token) == 0) cr_assert_eq(tc_del(&C, node, key), 1);
        free(v);
    }
}

/* Nodes on which some slot key of the semaphore is left. */
static int nodes_with_slots(void) {
    int k = 0;
    for (int i = 0; i < C.n; i++)
        for (int slot = 0; slot < LIMIT; slot++) {
            char key[64];
            snprintf(key, sizeof key, SLOTS_RES ":permit:%d", slot);
            if (tc_pttl(&C, i, key) != -2) {
                k++;
                break;
            }
        }
    return k;
}

Test(permit_quorum, permits_refuse_the_third_holder_that_majorities_admit) {
    for (int h = 0; h < HOLDERS; h++) RL[h] = permit_client();
    const scheme_t s = {admit_permit, forget_permit};
    int granted[3];
    int n = run_schedule(&s, granted);
    cr_assert(granted[0], "holder 1 ({D,E} paused): %s (%s)", redlock_strerror(RC[0]), REP[0].message);
    cr_assert(granted[1], "holder 2 ({A,B} paused): %s (%s)", redlock_strerror(RC[1]), REP[1].message);
    cr_assert_neq(REP[0].slot, REP[1].slot, "two holders on one slot");
    cr_assert_not(granted[2], "holder 3 ({C,E} paused) was granted slot %d: %d holders under limit %d", REP[2].slot, n,
                  LIMIT);
    /* every node back: the fourth is refused until a holder releases */
    cr_assert_eq(admit_permit(3), 0, "holder 4 granted slot %d with two permits held", REP[3].slot);
    cr_assert_eq(RC[3], REDLOCK_ERR_TAKEN, "%s (%s)", redlock_strerror(RC[3]), REP[3].message);
    cr_assert_eq(redlock_release(RL[0], PERMIT[0]), REDLOCK_OK);
    cr_assert(admit_permit(3), "holder 4 after a release: %s (%s)", redlock_strerror(RC[3]), REP[3].message);
    cr_assert_eq(REP[3].slot, REP[0].slot, "the released slot");
    cr_assert_eq(redlock_release(RL[1], PERMIT[1]), REDLOCK_OK);
    cr_assert_eq(redlock_release(RL[3], PERMIT[3]), REDLOCK_OK);
    cr_assert_eq(nodes_with_slots(), 0, "a slot key is left on some node");
    for (int h = 0; h < HOLDERS; h++) redlock_free(RL[h]);
}

/* ---------------------------------------------------- the naive scheme */

/* One node's admission: drops expired holders, admits ARGV[1] for ARGV[3]
 * ms when fewer than ARGV[2] are left. */
static const char NAIVE_ADMIT[] = "local t = redis.call('TIME') "
                                  "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
                                  "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) "
                                  "if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then "
                                  "  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1]) return 1 end "
                                  "return 0";

/* Holder h's name in the counters. */
static void naive_name(int h, char *buf, size_t n) {
    snprintf(buf, n, "naive-holder-%d", h);
}

/* Asks node i to admit holder h, waiting 150 ms for the answer. */
static int naive_admit_on(int i, int h) {
    struct timeval tv = {0, 150000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", C.port[i], tv);
    int yes = 0;
    if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK) {
        char name[32], limit[8], ttl[16];
        naive_name(h, name, sizeof name);
        snprintf(limit, sizeof limit, "%d", LIMIT);
        snprintf(ttl, sizeof ttl, "%d", TTL_MS);
        redisReply *r = redisCommand(c, "EVAL %s 1 %s %s %s %s", NAIVE_ADMIT, NAIVE_KEY, name, limit, ttl);
        yes = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return yes;
}

/* Removes holder h from node i's counter. */
static void forget_naive(int node, int h) {
    char name[32];
    naive_name(h, name, sizeof name);
    tc_redis_cmd(&C, node, "ZREM %s %s", NAIVE_KEY, name);
}

/* Holder h asks every node; granted by a majority of admits, else it
 * withdraws from the nodes that admitted it. */
static int admit_naive(int h) {
    int yes[TC_MAX_NODES], n = 0;
    for (int i = 0; i < C.n; i++) n += yes[i] = naive_admit_on(i, h);
    if (n > C.n / 2) return 1;
    for (int i = 0; i < C.n; i++)
        if (yes[i]) forget_naive(i, h);
    return 0;
}

/* Entries in node i's counter (-1 if it cannot be read). */
static long long naive_count(int i) {
    redisContext *c = tc_connect(&C, i);
    redisReply *r = c ? redisCommand(c, "ZCARD %s", NAIVE_KEY) : NULL;
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) freeReplyObject(r);
    if (c) redisFree(c);
    return n;
}

Test(permit_quorum, the_naive_majority_of_admits_lets_three_hold_under_limit_two) {
    const scheme_t s = {admit_naive, forget_naive};
    int granted[3];
    int n = run_schedule(&s, granted);
    cr_assert_eq(n, 3, "the naive scheme granted %d of 3 (%d %d %d): the schedule no longer bites", n, granted[0],
                 granted[1], granted[2]);
    /* and no node broke the limit: each admitted at most two */
    for (int i = 0; i < C.n; i++) {
        long long k = naive_count(i);
        cr_assert(k >= 0 && k <= LIMIT, "node %d counts %lld holders", i, k);
    }
    for (int i = 0; i < C.n; i++) tc_del(&C, i, NAIVE_KEY);
}
