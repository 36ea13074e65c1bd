/* sentinel.h -- where a Sentinel group's master is (a redis+sentinel://
 * node), found off the I/O path like a host name (resolve.h): a lookup
 * thread asks the group's sentinels in turn for the master's address
 * (SENTINEL GET-MASTER-ADDR-BY-NAME) and for what they know of it
 * (SENTINEL MASTER: how long ago its role was reported, the failover
 * epoch, its replicas), and the connection then dials that address. */
#ifndef RL_SENTINEL_H
#define RL_SENTINEL_H
#include <stdint.h>

#include "blockio.h"
#include "resolve.h"
#include "uri.h"

/* One sentinel to ask. */
typedef struct rl_sentinel_addr {
    char host[256];
    int port;
} rl_sentinel_addr_t;

/* Fills s (room for max) with u's sentinels, the URI's host first, then
 * its sentinel= parameters in order. Returns how many. */
size_t rl_sentinel_addrs(const rl_uri_t *u, rl_sentinel_addr_t *s, size_t max);

/* What the sentinels said of a group's master. */
typedef struct rl_group_info {
    char master[RL_ADDR_STRLEN]; /* "ip:port" of the master they named */
    int64_t role_age_ms;         /* the least role-reported-time of those that answered: how long ago
                                  * the master's role was reported (-1: not said) */
    uint64_t epoch;              /* the greatest config-epoch: > 0 once a failover happened */
    int replicas;                /* the most replicas (num-slaves) one of them knows */
    int answered, asked;         /* sentinels that answered, of those asked */
} rl_group_info_t;

/* Starts a lookup of u's master (u->sentinel), each sentinel given
 * timeout_ms to connect and answer; notify_fd gets a byte when it ends.
 * When u->sentinel_tls, the sentinels are asked over TLS with tls (the
 * handle's settings: the lookup keeps its own reference to the context,
 * so the handle may be freed before the lookup ends). Returns the lookup
 * (see resolve.h: take or drop it), or NULL when out of memory or
 * threads. */
rl_lookup_t *rl_sentinel_lookup_start(const rl_uri_t *u, const rl_bio_tls_t *tls, uint32_t timeout_ms, int notify_fd);

/* Takes a finished sentinel lookup: 0 with *out (the master's address)
 * and *info filled, or -1 with why (every sentinel's reason). Frees l. */
int rl_sentinel_lookup_take(rl_lookup_t *l, rl_addrs_t *out, rl_group_info_t *info, char *why, size_t n);

#endif
