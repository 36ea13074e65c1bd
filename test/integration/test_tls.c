/* test_tls.c -- rediss:// against real redis-server TLS ports (certificates
 * made by test/tls/tls_nodes.sh with the openssl command): a trusted node
 * works; a certificate for another host, an untrusted CA and a missing
 * client certificate are rejected with clear errors; plain text and TLS
 * mismatches fail fast; bad TLS files are configuration errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rltest.h"
#include "waiting.h"

static char dir[512];

/* Port of the named node from $REDLOCK_TLS_DIR/ports. */
static int port_of(const char *name) {
    char path[600], n[32];
    int port = 0, p;
    snprintf(path, sizeof path, "%s/ports", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    while (fscanf(f, "%31s %d", n, &p) == 2)
        if (!strcmp(n, name)) port = p;
    fclose(f);
    cr_assert_gt(port, 0, "no node %s", name);
    return port;
}

static void setup(void) {
    const char *d = getenv("REDLOCK_TLS_DIR");
    cr_assert_not_null(d, "REDLOCK_TLS_DIR is not set");
    snprintf(dir, sizeof dir, "%s", d);
}

/* The suite's time limit (seconds), and the TTL of a lock that no test
 * outlives: a grant after such a lock's release cannot come from its expiry. */
#define SUITE_TIMEOUT_S 60
#define OUTLIVES_TEST_MS (SUITE_TIMEOUT_S * 1000)

TestSuite(tls, .init = setup, .timeout = SUITE_TIMEOUT_S);

/* o: the test's options over the one node *uri = buf (redlock_new reads
 * the uri then), trusting the CA file ca, with timeouts for a busy machine. */
static void one_node(redlock_options_t *o, const char **uri, char *buf, const char *ca) {
    *uri = buf;
    rt_options(o);
    o->nodes = uri;
    o->n_nodes = 1;
    o->connect_timeout_ms = 2000;
    o->op_timeout_ms = 1000;
    o->node_down_ms = 5000;
    o->tls_ca_file = ca;
}

/* Fills o for the single node URI (scheme and host given, port of name). */
static void opts_for(redlock_options_t *o, const char **uri, char *buf, size_t n, const char *scheme, const char *host,
                     const char *name) {
    static char ca[600];
    snprintf(buf, n, "%s://%s:%d", scheme, host, port_of(name));
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    one_node(o, uri, buf, ca);
}

/* One acquire on o's node; returns the code, fills rep, releases on success. */
static int try_lock(const redlock_options_t *o, redlock_report_t *rep, uint64_t *took_ms) {
    redlock_t *rl = NULL;
    char err[256];
    int rc = redlock_new_ex(&rl, o, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_new: %s", err);
    redlock_lock_t *lk = NULL;
    uint64_t t = rt_now_us();
    rc = redlock_acquire_ex(rl, "tls:res", 5000, 0, &lk, rep);
    if (took_ms) *took_ms = (rt_now_us() - t) / 1000;
    if (rc == REDLOCK_OK) {
        cr_assert_eq(redlock_extend(rl, lk, 5000), REDLOCK_OK);
        cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    }
    redlock_free(rl);
    return rc;
}

/* Asserts the single node failed with words containing `word`. */
static void assert_rejected(int rc, const redlock_report_t *rep, const char *word) {
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM, "got %s", redlock_strerror(rc));
    cr_assert_eq(rep->nodes[0].vote, REDLOCK_VOTE_ERROR, "vote %s: %s", redlock_vote_name(rep->nodes[0].vote),
                 rep->nodes[0].detail);
    cr_assert(strstr(rep->nodes[0].detail, word), "detail '%s' lacks '%s'", rep->nodes[0].detail, word);
}

Test(tls, trusted_node_by_address_and_by_name) {
    redlock_options_t o;
    const char *uri;
    char buf[128];
    redlock_report_t rep;
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "good");
    cr_assert_eq(try_lock(&o, &rep, NULL), REDLOCK_OK, "%s: %s", rep.message, rep.nodes[0].detail);
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "localhost", "good");
    cr_assert_eq(try_lock(&o, &rep, NULL), REDLOCK_OK, "%s: %s", rep.message, rep.nodes[0].detail);
}

Test(tls, a_waiter_is_woken_over_its_tls_subscriber_connection) {
    redlock_options_t o;
    const char *uri;
    char buf[128];
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "localhost", "good");
    redlock_t *holder = NULL, *waiter = NULL;
    char err[256];
    cr_assert_eq(redlock_new_ex(&holder, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    o.retry_count = 100;
    o.retry_delay_ms = 2000; /* the poll would come 2 s after the refusal */
    o.retry_jitter_ms = 0;
    cr_assert_eq(redlock_new_ex(&waiter, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    uint64_t ms = handoff_ms(holder, waiter, "tls:wake", NULL);
    cr_assert_lt(ms, 500, "granted %llu ms after the release", (unsigned long long)ms);
    redlock_free(waiter);
    redlock_free(holder);
}

Test(tls, certificate_for_another_host_is_rejected) {
    redlock_options_t o;
    const char *uri;
    char buf[128];
    redlock_report_t rep;
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "wrongname");
    assert_rejected(try_lock(&o, &rep, NULL), &rep, "certificate rejected");
    cr_assert(strstr(rep.nodes[0].detail, "mismatch"), "%s", rep.nodes[0].detail);
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "localhost", "wrongname");
    assert_rejected(try_lock(&o, &rep, NULL), &rep, "mismatch");
    /* the name the certificate does carry, given explicitly, is accepted */
    o.tls_server_name = "wrong.example";
    cr_assert_eq(try_lock(&o, &rep, NULL), REDLOCK_OK, "%s", rep.nodes[0].detail);
}

Test(tls, untrusted_ca_is_rejected_unless_verification_is_off) {
    redlock_options_t o;
    const char *uri;
    char buf[128];
    redlock_report_t rep;
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "untrusted");
    assert_rejected(try_lock(&o, &rep, NULL), &rep, "certificate rejected");
    o.tls_verify_peer = 0; /* insecure: for experiments only */
    cr_assert_eq(try_lock(&o, &rep, NULL), REDLOCK_OK, "%s", rep.nodes[0].detail);
}

Test(tls, mutual_tls_needs_the_client_certificate) {
    redlock_options_t o;
    const char *uri;
    char buf[128], cert[600], key[600];
    redlock_report_t rep;
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "mutual");
    int rc = try_lock(&o, &rep, NULL);
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM, "a node requiring client certificates let us in");
    cr_assert_eq(rep.nodes[0].vote, REDLOCK_VOTE_ERROR, "%s", rep.nodes[0].detail);
    cr_assert(strstr(rep.nodes[0].detail, "TLS") || strstr(rep.nodes[0].detail, "closed"), "%s", rep.nodes[0].detail);
    snprintf(cert, sizeof cert, "%s/client.crt", dir);
    snprintf(key, sizeof key, "%s/client.key", dir);
    o.tls_cert_file = cert;
    o.tls_key_file = key;
    cr_assert_eq(try_lock(&o, &rep, NULL), REDLOCK_OK, "%s", rep.nodes[0].detail);
}

Test(tls, plain_text_and_tls_mismatches_fail_fast) {
    redlock_options_t o;
    const char *uri;
    char buf[128];
    redlock_report_t rep;
    uint64_t ms;
    opts_for(&o, &uri, buf, sizeof buf, "redis", "127.0.0.1", "good"); /* plain text to a TLS port */
    assert_rejected(try_lock(&o, &rep, &ms), &rep, "rediss://");
    cr_assert_lt(ms, 1000, "took %llu ms: should fail at once, not at the deadline", (unsigned long long)ms);
    /* TLS to a plain port: Redis waits for the end of an inline command that
     * a ClientHello never sends, so this one ends at the connect deadline,
     * with words that say what is wrong. */
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "plain");
    o.connect_timeout_ms = 300;
    int rc = try_lock(&o, &rep, &ms);
    cr_assert_eq(rc, REDLOCK_ERR_NO_QUORUM);
    cr_assert_eq(rep.nodes[0].vote, REDLOCK_VOTE_TIMEOUT, "%s", rep.nodes[0].detail);
    cr_assert(strstr(rep.nodes[0].detail, "TLS handshake timed out") && strstr(rep.nodes[0].detail, "plain-text"), "%s",
              rep.nodes[0].detail);
    cr_assert_lt(ms, 300 + 1000 + 700, "took %llu ms", (unsigned long long)ms);
}

Test(tls, bad_tls_files_are_configuration_errors) {
    redlock_options_t o;
    const char *uri;
    char buf[128], err[256];
    redlock_t *rl = NULL;
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "good");
    o.tls_ca_file = "/nonexistent/ca.pem";
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "tls_ca_file") && strstr(err, "/nonexistent/ca.pem"), "%s", err);
    cr_assert_null(rl);
    opts_for(&o, &uri, buf, sizeof buf, "rediss", "127.0.0.1", "good");
    o.tls_cert_file = "/nonexistent/client.crt";
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "tls_key_file"), "cert without key: %s", err);
    char key[600];
    snprintf(key, sizeof key, "%s/client.key", dir);
    o.tls_key_file = key;
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert(strstr(err, "tls_cert_file") && strstr(err, "/nonexistent/client.crt"), "%s", err);
}

/* Fills o for the TLS sentinel's group "tg" (scheme rediss+sentinel or
 * redis+sentinel, extra query parameters or ""), trusting the CA ca
 * ("ca": the test CA, "other": one that signed neither). */
static void sentinel_opts(redlock_options_t *o, const char **uri, char *buf, size_t n, const char *scheme,
                          const char *params, const char *ca_name) {
    static char ca[600];
    snprintf(buf, n, "%s://127.0.0.1:%d/tg%s", scheme, port_of("sentinel"), params);
    snprintf(ca, sizeof ca, "%s/%s.crt", dir, ca_name);
    one_node(o, uri, buf, ca);
}

/* Acquires res for ttl_ms on o's node, trying for up to 10 s (the first
 * look-up of the group may come after a busy machine's connect deadline).
 * Returns the last code; a granted lock is left in *lk on rl. */
static int lock_within(redlock_t *rl, const char *res, uint32_t ttl_ms, redlock_lock_t **lk, redlock_report_t *rep) {
    uint64_t until = rt_now_us() + 10000000u;
    int rc;
    while ((rc = redlock_acquire_ex(rl, res, ttl_ms, 0, lk, rep)) != REDLOCK_OK && rt_now_us() < until)
        rt_sleep_ms(100);
    return rc;
}

/* How many clients of the TLS sentinel hold a subscription (its CLIENT
 * LIST asked with redis-cli over TLS), or -1 when it cannot be asked. */
static int sentinel_subscribers(void) {
    char cmd[1400], line[1024];
    snprintf(cmd, sizeof cmd, "redis-cli --tls --cacert '%s/ca.crt' -h 127.0.0.1 -p %d CLIENT LIST 2>/dev/null", dir,
             port_of("sentinel"));
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    int n = 0, lines = 0;
    while (fgets(line, sizeof line, p)) {
        lines++;
        n += strstr(line, " sub=1 ") != NULL;
    }
    return pclose(p) == 0 && lines ? n : -1;
}

Test(tls, a_tls_sentinel_names_the_master_and_the_lock_is_on_it) {
    redlock_options_t o, direct;
    const char *uri, *duri;
    char buf[256], dbuf[128], err[256];
    redlock_report_t rep;
    sentinel_opts(&o, &uri, buf, sizeof buf, "rediss+sentinel", "", "ca");
    redlock_t *rl = NULL, *other = NULL;
    cr_assert_eq(redlock_new_ex(&rl, &o, err, sizeof err), REDLOCK_OK, "%s", err);
    /* a key of this run only: one a failed run left (it outlives the test)
     * must not stand in the way of the next run, or of a twin run */
    char res[64];
    snprintf(res, sizeof res, "tls:sentinel:%ld", (long)getpid());
    redlock_lock_t *lk = NULL;
    int rc = lock_within(rl, res, OUTLIVES_TEST_MS, &lk, &rep);
    cr_assert_eq(rc, REDLOCK_OK, "%s: %s", rep.message, rep.nodes[0].detail);
    /* the +switch-master watch holds its subscription over TLS too (the
     * sentinel has no other port) */
    int subs = 0;
    for (uint64_t until = rt_now_us() + 10000000u; (subs = sentinel_subscribers()) < 1 && rt_now_us() < until;)
        rt_sleep_ms(100);
    cr_assert_geq(subs, 1, "no subscription on the TLS sentinel (%d)", subs);
    /* the lock is on the good node: a handle asking it directly is refused */
    opts_for(&direct, &duri, dbuf, sizeof dbuf, "rediss", "127.0.0.1", "good");
    cr_assert_eq(redlock_new_ex(&other, &direct, err, sizeof err), REDLOCK_OK, "%s", err);
    redlock_lock_t *lk2 = NULL;
    redlock_report_t rep2;
    rc = redlock_acquire_ex(other, res, 5000, 0, &lk2, &rep2);
    cr_assert_neq(rc, REDLOCK_OK, "the good node granted a lock the sentinel's master holds");
    cr_assert_eq(rep2.nodes[0].vote, REDLOCK_VOTE_NO, "vote %s: %s", redlock_vote_name(rep2.nodes[0].vote),
                 rep2.nodes[0].detail);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    /* and free on it once released: the key outlives the test, so only
     * the release can have removed it */
    rc = lock_within(other, res, 10000, &lk2, &rep2);
    cr_assert_eq(rc, REDLOCK_OK, "not granted within 10 s of the release: %s (%s: %s)", redlock_strerror(rc),
                 redlock_vote_name(rep2.nodes[0].vote), rep2.nodes[0].detail);
    cr_assert_eq(redlock_release(other, lk2), REDLOCK_OK);
    redlock_free(other);
    redlock_free(rl);
}

Test(tls, plain_text_to_a_tls_sentinel_says_the_sentinel_was_not_asked) {
    redlock_options_t o;
    const char *uri;
    char buf[256];
    redlock_report_t rep;
    sentinel_opts(&o, &uri, buf, sizeof buf, "rediss+sentinel", "?sentinel_tls=no", "ca");
    assert_rejected(try_lock(&o, &rep, NULL), &rep, "sentinel 127.0.0.1:");
    cr_assert(strstr(rep.nodes[0].detail, "closed") || strstr(rep.nodes[0].detail, "no answer"), "%s",
              rep.nodes[0].detail);
}

Test(tls, a_sentinel_certificate_the_ca_does_not_trust_is_refused) {
    redlock_options_t o;
    const char *uri;
    char buf[256];
    redlock_report_t rep;
    sentinel_opts(&o, &uri, buf, sizeof buf, "rediss+sentinel", "", "other");
    assert_rejected(try_lock(&o, &rep, NULL), &rep, "certificate rejected");
    char want[64];
    snprintf(want, sizeof want, "sentinel 127.0.0.1:%d", port_of("sentinel"));
    cr_assert(strstr(rep.nodes[0].detail, want), "detail '%s' lacks '%s'", rep.nodes[0].detail, want);
    o.tls_verify_peer = 0; /* insecure: for experiments only; sentinels and master are then let in */
    cr_assert_eq(try_lock(&o, &rep, NULL), REDLOCK_OK, "%s", rep.nodes[0].detail);
}
