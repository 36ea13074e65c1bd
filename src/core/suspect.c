/* suspect.c -- a silent node (see suspect.h): marked suspect when a
 * request of it gets no reply in time, probed with PINGs on a backoff,
 * and back in rounds the moment it answers anything. */
#include "suspect.h"

#include <stdio.h>

#include "health.h"
#include "nodetypes.h"
#include "stats.h"

void rl_suspect_answered(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    nd->close_at_us = 0; /* it answers: no close for a timeout is due */
    if (!nd->suspect) return;
    nd->suspect = 0;
    nd->probe_backoff_ms = 0;
    rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s answers again after %llu ms as suspect: back in rounds",
            c->uri.display, (unsigned long long)((now - nd->suspect_since_us) / 1000));
}

void rl_suspect_mark(const rl_nodes_config_t *cfg, rl_conn_t *c, const char *why, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    if (why != c->last_detail) snprintf(c->last_detail, sizeof c->last_detail, "%s", why);
    c->last_err = REDLOCK_ERR_TIMEOUT;
    if (nd->suspect) return;
    nd->suspect = 1;
    nd->suspect_since_us = now;
    nd->probe_backoff_ms = 0;
    rl_stats_suspected(cfg->stats, (size_t)c->idx);
    rl_logf(&cfg->log, REDLOCK_LOG_WARN, "node %s suspect (%s): rounds skip it until a probe answers", c->uri.display,
            c->last_detail);
}

int rl_suspect_probe(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    rl_stats_probe(cfg->stats, (size_t)c->idx);
    int rc = c->state == RL_CONN_DOWN ? rl_node_open(cfg, c, now) : 0;
    uint64_t deadline = now + (uint64_t)(cfg->connect_timeout_ms + cfg->op_timeout_ms) * 1000u;
    if (rc == 0 &&
        (rl_conn_send(c, ping, sizeof ping - 1) < 0 || !rl_conn_push(c, RL_REQ_PROBE, NULL, now, deadline))) {
        rc = REDLOCK_ERR_NOMEM;
        snprintf(c->last_detail, sizeof c->last_detail, "out of memory");
    }
    if (rc) nd->suspect = 0; /* it refuses (or failed): the plain reconnect backoff takes over */
    return rc;
}

void rl_suspect_probe_later(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    uint32_t wait = nd->probe_backoff_ms ? nd->probe_backoff_ms : cfg->probe_min_ms;
    nd->probe_backoff_ms = wait * 2 > cfg->probe_max_ms ? cfg->probe_max_ms : wait * 2;
    nd->probe_at_us = c->retry_at_us = now + (uint64_t)wait * 1000u;
}

void rl_suspect_why(const rl_conn_t *c, uint64_t now, char *buf, size_t n) {
    const rl_node_t *nd = rl_node_of_const(c);
    snprintf(buf, n, "suspect for %llu ms, skipped until a probe answers (%s)",
             (unsigned long long)((now - nd->suspect_since_us) / 1000), c->last_detail);
}
