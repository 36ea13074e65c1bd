/* common.c -- what the subcommands share beyond argument parsing: the
 * argument loop of the query commands and opening the redlock_t (with the
 * -v log callback). Subcommand files depend on this file and args.c,
 * output.c, usage.c; never on main.c, which only dispatches. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Parses the arguments of a query command (status, ping): -h/--help,
 * --json, --limit N when limit is not NULL, the global options, and at
 * most one positional argument, stored in *positional (none allowed when
 * positional is NULL). Lives here, not in args.c, because it prints the
 * usage and args.c is also linked alone (the fuzz target fuzz_cli_args). */
int cli_query_args(cli_t *c, int argc, char **argv, const char *cmd, int *json, const char **positional,
                   unsigned *limit) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_print_usage(stdout, c->prog);
            return CLI_EX_OK;
        }
        if (cli_opt_flag(argv, &i, "--json")) {
            *json = 1;
            continue;
        }
        const char *v = NULL;
        if (limit && (r = cli_opt_value(c, argc, argv, &i, "--limit", &v)) != 0) {
            if (r < 0 || cli_limit_value(c, v, limit)) return CLI_EX_USAGE;
            continue;
        }
        if ((r = cli_global_option(c, argc, argv, &i)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') return cli_usage_error(c, "%s: unknown option '%s'", cmd, a);
        if (!positional || *positional) return cli_usage_error(c, "%s: unexpected argument '%s'", cmd, a);
        *positional = a;
    }
    return -1;
}

/* The log callback (-v): one line on stderr per message. fprintf locks
 * stderr, so lines from the watchdog thread never interleave. */
static void cli_log(void *arg, int level, const char *msg) {
    static const char *const names[] = {"error", "warning", "info", "debug"};
    const cli_t *c = arg;
    if (level < 0) level = 0;
    if (level > 3) level = 3;
    fprintf(stderr, "%s: %s: %s\n", c->prog, names[level], msg);
}

/* Fills l from the environment variable env unless its option was given.
 * Returns 0, or -1 on a malformed list (reported). */
static int nodes_from_env(cli_t *c, cli_nodes_t *l, const char *env) {
    const char *v = l->given ? NULL : getenv(env);
    return v && *v ? cli_add_nodes(c, l, v, env) : 0;
}

int cli_resolve_nodes(cli_t *c) {
    if (nodes_from_env(c, &c->nodes, "REDLOCK_NODES") < 0 || nodes_from_env(c, &c->next, "REDLOCK_NEXT_NODES") < 0)
        return CLI_EX_CONFIG;
    if (c->nodes.n == 0) {
        cli_error(c, "no nodes: give --nodes URI[,URI...] or set REDLOCK_NODES");
        return CLI_EX_CONFIG;
    }
    if (c->nodes.too_many || c->next.too_many) {
        cli_error(c, "too many nodes in %s: at most %d", c->nodes.too_many ? "--nodes" : "--next-nodes",
                  REDLOCK_MAX_NODES);
        return CLI_EX_CONFIG;
    }
    return 0;
}

int cli_open(cli_t *c, redlock_t **rl) {
    *rl = NULL;
    int rc = cli_resolve_nodes(c);
    return rc ? rc
              : cli_open_over(c, (const char *const *)c->nodes.uri, c->nodes.n,
                              c->next.n ? (const char *const *)c->next.uri : NULL, c->next.n, rl);
}

int cli_open_over(cli_t *c, const char *const *nodes, size_t n, const char *const *next, size_t nn, redlock_t **rl) {
    *rl = NULL;
    /* Settings the tool does not expose follow the ones it does, so that any
     * accepted --op-timeout makes a valid configuration (the jitter's
     * default follows --retry-delay in the library). */
    if (c->opt.node_down_ms < c->opt.op_timeout_ms) c->opt.node_down_ms = c->opt.op_timeout_ms;
    c->opt.nodes = nodes;
    c->opt.n_nodes = n;
    c->opt.next_nodes = next;
    c->opt.n_next_nodes = nn;
    if (c->verbose > 0) {
        c->opt.log = cli_log;
        c->opt.log_arg = c;
        c->opt.log_level = c->verbose >= 2 ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_INFO;
    }
    char err[256] = "";
    int rc = redlock_new_ex(rl, &c->opt, err, sizeof err);
    if (rc != REDLOCK_OK) {
        cli_error(c, "%s: %s", redlock_strerror(rc), err[0] ? err : "redlock_new failed");
        return cli_exit_code(rc);
    }
    return 0;
}

int cli_fit_ttl(const cli_t *c, int64_t *ttl, int given) {
    if (!c->opt.max_ttl_ms || *ttl <= (int64_t)c->opt.max_ttl_ms) return 0;
    if (given)
        return cli_usage_error(c,
                               "--ttl %lld ms exceeds --max-ttl %u ms (the longest TTL any client uses on "
                               "these nodes, which the restart quarantine relies on)",
                               (long long)*ttl, c->opt.max_ttl_ms);
    *ttl = c->opt.max_ttl_ms;
    return 0;
}
