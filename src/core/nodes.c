/* nodes.c -- rounds over the nodes' connections (see nodes.h): sending a
 * round's command to every node, matching replies to requests in order,
 * the NOSCRIPT fallback, votes, deadlines, and the readiness a driver's
 * loop watches for. No function here blocks or locks. */
#include "nodes.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dial.h"
#include "node.h"
#include "resp.h"
#include "scripts.h"
#include "stats.h"

/* ---------------------------------------------------------------- rounds */

/* Marks r done, detaches its requests still owed a reply (their replies
 * will be dropped). */
static void detach_round(rl_nodes_t *ns, rl_round_t *r) {
    r->done = 1;
    for (size_t i = 0; i < r->n; i++) {
        if (r->pn[i].vote != REDLOCK_VOTE_NONE || r->pn[i].u.slot == RL_NO_SLOT) continue;
        rl_conn_t *c = &ns->conns[i];
        rl_req_t *q = &c->q[r->pn[i].u.slot];
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

/* Records a vote and finishes the round if that decided it. */
static void vote(rl_nodes_t *ns, rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt,
                 const char *detail) {
    if (r->pn[i].vote == REDLOCK_VOTE_NONE) {
        rl_stats_vote(ns->cfg.stats, i, v, err, rtt);
        if (r->nodes) /* the address this node's answer came over */
            memcpy(r->nodes[i].address, ns->conns[i].addr, sizeof r->nodes[i].address);
    }
    if (rl_round_vote(r, i, v, err, rtt, detail)) finish_round(ns, r);
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
        if (r) vote(ns, r, (size_t)c->idx, v, err, -1, c->last_detail);
    }
    rl_node_close(&ns->cfg, c, err, c->last_detail, now);
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

/* Queues round r's command on node i, or records why it cannot go. Once r
 * is decided (a send_all round still goes everywhere) the request is sent
 * with no owner: its reply is read and dropped. */
static void submit(rl_nodes_t *ns, rl_round_t *r, size_t i, uint64_t now) {
    rl_conn_t *c = &ns->conns[i];
    rl_round_t *owner = r->done ? NULL : r;
    if (c->state == RL_CONN_DOWN) {
        int was_waiting = now < c->retry_at_us;
        int rc = rl_node_open(&ns->cfg, c, now);
        if (rc && !was_waiting) node_down(ns, c, rc, c->last_detail, now);
        if (rc) {
            char why[RL_DETAIL_LEN + 8];
            snprintf(why, sizeof why, "%s%s", was_waiting ? "down: " : "", c->last_detail);
            if (owner) vote(ns, r, i, was_waiting ? REDLOCK_VOTE_DOWN : REDLOCK_VOTE_ERROR, rc, -1, why);
            return;
        }
    }
    if (owner && r->grants) {
        char why[96];
        if (rl_node_quarantined(c, now, why, sizeof why)) { /* its grant would not count */
            vote(ns, r, i, REDLOCK_VOTE_DOWN, REDLOCK_ERR_QUARANTINED, -1, why);
            return;
        }
        /* a clock sample goes just ahead of the grant, so a jump is judged before the grant counts */
        if (rl_node_sample_clock(&ns->cfg, c, now) < 0) {
            node_down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now);
            return;
        }
    }
    uint64_t budget = (uint64_t)ns->cfg.op_timeout_ms * 1000u;
    if (c->state == RL_CONN_CONNECTING || c->state == RL_CONN_RESOLVING)
        budget += (uint64_t)ns->cfg.connect_timeout_ms * 1000u;
    rl_req_t *q = rl_conn_push(c, RL_REQ_USER, owner, now, now + budget);
    if (!q) {
        char why[96];
        snprintf(why, sizeof why, "too many requests in flight (%u)", c->qcap);
        if (owner) vote(ns, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_IO, -1, why);
        node_down(ns, c, REDLOCK_ERR_IO, why, now);
        return;
    }
    q->script = r->script;
    if (owner) r->pn[i].u.slot = (c->qhead + c->qlen - 1) % c->qcap;
    int rc = rl_conn_send(c, r->cmd, r->cmd_len);
    size_t head, args;
    if (rc == 0 && r->script && evalsha_split(r->cmd, r->cmd_len, &head, &args)) {
        /* what the EVAL fallback is built from, kept with the request: it outlives the round */
        rc = rl_buf_append(&c->fb, r->cmd, head);
        if (rc == 0) rc = rl_buf_append(&c->fb, r->cmd + args, r->cmd_len - args);
        if (rc == 0) q->fb_len = (uint32_t)(head + r->cmd_len - args);
    }
    if (rc < 0) node_down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now);
}

int rl_nodes_command(rl_nodes_t *ns, size_t i, const char *cmd, size_t len, uint64_t now) {
    rl_conn_t *c = &ns->conns[i];
    int was_waiting = now < c->retry_at_us;
    int rc = c->state == RL_CONN_DOWN ? rl_node_open(&ns->cfg, c, now) : 0;
    if (rc) {
        if (!was_waiting) node_down(ns, c, rc, c->last_detail, now); /* a failed open backs off */
        return rc;
    }
    uint64_t budget = (uint64_t)(ns->cfg.op_timeout_ms + ns->cfg.connect_timeout_ms) * 1000u;
    if (!rl_conn_push(c, RL_REQ_USER, NULL, now, now + budget)) {
        char why[96];
        snprintf(why, sizeof why, "too many requests in flight (%u)", c->qcap);
        node_down(ns, c, REDLOCK_ERR_IO, why, now);
        return REDLOCK_ERR_IO;
    }
    if (rl_conn_send(c, cmd, len) == 0) return 0;
    node_down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now);
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
    if (!old.fb_len) {
        rl_conn_pop(c);
        if (old.round) vote(ns, old.round, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, -1, "NOSCRIPT");
        return;
    }
    const char *fb = c->fb.data + c->fb.off; /* "*<argc>\r\n" then the arguments after the sha1 */
    const char *nl = memchr(fb, '\n', old.fb_len);
    size_t head = nl ? (size_t)(nl - fb) + 1 : 0;
    char mid[48];
    int m = snprintf(mid, sizeof mid, "$4\r\nEVAL\r\n$%zu\r\n", old.script->len);
    int rc = rl_conn_send(c, fb, head); /* copied before pop frees fb's bytes */
    if (rc == 0) rc = rl_conn_send(c, mid, (size_t)m);
    if (rc == 0) rc = rl_conn_send(c, old.script->text, old.script->len);
    if (rc == 0) rc = rl_conn_send(c, "\r\n", 2);
    if (rc == 0) rc = rl_conn_send(c, fb + head, old.fb_len - head);
    rl_conn_pop(c);
    rl_req_t *q = rc == 0 ? rl_conn_push(c, RL_REQ_USER, old.round, old.sent_us, old.deadline_us) : NULL;
    if (!q) {
        if (old.round) vote(ns, old.round, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1, "out of memory");
        node_down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now);
        return;
    }
    if (old.round) old.round->pn[c->idx].u.slot = (c->qhead + c->qlen - 1) % c->qcap;
}

/* The RL_PUSH_* kind of a pub/sub frame (an array led by "message",
 * "subscribe" or "unsubscribe" with a channel second), else 0. */
static int push_kind(const redisReply *rep) {
    static const char *const names[] = {"message", "subscribe", "unsubscribe"};
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) return 0;
    const redisReply *k = rep->element[0], *ch = rep->element[1];
    if (k->type != REDIS_REPLY_STRING || ch->type != REDIS_REPLY_STRING) return 0;
    for (int i = 0; i < 3; i++)
        if (k->len == strlen(names[i]) && !memcmp(k->str, names[i], k->len)) return RL_PUSH_MESSAGE + i;
    return 0;
}

/* Matches one reply to the request at the head of c's queue. On a
 * subscriber set a message frame answers no request. */
static void handle_reply(rl_nodes_t *ns, rl_conn_t *c, const redisReply *rep, uint64_t now) {
    int push = ns->cfg.subscriber ? push_kind(rep) : 0;
    if (push && ns->pubsub)
        ns->pubsub(ns->done_arg, (size_t)c->idx, push, rep->element[1]->str, rep->element[1]->len);
    if (push == RL_PUSH_MESSAGE) {
        c->backoff_ms = ns->cfg.reconnect_min_ms;
        return;
    }
    rl_req_t *q = rl_conn_head(c);
    if (!q) {
        node_down(ns, c, REDLOCK_ERR_IO, "reply with no request waiting", now);
        return;
    }
    if (q->kind != RL_REQ_USER) {
        char why[RL_DETAIL_LEN];
        int rc = rl_node_internal_reply(&ns->cfg, c, rep, now, why, sizeof why);
        if (rc) node_down(ns, c, rc, why, now);
        return;
    }
    if (rep->type == REDIS_REPLY_ERROR && q->script && !strncmp(rep->str, "NOSCRIPT", 8)) {
        script_fallback(ns, c, now);
        return;
    }
    rl_round_t *r = q->round;
    int64_t rtt = (int64_t)(now - q->sent_us);
    rl_conn_pop(c);
    c->backoff_ms = ns->cfg.reconnect_min_ms; /* the node works: reset its backoff */
    if (!r) return;
    if (r->on_reply) r->on_reply(r->reply_arg, (size_t)c->idx, rep);
    int err = REDLOCK_OK;
    char detail[RL_DETAIL_LEN] = "";
    redlock_vote_t v = r->classify(rep, &err, detail, sizeof detail);
    if (v == REDLOCK_VOTE_YES && r->grants && rl_node_quarantined(c, now, detail, sizeof detail)) {
        v = REDLOCK_VOTE_DOWN; /* a grant from a node that may have lost its data: the clean-up releases it */
        err = REDLOCK_ERR_QUARANTINED;
    }
    vote(ns, r, (size_t)c->idx, v, err, rtt, detail);
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

/* Times out requests past their deadline (their slot stays, so the late
 * reply is dropped), and takes down nodes whose connect took too long or
 * that stayed silent for node_down_ms while owing replies. A node's queue
 * is scanned only once its due_us (a lower bound of its requests'
 * deadlines, kept by rl_conn_push) has passed; the scan then sets due_us to
 * the exact earliest deadline left, so the scans are about one per
 * op_timeout_ms per node instead of one per loop turn. Deadlines are not
 * monotonic along a queue (connect budgets, EVAL fallbacks re-queued with
 * their original deadline), which a lower bound does not need. */
void rl_nodes_expire(rl_nodes_t *ns, uint64_t now) {
    for (size_t i = 0; i < ns->n; i++) {
        rl_conn_t *c = &ns->conns[i];
        if (c->state == RL_CONN_DOWN) continue;
        if (c->state == RL_CONN_RESOLVING && now >= c->connect_deadline_us) {
            char why[RL_DETAIL_LEN];
            snprintf(why, sizeof why, "lookup of %s timed out (no answer within %u ms)", c->uri.host,
                     ns->cfg.connect_timeout_ms);
            node_down(ns, c, REDLOCK_ERR_TIMEOUT, why, now);
            continue;
        }
        if (c->state == RL_CONN_CONNECTING && now >= c->addr_deadline_us) {
            int rc = rl_dial_next(c, now,
                                  c->ssl ? "TLS handshake timed out (no TLS answer: a plain-text port? use redis://)"
                                         : "timed out",
                                  1);
            if (rc) node_down(ns, c, rc, c->last_detail, now);
            continue;
        }
        if (now >= c->due_us) { /* some request may be late: scan, and learn the next due time */
            uint64_t due = UINT64_MAX;
            for (uint32_t k = 0; k < c->qlen; k++) {
                rl_req_t *q = rl_conn_at(c, k);
                if (!q->round) continue;
                if (now < q->deadline_us) {
                    if (q->deadline_us < due) due = q->deadline_us;
                    continue;
                }
                rl_round_t *r = q->round;
                q->round = NULL;
                char why[64];
                snprintf(why, sizeof why, "no reply within %u ms", (unsigned)((q->deadline_us - q->sent_us) / 1000u));
                vote(ns, r, i, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, why);
            }
            c->due_us = due;
        }
        rl_req_t *h = rl_conn_head(c);
        uint64_t quiet_since = h ? (h->sent_us > c->last_rx_us ? h->sent_us : c->last_rx_us) : now;
        if (h && now - quiet_since >= (uint64_t)ns->cfg.node_down_ms * 1000u) {
            char why[64];
            snprintf(why, sizeof why, "silent for %u ms with %u replies owed", ns->cfg.node_down_ms, c->qlen);
            node_down(ns, c, REDLOCK_ERR_TIMEOUT, why, now);
        }
    }
}

/* ----------------------------------------------------------------- the loop */

uint64_t rl_nodes_next_us(const rl_nodes_t *ns) {
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < ns->n; i++) {
        const rl_conn_t *c = &ns->conns[i];
        if (c->state == RL_CONN_DOWN) continue;
        if (c->state == RL_CONN_RESOLVING && c->connect_deadline_us < next) next = c->connect_deadline_us;
        if (c->state == RL_CONN_CONNECTING && c->addr_deadline_us < next) next = c->addr_deadline_us;
        if (c->due_us < next) next = c->due_us; /* an early bound costs one extra wake-up at most */
        if (c->qlen) {
            const rl_req_t *h = &c->q[c->qhead];
            uint64_t quiet = (h->sent_us > c->last_rx_us ? h->sent_us : c->last_rx_us) +
                             (uint64_t)ns->cfg.node_down_ms * 1000u;
            if (quiet < next) next = quiet;
        }
    }
    return next;
}

void rl_nodes_flush(rl_nodes_t *ns, uint64_t now) {
    for (size_t i = 0; i < ns->n; i++) {
        rl_conn_t *c = &ns->conns[i];
        if (c->state != RL_CONN_READY || !rl_buf_pending(&c->out)) continue;
        int rc = rl_conn_flush(c);
        if (rc) node_down(ns, c, rc, c->last_detail, now);
    }
}

short rl_nodes_interest(const rl_nodes_t *ns, size_t i) {
    const rl_conn_t *c = &ns->conns[i];
    if (c->fd < 0) return 0;
    short ev = POLLIN;
    if (c->state == RL_CONN_CONNECTING)
        ev |= c->tcp_up ? c->want : POLLOUT;
    else if (rl_buf_pending(&c->out))
        ev |= POLLOUT;
    return ev;
}

void rl_nodes_events(rl_nodes_t *ns, size_t i, short rev, uint64_t now) {
    rl_conn_t *c = &ns->conns[i];
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
    for (size_t i = 0; i < ns->n; i++) {
        rl_conn_t *c = &ns->conns[i];
        int rc = c->lookup ? rl_dial_lookup_ended(c, now) : 0;
        if (rc) node_down(ns, c, rc, c->last_detail, now);
    }
}

void rl_nodes_start(rl_nodes_t *ns, rl_round_t *r, uint64_t now) {
    r->t0_us = now;
    for (size_t i = 0; i < ns->n && (!r->done || r->send_all); i++) submit(ns, r, i, now);
    if (rl_round_decided(r) && !r->done) finish_round(ns, r);
}

/* --------------------------------------------------------------- set-up */

int rl_nodes_init(rl_nodes_t *ns, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg, int notify_fd) {
    *ns = (rl_nodes_t){.cfg = *cfg};
    ns->conns = calloc(n, sizeof *ns->conns);
    for (size_t i = 0; ns->conns && i < n; i++, ns->n++) {
        rl_conn_t *c = &ns->conns[i];
        if (rl_conn_init(c, &uris[i], (int)i, cfg->max_inflight, notify_fd) < 0) break;
        rl_dial_init(c);
        if (c->uri.tls) {
            c->tls_ctx = cfg->tls_ctx;
            c->tls_name = cfg->tls_server_name;
            c->tls_verify = cfg->tls_verify;
        }
    }
    if (ns->n == n) return REDLOCK_OK;
    for (size_t i = ns->n; i < n; i++) rl_uri_clear(&uris[i]);
    return REDLOCK_ERR_NOMEM;
}

void rl_nodes_destroy(rl_nodes_t *ns) {
    for (size_t i = 0; ns->conns && i < ns->n; i++) {
        rl_dial_free(&ns->conns[i]); /* before the notify fd its lookups write closes */
        rl_conn_destroy(&ns->conns[i]);
    }
    free(ns->conns);
    ns->conns = NULL;
    ns->n = 0;
}
