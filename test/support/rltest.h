/* rltest.h -- building redlock_t handles over the test cluster's nodes. */
#ifndef REDLOCK_TEST_SUPPORT_RLTEST_H
#define REDLOCK_TEST_SUPPORT_RLTEST_H
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "redlock.h"
#include "rttime.h"

/* Options for tests: library defaults, no retries, quiet. */
void rt_options(redlock_options_t *o);

/* A redlock_t over the first n nodes of c with options o (NULL: rt_options).
 * Fails the current Criterion test if it cannot be made. */
redlock_t *rt_new(const tc_cluster_t *c, size_t n, const redlock_options_t *o);

/* redlock_new_ex over the first n nodes of c with options o: its result,
 * the handle in *out (NULL when refused) and why in err (errlen bytes). */
int rt_try_new(const tc_cluster_t *c, size_t n, const redlock_options_t *o, redlock_t **out, char *err, size_t errlen);

/* A list of the test cluster's nodes, by index. */
typedef struct rt_list {
    size_t n;
    int at[TC_MAX_NODES];
} rt_list_t;

/* A redlock_t over c's nodes of cur and, when next is not NULL, those of
 * next as its next_nodes (a joint handle); o: options (NULL: rt_options).
 * Fails the current Criterion test if it cannot be made. */
redlock_t *rt_new_lists(const tc_cluster_t *c, const rt_list_t *cur, const rt_list_t *next, const redlock_options_t *o);

/* Loads the cluster, heals it (all nodes up and empty) and returns it. */
void rt_setup(tc_cluster_t *c);

/* Built with -DRL_TEST_ASYNC, the blocking calls run through the async API. */
#include "asyncmode.h"

#endif
