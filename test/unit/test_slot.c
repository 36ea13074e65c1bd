/* test_slot.c -- Redis Cluster key slots and key names (src/net/slot.c),
 * and the cluster redirects and slot maps of src/core/cluster.c. No
 * server: the expected slots are what `CLUSTER KEYSLOT` of redis-server
 * 7.0 answers for each key. */
#include <criterion/criterion.h>

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "slot.h"

typedef struct {
    const char *key;
    unsigned slot;
} slot_case_t;

static const slot_case_t slots[] = {
    {"foo", 12182},
    {"bar", 5061},
    {"123456789", 12739},
    {"{user1000}.following", 3443},
    {"{user1000}.followers", 3443},
    {"foo{}{bar}", 8363},
    {"foo{{bar}}zap", 4015},
    {"foo{bar}{zap}", 5061},
    {"{}", 15257},
    {"{", 4092},
    {"}", 12090},
    {"a{b", 13340},
    {"{res}", 3139},
    {"{res}:permit:3", 3139},
    {"x", 16287},
    {"redlock:released:{orders}", 105},
};

Test(slot, matches_cluster_keyslot) {
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++)
        cr_expect_eq(rl_key_slot(slots[i].key, strlen(slots[i].key)), slots[i].slot, "slot of '%s': %u, want %u",
                     slots[i].key, rl_key_slot(slots[i].key, strlen(slots[i].key)), slots[i].slot);
}

Test(slot, hash_tags) {
    cr_expect(rl_key_has_tag("{a}b", 4));
    cr_expect(rl_key_has_tag("x{a}", 4));
    cr_expect(!rl_key_has_tag("{}a", 3), "an empty tag is no tag");
    cr_expect(!rl_key_has_tag("a{b", 3));
    cr_expect(!rl_key_has_tag("plain", 5));
}

/* rl_cluster_key of key, as a string. */
static const char *ckey(const char *key) {
    static char out[256];
    size_t n = rl_cluster_key(out, sizeof out, key, strlen(key));
    cr_assert(n > 0, "'%s' did not fit", key);
    cr_assert_eq(n, strlen(out));
    return out;
}

Test(slot, cluster_key_names) {
    cr_expect_str_eq(ckey("res"), "{res}");
    cr_expect_str_eq(ckey("res:permit:3"), "{res}:permit:3");
    cr_expect_str_eq(ckey("res:permit:63:redlock:fence"), "{res}:permit:63:redlock:fence");
    cr_expect_str_eq(ckey("res:redlock:fence"), "{res}:redlock:fence");
    cr_expect_str_eq(ckey("res:redlock:fence-seen"), "{res}:redlock:fence-seen");
    cr_expect_str_eq(ckey("res:redlock:writer"), "{res}:redlock:writer");
    cr_expect_str_eq(ckey("{orders}:42"), "{orders}:42", "a tagged key is kept");
    cr_expect_str_eq(ckey("{orders}:42:permit:1"), "{orders}:42:permit:1");
    cr_expect_str_eq(ckey("a:permit:"), "{a:permit:}", "no slot number: not a permit suffix");
    cr_expect_str_eq(ckey("{}x"), "{{}x}", "an empty tag is no tag: wrapped");
    char small[4];
    cr_expect_eq(rl_cluster_key(small, sizeof small, "abc", 3), 0, "does not fit: 0");
}

Test(slot, a_resource_and_its_keys_share_a_slot) {
    static const char *const res[] = {"res", "a}b", "x{y", "{}z", "orders:17", "q{t}", "a:permit:9"};
    static const char *const suffix[] = {"",
                                         ":permit:0",
                                         ":permit:63",
                                         ":redlock:fence",
                                         ":redlock:writer",
                                         ":permit:5:redlock:fence",
                                         ":redlock:fence-seen"};
    for (size_t r = 0; r < sizeof res / sizeof *res; r++) {
        char base[64];
        snprintf(base, sizeof base, "%s", ckey(res[r]));
        uint16_t want = rl_key_slot(base, strlen(base));
        for (size_t s = 0; s < sizeof suffix / sizeof *suffix; s++) {
            char k[128];
            snprintf(k, sizeof k, "%s%s", res[r], suffix[s]);
            const char *c = ckey(k);
            cr_expect_eq(rl_key_slot(c, strlen(c)), want, "'%s' -> '%s' is not in the slot of '%s'", k, c, base);
        }
        /* and the Lua-made keys: the cluster name with the suffix appended */
        char lua[128];
        snprintf(lua, sizeof lua, "%s:redlock:writer", base);
        cr_expect_eq(rl_key_slot(lua, strlen(lua)), want);
    }
}

Test(cluster, redirects_parse) {
    unsigned slot;
    char host[64];
    int port;
    cr_expect_eq(rl_cluster_redirect("MOVED 3999 127.0.0.1:6381", &slot, host, sizeof host, &port), 1);
    cr_expect_eq(slot, 3999);
    cr_expect_str_eq(host, "127.0.0.1");
    cr_expect_eq(port, 6381);
    cr_expect_eq(rl_cluster_redirect("ASK 12 [::1]:7000", &slot, host, sizeof host, &port), 2);
    cr_expect_str_eq(host, "::1");
    cr_expect_eq(port, 7000);
    cr_expect_eq(rl_cluster_redirect("ASK 1 redis-a.example:7001", &slot, host, sizeof host, &port), 2);
    cr_expect_str_eq(host, "redis-a.example");
    static const char *const bad[] = {"MOVED",       "MOVED 16384 h:1", "MOVED x h:1",   "MOVED 1 h", "MOVED 1 h:0",
                                      "MOVED 1 :80", "ERR MOVED 1 h:1", "ASK 1 h:99999", "NOSCRIPT"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect_eq(rl_cluster_redirect(bad[i], &slot, host, sizeof host, &port), 0, "'%s' parsed", bad[i]);
}

/* ---- slot maps ---------------------------------------------------------- */

/* Parses RESP text into a reply with hiredis's own reader. */
static redisReply *resp(const char *text) {
    redisReader *rd = redisReaderCreate();
    void *rep = NULL;
    redisReaderFeed(rd, text, strlen(text));
    cr_assert_eq(redisReaderGetReply(rd, &rep), REDIS_OK);
    cr_assert_not_null(rep, "incomplete RESP");
    redisReaderFree(rd);
    return rep;
}

/* A fake member callback: connections are plain rl_conn_t with a URI. */
typedef struct {
    rl_cluster_t *cl;
    rl_conn_t conns[8];
    int n, promoted;
    rl_shard_t *last_promoted;
} fake_t;

static rl_shard_t *fake_member(void *arg, const char *host, int port) {
    fake_t *f = arg;
    rl_shard_t *s = rl_cluster_find(f->cl, host, port);
    if (s) return s;
    cr_assert(f->n < 8);
    rl_conn_t *c = &f->conns[f->n++];
    memset(c, 0, sizeof *c);
    c->uri.host = strdup(host);
    c->uri.port = port;
    return rl_cluster_add(f->cl, c);
}

static void fake_promoted(void *arg, rl_shard_t *from, rl_shard_t *s, int failover) {
    fake_t *f = arg;
    (void)from;
    f->promoted += failover;
    if (failover) f->last_promoted = s;
}

/* A CLUSTER SLOTS entry in RESP: range lo-hi at primary port p (id ip),
 * with one replica at port r (id ir), or none when r == 0. */
static int entry(char *out, size_t n, int lo, int hi, int p, const char *ip, int r, const char *ir) {
    if (!r)
        return snprintf(out, n, "*3\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$%zu\r\n%s\r\n", lo, hi, p,
                        strlen(ip), ip);
    return snprintf(out, n,
                    "*4\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$%zu\r\n%s\r\n"
                    "*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$%zu\r\n%s\r\n",
                    lo, hi, p, strlen(ip), ip, r, strlen(ir), ir);
}

static void fake_free(fake_t *f) {
    for (int i = 0; i < f->n; i++) free(f->conns[i].uri.host);
    rl_cluster_free(f->cl);
}

Test(cluster, slot_map_and_failover) {
    fake_t f = {.cl = calloc(1, sizeof(rl_cluster_t))};
    char a[512], b[512], c[512], text[2048];
    entry(a, sizeof a, 0, 5460, 7000, "ida", 7003, "ida-r");
    entry(b, sizeof b, 5461, 10922, 7001, "idb", 7004, "idb-r");
    entry(c, sizeof c, 10923, 16383, 7002, "idc", 0, "");
    snprintf(text, sizeof text, "*3\r\n%s%s%s", a, b, c);
    redisReply *rep = resp(text);
    char why[128];
    cr_assert_eq(rl_cluster_apply(f.cl, rep, "seed", fake_member, fake_promoted, &f, why, sizeof why), 0, "%s", why);
    freeReplyObject(rep);
    cr_expect_eq(f.cl->nshard, 3);
    cr_expect_eq(rl_cluster_owner(f.cl, 0)->c->uri.port, 7000);
    cr_expect_eq(rl_cluster_owner(f.cl, 5461)->c->uri.port, 7001);
    cr_expect_eq(rl_cluster_owner(f.cl, 16383)->c->uri.port, 7002);
    cr_expect_null(rl_cluster_owner(f.cl, -1));
    cr_expect_eq(rl_cluster_owner(f.cl, 100)->slots, 5461);
    cr_expect_eq(f.promoted, 0);
    /* the replica of b takes over; c loses slots 16000-16383 (unserved) */
    entry(b, sizeof b, 5461, 10922, 7004, "idb-r", 0, "");
    entry(c, sizeof c, 10923, 15999, 7002, "idc", 0, "");
    snprintf(text, sizeof text, "*3\r\n%s%s%s", a, b, c);
    rep = resp(text);
    cr_assert_eq(rl_cluster_apply(f.cl, rep, "seed", fake_member, fake_promoted, &f, why, sizeof why), 0, "%s", why);
    freeReplyObject(rep);
    cr_expect_eq(f.promoted, 1, "a replica promoted is seen");
    cr_expect_eq(f.last_promoted->c->uri.port, 7004);
    cr_expect_eq(rl_cluster_owner(f.cl, 6000)->c->uri.port, 7004);
    cr_expect_null(rl_cluster_owner(f.cl, 16100), "a slot no longer served is unknown");
    cr_expect_eq(f.cl->failovers, 1);
    /* a slot moved to another primary (resharding) is no failover */
    entry(a, sizeof a, 0, 5460, 7002, "idc", 0, "");
    snprintf(text, sizeof text, "*3\r\n%s%s%s", a, b, c);
    rep = resp(text);
    cr_assert_eq(rl_cluster_apply(f.cl, rep, "seed", fake_member, fake_promoted, &f, why, sizeof why), 0, "%s", why);
    freeReplyObject(rep);
    cr_expect_eq(f.promoted, 1);
    fake_free(&f);
}

Test(cluster, bad_maps_are_refused) {
    static const char *const bad[] = {
        "-ERR This instance has cluster support disabled\r\n",
        "*1\r\n:5\r\n",
        "*1\r\n*3\r\n:10\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n",    /* lo > hi */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n", /* past the last slot */
        "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:0\r\n",     /* port 0 */
        "*1\r\n*2\r\n:0\r\n:5\r\n",                            /* no primary */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fake_t f = {.cl = calloc(1, sizeof(rl_cluster_t))};
        redisReply *rep = resp(bad[i]);
        char why[128] = "";
        cr_expect_eq(rl_cluster_apply(f.cl, rep, "seed", fake_member, fake_promoted, &f, why, sizeof why), -1,
                     "map %zu taken", i);
        cr_expect(strstr(why, "CLUSTER SLOTS") != NULL, "why: '%s'", why);
        freeReplyObject(rep);
        fake_free(&f);
    }
}

Test(cluster, empty_address_is_the_member_asked) {
    fake_t f = {.cl = calloc(1, sizeof(rl_cluster_t))};
    redisReply *rep = resp("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$0\r\n\r\n:7000\r\n$2\r\nid\r\n");
    char why[128];
    cr_assert_eq(rl_cluster_apply(f.cl, rep, "10.1.2.3", fake_member, NULL, &f, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq(rl_cluster_owner(f.cl, 42)->c->uri.host, "10.1.2.3");
    freeReplyObject(rep);
    fake_free(&f);
}
