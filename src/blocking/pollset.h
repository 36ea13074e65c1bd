/* pollset.h -- a blocking driver's poll(2) array over a node set's
 * connections, whose number grows as cluster shards are found. The
 * driver polls; this only fills the array and hands back the events. */
#ifndef RL_POLLSET_H
#define RL_POLLSET_H
#include <poll.h>
#include <stddef.h>

#include "nodeset.h"

typedef struct rl_pollset {
    struct pollfd *pfd; /* the connections waiting for events, then the driver's own fd */
    unsigned *k, *gen;  /* each entry's connection and its generation when filled */
    size_t cap;
} rl_pollset_t;

/* Fills ps with every connection of ns that waits for events and, last,
 * extra_fd for POLLIN. Returns the entries (extra_fd's included), or 0
 * when out of memory. */
size_t rl_pollset_build(rl_pollset_t *ps, const rl_nodes_t *ns, int extra_fd);

/* Fills ps with every open and ready connection of ns for POLLRDHUP only
 * (the node closed it: a server that died, a failover) and, last, the two
 * fds wake_fd (the driver's wake pipe, which lookups and failover feeds
 * write) and kick_fd for POLLIN: what an idle driver watches between
 * calls, never woken by replies. Returns the entries, or 0 when out of
 * memory. */
size_t rl_pollset_build_hup(rl_pollset_t *ps, const rl_nodes_t *ns, int wake_fd, int kick_fd);

/* Hands the events poll(2) set in the first np - 1 entries to ns,
 * skipping connections closed (or reopened) since the array was filled. */
void rl_pollset_events(const rl_pollset_t *ps, size_t np, rl_nodes_t *ns, uint64_t now);

/* Frees the arrays (ps stays usable: zeroed). */
void rl_pollset_free(rl_pollset_t *ps);

#endif
