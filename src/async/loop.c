/* loop.c -- the async driver (see async.h): rounds started on the node
 * set without waiting, calls resumed when their round is decided or their
 * wake-up time comes, and the fds and timer announced to the adapter. */
#define _GNU_SOURCE /* pipe2 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "async.h"
#include "record.h"

/* -------------------------------------------------------------- rounds */

/* ctx.send of the handle: starts r on the nodes and returns at once; the
 * call being stepped owns it. While freeing, rounds go out ownerless. */
static void send_async(redlock_t *ctx, rl_round_t *r) {
    redlock_async_t *a = (redlock_async_t *)ctx;
    if (a->fire_and_forget) {
        r->done = 1;
        r->send_all = 1;
    }
    if (r->done) { /* sent unwaited (a clean-up): nobody owns it, it may live on a stack */
        r->owner = NULL;
        if (r->cmd) rl_nodes_start(&a->ns, r, ctx->clock());
        return;
    }
    r->owner = a->current;
    if (!r->cmd) { /* could not be encoded: decided already, no I/O */
        if (a->current) rl_ready_push(a, a->current);
        return;
    }
    rl_nodes_start(&a->ns, r, ctx->clock());
}

/* The core decided round r: its call is stepped from the ready list. */
static void round_done(void *arg, rl_round_t *r) {
    redlock_async_t *a = arg;
    rl_stats_round(a->ctx.stats, a->ctx.clock() - r->t0_us);
    if (r->owner) rl_ready_push(a, r->owner);
}

void rl_call_step(redlock_async_t *a, rl_call_t *c) {
    rl_call_t *outer = a->current;
    a->current = c;
    uint64_t now = a->ctx.clock();
    int step;
    if (!c->answered && rl_call_room(a, c) < 0) { /* (an acquire that waited: nowhere for its round) */
        rl_acquire_op_cancel(&c->u.acq, REDLOCK_ERR_NOMEM);
        rl_call_complete(a, c, now);
    } else if (c->answered) {
        rl_call_complete(a, c, now);
    } else if (c->kind == RL_CALL_AUTOEXTEND && !c->started) {
        rl_async_autoextend_done(a, c, now); /* its wake-up: decide, maybe start an extension */
    } else if ((step = c->u.op.next(&c->u.op, now)) == RL_STEP_WAIT) {
        if (rl_heap_push(a, c) < 0) { /* no memory for the timer: give up the wait */
            c->u.op.rc = REDLOCK_ERR_NOMEM;
            rl_call_complete(a, c, now);
        } else if (c->kind == RL_CALL_ACQUIRE) {
            rl_call_unroom(a, c); /* a waiting acquire holds no round: memory goes with rounds in flight */
        }
    } else if (step == RL_STEP_DONE) {
        if (c->kind == RL_CALL_AUTOEXTEND)
            rl_async_autoextend_done(a, c, now);
        else
            rl_call_complete(a, c, now);
    }
    a->current = outer;
}

/* -------------------------------------------------------- fds and timer */

/* Announces what fd should be watched for (ev), where *at says what was
 * announced for this place (a connection, or the wake pipe) before,
 * telling the adapter only what changed. */
static void announce(redlock_async_t *a, rl_io_t *at, int fd, short ev) {
    const redlock_async_hooks_t *h = &a->hooks;
    int rd = fd >= 0 && (ev & POLLIN), wr = fd >= 0 && (ev & POLLOUT);
    if (at->fd != fd && at->fd >= 0) { /* another socket: the old one is gone */
        if (at->rd && h->del_read) h->del_read(h->data, at->fd);
        if (at->wr && h->del_write) h->del_write(h->data, at->fd);
        at->rd = at->wr = 0;
    }
    at->fd = fd;
    if (rd != at->rd) {
        if (rd && h->add_read) h->add_read(h->data, fd);
        if (!rd && h->del_read) h->del_read(h->data, fd);
        at->rd = (uint8_t)rd;
    }
    if (wr != at->wr) {
        if (wr && h->add_write) h->add_write(h->data, fd);
        if (!wr && h->del_write) h->del_write(h->data, fd);
        at->wr = (uint8_t)wr;
    }
    if (fd < 0) at->fd = -1;
}

/* announce for connection c, whose watch state it carries. */
static void announce_conn(redlock_async_t *a, rl_conn_t *c, int fd, short ev) {
    rl_io_t at = {c->io_fd, c->io_rd, c->io_wr};
    announce(a, &at, fd, ev);
    c->io_fd = at.fd;
    c->io_rd = at.rd;
    c->io_wr = at.wr;
}

/* conn.c tells us before it closes a connection's socket: stop watching it. */
static void fd_closing(void *arg, rl_conn_t *c, int fd) {
    if (c->io_fd == fd) announce_conn(arg, c, -1, 0);
}

/* Announces what every connection of ns waits for. */
static void announce_all(redlock_async_t *a, rl_nodes_t *ns) {
    for (size_t k = 0; k < ns->nall; k++) announce_conn(a, ns->all[k], ns->all[k]->fd, rl_nodes_interest(ns, k));
}

/* Asks the adapter for the timer the handle needs next. */
static void announce_timer(redlock_async_t *a, uint64_t now) {
    uint64_t next = rl_nodes_next_us(&a->ns), subs = rl_subs_next_us(&a->subs);
    if (subs < next) next = subs;
    if (a->heap_n && a->heap[0]->u.op.wake_us < next) next = a->heap[0]->u.op.wake_us;
    if (a->ready) next = now;
    if (next == UINT64_MAX) {
        if (a->timer_at && a->hooks.clear_timer) a->hooks.clear_timer(a->hooks.data);
        a->timer_at = 0;
        return;
    }
    if (next == a->timer_at && next > now) return;
    a->timer_at = next;
    if (a->hooks.set_timer) a->hooks.set_timer(a->hooks.data, next <= now ? 0 : (next - now + 999u) / 1000u);
}

/* Steps every ready call (callbacks run from here), until none is left
 * or the handle was freed from a callback. */
static void run_ready(redlock_async_t *a) {
    while (a->ready && !a->dead) {
        rl_call_t *c = a->ready;
        rl_ready_remove(a, c);
        rl_call_step(a, c);
    }
}

void rl_async_sync(redlock_async_t *a, int run) {
    for (;;) {
        if (run) run_ready(a);
        if (a->dead) return;
        if (rl_record_claim_watch(&a->ctx.notices)) rl_subs_watch(&a->subs, a->ctx.clock()); /* a record met */
        rl_nodes_flush(&a->ns, a->ctx.clock());
        rl_nodes_flush(&a->subs.ns, a->ctx.clock());
        if (!run || !a->ready) break;
    }
    if (!a->hooked) return;
    announce_all(a, &a->ns);
    announce(a, &a->wake_io, a->wake_rd, POLLIN);
    announce_all(a, &a->subs.ns);
    announce_timer(a, a->ctx.clock());
}

/* -------------------------------------------------------- entry points */

void rl_async_enter(redlock_async_t *a) {
    a->depth++;
}

int rl_async_leave(redlock_async_t *a) {
    if (a->depth == 1 && !a->dead) rl_async_sync(a, 1); /* callbacks run with the depth held */
    if (--a->depth == 0 && a->dead) {
        rl_async_teardown(a);
        return 1;
    }
    return 0;
}

/* Wakes the calls whose time has come (retry delays, watched locks). */
static void wake_due(redlock_async_t *a, uint64_t now) {
    while (a->heap_n && a->heap[0]->u.op.wake_us <= now) {
        rl_call_t *c = a->heap[0];
        rl_heap_remove(a, c);
        rl_ready_push(a, c);
    }
}

void redlock_async_handle_read(redlock_async_t *a, int fd) {
    if (!a || a->dead) return;
    rl_async_enter(a);
    uint64_t now = a->ctx.clock();
    if (fd == a->wake_rd) {
        char drain[64];
        while (read(a->wake_rd, drain, sizeof drain) > 0) {
        }
        rl_nodes_lookups_ended(&a->ns, now);
        rl_nodes_lookups_ended(&a->subs.ns, now);
    }
    for (size_t k = 0; k < a->ns.nall; k++)
        if (a->ns.all[k]->fd == fd && fd >= 0) rl_nodes_events(&a->ns, k, POLLIN, now);
    for (size_t k = 0; k < a->subs.ns.nall; k++)
        if (a->subs.ns.all[k]->fd == fd && fd >= 0) rl_nodes_events(&a->subs.ns, k, POLLIN, now);
    rl_nodes_expire(&a->ns, now);
    rl_subs_expire(&a->subs, now);
    rl_async_leave(a);
}

/* fd is writable: a connect of one of ns's nodes goes on, or its
 * output is written. */
static void writable(rl_nodes_t *ns, int fd, uint64_t now) {
    for (size_t k = 0; k < ns->nall; k++) {
        rl_conn_t *c = ns->all[k];
        if (c->fd != fd || fd < 0) continue;
        if (c->state == RL_CONN_CONNECTING)
            rl_nodes_events(ns, k, POLLOUT, now);
        else
            rl_nodes_flush(ns, now);
    }
}

void redlock_async_handle_write(redlock_async_t *a, int fd) {
    if (!a || a->dead) return;
    rl_async_enter(a);
    uint64_t now = a->ctx.clock();
    writable(&a->ns, fd, now);
    writable(&a->subs.ns, fd, now);
    rl_async_leave(a);
}

void redlock_async_handle_timer(redlock_async_t *a) {
    if (!a || a->dead) return;
    rl_async_enter(a);
    uint64_t now = a->ctx.clock();
    a->timer_at = 0;
    rl_nodes_expire(&a->ns, now);
    rl_subs_expire(&a->subs, now);
    wake_due(a, now);
    rl_async_leave(a);
}

int redlock_async_set_hooks(redlock_async_t *a, const redlock_async_hooks_t *hooks) {
    if (!a || !hooks || a->hooked || a->dead) return REDLOCK_ERR_INVALID;
    a->hooks = *hooks;
    a->hooked = 1;
    if (a->depth == 0) rl_async_sync(a, 0);
    return REDLOCK_OK;
}

/* ---------------------------------------------------------- the calls */

/* Abandons c's rounds in flight and takes it off the heap and ready list. */
static void detach_call(redlock_async_t *a, rl_call_t *c) {
    if (c->u.op.r) rl_nodes_abandon(&a->ns, c->u.op.r);
    if (c->u.op.aux) rl_nodes_abandon(&a->ns, c->u.op.aux);
    rl_heap_remove(a, c);
    rl_ready_remove(a, c);
}

void rl_async_cancel_call(redlock_async_t *a, rl_call_t *c, int rc) {
    detach_call(a, c);
    c->cancelled = 1;
    rl_call_t *outer = a->current;
    a->current = c;
    if (rl_acquire_op_cancel(&c->u.acq, rc) == RL_STEP_DONE) { /* nothing to undo: answered from the loop */
        c->answered = 1;
        rl_ready_push(a, c);
    }
    a->current = outer;
}

void rl_async_release_all(redlock_async_t *a) {
    a->fire_and_forget = 1;
    while (a->pending) {
        rl_call_t *c = a->pending;
        detach_call(a, c);
        if (c->kind == RL_CALL_ACQUIRE && !c->cancelled) /* a clean-up, if it needs one, goes out ownerless */
            rl_acquire_op_cancel(&c->u.acq, REDLOCK_ERR_CANCELLED);
        if (c->kind == RL_CALL_AUTOEXTEND) {
            if (c->lock) c->lock->autoext = NULL;
            rl_call_recycle(a, c);
            continue;
        }
        c->u.op.rc = REDLOCK_ERR_CANCELLED;
        rl_call_complete(a, c, a->ctx.clock());
    }
    a->fire_and_forget = 0;
}

/* Writes what is queued for the nodes, waiting at most op_timeout_ms for
 * sockets to take it: releases sent while freeing must leave before the
 * sockets close. */
static void flush_before_close(redlock_async_t *a) {
    uint64_t end = a->ctx.clock() + (uint64_t)a->ctx.opt.op_timeout_ms * 1000u;
    a->ns.closing_now = 1; /* (no WAIT answer will be read: nothing is held for one) */
    for (;;) {
        uint64_t now = a->ctx.clock();
        rl_nodes_flush(&a->ns, now);
        struct pollfd p[256];
        nfds_t k = 0;
        for (size_t i = 0; i < a->ns.nall && k < 256; i++) {
            rl_conn_t *c = a->ns.all[i];
            if (c->state == RL_CONN_READY && rl_buf_pending(&c->out))
                p[k++] = (struct pollfd){.fd = c->fd, .events = POLLOUT, .revents = 0};
        }
        if (k == 0 || now >= end) return;
        poll(p, k, (int)((end - now + 999u) / 1000u));
    }
}

void rl_async_teardown(redlock_async_t *a) {
    if (a->ns.n) flush_before_close(a); /* (a failed redlock_async_new has no nodes, maybe no clock) */
    for (redlock_lock_t *l = a->locks; l; l = l->held_next) l->owner = NULL, l->registered = 0; /* detached */
    for (size_t k = 0; k < a->ns.nall; k++) announce_conn(a, a->ns.all[k], -1, 0);
    if (a->wake_rd >= 0) announce(a, &a->wake_io, -1, 0);
    for (size_t k = 0; k < a->subs.ns.nall; k++) announce_conn(a, a->subs.ns.all[k], -1, 0);
    if (a->timer_at && a->hooks.clear_timer) a->hooks.clear_timer(a->hooks.data);
    if (a->hooked && a->hooks.cleanup) a->hooks.cleanup(a->hooks.data);
    rl_nodes_on_close(&a->ns, NULL, NULL);
    rl_nodes_on_close(&a->subs.ns, NULL, NULL);
    rl_nodes_destroy(&a->ns);
    rl_subs_destroy(&a->subs);
    if (a->wake_rd >= 0) close(a->wake_rd);
    if (a->wake_wr >= 0) close(a->wake_wr);
    while (a->pool) {
        rl_call_t *c = a->pool;
        a->pool = c->next;
        free(c->name);
        free(c->free_slots);
        free(c->room);
        free(c);
    }
    rl_rooms_free(a);
    free(a->heap);
    rl_ctx_destroy(&a->ctx);
    free(a);
}

/* ctx.unhold of the handle: a lock freed by the caller stops its
 * auto-extension, and calls pending on it forget it. */
static int unhold_async(redlock_lock_t *lock) {
    redlock_async_t *a = (redlock_async_t *)lock->owner;
    if (lock->autoext) rl_async_autoextend_stop(a, lock);
    rl_async_lock_drop(a, lock);
    for (rl_call_t *c = a->pending; c; c = c->next)
        if (c->lock == lock) c->lock = NULL;
    return 0;
}

/* ctx.queue_moved of the handle: the call of op looks again (a new head
 * starts contending, a woken head attempts) if it waits on the heap. */
static void queue_moved(redlock_t *ctx, rl_acquire_op_t *op) {
    redlock_async_t *a = (redlock_async_t *)ctx;
    rl_call_t *c = op->op.waiter;
    if (a->dead || !c || c->heap_at == RL_NOT_IN_HEAP || !rl_acquire_op_in_line(op)) return;
    rl_heap_remove(a, c);
    rl_ready_push(a, c);
}

/* ctx.channel of the handle: counts a waiter in or out of res's channel. */
static void channel_async(redlock_t *ctx, const char *res, size_t len, int join) {
    redlock_async_t *a = (redlock_async_t *)ctx;
    rl_subs_waiter(&a->subs, res, len, join, ctx->clock()); /* (out of memory: the waiter polls) */
}

/* subs' released hook: the head waiter of res attempts now. */
static void released(void *arg, const char *res, size_t len, int announced, const char *next, size_t nlen) {
    redlock_async_t *a = arg;
    rl_waitq_heard(&a->ctx, res, len, announced, next, nlen);
}

/* Sets up the subscriber connections (none opens before the first wait). */
static int subs_init(redlock_async_t *a, const rl_nodes_config_t *cfg) {
    rl_uri_t uris[REDLOCK_MAX_NODES];
    int rc = rl_ctx_parse_uris(&a->ctx, uris);
    if (rc == REDLOCK_OK) rc = rl_subs_init(&a->subs, uris, a->ctx.opt.n_nodes, cfg, a->wake_wr);
    if (rc != REDLOCK_OK) return rc;
    a->subs.released = released;
    a->subs.arg = a;
    a->subs.line_id = a->ctx.line_id;
    rl_nodes_on_close(&a->subs.ns, fd_closing, a);
    a->ctx.channel = channel_async;
    return REDLOCK_OK;
}

int rl_async_init(redlock_async_t *a, const redlock_options_t *opt, char *err, size_t n) {
    a->wake_rd = a->wake_wr = -1;
    a->wake_io.fd = -1;
    int rc = rl_ctx_init(&a->ctx, opt, err, n);
    if (rc) return rc;
    a->ctx.send = send_async;
    a->ctx.unhold = unhold_async;
    a->ctx.queue_moved = queue_moved;
    a->ctx.is_async = 1;
    a->ctx.pool_max = UINT32_MAX; /* as many as were ever held at once: a warm loop allocates nothing */
    int fds[2];
    rl_uri_t uris[REDLOCK_MAX_NODES];
    rl_nodes_config_t cfg;
    rl_ctx_nodes_config(&a->ctx, &cfg);
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) return REDLOCK_ERR_NOMEM;
    a->wake_rd = fds[0];
    a->wake_wr = fds[1];
    if ((rc = rl_ctx_parse_uris(&a->ctx, uris)) != REDLOCK_OK) return rc;
    if ((rc = rl_nodes_init(&a->ns, uris, a->ctx.opt.n_nodes, &cfg, a->wake_wr)) != REDLOCK_OK) return rc;
    a->ns.round_done = round_done;
    a->ns.done_arg = a;
    rl_nodes_on_close(&a->ns, fd_closing, a);
    a->ctx.ns = &a->ns;
    return subs_init(a, &cfg);
}
