/* watchdog.c -- auto-extension. One thread per redlock_t (started on the
 * first redlock_autoextend) keeps a list of watched locks and extends each
 * by its TTL every interval. It never extends a lock whose validity is
 * gone; a lock it cannot keep is marked lost and its on_lost runs once. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "blocking.h"

typedef struct rl_watchdog {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* the list changed, or stop */
    pthread_cond_t idle;    /* busy went back to NULL */
    pthread_t thread;
    int stop;
    redlock_t *rl;
    redlock_lock_t *list;   /* watched locks */
    redlock_lock_t *busy;   /* lock being extended or called back */
} rl_watchdog_t;

/* Removes l from the watch list (with the mutex held). */
static void unlink_watch(rl_watchdog_t *wd, redlock_lock_t *l) {
    for (redlock_lock_t **p = &wd->list; *p; p = &(*p)->wnext)
        if (*p == l) {
            *p = l->wnext;
            break;
        }
    l->watched = 0;
}

/* The watched lock due first, or NULL. */
static redlock_lock_t *next_due(const rl_watchdog_t *wd) {
    redlock_lock_t *best = NULL;
    for (redlock_lock_t *l = wd->list; l; l = l->wnext)
        if (!best || l->next_us < best->next_us) best = l;
    return best;
}

/* Marks l lost and runs its callback with the mutex released; l stays
 * `busy` meanwhile so another thread's release waits for the callback. */
static void declare_lost(rl_watchdog_t *wd, redlock_lock_t *l, int reason) {
    unlink_watch(wd, l);
    rl_watch_lost(wd->rl, l, reason);
    redlock_lost_fn fn = l->on_lost;
    void *arg = l->lost_arg;
    pthread_mutex_unlock(&wd->mu);
    if (fn) fn(l, reason, arg); /* may release or free l: not touched after */
    pthread_mutex_lock(&wd->mu);
}

/* Handles the due lock l (mutex held; released during the extension). */
static void tend(rl_watchdog_t *wd, redlock_lock_t *l, uint64_t now) {
    int due = rl_watch_due(l, now);
    if (due < 0) declare_lost(wd, l, due);
    if (due) return;
    uint32_t ttl = atomic_load(&l->ttl_ms);
    pthread_mutex_unlock(&wd->mu);
    int rc = rl_extend(wd->rl, l, ttl, NULL);
    pthread_mutex_lock(&wd->mu);
    if (!l->watched) return; /* stopped meanwhile (the stopper waits for busy) */
    int lost = rl_watch_after(l, rc, wd->rl->clock());
    if (lost) declare_lost(wd, l, lost);
}

/* Waits on wd->cv until the monotonic instant at_us (or a signal). */
static void wait_until(rl_watchdog_t *wd, uint64_t at_us) {
    uint64_t now = wd->rl->clock();
    if (at_us <= now) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (at_us - now) % 1000000u * 1000u;
    ts.tv_sec += (time_t)((at_us - now) / 1000000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(&wd->cv, &wd->mu, &ts);
}

/* The watchdog thread. */
static void *watchdog_main(void *arg) {
    rl_watchdog_t *wd = arg;
    pthread_mutex_lock(&wd->mu);
    while (!wd->stop) {
        redlock_lock_t *l = next_due(wd);
        uint64_t now = wd->rl->clock();
        if (!l) {
            pthread_cond_wait(&wd->cv, &wd->mu);
        } else if (l->next_us > now) {
            wait_until(wd, l->next_us);
        } else {
            wd->busy = l;
            tend(wd, l, now);
            wd->busy = NULL;
            pthread_cond_broadcast(&wd->idle);
        }
    }
    pthread_mutex_unlock(&wd->mu);
    return NULL;
}

/* Starts rl's watchdog if it is not running. Returns 0 or an error. */
static int watchdog_start(redlock_t *rl) {
    int rc = REDLOCK_OK;
    pthread_mutex_lock(&rl->wd_start_mu);
    if (!rl->wd) {
        rl_watchdog_t *wd = calloc(1, sizeof *wd);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (wd) {
            wd->rl = rl;
            pthread_mutex_init(&wd->mu, NULL);
            pthread_cond_init(&wd->cv, &ca);
            pthread_cond_init(&wd->idle, NULL);
        }
        pthread_condattr_destroy(&ca);
        if (!wd || pthread_create(&wd->thread, NULL, watchdog_main, wd) != 0) {
            if (wd) {
                pthread_mutex_destroy(&wd->mu);
                pthread_cond_destroy(&wd->cv);
                pthread_cond_destroy(&wd->idle);
            }
            free(wd);
            rc = REDLOCK_ERR_NOMEM;
        } else {
            rl->wd = wd;
        }
    }
    pthread_mutex_unlock(&rl->wd_start_mu);
    return rc;
}

void redlock_autoextend_options_init(redlock_autoextend_options_t *o) {
    if (o) *o = (redlock_autoextend_options_t){0, 0, 0};
}

int redlock_autoextend(redlock_t *rl, redlock_lock_t *lock, const redlock_autoextend_options_t *opt,
                       redlock_lost_fn on_lost, void *arg) {
    if (!rl || !lock || lock->owner != rl) return REDLOCK_ERR_INVALID;
    if (lock->wd_attached) return REDLOCK_ERR_INVALID;
    if (!redlock_lock_valid(lock, 0)) return REDLOCK_ERR_NOT_HELD;
    redlock_lock_t probe = {0}; /* the options are checked before the thread starts */
    atomic_init(&probe.ttl_ms, atomic_load(&lock->ttl_ms));
    if (rl_watch_setup(&probe, opt, on_lost, arg, 0) != REDLOCK_OK) return REDLOCK_ERR_INVALID;
    int rc = watchdog_start(rl);
    if (rc) return rc;
    rl_watchdog_t *wd = rl->wd;
    pthread_mutex_lock(&wd->mu);
    rl_watch_setup(lock, opt, on_lost, arg, rl->clock());
    lock->watched = 1;
    lock->wd_attached = 1;
    lock->wnext = wd->list;
    wd->list = lock;
    pthread_cond_signal(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    return REDLOCK_OK;
}

void rl_watch_stop(redlock_lock_t *lock) {
    rl_watchdog_t *wd = lock->owner->wd;
    lock->wd_attached = 0;
    if (!wd) return;
    pthread_mutex_lock(&wd->mu);
    if (lock->watched) unlink_watch(wd, lock);
    /* wait out an extension or callback in progress, unless we are it */
    while (wd->busy == lock && !pthread_equal(pthread_self(), wd->thread)) pthread_cond_wait(&wd->idle, &wd->mu);
    pthread_mutex_unlock(&wd->mu);
}

int redlock_autoextend_stop(redlock_t *rl, redlock_lock_t *lock) {
    if (!rl || !lock || lock->owner != rl) return REDLOCK_ERR_INVALID;
    if (lock->wd_attached) rl_watch_stop(lock);
    return REDLOCK_OK;
}

void rl_watchdog_free(redlock_t *rl) {
    rl_watchdog_t *wd = rl->wd;
    if (!wd) return;
    pthread_mutex_lock(&wd->mu);
    wd->stop = 1;
    pthread_cond_signal(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    pthread_join(wd->thread, NULL);
    for (redlock_lock_t *l = wd->list; l; l = l->wnext) l->watched = l->wd_attached = 0;
    pthread_mutex_destroy(&wd->mu);
    pthread_cond_destroy(&wd->cv);
    pthread_cond_destroy(&wd->idle);
    free(wd);
    rl->wd = NULL;
}
