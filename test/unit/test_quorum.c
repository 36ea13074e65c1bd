/* test_quorum.c -- redlock_quorum(n) = n/2 + 1, a strict majority. */
#include <criterion/criterion.h>

#include <stddef.h>

#include "redlock.h"

Test(quorum, small_clusters) {
    static const size_t want[] = {0, 1, 2, 2, 3, 3, 4, 4, 5, 5}; /* index = n */
    for (size_t n = 1; n <= 9; n++)
        cr_assert_eq(redlock_quorum(n), want[n], "quorum(%zu) = %zu, want %zu", n, redlock_quorum(n), want[n]);
}

Test(quorum, is_n_over_2_plus_1_up_to_max_nodes) {
    for (size_t n = 1; n <= REDLOCK_MAX_NODES; n++) cr_assert_eq(redlock_quorum(n), n / 2 + 1, "n = %zu", n);
}

Test(quorum, any_two_quorums_intersect) {
    /* Two disjoint sets of q nodes would need 2q nodes: 2q > n rules it out,
     * so two clients can never both hold a quorum. */
    for (size_t n = 1; n <= REDLOCK_MAX_NODES; n++) {
        size_t q = redlock_quorum(n);
        cr_assert_gt(2 * q, n, "n = %zu: two quorums of %zu can be disjoint", n, q);
    }
}

Test(quorum, is_reachable_and_smallest) {
    for (size_t n = 1; n <= REDLOCK_MAX_NODES; n++) {
        size_t q = redlock_quorum(n);
        /* All nodes up is always enough. */
        cr_assert_leq(q, n, "n = %zu: quorum %zu needs more nodes than exist", n, q);
        /* One vote fewer would no longer be a strict majority. */
        cr_assert_leq(2 * (q - 1), n, "n = %zu: quorum %zu is larger than needed", n, q);
        /* Failures tolerated: n - q = (n - 1) / 2. */
        cr_assert_eq(n - q, (n - 1) / 2, "n = %zu", n);
    }
}
