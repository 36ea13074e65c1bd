/* calls.c -- the public async functions (redlock.h, "Non-blocking use"):
 * argument checks (an error does nothing and runs no callback), then a
 * call is started: its first round is sent at once, its callback runs
 * later from the loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "timing.h"

int redlock_async_new_ex(redlock_async_t **out, const redlock_options_t *opt, char *err, size_t errlen) {
    char scratch[256];
    if (!err || !errlen) err = scratch, errlen = sizeof scratch;
    err[0] = '\0';
    if (!out) {
        snprintf(err, errlen, "out is NULL");
        return REDLOCK_ERR_INVALID;
    }
    *out = NULL;
    redlock_async_t *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return REDLOCK_ERR_NOMEM;
    }
    int rc = rl_async_init(a, opt, err, errlen);
    if (rc) {
        rl_async_teardown(a);
        return rc;
    }
    *out = a;
    return REDLOCK_OK;
}

int redlock_async_new(redlock_async_t **out, const redlock_options_t *opt) {
    return redlock_async_new_ex(out, opt, NULL, 0);
}

void redlock_async_free(redlock_async_t *a) {
    if (!a || a->dead) return;
    a->depth++; /* callbacks of the cancelled calls may call in: they find the handle dying */
    a->dead = 1;
    rl_async_release_all(a);
    if (--a->depth == 0) rl_async_teardown(a);
}

/* 1 when the handle may take a call. */
static int usable(const redlock_async_t *a) {
    return a && !a->dead;
}

/* Makes c's room for a permit's counts of free slots, kept across reuse.
 * Returns 0, or -1 when out of memory. */
static int permit_room(rl_call_t *c) {
    if (!c->free_slots && !(c->free_slots = malloc(REDLOCK_MAX_PERMITS))) return -1;
    return 0;
}

/* Copies the resource name into c (the buffer is kept across reuse). */
static int copy_name(rl_call_t *c, const char *resource, size_t len) {
    if (c->name_cap <= len) {
        size_t cap = (len + 16) & ~(size_t)15; /* room for the NUL, in 16-byte steps */
        char *p = realloc(c->name, cap);
        if (!p) return -1;
        c->name = p;
        c->name_cap = cap;
    }
    memcpy(c->name, resource, len + 1);
    c->name_len = len;
    c->name_ptr = c->name;
    return 0;
}

/* Steps a new call now when the caller is outside the loop's dispatch,
 * or leaves it to the dispatch in progress; then announces the I/O. */
static void start(redlock_async_t *a, rl_call_t *c) {
    rl_call_step(a, c);
    if (a->depth == 0) rl_async_sync(a, 0);
}

/* Starts an acquire call of resource: a mutex (kind 0), one of limit
 * permits (1), or a reader's lock (2). */
static int async_acquire(redlock_async_t *a, const char *resource, int kind, unsigned limit, uint32_t ttl_ms,
                         int64_t wait_ms, redlock_acquire_cb cb, void *arg) {
    char msg[256];
    size_t len;
    if (!usable(a) || !cb) return REDLOCK_ERR_INVALID;
    rl_keys_t keys = {1, &resource, &len};
    if (rl_check_request(&a->ctx, &keys, ttl_ms, msg, sizeof msg) || rl_check_wait(wait_ms, msg, sizeof msg) ||
        (kind == 1 && rl_check_permit(&a->ctx, &keys, limit, msg, sizeof msg))) {
        rl_logf(&a->ctx.log, REDLOCK_LOG_ERROR, "%s", msg);
        return REDLOCK_ERR_INVALID;
    }
    if (kind && rl_check_delay(&a->ctx, kind == 1 ? "permits" : "readers' locks", msg, sizeof msg)) {
        rl_logf(&a->ctx.log, REDLOCK_LOG_ERROR, "%s", msg);
        return REDLOCK_ERR_CONFIG;
    }
    rl_call_t *c = rl_call_get(a);
    if (!c || copy_name(c, resource, len) < 0 || (limit && permit_room(c) < 0)) {
        if (c) rl_call_recycle(a, c);
        return REDLOCK_ERR_NOMEM;
    }
    c->kind = RL_CALL_ACQUIRE;
    c->acb = cb;
    c->arg = arg;
    rl_keys_t own = {1, &c->name_ptr, &c->name_len};
    rl_acquire_op_init(&c->u.acq, &a->ctx, &own, ttl_ms, wait_ms, NULL, a->ctx.clock());
    c->u.acq.op.waiter = c; /* queue_moved wakes this call */
    rl_acquire_op_permit(&c->u.acq, limit, c->free_slots);
    if (kind == 2) rl_acquire_op_shared(&c->u.acq);
    start(a, c);
    return REDLOCK_OK;
}

int redlock_async_acquire(redlock_async_t *a, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_acquire_cb cb, void *arg) {
    return async_acquire(a, resource, 0, 0, ttl_ms, wait_ms, cb, arg);
}

int redlock_async_acquire_permit(redlock_async_t *a, const char *resource, unsigned limit, uint32_t ttl_ms,
                                 int64_t wait_ms, redlock_acquire_cb cb, void *arg) {
    return async_acquire(a, resource, 1, limit, ttl_ms, wait_ms, cb, arg);
}

int redlock_async_acquire_shared(redlock_async_t *a, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                                 redlock_acquire_cb cb, void *arg) {
    return async_acquire(a, resource, 2, 0, ttl_ms, wait_ms, cb, arg);
}

/* Checks a lock passed to the handle; INVALID (logged) when it is not
 * one of the handle's live locks. */
static int check_lock(redlock_async_t *a, const redlock_lock_t *lock) {
    char msg[256];
    int rc = rl_check_lock(&a->ctx, lock, msg, sizeof msg);
    if (rc == REDLOCK_OK && (lock->pooled || lock->releasing))
        rc = REDLOCK_ERR_INVALID, snprintf(msg, sizeof msg, "lock was already released");
    if (rc) rl_logf(&a->ctx.log, REDLOCK_LOG_ERROR, "%s", msg);
    return rc;
}

int redlock_async_extend(redlock_async_t *a, redlock_lock_t *lock, uint32_t ttl_ms, redlock_done_cb cb, void *arg) {
    char msg[256];
    if (!usable(a) || !cb || check_lock(a, lock)) return REDLOCK_ERR_INVALID;
    if (rl_check_ttl(&a->ctx, ttl_ms, msg, sizeof msg)) {
        rl_logf(&a->ctx.log, REDLOCK_LOG_ERROR, "%s", msg);
        return REDLOCK_ERR_INVALID;
    }
    rl_call_t *c = rl_call_get(a);
    if (!c) return REDLOCK_ERR_NOMEM;
    c->kind = RL_CALL_EXTEND;
    c->dcb = cb;
    c->arg = arg;
    c->lock = lock;
    rl_keys_t keys = rl_lock_keys(lock);
    rl_extend_op_init(&c->u.life, &a->ctx, &keys, lock->token, ttl_ms, NULL);
    rl_life_op_kind(&c->u.life, lock);
    if (atomic_load(&lock->lost) || rl_validity_us(atomic_load(&lock->deadline_us), a->ctx.clock()) <= 0) {
        c->u.op.rc = REDLOCK_ERR_NOT_HELD; /* never a silent re-acquire: answered from the loop */
        c->answered = 1;
        if (rl_async_wait(a, c, 0) < 0) {
            rl_call_recycle(a, c);
            return REDLOCK_ERR_NOMEM;
        }
        if (a->depth == 0) rl_async_sync(a, 0);
        return REDLOCK_OK;
    }
    start(a, c);
    return REDLOCK_OK;
}

int redlock_async_release(redlock_async_t *a, redlock_lock_t *lock, redlock_done_cb cb, void *arg) {
    if (!usable(a) || check_lock(a, lock)) return REDLOCK_ERR_INVALID;
    rl_call_t *c = rl_call_get(a);
    if (!c) return REDLOCK_ERR_NOMEM;
    if (lock->autoext) rl_async_autoextend_stop(a, lock);
    lock->releasing = 1;
    c->kind = RL_CALL_RELEASE;
    c->dcb = cb;
    c->arg = arg;
    c->lock = lock;
    memcpy(c->u.rel.token, lock->token, sizeof c->u.rel.token);
    rl_keys_t keys = rl_lock_keys(lock);
    rl_release_op_init(&c->u.life, &a->ctx, &keys, c->u.rel.token, NULL);
    rl_life_op_kind(&c->u.life, lock);
    start(a, c);
    return REDLOCK_OK;
}

int redlock_async_cancel(redlock_async_t *a, void *arg) {
    if (!usable(a)) return REDLOCK_ERR_INVALID;
    int n = 0;
    for (rl_call_t *c = a->pending, *next; c; c = next) {
        next = c->next;
        if (c->kind != RL_CALL_ACQUIRE || c->arg != arg || c->cancelled) continue;
        rl_async_cancel_call(a, c, REDLOCK_ERR_CANCELLED);
        n++;
    }
    if (n && a->depth == 0) rl_async_sync(a, 0);
    return n;
}

/* Runs fn with the handle's depth held, so the calls fn starts queue
 * their commands and leave together when it returns (as from a callback);
 * a handle fn freed is torn down on the way out. */
int redlock_async_batch(redlock_async_t *a, redlock_batch_fn fn, void *arg) {
    if (!usable(a) || !fn) return REDLOCK_ERR_INVALID;
    a->depth++;
    fn(a, arg);
    if (--a->depth > 0) return REDLOCK_OK; /* inside a callback: its dispatch sends them */
    if (a->dead)
        rl_async_teardown(a);
    else
        rl_async_sync(a, 0);
    return REDLOCK_OK;
}

int redlock_async_stats(redlock_async_t *a, redlock_stats_t *out) {
    if (!a || !out) return REDLOCK_ERR_INVALID;
    rl_stats_read(a->ctx.stats, a->ctx.opt.n_nodes, out);
    for (size_t i = 0; i < out->n_nodes; i++) out->nodes[i].node = a->ns.nodes[i].conn.uri.display;
    return REDLOCK_OK;
}

int redlock_async_autoextend_ex(redlock_async_t *a, redlock_lock_t *lock, const redlock_autoextend_options_t *opt,
                                redlock_lost_fn on_lost, void *arg) {
    if (!usable(a) || check_lock(a, lock) || lock->autoext) return REDLOCK_ERR_INVALID;
    if (!redlock_lock_valid(lock, 0)) return REDLOCK_ERR_NOT_HELD;
    if (rl_autoextend_setup(lock, opt, on_lost, arg, a->ctx.clock()) != REDLOCK_OK) return REDLOCK_ERR_INVALID;
    rl_call_t *c = rl_call_get(a);
    if (!c) return REDLOCK_ERR_NOMEM;
    c->kind = RL_CALL_AUTOEXTEND;
    c->lock = lock;
    lock->autoext = c;
    if (rl_async_wait(a, c, lock->next_us) < 0) {
        lock->autoext = NULL;
        rl_call_recycle(a, c);
        return REDLOCK_ERR_NOMEM;
    }
    if (a->depth == 0) rl_async_sync(a, 0);
    return REDLOCK_OK;
}

int redlock_async_autoextend(redlock_async_t *a, redlock_lock_t *lock, const redlock_autoextend_options_t *opt) {
    return redlock_async_autoextend_ex(a, lock, opt, NULL, NULL);
}

int redlock_async_autoextend_stop(redlock_async_t *a, redlock_lock_t *lock) {
    char msg[256];
    if (!a || a->dead || rl_check_lock(&a->ctx, lock, msg, sizeof msg)) return REDLOCK_ERR_INVALID;
    if (lock->autoext) rl_async_autoextend_stop(a, lock);
    return REDLOCK_OK;
}
