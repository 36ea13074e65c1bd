/* blockio.h -- short blocking exchanges with a server, for the threads
 * that may wait (sentinel look-ups and watches, never the thread driving
 * the nodes): a stream (a socket, over TLS or not), a deadline on the
 * monotonic clock, and hiredis's reader for the replies. */
#ifndef RL_BLOCKIO_H
#define RL_BLOCKIO_H
#include <stddef.h>
#include <stdint.h>

#include "tls.h"

struct redisReader;
struct redisReply;

/* Waits until fd is ready for ev or the deadline passes. Returns 1 when
 * ready, 0 at the deadline (or on a poll error). */
int rl_bio_wait(int fd, short ev, uint64_t deadline);

/* Connects to host:port (a name or a literal) before the deadline.
 * Returns a non-blocking socket the caller closes, or -1 with why. */
int rl_bio_dial(const char *host, int port, uint64_t deadline, char *why, size_t n);

/* How to speak TLS to a server: the context (NULL: plain TCP), the name
 * to verify and send as SNI instead of the host (or NULL), and whether
 * the certificate is verified at all. Not owned by the stream. */
typedef struct rl_bio_tls {
    rl_tls_ctx_t *ctx;
    const char *server_name;
    int verify;
} rl_bio_tls_t;

/* Makes dst a copy of src that a thread may keep past the handle: its
 * own reference to the context and its own copy of the name (src NULL or
 * want 0: plain TCP). Returns 0, or -1 when out of memory (dst then holds
 * nothing). Free it with rl_bio_tls_clear. */
int rl_bio_tls_copy(rl_bio_tls_t *dst, const rl_bio_tls_t *src, int want);
void rl_bio_tls_clear(rl_bio_tls_t *t); /* drops what a copy holds; safe twice */

/* A connection: its socket and, over TLS, its session. */
typedef struct rl_bio_stream {
    int fd;
    void *ssl;
} rl_bio_stream_t;

/* Connects s to host:port and, when tls has a context, completes the TLS
 * handshake (the certificate checked against host or tls->server_name),
 * all before the deadline. Returns 0 (close s with rl_bio_close), or -1
 * with why (s then holds nothing). */
int rl_bio_open(rl_bio_stream_t *s, const char *host, int port, const rl_bio_tls_t *tls, uint64_t deadline, char *why,
                size_t n);
void rl_bio_close(rl_bio_stream_t *s); /* closes the socket, frees the session; safe twice */

/* Reads what s has now into buf without waiting: > 0 bytes, 0 when the
 * server closed, -1 with errno EAGAIN (wait for the socket) or another
 * error. */
long rl_bio_recv(rl_bio_stream_t *s, char *buf, size_t len);

/* 1 when s holds bytes already read from the socket (TLS records) that
 * rl_bio_recv returns without the socket becoming readable, else 0. */
int rl_bio_pending(const rl_bio_stream_t *s);

/* Writes len bytes of p to s before the deadline. Returns 0 or -1. */
int rl_bio_send(rl_bio_stream_t *s, const char *p, size_t len, uint64_t deadline);

/* Reads one reply from s into *out (the caller frees it with
 * freeReplyObject) before the deadline. Returns 0, or -1 with errno
 * ETIMEDOUT (the deadline passed), EPROTO (the bytes were not RESP) or
 * ECONNRESET (the connection failed or was closed). */
int rl_bio_read(rl_bio_stream_t *s, struct redisReader *rd, struct redisReply **out, uint64_t deadline);

/* Sends cmd (len bytes: nreq encoded commands) and reads their replies
 * into rep[] before the deadline. Returns 0 or -1 with why. */
int rl_bio_exchange(rl_bio_stream_t *s, const char *cmd, size_t len, struct redisReply **rep, int nreq,
                    uint64_t deadline, char *why, size_t n);

#endif
