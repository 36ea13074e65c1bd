#define _GNU_SOURCE /* POLLRDHUP */
/* pollset.c -- a blocking driver's poll array (see pollset.h). */
#include "pollset.h"

#include <stdlib.h>

/* Makes room for cap entries. Returns 0, or -1 when out of memory. */
static int reserve(rl_pollset_t *ps, size_t cap) {
    if (cap <= ps->cap) return 0;
    struct pollfd *pfd = realloc(ps->pfd, cap * sizeof *pfd);
    if (pfd) ps->pfd = pfd;
    unsigned *k = realloc(ps->k, cap * sizeof *k);
    if (k) ps->k = k;
    unsigned *gen = realloc(ps->gen, cap * sizeof *gen);
    if (gen) ps->gen = gen;
    if (!pfd || !k || !gen) return -1;
    ps->cap = cap;
    return 0;
}

size_t rl_pollset_build(rl_pollset_t *ps, const rl_nodes_t *ns, int extra_fd) {
    if (reserve(ps, ns->nall + 1) < 0) return 0;
    size_t np = 0;
    for (size_t k = 0; k < ns->nall; k++) {
        short ev = rl_nodes_interest(ns, k);
        if (!ev) continue;
        ps->pfd[np] = (struct pollfd){.fd = ns->all[k]->fd, .events = ev, .revents = 0};
        ps->k[np] = (unsigned)k;
        ps->gen[np++] = ns->all[k]->gen;
    }
    ps->pfd[np++] = (struct pollfd){.fd = extra_fd, .events = POLLIN, .revents = 0};
    return np;
}

size_t rl_pollset_build_hup(rl_pollset_t *ps, const rl_nodes_t *ns, int wake_fd, int kick_fd) {
    if (reserve(ps, ns->nall + 2) < 0) return 0;
    size_t np = 0;
    for (size_t k = 0; k < ns->nall; k++) {
        const rl_conn_t *c = ns->all[k];
        if (c->fd < 0 || c->state != RL_CONN_READY) continue;
        ps->pfd[np] = (struct pollfd){.fd = c->fd, .events = POLLRDHUP, .revents = 0};
        ps->k[np] = (unsigned)k;
        ps->gen[np++] = c->gen;
    }
    ps->pfd[np++] = (struct pollfd){.fd = wake_fd, .events = POLLIN, .revents = 0};
    ps->pfd[np++] = (struct pollfd){.fd = kick_fd, .events = POLLIN, .revents = 0};
    return np;
}

void rl_pollset_events(const rl_pollset_t *ps, size_t np, rl_nodes_t *ns, uint64_t now) {
    for (size_t j = 0; j + 1 < np; j++)
        if (ps->pfd[j].revents && ns->all[ps->k[j]]->gen == ps->gen[j])
            rl_nodes_events(ns, ps->k[j], ps->pfd[j].revents, now);
}

void rl_pollset_free(rl_pollset_t *ps) {
    free(ps->pfd);
    free(ps->k);
    free(ps->gen);
    *ps = (rl_pollset_t){0};
}
