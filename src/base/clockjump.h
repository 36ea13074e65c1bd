/* clockjump.h -- telling a node's clock jump from network delay.
 *
 * A sample is one TIME request: when we queued it and when its reply came,
 * on our monotonic clock, and the node's wall clock in between. Between two
 * samples a and b of one node the time that really passed lies in
 * [b.sent - a.recv, b.recv - a.sent] (the node read its clock somewhere
 * inside each request's round trip), so a node whose clock advanced by less
 * or more than that, beyond a tolerance, was stepped: by NTP, an operator, a
 * VM resumed from a snapshot. Redis expires keys by that same wall clock, so
 * a forward step ends every lock on the node early. */
#ifndef RL_CLOCKJUMP_H
#define RL_CLOCKJUMP_H
#include <stdint.h>

typedef struct rl_clock_sample {
    uint64_t sent_us, recv_us; /* our monotonic clock around the request */
    int64_t node_us;           /* the node's TIME, in microseconds since the epoch */
    int valid;
} rl_clock_sample_t;

/* Slew that is never called a jump, in parts per million of the elapsed
 * time (NTP slews at most 500 ppm). */
#define RL_CLOCK_SLEW_PPM 1000

/* Compares sample b with the earlier sample a of the same node, a
 * tolerance of tol_us plus RL_CLOCK_SLEW_PPM of the elapsed time allowed.
 * Returns how far the node's clock moved beyond the possible elapsed time
 * (> 0 forward, < 0 backward), or 0 when it stayed within it or a sample
 * is invalid. */
int64_t rl_clock_jump_us(const rl_clock_sample_t *a, const rl_clock_sample_t *b, uint64_t tol_us);

/* Parses a TIME reply's two fields (seconds, microseconds, as decimal
 * strings) into microseconds. Returns 0, or -1 if they are not numbers. */
int rl_clock_parse_time(const char *sec, const char *usec, int64_t *out_us);

#endif
