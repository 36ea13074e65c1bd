/* rl.h -- the library's private structures: the context both drivers
 * share (struct redlock: options, clock, scripts, statistics, the node set
 * and how to run a round on it), the lock object, and the core's helpers
 * (reports, checks, rounds, locks). Driver-specific declarations live in
 * src/blocking/blocking.h and src/async/async.h. */
#ifndef RL_RL_H
#define RL_RL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "round.h"
#include "nodeset.h"
#include "log.h"
#include "map.h"
#include "membership.h"
#include "redlock.h"
#include "scripts.h"
#include "stats.h"

struct rl_acquire_op;

/* The context of one handle, blocking (redlock_t) or async (inside a
 * redlock_async_t). The core sees only this. */
struct redlock {
    redlock_options_t opt; /* the caller's options; opt.nodes points at node_names */
    char **node_names;     /* copies of the caller's URIs */
    rl_nodes_t *ns;        /* the driver's node set (names; the driver's thread only) */
    /* the driver: starts round r on the nodes. Blocking: returns once r is
     * decided. Async: returns at once; the handle resumes r's op later. */
    void (*send)(struct redlock *rl, rl_round_t *r);
    /* the driver's part of redlock_lock_free: 1 when an outer hold of the
     * lock remains (the object stays), 0 when it may be destroyed */
    int (*unhold)(redlock_lock_t *lock);
    /* the driver's: waiter a became the head of its resource's local
     * queue, or was woken by a heard release (waitq.c): wake it so it
     * looks again. Called with held_mu held (a is queued, so alive).
     * May be NULL. */
    void (*queue_moved)(struct redlock *rl, struct rl_acquire_op *a);
    rl_map_t waitq; /* the local queues, a line per resource and kind (waitq.c; under held_mu) */
    /* the driver's: a waiter for res joins (join = 1) or leaves (0) the
     * local queue: its release channel is listened on while it has
     * waiters (core/subs.c). Called without held_mu. May be NULL (polling). */
    void (*channel)(struct redlock *rl, const char *res, size_t len, int join);
    rl_clock_fn clock; /* monotonic µs; replaced only by unit tests */
    rl_logger_t log;
    const rl_script_t *s_release, *s_extend, *s_acquire_multi, *s_release_multi, *s_extend_multi;
    const rl_script_t *s_fence_set, *s_fenced_set, *s_acquire_wait;
    const rl_script_t *s_acquire_permit, *s_release_permit;
    const rl_script_t *s_acquire_shared, *s_extend_shared, *s_release_shared;
    const rl_script_t *s_acquire; /* SET NX PX as a script: only its guarded twin is sent */
    pthread_mutex_t held_mu;      /* guards held, waitq, pool, and every lock's holds/held links */
    int is_async;                 /* 1 inside a redlock_async_t */
    size_t cluster_nodes;         /* how many nodes are whole Redis Clusters (their keys are named
                              * apart: slot.h's rl_cluster_key) */
    rl_map_t held;                /* outstanding single-resource locks by resource and thread (re-entry,
                              * detach on free; blocking/held.c) */
    redlock_lock_t *pool;         /* released single-resource lock objects kept for reuse */
    unsigned pool_n;
    unsigned pool_max; /* released lock objects kept at most (the driver's choice) */
    /* fallback polls of waiters (attempt.c): at most RL_POLLS_PER_INTERVAL
     * per retry_delay_ms window, so thousands of waiters do not swamp the
     * nodes (under held_mu) */
    uint64_t poll_window_us;
    unsigned poll_used;
    struct rl_tls_ctx *tls; /* OpenSSL context when a node is rediss://, else NULL */
    int mu_ready;           /* held_mu is initialised */
    rl_stats_t *stats;      /* redlock_stats' counters; NULL with opt.stats = 0 */
    /* a joint handle (next_nodes given): opt.nodes holds both lists' distinct nodes, the current
     * list's first, and opt.next_nodes is NULL; lists[i] has node i's RL_LIST_* bits */
    int joint;
    uint8_t lists[REDLOCK_MAX_NODES];
    char fp[RL_FP_HEX + 1]; /* its configuration's fingerprint (a joint handle's: the joint one),
                             * which the nodes' membership records are checked against */
    rl_notices_t notices;   /* membership steps announced, and whether the driver listens for them */
    /* the handle's id in the resources' lines on the nodes (acquire_wait.lua): a
     * release that names it wakes its waiter at once, one naming another does not */
    char line_id[REDLOCK_TOKEN_LEN + 1];
    const rl_script_t *s_line_leave;
};

/* A set of resources: one for ordinary locks, up to REDLOCK_MAX_RESOURCES. */
typedef struct rl_keys {
    size_t n;
    const char *const *k;
    size_t *len; /* filled by rl_check_request */
} rl_keys_t;

struct redlock_lock {
    redlock_t *owner; /* the redlock_t it was acquired through */
    size_t n_res;
    char **res; /* n_res NUL-terminated names (points at res1 for one) */
    size_t *res_len;
    char *res1; /* a single resource (in res1_buf), or res[0] */
    size_t res1_len;
    char token[REDLOCK_TOKEN_LEN + 1];
    _Atomic uint32_t ttl_ms;
    _Atomic uint64_t deadline_us; /* t0 + TTL - drift on the monotonic clock */
    uint64_t acquired_us;         /* t0 of the acquire, for the watchdog's hold cap */
    _Atomic int lost;
    _Atomic uint32_t extensions; /* made by the watchdog */
    uint64_t fence;              /* fencing token, 0 without fencing */
    int slot;                    /* a permit's slot (its key is "<resource>:permit:<slot>"), else -1 */
    unsigned limit;              /* a permit's semaphore's limit (its release clears strays), else 0 */
    int shared;                  /* a reader's lock (redlock_acquire_shared) */
    int releasing;               /* async: a release is under way (a second one is INVALID) */
    int pooled;                  /* released: back in the pool (until reused) */
    void *autoext;               /* async: the handle's auto-extension call of this lock, or NULL */
    rl_clock_fn clock;
    /* reentrancy, under owner->held_mu */
    int registered;
    unsigned holds;
    pthread_t thread;
    rl_map_node_t held_node;               /* in owner->held (blocking) */
    redlock_lock_t *held_next, *held_prev; /* the pool, or the async handle's locks */
    /* watchdog; wd_attached is the owning thread's, the rest under the watchdog's mutex */
    int wd_attached;
    int watched;
    uint64_t next_us;
    uint32_t interval_ms, max_ext;
    uint64_t hold_until_us; /* 0: no cap */
    uint8_t hold_reached;   /* an extension made the lock last to hold_until_us: none follows */
    redlock_lost_fn on_lost;
    void *lost_arg;
    size_t wd_idx; /* its place in the watchdog's heap while watched */
    /* kept when a pooled object is reused: everything above is reset */
    pthread_mutex_t mu; /* serialises extends (caller vs watchdog) */
    char *res1_buf;     /* storage for a single resource name */
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

/* ctx.c: sets up the zeroed rl from opt (checked here: CONFIG / INVALID
 * with err naming the bad value), without its driver. On failure the
 * caller still calls rl_ctx_destroy. */
int rl_ctx_init(redlock_t *rl, const redlock_options_t *opt, char *err, size_t errlen);
void rl_ctx_destroy(redlock_t *rl);
/* joint.c: copies opt's node URIs into rl (opt.nodes, node_names), both
 * lists' distinct nodes when next_nodes is set (rl->joint, rl->lists).
 * opt was checked. Returns 0, or -1 when out of memory. */
int rl_joint_nodes(redlock_t *rl, const redlock_options_t *opt);

/* joint.c: the options rl was made with into *o, its two lists put back
 * (cur and next: room for REDLOCK_MAX_NODES each, used by o). */
void rl_joint_options(const redlock_t *rl, redlock_options_t *o, const char **cur, const char **next);

/* joint.c: prepares r as rl_round_init does, for every node of rl, and
 * counts it per list when rl is joint. */
void rl_round_begin(const redlock_t *rl, rl_round_t *r, int stop, redlock_node_report_t *nodes);
/* Sets rl->fp from its node list(s) (membership.h). Returns 0, or -1 when
 * out of memory. */
int rl_joint_fingerprint(redlock_t *rl);

/* ctx.c: the node set's configuration, and the parsed node URIs (n_nodes
 * entries; the caller hands them to rl_nodes_init). */
void rl_ctx_nodes_config(redlock_t *rl, rl_nodes_config_t *cfg);
int rl_ctx_parse_uris(const redlock_t *rl, rl_uri_t *uris);

/* check.c: checks a call's resource set and TTL. Returns REDLOCK_OK or
 * REDLOCK_ERR_INVALID with the bad value named in msg. */
int rl_check_request(const redlock_t *rl, const rl_keys_t *keys, uint32_t ttl_ms, char *msg, size_t msglen);
int rl_check_keys(const rl_keys_t *keys, char *msg, size_t msglen); /* the resources alone */
int rl_check_ttl(const redlock_t *rl, uint32_t ttl_ms, char *msg, size_t n);
int rl_check_wait(int64_t wait_ms, char *msg, size_t n); /* -1, 0 or a bound in ms */
/* A permit request of keys (checked) with limit: 1..64 permits, slot keys
 * within REDLOCK_MAX_RESOURCE. */
int rl_check_permit(const redlock_t *rl, const rl_keys_t *keys, unsigned limit, char *msg, size_t n);
/* REDLOCK_ERR_CONFIG, naming the kind (e.g. "permits"), when the handle
 * has a lock-delay: only a single-resource mutex has one. */
int rl_check_delay(const redlock_t *rl, const char *kind, char *msg, size_t n);
/* check.c: checks that lock may be used with rl (INVALID when it was
 * acquired through another handle). */
int rl_check_lock(const redlock_t *rl, const redlock_lock_t *lock, char *msg, size_t n);

/* report.c: report helpers (rep may be NULL). rl_report_votes copies a
 * round's per-node votes, errors and round trips into rep (for a round
 * run without per-node detail: the async handle). */
void rl_report_begin(const redlock_t *rl, redlock_report_t *rep);
void rl_report_round(redlock_report_t *rep, const rl_round_t *r, uint64_t end_us);
void rl_report_votes(const redlock_t *rl, redlock_report_t *rep, const rl_round_t *r);
/* A lock-delay refusal's detail: the previous lock expired ago_ms
 * ago, the resource is free in left_ms. */
void rl_delay_detail(char *detail, size_t n, long long ago_ms, long long left_ms);
int rl_report_end(const redlock_t *rl, redlock_report_t *rep, int rc, const char *msg);

/* commands.c: runs one round of argv (EVALSHA <script's sha1> ... when
 * script is set; the core falls back to EVAL on NOSCRIPT) through rl->send. */
void rl_run_round(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens, const rl_script_t *script,
                  rl_classify_fn classify);
/* commands.c: encodes argv into cmd (r->cmd) and, when rl has cluster
 * nodes, into ccmd with its keys named as on a cluster (r->ccmd, r->hslot).
 * Returns 0, or -1 when out of memory (nothing to free). Else the caller
 * frees both with rl_cmd_free once r was sent. */
struct rl_cmd;
int rl_round_encode(const redlock_t *rl, rl_round_t *r, struct rl_cmd *cmd, struct rl_cmd *ccmd, int argc,
                    const char *const *argv, const size_t *lens);
/* commands.c: a plain command round (no script). */
void rl_run_command(redlock_t *rl, rl_round_t *r, int argc, const char **argv, size_t *lens, rl_classify_fn classify);
/* commands.c: one round of `script` on keys with the token and an optional
 * extra argument (NULL), by EVALSHA with an EVAL fallback. */
void rl_run_script(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys, const char *token,
                   const char *extra);
/* The same with another reply classifier (and r->on_reply, if set, kept). */
void rl_run_script_as(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys, const char *token,
                      const char *extra, rl_classify_fn classify);
/* The same with up to four extra arguments. */
void rl_run_script_args(redlock_t *rl, rl_round_t *r, const rl_script_t *script, const rl_keys_t *keys,
                        const char *token, const char *const *extra, size_t n_extra, rl_classify_fn classify);
/* commands.c: the script that releases a lock on keys: a reader's (shared),
 * a mutex's, or a set's. */
const rl_script_t *rl_release_script(const redlock_t *rl, const rl_keys_t *keys, int shared);

/* fence.c: "<res><suffix>" into buf (cap bytes); returns its length (0
 * when it does not fit). */
size_t rl_key_with(char *buf, size_t cap, const char *res, size_t len, const char *suffix);

/* lock.c: makes a lock for keys/token valid until deadline (NULL if out
 * of memory); single-resource lock objects come from rl's pool, so a warm
 * acquire/release cycle allocates nothing. rl_lock_destroy frees a lock's
 * memory (back to the pool) with no driver clean-up; rl_pool_free empties
 * the pool (the handle is going away). */
redlock_lock_t *rl_lock_new(redlock_t *rl, const rl_keys_t *keys, const char *token, uint32_t ttl_ms, uint64_t t0,
                            uint64_t deadline);
void rl_lock_destroy(redlock_lock_t *lock);
void rl_pool_free(redlock_t *rl);

#endif
