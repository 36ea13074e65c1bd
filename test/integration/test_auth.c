/* test_auth.c -- AUTH and ACL against real masters: a password, an ACL user
 * restricted to the lock commands and a key pattern, and the failures
 * (wrong password, no password, NOPERM) reported per node as
 * REDLOCK_ERR_AUTH, never leaking the password. The settings are made
 * with CONFIG SET / ACL SETUSER and undone at the end (a failed test's
 * leftovers are cleared by the next test's heal, which restarts nodes). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rltest.h"
#include "waiting.h"

#define PASS "s3cret-Pa55"

static tc_cluster_t C;
static char logbuf[16384];

static void setup(void) {
    rt_setup(&C);
    logbuf[0] = '\0';
}

TestSuite(auth, .init = setup, .timeout = 60);

/* Collects every log line, to check that no secret is in any of them. */
static void collect(void *arg, int level, const char *msg) {
    (void)arg;
    (void)level;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", msg);
}

/* Runs a command on node i, authenticating with pass when non-NULL. */
static int admin(int i, const char *pass, const char *fmt, ...) {
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", C.port[i], (struct timeval){1, 0});
    cr_assert(ctx && !ctx->err, "node %d unreachable", i);
    if (pass) freeReplyObject(redisCommand(ctx, "AUTH %s", pass));
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    int ok = r && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    redisFree(ctx);
    return ok ? 0 : -1;
}

/* A redlock_t over the 5 nodes with URIs made from fmt (one %d: the
 * port); with poll_ms, its callers wait (retrying every poll_ms); with
 * fencing, its locks get fencing tokens. */
static redlock_t *rl_make(const char *fmt, uint32_t poll_ms, int fencing) {
    static char uris[5][160];
    const char *u[5];
    for (int i = 0; i < 5; i++) {
        snprintf(uris[i], sizeof uris[i], fmt, C.port[i]);
        u[i] = uris[i];
    }
    redlock_options_t o;
    rt_options(&o);
    o.nodes = u;
    o.n_nodes = 5;
    o.log = collect;
    o.log_level = REDLOCK_LOG_DEBUG;
    o.fencing = fencing;
    if (poll_ms) { /* a waiter: polls every poll_ms, else woken by releases */
        o.retry_count = 100;
        o.retry_delay_ms = poll_ms;
        o.retry_jitter_ms = 0;
        o.op_timeout_ms = 1000;
    }
    redlock_t *rl = NULL;
    char err[256];
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    return rl;
}

static redlock_t *rl_waiting_with(const char *fmt, uint32_t poll_ms) {
    return rl_make(fmt, poll_ms, 0);
}

/* The same with no retries. */
static redlock_t *rl_with(const char *fmt) {
    return rl_make(fmt, 0, 0);
}

/* Asserts that the report and the log hold no trace of the secret. */
static void assert_no_secret(const redlock_report_t *rep, const char *secret) {
    cr_assert_null(strstr(rep->message, secret), "message leaks it: %s", rep->message);
    for (size_t i = 0; i < rep->n_nodes; i++) {
        cr_assert_null(strstr(rep->nodes[i].node, secret), "node name leaks it: %s", rep->nodes[i].node);
        cr_assert_null(strstr(rep->nodes[i].detail, secret), "detail leaks it: %s", rep->nodes[i].detail);
    }
    cr_assert_null(strstr(logbuf, secret), "log leaks it:\n%s", logbuf);
}

/* Asserts that every node failed the call with an AUTH error whose words
 * contain `word`. */
static void assert_auth_failure(int rc, const redlock_report_t *rep, const char *word) {
    cr_assert_eq(rc, REDLOCK_ERR_AUTH, "got %s: %s", redlock_strerror(rc), rep->message);
    for (size_t i = 0; i < 5; i++) {
        const redlock_node_report_t *n = &rep->nodes[i];
        if (n->vote == REDLOCK_VOTE_NONE) continue;
        cr_assert_eq(n->vote, REDLOCK_VOTE_ERROR, "node %zu voted %s", i, redlock_vote_name(n->vote));
        cr_assert_eq(n->err, REDLOCK_ERR_AUTH, "node %zu: %s", i, n->detail);
        cr_assert(strstr(n->detail, word), "node %zu detail '%s' lacks '%s'", i, n->detail, word);
    }
}

Test(auth, password_protected_masters) {
    for (int i = 0; i < 5; i++) cr_assert_eq(admin(i, NULL, "CONFIG SET requirepass %s", PASS), 0);
    redlock_report_t rep;
    redlock_lock_t *lk = NULL;

    redlock_t *good = rl_with("redis://:" PASS "@127.0.0.1:%d");
    cr_assert_eq(redlock_acquire_ex(good, "a:res", 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_extend(good, lk, 5000), REDLOCK_OK);
    cr_assert_eq(redlock_release_ex(good, lk, &rep), REDLOCK_OK, "%s", rep.message);
    assert_no_secret(&rep, PASS);
    /* the waiters' subscriber connections authenticate too: a release wakes one long before its 2 s poll */
    redlock_t *waiter = rl_waiting_with("redis://:" PASS "@127.0.0.1:%d", 2000);
    uint64_t ms = handoff_ms(good, waiter, "a:wake", NULL);
    cr_assert_lt(ms, 500, "granted %llu ms after the release", (unsigned long long)ms);
    redlock_free(waiter);
    redlock_free(good);

    redlock_t *wrong = rl_with("redis://:not-the-" PASS "@127.0.0.1:%d");
    int rc = redlock_acquire_ex(wrong, "a:res", 5000, 0, &lk, &rep);
    assert_auth_failure(rc, &rep, "AUTH refused");
    assert_no_secret(&rep, "not-the-");
    redlock_free(wrong);

    redlock_t *none = rl_with("redis://127.0.0.1:%d");
    rc = redlock_acquire_ex(none, "a:res", 5000, 0, &lk, &rep);
    assert_auth_failure(rc, &rep, "NOAUTH");
    redlock_free(none);

    for (int i = 0; i < 5; i++) cr_assert_eq(admin(i, PASS, "CONFIG SET requirepass %s", ""), 0);
}

Test(auth, acl_user_limited_to_lock_commands_and_keys) {
    for (int i = 0; i < 5; i++)
        cr_assert_eq(admin(i, NULL,
                           "ACL SETUSER locker reset on >%s ~lock:* resetchannels -@all +set +get +del +pexpire "
                           "+exists +eval +evalsha +script|load",
                           PASS),
                     0, "node %d", i);
    redlock_report_t rep;
    redlock_lock_t *lk = NULL;
    redlock_t *rl = rl_with("redis://locker:" PASS "@127.0.0.1:%d");

    cr_assert_eq(redlock_acquire_ex(rl, "lock:a", 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_extend_ex(rl, lk, 5000, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release_ex(rl, lk, &rep), REDLOCK_OK, "%s", rep.message);
    const char *set[] = {"lock:m1", "lock:m2"};
    cr_assert_eq(redlock_acquire_multi(rl, set, 2, 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);

    /* waiting needs nothing more: the release's PUBLISH and the waiting
     * attempt's PTTL are allowed to fail (no wake-up hint, no error) */
    redlock_lock_t *held = NULL, *other = NULL;
    cr_assert_eq(redlock_acquire_ex(rl, "lock:w", 5000, 0, &held, &rep), REDLOCK_OK, "%s", rep.message);
    redlock_t *rl2 = rl_with("redis://locker:" PASS "@127.0.0.1:%d");
    cr_assert_eq(redlock_acquire_ex(rl2, "lock:w", 5000, 300, &other, &rep), REDLOCK_ERR_TAKEN, "%s", rep.message);
    redlock_free(rl2);
    cr_assert_eq(redlock_release_ex(rl, held, &rep), REDLOCK_OK, "%s", rep.message);

    /* a key outside the pattern: NOPERM from every node */
    int rc = redlock_acquire_ex(rl, "other:a", 5000, 0, &lk, &rep);
    assert_auth_failure(rc, &rep, "NOPERM");
    assert_no_secret(&rep, PASS);
    redlock_free(rl);

    redlock_t *bad = rl_with("redis://locker:wrong@127.0.0.1:%d");
    rc = redlock_acquire_ex(bad, "lock:a", 5000, 0, &lk, &rep);
    assert_auth_failure(rc, &rep, "AUTH refused");
    redlock_free(bad);

    for (int i = 0; i < 5; i++) cr_assert_eq(admin(i, NULL, "ACL DELUSER locker"), 0);
}

Test(auth, fencing_needs_multi_exec_and_time_for_an_acl_user) {
    for (int i = 0; i < 5; i++)
        cr_assert_eq(admin(i, NULL,
                           "ACL SETUSER locker reset on >%s ~lock:* resetchannels -@all +set +get +del +pexpire "
                           "+exists +eval +evalsha +script|load",
                           PASS),
                     0, "node %d", i);
    redlock_report_t rep;
    redlock_lock_t *lk = NULL;
    redlock_t *rl = rl_make("redis://locker:" PASS "@127.0.0.1:%d", 0, 1);
    /* the fenced attempt is MULTI, SET NX PX, GET, TIME, EXEC: MULTI and EXEC refused, the SET ran alone */
    int rc = redlock_acquire_ex(rl, "lock:f", 5000, 0, &lk, &rep);
    assert_auth_failure(rc, &rep, "NOPERM");
    assert_auth_failure(rc, &rep, "+multi +exec +time");
    cr_assert_null(lk);
    uint64_t until = rt_now_us() + 2000000u; /* the attempt's clean-up goes out unwaited */
    int left = 5;
    while (left && rt_now_us() < until) {
        left = 0;
        for (int i = 0; i < 5; i++) {
            char *v = tc_get(&C, i, "lock:f");
            left += v != NULL;
            free(v);
        }
        if (left) rt_sleep_ms(10);
    }
    cr_assert_eq(left, 0, "the clean-up left the lock's key on %d nodes", left);

    for (int i = 0; i < 5; i++) cr_assert_eq(admin(i, NULL, "ACL SETUSER locker +multi +exec +time +incrby"), 0);
    cr_assert_eq(redlock_acquire_ex(rl, "lock:f", 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_gt(redlock_lock_fence(lk), 0);
    cr_assert_eq(redlock_release_ex(rl, lk, &rep), REDLOCK_OK, "%s", rep.message);
    assert_no_secret(&rep, PASS);
    redlock_free(rl);
    for (int i = 0; i < 5; i++) cr_assert_eq(admin(i, NULL, "ACL DELUSER locker"), 0);
}

Test(auth, a_minority_with_bad_credentials_is_a_failed_vote_with_reason) {
    for (int i = 0; i < 2; i++) cr_assert_eq(admin(i, NULL, "CONFIG SET requirepass %s", PASS), 0);
    redlock_t *rl = rl_with("redis://127.0.0.1:%d");
    redlock_report_t rep;
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire_ex(rl, "a:minority", 5000, 0, &lk, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    /* the release waited for nothing from nodes 0-1; a fresh call reports them */
    cr_assert_eq(redlock_acquire_ex(rl, "a:minority", 5000, 0, &lk, &rep), REDLOCK_OK);
    for (int i = 0; i < 2; i++)
        if (rep.nodes[i].vote != REDLOCK_VOTE_NONE)
            cr_assert(rep.nodes[i].err == REDLOCK_ERR_AUTH, "node %d: %s %s", i, redlock_vote_name(rep.nodes[i].vote),
                      rep.nodes[i].detail);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    redlock_free(rl);
    for (int i = 0; i < 2; i++) cr_assert_eq(admin(i, PASS, "CONFIG SET requirepass %s", ""), 0);
}
