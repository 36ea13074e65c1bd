/* simwrap.c -- the seam: link-time substitutions (ld --wrap, see
 * CMakeLists.txt) that put the library's unchanged code into the
 * simulation. Only redlock-sim is linked this way; the library itself is
 * the same archive every other program links.
 *   socket, connect, getsockopt, setsockopt, send, recv, close: a
 *     simulated connection (simnet.c) for the library's node sockets;
 *     any other fd goes to the real call;
 *   rl_clock_monotonic_us (base/clock.c): the clock of the client whose
 *     code runs (simulated, drifting);
 *   rl_token_new, rl_random_between (base/token.c): lock tokens and the
 *     core's random draws (retry jitter, wake-up spread, hash seeds) from
 *     the run's seeded PRNG.
 * Outside a run (S == NULL) every call goes to the real function. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sim.h"

int __real_socket(int domain, int type, int proto);
int __real_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __real_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int __real_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
ssize_t __real_send(int fd, const void *buf, size_t n, int flags);
ssize_t __real_recv(int fd, void *buf, size_t n, int flags);
int __real_close(int fd);
uint64_t __real_rl_clock_monotonic_us(void);
void __real_rl_token_new(char out[41]);
unsigned __real_rl_random_between(unsigned lo, unsigned hi);

int __wrap_socket(int domain, int type, int proto);
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
/* Options of simulated sockets are accepted and ignored. */
int __wrap_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
/* send on a simulated socket (simnet.c), else the real one. */
ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags);
/* recv on a simulated socket (simnet.c), else the real one. */
ssize_t __wrap_recv(int fd, void *buf, size_t n, int flags);
/* close of a simulated socket (simnet.c), else the real one. */
int __wrap_close(int fd);
/* The running client's clock (simulated real time between clients). */
uint64_t __wrap_rl_clock_monotonic_us(void);
/* 40 lowercase hex characters from the run's PRNG. */
void __wrap_rl_token_new(char out[41]);
/* Uniform in [lo, hi] from the run's PRNG. */
unsigned __wrap_rl_random_between(unsigned lo, unsigned hi);

/* In a run every socket the library opens is a simulated one. */
int __wrap_socket(int domain, int type, int proto) {
    return S ? net_socket() : __real_socket(domain, type, proto);
}

/* Node i is at 10.0.0.(i+1) (the URIs scenario.c gives the clients); in
 * a Sentinel group, member m of node i at 10.0.m.(i+1). */
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len) {
    if (!net_conn(fd)) return __real_connect(fd, sa, len);
    int node = -1, member = 0;
    if (sa->sa_family == AF_INET) {
        uint32_t ip = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        if ((ip >> 16) == 0x0a00) node = (int)(ip & 0xff) - 1, member = (int)(ip >> 8 & 0xff);
    }
    return net_connect(fd, node, member);
}

/* SO_ERROR of a simulated socket: refused or reset, else 0. */
int __wrap_getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
    sconn_t *c = net_conn(fd);
    if (!c) return __real_getsockopt(fd, level, name, val, len);
    if (level == SOL_SOCKET && name == SO_ERROR && val && len && *len >= sizeof(int))
        *(int *)val = c->state == SC_REFUSED ? ECONNREFUSED : c->state == SC_RESET ? ECONNRESET : 0;
    return 0;
}

/* Options of simulated sockets are accepted and ignored. */
int __wrap_setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
    return net_conn(fd) ? 0 : __real_setsockopt(fd, level, name, val, len);
}

/* send on a simulated socket (simnet.c), else the real one. */
ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags) {
    return net_conn(fd) ? net_send(fd, buf, n) : __real_send(fd, buf, n, flags);
}

/* recv on a simulated socket (simnet.c), else the real one. */
ssize_t __wrap_recv(int fd, void *buf, size_t n, int flags) {
    return net_conn(fd) ? net_recv(fd, buf, n) : __real_recv(fd, buf, n, flags);
}

/* close of a simulated socket (simnet.c), else the real one. */
int __wrap_close(int fd) {
    if (!net_conn(fd)) return __real_close(fd);
    net_close(fd);
    return 0;
}

/* The running client's clock (simulated real time between clients). */
uint64_t __wrap_rl_clock_monotonic_us(void) {
    if (!S) return __real_rl_clock_monotonic_us();
    return S->cur ? client_now(S->cur) : S->now;
}

/* 40 lowercase hex characters from the run's PRNG. */
void __wrap_rl_token_new(char out[41]) {
    if (!S) {
        __real_rl_token_new(out);
        return;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 40; i += 16) {
        uint64_t w = rng_next(&S->r_core);
        for (int k = 0; k < 16 && i + k < 40; k++) out[i + k] = hex[(w >> (4 * k)) & 15];
    }
    out[40] = '\0';
}

/* Uniform in [lo, hi] from the run's PRNG. */
unsigned __wrap_rl_random_between(unsigned lo, unsigned hi) {
    if (!S) return __real_rl_random_between(lo, hi);
    return hi <= lo ? lo : lo + (unsigned)rng_below(&S->r_core, (uint64_t)hi - lo + 1);
}
