/* report.c -- filling a call's redlock_report_t (rep may be NULL
 * everywhere): its start, a round's counts, its end and message. */
#include <stdio.h>
#include <string.h>

#include "health.h"
#include "rl.h"

void rl_report_begin(const redlock_t *rl, redlock_report_t *rep) {
    if (!rep) return;
    rep->result = REDLOCK_OK;
    rep->attempts = 0;
    rep->n_nodes = rl ? rl->opt.n_nodes : 0;
    rep->quorum = rl ? redlock_quorum(rep->n_nodes) : 0;
    rep->yes = rep->no = rep->failed = 0;
    rep->elapsed_us = 0;
    rep->validity_ms = 0;
    rep->slot = -1;
    rep->message[0] = '\0';
    rep->n_lists = rl && rl->joint ? 2 : 1;
    memset(rep->lists, 0, sizeof rep->lists);
    for (size_t i = 0; i < rep->n_nodes; i++) {
        unsigned in = rl->joint ? rl->lists[i] : RL_LIST_CUR;
        rep->nodes[i] = (redlock_node_report_t){.node = rl->ns->nodes[i].conn.uri.display, .rtt_us = -1, .lists = in};
        for (unsigned k = 0; k < 2; k++) rep->lists[k].n_nodes += (in >> k) & 1u;
    }
    for (unsigned k = 0; k < 2; k++)
        rep->lists[k].quorum = rep->lists[k].n_nodes ? redlock_quorum(rep->lists[k].n_nodes) : 0;
}

/* Copies r's counts (per list) into rep. */
static void counts(redlock_report_t *rep, const rl_round_t *r) {
    rl_tally_t t[2];
    size_t nt = rl_round_tallies(r, t);
    rep->yes = r->yes;
    rep->no = r->no;
    rep->failed = r->failed;
    for (size_t k = 0; k < nt && k < 2; k++) {
        rep->lists[k].yes = t[k].yes;
        rep->lists[k].no = t[k].no;
        rep->lists[k].failed = t[k].failed;
    }
}

void rl_report_round(redlock_report_t *rep, const rl_round_t *r, uint64_t end_us) {
    if (!rep) return;
    counts(rep, r);
    rep->elapsed_us = (int64_t)(end_us - r->t0_us);
}

int rl_report_end(const redlock_t *rl, redlock_report_t *rep, int rc, const char *msg) {
    if (msg && rl) rl_logf(&rl->log, REDLOCK_LOG_ERROR, "%s", msg);
    if (!rep) return rc;
    rep->result = rc;
    if (msg)
        snprintf(rep->message, sizeof rep->message, "%s", msg);
    else if (rc != REDLOCK_OK && !rep->message[0] && rep->n_lists == 2)
        snprintf(
            rep->message, sizeof rep->message,
            "%s: %zu yes, %zu no, %zu failed of %zu nodes: old %zu of %zu (quorum %zu), new %zu of %zu (quorum %zu)",
            redlock_strerror(rc), rep->yes, rep->no, rep->failed, rep->n_nodes, rep->lists[0].yes,
            rep->lists[0].n_nodes, rep->lists[0].quorum, rep->lists[1].yes, rep->lists[1].n_nodes,
            rep->lists[1].quorum);
    else if (rc != REDLOCK_OK && !rep->message[0])
        snprintf(rep->message, sizeof rep->message, "%s: %zu yes, %zu no, %zu failed of %zu nodes (quorum %zu)",
                 redlock_strerror(rc), rep->yes, rep->no, rep->failed, rep->n_nodes, rep->quorum);
    return rc;
}


void rl_delay_detail(char *detail, size_t n, long long ago_ms, long long left_ms) {
    snprintf(detail, n, "lock-delay: the previous holder's lock expired %lld ms ago (free in %lld ms)", ago_ms,
             left_ms);
}

void rl_report_votes(const redlock_t *rl, redlock_report_t *rep, const rl_round_t *r) {
    if (!rep) return;
    counts(rep, r);
    for (size_t i = 0; i < r->n && i < rep->n_nodes; i++) {
        redlock_node_report_t *nr = &rep->nodes[i];
        const rl_conn_t *c = rl->ns->all[r->pn[i].conn]; /* (a cluster node's: the shard asked) */
        nr->vote = (redlock_vote_t)r->pn[i].vote;
        nr->err = r->pn[i].err;
        nr->rtt_us = r->pn[i].rtt_us;
        if (nr->vote == REDLOCK_VOTE_YES || nr->vote == REDLOCK_VOTE_NO)
            memcpy(nr->address, c->addr, sizeof nr->address);
        if (nr->vote == REDLOCK_VOTE_NO && nr->err == REDLOCK_ERR_TAKEN && r->pn[i].u.left_ms > 0) { /* lock-delay */
            long long left = r->pn[i].u.left_ms, ago = (long long)rl->opt.lock_delay_ms - left;
            rl_delay_detail(nr->detail, sizeof nr->detail, ago > 0 ? ago : 0, left);
        }
        if (nr->vote == REDLOCK_VOTE_NONE || nr->vote == REDLOCK_VOTE_YES || nr->vote == REDLOCK_VOTE_NO) continue;
        /* why it failed: the quarantine's reason, the node's last words, or the code's name */
        if (nr->err == REDLOCK_ERR_QUARANTINED && rl_node_quarantined(c, rl->clock(), nr->detail, sizeof nr->detail))
            continue;
        if (nr->err == REDLOCK_ERR_MEMBERSHIP && rl_node_of_const(c)->refusal[0]) {
            snprintf(nr->detail, sizeof nr->detail, "%s", rl_node_of_const(c)->refusal);
            continue;
        }
        snprintf(nr->detail, sizeof nr->detail, "%s",
                 c->last_err == nr->err && c->last_detail[0] ? c->last_detail : redlock_strerror(nr->err));
    }
}
