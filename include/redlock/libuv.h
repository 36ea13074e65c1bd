/* redlock/libuv.h -- drives a redlock_async_t from a libuv loop.
 *
 * Header-only: include it in the program that owns the loop and link that
 * program with libuv (-luv); libredlock itself does not depend on libuv.
 *
 *     redlock_async_t *a;
 *     redlock_async_new(&a, &opt);
 *     redlock_libuv_attach(a, uv_default_loop());
 *     redlock_async_acquire(a, "res", 2000, 1000, on_acquired, ctx);
 *     uv_run(uv_default_loop(), UV_RUN_DEFAULT);
 *
 * The adapter owns one uv_timer_t and one uv_poll_t per file descriptor the
 * handle asks to watch. redlock_async_free() closes them all; their memory
 * is released by libuv's close callbacks, so the loop must run (at least
 * one more iteration) after the handle is freed. Freeing the handle from
 * one of its own callbacks is fine: once nothing else keeps the loop alive,
 * uv_run() returns by itself.
 *
 * Like the handle, the adapter belongs to the loop's thread.
 */
#ifndef REDLOCK_LIBUV_H
#define REDLOCK_LIBUV_H

#include <stdlib.h>
#include <uv.h>

#include <redlock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Interest bits of one watched descriptor. */
#define REDLOCK_LIBUV_READ 1
#define REDLOCK_LIBUV_WRITE 2

struct redlock_libuv_adapter;

/* One descriptor: its poll handle and what the handle wants to know. The
 * struct outlives its use: after uv_close() it waits for the close callback,
 * marked `closing`, so a poll callback still running can see that it ended. */
typedef struct redlock_libuv_watch {
    uv_poll_t poll;
    struct redlock_libuv_adapter *ad;
    int fd;
    int interest; /* REDLOCK_LIBUV_READ | REDLOCK_LIBUV_WRITE */
    int closing;  /* uv_close() called; freed by the close callback */
} redlock_libuv_watch_t;

typedef struct redlock_libuv_adapter {
    redlock_async_t *a;
    uv_loop_t *loop;
    uv_timer_t timer;
    redlock_libuv_watch_t **w; /* live watches (not closing), in no order */
    size_t n, cap;
    size_t handles; /* uv handles not yet through their close callback (timer included) */
    int closed;     /* cleanup ran: the handle is gone, call nothing more on it */
} redlock_libuv_adapter_t;

/* Frees the adapter once cleanup has run and the last handle it owned has
 * been through its close callback. */
static inline void redlock_libuv_maybe_free_(redlock_libuv_adapter_t *ad) {
    if (ad->closed && ad->handles == 0) free(ad);
}

/* Close callback of a descriptor's poll handle: the watch may go now. */
static inline void redlock_libuv_watch_closed_(uv_handle_t *h) {
    redlock_libuv_watch_t *w = (redlock_libuv_watch_t *)h->data;
    redlock_libuv_adapter_t *ad = w->ad;
    free(w);
    ad->handles--;
    redlock_libuv_maybe_free_(ad);
}

/* Close callback of the timer. */
static inline void redlock_libuv_timer_closed_(uv_handle_t *h) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)h->data;
    ad->handles--;
    redlock_libuv_maybe_free_(ad);
}

/* The live watch of fd, or NULL. */
static inline redlock_libuv_watch_t *redlock_libuv_find_(redlock_libuv_adapter_t *ad, int fd) {
    for (size_t i = 0; i < ad->n; i++)
        if (ad->w[i]->fd == fd) return ad->w[i];
    return NULL;
}

/* Stops w's poll, takes it out of the live table and closes its handle;
 * the memory goes in the close callback. */
static inline void redlock_libuv_retire_(redlock_libuv_adapter_t *ad, redlock_libuv_watch_t *w) {
    for (size_t i = 0; i < ad->n; i++) {
        if (ad->w[i] == w) {
            ad->w[i] = ad->w[--ad->n];
            break;
        }
    }
    w->closing = 1;
    w->interest = 0;
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, redlock_libuv_watch_closed_);
}

/* Poll callback: hands readiness to the redlock handle. A readable and
 * writable descriptor gets handle_read first; what that read did may have
 * dropped the write interest, retired this watch (the fd may even be open
 * again as another socket, with another watch) or freed the whole handle,
 * so the write half runs only if this very watch still wants it. On a poll
 * error libuv has stopped the poll: the handle is told as if the fd were
 * ready for what it watches (its read or write then meets the error), and
 * the poll is started again if the watch is still wanted. */
static inline void redlock_libuv_on_poll_(uv_poll_t *p, int status, int events) {
    redlock_libuv_watch_t *w = (redlock_libuv_watch_t *)p->data;
    redlock_libuv_adapter_t *ad = w->ad;
    if (w->closing || ad->closed) return;
    int fd = w->fd;
    if (status < 0)
        events = (w->interest & REDLOCK_LIBUV_READ ? UV_READABLE : 0) |
                 (w->interest & REDLOCK_LIBUV_WRITE ? UV_WRITABLE : 0);
    if ((events & UV_READABLE) && (w->interest & REDLOCK_LIBUV_READ)) {
        redlock_async_handle_read(ad->a, fd);
        if (w->closing || ad->closed) return; /* only flags are read: memory waits for close callbacks */
    }
    if ((events & UV_WRITABLE) && (w->interest & REDLOCK_LIBUV_WRITE)) {
        redlock_async_handle_write(ad->a, fd);
        if (w->closing || ad->closed) return;
    }
    if (status < 0 && w->interest) {
        int ev = (w->interest & REDLOCK_LIBUV_READ ? UV_READABLE : 0) |
                 (w->interest & REDLOCK_LIBUV_WRITE ? UV_WRITABLE : 0);
        uv_poll_start(&w->poll, ev, redlock_libuv_on_poll_);
    }
}

/* Timer callback. The handle may be freed inside; nothing is touched after. */
static inline void redlock_libuv_on_timer_(uv_timer_t *t) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)t->data;
    if (!ad->closed) redlock_async_handle_timer(ad->a);
}

/* Sets the interest of fd to `interest` (both bits may change): starts a
 * watch for a new descriptor, updates the poll of a known one, and retires
 * it when nothing is left. A descriptor libuv cannot poll (or memory
 * running out) goes unwatched; the handle's own timeouts then end the calls
 * that needed it. */
static inline void redlock_libuv_set_interest_(redlock_libuv_adapter_t *ad, int fd, int interest) {
    if (ad->closed) return;
    redlock_libuv_watch_t *w = redlock_libuv_find_(ad, fd);
    if (!w) {
        if (!interest) return;
        if (ad->n == ad->cap) {
            size_t cap = ad->cap ? ad->cap * 2 : 8;
            redlock_libuv_watch_t **nw = (redlock_libuv_watch_t **)realloc(ad->w, cap * sizeof *nw);
            if (!nw) return;
            ad->w = nw;
            ad->cap = cap;
        }
        w = (redlock_libuv_watch_t *)calloc(1, sizeof *w);
        if (!w) return;
        if (uv_poll_init(ad->loop, &w->poll, fd) != 0) {
            free(w); /* never registered with the loop: nothing to close */
            return;
        }
        w->poll.data = w;
        w->ad = ad;
        w->fd = fd;
        ad->handles++;
        ad->w[ad->n++] = w;
    }
    if (!interest) {
        redlock_libuv_retire_(ad, w);
        return;
    }
    w->interest = interest;
    int ev = (interest & REDLOCK_LIBUV_READ ? UV_READABLE : 0) | (interest & REDLOCK_LIBUV_WRITE ? UV_WRITABLE : 0);
    if (uv_poll_start(&w->poll, ev, redlock_libuv_on_poll_) != 0) redlock_libuv_retire_(ad, w);
}

/* The interest fd has now (0 when unwatched). */
static inline int redlock_libuv_interest_(redlock_libuv_adapter_t *ad, int fd) {
    redlock_libuv_watch_t *w = redlock_libuv_find_(ad, fd);
    return w ? w->interest : 0;
}

/* Hook: watch fd for reading. */
static inline void redlock_libuv_add_read_(void *data, int fd) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    redlock_libuv_set_interest_(ad, fd, redlock_libuv_interest_(ad, fd) | REDLOCK_LIBUV_READ);
}

/* Hook: stop watching fd for reading. */
static inline void redlock_libuv_del_read_(void *data, int fd) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    redlock_libuv_set_interest_(ad, fd, redlock_libuv_interest_(ad, fd) & ~REDLOCK_LIBUV_READ);
}

/* Hook: watch fd for writing. */
static inline void redlock_libuv_add_write_(void *data, int fd) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    redlock_libuv_set_interest_(ad, fd, redlock_libuv_interest_(ad, fd) | REDLOCK_LIBUV_WRITE);
}

/* Hook: stop watching fd for writing. */
static inline void redlock_libuv_del_write_(void *data, int fd) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    redlock_libuv_set_interest_(ad, fd, redlock_libuv_interest_(ad, fd) & ~REDLOCK_LIBUV_WRITE);
}

/* Hook: one redlock_async_handle_timer() call in ms milliseconds, replacing
 * any earlier request (uv_timer_start restarts a running timer). */
static inline void redlock_libuv_set_timer_(void *data, uint64_t ms) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    if (!ad->closed) uv_timer_start(&ad->timer, redlock_libuv_on_timer_, ms, 0);
}

/* Hook: cancel the pending timer request. */
static inline void redlock_libuv_clear_timer_(void *data) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    if (!ad->closed) uv_timer_stop(&ad->timer);
}

/* Hook, from redlock_async_free(): stops and closes every handle the adapter
 * owns. The adapter itself is freed by the last close callback, so a poll
 * callback that is still on the stack can read its flags safely. */
static inline void redlock_libuv_cleanup_(void *data) {
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)data;
    if (ad->closed) return;
    while (ad->n) redlock_libuv_retire_(ad, ad->w[ad->n - 1]);
    free(ad->w);
    ad->w = NULL;
    ad->cap = 0;
    uv_timer_stop(&ad->timer);
    ad->closed = 1;
    ad->a = NULL;
    uv_close((uv_handle_t *)&ad->timer, redlock_libuv_timer_closed_);
}

/* Attaches handle a to loop: from now on the loop watches the handle's
 * descriptors and timer and calls it back. Call it once, before the first
 * call on a, from the loop's thread. Returns REDLOCK_OK, REDLOCK_ERR_INVALID
 * (NULL argument, or hooks already set on a) or REDLOCK_ERR_NOMEM. On an
 * error nothing stays attached (a timer handle made here is closed, and
 * released when the loop next runs). */
static inline int redlock_libuv_attach(redlock_async_t *a, uv_loop_t *loop) {
    if (!a || !loop) return REDLOCK_ERR_INVALID;
    redlock_libuv_adapter_t *ad = (redlock_libuv_adapter_t *)calloc(1, sizeof *ad);
    if (!ad) return REDLOCK_ERR_NOMEM;
    ad->a = a;
    ad->loop = loop;
    if (uv_timer_init(loop, &ad->timer) != 0) {
        free(ad);
        return REDLOCK_ERR_INVALID;
    }
    ad->timer.data = ad;
    ad->handles = 1;
    redlock_async_hooks_t hooks;
    hooks.data = ad;
    hooks.add_read = redlock_libuv_add_read_;
    hooks.del_read = redlock_libuv_del_read_;
    hooks.add_write = redlock_libuv_add_write_;
    hooks.del_write = redlock_libuv_del_write_;
    hooks.set_timer = redlock_libuv_set_timer_;
    hooks.clear_timer = redlock_libuv_clear_timer_;
    hooks.cleanup = redlock_libuv_cleanup_;
    int rc = redlock_async_set_hooks(a, &hooks);
    if (rc != REDLOCK_OK) redlock_libuv_cleanup_(ad);
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* REDLOCK_LIBUV_H */
