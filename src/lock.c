/* lock.c -- the lock handle: accessors and abandon-without-release. */
#include <stdlib.h>

#include <sodium.h>

#include "rl.h"
#include "timing.h"

void redlock_lock_free(redlock_lock_t *lock) {
    if (!lock) return;
    free(lock->resource);
    sodium_memzero(lock->token, sizeof lock->token);
    free(lock);
}

int64_t redlock_lock_validity_ms(const redlock_lock_t *lock) {
    if (!lock) return 0;
    return rl_validity_ms(rl_validity_us(lock->deadline_us, lock->clock()));
}

const char *redlock_lock_resource(const redlock_lock_t *lock) {
    return lock ? lock->resource : NULL;
}

const char *redlock_lock_token(const redlock_lock_t *lock) {
    return lock ? lock->token : NULL;
}
