/* timing.c -- validity and drift arithmetic (see timing.h). */
#include "timing.h"

#include <math.h>

uint64_t rl_drift_us(uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms) {
    double d = ceil((double)ttl_ms * 1000.0 * drift_factor);
    if (!(d > 0)) d = 0;    /* also catches NaN; options validation rejects it anyway */
    if (d > 1e18) d = 1e18; /* a huge factor: still far above any TTL, and no UB in the cast */
    return (uint64_t)d + (uint64_t)drift_min_ms * 1000u;
}

uint64_t rl_deadline_us(uint64_t t0_us, uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms) {
    uint64_t ttl_us = (uint64_t)ttl_ms * 1000u;
    uint64_t drift = rl_drift_us(ttl_ms, drift_factor, drift_min_ms);
    return drift >= ttl_us ? t0_us : t0_us + ttl_us - drift;
}

int64_t rl_validity_us(uint64_t deadline_us, uint64_t now_us) {
    return (int64_t)deadline_us - (int64_t)now_us;
}

int64_t rl_validity_ms(int64_t validity_us) {
    /* Floor division without negating (negating INT64_MIN overflows). */
    int64_t ms = validity_us / 1000;
    if (validity_us % 1000 < 0) ms--;
    return ms;
}
