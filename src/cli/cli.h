/* cli.h -- the redlock command-line tool: what its files share.
 *
 *   main.c    global options before the command, dispatch, --help / --version
 *   common.c  opening the redlock_t, the argument loop shared by status and ping
 *   usage.c   the --help text
 *   args.c    durations, numbers, option matching, the node list
 *   output.c  exit codes, JSON strings, token prefixes, per-node reports
 *   exec.c    `redlock exec`: lock, run a command under auto-extension, release
 *   status.c  `redlock status`: who holds a resource, node by node
 *   ping.c    `redlock ping`: node health and persistence settings
 *   steps.c   `redlock acquire`, `extend`, `release`: a lock held across a script's steps
 *   tokenarg.c  the token of extend and release: argument, environment or stdin
 *   statscmd.c  `redlock stats`: a probe, then the counters as a table or Prometheus text
 */
#ifndef REDLOCK_CLI_H
#define REDLOCK_CLI_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "redlock.h"

/* Exit codes (sysexits style). Everything else is the command's own status. */
enum {
    CLI_EX_OK = 0,
    CLI_EX_USAGE = 64,       /* bad command line: unknown option, bad duration, missing -- */
    CLI_EX_UNAVAILABLE = 69, /* no quorum of nodes reachable (down, refused, auth, I/O) */
    CLI_EX_SOFTWARE = 70,    /* internal error */
    CLI_EX_OSERR = 71,       /* the OS refused: fork, out of memory */
    CLI_EX_TEMPFAIL = 75,    /* the lock is held by another owner (after --wait) */
    CLI_EX_CONFIG = 78,      /* configuration rejected: malformed URI, option out of range, no nodes */
    CLI_EX_LOST = 79,        /* the lock was lost while the command ran */
    CLI_EX_MAXHOLD = 80,     /* exec: the lock ended at --max-hold while the command ran */
    CLI_EX_NOEXEC = 126,     /* the command exists but cannot be executed */
    CLI_EX_NOTFOUND = 127    /* the command was not found */
};

/* Exit codes of the step commands (acquire, extend, release): a small
 * table a deploy script can test with `case $?`. */
enum {
    CLI_STEP_OK = 0,
    CLI_STEP_REFUSED = 1,   /* acquire: held by another owner; extend, release: token not held */
    CLI_STEP_BAD_INPUT = 2, /* usage, malformed token, bad option value or node URI, no nodes */
    CLI_STEP_NO_QUORUM = 3  /* no quorum answered (down, timed out, credentials), or another failure */
};

/* Longest duration accepted, in ms (the library's TTL limit, ~24.8 days). */
#define CLI_MAX_DURATION_MS 2147483647LL
/* Characters of a token (or foreign lock value) the tool ever shows. */
#define CLI_TOKEN_PREFIX 8

/* A node list from its option (repeatable) or, when that was not given,
 * its environment variable. */
typedef struct cli_nodes {
    char *uri[REDLOCK_MAX_NODES + 1]; /* malloc'd URIs */
    size_t n;
    int given;    /* the option was used (the environment variable is then ignored) */
    int too_many; /* more than REDLOCK_MAX_NODES were given */
} cli_nodes_t;

typedef struct cli {
    const char *prog;      /* "redlock" */
    redlock_options_t opt; /* filled from the global options */
    cli_nodes_t nodes;     /* --nodes / REDLOCK_NODES */
    cli_nodes_t next;      /* --next-nodes / REDLOCK_NEXT_NODES: a joint handle's next list */
    int verbose;           /* -v count */
} cli_t;

/* ---- args.c ---- */

/* Parses a duration: one part, or several summed, each digits with an
 * optional fraction and a unit `h`, `m`, `s` or `ms`, each unit at most
 * once and largest first (1h30m, 2m30s, 1s500ms); a lone number without a
 * unit is ms. Every part must be a whole number of ms and the sum in
 * 0..CLI_MAX_DURATION_MS. Returns 0, or -1 with a message naming s in err. */
int cli_parse_duration(const char *s, int64_t *ms, char *err, size_t errlen);
/* Parses a finite non-negative decimal number (e.g. the drift factor). */
int cli_parse_double(const char *s, double *out, char *err, size_t errlen);

/* The value of --ttl (a duration above 0) and of --wait (a duration, or
 * 'forever': -1). Return 0, or CLI_EX_USAGE after printing why. */
int cli_ttl_value(const cli_t *c, const char *v, int64_t *ttl);
/* v parsed as a duration above 0 for option opt, into *ms; 0, or
 * CLI_EX_USAGE after printing why (naming opt and v). */
int cli_positive_duration(const cli_t *c, const char *opt, const char *v, int64_t *ms);
int cli_wait_value(const cli_t *c, const char *v, int64_t *wait);

/* Parses a semaphore's limit (--limit): decimal digits, 1 to
 * REDLOCK_MAX_PERMITS. Returns 0, or -1 with a message naming s in err. */
int cli_parse_limit(const char *s, unsigned *limit, char *err, size_t errlen);
/* The value of --limit. Returns 0, or CLI_EX_USAGE after printing why. */
int cli_limit_value(const cli_t *c, const char *v, unsigned *limit);

/* Option matching at argv[*i]: `--name VALUE` or `--name=VALUE`. Returns 1
 * and sets *val (advancing *i past a separate value), 0 if argv[*i] is not
 * this option, -1 (message printed) if the value is missing. */
int cli_opt_value(cli_t *c, int argc, char **argv, int *i, const char *name, const char **val);
/* 1 when argv[*i] is exactly the flag `name` (no value). */
int cli_opt_flag(char **argv, const int *i, const char *name);

/* Tries the global options at argv[*i]. Returns 1 if consumed (with *i on
 * its last word), 0 if argv[*i] is not a global option, or -1 after
 * printing a usage error. */
int cli_global_option(cli_t *c, int argc, char **argv, int *i);

/* Appends the comma-separated URIs of list (spaces around commas trimmed).
 * Returns 0, or -1 after printing a usage error (empty element). */
int cli_add_nodes(cli_t *c, cli_nodes_t *to, const char *list, const char *from);
void cli_free_nodes(cli_nodes_t *l);

/* Prints "prog: message" to stderr. */
void cli_error(const cli_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints a usage error (and a hint to run --help); returns CLI_EX_USAGE. */
int cli_usage_error(const cli_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- common.c, usage.c ---- */

/* Fills the node lists from the environment where their options were not
 * given and checks them (some nodes, not too many). Returns 0 or an exit
 * code, reported. */
int cli_resolve_nodes(cli_t *c);

/* cli_open over the lists given (next NULL: a plain handle). */
int cli_open_over(cli_t *c, const char *const *nodes, size_t n, const char *const *next, size_t nn, redlock_t **rl);

/* Makes the redlock_t from the global options (nodes from --nodes or
 * REDLOCK_NODES). Returns 0, or an exit code after printing why. */
int cli_open(cli_t *c, redlock_t **rl);
void cli_print_usage(FILE *f, const char *prog);
/* With --max-ttl, the default TTL shrinks to it and a TTL given above it
 * is refused before any node is asked (the library would refuse it too).
 * Returns 0, or CLI_EX_USAGE after printing why. */
int cli_fit_ttl(const cli_t *c, int64_t *ttl, int given);
/* Parses the arguments of a query command (`status`, `ping`): -h/--help,
 * --json, --limit N (only when limit is not NULL), the global options, and
 * at most one positional argument stored in *positional (none allowed when
 * positional is NULL). Returns -1 when the command should go on, else the
 * exit status to return at once (CLI_EX_OK after printing help,
 * CLI_EX_USAGE after a usage error). In common.c, not args.c: args.c is
 * linked alone into the fuzz target. */
int cli_query_args(cli_t *c, int argc, char **argv, const char *cmd, int *json, const char **positional,
                   unsigned *limit);

/* ---- output.c ---- */

/* The exit code for a library result (REDLOCK_OK -> 0). */
int cli_exit_code(int rc);

/* The kind of lock a command takes: a mutex (limit 0, shared 0), a permit
 * of a semaphore of `limit` permits (redlock_acquire_permit), or a
 * reader's lock (shared: redlock_acquire_shared). */
typedef struct cli_kind {
    unsigned limit; /* 1..REDLOCK_MAX_PERMITS for a permit, else 0 */
    int shared;
} cli_kind_t;

/* interrupt.c: the acquire of kind (NULL: a mutex, redlock_acquire_ex)
 * with SIGINT / SIGTERM ending the wait (redlock_cancel_waits): then
 * REDLOCK_ERR_CANCELLED, nothing held, a message printed and *exit_code
 * 128 + the signal; else *exit_code 0 and the acquire's result. */
int cli_acquire_interruptible(const cli_t *c, redlock_t *rl, const char *resource, const cli_kind_t *kind,
                              uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **lock, redlock_report_t *rep,
                              int *exit_code);
/* The step commands' exit code for a library result, and for an exit
 * code of the exec table (usage 64 and configuration 78 are bad input). */
int cli_step_code(int rc);
int cli_step_exit(int ex);
/* Writes "nodes":[...] of rep as JSON (index, node, vote, rtt_us, error). */
void cli_json_nodes(FILE *f, const redlock_report_t *rep);
/* A joint handle's node's list(s) in a word: "old", "new" or "both". */
const char *cli_lists_name(unsigned lists);
/* Writes s (n bytes) as a JSON string, quotes included. */
void cli_json_strn(FILE *f, const char *s, size_t n);
void cli_json_str(FILE *f, const char *s); /* NULL -> null */
/* Copies at most CLI_TOKEN_PREFIX bytes of v into out (size >=
 * CLI_TOKEN_PREFIX + 1), replacing anything unprintable by '?'. */
void cli_prefix(char *out, const char *v, size_t n);
/* Prints one line per node of rep (vote, round trip, detail), indented. */
void cli_print_report(FILE *f, const redlock_report_t *rep);
/* A node's name for tables: "redis://host:port -> 127.0.0.1:port" once
 * it is connected (the address its connection uses), else the URI. */
#define CLI_LABEL_LEN 4200
void cli_node_label(const redlock_node_report_t *nr, char *buf, size_t n);
/* Widest node label in rep (at least min). */
int cli_node_width(const redlock_report_t *rep, int min);

/* ---- shards.c ---- */

/* A shard of a Redis Cluster node, as `redlock ping` shows it. */
#include "cluster.h"
#define CLI_MAX_SHARDS 64
typedef struct cli_shard {
    rl_shard_view_t v;
    int up;
    int64_t rtt_us;
    char error[256];
} cli_shard_t;
/* Fills out with node i's shards (none for a plain node) and measures
 * each one's round trip; returns how many. */
size_t cli_shards_collect(redlock_t *rl, size_t i, cli_shard_t *out, size_t cap);
/* Prints them indented under their node; as a JSON member ",\"shards\":[...]". */
void cli_shards_print(const cli_shard_t *s, size_t n);
void cli_shards_json(const cli_shard_t *s, size_t n);

/* ---- tokenarg.c ---- */

/* Where a step command's token comes from: exactly one of a TOKEN
 * argument, --token-env NAME or --token-stdin. */
typedef struct cli_token_src {
    const char *arg, *env;
    int from_stdin;
} cli_token_src_t;

/* Reads the token from src into out (REDLOCK_TOKEN_LEN + 1 bytes) and
 * checks it is 40 lowercase hex characters. Returns 0, or CLI_EX_USAGE
 * after printing why (never any of the token). */
int cli_read_token(const cli_t *c, const char *cmd, const cli_token_src_t *src, char *out);

/* ---- commands ---- */
int cli_cmd_exec(cli_t *c, int argc, char **argv);
int cli_cmd_status(cli_t *c, int argc, char **argv);
int cli_cmd_ping(cli_t *c, int argc, char **argv);
int cli_cmd_acquire(cli_t *c, int argc, char **argv); /* steps.c */
int cli_cmd_extend(cli_t *c, int argc, char **argv);
int cli_cmd_release(cli_t *c, int argc, char **argv);
int cli_cmd_stats(cli_t *c, int argc, char **argv);      /* statscmd.c */
int cli_cmd_membership(cli_t *c, int argc, char **argv); /* membership.c */

#endif
