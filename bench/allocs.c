/* allocs.c -- malloc interposer that counts heap calls (see allocs.h). */
#include "allocs.h"

#include <stdatomic.h>
#include <stddef.h>

/* glibc's allocator under its exported internal names. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static atomic_int counting;
static atomic_ullong n_allocs, n_frees, n_own_allocs, n_own_frees;

static inline int on(void) {
    return atomic_load_explicit(&counting, memory_order_relaxed);
}

static inline void bump(atomic_ullong *c) {
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void bench_allocs_start(void) {
    atomic_store(&n_allocs, 0);
    atomic_store(&n_frees, 0);
    atomic_store(&n_own_allocs, 0);
    atomic_store(&n_own_frees, 0);
    atomic_store(&counting, 1);
}

bench_allocs_t bench_allocs_stop(void) {
    atomic_store(&counting, 0);
    bench_allocs_t a = {
        .allocs = atomic_load(&n_allocs),
        .frees = atomic_load(&n_frees),
        .own_allocs = atomic_load(&n_own_allocs),
        .own_frees = atomic_load(&n_own_frees),
    };
    return a;
}

/* ------------------------------------------------ process-wide interposer */

void *malloc(size_t n) {
    if (on()) bump(&n_allocs);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    if (on()) bump(&n_allocs);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    if (on()) bump(&n_allocs);
    return __libc_realloc(p, n);
}

void free(void *p) {
    if (p && on()) bump(&n_frees);
    __libc_free(p);
}

/* ------------------------------------- static-link callers (-Wl,--wrap=...) */

/* Built only into binaries linked with --wrap (BENCH_OWN_ALLOCS), where the
 * linker provides __real_malloc (= the malloc above) and friends. */
#ifdef BENCH_OWN_ALLOCS

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n) {
    if (on()) bump(&n_own_allocs);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
    if (on()) bump(&n_own_allocs);
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
    if (on()) bump(&n_own_allocs);
    return __real_realloc(p, n);
}

void __wrap_free(void *p) {
    if (p && on()) bump(&n_own_frees);
    __real_free(p);
}
#endif
