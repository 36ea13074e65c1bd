/* conn.c -- sockets, connect with a deadline, and the request ring. */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "redlock.h"
#include "resp.h"

static void shrink(rl_conn_t *c, int at_once);

int rl_conn_init(rl_conn_t *c, rl_uri_t *uri, int idx, uint32_t qcap, int notify_fd) {
    memset(c, 0, sizeof *c);
    c->fd = c->io_fd = -1;
    c->idx = c->k = idx;
    c->qmax = qcap;
    c->qcap = qcap < RL_QCAP_START ? qcap : RL_QCAP_START;
    c->due_us = UINT64_MAX;
    if (!(c->q = calloc(c->qcap, sizeof *c->q))) return -1;
    c->uri = *uri;
    memset(uri, 0, sizeof *uri);
    c->notify_fd = notify_fd;
    return 0;
}

void rl_conn_destroy(rl_conn_t *c) {
    if (!c) return;
    rl_conn_close(c);
    if (c->reader) redisReaderFree(c->reader);
    c->reader = NULL;
    rl_arena_free(&c->arena);
    rl_buf_free(&c->out);
    rl_buf_free(&c->fb);
    free(c->q);
    c->q = NULL;
    rl_uri_clear(&c->uri);
}

/* Records a failure's code and words in c; returns the code. */
static int conn_fail(rl_conn_t *c, int err, const char *what, int errnum) {
    c->last_err = err;
    if (errnum)
        snprintf(c->last_detail, sizeof c->last_detail, "%s: %s", what, strerror(errnum));
    else
        snprintf(c->last_detail, sizeof c->last_detail, "%s", what);
    return err;
}

/* Queues one handshake command (AUTH or SELECT) ahead of any user request. */
static int queue_internal(rl_conn_t *c, uint8_t kind, int argc, const char *const *argv, uint64_t now_us) {
    size_t lens[3];
    for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    rl_cmd_t cmd;
    int rc = rl_cmd_build(&cmd, argc, argv, lens);
    if (rc == 0 && rl_conn_send(c, cmd.data, cmd.len) < 0) rc = -1;
    rl_cmd_free(&cmd);
    if (rc == 0 && !rl_conn_push(c, kind, NULL, now_us, UINT64_MAX)) rc = -1;
    return rc < 0 ? conn_fail(c, REDLOCK_ERR_NOMEM, "out of memory queueing handshake", 0) : 0;
}

int rl_conn_queue_handshake(rl_conn_t *c, uint64_t now_us) {
    if (c->uri.pass) {
        const char *a[3] = {"AUTH", c->uri.user ? c->uri.user : c->uri.pass, c->uri.pass};
        if (queue_internal(c, RL_REQ_AUTH, c->uri.user ? 3 : 2, a, now_us)) return c->last_err;
    }
    if (c->uri.db) {
        char db[16];
        snprintf(db, sizeof db, "%d", c->uri.db);
        const char *s[2] = {"SELECT", db};
        if (queue_internal(c, RL_REQ_SELECT, 2, s, now_us)) return c->last_err;
    }
    return 0;
}

int rl_conn_prepare(rl_conn_t *c, uint64_t now_us, uint32_t connect_timeout_ms) {
    if (!c->reader && !(c->reader = rl_reader_new(&c->arena)))
        return conn_fail(c, REDLOCK_ERR_NOMEM, "out of memory", 0);
    c->tcp_up = 0;
    c->rx_bytes = 0;
    c->connect_deadline_us = now_us + (uint64_t)connect_timeout_ms * 1000u;
    c->last_rx_us = now_us;
    return 0;
}

void rl_errno_text(int errnum, char *buf, size_t n) {
    snprintf(buf, n, "%s", strerror(errnum));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && buf[1] >= 'a' && buf[1] <= 'z') buf[0] = (char)(buf[0] - 'A' + 'a');
}

/* Advances the TLS handshake; returns 0 done, 1 in progress, or an error. */
static int tls_step(rl_conn_t *c) {
    int r = rl_tls_handshake(c->ssl, c->last_detail, sizeof c->last_detail);
    if (r == 0) {
        c->state = RL_CONN_READY;
        return 0;
    }
    if (r > 0) {
        c->want = r == RL_TLS_WANT_READ ? POLLIN : POLLOUT;
        return 1;
    }
    c->last_err = REDLOCK_ERR_IO;
    return REDLOCK_ERR_IO;
}

int rl_conn_finish_connect(rl_conn_t *c) {
    if (!c->tcp_up) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
        if (err) {
            char t[64];
            rl_errno_text(err, t, sizeof t);
            return conn_fail(c, REDLOCK_ERR_IO, t, 0);
        }
        c->tcp_up = 1;
        if (!c->tls_ctx) {
            c->state = RL_CONN_READY;
            return 0;
        }
        c->ssl = rl_tls_session(c->tls_ctx, c->fd, c->uri.host, c->tls_name, c->tls_verify, c->last_detail,
                                sizeof c->last_detail);
        if (!c->ssl) return c->last_err = REDLOCK_ERR_IO;
    }
    return tls_step(c);
}

int rl_conn_flush_n(rl_conn_t *c, size_t max) {
    while (rl_buf_pending(&c->out) && max) {
        const char *p = c->out.data + c->out.off;
        size_t len = rl_buf_pending(&c->out) < max ? rl_buf_pending(&c->out) : max;
        ssize_t n = c->ssl ? rl_tls_write(c->ssl, p, len, c->last_detail, sizeof c->last_detail)
                           : send(c->fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && c->ssl && errno == EIO) return c->last_err = REDLOCK_ERR_IO;
        if (n > 0) {
            rl_buf_consume(&c->out, (size_t)n);
            max -= (size_t)n;
            c->out_mark -= (size_t)n < c->out_mark ? (size_t)n : c->out_mark;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            return conn_fail(c, REDLOCK_ERR_IO, "write", errno);
        }
    }
    return 0;
}

int rl_conn_read(rl_conn_t *c, uint64_t now_us) {
    char buf[16384];
    for (;;) {
        ssize_t n = c->ssl ? rl_tls_read(c->ssl, buf, sizeof buf, c->last_detail, sizeof c->last_detail)
                           : recv(c->fd, buf, sizeof buf, 0);
        if (n < 0 && c->ssl && errno == EIO) return c->last_err = REDLOCK_ERR_IO;
        if (n > 0) {
            c->last_rx_us = now_us;
            c->rx_bytes += (uint64_t)n;
            if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
                return conn_fail(c, REDLOCK_ERR_IO, "reader out of memory", 0);
            if (c->reader->len - c->reader->pos > RL_REPLY_MAX_PENDING) {
                snprintf(c->last_detail, sizeof c->last_detail, "protocol error: more than %u bytes of reply pending",
                         RL_REPLY_MAX_PENDING);
                c->last_err = REDLOCK_ERR_IO;
                return REDLOCK_ERR_IO;
            }
            if ((size_t)n < sizeof buf && !c->ssl) return 0; /* TLS may hold more decrypted bytes */
        } else if (n == 0) {
            return conn_fail(c, REDLOCK_ERR_IO,
                             c->rx_bytes ? "connection closed by the node"
                             : c->tls_ctx
                                 ? "connection closed by the node before any reply"
                                 : "connection closed by the node before any reply (a TLS port? use rediss://)",
                             0);
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        } else if (errno == ECONNRESET && !c->rx_bytes && !c->tls_ctx) {
            return conn_fail(c, REDLOCK_ERR_IO,
                             "connection reset by the node before any reply (a TLS port? use rediss://)", 0);
        } else {
            return conn_fail(c, REDLOCK_ERR_IO, "read", errno);
        }
    }
}

void rl_conn_drop_socket(rl_conn_t *c) {
    if (c->fd >= 0 && c->closing) c->closing(c->closing_arg, c, c->fd);
    rl_tls_close(c->ssl);
    c->ssl = NULL;
    c->tcp_up = 0;
    if (c->fd >= 0 && c->fd_lent) { /* still being written to: its borrower closes it */
        c->fd_late = c->fd + 1;
        c->fd_lent = 0; /* (a descriptor opened meanwhile is not lent) */
    } else if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->gen++;
}

void rl_conn_close(rl_conn_t *c) {
    rl_conn_drop_socket(c);
    c->state = RL_CONN_DOWN;
    c->addr[0] = '\0';
    rl_buf_reset(&c->out);
    rl_buf_reset(&c->fb);
    c->qhead = c->qlen = 0;
    shrink(c, 1);
    c->due_us = UINT64_MAX;
    c->out_mark = 0;
    if (c->reader) { /* a fresh parser state for the next connection */
        redisReaderFree(c->reader);
        c->reader = NULL;
    }
    rl_arena_trim(&c->arena);
    c->arena.error[0] = '\0';
}

/* The ring's hysteresis: one that grows back within RL_QCAP_REGROW_US of
 * shrinking serves a steady load that empties it between replies, and
 * keeps its size for a hold that starts at RL_QCAP_HOLD_MIN_US and
 * doubles with each such regrowth, up to RL_QCAP_HOLD_MAX_US; a growth
 * long after a shrink is a new burst, and its ring is given back as soon
 * as it is empty. */
#define RL_QCAP_REGROW_US 1000000u
#define RL_QCAP_HOLD_MIN_US 1000000u
#define RL_QCAP_HOLD_MAX_US 64000000u

/* Notes a growth at now_us for the hysteresis (the first since a shrink). */
static void note_growth(rl_conn_t *c, uint64_t now_us) {
    if (!c->qshrunk_us || !c->ring_hold) return;
    if (now_us < c->qshrunk_us + RL_QCAP_REGROW_US) {
        c->qhold_us = !c->qhold_us                            ? RL_QCAP_HOLD_MIN_US
                      : c->qhold_us < RL_QCAP_HOLD_MAX_US / 2 ? 2 * c->qhold_us
                                                              : RL_QCAP_HOLD_MAX_US;
        c->qkeep_us = now_us + c->qhold_us;
    } else {
        c->qhold_us = 0;
    }
    c->qshrunk_us = 0;
}

/* Doubles c's ring (up to qmax), its requests moved to the front in
 * order; req_moved tells each one's round its new slot. Returns 0, or -1
 * at qmax or when out of memory. */
static int grow(rl_conn_t *c, uint64_t now_us) {
    if (c->qcap >= c->qmax) return -1;
    note_growth(c, now_us);
    uint32_t cap = c->qcap > c->qmax / 2 ? c->qmax : c->qcap * 2;
    rl_req_t *q = malloc((size_t)cap * sizeof *q);
    if (!q) return -1;
    for (uint32_t k = 0; k < c->qlen; k++) {
        q[k] = *rl_conn_at(c, k);
        if (q[k].round && c->req_moved) c->req_moved(q[k].round, c->idx, k);
    }
    free(c->q);
    c->q = q;
    c->qcap = cap;
    c->qhead = 0;
    return 0;
}

rl_req_t *rl_conn_push(rl_conn_t *c, uint8_t kind, struct rl_round *round, uint64_t now_us, uint64_t deadline_us) {
    if (c->qlen == c->qcap && grow(c, now_us) < 0) return NULL;
    rl_req_t *r = &c->q[(c->qhead + c->qlen) % c->qcap];
    c->qlen++;
    r->round = round;
    r->script = NULL;
    r->fb_len = 0;
    r->kind = kind;
    r->whole = 0;
    r->redirects = 0;
    r->skip = 0;
    r->then_wait = 0;
    r->sent_us = now_us;
    r->deadline_us = deadline_us;
    if (deadline_us < c->due_us) c->due_us = deadline_us;
    return r;
}

/* An empty ring this large goes back to RL_QCAP_START slots; one that a
 * steady load holds, to this many (48 KiB) at the most. */
#define RL_QCAP_SHRINK 1024u

/* Gives an empty ring's memory back once a burst grew it (doc/design.md,
 * "Cost flat in locks and waiters"): at once when the connection closed
 * (at_once), else unless a steady load holds it (see note_growth; only
 * with ring_hold). Replies were read at last_rx_us: the clock. */
static void shrink(rl_conn_t *c, int at_once) {
    if (c->qlen || c->qcap < RL_QCAP_SHRINK) return;
    int held = !at_once && c->last_rx_us < c->qkeep_us;
    uint32_t cap = held ? RL_QCAP_SHRINK : RL_QCAP_START;
    if (cap >= c->qcap) return;
    rl_req_t *q = malloc(cap * sizeof *q);
    if (!q) return;
    free(c->q);
    c->q = q;
    c->qcap = cap;
    c->qhead = 0;
    if (!at_once) c->qshrunk_us = c->last_rx_us;
}

void rl_conn_pop(rl_conn_t *c) {
    if (!c->qlen) return;
    rl_buf_consume(&c->fb, c->q[c->qhead].fb_len);
    c->qhead = (c->qhead + 1) % c->qcap;
    c->qlen--;
    shrink(c, 0);
}

int rl_conn_send(rl_conn_t *c, const char *p, size_t n) {
    return rl_buf_append(&c->out, p, n);
}
