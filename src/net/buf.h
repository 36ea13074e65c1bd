/* buf.h -- a growable byte buffer with a read offset (pending output). */
#ifndef RL_BUF_H
#define RL_BUF_H
#include <stddef.h>

typedef struct rl_buf {
    char *data;
    size_t len; /* bytes stored */
    size_t off; /* bytes already consumed from the front */
    size_t cap;
} rl_buf_t;

/* Appends n bytes; returns 0, or -1 when out of memory (b unchanged). */
int rl_buf_append(rl_buf_t *b, const void *p, size_t n);

/* A buffer keeps at most this much memory once a burst is written
 * (doc/design.md, "Cost flat in locks and waiters": a burst of thousands
 * of commands does not stay allocated). */
#define RL_BUF_KEEP 65536u

/* Marks n more bytes as consumed; resets to empty when all are (and
 * frees the memory when it grew beyond RL_BUF_KEEP); a buffer grown
 * beyond RL_BUF_KEEP whose unconsumed bytes fill less than an eighth of it
 * shrinks to twice them (at least RL_BUF_KEEP). */
void rl_buf_consume(rl_buf_t *b, size_t n);

/* Bytes appended but not yet consumed. */
static inline size_t rl_buf_pending(const rl_buf_t *b) {
    return b->len - b->off;
}

/* Drops the contents, keeps the memory. */
static inline void rl_buf_reset(rl_buf_t *b) {
    b->len = b->off = 0;
}

/* Frees the memory; b is empty and reusable afterwards. */
void rl_buf_free(rl_buf_t *b);

#endif
