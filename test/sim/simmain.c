/* simmain.c -- redlock-sim's command line (test/sim/README.md):
 *
 *   redlock-sim --scenario NAME --seeds N [--seed S] [--json] [--trace]
 *               [--first] [--verbose] [--quiet] [--floors]
 *               [--expect none|two-holders|lost-update|token-order]
 *               [--rtts MS,MS,...] [--max-p50-ratio R]
 *               [--wan-op mutex|fenced|wait|permit|reader] [--min-replicas N]
 *               [--sentinel yes|no]
 *
 * Runs seeds S .. S+N-1 (S = 1 by default) of the scenario, one after
 * another, each a fresh simulation. A run with a violation prints its seed
 * and what was violated, and the first such run also the last events of
 * its trace; --seed S --seeds 1 --trace replays a seed with every event.
 * --verbose prints a line per seed (its ops, faults, violations and trace
 * hash); --quiet leaves out the lines of seeds with violations; --first
 * stops at the first seed that settles the expectation (a violation of
 * the expected kind). --expect names what the seeds must show: none, or
 * the kind of violation a breaking scenario exists to show (by default
 * the scenario's own, simverdict.c); a runaway run fails every
 * expectation. --floors also fails a scenario whose seeds did less than
 * its floors of grants, faults and coverage (simverdict.c). wan's nodes
 * are --rtts away (round trips in ms, one per node; default
 * 0.2,1,2,5,10), and --max-p50-ratio R fails the run when the acquire p50
 * is above R times the quorum's round trip (a simulated-time property,
 * not a speed). --wan-op picks what wan times: a plain mutex (default), a
 * fenced one, an acquire that would wait, a permit of 2, a reader's lock.
 * --min-replicas N gives the clients of a replicated scenario that
 * min_replicas instead of the scenario's draw (0: votes not counted after
 * replication, which replicated must then be caught at, but in Sentinel
 * groups, whose promotion quarantine keeps it safe). --sentinel yes|no
 * makes the nodes of replicated and lagging-promotion Sentinel groups
 * (redis+sentinel:// URIs, simsentinel.c) or plain masters with replicas
 * instead of the seed's draw (half the seeds each).
 * With --json the last line is one JSON object: runs, ops (lock operations
 * completed), faults, violations, first_violation_seed, trace_hash (of
 * the runs' traces in order: a seed gives the same hash every time),
 * seconds, what the verdict rests on (simverdict.c: the expectation,
 * violations by kind, stale writes refused, faults by kind, the floors)
 * and for wan acquire_p50_ms, acquire_p99_ms and quorum_rtt_ms. The exit
 * status is 0 when the expectation (and with --floors the floors) held,
 * 1 when not, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

/* How the runs go and what they print. */
typedef struct opts {
    int trace, verbose, quiet, wan_op;
    long min_replicas; /* the clients' min_replicas instead of the scenario's, -1: the scenario's */
    int sentinel;      /* 1: Sentinel groups, 0: not, -1: the scenario's draw */
    double rtts[SIM_MAX_NODES];
    int nrtt;
} opts_t;

/* Makes the run of seed (scenario scn) the current one, set up and
 * ready to go. */
static sim_t *run_setup(int scn, uint64_t seed, const opts_t *o) {
    sim_t *s = calloc(1, sizeof *s);
    if (!s) abort();
    S = s;
    s->seed = seed;
    s->trace = o->trace;
    s->hash = 1469598103934665603ull;
    rng_seed(&s->r_cfg, seed, 1);
    rng_seed(&s->r_net, seed, 2);
    rng_seed(&s->r_fault, seed, 3);
    rng_seed(&s->r_work, seed, 4);
    rng_seed(&s->r_core, seed, 5);
    scenario_config(scn, &s->r_cfg, &s->cfg);
    if (scn == SCN_WAN) {
        s->cfg.n_nodes = o->nrtt;
        memcpy(s->cfg.wan_rtt_ms, o->rtts, (size_t)o->nrtt * sizeof *o->rtts);
        s->cfg.wan_op = o->wan_op;
        s->cfg.res[0].kind = o->wan_op == WAN_PERMIT ? RK_SEM : o->wan_op == WAN_READER ? RK_RW : RK_MUTEX;
        s->cfg.res[0].limit = 2;
    }
    if (o->sentinel >= 0) scenario_sentinel(&s->cfg, o->sentinel);
    if (o->min_replicas >= 0) s->cfg.min_replicas = (uint32_t)o->min_replicas;
    scenario_setup(&s->r_cfg);
    net_init();
    repl_init();
    cluster_init();
    clients_init();
    member_init();
    faults_init();
    return s;
}

/* Adds what run s found to t, and says so for a run with a violation. */
static void collect(const sim_t *s, const opts_t *o, totals_t *t) {
    t->runs++;
    t->ops += s->ops;
    t->faults += s->faults;
    t->violations += s->violations;
    t->lost_updates += s->lost_updates;
    for (int i = 0; i < COV_N; i++) t->cov[i] += s->cov[i];
    for (int i = 0; i < V_KINDS; i++) t->vkind[i] += s->vkind[i];
    for (int i = 0; i < F_KINDS; i++) t->fkind[i] += s->fkind[i];
    for (int i = 0; i < 8; i++) t->hash = (t->hash ^ ((s->hash >> (8 * i)) & 0xff)) * 1099511628211ull;
    if (o->verbose || o->trace)
        printf("seed %llu: %llu ops, %llu faults, %llu events, %llu violations, trace hash %016llx\n",
               (unsigned long long)s->seed, (unsigned long long)s->ops, (unsigned long long)s->faults,
               (unsigned long long)s->events, (unsigned long long)s->violations, (unsigned long long)s->hash);
    if (s->violations && !o->quiet)
        printf("seed %llu: %llu violation%s: %s\n", (unsigned long long)s->seed, (unsigned long long)s->violations,
               s->violations > 1 ? "s" : "", s->first_violation);
    if (s->violations && !t->violating_runs++) t->first_seed = (long long)s->seed;
    if (s->nlat) {
        size_t skip = s->nlat > 3 ? 3 : 0; /* the first acquires also open the connections */
        if (!(t->lat = realloc(t->lat, (t->nlat + s->nlat) * sizeof *t->lat))) abort();
        memcpy(t->lat + t->nlat, s->lat + skip, (s->nlat - skip) * sizeof *s->lat);
        t->nlat += s->nlat - skip;
    }
}

/* Runs seed of scenario scn to its end; with t, adds what it found to t.
 * focus_to: keep in the trace ring only what happened up to then, timers
 * and replication left out (0: everything), and print its last records.
 * Returns the first violation's moment (real µs), 0 when none. */
static uint64_t run_seed(int scn, uint64_t seed, const opts_t *o, totals_t *t, uint64_t focus_to) {
    sim_t *s = run_setup(scn, seed, o);
    s->focus_to = focus_to;
    sim_push(E_STOP, s->cfg.run_us, 0, 0, 0, NULL, 0);
    sim_loop(s->cfg.run_us + 1500000); /* the stop's releases and what is left settle */
    clients_free();
    check_windows();
    if (t) collect(s, o, t);
    if (focus_to) trace_tail(stdout, SIM_TRACE_SHORT);
    uint64_t at = s->violations ? s->violation_at : 0;
    sim_drop_events();
    repl_free();
    cluster_free();
    sentinel_free();
    net_free();
    free(s->wins);
    free(s->lat);
    free(s);
    S = NULL;
    return at;
}

/* Runs one seed of scenario scn and adds what it found to t; the first
 * seed with a violation runs again for the last events before it. */
static void run_one(int scn, uint64_t seed, const opts_t *o, totals_t *t) {
    uint64_t first = t->violating_runs;
    uint64_t at = run_seed(scn, seed, o, t, 0);
    if (!at || first || o->quiet || o->trace) return;
    printf("trace of seed %llu up to its first violation at %.3f ms, the routine left out (all of it: --seed %llu "
           "--seeds 1 --trace):\n",
           (unsigned long long)seed, (double)at / 1000.0, (unsigned long long)seed);
    opts_t quiet = *o;
    quiet.verbose = 0;
    run_seed(scn, seed, &quiet, NULL, at + 1);
}

/* qsort order of doubles. */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Parses "0.2,1,2,5,10" into rtts (at most SIM_MAX_NODES); returns how
 * many, or -1. */
static int parse_rtts(const char *s, double *rtts) {
    int n = 0;
    for (const char *p = s; *p && n < SIM_MAX_NODES;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || v <= 0 || v > 10000) return -1;
        rtts[n++] = v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n >= 1 ? n : -1;
}

/* Says why the command line is wrong and how it goes; returns 2. */
static int usage(const char *why) {
    fprintf(stderr,
            "redlock-sim: %s\nusage: redlock-sim --scenario NAME --seeds N [--seed S] [--json] [--trace] [--first]\n"
            "                   [--verbose] [--quiet] [--floors] [--expect none|two-holders|lost-update|token-order]\n"
            "                   [--rtts MS,MS,...] [--max-p50-ratio R] [--wan-op mutex|fenced|wait|permit|reader]\n"
            "                   [--min-replicas N] [--sentinel yes|no]\n"
            "scenarios: safe restart-no-quarantine drift-beyond-bound pause-without-fencing wan pause-with-fencing\n"
            "           replicated lagging-promotion membership membership-no-record membership-no-wait cluster\n",
            why);
    return 2;
}

/* The command line's choices. */
typedef struct args {
    int scn, json, first, floors;
    int expect; /* V_* (not V_RUNAWAY), V_KINDS: none; -1 until parsed */
    uint64_t seeds, seed;
    double max_ratio; /* wan: fail when acquire p50 exceeds this many quorum round trips (0: no check) */
    opts_t o;
} args_t;

/* Parses a number option's value v into *out; 0 or -1. */
static int number(const char *v, double lo, double hi, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

/* Fills a from the command line; returns 0, or 2 after saying what is wrong. */
static int parse(int argc, char **argv, args_t *a) {
    *a = (args_t){.scn = -1,
                  .expect = -1,
                  .seed = 1,
                  .o = {.nrtt = 5, .rtts = {0.2, 1, 2, 5, 10}, .min_replicas = -1, .sentinel = -1}};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(k, "--json"))
            a->json = 1;
        else if (!strcmp(k, "--trace"))
            a->o.trace = 1;
        else if (!strcmp(k, "--first"))
            a->first = 1;
        else if (!strcmp(k, "--verbose"))
            a->o.verbose = 1;
        else if (!strcmp(k, "--quiet"))
            a->o.quiet = 1;
        else if (!strcmp(k, "--floors"))
            a->floors = 1;
        else if (!v)
            return usage("missing value (or unknown option)");
        else if (!strcmp(k, "--scenario") && ++i) {
            if ((a->scn = scenario_by_name(v)) < 0)
                return fprintf(stderr, "redlock-sim: unknown scenario '%s'\n", v), usage("bad --scenario");
        } else if (!strcmp(k, "--seeds") && ++i) {
            if (number(v, 1, 1e9, &x)) return usage("--seeds takes a number from 1 to 1000000000");
            a->seeds = (uint64_t)x;
        } else if (!strcmp(k, "--seed") && ++i) {
            if (number(v, 0, 1e15, &x)) return usage("--seed takes a number from 0 to 10^15");
            a->seed = (uint64_t)x;
        } else if (!strcmp(k, "--expect") && ++i) {
            if ((a->expect = expect_by_name(v)) < 0)
                return fprintf(stderr, "redlock-sim: unknown --expect '%s'\n", v),
                       usage("--expect takes none, two-holders, lost-update or token-order (never runaway)");
        } else if (!strcmp(k, "--rtts") && ++i) {
            if ((a->o.nrtt = parse_rtts(v, a->o.rtts)) < 0)
                return usage("--rtts takes up to 7 round trips in ms, e.g. 0.2,1,2,5,10");
        } else if (!strcmp(k, "--wan-op") && ++i) {
            static const char *const ops[WAN_OPS] = {"mutex", "fenced", "wait", "permit", "reader"};
            for (a->o.wan_op = 0; a->o.wan_op < WAN_OPS && strcmp(ops[a->o.wan_op], v); a->o.wan_op++) {
            }
            if (a->o.wan_op == WAN_OPS) return usage("--wan-op takes mutex, fenced, wait, permit or reader");
        } else if (!strcmp(k, "--min-replicas") && ++i) {
            if (number(v, 0, SIM_MAX_REPLICAS, &x)) return usage("--min-replicas takes a number from 0 to 2");
            a->o.min_replicas = (long)x;
        } else if (!strcmp(k, "--sentinel") && ++i) {
            if (strcmp(v, "yes") && strcmp(v, "no")) return usage("--sentinel takes yes or no");
            a->o.sentinel = !strcmp(v, "yes");
        } else if (!strcmp(k, "--max-p50-ratio") && ++i) {
            if (number(v, 1, 100, &a->max_ratio)) return usage("--max-p50-ratio takes a number from 1 to 100");
        } else {
            fprintf(stderr, "redlock-sim: unknown option '%s'\n", k);
            return usage("bad option");
        }
    }
    if (a->scn < 0 || !a->seeds) return usage("--scenario and --seeds are required");
    if (a->expect < 0) a->expect = scenario_expect(a->scn);
    return 0;
}

/* Prints the summary, the coverage lines, wan's latencies, with --floors
 * each floor and (json) the JSON object; returns 1 when wan's p50 broke
 * max_ratio or a floor was missed (said on stderr), else 0. */
static int report(const args_t *a, totals_t *t, double secs) {
    printf("%s: %llu runs, %llu ops (%.1f a run), %llu faults (%.1f a run), %llu violations in %llu runs, "
           "%llu lost updates, %llu stale writes and %llu stale reads refused, %.1f s\n",
           scenario_name(a->scn), (unsigned long long)t->runs, (unsigned long long)t->ops,
           (double)t->ops / (double)t->runs, (unsigned long long)t->faults, (double)t->faults / (double)t->runs,
           (unsigned long long)t->violations, (unsigned long long)t->violating_runs,
           (unsigned long long)t->lost_updates, (unsigned long long)t->cov[COV_STALE_WRITES],
           (unsigned long long)t->cov[COV_STALE_READS], secs);
    verdict_coverage(stdout, t);
    double p50 = 0, p99 = 0, q = 0, sorted[SIM_MAX_NODES];
    if (a->scn == SCN_WAN) {
        memcpy(sorted, a->o.rtts, (size_t)a->o.nrtt * sizeof *sorted);
        qsort(sorted, (size_t)a->o.nrtt, sizeof *sorted, cmp_double);
        q = sorted[a->o.nrtt / 2]; /* the quorum's round trip: the (N/2+1)-th fastest node's */
        if (t->nlat) {
            qsort(t->lat, t->nlat, sizeof *t->lat, cmp_double);
            p50 = t->lat[t->nlat / 2] / 1000.0;
            p99 = t->lat[(size_t)((double)t->nlat * 0.99)] / 1000.0;
        }
        printf("wan: %zu acquires, p50 %.3f ms, p99 %.3f ms, quorum round trip %.3f ms (p50 %.3fx)\n", t->nlat, p50,
               p99, q, q > 0 ? p50 / q : 0);
    }
    int rc = a->floors && verdict_floors(t, a->scn, 1) > 0;
    if (a->json) {
        printf("{\"scenario\":\"%s\",\"runs\":%llu,\"ops\":%llu,\"faults\":%llu,\"violations\":%llu,"
               "\"first_violation_seed\":",
               scenario_name(a->scn), (unsigned long long)t->runs, (unsigned long long)t->ops,
               (unsigned long long)t->faults, (unsigned long long)t->violations);
        if (t->first_seed >= 0)
            printf("%lld", t->first_seed);
        else
            printf("null");
        printf(",\"trace_hash\":\"%016llx\",\"seconds\":%.3f", (unsigned long long)t->hash, secs);
        verdict_json(stdout, t, a->scn, a->expect);
        if (a->scn == SCN_WAN)
            printf(",\"acquire_p50_ms\":%.4f,\"acquire_p99_ms\":%.4f,\"quorum_rtt_ms\":%.4f", p50, p99, q);
        printf("}\n");
    }
    if (a->max_ratio > 0 && a->scn == SCN_WAN && (!t->nlat || p50 > a->max_ratio * q)) {
        fprintf(stderr, "redlock-sim: wan acquire p50 %.3f ms is above %.2f x the quorum's round trip %.3f ms\n", p50,
                a->max_ratio, q);
        rc = 1;
    }
    return rc;
}

/* Runs the seeds; the exit status says whether the expectation (and
 * the floors and bounds asked for) held. */
int main(int argc, char **argv) {
    args_t a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    totals_t t = {.first_seed = -1, .hash = 1469598103934665603ull};
    for (uint64_t k = 0; k < a.seeds && !(a.first && verdict_settled(&t, a.expect)); k++)
        run_one(a.scn, a.seed + k, &a.o, &t);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    rc = report(&a, &t, secs);
    rc |= verdict_expect(&t, a.scn, a.expect);
    free(t.lat);
    mlua_shutdown();
    return rc;
}
