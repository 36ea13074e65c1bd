/* rl.h -- the library's private structures and the helpers its top-level
 * files (redlock.c, acquire.c, lifetime.c, held.c, watchdog.c, lock.c)
 * share. */
#ifndef RL_RL_H
#define RL_RL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "engine.h"
#include "fanout.h"
#include "log.h"
#include "redlock.h"
#include "scripts.h"
#include "stats.h"

struct rl_watchdog;

struct redlock {
    redlock_options_t opt;    /* the caller's options; opt.nodes points at node_names */
    char **node_names;        /* copies of the caller's URIs */
    rl_engine_t *eng;
    rl_clock_fn clock;        /* monotonic µs; replaced only by unit tests */
    rl_logger_t log;
    const rl_script_t *s_release, *s_extend, *s_acquire_multi, *s_release_multi, *s_extend_multi;
    const rl_script_t *s_acquire_fenced, *s_fence_set, *s_fenced_set;
    pthread_mutex_t held_mu;  /* guards held, pool, and every lock's holds/held links */
    redlock_lock_t *held;     /* every outstanding single-resource lock (re-entry, detach on free) */
    redlock_lock_t *pool;     /* released single-resource lock objects kept for reuse */
    unsigned pool_n;
    struct rl_watchdog *wd;   /* started on the first redlock_autoextend */
    struct rl_tls_ctx *tls;   /* OpenSSL context when a node is rediss://, else NULL */
    pthread_mutex_t wd_start_mu;
    rl_stats_t *stats;        /* redlock_stats' counters; NULL with opt.stats = 0 */
};

/* A set of resources: one for ordinary locks, up to REDLOCK_MAX_RESOURCES. */
typedef struct rl_keys {
    size_t n;
    const char *const *k;
    size_t *len;          /* filled by rl_check_request */
} rl_keys_t;

struct redlock_lock {
    redlock_t *owner;            /* the redlock_t it was acquired through */
    size_t n_res;
    char **res;                  /* n_res NUL-terminated names (points at res1 for one) */
    size_t *res_len;
    char *res1;                  /* a single resource (in res1_buf), or res[0] */
    size_t res1_len;
    char token[REDLOCK_TOKEN_LEN + 1];
    _Atomic uint32_t ttl_ms;
    _Atomic uint64_t deadline_us; /* t0 + TTL - drift on the monotonic clock */
    uint64_t acquired_us;        /* t0 of the acquire, for the watchdog's hold cap */
    _Atomic int lost;
    _Atomic uint32_t extensions; /* made by the watchdog */
    uint64_t fence;              /* fencing token, 0 without fencing */
    rl_clock_fn clock;
    /* reentrancy, under owner->held_mu */
    int registered;
    unsigned holds;
    pthread_t thread;
    redlock_lock_t *held_next, *held_prev;
    /* watchdog; wd_attached is the owning thread's, the rest under the watchdog's mutex */
    int wd_attached;
    int watched;
    uint64_t next_us;
    uint32_t interval_ms, max_ext;
    uint64_t hold_until_us;      /* 0: no cap */
    redlock_lost_fn on_lost;
    void *lost_arg;
    redlock_lock_t *wnext;
    /* kept when a pooled object is reused: everything above is reset */
    pthread_mutex_t mu;          /* serialises extends (caller vs watchdog) */
    char *res1_buf;              /* storage for a single resource name */
    size_t res1_cap;
};

/* The resources of a lock as a key set. */
static inline rl_keys_t rl_lock_keys(const redlock_lock_t *l) {
    return (rl_keys_t){l->n_res, (const char *const *)l->res, l->res_len};
}

/* error.c: the result code's name in lower case ("ok", "taken",
 * "no_quorum", ...; "unknown" for any other value) into buf (n bytes):
 * metric labels and the tool's JSON. */
void rl_result_name(int rc, char *buf, size_t n);

/* options.c: checks opt; on a problem writes a message naming the bad value
 * into err and returns REDLOCK_ERR_CONFIG (or INVALID for a NULL opt). */
int rl_options_check(const redlock_options_t *opt, char *err, size_t errlen);

/* redlock.c: checks a call's resource set and TTL. Returns REDLOCK_OK or
 * REDLOCK_ERR_INVALID with the bad value named in msg. */
int rl_check_request(const redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, char *msg, size_t msglen);
int rl_check_keys(const rl_keys_t *keys, char *msg, size_t msglen); /* the resources alone */
int rl_check_ttl(const redlock_t *rl, uint32_t ttl_ms, char *msg, size_t n);

/* redlock.c: report helpers (rep may be NULL). */
void rl_report_begin(const redlock_t *rl, redlock_report_t *rep);
void rl_report_round(redlock_report_t *rep, const rl_round_t *r, uint64_t end_us);
int rl_report_end(const redlock_t *rl, redlock_report_t *rep, int rc, const char *msg);

/* redlock.c: runs one round of `script` on keys with the token and an
 * optional extra argument (NULL), by EVALSHA with an EVAL fallback. */
void rl_run_script(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys,
                   const char *token, const char *extra);
/* The same with another reply classifier (and r->on_reply, if set, kept). */
void rl_run_script_as(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys,
                      const char *token, const char *extra, rl_classify_fn classify);

/* fence.c: one fenced attempt (see redlock_lock_fence); same contract as
 * acquire.c's attempt. */
int rl_attempt_fenced(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms,
                      redlock_lock_t **out, redlock_report_t *rep);
/* redlock.c: runs one round of argv (EVALSHA <script's sha1> ... when
 * script is set; the engine falls back to EVAL on NOSCRIPT). Returns when
 * the round is decided. */
void rl_run_round(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens,
                  const rl_script_t *script, rl_classify_fn classify);
/* redlock.c: runs a plain command round (no script). */
void rl_run_command(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens,
                    rl_classify_fn classify);
/* redlock.c: sends the release script for keys/token to every node and
 * waits until the outcome is known (nodes may be NULL). */
void rl_release_round(redlock_t *rl, rl_round_t *r, const rl_keys_t *keys, const char *token,
                      redlock_node_report_t *nodes);

/* query.c: sends one command to every node and waits for every answer or
 * deadline (no early stop). fn (may be NULL) sees each node's hiredis
 * reply, with the engine's lock held: copy what you need, quickly. rep
 * (may be NULL) gets each node's vote (yes = any non-error reply), round
 * trip and error text. Returns how many nodes answered without error. */
typedef void (*rl_reply_fn)(void *arg, size_t node, const void *reply);
size_t rl_query(redlock_t *rl, int argc, const char **argv, const size_t *lens, rl_reply_fn fn, void *arg,
                redlock_report_t *rep);
/* query.c: the same with an embedded script (EVALSHA, EVAL fallback) on keys/args. */
size_t rl_query_script(redlock_t *rl, const char *script, int nkeys, int argc, const char **argv,
                       const size_t *lens, rl_reply_fn fn, void *arg, redlock_report_t *rep);

/* lifetime.c: one round of the extend script for keys/token (DESIGN.md
 * section 1's extend from a fresh t0): REDLOCK_OK when a quorum extended
 * and validity remains, with *t0 and *deadline set and rep's validity;
 * else NOT_HELD (enough nodes said no), EXPIRED or NO_QUORUM / AUTH. The
 * caller ends the report. */
int rl_extend_round(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, redlock_report_t *rep,
                    uint64_t *t0, uint64_t *deadline);
/* lifetime.c: the release round for keys/token (DESIGN.md section 1's
 * release) and its verdict: OK, NOT_HELD, AUTH or NO_QUORUM. The caller
 * ends the report. */
int rl_release_keys(redlock_t *rl, const rl_keys_t *keys, const char *token, redlock_report_t *rep);
/* adopt.c: releases the lock on resource that token holds, with no lock
 * handle (the `redlock release RESOURCE TOKEN` step): checks both
 * (INVALID names what is wrong, never the token), runs the release round,
 * counts the call as a release and ends the report. */
int rl_release_token(redlock_t *rl, const char *resource, const char *token, redlock_report_t *rep);
/* lifetime.c: extends lock to ttl_ms (see redlock_extend_ex), serialised
 * with other extends of the same lock. */
int rl_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep);

/* lock.c: makes a lock for keys/token valid until deadline (NULL if out of memory). */
redlock_lock_t *rl_lock_new(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms,
                            uint64_t t0, uint64_t deadline);
/* lock.c: frees the memory of a lock (no unregistering, no watchdog). */
void rl_lock_destroy(redlock_lock_t *lock);

/* held.c: every outstanding single-resource lock is registered (for
 * re-entry and so that redlock_free can detach them). rl_held_reenter
 * returns the calling thread's valid lock on resource (holds + 1), or
 * NULL. rl_held_add registers a new lock. rl_held_drop returns 1 when the
 * caller's hold was not the last (the lock stays), 0 when it was (now
 * unregistered). rl_held_forget_all detaches every lock (owner = NULL) and
 * frees the pool (redlock_free). rl_pool_get / rl_pool_put keep released
 * lock objects for reuse, so a warm acquire/release cycle allocates
 * nothing. */
redlock_lock_t *rl_held_reenter(redlock_t *rl, const char *resource, size_t len);
void rl_held_add(redlock_t *rl, redlock_lock_t *lock);
int rl_held_drop(redlock_lock_t *lock);
void rl_held_forget_all(redlock_t *rl);
redlock_lock_t *rl_pool_get(redlock_t *rl, size_t len);
int rl_pool_put(redlock_lock_t *lock); /* 1 when kept, 0 when the caller must free it */

/* watchdog.c: stops lock's auto-extension if it has one (waits for an
 * extension in progress); rl_watchdog_free stops the thread and detaches
 * every watched lock. */
void rl_watch_stop(redlock_lock_t *lock);
void rl_watchdog_free(redlock_t *rl);

/* Replaces rl's clock (unit tests only). */
void rl_set_clock(redlock_t *rl, rl_clock_fn clock);

#endif
