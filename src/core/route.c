/* route.c -- a Redis Cluster node's routing (doc/design.md, "Cluster routing"; see
 * route.h): its slot map loaded from CLUSTER SLOTS on the node's own
 * connection, a connection per shard primary, each keyed request sent to
 * the shard of its slot, MOVED and ASK followed, the failover quarantine,
 * and the requests made before the first map parked until it comes (so a
 * new handle's first rounds do not go through a redirect that a later
 * release could overtake). */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "dial.h"
#include "route.h"

/* ---------------------------------------------------------------- parking */

/* Parks s for node i until its first slot map (owner NULL: unwaited).
 * Returns 0, or -1 when out of memory or too many wait. */
static int park(rl_nodes_t *ns, rl_round_t *owner, size_t i, const rl_send_t *s, int32_t hslot, uint64_t now) {
    rl_cluster_t *cl = ns->cl[i];
    if (cl->nparked >= ns->cfg.max_inflight) return -1;
    rl_parked_t *p = malloc(sizeof *p + s->len);
    if (!p) return -1;
    uint64_t budget = (uint64_t)(ns->cfg.connect_timeout_ms + ns->cfg.op_timeout_ms) * 1000u;
    *p = (rl_parked_t){.round = owner,
                       .script = s->script,
                       .sent_us = now,
                       .deadline_us = now + budget,
                       .hslot = hslot,
                       .grants = s->grants,
                       .send_all = s->send_all,
                       .skip = s->skip,
                       .len = s->len};
    memcpy(p->cmd, s->cmd, s->len);
    if (cl->parked_tail)
        cl->parked_tail->next = p;
    else
        cl->parked = p;
    cl->parked_tail = p;
    cl->nparked++;
    if (owner) {
        owner->pn[i].conn = (uint16_t)ns->nodes[i].conn.k; /* (its report's address until it is sent) */
        owner->pn[i].u.slot = RL_NO_SLOT;
    }
    return 0;
}

/* Takes node i's parked requests off its list, oldest first. */
static rl_parked_t *unpark_all(rl_cluster_t *cl) {
    rl_parked_t *p = cl->parked;
    cl->parked = cl->parked_tail = NULL;
    cl->nparked = 0;
    return p;
}

/* Sends node i's parked requests now that its map is known. */
static void send_parked(rl_nodes_t *ns, size_t i, uint64_t now) {
    rl_parked_t *p = unpark_all(ns->cl[i]);
    while (p) {
        rl_parked_t *next = p->next;
        rl_shard_t *sh = rl_cluster_owner(ns->cl[i], p->hslot);
        rl_send_t s = {.cmd = p->cmd,
                       .len = p->len,
                       .script = p->script,
                       .sent_us = p->sent_us,
                       .deadline_us = p->deadline_us,
                       .grants = p->grants,
                       .send_all = p->send_all,
                       .skip = p->skip};
        ns->ops->place(ns, sh ? sh->c : &ns->nodes[i].conn, p->round, i, &s,
                       now); /* (an unserved slot: a redirect says) */
        free(p);
        p = next;
    }
}

/* Fails node i's parked requests (the map cannot be had: why). */
static void fail_parked(rl_nodes_t *ns, size_t i, redlock_vote_t v, int err, const char *why, uint64_t now) {
    rl_parked_t *p = unpark_all(ns->cl[i]);
    while (p) {
        rl_parked_t *next = p->next;
        if (p->round) ns->ops->vote(ns, p->round, i, v, err, -1, why, now);
        free(p);
        p = next;
    }
}

void rl_route_detach(rl_nodes_t *ns, rl_round_t *r) {
    for (size_t i = 0; i < ns->n; i++)
        for (rl_parked_t *p = ns->cl[i] ? ns->cl[i]->parked : NULL; p; p = p->next)
            if (p->round == r) p->round = NULL;
}

void rl_route_free(rl_nodes_t *ns, size_t i) {
    rl_parked_t *p = unpark_all(ns->cl[i]);
    while (p) {
        rl_parked_t *next = p->next;
        free(p);
        p = next;
    }
}

/* Parked requests of node i past their deadline fail as timed out (and
 * are dropped); a round whose grace passed is finished. */
static void expire_parked(rl_nodes_t *ns, size_t i, uint64_t now) {
    rl_cluster_t *cl = ns->cl[i];
    char why[96];
    for (rl_parked_t *p = cl->parked; p; p = p->next)
        if (p->round && p->round->grace_us && now >= p->round->grace_us) ns->ops->finish(ns, p->round, now);
    if (!cl->parked || now < cl->parked->deadline_us) return; /* (deadlines grow along the list) */
    snprintf(why, sizeof why, "no slot map from the cluster within %u ms",
             ns->cfg.connect_timeout_ms + ns->cfg.op_timeout_ms);
    rl_parked_t **at = &cl->parked, *last = NULL;
    while (*at) {
        rl_parked_t *p = *at;
        if (now < p->deadline_us) {
            last = p;
            at = &p->next;
            continue;
        }
        *at = p->next;
        cl->nparked--;
        if (p->round) ns->ops->vote(ns, p->round, i, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, why, now);
        free(p);
    }
    cl->parked_tail = last;
}

void rl_route_submit(rl_nodes_t *ns, rl_round_t *r, rl_round_t *owner, size_t i, rl_send_t *s, uint64_t now) {
    rl_cluster_t *cl = ns->cl[i];
    if (r->hslot == RL_SLOT_MIXED) {
        if (owner)
            ns->ops->vote(ns, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_INVALID, -1,
                          "the keys fall in different slots of this cluster (give them one hash tag)", now);
        return;
    }
    if (r->ccmd && !r->node_cmd) s->cmd = r->ccmd, s->len = r->ccmd_len; /* (node_cmd made s already) */
    rl_shard_t *sh = rl_cluster_owner(cl, r->hslot);
    if (!sh && !cl->loaded_us && cl->error[0]) { /* no map, and the last load said why: a plain server, say */
        if (owner) ns->ops->vote(ns, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, -1, cl->error, now);
        rl_route_map_reload(ns, i, now); /* (it may have been fixed since) */
        return;
    }
    if (!sh && !cl->loaded_us && r->hslot >= 0) { /* the first map is on its way */
        if (park(ns, owner, i, s, r->hslot, now) == 0) {
            rl_route_map_reload(ns, i, now);
            return;
        }
        if (owner)
            ns->ops->vote(ns, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1,
                          "too many requests wait for the slot map", now);
        return;
    }
    ns->ops->place(ns, sh ? sh->c : &ns->nodes[i].conn, owner, i, s, now);
}

/* ----------------------------------------------------------- slot maps */

/* The connection of cluster node i to the primary at host:port, made
 * (down, opened on first use) when it is new. NULL when out of memory. */
static rl_shard_t *member_of(rl_nodes_t *ns, size_t i, const char *host, int port) {
    rl_cluster_t *cl = ns->cl[i];
    rl_shard_t *sh = rl_cluster_find(cl, host, port);
    if (sh) return sh;
    rl_uri_t uri;
    if (rl_uri_member(&uri, &ns->nodes[i].conn.uri, host, port) < 0) return NULL;
    rl_conn_t *c = ns->ops->add(ns, i, &uri);
    return c ? rl_cluster_add(cl, c) : NULL;
}

/* rl_cluster_apply's member callback. */
typedef struct map_ctx {
    rl_nodes_t *ns;
    size_t i;
    uint64_t now;
} map_ctx_t;

static rl_shard_t *map_member(void *arg, const char *host, int port) {
    map_ctx_t *m = arg;
    return member_of(m->ns, m->i, host, port);
}

/* Slots of cluster node i moved from shard `from` to shard `to` (a MOVED,
 * an ASK, a new map): while `from` is quarantined (restarted, promoted,
 * its clock jumped), the keys it lost went with the slots, so `to` shares
 * its quarantine. */
static void inherit(rl_nodes_t *ns, size_t i, const rl_shard_t *from, rl_shard_t *to, uint64_t now) {
    const rl_node_t *a = rl_node_of_const(from->c);
    rl_node_t *b = rl_node_of(to->c);
    uint64_t until = a->quarantine_until_us;
    if (a->promoted_until_us > until) until = a->promoted_until_us;
    if (a->jump_until_us > until) until = a->jump_until_us;
    if (until <= now || until <= b->inherited_until_us) return;
    b->inherited_until_us = until;
    rl_logf(&ns->cfg.log, REDLOCK_LOG_WARN,
            "node %s: shard %s:%d took slots over from %s:%d, which is quarantined: no acquire vote for %llu ms",
            ns->nodes[i].conn.uri.display, to->c->uri.host, to->c->uri.port, from->c->uri.host, from->c->uri.port,
            (unsigned long long)((until - now) / 1000));
}

/* rl_cluster_apply's moved callback. A replica that took over a shard may
 * lack the primary's last writes, so it votes in no acquire for the
 * restart quarantine (doc/design.md, "Cluster routing"). */
static void map_moved(void *arg, rl_shard_t *from, rl_shard_t *sh, int failover) {
    map_ctx_t *m = arg;
    inherit(m->ns, m->i, from, sh, m->now);
    if (!failover) return;
    rl_conn_t *c = sh->c;
    rl_node_t *nd = rl_node_of(c);
    nd->promoted_us = m->now;
    nd->promoted_until_us = m->now + (uint64_t)m->ns->cfg.quarantine_ms * 1000u;
    rl_logf(&m->ns->cfg.log, REDLOCK_LOG_WARN,
            "node %s: shard primary %s:%d is a promoted replica: "
            "no acquire vote for %u ms",
            m->ns->nodes[m->i].conn.uri.display, c->uri.host, c->uri.port, m->ns->cfg.quarantine_ms);
}

/* Asks cluster node i's own connection for the slot map, unless a load
 * is in flight (then it is marked stale: loaded again after). */
void rl_route_map_reload(rl_nodes_t *ns, size_t i, uint64_t now) {
    static const char cmd[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    rl_cluster_t *cl = ns->cl[i];
    rl_conn_t *c = &ns->nodes[i].conn;
    if (cl->loading || (c->state == RL_CONN_DOWN && (ns->nodes[i].suspect || now < c->retry_at_us))) {
        cl->stale = 1;
        return;
    }
    if (c->state == RL_CONN_DOWN) { /* opening it asks for the map */
        int rc = ns->ops->open(ns, c, now);
        if (rc) ns->ops->down(ns, c, rc, c->last_detail, now);
        return;
    }
    if (rl_conn_send(c, cmd, sizeof cmd - 1) < 0 || !rl_conn_push(c, RL_REQ_SLOTS, NULL, now, UINT64_MAX)) {
        ns->ops->down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now);
        return;
    }
    cl->loading = 1;
    cl->stale = 0;
}

/* The slot map's reply (the request already popped) on node i's own
 * connection c. */
void rl_route_map_reply(rl_nodes_t *ns, rl_conn_t *c, const void *reply, uint64_t now) {
    const redisReply *rep = reply;
    size_t i = (size_t)c->idx;
    rl_cluster_t *cl = ns->cl[i];
    map_ctx_t m = {ns, i, now};
    char why[RL_DETAIL_LEN];
    cl->loading = 0;
    if (rl_cluster_apply(cl, rep, c->uri.host, map_member, map_moved, &m, why, sizeof why) < 0) {
        if (rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "cluster support disabled"))
            snprintf(why, sizeof why,
                     "%s:%d is not a Redis Cluster member (cluster support disabled): "
                     "name a plain server redis://, not redis+cluster://",
                     c->uri.host, c->uri.port);
        snprintf(cl->error, sizeof cl->error, "%s", why);
        rl_logf(&ns->cfg.log, REDLOCK_LOG_WARN, "node %s: %s", c->uri.display, why);
        if (!cl->loaded_us) fail_parked(ns, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, cl->error, now);
        return;
    }
    cl->error[0] = '\0';
    cl->loaded_us = now;
    send_parked(ns, i, now);
    if (cl->stale) rl_route_map_reload(ns, i, now);
}

/* The head request of cluster node c's connection was redirected (err:
 * MOVED or ASK): it goes again, with its deadline and owner, to the
 * member named; MOVED also corrects the map and reloads it. A request
 * redirected too often, or with nothing kept to resend, fails its vote. */
void rl_route_redirect(rl_nodes_t *ns, rl_conn_t *c, const char *err, uint64_t now) {
    size_t i = (size_t)c->idx;
    rl_req_t old = *rl_conn_head(c);
    unsigned slot = 0;
    int port = 0;
    char host[256], why[RL_DETAIL_LEN];
    int kind = rl_cluster_redirect(err, &slot, host, sizeof host, &port);
    rl_shard_t *to = kind ? member_of(ns, i, host, port) : NULL;
    char *cmd = to && old.whole ? malloc(old.fb_len) : NULL;
    if (cmd) memcpy(cmd, c->fb.data + c->fb.off, old.fb_len);
    rl_conn_pop(c);
    if (kind == 1) ns->cl[i]->moved++;
    if (kind == 2) ns->cl[i]->asked++;
    rl_shard_t *from = c->k >= (int)ns->n ? rl_cluster_find(ns->cl[i], c->uri.host, c->uri.port) : NULL;
    if (from && to && from != to) inherit(ns, i, from, to, now);
    if (kind == 1 && to) ns->cl[i]->owner[slot] = (uint16_t)(to - ns->cl[i]->shard + 1);
    if (kind != 2) rl_route_map_reload(ns, i, now);
    if (!cmd || old.redirects >= RL_MAX_REDIRECTS) {
        snprintf(why, sizeof why, "%s (%.80s)",
                 old.redirects >= RL_MAX_REDIRECTS ? "redirected too often"
                 : to                              ? "out of memory"
                                                   : "bad redirect",
                 err);
        if (old.round) ns->ops->vote(ns, old.round, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, -1, why, now);
        free(cmd);
        return;
    }
    rl_send_t s = {.cmd = cmd,
                   .len = old.fb_len,
                   .script = old.script,
                   .sent_us = old.sent_us,
                   .deadline_us = old.deadline_us,
                   .redirects = (uint8_t)(old.redirects + 1),
                   .asking = kind == 2,
                   .grants = old.round ? (uint8_t)old.round->grants : 0,
                   .send_all = old.round ? (uint8_t)old.round->send_all : 1};
    ns->ops->place(ns, to->c, old.round, i, &s, now);
    free(cmd);
}

void rl_route_note_redirect(rl_nodes_t *ns, rl_conn_t *c, const char *err, uint64_t now) {
    size_t i = (size_t)c->idx;
    unsigned slot;
    int port;
    char host[256];
    if (rl_cluster_redirect(err, &slot, host, sizeof host, &port) != 1) return;
    rl_shard_t *to = member_of(ns, i, host, port);
    rl_shard_t *from = c->k >= (int)ns->n ? rl_cluster_find(ns->cl[i], c->uri.host, c->uri.port) : NULL;
    if (from && to && from != to) inherit(ns, i, from, to, now);
    ns->cl[i]->moved++;
    if (to) ns->cl[i]->owner[slot] = (uint16_t)(to - ns->cl[i]->shard + 1);
    rl_route_map_reload(ns, i, now);
}

/* Points cluster node i's own connection (down) at the next member it
 * knows: the URI's host, its seeds, then the shards found, in turn. */
static void next_seed(rl_nodes_t *ns, size_t i) {
    rl_cluster_t *cl = ns->cl[i];
    rl_conn_t *c = &ns->nodes[i].conn;
    size_t n = 1 + c->uri.nseeds + cl->nshard;
    if (n < 2 || c->lookup) return;
    cl->seed = (cl->seed + 1) % n;
    const char *host = cl->first_host;
    int port = cl->first_port;
    if (cl->seed >= 1 && cl->seed <= c->uri.nseeds) {
        host = c->uri.seeds[cl->seed - 1].host;
        port = c->uri.seeds[cl->seed - 1].port;
    } else if (cl->seed > c->uri.nseeds) {
        const rl_conn_t *sc = cl->shard[cl->seed - 1 - c->uri.nseeds].c;
        host = sc->uri.host;
        port = sc->uri.port;
    }
    char *copy = strdup(host);
    if (!copy) return;
    free(c->uri.host);
    c->uri.host = copy;
    c->uri.port = port;
    rl_dial_free(c);
    c->addrs.n = 0;
    c->stale = 0;
    c->lookups = 0;
    rl_dial_init(c);
}

/* A cluster node's connection c failed. Its own connection's map load
 * went with it; the next connect tries another member. A shard's
 * failure may be a failover: the map is loaded again. */
void rl_route_down(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    size_t i = (size_t)c->idx;
    ns->cl[i]->downs++;
    if (c->k >= (int)ns->n) {
        rl_route_map_reload(ns, i, now);
        return;
    }
    ns->cl[i]->loading = 0;
    if (!ns->cl[i]->loaded_us) /* no member to learn the map from now: what waited for it fails */
        fail_parked(ns, i, c->last_err == REDLOCK_ERR_TIMEOUT ? REDLOCK_VOTE_TIMEOUT : REDLOCK_VOTE_ERROR, c->last_err,
                    c->last_detail, now);
    next_seed(ns, i);
}


void rl_route_expire(rl_nodes_t *ns, uint64_t now) {
    for (size_t i = 0; i < ns->n; i++) {
        rl_cluster_t *cl = ns->cl[i];
        if (!cl) continue;
        if (cl->parked) expire_parked(ns, i, now);
        /* a map wanted while no member could be asked: once the backoff passed */
        if (cl->stale && !cl->loading && now >= ns->nodes[i].conn.retry_at_us) rl_route_map_reload(ns, i, now);
    }
}

uint64_t rl_route_next_us(const rl_nodes_t *ns) {
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < ns->n; i++) {
        const rl_cluster_t *cl = ns->cl[i];
        if (!cl) continue;
        if (cl->stale && !cl->loading && ns->nodes[i].conn.retry_at_us < next) next = ns->nodes[i].conn.retry_at_us;
        for (const rl_parked_t *p = cl->parked; p; p = p->next) {
            if (p->deadline_us < next) next = p->deadline_us;
            if (p->round && p->round->grace_us && p->round->grace_us < next) next = p->round->grace_us;
        }
    }
    return next;
}

int rl_route_init(rl_nodes_t *ns, size_t i) {
    rl_conn_t *c = &ns->nodes[i].conn;
    if (!c->uri.cluster) return 0;
    if (!ns->cl && !(ns->cl = calloc(ns->n ? ns->n : 1, sizeof *ns->cl))) return -1;
    rl_cluster_t *cl = calloc(1, sizeof *cl);
    if (!cl || !(cl->first_host = strdup(c->uri.host))) {
        free(cl);
        return -1;
    }
    cl->first_port = c->uri.port;
    ns->cl[i] = cl;
    c->whole_cmds = 1;
    return 0;
}
