/* wire.h -- the blocking leader's writes outside the engine mutex.
 *
 * Under the mutex the leader lends itself each plain, ready connection's
 * pending output (rl_wire_lend: the bytes move to a buffer of the wire's,
 * the connection keeps an empty one for what callers queue meanwhile),
 * then writes them with the mutex released (rl_wire_write), and gives
 * back what the socket did not take, ahead of what was queued meanwhile
 * (rl_wire_return, the mutex held again). Callers that arrive while the
 * leader writes no longer wait on the mutex behind a leader preempted in
 * send() by the server it just woke. While a connection's descriptor is
 * lent, closing the connection leaves the descriptor open until it is
 * returned (conn.h, fd_lent), so a write can never reach a reused fd. */
#ifndef RL_WIRE_H
#define RL_WIRE_H
#include <stddef.h>

#include "buf.h"
#include "nodeset.h"

typedef struct rl_wire_slot {
    rl_conn_t *c;
    unsigned gen; /* c's generation when lent: a close meanwhile drops the rest */
    int fd;
    int stuck;  /* the socket took less than all (full) or failed */
    rl_buf_t b; /* the lent bytes; its memory is reused turn after turn */
} rl_wire_slot_t;

typedef struct rl_wire {
    rl_wire_slot_t *slot;
    size_t n, cap;
} rl_wire_t;

/* Lends w every connection of ns that is ready, plain TCP, not held for
 * replication and has output, unless ns has cluster nodes (whose shard
 * connections come and go) or out of memory. Mutex held. */
void rl_wire_lend(rl_wire_t *w, rl_nodes_t *ns);

/* Writes the lent bytes, without the mutex. Returns 1 when a socket took
 * less than all (full, or failed): the turn should not wait in its poll,
 * which does not watch lent connections for POLLOUT. */
int rl_wire_write(rl_wire_t *w);

/* Gives the lent connections back (mutex held): unwritten bytes go back
 * in front of their connection's output, and a connection whose socket
 * was full or failed is written by the node set's own flush next turn
 * (which waits for POLLOUT, or marks the node down); one whose bytes
 * cannot be put back (out of memory) is marked down at once. */
void rl_wire_return(rl_wire_t *w, rl_nodes_t *ns, uint64_t now);

/* Frees w's memory. Nothing may be lent. */
void rl_wire_free(rl_wire_t *w);

#endif
