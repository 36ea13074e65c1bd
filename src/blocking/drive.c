/* drive.c -- the blocking way to run the core: a round on the engine,
 * and an operation stepped to its end on the caller's thread. */
#include "blocking.h"
#include "engine.h"

/* rl->send of a blocking handle: runs r on the engine until it is decided
 * (a round whose command could not be built is decided already). */
void rl_send_blocking(redlock_t *rl, rl_round_t *r) {
    if (!r->cmd) return;
    rl_engine_run(rl->eng, r);
    rl_stats_round(rl->stats, rl->clock() - r->t0_us);
}

int rl_drive(rl_op_t *op) {
    for (;;) {
        int step = op->next(op, op->rl->clock());
        if (step == RL_STEP_DONE) return op->rc;
        if (step == RL_STEP_WAIT) {
            uint64_t now = op->rl->clock();
            if (op->wake_us > now) rl_sleep_us(op->wake_us - now);
        }
    }
}

