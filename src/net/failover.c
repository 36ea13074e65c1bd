/* failover.c -- following a Sentinel group's +switch-master messages on
 * a thread of the feed's own (see failover.h). */
#include "failover.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "blockio.h"
#include "clock.h"
#include "sentinel.h"

#define CHANNEL "+switch-master"
/* How long stopping waits for the thread to end (a poll it wakes from at
 * once, unless it is resolving or connecting to a sentinel). */
#define RL_WATCH_STOP_WAIT_MS 300L

struct rl_failover_feed {
    pthread_mutex_t mu; /* guards the fields up to refs */
    pthread_cond_t ended_cv;
    uint32_t switches;
    char to[RL_ADDR_STRLEN];
    int stopped, ended, refs;
    pthread_t thread;
    int notify_fd, stop_fd;
    char name[136];
    char *pass;       /* the sentinels' password, or NULL */
    int tls_on;       /* the sentinels are asked over TLS (u->sentinel_tls) */
    rl_bio_tls_t tls; /* then with this (the feed's own context reference) */
    size_t n, next;   /* sentinels, and the one to try next */
    rl_sentinel_addr_t s[RL_URI_MAX_SEEDS + 1];
};

/* Frees w (its password wiped, its TLS context reference dropped). */
static void destroy(rl_failover_feed_t *w) {
    rl_bio_tls_clear(&w->tls);
    if (w->pass) {
        memset(w->pass, 0, strlen(w->pass));
        free(w->pass);
    }
    if (w->stop_fd >= 0) close(w->stop_fd);
    pthread_cond_destroy(&w->ended_cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Drops one reference to w, freeing it with the last. */
static void unref(rl_failover_feed_t *w) {
    pthread_mutex_lock(&w->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) destroy(w);
}

/* 1 once the owner stopped w. */
static int stopped(rl_failover_feed_t *w) {
    pthread_mutex_lock(&w->mu);
    int s = w->stopped;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* Sleeps ms or until w is stopped. */
static void nap(rl_failover_feed_t *w, int ms) {
    struct pollfd p = {.fd = w->stop_fd, .events = POLLIN, .revents = 0};
    if (!stopped(w)) (void)poll(&p, 1, ms);
}

/* Connects st to sentinel s (over TLS when the feed's are) and
 * subscribes to CHANNEL (after AUTH when the sentinels have a password).
 * Returns 0, or -1 (st then holds nothing). */
static int subscribe(rl_failover_feed_t *w, const rl_sentinel_addr_t *s, rl_bio_stream_t *st) {
    char why[200];
    uint64_t deadline = rl_clock_monotonic_us() + 1000000u;
    if ((w->tls_on && !w->tls.ctx) || rl_bio_open(st, s->host, s->port, &w->tls, deadline, why, sizeof why) < 0)
        return -1;
    char *auth = NULL, *sub = NULL;
    int la = w->pass ? redisFormatCommand(&auth, "AUTH %s", w->pass) : 0;
    int ls = redisFormatCommand(&sub, "SUBSCRIBE %s", CHANNEL);
    redisReply *rep[2] = {NULL, NULL};
    int nreq = 1 + (w->pass != NULL), ok = 0;
    char *cmd = la >= 0 && ls > 0 ? malloc((size_t)la + (size_t)ls) : NULL;
    if (cmd) {
        if (la > 0) memcpy(cmd, auth, (size_t)la);
        memcpy(cmd + (la > 0 ? la : 0), sub, (size_t)ls);
        ok = rl_bio_exchange(st, cmd, (size_t)la + (size_t)ls, rep, nreq, deadline, why, sizeof why) == 0;
    }
    for (int i = 0; ok && i < nreq; i++) ok = rep[i]->type != REDIS_REPLY_ERROR;
    for (int i = 0; i < 2; i++)
        if (rep[i]) freeReplyObject(rep[i]);
    free(cmd);
    redisFreeCommand(auth);
    redisFreeCommand(sub);
    if (!ok) rl_bio_close(st);
    return ok ? 0 : -1;
}

/* Takes one pushed message: a switch of w's group counts, keeps the new
 * master ("NAME OLDIP OLDPORT NEWIP NEWPORT") and wakes the owner. */
static void on_message(rl_failover_feed_t *w, const redisReply *m) {
    if (m->type != REDIS_REPLY_ARRAY || m->elements != 3 || m->element[2]->type != REDIS_REPLY_STRING) return;
    if (m->element[0]->type != REDIS_REPLY_STRING || strcmp(m->element[0]->str, "message")) return;
    char name[136], oip[64], ip[64];
    int oport, port;
    if (sscanf(m->element[2]->str, "%135s %63s %d %63s %d", name, oip, &oport, ip, &port) != 5) return;
    if (strcmp(name, w->name)) return;
    pthread_mutex_lock(&w->mu);
    w->switches++;
    snprintf(w->to, sizeof w->to, strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip, port);
    if (!w->stopped) {
        ssize_t wr = write(w->notify_fd, "s", 1); /* a full pipe already says "look" */
        (void)wr;
    }
    pthread_mutex_unlock(&w->mu);
}

/* Reads st's messages until the sentinel fails, leaves a PING unanswered,
 * or w is stopped. */
static void listen_on(rl_failover_feed_t *w, rl_bio_stream_t *st) {
    redisReader *rd = redisReaderCreate();
    int pinged = 0, ok = rd != NULL;
    while (ok && !stopped(w)) {
        struct pollfd p[2] = {{.fd = st->fd, .events = POLLIN}, {.fd = w->stop_fd, .events = POLLIN}};
        int rc = rl_bio_pending(st) ? 1 : poll(p, 2, RL_FAILOVER_PING_MS); /* (a TLS record read in part) */
        if (rc == 0) {                                                     /* quiet: is the sentinel still there? */
            ok = !pinged && rl_bio_send(st, "*1\r\n$4\r\nPING\r\n", 14, rl_clock_monotonic_us() + 1000000u) == 0;
            pinged = 1;
            continue;
        }
        if (rc < 0 || (!rl_bio_pending(st) && !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))) continue;
        char buf[4096];
        long got = rl_bio_recv(st, buf, sizeof buf);
        if (got < 0 && errno == EAGAIN) continue; /* TLS bytes that made no whole record yet */
        ok = got > 0 && redisReaderFeed(rd, buf, (size_t)got) == REDIS_OK;
        pinged = 0;
        void *r = NULL;
        while (ok && (ok = redisReaderGetReply(rd, &r) == REDIS_OK) && r) {
            on_message(w, r);
            freeReplyObject(r);
            r = NULL;
        }
    }
    if (rd) redisReaderFree(rd);
}

/* The feed thread: subscribes on each sentinel in turn, for as long as
 * the feed runs. */
static void *watch_main(void *arg) {
    rl_failover_feed_t *w = arg;
    while (!stopped(w)) {
        rl_bio_stream_t st;
        int ok = subscribe(w, &w->s[w->next], &st) == 0;
        w->next = (w->next + 1) % w->n;
        if (ok) {
            w->next = (w->next + w->n - 1) % w->n; /* stay with a sentinel that answered */
            listen_on(w, &st);
            rl_bio_close(&st);
        }
        nap(w, RL_FAILOVER_RETRY_MS);
    }
    pthread_mutex_lock(&w->mu);
    w->ended = 1;
    pthread_cond_signal(&w->ended_cv);
    pthread_mutex_unlock(&w->mu);
    unref(w);
    return NULL;
}

rl_failover_feed_t *rl_failover_feed_start(const rl_uri_t *u, const rl_bio_tls_t *tls, int notify_fd) {
    rl_failover_feed_t *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->ended_cv, NULL);
    w->refs = 2;
    w->notify_fd = notify_fd;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    snprintf(w->name, sizeof w->name, "%s", u->master);
    w->n = rl_sentinel_addrs(u, w->s, sizeof w->s / sizeof w->s[0]);
    w->tls_on = u->sentinel_tls;
    int ok = w->stop_fd >= 0 && w->n > 0 && (!u->sentinel_pass || (w->pass = strdup(u->sentinel_pass)));
    ok = ok && rl_bio_tls_copy(&w->tls, tls, w->tls_on) == 0;
    sigset_t all, old;
    sigfillset(&all); /* the thread takes no signals: they stay with the application's threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    ok = ok && pthread_create(&w->thread, NULL, watch_main, w) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok) {
        destroy(w);
        return NULL;
    }
    return w;
}

uint32_t rl_failover_feed_switches(rl_failover_feed_t *w, char *to, size_t n) {
    pthread_mutex_lock(&w->mu);
    uint32_t s = w->switches;
    if (to && n) snprintf(to, n, "%s", w->to);
    pthread_mutex_unlock(&w->mu);
    return s;
}

void rl_failover_feed_stop(rl_failover_feed_t *w) {
    if (!w) return;
    uint64_t one = 1;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += RL_WATCH_STOP_WAIT_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&w->mu);
    w->stopped = 1;
    ssize_t wr = write(w->stop_fd, &one, sizeof one);
    (void)wr;
    while (!w->ended && pthread_cond_timedwait(&w->ended_cv, &w->mu, &until) == 0) {
    }
    int ended = w->ended;
    pthread_t th = w->thread;
    pthread_mutex_unlock(&w->mu);
    if (ended) /* the usual case: it was in a poll that the stop woke */
        pthread_join(th, NULL);
    else /* stuck on a sentinel's address or connect: it frees w when that ends */
        pthread_detach(th);
    unref(w);
}
