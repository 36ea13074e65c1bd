/*
 * test/support/timeproxy.c - see timeproxy.h.
 */
#include "timeproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define TP_MAX_CONNS 64

typedef struct tp_conn {
    tp_proxy_t *p;
    int fd;
    pthread_t th;
} tp_conn_t;

struct tp_proxy {
    int lfd, port, upstream;
    int stop_pipe[2];
    pthread_t acceptor;
    atomic_llong offset_us;
    atomic_long times;
    pthread_mutex_t mu; /* guards conns / nconns */
    tp_conn_t conns[TP_MAX_CONNS];
    int nconns;
};

/* A growing output buffer; out of memory aborts the test process. */
typedef struct {
    char *d;
    size_t len, cap;
} tp_out_t;

/* Appends n bytes to o. */
static void out_put(tp_out_t *o, const char *s, size_t n) {
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2 + 64;
        o->d = realloc(o->d, o->cap);
        if (!o->d) abort();
    }
    memcpy(o->d + o->len, s, n);
    o->len += n;
}

/* Appends a RESP header: type char, number, CRLF. */
static void out_head(tp_out_t *o, char type, long long v) {
    char h[32];
    int n = snprintf(h, sizeof h, "%c%lld\r\n", type, v);
    out_put(o, h, (size_t)n);
}

/* Appends reply r encoded as RESP2. */
static void encode(tp_out_t *o, const redisReply *r) {
    switch (r->type) {
    case REDIS_REPLY_STRING:
        out_head(o, '$', (long long)r->len);
        out_put(o, r->str, r->len);
        out_put(o, "\r\n", 2);
        break;
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        out_put(o, r->type == REDIS_REPLY_STATUS ? "+" : "-", 1);
        out_put(o, r->str, r->len);
        out_put(o, "\r\n", 2);
        break;
    case REDIS_REPLY_INTEGER: out_head(o, ':', r->integer); break;
    case REDIS_REPLY_ARRAY:
        out_head(o, '*', (long long)r->elements);
        for (size_t i = 0; i < r->elements; i++) encode(o, r->element[i]);
        break;
    default: out_put(o, "$-1\r\n", 5); break;
    }
}

/* Appends the node's TIME reply r shifted by the proxy's offset. */
static void encode_time(tp_proxy_t *p, tp_out_t *o, const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        encode(o, r);
        return;
    }
    long long us = atoll(r->element[0]->str) * 1000000LL + atoll(r->element[1]->str) + atomic_load(&p->offset_us);
    char sec[32], usec[16];
    snprintf(sec, sizeof sec, "%lld", us / 1000000LL);
    snprintf(usec, sizeof usec, "%lld", us % 1000000LL);
    out_head(o, '*', 2);
    out_head(o, '$', (long long)strlen(sec));
    out_put(o, sec, strlen(sec));
    out_put(o, "\r\n", 2);
    out_head(o, '$', (long long)strlen(usec));
    out_put(o, usec, strlen(usec));
    out_put(o, "\r\n", 2);
    atomic_fetch_add(&p->times, 1);
}

/* Runs one client command (an array of strings) on the node and appends
 * its reply. Returns 0, or -1 when the node connection failed. */
static int relay(tp_proxy_t *p, redisContext *up, const redisReply *cmd, tp_out_t *o) {
    size_t argc = cmd->elements;
    const char **argv = calloc(argc ? argc : 1, sizeof *argv);
    size_t *lens = calloc(argc ? argc : 1, sizeof *lens);
    if (!argv || !lens) abort();
    for (size_t i = 0; i < argc; i++) {
        argv[i] = cmd->element[i]->str;
        lens[i] = cmd->element[i]->len;
    }
    redisReply *r = redisCommandArgv(up, (int)argc, argv, lens);
    int is_time = argc == 1 && lens[0] == 4 && !strncasecmp(argv[0], "TIME", 4);
    free(argv);
    free(lens);
    if (!r) return -1;
    if (is_time)
        encode_time(p, o, r);
    else
        encode(o, r);
    freeReplyObject(r);
    return 0;
}

/* Writes all of o to fd; returns 0 or -1. */
static int write_all(int fd, const tp_out_t *o) {
    for (size_t off = 0; off < o->len;) {
        ssize_t w = send(fd, o->d + off, o->len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* One client connection: read commands, answer them in order, until the
 * client or the node hangs up. */
static void *serve(void *arg) {
    tp_conn_t *c = arg;
    redisContext *up = redisConnect("127.0.0.1", c->p->upstream);
    redisReader *rd = redisReaderCreate();
    tp_out_t o = {0};
    char buf[16384];
    while (up && !up->err && rd) {
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || redisReaderFeed(rd, buf, (size_t)n) != REDIS_OK) break;
        void *cmd = NULL;
        int ok = 1;
        o.len = 0;
        while (ok && redisReaderGetReply(rd, &cmd) == REDIS_OK && cmd) {
            const redisReply *r = cmd;
            ok = r->type == REDIS_REPLY_ARRAY && relay(c->p, up, r, &o) == 0;
            freeReplyObject(cmd);
        }
        if (!ok || write_all(c->fd, &o) < 0) break;
    }
    free(o.d);
    if (rd) redisReaderFree(rd);
    if (up) redisFree(up);
    shutdown(c->fd, SHUT_RDWR);
    return NULL;
}

/* Accepts clients until tp_stop writes to the stop pipe. */
static void *acceptor(void *arg) {
    tp_proxy_t *p = arg;
    for (;;) {
        struct pollfd fds[2] = {{.fd = p->lfd, .events = POLLIN}, {.fd = p->stop_pipe[0], .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents) break;
        if (!(fds[0].revents & POLLIN)) continue;
        int fd = accept(p->lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_mutex_lock(&p->mu);
        if (p->nconns == TP_MAX_CONNS) {
            close(fd);
        } else {
            tp_conn_t *c = &p->conns[p->nconns];
            c->p = p;
            c->fd = fd;
            if (pthread_create(&c->th, NULL, serve, c) == 0)
                p->nconns++;
            else
                close(fd);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

tp_proxy_t *tp_start(int upstream_port) {
    tp_proxy_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->upstream = upstream_port;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pthread_mutex_init(&p->mu, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(p->lfd, 16) < 0 ||
        getsockname(p->lfd, (struct sockaddr *)&a, &al) < 0 || pipe(p->stop_pipe) < 0) {
        fprintf(stderr, "timeproxy: cannot listen: %s\n", strerror(errno));
        if (p->lfd >= 0) close(p->lfd);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    p->port = ntohs(a.sin_port);
    if (pthread_create(&p->acceptor, NULL, acceptor, p) != 0) {
        fprintf(stderr, "timeproxy: cannot start its thread\n");
        close(p->lfd);
        close(p->stop_pipe[0]);
        close(p->stop_pipe[1]);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

int tp_port(const tp_proxy_t *p) {
    return p->port;
}

void tp_set_offset_ms(tp_proxy_t *p, int64_t ms) {
    atomic_store(&p->offset_us, (long long)ms * 1000LL);
}

long tp_time_count(tp_proxy_t *p) {
    return atomic_load(&p->times);
}

void tp_stop(tp_proxy_t *p) {
    if (!p) return;
    ssize_t w = write(p->stop_pipe[1], "x", 1);
    (void)w;
    pthread_join(p->acceptor, NULL);
    for (int i = 0; i < p->nconns; i++) shutdown(p->conns[i].fd, SHUT_RDWR);
    for (int i = 0; i < p->nconns; i++) {
        pthread_join(p->conns[i].th, NULL);
        close(p->conns[i].fd);
    }
    close(p->lfd);
    close(p->stop_pipe[0]);
    close(p->stop_pipe[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
