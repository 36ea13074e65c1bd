/* clock.c -- CLOCK_MONOTONIC helpers. */
#define _POSIX_C_SOURCE 200809L
#include "clock.h"

#include <errno.h>
#include <time.h>

/* Returns the monotonic clock in microseconds (never jumps with wall time). */
uint64_t rl_clock_monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Returns us microseconds as seconds and nanoseconds. */
struct timespec rl_timespec_us(uint64_t us) {
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000};
    return ts;
}

/* Sleeps until us microseconds from now have passed on the monotonic clock. */
void rl_sleep_us(uint64_t us) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (us % 1000000u) * 1000u;
    ts.tv_sec += (time_t)(us / 1000000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}
