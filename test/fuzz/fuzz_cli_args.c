/* fuzz_cli_args.c -- libFuzzer target for the redlock tool's argument
 * parsing (src/cli/args.c), the parts without side effects beyond a usage
 * message on stderr.
 *
 * Input: words separated by NUL bytes, used twice:
 *  - each word as a duration (cli_parse_duration), compared with a
 *    reference written here from the grammar in cli.h: one part or
 *    several, each digits, an optional '.' and fraction digits and a unit
 *    h / m / s / ms, units distinct and largest first, a lone number
 *    without a unit meaning ms, every part a whole number of ms and the sum
 *    in 0..CLI_MAX_DURATION_MS; and as a number (cli_parse_double):
 *    finite and not negative when accepted; and as a semaphore's limit
 *    (cli_parse_limit), compared with a reference: decimal digits only,
 *    1..REDLOCK_MAX_PERMITS. A refusal always has words;
 *  - all words as an argv given to cli_global_option, word after word as
 *    main.c does: its result is -1, 0 or 1, it moves only forward and stays
 *    inside argv, and the node list it builds holds at most
 *    REDLOCK_MAX_NODES URIs, none empty, none with a comma or surrounding
 *    space.
 * Usage messages go to a null stream while the tool's code runs (glibc
 * lets stderr be reassigned); sanitizer reports are written to fd 2
 * directly and still show.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"
#include "redlock.h"

#define MAX_WORDS 32
#define ERR_LEN 200 /* what args.c's callers pass */

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    devnull = fopen("/dev/null", "w");
    return 0;
}

/* The ms of one unit name [u, e), or 0 when it is no unit; *rank is its
 * place (h 0, m 1, s 2, ms 3). */
static __int128 ref_unit(const char *u, const char *e, int *rank) {
    static const char *const names[] = {"h", "m", "s", "ms"};
    static const long long mult[] = {3600000, 60000, 1000, 1};
    for (int k = 0; k < 4; k++)
        if ((size_t)(e - u) == strlen(names[k]) && !strncmp(u, names[k], (size_t)(e - u))) return *rank = k, mult[k];
    return 0;
}

/* One part at *p in ms (its unit's rank in *rank; a lone bare number is ms),
 * moving *p past it; -1 when it breaks the grammar. */
static __int128 ref_part(const char **p, int first, int *rank) {
    const char *w0 = *p, *w1, *f0 = NULL, *f1 = NULL, *q = *p;
    while (isdigit((unsigned char)*q)) q++;
    w1 = q;
    if (*q == '.') {
        f0 = ++q;
        while (isdigit((unsigned char)*q)) q++;
        f1 = q;
        if (f1 == f0) return -1; /* "1." */
    }
    if (w1 == w0 && !f0) return -1; /* no digits */
    const char *u = q;
    while (isalpha((unsigned char)*q)) q++;
    __int128 mult = (u == q && !*q && first) ? (*rank = 3, 1) : ref_unit(u, q, rank);
    if (mult == 0) return -1;
    while (w0 < w1 && *w0 == '0') w0++;
    if (w1 - w0 > 20) return -1; /* far too large */
    __int128 whole = 0, frac = 0, scale = 1;
    for (const char *c = w0; c < w1; c++) whole = whole * 10 + (*c - '0');
    if (f0) {
        while (f1 > f0 && f1[-1] == '0') f1--;
        /* with k significant fraction digits, frac * mult / 10^k is whole
         * only for k <= 7 (mult = 2^7 * 3^2 * 5^5 at most) */
        if (f1 - f0 > 7) return -1;
        for (const char *c = f0; c < f1; c++) frac = frac * 10 + (*c - '0'), scale *= 10;
    }
    if ((frac * mult) % scale != 0) return -1;
    *p = q;
    return whole * mult + frac * mult / scale;
}

/* The duration grammar of cli.h, worked out with 128-bit integers. */
static int ref_duration(const char *s, int64_t *ms) {
    __int128 total = 0;
    int last = -1;
    if (!*s) return -1;
    for (const char *p = s; *p;) {
        int rank = -1;
        __int128 v = ref_part(&p, last < 0, &rank);
        if (v < 0 || rank <= last) return -1; /* bad part, or unit repeated or out of order */
        total += v, last = rank;
        if (total > CLI_MAX_DURATION_MS) return -1;
    }
    *ms = (int64_t)total;
    return 0;
}

/* The limit grammar of cli.h: digits only, a value in 1..REDLOCK_MAX_PERMITS. */
static int ref_limit(const char *s, unsigned *limit) {
    const char *p = s;
    while (*p == '0') p++;
    size_t n = strspn(p, "0123456789");
    if (!*s || s[strspn(s, "0123456789")] != '\0' || n > 2) return -1;
    unsigned v = n ? (unsigned)atoi(p) : 0;
    if (v < 1 || v > REDLOCK_MAX_PERMITS) return -1;
    *limit = v;
    return 0;
}

/* cli_parse_limit against ref_limit on one word. */
static void check_limit(const char *w) {
    char err[ERR_LEN];
    unsigned got = 0, want = 0;
    memset(err, 0x5a, sizeof err);
    int rc = cli_parse_limit(w, &got, err, sizeof err);
    int ref = ref_limit(w, &want);
    if (rc != ref || (rc == 0 && got != want))
        fprintf(stderr, "limit '%s': parser %d (%u), reference %d (%u)\n", w, rc, got, ref, want);
    FUZZ_CHECK(rc == ref);
    if (rc == 0)
        FUZZ_CHECK(got == want);
    else
        FUZZ_CHECK(rc == -1 && memchr(err, '\0', sizeof err) && err[0] != '\0');
}

static void check_word(const char *w) {
    char err[ERR_LEN];
    int64_t ms = -1, want = -1;
    memset(err, 0x5a, sizeof err);
    int rc = cli_parse_duration(w, &ms, err, sizeof err);
    int ref = ref_duration(w, &want);
    if (rc != ref || (rc == 0 && ms != want))
        fprintf(stderr, "duration '%s': parser %d (%lld ms), reference %d (%lld ms)\n", w, rc, (long long)ms, ref,
                (long long)want);
    FUZZ_CHECK(rc == ref);
    if (rc == 0) {
        FUZZ_CHECK(ms == want && ms >= 0 && ms <= CLI_MAX_DURATION_MS);
    } else {
        FUZZ_CHECK(rc == -1 && memchr(err, '\0', sizeof err) && err[0] != '\0');
    }

    double d = -1;
    memset(err, 0x5a, sizeof err);
    rc = cli_parse_double(w, &d, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(isfinite(d) && !(d < 0));
    } else {
        FUZZ_CHECK(rc == -1 && memchr(err, '\0', sizeof err) && err[0] != '\0');
    }
}

/* A node list after the options: what cli_add_nodes promises. */
static void check_nodes(const cli_nodes_t *l) {
    FUZZ_CHECK(l->n <= REDLOCK_MAX_NODES);
    for (size_t i = 0; i < l->n; i++) {
        const char *u = l->uri[i];
        size_t len = strlen(u);
        FUZZ_CHECK(len > 0 && !strchr(u, ','));
        FUZZ_CHECK(!isspace((unsigned char)u[0]) && !isspace((unsigned char)u[len - 1]));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';

    char *argv[MAX_WORDS + 1];
    int argc = 0;
    for (size_t off = 0; off <= size && argc < MAX_WORDS;) {
        argv[argc++] = buf + off;
        off += strlen(buf + off) + 1;
    }
    argv[argc] = NULL;

    for (int i = 0; i < argc; i++) check_word(argv[i]), check_limit(argv[i]);

    cli_t c;
    memset(&c, 0, sizeof c);
    c.prog = "redlock";
    redlock_options_init(&c.opt);
    FILE *saved = stderr;
    if (devnull) stderr = devnull;
    for (int i = 0; i < argc; i++) {
        int at = i;
        int r = cli_global_option(&c, argc, argv, &i);
        if (!(r >= -1 && r <= 1 && i >= at && i < argc && (r != 0 || i == at))) stderr = saved;
        FUZZ_CHECK(r >= -1 && r <= 1);
        FUZZ_CHECK(i >= at && i < argc);
        FUZZ_CHECK(r != 0 || i == at); /* not an option: nothing consumed */
        if (r < 0) break;
    }
    stderr = saved;
    check_nodes(&c.nodes);
    check_nodes(&c.next);
    cli_free_nodes(&c.nodes);
    cli_free_nodes(&c.next);
    FUZZ_CHECK(c.nodes.n == 0 && c.next.n == 0);
    free(buf);
    return 0;
}
