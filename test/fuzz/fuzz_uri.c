/* fuzz_uri.c -- libFuzzer target for the node-URI parser (src/net/uri.c).
 *
 * The input, copied and NUL-terminated, is one node URI. Checked:
 *  - success: a TCP node has a host and a port in 1..65535, a unix node an
 *    absolute socket path; the database is in 0..1000000; the password is
 *    the text uri.h says it is; rl_uri_same_server(u, u) == 1; the display
 *    string parses back to the same server, database and user, with the
 *    password shown only as "***";
 *  - failure: REDLOCK_ERR_CONFIG with a message that names the URI, and u
 *    left holding nothing;
 *  - either way the password never shows: the URI is parsed a second time
 *    with every byte of its password changed, and the display string or the
 *    error message must come out byte for byte the same. Error messages are
 *    also written into small, exactly sized buffers (ASan sees an overrun).
 */
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "redlock.h"
#include "uri.h"

#define URI_MAX 4096 /* longest URI the parser accepts (uri.c) */
#define ERR_LEN 256

/* Where the password lies in s, by the grammar of uri.h: after the first
 * ':' of the user part, which starts after "scheme://" and ends at the
 * last '@' (TCP), or at the last "@/" (unix, when the path does not start
 * right after "unix://"). For an unknown scheme, a user part after the
 * first "://" and before the last '@' is taken to be one too: a mistyped
 * scheme must not leak the password either. Returns 1 and [*b, *e), or 0
 * when s holds no password. */
static int password_span(const char *s, size_t *b, size_t *e) {
    const char *p, *at = NULL;
    if (!strncasecmp(s, "redis://", 8)) {
        p = s + 8;
        at = strrchr(p, '@');
    } else if (!strncasecmp(s, "rediss://", 9)) {
        p = s + 9;
        at = strrchr(p, '@');
    } else if (!strncasecmp(s, "unix://", 7)) {
        p = s + 7;
        if (*p != '/')
            for (const char *q = strstr(p, "@/"); q; q = strstr(q + 1, "@/")) at = q;
    } else {
        const char *scheme = strstr(s, "://");
        if (!scheme) return 0;
        p = scheme + 3;
        at = strrchr(p, '@');
    }
    if (!at) return 0;
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (!colon) return 0;
    *b = (size_t)(colon + 1 - s);
    *e = (size_t)(at - s);
    return 1;
}

static int str_eq(const char *a, const char *b) {
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* u after a failed parse: nothing to free, nothing set. */
static void check_empty(const rl_uri_t *u) {
    FUZZ_CHECK(!u->host && !u->path && !u->user && !u->pass && !u->display);
    FUZZ_CHECK(u->kind == 0 && u->port == 0 && u->db == 0);
}

/* The invariants of a successfully parsed u (from s). */
static void check_parsed(const char *s, const rl_uri_t *u) {
    FUZZ_CHECK(u->kind == RL_URI_TCP || u->kind == RL_URI_UNIX);
    if (u->kind == RL_URI_TCP) {
        FUZZ_CHECK(u->host && u->host[0] != '\0' && !u->path);
        FUZZ_CHECK(u->port >= 1 && u->port <= 65535);
    } else {
        FUZZ_CHECK(u->path && u->path[0] == '/' && strlen(u->path) < 108 && !u->host);
    }
    FUZZ_CHECK(u->db >= 0 && u->db <= 1000000);
    FUZZ_CHECK(u->display && strlen(u->display) < URI_MAX + 63); /* not cut short */
    FUZZ_CHECK(!strncmp(u->display, u->kind == RL_URI_TCP ? "redis" : "unix://", 5));
    FUZZ_CHECK(rl_uri_same_server(u, u) == 1);

    size_t b, e;
    if (password_span(s, &b, &e)) {
        FUZZ_CHECK(u->pass && strlen(u->pass) == e - b && !memcmp(u->pass, s + b, e - b));
        FUZZ_CHECK(strstr(u->display, ":***@"));
    } else {
        FUZZ_CHECK(!u->pass);
    }
    if (u->user) FUZZ_CHECK(u->user[0] != '\0');

    /* The display string reads back as the same node (when it fits the
     * parser's length limit; it can be a few bytes longer than s). */
    if (strlen(u->display) > URI_MAX) return;
    rl_uri_t v;
    char err[ERR_LEN];
    int rc = rl_uri_parse(u->display, &v, err, sizeof err);
    if (rc != REDLOCK_OK) fprintf(stderr, "display '%s' does not parse: %s\n", u->display, err);
    FUZZ_CHECK(rc == REDLOCK_OK);
    FUZZ_CHECK(rl_uri_same_server(u, &v) == 1 && rl_uri_same_server(&v, u) == 1);
    FUZZ_CHECK(v.kind == u->kind && v.port == u->port && v.db == u->db);
    FUZZ_CHECK(str_eq(v.host, u->host) && str_eq(v.path, u->path) && str_eq(v.user, u->user));
    FUZZ_CHECK(u->pass ? (v.pass && !strcmp(v.pass, "***")) : !v.pass);
    FUZZ_CHECK(!strcmp(v.display, u->display));
    rl_uri_clear(&v);
}

/* Parses s; on success checks u, on failure the message in a buffer of
 * errlen bytes. Leaves the display or the message in out (out_len bytes)
 * and returns the parser's result. */
static int parse_one(const char *s, size_t errlen, char *out, size_t out_len) {
    rl_uri_t u;
    char *err = errlen ? malloc(errlen) : NULL; /* exactly errlen: ASan sees any overrun */
    if (errlen && !err) return -1000;
    int rc = rl_uri_parse(s, &u, err, errlen);
    FUZZ_CHECK(rc == REDLOCK_OK || rc == REDLOCK_ERR_CONFIG || rc == REDLOCK_ERR_NOMEM);
    if (rc == REDLOCK_OK) {
        check_parsed(s, &u);
        snprintf(out, out_len, "%s", u.display);
        rl_uri_clear(&u);
        check_empty(&u);
        rl_uri_clear(&u); /* a cleared u may be cleared again */
    } else {
        check_empty(&u);
        out[0] = '\0';
        if (rc == REDLOCK_ERR_CONFIG && errlen) {
            FUZZ_CHECK(memchr(err, '\0', errlen));
            FUZZ_CHECK(!strncmp(err, "bad node URI '", errlen - 1 < 14 ? errlen - 1 : 14));
            snprintf(out, out_len, "%s", err);
        }
    }
    free(err);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 2 * URI_MAX) return 0; /* longer ones are all refused alike */
    char *s = malloc(size + 1);
    char *out1 = malloc(2 * URI_MAX), *out2 = malloc(2 * URI_MAX);
    if (!s || !out1 || !out2) {
        free(s), free(out1), free(out2);
        return 0;
    }
    memcpy(s, data, size);
    s[size] = '\0';

    int rc = parse_one(s, ERR_LEN, out1, 2 * URI_MAX);

    /* The same URI with a different password gives the same text. */
    size_t b, e;
    if (password_span(s, &b, &e) && e > b) {
        for (size_t i = b; i < e; i++) s[i] = s[i] == 'x' ? 'y' : 'x';
        int rc2 = parse_one(s, ERR_LEN, out2, 2 * URI_MAX);
        FUZZ_CHECK(rc2 == rc);
        if (strcmp(out1, out2)) fprintf(stderr, "the password shows:\n  %s\n  %s\n", out1, out2);
        FUZZ_CHECK(!strcmp(out1, out2));
        memcpy(s, data, size); /* back to the input */
    }

    /* Messages cut to a small buffer stay inside it; no buffer at all is fine. */
    parse_one(s, 1 + size % 24, out2, 2 * URI_MAX);
    parse_one(s, 0, out2, 2 * URI_MAX);

    free(s);
    free(out1);
    free(out2);
    return 0;
}
