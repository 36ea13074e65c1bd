/*
 * test/support/cluster.c - see cluster.h. Drives deploy/cluster.sh for faults
 * and talks to the nodes with hiredis's blocking API. The second half is
 * about directories of Redis Clusters (cluster.sh start --cluster-shards).
 */
#include "cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef REDLOCK_CLUSTER_SH
#define REDLOCK_CLUSTER_SH "deploy/cluster.sh"
#endif

/* Highest descriptor the script's child closes before exec. */
#define TC_CLOSE_FDS_MAX 1024

/* Returns the cluster.sh path: $REDLOCK_CLUSTER_SH or the built-in one.
 * The string is static or from the environment; nobody frees it. */
static const char *tc_script(void) {
    const char *env = getenv("REDLOCK_CLUSTER_SH");
    return (env != NULL && env[0] != '\0') ? env : REDLOCK_CLUSTER_SH;
}

/* Returns 1 if i names a node of c, else 0. */
static int tc_valid(const tc_cluster_t *c, int i) {
    return c != NULL && i >= 0 && i < c->n;
}

/* Parses one "redis+cluster://HOST:PORT[?seed=...]" line into slot c->n
 * (port: the first seed's). Returns 0 or -1. */
static int tc_parse_cluster_uri(tc_cluster_t *c, const char *line) {
    const char *host = line + 16, *end, *p, *colon = NULL;
    long port = 0;

    end = host + strcspn(host, "?");
    for (p = host; p < end; p++) {
        if (*p == ':') colon = p;
    }
    if (colon == NULL || colon == host || end - colon < 2 || end - colon > 6) return -1;
    for (p = colon + 1; p < end; p++) {
        if (*p < '0' || *p > '9') return -1;
        port = port * 10 + (*p - '0');
    }
    if (port <= 0 || port > 65535 || strlen(line) >= sizeof c->uri[0]) return -1;
    strcpy(c->uri[c->n], line);
    c->port[c->n] = (int)port;
    c->n++;
    return 0;
}

/* Parses one "redis://HOST:PORT" (or redis+cluster://) line into slot c->n.
 * Returns 0 or -1. */
static int tc_parse_uri(tc_cluster_t *c, const char *line) {
    const char *colon = strrchr(line, ':');
    char *end = NULL;
    long port;

    if (strncmp(line, "redis+cluster://", 16) == 0) return tc_parse_cluster_uri(c, line);
    if (strncmp(line, "redis://", 8) != 0 || colon == NULL || colon < line + 8) return -1;
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || port <= 0 || port > 65535) return -1;
    if (strlen(line) >= sizeof c->uri[0]) return -1;
    strcpy(c->uri[c->n], line);
    c->port[c->n] = (int)port;
    c->n++;
    return 0;
}

/* Reads the opened nodes file f into c. Returns 0, or -1 with a message. */
static int tc_read_nodes(tc_cluster_t *c, FILE *f, const char *path) {
    char line[256];

    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0') continue;
        if (c->n >= TC_MAX_NODES) {
            fprintf(stderr, "tc_cluster_load: %s: more than %d nodes\n", path, TC_MAX_NODES);
            return -1;
        }
        if (tc_parse_uri(c, line) != 0) {
            fprintf(stderr, "tc_cluster_load: %s: bad line '%s'\n", path, line);
            return -1;
        }
    }
    if (c->n == 0) {
        fprintf(stderr, "tc_cluster_load: %s: no nodes\n", path);
        return -1;
    }
    return 0;
}

/* Fills *c from $REDLOCK_CLUSTER_DIR/nodes. Returns 0 or -1 (message on
 * stderr). Nothing to free. */
int tc_cluster_load(tc_cluster_t *c) {
    const char *dir = getenv("REDLOCK_CLUSTER_DIR");
    char path[600];
    FILE *f;
    int rc;

    memset(c, 0, sizeof *c);
    if (dir == NULL || dir[0] == '\0') {
        fprintf(stderr, "tc_cluster_load: REDLOCK_CLUSTER_DIR is not set "
                        "(start one with deploy/cluster.sh start -d DIR)\n");
        return -1;
    }
    if (strlen(dir) >= sizeof c->dir) {
        fprintf(stderr, "tc_cluster_load: REDLOCK_CLUSTER_DIR too long\n");
        return -1;
    }
    strcpy(c->dir, dir);
    snprintf(path, sizeof path, "%s/nodes", c->dir);
    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "tc_cluster_load: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    rc = tc_read_nodes(c, f, path);
    fclose(f);
    return rc;
}

/* In the forked child: closes inherited descriptors above stderr (up to
 * maxfd) and execs bash on argv. Never returns. */
static void tc_exec_child(char *const argv[], long maxfd) {
    long fd;

    for (fd = 3; fd < maxfd; fd++) close((int)fd);
    execv("/bin/bash", argv);
    _exit(127);
}

/* Waits for pid. Returns its exit status, or -1 if it died from a signal or
 * could not be waited for. */
static int tc_wait(pid_t pid) {
    int status;

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs `bash cluster.sh ARGS... -d DIR` (args: NULL-terminated, at most
 * TC_RUN_ARGS) and waits for it. Returns its exit status or -1. The strings
 * are borrowed; nothing to free. */
#define TC_RUN_ARGS 8
static int tc_run(const char *dir, const char *const *args) {
    char *argv[TC_RUN_ARGS + 6];
    int argc = 0, k;
    long maxfd = sysconf(_SC_OPEN_MAX);
    pid_t pid;

    if (maxfd < 0 || maxfd > TC_CLOSE_FDS_MAX) maxfd = TC_CLOSE_FDS_MAX;
    argv[argc++] = (char *)"bash";
    argv[argc++] = (char *)tc_script();
    for (k = 0; args[k] != NULL && k < TC_RUN_ARGS; k++) argv[argc++] = (char *)args[k];
    argv[argc++] = (char *)"-d";
    argv[argc++] = (char *)dir;
    argv[argc] = NULL;
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tc_node_run: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) tc_exec_child(argv, maxfd);
    return tc_wait(pid);
}

/* Runs `bash cluster.sh VERB [I] [EXTRA] -d DIR`. Returns its exit status
 * or -1. The argument strings are borrowed; nothing to free. */
int tc_node_run(const tc_cluster_t *c, const char *verb, int i, const char *extra) {
    char idx[16];
    const char *args[4];
    int n = 0;

    args[n++] = verb;
    if (i >= 0) {
        snprintf(idx, sizeof idx, "%d", i);
        args[n++] = idx;
    }
    if (extra != NULL && extra[0] != '\0') args[n++] = extra;
    args[n] = NULL;
    return tc_run(c->dir, args);
}

/* Returns pid's state letter in /proc (R, S, T, Z...), or 0 when it is gone. */
static char tc_proc_state(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* the command name may hold spaces */
    return (end != NULL && end[1] == ' ') ? end[2] : 0;
}

/* Node i's running (maybe paused) redis-server, found as cluster.sh finds
 * it: the pid in DIR/nodeI/redis.pid, a live redis-server working in
 * DIR/nodeI/data. Returns the pid, or -1 when the node is down. */
static pid_t tc_node_pid(const tc_cluster_t *c, int i) {
    char path[sizeof c->dir + 64], comm[64] = "";
    struct stat want, cwd;
    long pid = -1;
    if (!tc_valid(c, i)) return -1;
    snprintf(path, sizeof path, "%s/node%d/redis.pid", c->dir, i);
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    int ok = fscanf(f, "%ld", &pid) == 1 && pid > 0;
    fclose(f);
    char st = ok ? tc_proc_state((pid_t)pid) : 0;
    if (st == 0 || st == 'Z' || st == 'X') return -1;
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    if ((f = fopen(path, "r")) == NULL) return -1;
    ok = fgets(comm, sizeof comm, f) != NULL && strcmp(comm, "redis-server\n") == 0;
    fclose(f);
    snprintf(path, sizeof path, "/proc/%ld/cwd", pid);
    if (!ok || stat(path, &cwd) != 0) return -1;
    snprintf(path, sizeof path, "%s/node%d/data", c->dir, i);
    if (stat(path, &want) != 0) return -1;
    return cwd.st_dev == want.st_dev && cwd.st_ino == want.st_ino ? (pid_t)pid : -1;
}

/* cluster.sh pause / resume without the script (every test's set-up
 * resumes every node): sends sig to node i's server and waits, up to 1 s,
 * until it is stopped (stopped 1) or not. Returns 0, or 1 when the node
 * is down or never got there (stderr says which). */
static int tc_node_signal(const tc_cluster_t *c, int i, int sig, int stopped) {
    pid_t pid = tc_node_pid(c, i);
    if (pid < 0) {
        fprintf(stderr, "node %d is down\n", i);
        return 1;
    }
    if (kill(pid, sig) != 0) return 1;
    for (int k = 0; k < 100; k++) {
        char st = tc_proc_state(pid);
        if (st == 0) break;
        if ((st == 'T' || st == 't') == stopped) return 0;
        struct timespec ten_ms = {0, 10000000};
        nanosleep(&ten_ms, NULL);
    }
    fprintf(stderr, "node %d (pid %ld) did not become %s\n", i, (long)pid, stopped ? "stopped" : "running");
    return 1;
}

/* Pauses node i (SIGSTOP, as cluster.sh pause). Returns 0, or 1. */
int tc_node_pause(const tc_cluster_t *c, int i) {
    return tc_node_signal(c, i, SIGSTOP, 1);
}

/* Resumes node i (SIGCONT, as cluster.sh resume). Returns 0, or 1 when
 * it is down. */
int tc_node_resume(const tc_cluster_t *c, int i) {
    return tc_node_signal(c, i, SIGCONT, 0);
}

/* Returns cluster.sh kill's exit status (0 ok). */
int tc_node_kill(const tc_cluster_t *c, int i) {
    return tc_node_run(c, "kill", i, NULL);
}

/* Returns cluster.sh restart's exit status (0 ok); flush adds --flush. */
int tc_node_restart(const tc_cluster_t *c, int i, int flush) {
    return tc_node_run(c, "restart", i, flush ? "--flush" : NULL);
}

/* Brings node i back and empties it; a node that cannot FLUSHALL (down,
 * busy in DEBUG SLEEP or a script) is restarted without its data. Returns
 * nothing; failures go to stderr. */
static void tc_heal_node(const tc_cluster_t *c, int i) {
    if (tc_node_resume(c, i) != 0 && tc_node_restart(c, i, 1) != 0) {
        fprintf(stderr, "tc_cluster_heal: node %d: restart failed\n", i);
        return;
    }
    if (tc_redis_cmd(c, i, "FLUSHALL") == 0) return;
    if (tc_node_restart(c, i, 1) != 0 || tc_redis_cmd(c, i, "FLUSHALL") != 0)
        fprintf(stderr, "tc_cluster_heal: node %d: cannot be emptied\n", i);
}

static int tc_has_members(const char *dir);
static void tc_heal_clusters_dir(const char *dir);

/* Heals every node (see tc_heal_node); a directory of Redis Clusters with
 * tc_clusters_heal. Returns nothing. */
void tc_cluster_heal(const tc_cluster_t *c) {
    int i;

    if (tc_has_members(c->dir)) {
        tc_heal_clusters_dir(c->dir);
        return;
    }
    for (i = 0; i < c->n; i++) tc_heal_node(c, i);
}

/* Returns a context connected to 127.0.0.1:port with 1 s timeouts, or
 * NULL. The caller frees it with redisFree(). */
static redisContext *tc_connect_port(int port) {
    struct timeval tv = {1, 0};
    redisContext *ctx;

    ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (ctx == NULL) return NULL;
    if (ctx->err != 0 || redisSetTimeout(ctx, tv) != REDIS_OK) {
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

/* Returns a connected context with 1 s timeouts, or NULL. The caller frees
 * it with redisFree(). */
redisContext *tc_connect(const tc_cluster_t *c, int i) {
    if (!tc_valid(c, i)) return NULL;
    return tc_connect_port(c->port[i]);
}

/* Runs one command on node i over a fresh connection. Returns the reply
 * (caller frees it with freeReplyObject()), or NULL if unreachable. */
static redisReply *tc_vcommand(const tc_cluster_t *c, int i, const char *fmt, va_list ap) {
    redisContext *ctx = tc_connect(c, i);
    redisReply *reply;

    if (ctx == NULL) return NULL;
    reply = redisvCommand(ctx, fmt, ap);
    redisFree(ctx);
    return reply;
}

/* Variadic front end of tc_vcommand; same ownership (freeReplyObject). */
static redisReply *tc_command(const tc_cluster_t *c, int i, const char *fmt, ...) {
    va_list ap;
    redisReply *reply;

    va_start(ap, fmt);
    reply = tc_vcommand(c, i, fmt, ap);
    va_end(ap);
    return reply;
}

/* Returns a malloc'd copy of key's value on node i (caller free()s), or
 * NULL if absent, not a string or unreachable. */
char *tc_get(const tc_cluster_t *c, int i, const char *key) {
    redisReply *r = tc_command(c, i, "GET %s", key);
    char *val = NULL;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        val = malloc(r->len + 1);
        if (val != NULL) {
            memcpy(val, r->str, r->len);
            val[r->len] = '\0';
        }
    }
    if (r != NULL) freeReplyObject(r);
    return val;
}

/* Returns 0 if SET key val [PX px] answered OK on node i, else -1. */
int tc_set(const tc_cluster_t *c, int i, const char *key, const char *val, long long px) {
    redisReply *r;
    int rc;

    if (px > 0)
        r = tc_command(c, i, "SET %s %s PX %lld", key, val, px);
    else
        r = tc_command(c, i, "SET %s %s", key, val);
    rc = (r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) ? 0 : -1;
    if (r != NULL) freeReplyObject(r);
    return rc;
}

/* Returns PTTL key on node i (ms, -1 or -2), or -3 if unreachable/error. */
long long tc_pttl(const tc_cluster_t *c, int i, const char *key) {
    redisReply *r = tc_command(c, i, "PTTL %s", key);
    long long ms = -3;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER) ms = r->integer;
    if (r != NULL) freeReplyObject(r);
    return ms;
}

/* Returns the number of keys DEL removed on node i, or -1. */
int tc_del(const tc_cluster_t *c, int i, const char *key) {
    redisReply *r = tc_command(c, i, "DEL %s", key);
    int n = -1;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER) n = (int)r->integer;
    if (r != NULL) freeReplyObject(r);
    return n;
}

/* Returns how many reachable nodes hold key == val. */
int tc_count_value(const tc_cluster_t *c, const char *key, const char *val) {
    int i, count = 0;

    for (i = 0; i < c->n; i++) {
        char *got = tc_get(c, i, key);
        if (got != NULL && (val == NULL || strcmp(got, val) == 0)) count++;
        free(got);
    }
    return count;
}

/* Polls tc_count_value every 10 ms, up to 100 times, until it is want;
 * returns the last count. */
int tc_await_count(const tc_cluster_t *c, const char *key, const char *val, int want) {
    struct timespec ten_ms = {0, 10000000L};
    int tries, n = tc_count_value(c, key, val);

    for (tries = 0; n != want && tries < 100; tries++) {
        nanosleep(&ten_ms, NULL);
        n = tc_count_value(c, key, val);
    }
    return n;
}

/* Returns 0 if node i ran the command without an error reply, else -1. */
int tc_redis_cmd(const tc_cluster_t *c, int i, const char *fmt, ...) {
    va_list ap;
    redisReply *r;
    int rc;

    va_start(ap, fmt);
    r = tc_vcommand(c, i, fmt, ap);
    va_end(ap);
    rc = (r != NULL && r->type != REDIS_REPLY_ERROR) ? 0 : -1;
    if (r != NULL) freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- Redis Clusters */

/* Most redirections tc_rc_command follows. */
#define TC_MAX_HOPS 5
/* Keys moved per MIGRATE. */
#define TC_MIGRATE_BATCH 100

/* Returns 1 if dir has a members file (a directory of Redis Clusters). */
static int tc_has_members(const char *dir) {
    char path[600];

    snprintf(path, sizeof path, "%s/members", dir);
    return access(path, F_OK) == 0;
}

/* Returns 1 if (c, m) names a member of cs, else 0. */
static int tc_member_valid(const tc_clusters_t *cs, int c, int m) {
    return cs != NULL && c >= 0 && c < cs->base.n && m >= 0 && m < cs->c[c].n;
}

/* Returns the member of cluster c listening on port, or -1. */
static int tc_member_by_port(const tc_clusters_t *cs, int c, int port) {
    int m;

    for (m = 0; m < cs->c[c].n; m++) {
        if (cs->c[c].m[m].port == port) return m;
    }
    return -1;
}

/* Parses one members line "C M PORT ROLE PRIMARY" into cs. Returns 0 or -1. */
static int tc_parse_member(tc_clusters_t *cs, const char *line) {
    char role[16], of[16], *end = NULL;
    int c, m, port;
    tc_member_t *mb;

    if (sscanf(line, "%d %d %d %15s %15s", &c, &m, &port, role, of) != 5) return -1;
    if (c < 0 || c >= cs->base.n || m != cs->c[c].n || m >= TC_MAX_MEMBERS || port <= 0 || port > 65535) return -1;
    mb = &cs->c[c].m[m];
    mb->port = port;
    mb->primary = -1;
    mb->created_of = -1;
    if (strcmp(role, "primary") == 0 && strcmp(of, "-") == 0) {
        mb->created_primary = 1;
    } else if (strcmp(role, "replica") == 0) {
        errno = 0;
        mb->created_of = (int)strtol(of, &end, 10);
        if (errno != 0 || *end != '\0' || end == of || mb->created_of < 0) return -1;
    } else {
        return -1;
    }
    cs->c[c].n++;
    return 0;
}

/* Reads dir/members into cs (whose base is loaded). Returns 0, or -1 with a
 * message on stderr. */
static int tc_read_members(tc_clusters_t *cs, const char *dir) {
    char path[600], line[256];
    FILE *f;
    int c, m, rc = 0;

    snprintf(path, sizeof path, "%s/members", dir);
    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "tc_clusters_load: cannot open %s: %s (not started with --cluster-shards?)\n", path,
                strerror(errno));
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != '\0' && tc_parse_member(cs, line) != 0) {
            fprintf(stderr, "tc_clusters_load: %s: bad or out-of-order line '%s'\n", path, line);
            rc = -1;
        }
    }
    fclose(f);
    for (c = 0; rc == 0 && c < cs->base.n; c++) {
        if (cs->c[c].n == 0) {
            fprintf(stderr, "tc_clusters_load: %s: cluster %d has no member\n", path, c);
            rc = -1;
        }
        for (m = 0; rc == 0 && m < cs->c[c].n; m++) {
            if (cs->c[c].m[m].created_of >= cs->c[c].n) {
                fprintf(stderr, "tc_clusters_load: %s: member %d.%d replicates no member\n", path, c, m);
                rc = -1;
            }
        }
    }
    return rc;
}

/* Loads the directory dir (nodes, members) into cs and refreshes it.
 * Returns 0 or -1 (message on stderr). */
static int tc_clusters_load_dir(tc_clusters_t *cs, const char *dir) {
    char path[600];
    FILE *f;
    int rc;

    memset(cs, 0, sizeof *cs);
    if (strlen(dir) >= sizeof cs->base.dir) {
        fprintf(stderr, "tc_clusters_load: directory name too long\n");
        return -1;
    }
    strcpy(cs->base.dir, dir);
    snprintf(path, sizeof path, "%s/nodes", dir);
    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "tc_clusters_load: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    rc = tc_read_nodes(&cs->base, f, path);
    fclose(f);
    if (rc != 0 || tc_read_members(cs, dir) != 0) return -1;
    tc_clusters_refresh(cs, -1);
    return 0;
}

/* Fills *cs from $REDLOCK_CLUSTER_DIR. Returns 0 or -1 (message on stderr). */
int tc_clusters_load(tc_clusters_t *cs) {
    const char *dir = getenv("REDLOCK_CLUSTER_DIR");

    if (dir == NULL || dir[0] == '\0') {
        memset(cs, 0, sizeof *cs);
        fprintf(stderr, "tc_clusters_load: REDLOCK_CLUSTER_DIR is not set (start clusters with "
                        "deploy/cluster.sh start --cluster-shards 3 -d DIR)\n");
        return -1;
    }
    return tc_clusters_load_dir(cs, dir);
}

/* Asks member mb its id and role over one connection. Returns 0, or -1 if
 * it does not answer (role -1, id kept). */
static int tc_refresh_member(tc_member_t *mb) {
    redisContext *ctx = tc_connect_port(mb->port);
    redisReply *r;

    mb->primary = -1;
    if (ctx == NULL) return -1;
    r = redisCommand(ctx, "CLUSTER MYID");
    if (r != NULL && r->type == REDIS_REPLY_STRING && r->len < sizeof mb->id) {
        memcpy(mb->id, r->str, r->len);
        mb->id[r->len] = '\0';
    }
    if (r != NULL) freeReplyObject(r);
    r = redisCommand(ctx, "ROLE");
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING) {
        if (strcmp(r->element[0]->str, "master") == 0)
            mb->primary = 1;
        else if (strcmp(r->element[0]->str, "slave") == 0)
            mb->primary = 0;
    }
    if (r != NULL) freeReplyObject(r);
    redisFree(ctx);
    return mb->primary < 0 ? -1 : 0;
}

/* Refreshes the ids and roles of cluster c's members (c < 0: all).
 * Returns how many did not answer. */
int tc_clusters_refresh(tc_clusters_t *cs, int c) {
    int first = c < 0 ? 0 : c, last = c < 0 ? cs->base.n - 1 : c, m, missing = 0;

    if (c >= cs->base.n) return 0;
    for (c = first; c <= last; c++) {
        for (m = 0; m < cs->c[c].n; m++) missing += tc_refresh_member(&cs->c[c].m[m]) != 0;
    }
    return missing;
}

/* Returns the CRC16/XMODEM of buf (bitwise; speed is no concern here). */
unsigned tc_crc16(const char *buf, size_t len) {
    unsigned crc = 0;
    size_t i;
    int bit;

    for (i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (bit = 0; bit < 8; bit++) crc = (crc & 0x8000u) ? ((crc << 1) ^ 0x1021u) & 0xffffu : (crc << 1) & 0xffffu;
    }
    return crc;
}

/* Returns key's slot, hash tags honoured (see cluster.h). */
int tc_key_slot(const char *key, size_t len) {
    size_t open, close;

    for (open = 0; open < len && key[open] != '{'; open++)
        ;
    if (open < len) {
        for (close = open + 1; close < len && key[close] != '}'; close++)
            ;
        if (close < len && close > open + 1) return (int)(tc_crc16(key + open + 1, close - open - 1) & (TC_SLOTS - 1));
    }
    return (int)(tc_crc16(key, len) & (TC_SLOTS - 1));
}

/* Returns the slot of a NUL-terminated key. */
int tc_slot(const char *key) {
    return tc_key_slot(key, strlen(key));
}

/* Returns a connected context for member m of cluster c, or NULL. */
redisContext *tc_member_connect(const tc_clusters_t *cs, int c, int m) {
    if (!tc_member_valid(cs, c, m)) return NULL;
    return tc_connect_port(cs->c[c].m[m].port);
}

/* va_list form of tc_member_command; same ownership. */
static redisReply *tc_member_vcommand(const tc_clusters_t *cs, int c, int m, const char *fmt, va_list ap) {
    redisContext *ctx = tc_member_connect(cs, c, m);
    redisReply *r;

    if (ctx == NULL) return NULL;
    r = redisvCommand(ctx, fmt, ap);
    redisFree(ctx);
    return r;
}

/* Returns member m's reply to the command (caller frees), or NULL. */
redisReply *tc_member_command(const tc_clusters_t *cs, int c, int m, const char *fmt, ...) {
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = tc_member_vcommand(cs, c, m, fmt, ap);
    va_end(ap);
    return r;
}

/* Runs a command on member m expecting no error reply. Returns 0, or -1
 * after printing the error (or the unreachability) on stderr with what. */
static int tc_member_ok(const tc_clusters_t *cs, int c, int m, const char *what, const char *fmt, ...) {
    va_list ap;
    redisReply *r;
    int rc = 0;

    va_start(ap, fmt);
    r = tc_member_vcommand(cs, c, m, fmt, ap);
    va_end(ap);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "%s: member %d.%d: %s\n", what, c, m, r != NULL ? r->str : "unreachable");
        rc = -1;
    }
    if (r != NULL) freeReplyObject(r);
    return rc;
}

/* Returns 1 if member m answers ROLE as a primary, 0 as a replica, -1 if
 * it does not answer. */
static int tc_member_is_primary(const tc_clusters_t *cs, int c, int m) {
    redisReply *r = tc_member_command(cs, c, m, "ROLE");
    int primary = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING)
        primary = strcmp(r->element[0]->str, "master") == 0 ? 1 : 0;
    if (r != NULL) freeReplyObject(r);
    return primary;
}

/* Reads a CLUSTER SLOTS reply into owner[] (see tc_rc_slot_map). Returns
 * the number of slots served. */
static int tc_read_slots(const tc_clusters_t *cs, int c, const redisReply *r, int owner[TC_SLOTS]) {
    size_t k;
    long long s;
    int served = 0;

    for (k = 0; k < r->elements; k++) {
        const redisReply *e = r->element[k];
        int m;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER || e->element[2]->type != REDIS_REPLY_ARRAY ||
            e->element[2]->elements < 2 || e->element[2]->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        m = tc_member_by_port(cs, c, (int)e->element[2]->element[1]->integer);
        for (s = e->element[0]->integer; s <= e->element[1]->integer && s < TC_SLOTS; s++) {
            if (s < 0) continue;
            owner[s] = m;
            served++;
        }
    }
    return served;
}

/* Fills owner[] from member from's CLUSTER SLOTS (from < 0: the first that
 * answers). Returns the slots served, or -1. */
int tc_rc_slot_map(const tc_clusters_t *cs, int c, int from, int owner[TC_SLOTS]) {
    int s, m, last;

    for (s = 0; s < TC_SLOTS; s++) owner[s] = -1;
    if (cs == NULL || c < 0 || c >= cs->base.n || from >= cs->c[c].n) return -1;
    m = from < 0 ? 0 : from;
    last = from < 0 ? cs->c[c].n - 1 : from;
    for (; m <= last; m++) {
        redisReply *r = tc_member_command(cs, c, m, "CLUSTER SLOTS");
        int served = -1;

        if (r != NULL && r->type == REDIS_REPLY_ARRAY) served = tc_read_slots(cs, c, r, owner);
        if (r != NULL) freeReplyObject(r);
        if (served >= 0) return served;
    }
    return -1;
}

/* Returns the member serving slot in cluster c now, or -1. */
int tc_rc_slot_owner(const tc_clusters_t *cs, int c, int slot) {
    int *owner, m = -1;

    if (slot < 0 || slot >= TC_SLOTS) return -1;
    owner = malloc(sizeof *owner * TC_SLOTS);
    if (owner == NULL) return -1;
    if (tc_rc_slot_map(cs, c, -1, owner) >= 0) m = owner[slot];
    free(owner);
    return m;
}

/* Returns 1 for MOVED, 2 for ASK (setting *slot and *port), else 0. */
int tc_reply_redirect(const redisReply *r, int *slot, int *port) {
    const char *p, *colon;
    char *end = NULL;
    long v;
    int kind;

    if (r == NULL || r->type != REDIS_REPLY_ERROR || r->str == NULL) return 0;
    if (strncmp(r->str, "MOVED ", 6) == 0) {
        kind = 1;
        p = r->str + 6;
    } else if (strncmp(r->str, "ASK ", 4) == 0) {
        kind = 2;
        p = r->str + 4;
    } else {
        return 0;
    }
    errno = 0;
    v = strtol(p, &end, 10);
    if (errno != 0 || end == p || *end != ' ' || v < 0 || v >= TC_SLOTS) return 0;
    if (slot != NULL) *slot = (int)v;
    colon = strrchr(end, ':');
    if (colon == NULL) return 0;
    v = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || v <= 0 || v > 65535) return 0;
    if (port != NULL) *port = (int)v;
    return kind;
}

/* Sends the formatted command cmd (len bytes) to 127.0.0.1:port, preceded
 * by ASKING when asking. Returns the command's reply (caller frees), or
 * NULL if unreachable. */
static redisReply *tc_send_formatted(int port, const char *cmd, size_t len, int asking) {
    redisContext *ctx = tc_connect_port(port);
    void *reply = NULL;
    int ok;

    if (ctx == NULL) return NULL;
    ok = !asking || redisAppendCommand(ctx, "ASKING") == REDIS_OK;
    ok = ok && redisAppendFormattedCommand(ctx, cmd, len) == REDIS_OK;
    if (ok && asking) {
        ok = redisGetReply(ctx, &reply) == REDIS_OK;
        if (reply != NULL) freeReplyObject(reply);
        reply = NULL;
    }
    if (ok && redisGetReply(ctx, &reply) != REDIS_OK) reply = NULL;
    redisFree(ctx);
    return reply;
}

/* Routes the formatted command cmd about key (see tc_rc_command). */
static redisReply *tc_route(const tc_clusters_t *cs, int c, const char *key, int *member, const char *cmd, size_t len) {
    redisReply *r = NULL;
    int target = tc_rc_slot_owner(cs, c, tc_slot(key)), asking = 0, hop, port = 0, kind;

    for (hop = 0; hop <= TC_MAX_HOPS && target >= 0; hop++) {
        r = tc_send_formatted(cs->c[c].m[target].port, cmd, len, asking);
        kind = tc_reply_redirect(r, NULL, &port);
        if (kind == 0) {
            if (r != NULL && member != NULL) *member = target;
            return r;
        }
        freeReplyObject(r);
        r = NULL;
        asking = kind == 2;
        target = tc_member_by_port(cs, c, port);
    }
    return NULL;
}

/* Returns the routed reply to the command about key (caller frees), or NULL. */
redisReply *tc_rc_command(const tc_clusters_t *cs, int c, const char *key, int *member, const char *fmt, ...) {
    va_list ap;
    char *cmd = NULL;
    int len;
    redisReply *r;

    if (member != NULL) *member = -1;
    if (cs == NULL || c < 0 || c >= cs->base.n) return NULL;
    va_start(ap, fmt);
    len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0) return NULL;
    r = tc_route(cs, c, key, member, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return r;
}

/* Returns a malloc'd copy of key's value on cluster c, or NULL. */
char *tc_rc_get(const tc_clusters_t *cs, int c, const char *key) {
    redisReply *r = tc_rc_command(cs, c, key, NULL, "GET %s", key);
    char *val = NULL;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        val = malloc(r->len + 1);
        if (val != NULL) {
            memcpy(val, r->str, r->len);
            val[r->len] = '\0';
        }
    }
    if (r != NULL) freeReplyObject(r);
    return val;
}

/* Returns 0 if SET key val [PX px] answered OK on cluster c, else -1. */
int tc_rc_set(const tc_clusters_t *cs, int c, const char *key, const char *val, long long px) {
    redisReply *r;
    int rc;

    if (px > 0)
        r = tc_rc_command(cs, c, key, NULL, "SET %s %s PX %lld", key, val, px);
    else
        r = tc_rc_command(cs, c, key, NULL, "SET %s %s", key, val);
    rc = (r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) ? 0 : -1;
    if (r != NULL) freeReplyObject(r);
    return rc;
}

/* Returns PTTL key on cluster c (ms, -1 or -2), or -3. */
long long tc_rc_pttl(const tc_clusters_t *cs, int c, const char *key) {
    redisReply *r = tc_rc_command(cs, c, key, NULL, "PTTL %s", key);
    long long ms = -3;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER) ms = r->integer;
    if (r != NULL) freeReplyObject(r);
    return ms;
}

/* Returns the number of keys DEL removed on cluster c, or -1. */
int tc_rc_del(const tc_clusters_t *cs, int c, const char *key) {
    redisReply *r = tc_rc_command(cs, c, key, NULL, "DEL %s", key);
    int n = -1;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER) n = (int)r->integer;
    if (r != NULL) freeReplyObject(r);
    return n;
}

/* Returns how many clusters hold key == val. */
int tc_rc_count_value(const tc_clusters_t *cs, const char *key, const char *val) {
    int c, count = 0;

    for (c = 0; c < cs->base.n; c++) {
        char *got = tc_rc_get(cs, c, key);
        if (got != NULL && (val == NULL || strcmp(got, val) == 0)) count++;
        free(got);
    }
    return count;
}

/* Runs `cluster.sh VERB C.M [EXTRA1 [EXTRA2]] -d DIR`. Returns its exit
 * status, or -1 (also for a member out of range). */
static int tc_member_run(const tc_clusters_t *cs, const char *verb, int c, int m, const char *x1, const char *x2) {
    char addr[32];
    const char *args[5] = {verb, addr, x1, x2, NULL};

    if (!tc_member_valid(cs, c, m)) return -1;
    snprintf(addr, sizeof addr, "%d.%d", c, m);
    return tc_run(cs->base.dir, args);
}

/* Returns cluster.sh pause C.M's exit status (0 ok). */
int tc_member_pause(const tc_clusters_t *cs, int c, int m) {
    return tc_member_run(cs, "pause", c, m, NULL, NULL);
}

/* Returns cluster.sh resume C.M's exit status (0 ok, non-zero if down). */
int tc_member_resume(const tc_clusters_t *cs, int c, int m) {
    return tc_member_run(cs, "resume", c, m, NULL, NULL);
}

/* Returns cluster.sh kill C.M's exit status (0 ok). */
int tc_member_kill(const tc_clusters_t *cs, int c, int m) {
    return tc_member_run(cs, "kill", c, m, NULL, NULL);
}

/* Returns cluster.sh restart C.M [--flush]'s exit status (0 ok). */
int tc_member_restart(const tc_clusters_t *cs, int c, int m, int flush) {
    return tc_member_run(cs, "restart", c, m, flush ? "--flush" : NULL, NULL);
}

/* Returns cluster.sh failover C.M --mode MODE's exit status (0 ok); then
 * refreshes cluster c. */
int tc_member_failover(tc_clusters_t *cs, int c, int m, const char *mode) {
    int rc = tc_member_run(cs, "failover", c, m, "--mode", mode != NULL ? mode : "takeover");

    if (tc_member_valid(cs, c, m)) tc_clusters_refresh(cs, c);
    return rc;
}

/* Returns cluster.sh settle [C]'s exit status (0 ok). */
int tc_clusters_settle(const tc_clusters_t *cs, int c) {
    char idx[16];
    const char *args[3] = {"settle", NULL, NULL};

    if (c >= 0) {
        snprintf(idx, sizeof idx, "%d", c);
        args[1] = idx;
    }
    return tc_run(cs->base.dir, args);
}

/* Makes sure every member of cluster c has a known id (refreshing if one
 * has none). Returns 0, or -1 if an id is still unknown. */
static int tc_need_ids(tc_clusters_t *cs, int c) {
    int m, refreshed = 0;

    for (m = 0; m < cs->c[c].n; m++) {
        if (cs->c[c].m[m].id[0] != '\0') continue;
        if (!refreshed) {
            tc_clusters_refresh(cs, c);
            refreshed = 1;
        }
        if (cs->c[c].m[m].id[0] == '\0') {
            fprintf(stderr, "tc_rc: member %d.%d: node id unknown (unreachable)\n", c, m);
            return -1;
        }
    }
    return 0;
}

/* Begins moving slot to member `to`. Returns the owner, or -1. */
int tc_rc_slot_begin_move(tc_clusters_t *cs, int c, int slot, int to) {
    int from;

    if (!tc_member_valid(cs, c, to) || slot < 0 || slot >= TC_SLOTS || tc_need_ids(cs, c) != 0) return -1;
    from = tc_rc_slot_owner(cs, c, slot);
    if (from < 0 || from == to || tc_member_is_primary(cs, c, to) != 1) {
        fprintf(stderr, "tc_rc_slot_begin_move: slot %d of cluster %d: owner %d, target %d is %s\n", slot, c, from, to,
                from == to ? "the owner" : "no primary (or no owner)");
        return -1;
    }
    if (tc_member_ok(cs, c, to, "tc_rc_slot_begin_move", "CLUSTER SETSLOT %d IMPORTING %s", slot,
                     cs->c[c].m[from].id) != 0 ||
        tc_member_ok(cs, c, from, "tc_rc_slot_begin_move", "CLUSTER SETSLOT %d MIGRATING %s", slot,
                     cs->c[c].m[to].id) != 0)
        return -1;
    return from;
}

/* Sends one MIGRATE of the keys in r (a GETKEYSINSLOT reply) from member
 * from to member to. Returns 0 or -1. */
static int tc_migrate_batch(const tc_clusters_t *cs, int c, int from, int to, const redisReply *keys) {
    size_t n = keys->elements, k, argc = 7 + n; /* MIGRATE HOST PORT "" 0 TIMEOUT KEYS k... */
    const char **argv = malloc(sizeof *argv * argc);
    size_t *argvlen = malloc(sizeof *argvlen * argc);
    char port[16];
    redisContext *ctx = NULL;
    redisReply *r = NULL;
    int rc = -1;

    if (argv != NULL && argvlen != NULL) {
        snprintf(port, sizeof port, "%d", cs->c[c].m[to].port);
        argv[0] = "MIGRATE";
        argv[1] = "127.0.0.1";
        argv[2] = port;
        argv[3] = "";
        argv[4] = "0";
        argv[5] = "5000";
        for (k = 0; k < 6; k++) argvlen[k] = strlen(argv[k]);
        argv[6] = "KEYS";
        argvlen[6] = 4;
        for (k = 0; k < n; k++) {
            argv[7 + k] = keys->element[k]->str;
            argvlen[7 + k] = keys->element[k]->len;
        }
        ctx = tc_member_connect(cs, c, from);
    }
    if (ctx != NULL) r = redisCommandArgv(ctx, (int)argc, argv, argvlen);
    if (r != NULL && r->type == REDIS_REPLY_STATUS)
        rc = 0;
    else
        fprintf(stderr, "tc_rc_slot_move_keys: MIGRATE from %d.%d to %d.%d: %s\n", c, from, c, to,
                r != NULL && r->str != NULL ? r->str : "no answer");
    if (r != NULL) freeReplyObject(r);
    if (ctx != NULL) redisFree(ctx);
    free(argv);
    free(argvlen);
    return rc;
}

/* Moves up to max keys of slot (max <= 0: all). Returns the count or -1. */
int tc_rc_slot_move_keys(const tc_clusters_t *cs, int c, int slot, int from, int to, int max) {
    int moved = 0;

    if (!tc_member_valid(cs, c, from) || !tc_member_valid(cs, c, to) || slot < 0 || slot >= TC_SLOTS) return -1;
    for (;;) {
        int want = TC_MIGRATE_BATCH, got, rc;
        redisReply *keys;

        if (max > 0 && max - moved < want) want = max - moved;
        if (want <= 0) break;
        keys = tc_member_command(cs, c, from, "CLUSTER GETKEYSINSLOT %d %d", slot, want);
        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
            if (keys != NULL) freeReplyObject(keys);
            return -1;
        }
        got = (int)keys->elements;
        rc = got > 0 ? tc_migrate_batch(cs, c, from, to, keys) : 0;
        freeReplyObject(keys);
        if (rc != 0) return -1;
        if (got == 0) break;
        moved += got;
    }
    return moved;
}

/* Ends moving slot from `from` to `to`. Returns 0 or -1. */
int tc_rc_slot_end_move(tc_clusters_t *cs, int c, int slot, int from, int to) {
    const char *id;
    int m, rc = 0;

    if (!tc_member_valid(cs, c, from) || !tc_member_valid(cs, c, to) || slot < 0 || slot >= TC_SLOTS ||
        tc_need_ids(cs, c) != 0)
        return -1;
    id = cs->c[c].m[to].id;
    rc |= tc_member_ok(cs, c, to, "tc_rc_slot_end_move", "CLUSTER SETSLOT %d NODE %s", slot, id);
    rc |= tc_member_ok(cs, c, from, "tc_rc_slot_end_move", "CLUSTER SETSLOT %d NODE %s", slot, id);
    for (m = 0; m < cs->c[c].n; m++) {
        if (m != from && m != to && tc_member_is_primary(cs, c, m) == 1)
            rc |= tc_member_ok(cs, c, m, "tc_rc_slot_end_move", "CLUSTER SETSLOT %d NODE %s", slot, id);
    }
    return rc != 0 ? -1 : 0;
}

/* Returns 1 if member m answers PING, else 0 (1 s when it is paused). */
static int tc_member_pings(const tc_clusters_t *cs, int c, int m) {
    redisReply *r = tc_member_command(cs, c, m, "PING");
    int up = r != NULL && r->type == REDIS_REPLY_STATUS;

    if (r != NULL) freeReplyObject(r);
    return up;
}

/* Heal step: brings member m back if it does not answer (resumed, else
 * restarted without data); *changed is set when it did not. Returns 0 or
 * -1. */
static int tc_heal_member(tc_clusters_t *cs, int c, int m, int *changed) {
    if (tc_member_pings(cs, c, m)) return 0;
    *changed = 1;
    if (tc_member_resume(cs, c, m) == 0 && tc_member_pings(cs, c, m)) return 0;
    if (tc_member_restart(cs, c, m, 1) != 0) {
        fprintf(stderr, "tc_clusters_heal: member %d.%d: restart failed\n", c, m);
        return -1;
    }
    return 0;
}

/* Heal step: ends the slot moves member m (a primary) has open, as its own
 * line of CLUSTER NODES shows them ("[S->-id]", "[S-<-id]"). Returns 0 or -1. */
static int tc_heal_open_moves(tc_clusters_t *cs, int c, int m) {
    redisReply *r = tc_member_command(cs, c, m, "CLUSTER NODES");
    const char *line, *p;
    int rc = 0;

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        if (r != NULL) freeReplyObject(r);
        return -1;
    }
    line = strstr(r->str, "myself");
    for (p = line; p != NULL && *p != '\0' && *p != '\n'; p++) {
        if (*p == '[' && p[1] >= '0' && p[1] <= '9') {
            int slot = atoi(p + 1);
            rc |= tc_member_ok(cs, c, m, "tc_clusters_heal", "CLUSTER SETSLOT %d STABLE", slot);
        }
    }
    freeReplyObject(r);
    return rc;
}

/* Heal step: waits (WAIT, up to 2 s) until the replicas member m (a
 * primary) had at creation acknowledged its writes. Returns 0 or -1. */
static int tc_wait_replicas(const tc_clusters_t *cs, int c, int m) {
    redisReply *r;
    int k, want = 0, rc = 0;

    for (k = 0; k < cs->c[c].n; k++) want += cs->c[c].m[k].created_of == m;
    if (want == 0) return 0;
    r = tc_member_command(cs, c, m, "WAIT %d 2000", want);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < want) {
        fprintf(stderr, "tc_clusters_heal: member %d.%d: %d replica(s) did not acknowledge the flush\n", c, m, want);
        rc = -1;
    }
    if (r != NULL) freeReplyObject(r);
    return rc;
}

/* Heal step: reads dir/slots (the slot map at creation) for cluster c into
 * owner[]. Returns 0 or -1. */
static int tc_read_created_slots(const tc_clusters_t *cs, int c, int owner[TC_SLOTS]) {
    char path[600], line[128];
    FILE *f;
    int cl, start, end, m, s;

    for (s = 0; s < TC_SLOTS; s++) owner[s] = -1;
    snprintf(path, sizeof path, "%s/slots", cs->base.dir);
    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "tc_clusters_heal: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "%d %d %d %d", &cl, &start, &end, &m) != 4 || cl != c) continue;
        for (s = start; s <= end && s < TC_SLOTS; s++) {
            if (s >= 0 && m >= 0 && m < cs->c[c].n) owner[s] = m;
        }
    }
    fclose(f);
    return 0;
}

/* Heal step: gives every slot of cluster c back to its owner at creation;
 * *changed is set if one was not. Returns 0 or -1. */
static int tc_heal_slots(tc_clusters_t *cs, int c, int *changed) {
    int *want = malloc(sizeof *want * TC_SLOTS), *now = malloc(sizeof *now * TC_SLOTS);
    int s, from, rc = 0;

    if (want == NULL || now == NULL || tc_read_created_slots(cs, c, want) != 0 || tc_rc_slot_map(cs, c, -1, now) < 0) {
        rc = -1;
    } else {
        for (s = 0; s < TC_SLOTS; s++) {
            if (want[s] < 0 || now[s] == want[s]) continue;
            *changed = 1;
            from = tc_rc_slot_begin_move(cs, c, s, want[s]);
            if (from < 0 || tc_rc_slot_end_move(cs, c, s, from, want[s]) != 0) {
                fprintf(stderr, "tc_clusters_heal: slot %d of cluster %d not given back to member %d\n", s, c, want[s]);
                rc = -1;
            }
        }
    }
    free(want);
    free(now);
    return rc;
}

/* Restores every cluster as created, empty. Returns 0 or -1. The
 * clusters are left to settle (cluster.sh settle, seconds of redis-cli
 * calls) only after a member was brought back or a repair was made: a
 * cluster whose members all answered as created is settled already. */
int tc_clusters_heal(tc_clusters_t *cs) {
    int c, m, rc = 0, changed = 0;

    for (c = 0; c < cs->base.n; c++) {
        for (m = 0; m < cs->c[c].n; m++) rc |= tc_heal_member(cs, c, m, &changed);
    }
    if (changed && tc_clusters_settle(cs, -1) != 0) {
        fprintf(stderr, "tc_clusters_heal: the clusters did not settle\n");
        rc = -1;
    }
    tc_clusters_refresh(cs, -1);
    for (c = 0; c < cs->base.n; c++) {
        for (m = 0; m < cs->c[c].n; m++) {
            if (!cs->c[c].m[m].created_primary || cs->c[c].m[m].primary != 0) continue;
            changed = 1;
            if (tc_member_failover(cs, c, m, "coordinated") != 0 && tc_member_failover(cs, c, m, NULL) != 0) {
                fprintf(stderr, "tc_clusters_heal: member %d.%d could not be made primary again\n", c, m);
                rc = -1;
            }
        }
    }
    tc_clusters_refresh(cs, -1);
    for (c = 0; c < cs->base.n; c++) {
        for (m = 0; m < cs->c[c].n; m++) {
            if (cs->c[c].m[m].primary != 1) continue;
            rc |= tc_member_ok(cs, c, m, "tc_clusters_heal", "FLUSHALL");
            rc |= tc_wait_replicas(cs, c, m);
            rc |= tc_heal_open_moves(cs, c, m);
        }
        rc |= tc_heal_slots(cs, c, &changed);
    }
    if (changed && tc_clusters_settle(cs, -1) != 0) {
        fprintf(stderr, "tc_clusters_heal: the clusters did not settle after the repairs\n");
        rc = -1;
    }
    tc_clusters_refresh(cs, -1);
    return rc != 0 ? -1 : 0;
}

/* tc_cluster_heal of a directory of Redis Clusters. Returns nothing. */
static void tc_heal_clusters_dir(const char *dir) {
    tc_clusters_t *cs = malloc(sizeof *cs);

    if (cs == NULL || tc_clusters_load_dir(cs, dir) != 0 || tc_clusters_heal(cs) != 0)
        fprintf(stderr, "tc_cluster_heal: %s: the Redis Clusters were not fully healed\n", dir);
    free(cs);
}
