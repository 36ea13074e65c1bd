/* lock.c -- the lock handle: creation, accessors, abandon-without-release. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "rl.h"
#include "timing.h"

/* Copies the key set into one block: n pointers, n lengths, n strings. */
static int copy_keys(redlock_lock_t *l, const rl_keys_t *keys) {
    if (keys->n == 1) {
        if (l->res1_cap <= keys->len[0]) {
            size_t cap = keys->len[0] < 64 ? 64 : keys->len[0] + 1;
            char *p = realloc(l->res1_buf, cap);
            if (!p) return -1;
            l->res1_buf = p;
            l->res1_cap = cap;
        }
        l->res1 = l->res1_buf;
        memcpy(l->res1, keys->k[0], keys->len[0] + 1);
        l->res1_len = keys->len[0];
        l->res = &l->res1;
        l->res_len = &l->res1_len;
        return 0;
    }
    size_t bytes = keys->n * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < keys->n; i++) bytes += keys->len[i] + 1;
    char *block = malloc(bytes);
    if (!block) return -1;
    l->res = (char **)block;
    l->res_len = (size_t *)(block + keys->n * sizeof(char *));
    char *p = block + keys->n * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < keys->n; i++) {
        memcpy(p, keys->k[i], keys->len[i] + 1);
        l->res[i] = p;
        l->res_len[i] = keys->len[i];
        p += keys->len[i] + 1;
    }
    l->res1 = l->res[0];
    l->res1_len = l->res_len[0];
    return 0;
}

redlock_lock_t *rl_lock_new(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, uint64_t t0,
                            uint64_t deadline) {
    redlock_lock_t *l = keys->n == 1 ? rl_pool_get(rl, keys->len[0]) : NULL;
    if (l) { /* a pooled object: its mutex and name buffer are kept */
        memset(l, 0, offsetof(redlock_lock_t, mu));
    } else {
        if (!(l = calloc(1, sizeof *l))) return NULL;
        pthread_mutex_init(&l->mu, NULL);
    }
    if (copy_keys(l, keys) < 0) {
        pthread_mutex_destroy(&l->mu);
        free(l->res1_buf);
        free(l);
        return NULL;
    }
    l->owner = rl;
    l->n_res = keys->n;
    memcpy(l->token, token, REDLOCK_TOKEN_LEN + 1);
    atomic_init(&l->ttl_ms, ttl_ms);
    atomic_init(&l->deadline_us, deadline);
    atomic_init(&l->lost, 0);
    atomic_init(&l->extensions, 0);
    l->acquired_us = t0;
    l->clock = rl->clock;
    return l;
}

void rl_lock_destroy(redlock_lock_t *l) {
    if (!l) return;
    sodium_memzero(l->token, sizeof l->token);
    if (rl_pool_put(l)) return;
    pthread_mutex_destroy(&l->mu);
    free(l->res1_buf);
    if (l->n_res > 1) free(l->res);
    free(l);
}

void redlock_lock_free(redlock_lock_t *lock) {
    if (!lock) return;
    if (lock->registered && rl_held_drop(lock)) return; /* an outer hold of this thread remains */
    if (lock->wd_attached) rl_watch_stop(lock);
    rl_lock_destroy(lock);
}

int64_t redlock_lock_validity_ms(const redlock_lock_t *lock) {
    if (!lock || atomic_load(&lock->lost)) return 0;
    return rl_validity_ms(rl_validity_us(atomic_load(&lock->deadline_us), lock->clock()));
}

int redlock_lock_valid(const redlock_lock_t *lock, uint32_t margin_ms) {
    return lock && !atomic_load(&lock->lost) && redlock_lock_validity_ms(lock) > (int64_t)margin_ms;
}

int redlock_lock_lost(const redlock_lock_t *lock) {
    return lock ? atomic_load(&lock->lost) : 0;
}

uint32_t redlock_lock_extensions(const redlock_lock_t *lock) {
    return lock ? atomic_load(&lock->extensions) : 0;
}

uint64_t redlock_lock_fence(const redlock_lock_t *lock) {
    return lock ? lock->fence : 0;
}

const char *redlock_lock_resource(const redlock_lock_t *lock) {
    return lock ? lock->res[0] : NULL;
}

size_t redlock_lock_resource_count(const redlock_lock_t *lock) {
    return lock ? lock->n_res : 0;
}

const char *redlock_lock_resource_at(const redlock_lock_t *lock, size_t i) {
    return lock && i < lock->n_res ? lock->res[i] : NULL;
}

const char *redlock_lock_token(const redlock_lock_t *lock) {
    return lock ? lock->token : NULL;
}
