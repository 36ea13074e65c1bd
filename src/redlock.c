/* redlock.c -- the Redlock algorithm: acquire with retries, extend, release
 * (DESIGN.md section 1), over the engine's fan-out rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "resp.h"
#include "rl.h"
#include "timing.h"
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
    };
    return rl_engine_new(&rl->eng, uris, rl->opt.n_nodes, &cfg);
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
    rl->release_script = rl_script_find("release");
    rl->extend_script = rl_script_find("extend");
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
    rl_engine_free(rl->eng);
    for (size_t i = 0; rl->node_names && i < rl->opt.n_nodes; i++) free(rl->node_names[i]);
    free(rl->node_names);
    free(rl);
}

void rl_set_clock(redlock_t *rl, rl_clock_fn clock) {
    rl->clock = clock;
}

/* -------------------------------------------------------------- reports */

/* Starts a report for a call on rl (report may be NULL). */
static void report_begin(const redlock_t *rl, redlock_report_t *rep) {
    if (!rep) return;
    rep->result = REDLOCK_OK;
    rep->attempts = 0;
    rep->n_nodes = rl ? rl->opt.n_nodes : 0;
    rep->quorum = rl ? redlock_quorum(rep->n_nodes) : 0;
    rep->yes = rep->no = rep->failed = 0;
    rep->elapsed_us = 0;
    rep->validity_ms = 0;
    rep->message[0] = '\0';
    for (size_t i = 0; i < rep->n_nodes; i++) {
        rep->nodes[i] = (redlock_node_report_t){.node = rl_engine_node_name(rl->eng, i), .rtt_us = -1};
    }
}

/* Copies a round's counts into the report. */
static void report_round(redlock_report_t *rep, const rl_round_t *r, uint64_t end_us) {
    if (!rep) return;
    rep->yes = r->yes;
    rep->no = r->no;
    rep->failed = r->failed;
    rep->elapsed_us = (int64_t)(end_us - r->t0_us);
}

/* Ends a call: stores rc and, for errors without a message, a summary of
 * the votes. Logs bad input at error level. Returns rc. */
static int report_end(const redlock_t *rl, redlock_report_t *rep, int rc, const char *msg) {
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

int rl_check_request(const redlock_t *rl, const char *resource, uint32_t ttl_ms, char *msg, size_t n) {
    if (!resource) return snprintf(msg, n, "resource is NULL"), REDLOCK_ERR_INVALID;
    size_t len = strnlen(resource, REDLOCK_MAX_RESOURCE + 1);
    if (len == 0) return snprintf(msg, n, "resource is empty"), REDLOCK_ERR_INVALID;
    if (len > REDLOCK_MAX_RESOURCE)
        return snprintf(msg, n, "resource '%.40s...' is longer than %d bytes", resource, REDLOCK_MAX_RESOURCE),
               REDLOCK_ERR_INVALID;
    uint64_t drift_ms = (rl_drift_us(ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms) + 999) / 1000;
    if (ttl_ms == 0 || ttl_ms > INT32_MAX)
        return snprintf(msg, n, "ttl_ms=%u is out of range: it must be 1..%d", ttl_ms, INT32_MAX),
               REDLOCK_ERR_INVALID;
    if ((uint64_t)ttl_ms <= drift_ms + rl->opt.op_timeout_ms)
        return snprintf(msg, n, "ttl_ms=%u is too short to ever be valid: it must exceed drift (%llu ms) + "
                        "op_timeout_ms (%u ms)", ttl_ms, (unsigned long long)drift_ms, rl->opt.op_timeout_ms),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

/* ---------------------------------------------------------------- rounds */

/* Runs one round of the command argv on every node. The EVAL fallback is
 * built from the script when script is set (argv[0] is then EVALSHA). */
static void run_round(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens,
                      const rl_script_t *script, rl_classify_fn classify) {
    rl_cmd_t cmd, fb;
    if (rl_cmd_build(&cmd, argc, argv, lens) < 0) {
        for (size_t i = 0; i < r->n; i++) rl_round_vote(r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1, "out of memory");
        return;
    }
    r->cmd = cmd.data;
    r->cmd_len = cmd.len;
    r->classify = classify;
    fb.data = NULL;
    if (script) { /* EVALSHA sha 1 key args... -> EVAL text 1 key args... */
        argv[0] = "EVAL", lens[0] = 4;
        argv[1] = script->text, lens[1] = script->len;
        if (rl_cmd_build(&fb, argc, argv, lens) == 0) {
            r->fallback = fb.data;
            r->fallback_len = fb.len;
            r->script = script;
        }
    }
    rl_engine_run(rl->eng, r);
    rl_cmd_free(&cmd);
    if (fb.data) rl_cmd_free(&fb);
}

/* Runs `script` (release or extend) for key/token on every node, with
 * extra_arg (may be NULL) after the token. */
static void run_script(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const char *key, size_t klen,
                       const char *token, const char *extra_arg) {
    const char *argv[6] = {"EVALSHA", script->sha1, "1", key, token, extra_arg};
    size_t lens[6] = {7, 40, 1, klen, REDLOCK_TOKEN_LEN, extra_arg ? strlen(extra_arg) : 0};
    run_round(rl, r, extra_arg ? 6 : 5, argv, lens, script, rl_classify_int);
}

/* Sends the release script for key/token to every node and waits until the
 * outcome is known (nodes may be NULL). */
static void release_round(redlock_t *rl, rl_round_t *r, const char *key, size_t klen, const char *token,
                          redlock_node_report_t *nodes) {
    rl_round_init(r, rl->opt.n_nodes, RL_STOP_RESOLVE, nodes);
    run_script(rl, r, rl->release_script, key, klen, token, NULL);
}

/* --------------------------------------------------------------- acquire */

/* Makes the lock object for a successful attempt. */
static int make_lock(const redlock_t *rl, const char *resource, size_t len, const char *token, uint32_t ttl_ms,
                     uint64_t t0, uint64_t deadline, redlock_lock_t **out) {
    redlock_lock_t *lk = calloc(1, sizeof *lk);
    char *res = malloc(len + 1);
    if (!lk || !res) {
        free(lk);
        free(res);
        return REDLOCK_ERR_NOMEM;
    }
    memcpy(res, resource, len + 1);
    *lk = (redlock_lock_t){.owner = rl, .resource = res, .resource_len = len, .ttl_ms = ttl_ms,
                           .t0_us = t0, .deadline_us = deadline, .clock = rl->clock};
    memcpy(lk->token, token, REDLOCK_TOKEN_LEN + 1);
    *out = lk;
    return REDLOCK_OK;
}

/* One attempt: SET NX PX on every node, validity check, clean-up on
 * failure. Returns REDLOCK_OK with *out set, or why it failed. */
static int attempt(redlock_t *rl, const char *resource, size_t len, const char *token, uint32_t ttl_ms,
                   redlock_lock_t **out, redlock_report_t *rep) {
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    const char *argv[6] = {"SET", resource, token, "NX", "PX", ttl};
    size_t lens[6] = {3, len, REDLOCK_TOKEN_LEN, 2, 2, strlen(ttl)};
    rl_round_t r;
    rl_round_init(&r, rl->opt.n_nodes, RL_STOP_MAJORITY, rep ? rep->nodes : NULL);
    run_round(rl, &r, 6, argv, lens, NULL, rl_classify_set);
    uint64_t now = rl->clock();
    report_round(rep, &r, now);
    int rc;
    if (r.yes >= r.quorum) {
        uint64_t deadline = rl_deadline_us(r.t0_us, ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
        if (rl_validity_us(deadline, now) > 0) {
            rc = make_lock(rl, resource, len, token, ttl_ms, r.t0_us, deadline, out);
            if (rc == REDLOCK_OK) {
                if (rep) rep->validity_ms = rl_validity_ms(rl_validity_us(deadline, now));
                return rc;
            }
        } else {
            rc = REDLOCK_ERR_EXPIRED;
        }
    } else {
        rc = rl_round_reason(&r, REDLOCK_ERR_TAKEN);
    }
    rl_round_t cleanup; /* a node that timed out may still have applied the SET */
    release_round(rl, &cleanup, resource, len, token, NULL);
    return rc;
}

/* Returns 1 when an attempt that failed with rc is worth repeating. */
static int retryable(int rc) {
    return rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM || rc == REDLOCK_ERR_EXPIRED;
}

int redlock_acquire_ex(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                       redlock_lock_t **out, redlock_report_t *rep) {
    char msg[256];
    if (out) *out = NULL;
    if (!rl || !out) {
        report_begin(NULL, rep);
        return report_end(NULL, rep, REDLOCK_ERR_INVALID, rl ? "out is NULL" : "redlock_t is NULL");
    }
    report_begin(rl, rep);
    int rc = rl_check_request(rl, resource, ttl_ms, msg, sizeof msg);
    if (rc) return report_end(rl, rep, rc, msg);
    size_t len = strlen(resource);
    char token[REDLOCK_TOKEN_LEN + 1];
    rl_token_new(token);
    uint64_t start = rl->clock();
    for (uint32_t n = 0;; n++) {
        if (rep) rep->attempts = n + 1;
        rc = attempt(rl, resource, len, token, ttl_ms, out, rep);
        if (rc == REDLOCK_OK || !retryable(rc) || n >= rl->opt.retry_count || wait_ms == 0) break;
        uint32_t d = rl_random_between(rl->opt.retry_delay_ms - rl->opt.retry_jitter_ms,
                                       rl->opt.retry_delay_ms + rl->opt.retry_jitter_ms);
        if (wait_ms > 0 && rl->clock() + (uint64_t)d * 1000u > start + (uint64_t)wait_ms * 1000u) break;
        rl_sleep_us((uint64_t)d * 1000u);
    }
    return report_end(rl, rep, rc, NULL);
}

int redlock_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out) {
    return redlock_acquire_ex(rl, resource, ttl_ms, -1, out, NULL);
}

int redlock_try_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out) {
    return redlock_acquire_ex(rl, resource, ttl_ms, 0, out, NULL);
}

/* ---------------------------------------------------------------- extend */

/* Checks that lock may be used with rl; returns 0 or INVALID with msg. */
static int check_lock(const redlock_t *rl, const redlock_lock_t *lock, char *msg, size_t n) {
    if (!rl) return snprintf(msg, n, "redlock_t is NULL"), REDLOCK_ERR_INVALID;
    if (!lock) return snprintf(msg, n, "lock is NULL"), REDLOCK_ERR_INVALID;
    if (lock->owner != rl)
        return snprintf(msg, n, "lock on '%.60s' was acquired through another redlock_t", lock->resource),
               REDLOCK_ERR_INVALID;
    return REDLOCK_OK;
}

int redlock_extend_ex(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep) {
    char msg[256];
    report_begin(rl, rep);
    int rc = check_lock(rl, lock, msg, sizeof msg);
    if (rc == REDLOCK_OK) rc = rl_check_request(rl, lock->resource, ttl_ms, msg, sizeof msg);
    if (rc) return report_end(rl, rep, rc, msg);
    if (rep) rep->attempts = 1;
    if (rl_validity_us(lock->deadline_us, rl->clock()) <= 0)
        return report_end(rl, rep, REDLOCK_ERR_NOT_HELD, NULL);
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    rl_round_t r;
    rl_round_init(&r, rl->opt.n_nodes, RL_STOP_MAJORITY, rep ? rep->nodes : NULL);
    run_script(rl, &r, rl->extend_script, lock->resource, lock->resource_len, lock->token, ttl);
    uint64_t now = rl->clock();
    report_round(rep, &r, now);
    if (r.yes < r.quorum) return report_end(rl, rep, rl_round_reason(&r, REDLOCK_ERR_NOT_HELD), NULL);
    uint64_t deadline = rl_deadline_us(r.t0_us, ttl_ms, rl->opt.drift_factor, rl->opt.drift_min_ms);
    if (rl_validity_us(deadline, now) <= 0) return report_end(rl, rep, REDLOCK_ERR_EXPIRED, NULL);
    lock->t0_us = r.t0_us;
    lock->deadline_us = deadline;
    lock->ttl_ms = ttl_ms;
    if (rep) rep->validity_ms = rl_validity_ms(rl_validity_us(deadline, now));
    return report_end(rl, rep, REDLOCK_OK, NULL);
}

int redlock_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms) {
    return redlock_extend_ex(rl, lock, ttl_ms, NULL);
}

/* --------------------------------------------------------------- release */

int redlock_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep) {
    char msg[256];
    report_begin(rl, rep);
    int rc = check_lock(rl, lock, msg, sizeof msg);
    if (rc) {
        redlock_lock_free(lock); /* release always frees the handle, even on bad input */
        return report_end(rl, rep, rc, msg);
    }
    if (rep) rep->attempts = 1;
    rl_round_t r;
    release_round(rl, &r, lock->resource, lock->resource_len, lock->token, rep ? rep->nodes : NULL);
    report_round(rep, &r, rl->clock());
    redlock_lock_free(lock);
    if (r.yes >= r.quorum) rc = REDLOCK_OK;
    else if (r.no >= r.quorum) rc = REDLOCK_ERR_NOT_HELD;
    else rc = r.auth_failed > r.n - r.quorum ? REDLOCK_ERR_AUTH : REDLOCK_ERR_NO_QUORUM;
    return report_end(rl, rep, rc, NULL);
}

int redlock_release(redlock_t *rl, redlock_lock_t *lock) {
    return redlock_release_ex(rl, lock, NULL);
}
