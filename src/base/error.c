/* error.c -- error strings and names, from the same X-macro list as the
 * codes. */
#include <stddef.h>

#include "redlock.h"

const char *redlock_strerror(int err) {
    switch (err) {
    case REDLOCK_OK: return "success";
#define RL_ERR_CASE_(name, value, msg) \
    case REDLOCK_ERR_##name: return msg;
        REDLOCK_ERRNO_MAP(RL_ERR_CASE_)
#undef RL_ERR_CASE_
    default: return "unknown error";
    }
}

/* Writes name in lower case into buf (n > 0 bytes, truncated). */
static void lower_into(const char *name, char *buf, size_t n) {
    size_t i = 0;
    for (; name[i] && i + 1 < n; i++) buf[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] - 'A' + 'a') : name[i];
    buf[i] = '\0';
}

void rl_result_name(int rc, char *buf, size_t n) {
    const char *name = rc == REDLOCK_OK ? "OK" : "UNKNOWN";
#define RL_ERR_NAME_(code, value, msg) \
    if (rc == REDLOCK_ERR_##code) name = #code;
    REDLOCK_ERRNO_MAP(RL_ERR_NAME_)
#undef RL_ERR_NAME_
    if (n) lower_into(name, buf, n);
}
