/* fuzz_reply.c -- libFuzzer target for a node's reply stream: the arena
 * reader (src/net/reply.c) and the vote classifiers (src/core/round.c),
 * used the way node_readable / handle_reply (src/core/nodeset.c) use them.
 *
 * Input: one control byte, then the bytes a node sends. The control byte
 * cuts the stream into pieces, as reads from a socket would: 0 feeds it
 * whole, k > 0 in pieces of 1..k bytes (lengths from a generator seeded by
 * k). Each piece is fed to two readers:
 *  - the one under test: rl_reader_new, replies built in an rl_arena_t that
 *    is reset after every reply, as the engine does;
 *  - a reference: the same hiredis parser with plain heap objects and the
 *    same caps (RL_REPLY_MAX_BULK, RL_REPLY_MAX_ELEMENTS), written here.
 * After each piece both give their complete replies, which must be equal
 * (type, length, bytes, integer, elements, recursively), with every string
 * NUL-terminated. Each reply goes through rl_classify_set, rl_classify_int
 * and rl_classify_any: the vote is YES, NO or ERROR as the reply's type and
 * value say, an ERROR has a reason code (AUTH for NOAUTH / WRONGPASS /
 * NOPERM) and the node's words, NUL-terminated within the 128-byte detail.
 * Both readers must fail at the same point; then rl_reader_error must give
 * words. The arena must not grow out of proportion to the input.
 */
#include <hiredis/hiredis.h>
#include <string.h>

#include "round.h"
#include "fuzz.h"
#include "redlock.h"
#include "reply.h"

#define DETAIL_LEN 128 /* the engine's detail buffer (handle_reply) */
#define MAX_DEPTH 9    /* hiredis 0.14 builds arrays in 8 levels (rstack[9]): leaves at depth <= 8 */

/* ------------------------------------------------------ reference reader */

typedef struct ref_state {
    int refused; /* a cap refused an object */
} ref_state_t;

static void ref_free(void *obj) {
    redisReply *r = obj;
    if (!r) return;
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) ref_free(r->element[i]);
        free(r->element);
    } else {
        free(r->str);
    }
    free(r);
}

static redisReply *ref_new(const redisReadTask *t, int type) {
    redisReply *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->type = type;
    if (t->parent) {
        redisReply *parent = t->parent->obj;
        FUZZ_CHECK(parent->type == REDIS_REPLY_ARRAY && (size_t)t->idx < parent->elements);
        parent->element[t->idx] = r;
    }
    return r;
}

static void *ref_string(const redisReadTask *t, char *str, size_t len) {
    ref_state_t *st = t->privdata;
    if (len > RL_REPLY_MAX_BULK) {
        st->refused = 1;
        return NULL;
    }
    char *copy = malloc(len + 1);
    if (!copy) return NULL;
    redisReply *r = ref_new(t, t->type);
    if (!r) {
        free(copy);
        return NULL;
    }
    memcpy(copy, str, len);
    copy[len] = '\0';
    r->str = copy;
    r->len = len;
    return r;
}

static void *ref_array(const redisReadTask *t, int elements) {
    ref_state_t *st = t->privdata;
    if (elements < 0 || elements > (int)RL_REPLY_MAX_ELEMENTS) {
        st->refused = 1;
        return NULL;
    }
    redisReply **el = elements ? calloc((size_t)elements, sizeof *el) : NULL;
    if (elements && !el) return NULL;
    redisReply *r = ref_new(t, REDIS_REPLY_ARRAY);
    if (!r) {
        free(el);
        return NULL;
    }
    r->element = el;
    r->elements = (size_t)elements;
    return r;
}

static void *ref_integer(const redisReadTask *t, long long value) {
    redisReply *r = ref_new(t, REDIS_REPLY_INTEGER);
    if (r) r->integer = value;
    return r;
}

static void *ref_nil(const redisReadTask *t) {
    return ref_new(t, REDIS_REPLY_NIL);
}

static redisReplyObjectFunctions ref_functions = {ref_string, ref_array, ref_integer, ref_nil, ref_free};

/* ------------------------------------------------------------- checks */

/* a (from the arena) and b (reference) are the same reply, and a is well formed. */
static void same_reply(const redisReply *a, const redisReply *b, int depth) {
    FUZZ_CHECK(a && b);
    FUZZ_CHECK(depth < MAX_DEPTH);
    FUZZ_CHECK(a->type == b->type);
    switch (a->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        FUZZ_CHECK(a->str && a->len == b->len && a->len <= RL_REPLY_MAX_BULK);
        FUZZ_CHECK(!memcmp(a->str, b->str, a->len) && a->str[a->len] == '\0');
        break;
    case REDIS_REPLY_INTEGER: FUZZ_CHECK(a->integer == b->integer); break;
    case REDIS_REPLY_NIL: break;
    case REDIS_REPLY_ARRAY:
        FUZZ_CHECK(a->elements == b->elements && a->elements <= RL_REPLY_MAX_ELEMENTS);
        FUZZ_CHECK(a->elements == 0 || a->element);
        for (size_t i = 0; i < a->elements; i++) same_reply(a->element[i], b->element[i], depth + 1);
        break;
    default: FUZZ_CHECK(!"unknown reply type");
    }
}

/* What the classifier must say about rep: 1 YES, 0 NO, -1 ERROR. */
static int expected_vote(rl_classify_fn fn, const redisReply *rep) {
    if (fn == rl_classify_set) {
        if (rep->type == REDIS_REPLY_STATUS && rep->len == 2 && !memcmp(rep->str, "OK", 2)) return 1;
        if (rep->type == REDIS_REPLY_NIL) return 0;
        return -1;
    }
    if (fn == rl_classify_int) {
        if (rep->type == REDIS_REPLY_INTEGER && (rep->integer == 0 || rep->integer == 1)) return (int)rep->integer;
        return -1;
    }
    return rep->type == REDIS_REPLY_ERROR ? -1 : 1;
}

/* One classifier on one reply, with the engine's buffers (handle_reply). */
static void check_classify(rl_classify_fn fn, const redisReply *rep) {
    int err = REDLOCK_OK;
    char detail[DETAIL_LEN] = "";
    memset(detail + 1, 0x5a, sizeof detail - 1); /* no NUL but the first, so a missing one shows */
    redlock_vote_t v = fn(rep, &err, detail, sizeof detail);
    /* the membership guard's refusal (an error reply led by MEMBERSHIP) is a vote of its own kind */
    int guard = rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "MEMBERSHIP", 10);
    FUZZ_CHECK(guard == (v == REDLOCK_VOTE_MEMBERSHIP));
    FUZZ_CHECK(guard == (err == REDLOCK_ERR_MEMBERSHIP));
    if (guard) v = REDLOCK_VOTE_ERROR; /* (otherwise checked as an error vote) */
    FUZZ_CHECK(v == REDLOCK_VOTE_YES || v == REDLOCK_VOTE_NO || v == REDLOCK_VOTE_ERROR);
    int want = expected_vote(fn, rep);
    FUZZ_CHECK(v == (want == 1 ? REDLOCK_VOTE_YES : want == 0 ? REDLOCK_VOTE_NO : REDLOCK_VOTE_ERROR));
    FUZZ_CHECK(memchr(detail, '\0', sizeof detail));
    if (v != REDLOCK_VOTE_ERROR) {
        FUZZ_CHECK(err == REDLOCK_OK && detail[0] == '\0');
        return;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        /* the node's own words, at most 120 bytes of them */
        FUZZ_CHECK(err == rl_error_code(rep->str));
        FUZZ_CHECK(err == REDLOCK_ERR_AUTH || err == REDLOCK_ERR_SERVER || err == REDLOCK_ERR_MEMBERSHIP);
        size_t n = strnlen(rep->str, rep->len > 120 ? 120 : rep->len);
        if (n == 0) /* an empty error text is explained in words, never left blank */
            FUZZ_CHECK(!strcmp(detail, "error reply with no text"));
        else
            FUZZ_CHECK(strlen(detail) == n && !memcmp(detail, rep->str, n));
        if (!strncmp(rep->str, "NOAUTH", 6) || !strncmp(rep->str, "WRONGPASS", 9) || !strncmp(rep->str, "NOPERM", 6))
            FUZZ_CHECK(err == REDLOCK_ERR_AUTH);
    } else {
        FUZZ_CHECK(err == REDLOCK_ERR_IO && detail[0] != '\0');
    }
}

/* ---------------------------------------------------------- the stream */

/* Piece lengths: 1..max from a small generator (xorshift32). */
static size_t next_piece(uint32_t *state, size_t max) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return 1 + x % max;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned ctl = data[0];
    const char *stream = (const char *)data + 1;
    size_t len = size - 1;

    rl_arena_t arena;
    memset(&arena, 0, sizeof arena);
    ref_state_t st = {0};
    redisReader *rd = rl_reader_new(&arena);
    redisReader *ref = redisReaderCreateWithFunctions(&ref_functions);
    if (!rd || !ref) {
        if (rd) redisReaderFree(rd);
        if (ref) redisReaderFree(ref);
        rl_arena_free(&arena);
        return 0;
    }
    ref->privdata = &st;

    uint32_t gen = 0x9e3779b9u ^ ctl;
    size_t off = 0, fed = 0;
    int failed = 0;
    while (off < len && !failed) {
        size_t n = ctl ? next_piece(&gen, ctl) : len;
        if (n > len - off) n = len - off;
        int fa = redisReaderFeed(rd, stream + off, n), fb = redisReaderFeed(ref, stream + off, n);
        FUZZ_CHECK(fa == REDIS_OK && fb == REDIS_OK);
        off += n;
        fed += n;
        /* the engine's cap on unparsed input (rl_conn_read) */
        if (rd->len - rd->pos > RL_REPLY_MAX_PENDING) break;

        for (;;) {
            void *a = NULL, *b = NULL;
            int ra = redisReaderGetReply(rd, &a), rb = redisReaderGetReply(ref, &b);
            FUZZ_CHECK(ra == rb);
            if (ra != REDIS_OK) {
                FUZZ_CHECK(!a && !b);
                const char *why = rl_reader_error(rd, &arena);
                FUZZ_CHECK(why && why[0] != '\0' && memchr(why, '\0', 128));
                if (st.refused) /* a cap: the arena's words say which */
                    FUZZ_CHECK(arena.error[0] != '\0' && strstr(why, "exceeds the limit"));
                else
                    FUZZ_CHECK(arena.error[0] == '\0' && !strcmp(why, ref->errstr));
                failed = 1;
                break;
            }
            FUZZ_CHECK(!a == !b);
            if (!a) break;
            same_reply(a, b, 0);
            check_classify(rl_classify_set, a);
            check_classify(rl_classify_int, a);
            check_classify(rl_classify_any, a);
            ref_free(b);
            rl_arena_reset(&arena); /* as node_readable does after each reply */
        }
        /* Memory in proportion to the input: chunks are reused after each
         * reset and each new one is at least twice the one before, so the
         * newest holds at least 4 KiB << (chunks - 1), and it is only made
         * when one reply needs it. A reply needs at most ~16 bytes per byte
         * read, plus 8 arrays in progress of RL_REPLY_MAX_ELEMENTS pointers. */
        size_t chunks = rl_arena_chunks(&arena);
        FUZZ_CHECK(chunks < 40);
        if (chunks) {
            size_t newest = (size_t)4096 << (chunks - 1);
            FUZZ_CHECK(newest <= 4 * (16 * fed + 8 * RL_REPLY_MAX_ELEMENTS * sizeof(void *) + 4096));
        }
    }
    redisReaderFree(rd);
    redisReaderFree(ref);
    rl_arena_free(&arena);
    return 0;
}
