/* ctx.c -- the context both drivers share (struct redlock in rl.h): set
 * up from validated options, and torn down. The driver then builds its
 * node set from rl_ctx_nodes_config and rl_ctx_parse_uris. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rl.h"
#include "tls.h"
#include "token.h"
#include "uri.h"

/* 1 when any node speaks TLS: a rediss scheme, or sentinels asked over TLS (sentinel_tls). */
static int uses_tls(const redlock_options_t *opt) {
    int tls = 0;
    for (size_t i = 0; i < opt->n_nodes && !tls; i++) {
        rl_uri_t u;
        char err[8];
        if (rl_uri_parse(opt->nodes[i], &u, err, sizeof err) != REDLOCK_OK) continue; /* (checked elsewhere) */
        tls = u.tls || u.sentinel_tls;
        rl_uri_clear(&u);
    }
    return tls;
}

/* How many of opt's nodes are whole Redis Clusters. */
static size_t count_clusters(const redlock_options_t *opt) {
    size_t n = 0;
    for (size_t i = 0; i < opt->n_nodes; i++)
        n +=
            !strncasecmp(opt->nodes[i], "redis+cluster://", 16) || !strncasecmp(opt->nodes[i], "rediss+cluster://", 17);
    return n;
}

/* Finds the embedded scripts the operations use. */
static void find_scripts(redlock_t *rl) {
    rl->s_release = rl_script_find("release");
    rl->s_extend = rl_script_find("extend");
    rl->s_acquire_multi = rl_script_find("acquire_multi");
    rl->s_release_multi = rl_script_find("release_multi");
    rl->s_extend_multi = rl_script_find("extend_multi");
    rl->s_acquire_wait = rl_script_find("acquire_wait");
    rl->s_line_leave = rl_script_find("line_leave");
    rl->s_fence_set = rl_script_find("fence_set");
    rl->s_fenced_set = rl_script_find("fenced_set");
    rl->s_acquire_permit = rl_script_find("acquire_permit");
    rl->s_release_permit = rl_script_find("release_permit");
    rl->s_acquire_shared = rl_script_find("acquire_shared");
    rl->s_extend_shared = rl_script_find("extend_shared");
    rl->s_release_shared = rl_script_find("release_shared");
    rl->s_acquire = rl_script_find("acquire");
}

int rl_ctx_init(redlock_t *rl, const redlock_options_t *opt, char *err, size_t errlen) {
    err[0] = 0;
    int rc = rl_options_check(opt, err, errlen);
    if (rc == REDLOCK_OK && rl_token_init() < 0) {
        snprintf(err, errlen, "libsodium failed to initialise");
        rc = REDLOCK_ERR_CONFIG;
    }
    if (rc != REDLOCK_OK) {
        if (opt && opt->log) opt->log(opt->log_arg, REDLOCK_LOG_ERROR, err);
        return rc;
    }
    rl->opt = *opt;
    if (rl->opt.retry_jitter_ms == REDLOCK_RETRY_JITTER_AUTO) /* half the delay, at most 100 ms */
        rl->opt.retry_jitter_ms = rl->opt.retry_delay_ms / 2 < 100 ? rl->opt.retry_delay_ms / 2 : 100;
    if (rl_joint_nodes(rl, opt) < 0) {
        snprintf(err, errlen, "out of memory");
        return REDLOCK_ERR_NOMEM;
    }
    opt = &rl->opt; /* both lists' nodes, from here on */
    if (rl_joint_fingerprint(rl) < 0) {
        snprintf(err, errlen, "out of memory");
        return REDLOCK_ERR_NOMEM;
    }
    rl->clock = rl_clock_monotonic_us;
    rl->log = (rl_logger_t){opt->log, opt->log_arg, opt->log_level};
    find_scripts(rl);
    rl_token_new(rl->line_id); /* (random: two handles never share a place in a line) */
    rl->cluster_nodes = count_clusters(opt);
    rl->pool_max = 64; /* a blocking handle's threads rarely hold more at once */
    pthread_mutex_init(&rl->held_mu, NULL);
    rl_map_init(&rl->held, 64);
    rl_map_init(&rl->waitq, 16);
    rl->mu_ready = 1;
    if (uses_tls(opt) && (rc = rl_tls_ctx_new(&rl->tls, opt, err, errlen)) != REDLOCK_OK) {
        if (opt->log) opt->log(opt->log_arg, REDLOCK_LOG_ERROR, err);
        return rc;
    }
    if (opt->stats && !(rl->stats = rl_stats_new(opt->n_nodes))) {
        snprintf(err, errlen, "out of memory");
        return REDLOCK_ERR_NOMEM;
    }
    return REDLOCK_OK;
}

void rl_ctx_destroy(redlock_t *rl) {
    rl_pool_free(rl);
    rl_map_destroy(&rl->held);
    rl_map_destroy(&rl->waitq);
    rl_tls_ctx_free(rl->tls);
    for (size_t i = 0; rl->node_names && i < rl->opt.n_nodes; i++) free(rl->node_names[i]);
    free(rl->node_names);
    free(rl->stats);
    if (rl->mu_ready) pthread_mutex_destroy(&rl->held_mu);
}

void rl_ctx_nodes_config(redlock_t *rl, rl_nodes_config_t *cfg) {
    *cfg = (rl_nodes_config_t){
        .connect_timeout_ms = rl->opt.connect_timeout_ms,
        .op_timeout_ms = rl->opt.op_timeout_ms,
        .node_down_ms = rl->opt.node_down_ms,
        .reconnect_min_ms = rl->opt.reconnect_min_ms,
        .reconnect_max_ms = rl->opt.reconnect_max_ms,
        .max_inflight = rl->opt.max_inflight,
        .probe_min_ms = rl->opt.probe_min_ms,
        .probe_max_ms = rl->opt.probe_max_ms,
        .grace_rtts = rl->opt.grace_rtts,
        .min_replicas = rl->opt.min_replicas,
        .clock = rl->clock,
        .log = rl->log,
        .tls_ctx = rl->tls,
        .tls_server_name = rl->opt.tls_server_name,
        .tls_verify = rl->opt.tls_verify_peer,
        .quarantine_ms = rl->opt.quarantine ? rl->opt.max_ttl_ms : 0,
        .jump_quarantine_ms = rl->opt.clock_jump_ms ? rl->opt.max_ttl_ms : 0,
        .clock_jump_ms = rl->opt.clock_jump_ms,
        .clock_check_ms = rl->opt.clock_check_ms,
        .stats = rl->stats,
        .notices = &rl->notices,
    };
    memcpy(cfg->fp, rl->fp, sizeof cfg->fp);
}

int rl_ctx_parse_uris(const redlock_t *rl, rl_uri_t *uris) {
    for (size_t i = 0; i < rl->opt.n_nodes; i++)
        if (rl_uri_parse(rl->opt.nodes[i], &uris[i], NULL, 0) != REDLOCK_OK) {
            while (i--) rl_uri_clear(&uris[i]);
            return REDLOCK_ERR_NOMEM; /* parsed fine during validation */
        }
    return REDLOCK_OK;
}
