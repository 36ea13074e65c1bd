/* timing.h -- the Redlock validity arithmetic, as pure functions of time.
 *
 * drift    = ttl * drift_factor + drift_min          (always >= 0)
 * validity = ttl - (now - t0) - drift
 * deadline = t0 + ttl - drift                        (lock is valid while now < deadline)
 *
 * All values in microseconds except ttl and drift_min, which are in ms.
 */
#ifndef RL_TIMING_H
#define RL_TIMING_H
#include <stdint.h>

/* Returns the clock-drift allowance in microseconds, rounded up. */
uint64_t rl_drift_us(uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms);

/* Returns t0 + ttl - drift: the local monotonic instant the lock stops being valid. */
uint64_t rl_deadline_us(uint64_t t0_us, uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms);

/* Returns deadline - now: remaining validity, <= 0 once the deadline passed. */
int64_t rl_validity_us(uint64_t deadline_us, uint64_t now_us);

/* Converts microseconds of validity to whole ms, rounding toward minus
 * infinity so a lock is never reported valid for longer than it is. */
int64_t rl_validity_ms(int64_t validity_us);

#endif
