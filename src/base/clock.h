/* clock.h -- monotonic time in microseconds, and the clock hook tests use. */
#ifndef RL_CLOCK_H
#define RL_CLOCK_H
#include <stdint.h>
#include <time.h>

/* A clock returns monotonic microseconds. Each redlock_t holds one, so a
 * unit test can inject a fake without any global state. */
typedef uint64_t (*rl_clock_fn)(void);

/* CLOCK_MONOTONIC in microseconds. */
uint64_t rl_clock_monotonic_us(void);

/* A relative wait of us microseconds as a timespec (ppoll's timeout). */
struct timespec rl_timespec_us(uint64_t us);

/* Sleep for us microseconds on CLOCK_MONOTONIC, resuming after signals. */
void rl_sleep_us(uint64_t us);

#endif
