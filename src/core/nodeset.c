/* nodeset.c -- the node set: rounds over the nodes' connections (see
 * nodeset.h): sending a round's command to every node, matching replies to
 * requests in order, the NOSCRIPT fallback, votes, and the readiness a
 * driver's loop watches for. What is particular to a kind of node lives
 * beside it: health.c (any node's health: scripts, quarantines), suspect.c
 * (a silent node's probes), route.c (a Redis Cluster node's routing),
 * group.c (a Sentinel group's master); deadline.c judges deadlines and
 * replicate.c counts votes after replication, both through ns->ops. No
 * function here blocks or locks. */
#define _POSIX_C_SOURCE 200809L
#include "nodeset.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "dial.h"
#include "group.h"
#include "health.h"
#include "record.h"
#include "suspect.h"
#include "replicate.h"
#include "route.h"
#include "resp.h"
#include "scripts.h"
#include "failover.h"
#include "stats.h"

/* Node i's slot map when it is a Redis Cluster, else NULL. */
static rl_cluster_t *cluster_of(const rl_nodes_t *ns, size_t i) {
    return ns->cl ? ns->cl[i] : NULL;
}

/* The connection node i's request of r went to. */
static rl_conn_t *req_conn(const rl_nodes_t *ns, const rl_round_t *r, size_t i) {
    return ns->all[r->pn[i].conn];
}

/* ---------------------------------------------------------------- rounds */

/* Marks r done, detaches its requests still owed a reply (their replies
 * will be dropped). */
static void detach_round(rl_nodes_t *ns, rl_round_t *r) {
    r->done = 1;
    if (ns->cl) rl_route_detach(ns, r); /* (parked until a cluster's first slot map) */
    for (size_t i = 0; i < r->n; i++) {
        if (r->pn[i].vote != REDLOCK_VOTE_NONE || r->pn[i].u.slot == RL_NO_SLOT) continue;
        rl_conn_t *c = req_conn(ns, r, i);
        if (r->pn[i].u.slot == RL_SLOT_WAITING) { /* off the list of yes votes waiting for a WAIT */
            rl_repl_forget(c, r);
            continue;
        }
        rl_req_t *q = rl_conn_in_slot(c, r->pn[i].u.slot);
        if (q->round == r) q->round = NULL;
    }
}

/* Finishes the decided round r and tells its driver. */
static void finish_round(rl_nodes_t *ns, rl_round_t *r) {
    detach_round(ns, r);
    if (ns->round_done) ns->round_done(ns->done_arg, r);
}

void rl_nodes_abandon(rl_nodes_t *ns, rl_round_t *r) {
    if (!r->done) detach_round(ns, r);
}

/* Lowers the due time of every node r still waits for to r's grace. */
static void grace_dues(rl_nodes_t *ns, const rl_round_t *r) {
    for (size_t i = 0; i < r->n; i++) {
        if (r->pn[i].vote != REDLOCK_VOTE_NONE || r->pn[i].u.slot == RL_NO_SLOT) continue;
        rl_conn_t *c = req_conn(ns, r, i);
        if (c->due_us > r->grace_us) c->due_us = r->grace_us;
    }
}

/* Once r's outcome is known while its stop rule still waits for nodes (a
 * reason to settle, a holder's TTL to hear), starts its grace (see
 * rl_round_grace_us). A node not heard by then is not waited for
 * (doc/design.md, "A silent minority"): its vote stays unheard, a failed vote. */
static void start_grace(rl_nodes_t *ns, rl_round_t *r, uint64_t now) {
    if (r->done || r->grace_us || !rl_round_settled(r)) return;
    r->grace_us = now + rl_round_grace_us(r, ns->cfg.grace_rtts, (uint64_t)ns->cfg.op_timeout_ms * 1000u);
    grace_dues(ns, r);
}

/* Records a vote in r alone (not in the node's statistics) and finishes
 * the round if that decided it. */
static void tally(rl_nodes_t *ns, rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt, const char *detail,
                  uint64_t now) {
    if (rl_round_vote(r, i, v, err, rtt, detail))
        finish_round(ns, r);
    else
        start_grace(ns, r, now);
}

/* Records a vote and finishes the round if that decided it. A cluster
 * node's detail names the shard it is about. */
static void vote(rl_nodes_t *ns, rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt, const char *detail,
                 uint64_t now) {
    char shard[RL_DETAIL_LEN];
    const rl_conn_t *c = req_conn(ns, r, i);
    if (r->pn[i].vote == REDLOCK_VOTE_NONE) {
        rl_stats_vote(ns->cfg.stats, i, v, err, rtt);
        if (r->nodes) /* the address this node's answer came over */
            memcpy(r->nodes[i].address, c->addr, sizeof r->nodes[i].address);
    }
    if (cluster_of(ns, i) && detail && detail[0] && r->nodes) {
        snprintf(shard, sizeof shard, "%s %.64s:%d: %.160s", c->k < (int)ns->n ? "member" : "shard", c->uri.host,
                 c->uri.port, detail);
        detail = shard;
    }
    tally(ns, r, i, v, err, rtt, detail, now);
}

/* Fails every waiting request of c with err/detail and closes c until
 * its reconnect backoff passes. */
static void node_down(rl_nodes_t *ns, rl_conn_t *c, int err, const char *detail, uint64_t now) {
    redlock_vote_t v = err == REDLOCK_ERR_TIMEOUT ? REDLOCK_VOTE_TIMEOUT : REDLOCK_VOTE_ERROR;
    c->last_err = err;
    if (detail != c->last_detail) snprintf(c->last_detail, sizeof c->last_detail, "%s", detail);
    for (uint32_t k = 0; k < c->qlen; k++) {
        rl_req_t *q = rl_conn_at(c, k);
        rl_round_t *r = q->round;
        q->round = NULL;
        if (r) vote(ns, r, (size_t)c->idx, v, err, -1, c->last_detail, now);
    }
    rl_repl_fail(ns, c, v, err, c->last_detail, now);
    rl_node_close(&ns->cfg, c, err, c->last_detail, now);
    if (cluster_of(ns, c->idx)) rl_route_down(ns, c, now);
}

/* Takes c down for want of memory (what it owed fails with it). */
static void out_of_memory(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    node_down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now);
}

/* Splits an encoded "EVALSHA <sha1> ..." command: sets *head to the length
 * of its "*<argc>\r\n" header and *args to the offset of the arguments
 * after the sha1. Returns 1, or 0 when cmd is not shaped so. */
static int evalsha_split(const char *cmd, size_t len, size_t *head, size_t *args) {
    static const char mid[] = "$7\r\nEVALSHA\r\n$40\r\n";
    const char *nl = memchr(cmd, '\n', len < 16 ? len : 16);
    if (!nl) return 0;
    *head = (size_t)(nl - cmd) + 1;
    *args = *head + (sizeof mid - 1) + 40 + 2;
    return *args <= len && !memcmp(cmd + *head, mid, sizeof mid - 1);
}

/* Opens c (rl_node_open); a cluster node's own connection then asks for
 * the slot map first thing. Returns 0 or the error it failed with. */
static int open_conn(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    int rc = rl_node_open(&ns->cfg, c, now);
    if (rc == 0 && c->k < (int)ns->n && cluster_of(ns, c->idx)) {
        cluster_of(ns, c->idx)->loading = 0;
        rl_route_map_reload(ns, (size_t)c->idx, now);
    }
    return rc;
}

/* Keeps what a NOSCRIPT fallback or a redirect rebuilds q's command from
 * in c->fb: the whole command on a cluster node's connection, else an
 * EVALSHA's header and arguments. Returns 0, or -1 when out of memory. */
static int keep_cmd(rl_conn_t *c, rl_req_t *q, const rl_send_t *s) {
    size_t head, args;
    if (c->whole_cmds) {
        q->whole = 1;
        q->fb_len = (uint32_t)s->len;
        return rl_buf_append(&c->fb, s->cmd, s->len);
    }
    if (!s->script || !evalsha_split(s->cmd, s->len, &head, &args)) return 0;
    int rc = rl_buf_append(&c->fb, s->cmd, head);
    if (rc == 0) rc = rl_buf_append(&c->fb, s->cmd + args, s->len - args);
    if (rc == 0) q->fb_len = (uint32_t)(head + s->len - args);
    return rc;
}

static void node_readable(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);

/* A suspect c that a round must ask (s->ask_suspect: the others cannot
 * make its quorum) and may: its probe is due now, so a closed c opens
 * afresh with a PING ahead of the request. A c whose close for a timeout
 * is pending is read first: the driver may not have read yet what it
 * answered since it resumed, and an answer ends the suspicion and the
 * close. Returns 1 when the request is to be placed and waited for like
 * any other (c not suspect any more included); 0 when c is skipped still
 * (the close still pending: what it owes is not added to). */
static int ask_suspect(rl_nodes_t *ns, rl_conn_t *c, const rl_send_t *s, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    if (!s->ask_suspect) return 0;
    if (nd->close_at_us && c->state == RL_CONN_READY) node_readable(ns, c, now);
    if (!nd->suspect) return 1;
    if (nd->close_at_us) return 0;
    if (c->state == RL_CONN_DOWN) {
        nd->probe_at_us = c->retry_at_us = now;
        rl_nodes_probe_due(ns, c, now); /* (one that refuses is no longer suspect: it is down the plain way) */
    }
    return 1;
}

/* c's ring is full: r's vote (when there is one) and c fail, saying so. */
static void ring_full(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, uint64_t now) {
    char why[96];
    snprintf(why, sizeof why, "too many requests in flight (max_inflight %u)", ns->cfg.max_inflight);
    if (r) vote(ns, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_IO, -1, why, now);
    node_down(ns, c, REDLOCK_ERR_IO, why, now);
}

/* The suspect step of place: a suspect c's probe goes when due; one the
 * round need not ask votes DOWN in r. Returns 1 when the request goes
 * (*r set to NULL when it goes unwaited: a release on a suspect's open
 * connection), 0 when it does not. */
static int pass_suspect(rl_nodes_t *ns, rl_conn_t *c, rl_round_t **r, size_t i, const rl_send_t *s, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    if (nd->suspect && c->state == RL_CONN_DOWN && now >= nd->probe_at_us) rl_nodes_probe_due(ns, c, now);
    if (!nd->suspect || ask_suspect(ns, c, s, now)) return 1;
    char why[RL_DETAIL_LEN + 64]; /* silent lately: not waited for until it answers */
    rl_suspect_why(c, now, why, sizeof why);
    if (*r) vote(ns, *r, i, REDLOCK_VOTE_DOWN, REDLOCK_ERR_SUSPECT, -1, why, now);
    /* a release still goes out on its open connection, behind what it
     * owes (an attempt's SET it may yet apply), unwaited */
    if (!s->send_all || c->state == RL_CONN_DOWN) return 0;
    *r = NULL;
    return 1;
}

/* The open step of place, for a c that is down. Returns 1 when c can
 * take requests; else 0 after r's vote says why (an open that failed
 * after its backoff had passed also takes c down again, backing off). */
static int pass_open(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, uint64_t now) {
    int was_waiting = now < c->retry_at_us;
    int rc = open_conn(ns, c, now);
    if (rc == 0) return 1;
    if (!was_waiting) node_down(ns, c, rc, c->last_detail, now);
    char why[RL_DETAIL_LEN + 8];
    snprintf(why, sizeof why, "%s%s", was_waiting ? "down: " : "", c->last_detail);
    if (r) vote(ns, r, i, was_waiting ? REDLOCK_VOTE_DOWN : REDLOCK_VOTE_ERROR, rc, -1, why, now);
    return 0;
}

/* The grant step of place: a quarantined c votes DOWN in r (its grant
 * would not count); else a clock sample goes just ahead of the grant, so
 * a jump is judged before the grant counts. Returns 1 when the grant goes. */
static int pass_grant(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, uint64_t now) {
    char why[128];
    if (rl_node_quarantined(c, now, why, sizeof why)) {
        vote(ns, r, i, REDLOCK_VOTE_DOWN, REDLOCK_ERR_QUARANTINED, -1, why, now);
        return 0;
    }
    if (rl_node_sample_clock(&ns->cfg, c, now) == 0) return 1;
    out_of_memory(ns, c, now);
    return 0;
}

/* The membership step of place, for a write that grants or keeps a lock:
 * on a node whose record is checked, the guarded form of s (a copy in g)
 * unless the node was read lately as holding none. Returns the request to
 * send, or NULL after r's vote says why none goes. */
static const rl_send_t *pass_record(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, const rl_send_t *s,
                                    rl_send_t *g, uint64_t now) {
    char why[160];
    switch (rl_record_form(&ns->cfg, c, now, why, sizeof why)) {
    case RL_FORM_BARE: return s;
    case RL_FORM_GUARDED:
        *g = *s;
        g->cmd = s->gcmd, g->len = s->glen, g->script = s->gscript;
        return g;
    case RL_FORM_REFUSED:
        snprintf(rl_node_of(c)->refusal, sizeof rl_node_of(c)->refusal, "%s", why);
        if (r) vote(ns, r, i, REDLOCK_VOTE_MEMBERSHIP, REDLOCK_ERR_MEMBERSHIP, -1, why, now);
        return NULL;
    default: out_of_memory(ns, c, now); return NULL;
    }
}

/* The deadline of request s on c: its own (a redirect's), else an op
 * timeout from now; a connection still connecting adds a connect's time,
 * also to a redirect's deadline. */
static uint64_t request_deadline(const rl_nodes_t *ns, const rl_conn_t *c, const rl_send_t *s, uint64_t now) {
    uint64_t budget = (uint64_t)ns->cfg.op_timeout_ms * 1000u, deadline = s->deadline_us;
    if (c->state == RL_CONN_CONNECTING || c->state == RL_CONN_RESOLVING) {
        budget += (uint64_t)ns->cfg.connect_timeout_ms * 1000u;
        if (deadline && deadline < now + budget) deadline = now + budget;
    }
    return deadline ? deadline : now + budget;
}

/* Queues s on c for node i, owned by r (NULL: unwaited): ASKING first
 * when s asks for it, the request, what a fallback or redirect rebuilds
 * it from, and its replication mark. A failure takes c down. */
static void queue_request(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, const rl_send_t *s, uint64_t now) {
    static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
    if (s->asking &&
        (rl_conn_send(c, asking, sizeof asking - 1) < 0 || !rl_conn_push(c, RL_REQ_ASKING, NULL, now, UINT64_MAX))) {
        out_of_memory(ns, c, now);
        return;
    }
    rl_req_t *q = rl_conn_push(c, RL_REQ_USER, r, s->sent_us ? s->sent_us : now, request_deadline(ns, c, s, now));
    if (!q) {
        ring_full(ns, c, r, i, now);
        return;
    }
    q->script = s->script;
    q->redirects = s->redirects;
    q->skip = s->skip;
    if (r) r->pn[i].u.slot = rl_conn_slot(c, q);
    int rc = rl_conn_send(c, s->cmd, s->len);
    if (rc == 0) rc = keep_cmd(c, q, s);
    if (rc == 0 && r && r->replicate && rl_repl_want(ns, c)) rl_repl_owe(c, q); /* its yes counts once replicated */
    if (rc < 0) out_of_memory(ns, c, now);
}

/* Queues s on connection c for node i, owned by round r (NULL: its reply
 * is read and dropped), or records in r why it cannot go: c is suspect
 * (and the round's quorum does not need it), down, or quarantined for a
 * grant. A send_all request still goes out on a suspect's open
 * connection, unwaited. */
static void place(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, const rl_send_t *s, uint64_t now) {
    if (r) r->pn[i].conn = (uint16_t)c->k;
    if (!pass_suspect(ns, c, &r, i, s, now)) return;
    if (c->state == RL_CONN_DOWN && !pass_open(ns, c, r, i, now)) return;
    if (r && s->grants && !pass_grant(ns, c, r, i, now)) return;
    rl_send_t g;
    if (s->gcmd && !(s = pass_record(ns, c, r, i, s, &g, now))) return;
    queue_request(ns, c, r, i, s, now);
}

/* Queues s, round r's request to node i, on its connection (a cluster
 * node's: on its shard's, see route.c); with no owner once r is decided. */
static void submit_as(rl_nodes_t *ns, rl_round_t *r, size_t i, rl_send_t *s, uint64_t now) {
    rl_round_t *owner = r->done ? NULL : r;
    if (cluster_of(ns, i))
        rl_route_submit(ns, r, owner, i, s, now);
    else
        place(ns, &ns->nodes[i].conn, owner, i, s, now);
}

/* Submits node i's own command of r (r->node_cmd), built on the stack
 * (what is kept for a redirect or parked is copied from it); a node it
 * has no command for votes no, one whose command does not fit fails. */
static void submit_own(rl_nodes_t *ns, rl_round_t *r, size_t i, rl_send_t *s, uint64_t now) {
    char buf[RL_NODE_CMD_MAX];
    const char *why = "";
    size_t len = r->node_cmd(r->node_arg, i, cluster_of(ns, i) != NULL, buf, sizeof buf, &why);
    if (len && len <= sizeof buf) {
        s->cmd = buf;
        s->len = len;
        submit_as(ns, r, i, s, now);
        return;
    }
    if (r->done) return;
    r->pn[i].conn = (uint16_t)ns->nodes[i].conn.k; /* (the node's report names its own address) */
    if (len)
        vote(ns, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_INVALID, -1, "the node's command is too long", now);
    else /* (the node was not asked: its statistics count no vote) */
        tally(ns, r, i, REDLOCK_VOTE_NO, REDLOCK_OK, -1, why, now);
}

/* Queues round r's command on node i (a cluster node's: see route.c), or
 * the node's own (r->node_cmd). Once r is decided (a send_all round
 * still goes everywhere) the request is sent with no owner. */
static void submit(rl_nodes_t *ns, rl_round_t *r, size_t i, int ask_suspect, uint64_t now) {
    rl_send_t s = {.cmd = r->cmd,
                   .len = r->cmd_len,
                   .script = r->script,
                   .grants = (uint8_t)r->grants,
                   .send_all = (uint8_t)r->send_all,
                   .skip = (uint8_t)r->skip,
                   .ask_suspect = (uint8_t)ask_suspect,
                   .gcmd = r->gcmd,
                   .glen = r->gcmd_len,
                   .gscript = r->gscript};
    if (r->node_cmd)
        submit_own(ns, r, i, &s, now);
    else
        submit_as(ns, r, i, &s, now);
}

int rl_nodes_command(rl_nodes_t *ns, size_t i, int32_t hslot, const char *cmd, size_t len, uint64_t now) {
    rl_conn_t *c = &ns->nodes[i].conn;
    rl_shard_t *sh = cluster_of(ns, i) ? rl_cluster_owner(cluster_of(ns, i), hslot) : NULL;
    if (sh) c = sh->c;
    if (rl_node_of(c)->suspect && c->state == RL_CONN_DOWN) return REDLOCK_ERR_SUSPECT;
    int was_waiting = now < c->retry_at_us;
    int rc = c->state == RL_CONN_DOWN ? open_conn(ns, c, now) : 0;
    if (rc) {
        if (!was_waiting) node_down(ns, c, rc, c->last_detail, now); /* a failed open backs off */
        return rc;
    }
    uint64_t budget = (uint64_t)(ns->cfg.op_timeout_ms + ns->cfg.connect_timeout_ms) * 1000u;
    rl_req_t *q = rl_conn_push(c, RL_REQ_USER, NULL, now, now + budget);
    if (!q) {
        ring_full(ns, c, NULL, i, now);
        return REDLOCK_ERR_IO;
    }
    rl_send_t s = {.cmd = cmd, .len = len};
    if (rl_conn_send(c, cmd, len) == 0 && keep_cmd(c, q, &s) == 0) return 0;
    out_of_memory(ns, c, now);
    return REDLOCK_ERR_NOMEM;
}

/* NOSCRIPT for an EVALSHA (the node restarted or ran SCRIPT FLUSH): send
 * the request's EVAL form in its place with the same deadline and owner.
 * The EVAL form is built only now, from the EVALSHA's header and arguments
 * that submit() kept in c->fb (owned by the connection, not the round) and
 * the script's text, so it is sent even when the caller has moved on and
 * its round is gone: a release or extend still runs on every node. */
static void script_fallback(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    rl_req_t old = *rl_conn_head(c);
    const char *fb = c->fb.data + c->fb.off; /* "*<argc>\r\n" then the arguments after the sha1, or whole */
    size_t head = 0, args = 0;
    if (old.whole && !evalsha_split(fb, old.fb_len, &head, &args)) old.fb_len = 0;
    if (!old.fb_len) {
        rl_conn_pop(c);
        if (old.round) vote(ns, old.round, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, -1, "NOSCRIPT", now);
        return;
    }
    if (!old.whole) {
        const char *nl = memchr(fb, '\n', old.fb_len);
        head = args = nl ? (size_t)(nl - fb) + 1 : 0;
    }
    /* a cluster connection keeps the EVALSHA form for a redirect of the EVAL */
    char *keep = old.whole ? malloc(old.fb_len) : NULL;
    if (keep) memcpy(keep, fb, old.fb_len);
    char mid[48];
    int m = snprintf(mid, sizeof mid, "$4\r\nEVAL\r\n$%zu\r\n", old.script->len);
    int rc = old.whole && !keep ? -1 : rl_conn_send(c, fb, head); /* copied before pop frees fb's bytes */
    if (rc == 0) rc = rl_conn_send(c, mid, (size_t)m);
    if (rc == 0) rc = rl_conn_send(c, old.script->text, old.script->len);
    if (rc == 0) rc = rl_conn_send(c, "\r\n", 2);
    if (rc == 0) rc = rl_conn_send(c, fb + args, old.fb_len - args);
    rl_conn_pop(c);
    rl_req_t *q = rc == 0 ? rl_conn_push(c, RL_REQ_USER, old.round, old.sent_us, old.deadline_us) : NULL;
    if (q && keep) {
        if (rl_buf_append(&c->fb, keep, old.fb_len) == 0) q->whole = 1, q->fb_len = old.fb_len;
        q->script = old.script;
        q->redirects = old.redirects;
    }
    free(keep);
    if (!q) {
        if (old.round)
            vote(ns, old.round, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1, "out of memory", now);
        out_of_memory(ns, c, now);
        return;
    }
    if (old.round) old.round->pn[c->idx].u.slot = rl_conn_slot(c, q);
    if (old.then_wait) rl_repl_owe(c, q); /* (a WAIT after the EVAL covers it) */
}

/* The RL_PUSH_* kind of a pub/sub frame (an array led by "message",
 * "subscribe" or "unsubscribe" with a channel second), else 0. */
static int push_kind(const redisReply *rep) {
    static const char *const names[] = {"message",  "subscribe",  "unsubscribe",
                                        "smessage", "ssubscribe", "sunsubscribe"};
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) return 0;
    const redisReply *k = rep->element[0], *ch = rep->element[1];
    if (k->type != REDIS_REPLY_STRING || ch->type != REDIS_REPLY_STRING) return 0;
    for (int i = 0; i < 6; i++)
        if (k->len == strlen(names[i]) && !memcmp(k->str, names[i], k->len)) return RL_PUSH_MESSAGE + i % 3;
    return 0;
}

/* Records node c's vote v in r, a grant from a quarantined node counting
 * as none (a node that may have lost its data: the clean-up releases it). */
static void cast(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, redlock_vote_t v, int err, int64_t rtt, char *detail,
                 uint64_t now) {
    if (v == REDLOCK_VOTE_YES && r->grants && rl_node_quarantined(c, now, detail, RL_DETAIL_LEN)) {
        v = REDLOCK_VOTE_DOWN;
        err = REDLOCK_ERR_QUARANTINED;
    }
    vote(ns, r, (size_t)c->idx, v, err, rtt, detail, now);
}

/* The reply rep to the request q at the head of c's queue when q is not
 * a round's request waiting for its vote: a slot map, ASKING's OK, a
 * reply ahead of the one q waits for, a WAIT's answer, the engine's own
 * requests. Returns 1 when it was one of those (and is handled), else 0. */
static int not_a_vote(rl_nodes_t *ns, rl_conn_t *c, rl_req_t *q, const redisReply *rep, uint64_t now) {
    if (q->kind == RL_REQ_SLOTS || q->kind == RL_REQ_ASKING) {
        uint8_t kind = q->kind;
        rl_conn_pop(c);
        if (kind == RL_REQ_SLOTS && cluster_of(ns, c->idx)) rl_route_map_reply(ns, c, rep, now);
        return 1;
    }
    if (q->skip) { /* a reply ahead of the one the request waits for (MULTI's OK, a QUEUED) */
        q->skip--;
        /* a command of a transaction sent by a stale map: EXEC will be refused (a failed vote);
         * the map is put right for the next attempt */
        if (rep->type == REDIS_REPLY_ERROR && cluster_of(ns, c->idx)) rl_route_note_redirect(ns, c, rep->str, now);
        return 1;
    }
    if (q->kind == RL_REQ_WAIT) {
        rl_repl_answer(ns, c, rep, now);
        return 1;
    }
    if (q->kind == RL_REQ_USER) return 0;
    char why[RL_DETAIL_LEN];
    int rc = rl_node_internal_reply(&ns->cfg, c, rep, now, why, sizeof why);
    if (rc) node_down(ns, c, rc, why, now);
    return 1;
}

/* Judges rep, node c's answer in round r (redirected: a MOVED or ASK
 * from a plain node's URI), into a vote with its err and detail (n bytes). */
static redlock_vote_t judge(const rl_round_t *r, const rl_conn_t *c, const redisReply *rep, int redirected, int *err,
                            char *detail, size_t n) {
    redlock_vote_t v =
        r->judge ? r->judge(r->node_arg, (size_t)c->idx, rep, err, detail, n) : r->classify(rep, err, detail, n);
    if (redirected) /* a plain node's URI names a cluster member */
        snprintf(detail, n, "%.80s: the node is a Redis Cluster member; name it redis+cluster://%s:%d", rep->str,
                 c->uri.host, c->uri.port);
    return v;
}

/* Counts rep, the answer to the round request at the head of c's queue,
 * as its node's vote (a yes that waits for replicas waits for the next
 * WAIT's answer instead). */
static void vote_reply(rl_nodes_t *ns, rl_conn_t *c, const redisReply *rep, int redirected, uint64_t now) {
    rl_req_t *q = rl_conn_head(c);
    rl_round_t *r = q->round;
    int64_t rtt = (int64_t)(now - q->sent_us);
    int then_wait = q->then_wait;
    rl_conn_pop(c);
    c->backoff_ms = ns->cfg.reconnect_min_ms; /* the node works: reset its backoff */
    if (!r) return;
    const rl_cluster_t *cl = cluster_of(ns, c->idx);
    if (cl && cl->error[0] && !cl->loaded_us) { /* the member asked is no cluster's: its answer is not a vote */
        vote(ns, r, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, rtt, cl->error, now);
        return;
    }
    if (r->on_reply) r->on_reply(r->reply_arg, (size_t)c->idx, rep);
    int err = REDLOCK_OK;
    char detail[RL_DETAIL_LEN] = "";
    redlock_vote_t v = judge(r, c, rep, redirected, &err, detail, sizeof detail);
    if (err == REDLOCK_ERR_MEMBERSHIP) { /* the guard's refusal, in words the caller can act on */
        char text[RL_DETAIL_LEN];
        snprintf(text, sizeof text, "%s", detail);
        rl_record_refusal(text, ns->cfg.fp, detail, sizeof detail);
        snprintf(rl_node_of(c)->refusal, sizeof rl_node_of(c)->refusal, "%s", detail);
    }
    if (v == REDLOCK_VOTE_YES && then_wait) { /* the vote waits for the replicas: the next WAIT's answer */
        if (rl_repl_defer(c, r, (uint64_t)((int64_t)now - rtt)) == 0) return;
        v = REDLOCK_VOTE_ERROR;
        err = REDLOCK_ERR_NOMEM;
        snprintf(detail, sizeof detail, "out of memory");
    }
    cast(ns, c, r, v, err, rtt, detail, now);
    if (c->uri.sentinel) rl_group_readonly(ns, c, rep, now);
}

/* Matches one reply to the request at the head of c's queue. On a
 * subscriber set a message frame answers no request. */
static void handle_reply(rl_nodes_t *ns, rl_conn_t *c, const redisReply *rep, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    int push = ns->cfg.subscriber ? push_kind(rep) : 0;
    if (nd->suspect || nd->close_at_us) rl_suspect_answered(&ns->cfg, c, now); /* any answer: not silent */
    if (push && ns->pubsub) {
        const redisReply *m = rep->elements > 2 ? rep->element[2] : NULL; /* a message's text */
        int text = push == RL_PUSH_MESSAGE && m && m->type == REDIS_REPLY_STRING;
        ns->pubsub(ns->done_arg, (size_t)c->idx, push, rep->element[1]->str, rep->element[1]->len, text ? m->str : "",
                   text ? m->len : 0);
    }
    if (push == RL_PUSH_MESSAGE) {
        c->backoff_ms = ns->cfg.reconnect_min_ms;
        return;
    }
    rl_req_t *q = rl_conn_head(c);
    if (!q) {
        node_down(ns, c, REDLOCK_ERR_IO, "reply with no request waiting", now);
        return;
    }
    if (not_a_vote(ns, c, q, rep, now)) return;
    if (rep->type == REDIS_REPLY_ERROR && q->script && !strncmp(rep->str, "NOSCRIPT", 8)) {
        script_fallback(ns, c, now);
        return;
    }
    int redirected =
        rep->type == REDIS_REPLY_ERROR && (!strncmp(rep->str, "MOVED ", 6) || !strncmp(rep->str, "ASK ", 4));
    if (redirected && cluster_of(ns, c->idx)) {
        rl_route_redirect(ns, c, rep->str, now);
        return;
    }
    vote_reply(ns, c, rep, redirected, now);
}

/* Reads from c and handles every complete reply; a read error or EOF is
 * handled after the replies that arrived before it. */
static void node_readable(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    int rc = rl_conn_read(c, now);
    char why[RL_DETAIL_LEN];
    snprintf(why, sizeof why, "%s", c->last_detail);
    while (c->state != RL_CONN_DOWN) {
        void *rep = NULL;
        if (redisReaderGetReply(c->reader, &rep) != REDIS_OK) {
            snprintf(why, sizeof why, "protocol error: %.100s", rl_reader_error(c->reader, &c->arena));
            node_down(ns, c, REDLOCK_ERR_IO, why, now);
            return;
        }
        if (!rep) break;
        handle_reply(ns, c, rep, now);
        rl_arena_reset(&c->arena); /* the reply is done with: reuse its memory */
    }
    if (rc && c->state != RL_CONN_DOWN) node_down(ns, c, rc, why, now);
}

/* Says in r's report why the nodes still unheard at its grace's end were
 * not waited for (their vote stays NONE: a failed vote). */
static void note_unheard(rl_round_t *r, uint64_t now) {
    for (size_t i = 0; r->nodes && i < r->n; i++)
        if (r->pn[i].vote == REDLOCK_VOTE_NONE)
            snprintf(r->nodes[i].detail, sizeof r->nodes[i].detail,
                     "not waited for: %s %llu us after the round was sent, when its outcome was known",
                     r->pn[i].u.slot == RL_SLOT_WAITING ? "written, its WAIT for replicas not answered" : "no reply",
                     (unsigned long long)(now - r->t0_us));
}

/* ----------------------------------------------------------------- the loop */

int rl_nodes_busy(const rl_nodes_t *ns) {
    for (size_t k = 0; k < ns->nall; k++) {
        const rl_conn_t *c = ns->all[k];
        if (c->qlen || c->lookup || c->state == RL_CONN_RESOLVING || c->state == RL_CONN_CONNECTING ||
            rl_buf_pending(&c->out))
            return 1;
    }
    return 0;
}

int rl_nodes_owed(const rl_nodes_t *ns) {
    for (size_t k = 0; k < ns->nall; k++) {
        rl_conn_t *c = ns->all[k];
        if (rl_node_of(c)->suspect || c->state == RL_CONN_DOWN) continue;
        if (c->state == RL_CONN_READY && rl_buf_pending(&c->out)) return 1;
        for (uint32_t j = 0; j < c->qlen; j++)
            if (rl_conn_at(c, j)->kind == RL_REQ_USER) return 1;
    }
    return 0;
}

uint64_t rl_nodes_next_us(const rl_nodes_t *ns) {
    uint64_t next = UINT64_MAX;
    if (ns->cl) next = rl_route_next_us(ns);
    for (size_t k = 0; k < ns->nall; k++) {
        const rl_conn_t *c = ns->all[k];
        const rl_node_t *nd = rl_node_of_const(c);
        if (c->state == RL_CONN_DOWN) {
            if (nd->suspect && nd->probe_at_us < next) next = nd->probe_at_us;
            continue;
        }
        if (c->state == RL_CONN_RESOLVING && c->connect_deadline_us < next) next = c->connect_deadline_us;
        if (c->state == RL_CONN_CONNECTING && c->addr_deadline_us < next) next = c->addr_deadline_us;
        if (c->due_us < next) next = c->due_us; /* an early bound costs one extra wake-up at most */
        if (nd->close_at_us) {
            if (nd->close_at_us < next) next = nd->close_at_us;
        } else if (c->qlen) {
            const rl_req_t *h = rl_conn_head(c);
            uint64_t quiet =
                (h->sent_us > c->last_rx_us ? h->sent_us : c->last_rx_us) + (uint64_t)ns->cfg.node_down_ms * 1000u;
            if (quiet < next) next = quiet;
        }
    }
    return next;
}

/* 1 while c's later output is held: replicated writes queued since the
 * WAIT that is out on c wait for its answer, then go with one WAIT of
 * their own (a blocked connection runs nothing sent behind a WAIT before
 * its answer anyway). What precedes that WAIT still goes. */
static int held(const rl_nodes_t *ns, const rl_conn_t *c) {
    const rl_node_t *nd = rl_node_of_const(c);
    return nd->wait_owed && nd->waits_out && !ns->closing_now;
}

/* The bytes of c's output that may be written now. */
static size_t sendable(const rl_nodes_t *ns, const rl_conn_t *c) {
    return held(ns, c) ? c->out_mark : rl_buf_pending(&c->out);
}

void rl_nodes_conn_down(rl_nodes_t *ns, rl_conn_t *c, int rc, const char *why, uint64_t now) {
    node_down(ns, c, rc, why, now);
}

void rl_nodes_flush(rl_nodes_t *ns, uint64_t now) {
    for (size_t k = 0; k < ns->nall; k++) {
        rl_conn_t *c = ns->all[k];
        if (!held(ns, c) && rl_node_of(c)->wait_owed && c->state != RL_CONN_DOWN && rl_repl_append(ns, c, now) < 0) {
            out_of_memory(ns, c, now);
            continue;
        }
        if (c->state != RL_CONN_READY || !sendable(ns, c) || c->fd_lent)
            continue; /* (lent: written after what the leader writes) */
        int rc = rl_conn_flush_n(c, sendable(ns, c));
        if (rc) node_down(ns, c, rc, c->last_detail, now);
    }
}

short rl_nodes_interest(const rl_nodes_t *ns, size_t k) {
    const rl_conn_t *c = ns->all[k];
    if (c->fd < 0) return 0;
    short ev = POLLIN;
    if (c->state == RL_CONN_CONNECTING)
        ev |= c->tcp_up ? c->want : POLLOUT;
    else if (sendable(ns, c))
        ev |= POLLOUT;
    return ev;
}

void rl_nodes_events(rl_nodes_t *ns, size_t k, short rev, uint64_t now) {
    rl_conn_t *c = ns->all[k];
    if (c->fd < 0) return;
    if (c->state == RL_CONN_CONNECTING) {
        if (!c->tcp_up && !(rev & (POLLOUT | POLLERR | POLLHUP))) return; /* connect still in progress */
        int rc = rl_conn_finish_connect(c);
        if (rc < 0 && (rc = rl_dial_next(c, now, c->last_detail, 0)) != 0) { /* every address failed */
            node_down(ns, c, rc, c->last_detail, now);
            return;
        }
        /* READY: the next turn writes what waited for the connection; else a
         * TLS handshake or the next address goes on */
        if (c->state == RL_CONN_READY) c->last_rx_us = now;
        return;
    }
    if (rev & (POLLIN | POLLERR | POLLHUP)) node_readable(ns, c, now);
}

void rl_nodes_lookups_ended(rl_nodes_t *ns, uint64_t now) {
    for (size_t k = 0; k < ns->nall; k++) {
        rl_conn_t *c = ns->all[k];
        rl_group_info_t group;
        int learnt = 0;
        if (c->uri.sentinel) rl_group_news(ns, c, now);
        int rc = c->lookup ? rl_dial_lookup_ended(c, now, &group, &learnt) : 0;
        if (learnt) rl_group_learnt(&ns->cfg, c, &group, now); /* (a Sentinel group's) */
        if (rc) node_down(ns, c, rc, c->last_detail, now);
    }
}

/* The connection round r's request to node i goes to first: a cluster
 * node's shard for r's slot once its map is known, else the node's own. */
static rl_conn_t *first_conn(rl_nodes_t *ns, const rl_round_t *r, size_t i) {
    rl_shard_t *sh = cluster_of(ns, i) ? rl_cluster_owner(cluster_of(ns, i), r->hslot) : NULL;
    return sh ? sh->c : &ns->nodes[i].conn;
}

/* 1 when the nodes that are not suspect cannot make r's quorum (whatever
 * the kind: a mutex's, a permit slot's, a reader's rounds all need
 * r->quorum yes votes): skipping the suspect ones would fail the round
 * for sure, so they are asked too, which costs nothing and finds them
 * back the moment they answer (the skip of doc/design.md, "A silent
 * minority", is for a minority). */
static int must_ask_suspects(rl_nodes_t *ns, const rl_round_t *r) {
    uint8_t suspect[REDLOCK_MAX_NODES];
    for (size_t i = 0; i < ns->n; i++) suspect[i] = rl_node_of(first_conn(ns, r, i))->suspect != 0;
    return rl_round_beyond_slack(r, suspect);
}

void rl_nodes_start(rl_nodes_t *ns, rl_round_t *r, uint64_t now) {
    r->t0_us = now;
    int ask = !r->done && must_ask_suspects(ns, r);
    for (size_t i = 0; i < ns->n && (!r->done || r->send_all); i++) submit(ns, r, i, ask, now);
    if (rl_round_decided(r) && !r->done) finish_round(ns, r);
    if (r->grace_us && !r->done) grace_dues(ns, r); /* nodes sent to after the grace began */
}

/* --------------------------------------------------------------- set-up */

/* How many requests a connection's opening may queue ahead of any round's:
 * a SCRIPT LOAD per script, and 8 for the rest (AUTH, SELECT, the
 * membership record's read, INFO, ROLE and TIME, with room to spare). */
static uint32_t setup_reqs(void) {
    uint32_t n = 8;
    for (const rl_script_t *s = rl_scripts; s->name; s++) n++;
    return n;
}

/* Sets up nd for node idx at uri (taking ownership of its strings); lookups
 * of its name write a byte to notify_fd when they end. Its request ring
 * holds max_inflight requests for rounds plus the opening's own, so even a
 * limit of 1 leaves a round room. Returns 0, or -1 when out of memory (uri
 * is then left to the caller). */
static int node_init(rl_node_t *nd, rl_uri_t *uri, int idx, uint32_t max_inflight, int notify_fd) {
    memset(nd, 0, sizeof *nd);
    if (rl_conn_init(&nd->conn, uri, idx, max_inflight + setup_reqs(), notify_fd) < 0) return -1;
    rl_dial_init(&nd->conn);
    nd->role_replicas = -1;
    return 0;
}

/* Stops nd's failover feed and lookup, closes its connection and frees
 * what it owns (not nd itself). Safe on a zeroed nd. */
static void node_free(rl_node_t *nd) {
    rl_failover_feed_stop(nd->feed);
    nd->feed = NULL;
    rl_dial_free(&nd->conn); /* before the notify fd its lookups write closes */
    rl_conn_destroy(&nd->conn);
    free(nd->waiting);
    nd->waiting = NULL;
    nd->nwaiting = nd->capwaiting = 0;
}

/* conn's req_moved: a request of r on node idx now sits in slot. */
static void req_moved(struct rl_round *r, int idx, uint32_t slot) {
    r->pn[idx].u.slot = slot;
}

/* Appends c to ns->all as connection k. Returns 0, or -1 when out of
 * memory (or past the 65535 connections a round can name). */
static int track(rl_nodes_t *ns, rl_conn_t *c) {
    if (ns->nall == ns->capall) {
        size_t cap = ns->capall ? ns->capall * 2 : 8;
        rl_conn_t **all = cap <= UINT16_MAX ? realloc(ns->all, cap * sizeof *all) : NULL;
        if (!all) return -1;
        ns->all = all;
        ns->capall = cap;
    }
    c->k = (int)ns->nall;
    ns->all[ns->nall++] = c;
    c->req_moved = req_moved;
    c->ring_hold = !ns->cfg.subscriber; /* lock traffic, a request a cycle: hold a grown ring */
    c->closing = ns->closing;
    c->closing_arg = ns->closing_arg;
    if (c->uri.tls || c->uri.sentinel_tls) {
        c->tls_name = ns->cfg.tls_server_name;
        c->tls_verify = ns->cfg.tls_verify;
    }
    if (c->uri.tls) c->tls_ctx = ns->cfg.tls_ctx;
    if (c->uri.sentinel_tls) c->lookup_tls_ctx = ns->cfg.tls_ctx;
    return 0;
}

rl_conn_t *rl_nodes_add(rl_nodes_t *ns, size_t i, rl_uri_t *uri) {
    rl_node_t *nd = malloc(sizeof *nd);
    if (!nd || node_init(nd, uri, (int)i, ns->cfg.max_inflight, ns->nodes[i].conn.notify_fd) < 0) {
        if (nd) node_free(nd);
        free(nd);
        rl_uri_clear(uri);
        return NULL;
    }
    nd->conn.whole_cmds = 1;
    if (track(ns, &nd->conn) < 0) {
        node_free(nd);
        free(nd);
        return NULL;
    }
    return &nd->conn;
}

/* ------------------------------------------------- for route.c (ns->ops) */

/* ops.finish: ends r, whose grace passed with nodes still unheard. */
static void finish_late(rl_nodes_t *ns, rl_round_t *r, uint64_t now) {
    if (r->done) return;
    note_unheard(r, now);
    finish_round(ns, r);
}

static const rl_ns_ops_t ns_ops = {
    .vote = vote,
    .down = node_down,
    .open = open_conn,
    .place = place,
    .finish = finish_late,
    .read = node_readable,
    .add = rl_nodes_add,
    .cast = cast,
};

int rl_nodes_init(rl_nodes_t *ns, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg, int notify_fd) {
    *ns = (rl_nodes_t){.cfg = *cfg, .ops = &ns_ops};
    ns->nodes = calloc(n, sizeof *ns->nodes);
    for (size_t i = 0; ns->nodes && i < n; i++) {
        rl_node_t *nd = &ns->nodes[i];
        if (node_init(nd, &uris[i], (int)i, cfg->max_inflight, notify_fd) < 0) break;
        ns->n++;
        nd->follow = !cfg->subscriber; /* a Sentinel group's node: one feed per group and handle */
        if (track(ns, &nd->conn) < 0) break;
    }
    int ok = ns->n == n && ns->nall == n;
    for (size_t i = 0; ok && i < n; i++) ok = rl_route_init(ns, i) == 0;
    if (ok) return REDLOCK_OK;
    for (size_t i = ns->n; i < n; i++) rl_uri_clear(&uris[i]);
    return REDLOCK_ERR_NOMEM;
}

void rl_nodes_map_load(rl_nodes_t *ns, size_t i, uint64_t now) {
    if (cluster_of(ns, i)) rl_route_map_reload(ns, i, now);
}

void rl_nodes_on_close(rl_nodes_t *ns, void (*fn)(void *arg, rl_conn_t *c, int fd), void *arg) {
    ns->closing = fn;
    ns->closing_arg = arg;
    for (size_t k = 0; k < ns->nall; k++) {
        ns->all[k]->closing = fn;
        ns->all[k]->closing_arg = arg;
    }
}

void rl_nodes_destroy(rl_nodes_t *ns) {
    for (size_t k = ns->n; k < ns->nall; k++) { /* shard connections */
        node_free(rl_node_of(ns->all[k]));
        free(rl_node_of(ns->all[k]));
    }
    for (size_t i = 0; ns->nodes && i < ns->n; i++) node_free(&ns->nodes[i]);
    for (size_t i = 0; ns->cl && i < ns->n; i++) {
        if (ns->cl[i]) rl_route_free(ns, i);
        rl_cluster_free(ns->cl[i]);
    }
    free(ns->cl);
    free(ns->all);
    free(ns->nodes);
    ns->nodes = NULL;
    ns->all = NULL;
    ns->cl = NULL;
    ns->n = ns->nall = ns->capall = 0;
}
