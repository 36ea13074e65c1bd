/* shards.c -- what `redlock ping` shows of the nodes that are whole Redis
 * Clusters (doc/design.md, "Cluster routing"): each shard primary, the slots it serves, and a
 * round trip measured through the library's own routing (a one-line
 * script on a key of the shard's first slot, so the request goes where a
 * lock's would). */
#include <stdio.h>
#include <string.h>

#include "blocking.h"
#include "cli.h"
#include "cluster.h"
#include "engine.h"
#include "slot.h"

/* Writes into key a name (a hash tag) whose slot is slot. */
static void key_in_slot(char *key, size_t n, int32_t slot) {
    for (unsigned long i = 0;; i++) {
        int len = snprintf(key, n, "{%lu}", i);
        if (rl_key_slot(key, (size_t)len) == (uint16_t)slot) return;
    }
}

/* Measures the round trip to node i's shard v through the routing. */
static void measure(redlock_t *rl, size_t i, cli_shard_t *s) {
    static redlock_report_t rep;
    char key[32];
    key_in_slot(key, sizeof key, s->v.first);
    const char *argv[] = {"EVAL", "return 1", "1", key};
    size_t lens[] = {4, 8, 1, strlen(key)};
    rl_query(rl, 4, argv, lens, NULL, NULL, &rep); /* the first may open the shard's connection */
    rl_query(rl, 4, argv, lens, NULL, NULL, &rep);
    const redlock_node_report_t *nr = &rep.nodes[i];
    s->up = nr->vote == REDLOCK_VOTE_YES;
    s->rtt_us = nr->rtt_us;
    snprintf(s->error, sizeof s->error, "%s", s->up ? "" : nr->detail[0] ? nr->detail : redlock_vote_name(nr->vote));
}

size_t cli_shards_collect(redlock_t *rl, size_t i, cli_shard_t *out, size_t cap) {
    rl_shard_view_t v[CLI_MAX_SHARDS];
    size_t n = rl_engine_shards(rl_blocking_of(rl)->eng, i, v, cap < CLI_MAX_SHARDS ? cap : CLI_MAX_SHARDS);
    for (size_t j = 0; j < n; j++) {
        out[j] = (cli_shard_t){.v = v[j]};
        measure(rl, i, &out[j]);
    }
    return n;
}

void cli_shards_print(const cli_shard_t *s, size_t n) {
    for (size_t j = 0; j < n; j++) {
        char addr[160];
        snprintf(addr, sizeof addr, strchr(s[j].v.host, ':') ? "[%s]:%d" : "%s:%d", s[j].v.host, s[j].v.port);
        printf("        shard %-21s %5u slots %-24s ", addr, (unsigned)s[j].v.slots, s[j].v.ranges);
        if (s[j].up)
            printf("%9lld us", (long long)s[j].rtt_us);
        else
            printf("unreachable: %s", s[j].error);
        printf("%s\n", s[j].v.promoted ? "  (promoted replica)" : "");
    }
}

void cli_shards_json(const cli_shard_t *s, size_t n) {
    printf(",\"shards\":[");
    for (size_t j = 0; j < n; j++) {
        printf("%s{\"host\":", j ? "," : "");
        cli_json_str(stdout, s[j].v.host);
        printf(",\"port\":%d,\"slots\":%u,\"ranges\":", s[j].v.port, (unsigned)s[j].v.slots);
        cli_json_str(stdout, s[j].v.ranges);
        printf(",\"promoted\":%s,\"reachable\":%s,\"rtt_us\":", s[j].v.promoted ? "true" : "false",
               s[j].up ? "true" : "false");
        if (s[j].up)
            printf("%lld", (long long)s[j].rtt_us);
        else
            printf("null");
        printf(",\"error\":");
        cli_json_str(stdout, s[j].up ? NULL : s[j].error);
        putchar('}');
    }
    putchar(']');
}
