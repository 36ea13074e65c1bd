/* reply.c -- redisReply trees in a per-connection arena (see reply.h). */
#include "reply.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rl_chunk {
    rl_chunk_t *next;
    size_t cap;
    max_align_t data[]; /* cap bytes */
};

/* Returns n bytes (zeroed, aligned) from the arena, growing it by a chunk
 * when needed; NULL when out of memory. */
static void *arena_alloc(rl_arena_t *a, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (a->total + n > RL_REPLY_MAX_TOTAL) { /* e.g. an endless nested array: every part small, the whole not */
        snprintf(a->error, sizeof a->error, "reply larger than %u bytes", RL_REPLY_MAX_TOTAL);
        return NULL;
    }
    a->total += n;
    while (a->cur && a->used + n > a->cur->cap) { /* move on to a kept chunk */
        if (!a->cur->next) break;
        a->cur = a->cur->next;
        a->used = 0;
    }
    if (!a->cur || a->used + n > a->cur->cap) {
        size_t cap = a->cur ? a->cur->cap * 2 : 4096;
        while (cap < n) cap *= 2;
        rl_chunk_t *c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = NULL;
        c->cap = cap;
        if (a->cur) {
            c->next = a->cur->next;
            a->cur->next = c;
        } else {
            a->head = c;
        }
        a->cur = c;
        a->used = 0;
    }
    void *p = (char *)a->cur->data + a->used;
    a->used += n;
    memset(p, 0, n);
    return p;
}

/* Makes a reply of the task's type and hangs it under its parent. */
static redisReply *new_reply(const redisReadTask *t, int type) {
    redisReply *r = arena_alloc(t->privdata, sizeof *r);
    if (!r) return NULL;
    r->type = type;
    if (t->parent) {
        redisReply *parent = t->parent->obj;
        parent->element[t->idx] = r;
    }
    return r;
}

/* Refuses an object with a reason; hiredis then reports an error. */
static void *refuse(const redisReadTask *t, const char *what, size_t n, size_t cap) {
    rl_arena_t *a = t->privdata;
    snprintf(a->error, sizeof a->error, "%s of %zu exceeds the limit of %zu", what, n, cap);
    return NULL;
}

static void *create_string(const redisReadTask *t, char *str, size_t len) {
    if (len > RL_REPLY_MAX_BULK) return refuse(t, "bulk string length", len, RL_REPLY_MAX_BULK);
    char *copy = arena_alloc(t->privdata, len + 1);
    redisReply *r = copy ? new_reply(t, t->type) : NULL;
    if (!r) return NULL;
    memcpy(copy, str, len);
    r->str = copy;
    r->len = len;
    return r;
}

static void *create_array(const redisReadTask *t, int elements) {
    if (elements < 0 || (size_t)elements > RL_REPLY_MAX_ELEMENTS)
        return refuse(t, "array size", (size_t)(elements < 0 ? 0 : elements), RL_REPLY_MAX_ELEMENTS);
    redisReply **el = elements ? arena_alloc(t->privdata, (size_t)elements * sizeof *el) : NULL;
    if (elements && !el) return NULL;
    redisReply *r = new_reply(t, REDIS_REPLY_ARRAY);
    if (!r) return NULL;
    r->element = el;
    r->elements = (size_t)elements;
    return r;
}

static void *create_integer(const redisReadTask *t, long long value) {
    redisReply *r = new_reply(t, REDIS_REPLY_INTEGER);
    if (r) r->integer = value;
    return r;
}

static void *create_nil(const redisReadTask *t) {
    return new_reply(t, REDIS_REPLY_NIL);
}

static void free_object(void *obj) {
    (void)obj; /* the arena owns it */
}

static redisReplyObjectFunctions arena_functions = {create_string, create_array, create_integer, create_nil,
                                                    free_object};

struct redisReader *rl_reader_new(rl_arena_t *a) {
    redisReader *r = redisReaderCreateWithFunctions(&arena_functions);
    if (r) r->privdata = a;
    return r;
}

void rl_arena_reset(rl_arena_t *a) {
    a->cur = a->head;
    a->used = 0;
    a->total = 0;
}

void rl_arena_trim(rl_arena_t *a) {
    if (a->head) {
        for (rl_chunk_t *c = a->head->next, *next; c; c = next) {
            next = c->next;
            free(c);
        }
        a->head->next = NULL;
    }
    rl_arena_reset(a);
}

size_t rl_arena_chunks(const rl_arena_t *a) {
    size_t n = 0;
    for (const rl_chunk_t *c = a->head; c; c = c->next) n++;
    return n;
}

void rl_arena_free(rl_arena_t *a) {
    for (rl_chunk_t *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    memset(a, 0, sizeof *a);
}

const char *rl_reader_error(const struct redisReader *r, const rl_arena_t *a) {
    return a->error[0] ? a->error : r->errstr;
}
