/* error.c -- error strings, from the same X-macro list as the codes. */
#include <stddef.h>

#include "redlock.h"

const char *redlock_strerror(int err) {
    switch (err) {
    case REDLOCK_OK:
        return "success";
#define RL_ERR_CASE_(name, value, msg)                                                            \
    case REDLOCK_ERR_##name:                                                                      \
        return msg;
        REDLOCK_ERRNO_MAP(RL_ERR_CASE_)
#undef RL_ERR_CASE_
    default:
        return "unknown error";
    }
}

const char *redlock_vote_name(redlock_vote_t vote) {
    switch (vote) {
    case REDLOCK_VOTE_NONE: return "pending";
    case REDLOCK_VOTE_YES: return "yes";
    case REDLOCK_VOTE_NO: return "no";
    case REDLOCK_VOTE_TIMEOUT: return "timeout";
    case REDLOCK_VOTE_DOWN: return "down";
    case REDLOCK_VOTE_ERROR: return "error";
    }
    return "unknown";
}

size_t redlock_quorum(size_t n_nodes) {
    return n_nodes / 2 + 1;
}

/* Writes name in lower case into buf (n > 0 bytes, truncated). */
static void lower_into(const char *name, char *buf, size_t n) {
    size_t i = 0;
    for (; name[i] && i + 1 < n; i++) buf[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] - 'A' + 'a') : name[i];
    buf[i] = '\0';
}

void rl_result_name(int rc, char *buf, size_t n) {
    const char *name = rc == REDLOCK_OK ? "OK" : "UNKNOWN";
#define RL_ERR_NAME_(code, value, msg)                                                            \
    if (rc == REDLOCK_ERR_##code) name = #code;
    REDLOCK_ERRNO_MAP(RL_ERR_NAME_)
#undef RL_ERR_NAME_
    if (n) lower_into(name, buf, n);
}
