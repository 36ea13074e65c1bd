/* round.h -- one round: one command to N nodes, counted as votes.
 *
 * A round lives on its caller's stack. The engine sends its command to every
 * node, records each node's vote as replies, errors and deadlines come, and
 * marks the round done as soon as its stop rule says the outcome is known;
 * replies still owed after that are read and dropped by the engine. */
#ifndef RL_ROUND_H
#define RL_ROUND_H
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

struct rl_script;
struct rl_engine;

#define RL_NO_SLOT UINT32_MAX
#define RL_SLOT_WAITING (UINT32_MAX - 1) /* pn[].u.slot: its yes waits for a WAIT's answer (nodeset.c) */
#define RL_SLOT_NONE (-1)
#define RL_SLOT_MIXED (-2)

/* When a round may stop waiting. */
enum {
    RL_STOP_MAJORITY = 1, /* yes >= Q, or yes cannot reach Q and the reason is settled (acquire, extend) */
    RL_STOP_RESOLVE,      /* yes >= Q or no >= Q, or neither can be reached (release) */
    RL_STOP_ALL,          /* every node answered or timed out (status, ping) */
    RL_STOP_SLOT,         /* a permit attempt: one slot has Q yes, or none can reach Q and the
                           * reason is settled (a yes node's slot is in its pn[].u.left_ms,
                           * see permit.c) */
    RL_STOP_GRANT         /* yes >= Q, else every node (a waiting acquire: a refusal heard from every
                           * node needs no clean-up, and each says when the holder's key expires) */
};

/* A joint handle (next_nodes set) counts each round twice: a node's bits
 * say which list(s) it is in, and a write needs a quorum of each. */
#define RL_LIST_CUR 1u
#define RL_LIST_NEXT 2u

/* One list's count of a round's votes. */
typedef struct rl_tally {
    uint8_t n, quorum, yes, no, failed, pending, auth_failed;
    uint8_t refused; /* failed votes that a membership record refused */
} rl_tally_t;

/* Turns a hiredis reply into a vote (REDLOCK_VOTE_YES/NO/ERROR); on ERROR
 * sets *err and writes the node's words into detail. */
typedef redlock_vote_t (*rl_classify_fn)(const void *reply, int *err, char *detail, size_t n);

/* A round's record of one node (12 bytes, so a round costs what its node
 * count needs: a pending async call holds two). */
typedef struct rl_round_node {
    union {
        uint32_t slot;   /* before its vote: queue slot of the node's request, or RL_NO_SLOT */
        int32_t left_ms; /* after a "no": how long the holder still has, 0 unknown (set by
                          * the round's on_reply, which runs just before the vote) */
    } u;
    int32_t rtt_us; /* the vote's round trip, -1 without an answer */
    uint8_t vote;   /* REDLOCK_VOTE_* */
    int8_t err;     /* the vote's REDLOCK_ERR_* (kept without a per-node report) */
    uint16_t conn;  /* the connection its request went to (nodeset.h: ns->all[conn]) */
} rl_round_node_t;

_Static_assert(REDLOCK_MAX_NODES <= UINT8_MAX, "a round counts its nodes in 8 bits");

typedef struct rl_round {
    /* set by the caller before rl_engine_run */
    const char *cmd; /* encoded request for every node (but see node_cmd) */
    size_t cmd_len;
    const char *ccmd; /* the same for Redis Cluster nodes, its keys named as there
                       * (slot.h's rl_cluster_key); NULL: cmd serves them too */
    size_t ccmd_len;
    const char *gcmd; /* a write that grants or keeps a lock: its guarded form, for a plain
                       * node that may hold a membership record (record.c); NULL: none */
    size_t gcmd_len;
    const struct rl_script *gscript; /* the script gcmd runs (its NOSCRIPT fallback) */
    const struct rl_script *script;  /* set when cmd is EVALSHA <script's sha1> ...: on
                                     * NOSCRIPT the engine sends the EVAL form, rebuilt
                                     * from cmd's arguments and the script's text */
    rl_classify_fn classify;
    int32_t hslot; /* the slot of its keys on a cluster node; RL_SLOT_NONE: it
                    * has none, RL_SLOT_MIXED: they span slots */
    /* (small types: every pending async acquire holds a round) */
    uint8_t stop;      /* RL_STOP_* */
    uint8_t send_all;  /* send to every node even once decided (release) */
    uint8_t grants;    /* an acquire: a quarantined node's yes does not count */
    uint8_t replicate; /* a write (acquire, extend, fencing): on a node with replicas
                        * to wait for, a WAIT follows it and decides its yes */
    uint8_t skip;      /* cmd is skip + 1 commands (MULTI .. EXEC, at most 255): a
                        * node's first skip replies to it are dropped, the last votes */
    uint8_t done;      /* kept by the core: decided */
    uint8_t n, quorum; /* nodes (at most REDLOCK_MAX_NODES) and the quorum */
    /* kept by the core as votes come */
    uint8_t yes, no, failed, pending, auth_failed, refused;
    rl_tally_t lt[2];             /* a joint round's counts per list (kept by the core) */
    const uint8_t *lists;         /* per node: RL_LIST_* bits (joint); NULL: one list, the whole round */
    redlock_node_report_t *nodes; /* optional per-node detail, n entries */
    void (*on_reply)(void *arg, size_t node,
                     const void *reply); /* optional: sees each reply (from inside the driver) */
    void *reply_arg;
    /* optional: a command of each node's own (cluster: the node is a Redis Cluster node, its
     * keys named as there, in slot hslot), written into buf (cap bytes, at least
     * RL_NODE_CMD_MAX); it replaces cmd and ccmd, which still must be non-NULL (the drivers'
     * sign that the round has a command). Returns its length (more than cap: it did not fit,
     * an error vote), or 0: nothing for this node, which votes no at once with *why as detail */
    size_t (*node_cmd)(void *arg, size_t node, int cluster, char *buf, size_t cap, const char **why);
    /* optional: votes in place of classify, knowing the node and node_arg */
    redlock_vote_t (*judge)(void *arg, size_t node, const void *reply, int *err, char *detail, size_t n);
    void *node_arg;       /* node_cmd's and judge's argument */
    uint64_t t0_us;       /* when the round was sent */
    uint64_t grace_us;    /* its outcome is known: the nodes still unheard are waited
                           * for until then (0: not yet; see rl_round_settled) */
    void *owner;          /* the driver's: who waits for this round */
    rl_round_node_t pn[]; /* per node: n entries (see rl_round_size) */
} rl_round_t;

/* Room for one node's own command (rl_round_t.node_cmd): two keys of the
 * longest resource named as on a cluster, with suffixes, and the rest. */
#define RL_NODE_CMD_MAX (2 * REDLOCK_MAX_RESOURCE + 512)

/* Bytes a round for n nodes takes (its per-node records included),
 * rounded up so that rounds placed one after another stay aligned. */
#define rl_round_size(n)                                                                                      \
    ((sizeof(rl_round_t) + (n) * sizeof(rl_round_node_t) + _Alignof(rl_round_t) - 1) / _Alignof(rl_round_t) * \
     _Alignof(rl_round_t))

/* Room for a round of any node count, for the stack:
 *   RL_ROUND(r);  declares rl_round_t *r with REDLOCK_MAX_NODES records. */
typedef union rl_round_room {
    rl_round_t r;
    unsigned char room[rl_round_size(REDLOCK_MAX_NODES)];
} rl_round_room_t;
#define RL_ROUND(name)            \
    rl_round_room_t name##_room_; \
    rl_round_t *const name = &name##_room_.r

/* Prepares r for n nodes (all pending) with the given stop rule; nodes may
 * be NULL. The command fields are set by the caller afterwards. */
void rl_round_init(rl_round_t *r, size_t n, int stop, redlock_node_report_t *nodes);

/* Makes r a joint round: node i is in the lists of bits lists[i] (the
 * array outlives r). Call after rl_round_init. */
void rl_round_lists(rl_round_t *r, const uint8_t *lists);

/* The counts of r per list into t (room for 2): one entry for a plain
 * round (the whole round), two for a joint one (current, next). Returns
 * how many. */
size_t rl_round_tallies(const rl_round_t *r, rl_tally_t *t);

/* 1 when r has a quorum of yes votes (of each list, for a joint round). */
int rl_round_won(const rl_round_t *r);

/* 1 when r has a quorum of no votes (of some list, for a joint round). */
int rl_round_refused(const rl_round_t *r);

/* 1 when the nodes marked in hit (n bytes, 0 / 1) are more than some
 * list's slack (its nodes less its quorum): without them no quorum of
 * that list can be made. */
int rl_round_beyond_slack(const rl_round_t *r, const uint8_t *hit);

/* r's votes in words into buf: "3 yes, 1 no, 1 failed of 5 nodes
 * (quorum 3)"; a joint round's ends "of 6 nodes: old 3 of 5 (quorum 3),
 * new 2 of 5 (quorum 3)" (the yes votes of each list). */
void rl_round_count_text(const rl_round_t *r, char *buf, size_t n);

/* Records node i's vote; err and detail explain failures, rtt_us < 0 when
 * there was no answer. Returns 1 when this vote decided the round. */
int rl_round_vote(rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt_us, const char *detail);

/* 1 when the stop rule says the outcome is known (or nothing is pending). */
int rl_round_decided(const rl_round_t *r);

/* 1 when the round's outcome (a quorum of yes or not; for a release, of
 * yes, of no, or of neither) is known though the stop rule still waits:
 * to settle the reason, or to hear a holder's remaining TTL. The driver
 * then waits only a short grace for the nodes still unheard (doc/design.md,
 * "A silent minority"); RL_STOP_ALL never settles early. */
int rl_round_settled(const rl_round_t *r);

/* The slowest round trip among the nodes that answered r, in µs (0 when
 * none did). */
int64_t rl_round_slowest_us(const rl_round_t *r);

/* How long a settled round still waits for its unheard nodes: rtts round
 * trips of the slowest node that answered, at least RL_GRACE_MIN_US and
 * at most cap_us (the op timeout), in µs. */
#define RL_GRACE_MIN_US 500u
uint64_t rl_round_grace_us(const rl_round_t *r, uint32_t rtts, uint64_t cap_us);

/* The slot most yes votes of a permit round name (pn[].u.left_ms of the
 * nodes that voted yes), in *slot (-1 when none), and how many name it. */
size_t rl_round_best_slot(const rl_round_t *r, int *slot);

/* 1 when one slot has a quorum of yes votes (of each list, joint), in
 * *slot; else 0, *slot the best candidate (-1 when none). */
int rl_round_slot_won(const rl_round_t *r, int *slot);

/* The reason a round failed to reach a quorum of yes votes (a joint
 * round's: that of the first list that cannot reach one), with slack =
 * N - Q: REDLOCK_ERR_AUTH when more than slack nodes refused our
 * credentials, `no_code` (TAKEN or NOT_HELD) when more than slack nodes
 * said no (the no votes alone made a quorum impossible), else NO_QUORUM. */
int rl_round_reason(const rl_round_t *r, int no_code);

/* Classifiers: SET NX (OK -> yes, nil -> no) and scripts returning 1 / 0. */
redlock_vote_t rl_classify_set(const void *reply, int *err, char *detail, size_t n);
redlock_vote_t rl_classify_int(const void *reply, int *err, char *detail, size_t n);
/* A lock's extend or release script: 1 yes, 0 no, -1 no with *err =
 * REDLOCK_ERR_INVALID (the key is of another kind: RL_WRONG_KIND). */
redlock_vote_t rl_classify_mine(const void *reply, int *err, char *detail, size_t n);
#define RL_WRONG_KIND "the key is not an exclusive lock's (a read-write lock's readers, or another type)"

/* Any reply but an error is a yes (queries: PING, INFO, status). */
redlock_vote_t rl_classify_any(const void *reply, int *err, char *detail, size_t n);

/* Classifies an error reply's text: AUTH for NOAUTH / WRONGPASS / NOPERM,
 * else SERVER. */
int rl_error_code(const char *text);

#endif
