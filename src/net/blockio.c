/* blockio.c -- short blocking exchanges (see blockio.h). */
#define _GNU_SOURCE /* getaddrinfo's flags */
#include "blockio.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

/* Waits until fd is ready for ev or the deadline passes. Returns 1 when
 * ready, 0 at the deadline. */
int rl_bio_wait(int fd, short ev, uint64_t deadline) {
    for (;;) {
        uint64_t now = rl_clock_monotonic_us();
        if (now >= deadline) return 0;
        struct pollfd p = {.fd = fd, .events = ev, .revents = 0};
        int rc = poll(&p, 1, (int)((deadline - now + 999u) / 1000u));
        if (rc > 0) return 1;
        if (rc < 0 && errno != EINTR) return 0;
    }
}

/* Connects to host:port before the deadline. Returns the socket, or -1
 * with why. */
int rl_bio_dial(const char *host, int port, uint64_t deadline, char *why, size_t n) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC}, *res = NULL;
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) {
        snprintf(why, n, "%s", rc == EAI_NONAME ? "unknown host" : gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    snprintf(why, n, "no address");
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        int err = 0;
        socklen_t len = sizeof err;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) err = errno;
        if (!err && !rl_bio_wait(fd, POLLOUT, deadline)) err = ETIMEDOUT;
        if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
        if (err) {
            snprintf(why, n, "%s", err == ETIMEDOUT ? "connect timed out" : strerror(err));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* Copies src into dst with its own context reference and name. Returns 0
 * or -1. */
int rl_bio_tls_copy(rl_bio_tls_t *dst, const rl_bio_tls_t *src, int want) {
    *dst = (rl_bio_tls_t){.ctx = NULL, .server_name = NULL, .verify = 1};
    if (!want || !src) return 0;
    char *name = src->server_name ? strdup(src->server_name) : NULL;
    if (src->server_name && !name) return -1;
    *dst = (rl_bio_tls_t){.ctx = rl_tls_ctx_ref(src->ctx), .server_name = name, .verify = src->verify};
    return 0;
}

/* Drops dst's context reference and name. */
void rl_bio_tls_clear(rl_bio_tls_t *t) {
    rl_tls_ctx_unref(t->ctx);
    free((char *)t->server_name);
    t->ctx = NULL;
    t->server_name = NULL;
}

/* Drives s's TLS handshake before the deadline. Returns 0, or -1 with
 * why (certificate problems named by rl_tls_handshake). */
static int handshake(rl_bio_stream_t *s, uint64_t deadline, char *why, size_t n) {
    for (;;) {
        int rc = rl_tls_handshake(s->ssl, why, n);
        if (rc <= 0) return rc;
        if (!rl_bio_wait(s->fd, rc == RL_TLS_WANT_READ ? POLLIN : POLLOUT, deadline)) {
            snprintf(why, n, "TLS handshake timed out (a plain-text port?)");
            return -1;
        }
    }
}

/* Connects s (over TLS when tls has a context) before the deadline.
 * Returns 0, or -1 with why. */
int rl_bio_open(rl_bio_stream_t *s, const char *host, int port, const rl_bio_tls_t *tls, uint64_t deadline, char *why,
                size_t n) {
    s->ssl = NULL;
    s->fd = rl_bio_dial(host, port, deadline, why, n);
    if (s->fd < 0 || !tls || !tls->ctx) return s->fd < 0 ? -1 : 0;
    s->ssl = rl_tls_session(tls->ctx, s->fd, host, tls->server_name, tls->verify, why, n);
    if (s->ssl && handshake(s, deadline, why, n) == 0) return 0;
    rl_bio_close(s);
    return -1;
}

/* Closes s's socket and frees its session. */
void rl_bio_close(rl_bio_stream_t *s) {
    rl_tls_close(s->ssl);
    s->ssl = NULL;
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
}

/* Reads what s has now: > 0 bytes, 0 closed, -1 with errno. */
long rl_bio_recv(rl_bio_stream_t *s, char *buf, size_t len) {
    char detail[160];
    if (s->ssl) return rl_tls_read(s->ssl, buf, len, detail, sizeof detail);
    return (long)recv(s->fd, buf, len, MSG_DONTWAIT);
}

/* 1 when s's session holds bytes not yet returned. */
int rl_bio_pending(const rl_bio_stream_t *s) {
    return s->ssl ? rl_tls_pending(s->ssl) : 0;
}

/* Writes len bytes of p to s before the deadline. Returns 0 or -1. */
int rl_bio_send(rl_bio_stream_t *s, const char *p, size_t len, uint64_t deadline) {
    char detail[160];
    while (len) {
        long w = s->ssl ? rl_tls_write(s->ssl, p, len, detail, sizeof detail)
                        : (long)send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            len -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        } else if (!rl_bio_wait(s->fd, POLLOUT, deadline)) {
            return -1;
        }
    }
    return 0;
}

/* Reads one reply from s into *out before the deadline. Returns 0 or -1
 * with errno ETIMEDOUT, EPROTO or ECONNRESET. */
int rl_bio_read(rl_bio_stream_t *s, redisReader *rd, redisReply **out, uint64_t deadline) {
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(rd, &r) != REDIS_OK) return errno = EPROTO, -1;
        if (r) {
            *out = r;
            return 0;
        }
        char buf[4096];
        long got = rl_bio_recv(s, buf, sizeof buf);
        if (got > 0) {
            if (redisReaderFeed(rd, buf, (size_t)got) != REDIS_OK) return errno = EPROTO, -1;
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
            return errno = ECONNRESET, -1;
        } else if (!rl_bio_wait(s->fd, POLLIN, deadline)) {
            return errno = ETIMEDOUT, -1;
        }
    }
}

/* Sends the encoded commands cmd (nreq of them) to s and reads their
 * replies into rep[] before the deadline. Returns 0 or -1 with why. */
int rl_bio_exchange(rl_bio_stream_t *s, const char *cmd, size_t len, redisReply **rep, int nreq, uint64_t deadline,
                    char *why, size_t n) {
    redisReader *rd = redisReaderCreate();
    int rc = rd ? 0 : -1, err = ENOMEM;
    if (rc == 0 && rl_bio_send(s, cmd, len, deadline) < 0) rc = -1, err = errno == EAGAIN ? ETIMEDOUT : ECONNRESET;
    for (int i = 0; rc == 0 && i < nreq; i++)
        if ((rc = rl_bio_read(s, rd, &rep[i], deadline)) < 0) err = errno;
    if (rc)
        snprintf(why, n, "%s",
                 err == ENOMEM      ? "out of memory"
                 : err == ETIMEDOUT ? "no answer in time"
                 : err == EPROTO    ? "answered with bytes that are not RESP"
                                    : "closed the connection");
    redisReaderFree(rd);
    return rc;
}
