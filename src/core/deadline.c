/* deadline.c -- the node set's deadlines (see rl_nodes_expire in
 * nodeset.h): requests and probes owed past their deadline, a node that
 * becomes suspect and is probed, connects and lookups that take too long,
 * nodes silent while owing replies, and the close of a connection that
 * timed out, held while an attempt may still be queueing its clean-up.
 * It acts on votes and connections through ns->ops (nodeset.c's steps). */
#include <stdio.h>

#include "dial.h"
#include "health.h"
#include "suspect.h"
#include "nodeset.h"
#include "replicate.h"
#include "route.h"

/* Fails, as suspect, every round still waiting on c (their requests
 * stay queued without an owner, so late replies are dropped). */
static void drop_waiting(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    char why[RL_DETAIL_LEN + 64];
    rl_suspect_why(c, now, why, sizeof why);
    for (uint32_t k = 0; k < c->qlen; k++) {
        rl_req_t *q = rl_conn_at(c, k);
        rl_round_t *r = q->round;
        q->round = NULL;
        if (r) ns->ops->vote(ns, r, (size_t)c->idx, REDLOCK_VOTE_DOWN, REDLOCK_ERR_SUSPECT, -1, why, now);
    }
    rl_repl_fail(ns, c, REDLOCK_VOTE_DOWN, REDLOCK_ERR_SUSPECT, why, now);
}

/* The instant before which a timeout may not close c: an attempt whose
 * request c still owes may not have queued its clean-up yet (it does so
 * once its round is decided, at the request's deadline at the latest). A
 * close in between would leave its write on a node that is only paused,
 * applied when it resumes with no clean-up behind it, a key nobody holds
 * until its TTL. So the close waits one more op timeout past the newest
 * such request's deadline. 0 when c owes no request of a round. */
static uint64_t close_hold_us(const rl_nodes_t *ns, rl_conn_t *c) {
    uint64_t last = 0;
    for (uint32_t k = 0; k < c->qlen; k++) {
        const rl_req_t *q = rl_conn_at(c, k);
        if (q->kind == RL_REQ_USER && q->sent_us > last) last = q->sent_us;
    }
    return last ? last + (uint64_t)(2u * ns->cfg.op_timeout_ms + ns->cfg.connect_timeout_ms) * 1000u : 0;
}

/* Closes c after a timeout (why), a suspect c with its next probe after a
 * backoff; or, while close_hold_us says an attempt may still be queueing
 * a clean-up on it, later (rl_nodes_expire closes it then, unless it
 * answered meanwhile). Rounds get nothing new of c meanwhile. */
static void timeout_close(rl_nodes_t *ns, rl_conn_t *c, const char *why, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    uint64_t hold = close_hold_us(ns, c);
    if (why != c->last_detail) snprintf(c->last_detail, sizeof c->last_detail, "%s", why);
    if (now < hold) {
        nd->close_at_us = hold;
        return;
    }
    int suspect = nd->suspect;
    ns->ops->down(ns, c, REDLOCK_ERR_TIMEOUT, c->last_detail, now);
    nd->suspect = suspect; /* (a close keeps it; the next probe opens anew) */
    if (suspect) rl_suspect_probe_later(&ns->cfg, c, now);
}

/* c owed a reply past its deadline (why; probe: it was a probe's). The
 * first time, c becomes suspect: the rounds waiting on it stop waiting,
 * it gets no new requests but releases, and a PING on its connection
 * probes it. A probe that times out closes the connection (what c owed
 * goes with it); the next probe, after a backoff, opens a fresh one. A
 * subscriber set has no suspects. */
static void node_late(rl_nodes_t *ns, rl_conn_t *c, const char *why, int probe, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    if (ns->cfg.subscriber) return;
    if (nd->suspect && !probe) return; /* its probe decides */
    if (nd->suspect) {
        timeout_close(ns, c, why, now);
        return;
    }
    rl_suspect_mark(&ns->cfg, c, why, now);
    drop_waiting(ns, c, now);
    int rc = rl_suspect_probe(&ns->cfg, c, now);
    if (rc) ns->ops->down(ns, c, rc, c->last_detail, now);
}

void rl_nodes_probe_due(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    int rc = rl_suspect_probe(&ns->cfg, c, now);
    if (rc) ns->ops->down(ns, c, rc, c->last_detail, now);
}

/* The rounds whose yes on c waits for a WAIT's answer (replicate.c): one
 * whose grace ended is finished without that vote, like a round whose
 * request is still out (finishing takes it off c's list: the scan starts
 * over). Returns due lowered to the earliest grace left. */
static uint64_t waiting_grace(rl_nodes_t *ns, rl_conn_t *c, uint64_t due, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    for (uint32_t k = 0; k < nd->nwaiting;) {
        rl_round_t *r = nd->waiting[k].round;
        if (r->grace_us && now >= r->grace_us) {
            ns->ops->finish(ns, r, now);
            k = 0;
            continue;
        }
        if (r->grace_us && r->grace_us < due) due = r->grace_us;
        k++;
    }
    return due;
}

/* Scans c's queue once its due time has come: a round whose grace ended
 * is finished without this node's vote; a request or probe past its
 * deadline makes the node late (node_late; a round's request votes
 * TIMEOUT first). Sets c->due_us to the earliest deadline or grace left.
 * Returns 1 when c went down. */
static int scan_late(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    uint64_t due = UINT64_MAX;
    char why[64] = "";
    int probe = 0;
    for (uint32_t k = 0; k < c->qlen; k++) {
        rl_req_t *q = rl_conn_at(c, k);
        rl_round_t *r = q->round;
        if ((q->kind != RL_REQ_USER && q->kind != RL_REQ_PROBE && q->kind != RL_REQ_WAIT) || (!r && ns->cfg.subscriber))
            continue;
        if (r && r->grace_us && now >= r->grace_us) { /* the outcome is known: stop waiting */
            ns->ops->finish(ns, r, now);
            r = NULL;
        }
        if (r && r->grace_us && r->grace_us < due) due = r->grace_us;
        if (now < q->deadline_us) {
            if (q->deadline_us < due) due = q->deadline_us;
            continue;
        }
        if (!why[0])
            snprintf(why, sizeof why, "%s within %u ms", q->kind == RL_REQ_PROBE ? "no PING reply" : "no reply",
                     (unsigned)((q->deadline_us - q->sent_us) / 1000u));
        probe |= q->kind == RL_REQ_PROBE;
        q->deadline_us = UINT64_MAX; /* judged once */
        q->round = NULL;
        if (r) ns->ops->vote(ns, r, (size_t)c->idx, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, why, now);
    }
    due = waiting_grace(ns, c, due, now);
    c->due_us = due;
    if (!why[0]) return 0;
    node_late(ns, c, why, probe, now);
    return c->state == RL_CONN_DOWN;
}

/* Judges deadlines: late requests (see scan_late), connects and lookups
 * that took too long, nodes silent for node_down_ms while owing replies,
 * and the probes of suspect nodes that are due. A node's queue is scanned
 * only once its due_us (a lower bound of its requests' deadlines and
 * their rounds' graces) has passed, so the scans are about one per
 * op_timeout_ms per node instead of one per loop turn. Deadlines are not
 * monotonic along a queue (connect budgets, EVAL fallbacks re-queued with
 * their original deadline), which a lower bound does not need. */
void rl_nodes_expire(rl_nodes_t *ns, uint64_t now) {
    if (ns->cl) rl_route_expire(ns, now);
    for (size_t k = 0; k < ns->nall; k++) {
        rl_conn_t *c = ns->all[k];
        rl_node_t *nd = rl_node_of(c);
        if (c->state == RL_CONN_DOWN) {
            if (nd->suspect && now >= nd->probe_at_us) rl_nodes_probe_due(ns, c, now);
            continue;
        }
        if (c->state == RL_CONN_RESOLVING && now >= c->connect_deadline_us) {
            char why[RL_DETAIL_LEN];
            snprintf(why, sizeof why, "lookup of %s timed out (no answer within %u ms)", c->uri.host,
                     ns->cfg.connect_timeout_ms);
            ns->ops->down(ns, c, REDLOCK_ERR_TIMEOUT, why, now);
            continue;
        }
        if (c->state == RL_CONN_CONNECTING && now >= c->addr_deadline_us) {
            int rc = rl_dial_next(
                c, now,
                c->ssl ? "TLS handshake timed out (no TLS answer: a plain-text port? use redis://)" : "timed out", 1);
            if (rc) ns->ops->down(ns, c, rc, c->last_detail, now);
            continue;
        }
        if (now >= c->due_us) {
            if (c->state == RL_CONN_READY && c->qlen) ns->ops->read(ns, c, now); /* what a late driver left unread */
            if (c->state == RL_CONN_DOWN || scan_late(ns, c, now)) continue;
        }
        if (nd->close_at_us) { /* a timeout's close waited for clean-ups */
            if (now >= nd->close_at_us) timeout_close(ns, c, c->last_detail, now);
            continue;
        }
        rl_req_t *h = rl_conn_head(c);
        uint64_t quiet_since = h ? (h->sent_us > c->last_rx_us ? h->sent_us : c->last_rx_us) : now;
        if (h && now - quiet_since >= (uint64_t)ns->cfg.node_down_ms * 1000u) {
            char why[64];
            snprintf(why, sizeof why, "silent for %u ms with %u replies owed", ns->cfg.node_down_ms, c->qlen);
            timeout_close(ns, c, why, now);
        }
    }
}
