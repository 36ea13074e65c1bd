/* simrepl.c -- replicas (see sim.h): in the replicated scenarios each
 * node is a master with 1-2 replicas. After every command, what it
 * changed (model_take_fx: each key as it now is, its expiry an instant)
 * goes down each replica's stream, a FIFO link of the replica's own
 * latency that a stall holds; the replica applies it on arrival and its
 * ack travels back alike. WAIT counts the replicas whose acks reached the
 * session's last write, blocking the connection (later commands held)
 * until enough did or its timeout. A failover kills the master with what
 * its streams still carried and, after the detection time, promotes the
 * replica with the greatest offset, as Sentinel does: what it lacked is
 * lost. The old master comes back as an empty replica; every replica of
 * a new or restarted master resyncs in full. */
#include <stdlib.h>

#include "sim.h"

static void on_wait(void *arg, model_session_t *s, long long need, long long timeout_ms, sbuf_t *out);

/* A draw of the one-way latency between a master and replica r, µs. */
static uint64_t one_way(const srepl_t *r) {
    return (uint64_t)(r->lat_us + rng_exp(&S->r_net, r->lat_us * 0.2 + 20)) + 1;
}

/* Makes node's master record its changes and answer WAIT. */
static void as_master(model_t *m) {
    model_set_recording(m, 1);
    model_set_wait(m, on_wait, NULL);
}

/* Gives every node its replicas, empty like their masters and up as long
 * (the replicated scenarios: an hour, so that a promoted replica passes
 * the restart quarantine, as in a real failover). */
void repl_init(void) {
    for (int i = 0; i < S->cfg.n_nodes; i++) {
        snode_t *n = &S->nodes[i];
        n->stream = 1;
        n->n_reps = S->cfg.n_replicas;
        for (int k = 0; k < n->n_reps; k++) {
            srepl_t *r = &n->reps[k];
            r->member = k + 1;
            if (!(r->m = model_new((uint64_t)node_now_us(i) - S->cfg.up_us))) abort();
            r->lat_us = (double)rng_range(&S->r_cfg, 50, (int64_t)S->cfg.repl_lat_max_us);
        }
        if (n->n_reps) as_master(n->m);
    }
}

/* Frees the replicas' models. */
void repl_free(void) {
    for (int i = 0; i < S->cfg.n_nodes; i++)
        for (int k = 0; k < S->nodes[i].n_reps; k++) model_free(S->nodes[i].reps[k].m), S->nodes[i].reps[k].m = NULL;
}

/* Sends fx (a reference taken) down node's stream to replica k. */
static void send_to(int node, int k, model_fx_t *fx) {
    snode_t *n = &S->nodes[node];
    srepl_t *r = &n->reps[k];
    uint64_t at = (r->stalled_until > S->now ? r->stalled_until : S->now) + one_way(r);
    if (at < r->last_at) at = r->last_at;
    r->last_at = at;
    sim_push(E_REPL, at, node, k, n->stream, fx, 0);
}

void repl_ship(int node) {
    snode_t *n = &S->nodes[node];
    model_fx_t *fx = model_take_fx(n->m);
    if (!fx) return;
    S->cov[COV_REPL_BATCHES]++;
    for (int k = 0; k < n->n_reps; k++) send_to(node, k, model_fx_ref(fx));
    model_fx_free(fx);
}

/* A new stream: what the old one carried is lost, acks start over, and
 * every replica gets the master's whole keyspace. */
void repl_resync(int node) {
    snode_t *n = &S->nodes[node];
    if (!n->n_reps) return;
    n->stream++;
    n->imported_off = 0; /* (acks start over: see simfault.c's kill_master) */
    model_fx_t *fx = model_full_fx(n->m);
    for (int k = 0; k < n->n_reps; k++) {
        n->reps[k].acked = 0;
        n->reps[k].last_at = S->now;
        send_to(node, k, model_fx_ref(fx));
    }
    model_fx_free(fx);
}

void repl_stall(int node, uint64_t until) {
    snode_t *n = &S->nodes[node];
    if (!n->n_reps) return;
    srepl_t *r = &n->reps[rng_below(&S->r_fault, (uint64_t)n->n_reps)];
    if (until > r->stalled_until) r->stalled_until = until;
    trace_rec(T_FAULTED, F_STALL, node, (long long)(until - S->now), 0);
}

void repl_promote(int node) {
    snode_t *n = &S->nodes[node];
    int best = 0;
    for (int k = 1; k < n->n_reps; k++)
        if (model_repl_offset(n->reps[k].m) > model_repl_offset(n->reps[best].m)) best = k;
    model_t *old = n->m, *m = n->reps[best].m;
    long long behind = (long long)(model_repl_offset(old) - model_repl_offset(m));
    S->cov[COV_PROMOTIONS]++;
    if (behind > 0) S->cov[COV_PROMOTED_BEHIND]++;
    model_set_recording(old, 0);
    model_set_wait(old, NULL, NULL);
    model_set_push(old, NULL, NULL);
    model_restart(old, (uint64_t)node_now_us(node)); /* (back as an empty replica) */
    n->reps[best].m = old;
    n->m = m;
    int was = n->master_member; /* (a Sentinel group's addresses: the roles swap) */
    n->master_member = n->reps[best].member;
    n->reps[best].member = was;
    as_master(m);
    n->promoted_at = S->now;
    n->promotions++;
    trace_rec(T_FAULTED, F_FAILOVER, node, behind, best);
    net_revive(node);
    repl_resync(node);
    if (S->cfg.sentinel) sentinel_announce(node);
}

/* How many of node's replicas acknowledged offset off. */
static int acked(const snode_t *n, uint64_t off) {
    int k = 0;
    for (int i = 0; i < n->n_reps; i++) k += n->reps[i].acked >= off;
    return k;
}

/* Answers c's blocked WAIT with got replicas. */
static void answer(sconn_t *c, int got) {
    char buf[32];
    int k = snprintf(buf, sizeof buf, ":%d\r\n", got);
    S->cov[got >= c->wait_need ? COV_WAITS_ANSWERED : COV_WAIT_SHORT]++;
    net_unblock(c, buf, (size_t)k);
}

/* WAIT on a master with replicas: at once when enough acked the
 * session's last write, else c blocks until they do or timeout_ms. */
static void on_wait(void *arg, model_session_t *s, long long need, long long timeout_ms, sbuf_t *out) {
    (void)arg;
    sconn_t *c = model_session_owner(s);
    const snode_t *n = &S->nodes[c->node];
    int got = acked(n, model_session_woff(s));
    if (got >= need) {
        S->cov[COV_WAITS_ANSWERED]++;
        resp_int(out, got);
        return;
    }
    c->blocked = 1;
    c->wait_need = need;
    c->wait_off = model_session_woff(s);
    c->wait_no++;
    if (timeout_ms > 0) sim_push(E_WAIT_DUE, S->now + (uint64_t)timeout_ms * 1000u, c->id, 0, c->wait_no, NULL, 0);
}

/* Node's blocked WAITs that have their replicas now answer. */
static void recheck(int node) {
    const snode_t *n = &S->nodes[node];
    for (size_t i = 0; i < S->nconns; i++) {
        sconn_t *c = S->conns[i];
        if (c->node != node || !c->blocked || c->broken || !c->sess) continue;
        if (n->paused_until > S->now) { /* (a stopped server answers when it resumes) */
            sim_push(E_WAIT_DUE, n->paused_until, c->id, 1, c->wait_no, NULL, 0);
            continue;
        }
        int got = acked(n, c->wait_off);
        if (got >= c->wait_need) answer(c, got);
    }
}

/* A WAIT's timeout (b = 0), or a look again after a pause (b = 1). */
static void wait_due(sev_t *e) {
    sconn_t *c = S->conns[e->a];
    if (!c->blocked || c->wait_no != e->g || c->broken || !c->sess) return;
    const snode_t *n = &S->nodes[c->node];
    if (n->paused_until > S->now) {
        sim_push(E_WAIT_DUE, n->paused_until, e->a, e->b, e->g, NULL, 0);
        return;
    }
    int got = acked(n, c->wait_off);
    if (e->b == 0 || got >= c->wait_need) answer(c, got);
}

void repl_event(sev_t *e) {
    if (e->kind == E_WAIT_DUE) {
        wait_due(e);
        return;
    }
    snode_t *n = &S->nodes[e->a];
    if (e->g != n->stream) return; /* (a stream the master's death or restart ended) */
    srepl_t *r = &n->reps[e->b];
    if (e->kind == E_REPL) {
        model_apply_fx(r->m, e->p);
        sim_push(E_ACK, S->now + one_way(r), e->a, e->b, e->g, NULL, (size_t)model_fx_offset(e->p));
        return;
    }
    if (e->n > r->acked) r->acked = e->n;
    recheck(e->a);
}
