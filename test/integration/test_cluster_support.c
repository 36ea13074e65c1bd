/* test_cluster_support.c -- the Redis Cluster helpers of support/cluster.h
 * against the clusters3 fixture (deploy/cluster.sh start --cluster-shards 3
 * --replicas 1 -n 3: three Redis Clusters of 3 primaries + 3 replicas). The
 * library is not involved: these tests check that what the library's
 * cluster tests will lean on (slots, routing, faults, failover, slot moves,
 * heal) does what cluster.h says. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "rttime.h"

static tc_clusters_t CS;

static void setup(void) {
    cr_assert_eq(tc_clusters_load(&CS), 0, "no Redis Clusters (REDLOCK_CLUSTER_DIR)");
    cr_assert_eq(CS.base.n, 3, "want 3 clusters, got %d", CS.base.n);
    cr_assert_eq(tc_clusters_heal(&CS), 0, "heal failed");
}

TestSuite(cluster_support, .init = setup, .timeout = 300);

/* Milliseconds on CLOCK_MONOTONIC. */
static long long now_ms(void) {
    return (long long)(rt_now_us() / 1000);
}

/* The member that was created as primary m's replica (the first one),
 * whatever its role now. */
static int created_replica_of(int c, int m) {
    for (int r = 0; r < CS.c[c].n; r++)
        if (!CS.c[c].m[r].created_primary && CS.c[c].m[r].created_of == m) return r;
    cr_assert_fail("cluster %d: primary %d has no replica", c, m);
    return -1;
}

/* The first created primary of cluster c. */
static int first_primary(int c) {
    for (int m = 0; m < CS.c[c].n; m++)
        if (CS.c[c].m[m].created_primary) return m;
    cr_assert_fail("cluster %d has no primary", c);
    return -1;
}

/* Asserts r is a redirect of the given kind (1 MOVED, 2 ASK) for slot to
 * member `to` of cluster c; frees r. */
static void assert_redirect(redisReply *r, int kind, int c, int slot, int to, const char *what) {
    int s = -1, port = -1;
    cr_assert_not_null(r, "%s: no answer", what);
    int got = tc_reply_redirect(r, &s, &port);
    cr_assert_eq(got, kind, "%s: want %s, got %s", what, kind == 1 ? "MOVED" : "ASK",
                 r->type == REDIS_REPLY_ERROR ? r->str : "a non-error reply");
    cr_assert_eq(s, slot, "%s: redirect names slot %d, not %d", what, s, slot);
    cr_assert_eq(port, CS.c[c].m[to].port, "%s: redirect to port %d, not member %d's %d", what, port, to,
                 CS.c[c].m[to].port);
    freeReplyObject(r);
}

/* Asserts member m of cluster c answers GET key with val; frees the reply. */
static void assert_direct_value(int c, int m, const char *key, const char *val) {
    redisReply *r = tc_member_command(&CS, c, m, "GET %s", key);
    cr_assert_not_null(r, "member %d.%d: no answer", c, m);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "member %d.%d GET %s: %s", c, m, key,
                 r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
    cr_assert_str_eq(r->str, val);
    freeReplyObject(r);
}

/* Waits up to 3 s until every member of cluster c maps slot to member to. */
static void assert_everyone_maps(int c, int slot, int to) {
    static int owner[TC_SLOTS];
    for (long long end = now_ms() + 3000;; rt_sleep_ms(50)) {
        int agree = 0;
        for (int m = 0; m < CS.c[c].n; m++) agree += tc_rc_slot_map(&CS, c, m, owner) == TC_SLOTS && owner[slot] == to;
        if (agree == CS.c[c].n) return;
        cr_assert_lt(now_ms(), end, "cluster %d: %d of %d members map slot %d to member %d", c, agree, CS.c[c].n, slot,
                     to);
    }
}

/* ------------------------------------------------------------------ slots */

Test(cluster_support, crc16_and_hash_tags_by_hand) {
    /* The CRC16 check value of the XMODEM variant, and slots worked out
     * from the Redis Cluster specification's rules. */
    cr_assert_eq(tc_crc16("123456789", 9), 0x31C3u);
    cr_assert_eq(tc_slot("123456789"), 0x31C3 & 16383);
    cr_assert_eq(tc_slot("{user1000}.following"), tc_slot("user1000"));
    cr_assert_eq(tc_slot("{user1000}.followers"), tc_slot("{user1000}.following"));
    cr_assert_eq(tc_slot("foo{}{bar}"), (int)(tc_crc16("foo{}{bar}", 10) & 16383)); /* empty tag: whole key */
    cr_assert_eq(tc_slot("foo{{bar}}zap"), tc_slot("{bar"));                        /* tag is "{bar" */
    cr_assert_eq(tc_slot("foo{bar}{zap}"), tc_slot("bar"));                         /* first tag only */
    cr_assert_eq(tc_slot("{a"), (int)(tc_crc16("{a", 2) & 16383));                  /* no closing brace */
    cr_assert_eq(tc_key_slot("a{\0}b", 5), tc_key_slot("\0", 1));                   /* binary tag */
}

/* Appends one key to the list (copied); returns the new count. */
static int add_key(char keys[][48], size_t lens[], int n, const char *k, size_t len) {
    memcpy(keys[n], k, len);
    lens[n] = len;
    return n + 1;
}

Test(cluster_support, slot_matches_cluster_keyslot) {
    enum { MAXK = 4200 };
    static char keys[MAXK][48];
    static size_t lens[MAXK];
    static const char *fixed[] = {
        "",
        "{",
        "}",
        "{}",
        "{}a",
        "a{}",
        "{a}",
        "{a}{b}",
        "{{a}}",
        "}{a}",
        "{a",
        "a}",
        "a{b}c{d}e",
        "foo{bar}{zap}",
        "foo{}{bar}",
        "foo{{bar}}zap",
        "{user1000}.following",
        "{user1000}.followers",
        "resource",
        "{resource}",
        "{resource}:fence",
        "{resource}:w",
        "lock:{orders:42}:permit:3",
        "\xff\xfe{\x80}",
    };
    int n = 0;
    char buf[48];

    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) n = add_key(keys, lens, n, fixed[i], strlen(fixed[i]));
    n = add_key(keys, lens, n, "a{\0}b", 5);
    n = add_key(keys, lens, n, "\0\0\0", 3);
    for (int i = 0; i < 1300; i++) {
        n = add_key(keys, lens, n, buf, (size_t)snprintf(buf, sizeof buf, "key:%d", i));
        n = add_key(keys, lens, n, buf, (size_t)snprintf(buf, sizeof buf, "{user%d}.following", i));
        n = add_key(keys, lens, n, buf, (size_t)snprintf(buf, sizeof buf, "x{%d}{y}", i * 7919));
    }
    cr_assert_leq(n, MAXK);

    /* Pipelined CLUSTER KEYSLOT on one member of each cluster. */
    for (int c = 0; c < CS.base.n; c++) {
        redisContext *ctx = tc_member_connect(&CS, c, c % CS.c[c].n);
        cr_assert_not_null(ctx);
        for (int i = 0; i < n; i++)
            cr_assert_eq(redisAppendCommand(ctx, "CLUSTER KEYSLOT %b", keys[i], lens[i]), REDIS_OK);
        for (int i = 0; i < n; i++) {
            void *v = NULL;
            cr_assert_eq(redisGetReply(ctx, &v), REDIS_OK);
            redisReply *r = v;
            cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
            cr_assert_eq(r->integer, tc_key_slot(keys[i], lens[i]), "key %d (%.*s): server %lld, ours %d", i,
                         (int)lens[i], keys[i], r->integer, tc_key_slot(keys[i], lens[i]));
            freeReplyObject(r);
        }
        redisFree(ctx);
    }
}

Test(cluster_support, every_cluster_serves_all_slots_as_created) {
    static int owner[TC_SLOTS], first[TC_SLOTS];
    tc_cluster_t base;

    /* tc_cluster_load reads the redis+cluster:// URIs too. */
    cr_assert_eq(tc_cluster_load(&base), 0);
    cr_assert_eq(base.n, 3);
    for (int c = 0; c < 3; c++) {
        int p0 = first_primary(c), primaries = 0;
        char want[64];
        cr_assert(strncmp(base.uri[c], "redis+cluster://127.0.0.1:", 26) == 0, "%s", base.uri[c]);
        cr_assert_eq(base.port[c], CS.c[c].m[p0].port);
        for (int m = 0; m < CS.c[c].n; m++) {
            if (!CS.c[c].m[m].created_primary || m == p0) continue;
            snprintf(want, sizeof want, "seed=127.0.0.1:%d", CS.c[c].m[m].port);
            cr_assert(strstr(base.uri[c], want) != NULL, "%s lacks %s", base.uri[c], want);
        }
        for (int m = 0; m < CS.c[c].n; m++) {
            primaries += CS.c[c].m[m].created_primary;
            cr_assert_eq(CS.c[c].m[m].primary, CS.c[c].m[m].created_primary, "member %d.%d role", c, m);
            cr_assert_eq((int)strlen(CS.c[c].m[m].id), 40, "member %d.%d id", c, m);
        }
        cr_assert_eq(primaries, 3);
        cr_assert_eq(CS.c[c].n, 6);
    }

    /* Every member of every cluster sees all 16384 slots served by the
     * cluster's three primaries, and they all see the same map. */
    for (int c = 0; c < 3; c++) {
        for (int m = 0; m < CS.c[c].n; m++) {
            int *map = m == 0 ? first : owner, served[TC_MAX_MEMBERS] = {0};
            cr_assert_eq(tc_rc_slot_map(&CS, c, m, map), TC_SLOTS, "member %d.%d", c, m);
            for (int s = 0; s < TC_SLOTS; s++) {
                cr_assert_geq(map[s], 0, "cluster %d slot %d unserved in %d's view", c, s, m);
                cr_assert(CS.c[c].m[map[s]].created_primary, "slot %d served by replica %d", s, map[s]);
                served[map[s]]++;
                if (m > 0) cr_assert_eq(map[s], first[s], "cluster %d: members 0 and %d disagree on %d", c, m, s);
            }
            for (int p = 0; p < CS.c[c].n; p++)
                cr_assert(!CS.c[c].m[p].created_primary || served[p] > 5000, "primary %d.%d serves %d", c, p,
                          served[p]);
        }
        for (int s = 0; s < TC_SLOTS; s += 997) cr_assert_eq(tc_rc_slot_owner(&CS, c, s), first[s]);
    }
}

/* ---------------------------------------------------------------- routing */

Test(cluster_support, set_get_go_to_the_right_shard) {
    static int owner[TC_SLOTS];
    char key[32], val[32];

    for (int c = 0; c < 3; c++) {
        int used[TC_MAX_MEMBERS] = {0};
        cr_assert_eq(tc_rc_slot_map(&CS, c, -1, owner), TC_SLOTS);
        for (int i = 0; i < 200; i++) {
            snprintf(key, sizeof key, "route:%d", i);
            snprintf(val, sizeof val, "v%d-%d", c, i);
            int slot = tc_slot(key), o = owner[slot], served_by = -1;
            cr_assert_eq(tc_rc_set(&CS, c, key, val, 60000), 0, "cluster %d SET %s", c, key);
            used[o]++;

            /* The routed GET is answered by the slot's owner. */
            redisReply *r = tc_rc_command(&CS, c, key, &served_by, "GET %s", key);
            cr_assert_not_null(r);
            cr_assert_eq(r->type, REDIS_REPLY_STRING);
            cr_assert_str_eq(r->str, val);
            freeReplyObject(r);
            cr_assert_eq(served_by, o, "%s: served by %d, owner %d", key, served_by, o);

            /* The owner has it; another primary sends MOVED to the owner. */
            assert_direct_value(c, o, key, val);
            for (int m = 0; m < CS.c[c].n; m++) {
                if (m == o || !CS.c[c].m[m].created_primary) continue;
                assert_redirect(tc_member_command(&CS, c, m, "GET %s", key), 1, c, slot, o, key);
                break;
            }
            long long pttl = tc_rc_pttl(&CS, c, key);
            cr_assert(pttl > 0 && pttl <= 60000, "PTTL %s = %lld", key, pttl);
        }
        for (int m = 0; m < CS.c[c].n; m++)
            cr_assert(!CS.c[c].m[m].created_primary || used[m] > 20, "primary %d.%d got %d keys", c, m, used[m]);
    }
    /* The same key on each of the three clusters, each with its value. */
    for (int c = 0; c < 3; c++) cr_assert_eq(tc_rc_set(&CS, c, "same", "x", 0), 0);
    cr_assert_eq(tc_rc_count_value(&CS, "same", "x"), 3);
    cr_assert_eq(tc_rc_pttl(&CS, 1, "same"), -1);
    cr_assert_eq(tc_rc_del(&CS, 1, "same"), 1);
    cr_assert_eq(tc_rc_del(&CS, 1, "same"), 0);
    cr_assert_eq(tc_rc_pttl(&CS, 1, "same"), -2);
    cr_assert_null(tc_rc_get(&CS, 1, "same"));
    cr_assert_eq(tc_rc_count_value(&CS, "same", "x"), 2);
    /* Keys of one hash tag share a slot, so one shard holds them all. */
    cr_assert_eq(tc_rc_set(&CS, 0, "{route}:a", "1", 0), 0);
    cr_assert_eq(tc_rc_set(&CS, 0, "{route}:b", "2", 0), 0);
    redisReply *r = tc_rc_command(&CS, 0, "{route}", NULL, "MGET {route}:a {route}:b");
    cr_assert(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "MGET across a tag");
    cr_assert_str_eq(r->element[0]->str, "1");
    cr_assert_str_eq(r->element[1]->str, "2");
    freeReplyObject(r);
}

/* ------------------------------------------------------------- resharding */

Test(cluster_support, slot_move_gives_ask_then_moved) {
    const int c = 1, nkeys = 10, early = 3;
    const int slot = tc_slot("{mig}");
    char key[32], val[32];
    int from = tc_rc_slot_owner(&CS, c, slot), to = -1, asks = 0, served_by;

    cr_assert_geq(from, 0);
    for (int m = 0; m < CS.c[c].n && to < 0; m++)
        if (m != from && CS.c[c].m[m].primary == 1) to = m;
    cr_assert_geq(to, 0);
    for (int i = 0; i < nkeys; i++) {
        snprintf(key, sizeof key, "{mig}:%d", i);
        snprintf(val, sizeof val, "m%d", i);
        cr_assert_eq(tc_rc_set(&CS, c, key, val, 0), 0);
    }

    cr_assert_eq(tc_rc_slot_begin_move(&CS, c, slot, to), from);
    cr_assert_eq(tc_rc_slot_move_keys(&CS, c, slot, from, to, early), early);
    /* During the move: the owner answers for the keys it still has and
     * sends ASK for the moved ones; the target sends MOVED back to the
     * owner unless asked with ASKING; routed reads find every key. */
    for (int i = 0; i < nkeys; i++) {
        snprintf(key, sizeof key, "{mig}:%d", i);
        snprintf(val, sizeof val, "m%d", i);
        redisReply *r = tc_member_command(&CS, c, from, "GET %s", key);
        cr_assert_not_null(r);
        if (tc_reply_redirect(r, NULL, NULL) == 2) {
            asks++;
            assert_redirect(r, 2, c, slot, to, key);
        } else {
            cr_assert_eq(r->type, REDIS_REPLY_STRING, "%s on the owner: %s", key,
                         r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
            cr_assert_str_eq(r->str, val);
            freeReplyObject(r);
        }
        assert_redirect(tc_member_command(&CS, c, to, "GET %s", key), 1, c, slot, from, "target without ASKING");
        char *got = tc_rc_get(&CS, c, key);
        cr_assert(got != NULL && strcmp(got, val) == 0, "routed GET %s during the move: %s", key, got ? got : "nil");
        free(got);
        r = tc_rc_command(&CS, c, key, &served_by, "EXISTS %s", key);
        cr_assert(r != NULL && r->integer == 1);
        freeReplyObject(r);
    }
    cr_assert_eq(asks, early, "%d keys answered with ASK, %d moved", asks, early);
    /* A new key of a migrating slot is not on the owner, which sends ASK:
     * it is written on the target. */
    redisReply *w = tc_rc_command(&CS, c, "{mig}:new", &served_by, "SET {mig}:new n");
    cr_assert(w != NULL && w->type == REDIS_REPLY_STATUS, "SET during the move");
    freeReplyObject(w);
    cr_assert_eq(served_by, to);

    cr_assert_eq(tc_rc_slot_move_keys(&CS, c, slot, from, to, 0), nkeys - early);
    cr_assert_eq(tc_rc_slot_move_keys(&CS, c, slot, from, to, 0), 0);
    cr_assert_eq(tc_rc_slot_end_move(&CS, c, slot, from, to), 0);

    /* After: the old owner sends MOVED to the new one, which has them all. */
    for (int i = 0; i < nkeys; i++) {
        snprintf(key, sizeof key, "{mig}:%d", i);
        snprintf(val, sizeof val, "m%d", i);
        assert_redirect(tc_member_command(&CS, c, from, "GET %s", key), 1, c, slot, to, "old owner after the move");
        assert_direct_value(c, to, key, val);
        char *got = tc_rc_get(&CS, c, key);
        cr_assert(got != NULL && strcmp(got, val) == 0);
        free(got);
    }
    assert_direct_value(c, to, "{mig}:new", "n");
    assert_everyone_maps(c, slot, to);
    cr_assert_eq(tc_clusters_settle(&CS, c), 0);
    /* Other slots stayed where they were. */
    cr_assert_eq(tc_rc_slot_owner(&CS, c, (slot + 1) % TC_SLOTS), from);
}

/* -------------------------------------------------------- faults, failover */

/* A key of cluster c whose slot member m serves; written to buf. */
static const char *key_served_by(int c, int m, char *buf, size_t len) {
    static int owner[TC_SLOTS];
    cr_assert_eq(tc_rc_slot_map(&CS, c, -1, owner), TC_SLOTS);
    for (int i = 0; i < 100000; i++) {
        snprintf(buf, len, "fo:%d", i);
        if (owner[tc_slot(buf)] == m) return buf;
    }
    cr_assert_fail("no key for member %d.%d", c, m);
    return NULL;
}

/* Asserts every member of cluster c reports cluster_state:ok. */
static void assert_cluster_ok(int c) {
    for (int m = 0; m < CS.c[c].n; m++) {
        redisReply *r = tc_member_command(&CS, c, m, "CLUSTER INFO");
        cr_assert(r != NULL && r->type == REDIS_REPLY_STRING, "member %d.%d", c, m);
        cr_assert(strstr(r->str, "cluster_state:ok") != NULL, "member %d.%d: %.40s", c, m, r->str);
        freeReplyObject(r);
    }
}

Test(cluster_support, failover_makes_the_replica_primary) {
    const int c = 2;
    int p = first_primary(c), r = created_replica_of(c, p), served_by = -1;
    char key[32];

    key_served_by(c, p, key, sizeof key);
    cr_assert_eq(tc_rc_set(&CS, c, key, "before", 0), 0);
    redisReply *w = tc_member_command(&CS, c, p, "WAIT 1 2000");
    cr_assert(w != NULL && w->type == REDIS_REPLY_INTEGER && w->integer == 1, "the replica did not ack");
    freeReplyObject(w);

    long long t0 = now_ms();
    cr_assert_eq(tc_member_failover(&CS, c, r, NULL), 0);
    cr_log_info("takeover of %d.%d settled in %lld ms", c, r, now_ms() - t0);
    cr_assert_eq(CS.c[c].m[r].primary, 1);
    cr_assert_eq(CS.c[c].m[p].primary, 0);
    assert_cluster_ok(c);
    redisReply *g = tc_rc_command(&CS, c, key, &served_by, "GET %s", key);
    cr_assert(g != NULL && g->type == REDIS_REPLY_STRING && strcmp(g->str, "before") == 0);
    freeReplyObject(g);
    cr_assert_eq(served_by, r);
    assert_redirect(tc_member_command(&CS, c, p, "GET %s", key), 1, c, tc_slot(key), r, "old primary");
    /* Failing over to a member that is already primary is refused. */
    cr_assert_neq(tc_member_failover(&CS, c, r, NULL), 0);

    /* Heal fails the creation's primary back. */
    cr_assert_eq(tc_clusters_heal(&CS), 0);
    cr_assert_eq(CS.c[c].m[p].primary, 1);
    cr_assert_eq(CS.c[c].m[r].primary, 0);
    cr_assert_null(tc_rc_get(&CS, c, key), "heal empties the clusters");
}

Test(cluster_support, killed_primary_is_replaced_and_rejoins_as_replica) {
    const int c = 0;
    int p = first_primary(c), r = created_replica_of(c, p), served_by = -1;
    char key[32];

    key_served_by(c, p, key, sizeof key);
    cr_assert_eq(tc_rc_set(&CS, c, key, "kept", 0), 0);
    redisReply *w = tc_member_command(&CS, c, p, "WAIT 1 2000");
    cr_assert(w != NULL && w->integer == 1);
    freeReplyObject(w);

    long long t0 = now_ms();
    cr_assert_eq(tc_member_kill(&CS, c, p), 0);
    cr_assert_eq(tc_clusters_settle(&CS, c), 0);
    long long took = now_ms() - t0;
    cr_log_info("primary %d.%d killed: replaced by %d.%d in %lld ms", c, p, c, r, took);
    cr_assert_lt(took, 10000, "failover took %lld ms (node timeout 1000 ms)", took);
    tc_clusters_refresh(&CS, c);
    cr_assert_eq(CS.c[c].m[r].primary, 1);
    cr_assert_eq(CS.c[c].m[p].primary, -1);
    char *got = tc_rc_get(&CS, c, key);
    cr_assert(got != NULL && strcmp(got, "kept") == 0);
    free(got);

    cr_assert_eq(tc_member_restart(&CS, c, p, 0), 0);
    tc_clusters_refresh(&CS, c);
    cr_assert_eq(CS.c[c].m[p].primary, 0, "the old primary rejoins as a replica");
    assert_cluster_ok(c);
    redisReply *g = tc_rc_command(&CS, c, key, &served_by, "GET %s", key);
    cr_assert(g != NULL && g->type == REDIS_REPLY_STRING);
    freeReplyObject(g);
    cr_assert_eq(served_by, r);
}

Test(cluster_support, paused_member_is_silent_until_resumed) {
    const int c = 1, m = created_replica_of(c, first_primary(c));

    cr_assert_eq(tc_member_pause(&CS, c, m), 0);
    long long t0 = now_ms();
    cr_assert_null(tc_member_command(&CS, c, m, "PING"));
    cr_assert_geq(now_ms() - t0, 900, "a paused member times out after 1 s");
    cr_assert_eq(tc_member_resume(&CS, c, m), 0);
    redisReply *r = tc_member_command(&CS, c, m, "PING");
    cr_assert(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(tc_clusters_settle(&CS, c), 0);
    /* Out-of-range members are refused without running anything. */
    cr_assert_eq(tc_member_pause(&CS, c, TC_MAX_MEMBERS), -1);
    cr_assert_null(tc_member_connect(&CS, 3, 0));
}

Test(cluster_support, heal_undoes_moves_failovers_and_kills) {
    static int owner[TC_SLOTS], created[TC_SLOTS];
    const int c = 0;
    int p = first_primary(c), r = created_replica_of(c, p);
    int slot = tc_slot("{heal}"), from = tc_rc_slot_owner(&CS, c, slot), to = -1;

    cr_assert_eq(tc_rc_slot_map(&CS, c, -1, created), TC_SLOTS);
    for (int m = 0; m < CS.c[c].n && to < 0; m++)
        if (m != from && CS.c[c].m[m].created_primary) to = m;
    cr_assert_eq(tc_rc_set(&CS, c, "{heal}:k", "v", 0), 0);
    /* A finished move, a move left open, a failover and a killed replica. */
    cr_assert_eq(tc_rc_slot_begin_move(&CS, c, slot, to), from);
    cr_assert_eq(tc_rc_slot_move_keys(&CS, c, slot, from, to, 0), 1);
    cr_assert_eq(tc_rc_slot_end_move(&CS, c, slot, from, to), 0);
    int open_slot = (slot + 1) % TC_SLOTS, open_from = tc_rc_slot_owner(&CS, c, open_slot);
    int open_to = -1;
    for (int m = 0; m < CS.c[c].n && open_to < 0; m++)
        if (m != open_from && CS.c[c].m[m].primary == 1) open_to = m;
    cr_assert_eq(tc_rc_slot_begin_move(&CS, c, open_slot, open_to), open_from);
    cr_assert_eq(tc_member_failover(&CS, c, r, NULL), 0);
    int q = -1;
    for (int m = 0; m < CS.c[c].n && q < 0; m++)
        if (m != p && CS.c[c].m[m].created_primary) q = m;
    cr_assert_eq(tc_member_kill(&CS, c, created_replica_of(c, q)), 0);

    cr_assert_eq(tc_clusters_heal(&CS), 0);
    cr_assert_eq(tc_rc_slot_map(&CS, c, -1, owner), TC_SLOTS);
    for (int s = 0; s < TC_SLOTS; s++) cr_assert_eq(owner[s], created[s], "slot %d", s);
    for (int m = 0; m < CS.c[c].n; m++)
        cr_assert_eq(CS.c[c].m[m].primary, CS.c[c].m[m].created_primary, "member %d.%d", c, m);
    for (int m = 0; m < CS.c[c].n; m++) {
        redisReply *n = tc_member_command(&CS, c, m, "CLUSTER NODES");
        cr_assert(n != NULL && n->type == REDIS_REPLY_STRING);
        cr_assert_null(strstr(n->str, "->-"), "member %d.%d still migrating: %s", c, m, n->str);
        cr_assert_null(strstr(n->str, "-<-"), "member %d.%d still importing", c, m);
        freeReplyObject(n);
        redisReply *d = tc_member_command(&CS, c, m, "DBSIZE");
        cr_assert(d != NULL && d->type == REDIS_REPLY_INTEGER && d->integer == 0, "member %d.%d not empty", c, m);
        freeReplyObject(d);
    }
    assert_cluster_ok(c);
}
