/* queue.c -- where the async handle keeps its calls (see async.h): the
 * pending list, the ready list of calls whose round was decided, the
 * timer heap of calls waiting for a wake-up time, the pool of finished
 * calls kept for reuse, and the spare rooms of calls' rounds. */
#include <stdlib.h>
#include <string.h>

#include "async.h"

/* ------------------------------------------------------------ the heap */

/* Swaps heap entries i and j. */
static void heap_swap(redlock_async_t *a, size_t i, size_t j) {
    rl_call_t *t = a->heap[i];
    a->heap[i] = a->heap[j];
    a->heap[j] = t;
    a->heap[i]->heap_at = (uint32_t)i;
    a->heap[j]->heap_at = (uint32_t)j;
}

/* Restores the heap order around entry i. */
static void heap_fix(redlock_async_t *a, size_t i) {
    while (i > 0 && a->heap[i]->u.op.wake_us < a->heap[(i - 1) / 2]->u.op.wake_us) {
        heap_swap(a, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < a->heap_n && a->heap[l]->u.op.wake_us < a->heap[m]->u.op.wake_us) m = l;
        if (l + 1 < a->heap_n && a->heap[l + 1]->u.op.wake_us < a->heap[m]->u.op.wake_us) m = l + 1;
        if (m == i) return;
        heap_swap(a, i, m);
        i = m;
    }
}

/* Adds c to wait until c->u.op.wake_us. Returns 0, or -1 out of memory. */
int rl_heap_push(redlock_async_t *a, rl_call_t *c) {
    if (a->heap_n >= RL_NOT_IN_HEAP) return -1; /* (its index would not fit) */
    if (a->heap_n == a->heap_cap) {
        size_t cap = a->heap_cap ? a->heap_cap * 2 : 64;
        rl_call_t **h = realloc(a->heap, cap * sizeof *h);
        if (!h) return -1;
        a->heap = h;
        a->heap_cap = cap;
    }
    c->heap_at = (uint32_t)a->heap_n;
    a->heap[a->heap_n++] = c;
    heap_fix(a, c->heap_at);
    return 0;
}

/* Takes c out of the heap if it is there. */
void rl_heap_remove(redlock_async_t *a, rl_call_t *c) {
    size_t i = c->heap_at;
    if (i == RL_NOT_IN_HEAP) return;
    c->heap_at = RL_NOT_IN_HEAP;
    if (i != --a->heap_n) {
        a->heap[i] = a->heap[a->heap_n];
        a->heap[i]->heap_at = (uint32_t)i;
        heap_fix(a, i);
    }
}

/* ------------------------------------------------------ the ready list */

/* Queues c to be stepped (its round is decided). */
void rl_ready_push(redlock_async_t *a, rl_call_t *c) {
    if (c->queued) return;
    c->queued = 1;
    c->rnext = NULL;
    c->rprev = a->rtail;
    if (a->rtail)
        a->rtail->rnext = c;
    else
        a->ready = c;
    a->rtail = c;
}

/* Takes c off the ready list if it is there. */
void rl_ready_remove(redlock_async_t *a, rl_call_t *c) {
    if (!c->queued) return;
    if (c->rprev)
        c->rprev->rnext = c->rnext;
    else
        a->ready = c->rnext;
    if (c->rnext)
        c->rnext->rprev = c->rprev;
    else
        a->rtail = c->rprev;
    c->queued = 0;
}

int rl_async_wait(redlock_async_t *a, rl_call_t *c, uint64_t at) {
    c->u.op.wake_us = at;
    return rl_heap_push(a, c);
}

static void room_point(const redlock_async_t *a, rl_call_t *c);

rl_call_t *rl_call_get(redlock_async_t *a) {
    rl_call_t *c = a->pool;
    if (c) {
        a->pool = c->next;
        char *name = c->name;
        size_t cap = c->name_cap;
        uint8_t *free_slots = c->free_slots;
        unsigned char *room = c->room;
        memset(c, 0, sizeof *c);
        c->name = name;
        c->name_cap = cap;
        c->free_slots = free_slots;
        if ((c->room = room)) room_point(a, c);
    } else if (!(c = calloc(1, sizeof *c))) {
        return NULL;
    }
    if (rl_call_room(a, c) < 0) {
        c->next = a->pool; /* (kept for the next call) */
        a->pool = c;
        return NULL;
    }
    c->heap_at = RL_NOT_IN_HEAP;
    c->next = a->pending;
    if (a->pending) a->pending->prev = c;
    a->pending = c;
    return c;
}

void rl_call_recycle(redlock_async_t *a, rl_call_t *c) {
    if (c->prev)
        c->prev->next = c->next;
    else if (a->pending == c)
        a->pending = c->next;
    if (c->next) c->next->prev = c->prev;
    rl_heap_remove(a, c);
    rl_ready_remove(a, c);
    c->prev = NULL;
    c->next = a->pool;
    a->pool = c;
}


/* ------------------------------------------------------------ the rooms */

/* Bytes of a room: the op's round for n nodes, and with fencing the
 * write-back's round and each node's counter (rounds stay aligned). */
static size_t room_size(const redlock_async_t *a) {
    size_t room = rl_round_size(a->ns.n);
    return a->ctx.opt.fencing ? 2 * room + a->ns.n * sizeof(uint64_t) : room;
}

/* Points c's op at the rounds in c->room (aux and seen only with fencing). */
static void room_point(const redlock_async_t *a, rl_call_t *c) {
    size_t room = rl_round_size(a->ns.n);
    c->u.op.r = (rl_round_t *)(void *)c->room;
    c->u.op.aux = a->ctx.opt.fencing ? (rl_round_t *)(void *)(c->room + room) : NULL;
    c->u.op.seen = a->ctx.opt.fencing ? (uint64_t *)(void *)(c->room + 2 * room) : NULL;
}

int rl_call_room(redlock_async_t *a, rl_call_t *c) {
    if (c->room) return 0;
    unsigned char *p = a->rooms;
    if (p) {
        memcpy(&a->rooms, p, sizeof p);
        a->rooms_n--;
    } else if (!(p = malloc(room_size(a)))) {
        return -1;
    }
    c->room = p;
    room_point(a, c);
    memset(c->u.op.r, 0, sizeof(rl_round_t)); /* no round, no votes */
    if (c->u.op.aux) {
        memset(c->u.op.aux, 0, sizeof(rl_round_t));
        memset(c->u.op.seen, 0, a->ns.n * sizeof(uint64_t));
    }
    return 0;
}

void rl_call_unroom(redlock_async_t *a, rl_call_t *c) {
    unsigned char *p = c->room;
    if (!p) return;
    rl_nodes_abandon(&a->ns, c->u.op.r); /* (its rounds are decided: a no-op) */
    if (c->u.op.aux) rl_nodes_abandon(&a->ns, c->u.op.aux);
    c->room = NULL;
    c->u.op.r = c->u.op.aux = NULL;
    c->u.op.seen = NULL;
    if (a->rooms_n >= RL_SPARE_ROOMS) {
        free(p);
        return;
    }
    memcpy(p, &a->rooms, sizeof p);
    a->rooms = p;
    a->rooms_n++;
}

void rl_rooms_free(redlock_async_t *a) {
    while (a->rooms) {
        unsigned char *p = a->rooms;
        memcpy(&a->rooms, p, sizeof p);
        free(p);
    }
    a->rooms_n = 0;
}

void rl_async_lock_add(redlock_async_t *a, redlock_lock_t *l) {
    l->registered = 1;
    l->held_prev = NULL;
    l->held_next = a->locks;
    if (a->locks) a->locks->held_prev = l;
    a->locks = l;
}

void rl_async_lock_drop(redlock_async_t *a, redlock_lock_t *l) {
    if (!l->registered) return;
    if (l->held_prev)
        l->held_prev->held_next = l->held_next;
    else
        a->locks = l->held_next;
    if (l->held_next) l->held_next->held_prev = l->held_prev;
    l->registered = 0;
}
