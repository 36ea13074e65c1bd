/* test_clock.c -- the monotonic clock and sleep (src/base/clock.c), no server.
 * Timing bounds are generous: these machines are shared and noisy. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <time.h>

#include "clock.h"

Test(clock, monotonic_never_goes_back) {
    uint64_t prev = rl_clock_monotonic_us();
    cr_assert_gt(prev, 0u);
    for (int i = 0; i < 100000; i++) {
        uint64_t now = rl_clock_monotonic_us();
        cr_assert_geq(now, prev, "clock went back from %llu to %llu", (unsigned long long)prev,
                      (unsigned long long)now);
        prev = now;
    }
}

Test(clock, matches_clock_gettime) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t before = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    uint64_t ours = rl_clock_monotonic_us();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t after = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    cr_assert(before <= ours && ours <= after, "%llu not within [%llu, %llu]", (unsigned long long)ours,
              (unsigned long long)before, (unsigned long long)after);
}

Test(clock, sleep_waits_at_least_as_asked) {
    static const uint64_t asks[] = {0, 1, 1500, 20000, 49999, 125000};
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        uint64_t t0 = rl_clock_monotonic_us();
        rl_sleep_us(asks[i]);
        uint64_t slept = rl_clock_monotonic_us() - t0;
        cr_assert_geq(slept, asks[i], "asked %llu us, slept %llu", (unsigned long long)asks[i],
                      (unsigned long long)slept);
        cr_assert_lt(slept, asks[i] + 2000000u, "asked %llu us, slept %llu", (unsigned long long)asks[i],
                     (unsigned long long)slept);
    }
}

Test(clock, sleep_across_a_second_boundary) {
    /* 1.2 s: the nanosecond carry into tv_sec must be right. */
    uint64_t t0 = rl_clock_monotonic_us();
    rl_sleep_us(1200000);
    uint64_t slept = rl_clock_monotonic_us() - t0;
    cr_assert_geq(slept, 1200000u);
    cr_assert_lt(slept, 4000000u, "slept %llu us", (unsigned long long)slept);
}
