/* query.c -- one command to every node, every answer collected: what the
 * command-line tool's status and ping are made of. */
#include <stdio.h>

#include "resp.h"
#include "blocking.h"

/* Runs argv (EVALSHA of script when script is set) on every node with no
 * early stop; returns how many answered without error. */
static size_t run_query(redlock_t *rl, int argc, const char *const *argv, const size_t *lens, const rl_script_t *script,
                        rl_reply_fn fn, void *arg, redlock_report_t *rep) {
    RL_ROUND(r);
    rl_cmd_t cmd, ccmd;
    rl_report_begin(rl, rep);
    rl_round_begin(rl, r, RL_STOP_ALL, rep ? rep->nodes : NULL);
    if (rl_round_encode(rl, r, &cmd, &ccmd, argc, argv, lens) < 0) return 0;
    r->send_all = 1;
    r->script = script;
    r->classify = rl_classify_any;
    r->on_reply = fn;
    r->reply_arg = arg;
    rl_send_blocking(rl, r);
    rl_cmd_free(&cmd);
    rl_cmd_free(&ccmd);
    rl_report_round(rep, r, rl->clock());
    if (rep) rep->attempts = 1;
    return r->yes;
}

size_t rl_query(redlock_t *rl, int argc, const char **argv, const size_t *lens, rl_reply_fn fn, void *arg,
                redlock_report_t *rep) {
    return run_query(rl, argc, argv, lens, NULL, fn, arg, rep);
}

size_t rl_query_script(redlock_t *rl, const char *name, int nkeys, int argc, const char **argv, const size_t *lens,
                       rl_reply_fn fn, void *arg, redlock_report_t *rep) {
    const rl_script_t *s = rl_script_find(name);
    if (!s || argc > 60) return 0;
    const char *av[64];
    size_t lv[64];
    char nk[8];
    int len = snprintf(nk, sizeof nk, "%d", nkeys);
    av[0] = "EVALSHA", lv[0] = 7;
    av[1] = s->sha1, lv[1] = 40;
    av[2] = nk, lv[2] = (size_t)len;
    for (int i = 0; i < argc; i++) av[3 + i] = argv[i], lv[3 + i] = lens[i];
    return run_query(rl, argc + 3, av, lv, s, fn, arg, rep);
}
