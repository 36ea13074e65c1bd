/* round.c -- encoding a round's command (plain, or EVALSHA of an embedded
 * script with keys, token and one extra argument) and handing it to the
 * handle's driver (rl->send). */
#include <stdio.h>
#include <string.h>

#include "resp.h"
#include "rl.h"

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
    rl->send(rl, r); /* the driver copies the command before it returns */
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
    rl_run_script_args(rl, r, script, keys, token, &extra, extra ? 1 : 0, classify);
}

void rl_run_script_args(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys,
                        const char *token, const char *const *extra, size_t n_extra, rl_classify_fn classify) {
    const char *argv[REDLOCK_MAX_RESOURCES + 8];
    size_t lens[REDLOCK_MAX_RESOURCES + 8];
    char nkeys[8];
    int argc = 0;
    snprintf(nkeys, sizeof nkeys, "%zu", keys->n);
    argv[argc] = "EVALSHA", lens[argc++] = 7;
    argv[argc] = script->sha1, lens[argc++] = 40;
    argv[argc] = nkeys, lens[argc++] = strlen(nkeys);
    for (size_t i = 0; i < keys->n; i++) argv[argc] = keys->k[i], lens[argc++] = keys->len[i];
    argv[argc] = token, lens[argc++] = REDLOCK_TOKEN_LEN;
    for (size_t i = 0; i < n_extra && i < 4; i++) argv[argc] = extra[i], lens[argc++] = strlen(extra[i]);
    rl_run_round(rl, r, argc, argv, lens, script, classify);
}

const rl_script_t *rl_release_script(const redlock_t *rl, const rl_keys_t *keys, int shared) {
    if (shared) return rl->s_release_shared;
    return keys->n == 1 ? rl->s_release : rl->s_release_multi;
}

void rl_release_round(redlock_t *rl, rl_round_t *r, const rl_keys_t *keys, const char *token,
                      redlock_node_report_t *nodes, const char *announce) {
    rl_round_init(r, rl->opt.n_nodes, RL_STOP_RESOLVE, nodes);
    rl_run_script_as(rl, r, rl_release_script(rl, keys, 0), keys, token, announce, rl_classify_mine);
}
