/* token.c -- lock tokens: 20 random bytes sent as 40 lowercase hex chars.
 *
 * randombytes_buf() is a getrandom() system call per token on Linux. Each
 * thread instead keeps a 4 KiB buffer of libsodium random bytes and takes
 * tokens from it, refilling it when empty; each token's bytes are wiped
 * from the buffer as they are taken, so a later memory disclosure cannot
 * reveal tokens already handed out. A fork() would give the child a copy
 * of the forking thread's buffer, and so the same future tokens as the
 * parent: a pthread_atfork child handler empties that (the child's only)
 * thread's buffer. */
#include "token.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#define RL_TOKEN_POOL 4096

static _Thread_local unsigned char rl_pool[RL_TOKEN_POOL];
static _Thread_local size_t rl_pool_pos = RL_TOKEN_POOL; /* next unused byte; POOL: empty */

static pthread_once_t rl_token_once = PTHREAD_ONCE_INIT;
static int rl_token_ok;

/* Runs in the child after fork(): its only thread drops the buffer it
 * shares with the parent (wiping it), so the child draws fresh bytes. */
static void rl_token_atfork_child(void) {
    sodium_memzero(rl_pool, sizeof rl_pool);
    rl_pool_pos = RL_TOKEN_POOL;
}

/* pthread_once body: sodium_init and the fork handler; sets rl_token_ok. */
static void rl_token_setup(void) {
    rl_token_ok = sodium_init() >= 0 && pthread_atfork(NULL, NULL, rl_token_atfork_child) == 0;
}

/* Returns 0 once libsodium is ready and the fork handler registered
 * (idempotent and thread-safe), -1 if either failed. */
int rl_token_init(void) {
    pthread_once(&rl_token_once, rl_token_setup);
    return rl_token_ok ? 0 : -1;
}

/* Fills out with a new token; out must hold 41 bytes. */
void rl_token_new(char out[41]) {
    if (RL_TOKEN_POOL - rl_pool_pos < RL_TOKEN_BYTES) {
        randombytes_buf(rl_pool, sizeof rl_pool);
        rl_pool_pos = 0;
    }
    unsigned char *raw = rl_pool + rl_pool_pos;
    rl_pool_pos += RL_TOKEN_BYTES;
    sodium_bin2hex(out, 2 * RL_TOKEN_BYTES + 1, raw, RL_TOKEN_BYTES);
    sodium_memzero(raw, RL_TOKEN_BYTES);
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

int rl_token_check(const char *token, char *msg, size_t n) {
    if (!token) return snprintf(msg, n, "token is NULL"), -1;
    size_t len = strnlen(token, 2 * RL_TOKEN_BYTES + 1);
    for (size_t i = 0; i < len && i < 2 * RL_TOKEN_BYTES; i++) {
        char c = token[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return snprintf(msg, n, "token: character %zu is not a lowercase hex digit (a token is %d of them)", i + 1,
                            2 * RL_TOKEN_BYTES),
                   -1;
    }
    if (len != 2 * RL_TOKEN_BYTES)
        return snprintf(msg, n, "token has %s%zu characters: a token is exactly %d lowercase hex digits",
                        len > 2 * RL_TOKEN_BYTES ? "more than " : "", len > 2 * RL_TOKEN_BYTES ? len - 1 : len,
                        2 * RL_TOKEN_BYTES),
               -1;
    return 0;
}
