/* token.h -- random lock tokens from libsodium. */
#ifndef RL_TOKEN_H
#define RL_TOKEN_H
#include <stddef.h>

#define RL_TOKEN_BYTES 20

/* Writes 40 lowercase hex characters and a NUL into out (41 bytes) from
 * 20 bytes of libsodium randomness, taken from a per-thread buffer that is
 * refilled with randombytes_buf (see token.c). rl_token_init must have run. */
void rl_token_new(char out[41]);

/* Runs sodium_init() and registers the fork handler that empties the
 * token buffer in a child, once; returns 0, or -1 if that failed. */
int rl_token_init(void);

/* Checks that token is a token as rl_token_new makes them: exactly 40
 * lowercase hex characters. Returns 0, or -1 with msg saying what is wrong
 * (its length, or the position of the first bad character) without ever
 * quoting the token: a nearly valid one may be a real token mistyped. */
int rl_token_check(const char *token, char *msg, size_t n);

/* Returns a uniformly random integer in [lo, hi] (lo <= hi). */
unsigned rl_random_between(unsigned lo, unsigned hi);

#endif
