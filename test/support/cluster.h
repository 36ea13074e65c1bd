/*
 * test/support/cluster.h - helpers for integration tests that run against the
 * local redis-server masters started by deploy/cluster.sh.
 *
 * The cluster directory comes from $REDLOCK_CLUSTER_DIR (set by CTest); the
 * script path from $REDLOCK_CLUSTER_SH, else the compile-time definition
 * REDLOCK_CLUSTER_SH. Nodes are numbered 0..n-1 as in cluster.sh.
 *
 * Every data helper opens its own short-lived connection (1 s connect and
 * command timeout), so a paused node costs about 1 s per call and a killed
 * node fails at once. Nothing here keeps state besides the tc_cluster_t.
 */
#ifndef REDLOCK_TEST_SUPPORT_CLUSTER_H
#define REDLOCK_TEST_SUPPORT_CLUSTER_H

#include <hiredis/hiredis.h>

#define TC_MAX_NODES 16

typedef struct tc_cluster {
    char dir[512];                   /* cluster directory (absolute or as given) */
    int n;                           /* number of nodes */
    char uri[TC_MAX_NODES][128];     /* redis://127.0.0.1:PORT */
    int port[TC_MAX_NODES];          /* TCP port on 127.0.0.1 */
} tc_cluster_t;

/* Fills *c from $REDLOCK_CLUSTER_DIR/nodes. Returns 0, or -1 after printing
 * the reason on stderr (no variable, unreadable file, bad line, too many). */
int tc_cluster_load(tc_cluster_t *c);

/* Runs `cluster.sh VERB [I] [EXTRA] -d DIR` and waits for it. I < 0 omits
 * the index; EXTRA NULL or "" omits it. Returns the script's exit status
 * (0 ok), or -1 if it could not be run or died from a signal. */
int tc_node_run(const tc_cluster_t *c, const char *verb, int i, const char *extra);

/* SIGSTOP node i (it keeps its port; clients hang until resumed). 0 ok. */
int tc_node_pause(const tc_cluster_t *c, int i);
/* SIGCONT node i. 0 ok; non-zero if it is down. */
int tc_node_resume(const tc_cluster_t *c, int i);
/* SIGKILL node i and wait for its death. 0 ok (also when already down). */
int tc_node_kill(const tc_cluster_t *c, int i);
/* Restart node i on its port (killing it first if running); flush != 0
 * deletes its data files first. Waits until it answers. 0 ok. */
int tc_node_restart(const tc_cluster_t *c, int i, int flush);

/* Brings every node back (resumed, or restarted if down or unresponsive)
 * and empties it with FLUSHALL. Call at the start of each test. Problems
 * are reported on stderr. */
void tc_cluster_heal(const tc_cluster_t *c);

/* Blocking hiredis connection to node i with 1 s connect and command
 * timeouts. Returns NULL if i is out of range or the node is unreachable;
 * the caller frees the context with redisFree(). */
redisContext *tc_connect(const tc_cluster_t *c, int i);

/* GET key on node i. Returns a malloc'd NUL-terminated copy of the value
 * (caller free()s it), or NULL if the key is absent, not a string, or the
 * node is unreachable. */
char *tc_get(const tc_cluster_t *c, int i, const char *key);

/* SET key val on node i, with PX px when px > 0. Returns 0 on OK, -1 else. */
int tc_set(const tc_cluster_t *c, int i, const char *key, const char *val, long long px);

/* PTTL key on node i: ms left, -1 no expiry, -2 no key; -3 if unreachable. */
long long tc_pttl(const tc_cluster_t *c, int i, const char *key);

/* DEL key on node i. Returns the number of keys deleted (0 or 1), or -1 if
 * the node is unreachable or replied with an error. */
int tc_del(const tc_cluster_t *c, int i, const char *key);

/* Number of reachable nodes on which key holds exactly val. */
int tc_count_value(const tc_cluster_t *c, const char *key, const char *val);

/* tc_count_value once it is want, or after 1 s. An acquire or a release
 * returns once a majority answered and a short grace ran out; a node that
 * answered later (busy, or a NOSCRIPT fallback's second round trip) gets
 * its SET or DEL a moment after the call returned. */
int tc_await_count(const tc_cluster_t *c, const char *key, const char *val, int want);

/* Runs any command (hiredis printf-style format) on node i, discarding the
 * reply. Returns 0, or -1 if unreachable or the reply is an error. */
int tc_redis_cmd(const tc_cluster_t *c, int i, const char *fmt, ...);

#endif /* REDLOCK_TEST_SUPPORT_CLUSTER_H */
