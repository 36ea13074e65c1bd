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
int rl_node_internal_reply(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *reply, uint64_t now, char *detail,
                           size_t n);

/* 1 with the reason in buf when c may not vote in an acquire now
 * (restarted or clock jumped recently), else 0. */
int rl_node_quarantined(const rl_conn_t *c, uint64_t now, char *buf, size_t n);

/* Before an acquire's grant: queues a clock sample on c when one is due.
 * Returns 0, or -1 when out of memory. */
int rl_node_sample_clock(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);

#endif
