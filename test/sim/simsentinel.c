/* simsentinel.c -- Sentinel groups (the sentinel runs of the replicated
 * scenarios, see sim.h): each node is a group whose master and replicas
 * are at addresses of their own, member m of node i at 10.0.m.(i+1), and
 * the clients name the groups by redis+sentinel:// URIs. The library's
 * look-ups and failover feeds (src/net/sentinel.h, failover.h) are
 * answered here, through link-time substitutions, from what the groups'
 * sentinels would say now: the master (during a failover's detection time,
 * still the dead one), how long ago its role was reported, the failover
 * epoch, the replicas. A look-up's answer and a failover's announcement
 * reach the client after a round trip; each writes the byte the library
 * waits for to its real wake pipe, and the client's handle reads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "failover.h"
#include "sentinel.h"
#include "sim.h"

/* A look-up in flight or answered (what rl_sentinel_lookup_start returns). */
typedef struct slookup {
    int node, client, notify_fd;
    int done, dropped; /* answered; let go by the library (freed here) */
    rl_addrs_t addrs;
    rl_group_info_t info;
} slookup_t;

/* A failover feed (what rl_failover_feed_start returns). */
typedef struct sfeed {
    int node, client, notify_fd;
    int stopped;
    uint32_t switches; /* announcements heard */
    char to[RL_ADDR_STRLEN];
} sfeed_t;

/* The run's look-ups and feeds, freed at its end (sentinel_free). */
static slookup_t **lookups;
static size_t nlookups, caplookups;
static sfeed_t **feeds;
static size_t nfeeds, capfeeds;

/* Keeps p in the list (n entries, room for cap). */
static void keep(void ***list, size_t *n, size_t *cap, void *p) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        if (!(*list = realloc(*list, *cap * sizeof **list))) abort();
    }
    (*list)[(*n)++] = p;
}

/* 1 when l is one of the run's look-ups. */
static int ours(const void *l) {
    for (size_t i = 0; i < nlookups; i++)
        if (lookups[i] == l) return 1;
    return 0;
}

void sentinel_free(void) {
    for (size_t i = 0; i < nlookups; i++) free(lookups[i]);
    for (size_t i = 0; i < nfeeds; i++) free(feeds[i]);
    free(lookups);
    free(feeds);
    lookups = NULL;
    feeds = NULL;
    nlookups = caplookups = nfeeds = capfeeds = 0;
}

const char *sentinel_uri(int node) {
    static char uris[SIM_MAX_NODES][64];
    snprintf(uris[node], sizeof uris[node], "redis+sentinel://10.9.0.1:26379/g%d", node);
    return uris[node];
}

/* The IP of member m of node i, "10.0.m.(i+1)", into buf; every member
 * listens on port 6379. */
static void member_ip(int node, int m, char *buf, size_t n) {
    snprintf(buf, n, "10.0.%d.%d", m, node + 1);
}

int sentinel_at_master(const sconn_t *c) {
    return !S->cfg.sentinel || c->member == S->nodes[c->node].master_member;
}

/* What a member that is not its group's master answers: ROLE as a
 * replica, PING, and READONLY to everything else (the library's commands
 * all write or run scripts that do). */
void sentinel_replica_reply(sconn_t *c, const resp_cmd_t *cmd, sbuf_t *out) {
    char master[RL_ADDR_STRLEN];
    if (cmd->argc >= 1 && !strcasecmp(cmd->argv[0], "PING")) {
        resp_status(out, "PONG");
        return;
    }
    S->cov[COV_REPLICA_REFUSED]++;
    if (cmd->argc >= 1 && !strcasecmp(cmd->argv[0], "ROLE")) {
        member_ip(c->node, S->nodes[c->node].master_member, master, sizeof master);
        resp_array(out, 5);
        resp_str(out, "slave");
        resp_str(out, master);
        resp_int(out, 6379);
        resp_str(out, "connected");
        resp_int(out, 0);
        return;
    }
    resp_error(out, "READONLY You can't write against a read only replica.");
}

/* Fills l with what node's sentinels say now. */
static void answer(slookup_t *l) {
    const snode_t *n = &S->nodes[l->node];
    char ip[32];
    member_ip(l->node, n->master_member, ip, sizeof ip);
    if (!rl_addrs_literal(&l->addrs, ip, 6379)) abort(); /* (an IP literal of our own) */
    rl_group_info_t *g = &l->info;
    memset(g, 0, sizeof *g);
    snprintf(g->master, sizeof g->master, "%s:6379", ip);
    /* the role was reported when the master was promoted, or (never failed over) when it started */
    uint64_t age_us = n->promotions ? S->now - n->promoted_at : S->now + S->cfg.up_us;
    g->role_age_ms = (int64_t)(age_us / 1000u);
    g->epoch = (uint64_t)n->promotions;
    g->replicas = n->n_reps;
    g->answered = g->asked = 1;
}

/* Writes the library's wake byte to fd and lets client c's handle read it. */
static void notify(int client, int fd) {
    ssize_t k = write(fd, "s", 1);
    (void)k;
    S->clients[client].notified = 1;
    client_pump(&S->clients[client]);
}

void sentinel_event(sev_t *e) {
    if (e->kind == E_LOOKUP) {
        slookup_t *l = lookups[e->a];
        if (l->dropped) return;
        answer(l);
        l->done = 1;
        S->cov[COV_LOOKUPS]++;
        notify(l->client, l->notify_fd);
        return;
    }
    sfeed_t *f = feeds[e->a];
    if (f->stopped) return;
    f->switches++;
    char ip[32];
    member_ip(f->node, S->nodes[f->node].master_member, ip, sizeof ip);
    snprintf(f->to, sizeof f->to, "%s:6379", ip);
    S->cov[COV_SWITCHES]++;
    notify(f->client, f->notify_fd);
}

void sentinel_announce(int node) {
    for (size_t i = 0; i < nfeeds; i++)
        if (feeds[i]->node == node && !feeds[i]->stopped)
            sim_push(E_FEED, S->now + 2 * net_one_way(node), (int)i, node, 0, NULL, 0);
}

/* -------------------------------------------- the library's calls, wrapped */

rl_lookup_t *__real_rl_sentinel_lookup_start(const rl_uri_t *u, const rl_bio_tls_t *tls, uint32_t timeout_ms,
                                             int notify_fd);
int __real_rl_sentinel_lookup_take(rl_lookup_t *l, rl_addrs_t *out, rl_group_info_t *info, char *why, size_t n);
int __real_rl_lookup_done(rl_lookup_t *l);
void __real_rl_lookup_drop(rl_lookup_t *l);
rl_failover_feed_t *__real_rl_failover_feed_start(const rl_uri_t *u, const rl_bio_tls_t *tls, int notify_fd);
uint32_t __real_rl_failover_feed_switches(rl_failover_feed_t *w, char *to, size_t n);
void __real_rl_failover_feed_stop(rl_failover_feed_t *w);

/* A look-up of group gN: answered after the two round trips of
 * GET-MASTER-ADDR-BY-NAME and SENTINEL MASTER (timeout_ms: never reached,
 * the sentinels answer at once). */
rl_lookup_t *__wrap_rl_sentinel_lookup_start(const rl_uri_t *u, const rl_bio_tls_t *tls, uint32_t timeout_ms,
                                             int notify_fd);
rl_lookup_t *__wrap_rl_sentinel_lookup_start(const rl_uri_t *u, const rl_bio_tls_t *tls, uint32_t timeout_ms,
                                             int notify_fd) {
    if (!S) return __real_rl_sentinel_lookup_start(u, tls, timeout_ms, notify_fd);
    slookup_t *l = calloc(1, sizeof *l);
    if (!l) abort();
    l->node = atoi(u->master + 1); /* "gN" */
    l->client = S->cur ? S->cur->id : 0;
    l->notify_fd = notify_fd;
    keep((void ***)&lookups, &nlookups, &caplookups, l);
    uint64_t rtts = 0;
    for (int k = 0; k < 4; k++) rtts += net_one_way(l->node);
    sim_push(E_LOOKUP, S->now + rtts, (int)nlookups - 1, l->node, 0, NULL, 0);
    return (rl_lookup_t *)l;
}

/* The answer of a finished look-up. */
int __wrap_rl_sentinel_lookup_take(rl_lookup_t *l, rl_addrs_t *out, rl_group_info_t *info, char *why, size_t n);
int __wrap_rl_sentinel_lookup_take(rl_lookup_t *l, rl_addrs_t *out, rl_group_info_t *info, char *why, size_t n) {
    if (!S || !ours(l)) return __real_rl_sentinel_lookup_take(l, out, info, why, n);
    (void)why, (void)n; /* (the one sentinel always answers) */
    slookup_t *s = (slookup_t *)l;
    s->dropped = 1;
    *out = s->addrs;
    *info = s->info;
    return 0;
}

int __wrap_rl_lookup_done(rl_lookup_t *l);
int __wrap_rl_lookup_done(rl_lookup_t *l) {
    return S && ours(l) ? ((slookup_t *)l)->done : __real_rl_lookup_done(l);
}

void __wrap_rl_lookup_drop(rl_lookup_t *l);
void __wrap_rl_lookup_drop(rl_lookup_t *l) {
    if (S && ours(l))
        ((slookup_t *)l)->dropped = 1;
    else
        __real_rl_lookup_drop(l);
}

/* A feed of group gN's announcements (sentinel_announce). */
rl_failover_feed_t *__wrap_rl_failover_feed_start(const rl_uri_t *u, const rl_bio_tls_t *tls, int notify_fd);
rl_failover_feed_t *__wrap_rl_failover_feed_start(const rl_uri_t *u, const rl_bio_tls_t *tls, int notify_fd) {
    if (!S) return __real_rl_failover_feed_start(u, tls, notify_fd);
    sfeed_t *f = calloc(1, sizeof *f);
    if (!f) abort();
    f->node = atoi(u->master + 1);
    f->client = S->cur ? S->cur->id : 0;
    f->notify_fd = notify_fd;
    keep((void ***)&feeds, &nfeeds, &capfeeds, f);
    return (rl_failover_feed_t *)f;
}

uint32_t __wrap_rl_failover_feed_switches(rl_failover_feed_t *w, char *to, size_t n);
uint32_t __wrap_rl_failover_feed_switches(rl_failover_feed_t *w, char *to, size_t n) {
    if (!S) return __real_rl_failover_feed_switches(w, to, n);
    const sfeed_t *f = (const sfeed_t *)w;
    snprintf(to, n, "%s", f->to);
    return f->switches;
}

void __wrap_rl_failover_feed_stop(rl_failover_feed_t *w);
void __wrap_rl_failover_feed_stop(rl_failover_feed_t *w) {
    if (!S) {
        __real_rl_failover_feed_stop(w);
        return;
    }
    if (w) ((sfeed_t *)w)->stopped = 1;
}
