/* replicate.c -- votes counted after replication (min_replicas, a node's
 * replicas=N; see replicate.h): the replicated writes queued on a
 * connection since its last WAIT share the next one, and its answer
 * decides every yes that waits for it. */
#include "replicate.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The replicas a replicated write on c waits for: its URI's replicas=N,
 * else the handle's min_replicas (0: none, no WAIT). */
uint32_t rl_repl_want(const rl_nodes_t *ns, const rl_conn_t *c) {
    return c->uri.replicas >= 0 ? (uint32_t)c->uri.replicas : ns->cfg.min_replicas;
}

/* Appends "WAIT want T" on c, covering every replicated write queued
 * there since the last one (their yes votes wait for its answer): T is
 * three quarters of the time left to the earliest of their deadlines (at
 * least 1 ms), the rest being for the writes to travel and WAIT's own
 * answer to come back; the WAIT's deadline is the latest of theirs.
 * Returns 0, or -1 when out of memory. */
int rl_repl_append(rl_nodes_t *ns, rl_conn_t *c, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    uint64_t first = nd->wait_first_us, left_ms = first > now ? (first - now) / 1000u : 0, t = left_ms * 3 / 4;
    char a[16], b[24], cmd[96];
    int la = snprintf(a, sizeof a, "%u", rl_repl_want(ns, c));
    int lb = snprintf(b, sizeof b, "%llu", (unsigned long long)(t ? t : 1));
    int n = snprintf(cmd, sizeof cmd, "*3\r\n$4\r\nWAIT\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", la, a, lb, b);
    nd->wait_owed = 0;
    if (rl_conn_send(c, cmd, (size_t)n) < 0) return -1;
    if (!rl_conn_push(c, RL_REQ_WAIT, NULL, now, nd->wait_last_us)) return -1;
    nd->waits_out++;
    c->out_mark = rl_buf_pending(&c->out);
    return 0;
}

/* Marks the write just queued on c (q) as counted after replication: the
 * next flush appends the WAIT that covers it. */
void rl_repl_owe(rl_conn_t *c, rl_req_t *q) {
    rl_node_t *nd = rl_node_of(c);
    q->then_wait = 1;
    if (!nd->wait_owed || q->deadline_us < nd->wait_first_us) nd->wait_first_us = q->deadline_us;
    if (!nd->wait_owed || q->deadline_us > nd->wait_last_us) nd->wait_last_us = q->deadline_us;
    nd->wait_owed = 1;
}

/* Records that node c->idx's yes in r waits for c's next WAIT answer.
 * Returns 0, or -1 when out of memory. */
int rl_repl_defer(rl_conn_t *c, rl_round_t *r, uint64_t sent) {
    rl_node_t *nd = rl_node_of(c);
    if (nd->nwaiting == nd->capwaiting) {
        uint32_t cap = nd->capwaiting ? nd->capwaiting * 2 : 16;
        rl_waiting_t *w = realloc(nd->waiting, cap * sizeof *w);
        if (!w) return -1;
        nd->waiting = w;
        nd->capwaiting = cap;
    }
    nd->waiting[nd->nwaiting++] =
        (rl_waiting_t){.round = r, .idx = c->idx, .left_ms = r->pn[c->idx].u.left_ms, .sent_us = sent};
    r->pn[c->idx].u.slot = RL_SLOT_WAITING;
    return 0;
}

/* A waiting yes leaves the list: its node's field in the round gets back
 * what the round's on_reply kept there (a permit's slot), just before the
 * vote is cast. */
static void give_back(const rl_waiting_t *w) {
    rl_round_node_t *p = &w->round->pn[w->idx];
    p->u.slot = RL_NO_SLOT;
    if (w->round->on_reply) p->u.left_ms = w->left_ms;
}

/* The answer to a WAIT: every yes waiting on c since the last one counts
 * when enough replicas acknowledged (WAIT covers every earlier write of
 * the connection), else its vote fails, saying how many did within how
 * long. */
void rl_repl_answer(rl_nodes_t *ns, rl_conn_t *c, const void *reply, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    const redisReply *rep = reply;
    uint64_t sent = rl_conn_head(c)->sent_us;
    rl_conn_pop(c);
    if (nd->waits_out) nd->waits_out--;
    uint32_t want = rl_repl_want(ns, c);
    char detail[RL_DETAIL_LEN] = "";
    int err = REDLOCK_OK;
    redlock_vote_t v = REDLOCK_VOTE_YES;
    if (rep->type == REDIS_REPLY_ERROR) {
        v = REDLOCK_VOTE_ERROR;
        err = rl_error_code(rep->str);
        snprintf(detail, sizeof detail, "WAIT refused: %.200s", rep->str);
    } else if (rep->type != REDIS_REPLY_INTEGER || rep->integer < (long long)want) {
        v = REDLOCK_VOTE_ERROR;
        err = REDLOCK_ERR_REPLICATION;
        snprintf(detail, sizeof detail,
                 "replicated to %lld of %u replicas within %llu ms: the write may be lost "
                 "in a failover",
                 rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0LL, want,
                 (unsigned long long)((now - sent) / 1000u));
    }
    while (nd->nwaiting) { /* (a vote may finish a round, which takes it off the list) */
        rl_waiting_t w = nd->waiting[--nd->nwaiting];
        char d[RL_DETAIL_LEN];
        memcpy(d, detail, sizeof d);
        give_back(&w);
        ns->ops->cast(ns, c, w.round, v, err, (int64_t)(now - w.sent_us), d, now);
    }
}

/* Fails the yes votes waiting on c for a WAIT that will not come (c is
 * closing or silent), as v / err / detail. */
void rl_repl_fail(rl_nodes_t *ns, rl_conn_t *c, redlock_vote_t v, int err, const char *detail, uint64_t now) {
    rl_node_t *nd = rl_node_of(c);
    while (nd->nwaiting) {
        rl_waiting_t w = nd->waiting[--nd->nwaiting];
        give_back(&w);
        ns->ops->vote(ns, w.round, (size_t)w.idx, v, err, -1, detail, now);
    }
}

void rl_repl_forget(rl_conn_t *c, const rl_round_t *r) {
    rl_node_t *nd = rl_node_of(c);
    for (uint32_t k = 0; k < nd->nwaiting; k++)
        if (nd->waiting[k].round == r) nd->waiting[k--] = nd->waiting[--nd->nwaiting];
}
