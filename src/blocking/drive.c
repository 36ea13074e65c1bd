/* drive.c -- the blocking way to run the core: a round on the engine, an
 * operation stepped to its end on the caller's thread, and the waits
 * between attempts, which redlock_cancel_waits can cut short.
 *
 * Cancelling: redlock_cancel_waits bumps rl->cancel_gen and writes a byte
 * to rl->cancel_wr (both async-signal-safe). A waiting thread sleeps in
 * poll() on rl->cancel_rd, so the byte wakes every waiter at once; each
 * compares the generation with the one its call started with. Nobody
 * reads the byte while a waiter may still need to see it: the last waiter
 * standing drains it (a waiter that finds a stale byte and others around
 * sleeps in short slices until then). */
#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include "blocking.h"
#include "engine.h"

/* rl->send of a blocking handle: runs r on the engine until it is decided
 * (a round whose command could not be built is decided already). */
void rl_send_blocking(redlock_t *rl, rl_round_t *r) {
    if (!r->cmd) return;
    rl_engine_run(rl->eng, r);
    rl_stats_round(rl->stats, rl->clock() - r->t0_us);
}

void redlock_cancel_waits(redlock_t *rl) {
    if (!rl || rl->cancel_wr < 0) return;
    atomic_fetch_add(&rl->cancel_gen, 1);
    ssize_t n = write(rl->cancel_wr, "x", 1);
    (void)n;
}

/* rl->queue_moved of a blocking handle: wakes every waiting thread so the
 * new head of a local queue starts contending (the others wait again). */
void rl_poke_waiters(redlock_t *rl) {
    atomic_fetch_add(&rl->poke_gen, 1);
    ssize_t n = write(rl->cancel_wr, "x", 1);
    (void)n;
}

/* Reads the cancel pipe empty: only the last waiter does, and if another
 * waiter arrived meanwhile the pipe is armed again for it. */
static void drain_stale(redlock_t *rl) {
    char buf[64];
    while (read(rl->cancel_rd, buf, sizeof buf) > 0) {
    }
    if (atomic_load(&rl->waiters) > 1) {
        ssize_t n = write(rl->cancel_wr, "x", 1);
        (void)n;
    }
}

/* Sleeps until at_us unless a cancel moves rl's generation past gen, or
 * a local queue moves past poked (taken before the op last looked at its
 * queue, so a move in between is not missed; the caller then steps the
 * op again). Returns 1 when cancelled. */
static int wait_until(redlock_t *rl, uint64_t at_us, unsigned gen, unsigned poked) {
    int cancelled = 0;
    atomic_fetch_add(&rl->waiters, 1);
    for (;;) {
        if (atomic_load(&rl->cancel_gen) != gen) {
            cancelled = 1;
            break;
        }
        if (atomic_load(&rl->poke_gen) != poked) break;
        uint64_t now = rl->clock();
        if (now >= at_us) break;
        uint64_t left_ms = (at_us - now + 999u) / 1000u;
        struct pollfd p = {.fd = rl->cancel_rd, .events = POLLIN, .revents = 0};
        if (poll(&p, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms) <= 0) continue;
        if (atomic_load(&rl->cancel_gen) != gen || atomic_load(&rl->poke_gen) != poked) continue; /* seen at the top */
        if (atomic_load(&rl->waiters) == 1)                 /* a byte of an earlier cancel */
            drain_stale(rl);
        else
            rl_sleep_us(left_ms > 5 ? 5000u : left_ms * 1000u);
    }
    atomic_fetch_sub(&rl->waiters, 1);
    return cancelled;
}

int rl_drive(rl_op_t *op) {
    redlock_t *rl = op->rl;
    const unsigned gen = atomic_load(&rl->cancel_gen);
    for (;;) {
        unsigned poked = atomic_load(&rl->poke_gen);
        int step = op->next(op, rl->clock());
        if (step == RL_STEP_DONE) return op->rc;
        int cancel = op->cancel && atomic_load(&rl->cancel_gen) != gen;
        if (step == RL_STEP_WAIT && !cancel && op->cancel) cancel = wait_until(rl, op->wake_us, gen, poked);
        else if (step == RL_STEP_WAIT && !op->cancel && op->wake_us > rl->clock()) rl_sleep_us(op->wake_us - rl->clock());
        if (cancel) {
            int (*fn)(rl_op_t *, int) = op->cancel;
            op->cancel = NULL; /* cancelled once */
            if (fn(op, REDLOCK_ERR_CANCELLED) == RL_STEP_DONE) return op->rc; /* else its clean-up ran */
        }
    }
}
