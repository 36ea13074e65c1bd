/* test_buf.c -- the output buffer (src/net/buf.c), no I/O: appending after
 * a partial consume slides the tail forward, and appending nothing is a
 * no-op also from the empty buffer of a freed connection, whose data is
 * NULL (the sanitizer build checks that no NULL reaches memcpy); a burst's
 * memory goes back also from a buffer a steady flow never empties. */
#include <criterion/criterion.h>
#include <string.h>

#include "buf.h"

TestSuite(buf, .timeout = 30);

Test(buf, appending_nothing_from_an_empty_buffer_is_a_no_op) {
    rl_buf_t b = {0}, empty = {0};
    cr_assert_eq(rl_buf_append(&b, empty.data, rl_buf_pending(&empty)), 0);
    cr_assert_eq(rl_buf_pending(&b), 0u);
    cr_assert_null(b.data, "nothing was allocated for nothing");
    cr_assert_eq(rl_buf_append(&b, "abc", 3), 0);
    cr_assert_eq(rl_buf_append(&b, NULL, 0), 0);
    cr_assert_eq(rl_buf_pending(&b), 3u);
    cr_assert_eq(memcmp(b.data + b.off, "abc", 3), 0);
    rl_buf_free(&b);
}

Test(buf, a_consumed_front_makes_room_for_what_follows) {
    rl_buf_t b = {0};
    char chunk[700];
    memset(chunk, 'x', sizeof chunk);
    cr_assert_eq(rl_buf_append(&b, chunk, sizeof chunk), 0);
    rl_buf_consume(&b, 600);
    chunk[0] = 'y';
    cr_assert_eq(rl_buf_append(&b, chunk, sizeof chunk), 0);
    cr_assert_eq(rl_buf_pending(&b), 800u);
    cr_assert_eq(b.data[b.off + 100], 'y', "the new bytes follow the 100 left");
    rl_buf_free(&b);
}

/* A burst grew the buffer to 1 MiB and a steady flow never lets it empty:
 * once what is left fills less than an eighth of it, it shrinks to twice
 * that (at least RL_BUF_KEEP), the bytes left intact and in order. */
Test(buf, a_burst_that_never_empties_gives_its_memory_back) {
    rl_buf_t b = {0};
    static char burst[1 << 20];
    for (size_t i = 0; i < sizeof burst; i++) burst[i] = (char)('a' + i % 26);
    cr_assert_eq(rl_buf_append(&b, burst, sizeof burst), 0);
    size_t grown = b.cap;
    cr_assert_geq(grown, sizeof burst);
    rl_buf_consume(&b, sizeof burst / 2);
    cr_assert_eq(b.cap, grown, "half still pending: nothing given back yet");
    rl_buf_consume(&b, sizeof burst / 2 - 1000); /* 1000 bytes left, never empty */
    cr_assert_eq(b.cap, RL_BUF_KEEP, "cap %zu", b.cap);
    cr_assert_eq(rl_buf_pending(&b), 1000u);
    cr_assert_eq(memcmp(b.data + b.off, burst + sizeof burst - 1000, 1000), 0, "the bytes left are kept");
    cr_assert_eq(rl_buf_append(&b, "tail", 4), 0);
    cr_assert_eq(memcmp(b.data + b.off + 1000, "tail", 4), 0);
    rl_buf_consume(&b, 1004);
    cr_assert_eq(rl_buf_pending(&b), 0u);
    cr_assert_eq(b.cap, RL_BUF_KEEP, "an emptied buffer of RL_BUF_KEEP keeps its memory");
    rl_buf_free(&b);
}

/* A buffer no larger than RL_BUF_KEEP is never reallocated by consuming. */
Test(buf, a_small_buffer_keeps_its_memory) {
    rl_buf_t b = {0};
    char chunk[RL_BUF_KEEP / 2];
    memset(chunk, 'z', sizeof chunk);
    cr_assert_eq(rl_buf_append(&b, chunk, sizeof chunk), 0);
    char *data = b.data;
    size_t cap = b.cap;
    rl_buf_consume(&b, sizeof chunk - 10);
    cr_assert(b.data == data && b.cap == cap);
    cr_assert_eq(rl_buf_pending(&b), 10u);
    rl_buf_free(&b);
}
