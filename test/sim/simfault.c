/* simfault.c -- the faults (see sim.h): drawn by the run's fault stream
 * at exponential gaps, each kind within what the scenario allows. In the
 * safe scenario every fault stays inside Redlock's assumptions as the
 * library states them: node clocks step back by any amount but forward
 * by at most 1 ms in a run, rates stay within 0.45 % (client and
 * node together within the 1 % drift factor), and a node that
 * restarts empty is kept out by the restart quarantine (max_ttl_ms).
 * The replicated scenarios add stalled replica streams and failovers.
 * The breaking scenarios each add the one fault they are about. */
#include <stdlib.h>

#include "sim.h"

/* A duration in [lo, hi] ms, as µs. */
static uint64_t dur_ms(int lo, int hi) {
    return (uint64_t)rng_range(&S->r_fault, lo, hi) * 1000u;
}

static int any_node(void) {
    return (int)rng_below(&S->r_fault, (uint64_t)S->cfg.n_nodes);
}

/* A node not yet in *done (a bit per node), added to it. */
static int another_node(int *done) {
    int n = any_node();
    while (*done & (1 << n)) n = (n + 1) % S->cfg.n_nodes;
    *done |= 1 << n;
    return n;
}

/* Counts a fault of kind (F_*) that was injected. */
void fault_count(int kind) {
    S->faults++;
    S->fkind[kind]++;
}

/* Stops client c for us µs (a fault, counted). */
void fault_pause_client(int c, uint64_t us) {
    sclient_t *k = &S->clients[c];
    if (S->now + us > k->paused_until) k->paused_until = S->now + us;
    fault_count(F_CLIENT_PAUSE);
    trace_rec(T_FAULTED, F_CLIENT_PAUSE, c, (long long)us, 0);
    sim_push(E_HEAL, k->paused_until, F_CLIENT_PAUSE, c, 0, NULL, 0);
}

/* Cuts the links between a random set of clients and a random set of
 * nodes for a while. */
static void partition(void) {
    uint64_t until = S->now + dur_ms(30, 800);
    int nodes = 0;
    for (int n = 0; n < S->cfg.n_nodes; n++) {
        if (!rng_chance(&S->r_fault, 0.4)) continue;
        nodes |= 1 << n;
        for (int c = 0; c < S->cfg.n_clients; c++)
            if (rng_chance(&S->r_fault, 0.7)) S->cut[c][n] = until;
    }
    trace_rec(T_FAULTED, F_PARTITION, nodes, (long long)(until - S->now), 0);
}

/* Crashes `count` distinct nodes, each restarted empty after `down` µs. */
static void crash(int count, uint64_t down) {
    int done = 0;
    for (int k = 0; k < count; k++) {
        int n = another_node(&done);
        if (!S->nodes[n].up) continue;
        net_crash(n);
        trace_rec(T_FAULTED, F_CRASH, n, (long long)down, 0);
        sim_push(E_HEAL, S->now + down, F_CRASH, n, 0, NULL, 0);
    }
}

/* Steps node n's clock: back by up to 300 ms, or forward by what is left
 * of its 1 ms allowance. */
static void step_clock(int n) {
    snode_t *k = &S->nodes[n];
    double by = -(double)rng_range(&S->r_fault, 1, 300000);
    if (rng_chance(&S->r_fault, 0.5) && k->jumped_fwd_us < 1000) {
        by = rng_unit(&S->r_fault) * (1000 - k->jumped_fwd_us);
        k->jumped_fwd_us += by;
    }
    clock_step(&k->clock, S->now, by);
    trace_rec(T_FAULTED, F_STEP, n, (long long)by, 0);
}

/* 1 while none of node n's replicas has acknowledged the last key
 * migrated into it (a cluster's shard): that key is on its master alone. */
static int import_unreplicated(int n) {
    const snode_t *k = &S->nodes[n];
    if (!k->imported_off || !k->n_reps) return 0;
    for (int r = 0; r < k->n_reps; r++)
        if (k->reps[r].acked >= k->imported_off) return 0;
    return 1;
}

/* Node n's master dies with what its replicas' streams carried; its most
 * advanced replica is promoted after the detection time. A shard whose
 * imported keys no replica has yet dies once one has (simcluster.c). */
static void kill_master(int n) {
    if (!S->nodes[n].up) return;
    if (import_unreplicated(n)) {
        sim_push(E_FAULT, S->now + 5000, F_FAILOVER, n, 0, NULL, 0);
        return;
    }
    net_crash(n);
    trace_rec(T_FAULTED, F_FAILOVER, n, -1, 0);
    sim_push(E_HEAL, S->now + dur_ms(20, 300), F_FAILOVER, n, 0, NULL, 0);
}

/* Fails over `count` distinct nodes onto lagging replicas: every replica
 * of each stalls for 50-300 ms, and its master dies 10-40 ms into the
 * stall (a lock granted meanwhile is on no replica). */
static void lagging_failover(int count) {
    int done = 0;
    for (int k = 0; k < count; k++) {
        int n = another_node(&done);
        if (!S->nodes[n].up) continue;
        uint64_t until = S->now + dur_ms(50, 300);
        for (int r = 0; r < S->nodes[n].n_reps; r++) S->nodes[n].reps[r].stalled_until = until;
        trace_rec(T_FAULTED, F_STALL, n, (long long)(until - S->now), -1);
        sim_push(E_FAULT, S->now + dur_ms(10, 40), F_FAILOVER, n, 0, NULL, 0);
    }
    fault_count(F_FAILOVER);
}

/* One fault of the safe scenario's mix (and with replicas, a stalled
 * stream or a failover: of one node now, or of a majority onto lagging
 * replicas). */
static void safe_fault(void) {
    int kinds = S->cfg.n_replicas ? F_KINDS : F_SAFE_KINDS;
    int kind = 1 + (int)rng_below(&S->r_fault, (uint64_t)kinds - 1), n = any_node(), ids[256];
    snode_t *k = &S->nodes[n];
    switch (kind) {
    case F_SPIKE:
        k->slow_us = (double)dur_ms(5, 80);
        k->slow_until = S->now + dur_ms(50, 500);
        trace_rec(T_FAULTED, kind, n, (long long)k->slow_us, (long long)(k->slow_until - S->now));
        break;
    case F_RESET: {
        int m = net_open_conns(ids, 256);
        if (!m) return;
        int id = ids[rng_below(&S->r_fault, (uint64_t)m)];
        net_reset(S->conns[id]);
        trace_rec(T_FAULTED, kind, id, 0, 0);
        break;
    }
    case F_PARTITION: partition(); break;
    case F_NODE_PAUSE:
        k->paused_until = S->now + dur_ms(10, 800);
        trace_rec(T_FAULTED, kind, n, (long long)(k->paused_until - S->now), 0);
        break;
    case F_CRASH: crash(1 + (int)rng_below(&S->r_fault, 2), dur_ms(0, 400)); break;
    case F_STEP: step_clock(n); break;
    case F_CLIENT_PAUSE:
        fault_pause_client((int)rng_below(&S->r_fault, (uint64_t)S->cfg.n_clients), dur_ms(5, 1200));
        return; /* (counted there) */
    case F_PUBSUB:
        S->pubsub_loss_until = S->now + dur_ms(100, 1000);
        trace_rec(T_FAULTED, kind, 0, (long long)(S->pubsub_loss_until - S->now), 0);
        break;
    case F_RATE:
        clock_set_rate(&k->clock, S->now, (rng_unit(&S->r_fault) - 0.5) * 0.009);
        trace_rec(T_FAULTED, kind, n, (long long)(k->clock.rate * 1e6), 0);
        break;
    case F_STALL: repl_stall(n, S->now + dur_ms(20, 800)); break;
    case F_FAILOVER:
        if (rng_chance(&S->r_fault, 0.5)) {
            lagging_failover(S->cfg.n_nodes / 2 + 1);
            return; /* (counted there) */
        }
        kill_master(n);
        break;
    }
    fault_count(kind);
}

/* Schedules the next fault after an exponential gap, within the workload. */
static void next_fault(void) {
    uint64_t at = S->now + (uint64_t)rng_exp(&S->r_fault, S->cfg.fault_every_us);
    if (at < S->cfg.run_us) sim_push(E_FAULT, at, 0, 0, 0, NULL, 0);
}

/* Schedules the run's first fault, if its scenario has any. */
void faults_init(void) {
    if (S->cfg.fault_every_us > 0) next_fault();
}

/* A fault's moment: the scenario's next fault starts (and the one after
 * is scheduled), or a crashed node restarts, or a paused client resumes. */
void fault_event(sev_t *e) {
    if (e->kind == E_HEAL) {
        if (e->a == F_CRASH) net_restart(e->b);
        if (e->a == F_FAILOVER) repl_promote(e->b);
        if (e->a == F_CLIENT_PAUSE) client_pump(&S->clients[e->b]);
        return;
    }
    if (e->a == F_FAILOVER) { /* (a lagging failover's kill, scheduled) */
        kill_master(e->b);
        return;
    }
    if (S->cfg.scenario == SCN_RESTART) { /* a majority at once, back at once and empty */
        crash(S->cfg.n_nodes / 2 + 1, dur_ms(0, 20));
        fault_count(F_CRASH);
    } else if (S->cfg.scenario == SCN_LAGGING) {
        lagging_failover(S->cfg.n_nodes / 2 + 1);
    } else {
        safe_fault();
    }
    next_fault();
}
