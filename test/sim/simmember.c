/* simmember.c -- changing the node set (the membership scenarios, see
 * test/sim/README.md): the nodes of OLD and NEW run, and a tool takes the
 * steps of `redlock membership` while the clients work. Each step writes
 * every node's record with the project's membership_set.lua (which also
 * announces it), the record's fields made by the library's own
 * rl_record_make and rl_record_fields, the fingerprints by
 * rl_fingerprint, as the tool does; a write that meets a node down or
 * stopped is tried again 50 ms later, and the step is done once every
 * node took it. Between the steps the clients are redeployed, each at a
 * random moment: OLD to joint after begin, joint to NEW after advance;
 * now and then one client is late to leave OLD, and the records must
 * refuse it. membership-no-wait takes advance without its wait;
 * membership-no-record runs OLD and NEW clients side by side and takes
 * no step. */
#include <stdlib.h>
#include <string.h>

#include "membership.h"
#include "scripts.h"
#include "sim.h"

/* The change and the tool's progress (one run's). */
static struct {
    char old_fp[RL_FP_HEX + 1], new_fp[RL_FP_HEX + 1], joint_fp[RL_FP_HEX + 1];
    char old_ids[1024], new_ids[1024];
    int write;        /* the write under way (W_*), 0: none */
    unsigned pending; /* nodes it has yet to reach */
    uint64_t gen;     /* bumped by each write: retries of an older one are void */
    int left_to_move; /* clients still to redeploy before the next step */
    int straggler;    /* a client redeployed to joint only after the JOINT write, or -1 */
} M;

/* A duration in [lo, hi] ms, as µs, from the workload's stream. */
static uint64_t ms_between(int lo, int hi) {
    return (uint64_t)rng_range(&S->r_work, lo, hi) * 1000u;
}

/* The fingerprint and identity list of the nodes in mask (their URIs
 * parsed as the clients' handles parse them). */
static void describe(unsigned mask, char fp[RL_FP_HEX + 1], char *ids, size_t n) {
    rl_uri_t u[SIM_MAX_NODES];
    size_t k = 0;
    char err[256];
    for (int i = 0; i < S->cfg.n_nodes; i++)
        if (mask & (1u << i) && rl_uri_parse(sim_node_uri(i), &u[k++], err, sizeof err) != REDLOCK_OK) abort();
    if (rl_fingerprint(u, k, fp) < 0 || rl_identity_list(u, k, ids, n) < 0) abort();
    while (k) rl_uri_clear(&u[--k]);
}

/* Which phase write w gives node k: finish leaves the nodes of OLD only. */
static rl_phase_t phase_of(int w, int k) {
    if (w == W_BEGUN) return RL_PHASE_BEGUN;
    if (w == W_JOINT) return RL_PHASE_JOINT;
    if (w == W_ADVANCED) return RL_PHASE_ADVANCED;
    return S->cfg.new_mask & (1u << k) ? RL_PHASE_FINISHED : RL_PHASE_LEFT;
}

/* Runs membership_set.lua on node k's model with the record of phase p. */
static void put_record(int k, rl_phase_t p) {
    snode_t *n = &S->nodes[k];
    rl_record_t rec;
    rl_record_make(&rec, p, M.old_fp, M.new_fp, M.old_ids, M.new_ids, (long long)(node_now_us(k) / 1000.0));
    char buf[64];
    const char *argv[6 + RL_RECORD_FIELDS * 2];
    size_t lens[6 + RL_RECORD_FIELDS * 2];
    const rl_script_t *sc = rl_script_find("membership_set");
    argv[0] = "EVAL", argv[1] = sc->text, argv[2] = "1", argv[3] = RL_MEMBERSHIP_KEY;
    argv[4] = RL_MEMBERSHIP_CHANNEL, argv[5] = rec.change;
    int argc = 6 + (int)rl_record_fields(&rec, buf, argv + 6, lens + 6);
    for (int i = 0; i < 6; i++) lens[i] = strlen(argv[i]);
    resp_cmd_t *cmd = resp_cmd_make(argc, argv, lens);
    model_session_t *s = model_session_new(n->m, NULL);
    sbuf_t out = {0};
    model_exec(n->m, s, cmd, (uint64_t)node_now_us(k), &out);
    if (sb_pending(&out) != 4 || memcmp(sb_data(&out), ":1\r\n", 4) != 0) {
        fprintf(stderr, "redlock-sim: seed %llu: node %d did not take the membership record: %.*s\n",
                (unsigned long long)S->seed, k, (int)sb_pending(&out), sb_data(&out));
        abort();
    }
    sb_free(&out);
    model_session_free(s);
    free(cmd);
}

/* Starts write w: every node of OLD and NEW, each after a one-way delay. */
static void start_write(int w) {
    M.write = w;
    M.gen++;
    M.pending = S->cfg.old_mask | S->cfg.new_mask;
    for (int k = 0; k < S->cfg.n_nodes; k++)
        if (M.pending & (1u << k)) sim_push(E_TOOL, S->now + net_one_way(k), w, k, M.gen, NULL, 0);
}

/* Redeploys every client but `except` to conf, each within spread_ms. */
static void redeploy_all(int conf, int spread_ms, int except) {
    M.left_to_move = 0;
    for (int c = 0; c < S->cfg.n_clients; c++) {
        if (c == except) continue;
        M.left_to_move++;
        sim_push(E_REDEPLOY, S->now + ms_between(0, spread_ms), c, conf, 0, NULL, 0);
    }
}

/* What follows write w once every node took it. */
static void written(int w) {
    S->cov[COV_STEPS]++;
    trace_rec(T_STEP, w, 0, 0, 0);
    int fast = S->cfg.membership == MEM_NO_WAIT;
    M.write = 0;
    if (w == W_BEGUN) {
        M.straggler = rng_chance(&S->r_work, S->cfg.straggler_p) ? (int)rng_below(&S->r_work, S->cfg.n_clients) : -1;
        redeploy_all(CONF_JOINT, fast ? 100 : 600, M.straggler);
    } else if (w == W_JOINT) {
        if (M.straggler >= 0) /* (redeployed while OLD is refused: its writes meet the JOINT-only records) */
            sim_push(E_REDEPLOY, S->now + ms_between(0, 300), M.straggler, CONF_JOINT, 1, NULL, 0);
        uint64_t wait = fast ? 0 : ((uint64_t)S->cfg.ttl_max + RL_RECORD_REFRESH_MS) * 1000u;
        sim_push(E_TOOL, S->now + wait, W_ADVANCED, -1, 0, NULL, 0);
    } else if (w == W_ADVANCED) {
        redeploy_all(CONF_NEW, fast ? 100 : 600, -1);
    }
}

/* A client is redeployed: once every client moved, the next step. */
static void moved(sev_t *e) {
    client_redeploy(&S->clients[e->a], e->b);
    if (e->g) return; /* (the straggler: the steps went on without it) */
    if (--M.left_to_move > 0) return;
    uint64_t at = S->now + ms_between(20, 100);
    sim_push(E_TOOL, at, e->b == CONF_JOINT ? W_JOINT : W_FINISHED, -1, 0, NULL, 0);
}

void member_init(void) {
    memset(&M, 0, sizeof M);
    M.straggler = -1;
    if (S->cfg.membership == MEM_NONE || S->cfg.membership == MEM_NO_RECORD) return;
    describe(S->cfg.old_mask, M.old_fp, M.old_ids, sizeof M.old_ids);
    describe(S->cfg.new_mask, M.new_fp, M.new_ids, sizeof M.new_ids);
    rl_fingerprint_joint(M.old_fp, M.new_fp, M.joint_fp);
    sim_push(E_TOOL, ms_between(150, 400), W_BEGUN, -1, 0, NULL, 0);
}

void member_event(sev_t *e) {
    if (e->kind == E_REDEPLOY) {
        if (S->clients[e->a].paused_until > S->now) { /* (a stopped process is redeployed when it resumes) */
            sim_push(e->kind, S->clients[e->a].paused_until, e->a, e->b, e->g, NULL, 0);
            return;
        }
        moved(e);
        return;
    }
    if (e->b < 0) { /* the step's moment: its write starts */
        start_write(e->a);
        return;
    }
    if (e->g != M.gen) return; /* (a retry of a write that was over) */
    const snode_t *n = &S->nodes[e->b];
    if (!n->up || n->paused_until > S->now) { /* (the tool tries again: a step is repeated until all took it) */
        sim_push(E_TOOL, S->now + 50000, e->a, e->b, e->g, NULL, 0);
        return;
    }
    put_record(e->b, phase_of(e->a, e->b));
    M.pending &= ~(1u << e->b);
    if (!M.pending) written(e->a);
}
