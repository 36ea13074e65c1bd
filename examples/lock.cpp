// lock.cpp -- the C++ wrapper: a client on the nodes of the command line,
// an RAII lock with a fencing token, and a redlock::mutex under the
// standard lock guards.
//
//   lock_cpp URI...   (exit 0 when the locks behaved so)
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <redlock/redlock.hpp>

using namespace std::chrono_literals;

int main(int argc, char **argv) {
    redlock::options opt;
    opt.nodes.assign(argv + 1, argv + argc);
    opt.fencing = true; // each lock also gets a fencing token
    try {
        redlock::client client(opt);

        // An RAII guard: released when it goes out of scope.
        {
            redlock::lock lk = client.acquire("invoice:42", 10s, 2s); // 10 s lock, wait up to 2 s
            if (lk.valid(500ms)) std::cout << "holding invoice:42 with fence " << lk.fence() << "\n";
            lk.extend(); // another 10 s
        }

        // A Lockable: the standard guards work, and waits are bounded by try_lock_for.
        redlock::mutex m(client, "report:daily", 30s);
        std::unique_lock<redlock::mutex> guard(m, std::defer_lock);
        if (!guard.try_lock_for(5s)) {
            std::cerr << "report:daily stays taken\n";
            return 1;
        }
        std::cout << "holding report:daily\n";
        guard.unlock();
        return m.last_unlock() == redlock::errc::ok ? 0 : 1;
    } catch (const redlock::error &e) {
        std::cerr << e.what() << "\n";
        for (const redlock::node_report &n : e.report().nodes)
            std::cerr << "  " << n.node << ": " << n.vote << " " << n.detail << "\n";
        return 2;
    }
}
