/* rttime.h -- the monotonic clock and sleeping, for the Criterion tests
 * (through rltest.h) and the plain stress programs alike: no Criterion. */
#ifndef REDLOCK_TEST_SUPPORT_RTTIME_H
#define REDLOCK_TEST_SUPPORT_RTTIME_H
#include <stdint.h>

/* Microseconds on CLOCK_MONOTONIC. */
uint64_t rt_now_us(void);

/* Sleeps ms milliseconds. */
void rt_sleep_ms(unsigned ms);

#endif
