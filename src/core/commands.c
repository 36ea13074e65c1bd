/* commands.c -- encoding a round's command (plain, or EVALSHA of an embedded
 * script with keys, token and one extra argument) and handing it to the
 * handle's driver (rl->send). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"
#include "rl.h"
#include "slot.h"

/* 1 when argument a (n bytes) is the command name name, in any case. */
static int is_verb(const char *a, size_t n, const char *name) {
    return n == strlen(name) && !strncasecmp(a, name, n);
}

/* The keys among a command's arguments: EVALSHA's and EVAL's after the
 * script and key count, SET's first. Returns how many, from *first. */
static int key_args(int argc, const char *const *argv, const size_t *lens, int *first) {
    if (argc >= 3 && (is_verb(argv[0], lens[0], "EVALSHA") || is_verb(argv[0], lens[0], "EVAL"))) {
        int n = 0;
        for (size_t i = 0; i < lens[2] && i < 4 && argv[2][i] >= '0' && argv[2][i] <= '9'; i++)
            n = n * 10 + (argv[2][i] - '0');
        *first = 3;
        return n < argc - 3 ? n : argc - 3;
    }
    *first = 1;
    return argc >= 2 && is_verb(argv[0], lens[0], "SET") ? 1 : 0;
}

/* Encodes r's command for cluster nodes into ccmd: its keys as named
 * there, r->hslot their slot (RL_SLOT_MIXED when they differ). Returns 0,
 * or -1 when out of memory. */
static int encode_cluster(rl_round_t *r, rl_cmd_t *ccmd, int argc, const char *const *argv, const size_t *lens) {
    enum { MAX_ARGS = REDLOCK_MAX_RESOURCES + 16, KEY_ROOM = REDLOCK_MAX_RESOURCE + 64 };
    int first, nk = key_args(argc, argv, lens, &first);
    if (nk == 0 || argc > MAX_ARGS) return 0;
    const char *av[MAX_ARGS];
    size_t lv[MAX_ARGS];
    char *room = malloc((size_t)nk * KEY_ROOM);
    if (!room) return -1;
    memcpy(av, argv, (size_t)argc * sizeof *av);
    memcpy(lv, lens, (size_t)argc * sizeof *lv);
    for (int j = 0; j < nk; j++) {
        char *k = room + (size_t)j * KEY_ROOM;
        size_t n = rl_cluster_key(k, KEY_ROOM, argv[first + j], lens[first + j]);
        if (!n) continue; /* (longer than any resource may be: sent as it is) */
        av[first + j] = k;
        lv[first + j] = n;
        int32_t slot = rl_key_slot(k, n);
        r->hslot = j == 0 ? slot : slot == r->hslot ? slot : RL_SLOT_MIXED;
    }
    /* a release's announcement (after the token: "1", or "p" for a permit)
     * is SPUBLISHed on a cluster node: the script is told by an 'S' */
    int at = first + nk + 1;
    const char *name = r->script ? r->script->name : "";
    if (!strncmp(name, "release", 7) && strcmp(name, "release_permit") && at < argc && lens[at] == 1 &&
        (argv[at][0] == '1' || argv[at][0] == 'p')) {
        av[at] = argv[at][0] == '1' ? "S1" : "Sp";
        lv[at] = 2;
    }
    int rc = rl_cmd_build(ccmd, argc, av, lv);
    free(room);
    if (rc == 0) {
        r->ccmd = ccmd->data;
        r->ccmd_len = ccmd->len;
    }
    return rc;
}

int rl_round_encode(const redlock_t *rl, rl_round_t *r, rl_cmd_t *cmd, rl_cmd_t *ccmd, int argc,
                    const char *const *argv, const size_t *lens) {
    ccmd->data = ccmd->inline_buf;
    ccmd->len = 0;
    if (rl_cmd_build(cmd, argc, argv, lens) < 0) return -1;
    r->cmd = cmd->data;
    r->cmd_len = cmd->len;
    if (rl->cluster_nodes && encode_cluster(r, ccmd, argc, argv, lens) < 0) {
        rl_cmd_free(cmd);
        return -1;
    }
    return 0;
}

/* The guarded twin of a round's command (lua/guard/membership.lua), for
 * plain nodes that may hold a membership record: a granting script's twin,
 * or acquire's for SET key token NX PX ttl, with the handle's fingerprint
 * as the first argument after the keys. Encodes it into gcmd (r->gcmd);
 * leaves r->gcmd NULL for a command that grants and keeps nothing, or a
 * handle of cluster nodes only. Returns 0, or -1 when out of memory. */
static int encode_guarded(redlock_t *rl, rl_round_t *r, rl_cmd_t *gcmd, int argc, const char *const *argv,
                          const size_t *lens, const rl_script_t *script) {
    enum { MAX_ARGS = REDLOCK_MAX_RESOURCES + 16 };
    const rl_script_t *g = rl_script_guarded(script);
    int set = !script && argc == 6 && is_verb(argv[0], lens[0], "SET") && is_verb(argv[3], lens[3], "NX");
    gcmd->data = gcmd->inline_buf;
    gcmd->len = 0;
    if (set) g = rl_script_guarded(rl->s_acquire);
    if (!g || rl->cluster_nodes == rl->opt.n_nodes || argc + 2 > MAX_ARGS) return 0;
    const char *av[MAX_ARGS];
    size_t lv[MAX_ARGS];
    int n = 0, first, nk;
    av[n] = "EVALSHA", lv[n++] = 7;
    av[n] = g->sha1, lv[n++] = 40;
    if (set) { /* SET key token NX PX ttl: 1 key, then token and ttl */
        av[n] = "1", lv[n++] = 1;
        av[n] = argv[1], lv[n++] = lens[1];
        av[n] = rl->fp, lv[n++] = RL_FP_HEX;
        av[n] = argv[2], lv[n++] = lens[2];
        av[n] = argv[5], lv[n++] = lens[5];
    } else {
        nk = key_args(argc, argv, lens, &first); /* EVALSHA sha nkeys keys... args... */
        for (int j = 2; j < first + nk; j++) av[n] = argv[j], lv[n++] = lens[j];
        av[n] = rl->fp, lv[n++] = RL_FP_HEX;
        for (int j = first + nk; j < argc; j++) av[n] = argv[j], lv[n++] = lens[j];
    }
    if (rl_cmd_build(gcmd, n, av, lv) < 0) return -1;
    r->gcmd = gcmd->data;
    r->gcmd_len = gcmd->len;
    r->gscript = g;
    return 0;
}

void rl_run_round(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens, const rl_script_t *script,
                  rl_classify_fn classify) {
    rl_cmd_t cmd, ccmd, gcmd;
    r->script = script; /* the engine rebuilds the EVAL form from cmd on NOSCRIPT */
    int rc = rl_round_encode(rl, r, &cmd, &ccmd, argc, argv, lens);
    if (rc == 0 && encode_guarded(rl, r, &gcmd, argc, argv, lens, script) < 0) {
        rl_cmd_free(&cmd);
        rl_cmd_free(&ccmd);
        rc = -1;
    }
    if (rc < 0) {
        for (size_t i = 0; i < r->n; i++)
            rl_round_vote(r, i, REDLOCK_VOTE_ERROR, REDLOCK_ERR_NOMEM, -1, "out of memory");
        r->t0_us = rl->clock();
        r->cmd = r->ccmd = r->gcmd = NULL;
        return;
    }
    r->classify = classify;
    rl->send(rl, r); /* the driver copies the command before it returns */
    rl_cmd_free(&cmd);
    rl_cmd_free(&ccmd);
    rl_cmd_free(&gcmd);
    r->cmd = r->ccmd = r->gcmd = NULL;
}

void rl_run_command(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens, rl_classify_fn classify) {
    rl_run_round(rl, r, argc, argv, lens, NULL, classify);
}

void rl_run_script(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys, const char *token,
                   const char *extra) {
    rl_run_script_as(rl, r, script, keys, token, extra, rl_classify_int);
}

void rl_run_script_as(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys, const char *token,
                      const char *extra, rl_classify_fn classify) {
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
