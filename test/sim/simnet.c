/* simnet.c -- the simulated network and nodes (see sim.h).
 *
 * A connection is a pair of FIFO links between a client and a node, each
 * message delayed by a draw of the node's one-way latency (and held while
 * the link is cut, or the node paused). What a client writes is cut into
 * whole commands, each delivered to the node's model; replies and pub/sub
 * messages come back as bytes the library reads with recv. A crash or a
 * reset breaks a connection: what was in flight is lost and the client
 * sees ECONNRESET. A connect to a crashed node is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* ---------------------------------------------------------- latencies */

uint64_t net_one_way(int node) {
    const snode_t *n = &S->nodes[node];
    double us = n->lat_us + rng_exp(&S->r_net, n->jit_us);
    if (n->slow_until > S->now) us += n->slow_us * (0.5 + rng_unit(&S->r_net));
    return (uint64_t)us + 1;
}

/* Node `node`'s wall clock now, µs since the epoch. */
double node_now_us(int node) {
    return clock_local(&S->nodes[node].clock, S->now);
}

/* The end of the cut between c's client and node, or 0. */
static uint64_t cut_until(const sconn_t *c) {
    uint64_t u = S->cut[c->client][c->node];
    return u > S->now ? u : 0;
}

/* Schedules bytes (n, owned by the event) from c's node to its client. */
static void to_client(sconn_t *c, int kind, void *p, size_t n) {
    uint64_t at = S->now + net_one_way(c->node);
    if (at < c->n2c) at = c->n2c;
    c->n2c = at;
    sim_push(kind, at, c->id, 0, 0, p, n);
}

/* Schedules a message from c's client to its node. */
static void to_node(sconn_t *c, int kind, void *p) {
    uint64_t at = S->now + net_one_way(c->node);
    if (at < c->c2n) at = c->c2n;
    c->c2n = at;
    sim_push(kind, at, c->id, 0, 0, p, 0);
}

/* Schedules a copy of the n bytes at p from c's node to its client. */
static void reply_bytes(sconn_t *c, const char *p, size_t n) {
    char *copy = malloc(n);
    if (!copy) abort();
    memcpy(copy, p, n);
    to_client(c, E_DATA, copy, n);
}

/* Holds e (taking its payload) until `until`; its link keeps its order. */
static void defer(sev_t *e, uint64_t until, uint64_t *last) {
    if (*last < until) *last = until;
    sim_push(e->kind, until, e->a, e->b, e->g, e->p, e->n);
    e->p = NULL;
}

/* ------------------------------------------------------------- nodes */

/* The model's PUBLISH hook: a message for connection (session owner) c. */
static void on_push(void *arg, model_session_t *s, const char *bytes, size_t n) {
    (void)arg;
    sconn_t *c = model_session_owner(s);
    if (!c || c->broken || c->closed) return;
    if (S->pubsub_loss_until > S->now && rng_chance(&S->r_fault, 0.7)) return; /* lost */
    reply_bytes(c, bytes, n);
}

/* Starts the run's nodes, empty, on their clocks. */
void net_init(void) {
    for (int i = 0; i < S->cfg.n_nodes; i++) {
        snode_t *n = &S->nodes[i];
        n->up = 1;
        n->epoch = 1;
        if (!(n->m = model_new((uint64_t)node_now_us(i) - S->cfg.up_us))) abort();
        model_set_push(n->m, on_push, n);
    }
}

/* Frees the commands c holds behind a blocked WAIT. */
static void drop_held(sconn_t *c) {
    for (size_t i = 0; i < c->nheld; i++) free(c->held[i]);
    free(c->held);
    c->held = NULL;
    c->nheld = c->capheld = 0;
    c->blocked = 0;
}

/* Frees the run's connections and nodes. */
void net_free(void) {
    for (size_t i = 0; i < S->nconns; i++) {
        sconn_t *c = S->conns[i];
        sb_free(&c->rx);
        sb_free(&c->tx);
        drop_held(c);
        free(c);
    }
    free(S->conns);
    S->conns = NULL;
    S->nconns = S->capconns = 0;
    for (int i = 0; i < S->cfg.n_nodes; i++) model_free(S->nodes[i].m); /* (frees the sessions) */
}

/* Breaks c: its session at the node goes, messages in flight are lost,
 * and its client learns of it after a one-way delay. */
static void break_conn(sconn_t *c) {
    if (c->broken) return;
    c->broken = 1;
    drop_held(c);
    if (c->sess) model_session_free(c->sess);
    c->sess = NULL;
    if (!c->closed && c->state != SC_REFUSED) to_client(c, E_RESET, NULL, 0);
}

/* A connection reset: both ends lose it (see break_conn). */
void net_reset(sconn_t *c) {
    break_conn(c);
}

/* Node `node` crashes: down, its connections reset, new ones refused. */
void net_crash(int node) {
    snode_t *n = &S->nodes[node];
    n->up = 0;
    n->stream++; /* (its replicas lose what their streams still carried) */
    for (size_t i = 0; i < S->nconns; i++) {
        sconn_t *c = S->conns[i];
        if (c->node == node && sentinel_at_master(c) && c->epoch == n->epoch && !c->broken &&
            (c->sess || c->state == SC_OPEN))
            break_conn(c);
    }
}

/* Node `node` is up again as a new incarnation of whatever model is its
 * master now (a promoted replica keeps its keys and uptime). */
void net_revive(int node) {
    snode_t *n = &S->nodes[node];
    model_set_push(n->m, on_push, n);
    cluster_attach(node);
    n->epoch++;
    n->up = 1;
}

/* Node `node` comes back empty (keys, scripts), or with its keys when the
 * scenario keeps data, uptime from now; its replicas resync from it. */
void net_restart(int node) {
    S->nodes[node].restarted_at = S->now;
    if (S->cfg.keep_data)
        model_reboot(S->nodes[node].m, (uint64_t)node_now_us(node));
    else
        model_restart(S->nodes[node].m, (uint64_t)node_now_us(node));
    net_revive(node);
    repl_resync(node);
}

/* Writes the ids of the open, unbroken connections into ids (max);
 * returns how many. */
int net_open_conns(int *ids, int max) {
    int k = 0;
    for (size_t i = 0; i < S->nconns && k < max; i++) {
        const sconn_t *c = S->conns[i];
        if (c->state == SC_OPEN && !c->broken && !c->closed) ids[k++] = c->id;
    }
    return k;
}

/* --------------------------------------------------- at the node's end */

/* A connect reaches c's node: accepted (by its kernel, even while the
 * process is stopped) or refused when it is down. */
static void syn(sev_t *e, sconn_t *c) {
    uint64_t u = cut_until(c);
    if (c->closed) return;
    if (u) {
        defer(e, u, &c->c2n);
        return;
    }
    snode_t *n = &S->nodes[c->node];
    if (!sentinel_at_master(c)) { /* a Sentinel group's replica: it answers as one (command) */
        to_client(c, E_SYNACK, NULL, 0);
        return;
    }
    if (!n->up) {
        to_client(c, E_REFUSED, NULL, 0);
        return;
    }
    c->epoch = n->epoch;
    c->sess = model_session_new(n->m, c);
    to_client(c, E_SYNACK, NULL, 0);
}

/* Runs cmd of c on its node's master (its changes go to the replicas);
 * the reply goes back, unless a WAIT blocked c. */
static void run_cmd(sconn_t *c, const resp_cmd_t *cmd) {
    snode_t *n = &S->nodes[c->node];
    sbuf_t out = {0};
    model_exec(n->m, c->sess, cmd, (uint64_t)node_now_us(c->node), &out);
    if (n->n_reps) repl_ship(c->node);
    if (sb_pending(&out)) reply_bytes(c, sb_data(&out), sb_pending(&out));
    sb_free(&out);
}

/* c's blocked WAIT answers reply (n bytes): then the commands held behind
 * it run, in order, until one blocks again. */
void net_unblock(sconn_t *c, const char *reply, size_t n) {
    reply_bytes(c, reply, n);
    c->blocked = 0;
    size_t i = 0;
    while (i < c->nheld && !c->blocked && c->sess) {
        resp_cmd_t *cmd = c->held[i++];
        run_cmd(c, cmd);
        free(cmd);
    }
    if (i) memmove(c->held, c->held + i, (c->nheld - i) * sizeof *c->held);
    c->nheld -= i;
}

/* A Sentinel group's replica (or demoted master) answers cmd on c. */
static void replica_reply(sconn_t *c, const resp_cmd_t *cmd) {
    sbuf_t out = {0};
    sentinel_replica_reply(c, cmd, &out);
    reply_bytes(c, sb_data(&out), sb_pending(&out));
    sb_free(&out);
}

/* Holds cmd (taken) behind c's blocked WAIT. */
static void hold(sconn_t *c, resp_cmd_t *cmd) {
    if (c->nheld == c->capheld) {
        c->capheld = c->capheld ? c->capheld * 2 : 8;
        if (!(c->held = realloc(c->held, c->capheld * sizeof *c->held))) abort();
    }
    c->held[c->nheld++] = cmd;
}

/* A command reaches c's node: run by its model unless the node stopped
 * (then it waits), the connection broke (then it is lost), or a WAIT
 * blocks the connection (then it is held). */
static void command(sev_t *e, sconn_t *c) {
    snode_t *n = &S->nodes[c->node];
    if (c->broken || (!S->cfg.sentinel && (!c->sess || c->epoch != n->epoch || !n->up))) return;
    uint64_t u = cut_until(c);
    if (u) {
        defer(e, u, &c->c2n);
        return;
    }
    if (!sentinel_at_master(c)) {
        replica_reply(c, e->p);
        return;
    }
    if (!c->sess && S->cfg.sentinel && n->up) { /* dialled as a replica, promoted since */
        c->epoch = n->epoch;
        c->sess = model_session_new(n->m, c);
    }
    if (!c->sess || c->epoch != n->epoch || !n->up) return;
    if (n->paused_until > S->now) {
        defer(e, n->paused_until, &c->c2n);
        return;
    }
    if (c->blocked) {
        hold(c, e->p);
        e->p = NULL;
        return;
    }
    run_cmd(c, e->p);
}

/* The client's close reaches the node: its session ends. */
static void fin(sev_t *e, sconn_t *c) {
    snode_t *n = &S->nodes[c->node];
    uint64_t u = cut_until(c);
    if (u) {
        defer(e, u, &c->c2n);
        return;
    }
    if (n->paused_until > S->now && c->sess) {
        defer(e, n->paused_until, &c->c2n);
        return;
    }
    if (c->sess) model_session_free(c->sess);
    c->sess = NULL;
}

/* ------------------------------------------------- at the client's end */

/* Something for c's client arrived: the connect's answer, bytes, a reset. */
static void at_client(sev_t *e, sconn_t *c) {
    if (c->closed) {
        if (e->kind == E_SYNACK && c->sess) model_session_free(c->sess), c->sess = NULL;
        return;
    }
    if (c->broken && e->kind != E_RESET) return;
    uint64_t u = cut_until(c);
    if (u && e->kind != E_RESET) {
        defer(e, u, &c->n2c);
        return;
    }
    if (e->kind == E_SYNACK)
        c->state = SC_OPEN;
    else if (e->kind == E_REFUSED)
        c->state = SC_REFUSED;
    else if (e->kind == E_RESET)
        c->state = SC_RESET, sb_reset(&c->rx);
    else
        sb_add(&c->rx, e->p, e->n);
    client_pump(&S->clients[c->client]);
}

/* A network event: at the node (connect, command, close) or at the client. */
void net_event(sev_t *e) {
    sconn_t *c = S->conns[e->a];
    switch (e->kind) {
    case E_SYN: syn(e, c); break;
    case E_CMD: command(e, c); break;
    case E_FIN: fin(e, c); break;
    default: at_client(e, c); break;
    }
}

/* ----------------------------------------------------- the socket calls */

sconn_t *net_conn(int fd) {
    if (!S || fd < SIM_FD_BASE || (size_t)(fd - SIM_FD_BASE) >= S->nconns) return NULL;
    return S->conns[fd - SIM_FD_BASE];
}

/* 1 when a recv on c would not say EAGAIN: bytes, or a reset. */
int net_readable(const sconn_t *c) {
    return !c->closed && (sb_pending(&c->rx) || c->state == SC_RESET);
}

/* 1 once c's connect has an outcome (connected, refused, reset). */
int net_writable(const sconn_t *c) {
    return !c->closed && c->state != SC_CONNECTING;
}

/* A new simulated socket of the running client; returns its fd. */
int net_socket(void) {
    if (S->nconns == S->capconns) {
        S->capconns = S->capconns ? S->capconns * 2 : 64;
        if (!(S->conns = realloc(S->conns, S->capconns * sizeof *S->conns))) abort();
    }
    sconn_t *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->id = (int)S->nconns;
    c->client = S->cur ? S->cur->id : 0;
    c->node = -1;
    S->conns[S->nconns++] = c;
    return SIM_FD_BASE + c->id;
}

/* Starts connecting fd to member `member` of node `node` (0 but in a
 * Sentinel group): -1 with EINPROGRESS (ENETUNREACH for an address that is
 * no node). */
int net_connect(int fd, int node, int member) {
    sconn_t *c = net_conn(fd);
    int members = S->cfg.sentinel ? 1 + (node >= 0 && node < S->cfg.n_nodes ? S->nodes[node].n_reps : 0) : 1;
    if (!c || node < 0 || node >= S->cfg.n_nodes || member < 0 || member >= members) {
        errno = ENETUNREACH;
        return -1;
    }
    c->node = node;
    c->member = member;
    c->state = SC_CONNECTING;
    to_node(c, E_SYN, NULL);
    errno = EINPROGRESS;
    return -1;
}

/* Takes every byte (no partial writes); each whole command goes to the
 * node. -1 with EAGAIN while connecting, EPIPE or ECONNRESET when broken. */
long net_send(int fd, const char *p, size_t n) {
    sconn_t *c = net_conn(fd);
    if (c->state == SC_CONNECTING) return errno = EAGAIN, -1;
    if (c->state != SC_OPEN || c->broken) return errno = c->state == SC_RESET ? ECONNRESET : EPIPE, -1;
    sb_add(&c->tx, p, n);
    for (;;) {
        resp_cmd_t *cmd = NULL;
        long k = resp_parse_cmd(sb_data(&c->tx), sb_pending(&c->tx), &cmd);
        if (k <= 0) break; /* (the library only writes whole, well-formed commands) */
        sb_consume(&c->tx, (size_t)k);
        to_node(c, E_CMD, cmd);
    }
    return (long)n;
}

/* Reads what arrived; -1 with ECONNRESET after a reset, EAGAIN when
 * nothing is there. */
long net_recv(int fd, char *p, size_t n) {
    sconn_t *c = net_conn(fd);
    size_t have = sb_pending(&c->rx);
    if (have) {
        size_t k = have < n ? have : n;
        memcpy(p, sb_data(&c->rx), k);
        sb_consume(&c->rx, k);
        return (long)k;
    }
    if (c->state == SC_RESET) return errno = ECONNRESET, -1;
    return errno = EAGAIN, -1;
}

/* The client closes fd: the node learns it after what was sent before. */
void net_close(int fd) {
    sconn_t *c = net_conn(fd);
    if (c->closed) return;
    c->closed = 1;
    sb_free(&c->rx);
    sb_free(&c->tx);
    if (!c->broken && c->node >= 0 && c->state != SC_REFUSED) to_node(c, E_FIN, NULL);
}
