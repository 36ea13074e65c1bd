/* map.h -- an intrusive hash table (doc/design.md, "Cost flat in locks and
 * waiters"): per-resource state (held locks, local wait queues, release
 * channels) is found in O(1) however many entries a handle has.
 *
 * The entries are the caller's structures, each with an rl_map_node_t
 * inside; the table keeps only their chains, so inserting allocates
 * nothing but, now and then, a larger bucket array. The caller hashes its
 * key (rl_map_hash) and compares keys itself while walking the chain of a
 * hash (rl_map_first / rl_map_next). The table doubles when it holds more
 * entries than buckets and halves when it holds fewer than an eighth, so a
 * handle that held 100 000 locks returns to its starting size. A failed
 * resize leaves the table as it was (longer chains, still correct). Not
 * thread-safe: the caller's lock guards it. */
#ifndef RL_MAP_H
#define RL_MAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct rl_map_node {
    struct rl_map_node *next;
    uint64_t hash;
} rl_map_node_t;

typedef struct rl_map {
    rl_map_node_t **b; /* nb chains */
    size_t nb;         /* a power of two, or 0 before the first insert */
    size_t n;          /* entries */
    size_t min_nb;     /* never shrinks below this */
    uint64_t seed;     /* random per table: names chosen to collide cannot be */
} rl_map_t;

/* A zeroed table with min_nb buckets at least (rounded up to a power of
 * two) once it has entries. Returns 0. */
int rl_map_init(rl_map_t *m, size_t min_nb);

/* Frees the bucket array (not the entries, which are the caller's). */
void rl_map_destroy(rl_map_t *m);

/* The hash of key (len bytes) with m's seed, and of key mixed with a
 * second word (a thread's id, a kind). */
uint64_t rl_map_hash(const rl_map_t *m, const void *key, size_t len);
uint64_t rl_map_hash2(const rl_map_t *m, const void *key, size_t len, uint64_t word);

/* The first entry of hash h, and the next one after x with the same
 * hash; NULL at the end of the chain. */
rl_map_node_t *rl_map_first(const rl_map_t *m, uint64_t h);
rl_map_node_t *rl_map_next(const rl_map_node_t *x);

/* Adds x with hash h (x must not be in a table). */
void rl_map_insert(rl_map_t *m, rl_map_node_t *x, uint64_t h);

/* Takes x out of m (x must be in m). */
void rl_map_remove(rl_map_t *m, rl_map_node_t *x);

/* Calls fn on every entry; fn may remove the entry it is given (and no
 * other). The table does not shrink during the walk. */
void rl_map_each(rl_map_t *m, void (*fn)(rl_map_node_t *x, void *arg), void *arg);

/* The containing structure of a node: RL_MAP_ENTRY(x, struct foo, node). */
#define RL_MAP_ENTRY(x, type, field) ((type *)(void *)((char *)(x)-offsetof(type, field)))

#endif
