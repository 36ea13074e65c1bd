/* test_cpp.cpp -- the C++ wrapper (include/redlock/redlock.hpp) against the
 * fixture cluster's 5 redis-server masters ($REDLOCK_CLUSTER_DIR/nodes):
 * errors and their reports, the RAII lock, redlock::mutex under the
 * standard lock guards, a lost lock, semaphores and readers, 4 threads
 * over 2 clients that must never overlap, a joint client and a lock-delay. Prints one line per case and
 * "N passed, N failed"; exits 1 if any check failed. */
#include <redlock/redlock.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

int failed_checks = 0;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failed_checks++;                                                              \
        }                                                                                 \
    } while (0)

std::vector<std::string> fixture_nodes() {
    const char *dir = std::getenv("REDLOCK_CLUSTER_DIR");
    if (!dir) {
        std::fprintf(stderr, "FAIL: REDLOCK_CLUSTER_DIR is not set (the test runs on a fixture cluster)\n");
        std::exit(1);
    }
    std::ifstream in(std::string(dir) + "/nodes");
    std::vector<std::string> nodes;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) nodes.push_back(line);
    if (nodes.size() != 5) {
        std::fprintf(stderr, "FAIL: expected 5 node URIs in %s/nodes, found %zu\n", dir, nodes.size());
        std::exit(1);
    }
    return nodes;
}

/* A resource name of its own for each case and run, so runs never meet each other's keys. */
std::string fresh(const std::string &what) {
    static const auto run = std::chrono::steady_clock::now().time_since_epoch().count();
    return "cpp-test:" + std::to_string(run) + ":" + what;
}

/* Calls f, which must throw redlock::error with code; returns it (a default one if it did not). */
redlock::error expect_error(redlock::errc code, const std::function<void()> &f) {
    try {
        f();
    } catch (const redlock::error &e) {
        CHECK(e.code() == code);
        if (e.code() != code) std::fprintf(stderr, "  got: %s\n", e.what());
        return e;
    }
    std::fprintf(stderr, "  expected redlock::error %d, nothing thrown\n", static_cast<int>(code));
    CHECK(!"an error was thrown");
    return redlock::error(redlock::errc::ok, {});
}

/* Waits (bounded by 10 s) until pred holds; false if it never did. */
bool wait_until(const std::function<bool()> &pred) {
    for (auto end = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < end;) {
        if (pred()) return true;
        std::this_thread::sleep_for(10ms);
    }
    return pred();
}

size_t votes(const redlock::report &r, const std::string &vote) {
    size_t n = 0;
    for (const auto &node : r.nodes) n += node.vote == vote;
    return n;
}

void bad_uri_throws_config_error_naming_it(const std::vector<std::string> &nodes) {
    std::vector<std::string> bad = nodes;
    bad[2] = "redis://127.0.0.1:notaport";
    redlock::error e = expect_error(redlock::errc::config, [&] { redlock::client c(bad); });
    CHECK(std::string(e.what()).find("notaport") != std::string::npos);
    CHECK(e.report().result == redlock::errc::config);
    redlock::options o;
    o.nodes = nodes;
    o.op_timeout = -5ms;
    expect_error(redlock::errc::config, [&] { redlock::client c(o); });
}

void lock_guard_acquires_extends_and_releases(const std::vector<std::string> &nodes) {
    redlock::options o;
    o.nodes = nodes;
    o.fencing = true;
    redlock::client a(o), b(nodes);
    std::string res = fresh("guard");
    std::uint64_t first_fence;
    {
        redlock::lock lk = a.acquire(res, 10s);
        CHECK(lk && lk.valid(500ms));
        CHECK(lk.token().size() == 40);
        CHECK(lk.resource() == res);
        first_fence = lk.fence();
        CHECK(first_fence > 0);
        redlock::error e = expect_error(redlock::errc::taken, [&] { b.acquire(res, 10s); });
        CHECK(e.report().nodes.size() == 5);
        CHECK(votes(e.report(), "no") >= 3);
        CHECK(e.report().nodes[0].node == nodes[0]);
        lk.extend(20s);
        CHECK(lk.validity() > 10s);
        redlock::lock moved = std::move(lk);
        CHECK(!lk && moved.valid());
    } /* released by the destructor */
    redlock::lock again = b.acquire(res, 10s, 2s);
    CHECK(again.valid());
    again.release();
    CHECK(!again);
    redlock::lock fenced = a.acquire(res, 10s);
    CHECK(fenced.fence() > first_fence);
}

void mutex_meets_the_standard_lock_guards(const std::vector<std::string> &nodes) {
    redlock::client a(nodes), b(nodes);
    std::string res = fresh("mutex");
    redlock::mutex ma(a, res, 10s), mb(b, res, 10s), other(a, fresh("mutex-other"), 10s);
    {
        std::lock_guard<redlock::mutex> g(ma);
        CHECK(ma.valid(1s));
        std::unique_lock<redlock::mutex> u(mb, std::try_to_lock);
        CHECK(!u.owns_lock());
        std::unique_lock<redlock::mutex> timed(mb, std::defer_lock);
        CHECK(!timed.try_lock_for(300ms));
    }
    CHECK(ma.last_unlock() == redlock::errc::ok);
    {
        std::unique_lock<redlock::mutex> u(mb, std::try_to_lock);
        CHECK(u.owns_lock());
    }
    /* held by a thread of a while b waits for it with try_lock_for: granted once that thread lets go */
    std::atomic<bool> holding{false};
    std::thread t([&] {
        std::lock_guard<redlock::mutex> g(ma);
        holding = true;
        std::this_thread::sleep_for(200ms);
    });
    CHECK(wait_until([&] { return holding.load(); }));
    std::unique_lock<redlock::mutex> waiter(mb, std::defer_lock);
    CHECK(waiter.try_lock_for(20s));
    t.join();
    waiter.unlock();
    {
        std::scoped_lock both(ma, other);
        CHECK(ma.valid() && other.valid());
    }
}

void lost_lock_is_reported_as_the_c_api_reports_it(const std::vector<std::string> &nodes) {
    redlock::client a(nodes), b(nodes);
    std::string res = fresh("lost");
    redlock::lock lk = a.acquire(res, 400ms);
    CHECK(wait_until([&] { return lk.validity() <= 0ms; }));
    redlock::lock thief = b.acquire(res, 10s, 5s);
    CHECK(thief.valid());
    expect_error(redlock::errc::not_held, [&] { lk.extend(); });
    expect_error(redlock::errc::not_held, [&] { lk.release(); });
    CHECK(!lk);
    thief.release();

    redlock::mutex m(a, fresh("lost-mutex"), 400ms);
    m.lock();
    CHECK(wait_until([&] { return !m.valid(); }));
    redlock::lock other = b.acquire(m.resource(), 10s, 5s);
    m.unlock(); /* never throws: the result is kept */
    CHECK(m.last_unlock() == redlock::errc::not_held);
    CHECK(other.valid());
}

void semaphore_and_reader_guards(const std::vector<std::string> &nodes) {
    redlock::client c(nodes);
    std::string sem = fresh("sem");
    redlock::lock p1 = c.acquire_permit(sem, 2, 10s), p2 = c.acquire_permit(sem, 2, 10s);
    CHECK(p1.slot() >= 0 && p2.slot() >= 0 && p1.slot() != p2.slot());
    expect_error(redlock::errc::taken, [&] { c.acquire_permit(sem, 2, 10s); });
    p1.release();
    redlock::lock p3 = c.acquire_permit(sem, 2, 10s);
    CHECK(p3.slot() >= 0);

    std::string rw = fresh("rw");
    redlock::client other(nodes);
    redlock::lock r1 = c.acquire_shared(rw, 10s), r2 = other.acquire_shared(rw, 10s);
    CHECK(r1.shared() && r2.shared());
    expect_error(redlock::errc::taken, [&] { other.acquire(rw, 10s); });
    r1.release();
    r2.release();
    redlock::lock writer = other.acquire(rw, 10s);
    CHECK(writer.valid() && !writer.shared());
}

/* 4 threads over 2 clients (2 per client, sharing one redlock::mutex per client) take the same resource in
   turn: the section checks that no one else is inside and makes a read-then-write increment that a second
   holder would lose. */
void four_threads_over_two_clients_never_overlap(const std::vector<std::string> &nodes) {
    redlock::client c1(nodes), c2(nodes);
    std::string res = fresh("threads");
    redlock::mutex m1(c1, res, 5s), m2(c2, res, 5s);
    std::atomic<int> inside{0}, overlaps{0}, errors{0};
    long counter = 0; /* guarded by the Redis lock alone */
    const int rounds = 25;
    auto work = [&](redlock::mutex &m) {
        for (int i = 0; i < rounds; i++) {
            try {
                std::lock_guard<redlock::mutex> g(m);
                if (inside.fetch_add(1) != 0) overlaps++;
                long seen = counter;
                std::this_thread::sleep_for(1ms);
                counter = seen + 1;
                inside.fetch_sub(1);
            } catch (const redlock::error &e) {
                std::fprintf(stderr, "  thread: %s\n", e.what());
                errors++;
            }
        }
    };
    std::vector<std::thread> ts;
    ts.emplace_back(work, std::ref(m1));
    ts.emplace_back(work, std::ref(m1));
    ts.emplace_back(work, std::ref(m2));
    ts.emplace_back(work, std::ref(m2));
    for (auto &t : ts) t.join();
    CHECK(errors == 0);
    CHECK(overlaps == 0);
    CHECK(counter == 4L * rounds);
    CHECK(m1.last_unlock() == redlock::errc::ok && m2.last_unlock() == redlock::errc::ok);
}

void cancel_waits_ends_a_waiting_lock(const std::vector<std::string> &nodes) {
    redlock::client holder(nodes), waiter(nodes);
    std::string res = fresh("cancel");
    redlock::lock held = holder.acquire(res, 30s);
    redlock::mutex m(waiter, res, 10s);
    std::atomic<bool> done{false};
    std::thread t([&] {
        expect_error(redlock::errc::cancelled, [&] { m.lock(); });
        done = true;
    });
    /* cancel until the waiting thread has seen it: a cancel before its wait began would not reach it */
    CHECK(wait_until([&] {
        waiter.cancel_waits();
        return done.load();
    }));
    t.join();
    CHECK(held.valid());
}

/* A joint client (nodes 0-2, next nodes 2-4) needs a quorum of each list; a lock-delay refuses a lock that
   expired unreleased, saying so, until the delay has passed. */
void joint_nodes_and_lock_delay_reach_the_library(const std::vector<std::string> &nodes) {
    redlock::options jo;
    jo.nodes = {nodes[0], nodes[1], nodes[2]};
    jo.next_nodes = {nodes[2], nodes[3], nodes[4]};
    redlock::client joint(jo), newer(std::vector<std::string>{nodes[2], nodes[3], nodes[4]});
    std::string res = fresh("joint");
    {
        redlock::lock held = newer.acquire(res, 10s);
        redlock::error e = expect_error(redlock::errc::taken, [&] { joint.acquire(res, 10s); });
        CHECK(std::string(e.what()).find("new ") != std::string::npos);
    }
    CHECK(joint.acquire(res, 10s).valid());

    redlock::options lo;
    lo.nodes = nodes;
    lo.lock_delay = 1500ms;
    redlock::client a(lo), b(lo);
    std::string gone = fresh("delay");
    {
        redlock::lock lk = a.acquire(gone, 300ms);
        CHECK(wait_until([&] { return lk.validity() <= 0ms; }));
        std::this_thread::sleep_for(300ms); /* expired; its release below finds nothing to delete */
    }
    redlock::error e = expect_error(redlock::errc::taken, [&] { b.acquire(gone, 5s); });
    bool said = false;
    for (const auto &n : e.report().nodes) said |= n.detail.find("lock-delay") != std::string::npos;
    CHECK(said);
    CHECK(b.acquire(gone, 5s, 5s).valid());
    lo.fencing = true;
    expect_error(redlock::errc::config, [&] { redlock::client f(lo); });
}

} // namespace

int main() {
    std::vector<std::string> nodes = fixture_nodes();
    struct {
        const char *name;
        void (*run)(const std::vector<std::string> &);
    } cases[] = {
        {"bad_uri_throws_config_error_naming_it", bad_uri_throws_config_error_naming_it},
        {"lock_guard_acquires_extends_and_releases", lock_guard_acquires_extends_and_releases},
        {"mutex_meets_the_standard_lock_guards", mutex_meets_the_standard_lock_guards},
        {"lost_lock_is_reported_as_the_c_api_reports_it", lost_lock_is_reported_as_the_c_api_reports_it},
        {"semaphore_and_reader_guards", semaphore_and_reader_guards},
        {"four_threads_over_two_clients_never_overlap", four_threads_over_two_clients_never_overlap},
        {"cancel_waits_ends_a_waiting_lock", cancel_waits_ends_a_waiting_lock},
        {"joint_nodes_and_lock_delay_reach_the_library", joint_nodes_and_lock_delay_reach_the_library},
    };
    int passed = 0, failed = 0;
    for (const auto &c : cases) {
        int before = failed_checks;
        try {
            c.run(nodes);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "  unexpected exception: %s\n", e.what());
            failed_checks++;
        }
        bool ok = failed_checks == before;
        std::printf("%s: %s\n", ok ? "PASS" : "FAIL", c.name);
        (ok ? passed : failed)++;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
