/* test_record.c -- when a handle reads a node's membership record again
 * and what form its writes take there (src/core/record.c), no server: the
 * records' replies are built by hand and time is passed in, so the
 * refresh interval and the announced steps (rl_notices_t) are checked to
 * the microsecond. */
#include <criterion/criterion.h>

#include <hiredis/hiredis.h>
#include <string.h>

#include "membership.h"
#include "nodetypes.h"
#include "record.h"
#include "redlock.h"

#define MS 1000u
#define HALF (RL_RECORD_REFRESH_MS * MS / 2) /* a read is due this long after the last */

static rl_node_t N;
static rl_nodes_config_t cfg;
static rl_notices_t notices;

static void setup(void) {
    rl_uri_t u;
    char err[128];
    memset(&N, 0, sizeof N);
    memset(&notices, 0, sizeof notices);
    cfg = (rl_nodes_config_t){.notices = &notices};
    strcpy(cfg.fp, "0123456789abcdef");
    cr_assert_eq(rl_uri_parse("redis://127.0.0.1:1", &u, err, sizeof err), 0, "%s", err);
    cr_assert_eq(rl_conn_init(&N.conn, &u, 0, 64, -1), 0);
}

static void teardown(void) {
    rl_conn_destroy(&N.conn);
}

TestSuite(record, .init = setup, .fini = teardown);

/* Answers the oldest read queued on the node with the record of phase p
 * (RL_PHASE_NONE: an empty hash, no record), as sent at sent_us. */
static void answer(rl_phase_t p, uint64_t sent_us) {
    rl_record_t rec;
    char buf[64];
    const char *argv[RL_RECORD_FIELDS * 2];
    size_t lens[RL_RECORD_FIELDS * 2], n = 0;
    if (p != RL_PHASE_NONE) {
        rl_record_make(&rec, p, cfg.fp, "fedcba9876543210", "tcp:a:1/0", "tcp:b:1/0", 1);
        n = rl_record_fields(&rec, buf, argv, lens);
    }
    redisReply fields[RL_RECORD_FIELDS * 2], *elem[RL_RECORD_FIELDS * 2];
    for (size_t i = 0; i < n; i++) {
        fields[i] = (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)argv[i], .len = lens[i]};
        elem[i] = &fields[i];
    }
    redisReply r = {.type = REDIS_REPLY_ARRAY, .elements = n, .element = elem};
    cr_assert_gt(N.conn.qlen, 0, "no read was queued to answer");
    rl_conn_pop(&N.conn);
    rl_record_reply(&cfg, &N.conn, &r, sent_us, sent_us + 100);
}

/* The form of a write at now, and whether a read was queued ahead of it. */
static int form(uint64_t now, int *read) {
    char why[160];
    uint32_t before = N.conn.qlen;
    int f = rl_record_form(&cfg, &N.conn, now, why, sizeof why);
    *read = N.conn.qlen > before;
    return f;
}

Test(record, a_node_read_without_a_record_is_written_bare_and_read_again_only_when_due) {
    int read;
    cr_assert_eq(rl_record_open(&cfg, &N.conn, 0), 0);
    cr_assert_eq(N.conn.qlen, 1, "the record is read when the node opens");
    answer(RL_PHASE_NONE, 0);
    cr_assert_eq(form(HALF - 1, &read), RL_FORM_BARE);
    cr_assert_not(read, "read again before the refresh interval's half");
    cr_assert_eq(form(HALF, &read), RL_FORM_BARE, "within the bare window of the last read that found none");
    cr_assert(read, "not read again once due");
}

Test(record, an_announced_step_ends_the_bare_writes_and_has_the_record_read_at_the_next_write) {
    int read;
    cr_assert_eq(rl_record_open(&cfg, &N.conn, 0), 0);
    answer(RL_PHASE_NONE, 0);
    cr_assert_eq(form(10 * MS, &read), RL_FORM_BARE);
    cr_assert_not(read);
    atomic_fetch_add(&notices.heard, 1u); /* a step announced on some node */
    cr_assert_eq(form(11 * MS, &read), RL_FORM_GUARDED, "written bare after a step was announced");
    cr_assert(read, "the record was not read again after a step was announced");
    answer(RL_PHASE_NONE, 11 * MS); /* (the step was on another node) */
    cr_assert_eq(form(12 * MS, &read), RL_FORM_BARE, "the new read found none: bare again");
    cr_assert_not(read, "one announcement, one read");
}

Test(record, a_record_met_asks_the_driver_once_to_listen_for_the_steps) {
    cr_assert_eq(rl_record_open(&cfg, &N.conn, 0), 0);
    answer(RL_PHASE_NONE, 0);
    cr_assert_eq(atomic_load(&notices.found), RL_WATCH_NONE, "no record: nothing to listen for");
    int read;
    form(HALF, &read);
    answer(RL_PHASE_BEGUN, HALF);
    cr_assert_eq(atomic_load(&notices.found), RL_WATCH_WANTED, "a record was met: the driver is to listen");
    cr_assert_eq(form(HALF + 1, &read), RL_FORM_GUARDED);
    atomic_store(&notices.found, RL_WATCH_ON); /* the driver listens */
    form(2 * HALF, &read);
    cr_assert(read);
    answer(RL_PHASE_JOINT, 2 * HALF);
    cr_assert_eq(atomic_load(&notices.found), RL_WATCH_ON, "asked again while listening");
}

Test(record, a_handle_without_notices_reads_on_its_schedule) {
    int read;
    cfg.notices = NULL;
    cr_assert_eq(rl_record_open(&cfg, &N.conn, 0), 0);
    answer(RL_PHASE_BEGUN, 0);
    cr_assert_eq(form(1 * MS, &read), RL_FORM_GUARDED);
    cr_assert_not(read);
    cr_assert_eq(form(HALF, &read), RL_FORM_GUARDED);
    cr_assert(read);
}
