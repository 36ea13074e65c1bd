/* cluster.c -- a Redis Cluster node's slot map (see cluster.h). */
#include "cluster.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

void rl_cluster_free(rl_cluster_t *cl) {
    if (!cl) return;
    free(cl->shard);
    free(cl->first_host);
    free(cl);
}

rl_shard_t *rl_cluster_owner(rl_cluster_t *cl, int32_t hslot) {
    if (hslot < 0 || hslot >= (int32_t)RL_SLOTS || !cl->owner[hslot]) return NULL;
    return &cl->shard[cl->owner[hslot] - 1];
}

rl_shard_t *rl_cluster_find(rl_cluster_t *cl, const char *host, int port) {
    for (size_t s = 0; s < cl->nshard; s++)
        if (cl->shard[s].c->uri.port == port && !strcmp(cl->shard[s].c->uri.host, host)) return &cl->shard[s];
    return NULL;
}

rl_shard_t *rl_cluster_add(rl_cluster_t *cl, rl_conn_t *c) {
    if (cl->nshard >= UINT16_MAX - 1) return NULL;
    rl_shard_t *grown = realloc(cl->shard, (cl->nshard + 1) * sizeof *grown);
    if (!grown) return NULL;
    cl->shard = grown;
    rl_shard_t *s = &cl->shard[cl->nshard++];
    *s = (rl_shard_t){.c = c};
    return s;
}

int rl_cluster_redirect(const char *err, unsigned *slot, char *host, size_t hn, int *port) {
    int kind = !strncmp(err, "MOVED ", 6) ? 1 : !strncmp(err, "ASK ", 4) ? 2 : 0;
    if (!kind) return 0;
    const char *p = err + (kind == 1 ? 6 : 4);
    char *end;
    unsigned long s = strtoul(p, &end, 10);
    if (end == p || *end != ' ' || s >= RL_SLOTS) return 0;
    const char *addr = end + 1, *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= hn) return 0;
    long pt = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || pt < 1 || pt > 65535) return 0;
    size_t len = (size_t)(colon - addr);
    if (addr[0] == '[' && len >= 2 && addr[len - 1] == ']') addr++, len -= 2; /* [v6]:port */
    memcpy(host, addr, len);
    host[len] = '\0';
    *slot = (unsigned)s;
    *port = (int)pt;
    return kind;
}

/* 1 when id was among s's replicas at the last map. */
static int was_replica(const rl_shard_t *s, const char *id) {
    for (uint32_t r = 0; r < s->nreplicas; r++)
        if (!strcmp(s->replica[r], id)) return 1;
    return 0;
}

/* Copies a node id from element e of a CLUSTER SLOTS node entry ("" if
 * it has none). */
static void copy_id(char *dst, const redisReply *node) {
    dst[0] = '\0';
    if (node->type != REDIS_REPLY_ARRAY || node->elements < 3) return;
    const redisReply *id = node->element[2];
    if (id->type == REDIS_REPLY_STRING && id->len <= RL_NODE_ID_LEN) memcpy(dst, id->str, id->len + 1);
}

/* 1 when e is a well formed CLUSTER SLOTS entry: start, end, primary
 * [host, port, ...], replicas. */
static int entry_ok(const redisReply *e) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) return 0;
    const redisReply *a = e->element[0], *b = e->element[1], *p = e->element[2];
    return a->type == REDIS_REPLY_INTEGER && b->type == REDIS_REPLY_INTEGER && a->integer >= 0 &&
           a->integer <= b->integer && b->integer < (long long)RL_SLOTS && p->type == REDIS_REPLY_ARRAY &&
           p->elements >= 2 && p->element[0]->type == REDIS_REPLY_STRING &&
           p->element[1]->type == REDIS_REPLY_INTEGER && p->element[1]->integer > 0 && p->element[1]->integer < 65536;
}

/* Remembers the replicas entry e lists for shard s. */
static void note_replicas(rl_shard_t *s, const redisReply *e) {
    s->nreplicas = 0;
    for (size_t r = 3; r < e->elements && s->nreplicas < RL_SHARD_REPLICAS; r++) {
        copy_id(s->replica[s->nreplicas], e->element[r]);
        if (s->replica[s->nreplicas][0]) s->nreplicas++;
    }
}

int rl_cluster_apply(rl_cluster_t *cl, const void *reply, const char *default_host, rl_member_fn member,
                     rl_moved_fn moved, void *arg, char *detail, size_t n) {
    const redisReply *rep = reply;
    if (rep->type != REDIS_REPLY_ARRAY) {
        snprintf(detail, n, "CLUSTER SLOTS: %.100s", rep->type == REDIS_REPLY_ERROR ? rep->str : "not a slot map");
        return -1;
    }
    for (size_t i = 0; i < rep->elements; i++)
        if (!entry_ok(rep->element[i])) return snprintf(detail, n, "CLUSTER SLOTS: entry %zu is malformed", i), -1;
    unsigned char covered[RL_SLOTS / 8] = {0};
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i], *p = e->element[2];
        size_t lo = (size_t)e->element[0]->integer, hi = (size_t)e->element[1]->integer;
        const char *host = p->element[0]->len && strcmp(p->element[0]->str, "?") ? p->element[0]->str : default_host;
        uint16_t before = cl->owner[lo];
        rl_shard_t *s = member(arg, host, (int)p->element[1]->integer); /* (may move cl->shard) */
        if (!s) return snprintf(detail, n, "out of memory"), -1;
        char id[RL_NODE_ID_LEN + 1];
        copy_id(id, p);
        rl_shard_t *old = before ? &cl->shard[before - 1] : NULL;
        if (old && old != s) { /* another shard took the range over: a failover when it was the old one's replica */
            int failover = id[0] && was_replica(old, id);
            cl->failovers += failover;
            if (moved) moved(arg, old, s, failover);
        }
        memcpy(s->id, id, sizeof id);
        note_replicas(s, e);
        uint16_t own = (uint16_t)(s - cl->shard + 1);
        for (size_t k = lo; k <= hi; k++) {
            cl->owner[k] = own;
            covered[k / 8] |= (unsigned char)(1u << (k % 8));
        }
    }
    for (size_t s = 0; s < cl->nshard; s++) cl->shard[s].slots = 0;
    for (size_t k = 0; k < RL_SLOTS; k++) {
        if (!(covered[k / 8] & (1u << (k % 8)))) cl->owner[k] = 0;
        if (cl->owner[k]) cl->shard[cl->owner[k] - 1].slots++;
    }
    cl->loads++;
    return 0;
}

/* Appends the range lo-hi (or lo) to v's ranges, "..." once they no
 * longer fit. */
static void add_range(rl_shard_view_t *v, size_t lo, size_t hi) {
    size_t at = strlen(v->ranges);
    char one[24];
    int n = lo == hi ? snprintf(one, sizeof one, "%s%zu", at ? "," : "", lo)
                     : snprintf(one, sizeof one, "%s%zu-%zu", at ? "," : "", lo, hi);
    if (at + (size_t)n + 4 < sizeof v->ranges)
        memcpy(v->ranges + at, one, (size_t)n + 1);
    else if (at + 4 <= sizeof v->ranges && strcmp(v->ranges + (at >= 3 ? at - 3 : 0), "..."))
        memcpy(v->ranges + at, "...", 4);
}

size_t rl_cluster_view(const rl_cluster_t *cl, rl_shard_view_t *out, size_t cap) {
    size_t n = 0;
    for (size_t s = 0; s < cl->nshard && n < cap; s++) {
        const rl_shard_t *sh = &cl->shard[s];
        if (!sh->slots) continue;
        rl_shard_view_t *v = &out[n++];
        *v = (rl_shard_view_t){.port = sh->c->uri.port,
                               .slots = sh->slots,
                               .first = -1,
                               .promoted = rl_node_of_const(sh->c)->promoted_us != 0};
        snprintf(v->host, sizeof v->host, "%s", sh->c->uri.host);
        for (size_t k = 0; k < RL_SLOTS; k++) {
            if (cl->owner[k] != s + 1) continue;
            size_t hi = k;
            while (hi + 1 < RL_SLOTS && cl->owner[hi + 1] == s + 1) hi++;
            if (v->first < 0) v->first = (int32_t)k;
            add_range(v, k, hi);
            k = hi;
        }
    }
    return n;
}
