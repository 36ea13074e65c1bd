/* engine.c -- leader/follower poll loop over one pipelined connection per
 * node (see engine.h). Every function here runs with e->mu held, except
 * the poll() call itself, which the leader makes with the mutex released,
 * and the wake-ups of sleeping followers, which are posted after it is
 * released (unlock_and_wake): a woken follower whose round is done leaves
 * without taking the mutex, so it never wakes only to block on it. */
#define _GNU_SOURCE /* pipe2: the wake pipe is close-on-exec from the start */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "dial.h"
#include "resp.h"
#include "scripts.h"
#include "stats.h"

struct rl_engine {
    pthread_mutex_t mu;
    rl_conn_t *conns;
    size_t n;
    int leader;           /* 1 while a thread drives the poll loop */
    int wake_rd, wake_wr; /* self-pipe that interrupts the leader's poll */
    int wake_pending;     /* a byte is in (or on its way to) the wake pipe */
    int wake_write;       /* the thread releasing e->mu must write that byte */
    rl_round_t *waiters, *wtail; /* sleeping followers' rounds, oldest first */
    rl_round_t *woken;    /* rounds unlinked from waiters, to post once e->mu is released */
    rl_engine_config_t cfg;
    struct pollfd *pfd;   /* leader's scratch: n + 1 entries */
    unsigned *pgen;
};

/* ---------------------------------------------------------------- rounds */

/* Why a sleeping follower was woken. */
enum { RL_WAKE_NONE = 0, RL_WAKE_DONE, RL_WAKE_LEAD };

/* Appends r to the waiters list (the tail is the newest). */
static void link_waiter(rl_engine_t *e, rl_round_t *r) {
    r->wake = RL_WAKE_NONE;
    r->wnext = NULL;
    r->wprev = e->wtail;
    if (e->wtail)
        e->wtail->wnext = r;
    else
        e->waiters = r;
    e->wtail = r;
    r->linked = 1;
}

/* Removes r from the waiters list if it is there. */
static void unlink_waiter(rl_engine_t *e, rl_round_t *r) {
    if (!r->linked) return;
    if (r->wprev)
        r->wprev->wnext = r->wnext;
    else
        e->waiters = r->wnext;
    if (r->wnext)
        r->wnext->wprev = r->wprev;
    else
        e->wtail = r->wprev;
    r->wnext = r->wprev = NULL;
    r->linked = 0;
}

/* Unlinks the sleeping follower r and queues its wake-up (reason why);
 * the post happens in unlock_and_wake, after e->mu is released. */
static void queue_wake(rl_engine_t *e, rl_round_t *r, int why) {
    unlink_waiter(e, r);
    r->wake = why;
    r->wnext = e->woken;
    e->woken = r;
}

/* Releases e->mu, then posts every queued wake-up and writes the wake
 * pipe if asked to. A posted round may be gone as soon as its post is
 * made, so the next pointer is read first and the round not touched after. */
static void unlock_and_wake(rl_engine_t *e) {
    rl_round_t *w = e->woken;
    int write_pipe = e->wake_write;
    e->woken = NULL;
    e->wake_write = 0;
    pthread_mutex_unlock(&e->mu);
    if (write_pipe) {
        ssize_t n = write(e->wake_wr, "x", 1);
        (void)n;
    }
    while (w) {
        rl_round_t *next = w->wnext;
        sem_post(&w->sem);
        w = next;
    }
}

/* Marks r done, detaches its requests still owed a reply (their replies
 * will be dropped) and, if its thread sleeps as a follower, queues its
 * wake-up. */
static void finish_round(rl_engine_t *e, rl_round_t *r) {
    r->done = 1;
    for (size_t i = 0; i < r->n; i++) {
        if (r->vote[i] != REDLOCK_VOTE_NONE || r->slot[i] == RL_NO_SLOT) continue;
        rl_conn_t *c = &e->conns[i];
        rl_req_t *q = &c->q[r->slot[i]];
        if (q->round == r) q->round = NULL;
    }
    if (r->linked) queue_wake(e, r, RL_WAKE_DONE);
}

/* Records a vote and finishes the round if that decided it. */
static void vote(rl_engine_t *e, rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt,
                 const char *detail) {
    if (r->vote[i] == REDLOCK_VOTE_NONE) {
        rl_stats_vote(e->cfg.stats, i, v, err, rtt);
        if (r->nodes) /* the address this node's answer came over */
            memcpy(r->nodes[i].address, e->conns[i].addr, sizeof r->nodes[i].address);
    }
    if (rl_round_vote(r, i, v, err, rtt, detail)) finish_round(e, r);
}

/* ----------------------------------------------------------------- nodes */

/* Fails every waiting request of c with err/detail, closes the socket and
 * schedules the reconnect after the current backoff (which then doubles). */
static void node_down(rl_engine_t *e, rl_conn_t *c, int err, const char *detail, uint64_t now) {
    redlock_vote_t v = err == REDLOCK_ERR_TIMEOUT ? REDLOCK_VOTE_TIMEOUT : REDLOCK_VOTE_ERROR;
    c->last_err = err;
    if (detail != c->last_detail) snprintf(c->last_detail, sizeof c->last_detail, "%s", detail);
    for (uint32_t k = 0; k < c->qlen; k++) {
        rl_req_t *q = rl_conn_at(c, k);
        if (q->round) vote(e, q->round, (size_t)c->idx, v, err, -1, c->last_detail);
        q->round = NULL;
    }
    rl_conn_close(c);
    c->stale = 1; /* a name is looked up again before a later reconnect */
    if (c->backoff_ms < e->cfg.reconnect_min_ms) c->backoff_ms = e->cfg.reconnect_min_ms;
    c->retry_at_us = now + (uint64_t)c->backoff_ms * 1000u;
    rl_logf(&e->cfg.log, REDLOCK_LOG_WARN, "node %s down (%s); next try in %u ms", c->uri.display,
            c->last_detail, c->backoff_ms);
    c->backoff_ms = c->backoff_ms * 2 > e->cfg.reconnect_max_ms ? e->cfg.reconnect_max_ms : c->backoff_ms * 2;
}

/* Queues SCRIPT LOAD of script s on c (so EVALSHA finds it). Returns 0/-1. */
static int queue_load(rl_conn_t *c, const rl_script_t *s, uint64_t now) {
    const char *argv[3] = {"SCRIPT", "LOAD", s->text};
    size_t lens[3] = {6, 4, s->len};
    rl_cmd_t cmd;
    int rc = rl_cmd_build(&cmd, 3, argv, lens);
    if (rc == 0) rc = rl_conn_send(c, cmd.data, cmd.len);
    rl_cmd_free(&cmd);
    rl_req_t *q = rc == 0 ? rl_conn_push(c, RL_REQ_LOAD, NULL, now, UINT64_MAX) : NULL;
    if (q) q->script = s;
    return q ? 0 : -1;
}

/* Queues the engine's own request of the given kind (no round, no
 * deadline) with its encoded bytes. Returns 0/-1. */
static int queue_internal(rl_conn_t *c, uint8_t kind, const char *cmd, size_t len, uint64_t now) {
    return rl_conn_send(c, cmd, len) == 0 && rl_conn_push(c, kind, NULL, now, UINT64_MAX) ? 0 : -1;
}

/* Queues INFO server on c: its uptime tells whether the node restarted
 * recently (restart quarantine). Returns 0/-1. */
static int queue_info(rl_conn_t *c, uint64_t now) {
    static const char cmd[] = "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n";
    return queue_internal(c, RL_REQ_INFO, cmd, sizeof cmd - 1, now);
}

/* Learns from an INFO server reply when the node started; a node started
 * less than quarantine_ms ago is quarantined until then. Redis derives
 * uptime_in_seconds from whole-second clock readings, so it can overstate
 * the uptime by up to a second: one second is taken off, which errs on the
 * side of a longer quarantine. */
static void learn_uptime(rl_engine_t *e, rl_conn_t *c, const redisReply *rep, uint64_t now) {
    const char *p = rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "uptime_in_seconds:") : NULL;
    if (!p) return;
    uint64_t up_s = strtoull(p + 18, NULL, 10);
    uint64_t up_us = (up_s ? up_s - 1 : 0) * 1000000u;
    c->restarted_us = now > up_us ? now - up_us : 0;
    c->quarantine_until_us = c->restarted_us + (uint64_t)e->cfg.quarantine_ms * 1000u;
    if (c->quarantine_until_us > now)
        rl_logf(&e->cfg.log, REDLOCK_LOG_WARN, "node %s restarted %llu ms ago: no acquire vote for %llu ms",
                c->uri.display, (unsigned long long)((now - c->restarted_us) / 1000),
                (unsigned long long)((c->quarantine_until_us - now) / 1000));
}

/* 1 when acquires should sample c's clock (detection is on and the node
 * has not refused TIME). */
static int clock_watched(const rl_engine_t *e, const rl_conn_t *c) {
    return e->cfg.jump_quarantine_ms && !c->time_refused;
}

/* Queues TIME on c, a sample of its clock, and schedules the next one.
 * Samples may overlap: replies come in order, and rl_clock_jump_us's
 * bounds hold for overlapping round trips. Returns 0/-1. */
static int queue_time(rl_engine_t *e, rl_conn_t *c, uint64_t now) {
    static const char cmd[] = "*1\r\n$4\r\nTIME\r\n";
    if (queue_internal(c, RL_REQ_TIME, cmd, sizeof cmd - 1, now) < 0) return -1;
    c->time_due_us = now + (uint64_t)e->cfg.clock_check_ms * 1000u;
    return 0;
}

/* Takes a TIME reply (request queued at sent, answered now) as c's new
 * clock sample and compares it with the previous one: a jump beyond
 * clock_jump_ms quarantines c for jump_quarantine_ms, since the locks it
 * granted may have expired early (forward) or its TIME-based fencing
 * counters may repeat (backward). A node that refuses TIME is no longer
 * sampled. */
static void learn_time(rl_engine_t *e, rl_conn_t *c, const redisReply *rep, uint64_t sent, uint64_t now) {
    rl_clock_sample_t b = {.sent_us = sent, .recv_us = now, .valid = 1};
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_STRING ||
        rl_clock_parse_time(rep->element[0]->str, rep->element[1]->str, &b.node_us) < 0) {
        c->time_refused = 1;
        rl_logf(&e->cfg.log, REDLOCK_LOG_WARN, "node %s: TIME refused (%.80s): its clock is not watched",
                c->uri.display, rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        return;
    }
    int64_t jump = rl_clock_jump_us(&c->tsample, &b, (uint64_t)e->cfg.clock_jump_ms * 1000u);
    c->tsample = b;
    if (!jump) return;
    c->jump_us = jump;
    c->jumped_us = now;
    c->jump_until_us = now + (uint64_t)e->cfg.jump_quarantine_ms * 1000u;
    rl_logf(&e->cfg.log, REDLOCK_LOG_WARN, "node %s: clock jumped %+lld ms against ours: no acquire vote for %u ms",
            c->uri.display, (long long)(jump / 1000), e->cfg.jump_quarantine_ms);
}

/* Writes why c may not vote in an acquire now ("quarantined (restarted N
 * ms ago)" or "quarantined (clock jumped +N ms, M ms ago)") into buf;
 * returns 1 then, else 0. */
static int quarantined(const rl_conn_t *c, uint64_t now, char *buf, size_t n) {
    if (c->quarantine_until_us > now) {
        snprintf(buf, n, "quarantined (restarted %llu ms ago)", (unsigned long long)((now - c->restarted_us) / 1000));
        return 1;
    }
    if (c->jump_until_us > now) {
        snprintf(buf, n, "quarantined (clock jumped %+lld ms, %llu ms ago)", (long long)(c->jump_us / 1000),
                 (unsigned long long)((now - c->jumped_us) / 1000));
        return 1;
    }
    return 0;
}

/* Opens c if its backoff has passed: connect, handshake, script loads.
 * Returns 0 when c can take requests, else an error code (c stays down). */
static int node_open(rl_engine_t *e, rl_conn_t *c, uint64_t now) {
    if (now < c->retry_at_us) return c->last_err ? c->last_err : REDLOCK_ERR_IO;
    if (c->retry_at_us) rl_stats_reconnect(e->cfg.stats, (size_t)c->idx); /* it failed before */
    int rc = rl_dial_open(c, now, e->cfg.connect_timeout_ms);
    for (const rl_script_t *s = rl_scripts; rc == 0 && s->name; s++)
        if (queue_load(c, s, now) < 0) rc = REDLOCK_ERR_NOMEM;
    c->quarantine_until_us = c->restarted_us = 0; /* learnt afresh from this connection */
    if (rc == 0 && e->cfg.quarantine_ms && queue_info(c, now) < 0) rc = REDLOCK_ERR_NOMEM;
    /* a sample now: compared with the last one of an earlier connection, a jump while away counts */
    if (rc == 0 && clock_watched(e, c) && queue_time(e, c, now) < 0) rc = REDLOCK_ERR_NOMEM;
    if (rc) {
        char why[RL_DETAIL_LEN];
        snprintf(why, sizeof why, "%s", c->last_detail);
        node_down(e, c, rc, why, now);
        return rc;
    }
    rl_logf(&e->cfg.log, REDLOCK_LOG_DEBUG, "connecting to node %s", c->uri.display);
    return 0;
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
static void submit(rl_engine_t *e, rl_round_t *r, size_t i, uint64_t now) {
    rl_conn_t *c = &e->conns[i];
    rl_round_t *owner = r->done ? NULL : r;
    if (c->state == RL_CONN_DOWN) {
        int was_waiting = now < c->retry_at_us;
        int rc = node_open(e, c, now);
        if (rc) {
            char why[RL_DETAIL_LEN + 8];
            snprintf(why, sizeof why, "%s%s", was_waiting ? "down: " : "", c->last_detail);
            if (owner) vote(e, r, i, was_waiting ? REDLOCK_VOTE_DOWN : REDLOCK_VOTE_ERROR, rc, -1, why);
            return;
        }
    }
    if (owner && r->grants) {
        char why[96];
        if (quarantined(c, now, why, sizeof why)) { /* its grant would not count */
            vote(e, r, i, REDLOCK_VOTE_DOWN, REDLOCK_ERR_QUARANTINED, -1, why);
            return;
        }
        /* a clock sample goes just ahead of the grant, so a jump is judged before the grant counts */
        if (clock_watched(e, c) && now >= c->time_due_us && queue_time(e, c, now) < 0) {
            node_down(e, c, REDLOCK_ERR_NOMEM, "out of memory", now);
            return;
        }
    }
    uint64_t budget = (uint64_t)e->cfg.op_timeout_ms * 1000u;
    if (c->state == RL_CONN_CONNECTING || c->state == RL_CONN_RESOLVING)
        budget += (uint64_t)e->cfg.connect_timeout_ms * 1000u;
    rl_req_t *q = rl_conn_push(c, RL_REQ_USER, owner, now, now + budget);
    if (!q) {
        char why[96];
        snprintf(why, sizeof why, "too many requests in flight (%u)", c->qcap);
        if (owner) vote(e, r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_IO, -1, why);
        node_down(e, c, REDLOCK_ERR_IO, why, now);
        return;
    }
    q->script = r->script;
    if (owner) r->slot[i] = (c->qhead + c->qlen - 1) % c->qcap;
    int rc = rl_conn_send(c, r->cmd, r->cmd_len);
    size_t head, args;
    if (rc == 0 && r->script && evalsha_split(r->cmd, r->cmd_len, &head, &args)) {
        /* what the EVAL fallback is built from, kept with the request: it outlives the round */
        rc = rl_buf_append(&c->fb, r->cmd, head);
        if (rc == 0) rc = rl_buf_append(&c->fb, r->cmd + args, r->cmd_len - args);
        if (rc == 0) q->fb_len = (uint32_t)(head + r->cmd_len - args);
    }
    if (rc < 0) node_down(e, c, REDLOCK_ERR_NOMEM, "out of memory", now);
}

/* ---------------------------------------------------------------- replies */

/* NOSCRIPT for an EVALSHA (the node restarted or ran SCRIPT FLUSH): send
 * the request's EVAL form in its place with the same deadline and owner.
 * The EVAL form is built only now, from the EVALSHA's header and arguments
 * that submit() kept in c->fb (owned by the connection, not the round) and
 * the script's text, so it is sent even when the caller has moved on and
 * its round is gone: a release or extend still runs on every node. */
static void script_fallback(rl_engine_t *e, rl_conn_t *c, uint64_t now) {
    rl_req_t old = *rl_conn_head(c);
    if (!old.fb_len) {
        rl_conn_pop(c);
        if (old.round) vote(e, old.round, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_SERVER, -1, "NOSCRIPT");
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
        if (old.round) vote(e, old.round, (size_t)c->idx, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1, "out of memory");
        node_down(e, c, REDLOCK_ERR_NOMEM, "out of memory", now);
        return;
    }
    if (old.round) old.round->slot[c->idx] = (c->qhead + c->qlen - 1) % c->qcap;
}

/* Handles a handshake, SCRIPT LOAD, INFO or TIME reply. An AUTH or SELECT
 * error takes the node down with the node's own words. */
static void internal_reply(rl_engine_t *e, rl_conn_t *c, const redisReply *rep, uint64_t now) {
    uint8_t kind = rl_conn_head(c)->kind;
    uint64_t sent = rl_conn_head(c)->sent_us;
    rl_conn_pop(c);
    if (kind == RL_REQ_TIME) learn_time(e, c, rep, sent, now);
    if (kind == RL_REQ_INFO && rep->type != REDIS_REPLY_ERROR) learn_uptime(e, c, rep, now);
    if (rep->type != REDIS_REPLY_ERROR || kind == RL_REQ_INFO || kind == RL_REQ_TIME) return;
    char why[128];
    if (kind == RL_REQ_LOAD) {
        rl_logf(&e->cfg.log, REDLOCK_LOG_WARN, "node %s: SCRIPT LOAD failed: %.80s", c->uri.display, rep->str);
        return;
    }
    snprintf(why, sizeof why, "%s refused: %.100s", kind == RL_REQ_AUTH ? "AUTH" : "SELECT", rep->str);
    node_down(e, c, kind == RL_REQ_AUTH ? REDLOCK_ERR_AUTH : rl_error_code(rep->str), why, now);
}

/* Matches one reply to the request at the head of c's queue. */
static void handle_reply(rl_engine_t *e, rl_conn_t *c, const redisReply *rep, uint64_t now) {
    rl_req_t *q = rl_conn_head(c);
    if (!q) {
        node_down(e, c, REDLOCK_ERR_IO, "reply with no request waiting", now);
        return;
    }
    if (q->kind != RL_REQ_USER) {
        internal_reply(e, c, rep, now);
        return;
    }
    if (rep->type == REDIS_REPLY_ERROR && q->script && !strncmp(rep->str, "NOSCRIPT", 8)) {
        script_fallback(e, c, now);
        return;
    }
    rl_round_t *r = q->round;
    int64_t rtt = (int64_t)(now - q->sent_us);
    rl_conn_pop(c);
    c->backoff_ms = e->cfg.reconnect_min_ms; /* the node works: reset its backoff */
    if (!r) return;
    if (r->on_reply) r->on_reply(r->reply_arg, (size_t)c->idx, rep);
    int err = REDLOCK_OK;
    char detail[RL_DETAIL_LEN] = "";
    redlock_vote_t v = r->classify(rep, &err, detail, sizeof detail);
    if (v == REDLOCK_VOTE_YES && r->grants && quarantined(c, now, detail, sizeof detail)) {
        v = REDLOCK_VOTE_DOWN; /* a grant from a node that may have lost its data: the clean-up releases it */
        err = REDLOCK_ERR_QUARANTINED;
    }
    vote(e, r, (size_t)c->idx, v, err, rtt, detail);
}

/* Reads from c and handles every complete reply; a read error or EOF is
 * handled after the replies that arrived before it. */
static void node_readable(rl_engine_t *e, rl_conn_t *c, uint64_t now) {
    int rc = rl_conn_read(c, now);
    char why[RL_DETAIL_LEN];
    snprintf(why, sizeof why, "%s", c->last_detail);
    while (c->state != RL_CONN_DOWN) {
        void *rep = NULL;
        if (redisReaderGetReply(c->reader, &rep) != REDIS_OK) {
            snprintf(why, sizeof why, "protocol error: %.100s", rl_reader_error(c->reader, &c->arena));
            node_down(e, c, REDLOCK_ERR_IO, why, now);
            return;
        }
        if (!rep) break;
        handle_reply(e, c, rep, now);
        rl_arena_reset(&c->arena); /* the reply is done with: reuse its memory */
    }
    if (rc && c->state != RL_CONN_DOWN) node_down(e, c, rc, why, now);
}

/* ------------------------------------------------------------- deadlines */

/* Times out requests past their deadline (their slot stays, so the late
 * reply is dropped), and takes down nodes whose connect took too long or
 * that stayed silent for node_down_ms while owing replies. A node's queue
 * is scanned only once its due_us (a lower bound of its requests'
 * deadlines, kept by rl_conn_push) has passed; the scan then sets due_us to
 * the exact earliest deadline left, so the scans are about one per
 * op_timeout_ms per node instead of one per loop turn. Deadlines are not
 * monotonic along a queue (connect budgets, EVAL fallbacks re-queued with
 * their original deadline), which a lower bound does not need. */
static void expire(rl_engine_t *e, uint64_t now) {
    for (size_t i = 0; i < e->n; i++) {
        rl_conn_t *c = &e->conns[i];
        if (c->state == RL_CONN_DOWN) continue;
        if (c->state == RL_CONN_RESOLVING && now >= c->connect_deadline_us) {
            char why[RL_DETAIL_LEN];
            snprintf(why, sizeof why, "lookup of %s timed out (no answer within %u ms)", c->uri.host,
                     e->cfg.connect_timeout_ms);
            node_down(e, c, REDLOCK_ERR_TIMEOUT, why, now);
            continue;
        }
        if (c->state == RL_CONN_CONNECTING && now >= c->addr_deadline_us) {
            int rc = rl_dial_next(c, now,
                                  c->ssl ? "TLS handshake timed out (no TLS answer: a plain-text port? use redis://)"
                                         : "timed out",
                                  1);
            if (rc) node_down(e, c, rc, c->last_detail, now);
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
                vote(e, r, i, REDLOCK_VOTE_TIMEOUT, REDLOCK_ERR_TIMEOUT, -1, why);
            }
            c->due_us = due;
        }
        rl_req_t *h = rl_conn_head(c);
        uint64_t quiet_since = h ? (h->sent_us > c->last_rx_us ? h->sent_us : c->last_rx_us) : now;
        if (h && now - quiet_since >= (uint64_t)e->cfg.node_down_ms * 1000u) {
            char why[64];
            snprintf(why, sizeof why, "silent for %u ms with %u replies owed", e->cfg.node_down_ms, c->qlen);
            node_down(e, c, REDLOCK_ERR_TIMEOUT, why, now);
        }
    }
}

/* Returns the poll timeout in ms until the next deadline of any kind. */
static int next_timeout_ms(rl_engine_t *e, uint64_t now) {
    uint64_t next = now + 1000000u;
    for (size_t i = 0; i < e->n; i++) {
        rl_conn_t *c = &e->conns[i];
        if (c->state == RL_CONN_DOWN) continue;
        if (c->state == RL_CONN_RESOLVING && c->connect_deadline_us < next) next = c->connect_deadline_us;
        if (c->state == RL_CONN_CONNECTING && c->addr_deadline_us < next) next = c->addr_deadline_us;
        if (c->due_us < next) next = c->due_us; /* an early bound costs one extra wake-up at most */
        rl_req_t *h = rl_conn_head(c);
        if (h) {
            uint64_t quiet = (h->sent_us > c->last_rx_us ? h->sent_us : c->last_rx_us) +
                             (uint64_t)e->cfg.node_down_ms * 1000u;
            if (quiet < next) next = quiet;
        }
    }
    return next <= now ? 0 : (int)((next - now + 999u) / 1000u);
}

/* -------------------------------------------------------------- the loop */

/* Writes pending output of every open node; write errors take it down. */
static void flush_all(rl_engine_t *e, uint64_t now) {
    for (size_t i = 0; i < e->n; i++) {
        rl_conn_t *c = &e->conns[i];
        if (c->state != RL_CONN_READY || !rl_buf_pending(&c->out)) continue;
        int rc = rl_conn_flush(c);
        if (rc) node_down(e, c, rc, c->last_detail, now);
    }
}

/* Fills e->pfd for every open node plus the wake pipe; returns the count. */
static nfds_t build_pollset(rl_engine_t *e) {
    nfds_t k = 0;
    for (size_t i = 0; i < e->n; i++) {
        rl_conn_t *c = &e->conns[i];
        if (c->fd < 0) continue;
        short ev = POLLIN;
        if (c->state == RL_CONN_CONNECTING)
            ev |= c->tcp_up ? c->want : POLLOUT;
        else if (rl_buf_pending(&c->out))
            ev |= POLLOUT;
        e->pfd[k] = (struct pollfd){.fd = c->fd, .events = ev, .revents = 0};
        e->pgen[k] = (unsigned)i;
        k++;
    }
    e->pfd[k] = (struct pollfd){.fd = e->wake_rd, .events = POLLIN, .revents = 0};
    return k + 1;
}

/* Handles poll's events for pollset entry k (node pgen[k] at generation gen). */
static void node_events(rl_engine_t *e, rl_conn_t *c, short rev, uint64_t now) {
    if (c->state == RL_CONN_CONNECTING) {
        if (!c->tcp_up && !(rev & (POLLOUT | POLLERR | POLLHUP))) return; /* connect still in progress */
        int rc = rl_conn_finish_connect(c);
        if (rc < 0 && (rc = rl_dial_next(c, now, c->last_detail, 0)) != 0) { /* every address failed */
            node_down(e, c, rc, c->last_detail, now);
            return;
        }
        /* READY: the next turn writes what waited for the connection; else a
         * TLS handshake or the next address goes on */
        if (c->state == RL_CONN_READY) c->last_rx_us = now;
        return;
    }
    if (rev & (POLLIN | POLLERR | POLLHUP)) node_readable(e, c, now);
}

/* Picks up the lookups that have ended: a RESOLVING node starts
 * connecting, or goes down with the resolver's reason. */
static void lookups_ended(rl_engine_t *e, uint64_t now) {
    for (size_t i = 0; i < e->n; i++) {
        rl_conn_t *c = &e->conns[i];
        int rc = c->lookup ? rl_dial_lookup_ended(c, now) : 0;
        if (rc) node_down(e, c, rc, c->last_detail, now);
    }
}

/* Drives I/O for every waiting round until r is decided. Each turn does
 * the I/O first and judges deadlines after, so a reply (or a finished
 * connect) that arrived while no thread was polling is read before anyone
 * is declared late. Leaves with the leader role released. */
static void lead(rl_engine_t *e, rl_round_t *r) {
    e->leader = 1;
    while (!r->done) {
        uint64_t now = e->cfg.clock();
        flush_all(e, now);
        nfds_t np = build_pollset(e);
        unsigned gens[REDLOCK_MAX_NODES];
        for (nfds_t k = 0; k + 1 < np; k++) gens[k] = e->conns[e->pgen[k]].gen;
        int timeout = next_timeout_ms(e, now);
        unlock_and_wake(e);
        int nready = poll(e->pfd, np, timeout);
        pthread_mutex_lock(&e->mu);
        now = e->cfg.clock();
        if (nready > 0 && e->pfd[np - 1].revents) {
            char drain[64];
            while (read(e->wake_rd, drain, sizeof drain) > 0) {
            }
            e->wake_pending = 0;
            lookups_ended(e, now); /* lookup threads write the pipe too */
        }
        for (nfds_t k = 0; nready > 0 && k + 1 < np; k++) {
            rl_conn_t *c = &e->conns[e->pgen[k]];
            if (e->pfd[k].revents && c->gen == gens[k] && c->fd >= 0) node_events(e, c, e->pfd[k].revents, now);
        }
        expire(e, now);
    }
    flush_all(e, e->cfg.clock()); /* e.g. an EVAL fallback queued by the last replies */
    e->leader = 0;
}

/* Asks for the leader's poll to be woken, so it sees newly queued output;
 * the pipe is written once e->mu is released (unlock_and_wake). */
static void wake_leader(rl_engine_t *e) {
    if (!e->leader || e->wake_pending) return;
    e->wake_pending = 1;
    e->wake_write = 1;
}

/* Sleeps until the leader posts r->sem; returns with e->mu released and
 * r->wake saying why (DONE: r is decided; LEAD: the leader role is free). */
static void sleep_round(rl_engine_t *e, rl_round_t *r) {
    link_waiter(e, r);
    unlock_and_wake(e);
    while (sem_wait(&r->sem) != 0 && errno == EINTR) {
    }
}

void rl_engine_run(rl_engine_t *e, rl_round_t *r) {
    sem_init(&r->sem, 0, 0);
    pthread_mutex_lock(&e->mu);
    uint64_t now = e->cfg.clock();
    r->t0_us = now;
    for (size_t i = 0; i < e->n && (!r->done || r->send_all); i++) submit(e, r, i, now);
    if (rl_round_decided(r) && !r->done) finish_round(e, r);
    if (r->done) { /* decided at submission: what was queued must still leave */
        if (e->leader)
            wake_leader(e);
        else
            flush_all(e, now);
    } else if (e->leader) {
        wake_leader(e);
        for (;;) {
            sleep_round(e, r);
            if (r->wake == RL_WAKE_DONE) { /* decided: leave without the mutex */
                sem_destroy(&r->sem);
                return;
            }
            pthread_mutex_lock(&e->mu); /* handed the leader role */
            if (r->done || !e->leader) break;
            /* a caller that arrived meanwhile took the role: sleep again */
        }
    }
    if (!r->done) lead(e, r);
    /* Whoever leaves with no leader left hands the role to the oldest waiter. */
    if (!e->leader && e->waiters) queue_wake(e, e->waiters, RL_WAKE_LEAD);
    unlock_and_wake(e);
    sem_destroy(&r->sem);
}

/* --------------------------------------------------------------- set-up */

int rl_engine_new(rl_engine_t **out, rl_uri_t *uris, size_t n, const rl_engine_config_t *cfg) {
    *out = NULL;
    rl_engine_t *e = calloc(1, sizeof *e);
    if (!e) return REDLOCK_ERR_NOMEM;
    e->cfg = *cfg;
    e->wake_rd = e->wake_wr = -1;
    pthread_mutex_init(&e->mu, NULL);
    int fds[2];
    e->conns = calloc(n, sizeof *e->conns);
    e->pfd = calloc(n + 1, sizeof *e->pfd);
    e->pgen = calloc(n + 1, sizeof *e->pgen);
    if (!e->conns || !e->pfd || !e->pgen || pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) goto fail;
    e->wake_rd = fds[0];
    e->wake_wr = fds[1];
    for (size_t i = 0; i < n; i++, e->n++) {
        rl_conn_t *c = &e->conns[i];
        if (rl_conn_init(c, &uris[i], (int)i, cfg->max_inflight, e->wake_wr) < 0) goto fail;
        rl_dial_init(c);
        if (c->uri.tls) {
            c->tls_ctx = cfg->tls_ctx;
            c->tls_name = cfg->tls_server_name;
            c->tls_verify = cfg->tls_verify;
        }
    }
    *out = e;
    return REDLOCK_OK;
fail:
    for (size_t i = 0; i < n; i++) rl_uri_clear(&uris[i]);
    rl_engine_free(e);
    return REDLOCK_ERR_NOMEM;
}

void rl_engine_free(rl_engine_t *e) {
    if (!e) return;
    for (size_t i = 0; i < e->n; i++) {
        rl_dial_free(&e->conns[i]); /* before the wake pipe its lookups write closes */
        rl_conn_destroy(&e->conns[i]);
    }
    if (e->wake_rd >= 0) close(e->wake_rd);
    if (e->wake_wr >= 0) close(e->wake_wr);
    pthread_mutex_destroy(&e->mu);
    free(e->conns);
    free(e->pfd);
    free(e->pgen);
    free(e);
}

const char *rl_engine_node_name(const rl_engine_t *e, size_t i) {
    return e->conns[i].uri.display;
}

size_t rl_engine_size(const rl_engine_t *e) {
    return e->n;
}

uint32_t rl_engine_node_lookups(rl_engine_t *e, size_t i) {
    pthread_mutex_lock(&e->mu);
    uint32_t n = e->conns[i].lookups;
    pthread_mutex_unlock(&e->mu);
    return n;
}
