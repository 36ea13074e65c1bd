/* sentinel.c -- a Sentinel group's master, looked up on a lookup thread
 * (see sentinel.h). The thread talks to the sentinels with short blocking
 * exchanges of its own (a socket, a deadline, hiredis's reader): it never
 * runs on the thread that drives the nodes, so waiting is allowed here. */
#define _GNU_SOURCE /* getaddrinfo's flags, strcasestr */
#include "sentinel.h"

#include "blockio.h"
#include "clock.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A lookup's job: what to ask (in) and what the sentinels said (out). */
typedef struct rl_sentinel_job {
    char name[136];
    char *pass;       /* the sentinels' password, or NULL */
    int tls_on;       /* the sentinels are asked over TLS (u->sentinel_tls) */
    rl_bio_tls_t tls; /* then with this (its own context reference) */
    uint32_t timeout_ms;
    size_t n;
    rl_sentinel_addr_t s[RL_URI_MAX_SEEDS + 1];
    rl_group_info_t info;
} rl_sentinel_job_t;

/* The value of field in a SENTINEL MASTER reply (a flat list of names and
 * values), or NULL. */
static const char *field(const redisReply *m, const char *name) {
    if (!m || m->type != REDIS_REPLY_ARRAY) return NULL;
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if (m->element[i]->type == REDIS_REPLY_STRING && !strcmp(m->element[i]->str, name) &&
            m->element[i + 1]->type == REDIS_REPLY_STRING)
            return m->element[i + 1]->str;
    return NULL;
}

/* Folds one sentinel's answers (addr: GET-MASTER-ADDR-BY-NAME's, m:
 * SENTINEL MASTER's) into j->info; the address of the sentinel with the
 * greatest epoch wins (the first on a tie). Returns 0, or -1 with why. */
static int fold(rl_sentinel_job_t *j, const redisReply *addr, const redisReply *m, char *why, size_t n) {
    if (addr->type == REDIS_REPLY_ERROR) {
        snprintf(why, n, "%.100s", addr->str);
        return -1;
    }
    if (addr->type != REDIS_REPLY_ARRAY || addr->elements != 2 || addr->element[0]->type != REDIS_REPLY_STRING ||
        addr->element[1]->type != REDIS_REPLY_STRING) {
        snprintf(why, n, "does not know a master named '%.60s'", j->name);
        return -1;
    }
    rl_group_info_t *g = &j->info;
    const char *age = field(m, "role-reported-time"), *epoch = field(m, "config-epoch"), *reps = field(m, "num-slaves");
    uint64_t e = epoch ? strtoull(epoch, NULL, 10) : 0;
    if (!g->answered || e > g->epoch) {
        const char *ip = addr->element[0]->str;
        snprintf(g->master, sizeof g->master, strchr(ip, ':') ? "[%s]:%s" : "%s:%s", ip, addr->element[1]->str);
        g->epoch = e;
    }
    if (age) {
        int64_t a = strtoll(age, NULL, 10);
        if (g->role_age_ms < 0 || a < g->role_age_ms) g->role_age_ms = a;
    }
    if (reps && atoi(reps) > g->replicas) g->replicas = atoi(reps);
    g->answered++;
    return 0;
}

/* Asks sentinel s. Returns 0 when it named the master, else -1 with why. */
static int ask(rl_sentinel_job_t *j, const rl_sentinel_addr_t *s, char *why, size_t n) {
    uint64_t deadline = rl_clock_monotonic_us() + (uint64_t)j->timeout_ms * 1000u;
    rl_bio_stream_t st;
    if (j->tls_on && !j->tls.ctx) {
        snprintf(why, n, "no TLS context for the sentinels");
        return -1;
    }
    if (rl_bio_open(&st, s->host, s->port, &j->tls, deadline, why, n) < 0) return -1;
    char *auth = NULL, *get = NULL, *info = NULL;
    int la = j->pass ? redisFormatCommand(&auth, "AUTH %s", j->pass) : 0;
    int lg = redisFormatCommand(&get, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", j->name);
    int li = redisFormatCommand(&info, "SENTINEL MASTER %s", j->name);
    size_t len = (size_t)(la > 0 ? la : 0) + (size_t)(lg > 0 ? lg : 0) + (size_t)(li > 0 ? li : 0);
    char *cmd = lg > 0 && li > 0 && la >= 0 ? malloc(len) : NULL;
    redisReply *rep[3] = {NULL, NULL, NULL};
    int nreq = 2 + (j->pass != NULL), rc = -1;
    if (cmd) {
        size_t at = 0;
        if (la > 0) memcpy(cmd, auth, (size_t)la), at = (size_t)la;
        memcpy(cmd + at, get, (size_t)lg);
        memcpy(cmd + at + (size_t)lg, info, (size_t)li);
        rc = rl_bio_exchange(&st, cmd, len, rep, nreq, deadline, why, n);
        if (rc && !st.ssl && strstr(why, "closed")) /* what a TLS port does to plain text */
            snprintf(why + strlen(why), n - strlen(why), " (a TLS port? rediss+sentinel:// or sentinel_tls=yes)");
    } else {
        snprintf(why, n, "out of memory");
    }
    const redisReply *a = rep[nreq - 2], *m = rep[nreq - 1];
    if (rc == 0 && j->pass && rep[0]->type == REDIS_REPLY_ERROR) {
        snprintf(why, n, "AUTH refused (sentinel_password): %.80s", rep[0]->str);
        rc = -1;
    }
    if (rc == 0) rc = fold(j, a, m, why, n);
    for (int i = 0; i < 3; i++)
        if (rep[i]) freeReplyObject(rep[i]);
    free(cmd);
    redisFreeCommand(auth);
    redisFreeCommand(get);
    redisFreeCommand(info);
    rl_bio_close(&st);
    return rc;
}

/* Resolves the master the sentinels named ("ip:port") into out. */
static int resolve_master(const char *master, rl_addrs_t *out, char *why, size_t n) {
    char host[RL_ADDR_STRLEN];
    snprintf(host, sizeof host, "%s", master[0] == '[' ? master + 1 : master);
    char *colon = strrchr(host, ':');
    if (!colon) {
        snprintf(why, n, "the sentinels named no port: '%s'", master);
        return -1;
    }
    *colon = '\0';
    if (colon > host && colon[-1] == ']') colon[-1] = '\0';
    int port = atoi(colon + 1);
    if (rl_addrs_literal(out, host, port)) return 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC}, *res = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc) {
        snprintf(why, n, "the master %s the sentinels named: %s", master, gai_strerror(rc));
        return -1;
    }
    rl_addrs_keep(out, res);
    freeaddrinfo(res);
    return out->n ? 0 : -1;
}

/* The lookup thread's job: asks every sentinel (all of them, so that the
 * least role age and the greatest epoch are known), then resolves the
 * master. */
static int sentinel_job(void *arg, rl_addrs_t *out, char *why, size_t n) {
    rl_sentinel_job_t *j = arg;
    size_t used = 0;
    why[0] = '\0';
    for (size_t i = 0; i < j->n; i++) {
        char one[200];
        j->info.asked++;
        if (ask(j, &j->s[i], one, sizeof one) == 0) continue;
        int w =
            snprintf(why + used, n - used, "%ssentinel %s:%d: %s", used ? "; " : "", j->s[i].host, j->s[i].port, one);
        if (w > 0) used = used + (size_t)w < n ? used + (size_t)w : n - 1;
    }
    if (!j->info.answered) return -1;
    return resolve_master(j->info.master, out, why, n);
}

/* Frees a job (its password wiped, its TLS context reference dropped). */
static void job_free(void *arg) {
    rl_sentinel_job_t *j = arg;
    rl_bio_tls_clear(&j->tls);
    if (j->pass) {
        memset(j->pass, 0, strlen(j->pass));
        free(j->pass);
    }
    free(j);
}

size_t rl_sentinel_addrs(const rl_uri_t *u, rl_sentinel_addr_t *s, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i <= u->nseeds && n < max; i++, n++) {
        const char *host = i ? u->seeds[i - 1].host : u->host;
        snprintf(s[n].host, sizeof s[n].host, "%s", host);
        s[n].port = i ? u->seeds[i - 1].port : u->port;
    }
    return n;
}

rl_lookup_t *rl_sentinel_lookup_start(const rl_uri_t *u, const rl_bio_tls_t *tls, uint32_t timeout_ms, int notify_fd) {
    rl_sentinel_job_t *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->tls_on = u->sentinel_tls;
    if (rl_bio_tls_copy(&j->tls, tls, j->tls_on) < 0) {
        free(j);
        return NULL;
    }
    snprintf(j->name, sizeof j->name, "%s", u->master);
    j->timeout_ms = timeout_ms;
    j->info.role_age_ms = -1;
    if (u->sentinel_pass && !(j->pass = strdup(u->sentinel_pass))) {
        job_free(j);
        return NULL;
    }
    j->n = rl_sentinel_addrs(u, j->s, sizeof j->s / sizeof j->s[0]);
    return rl_lookup_start_job(sentinel_job, j, job_free, notify_fd);
}

int rl_sentinel_lookup_take(rl_lookup_t *l, rl_addrs_t *out, rl_group_info_t *info, char *why, size_t n) {
    void *arg = NULL;
    int rc = rl_lookup_take_job(l, out, why, n, &arg);
    rl_sentinel_job_t *j = arg;
    if (j) *info = j->info;
    if (j) job_free(j);
    return rc;
}
