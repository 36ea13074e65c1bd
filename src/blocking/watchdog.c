/* watchdog.c -- auto-extension. One thread per redlock_t (started on the
 * first redlock_autoextend) keeps the watched locks in a heap by the time
 * each is next due (doc/design.md, "Cost flat in locks and waiters": it
 * never walks every lock) and extends the locks that are due together in
 * one batch, whose rounds leave in one write per node (rl_extend_many). It
 * never extends a lock whose validity is gone; a lock it cannot keep is
 * marked lost and its on_lost runs once. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "blocking.h"

/* Locks extended in one batch at most. */
#define RL_WD_BATCH 64

typedef struct rl_watchdog {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* the heap changed, or stop */
    pthread_cond_t idle; /* a batch ended (its busy slots emptied) */
    pthread_t thread;
    int stop;
    redlock_t *rl;
    redlock_lock_t **heap; /* watched locks, the earliest next_us first */
    size_t n, cap;
    rl_extend_job_t *jobs; /* RL_WD_BATCH, for the thread's batches */
    unsigned char *rounds; /* room for their RL_WD_BATCH rounds */
    /* the batch's locks, off the heap while it is extended or its lost
     * locks called back: another thread's stop waits until the batch ends;
     * the watchdog's own (a callback) empties the slot instead. Only
     * compared, never followed: a callback may free its lock. */
    redlock_lock_t *busy[RL_WD_BATCH];
    int reason[RL_WD_BATCH]; /* why each busy lock is lost, 0 while it is not */
    size_t n_busy;
} rl_watchdog_t;

/* ------------------------------------------------------------- the heap */

/* Puts l at heap position i. */
static void heap_set(rl_watchdog_t *wd, size_t i, redlock_lock_t *l) {
    wd->heap[i] = l;
    l->wd_idx = i;
}

/* Moves the lock at i up while it is due before its parent. */
static void sift_up(rl_watchdog_t *wd, size_t i) {
    redlock_lock_t *l = wd->heap[i];
    while (i > 0 && wd->heap[(i - 1) / 2]->next_us > l->next_us) {
        heap_set(wd, i, wd->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(wd, i, l);
}

/* Moves the lock at i down while a child is due before it. */
static void sift_down(rl_watchdog_t *wd, size_t i) {
    redlock_lock_t *l = wd->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= wd->n) break;
        if (c + 1 < wd->n && wd->heap[c + 1]->next_us < wd->heap[c]->next_us) c++;
        if (wd->heap[c]->next_us >= l->next_us) break;
        heap_set(wd, i, wd->heap[c]);
        i = c;
    }
    heap_set(wd, i, l);
}

/* Adds l (mutex held). Returns 0, or -1 when out of memory. */
static int heap_push(rl_watchdog_t *wd, redlock_lock_t *l) {
    if (wd->n == wd->cap) {
        size_t cap = wd->cap ? wd->cap * 2 : 64;
        redlock_lock_t **h = realloc(wd->heap, cap * sizeof *h);
        if (!h) return -1;
        wd->heap = h;
        wd->cap = cap;
    }
    heap_set(wd, wd->n++, l);
    sift_up(wd, wd->n - 1);
    return 0;
}

/* Takes l out of the heap (mutex held; l is in it). */
static void heap_remove(rl_watchdog_t *wd, redlock_lock_t *l) {
    size_t i = l->wd_idx;
    redlock_lock_t *last = wd->heap[--wd->n];
    if (i < wd->n) {
        heap_set(wd, i, last);
        sift_up(wd, i);
        sift_down(wd, last->wd_idx);
    }
    if (wd->cap > 64 && wd->n < wd->cap / 4) { /* give back what a burst took */
        redlock_lock_t **h = realloc(wd->heap, wd->cap / 2 * sizeof *h);
        if (h) wd->heap = h, wd->cap /= 2;
    }
}

/* ------------------------------------------------------------- batches */

/* The batch slot of l, or -1 (mutex held). */
static int busy_slot(const rl_watchdog_t *wd, const redlock_lock_t *l) {
    for (size_t i = 0; i < wd->n_busy; i++)
        if (wd->busy[i] == l) return (int)i;
    return -1;
}

/* Marks l lost and runs its callback with the mutex released; l stays in
 * the batch meanwhile so another thread's release waits for the callback. */
static void declare_lost(rl_watchdog_t *wd, redlock_lock_t *l, int reason) {
    l->watched = 0;
    rl_autoextend_lost(wd->rl, l, reason);
    redlock_lost_fn fn = l->on_lost;
    void *arg = l->lost_arg;
    pthread_mutex_unlock(&wd->mu);
    if (fn) fn(l, reason, arg); /* may release or free l: not touched after */
    pthread_mutex_lock(&wd->mu);
}

/* Takes the locks due by now off the heap into the batch (at most
 * RL_WD_BATCH): those to extend become jobs, the expired ones get their
 * reason, a capped one goes back with its new next_us. Returns the number
 * of jobs (mutex held). */
static size_t take_due(rl_watchdog_t *wd, uint64_t now) {
    size_t k = 0;
    wd->n_busy = 0;
    while (wd->n && wd->heap[0]->next_us <= now && wd->n_busy < RL_WD_BATCH) {
        redlock_lock_t *l = wd->heap[0];
        int due = rl_autoextend_due(l, now);
        if (due == 1) { /* capped: next_us moved to its deadline */
            sift_down(wd, 0);
            continue;
        }
        heap_remove(wd, l);
        wd->reason[wd->n_busy] = due < 0 ? due : 0;
        wd->busy[wd->n_busy++] = l;
        if (!due) {
            rl_round_t *r = (rl_round_t *)(void *)(wd->rounds + k * rl_round_size(wd->rl->opt.n_nodes));
            wd->jobs[k++] = (rl_extend_job_t){.lock = l, .ttl_ms = rl_autoextend_ttl(l, now), .r = r};
        }
    }
    return k;
}

/* After the extensions: each job's lock is watched on (back in the heap)
 * or gets its reason to be lost (mutex held; no callback runs here). */
static void settle(rl_watchdog_t *wd, size_t k, uint64_t now) {
    for (size_t i = 0; i < k; i++) {
        redlock_lock_t *l = wd->jobs[i].lock;
        int slot = busy_slot(wd, l);
        if (slot < 0 || !l->watched) continue; /* stopped meanwhile */
        int lost = 0;
        if (wd->jobs[i].rc == RL_EXTEND_BUSY)
            l->next_us = now + 1000u; /* a caller was extending it: look again in 1 ms */
        else
            lost = rl_autoextend_after(l, wd->jobs[i].rc, now);
        if (!lost && heap_push(wd, l) < 0) lost = REDLOCK_ERR_NOMEM;
        wd->reason[slot] = lost;
    }
}

/* Declares the batch's lost locks, each only if no callback before it
 * stopped (perhaps freed) it (mutex held). */
static void call_back(rl_watchdog_t *wd) {
    for (size_t i = 0; i < wd->n_busy; i++) {
        redlock_lock_t *l = wd->busy[i];
        if (l && wd->reason[i]) declare_lost(wd, l, wd->reason[i]);
    }
}

/* Runs one batch of the locks due by now (mutex held; released while the
 * extensions are on the wire and during callbacks). */
static void run_batch(rl_watchdog_t *wd, uint64_t now) {
    size_t k = take_due(wd, now);
    if (k) {
        pthread_mutex_unlock(&wd->mu);
        rl_extend_many(wd->rl, wd->jobs, k);
        pthread_mutex_lock(&wd->mu);
        settle(wd, k, wd->rl->clock());
    }
    call_back(wd);
    wd->n_busy = 0;
    pthread_cond_broadcast(&wd->idle);
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
        uint64_t now = wd->rl->clock();
        if (!wd->n)
            pthread_cond_wait(&wd->cv, &wd->mu);
        else if (wd->heap[0]->next_us > now)
            wait_until(wd, wd->heap[0]->next_us);
        else
            run_batch(wd, now);
    }
    pthread_mutex_unlock(&wd->mu);
    return NULL;
}

/* Frees wd's parts (the thread is not running). */
static void wd_destroy(rl_watchdog_t *wd) {
    pthread_mutex_destroy(&wd->mu);
    pthread_cond_destroy(&wd->cv);
    pthread_cond_destroy(&wd->idle);
    free(wd->heap);
    free(wd->jobs);
    free(wd->rounds);
    free(wd);
}

/* Starts rl's watchdog if it is not running. Returns 0 or an error. */
static int watchdog_start(redlock_t *rl) {
    rl_blocking_t *b = rl_blocking_of(rl);
    int rc = REDLOCK_OK;
    pthread_mutex_lock(&b->wd_start_mu);
    if (!b->wd) {
        rl_watchdog_t *wd = calloc(1, sizeof *wd);
        rl_extend_job_t *jobs = calloc(RL_WD_BATCH, sizeof *jobs);
        unsigned char *rounds = calloc(RL_WD_BATCH, rl_round_size(rl->opt.n_nodes));
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (wd) {
            wd->rl = rl;
            wd->jobs = jobs;
            wd->rounds = rounds;
            pthread_mutex_init(&wd->mu, NULL);
            pthread_cond_init(&wd->cv, &ca);
            pthread_cond_init(&wd->idle, NULL);
        }
        pthread_condattr_destroy(&ca);
        if (!wd || !jobs || !rounds || pthread_create(&wd->thread, NULL, watchdog_main, wd) != 0) {
            if (wd) {
                wd_destroy(wd);
            } else {
                free(jobs);
                free(rounds);
            }
            rc = REDLOCK_ERR_NOMEM;
        } else {
            b->wd = wd;
        }
    }
    pthread_mutex_unlock(&b->wd_start_mu);
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
    if (rl_autoextend_setup(&probe, opt, on_lost, arg, 0) != REDLOCK_OK) return REDLOCK_ERR_INVALID;
    int rc = watchdog_start(rl);
    if (rc) return rc;
    rl_watchdog_t *wd = rl_blocking_of(rl)->wd;
    pthread_mutex_lock(&wd->mu);
    rl_autoextend_setup(lock, opt, on_lost, arg, rl->clock());
    if (heap_push(wd, lock) < 0) {
        pthread_mutex_unlock(&wd->mu);
        return REDLOCK_ERR_NOMEM;
    }
    lock->watched = 1;
    lock->wd_attached = 1;
    pthread_cond_signal(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    return REDLOCK_OK;
}

void rl_watchdog_stop(redlock_lock_t *lock) {
    rl_watchdog_t *wd = rl_blocking_of(lock->owner)->wd;
    lock->wd_attached = 0;
    if (!wd) return;
    pthread_mutex_lock(&wd->mu);
    int slot = busy_slot(wd, lock);
    if (lock->watched && slot < 0) heap_remove(wd, lock);
    lock->watched = 0;
    if (slot >= 0 && pthread_equal(pthread_self(), wd->thread))
        wd->busy[slot] = NULL; /* a callback stops it: the batch forgets it */
    else                       /* wait out its extension or callback in progress */
        while (busy_slot(wd, lock) >= 0) pthread_cond_wait(&wd->idle, &wd->mu);
    pthread_mutex_unlock(&wd->mu);
}

int redlock_autoextend_stop(redlock_t *rl, redlock_lock_t *lock) {
    if (!rl || !lock || lock->owner != rl) return REDLOCK_ERR_INVALID;
    if (lock->wd_attached) rl_watchdog_stop(lock);
    return REDLOCK_OK;
}

/* Detaches every lock still watched (the thread has stopped). */
void rl_watchdog_free(redlock_t *rl) {
    rl_blocking_t *b = rl_blocking_of(rl);
    rl_watchdog_t *wd = b->wd;
    if (!wd) return;
    pthread_mutex_lock(&wd->mu);
    wd->stop = 1;
    pthread_cond_signal(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    pthread_join(wd->thread, NULL);
    for (size_t i = 0; i < wd->n; i++) wd->heap[i]->watched = wd->heap[i]->wd_attached = 0;
    wd_destroy(wd);
    b->wd = NULL;
}
