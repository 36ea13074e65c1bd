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
