/* subs.h -- the release channels a handle listens on (doc/design.md, "Waiting"), sans
 * I/O: one subscriber connection per node (an rl_nodes_t in subscriber
 * mode), opened on the first wait and shared by every resource waited
 * on. A resource is subscribed while it has waiters (a count per
 * resource) on the channel "redlock:released:<resource>", which the
 * release script publishes to, and for RL_SUB_LINGER_US after the last
 * leaves (a resource waited for again and again is not unsubscribed and
 * subscribed anew each time). A connection that fails is reopened after
 * its backoff and subscribes again to every channel with waiters; until
 * then its node wakes nobody and waiters fall back to their retry delay.
 *
 * On a Redis Cluster node the channels are sharded (doc/design.md, "Cluster routing"): the
 * release script SPUBLISHes "redlock:released:<key>", the resource named
 * as on the cluster, and the channel is SSUBSCRIBEd on the shard primary
 * serving its slot (never on the node's own connection, which loads the
 * slot map). A cluster node whose connections failed or whose map changed
 * is marked for a resubscription of every channel, tried until it works.
 *
 * Once the handle met a membership record (rl_subs_watch), every plain
 * node's connection also listens on RL_MEMBERSHIP_CHANNEL, where the
 * membership tool announces its steps, waiters or not: each announcement,
 * and each (re)subscription (a step just before it would have been
 * missed), counts in cfg->notices, and the command connections read their
 * records again at their next write (record.c).
 *
 * With a line id (the handle's: rl_subs_t.line_id), every plain node's
 * connection also listens, from the first wait on, on the handle's own
 * channel RL_NEXT_PREFIX<id>, where a release that names the handle is
 * announced (lua/release.lua) with the resource as the message: no other
 * handle hears it. Its resubscription's confirmation (a connection
 * reopened) wakes every resource with waiters: a release that named the
 * handle meanwhile was missed. (The first is covered by the resource
 * channel's own first confirmation, which comes after it.)
 *
 * Like nodeset.h, every function takes the driver's `now` and must be
 * called by one thread at a time (the blocking listener holds its mutex). */
#ifndef RL_SUBS_H
#define RL_SUBS_H
#include <stddef.h>
#include <stdint.h>

#include "map.h"
#include "nodeset.h"

/* The prefix of a release channel; the resource's bytes follow. */
#define RL_RELEASED_PREFIX "redlock:released:"
/* The prefix of a handle's own channel; its line id follows. */
#define RL_NEXT_PREFIX "redlock:next:"

/* (UN)SUBSCRIBEs a subscriber connection may have in flight: one per
 * channel, all of them when a connection reopens. The request ring grows
 * to it only as needed (conn.h), so it costs nothing until used. */
#define RL_SUBS_MAX_INFLIGHT (1u << 20)

/* How long a channel stays subscribed with no waiter. */
#define RL_SUB_LINGER_US 1000000u

typedef struct rl_sub {
    rl_map_node_t node;                   /* in rl_subs_t.map, by resource */
    struct rl_sub *idle_prev, *idle_next; /* on the idle list while it has no waiter */
    uint64_t idle_us;                     /* with no waiter: when the last left */
    size_t len;
    uint32_t waiters; /* joins minus leaves */
    uint8_t heard;    /* a node confirmed the subscription */
    char res[];       /* the resource's bytes (no padding before them: one per resource waited on) */
} rl_sub_t;

typedef struct rl_subs {
    rl_nodes_t ns;                   /* the subscriber connections (cfg.subscriber = 1) */
    rl_map_t map;                    /* the channels subscribed (with waiters, or lingering) */
    size_t n;                        /* how many */
    rl_sub_t *idle_head, *idle_tail; /* those without a waiter, the longest idle first */
    /* a release of res was announced (announced = 1; next, nlen bytes:
     * the message, the id of the handle it names, see release.lua), or a
     * new subscription was first confirmed (0: a release just before it
     * would have been missed; nlen 0) */
    void (*released)(void *arg, const char *res, size_t len, int announced, const char *next, size_t nlen);
    void *arg;
    const char *line_id; /* the handle's id (REDLOCK_TOKEN_LEN bytes), or NULL: no own channel */
    uint8_t own;         /* the own channel is listened on (from the first waiter on) */
    uint64_t own_heard;  /* per node (bit i): its subscription to the own channel was confirmed once */
    uint64_t messages;   /* release messages heard */
    uint8_t *dirty;      /* per node: a cluster node whose channels must be subscribed again */
    uint32_t *seen;      /* per node: its cluster's failures and map loads when last subscribed */
    uint64_t retry_us;   /* when dirty nodes are tried again */
    int watch;           /* the plain nodes listen for membership steps (rl_subs_watch) */
} rl_subs_t;

/* A dirty cluster node's channels are tried again this often. */
#define RL_SUBS_RETRY_US 50000u

/* Sets s up for the handle's nodes (uris parsed by the caller and owned
 * by s from then on); connections open on the first join. Returns 0 or
 * REDLOCK_ERR_NOMEM. */
int rl_subs_init(rl_subs_t *s, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg, int notify_fd);

/* Closes the connections and frees what s owns. Safe on a zeroed s. */
void rl_subs_destroy(rl_subs_t *s);

/* A waiter for res joins (join = 1) or leaves (0). The first join
 * subscribes on every node; rl_subs_expire unsubscribes once the last
 * leave is RL_SUB_LINGER_US old. Returns 0, or REDLOCK_ERR_NOMEM (the
 * waiter then just polls). */
int rl_subs_waiter(rl_subs_t *s, const char *res, size_t len, int join, uint64_t now);

/* Listens for membership steps on every plain node from now on, opening
 * the connections (idempotent). */
void rl_subs_watch(rl_subs_t *s, uint64_t now);

/* Reopens failed connections whose backoff passed (while any channel is
 * subscribed or steps are listened for), unsubscribes channels idle for RL_SUB_LINGER_US, and
 * judges the connections' deadlines. */
void rl_subs_expire(rl_subs_t *s, uint64_t now);

/* The next instant rl_subs_expire has work; UINT64_MAX when none. */
uint64_t rl_subs_next_us(const rl_subs_t *s);

#endif
