/* scenarios.c -- the redlock_async_t scenarios of scenarios.h, written once
 * against async_loop_ops_t so that every adapter runs the same checks. */
#include "scenarios.h"

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CALLERS 64
#define MAX_RESOURCES 8

/* What a caller is waiting for. */
enum { IDLE = 0, ACQUIRING, HOLDING, RELEASING };

typedef struct caller {
    int id, res;
    int cycles_done;
    int state;
    redlock_lock_t *lock;
    long seen; /* the resource's counter when the lock was granted */
} caller_t;

/* One scenario's state; scenarios run one per process (Criterion forks). */
static struct {
    const async_loop_ops_t *ops;
    void *loop;
    redlock_async_t *a;
    int in_call; /* a redlock_async_* call (other than free) is on the stack */
    int in_free; /* redlock_async_free is on the stack */
    int callers, resources, cycles;
    char names[MAX_RESOURCES][64];
    int owner[MAX_RESOURCES]; /* caller holding the resource, -1 for none */
    long counter[MAX_RESOURCES];
    long grants[MAX_RESOURCES];
    long acq_calls, acq_cbs, rel_calls, rel_cbs, refusals;
    long attempts; /* acquire attempts the granted calls' reports counted */
    int callers_done;
    int freed;
    caller_t caller[MAX_CALLERS];
} S;

/* Makes a handle over the cluster's 5 nodes with options o, attached to
 * the scenario's loop through the adapter under test. */
static redlock_async_t *new_handle(const tc_cluster_t *c, const redlock_options_t *o) {
    const char *uris[TC_MAX_NODES];
    redlock_options_t opt = *o;
    for (int i = 0; i < c->n; i++) uris[i] = c->uri[i];
    opt.nodes = uris;
    opt.n_nodes = (size_t)c->n;
    redlock_async_t *a = NULL;
    int rc = redlock_async_new(&a, &opt);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_async_new: %s", redlock_strerror(rc));
    cr_assert_not_null(a);
    rc = S.ops->attach(a, S.loop);
    cr_assert_eq(rc, REDLOCK_OK, "%s attach: %s", S.ops->name, redlock_strerror(rc));
    return a;
}

/* Options for contention: patient retries with short delays, no re-entry
 * (all callers share one thread), room for a loop slowed by valgrind. */
static void contention_options(redlock_options_t *o) {
    rt_options(o);
    o->op_timeout_ms = 1000;
    o->retry_count = 100000;
    o->retry_delay_ms = 4;
    o->retry_jitter_ms = 3;
    o->reentrant = 0;
}

/* Starts the scenario: resets the state and makes the loop. */
static void begin(const async_loop_ops_t *ops) {
    memset(&S, 0, sizeof S);
    S.ops = ops;
    S.loop = ops->loop_new();
    cr_assert_not_null(S.loop, "%s: no loop", ops->name);
}

/* Runs the loop until it returns by itself, then frees it: nothing may be
 * left on it (the adapter closed or deleted everything it had). */
static void run_to_end(void) {
    int rc = S.ops->run(S.loop);
    cr_assert_geq(rc, 0, "%s: the loop failed (%d)", S.ops->name, rc);
    cr_assert_eq(S.ops->loop_free(S.loop), 0, "%s: handles left on the loop after it returned", S.ops->name);
    S.loop = NULL;
}

/* Waits up to 2 s for every node to hold no key at all. */
static void assert_nodes_empty(const tc_cluster_t *c) {
    for (int i = 0; i < c->n; i++) {
        long long keys = -1;
        for (int tries = 0; tries < 200 && keys != 0; tries++) {
            redisContext *ctx = tc_connect(c, i);
            redisReply *r = ctx ? redisCommand(ctx, "DBSIZE") : NULL;
            keys = r ? r->integer : -1;
            freeReplyObject(r);
            if (ctx) redisFree(ctx);
            if (keys) rt_sleep_ms(10);
        }
        cr_assert_eq(keys, 0, "node %d kept %lld keys", i, keys);
    }
}

/* The message of a report, or "" when there is none. */
static const char *msg(const redlock_report_t *rep) {
    return rep ? rep->message : "(no report)";
}

/* ------------------------------------------------------------ contention */

static void on_acquired(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg);
static void on_released(int rc, const redlock_report_t *rep, void *arg);

/* Starts caller c's acquire (wait_ms > 0, retries on TAKEN). */
static void start_acquire(caller_t *c) {
    c->state = ACQUIRING;
    S.acq_calls++;
    S.in_call = 1;
    int rc = redlock_async_acquire(S.a, S.names[c->res], 3000, 10000, on_acquired, c);
    S.in_call = 0;
    cr_assert_eq(rc, REDLOCK_OK, "caller %d: redlock_async_acquire: %s", c->id, redlock_strerror(rc));
}

/* End of a hold (a loop timer): the caller still owns its resource and its
 * lock is still valid (else the owner table would prove nothing); writes the
 * counter back and releases. */
static void end_hold(void *arg) {
    caller_t *c = arg;
    cr_assert_eq(c->state, HOLDING, "caller %d: hold timer in state %d", c->id, c->state);
    cr_assert_eq(S.owner[c->res], c->id, "caller %d: resource %d taken over by caller %d during the hold", c->id,
                 c->res, S.owner[c->res]);
    int64_t left = redlock_lock_validity_ms(c->lock);
    cr_assert_gt(left, 0, "caller %d: lock expired during a few-ms hold", c->id);
    S.counter[c->res] = c->seen + 1;
    S.grants[c->res]++;
    S.owner[c->res] = -1;
    redlock_lock_t *lock = c->lock;
    c->lock = NULL;
    c->state = RELEASING;
    S.rel_calls++;
    S.in_call = 1;
    int rc = redlock_async_release(S.a, lock, on_released, c);
    S.in_call = 0;
    cr_assert_eq(rc, REDLOCK_OK, "caller %d: redlock_async_release: %s", c->id, redlock_strerror(rc));
}

/* Acquire callback: a grant must find the resource free; a refusal (the
 * wait bound passed while others held it) starts the acquire again. */
static void on_acquired(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    caller_t *c = arg;
    cr_assert_not(S.in_call, "caller %d: acquire callback from inside a call", c->id);
    cr_assert_eq(c->state, ACQUIRING, "caller %d: acquire callback in state %d (a second callback?)", c->id, c->state);
    S.acq_cbs++;
    if (rc != REDLOCK_OK) {
        cr_assert_null(lock, "caller %d: lock with %s", c->id, redlock_strerror(rc));
        cr_assert(rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_NO_QUORUM, "caller %d: acquire: %s: %s", c->id,
                  redlock_strerror(rc), msg(rep));
        S.refusals++;
        cr_assert_lt(S.refusals, 20L * S.callers * S.cycles, "refusals without end");
        start_acquire(c);
        return;
    }
    cr_assert_not_null(lock);
    cr_assert_not_null(rep);
    S.attempts += rep->attempts;
    cr_assert_str_eq(redlock_lock_resource(lock), S.names[c->res]);
    cr_assert_eq(S.owner[c->res], -1, "resource %d granted to caller %d while caller %d holds it", c->res, c->id,
                 S.owner[c->res]);
    S.owner[c->res] = c->id;
    c->lock = lock;
    c->seen = S.counter[c->res];
    c->state = HOLDING;
    unsigned hold_ms = 1 + (unsigned)(c->id + c->cycles_done) % 3;
    cr_assert_eq(S.ops->after(S.loop, hold_ms, end_hold, c), 0, "%s: cannot arm a timer", S.ops->name);
}

/* Release callback: counts the cycle; starts the next one, or, after the
 * last caller's last cycle, frees the handle from inside this callback. */
static void on_released(int rc, const redlock_report_t *rep, void *arg) {
    caller_t *c = arg;
    cr_assert_not(S.in_call, "caller %d: release callback from inside a call", c->id);
    cr_assert_eq(c->state, RELEASING, "caller %d: release callback in state %d (a second callback?)", c->id, c->state);
    S.rel_cbs++;
    cr_assert_eq(rc, REDLOCK_OK, "caller %d: release: %s: %s", c->id, redlock_strerror(rc), msg(rep));
    c->state = IDLE;
    if (++c->cycles_done < S.cycles) {
        start_acquire(c);
        return;
    }
    if (++S.callers_done == S.callers) {
        S.freed = 1;
        redlock_async_t *a = S.a;
        S.a = NULL;
        redlock_async_free(a);
    }
}

void scenario_contend(const async_loop_ops_t *ops, const tc_cluster_t *cl, int callers, int resources, int cycles) {
    cr_assert(callers > 0 && callers <= MAX_CALLERS && resources > 0 && resources <= MAX_RESOURCES && cycles > 0);
    begin(ops);
    S.callers = callers;
    S.resources = resources;
    S.cycles = cycles;
    for (int r = 0; r < resources; r++) {
        snprintf(S.names[r], sizeof S.names[r], "async:%s:contend:%d", ops->name, r);
        S.owner[r] = -1;
    }
    redlock_options_t o;
    contention_options(&o);
    S.a = new_handle(cl, &o);
    for (int i = 0; i < callers; i++) {
        S.caller[i] = (caller_t){.id = i, .res = i % resources};
        start_acquire(&S.caller[i]);
    }
    run_to_end();

    cr_assert(S.freed, "the loop returned before every cycle ended (%d of %d callers done)", S.callers_done, callers);
    cr_assert_eq(S.acq_cbs, S.acq_calls, "%ld acquire calls, %ld callbacks", S.acq_calls, S.acq_cbs);
    cr_assert_eq(S.rel_cbs, S.rel_calls, "%ld release calls, %ld callbacks", S.rel_calls, S.rel_cbs);
    cr_assert_eq(S.rel_calls, (long)callers * cycles);
    long total = 0;
    for (int r = 0; r < resources; r++) {
        cr_assert_eq(S.counter[r], S.grants[r], "resource %d: %ld grants but the counter says %ld (a lost update)", r,
                     S.grants[r], S.counter[r]);
        cr_assert_eq(S.owner[r], -1);
        total += S.grants[r];
    }
    cr_assert_eq(total, (long)callers * cycles);
    for (int i = 0; i < callers; i++) {
        cr_assert_eq(S.caller[i].cycles_done, cycles, "caller %d", i);
        cr_assert_eq(S.caller[i].state, IDLE, "caller %d", i);
    }
    cr_log_info("%s: %d callers x %d cycles on %d resources: %ld acquire calls (%ld refused), %ld attempts granted",
                ops->name, callers, cycles, resources, S.acq_calls, S.refusals, S.attempts);
    if (callers > resources) /* several callers per resource: some must have waited */
        cr_assert_gt(S.attempts, total, "every acquire was granted at its first attempt: no contention was tested");
    assert_nodes_empty(cl);
}

/* ------------------------------------------------------- free with pending */

#define WAITERS 8

/* Free scenarios' state: the waiters' outcomes, the other key's lock. */
static struct {
    int waiters; /* how many waiters were started */
    int keep;    /* keep the other key's lock (detach) instead of releasing it */
    int cbs[WAITERS], rc[WAITERS], from_free[WAITERS];
    redlock_lock_t *got[WAITERS];
    redlock_lock_t *other; /* granted on the other key */
    int other_cbs;
} F;

/* A waiter's callback: expected only from inside redlock_async_free. */
static void on_waiter(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    int i = (int)((int *)arg - F.rc);
    (void)rep;
    cr_assert_not(S.in_call, "waiter %d: callback from inside a call", i);
    F.cbs[i]++;
    F.rc[i] = rc;
    F.from_free[i] = S.in_free;
    F.got[i] = lock;
}

/* Loop timer: unless the lock is to be kept, asks for its release (no
 * callback) and, at once, frees the handle while that release and the
 * waiters are still pending. */
static void free_now(void *arg) {
    (void)arg;
    redlock_async_t *a = S.a;
    S.a = NULL;
    if (!F.keep) {
        S.in_call = 1;
        int rc = redlock_async_release(a, F.other, NULL, NULL);
        S.in_call = 0;
        cr_assert_eq(rc, REDLOCK_OK, "release: %s", redlock_strerror(rc));
        F.other = NULL;
    }
    S.in_free = 1;
    redlock_async_free(a);
    S.in_free = 0;
    S.freed = 1;
}

/* The other key's grant: arms the timer that frees the handle. */
static void on_other(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    cr_assert_not(S.in_call);
    F.other_cbs++;
    cr_assert_eq(rc, REDLOCK_OK, "acquire of the other key: %s: %s", redlock_strerror(rc), msg(rep));
    F.other = lock;
    cr_assert_eq(S.ops->after(S.loop, 60, free_now, NULL), 0);
}

/* Runs a handle with `waiters` acquires waiting on a key another client
 * holds and one granted lock on another key, and frees it from a loop
 * timer; see scenario_free_pending and scenario_free_detaches. */
static void free_scenario(const async_loop_ops_t *ops, const tc_cluster_t *cl, int waiters, int keep) {
    begin(ops);
    memset(&F, 0, sizeof F);
    F.waiters = waiters;
    F.keep = keep;
    char busy[64], other[64], token[REDLOCK_TOKEN_LEN + 1];
    snprintf(busy, sizeof busy, "async:%s:busy", ops->name);
    snprintf(other, sizeof other, "async:%s:other", ops->name);

    /* Another client (the blocking API) holds `busy` for 30 s. */
    redlock_t *rl = rt_new(cl, (size_t)cl->n, NULL);
    redlock_lock_t *held = NULL;
    cr_assert_eq(redlock_acquire_ex(rl, busy, 30000, 0, &held, NULL), REDLOCK_OK);

    redlock_options_t o;
    contention_options(&o);
    o.retry_delay_ms = 10;
    S.a = new_handle(cl, &o);
    for (int i = 0; i < waiters; i++) {
        F.rc[i] = 1; /* no result yet */
        S.in_call = 1;
        int rc = redlock_async_acquire(S.a, busy, 5000, 20000, on_waiter, &F.rc[i]);
        S.in_call = 0;
        cr_assert_eq(rc, REDLOCK_OK, "waiter %d: %s", i, redlock_strerror(rc));
    }
    S.in_call = 1;
    cr_assert_eq(redlock_async_acquire(S.a, other, 30000, 0, on_other, NULL), REDLOCK_OK);
    S.in_call = 0;
    run_to_end();

    cr_assert(S.freed);
    cr_assert_eq(F.other_cbs, 1);
    for (int i = 0; i < waiters; i++) {
        cr_assert_eq(F.cbs[i], 1, "waiter %d: %d callbacks", i, F.cbs[i]);
        cr_assert_eq(F.rc[i], REDLOCK_ERR_CANCELLED, "waiter %d: %s", i, redlock_strerror(F.rc[i]));
        cr_assert(F.from_free[i], "waiter %d: callback not from inside redlock_async_free", i);
        cr_assert_null(F.got[i]);
    }
    /* The other client's key is untouched by the cancelled waiters. */
    cr_assert_eq(tc_count_value(cl, busy, redlock_lock_token(held)), cl->n);
    if (keep) {
        /* Detached, not released: still valid and still set; freeing the
         * handle-less lock releases nothing either. */
        cr_assert_not_null(F.other);
        cr_assert_gt(redlock_lock_validity_ms(F.other), 0);
        snprintf(token, sizeof token, "%s", redlock_lock_token(F.other));
        cr_assert_geq(tc_count_value(cl, other, token), 3);
        redlock_lock_free(F.other);
        cr_assert_geq(tc_count_value(cl, other, token), 3);
    } else {
        /* The release pending at the free still went out, to every node. */
        for (int tries = 0; tries < 200; tries++) {
            int left = 0;
            for (int i = 0; i < cl->n; i++) {
                char *v = tc_get(cl, i, other);
                left += v != NULL;
                free(v);
            }
            if (!left) break;
            cr_assert_lt(tries, 199, "the release pending at redlock_async_free left the key on %d nodes", left);
            rt_sleep_ms(10);
        }
    }
    cr_assert_eq(redlock_release(rl, held), REDLOCK_OK);
    redlock_free(rl);
}

void scenario_free_pending(const async_loop_ops_t *ops, const tc_cluster_t *cl) {
    free_scenario(ops, cl, WAITERS, 0);
}

void scenario_free_detaches(const async_loop_ops_t *ops, const tc_cluster_t *cl) {
    free_scenario(ops, cl, 0, 1);
}

/* ---------------------------------------------------------------- cancel */

/* Cancel scenario's state. */
static struct {
    redlock_lock_t *holder, *w2lock;
    int holder_cbs, w1_cbs, w2_cbs, holder_rel_cbs, w2_rel_cbs;
    int w1_rc, w2_rc;
    int w1, w2; /* their addresses are the calls' args */
    char key[64];
} X;

static void on_w2_released(int rc, const redlock_report_t *rep, void *arg);

/* Holder's release callback. */
static void on_holder_released(int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    cr_assert_not(S.in_call);
    X.holder_rel_cbs++;
    cr_assert_eq(rc, REDLOCK_OK, "holder release: %s: %s", redlock_strerror(rc), msg(rep));
}

/* The cancelled waiter: from the loop, with CANCELLED; then the holder
 * releases so that the other waiter can get the lock. */
static void on_w1(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)rep;
    cr_assert_eq(arg, &X.w1);
    cr_assert_not(S.in_call, "cancelled callback from inside redlock_async_cancel");
    X.w1_cbs++;
    X.w1_rc = rc;
    cr_assert_null(lock);
    cr_assert_eq(X.w2_cbs, 0, "the other waiter got an answer while the holder still holds the key");
    redlock_lock_t *h = X.holder;
    X.holder = NULL;
    S.in_call = 1;
    cr_assert_eq(redlock_async_release(S.a, h, on_holder_released, NULL), REDLOCK_OK);
    S.in_call = 0;
}

/* The other waiter: granted after the holder's release; releases, and its
 * release callback frees the handle. */
static void on_w2(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    cr_assert_eq(arg, &X.w2);
    cr_assert_not(S.in_call);
    X.w2_cbs++;
    X.w2_rc = rc;
    cr_assert_eq(rc, REDLOCK_OK, "second waiter: %s: %s", redlock_strerror(rc), msg(rep));
    cr_assert_eq(X.w1_cbs, 1, "granted before the holder released");
    S.in_call = 1;
    cr_assert_eq(redlock_async_release(S.a, lock, on_w2_released, NULL), REDLOCK_OK);
    S.in_call = 0;
}

/* Last callback: frees the handle from inside it. */
static void on_w2_released(int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    cr_assert_not(S.in_call);
    X.w2_rel_cbs++;
    cr_assert_eq(rc, REDLOCK_OK, "second waiter's release: %s: %s", redlock_strerror(rc), msg(rep));
    redlock_async_t *a = S.a;
    S.a = NULL;
    redlock_async_free(a);
    S.freed = 1;
}

/* Loop timer while both wait: cancels the first waiter only. */
static void cancel_first(void *arg) {
    (void)arg;
    cr_assert_eq(redlock_async_cancel(S.a, &X.key), 0, "cancelled calls nobody started with that arg");
    S.in_call = 1;
    int n = redlock_async_cancel(S.a, &X.w1);
    S.in_call = 0;
    cr_assert_eq(n, 1, "redlock_async_cancel: %d", n);
    cr_assert_eq(X.w1_cbs, 0, "the cancelled callback ran from inside redlock_async_cancel");
}

/* The holder's grant: both waiters start, and a timer cancels the first. */
static void on_holder(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    cr_assert_not(S.in_call);
    X.holder_cbs++;
    cr_assert_eq(rc, REDLOCK_OK, "holder: %s: %s", redlock_strerror(rc), msg(rep));
    X.holder = lock;
    S.in_call = 1;
    cr_assert_eq(redlock_async_acquire(S.a, X.key, 5000, 20000, on_w1, &X.w1), REDLOCK_OK);
    cr_assert_eq(redlock_async_acquire(S.a, X.key, 5000, 20000, on_w2, &X.w2), REDLOCK_OK);
    S.in_call = 0;
    cr_assert_eq(S.ops->after(S.loop, 40, cancel_first, NULL), 0);
}

void scenario_cancel(const async_loop_ops_t *ops, const tc_cluster_t *cl) {
    begin(ops);
    memset(&X, 0, sizeof X);
    snprintf(X.key, sizeof X.key, "async:%s:cancel", ops->name);
    redlock_options_t o;
    contention_options(&o);
    S.a = new_handle(cl, &o);
    cr_assert_eq(redlock_async_cancel(NULL, &X.w1), REDLOCK_ERR_INVALID);
    S.in_call = 1;
    cr_assert_eq(redlock_async_acquire(S.a, X.key, 5000, 0, on_holder, NULL), REDLOCK_OK);
    S.in_call = 0;
    run_to_end();

    cr_assert(S.freed, "the loop returned before the scenario ended");
    cr_assert_eq(X.holder_cbs, 1);
    cr_assert_eq(X.w1_cbs, 1);
    cr_assert_eq(X.w1_rc, REDLOCK_ERR_CANCELLED, "cancelled waiter: %s", redlock_strerror(X.w1_rc));
    cr_assert_eq(X.w2_cbs, 1);
    cr_assert_eq(X.holder_rel_cbs, 1);
    cr_assert_eq(X.w2_rel_cbs, 1);
    assert_nodes_empty(cl);
}

/* ------------------------------------------------------ cancel, waiting */

/* Cancel-while-waiting scenario's state. */
static struct {
    redlock_lock_t *holder;
    int cbs, rc, rel_cbs;
    uint32_t attempts;
    size_t votes;
    char key[64];
} W;

/* The holder's release, after the cancelled callback: frees the handle. */
static void on_waiting_holder_released(int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    W.rel_cbs++;
    cr_assert_eq(rc, REDLOCK_OK, "holder release: %s: %s", redlock_strerror(rc), msg(rep));
    redlock_async_t *a = S.a;
    S.a = NULL;
    redlock_async_free(a);
    S.freed = 1;
}

/* The cancelled waiter: what its report says, then the holder releases. */
static void on_waiting_cancelled(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    cr_assert_eq(arg, &W);
    cr_assert_null(lock);
    W.cbs++;
    W.rc = rc;
    W.attempts = rep->attempts;
    W.votes = rep->yes + rep->no + rep->failed;
    redlock_lock_t *h = W.holder;
    W.holder = NULL;
    cr_assert_eq(redlock_async_release(S.a, h, on_waiting_holder_released, NULL), REDLOCK_OK);
}

/* Loop timer, long after the waiter's first attempt and long before its next. */
static void cancel_waiting(void *arg) {
    (void)arg;
    cr_assert_eq(redlock_async_cancel(S.a, &W), 1);
}

/* The holder's grant: the waiter asks, and a timer cancels it while it waits. */
static void on_waiting_holder(redlock_lock_t *lock, int rc, const redlock_report_t *rep, void *arg) {
    (void)arg;
    cr_assert_eq(rc, REDLOCK_OK, "holder: %s: %s", redlock_strerror(rc), msg(rep));
    W.holder = lock;
    cr_assert_eq(redlock_async_acquire(S.a, W.key, 5000, 20000, on_waiting_cancelled, &W), REDLOCK_OK);
    cr_assert_eq(S.ops->after(S.loop, 300, cancel_waiting, NULL), 0);
}

void scenario_cancel_waiting(const async_loop_ops_t *ops, const tc_cluster_t *cl) {
    begin(ops);
    memset(&W, 0, sizeof W);
    snprintf(W.key, sizeof W.key, "async:%s:cancel-waiting", ops->name);
    redlock_options_t o;
    rt_options(&o);
    o.reentrant = 0;
    o.retry_count = 10;
    o.retry_delay_ms = 3000; /* the second attempt comes 2.9 s to 3.1 s after the first */
    o.retry_jitter_ms = 100;
    S.a = new_handle(cl, &o);
    cr_assert_eq(redlock_async_acquire(S.a, W.key, 5000, 0, on_waiting_holder, NULL), REDLOCK_OK);
    run_to_end();

    cr_assert(S.freed, "the loop returned before the scenario ended");
    cr_assert_eq(W.cbs, 1);
    cr_assert_eq(W.rc, REDLOCK_ERR_CANCELLED, "cancelled waiter: %s", redlock_strerror(W.rc));
    cr_assert_geq(W.attempts, 1, "attempts of the cancelled waiter: %u", W.attempts); /* (and one once subscribed) */
    cr_assert_eq(W.votes, 0, "the cancelled waiter reports %zu votes of a round it no longer holds", W.votes);
    cr_assert_eq(W.rel_cbs, 1);
    assert_nodes_empty(cl);
}

/* ---------------------------------------------------------- attach errors */

void scenario_attach_errors(const async_loop_ops_t *ops, const tc_cluster_t *cl) {
    begin(ops);
    redlock_options_t o;
    rt_options(&o);
    cr_assert_eq(ops->attach(NULL, S.loop), REDLOCK_ERR_INVALID);
    redlock_async_t *a = new_handle(cl, &o);
    cr_assert_eq(ops->attach(a, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(ops->attach(a, S.loop), REDLOCK_ERR_INVALID, "a second attach of the same handle");
    redlock_async_free(a);
    run_to_end();
}
