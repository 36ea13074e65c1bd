/* subs.c -- the release channels a handle listens on (see subs.h): a
 * count of waiters per resource, SUBSCRIBE / UNSUBSCRIBE on every node's
 * subscriber connection as the counts leave and reach zero, and the
 * channel's messages turned back into resources for the driver. */
#include "subs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"

#define PREFIX_LEN (sizeof RL_RELEASED_PREFIX - 1)

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

/* Queues "<verb> redlock:released:<res>" on node i (opening it if it is
 * down and due). Returns 0 or the error that kept it from going. */
static int send_verb(rl_subs_t *s, size_t i, const char *verb, const char *res, size_t len, uint64_t now) {
    size_t vlen = strlen(verb);
    size_t cap = 64 + vlen + PREFIX_LEN + len;
    char small[512], *cmd = cap <= sizeof small ? small : malloc(cap);
    if (!cmd) return REDLOCK_ERR_NOMEM;
    int h = snprintf(cmd, cap, "*2\r\n$%zu\r\n%s\r\n$%zu\r\n" RL_RELEASED_PREFIX, vlen, verb, PREFIX_LEN + len);
    memcpy(cmd + h, res, len);
    memcpy(cmd + h + len, "\r\n", 2);
    int rc = rl_nodes_command(&s->ns, i, cmd, (size_t)h + len + 2, now);
    if (cmd != small) free(cmd);
    return rc;
}

/* rl_map_each over the channels: subscribes one on the node in *arg. */
typedef struct { rl_subs_t *s; size_t i; uint64_t now; int rc; } reopen_t;
static void resubscribe(rl_map_node_t *x, void *arg) {
    reopen_t *r = arg;
    rl_sub_t *e = RL_MAP_ENTRY(x, rl_sub_t, node);
    if (!r->rc) r->rc = send_verb(r->s, r->i, "SUBSCRIBE", e->res, e->len, r->now);
}

/* Opens node i's connection (it is down and due) by subscribing it to
 * every channel with waiters (pipelined: they leave in one write). */
static void reopen(rl_subs_t *s, size_t i, uint64_t now) {
    reopen_t r = {s, i, now, 0};
    rl_map_each(&s->map, resubscribe, &r);
}

/* 1 when node i is down and its backoff has passed. */
static int due(const rl_subs_t *s, size_t i, uint64_t now) {
    const rl_conn_t *c = &s->ns.conns[i];
    return c->state == RL_CONN_DOWN && now >= c->retry_at_us;
}

/* Adds an entry for res with no waiters yet; NULL when out of memory. */
static rl_sub_t *add(rl_subs_t *s, const char *res, size_t len) {
    rl_sub_t *e = malloc(sizeof *e + len);
    if (!e) return NULL;
    *e = (rl_sub_t){.len = len};
    memcpy(e->res, res, len);
    rl_map_insert(&s->map, &e->node, rl_map_hash(&s->map, res, len));
    s->n++;
    return e;
}

/* Unsubscribes entry e on every node and drops it. */
static void drop(rl_subs_t *s, rl_sub_t *e, uint64_t now) {
    for (size_t i = 0; i < s->ns.n; i++)
        if (s->ns.conns[i].state != RL_CONN_DOWN) send_verb(s, i, "UNSUBSCRIBE", e->res, e->len, now);
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
    for (size_t i = 0; i < s->ns.n; i++) {
        if (due(s, i, now))
            reopen(s, i, now); /* the new channel is among them */
        else if (s->ns.conns[i].state != RL_CONN_DOWN)
            send_verb(s, i, "SUBSCRIBE", res, len, now);
    }
    return 0;
}

/* nodes' pubsub hook: a message on a release channel wakes its resource;
 * so does the first confirmation of a new subscription (a release made
 * between the waiter's refused attempt and the subscription was missed). */
static void on_push(void *arg, size_t node, int kind, const char *ch, size_t len) {
    rl_subs_t *s = arg;
    (void)node;
    if (kind == RL_PUSH_UNSUBSCRIBE || len < PREFIX_LEN || memcmp(ch, RL_RELEASED_PREFIX, PREFIX_LEN)) return;
    rl_sub_t *e = find(s, ch + PREFIX_LEN, len - PREFIX_LEN);
    if (!e) return; /* unsubscribed since */
    if (kind == RL_PUSH_SUBSCRIBE) {
        if (e->heard) return;
        e->heard = 1;
    } else {
        s->messages++;
    }
    if (s->released) s->released(s->arg, e->res, e->len, kind == RL_PUSH_MESSAGE);
}

void rl_subs_expire(rl_subs_t *s, uint64_t now) {
    while (s->idle_head && now - s->idle_head->idle_us >= RL_SUB_LINGER_US) drop(s, s->idle_head, now);
    rl_nodes_expire(&s->ns, now);
    for (size_t i = 0; s->n && i < s->ns.n; i++)
        if (due(s, i, now)) reopen(s, i, now);
}

uint64_t rl_subs_next_us(const rl_subs_t *s) {
    uint64_t next = rl_nodes_next_us(&s->ns);
    if (s->idle_head && s->idle_head->idle_us + RL_SUB_LINGER_US < next) next = s->idle_head->idle_us + RL_SUB_LINGER_US;
    for (size_t i = 0; s->n && i < s->ns.n; i++) {
        const rl_conn_t *c = &s->ns.conns[i];
        if (c->state == RL_CONN_DOWN && c->retry_at_us < next) next = c->retry_at_us;
    }
    return next;
}

int rl_subs_init(rl_subs_t *s, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg, int notify_fd) {
    *s = (rl_subs_t){.n = 0};
    rl_map_init(&s->map, 16);
    rl_nodes_config_t sc = *cfg;
    sc.subscriber = 1;
    sc.stats = NULL;    /* the command connections' figures only */
    sc.max_inflight = RL_SUBS_MAX_INFLIGHT; /* a SUBSCRIBE per channel waited on may be in flight at once */
    int rc = rl_nodes_init(&s->ns, uris, n, &sc, notify_fd);
    s->ns.pubsub = on_push;
    s->ns.done_arg = s;
    return rc;
}

/* rl_map_each: frees one channel entry (the table is destroyed after). */
static void free_entry(rl_map_node_t *x, void *arg) {
    (void)arg;
    free(RL_MAP_ENTRY(x, rl_sub_t, node));
}

void rl_subs_destroy(rl_subs_t *s) {
    rl_nodes_destroy(&s->ns);
    rl_map_each(&s->map, free_entry, NULL);
    rl_map_destroy(&s->map);
    s->idle_head = s->idle_tail = NULL;
    s->n = 0;
}
