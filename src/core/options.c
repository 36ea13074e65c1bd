/* options.c -- defaults and validation of redlock_options_t. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rl.h"
#include "uri.h"

void redlock_options_init(redlock_options_t *opt) {
    if (!opt) return;
    memset(opt, 0, sizeof *opt);
    opt->connect_timeout_ms = 100;
    opt->op_timeout_ms = 50;
    opt->drift_factor = 0.01;
    opt->drift_min_ms = 2;
    opt->retry_count = 3;
    opt->retry_delay_ms = 200;
    opt->retry_jitter_ms = REDLOCK_RETRY_JITTER_AUTO;
    opt->node_down_ms = 1000;
    opt->reconnect_min_ms = 50;
    opt->reconnect_max_ms = 1000;
    opt->max_inflight = 4096;
    opt->log_level = REDLOCK_LOG_WARN;
    opt->reentrant = 1;
    opt->tls_verify_peer = 1;
    opt->quarantine = 1;
    opt->clock_jump_ms = 100;
    opt->clock_check_ms = 1000;
    opt->stats = 1;
    opt->probe_min_ms = 50;
    opt->probe_max_ms = 1000;
    opt->grace_rtts = 4;
}

/* Writes "name=value must be ..." into err when v is outside [lo, hi].
 * Returns 1 if it was out of range. */
static int out_of_range(const char *name, uint64_t v, uint64_t lo, uint64_t hi, char *err, size_t n) {
    if (v >= lo && v <= hi) return 0;
    snprintf(err, n, "%s=%llu is out of range: it must be %llu..%llu", name, (unsigned long long)v,
             (unsigned long long)lo, (unsigned long long)hi);
    return 1;
}

/* Checks the numeric options; returns 0 or REDLOCK_ERR_CONFIG. */
static int check_numbers(const redlock_options_t *o, char *err, size_t n) {
    if (out_of_range("connect_timeout_ms", o->connect_timeout_ms, 1, 60000, err, n) ||
        out_of_range("op_timeout_ms", o->op_timeout_ms, 1, 60000, err, n) ||
        out_of_range("drift_min_ms", o->drift_min_ms, 0, 60000, err, n) ||
        out_of_range("retry_delay_ms", o->retry_delay_ms, 0, 3600000, err, n) ||
        (o->retry_jitter_ms != REDLOCK_RETRY_JITTER_AUTO &&
         out_of_range("retry_jitter_ms", o->retry_jitter_ms, 0, o->retry_delay_ms, err, n)) ||
        out_of_range("node_down_ms", o->node_down_ms, o->op_timeout_ms, 3600000, err, n) ||
        out_of_range("reconnect_min_ms", o->reconnect_min_ms, 1, 60000, err, n) ||
        out_of_range("reconnect_max_ms", o->reconnect_max_ms, o->reconnect_min_ms, 600000, err, n) ||
        out_of_range("max_inflight", o->max_inflight, 1, 1000000, err, n) ||
        out_of_range("clock_jump_ms", o->clock_jump_ms, 0, 3600000, err, n) ||
        out_of_range("clock_check_ms", o->clock_check_ms, 0, 3600000, err, n) ||
        out_of_range("probe_min_ms", o->probe_min_ms, 1, 60000, err, n) ||
        out_of_range("probe_max_ms", o->probe_max_ms, o->probe_min_ms, 600000, err, n) ||
        out_of_range("grace_rtts", o->grace_rtts, 1, 1000, err, n) ||
        out_of_range("min_replicas", o->min_replicas, 0, 1000, err, n) ||
        out_of_range("lock_delay_ms", o->lock_delay_ms, 0, 3600000, err, n))
        return REDLOCK_ERR_CONFIG;
    if (o->lock_delay_ms && o->fencing) {
        snprintf(err, n,
                 "lock_delay_ms=%u cannot be used with fencing: fenced locks have no lock-delay (their tokens "
                 "protect the resource instead)",
                 o->lock_delay_ms);
        return REDLOCK_ERR_CONFIG;
    }
    if (o->log_level < REDLOCK_LOG_ERROR || o->log_level > REDLOCK_LOG_DEBUG) {
        snprintf(err, n, "log_level=%d is out of range: it must be %d..%d", o->log_level, REDLOCK_LOG_ERROR,
                 REDLOCK_LOG_DEBUG);
        return REDLOCK_ERR_CONFIG;
    }
    if (!(o->drift_factor >= 0.0 && o->drift_factor <= 0.5)) { /* also rejects NaN */
        snprintf(err, n, "drift_factor=%g is out of range: it must be 0..0.5", o->drift_factor);
        return REDLOCK_ERR_CONFIG;
    }
    return REDLOCK_OK;
}

/* Parses list (n URIs, named what in messages) into u and rejects two that
 * name the same server. Returns 0, with every entry of u to clear, or
 * REDLOCK_ERR_CONFIG with err set and nothing left to clear. */
static int parse_list(const char *what, const char *const *list, size_t n, rl_uri_t *u, char *err, size_t errlen) {
    if (n > REDLOCK_MAX_NODES) {
        snprintf(err, errlen, "n_%s=%zu is out of range: at most %d nodes", what, n, REDLOCK_MAX_NODES);
        return REDLOCK_ERR_CONFIG;
    }
    size_t parsed = 0;
    int rc = REDLOCK_OK;
    for (; parsed < n && rc == REDLOCK_OK; parsed++) {
        rc = rl_uri_parse(list[parsed], &u[parsed], err, errlen);
        for (size_t j = 0; rc == REDLOCK_OK && j < parsed; j++)
            if (rl_uri_same_server(&u[j], &u[parsed])) {
                snprintf(err, errlen, "duplicate node '%s' in %s: the same server as %s[%zu] '%s'", u[parsed].display,
                         what, what, j, u[j].display);
                rc = REDLOCK_ERR_CONFIG;
            }
        if (rc != REDLOCK_OK) rl_uri_clear(&u[parsed]);
    }
    if (rc != REDLOCK_OK)
        for (size_t j = 0; j + 1 < parsed; j++) rl_uri_clear(&u[j]);
    return rc;
}

/* Checks the next list against the current one: each next node is either
 * one of the current nodes or another server, the union fits, and the
 * lists differ. Returns 0 or REDLOCK_ERR_CONFIG with err set. */
static int check_union(const rl_uri_t *cur, size_t nc, const rl_uri_t *next, size_t nn, char *err, size_t errlen) {
    size_t shared = 0;
    for (size_t i = 0; i < nn; i++)
        for (size_t j = 0; j < nc; j++) {
            if (!rl_uri_same_server(&cur[j], &next[i])) continue;
            if (!rl_uri_same_node(&cur[j], &next[i])) {
                snprintf(err, errlen,
                         "next_nodes[%zu] '%s' is the same server as nodes[%zu] '%s' but not the same node "
                         "(its kind or db differs)",
                         i, next[i].display, j, cur[j].display);
                return REDLOCK_ERR_CONFIG;
            }
            shared++;
            break;
        }
    if (nc + nn - shared > REDLOCK_MAX_NODES) {
        snprintf(err, errlen, "nodes and next_nodes name %zu distinct nodes together: at most %d", nc + nn - shared,
                 REDLOCK_MAX_NODES);
        return REDLOCK_ERR_CONFIG;
    }
    if (shared == nc && shared == nn) {
        snprintf(err, errlen, "next_nodes names the same %zu nodes as nodes: a next list must differ", nn);
        return REDLOCK_ERR_CONFIG;
    }
    return REDLOCK_OK;
}

/* Parses every node URI of both lists and checks them (above). Returns 0
 * or REDLOCK_ERR_CONFIG with err set. */
static int check_nodes(const redlock_options_t *o, char *err, size_t n) {
    if (!o->nodes || o->n_nodes == 0) {
        snprintf(err, n, "no nodes given (nodes=%s, n_nodes=%zu)", o->nodes ? "set" : "NULL", o->n_nodes);
        return REDLOCK_ERR_CONFIG;
    }
    if (!o->next_nodes != !o->n_next_nodes) {
        snprintf(err, n, "next_nodes=%s with n_next_nodes=%zu: set both or neither", o->next_nodes ? "set" : "NULL",
                 o->n_next_nodes);
        return REDLOCK_ERR_CONFIG;
    }
    rl_uri_t cur[REDLOCK_MAX_NODES], next[REDLOCK_MAX_NODES];
    int rc = parse_list("nodes", o->nodes, o->n_nodes, cur, err, n);
    if (rc != REDLOCK_OK) return rc;
    if (o->next_nodes && (rc = parse_list("next_nodes", o->next_nodes, o->n_next_nodes, next, err, n)) == REDLOCK_OK) {
        rc = check_union(cur, o->n_nodes, next, o->n_next_nodes, err, n);
        for (size_t j = 0; j < o->n_next_nodes; j++) rl_uri_clear(&next[j]);
    }
    for (size_t j = 0; j < o->n_nodes; j++) rl_uri_clear(&cur[j]);
    return rc;
}

int rl_options_check(const redlock_options_t *opt, char *err, size_t errlen) {
    char scratch[8];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof scratch;
    }
    if (!opt) {
        snprintf(err, errlen, "options are NULL");
        return REDLOCK_ERR_INVALID;
    }
    int rc = check_numbers(opt, err, errlen);
    return rc ? rc : check_nodes(opt, err, errlen);
}
