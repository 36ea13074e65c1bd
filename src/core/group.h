/* group.h -- the Sentinel kind of node (a redis+sentinel:// URI): one
 * group of a master and its replicas is one vote. The connection finds
 * the master through the sentinels (net/sentinel.h), follows their
 * +switch-master announcements (net/failover.h), checks with ROLE that
 * the address it was given is still a master, and leaves it on a
 * READONLY reply. A master promoted less than quarantine_ms ago gets no
 * acquire vote unless the node's votes count after replication to every
 * replica the group has. Called by health.c and nodeset.c for sentinel nodes
 * only (c->uri.sentinel). */
#ifndef RL_GROUP_H
#define RL_GROUP_H
#include <stddef.h>
#include <stdint.h>

#include "nodeset.h"

/* Queues ROLE on a fresh connection to the group's master: the master
 * the sentinels named must still be one. Returns 0/-1 (out of memory). */
int rl_group_open(rl_conn_t *c, uint64_t now);

/* Learns from the ROLE reply rep (a redisReply) whether c still reaches
 * the group's master, and how many replicas it lists. Returns 0, or
 * REDLOCK_ERR_SERVER with why in detail when it does not: the caller
 * takes c down, and the next connect asks the sentinels afresh. */
int rl_group_role(const rl_nodes_config_t *cfg, rl_conn_t *c, const void *rep, uint64_t now, char *detail, size_t n);

/* c's sentinels answered a look-up with g (taken as its node's group):
 * with what its master's ROLE said, starts or lifts the promotion
 * quarantine (rl_node.promoted_until_us). */
void rl_group_learnt(const rl_nodes_config_t *cfg, rl_conn_t *c, const rl_group_info_t *g, uint64_t now);

/* Writes why c's master is quarantined after its promotion into buf.
 * Returns 1. */
int rl_group_quarantined(const rl_conn_t *c, uint64_t now, char *buf, size_t n);

/* The driver's wake pipe had news: when the sentinels announced a new
 * master since the last look, c leaves the old one (what it owes fails
 * with a detail naming the new master). */
void rl_group_news(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);

/* A reply rep (a redisReply) of c: a READONLY error means the master the
 * sentinels named was demoted; c is taken down to ask them again.
 * Returns 1 then, else 0. */
int rl_group_readonly(rl_nodes_t *ns, rl_conn_t *c, const void *rep, uint64_t now);

#endif
