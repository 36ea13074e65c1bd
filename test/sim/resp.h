/* resp.h -- RESP2 for the simulated nodes: replies written into an sbuf,
 * and commands (arrays of bulk strings) parsed out of a byte stream. */
#ifndef SIM_RESP_H
#define SIM_RESP_H
#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

void resp_status(sbuf_t *b, const char *s);         /* +s */
void resp_error(sbuf_t *b, const char *s);          /* -s */
void resp_int(sbuf_t *b, long long v);              /* :v */
void resp_bulk(sbuf_t *b, const char *s, size_t n); /* $n s */
void resp_str(sbuf_t *b, const char *s);            /* bulk of a C string */
void resp_nil(sbuf_t *b);                           /* $-1 */
void resp_array(sbuf_t *b, long long n);            /* *n (then n replies) */

/* One command: argc arguments, argv[i] of len[i] bytes (NUL-terminated
 * too), all in one allocation the caller frees with free(). */
typedef struct resp_cmd {
    int argc;
    size_t *len;
    char **argv;
} resp_cmd_t;

/* Parses one command from the n bytes at p. Returns the bytes it took
 * with *out set (a new command), 0 when more bytes are needed, or -1 on a
 * protocol error (not an array of bulk strings, or absurd sizes). */
long resp_parse_cmd(const char *p, size_t n, resp_cmd_t **out);

/* Makes a command from argc NUL-terminated strings (free() it). */
resp_cmd_t *resp_cmd_make(int argc, const char *const *argv, const size_t *lens);

/* Encodes a command as RESP (an array of bulk strings) onto b. */
void resp_cmd_encode(sbuf_t *b, int argc, const char *const *argv, const size_t *lens);

/* The length of the one complete reply at p (n bytes), 0 when incomplete,
 * -1 when malformed. */
long resp_reply_len(const char *p, size_t n);

#endif
