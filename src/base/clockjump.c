/* clockjump.c -- see clockjump.h. */
#include "clockjump.h"

#include <errno.h>
#include <stdlib.h>

int64_t rl_clock_jump_us(const rl_clock_sample_t *a, const rl_clock_sample_t *b, uint64_t tol_us) {
    if (!a->valid || !b->valid || b->recv_us < a->sent_us) return 0;
    int64_t hi = (int64_t)(b->recv_us - a->sent_us);
    int64_t lo = b->sent_us > a->recv_us ? (int64_t)(b->sent_us - a->recv_us) : 0;
    int64_t tol = (int64_t)tol_us + hi / (1000000 / RL_CLOCK_SLEW_PPM);
    int64_t moved = b->node_us - a->node_us;
    if (moved > hi + tol) return moved - hi;
    if (moved < lo - tol) return moved - lo;
    return 0;
}

/* Parses one non-negative decimal field of at most 18 digits; -1 if bad. */
static int64_t field(const char *s) {
    if (!s || *s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return errno || *end || v < 0 || v > 999999999999999999LL ? -1 : (int64_t)v;
}

int rl_clock_parse_time(const char *sec, const char *usec, int64_t *out_us) {
    int64_t s = field(sec), u = field(usec);
    if (s < 0 || u < 0 || u > 999999 || s > INT64_MAX / 1000000 - 1) return -1;
    *out_us = s * 1000000 + u;
    return 0;
}
