/* uri.c -- parse node URIs; every error names the offending string. */
#define _POSIX_C_SOURCE 200809L
#include "uri.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redlock.h"

#define RL_URI_MAX 4096

/* Writes "bad node URI '<s>': why" into err. The URI is printed with any
 * password masked so error text never leaks it: whatever lies between the
 * first ':' of the user part (after "://", or from the start when there is
 * no "://" before the last '@') and the last '@' is shown as "***".
 * Returns REDLOCK_ERR_CONFIG. */
static int uri_fail(const char *s, const char *why, char *err, size_t errlen) {
    if (err && errlen) {
        char shown[160];
        const char *at = strrchr(s, '@'), *scheme = strstr(s, "://");
        const char *start = (scheme && at && at >= scheme + 3) ? scheme + 3 : s;
        const char *colon = at ? memchr(start, ':', (size_t)(at - start)) : NULL;
        if (colon) /* user:pass@ -> user:***@ */
            snprintf(shown, sizeof shown, "%.*s:***%.100s", (int)(colon - s), s, at);
        else
            snprintf(shown, sizeof shown, "%.150s", s);
        snprintf(err, errlen, "bad node URI '%s': %s", shown, why);
    }
    return REDLOCK_ERR_CONFIG;
}

/* Returns a malloc'd copy of n bytes of p, or NULL. */
static char *dupn(const char *p, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

/* Parses a decimal in [lo, hi] from [p, end). Returns 0 and sets *v, or -1. */
static int parse_int(const char *p, const char *end, long lo, long hi, int *v) {
    if (p == end || end - p > 9) return -1;
    long x = 0;
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p)) return -1;
        x = x * 10 + (*p - '0');
    }
    if (x < lo || x > hi) return -1;
    *v = (int)x;
    return 0;
}

/* Splits "user:pass" at [p, end) into u->user / u->pass. Empty user means
 * password only (redis://:pass@host). Returns 0, or -1 on no memory. */
static int parse_userinfo(const char *p, const char *end, rl_uri_t *u) {
    const char *c = memchr(p, ':', (size_t)(end - p));
    const char *uend = c ? c : end;
    if (uend > p && !(u->user = dupn(p, (size_t)(uend - p)))) return -1;
    if (c && !(u->pass = dupn(c + 1, (size_t)(end - c - 1)))) return -1;
    return 0;
}

/* 1 when s is an IPv6 address literal. */
static int is_ipv6(const char *s) {
    struct in6_addr a;
    return inet_pton(AF_INET6, s, &a) == 1;
}

/* Parses "host[:port][/db]" or "[v6]:port/db" at p. Returns NULL on
 * success or a static reason string. */
static const char *parse_hostport(const char *p, rl_uri_t *u) {
    const char *hend, *rest;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend) return "unclosed '[' in IPv6 host";
        p++;
        rest = hend + 1;
    } else {
        hend = p + strcspn(p, ":/?#");
        rest = hend;
    }
    if (hend == p) return "missing host";
    if (hend - p > 253) return "host longer than 253 bytes";
    for (const char *q = p; q < hend; q++)
        if (!isalnum((unsigned char)*q) && !strchr(".-_:%", *q)) return "bad character in host";
    if (!(u->host = dupn(p, (size_t)(hend - p)))) return "out of memory";
    if (rest != hend && !strchr(u->host, '%') && !is_ipv6(u->host)) return "not an IPv6 address in '[...]'";
    u->port = 6379;
    if (*rest == ':') {
        const char *pe = rest + 1 + strcspn(rest + 1, "/?#");
        if (parse_int(rest + 1, pe, 1, 65535, &u->port) < 0) return "port must be 1..65535";
        rest = pe;
    }
    if (*rest == '/' && rest[1] != '\0') {
        const char *de = rest + 1 + strcspn(rest + 1, "?#");
        if (parse_int(rest + 1, de, 0, 1000000, &u->db) < 0) return "database must be a number";
        rest = de;
    } else if (*rest == '/') {
        rest++;
    }
    if (*rest != '\0') return "unexpected text after host, port and database";
    return NULL;
}

/* Parses "/path[?db=N]". Returns NULL or a static reason. */
static const char *parse_unixpath(const char *p, rl_uri_t *u) {
    if (*p != '/') return "unix socket path must be absolute";
    size_t n = strcspn(p, "?");
    if (n >= 108) return "unix socket path too long";
    if (!(u->path = dupn(p, n))) return "out of memory";
    if (p[n] == '?') {
        if (strncmp(p + n, "?db=", 4) != 0) return "only ?db=N is understood after a socket path";
        if (parse_int(p + n + 4, p + strlen(p), 0, 1000000, &u->db) < 0) return "database must be a number";
    }
    return NULL;
}

/* Parses one "seed=host[:port]" value [p, end) into the next seed.
 * Returns NULL or a static reason. */
static const char *parse_seed(const char *p, const char *end, rl_uri_t *u) {
    if (u->nseeds == RL_URI_MAX_SEEDS) return "more than 16 seeds";
    if (end - p < 6 || strncmp(p, "seed=", 5) != 0) return "a cluster takes only seed=host:port after '?'";
    char *one = dupn(p + 5, (size_t)(end - p - 5));
    rl_uri_t tmp = {0};
    const char *why = one ? parse_hostport(one, &tmp) : "out of memory";
    if (!why && tmp.db) why = "a seed is host:port, with no database";
    if (!why && strchr(one, '/')) why = "a seed is host:port, with no path";
    free(one);
    if (!why && !u->seeds && !(u->seeds = calloc(RL_URI_MAX_SEEDS, sizeof *u->seeds))) why = "out of memory";
    if (why) {
        free(tmp.host);
        return why;
    }
    u->seeds[u->nseeds++] = (rl_seed_t){.host = tmp.host, .port = tmp.port};
    return NULL;
}

/* Parses a cluster's "host[:port][?seed=host:port&...]". A cluster has
 * only database 0. Returns NULL or a static reason. */
static const char *parse_cluster(const char *p, rl_uri_t *u) {
    const char *q = strchr(p, '?');
    char *head = dupn(p, q ? (size_t)(q - p) : strlen(p));
    const char *why = head ? parse_hostport(head, u) : "out of memory";
    if (!why && u->db) why = "a Redis Cluster has only database 0";
    free(head);
    for (const char *v = q ? q + 1 : NULL; !why && v; ) {
        const char *amp = strchr(v, '&');
        const char *end = amp ? amp : v + strlen(v);
        why = parse_seed(v, end, u);
        v = amp ? amp + 1 : NULL;
    }
    return why;
}

/* Builds u->display: the URI with the password replaced by "***". */
static int make_display(rl_uri_t *u) {
    char buf[RL_URI_MAX + 64];
    const char *user = u->user ? u->user : "";
    const char *cred = u->pass ? ":***@" : (u->user ? "@" : "");
    const char *scheme = u->cluster ? (u->tls ? "rediss+cluster" : "redis+cluster") : (u->tls ? "rediss" : "redis");
    if (u->kind == RL_URI_UNIX)
        snprintf(buf, sizeof buf, "unix://%s%s%s", user, cred, u->path);
    else if (strchr(u->host, ':'))
        snprintf(buf, sizeof buf, "%s://%s%s[%s]:%d", scheme, user, cred, u->host, u->port);
    else
        snprintf(buf, sizeof buf, "%s://%s%s%s:%d", scheme, user, cred, u->host, u->port);
    for (size_t i = 0; i < u->nseeds; i++) {
        size_t at = strlen(buf);
        const rl_seed_t *sd = &u->seeds[i];
        snprintf(buf + at, sizeof buf - at, strchr(sd->host, ':') ? "%sseed=[%s]:%d" : "%sseed=%s:%d",
                 i ? "&" : "?", sd->host, sd->port);
    }
    if (u->db) /* in the form the parser reads back: a socket path takes ?db=N */
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), u->kind == RL_URI_UNIX ? "?db=%d" : "/%d", u->db);
    u->display = strdup(buf);
    return u->display ? 0 : -1;
}

int rl_uri_parse(const char *s, rl_uri_t *u, char *err, size_t errlen) {
    memset(u, 0, sizeof *u);
    if (!s) return uri_fail("(null)", "missing", err, errlen);
    if (!*s) return uri_fail(s, "empty", err, errlen);
    if (strlen(s) > RL_URI_MAX) return uri_fail(s, "longer than 4096 bytes", err, errlen);
    const char *p;
    if (strncasecmp(s, "redis+cluster://", 16) == 0 || strncasecmp(s, "rediss+cluster://", 17) == 0) {
        u->kind = RL_URI_TCP;
        u->cluster = 1;
        u->tls = tolower((unsigned char)s[5]) == 's';
        p = s + (u->tls ? 17 : 16);
    } else if (strncasecmp(s, "redis://", 8) == 0) {
        u->kind = RL_URI_TCP;
        p = s + 8;
    } else if (strncasecmp(s, "unix://", 7) == 0) {
        u->kind = RL_URI_UNIX;
        p = s + 7;
    } else if (strncasecmp(s, "rediss://", 9) == 0) {
        u->kind = RL_URI_TCP;
        u->tls = 1;
        p = s + 9;
    } else {
        return uri_fail(s, "scheme must be redis://, rediss://, unix://, redis+cluster:// or rediss+cluster://",
                        err, errlen);
    }
    /* TCP: the last '@' ends the user part (a password may hold '@').
     * UNIX: the path is absolute and may itself hold '@' (systemd instance
     * names), so the user part, if any, ends at the last "@/". */
    const char *at = NULL;
    if (u->kind == RL_URI_TCP)
        at = strrchr(p, '@');
    else if (*p != '/')
        for (const char *q = strstr(p, "@/"); q; q = strstr(q + 1, "@/")) at = q;
    if (at) {
        if (parse_userinfo(p, at, u) < 0) goto nomem;
        p = at + 1;
    }
    const char *why = u->cluster ? parse_cluster(p, u) : u->kind == RL_URI_TCP ? parse_hostport(p, u) : parse_unixpath(p, u);
    if (why) {
        rl_uri_clear(u);
        if (strcmp(why, "out of memory") == 0) return REDLOCK_ERR_NOMEM;
        return uri_fail(s, why, err, errlen);
    }
    if (make_display(u) < 0) goto nomem;
    return REDLOCK_OK;
nomem:
    rl_uri_clear(u);
    return REDLOCK_ERR_NOMEM;
}

void rl_uri_clear(rl_uri_t *u) {
    if (!u) return;
    free(u->host);
    free(u->path);
    free(u->user);
    if (u->pass) {
        memset(u->pass, 0, strlen(u->pass));
        free(u->pass);
    }
    free(u->display);
    for (size_t i = 0; i < u->nseeds; i++) free(u->seeds[i].host);
    free(u->seeds);
    memset(u, 0, sizeof *u);
}

/* 1 when host:port is a's server or one of a's seeds. */
static int names_server(const rl_uri_t *a, const char *host, int port) {
    if (a->port == port && strcasecmp(a->host, host) == 0) return 1;
    for (size_t i = 0; i < a->nseeds; i++)
        if (a->seeds[i].port == port && strcasecmp(a->seeds[i].host, host) == 0) return 1;
    return 0;
}

int rl_uri_same_server(const rl_uri_t *a, const rl_uri_t *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == RL_URI_UNIX) return strcmp(a->path, b->path) == 0;
    if (names_server(a, b->host, b->port)) return 1;
    for (size_t i = 0; i < b->nseeds; i++)
        if (names_server(a, b->seeds[i].host, b->seeds[i].port)) return 1;
    return 0;
}

int rl_uri_member(rl_uri_t *u, const rl_uri_t *base, const char *host, int port) {
    *u = (rl_uri_t){.kind = RL_URI_TCP, .tls = base->tls, .port = port};
    u->host = strdup(host);
    int ok = u->host != NULL;
    if (ok && base->user) ok = (u->user = strdup(base->user)) != NULL;
    if (ok && base->pass) ok = (u->pass = strdup(base->pass)) != NULL;
    if (ok) ok = make_display(u) == 0;
    if (!ok) rl_uri_clear(u);
    return ok ? 0 : -1;
}
