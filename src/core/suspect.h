/* suspect.h -- a silent node's suspicion and probes (suspect.c), below
 * the rounds: what a late request, a probe and any answer do to the
 * node's rl_node_t. */
#ifndef RL_SUSPECT_H
#define RL_SUSPECT_H
#include <stddef.h>
#include <stdint.h>

#include "node.h"

/* A silent node (doc/design.md, "A silent minority"). rl_suspect_mark
 * marks c suspect after a request of it got no reply in time (why):
 * rounds send it nothing new
 * but releases, and its probes decide when it is back. rl_suspect_probe
 * sends a probe: a PING on c's connection, opening a fresh one when c is
 * down; returns 0, or the error opening failed with (c is then no longer
 * suspect: it refuses, it is not silent; the caller takes it down).
 * Any reply lets c rejoin (rl_suspect_answered). rl_suspect_probe_later,
 * after a probe timed out and c was closed: the next probe is due after
 * a backoff from probe_min_ms doubling to probe_max_ms.
 * rl_suspect_why writes a suspect vote's detail. */
void rl_suspect_mark(const rl_nodes_config_t *cfg, rl_conn_t *c, const char *why, uint64_t now);
int rl_suspect_probe(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);
void rl_suspect_probe_later(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);
void rl_suspect_why(const rl_conn_t *c, uint64_t now, char *buf, size_t n);

/* c answered something (any reply: a probe's, a late one, a request's):
 * it is not silent, so it stops being suspect at once and a close for a
 * timeout that was waiting (rl_node.close_at_us) is called off. */
void rl_suspect_answered(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);

#endif
