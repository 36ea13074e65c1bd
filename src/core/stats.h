/* stats.h -- the counters behind redlock_stats: calls by result, votes by
 * node and kind, reconnects, round-trip and round-duration histograms.
 *
 * Every counter is a relaxed C11 atomic, so the hot path costs a few
 * uncontended atomic adds and never allocates. Every rl_stats_* hook is
 * NULL-safe: a redlock_t made with opt.stats = 0 passes NULL and counts
 * nothing. A snapshot (rl_stats_read) is not one instant across counters,
 * but each histogram's count is the sum of its own buckets. */
#ifndef RL_STATS_H
#define RL_STATS_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

/* The calls counted by result code. */
enum { RL_STAT_ACQUIRE = 0, RL_STAT_EXTEND, RL_STAT_RELEASE, RL_STAT_ADOPT, RL_STAT_VERBS };

/* Vote kinds as counted (REDLOCK_VOTE_DOWN is split: a quarantined node
 * is counted apart from one waiting for its reconnect). */
enum {
    RL_KIND_YES = 0,
    RL_KIND_NO,
    RL_KIND_TIMEOUT,
    RL_KIND_DOWN,
    RL_KIND_QUARANTINED,
    RL_KIND_ERROR,
    RL_KIND_SUSPECT,
    RL_KINDS
};

typedef struct rl_hist {
    _Atomic uint64_t bucket[REDLOCK_STATS_BUCKETS];
    _Atomic uint64_t sum_us;
} rl_hist_t;

typedef struct rl_node_stats {
    _Atomic uint64_t votes[RL_KINDS];
    _Atomic uint64_t reconnects;
    _Atomic uint64_t suspected, probes;
    rl_hist_t rtt;
} rl_node_stats_t;

typedef struct rl_stats {
    _Atomic uint64_t calls[RL_STAT_VERBS][REDLOCK_STATS_CODES];
    _Atomic uint64_t lost;
    _Atomic uint64_t waits, wakeups, splits;
    rl_hist_t rounds;
    size_t n;
    rl_node_stats_t nodes[]; /* n entries */
} rl_stats_t;

/* A zeroed block for n nodes; NULL when out of memory. Freed with free(). */
rl_stats_t *rl_stats_new(size_t n);

/* Counts one call of verb (RL_STAT_*) that returned rc. */
void rl_stats_call(rl_stats_t *s, int verb, int rc);
/* Counts node's vote v (err tells a quarantine apart) and, when it came
 * with an answer (rtt_us >= 0), its round trip. */
void rl_stats_vote(rl_stats_t *s, size_t node, redlock_vote_t v, int err, int64_t rtt_us);
/* Counts a connection attempt to node after it had failed. */
void rl_stats_reconnect(rl_stats_t *s, size_t node);
/* Counts node becoming suspect, and a probe sent to it while suspect. */
void rl_stats_suspected(rl_stats_t *s, size_t node);
void rl_stats_probe(rl_stats_t *s, size_t node);
/* Counts an acquire attempt that split the vote. */
void rl_stats_split(rl_stats_t *s);
/* Counts one round that took us microseconds. */
void rl_stats_round(rl_stats_t *s, uint64_t us);
/* Counts a lock the watchdog declared lost. */
void rl_stats_lost(rl_stats_t *s);
/* Counts an acquire that started waiting on its resource's release
 * channel (once per call), and a release heard there that woke a waiter. */
void rl_stats_wait(rl_stats_t *s);
void rl_stats_wakeup(rl_stats_t *s);

/* Copies the counters into out (node names are left to the caller);
 * with s NULL, out's counters are all 0. */
void rl_stats_read(const rl_stats_t *s, size_t n_nodes, redlock_stats_t *out);

#endif
