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

void rl_buf_consume(rl_buf_t *b, size_t n) {
    b->off += n;
    if (b->off < b->len) return;
    b->off = b->len = 0;
    if (b->cap > RL_BUF_KEEP) rl_buf_free(b); /* a burst's memory goes back once it is written */
}

void rl_buf_free(rl_buf_t *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}
