/* redlock.c -- the blocking handle (redlock_t): creation and freeing, and
 * how it drives the core: a round runs on the leader/follower engine
 * (engine.c) and an operation is stepped to its end on the caller's
 * thread, sleeping through its retry delays. */
#define _GNU_SOURCE /* pipe2 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "blocking.h"
#include "engine.h"

/* rl->unhold of a blocking handle: drops the thread's hold of a
 * re-entered lock and stops its watchdog once the last hold goes. */
static int unhold_blocking(redlock_lock_t *lock) {
    if (lock->registered && rl_held_drop(lock)) return 1; /* an outer hold of this thread remains */
    if (lock->wd_attached) rl_watchdog_stop(lock);
    return 0;
}

/* Builds rl's engine from its (already validated) options. */
static int start_engine(redlock_t *rl) {
    rl_blocking_t *b = rl_blocking_of(rl);
    rl_uri_t uris[REDLOCK_MAX_NODES];
    rl_nodes_config_t cfg;
    rl_ctx_nodes_config(rl, &cfg);
    int rc = rl_ctx_parse_uris(rl, uris);
    if (rc == REDLOCK_OK) rc = rl_engine_new(&b->eng, uris, rl->opt.n_nodes, &cfg);
    if (rc == REDLOCK_OK) rl->ns = rl_engine_nodes(b->eng);
    return rc;
}

int redlock_new_ex(redlock_t **out, const redlock_options_t *opt, char *err, size_t errlen) {
    char scratch[256];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, errlen, "out is NULL");
        return REDLOCK_ERR_INVALID;
    }
    *out = NULL;
    rl_blocking_t *b = calloc(1, sizeof *b);
    if (!b) return REDLOCK_ERR_NOMEM;
    redlock_t *rl = &b->rl;
    b->cancel_rd = b->cancel_wr = -1;
    pthread_mutex_init(&b->wd_start_mu, NULL);
    pthread_mutex_init(&b->sleep_mu, NULL);
    int rc = rl_ctx_init(rl, opt, err, errlen);
    int fds[2];
    if (rc == REDLOCK_OK && pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot make a pipe for redlock_cancel_waits");
        rc = REDLOCK_ERR_NOMEM;
    } else if (rc == REDLOCK_OK) {
        b->cancel_rd = fds[0];
        b->cancel_wr = fds[1];
    }
    if (rc == REDLOCK_OK && (rc = start_engine(rl)) != REDLOCK_OK) snprintf(err, errlen, "out of memory");
    if (rc == REDLOCK_OK && (rc = rl_listener_new(rl)) != REDLOCK_OK) snprintf(err, errlen, "out of memory");
    if (rc != REDLOCK_OK) {
        redlock_free(rl);
        return rc;
    }
    rl->send = rl_send_blocking;
    rl->unhold = unhold_blocking;
    rl->queue_moved = rl_poke_waiter;
    *out = rl;
    return REDLOCK_OK;
}

int redlock_new(redlock_t **out, const redlock_options_t *opt) {
    return redlock_new_ex(out, opt, NULL, 0);
}

void redlock_free(redlock_t *rl) {
    if (!rl) return;
    rl_blocking_t *b = rl_blocking_of(rl);
    rl_watchdog_free(rl);
    rl_held_forget_all(rl);
    rl_listener_free(rl);
    rl_engine_free(b->eng);
    if (b->cancel_rd >= 0) close(b->cancel_rd);
    if (b->cancel_wr >= 0) close(b->cancel_wr);
    rl_ctx_destroy(rl);
    pthread_mutex_destroy(&b->wd_start_mu);
    pthread_mutex_destroy(&b->sleep_mu);
    free(b);
}
