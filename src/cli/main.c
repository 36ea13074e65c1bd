/* main.c -- the redlock tool: global options, dispatch, help, version. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_print_usage(FILE *f, const char *prog) {
    fprintf(f,
"Usage: %s [GLOBAL OPTIONS] exec [--ttl DUR] [--wait DUR] [--on-lost ACTION]\n"
"                 [--fencing] RESOURCE -- COMMAND [ARG...]\n"
"       %s [GLOBAL OPTIONS] status [--json] RESOURCE\n"
"       %s [GLOBAL OPTIONS] ping [--json]\n"
"       %s --help | --version\n"
"\n"
"A lock held by a majority of N independent Redis masters (the Redlock\n"
"algorithm), for scripts and cron jobs: flock(1) across machines.\n"
"\n"
"Commands:\n"
"  exec      Lock RESOURCE, run COMMAND while the lock is extended in the\n"
"            background, release the lock when COMMAND exits, and exit with\n"
"            COMMAND's status. COMMAND gets REDLOCK_RESOURCE and REDLOCK_TOKEN\n"
"            (and with --fencing REDLOCK_FENCE) in its environment; inherited\n"
"            values of these are removed. The '--' before COMMAND is required.\n"
"    --ttl DUR         lock time-to-live (default 10s, or --max-ttl if less),\n"
"                      renewed every TTL/3; how long the lock outlives a\n"
"                      redlock that was killed\n"
"    --wait DUR        if the lock is held, retry for up to DUR (default 0: one\n"
"                      attempt); 'forever' never gives up. No attempt starts\n"
"                      after DUR, so a refusal may come up to one retry delay\n"
"                      early\n"
"    --on-lost ACTION  when the lock is lost while COMMAND runs: 'term' sends\n"
"                      COMMAND SIGTERM (default), 'kill' sends SIGKILL, 'ignore'\n"
"                      lets it finish; either way redlock exits 79 afterwards\n"
"    --fencing         also get a fencing token (a number greater than that of\n"
"                      every earlier holder of RESOURCE) and pass it to COMMAND\n"
"                      as REDLOCK_FENCE; costs a second round trip\n"
"  status    Show, node by node, whether RESOURCE is locked: reachable, key\n"
"            present, the first 8 characters of the token, PTTL, round trip;\n"
"            then whether a quorum agrees on one holder.\n"
"  ping      Show each node's round trip, Redis version, uptime, role and\n"
"            persistence settings (appendonly, appendfsync, AOF, last RDB save).\n"
"    --json            status, ping: print one JSON object instead of a table\n"
"\n",
            prog, prog, prog, prog);
    fputs(
"Global options (also accepted after the command name):\n"
"  --nodes URI[,URI...]   the Redis masters; may be repeated. Default: the\n"
"                         comma-separated list in $REDLOCK_NODES. URIs:\n"
"                         redis://[user[:password]@]host[:port][/db] or\n"
"                         unix:///path/to.sock[?db=N]\n"
"  --connect-timeout DUR  per-node connect timeout (default 100ms)\n"
"  --op-timeout DUR       per-node reply timeout in each round (default 50ms)\n"
"  --drift-factor F       drift allowance as a share of the TTL (default 0.01)\n"
"  --drift-min DUR        fixed clock-drift allowance (default 2ms)\n"
"  --retry-delay DUR      mean pause between tries under --wait (default 200ms)\n"
"  --retry-jitter DUR     the pause varies by up to this much either way\n"
"                         (default: half the retry delay, at most 100ms)\n"
"  --max-ttl DUR          the longest TTL any client uses on these nodes; turns\n"
"                         on the restart quarantine: a node restarted less than\n"
"                         DUR ago gets no vote (default 0: unknown, no quarantine)\n"
"  --no-quarantine        keep --max-ttl's TTL cap but no restart quarantine:\n"
"                         restarted nodes keep their vote (--clock-jump 0 turns\n"
"                         off the clock check)\n"
"  --clock-jump DUR       with --max-ttl: a node whose clock moved this much more\n"
"                         than ours gets no vote for max-ttl (default 100ms; 0: no\n"
"                         clock-jump detection)\n"
"  --clock-check DUR      read a node's clock at most this often (default 1s; 0:\n"
"                         on every acquire)\n"
"  -v, --verbose          log to stderr and show node-by-node reports; -vv: debug\n"
"  -h, --help             show this help and exit\n"
"  -V, --version          show the version and exit\n"
"\n"
"Durations are a number with an optional unit ms, s or m: 500ms, 1.5s, 2m. A\n"
"bare number is milliseconds. Tokens are never shown beyond 8 characters and\n"
"passwords are shown as ***.\n"
"\n"
"Exit status:\n"
"  0       success (exec: COMMAND exited 0)\n"
"  1-255   exec: COMMAND's own exit status; 128+N if it was killed by signal N\n"
"  64      usage error: unknown option, bad duration, missing '--' or argument\n"
"  69      no quorum of nodes reachable (down, refused, timed out, auth refused)\n"
"  70, 71  internal error; the system refused (out of memory, cannot fork)\n"
"  75      the lock is held by another owner (after --wait)\n"
"  78      configuration error: malformed node URI, option out of range, no nodes\n"
"  79      exec: the lock was lost while COMMAND ran\n"
"  126     exec: COMMAND was found but cannot be executed\n"
"  127     exec: COMMAND was not found\n"
"  status exits 0 when a quorum of nodes answered, else 69; ping exits 0 when\n"
"  a quorum answered (with a warning on stderr if some did not), else 69.\n"
"\n", f);
    fprintf(f,
"Examples:\n"
"  export REDLOCK_NODES=redis://10.0.0.1,redis://10.0.0.2,redis://10.0.0.3\n"
"  %s exec nightly-backup -- /usr/local/bin/backup.sh   # 75: runs elsewhere\n"
"  %s exec --wait 5m --ttl 30s db-migrate -- make migrate\n"
"  %s status nightly-backup\n",
            prog, prog, prog);
}

/* Parses the arguments of a query command (status, ping): -h/--help,
 * --json, the global options, and at most one positional argument, stored
 * in *positional (none allowed when positional is NULL). Lives here, not in
 * args.c, because it prints the usage and args.c is also linked alone (the
 * fuzz target fuzz_cli_args). */
int cli_query_args(cli_t *c, int argc, char **argv, const char *cmd, int *json, const char **positional) {
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

int cli_open(cli_t *c, redlock_t **rl) {
    *rl = NULL;
    if (!c->nodes_given) {
        const char *env = getenv("REDLOCK_NODES");
        if (env && *env && cli_add_nodes(c, env, "REDLOCK_NODES") < 0) return CLI_EX_CONFIG;
    }
    if (c->n_nodes == 0) {
        cli_error(c, "no nodes: give --nodes URI[,URI...] or set REDLOCK_NODES");
        return CLI_EX_CONFIG;
    }
    if (c->too_many_nodes) {
        cli_error(c, "too many nodes: at most %d", REDLOCK_MAX_NODES);
        return CLI_EX_CONFIG;
    }
    /* Settings the tool does not expose follow the ones it does, so that any
     * accepted --op-timeout / --retry-delay makes a valid configuration. */
    if (c->opt.node_down_ms < c->opt.op_timeout_ms) c->opt.node_down_ms = c->opt.op_timeout_ms;
    if (!c->jitter_given && c->opt.retry_jitter_ms > c->opt.retry_delay_ms / 2)
        c->opt.retry_jitter_ms = c->opt.retry_delay_ms / 2;
    c->opt.nodes = (const char *const *)c->node_list;
    c->opt.n_nodes = c->n_nodes;
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

int main(int argc, char **argv) {
    cli_t c;
    memset(&c, 0, sizeof c);
    c.prog = "redlock";
    redlock_options_init(&c.opt);
    int rc = CLI_EX_USAGE, i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_print_usage(stdout, c.prog);
            rc = fflush(stdout) == 0 ? CLI_EX_OK : CLI_EX_OSERR;
            goto out;
        }
        if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("%s %s (libredlock %s)\n", c.prog, REDLOCK_VERSION, REDLOCK_VERSION);
            rc = fflush(stdout) == 0 ? CLI_EX_OK : CLI_EX_OSERR;
            goto out;
        }
        if (a[0] != '-' || a[1] == '\0') break; /* the command name */
        if (!strcmp(a, "--")) {
            rc = cli_usage_error(&c, "expected a command (exec, status or ping) before '--'");
            goto out;
        }
        int r = cli_global_option(&c, argc, argv, &i);
        if (r < 0) goto out;
        if (r == 0) {
            rc = cli_usage_error(&c, "unknown option '%s'", a);
            goto out;
        }
    }
    if (i >= argc) {
        rc = cli_usage_error(&c, "missing command: exec, status or ping");
        goto out;
    }
    const char *cmd = argv[i];
    if (!strcmp(cmd, "exec")) rc = cli_cmd_exec(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "status")) rc = cli_cmd_status(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "ping")) rc = cli_cmd_ping(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "help")) {
        cli_print_usage(stdout, c.prog);
        rc = CLI_EX_OK;
    } else rc = cli_usage_error(&c, "unknown command '%s' (expected exec, status or ping)", cmd);
out:
    cli_free_nodes(&c);
    return rc;
}
