/* record.c -- a node's membership record as a handle sees it (record.h). */
#include "record.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "membership.h"

/* 1 when the handle checks records on c: it has a fingerprint, and c is
 * a plain node's (a cluster's keys live in slots a script cannot reach). */
static int checked(const rl_nodes_config_t *cfg, const rl_conn_t *c) {
    return cfg->fp[0] && !cfg->subscriber && !c->whole_cmds;
}

/* The handle's count of announced steps (0 without one). */
static unsigned heard(const rl_nodes_config_t *cfg) {
    return cfg->notices ? atomic_load_explicit(&cfg->notices->heard, memory_order_relaxed) : 0u;
}

/* Queues HGETALL of the record on c and schedules the next read. */
static int queue_read(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    static const char cmd[] = "*2\r\n$7\r\nHGETALL\r\n$18\r\n" RL_MEMBERSHIP_KEY "\r\n";
    _Static_assert(sizeof RL_MEMBERSHIP_KEY - 1 == 18, "the record key's length in cmd");
    if (rl_conn_send(c, cmd, sizeof cmd - 1) < 0 || !rl_conn_push(c, RL_REQ_RECORD, NULL, now, UINT64_MAX)) return -1;
    rl_node_of(c)->record_due_us = now + RL_RECORD_REFRESH_MS * 1000u / 2;
    rl_node_of(c)->notices_seen = heard(cfg);
    return 0;
}

int rl_record_open(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    int was_denied = nd->record == RL_RECORD_DENIED;
    nd->record = RL_RECORD_UNKNOWN;
    nd->bare_until_us = 0;
    if (!checked(cfg, c)) return 0;
    int rc = queue_read(cfg, c, now);
    if (was_denied && rc == 0) nd->record = RL_RECORD_DENIED; /* (until the read says otherwise: logged once) */
    return rc;
}

int rl_record_form(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now, char *buf, size_t n) {
    rl_node_t *nd = rl_node_of(c);
    if (!checked(cfg, c) || nd->record == RL_RECORD_DENIED) return RL_FORM_BARE;
    if (nd->notices_seen != heard(cfg)) { /* a step was announced: read again now, and guard meanwhile */
        nd->record_due_us = 0;
        nd->bare_until_us = 0;
    }
    if (now >= nd->record_due_us && queue_read(cfg, c, now) < 0) return RL_FORM_NOMEM;
    if (nd->record == RL_RECORD_NONE && now < nd->bare_until_us) return RL_FORM_BARE;
    if (nd->record == RL_RECORD_UNREADABLE) {
        snprintf(buf, n, "membership record cannot be read (%s): no vote until it is fixed", nd->record_why);
        return RL_FORM_REFUSED;
    }
    return RL_FORM_GUARDED;
}

/* A record was read: the driver is to listen for the steps' announcements
 * (once; a handle that never meets a record listens for nothing). */
static void want_watch(const rl_nodes_config_t *cfg) {
    int none = RL_WATCH_NONE;
    if (cfg->notices) atomic_compare_exchange_strong(&cfg->notices->found, &none, RL_WATCH_WANTED);
}

int rl_record_claim_watch(rl_notices_t *n) {
    int wanted = RL_WATCH_WANTED;
    return atomic_load_explicit(&n->found, memory_order_relaxed) == RL_WATCH_WANTED &&
           atomic_compare_exchange_strong(&n->found, &wanted, RL_WATCH_ON);
}

/* c's record is unreadable for the reason given. */
static void unreadable(const rl_nodes_config_t *cfg, rl_conn_t *c, const char *why) {
    rl_node_t *nd = rl_node_of(c);
    want_watch(cfg);
    if (nd->record != RL_RECORD_UNREADABLE)
        rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s: membership record cannot be read (%s): it votes in no grant",
                c->uri.display, why);
    nd->record = RL_RECORD_UNREADABLE;
    snprintf(nd->record_why, sizeof nd->record_why, "%.*s", (int)sizeof nd->record_why - 1, why);
}

void rl_record_reply(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *reply, uint64_t sent, uint64_t now) {
    const redisReply *rep = reply;
    rl_node_t *nd = rl_node_of(c);
    const char *fields[2 * RL_RECORD_FIELDS + 8];
    size_t lens[2 * RL_RECORD_FIELDS + 8];
    char err[160];
    (void)now;
    if (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOPERM", 6)) {
        if (nd->record != RL_RECORD_DENIED)
            rl_logf(&cfg->log, REDLOCK_LOG_WARN,
                    "node %s: its ACL denies reading the membership record (%.80s): no record is checked there",
                    c->uri.display, rep->str);
        nd->record = RL_RECORD_DENIED;
        return;
    }
    if (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "WRONGTYPE", 9)) {
        unreadable(cfg, c, "the key is not a hash");
        return;
    }
    if (rep->type == REDIS_REPLY_ERROR) { /* NOAUTH, LOADING ...: not the record's fault; the guard decides */
        nd->record = RL_RECORD_UNKNOWN;
        return;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements > sizeof fields / sizeof fields[0]) {
        unreadable(cfg, c, rep->type != REDIS_REPLY_ARRAY ? "not a hash" : "too many fields");
        return;
    }
    for (size_t i = 0; i < rep->elements; i++) {
        if (rep->element[i]->type != REDIS_REPLY_STRING) {
            unreadable(cfg, c, "a field is not a string");
            return;
        }
        fields[i] = rep->element[i]->str;
        lens[i] = rep->element[i]->len;
    }
    rl_record_t rec;
    if (rl_record_parse(fields, lens, rep->elements, &rec, err, sizeof err) < 0) {
        unreadable(cfg, c, err);
        return;
    }
    nd->record = rec.phase == RL_PHASE_NONE ? RL_RECORD_NONE : RL_RECORD_SOME;
    nd->bare_until_us = nd->record == RL_RECORD_NONE ? sent + RL_RECORD_REFRESH_MS * 1000u : 0;
    if (nd->record == RL_RECORD_SOME) want_watch(cfg);
}
