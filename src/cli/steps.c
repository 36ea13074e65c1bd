/* steps.c -- `redlock acquire`, `redlock extend`, `redlock release`: a
 * lock held across several steps of a shell script. acquire prints the
 * token and leaves the lock to its TTL; extend adopts the lock from its
 * token (redlock_lock_adopt: one round of the extend script); release
 * deletes it by token. Exit codes: the CLI_STEP_* table. */
#include <sodium.h>
#include <string.h>

#include "cli.h"
#include "blocking.h"

#define DEFAULT_STEP_TTL_MS 30000

enum { STEP_ACQUIRE = 1, STEP_EXTEND, STEP_RELEASE };

typedef struct step_args {
    const char *cmd, *resource;
    cli_token_src_t tok;
    int which, json, fencing, ttl_given;
    int64_t ttl, wait;
} step_args_t;

/* Tries the options of the step a->which at argv[*i]. Returns 1 if
 * consumed, 0 if not one of them, or an exit code > 1 after an error. */
static int step_option(cli_t *c, int argc, char **argv, int *i, step_args_t *a) {
    const char *v = NULL;
    int r;
    if (cli_opt_flag(argv, i, "--json")) return a->json = 1;
    if (a->which == STEP_ACQUIRE && cli_opt_flag(argv, i, "--fencing")) return a->fencing = 1;
    if (a->which != STEP_ACQUIRE && cli_opt_flag(argv, i, "--token-stdin")) return a->tok.from_stdin = 1;
    if (a->which != STEP_RELEASE && (r = cli_opt_value(c, argc, argv, i, "--ttl", &v)) != 0) {
        if (r < 0 || cli_ttl_value(c, v, &a->ttl)) return CLI_EX_USAGE;
        return a->ttl_given = 1;
    }
    if (a->which == STEP_ACQUIRE && (r = cli_opt_value(c, argc, argv, i, "--wait", &v)) != 0)
        return r < 0 || cli_wait_value(c, v, &a->wait) ? CLI_EX_USAGE : 1;
    if (a->which != STEP_ACQUIRE && (r = cli_opt_value(c, argc, argv, i, "--token-env", &v)) != 0) {
        a->tok.env = v;
        return r < 0 ? CLI_EX_USAGE : 1;
    }
    return 0;
}

/* Parses a step's arguments. Returns -1 to go on, else the exit code
 * (exec table) to return at once. */
static int step_parse(cli_t *c, int argc, char **argv, step_args_t *a) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int r;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            cli_print_usage(stdout, c->prog);
            return CLI_EX_OK;
        }
        if ((r = step_option(c, argc, argv, &i, a)) != 0 || (r = cli_global_option(c, argc, argv, &i)) != 0) {
            if (r != 1) return r < 0 ? CLI_EX_USAGE : r;
            continue;
        }
        if (s[0] == '-' && s[1] != '\0') return cli_usage_error(c, "%s: unknown option '%s'", a->cmd, s);
        if (!a->resource)
            a->resource = s;
        else if (a->which != STEP_ACQUIRE && !a->tok.arg)
            a->tok.arg = s;
        else
            return cli_usage_error(c, "%s: unexpected argument (the %s after RESOURCE)", a->cmd,
                                   a->which == STEP_ACQUIRE ? "first" : "second");
    }
    if (!a->resource || !*a->resource) return cli_usage_error(c, "%s: missing RESOURCE", a->cmd);
    if (a->wait != 0) c->opt.retry_count = UINT32_MAX; /* the wait bounds the retries */
    c->opt.fencing = a->fencing;
    return a->which == STEP_RELEASE || !cli_fit_ttl(c, &a->ttl, a->ttl_given) ? -1 : CLI_EX_USAGE;
}

/* Prints the JSON object of a step: its result, the lock (token only for
 * acquire, which hands it out), and the report node by node. */
static void step_json(const step_args_t *a, int rc, const redlock_lock_t *lock, const redlock_report_t *rep) {
    char result[32];
    rl_result_name(rc, result, sizeof result);
    printf("{\"command\":\"%s\",\"resource\":", a->cmd);
    cli_json_str(stdout, a->resource);
    printf(",\"result\":\"%s\",\"message\":", result);
    cli_json_str(stdout, rep->message[0] ? rep->message : NULL);
    if (a->which == STEP_ACQUIRE) {
        printf(",\"token\":");
        cli_json_str(stdout, lock ? redlock_lock_token(lock) : NULL);
        printf(",\"fence\":%llu", (unsigned long long)redlock_lock_fence(lock));
    }
    printf(",\"validity_ms\":%lld,\"attempts\":%u,\"n_nodes\":%zu,\"quorum\":%zu,\"yes\":%zu,\"no\":%zu,"
           "\"failed\":%zu,\"elapsed_us\":%lld,",
           (long long)rep->validity_ms, rep->attempts, rep->n_nodes, rep->quorum, rep->yes, rep->no, rep->failed,
           (long long)rep->elapsed_us);
    for (size_t k = 0; rep->n_lists == 2 && k < 2; k++)
        printf("%s{\"list\":\"%s\",\"n_nodes\":%zu,\"quorum\":%zu,\"yes\":%zu,\"no\":%zu,\"failed\":%zu}%s",
               k ? "," : "\"tallies\":[", k ? "new" : "old", rep->lists[k].n_nodes, rep->lists[k].quorum,
               rep->lists[k].yes, rep->lists[k].no, rep->lists[k].failed, k ? "]," : "");
    cli_json_nodes(stdout, rep);
    printf("}\n");
}

/* Says on stderr why a step failed, and with -v how each node voted. */
static void step_failed(const cli_t *c, const step_args_t *a, int rc, const redlock_report_t *rep) {
    static const char *const verbs[] = {"", "lock", "extend", "release"};
    cli_error(c, "cannot %s '%s': %s", verbs[a->which], a->resource,
              rep->message[0] ? rep->message : redlock_strerror(rc));
    if (rc == REDLOCK_ERR_NOT_HELD)
        cli_error(c, "the lock had expired or was taken over: the steps since it was acquired may not have run alone");
    if (c->verbose && rep->n_nodes) cli_print_report(stderr, rep);
}

/* Runs the step on rl; returns its CLI_STEP_* code. */
static int step_run(const cli_t *c, redlock_t *rl, const step_args_t *a, const char *token) {
    static redlock_report_t rep; /* about 22 KiB: kept off the stack */
    redlock_lock_t *lock = NULL;
    int rc;
    int sig_exit = 0;
    if (a->which == STEP_ACQUIRE)
        rc = cli_acquire_interruptible(c, rl, a->resource, NULL, (uint32_t)a->ttl, a->wait, &lock, &rep, &sig_exit);
    else if (a->which == STEP_EXTEND)
        rc = redlock_lock_adopt(rl, a->resource, token, (uint32_t)a->ttl, &lock, &rep);
    else
        rc = rl_release_token(rl, a->resource, token, &rep);
    if (sig_exit) return sig_exit;
    if (a->json)
        step_json(a, rc, lock, &rep);
    else if (rc == REDLOCK_OK && a->which == STEP_ACQUIRE)
        printf("%s\n", redlock_lock_token(lock));
    if (rc != REDLOCK_OK)
        step_failed(c, a, rc, &rep);
    else if (c->verbose)
        cli_print_report(stderr, &rep);
    if (fflush(stdout) != 0 && rc == REDLOCK_OK && a->which == STEP_ACQUIRE) { /* nobody got the token */
        cli_error(c, "%s: cannot write to standard output", a->cmd);
        if (lock) redlock_release(rl, lock), lock = NULL;
        rc = REDLOCK_ERR_IO;
    }
    redlock_lock_free(lock); /* the keys stay until their TTL or a release by token */
    return cli_step_code(rc);
}

/* The three commands' common body. */
static int step_main(cli_t *c, int argc, char **argv, int which) {
    step_args_t a = {.cmd = argv[0], .which = which, .ttl = DEFAULT_STEP_TTL_MS};
    char token[REDLOCK_TOKEN_LEN + 1] = "";
    int stop = step_parse(c, argc, argv, &a);
    if (stop >= 0) return cli_step_exit(stop);
    if (which != STEP_ACQUIRE && (stop = cli_read_token(c, a.cmd, &a.tok, token)) != 0) return cli_step_exit(stop);
    redlock_t *rl = NULL;
    int rc = cli_open(c, &rl);
    if (rc) return cli_step_exit(rc);
    rc = step_run(c, rl, &a, token);
    sodium_memzero(token, sizeof token);
    redlock_free(rl);
    return rc;
}

int cli_cmd_acquire(cli_t *c, int argc, char **argv) {
    return step_main(c, argc, argv, STEP_ACQUIRE);
}

int cli_cmd_extend(cli_t *c, int argc, char **argv) {
    return step_main(c, argc, argv, STEP_EXTEND);
}

int cli_cmd_release(cli_t *c, int argc, char **argv) {
    return step_main(c, argc, argv, STEP_RELEASE);
}
