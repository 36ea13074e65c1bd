/* dial.c -- where a node is, and one connect over all its addresses.
 *
 * A node's host may be an IP literal (or the node a unix socket): its one
 * address is known at once and never looked up. A name is looked up on a
 * thread (resolve.h), never on the thread driving I/O; its addresses are
 * cached, and looked up again in the background once the node has failed
 * (at most every RL_LOOKUP_REFRESH_MS), so a node that moved is found
 * again while a resolver outage leaves the known addresses in use.
 *
 * A connect tries the addresses in the resolver's order within the node's
 * one connect deadline: each address gets an equal share of the time left
 * (a refused address costs nothing and passes its share on), and the first
 * that completes the TCP connect and any TLS handshake is used. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dial.h"
#include "sentinel.h"
#include "redlock.h"

/* A failed node's name is looked up again at most this often. */
#define RL_LOOKUP_REFRESH_MS 2000
/* A Sentinel group's sentinels are asked again at most this often. */
#define RL_SENTINEL_REFRESH_MS 100
/* A lookup unanswered this long is let go, so a fresh one may start
 * (getaddrinfo waits out the resolver's timeouts: 10 s and more). */
#define RL_LOOKUP_ABANDON_MS 5000

void rl_dial_init(rl_conn_t *c) {
    if (c->uri.kind == RL_URI_UNIX) {
        struct sockaddr_un *sun = (struct sockaddr_un *)&c->addrs.ss[0];
        memset(sun, 0, sizeof *sun);
        sun->sun_family = AF_UNIX;
        snprintf(sun->sun_path, sizeof sun->sun_path, "%s", c->uri.path);
        c->addrs.len[0] = sizeof *sun;
        c->addrs.n = 1;
        c->literal = 1;
    } else if (c->uri.sentinel) { /* where its master is: the sentinels say, every time it fails */
        c->literal = 0;
        c->addrs.n = 0;
    } else {
        c->literal = rl_addrs_literal(&c->addrs, c->uri.host, c->uri.port);
    }
}

/* What a lookup of c looks for, for the messages: "lookup of HOST" or
 * "the sentinels of group NAME". */
static const char *sought(const rl_conn_t *c, char *buf, size_t n) {
    if (c->uri.sentinel)
        snprintf(buf, n, "the sentinels of group %s", c->uri.master);
    else
        snprintf(buf, n, "lookup of %s", c->uri.host);
    return buf;
}

void rl_dial_free(rl_conn_t *c) {
    rl_lookup_drop(c->lookup);
    c->lookup = NULL;
}

rl_bio_tls_t rl_dial_sentinel_tls(const rl_conn_t *c) {
    return (rl_bio_tls_t){.ctx = c->lookup_tls_ctx, .server_name = c->tls_name, .verify = c->tls_verify};
}

/* Starts a lookup of c's name when it has no addresses or they are stale,
 * unless one runs (and is not hung) or one started less than
 * RL_LOOKUP_REFRESH_MS ago. */
static void maybe_lookup(rl_conn_t *c, uint64_t now) {
    if (c->lookup) {
        if (now - c->lookup_started_us < (uint64_t)RL_LOOKUP_ABANDON_MS * 1000u) return;
        rl_lookup_drop(c->lookup); /* hung: its thread ends on its own */
        c->lookup = NULL;
    }
    if (c->addrs.n && !c->stale) return;
    if (c->uri.sentinel) /* a failed master may have been replaced: never dial it before they answer */
        c->addrs.n = 0;
    uint32_t refresh = c->uri.sentinel ? RL_SENTINEL_REFRESH_MS : RL_LOOKUP_REFRESH_MS;
    if (c->lookups && now - c->lookup_started_us < (uint64_t)refresh * 1000u) return;
    uint64_t budget_ms = c->connect_deadline_us > now ? (c->connect_deadline_us - now) / 1000u : 0;
    rl_bio_tls_t tls = rl_dial_sentinel_tls(c);
    c->lookup = c->uri.sentinel
                    ? rl_sentinel_lookup_start(&c->uri, &tls, budget_ms > 20 ? (uint32_t)budget_ms : 20, c->notify_fd)
                    : rl_lookup_start(c->uri.host, c->uri.port, c->notify_fd);
    c->lookup_started_us = now;
    c->lookups++;
    if (!c->lookup) snprintf(c->lookup_err, sizeof c->lookup_err, "no thread for the lookup (out of resources)");
}

/* Appends "<address> <why>" to c->tried. */
static void record(rl_conn_t *c, const char *why, int timed_out) {
    size_t used = strlen(c->tried);
    snprintf(c->tried + used, sizeof c->tried - used, "%s%s %s", used ? "; " : "", c->addr, why);
    c->tried_timeout = timed_out;
}

/* Opens a socket to address c->ai and starts connecting, with its share
 * of the time left. Returns 0 while the connect (or TLS handshake) goes on
 * or once it is READY, else -1 with the reason recorded. */
static int dial_one(rl_conn_t *c, uint64_t now) {
    const struct sockaddr_storage *ss = &c->addrs.ss[c->ai];
    char why[RL_DETAIL_LEN];
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        rl_errno_text(errno, why, sizeof why);
        record(c, why, 0);
        return -1;
    }
    if (ss->ss_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    c->fd = fd;
    c->gen++;
    c->state = RL_CONN_CONNECTING;
    c->tcp_up = 0;
    uint64_t left = c->connect_deadline_us > now ? c->connect_deadline_us - now : 0;
    c->addr_deadline_us = now + left / (c->addrs.n - c->ai);
    int rc = connect(fd, (const struct sockaddr *)ss, c->addrs.len[c->ai]);
    if (rc < 0 && (errno == EINPROGRESS || errno == EAGAIN)) return 0;
    if (rc < 0) {
        rl_errno_text(errno, why, sizeof why);
    } else if (rl_conn_finish_connect(c) >= 0) { /* TCP is up: READY, or the TLS handshake starts */
        return 0;
    } else {
        snprintf(why, sizeof why, "%s", c->last_detail);
    }
    rl_conn_drop_socket(c);
    record(c, why, 0);
    return -1;
}

/* Tries addresses from c->ai on. Returns 0 when one is under way, else
 * the error with c->last_detail naming every address and why. */
static int dial_from(rl_conn_t *c, uint64_t now) {
    for (; c->ai < c->addrs.n; c->ai++) {
        rl_addr_format(&c->addrs, c->ai, c->addr, sizeof c->addr);
        if (dial_one(c, now) == 0) return 0;
    }
    if (c->literal)
        snprintf(c->last_detail, sizeof c->last_detail, "%s", c->tried);
    else if (c->uri.sentinel)
        snprintf(c->last_detail, sizeof c->last_detail, "group %.60s's master (as its sentinels said): %.150s",
                 c->uri.master, c->tried);
    else
        snprintf(c->last_detail, sizeof c->last_detail, "%.60s: %.190s", c->uri.host, c->tried);
    c->addr[0] = '\0';
    c->last_err = c->tried_timeout ? REDLOCK_ERR_TIMEOUT : REDLOCK_ERR_IO;
    return c->last_err;
}

/* Begins the connect of a prepared c (see rl_dial_open). */
static int dial_start(rl_conn_t *c, uint64_t now) {
    c->tried[0] = '\0';
    c->tried_timeout = 0;
    c->ai = 0;
    if (!c->literal) maybe_lookup(c, now);
    if (c->addrs.n) return dial_from(c, now);
    uint64_t waited = now - c->lookup_started_us, budget = c->connect_deadline_us - now;
    if (c->lookup && waited < budget) { /* a fresh lookup: wait for it within the connect deadline */
        c->state = RL_CONN_RESOLVING;
        return 0;
    }
    char what[200];
    if (c->lookup) {
        snprintf(c->last_detail, sizeof c->last_detail, "%.120s: not answered after %llu ms",
                 sought(c, what, sizeof what), (unsigned long long)(waited / 1000u));
        return c->last_err = REDLOCK_ERR_TIMEOUT;
    }
    snprintf(c->last_detail, sizeof c->last_detail, "%.120s failed: %.120s", sought(c, what, sizeof what),
             c->lookup_err[0] ? c->lookup_err : "no address");
    return c->last_err = REDLOCK_ERR_IO;
}

int rl_dial_lookup_ended(rl_conn_t *c, uint64_t now, rl_group_info_t *group, int *learnt) {
    *learnt = 0;
    if (!c->lookup || !rl_lookup_done(c->lookup)) return 0;
    rl_addrs_t a;
    char why[RL_DETAIL_LEN - 64], what[200];
    int ok = (c->uri.sentinel ? rl_sentinel_lookup_take(c->lookup, &a, group, why, sizeof why)
                              : rl_lookup_take(c->lookup, &a, why, sizeof why)) == 0;
    c->lookup = NULL;
    if (ok) {
        c->addrs = a;
        c->stale = 0;
        c->lookup_err[0] = '\0';
        *learnt = c->uri.sentinel;
    } else {
        snprintf(c->lookup_err, sizeof c->lookup_err, "%s", why); /* known addresses stay in use */
    }
    if (c->state != RL_CONN_RESOLVING) return 0;
    if (!ok) {
        snprintf(c->last_detail, sizeof c->last_detail, "%.120s failed: %.120s", sought(c, what, sizeof what), why);
        return c->last_err = REDLOCK_ERR_IO;
    }
    c->ai = 0;
    return dial_from(c, now);
}

int rl_dial_moved(rl_conn_t *c, const char *to) {
    c->addrs.n = 0; /* never dial the old address again before the sentinels are asked */
    c->stale = 1;
    c->lookup_started_us = 0;                      /* asked at once: a look-up under way may predate the move */
    return c->fd >= 0 && strcmp(c->addr, to) != 0; /* not down, nor already there */
}

int rl_dial_next(rl_conn_t *c, uint64_t now, const char *why, int timed_out) {
    char w[RL_DETAIL_LEN];
    snprintf(w, sizeof w, "%s", why); /* why may be c->last_detail */
    record(c, w, timed_out);
    rl_conn_drop_socket(c);
    c->ai++;
    return dial_from(c, now);
}

int rl_dial_open(rl_conn_t *c, uint64_t now, uint32_t connect_timeout_ms) {
    int rc = rl_conn_prepare(c, now, connect_timeout_ms);
    if (rc == 0) rc = dial_start(c, now);
    if (rc) {
        rl_conn_close(c);
        c->last_err = rc;
        return rc;
    }
    return rl_conn_queue_handshake(c, now);
}
