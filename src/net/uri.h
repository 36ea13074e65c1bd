/* uri.h -- node addresses.
 *
 *   redis://[user[:password]@]host[:port][/db]   (host may be [ipv6])
 *   rediss://...                                  the same over TLS
 *   unix:///path/to.sock[?db=N]  or  unix://[user[:password]@]/path
 *   redis+cluster://[user[:password]@]host[:port][?seed=host:port&seed=...]
 *   rediss+cluster://...                          one Redis Cluster (see
 *                                                 doc/design.md, "Cluster routing"):
 *                                                 host and the seeds are members
 *   redis+sentinel://[user[:password]@]host[:port]/NAME[?sentinel=host:port&...
 *       &sentinel_password=P&sentinel_tls=yes|no&db=N]  one Sentinel group (host and the
 *   rediss+sentinel://...                          sentinel= ones are its sentinels;
 *                                                  rediss: TLS to the master and, unless
 *                                                  sentinel_tls=no, to the sentinels)
 * Every kind also takes replicas=N (votes counted after replication). */
#ifndef RL_URI_H
#define RL_URI_H
#include <stddef.h>

enum { RL_URI_TCP = 1, RL_URI_UNIX = 2 };

/* One more member of a cluster to learn its slot map from. */
typedef struct rl_seed {
    char *host;
    int port;
} rl_seed_t;

#define RL_URI_MAX_SEEDS 16

typedef struct rl_uri {
    int kind;               /* RL_URI_TCP or RL_URI_UNIX */
    int tls;                /* 1 for rediss:// */
    char *host;             /* TCP: host name or address, without brackets */
    int port;               /* TCP: 1..65535, default 6379 */
    char *path;             /* UNIX: socket path */
    char *user;             /* NULL when absent */
    char *pass;             /* NULL when absent; never printed */
    int db;                 /* 0 when absent */
    char *display;          /* the URI with the password masked, for reports and logs */
    int cluster;            /* 1 for redis+cluster:// (a whole Redis Cluster; host:port a seed) */
    int sentinel;           /* 1 for redis+sentinel:// (a Sentinel group; host:port its first sentinel) */
    char *master;           /* sentinel: the master's name in the sentinels */
    char *sentinel_pass;    /* sentinel: the sentinels' own password (sentinel_password=), or NULL */
    int sentinel_tls;       /* sentinel: 1 when the sentinels are asked over TLS (rediss+sentinel://
                             * unless sentinel_tls=no; redis+sentinel:// with sentinel_tls=yes) */
    int sentinel_tls_given; /* 1 when the URI said sentinel_tls= (shown in display) */
    rl_seed_t *seeds;       /* cluster: the seed= members; sentinel: the sentinel= ones (malloc'd) */
    size_t nseeds;
    int replicas; /* replicas=N: votes count after N replicas acknowledged; -1 when absent */
} rl_uri_t;

/* Parses s into u (which the caller later clears with rl_uri_clear).
 * Returns REDLOCK_OK, REDLOCK_ERR_CONFIG with a message naming s in err,
 * or REDLOCK_ERR_NOMEM. On error u holds nothing to free. */
int rl_uri_parse(const char *s, rl_uri_t *u, char *err, size_t errlen);

/* Frees what u owns and zeroes it; safe on a zeroed or cleared u. */
void rl_uri_clear(rl_uri_t *u);

/* Returns 1 when a and b name the same server (host:port or socket path,
 * whatever the db or user; for a cluster, any of its seeds), else 0. */
int rl_uri_same_server(const rl_uri_t *a, const rl_uri_t *b);

/* Returns 1 when a and b are the same node: the same server, kind and db
 * (credentials and TLS settings aside), else 0. */
int rl_uri_same_node(const rl_uri_t *a, const rl_uri_t *b);

/* Writes u's identity into buf (n bytes): what names the node whatever its
 * credentials and TLS settings, as rl_uri_same_node compares it:
 * "tcp:HOST:PORT/DB", "unix:PATH/DB", "cluster:HOST:PORT" or
 * "sentinel:NAME@HOST:PORT/DB" (HOST lowercase, an IPv6 address in
 * brackets). Returns its length (n or more: it did not fit). */
size_t rl_uri_identity(const rl_uri_t *u, char *buf, size_t n);

/* Sets up u as a plain TCP node at host:port with base's credentials and
 * TLS (a cluster member: a shard primary, or a seed). Returns 0, or -1
 * when out of memory (u then holds nothing). */
int rl_uri_member(rl_uri_t *u, const rl_uri_t *base, const char *host, int port);

#endif
