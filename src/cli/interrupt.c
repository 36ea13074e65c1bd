/* interrupt.c -- SIGINT and SIGTERM while the tool waits for a lock
 * (`exec --wait`, `acquire --wait`): the wait ends at once through
 * redlock_cancel_waits, whatever the last attempt set is released, and
 * the tool exits 128 + the signal with a one-line message. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static redlock_t *volatile g_waiting;  /* the handle whose waits a signal cancels */
static volatile sig_atomic_t g_signal; /* the signal that came, 0 if none */

/* The handler: remember the signal, end the waits (async-signal-safe). */
static void on_signal(int sig) {
    g_signal = sig;
    redlock_t *rl = g_waiting;
    if (rl) redlock_cancel_waits(rl);
}

/* The library call for kind (NULL: a mutex). Returns its result; *lock
 * is the caller's to release or free on REDLOCK_OK. */
static int acquire_kind(redlock_t *rl, const char *resource, const cli_kind_t *kind, uint32_t ttl_ms, int64_t wait_ms,
                        redlock_lock_t **lock, redlock_report_t *rep) {
    if (kind && kind->limit) return redlock_acquire_permit(rl, resource, kind->limit, ttl_ms, wait_ms, lock, rep);
    if (kind && kind->shared) return redlock_acquire_shared(rl, resource, ttl_ms, wait_ms, lock, rep);
    return redlock_acquire_ex(rl, resource, ttl_ms, wait_ms, lock, rep);
}

int cli_acquire_interruptible(const cli_t *c, redlock_t *rl, const char *resource, const cli_kind_t *kind,
                              uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **lock, redlock_report_t *rep,
                              int *exit_code) {
    static const int sigs[] = {SIGINT, SIGTERM};
    struct sigaction old[2], sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_signal = 0;
    g_waiting = rl;
    int installed[2] = {0, 0};
    for (int k = 0; k < 2; k++) /* a signal the tool was started with ignored stays ignored */
        if (sigaction(sigs[k], NULL, &old[k]) == 0 && old[k].sa_handler != SIG_IGN)
            installed[k] = sigaction(sigs[k], &sa, NULL) == 0;
    int rc = acquire_kind(rl, resource, kind, ttl_ms, wait_ms, lock, rep);
    for (int k = 0; k < 2; k++)
        if (installed[k]) sigaction(sigs[k], &old[k], NULL);
    g_waiting = NULL;
    *exit_code = 0;
    if (!g_signal) return rc;
    if (rc == REDLOCK_OK) { /* granted as the signal came: the signal wins */
        redlock_release(rl, *lock);
        *lock = NULL;
    }
    cli_error(c, "%s while waiting for '%s': stopped, nothing is held",
              g_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", resource);
    *exit_code = 128 + g_signal;
    return REDLOCK_ERR_CANCELLED;
}
