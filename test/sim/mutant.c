/* mutant.c -- deliberate bugs in the library's validity arithmetic, put
 * in by one more ld --wrap (of rl_deadline_us, src/core/timing.c) in the
 * program redlock-sim-mutant only: the checkers must catch a wrong core,
 * not only broken assumptions. SIM_MUTANT picks the bug:
 *   nodrift  a lock's deadline leaves out the drift allowance
 *            (t0 + TTL instead of t0 + TTL - drift);
 *   latet0   validity is counted from when the round was decided, not
 *            from when it started;
 *   (unset)  no bug: the library's own arithmetic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

uint64_t __real_rl_deadline_us(uint64_t t0_us, uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms);
uint64_t __wrap_rl_deadline_us(uint64_t t0_us, uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms);
uint64_t rl_clock_monotonic_us(void); /* (wrapped too: the running client's clock) */

uint64_t __wrap_rl_deadline_us(uint64_t t0_us, uint32_t ttl_ms, double drift_factor, uint32_t drift_min_ms) {
    static const char *m;
    if (!m) m = getenv("SIM_MUTANT") ? getenv("SIM_MUTANT") : "";
    if (!strcmp(m, "nodrift")) return t0_us + (uint64_t)ttl_ms * 1000u;
    if (!strcmp(m, "latet0")) return __real_rl_deadline_us(rl_clock_monotonic_us(), ttl_ms, drift_factor, drift_min_ms);
    return __real_rl_deadline_us(t0_us, ttl_ms, drift_factor, drift_min_ms);
}
