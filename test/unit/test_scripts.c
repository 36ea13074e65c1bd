/* test_scripts.c -- the embedded Lua scripts (src/core/scripts.c and the table
 * cmake/embed_lua.cmake generates), no server.
 *
 * Each script's SHA1 is recomputed here with a small SHA1 of our own (FIPS
 * 180-4), so EVALSHA will name the script Redis computes for EVAL.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scripts.h"

/* ---- SHA1 ------------------------------------------------------------------ */

typedef struct sha1_ctx {
    uint32_t h[5];
    uint64_t len; /* bytes so far */
    unsigned char block[64];
    size_t used; /* bytes in block */
} sha1_ctx_t;

static uint32_t rol32(uint32_t x, unsigned n) {
    return (x << n) | (x >> (32u - n));
}

static void sha1_block(sha1_ctx_t *c, const unsigned char *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & cc) | (~b & d);
            k = 0x5A827999u;
        } else if (i < 40) {
            f = b ^ cc ^ d;
            k = 0x6ED9EBA1u;
        } else if (i < 60) {
            f = (b & cc) | (b & d) | (cc & d);
            k = 0x8F1BBCDCu;
        } else {
            f = b ^ cc ^ d;
            k = 0xCA62C1D6u;
        }
        uint32_t t = rol32(a, 5) + f + e + k + w[i];
        e = d;
        d = cc;
        cc = rol32(b, 30);
        b = a;
        a = t;
    }
    c->h[0] += a;
    c->h[1] += b;
    c->h[2] += cc;
    c->h[3] += d;
    c->h[4] += e;
}

static void sha1_init(sha1_ctx_t *c) {
    static const uint32_t iv[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    memcpy(c->h, iv, sizeof iv);
    c->len = 0;
    c->used = 0;
}

static void sha1_update(sha1_ctx_t *c, const void *data, size_t n) {
    const unsigned char *p = data;
    c->len += n;
    while (n > 0) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->block + c->used, p, take);
        c->used += take;
        p += take;
        n -= take;
        if (c->used == 64) {
            sha1_block(c, c->block);
            c->used = 0;
        }
    }
}

/* Finishes c and writes 40 lowercase hex characters and a NUL into hex. */
static void sha1_final_hex(sha1_ctx_t *c, char hex[41]) {
    uint64_t bits = c->len * 8u;
    unsigned char pad = 0x80, zero = 0, lenbuf[8];
    sha1_update(c, &pad, 1);
    while (c->used != 56) sha1_update(c, &zero, 1);
    for (int i = 0; i < 8; i++) lenbuf[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_update(c, lenbuf, 8);
    for (int i = 0; i < 5; i++) snprintf(hex + 8 * i, 9, "%08x", (unsigned)c->h[i]);
}

static void sha1_hex(const void *data, size_t n, char hex[41]) {
    sha1_ctx_t c;
    sha1_init(&c);
    sha1_update(&c, data, n);
    sha1_final_hex(&c, hex);
}

/* The SHA1 itself, against the FIPS 180 / RFC 3174 vectors. */
Test(sha1, known_vectors) {
    char hex[41];
    sha1_hex("", 0, hex);
    cr_assert_str_eq(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    sha1_hex("abc", 3, hex);
    cr_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: padding spills */
    sha1_hex(two, strlen(two), hex);
    cr_assert_str_eq(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    sha1_hex("The quick brown fox jumps over the lazy dog", 43, hex);
    cr_assert_str_eq(hex, "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
    /* One million 'a', fed in uneven pieces. */
    sha1_ctx_t c;
    sha1_init(&c);
    char a[1000];
    memset(a, 'a', sizeof a);
    size_t left = 1000000, step = 1;
    while (left > 0) {
        size_t n = step < left ? step : left;
        sha1_update(&c, a, n);
        left -= n;
        step = step % 997 + 1;
    }
    sha1_final_hex(&c, hex);
    cr_assert_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

/* ---- the embedded scripts ---------------------------------------------------- */

static int is_lower_hex40(const char *s) {
    if (!s || strlen(s) != 40) return 0;
    for (int i = 0; i < 40; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

static void check_script(const char *name) {
    const rl_script_t *s = rl_script_find(name);
    cr_assert_not_null(s, "script '%s' not embedded", name);
    cr_assert_str_eq(s->name, name);
    cr_assert_not_null(s->text);
    cr_assert_gt(s->len, 0u, "%s: empty", name);
    cr_assert_eq(strlen(s->text), s->len, "%s: text is %zu bytes to its NUL, len says %zu", name, strlen(s->text),
                 s->len);
    cr_assert(is_lower_hex40(s->sha1), "%s: sha1 '%s' is not 40 lowercase hex chars", name, s->sha1 ? s->sha1 : "");
    char want[41];
    sha1_hex(s->text, s->len, want);
    cr_assert_str_eq(s->sha1, want, "%s: embedded sha1 %s, text hashes to %s", name, s->sha1, want);
    cr_assert_not_null(strstr(s->text, "redis.call"), "%s: does not look like a Redis script", name);
}

Test(scripts, release_is_embedded_with_its_sha1) {
    check_script("release");
    const rl_script_t *s = rl_script_find("release");
    cr_assert_not_null(strstr(s->text, "DEL"));
}

Test(scripts, extend_is_embedded_with_its_sha1) {
    check_script("extend");
    const rl_script_t *s = rl_script_find("extend");
    cr_assert_not_null(strstr(s->text, "PEXPIRE"));
}

Test(scripts, every_table_entry_is_well_formed) {
    size_t n = 0;
    for (const rl_script_t *s = rl_scripts; s->name; s++, n++) {
        check_script(s->name);
        cr_assert_eq(rl_script_find(s->name), s, "%s: find returns another entry", s->name);
        for (const rl_script_t *t = rl_scripts; t != s; t++) {
            cr_assert_str_neq(t->name, s->name, "two scripts named %s", s->name);
            cr_assert_str_neq(t->sha1, s->sha1, "%s and %s share a sha1", t->name, s->name);
        }
    }
    cr_assert_geq(n, 2u);
}

/* The granting scripts, each with its guarded twin: the membership guard's
 * prologue (lua/guard/membership.lua), then the script's own text. */
Test(scripts, granting_scripts_have_guarded_twins_and_releases_none) {
    static const char *const granting[] = {"acquire",        "acquire_multi", "acquire_wait", "acquire_permit",
                                           "acquire_shared", "extend",        "extend_multi", "extend_shared"};
    static const char *const others[] = {"release",    "release_multi", "release_permit", "release_shared", "fence_set",
                                         "fenced_set", "status",        "membership_set", "line_leave"};
    for (size_t i = 0; i < sizeof granting / sizeof granting[0]; i++) {
        const rl_script_t *s = rl_script_find(granting[i]), *g = rl_script_guarded(s);
        char name[64];
        snprintf(name, sizeof name, "%s_guarded", granting[i]);
        cr_assert_not_null(g, "%s has no guarded twin", granting[i]);
        cr_assert_eq(g, rl_script_find(name), "%s's twin is not %s", granting[i], name);
        cr_assert_null(rl_script_guarded(g), "a guarded twin has a twin");
        cr_assert_gt(g->len, s->len);
        cr_assert_eq(memcmp(g->text + g->len - s->len, s->text, s->len), 0, "%s does not end with %s's text", name,
                     granting[i]);
        cr_assert_not_null(strstr(g->text, "table.remove(ARGV, 1)"), "%s takes no fingerprint off ARGV", name);
        cr_assert(strstr(g->text, "redlock:membership") < g->text + g->len - s->len, "%s checks after the body", name);
    }
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        cr_assert_null(rl_script_guarded(rl_script_find(others[i])), "%s is guarded", others[i]);
    cr_assert_null(rl_script_guarded(NULL));
}

Test(scripts, unknown_name_is_null) {
    cr_assert_null(rl_script_find("nope"));
    cr_assert_null(rl_script_find(""));
    cr_assert_null(rl_script_find("Release"));
    cr_assert_null(rl_script_find("release.lua"));
    cr_assert_null(rl_script_find("releas"));
}

/* Reads a whole file; returns a malloc'd buffer and its length, or NULL. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

Test(scripts, embedded_text_matches_lua_directory) {
    /* lua/ sits two levels above this file. CMake passes absolute source
     * paths; a direct compile from the project root gives a relative one. */
    const char *names[] = {"release", "extend"};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/../../lua/%s.lua", dir, names[i]);
        size_t len = 0;
        char *text = read_file(path, &len);
        if (!text) cr_skip_test("cannot open %s (run from the project root or the CMake build)", path);
        const rl_script_t *s = rl_script_find(names[i]);
        cr_assert_not_null(s);
        cr_assert_eq(s->len, len, "%s: embedded %zu bytes, %s has %zu", names[i], s->len, path, len);
        cr_assert_eq(memcmp(s->text, text, len), 0, "%s: embedded text differs from %s", names[i], path);
        free(text);
    }
}
