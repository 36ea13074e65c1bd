/* buf.c -- growable byte buffer (see buf.h). */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

int rl_buf_append(rl_buf_t *b, const void *p, size_t n) {
    if (!n) return 0; /* (p may then be the NULL data of an empty buffer) */
    if (b->off && b->off == b->len) b->off = b->len = 0;
    if (b->len + n > b->cap) {
        if (b->off) { /* slide the unconsumed tail to the front first */
            memmove(b->data, b->data + b->off, b->len - b->off);
            b->len -= b->off;
            b->off = 0;
        }
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 1024;
            while (cap < b->len + n) cap *= 2;
            char *d = realloc(b->data, cap);
            if (!d) return -1;
            b->data = d;
            b->cap = cap;
        }
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

/* Moves b's unconsumed bytes to the front and gives back the memory
 * beyond twice them (at least RL_BUF_KEEP kept); a failed realloc keeps
 * the larger block. */
static void shrink(rl_buf_t *b) {
    size_t left = b->len - b->off, cap = RL_BUF_KEEP;
    memmove(b->data, b->data + b->off, left);
    b->len = left;
    b->off = 0;
    while (cap < 2 * left) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return;
    b->data = d;
    b->cap = cap;
}

void rl_buf_consume(rl_buf_t *b, size_t n) {
    b->off += n;
    if (b->off < b->len) {
        /* a buffer that a steady flow never empties still gives a burst's
         * memory back, once what is left fills an eighth of it */
        if (b->cap > RL_BUF_KEEP && (b->len - b->off) * 8 < b->cap) shrink(b);
        return;
    }
    b->off = b->len = 0;
    if (b->cap > RL_BUF_KEEP) rl_buf_free(b); /* a burst's memory goes back once it is written */
}

void rl_buf_free(rl_buf_t *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}
