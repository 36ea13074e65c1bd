/* redlock.c -- the redlock_t handle: creation, reports, argument checks,
 * and the round helpers the verbs (acquire.c, lifetime.c) share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"
#include "rl.h"
#include "timing.h"
#include "tls.h"
#include "token.h"
#include "uri.h"

/* ------------------------------------------------------------ lifecycle */

/* Copies the node URI strings so rl keeps nothing of the caller's. */
static int copy_nodes(redlock_t *rl, const redlock_options_t *opt) {
    rl->node_names = calloc(opt->n_nodes, sizeof *rl->node_names);
    if (!rl->node_names) return -1;
    for (size_t i = 0; i < opt->n_nodes; i++) {
        size_t len = strlen(opt->nodes[i]) + 1;
        if (!(rl->node_names[i] = malloc(len))) return -1;
        memcpy(rl->node_names[i], opt->nodes[i], len);
    }
    rl->opt.nodes = (const char *const *)rl->node_names;
    return 0;
}

/* Builds rl's engine from its (already validated) options. */
static int start_engine(redlock_t *rl) {
    rl_uri_t uris[REDLOCK_MAX_NODES];
    for (size_t i = 0; i < rl->opt.n_nodes; i++)
        if (rl_uri_parse(rl->opt.nodes[i], &uris[i], NULL, 0) != REDLOCK_OK) {
            while (i--) rl_uri_clear(&uris[i]);
            return REDLOCK_ERR_NOMEM; /* parsed fine during validation */
        }
    rl_engine_config_t cfg = {
        .connect_timeout_ms = rl->opt.connect_timeout_ms,
        .op_timeout_ms = rl->opt.op_timeout_ms,
        .node_down_ms = rl->opt.node_down_ms,
        .reconnect_min_ms = rl->opt.reconnect_min_ms,
        .reconnect_max_ms = rl->opt.reconnect_max_ms,
        .max_inflight = rl->opt.max_inflight,
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
    };
    return rl_engine_new(&rl->eng, uris, rl->opt.n_nodes, &cfg);
}

/* 1 when any node URI is rediss:// (scheme letters in any case). */
static int uses_tls(const redlock_options_t *opt) {
    for (size_t i = 0; i < opt->n_nodes; i++)
        if (!strncasecmp(opt->nodes[i], "rediss://", 9)) return 1;
    return 0;
}

int redlock_new_ex(redlock_t **out, const redlock_options_t *opt, char *err, size_t errlen) {
    char scratch[256];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, errlen, "out is NULL");
        return REDLOCK_ERR_INVALID;
    }
    *out = NULL;
    int rc = rl_options_check(opt, err, errlen);
    if (rc == REDLOCK_OK && rl_token_init() < 0) {
        snprintf(err, errlen, "libsodium failed to initialise");
        rc = REDLOCK_ERR_CONFIG;
    }
    if (rc != REDLOCK_OK) {
        if (opt && opt->log) opt->log(opt->log_arg, REDLOCK_LOG_ERROR, err);
        return rc;
    }
    redlock_t *rl = calloc(1, sizeof *rl);
    if (!rl) return REDLOCK_ERR_NOMEM;
    rl->opt = *opt;
    rl->clock = rl_clock_monotonic_us;
    rl->log = (rl_logger_t){opt->log, opt->log_arg, opt->log_level};
    rl->s_release = rl_script_find("release");
    rl->s_extend = rl_script_find("extend");
    rl->s_acquire_multi = rl_script_find("acquire_multi");
    rl->s_release_multi = rl_script_find("release_multi");
    rl->s_extend_multi = rl_script_find("extend_multi");
    rl->s_acquire_fenced = rl_script_find("acquire_fenced");
    rl->s_fence_set = rl_script_find("fence_set");
    rl->s_fenced_set = rl_script_find("fenced_set");
    pthread_mutex_init(&rl->held_mu, NULL);
    pthread_mutex_init(&rl->wd_start_mu, NULL);
    if (uses_tls(opt) && (rc = rl_tls_ctx_new(&rl->tls, opt, err, errlen)) != REDLOCK_OK) {
        if (opt->log) opt->log(opt->log_arg, REDLOCK_LOG_ERROR, err);
        redlock_free(rl);
        return rc;
    }
    if (opt->stats && !(rl->stats = rl_stats_new(opt->n_nodes))) {
        redlock_free(rl);
        snprintf(err, errlen, "out of memory");
        return REDLOCK_ERR_NOMEM;
    }
    if (copy_nodes(rl, opt) < 0 || start_engine(rl) != REDLOCK_OK) {
        redlock_free(rl);
        snprintf(err, errlen, "out of memory");
        return REDLOCK_ERR_NOMEM;
    }
    *out = rl;
    return REDLOCK_OK;
}

int redlock_new(redlock_t **out, const redlock_options_t *opt) {
    return redlock_new_ex(out, opt, NULL, 0);
}

void redlock_free(redlock_t *rl) {
    if (!rl) return;
    rl_watchdog_free(rl);
    rl_held_forget_all(rl);
    rl_engine_free(rl->eng);
    rl_tls_ctx_free(rl->tls);
    for (size_t i = 0; rl->node_names && i < rl->opt.n_nodes; i++) free(rl->node_names[i]);
    free(rl->node_names);
    free(rl->stats);
    pthread_mutex_destroy(&rl->held_mu);
    pthread_mutex_destroy(&rl->wd_start_mu);
    free(rl);
}

void rl_set_clock(redlock_t *rl, rl_clock_fn clock) {
    rl->clock = clock;
}

/* -------------------------------------------------------------- reports */

void rl_report_begin(const redlock_t *rl, redlock_report_t *rep) {
    if (!rep) return;
    rep->result = REDLOCK_OK;
    rep->attempts = 0;
    rep->n_nodes = rl ? rl->opt.n_nodes : 0;
    rep->quorum = rl ? redlock_quorum(rep->n_nodes) : 0;
    rep->yes = rep->no = rep->failed = 0;
    rep->elapsed_us = 0;
    rep->validity_ms = 0;
    rep->message[0] = '\0';
    for (size_t i = 0; i < rep->n_nodes; i++)
        rep->nodes[i] = (redlock_node_report_t){.node = rl_engine_node_name(rl->eng, i), .rtt_us = -1};
}

void rl_report_round(redlock_report_t *rep, const rl_round_t *r, uint64_t end_us) {
    if (!rep) return;
    rep->yes = r->yes;
    rep->no = r->no;
    rep->failed = r->failed;
    rep->elapsed_us = (int64_t)(end_us - r->t0_us);
}

int rl_report_end(const redlock_t *rl, redlock_report_t *rep, int rc, const char *msg) {
    if (msg && rl) rl_logf(&rl->log, REDLOCK_LOG_ERROR, "%s", msg);
    if (!rep) return rc;
    rep->result = rc;
    if (msg)
        snprintf(rep->message, sizeof rep->message, "%s", msg);
    else if (rc != REDLOCK_OK && !rep->message[0])
        snprintf(rep->message, sizeof rep->message, "%s: %zu yes, %zu no, %zu failed of %zu nodes (quorum %zu)",
                 redlock_strerror(rc), rep->yes, rep->no, rep->failed, rep->n_nodes, rep->quorum);
    return rc;
}

/* ---------------------------------------------------------------- checks */

int rl_check_ttl(const redlock_t *rl, uint32_t ttl_ms, char *msg, size_t n) {
    uint64_t drift_ms = (rl_drift_us(ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms) + 999) / 1000;
    if (ttl_ms == 0 || ttl_ms > INT32_MAX)
        return snprintf(msg, n, "ttl_ms=%u is out of range: it must be 1..%d", ttl_ms, INT32_MAX),
               REDLOCK_ERR_INVALID;
    if (rl->opt.max_ttl_ms && ttl_ms > rl->opt.max_ttl_ms)
        return snprintf(msg, n, "ttl_ms=%u exceeds max_ttl_ms=%u (the quarantines rely on it)", ttl_ms,
                        rl->opt.max_ttl_ms),
               REDLOCK_ERR_INVALID;
    if ((uint64_t)ttl_ms <= drift_ms + rl->opt.op_timeout_ms)
        return snprintf(msg, n, "ttl_ms=%u is too short to ever be valid: it must exceed drift (%llu ms) + "
                        "op_timeout_ms (%u ms)", ttl_ms, (unsigned long long)drift_ms, rl->opt.op_timeout_ms),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

/* Checks one resource name; returns 0 or INVALID with msg. */
static int check_resource(const char *res, size_t *len, char *msg, size_t n) {
    if (!res) return snprintf(msg, n, "resource is NULL"), REDLOCK_ERR_INVALID;
    *len = strnlen(res, REDLOCK_MAX_RESOURCE + 1);
    if (*len == 0) return snprintf(msg, n, "resource is empty"), REDLOCK_ERR_INVALID;
    if (*len > REDLOCK_MAX_RESOURCE)
        return snprintf(msg, n, "resource '%.40s...' is longer than %d bytes", res, REDLOCK_MAX_RESOURCE),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

int rl_check_keys(const rl_keys_t *keys, char *msg, size_t n) {
    if (keys->n == 0 || keys->n > REDLOCK_MAX_RESOURCES)
        return snprintf(msg, n, "%zu resources: a lock takes 1..%d", keys->n, REDLOCK_MAX_RESOURCES),
               REDLOCK_ERR_INVALID;
    for (size_t i = 0; i < keys->n; i++) {
        size_t len;
        int rc = check_resource(keys->k[i], &len, msg, n);
        if (rc) return rc;
        keys->len[i] = len;
        for (size_t j = 0; j < i; j++)
            if (keys->len[j] == len && !memcmp(keys->k[j], keys->k[i], len))
                return snprintf(msg, n, "resource '%.60s' appears twice in the set", keys->k[i]), REDLOCK_ERR_INVALID;
    }
    return REDLOCK_OK;
}

int rl_check_request(const redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, char *msg, size_t n) {
    int rc = rl_check_keys(keys, msg, n);
    return rc ? rc : rl_check_ttl(rl, ttl_ms, msg, n);
}

/* ---------------------------------------------------------------- rounds */

void rl_run_round(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens,
                  const rl_script_t *script, rl_classify_fn classify) {
    rl_cmd_t cmd;
    if (rl_cmd_build(&cmd, argc, argv, lens) < 0) {
        for (size_t i = 0; i < r->n; i++) rl_round_vote(r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1, "out of memory");
        r->t0_us = rl->clock();
        return;
    }
    r->cmd = cmd.data;
    r->cmd_len = cmd.len;
    r->classify = classify;
    r->script = script; /* the engine rebuilds the EVAL form from cmd on NOSCRIPT */
    rl_engine_run(rl->eng, r);
    rl_stats_round(rl->stats, rl->clock() - r->t0_us);
    rl_cmd_free(&cmd);
}

void rl_run_command(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens,
                    rl_classify_fn classify) {
    rl_run_round(rl, r, argc, argv, lens, NULL, classify);
}

void rl_run_script(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys,
                   const char *token, const char *extra) {
    rl_run_script_as(rl, r, script, keys, token, extra, rl_classify_int);
}

void rl_run_script_as(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys,
                      const char *token, const char *extra, rl_classify_fn classify) {
    const char *argv[REDLOCK_MAX_RESOURCES + 5];
    size_t lens[REDLOCK_MAX_RESOURCES + 5];
    char nkeys[8];
    int argc = 0;
    snprintf(nkeys, sizeof nkeys, "%zu", keys->n);
    argv[argc] = "EVALSHA", lens[argc++] = 7;
    argv[argc] = script->sha1, lens[argc++] = 40;
    argv[argc] = nkeys, lens[argc++] = strlen(nkeys);
    for (size_t i = 0; i < keys->n; i++) argv[argc] = keys->k[i], lens[argc++] = keys->len[i];
    argv[argc] = token, lens[argc++] = REDLOCK_TOKEN_LEN;
    if (extra) argv[argc] = extra, lens[argc++] = strlen(extra);
    rl_run_round(rl, r, argc, argv, lens, script, classify);
}

void rl_release_round(redlock_t *rl, rl_round_t *r, const rl_keys_t *keys, const char *token,
                      redlock_node_report_t *nodes) {
    rl_round_init(r, rl->opt.n_nodes, RL_STOP_RESOLVE, nodes);
    rl_run_script(rl, r, keys->n == 1 ? rl->s_release : rl->s_release_multi, keys, token, NULL);
}
