/* wire.c -- the blocking leader's writes outside the engine mutex (see wire.h). */
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "node.h"

/* Makes room for cap slots. Returns 0, or -1 when out of memory. */
static int reserve(rl_wire_t *w, size_t cap) {
    if (cap <= w->cap) return 0;
    rl_wire_slot_t *s = realloc(w->slot, cap * sizeof *s);
    if (!s) return -1;
    memset(s + w->cap, 0, (cap - w->cap) * sizeof *s);
    w->slot = s;
    w->cap = cap;
    return 0;
}

/* Whether c's output may be written without the mutex this turn. */
static int lendable(const rl_conn_t *c) {
    return c->state == RL_CONN_READY && !c->ssl && !c->wire_skip && !rl_node_of_const(c)->wait_owed &&
           rl_buf_pending(&c->out);
}

void rl_wire_lend(rl_wire_t *w, rl_nodes_t *ns) {
    w->n = 0;
    if (ns->cl || reserve(w, ns->nall) < 0) return;
    for (size_t k = 0; k < ns->nall; k++) {
        rl_conn_t *c = ns->all[k];
        if (!lendable(c)) {
            c->wire_skip = 0; /* (skipped once: the node set's flush had its turn) */
            continue;
        }
        rl_wire_slot_t *s = &w->slot[w->n++];
        rl_buf_t spare = s->b;
        s->b = c->out;
        c->out = spare;
        rl_buf_reset(&c->out);
        s->c = c;
        s->gen = c->gen;
        s->fd = c->fd;
        s->stuck = 0;
        c->fd_lent = 1;
    }
}

int rl_wire_write(rl_wire_t *w) {
    int stuck = 0;
    for (size_t i = 0; i < w->n; i++) {
        rl_wire_slot_t *s = &w->slot[i];
        while (rl_buf_pending(&s->b)) {
            ssize_t n = send(s->fd, s->b.data + s->b.off, rl_buf_pending(&s->b), MSG_NOSIGNAL);
            if (n > 0) {
                s->b.off += (size_t)n;
            } else if (!(n < 0 && errno == EINTR)) {
                s->stuck = stuck = 1;
                break;
            }
        }
    }
    return stuck;
}

/* Puts s's unwritten bytes back in front of c's output, which holds what
 * was queued meanwhile. Returns 0, or -1 when out of memory. */
static int give_back(rl_wire_slot_t *s, rl_conn_t *c) {
    if (rl_buf_append(&s->b, c->out.data + c->out.off, rl_buf_pending(&c->out)) < 0) return -1;
    rl_buf_t t = c->out;
    c->out = s->b;
    s->b = t;
    return 0;
}

void rl_wire_return(rl_wire_t *w, rl_nodes_t *ns, uint64_t now) {
    for (size_t i = 0; i < w->n; i++) {
        rl_wire_slot_t *s = &w->slot[i];
        rl_conn_t *c = s->c;
        c->fd_lent = 0;   /* (already 0 when it was closed meanwhile: rl_conn_drop_socket) */
        if (c->fd_late) { /* closed while lent: its descriptor is closed now */
            close(c->fd_late - 1);
            c->fd_late = 0;
        }
        if (s->stuck) c->wire_skip = 1;
        if (c->gen == s->gen && rl_buf_pending(&s->b) && give_back(s, c) < 0)
            rl_nodes_conn_down(ns, c, REDLOCK_ERR_NOMEM, "out of memory", now); /* its replies would be misread */
        if (s->b.cap > RL_BUF_KEEP) rl_buf_free(&s->b);                         /* a burst's memory is not kept */
        rl_buf_reset(&s->b);
    }
    w->n = 0;
}

void rl_wire_free(rl_wire_t *w) {
    for (size_t i = 0; i < w->cap; i++) rl_buf_free(&w->slot[i].b);
    free(w->slot);
    *w = (rl_wire_t){0};
}
