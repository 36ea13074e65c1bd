/* replicate.h -- votes counted after replication (doc/design.md, "Replicated nodes"), for the
 * node set (nodeset.c): a round's write (r->replicate) on a node whose
 * replicas=N, or the handle's min_replicas, is above 0 is marked (owe);
 * the next flush appends one WAIT for every such write queued on the
 * connection since the last (append); a write's yes waits on the
 * connection's list (defer) until that WAIT answers (answer), fails when
 * the connection closes or goes silent (fail), and leaves the list when
 * its round ends first (forget). Votes go through ns->ops. */
#ifndef RL_REPLICATE_H
#define RL_REPLICATE_H
#include <stdint.h>

#include "nodetypes.h"

/* The replicas a write on c waits for: its URI's replicas=N, else the
 * handle's min_replicas (0: none, no WAIT). */
uint32_t rl_repl_want(const rl_nodes_t *ns, const rl_conn_t *c);

/* Marks q, the write just queued on c, as counted after replication. */
void rl_repl_owe(rl_conn_t *c, rl_req_t *q);

/* Appends the WAIT that covers c's marked writes. Returns 0 or -1 (no memory). */
int rl_repl_append(rl_nodes_t *ns, rl_conn_t *c, uint64_t now);

/* Node c->idx's yes in r (its write sent at sent) waits for c's next WAIT.
 * Returns 0, or -1 when out of memory. */
int rl_repl_defer(rl_conn_t *c, rl_round_t *r, uint64_t sent);

/* The WAIT at the head of c's queue answered (reply, a hiredis reply):
 * pops it and decides every yes waiting on c. */
void rl_repl_answer(rl_nodes_t *ns, rl_conn_t *c, const void *reply, uint64_t now);

/* Fails every yes waiting on c (it closes or went silent) as v / err / detail. */
void rl_repl_fail(rl_nodes_t *ns, rl_conn_t *c, redlock_vote_t v, int err, const char *detail, uint64_t now);

/* Takes round r (ending before its WAIT answered) off c's waiting list. */
void rl_repl_forget(rl_conn_t *c, const rl_round_t *r);

#endif
