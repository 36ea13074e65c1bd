/* cluster.h -- a Redlock node that is a whole Redis Cluster (doc/design.md, "Cluster routing"):
 * its slot map, its shard primaries' connections, and what a redirect or
 * a changed map means. No I/O here: nodeset.c sends the CLUSTER SLOTS
 * requests and the redirected commands. */
#ifndef RL_CLUSTER_H
#define RL_CLUSTER_H
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "slot.h"

struct rl_nodes;

#define RL_NODE_ID_LEN 40   /* a cluster member's id: 40 hex characters */
#define RL_SHARD_REPLICAS 4 /* replicas remembered per shard (failover detection) */
#define RL_MAX_REDIRECTS 5  /* MOVED / ASK hops one request may take */

/* One primary of the cluster and the replicas it had at the last map. */
typedef struct rl_shard {
    rl_conn_t *c; /* its connection (owned by the node set) */
    char id[RL_NODE_ID_LEN + 1];
    char replica[RL_SHARD_REPLICAS][RL_NODE_ID_LEN + 1];
    uint32_t nreplicas;
    uint32_t slots; /* slots it serves in the map */
} rl_shard_t;

/* A request for a keyed slot made before the node's first slot map came
 * (route.c): sent, in order, once it does. */
typedef struct rl_parked {
    struct rl_parked *next;
    struct rl_round *round; /* its owner; NULL once the round is over (then sent unwaited) */
    const struct rl_script *script;
    uint64_t sent_us, deadline_us;
    int32_t hslot;
    uint8_t grants, send_all, skip;
    size_t len;
    char cmd[]; /* the encoded command (keys named as on the cluster) */
} rl_parked_t;

typedef struct rl_cluster {
    uint16_t owner[RL_SLOTS]; /* the shard serving each slot, + 1; 0: not known (the node's
                               * own connection is asked, and redirects) */
    rl_shard_t *shard;        /* every primary seen, in the order found */
    size_t nshard;
    int loading;                             /* a CLUSTER SLOTS is in flight on the node's own connection */
    int stale;                               /* the map changed since: load it again once that one is in */
    uint64_t loaded_us;                      /* when a map was last applied (0: never) */
    uint32_t loads, moved, asked, failovers; /* counts, for ping and the tests */
    uint32_t downs;                          /* its connections' failures (subscriptions on them are lost) */
    char error[RL_DETAIL_LEN];               /* why the last map load failed ("" when it did not) */
    rl_parked_t *parked, *parked_tail;       /* requests waiting for the first map, oldest first */
    size_t nparked;
    size_t seed;      /* which member the node's own connection dials: 0 the URI's
                       * host, then its seeds, then the shards found */
    char *first_host; /* the URI's host and port (the connection's change with seed) */
    int first_port;
} rl_cluster_t;

/* What `redlock ping` shows of a shard. */
typedef struct rl_shard_view {
    char host[128];
    int port;
    uint32_t slots;  /* how many it serves */
    int32_t first;   /* its first slot (-1: none) */
    char ranges[96]; /* "0-5460,6000", cut with "..." when long */
    int promoted;    /* seen taking over from its primary */
} rl_shard_view_t;

/* Describes up to cap of cl's shards that serve slots into out; returns
 * how many it wrote. */
size_t rl_cluster_view(const rl_cluster_t *cl, rl_shard_view_t *out, size_t cap);

/* Frees cl (not the connections it points at). NULL-safe. */
void rl_cluster_free(rl_cluster_t *cl);

/* The shard of cl serving hslot, or NULL when it is not known. */
rl_shard_t *rl_cluster_owner(rl_cluster_t *cl, int32_t hslot);

/* The shard of cl whose primary is at host:port, or NULL. */
rl_shard_t *rl_cluster_find(rl_cluster_t *cl, const char *host, int port);

/* Adds a shard for connection c (cl does not own it). Returns it, or
 * NULL when out of memory. */
rl_shard_t *rl_cluster_add(rl_cluster_t *cl, rl_conn_t *c);

/* Parses a "MOVED <slot> <host>:<port>" or "ASK ..." error: returns 1
 * (MOVED) or 2 (ASK) with the parts set, 0 when err is neither. */
int rl_cluster_redirect(const char *err, unsigned *slot, char *host, size_t hn, int *port);

/* The primaries of one CLUSTER SLOTS entry set: calls member(arg, host,
 * port) for each range's primary to get (or make) its shard, then points
 * the range's slots at it. A range that another shard served before
 * calls moved(arg, from, to, failover), failover 1 when the new primary
 * was a replica of the old. default_host stands for an empty address.
 * Returns 0, or -1 when the reply is not a slot map (detail says why). */
typedef rl_shard_t *(*rl_member_fn)(void *arg, const char *host, int port);
typedef void (*rl_moved_fn)(void *arg, rl_shard_t *from, rl_shard_t *to, int failover);
int rl_cluster_apply(rl_cluster_t *cl, const void *reply, const char *default_host, rl_member_fn member,
                     rl_moved_fn moved, void *arg, char *detail, size_t n);

#endif
