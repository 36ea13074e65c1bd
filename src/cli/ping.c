/* ping.c -- `redlock ping`: per node health. Three queries to every node:
 * PING (round trip), INFO (version, uptime, role, AOF, last RDB save) and
 * CONFIG GET append* (appendonly, appendfsync; may be refused, then
 * "unknown"); a Redis Cluster node's shards are listed under it (shards.c). */
#include <hiredis/hiredis.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "blocking.h"
#include "engine.h"

typedef struct node_ping {
    int info, config; /* INFO / CONFIG GET answered */
    char version[32], role[16];
    long long uptime_s, rdb_last_save;
    int aof_enabled; /* -1 unknown */
    char appendonly[16], appendfsync[16];
    long long replicas; /* connected_slaves, -1 unknown */
} node_ping_t;

typedef struct ping_ctx {
    node_ping_t nodes[REDLOCK_MAX_NODES];
    cli_shard_t shards[REDLOCK_MAX_NODES][CLI_MAX_SHARDS]; /* a cluster node's */
    size_t nshards[REDLOCK_MAX_NODES];
    rl_group_info_t group[REDLOCK_MAX_NODES]; /* a Sentinel group's: what its sentinels said */
    uint64_t group_age_us[REDLOCK_MAX_NODES];
    int has_group[REDLOCK_MAX_NODES];
} ping_ctx_t;

/* Copies INFO field key of text (n bytes) into out; returns 1 if found. */
static int info_field(const char *text, size_t n, const char *key, char *out, size_t outlen) {
    size_t klen = strlen(key);
    const char *p = text, *end = text + n;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) && p[klen] == ':') {
            const char *v = p + klen + 1, *ve = eol;
            if (ve > v && ve[-1] == '\r') ve--;
            size_t len = (size_t)(ve - v);
            if (len >= outlen) len = outlen - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            return 1;
        }
        p = eol + 1;
    }
    return 0;
}

static long long to_ll(const char *s) {
    long long v = 0;
    int neg = *s == '-';
    if (neg) s++;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (*s - '0');
    return neg ? -v : v;
}

/* Copies a bulk string reply into out (truncated, made printable). */
static void copy_str(char *out, size_t n, const redisReply *r) {
    size_t len = r->len < n - 1 ? r->len : n - 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)r->str[i];
        out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    out[len] = '\0';
}

static void on_info(void *arg, size_t node, const void *reply) {
    ping_ctx_t *ctx = arg;
    const redisReply *r = reply;
    if (node >= REDLOCK_MAX_NODES || r->type != REDIS_REPLY_STRING) return;
    node_ping_t *np = &ctx->nodes[node];
    char buf[64];
    np->info = 1;
    info_field(r->str, r->len, "redis_version", np->version, sizeof np->version);
    info_field(r->str, r->len, "role", np->role, sizeof np->role);
    if (info_field(r->str, r->len, "uptime_in_seconds", buf, sizeof buf)) np->uptime_s = to_ll(buf);
    if (info_field(r->str, r->len, "aof_enabled", buf, sizeof buf)) np->aof_enabled = buf[0] == '1';
    if (info_field(r->str, r->len, "rdb_last_save_time", buf, sizeof buf)) np->rdb_last_save = to_ll(buf);
    if (info_field(r->str, r->len, "connected_slaves", buf, sizeof buf)) np->replicas = to_ll(buf);
}

/* A Sentinel group's line under its node: the master its sentinels named,
 * how long ago its role was reported, the failover epoch, its replicas. */
static void print_group(const ping_ctx_t *ctx, size_t i) {
    if (!ctx->has_group[i]) return;
    const rl_group_info_t *g = &ctx->group[i];
    printf("        group master %s (%d of %d sentinels answered %llu ms ago): role reported %lld ms before, "
           "failover epoch %llu, %d replica(s) known\n",
           g->master, g->answered, g->asked, (unsigned long long)(ctx->group_age_us[i] / 1000),
           (long long)g->role_age_ms, (unsigned long long)g->epoch, g->replicas);
}

static void on_config(void *arg, size_t node, const void *reply) {
    ping_ctx_t *ctx = arg;
    const redisReply *r = reply;
    if (node >= REDLOCK_MAX_NODES || r->type != REDIS_REPLY_ARRAY) return;
    node_ping_t *np = &ctx->nodes[node];
    np->config = 1;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        if (k->len == 10 && !memcmp(k->str, "appendonly", 10)) copy_str(np->appendonly, sizeof np->appendonly, v);
        if (k->len == 11 && !memcmp(k->str, "appendfsync", 11)) copy_str(np->appendfsync, sizeof np->appendfsync, v);
    }
}

static void fmt_uptime(char *buf, size_t n, long long s) {
    if (s >= 86400)
        snprintf(buf, n, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
    else if (s >= 3600)
        snprintf(buf, n, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else if (s >= 60)
        snprintf(buf, n, "%lldm%02llds", s / 60, s % 60);
    else
        snprintf(buf, n, "%llds", s);
}

static void fmt_time(char *buf, size_t n, long long t) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(buf, n, "never");
}

static const char *or_unknown(int known, const char *s) {
    return known && s[0] ? s : "unknown";
}

static void print_text(const ping_ctx_t *ctx, const redlock_report_t *pong, const redlock_report_t *cfg,
                       size_t answered) {
    int w = cli_node_width(pong, 4);
    printf("  %2s  %-*s  %9s  %-8s  %-7s  %-8s  %-7s  %-10s  %-11s  %-3s  %s\n", "#", w, "NODE", "RTT(us)", "VERSION",
           "ROLE", "REPLICAS", "UPTIME", "APPENDONLY", "APPENDFSYNC", "AOF", "RDB_LAST_SAVE");
    for (size_t i = 0; i < pong->n_nodes; i++) {
        const node_ping_t *np = &ctx->nodes[i];
        const redlock_node_report_t *nr = &pong->nodes[i];
        char label[CLI_LABEL_LEN];
        cli_node_label(nr, label, sizeof label);
        printf("  %2zu  %-*s  ", i, w, label);
        if (nr->vote != REDLOCK_VOTE_YES) {
            printf("%9s  unreachable: %s\n", "-", nr->detail[0] ? nr->detail : redlock_vote_name(nr->vote));
            continue;
        }
        char up[24] = "unknown", save[32] = "unknown";
        if (np->info) {
            fmt_uptime(up, sizeof up, np->uptime_s);
            fmt_time(save, sizeof save, np->rdb_last_save);
        }
        char reps[24] = "?";
        if (np->info && np->replicas >= 0) snprintf(reps, sizeof reps, "%lld", np->replicas);
        printf("%9lld  %-8s  %-7s  %-8s  %-7s  %-10s  %-11s  %-3s  %s", (long long)nr->rtt_us,
               or_unknown(np->info, np->version), or_unknown(np->info, np->role), reps, up,
               or_unknown(np->config, np->appendonly), or_unknown(np->config, np->appendfsync),
               np->info && np->aof_enabled >= 0 ? (np->aof_enabled ? "on" : "off") : "?", save);
        if (!np->config && cfg->nodes[i].detail[0]) printf("  (CONFIG GET: %s)", cfg->nodes[i].detail);
        putchar('\n');
        print_group(ctx, i);
        cli_shards_print(ctx->shards[i], ctx->nshards[i]);
    }
    printf("%zu of %zu nodes answered (quorum %zu)\n", answered, pong->n_nodes, pong->quorum);
}

static void json_opt_str(int known, const char *s) {
    if (known && s[0])
        cli_json_str(stdout, s);
    else
        printf("null");
}

static void print_json(const ping_ctx_t *ctx, const redlock_report_t *pong, const redlock_report_t *cfg,
                       size_t answered) {
    printf("{\"n_nodes\":%zu,\"quorum\":%zu,\"answered\":%zu,\"nodes\":[", pong->n_nodes, pong->quorum, answered);
    for (size_t i = 0; i < pong->n_nodes; i++) {
        const node_ping_t *np = &ctx->nodes[i];
        const redlock_node_report_t *nr = &pong->nodes[i];
        int up = nr->vote == REDLOCK_VOTE_YES;
        printf("%s{\"index\":%zu,\"node\":", i ? "," : "", i);
        cli_json_str(stdout, nr->node);
        printf(",\"address\":");
        if (nr->address[0])
            cli_json_str(stdout, nr->address);
        else
            printf("null");
        printf(",\"reachable\":%s", up ? "true" : "false");
        if (up)
            printf(",\"rtt_us\":%lld", (long long)nr->rtt_us);
        else
            printf(",\"rtt_us\":null");
        printf(",\"redis_version\":");
        json_opt_str(up && np->info, np->version);
        printf(",\"role\":");
        json_opt_str(up && np->info, np->role);
        if (up && np->info)
            printf(",\"uptime_s\":%lld,\"aof_enabled\":%s,\"rdb_last_save\":%lld", np->uptime_s,
                   np->aof_enabled > 0 ? "true" : "false", np->rdb_last_save);
        else
            printf(",\"uptime_s\":null,\"aof_enabled\":null,\"rdb_last_save\":null");
        printf(",\"appendonly\":");
        json_opt_str(up && np->config, np->appendonly);
        printf(",\"appendfsync\":");
        json_opt_str(up && np->config, np->appendfsync);
        printf(",\"config_error\":");
        if (up && !np->config && cfg->nodes[i].detail[0])
            cli_json_str(stdout, cfg->nodes[i].detail);
        else
            printf("null");
        printf(",\"error\":");
        if (!up)
            cli_json_str(stdout, nr->detail[0] ? nr->detail : redlock_vote_name(nr->vote));
        else
            printf("null");
        printf(",\"replicas\":");
        if (up && np->info && np->replicas >= 0)
            printf("%lld", np->replicas);
        else
            printf("null");
        if (ctx->has_group[i]) {
            const rl_group_info_t *g = &ctx->group[i];
            printf(",\"group\":{\"master\":");
            cli_json_str(stdout, g->master);
            printf(",\"sentinels_answered\":%d,\"sentinels_asked\":%d,\"asked_ms_ago\":%llu,\"role_reported_ms\":%lld,"
                   "\"failover_epoch\":%llu,\"replicas\":%d}",
                   g->answered, g->asked, (unsigned long long)(ctx->group_age_us[i] / 1000), (long long)g->role_age_ms,
                   (unsigned long long)g->epoch, g->replicas);
        }
        if (ctx->nshards[i]) cli_shards_json(ctx->shards[i], ctx->nshards[i]);
        putchar('}');
    }
    printf("]}\n");
}

int cli_cmd_ping(cli_t *c, int argc, char **argv) {
    int json = 0;
    int stop = cli_query_args(c, argc, argv, "ping", &json, NULL, NULL);
    if (stop >= 0) return stop;
    redlock_t *rl = NULL;
    int rc = cli_open(c, &rl);
    if (rc) return rc;

    static ping_ctx_t ctx;
    static redlock_report_t pong, info, cfg;
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++) ctx.nodes[i].aof_enabled = -1, ctx.nodes[i].replicas = -1;
    const char *a_ping[] = {"PING"}, *a_info[] = {"INFO"}, *a_cfg[] = {"CONFIG", "GET", "append*"};
    size_t l_ping[] = {4}, l_info[] = {4}, l_cfg[] = {6, 3, 7};
    /* The first PING opens the connections; the second measures the round trip. */
    rl_query(rl, 1, a_ping, l_ping, NULL, NULL, &pong);
    size_t answered = rl_query(rl, 1, a_ping, l_ping, NULL, NULL, &pong);
    rl_query(rl, 1, a_info, l_info, on_info, &ctx, &info);
    rl_query(rl, 3, a_cfg, l_cfg, on_config, &ctx, &cfg);
    for (size_t i = 0; i < pong.n_nodes; i++) {
        ctx.nshards[i] = cli_shards_collect(rl, i, ctx.shards[i], CLI_MAX_SHARDS);
        ctx.has_group[i] = rl_engine_group(rl_blocking_of(rl)->eng, i, &ctx.group[i], &ctx.group_age_us[i]);
    }

    if (json)
        print_json(&ctx, &pong, &cfg, answered);
    else
        print_text(&ctx, &pong, &cfg, answered);
    if (fflush(stdout) != 0) rc = CLI_EX_OSERR;
    if (answered < pong.quorum) {
        cli_error(c, "only %zu of %zu nodes answered: no quorum (%zu) reachable", answered, pong.n_nodes, pong.quorum);
        rc = CLI_EX_UNAVAILABLE;
    } else if (answered < pong.n_nodes) {
        cli_error(c, "warning: %zu of %zu nodes did not answer; a quorum (%zu) is still reachable",
                  pong.n_nodes - answered, pong.n_nodes, pong.quorum);
    }
    redlock_free(rl);
    return rc;
}
