/**
 * @file redlock.h
 * @brief libredlock, the Redlock distributed lock for C: the whole public
 * interface, and its reference.
 *
 * A lock is held by a majority (the quorum, N/2 + 1) of N independent
 * Redis nodes, each storing the lock's random token, for its time-to-live
 * minus the time the acquisition took and a clock-drift allowance. The
 * guide is doc/ (start at README.md); the design is doc/design.md.
 *
 * @par Return codes
 * Every function that can fail returns ::REDLOCK_OK (0) or a negative
 * `REDLOCK_ERR_*` code (see #REDLOCK_ERRNO_MAP); redlock_strerror() names
 * it. A call that fails on bad input returns ::REDLOCK_ERR_INVALID (or
 * ::REDLOCK_ERR_CONFIG for options) and, when it takes a report, says in
 * its message which value was bad.
 *
 * @par Ownership
 * Strings and arrays passed in are copied when they are kept; nothing the
 * caller owns is kept after a call returns (callbacks' `arg` pointers are
 * kept as pointers, not followed). Every object made by a `_new` call is
 * freed by the matching `_free`, which accepts NULL. A lock
 * (::redlock_lock_t) is freed by redlock_release(), redlock_release_ex()
 * or redlock_async_release() (always, whatever they return), or by
 * redlock_lock_free() without releasing it. Strings a lock or a handle
 * returns (resource names, tokens, node URIs in reports and statistics)
 * stay valid as long as the object that returned them.
 *
 * @par Threads
 * A ::redlock_t may be shared by any number of threads: every blocking call
 * may be made from several threads at once, and their commands to a node
 * share one pipelined connection. redlock_free() must be called once, when
 * no other call on the handle is running. A ::redlock_lock_t belongs to one
 * thread at a time and is used with the handle that made it. A
 * ::redlock_report_t belongs to the call it is passed to.
 * redlock_cancel_waits() may be called from any thread and from a signal
 * handler. A ::redlock_async_t belongs to the thread that runs its event
 * loop, as do its locks and its callbacks. The library keeps no global state
 * beyond libsodium's `sodium_init()`.
 *
 * @par The threads of a blocking handle
 * Each starts the first time it is needed (none for a handle that is only
 * made and freed), blocks every signal, and is stopped and joined by
 * redlock_free(): the idle driver (I/O between calls: late replies,
 * clean-ups, connects, probes), the release listener (from the first wait
 * for a taken lock), the watchdog (from the first redlock_autoextend()),
 * and a short-lived thread per host-name or Sentinel lookup. An async
 * handle starts no thread but lookups.
 *
 * @par Blocking
 * A blocking call waits for at most its rounds (each bounded by
 * `connect_timeout_ms + op_timeout_ms` per node) and, for acquires, its
 * retries or wait bound, as each function says; the async calls never
 * block.
 */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Major version of this header: an incompatible API or ABI change raises it. */
#define REDLOCK_VERSION_MAJOR 0
/** @brief Minor version: compatible additions. */
#define REDLOCK_VERSION_MINOR 1
/** @brief Patch version: fixes only. */
#define REDLOCK_VERSION_PATCH 0
/** @brief The version as a string, "MAJOR.MINOR.PATCH". */
#define REDLOCK_VERSION "0.1.0"

/* Limits. */
#define REDLOCK_MAX_NODES 64      /**< nodes in one handle (redlock_options_t::n_nodes at most) */
#define REDLOCK_MAX_RESOURCE 1024 /**< bytes in a resource name, at most */
#define REDLOCK_TOKEN_LEN 40      /**< hex characters in a lock token (20 random bytes) */

/**
 * @brief The error codes: `X(name, value, message)` for each, giving
 * `REDLOCK_ERR_<name>` = value and redlock_strerror()'s message. New codes
 * are only ever appended; values never change.
 *
 * - `INVALID` (-1): a bad argument (NULL handle, lock or out pointer; an
 *   empty, NULL or over-long resource; a TTL of 0, above 2147483647 or too
 *   short to ever be valid; a lock used with another handle), named in the
 *   report's message.
 * - `CONFIG` (-2): bad options at redlock_new(): a value out of range, no
 *   nodes or more than #REDLOCK_MAX_NODES, a malformed or duplicate URI, an
 *   unreadable TLS file.
 * - `NOMEM` (-3): an allocation failed.
 * - `TAKEN` (-4): acquire: the nodes that said "held by another token"
 *   were enough on their own to make a quorum impossible.
 * - `NO_QUORUM` (-5): too few nodes answered usefully (timeouts, errors,
 *   nodes down, suspect or quarantined); for a release: the outcome is
 *   unknown and the keys expire by their TTL.
 * - `EXPIRED` (-6): a quorum granted (or extended) but no validity was left.
 * - `NOT_HELD` (-7): extend, release, adopt: the lock is gone (expired,
 *   released, taken over), locally or on enough nodes.
 * - `AUTH` (-8): refused credentials or permissions alone made a quorum
 *   impossible.
 * - `IO` (-9), `TIMEOUT` (-10): only in a node's report (`err`): a
 *   connection or protocol error; no answer in time.
 * - `SERVER` (-11): an error reply; returned by a reader's acquire when a
 *   quorum answered with one (a key of another type), else only in a
 *   node's report.
 * - `STALE` (-12): redlock_fenced_set(): the store saw a newer token.
 * - `QUARANTINED` (-13): only in a node's report: the node restarted, its
 *   clock jumped, or it was promoted from a replica less than
 *   `max_ttl_ms` ago, and votes in no acquire.
 * - `CANCELLED` (-14): a wait ended by redlock_cancel_waits(), or an async
 *   call cancelled by redlock_async_cancel() or redlock_async_free().
 * - `DEADLOCK` (-15): a thread would wait for a lock it holds itself, with
 *   re-entry off.
 * - `SUSPECT` (-16): only in a node's report: the node stopped answering
 *   and is skipped until a probe answers.
 * - `REPLICATION` (-17): only in a node's report: its write was not
 *   acknowledged by enough replicas in time (`min_replicas`).
 */
#define REDLOCK_ERRNO_MAP(X)                                                                              \
    X(INVALID, -1, "invalid argument")                                                                    \
    X(CONFIG, -2, "invalid configuration")                                                                \
    X(NOMEM, -3, "out of memory")                                                                         \
    X(TAKEN, -4, "lock is held by another owner")                                                         \
    X(NO_QUORUM, -5, "not enough nodes answered to reach a quorum")                                       \
    X(EXPIRED, -6, "quorum reached but the lock validity ran out")                                        \
    X(NOT_HELD, -7, "lock is not held (expired or taken over)")                                           \
    X(AUTH, -8, "authentication or permission refused by a node")                                         \
    X(IO, -9, "network or protocol error")                                                                \
    X(TIMEOUT, -10, "operation timed out")                                                                \
    X(SERVER, -11, "node answered with an error")                                                         \
    X(STALE, -12, "fencing token is older than one the store has seen")                                   \
    X(QUARANTINED, -13, "node restarted or its clock jumped less than max_ttl_ms ago: no vote")           \
    X(CANCELLED, -14, "cancelled before it completed")                                                    \
    X(DEADLOCK, -15, "this thread already holds the lock and reentrancy is off: waiting would never end") \
    X(SUSPECT, -16, "node stopped answering: skipped until a probe off the round path answers")           \
    X(REPLICATION, -17, "the node's write was not acknowledged by enough of its replicas in time")        \
    X(MEMBERSHIP, -18, "the nodes' membership records do not accept this handle's node list now")

/* The list's entries carry no comma, which clang-format cannot see. */
/* clang-format off */
/** @brief The return codes: ::REDLOCK_OK and one `REDLOCK_ERR_<name>` per entry of #REDLOCK_ERRNO_MAP. */
enum {
    REDLOCK_OK = 0, /**< success */
#define REDLOCK_ERR_ENUM_(name, value, msg) REDLOCK_ERR_##name = (value),
    REDLOCK_ERRNO_MAP(REDLOCK_ERR_ENUM_)
#undef REDLOCK_ERR_ENUM_
    REDLOCK_ERR_LAST_ = -18 /**< the last code (the lowest value); it grows more negative as codes are appended */
};
/* clang-format on */
/** @var REDLOCK_ERR_INVALID
 * @brief A bad argument, named in the report. */
/** @var REDLOCK_ERR_CONFIG
 * @brief Bad options or node URIs at redlock_new(). */
/** @var REDLOCK_ERR_NOMEM
 * @brief An allocation failed. */
/** @var REDLOCK_ERR_TAKEN
 * @brief The lock is held by another owner. */
/** @var REDLOCK_ERR_NO_QUORUM
 * @brief Too few nodes answered usefully to reach a quorum. */
/** @var REDLOCK_ERR_EXPIRED
 * @brief A quorum granted but no validity was left. */
/** @var REDLOCK_ERR_NOT_HELD
 * @brief The lock is not held any more (expired, released or taken over). */
/** @var REDLOCK_ERR_AUTH
 * @brief Credentials or permissions refused by enough nodes to prevent a quorum. */
/** @var REDLOCK_ERR_IO
 * @brief A node's connection or protocol failed (in a node's report only). */
/** @var REDLOCK_ERR_TIMEOUT
 * @brief A node did not answer in time (in a node's report only). */
/** @var REDLOCK_ERR_SERVER
 * @brief A node answered with an error (returned by a reader's acquire; else in a node's report). */
/** @var REDLOCK_ERR_STALE
 * @brief Redlock_fenced_set(): the store has seen a newer fencing token. */
/** @var REDLOCK_ERR_QUARANTINED
 * @brief A node restarted, stepped its clock or was promoted less than max_ttl_ms ago: no vote
 * (in a node's report only). */
/** @var REDLOCK_ERR_CANCELLED
 * @brief A wait or an async call was cancelled. */
/** @var REDLOCK_ERR_DEADLOCK
 * @brief This thread would wait for a lock it holds itself. */
/** @var REDLOCK_ERR_SUSPECT
 * @brief A node stopped answering and is skipped until a probe answers (in a node's report only). */
/** @var REDLOCK_ERR_REPLICATION
 * @brief A node's write did not reach enough replicas in time (in a node's report only). */

/**
 * @brief A blocking handle: the options, one connection per node, and the
 * threads that serve them. Made by redlock_new(), freed by redlock_free();
 * shared by every thread of a process.
 */
#ifdef __cplusplus
/* In C++, redlock names the namespace of <redlock/redlock.hpp>, so the opaque
   handle's tag is another there; a tag is no part of the ABI (the functions
   have C linkage). */
typedef struct redlock_handle_ redlock_t;
#else
typedef struct redlock redlock_t; /* opaque: config + connection pool */
#endif
/**
 * @brief One lock: a mutex, a permit of a semaphore, a reader's lock or a
 * set of resources. Made by an acquire (or redlock_lock_adopt()), freed by
 * a release or redlock_lock_free(); used by one thread at a time, with the
 * handle that made it.
 */
typedef struct redlock_lock redlock_lock_t; /* opaque: one held lock */

/** @brief Log levels of redlock_options_t::log_level (each includes the ones above it). */
enum { REDLOCK_LOG_ERROR = 0, REDLOCK_LOG_WARN = 1, REDLOCK_LOG_INFO = 2, REDLOCK_LOG_DEBUG = 3 };
/** @var REDLOCK_LOG_ERROR
 * @brief Errors only: calls refused for bad input or options (with the reason). */
/** @var REDLOCK_LOG_WARN
 * @brief Also warnings: nodes that fail, turn suspect, are quarantined or come back; locks lost (the default). */
/** @var REDLOCK_LOG_INFO
 * @brief Also information about what the nodes do. */
/** @var REDLOCK_LOG_DEBUG
 * @brief Everything, connections included, for debugging. */
/**
 * @brief The optional log callback (redlock_options_t::log): `arg` is
 * redlock_options_t::log_arg, `level` a `REDLOCK_LOG_*` value, `msg` one
 * line without a newline, valid during the call. Messages never hold tokens
 * or passwords. A blocking handle calls it from the threads of its callers
 * and from its own threads (the leader or the idle driver may log a node's
 * event on another caller's behalf), so it must be thread-safe; an async
 * handle calls it from its loop's thread. It must not call back into the
 * handle.
 */
typedef void (*redlock_log_fn)(void *arg, int level, const char *msg);

/** @brief redlock_options_t::retry_jitter_ms's default: half of retry_delay_ms, at most 100 ms, worked
 *  out by redlock_new() (so that setting retry_delay_ms alone is never refused). */
#define REDLOCK_RETRY_JITTER_AUTO UINT32_MAX

/**
 * @brief The options of a handle (blocking or async). Fill it with
 * redlock_options_init() first, then set what differs: more fields may be
 * added in later versions. redlock_new() checks every field and copies what
 * it keeps. doc/options.md has each field's range.
 */
typedef struct redlock_options {
    /** node URIs: redis://[user[:pass]@]host[:port][/db], rediss:// (TLS), unix:///path, redis+cluster://,
        redis+sentinel:// (see doc/blocking.md) */
    const char *const *nodes;
    size_t n_nodes;              /**< how many URIs nodes holds: 1 .. #REDLOCK_MAX_NODES */
    uint32_t connect_timeout_ms; /**< added to a node's deadline when it must connect first; default 100 */
    uint32_t op_timeout_ms;      /**< per node per round, default 50 */
    double drift_factor;         /**< clock-drift allowance as a fraction of the TTL, default 0.01 */
    uint32_t drift_min_ms;       /**< fixed part of the drift allowance, default 2 */
    uint32_t retry_count;        /**< retries after the first attempt, default 3 */
    uint32_t retry_delay_ms;     /**< mean pause between attempts, default 200 */
    uint32_t retry_jitter_ms;    /**< the pause is uniform in delay +- jitter; default
                                    #REDLOCK_RETRY_JITTER_AUTO: half the delay, at most 100 */
    uint32_t node_down_ms;       /**< a node silent this long with requests owed is marked down, default 1000 */
    uint32_t reconnect_min_ms;   /**< first reconnect backoff after a node fails, default 50 */
    uint32_t reconnect_max_ms;   /**< backoff cap (doubles up to this), default 1000 */
    uint32_t max_inflight;       /**< requests owed by one node before it is marked down, default 4096 (a connection's
                                      own set-up requests come on top) */
    redlock_log_fn log; /**< optional; called from the threads redlock_log_fn says, never with tokens or passwords */
    void *log_arg;      /**< passed to log as its first argument */
    int log_level;      /**< highest level passed to log, default REDLOCK_LOG_WARN */
    int reentrant;      /**< a thread re-acquiring a resource it holds gets it at once, default 1 */
    /* TLS, for rediss:// nodes and TLS sentinels (rediss+sentinel://, sentinel_tls=yes) (OpenSSL).
     * Files are read by redlock_new. */
    const char *tls_ca_file;     /**< PEM CA bundle; NULL: tls_ca_dir or the system's default store */
    const char *tls_ca_dir;      /**< directory of hashed CA certificates, or NULL */
    const char *tls_cert_file;   /**< client certificate chain for mutual TLS, or NULL */
    const char *tls_key_file;    /**< its private key (required with tls_cert_file) */
    int tls_verify_peer;         /**< verify the node's certificate and host name, default 1 */
    const char *tls_server_name; /**< name to verify and send as SNI instead of the URI's host, or NULL */
    int fencing;                 /**< give each single-resource lock a fencing token (two rounds), default 0 */
    uint32_t max_ttl_ms;         /**< the longest TTL any client uses on these nodes; 0 (default): unknown */
    int quarantine;              /**< with max_ttl_ms: a node restarted less than max_ttl_ms ago gets no
                                    vote in acquires (its data may be gone), default 1 */
    uint32_t clock_jump_ms;      /**< with max_ttl_ms: a node whose clock (TIME) moved more than this beyond
                                    the time that passed here gets no acquire vote for max_ttl_ms;
                                    default 100; 0: no clock-jump detection */
    uint32_t clock_check_ms;     /**< sample a node's TIME at most this often, piggy-backed on acquires;
                                    default 1000; 0: on every acquire */
    int stats;                   /**< keep the counters of redlock_stats, default 1; 0: count nothing */
    /* A silent minority (doc/design.md). A node whose request timed out is suspect: rounds do
       not send it anything (its vote fails at once, REDLOCK_ERR_SUSPECT) until a probe (a fresh
       connection and PING, off the round path) answers; then it rejoins at once. */
    uint32_t probe_min_ms; /**< first wait between probes of a suspect node (one whose request timed out), default 50 */
    uint32_t probe_max_ms; /**< the wait doubles up to this, default 1000 */
    uint32_t grace_rtts;   /**< once a round's outcome is known, the nodes still unheard are waited
                              for this many round trips of the slowest that answered (at least
                              0.5 ms, at most op_timeout_ms), default 4 */
    /* Replicated nodes. With min_replicas N > 0, an acquire's or an extend's write on a node is
       followed in the same write by WAIT N T (T: the node's time left), and the node's yes counts
       only once N replicas acknowledged it (else its vote fails, REDLOCK_ERR_REPLICATION): a
       failover that promotes one of them keeps the lock. A node's URI parameter replicas=N
       overrides it for that node. Default 0: votes count on the primary's word. */
    uint32_t min_replicas; /**< replicas a node's write must reach (WAIT) before its yes counts: 0..1000, default 0 */
    /* Changing the node set (doc/membership.md). With next_nodes set the handle is joint: every
       write that grants or keeps something needs a quorum of nodes AND a quorum of next_nodes,
       within one validity; releases go to both lists. A node in both lists (same kind, host, port,
       db and Sentinel group) is one connection and one vote, counted in both. */
    const char *const *next_nodes; /**< the next node list (same URI forms as nodes), or NULL */
    size_t n_next_nodes;           /**< how many URIs next_nodes holds: 0 (no next list) .. #REDLOCK_MAX_NODES */
    /* Lock-delay (doc/safety.md): a mutex that ends by expiring, not by its holder's release, is
       refused to everyone for lock_delay_ms after its expiry (each grant leaves a marker key that
       outlives the lock by the delay; a release deletes both). Every client of a resource must give
       the same delay. Mutexes of one resource only (a writer's lock is one), waiting or not: with
       fencing it is a configuration error, and permits, readers' locks and sets of resources refuse
       it (REDLOCK_ERR_CONFIG). */
    uint32_t lock_delay_ms; /**< 0 (default): none; at most 3600000 (an hour) */
    /* more fields may follow; callers always start from redlock_options_init */
} redlock_options_t;

/** @brief How one node took part in one call (redlock_node_report_t::vote); redlock_vote_name() names it. */
typedef enum redlock_vote {
    /** "pending": not waited for (the round's outcome was known first) or not asked (the call ended
        before, or bad input) */
    REDLOCK_VOTE_NONE = 0,
    REDLOCK_VOTE_YES,     /**< granted / deleted / extended */
    REDLOCK_VOTE_NO,      /**< taken by another / token not there */
    REDLOCK_VOTE_TIMEOUT, /**< no answer before the node's deadline */
    /** skipped at no cost: down (waiting for its reconnect backoff), quarantined or suspect (see err) */
    REDLOCK_VOTE_DOWN,
    REDLOCK_VOTE_ERROR, /**< error reply, closed connection, refused connect, auth, too few replicas */
    /** refused by the node's membership record: it does not accept this handle's node list now, or
        holds a record that cannot be read (the detail names what it accepts and the step to take) */
    REDLOCK_VOTE_MEMBERSHIP
} redlock_vote_t;

/** @brief How one node took part in one call: an entry of redlock_report_t::nodes. */
typedef struct redlock_node_report {
    const char *node;    /**< the node's URI with any password masked; owned by the handle, valid until it is freed */
    redlock_vote_t vote; /**< its vote */
    int err;             /**< REDLOCK_OK for YES/NO, else the REDLOCK_ERR_* that explains it */
    int64_t rtt_us;      /**< round trip of this node's answer, -1 if none */
    char detail[256];    /**< the node's error text, or a short explanation; for a node that
                            cannot be reached, every address tried and why
                            ("localhost: [::1]:6379 connection refused; 127.0.0.1:6379 timed out") */
    char address[72];    /**< the address the node's connection uses ("127.0.0.1:6379",
                            "[::1]:6379" or a socket path), "" when it has none */
    unsigned lists;      /**< the list(s) the node is in: #REDLOCK_IN_NODES, #REDLOCK_IN_NEXT_NODES or both */
} redlock_node_report_t;

#define REDLOCK_IN_NODES 1u      /**< redlock_node_report_t::lists: the node is in redlock_options_t::nodes */
#define REDLOCK_IN_NEXT_NODES 2u /**< redlock_node_report_t::lists: the node is in redlock_options_t::next_nodes */

/** @brief One node list's count of a call's last round (a joint handle's report has two). */
typedef struct redlock_list_tally {
    size_t n_nodes; /**< the list's nodes */
    size_t quorum;  /**< the yes votes it must give: n_nodes / 2 + 1 */
    size_t yes;     /**< yes votes of the list's nodes in the last round */
    size_t no;      /**< their no votes */
    size_t failed;  /**< their failed votes (every kind but yes and no) */
} redlock_list_tally_t;

/**
 * @brief What one call did, node by node. The `_ex` calls fill it when it is
 * not NULL, whatever they return; the async callbacks get one that is valid
 * during the callback only. About 23 KiB: keep it off small stacks.
 */
typedef struct redlock_report {
    int result;                    /**< the call's return code */
    uint32_t attempts;             /**< acquire attempts made (1 for other calls) */
    size_t n_nodes, quorum;        /**< n_nodes: the handle's distinct nodes (a joint handle's: both lists'); quorum:
                               the yes votes a lock needs (N/2 + 1; a joint handle's: see lists) */
    size_t yes, no, failed;        /**< votes of the last round: yes, no, and failed (every other kind) */
    int64_t elapsed_us;            /**< of the last round */
    int64_t validity_ms;           /**< of the lock after the call; 0 if none */
    int slot;                      /**< redlock_acquire_permit: the permit's slot (0-based); -1 otherwise */
    char message[256];             /**< why, in words: names the bad value for INVALID/CONFIG */
    size_t n_lists;                /**< 1, or 2 for a joint handle (redlock_options_t::next_nodes set) */
    redlock_list_tally_t lists[2]; /**< per list: [0] nodes, [1] next_nodes (joint only) */
    redlock_node_report_t
        nodes[REDLOCK_MAX_NODES]; /**< one per node, in the order of redlock_options_t::nodes; n_nodes are set */
} redlock_report_t;
/** @var redlock_report::n_nodes
 * @brief How many nodes the handle has (entries of nodes[] that are set). */
/** @var redlock_report::quorum
 * @brief The yes votes a lock needs: n_nodes / 2 + 1. */
/** @var redlock_report::yes
 * @brief Yes votes of the last round. */
/** @var redlock_report::no
 * @brief No votes of the last round (held by another token, or our token not there). */
/** @var redlock_report::failed
 * @brief Failed votes of the last round: every kind but yes and no. */

/** @brief Fills opt with the defaults above (nodes NULL, n_nodes 0). Never fails; opt must not be NULL. */
void redlock_options_init(redlock_options_t *opt);

/**
 * @brief Makes a blocking handle from opt.
 *
 * Copies the URIs and everything else it keeps, reads the TLS files, and
 * opens no connection yet (nodes connect on first use). Does not block
 * beyond reading those files. May be called from any thread.
 * redlock_new_ex() also writes a message naming the bad value into err
 * (errlen bytes, always terminated; err may be NULL).
 *
 * @return ::REDLOCK_OK with *out set (free it with redlock_free()), else
 * *out = NULL and ::REDLOCK_ERR_INVALID (NULL out or opt),
 * ::REDLOCK_ERR_CONFIG (an option out of range, no nodes or too many, a
 * malformed or duplicate URI, an unreadable TLS file, libsodium failing to
 * start) or ::REDLOCK_ERR_NOMEM.
 */
int redlock_new(redlock_t **out, const redlock_options_t *opt);
/** @copydoc redlock_new */
int redlock_new_ex(redlock_t **out, const redlock_options_t *opt, char *err, size_t errlen);
/**
 * @brief Frees a blocking handle; NULL-safe.
 *
 * Call it once no other call on rl is running. It stops auto-extension
 * (no on_lost callback runs), stops and joins the handle's threads, gives
 * the requests still owed by nodes that answer up to `op_timeout_ms` to
 * complete (so a release just made reaches every node), then closes every
 * connection. Locks still held are not released: their keys expire by
 * their TTL, and their objects stay valid for the accessors until the
 * program frees them with redlock_lock_free(). Blocks for at most about
 * `op_timeout_ms` plus the time the threads take to stop.
 */
void redlock_free(redlock_t *rl); /* NULL-safe; closes connections */

/**
 * @brief Semaphores: the most permits one semaphore has (the `limit` of
 * redlock_acquire_permit()).
 *
 * Every permit is a Redlock mutex on one of the slot keys
 * `"<resource>:permit:<i>"`, i = 0 .. limit-1: holding a permit is holding
 * one slot on a quorum of nodes, so never more than `limit` holders, with
 * any minority of nodes down (doc/semaphores-rwlocks.md; the reasons are in
 * doc/design.md, "Semaphores and read-write locks").
 */
#define REDLOCK_MAX_PERMITS 64

/**
 * @brief Acquires a reader's lock of resource (a read-write lock).
 *
 * Readers share it; a writer is an ordinary redlock_acquire*() of the same
 * name, so any Redlock client's exclusive lock on it and its readers
 * exclude each other. Readers are recorded in the resource's own key (a
 * hash of reader token to expiry, and the field `"@end"`: the hash's own
 * clock; the key lives as long as its longest reader); a waiting writer marks `"<resource>:redlock:writer"` so that new
 * readers wait behind it. ttl_ms and wait_ms, the blocking, the threads
 * and report are as for redlock_acquire_ex(). The lock extends, releases
 * and auto-extends like any other; it has no fencing token.
 *
 * @return ::REDLOCK_OK with *out a new lock (release or free it); else
 * *out = NULL and ::REDLOCK_ERR_TAKEN (a writer holds it or waits),
 * ::REDLOCK_ERR_SERVER (a quorum answered with an error: a key of another
 * type, "WRONGTYPE ..." in the report), ::REDLOCK_ERR_DEADLOCK (this thread
 * holds the resource's write lock and would wait for it), or a code
 * of redlock_acquire_ex().
 */
int redlock_acquire_shared(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                           redlock_report_t *rep);
/** @brief 1 for a reader's lock (redlock_acquire_shared()), 0 for any other or NULL. Any thread; never blocks. */
int redlock_lock_is_shared(const redlock_lock_t *lock); /* 1 for a reader's lock */
/**
 * @brief Acquires one of `limit` permits of the semaphore resource
 * (1 <= limit <= #REDLOCK_MAX_PERMITS).
 *
 * ttl_ms and wait_ms, the blocking, the threads and the report are as for
 * redlock_acquire_ex(); a wait ends when a permit frees (its release is
 * announced on `redlock:released:<resource>`). The lock extends, releases and
 * auto-extends like any other; redlock_lock_resource() is its slot key,
 * redlock_lock_slot() and rep->slot its slot. Every caller must use the same
 * limit for one resource: it is stored nowhere.
 *
 * @return ::REDLOCK_OK with *out a new lock; else *out = NULL and
 * ::REDLOCK_ERR_INVALID (a limit of 0 or above 64, a name whose slot keys
 * would pass #REDLOCK_MAX_RESOURCE, or a bad argument of
 * redlock_acquire_ex()), ::REDLOCK_ERR_TAKEN (every slot held on enough
 * nodes), or another code of redlock_acquire_ex().
 */
int redlock_acquire_permit(redlock_t *rl, const char *resource, unsigned limit, uint32_t ttl_ms, int64_t wait_ms,
                           redlock_lock_t **out, redlock_report_t *rep);

/**
 * @brief Acquires resource for ttl_ms, waiting as long as the options'
 * retries allow: redlock_acquire_ex() with wait_ms -1 and no report.
 * @return as redlock_acquire_ex().
 */
int redlock_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out);
/**
 * @brief One attempt, no retries and no wait: redlock_acquire_ex() with
 * wait_ms 0 and no report. Blocks for one round at most.
 * @return as redlock_acquire_ex().
 */
int redlock_try_acquire(redlock_t *rl, const char *resource, uint32_t ttl_ms, redlock_lock_t **out);
/**
 * @brief Acquires resource (a mutex) for ttl_ms, with a wait bound and a report.
 *
 * An attempt sends `SET resource token NX PX ttl_ms` to every node at once;
 * the lock is held when a quorum granted it and validity (ttl_ms minus the
 * round's time and the drift allowance) is left; a failed attempt is
 * cleaned up on every node. Retries stop after `retry_count` retries or
 * once wait_ms have passed (wait_ms -1: no wait bound; 0: one attempt;
 * below -1 is REDLOCK_ERR_INVALID), whichever first. A waiting caller
 * re-attempts when the holder's release is announced on
 * `redlock:released:<resource>` (not counted as a retry), when the holder's
 * key expires (the refused attempt learns its remaining TTL), or after
 * retry_delay_ms +- retry_jitter_ms, whichever comes first; callers of one
 * handle waiting for the same resource queue in arrival order. With
 * re-entry on (the default), a thread that holds resource through rl gets
 * the same lock at once and must release it as many times. Waiting
 * (wait_ms != 0) for a resource this thread already holds, with reentrancy
 * off, is REDLOCK_ERR_DEADLOCK at once. report may be NULL.
 *
 * Blocks the calling thread: with wait_ms >= 0, for at most wait_ms plus
 * one round (`connect_timeout_ms + op_timeout_ms`); with -1, for the
 * attempts `retry_count` allows and their pauses, plus any time spent
 * queued behind other waiters of rl for the same resource.
 * redlock_cancel_waits() ends the wait. Any thread may call it.
 *
 * @return ::REDLOCK_OK with *out a new lock (the caller releases or frees
 * it); else *out = NULL and ::REDLOCK_ERR_INVALID (a NULL argument, an
 * empty, NULL or over-long resource, a TTL of 0, above 2147483647, too
 * short to ever be valid or above max_ttl_ms, wait_ms below -1),
 * ::REDLOCK_ERR_TAKEN, ::REDLOCK_ERR_NO_QUORUM, ::REDLOCK_ERR_EXPIRED,
 * ::REDLOCK_ERR_AUTH, ::REDLOCK_ERR_CANCELLED, ::REDLOCK_ERR_DEADLOCK or
 * ::REDLOCK_ERR_NOMEM (the last attempt's reason when attempts ran out).
 */
int redlock_acquire_ex(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                       redlock_report_t *report);

/**
 * @brief Ends every blocking wait of rl's acquires at once.
 *
 * Each waiting acquire returns ::REDLOCK_ERR_CANCELLED after releasing what
 * its last attempt may have set. Waits that start afterwards are not
 * affected. Safe from any thread and from a signal handler: it only bumps
 * an atomic counter and writes one byte to a pipe. Never blocks; NULL-safe.
 */
void redlock_cancel_waits(redlock_t *rl);

/**
 * @brief Resets the lock's TTL to ttl_ms on a quorum, from a fresh start.
 *
 * Runs the extend script (`PEXPIRE` where the key still holds the lock's
 * token) on every node: success when a quorum extended and validity is
 * left; the lock's deadline is then renewed. On failure the lock keeps its
 * old deadline. A lock whose local validity is already gone is refused
 * without a round (extending it would be a silent re-acquire). Blocks for
 * one round at most; serialised with the watchdog's extensions of the same
 * lock. Called by the thread that holds the lock. report may be NULL.
 *
 * @return ::REDLOCK_OK; ::REDLOCK_ERR_INVALID (a NULL argument, a lock of
 * another handle, a bad ttl_ms); ::REDLOCK_ERR_NOT_HELD (validity already
 * gone, or enough nodes no longer hold the token); ::REDLOCK_ERR_EXPIRED
 * (extended too late); ::REDLOCK_ERR_NO_QUORUM; ::REDLOCK_ERR_AUTH;
 * ::REDLOCK_ERR_NOMEM.
 */
int redlock_extend(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms);
/** @copydoc redlock_extend */
int redlock_extend_ex(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *report);

/**
 * @brief Releases lock on every node and frees it, whatever the result.
 *
 * Runs the release script (delete where the key still holds the token,
 * announcing the release to waiters) on every node, once, never retried;
 * stops the lock's auto-extension first. A re-entered lock's inner release
 * only drops one hold (no round). Blocks for one round at most
 * (`op_timeout_ms`, plus `connect_timeout_ms` for a node that must
 * reconnect). Called by the thread that holds the lock. report may be NULL.
 *
 * @return ::REDLOCK_OK when a quorum deleted the token;
 * ::REDLOCK_ERR_NOT_HELD when a quorum no longer had it (the lock had
 * expired or been taken over: the critical section may not have been
 * exclusive); ::REDLOCK_ERR_NO_QUORUM when too few nodes answered to tell
 * (the keys expire by TTL); ::REDLOCK_ERR_AUTH; ::REDLOCK_ERR_INVALID (a
 * NULL argument or a lock of another handle: the lock is freed all the
 * same).
 */
int redlock_release(redlock_t *rl, redlock_lock_t *lock);
/** @copydoc redlock_release */
int redlock_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *report);

/**
 * @brief Frees a lock object without releasing the lock; NULL-safe.
 *
 * The keys stay on the nodes until their TTL runs out (hand-over: another
 * process adopts the lock by its token). Stops the lock's auto-extension.
 * A re-entered lock keeps its outer hold. Never blocks on the network.
 */
void redlock_lock_free(redlock_lock_t *lock);

/** @brief The most resources one lock may hold (redlock_acquire_multi()). */
#define REDLOCK_MAX_RESOURCES 64
/**
 * @brief Acquires several resources as one lock.
 *
 * On each node a script sets all of them or none, with the same quorum and
 * validity rules as a single resource. At most #REDLOCK_MAX_RESOURCES, no
 * duplicates; on a handle with Redis Cluster nodes they must share one
 * hash slot. Extend and release act on the whole set. Not re-entrant, no
 * fencing token, and it does not queue or listen for releases while it
 * waits: it polls. wait_ms, the blocking, the threads and report are as
 * for redlock_acquire_ex().
 *
 * @return ::REDLOCK_OK with *out a new lock; else *out = NULL and
 * ::REDLOCK_ERR_INVALID (n of 0 or above 64, a duplicate, resources in
 * different cluster slots, or a bad argument of redlock_acquire_ex()), or a
 * code of redlock_acquire_ex().
 */
int redlock_acquire_multi(redlock_t *rl, const char *const *resources, size_t n, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_lock_t **out, redlock_report_t *report);

/**
 * @brief Takes over a lock another process (or an earlier instance of this
 * one) acquired, from its resource and token.
 *
 * The token is 40 lowercase hex characters, e.g. redlock_lock_token()
 * passed along. One round of the extend script on every node resets the
 * key's TTL to ttl_ms where it still holds token, with extend's quorum and
 * validity rules. The handing-over process should free its own lock object
 * with redlock_lock_free(), not release it. A failed adoption changes
 * nothing the holder relies on (no key is deleted). A permit is adopted by
 * its slot key (`"<resource>:permit:<slot>"`); a reader cannot be adopted.
 * redlock_lock_fence() of an adopted lock is 0: the fencing counter is kept
 * per resource, not per holder, so hand the fence over alongside the token.
 * Blocks for one round at most; any thread. report may be NULL.
 *
 * @return ::REDLOCK_OK with *out a new lock with fresh validity, usable like
 * an acquired one (extend, release, auto-extension); else *out = NULL and
 * ::REDLOCK_ERR_NOT_HELD (enough nodes do not hold token that no quorum
 * can), ::REDLOCK_ERR_INVALID (a malformed token: the message gives its
 * length or the bad position, never the token; a resource whose key is of
 * another kind, such as readers, on more nodes than a quorum can spare; a
 * bad argument), ::REDLOCK_ERR_EXPIRED, ::REDLOCK_ERR_NO_QUORUM,
 * ::REDLOCK_ERR_AUTH or ::REDLOCK_ERR_NOMEM.
 */
int redlock_lock_adopt(redlock_t *rl, const char *resource, const char *token, uint32_t ttl_ms, redlock_lock_t **out,
                       redlock_report_t *report);

/**
 * @brief Remaining validity in ms, rounded down; <= 0 once expired, 0 once
 * lost or for NULL. Reads the local monotonic clock only: never blocks,
 * any thread.
 */
int64_t redlock_lock_validity_ms(const redlock_lock_t *lock);
/**
 * @brief 1 when the lock is neither lost nor expired and still has more than
 * margin_ms of validity, else 0 (also for NULL): call it right before a
 * protected side effect. Never blocks; any thread.
 */
int redlock_lock_valid(const redlock_lock_t *lock, uint32_t margin_ms);
/**
 * @brief 1 once the watchdog found the lock lost (taken over, expired, or no
 * quorum before the validity ran out); 0 otherwise and for NULL. Never
 * blocks; any thread.
 */
int redlock_lock_lost(const redlock_lock_t *lock);
/** @brief The lock's (first) resource: for a permit its slot key; NULL for NULL. Owned by the lock. */
const char *redlock_lock_resource(const redlock_lock_t *lock); /* the first resource */
/** @brief How many resources the lock holds (1 but for redlock_acquire_multi()); 0 for NULL. */
size_t redlock_lock_resource_count(const redlock_lock_t *lock);
/** @brief Resource i of the lock, owned by the lock; NULL past the end or for NULL. */
const char *redlock_lock_resource_at(const redlock_lock_t *lock, size_t i); /* NULL past the end */
/**
 * @brief The lock's token: #REDLOCK_TOKEN_LEN lowercase hex characters,
 * owned by the lock; NULL for NULL. A secret: whoever has it can release
 * or adopt the lock.
 */
const char *redlock_lock_token(const redlock_lock_t *lock); /* 40 hex chars */
/** @brief A permit's slot (0-based); -1 for other locks and for NULL. */
int redlock_lock_slot(const redlock_lock_t *lock); /* a permit's slot (0-based), -1 for other locks */

/**
 * @brief The lock's fencing token; 0 for locks acquired without fencing, on
 * several resources, adopted ones, readers, and NULL.
 *
 * With redlock_options_t::fencing, each successful single-resource acquire
 * also yields a 64-bit fencing token, strictly greater than the token of
 * every earlier holder of the same resource. It is kept in a counter key
 * next to the lock (`"<resource>:redlock:fence"`, no TTL) and made in two
 * rounds: the acquire returns each granting node's counter (never below
 * that node's clock in microseconds); the client takes the maximum + 1 and
 * writes it back where the lock is still its own; the acquire succeeds only
 * if a quorum confirmed the write-back within the validity. A permit's
 * token is its slot's. Never blocks; any thread.
 */
uint64_t redlock_lock_fence(const redlock_lock_t *lock);

/**
 * @brief A write checked against fencing tokens, for a protected resource
 * that is itself in Redis.
 *
 * Writes value to key on the nodes of `store` (a handle over the storage
 * node or nodes, not the lock nodes) only if fence is at least the highest
 * token the store has seen for key. Blocks for one round at most; any
 * thread. report may be NULL.
 *
 * @return ::REDLOCK_OK when a quorum of the store's nodes wrote;
 * ::REDLOCK_ERR_STALE when a quorum refused a stale token;
 * ::REDLOCK_ERR_INVALID (a NULL store or value, a bad key, fence 0);
 * ::REDLOCK_ERR_NO_QUORUM, ::REDLOCK_ERR_AUTH or ::REDLOCK_ERR_NOMEM.
 */
int redlock_fenced_set(redlock_t *store, const char *key, const char *value, uint64_t fence, redlock_report_t *report);

/**
 * @brief The lost-lock callback of auto-extension.
 *
 * Called once when the watchdog marks lock lost, with the reason
 * (::REDLOCK_ERR_NOT_HELD: taken over; ::REDLOCK_ERR_NO_QUORUM: no extension
 * reached a quorum before the validity ran out; ::REDLOCK_ERR_EXPIRED: the
 * cap was reached ...) and the `arg` given to redlock_autoextend(). Runs on
 * the watchdog's thread (blocking handle) or from the loop (async handle).
 * It may call redlock_lock_valid(), redlock_lock_lost() and
 * redlock_lock_validity_ms(), and may release or free the lock; it must
 * not block for long: it holds up every other auto-extended lock.
 */
typedef void (*redlock_lost_fn)(redlock_lock_t *lock, int reason, void *arg);

/**
 * @brief Options of auto-extension: fill with
 * redlock_autoextend_options_init(), then set what differs.
 */
typedef struct redlock_autoextend_options {
    uint32_t interval_ms;    /**< 0 (default): a third of the lock's TTL */
    uint32_t max_extensions; /**< 0 (default): no cap on the number of extensions */
    uint64_t max_hold_ms;    /**< 0 (default): no cap on the total hold time; else the lock ends this long
                              *   after its acquire: the last extension is cut to end there */
} redlock_autoextend_options_t;

/** @brief Fills o with the defaults (every field 0). o must not be NULL. */
void redlock_autoextend_options_init(redlock_autoextend_options_t *o);
/**
 * @brief Keeps lock alive: the watchdog extends it by its TTL every
 * interval.
 *
 * A background thread (one per handle, started on first use) extends the
 * lock every interval_ms. It never extends a lock whose local validity is
 * gone: that would be a silent re-acquire. When an extension is refused
 * (taken over), or no extension reaches a quorum before the validity runs
 * out, or the cap is reached and the lock expires, the lock is marked lost
 * and on_lost (may be NULL) is called once; a transient failure is retried
 * sooner while validity lasts. Releasing or freeing the lock stops its
 * auto-extension first. opt may be NULL for the defaults. Never blocks on
 * the network; any thread holding the lock.
 *
 * @return ::REDLOCK_OK; ::REDLOCK_ERR_NOT_HELD if the lock is already
 * expired or lost; ::REDLOCK_ERR_INVALID for a NULL argument, a lock of
 * another handle, bad options or a lock already auto-extended;
 * ::REDLOCK_ERR_NOMEM, or an error starting the thread.
 */
int redlock_autoextend(redlock_t *rl, redlock_lock_t *lock, const redlock_autoextend_options_t *opt,
                       redlock_lost_fn on_lost, void *arg);
/**
 * @brief Stops auto-extension of lock; it keeps its current deadline. Waits
 * for an extension in progress (one round at most).
 * @return ::REDLOCK_OK (also when it was not auto-extended), or
 * ::REDLOCK_ERR_INVALID for a NULL argument or a lock of another handle.
 */
int redlock_autoextend_stop(redlock_t *rl, redlock_lock_t *lock);
/** @brief Extensions the watchdog (or the async handle's timers) made so far; 0 for NULL. */
uint32_t redlock_lock_extensions(const redlock_lock_t *lock);

/**
 * @brief Statistics: result slots per call kind, indexed by `-rc` for
 * rc = 0 .. -31 (::REDLOCK_OK is [0]).
 *
 * Every handle counts what it does (unless redlock_options_t::stats is 0),
 * with relaxed atomics and no allocation per call: calls by result, each
 * node's votes by kind and round trips, reconnects, and how long rounds
 * take. A round is one command sent to every node and waited for (an
 * acquire attempt, an extend, a release, a fencing write-back, a query). A
 * node's vote is counted as the call's report shows it: a reply that came
 * after its round was decided is not a vote. Counters only grow, from
 * redlock_new() to redlock_free().
 */
#define REDLOCK_STATS_CODES 32 /* result slots: [-rc] for rc = 0 .. -31 (REDLOCK_OK is [0]) */
/** @brief Buckets of a histogram: 50 us .. 2.5 s in 1-2.5-5 steps, then +Inf (redlock_stats_bucket_us()). */
#define REDLOCK_STATS_BUCKETS 16 /* 50 us .. 2.5 s in 1-2.5-5 steps, then +Inf */

/** @brief A histogram of durations (round trips, rounds). */
typedef struct redlock_histogram {
    uint64_t bucket[REDLOCK_STATS_BUCKETS]; /**< observations per bucket (not cumulative); the last is +Inf */
    uint64_t count;                         /**< the sum of bucket[] */
    uint64_t sum_us;                        /**< the sum of the observations, in microseconds */
} redlock_histogram_t;

/** @brief One node's counters: an entry of redlock_stats_t::nodes. */
typedef struct redlock_node_stats {
    const char *node;                 /**< the node's URI with any password masked; owned by the handle */
    uint64_t yes, no, timeout, error; /**< votes by kind: yes, no, timeout, error */
    uint64_t down;                    /**< skipped: down, waiting for its reconnect backoff */
    uint64_t quarantined;    /**< skipped or refused: restarted or clock jumped (an acquire's REDLOCK_VOTE_DOWN) */
    uint64_t reconnects;     /**< connection attempts made after the node had failed */
    redlock_histogram_t rtt; /**< round trip of each vote that came with an answer */
    uint64_t suspect;        /**< skipped: suspect (it timed out; waiting for a probe to answer) */
    uint64_t suspected;      /**< times it became suspect (a request of it timed out) */
    uint64_t probes;         /**< probes sent to it while suspect */
} redlock_node_stats_t;
/** @var redlock_node_stats::yes
 * @brief Yes votes. */
/** @var redlock_node_stats::no
 * @brief No votes. */
/** @var redlock_node_stats::timeout
 * @brief Votes that timed out. */
/** @var redlock_node_stats::error
 * @brief Error votes (error replies, refused or closed connections, refused credentials, too few replicas). */

/** @brief A handle's counters (redlock_stats(), redlock_async_stats()); about 15 KiB. */
typedef struct redlock_stats {
    uint64_t acquires[REDLOCK_STATS_CODES]; /**< acquire calls by result: [0] granted, [-REDLOCK_ERR_TAKEN] ... */
    uint64_t extends[REDLOCK_STATS_CODES];  /**< extend calls by result, the watchdog's included */
    uint64_t releases[REDLOCK_STATS_CODES]; /**< release calls by result */
    uint64_t adopts[REDLOCK_STATS_CODES];   /**< redlock_lock_adopt calls by result */
    uint64_t locks_lost;                    /**< locks the watchdog declared lost */
    uint64_t waits;             /**< acquire calls that found the lock taken and waited on its release channel */
    uint64_t wakeups;           /**< release announcements heard that woke such a waiter */
    uint64_t splits;            /**< acquire attempts that split the vote (some yes, some no, no quorum):
                                   the next attempt backs off a random fraction of a round trip */
    redlock_histogram_t rounds; /**< duration of every round */
    size_t n_nodes;             /**< entries of nodes[] that are set */
    redlock_node_stats_t nodes[REDLOCK_MAX_NODES]; /**< one per node, in the order of the options */
} redlock_stats_t;

/**
 * @brief Copies rl's counters into *out: a snapshot, counters taken one by
 * one while other threads go on. Never blocks on the network; any thread.
 * @return ::REDLOCK_OK, or ::REDLOCK_ERR_INVALID for NULL.
 */
int redlock_stats(redlock_t *rl, redlock_stats_t *out);
/**
 * @brief Writes the counters in the Prometheus text exposition format
 * (version 0.0.4): metrics named redlock_*, nodes as `node="<masked URI>"`.
 *
 * Like snprintf: writes at most len bytes, always NUL-terminated when
 * len > 0; len 0 writes nothing (buf may then be NULL), so a first call
 * with NULL, 0 sizes the buffer. Never blocks on the network; any thread.
 *
 * @return the length of the whole text (without its NUL): a return >= len
 * means buf held only a prefix; ::REDLOCK_ERR_INVALID for a NULL rl (or a
 * NULL buf with len > 0).
 */
int redlock_stats_prometheus(redlock_t *rl, char *buf, size_t len);
/** @brief Upper bound of histogram bucket i in microseconds; UINT64_MAX for the last (+Inf) and beyond. */
uint64_t redlock_stats_bucket_us(size_t i);

/**
 * @brief A non-blocking handle: one event loop's handle, with its own
 * connections, one per node, driven by the loop's thread only.
 *
 * Every call returns at once. Rules: a call that returns an error did
 * nothing and runs no callback; a call that returns ::REDLOCK_OK runs its
 * callback exactly once, later, from the loop (never from inside the call).
 * `report` is valid only during the callback. A callback may call any
 * redlock_async_* function, including redlock_async_free() of its own
 * handle. Retries, waiting and auto-extension are loop timers on the
 * handle; no thread is started but name lookups. Locks from the handle are
 * used with its functions (the redlock_lock_* accessors and
 * redlock_lock_free() work too); passing one to another handle, or to a
 * ::redlock_t, is ::REDLOCK_ERR_INVALID. Every function must be called from
 * the loop's thread.
 *
 * Attach an adapter before the first call: include <redlock/libuv.h>
 * (redlock_libuv_attach) or <redlock/libevent.h> (redlock_libevent_attach),
 * or fill a ::redlock_async_hooks_t for your own loop (doc/async.md).
 */
typedef struct redlock_async redlock_async_t;

/**
 * @brief An async acquire's callback: lock is the new lock when rc is
 * ::REDLOCK_OK (the caller now owns it), else NULL; report is valid during
 * the call; arg is the acquire's.
 */
typedef void (*redlock_acquire_cb)(redlock_lock_t *lock, int rc, const redlock_report_t *report, void *arg);
/** @brief An async extend's or release's callback: rc as the blocking call's; report valid during the call. */
typedef void (*redlock_done_cb)(int rc, const redlock_report_t *report, void *arg);

/**
 * @brief Makes an async handle from opt, validated as by redlock_new().
 *
 * Copies what it keeps; opens no socket yet. redlock_async_new_ex() also
 * writes the reason a refusal names into err (errlen bytes, may be NULL).
 *
 * @return ::REDLOCK_OK with *out set (free it with redlock_async_free()),
 * else *out = NULL and ::REDLOCK_ERR_INVALID, ::REDLOCK_ERR_CONFIG (naming
 * the bad value) or ::REDLOCK_ERR_NOMEM.
 */
int redlock_async_new(redlock_async_t **out, const redlock_options_t *opt);
/** @copydoc redlock_async_new */
int redlock_async_new_ex(redlock_async_t **out, const redlock_options_t *opt, char *err, size_t errlen);
/**
 * @brief Frees an async handle; NULL-safe; from the loop's thread, also from
 * one of the handle's callbacks.
 *
 * Pending calls' callbacks run once each, from inside this call, with
 * ::REDLOCK_ERR_CANCELLED; what pending acquires had set is released (the
 * release is written before the sockets close) and pending releases still
 * go out. Granted locks not yet released are detached: they expire by their
 * TTL; free them with redlock_lock_free(). The adapter's cleanup hook runs
 * last. Does not wait for answers.
 */
void redlock_async_free(redlock_async_t *a);

/**
 * @brief Starts acquiring resource for ttl_ms; cb gets the lock.
 *
 * ttl_ms and wait_ms as in redlock_acquire_ex(): -1 no bound, 0 one
 * attempt, below -1 ::REDLOCK_ERR_INVALID. Waiting callers of the handle
 * queue per resource and are woken by releases, as on a blocking handle.
 * arg is kept (not followed) and passed to cb; redlock_async_cancel(a, arg)
 * cancels the acquire.
 *
 * @return ::REDLOCK_OK (cb will run once, later, with a code of
 * redlock_acquire_ex() or ::REDLOCK_ERR_CANCELLED), or
 * ::REDLOCK_ERR_INVALID (a bad argument the blocking call would refuse too)
 * or ::REDLOCK_ERR_NOMEM: then nothing was started.
 */
int redlock_async_acquire(redlock_async_t *a, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                          redlock_acquire_cb cb, void *arg);
/** @brief redlock_acquire_permit() through the loop: the same rules and callback as redlock_async_acquire(). */
int redlock_async_acquire_permit(redlock_async_t *a, const char *resource, unsigned limit, uint32_t ttl_ms,
                                 int64_t wait_ms, redlock_acquire_cb cb, void *arg);
/** @brief redlock_acquire_shared() through the loop: the same rules and callback as redlock_async_acquire(). */
int redlock_async_acquire_shared(redlock_async_t *a, const char *resource, uint32_t ttl_ms, int64_t wait_ms,
                                 redlock_acquire_cb cb, void *arg);
/**
 * @brief Starts extending lock to ttl_ms from now (see redlock_extend_ex()).
 * @return ::REDLOCK_OK (cb, which may be NULL, runs once later with
 * redlock_extend()'s codes), or ::REDLOCK_ERR_INVALID / ::REDLOCK_ERR_NOMEM:
 * nothing was started.
 */
int redlock_async_extend(redlock_async_t *a, redlock_lock_t *lock, uint32_t ttl_ms, redlock_done_cb cb, void *arg);
/**
 * @brief Starts releasing lock on every node (see redlock_release_ex()).
 *
 * On ::REDLOCK_OK the lock object is freed at once (do not use it after
 * this call returns) and cb, which may be NULL, runs once later with
 * redlock_release()'s codes. On ::REDLOCK_ERR_INVALID or
 * ::REDLOCK_ERR_NOMEM nothing was started and the lock is still the
 * caller's.
 */
int redlock_async_release(redlock_async_t *a, redlock_lock_t *lock, redlock_done_cb cb, void *arg);
/**
 * @brief Cancels every pending acquire started with arg.
 *
 * Each callback then runs once, from the loop, with ::REDLOCK_ERR_CANCELLED,
 * and whatever it had set on the nodes is released. An acquire cancelled
 * while it waited between attempts reports its attempts and no votes: a
 * waiting acquire keeps no round.
 * @return how many were cancelled (0 if none), or ::REDLOCK_ERR_INVALID for
 * a NULL handle.
 */
int redlock_async_cancel(redlock_async_t *a, void *arg);
/** @brief The function redlock_async_batch() runs; arg is the batch's. */
typedef void (*redlock_batch_fn)(redlock_async_t *a, void *arg);
/**
 * @brief Runs fn(a, arg) at once and sends the calls it starts together.
 *
 * A call started outside the handle's callbacks is written at once: one
 * write per node for each call. The calls fn starts are written when fn
 * returns, one write per node for all of them, as for calls started from
 * a callback. It serves a loop thread that starts many calls at a time,
 * e.g. the calls other threads queued for it. The calls' callbacks run
 * later, from the loop, as for any call. fn may call any redlock_async_*
 * function, also redlock_async_free(). Called from a callback, fn's calls
 * leave with that callback's dispatch. From the loop's thread only.
 * @return ::REDLOCK_OK once fn has run, or ::REDLOCK_ERR_INVALID for a NULL
 * handle or fn (fn is not run).
 */
int redlock_async_batch(redlock_async_t *a, redlock_batch_fn fn, void *arg);
/**
 * @brief Auto-extension on loop timers, with the blocking watchdog's
 * options and rules (see redlock_autoextend()); redlock_async_autoextend_ex()
 * adds the lost-lock callback, which runs from the loop. Stop it with
 * redlock_async_autoextend_stop(), or by releasing or freeing the lock.
 * @return as redlock_autoextend().
 */
int redlock_async_autoextend(redlock_async_t *a, redlock_lock_t *lock, const redlock_autoextend_options_t *opt);
/** @copydoc redlock_async_autoextend */
int redlock_async_autoextend_ex(redlock_async_t *a, redlock_lock_t *lock, const redlock_autoextend_options_t *opt,
                                redlock_lost_fn on_lost, void *arg);
/** @brief Stops auto-extension of lock (see redlock_autoextend_stop()). @return as redlock_autoextend_stop(). */
int redlock_async_autoextend_stop(redlock_async_t *a, redlock_lock_t *lock);
/** @brief Counters of the handle (see redlock_stats()). @return ::REDLOCK_OK, or ::REDLOCK_ERR_INVALID for NULL. */
int redlock_async_stats(redlock_async_t *a, redlock_stats_t *out);

/**
 * @brief Hooks an event loop adapter gives an async handle (the hiredis
 * adapter model).
 *
 * The handle calls them from its own functions to say which file
 * descriptors it wants watched and when it next needs a timer. Several fds
 * are watched at once (one per node connection, plus one the name resolver
 * wakes it through); del_* are called before the handle closes an fd, and
 * the same number may come back at once for a new socket. Report readiness
 * level-triggered, an error or hang-up as readiness. A hook may be NULL
 * only if the loop never needs it.
 */
typedef struct redlock_async_hooks {
    void *data;                            /**< the adapter's, passed to every hook */
    void (*add_read)(void *data, int fd);  /**< start telling the handle when fd is readable */
    void (*del_read)(void *data, int fd);  /**< stop that */
    void (*add_write)(void *data, int fd); /**< start telling the handle when fd is writable */
    void (*del_write)(void *data, int fd); /**< stop that */
    void (*set_timer)(
        void *data,
        uint64_t ms); /**< one redlock_async_handle_timer() call after ms milliseconds, replacing any earlier request */
    void (*clear_timer)(void *data); /**< cancel the pending timer request */
    void (*cleanup)(void *data); /**< once, from redlock_async_free(), after every fd was deleted: free the adapter */
} redlock_async_hooks_t;

/**
 * @brief Installs hooks (copied) and announces the fds and timer the handle
 * needs now. Call it once, before the first call that does I/O.
 * @return ::REDLOCK_OK, or ::REDLOCK_ERR_INVALID for NULL, or when hooks are
 * already set.
 */
int redlock_async_set_hooks(redlock_async_t *a, const redlock_async_hooks_t *hooks);
/**
 * @brief The adapter calls these when fd is readable or writable, or when
 * the timer it was asked for fires. The callbacks of calls that completed
 * run from inside them, and one may free the handle: touch nothing the
 * cleanup hook frees after they return. From the loop's thread; never
 * block.
 */
void redlock_async_handle_read(redlock_async_t *a, int fd);
/** @copydoc redlock_async_handle_read */
void redlock_async_handle_write(redlock_async_t *a, int fd);
/** @copydoc redlock_async_handle_read */
void redlock_async_handle_timer(redlock_async_t *a);

/** @brief The message of a return code ("invalid argument", ...); "unknown error" for other values.
 * Static; any thread. */
const char *redlock_strerror(int err);
/** @brief The name of a vote: "yes", "no", "timeout", "down", "error", "membership", "pending"
 * (::REDLOCK_VOTE_NONE).
 * Static; any thread. */
const char *redlock_vote_name(redlock_vote_t vote); /* "yes", "no", "timeout", ... */
/** @brief The quorum of n_nodes nodes: n_nodes / 2 + 1. */
size_t redlock_quorum(size_t n_nodes); /* n/2 + 1 */

#ifdef __cplusplus
}
#endif
#endif /* REDLOCK_H */
