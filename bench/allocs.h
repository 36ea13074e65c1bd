/* allocs.h -- heap-call counting for the benchmark binaries.
 *
 * allocs.c defines malloc, calloc, realloc and free in the executable
 * itself. The dynamic linker then binds every caller in the process to them
 * -- the benchmark, libredlock, and also the shared libraries (hiredis's
 * reply objects, libsodium, libc's own internal calls) -- and they forward to
 * glibc's allocator (__libc_malloc and friends). While counting is enabled
 * every call is counted: "total" counts.
 *
 * bench_redlock is also linked with -Wl,--wrap=malloc,... so that the calls
 * made by code in the static link (libredlock's objects) go through
 * __wrap_malloc first: "own" counts, i.e. the part libredlock itself makes
 * (the rest of the total is made inside hiredis / libsodium / libc).
 *
 * --wrap alone cannot see allocations that happen inside a shared library
 * (hiredis is linked as libhiredis.so), which is why the total comes from
 * interposition. */
#ifndef BENCH_ALLOCS_H
#define BENCH_ALLOCS_H
#include <stdint.h>

typedef struct bench_allocs {
    uint64_t allocs;     /* malloc + calloc + realloc calls, whole process */
    uint64_t frees;      /* free calls with a non-NULL pointer, whole process */
    uint64_t own_allocs; /* the same, made by code in the static link (--wrap) */
    uint64_t own_frees;
} bench_allocs_t;

/* Starts counting from zero (process-wide). */
void bench_allocs_start(void);
/* Stops counting and returns what was counted since bench_allocs_start. */
bench_allocs_t bench_allocs_stop(void);

#endif
