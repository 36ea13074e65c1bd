/* node.h -- what the core knows of the node one connection reaches
 * (rl_node_t): its quarantines, clock samples, suspicion, Sentinel group
 * and replication waits. The connection itself is net/'s (conn.h). */
#ifndef RL_NODE_H
#define RL_NODE_H
#include <stddef.h>
#include <stdint.h>

#include "clockjump.h"
#include "conn.h"
#include "sentinel.h"

struct rl_round;
struct rl_failover_feed;
typedef struct rl_nodes_config rl_nodes_config_t;

/* A round's node whose write said yes and waits for the next WAIT's
 * answer on the connection (see rl_node.waiting). */
typedef struct rl_waiting {
    struct rl_round *round;
    int idx;
    int32_t left_ms; /* what the round's on_reply kept in pn[idx].u (a permit's slot), given back with the vote */
    uint64_t sent_us;
} rl_waiting_t;

/* What the core knows of the node one connection reaches. Every
 * connection of a node set lives in one (rl_node_of finds it), so the
 * drivers and net/ deal in rl_conn_t while the core keeps here what is
 * about votes: quarantines, suspicion, the Sentinel group, replication. */
typedef struct rl_node {
    rl_conn_t conn; /* its connection (first: rl_node_of) */
    /* restart quarantine (health.c) */
    uint64_t quarantine_until_us; /* restarted recently: no acquire vote before this */
    uint64_t restarted_us;        /* when it (at the latest) started, on our clock; 0 unknown */
    /* promotion quarantine: a cluster shard's replica or a Sentinel group's master took over */
    uint64_t promoted_until_us; /* no acquire vote before this */
    uint64_t promoted_us;       /* when that was seen, on our clock */
    /* a cluster shard that took slots over from a quarantined shard shares its quarantine */
    uint64_t inherited_until_us; /* no acquire vote before this */
    /* clock samples and jumps (health.c) */
    rl_clock_sample_t tsample; /* last TIME sample; kept across reconnects */
    uint64_t time_due_us;      /* acquires send a TIME sample from then on */
    int time_refused;          /* the node refused TIME (ACL): no more samples */
    uint64_t jump_until_us;    /* its clock jumped: no acquire vote before this */
    uint64_t jumped_us;        /* when the jump was seen, on our clock */
    int64_t jump_us;           /* how far its clock moved beyond the elapsed time */
    /* a silent node (suspect.c): suspect from a timeout until a probe answers */
    int suspect;
    uint64_t suspect_since_us; /* when it last became suspect */
    uint64_t probe_at_us;      /* while suspect and down: when the next probe goes */
    uint32_t probe_backoff_ms; /* the wait before the probe after next */
    uint64_t close_at_us;      /* a timeout's close waits until then (0: none pending): an
                                * attempt that wrote here may still be queueing its clean-up */
    /* a Sentinel group's node (group.c): what its sentinels said at the last look-up */
    rl_group_info_t group;
    uint64_t group_at_us;          /* when that was (0: never) */
    int role_replicas;             /* replicas its master's ROLE listed (-1: not known) */
    int follow;                    /* follow the sentinels' +switch-master (set by the node set) */
    struct rl_failover_feed *feed; /* what follows them, started with the first connect (failover.h) */
    uint32_t switches_seen;        /* the feed's switches already acted on */
    /* votes counted after replication (replicate.c): the writes queued since the last WAIT
     * are covered by one WAIT appended when the output is next written (so writes that
     * concurrent calls pipeline share it); a write's yes then waits for that WAIT's answer */
    int wait_owed;          /* a replicated write was queued since the last WAIT */
    uint64_t wait_first_us; /* the earliest deadline of those writes: the WAIT's timeout */
    uint64_t wait_last_us;  /* the latest: the WAIT's own deadline */
    uint32_t waits_out;     /* WAITs sent and not answered yet: while one is out, replicated
                             * writes queued since (and what follows them) are held, so that
                             * they share the next WAIT instead of each paying a replica's
                             * round trip behind the blocked connection */
    rl_waiting_t *waiting;  /* yes votes waiting for the next WAIT's answer */
    uint32_t nwaiting, capwaiting;
    /* its membership record (record.c) */
    uint8_t record;              /* RL_RECORD_*: what the last read found */
    uint64_t record_due_us;      /* the next guarded-capable write reads the record first from then on */
    uint64_t bare_until_us;      /* read as absent: writes go without the guard until then */
    unsigned notices_seen;       /* rl_notices_t.heard when the record was last read */
    char record_why[96];         /* an unreadable record: why */
    char refusal[RL_DETAIL_LEN]; /* the last refusal's detail (a report without per-node detail
                             * rebuilds it from here) */
} rl_node_t;

/* The node whose connection c is (c must belong to a node set). */
static inline rl_node_t *rl_node_of(rl_conn_t *c) {
    return (rl_node_t *)(void *)((char *)c - offsetof(rl_node_t, conn));
}
static inline const rl_node_t *rl_node_of_const(const rl_conn_t *c) {
    return (const rl_node_t *)(const void *)((const char *)c - offsetof(rl_node_t, conn));
}

#endif
