/* handle.c -- see handle.h. */
#include "handle.h"

#include <stdio.h>
#include <stdlib.h>

void bench_options_init(redlock_options_t *opt, const char *const *uris, size_t n, uint32_t op_timeout_ms) {
    redlock_options_init(opt);
    opt->nodes = uris;
    opt->n_nodes = n;
    if (op_timeout_ms) opt->op_timeout_ms = op_timeout_ms;
    if (opt->node_down_ms < opt->op_timeout_ms) opt->node_down_ms = opt->op_timeout_ms;
}

redlock_t *bench_handle_new(const redlock_options_t *opt, const char *who) {
    char err[256];
    redlock_t *r = NULL;
    int rc = redlock_new_ex(&r, opt, err, sizeof err);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "%s: %s: %s\n", who, redlock_strerror(rc), err);
        exit(1);
    }
    return r;
}

redlock_t *bench_handle_warm(redlock_t *r, const char *prefix) {
    char warm[160];
    snprintf(warm, sizeof warm, "%s:warm:%p", prefix, (void *)r);
    redlock_lock_t *lk = NULL;
    if (redlock_try_acquire(r, warm, 1000, &lk) == REDLOCK_OK) redlock_release(r, lk);
    return r;
}

void bench_print_version(void) {
    printf("%s\n", REDLOCK_VERSION);
}
