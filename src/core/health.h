/* health.h -- one node's health, below the rounds (see health.c): opening it
 * with its script loads and probes, the probes' replies (restart uptime,
 * clock samples), quarantine, and closing it after a failure with a
 * reconnect backoff. Nothing here knows about rounds. */
#ifndef RL_HEALTH_H
#define RL_HEALTH_H
#include <stdint.h>

#include "node.h"

/* Opens c if its backoff has passed: connect, handshake, script loads,
 * restart and clock probes. Returns 0 when c can take requests, else an
 * error code with c->last_detail saying why (the caller takes it down). */
int rl_node_open(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);

/* Closes c after a failure (err/detail kept as its last error) and
 * schedules the reconnect after the current backoff, which then doubles.
 * The caller first fails the requests c owed. */
void rl_node_close(const rl_nodes_config_t *cfg, rl_conn_t *c, int err, const char *detail, uint64_t now);

/* Handles the reply to the engine's own request at the head of c's queue
 * (handshake, SCRIPT LOAD, INFO, TIME) and pops it. Returns 0, or the
 * error an AUTH / SELECT refusal takes the node down with (why in detail). */
int rl_node_internal_reply(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *reply, uint64_t now,
                           char *detail, size_t n);

/* 1 with the reason in buf when c may not vote in an acquire now
 * (restarted or clock jumped recently), else 0. */
int rl_node_quarantined(const rl_conn_t *c, uint64_t now, char *buf, size_t n);

/* Before an acquire's grant: queues a clock sample on c when one is due.
 * Returns 0, or -1 when out of memory. */
int rl_node_sample_clock(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);

/* A silent node (doc/design.md, "A silent minority"). rl_node_suspect marks c suspect after a
 * request of it got no reply in time (why): rounds send it nothing new
 * but releases, and its probes decide when it is back. rl_node_probe
 * sends a probe: a PING on c's connection, opening a fresh one when c is
 * down; returns 0, or the error opening failed with (c is then no longer
 * suspect: it refuses, it is not silent; the caller takes it down).
 * Any reply lets c rejoin (rl_node_answered). rl_node_probe_later,
 * after a probe timed out and c was closed: the next probe is due after
 * a backoff from probe_min_ms doubling to probe_max_ms.
 * rl_node_suspect_why writes a suspect vote's detail. */
void rl_node_suspect(const rl_nodes_config_t *cfg, rl_conn_t *c, const char *why, uint64_t now);
int rl_node_probe(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);
void rl_node_probe_later(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);
void rl_node_suspect_why(const rl_conn_t *c, uint64_t now, char *buf, size_t n);


/* c answered something (any reply: a probe's, a late one, a request's):
 * it is not silent, so it stops being suspect at once and a close for a
 * timeout that was waiting (c->close_at_us) is called off. */
void rl_node_answered(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);

#endif
