/* route.h -- a Redis Cluster node's routing (route.c): slot maps,
 * redirects, requests parked until the map is known. nodeset.c calls these
 * for its cluster nodes; route.c reaches nodeset.c's steps through ns->ops
 * (nodetypes.h). */
#ifndef RL_ROUTE_H
#define RL_ROUTE_H
#include <stdint.h>

#include "nodetypes.h"

/* rl_route_submit sends s (the round r's, owner NULL when r is
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
/* A cluster node's connection c failed (after its close). */
void rl_route_down(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);
/* Forgets r in the parked requests (r is finished or abandoned). */
void rl_route_detach(rl_nodes_t *ns, rl_round_t *r);
/* Parked requests past their deadline or round's grace, and maps wanted
 * while no member could be asked; rl_route_next_us: when that is next due. */
void rl_route_expire(rl_nodes_t *ns, uint64_t now);
uint64_t rl_route_next_us(const rl_nodes_t *ns);
/* Frees node i's parked requests (the node set is destroyed). */
void rl_route_free(rl_nodes_t *ns, size_t i);

/* Makes node i of ns (its connection set up) a cluster node when its URI
 * says so (ns->cl[i]: its slot map, loaded with the first round). Returns
 * 0, or -1 when out of memory. */
int rl_route_init(rl_nodes_t *ns, size_t i);

#endif
