/* test_conn_ring.c -- a connection's request ring (src/net/conn.c), no
 * server: it grows under a burst and gives the memory back once the burst
 * is over, or at once when the connection closes; but a steady load that
 * empties it between replies keeps it grown (with hysteresis), instead of
 * shrinking and growing it again, an allocation each time (a connection
 * of lock rounds; a subscriber's gives it back after every burst). Time is the
 * connection's last_rx_us, set here by hand as reading replies would. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "conn.h"

static rl_conn_t C;
static unsigned moves; /* times the ring was reallocated */

static void setup(void) {
    rl_uri_t u;
    char err[128];
    cr_assert_eq(rl_uri_parse("redis://127.0.0.1:1", &u, err, sizeof err), 0, "%s", err);
    cr_assert_eq(rl_conn_init(&C, &u, 0, 4096, -1), 0);
    C.ring_hold = 1; /* a connection of lock rounds (core/nodeset.c), not a subscriber's */
    moves = 0;
}

static void teardown(void) {
    rl_conn_destroy(&C);
}

TestSuite(conn_ring, .init = setup, .fini = teardown);

/* Queues n requests at time now_us, then answers them all in order;
 * returns the most slots the ring had meanwhile and counts its moves. */
static uint32_t burst(uint32_t n, uint64_t now_us) {
    uint32_t most = C.qcap;
    const rl_req_t *q = C.q;
    C.last_rx_us = now_us;
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_not_null(rl_conn_push(&C, RL_REQ_USER, NULL, now_us, now_us + 1000));
        if (C.q != q) moves++, q = C.q;
        if (C.qcap > most) most = C.qcap;
    }
    cr_assert_eq(C.qlen, n);
    for (uint32_t i = 0; i < n; i++) rl_conn_pop(&C);
    if (C.q != q) moves++;
    cr_assert_eq(C.qlen, 0);
    return most;
}

Test(conn_ring, a_lone_burst_grows_it_and_gives_it_back_once_answered) {
    cr_assert_eq(C.qcap, RL_QCAP_START);
    cr_assert_eq(burst(1500, 10000000), 2048);
    cr_assert_eq(C.qcap, RL_QCAP_START, "kept %u slots after the burst", C.qcap);
    /* another, long after: the same */
    cr_assert_eq(burst(1500, 15000000), 2048);
    cr_assert_eq(C.qcap, RL_QCAP_START, "kept %u slots after the second burst", C.qcap);
}

Test(conn_ring, a_steady_load_keeps_the_grown_ring_between_its_bursts) {
    /* 600 in flight, emptied every 10 ms, for 20 s: the ring is given back
     * and regrown only as the hold doubles (1, 2, 4, 8 s), not 2000 times */
    uint64_t t = 10000000;
    for (int i = 0; i < 2000; i++, t += 10000) burst(600, t);
    cr_assert_leq(moves, 5 * 6, "the ring was reallocated %u times in 2000 bursts", moves);
    cr_assert_eq(C.qcap, 1024);
}

Test(conn_ring, a_subscribers_ring_is_given_back_after_every_burst) {
    C.ring_hold = 0;
    uint64_t t = 10000000;
    for (int i = 0; i < 20; i++, t += 10000) {
        cr_assert_eq(burst(1500, t), 2048);
        cr_assert_eq(C.qcap, RL_QCAP_START, "kept %u slots after burst %d", C.qcap, i);
    }
}

Test(conn_ring, once_the_steady_load_is_over_a_later_burst_is_given_back_again) {
    uint64_t t = 10000000;
    for (int i = 0; i < 300; i++, t += 10000) burst(600, t);
    /* a light load for long enough: the ring goes back */
    for (int i = 0; i < 100; i++, t += 100000) burst(10, t);
    cr_assert_eq(C.qcap, RL_QCAP_START, "kept %u slots under a light load", C.qcap);
    /* a lone burst much later is given back at once */
    cr_assert_eq(burst(1500, t + 5000000), 2048);
    cr_assert_eq(C.qcap, RL_QCAP_START, "kept %u slots after a lone burst", C.qcap);
}

Test(conn_ring, a_closed_connection_drops_to_the_starting_ring_at_once) {
    uint64_t t = 10000000;
    for (int i = 0; i < 50; i++, t += 10000) burst(600, t);
    for (int i = 0; i < 300; i++) cr_assert_not_null(rl_conn_push(&C, RL_REQ_USER, NULL, t, t + 1000));
    cr_assert_geq(C.qcap, 1024);
    rl_conn_close(&C);
    cr_assert_eq(C.qlen, 0);
    cr_assert_eq(C.qcap, RL_QCAP_START);
}

Test(conn_ring, never_holds_more_than_its_maximum) {
    rl_conn_destroy(&C);
    rl_uri_t u;
    char err[128];
    cr_assert_eq(rl_uri_parse("redis://127.0.0.1:1", &u, err, sizeof err), 0, "%s", err);
    cr_assert_eq(rl_conn_init(&C, &u, 0, 100, -1), 0);
    for (int i = 0; i < 100; i++) cr_assert_not_null(rl_conn_push(&C, RL_REQ_USER, NULL, 1, 2));
    cr_assert_null(rl_conn_push(&C, RL_REQ_USER, NULL, 1, 2), "a 101st request was queued");
    cr_assert_eq(C.qcap, 100);
}
