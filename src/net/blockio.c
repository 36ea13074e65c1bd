/* blockio.c -- short blocking exchanges (see blockio.h). */
#define _GNU_SOURCE /* getaddrinfo's flags */
#include "blockio.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Microseconds on the monotonic clock. */
uint64_t rl_bio_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Waits until fd is ready for ev or the deadline passes. Returns 1 when
 * ready, 0 at the deadline. */
int rl_bio_wait(int fd, short ev, uint64_t deadline) {
    for (;;) {
        uint64_t now = rl_bio_now_us();
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

/* Writes len bytes of p to fd before the deadline. Returns 0 or -1. */
int rl_bio_send(int fd, const char *p, size_t len, uint64_t deadline) {
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            len -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        } else if (!rl_bio_wait(fd, POLLOUT, deadline)) {
            return -1;
        }
    }
    return 0;
}

/* Reads one reply from fd into *out before the deadline. Returns 0 or -1. */
int rl_bio_read(int fd, redisReader *rd, redisReply **out, uint64_t deadline) {
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(rd, &r) != REDIS_OK) return -1;
        if (r) {
            *out = r;
            return 0;
        }
        char buf[4096];
        ssize_t got = recv(fd, buf, sizeof buf, 0);
        if (got > 0) {
            if (redisReaderFeed(rd, buf, (size_t)got) != REDIS_OK) return -1;
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
            return -1;
        } else if (!rl_bio_wait(fd, POLLIN, deadline)) {
            return -1;
        }
    }
}

/* Sends the encoded commands cmd (nreq of them) to fd and reads their
 * replies into rep[] before the deadline. Returns 0 or -1 with why. */
int rl_bio_exchange(int fd, const char *cmd, size_t len, redisReply **rep, int nreq, uint64_t deadline, char *why,
                    size_t n) {
    redisReader *rd = redisReaderCreate();
    int rc = rd && rl_bio_send(fd, cmd, len, deadline) == 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < nreq; i++) rc = rl_bio_read(fd, rd, &rep[i], deadline);
    if (rc) snprintf(why, n, "no answer in time");
    redisReaderFree(rd);
    return rc;
}
