/* log.c -- format a message for the caller's log callback. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void rl_logf(const rl_logger_t *lg, int level, const char *fmt, ...) {
    if (!lg || !lg->fn || level > lg->level) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lg->fn(lg->arg, level, msg);
}
