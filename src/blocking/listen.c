/* listen.c -- the blocking handle's release channels (doc/design.md, "Waiting"): a
 * thread, started by the first wait, that drives the subscriber
 * connections of core/subs.c in its own poll loop and wakes the head of
 * a local queue when its resource's release is announced. A handle that
 * met a membership record starts it too, to hear the steps announced. Waiting
 * threads join and leave channels through rl->channel; the thread and
 * they share the listener's mutex, which is taken before held_mu (the
 * wake-up marks the queue's head) and never the other way round. */
#define _GNU_SOURCE /* pipe2 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "blocking.h"
#include "ops.h"
#include "pollset.h"
#include "subs.h"

struct rl_listener {
    pthread_mutex_t mu;
    rl_subs_t subs;
    redlock_t *rl;
    pthread_t th;
    int running; /* the thread was started */
    int stop;
    int wake_rd, wake_wr; /* interrupts the thread's poll (lookups end here too) */
    rl_pollset_t ps;      /* the thread's poll array */
};

/* subs' released hook (under L->mu): the head waiter of res attempts now. */
static void released(void *arg, const char *res, size_t len, int announced, const char *next, size_t nlen) {
    rl_listener_t *L = arg;
    rl_waitq_heard(L->rl, res, len, announced, next, nlen);
}

/* Interrupts the thread's poll so it rebuilds its poll set. */
static void wake(rl_listener_t *L) {
    ssize_t n = write(L->wake_wr, "x", 1);
    (void)n;
}

/* One turn of the thread (L->mu held, released during the poll): write,
 * wait for the sockets or the next deadline, read, judge deadlines. */
static void turn(rl_listener_t *L) {
    rl_nodes_t *ns = &L->subs.ns;
    uint64_t now = L->rl->clock();
    rl_nodes_flush(ns, now);
    nfds_t np = rl_pollset_build(&L->ps, ns, L->wake_rd);
    uint64_t next = rl_subs_next_us(&L->subs);
    if (next > now + 1000000u) next = now + 1000000u;
    int timeout = next <= now ? 0 : (int)((next - now + 999u) / 1000u);
    pthread_mutex_unlock(&L->mu);
    int nready = np ? poll(L->ps.pfd, np, timeout) : (usleep(1000), 0); /* (no memory: look again soon) */
    pthread_mutex_lock(&L->mu);
    now = L->rl->clock();
    if (nready > 0 && L->ps.pfd[np - 1].revents) {
        char drain[64];
        while (read(L->wake_rd, drain, sizeof drain) > 0) {
        }
        rl_nodes_lookups_ended(ns, now);
    }
    if (nready > 0) rl_pollset_events(&L->ps, np, ns, now);
    rl_subs_expire(&L->subs, now);
}

/* The thread: turns until told to stop. */
static void *listen_main(void *arg) {
    rl_listener_t *L = arg;
    pthread_mutex_lock(&L->mu);
    while (!L->stop) turn(L);
    pthread_mutex_unlock(&L->mu);
    return NULL;
}

/* 1 when the thread must look at the sockets again: a connection is
 * being opened, or output is left that the socket did not take. */
static int needs_turn(const rl_nodes_t *ns) {
    for (size_t k = 0; k < ns->nall; k++) {
        const rl_conn_t *c = ns->all[k];
        if (c->state == RL_CONN_RESOLVING || c->state == RL_CONN_CONNECTING || rl_buf_pending(&c->out)) return 1;
    }
    return 0;
}

/* rl->channel of a blocking handle: counts the waiter in or out of res's
 * channel, starting the thread on the first join. Writes what that
 * queued at once; the thread is woken only when it must watch something
 * new. Without memory or a thread the waiter just polls. */
static void channel_blocking(redlock_t *rl, const char *res, size_t len, int join) {
    rl_listener_t *L = rl_blocking_of(rl)->listener;
    pthread_mutex_lock(&L->mu);
    uint64_t now = rl->clock();
    if (join && !L->running && pthread_create(&L->th, NULL, listen_main, L) == 0) L->running = 1;
    if (L->running) {
        rl_subs_waiter(&L->subs, res, len, join, now);
        rl_nodes_flush(&L->subs.ns, now);
        if (needs_turn(&L->subs.ns)) wake(L);
    }
    pthread_mutex_unlock(&L->mu);
}

void rl_listener_watch(redlock_t *rl) {
    rl_listener_t *L = rl_blocking_of(rl)->listener;
    if (!L || !rl->channel) return;
    pthread_mutex_lock(&L->mu);
    uint64_t now = rl->clock();
    if (!L->running && pthread_create(&L->th, NULL, listen_main, L) == 0) L->running = 1;
    if (L->running) {
        rl_subs_watch(&L->subs, now);
        rl_nodes_flush(&L->subs.ns, now);
        if (needs_turn(&L->subs.ns)) wake(L);
    }
    pthread_mutex_unlock(&L->mu);
}

int rl_listener_new(redlock_t *rl) {
    rl_listener_t *L = calloc(1, sizeof *L);
    if (!L) return REDLOCK_ERR_NOMEM;
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        free(L);
        return REDLOCK_ERR_NOMEM;
    }
    L->wake_rd = fds[0];
    L->wake_wr = fds[1];
    L->rl = rl;
    pthread_mutex_init(&L->mu, NULL);
    rl_uri_t uris[REDLOCK_MAX_NODES];
    rl_nodes_config_t cfg;
    rl_ctx_nodes_config(rl, &cfg);
    int rc = rl_ctx_parse_uris(rl, uris);
    if (rc == REDLOCK_OK) rc = rl_subs_init(&L->subs, uris, rl->opt.n_nodes, &cfg, L->wake_wr);
    L->subs.released = released;
    L->subs.arg = L;
    L->subs.line_id = rl->line_id;
    rl_blocking_of(rl)->listener = L;
    if (rc == REDLOCK_OK) rl->channel = channel_blocking;
    return rc;
}

void rl_listener_free(redlock_t *rl) {
    rl_blocking_t *b = rl_blocking_of(rl);
    rl_listener_t *L = b->listener;
    if (!L) return;
    if (L->running) {
        pthread_mutex_lock(&L->mu);
        L->stop = 1;
        wake(L);
        pthread_mutex_unlock(&L->mu);
        pthread_join(L->th, NULL);
    }
    rl_subs_destroy(&L->subs); /* before the pipe its lookups write closes */
    rl_pollset_free(&L->ps);
    close(L->wake_rd);
    close(L->wake_wr);
    pthread_mutex_destroy(&L->mu);
    free(L);
    b->listener = NULL;
    rl->channel = NULL;
}
