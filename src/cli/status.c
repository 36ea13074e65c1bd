/* status.c -- `redlock status RESOURCE`: what every node holds for the
 * resource (lua/status.lua: { value or nil, PTTL }), and whether a quorum
 * agrees on one holder. Only the first 8 characters of a value are shown. */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "blocking.h"

typedef struct node_status {
    int answered;     /* the script's reply arrived */
    int exists;
    char *value;      /* malloc'd copy (compared across nodes, never printed whole) */
    size_t len;
    long long pttl;   /* -2 no key, -1 no expiry */
} node_status_t;

typedef struct status_ctx {
    node_status_t nodes[REDLOCK_MAX_NODES];
    int oom;
} status_ctx_t;

/* Runs under the engine's lock: copies what it needs, nothing more. */
static void on_reply(void *arg, size_t node, const void *reply) {
    status_ctx_t *ctx = arg;
    const redisReply *r = reply;
    if (node >= REDLOCK_MAX_NODES || r->type != REDIS_REPLY_ARRAY || r->elements < 2) return;
    node_status_t *ns = &ctx->nodes[node];
    const redisReply *v = r->element[0], *t = r->element[1];
    ns->answered = 1;
    ns->pttl = t->type == REDIS_REPLY_INTEGER ? t->integer : -2;
    if (v->type == REDIS_REPLY_STRING) {
        ns->exists = 1;
        ns->value = malloc(v->len + 1);
        if (!ns->value) {
            ctx->oom = 1;
            return;
        }
        memcpy(ns->value, v->str, v->len);
        ns->value[v->len] = '\0';
        ns->len = v->len;
    }
}

static int same_value(const node_status_t *a, const node_status_t *b) {
    return a->exists && b->exists && a->len == b->len && !memcmp(a->value, b->value, a->len);
}

/* What a quorum says about the resource. */
typedef struct verdict {
    const char *state;   /* "held", "free" or "unknown" */
    int holder;          /* node whose value is held by the most nodes, -1 none */
    size_t holder_nodes, free_nodes, other_nodes, answered;
    long long holder_pttl; /* smallest PTTL among the holder's nodes */
} verdict_t;

static verdict_t judge(const status_ctx_t *ctx, const redlock_report_t *rep) {
    verdict_t v = {"unknown", -1, 0, 0, 0, 0, -2};
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const node_status_t *ns = &ctx->nodes[i];
        if (!ns->answered) continue;
        v.answered++;
        if (!ns->exists) {
            v.free_nodes++;
            continue;
        }
        size_t same = 0;
        for (size_t j = 0; j < rep->n_nodes; j++)
            if (ctx->nodes[j].answered && same_value(ns, &ctx->nodes[j])) same++;
        if (same > v.holder_nodes) {
            v.holder_nodes = same;
            v.holder = (int)i;
        }
    }
    if (v.holder >= 0) {
        for (size_t j = 0; j < rep->n_nodes; j++) {
            const node_status_t *ns = &ctx->nodes[j];
            if (!ns->answered || !ns->exists) continue;
            if (!same_value(ns, &ctx->nodes[v.holder])) v.other_nodes++;
            else if (v.holder_pttl == -2 || (ns->pttl >= 0 && (v.holder_pttl < 0 || ns->pttl < v.holder_pttl)))
                v.holder_pttl = ns->pttl; /* the earliest expiry; -1 (no expiry) counts as latest */
        }
    }
    if (v.holder_nodes >= rep->quorum) v.state = "held";
    else if (v.free_nodes >= rep->quorum) v.state = "free";
    return v;
}

static void print_text(const char *resource, const status_ctx_t *ctx, const redlock_report_t *rep,
                       const verdict_t *v) {
    int w = cli_node_width(rep, 4);
    printf("resource '%s' on %zu nodes (quorum %zu)\n", resource, rep->n_nodes, rep->quorum);
    printf("  %2s  %-*s  %-9s  %-3s  %-8s  %10s  %9s\n", "#", w, "NODE", "REACHABLE", "KEY", "TOKEN", "PTTL(ms)",
           "RTT(us)");
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const node_status_t *ns = &ctx->nodes[i];
        const redlock_node_report_t *nr = &rep->nodes[i];
        int reachable = ns->answered || nr->rtt_us >= 0;
        char pfx[CLI_TOKEN_PREFIX + 1] = "-", pttl[24] = "-", rtt[24] = "-";
        if (ns->exists) cli_prefix(pfx, ns->value, ns->len);
        if (ns->answered && ns->exists) {
            if (ns->pttl >= 0) snprintf(pttl, sizeof pttl, "%lld", ns->pttl);
            else snprintf(pttl, sizeof pttl, "no expiry");
        }
        if (nr->rtt_us >= 0) snprintf(rtt, sizeof rtt, "%lld", (long long)nr->rtt_us);
        printf("  %2zu  %-*s  %-9s  %-3s  %-8s  %10s  %9s", i, w, nr->node ? nr->node : "?", reachable ? "yes" : "no",
               ns->answered ? (ns->exists ? "yes" : "no") : "-", pfx, pttl, rtt);
        if (!ns->answered && nr->detail[0]) printf("  %s", nr->detail);
        putchar('\n');
    }
    if (!strcmp(v->state, "held")) {
        char pfx[CLI_TOKEN_PREFIX + 1];
        const node_status_t *h = &ctx->nodes[v->holder];
        cli_prefix(pfx, h->value, h->len);
        printf("held: token %s... on %zu of %zu nodes (quorum %zu)", pfx, v->holder_nodes, rep->n_nodes, rep->quorum);
        if (v->holder_pttl >= 0) printf(", expires in %lld ms\n", v->holder_pttl);
        else printf(", no expiry\n");
    } else if (!strcmp(v->state, "free")) {
        printf("free: no key on %zu of %zu nodes (quorum %zu)\n", v->free_nodes, rep->n_nodes, rep->quorum);
    } else {
        printf("unknown: no quorum agrees (%zu hold the most common token, %zu another, %zu have no key, "
               "%zu did not answer; quorum %zu)\n",
               v->holder_nodes, v->other_nodes, v->free_nodes, rep->n_nodes - v->answered, rep->quorum);
    }
}

static void print_json(const char *resource, const status_ctx_t *ctx, const redlock_report_t *rep,
                       const verdict_t *v) {
    printf("{\"resource\":");
    cli_json_str(stdout, resource);
    printf(",\"n_nodes\":%zu,\"quorum\":%zu,\"answered\":%zu,\"state\":\"%s\",\"holder\":", rep->n_nodes,
           rep->quorum, v->answered, v->state);
    if (v->holder >= 0) {
        char pfx[CLI_TOKEN_PREFIX + 1];
        cli_prefix(pfx, ctx->nodes[v->holder].value, ctx->nodes[v->holder].len);
        cli_json_str(stdout, pfx);
        printf(",\"holder_nodes\":%zu,\"holder_pttl_ms\":%lld", v->holder_nodes, v->holder_pttl);
    } else {
        printf("null,\"holder_nodes\":0,\"holder_pttl_ms\":null");
    }
    printf(",\"nodes\":[");
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const node_status_t *ns = &ctx->nodes[i];
        const redlock_node_report_t *nr = &rep->nodes[i];
        printf("%s{\"index\":%zu,\"node\":", i ? "," : "", i);
        cli_json_str(stdout, nr->node);
        printf(",\"reachable\":%s", ns->answered || nr->rtt_us >= 0 ? "true" : "false");
        if (ns->answered) {
            printf(",\"exists\":%s,\"token_prefix\":", ns->exists ? "true" : "false");
            if (ns->exists) {
                char pfx[CLI_TOKEN_PREFIX + 1];
                cli_prefix(pfx, ns->value, ns->len);
                cli_json_str(stdout, pfx);
                printf(",\"pttl_ms\":%lld", ns->pttl);
            } else {
                printf("null,\"pttl_ms\":null");
            }
        } else {
            printf(",\"exists\":null,\"token_prefix\":null,\"pttl_ms\":null");
        }
        if (nr->rtt_us >= 0) printf(",\"rtt_us\":%lld", (long long)nr->rtt_us);
        else printf(",\"rtt_us\":null");
        printf(",\"error\":");
        if (!ns->answered && nr->detail[0]) cli_json_str(stdout, nr->detail);
        else printf("null");
        putchar('}');
    }
    printf("]}\n");
}

int cli_cmd_status(cli_t *c, int argc, char **argv) {
    int json = 0;
    const char *resource = NULL;
    int stop = cli_query_args(c, argc, argv, "status", &json, &resource);
    if (stop >= 0) return stop;
    if (!resource || !*resource) return cli_usage_error(c, "status: missing RESOURCE");

    redlock_t *rl = NULL;
    int rc = cli_open(c, &rl);
    if (rc) return rc;
    static status_ctx_t ctx;
    static redlock_report_t rep;
    const char *args[1] = {resource};
    size_t lens[1] = {strlen(resource)};
    /* A PING first opens the connections, so the round trips below are the
     * script's alone. */
    const char *ping[1] = {"PING"};
    size_t ping_len[1] = {4};
    rl_query(rl, 1, ping, ping_len, NULL, NULL, &rep);
    rl_query_script(rl, "status", 1, 1, args, lens, on_reply, &ctx, &rep);
    if (ctx.oom) {
        cli_error(c, "out of memory");
        rc = CLI_EX_OSERR;
    } else {
        verdict_t v = judge(&ctx, &rep);
        if (json) print_json(resource, &ctx, &rep, &v);
        else print_text(resource, &ctx, &rep, &v);
        size_t reachable = 0;
        for (size_t i = 0; i < rep.n_nodes; i++)
            if (ctx.nodes[i].answered || rep.nodes[i].rtt_us >= 0) reachable++;
        if (reachable < rep.quorum) {
            cli_error(c, "only %zu of %zu nodes answered (quorum %zu)", reachable, rep.n_nodes, rep.quorum);
            rc = CLI_EX_UNAVAILABLE;
        }
        if (fflush(stdout) != 0 && !rc) rc = CLI_EX_OSERR;
    }
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++) free(ctx.nodes[i].value);
    redlock_free(rl);
    return rc;
}
