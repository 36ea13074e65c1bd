/* rng.h -- the simulator's seeded pseudo-random numbers (xoshiro256**,
 * seeded by splitmix64): every choice a run makes comes from one of these,
 * so a seed replays a run exactly. */
#ifndef SIM_RNG_H
#define SIM_RNG_H
#include <math.h>
#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
} rng_t;

/* splitmix64 step: the next seed word from *x. */
static inline uint64_t rng_splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Seeds r from seed (and a stream number, so parts of a run draw from
 * streams of their own). */
static inline void rng_seed(rng_t *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ull);
    for (int i = 0; i < 4; i++) r->s[i] = rng_splitmix(&x);
}

static inline uint64_t rng_rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

/* The next 64 random bits. */
static inline uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s, out = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return out;
}

/* Uniform in [0, n) (n > 0; the modulo bias is negligible for the small
 * n the simulator uses). */
static inline uint64_t rng_below(rng_t *r, uint64_t n) {
    return n ? rng_next(r) % n : 0;
}

/* Uniform in [lo, hi]. */
static inline int64_t rng_range(rng_t *r, int64_t lo, int64_t hi) {
    return hi <= lo ? lo : lo + (int64_t)rng_below(r, (uint64_t)(hi - lo) + 1);
}

/* Uniform in [0, 1). */
static inline double rng_unit(rng_t *r) {
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* 1 with probability p. */
static inline int rng_chance(rng_t *r, double p) {
    return rng_unit(r) < p;
}

/* Exponential with the given mean. */
static inline double rng_exp(rng_t *r, double mean) {
    return -mean * log(1.0 - rng_unit(r));
}

#endif
