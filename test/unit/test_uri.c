/* test_uri.c -- node URI parsing (src/net/uri.c), no server.
 *
 * Good URIs: every field and the display string (password always "***").
 * Bad URIs: REDLOCK_ERR_CONFIG, a message naming the URI, never a password.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"
#include "uri.h"

/* ---- helpers ------------------------------------------------------------ */

static void assert_str_or_null(const char *got, const char *want, const char *field, const char *uri) {
    if (!want) {
        cr_assert_null(got, "%s: %s should be NULL, is '%s'", uri, field, got ? got : "");
    } else {
        cr_assert_not_null(got, "%s: %s is NULL, want '%s'", uri, field, want);
        cr_assert_str_eq(got, want, "%s: %s is '%s', want '%s'", uri, field, got, want);
    }
}

static void assert_zeroed(const rl_uri_t *u, const char *uri) {
    cr_assert(u->kind == 0 && !u->host && u->port == 0 && !u->path && !u->user && !u->pass && u->db == 0 && !u->display,
              "%s: failed parse left something in the struct", uri ? uri : "(null)");
}

/* Makes "unix://" + "/" + n-1 more path bytes; caller frees. */
static char *unix_uri_with_path_len(const char *prefix, size_t n) {
    size_t plen = strlen(prefix);
    char *s = malloc(plen + n + 1);
    cr_assert_not_null(s);
    memcpy(s, prefix, plen);
    s[plen] = '/';
    memset(s + plen + 1, 'p', n - 1);
    s[plen + n] = '\0';
    return s;
}

/* ---- good URIs ---------------------------------------------------------- */

typedef struct good_case {
    const char *s;
    int kind;
    const char *host;
    int port;
    const char *path;
    const char *user;
    const char *pass;
    int db;
    const char *display;
} good_case_t;

static const good_case_t good[] = {
    {"redis://127.0.0.1:6379", RL_URI_TCP, "127.0.0.1", 6379, NULL, NULL, NULL, 0, "redis://127.0.0.1:6379"},
    {"redis://localhost", RL_URI_TCP, "localhost", 6379, NULL, NULL, NULL, 0, "redis://localhost:6379"},
    {"redis://h:7000/3", RL_URI_TCP, "h", 7000, NULL, NULL, NULL, 3, "redis://h:7000/3"},
    {"redis://user:pa:ss@h:1", RL_URI_TCP, "h", 1, NULL, "user", "pa:ss", 0, "redis://user:***@h:1"},
    {"redis://:secret@h", RL_URI_TCP, "h", 6379, NULL, NULL, "secret", 0, "redis://:***@h:6379"},
    {"redis://u@h", RL_URI_TCP, "h", 6379, NULL, "u", NULL, 0, "redis://u@h:6379"},
    {"redis://[::1]:6380", RL_URI_TCP, "::1", 6380, NULL, NULL, NULL, 0, "redis://[::1]:6380"},
    {"unix:///tmp/x.sock", RL_URI_UNIX, NULL, 0, "/tmp/x.sock", NULL, NULL, 0, "unix:///tmp/x.sock"},
    {"unix:///tmp/x.sock?db=2", RL_URI_UNIX, NULL, 0, "/tmp/x.sock", NULL, NULL, 2, "unix:///tmp/x.sock?db=2"},
    {"REDIS://h", RL_URI_TCP, "h", 6379, NULL, NULL, NULL, 0, "redis://h:6379"},
    /* More shapes. */
    {"Redis://H:6379", RL_URI_TCP, "H", 6379, NULL, NULL, NULL, 0, "redis://H:6379"},
    {"redis://h:1", RL_URI_TCP, "h", 1, NULL, NULL, NULL, 0, "redis://h:1"},
    {"redis://h:65535", RL_URI_TCP, "h", 65535, NULL, NULL, NULL, 0, "redis://h:65535"},
    {"redis://h:6379/", RL_URI_TCP, "h", 6379, NULL, NULL, NULL, 0, "redis://h:6379"},
    {"redis://h/", RL_URI_TCP, "h", 6379, NULL, NULL, NULL, 0, "redis://h:6379"},
    {"redis://h/15", RL_URI_TCP, "h", 6379, NULL, NULL, NULL, 15, "redis://h:6379/15"},
    {"redis://h:6379/0", RL_URI_TCP, "h", 6379, NULL, NULL, NULL, 0, "redis://h:6379"},
    {"redis://my-host_1.example.com:6380", RL_URI_TCP, "my-host_1.example.com", 6380, NULL, NULL, NULL, 0,
     "redis://my-host_1.example.com:6380"},
    {"redis://[::1]", RL_URI_TCP, "::1", 6379, NULL, NULL, NULL, 0, "redis://[::1]:6379"},
    {"redis://[2001:db8::7]:7001/2", RL_URI_TCP, "2001:db8::7", 7001, NULL, NULL, NULL, 2,
     "redis://[2001:db8::7]:7001/2"},
    {"redis://[fe80::1%eth0]:6379", RL_URI_TCP, "fe80::1%eth0", 6379, NULL, NULL, NULL, 0,
     "redis://[fe80::1%eth0]:6379"},
    {"redis://u:p@[::1]:6380/1", RL_URI_TCP, "::1", 6380, NULL, "u", "p", 1, "redis://u:***@[::1]:6380/1"},
    {"redis://:secret@h:7000/5", RL_URI_TCP, "h", 7000, NULL, NULL, "secret", 5, "redis://:***@h:7000/5"},
    {"redis://u:p@ss@h", RL_URI_TCP, "h", 6379, NULL, "u", "p@ss", 0, "redis://u:***@h:6379"},
    {"redis://default:@h", RL_URI_TCP, "h", 6379, NULL, "default", "", 0, "redis://default:***@h:6379"},
    {"UNIX:///tmp/x.sock", RL_URI_UNIX, NULL, 0, "/tmp/x.sock", NULL, NULL, 0, "unix:///tmp/x.sock"},
    {"unix://u:pw@/tmp/x.sock", RL_URI_UNIX, NULL, 0, "/tmp/x.sock", "u", "pw", 0, "unix://u:***@/tmp/x.sock"},
    {"unix://:pw@/tmp/x.sock?db=7", RL_URI_UNIX, NULL, 0, "/tmp/x.sock", NULL, "pw", 7, "unix://:***@/tmp/x.sock?db=7"},
    /* An '@' in a socket file name (systemd-style instance names) is part of
     * the path, not a user separator. */
    {"unix:///run/redis/redis-server@main.sock", RL_URI_UNIX, NULL, 0, "/run/redis/redis-server@main.sock", NULL, NULL,
     0, "unix:///run/redis/redis-server@main.sock"},
    {"unix://u:p@ss@/run/r@x.sock?db=4", RL_URI_UNIX, NULL, 0, "/run/r@x.sock", "u", "p@ss", 4,
     "unix://u:***@/run/r@x.sock?db=4"},
};

static void check_good(const good_case_t *g) {
    rl_uri_t u;
    char err[256] = "";
    int rc = rl_uri_parse(g->s, &u, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "%s: rc %d (%s)", g->s, rc, err);
    cr_assert_eq(u.kind, g->kind, "%s: kind %d", g->s, u.kind);
    assert_str_or_null(u.host, g->host, "host", g->s);
    cr_assert_eq(u.port, g->port, "%s: port %d, want %d", g->s, u.port, g->port);
    assert_str_or_null(u.path, g->path, "path", g->s);
    assert_str_or_null(u.user, g->user, "user", g->s);
    assert_str_or_null(u.pass, g->pass, "pass", g->s);
    cr_assert_eq(u.db, g->db, "%s: db %d, want %d", g->s, u.db, g->db);
    assert_str_or_null(u.display, g->display, "display", g->s);
    if (g->pass && *g->pass) {
        cr_assert_null(strstr(u.display, g->pass), "%s: display '%s' shows the password", g->s, u.display);
        cr_assert_not_null(strstr(u.display, ":***@"), "%s: display '%s' does not mask", g->s, u.display);
    }
    rl_uri_clear(&u);
    assert_zeroed(&u, g->s);
}

Test(uri, good_uris_every_field) {
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) check_good(&good[i]);
}

Test(uri, display_parses_back_to_the_same_node) {
    /* The display names the same server, db and user; only the password is
     * replaced (by the literal "***"). */
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        rl_uri_t a, b;
        char err[256] = "";
        cr_assert_eq(rl_uri_parse(good[i].s, &a, err, sizeof err), REDLOCK_OK, "%s", err);
        int rc = rl_uri_parse(a.display, &b, err, sizeof err);
        cr_assert_eq(rc, REDLOCK_OK, "%s: display '%s' does not parse: %s", good[i].s, a.display, err);
        cr_assert_eq(b.kind, a.kind, "%s", a.display);
        cr_assert(rl_uri_same_server(&a, &b), "%s: display '%s' names another server", good[i].s, a.display);
        assert_str_or_null(b.host, a.host, "host", a.display);
        assert_str_or_null(b.path, a.path, "path", a.display);
        cr_assert_eq(b.port, a.port, "%s", a.display);
        cr_assert_eq(b.db, a.db, "%s: db %d, want %d", a.display, b.db, a.db);
        assert_str_or_null(b.user, a.user, "user", a.display);
        assert_str_or_null(b.pass, a.pass ? "***" : NULL, "pass", a.display);
        assert_str_or_null(b.display, a.display, "display", a.display);
        rl_uri_clear(&a);
        rl_uri_clear(&b);
    }
}

Test(uri, unix_path_length_limit) {
    /* sun_path holds 108 bytes with the NUL: 107 fits, 108 does not. */
    char *ok = unix_uri_with_path_len("unix://", 107);
    char *bad = unix_uri_with_path_len("unix://", 108);
    rl_uri_t u;
    char err[256] = "";
    cr_assert_eq(rl_uri_parse(ok, &u, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_assert_eq(strlen(u.path), 107u);
    rl_uri_clear(&u);
    cr_assert_eq(rl_uri_parse(bad, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_not_null(strstr(err, "too long"), "%s", err);
    assert_zeroed(&u, bad);
    free(ok);
    free(bad);
}

/* ---- bad URIs ----------------------------------------------------------- */

typedef struct bad_case {
    const char *s;
    const char *shown; /* how err names the URI; NULL: s itself */
    const char *why;   /* a piece of the reason */
} bad_case_t;

static const bad_case_t bad[] = {
    {NULL, "(null)", "missing"},
    {"", "''", "empty"},
    {"http://h", NULL, "scheme"},
    {"redis://", NULL, "missing host"},
    {"redis://:7000", NULL, "missing host"},
    {"redis://h:0", NULL, "port"},
    {"redis://h:65536", NULL, "port"},
    {"redis://h:abc", NULL, "port"},
    {"redis://h:6379/x", NULL, "database"},
    {"redis://[::1", NULL, "IPv6"},
    {"unix://relative/path", NULL, "absolute"},
    {"rediss://", NULL, "missing host"},
    /* More. */
    {"redis://h:", NULL, "port"},
    {"redis://h:-1", NULL, "port"},
    {"redis://h:99999", NULL, "port"},
    {"redis://h:1234567890123", NULL, "port"},
    {"redis://h:6379:6380", NULL, "port"},
    {"redis://h/-1", NULL, "database"},
    {"redis://h:6379/3/4", NULL, "database"},
    {"redis://h:6379/1000001", NULL, "database"},
    {"redis://h:6379?x=1", NULL, "unknown parameter 'x'"},
    {"redis://h#frag", NULL, "unexpected"},
    {"redis://h h", NULL, "character"},
    {"redis://h;rm", NULL, "character"},
    {"redis://[]:6379", NULL, "missing host"},
    {"redis://[::1]x", NULL, "unexpected"},
    {"redis://[::1]:0", NULL, "port"},
    {"redis://u:p@", "redis://u:***@", "missing host"},
    {"redis://u:p@:6379", "redis://u:***@:6379", "missing host"},
    {"unix://", NULL, "absolute"},
    {"unix:///tmp/x.sock?db=", NULL, "database"},
    {"unix:///tmp/x.sock?db=x", NULL, "database"},
    {"unix:///tmp/x.sock?foo=1", NULL, "db"},
    {"ftp://h", NULL, "scheme"},
    {"redis:/h", NULL, "scheme"},
    {"localhost:6379", NULL, "scheme"},
    {"6379", NULL, "scheme"},
    {"REDISS://h:0", NULL, "port"},
    {"redis://h:65536", NULL, "port"},
    {"redis://:6379", NULL, "missing host"},
    {"redis://[::1", NULL, "unclosed"},
    {"redis://[::1:6379", NULL, "unclosed"},
    {"redis://[lock-a]:6379", NULL, "not an IPv6 address"},
    {"rediss://[1.2.3.4]", NULL, "not an IPv6 address"},
    {"redis://u:secret@[zz::1]:6379", "redis://u:***@[zz::1]:6379", "not an IPv6 address"},
    /* Redis Cluster nodes */
    {"redis+cluster://", NULL, "missing host"},
    {"redis+cluster://h:7000/1", NULL, "only database 0"},
    {"redis+cluster://h:7000?seed=", NULL, "seed=host:port"},
    {"redis+cluster://h:7000?seeds=a:1", NULL, "seed=host:port"},
    {"redis+cluster://h:7000?seed=a:0", NULL, "port"},
    {"redis+cluster://h:7000?seed=a:1/2", NULL, "no database"},
    {"redis+cluster://h:7000?seed=a:1&", NULL, "seed=host:port"},
    {"redis+cluster://h:7000?seed=a:1&x=2", NULL, "seed=host:port"},
    {"redis+cluster://u:pw@h:7000?seed=[zz]:1", "redis+cluster://u:***@h:7000?seed=[zz]:1", "IPv6"},
    {"redis+clusters://h", NULL, "scheme"},
    /* Sentinel groups, and replicas= on every kind */
    {"redis+sentinel://h:26379", NULL, "names its master"},
    {"redis+sentinel://h:26379/", NULL, "names its master"},
    {"redis+sentinel://u:pw@h:26379", "redis+sentinel://u:***@h:26379", "names its master"},
    {"redis+sentinel://h:26379/my$master", NULL, "bad character in the master"},
    {"redis+sentinel://h:26379/m?sentinel=a:0", NULL, "port"},
    {"redis+sentinel://h:26379/m?sentinel=a:1/2", NULL, "no database"},
    {"redis+sentinel://h:26379/m?seed=a:1", NULL, "unknown parameter 'seed'"},
    {"redis+sentinel://h/m?sentinel_password=a&sentinel_password=b", NULL, "twice"},
    {"redis+sentinel://h/m?db=x", NULL, "database must be a number"},
    {"redis+sentinel:///m", NULL, "missing host"},
    {"redis+sentinel://h/m?sentinel_tls=maybe", NULL, "not 'maybe'"},
    {"redis+sentinel://h/m?sentinel_tls=maybe&db=1", NULL, "not 'maybe'"},
    {"rediss+sentinel://h/m?sentinel_tls=", NULL, "sentinel_tls must be yes or no"},
    {"redis+sentinel://h/m?sentinel_tls=yes&sentinel_tls=no", NULL, "sentinel_tls given twice"},
    {"rediss://h?sentinel_tls=yes", NULL, "unknown parameter 'sentinel_tls'"},
    {"redis+cluster://h?sentinel_tls=no", NULL, "unknown parameter 'sentinel_tls'"},
    {"redis://h?replicas=x", NULL, "replicas must be 0..1000"},
    {"redis://h?replicas=1001", NULL, "replicas must be 0..1000"},
    {"redis://h?replicas", NULL, "has no value"},
    {"redis+cluster://h?sentinel=a:1", NULL, "unknown parameter 'sentinel'"},
    {"unix:///tmp/s?seed=a:1", NULL, "unknown parameter 'seed'"},
    {"unix+cluster:///tmp/s", NULL, "scheme"},
};

static void check_bad(const bad_case_t *b) {
    rl_uri_t u;
    memset(&u, 0xA5, sizeof u); /* the parser must reset it */
    char err[512];
    memset(err, 0, sizeof err);
    int rc = rl_uri_parse(b->s, &u, err, sizeof err);
    const char *name = b->s ? b->s : "(null)";
    cr_assert_eq(rc, REDLOCK_ERR_CONFIG, "'%s': rc %d", name, rc);
    assert_zeroed(&u, b->s);
    cr_assert_gt(strlen(err), 0u, "'%s': no message", name);
    char quoted[300];
    if (b->shown && strcmp(b->shown, "''") == 0)
        snprintf(quoted, sizeof quoted, "''");
    else
        snprintf(quoted, sizeof quoted, "'%s'", b->shown ? b->shown : b->s);
    cr_assert_not_null(strstr(err, quoted), "'%s': message '%s' does not name %s", name, err, quoted);
    cr_assert_not_null(strstr(err, b->why), "'%s': message '%s' does not say '%s'", name, err, b->why);
    rl_uri_clear(&u); /* harmless after a failure */
}

Test(uri, bad_uris_are_config_errors_naming_the_uri) {
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) check_bad(&bad[i]);
}

/* Host names are at most 253 bytes (RFC 1035's limit on a full name). */
Test(uri, host_longer_than_253_bytes_is_refused) {
    char host[260], s[300], err[512] = "";
    rl_uri_t u;
    memset(host, 'a', 253);
    host[253] = '\0';
    snprintf(s, sizeof s, "redis://%s:6379", host);
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_OK, "253 bytes is allowed: %s", err);
    cr_assert_eq(strlen(u.host), 253u);
    rl_uri_clear(&u);
    snprintf(s, sizeof s, "redis://b%s:6379", host);
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_not_null(strstr(err, "longer than 253"), "%s", err);
    cr_assert_not_null(strstr(err, "redis://baaaa"), "names the URI: %s", err);
}

/* IPv6 literals in brackets, with a port or TLS, parse to the bare address. */
Test(uri, ipv6_literals_parse) {
    rl_uri_t u;
    char err[256] = "";
    cr_assert_eq(rl_uri_parse("rediss://[fd00::5]", &u, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_assert_str_eq(u.host, "fd00::5");
    cr_assert_eq(u.port, 6379);
    cr_assert_eq(u.tls, 1);
    cr_assert_str_eq(u.display, "rediss://[fd00::5]:6379");
    rl_uri_clear(&u);
    cr_assert_eq(rl_uri_parse("redis://[fe80::1%lo]:7000", &u, err, sizeof err), REDLOCK_OK, "zone ids pass: %s", err);
    cr_assert_str_eq(u.host, "fe80::1%lo");
    rl_uri_clear(&u);
}

Test(uri, tls_scheme_parses_like_redis_with_the_tls_flag) {
    rl_uri_t u;
    char err[256] = "";
    cr_assert_eq(rl_uri_parse("rediss://user:pw@node-1.example:6380/2", &u, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_assert_eq(u.kind, RL_URI_TCP);
    cr_assert_eq(u.tls, 1);
    cr_assert_str_eq(u.host, "node-1.example");
    cr_assert_eq(u.port, 6380);
    cr_assert_eq(u.db, 2);
    cr_assert_str_eq(u.display, "rediss://user:***@node-1.example:6380/2");
    rl_uri_clear(&u);
    cr_assert_eq(rl_uri_parse("redis://h", &u, err, sizeof err), REDLOCK_OK);
    cr_assert_eq(u.tls, 0);
    rl_uri_clear(&u);
}

Test(uri, overlong_unix_path_names_the_uri) {
    /* A 200-byte socket path: too long for sun_path. The message names the
     * URI (at least its first 100 bytes; long URIs are cut to fit). */
    char *s = unix_uri_with_path_len("unix://", 200);
    rl_uri_t u;
    char err[512] = "";
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    assert_zeroed(&u, s);
    char prefix[101];
    memcpy(prefix, s, 100);
    prefix[100] = '\0';
    cr_assert_not_null(strstr(err, prefix), "message '%s' does not name the URI", err);
    cr_assert_not_null(strstr(err, "too long"), "%s", err);
    free(s);
}

Test(uri, overlong_uri_is_refused) {
    size_t n = 5000;
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    memcpy(s, "redis://", 8);
    memset(s + 8, 'h', n - 8);
    s[n] = '\0';
    rl_uri_t u;
    char err[512] = "";
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    assert_zeroed(&u, "long");
    cr_assert_not_null(strstr(err, "'redis://hhhh"), "%s", err);
    cr_assert_not_null(strstr(err, "4096"), "%s", err);
    free(s);
}

/* ---- passwords never reach an error message ------------------------------ */

typedef struct secret_case {
    const char *s;
    const char *shown; /* the masked URI expected in err, or NULL to skip */
} secret_case_t;

static const secret_case_t secrets[] = {
    {"redis://u:topsecret@h:99999", "redis://u:***@h:99999"},
    {"redis://:topsecret@h:0", "redis://:***@h:0"},
    {"redis://u:topsecret@h:6379/x", "redis://u:***@h:6379/x"},
    {"redis://u:topsecret@", "redis://u:***@"},
    {"redis://u:topsecret@[::1", "redis://u:***@[::1"},
    {"redis://u:top@secret@h:0", "redis://u:***@h:0"},
    {"redis://u:top:secret@h:0", "redis://u:***@h:0"},
    {"rediss://u:topsecret@h:0", "rediss://u:***@h:0"},
    {"http://u:topsecret@h", "http://u:***@h"},
    {"unix://u:topsecret@relative", "unix://u:***@relative"},
    {"unix://u:topsecret@/tmp/x.sock?db=x", "unix://u:***@/tmp/x.sock?db=x"},
    /* Malformed enough that where the password starts is a guess: whatever
     * sits between the first ':' and the last '@' is hidden. */
    {"redis:/u:topsecret@h", NULL},
    {"u:topsecret@h:6379", NULL},
    {"u:topsecret@redis://h", NULL},
};

Test(uri, bad_uri_error_never_shows_the_password) {
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        rl_uri_t u;
        char err[512] = "";
        int rc = rl_uri_parse(secrets[i].s, &u, err, sizeof err);
        cr_assert_eq(rc, REDLOCK_ERR_CONFIG, "%s: rc %d", secrets[i].s, rc);
        assert_zeroed(&u, secrets[i].s);
        cr_assert_null(strstr(err, "secret"), "%s: message '%s' shows the password", secrets[i].s, err);
        cr_assert_null(strstr(err, "top"), "%s: message '%s' shows part of the password", secrets[i].s, err);
        if (secrets[i].shown)
            cr_assert_not_null(strstr(err, secrets[i].shown), "%s: message '%s' does not name '%s'", secrets[i].s, err,
                               secrets[i].shown);
        cr_assert_not_null(strstr(err, "***"), "%s: message '%s' does not mark the masked password", secrets[i].s, err);
    }
}

Test(uri, password_hidden_in_long_bad_uris) {
    /* Long user name, long host, long socket path: truncation never lets the
     * password through. */
    char s[6000];
    rl_uri_t u;
    char err[512];

    memset(s, 0, sizeof s);
    strcpy(s, "redis://");
    memset(s + 8, 'U', 300);
    strcat(s, ":topsecret@h:0");
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_null(strstr(err, "topsecret"), "%s", err);

    memset(s, 0, sizeof s);
    strcpy(s, "redis://u:topsecret@");
    memset(s + strlen(s), 'h', 5000);
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_null(strstr(err, "topsecret"), "%s", err);
    cr_assert_not_null(strstr(err, "redis://u:***@hhh"), "%s", err);

    memset(s, 0, sizeof s);
    strcpy(s, "unix://u:topsecret@/");
    memset(s + strlen(s), 'p', 200);
    cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
    cr_assert_null(strstr(err, "topsecret"), "%s", err);
    cr_assert_not_null(strstr(err, "too long"), "%s", err);
}

Test(uri, at_sign_before_scheme_separator_is_safe) {
    /* An '@' before "://" once made the masking code read past the string.
     * Heap copies, so valgrind or ASan sees any read past the end. */
    static const char *odd[] = {"a@b://c", "@://", "x@y://", "u@redis://h", "a:b@c://d"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        rl_uri_t u;
        char err[256] = "";
        char *s = strdup(odd[i]);
        cr_assert_not_null(s);
        cr_assert_eq(rl_uri_parse(s, &u, err, sizeof err), REDLOCK_ERR_CONFIG, "%s", odd[i]);
        cr_assert_not_null(strstr(err, "scheme"), "%s: %s", odd[i], err);
        free(s);
    }
}

/* ---- the err buffer ---------------------------------------------------------- */

Test(uri, err_buffer_optional_and_bounded) {
    rl_uri_t u;
    cr_assert_eq(rl_uri_parse("redis://h:0", &u, NULL, 0), REDLOCK_ERR_CONFIG);
    cr_assert_eq(rl_uri_parse("redis://h:0", &u, NULL, 100), REDLOCK_ERR_CONFIG);
    char err[16];
    memset(err, 'X', sizeof err);
    cr_assert_eq(rl_uri_parse("redis://h:0", &u, err, 0), REDLOCK_ERR_CONFIG);
    cr_assert_eq(err[0], 'X', "errlen 0 must not write");
    cr_assert_eq(rl_uri_parse("redis://h:0", &u, err, 10), REDLOCK_ERR_CONFIG);
    cr_assert_eq(strlen(err), 9u, "message not cut to the buffer: '%s'", err);
    cr_assert_eq(err[10], 'X', "wrote past errlen");
    cr_assert_eq(rl_uri_parse("redis://h:6379", &u, NULL, 0), REDLOCK_OK);
    rl_uri_clear(&u);
}

/* ---- rl_uri_same_server ---------------------------------------------------- */

static int same(const char *a, const char *b) {
    rl_uri_t ua, ub;
    char err[256] = "";
    cr_assert_eq(rl_uri_parse(a, &ua, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_assert_eq(rl_uri_parse(b, &ub, err, sizeof err), REDLOCK_OK, "%s", err);
    int r = rl_uri_same_server(&ua, &ub);
    cr_assert_eq(r, rl_uri_same_server(&ub, &ua), "%s vs %s: not symmetric", a, b);
    rl_uri_clear(&ua);
    rl_uri_clear(&ub);
    return r;
}

Test(uri, cluster_uris) {
    rl_uri_t u;
    char err[256];
    cr_assert_eq(rl_uri_parse("redis+cluster://u:pw@10.0.0.1:7000?seed=10.0.0.2:7001&seed=[::1]:7002&seed=h3", &u, err,
                              sizeof err),
                 REDLOCK_OK, "%s", err);
    cr_expect(u.cluster);
    cr_expect(!u.tls);
    cr_expect_str_eq(u.host, "10.0.0.1");
    cr_expect_eq(u.port, 7000);
    cr_expect_str_eq(u.user, "u");
    cr_expect_str_eq(u.pass, "pw");
    cr_assert_eq(u.nseeds, 3);
    cr_expect_str_eq(u.seeds[0].host, "10.0.0.2");
    cr_expect_eq(u.seeds[0].port, 7001);
    cr_expect_str_eq(u.seeds[1].host, "::1");
    cr_expect_eq(u.seeds[2].port, 6379, "a seed's port defaults to 6379");
    cr_expect_str_eq(u.display, "redis+cluster://u:***@10.0.0.1:7000?seed=10.0.0.2:7001&seed=[::1]:7002&seed=h3:6379");
    rl_uri_t back;
    cr_assert_eq(rl_uri_parse(u.display, &back, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_expect_eq(back.nseeds, 3);
    rl_uri_clear(&back);
    rl_uri_t member;
    cr_assert_eq(rl_uri_member(&member, &u, "10.0.0.9", 7009), 0);
    cr_expect(!member.cluster);
    cr_expect_str_eq(member.display, "redis://u:***@10.0.0.9:7009", "a member keeps the credentials");
    cr_expect_str_eq(member.pass, "pw");
    rl_uri_clear(&member);
    rl_uri_clear(&u);
    cr_assert_eq(rl_uri_parse("REDISS+CLUSTER://h", &u, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_expect(u.cluster && u.tls);
    cr_expect_eq(u.port, 6379);
    cr_expect_str_eq(u.display, "rediss+cluster://h:6379");
    rl_uri_clear(&u);
}

Test(uri, a_cluster_is_the_same_server_as_any_of_its_seeds) {
    rl_uri_t a, b, c;
    cr_assert_eq(rl_uri_parse("redis+cluster://h:7000?seed=h:7001", &a, NULL, 0), REDLOCK_OK);
    cr_assert_eq(rl_uri_parse("redis://h:7001", &b, NULL, 0), REDLOCK_OK);
    cr_assert_eq(rl_uri_parse("redis+cluster://g:7000?seed=h:7001", &c, NULL, 0), REDLOCK_OK);
    cr_expect(rl_uri_same_server(&a, &b));
    cr_expect(rl_uri_same_server(&b, &a));
    cr_expect(rl_uri_same_server(&a, &c), "two URIs sharing a seed name one cluster");
    rl_uri_clear(&a);
    rl_uri_clear(&b);
    rl_uri_clear(&c);
}

Test(uri, same_server) {
    cr_assert_eq(same("redis://h:7000/1", "redis://h:7000/2"), 1);
    cr_assert_eq(same("redis://h:7000", "redis://h:7000"), 1);
    cr_assert_eq(same("redis://h", "redis://h:6379"), 1);
    cr_assert_eq(same("redis://h:6379", "redis://H:6379"), 1);
    cr_assert_eq(same("redis://a:x@h:7000", "redis://b:y@h:7000/3"), 1);
    cr_assert_eq(same("redis://[::1]:7000", "redis://[::1]:7000/4"), 1);
    cr_assert_eq(same("redis://h:7000", "redis://h:7001"), 0);
    cr_assert_eq(same("redis://h1:7000", "redis://h2:7000"), 0);
    cr_assert_eq(same("unix:///tmp/x.sock", "unix:///tmp/x.sock?db=3"), 1);
    cr_assert_eq(same("unix:///tmp/x.sock", "unix://u:p@/tmp/x.sock"), 1);
    cr_assert_eq(same("unix:///tmp/x.sock", "unix:///tmp/y.sock"), 0);
    cr_assert_eq(same("redis://localhost:6379", "unix:///tmp/x.sock"), 0);
    cr_assert_eq(same("unix:///tmp/x.sock", "redis://localhost"), 0);
}

/* ---- clearing and leaks ------------------------------------------------------ */

Test(uri, clear_is_safe_on_zeroed_and_twice) {
    rl_uri_t u;
    memset(&u, 0, sizeof u);
    rl_uri_clear(&u);
    assert_zeroed(&u, "zeroed");
    rl_uri_clear(&u);
    rl_uri_clear(NULL);

    char err[256] = "";
    cr_assert_eq(rl_uri_parse("redis://u:p@h:7000/3", &u, err, sizeof err), REDLOCK_OK, "%s", err);
    rl_uri_clear(&u);
    assert_zeroed(&u, "cleared");
    rl_uri_clear(&u);
    assert_zeroed(&u, "cleared twice");
}

Test(uri, parse_clear_loop_frees_everything) {
    /* Run under valgrind --leak-check=full: every parse, good or bad, leaves
     * nothing behind once cleared. */
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
            rl_uri_t u;
            cr_assert_eq(rl_uri_parse(good[i].s, &u, NULL, 0), REDLOCK_OK);
            rl_uri_clear(&u);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            rl_uri_t u;
            char err[64];
            cr_assert_eq(rl_uri_parse(bad[i].s, &u, err, sizeof err), REDLOCK_ERR_CONFIG);
        }
        for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
            rl_uri_t u;
            cr_assert_eq(rl_uri_parse(secrets[i].s, &u, NULL, 0), REDLOCK_ERR_CONFIG);
        }
    }
}

/* Writes display into out (n bytes) with secrets[0..k-1] in place of its
 * masked passwords ("***"), in order; fails the test unless it masks
 * exactly k of them. */
static void unmask(char *out, size_t n, const char *display, const char *const *secrets, size_t k) {
    size_t len = 0, put = 0;
    for (const char *p = display; *p;) {
        const char *from = p;
        size_t m = 1;
        if (put < k && !strncmp(p, "***", 3)) {
            from = secrets[put++];
            m = strlen(from);
            p += 3;
        } else {
            p++;
        }
        cr_assert_lt(len + m, n, "'%s' unmasked does not fit %zu bytes", display, n);
        memcpy(out + len, from, m);
        len += m;
    }
    out[len] = '\0';
    cr_assert_eq(put, k, "'%s' masks %zu passwords, want %zu", display, put, k);
    cr_assert_null(strstr(out, "***"), "'%s' masks more than %zu passwords", display, k);
}

/* Expects b to name the same sentinel group as a, with the same
 * credentials, database, replicas= and display. */
static void expect_same_group(const rl_uri_t *b, const rl_uri_t *a) {
    cr_expect(b->sentinel && !b->cluster);
    cr_expect_eq(b->tls, a->tls);
    cr_expect_eq(b->sentinel_tls, a->sentinel_tls);
    cr_expect_str_eq(b->host, a->host);
    cr_expect_eq(b->port, a->port);
    cr_expect_str_eq(b->master, a->master);
    assert_str_or_null(b->user, a->user, "user", a->display);
    assert_str_or_null(b->pass, a->pass, "pass", a->display);
    assert_str_or_null(b->sentinel_pass, a->sentinel_pass, "sentinel_password", a->display);
    cr_expect_eq(b->db, a->db);
    cr_expect_eq(b->replicas, a->replicas);
    cr_assert_eq(b->nseeds, a->nseeds);
    for (size_t i = 0; i < a->nseeds; i++) {
        cr_expect_str_eq(b->seeds[i].host, a->seeds[i].host, "%s: sentinel %zu's host", a->display, i);
        cr_expect_eq(b->seeds[i].port, a->seeds[i].port, "%s: sentinel %zu's port %d, want %d", a->display, i,
                     b->seeds[i].port, a->seeds[i].port);
    }
    cr_expect_str_eq(b->display, a->display);
}

Test(uri, sentinel_uris) {
    rl_uri_t u, back;
    char err[512] = "";
    cr_assert_eq(rl_uri_parse("redis+sentinel://u:pw@10.0.0.1:26379/mymaster?sentinel=10.0.0.2:26380&sentinel=h3"
                              "&sentinel_password=spw&db=2&replicas=1",
                              &u, err, sizeof err),
                 REDLOCK_OK, "%s", err);
    cr_expect(u.sentinel && !u.cluster && !u.tls);
    cr_expect_str_eq(u.host, "10.0.0.1");
    cr_expect_eq(u.port, 26379);
    cr_expect_str_eq(u.master, "mymaster");
    cr_expect_eq(u.nseeds, 2);
    cr_expect_str_eq(u.seeds[1].host, "h3");
    cr_expect_eq(u.seeds[1].port, 6379, "a sentinel's port defaults to 6379");
    cr_expect_str_eq(u.sentinel_pass, "spw");
    cr_expect_eq(u.db, 2);
    cr_expect_eq(u.replicas, 1);
    cr_expect_str_eq(u.display, "redis+sentinel://u:***@10.0.0.1:26379/mymaster?sentinel=10.0.0.2:26380"
                                "&sentinel=h3:6379&sentinel_password=***&db=2&replicas=1");
    cr_expect_null(strstr(u.display, "spw"), "the sentinels' password is never shown");
    /* the display, with the real passwords put back, parses to the same group */
    char full[512];
    unmask(full, sizeof full, u.display, (const char *const[]){"pw", "spw"}, 2);
    cr_assert_eq(rl_uri_parse(full, &back, err, sizeof err), REDLOCK_OK, "%s: %s", full, err);
    expect_same_group(&back, &u);
    rl_uri_clear(&back);
    /* an IPv6 sentinel over TLS, a master name with '-', '.' and '_', no replicas= */
    cr_assert_eq(rl_uri_parse("rediss+sentinel://[::1]:26379/m-1.a_b", &back, err, sizeof err), REDLOCK_OK, "%s", err);
    cr_expect(back.sentinel && back.tls);
    cr_expect_str_eq(back.host, "::1");
    cr_expect_str_eq(back.master, "m-1.a_b");
    cr_expect_eq(back.replicas, -1, "no replicas= given");
    cr_expect_str_eq(back.display, "rediss+sentinel://[::1]:26379/m-1.a_b");
    rl_uri_clear(&back);
    rl_uri_t g2, other;
    cr_assert_eq(rl_uri_parse("redis+sentinel://h3/mymaster", &g2, NULL, 0), REDLOCK_OK);
    cr_assert_eq(rl_uri_parse("redis+sentinel://10.0.0.1:26379/other", &other, NULL, 0), REDLOCK_OK);
    cr_expect(rl_uri_same_server(&u, &g2), "one group named through another of its sentinels");
    cr_expect(!rl_uri_same_server(&u, &other), "sentinels watch many groups: another master is another node");
    rl_uri_clear(&g2);
    rl_uri_clear(&other);
    rl_uri_clear(&u);
}

/* sentinel_tls: TLS to the sentinels follows the scheme unless the
 * parameter says otherwise; the display shows it only when given. */
Test(uri, sentinel_tls_parameter) {
    struct {
        const char *in;
        int tls, sentinel_tls;
        const char *display;
    } cases[] = {
        {"redis+sentinel://h:1/m", 0, 0, "redis+sentinel://h:1/m"},
        {"rediss+sentinel://h:1/m", 1, 1, "rediss+sentinel://h:1/m"},
        {"redis+sentinel://h:1/m?sentinel_tls=yes", 0, 1, "redis+sentinel://h:1/m?sentinel_tls=yes"},
        {"redis+sentinel://h:1/m?sentinel_tls=1&db=2", 0, 1, "redis+sentinel://h:1/m?sentinel_tls=yes&db=2"},
        {"rediss+sentinel://h:1/m?sentinel_tls=no", 1, 0, "rediss+sentinel://h:1/m?sentinel_tls=no"},
        {"rediss+sentinel://h:1/m?sentinel=g:2&sentinel_tls=0", 1, 0,
         "rediss+sentinel://h:1/m?sentinel=g:2&sentinel_tls=no"},
        {"redis+sentinel://h:1/m?sentinel_tls=no", 0, 0, "redis+sentinel://h:1/m?sentinel_tls=no"},
        {"rediss+sentinel://h:1/m?sentinel_tls=YES", 1, 1, "rediss+sentinel://h:1/m?sentinel_tls=yes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_uri_t u, back;
        char err[512] = "";
        cr_assert_eq(rl_uri_parse(cases[i].in, &u, err, sizeof err), REDLOCK_OK, "%s: %s", cases[i].in, err);
        cr_expect_eq(u.tls, cases[i].tls, "%s: tls to the master", cases[i].in);
        cr_expect_eq(u.sentinel_tls, cases[i].sentinel_tls, "%s: tls to the sentinels", cases[i].in);
        cr_expect_str_eq(u.display, cases[i].display, "%s", cases[i].in);
        cr_assert_eq(rl_uri_parse(u.display, &back, err, sizeof err), REDLOCK_OK, "%s: %s", u.display, err);
        cr_expect_eq(back.sentinel_tls, u.sentinel_tls, "%s read back", u.display);
        rl_uri_clear(&back);
        rl_uri_clear(&u);
    }
}

Test(uri, replicas_on_every_kind) {
    const char *ok[] = {"redis://h:1?replicas=2", "redis://h:1/3?replicas=2", "unix:///tmp/s?db=1&replicas=2",
                        "redis+cluster://h:1?seed=g:2&replicas=2", "redis+sentinel://h:1/m?replicas=2"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        rl_uri_t u, back;
        char err[512] = "";
        cr_assert_eq(rl_uri_parse(ok[i], &u, err, sizeof err), REDLOCK_OK, "%s: %s", ok[i], err);
        cr_expect_eq(u.replicas, 2, "%s", ok[i]);
        cr_expect_not_null(strstr(u.display, "replicas=2"), "%s: %s", ok[i], u.display);
        cr_assert_eq(rl_uri_parse(u.display, &back, err, sizeof err), REDLOCK_OK, "%s: %s", u.display, err);
        cr_expect_str_eq(back.display, u.display);
        rl_uri_t m;
        cr_assert_eq(rl_uri_member(&m, &u, "10.1.1.1", 7000), 0);
        cr_expect_eq(m.replicas, 2, "a cluster's shard keeps its node's replicas=");
        rl_uri_clear(&m);
        rl_uri_clear(&back);
        rl_uri_clear(&u);
    }
}
