/*
 * test/support/timeproxy.h - a SIMULATED clock jump for tests.
 *
 * Debian's redis-server cannot run under libfaketime, so a node's clock is
 * "stepped" by a small proxy between the library and one real node: every
 * command is passed through unchanged, except that the reply to a TIME
 * command gets a settable offset added. To the library that node's clock
 * has jumped; the node's real clock (and so its key expiry and the TIME
 * that Lua scripts see) is untouched.
 *
 * The proxy serves each client connection on its own thread, one command
 * at a time (pipelined commands are answered in order).
 */
#ifndef REDLOCK_TEST_SUPPORT_TIMEPROXY_H
#define REDLOCK_TEST_SUPPORT_TIMEPROXY_H

#include <stdint.h>

typedef struct tp_proxy tp_proxy_t;

/* Starts a proxy on an ephemeral 127.0.0.1 port in front of the node at
 * 127.0.0.1:upstream_port. Returns NULL (reason on stderr) on failure;
 * tp_stop frees it. */
tp_proxy_t *tp_start(int upstream_port);

/* The port the proxy listens on. */
int tp_port(const tp_proxy_t *p);

/* From now on TIME replies are the node's TIME plus ms (may be negative). */
void tp_set_offset_ms(tp_proxy_t *p, int64_t ms);

/* Number of TIME commands answered so far. */
long tp_time_count(tp_proxy_t *p);

/* Closes every connection, joins the threads and frees p. NULL-safe. */
void tp_stop(tp_proxy_t *p);

#endif
