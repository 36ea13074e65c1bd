/* test_autoextend.c -- the auto-extension policy (src/core/autoextend.c),
 * no server: a lock's fields are set by hand and time is passed in, so
 * when the next extension is due after a success or a failed round is
 * checked to the microsecond. */
#include <criterion/criterion.h>

#include <string.h>

#include "ops.h"
#include "redlock.h"

#define MS 1000u

static redlock_lock_t L;

/* A watched lock of ttl_ms whose validity ends at deadline_us, extended
 * every interval_ms. */
static void watched(uint32_t ttl_ms, uint32_t interval_ms, uint64_t deadline_us) {
    memset(&L, 0, sizeof L);
    atomic_store(&L.ttl_ms, ttl_ms);
    atomic_store(&L.deadline_us, deadline_us);
    L.interval_ms = interval_ms;
}

Test(autoextend, a_success_waits_one_interval) {
    watched(300, 100, 1000 * MS);
    cr_assert_eq(rl_autoextend_after(&L, REDLOCK_OK, 500 * MS), 0);
    cr_assert_eq(L.next_us, 600 * MS);
    cr_assert_eq(atomic_load(&L.extensions), 1u);
}

Test(autoextend, a_failed_round_retries_in_a_quarter_interval_or_half_the_validity_left) {
    watched(300, 100, 1000 * MS);
    cr_assert_eq(rl_autoextend_after(&L, REDLOCK_ERR_NO_QUORUM, 500 * MS), 0);
    cr_assert_eq(L.next_us, 525 * MS, "a quarter interval: %llu", (unsigned long long)L.next_us);
    cr_assert_eq(rl_autoextend_after(&L, REDLOCK_ERR_NO_QUORUM, 990 * MS), 0);
    cr_assert_eq(L.next_us, 995 * MS, "half the 10 ms left: %llu", (unsigned long long)L.next_us);
}

/* Rounds that fail at once (every node down) must not retry at the same
 * instant: a retry comes 1 ms later at the soonest, and once the
 * validity is gone the lock is lost instead of retried. */
Test(autoextend, a_failed_round_never_retries_sooner_than_a_millisecond) {
    watched(300, 100, 1000 * MS);
    uint64_t now = 1000 * MS - 1; /* 1 us of validity left */
    cr_assert_eq(rl_autoextend_after(&L, REDLOCK_ERR_NO_QUORUM, now), 0);
    cr_assert_eq(L.next_us, now + MS, "retry at %llu, now %llu", (unsigned long long)L.next_us,
                 (unsigned long long)now);
    cr_assert_eq(rl_autoextend_due(&L, L.next_us), REDLOCK_ERR_EXPIRED);
    cr_assert_eq(rl_autoextend_after(&L, REDLOCK_ERR_NO_QUORUM, 1000 * MS), REDLOCK_ERR_NO_QUORUM,
                 "no validity left: the lock is lost");
}

Test(autoextend, not_held_is_lost_at_once) {
    watched(300, 100, 1000 * MS);
    cr_assert_eq(rl_autoextend_after(&L, REDLOCK_ERR_NOT_HELD, 500 * MS), REDLOCK_ERR_NOT_HELD);
}
