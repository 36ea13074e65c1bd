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

/* The reason the parsers below return when out of memory: rl_uri_parse
 * tells it by its address and answers REDLOCK_ERR_NOMEM. */
static const char NOMEM[] = "out of memory";

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
    if (!(u->host = dupn(p, (size_t)(hend - p)))) return NOMEM;
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

/* Parses "/path" (its query is parse_query's). Returns NULL or a static reason. */
static const char *parse_unixpath(const char *p, rl_uri_t *u) {
    if (*p != '/') return "unix socket path must be absolute";
    size_t n = strlen(p);
    if (n >= 108) return "unix socket path too long";
    return (u->path = dupn(p, n)) ? NULL : NOMEM;
}

/* Parses one host[:port] value [p, end) of a seed= or sentinel= parameter
 * (what, for the messages) into the next of u's extra members. Returns
 * NULL or a static reason. */
static const char *parse_member(const char *p, const char *end, rl_uri_t *u, const char *what) {
    if (u->nseeds == RL_URI_MAX_SEEDS) return u->sentinel ? "more than 16 sentinels" : "more than 16 seeds";
    if (p == end) return u->sentinel ? "sentinel=host:port needs a host" : "seed=host:port needs a host";
    char *one = dupn(p, (size_t)(end - p));
    rl_uri_t tmp = {0};
    const char *why = one ? parse_hostport(one, &tmp) : NOMEM;
    if (!why && (tmp.db || strchr(one, '/'))) why = what;
    free(one);
    if (!why && !u->seeds && !(u->seeds = calloc(RL_URI_MAX_SEEDS, sizeof *u->seeds))) why = NOMEM;
    if (why) {
        free(tmp.host);
        return why;
    }
    u->seeds[u->nseeds++] = (rl_seed_t){.host = tmp.host, .port = tmp.port};
    return NULL;
}

/* Parses sentinel_tls's value [v, end): yes/1 or no/0. Returns NULL or a
 * reason naming the bad value (in scratch). */
static const char *parse_yesno(const char *v, const char *end, rl_uri_t *u, char *scratch, size_t n) {
    size_t len = (size_t)(end - v);
    int yes = (len == 3 && !strncasecmp(v, "yes", 3)) || (len == 1 && *v == '1');
    int no = (len == 2 && !strncasecmp(v, "no", 2)) || (len == 1 && *v == '0');
    if (u->sentinel_tls_given) return "sentinel_tls given twice";
    if (!yes && !no) {
        snprintf(scratch, n, "sentinel_tls must be yes or no (or 1 or 0), not '%.*s'", (int)(len > 40 ? 40 : len), v);
        return scratch;
    }
    u->sentinel_tls = yes;
    u->sentinel_tls_given = 1;
    return NULL;
}

/* The query parameters a node of u's kind takes, for the messages. */
static const char *params_taken(const rl_uri_t *u) {
    if (u->sentinel)
        return "a sentinel group takes sentinel=host:port, sentinel_password=, sentinel_tls=yes|no, db=N and "
               "replicas=N";
    if (u->cluster) return "a cluster takes seed=host:port and replicas=N";
    if (u->kind == RL_URI_UNIX) return "a socket path takes db=N and replicas=N";
    return "a node takes replicas=N";
}

/* Parses one "key=value" parameter [p, end) of u's query. Returns NULL or
 * a static reason. */
static const char *parse_param(const char *p, const char *end, rl_uri_t *u, char *scratch, size_t n) {
    const char *eq = memchr(p, '=', (size_t)(end - p));
    size_t klen = eq ? (size_t)(eq - p) : (size_t)(end - p);
    const char *v = eq ? eq + 1 : end;
#define RL_KEY(k) (klen == sizeof k - 1 && !strncmp(p, k, klen))
    if (!eq) {
        snprintf(scratch, n, "parameter '%.*s' has no value: %s", (int)(klen > 40 ? 40 : klen), p, params_taken(u));
        return scratch;
    }
    if (RL_KEY("replicas")) return parse_int(v, end, 0, 1000, &u->replicas) < 0 ? "replicas must be 0..1000" : NULL;
    if (RL_KEY("seed") && u->cluster) return parse_member(v, end, u, "a seed is host:port, with no database or path");
    if (RL_KEY("sentinel") && u->sentinel)
        return parse_member(v, end, u, "a sentinel is host:port, with no database or path");
    if (RL_KEY("sentinel_password") && u->sentinel) {
        if (u->sentinel_pass) return "sentinel_password given twice";
        return (u->sentinel_pass = dupn(v, (size_t)(end - v))) ? NULL : NOMEM;
    }
    if (RL_KEY("sentinel_tls") && u->sentinel) return parse_yesno(v, end, u, scratch, n);
    if (RL_KEY("db") && (u->sentinel || u->kind == RL_URI_UNIX))
        return parse_int(v, end, 0, 1000000, &u->db) < 0 ? "database must be a number" : NULL;
#undef RL_KEY
    snprintf(scratch, n, "unknown parameter '%.*s': %s", (int)(klen > 40 ? 40 : klen), p, params_taken(u));
    return scratch;
}

/* Parses the query q ("k=v&k=v", NULL: none). Returns NULL or a reason. */
static const char *parse_query(const char *q, rl_uri_t *u, char *scratch, size_t n) {
    const char *why = NULL;
    for (const char *v = q; !why && v;) {
        const char *amp = strchr(v, '&');
        const char *end = amp ? amp : v + strlen(v);
        why = parse_param(v, end, u, scratch, n);
        v = amp ? amp + 1 : NULL;
    }
    return why;
}

/* Parses a sentinel group's "host[:port]/NAME" (host:port its first
 * sentinel, NAME the master's name in the sentinels). Returns NULL or a
 * static reason. */
static const char *parse_group(const char *p, rl_uri_t *u) {
    const char *from = *p == '[' && strchr(p, ']') ? strchr(p, ']') : p; /* (past an IPv6 host) */
    const char *slash = strchr(from, '/');
    if (!slash || !slash[1]) return "a sentinel group names its master: redis+sentinel://host:port/NAME";
    for (const char *q = slash + 1; *q; q++)
        if (!isalnum((unsigned char)*q) && !strchr("._-", *q)) return "bad character in the master's name";
    if (strlen(slash + 1) > 128) return "master name longer than 128 bytes";
    char *head = dupn(p, (size_t)(slash - p));
    const char *why = head ? parse_hostport(head, u) : NOMEM;
    free(head);
    if (!why && !(u->master = strdup(slash + 1))) why = NOMEM;
    return why;
}

/* Parses what follows the user part by u's kind: the authority (and db or
 * master name), then the query. Returns NULL or a reason. */
static const char *parse_rest(const char *p, rl_uri_t *u, char *scratch, size_t n) {
    const char *q = strchr(p, '?');
    char *body = dupn(p, q ? (size_t)(q - p) : strlen(p));
    if (!body) return NOMEM;
    const char *why = u->sentinel             ? parse_group(body, u)
                      : u->kind == RL_URI_TCP ? parse_hostport(body, u)
                                              : parse_unixpath(body, u);
    if (!why && u->cluster && u->db) why = "a Redis Cluster has only database 0";
    free(body);
    return why ? why : parse_query(q ? q + 1 : NULL, u, scratch, n);
}

/* Appends "<sep><text>" to buf (the first parameter after '?', the next after '&'). */
static void add_param(char *buf, size_t size, int *nparams, const char *text) {
    size_t at = strlen(buf);
    snprintf(buf + at, size - at, "%s%s", (*nparams)++ ? "&" : "?", text);
}

/* Builds u->display: the URI with the passwords replaced by "***". */
static int make_display(rl_uri_t *u) {
    char buf[RL_URI_MAX + 64], one[300];
    const char *user = u->user ? u->user : "";
    const char *cred = u->pass ? ":***@" : (u->user ? "@" : "");
    const char *kind = u->cluster ? "+cluster" : u->sentinel ? "+sentinel" : "";
    int np = 0;
    if (u->kind == RL_URI_UNIX)
        snprintf(buf, sizeof buf, "unix://%s%s%s", user, cred, u->path);
    else
        snprintf(buf, sizeof buf, strchr(u->host, ':') ? "%s%s://%s%s[%s]:%d%s%s" : "%s%s://%s%s%s:%d%s%s",
                 u->tls ? "rediss" : "redis", kind, user, cred, u->host, u->port, u->master ? "/" : "",
                 u->master ? u->master : "");
    if (u->db && u->kind == RL_URI_TCP && !u->sentinel)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "/%d", u->db);
    for (size_t i = 0; i < u->nseeds; i++) {
        const rl_seed_t *sd = &u->seeds[i];
        snprintf(one, sizeof one, strchr(sd->host, ':') ? "%s=[%s]:%d" : "%s=%s:%d", u->sentinel ? "sentinel" : "seed",
                 sd->host, sd->port);
        add_param(buf, sizeof buf, &np, one);
    }
    if (u->sentinel_pass) add_param(buf, sizeof buf, &np, "sentinel_password=***");
    if (u->sentinel_tls_given)
        add_param(buf, sizeof buf, &np, u->sentinel_tls ? "sentinel_tls=yes" : "sentinel_tls=no");
    if (u->db && (u->sentinel || u->kind == RL_URI_UNIX)) { /* in the form the parser reads back */
        snprintf(one, sizeof one, "db=%d", u->db);
        add_param(buf, sizeof buf, &np, one);
    }
    if (u->replicas >= 0) {
        snprintf(one, sizeof one, "replicas=%d", u->replicas);
        add_param(buf, sizeof buf, &np, one);
    }
    u->display = strdup(buf);
    return u->display ? 0 : -1;
}

int rl_uri_parse(const char *s, rl_uri_t *u, char *err, size_t errlen) {
    memset(u, 0, sizeof *u);
    if (!s) return uri_fail("(null)", "missing", err, errlen);
    if (!*s) return uri_fail(s, "empty", err, errlen);
    if (strlen(s) > RL_URI_MAX) return uri_fail(s, "longer than 4096 bytes", err, errlen);
    const char *p;
    u->replicas = -1;
    if (strncasecmp(s, "redis+cluster://", 16) == 0 || strncasecmp(s, "rediss+cluster://", 17) == 0) {
        u->kind = RL_URI_TCP;
        u->cluster = 1;
        u->tls = tolower((unsigned char)s[5]) == 's';
        p = s + (u->tls ? 17 : 16);
    } else if (strncasecmp(s, "redis+sentinel://", 17) == 0 || strncasecmp(s, "rediss+sentinel://", 18) == 0) {
        u->kind = RL_URI_TCP;
        u->sentinel = 1;
        u->tls = tolower((unsigned char)s[5]) == 's';
        p = s + (u->tls ? 18 : 17);
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
        return uri_fail(s,
                        "scheme must be redis://, rediss://, unix://, redis+cluster://, rediss+cluster://, "
                        "redis+sentinel:// or rediss+sentinel://",
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
    char scratch[200];
    const char *why = parse_rest(p, u, scratch, sizeof scratch);
    if (why) {
        rl_uri_clear(u);
        if (why == NOMEM) return REDLOCK_ERR_NOMEM;
        return uri_fail(s, why, err, errlen);
    }
    if (u->sentinel && !u->sentinel_tls_given) u->sentinel_tls = u->tls; /* all TLS or none, by default */
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
    free(u->master);
    if (u->sentinel_pass) {
        memset(u->sentinel_pass, 0, strlen(u->sentinel_pass));
        free(u->sentinel_pass);
    }
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
    if (a->kind != b->kind || a->sentinel != b->sentinel) return 0;
    if (a->sentinel && strcmp(a->master, b->master) != 0) return 0; /* (sentinels watch many groups) */
    if (a->kind == RL_URI_UNIX) return strcmp(a->path, b->path) == 0;
    if (names_server(a, b->host, b->port)) return 1;
    for (size_t i = 0; i < b->nseeds; i++)
        if (names_server(a, b->seeds[i].host, b->seeds[i].port)) return 1;
    return 0;
}

size_t rl_uri_identity(const rl_uri_t *u, char *buf, size_t n) {
    char host[300];
    int len;
    if (u->kind == RL_URI_UNIX) return (size_t)snprintf(buf, n, "unix:%s/%d", u->path, u->db);
    size_t h = 0;
    int v6 = strchr(u->host, ':') != NULL;
    if (v6) host[h++] = '[';
    for (const char *p = u->host; *p && h < sizeof host - 2; p++) host[h++] = (char)tolower((unsigned char)*p);
    if (v6) host[h++] = ']';
    host[h] = '\0';
    if (u->cluster)
        len = snprintf(buf, n, "cluster:%s:%d", host, u->port);
    else if (u->sentinel)
        len = snprintf(buf, n, "sentinel:%s@%s:%d/%d", u->master, host, u->port, u->db);
    else
        len = snprintf(buf, n, "tcp:%s:%d/%d", host, u->port, u->db);
    return len < 0 ? n : (size_t)len;
}

int rl_uri_same_node(const rl_uri_t *a, const rl_uri_t *b) {
    return rl_uri_same_server(a, b) && a->cluster == b->cluster && a->db == b->db;
}

int rl_uri_member(rl_uri_t *u, const rl_uri_t *base, const char *host, int port) {
    *u = (rl_uri_t){.kind = RL_URI_TCP, .tls = base->tls, .port = port, .replicas = base->replicas};
    u->host = strdup(host);
    int ok = u->host != NULL;
    if (ok && base->user) ok = (u->user = strdup(base->user)) != NULL;
    if (ok && base->pass) ok = (u->pass = strdup(base->pass)) != NULL;
    if (ok) ok = make_display(u) == 0;
    if (!ok) rl_uri_clear(u);
    return ok ? 0 : -1;
}
