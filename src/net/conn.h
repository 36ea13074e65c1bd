/* conn.h -- one non-blocking connection to one node, and its request queue.
 *
 * The engine owns every rl_conn_t and touches it only with its mutex held.
 * Requests are answered in order, so the queue is a FIFO ring: a reply
 * always belongs to the request at its head. A request whose caller gave
 * up keeps its slot (round == NULL) so its late reply is read and dropped. */
#ifndef RL_CONN_H
#define RL_CONN_H
#include <stdint.h>

#include "buf.h"
#include "reply.h"
#include "redlock.h"
#include "resolve.h"
#include "tls.h"
#include "uri.h"

struct redisReader;
struct rl_round;
struct rl_script;

/* DOWN: no socket. RESOLVING: waiting for a lookup of the node's name
 * (no socket yet; requests queue). CONNECTING: TCP connect or TLS
 * handshake to one of its addresses. READY: requests flow. */
enum { RL_CONN_DOWN = 0, RL_CONN_RESOLVING, RL_CONN_CONNECTING, RL_CONN_READY };

/* Detail text kept per node (and per node in reports). */
#define RL_DETAIL_LEN 256
_Static_assert(RL_ADDR_STRLEN == sizeof((redlock_node_report_t *)0)->address, "report address size");

/* What a queued request is for. */
enum {
    RL_REQ_USER = 0,
    RL_REQ_AUTH,
    RL_REQ_SELECT,
    RL_REQ_LOAD,
    RL_REQ_INFO,
    RL_REQ_TIME,
    RL_REQ_PROBE,
    RL_REQ_SLOTS,  /* CLUSTER SLOTS: a cluster node's slot map */
    RL_REQ_ASKING, /* ASKING ahead of a request an ASK redirect sent here */
    RL_REQ_WAIT,   /* WAIT behind replicated writes */
    RL_REQ_ROLE,   /* ROLE: is the address still a master? */
    RL_REQ_RECORD  /* HGETALL of the membership record (core/record.c) */
};

typedef struct rl_req {
    struct rl_round *round;         /* waiting call, NULL once abandoned or internal */
    const struct rl_script *script; /* set for EVALSHA (NOSCRIPT fallback) and LOAD */
    uint64_t sent_us, deadline_us;
    uint32_t fb_len; /* its bytes at the front of conn.fb: the EVALSHA's header and
                      * arguments, or (whole) the entire command */
    uint8_t kind;
    uint8_t whole;     /* fb holds the entire command (a cluster connection's: what a
                        * MOVED or ASK redirect sends again elsewhere) */
    uint8_t redirects; /* MOVED / ASK redirects followed so far */
    uint8_t skip;      /* replies to read and drop before its own (see rl_round.skip) */
    uint8_t then_wait; /* a WAIT follows it (the core's mark) */
} rl_req_t;

typedef struct rl_conn {
    rl_uri_t uri;
    int idx;        /* the node it belongs to (the core's index, given to req_moved) */
    int k;          /* its index among every connection of the node set (core/) */
    int whole_cmds; /* keeps each request's entire command (a cluster node's) */
    int fd;         /* -1 when down */
    int state;
    int tcp_up;            /* the TCP connect finished (a TLS handshake may follow) */
    short want;            /* poll events the TLS handshake waits for */
    void *ssl;             /* TLS session for rediss://, else NULL */
    rl_tls_ctx_t *tls_ctx; /* the redlock_t's TLS context (not owned), NULL for plain */
    const char *tls_name;  /* override for host verification and SNI, or NULL */
    int tls_verify;
    rl_tls_ctx_t *lookup_tls_ctx;                          /* sentinel_tls: what a Sentinel group's sentinels are asked
                                                            * with (not owned: each lookup takes its own reference) */
    uint64_t rx_bytes;                                     /* bytes read since the connection opened */
    unsigned gen;                                          /* bumped on every close, so stale poll events are ignored */
    void (*closing)(void *arg, struct rl_conn *c, int fd); /* told just before fd is closed
                                * (a loop driver stops watching it), or NULL */
    void *closing_arg;
    int fd_lent;          /* a blocking leader writes on fd without the engine mutex (blocking/wire.h) */
    int fd_late;          /* closed meanwhile: fd + 1, which the leader closes once done (0: none) */
    int wire_skip;        /* the next turn writes through the node set's flush (socket full or failed) */
    int io_fd;            /* a loop driver's: the fd it last announced (-1: none) */
    uint8_t io_rd, io_wr; /* ... and whether for reading, writing */
    struct redisReader *reader;
    rl_arena_t arena; /* where the reader builds replies; reset after each */
    rl_buf_t out;     /* encoded requests not yet written */
    rl_buf_t fb;      /* queued EVALSHAs' "*argc" headers and arguments after the
                       * sha1, in queue order: what an EVAL fallback is built from */
    rl_req_t *q;      /* ring of qcap requests owed a reply; doubles when full, up
                       * to qmax (RL_QCAP_START at first) */
    uint32_t qcap, qhead, qlen, qmax;
    /* giving a burst's ring back, with hysteresis (see shrink in conn.c) when ring_hold is
     * set (a connection of lock rounds, whose load is steady; not a subscriber's) */
    int ring_hold;
    uint64_t qshrunk_us; /* when it last shrank, until it grows again (0: not since) */
    uint64_t qhold_us;   /* how long a ring that grew back soon after keeps its size */
    uint64_t qkeep_us;   /* no shrinking before this */
    /* told when growing the ring moved a request with a round to another
     * slot (the round keeps its requests' slots), or NULL */
    void (*req_moved)(struct rl_round *round, int idx, uint32_t slot);
    uint64_t due_us; /* at most the earliest deadline of a queued request, or
                      * grace of its round (UINT64_MAX: none); may be early, never late */
    uint64_t connect_deadline_us;
    uint64_t last_rx_us;  /* last time bytes arrived (or the connect began) */
    uint64_t retry_at_us; /* while down: earliest reconnect */
    uint32_t backoff_ms;
    int last_err;                    /* REDLOCK_ERR_* of the last failure */
    char last_detail[RL_DETAIL_LEN]; /* its words (no secrets) */
    /* addresses and lookups (dial.c) */
    rl_addrs_t addrs;         /* where the node is: an IP literal, a socket path, or what its
                               * name resolved to last (n == 0: not known yet) */
    int literal;              /* addrs never change: no lookup, ever */
    int notify_fd;            /* written by a lookup thread when it ends (the driver's wake fd) */
    struct rl_lookup *lookup; /* lookup in flight, or NULL */
    uint64_t lookup_started_us;
    int stale;                 /* the node failed since its addrs were learnt: look the name up again */
    char lookup_err[200];      /* why the last lookup failed, "" when it did not */
    uint32_t lookups;          /* lookups started so far */
    uint32_t ai;               /* index of the address this connect is trying */
    uint64_t addr_deadline_us; /* that address's share of the connect deadline ends */
    char tried[RL_DETAIL_LEN]; /* this connect's failed addresses and why */
    int tried_timeout;         /* the last of them timed out */
    char addr[RL_ADDR_STRLEN]; /* the address tried or connected to, "" when none */
    size_t out_mark;           /* output bytes not written yet up to a mark the core sets (what
                                * may go while it holds the rest); writes count it down */
} rl_conn_t;

/* A connection's request ring starts with this many slots. */
#define RL_QCAP_START 64u

/* Sets up c for uri (taking ownership of its strings) with a queue of
 * up to qcap slots; lookups of its name (dial.c) write a byte to notify_fd when
 * they end. Returns 0, or -1 when out of memory. */
int rl_conn_init(rl_conn_t *c, rl_uri_t *uri, int idx, uint32_t qcap, int notify_fd);

/* Closes and frees everything c owns. Safe on a zeroed c. */
void rl_conn_destroy(rl_conn_t *c);

/* Gets c ready for a new connect within connect_timeout_ms (reader,
 * deadlines). Returns 0 or REDLOCK_ERR_NOMEM. */
int rl_conn_prepare(rl_conn_t *c, uint64_t now_us, uint32_t connect_timeout_ms);

/* Queues AUTH [user] pass and SELECT db when the URI has them, ahead of
 * any request. Returns 0 or an error code with last_detail set. */
int rl_conn_queue_handshake(rl_conn_t *c, uint64_t now_us);

/* strerror(errnum) starting in lower case ("connection refused"). */
void rl_errno_text(int errnum, char *buf, size_t n);

/* Closes the socket (and TLS session) only: the queue and the pending
 * output stay, for the next address of the same connect. */
void rl_conn_drop_socket(rl_conn_t *c);

/* Advances a CONNECTING connection after poll said its socket is ready:
 * returns 0 when it is READY, 1 while the TLS handshake goes on (c->want
 * says for what), or a REDLOCK_ERR_* with last_detail set. */
int rl_conn_finish_connect(rl_conn_t *c);

/* Writes as much of the first max bytes of c->out as the socket takes.
 * Returns 0 or REDLOCK_ERR_IO. */
int rl_conn_flush_n(rl_conn_t *c, size_t max);

/* Reads what is available into the reply reader. Returns 0, or
 * REDLOCK_ERR_IO on EOF or error (last_detail says which). */
int rl_conn_read(rl_conn_t *c, uint64_t now_us);

/* Closes the socket and drops pending output, queue and reader state. */
void rl_conn_close(rl_conn_t *c);

/* Queues a request; returns its slot, or NULL when the queue is full.
 * A request lowers c->due_us to its deadline if earlier. */
rl_req_t *rl_conn_push(rl_conn_t *c, uint8_t kind, struct rl_round *round, uint64_t now_us, uint64_t deadline_us);

/* The oldest request owed a reply, or NULL. */
static inline rl_req_t *rl_conn_head(const rl_conn_t *c) {
    return c->qlen ? &c->q[c->qhead] : NULL;
}

/* The ring slot request q of c sits in (what a round keeps to find it). */
static inline uint32_t rl_conn_slot(const rl_conn_t *c, const rl_req_t *q) {
    return (uint32_t)(q - c->q);
}

/* The request in ring slot slot of c. */
static inline rl_req_t *rl_conn_in_slot(const rl_conn_t *c, uint32_t slot) {
    return &c->q[slot];
}

/* The i-th oldest request (0 = head). */
static inline rl_req_t *rl_conn_at(rl_conn_t *c, uint32_t i) {
    return &c->q[(c->qhead + i) % c->qcap];
}

/* Drops the head request (and its fallback bytes). */
void rl_conn_pop(rl_conn_t *c);

/* Queues command bytes to be written. Returns 0, or -1 when out of memory. */
int rl_conn_send(rl_conn_t *c, const char *p, size_t n);

#endif
