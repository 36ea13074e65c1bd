/* nodes_int.h -- what nodes.c (rounds over connections) and route.c (a
 * Redis Cluster node's routing: slot maps, redirects, requests parked
 * until the map is known) share. Private to those two files. */
#ifndef RL_NODES_INT_H
#define RL_NODES_INT_H
#include <stdint.h>

#include "nodes.h"

/* What one request carries to a connection (see rl_ns_place). */
typedef struct rl_send {
    const char *cmd;
    size_t len;
    const struct rl_script *script;
    uint64_t sent_us, deadline_us; /* a redirect keeps its request's; 0: from now */
    uint8_t redirects, asking;     /* hops so far; ASKING goes first (an ASK redirect) */
    uint8_t grants, send_all;      /* the round's (a detached request's: 0, 1) */
    uint8_t skip;                  /* replies to drop before the one that votes (rl_round.skip) */
} rl_send_t;

/* nodes.c. rl_ns_vote records node i's vote in r (finishing r when that
 * decides it); rl_ns_down fails what c owes and closes it; rl_ns_open
 * opens c (a cluster node's own connection then asks for the map);
 * rl_ns_place queues s on c for node i, owned by r (NULL: unwaited), or
 * votes why it cannot go; rl_ns_finish ends a round whose grace passed. */
void rl_ns_vote(rl_nodes_t *ns, rl_round_t *r, size_t i, redlock_vote_t v, int err, int64_t rtt,
                const char *detail, uint64_t now);
void rl_ns_down(rl_nodes_t *ns, rl_conn_t *c, int err, const char *detail, uint64_t now);
int rl_ns_open(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);
void rl_ns_place(rl_nodes_t *ns, rl_conn_t *c, rl_round_t *r, size_t i, const rl_send_t *s, uint64_t now);
void rl_ns_finish(rl_nodes_t *ns, rl_round_t *r, uint64_t now);

/* route.c. rl_route_submit sends s (the round r's, owner NULL when r is
 * decided) for cluster node i: to the shard serving r->hslot, or parked
 * until the slot map is known. */
void rl_route_submit(rl_nodes_t *ns, rl_round_t *r, rl_round_t *owner, size_t i, rl_send_t *s, uint64_t now);
/* Asks node i's own connection for the slot map (once at a time). */
void rl_route_map_reload(rl_nodes_t *ns, size_t i, uint64_t now);
/* The slot map's reply on node i's own connection c (request popped). */
void rl_route_map_reply(rl_nodes_t *ns, rl_conn_t *c, const void *reply, uint64_t now);
/* c's head request was answered MOVED or ASK (err): it goes again where
 * the answer says. */
void rl_route_redirect(rl_nodes_t *ns, rl_conn_t *c, const char *err, uint64_t now);
/* c's head request, a transaction, had one of its commands answered err
 * (a skipped reply): a MOVED corrects the map for the next attempt. */
void rl_route_note_redirect(rl_nodes_t *ns, rl_conn_t *c, const char *err, uint64_t now);
/* A cluster node's connection c failed (after rl_ns_down's close). */
void rl_route_down(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);
/* Forgets r in the parked requests (r is finished or abandoned). */
void rl_route_detach(rl_nodes_t *ns, rl_round_t *r);
/* Parked requests past their deadline or round's grace, and maps wanted
 * while no member could be asked; rl_route_next_us: when that is next due. */
void rl_route_expire(rl_nodes_t *ns, uint64_t now);
uint64_t rl_route_next_us(const rl_nodes_t *ns);
/* Frees node i's parked requests (the node set is destroyed). */
void rl_route_free(rl_nodes_t *ns, size_t i);

#endif
