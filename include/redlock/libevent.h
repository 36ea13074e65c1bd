/* redlock/libevent.h -- drives a redlock_async_t from a libevent 2.1 base.
 *
 * Header-only: include it in the program that owns the event_base and link
 * that program with libevent (-levent, or -levent_core); libredlock itself
 * does not depend on libevent.
 *
 *     redlock_async_t *a;
 *     redlock_async_new(&a, &opt);
 *     redlock_libevent_attach(a, base);
 *     redlock_async_acquire(a, "res", 2000, 1000, on_acquired, ctx);
 *     event_base_dispatch(base);
 *
 * The adapter owns one timer event and one persistent event per file
 * descriptor the handle asks to watch (re-assigned when the wanted
 * directions change). redlock_async_free() deletes and frees them all; when
 * the handle is freed from inside one of its callbacks, the adapter's memory
 * goes as soon as that callback has returned to the adapter. Once nothing
 * else is pending on the base, event_base_dispatch() returns by itself.
 *
 * Like the handle, the adapter belongs to the base's thread.
 */
#ifndef REDLOCK_LIBEVENT_H
#define REDLOCK_LIBEVENT_H

#include <stdlib.h>
#include <event2/event.h>

#include <redlock.h>

#ifdef __cplusplus
extern "C" {
#endif

struct redlock_libevent_adapter;

/* One descriptor slot. A slot whose interest dropped to nothing keeps its
 * (deleted) event for the next descriptor; `gen` counts those endings, so a
 * callback can tell "still the watch I was called for" from "the slot was
 * emptied, maybe refilled for a new socket on the same fd number". */
typedef struct redlock_libevent_watch {
    struct event *ev; /* NULL until first used */
    struct redlock_libevent_adapter *ad;
    int fd;         /* -1 when the slot is free */
    short interest; /* EV_READ | EV_WRITE */
    unsigned gen;
} redlock_libevent_watch_t;

typedef struct redlock_libevent_adapter {
    redlock_async_t *a;
    struct event_base *base;
    struct event *timer;
    redlock_libevent_watch_t **w; /* slots, each allocated once, freed with the adapter */
    size_t n;
    int depth;  /* adapter callbacks currently inside redlock_async_handle_* */
    int closed; /* cleanup ran: the handle is gone, call nothing more on it */
} redlock_libevent_adapter_t;

/* Frees every event, slot and the adapter. */
static inline void redlock_libevent_destroy_(redlock_libevent_adapter_t *ad) {
    for (size_t i = 0; i < ad->n; i++) {
        if (ad->w[i]->ev) event_free(ad->w[i]->ev);
        free(ad->w[i]);
    }
    free(ad->w);
    if (ad->timer) event_free(ad->timer);
    free(ad);
}

/* Leaves a call into the handle: if the handle was freed meanwhile and no
 * outer adapter callback is still inside one, the adapter goes now. Returns
 * 1 when the adapter is closed (gone or going): the caller stops there. */
static inline int redlock_libevent_leave_(redlock_libevent_adapter_t *ad) {
    ad->depth--;
    if (!ad->closed) return 0;
    if (ad->depth == 0) redlock_libevent_destroy_(ad);
    return 1;
}

/* The slot watching fd, or NULL. */
static inline redlock_libevent_watch_t *redlock_libevent_find_(redlock_libevent_adapter_t *ad, int fd) {
    for (size_t i = 0; i < ad->n; i++)
        if (ad->w[i]->fd == fd) return ad->w[i];
    return NULL;
}

/* Event callback of a descriptor. Both directions may be ready: the read
 * half runs first, and the write half only if the same watch (same slot and
 * generation) still wants writing and the handle was not freed by the read. */
static inline void redlock_libevent_on_io_(evutil_socket_t fd, short what, void *arg) {
    redlock_libevent_watch_t *w = (redlock_libevent_watch_t *)arg;
    redlock_libevent_adapter_t *ad = w->ad;
    if (ad->closed) return;
    unsigned gen = w->gen;
    if ((what & EV_READ) && (w->interest & EV_READ)) {
        ad->depth++;
        redlock_async_handle_read(ad->a, (int)fd);
        if (redlock_libevent_leave_(ad)) return;
    }
    if ((what & EV_WRITE) && w->gen == gen && w->fd == (int)fd && (w->interest & EV_WRITE)) {
        ad->depth++;
        redlock_async_handle_write(ad->a, (int)fd);
        redlock_libevent_leave_(ad);
    }
}

/* Timer callback. */
static inline void redlock_libevent_on_timer_(evutil_socket_t fd, short what, void *arg) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)arg;
    (void)fd;
    (void)what;
    if (ad->closed) return;
    ad->depth++;
    redlock_async_handle_timer(ad->a);
    redlock_libevent_leave_(ad);
}

/* Sets the interest of fd: (re)assigns the slot's event with the new
 * directions, or deletes it and frees the slot when nothing is left. A
 * failure (memory, or an fd the backend refuses) leaves the fd unwatched;
 * the handle's own timeouts then end the calls that needed it. */
static inline void redlock_libevent_set_interest_(redlock_libevent_adapter_t *ad, int fd, short interest) {
    if (ad->closed) return;
    redlock_libevent_watch_t *w = redlock_libevent_find_(ad, fd);
    if (!w) {
        if (!interest) return;
        w = redlock_libevent_find_(ad, -1); /* a free slot */
        if (!w) {
            redlock_libevent_watch_t **nw = (redlock_libevent_watch_t **)realloc(ad->w, (ad->n + 1) * sizeof *nw);
            if (!nw) return;
            ad->w = nw;
            w = (redlock_libevent_watch_t *)calloc(1, sizeof *w);
            if (!w) return;
            w->ad = ad;
            w->fd = -1;
            ad->w[ad->n++] = w;
        }
    }
    if (w->ev) event_del(w->ev);
    if (!interest) {
        w->fd = -1;
        w->interest = 0;
        w->gen++;
        return;
    }
    short flags = (short)(interest | EV_PERSIST);
    int rc;
    if (!w->ev) {
        w->ev = event_new(ad->base, (evutil_socket_t)fd, flags, redlock_libevent_on_io_, w);
        rc = w->ev ? 0 : -1;
    } else {
        rc = event_assign(w->ev, ad->base, (evutil_socket_t)fd, flags, redlock_libevent_on_io_, w);
    }
    if (rc == 0) rc = event_add(w->ev, NULL);
    if (rc != 0) {
        w->fd = -1;
        w->interest = 0;
        w->gen++;
        return;
    }
    if (w->fd != fd) w->gen++; /* a new watch in this slot */
    w->fd = fd;
    w->interest = interest;
}

/* The interest fd has now (0 when unwatched). */
static inline short redlock_libevent_interest_(redlock_libevent_adapter_t *ad, int fd) {
    redlock_libevent_watch_t *w = redlock_libevent_find_(ad, fd);
    return w ? w->interest : 0;
}

/* Hook: watch fd for reading. */
static inline void redlock_libevent_add_read_(void *data, int fd) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    redlock_libevent_set_interest_(ad, fd, (short)(redlock_libevent_interest_(ad, fd) | EV_READ));
}

/* Hook: stop watching fd for reading. */
static inline void redlock_libevent_del_read_(void *data, int fd) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    redlock_libevent_set_interest_(ad, fd, (short)(redlock_libevent_interest_(ad, fd) & ~EV_READ));
}

/* Hook: watch fd for writing. */
static inline void redlock_libevent_add_write_(void *data, int fd) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    redlock_libevent_set_interest_(ad, fd, (short)(redlock_libevent_interest_(ad, fd) | EV_WRITE));
}

/* Hook: stop watching fd for writing. */
static inline void redlock_libevent_del_write_(void *data, int fd) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    redlock_libevent_set_interest_(ad, fd, (short)(redlock_libevent_interest_(ad, fd) & ~EV_WRITE));
}

/* Hook: one redlock_async_handle_timer() call in ms milliseconds, replacing
 * any earlier request (adding a pending timer reschedules it). */
static inline void redlock_libevent_set_timer_(void *data, uint64_t ms) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    if (ad->closed) return;
    struct timeval tv;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (long)((ms % 1000) * 1000);
    evtimer_add(ad->timer, &tv);
}

/* Hook: cancel the pending timer request. */
static inline void redlock_libevent_clear_timer_(void *data) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    if (!ad->closed) evtimer_del(ad->timer);
}

/* Hook, from redlock_async_free(): deletes every event so the base no longer
 * waits for them, and frees the adapter -- at once, or, when an adapter
 * callback is inside the handle right now, when that callback returns. */
static inline void redlock_libevent_cleanup_(void *data) {
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)data;
    if (ad->closed) return;
    ad->closed = 1;
    ad->a = NULL;
    for (size_t i = 0; i < ad->n; i++)
        if (ad->w[i]->ev) event_del(ad->w[i]->ev);
    evtimer_del(ad->timer);
    if (ad->depth == 0) redlock_libevent_destroy_(ad);
}

/* Attaches handle a to base: from now on the base watches the handle's
 * descriptors and timer and calls it back. Call it once, before the first
 * call on a, from the base's thread. Returns REDLOCK_OK, REDLOCK_ERR_INVALID
 * (NULL argument, or hooks already set on a) or REDLOCK_ERR_NOMEM; on an
 * error nothing stays attached. */
static inline int redlock_libevent_attach(redlock_async_t *a, struct event_base *base) {
    if (!a || !base) return REDLOCK_ERR_INVALID;
    redlock_libevent_adapter_t *ad = (redlock_libevent_adapter_t *)calloc(1, sizeof *ad);
    if (!ad) return REDLOCK_ERR_NOMEM;
    ad->a = a;
    ad->base = base;
    ad->timer = evtimer_new(base, redlock_libevent_on_timer_, ad);
    if (!ad->timer) {
        free(ad);
        return REDLOCK_ERR_NOMEM;
    }
    redlock_async_hooks_t hooks;
    hooks.data = ad;
    hooks.add_read = redlock_libevent_add_read_;
    hooks.del_read = redlock_libevent_del_read_;
    hooks.add_write = redlock_libevent_add_write_;
    hooks.del_write = redlock_libevent_del_write_;
    hooks.set_timer = redlock_libevent_set_timer_;
    hooks.clear_timer = redlock_libevent_clear_timer_;
    hooks.cleanup = redlock_libevent_cleanup_;
    int rc = redlock_async_set_hooks(a, &hooks);
    if (rc != REDLOCK_OK) redlock_libevent_cleanup_(ad);
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* REDLOCK_LIBEVENT_H */
