/* rltest.c -- redlock_t helpers for integration tests (see rltest.h). */
#include "rltest.h"

#include <criterion/criterion.h>

void rt_options(redlock_options_t *o) {
    redlock_options_init(o);
    o->retry_count = 0;
}

int rt_try_new(const tc_cluster_t *c, size_t n, const redlock_options_t *o, redlock_t **out, char *err, size_t errlen) {
    static const char *uris[TC_MAX_NODES]; /* redlock_new copies them */
    redlock_options_t d;
    if (!o) {
        rt_options(&d);
        o = &d;
    }
    redlock_options_t opt = *o;
    for (size_t i = 0; i < n; i++) uris[i] = c->uri[i];
    opt.nodes = uris;
    opt.n_nodes = n;
    *out = NULL;
    return redlock_new_ex(out, &opt, err, errlen);
}

redlock_t *rt_new(const tc_cluster_t *c, size_t n, const redlock_options_t *o) {
    redlock_t *rl = NULL;
    char err[256];
    int rc = rt_try_new(c, n, o, &rl, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_new: %s (%s)", redlock_strerror(rc), err);
    return rl;
}

redlock_t *rt_new_lists(const tc_cluster_t *c, const rt_list_t *cur, const rt_list_t *next,
                        const redlock_options_t *o) {
    static const char *cu[TC_MAX_NODES], *nu[TC_MAX_NODES]; /* redlock_new copies them */
    redlock_options_t opt;
    if (o)
        opt = *o;
    else
        rt_options(&opt);
    for (size_t i = 0; i < cur->n; i++) cu[i] = c->uri[cur->at[i]];
    opt.nodes = cu;
    opt.n_nodes = cur->n;
    for (size_t i = 0; next && i < next->n; i++) nu[i] = c->uri[next->at[i]];
    opt.next_nodes = next ? nu : NULL;
    opt.n_next_nodes = next ? next->n : 0;
    redlock_t *rl = NULL;
    char err[256];
    int rc = redlock_new_ex(&rl, &opt, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_new: %s (%s)", redlock_strerror(rc), err);
    return rl;
}

void rt_setup(tc_cluster_t *c) {
    cr_assert_eq(tc_cluster_load(c), 0, "no test cluster (REDLOCK_CLUSTER_DIR)");
    tc_cluster_heal(c);
}
