/* redlock/redlock.hpp -- libredlock for C++17, header-only.
 *
 * A thin layer over the C API of <redlock.h>: the same locks, the same
 * nodes, the same rules, in C++ types. No C type appears in its interface
 * but through native_handle(). doc/cpp.md is the guide.
 *
 *   redlock::client   a handle on N Redis nodes (owns a redlock_t); movable,
 *                     not copyable; shared by any number of threads
 *   redlock::lock     one held lock (a mutex, a permit, a reader's lock): an
 *                     RAII guard released by its destructor
 *   redlock::mutex    a resource as a Lockable / TimedLockable, for
 *                     std::lock_guard, std::unique_lock and std::scoped_lock
 *   redlock::error    what every failing call throws: code() and report()
 *
 * Link with libredlock (pkg-config redlock, or CMake's redlock::redlock). */
#ifndef REDLOCK_REDLOCK_HPP
#define REDLOCK_REDLOCK_HPP

#include <redlock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace redlock {

/** The library's return codes (REDLOCK_OK and REDLOCK_ERR_*), by name. */
enum class errc : int {
    ok = REDLOCK_OK,
    invalid = REDLOCK_ERR_INVALID,
    config = REDLOCK_ERR_CONFIG,
    nomem = REDLOCK_ERR_NOMEM,
    taken = REDLOCK_ERR_TAKEN,
    no_quorum = REDLOCK_ERR_NO_QUORUM,
    expired = REDLOCK_ERR_EXPIRED,
    not_held = REDLOCK_ERR_NOT_HELD,
    auth = REDLOCK_ERR_AUTH,
    io = REDLOCK_ERR_IO,
    timeout = REDLOCK_ERR_TIMEOUT,
    server = REDLOCK_ERR_SERVER,
    stale = REDLOCK_ERR_STALE,
    quarantined = REDLOCK_ERR_QUARANTINED,
    cancelled = REDLOCK_ERR_CANCELLED,
    deadlock = REDLOCK_ERR_DEADLOCK,
    suspect = REDLOCK_ERR_SUSPECT,
    replication = REDLOCK_ERR_REPLICATION,
    membership = REDLOCK_ERR_MEMBERSHIP,
};

/** The message of a code ("lock is held by another owner", ...). */
inline std::string message(errc code) {
    return redlock_strerror(static_cast<int>(code));
}

/** How one node took part in one call. */
struct node_report {
    std::string node;         ///< the node's URI, any password masked
    std::string vote;         ///< "yes", "no", "timeout", "down", "error" or "pending"
    errc err = errc::ok;      ///< ok for yes and no, else what explains the vote
    std::int64_t rtt_us = -1; ///< round trip of its answer, -1 if none
    std::string detail;       ///< the node's error text or a short explanation
    std::string address;      ///< the address its connection uses, "" if none
};

/** What one call did, node by node. */
struct report {
    errc result = errc::ok;
    std::string message;                     ///< why, in words; names the bad value of a refused argument
    std::uint32_t attempts = 0;              ///< acquire attempts made
    std::size_t quorum = 0;                  ///< yes votes a lock needs
    std::size_t yes = 0, no = 0, failed = 0; ///< votes of the last round
    std::int64_t elapsed_us = 0;             ///< of the last round
    std::int64_t validity_ms = 0;            ///< of the lock after the call
    std::vector<node_report> nodes;          ///< one per node, in the order of the options
};

/** What every failing call throws: the code, and what each node did. */
class error : public std::runtime_error {
  public:
    error(errc code, redlock::report rep)
        : std::runtime_error(what_of(code, rep.message)), code_(code), report_(std::move(rep)) {}
    errc code() const noexcept {
        return code_;
    }
    const redlock::report &report() const noexcept {
        return report_;
    }

  private:
    /* A round's message starts with the code's own text; a refusal's names the bad value only. */
    static std::string what_of(errc code, const std::string &msg) {
        std::string text = message(code);
        if (msg.compare(0, text.size(), text) == 0) return msg;
        return msg.empty() ? text : text + ": " + msg;
    }

    errc code_;
    redlock::report report_;
};

/** A wait with no time bound: the acquire retries as often as the client's retry_count allows. */
inline constexpr std::chrono::milliseconds no_time_bound{-1};

/** The options of a client; a default-constructed one holds the C library's defaults. */
struct options {
    std::vector<std::string> nodes; ///< node URIs (redis://, rediss://, unix://, redis+cluster://, redis+sentinel://)
    std::chrono::milliseconds connect_timeout, op_timeout, drift_min, retry_delay, retry_jitter, node_down,
        reconnect_min, reconnect_max, max_ttl, clock_jump, clock_check, probe_min, probe_max;
    double drift_factor;
    unsigned retry_count, max_inflight, grace_rtts, min_replicas;
    bool reentrant, tls_verify_peer, fencing, quarantine, stats;
    std::string tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file, tls_server_name; ///< "" for none
    /// The next node list of a change of the node set (doc/membership.md): the client is then joint, every grant
    /// needing a quorum of nodes and one of next_nodes. Empty: none.
    std::vector<std::string> next_nodes;
    /// A lock that expired, not released, is refused to everyone this long after its expiry (doc/safety.md,
    /// "Lock-delay"); every client of a resource must give the same. 0: none.
    std::chrono::milliseconds lock_delay;
    int log_level;
    /// Called from the library's and the callers' threads with a level and one line (never a token or password).
    std::function<void(int level, const std::string &line)> log;

    options() {
        redlock_options_t c;
        redlock_options_init(&c);
        using ms = std::chrono::milliseconds;
        connect_timeout = ms(c.connect_timeout_ms), op_timeout = ms(c.op_timeout_ms), drift_min = ms(c.drift_min_ms);
        retry_delay = ms(c.retry_delay_ms), retry_jitter = ms(c.retry_jitter_ms), node_down = ms(c.node_down_ms);
        reconnect_min = ms(c.reconnect_min_ms), reconnect_max = ms(c.reconnect_max_ms), max_ttl = ms(c.max_ttl_ms);
        clock_jump = ms(c.clock_jump_ms), clock_check = ms(c.clock_check_ms), probe_min = ms(c.probe_min_ms);
        probe_max = ms(c.probe_max_ms), drift_factor = c.drift_factor, retry_count = c.retry_count;
        max_inflight = c.max_inflight, grace_rtts = c.grace_rtts, min_replicas = c.min_replicas;
        reentrant = c.reentrant != 0, tls_verify_peer = c.tls_verify_peer != 0, fencing = c.fencing != 0;
        quarantine = c.quarantine != 0, stats = c.stats != 0, log_level = c.log_level;
        lock_delay = ms(c.lock_delay_ms);
    }
};

class client;

namespace detail {

inline redlock::report convert(const redlock_report_t &r) {
    redlock::report out;
    out.result = static_cast<errc>(r.result);
    out.message = r.message;
    out.attempts = r.attempts, out.quorum = r.quorum, out.yes = r.yes, out.no = r.no, out.failed = r.failed;
    out.elapsed_us = r.elapsed_us, out.validity_ms = r.validity_ms;
    for (std::size_t i = 0; i < r.n_nodes && i < REDLOCK_MAX_NODES; i++) {
        const redlock_node_report_t &n = r.nodes[i];
        out.nodes.push_back(node_report{n.node ? n.node : "", redlock_vote_name(n.vote), static_cast<errc>(n.err),
                                        n.rtt_us, n.detail, n.address});
    }
    return out;
}

[[noreturn]] inline void raise(int rc, const redlock_report_t &r) {
    throw error(static_cast<errc>(rc), convert(r));
}

[[noreturn]] inline void refuse(errc code, const std::string &why) {
    redlock::report r;
    r.result = code;
    r.message = why;
    throw error(code, std::move(r));
}

/* A report is about 23 KiB: kept off the caller's stack, which may be a small thread's. */
inline std::unique_ptr<redlock_report_t> new_report() {
    return std::make_unique<redlock_report_t>();
}

inline std::uint32_t ttl_ms(std::chrono::milliseconds ttl) {
    if (ttl.count() < 1 || ttl.count() > 2147483647)
        refuse(errc::invalid, "ttl " + std::to_string(ttl.count()) + " ms is out of range (1 .. 2147483647)");
    return static_cast<std::uint32_t>(ttl.count());
}

inline std::int64_t wait_ms(std::chrono::milliseconds wait) {
    if (wait.count() < -1)
        refuse(errc::invalid, "wait " + std::to_string(wait.count()) + " ms is below -1 (no_time_bound)");
    return wait.count();
}

inline std::uint32_t option_ms(const char *name, std::chrono::milliseconds v) {
    if (v.count() < 0 || v.count() > UINT32_MAX)
        refuse(errc::config, std::string("option ") + name + " " + std::to_string(v.count()) + " ms is out of range");
    return static_cast<std::uint32_t>(v.count());
}

inline void log_trampoline(void *arg, int level, const char *line) {
    try {
        (*static_cast<std::function<void(int, const std::string &)> *>(arg))(level, line);
    } catch (...) { /* an exception cannot cross the C library's threads */
    }
}

} // namespace detail

/**
 * One held lock: a mutex, a semaphore's permit or a reader's lock. Its
 * destructor releases it (a failure is then not reported: call release() to
 * see it). Movable, not copyable; used by one thread at a time; the client
 * that made it must outlive it.
 */
class lock {
  public:
    lock() noexcept = default;
    lock(lock &&o) noexcept : rl_(o.rl_), l_(std::exchange(o.l_, nullptr)), ttl_(o.ttl_) {}
    lock &operator=(lock &&o) noexcept {
        if (this != &o) {
            drop();
            rl_ = o.rl_, l_ = std::exchange(o.l_, nullptr), ttl_ = o.ttl_;
        }
        return *this;
    }
    lock(const lock &) = delete;
    lock &operator=(const lock &) = delete;
    ~lock() {
        drop();
    }

    /** True until released or abandoned. */
    explicit operator bool() const noexcept {
        return l_ != nullptr;
    }
    /** True while held with more than margin of validity left: call it right before a protected side effect. */
    bool valid(std::chrono::milliseconds margin = std::chrono::milliseconds(0)) const noexcept {
        return l_ && margin.count() >= 0 && margin.count() <= UINT32_MAX &&
               redlock_lock_valid(l_, static_cast<std::uint32_t>(margin.count()));
    }
    /** Validity left by the local clock; <= 0 once expired. */
    std::chrono::milliseconds validity() const noexcept {
        return std::chrono::milliseconds(l_ ? redlock_lock_validity_ms(l_) : 0);
    }
    /** The fencing token: strictly greater than every earlier holder's; 0 without options::fencing. */
    std::uint64_t fence() const noexcept {
        return l_ ? redlock_lock_fence(l_) : 0;
    }
    /** The token, 40 hex characters: a secret (whoever has it can release the lock). "" once released. */
    std::string token() const {
        return l_ ? redlock_lock_token(l_) : "";
    }
    /** The resource (a permit's slot key "<resource>:permit:<slot>"). */
    std::string resource() const {
        return l_ ? redlock_lock_resource(l_) : "";
    }
    /** A permit's slot (0-based), -1 for other locks. */
    int slot() const noexcept {
        return l_ ? redlock_lock_slot(l_) : -1;
    }
    /** True for a reader's lock. */
    bool shared() const noexcept {
        return l_ && redlock_lock_is_shared(l_);
    }

    /** Resets the TTL to ttl on a quorum; throws error (not_held once the lock is gone). */
    void extend(std::chrono::milliseconds ttl) {
        std::uint32_t ms = detail::ttl_ms(ttl);
        if (!l_) detail::refuse(errc::invalid, "extend of a released lock");
        auto rep = detail::new_report();
        int rc = redlock_extend_ex(rl_, l_, ms, rep.get());
        if (rc != REDLOCK_OK) detail::raise(rc, *rep);
        ttl_ = ttl;
    }
    /** Extends by the TTL it was acquired with. */
    void extend() {
        extend(ttl_);
    }

    /**
     * Releases it on every node; the lock is empty afterwards whatever
     * happens. Throws error: not_held when a quorum no longer had it (it
     * expired or was taken over: the critical section may not have been
     * exclusive), no_quorum when too few nodes answered to tell.
     */
    void release() {
        if (!l_) return;
        auto rep = detail::new_report();
        int rc = redlock_release_ex(rl_, std::exchange(l_, nullptr), rep.get());
        if (rc != REDLOCK_OK) detail::raise(rc, *rep);
    }
    /** Forgets the lock without releasing it: its keys expire by their TTL. */
    void abandon() noexcept {
        redlock_lock_free(std::exchange(l_, nullptr));
    }

    /** The C lock, still owned by this object. */
    redlock_lock_t *native_handle() const noexcept {
        return l_;
    }

  private:
    friend class client;
    lock(redlock_t *rl, redlock_lock_t *l, std::chrono::milliseconds ttl) noexcept : rl_(rl), l_(l), ttl_(ttl) {}
    void drop() noexcept {
        if (l_) redlock_release(rl_, std::exchange(l_, nullptr));
    }

    redlock_t *rl_ = nullptr;
    redlock_lock_t *l_ = nullptr;
    std::chrono::milliseconds ttl_{0};
};

/**
 * A handle on N Redis nodes: the C library's redlock_t. Any number of
 * threads may share one. Movable, not copyable. The constructor throws
 * error (errc::config, naming the bad URI or option).
 */
class client {
  public:
    explicit client(const std::vector<std::string> &nodes) : client(with_nodes(nodes)) {}
    explicit client(const options &o) : s_(std::make_unique<state>()) {
        redlock_options_t c;
        redlock_options_init(&c);
        std::vector<const char *> uris;
        for (const std::string &n : o.nodes) uris.push_back(n.c_str());
        c.nodes = uris.data();
        c.n_nodes = uris.size();
        std::vector<const char *> next;
        for (const std::string &n : o.next_nodes) next.push_back(n.c_str());
        c.next_nodes = next.empty() ? nullptr : next.data();
        c.n_next_nodes = next.size();
        c.lock_delay_ms = detail::option_ms("lock_delay", o.lock_delay);
        c.connect_timeout_ms = detail::option_ms("connect_timeout", o.connect_timeout);
        c.op_timeout_ms = detail::option_ms("op_timeout", o.op_timeout);
        c.drift_factor = o.drift_factor;
        c.drift_min_ms = detail::option_ms("drift_min", o.drift_min);
        c.retry_count = o.retry_count;
        c.retry_delay_ms = detail::option_ms("retry_delay", o.retry_delay);
        c.retry_jitter_ms = detail::option_ms("retry_jitter", o.retry_jitter);
        c.node_down_ms = detail::option_ms("node_down", o.node_down);
        c.reconnect_min_ms = detail::option_ms("reconnect_min", o.reconnect_min);
        c.reconnect_max_ms = detail::option_ms("reconnect_max", o.reconnect_max);
        c.max_inflight = o.max_inflight;
        c.log_level = o.log_level;
        c.reentrant = o.reentrant;
        c.tls_ca_file = text_or_null(o.tls_ca_file);
        c.tls_ca_dir = text_or_null(o.tls_ca_dir);
        c.tls_cert_file = text_or_null(o.tls_cert_file);
        c.tls_key_file = text_or_null(o.tls_key_file);
        c.tls_verify_peer = o.tls_verify_peer;
        c.tls_server_name = text_or_null(o.tls_server_name);
        c.fencing = o.fencing;
        c.max_ttl_ms = detail::option_ms("max_ttl", o.max_ttl);
        c.quarantine = o.quarantine;
        c.clock_jump_ms = detail::option_ms("clock_jump", o.clock_jump);
        c.clock_check_ms = detail::option_ms("clock_check", o.clock_check);
        c.stats = o.stats;
        c.probe_min_ms = detail::option_ms("probe_min", o.probe_min);
        c.probe_max_ms = detail::option_ms("probe_max", o.probe_max);
        c.grace_rtts = o.grace_rtts;
        c.min_replicas = o.min_replicas;
        if (o.log) {
            s_->log = o.log;
            c.log = detail::log_trampoline;
            c.log_arg = &s_->log;
        }
        char err[256] = "";
        int rc = redlock_new_ex(&s_->rl, &c, err, sizeof err);
        if (rc != REDLOCK_OK) detail::refuse(static_cast<errc>(rc), err);
    }
    client(client &&) noexcept = default;
    client &operator=(client &&) noexcept = default;
    client(const client &) = delete;
    client &operator=(const client &) = delete;
    ~client() = default;

    /**
     * Acquires resource for ttl, waiting up to wait for a holder to let go
     * (0, the default: one attempt; no_time_bound: as long as retry_count
     * allows). Throws error: taken, no_quorum, expired, ...
     */
    lock acquire(const std::string &resource, std::chrono::milliseconds ttl,
                 std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
        return take(ttl, [&](redlock_lock_t **out, redlock_report_t *rep) {
            return redlock_acquire_ex(s_->rl, resource.c_str(), detail::ttl_ms(ttl), detail::wait_ms(wait), out, rep);
        });
    }
    /** One of limit permits (1..64) of the semaphore resource; the lock's slot() says which. Throws as acquire(). */
    lock acquire_permit(const std::string &resource, unsigned limit, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
        return take(ttl, [&](redlock_lock_t **out, redlock_report_t *rep) {
            return redlock_acquire_permit(s_->rl, resource.c_str(), limit, detail::ttl_ms(ttl), detail::wait_ms(wait),
                                          out, rep);
        });
    }
    /** A reader's lock of resource: readers share it; a writer is an acquire() of the same name. */
    lock acquire_shared(const std::string &resource, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
        return take(ttl, [&](redlock_lock_t **out, redlock_report_t *rep) {
            return redlock_acquire_shared(s_->rl, resource.c_str(), detail::ttl_ms(ttl), detail::wait_ms(wait), out,
                                          rep);
        });
    }
    /** Takes over a lock another process acquired, by its resource and token. Throws error (not_held, ...). */
    lock adopt(const std::string &resource, const std::string &token, std::chrono::milliseconds ttl) {
        return take(ttl, [&](redlock_lock_t **out, redlock_report_t *rep) {
            return redlock_lock_adopt(s_->rl, resource.c_str(), token.c_str(), detail::ttl_ms(ttl), out, rep);
        });
    }
    /** Writes value to key on this client's nodes (a store) unless a newer fence was seen; throws error (stale). */
    void fenced_set(const std::string &key, const std::string &value, std::uint64_t fence) {
        auto rep = detail::new_report();
        int rc = redlock_fenced_set(s_->rl, key.c_str(), value.c_str(), fence, rep.get());
        if (rc != REDLOCK_OK) detail::raise(rc, *rep);
    }
    /** Ends every wait of this client's acquires: each throws error (cancelled). Any thread; never blocks. */
    void cancel_waits() noexcept {
        redlock_cancel_waits(s_ ? s_->rl : nullptr);
    }

    /** The C handle, still owned by this client. */
    redlock_t *native_handle() const noexcept {
        return s_ ? s_->rl : nullptr;
    }

  private:
    /* Kept on the heap so that the log callback's argument and the handle stay put when the client moves. */
    struct state {
        redlock_t *rl = nullptr;
        std::function<void(int, const std::string &)> log;
        ~state() {
            redlock_free(rl);
        }
    };

    static options with_nodes(const std::vector<std::string> &nodes) {
        options o;
        o.nodes = nodes;
        return o;
    }
    static const char *text_or_null(const std::string &s) {
        return s.empty() ? nullptr : s.c_str();
    }

    template <class Call> lock take(std::chrono::milliseconds ttl, Call call) {
        if (!s_) detail::refuse(errc::invalid, "a moved-from client");
        auto rep = detail::new_report();
        redlock_lock_t *l = nullptr;
        int rc = call(&l, rep.get());
        if (rc != REDLOCK_OK) detail::raise(rc, *rep);
        return lock(s_->rl, l, ttl);
    }

    std::unique_ptr<state> s_;
};

/**
 * A resource as a mutex: Lockable and TimedLockable, so std::lock_guard,
 * std::unique_lock (try_to_lock, try_lock_for) and std::scoped_lock work.
 * Threads of one process may share one object, like a std::mutex; each
 * thread's hold is its own, and unlock() releases the calling thread's.
 *
 * - lock() waits as long as the lock is held by another owner (taken), or
 *   was granted too late to be valid (expired), however long that takes;
 *   every other outcome throws error: no_quorum (a majority of the nodes
 *   is down or unreachable: not a wait, so an outage shows), auth,
 *   cancelled (client::cancel_waits()), ...
 * - try_lock() makes one attempt; try_lock_for() and try_lock_until() retry
 *   until the time is up. They return false when the lock stays taken and
 *   throw what lock() throws.
 * - unlock() releases on every node and never throws (a lock guard calls
 *   it from its destructor). A lock that was lost meanwhile (expired or
 *   taken over) is reported as the C API reports it: last_unlock() is then
 *   errc::not_held (errc::no_quorum when too few nodes answered to tell).
 */
class mutex {
  public:
    mutex(client &c, std::string resource, std::chrono::milliseconds ttl)
        : rl_(c.native_handle()), resource_(std::move(resource)), ttl_(detail::ttl_ms(ttl)) {}
    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;
    /* Holds left at destruction (a misuse, as for std::mutex) are released. */
    ~mutex() {
        for (hold &h : holds_) redlock_release(rl_, h.lock);
    }

    void lock() {
        while (!attempt(no_time_bound)) pause();
    }
    bool try_lock() {
        return attempt(std::chrono::milliseconds(0));
    }
    template <class Rep, class Period> bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
        return try_lock_until(std::chrono::steady_clock::now() + d);
    }
    template <class Clock, class Duration> bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) {
        for (;;) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now());
            if (attempt(std::max(left, std::chrono::milliseconds(0)))) return true;
            if (left.count() <= 0) return false;
            pause();
        }
    }
    void unlock() noexcept {
        redlock_lock_t *l = nullptr;
        {
            std::lock_guard<std::mutex> g(m_);
            auto h = mine();
            if (h != holds_.end()) {
                l = h->lock;
                if (--h->depth == 0) holds_.erase(h);
            }
        }
        last_unlock_.store(l ? redlock_release(rl_, l) : REDLOCK_ERR_INVALID);
    }

    /** The result of the latest unlock(): ok, not_held (the lock had been lost), no_quorum, or invalid (not held). */
    errc last_unlock() const noexcept {
        return static_cast<errc>(last_unlock_.load());
    }
    /** True while the calling thread holds it with more than margin of validity left. */
    bool valid(std::chrono::milliseconds margin = std::chrono::milliseconds(0)) const {
        std::lock_guard<std::mutex> g(m_);
        auto h = mine();
        return h != holds_.end() && margin.count() >= 0 && margin.count() <= UINT32_MAX &&
               redlock_lock_valid(h->lock, static_cast<std::uint32_t>(margin.count()));
    }
    /** The calling thread's fencing token (0 while it does not hold it, or without options::fencing). */
    std::uint64_t fence() const {
        std::lock_guard<std::mutex> g(m_);
        auto h = mine();
        return h != holds_.end() ? redlock_lock_fence(h->lock) : 0;
    }
    const std::string &resource() const noexcept {
        return resource_;
    }

  private:
    struct hold {
        std::thread::id thread;
        redlock_lock_t *lock;
        unsigned depth; /* re-entered holds of one thread share one lock (options::reentrant) */
    };

    /* The calling thread's latest hold, or end() (m_ held). */
    std::vector<hold>::iterator mine() const {
        auto self = std::this_thread::get_id();
        auto r = std::find_if(holds_.rbegin(), holds_.rend(), [&](const hold &h) { return h.thread == self; });
        return r == holds_.rend() ? holds_.end() : std::prev(r.base());
    }
    /* One acquire_ex call: true when granted; false when taken or expired; throws on anything else. */
    bool attempt(std::chrono::milliseconds wait) {
        auto rep = detail::new_report();
        redlock_lock_t *l = nullptr;
        int rc = redlock_acquire_ex(rl_, resource_.c_str(), ttl_, wait.count(), &l, rep.get());
        if (rc == REDLOCK_ERR_TAKEN || rc == REDLOCK_ERR_EXPIRED) return false;
        if (rc != REDLOCK_OK) detail::raise(rc, *rep);
        std::lock_guard<std::mutex> g(m_);
        auto h = mine();
        if (h != holds_.end() && h->lock == l)
            h->depth++;
        else /* a first hold, or a new lock after this thread's earlier one was lost */
            holds_.push_back(hold{std::this_thread::get_id(), l, 1});
        return true;
    }
    /* Between two acquire calls that found the lock taken: a short random pause, so that a client whose
       retry_count is 0 does not send attempts back to back. */
    static void pause() {
        thread_local std::minstd_rand rng(std::random_device{}());
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 20));
    }

    redlock_t *rl_;
    std::string resource_;
    std::uint32_t ttl_;
    mutable std::mutex m_;
    mutable std::vector<hold> holds_;
    std::atomic<int> last_unlock_{REDLOCK_OK};
};

} // namespace redlock

#endif /* REDLOCK_REDLOCK_HPP */
