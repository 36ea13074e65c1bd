/*
 * test/support/cluster.c - see cluster.h. Drives deploy/cluster.sh for faults
 * and talks to the nodes with hiredis's blocking API.
 */
#include "cluster.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
static const char *tc_script(void)
{
    const char *env = getenv("REDLOCK_CLUSTER_SH");
    return (env != NULL && env[0] != '\0') ? env : REDLOCK_CLUSTER_SH;
}

/* Returns 1 if i names a node of c, else 0. */
static int tc_valid(const tc_cluster_t *c, int i)
{
    return c != NULL && i >= 0 && i < c->n;
}

/* Parses one "redis://HOST:PORT" line into slot c->n. Returns 0 or -1. */
static int tc_parse_uri(tc_cluster_t *c, const char *line)
{
    const char *colon = strrchr(line, ':');
    char *end = NULL;
    long port;

    if (strncmp(line, "redis://", 8) != 0 || colon == NULL || colon < line + 8)
        return -1;
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || port <= 0 || port > 65535)
        return -1;
    if (strlen(line) >= sizeof c->uri[0])
        return -1;
    strcpy(c->uri[c->n], line);
    c->port[c->n] = (int)port;
    c->n++;
    return 0;
}

/* Reads the opened nodes file f into c. Returns 0, or -1 with a message. */
static int tc_read_nodes(tc_cluster_t *c, FILE *f, const char *path)
{
    char line[256];

    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0')
            continue;
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
int tc_cluster_load(tc_cluster_t *c)
{
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
static void tc_exec_child(char *const argv[], long maxfd)
{
    long fd;

    for (fd = 3; fd < maxfd; fd++)
        close((int)fd);
    execv("/bin/bash", argv);
    _exit(127);
}

/* Waits for pid. Returns its exit status, or -1 if it died from a signal or
 * could not be waited for. */
static int tc_wait(pid_t pid)
{
    int status;

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs `bash cluster.sh VERB [I] [EXTRA] -d DIR`. Returns its exit status
 * or -1. The argument strings are borrowed; nothing to free. */
int tc_node_run(const tc_cluster_t *c, const char *verb, int i, const char *extra)
{
    char idx[16];
    char *argv[8];
    int argc = 0;
    long maxfd = sysconf(_SC_OPEN_MAX);
    pid_t pid;

    if (maxfd < 0 || maxfd > TC_CLOSE_FDS_MAX)
        maxfd = TC_CLOSE_FDS_MAX;
    argv[argc++] = (char *)"bash";
    argv[argc++] = (char *)tc_script();
    argv[argc++] = (char *)verb;
    if (i >= 0) {
        snprintf(idx, sizeof idx, "%d", i);
        argv[argc++] = idx;
    }
    if (extra != NULL && extra[0] != '\0')
        argv[argc++] = (char *)extra;
    argv[argc++] = (char *)"-d";
    argv[argc++] = (char *)c->dir;
    argv[argc] = NULL;
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tc_node_run: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0)
        tc_exec_child(argv, maxfd);
    return tc_wait(pid);
}

/* Returns cluster.sh pause's exit status (0 ok). */
int tc_node_pause(const tc_cluster_t *c, int i)
{
    return tc_node_run(c, "pause", i, NULL);
}

/* Returns cluster.sh resume's exit status (0 ok, non-zero if down). */
int tc_node_resume(const tc_cluster_t *c, int i)
{
    return tc_node_run(c, "resume", i, NULL);
}

/* Returns cluster.sh kill's exit status (0 ok). */
int tc_node_kill(const tc_cluster_t *c, int i)
{
    return tc_node_run(c, "kill", i, NULL);
}

/* Returns cluster.sh restart's exit status (0 ok); flush adds --flush. */
int tc_node_restart(const tc_cluster_t *c, int i, int flush)
{
    return tc_node_run(c, "restart", i, flush ? "--flush" : NULL);
}

/* Brings node i back and empties it; a node that cannot FLUSHALL (down,
 * busy in DEBUG SLEEP or a script) is restarted without its data. Returns
 * nothing; failures go to stderr. */
static void tc_heal_node(const tc_cluster_t *c, int i)
{
    if (tc_node_resume(c, i) != 0 && tc_node_restart(c, i, 1) != 0) {
        fprintf(stderr, "tc_cluster_heal: node %d: restart failed\n", i);
        return;
    }
    if (tc_redis_cmd(c, i, "FLUSHALL") == 0)
        return;
    if (tc_node_restart(c, i, 1) != 0 || tc_redis_cmd(c, i, "FLUSHALL") != 0)
        fprintf(stderr, "tc_cluster_heal: node %d: cannot be emptied\n", i);
}

/* Heals every node (see tc_heal_node). Returns nothing. */
void tc_cluster_heal(const tc_cluster_t *c)
{
    int i;

    for (i = 0; i < c->n; i++)
        tc_heal_node(c, i);
}

/* Returns a connected context with 1 s timeouts, or NULL. The caller frees
 * it with redisFree(). */
redisContext *tc_connect(const tc_cluster_t *c, int i)
{
    struct timeval tv = { 1, 0 };
    redisContext *ctx;

    if (!tc_valid(c, i))
        return NULL;
    ctx = redisConnectWithTimeout("127.0.0.1", c->port[i], tv);
    if (ctx == NULL)
        return NULL;
    if (ctx->err != 0 || redisSetTimeout(ctx, tv) != REDIS_OK) {
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

/* Runs one command on node i over a fresh connection. Returns the reply
 * (caller frees it with freeReplyObject()), or NULL if unreachable. */
static redisReply *tc_vcommand(const tc_cluster_t *c, int i, const char *fmt, va_list ap)
{
    redisContext *ctx = tc_connect(c, i);
    redisReply *reply;

    if (ctx == NULL)
        return NULL;
    reply = redisvCommand(ctx, fmt, ap);
    redisFree(ctx);
    return reply;
}

/* Variadic front end of tc_vcommand; same ownership (freeReplyObject). */
static redisReply *tc_command(const tc_cluster_t *c, int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *reply;

    va_start(ap, fmt);
    reply = tc_vcommand(c, i, fmt, ap);
    va_end(ap);
    return reply;
}

/* Returns a malloc'd copy of key's value on node i (caller free()s), or
 * NULL if absent, not a string or unreachable. */
char *tc_get(const tc_cluster_t *c, int i, const char *key)
{
    redisReply *r = tc_command(c, i, "GET %s", key);
    char *val = NULL;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        val = malloc(r->len + 1);
        if (val != NULL) {
            memcpy(val, r->str, r->len);
            val[r->len] = '\0';
        }
    }
    if (r != NULL)
        freeReplyObject(r);
    return val;
}

/* Returns 0 if SET key val [PX px] answered OK on node i, else -1. */
int tc_set(const tc_cluster_t *c, int i, const char *key, const char *val, long long px)
{
    redisReply *r;
    int rc;

    if (px > 0)
        r = tc_command(c, i, "SET %s %s PX %lld", key, val, px);
    else
        r = tc_command(c, i, "SET %s %s", key, val);
    rc = (r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) ? 0 : -1;
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

/* Returns PTTL key on node i (ms, -1 or -2), or -3 if unreachable/error. */
long long tc_pttl(const tc_cluster_t *c, int i, const char *key)
{
    redisReply *r = tc_command(c, i, "PTTL %s", key);
    long long ms = -3;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        ms = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return ms;
}

/* Returns the number of keys DEL removed on node i, or -1. */
int tc_del(const tc_cluster_t *c, int i, const char *key)
{
    redisReply *r = tc_command(c, i, "DEL %s", key);
    int n = -1;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        n = (int)r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* Returns how many reachable nodes hold key == val. */
int tc_count_value(const tc_cluster_t *c, const char *key, const char *val)
{
    int i, count = 0;

    for (i = 0; i < c->n; i++) {
        char *got = tc_get(c, i, key);
        if (got != NULL && strcmp(got, val) == 0)
            count++;
        free(got);
    }
    return count;
}

/* Polls tc_count_value every 10 ms, up to 100 times, until it is want;
 * returns the last count. */
int tc_await_count(const tc_cluster_t *c, const char *key, const char *val, int want)
{
    struct timespec ten_ms = { 0, 10000000L };
    int tries, n = tc_count_value(c, key, val);

    for (tries = 0; n != want && tries < 100; tries++) {
        nanosleep(&ten_ms, NULL);
        n = tc_count_value(c, key, val);
    }
    return n;
}

/* Returns 0 if node i ran the command without an error reply, else -1. */
int tc_redis_cmd(const tc_cluster_t *c, int i, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;
    int rc;

    va_start(ap, fmt);
    r = tc_vcommand(c, i, fmt, ap);
    va_end(ap);
    rc = (r != NULL && r->type != REDIS_REPLY_ERROR) ? 0 : -1;
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}
