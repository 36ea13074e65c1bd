/* test_tls.c -- rediss:// against real redis-server TLS ports (certificates
 * made by test/tls/tls_nodes.sh with the openssl command): a trusted node
 * works; a certificate for another host, an untrusted CA and a missing
 * client certificate are rejected with clear errors; plain text and TLS
 * mismatches fail fast; bad TLS files are configuration errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

TestSuite(tls, .init = setup, .timeout = 60);

/* Fills o for the single node URI (scheme and host given, port of name). */
static void opts_for(redlock_options_t *o, const char **uri, char *buf, size_t n, const char *scheme,
                     const char *host, const char *name) {
    static char ca[600];
    snprintf(buf, n, "%s://%s:%d", scheme, host, port_of(name));
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    *uri = buf;
    rt_options(o);
    o->nodes = uri;
    o->n_nodes = 1;
    o->connect_timeout_ms = 2000;
    o->op_timeout_ms = 1000;
    o->node_down_ms = 5000;
    o->tls_ca_file = ca;
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
    cr_assert(strstr(rep.nodes[0].detail, "TLS handshake timed out") && strstr(rep.nodes[0].detail, "plain-text"),
              "%s", rep.nodes[0].detail);
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
