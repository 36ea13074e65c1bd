/* common.h -- clocks, samples, percentiles, result lines and the command
 * line, shared by every benchmark program of bench/ (handle.h: what those
 * linked with libredlock share besides).
 *
 * Every result is printed as ONE line on stdout:
 *   RESULT impl=NAME workload=NAME key=value key=value ...
 * with latencies in microseconds; the scripts bench/NAME.sh parse these lines. Anything
 * else (diagnostics) goes to stderr. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_NODES 64

/* Monotonic clock in nanoseconds. */
uint64_t bench_now_ns(void);

/* CPU time (user + system) of the whole process in microseconds. */
uint64_t bench_cpu_us(void);

/* Resident set size (VmRSS of /proc/self/status) in KiB, 0 if unknown. */
long bench_rss_kb(void);

/* Splits a comma-separated list of URIs in place into uris (at most max);
 * returns the count. */
size_t bench_split_uris(char *list, const char **uris, size_t max);

/* Parses redis://host:port or unix:///path into host/port or path. Returns
 * 0, or -1 for an unsupported form. */
int bench_parse_uri(const char *uri, char *host, size_t hostlen, int *port, char *path, size_t pathlen);

/* A preallocated array of latency samples in nanoseconds. */
typedef struct bench_samples {
    uint64_t *v;
    size_t n, cap;
} bench_samples_t;

/* Allocates room for cap samples; exits on failure. */
void bench_samples_init(bench_samples_t *s, size_t cap);
void bench_samples_free(bench_samples_t *s);
/* Adds a sample (dropped once full: callers size cap for the run). */
static inline void bench_samples_add(bench_samples_t *s, uint64_t ns) {
    if (s->n < s->cap) s->v[s->n++] = ns;
}
/* Appends every sample of src to dst (dst grows); exits on failure. */
void bench_samples_merge(bench_samples_t *dst, const bench_samples_t *src);
/* Sorts the samples and returns the q-quantile (nearest rank) in µs. */
double bench_quantile_us(bench_samples_t *s, double q);

/* Result line: bench_line_begin prints "RESULT impl=.. workload=..", then
 * any number of bench_kv_* calls, then bench_line_end. */
void bench_line_begin(const char *impl, const char *workload);
void bench_kv_str(const char *key, const char *val);
void bench_kv_u64(const char *key, uint64_t v);
void bench_kv_f(const char *key, double v);
void bench_line_end(void);

/* Prints p50/p99/p999 of s as PREFIX_p50_us=.. (s gets sorted). */
void bench_kv_quantiles(const char *prefix, bench_samples_t *s);

/* Parses a non-negative number argument or exits with a usage error. */
double bench_arg_num(const char *opt, const char *val);

/* Sleeps ns nanoseconds (ms milliseconds), the whole time even when a
 * signal interrupts it. */
void bench_sleep_ns(uint64_t ns);
void bench_sleep_ms(double ms);

/* One option of a program's command line: its flag and where its value
 * goes, by the one pointer that is set: str (the argument), list (the
 * argument, which the program may split in place: a URI list), num
 * (bench_arg_num), uns (bench_arg_num cast to unsigned), or, for a flag
 * that takes no value, set (set to 1). */
typedef struct bench_opt {
    const char *flag;
    const char **str;
    char **list;
    double *num;
    unsigned *uns;
    int *set;
} bench_opt_t;

/* Reads argv[1..argc-1] by the n options of opts, in order. "--version",
 * when version is not NULL, calls version() and exits 0 where it stands.
 * Returns 0, or -1 at the first unknown flag or a missing str or list
 * value; a number that is missing or bad exits 2 (bench_arg_num). */
int bench_parse_opts(int argc, char **argv, const bench_opt_t *opts, size_t n, void (*version)(void));

/* Prints "usage: PROG ARGS" (args: the rest of the first line and any
 * further lines, each ending in a newline) and, with_version,
 * "       PROG --version" on stderr; exits 2. */
void bench_usage(const char *prog, const char *args, int with_version);

#endif
