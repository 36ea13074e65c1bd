/* stats.c -- the counters behind redlock_stats (see stats.h). */
#include "stats.h"

#include <stdlib.h>

/* Upper bounds of the histogram buckets in µs (the last is +Inf). */
static const uint64_t bounds_us[REDLOCK_STATS_BUCKETS - 1] = {
    50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
};

uint64_t redlock_stats_bucket_us(size_t i) {
    return i < REDLOCK_STATS_BUCKETS - 1 ? bounds_us[i] : UINT64_MAX;
}

rl_stats_t *rl_stats_new(size_t n) {
    rl_stats_t *s = calloc(1, sizeof *s + n * sizeof s->nodes[0]);
    if (s) s->n = n;
    return s;
}

/* Adds 1 to a counter, relaxed: counters order nothing. */
static inline void bump(_Atomic uint64_t *c) {
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Counts one observation of us microseconds in h. */
static void observe(rl_hist_t *h, uint64_t us) {
    size_t i = 0;
    while (i < REDLOCK_STATS_BUCKETS - 1 && us > bounds_us[i]) i++;
    bump(&h->bucket[i]);
    atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void rl_stats_call(rl_stats_t *s, int verb, int rc) {
    if (!s || verb < 0 || verb >= RL_STAT_VERBS) return;
    int slot = rc > 0 ? 0 : -rc;
    if (slot >= REDLOCK_STATS_CODES) slot = REDLOCK_STATS_CODES - 1;
    bump(&s->calls[verb][slot]);
}

/* The counted kind of a vote. */
static int kind_of(redlock_vote_t v, int err) {
    switch (v) {
    case REDLOCK_VOTE_YES: return RL_KIND_YES;
    case REDLOCK_VOTE_NO: return RL_KIND_NO;
    case REDLOCK_VOTE_TIMEOUT: return RL_KIND_TIMEOUT;
    case REDLOCK_VOTE_DOWN:
        return err == REDLOCK_ERR_QUARANTINED ? RL_KIND_QUARANTINED
               : err == REDLOCK_ERR_SUSPECT   ? RL_KIND_SUSPECT
                                              : RL_KIND_DOWN;
    default: return RL_KIND_ERROR;
    }
}

void rl_stats_vote(rl_stats_t *s, size_t node, redlock_vote_t v, int err, int64_t rtt_us) {
    if (!s || node >= s->n || v == REDLOCK_VOTE_NONE) return;
    rl_node_stats_t *ns = &s->nodes[node];
    bump(&ns->votes[kind_of(v, err)]);
    if (rtt_us >= 0) observe(&ns->rtt, (uint64_t)rtt_us);
}

void rl_stats_reconnect(rl_stats_t *s, size_t node) {
    if (s && node < s->n) bump(&s->nodes[node].reconnects);
}

void rl_stats_suspected(rl_stats_t *s, size_t node) {
    if (s && node < s->n) bump(&s->nodes[node].suspected);
}

void rl_stats_probe(rl_stats_t *s, size_t node) {
    if (s && node < s->n) bump(&s->nodes[node].probes);
}

void rl_stats_split(rl_stats_t *s) {
    if (s) bump(&s->splits);
}

void rl_stats_round(rl_stats_t *s, uint64_t us) {
    if (s) observe(&s->rounds, us);
}

void rl_stats_lost(rl_stats_t *s) {
    if (s) bump(&s->lost);
}

void rl_stats_wait(rl_stats_t *s) {
    if (s) bump(&s->waits);
}

void rl_stats_wakeup(rl_stats_t *s) {
    if (s) bump(&s->wakeups);
}

/* Reads a counter, relaxed. */
static inline uint64_t get(const _Atomic uint64_t *c) {
    return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}

/* Copies h into out; the count is the sum of the buckets copied. */
static void read_hist(const rl_hist_t *h, redlock_histogram_t *out) {
    out->count = 0;
    for (size_t i = 0; i < REDLOCK_STATS_BUCKETS; i++) {
        out->bucket[i] = h ? get(&h->bucket[i]) : 0;
        out->count += out->bucket[i];
    }
    out->sum_us = h ? get(&h->sum_us) : 0;
}

/* Copies one node's counters (ns may be NULL: zeros). */
static void read_node(const rl_node_stats_t *ns, redlock_node_stats_t *out) {
    uint64_t *dst[RL_KINDS] = {&out->yes,         &out->no,    &out->timeout, &out->down,
                               &out->quarantined, &out->error, &out->suspect};
    for (int k = 0; k < RL_KINDS; k++) *dst[k] = ns ? get(&ns->votes[k]) : 0;
    out->reconnects = ns ? get(&ns->reconnects) : 0;
    out->suspected = ns ? get(&ns->suspected) : 0;
    out->probes = ns ? get(&ns->probes) : 0;
    read_hist(ns ? &ns->rtt : NULL, &out->rtt);
}

void rl_stats_read(const rl_stats_t *s, size_t n_nodes, redlock_stats_t *out) {
    uint64_t *verbs[RL_STAT_VERBS] = {out->acquires, out->extends, out->releases, out->adopts};
    for (int v = 0; v < RL_STAT_VERBS; v++)
        for (size_t c = 0; c < REDLOCK_STATS_CODES; c++) verbs[v][c] = s ? get(&s->calls[v][c]) : 0;
    out->locks_lost = s ? get(&s->lost) : 0;
    out->waits = s ? get(&s->waits) : 0;
    out->wakeups = s ? get(&s->wakeups) : 0;
    out->splits = s ? get(&s->splits) : 0;
    read_hist(s ? &s->rounds : NULL, &out->rounds);
    out->n_nodes = n_nodes;
    for (size_t i = 0; i < n_nodes && i < REDLOCK_MAX_NODES; i++)
        read_node(s && i < s->n ? &s->nodes[i] : NULL, &out->nodes[i]);
}
