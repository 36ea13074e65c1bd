/* vote.c -- a vote's name and the quorum of a node count (redlock.h). */
#include <stddef.h>

#include "redlock.h"

const char *redlock_vote_name(redlock_vote_t vote) {
    switch (vote) {
    case REDLOCK_VOTE_NONE: return "pending";
    case REDLOCK_VOTE_YES: return "yes";
    case REDLOCK_VOTE_NO: return "no";
    case REDLOCK_VOTE_TIMEOUT: return "timeout";
    case REDLOCK_VOTE_DOWN: return "down";
    case REDLOCK_VOTE_ERROR: return "error";
    case REDLOCK_VOTE_MEMBERSHIP: return "membership";
    }
    return "unknown";
}

size_t redlock_quorum(size_t n_nodes) {
    return n_nodes / 2 + 1;
}
