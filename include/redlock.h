/* redlock.h -- libredlock, the Redlock distributed lock for C.
 *
 * One lock held by a majority of N independent Redis masters. This is the
 * whole public interface; everything else lives in src/ and may change.
 *
 * Conventions:
 *  - every function that can fail returns REDLOCK_OK (0) or a negative
 *    REDLOCK_ERR_* code; redlock_strerror() names it.
 *  - objects made by a _new / acquire call are freed by the matching _free
 *    (NULL-safe) or, for locks, by redlock_release().
 *  - strings passed in are copied; nothing the caller owns is kept.
 */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REDLOCK_VERSION_MAJOR 0
#define REDLOCK_VERSION_MINOR 1
#define REDLOCK_VERSION_PATCH 0
#define REDLOCK_VERSION "0.1.0"

/* Limits. */
#define REDLOCK_MAX_NODES 64        /* nodes in one redlock_t */
#define REDLOCK_MAX_RESOURCE 1024   /* bytes in a resource name */
#define REDLOCK_TOKEN_LEN 40        /* hex characters in a lock token */

/* Error codes: X(name, value, message). New codes are only ever appended. */
#define REDLOCK_ERRNO_MAP(X)                                                   \
    X(INVALID, -1, "invalid argument")                                         \
    X(CONFIG, -2, "invalid configuration")                                     \
    X(NOMEM, -3, "out of memory")                                              \
    X(TAKEN, -4, "lock is held by another owner")                              \
    X(NO_QUORUM, -5, "not enough nodes answered to reach a quorum")            \
    X(EXPIRED, -6, "quorum reached but the lock validity ran out")             \
    X(NOT_HELD, -7, "lock is not held (expired or taken over)")                \
    X(AUTH, -8, "authentication or permission refused by a node")              \
    X(IO, -9, "network or protocol error")                                     \
    X(TIMEOUT, -10, "operation timed out")                                     \
    X(SERVER, -11, "node answered with an error")                              \
    X(STALE, -12, "fencing token is older than one the store has seen")        \
    X(QUARANTINED, -13, "node restarted or its clock jumped less than max_ttl_ms ago: no vote") \
    X(CANCELLED, -14, "cancelled before it completed")                         \
    X(DEADLOCK, -15, "this thread already holds the lock and reentrancy is off: waiting would never end") \
    X(SUSPECT, -16, "node stopped answering: skipped until a probe off the round path answers") \
    X(REPLICATION, -17, "the node's write was not acknowledged by enough of its replicas in time")

enum {
    REDLOCK_OK = 0,
#define REDLOCK_ERR_ENUM_(name, value, msg) REDLOCK_ERR_##name = (value),
    REDLOCK_ERRNO_MAP(REDLOCK_ERR_ENUM_)
#undef REDLOCK_ERR_ENUM_
    REDLOCK_ERR_LAST_ = -17
};

typedef struct redlock redlock_t;           /* opaque: config + connection pool */
typedef struct redlock_lock redlock_lock_t; /* opaque: one held lock */

/* Log levels for the optional log callback. Messages never hold tokens or
 * passwords. */
enum { REDLOCK_LOG_ERROR = 0, REDLOCK_LOG_WARN = 1, REDLOCK_LOG_INFO = 2, REDLOCK_LOG_DEBUG = 3 };
typedef void (*redlock_log_fn)(void *arg, int level, const char *msg);

typedef struct redlock_options {
    const char *const *nodes;    /* node URIs: redis://[user[:pass]@]host[:port][/db], rediss:// (TLS), unix:///path */
    size_t n_nodes;
    uint32_t connect_timeout_ms; /* default 100 */
    uint32_t op_timeout_ms;      /* per node per round, default 50 */
    double drift_factor;         /* default 0.01 */
    uint32_t drift_min_ms;       /* default 2 */
    uint32_t retry_count;        /* retries after the first attempt, default 3 */
    uint32_t retry_delay_ms;     /* default 200 */
    uint32_t retry_jitter_ms;    /* default 100 */
    uint32_t node_down_ms;       /* a node silent this long with requests owed is marked down, default 1000 */
    uint32_t reconnect_min_ms;   /* first reconnect backoff after a node fails, default 50 */
    uint32_t reconnect_max_ms;   /* backoff cap (doubles up to this), default 1000 */
    uint32_t max_inflight;       /* requests owed by one node before it is marked down, default 4096 */
    redlock_log_fn log;          /* optional; called from the calling thread */
    void *log_arg;
    int log_level;               /* highest level passed to log, default REDLOCK_LOG_WARN */
    int reentrant;               /* a thread re-acquiring a resource it holds gets it at once, default 1 */
    /* TLS, for rediss:// nodes (OpenSSL). Files are read by redlock_new. */
    const char *tls_ca_file;     /* PEM CA bundle; NULL: tls_ca_dir or the system's default store */
    const char *tls_ca_dir;      /* directory of hashed CA certificates, or NULL */
    const char *tls_cert_file;   /* client certificate chain for mutual TLS, or NULL */
    const char *tls_key_file;    /* its private key (required with tls_cert_file) */
    int tls_verify_peer;         /* verify the node's certificate and host name, default 1 */
    const char *tls_server_name; /* name to verify and send as SNI instead of the URI's host, or NULL */
    int fencing;                 /* give each single-resource lock a fencing token (two rounds), default 0 */
    uint32_t max_ttl_ms;         /* the longest TTL any client uses on these nodes; 0 (default): unknown */
    int quarantine;              /* with max_ttl_ms: a node restarted less than max_ttl_ms ago gets no
                                    vote in acquires (its data may be gone), default 1 */
    uint32_t clock_jump_ms;      /* with max_ttl_ms: a node whose clock (TIME) moved more than this beyond
                                    the time that passed here gets no acquire vote for max_ttl_ms;
                                    default 100; 0: no clock-jump detection */
    uint32_t clock_check_ms;     /* sample a node's TIME at most this often, piggy-backed on acquires;
                                    default 1000; 0: on every acquire */
    int stats;                   /* keep the counters of redlock_stats, default 1; 0: count nothing */
    /* A silent minority (doc/design.md). A node whose request timed out is suspect: rounds do
       not send it anything (its vote fails at once, REDLOCK_ERR_SUSPECT) until a probe (a fresh
       connection and PING, off the round path) answers; then it rejoins at once. */
    uint32_t probe_min_ms;       /* first wait between probes of a suspect node, default 50 */
    uint32_t probe_max_ms;       /* the wait doubles up to this, default 1000 */
    uint32_t grace_rtts;         /* once a round's outcome is known, the nodes still unheard are waited
                                    for this many round trips of the slowest that answered (at least
                                    0.5 ms, at most op_timeout_ms), default 4 */
    /* Replicated nodes. With min_replicas N > 0, an acquire's or an extend's write on a node is
       followed in the same write by WAIT N T (T: the node's time left), and the node's yes counts
       only once N replicas acknowledged it (else its vote fails, REDLOCK_ERR_REPLICATION): a
       failover that promotes one of them keeps the lock. A node's URI parameter replicas=N
       overrides it for that node. Default 0: votes count on the primary's word. */
    uint32_t min_replicas;       /* 0..1000, default 0 */
    /* more fields may follow; callers always start from redlock_options_init */
} redlock_options_t;

/* How one node took part in one call. */
typedef enum redlock_vote {
    REDLOCK_VOTE_NONE = 0, /* not asked (call ended before, or bad input) */
    REDLOCK_VOTE_YES,      /* granted / deleted / extended */
    REDLOCK_VOTE_NO,       /* taken by another / token not there */
    REDLOCK_VOTE_TIMEOUT,  /* no answer before the node's deadline */
    REDLOCK_VOTE_DOWN,     /* skipped: node is down, waiting for its reconnect backoff */
    REDLOCK_VOTE_ERROR     /* error reply, closed connection, refused connect, auth */
} redlock_vote_t;

typedef struct redlock_node_report {
    const char *node;   /* the node's URI with any password masked; owned by the redlock_t */
    redlock_vote_t vote;
    int err;            /* REDLOCK_OK for YES/NO, else the REDLOCK_ERR_* that explains it */
    int64_t rtt_us;     /* round trip of this node's answer, -1 if none */
    char detail[256];   /* the node's error text, or a short explanation; for a node that
                           cannot be reached, every address tried and why
                           ("localhost: [::1]:6379 connection refused; 127.0.0.1:6379 timed out") */
    char address[72];   /* the address the node's connection uses ("127.0.0.1:6379",
                           "[::1]:6379" or a socket path), "" when it has none */
} redlock_node_report_t;

/* What one call did, node by node. Filled by the _ex calls when non-NULL. */
typedef struct redlock_report {
    int result;             /* the call's return code */
    uint32_t attempts;      /* acquire attempts made (1 for other calls) */
    size_t n_nodes, quorum;
    size_t yes, no, failed; /* votes of the last round */
    int64_t elapsed_us;     /* of the last round */
    int64_t validity_ms;    /* of the lock after the call; 0 if none */
    int slot;               /* redlock_acquire_permit: the permit's slot (0-based); -1 otherwise */
    char message[256];      /* why, in words: names the bad value for INVALID/CONFIG */
    redlock_node_report_t nodes[REDLOCK_MAX_NODES];
} redlock_report_t;

/* Fill opt with the defaults above (nodes NULL, n_nodes 0). */
void redlock_options_init(redlock_options_t *opt);

/* Make a redlock_t from opt (copies what it keeps; connects lazily).
 * Returns REDLOCK_OK and sets *out, or an error and sets *out = NULL.
 * redlock_new_ex also writes a message naming the bad value into err. */
int redlock_new(redlock_t **out, const redlock_options_t *opt);
int redlock_new_ex(redlock_t **out, const redlock_options_t *opt, char *err, size_t errlen);
void redlock_free(redlock_t *rl); /* NULL-safe; closes connections */

/* Semaphores (doc/design.md, "Semaphores and read-write locks"): one of `limit` permits of resource, 1 <= limit
 * <= REDLOCK_MAX_PERMITS. Every permit is a Redlock mutex on one of the
 * slot keys "<resource>:permit:<i>", i = 0 .. limit-1: holding a permit is
 * holding one slot on a quorum of nodes, so never more than `limit`
 * holders, with any minority of nodes down. ttl_ms and wait_ms as for
 * redlock_acquire_ex (a wait ends when a permit frees: its release is
 * announced on redlock:released:<resource>). The lock extends, releases
 * and auto-extends like any other; redlock_lock_resource() is its slot
 * key and redlock_lock_slot() its slot. Every caller must use the same
 * limit for one resource. */
#define REDLOCK_MAX_PERMITS 64

/* Read-write locks (doc/design.md, "Semaphores and read-write locks"): a reader's lock of resource. Readers
 * share it; a writer is an ordinary redlock_acquire* of the same name, so
 * any Redlock client's exclusive lock on it and its readers exclude each
 * other. Readers are recorded in the resource's own key (a hash of reader
 * token -> expiry, the key living as long as its longest reader); a
 * waiting writer marks "<resource>:redlock:writer" so that new readers
 * wait behind it. The lock extends, releases and auto-extends like any
 * other (a reader has no fencing token). A key of another type is
 * REDLOCK_ERR_SERVER with the nodes' words ("WRONGTYPE ..."). */
int redlock_acquire_shared(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                           redlock_lock_t **out, redlock_report_t *rep);
int redlock_lock_is_shared(const redlock_lock_t *lock); /* 1 for a reader's lock */
int redlock_acquire_permit(redlock_t *rl, const char *resource, unsigned limit, uint32_t ttl_ms, int64_t wait_ms,
                           redlock_lock_t **out, redlock_report_t *rep);

/* Acquire resource for ttl_ms, retrying per the options. On REDLOCK_OK *out
 * is a new lock the caller releases or frees; on error *out = NULL. */
int redlock_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out);
/* One attempt, no retries. */
int redlock_try_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out);
/* Full form: retries stop after retry_count retries or once wait_ms have
 * passed (wait_ms -1: no wait bound; 0: one attempt; below -1 is
 * REDLOCK_ERR_INVALID), whichever first. A waiting caller re-attempts when
 * the holder's release is announced on redlock:released:<resource> (not
 * counted as a retry), when the holder's key expires (the refused attempt
 * learns its remaining TTL), or after retry_delay_ms +- retry_jitter_ms,
 * whichever comes first; callers of one handle waiting for the same
 * resource queue in arrival order.
 * Waiting (wait_ms != 0) for a resource this thread already holds, with
 * reentrancy off, is REDLOCK_ERR_DEADLOCK at once.
 * report may be NULL. */
int redlock_acquire_ex(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                       redlock_lock_t **out, redlock_report_t *report);

/* Makes every blocking wait of rl's acquires (their retry delays) end at
 * once with REDLOCK_ERR_CANCELLED, after releasing what their last attempt
 * may have set. Safe from any thread and from a signal handler (it only
 * bumps an atomic counter and writes one byte to a pipe). Waits that
 * start afterwards are not affected. */
void redlock_cancel_waits(redlock_t *rl);

/* Reset the lock's TTL to ttl_ms on a quorum. On failure the lock keeps
 * its old deadline. */
int redlock_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms);
int redlock_extend_ex(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *report);

/* Release on all nodes; always frees lock. REDLOCK_OK when a quorum deleted
 * it, REDLOCK_ERR_NOT_HELD when a quorum no longer had it. */
int redlock_release(redlock_t *rl, redlock_lock_t *lock);
int redlock_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *report);

/* Free a lock without releasing it (its keys expire by TTL). NULL-safe. */
void redlock_lock_free(redlock_lock_t *lock);

/* Acquire several resources as one lock: on each node all of them are set
 * or none (a Lua script), with the same quorum and validity rules as a
 * single resource. Extend and release act on the whole set. At most
 * REDLOCK_MAX_RESOURCES, no duplicates. Multi-resource locks are not
 * reentrant. */
#define REDLOCK_MAX_RESOURCES 64
int redlock_acquire_multi(redlock_t *rl, const char *const *resources, size_t n, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_lock_t **out, redlock_report_t *report);

/* Take over a lock another process (or an earlier instance of this one)
 * acquired, from its resource and token (40 lowercase hex characters,
 * e.g. redlock_lock_token() passed along): one round of the extend script
 * on every node resets the key's TTL to ttl_ms where it still holds token,
 * with extend's quorum and validity rules. On REDLOCK_OK *out is a new lock
 * with fresh validity, usable like an acquired one (extend, release,
 * auto-extension); the handing-over process should then free its own
 * handle with redlock_lock_free, not release it. REDLOCK_ERR_NOT_HELD when
 * enough nodes do not hold token that no quorum can; INVALID for a
 * malformed token (the message gives its length or the bad position, never
 * the token), and for a resource whose key is of another kind on more
 * nodes than a quorum can spare (a read-write lock's readers: a reader
 * cannot be adopted). A permit is adopted by its slot key
 * ("<resource>:permit:<slot>"). A failed adoption changes nothing the holder relies on (no
 * key is deleted). redlock_lock_fence() of an adopted lock is 0: the
 * fencing counter is kept per resource, not per holder, so the token's
 * fence cannot be read back; hand it over alongside the token. */
int redlock_lock_adopt(redlock_t *rl, const char *resource, const char *token, uint32_t ttl_ms,
                       redlock_lock_t **out, redlock_report_t *report);

/* Remaining validity in ms; <= 0 once expired or lost. */
int64_t redlock_lock_validity_ms(const redlock_lock_t *lock);
/* 1 when the lock is neither lost nor expired and still has more than
 * margin_ms of validity: call it right before a protected side effect. */
int redlock_lock_valid(const redlock_lock_t *lock, uint32_t margin_ms);
/* 1 once the watchdog found the lock lost (taken over, expired, or no
 * quorum before the validity ran out); 0 otherwise. */
int redlock_lock_lost(const redlock_lock_t *lock);
const char *redlock_lock_resource(const redlock_lock_t *lock); /* the first resource */
size_t redlock_lock_resource_count(const redlock_lock_t *lock);
const char *redlock_lock_resource_at(const redlock_lock_t *lock, size_t i); /* NULL past the end */
const char *redlock_lock_token(const redlock_lock_t *lock);   /* 40 hex chars */
int redlock_lock_slot(const redlock_lock_t *lock); /* a permit's slot (0-based), -1 for other locks */

/* ---- Fencing tokens ----
 * With opt.fencing, each successful single-resource acquire also yields a
 * 64-bit fencing token, strictly greater than the token of every earlier
 * holder of the same resource. It is kept in a counter key next to the
 * lock ("<resource>:redlock:fence", no TTL) and made in two rounds: the
 * acquire returns each granting node's counter (never below that node's
 * clock in microseconds); the client takes the maximum + 1 and writes it
 * back, set-if-greater, where the lock is still its own; the acquire
 * succeeds only if a quorum confirmed the write-back within the validity.
 * 0 for locks acquired without fencing or on several resources. */
uint64_t redlock_lock_fence(const redlock_lock_t *lock);

/* For a protected resource that is itself in Redis: writes value to key on
 * the nodes of `store` (a redlock_t over the storage node or nodes, not the
 * lock nodes) only if fence is at least the highest token the store has
 * seen for key. Returns REDLOCK_OK when a quorum of the store's nodes
 * wrote, REDLOCK_ERR_STALE when a quorum refused a stale token. */
int redlock_fenced_set(redlock_t *store, const char *key, const char *value, uint64_t fence,
                       redlock_report_t *report);

/* ---- Auto-extension (the watchdog) ----
 * A background thread (one per redlock_t, started on first use) extends the
 * lock by its TTL every interval_ms. It never extends a lock whose local
 * validity is gone: that would be a silent re-acquire. When an extension is
 * refused (taken over), or no extension reaches a quorum before the
 * validity runs out, or the cap is reached and the lock expires, the lock is
 * marked lost and on_lost is called once, from the watchdog thread, with
 * the reason (REDLOCK_ERR_NOT_HELD, REDLOCK_ERR_NO_QUORUM, REDLOCK_ERR_EXPIRED
 * ...). on_lost may call redlock_lock_valid/lost/validity, and may release
 * or free the lock; it must not block for long. Releasing (or freeing) the
 * lock stops its watchdog first. */
typedef void (*redlock_lost_fn)(redlock_lock_t *lock, int reason, void *arg);

typedef struct redlock_autoextend_options {
    uint32_t interval_ms;     /* 0 (default): a third of the lock's TTL */
    uint32_t max_extensions;  /* 0 (default): no cap on the number of extensions */
    uint64_t max_hold_ms;     /* 0 (default): no cap on the total hold time */
} redlock_autoextend_options_t;

void redlock_autoextend_options_init(redlock_autoextend_options_t *o);
/* Starts auto-extension of lock (opt may be NULL for the defaults). Returns
 * REDLOCK_ERR_NOT_HELD if the lock is already expired or lost, INVALID if
 * it is already auto-extended. */
int redlock_autoextend(redlock_t *rl, redlock_lock_t *lock, const redlock_autoextend_options_t *opt,
                       redlock_lost_fn on_lost, void *arg);
/* Stops auto-extension (waits for an extension in progress). The lock
 * keeps its current deadline. */
int redlock_autoextend_stop(redlock_t *rl, redlock_lock_t *lock);
/* Extensions the watchdog made so far. */
uint32_t redlock_lock_extensions(const redlock_lock_t *lock);

/* ---- Statistics ----
 * Every redlock_t counts what it does (unless opt.stats is 0), with relaxed
 * atomics and no allocation per call: calls by result, each node's votes
 * by kind and round trips, reconnects, and how long rounds take. A round
 * is one command sent to every node (an acquire attempt, its clean-up
 * release, an extend, a release, a fencing write-back, a query). A node's
 * vote is counted as the call's report shows it: a reply that came after
 * its round was decided is not a vote. Counters only grow, from
 * redlock_new to redlock_free. */
#define REDLOCK_STATS_CODES 32   /* result slots: [-rc] for rc = 0 .. -31 (REDLOCK_OK is [0]) */
#define REDLOCK_STATS_BUCKETS 16 /* 50 us .. 2.5 s in 1-2.5-5 steps, then +Inf */

typedef struct redlock_histogram {
    uint64_t bucket[REDLOCK_STATS_BUCKETS]; /* observations per bucket (not cumulative); the last is +Inf */
    uint64_t count;                         /* the sum of bucket[] */
    uint64_t sum_us;                        /* the sum of the observations, in microseconds */
} redlock_histogram_t;

typedef struct redlock_node_stats {
    const char *node;       /* the node's URI with any password masked; owned by the redlock_t */
    uint64_t yes, no, timeout, error; /* votes by kind */
    uint64_t down;          /* skipped: down, waiting for its reconnect backoff */
    uint64_t quarantined;   /* skipped or refused: restarted or clock jumped (an acquire's REDLOCK_VOTE_DOWN) */
    uint64_t reconnects;    /* connection attempts made after the node had failed */
    redlock_histogram_t rtt; /* round trip of each vote that came with an answer */
    uint64_t suspect;       /* skipped: suspect (it timed out; waiting for a probe to answer) */
    uint64_t suspected;     /* times it became suspect (a request of it timed out) */
    uint64_t probes;        /* probes sent to it while suspect */
} redlock_node_stats_t;

typedef struct redlock_stats {
    uint64_t acquires[REDLOCK_STATS_CODES]; /* acquire calls by result: [0] granted, [-REDLOCK_ERR_TAKEN] ... */
    uint64_t extends[REDLOCK_STATS_CODES];  /* extend calls by result, the watchdog's included */
    uint64_t releases[REDLOCK_STATS_CODES]; /* release calls by result */
    uint64_t adopts[REDLOCK_STATS_CODES];   /* redlock_lock_adopt calls by result */
    uint64_t locks_lost;    /* locks the watchdog declared lost */
    uint64_t waits;         /* acquire calls that found the lock taken and waited on its release channel */
    uint64_t wakeups;       /* release announcements heard that woke such a waiter */
    uint64_t splits;        /* acquire attempts that split the vote (some yes, some no, no quorum):
                               the next attempt backs off a random fraction of a round trip */
    redlock_histogram_t rounds; /* duration of every round */
    size_t n_nodes;
    redlock_node_stats_t nodes[REDLOCK_MAX_NODES];
} redlock_stats_t;

/* Copies rl's counters into *out (a snapshot: counters taken one by one
 * while other threads go on). Returns REDLOCK_OK, or INVALID for NULL. */
int redlock_stats(redlock_t *rl, redlock_stats_t *out);
/* Writes the counters in the Prometheus text exposition format (version
 * 0.0.4): metrics named redlock_*, nodes as node="<masked URI>". Like
 * snprintf, returns the length of the whole text (without its NUL) and
 * writes at most len bytes, always NUL-terminated when len > 0: a return
 * >= len means buf held only a prefix; len 0 writes nothing (buf may then
 * be NULL). Returns REDLOCK_ERR_INVALID for a NULL rl (or buf with len > 0). */
int redlock_stats_prometheus(redlock_t *rl, char *buf, size_t len);
/* Upper bound of histogram bucket i in microseconds; UINT64_MAX for the
 * last (+Inf) and beyond. */
uint64_t redlock_stats_bucket_us(size_t i);

/* ---- Non-blocking use (event loops) ----
 * A redlock_async_t is one event loop's handle: its own connections, one
 * per node, driven by the loop's thread only. Every call returns at once.
 * Rules: a call that returns an error did nothing and runs no callback; a
 * call that returns REDLOCK_OK runs its callback exactly once, later, from
 * the loop (never from inside the call). `report` is valid only during the
 * callback. A callback may call any redlock_async_* function, including
 * redlock_async_free of its own handle. Retries and auto-extension are loop
 * timers on the handle; no thread is started. Locks from the handle are
 * used with its functions (redlock_lock_* accessors and redlock_lock_free
 * work too); passing one to another handle, or to a redlock_t, is INVALID.
 *
 * Attach an adapter before the first call: include <redlock/libuv.h>
 * (redlock_libuv_attach) or <redlock/libevent.h> (redlock_libevent_attach),
 * or fill a redlock_async_hooks_t for your own loop. */
typedef struct redlock_async redlock_async_t;

typedef void (*redlock_acquire_cb)(redlock_lock_t *lock, int rc, const redlock_report_t *report, void *arg);
typedef void (*redlock_done_cb)(int rc, const redlock_report_t *report, void *arg);

/* Makes a handle (opt as for redlock_new; validated the same way, with
 * REDLOCK_ERR_CONFIG naming the bad value). No socket is opened yet. */
int redlock_async_new(redlock_async_t **out, const redlock_options_t *opt);
/* The same, with the reason a CONFIG / INVALID refusal names written into
 * err (errlen bytes, may be NULL), as redlock_new_ex. */
int redlock_async_new_ex(redlock_async_t **out, const redlock_options_t *opt, char *err, size_t errlen);
/* NULL-safe. Pending calls' callbacks run once each, from inside this
 * call, with REDLOCK_ERR_CANCELLED; what pending acquires had set is
 * released (the release is written before the sockets close) and pending
 * releases still go out. Granted locks not yet released are detached (they
 * expire by their TTL; free them with redlock_lock_free). */
void redlock_async_free(redlock_async_t *a);

/* wait_ms as in redlock_acquire_ex: -1 no bound, 0 one attempt. */
int redlock_async_acquire(redlock_async_t *a, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_acquire_cb cb, void *arg);
/* redlock_acquire_permit through the loop (the same rules and callback). */
int redlock_async_acquire_permit(redlock_async_t *a, const char *resource, unsigned limit, uint32_t ttl_ms,
                                 int64_t wait_ms, redlock_acquire_cb cb, void *arg);
/* redlock_acquire_shared through the loop. */
int redlock_async_acquire_shared(redlock_async_t *a, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                                 redlock_acquire_cb cb, void *arg);
/* Extends lock to ttl_ms from now (see redlock_extend_ex). */
int redlock_async_extend(redlock_async_t *a, redlock_lock_t *lock, uint32_t ttl_ms, redlock_done_cb cb, void *arg);
/* Releases lock on every node; the lock handle is freed at once (do not use
 * it after this call returns REDLOCK_OK); cb may be NULL. */
int redlock_async_release(redlock_async_t *a, redlock_lock_t *lock, redlock_done_cb cb, void *arg);
/* Cancels every pending acquire started with arg: each callback then runs
 * once, from the loop, with REDLOCK_ERR_CANCELLED, and whatever it had set
 * on the nodes is released. Returns how many were cancelled (0 if none),
 * or REDLOCK_ERR_INVALID for a NULL handle. */
int redlock_async_cancel(redlock_async_t *a, void *arg);
/* Auto-extension on loop timers, with the blocking watchdog's options and
 * rules (see redlock_autoextend); _ex adds the lost-lock callback, which
 * runs from the loop. Stop it with redlock_async_autoextend_stop, or by
 * releasing or freeing the lock. */
int redlock_async_autoextend(redlock_async_t *a, redlock_lock_t *lock, const redlock_autoextend_options_t *opt);
int redlock_async_autoextend_ex(redlock_async_t *a, redlock_lock_t *lock, const redlock_autoextend_options_t *opt,
                                redlock_lost_fn on_lost, void *arg);
int redlock_async_autoextend_stop(redlock_async_t *a, redlock_lock_t *lock);
/* Counters of the handle (see redlock_stats). */
int redlock_async_stats(redlock_async_t *a, redlock_stats_t *out);

/* Hooks an event loop adapter gives the handle (the hiredis adapter
 * model). The handle calls them from its own functions to say which file
 * descriptors it wants watched and when it next needs a timer:
 * add_read/del_read/add_write/del_write for fd (several fds: one per node
 * plus one the name resolver wakes it through); del_* are called before
 * the handle closes an fd. set_timer asks for one call of
 * redlock_async_handle_timer after ms milliseconds (replacing any earlier
 * request); clear_timer cancels it. cleanup runs once from
 * redlock_async_free, after every fd was deleted: free the adapter there.
 * A hook may be NULL only if the loop never needs it. */
typedef struct redlock_async_hooks {
    void *data; /* the adapter's, passed to every hook */
    void (*add_read)(void *data, int fd);
    void (*del_read)(void *data, int fd);
    void (*add_write)(void *data, int fd);
    void (*del_write)(void *data, int fd);
    void (*set_timer)(void *data, uint64_t ms);
    void (*clear_timer)(void *data);
    void (*cleanup)(void *data);
} redlock_async_hooks_t;

/* Installs hooks (copied) and announces the fds and timer the handle
 * needs now. Returns INVALID for NULL, or when hooks are already set. */
int redlock_async_set_hooks(redlock_async_t *a, const redlock_async_hooks_t *hooks);
/* The adapter calls these when fd is readable / writable, or the timer
 * fired. Callbacks of completed calls run from inside them. */
void redlock_async_handle_read(redlock_async_t *a, int fd);
void redlock_async_handle_write(redlock_async_t *a, int fd);
void redlock_async_handle_timer(redlock_async_t *a);

const char *redlock_strerror(int err);
const char *redlock_vote_name(redlock_vote_t vote); /* "yes", "no", "timeout", ... */
size_t redlock_quorum(size_t n_nodes);              /* n/2 + 1 */

#ifdef __cplusplus
}
#endif
#endif /* REDLOCK_H */
