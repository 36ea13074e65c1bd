/* map.c -- the intrusive hash table (see map.h). */
#include "map.h"

#include <stdlib.h>
#include <string.h>

#include "token.h"

int rl_map_init(rl_map_t *m, size_t min_nb) {
    size_t nb = 8;
    while (nb < min_nb) nb *= 2;
    *m = (rl_map_t){.min_nb = nb};
    m->seed = ((uint64_t)rl_random_between(0, UINT32_MAX) << 32) | rl_random_between(0, UINT32_MAX);
    return 0;
}

void rl_map_destroy(rl_map_t *m) {
    free(m->b);
    m->b = NULL;
    m->nb = m->n = 0;
}

/* Spreads the bits of x over the whole word (a 64-bit finaliser). */
static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

uint64_t rl_map_hash(const rl_map_t *m, const void *key, size_t len) {
    const unsigned char *p = key;
    uint64_t h = m->seed ^ (len * 0x9e3779b97f4a7c15ull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix(h ^ w) + 0x9e3779b97f4a7c15ull;
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, len);
    return mix(h ^ tail ^ ((uint64_t)len << 56));
}

uint64_t rl_map_hash2(const rl_map_t *m, const void *key, size_t len, uint64_t word) {
    return mix(rl_map_hash(m, key, len) ^ mix(word + 0x632be59bd9b4e019ull));
}

/* Moves every entry into a bucket array of nb chains; keeps the old
 * array when the new one cannot be had. */
static void resize(rl_map_t *m, size_t nb) {
    rl_map_node_t **b = calloc(nb, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < m->nb; i++)
        for (rl_map_node_t *x = m->b[i], *next; x; x = next) {
            next = x->next;
            rl_map_node_t **head = &b[x->hash & (nb - 1)];
            x->next = *head;
            *head = x;
        }
    free(m->b);
    m->b = b;
    m->nb = nb;
}

rl_map_node_t *rl_map_first(const rl_map_t *m, uint64_t h) {
    if (!m->nb) return NULL;
    rl_map_node_t *x = m->b[h & (m->nb - 1)];
    while (x && x->hash != h) x = x->next;
    return x;
}

rl_map_node_t *rl_map_next(const rl_map_node_t *x) {
    uint64_t h = x->hash;
    for (x = x->next; x && x->hash != h; x = x->next) {
    }
    return (rl_map_node_t *)x;
}

void rl_map_insert(rl_map_t *m, rl_map_node_t *x, uint64_t h) {
    if (!m->nb)
        resize(m, m->min_nb);
    else if (m->n >= m->nb)
        resize(m, m->nb * 2);
    x->hash = h;
    if (!m->nb) { /* not even the first array: keep x out of reach rather than crash */
        x->next = NULL;
        return;
    }
    rl_map_node_t **head = &m->b[h & (m->nb - 1)];
    x->next = *head;
    *head = x;
    m->n++;
}

void rl_map_remove(rl_map_t *m, rl_map_node_t *x) {
    if (!m->nb) return;
    for (rl_map_node_t **p = &m->b[x->hash & (m->nb - 1)]; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            x->next = NULL;
            m->n--;
            break;
        }
    if (m->nb > m->min_nb && m->n < m->nb / 8) resize(m, m->nb / 2);
}

void rl_map_each(rl_map_t *m, void (*fn)(rl_map_node_t *x, void *arg), void *arg) {
    size_t keep = m->min_nb;
    m->min_nb = m->nb ? m->nb : keep; /* no shrinking under the walk */
    for (size_t i = 0; i < m->nb; i++)
        for (rl_map_node_t *x = m->b[i], *next; x; x = next) {
            next = x->next;
            fn(x, arg);
        }
    m->min_nb = keep;
}
