/* statscmd.c -- `redlock stats [--count N] [--ttl DUR] [--prometheus]
 * [RESOURCE]`: a short probe (N acquire + release cycles on RESOURCE),
 * then what the library counted, as a table or in the Prometheus text
 * format. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "blocking.h"

#define PROBE_RESOURCE "redlock:stats-probe"
#define PROBE_TTL_MS 5000
#define PROBE_MAX 1000000

typedef struct probe_args {
    const char *resource;
    long count;
    int prometheus, ttl_given;
    int64_t ttl;
} probe_args_t;

/* Parses --count's value: a whole number 0..PROBE_MAX. Returns 0 or -1. */
static int parse_count(const char *v, long *out) {
    char *end = NULL;
    if (!v[0] || strspn(v, "0123456789") != strlen(v) || strlen(v) > 7) return -1;
    *out = strtol(v, &end, 10);
    return *out <= PROBE_MAX ? 0 : -1;
}

/* Tries the stats options at argv[*i]: 1 consumed, 0 not one, else an exit code. */
static int probe_option(cli_t *c, int argc, char **argv, int *i, probe_args_t *a) {
    const char *v = NULL;
    int r;
    if (cli_opt_flag(argv, i, "--prometheus")) return a->prometheus = 1;
    if ((r = cli_opt_value(c, argc, argv, i, "--ttl", &v)) != 0) {
        if (r < 0 || cli_ttl_value(c, v, &a->ttl)) return CLI_EX_USAGE;
        return a->ttl_given = 1;
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--count", &v)) == 0) return 0;
    if (r < 0) return CLI_EX_USAGE;
    if (parse_count(v, &a->count) < 0)
        return cli_usage_error(c, "invalid value for --count: '%s' (a whole number 0..%d)", v, PROBE_MAX);
    return 1;
}

/* Parses the arguments: -1 to go on, else the exit code. */
static int probe_parse(cli_t *c, int argc, char **argv, probe_args_t *a) {
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            cli_print_usage(stdout, c->prog);
            return CLI_EX_OK;
        }
        if ((r = probe_option(c, argc, argv, &i, a)) != 0 || (r = cli_global_option(c, argc, argv, &i)) != 0) {
            if (r != 1) return r < 0 ? CLI_EX_USAGE : r;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') return cli_usage_error(c, "stats: unknown option '%s'", argv[i]);
        if (a->resource) return cli_usage_error(c, "stats: unexpected argument '%s'", argv[i]);
        a->resource = argv[i];
    }
    if (a->resource && !a->resource[0]) return cli_usage_error(c, "stats: RESOURCE is empty");
    return cli_fit_ttl(c, &a->ttl, a->ttl_given) ? CLI_EX_USAGE : -1;
}

/* Runs the probe; returns how many acquires ended with neither a grant
 * nor a refusal (no quorum, errors). */
static long probe(redlock_t *rl, const probe_args_t *a, long *granted) {
    long undecided = 0;
    for (long k = 0; k < a->count; k++) {
        redlock_lock_t *lock = NULL;
        int rc = redlock_try_acquire(rl, a->resource, (uint32_t)a->ttl, &lock);
        if (rc == REDLOCK_OK)
            ++*granted, redlock_release(rl, lock);
        else if (rc != REDLOCK_ERR_TAKEN)
            undecided++;
    }
    return undecided;
}

/* Prints the non-zero call counters of one kind. */
static void print_calls(const char *verb, const uint64_t *by_code) {
    for (int rc = REDLOCK_OK; rc >= REDLOCK_ERR_LAST_; rc--) {
        char result[32];
        if (!by_code[-rc]) continue;
        rl_result_name(rc, result, sizeof result);
        printf("  %-8s  %-12s  %8llu\n", verb, result, (unsigned long long)by_code[-rc]);
    }
}

/* Mean of a histogram in µs (0 when empty). */
static unsigned long long mean_us(const redlock_histogram_t *h) {
    return h->count ? (unsigned long long)(h->sum_us / h->count) : 0;
}

/* The table: calls by result, rounds, then node by node. */
static void print_table(const redlock_stats_t *s) {
    printf("  %-8s  %-12s  %8s\n", "CALL", "RESULT", "COUNT");
    print_calls("acquire", s->acquires);
    print_calls("extend", s->extends);
    print_calls("release", s->releases);
    print_calls("adopt", s->adopts);
    printf("rounds: %llu, mean %llu us; locks lost: %llu; split votes: %llu\n", (unsigned long long)s->rounds.count,
           mean_us(&s->rounds), (unsigned long long)s->locks_lost, (unsigned long long)s->splits);
    int w = 4;
    for (size_t i = 0; i < s->n_nodes; i++)
        if ((int)strlen(s->nodes[i].node) > w) w = (int)strlen(s->nodes[i].node);
    printf("  %2s  %-*s  %6s  %6s  %7s  %6s  %11s  %7s  %6s  %10s  %12s\n", "#", w, "NODE", "YES", "NO", "TIMEOUT",
           "DOWN", "QUARANTINED", "SUSPECT", "ERROR", "RECONNECTS", "RTT_MEAN(us)");
    for (size_t i = 0; i < s->n_nodes; i++) {
        const redlock_node_stats_t *n = &s->nodes[i];
        printf("  %2zu  %-*s  %6llu  %6llu  %7llu  %6llu  %11llu  %7llu  %6llu  %10llu  %12llu\n", i, w, n->node,
               (unsigned long long)n->yes, (unsigned long long)n->no, (unsigned long long)n->timeout,
               (unsigned long long)n->down, (unsigned long long)n->quarantined, (unsigned long long)n->suspect,
               (unsigned long long)n->error, (unsigned long long)n->reconnects, mean_us(&n->rtt));
    }
}

/* Writes the Prometheus text of rl to stdout. Returns 0 or -1. */
static int print_prometheus(redlock_t *rl) {
    int need = redlock_stats_prometheus(rl, NULL, 0);
    char *buf = need >= 0 ? malloc((size_t)need + 1) : NULL;
    if (!buf) return -1;
    redlock_stats_prometheus(rl, buf, (size_t)need + 1);
    fputs(buf, stdout);
    free(buf);
    return 0;
}

int cli_cmd_stats(cli_t *c, int argc, char **argv) {
    probe_args_t a = {.resource = NULL, .count = 10, .ttl = PROBE_TTL_MS};
    int rc = probe_parse(c, argc, argv, &a);
    if (rc >= 0) return rc;
    if (!a.resource) a.resource = PROBE_RESOURCE;
    redlock_t *rl = NULL;
    if ((rc = cli_open(c, &rl)) != 0) return rc;
    static redlock_stats_t s; /* about 16 KB: kept off the stack */
    long granted = 0, undecided = probe(rl, &a, &granted);
    redlock_stats(rl, &s);
    if (!a.prometheus)
        printf("probe: %ld acquire + release cycle(s) on '%s': %ld granted\n", a.count, a.resource, granted);
    if (a.prometheus ? print_prometheus(rl) < 0 : (print_table(&s), 0)) rc = CLI_EX_OSERR;
    if (fflush(stdout) != 0) rc = CLI_EX_OSERR;
    if (undecided) {
        cli_error(c, "%ld of %ld probe acquires reached no decision (no quorum or errors)", undecided, a.count);
        if (!rc) rc = CLI_EX_UNAVAILABLE;
    }
    redlock_free(rl);
    return rc > 0 ? rc : CLI_EX_OK;
}
