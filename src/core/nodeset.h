/* nodeset.h -- the protocol core over the nodes' connections, sans I/O
 * loop: no mutex, no poll, no sleep, no thread. A driver (the blocking
 * engine, the async handle) owns an rl_nodes_t, tells it when sockets are
 * ready and time has passed, and learns through round_done when a round
 * it started is decided. Every function takes the driver's `now` (µs on
 * the monotonic clock) and must be called by one thread at a time. */
#ifndef RL_NODESET_H
#define RL_NODESET_H
#include <stddef.h>
#include <stdint.h>

#include "nodetypes.h"

/* Sets up ns for n nodes, taking ownership of the uris' strings (they are
 * cleared, also on failure); lookups of node names write a byte to
 * notify_fd when they end. Returns 0 or REDLOCK_ERR_NOMEM. */
int rl_nodes_init(rl_nodes_t *ns, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg, int notify_fd);

/* Adds a connection of node i (a cluster's shard primary) to uri, taking
 * ownership of its strings; it opens on first use. Returns it, or NULL
 * when out of memory. */
rl_conn_t *rl_nodes_add(rl_nodes_t *ns, size_t i, rl_uri_t *uri);

/* Closes every connection and frees what ns owns. Safe after a failed init. */
void rl_nodes_destroy(rl_nodes_t *ns);

/* Sends r's command to every node (r->t0_us = now). r may be decided
 * before this returns (every node down, say): round_done is then called
 * from inside. A round started decided and send_all goes out with no
 * owner (its replies are dropped): a fire-and-forget release. */
void rl_nodes_start(rl_nodes_t *ns, rl_round_t *r, uint64_t now);

/* Gives up r: its requests still owed a reply are detached (their replies
 * will be dropped) and r is marked done, without calling round_done. */
void rl_nodes_abandon(rl_nodes_t *ns, rl_round_t *r);

/* Queues the encoded command cmd on node i with no round (its reply is
 * read and dropped), opening the node first when it is down and its
 * backoff has passed; on a cluster node, on the shard serving hslot
 * (RL_SLOT_NONE: the node's own connection). Returns 0, or the error that
 * kept it from going (the connection is then down). */
int rl_nodes_command(rl_nodes_t *ns, size_t i, int32_t hslot, const char *cmd, size_t len, uint64_t now);

/* Tells fn (a loop driver) before any connection's socket closes, those
 * added later included. */
void rl_nodes_on_close(rl_nodes_t *ns, void (*fn)(void *arg, rl_conn_t *c, int fd), void *arg);

/* Asks cluster node i for its slot map now (no-op for a plain node, or
 * while a load is in flight: it is loaded again after). */
void rl_nodes_map_load(rl_nodes_t *ns, size_t i, uint64_t now);

/* Writes pending output of every ready node. */
void rl_nodes_flush(rl_nodes_t *ns, uint64_t now);

/* Marks c's node down (rc, why: its words), failing what it owed. */
void rl_nodes_conn_down(rl_nodes_t *ns, rl_conn_t *c, int rc, const char *why, uint64_t now);

/* The poll events (POLLIN, POLLOUT) connection k's socket waits for, 0
 * when it has none. */
short rl_nodes_interest(const rl_nodes_t *ns, size_t k);

/* Connection k's socket had events rev (POLLIN / POLLOUT / POLLERR / POLLHUP). */
void rl_nodes_events(rl_nodes_t *ns, size_t k, short rev, uint64_t now);

/* Picks up name lookups that ended (after notify_fd was written). */
void rl_nodes_lookups_ended(rl_nodes_t *ns, uint64_t now);

/* Judges deadlines: late requests, connects and silent nodes. */
void rl_nodes_expire(rl_nodes_t *ns, uint64_t now);

/* Sends the probe of suspect node c (down) once it is due; a node that
 * refuses it (not silent) goes down the plain way (deadline.c). */
void rl_nodes_probe_due(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);

/* 1 when some connection has I/O under way that only a turning loop
 * completes: replies owed (a call's stragglers, an EVAL fallback, a
 * probe, a slot map), output not written yet, a connect or a lookup. */
int rl_nodes_busy(const rl_nodes_t *ns);

/* 1 when a node that is not suspect still owes a reply to a request of
 * a call (a release's straggler, say), or has output to write. */
int rl_nodes_owed(const rl_nodes_t *ns);

/* The next instant rl_nodes_expire has work; UINT64_MAX when none. */
uint64_t rl_nodes_next_us(const rl_nodes_t *ns);

#endif
