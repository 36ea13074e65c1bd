/* simmain.c -- redlock-sim's command line (test/sim/README.md):
 *
 *   redlock-sim --scenario NAME --seeds N [--seed S] [--json] [--trace]
 *               [--first] [--verbose] [--expect none|violation] [--rtts MS,MS,...]
 *
 * Runs seeds S .. S+N-1 (S = 1 by default) of the scenario, one after
 * another, each a fresh simulation. A run with a violation prints its seed
 * and what was violated, and the first such run also the last events of
 * its trace; --seed S --seeds 1 --trace replays a seed with every event.
 * --verbose prints a line per seed (its ops, faults, violations and trace
 * hash); --first stops at the first seed with a violation.
 * With --json the last line is one JSON object: runs, ops (lock operations
 * completed), faults, violations, first_violation_seed, trace_hash (of
 * the runs' traces in order: a seed gives the same hash every time), and
 * for wan acquire_p50_ms, acquire_p99_ms and quorum_rtt_ms. The exit
 * status is 0 when the scenario's expectation held (safe, wan and
 * pause-with-fencing: no violation; the others: at least one), 1 when not, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

typedef struct totals {
    uint64_t runs, ops, faults, violations, violating_runs, lost_updates, stale;
    long long first_seed;
    uint64_t hash;
    double *lat;
    size_t nlat;
} totals_t;

/* Runs one seed of scenario scn and adds what it found to t. */
static void run_one(int scn, uint64_t seed, int trace, int verbose, const double *rtts, int nrtt, totals_t *t) {
    sim_t *s = calloc(1, sizeof *s);
    if (!s) abort();
    S = s;
    s->seed = seed;
    s->trace = trace;
    s->hash = 1469598103934665603ull;
    rng_seed(&s->r_cfg, seed, 1);
    rng_seed(&s->r_net, seed, 2);
    rng_seed(&s->r_fault, seed, 3);
    rng_seed(&s->r_work, seed, 4);
    rng_seed(&s->r_core, seed, 5);
    scenario_config(scn, &s->r_cfg, &s->cfg);
    if (scn == SCN_WAN) {
        s->cfg.n_nodes = nrtt;
        memcpy(s->cfg.wan_rtt_ms, rtts, (size_t)nrtt * sizeof *rtts);
    }
    scenario_setup(&s->r_cfg);
    net_init();
    clients_init();
    faults_init();
    sim_push(E_STOP, s->cfg.run_us, 0, 0, 0, NULL, 0);
    sim_loop(s->cfg.run_us + 1500000); /* the stop's releases and what is left settle */
    clients_free();
    check_windows();
    t->runs++;
    t->ops += s->ops;
    t->faults += s->faults;
    t->violations += s->violations;
    t->lost_updates += s->lost_updates;
    t->stale += s->stale_rejected;
    for (int i = 0; i < 8; i++) t->hash = (t->hash ^ ((s->hash >> (8 * i)) & 0xff)) * 1099511628211ull;
    if (verbose || trace)
        printf("seed %llu: %llu ops, %llu faults, %llu violations, trace hash %016llx\n", (unsigned long long)seed,
               (unsigned long long)s->ops, (unsigned long long)s->faults, (unsigned long long)s->violations,
               (unsigned long long)s->hash);
    if (s->violations) {
        printf("seed %llu: %llu violation%s: %s\n", (unsigned long long)seed, (unsigned long long)s->violations,
               s->violations > 1 ? "s" : "", s->first_violation);
        if (!t->violating_runs++ && !trace) {
            printf("trace of seed %llu, its last events (all of them: --seed %llu --seeds 1 --trace):\n",
                   (unsigned long long)seed, (unsigned long long)seed);
            trace_tail(stdout);
        }
        if (t->first_seed < 0) t->first_seed = (long long)seed;
    }
    if (s->nlat) {
        t->lat = realloc(t->lat, (t->nlat + s->nlat) * sizeof *t->lat);
        if (!t->lat) abort();
        size_t skip = s->nlat > 3 ? 3 : 0; /* the first acquires also open the connections */
        memcpy(t->lat + t->nlat, s->lat + skip, (s->nlat - skip) * sizeof *s->lat);
        t->nlat += s->nlat - skip;
    }
    sim_drop_events();
    net_free();
    free(s->wins);
    free(s->lat);
    free(s);
    S = NULL;
}

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

static int usage(const char *why) {
    fprintf(stderr, "redlock-sim: %s\nusage: redlock-sim --scenario NAME --seeds N [--seed S] [--json] [--trace] [--first]\n"
                    "                   [--verbose] [--expect none|violation] [--rtts MS,MS,...]\n"
                    "scenarios: safe restart-no-quarantine drift-beyond-bound pause-without-fencing wan pause-with-fencing\n",
            why);
    return 2;
}

int main(int argc, char **argv) {
    int scn = -1, json = 0, trace = 0, verbose = 0, first = 0, expect = -1, nrtt = 5;
    uint64_t seeds = 0, seed = 1;
    double rtts[SIM_MAX_NODES] = {0.2, 1, 2, 5, 10};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--trace")) trace = 1;
        else if (!strcmp(a, "--first")) first = 1;
        else if (!strcmp(a, "--verbose")) verbose = 1;
        else if (!v) return usage("missing value (or unknown option)");
        else if (!strcmp(a, "--scenario") && ++i) {
            if ((scn = scenario_by_name(v)) < 0) {
                fprintf(stderr, "redlock-sim: unknown scenario '%s'\n", v);
                return usage("bad --scenario");
            }
        } else if (!strcmp(a, "--seeds") && ++i) {
            char *end;
            seeds = strtoull(v, &end, 10);
            if (*end || !seeds) return usage("--seeds takes a positive number");
        } else if (!strcmp(a, "--seed") && ++i) {
            char *end;
            seed = strtoull(v, &end, 10);
            if (*end) return usage("--seed takes a number");
        } else if (!strcmp(a, "--expect") && ++i) {
            if (!strcmp(v, "none")) expect = 0;
            else if (!strcmp(v, "violation")) expect = 1;
            else return usage("--expect takes none or violation");
        } else if (!strcmp(a, "--rtts") && ++i) {
            if ((nrtt = parse_rtts(v, rtts)) < 0) return usage("--rtts takes up to 7 round trips in ms, e.g. 0.2,1,2,5,10");
        } else {
            fprintf(stderr, "redlock-sim: unknown option '%s'\n", a);
            return usage("bad option");
        }
    }
    if (scn < 0 || !seeds) return usage("--scenario and --seeds are required");
    if (expect < 0) expect = scn != SCN_SAFE && scn != SCN_WAN && scn != SCN_PAUSE_FENCED;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    totals_t t = {.first_seed = -1, .hash = 1469598103934665603ull};
    for (uint64_t k = 0; k < seeds && !(first && t.violations); k++) run_one(scn, seed + k, trace, verbose, rtts, nrtt, &t);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%s: %llu runs, %llu ops (%.1f a run), %llu faults (%.1f a run), %llu violations in %llu runs, "
           "%llu lost updates, %llu stale store operations refused, %.1f s\n",
           scenario_name(scn), (unsigned long long)t.runs, (unsigned long long)t.ops, (double)t.ops / (double)t.runs,
           (unsigned long long)t.faults, (double)t.faults / (double)t.runs, (unsigned long long)t.violations,
           (unsigned long long)t.violating_runs, (unsigned long long)t.lost_updates, (unsigned long long)t.stale, secs);
    double p50 = 0, p99 = 0, q = 0;
    if (scn == SCN_WAN) {
        double sorted[SIM_MAX_NODES];
        memcpy(sorted, rtts, (size_t)nrtt * sizeof *rtts);
        qsort(sorted, (size_t)nrtt, sizeof *sorted, cmp_double);
        q = sorted[nrtt / 2]; /* the quorum's round trip: the (N/2+1)-th fastest */
        if (t.nlat) {
            qsort(t.lat, t.nlat, sizeof *t.lat, cmp_double);
            p50 = t.lat[t.nlat / 2] / 1000.0;
            p99 = t.lat[(size_t)((double)t.nlat * 0.99)] / 1000.0;
        }
        printf("wan: %zu acquires, p50 %.3f ms, p99 %.3f ms, quorum round trip %.3f ms (p50 %.3fx)\n", t.nlat, p50,
               p99, q, q > 0 ? p50 / q : 0);
    }
    if (json) {
        printf("{\"scenario\":\"%s\",\"runs\":%llu,\"ops\":%llu,\"faults\":%llu,\"violations\":%llu,"
               "\"first_violation_seed\":",
               scenario_name(scn), (unsigned long long)t.runs, (unsigned long long)t.ops, (unsigned long long)t.faults,
               (unsigned long long)t.violations);
        if (t.first_seed >= 0) printf("%lld", t.first_seed);
        else printf("null");
        printf(",\"trace_hash\":\"%016llx\",\"seconds\":%.3f", (unsigned long long)t.hash, secs);
        if (scn == SCN_WAN)
            printf(",\"acquire_p50_ms\":%.4f,\"acquire_p99_ms\":%.4f,\"quorum_rtt_ms\":%.4f", p50, p99, q);
        printf("}\n");
    }
    free(t.lat);
    mlua_shutdown();
    return (t.violations > 0) == expect ? 0 : 1;
}
