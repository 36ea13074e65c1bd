/* rl.h -- the library's private structures, shared by its top-level files. */
#ifndef RL_RL_H
#define RL_RL_H
#include <stdint.h>

#include "clock.h"
#include "engine.h"
#include "log.h"
#include "redlock.h"
#include "scripts.h"

struct redlock {
    redlock_options_t opt;    /* the caller's options; opt.nodes points at node_names */
    char **node_names;        /* copies of the caller's URIs */
    rl_engine_t *eng;
    rl_clock_fn clock;        /* monotonic µs; replaced only by unit tests */
    rl_logger_t log;
    const rl_script_t *release_script, *extend_script;
};

struct redlock_lock {
    const redlock_t *owner;   /* the redlock_t it was acquired through */
    char *resource;
    size_t resource_len;
    char token[REDLOCK_TOKEN_LEN + 1];
    uint32_t ttl_ms;
    uint64_t t0_us;           /* start of the attempt or extension that set the deadline */
    uint64_t deadline_us;     /* t0 + TTL - drift on the monotonic clock */
    rl_clock_fn clock;
};

/* Checks opt; on a problem writes a message naming the bad value into err
 * and returns REDLOCK_ERR_CONFIG (or INVALID for a NULL opt). */
int rl_options_check(const redlock_options_t *opt, char *err, size_t errlen);

/* Checks a call's resource and TTL against rl's options. Returns
 * REDLOCK_OK or REDLOCK_ERR_INVALID with the bad value named in msg. */
int rl_check_request(const redlock_t *rl, const char *resource, uint32_t ttl_ms, char *msg, size_t msglen);

/* Replaces rl's clock (unit tests only). */
void rl_set_clock(redlock_t *rl, rl_clock_fn clock);

#endif
