/* resolve.h -- host-name lookups off the I/O path, and address lists.
 *
 * getaddrinfo() has no deadline: a resolver that does not answer holds it
 * for seconds. So a lookup runs on a thread of its own and the thread that
 * drives the nodes' I/O never waits for it: it starts the lookup, goes on
 * with the other nodes, and is told through notify_fd (one byte written
 * when the lookup ends) to pick the result up with rl_lookup_take.
 *
 * A lookup is shared by its thread and its owner and freed by whichever
 * lets go of it last: the owner may drop a lookup that is still running
 * (redlock_free, or a lookup that hangs), and the thread then frees it
 * when getaddrinfo finally returns, without touching notify_fd. */
#ifndef RL_RESOLVE_H
#define RL_RESOLVE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Addresses kept per node: more are dropped (the resolver's order kept). */
#define RL_MAX_ADDRS 8
/* "[ffff:...:ffff%ifname]:65535" fits. */
#define RL_ADDR_STRLEN 72

typedef struct rl_addrs {
    size_t n;
    struct sockaddr_storage ss[RL_MAX_ADDRS];
    socklen_t len[RL_MAX_ADDRS];
} rl_addrs_t;

typedef struct rl_lookup rl_lookup_t;

/* Fills a with host:port when host is an IPv4 or IPv6 literal (no
 * resolver involved). Returns 1 then, 0 when host is a name. */
int rl_addrs_literal(rl_addrs_t *a, const char *host, int port);

/* Copies up to RL_MAX_ADDRS TCP addresses of getaddrinfo's list res into
 * a, in order. */
struct addrinfo;
void rl_addrs_keep(rl_addrs_t *a, const struct addrinfo *res);

/* Writes address i of a as "1.2.3.4:6379", "[::1]:6379" or a socket path. */
void rl_addr_format(const rl_addrs_t *a, size_t i, char *buf, size_t n);

/* Starts looking up host:port (TCP) on a new thread; notify_fd gets one
 * byte when it ends. Returns the lookup, or NULL when out of memory or
 * threads. The caller later calls rl_lookup_take (once it is done) or
 * rl_lookup_drop (any time), exactly one of them. */
rl_lookup_t *rl_lookup_start(const char *host, int port, int notify_fd);

/* 1 when l has ended (its result can be taken), else 0. */
int rl_lookup_done(rl_lookup_t *l);

/* Takes the result of a finished lookup and frees l (joining its thread,
 * which has ended or is about to). Returns 0 with *out filled, or -1 with
 * the resolver's reason ("unknown host", ...) in why. */
int rl_lookup_take(rl_lookup_t *l, rl_addrs_t *out, char *why, size_t n);

/* Lets go of l, finished or not; the thread frees it if still running.
 * NULL-safe. */
void rl_lookup_drop(rl_lookup_t *l);

/* A lookup of another kind (a Sentinel group's master, sentinel.h): fn
 * runs on the lookup's thread with arg, fills *out, or why, and returns 0
 * or -1. arg belongs to the lookup (freed with arg_free, also when the
 * start fails) until rl_lookup_take_job hands it, with what fn wrote in
 * it, to the caller. */
typedef int (*rl_lookup_job_fn)(void *arg, rl_addrs_t *out, char *why, size_t n);
rl_lookup_t *rl_lookup_start_job(rl_lookup_job_fn fn, void *arg, void (*arg_free)(void *), int notify_fd);
/* rl_lookup_take, and *arg (if not NULL) gets the job's argument to free. */
int rl_lookup_take_job(rl_lookup_t *l, rl_addrs_t *out, char *why, size_t n, void **arg);

#endif
