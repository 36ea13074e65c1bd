/* held.c -- reentrancy: the single-resource locks each thread holds through
 * a redlock_t, so that a thread re-acquiring one gets it with no round trip
 * and must release it as many times. Another thread is another owner. The
 * locks are kept in a hash table by resource and thread (doc/design.md,
 * "Cost flat in locks and waiters"), so a lookup costs the same with
 * 100 000 locks held as with none. */
#include <string.h>

#include "blocking.h"
#include "timing.h"

/* The hash of a lock's key: its resource and its thread. */
static uint64_t held_hash(const redlock_t *rl, const char *res, size_t len, pthread_t t) {
    uint64_t w = 0;
    memcpy(&w, &t, sizeof t < sizeof w ? sizeof t : sizeof w);
    return rl_map_hash2(&rl->held, res, len, w);
}

/* The calling thread's valid lock on resource, its mutex (shared 0) or a
 * reader's lock of it (1); or NULL (held_mu held). Permits are not. */
static redlock_lock_t *find_mine(redlock_t *rl, const char *resource, size_t len, int shared) {
    pthread_t self = pthread_self();
    uint64_t h = held_hash(rl, resource, len, self);
    for (rl_map_node_t *x = rl_map_first(&rl->held, h); x; x = rl_map_next(x)) {
        redlock_lock_t *l = RL_MAP_ENTRY(x, redlock_lock_t, held_node);
        if (pthread_equal(l->thread, self) && l->slot < 0 && l->shared == shared && l->res1_len == len &&
            !memcmp(l->res1, resource, len) && !atomic_load(&l->lost) &&
            rl_validity_us(atomic_load(&l->deadline_us), rl->clock()) > 0)
            return l;
    }
    return NULL;
}

int rl_held_by_me(redlock_t *rl, const char *resource, size_t len, int shared) {
    pthread_mutex_lock(&rl->held_mu);
    int found = find_mine(rl, resource, len, shared) != NULL;
    pthread_mutex_unlock(&rl->held_mu);
    return found;
}

redlock_lock_t *rl_held_reenter(redlock_t *rl, const char *resource, size_t len) {
    pthread_mutex_lock(&rl->held_mu);
    redlock_lock_t *found = find_mine(rl, resource, len, 0);
    if (found) found->holds++;
    pthread_mutex_unlock(&rl->held_mu);
    return found;
}

void rl_held_add(redlock_t *rl, redlock_lock_t *lock) {
    pthread_mutex_lock(&rl->held_mu);
    lock->registered = 1;
    lock->holds = 1;
    lock->thread = pthread_self();
    rl_map_insert(&rl->held, &lock->held_node, held_hash(rl, lock->res1, lock->res1_len, lock->thread));
    pthread_mutex_unlock(&rl->held_mu);
}

int rl_held_drop(redlock_lock_t *lock) {
    redlock_t *rl = lock->owner;
    int remains = 0;
    if (!rl) return 0; /* detached by redlock_free */
    pthread_mutex_lock(&rl->held_mu);
    if (lock->registered && lock->holds > 1) {
        lock->holds--;
        remains = 1;
    } else if (lock->registered) {
        rl_map_remove(&rl->held, &lock->held_node);
        lock->registered = 0;
    }
    pthread_mutex_unlock(&rl->held_mu);
    return remains;
}

/* rl_map_each: detaches one lock from its handle. */
static void forget(rl_map_node_t *x, void *arg) {
    redlock_lock_t *l = RL_MAP_ENTRY(x, redlock_lock_t, held_node);
    (void)arg;
    l->registered = 0;
    l->owner = NULL;
}

void rl_held_forget_all(redlock_t *rl) {
    pthread_mutex_lock(&rl->held_mu);
    rl_map_each(&rl->held, forget, NULL);
    rl_map_destroy(&rl->held); /* the entries are detached: an empty table */
    pthread_mutex_unlock(&rl->held_mu);
}
