/* handle.h -- what the benchmark programs linked with libredlock share:
 * their options over the bench's nodes and a handle made from them (floor,
 * which drives hiredis by hand, does without). */
#ifndef BENCH_HANDLE_H
#define BENCH_HANDLE_H
#include <stddef.h>
#include <stdint.h>

#include <redlock.h>

/* Fills opt with the library's defaults over the n nodes of uris (which
 * must outlive the handles made from opt); op_timeout_ms 0 keeps the
 * default, any other also raises node_down_ms to it. */
void bench_options_init(redlock_options_t *opt, const char *const *uris, size_t n, uint32_t op_timeout_ms);

/* A handle made from opt; when the library refuses, prints
 * "WHO: RC: MESSAGE" on stderr and exits 1. The caller frees it. */
redlock_t *bench_handle_new(const redlock_options_t *opt, const char *who);

/* Prints the library's version (REDLOCK_VERSION) and a newline on stdout:
 * what --version prints. */
void bench_print_version(void);

/* Connects r to every node and loads the scripts before a clock starts:
 * one acquire and release of "PREFIX:warm:ADDRESS-OF-r". Returns r. */
redlock_t *bench_handle_warm(redlock_t *r, const char *prefix);

#endif
