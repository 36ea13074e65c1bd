/* token.h -- random lock tokens from libsodium. */
#ifndef RL_TOKEN_H
#define RL_TOKEN_H
#include <stddef.h>

#define RL_TOKEN_BYTES 20

/* Writes 40 lowercase hex characters and a NUL into out (41 bytes) from
 * 20 bytes of randombytes_buf. sodium_init() must have run (rl_token_init). */
void rl_token_new(char out[41]);

/* Runs sodium_init() once; returns 0, or -1 if libsodium cannot start. */
int rl_token_init(void);

/* Returns a uniformly random integer in [lo, hi] (lo <= hi). */
unsigned rl_random_between(unsigned lo, unsigned hi);

#endif
