/* subs.c -- the release channels a handle listens on (see subs.h): a
 * count of waiters per resource, SUBSCRIBE / UNSUBSCRIBE on every node's
 * subscriber connection as the counts leave and reach zero, and the
 * channel's messages turned back into resources for the driver. */
#include "subs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "membership.h"
#include "redlock.h"
#include "slot.h"

#define PREFIX_LEN (sizeof RL_RELEASED_PREFIX - 1)
#define NOTICE_LEN (sizeof RL_MEMBERSHIP_CHANNEL - 1)
#define NEXT_LEN (sizeof RL_NEXT_PREFIX - 1)

/* The entry for res, or NULL. */
static rl_sub_t *find(const rl_subs_t *s, const char *res, size_t len) {
    uint64_t h = rl_map_hash(&s->map, res, len);
    for (rl_map_node_t *x = rl_map_first(&s->map, h); x; x = rl_map_next(x)) {
        rl_sub_t *e = RL_MAP_ENTRY(x, rl_sub_t, node);
        if (e->len == len && !memcmp(e->res, res, len)) return e;
    }
    return NULL;
}

/* Puts e (no waiter left since now) at the tail of the idle list. */
static void idle_push(rl_subs_t *s, rl_sub_t *e, uint64_t now) {
    e->idle_us = now;
    e->idle_next = NULL;
    e->idle_prev = s->idle_tail;
    if (s->idle_tail)
        s->idle_tail->idle_next = e;
    else
        s->idle_head = e;
    s->idle_tail = e;
}

/* Takes e off the idle list (a waiter came back, or it is dropped). */
static void idle_unlink(rl_subs_t *s, rl_sub_t *e) {
    if (e->idle_prev)
        e->idle_prev->idle_next = e->idle_next;
    else if (s->idle_head == e)
        s->idle_head = e->idle_next;
    if (e->idle_next)
        e->idle_next->idle_prev = e->idle_prev;
    else if (s->idle_tail == e)
        s->idle_tail = e->idle_prev;
    e->idle_prev = e->idle_next = NULL;
}

/* Node i's cluster state when it is a Redis Cluster, else NULL. */
static rl_cluster_t *cluster_of(const rl_subs_t *s, size_t i) {
    return s->ns.cl ? s->ns.cl[i] : NULL;
}

/* Queues "<verb> redlock:released:<res>" on node i (opening it if it is
 * down and due). On a cluster node: "S<verb>" of the sharded channel of
 * res as named there, on the shard serving its slot (REDLOCK_ERR_IO while
 * that is not known). Returns 0 or the error that kept it from going. */
static int send_verb(rl_subs_t *s, size_t i, const char *verb, const char *res, size_t len, uint64_t now) {
    char key[REDLOCK_MAX_RESOURCE + RL_CLUSTER_KEY_EXTRA + 1], sverb[24];
    int32_t hslot = RL_SLOT_NONE;
    if (cluster_of(s, i)) {
        size_t kn = rl_cluster_key(key, sizeof key, res, len);
        if (!kn) return REDLOCK_ERR_INVALID;
        hslot = rl_key_slot(key, kn);
        if (!rl_cluster_owner(cluster_of(s, i), hslot)) return REDLOCK_ERR_IO; /* the map comes first */
        snprintf(sverb, sizeof sverb, "S%s", verb);
        verb = sverb;
        res = key;
        len = kn;
    }
    size_t vlen = strlen(verb);
    size_t cap = 64 + vlen + PREFIX_LEN + len;
    char small[512], *cmd = cap <= sizeof small ? small : malloc(cap);
    if (!cmd) return REDLOCK_ERR_NOMEM;
    int h = snprintf(cmd, cap, "*2\r\n$%zu\r\n%s\r\n$%zu\r\n" RL_RELEASED_PREFIX, vlen, verb, PREFIX_LEN + len);
    memcpy(cmd + h, res, len);
    memcpy(cmd + h + len, "\r\n", 2);
    int rc = rl_nodes_command(&s->ns, i, hslot, cmd, (size_t)h + len + 2, now);
    if (cmd != small) free(cmd);
    return rc;
}

/* Queues SUBSCRIBE of the membership steps' channel on plain node i
 * (opening it when down and due). Returns 0 or the error. */
static int send_watch(rl_subs_t *s, size_t i, uint64_t now) {
    static const char cmd[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$18\r\n" RL_MEMBERSHIP_CHANNEL "\r\n";
    _Static_assert(NOTICE_LEN == 18, "the channel's length in cmd");
    return rl_nodes_command(&s->ns, i, RL_SLOT_NONE, cmd, sizeof cmd - 1, now);
}

/* Queues SUBSCRIBE of the handle's own channel on plain node i (opening
 * it when down and due). Returns 0 or the error. */
static int send_own(rl_subs_t *s, size_t i, uint64_t now) {
    char cmd[64 + NEXT_LEN + REDLOCK_TOKEN_LEN];
    int n = snprintf(cmd, sizeof cmd, "*2\r\n$9\r\nSUBSCRIBE\r\n$%zu\r\n" RL_NEXT_PREFIX "%.*s\r\n",
                     NEXT_LEN + REDLOCK_TOKEN_LEN, (int)REDLOCK_TOKEN_LEN, s->line_id);
    return rl_nodes_command(&s->ns, i, RL_SLOT_NONE, cmd, (size_t)n, now);
}

/* Marks cluster node i for a resubscription of every channel (soon). */
static void mark_dirty(rl_subs_t *s, size_t i, uint64_t now) {
    if (!s->dirty[i] && (!s->retry_us || s->retry_us > now + RL_SUBS_RETRY_US)) s->retry_us = now + RL_SUBS_RETRY_US;
    s->dirty[i] = 1;
}

/* rl_map_each over the channels: subscribes one on the node in *arg. */
typedef struct {
    rl_subs_t *s;
    size_t i;
    uint64_t now;
    int rc;
} reopen_t;
static void resubscribe(rl_map_node_t *x, void *arg) {
    reopen_t *r = arg;
    rl_sub_t *e = RL_MAP_ENTRY(x, rl_sub_t, node);
    if (!r->rc) r->rc = send_verb(r->s, r->i, "SUBSCRIBE", e->res, e->len, r->now);
}

/* Opens node i's connection (it is down and due) by subscribing it to
 * every channel with waiters, and to the membership steps' when watched
 * (pipelined: they leave in one write). A cluster node's channels go to
 * their shards; returns the first error. */
static int reopen(rl_subs_t *s, size_t i, uint64_t now) {
    reopen_t r = {s, i, now, 0};
    if (s->watch && !cluster_of(s, i)) r.rc = send_watch(s, i, now);
    if (s->own && !cluster_of(s, i) && !r.rc) r.rc = send_own(s, i, now);
    rl_map_each(&s->map, resubscribe, &r);
    return r.rc;
}

/* 1 when plain node i is down and its backoff has passed. */
static int due(const rl_subs_t *s, size_t i, uint64_t now) {
    const rl_conn_t *c = &s->ns.nodes[i].conn;
    return !cluster_of(s, i) && c->state == RL_CONN_DOWN && now >= c->retry_at_us;
}

/* A cluster node's failures and map loads: when they change, its
 * subscriptions may be lost or on the wrong shard. */
static uint32_t cluster_sig(const rl_cluster_t *cl) {
    return cl->downs + cl->loads;
}

/* Resubscribes the dirty cluster nodes' channels, and marks those whose
 * connections failed or whose map changed since they were subscribed. */
static void cluster_upkeep(rl_subs_t *s, uint64_t now) {
    for (size_t i = 0; s->n && i < s->ns.n; i++) {
        rl_cluster_t *cl = cluster_of(s, i);
        if (!cl) continue;
        if (cluster_sig(cl) != s->seen[i]) mark_dirty(s, i, now);
        if (!s->dirty[i] || now < s->retry_us) continue;
        if (!cl->loaded_us) rl_nodes_map_load(&s->ns, i, now);
        s->seen[i] = cluster_sig(cl);
        s->dirty[i] = 0;
        if (!cl->loaded_us || reopen(s, i, now)) mark_dirty(s, i, now);
    }
    int any = 0;
    for (size_t i = 0; i < s->ns.n; i++) any |= s->dirty[i];
    if (!any)
        s->retry_us = 0;
    else if (s->retry_us <= now)
        s->retry_us = now + RL_SUBS_RETRY_US;
}

/* Adds an entry for res with no waiters yet; NULL when out of memory. */
static rl_sub_t *add(rl_subs_t *s, const char *res, size_t len) {
    rl_sub_t *e = malloc(offsetof(rl_sub_t, res) + len);
    if (!e) return NULL;
    /* (not a compound literal: it would write sizeof *e, the padding after
     * res included, past a short name's allocation) */
    memset(e, 0, offsetof(rl_sub_t, res));
    e->len = len;
    memcpy(e->res, res, len);
    rl_map_insert(&s->map, &e->node, rl_map_hash(&s->map, res, len));
    s->n++;
    return e;
}

/* Unsubscribes entry e on every node and drops it. */
static void drop(rl_subs_t *s, rl_sub_t *e, uint64_t now) {
    for (size_t i = 0; i < s->ns.n; i++)
        if (cluster_of(s, i) || s->ns.nodes[i].conn.state != RL_CONN_DOWN)
            send_verb(s, i, "UNSUBSCRIBE", e->res, e->len, now);
    idle_unlink(s, e);
    rl_map_remove(&s->map, &e->node);
    s->n--;
    free(e);
}

int rl_subs_waiter(rl_subs_t *s, const char *res, size_t len, int join, uint64_t now) {
    rl_sub_t *e = find(s, res, len);
    if (!join) {
        if (e && e->waiters && --e->waiters == 0) idle_push(s, e, now);
        return 0;
    }
    if (e) { /* (one lingering on is still subscribed) */
        if (e->waiters++ == 0) idle_unlink(s, e);
        return 0;
    }
    if (!(e = add(s, res, len))) return REDLOCK_ERR_NOMEM;
    e->waiters = 1;
    int own = s->line_id && !s->own; /* the first wait: the own channel too, ahead of the resource's */
    s->own |= (uint8_t)own;
    for (size_t i = 0; i < s->ns.n; i++) {
        if (cluster_of(s, i)) {
            if (!cluster_of(s, i)->loaded_us) rl_nodes_map_load(&s->ns, i, now);
            if (send_verb(s, i, "SUBSCRIBE", res, len, now)) mark_dirty(s, i, now);
        } else if (due(s, i, now))
            reopen(s, i, now); /* the new channels are among them */
        else if (s->ns.nodes[i].conn.state != RL_CONN_DOWN) {
            if (own) send_own(s, i, now);
            send_verb(s, i, "SUBSCRIBE", res, len, now);
        }
    }
    return 0;
}

/* The entry whose resource is named key (klen bytes) on a cluster node
 * ("{res}", or res itself when it has a hash tag), or NULL. */
static rl_sub_t *find_cluster(const rl_subs_t *s, const char *key, size_t klen) {
    char res[REDLOCK_MAX_RESOURCE + 1], again[REDLOCK_MAX_RESOURCE + RL_CLUSTER_KEY_EXTRA + 1];
    rl_sub_t *e = find(s, key, klen);
    if (e || klen < 3 || key[0] != '{' || klen - 2 > REDLOCK_MAX_RESOURCE) return e;
    for (size_t p = 1; p < klen; p++) { /* the '}' rl_cluster_key added: one of them */
        if (key[p] != '}') continue;
        memcpy(res, key + 1, p - 1);
        memcpy(res + p - 1, key + p + 1, klen - p - 1);
        size_t n = klen - 2;
        if (rl_cluster_key(again, sizeof again, res, n) == klen && !memcmp(again, key, klen) && (e = find(s, res, n)))
            return e;
    }
    return NULL;
}

/* A membership step was announced on node (or its channel subscribed:
 * one announced just before would have been missed): the command
 * connections read their records again. */
static void noticed(rl_subs_t *s, size_t node, int kind) {
    if (kind == RL_PUSH_UNSUBSCRIBE || !s->ns.cfg.notices) return;
    atomic_fetch_add_explicit(&s->ns.cfg.notices->heard, 1u, memory_order_relaxed);
    if (kind == RL_PUSH_MESSAGE)
        rl_logf(&s->ns.cfg.log, REDLOCK_LOG_INFO, "node %s: a membership step was announced: reading the records again",
                s->ns.nodes[node].conn.uri.display);
}

/* rl_map_each over the channels: the head of each resource with waiters
 * attempts (a release that named the handle may have gone unheard). */
static void wake_entry(rl_map_node_t *x, void *arg) {
    rl_subs_t *s = arg;
    rl_sub_t *e = RL_MAP_ENTRY(x, rl_sub_t, node);
    if (e->waiters && s->released) s->released(s->arg, e->res, e->len, 0, "", 0);
}

/* A push on node's own channel: a message names the handle for its
 * resource; a resubscription wakes every resource waited on. */
static void own_push(rl_subs_t *s, size_t node, int kind, const char *msg, size_t mlen) {
    uint64_t bit = (uint64_t)1 << (node % 64);
    if (kind == RL_PUSH_SUBSCRIBE && (s->own_heard & bit)) rl_map_each(&s->map, wake_entry, s);
    if (kind == RL_PUSH_SUBSCRIBE) s->own_heard |= bit;
    if (kind != RL_PUSH_MESSAGE) return;
    rl_sub_t *e = find(s, msg, mlen);
    if (!e) return; /* unsubscribed since */
    s->messages++;
    if (s->released) s->released(s->arg, e->res, e->len, 1, s->line_id, REDLOCK_TOKEN_LEN);
}

/* nodes' pubsub hook: a message on a release channel wakes its resource;
 * so does the first confirmation of a new subscription (a release made
 * between the waiter's refused attempt and the subscription was missed).
 * The membership steps' channel goes to noticed(). */
static void on_push(void *arg, size_t node, int kind, const char *ch, size_t len, const char *msg, size_t mlen) {
    rl_subs_t *s = arg;
    if (len == NOTICE_LEN && !memcmp(ch, RL_MEMBERSHIP_CHANNEL, NOTICE_LEN) && !cluster_of(s, node)) {
        noticed(s, node, kind);
        return;
    }
    if (s->line_id && len == NEXT_LEN + REDLOCK_TOKEN_LEN && !memcmp(ch, RL_NEXT_PREFIX, NEXT_LEN) &&
        !memcmp(ch + NEXT_LEN, s->line_id, REDLOCK_TOKEN_LEN)) {
        own_push(s, node, kind, msg, mlen);
        return;
    }
    if (len < PREFIX_LEN || memcmp(ch, RL_RELEASED_PREFIX, PREFIX_LEN)) return;
    rl_sub_t *e = cluster_of(s, node) ? find_cluster(s, ch + PREFIX_LEN, len - PREFIX_LEN)
                                      : find(s, ch + PREFIX_LEN, len - PREFIX_LEN);
    if (!e) return;                                      /* unsubscribed since */
    if (kind == RL_PUSH_UNSUBSCRIBE) {                   /* its slot moved to another shard: subscribe there */
        if (cluster_of(s, node)) mark_dirty(s, node, 0); /* (at the next turn) */
        return;
    }
    if (kind == RL_PUSH_SUBSCRIBE) {
        if (e->heard) return;
        e->heard = 1;
    } else {
        s->messages++;
    }
    if (s->released) s->released(s->arg, e->res, e->len, kind == RL_PUSH_MESSAGE, msg, mlen);
}

void rl_subs_expire(rl_subs_t *s, uint64_t now) {
    while (s->idle_head && now - s->idle_head->idle_us >= RL_SUB_LINGER_US) drop(s, s->idle_head, now);
    rl_nodes_expire(&s->ns, now);
    for (size_t i = 0; (s->n || s->watch) && i < s->ns.n; i++)
        if (due(s, i, now)) reopen(s, i, now);
    if (s->ns.cl) cluster_upkeep(s, now);
}

uint64_t rl_subs_next_us(const rl_subs_t *s) {
    uint64_t next = rl_nodes_next_us(&s->ns);
    if (s->idle_head && s->idle_head->idle_us + RL_SUB_LINGER_US < next)
        next = s->idle_head->idle_us + RL_SUB_LINGER_US;
    for (size_t i = 0; (s->n || s->watch) && i < s->ns.n; i++) {
        const rl_conn_t *c = &s->ns.nodes[i].conn;
        if (!cluster_of(s, i) && c->state == RL_CONN_DOWN && c->retry_at_us < next) next = c->retry_at_us;
    }
    if (s->n && s->retry_us && s->retry_us < next) next = s->retry_us;
    return next;
}

void rl_subs_watch(rl_subs_t *s, uint64_t now) {
    if (s->watch) return;
    s->watch = 1;
    for (size_t i = 0; i < s->ns.n; i++) {
        if (cluster_of(s, i)) continue; /* (no records there) */
        if (due(s, i, now))
            reopen(s, i, now);
        else if (s->ns.nodes[i].conn.state != RL_CONN_DOWN)
            send_watch(s, i, now);
    }
}

int rl_subs_init(rl_subs_t *s, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg, int notify_fd) {
    *s = (rl_subs_t){.n = 0};
    rl_map_init(&s->map, 16);
    rl_nodes_config_t sc = *cfg;
    sc.subscriber = 1;
    sc.stats = NULL;                        /* the command connections' figures only */
    sc.max_inflight = RL_SUBS_MAX_INFLIGHT; /* a SUBSCRIBE per channel waited on may be in flight at once */
    int rc = rl_nodes_init(&s->ns, uris, n, &sc, notify_fd);
    s->ns.pubsub = on_push;
    s->ns.done_arg = s;
    s->dirty = calloc(n ? n : 1, sizeof *s->dirty);
    s->seen = calloc(n ? n : 1, sizeof *s->seen);
    if (rc == REDLOCK_OK && (!s->dirty || !s->seen)) rc = REDLOCK_ERR_NOMEM;
    return rc;
}

/* rl_map_each: frees one channel entry (the table is destroyed after). */
static void free_entry(rl_map_node_t *x, void *arg) {
    (void)arg;
    free(RL_MAP_ENTRY(x, rl_sub_t, node));
}

void rl_subs_destroy(rl_subs_t *s) {
    rl_nodes_destroy(&s->ns);
    free(s->dirty);
    free(s->seen);
    s->dirty = NULL;
    s->seen = NULL;
    rl_map_each(&s->map, free_entry, NULL);
    rl_map_destroy(&s->map);
    s->idle_head = s->idle_tail = NULL;
    s->n = 0;
}
