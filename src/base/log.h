/* log.h -- the optional log callback. Never pass tokens or passwords. */
#ifndef RL_LOG_H
#define RL_LOG_H
#include "redlock.h"

typedef struct rl_logger {
    redlock_log_fn fn;
    void *arg;
    int level;
} rl_logger_t;

/* Formats and passes a message to lg->fn when level <= lg->level. */
void rl_logf(const rl_logger_t *lg, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
