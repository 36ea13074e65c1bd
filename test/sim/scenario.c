/* scenario.c -- the scenarios (see test/sim/README.md): what a run of
 * each looks like, drawn from the run's configuration stream.
 *   safe                  random mixes within Redlock's assumptions
 *   restart-no-quarantine a majority crashes and restarts empty while
 *                         locks are held, and clients keep no quarantine
 *   drift-beyond-bound    a majority of node clocks run 10-30 % fast
 *   pause-without-fencing a holder pauses between its validity check
 *                         and its unfenced write
 *   wan                   one client, nodes at set round trips, no fault
 *   pause-with-fencing    pause-without-fencing's pauses, every client
 *                         fencing: the control (no lost update)
 *   replicated            safe's mix on masters with 1-2 replicas, votes
 *                         counted after replication (min_replicas >= 1),
 *                         with stalled streams and failovers onto lagging
 *                         replicas
 *   lagging-promotion     a majority fails over onto replicas whose
 *                         streams stalled, min_replicas 0
 *   membership            the node set changes from OLD to NEW by the
 *                         procedure (records, redeploys, advance's wait)
 *                         amid safe's faults, restarts keeping their data
 *   membership-no-record  clients of OLD and of NEW side by side
 *   membership-no-wait    the procedure with advance taken at once
 *   cluster               replicated's mix where each node is a Redis
 *                         Cluster of 3 shards, with slot migrations
 *                         (MOVED, ASK, TRYAGAIN) and shard failovers */
#include <string.h>

#include "sim.h"
#include "ttls.h"

static const char *const names[SCN_COUNT] = {
    "safe",       "restart-no-quarantine", "drift-beyond-bound", "pause-without-fencing",
    "wan",        "pause-with-fencing",    "replicated",         "lagging-promotion",
    "membership", "membership-no-record",  "membership-no-wait", "cluster"};

/* The scenario called name (SCN_*), or -1. */
int scenario_by_name(const char *name) {
    for (int i = 0; i < SCN_COUNT; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

/* Scenario scn's name. */
const char *scenario_name(int scn) {
    return scn >= 0 && scn < SCN_COUNT ? names[scn] : "?";
}

/* The kind of violation scenario scn exists to show (V_*), or V_KINDS
 * for one that must hold: a restart without quarantine and clocks that
 * drift beyond the bound give two holders at once; a pause between the
 * validity check and an unfenced write loses updates. */
int scenario_expect(int scn) {
    return scn == SCN_RESTART || scn == SCN_DRIFT || scn == SCN_LAGGING || scn == SCN_MEM_NO_RECORD ||
                   scn == SCN_MEM_NO_WAIT
               ? V_TWO_HOLDERS
           : scn == SCN_PAUSE ? V_LOST_UPDATE
                              : V_KINDS;
}

/* Adds resource name of kind (limit for a semaphore). */
static void add_res(scfg_t *g, const char *name, int kind, unsigned limit) {
    sres_t *r = &g->res[g->n_res++];
    strncpy(r->name, name, sizeof r->name - 1);
    r->kind = kind;
    r->limit = limit;
}

/* The safe scenario's mix: 3, 5 or 7 nodes, 2-4 clients of 1-3 actors,
 * two mutexes, a semaphore of 2 or 3 permits and a read-write lock. */
static void safe(rng_t *r, scfg_t *g) {
    static const int sizes[] = {3, 3, 5, 5, 5, 7};
    g->n_nodes = sizes[rng_below(r, 6)];
    g->n_clients = (int)rng_range(r, 2, 4);
    g->n_actors = (int)rng_range(r, 1, 3);
    add_res(g, "m0", RK_MUTEX, 0);
    add_res(g, "m1", RK_MUTEX, 0);
    add_res(g, "s0", RK_SEM, (unsigned)rng_range(r, 2, 3));
    add_res(g, "rw0", RK_RW, 0);
    g->ttl_min = SIM_TTL_SAFE_MIN;
    g->ttl_max = SIM_TTL_SAFE_MAX;
    g->max_ttl_ms = SIM_TTL_SAFE_MAX;
    g->quarantine = 1;
    g->fencing_p = 0.5;
    g->fault_every_us = 250000;
    g->run_us = 3500000;
}

/* What the breaking scenarios share: 3 or 5 nodes, 3 clients of 2
 * actors, one mutex, TTLs of 200-500 ms. */
static void breaking(rng_t *r, scfg_t *g) {
    g->n_nodes = rng_chance(r, 0.5) ? 3 : 5;
    g->n_clients = 3;
    g->n_actors = 2;
    add_res(g, "m0", RK_MUTEX, 0);
    g->ttl_min = SIM_TTL_BREAK_MIN;
    g->ttl_max = SIM_TTL_BREAK_MAX;
}

/* The node set's change: OLD and NEW as bits of the run's nodes. Two of
 * three replaced (quorums of OLD and NEW can miss each other), three
 * grown to five, five shrunk to three, or one of five replaced; the
 * breaking scenarios take the first. */
static void change(rng_t *r, scfg_t *g, int any) {
    static const unsigned olds[4] = {0x07, 0x07, 0x1f, 0x1f}, news[4] = {0x19, 0x1f, 0x07, 0x2f};
    static const int nodes[4] = {5, 5, 5, 6};
    int k = any ? (int)rng_below(r, 4) : 0;
    g->old_mask = olds[k];
    g->new_mask = news[k];
    g->n_nodes = nodes[k];
}

/* What the membership scenarios share: 3 clients of 2 actors, TTLs of
 * 150-500 ms, the restart quarantine at the longest, restarts keeping
 * their data (a record must outlive a restart). */
static void member(rng_t *r, scfg_t *g, int mode) {
    change(r, g, mode == MEM_PROC);
    g->membership = mode;
    g->n_clients = mode == MEM_NO_RECORD ? 4 : 3;
    g->n_actors = 2;
    add_res(g, "m0", RK_MUTEX, 0);
    g->ttl_min = SIM_TTL_SAFE_MIN;
    g->ttl_max = SIM_TTL_SAFE_MAX;
    g->max_ttl_ms = SIM_TTL_SAFE_MAX;
    g->quarantine = 1;
    g->keep_data = 1;
    g->run_us = 5000000;
    g->up_us = 3600000000u; /* (a redeployed handle would find new nodes in the restart quarantine) */
}

/* safe's mix on masters with 1-2 replicas each, votes counted after
 * replication (min_replicas 1 up to them), faults every 200 ms, the nodes
 * up an hour (a promoted replica passes the restart quarantine). */
static void replicated(rng_t *r, scfg_t *g) {
    safe(r, g);
    g->n_replicas = (int)rng_range(r, 1, SIM_MAX_REPLICAS);
    g->min_replicas = (uint32_t)rng_range(r, 1, g->n_replicas);
    g->repl_lat_max_us = 2000;
    g->fault_every_us = 200000;
    g->up_us = 3600000000u;
}

void scenario_sentinel(scfg_t *g, int on) {
    g->sentinel = on && g->n_replicas > 0 && !g->n_shards;
    /* lagging-promotion breaks without the promotion quarantine, which a
     * Sentinel group's look-up would otherwise start */
    if (g->scenario == SCN_LAGGING) g->quarantine = !g->sentinel;
}

/* Fills g with scenario scn's configuration, drawn from r. */
void scenario_config(int scn, rng_t *r, scfg_t *g) {
    memset(g, 0, sizeof *g);
    g->scenario = scn;
    g->run_us = 3000000;
    g->think_us = 5000;
    g->margin_ms = 10;
    g->long_hold_p = 0.1;
    switch (scn) {
    case SCN_SAFE:
        safe(r, g); /* (after the defaults: it lengthens the run) */
        break;
    case SCN_RESTART:
    case SCN_DRIFT:
    case SCN_PAUSE:
    case SCN_PAUSE_FENCED:
        breaking(r, g);
        if (scn == SCN_RESTART) g->fault_every_us = 300000;
        if (scn == SCN_DRIFT) g->long_hold_p = 0.8;
        if (scn == SCN_PAUSE || scn == SCN_PAUSE_FENCED) g->pause_check_write = 1;
        if (scn == SCN_PAUSE_FENCED) g->fencing_p = 1;
        break;
    case SCN_REPLICATED:
        replicated(r, g);
        scenario_sentinel(g, rng_chance(r, 0.5));
        if (g->sentinel) /* the promotion quarantine alone may keep it safe */
            g->min_replicas = (uint32_t)rng_range(r, 0, g->n_replicas);
        break;
    case SCN_LAGGING:
        breaking(r, g);
        g->max_ttl_ms = SIM_TTL_BREAK_MAX;
        g->quarantine = 1; /* (a restart's: a promoted replica did not restart) */
        g->n_replicas = 1;
        g->repl_lat_max_us = 2000;
        g->fault_every_us = 300000;
        g->up_us = 3600000000u;
        g->long_hold_p = 0.8; /* (a holder still holds when the promoted replicas answer) */
        scenario_sentinel(g, rng_chance(r, 0.5));
        break;
    case SCN_MEMBERSHIP:
        member(r, g, MEM_PROC);
        add_res(g, "m1", RK_MUTEX, 0);
        add_res(g, "s0", RK_SEM, 2);
        add_res(g, "rw0", RK_RW, 0);
        g->fencing_p = 0.5;
        g->straggler_p = 0.3;
        g->fault_every_us = 250000;
        break;
    case SCN_MEM_NO_RECORD: member(r, g, MEM_NO_RECORD); break;
    case SCN_MEM_NO_WAIT:
        member(r, g, MEM_NO_WAIT);
        g->long_hold_p = 0.8; /* (an old client's lock outlives its redeploy) */
        break;
    case SCN_CLUSTER:
        replicated(r, g);
        g->n_shards = 3;
        g->n_nodes = 3 * g->n_shards; /* (three clusters) */
        g->migrate_every_us = 300000;
        break;
    case SCN_WAN:
        g->n_nodes = 5;
        g->n_clients = 1;
        g->n_actors = 1;
        add_res(g, "m0", RK_MUTEX, 0);
        g->ttl_min = g->ttl_max = SIM_TTL_WAN;
        g->think_us = 500; /* (the resource's kind follows --wan-op: simmain.c) */
        g->hold_us = 500;
        g->run_us = 4000000;
        break;
    }
}

/* Sets the run's nodes and clients up for its scenario: latencies, clock
 * offsets and rates. wan_rtt_ms (n_nodes entries, wan only) are the
 * nodes' round trips. */
void scenario_setup(rng_t *r) {
    scfg_t *g = &S->cfg;
    if (!g->membership) g->old_mask = g->new_mask = (1u << g->n_nodes) - 1; /* (no change: every node) */
    for (int i = 0; i < g->n_nodes; i++) {
        snode_t *n = &S->nodes[i];
        n->clock.local0 = 1.7e15 + (double)rng_range(r, -50000, 50000); /* NTP-close wall clocks */
        n->lat_us = (double)rng_range(r, 100, 1500);
        n->jit_us = n->lat_us * 0.1 + 20;
        if (g->scenario == SCN_SAFE) n->clock.rate = (rng_unit(r) - 0.5) * 0.009;
        if (g->scenario == SCN_DRIFT && i <= g->n_nodes / 2) n->clock.rate = 0.1 + rng_unit(r) * 0.2;
        if (g->scenario == SCN_WAN) {
            n->lat_us = g->wan_rtt_ms[i] * 500.0;
            n->jit_us = n->lat_us * 0.05;
        }
    }
    for (int i = 0; i < g->n_clients; i++) {
        sclient_t *c = &S->clients[i];
        c->clock.local0 = 1e12 + (double)rng_range(r, 0, 1000000000);
        if (g->scenario == SCN_SAFE) c->clock.rate = (rng_unit(r) - 0.5) * 0.009;
    }
}
