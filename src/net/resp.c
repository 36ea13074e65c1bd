/* resp.c -- RESP2 request encoding (see resp.h). */
#include "resp.h"

#include <stdlib.h>
#include <string.h>

/* Writes "<c><n>\r\n" at dst+at if it fits; returns the length it needs.
 * (Digits by hand: snprintf here cost about 7 % of a lock cycle's CPU.) */
static size_t put_header(char *dst, size_t cap, size_t at, char c, size_t n) {
    char tmp[32], *p = tmp + sizeof tmp;
    *--p = '\n';
    *--p = '\r';
    do {
        *--p = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    *--p = c;
    size_t k = (size_t)(tmp + sizeof tmp - p);
    if (at + k <= cap) memcpy(dst + at, p, k);
    return k;
}

size_t rl_resp_encode(char *dst, size_t cap, int argc, const char *const *argv, const size_t *lens) {
    size_t at = put_header(dst, cap, 0, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        at += put_header(dst, cap, at, '$', lens[i]);
        if (at + lens[i] + 2 <= cap) {
            memcpy(dst + at, argv[i], lens[i]);
            memcpy(dst + at + lens[i], "\r\n", 2);
        }
        at += lens[i] + 2;
    }
    return at;
}

int rl_cmd_build(rl_cmd_t *c, int argc, const char *const *argv, const size_t *lens) {
    c->data = c->inline_buf;
    c->len = rl_resp_encode(c->data, sizeof c->inline_buf, argc, argv, lens);
    if (c->len <= sizeof c->inline_buf) return 0;
    if (!(c->data = malloc(c->len))) {
        c->data = c->inline_buf;
        return -1;
    }
    rl_resp_encode(c->data, c->len, argc, argv, lens);
    return 0;
}

void rl_cmd_free(rl_cmd_t *c) {
    if (c->data != c->inline_buf) free(c->data);
    c->data = c->inline_buf;
    c->len = 0;
}
