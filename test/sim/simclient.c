/* simclient.c -- the simulated clients (see sim.h). Each is a process
 * with its own drifting monotonic clock and one async handle of the
 * library, for which the simulator is the event loop: the handle's hooks
 * say which simulated fds to watch and when its timer is due, and
 * client_pump calls redlock_async_handle_read/write for every watched fd
 * that is ready. A client's actors are its callers: each runs one
 * operation at a time, as a thread of a blocking program would (the
 * handle serves them all at once): acquire a mutex, a permit or a
 * reader's or writer's lock, wait for it or not, hold it (reading and
 * writing the protected store under a mutex), extend it or let the handle
 * auto-extend it, release it or leave it to expire; sometimes an
 * unbounded wait is cancelled. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "rl.h"
#include "sim.h"

enum { A_IDLE = 0, A_ACQUIRING, A_READING, A_HOLDING, A_WRITING, A_UNCHECKED, A_EXTENDING, A_RELEASING };

uint64_t client_now(const sclient_t *c) {
    return (uint64_t)clock_local(&c->clock, S->now);
}

/* Runs the calls that follow with c's clock (and fds) as the library's. */
static sclient_t *enter(sclient_t *c) {
    sclient_t *outer = S->cur;
    S->cur = c;
    return outer;
}

/* --------------------------------------------------------------- hooks */

/* Adds fd to the set (n entries) if absent. */
static void set_add(int *set, int *n, int fd) {
    for (int i = 0; i < *n; i++)
        if (set[i] == fd) return;
    if (*n < 64) set[(*n)++] = fd;
}

/* Removes fd from the set. */
static void set_del(int *set, int *n, int fd) {
    for (int i = 0; i < *n; i++)
        if (set[i] == fd) {
            memmove(&set[i], &set[i + 1], (size_t)(*n - i - 1) * sizeof *set);
            (*n)--;
            return;
        }
}

static void h_add_read(void *d, int fd) {
    sclient_t *c = d;
    set_add(c->rd, &c->nrd, fd);
}
static void h_del_read(void *d, int fd) {
    sclient_t *c = d;
    set_del(c->rd, &c->nrd, fd);
}
static void h_add_write(void *d, int fd) {
    sclient_t *c = d;
    set_add(c->wr, &c->nwr, fd);
}
static void h_del_write(void *d, int fd) {
    sclient_t *c = d;
    set_del(c->wr, &c->nwr, fd);
}

/* The handle wants its timer in ms on its own clock. */
static void h_set_timer(void *d, uint64_t ms) {
    sclient_t *c = d;
    c->timer_gen++;
    c->timer_armed = 1;
    uint64_t at = clock_real(&c->clock, (double)client_now(c) + (double)ms * 1000.0);
    sim_push(E_TIMER, at, c->id, 0, c->timer_gen, NULL, 0);
}

/* The handle's timer is no longer wanted. */
static void h_clear_timer(void *d) {
    sclient_t *c = d;
    c->timer_gen++;
    c->timer_armed = 0;
}

/* ---------------------------------------------------------- the pump */

static void observe(sclient_t *c);

/* Calls c's handle for every watched fd that is ready (a connect's
 * outcome first), until none is, then follows its locks' deadlines. */
void client_pump(sclient_t *c) {
    if (c->paused_until > S->now || !c->a) return; /* (its heal pumps it) */
    sclient_t *outer = enter(c);
    for (int guard = 0;; guard++) {
        if (guard > 100000) {
            fprintf(stderr, "redlock-sim: seed %llu: client %d's handle keeps an fd ready forever\n",
                    (unsigned long long)S->seed, c->id);
            abort();
        }
        int fd = -1, wr = 0; /* writable first: a connect's outcome (POLLOUT) before its bytes */
        for (int i = 0; i < c->nwr && fd < 0; i++) {
            sconn_t *k = net_conn(c->wr[i]);
            if (k && net_writable(k)) fd = c->wr[i], wr = 1;
        }
        for (int i = 0; i < c->nrd && fd < 0; i++) {
            sconn_t *k = net_conn(c->rd[i]);
            if (k && net_readable(k)) fd = c->rd[i];
        }
        for (int i = 0; i < c->nrd && fd < 0 && c->notified; i++) { /* the handle's wake pipe */
            struct pollfd p = {.fd = c->rd[i], .events = POLLIN, .revents = 0};
            if (!net_conn(c->rd[i]) && poll(&p, 1, 0) == 1) fd = c->rd[i];
        }
        if (fd < 0) {
            c->notified = 0;
            break;
        }
        if (wr)
            redlock_async_handle_write(c->a, fd);
        else
            redlock_async_handle_read(c->a, fd);
    }
    observe(c);
    S->cur = outer;
}

/* ------------------------------------------------------------- actors */

/* Schedules actor t's next step at real time `at` (any earlier one is void). */
static void step_at(sactor_t *t, uint64_t at) {
    t->gen++;
    sim_push(E_ACTOR, at, t->client, t->idx, t->gen, NULL, 0);
}

/* The real time at which client c's clock reads `local` µs. */
static uint64_t real_of(const sclient_t *c, uint64_t local) {
    return clock_real(&c->clock, (double)local);
}

/* t goes idle and starts its next operation after a think time. */
static void idle(sactor_t *t) {
    t->phase = A_IDLE;
    t->lock = NULL;
    t->win = -1;
    if (!S->stopping) step_at(t, S->now + (uint64_t)rng_exp(&S->r_work, S->cfg.think_us));
}

/* The lock's window in the checker follows its deadline (an extension
 * moves it; one that passed before the extension landed starts a new
 * window) and ends when it is lost. */
static void observe(sclient_t *c) {
    for (int i = 0; i < c->n_actors; i++) {
        sactor_t *t = &c->actors[i];
        if (!t->lock || t->win < 0) continue;
        if (t->lock->lost) {
            check_close(t->win, S->now);
            t->win = -1;
            continue;
        }
        uint64_t d = t->lock->deadline_us;
        if (d == t->deadline_seen) continue;
        uint64_t old = real_of(c, t->deadline_seen);
        t->deadline_seen = d;
        if (old <= S->now)
            t->win = check_open(t->res, t->kind, c->id, t->idx, real_of(c, d), t->lock, t->win);
        else
            check_extend(t->win, real_of(c, d));
    }
}

/* Sends a protected-store operation for t's mutex. */
static void store_op(sactor_t *t, int write) {
    sop_t *op = calloc(1, sizeof *op);
    if (!op) abort();
    op->res = t->res;
    op->write = write;
    op->fence = redlock_lock_fence(t->lock);
    op->fenced = op->fence != 0;
    op->read_version = t->read_version;
    t->phase = write ? A_WRITING : A_READING;
    sim_push(E_STORE, S->now + 200 + rng_below(&S->r_net, 400), t->client, t->idx, t->gen, op, sizeof *op);
}

/* A release called back: the actor goes idle. */
static void on_released(int rc, const redlock_report_t *rep, void *arg);

/* t lets go of its lock: released (its window ends now), or, now and
 * then, abandoned to expire (its window ends at its deadline). */
static void let_go(sactor_t *t) {
    sclient_t *c = &S->clients[t->client];
    if (!S->stopping && S->cfg.scenario != SCN_WAN && rng_chance(&S->r_work, 0.03)) {
        trace_rec(T_ABANDONED, c->id, t->idx, 0, 0);
        S->cov[COV_ABANDONED]++;
        redlock_lock_free(t->lock);
        {
            idle(t);
            return;
        }
    }
    if (t->win >= 0) check_close(t->win, S->now);
    t->win = -1;
    t->phase = A_RELEASING;
    redlock_lock_t *l = t->lock;
    t->lock = NULL;
    if (redlock_async_release(c->a, l, on_released, t) != REDLOCK_OK) {
        redlock_lock_free(l);
        idle(t);
    }
}

/* A release called back: the actor goes idle. */
static void on_released(int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    sactor_t *t = arg;
    if (S->clients[t->client].redeploying) return;
    S->ops++;
    trace_rec(T_RELEASED, t->client, t->idx, rc, 0);
    idle(t);
}

/* t holds its lock for a while (real µs) before its next step. */
static void hold(sactor_t *t, uint64_t us) {
    t->phase = A_HOLDING;
    step_at(t, S->now + us);
}

/* How long t holds after acquiring or extending: mostly well within the
 * TTL, sometimes past it (the lock expires under it). */
static uint64_t hold_us(sactor_t *t) {
    if (S->cfg.hold_us) return S->cfg.hold_us;
    double ttl_us = (double)t->lock->ttl_ms * 1000.0;
    double f = rng_chance(&S->r_work, S->cfg.long_hold_p) ? 0.8 + rng_unit(&S->r_work) * 0.6
                                                          : 0.02 + rng_unit(&S->r_work) * 0.3;
    if (t->lock->autoext || t->lock->watched) f *= 3;
    return (uint64_t)(ttl_us * f);
}

/* Auto-extension gave the lock up: its window ends now. */
static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    (void)lock;
    sactor_t *t = arg;
    if (S->clients[t->client].redeploying) return; /* (its window runs to its deadline) */
    trace_rec(T_LOST, t->client, t->idx, reason, 0);
    S->cov[COV_LOST]++;
    if (t->win >= 0) check_close(t->win, S->now);
    t->win = -1;
}

/* An acquire called back: a granted lock opens a window and is held
 * (after a store read under a mutex); a refusal sends the actor idle. */
static void on_acquired(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    sactor_t *t = arg;
    sclient_t *c = &S->clients[t->client];
    if ((rc == REDLOCK_ERR_CANCELLED && S->stopping) || c->redeploying) return;
    S->ops++;
    trace_rec(T_ACQUIRED, c->id, t->idx, rc, lock ? (long long)redlock_lock_fence(lock) : 0);
    if (rc != REDLOCK_OK) {
        S->cov[COV_REFUSED]++;
        S->cov[COV_REFUSED_BY_RECORD] += rc == REDLOCK_ERR_MEMBERSHIP;
        idle(t);
        return;
    }
    S->cov[t->kind == AK_PERMIT   ? COV_PERMIT
           : t->kind == AK_READER ? COV_READER
           : t->kind == AK_WRITER ? COV_WRITER
                                  : COV_MUTEX]++;
    if (redlock_lock_fence(lock)) S->cov[COV_FENCED]++;
    if (S->cfg.scenario == SCN_WAN) {
        if (S->nlat == S->caplat &&
            !(S->lat = realloc(S->lat, (S->caplat = S->caplat ? 2 * S->caplat : 256) * sizeof *S->lat)))
            abort();
        S->lat[S->nlat++] = (double)(client_now(c) - t->call_at);
    }
    t->lock = lock;
    t->deadline_seen = lock->deadline_us;
    t->win = check_open(t->res, t->kind, c->id, t->idx, real_of(c, lock->deadline_us), lock, -1);
    if (S->stopping) {
        let_go(t);
        return;
    }
    int plain = S->cfg.scenario == SCN_WAN; /* acquire, release, nothing else */
    t->extends_left = !plain && rng_chance(&S->r_work, 0.2);
    if (!plain && rng_chance(&S->r_work, 0.15)) {
        redlock_autoextend_options_t o;
        redlock_autoextend_options_init(&o);
        if (redlock_async_autoextend_ex(c->a, lock, &o, on_lost, t) == REDLOCK_OK) S->cov[COV_AUTOEXT]++;
    }
    if (S->cfg.res[t->res].kind == RK_MUTEX && S->cfg.scenario != SCN_WAN) {
        store_op(t, 0);
        return;
    }
    hold(t, hold_us(t));
}

/* An extension called back (its new deadline is seen by observe). */
static void on_extended(int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    sactor_t *t = arg;
    if ((rc == REDLOCK_ERR_CANCELLED && S->stopping) || S->clients[t->client].redeploying) return;
    S->ops++;
    trace_rec(T_EXTENDED, t->client, t->idx, rc, 0);
    if (S->stopping) {
        let_go(t);
        return;
    }
    hold(t, hold_us(t));
}

/* Starts t's next operation on a random resource. */
static void start_op(sactor_t *t) {
    sclient_t *c = &S->clients[t->client];
    const scfg_t *g = &S->cfg;
    t->res = (int)rng_below(&S->r_work, (uint64_t)g->n_res);
    const sres_t *r = &g->res[t->res];
    uint32_t ttl = (uint32_t)rng_range(&S->r_work, g->ttl_min, g->ttl_max);
    int64_t wait = 0;
    double w = rng_unit(&S->r_work);
    if (g->scenario == SCN_WAN)
        wait = g->wan_op == WAN_WAIT ? 1000 : 0;
    else if (w < 0.5)
        wait = rng_range(&S->r_work, ttl / 2, 3 * (int64_t)ttl);
    else if (w < 0.65)
        wait = -1;
    t->waiting_cancel = wait < 0 && rng_chance(&S->r_work, 0.5);
    t->kind = r->kind == RK_SEM                                       ? AK_PERMIT
              : r->kind == RK_MUTEX                                   ? AK_MUTEX
              : g->scenario == SCN_WAN || rng_chance(&S->r_work, 0.6) ? AK_READER
                                                                      : AK_WRITER;
    t->phase = A_ACQUIRING;
    t->call_at = client_now(c);
    int rc;
    if (t->kind == AK_PERMIT)
        rc = redlock_async_acquire_permit(c->a, r->name, r->limit, ttl, wait, on_acquired, t);
    else if (t->kind == AK_READER)
        rc = redlock_async_acquire_shared(c->a, r->name, ttl, wait, on_acquired, t);
    else
        rc = redlock_async_acquire(c->a, r->name, ttl, wait, on_acquired, t);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "redlock-sim: seed %llu: acquire refused: %s\n", (unsigned long long)S->seed,
                redlock_strerror(rc));
        abort();
    }
    if (t->waiting_cancel) step_at(t, S->now + (uint64_t)rng_range(&S->r_work, 1000, 3000 * (int64_t)ttl / 2));
}

/* The protected store's write, after checking the validity left (in
 * pause-without-fencing the check may be followed by a long pause). */
static void write_phase(sactor_t *t) {
    sclient_t *c = &S->clients[t->client];
    if (!redlock_lock_valid(t->lock, S->cfg.margin_ms)) {
        let_go(t);
        return;
    } /* expired: no write */
    if (S->cfg.pause_check_write && rng_chance(&S->r_work, 0.5)) {
        uint64_t ttl_us = (uint64_t)t->lock->ttl_ms * 1000u;
        fault_pause_client(c->id, ttl_us + (uint64_t)rng_range(&S->r_work, 0, 2 * (int64_t)ttl_us));
        t->phase = A_UNCHECKED;
        {
            step_at(t, S->now);
            return;
        } /* runs when the pause ends: writes without looking again */
    }
    store_op(t, 1);
}

/* Actor t's scheduled step. */
static void actor_step(sactor_t *t) {
    sclient_t *c = &S->clients[t->client];
    switch (t->phase) {
    case A_IDLE: {
        start_op(t);
        return;
    }
    case A_ACQUIRING: /* an unbounded wait it gives up */
        S->cov[COV_CANCELS] += redlock_async_cancel(c->a, t) > 0;
        return;
    case A_HOLDING:
        if (t->extends_left > 0) {
            t->extends_left--;
            t->phase = A_EXTENDING;
            if (redlock_async_extend(c->a, t->lock, t->lock->ttl_ms, on_extended, t) == REDLOCK_OK) return;
        }
        if (S->cfg.res[t->res].kind == RK_MUTEX && S->cfg.scenario != SCN_WAN) {
            write_phase(t);
            return;
        }
        {
            let_go(t);
            return;
        }
    case A_UNCHECKED: {
        store_op(t, 1);
        return;
    }
    }
}

/* A store reply for t. */
static void store_reply(sactor_t *t, const sop_t *op) {
    if (op->write) {
        trace_rec(T_STORE_WRITE, t->client, t->idx, op->applied, (long long)S->lost_updates);
        {
            let_go(t);
            return;
        }
    }
    t->read_version = op->version;
    hold(t, hold_us(t));
}

/* A timer, an actor's step or a store reply for a client, held until a
 * pause of the client ends. */
void client_event(sev_t *e) {
    sclient_t *c = &S->clients[e->a];
    if (c->paused_until > S->now) { /* a stopped process acts when it resumes */
        sim_push(e->kind, c->paused_until, e->a, e->b, e->g, e->p, e->n);
        e->p = NULL;
        return;
    }
    sclient_t *outer = enter(c);
    if (e->kind == E_TIMER) {
        if (e->g == c->timer_gen && c->a) {
            c->timer_armed = 0;
            redlock_async_handle_timer(c->a);
        }
    } else {
        sactor_t *t = &c->actors[e->b];
        if (e->g == t->gen && !(S->stopping && e->kind == E_ACTOR)) {
            if (e->kind == E_ACTOR)
                actor_step(t);
            else if (t->lock)
                store_reply(t, e->p);
            else
                idle(t);
        }
    }
    client_pump(c);
    S->cur = outer;
}

/* ------------------------------------------------------------ life */

const char *sim_node_uri(int node) {
    static char uris[SIM_MAX_NODES][32];
    if (S->cfg.sentinel) return sentinel_uri(node);
    snprintf(uris[node], sizeof uris[node], "redis://10.0.0.%d:6379", node + 1);
    return uris[node];
}

/* The URIs of the nodes in mask into list; returns how many. In the
 * cluster scenario each Redlock node is a cluster: one URI per cluster
 * (its servers' bits all set). */
static size_t node_list(unsigned mask, const char **list) {
    size_t n = 0;
    int k = S->cfg.n_shards ? S->cfg.n_shards : 1;
    for (int i = 0; i < S->cfg.n_nodes; i += k)
        if (mask & (1u << i)) list[n++] = S->cfg.n_shards ? cluster_uri(i / k) : sim_node_uri(i);
    return n;
}

/* Options of client c's handle: OLD's nodes, NEW's, or OLD's with NEW's
 * as next nodes (a joint handle), by c->conf; lists has room for both. */
static void options(sclient_t *c, redlock_options_t *o, const char **lists) {
    const scfg_t *g = &S->cfg;
    redlock_options_init(o);
    o->nodes = lists;
    o->n_nodes = node_list(c->conf == CONF_NEW ? g->new_mask : g->old_mask, lists);
    if (c->conf == CONF_JOINT) {
        o->next_nodes = lists + SIM_MAX_NODES;
        o->n_next_nodes = node_list(g->new_mask, lists + SIM_MAX_NODES);
    }
    o->retry_delay_ms = 40;
    o->retry_jitter_ms = 20;
    o->retry_count = 5;
    o->fencing = c->fencing;
    o->max_ttl_ms = g->max_ttl_ms;
    o->quarantine = g->quarantine;
    o->min_replicas = g->min_replicas;
    o->log_level = REDLOCK_LOG_ERROR;
    if (g->scenario == SCN_WAN) o->op_timeout_ms = 200, o->connect_timeout_ms = 1000; /* (nodes up to 100 ms away) */
}

/* Makes client c's handle (with c's clock as the library's) and hooks it. */
static void make_handle(sclient_t *c) {
    const char *lists[2 * SIM_MAX_NODES];
    redlock_options_t o;
    options(c, &o, lists);
    sclient_t *outer = enter(c);
    char err[256];
    if (redlock_async_new_ex(&c->a, &o, err, sizeof err) != REDLOCK_OK) {
        fprintf(stderr, "redlock-sim: handle refused: %s\n", err);
        abort();
    }
    redlock_async_hooks_t h = {c, h_add_read, h_del_read, h_add_write, h_del_write, h_set_timer, h_clear_timer, NULL};
    redlock_async_set_hooks(c->a, &h);
    S->cur = outer;
}

/* Makes the run's clients: handles, hooks, actors' first steps. Without
 * records (membership-no-record), every other client uses NEW's list. */
void clients_init(void) {
    for (int i = 0; i < S->cfg.n_clients; i++) {
        sclient_t *c = &S->clients[i];
        c->id = i;
        c->fencing =
            rng_chance(&S->r_cfg, S->cfg.fencing_p) || (S->cfg.scenario == SCN_WAN && S->cfg.wan_op == WAN_FENCED);
        c->conf = S->cfg.membership == MEM_NO_RECORD && i % 2 ? CONF_NEW : CONF_OLD;
        make_handle(c);
        c->n_actors = S->cfg.n_actors;
        for (int k = 0; k < c->n_actors; k++) {
            sactor_t *t = &c->actors[k];
            t->client = i;
            t->idx = k;
            t->win = -1;
            step_at(t, (uint64_t)rng_range(&S->r_work, 0, 20000));
        }
    }
}

/* The workload ends: holders release, nothing new starts. */
void clients_stop(void) {
    S->stopping = 1;
    for (int i = 0; i < S->cfg.n_clients; i++) {
        sclient_t *c = &S->clients[i];
        sclient_t *outer = enter(c);
        for (int k = 0; k < c->n_actors; k++) {
            sactor_t *t = &c->actors[k];
            t->gen++;
            if (t->lock && t->phase != A_RELEASING) let_go(t);
        }
        S->cur = outer;
        client_pump(c);
    }
}

/* Frees c's handle (pending calls are cancelled, held locks left to
 * expire), keeping its counters for the coverage line. */
static void free_handle(sclient_t *c) {
    sclient_t *outer = enter(c);
    for (int k = 0; k < c->n_actors; k++) /* (their windows run to their deadlines) */
        if (c->actors[k].lock) redlock_lock_free(c->actors[k].lock), c->actors[k].lock = NULL;
    redlock_stats_t st;
    if (redlock_async_stats(c->a, &st) == REDLOCK_OK) {
        S->cov[COV_WAITS] += st.waits;
        S->cov[COV_WAKEUPS] += st.wakeups;
        S->cov[COV_EXTENDS] += st.extends[0];
        for (size_t n = 0; n < st.n_nodes; n++) {
            S->cov[COV_QUARANTINED] += st.nodes[n].quarantined;
            S->cov[COV_SUSPECTED] += st.nodes[n].suspected;
            S->cov[COV_RECONNECTS] += st.nodes[n].reconnects;
        }
    }
    redlock_async_free(c->a);
    c->a = NULL;
    S->cur = outer;
}

void clients_free(void) {
    for (int i = 0; i < S->cfg.n_clients; i++) free_handle(&S->clients[i]);
}

/* A redeploy: the process stops (what it holds is left to expire, what it
 * was asking for is given up) and starts again with conf's node lists. */
void client_redeploy(sclient_t *c, int conf) {
    if (!c->a || S->stopping) return;
    c->redeploying = 1;
    for (int k = 0; k < c->n_actors; k++) c->actors[k].gen++; /* (their scheduled steps are void) */
    free_handle(c);
    c->nrd = c->nwr = 0;
    c->timer_gen++;
    c->timer_armed = 0;
    c->conf = conf;
    make_handle(c);
    c->redeploying = 0;
    S->cov[COV_REDEPLOYS]++;
    trace_rec(T_REDEPLOYED, c->id, conf, 0, 0);
    for (int k = 0; k < c->n_actors; k++) {
        sactor_t *t = &c->actors[k];
        t->phase = A_IDLE;
        t->lock = NULL;
        t->win = -1;
        step_at(t, S->now + (uint64_t)rng_range(&S->r_work, 1000, 20000));
    }
}
