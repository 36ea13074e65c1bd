/* test_map.c -- the intrusive hash table (src/base/map.c), no I/O: lookups
 * through chains of equal and colliding hashes, growth under 100 000
 * entries, shrinking back when they leave, removal while iterating, and
 * the hash itself (lengths, seeds, the second word). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"

TestSuite(map, .timeout = 60);

typedef struct item {
    rl_map_node_t node;
    int key;
    int seen;
} item_t;

static uint64_t key_hash(const rl_map_t *m, int key) {
    return rl_map_hash(m, &key, sizeof key);
}

/* The item with key in m, or NULL. */
static item_t *lookup(const rl_map_t *m, int key) {
    uint64_t h = key_hash(m, key);
    for (rl_map_node_t *x = rl_map_first(m, h); x; x = rl_map_next(x)) {
        item_t *it = RL_MAP_ENTRY(x, item_t, node);
        if (it->key == key) return it;
    }
    return NULL;
}

Test(map, empty_table_finds_nothing_and_frees_safely) {
    rl_map_t m;
    rl_map_init(&m, 0);
    cr_assert_null(rl_map_first(&m, 42));
    cr_assert_eq(m.n, 0);
    rl_map_destroy(&m);
    rl_map_destroy(&m); /* twice: harmless */
}

Test(map, colliding_hashes_share_a_chain_and_stay_apart) {
    rl_map_t m;
    rl_map_init(&m, 8);
    item_t it[40];
    /* every item in bucket 3 of 8; hashes 3, 11, 19, ... and a repeated one */
    for (int i = 0; i < 40; i++) {
        it[i] = (item_t){.key = i};
        rl_map_insert(&m, &it[i].node, (uint64_t)(i % 20) * 8 + 3);
    }
    cr_assert_eq(m.n, 40);
    for (int h = 0; h < 20; h++) {
        int found = 0;
        for (rl_map_node_t *x = rl_map_first(&m, (uint64_t)h * 8 + 3); x; x = rl_map_next(x)) {
            item_t *p = RL_MAP_ENTRY(x, item_t, node);
            cr_assert_eq(p->key % 20, h, "hash %d chain holds key %d", h, p->key);
            found++;
        }
        cr_assert_eq(found, 2, "hash %d: %d entries", h, found);
    }
    cr_assert_null(rl_map_first(&m, 4), "no entry has hash 4");
    rl_map_remove(&m, &it[5].node);
    rl_map_node_t *x = rl_map_first(&m, 5 * 8 + 3);
    cr_assert(x && RL_MAP_ENTRY(x, item_t, node)->key == 25 && !rl_map_next(x));
    rl_map_destroy(&m);
}

Test(map, grows_under_load_and_shrinks_back) {
    enum { N = 100000 };
    rl_map_t m;
    rl_map_init(&m, 16);
    item_t *it = calloc(N, sizeof *it);
    cr_assert_not_null(it);
    for (int i = 0; i < N; i++) {
        it[i].key = i;
        rl_map_insert(&m, &it[i].node, key_hash(&m, i));
        cr_assert_leq(m.n, m.nb, "more entries (%zu) than buckets (%zu) after an insert", m.n, m.nb);
    }
    cr_assert_eq(m.n, N);
    cr_assert_geq(m.nb, N);
    size_t longest = 0;
    for (size_t b = 0; b < m.nb; b++) {
        size_t len = 0;
        for (rl_map_node_t *x = m.b[b]; x; x = x->next) len++;
        if (len > longest) longest = len;
    }
    cr_assert_leq(longest, 16, "a chain of %zu entries: the hash does not spread", longest);
    for (int i = 0; i < N; i += 7) cr_assert_eq(lookup(&m, i), &it[i], "key %d", i);
    cr_assert_null(lookup(&m, N + 1));
    for (int i = 0; i < N; i++) rl_map_remove(&m, &it[i].node);
    cr_assert_eq(m.n, 0);
    cr_assert_eq(m.nb, 16, "after every entry left: %zu buckets (started with 16)", m.nb);
    free(it);
    rl_map_destroy(&m);
}

/* rl_map_each: marks an item seen and removes the even ones. */
typedef struct {
    rl_map_t *m;
    int calls;
} walk_t;
static void visit(rl_map_node_t *x, void *arg) {
    walk_t *w = arg;
    item_t *it = RL_MAP_ENTRY(x, item_t, node);
    it->seen++;
    w->calls++;
    if (it->key % 2 == 0) rl_map_remove(w->m, x);
}

Test(map, removal_while_iterating_visits_each_once) {
    enum { N = 5000 };
    rl_map_t m;
    rl_map_init(&m, 8);
    static item_t it[N];
    for (int i = 0; i < N; i++) {
        it[i] = (item_t){.key = i};
        rl_map_insert(&m, &it[i].node, key_hash(&m, i));
    }
    size_t nb = m.nb;
    walk_t w = {&m, 0};
    rl_map_each(&m, visit, &w);
    cr_assert_eq(w.calls, N);
    for (int i = 0; i < N; i++) cr_assert_eq(it[i].seen, 1, "key %d seen %d times", i, it[i].seen);
    cr_assert_eq(m.n, N / 2);
    cr_assert_eq(m.nb, nb, "no resize under the walk");
    for (int i = 0; i < N; i++) cr_assert_eq(lookup(&m, i) != NULL, i % 2 == 1, "key %d", i);
    rl_map_destroy(&m);
}

Test(map, hash_depends_on_every_byte_length_seed_and_word) {
    rl_map_t a, b;
    rl_map_init(&a, 8);
    rl_map_init(&b, 8);
    char k1[40], k2[40];
    memset(k1, 'x', sizeof k1);
    memcpy(k2, k1, sizeof k2);
    for (size_t len = 0; len <= sizeof k1; len++) {
        uint64_t h = rl_map_hash(&a, k1, len);
        cr_assert_eq(h, rl_map_hash(&a, k2, len), "same bytes, same hash (len %zu)", len);
        if (len < sizeof k1) cr_assert_neq(h, rl_map_hash(&a, k1, len + 1), "len %zu vs %zu", len, len + 1);
        for (size_t i = 0; i < len; i++) {
            k2[i] ^= 1;
            cr_assert_neq(h, rl_map_hash(&a, k2, len), "byte %zu of %zu changed nothing", i, len);
            k2[i] ^= 1;
        }
    }
    cr_assert_neq(rl_map_hash(&a, "res", 3), rl_map_hash(&b, "res", 3), "two tables share a seed");
    cr_assert_neq(rl_map_hash2(&a, "res", 3, 1), rl_map_hash2(&a, "res", 3, 2));
    cr_assert_eq(rl_map_hash2(&a, "res", 3, 7), rl_map_hash2(&a, "res", 3, 7));
    rl_map_destroy(&a);
    rl_map_destroy(&b);
}
