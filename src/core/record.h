/* record.h -- a node's membership record as a handle sees it
 * (doc/membership.md): read when the node is opened and again ahead of a
 * write that grants or keeps a lock once RL_RECORD_REFRESH_MS / 2 has
 * passed or a step was announced since (cfg->notices, which the driver's
 * subscriber connections count once a record was met), and the form such
 * a write takes on the node: bare (the node was read lately and holds no
 * record), guarded (the record's check runs in the same script), or none
 * at all (its record cannot be read).
 * Redis Cluster nodes keep no record: their writes stay bare. */
#ifndef RL_RECORD_H
#define RL_RECORD_H
#include <stddef.h>
#include <stdint.h>

#include "nodetypes.h"

/* What the last read of a node's record found (rl_node_t.record). */
enum {
    RL_RECORD_UNKNOWN = 0, /* not read on this connection yet */
    RL_RECORD_NONE,        /* no record: bare writes until bare_until_us */
    RL_RECORD_SOME,        /* a record: guarded writes */
    RL_RECORD_UNREADABLE,  /* a record that cannot be parsed: no vote */
    RL_RECORD_DENIED       /* the node's ACL denies the read: bare writes, as before records */
};

/* The form of a write that grants or keeps a lock on one node. */
enum { RL_FORM_BARE = 0, RL_FORM_GUARDED, RL_FORM_REFUSED, RL_FORM_NOMEM };

/* Forgets what c's record was (a new connection) and queues its read on
 * c when the handle checks records there. Returns 0, or -1 when out of
 * memory. */
int rl_record_open(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now);

/* The form of the next guarded-capable write on c (queuing a read of the
 * record ahead of it when one is due); RL_FORM_REFUSED with why in buf (n
 * bytes). */
int rl_record_form(const rl_nodes_config_t *cfg, rl_conn_t *c, uint64_t now, char *buf, size_t n);

/* 1 once, for the driver that is to start listening for the membership
 * steps now that a record was met (n's found goes from WANTED to ON); 0
 * otherwise, at the cost of one relaxed load. */
int rl_record_claim_watch(rl_notices_t *n);

/* Takes the reply to a read of c's record (sent at sent). */
void rl_record_reply(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *reply, uint64_t sent, uint64_t now);

#endif
