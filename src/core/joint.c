/* joint.c -- a joint handle's node lists (doc/membership.md): the current
 * and the next list become one set of distinct nodes, each marked with
 * the list(s) it is in, and every round counts its votes per list. */
#include <stdlib.h>
#include <string.h>

#include "membership.h"
#include "rl.h"
#include "uri.h"

/* A malloc'd copy of s, or NULL. */
static char *copy(const char *s) {
    size_t len = strlen(s) + 1;
    char *c = malloc(len);
    return c ? memcpy(c, s, len) : NULL;
}

/* The index of the current node that next is, or -1 when it is none of
 * them. The lists were checked: a shared server is the same node. */
static int shared_with(const redlock_options_t *opt, const char *next) {
    rl_uri_t n, c;
    if (rl_uri_parse(next, &n, NULL, 0) != REDLOCK_OK) return -1;
    int at = -1;
    for (size_t j = 0; at < 0 && j < opt->n_nodes; j++) {
        if (rl_uri_parse(opt->nodes[j], &c, NULL, 0) != REDLOCK_OK) continue;
        if (rl_uri_same_node(&c, &n)) at = (int)j;
        rl_uri_clear(&c);
    }
    rl_uri_clear(&n);
    return at;
}

int rl_joint_nodes(redlock_t *rl, const redlock_options_t *opt) {
    size_t total = opt->n_nodes + opt->n_next_nodes;
    int at[REDLOCK_MAX_NODES]; /* per next node: the current node it is, or -1 */
    rl->joint = opt->next_nodes != NULL;
    for (size_t i = 0; i < opt->n_next_nodes; i++)
        if ((at[i] = shared_with(opt, opt->next_nodes[i])) >= 0) total--;
    rl->node_names = calloc(total, sizeof *rl->node_names);
    if (!rl->node_names) return -1;
    rl->opt.nodes = (const char *const *)rl->node_names;
    rl->opt.n_nodes = total;
    rl->opt.next_nodes = NULL;
    rl->opt.n_next_nodes = 0;
    size_t k = 0;
    for (; k < opt->n_nodes; k++) {
        rl->lists[k] = RL_LIST_CUR;
        if (!(rl->node_names[k] = copy(opt->nodes[k]))) return -1;
    }
    for (size_t i = 0; i < opt->n_next_nodes; i++) {
        if (at[i] >= 0) {
            rl->lists[at[i]] |= RL_LIST_NEXT;
            continue;
        }
        rl->lists[k] = RL_LIST_NEXT;
        if (!(rl->node_names[k++] = copy(opt->next_nodes[i]))) return -1;
    }
    return 0;
}

/* The fingerprint of rl's nodes in list (RL_LIST_* bit) into out. */
static int list_fingerprint(const redlock_t *rl, unsigned list, char out[RL_FP_HEX + 1]) {
    rl_uri_t u[REDLOCK_MAX_NODES];
    size_t n = 0;
    memset(u, 0, sizeof u);
    int rc = 0;
    for (size_t i = 0; i < rl->opt.n_nodes; i++) {
        if (!(rl->lists[i] & list)) continue;
        if (rl_uri_parse(rl->opt.nodes[i], &u[n], NULL, 0) != REDLOCK_OK) {
            rc = -1; /* (parsed fine during validation: out of memory) */
            break;
        }
        n++;
    }
    if (rc == 0) rc = rl_fingerprint(u, n, out);
    while (n) rl_uri_clear(&u[--n]);
    return rc;
}

int rl_joint_fingerprint(redlock_t *rl) {
    char cur[RL_FP_HEX + 1], next[RL_FP_HEX + 1];
    if (list_fingerprint(rl, RL_LIST_CUR, rl->joint ? cur : rl->fp) < 0) return -1;
    if (!rl->joint) return 0;
    if (list_fingerprint(rl, RL_LIST_NEXT, next) < 0) return -1;
    rl_fingerprint_joint(cur, next, rl->fp);
    return 0;
}

void rl_round_begin(const redlock_t *rl, rl_round_t *r, int stop, redlock_node_report_t *nodes) {
    rl_round_init(r, rl->opt.n_nodes, stop, nodes);
    if (rl->joint) rl_round_lists(r, rl->lists);
}

void rl_joint_options(const redlock_t *rl, redlock_options_t *o, const char **cur, const char **next) {
    *o = rl->opt;
    if (!rl->joint) return;
    o->nodes = cur;
    o->next_nodes = next;
    o->n_nodes = o->n_next_nodes = 0;
    for (size_t i = 0; i < rl->opt.n_nodes; i++) {
        if (rl->lists[i] & RL_LIST_CUR) cur[o->n_nodes++] = rl->opt.nodes[i];
        if (rl->lists[i] & RL_LIST_NEXT) next[o->n_next_nodes++] = rl->opt.nodes[i];
    }
}
