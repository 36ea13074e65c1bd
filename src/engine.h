/* engine.h -- the I/O multiplexer shared by every thread of one redlock_t.
 *
 * One connection per node. A call builds a round (fanout.h) and hands it to
 * rl_engine_run, which queues the round's command on every node and returns
 * once the round is decided. Threads take turns driving the poll loop
 * (leader/follower): the first caller leads and does the I/O for everyone;
 * callers arriving meanwhile append their commands to the nodes' output
 * buffers, wake the leader, and sleep until their round is decided. The
 * leader writes each node's buffer in one send(), so concurrent commands to
 * a node are pipelined; a single caller pays no thread hand-off at all. */
#ifndef RL_ENGINE_H
#define RL_ENGINE_H
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "fanout.h"
#include "log.h"
#include "uri.h"

typedef struct rl_engine rl_engine_t;

typedef struct rl_engine_config {
    uint32_t connect_timeout_ms, op_timeout_ms;
    uint32_t node_down_ms, reconnect_min_ms, reconnect_max_ms;
    uint32_t max_inflight;
    rl_clock_fn clock;
    rl_logger_t log;
    void *tls_ctx;               /* rl_tls_ctx_t for rediss:// nodes, or NULL */
    const char *tls_server_name; /* verification / SNI override, or NULL */
    int tls_verify;
    uint32_t quarantine_ms;      /* a node restarted less than this ago gets no acquire vote; 0: off */
    uint32_t jump_quarantine_ms; /* a node whose clock jumped gets no acquire vote for this long; 0: off */
    uint32_t clock_jump_ms;      /* what counts as a jump (beyond the elapsed time and 1000 ppm) */
    uint32_t clock_check_ms;     /* least time between TIME samples of a node; 0: every acquire */
    struct rl_stats *stats;      /* votes, round trips and reconnects are counted here; NULL: not counted */
} rl_engine_config_t;

/* Makes an engine for n nodes, taking ownership of the uris' strings
 * (they are zeroed). Connects lazily. Returns 0 or REDLOCK_ERR_NOMEM. */
int rl_engine_new(rl_engine_t **out, rl_uri_t *uris, size_t n, const rl_engine_config_t *cfg);

/* Closes every connection and frees e. NULL-safe. No call may be running. */
void rl_engine_free(rl_engine_t *e);

/* Sends r's command to every node and returns when r is decided (its stop
 * rule is met, or every node answered, failed or passed its deadline).
 * r->vote and the counters then hold the outcome. */
void rl_engine_run(rl_engine_t *e, rl_round_t *r);

/* The node's URI with the password masked; owned by e. */
const char *rl_engine_node_name(const rl_engine_t *e, size_t i);

size_t rl_engine_size(const rl_engine_t *e);

/* Lookups of node i's host name started so far (0 for IP literals and
 * socket paths, which never go through the resolver). */
uint32_t rl_engine_node_lookups(rl_engine_t *e, size_t i);

#endif
