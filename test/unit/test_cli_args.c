/* test_cli_args.c -- the redlock tool's duration parser (src/cli/args.c,
 * compiled into this test by test/CMakeLists.txt), no server: the forms
 * it accepts (h, m, s, ms, compounds largest unit first, a bare number as
 * ms, fractions that make whole ms), the ones it refuses with a message
 * naming the value, and the options that use it (--ttl, --wait and the
 * global durations stored in uint32 ms fields).
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "redlock.h"

TestSuite(cli_args, .timeout = 30);

/* ---- cli_parse_duration --------------------------------------------------- */

/* Every accepted form with the ms it means. */
Test(cli_args, accepted_durations) {
    static const struct {
        const char *s;
        int64_t ms;
    } ok[] = {
        {"0", 0},
        {"1500", 1500},
        {"007", 7},
        {"2.0", 2},
        {"1500ms", 1500},
        {"10s", 10000},
        {"1.5s", 1500},
        {".5s", 500},
        {"2m", 120000},
        {"1h", 3600000},
        {"2h", 7200000},
        {"1.5h", 5400000},
        {"0.25h", 900000},
        {"1h30m", 5400000},
        {"2m30s", 150000},
        {"1h0m5s", 3605000},
        {"1s500ms", 1500},
        {"1h1ms", 3600001},
        {"1h2m3s4ms", 3723004},
        {"1h0.5m", 3630000},
        {"0h0m0s0ms", 0},
        {"596h", 2145600000},
        {"596h31m23s647ms", CLI_MAX_DURATION_MS},
        {"2147483647", CLI_MAX_DURATION_MS},
        {"1.0000000000h", 3600000},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char err[200] = "";
        int64_t ms = -1;
        int rc = cli_parse_duration(ok[i].s, &ms, err, sizeof err);
        cr_expect_eq(rc, 0, "'%s' refused: %s", ok[i].s, err);
        cr_expect_eq(ms, ok[i].ms, "'%s' gave %lld ms, expected %lld", ok[i].s, (long long)ms, (long long)ok[i].ms);
    }
}

/* Every refused form, with a piece of the message that says why; every
 * message also names the value itself. */
Test(cli_args, refused_durations_name_the_value) {
    static const struct {
        const char *s, *why;
    } bad[] = {
        {"", "empty duration"},
        {"5x", "unknown unit 'x'"},
        {"1d", "unknown unit 'd'"},
        {"1H", "unknown unit 'H'"},
        {"1us", "unknown unit 'us'"},
        {"1hm", "unknown unit 'hm'"},
        {"1h5x", "unknown unit 'x'"},
        {"30m1h", "'h' after 'm'"},
        {"1ms1s", "'s' after 'ms'"},
        {"2s1m", "'m' after 's'"},
        {"1h1h", "unit 'h' appears twice"},
        {"1m2m", "unit 'm' appears twice"},
        {"h", "not a duration"},
        {"ms", "not a duration"},
        {"1h30", "'30' has no unit"},
        {"1hh", "unknown unit 'hh'"},
        {"1h_5m", "no number at '_5m'"},
        {"1h.m", "no number at '.m'"},
        {"1.", "not a duration"},
        {".", "not a duration"},
        {"1 h", "unexpected character ' '"},
        {" 1h", "not a duration"},
        {"1h ", "no number at ' '"},
        {"+1h", "not a duration"},
        {"-5s", "negative"},
        {"-0", "negative"},
        {"1h-5m", "negative"},
        {"1-5", "negative"},
        {"1.5ms", "not a whole number of milliseconds"},
        {"1.5", "not a whole number of milliseconds"},
        {"1.0001s", "not a whole number of milliseconds"},
        {"1.000001m", "not a whole number of milliseconds"},
        {"1.00000001h", "not a whole number of milliseconds"},
        {"1h0.0001s", "(in '0.0001s')"},
        {"1.0000000001h", "not a whole number of milliseconds"},
        {"597h", "too large"},
        {"596h31m23s648ms", "too large"},
        {"2147483648", "too large"},
        {"35791395m", "too large"},
        {"99999999999999999999999h", "too large"},
        {"596h40m", "too large"},
        {"1e3", "unknown unit 'e'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[200] = "";
        int64_t ms = -1;
        int rc = cli_parse_duration(bad[i].s, &ms, err, sizeof err);
        cr_expect_eq(rc, -1, "'%s' accepted as %lld ms", bad[i].s, (long long)ms);
        cr_expect_eq(ms, -1, "'%s': *ms written on a refusal", bad[i].s);
        cr_expect(strstr(err, bad[i].why), "'%s': message lacks \"%s\": %s", bad[i].s, bad[i].why, err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i].s);
        if (*bad[i].s) cr_expect(strstr(err, quoted), "'%s': message does not name the value: %s", bad[i].s, err);
    }
}

/* A message longer than the caller's buffer is cut, never overrun. */
Test(cli_args, long_values_fit_the_buffer) {
    char err[16];
    memset(err, 'x', sizeof err);
    int64_t ms = 0;
    cr_assert_eq(cli_parse_duration("1h30m999999999999999999999999999999s", &ms, err, sizeof err), -1);
    cr_assert_eq(err[sizeof err - 1], '\0');
}

/* ---- the options that take a duration ------------------------------------ */

/* A cli_t as main.c starts it: default options, no nodes. */
static cli_t fresh_cli(void) {
    cli_t c;
    memset(&c, 0, sizeof c);
    c.prog = "redlock";
    redlock_options_init(&c.opt);
    return c;
}

/* Runs cli_global_option on {opt, val}; returns its result. */
static int global(cli_t *c, const char *opt, const char *val) {
    char *argv[] = {(char *)opt, (char *)val, NULL};
    int i = 0;
    int r = cli_global_option(c, 2, argv, &i);
    if (r == 1) cr_expect_eq(i, 1, "%s %s: the value was not consumed", opt, val);
    return r;
}

/* The global durations fill their uint32 ms fields from every form. */
Test(cli_args, global_durations_take_hours_and_compounds) {
    cli_t c = fresh_cli();
    cr_assert_eq(global(&c, "--max-ttl", "2h"), 1);
    cr_expect_eq(c.opt.max_ttl_ms, 7200000u);
    cr_assert_eq(global(&c, "--max-ttl", "596h31m23s647ms"), 1);
    cr_expect_eq(c.opt.max_ttl_ms, 2147483647u);
    cr_assert_eq(global(&c, "--clock-jump", "1h"), 1);
    cr_expect_eq(c.opt.clock_jump_ms, 3600000u);
    cr_assert_eq(global(&c, "--clock-check", "1m30s"), 1);
    cr_expect_eq(c.opt.clock_check_ms, 90000u);
    cr_assert_eq(global(&c, "--retry-delay", "1s500ms"), 1);
    cr_expect_eq(c.opt.retry_delay_ms, 1500u);
    cr_assert_eq(global(&c, "--op-timeout", "250"), 1);
    cr_expect_eq(c.opt.op_timeout_ms, 250u);
}

/* A refused duration is a usage error naming the option and the value,
 * and leaves the field as it was. */
Test(cli_args, global_durations_refuse_bad_forms, .init = cr_redirect_stderr) {
    cli_t c = fresh_cli();
    uint32_t before = c.opt.max_ttl_ms;
    cr_assert_eq(global(&c, "--max-ttl", "30m1h"), -1);
    cr_assert_eq(global(&c, "--max-ttl", "600h"), -1);
    cr_assert_eq(global(&c, "--clock-jump", "1h1h"), -1);
    cr_expect_eq(c.opt.max_ttl_ms, before);
    fflush(stderr);
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    cr_expect(strstr(text, "invalid value for --max-ttl: '30m1h'"), "%s", text);
    cr_expect(strstr(text, "invalid value for --max-ttl: '600h' is too large"), "%s", text);
    cr_expect(strstr(text, "invalid value for --clock-jump: '1h1h'"), "%s", text);
}

/* --ttl: a duration above 0; --wait: a duration or 'forever'. */
Test(cli_args, ttl_and_wait_values, .init = cr_redirect_stderr) {
    cli_t c = fresh_cli();
    int64_t v = -2;
    cr_expect_eq(cli_ttl_value(&c, "2h", &v), 0);
    cr_expect_eq(v, 7200000);
    cr_expect_eq(cli_ttl_value(&c, "1h30m", &v), 0);
    cr_expect_eq(v, 5400000);
    cr_expect_eq(cli_wait_value(&c, "forever", &v), 0);
    cr_expect_eq(v, -1);
    cr_expect_eq(cli_wait_value(&c, "1h0m5s", &v), 0);
    cr_expect_eq(v, 3605000);
    cr_expect_eq(cli_ttl_value(&c, "0h0m", &v), CLI_EX_USAGE);
    cr_expect_eq(cli_ttl_value(&c, "1h1h", &v), CLI_EX_USAGE);
    cr_expect_eq(cli_wait_value(&c, "30m1h", &v), CLI_EX_USAGE);
    fflush(stderr);
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    cr_expect(strstr(text, "--ttl: '0h0m' must be more than 0"), "%s", text);
    cr_expect(strstr(text, "--ttl: '1h1h'"), "%s", text);
    cr_expect(strstr(text, "--wait: '30m1h'"), "%s", text);
}
