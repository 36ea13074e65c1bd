/* group.c -- a Sentinel group as one node (see group.h): what its
 * sentinels and its master say, the promotion quarantine, and leaving a
 * master that is one no more (a failover announced, a READONLY reply, a
 * ROLE that disagrees). Plain nodes need none of it; a Redis Cluster
 * node's counterpart is route.c. */
#include "group.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "dial.h"
#include "failover.h"

int rl_group_quarantined(const rl_conn_t *c, uint64_t now, char *buf, size_t n) {
    const rl_node_t *nd = rl_node_of_const(c);
    int k = nd->group.replicas;
    snprintf(buf, n,
             "quarantined (its master was promoted %llu ms ago, failover epoch %llu: it may lack the last "
             "writes; votes counted after replication to %s %d replica%s would need no quarantine)",
             (unsigned long long)((now - nd->promoted_us) / 1000), (unsigned long long)nd->group.epoch,
             k == 1 ? "its" : "all its", k, k == 1 ? "" : "s");
    return 1;
}

int rl_group_open(rl_conn_t *c, uint64_t now) {
    static const char cmd[] = "*1\r\n$4\r\nROLE\r\n";
    return rl_conn_send(c, cmd, sizeof cmd - 1) == 0 && rl_conn_push(c, RL_REQ_ROLE, NULL, now, UINT64_MAX) ? 0 : -1;
}

/* What c's sentinels or its master's ROLE said (nd->group, nd->role_replicas)
 * starts or lifts the promotion quarantine. */
static void judge_promotion(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    const rl_group_info_t *g = &nd->group;
    uint32_t want = c->uri.replicas >= 0 ? (uint32_t)c->uri.replicas : cfg->min_replicas;
    int replicas = g->replicas > nd->role_replicas ? g->replicas : nd->role_replicas;
    nd->promoted_us = nd->promoted_until_us = 0;
    if (!cfg->quarantine_ms || !g->epoch || g->role_age_ms < 0 || (uint64_t)g->role_age_ms >= cfg->quarantine_ms)
        return;                                         /* never failed over, or long enough ago */
    if (want > 0 && want >= (uint32_t)replicas) return; /* every replica has what counted: none lacks a write */
    nd->promoted_us = now > (uint64_t)g->role_age_ms * 1000u ? now - (uint64_t)g->role_age_ms * 1000u : 0;
    nd->promoted_until_us = nd->promoted_us + (uint64_t)cfg->quarantine_ms * 1000u;
    rl_logf(&cfg->log, REDLOCK_LOG_WARN,
            "node %s: master %s promoted %lld ms ago (epoch %llu): no acquire vote for "
            "%llu ms",
            c->uri.display, g->master, (long long)g->role_age_ms, (unsigned long long)g->epoch,
            (unsigned long long)((nd->promoted_until_us - now) / 1000));
}

int rl_group_role(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *reply, uint64_t now, char *detail, size_t n) {
    rl_node_t *nd = rl_node_of(c);
    const redisReply *rep = reply;
    if (rep->type == REDIS_REPLY_ERROR) return 0; /* (ROLE refused by an ACL: the writes will tell) */
    const char *role = rep->type == REDIS_REPLY_ARRAY && rep->elements && rep->element[0]->type == REDIS_REPLY_STRING
                           ? rep->element[0]->str
                           : "?";
    if (strcmp(role, "master") != 0) {
        snprintf(detail, n, "%s (named by the sentinels of group %s) is a %s now: asking them again", c->addr,
                 c->uri.master, role);
        return REDLOCK_ERR_SERVER;
    }
    if (rep->elements >= 3 && rep->element[2]->type == REDIS_REPLY_ARRAY) {
        nd->role_replicas = (int)rep->element[2]->elements;
        judge_promotion(cfg, c, now);
    }
    return 0;
}

void rl_group_learnt(const rl_nodes_config_t *cfg, rl_conn_t *c, const rl_group_info_t *g, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    nd->group = *g;
    nd->group_at_us = now;
    judge_promotion(cfg, c, now);
}

void rl_group_news(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    char to[RL_ADDR_STRLEN], why[RL_DETAIL_LEN + 2 * RL_ADDR_STRLEN]; /* (cut to RL_DETAIL_LEN where kept) */
    uint32_t s = nd->feed ? rl_failover_feed_switches(nd->feed, to, sizeof to) : nd->switches_seen;
    if (s == nd->switches_seen) return;
    nd->switches_seen = s;
    if (!rl_dial_moved(c, to)) return; /* down, or already with the new master */
    snprintf(why, sizeof why, "the sentinels of group %.60s announced a failover to %s: leaving %s", c->uri.master, to,
             c->addr);
    ns->ops->down(ns, c, REDLOCK_ERR_IO, why, now);
}

int rl_group_readonly(rl_nodes_t *ns, rl_conn_t *c, const void *reply, uint64_t now) {
    const redisReply *rep = reply;
    if (rep->type != REDIS_REPLY_ERROR || strncmp(rep->str, "READONLY", 8)) return 0;
    ns->ops->down(ns, c, REDLOCK_ERR_SERVER,
                  "READONLY: the master its sentinels named is a replica now; asking them "
                  "again",
                  now);
    return 1;
}
