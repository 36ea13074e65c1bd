/* test_buf.c -- the output buffer (src/net/buf.c), no I/O: appending after
 * a partial consume slides the tail forward, and appending nothing is a
 * no-op also from the empty buffer of a freed connection, whose data is
 * NULL (the sanitizer build checks that no NULL reaches memcpy). */
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
