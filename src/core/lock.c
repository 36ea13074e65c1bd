/* lock.c -- the lock object: creation from a pool of released ones,
 * accessors, and freeing without a release (the driver's clean-up first:
 * rl->unhold). */
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


/* A pooled lock object whose name buffer holds len bytes, or NULL. */
static redlock_lock_t *pool_get(redlock_t *rl, size_t len) {
    pthread_mutex_lock(&rl->held_mu);
    redlock_lock_t *l = rl->pool;
    if (l && l->res1_cap > len) { /* a longer name than the buffer holds: allocate afresh */
        rl->pool = l->held_next;
        rl->pool_n--;
    } else {
        l = NULL;
    }
    pthread_mutex_unlock(&rl->held_mu);
    return l;
}

/* Keeps a destroyed single-resource lock for reuse: 1 when kept, 0 when
 * the caller must free it. */
static int pool_put(redlock_lock_t *lock) {
    redlock_t *rl = lock->owner;
    int kept = 0;
    if (!rl || lock->n_res != 1) return 0;
    pthread_mutex_lock(&rl->held_mu);
    if (rl->pool_n < rl->pool_max) {
        lock->pooled = 1;
        lock->held_next = rl->pool;
        rl->pool = lock;
        rl->pool_n++;
        kept = 1;
    }
    pthread_mutex_unlock(&rl->held_mu);
    return kept;
}

redlock_lock_t *rl_lock_new(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, uint64_t t0,
                            uint64_t deadline) {
    redlock_lock_t *l = keys->n == 1 ? pool_get(rl, keys->len[0]) : NULL;
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
    l->slot = -1;
    l->limit = 0;
    l->shared = 0;
    return l;
}

void rl_pool_free(redlock_t *rl) {
    if (!rl->mu_ready) return;
    pthread_mutex_lock(&rl->held_mu);
    for (redlock_lock_t *l = rl->pool, *next; l; l = next) {
        next = l->held_next;
        l->owner = NULL;
        rl_lock_destroy(l);
    }
    rl->pool = NULL;
    rl->pool_n = 0;
    pthread_mutex_unlock(&rl->held_mu);
}

void rl_lock_destroy(redlock_lock_t *l) {
    if (!l) return;
    sodium_memzero(l->token, sizeof l->token);
    if (pool_put(l)) return;
    pthread_mutex_destroy(&l->mu);
    free(l->res1_buf);
    if (l->n_res > 1) free(l->res);
    free(l);
}

void redlock_lock_free(redlock_lock_t *lock) {
    if (!lock) return;
    if (lock->owner && lock->owner->unhold(lock)) return; /* an outer hold remains */
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

int redlock_lock_slot(const redlock_lock_t *lock) {
    return lock ? lock->slot : -1;
}

int redlock_lock_is_shared(const redlock_lock_t *lock) {
    return lock ? lock->shared : 0;
}
