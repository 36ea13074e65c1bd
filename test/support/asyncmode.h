/* asyncmode.h -- runs a blocking-API test through the async API.
 *
 * A test source built with -DRL_TEST_ASYNC (see test/CMakeLists.txt: the
 * `_async` variants) gets its blocking calls on single-resource locks
 * replaced by these: each runs the matching redlock_async_* call on a
 * handle paired with the test's redlock_t (same options), on one libuv
 * loop that a background thread runs, and waits for its callback. So the
 * same assertions check the async driver: reports, validity, fencing,
 * auto-extension (the loop's timers, while the test sleeps), release.
 *
 * Left to the blocking API, with the reason: multi-resource sets
 * (the async API has no multi-resource acquire), fenced writes to a store, and
 * re-entry (a per-thread notion the loop does not have; those tests are
 * built only in blocking mode). A call refused as bad input is answered
 * by the blocking call, so its report names the bad value the same way. */
#ifndef REDLOCK_TEST_SUPPORT_ASYNCMODE_H
#define REDLOCK_TEST_SUPPORT_ASYNCMODE_H
#include "redlock.h"

int ta_acquire_ex(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                  redlock_report_t *rep);
int ta_acquire_permit(redlock_t *rl, const char *resource, unsigned limit, uint32_t ttl_ms, int64_t wait_ms,
                      redlock_lock_t **out, redlock_report_t *rep);
int ta_acquire_shared(redlock_t *rl, const char *resource, uint32_t ttl_ms, int64_t wait_ms, redlock_lock_t **out,
                      redlock_report_t *rep);
int ta_release_ex(redlock_t *rl, redlock_lock_t *lock, redlock_report_t *rep);
int ta_extend_ex(redlock_t *rl, redlock_lock_t *lock, uint32_t ttl_ms, redlock_report_t *rep);
int ta_autoextend(redlock_t *rl, redlock_lock_t *lock, const redlock_autoextend_options_t *opt, redlock_lost_fn fn,
                  void *arg);
int ta_autoextend_stop(redlock_t *rl, redlock_lock_t *lock);
void ta_lock_free(redlock_lock_t *lock);
void ta_free(redlock_t *rl);
int ta_stats(redlock_t *rl, redlock_stats_t *out);

#if defined(RL_TEST_ASYNC) && !defined(RL_ASYNCMODE_IMPL)
#define redlock_acquire(rl, res, ttl, out) ta_acquire_ex(rl, res, ttl, -1, out, NULL)
#define redlock_try_acquire(rl, res, ttl, out) ta_acquire_ex(rl, res, ttl, 0, out, NULL)
#define redlock_acquire_ex ta_acquire_ex
#define redlock_acquire_permit ta_acquire_permit
#define redlock_acquire_shared ta_acquire_shared
#define redlock_release(rl, lock) ta_release_ex(rl, lock, NULL)
#define redlock_release_ex ta_release_ex
#define redlock_extend(rl, lock, ttl) ta_extend_ex(rl, lock, ttl, NULL)
#define redlock_extend_ex ta_extend_ex
#define redlock_autoextend ta_autoextend
#define redlock_autoextend_stop ta_autoextend_stop
#define redlock_lock_free ta_lock_free
#define redlock_free ta_free
#define redlock_stats ta_stats
#endif

#endif
