/* dial.h -- where a node is, and one connect over all its addresses
 * (see dial.c). Built on conn.h; the engine calls it, never conn.c. */
#ifndef RL_DIAL_H
#define RL_DIAL_H
#include <stdint.h>

#include "blockio.h"
#include "conn.h"
#include "sentinel.h"

/* Sets c's addresses when its host is an IP literal or a socket path
 * (after rl_conn_init). */
void rl_dial_init(rl_conn_t *c);

/* Lets go of c's lookup in flight, if any (before rl_conn_destroy). */
void rl_dial_free(rl_conn_t *c);

/* Opens c within connect_timeout_ms: from its known addresses, or by
 * starting a lookup (state RESOLVING) when there are none yet (a stale
 * name is looked up again in the background), then queues AUTH / SELECT
 * as the URI asks. Returns 0 (RESOLVING, CONNECTING or READY), or an
 * error code with c->last_detail naming every address tried and why (c
 * is then closed). */
int rl_dial_open(rl_conn_t *c, uint64_t now_us, uint32_t connect_timeout_ms);

/* Picks up c's lookup once it has ended (no-op otherwise): caches the
 * addresses and, if c was RESOLVING, starts connecting. A Sentinel
 * group's lookup that answered also fills *group and sets *learnt (else
 * 0). Returns 0, or an error code with c->last_detail set when c must go
 * down. */
int rl_dial_lookup_ended(rl_conn_t *c, uint64_t now_us, rl_group_info_t *group, int *learnt);

/* c's node moved to address `to` (its sentinels announced a new
 * master): its addresses are dropped, so its next connect asks the
 * sentinels first. Returns 1 when c is connected (or connecting) to
 * another address, which it should leave; else 0. */
int rl_dial_moved(rl_conn_t *c, const char *to);

/* How c's sentinels are asked: the handle's TLS context and settings
 * when c->uri.sentinel_tls, else plain TCP (no context). */
rl_bio_tls_t rl_dial_sentinel_tls(const rl_conn_t *c);

/* The address being tried failed (why: "connection refused", "timed
 * out"...): records it and moves on to the next. Returns 0 while an
 * attempt goes on, or an error code (REDLOCK_ERR_TIMEOUT when the last
 * failure was a timeout) with c->last_detail listing every address. */
int rl_dial_next(rl_conn_t *c, uint64_t now_us, const char *why, int timed_out);

#endif
