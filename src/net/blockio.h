/* blockio.h -- short blocking exchanges with a server, for the threads
 * that may wait (sentinel look-ups and watches, never the thread driving
 * the nodes): a socket, a deadline on the monotonic clock, and hiredis's
 * reader for the replies. */
#ifndef RL_BLOCKIO_H
#define RL_BLOCKIO_H
#include <stddef.h>
#include <stdint.h>

struct redisReader;
struct redisReply;

/* Microseconds on the monotonic clock. */
uint64_t rl_bio_now_us(void);

/* Waits until fd is ready for ev or the deadline passes. Returns 1 when
 * ready, 0 at the deadline (or on a poll error). */
int rl_bio_wait(int fd, short ev, uint64_t deadline);

/* Connects to host:port (a name or a literal) before the deadline.
 * Returns a non-blocking socket the caller closes, or -1 with why. */
int rl_bio_dial(const char *host, int port, uint64_t deadline, char *why, size_t n);

/* Writes len bytes of p to fd before the deadline. Returns 0 or -1. */
int rl_bio_send(int fd, const char *p, size_t len, uint64_t deadline);

/* Reads one reply from fd into *out (the caller frees it with
 * freeReplyObject) before the deadline. Returns 0, or -1 when the
 * connection failed, the bytes were not RESP or the deadline passed. */
int rl_bio_read(int fd, struct redisReader *rd, struct redisReply **out, uint64_t deadline);

/* Sends cmd (len bytes: nreq encoded commands) and reads their replies
 * into rep[] before the deadline. Returns 0 or -1 with why. */
int rl_bio_exchange(int fd, const char *cmd, size_t len, struct redisReply **rep, int nreq, uint64_t deadline,
                    char *why, size_t n);

#endif
