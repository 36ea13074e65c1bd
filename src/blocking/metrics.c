/* metrics.c -- redlock_stats (a snapshot of the counters) and
 * redlock_stats_prometheus (that snapshot in the Prometheus text
 * exposition format, version 0.0.4, written snprintf-style). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "blocking.h"

int redlock_stats(redlock_t *rl, redlock_stats_t *out) {
    if (!rl || !out) return REDLOCK_ERR_INVALID;
    rl_stats_read(rl->stats, rl->opt.n_nodes, out);
    for (size_t i = 0; i < out->n_nodes; i++) out->nodes[i].node = rl->ns->nodes[i].conn.uri.display;
    return REDLOCK_OK;
}

/* ------------------------------------------------------------ the writer */

/* Text written into buf (len bytes) as far as it fits; need counts all. */
typedef struct out {
    char *buf;
    size_t len, need;
} out_t;

/* Appends printf-style text: the part that fits (NUL-terminated), and its
 * whole length to o->need. */
static void put(out_t *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void put(out_t *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = o->need < o->len ? vsnprintf(o->buf + o->need, o->len - o->need, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) o->need += (size_t)n;
}

/* Appends a label value, escaped as the format asks (\\, \", \n). */
static void put_label(out_t *o, const char *v) {
    for (; v && *v; v++) {
        if (*v == '\\')
            put(o, "\\\\");
        else if (*v == '"')
            put(o, "\\\"");
        else if (*v == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *v);
    }
}

/* Appends microseconds as seconds in decimal, without trailing zeros. */
static void put_seconds(out_t *o, uint64_t us) {
    char frac[8];
    snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(us % 1000000u));
    size_t n = strlen(frac);
    while (n > 0 && frac[n - 1] == '0') frac[--n] = '\0';
    put(o, "%llu%s%s", (unsigned long long)(us / 1000000u), n ? "." : "", frac);
}

static void put_family(out_t *o, const char *name, const char *type, const char *help) {
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ------------------------------------------------------------- families */

/* One counter family of calls by result: every code the library has. */
static void put_calls(out_t *o, const char *name, const char *help, const uint64_t *by_code) {
    put_family(o, name, "counter", help);
    for (int rc = REDLOCK_OK; rc >= REDLOCK_ERR_LAST_; rc--) {
        char result[32];
        rl_result_name(rc, result, sizeof result);
        put(o, "%s{result=\"%s\"} %llu\n", name, result, (unsigned long long)by_code[-rc]);
    }
}

/* The samples of one histogram; node (may be NULL) becomes a label. */
static void put_hist(out_t *o, const char *name, const char *node, const redlock_histogram_t *h) {
    uint64_t cum = 0;
    for (size_t i = 0; i < REDLOCK_STATS_BUCKETS; i++) {
        cum += h->bucket[i];
        put(o, "%s_bucket{", name);
        if (node) put(o, "node=\""), put_label(o, node), put(o, "\",");
        put(o, "le=\"");
        if (i + 1 < REDLOCK_STATS_BUCKETS)
            put_seconds(o, redlock_stats_bucket_us(i));
        else
            put(o, "+Inf");
        put(o, "\"} %llu\n", (unsigned long long)cum);
    }
    const char *sfx[2] = {"_sum", "_count"};
    for (int k = 0; k < 2; k++) {
        put(o, "%s%s", name, sfx[k]);
        if (node) put(o, "{node=\""), put_label(o, node), put(o, "\"}");
        put(o, " ");
        if (k == 0)
            put_seconds(o, h->sum_us);
        else
            put(o, "%llu", (unsigned long long)h->count);
        put(o, "\n");
    }
}

/* The per-node vote counters. */
static void put_votes(out_t *o, const redlock_stats_t *s) {
    static const char *const kinds[] = {"yes", "no", "timeout", "down", "quarantined", "error", "suspect"};
    put_family(o, "redlock_node_votes_total", "counter",
               "Votes of each node in rounds, by kind (down: skipped until its reconnect; quarantined: "
               "restarted or clock jumped; suspect: skipped since it timed out, until a probe answers).");
    for (size_t i = 0; i < s->n_nodes; i++) {
        const redlock_node_stats_t *n = &s->nodes[i];
        const uint64_t v[] = {n->yes, n->no, n->timeout, n->down, n->quarantined, n->error, n->suspect};
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            put(o, "redlock_node_votes_total{node=\""), put_label(o, n->node);
            put(o, "\",vote=\"%s\"} %llu\n", kinds[k], (unsigned long long)v[k]);
        }
    }
}

/* One per-node counter family: name, help, and the field at offset off
 * of each node's stats. */
static void put_node_counter(out_t *o, const redlock_stats_t *s, const char *name, const char *help, size_t off) {
    put_family(o, name, "counter", help);
    for (size_t i = 0; i < s->n_nodes; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&s->nodes[i] + off, sizeof v);
        put(o, "%s{node=\"", name), put_label(o, s->nodes[i].node);
        put(o, "\"} %llu\n", (unsigned long long)v);
    }
}

/* The per-node reconnects, suspicions, probes and round-trip histograms. */
static void put_nodes(out_t *o, const redlock_stats_t *s) {
    put_node_counter(o, s, "redlock_node_reconnects_total", "Connection attempts to a node after it had failed.",
                     offsetof(redlock_node_stats_t, reconnects));
    put_node_counter(o, s, "redlock_node_suspected_total", "Times a node became suspect (a request of it timed out).",
                     offsetof(redlock_node_stats_t, suspected));
    put_node_counter(o, s, "redlock_node_probes_total", "Probes (fresh connection and PING) sent to a suspect node.",
                     offsetof(redlock_node_stats_t, probes));
    put_family(o, "redlock_node_rtt_seconds", "histogram", "Round trip of each node's answer counted as a vote.");
    for (size_t i = 0; i < s->n_nodes; i++) put_hist(o, "redlock_node_rtt_seconds", s->nodes[i].node, &s->nodes[i].rtt);
}

/* Every family of s, in order. */
static void put_all(out_t *o, const redlock_stats_t *s) {
    put_family(o, "redlock_nodes", "gauge", "Redis masters this client locks on.");
    put(o, "redlock_nodes %zu\n", s->n_nodes);
    put_calls(o, "redlock_acquires_total", "Acquire calls by result.", s->acquires);
    put_calls(o, "redlock_extends_total", "Extend calls by result, auto-extensions included.", s->extends);
    put_calls(o, "redlock_releases_total", "Release calls by result.", s->releases);
    put_calls(o, "redlock_adopts_total", "Lock adoptions (redlock_lock_adopt) by result.", s->adopts);
    put_family(o, "redlock_locks_lost_total", "counter", "Auto-extended locks found lost.");
    put(o, "redlock_locks_lost_total %llu\n", (unsigned long long)s->locks_lost);
    put_family(o, "redlock_waits_total", "counter",
               "Acquire calls that found the lock taken and waited on its release channel.");
    put(o, "redlock_waits_total %llu\n", (unsigned long long)s->waits);
    put_family(o, "redlock_wakeups_total", "counter", "Release announcements heard that woke a waiter.");
    put(o, "redlock_wakeups_total %llu\n", (unsigned long long)s->wakeups);
    put_family(o, "redlock_split_votes_total", "counter",
               "Acquire attempts that split the vote (some yes, some no, no quorum) and backed off.");
    put(o, "redlock_split_votes_total %llu\n", (unsigned long long)s->splits);
    put_family(o, "redlock_round_duration_seconds", "histogram", "Duration of each round (one command to every node).");
    put_hist(o, "redlock_round_duration_seconds", NULL, &s->rounds);
    put_votes(o, s);
    put_nodes(o, s);
}

int redlock_stats_prometheus(redlock_t *rl, char *buf, size_t len) {
    redlock_stats_t snap; /* about 16 KB of stack */
    if (!rl || (!buf && len)) return REDLOCK_ERR_INVALID;
    redlock_stats(rl, &snap);
    out_t o = {buf, len, 0};
    if (len) buf[0] = '\0';
    put_all(&o, &snap);
    return o.need > INT32_MAX ? REDLOCK_ERR_NOMEM : (int)o.need;
}
