/* sbuf.h -- a growable byte buffer for the simulator (test/sim/): RESP
 * replies being built, bytes in flight on a simulated connection. */
#ifndef SIM_SBUF_H
#define SIM_SBUF_H
#include <stddef.h>

typedef struct sbuf {
    char *p;
    size_t len, cap, off; /* off: bytes already consumed from the front */
} sbuf_t;

/* Appends n bytes of d to b (aborts when out of memory: a test program). */
void sb_add(sbuf_t *b, const void *d, size_t n);
/* Appends printf-formatted text. */
void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops n bytes from the front (they stay until the buffer empties or compacts). */
void sb_consume(sbuf_t *b, size_t n);
/* Empties b, keeping its memory. */
static inline void sb_reset(sbuf_t *b) {
    b->len = b->off = 0;
}
/* The unconsumed bytes and how many. */
static inline const char *sb_data(const sbuf_t *b) {
    return b->p + b->off;
}
static inline size_t sb_pending(const sbuf_t *b) {
    return b->len - b->off;
}
/* Frees b's memory (b is then empty). NULL-safe. */
void sb_free(sbuf_t *b);

#endif
