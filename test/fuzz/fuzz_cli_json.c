/* fuzz_cli_json.c -- libFuzzer target for the redlock tool's output
 * escaping (src/cli/output.c), which prints bytes that come from outside:
 * resource names, and the error text of nodes that may be broken or
 * hostile (per-node details in `--json` reports).
 *
 * Input: any bytes, as one string.
 *  - cli_json_strn: the output is one JSON string (RFC 8259): quotes
 *    around, every control character and '"' / '\' escaped, only known
 *    escapes, and strictly well-formed UTF-8 (RFC 3629: shortest form, no
 *    surrogates, nothing above U+10FFFF), as output.c promises: "pass
 *    well-formed UTF-8 through; any other byte becomes U+FFFD". When the
 *    input is well-formed UTF-8, the string decodes back to the input.
 *  - cli_prefix: at most CLI_TOKEN_PREFIX printable ASCII characters, the
 *    input's own where they were printable.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"

/* Length of the well-formed UTF-8 sequence at s[0..n), or 0 (RFC 3629). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c == 0xe0)
        len = 3, lo = 0xa0;
    else if (c == 0xed)
        len = 3, hi = 0x9f; /* no surrogates */
    else if (c >= 0xe1 && c <= 0xef)
        len = 3;
    else if (c == 0xf0)
        len = 4, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3)
        len = 4;
    else if (c == 0xf4)
        len = 4, hi = 0x8f; /* <= U+10FFFF */
    else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    return len;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Checks that j[0..n) is one JSON string and decodes it into out (room for
 * 4 bytes per input byte); returns the decoded length. */
static size_t check_json(const unsigned char *j, size_t n, unsigned char *out) {
    FUZZ_CHECK(n >= 2 && j[0] == '"' && j[n - 1] == '"');
    size_t o = 0;
    for (size_t i = 1; i < n - 1;) {
        unsigned c = j[i];
        FUZZ_CHECK(c >= 0x20 && c != '"'); /* raw control characters and quotes are not allowed */
        if (c == '\\') {
            FUZZ_CHECK(i + 1 < n - 1);
            unsigned e = j[i + 1];
            const char *simple = strchr("\"\\/bfnrt", (int)e);
            if (e && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                out[o++] = (unsigned char)map[simple - "\"\\/bfnrt"];
                i += 2;
                continue;
            }
            FUZZ_CHECK(e == 'u' && i + 5 < n - 1);
            unsigned cp = 0;
            for (int k = 0; k < 4; k++) {
                int h = hexval(j[i + 2 + k]);
                FUZZ_CHECK(h >= 0);
                cp = cp * 16 + (unsigned)h;
            }
            FUZZ_CHECK(cp < 0xd800 || cp > 0xdfff); /* output.c never needs surrogate pairs */
            if (cp < 0x80) {
                out[o++] = (unsigned char)cp;
            } else if (cp < 0x800) {
                out[o++] = (unsigned char)(0xc0 | cp >> 6);
                out[o++] = (unsigned char)(0x80 | (cp & 0x3f));
            } else {
                out[o++] = (unsigned char)(0xe0 | cp >> 12);
                out[o++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                out[o++] = (unsigned char)(0x80 | (cp & 0x3f));
            }
            i += 6;
            continue;
        }
        size_t len = utf8_seq(j + i, n - 1 - i);
        if (!len) fprintf(stderr, "malformed UTF-8 in JSON output at byte %zu: 0x%02x\n", i, c);
        FUZZ_CHECK(len > 0);
        memcpy(out + o, j + i, len);
        o += len;
        i += len;
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *json = NULL;
    size_t jlen = 0;
    FILE *f = open_memstream(&json, &jlen);
    if (!f) return 0;
    cli_json_strn(f, (const char *)data, size);
    fclose(f);
    unsigned char *dec = malloc(4 * jlen + 4);
    if (dec) {
        size_t dlen = check_json((const unsigned char *)json, jlen, dec);
        int wellformed = 1;
        for (size_t i = 0; i < size && wellformed;) {
            size_t len = utf8_seq(data + i, size - i);
            if (!len) wellformed = 0;
            i += len;
        }
        if (wellformed) FUZZ_CHECK(dlen == size && !memcmp(dec, data, size));
        free(dec);
    }
    free(json);

    char prefix[CLI_TOKEN_PREFIX + 1];
    memset(prefix, 0x5a, sizeof prefix);
    cli_prefix(prefix, (const char *)data, size);
    size_t plen = strlen(prefix);
    FUZZ_CHECK(plen == (size < CLI_TOKEN_PREFIX ? size : CLI_TOKEN_PREFIX));
    for (size_t i = 0; i < plen; i++) {
        FUZZ_CHECK(prefix[i] >= 0x20 && prefix[i] < 0x7f);
        if (data[i] >= 0x20 && data[i] < 0x7f)
            FUZZ_CHECK(prefix[i] == (char)data[i]);
        else
            FUZZ_CHECK(prefix[i] == '?');
    }
    return 0;
}
