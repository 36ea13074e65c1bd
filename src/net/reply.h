/* reply.h -- hiredis reply objects built in a per-connection arena.
 *
 * The engine decodes with hiredis's redisReader, but with its own object
 * functions: replies are ordinary redisReply trees carved from an arena
 * that is reset after each top-level reply is handled, so a warm
 * connection makes no heap allocation per reply. The same functions bound
 * what a broken or hostile server can make us hold: bulk strings, arrays
 * and unparsed input each have a cap, and going over one is a protocol
 * error with words that say which. */
#ifndef RL_REPLY_H
#define RL_REPLY_H
#include <stddef.h>

struct redisReader;

#define RL_REPLY_MAX_BULK (1u << 20)    /* bytes in one bulk string */
#define RL_REPLY_MAX_ELEMENTS 4096      /* elements in one array */
#define RL_REPLY_MAX_PENDING (4u << 20) /* unparsed input buffered */
#define RL_REPLY_MAX_TOTAL (8u << 20)   /* arena bytes for one reply, all of its parts */

typedef struct rl_chunk rl_chunk_t;

typedef struct rl_arena {
    rl_chunk_t *head, *cur; /* chunks are kept and reused */
    size_t used;            /* bytes used in cur */
    size_t total;           /* bytes handed out since the last reset */
    char error[96];         /* why the last object was refused */
} rl_arena_t;

/* Makes a reader whose replies live in a (zeroed) arena. NULL if out of memory. */
struct redisReader *rl_reader_new(rl_arena_t *a);

/* Forgets every reply built so far (keeps the memory). */
void rl_arena_reset(rl_arena_t *a);

/* Forgets every reply and frees all chunks but the first (on close: one
 * huge reply must not keep its memory for the connection's lifetime). */
void rl_arena_trim(rl_arena_t *a);

/* Chunks the arena holds (tests check that a warm arena stops growing). */
size_t rl_arena_chunks(const rl_arena_t *a);

/* Frees the arena's memory. */
void rl_arena_free(rl_arena_t *a);

/* Returns the reader's error in words, preferring the arena's reason for a
 * refused object ("array of N elements exceeds ..."). */
const char *rl_reader_error(const struct redisReader *r, const rl_arena_t *a);

#endif
