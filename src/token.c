/* token.c -- lock tokens: 20 random bytes sent as 40 lowercase hex chars. */
#include "token.h"

#include <stdint.h>

#include <sodium.h>

/* Returns 0 once libsodium is ready (sodium_init is idempotent and
 * thread-safe), -1 if it failed. */
int rl_token_init(void) {
    return sodium_init() < 0 ? -1 : 0;
}

/* Fills out with a new token; out must hold 41 bytes. */
void rl_token_new(char out[41]) {
    unsigned char raw[RL_TOKEN_BYTES];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(out, 2 * RL_TOKEN_BYTES + 1, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
}

/* Returns a uniform random value in [lo, hi]. */
unsigned rl_random_between(unsigned lo, unsigned hi) {
    if (hi <= lo) return lo;
    uint32_t span = (uint32_t)(hi - lo);
    /* span + 1 would wrap to 0 (and randombytes_uniform(0) returns 0): the
     * whole 32-bit range is just a random word. */
    if (span == UINT32_MAX) return lo + (unsigned)randombytes_random();
    return lo + (unsigned)randombytes_uniform(span + 1u);
}
