/* common.c -- see common.h. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <time.h>

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_cpu_us(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

long bench_rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    long kb = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

size_t bench_split_uris(char *list, const char **uris, size_t max) {
    size_t n = 0;
    for (char *save = NULL, *u = strtok_r(list, ",", &save); u && n < max; u = strtok_r(NULL, ",", &save))
        if (*u) uris[n++] = u;
    return n;
}

int bench_parse_uri(const char *uri, char *host, size_t hostlen, int *port, char *path, size_t pathlen) {
    host[0] = path[0] = '\0';
    *port = 0;
    if (!strncmp(uri, "unix://", 7)) {
        snprintf(path, pathlen, "%s", uri + 7);
        return path[0] ? 0 : -1;
    }
    if (strncmp(uri, "redis://", 8)) return -1;
    const char *h = uri + 8;
    if (strchr(h, '@')) return -1; /* the bench clusters have no passwords */
    const char *colon = strrchr(h, ':');
    size_t hl = colon ? (size_t)(colon - h) : strcspn(h, "/");
    if (hl == 0 || hl >= hostlen) return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = colon ? atoi(colon + 1) : 6379;
    return *port > 0 ? 0 : -1;
}

void bench_samples_init(bench_samples_t *s, size_t cap) {
    s->n = 0;
    s->cap = cap ? cap : 1;
    s->v = malloc(s->cap * sizeof *s->v);
    if (!s->v) {
        fprintf(stderr, "out of memory for %zu samples\n", cap);
        exit(1);
    }
}

void bench_samples_free(bench_samples_t *s) {
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

void bench_samples_merge(bench_samples_t *dst, const bench_samples_t *src) {
    if (dst->n + src->n > dst->cap) {
        size_t cap = dst->n + src->n;
        uint64_t *v = realloc(dst->v, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "out of memory merging samples\n");
            exit(1);
        }
        dst->v = v;
        dst->cap = cap;
    }
    memcpy(dst->v + dst->n, src->v, src->n * sizeof *src->v);
    dst->n += src->n;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

double bench_quantile_us(bench_samples_t *s, double q) {
    if (!s->n) return 0.0;
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    size_t rank = (size_t)(q * (double)s->n + 0.999999); /* nearest rank, 1-based */
    if (rank < 1) rank = 1;
    if (rank > s->n) rank = s->n;
    return (double)s->v[rank - 1] / 1000.0;
}

void bench_line_begin(const char *impl, const char *workload) {
    printf("RESULT impl=%s workload=%s", impl, workload);
}

void bench_kv_str(const char *key, const char *val) {
    printf(" %s=%s", key, val);
}

void bench_kv_u64(const char *key, uint64_t v) {
    printf(" %s=%llu", key, (unsigned long long)v);
}

void bench_kv_f(const char *key, double v) {
    printf(" %s=%.3f", key, v);
}

void bench_line_end(void) {
    printf("\n");
    fflush(stdout);
}

void bench_kv_quantiles(const char *prefix, bench_samples_t *s) {
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"p50", 0.50}, {"p99", 0.99}, {"p999", 0.999}};
    char key[64];
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        snprintf(key, sizeof key, "%s_%s_us", prefix, qs[i].name);
        bench_kv_f(key, bench_quantile_us(s, qs[i].q));
    }
}

double bench_arg_num(const char *opt, const char *val) {
    char *end = NULL;
    double v = val ? strtod(val, &end) : -1.0;
    if (!val || end == val || *end || v < 0) {
        fprintf(stderr, "bad value for %s: '%s'\n", opt, val ? val : "(missing)");
        exit(2);
    }
    return v;
}

void bench_sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void bench_sleep_ms(double ms) {
    bench_sleep_ns((uint64_t)(ms * 1e6));
}

/* The option of opts whose flag is a, or NULL. */
static const bench_opt_t *opt_of(const char *a, const bench_opt_t *opts, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!strcmp(a, opts[k].flag)) return &opts[k];
    return NULL;
}

int bench_parse_opts(int argc, char **argv, const bench_opt_t *opts, size_t n, void (*version)(void)) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (version && !strcmp(a, "--version")) {
            version();
            exit(0);
        }
        const bench_opt_t *o = opt_of(a, opts, n);
        if (!o) return -1;
        if (o->set) {
            *o->set = 1;
            continue;
        }
        i++;
        if (o->num)
            *o->num = bench_arg_num(a, v);
        else if (o->uns)
            *o->uns = (unsigned)bench_arg_num(a, v);
        else if (!v)
            return -1;
        else if (o->str)
            *o->str = v;
        else
            *o->list = v;
    }
    return 0;
}

void bench_usage(const char *prog, const char *args, int with_version) {
    fprintf(stderr, "usage: %s %s", prog, args);
    if (with_version) fprintf(stderr, "       %s --version\n", prog);
    exit(2);
}
