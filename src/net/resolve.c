/* resolve.c -- getaddrinfo on a thread per lookup, and address lists. */
#define _GNU_SOURCE /* EAI_NODATA, EAI_ADDRFAMILY: glibc names for "no such host" */
#include "resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

struct rl_lookup {
    pthread_mutex_t mu; /* guards the fields below the thread and owner share */
    pthread_t thread;
    int refs; /* 2 while both hold it; whoever takes it to 0 frees it */
    int done;
    int abandoned; /* the owner let go: do not write notify_fd */
    int notify_fd;
    int port;
    int rc;        /* getaddrinfo's result */
    int sys_errno; /* errno for EAI_SYSTEM */
    rl_addrs_t addrs;
    char host[256];
    rl_lookup_job_fn job; /* a lookup of another kind (rl_lookup_start_job), or NULL */
    void *job_arg;        /* its argument, freed with job_free unless taken */
    void (*job_free)(void *);
    char job_why[160]; /* why the job failed */
};

int rl_addrs_literal(rl_addrs_t *a, const char *host, int port) {
    struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    memset(a, 0, sizeof *a);
    if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
        memcpy(&a->ss[0], &v4, sizeof v4);
        a->len[0] = sizeof v4;
    } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
        memcpy(&a->ss[0], &v6, sizeof v6);
        a->len[0] = sizeof v6;
    } else {
        return 0;
    }
    a->n = 1;
    return 1;
}

void rl_addr_format(const rl_addrs_t *a, size_t i, char *buf, size_t n) {
    char ip[INET6_ADDRSTRLEN] = "?";
    const struct sockaddr_storage *ss = &a->ss[i];
    if (ss->ss_family == AF_UNIX) {
        snprintf(buf, n, "%s", ((const struct sockaddr_un *)ss)->sun_path);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
        snprintf(buf, n, "[%s]:%u", ip, ntohs(s6->sin6_port));
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
        snprintf(buf, n, "%s:%u", ip, ntohs(s4->sin_port));
    }
}

void rl_addrs_keep(rl_addrs_t *a, const struct addrinfo *res) {
    a->n = 0;
    for (; res && a->n < RL_MAX_ADDRS; res = res->ai_next) {
        if (res->ai_addrlen > sizeof a->ss[0]) continue;
        if (res->ai_family != AF_INET && res->ai_family != AF_INET6) continue;
        memcpy(&a->ss[a->n], res->ai_addr, res->ai_addrlen);
        a->len[a->n++] = res->ai_addrlen;
    }
}

/* Drops one reference to l under its mutex; returns 1 when it was the
 * last (the caller frees l). */
static int unref(rl_lookup_t *l) {
    return --l->refs == 0;
}

/* Frees l's memory (and its job's argument, unless taken). */
static void destroy(rl_lookup_t *l) {
    if (l->job_arg && l->job_free) l->job_free(l->job_arg);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* The lookup thread: resolves, stores the result, tells the owner. */
static void *lookup_main(void *arg) {
    rl_lookup_t *l = arg;
    /* no AI_ADDRCONFIG: it hides loopback-only names on a host without
     * other addresses; an address family the host lacks fails at once */
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
    struct addrinfo *res = NULL;
    rl_addrs_t found = {0};
    char port[8];
    snprintf(port, sizeof port, "%d", l->port);
    int rc =
        l->job ? l->job(l->job_arg, &found, l->job_why, sizeof l->job_why) : getaddrinfo(l->host, port, &hints, &res);
    int e = errno;
    pthread_mutex_lock(&l->mu);
    l->rc = rc;
    l->sys_errno = e;
    if (l->job) l->addrs = found;
    if (rc == 0 && !l->job) rl_addrs_keep(&l->addrs, res);
    if (rc == 0 && l->addrs.n == 0) l->rc = EAI_NODATA;
    l->done = 1;
    if (!l->abandoned) {
        ssize_t w = write(l->notify_fd, "r", 1); /* a full pipe already says "look" */
        (void)w;
    }
    int last = unref(l);
    pthread_mutex_unlock(&l->mu);
    if (res) freeaddrinfo(res);
    if (last) destroy(l);
    return NULL;
}

/* Starts l's thread. Returns l, or NULL (l freed) when there is none. */
static rl_lookup_t *start(rl_lookup_t *l) {
    /* the thread takes no signals: they stay with the application's threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&l->thread, NULL, lookup_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        destroy(l);
        return NULL;
    }
    return l;
}

/* A new lookup of two references with notify_fd, or NULL. */
static rl_lookup_t *make(int notify_fd) {
    rl_lookup_t *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    pthread_mutex_init(&l->mu, NULL);
    l->refs = 2;
    l->notify_fd = notify_fd;
    return l;
}

rl_lookup_t *rl_lookup_start(const char *host, int port, int notify_fd) {
    if (strlen(host) >= sizeof((rl_lookup_t *)0)->host) return NULL;
    rl_lookup_t *l = make(notify_fd);
    if (!l) return NULL;
    l->port = port;
    snprintf(l->host, sizeof l->host, "%s", host);
    return start(l);
}

rl_lookup_t *rl_lookup_start_job(rl_lookup_job_fn fn, void *arg, void (*arg_free)(void *), int notify_fd) {
    rl_lookup_t *l = make(notify_fd);
    if (!l) {
        arg_free(arg);
        return NULL;
    }
    l->job = fn;
    l->job_arg = arg;
    l->job_free = arg_free;
    return start(l);
}

int rl_lookup_done(rl_lookup_t *l) {
    pthread_mutex_lock(&l->mu);
    int d = l->done;
    pthread_mutex_unlock(&l->mu);
    return d;
}

/* Writes the resolver's reason for failed lookup l into why. */
static void lookup_reason(const rl_lookup_t *l, char *why, size_t n) {
    if (l->job)
        snprintf(why, n, "%s", l->job_why[0] ? l->job_why : "no address");
    else if (l->rc == EAI_NONAME || l->rc == EAI_NODATA || l->rc == EAI_ADDRFAMILY)
        snprintf(why, n, "unknown host");
    else if (l->rc == EAI_SYSTEM)
        snprintf(why, n, "%s", strerror(l->sys_errno));
    else
        snprintf(why, n, "%s", gai_strerror(l->rc));
}

int rl_lookup_take_job(rl_lookup_t *l, rl_addrs_t *out, char *why, size_t n, void **arg) {
    pthread_mutex_lock(&l->mu);
    int last = unref(l);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL); /* it has stored its result: at most a moment */
    int rc = l->rc == 0 ? 0 : -1;
    if (rc == 0)
        *out = l->addrs;
    else
        lookup_reason(l, why, n);
    if (arg) { /* the caller owns it now */
        *arg = l->job_arg;
        l->job_arg = NULL;
    }
    if (last) destroy(l);
    return rc;
}

int rl_lookup_take(rl_lookup_t *l, rl_addrs_t *out, char *why, size_t n) {
    return rl_lookup_take_job(l, out, why, n, NULL);
}

void rl_lookup_drop(rl_lookup_t *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->abandoned = 1;
    int done = l->done, last = unref(l);
    pthread_t t = l->thread; /* l may be gone as soon as the mutex is released */
    pthread_mutex_unlock(&l->mu);
    if (done) {
        pthread_join(t, NULL);
        if (last) destroy(l);
    } else {
        pthread_detach(t);
    }
}
