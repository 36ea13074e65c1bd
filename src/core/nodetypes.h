/* nodetypes.h -- the node set's types: its configuration, the set itself,
 * what one request carries to a connection, and the steps of nodeset.c that
 * route.c (a Redis Cluster node's routing) takes through ns->ops. nodeset.c
 * runs rounds over the set and calls route.c for cluster nodes; route.c
 * reaches back only through this table, so the two do not include each
 * other. The functions over a set are in nodeset.h. */
#ifndef RL_NODETYPES_H
#define RL_NODETYPES_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "conn.h"
#include "round.h"
#include "log.h"
#include "membership.h"
#include "node.h"
#include "uri.h"

struct rl_stats;
struct rl_cluster;

/* What a handle knows of membership steps, shared by its command
 * connections (record.c) and its subscriber connections (subs.c), which
 * may be driven by different threads. */
typedef struct rl_notices {
    atomic_uint heard; /* steps announced on RL_MEMBERSHIP_CHANNEL, on any node */
    atomic_int found;  /* RL_WATCH_*: whether a record was read, and the channel listened on */
} rl_notices_t;

/* rl_notices_t.found: no record read yet; one was (the driver is to listen
 * for the steps' announcements); the driver listens. */
enum { RL_WATCH_NONE = 0, RL_WATCH_WANTED, RL_WATCH_ON };

typedef struct rl_nodes_config {
    uint32_t connect_timeout_ms, op_timeout_ms;
    uint32_t node_down_ms, reconnect_min_ms, reconnect_max_ms;
    uint32_t max_inflight;
    rl_clock_fn clock;
    rl_logger_t log;
    void *tls_ctx;               /* rl_tls_ctx_t for rediss:// nodes, or NULL */
    const char *tls_server_name; /* verification / SNI override, or NULL */
    int tls_verify;
    uint32_t quarantine_ms;              /* a node restarted less than this ago gets no acquire vote; 0: off */
    uint32_t jump_quarantine_ms;         /* a node whose clock jumped gets no acquire vote for this long; 0: off */
    uint32_t clock_jump_ms;              /* what counts as a jump (beyond the elapsed time and 1000 ppm) */
    uint32_t clock_check_ms;             /* least time between TIME samples of a node; 0: every acquire */
    struct rl_stats *stats;              /* votes, round trips and reconnects are counted here; NULL: not counted */
    uint32_t probe_min_ms, probe_max_ms; /* a suspect node's probe backoff (see suspect.h) */
    uint32_t grace_rtts;                 /* a settled round waits this many of its slowest round trips */
    uint32_t min_replicas;               /* a replicated round's write waits for this many replicas (WAIT),
                                          * unless the node's URI says replicas=N */
    int subscriber;                      /* pub/sub connections (subs.c): no script loads or probes on
                                          * connect; push frames go to the pubsub hook */
    char fp[RL_FP_HEX + 1];              /* the handle's configuration fingerprint: membership records
                                          * are read and checked (record.c); "": they are not */
    rl_notices_t *notices;               /* the handle's (record.c, subs.c); NULL: none heard */
} rl_nodes_config_t;

/* Kinds of pub/sub frames a subscriber node set reports. */
enum { RL_PUSH_MESSAGE = 1, RL_PUSH_SUBSCRIBE, RL_PUSH_UNSUBSCRIBE };

typedef struct rl_nodes {
    rl_node_t *nodes; /* node i and its own connection: a plain node's only one; a
                       * Redis Cluster node's reaches a member (a seed) for the slot map */
    size_t n;
    /* every connection, indexed k (what drivers poll): the nodes' n first,
     * then the shard primaries of cluster nodes in the order found (each
     * in an rl_node_t of its own, malloc'd, so pointers stay put as the
     * array grows) */
    rl_conn_t **all;
    size_t nall, capall;
    struct rl_cluster **cl;                           /* per node: its slot map when it is a Redis Cluster, else NULL
                                                       * (NULL throughout a set without clusters) */
    void (*closing)(void *arg, rl_conn_t *c, int fd); /* given to every connection (conn.h) */
    void *closing_arg;
    rl_nodes_config_t cfg;
    /* called once per round, the moment it is decided (from inside any of
     * the functions below): the driver wakes or resumes the round's owner */
    void (*round_done)(void *arg, rl_round_t *r);
    void *done_arg;
    /* subscriber sets only: a pub/sub frame of kind RL_PUSH_* for channel
     * ch (len bytes, valid during the call) arrived from node i */
    void (*pubsub)(void *arg, size_t i, int kind, const char *ch, size_t len, const char *msg, size_t mlen);
    const struct rl_ns_ops *ops; /* nodeset.c's own steps, for route.c (set by rl_nodes_init) */
    int closing_now;             /* the driver is closing: output held behind a WAIT goes at once */
} rl_nodes_t;

/* What one request carries to a connection (see rl_ns_ops_t.place). */
typedef struct rl_send {
    const char *cmd;
    size_t len;
    const struct rl_script *script;
    uint64_t sent_us, deadline_us; /* a redirect keeps its request's; 0: from now */
    uint8_t redirects, asking;     /* hops so far; ASKING goes first (an ASK redirect) */
    uint8_t grants, send_all;      /* the round's (a detached request's: 0, 1) */
    uint8_t skip;                  /* replies to drop before the one that votes (rl_round.skip) */
    const char *gcmd;              /* the round's guarded form (rl_round.gcmd), or NULL */
    size_t glen;
    const struct rl_script *gscript;
    uint8_t ask_suspect; /* the nodes not suspect cannot make the round's quorum: a
                                    * suspect node is asked too (and probed at once) */
} rl_send_t;

/* nodeset.c's steps for route.c and deadline.c: vote records node i's
 * vote in r (finishing r when that decides it); down fails what c owes and
 * closes it; open
 * opens c (a cluster node's own connection then asks for the map); place
 * queues s on c for node i, owned by r (NULL: unwaited), or votes why it
 * cannot go; finish ends a round whose grace passed; read takes in what
 * c's socket holds (deadline.c, before it judges c late); add makes a
 * connection of node i (a shard primary) to uri, taking its strings, or
 * returns NULL when out of memory; cast records node c's vote in r as
 * vote does, a grant from a quarantined node counting as none (detail,
 * RL_DETAIL_LEN bytes, may be rewritten). replicate.c votes through them
 * too. */
typedef struct rl_ns_ops {
    void (*vote)(rl_nodes_t *ns, rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt, const char *detail,
                 uint64_t now);
    void (*down)(rl_nodes_t *ns, rl_conn_t *c, int err, const char *detail, uint64_t now);
    int (*open)(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);
    void (*place)(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, const rl_send_t *s, uint64_t now);
    void (*finish)(rl_nodes_t *ns, rl_round_t *r, uint64_t now);
    void (*read)(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);
    rl_conn_t *(*add)(rl_nodes_t *ns, size_t i, rl_uri_t *uri);
    void (*cast)(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, redlock_vote_t v, int err, int64_t rtt, char *detail,
                 uint64_t now);
} rl_ns_ops_t;

#endif
