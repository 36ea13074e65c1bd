/* engine.c -- the blocking driver: a leader/follower poll loop over the
 * protocol core (core/nodeset.c), shared by every thread of one redlock_t
 * (see engine.h). Every function here runs with e->mu held, except the
 * poll() call itself and the writes lent before it (wire.h), which the
 * leader makes with the mutex released, and the wake-ups of sleeping
 * followers, which are posted after it is released (unlock_and_wake): a
 * woken follower whose round is done leaves without taking the mutex, so
 * it never wakes only to block on it. */
#define _GNU_SOURCE /* pipe2: the wake pipe is close-on-exec from the start */
#include "engine.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cluster.h"
#include "nodeset.h"
#include "pollset.h"
#include "wire.h"

/* A thread waiting in rl_engine_run for its round (on its stack). */
typedef struct rl_waiter {
    rl_round_t *r;
    uint32_t bit;                  /* its bit of the futex bitset on e->wake_gen (0: none yet) */
    int own_bit;                   /* ... taken from e->free_bits, given back on leaving */
    _Atomic int posted;            /* set once e->mu is released; the poster never
                                    * touches the waiter after setting it */
    int wake;                      /* RL_WAKE_DONE or RL_WAKE_LEAD */
    int linked;                    /* on the engine's waiters list */
    struct rl_waiter *next, *prev; /* waiters list, or the list of wake-ups to post */
} rl_waiter_t;

struct rl_engine {
    pthread_mutex_t mu;
    rl_nodes_t ns;
    int leader;                   /* 1 while a thread drives the poll loop */
    int wake_rd, wake_wr;         /* self-pipe that interrupts the leader's poll */
    int wake_pending;             /* a byte is in (or on its way to) the wake pipe */
    int wake_write;               /* the thread releasing e->mu must write that byte */
    rl_waiter_t *waiters, *wtail; /* sleeping followers, oldest first */
    rl_waiter_t *woken;           /* unlinked from waiters, to post once e->mu is released */
    _Atomic uint32_t wake_gen;    /* futex word the followers sleep on, bumped by each wake */
    _Atomic uint32_t free_bits;   /* futex bitset bits no sleeping follower holds */
    rl_pollset_t ps;              /* the leader's poll array */
    rl_wire_t wire;               /* the leader's writes outside the mutex */
    rl_pollset_t idle_ps;         /* the idle driver's: closed connections and its eventfd */
    /* the idle driver (see "between calls" below) */
    pthread_t idle_th;
    int idle_fd;             /* eventfd: a kick, or the order to stop */
    int idle_started;        /* the thread runs */
    int idle_stop;           /* it is to end */
    uint64_t idle_until;     /* it looks again by then at the latest (UINT64_MAX: when kicked) */
    int idle_leading;        /* it holds the leader role */
    _Atomic uint64_t act_us; /* when a caller last took or left the leader role (ns.cfg.clock):
                              * read by the sleeping driver without the mutex */
    int ready;               /* set up whole (rl_engine_new succeeded) */
};

/* Why a sleeping follower was woken. */
enum { RL_WAKE_NONE = 0, RL_WAKE_DONE, RL_WAKE_LEAD };

static void kick_idle(rl_engine_t *e);

/* ---------------------------------------------------------------- waiters */

/* Appends w to the waiters list (the tail is the newest). */
static void link_waiter(rl_engine_t *e, rl_waiter_t *w) {
    w->wake = RL_WAKE_NONE;
    w->next = NULL;
    w->prev = e->wtail;
    if (e->wtail)
        e->wtail->next = w;
    else
        e->waiters = w;
    e->wtail = w;
    w->linked = 1;
}

/* Removes w from the waiters list if it is there. */
static void unlink_waiter(rl_engine_t *e, rl_waiter_t *w) {
    if (!w->linked) return;
    if (w->prev)
        w->prev->next = w->next;
    else
        e->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        e->wtail = w->prev;
    w->next = w->prev = NULL;
    w->linked = 0;
}

/* Unlinks the sleeping follower w and queues its wake-up (reason why);
 * the post happens in unlock_and_wake, after e->mu is released. */
static void queue_wake(rl_engine_t *e, rl_waiter_t *w, int why) {
    unlink_waiter(e, w);
    w->wake = why;
    w->next = e->woken;
    e->woken = w;
}

/* The core decided round r: if its thread sleeps as a follower, queue
 * its wake-up. */
static void round_done(void *arg, rl_round_t *r) {
    rl_waiter_t *w = r->owner;
    if (w && w->linked) queue_wake(arg, w, RL_WAKE_DONE);
}

/* Releases e->mu, then writes the wake pipe if asked to and posts every
 * queued wake-up: all of them with one futex call, so that the first woken
 * thread cannot preempt the poster before it has posted the rest. A posted
 * waiter may be gone at once, so it is read first and not touched after. */
static void unlock_and_wake(rl_engine_t *e) {
    rl_waiter_t *w = e->woken;
    int write_pipe = e->wake_write;
    e->woken = NULL;
    e->wake_write = 0;
    pthread_mutex_unlock(&e->mu);
    if (write_pipe) {
        ssize_t n = write(e->wake_wr, "x", 1);
        (void)n;
    }
    uint32_t mask = 0;
    while (w) {
        rl_waiter_t *next = w->next;
        mask |= w->bit;
        atomic_store_explicit(&w->posted, 1, memory_order_release);
        w = next;
    }
    if (mask) {
        atomic_fetch_add(&e->wake_gen, 1);
        syscall(SYS_futex, &e->wake_gen, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, mask);
    }
}

/* Takes a bit of the wake word's bitset for waiter w: its own while one is
 * free, else one shared (whose holders may wake for nothing and sleep again). */
static void take_bit(rl_engine_t *e, rl_waiter_t *w) {
    uint32_t f = atomic_load_explicit(&e->free_bits, memory_order_relaxed);
    while (f) {
        uint32_t b = f & (~f + 1u);
        if (atomic_compare_exchange_weak(&e->free_bits, &f, f & ~b)) {
            w->bit = b;
            w->own_bit = 1;
            return;
        }
    }
    w->bit = 1u;
    w->own_bit = 0;
}

/* Gives w's bit back. */
static void give_bit(rl_engine_t *e, rl_waiter_t *w) {
    if (w->own_bit) atomic_fetch_or(&e->free_bits, w->bit);
}

/* -------------------------------------------------------------- the loop */

/* One turn of the leader's loop (e->mu held, released during the writes
 * and the poll): write, wait for the sockets or the next deadline, read, judge
 * deadlines. The I/O comes first and deadlines after, so a reply (or a
 * finished connect) that arrived while no thread was polling is read
 * before anyone is declared late. */
static void turn(rl_engine_t *e) {
    {
        uint64_t now = e->ns.cfg.clock();
        rl_wire_lend(&e->wire, &e->ns);
        rl_nodes_flush(&e->ns, now); /* what was not lent: TLS, held for replication, a full socket */
        nfds_t np = rl_pollset_build(&e->ps, &e->ns, e->wake_rd);
        uint64_t next = rl_nodes_next_us(&e->ns);
        if (next > now + 1000000u) next = now + 1000000u; /* nothing due: look again within a second */
        /* whole ms, rounded up: a round's grace (a few RTTs) lasts at least 1 ms,
         * which a loaded machine needs for a refusal's reason to settle */
        int timeout = next <= now ? 0 : (int)((next - now + 999u) / 1000u);
        unlock_and_wake(e);
        if (rl_wire_write(&e->wire)) timeout = 0; /* a full socket: next turn watches it for POLLOUT */
        int nready = np ? poll(e->ps.pfd, np, timeout) : (usleep(1000), 0); /* (no memory: look again soon) */
        pthread_mutex_lock(&e->mu);
        now = e->ns.cfg.clock();
        rl_wire_return(&e->wire, &e->ns, now);
        if (nready > 0 && e->ps.pfd[np - 1].revents) {
            char drain[64];
            while (read(e->wake_rd, drain, sizeof drain) > 0) {
            }
            e->wake_pending = 0;
            rl_nodes_lookups_ended(&e->ns, now); /* lookup threads write the pipe too */
        }
        if (nready > 0) rl_pollset_events(&e->ps, np, &e->ns, now);
        rl_nodes_expire(&e->ns, now);
    }
}

/* Drives I/O for every waiting round until r is decided. Leaves with the
 * leader role released. */
static void lead(rl_engine_t *e, rl_round_t *r) {
    e->leader = 1;
    atomic_store_explicit(&e->act_us, e->ns.cfg.clock(), memory_order_relaxed);
    while (!r->done) turn(e);
    uint64_t now = e->ns.cfg.clock();
    rl_nodes_flush(&e->ns, now); /* e.g. an EVAL fallback queued by the last replies */
    atomic_store_explicit(&e->act_us, now, memory_order_relaxed);
    e->leader = 0;
}

/* Asks for the leader's poll to be woken, so it sees newly queued output;
 * the pipe is written once e->mu is released (unlock_and_wake). */
static void wake_leader(rl_engine_t *e) {
    if (!e->leader || e->wake_pending) return;
    e->wake_pending = 1;
    e->wake_write = 1;
}

/* Sleeps until the leader posts w; returns with e->mu released and
 * w->wake saying why (DONE: the round is decided; LEAD: the role is free). */
static void sleep_round(rl_engine_t *e, rl_waiter_t *w) {
    if (!w->bit) take_bit(e, w);
    atomic_store_explicit(&w->posted, 0, memory_order_relaxed);
    link_waiter(e, w);
    unlock_and_wake(e);
    for (;;) {
        uint32_t gen = atomic_load(&e->wake_gen);
        if (atomic_load_explicit(&w->posted, memory_order_acquire)) return;
        syscall(SYS_futex, &e->wake_gen, FUTEX_WAIT_BITSET_PRIVATE, gen, NULL, NULL, w->bit);
    }
}

/* Sends r (e->mu held): a round decided at submission still has its
 * commands written (by the leader, or here). */
static void start_locked(rl_engine_t *e, rl_round_t *r) {
    uint64_t now = e->ns.cfg.clock();
    rl_nodes_start(&e->ns, r, now);
    if (e->leader && e->idle_leading) /* written now: the hand-over of the role overlaps the round trip */
        rl_nodes_flush(&e->ns, now);
    if (e->leader)
        wake_leader(e);
    else if (r->done)
        rl_nodes_flush(&e->ns, now);
}

/* Waits until r (started) is decided, sleeping as a follower or leading
 * the loop; called with e->mu held, returns with it released. */
static void wait_locked(rl_engine_t *e, rl_round_t *r) {
    rl_waiter_t w = {.r = r};
    r->owner = &w;
    if (!r->done && e->leader) {
        for (;;) {
            sleep_round(e, &w);
            if (w.wake == RL_WAKE_DONE) { /* decided: leave without the mutex */
                give_bit(e, &w);
                return;
            }
            pthread_mutex_lock(&e->mu); /* handed the leader role */
            if (r->done || !e->leader) break;
            /* a caller that arrived meanwhile took the role: sleep again */
        }
    }
    if (!r->done) lead(e, r);
    /* Whoever leaves with no leader left hands the role to the oldest
     * waiter, or what is still under way to the idle driver. */
    if (!e->leader && e->waiters)
        queue_wake(e, e->waiters, RL_WAKE_LEAD);
    else
        kick_idle(e);
    r->owner = NULL;
    unlock_and_wake(e);
    give_bit(e, &w);
}

void rl_engine_run(rl_engine_t *e, rl_round_t *r) {
    pthread_mutex_lock(&e->mu);
    r->owner = NULL;
    start_locked(e, r);
    wait_locked(e, r);
}

void rl_engine_start(rl_engine_t *e, rl_round_t *r) {
    pthread_mutex_lock(&e->mu);
    r->owner = NULL; /* nobody sleeps on it yet: rl_engine_wait sets its waiter */
    start_locked(e, r);
    kick_idle(e);
    unlock_and_wake(e);
}

void rl_engine_wait(rl_engine_t *e, rl_round_t *r) {
    pthread_mutex_lock(&e->mu);
    wait_locked(e, r);
}

/* -------------------------------------------------------- between calls */

/* A call returns as soon as its round is decided, often with requests
 * still under way: the stragglers of a round decided at its quorum (and
 * their NOSCRIPT -> EVAL fallbacks), a clean-up sent unwaited, a probe of
 * a suspect node, a connect, a slot map. Nothing of that may wait for the
 * caller's next call, which may never come. So a thread of the engine's
 * own, the idle driver, takes the leader role once no caller has led for
 * RL_IDLE_AFTER_US while such work is under way, and turns the loop until
 * that work is done; it sleeps in between, waking for the next probe or
 * timed close. The short wait keeps it out of the way of a program that
 * calls again at once: the next call drives the same I/O itself, with no
 * thread hand-off, and the sleeping driver sees that from e->act_us
 * without taking the mutex. A caller that arrives while the driver leads
 * writes its commands at once and gets the role back at the driver's next
 * turn (its poll is woken), so the hand-over overlaps the round trip. The
 * thread starts the first time it has something to do. */
#define RL_IDLE_AFTER_US 1000u

/* The idle driver's body: leads while work is under way and no caller
 * waits for the role (e->mu held), then hands the role on. */
static void lead_idle(rl_engine_t *e) {
    e->leader = e->idle_leading = 1;
    while (!e->idle_stop && !e->waiters && rl_nodes_busy(&e->ns)) turn(e);
    rl_nodes_flush(&e->ns, e->ns.cfg.clock());
    e->leader = e->idle_leading = 0;
    if (e->waiters) queue_wake(e, e->waiters, RL_WAKE_LEAD);
}

/* When the idle driver is next to look (e->mu held): an instant of
 * ns.cfg.clock at or before now when it is to lead at once, UINT64_MAX
 * when only a kick calls for it. */
static uint64_t idle_due(rl_engine_t *e, uint64_t now) {
    uint64_t act = atomic_load_explicit(&e->act_us, memory_order_relaxed);
    if (e->leader) return now + RL_IDLE_AFTER_US;
    if (rl_nodes_busy(&e->ns)) return act + RL_IDLE_AFTER_US;
    return rl_nodes_next_us(&e->ns);
}

/* What woke a sleeping idle driver (idle_nap). */
enum { RL_NAP_HUP = 1, RL_NAP_WAKE = 2 };

/* Sleeps, without the mutex, until a kick, until a node closes one of the
 * connections of e->idle_ps or the wake pipe has news (np entries: the
 * connections, then the wake pipe and the eventfd; np == 1: the eventfd
 * alone), or until `until` (ns.cfg.clock); past it, sleeps on while a
 * caller took or left the role less than RL_IDLE_AFTER_US ago (that
 * caller drives the I/O, or just did). Returns RL_NAP_* flags. */
static int idle_nap(rl_engine_t *e, struct pollfd *pfd, size_t np, uint64_t until) {
    for (;;) {
        uint64_t now = e->ns.cfg.clock();
        if (now >= until) {
            uint64_t act = atomic_load_explicit(&e->act_us, memory_order_relaxed);
            if (now >= act + RL_IDLE_AFTER_US) return 0;
            until = act + RL_IDLE_AFTER_US;
        }
        uint64_t wait_us = until == UINT64_MAX ? 0 : until - now;
        struct timespec ts = rl_timespec_us(wait_us);
        if (ppoll(pfd, np, until == UINT64_MAX ? NULL : &ts, NULL) <= 0) continue;
        if (pfd[np - 1].revents) {
            uint64_t v;
            ssize_t n = read(e->idle_fd, &v, sizeof v);
            (void)n;
        }
        if (np == 1) return 0;
        int why = pfd[np - 2].revents ? RL_NAP_WAKE : 0;
        for (size_t j = 0; j + 2 < np; j++)
            if (pfd[j].revents) why |= RL_NAP_HUP;
        return why;
    }
}

/* A node closed a connection the idle driver watched (e->mu held, no
 * leader): read what is left and its end, so the connection is closed now
 * (a Sentinel group's asks its sentinels again) rather than failing the
 * next call's request. np: the entries of e->idle_ps (see idle_nap). */
static void idle_hangups(rl_engine_t *e, size_t np) {
    for (size_t j = 0; j + 2 < np; j++)
        if (e->idle_ps.pfd[j].revents) e->idle_ps.pfd[j].revents |= POLLIN;
    rl_pollset_events(&e->idle_ps, np - 1, &e->ns, e->ns.cfg.clock());
}

/* The wake pipe has news for the idle driver (e->mu held, no leader): a
 * lookup ended or a Sentinel group's master changed; acted on now, not at
 * the next call. */
static void idle_news(rl_engine_t *e) {
    char drain[64];
    while (read(e->wake_rd, drain, sizeof drain) > 0) {
    }
    e->wake_pending = 0;
    rl_nodes_lookups_ended(&e->ns, e->ns.cfg.clock());
}

/* The idle driver's thread. */
static void *idle_main(void *arg) {
    rl_engine_t *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->idle_stop) {
        uint64_t now = e->ns.cfg.clock();
        if (!e->leader) {
            rl_nodes_expire(&e->ns, now); /* a probe or a close that fell due */
            rl_nodes_flush(&e->ns, now);
        }
        uint64_t until = idle_due(e, now);
        if (!e->leader && !e->waiters && until <= now) {
            lead_idle(e);
            atomic_store_explicit(&e->act_us, e->ns.cfg.clock(), memory_order_relaxed);
            unlock_and_wake(e); /* (a handed role, a woken round: posted now) */
            pthread_mutex_lock(&e->mu);
            continue;
        }
        e->idle_until = until;
        /* while a caller leads, its poll sees a closed connection: only the eventfd then */
        struct pollfd one = {.fd = e->idle_fd, .events = POLLIN, .revents = 0}, *pfd = &one;
        size_t np = e->leader ? 0 : rl_pollset_build_hup(&e->idle_ps, &e->ns, e->wake_rd, e->idle_fd);
        if (np)
            pfd = e->idle_ps.pfd;
        else
            np = 1;
        unlock_and_wake(e);
        int why = idle_nap(e, pfd, np, until);
        pthread_mutex_lock(&e->mu);
        if ((why & RL_NAP_WAKE) && !e->leader) idle_news(e);
        if ((why & RL_NAP_HUP) && !e->leader) idle_hangups(e, np);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* Writes the idle driver's eventfd: it looks again at once. */
static void idle_poke(rl_engine_t *e) {
    const uint64_t one = 1;
    ssize_t n = write(e->idle_fd, &one, sizeof one);
    (void)n;
}

/* A caller leaves the loop with no leader (e->mu held): when work is under
 * way or timed work comes before the idle driver would look, start it, or
 * wake a driver that would look too late. While a program calls steadily
 * the driver already looks every RL_IDLE_AFTER_US, so this costs nothing
 * but the first time after a quiet spell. */
static void kick_idle(rl_engine_t *e) {
    if (e->leader || e->idle_stop) return;
    uint64_t now = e->ns.cfg.clock();
    atomic_store_explicit(&e->act_us, now, memory_order_relaxed);
    uint64_t due = idle_due(e, now);
    if (due == UINT64_MAX) return;
    if (!e->idle_started) {
        if (e->idle_fd < 0) return; /* (no eventfd: the next call does the work) */
        sigset_t all, old;          /* the thread takes no signal: the program's handlers run on its threads */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        e->idle_started = pthread_create(&e->idle_th, NULL, idle_main, e) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return; /* (without a thread, the next call does the work, as it would have) */
    }
    if (due < e->idle_until) {
        e->idle_until = due; /* (one poke until it looked) */
        idle_poke(e);
    }
}

/* Stops the idle driver (e->mu not held), then drives what is still
 * under way to requests the nodes that are not suspect owe, for at most
 * op_timeout_ms: a release's stragglers reach every node that answers
 * though the program frees the handle right after its last call. */
static void idle_end(rl_engine_t *e) {
    pthread_mutex_lock(&e->mu);
    e->idle_stop = 1;
    idle_poke(e);
    if (e->leader) wake_leader(e);
    int started = e->idle_started;
    unlock_and_wake(e);
    if (started) pthread_join(e->idle_th, NULL);
    pthread_mutex_lock(&e->mu);
    uint64_t until = e->ns.cfg.clock() + (uint64_t)e->ns.cfg.op_timeout_ms * 1000u;
    e->leader = 1;
    while (rl_nodes_owed(&e->ns) && e->ns.cfg.clock() < until) turn(e);
    rl_nodes_flush(&e->ns, e->ns.cfg.clock());
    e->leader = 0;
    unlock_and_wake(e);
}

/* --------------------------------------------------------------- set-up */

int rl_engine_new(rl_engine_t **out, rl_uri_t *uris, size_t n, const rl_nodes_config_t *cfg) {
    *out = NULL;
    rl_engine_t *e = calloc(1, sizeof *e);
    int fds[2];
    if (!e || pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        free(e);
        for (size_t i = 0; i < n; i++) rl_uri_clear(&uris[i]);
        return REDLOCK_ERR_NOMEM;
    }
    e->wake_rd = fds[0];
    e->wake_wr = fds[1];
    pthread_mutex_init(&e->mu, NULL);
    e->idle_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    e->idle_until = UINT64_MAX;
    atomic_init(&e->free_bits, UINT32_MAX);
    int rc = rl_nodes_init(&e->ns, uris, n, cfg, e->wake_wr);
    e->ns.round_done = round_done;
    e->ns.done_arg = e;
    if (rc) {
        rl_engine_free(e);
        return rc;
    }
    e->ready = 1;
    *out = e;
    return REDLOCK_OK;
}

void rl_engine_free(rl_engine_t *e) {
    if (!e) return;
    if (e->ready) idle_end(e);
    rl_nodes_destroy(&e->ns); /* before the wake pipe its lookups write closes */
    close(e->wake_rd);
    close(e->wake_wr);
    pthread_mutex_destroy(&e->mu);
    if (e->idle_fd >= 0) close(e->idle_fd);
    rl_pollset_free(&e->ps);
    rl_wire_free(&e->wire);
    rl_pollset_free(&e->idle_ps);
    free(e);
}

rl_nodes_t *rl_engine_nodes(rl_engine_t *e) {
    return &e->ns;
}

size_t rl_engine_shards(rl_engine_t *e, size_t i, struct rl_shard_view *out, size_t cap) {
    pthread_mutex_lock(&e->mu);
    size_t n = e->ns.cl && e->ns.cl[i] ? rl_cluster_view(e->ns.cl[i], out, cap) : 0;
    pthread_mutex_unlock(&e->mu);
    return n;
}

int rl_engine_group(rl_engine_t *e, size_t i, rl_group_info_t *out, uint64_t *age_us) {
    pthread_mutex_lock(&e->mu);
    const rl_node_t *nd = &e->ns.nodes[i];
    int known = nd->conn.uri.sentinel && nd->group_at_us;
    if (known) {
        *out = nd->group;
        *age_us = e->ns.cfg.clock() - nd->group_at_us;
    }
    pthread_mutex_unlock(&e->mu);
    return known;
}

uint32_t rl_engine_node_lookups(rl_engine_t *e, size_t i) {
    pthread_mutex_lock(&e->mu);
    uint32_t n = e->ns.nodes[i].conn.lookups;
    pthread_mutex_unlock(&e->mu);
    return n;
}
