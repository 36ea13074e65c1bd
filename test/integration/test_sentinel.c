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
 * - A replica that cannot have a write: its group's replication cut (the
 *   replica given a wrong password for its master, its link dropped), so a
 *   yes counted without it would show.
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
    int port[GROUPS][2]; /* each group's members at creation: [0] master, [1] replica */
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

/* Replicas the server on port lists in ROLE (-1: no answer, or not a master). */
static int role_replicas(int port) {
    redisReply *r = port > 0 ? cmd(port, "ROLE", NULL) : NULL;
    int n = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY
                ? (int)r->element[2]->elements
                : -1;
    if (r) freeReplyObject(r);
    return n;
}

/* Waits, up to ms, until group g's master (as its sentinels say) lists
 * `want` connected replicas in ROLE and they acknowledge its writes.
 * Returns 1 then. */
static int await_replicas(int g, int want, unsigned ms) {
    for (unsigned t = 0; t < ms; t += 50, rt_sleep_ms(50)) {
        int p = master_port(g);
        if (role_replicas(p) >= want && acked(p, want)) return 1;
    }
    return 0;
}

/* Waits, at most ms, until every group has given rl a yes for a resource
 * of its own: after a failover, until the handle found each new master
 * (its look-ups and reconnects run at its own pace). An acquire returns at
 * its quorum, so the yeses are gathered over tries. Returns 1, or 0 on
 * time out. */
static int await_caught_up(redlock_t *rl, unsigned ms) {
    int seen[GROUPS] = {0}, n = 0;
    for (unsigned t = 0; t < ms; t += 100, rt_sleep_ms(100)) {
        redlock_lock_t *lk = NULL;
        redlock_report_t rep;
        memset(&rep, 0, sizeof rep);
        int rc = redlock_acquire_ex(rl, "sentinel:caught-up", 5000, 0, &lk, &rep);
        for (int g = 0; g < GROUPS; g++)
            if (!seen[g] && rep.nodes[g].vote == REDLOCK_VOTE_YES) seen[g] = 1, n++;
        if (rc == REDLOCK_OK) redlock_release(rl, lk);
        if (n == GROUPS) return 1;
    }
    return 0;
}

/* Runs ACL SETUSER default RULE on the server on port. Returns 1 when OK. */
static int acl_default(int port, const char *rule) {
    redisReply *r = cmd(port, "ACL SETUSER default %s", rule);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return ok;
}

/* Cuts group g's replication: its replica is given a wrong password for
 * its master (masterauth) and its link is dropped, so no later write
 * reaches it until uncut(g), however often it retries. (Refusing PSYNC on
 * the master instead lets a retry fall back to SYNC as the rule is lifted,
 * after which the master never counts that replica's acknowledgements.)
 * Returns 1 once the master lists no replica. */
static int cut(int g) {
    int m = master_port(g);
    redisReply *r = m > 0 ? cmd(other(g, m), "CONFIG SET masterauth %s", "cut-on-purpose") : NULL;
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    if (!ok) return 0;
    r = cmd(m, "CLIENT KILL TYPE %s", "replica");
    if (r) freeReplyObject(r);
    for (int t = 0; t < 500; t++, rt_sleep_ms(10))
        if (role_replicas(m) == 0) return 1;
    return 0;
}

/* Gives every member of group g its master's (empty) password back. */
static void uncut(int g) {
    for (int m = 0; m < 2; m++) {
        redisReply *r = cmd(S.port[g][m], "CONFIG SET masterauth %s", "");
        if (r) freeReplyObject(r);
    }
}

/* 1 when the server on port has key, whatever its value. */
static int has_key(int port, const char *key) {
    redisReply *r = cmd(port, "EXISTS %s", key);
    int yes = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r) freeReplyObject(r);
    return yes;
}

/* The number after key in the server's INFO section: absent when the
 * section has no key, -1 when the server does not answer. */
static long info_number(int port, const char *section, const char *key, long absent) {
    redisReply *r = cmd(port, "INFO %s", section);
    int answered = r && r->type == REDIS_REPLY_STRING;
    const char *at = answered ? strstr(r->str, key) : NULL;
    long n = at ? atol(at + strlen(key)) : answered ? absent : -1;
    if (r) freeReplyObject(r);
    return n;
}

/* A number after "name:" in the server's INFO section (-1: not there). */
static long info_field(int port, const char *section, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "%s:", name);
    return info_number(port, section, key, -1);
}

/* Calls of cmd (lower case, "wait") the server on port counted since its
 * last CONFIG RESETSTAT; -1 when it does not say. */
static long calls(int port, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", name);
    return info_number(port, "commandstats", key, 0);
}

/* Waits, up to ms, until every member of every group has run for longer
 * than min_ms, so that a handle with max_ttl_ms = min_ms sees no restart.
 * Returns 1 then. */
static int await_uptime(unsigned min_ms, unsigned ms) {
    for (unsigned t = 0; t < ms; t += 100, rt_sleep_ms(100)) {
        int all = 1;
        for (int g = 0; g < GROUPS; g++)
            for (int m = 0; m < 2; m++) all &= info_field(S.port[g][m], "server", "uptime_in_seconds") * 1000 > min_ms;
        if (all) return 1;
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
            char a[32];
            snprintf(a, sizeof a, "%d.%d", g, m);
            sh("resume", a);
        }
    for (int g = 0; g < GROUPS; g++) {
        uncut(g);
        cr_assert(await_replicas(g, 1, 20000), "group %d has no replica in sync", g);
        redisReply *r = cmd(master_port(g), "FLUSHALL", NULL);
        if (r) freeReplyObject(r);
    }
}

static void teardown(void) {
    for (int g = 0; g < GROUPS; g++) {
        for (int m = 0; m < 2; m++) {
            char a[32];
            snprintf(a, sizeof a, "%d.%d", g, m);
            sh("resume", a);
        }
        uncut(g);
    }
}

TestSuite(sentinel, .init = setup, .fini = teardown, .timeout = 180);

/* A handle over the three groups, timeout_ms to connect and per request
 * (a patient one, 2 s, is for a fresh handle's first call under valgrind
 * on a busy machine: it asks the sentinels, connects and checks ROLE). */
static redlock_t *groups_rl_ms(uint32_t min_replicas, uint32_t max_ttl_ms, uint32_t timeout_ms) {
    const char *nodes[GROUPS];
    for (int g = 0; g < GROUPS; g++) nodes[g] = S.uri[g];
    redlock_options_t o;
    rt_options(&o);
    o.nodes = nodes;
    o.n_nodes = GROUPS;
    o.op_timeout_ms = o.connect_timeout_ms = timeout_ms;
    if (timeout_ms * 2 > o.node_down_ms) o.node_down_ms = timeout_ms * 2;
    o.min_replicas = min_replicas;
    o.max_ttl_ms = max_ttl_ms;
    redlock_t *rl = NULL;
    char err[256] = "";
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    return rl;
}

/* A handle over the three groups, 300 ms to connect and per request. */
static redlock_t *groups_rl(uint32_t min_replicas, uint32_t max_ttl_ms) {
    return groups_rl_ms(min_replicas, max_ttl_ms, 300);
}

/* Each group's master is found through its sentinels, and a group's yes
 * counts once its replica has the write: with group 0's replication cut
 * and group 2 held by another client, group 0's vote decides the acquire
 * and is not a yes; with replication back it is, and the replicas of the
 * groups that said yes hold the lock. */
Test(sentinel, a_group_is_one_node_found_through_its_sentinels) {
    redlock_t *rl = groups_rl(1, 0);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    redisReply *r = cmd(master_port(2), "SET %s another-client PX 60000", "sentinel:found");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET on group 2's master");
    freeReplyObject(r);
    cr_assert(cut(0), "group 0's replica link could not be cut");
    int rc = redlock_acquire_ex(rl, "sentinel:found", 10000, 0, &lk, &rep);
    int replica0 = other(0, master_port(0));
    int lacks = !has_key(replica0, "sentinel:found");
    uncut(0);
    cr_assert_neq(rc, REDLOCK_OK, "granted with group 2 held elsewhere and group 0's replica cut off: %s", rep.message);
    cr_assert_neq(rep.nodes[0].vote, REDLOCK_VOTE_YES, "group 0 said yes for a write its replica cannot have");
    cr_assert(lacks, "group 0's replica has the write though its link was cut");
    cr_assert(await_replicas(0, 1, 20000), "group 0's replica did not come back");
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:found", 10000, 2000, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    for (int g = 0; g < 2; g++) {
        cr_assert_eq(rep.nodes[g].vote, REDLOCK_VOTE_YES, "group %d: %s", g, rep.nodes[g].detail);
        int m = master_port(g);
        cr_assert(holds(m, "sentinel:found", redlock_lock_token(lk)), "group %d's master", g);
        cr_assert(holds(other(g, m), "sentinel:found", redlock_lock_token(lk)), "group %d's replica", g);
    }
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    r = cmd(master_port(2), "DEL %s", "sentinel:found");
    if (r) freeReplyObject(r);
    redlock_free(rl);
}

/* A handle over the three groups with min_replicas 1 and 2 s timeouts
 * (connect and op; node_down 4 s). */
static redlock_t *patient_rl(void) {
    return groups_rl_ms(1, 0, 2000);
}

/* Waits (20 s at most) until every group's master holds resource with
 * token (want 1), or none does (want 0). Returns 1 then. */
static int masters_hold(const char *resource, const char *token, int want) {
    for (int t = 0; t < 400; t++, rt_sleep_ms(50)) {
        int g = 0;
        while (g < GROUPS && holds(master_port(g), resource, token) == want) g++;
        if (g == GROUPS) return 1;
    }
    return 0;
}

/* Takes resource through rl until every group's master holds it, then
 * releases it until none does: each group's master was looked up and
 * connected, and nothing of the warm-up is still queued for it (an acquire
 * returns at its quorum, before a group still being looked up has its
 * write). Returns 1 then. */
static int warm_up(redlock_t *rl, const char *resource) {
    redlock_lock_t *lk = NULL;
    if (redlock_acquire_ex(rl, resource, 30000, 10000, &lk, NULL) != REDLOCK_OK) return 0;
    char token[41];
    snprintf(token, sizeof token, "%s", redlock_lock_token(lk));
    int all = masters_hold(resource, token, 1);
    return redlock_release(rl, lk) == REDLOCK_OK && all && masters_hold(resource, token, 0);
}

/* Permits counted after replication keep the slot each group gave: with
 * min_replicas 1, two holders of a 2-permit semaphore are on slots 0 and
 * 1, each slot's key holds its holder's token on the master and the
 * replica of every group that said yes, no "-1" slot key exists, and a
 * third caller is refused. (A yes that waited for WAIT once lost the slot
 * its group gave: the permit was granted on slot -1 and its real slot
 * released at once, so a third caller got it too.) */
Test(sentinel, a_permit_counted_after_replication_keeps_its_slot) {
    redlock_t *rl = patient_rl();
    redlock_lock_t *p[3] = {NULL, NULL, NULL};
    redlock_report_t rep[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(redlock_acquire_permit(rl, "sentinel:sem", 2, 30000, 0, &p[i], &rep[i]), REDLOCK_OK,
                     "permit %d: %s", i, rep[i].message);
    cr_assert_eq(redlock_lock_slot(p[0]) + redlock_lock_slot(p[1]), 1, "the two permits are on slots %d and %d",
                 redlock_lock_slot(p[0]), redlock_lock_slot(p[1]));
    redlock_report_t third;
    cr_assert_eq(redlock_acquire_permit(rl, "sentinel:sem", 2, 30000, 0, &p[2], &third), REDLOCK_ERR_TAKEN,
                 "a third permit of 2: %s", third.message);
    for (int i = 0; i < 2; i++) {
        char key[64];
        snprintf(key, sizeof key, "sentinel:sem:permit:%d", redlock_lock_slot(p[i]));
        for (int g = 0; g < GROUPS; g++) {
            if (rep[i].nodes[g].vote != REDLOCK_VOTE_YES) continue;
            int m = master_port(g);
            cr_assert(holds(m, key, redlock_lock_token(p[i])), "permit %d: %s on group %d's master", i, key, g);
            cr_assert(holds(other(g, m), key, redlock_lock_token(p[i])), "permit %d: %s on group %d's replica", i, key,
                      g);
            cr_assert(!has_key(m, "sentinel:sem:permit:-1"), "group %d's master has a slot -1", g);
        }
    }
    for (int i = 0; i < 2; i++) cr_assert_eq(redlock_release(rl, p[i]), REDLOCK_OK, "permit %d", i);
    redlock_free(rl);
}

#define PAR_THREADS 12
#define PAR_EACH 10 /* acquires per thread: 8 with every replica linked, then 2 with group 2's cut */
#define PAR_LINKED 8

typedef struct par {
    redlock_t *rl;
    int t;
    int from, to; /* the acquires this run makes: [from, to) */
    int64_t wait_ms;
    redlock_lock_t *lk[PAR_EACH];
    int rc[PAR_EACH];
    int yes[PAR_EACH][GROUPS];
    char why[1280]; /* the first unexpected result's message and the groups' details */
} par_t;

static void *par_thread(void *arg) {
    par_t *p = arg;
    for (int i = p->from; i < p->to; i++) {
        char res[48];
        snprintf(res, sizeof res, "sentinel:par:%d:%d", p->t, i);
        redlock_report_t rep;
        p->rc[i] = redlock_acquire_ex(p->rl, res, 30000, p->wait_ms, &p->lk[i], &rep);
        if (p->rc[i] != REDLOCK_OK) p->lk[i] = NULL;
        if ((p->rc[i] == REDLOCK_OK) != (i < PAR_LINKED) && !p->why[0])
            snprintf(p->why, sizeof p->why, "acquire %d: %s [%s | %s | %s]", i, rep.message, rep.nodes[0].detail,
                     rep.nodes[1].detail, rep.nodes[2].detail);
        for (int g = 0; g < GROUPS; g++) p->yes[i][g] = rep.nodes[g].vote == REDLOCK_VOTE_YES;
    }
    return NULL;
}

/* Runs PAR_THREADS threads over p, each making its acquires [from, to). */
static void par_run(par_t *p, int from, int to, int64_t wait_ms) {
    pthread_t th[PAR_THREADS];
    for (int t = 0; t < PAR_THREADS; t++) {
        p[t].from = from;
        p[t].to = to;
        p[t].wait_ms = wait_ms;
        cr_assert_eq(pthread_create(&th[t], NULL, par_thread, &p[t]), 0);
    }
    for (int t = 0; t < PAR_THREADS; t++) pthread_join(th[t], NULL);
}

/* Concurrent callers' replicated writes share WAITs on one connection per
 * group, yet each yes still means that group's replica had that very lock
 * when it was counted: every lock granted while the replicas are linked is
 * on the replica of each group that said yes; then, with group 2's
 * replication cut and group 0 held by another client (so group 2's vote
 * decides), every acquire is refused and group 2 never says yes. */
Test(sentinel, concurrent_acquires_share_their_waits_and_each_yes_is_on_the_replica) {
    redlock_t *rl = patient_rl(); /* (slow under valgrind: the point is not speed) */
    cr_assert(warm_up(rl, "sentinel:par:warm"),
              "the warm-up lock did not reach and leave every group's master in 20 s");
    int masters[GROUPS];
    for (int g = 0; g < GROUPS; g++) masters[g] = master_port(g);
    static par_t p[PAR_THREADS];
    memset(p, 0, sizeof p);
    for (int t = 0; t < PAR_THREADS; t++) {
        p[t].rl = rl;
        p[t].t = t;
        for (int i = PAR_LINKED; i < PAR_EACH; i++) {
            char res[48];
            snprintf(res, sizeof res, "sentinel:par:%d:%d", t, i);
            redisReply *r = cmd(masters[0], "SET %s another-client PX 60000", res);
            cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET on group 0's master");
            freeReplyObject(r);
        }
    }
    par_run(p, 0, PAR_LINKED, 2000);
    cr_assert(cut(2), "group 2's replica link could not be cut");
    par_run(p, PAR_LINKED, PAR_EACH, 0);
    int replica2 = other(2, masters[2]), lacks = 1;
    for (int t = 0; t < PAR_THREADS; t++)
        for (int i = PAR_LINKED; i < PAR_EACH; i++) {
            char res[48];
            snprintf(res, sizeof res, "sentinel:par:%d:%d", t, i);
            lacks &= !has_key(replica2, res);
        }
    uncut(2);
    cr_assert(lacks, "group 2's replica got a write while its link was cut");
    for (int t = 0; t < PAR_THREADS; t++)
        for (int i = 0; i < PAR_EACH; i++) {
            char res[48];
            snprintf(res, sizeof res, "sentinel:par:%d:%d", t, i);
            if (i >= PAR_LINKED) {
                cr_assert_neq(p[t].rc[i], REDLOCK_OK, "%s granted with group 0 held and group 2 cut: %s", res,
                              p[t].why);
                cr_assert(!p[t].yes[i][2], "%s: group 2 said yes while its replica was cut off", res);
                continue;
            }
            cr_assert_eq(p[t].rc[i], REDLOCK_OK, "%s: %s", res, p[t].why);
            for (int g = 0; g < GROUPS; g++)
                cr_assert(!p[t].yes[i][g] || holds(other(g, masters[g]), res, redlock_lock_token(p[t].lk[i])),
                          "%s: group %d voted yes, its replica lacks it", res, g);
        }
    for (int t = 0; t < PAR_THREADS; t++)
        for (int i = 0; i < PAR_LINKED; i++) cr_assert_eq(redlock_release(rl, p[t].lk[i]), REDLOCK_OK);
    cr_assert(await_replicas(2, 1, 20000), "group 2's replica did not come back");
    redlock_free(rl);
}

/* Waits, up to ms, until the server on port has no client blocked (its
 * WAITs answered, so that its command counts include them). Returns 1 then. */
static int await_unblocked(int port, unsigned ms) {
    for (unsigned t = 0; t < ms; t += 10, rt_sleep_ms(10))
        if (info_field(port, "clients", "blocked_clients") == 0) return 1;
    return 0;
}

#define SHARED_WRITES 10

/* Replicated writes queued on a connection while a WAIT is out there wait
 * for its answer and then share one WAIT. With group 2's replication cut,
 * each of its WAITs is out until its timeout (about 1.5 s here), and one
 * caller's acquires, granted by groups 0 and 1 a round trip each, queue
 * their writes to group 2 behind it: a handful of WAITs for all of them,
 * where a WAIT per write would be SHARED_WRITES. */
Test(sentinel, writes_queued_while_a_wait_is_out_share_the_next_one) {
    redlock_t *rl = patient_rl();
    redlock_lock_t *lk[SHARED_WRITES] = {0};
    redlock_report_t rep;
    cr_assert(warm_up(rl, "sentinel:share:warm"),
              "the warm-up lock did not reach and leave every group's master in 20 s");
    int m2 = master_port(2);
    cr_assert(cut(2), "group 2's replica link could not be cut");
    cr_assert(await_unblocked(m2, 10000), "group 2's master kept a client blocked");
    redisReply *r = cmd(m2, "CONFIG RESETSTAT", NULL);
    if (r) freeReplyObject(r);
    int granted = 0;
    for (int i = 0; i < SHARED_WRITES; i++) {
        char res[48];
        snprintf(res, sizeof res, "sentinel:share:%d", i);
        granted += redlock_acquire_ex(rl, res, 30000, 0, &lk[i], &rep) == REDLOCK_OK;
    }
    /* every write reached group 2's master and its last WAIT was answered
     * (waited for: a WAIT a write would take SHARED_WRITES timeouts) */
    int settled = 0;
    long waits = 0, sets = 0;
    for (int t = 0; t < 6000 && !settled; t++, rt_sleep_ms(10)) {
        sets = calls(m2, "set");
        settled = sets >= SHARED_WRITES && info_field(m2, "clients", "blocked_clients") == 0;
    }
    waits = calls(m2, "wait");
    uncut(2);
    cr_assert_eq(granted, SHARED_WRITES, "groups 0 and 1 did not grant every acquire: %s", rep.message);
    cr_assert(settled, "group 2's master got %ld writes, or kept a WAIT blocked, for 60 s", sets);
    cr_log_info("with group 2's replica cut: %ld writes on its master, %ld WAITs", sets, waits);
    cr_assert_eq(sets, SHARED_WRITES, "group 2's master counted %ld writes", sets);
    cr_assert_leq(waits, SHARED_WRITES / 2, "%ld WAITs for %ld writes queued while a WAIT was out", waits, sets);
    for (int i = 0; i < SHARED_WRITES; i++) cr_assert_eq(redlock_release(rl, lk[i]), REDLOCK_OK);
    cr_assert(await_replicas(2, 1, 20000), "group 2's replica did not come back");
    redlock_free(rl);
}

/* A round that can no longer grant, but whose reason is not settled yet,
 * waits for a node whose yes waits on a WAIT only for the round's grace,
 * as for a node that has not answered, not until the WAIT's own timeout:
 * group 0 holds the lock (taken), group 2 refuses writes (out of memory),
 * group 1 writes but its replica is paused. */
Test(sentinel, an_outcome_known_does_not_wait_out_a_lagging_groups_wait) {
    redlock_t *h1 = groups_rl_ms(0, 0, 2000);
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
        /* (a slow machine may see the WAIT's deadline pass first, the node suspect from it, or the
         * round ended before this group answered: no vote) */
        cr_assert(rep.nodes[g].err == REDLOCK_ERR_REPLICATION || rep.nodes[g].err == REDLOCK_ERR_TIMEOUT ||
                      rep.nodes[g].err == REDLOCK_ERR_SUSPECT || rep.nodes[g].vote == REDLOCK_VOTE_NONE,
                  "group %d: %s %s", g, redlock_vote_name(rep.nodes[g].vote), redlock_strerror(rep.nodes[g].err));
    }
    redlock_free(rl);
    /* the same with votes on the masters' word: granted */
    rl = groups_rl_ms(0, 0, 2000); /* a fresh handle's first call, granted at once */
    cr_assert_eq(redlock_acquire_ex(rl, "sentinel:paused", 10000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
}

/* The promotion quarantine of these tests: long enough that a failed-over
 * group's old master rejoins as a replica well inside it. */
#define PROMOTED_MS 30000
#define RL_TEST_DETAIL (sizeof((redlock_node_report_t *)0)->detail + 96)

/* Group 0's votes, as a fresh handle with min_replicas and max_ttl_ms
 * PROMOTED_MS sees them, into v[0..calls): one acquire (wait 0) a call,
 * 100 ms apart, group 2 held by another client so that group 0's vote
 * decides. The first call asks the sentinels while its round goes on, so
 * its vote of group 0 may come before the handle knows the group. */
static void promoted_votes(uint32_t min_replicas, int calls, redlock_node_report_t *v) {
    redlock_t *rl = groups_rl_ms(min_replicas, PROMOTED_MS, 2000);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    for (int k = 0; k < calls; k++, rt_sleep_ms(100)) {
        char res[48];
        snprintf(res, sizeof res, "sentinel:promoted:%u:%d", min_replicas, k);
        redisReply *r = cmd(master_port(2), "SET %s another-client PX 60000", res);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET on group 2's master");
        freeReplyObject(r);
        if (redlock_acquire_ex(rl, res, 10000, 0, &lk, &rep) == REDLOCK_OK)
            cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
        v[k] = rep.nodes[0];
    }
    redlock_free(rl);
}

/* 1 when the handle's last votes of group 0 (from the second on) were
 * all quarantined, else 0 naming the first that was not in why. */
static int all_quarantined(const redlock_node_report_t *v, int calls, char *why, size_t n) {
    for (int k = 1; k < calls; k++)
        if (v[k].err != REDLOCK_ERR_QUARANTINED) {
            snprintf(why, n, "call %d: %s %s (%s)", k, redlock_vote_name(v[k].vote), redlock_strerror(v[k].err),
                     v[k].detail);
            return 0;
        }
    return 1;
}

/* A master promoted less than max_ttl_ms ago gets no vote from a fresh
 * handle, unless its votes wait for every replica the group has: a handle
 * of each kind, right after the failover, and the first kind again after
 * the second, so that the quarantine was still on when the second asked. */
Test(sentinel, a_fresh_handle_gives_a_just_promoted_master_no_vote) {
    cr_assert(await_uptime(PROMOTED_MS, 60000), "the servers have not run for %d ms", PROMOTED_MS);
    int old = master_port(0);
    /* (a minute: the sentinels took over 15 s once, four tests beside them) */
    cr_assert_eq(sh("failover", "0 -t 60000"), 0);
    cr_assert_gt(await_new_master(0, old, 60000), 0, "group 0 did not fail over");
    redlock_node_report_t v[4];
    char why[RL_TEST_DETAIL];
    promoted_votes(0, 4, v);
    cr_assert(all_quarantined(v, 4, why, sizeof why), "group 0 just promoted: %s", why);
#ifndef RL_TEST_ASYNC
    cr_assert(strstr(v[3].detail, "promoted"), "'%s'", v[3].detail);
#endif
    /* votes that wait for every replica the group has need no quarantine */
    cr_assert(await_replicas(0, 1, 15000), "the old master did not rejoin as a replica");
    promoted_votes(1, 4, v);
    for (int k = 1; k < 4; k++)
        cr_assert_eq(v[k].vote, REDLOCK_VOTE_YES, "group 0, its votes waiting for its replica, call %d: %s %s (%s)", k,
                     redlock_vote_name(v[k].vote), redlock_strerror(v[k].err), v[k].detail);
    /* and the quarantine was still on meanwhile */
    promoted_votes(0, 4, v);
    cr_assert(all_quarantined(v, 4, why, sizeof why), "the quarantine ended before the check: %s", why);
}

Test(sentinel, a_lock_counted_after_replication_outlives_its_masters) {
    redlock_t *a = groups_rl(1, 0);
    redlock_lock_t *lk = NULL, *lb = NULL;
    redlock_report_t rep;
    /* with groups 0 and 1's replication cut, their replicas could not have
     * the lock: it is not granted */
    for (int g = 0; g < 2; g++) cr_assert(cut(g), "group %d's replica link could not be cut", g);
    int rc = redlock_acquire_ex(a, "sentinel:kept", 30000, 0, &lk, &rep);
    for (int g = 0; g < 2; g++) uncut(g);
    cr_assert_neq(rc, REDLOCK_OK, "granted while two groups' replicas could not have it: %s", rep.message);
    for (int g = 0; g < 2; g++) cr_assert_neq(rep.nodes[g].vote, REDLOCK_VOTE_YES, "group %d, its link cut", g);
    for (int g = 0; g < 2; g++) cr_assert(await_replicas(g, 1, 20000), "group %d's replica did not come back", g);
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
    redlock_t *b = groups_rl_ms(0, 0, 2000);
    rc = redlock_acquire_ex(b, "sentinel:kept", 30000, 0, &lb, &rep);
    cr_assert_eq(rc, REDLOCK_ERR_TAKEN, "a fresh handle after the failovers: %s", rep.message);
    /* the killed masters come back as replicas; both handles lock again within seconds */
    for (int g = 0; g < 2; g++) {
        char addr[16];
        snprintf(addr, sizeof addr, "%d.%d", g, S.port[g][0] == old[g] ? 0 : 1);
        cr_assert_eq(sh("restart", addr), 0, "restart %s", addr);
    }
    for (int g = 0; g < 2; g++) cr_assert(await_replicas(g, 1, 20000), "group %d got no replica back", g);
    cr_assert(await_caught_up(a, 20000), "the holder's handle did not find the new masters");
    rc = redlock_release_ex(a, lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "the holder releases after the failovers: %s [%s | %s | %s]", rep.message,
                 rep.nodes[0].detail, rep.nodes[1].detail, rep.nodes[2].detail);
    redlock_t *h[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        char res[32];
        snprintf(res, sizeof res, "sentinel:again:%d", k);
        rc = redlock_acquire_ex(h[k], res, 10000, 10000, &lk, &rep);
        cr_assert_eq(rc, REDLOCK_OK, "handle %d after the failovers: %s [%s | %s | %s]", k, rep.message,
                     rep.nodes[0].detail, rep.nodes[1].detail, rep.nodes[2].detail);
        cr_assert_eq(redlock_release(h[k], lk), REDLOCK_OK);
    }
    redlock_free(a);
    redlock_free(b);
}

/* A master its sentinels think down while the handle still reaches it (a
 * partition between them: here its PINGs refused, which the sentinels
 * see and the handle never sends on a healthy connection). It keeps
 * accepting writes, and keeps the handle's connection, but its group fails
 * over: the sentinels' +switch-master announcement moves the handle to the
 * promoted replica, where its next votes are written. */
Test(sentinel, the_handle_follows_an_announced_failover_away_from_a_master_it_still_reaches) {
    rt_sleep_ms(2100);                        /* the servers run longer than max_ttl_ms: no restart quarantine */
    redlock_t *rl = groups_rl_ms(0, 0, 2000); /* a fresh handle's first call */
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
