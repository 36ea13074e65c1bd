/* held.c -- reentrancy: the single-resource locks each thread holds through
 * a redlock_t, so that a thread re-acquiring one gets it with no round trip
 * and must release it as many times. Another thread is another owner. */
#include <string.h>

#include "blocking.h"
#include "timing.h"

/* The calling thread's valid lock on resource, its mutex (shared 0) or a
 * reader's lock of it (1); or NULL (held_mu held). Permits are not. */
static redlock_lock_t *find_mine(redlock_t *rl, const char *resource, size_t len, int shared) {
    pthread_t self = pthread_self();
    for (redlock_lock_t *l = rl->held; l; l = l->held_next)
        if (pthread_equal(l->thread, self) && l->slot < 0 && l->shared == shared && l->res1_len == len &&
            !memcmp(l->res1, resource, len) && !atomic_load(&l->lost) &&
            rl_validity_us(atomic_load(&l->deadline_us), rl->clock()) > 0)
            return l;
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
    lock->held_prev = NULL;
    lock->held_next = rl->held;
    if (rl->held) rl->held->held_prev = lock;
    rl->held = lock;
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
        if (lock->held_prev)
            lock->held_prev->held_next = lock->held_next;
        else
            rl->held = lock->held_next;
        if (lock->held_next) lock->held_next->held_prev = lock->held_prev;
        lock->registered = 0;
    }
    pthread_mutex_unlock(&rl->held_mu);
    return remains;
}

void rl_held_forget_all(redlock_t *rl) {
    pthread_mutex_lock(&rl->held_mu);
    for (redlock_lock_t *l = rl->held; l; l = l->held_next) {
        l->registered = 0;
        l->owner = NULL;
    }
    rl->held = NULL;
    pthread_mutex_unlock(&rl->held_mu);
}
