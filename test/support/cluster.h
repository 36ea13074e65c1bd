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
 *
 * A directory of Redis Clusters (`cluster.sh start --cluster-shards K`) is
 * read by tc_cluster_load too: each Redlock node is then one whole Redis
 * Cluster, uri[i] its redis+cluster:// URI and port[i] its first seed's port
 * (so rt_new works), but the tc_node_* and tc_get-style helpers do not apply;
 * the tc_clusters_* / tc_rc_* / tc_member_* helpers at the end of this file
 * do (see there).
 */
#ifndef REDLOCK_TEST_SUPPORT_CLUSTER_H
#define REDLOCK_TEST_SUPPORT_CLUSTER_H

#include <hiredis/hiredis.h>

#define TC_MAX_NODES 16

typedef struct tc_cluster {
    char dir[512];               /* cluster directory (absolute or as given) */
    int n;                       /* number of nodes (or of Redis Clusters) */
    char uri[TC_MAX_NODES][256]; /* redis://127.0.0.1:PORT or redis+cluster://... */
    int port[TC_MAX_NODES];      /* TCP port on 127.0.0.1 (a cluster's first seed) */
} tc_cluster_t;

/* Fills *c from $REDLOCK_CLUSTER_DIR/nodes (redis:// or redis+cluster://
 * lines). Returns 0, or -1 after printing the reason on stderr (no
 * variable, unreadable file, bad line, too many). */
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
 * are reported on stderr. A directory of Redis Clusters is healed with
 * tc_clusters_heal (below). */
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

/* Number of reachable nodes on which key holds exactly val (any value when
 * val is NULL). */
int tc_count_value(const tc_cluster_t *c, const char *key, const char *val);

/* tc_count_value once it is want, or after 1 s. An acquire or a release
 * returns once a majority answered and a short grace ran out; a node that
 * answered later (busy, or a NOSCRIPT fallback's second round trip) gets
 * its SET or DEL a moment after the call returned. */
int tc_await_count(const tc_cluster_t *c, const char *key, const char *val, int want);

/* Runs any command (hiredis printf-style format) on node i, discarding the
 * reply. Returns 0, or -1 if unreachable or the reply is an error. */
int tc_redis_cmd(const tc_cluster_t *c, int i, const char *fmt, ...);

/* ---------------------------------------------------------------- Redis Clusters
 *
 * A directory made by `cluster.sh start --cluster-shards K [--replicas R]
 * -n N` holds N independent Redis Clusters, each one Redlock node. Clusters
 * are numbered 0..N-1 (the lines of DIR/nodes), the members of each 0..S-1
 * (DIR/members: CLUSTER MEMBER PORT ROLE PRIMARY, roles at creation). A
 * member is addressed by (c, m). Roles change (failovers), so the helpers
 * that care ask the cluster; tc_clusters_refresh() updates the cached ones.
 * Connections are short-lived with 1 s timeouts, as above.
 */
#define TC_MAX_MEMBERS 32 /* members per Redis Cluster */
#define TC_SLOTS 16384

typedef struct tc_member {
    int port;            /* client port on 127.0.0.1 */
    int created_primary; /* 1 if a primary at creation, 0 if a replica */
    int created_of;      /* at creation, the member a replica replicated; -1 */
    int primary;         /* at the last refresh: 1 primary, 0 replica, -1 no answer */
    char id[41];         /* cluster node id ("" until a refresh reached it) */
} tc_member_t;

typedef struct tc_rcluster {
    int n; /* members */
    tc_member_t m[TC_MAX_MEMBERS];
} tc_rcluster_t;

typedef struct tc_clusters {
    tc_cluster_t base;             /* dir; n = number of Redis Clusters; uri[] */
    tc_rcluster_t c[TC_MAX_NODES]; /* the members of each cluster */
} tc_clusters_t;

/* Fills *cs from $REDLOCK_CLUSTER_DIR (nodes and members) and refreshes
 * ids and roles. Returns 0, or -1 with the reason on stderr (not a
 * directory of Redis Clusters, bad or inconsistent files). */
int tc_clusters_load(tc_clusters_t *cs);

/* Asks every member of cluster c (c < 0: of every cluster) its node id
 * (CLUSTER MYID) and role (ROLE) and caches them in cs. Returns the number
 * of members that did not answer (their role becomes -1; ids are kept). */
int tc_clusters_refresh(tc_clusters_t *cs, int c);

/* CRC16 (XMODEM: polynomial 0x1021, initial value 0) of buf, the checksum
 * of Redis Cluster's key slots. */
unsigned tc_crc16(const char *buf, size_t len);

/* Slot (0..16383) of the len-byte key: CRC16 mod 16384 of the key, or of
 * its hash tag -- the bytes between the first '{' and the first '}' after
 * it, when there are some. */
int tc_key_slot(const char *key, size_t len);

/* tc_key_slot of a NUL-terminated key. */
int tc_slot(const char *key);

/* Fills owner[0..16383] with the member of cluster c that serves each slot
 * according to CLUSTER SLOTS as member `from` sees it (from < 0: the first
 * member that answers); -1 for an unserved slot or an address that is no
 * member. Returns the number of slots served, or -1 if nobody answered. */
int tc_rc_slot_map(const tc_clusters_t *cs, int c, int from, int owner[TC_SLOTS]);

/* The member of cluster c serving slot now (tc_rc_slot_map), or -1. */
int tc_rc_slot_owner(const tc_clusters_t *cs, int c, int slot);

/* Blocking connection to member m of cluster c (1 s timeouts), or NULL if
 * out of range or unreachable. The caller frees it with redisFree(). */
redisContext *tc_member_connect(const tc_clusters_t *cs, int c, int m);

/* Runs one command (hiredis format) on member m of cluster c as is: MOVED
 * and ASK come back as error replies. Returns the reply (caller frees it
 * with freeReplyObject()), or NULL if the member is unreachable. */
redisReply *tc_member_command(const tc_clusters_t *cs, int c, int m, const char *fmt, ...);

/* Classifies a reply: 1 for a MOVED error, 2 for an ASK error (with *slot
 * and *port set from "MOVED|ASK SLOT HOST:PORT"; either may be NULL), 0 for
 * anything else (NULL too). */
int tc_reply_redirect(const redisReply *r, int *slot, int *port);

/* Runs one command about key on cluster c as a cluster client would: sends
 * it to the member serving key's slot and follows up to 5 MOVED (to the
 * named member) and ASK (ASKING, then the command there). *member (if not
 * NULL) is set to the member whose reply is returned, -1 if none. Returns
 * that reply (caller frees it with freeReplyObject()), or NULL if no
 * member could be reached or the redirections did not end. */
redisReply *tc_rc_command(const tc_clusters_t *cs, int c, const char *key, int *member, const char *fmt, ...);

/* GET key on cluster c (routed). A malloc'd copy of the value (caller
 * free()s), or NULL if absent, not a string or unreachable. */
char *tc_rc_get(const tc_clusters_t *cs, int c, const char *key);

/* SET key val [PX px when px > 0] on cluster c (routed). 0 on OK, else -1. */
int tc_rc_set(const tc_clusters_t *cs, int c, const char *key, const char *val, long long px);

/* PTTL key on cluster c (routed): ms left, -1 no expiry, -2 no key; -3 if
 * unreachable or an error. */
long long tc_rc_pttl(const tc_clusters_t *cs, int c, const char *key);

/* DEL key on cluster c (routed): keys deleted (0 or 1), or -1. */
int tc_rc_del(const tc_clusters_t *cs, int c, const char *key);

/* Number of Redis Clusters on which key holds exactly val (routed GETs). */
int tc_rc_count_value(const tc_clusters_t *cs, const char *key, const char *val);

/* cluster.sh pause / resume / kill C.M: SIGSTOP, SIGCONT, SIGKILL member m
 * of cluster c. Each returns the script's exit status (0 ok; resume fails
 * if the member is down). */
int tc_member_pause(const tc_clusters_t *cs, int c, int m);
int tc_member_resume(const tc_clusters_t *cs, int c, int m);
int tc_member_kill(const tc_clusters_t *cs, int c, int m);

/* cluster.sh restart C.M [--flush]: restarts member m on its port with its
 * cluster identity (flush != 0: without its data) and, when every member of
 * the cluster runs, waits until the cluster has settled. Returns the
 * script's exit status (0 ok). */
int tc_member_restart(const tc_clusters_t *cs, int c, int m, int flush);

/* cluster.sh failover C.M --mode MODE (NULL: takeover; "force",
 * "coordinated"): makes replica m its shard's primary and waits until the
 * cluster agrees; then refreshes cluster c's cached roles. Returns the
 * script's exit status (0 ok; non-zero if m is no running replica). */
int tc_member_failover(tc_clusters_t *cs, int c, int m, const char *mode);

/* cluster.sh settle [C]: waits (up to 15 s) until cluster c (c < 0: every
 * cluster) has settled -- its running members ok and in agreement, members
 * that do not run flagged failed and replaced. Returns the exit status. */
int tc_clusters_settle(const tc_clusters_t *cs, int c);

/* Begins moving slot from the member serving it to primary member `to` of
 * cluster c: CLUSTER SETSLOT slot IMPORTING <owner id> on `to`, then
 * CLUSTER SETSLOT slot MIGRATING <to id> on the owner. Returns the owner's
 * member index, or -1 (no owner, `to` already the owner or no primary, a
 * member unreachable or an error reply; reported on stderr). */
int tc_rc_slot_begin_move(tc_clusters_t *cs, int c, int slot, int to);

/* Moves up to max keys (max <= 0: all) of slot from member `from` to
 * member `to` of cluster c: CLUSTER GETKEYSINSLOT on `from`, then MIGRATE
 * ... KEYS, up to 100 at a time. Returns the number of keys moved, or -1. */
int tc_rc_slot_move_keys(const tc_clusters_t *cs, int c, int slot, int from, int to, int max);

/* Ends the move: CLUSTER SETSLOT slot NODE <to id> on `to`, then on `from`,
 * then on every other primary of cluster c. Returns 0, or -1 if one of them
 * answered an error or could not be reached (reported on stderr). */
int tc_rc_slot_end_move(tc_clusters_t *cs, int c, int slot, int from, int to);

/* Brings every cluster back to its state at creation, empty: resumes each
 * member that does not answer PING (restarting without data one that is
 * down or still silent), waits until the clusters settle, fails the
 * creation's primaries back (coordinated failover, takeover if that fails),
 * FLUSHALLs every primary (WAIT for its replicas), ends open slot moves
 * (CLUSTER SETSLOT STABLE), gives every slot back to its owner at creation
 * (DIR/slots), settles again if a failover or slot move was needed, and
 * refreshes cs. About 0.5 s when nothing was wrong. Returns 0, or -1 after
 * reporting on stderr what could not be restored. */
int tc_clusters_heal(tc_clusters_t *cs);

#endif /* REDLOCK_TEST_SUPPORT_CLUSTER_H */
