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

/* Loads the cluster, heals it (all nodes up and empty) and returns it. */
void rt_setup(tc_cluster_t *c);

/* Built with -DRL_TEST_ASYNC, the blocking calls run through the async API. */
#include "asyncmode.h"

#endif
