/* test_reply.c -- replies decoded into the per-connection arena: shapes,
 * reuse without new allocations, and the caps against hostile input. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <string.h>

#include "reply.h"

static rl_arena_t A;
static redisReader *R;

static void setup(void) {
    memset(&A, 0, sizeof A);
    R = rl_reader_new(&A);
    cr_assert_not_null(R);
}

static void teardown(void) {
    redisReaderFree(R);
    rl_arena_free(&A);
}

TestSuite(reply, .init = setup, .fini = teardown);

/* Feeds s and returns the next reply (NULL if incomplete); fails on error. */
static redisReply *parse(const char *s, size_t n) {
    cr_assert_eq(redisReaderFeed(R, s, n), REDIS_OK);
    void *rep = NULL;
    cr_assert_eq(redisReaderGetReply(R, &rep), REDIS_OK, "reader error: %s", rl_reader_error(R, &A));
    return rep;
}

/* Feeds s and expects a reader error mentioning `words`. */
static void parse_fails(const char *s, size_t n, const char *words) {
    redisReaderFeed(R, s, n);
    void *rep = NULL;
    cr_assert_eq(redisReaderGetReply(R, &rep), REDIS_ERR, "'%.30s' was accepted", s);
    cr_assert(strstr(rl_reader_error(R, &A), words), "error '%s' lacks '%s'", rl_reader_error(R, &A), words);
}

Test(reply, every_resp2_type) {
    redisReply *r = parse("+OK\r\n", 5);
    cr_assert(r && r->type == REDIS_REPLY_STATUS && r->len == 2 && !strcmp(r->str, "OK"));
    rl_arena_reset(&A);
    r = parse("-ERR bad\r\n", 10);
    cr_assert(r && r->type == REDIS_REPLY_ERROR && !strcmp(r->str, "ERR bad"));
    rl_arena_reset(&A);
    r = parse(":-42\r\n", 6);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == -42);
    rl_arena_reset(&A);
    r = parse("$-1\r\n", 5);
    cr_assert(r && r->type == REDIS_REPLY_NIL);
    rl_arena_reset(&A);
    r = parse("$5\r\na\0b\r\n\r\n", 11);
    cr_assert(r && r->type == REDIS_REPLY_STRING && r->len == 5 && !memcmp(r->str, "a\0b\r\n", 5));
    rl_arena_reset(&A);
    const char *nested = "*3\r\n$-1\r\n:7\r\n*2\r\n+x\r\n$1\r\ny\r\n";
    r = parse(nested, strlen(nested));
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_NIL);
    cr_assert_eq(r->element[1]->integer, 7);
    cr_assert(r->element[2]->elements == 2 && !strcmp(r->element[2]->element[1]->str, "y"));
}

Test(reply, replies_split_across_reads_and_memory_reused) {
    const char *two = "*2\r\n$3\r\nabc\r\n:1\r\n";
    size_t n = strlen(two);
    for (size_t cut = 1; cut < n; cut++) { /* every split point */
        cr_assert_null(parse(two, cut));
        redisReply *r = parse(two + cut, n - cut);
        cr_assert(r && r->elements == 2 && !strcmp(r->element[0]->str, "abc"), "cut at %zu", cut);
        rl_arena_reset(&A);
    }
    void *first_chunk = A.head;
    for (int i = 0; i < 10000; i++) {
        redisReply *r = parse("+OK\r\n", 5);
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        rl_arena_reset(&A);
    }
    cr_assert_eq(A.head, first_chunk, "a warm arena allocates nothing new");
    cr_assert_eq(rl_arena_chunks(&A), 1);
}

Test(reply, large_reply_spans_chunks) {
    static char big[200000];
    int k = snprintf(big, sizeof big, "*%d\r\n", 3000);
    for (int i = 0; i < 3000; i++) k += snprintf(big + k, sizeof big - (size_t)k, "$10\r\n0123456789\r\n");
    redisReply *r = parse(big, (size_t)k);
    cr_assert(r && r->elements == 3000);
    for (int i = 0; i < 3000; i++) cr_assert_eq(memcmp(r->element[i]->str, "0123456789", 10), 0, "element %d", i);
}

Test(reply, hostile_array_size_is_refused_without_allocating_it) {
    parse_fails("*999999999\r\n", 12, "array size of 999999999 exceeds the limit");
}

Test(reply, oversized_bulk_string_is_refused) {
    static char big[2000000 + 32];
    int k = snprintf(big, sizeof big, "$2000000\r\n");
    memset(big + k, 'x', 2000000);
    memcpy(big + k + 2000000, "\r\n", 2);
    parse_fails(big, (size_t)k + 2000002, "bulk string length of 2000000 exceeds the limit");
}

Test(reply, malformed_input_is_a_protocol_error) {
    parse_fails("?what\r\n", 7, "Protocol error");
}

Test(reply, deep_nesting_is_refused) {
    const char *deep = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";
    parse_fails(deep, strlen(deep), "nested");
}

Test(reply, endless_nested_array_hits_the_whole_reply_cap) {
    /* every part is small (4096 elements, 4-byte integers), the whole is not:
     * only the cap on one reply's total size stops it */
    static char chunk[7 + 4096 * 4];
    memcpy(chunk, "*4096\r\n", 7);
    for (int i = 0; i < 4096; i++) memcpy(chunk + 7 + 4 * i, ":1\r\n", 4);
    redisReaderFeed(R, "*4096\r\n", 7);
    void *rep = NULL;
    int rc = REDIS_OK;
    int rounds = 0;
    for (; rounds < 4096 && rc == REDIS_OK; rounds++) {
        redisReaderFeed(R, chunk, sizeof chunk);
        rc = redisReaderGetReply(R, &rep);
        cr_assert_null(rep);
    }
    cr_assert_eq(rc, REDIS_ERR, "no cap after %d nested arrays", rounds);
    cr_assert(strstr(rl_reader_error(R, &A), "reply larger than"), "%s", rl_reader_error(R, &A));
    cr_assert_lt(rounds, 200, "the cap (8 MiB) should stop it within ~60 arrays of 4096");
    rl_arena_trim(&A);
    cr_assert_eq(rl_arena_chunks(&A), 1, "trim keeps only the first chunk");
}
