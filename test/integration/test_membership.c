/* test_membership.c -- handles against the membership records of a change
 * of the node set (doc/membership.md), on real redis-server processes: in
 * each phase an old, a joint and a new handle are granted or refused as
 * the records say, the handles that may coexist exclude each other, an
 * old lock's extend is refused once the change advanced while its release
 * never is, a record written after a handle read none is obeyed within
 * the refresh interval, a record that cannot be read gives no vote, and
 * a handle that met a record hears the steps announced (one that met none
 * listens for nothing).
 *
 * The 5-node fixture holds both lists: OLD = {0, 1, 2} and NEW = {2, 3, 4}
 * (quorum 2 each). The test writes the records itself, as `redlock
 * membership` would (its steps are membership_steps.sh's), and deletes
 * them before and after each test: other tests share the fixture.
 * Built twice: blocking, and through the async API (RL_TEST_ASYNC). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "membership.h"
#include "rltest.h"
#include "uri.h"

static tc_cluster_t C;

/* Deletes every node's record (a test's own, or one a failed run left). */
static void clear_records(void) {
    for (int i = 0; i < 5; i++) tc_del(&C, i, RL_MEMBERSHIP_KEY);
}

static void setup(void) {
    rt_setup(&C);
    clear_records();
}

TestSuite(membership, .init = setup, .fini = clear_records, .timeout = 120);

typedef rt_list_t list_t;

static const list_t OLD = {3, {0, 1, 2}}, NEW = {3, {2, 3, 4}};

/* A handle over cur and, when next is not NULL, next; o: options (NULL:
 * the tests' defaults). */
static redlock_t *handle(const list_t *cur, const list_t *next, const redlock_options_t *o) {
    return rt_new_lists(&C, cur, next, o);
}

/* The fingerprint of list l and its identities, as the tool computes them. */
static void list_print(const list_t *l, char fp[RL_FP_HEX + 1], char *ids, size_t n) {
    rl_uri_t u[5];
    for (size_t i = 0; i < l->n; i++) cr_assert_eq(rl_uri_parse(C.uri[l->at[i]], &u[i], NULL, 0), REDLOCK_OK);
    cr_assert_eq(rl_fingerprint(u, l->n, fp), 0);
    cr_assert_eq(rl_identity_list(u, l->n, ids, n), 0);
    for (size_t i = 0; i < l->n; i++) rl_uri_clear(&u[i]);
}

/* Writes node i's record of the change OLD -> NEW in phase p. */
static void put_record(int i, rl_phase_t p) {
    char old_fp[RL_FP_HEX + 1], new_fp[RL_FP_HEX + 1], old_ids[1024], new_ids[1024], buf[64];
    list_print(&OLD, old_fp, old_ids, sizeof old_ids);
    list_print(&NEW, new_fp, new_ids, sizeof new_ids);
    rl_record_t rec;
    rl_record_make(&rec, p, old_fp, new_fp, old_ids, new_ids, 1);
    const char *argv[2 + 2 * RL_RECORD_FIELDS] = {"HSET", RL_MEMBERSHIP_KEY};
    size_t lens[2 + 2 * RL_RECORD_FIELDS] = {4, sizeof RL_MEMBERSHIP_KEY - 1};
    size_t n = rl_record_fields(&rec, buf, argv + 2, lens + 2);
    tc_del(&C, i, RL_MEMBERSHIP_KEY);
    redisContext *ctx = tc_connect(&C, i);
    cr_assert_not_null(ctx, "node %d: no connection", i);
    redisReply *r = redisCommandArgv(ctx, (int)n + 2, argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "node %d: HSET of the record failed", i);
    freeReplyObject(r);
    redisFree(ctx);
}

/* Every node takes its record of phase p; with p FINISHED the nodes that
 * left (in OLD only) take LEFT, as `finish` writes them. */
static void phase(rl_phase_t p) {
    for (int i = 0; i < 5; i++) put_record(i, p == RL_PHASE_FINISHED && i < 2 ? RL_PHASE_LEFT : p);
}

/* The nodes that hold key, of any type, once that is want (or after 2 s:
 * a call returns at its quorum, the other nodes' writes land later). */
static int nodes_with(const char *key, int want) {
    int n = -1;
    for (int t = 0; t < 200 && n != want; t++) {
        if (t) rt_sleep_ms(10);
        n = 0;
        for (int i = 0; i < 5; i++) {
            redisContext *ctx = tc_connect(&C, i);
            redisReply *r = ctx ? redisCommand(ctx, "EXISTS %s", key) : NULL;
            n += r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
            if (r) freeReplyObject(r);
            if (ctx) redisFree(ctx);
        }
    }
    return n;
}

/* 1 when a node's detail in rep says what. */
static int said(const redlock_report_t *rep, const char *what) {
    for (size_t i = 0; i < rep->n_nodes; i++)
        if (strstr(rep->nodes[i].detail, what)) return 1;
    return 0;
}

/* The outcome of a fresh acquire of key through rl, released at once when
 * granted; a refusal must be the membership records', with every
 * refusing node's vote of that kind and a detail that says what it
 * accepts. */
static int try_lock(redlock_t *rl, const char *key) {
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    int rc = redlock_acquire_ex(rl, key, 10000, 0, &lk, &rep);
    if (rc == REDLOCK_OK) {
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
        cr_assert_eq(tc_await_count(&C, key, NULL, 0), 0, "a release left keys of %s", key);
        return rc;
    }
    cr_assert_eq(rc, REDLOCK_ERR_MEMBERSHIP, "%s: %s (%s)", key, redlock_strerror(rc), rep.message);
    size_t refused = 0;
    for (size_t i = 0; i < rep.n_nodes; i++) {
        if (rep.nodes[i].vote != REDLOCK_VOTE_MEMBERSHIP) continue;
        refused++;
        cr_assert_eq(rep.nodes[i].err, REDLOCK_ERR_MEMBERSHIP);
        cr_assert(strstr(rep.nodes[i].detail, "membership record (phase ") && strstr(rep.nodes[i].detail, " accepts "),
                  "node %zu: %s", i, rep.nodes[i].detail);
    }
    cr_assert_geq(refused, 2u, "%zu membership votes: %s", refused, rep.message);
    cr_assert_eq(nodes_with(key, 0), 0, "a refused acquire left keys of %s", key);
    return rc;
}

/* Checks which of the old, joint and new handles a phase grants. */
static void check_phase(rl_phase_t p, int old_ok, int joint_ok, int new_ok) {
    if (p != RL_PHASE_NONE) phase(p);
    redlock_t *old = handle(&OLD, NULL, NULL), *joint = handle(&OLD, &NEW, NULL), *new = handle(&NEW, NULL, NULL);
    const char *name = rl_phase_name(p);
    cr_assert_eq(try_lock(old, "mem:old") == REDLOCK_OK, old_ok, "phase %s: old handle %s", name,
                 old_ok ? "refused" : "granted");
    cr_assert_eq(try_lock(joint, "mem:joint") == REDLOCK_OK, joint_ok, "phase %s: joint handle %s", name,
                 joint_ok ? "refused" : "granted");
    cr_assert_eq(try_lock(new, "mem:new") == REDLOCK_OK, new_ok, "phase %s: new handle %s", name,
                 new_ok ? "refused" : "granted");
    redlock_free(old);
    redlock_free(joint);
    redlock_free(new);
}

Test(membership, without_records_every_list_is_granted) {
    check_phase(RL_PHASE_NONE, 1, 1, 1);
}

Test(membership, begun_grants_old_and_joint_handles_only) {
    check_phase(RL_PHASE_BEGUN, 1, 1, 0);
}

Test(membership, joint_grants_joint_handles_only) {
    check_phase(RL_PHASE_JOINT, 0, 1, 0);
}

Test(membership, advanced_grants_joint_and_new_handles_only) {
    check_phase(RL_PHASE_ADVANCED, 0, 1, 1);
}

Test(membership, finished_grants_new_handles_only) {
    check_phase(RL_PHASE_FINISHED, 0, 0, 1);
}

/* a holds key; b is refused while it does, and granted once a released. */
static void excludes(redlock_t *a, redlock_t *b, const char *key) {
    redlock_lock_t *la = NULL, *lb = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(a, key, 10000, 0, &la, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_acquire_ex(b, key, 10000, 0, &lb, &rep), REDLOCK_ERR_TAKEN, "two holders of %s: %s", key,
                 rep.message);
    cr_assert_eq(redlock_release(a, la), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_ex(b, key, 10000, 0, &lb, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(b, lb), REDLOCK_OK);
}

Test(membership, the_handles_a_phase_grants_exclude_each_other) {
    redlock_t *old = handle(&OLD, NULL, NULL), *joint = handle(&OLD, &NEW, NULL), *new = handle(&NEW, NULL, NULL);
    phase(RL_PHASE_BEGUN);
    excludes(old, joint, "mem:x:begun1");
    excludes(joint, old, "mem:x:begun2");
    phase(RL_PHASE_ADVANCED);
    excludes(joint, new, "mem:x:adv1");
    excludes(new, joint, "mem:x:adv2");
    redlock_free(old);
    redlock_free(joint);
    redlock_free(new);
}

Test(membership, an_old_lock_cannot_be_extended_after_advance_but_is_released) {
    redlock_t *old = handle(&OLD, NULL, NULL);
    redlock_lock_t *lk = NULL;
    phase(RL_PHASE_BEGUN);
    cr_assert_eq(redlock_acquire(old, "mem:ext", 10000, &lk), REDLOCK_OK);
    cr_assert_eq(redlock_extend(old, lk, 10000), REDLOCK_OK, "begun accepts the old list");
    phase(RL_PHASE_JOINT);
    redlock_report_t rep;
    cr_assert_eq(redlock_extend_ex(old, lk, 10000, &rep), REDLOCK_ERR_MEMBERSHIP, "%s", rep.message);
    cr_assert(said(&rep, "still uses the old list"), "%s", rep.message);
    cr_assert_eq(tc_await_count(&C, "mem:ext", redlock_lock_token(lk), 3), 3, "the refused extend dropped the key");
    cr_assert_eq(redlock_release_ex(old, lk, &rep), REDLOCK_OK, "a release was refused: %s", rep.message);
    cr_assert_eq(tc_await_count(&C, "mem:ext", NULL, 0), 0, "the release left keys");
    redlock_free(old);
}

Test(membership, a_record_written_after_a_read_of_none_is_obeyed_within_the_refresh) {
    redlock_t *old = handle(&OLD, NULL, NULL);
    cr_assert_eq(try_lock(old, "mem:late1"), REDLOCK_OK); /* (the handle read no record) */
    phase(RL_PHASE_JOINT);
    rt_sleep_ms(RL_RECORD_REFRESH_MS + 100);
    cr_assert_eq(try_lock(old, "mem:late2"), REDLOCK_ERR_MEMBERSHIP, "the old handle ignored the new records");
    clear_records();
    redlock_free(old);
}

Test(membership, the_refusal_names_the_handles_list_by_its_fingerprint) {
    char old_fp[RL_FP_HEX + 1], ids[1024];
    list_print(&OLD, old_fp, ids, sizeof ids);
    phase(RL_PHASE_ADVANCED);
    redlock_t *old = handle(&OLD, NULL, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(old, "mem:fp", 10000, 0, &lk, &rep), REDLOCK_ERR_MEMBERSHIP);
    char want[64];
    snprintf(want, sizeof want, "this handle uses OLD (%s)", old_fp);
    cr_assert(said(&rep, want), "no node says '%s'", want);
    cr_assert(said(&rep, "accepts JOINT and NEW only"), "%s", rep.message);
    redlock_free(old);
}

Test(membership, every_kind_of_grant_is_refused) {
    redlock_options_t fenced;
    rt_options(&fenced);
    fenced.fencing = 1;
    phase(RL_PHASE_JOINT);
    redlock_t *old = handle(&OLD, NULL, NULL), *oldf = handle(&OLD, NULL, &fenced),
              *jointf = handle(&OLD, &NEW, &fenced);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(oldf, "mem:kind:f", 10000, 0, &lk, &rep), REDLOCK_ERR_MEMBERSHIP, "fenced: %s",
                 rep.message);
    cr_assert_eq(redlock_acquire_ex(jointf, "mem:kind:f", 10000, 0, &lk, &rep), REDLOCK_OK, "fenced joint: %s",
                 rep.message);
    cr_assert_gt(redlock_lock_fence(lk), 0);
    cr_assert_eq(redlock_release(jointf, lk), REDLOCK_OK);
    cr_assert_eq(redlock_acquire_permit(old, "mem:kind:p", 2, 10000, 0, &lk, &rep), REDLOCK_ERR_MEMBERSHIP,
                 "permit: %s", rep.message);
    cr_assert_eq(redlock_acquire_shared(old, "mem:kind:r", 10000, 0, &lk, &rep), REDLOCK_ERR_MEMBERSHIP, "reader: %s",
                 rep.message);
    cr_assert_eq(redlock_acquire_ex(old, "mem:kind:w", 10000, 1000, &lk, &rep), REDLOCK_ERR_MEMBERSHIP,
                 "waiting acquire: %s", rep.message);
#ifndef RL_TEST_ASYNC
    const char *res[2] = {"mem:kind:s1", "mem:kind:s2"};
    cr_assert_eq(redlock_acquire_multi(old, res, 2, 10000, 0, &lk, &rep), REDLOCK_ERR_MEMBERSHIP, "set: %s",
                 rep.message);
#endif
    const char *keys[] = {"mem:kind:p:permit:0", "mem:kind:p:permit:1", "mem:kind:r", "mem:kind:w", "mem:kind:s1"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        cr_assert_eq(nodes_with(keys[k], 0), 0, "%s was written", keys[k]);
    redlock_free(old);
    redlock_free(oldf);
    redlock_free(jointf);
}

Test(membership, a_record_that_cannot_be_read_gives_no_vote) {
    /* a phase of no name, a string, a record without its accepts field */
    cr_assert_eq(tc_redis_cmd(&C, 0, "HSET %s phase %s accepts %s", RL_MEMBERSHIP_KEY, "sideways", "x"), 0);
    cr_assert_eq(tc_set(&C, 1, RL_MEMBERSHIP_KEY, "not a hash", 0), 0);
    cr_assert_eq(tc_redis_cmd(&C, 2, "HSET %s phase %s", RL_MEMBERSHIP_KEY, "joint"), 0);
    redlock_t *old = handle(&OLD, NULL, NULL);
    redlock_lock_t *lk = NULL;
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(old, "mem:bad", 10000, 0, &lk, &rep), REDLOCK_ERR_MEMBERSHIP, "%s", rep.message);
    for (size_t i = 0; i < rep.n_nodes; i++) {
        if (rep.nodes[i].vote == REDLOCK_VOTE_NONE) continue;
        cr_assert_eq(rep.nodes[i].vote, REDLOCK_VOTE_MEMBERSHIP, "node %zu: %s", i, rep.nodes[i].detail);
        cr_assert(strstr(rep.nodes[i].detail, "cannot be read"), "node %zu: %s", i, rep.nodes[i].detail);
    }
    cr_assert_eq(nodes_with("mem:bad", 0), 0, "an unreadable record granted");
    redlock_free(old);
}

/* Messages of the handle's log that say a membership step was announced. */
static atomic_int announced;
static void count_announced(void *arg, int level, const char *msg) {
    (void)arg;
    (void)level;
    if (strstr(msg, "a membership step was announced")) atomic_fetch_add(&announced, 1);
}

/* How many clients of node i listen on the steps' channel, once that is
 * want (or after 10 s: the handle subscribes after the call that met a
 * record has returned). */
static long listeners(int i, long want) {
    long n = -1;
    for (int t = 0; t < 1000 && n != want; t++) {
        if (t) rt_sleep_ms(10);
        redisContext *ctx = tc_connect(&C, i);
        redisReply *r = ctx ? redisCommand(ctx, "PUBSUB NUMSUB %s", RL_MEMBERSHIP_CHANNEL) : NULL;
        n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER
                ? (long)r->element[1]->integer
                : -1;
        if (r) freeReplyObject(r);
        if (ctx) redisFree(ctx);
    }
    return n;
}

Test(membership, a_handle_listens_for_the_steps_once_it_met_a_record_and_not_before) {
    redlock_options_t o;
    rt_options(&o);
    o.log = count_announced;
    o.log_level = REDLOCK_LOG_INFO;
    atomic_store(&announced, 0);
    redlock_t *old = handle(&OLD, NULL, &o);
    cr_assert_eq(try_lock(old, "mem:watch1"), REDLOCK_OK);
    rt_sleep_ms(300);
    for (size_t k = 0; k < OLD.n; k++)
        cr_assert_eq(listeners(OLD.at[k], 0), 0, "node %d: listened on without a record", OLD.at[k]);
    phase(RL_PHASE_BEGUN);
    rt_sleep_ms(RL_RECORD_REFRESH_MS + 100); /* the next write reads the records */
    cr_assert_eq(try_lock(old, "mem:watch2"), REDLOCK_OK, "begun refused an old handle");
    for (size_t k = 0; k < OLD.n; k++)
        cr_assert_eq(listeners(OLD.at[k], 1), 1, "node %d: no listener after the handle met its record", OLD.at[k]);
    cr_assert_eq(tc_redis_cmd(&C, OLD.at[1], "PUBLISH %s %s", RL_MEMBERSHIP_CHANNEL, "a-step"), 0);
    for (int t = 0; t < 1000 && atomic_load(&announced) == 0; t++) rt_sleep_ms(10);
    cr_assert_eq(atomic_load(&announced), 1, "the handle logged %d announcements of one step", atomic_load(&announced));
    redlock_free(old);
    for (size_t k = 0; k < OLD.n; k++)
        cr_assert_eq(listeners(OLD.at[k], 0), 0, "node %d: still listened on after the handle was freed", OLD.at[k]);
}
