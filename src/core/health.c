/* health.c -- one node's health (see health.h): opening it, the engine's own
 * requests on it (SCRIPT LOAD, INFO server for restart quarantine, TIME for
 * clock-jump quarantine, the membership record's read) and their replies,
 * and its reconnect backoff. */
#include "health.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dial.h"
#include "group.h"
#include "nodeset.h"
#include "record.h"
#include "resp.h"
#include "scripts.h"
#include "failover.h"
#include "stats.h"

/* Starts following the sentinels' failover announcements of a Sentinel
 * group's node that is to (nd->follow), once. */
static void follow_group(rl_node_t *nd) {
    rl_conn_t *c = &nd->conn;
    if (!c->uri.sentinel || !nd->follow || nd->feed) return;
    rl_bio_tls_t tls = rl_dial_sentinel_tls(c);
    nd->feed = rl_failover_feed_start(&c->uri, &tls, c->notify_fd);
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
static void learn_uptime(const rl_nodes_config_t *cfg, rl_conn_t *c, const redisReply *rep, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    const char *p = rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "uptime_in_seconds:") : NULL;
    if (!p) return;
    uint64_t up_s = strtoull(p + 18, NULL, 10);
    uint64_t up_us = (up_s ? up_s - 1 : 0) * 1000000u;
    nd->restarted_us = now > up_us ? now - up_us : 0;
    nd->quarantine_until_us = nd->restarted_us + (uint64_t)cfg->quarantine_ms * 1000u;
    if (nd->quarantine_until_us > now)
        rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s restarted %llu ms ago: no acquire vote for %llu ms",
                c->uri.display, (unsigned long long)((now - nd->restarted_us) / 1000),
                (unsigned long long)((nd->quarantine_until_us - now) / 1000));
}

/* 1 when acquires should sample c's clock (detection is on and the node
 * has not refused TIME). */
static int clock_watched(const rl_nodes_config_t *cfg, const rl_conn_t *c) {
    const rl_node_t *nd = rl_node_of_const(c);
    return cfg->jump_quarantine_ms && !nd->time_refused;
}

/* Queues TIME on c, a sample of its clock, and schedules the next one.
 * Samples may overlap: replies come in order, and rl_clock_jump_us's
 * bounds hold for overlapping round trips. Returns 0/-1. */
static int queue_time(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    static const char cmd[] = "*1\r\n$4\r\nTIME\r\n";
    if (queue_internal(c, RL_REQ_TIME, cmd, sizeof cmd - 1, now) < 0) return -1;
    nd->time_due_us = now + (uint64_t)cfg->clock_check_ms * 1000u;
    return 0;
}

/* Takes a TIME reply (request queued at sent, answered now) as c's new
 * clock sample and compares it with the previous one: a jump beyond
 * clock_jump_ms quarantines c for jump_quarantine_ms, since the locks it
 * granted may have expired early (forward) or its TIME-based fencing
 * counters may repeat (backward). A node that refuses TIME is no longer
 * sampled. */
static void learn_time(const rl_nodes_config_t *cfg, rl_conn_t *c, const redisReply *rep, uint64_t sent, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    rl_clock_sample_t b = {.sent_us = sent, .recv_us = now, .valid = 1};
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_STRING ||
        rl_clock_parse_time(rep->element[0]->str, rep->element[1]->str, &b.node_us) < 0) {
        nd->time_refused = 1;
        rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s: TIME refused (%.80s): its clock is not watched", c->uri.display,
                rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        return;
    }
    int64_t jump = rl_clock_jump_us(&nd->tsample, &b, (uint64_t)cfg->clock_jump_ms * 1000u);
    nd->tsample = b;
    if (!jump) return;
    nd->jump_us = jump;
    nd->jumped_us = now;
    nd->jump_until_us = now + (uint64_t)cfg->jump_quarantine_ms * 1000u;
    rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s: clock jumped %+lld ms against ours: no acquire vote for %u ms",
            c->uri.display, (long long)(jump / 1000), cfg->jump_quarantine_ms);
}

/* Writes why c may not vote in an acquire now ("quarantined (restarted N
 * ms ago)" or "quarantined (clock jumped +N ms, M ms ago)") into buf;
 * returns 1 then, else 0. */
int rl_node_quarantined(const rl_conn_t *c, uint64_t now, char *buf, size_t n) {
    const rl_node_t *nd = rl_node_of_const(c);
    if (nd->quarantine_until_us > now) {
        snprintf(buf, n, "quarantined (restarted %llu ms ago)", (unsigned long long)((now - nd->restarted_us) / 1000));
        return 1;
    }
    if (nd->promoted_until_us > now && c->uri.sentinel) return rl_group_quarantined(c, now, buf, n);
    if (nd->promoted_until_us > now) {
        snprintf(buf, n, "quarantined (a replica promoted to shard primary %llu ms ago: it may lack the last writes)",
                 (unsigned long long)((now - nd->promoted_us) / 1000));
        return 1;
    }
    if (nd->inherited_until_us > now) {
        snprintf(buf, n, "quarantined (it took slots over from a quarantined shard, %llu ms more)",
                 (unsigned long long)((nd->inherited_until_us - now + 999) / 1000));
        return 1;
    }
    if (nd->jump_until_us > now) {
        snprintf(buf, n, "quarantined (clock jumped %+lld ms, %llu ms ago)", (long long)(nd->jump_us / 1000),
                 (unsigned long long)((now - nd->jumped_us) / 1000));
        return 1;
    }
    return 0;
}

int rl_node_open(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    if (now < c->retry_at_us) return c->last_err ? c->last_err : REDLOCK_ERR_IO;
    if (c->retry_at_us) rl_stats_reconnect(cfg->stats, (size_t)c->idx); /* it failed before */
    follow_group(nd);
    int rc = rl_dial_open(c, now, cfg->connect_timeout_ms);
    if (cfg->subscriber) return rc; /* a pub/sub connection: the handshake only */
    for (const rl_script_t *s = rl_scripts; rc == 0 && s->name; s++)
        if (queue_load(c, s, now) < 0) rc = REDLOCK_ERR_NOMEM;
    if (rc == 0 && rl_record_open(cfg, c, now) < 0) rc = REDLOCK_ERR_NOMEM;
    nd->quarantine_until_us = nd->restarted_us = 0; /* learnt afresh from this connection */
    if (rc == 0 && cfg->quarantine_ms && queue_info(c, now) < 0) rc = REDLOCK_ERR_NOMEM;
    if (rc == 0 && c->uri.sentinel && rl_group_open(c, now) < 0) rc = REDLOCK_ERR_NOMEM;
    /* a sample now: compared with the last one of an earlier connection, a jump while away counts */
    if (rc == 0 && clock_watched(cfg, c) && queue_time(cfg, c, now) < 0) rc = REDLOCK_ERR_NOMEM;
    if (rc == REDLOCK_ERR_NOMEM) snprintf(c->last_detail, sizeof c->last_detail, "out of memory");
    if (rc == 0) rl_logf(&cfg->log, REDLOCK_LOG_DEBUG, "connecting to node %s", c->uri.display);
    return rc;
}

int rl_node_sample_clock(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    return clock_watched(cfg, c) && now >= nd->time_due_us ? queue_time(cfg, c, now) : 0;
}

int rl_node_internal_reply(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *reply, uint64_t now, char *detail,
                           size_t n) {
    const redisReply *rep = reply;
    uint8_t kind = rl_conn_head(c)->kind;
    uint64_t sent = rl_conn_head(c)->sent_us;
    rl_conn_pop(c);
    if (kind == RL_REQ_TIME) learn_time(cfg, c, rep, sent, now);
    if (kind == RL_REQ_INFO && rep->type != REDIS_REPLY_ERROR) learn_uptime(cfg, c, rep, now);
    if (kind == RL_REQ_ROLE) return rl_group_role(cfg, c, rep, now, detail, n);
    if (kind == RL_REQ_RECORD) {
        rl_record_reply(cfg, c, rep, sent, now);
        return 0;
    }
    if (rep->type != REDIS_REPLY_ERROR || kind == RL_REQ_INFO || kind == RL_REQ_TIME || kind == RL_REQ_PROBE) return 0;
    if (kind == RL_REQ_LOAD) {
        rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s: SCRIPT LOAD failed: %.80s", c->uri.display, rep->str);
        return 0;
    }
    snprintf(detail, n, "%s refused: %.100s", kind == RL_REQ_AUTH ? "AUTH" : "SELECT", rep->str);
    return kind == RL_REQ_AUTH ? REDLOCK_ERR_AUTH : rl_error_code(rep->str);
}

void rl_node_close(const rl_nodes_config_t *cfg, rl_conn_t *c, int err, const char *detail, uint64_t now) {
    c->last_err = err;
    if (detail != c->last_detail) snprintf(c->last_detail, sizeof c->last_detail, "%s", detail);
    rl_conn_close(c);
    rl_node_t *nd = rl_node_of(c);
    nd->close_at_us = 0;
    nd->wait_owed = 0;
    nd->waits_out = 0;
    nd->nwaiting = 0; /* (the core failed their rounds' votes before closing) */
    c->stale = 1;     /* a name is looked up again before a later reconnect */
    if (c->backoff_ms < cfg->reconnect_min_ms) c->backoff_ms = cfg->reconnect_min_ms;
    c->retry_at_us = now + (uint64_t)c->backoff_ms * 1000u;
    rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s down (%s); next try in %u ms", c->uri.display, c->last_detail,
            c->backoff_ms);
    c->backoff_ms = c->backoff_ms * 2 > cfg->reconnect_max_ms ? cfg->reconnect_max_ms : c->backoff_ms * 2;
}
