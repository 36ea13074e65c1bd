/* args.c -- durations, numbers, option matching and the node list. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_error(const cli_t *c, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", c->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_usage_error(const cli_t *c, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", c->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", c->prog);
    return CLI_EX_USAGE;
}

/* ------------------------------------------------------------ durations */

int cli_parse_duration(const char *s, int64_t *ms, char *err, size_t errlen) {
    if (!s || !*s) {
        snprintf(err, errlen, "empty duration");
        return -1;
    }
    const char *p = s;
    if (*p == '-') {
        snprintf(err, errlen, "'%s' is negative", s);
        return -1;
    }
    /* whole part; anything over 10^15 is too large whatever the unit */
    uint64_t whole = 0;
    int digits = 0, huge = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        if (whole > 1000000000000000ULL) huge = 1;
        else whole = whole * 10 + (uint64_t)(*p - '0');
    }
    /* fraction: up to 9 digits kept; a non-zero digit beyond cannot make whole ms */
    uint64_t frac = 0, scale = 1;
    int fdigits = 0, lost_digits = 0;
    if (*p == '.') {
        p++;
        for (; isdigit((unsigned char)*p); p++, fdigits++) {
            if (fdigits < 9) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            } else if (*p != '0') {
                lost_digits = 1;
            }
        }
        if (fdigits == 0) digits = 0; /* "1." or "." */
    }
    if (digits == 0 && fdigits == 0) {
        snprintf(err, errlen, "'%s' is not a duration (expected a number with an optional unit ms, s or m, "
                 "e.g. 500ms, 10s, 2m)", s);
        return -1;
    }
    uint64_t mult;
    if (*p == '\0' || !strcmp(p, "ms")) mult = 1;
    else if (!strcmp(p, "s")) mult = 1000;
    else if (!strcmp(p, "m")) mult = 60000;
    else {
        snprintf(err, errlen, "'%s' is not a duration: unknown unit '%s' (use ms, s or m)", s, p);
        return -1;
    }
    if (lost_digits || (frac * mult) % scale != 0) {
        snprintf(err, errlen, "'%s' is not a whole number of milliseconds", s);
        return -1;
    }
    if (huge || whole > (uint64_t)CLI_MAX_DURATION_MS / mult ||
        whole * mult + frac * mult / scale > (uint64_t)CLI_MAX_DURATION_MS) {
        snprintf(err, errlen, "'%s' is too large (at most %lld ms, about 24.8 days)", s, CLI_MAX_DURATION_MS);
        return -1;
    }
    *ms = (int64_t)(whole * mult + frac * mult / scale);
    return 0;
}

int cli_parse_double(const char *s, double *out, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    double v = (s && *s && !isspace((unsigned char)*s)) ? strtod(s, &end) : 0;
    if (!s || !*s || !end || *end || errno == ERANGE || !isfinite(v) || isspace((unsigned char)*s)) {
        snprintf(err, errlen, "'%s' is not a number", s ? s : "");
        return -1;
    }
    if (v < 0) {
        snprintf(err, errlen, "'%s' is negative", s);
        return -1;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ options */

/* Parses a semaphore's limit: decimal digits only, 1..REDLOCK_MAX_PERMITS.
 * Returns 0, or -1 with a message naming s in err. */
int cli_parse_limit(const char *s, unsigned *limit, char *err, size_t errlen) {
    unsigned v = 0;
    const char *p = s ? s : "";
    for (; isdigit((unsigned char)*p) && v <= REDLOCK_MAX_PERMITS; p++) v = v * 10 + (unsigned)(*p - '0');
    if (!s || !*s || (*p && !isdigit((unsigned char)*p))) {
        snprintf(err, errlen, "'%s' is not a number of permits (expected 1 to %d)", s ? s : "", REDLOCK_MAX_PERMITS);
        return -1;
    }
    if (v < 1 || v > REDLOCK_MAX_PERMITS || *p) { /* *p: digits left once v passed the limit */
        snprintf(err, errlen, "'%s' is out of range (a semaphore has 1 to %d permits)", s, REDLOCK_MAX_PERMITS);
        return -1;
    }
    *limit = v;
    return 0;
}

int cli_limit_value(const cli_t *c, const char *v, unsigned *limit) {
    char err[200];
    if (cli_parse_limit(v, limit, err, sizeof err) < 0) return cli_usage_error(c, "invalid value for --limit: %s", err);
    return 0;
}

int cli_ttl_value(const cli_t *c, const char *v, int64_t *ttl) {
    char err[200];
    if (cli_parse_duration(v, ttl, err, sizeof err) < 0) return cli_usage_error(c, "invalid value for --ttl: %s", err);
    if (*ttl == 0) return cli_usage_error(c, "invalid value for --ttl: '%s' must be more than 0", v);
    return 0;
}

int cli_wait_value(const cli_t *c, const char *v, int64_t *wait) {
    char err[200];
    if (!strcmp(v, "forever")) {
        *wait = -1;
        return 0;
    }
    if (cli_parse_duration(v, wait, err, sizeof err) < 0)
        return cli_usage_error(c, "invalid value for --wait: %s (a duration, or 'forever')", err);
    return 0;
}

int cli_opt_flag(char **argv, const int *i, const char *name) {
    return !strcmp(argv[*i], name);
}

int cli_opt_value(cli_t *c, int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(c, "option %s needs a value", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

/* Parses a duration option into a uint32 field. Returns 1 or -1. */
static int duration_field(cli_t *c, const char *name, const char *val, uint32_t *field) {
    char err[200];
    int64_t ms;
    if (cli_parse_duration(val, &ms, err, sizeof err) < 0) {
        cli_usage_error(c, "invalid value for %s: %s", name, err);
        return -1;
    }
    *field = (uint32_t)ms;
    return 1;
}

int cli_global_option(cli_t *c, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v = NULL;
    int r;
    if (!strcmp(a, "--verbose")) {
        c->verbose++;
        return 1;
    }
    if (a[0] == '-' && a[1] == 'v') { /* -v, -vv, -vvv */
        size_t k = 1;
        while (a[k] == 'v') k++;
        if (a[k] != '\0') return 0;
        c->verbose += (int)(k - 1);
        return 1;
    }
    if (!strcmp(a, "--no-quarantine")) {
        c->opt.quarantine = 0;
        return 1;
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--nodes", &v)) != 0) {
        if (r < 0) return -1;
        c->nodes_given = 1;
        return cli_add_nodes(c, v, "--nodes") < 0 ? -1 : 1;
    }
    static const struct {
        const char *name;
        size_t off;
    } durations[] = {
        {"--connect-timeout", offsetof(redlock_options_t, connect_timeout_ms)},
        {"--op-timeout", offsetof(redlock_options_t, op_timeout_ms)},
        {"--drift-min", offsetof(redlock_options_t, drift_min_ms)},
        {"--retry-delay", offsetof(redlock_options_t, retry_delay_ms)},
        {"--retry-jitter", offsetof(redlock_options_t, retry_jitter_ms)},
        {"--max-ttl", offsetof(redlock_options_t, max_ttl_ms)},
        {"--clock-jump", offsetof(redlock_options_t, clock_jump_ms)},
        {"--clock-check", offsetof(redlock_options_t, clock_check_ms)},
    };
    for (size_t k = 0; k < sizeof durations / sizeof durations[0]; k++) {
        if ((r = cli_opt_value(c, argc, argv, i, durations[k].name, &v)) != 0) {
            if (r < 0) return -1;
            if (durations[k].off == offsetof(redlock_options_t, retry_jitter_ms)) c->jitter_given = 1;
            return duration_field(c, durations[k].name, v, (uint32_t *)((char *)&c->opt + durations[k].off));
        }
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--drift-factor", &v)) != 0) {
        char err[200];
        if (r < 0) return -1;
        if (cli_parse_double(v, &c->opt.drift_factor, err, sizeof err) < 0) {
            cli_usage_error(c, "invalid value for --drift-factor: %s", err);
            return -1;
        }
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ nodes */

int cli_add_nodes(cli_t *c, const char *list, const char *from) {
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *b = p, *e = end;
        while (b < e && isspace((unsigned char)*b)) b++;
        while (e > b && isspace((unsigned char)e[-1])) e--;
        if (b == e) {
            cli_usage_error(c, "empty node URI in %s '%s'", from, list);
            return -1;
        }
        if (c->n_nodes >= REDLOCK_MAX_NODES) {
            c->too_many_nodes = 1;
        } else {
            char *u = malloc((size_t)(e - b) + 1);
            if (!u) {
                cli_error(c, "out of memory");
                return -1;
            }
            memcpy(u, b, (size_t)(e - b));
            u[e - b] = '\0';
            c->node_list[c->n_nodes++] = u;
        }
        if (!comma) return 0;
        p = comma + 1;
    }
}

void cli_free_nodes(cli_t *c) {
    for (size_t i = 0; i < c->n_nodes; i++) free(c->node_list[i]);
    c->n_nodes = 0;
}
