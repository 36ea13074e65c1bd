/* failover.h -- a Sentinel group's failovers followed as they are
 * announced. A feed is a thread holding a subscription to the
 * "+switch-master" channel on one of the group's sentinels (the next one
 * in turn when that fails or stops answering its PINGs). When a sentinel
 * announces that the group's master changed, the feed counts it, keeps
 * the new master's address, and writes a byte to notify_fd; the driver
 * then drops the connection to the old master at once, instead of
 * learning of the failover from a closed socket, a -READONLY reply or a
 * ROLE check (an old master cut off from its sentinels but not from us
 * still accepts writes that its demotion will throw away).
 *
 * Like a lookup (resolve.h), a feed is shared by its thread and its
 * owner and freed by whichever lets go last, so stopping it never waits
 * on a sentinel that hangs; once rl_failover_feed_stop returns, the
 * thread never writes to notify_fd again. */
#ifndef RL_FAILOVER_H
#define RL_FAILOVER_H
#include <stddef.h>
#include <stdint.h>

#include "blockio.h"
#include "uri.h"

/* A sentinel that sent nothing for this long is PINGed; one that does not
 * answer within as long again is left for the next one. */
#define RL_FAILOVER_PING_MS 2000
/* A feed that lost its sentinel waits this long before the next one. */
#define RL_FAILOVER_RETRY_MS 250

typedef struct rl_failover_feed rl_failover_feed_t;

/* Starts following u's group (u->sentinel), over TLS with tls when
 * u->sentinel_tls (the feed keeps its own reference to the context: it
 * may outlive the handle). Returns the feed, or NULL when out of memory
 * or threads (the node then follows failovers only by its own
 * connection's failures). */
rl_failover_feed_t *rl_failover_feed_start(const rl_uri_t *u, const rl_bio_tls_t *tls, int notify_fd);

/* How many switches of the group's master were announced so far (0 at
 * first); to (n bytes) gets the last new master as "ip:port". */
uint32_t rl_failover_feed_switches(rl_failover_feed_t *w, char *to, size_t n);

/* Stops the feed and lets go of it. NULL-safe. */
void rl_failover_feed_stop(rl_failover_feed_t *w);

#endif
