/* test_timing.c -- the Redlock validity arithmetic (src/core/timing.c), no server.
 *
 *   drift    = ttl * drift_factor + drift_min   (ms -> us, rounded up)
 *   deadline = t0 + ttl - drift                  (never before t0)
 *   validity = deadline - now                    (<= 0 from the deadline on)
 *
 * Time comes from an injected fake clock, so every instant is exact.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>

#include "clock.h"
#include "timing.h"

/* The fake clock: returns whatever the test last stored. */
static uint64_t fake_now;
static uint64_t fake_clock(void) {
    return fake_now;
}

/* Remaining validity of a lock with this deadline, as seen through clk. */
static int64_t validity_at(rl_clock_fn clk, uint64_t deadline_us) {
    return rl_validity_us(deadline_us, clk());
}

/* The exact drift in us for factor k / 10000, rounded up, in integers:
 * ttl_ms * 1000 * k / 10000 = ttl_ms * k / 10. */
static uint64_t exact_drift_us(uint32_t ttl_ms, uint32_t k, uint32_t min_ms) {
    return ((uint64_t)ttl_ms * k + 9u) / 10u + (uint64_t)min_ms * 1000u;
}

Test(timing, drift_known_values) {
    /* Defaults: 10 s TTL, 1% + 2 ms. */
    cr_assert_eq(rl_drift_us(10000, 0.01, 2), 102000u);
    cr_assert_eq(rl_drift_us(1000, 0.01, 2), 12000u);
    cr_assert_eq(rl_drift_us(30000, 0.01, 2), 302000u);
    cr_assert_eq(rl_drift_us(100, 0.01, 2), 3000u);
    /* No drift at all, minimum only, factor only. */
    cr_assert_eq(rl_drift_us(1000, 0.0, 0), 0u);
    cr_assert_eq(rl_drift_us(1000, 0.0, 5), 5000u);
    cr_assert_eq(rl_drift_us(1000, 0.5, 0), 500000u);
    cr_assert_eq(rl_drift_us(4000, 0.25, 1), 1001000u);
    /* TTL 0: the minimum is still there. */
    cr_assert_eq(rl_drift_us(0, 0.01, 2), 2000u);
    /* The biggest TTL does not overflow: 4294967295000 us * 1% = 42949672950 us. */
    cr_assert_eq(rl_drift_us(UINT32_MAX, 0.01, 2), 42949672950u + 2000u);
}

Test(timing, drift_rounds_up_to_whole_us) {
    /* 1 ms * 0.0001 = 0.1 us -> 1 us, never 0. */
    cr_assert_eq(rl_drift_us(1, 0.0001, 0), 1u);
    /* 3 ms * 0.25 = 750 us exactly. */
    cr_assert_eq(rl_drift_us(3, 0.25, 0), 750u);
    /* 1 ms * 0.0015 = 1.5 us -> 2 us. */
    cr_assert_eq(rl_drift_us(1, 0.0015, 0), 2u);
    /* 7 ms / 3 = 2333.33 us -> 2334 us. */
    cr_assert_eq(rl_drift_us(7, 1.0 / 3.0, 0), 2334u);
    /* Rounding up happens before the minimum is added. */
    cr_assert_eq(rl_drift_us(1, 0.0001, 2), 2001u);
}

Test(timing, drift_never_below_exact_value) {
    /* Over a grid of TTLs and factors k/10000, the drift is the exact value
     * rounded up; floating point may add at most 1 us, never take one off
     * (a smaller drift would overstate the validity). */
    static const uint32_t ttls[] = {0, 1, 2, 3, 7, 10, 99, 100, 250, 1000, 1234, 10000, 30000, 86400000, UINT32_MAX};
    static const uint32_t ks[] = {0, 1, 3, 7, 10, 33, 70, 100, 125, 333, 500, 1000, 5000, 9999, 10000};
    static const uint32_t mins[] = {0, 1, 2, 50};
    for (size_t i = 0; i < sizeof ttls / sizeof ttls[0]; i++)
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
            for (size_t m = 0; m < sizeof mins / sizeof mins[0]; m++) {
                uint64_t want = exact_drift_us(ttls[i], ks[j], mins[m]);
                uint64_t got = rl_drift_us(ttls[i], ks[j] / 10000.0, mins[m]);
                cr_assert(got >= want && got <= want + 1, "ttl %u factor %u/10000 min %u: drift %llu, exact %llu",
                          (unsigned)ttls[i], (unsigned)ks[j], (unsigned)mins[m], (unsigned long long)got,
                          (unsigned long long)want);
            }
}

Test(timing, drift_bad_factor_is_harmless) {
    /* Options validation rejects these, but the arithmetic must not go
     * undefined: NaN and negative factors count as 0, a huge or infinite
     * factor leaves no validity at all. */
    cr_assert_eq(rl_drift_us(1000, NAN, 2), 2000u);
    cr_assert_eq(rl_drift_us(1000, -0.5, 2), 2000u);
    cr_assert_eq(rl_drift_us(1000, -INFINITY, 0), 0u);
    cr_assert_geq(rl_drift_us(1000, 1e300, 2), 1000000u);
    cr_assert_geq(rl_drift_us(1000, INFINITY, 2), 1000000u);
    cr_assert_eq(rl_deadline_us(5000000, 1000, INFINITY, 2), 5000000u);
    cr_assert_eq(rl_deadline_us(5000000, UINT32_MAX, 1e300, UINT32_MAX), 5000000u);
    cr_assert_eq(rl_deadline_us(5000000, 1000, NAN, 2), 5000000u + 1000000u - 2000u);
}

Test(timing, deadline_is_t0_plus_ttl_minus_drift) {
    /* t0 = 1 s, TTL 10 s, 1% + 2 ms: drift 102 ms, deadline 10.898 s. */
    cr_assert_eq(rl_deadline_us(1000000, 10000, 0.01, 2), 10898000u);
    /* Same from t0 = 0 and from a large t0 (the monotonic clock after days). */
    cr_assert_eq(rl_deadline_us(0, 10000, 0.01, 2), 9898000u);
    uint64_t t0 = UINT64_C(864000000000); /* 10 days in us */
    cr_assert_eq(rl_deadline_us(t0, 10000, 0.01, 2), t0 + 9898000u);
    /* No drift: the deadline is exactly t0 + TTL. */
    cr_assert_eq(rl_deadline_us(1000000, 500, 0.0, 0), 1500000u);
    /* Biggest TTL: 4294967295000 - 42949674950 = 4252017620050 us. */
    cr_assert_eq(rl_deadline_us(1000000, UINT32_MAX, 0.01, 2), 1000000u + UINT64_C(4252017620050));
    /* The same identity over a grid. */
    for (uint32_t ttl = 1; ttl <= 100000; ttl = ttl * 3 + 1)
        for (uint32_t k = 0; k <= 1000; k += 125)
            for (uint32_t min = 0; min <= 10; min += 5) {
                double f = k / 10000.0;
                uint64_t drift = rl_drift_us(ttl, f, min);
                uint64_t ttl_us = (uint64_t)ttl * 1000u;
                uint64_t want = drift >= ttl_us ? 777u : 777u + ttl_us - drift;
                cr_assert_eq(rl_deadline_us(777, ttl, f, min), want, "ttl %u k %u min %u", (unsigned)ttl, (unsigned)k,
                             (unsigned)min);
            }
}

Test(timing, bigger_drift_never_lengthens_validity) {
    /* Raising the factor or the minimum moves the deadline earlier or leaves
     * it: validity shrinks, never grows. */
    const uint64_t t0 = 1000000;
    for (uint32_t ttl = 1; ttl <= 60000; ttl = ttl * 2 + 3) {
        uint64_t prev = UINT64_MAX;
        for (uint32_t k = 0; k <= 10000; k += 50) {
            uint64_t d = rl_deadline_us(t0, ttl, k / 10000.0, 2);
            cr_assert_leq(d, prev, "ttl %u: factor %u/10000 moved the deadline later", (unsigned)ttl, (unsigned)k);
            cr_assert_geq(d, t0);
            cr_assert_leq(d, t0 + (uint64_t)ttl * 1000u);
            prev = d;
        }
        prev = UINT64_MAX;
        for (uint32_t min = 0; min <= 100; min++) {
            uint64_t d = rl_deadline_us(t0, ttl, 0.01, min);
            cr_assert_leq(d, prev, "ttl %u: drift_min %u moved the deadline later", (unsigned)ttl, (unsigned)min);
            prev = d;
        }
    }
}

Test(timing, ttl_not_above_drift_gives_no_validity) {
    const uint64_t t0 = 1000000;
    /* 1 ms TTL, drift 2.01 ms: the deadline is t0 itself, not before it
     * (unsigned wrap-around would make it far in the future). */
    cr_assert_eq(rl_deadline_us(t0, 1, 0.01, 2), t0);
    /* TTL exactly equal to the drift. */
    cr_assert_eq(rl_deadline_us(t0, 2, 0.0, 2), t0);
    cr_assert_eq(rl_deadline_us(t0, 0, 0.0, 0), t0);
    cr_assert_eq(rl_deadline_us(0, 1, 0.01, 2), 0u);
    /* One more ms than the drift leaves 1 ms. */
    cr_assert_eq(rl_deadline_us(t0, 3, 0.0, 2), t0 + 1000u);
    /* Validity is never positive from t0 on. */
    for (uint64_t now = t0; now <= t0 + 5000; now += 100) {
        cr_assert_leq(rl_validity_us(rl_deadline_us(t0, 1, 0.01, 2), now), 0);
        cr_assert_leq(rl_validity_ms(rl_validity_us(rl_deadline_us(t0, 1, 0.01, 2), now)), 0);
    }
}

Test(timing, validity_is_deadline_minus_now) {
    cr_assert_eq(rl_validity_us(10898000, 1000000), 9898000);
    cr_assert_eq(rl_validity_us(10898000, 10898000), 0);
    cr_assert_eq(rl_validity_us(10898000, 10898001), -1);
    cr_assert_eq(rl_validity_us(10898000, 20000000), -9102000);
    cr_assert_eq(rl_validity_us(0, 0), 0);
}

Test(timing, validity_sweep_around_deadline) {
    const uint64_t t0 = 1000000;
    const uint64_t deadline = rl_deadline_us(t0, 10000, 0.01, 2);
    cr_assert_eq(deadline, 10898000u);
    for (uint64_t now = deadline - 5000; now <= deadline + 5000; now++) {
        int64_t v = rl_validity_us(deadline, now);
        int64_t ms = rl_validity_ms(v);
        cr_assert_eq(v, (int64_t)deadline - (int64_t)now);
        if (now >= deadline) {
            cr_assert_leq(v, 0, "valid at or after the deadline (now %llu)", (unsigned long long)now);
            cr_assert_leq(ms, 0);
        } else {
            cr_assert_gt(v, 0);
            cr_assert_geq(ms, 0);
        }
        if (now > deadline)
            cr_assert_lt(ms, 0, "%lld us past the deadline reported as %lld ms", (long long)-v, (long long)ms);
        /* Whole ms rounded toward minus infinity: ms*1000 <= v < (ms+1)*1000. */
        cr_assert(ms * 1000 <= v && v < (ms + 1) * 1000, "v %lld us -> %lld ms", (long long)v, (long long)ms);
    }
}

Test(timing, validity_ms_rounds_toward_minus_infinity) {
    cr_assert_eq(rl_validity_ms(0), 0);
    cr_assert_eq(rl_validity_ms(1), 0);
    cr_assert_eq(rl_validity_ms(999), 0);
    cr_assert_eq(rl_validity_ms(1000), 1);
    cr_assert_eq(rl_validity_ms(1999), 1);
    cr_assert_eq(rl_validity_ms(2000), 2);
    cr_assert_eq(rl_validity_ms(-1), -1);
    cr_assert_eq(rl_validity_ms(-999), -1);
    cr_assert_eq(rl_validity_ms(-1000), -1);
    cr_assert_eq(rl_validity_ms(-1001), -2);
    cr_assert_eq(rl_validity_ms(-2000), -2);
    cr_assert_eq(rl_validity_ms(INT64_MAX), INT64_MAX / 1000);
    /* INT64_MIN = -9223372036854775808: floor(/1000) = -9223372036854776. */
    cr_assert_eq(rl_validity_ms(INT64_MIN), INT64_MIN / 1000 - 1);
    cr_assert_eq(rl_validity_ms(INT64_MIN + 808), INT64_MIN / 1000);
}

Test(timing, fake_clock_drives_validity) {
    rl_clock_fn clk = fake_clock;
    fake_now = 1000000;
    uint64_t t0 = clk();
    uint64_t deadline = rl_deadline_us(t0, 10000, 0.01, 2);
    cr_assert_eq(deadline, 10898000u);

    fake_now = 1000000; /* at t0: TTL - drift */
    cr_assert_eq(validity_at(clk, deadline), 9898000);
    cr_assert_eq(rl_validity_ms(validity_at(clk, deadline)), 9898);
    fake_now = 6000000; /* 5 s later */
    cr_assert_eq(validity_at(clk, deadline), 4898000);
    fake_now = 10897999; /* 1 us before the deadline */
    cr_assert_eq(validity_at(clk, deadline), 1);
    cr_assert_eq(rl_validity_ms(validity_at(clk, deadline)), 0);
    fake_now = 10898000; /* at the deadline */
    cr_assert_eq(validity_at(clk, deadline), 0);
    fake_now = 10898001; /* just after */
    cr_assert_eq(validity_at(clk, deadline), -1);
    cr_assert_eq(rl_validity_ms(validity_at(clk, deadline)), -1);
    fake_now = 60000000; /* long after */
    cr_assert_eq(validity_at(clk, deadline), -49102000);

    /* The clock can be set anywhere; only its value matters. The spec's form
     * of validity, TTL - (now - t0) - drift, equals deadline - now for every
     * elapsed time while the deadline is after t0. */
    static const uint64_t starts[] = {0, 1, 999999, UINT64_C(123456789012), UINT64_C(1) << 50};
    static const uint32_t ttls[] = {10, 1000, 10000, 30000};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        for (size_t j = 0; j < sizeof ttls / sizeof ttls[0]; j++) {
            fake_now = starts[i];
            uint64_t start = clk();
            uint64_t d = rl_deadline_us(start, ttls[j], 0.01, 2);
            int64_t drift = (int64_t)rl_drift_us(ttls[j], 0.01, 2);
            for (uint64_t elapsed = 0; elapsed <= 40000000; elapsed += 250000) {
                fake_now = starts[i] + elapsed;
                int64_t spec = (int64_t)ttls[j] * 1000 - (int64_t)(clk() - start) - drift;
                cr_assert_eq(validity_at(clk, d), spec, "start %llu ttl %u elapsed %llu", (unsigned long long)starts[i],
                             (unsigned)ttls[j], (unsigned long long)elapsed);
            }
        }
}

Test(timing, real_clock_is_just_another_clock) {
    /* The monotonic clock plugs into the same slot; a deadline 10 s away is
     * still valid right after it was computed (a generous bound). */
    rl_clock_fn clk = rl_clock_monotonic_us;
    uint64_t t0 = clk();
    uint64_t d = rl_deadline_us(t0, 10000, 0.01, 2);
    int64_t v = validity_at(clk, d);
    cr_assert_gt(v, 0);
    cr_assert_leq(v, 9898000);
}
