/* release.c -- releasing a held lock (blocking): the release operation
 * of the core; a re-entered lock's outer hold stays. */
#include <stdio.h>

#include "blocking.h"

int rl_release_keys(redlock_t *rl, const rl_keys_t *keys, const char *token, const redlock_lock_t *kind,
                    redlock_report_t *rep) {
    rl_life_op_t e;
    RL_ROUND(r);
    e.op.r = r;
    e.op.aux = NULL;
    e.op.seen = NULL;
    rl_release_op_init(&e, rl, keys, token, rep);
    rl_life_op_kind(&e, kind);
    return rl_drive(&e.op);
}

/* redlock_release_ex without the counting. */
static int release_lock(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep) {
    char msg[256];
    rl_report_begin(rl, rep);
    int rc = rl_check_lock(rl, lock, msg, sizeof msg);
    if (rc) {
        redlock_lock_free(lock); /* release always frees the handle, even on bad input */
        return rl_report_end(rl, rep, rc, msg);
    }
    if (rep) rep->attempts = 1;
    if (rl->unhold(lock)) { /* an outer hold of this thread remains */
        if (rep) {
            rep->validity_ms = redlock_lock_validity_ms(lock);
            snprintf(rep->message, sizeof rep->message, "re-entered lock: an outer hold remains");
        }
        return rl_report_end(rl, rep, REDLOCK_OK, NULL);
    }
    rl_keys_t keys = rl_lock_keys(lock);
    rc = rl_release_keys(rl, &keys, lock->token, lock, rep);
    rl_lock_destroy(lock);
    return rl_report_end(rl, rep, rc, NULL);
}

int redlock_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep) {
    int rc = release_lock(rl, lock, rep);
    if (rl) rl_stats_call(rl->stats, RL_STAT_RELEASE, rc);
    return rc;
}

int redlock_release(redlock_t *rl, redlock_lock_t *lock) {
    return redlock_release_ex(rl, lock, NULL);
}
