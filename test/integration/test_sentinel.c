/* test_sentinel.c -- Sentinel groups as Redlock nodes, against real
 * processes: three groups of a master and one replica, watched by three
 * sentinels (deploy/cluster.sh start -n 3 --sentinels 3 --replicas 1, the
 * CTest fixture sentinel3). One group is one vote (quorum 2 of 3).
 *
 * - The handle finds each group's master through its sentinels, and
 *   follows a failover.
 * - min_replicas = 1: a vote counts once the group's replica has the
 *   write, so with two groups' replicas paused nothing is granted, and a
 *   lock outlives its masters' deaths: the promoted replicas refuse a new
 *   handle; old and new handles lock again once replicas are back.
 * - A master promoted less than max_ttl_ms ago gets no vote from a fresh
 *   handle (the sentinels tell it), unless its votes wait for every replica.
 * Built twice: blocking, and through the async API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rltest.h"

#define GROUPS 3

static struct {
    char dir[512], sh[512];
    char uri[GROUPS][512];
    int port[GROUPS][2];  /* each group's members at creation: [0] master, [1] replica */
    int sentinel_port[8];
    int nsentinels;
} S;

/* Reads the fixture's layout (nodes, members, sentinels). */
static void load(void) {
    const char *dir = getenv("REDLOCK_CLUSTER_DIR"), *sh = getenv("REDLOCK_CLUSTER_SH");
    cr_assert(dir && sh, "REDLOCK_CLUSTER_DIR and REDLOCK_CLUSTER_SH must be set (the sentinel3 fixture)");
    snprintf(S.dir, sizeof S.dir, "%s", dir);
    snprintf(S.sh, sizeof S.sh, "%s", sh);
    char path[600], line[600];
    snprintf(path, sizeof path, "%s/nodes", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    for (int g = 0; g < GROUPS; g++) {
        cr_assert_not_null(fgets(line, sizeof line, f), "%s: fewer than %d groups", path, GROUPS);
        line[strcspn(line, "\n")] = '\0';
        snprintf(S.uri[g], sizeof S.uri[g], "%.500s", line);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/members", dir);
    cr_assert_not_null(f = fopen(path, "r"), "no %s", path);
    int g, m, port;
    char role[32];
    while (fscanf(f, "%d %d %d %31s", &g, &m, &port, role) == 4)
        if (g >= 0 && g < GROUPS && m >= 0 && m < 2) S.port[g][m] = port;
    fclose(f);
    snprintf(path, sizeof path, "%s/sentinels", dir);
    cr_assert_not_null(f = fopen(path, "r"), "no %s", path);
    int k;
    S.nsentinels = 0;
    while (S.nsentinels < 8 && fscanf(f, "%d %d", &k, &port) == 2) S.sentinel_port[S.nsentinels++] = port;
    fclose(f);
}

/* Runs `cluster.sh VERB -d DIR ARG`; returns its exit status. */
static int sh(const char *verb, const char *arg) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "%s %s -d %s %s >/dev/null", S.sh, verb, S.dir, arg);
    return system(cmd);
}

/* One command on 127.0.0.1:port (hiredis printf format); the reply or NULL. */
static redisReply *cmd(int port, const char *fmt, const char *arg) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
    redisFree(c);
    return r;
}

/* The port the sentinels name as group g's master now (-1: none answers). */
static int master_port(int g) {
    char name[16];
    snprintf(name, sizeof name, "g%d", g);
    for (int k = 0; k < S.nsentinels; k++) {
        redisReply *r = cmd(S.sentinel_port[k], "SENTINEL GET-MASTER-ADDR-BY-NAME %s", name);
        int port = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? atoi(r->element[1]->str) : -1;
        if (r) freeReplyObject(r);
        if (port > 0) return port;
    }
    return -1;
}

/* The member of group g that is not on port p. */
static int other(int g, int p) {
    return S.port[g][0] == p ? S.port[g][1] : S.port[g][0];
}

/* 1 when the server on port holds key with value. */
static int holds(int port, const char *key, const char *value) {
    redisReply *r = cmd(port, "GET %s", key);
    int ok = r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, value);
    if (r) freeReplyObject(r);
    return ok;
}

/* 1 when a write on the server on port is acknowledged by `want` of its
 * replicas within 200 ms (a replica listed by ROLE may still be loading
 * its first copy, acknowledging nothing). */
static int acked(int port, int want) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "SET sentinel:test:sync 1");
        if (r) freeReplyObject(r);
        r = r ? redisCommand(c, "WAIT %d 200", want) : NULL;
        ok = r && r->type == REDIS_REPLY_INTEGER && r->integer >= want;
        if (r) freeReplyObject(r);
    }
    redisFree(c);
    return ok;
}

/* Waits, up to ms, until group g's master (as its sentinels say) lists
 * `want` connected replicas in ROLE and they acknowledge its writes.
 * Returns 1 then. */
static int await_replicas(int g, int want, unsigned ms) {
    for (unsigned t = 0; t < ms; t += 50, rt_sleep_ms(50)) {
        int p = master_port(g);
        redisReply *r = p > 0 ? cmd(p, "ROLE", NULL) : NULL;
        int n = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY
                    ? (int)r->element[2]->elements
                    : -1;
        if (r) freeReplyObject(r);
        if (n >= want && acked(p, want)) return 1;
    }
    return 0;
}

/* Waits, up to ms, until group g's master is not on port old. */
static int await_new_master(int g, int old, unsigned ms) {
    for (unsigned t = 0; t < ms; t += 50, rt_sleep_ms(50)) {
        int p = master_port(g);
        if (p > 0 && p != old) return p;
    }
    return -1;
}

/* Every member up and replicated, every key gone. */
static void setup(void) {
    load();
    for (int g = 0; g < GROUPS; g++)
        for (int m = 0; m < 2; m++) {
            char a[16];
            snprintf(a, sizeof a, "%d.%d", g, m);
            sh("resume", a);
        }
    for (int g = 0; g < GROUPS; g++) {
        cr_assert(await_replicas(g, 1, 20000), "group %d has no replica in sync", g);
        redisReply *r = cmd(master_port(g), "FLUSHALL", NULL);
        if (r) freeReplyObject(r);
    }
}

static void teardown(void) {
    for (int g = 0; g < GROUPS; g++)
        for (int m = 0; m < 2; m++) {
            char a[16];
            snprintf(a, sizeof a, "%d.%d", g, m);
            sh("resume", a);
        }
}

TestSuite(sentinel, .init = setup, .fini = teardown, .timeout = 180);

/* A handle over the three groups. */
static redlock_t *groups_rl(uint32_t min_replicas, uint32_t max_ttl_ms) {
    const char *nodes[GROUPS];
    for (int g = 0; g < GROUPS; g++) nodes[g] = S.uri[g];
    redlock_options_t o;
    rt_options(&o);
    o.nodes = nodes;
    o.n_nodes = GROUPS;
    o.op_timeout_ms = 300;
    o.connect_timeout_ms = 300;
    o.min_replicas = min_replicas;
    o.max_ttl_ms = max_ttl_ms;
    redlock_t *rl = NULL;
    char err[256] = "";
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    return rl;
}

Test(sentinel, a_group_is_one_node_found_through_its_sentinels) {
    redlock_t *rl = groups_rl(1, 0);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:found", 10000, 2000, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    /* the groups that voted yes hold it on their master and, counted after
     * replication, on their replica already */
    int yes = 0;
    for (int g = 0; g < GROUPS; g++) {
        if (rep.nodes[g].vote != REDLOCK_VOTE_YES) continue;
        yes++;
        int m = master_port(g);
        cr_assert(holds(m, "sentinel:found", redlock_lock_token(lk)), "group %d's master", g);
        cr_assert(holds(other(g, m), "sentinel:found", redlock_lock_token(lk)), "group %d's replica", g);
    }
    cr_assert_geq(yes, 2);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

/* A handle over the three groups with min_replicas 1 and 2 s timeouts
 * (connect and op; node_down 4 s). */
static redlock_t *patient_rl(void) {
    const char *nodes[GROUPS];
    for (int g = 0; g < GROUPS; g++) nodes[g] = S.uri[g];
    redlock_options_t o;
    rt_options(&o);
    o.nodes = nodes;
    o.n_nodes = GROUPS;
    o.op_timeout_ms = o.connect_timeout_ms = 2000;
    o.node_down_ms = 4000;
    o.min_replicas = 1;
    redlock_t *rl = NULL;
    char err[256] = "";
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    return rl;
}

/* Calls of cmd (lower case, "wait") the server on port counted since its
 * last CONFIG RESETSTAT; -1 when it does not say. */
static long calls(int port, const char *name) {
    redisReply *r = cmd(port, "INFO commandstats", NULL);
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", name);
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, key) : NULL;
    long n = at ? atol(at + strlen(key)) : (r && r->type == REDIS_REPLY_STRING ? 0 : -1);
    if (r) freeReplyObject(r);
    return n;
}

#define PAR_THREADS 12
#define PAR_EACH 15

typedef struct par {
    redlock_t *rl;
    int t;
    redlock_lock_t *lk[PAR_EACH];
    int yes[PAR_EACH][GROUPS];
    int failed;
    char why[1280];     /* the first refusal's message and the groups' details */
} par_t;

static void *par_thread(void *arg) {
    par_t *p = arg;
    for (int i = 0; i < PAR_EACH; i++) {
        char res[48];
        snprintf(res, sizeof res, "sentinel:par:%d:%d", p->t, i);
        redlock_report_t rep;
        if (redlock_acquire_ex(p->rl, res, 30000, 2000, &p->lk[i], &rep) != REDLOCK_OK) {
            if (!p->failed++)
                snprintf(p->why, sizeof p->why, "%s [%s | %s | %s]", rep.message, rep.nodes[0].detail,
                         rep.nodes[1].detail, rep.nodes[2].detail);
            p->lk[i] = NULL;
            continue;
        }
        for (int g = 0; g < GROUPS; g++) p->yes[i][g] = rep.nodes[g].vote == REDLOCK_VOTE_YES;
    }
    return NULL;
}

/* Concurrent callers' replicated writes share WAITs (a WAIT covers every
 * write before it on its connection), yet each yes still means that
 * group's replica had that very lock when it was counted. */
Test(sentinel, concurrent_acquires_share_their_waits_and_each_yes_is_on_the_replica) {
    redlock_t *rl = patient_rl(); /* (slow under valgrind: the point is not speed) */
    redlock_lock_t *warm = NULL; /* the groups' masters found and connected before the threads start */
    redlock_report_t wr;
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:par:warm", 30000, 10000, &warm, &wr), REDLOCK_OK, "%s", wr.message);
    cr_assert_eq(redlock_release(rl, warm), REDLOCK_OK);
    int masters[GROUPS];
    for (int g = 0; g < GROUPS; g++) {
        masters[g] = master_port(g);
        redisReply *r = cmd(masters[g], "CONFIG RESETSTAT", NULL);
        if (r) freeReplyObject(r);
    }
    static par_t p[PAR_THREADS];
    pthread_t th[PAR_THREADS];
    memset(p, 0, sizeof p);
    for (int t = 0; t < PAR_THREADS; t++) {
        p[t].rl = rl;
        p[t].t = t;
        cr_assert_eq(pthread_create(&th[t], NULL, par_thread, &p[t]), 0);
    }
    for (int t = 0; t < PAR_THREADS; t++) pthread_join(th[t], NULL);
    long waits = 0, sets = 0;
    for (int g = 0; g < GROUPS; g++) {
        long w = calls(masters[g], "wait"), s = calls(masters[g], "set") + calls(masters[g], "evalsha");
        cr_assert(w >= 0 && s >= 0, "group %d's master did not give its command counts", g);
        waits += w;
        sets += s;
    }
    int granted = 0;
    for (int t = 0; t < PAR_THREADS; t++) {
        cr_assert_eq(p[t].failed, 0, "thread %d: %d acquires refused, first: %s", t, p[t].failed, p[t].why);
        for (int i = 0; i < PAR_EACH; i++) {
            char res[48];
            snprintf(res, sizeof res, "sentinel:par:%d:%d", t, i);
            for (int g = 0; g < GROUPS; g++) {
                if (!p[t].yes[i][g]) continue;
                const char *tok = redlock_lock_token(p[t].lk[i]);
                cr_assert(holds(other(g, masters[g]), res, tok), "%s: group %d voted yes, its replica lacks it", res, g);
            }
            granted++;
        }
    }
    cr_assert_eq(granted, PAR_THREADS * PAR_EACH);
    cr_log_info("%d concurrent acquires: %ld writes on the masters, %ld WAITs", granted, sets, waits);
    /* one WAIT a write would be `sets` (how many fewer depends on the
     * machine's pace: writes queued while a WAIT is out share the next) */
    cr_assert_lt(waits, sets, "%ld WAITs for %ld replicated writes: none shared", waits, sets);
    for (int t = 0; t < PAR_THREADS; t++)
        for (int i = 0; i < PAR_EACH; i++) cr_assert_eq(redlock_release(rl, p[t].lk[i]), REDLOCK_OK);
    redlock_free(rl);
}

/* A round that can no longer grant, but whose reason is not settled yet,
 * waits for a node whose yes waits on a WAIT only for the round's grace,
 * as for a node that has not answered, not until the WAIT's own timeout:
 * group 0 holds the lock (taken), group 2 refuses writes (out of memory),
 * group 1 writes but its replica is paused. */
Test(sentinel, an_outcome_known_does_not_wait_out_a_lagging_groups_wait) {
    redlock_t *h1 = groups_rl(0, 0);
    redlock_lock_t *held = NULL, *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(h1, "sentinel:grace", 30000, 2000, &held, &rep), REDLOCK_OK, "%s", rep.message);
    int m1 = master_port(1), m2 = master_port(2);
    /* (the call returned at its quorum: the third group's write may still be on its way) */
    int all = 0;
    for (int t = 0; t < 200 && !all; t++, rt_sleep_ms(10)) {
        all = 1;
        for (int g = 0; g < GROUPS; g++) all &= holds(master_port(g), "sentinel:grace", redlock_lock_token(held));
    }
    cr_assert(all, "the lock did not reach every group's master");
    redisReply *r = cmd(m1, "DEL %s", "sentinel:grace");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "DEL on group 1's master");
    freeReplyObject(r);
    r = cmd(m2, "CONFIG SET maxmemory 1", NULL);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET maxmemory on group 2's master");
    freeReplyObject(r);
    char rep1[16];
    snprintf(rep1, sizeof rep1, "1.%d", S.port[1][0] == m1 ? 1 : 0);
    cr_assert_eq(sh("pause", rep1), 0, "pause %s", rep1);
    redlock_t *h2 = patient_rl(); /* group 1's WAIT: 1.5 s */
    int rc = redlock_acquire_ex(h2, "sentinel:grace", 30000, 0, &lk, &rep);
    sh("resume", rep1);
    r = cmd(m2, "CONFIG SET maxmemory 0", NULL);
    if (r) freeReplyObject(r);
    cr_assert_neq(rc, REDLOCK_OK, "granted: %s", rep.message);
    cr_assert_eq(rep.nodes[0].vote, REDLOCK_VOTE_NO, "group 0 holds the lock: %s", rep.nodes[0].detail);
    cr_assert_eq(rep.nodes[2].vote, REDLOCK_VOTE_ERROR, "group 2 refuses writes: %s", rep.nodes[2].detail);
    cr_assert_eq(rep.nodes[1].vote, REDLOCK_VOTE_NONE, "group 1's WAIT was waited for: %s %s (%s)",
                 redlock_vote_name(rep.nodes[1].vote), redlock_strerror(rep.nodes[1].err), rep.nodes[1].detail);
#ifndef RL_TEST_ASYNC
    cr_assert(strstr(rep.nodes[1].detail, "WAIT for replicas not answered"), "'%s'", rep.nodes[1].detail);
#endif
    redlock_free(h2);
    cr_assert_eq(redlock_release(h1, held), REDLOCK_OK);
    redlock_free(h1);
}

Test(sentinel, with_min_replicas_1_and_two_groups_replicas_paused_nothing_is_granted) {
    for (int g = 0; g < 2; g++) {
        char a[16];
        snprintf(a, sizeof a, "%d.%d", g, S.port[g][0] == master_port(g) ? 1 : 0);
        cr_assert_eq(sh("pause", a), 0, "pause %s", a);
    }
    redlock_t *rl = groups_rl(1, 0);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, "sentinel:paused", 10000, 0, &lk, &rep);
    cr_assert_neq(rc, REDLOCK_OK, "granted with two groups' replicas paused");
    for (int g = 0; g < 2; g++) {
        cr_assert_neq(rep.nodes[g].vote, REDLOCK_VOTE_YES, "group %d", g);
        /* (a slow machine may see the WAIT's deadline pass first, or the node suspect from it) */
        cr_assert(rep.nodes[g].err == REDLOCK_ERR_REPLICATION || rep.nodes[g].err == REDLOCK_ERR_TIMEOUT ||
                      rep.nodes[g].err == REDLOCK_ERR_SUSPECT,
                  "group %d: %s", g, redlock_strerror(rep.nodes[g].err));
    }
    redlock_free(rl);
    /* the same with votes on the masters' word: granted */
    rl = groups_rl(0, 0);
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:paused", 10000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(sentinel, a_fresh_handle_gives_a_just_promoted_master_no_vote) {
    rt_sleep_ms(2100); /* the servers run longer than max_ttl_ms: no restart quarantine */
    int old = master_port(0);
    cr_assert_eq(sh("failover", "0"), 0);
    cr_assert_gt(await_new_master(0, old, 15000), 0, "group 0 did not fail over");
    redlock_t *rl = groups_rl(0, 2000);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    /* The first call asks the sentinels while its round goes on: groups 1
     * and 2 may grant before group 0's answer is in (its vote then not
     * waited for). Once the handle knows the group, its vote is refused at
     * once: the second call shows it. */
    for (int k = 0; k < 2; k++) {
        char res[32];
        snprintf(res, sizeof res, "sentinel:promoted:%d", k);
        cr_assert_eq(redlock_acquire_ex(rl, res, 1000, 1000, &lk, &rep), REDLOCK_OK, "%s", rep.message);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    }
    cr_assert_eq(rep.nodes[0].err, REDLOCK_ERR_QUARANTINED, "group 0: %s", redlock_strerror(rep.nodes[0].err));
#ifndef RL_TEST_ASYNC
    cr_assert(strstr(rep.nodes[0].detail, "promoted"), "'%s'", rep.nodes[0].detail);
#endif
    redlock_free(rl);
    /* votes that wait for every replica the group has need no quarantine */
    cr_assert(await_replicas(0, 1, 15000), "the old master did not rejoin as a replica");
    rl = groups_rl(1, 2000);
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:promoted2", 1000, 2000, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_neq(rep.nodes[0].err, REDLOCK_ERR_QUARANTINED, "group 0 quarantined though its votes wait for its replica");
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

Test(sentinel, a_lock_counted_after_replication_outlives_its_masters) {
    redlock_t *a = groups_rl(1, 0);
    redlock_lock_t *lk = NULL, *lb = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(a, "sentinel:kept", 30000, 2000, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    int old[2];
    for (int g = 0; g < 2; g++) {
        old[g] = master_port(g);
        char addr[16];
        snprintf(addr, sizeof addr, "%d.%d", g, S.port[g][0] == old[g] ? 0 : 1);
        cr_assert_eq(sh("kill", addr), 0, "kill %s", addr);
    }
    for (int g = 0; g < 2; g++) cr_assert_gt(await_new_master(g, old[g], 20000), 0, "group %d did not fail over", g);
    /* a handle made after the promotions: the promoted replicas have the lock */
    redlock_t *b = groups_rl(0, 0);
    int rc = redlock_acquire_ex(b, "sentinel:kept", 30000, 0, &lb, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN, "a fresh handle after the failovers: %s", rep.message);
    /* the killed masters come back as replicas; both handles lock again within seconds */
    for (int g = 0; g < 2; g++) {
        char addr[16];
        snprintf(addr, sizeof addr, "%d.%d", g, S.port[g][0] == old[g] ? 0 : 1);
        cr_assert_eq(sh("restart", addr), 0, "restart %s", addr);
    }
    for (int g = 0; g < 2; g++) cr_assert(await_replicas(g, 1, 20000), "group %d got no replica back", g);
    cr_assert_eq(redlock_release(a, lk), REDLOCK_OK, "the holder releases after the failovers");
    redlock_t *h[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        char res[32];
        snprintf(res, sizeof res, "sentinel:again:%d", k);
        rc = redlock_acquire_ex(h[k], res, 10000, 10000, &lk, &rep);
        cr_assert_eq(rc, REDLOCK_OK, "handle %d after the failovers: %s [%s | %s | %s]", k, rep.message, rep.nodes[0].detail, rep.nodes[1].detail, rep.nodes[2].detail);
        cr_assert_eq(redlock_release(h[k], lk), REDLOCK_OK);
    }
    redlock_free(a);
    redlock_free(b);
}

/* Runs ACL SETUSER default RULE on the server on port. Returns 1 when OK. */
static int acl_default(int port, const char *rule) {
    redisReply *r = cmd(port, "ACL SETUSER default %s", rule);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return ok;
}

/* A master its sentinels think down while the handle still reaches it (a
 * partition between them: here its PINGs refused, which the sentinels
 * see and the handle never sends on a healthy connection). It keeps
 * accepting writes, and keeps the handle's connection, but its group fails
 * over: the sentinels' +switch-master announcement moves the handle to the
 * promoted replica, where its next votes are written. */
Test(sentinel, the_handle_follows_an_announced_failover_away_from_a_master_it_still_reaches) {
    rt_sleep_ms(2100); /* the servers run longer than max_ttl_ms: no restart quarantine */
    redlock_t *rl = groups_rl(0, 0);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:switch", 10000, 2000, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    int old = master_port(0);
    cr_assert(acl_default(old, "-ping"), "ACL SETUSER on %d", old);
    int now_master = await_new_master(0, old, 30000);
    int moved = 0;
    for (int k = 0; now_master > 0 && k < 100 && !moved; k++, rt_sleep_ms(100)) {
        char res[48];
        snprintf(res, sizeof res, "sentinel:switch:%d", k);
        if (redlock_acquire_ex(rl, res, 10000, 1000, &lk, &rep) != REDLOCK_OK) continue;
        moved = rep.nodes[0].vote == REDLOCK_VOTE_YES && holds(now_master, res, redlock_lock_token(lk)) &&
                !holds(old, res, redlock_lock_token(lk));
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    }
    cr_assert(acl_default(old, "+ping"), "ACL SETUSER on %d", old);
    cr_assert_gt(now_master, 0, "group 0 did not fail over");
    cr_assert(moved, "the handle kept writing group 0's votes to the old master %d, not to %d", old, now_master);
    redlock_free(rl);
    cr_assert(await_replicas(0, 1, 20000), "the old master did not rejoin as a replica");
}
