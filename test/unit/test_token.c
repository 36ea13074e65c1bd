/* test_token.c -- lock tokens and random delays (src/base/token.c), no server. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redlock.h"
#include "token.h"

static void init(void) {
    cr_assert_eq(rl_token_init(), 0);
}

TestSuite(token, .init = init);

static int is_lower_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

Test(token, init_is_idempotent) {
    cr_assert_eq(rl_token_init(), 0);
    cr_assert_eq(rl_token_init(), 0);
}

Test(token, forty_lowercase_hex_chars) {
    cr_assert_eq(REDLOCK_TOKEN_LEN, 2 * RL_TOKEN_BYTES);
    for (int i = 0; i < 1000; i++) {
        char buf[64];
        memset(buf, 'Z', sizeof buf);
        rl_token_new(buf);
        cr_assert_eq(buf[40], '\0', "token not NUL-terminated at 40");
        cr_assert_eq(strlen(buf), 40u);
        for (int j = 0; j < 40; j++) cr_assert(is_lower_hex(buf[j]), "token '%s': char %d is '%c'", buf, j, buf[j]);
        for (size_t j = 41; j < sizeof buf; j++) cr_assert_eq(buf[j], 'Z', "wrote past 41 bytes");
    }
}

Test(token, every_hex_digit_shows_up_in_every_position) {
    /* 2000 tokens: each of the 16 digits at each of the 40 positions. The
     * chance that a fair source misses one is below 40 * 16 * (15/16)^2000. */
    unsigned seen[40] = {0};
    for (int i = 0; i < 2000; i++) {
        char t[41];
        rl_token_new(t);
        for (int j = 0; j < 40; j++) {
            int v = t[j] <= '9' ? t[j] - '0' : t[j] - 'a' + 10;
            seen[j] |= 1u << v;
        }
    }
    for (int j = 0; j < 40; j++) cr_assert_eq(seen[j], 0xFFFFu, "position %d: digits seen %#x", j, seen[j]);
}

static int cmp_token(const void *a, const void *b) {
    return memcmp(a, b, 41);
}

Test(token, hundred_thousand_are_distinct) {
    enum { N = 100000 };
    char(*t)[41] = malloc(sizeof(*t) * N);
    cr_assert_not_null(t);
    for (size_t i = 0; i < N; i++) rl_token_new(t[i]);
    qsort(t, N, sizeof t[0], cmp_token);
    for (size_t i = 1; i < N; i++) cr_assert_neq(memcmp(t[i - 1], t[i], 41), 0, "duplicate token %s", t[i]);
    free(t);
}

Test(token, fork_child_does_not_repeat_parent_tokens) {
    /* Tokens come from a per-thread buffer: a forked child must not take
     * the same bytes as its parent from its copy of that buffer. */
    char warm[41];
    rl_token_new(warm); /* the buffer is filled and partly used */
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char t[41];
        rl_token_new(t);
        _exit(write(fds[1], t, 41) == 41 ? 0 : 1);
    }
    char parent[41], child[41];
    rl_token_new(parent);
    cr_assert_eq(read(fds[0], child, 41), 41);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(fds[0]);
    close(fds[1]);
    cr_assert_neq(memcmp(parent, child, 41), 0, "child repeated the parent's token %s", parent);
}

Test(token, random_between_stays_in_range) {
    static const unsigned ranges[][2] = {
        {0, 1}, {0, 3}, {100, 110}, {100, 300}, {0, 1000000}, {UINT_MAX - 5, UINT_MAX}, {1, UINT_MAX}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        unsigned lo = ranges[r][0], hi = ranges[r][1];
        for (int i = 0; i < 20000; i++) {
            unsigned v = rl_random_between(lo, hi);
            cr_assert(v >= lo && v <= hi, "rl_random_between(%u, %u) = %u", lo, hi, v);
        }
    }
}

Test(token, random_between_hits_both_ends_evenly) {
    /* 0..3, 40000 draws: about 10000 each (sd 87); allow +-1000. */
    unsigned count[4] = {0};
    for (int i = 0; i < 40000; i++) {
        unsigned v = rl_random_between(0, 3);
        cr_assert_leq(v, 3u);
        count[v]++;
    }
    for (int v = 0; v < 4; v++)
        cr_assert(count[v] > 9000 && count[v] < 11000, "value %d drawn %u times of 40000", v, count[v]);

    /* The retry delay shape: [delay - jitter, delay + jitter]. */
    int lo_hit = 0, hi_hit = 0;
    for (int i = 0; i < 100000 && !(lo_hit && hi_hit); i++) {
        unsigned v = rl_random_between(100, 300);
        lo_hit |= v == 100;
        hi_hit |= v == 300;
    }
    cr_assert(lo_hit && hi_hit, "100..300: low end %s, high end %s", lo_hit ? "hit" : "missed",
              hi_hit ? "hit" : "missed");
}

Test(token, random_between_degenerate_ranges) {
    cr_assert_eq(rl_random_between(0, 0), 0u);
    cr_assert_eq(rl_random_between(7, 7), 7u);
    cr_assert_eq(rl_random_between(UINT_MAX, UINT_MAX), UINT_MAX);
    /* hi < lo is outside the contract; it returns lo rather than wrapping. */
    cr_assert_eq(rl_random_between(10, 3), 10u);
}

Test(token, random_between_full_range) {
    /* [0, UINT_MAX] has 2^32 values: hi - lo + 1 wraps to 0 in 32 bits,
     * which must not collapse the draw to a constant. 64 draws all in the
     * lower half has probability 2^-64. */
    int upper = 0, distinct = 0;
    unsigned first = rl_random_between(0, UINT_MAX);
    for (int i = 0; i < 64; i++) {
        unsigned v = rl_random_between(0, UINT_MAX);
        upper |= v > UINT_MAX / 2;
        distinct |= v != first;
    }
    cr_assert(upper, "rl_random_between(0, UINT_MAX) never drew from the upper half");
    cr_assert(distinct, "rl_random_between(0, UINT_MAX) is constant (%u)", first);
}
