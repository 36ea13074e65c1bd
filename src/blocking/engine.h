/* engine.h -- the blocking driver of the protocol core, shared by every
 * thread of one redlock_t.
 *
 * A call builds a round (round.h) and hands it to rl_engine_run, which
 * starts the round on the core (nodeset.h) and returns once it is decided.
 * Threads take turns driving the poll loop (leader/follower): the first
 * caller leads and does the I/O for everyone; callers arriving meanwhile
 * append their commands to the nodes' output buffers, wake the leader, and
 * sleep until their round is decided. The leader writes each node's
 * buffer in one send(), so concurrent commands to a node are pipelined; a
 * single caller pays no thread hand-off at all.
 *
 * Between calls, the engine's idle driver (a thread of its own, started
 * the first time a caller leaves I/O under way) takes the leader role and
 * finishes that I/O: late replies, EVAL fallbacks, unwaited clean-ups,
 * connects, probes. A caller arriving meanwhile gets the role back at the
 * driver's next turn. rl_engine_free stops it, then gives requests still
 * owed by nodes that are not suspect up to op_timeout_ms. */
#ifndef RL_ENGINE_H
#define RL_ENGINE_H
#include <stddef.h>
#include <stdint.h>

#include "round.h"
#include "nodeset.h"

typedef struct rl_engine rl_engine_t;

/* Makes an engine for n nodes, taking ownership of the uris' strings
 * (they are cleared). Connects lazily. Returns 0 or REDLOCK_ERR_NOMEM. */
int rl_engine_new(rl_engine_t **out, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg);

/* Stops the idle driver, lets owed requests finish (at most op_timeout_ms),
 * closes every connection and frees e. NULL-safe. No call may be running. */
void rl_engine_free(rl_engine_t *e);

/* Sends r's command to every node and returns when r is decided (its stop
 * rule is met, or every node answered, failed or passed its deadline).
 * r->vote and the counters then hold the outcome. */
void rl_engine_run(rl_engine_t *e, rl_round_t *r);

/* rl_engine_run in two halves, so that one thread can have many rounds in
 * flight (the watchdog's extensions that fall due together leave in one
 * write per node): rl_engine_start sends r and returns at once;
 * rl_engine_wait returns once r is decided. Every started round must be
 * waited for before it goes out of scope. */
void rl_engine_start(rl_engine_t *e, rl_round_t *r);
void rl_engine_wait(rl_engine_t *e, rl_round_t *r);

/* The engine's node set (names and sizes are read without the mutex:
 * they never change after rl_engine_new). */
rl_nodes_t *rl_engine_nodes(rl_engine_t *e);

/* The shards cluster node i serves its slots from (see cluster.h), up to
 * cap of them; 0 for a plain node or before its slot map is known. */
struct rl_shard_view;
size_t rl_engine_shards(rl_engine_t *e, size_t i, struct rl_shard_view *out, size_t cap);

/* What the sentinels of node i (a Sentinel group's) said at the last
 * look-up, into *out, with how long ago (µs) in *age_us. Returns 1, or 0
 * for another kind of node or before any answer. */
int rl_engine_group(rl_engine_t *e, size_t i, rl_group_info_t *out, uint64_t *age_us);

/* Lookups of node i's host name started so far (0 for IP literals and
 * socket paths, which never go through the resolver). */
uint32_t rl_engine_node_lookups(rl_engine_t *e, size_t i);

#endif
