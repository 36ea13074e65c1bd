/* test_options.c -- option defaults and every bad-input path of the public
 * API (doc/design.md, "The public API"), no server.
 *
 * Node URIs point at 127.0.0.1 ports 1..3, where nothing listens. That is
 * safe because redlock_new connects lazily and every argument check runs
 * before any I/O: a bad call must come back with REDLOCK_ERR_INVALID or
 * REDLOCK_ERR_CONFIG and a message naming the bad value, without a single
 * node being asked (the report's per-node votes stay NONE). The few calls
 * that are meant to pass validation then fail fast with NO_QUORUM
 * (connection refused, retry_count 0).
 *
 * Extend and release need a lock, which needs a server; the checks that
 * run before any I/O are exercised with a handle made by the library's
 * internal constructor rl_lock_new (src/core/rl.h), as if an acquire had
 * succeeded.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redlock.h"
#include "rl.h"

TestSuite(options, .timeout = 30);
TestSuite(request, .timeout = 30);
TestSuite(handles, .timeout = 30);

/* ---- helpers ------------------------------------------------------------ */

#define SECRET "hunter2secret"

static const char *const NODES3[] = {"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"};

/* Defaults plus three nodes where nothing listens. */
static redlock_options_t opts3(void) {
    redlock_options_t o;
    redlock_options_init(&o);
    o.nodes = NODES3;
    o.n_nodes = 3;
    return o;
}

/* A non-NULL value for *out, so a test sees whether a failing call reset it. */
static char sentinel_obj;
#define SENTINEL_RL ((redlock_t *)(void *)&sentinel_obj)
#define SENTINEL_LOCK ((redlock_lock_t *)(void *)&sentinel_obj)

/* The message of the last expect_new_fail. */
static char last_err[256];

/* Expects redlock_new_ex(opt) to fail with `want`, leave *out NULL and write
 * a NUL-terminated message holding every string of `needles` (NULL-ended);
 * then expects the same code and *out NULL from redlock_new. `what` names
 * the case in failure messages. */
static void expect_new_fail(const redlock_options_t *opt, int want, const char *what, const char *const *needles) {
    char err[256];
    memset(err, 'Z', sizeof err);
    redlock_t *rl = SENTINEL_RL;
    int rc = redlock_new_ex(&rl, opt, err, sizeof err);
    cr_assert_not_null(memchr(err, '\0', sizeof err), "%s: message is not NUL-terminated", what);
    cr_assert_eq(rc, want, "%s: redlock_new_ex returned %d (%s), want %d (%s); message '%s'", what, rc,
                 redlock_strerror(rc), want, redlock_strerror(want), err);
    cr_assert_null(rl, "%s: *out is not NULL after a failed redlock_new_ex", what);
    for (const char *const *n = needles; n && *n; n++)
        cr_assert_not_null(strstr(err, *n), "%s: message '%s' does not name '%s'", what, err, *n);
    snprintf(last_err, sizeof last_err, "%s", err);

    rl = SENTINEL_RL;
    rc = redlock_new(&rl, opt);
    cr_assert_eq(rc, want, "%s: redlock_new returned %d, want %d", what, rc, want);
    cr_assert_null(rl, "%s: *out is not NULL after a failed redlock_new", what);
}

/* Expects redlock_new_ex(opt) to succeed with an empty message; frees it. */
static void expect_new_ok(const redlock_options_t *opt, const char *what) {
    char err[256] = "untouched";
    redlock_t *rl = NULL;
    int rc = redlock_new_ex(&rl, opt, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "%s: redlock_new_ex returned %d (%s): '%s'", what, rc, redlock_strerror(rc), err);
    cr_assert_not_null(rl, "%s: *out is NULL after success", what);
    cr_assert_str_empty(err, "%s: message '%s' after success", what, err);
    redlock_free(rl);
}

/* A redlock_t over NODES3 that never retries. */
static redlock_t *make_rl(void) {
    redlock_options_t o = opts3();
    o.retry_count = 0;
    redlock_t *rl = NULL;
    char err[256];
    int rc = redlock_new_ex(&rl, &o, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_new_ex: %s", err);
    return rl;
}

/* Log callback capture. */
static struct {
    int calls;
    int level;
    void *arg;
    char msg[512];
} logged;

static void capture_log(void *arg, int level, const char *msg) {
    logged.calls++;
    logged.level = level;
    logged.arg = arg;
    snprintf(logged.msg, sizeof logged.msg, "%s", msg);
}

/* A lock handle owned by `owner`, valid for validity_ms more (negative:
 * expired that long ago), made without any server by the library's own
 * constructor (src/core/lock.c). */
static redlock_lock_t *forge_lock(redlock_t *owner, const char *resource, int64_t validity_ms) {
    const char *k[1] = {resource};
    size_t len[1] = {strlen(resource)};
    rl_keys_t keys = {1, k, len};
    char token[REDLOCK_TOKEN_LEN + 1];
    for (int i = 0; i < REDLOCK_TOKEN_LEN; i++) token[i] = "0123456789abcdef"[i % 16];
    token[REDLOCK_TOKEN_LEN] = '\0';
    uint64_t now = rl_clock_monotonic_us();
    uint64_t deadline = validity_ms >= 0 ? now + (uint64_t)validity_ms * 1000u : now - (uint64_t)(-validity_ms) * 1000u;
    redlock_lock_t *lk = rl_lock_new(owner, &keys, token, 10000, now, deadline);
    cr_assert_not_null(lk);
    return lk;
}

/* Checks that a report says a call was refused before any node was asked. */
static void assert_no_node_asked(const redlock_report_t *rep, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(rep->nodes[i].vote, REDLOCK_VOTE_NONE, "%s: node %zu voted %s on bad input", what, i,
                     redlock_vote_name(rep->nodes[i].vote));
        cr_assert_eq(rep->nodes[i].rtt_us, -1, "%s: node %zu has an rtt on bad input", what, i);
    }
}

/* ---- redlock_options_init ----------------------------------------------- */

Test(options, init_null_is_safe) {
    redlock_options_init(NULL);
}

Test(options, init_sets_documented_defaults) {
    redlock_options_t o;
    memset(&o, 0xA5, sizeof o); /* every field must be written, not left over */
    redlock_options_init(&o);
    cr_assert_null(o.nodes);
    cr_assert_eq(o.n_nodes, 0);
    cr_assert_eq(o.connect_timeout_ms, 100);
    cr_assert_eq(o.op_timeout_ms, 50);
    cr_assert_eq(o.drift_factor, 0.01);
    cr_assert_eq(o.drift_min_ms, 2);
    cr_assert_eq(o.retry_count, 3);
    cr_assert_eq(o.retry_delay_ms, 200);
    cr_assert_eq(o.retry_jitter_ms, REDLOCK_RETRY_JITTER_AUTO);
    cr_assert_eq(o.node_down_ms, 1000);
    cr_assert_eq(o.reconnect_min_ms, 50);
    cr_assert_eq(o.reconnect_max_ms, 1000);
    cr_assert_eq(o.max_inflight, 4096);
    cr_assert_null(o.log);
    cr_assert_null(o.log_arg);
    cr_assert_eq(o.log_level, REDLOCK_LOG_WARN);
    cr_assert_eq(o.reentrant, 1);
    cr_assert_eq(o.quarantine, 1);
    cr_assert_eq(o.clock_jump_ms, 100);
    cr_assert_eq(o.clock_check_ms, 1000);
}

/* ---- redlock_new: NULL arguments ---------------------------------------- */

Test(options, new_null_out) {
    redlock_options_t o = opts3();
    char err[256] = "";
    cr_assert_eq(redlock_new_ex(NULL, &o, err, sizeof err), REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(err, "out is NULL"), "message '%s'", err);
    cr_assert_eq(redlock_new(NULL, &o), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_new(NULL, NULL), REDLOCK_ERR_INVALID);
}

Test(options, new_null_options) {
    expect_new_fail(NULL, REDLOCK_ERR_INVALID, "NULL options", (const char *[]){"options are NULL", NULL});
}

Test(options, new_err_buffer_may_be_null_or_tiny) {
    redlock_options_t o = opts3();
    o.op_timeout_ms = 0;
    redlock_t *rl = SENTINEL_RL;
    cr_assert_eq(redlock_new_ex(&rl, &o, NULL, 0), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);
    rl = SENTINEL_RL;
    cr_assert_eq(redlock_new_ex(&rl, &o, NULL, 100), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);

    struct {
        char err[8];
        char guard[32];
    } b;
    memset(&b, 'G', sizeof b);
    rl = SENTINEL_RL;
    cr_assert_eq(redlock_new_ex(&rl, &o, b.err, 1), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);
    cr_assert_eq(b.err[0], '\0', "errlen 1 must hold just the terminator");
    for (size_t i = 1; i < sizeof b.err; i++) cr_assert_eq(b.err[i], 'G', "errlen 1: byte %zu written", i);

    memset(&b, 'G', sizeof b);
    rl = SENTINEL_RL;
    cr_assert_eq(redlock_new_ex(&rl, &o, b.err, sizeof b.err), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);
    cr_assert_not_null(memchr(b.err, '\0', sizeof b.err), "truncated message is not NUL-terminated");
    cr_assert_eq(strncmp(b.err, "op_time", 7), 0, "truncated message '%s'", b.err);
    for (size_t i = 0; i < sizeof b.guard; i++) cr_assert_eq(b.guard[i], 'G', "byte %zu past errlen written", i);
}

/* ---- redlock_new: node lists -------------------------------------------- */

Test(options, zero_nodes) {
    redlock_options_t o = opts3();
    o.nodes = NULL;
    o.n_nodes = 0;
    expect_new_fail(&o, REDLOCK_ERR_CONFIG, "nodes NULL, n_nodes 0", (const char *[]){"n_nodes=0", NULL});

    o = opts3();
    o.n_nodes = 0;
    expect_new_fail(&o, REDLOCK_ERR_CONFIG, "n_nodes 0", (const char *[]){"n_nodes=0", NULL});

    o = opts3();
    o.nodes = NULL;
    expect_new_fail(&o, REDLOCK_ERR_CONFIG, "nodes NULL, n_nodes 3", (const char *[]){"nodes=NULL", NULL});
}

Test(options, too_many_nodes) {
    static char uris[REDLOCK_MAX_NODES + 1][32];
    static const char *ptrs[REDLOCK_MAX_NODES + 1];
    for (int i = 0; i <= REDLOCK_MAX_NODES; i++) {
        snprintf(uris[i], sizeof uris[i], "redis://127.0.0.1:%d", i + 1);
        ptrs[i] = uris[i];
    }
    redlock_options_t o = opts3();
    o.nodes = ptrs;
    o.n_nodes = REDLOCK_MAX_NODES + 1;
    expect_new_fail(&o, REDLOCK_ERR_CONFIG, "65 nodes", (const char *[]){"n_nodes=65", NULL});

    o.n_nodes = REDLOCK_MAX_NODES; /* the limit itself is fine */
    expect_new_ok(&o, "64 nodes");
    o.n_nodes = 1; /* and so is a single instance */
    expect_new_ok(&o, "1 node");
}

Test(options, duplicate_nodes) {
    static const struct {
        const char *nodes[4];
        size_t n;
        const char *names; /* the duplicate, as the message must name it */
    } cases[] = {
        {{"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:1"}, 3, "'redis://127.0.0.1:1'"},
        {{"redis://127.0.0.1:1", "redis://127.0.0.1:1/3"}, 2, "'redis://127.0.0.1:1/3'"},
        {{"redis://127.0.0.1:1/2", "redis://127.0.0.1:2", "redis://127.0.0.1:1/3"}, 3, "'redis://127.0.0.1:1/3'"},
        {{"unix:///tmp/rl-dup.sock", "redis://127.0.0.1:2", "unix:///tmp/rl-dup.sock"}, 3, "'unix:///tmp/rl-dup.sock'"},
        {{"unix:///tmp/rl-dup.sock", "unix:///tmp/rl-dup.sock?db=2"}, 2, "'unix:///tmp/rl-dup.sock?db=2'"},
        {{"redis://LocalHost:7000", "redis://localhost:7000"}, 2, "'redis://localhost:7000'"},
        {{"redis://u1@127.0.0.1:5", "redis://u2@127.0.0.1:5"}, 2, "'redis://u2@127.0.0.1:5'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        redlock_options_t o = opts3();
        o.nodes = cases[i].nodes;
        o.n_nodes = cases[i].n;
        char what[64];
        snprintf(what, sizeof what, "duplicate case %zu", i);
        expect_new_fail(&o, REDLOCK_ERR_CONFIG, what, (const char *[]){"duplicate", cases[i].names, NULL});
    }
}

Test(options, distinct_nodes_are_not_duplicates) {
    static const char *const nodes[] = {"redis://127.0.0.1:1", "redis://127.0.0.2:1", "redis://127.0.0.1:2",
                                        "unix:///tmp/rl-a.sock", "unix:///tmp/rl-b.sock"};
    redlock_options_t o = opts3();
    o.nodes = nodes;
    o.n_nodes = 5;
    expect_new_ok(&o, "distinct nodes");
}

Test(options, malformed_uris) {
    static const struct {
        const char *uri;
        const char *names;
    } cases[] = {
        {"http://x", "'http://x'"},
        {"redis://h:99999", "'redis://h:99999'"},
        {"redis://h:0", "'redis://h:0'"},
        {"redis://h:port", "'redis://h:port'"},
        {"", "''"},
        {NULL, "(null)"},
        {"redis://", "'redis://'"},
        {"redis://h/db", "'redis://h/db'"},
        {"unix://relative.sock", "'unix://relative.sock'"},
        {"127.0.0.1:6379", "'127.0.0.1:6379'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *nodes[3] = {"redis://127.0.0.1:1", cases[i].uri, "redis://127.0.0.1:3"};
        redlock_options_t o = opts3();
        o.nodes = nodes;
        char what[64];
        snprintf(what, sizeof what, "malformed URI case %zu", i);
        expect_new_fail(&o, REDLOCK_ERR_CONFIG, what, (const char *[]){cases[i].names, NULL});
    }
}

Test(options, malformed_uri_never_shows_password) {
    static char long_host[5000];
    memcpy(long_host, "redis://user:" SECRET "@", strlen("redis://user:" SECRET "@"));
    memset(long_host + strlen(long_host), 'h', sizeof long_host - strlen(long_host) - 1);
    const char *const cases[] = {
        "redis://user:" SECRET "@h:99999",
        "redis://:" SECRET "@h:99999",
        "redis://user:" SECRET "@",
        "redis://user:" SECRET "@bad host:1",
        "redis://user:hun@" SECRET "@h:99999", /* '@' inside the password */
        "http://admin:" SECRET "@x",
        "rediss://user:" SECRET "@h:70000",
        "unix://user:" SECRET "@relative.sock",
        "user:" SECRET "@h:1",
        long_host,
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *nodes[2] = {"redis://127.0.0.1:1", cases[i]};
        redlock_options_t o = opts3();
        o.nodes = nodes;
        o.n_nodes = 2;
        char what[64];
        snprintf(what, sizeof what, "password case %zu", i);
        expect_new_fail(&o, REDLOCK_ERR_CONFIG, what, (const char *[]){"***", NULL});
        cr_assert_null(strstr(last_err, "hunter2"), "%s: message '%s' shows the password", what, last_err);
    }
}

Test(options, duplicate_message_never_shows_password) {
    const char *nodes[2] = {"redis://:" SECRET "@127.0.0.1:1", "redis://app:" SECRET "@127.0.0.1:1/3"};
    redlock_options_t o = opts3();
    o.nodes = nodes;
    o.n_nodes = 2;
    expect_new_fail(&o, REDLOCK_ERR_CONFIG, "duplicate with password",
                    (const char *[]){"duplicate", "127.0.0.1:1/3", NULL});
    cr_assert_null(strstr(last_err, "hunter2"), "message '%s' shows the password", last_err);
}

/* ---- redlock_new: numeric options --------------------------------------- */

#define BAD_OPTION(name, assign, ...)                                                        \
    Test(options, name) {                                                                    \
        redlock_options_t o = opts3();                                                       \
        assign;                                                                              \
        expect_new_fail(&o, REDLOCK_ERR_CONFIG, #name, (const char *[]){__VA_ARGS__, NULL}); \
    }

BAD_OPTION(connect_timeout_zero, o.connect_timeout_ms = 0, "connect_timeout_ms=0")
BAD_OPTION(connect_timeout_too_long, o.connect_timeout_ms = 60001, "connect_timeout_ms=60001")
BAD_OPTION(connect_timeout_max_u32, o.connect_timeout_ms = UINT32_MAX, "connect_timeout_ms=4294967295")
BAD_OPTION(op_timeout_zero, o.op_timeout_ms = 0, "op_timeout_ms=0")
BAD_OPTION(op_timeout_too_long, o.op_timeout_ms = 60001, "op_timeout_ms=60001")
BAD_OPTION(drift_factor_negative, o.drift_factor = -0.1, "drift_factor=-0.1")
BAD_OPTION(drift_factor_nan, o.drift_factor = NAN, "drift_factor=", "nan")
BAD_OPTION(drift_factor_too_big, o.drift_factor = 0.6, "drift_factor=0.6")
BAD_OPTION(drift_factor_infinite, o.drift_factor = INFINITY, "drift_factor=inf")
BAD_OPTION(drift_min_too_big, o.drift_min_ms = 60001, "drift_min_ms=60001")
BAD_OPTION(retry_jitter_above_delay, o.retry_jitter_ms = 201, "retry_jitter_ms=201")
BAD_OPTION(retry_jitter_above_zero_delay, (o.retry_delay_ms = 0, o.retry_jitter_ms = 1), "retry_jitter_ms=1")
BAD_OPTION(lock_delay_too_long, o.lock_delay_ms = 3600001, "lock_delay_ms=3600001")
BAD_OPTION(lock_delay_with_fencing, (o.lock_delay_ms = 1000, o.fencing = 1), "lock_delay_ms=1000", "fencing")
BAD_OPTION(node_down_below_op_timeout, o.node_down_ms = 49, "node_down_ms=49")
BAD_OPTION(node_down_below_raised_op_timeout, o.op_timeout_ms = 2000, "node_down_ms=1000")
BAD_OPTION(reconnect_min_zero, o.reconnect_min_ms = 0, "reconnect_min_ms=0")
BAD_OPTION(reconnect_max_below_min, o.reconnect_max_ms = 49, "reconnect_max_ms=49")
BAD_OPTION(max_inflight_zero, o.max_inflight = 0, "max_inflight=0")
BAD_OPTION(log_level_too_high, o.log_level = 7, "log_level=7")
BAD_OPTION(clock_jump_too_high, o.clock_jump_ms = 3600001, "clock_jump_ms=3600001")
BAD_OPTION(clock_check_too_high, o.clock_check_ms = 4000000, "clock_check_ms=4000000")
BAD_OPTION(log_level_negative, o.log_level = -1, "log_level=-1")

Test(options, boundary_values_are_accepted) {
    redlock_options_t o;
#define ACCEPT(assign)              \
    do {                            \
        o = opts3();                \
        assign;                     \
        expect_new_ok(&o, #assign); \
    } while (0)
    ACCEPT(o.connect_timeout_ms = 1);
    ACCEPT(o.connect_timeout_ms = 60000);
    ACCEPT(o.op_timeout_ms = 1);
    ACCEPT(o.drift_factor = 0.0);
    ACCEPT(o.drift_factor = 0.5);
    ACCEPT(o.drift_min_ms = 0);
    ACCEPT(o.retry_count = 0);
    ACCEPT(o.retry_jitter_ms = o.retry_delay_ms);
    ACCEPT((o.retry_delay_ms = 0, o.retry_jitter_ms = 0));
    ACCEPT(o.retry_delay_ms = 50); /* the jitter's default follows it: 25 */
    ACCEPT(o.retry_delay_ms = 0);
    ACCEPT(o.lock_delay_ms = 3600000);
    ACCEPT(o.node_down_ms = o.op_timeout_ms);
    ACCEPT(o.reconnect_max_ms = o.reconnect_min_ms);
    ACCEPT(o.max_inflight = 1);
    ACCEPT(o.log_level = REDLOCK_LOG_ERROR);
    ACCEPT(o.log_level = REDLOCK_LOG_DEBUG);
    ACCEPT(o.clock_jump_ms = 0);
    ACCEPT(o.clock_check_ms = 0);
    ACCEPT((o.clock_jump_ms = 3600000, o.clock_check_ms = 3600000));
#undef ACCEPT
}

/* ---- redlock_new: success, copying, logging ----------------------------- */

Test(options, valid_config_is_accepted) {
    redlock_options_t o = opts3();
    expect_new_ok(&o, "defaults over three nodes");
    redlock_t *rl = SENTINEL_RL;
    cr_assert_eq(redlock_new(&rl, &o), REDLOCK_OK);
    cr_assert_not_null(rl);
    cr_assert_neq(rl, SENTINEL_RL);
    redlock_free(rl);
}

Test(options, new_copies_node_strings) {
    char a[] = "redis://:" SECRET "@127.0.0.1:1", b[] = "redis://127.0.0.1:2", c[] = "unix:///tmp/rl-copy.sock";
    const char *nodes[3] = {a, b, c};
    redlock_options_t o = opts3();
    o.nodes = nodes;
    redlock_t *rl = NULL;
    cr_assert_eq(redlock_new(&rl, &o), REDLOCK_OK);
    /* The caller's strings and array may go away right after redlock_new. */
    memset(a, 'x', sizeof a - 1);
    memset(b, 'x', sizeof b - 1);
    memset(c, 'x', sizeof c - 1);
    nodes[0] = nodes[1] = nodes[2] = NULL;
    redlock_report_t rep;
    redlock_lock_t *lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_acquire_ex(rl, "res", 0, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    cr_assert_eq(rep.n_nodes, 3);
    cr_assert_str_eq(rep.nodes[0].node, "redis://:***@127.0.0.1:1");
    cr_assert_str_eq(rep.nodes[1].node, "redis://127.0.0.1:2");
    cr_assert_str_eq(rep.nodes[2].node, "unix:///tmp/rl-copy.sock");
    redlock_free(rl);
}

Test(options, log_callback_gets_the_error) {
    int tag = 42;
    redlock_options_t o = opts3();
    o.log = capture_log;
    o.log_arg = &tag;
    o.connect_timeout_ms = 0;
    char err[256];
    redlock_t *rl = SENTINEL_RL;
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);
    cr_assert_eq(logged.calls, 1, "log called %d times", logged.calls);
    cr_assert_eq(logged.level, REDLOCK_LOG_ERROR);
    cr_assert_eq(logged.arg, &tag, "log_arg not passed through");
    cr_assert_str_eq(logged.msg, err);
    cr_assert_not_null(strstr(logged.msg, "connect_timeout_ms=0"), "logged '%s'", logged.msg);

    /* Plain redlock_new (no err buffer) logs the same words. */
    memset(&logged, 0, sizeof logged);
    rl = SENTINEL_RL;
    cr_assert_eq(redlock_new(&rl, &o), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);
    cr_assert_eq(logged.calls, 1);
    cr_assert_eq(logged.level, REDLOCK_LOG_ERROR);
    cr_assert_not_null(strstr(logged.msg, "connect_timeout_ms=0"), "logged '%s'", logged.msg);

    /* A bad node URI: logged, password masked. */
    const char *nodes[2] = {"redis://127.0.0.1:1", "redis://u:" SECRET "@h:99999"};
    o = opts3();
    o.log = capture_log;
    o.nodes = nodes;
    o.n_nodes = 2;
    memset(&logged, 0, sizeof logged);
    rl = SENTINEL_RL;
    cr_assert_eq(redlock_new(&rl, &o), REDLOCK_ERR_CONFIG);
    cr_assert_null(rl);
    cr_assert_eq(logged.calls, 1);
    cr_assert_eq(logged.level, REDLOCK_LOG_ERROR);
    cr_assert_not_null(strstr(logged.msg, "h:99999"), "logged '%s'", logged.msg);
    cr_assert_null(strstr(logged.msg, "hunter2"), "logged '%s' shows the password", logged.msg);
}

/* ---- acquire: bad input ------------------------------------------------- */

Test(request, acquire_null_rl) {
    redlock_report_t rep;
    redlock_lock_t *lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_acquire_ex(NULL, "res", 1000, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    cr_assert_eq(rep.result, REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "redlock_t is NULL"), "message '%s'", rep.message);
    lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_acquire_ex(NULL, "res", 1000, 0, &lk, NULL), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_try_acquire(NULL, "res", 1000, &lk), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_acquire(NULL, "res", 1000, &lk), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    cr_assert_eq(redlock_acquire(NULL, NULL, 0, NULL), REDLOCK_ERR_INVALID);
}

Test(request, acquire_null_out) {
    redlock_t *rl = make_rl();
    redlock_report_t rep;
    cr_assert_eq(redlock_acquire_ex(rl, "res", 1000, 0, NULL, &rep), REDLOCK_ERR_INVALID);
    cr_assert_eq(rep.result, REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "out is NULL"), "message '%s'", rep.message);
    cr_assert_eq(redlock_try_acquire(rl, "res", 1000, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_acquire(rl, "res", 1000, NULL), REDLOCK_ERR_INVALID);
    redlock_free(rl);
}

/* A resource of len bytes: "res<len>-" then 'x's. Caller frees. */
static char *resource_of_len(size_t len) {
    char *s = malloc(len + 1);
    cr_assert_not_null(s);
    memset(s, 'x', len);
    s[len] = '\0';
    char head[32];
    int h = snprintf(head, sizeof head, "res%zu-", len);
    memcpy(s, head, (size_t)h < len ? (size_t)h : len);
    return s;
}

Test(request, acquire_bad_input) {
    char *long_res = resource_of_len(REDLOCK_MAX_RESOURCE + 1);
    const struct {
        const char *resource;
        uint32_t ttl_ms;
        const char *names;
    } cases[] = {
        {NULL, 1000, "resource is NULL"},
        {"", 1000, "resource is empty"},
        {long_res, 1000, "res1025-"},
        {long_res, 1000, "1024"},
        {"res", 0, "ttl_ms=0"},
        {"res", 53, "ttl_ms=53"}, /* drift ceil(0.53 + 2) = 3 ms, + op timeout 50: 53 is never valid */
        {"res", 1, "ttl_ms=1"},
        {"res", (uint32_t)INT32_MAX + 1u, "ttl_ms=2147483648"},
        {"res", UINT32_MAX, "ttl_ms=4294967295"},
    };
    redlock_t *rl = make_rl();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static const int64_t waits[] = {0, -1, 5000};
        for (size_t w = 0; w < sizeof waits / sizeof waits[0]; w++) {
            redlock_report_t rep;
            memset(&rep, 0xA5, sizeof rep);
            redlock_lock_t *lk = SENTINEL_LOCK;
            int rc = redlock_acquire_ex(rl, cases[i].resource, cases[i].ttl_ms, waits[w], &lk, &rep);
            cr_assert_eq(rc, REDLOCK_ERR_INVALID, "case %zu (%s) wait %lld: rc %d (%s)", i, cases[i].names,
                         (long long)waits[w], rc, redlock_strerror(rc));
            cr_assert_null(lk, "case %zu: *out not NULL", i);
            cr_assert_eq(rep.result, REDLOCK_ERR_INVALID, "case %zu: report.result %d", i, rep.result);
            cr_assert_not_null(memchr(rep.message, '\0', sizeof rep.message), "case %zu: message not terminated", i);
            cr_assert_not_null(strstr(rep.message, cases[i].names), "case %zu: message '%s' does not name '%s'", i,
                               rep.message, cases[i].names);
            cr_assert_eq(rep.attempts, 0, "case %zu: %u attempts on bad input", i, rep.attempts);
            cr_assert_eq(rep.n_nodes, 3);
            cr_assert_eq(rep.quorum, 2);
            cr_assert_eq(rep.validity_ms, 0);
            assert_no_node_asked(&rep, 3, cases[i].names);
        }
        redlock_lock_t *lk = SENTINEL_LOCK;
        cr_assert_eq(redlock_acquire_ex(rl, cases[i].resource, cases[i].ttl_ms, 0, &lk, NULL), REDLOCK_ERR_INVALID,
                     "case %zu without report", i);
        cr_assert_null(lk);
        lk = SENTINEL_LOCK;
        cr_assert_eq(redlock_try_acquire(rl, cases[i].resource, cases[i].ttl_ms, &lk), REDLOCK_ERR_INVALID,
                     "case %zu try_acquire", i);
        cr_assert_null(lk);
        lk = SENTINEL_LOCK;
        cr_assert_eq(redlock_acquire(rl, cases[i].resource, cases[i].ttl_ms, &lk), REDLOCK_ERR_INVALID,
                     "case %zu acquire", i);
        cr_assert_null(lk);
    }
    redlock_free(rl);
    free(long_res);
}

Test(request, bad_input_is_logged) {
    redlock_options_t o = opts3();
    o.retry_count = 0;
    o.log = capture_log;
    redlock_t *rl = NULL;
    cr_assert_eq(redlock_new(&rl, &o), REDLOCK_OK);
    memset(&logged, 0, sizeof logged);
    redlock_lock_t *lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_try_acquire(rl, "res", 0, &lk), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    cr_assert_geq(logged.calls, 1);
    cr_assert_eq(logged.level, REDLOCK_LOG_ERROR);
    cr_assert_not_null(strstr(logged.msg, "ttl_ms=0"), "logged '%s'", logged.msg);
    redlock_free(rl);
}

/* Expects a call that passed validation to fail only because nothing
 * listens: one attempt, NO_QUORUM, no lock, and not a validation message. */
static void expect_passes_validation(redlock_t *rl, const char *resource, uint32_t ttl_ms, const char *what) {
    redlock_report_t rep;
    redlock_lock_t *lk = SENTINEL_LOCK;
    int rc = redlock_acquire_ex(rl, resource, ttl_ms, 0, &lk, &rep);
    cr_assert_neq(rc, REDLOCK_ERR_INVALID, "%s: rejected as invalid: '%s'", what, rep.message);
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM, "%s: rc %d (%s): '%s'", what, rc, redlock_strerror(rc), rep.message);
    cr_assert_null(lk, "%s: *out not NULL after failure", what);
    cr_assert_eq(rep.attempts, 1, "%s: %u attempts", what, rep.attempts);
    cr_assert_null(strstr(rep.message, "ttl_ms="), "%s: message '%s'", what, rep.message);
    cr_assert_null(strstr(rep.message, "resource"), "%s: message '%s'", what, rep.message);
    size_t asked = 0;
    for (size_t i = 0; i < 3; i++) asked += rep.nodes[i].vote != REDLOCK_VOTE_NONE;
    cr_assert_gt(asked, 0, "%s: no node was asked", what);
    cr_assert_eq(rep.yes, 0, "%s: a node granted the lock with nothing listening", what);
}

Test(request, resource_of_max_length_passes_validation) {
    char *res = resource_of_len(REDLOCK_MAX_RESOURCE);
    redlock_t *rl = make_rl();
    expect_passes_validation(rl, res, 1000, "1024-byte resource");
    redlock_free(rl);
    free(res);
}

Test(request, shortest_valid_ttl_passes_validation) {
    redlock_t *rl = make_rl();
    expect_passes_validation(rl, "res", 54, "ttl 54 with defaults");
    expect_passes_validation(rl, "res", INT32_MAX, "ttl INT32_MAX");
    redlock_free(rl);
}

Test(request, ttl_floor_follows_options) {
    /* drift_factor 0.5, drift_min 0, op timeout 10: ttl 21 has drift
     * ceil(10.5) = 11 ms, 21 <= 11 + 10 -> rejected; ttl 22: 11 + 10 < 22. */
    redlock_options_t o = opts3();
    o.retry_count = 0;
    o.drift_factor = 0.5;
    o.drift_min_ms = 0;
    o.op_timeout_ms = 10;
    redlock_t *rl = NULL;
    cr_assert_eq(redlock_new(&rl, &o), REDLOCK_OK);
    redlock_report_t rep;
    redlock_lock_t *lk = SENTINEL_LOCK;
    cr_assert_eq(redlock_acquire_ex(rl, "res", 21, 0, &lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert_null(lk);
    cr_assert_not_null(strstr(rep.message, "ttl_ms=21"), "message '%s'", rep.message);
    expect_passes_validation(rl, "res", 22, "ttl 22 with drift 0.5");
    redlock_free(rl);
}

/* ---- extend / release: bad input ---------------------------------------- */

Test(request, extend_null_arguments) {
    redlock_t *rl = make_rl();
    redlock_report_t rep;
    cr_assert_eq(redlock_extend_ex(rl, NULL, 1000, &rep), REDLOCK_ERR_INVALID);
    cr_assert_eq(rep.result, REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "lock is NULL"), "message '%s'", rep.message);
    assert_no_node_asked(&rep, 3, "extend NULL lock");
    cr_assert_eq(redlock_extend(rl, NULL, 1000), REDLOCK_ERR_INVALID);

    cr_assert_eq(redlock_extend_ex(NULL, NULL, 1000, &rep), REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "redlock_t is NULL"), "message '%s'", rep.message);
    cr_assert_eq(redlock_extend(NULL, NULL, 0), REDLOCK_ERR_INVALID);

    redlock_lock_t *lk = forge_lock(rl, "res", 5000);
    cr_assert_eq(redlock_extend_ex(NULL, lk, 1000, &rep), REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "redlock_t is NULL"), "message '%s'", rep.message);
    cr_assert_str_eq(redlock_lock_resource(lk), "res"); /* extend never frees the lock */
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(request, extend_bad_ttl_keeps_the_lock) {
    redlock_t *rl = make_rl();
    redlock_lock_t *lk = forge_lock(rl, "res", 5000);
    int64_t before = redlock_lock_validity_ms(lk);
    const struct {
        uint32_t ttl_ms;
        const char *names;
    } cases[] = {{0, "ttl_ms=0"}, {53, "ttl_ms=53"}, {UINT32_MAX, "ttl_ms=4294967295"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        redlock_report_t rep;
        cr_assert_eq(redlock_extend_ex(rl, lk, cases[i].ttl_ms, &rep), REDLOCK_ERR_INVALID, "%s", cases[i].names);
        cr_assert_eq(rep.result, REDLOCK_ERR_INVALID);
        cr_assert_not_null(strstr(rep.message, cases[i].names), "message '%s'", rep.message);
        assert_no_node_asked(&rep, 3, cases[i].names);
        int64_t now_valid = redlock_lock_validity_ms(lk);
        cr_assert(now_valid <= before && now_valid > before - 2000,
                  "%s: a refused extend moved the deadline (%lld ms "
                  "valid, was %lld)",
                  cases[i].names, (long long)now_valid, (long long)before);
        cr_assert_eq(redlock_extend(rl, lk, cases[i].ttl_ms), REDLOCK_ERR_INVALID);
    }
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(request, extend_expired_lock_is_not_held) {
    redlock_t *rl = make_rl();
    redlock_lock_t *lk = forge_lock(rl, "res", -10);
    redlock_report_t rep;
    cr_assert_eq(redlock_extend_ex(rl, lk, 1000, &rep), REDLOCK_ERR_NOT_HELD);
    assert_no_node_asked(&rep, 3, "extend of an expired lock");
    cr_assert_leq(redlock_lock_validity_ms(lk), 0);
    redlock_lock_free(lk);
    redlock_free(rl);
}

Test(request, lock_of_another_redlock_is_refused) {
    redlock_t *a = make_rl(), *b = make_rl();
    redlock_lock_t *lk = forge_lock(a, "res-of-a", 5000);
    redlock_report_t rep;
    cr_assert_eq(redlock_extend_ex(b, lk, 1000, &rep), REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "res-of-a"), "message '%s'", rep.message);
    assert_no_node_asked(&rep, 3, "extend through another redlock_t");
    /* Release through the wrong redlock_t is refused too, and still frees
     * the handle (valgrind checks nothing leaks). */
    cr_assert_eq(redlock_release_ex(b, lk, &rep), REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "res-of-a"), "message '%s'", rep.message);
    assert_no_node_asked(&rep, 3, "release through another redlock_t");
    redlock_free(a);
    redlock_free(b);
}

Test(request, release_null_arguments) {
    redlock_t *rl = make_rl();
    redlock_report_t rep;
    cr_assert_eq(redlock_release_ex(rl, NULL, &rep), REDLOCK_ERR_INVALID);
    cr_assert_eq(rep.result, REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "lock is NULL"), "message '%s'", rep.message);
    assert_no_node_asked(&rep, 3, "release NULL lock");
    cr_assert_eq(redlock_release(rl, NULL), REDLOCK_ERR_INVALID);

    cr_assert_eq(redlock_release_ex(NULL, NULL, &rep), REDLOCK_ERR_INVALID);
    cr_assert_not_null(strstr(rep.message, "redlock_t is NULL"), "message '%s'", rep.message);
    cr_assert_eq(redlock_release(NULL, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_release_ex(NULL, NULL, NULL), REDLOCK_ERR_INVALID);

    /* A lock passed with a NULL redlock_t is still freed (release always
     * frees the handle; valgrind checks nothing leaks). */
    redlock_lock_t *lk = forge_lock(rl, "res", 5000);
    cr_assert_eq(redlock_release(NULL, lk), REDLOCK_ERR_INVALID);
    redlock_free(rl);
}

/* ---- handles ------------------------------------------------------------ */

Test(handles, null_handles_are_safe) {
    redlock_lock_free(NULL);
    redlock_free(NULL);
    cr_assert_eq(redlock_lock_validity_ms(NULL), 0);
    cr_assert_null(redlock_lock_resource(NULL));
    cr_assert_null(redlock_lock_token(NULL));
}

Test(handles, accessors_read_the_lock) {
    redlock_t *rl = make_rl();
    redlock_lock_t *lk = forge_lock(rl, "some/resource", 5000);
    cr_assert_str_eq(redlock_lock_resource(lk), "some/resource");
    cr_assert_eq(strlen(redlock_lock_token(lk)), REDLOCK_TOKEN_LEN);
    int64_t v = redlock_lock_validity_ms(lk);
    cr_assert(v > 0 && v <= 5000, "validity %lld ms, want 1..5000", (long long)v);
    redlock_lock_free(lk);
    redlock_free(rl);
}
