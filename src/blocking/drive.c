/* drive.c -- the blocking way to run the core: a round on the engine, an
 * operation stepped to its end on the caller's thread, and the waits
 * between attempts, which redlock_cancel_waits can cut short.
 *
 * Cancelling: redlock_cancel_waits bumps the handle's cancel_gen and writes
 * a byte to its cancel_wr (both async-signal-safe). A waiting thread sleeps
 * in poll() on cancel_rd, so the byte wakes every waiter at once; each
 * compares the generation with the one its call started with. Nobody
 * reads the byte while a waiter may still need to see it: the last waiter
 * standing drains it (a waiter that finds a stale byte and others around
 * stops polling the pipe and looks at the generation in 5 ms slices).
 *
 * Waking: a waiting thread also polls an eventfd of its own, which
 * rl_poke_waiter writes when its op becomes a queue's head or a release of a
 * waited-for resource is heard (doc/design.md, "Waiting"). */
#define _GNU_SOURCE /* ppoll: waits to the microsecond */
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "blocking.h"
#include "clock.h"
#include "engine.h"
#include "record.h"

/* This thread's rounds are started, not waited for (rl_drive_defer). */
static _Thread_local unsigned tl_defer, tl_started;

/* rl->send of a blocking handle: runs r on the engine until it is decided
 * (a round whose command could not be built is decided already); in a
 * deferred stretch only starts it. */
void rl_send_blocking(redlock_t *rl, rl_round_t *r) {
    rl_blocking_t *b = rl_blocking_of(rl);
    if (!r->cmd) return;
    if (rl_record_claim_watch(&rl->notices)) rl_listener_watch(rl); /* a record was met */
    if (r->done) { /* sent unwaited (a clean-up): written out, not counted as a round */
        rl_engine_run(b->eng, r);
        return;
    }
    if (tl_defer) {
        rl_engine_start(b->eng, r);
        tl_started++;
        return;
    }
    rl_engine_run(b->eng, r);
    rl_stats_round(rl->stats, rl->clock() - r->t0_us);
}

void rl_drive_defer(int on) {
    tl_defer = on ? 1u : 0u;
}

unsigned rl_drive_started(void) {
    return tl_started;
}

void redlock_cancel_waits(redlock_t *rl) {
    if (!rl || rl_blocking_of(rl)->cancel_wr < 0) return;
    rl_blocking_t *b = rl_blocking_of(rl);
    atomic_fetch_add(&b->cancel_gen, 1);
    ssize_t n = write(b->cancel_wr, "x", 1);
    (void)n;
}

/* A thread waiting between attempts: its own eventfd, written when its
 * op becomes the head of a local queue or hears a release
 * (rl_poke_waiter), so a wake-up reaches that thread alone. */
struct rl_sleeper {
    int fd;
};

/* rl->queue_moved of a blocking handle (held_mu held): the thread of a
 * looks again (a new head contends, a woken head attempts); no other
 * sleeper is woken. A thread not asleep yet sees poke_gen move. */
void rl_poke_waiter(redlock_t *rl, rl_acquire_op_t *a) {
    rl_blocking_t *b = rl_blocking_of(rl);
    atomic_fetch_add(&b->poke_gen, 1);
    const uint64_t one = 1;
    pthread_mutex_lock(&b->sleep_mu);
    struct rl_sleeper *s = a->op.waiter;
    if (s && s->fd >= 0) {
        ssize_t n = write(s->fd, &one, sizeof one);
        (void)n;
    }
    pthread_mutex_unlock(&b->sleep_mu);
}

/* Gives s a new eventfd. Returns 0, or -1 when no fd could be made (the
 * thread then waits in slices, see wait_until). */
static int sleeper_add(redlock_t *rl, struct rl_sleeper *s) {
    rl_blocking_t *b = rl_blocking_of(rl);
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -1;
    pthread_mutex_lock(&b->sleep_mu); /* (a poker reads fd under it) */
    s->fd = fd;
    pthread_mutex_unlock(&b->sleep_mu);
    return 0;
}

/* Closes s's fd (a no-op if it has none). */
static void sleeper_drop(redlock_t *rl, struct rl_sleeper *s) {
    rl_blocking_t *b = rl_blocking_of(rl);
    if (s->fd < 0) return;
    pthread_mutex_lock(&b->sleep_mu);
    int fd = s->fd;
    s->fd = -1;
    pthread_mutex_unlock(&b->sleep_mu);
    close(fd);
}

/* Reads the cancel pipe empty: only the last waiter does, and if another
 * waiter arrived meanwhile the pipe is armed again for it. */
static void drain_stale(redlock_t *rl) {
    rl_blocking_t *b = rl_blocking_of(rl);
    char buf[64];
    while (read(b->cancel_rd, buf, sizeof buf) > 0) {
    }
    if (atomic_load(&b->waiters) > 1) {
        ssize_t n = write(b->cancel_wr, "x", 1);
        (void)n;
    }
}

/* Sleeps until at_us unless a cancel moves rl's generation past gen, or
 * a poke moves poke_gen past poked (taken before the op last looked
 * at its queue, so a poke in between is not missed; the caller then steps
 * the op again). Returns 1 when cancelled. */
static int wait_until(redlock_t *rl, struct rl_sleeper *s, uint64_t at_us, unsigned gen, unsigned poked) {
    rl_blocking_t *b = rl_blocking_of(rl);
    int cancelled = 0, stale = 0;
    atomic_fetch_add(&b->waiters, 1);
    for (;;) {
        if (atomic_load(&b->cancel_gen) != gen) {
            cancelled = 1;
            break;
        }
        if (atomic_load(&b->poke_gen) != poked) break;
        uint64_t now = rl->clock();
        if (now >= at_us) break;
        uint64_t left_us = at_us - now; /* to the microsecond: a split's backoff is a fraction of an RTT */
        if ((stale || s->fd < 0) && left_us > 5000) left_us = 5000; /* poll in slices meanwhile */
        struct timespec ts = rl_timespec_us(left_us);
        struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN, .revents = 0},
                              {.fd = stale ? -1 : b->cancel_rd, .events = POLLIN, .revents = 0}};
        if (ppoll(p, 2, &ts, NULL) <= 0) continue;
        uint64_t v;
        if (p[0].revents) { /* a poke: poke_gen moved, seen at the top */
            ssize_t n = read(s->fd, &v, sizeof v);
            (void)n;
        }
        if (!p[1].revents || atomic_load(&b->cancel_gen) != gen) continue; /* seen at the top */
        if (atomic_load(&b->waiters) == 1)                                 /* a byte of an earlier cancel */
            drain_stale(rl);
        else
            stale = 1; /* the last waiter drains it; until then it is not polled */
    }
    atomic_fetch_sub(&b->waiters, 1);
    return cancelled;
}

int rl_drive(rl_op_t *op) {
    redlock_t *rl = op->rl;
    rl_blocking_t *b = rl_blocking_of(rl);
    const unsigned gen = atomic_load(&b->cancel_gen);
    struct rl_sleeper me = {.fd = -1};
    int joined = 0;
    op->waiter = &me; /* (an acquire is poked only while queued: before this returns) */
    for (;;) {
        unsigned poked = atomic_load(&b->poke_gen);
        int step = op->next(op, rl->clock());
        if (step == RL_STEP_DONE) break;
        int cancel = op->cancel && atomic_load(&b->cancel_gen) != gen;
        /* only acquires wait, and they are cancellable until cancelled (then they never wait again) */
        if (step == RL_STEP_WAIT && !cancel) {
            if (!joined) joined = 1, sleeper_add(rl, &me);
            cancel = wait_until(rl, &me, op->wake_us, gen, poked);
        }
        if (cancel) {
            int (*fn)(rl_op_t *, int) = op->cancel;
            op->cancel = NULL;                                        /* cancelled once */
            if (fn(op, REDLOCK_ERR_CANCELLED) == RL_STEP_DONE) break; /* else its clean-up ran */
        }
    }
    sleeper_drop(rl, &me);
    return op->rc;
}
