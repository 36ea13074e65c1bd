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

/* The units of a duration, largest first. A duration of several parts gives
 * each unit at most once and in this order: 1h30m, 2m30s, 1h0m5s, 1s500ms. */
static const struct {
    const char *name;
    uint64_t ms;
} dur_units[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
#define DUR_UNITS (int)(sizeof dur_units / sizeof dur_units[0])
#define DUR_UNIT_MS (DUR_UNITS - 1) /* a lone bare number is milliseconds */

/* One part of a duration: a number and the unit after it. */
typedef struct dur_part {
    const char *at;       /* where the part starts in the whole string */
    uint64_t whole;       /* the digits before any '.' (huge: past 10^15) */
    uint64_t frac, scale; /* the first 9 fraction digits: frac / scale */
    int digits, fdigits;  /* how many digits before and after the '.' */
    int huge, lost;       /* lost: a non-zero fraction digit past the 9th */
    const char *unit;     /* the letters after the number */
    size_t unit_len;
} dur_part_t;

/* Reads digits, an optional '.' and fraction digits at *p into d, moving *p
 * past them. Returns 0, or -1 when there is no number there ("", "h", "1."). */
static int dur_number(const char **p, dur_part_t *d) {
    const char *q = *p;
    d->whole = d->frac = 0, d->scale = 1;
    d->digits = d->fdigits = d->huge = d->lost = 0;
    for (; isdigit((unsigned char)*q); q++, d->digits++) {
        if (d->whole > 1000000000000000ULL)
            d->huge = 1; /* too large whatever the unit */
        else
            d->whole = d->whole * 10 + (uint64_t)(*q - '0');
    }
    if (*q == '.') {
        for (q++; isdigit((unsigned char)*q); q++, d->fdigits++) {
            if (d->fdigits < 9)
                d->frac = d->frac * 10 + (uint64_t)(*q - '0'), d->scale *= 10;
            else if (*q != '0')
                d->lost = 1; /* never whole ms: 3600000 = 2^7 * 3^2 * 5^5 */
        }
        if (d->fdigits == 0) return -1;
    }
    *p = q;
    return d->digits + d->fdigits > 0 ? 0 : -1;
}

/* The index of the unit d names in dur_units, or -1. */
static int dur_unit(const dur_part_t *d) {
    for (int k = 0; k < DUR_UNITS; k++)
        if (strlen(dur_units[k].name) == d->unit_len && !strncmp(d->unit, dur_units[k].name, d->unit_len)) return k;
    return -1;
}

/* Writes the message for a duration above CLI_MAX_DURATION_MS to err. */
static void dur_too_large(const char *s, char *err, size_t errlen) {
    snprintf(err, errlen, "'%s' is too large (at most %lld ms, about 24.8 days: 596h31m23s647ms)", s,
             CLI_MAX_DURATION_MS);
}

/* Sets *ms to part d in unit k. Returns 0, or -1 with a message in err
 * when it is not a whole number of ms or exceeds CLI_MAX_DURATION_MS. */
static int dur_value(const char *s, const dur_part_t *d, int k, uint64_t *ms, char *err, size_t errlen) {
    uint64_t mult = dur_units[k].ms;
    int len = (int)(d->unit + d->unit_len - d->at);
    if (d->lost || (d->frac * mult) % d->scale != 0) {
        if (d->at == s && d->unit[d->unit_len] == '\0')
            snprintf(err, errlen, "'%s' is not a whole number of milliseconds", s);
        else
            snprintf(err, errlen, "'%s' is not a whole number of milliseconds (in '%.*s')", s, len, d->at);
        return -1;
    }
    if (d->huge || d->whole > (uint64_t)CLI_MAX_DURATION_MS / mult ||
        d->whole * mult + d->frac * mult / d->scale > (uint64_t)CLI_MAX_DURATION_MS) {
        dur_too_large(s, err, errlen);
        return -1;
    }
    *ms = d->whole * mult + d->frac * mult / d->scale;
    return 0;
}

/* Says what is wrong with the part at d->at whose number ends at p (no
 * unit, junk, an unknown unit); first: it is the first part. */
static void dur_bad_unit(const char *s, const dur_part_t *d, const char *p, int first, char *err, size_t errlen) {
    if (d->unit_len == 0 && *p == '\0')
        snprintf(err, errlen,
                 "'%s' is not a duration: '%s' has no unit (only a lone number, meaning ms, may "
                 "leave it out)",
                 s, d->at);
    else if (d->unit_len == 0 && *p == '-')
        snprintf(err, errlen, "'%s' is negative", s);
    else if (d->unit_len == 0)
        snprintf(err, errlen, "'%s' is not a duration: unexpected character '%c' after '%.*s'", s,
                 isprint((unsigned char)*p) ? *p : '?', (int)(p - s), s);
    else if (first && d->unit[d->unit_len] == '\0')
        snprintf(err, errlen, "'%s' is not a duration: unknown unit '%.*s' (use h, m, s or ms)", s, (int)d->unit_len,
                 d->unit);
    else
        snprintf(err, errlen,
                 "'%s' is not a duration: unknown unit '%.*s' (use h, m, s or ms, largest first, "
                 "e.g. 1h30m)",
                 s, (int)d->unit_len, d->unit);
}

/* Checks that unit k may follow the unit of the part before (last, -1 if
 * none): each unit once, largest first. Returns 0, or -1 with a message. */
static int dur_order(const char *s, int last, int k, char *err, size_t errlen) {
    if (k == last) {
        snprintf(err, errlen, "'%s' is not a duration: unit '%s' appears twice", s, dur_units[k].name);
        return -1;
    }
    if (k < last) {
        snprintf(err, errlen,
                 "'%s' is not a duration: '%s' after '%s' (units go largest first: h, m, s, ms; "
                 "e.g. 1h30m)",
                 s, dur_units[k].name, dur_units[last].name);
        return -1;
    }
    return 0;
}

/* Reads the part at *p (a number and a unit; a lone bare number is ms),
 * checks its unit against the part before (*last, -1 if none), adds it to
 * *total and moves *p past it. Returns 0, or -1 with a message in err. */
static int dur_part(const char *s, const char **p, int *last, uint64_t *total, char *err, size_t errlen) {
    dur_part_t d = {.at = *p};
    const char *q = *p;
    int first = *last < 0;
    if (*q == '-') return snprintf(err, errlen, "'%s' is negative", s), -1;
    if (dur_number(&q, &d) < 0) {
        if (first)
            snprintf(err, errlen,
                     "'%s' is not a duration (expected a number with an optional unit h, m, s or ms, "
                     "e.g. 500ms, 10s, 2m, 1h30m)",
                     s);
        else
            snprintf(err, errlen, "'%s' is not a duration: no number at '%s'", s, d.at);
        return -1;
    }
    for (d.unit = q; isalpha((unsigned char)*q); q++) d.unit_len++;
    int k = d.unit_len == 0 && *q == '\0' && first ? DUR_UNIT_MS : dur_unit(&d);
    if (k < 0) return dur_bad_unit(s, &d, q, first, err, errlen), -1;
    uint64_t ms;
    if (dur_order(s, *last, k, err, errlen) < 0 || dur_value(s, &d, k, &ms, err, errlen) < 0) return -1;
    if ((*total += ms) > (uint64_t)CLI_MAX_DURATION_MS) return dur_too_large(s, err, errlen), -1;
    *last = k, *p = q;
    return 0;
}

/* Parses a duration: one part or several (see dur_units), summed. */
int cli_parse_duration(const char *s, int64_t *ms, char *err, size_t errlen) {
    if (!s || !*s) {
        snprintf(err, errlen, "empty duration");
        return -1;
    }
    uint64_t total = 0;
    int last = -1;
    for (const char *p = s; *p;)
        if (dur_part(s, &p, &last, &total, err, errlen) < 0) return -1;
    *ms = (int64_t)total;
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

int cli_positive_duration(const cli_t *c, const char *opt, const char *v, int64_t *ms) {
    char err[200];
    if (cli_parse_duration(v, ms, err, sizeof err) < 0) return cli_usage_error(c, "invalid value for %s: %s", opt, err);
    if (*ms == 0) return cli_usage_error(c, "invalid value for %s: '%s' must be more than 0", opt, v);
    return 0;
}

int cli_ttl_value(const cli_t *c, const char *v, int64_t *ttl) {
    return cli_positive_duration(c, "--ttl", v, ttl);
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
        c->nodes.given = 1;
        return cli_add_nodes(c, &c->nodes, v, "--nodes") < 0 ? -1 : 1;
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--next-nodes", &v)) != 0) {
        if (r < 0) return -1;
        c->next.given = 1;
        return cli_add_nodes(c, &c->next, v, "--next-nodes") < 0 ? -1 : 1;
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
        {"--lock-delay", offsetof(redlock_options_t, lock_delay_ms)},
    };
    for (size_t k = 0; k < sizeof durations / sizeof durations[0]; k++) {
        if ((r = cli_opt_value(c, argc, argv, i, durations[k].name, &v)) != 0) {
            if (r < 0) return -1;
            return duration_field(c, durations[k].name, v, (uint32_t *)((char *)&c->opt + durations[k].off));
        }
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--min-replicas", &v)) != 0) {
        if (r < 0) return -1;
        char *end = NULL;
        unsigned long n = v && isdigit((unsigned char)*v) ? strtoul(v, &end, 10) : 1001;
        if (!end || *end || n > 1000) {
            cli_usage_error(c, "invalid value for --min-replicas: '%s' is not a number of replicas (0 to 1000)", v);
            return -1;
        }
        c->opt.min_replicas = (uint32_t)n;
        return 1;
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

int cli_add_nodes(cli_t *c, cli_nodes_t *to, const char *list, const char *from) {
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
        if (to->n >= REDLOCK_MAX_NODES) {
            to->too_many = 1;
        } else {
            char *u = malloc((size_t)(e - b) + 1);
            if (!u) {
                cli_error(c, "out of memory");
                return -1;
            }
            memcpy(u, b, (size_t)(e - b));
            u[e - b] = '\0';
            to->uri[to->n++] = u;
        }
        if (!comma) return 0;
        p = comma + 1;
    }
}

void cli_free_nodes(cli_nodes_t *l) {
    for (size_t i = 0; i < l->n; i++) free(l->uri[i]);
    l->n = 0;
}
