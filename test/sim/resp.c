/* resp.c -- RESP2 replies and command parsing for the simulated nodes. */
#include "resp.h"

#include <stdlib.h>
#include <string.h>

void resp_status(sbuf_t *b, const char *s) {
    sb_printf(b, "+%s\r\n", s);
}
void resp_error(sbuf_t *b, const char *s) {
    sb_printf(b, "-%s\r\n", s);
}
void resp_int(sbuf_t *b, long long v) {
    sb_printf(b, ":%lld\r\n", v);
}
void resp_nil(sbuf_t *b) {
    sb_add(b, "$-1\r\n", 5);
}
void resp_array(sbuf_t *b, long long n) {
    sb_printf(b, "*%lld\r\n", n);
}
void resp_str(sbuf_t *b, const char *s) {
    resp_bulk(b, s, strlen(s));
}

/* Appends the bulk string of the n bytes at s. */
void resp_bulk(sbuf_t *b, const char *s, size_t n) {
    sb_printf(b, "$%zu\r\n", n);
    sb_add(b, s, n);
    sb_add(b, "\r\n", 2);
}

/* Reads "<c><integer>\r\n" at p (n bytes): returns the bytes it took with
 * *v set, 0 when incomplete, -1 when malformed. */
static long read_line_int(const char *p, size_t n, char c, long long *v) {
    if (n < 1) return 0;
    if (p[0] != c) return -1;
    const char *end = memchr(p, '\r', n);
    if (!end || (size_t)(end - p) + 2 > n) return n > 64 ? -1 : 0;
    if (end[1] != '\n') return -1;
    char *stop;
    long long x = strtoll(p + 1, &stop, 10);
    if (stop != end || stop == p + 1) return -1;
    *v = x;
    return (long)(end - p) + 2;
}

/* Copies argc arguments into one allocation (the caller free()s it). */
resp_cmd_t *resp_cmd_make(int argc, const char *const *argv, const size_t *lens) {
    size_t total = sizeof(resp_cmd_t) + (size_t)argc * (sizeof(size_t) + sizeof(char *));
    for (int i = 0; i < argc; i++) total += lens[i] + 1;
    resp_cmd_t *c = malloc(total);
    if (!c) abort();
    c->argc = argc;
    c->len = (size_t *)(c + 1);
    c->argv = (char **)(c->len + argc);
    char *d = (char *)(c->argv + argc);
    for (int i = 0; i < argc; i++) {
        c->argv[i] = d;
        c->len[i] = lens[i];
        memcpy(d, argv[i], lens[i]);
        d[lens[i]] = '\0';
        d += lens[i] + 1;
    }
    return c;
}

/* Parses one array of bulk strings (see resp.h). */
long resp_parse_cmd(const char *p, size_t n, resp_cmd_t **out) {
    long long argc;
    long k = read_line_int(p, n, '*', &argc);
    if (k <= 0) return k;
    if (argc < 1 || argc > 4096) return -1;
    const char *argv[4096];
    size_t lens[4096];
    size_t at = (size_t)k;
    for (long long i = 0; i < argc; i++) {
        long long len;
        k = read_line_int(p + at, n - at, '$', &len);
        if (k <= 0) return k;
        if (len < 0 || len > (64 << 20)) return -1;
        at += (size_t)k;
        if (n - at < (size_t)len + 2) return 0;
        if (p[at + (size_t)len] != '\r' || p[at + (size_t)len + 1] != '\n') return -1;
        argv[i] = p + at;
        lens[i] = (size_t)len;
        at += (size_t)len + 2;
    }
    *out = resp_cmd_make((int)argc, argv, lens);
    return (long)at;
}

/* Appends the command as an array of bulk strings. */
void resp_cmd_encode(sbuf_t *b, int argc, const char *const *argv, const size_t *lens) {
    resp_array(b, argc);
    for (int i = 0; i < argc; i++) resp_bulk(b, argv[i], lens[i]);
}

/* The length of the complete reply at p, 0 if incomplete, -1 if malformed. */
long resp_reply_len(const char *p, size_t n) {
    if (n < 1) return 0;
    long long v;
    long k;
    switch (p[0]) {
    case '+':
    case '-':
    case ':': {
        const char *end = memchr(p, '\n', n);
        return end ? (long)(end - p) + 1 : 0;
    }
    case '$':
        k = read_line_int(p, n, '$', &v);
        if (k <= 0 || v < 0) return k;
        return n - (size_t)k < (size_t)v + 2 ? 0 : k + (long)v + 2;
    case '*':
        k = read_line_int(p, n, '*', &v);
        if (k <= 0 || v < 0) return k;
        for (long long i = 0; i < v; i++) {
            long e = resp_reply_len(p + k, n - (size_t)k);
            if (e <= 0) return e;
            k += e;
        }
        return k;
    default: return -1;
    }
}
