/* sbuf.c -- the simulator's growable byte buffer (see sbuf.h). */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for n more bytes at the end of b, compacting consumed bytes
 * first; aborts when out of memory. */
static void sb_room(sbuf_t *b, size_t n) {
    if (b->off && b->off == b->len) b->off = b->len = 0;
    if (b->len + n <= b->cap) return;
    if (b->off > b->cap / 2) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->len + n <= b->cap) return;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        fprintf(stderr, "sim: out of memory\n");
        abort();
    }
    b->p = p;
    b->cap = cap;
}

/* Appends n bytes (and keeps a NUL after them, not counted). */
void sb_add(sbuf_t *b, const void *d, size_t n) {
    sb_room(b, n + 1);
    if (n) memcpy(b->p + b->len, d, n);
    b->len += n;
    b->p[b->len] = '\0'; /* (not counted: text stays printable) */
}

/* Appends printf-formatted text. */
void sb_printf(sbuf_t *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_add(b, tmp, (size_t)n);
        return;
    }
    sb_room(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Drops n bytes from the front; an emptied buffer starts over. */
void sb_consume(sbuf_t *b, size_t n) {
    b->off += n;
    if (b->off >= b->len) b->off = b->len = 0;
}

/* Frees b's memory; b is empty and reusable after. NULL-safe. */
void sb_free(sbuf_t *b) {
    if (!b) return;
    free(b->p);
    b->p = NULL;
    b->len = b->cap = b->off = 0;
}
