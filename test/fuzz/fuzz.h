/* fuzz.h -- what the libFuzzer targets in test/fuzz/ share.
 *
 * FUZZ_CHECK states an invariant: when it does not hold, the target prints
 * which one (file, line, condition) and aborts, which libFuzzer reports as a
 * crash and saves the input that caused it. */
#ifndef RL_FUZZ_H
#define RL_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* libFuzzer's entry point (one input per call; nothing may persist). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
