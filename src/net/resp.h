/* resp.h -- RESP2 request encoding into a caller's buffer.
 *
 * The project encodes requests itself (a dozen lines) instead of calling
 * hiredis's redisFormatCommandArgv, which mallocs every command: the
 * acquire/release hot path then makes no heap allocation. Replies are
 * decoded with hiredis's redisReader (see conn.c). */
#ifndef RL_RESP_H
#define RL_RESP_H
#include <stddef.h>

/* Encodes argc binary-safe arguments as a RESP array of bulk strings into
 * dst (cap bytes). Returns the encoded length; when it exceeds cap nothing
 * usable was written and the caller retries with a bigger buffer. */
size_t rl_resp_encode(char *dst, size_t cap, int argc, const char *const *argv, const size_t *lens);

/* An encoded command: in a fixed inline buffer, or on the heap if larger. */
typedef struct rl_cmd {
    char *data;
    size_t len;
    char inline_buf[1536];
} rl_cmd_t;

/* Encodes into c (c->data points at inline_buf or malloc'd memory).
 * Returns 0, or -1 when out of memory. Free with rl_cmd_free. */
int rl_cmd_build(rl_cmd_t *c, int argc, const char *const *argv, const size_t *lens);
void rl_cmd_free(rl_cmd_t *c);

#endif
