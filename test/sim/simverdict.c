/* simverdict.c -- what a run of seeds must show to pass (see sim.h).
 *
 * A breaking scenario passes only when it found the kind of violation it
 * exists to show (--expect, by default the scenario's own): two holders
 * at once, or a lost update. A run that spins past SIM_MAX_EVENTS (the
 * runaway guard) never counts as that: it fails every scenario.
 *
 * A scenario that must hold passes only with no violation and, with
 * --floors, only when the seeds did enough to prove something: their
 * grants, faults, and every kind of lock, operation and fault the
 * scenario exercises, each at least a floor a run on average. The floors
 * sit far below what the scenarios do (the JSON line prints both), so
 * that only a run that does (almost) nothing falls below them. */
#include <math.h>
#include <string.h>

#include "sim.h"

static const char *const vnames[V_KINDS] = {"two-holders", "lost-update", "token-order", "runaway"};

/* The figures a floor can name: the coverage counters, then these. */
enum { FIG_GRANTS = COV_N, FIG_FAULTS, FIG_FAULT /* + F_* */, FIG_N = FIG_FAULT + F_KINDS };

static const char *const cov_names[COV_N] = {"mutexes",
                                             "permits",
                                             "readers",
                                             "writers",
                                             "fenced",
                                             "refused",
                                             "waits",
                                             "wake-ups",
                                             "cancels",
                                             "auto-extended",
                                             "extensions",
                                             "lost",
                                             "abandoned",
                                             "quarantined votes",
                                             "silent nodes",
                                             "reconnects",
                                             "store writes",
                                             "stale writes refused",
                                             "stale reads refused",
                                             "replicated batches",
                                             "WAITs answered",
                                             "WAITs short",
                                             "promotions",
                                             "promoted behind",
                                             "membership steps",
                                             "redeploys",
                                             "refused by a record",
                                             "MOVED",
                                             "ASK",
                                             "TRYAGAIN",
                                             "keys migrated",
                                             "slots migrated",
                                             "sentinel look-ups",
                                             "failovers announced",
                                             "refused as a replica"};

/* A floor: scenario scn's figure fig must average at least per_run a run. */
typedef struct sfloor {
    int scn, fig;
    double per_run;
} sfloor_t;

/* About a quarter of what each figure averages a run (the rare ones
 * too: a lost lock, a cancel, each fault kind). */
static const sfloor_t floors[] = {
    {SCN_SAFE, FIG_GRANTS, 18},
    {SCN_SAFE, FIG_FAULTS, 4},
    {SCN_SAFE, COV_MUTEX, 7},
    {SCN_SAFE, COV_PERMIT, 6},
    {SCN_SAFE, COV_READER, 3},
    {SCN_SAFE, COV_WRITER, 1.3},
    {SCN_SAFE, COV_FENCED, 7},
    {SCN_SAFE, COV_WAITS, 16},
    {SCN_SAFE, COV_WAKEUPS, 12},
    {SCN_SAFE, COV_CANCELS, 0.7},
    {SCN_SAFE, COV_AUTOEXT, 2.5},
    {SCN_SAFE, COV_EXTENDS, 7},
    {SCN_SAFE, COV_LOST, 0.1},
    {SCN_SAFE, COV_ABANDONED, 0.5},
    {SCN_SAFE, COV_QUARANTINED, 100},
    {SCN_SAFE, COV_SUSPECTED, 7},
    {SCN_SAFE, COV_RECONNECTS, 4},
    {SCN_SAFE, COV_STORE_WRITES, 5},
    {SCN_SAFE, FIG_FAULT + F_SPIKE, 0.4},
    {SCN_SAFE, FIG_FAULT + F_RESET, 0.4},
    {SCN_SAFE, FIG_FAULT + F_PARTITION, 0.4},
    {SCN_SAFE, FIG_FAULT + F_NODE_PAUSE, 0.4},
    {SCN_SAFE, FIG_FAULT + F_CRASH, 0.4},
    {SCN_SAFE, FIG_FAULT + F_STEP, 0.4},
    {SCN_SAFE, FIG_FAULT + F_CLIENT_PAUSE, 0.4},
    {SCN_SAFE, FIG_FAULT + F_PUBSUB, 0.4},
    {SCN_SAFE, FIG_FAULT + F_RATE, 0.4},
    {SCN_PAUSE_FENCED, FIG_GRANTS, 4},
    {SCN_PAUSE_FENCED, COV_FENCED, 4},
    {SCN_PAUSE_FENCED, FIG_FAULT + F_CLIENT_PAUSE, 1.2},
    {SCN_PAUSE_FENCED, COV_STORE_WRITES, 1.2},
    {SCN_PAUSE_FENCED, COV_STALE_WRITES, 1},
    {SCN_WAN, FIG_GRANTS, 20}, /* (a 4 s run at a quorum round trip of up to 100 ms) */
    {SCN_REPLICATED, FIG_GRANTS, 18},
    {SCN_REPLICATED, FIG_FAULTS, 4},
    {SCN_REPLICATED, COV_PERMIT, 6},
    {SCN_REPLICATED, COV_FENCED, 7},
    {SCN_REPLICATED, COV_EXTENDS, 7},
    {SCN_REPLICATED, COV_REPL_BATCHES, 300},
    {SCN_REPLICATED, COV_WAITS_ANSWERED, 350},
    {SCN_REPLICATED, COV_WAIT_SHORT, 6},
    {SCN_REPLICATED, COV_PROMOTIONS, 0.7},
    {SCN_REPLICATED, COV_PROMOTED_BEHIND, 0.3},
    {SCN_REPLICATED, COV_LOOKUPS, 9}, /* (half the seeds' nodes are Sentinel groups) */
    {SCN_REPLICATED, COV_SWITCHES, 0.9},
    /* (bursty: 1.2 a run over 240 seeds, 0.13 over the first 60; waiters a release does not name send nothing) */
    {SCN_REPLICATED, COV_REPLICA_REFUSED, 0.1},
    {SCN_REPLICATED, FIG_FAULT + F_FAILOVER, 0.4},
    {SCN_REPLICATED, FIG_FAULT + F_STALL, 0.4},
    {SCN_MEMBERSHIP, FIG_GRANTS, 18},
    {SCN_MEMBERSHIP, FIG_FAULTS, 4},
    {SCN_MEMBERSHIP, COV_PERMIT, 6},
    {SCN_MEMBERSHIP, COV_FENCED, 7},
    {SCN_MEMBERSHIP, COV_STEPS, 3.5}, /* (begun, joint, advanced, finished: every run takes all four) */
    {SCN_MEMBERSHIP, COV_REDEPLOYS, 5.5},
    {SCN_MEMBERSHIP, COV_REFUSED_BY_RECORD, 2.5},
    {SCN_MEMBERSHIP, FIG_FAULT + F_CRASH, 0.4},
    {SCN_CLUSTER, FIG_GRANTS, 18},
    {SCN_CLUSTER, FIG_FAULTS, 4},
    {SCN_CLUSTER, COV_PERMIT, 6},
    {SCN_CLUSTER, COV_FENCED, 7},
    {SCN_CLUSTER, COV_WAITS_ANSWERED, 350},
    {SCN_CLUSTER, COV_PROMOTIONS, 0.7},
    {SCN_CLUSTER, COV_MOVED, 25},
    {SCN_CLUSTER, COV_ASK, 4},
    {SCN_CLUSTER, COV_TRYAGAIN, 0.4},
    {SCN_CLUSTER, COV_KEYS_MIGRATED, 12},
    {SCN_CLUSTER, COV_SLOTS_MIGRATED, 8},
    {SCN_CLUSTER, FIG_FAULT + F_FAILOVER, 0.4},
    {SCN_CLUSTER, FIG_FAULT + F_CRASH, 0.4},
};

/* The name of violation kind k (V_*). */
const char *violation_name(int k) {
    return k >= 0 && k < V_KINDS ? vnames[k] : "?";
}

/* What --expect names: a kind of violation (V_*, never the runaway
 * guard), V_KINDS for "none", or -1 for anything else. */
int expect_by_name(const char *name) {
    if (!strcmp(name, "none")) return V_KINDS;
    for (int k = 0; k < V_RUNAWAY; k++)
        if (!strcmp(name, vnames[k])) return k;
    return -1;
}

/* What an expectation is called (V_KINDS: none). */
const char *expect_name(int expect) {
    return expect == V_KINDS ? "none" : violation_name(expect);
}

/* Figure fig of totals t. */
static uint64_t figure(const totals_t *t, int fig) {
    if (fig < COV_N) return t->cov[fig];
    if (fig == FIG_GRANTS) return t->cov[COV_MUTEX] + t->cov[COV_PERMIT] + t->cov[COV_READER] + t->cov[COV_WRITER];
    if (fig == FIG_FAULTS) return t->faults;
    return t->fkind[fig - FIG_FAULT];
}

/* Figure fig's name. */
static const char *figure_name(int fig) {
    return fig < COV_N         ? cov_names[fig]
           : fig == FIG_GRANTS ? "grants"
           : fig == FIG_FAULTS ? "faults"
                               : fault_name(fig - FIG_FAULT);
}

/* The total floor f asks of t's runs. */
static uint64_t floor_total(const sfloor_t *f, const totals_t *t) {
    return (uint64_t)ceil(f->per_run * (double)t->runs);
}

/* Prints the coverage line: every coverage counter of t. */
void verdict_coverage(FILE *out, const totals_t *t) {
    fprintf(out, "coverage:");
    for (int i = 0; i < COV_N; i++)
        fprintf(out, " %s %llu%s", cov_names[i], (unsigned long long)t->cov[i], i + 1 < COV_N ? "," : "\n");
    fprintf(out, "faults by kind:");
    for (int k = 1; k < F_KINDS; k++)
        fprintf(out, " %s %llu%s", fault_name(k), (unsigned long long)t->fkind[k], k + 1 < F_KINDS ? "," : "\n");
}

/* Checks scenario scn's floors against t (printing each with its margin
 * when verbose); returns how many were missed, each said on stderr. */
int verdict_floors(const totals_t *t, int scn, int verbose) {
    int missed = 0;
    for (size_t i = 0; i < sizeof floors / sizeof floors[0]; i++) {
        const sfloor_t *f = &floors[i];
        if (f->scn != scn) continue;
        uint64_t got = figure(t, f->fig), min = floor_total(f, t);
        if (verbose)
            printf("floor: %s %llu, at least %llu (%.1fx)\n", figure_name(f->fig), (unsigned long long)got,
                   (unsigned long long)min, min ? (double)got / (double)min : 0.0);
        if (got < min) {
            fprintf(stderr, "redlock-sim: %s: %s %llu in %llu runs, below its floor of %llu (%.2f a run)\n",
                    scenario_name(scn), figure_name(f->fig), (unsigned long long)got, (unsigned long long)t->runs,
                    (unsigned long long)min, f->per_run);
            missed++;
        }
    }
    return missed;
}

/* Whether the seeds run so far settle expectation expect (--first stops
 * there): a violation of the expected kind or a runaway, or for none any
 * violation. */
int verdict_settled(const totals_t *t, int expect) {
    if (expect == V_KINDS) return t->violations > 0;
    return t->vkind[expect] > 0 || t->vkind[V_RUNAWAY] > 0;
}

/* Prints t's violations by kind ("two-holders 3, lost-update 0, ..."). */
static void by_kind(FILE *out, const totals_t *t) {
    for (int k = 0; k < V_KINDS; k++)
        fprintf(out, "%s %llu%s", vnames[k], (unsigned long long)t->vkind[k], k + 1 < V_KINDS ? ", " : "");
}

/* Whether t meets expectation expect: 0, or 1 after saying why on stderr. */
int verdict_expect(const totals_t *t, int scn, int expect) {
    const char *why = NULL;
    if (t->vkind[V_RUNAWAY])
        why = "a run spun past the event limit (runaway), which no scenario expects";
    else if (expect == V_KINDS && t->violations)
        why = "violations, where none may be";
    else if (expect < V_KINDS && !t->vkind[expect])
        why = "no violation of the expected kind";
    if (!why) return 0;
    fprintf(stderr, "redlock-sim: %s: %s (expected %s; found ", scenario_name(scn), why, expect_name(expect));
    by_kind(stderr, t);
    fprintf(stderr, ")\n");
    return 1;
}

/* Appends to the JSON object on out what the verdict rests on: the
 * expectation, violations by kind, stale writes refused, faults by kind
 * and scenario scn's floors (totals, got and min). */
void verdict_json(FILE *out, const totals_t *t, int scn, int expect) {
    fprintf(out, ",\"expected\":\"%s\",\"violations_by_kind\":{", expect_name(expect));
    for (int k = 0; k < V_KINDS; k++)
        fprintf(out, "%s\"%s\":%llu", k ? "," : "", vnames[k], (unsigned long long)t->vkind[k]);
    fprintf(out, "},\"lost_updates\":%llu,\"stale_writes_refused\":%llu,\"stale_reads_refused\":%llu,\"grants\":%llu",
            (unsigned long long)t->lost_updates, (unsigned long long)t->cov[COV_STALE_WRITES],
            (unsigned long long)t->cov[COV_STALE_READS], (unsigned long long)figure(t, FIG_GRANTS));
    fprintf(out, ",\"faults_by_kind\":{");
    for (int k = 1; k < F_KINDS; k++)
        fprintf(out, "%s\"%s\":%llu", k > 1 ? "," : "", fault_name(k), (unsigned long long)t->fkind[k]);
    fprintf(out, "},\"floors\":{");
    int n = 0;
    for (size_t i = 0; i < sizeof floors / sizeof floors[0]; i++)
        if (floors[i].scn == scn)
            fprintf(out, "%s\"%s\":{\"got\":%llu,\"min\":%llu}", n++ ? "," : "", figure_name(floors[i].fig),
                    (unsigned long long)figure(t, floors[i].fig), (unsigned long long)floor_total(&floors[i], t));
    fprintf(out, "}");
}
