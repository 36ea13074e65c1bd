/* simcore.c -- the simulator's clocks, event queue, run loop and trace
 * (see sim.h). Events are ordered by time, then by the order they were
 * scheduled in: with the seeded draws, a seed makes one run only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

sim_t *S;

/* -------------------------------------------------------------- clocks */

double clock_local(const sclock_t *c, uint64_t t) {
    return c->local0 + ((double)t - (double)c->real0) * (1.0 + c->rate);
}

uint64_t clock_real(const sclock_t *c, double local) {
    double t = (double)c->real0 + (local - c->local0) / (1.0 + c->rate);
    if (t < 0) return 0;
    uint64_t r = (uint64_t)ceil(t);
    while (clock_local(c, r) < local) r++; /* (rounding) */
    return r;
}

/* Steps clock c by `by` µs at real time now. */
void clock_step(sclock_t *c, uint64_t now, double by) {
    c->local0 = clock_local(c, now) + by;
    c->real0 = now;
}

/* Gives clock c a new rate from now on. */
void clock_set_rate(sclock_t *c, uint64_t now, double rate) {
    c->local0 = clock_local(c, now);
    c->real0 = now;
    c->rate = rate;
}

/* -------------------------------------------------------------- events */

/* 1 when event x goes before y. */
static int before(const sev_t *x, const sev_t *y) {
    return x->at < y->at || (x->at == y->at && x->seq < y->seq);
}

/* Schedules an event (never before now); p is owned by the event. */
void sim_push(int kind, uint64_t at, int a, int b, uint64_t g, void *p, size_t n) {
    if (S->nheap == S->capheap) {
        S->capheap = S->capheap ? S->capheap * 2 : 1024;
        if (!(S->heap = realloc(S->heap, S->capheap * sizeof *S->heap))) abort();
    }
    sev_t e = {.at = at < S->now ? S->now : at, .seq = S->seq++, .kind = kind, .a = a, .b = b, .g = g, .p = p, .n = n};
    size_t i = S->nheap++;
    while (i > 0 && before(&e, &S->heap[(i - 1) / 2])) {
        S->heap[i] = S->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    S->heap[i] = e;
}

/* Takes the earliest event off the heap into *out. */
static void pop(sev_t *out) {
    *out = S->heap[0];
    sev_t last = S->heap[--S->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const sev_t *best = &last;
        if (l < S->nheap && before(&S->heap[l], best)) m = l, best = &S->heap[l];
        if (l + 1 < S->nheap && before(&S->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        S->heap[i] = S->heap[m];
        i = m;
    }
    if (S->nheap) S->heap[i] = last;
}

/* Mixes n bytes into the run's trace hash (FNV-1a). */
static void hash_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) S->hash = (S->hash ^ b[i]) * 1099511628211ull;
}

/* Frees an event's payload. */
static void drop(sev_t *e) {
    if (e->kind == E_REPL)
        model_fx_free(e->p);
    else
        free(e->p);
    e->p = NULL;
}

/* Hands e to the module it is for. */
static void dispatch(sev_t *e) {
    switch (e->kind) {
    case E_SYN:
    case E_SYNACK:
    case E_REFUSED:
    case E_CMD:
    case E_FIN:
    case E_DATA:
    case E_RESET: net_event(e); break;
    case E_TIMER:
    case E_ACTOR:
    case E_STORE_REPLY: client_event(e); break;
    case E_STORE: store_event(e); break;
    case E_FAULT:
    case E_HEAL: fault_event(e); break;
    case E_STOP: clients_stop(); break;
    case E_REPL:
    case E_ACK:
    case E_WAIT_DUE: repl_event(e); break;
    case E_TOOL:
    case E_REDEPLOY: member_event(e); break;
    case E_MIGRATE: cluster_event(e); break;
    case E_LOOKUP:
    case E_FEED: sentinel_event(e); break;
    }
}

/* Processes events in order up to real time until. */
void sim_loop(uint64_t until) {
    while (S->nheap && S->heap[0].at <= until) {
        sev_t e;
        pop(&e);
        S->now = e.at;
        if (++S->events > SIM_MAX_EVENTS) { /* something spins: a liveness bug, or the simulator's */
            violation(V_RUNAWAY, -1, (long long)S->events, 0, "runaway: more than %d events in one run (at %.3f ms)",
                      SIM_MAX_EVENTS, (double)S->now / 1000.0);
            drop(&e);
            return; /* (what is left is freed by sim_drop_events) */
        }
        long long rec[5] = {(long long)e.at, e.kind, e.a, e.b, (long long)e.n};
        hash_bytes(rec, sizeof rec);
        if (e.kind == E_DATA) hash_bytes(e.p, e.n); /* what the nodes answer, tokens and all */
        if (e.kind == E_CMD)
            for (int i = 0; i < ((resp_cmd_t *)e.p)->argc; i++)
                hash_bytes(((resp_cmd_t *)e.p)->argv[i], ((resp_cmd_t *)e.p)->len[i]);
        if (e.kind != E_CMD && e.kind != E_DATA) trace_rec(e.kind, e.a, e.b, (long long)e.g, 0);
        dispatch(&e);
        drop(&e);
    }
    if (S->now < until) S->now = until;
}

/* Frees the events left and the queue. */
void sim_drop_events(void) {
    while (S->nheap) {
        sev_t e;
        pop(&e);
        drop(&e);
    }
    free(S->heap);
    S->heap = NULL;
    S->capheap = 0;
}

/* --------------------------------------------------------------- trace */

/* 1 for the records a short trace leaves out: timers, connects and
 * closes, replication, the membership tool's single writes. */
static int routine(int kind) {
    return kind == E_TIMER || kind == E_SYN || kind == E_SYNACK || kind == E_FIN || kind == E_REPL || kind == E_ACK ||
           kind == E_WAIT_DUE || kind == E_TOOL || kind == E_REDEPLOY || kind == E_MIGRATE;
}

void trace_rec(int kind, int a, int b, long long x, long long y) {
    strec_t r = {S->now, kind, a, b, x, y};
    if (kind >= E_KINDS) {
        long long f[6] = {(long long)r.t, kind, a, b, x, y}; /* (not the struct: its padding) */
        hash_bytes(f, sizeof f);
    }
    if (S->trace) trace_print(stdout, &r);
    if (S->focus_to && (r.t > S->focus_to || routine(kind))) return;
    S->ring[S->nring++ % SIM_TRACE_RING] = r;
}

static const char *const fault_names[] = {"",
                                          "latency spike",
                                          "connection reset",
                                          "partition",
                                          "node pause",
                                          "crash and empty restart",
                                          "node clock step",
                                          "client pause",
                                          "pub/sub loss",
                                          "node clock rate",
                                          "failover",
                                          "replica stall"};

/* Fault kind k's name. */
const char *fault_name(int k) {
    return fault_names[k > 0 && k < F_KINDS ? k : 0];
}

/* Prints trace record r as one line. */
void trace_print(FILE *f, const strec_t *r) {
    fprintf(f, "%10.3f ms  ", (double)r->t / 1000.0);
    switch (r->kind) {
    case E_SYN: fprintf(f, "conn %d: connect reaches node\n", r->a); break;
    case E_SYNACK: fprintf(f, "conn %d: connected\n", r->a); break;
    case E_REFUSED: fprintf(f, "conn %d: connect refused (node down)\n", r->a); break;
    case E_FIN: fprintf(f, "conn %d: closed by the client (at the node)\n", r->a); break;
    case E_RESET: fprintf(f, "conn %d: reset seen by the client\n", r->a); break;
    case E_TIMER: fprintf(f, "client %d: timer\n", r->a); break;
    case E_ACTOR: fprintf(f, "client %d actor %d: step\n", r->a, r->b); break;
    case E_STORE: fprintf(f, "client %d actor %d: store request arrives\n", r->a, r->b); break;
    case E_STORE_REPLY: fprintf(f, "client %d actor %d: store reply\n", r->a, r->b); break;
    case E_FAULT: fprintf(f, "fault starts: %s, target %d\n", fault_name(r->a), r->b); break;
    case E_HEAL: fprintf(f, "fault ends: %s, target %d\n", fault_name(r->a), r->b); break;
    case E_STOP: fprintf(f, "workload stops\n"); break;
    case E_REPL: fprintf(f, "node %d replica %d: changes arrive (stream %lld)\n", r->a, r->b, r->x); break;
    case E_ACK: fprintf(f, "node %d replica %d: its ack reaches the master (stream %lld)\n", r->a, r->b, r->x); break;
    case E_WAIT_DUE: fprintf(f, "conn %d: WAIT %lld due\n", r->a, r->x); break;
    case E_TOOL:
        if (r->b < 0)
            fprintf(f, "membership tool: write %d starts\n", r->a);
        else
            fprintf(f, "membership tool: write %d reaches node %d\n", r->a, r->b);
        break;
    case E_REDEPLOY: fprintf(f, "client %d: redeploy due\n", r->a); break;
    case T_STEP:
        fprintf(f, "membership: every node took the %s record\n",
                r->a == W_BEGUN      ? "begun"
                : r->a == W_JOINT    ? "joint"
                : r->a == W_ADVANCED ? "advanced"
                                     : "finished");
        break;
    case E_MIGRATE: fprintf(f, "cluster %d: migration %s\n", r->a, r->b ? "step" : "due"); break;
    case E_LOOKUP: fprintf(f, "node %d: the sentinels' answer reaches its client (look-up %d)\n", r->b, r->a); break;
    case E_FEED: fprintf(f, "node %d: a failover's announcement reaches its feed %d\n", r->b, r->a); break;
    case T_MIGRATING:
    case T_MIGRATED:
        fprintf(f, "cluster %d: slot %d %s from shard %lld to shard %lld\n", r->a, r->b,
                r->kind == T_MIGRATING ? "migrating" : "migrated", r->x, r->y);
        break;
    case T_REDEPLOYED:
        fprintf(f, "client %d: redeployed with %s\n", r->a,
                r->b == CONF_OLD     ? "OLD"
                : r->b == CONF_JOINT ? "OLD and NEW (joint)"
                                     : "NEW");
        break;
    case T_ACQUIRED:
        fprintf(f, "client %d actor %d: acquire -> %s (fence %lld)\n", r->a, r->b, redlock_strerror((int)r->x), r->y);
        break;
    case T_EXTENDED: fprintf(f, "client %d actor %d: extend -> %s\n", r->a, r->b, redlock_strerror((int)r->x)); break;
    case T_RELEASED: fprintf(f, "client %d actor %d: release -> %s\n", r->a, r->b, redlock_strerror((int)r->x)); break;
    case T_ABANDONED: fprintf(f, "client %d actor %d: lock abandoned (left to expire)\n", r->a, r->b); break;
    case T_LOST: fprintf(f, "client %d actor %d: lock lost (%s)\n", r->a, r->b, redlock_strerror((int)r->x)); break;
    case T_STORE_WRITE:
        fprintf(f, "client %d actor %d: store write %s (lost updates so far %lld)\n", r->a, r->b,
                r->x ? "applied" : "refused as stale", r->y);
        break;
    case T_FAULTED: fprintf(f, "fault: %s on %d (%lld, %lld)\n", fault_name(r->a), r->b, r->x, r->y); break;
    case T_VIOLATION:
        fprintf(f, "VIOLATION (%s) on resource %d (%lld, %lld)\n", violation_name(r->b), r->a, r->x, r->y);
        break;
    default: fprintf(f, "event %d (%d, %d)\n", r->kind, r->a, r->b);
    }
}

/* Prints the run's last n trace records (at most SIM_TRACE_RING). */
void trace_tail(FILE *f, size_t n) {
    if (n > SIM_TRACE_RING) n = SIM_TRACE_RING;
    if (n > S->nring) n = S->nring;
    for (size_t i = S->nring - n; i < S->nring; i++) trace_print(f, &S->ring[i % SIM_TRACE_RING]);
}
