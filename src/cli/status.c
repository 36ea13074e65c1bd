/* status.c -- `redlock status RESOURCE`: what every node holds for the
 * resource, of all three kinds of lock, in one round (lua/status.lua): the
 * resource key itself (a writer's or a mutex holder's string, or the
 * readers' hash), the writer-waiting mark and the permit slots
 * "<resource>:permit:<i>" (the first --limit of them, else all 64: the
 * limit is stored nowhere). The holders are then matched across nodes and
 * each one judged against the quorum. Only the first 8 characters of a
 * value are ever shown. */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "blocking.h"

enum { KIND_EXCLUSIVE, KIND_SHARED, KIND_SLOT };

#define NOT_HELD (-3) /* a holder's PTTL on a node that does not hold it */

/* One holder as one node sees it. */
typedef struct entry {
    int kind;    /* KIND_* */
    int slot;    /* KIND_SLOT: the slot, else -1 */
    char *value; /* malloc'd copy (compared across nodes, never printed whole) */
    size_t len;
    long long pttl; /* ms left on that node, -1 no expiry */
} entry_t;

typedef struct node_status {
    int answered;        /* the script's reply arrived */
    int exists;          /* the resource key exists, of any type */
    char type[16];       /* its type: "none", "string", "hash" or another */
    long long pttl;      /* the resource key's: -2 no key, -1 no expiry */
    long long readers;   /* live readers in the hash */
    long long mark_pttl; /* the writer-waiting mark's, -2 none */
    entry_t *entries;    /* what the node holds: the string, readers, slots */
    size_t n_entries;
} node_status_t;

/* A holder matched across nodes: where it is held and for how long. */
typedef struct holder {
    const entry_t *e;                  /* the first node's entry (owns nothing) */
    size_t nodes;                      /* how many nodes hold it */
    long long pttl[REDLOCK_MAX_NODES]; /* per node, NOT_HELD where it is not */
} holder_t;

typedef struct status_ctx {
    node_status_t nodes[REDLOCK_MAX_NODES];
    holder_t *holders; /* malloc'd by collect_holders */
    size_t n_holders;
    int oom;
} status_ctx_t;

/* ------------------------------------------------------------ the reply */

/* The integer at r, or dflt when r is not one. */
static long long int_or(const redisReply *r, long long dflt) {
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : dflt;
}

/* Appends one entry (a copy of the n bytes at v) to ns. Returns 0, or -1
 * when out of memory. ns owns the copies (free_nodes frees them). */
static int add_entry(node_status_t *ns, int kind, int slot, const char *v, size_t n, long long pttl) {
    entry_t *grown = realloc(ns->entries, (ns->n_entries + 1) * sizeof *grown);
    if (!grown) return -1;
    ns->entries = grown;
    entry_t *e = &grown[ns->n_entries];
    if (!(e->value = malloc(n + 1))) return -1;
    memcpy(e->value, v, n);
    e->value[n] = '\0';
    e->len = n;
    e->kind = kind;
    e->slot = slot;
    e->pttl = pttl;
    ns->n_entries++;
    return 0;
}

/* The readers of one node's reply: { token, ms left, ... }. Returns 0 or -1. */
static int add_readers(node_status_t *ns, const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY) return 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *t = r->element[i];
        if (t->type == REDIS_REPLY_STRING &&
            add_entry(ns, KIND_SHARED, -1, t->str, t->len, int_or(r->element[i + 1], -1)))
            return -1;
    }
    return 0;
}

/* The held slots of one node's reply: { slot, value, PTTL, ... }. Returns 0 or -1. */
static int add_slots(node_status_t *ns, const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY) return 0;
    for (size_t i = 0; i + 2 < r->elements; i += 3) {
        long long slot = int_or(r->element[i], -1);
        const redisReply *v = r->element[i + 1];
        if (slot < 0 || slot >= REDLOCK_MAX_PERMITS || v->type != REDIS_REPLY_STRING) continue;
        if (add_entry(ns, KIND_SLOT, (int)slot, v->str, v->len, int_or(r->element[i + 2], -1))) return -1;
    }
    return 0;
}

/* on_reply, under the engine's lock: copies what it needs, nothing more.
 * The reply is status.lua's { value, PTTL, type, readers, live, mark, slots }. */
static void on_reply(void *arg, size_t node, const void *reply) {
    status_ctx_t *ctx = arg;
    const redisReply *r = reply;
    if (node >= REDLOCK_MAX_NODES || r->type != REDIS_REPLY_ARRAY || r->elements < 7) return;
    node_status_t *ns = &ctx->nodes[node];
    const redisReply *v = r->element[0], *type = r->element[2];
    ns->answered = 1;
    ns->pttl = int_or(r->element[1], -2);
    snprintf(ns->type, sizeof ns->type, "%.*s", type->type == REDIS_REPLY_STRING ? (int)type->len : 1,
             type->type == REDIS_REPLY_STRING ? type->str : "?");
    ns->exists = strcmp(ns->type, "none") != 0;
    ns->readers = int_or(r->element[4], 0);
    ns->mark_pttl = int_or(r->element[5], -2);
    if (v->type == REDIS_REPLY_STRING && add_entry(ns, KIND_EXCLUSIVE, -1, v->str, v->len, ns->pttl)) ctx->oom = 1;
    if (add_readers(ns, r->element[3]) || add_slots(ns, r->element[6])) ctx->oom = 1;
}

/* The string value a node holds in the resource key, or NULL. */
static const entry_t *string_of(const node_status_t *ns) {
    return ns->n_entries && ns->entries[0].kind == KIND_EXCLUSIVE ? &ns->entries[0] : NULL;
}

/* ------------------------------------------------------------ matching */

static int same_holder(const entry_t *a, const entry_t *b) {
    return a->kind == b->kind && a->slot == b->slot && a->len == b->len && !memcmp(a->value, b->value, a->len);
}

/* The holder matching e, appended (with NOT_HELD everywhere) when new.
 * Returns it, or NULL when out of memory. */
static holder_t *holder_for(status_ctx_t *ctx, const entry_t *e, size_t *cap) {
    for (size_t h = 0; h < ctx->n_holders; h++)
        if (same_holder(ctx->holders[h].e, e)) return &ctx->holders[h];
    if (ctx->n_holders == *cap) {
        size_t n = *cap ? *cap * 2 : 8;
        holder_t *grown = realloc(ctx->holders, n * sizeof *grown);
        if (!grown) return NULL;
        ctx->holders = grown;
        *cap = n;
    }
    holder_t *h = &ctx->holders[ctx->n_holders++];
    h->e = e;
    h->nodes = 0;
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++) h->pttl[i] = NOT_HELD;
    return h;
}

/* Builds ctx->holders from every node's entries, in the order first seen
 * (node 0's string, readers, slots first). Returns 0, or -1 when out of
 * memory. The holders point into the nodes' entries. */
static int collect_holders(status_ctx_t *ctx, size_t n_nodes) {
    size_t cap = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        const node_status_t *ns = &ctx->nodes[i];
        for (size_t k = 0; k < ns->n_entries; k++) {
            holder_t *h = holder_for(ctx, &ns->entries[k], &cap);
            if (!h) return -1;
            if (h->pttl[i] == NOT_HELD) h->nodes++;
            h->pttl[i] = ns->entries[k].pttl;
        }
    }
    return 0;
}

/* The earliest expiry of h over its nodes (-1: none expires). */
static long long earliest(const holder_t *h, size_t n_nodes) {
    long long least = -1;
    for (size_t i = 0; i < n_nodes; i++)
        if (h->pttl[i] >= 0 && (least < 0 || h->pttl[i] < least)) least = h->pttl[i];
    return least;
}

/* Frees every node's entries and the holders. */
static void free_ctx(status_ctx_t *ctx) {
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++) {
        for (size_t k = 0; k < ctx->nodes[i].n_entries; k++) free(ctx->nodes[i].entries[k].value);
        free(ctx->nodes[i].entries);
    }
    free(ctx->holders);
    memset(ctx, 0, sizeof *ctx);
}

/* ------------------------------------------------------------ the verdict */

/* What a quorum says about the resource. */
typedef struct verdict {
    const char *state;      /* "held", "shared", "free" or "unknown" */
    const holder_t *holder; /* the exclusive holder on the most nodes, or NULL */
    size_t holder_nodes, free_nodes, other_nodes, reader_nodes, answered;
    long long holder_pttl; /* its earliest expiry; -2 none, -1 no expiry */
    size_t shared_held;    /* readers held on a quorum */
    size_t mark_nodes;     /* nodes with a writer-waiting mark */
    long long mark_pttl;   /* its latest expiry there */
    size_t slots_held;     /* permit slots held on a quorum */
} verdict_t;

/* Counts the nodes with no key, readers, another string than the
 * holder's, or a writer-waiting mark. */
static void count_nodes(const status_ctx_t *ctx, const redlock_report_t *rep, verdict_t *v) {
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const node_status_t *ns = &ctx->nodes[i];
        if (!ns->answered) continue;
        v->answered++;
        const entry_t *s = string_of(ns);
        if (!ns->exists)
            v->free_nodes++;
        else if (ns->readers > 0)
            v->reader_nodes++;
        else if (s && v->holder && !same_holder(s, v->holder->e))
            v->other_nodes++;
        if (ns->mark_pttl != -2) {
            v->mark_nodes++;
            if (ns->mark_pttl > v->mark_pttl) v->mark_pttl = ns->mark_pttl;
        }
    }
}

static verdict_t judge(const status_ctx_t *ctx, const redlock_report_t *rep) {
    verdict_t v = {.state = "unknown", .holder_pttl = -2, .mark_pttl = -2};
    for (size_t h = 0; h < ctx->n_holders; h++) {
        const holder_t *ho = &ctx->holders[h];
        int quorum = ho->nodes >= rep->quorum;
        if (ho->e->kind == KIND_EXCLUSIVE && ho->nodes > v.holder_nodes) v.holder = ho, v.holder_nodes = ho->nodes;
        if (ho->e->kind == KIND_SHARED) v.shared_held += (size_t)quorum;
        if (ho->e->kind == KIND_SLOT) v.slots_held += (size_t)quorum;
    }
    if (v.holder) v.holder_pttl = earliest(v.holder, rep->n_nodes);
    count_nodes(ctx, rep, &v);
    if (v.holder_nodes >= rep->quorum)
        v.state = "held";
    else if (v.shared_held > 0)
        v.state = "shared";
    else if (v.free_nodes >= rep->quorum)
        v.state = "free";
    return v;
}

/* ------------------------------------------------------------ text */

/* The words for a holder's kind: "exclusive", "shared" or "slot N". */
static void kind_name(const entry_t *e, char *buf, size_t n) {
    if (e->kind == KIND_SLOT)
        snprintf(buf, n, "slot %d", e->slot);
    else
        snprintf(buf, n, "%s", e->kind == KIND_SHARED ? "shared" : "exclusive");
}

/* The KEY column: "yes" for a string, "readers" for the hash, "no", or
 * the type of a key that is no lock; "-" when the node did not answer. */
static const char *key_column(const node_status_t *ns) {
    if (!ns->answered) return "-";
    if (!ns->exists) return "no";
    if (!strcmp(ns->type, "string")) return "yes";
    return !strcmp(ns->type, "hash") ? "readers" : ns->type;
}

/* 1 when nr is a Redis Cluster node's (its URI says so). */
static int is_cluster(const redlock_node_report_t *nr) {
    return nr->node && (!strncmp(nr->node, "redis+cluster://", 16) || !strncmp(nr->node, "rediss+cluster://", 17));
}

/* A node's NODE column: its URI; a cluster node's also names the shard
 * that holds the key ("URI -> shard address"). */
static void node_label(const redlock_node_report_t *nr, char *buf, size_t n) {
    if (is_cluster(nr))
        cli_node_label(nr, buf, n);
    else
        snprintf(buf, n, "%s", nr->node ? nr->node : "?");
}

/* The width of the NODE column. */
static int uri_width(const redlock_report_t *rep) {
    int w = 4;
    for (size_t i = 0; i < rep->n_nodes; i++) {
        char label[CLI_LABEL_LEN];
        node_label(&rep->nodes[i], label, sizeof label);
        if ((int)strlen(label) > w) w = (int)strlen(label);
    }
    return w;
}

static void print_nodes(const status_ctx_t *ctx, const redlock_report_t *rep) {
    int w = uri_width(rep);
    printf("  %2s  %-*s  %-9s  %-7s  %-8s  %10s  %9s\n", "#", w, "NODE", "REACHABLE", "KEY", "TOKEN", "PTTL(ms)",
           "RTT(us)");
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const node_status_t *ns = &ctx->nodes[i];
        const redlock_node_report_t *nr = &rep->nodes[i];
        const entry_t *s = string_of(ns);
        int reachable = ns->answered || nr->rtt_us >= 0;
        char pfx[CLI_TOKEN_PREFIX + 1] = "-", pttl[24] = "-", rtt[24] = "-";
        if (s) cli_prefix(pfx, s->value, s->len);
        if (ns->answered && ns->exists) {
            if (ns->pttl >= 0)
                snprintf(pttl, sizeof pttl, "%lld", ns->pttl);
            else
                snprintf(pttl, sizeof pttl, "no expiry");
        }
        if (nr->rtt_us >= 0) snprintf(rtt, sizeof rtt, "%lld", (long long)nr->rtt_us);
        char label[CLI_LABEL_LEN];
        node_label(nr, label, sizeof label);
        printf("  %2zu  %-*s  %-9s  %-7s  %-8s  %10s  %9s", i, w, label, reachable ? "yes" : "no", key_column(ns), pfx,
               pttl, rtt);
        if (!ns->answered && nr->detail[0]) printf("  %s", nr->detail);
        putchar('\n');
    }
}

/* One line per holder: token prefix, kind, on how many nodes, whether
 * that is a quorum, and its PTTL node by node ('-' not held there, '?' no
 * answer). */
static void print_holders(const status_ctx_t *ctx, const redlock_report_t *rep) {
    if (!ctx->n_holders) return;
    printf("holders (PTTL in ms on nodes 0..%zu; '-' not held there, '?' no answer):\n", rep->n_nodes - 1);
    printf("  %-8s  %-9s  %5s  %-6s  %s\n", "TOKEN", "KIND", "NODES", "QUORUM", "PTTL(ms)");
    for (size_t h = 0; h < ctx->n_holders; h++) {
        const holder_t *ho = &ctx->holders[h];
        char pfx[CLI_TOKEN_PREFIX + 1], kind[16], nodes[16];
        cli_prefix(pfx, ho->e->value, ho->e->len);
        kind_name(ho->e, kind, sizeof kind);
        snprintf(nodes, sizeof nodes, "%zu/%zu", ho->nodes, rep->n_nodes);
        printf("  %-8s  %-9s  %5s  %-6s ", pfx, kind, nodes, ho->nodes >= rep->quorum ? "yes" : "no");
        for (size_t i = 0; i < rep->n_nodes; i++) {
            if (!ctx->nodes[i].answered)
                printf(" ?");
            else if (ho->pttl[i] == NOT_HELD)
                printf(" -");
            else if (ho->pttl[i] < 0)
                printf(" no-expiry");
            else
                printf(" %lld", ho->pttl[i]);
        }
        putchar('\n');
    }
}

/* The resource key's verdict line: held, shared, free or unknown. */
static void print_state(const redlock_report_t *rep, const verdict_t *v) {
    if (!strcmp(v->state, "held")) {
        char pfx[CLI_TOKEN_PREFIX + 1];
        cli_prefix(pfx, v->holder->e->value, v->holder->e->len);
        printf("held: token %s... on %zu of %zu nodes (quorum %zu)", pfx, v->holder_nodes, rep->n_nodes, rep->quorum);
        if (v->holder_pttl >= 0)
            printf(", expires in %lld ms\n", v->holder_pttl);
        else
            printf(", no expiry\n");
    } else if (!strcmp(v->state, "shared")) {
        printf("shared: %zu reader(s) hold it on a quorum (quorum %zu of %zu nodes)\n", v->shared_held, rep->quorum,
               rep->n_nodes);
    } else if (!strcmp(v->state, "free")) {
        printf("free: no key on %zu of %zu nodes (quorum %zu)\n", v->free_nodes, rep->n_nodes, rep->quorum);
    } else {
        printf("unknown: no quorum agrees (%zu hold the most common token, %zu another, %zu have readers, "
               "%zu have no key, %zu did not answer; quorum %zu)\n",
               v->holder_nodes, v->other_nodes, v->reader_nodes, v->free_nodes, rep->n_nodes - v->answered,
               rep->quorum);
    }
}

/* The lines about the writer-waiting mark and the semaphore's permits. */
static void print_extras(const verdict_t *v, unsigned limit, const redlock_report_t *rep) {
    if (v->mark_nodes) {
        printf("writer waiting: mark on %zu of %zu nodes", v->mark_nodes, rep->n_nodes);
        if (v->mark_pttl >= 0)
            printf(", for %lld ms more\n", v->mark_pttl);
        else
            printf("\n");
    }
    if (limit)
        printf("permits: %zu of %u held on a quorum\n", v->slots_held, limit);
    else if (v->slots_held)
        printf("permits: %zu held on a quorum (slots 0..63 looked at)\n", v->slots_held);
}

static void print_text(const char *resource, const status_ctx_t *ctx, const redlock_report_t *rep, const verdict_t *v,
                       unsigned limit) {
    printf("resource '%s' on %zu nodes (quorum %zu)\n", resource, rep->n_nodes, rep->quorum);
    print_nodes(ctx, rep);
    print_holders(ctx, rep);
    print_state(rep, v);
    print_extras(v, limit, rep);
}

/* ------------------------------------------------------------ JSON */

/* Writes the "holders" array: kind, slot, token prefix, nodes, quorum, and
 * pttl_ms node by node (null where not held or not answered). */
static void json_holders(const status_ctx_t *ctx, const redlock_report_t *rep) {
    static const char *const kinds[] = {"exclusive", "shared", "slot"};
    printf(",\"holders\":[");
    for (size_t h = 0; h < ctx->n_holders; h++) {
        const holder_t *ho = &ctx->holders[h];
        char pfx[CLI_TOKEN_PREFIX + 1];
        cli_prefix(pfx, ho->e->value, ho->e->len);
        printf("%s{\"kind\":\"%s\",\"slot\":", h ? "," : "", kinds[ho->e->kind]);
        if (ho->e->slot >= 0)
            printf("%d", ho->e->slot);
        else
            printf("null");
        printf(",\"token_prefix\":");
        cli_json_str(stdout, pfx);
        printf(",\"nodes\":%zu,\"quorum\":%s,\"pttl_ms\":[", ho->nodes, ho->nodes >= rep->quorum ? "true" : "false");
        for (size_t i = 0; i < rep->n_nodes; i++) {
            if (i) putchar(',');
            if (ho->pttl[i] == NOT_HELD || !ctx->nodes[i].answered)
                printf("null");
            else
                printf("%lld", ho->pttl[i]);
        }
        printf("]}");
    }
    putchar(']');
}

/* Writes one node's object of the "nodes" array. */
static void json_node(size_t i, const node_status_t *ns, const redlock_node_report_t *nr) {
    printf("%s{\"index\":%zu,\"node\":", i ? "," : "", i);
    cli_json_str(stdout, nr->node);
    printf(",\"shard\":"); /* a cluster node's: the primary that holds the key */
    cli_json_str(stdout, is_cluster(nr) && nr->address[0] ? nr->address : NULL);
    printf(",\"reachable\":%s", ns->answered || nr->rtt_us >= 0 ? "true" : "false");
    if (ns->answered) {
        const entry_t *s = string_of(ns);
        printf(",\"exists\":%s,\"type\":", ns->exists ? "true" : "false");
        cli_json_str(stdout, ns->type);
        printf(",\"token_prefix\":");
        if (s) {
            char pfx[CLI_TOKEN_PREFIX + 1];
            cli_prefix(pfx, s->value, s->len);
            cli_json_str(stdout, pfx);
        } else {
            printf("null");
        }
        if (ns->exists)
            printf(",\"pttl_ms\":%lld", ns->pttl);
        else
            printf(",\"pttl_ms\":null");
        printf(",\"readers\":%lld,\"writer_mark_pttl_ms\":", ns->readers);
        if (ns->mark_pttl == -2)
            printf("null");
        else
            printf("%lld", ns->mark_pttl);
    } else {
        printf(",\"exists\":null,\"type\":null,\"token_prefix\":null,\"pttl_ms\":null,\"readers\":null,"
               "\"writer_mark_pttl_ms\":null");
    }
    if (nr->rtt_us >= 0)
        printf(",\"rtt_us\":%lld", (long long)nr->rtt_us);
    else
        printf(",\"rtt_us\":null");
    printf(",\"error\":");
    if (!ns->answered && nr->detail[0])
        cli_json_str(stdout, nr->detail);
    else
        printf("null");
    putchar('}');
}

static void print_json(const char *resource, const status_ctx_t *ctx, const redlock_report_t *rep, const verdict_t *v,
                       unsigned limit) {
    printf("{\"resource\":");
    cli_json_str(stdout, resource);
    printf(",\"n_nodes\":%zu,\"quorum\":%zu,\"answered\":%zu,\"state\":\"%s\",\"holder\":", rep->n_nodes, rep->quorum,
           v->answered, v->state);
    if (v->holder) {
        char pfx[CLI_TOKEN_PREFIX + 1];
        cli_prefix(pfx, v->holder->e->value, v->holder->e->len);
        cli_json_str(stdout, pfx);
        printf(",\"holder_nodes\":%zu,\"holder_pttl_ms\":%lld", v->holder_nodes, v->holder_pttl);
    } else {
        printf("null,\"holder_nodes\":0,\"holder_pttl_ms\":null");
    }
    printf(",\"readers_held\":%zu,\"writer_waiting_nodes\":%zu,\"permits\":{\"limit\":", v->shared_held, v->mark_nodes);
    if (limit)
        printf("%u", limit);
    else
        printf("null");
    printf(",\"slots_checked\":%u,\"held\":%zu}", limit ? limit : REDLOCK_MAX_PERMITS, v->slots_held);
    printf(",\"nodes\":[");
    for (size_t i = 0; i < rep->n_nodes; i++) json_node(i, &ctx->nodes[i], &rep->nodes[i]);
    putchar(']');
    json_holders(ctx, rep); /* after "nodes": a reader's first "pttl_ms" stays node 0's */
    printf("}\n");
}

/* ------------------------------------------------------------ the command */

/* Asks every node (status.lua, one round) about resource and the first
 * nslots permit slots, into ctx. rep gets each node's round trip. */
static void query_nodes(redlock_t *rl, const char *resource, unsigned nslots, status_ctx_t *ctx,
                        redlock_report_t *rep) {
    char n[16];
    snprintf(n, sizeof n, "%u", nslots);
    const char *args[2] = {resource, n};
    size_t lens[2] = {strlen(resource), strlen(n)};
    /* A PING first opens the connections, so the round trips below are the
     * script's alone. */
    const char *ping[1] = {"PING"};
    size_t ping_len[1] = {4};
    rl_query(rl, 1, ping, ping_len, NULL, NULL, rep);
    rl_query_script(rl, "status", 1, 2, args, lens, on_reply, ctx, rep);
}

/* Prints the status and returns the exit code: 0, or 69 when no quorum of
 * nodes answered (the report is printed all the same). */
static int report_status(const cli_t *c, const char *resource, status_ctx_t *ctx, const redlock_report_t *rep, int json,
                         unsigned limit) {
    verdict_t v = judge(ctx, rep);
    if (json)
        print_json(resource, ctx, rep, &v, limit);
    else
        print_text(resource, ctx, rep, &v, limit);
    int rc = 0;
    size_t reachable = 0;
    for (size_t i = 0; i < rep->n_nodes; i++)
        if (ctx->nodes[i].answered || rep->nodes[i].rtt_us >= 0) reachable++;
    if (reachable < rep->quorum) {
        cli_error(c, "only %zu of %zu nodes answered (quorum %zu)", reachable, rep->n_nodes, rep->quorum);
        rc = CLI_EX_UNAVAILABLE;
    }
    if (fflush(stdout) != 0 && !rc) rc = CLI_EX_OSERR;
    return rc;
}

int cli_cmd_status(cli_t *c, int argc, char **argv) {
    int json = 0;
    unsigned limit = 0;
    const char *resource = NULL;
    int stop = cli_query_args(c, argc, argv, "status", &json, &resource, &limit);
    if (stop >= 0) return stop;
    if (!resource || !*resource) return cli_usage_error(c, "status: missing RESOURCE");

    redlock_t *rl = NULL;
    int rc = cli_open(c, &rl);
    if (rc) return rc;
    static status_ctx_t ctx;
    static redlock_report_t rep;
    query_nodes(rl, resource, limit ? limit : REDLOCK_MAX_PERMITS, &ctx, &rep);
    if (ctx.oom || collect_holders(&ctx, rep.n_nodes) < 0) {
        cli_error(c, "out of memory");
        rc = CLI_EX_OSERR;
    } else {
        rc = report_status(c, resource, &ctx, &rep, json, limit);
    }
    free_ctx(&ctx);
    redlock_free(rl);
    return rc;
}
