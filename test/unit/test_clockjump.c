/* test_clockjump.c -- telling a stepped node clock from network delay. */
#include <criterion/criterion.h>

#include "clockjump.h"

/* A sample sent at s and answered at r (our µs) with the node at node_us. */
static rl_clock_sample_t S(uint64_t s, uint64_t r, int64_t node_us) {
    return (rl_clock_sample_t){.sent_us = s, .recv_us = r, .node_us = node_us, .valid = 1};
}

Test(clockjump, steady_clock_is_no_jump) {
    rl_clock_sample_t a = S(1000, 1100, 5000000), b = S(1001000, 1001100, 6000000);
    cr_assert_eq(rl_clock_jump_us(&a, &b, 100000), 0);
}

Test(clockjump, anything_inside_the_round_trips_is_no_jump) {
    /* elapsed here is somewhere in [b.sent - a.recv, b.recv - a.sent] = [0.9 s, 1.3 s] */
    rl_clock_sample_t a = S(0, 100000, 0), b = S(1000000, 1300000, 0);
    for (int64_t moved = 900000; moved <= 1300000; moved += 50000) {
        b.node_us = moved;
        cr_assert_eq(rl_clock_jump_us(&a, &b, 0), 0, "moved %lld", (long long)moved);
    }
}

Test(clockjump, forward_and_backward_steps_beyond_the_tolerance) {
    rl_clock_sample_t a = S(0, 100, 0), b = S(1000000, 1000100, 0);
    /* hi = 1,000,100; tolerance 100 ms + 1000 ppm of hi (1,000) */
    b.node_us = 1000100 + 101000 + 1;
    cr_assert_eq(rl_clock_jump_us(&a, &b, 100000), 101001);
    b.node_us = 1000100 + 101000;
    cr_assert_eq(rl_clock_jump_us(&a, &b, 100000), 0, "exactly at the tolerance is allowed");
    /* lo = 999,900 */
    b.node_us = 999900 - 101000 - 1;
    cr_assert_eq(rl_clock_jump_us(&a, &b, 100000), -101001);
    b.node_us = -5000000;
    cr_assert_eq(rl_clock_jump_us(&a, &b, 100000), -5000000 - 999900);
}

Test(clockjump, slew_allowance_grows_with_the_elapsed_time) {
    /* an hour apart, a clock 500 ppm fast (1.8 s) is slew, not a jump */
    uint64_t hour = 3600000000ull;
    rl_clock_sample_t a = S(0, 100, 0), b = S(hour, hour + 100, (int64_t)(hour + hour / 2000));
    cr_assert_eq(rl_clock_jump_us(&a, &b, 100000), 0);
    b.node_us = (int64_t)(hour + hour / 500); /* 2000 ppm: beyond */
    cr_assert_gt(rl_clock_jump_us(&a, &b, 100000), 0);
}

Test(clockjump, invalid_samples_never_report_a_jump) {
    rl_clock_sample_t a = {0}, b = S(1000, 1100, 999999999);
    cr_assert_eq(rl_clock_jump_us(&a, &b, 0), 0);
    a = S(5000, 5100, 0);
    b = S(1000, 1100, 999999999); /* b before a: not a later sample */
    cr_assert_eq(rl_clock_jump_us(&a, &b, 0), 0);
}

Test(clockjump, parse_time_reply_fields) {
    int64_t us = 0;
    cr_assert_eq(rl_clock_parse_time("1795374448", "264419", &us), 0);
    cr_assert_eq(us, 1795374448264419LL);
    cr_assert_eq(rl_clock_parse_time("0", "0", &us), 0);
    cr_assert_eq(us, 0);
    const char *bad[][2] = {{"", "1"},   {"-1", "1"}, {"12x", "1"}, {"1", "1000000"},
                            {"1", "-5"}, {NULL, "1"}, {"1", NULL},  {"99999999999999999999", "0"},
                            {" 1", "1"}, {"1", "1 "}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(rl_clock_parse_time(bad[i][0], bad[i][1], &us), -1, "accepted '%s' '%s'",
                     bad[i][0] ? bad[i][0] : "(null)", bad[i][1] ? bad[i][1] : "(null)");
}
