/* simcluster.c -- Redis Cluster nodes (see sim.h). In the cluster
 * scenario each of the clients' Redlock nodes is a cluster of
 * cfg.n_shards shards: servers c*K .. c*K+K-1 (10.0.0.(server+1)), each a
 * primary with its replicas (simrepl.c). Every primary's model runs in
 * cluster mode: it serves the slots the cluster's map gives its shard and
 * answers MOVED for the others. Now and then a slot that holds a
 * resource's keys migrates to another shard of its cluster, one slot at a
 * time per cluster: the source answers ASK for keys it no longer has (and
 * TRYAGAIN when it has some of a command's keys), the target serves them
 * after ASKING, the keys move one by one as MIGRATE moves them (atomic,
 * the TTL going as what is left of it), and the map changes once the last
 * key moved. A shard's failover promotes its replica at the same address
 * (simrepl.c); the map then names the promoted replica's id. The operator
 * who moves slots keeps doc/cluster.md's rule: no slot leaves a shard
 * within max_ttl_ms of its restart (it may have lost locks, and a handle
 * that did not see the restart cannot tell where they went). And a shard
 * does not fail over while a key migrated into it is on its master alone
 * (simfault.c): Redis replicates an import as it does any write, after
 * the fact, and no client's WAIT covers it (doc/cluster.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SLOTS 16384

typedef struct scl {
    uint8_t owner[SLOTS]; /* the shard (0..K-1) serving each slot */
    int mig_slot;         /* the slot migrating, -1: none */
    int from, to;         /* its source and target shards */
} scl_t;

static scl_t *CL; /* the run's clusters (cfg.n_nodes / cfg.n_shards) */

/* The cluster of server srv, and its shard there. */
static scl_t *cluster_of(int srv, int *shard) {
    *shard = srv % S->cfg.n_shards;
    return &CL[srv / S->cfg.n_shards];
}

/* The server of shard s of cluster cl. */
static int server_of(const scl_t *cl, int s) {
    return (int)(cl - CL) * S->cfg.n_shards + s;
}

/* The model's route hook for server arg (see model_route_fn). */
static const char *route(void *arg, int slot, int nkeys, int present, int asking) {
    static char err[64];
    int me;
    scl_t *cl = cluster_of((int)(intptr_t)arg, &me);
    int migrating = cl->mig_slot == slot;
    if (cl->owner[slot] == me) {
        if (!migrating || present == nkeys) return NULL;
        S->cov[present ? COV_TRYAGAIN : COV_ASK]++;
        if (present) return "TRYAGAIN Multiple keys request during rehashing of slot";
        snprintf(err, sizeof err, "ASK %d 10.0.0.%d:6379", slot, server_of(cl, cl->to) + 1);
        return err;
    }
    if (migrating && cl->to == me && asking) {
        if (nkeys < 2 || present == nkeys) return NULL;
        S->cov[COV_TRYAGAIN]++;
        return "TRYAGAIN Multiple keys request during rehashing of slot";
    }
    S->cov[COV_MOVED]++;
    snprintf(err, sizeof err, "MOVED %d 10.0.0.%d:6379", slot, server_of(cl, cl->owner[slot]) + 1);
    return err;
}

/* Appends [host, port, id] of server srv's primary (replica 0) or of its
 * replica r to o; a replica's host is 10.0.r.x (never dialled: the
 * library only reads its id). */
static void node_entry(sbuf_t *o, int srv, int r) {
    char host[32], id[48];
    snprintf(host, sizeof host, "10.0.%d.%d", r, srv + 1);
    snprintf(id, sizeof id, "%040x", (unsigned)(srv * 16 + r + 1));
    resp_array(o, 3);
    resp_bulk(o, host, strlen(host));
    resp_int(o, 6379);
    resp_bulk(o, id, strlen(id));
}

/* The model's CLUSTER SLOTS hook for server arg: each run of slots with
 * one owner, its primary and replicas. */
static void slots(void *arg, sbuf_t *o) {
    int me;
    scl_t *cl = cluster_of((int)(intptr_t)arg, &me);
    int n = 0;
    for (int k = 0; k < SLOTS; k++)
        if (k == 0 || cl->owner[k] != cl->owner[k - 1]) n++;
    resp_array(o, n);
    for (int lo = 0; lo < SLOTS;) {
        int hi = lo;
        while (hi + 1 < SLOTS && cl->owner[hi + 1] == cl->owner[lo]) hi++;
        int srv = server_of(cl, cl->owner[lo]);
        resp_array(o, 3 + S->nodes[srv].n_reps);
        resp_int(o, lo);
        resp_int(o, hi);
        node_entry(o, srv, 0);
        for (int r = 0; r < S->nodes[srv].n_reps; r++) node_entry(o, srv, r + 1);
        lo = hi + 1;
    }
}

void cluster_attach(int srv) {
    if (S->cfg.n_shards) model_set_cluster(S->nodes[srv].m, route, slots, (void *)(intptr_t)srv);
}

/* Schedules cluster c's next slot migration. */
static void next_migration(int c) {
    uint64_t at = S->now + (uint64_t)rng_exp(&S->r_fault, S->cfg.migrate_every_us);
    if (at < S->cfg.run_us) sim_push(E_MIGRATE, at, c, 0, 0, NULL, 0);
}

/* Splits each cluster's slots evenly among its shards (as redis-cli
 * --cluster create does) and puts every primary in cluster mode. */
void cluster_init(void) {
    if (!S->cfg.n_shards) return;
    int n = S->cfg.n_nodes / S->cfg.n_shards;
    if (!(CL = calloc((size_t)n, sizeof *CL))) abort();
    for (int c = 0; c < n; c++) {
        CL[c].mig_slot = -1;
        for (int k = 0; k < SLOTS; k++) CL[c].owner[k] = (uint8_t)((long)k * S->cfg.n_shards / SLOTS);
        if (S->cfg.migrate_every_us > 0) next_migration(c);
    }
    for (int i = 0; i < S->cfg.n_nodes; i++) cluster_attach(i);
}

void cluster_free(void) {
    free(CL);
    CL = NULL;
}

/* When server srv's slots may leave it: max_ttl_ms after its last restart. */
static uint64_t may_leave_at(int srv) {
    uint64_t r = S->nodes[srv].restarted_at;
    return r ? r + (uint64_t)S->cfg.max_ttl_ms * 1000u : 0;
}

/* A migration of cluster c starts: the slot of a resource's keys (the
 * library keeps them under the tag {name}) goes from its shard to another. */
static void migrate_start(int c) {
    scl_t *cl = &CL[c];
    const sres_t *r = &S->cfg.res[rng_below(&S->r_fault, (uint64_t)S->cfg.n_res)];
    int slot = model_key_slot(r->name, strlen(r->name));
    uint64_t wait = may_leave_at(server_of(cl, cl->owner[slot]));
    if (wait > S->now) { /* (the operator's rule) */
        sim_push(E_MIGRATE, wait, c, 0, 0, NULL, 0);
        return;
    }
    cl->mig_slot = slot;
    cl->from = cl->owner[slot];
    cl->to = (cl->from + 1 + (int)rng_below(&S->r_fault, (uint64_t)S->cfg.n_shards - 1)) % S->cfg.n_shards;
    trace_rec(T_MIGRATING, c, slot, cl->from, cl->to);
    sim_push(E_MIGRATE, S->now + 200 + rng_below(&S->r_fault, 3000), c, 1, 0, NULL, 0);
}

/* 1 when server srv can take part in a MIGRATE now. */
static int reachable(int srv) {
    const snode_t *n = &S->nodes[srv];
    return n->up && n->paused_until <= S->now;
}


/* One step of cluster c's migration: a key moves, or, none being left,
 * the slot's owner changes (its shard channels' subscribers are dropped
 * where it was); with either side down or stopped, the step waits. */
static void migrate_step(int c) {
    scl_t *cl = &CL[c];
    int from = server_of(cl, cl->from), to = server_of(cl, cl->to), slot = cl->mig_slot;
    if (!reachable(from) || !reachable(to) || may_leave_at(from) > S->now) {
        uint64_t wait = may_leave_at(from);
        sim_push(E_MIGRATE, wait > S->now ? wait : S->now + 5000, c, 1, 0, NULL, 0);
        return;
    }
    if (model_migrate_one(S->nodes[from].m, S->nodes[to].m, slot, (uint64_t)node_now_us(from),
                          (uint64_t)node_now_us(to))) {
        if (S->nodes[from].n_reps) repl_ship(from);
        if (S->nodes[to].n_reps) repl_ship(to), S->nodes[to].imported_off = model_repl_offset(S->nodes[to].m);
        S->cov[COV_KEYS_MIGRATED]++;
        sim_push(E_MIGRATE, S->now + 200 + rng_below(&S->r_fault, 2000), c, 1, 0, NULL, 0);
        return;
    }
    cl->owner[slot] = (uint8_t)cl->to;
    cl->mig_slot = -1;
    model_slot_gone(S->nodes[from].m, slot);
    S->cov[COV_SLOTS_MIGRATED]++;
    trace_rec(T_MIGRATED, c, slot, cl->from, cl->to);
    next_migration(c);
}

void cluster_event(sev_t *e) {
    if (e->b == 0)
        migrate_start(e->a);
    else
        migrate_step(e->a);
}

const char *cluster_uri(int c) {
    static char uris[SIM_MAX_NODES][80];
    int first = c * S->cfg.n_shards + 1;
    snprintf(uris[c], sizeof uris[c], "redis+cluster://10.0.0.%d:6379?seed=10.0.0.%d:6379", first, first + 1);
    return uris[c];
}
