/* difftest.c -- the simulated node against a real redis-server: random
 * command sequences (plain commands, MULTI/EXEC, pub/sub, and the
 * project's own Lua scripts by EVAL, EVALSHA and SCRIPT LOAD, with the
 * arguments the library gives them) go to both, one by one, and every
 * reply must match; then, for each seed, the expiry check (dtexpiry.c)
 * compares when keys expire, to the millisecond, at the TTLs the
 * scenarios use.
 *
 *   sim_difftest [--seeds N] [--seed S] [--steps K] [--expiry T] [--verbose]
 *
 * The test starts its own redis-server on a free loopback port (no
 * persistence, a temporary directory) and always stops it; the server is
 * also killed if the test dies (PR_SET_PDEATHSIG). In the random
 * sequences the model runs on the machine's real clock, read just before
 * each command goes out, so TTLs agree; what the two cannot agree on to
 * the microsecond is compared with a tolerance: integers and numeric
 * strings of magnitude 1000 or more (remaining TTLs, expiry instants,
 * fencing counters from TIME) within max(250, 1.5e-10 of the value: 250
 * ms for TTLs and instants in ms, about 250 ms for microseconds since the
 * epoch), TIME's seconds within 2, INFO by its uptime_in_seconds field
 * alone, ROLE without its offset. (The expiry check needs no tolerance:
 * it runs the model on the server's own clock.) Error replies are
 * compared by their first word (ERR, WRONGTYPE, NOSCRIPT, EXECABORT): the
 * rest of Redis's text names script lines the model does not copy. Keys
 * that get a short TTL (1-3 ms) are only touched again after a pause that
 * lets them expire on both. --expiry T asks the expiry check for T trials
 * compared and T keys seen at both edges of their expiry a seed (0: no
 * check). Exits 0 when every reply matched and the expiry check met its
 * floors. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "difftest.h"
#include "scripts.h"

/* ------------------------------------------------------------ the server */

/* The servers: 0 runs the random sequences, 1 and 2 are a master and
 * its replica for the replication check. */
#define DT_SERVERS 3
static pid_t srv_pid[DT_SERVERS] = {-1, -1, -1};
static char srv_dir[DT_SERVERS][256];

/* A loopback TCP port nobody listens on right now. */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* Stops server i if it runs (SIGTERM, then SIGKILL after 5 s). */
static void srv_kill(int i) {
    if (srv_pid[i] <= 0) return;
    kill(srv_pid[i], SIGTERM);
    for (int k = 0; k < 500 && waitpid(srv_pid[i], NULL, WNOHANG) == 0; k++) usleep(10000);
    if (waitpid(srv_pid[i], NULL, WNOHANG) == 0) kill(srv_pid[i], SIGKILL), waitpid(srv_pid[i], NULL, 0);
    srv_pid[i] = -1;
}

/* Stops every server and removes their directories. */
static void srv_stop(void) {
    for (int i = 0; i < DT_SERVERS; i++) {
        srv_kill(i);
        if (!srv_dir[i][0]) continue;
        char p[300];
        snprintf(p, sizeof p, "%.255s/redis.log", srv_dir[i]);
        unlink(p);
        rmdir(srv_dir[i]);
        srv_dir[i][0] = '\0';
    }
}

/* Starts redis-server i on port (in srv_dir[i], no persistence; a
 * replica of the server on master_port when that is above 0) and waits up
 * to 5 s for it to answer. Returns a connection, or NULL (server killed,
 * its directory kept for another try). */
static redisContext *srv_start(int i, int port, int master_port) {
    char ps[16], ms[16], log[300];
    snprintf(ps, sizeof ps, "%d", port);
    snprintf(ms, sizeof ms, "%d", master_port);
    snprintf(log, sizeof log, "%.255s/redis.log", srv_dir[i]);
    if ((srv_pid[i] = fork()) == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (master_port > 0)
            execlp("redis-server", "redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                   "no", "--dir", srv_dir[i], "--logfile", log, "--daemonize", "no", "--replicaof", "127.0.0.1", ms,
                   (char *)NULL);
        else
            execlp("redis-server", "redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                   "no", "--dir", srv_dir[i], "--logfile", log, "--daemonize", "no", "--repl-diskless-sync-delay", "0",
                   (char *)NULL);
        _exit(127);
    }
    for (int k = 0; k < 500 && srv_pid[i] > 0; k++) {
        struct timeval tv = {1, 0};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        if (c && !c->err) {
            redisSetTimeout(c, tv);
            redisReply *r = redisCommand(c, "PING");
            int ok = r && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            if (ok) return c;
        }
        redisFree(c);
        if (waitpid(srv_pid[i], NULL, WNOHANG) == srv_pid[i]) {
            srv_pid[i] = -1;
            break;
        }
        usleep(10000);
    }
    srv_kill(i);
    return NULL;
}

/* --------------------------------------------------------- comparison */

static int verbose;

/* 1 when the n bytes at s are a decimal integer (into *v). */
static int numeric(const char *s, size_t n, long long *v) {
    if (n == 0 || n > 20) return 0;
    char buf[24], *end;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    *v = strtoll(buf, &end, 10);
    return !errno && !*end;
}

/* Whether two integers agree: exactly below 1000 in magnitude, else
 * within the tolerance of values derived from the clock. */
static int near(long long a, long long b) {
    long long aa = llabs(a), bb = llabs(b), big = aa > bb ? aa : bb;
    if (aa < 1000 || bb < 1000) return a == b;
    long long tol = (long long)(1.5e-10 * (double)big);
    return llabs(a - b) <= (tol > 250 ? tol : 250);
}

/* Compares a real reply with the model's (tol: clock-derived values
 * within the tolerance); returns 1 when they match. */
int dt_same(const redisReply *r, const redisReply *m, int tol) {
    if (r->type != m->type) return 0;
    long long a, b;
    switch (r->type) {
    case REDIS_REPLY_INTEGER: return tol ? near(r->integer, m->integer) : r->integer == m->integer;
    case REDIS_REPLY_NIL: return 1;
    case REDIS_REPLY_ERROR: {
        size_t ka = strcspn(r->str, " "), kb = strcspn(m->str, " ");
        return ka == kb && strncmp(r->str, m->str, ka) == 0;
    }
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_STRING:
        if (tol && numeric(r->str, r->len, &a) && numeric(m->str, m->len, &b)) return near(a, b);
        return r->len == m->len && memcmp(r->str, m->str, r->len) == 0;
    case REDIS_REPLY_ARRAY:
        if (r->elements != m->elements) return 0;
        for (size_t i = 0; i < r->elements; i++)
            if (!dt_same(r->element[i], m->element[i], tol)) return 0;
        return 1;
    }
    return 0;
}

/* Prints reply r on one line (for a mismatch). */
void dt_show(FILE *f, const redisReply *r) {
    switch (r->type) {
    case REDIS_REPLY_INTEGER: fprintf(f, "%lld", r->integer); break;
    case REDIS_REPLY_NIL: fprintf(f, "nil"); break;
    case REDIS_REPLY_ERROR: fprintf(f, "(error %s)", r->str); break;
    case REDIS_REPLY_STATUS: fprintf(f, "+%s", r->str); break;
    case REDIS_REPLY_STRING: fprintf(f, "\"%.*s\"", (int)(r->len > 80 ? 80 : r->len), r->str); break;
    case REDIS_REPLY_ARRAY:
        fprintf(f, "[");
        for (size_t i = 0; i < r->elements; i++) {
            if (i) fprintf(f, ", ");
            dt_show(f, r->element[i]);
        }
        fprintf(f, "]");
        break;
    }
}

/* Prints a command's arguments (the first 12, each cut at 40 bytes),
 * then the server's reply and the model's (NULL: none), a line each. */
void dt_show_pair(FILE *f, int argc, const char *const *argv, const size_t *lens, const redisReply *real,
                  const redisReply *mod) {
    for (int i = 0; i < argc && i < 12; i++) fprintf(f, " %.*s", (int)(lens[i] > 40 ? 40 : lens[i]), argv[i]);
    fprintf(f, "\n    redis: ");
    dt_show(f, real);
    fprintf(f, "\n    model: ");
    if (mod)
        dt_show(f, mod);
    else
        fprintf(f, "(none)");
    fprintf(f, "\n");
}

/* Parses the model's reply bytes (one reply) with hiredis. */
redisReply *dt_parse_model(sbuf_t *b) {
    redisReader *rd = redisReaderCreate();
    void *rep = NULL;
    redisReaderFeed(rd, sb_data(b), sb_pending(b));
    if (redisReaderGetReply(rd, &rep) != REDIS_OK) rep = NULL;
    if (rep) {
        long n = resp_reply_len(sb_data(b), sb_pending(b));
        sb_consume(b, (size_t)n);
    }
    redisReaderFree(rd);
    return rep;
}

/* ------------------------------------------------------------ a session */

/* Now on the real clock in µs (the server's TTLs run on it too). */
uint64_t dt_real_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Checks the next reply session s owes on both sides; 1 when it matched. */
static int compare_next(diff_t *d, side_t *s, int argc, const char **argv, const size_t *lens) {
    void *rv = NULL;
    if (redisGetReply(s->real, &rv) != REDIS_OK || !rv) {
        fprintf(stderr, "difftest: no reply from redis-server (%s)\n", s->real->errstr);
        exit(2);
    }
    redisReply *real = rv, *mod = dt_parse_model(&s->pushed);
    int ok = mod && dt_same(real, mod, 1);
    /* special cases: replies that cannot agree byte for byte */
    if (mod && argc >= 1 && strcasecmp(argv[0], "INFO") == 0 && real->type == REDIS_REPLY_STRING &&
        mod->type == REDIS_REPLY_STRING)
        ok = strstr(real->str, "uptime_in_seconds:") && strstr(mod->str, "uptime_in_seconds:");
    if (mod && argc == 1 && strcasecmp(argv[0], "TIME") == 0 && real->type == REDIS_REPLY_ARRAY &&
        mod->type == real->type)
        ok = real->elements == 2 && mod->elements == 2 &&
             llabs(atoll(real->element[0]->str) - atoll(mod->element[0]->str)) <= 2;
    if (mod && argc == 1 && strcasecmp(argv[0], "ROLE") == 0 && real->type == REDIS_REPLY_ARRAY &&
        mod->type == real->type)
        ok = real->elements == 3 && mod->elements == 3 && dt_same(real->element[0], mod->element[0], 1) &&
             dt_same(real->element[2], mod->element[2], 1);
    if (!ok || verbose) {
        FILE *f = ok ? stdout : stderr;
        fprintf(f, "%s step %llu: %s", ok ? "ok" : "MISMATCH", (unsigned long long)d->steps, d->what);
        dt_show_pair(f, argc, argv, lens, real, mod);
    }
    freeReplyObject(real);
    if (mod) freeReplyObject(mod);
    if (!ok) d->mismatches++;
    return ok;
}

/* Sends one command to both sides of s and compares every reply it
 * produces (replies: how many, e.g. one per channel of a SUBSCRIBE). */
static void run_on(diff_t *d, side_t *s, int argc, const char **argv, size_t *lens, int replies) {
    resp_cmd_t *c = resp_cmd_make(argc, argv, lens);
    model_exec(d->m, s->ms, c, dt_real_us(), &s->pushed);
    dt_replicate(d);
    free(c);
    redisAppendCommandArgv(s->real, argc, argv, lens);
    d->steps++;
    for (int i = 0; i < replies; i++) compare_next(d, s, argc, argv, lens);
    /* messages the model published to the subscriber: the real one must have them too */
    while (s != &d->b && sb_pending(&d->b.pushed)) {
        const char *ping[1] = {"PING"};
        size_t pl[1] = {4};
        compare_next(d, &d->b, 1, ping, pl);
    }
}

/* run_on with arguments given as C strings, ended by NULL. */
static void cmd(diff_t *d, side_t *s, const char *first, ...) {
    const char *argv[64];
    size_t lens[64];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 64; a = va_arg(ap, const char *)) {
        argv[argc] = a;
        lens[argc++] = strlen(a);
    }
    va_end(ap);
    run_on(d, s, argc, argv, lens, 1);
}

/* The model's push hook: a message for the subscriber session. */
static void on_push(void *arg, model_session_t *s, const char *bytes, size_t n) {
    diff_t *d = arg;
    if (s == d->b.ms) sb_add(&d->b.pushed, bytes, n);
}

/* ---------------------------------------------------- random commands */

static const char *const KEYS[] = {"r0",
                                   "r1",
                                   "r0:permit:0",
                                   "r0:permit:1",
                                   "r0:permit:2",
                                   "r0:redlock:writer",
                                   "r0:redlock:fence",
                                   "r1:redlock:fence",
                                   "h0",
                                   "d0",
                                   "d0:seen",
                                   "redlock:membership"};
static const char *const TOKENS[] = {"t1", "t2", "t3"};

static const char *pick(diff_t *d, const char *const *set, size_t n) {
    return set[rng_below(&d->r, n)];
}
#define PICK(d, set) pick(d, set, sizeof set / sizeof set[0])
static const char *key(diff_t *d) {
    return rng_chance(&d->r, .4) ? "r0" : PICK(d, KEYS);
}
static const char *tok(diff_t *d) {
    return PICK(d, TOKENS);
}

/* A TTL in ms as text in buf: mostly long (never expires during a run),
 * sometimes 1-3 ms (then *shortp is set: pause before the next step). */
static const char *ttl(diff_t *d, char *buf, int *shortp) {
    if (rng_chance(&d->r, 0.15)) {
        *shortp = 1;
        snprintf(buf, 16, "%d", (int)rng_range(&d->r, 1, 3));
    } else {
        snprintf(buf, 16, "%d", (int)rng_range(&d->r, 20000, 100000));
    }
    return buf;
}

/* A plain command on a random key. Returns 1 when it set a short TTL. */
static int plain(diff_t *d) {
    char t[16], n[24];
    int sh = 0;
    switch (rng_below(&d->r, 19)) {
    case 0: cmd(d, &d->a, "SET", key(d), tok(d), "NX", "PX", ttl(d, t, &sh), NULL); break;
    case 1: cmd(d, &d->a, "SET", key(d), tok(d), "PX", ttl(d, t, &sh), NULL); break;
    case 2: cmd(d, &d->a, "SET", key(d), tok(d), rng_chance(&d->r, .5) ? "XX" : "GET", NULL); break;
    case 3:
        cmd(d, &d->a, "SET", key(d), tok(d), "PX", PICK(d, ((const char *[]){"0", "-5", "abc", "1x"})), NULL);
        break;
    case 4: cmd(d, &d->a, "GET", key(d), NULL); break;
    case 5: cmd(d, &d->a, "DEL", key(d), key(d), NULL); break;
    case 6: cmd(d, &d->a, "EXISTS", key(d), key(d), NULL); break;
    case 7: cmd(d, &d->a, "PEXPIRE", key(d), rng_chance(&d->r, .2) ? "0" : ttl(d, t, &sh), NULL); break;
    case 8: cmd(d, &d->a, rng_chance(&d->r, .5) ? "PTTL" : "PEXPIRETIME", key(d), NULL); break;
    case 9: cmd(d, &d->a, "TYPE", key(d), NULL); break;
    case 10: cmd(d, &d->a, "MGET", key(d), key(d), key(d), NULL); break;
    case 11:
        snprintf(n, sizeof n, "%lld", (long long)rng_range(&d->r, -5, 1000000));
        cmd(d, &d->a, "INCRBY", rng_chance(&d->r, .8) ? "r0:redlock:fence" : key(d), rng_chance(&d->r, .9) ? n : "x",
            NULL);
        break;
    case 12: cmd(d, &d->a, "HSET", rng_chance(&d->r, .7) ? "h0" : key(d), tok(d), "1", NULL); break;
    case 13: cmd(d, &d->a, "HGET", rng_chance(&d->r, .7) ? "h0" : key(d), tok(d), NULL); break;
    case 14: cmd(d, &d->a, "HDEL", rng_chance(&d->r, .7) ? "h0" : key(d), tok(d), NULL); break;
    case 15:
        cmd(d, &d->a, rng_chance(&d->r, .5) ? "HLEN" : "HGETALL", rng_chance(&d->r, .7) ? "h0" : key(d), NULL);
        break;
    case 16: cmd(d, &d->a, "HEXISTS", "h0", tok(d), NULL); break;
    case 17: /* (with a replica, ROLE lists it: the model's master has none) */
        cmd(d, &d->a,
            d->rm ? PICK(d, ((const char *[]){"TIME", "PING"})) : PICK(d, ((const char *[]){"TIME", "PING", "ROLE"})),
            NULL);
        break;
    default:
        switch (rng_below(&d->r, 6)) {
        case 0: cmd(d, &d->a, "INFO", "server", NULL); break;
        case 1: /* (with a replica: one acknowledges, or a timeout short of two) */
            if (!d->rm)
                cmd(d, &d->a, "WAIT", "0", "0", NULL);
            else if (rng_chance(&d->r, .7))
                cmd(d, &d->a, "WAIT", "1", "2000", NULL);
            else
                cmd(d, &d->a, "WAIT", "2", "20", NULL);
            break;
        case 2: cmd(d, &d->a, "SELECT", rng_chance(&d->r, .5) ? "0" : "16", NULL); break;
        case 3: cmd(d, &d->a, "NOSUCHCMD", "x", NULL); break;
        case 4: cmd(d, &d->a, "GET", NULL); break;
        default: cmd(d, &d->a, "ECHO", tok(d), NULL); break;
        }
    }
    return sh;
}

static const char *const FPS[] = {"fp1", "fp2", "fp3"};

/* membership_set's arguments (KEYS[1] the record; ARGV: channel, message,
 * then field, value pairs), a record that is now and then unreadable:
 * its phase of no known name, or its phase or accepts field left out. */
static int membership_args(diff_t *d, const char **k, const char **a, int *na) {
    static const char *const phases[] = {"begun", "joint", "advanced", "finished", "left", "bogus"};
    static const char *const accepts[] = {"fp1", "fp1 fp2", "fp2 fp3", "fp3", ""};
    k[0] = "redlock:membership";
    a[0] = "redlock:membership", a[1] = "step";
    *na = 2;
    if (!rng_chance(&d->r, .1)) a[(*na)++] = "phase", a[(*na)++] = PICK(d, phases);
    if (!rng_chance(&d->r, .1)) a[(*na)++] = "accepts", a[(*na)++] = PICK(d, accepts);
    a[(*na)++] = "change", a[(*na)++] = "c1";
    a[(*na)++] = "old_fp", a[(*na)++] = "fp1";
    a[(*na)++] = "new_fp", a[(*na)++] = "fp2";
    return 1;
}

/* Arguments for the project's script `name`: keys into k (returns how
 * many), arguments into a (*na). May set *sh (a short TTL). A guarded
 * twin (<name>_guarded) gets a configuration fingerprint first, then its
 * script's own arguments. */
static int script_args(diff_t *d, const char *name, const char **k, const char **a, int *na, char (*buf)[24], int *sh) {
    size_t len = strlen(name);
    if (len > 8 && !strcmp(name + len - 8, "_guarded")) {
        char base[64];
        snprintf(base, sizeof base, "%.*s", (int)(len - 8), name);
        a[0] = PICK(d, FPS);
        int nk = script_args(d, base, k, a + 1, na, buf, sh);
        (*na)++;
        return nk;
    }
    if (!strcmp(name, "membership_set")) return membership_args(d, k, a, na);
    int nk = 1;
    k[0] = rng_chance(&d->r, .8) ? "r0" : key(d);
    a[0] = tok(d);
    *na = 2;
    a[1] = ttl(d, buf[0], sh);
    if (!strcmp(name, "acquire_multi") || !strcmp(name, "extend_multi") || !strcmp(name, "release_multi")) {
        k[1] = "r1", nk = 2;
        if (!strcmp(name, "release_multi")) a[1] = rng_chance(&d->r, .5) ? "1" : "0";
    } else if (!strcmp(name, "acquire_permit")) {
        snprintf(buf[1], 24, "%d", (int)rng_range(&d->r, 1, 3));
        snprintf(buf[2], 24, "%d", (int)rng_range(&d->r, -1, 2));
        a[2] = buf[1], a[3] = buf[2], *na = 4;
        if (rng_chance(&d->r, .5)) a[(*na)++] = "f";
    } else if (!strcmp(name, "acquire_wait")) {
        if (rng_chance(&d->r, .5)) a[(*na)++] = "50000";
        if (*na == 3 && rng_chance(&d->r, .6)) a[(*na)++] = "0", a[(*na)++] = tok(d); /* a place in r0's line */
    } else if (!strcmp(name, "fence_set")) {
        k[1] = "r0:redlock:fence", nk = 2;
        snprintf(buf[1], 24, "%lld", (long long)rng_range(&d->r, 1, 3000000));
        a[1] = buf[1];
    } else if (!strcmp(name, "fenced_set")) {
        k[0] = "d0", k[1] = "d0:seen", nk = 2;
        snprintf(buf[1], 24, "%lld", (long long)rng_range(&d->r, 1, 20));
        a[0] = buf[1], a[1] = tok(d);
        *sh = 0;
    } else if (!strcmp(name, "release")) {
        *sh = 0;
        int how = (int)rng_below(&d->r, 3);
        *na = how ? 3 : 1;
        if (how == 1) a[1] = "1", a[2] = rng_chance(&d->r, .5) ? tok(d) : "0"; /* (a releasing handle's id) */
        if (how == 2) k[0] = PICK(d, ((const char *[]){"r0:permit:0", "r0:permit:1"})), a[1] = "p", a[2] = "3";
    } else if (!strcmp(name, "release_permit")) {
        snprintf(buf[1], 24, "%d", (int)rng_range(&d->r, 1, 3));
        snprintf(buf[2], 24, "%d", (int)rng_range(&d->r, -1, 2));
        a[1] = buf[1], a[2] = buf[2], *na = 3, *sh = 0;
    } else if (!strcmp(name, "release_shared")) {
        a[1] = rng_chance(&d->r, .5) ? "1" : "0", *sh = 0;
    } else if (!strcmp(name, "status")) {
        snprintf(buf[1], 24, "%d", (int)rng_range(&d->r, 0, 3));
        a[0] = buf[1], *na = 1, *sh = 0;
    }
    return nk;
}

/* One of the project's scripts by EVALSHA (or EVAL, or SCRIPT LOAD
 * first). Returns 1 when it set a short TTL. */
static int script(diff_t *d) {
    size_t n = 0;
    while (rl_scripts[n].name) n++;
    const rl_script_t *s = &rl_scripts[rng_below(&d->r, n)];
    int how = (int)rng_below(&d->r, 10);
    if (how == 0) {
        cmd(d, &d->a, "SCRIPT", "LOAD", s->text, NULL);
        return 0;
    }
    if (how == 1 && rng_chance(&d->r, .05)) {
        cmd(d, &d->a, "SCRIPT", "FLUSH", NULL);
        return 0;
    }
    const char *k[4], *a[16], *argv[24];
    char buf[3][24], nk[8];
    int na, sh = 0, keys = script_args(d, s->name, k, a, &na, buf, &sh), argc = 0;
    snprintf(nk, sizeof nk, "%d", keys);
    argv[argc++] = how < 3 ? "EVAL" : "EVALSHA";
    argv[argc++] = how < 3 ? s->text : s->sha1;
    argv[argc++] = nk;
    for (int i = 0; i < keys; i++) argv[argc++] = k[i];
    for (int i = 0; i < na; i++) argv[argc++] = a[i];
    size_t lens[24];
    for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    snprintf(d->what, sizeof d->what, "[%s.lua]", s->name);
    run_on(d, &d->a, argc, argv, lens, 1);
    d->what[0] = '\0';
    return sh;
}

/* Runs EXEC on both sides and compares the replies; a TIME among the
 * transaction's replies has its microseconds left out (its seconds compare
 * under the numeric tolerance). */
static void exec_compare(diff_t *d) {
    const char *argv[1] = {"EXEC"};
    size_t lens[1] = {4};
    resp_cmd_t *c = resp_cmd_make(1, argv, lens);
    model_exec(d->m, d->a.ms, c, dt_real_us(), &d->a.pushed);
    dt_replicate(d);
    free(c);
    redisAppendCommandArgv(d->a.real, 1, argv, lens);
    d->steps++;
    void *rv = NULL;
    redisReply *mod = dt_parse_model(&d->a.pushed);
    if (redisGetReply(d->a.real, &rv) != REDIS_OK || !rv) exit(2);
    redisReply *real = rv;
    redisReply *both[2] = {real, mod};
    for (int i = 0; i < 2; i++) {
        redisReply *x = both[i];
        if (x && x->type == REDIS_REPLY_ARRAY && x->elements == 3 && x->element[2]->type == REDIS_REPLY_ARRAY &&
            x->element[2]->elements == 2) {
            freeReplyObject(x->element[2]->element[1]);
            x->element[2]->elements = 1;
        }
    }
    if (!mod || !dt_same(real, mod, 1)) {
        d->mismatches++;
        fprintf(stderr, "MISMATCH step %llu: EXEC\n    redis: ", (unsigned long long)d->steps);
        dt_show(stderr, real);
        fprintf(stderr, "\n    model: ");
        if (mod) dt_show(stderr, mod);
        fprintf(stderr, "\n");
    }
    freeReplyObject(real);
    if (mod) freeReplyObject(mod);
}

/* A transaction: the fenced acquire's two (MULTI SET NX PX / GET / TIME
 * EXEC, and MULTI GET / INCRBY EXEC), sometimes with a bad command in it
 * (EXECABORT) or ended by DISCARD. */
static int transaction(diff_t *d) {
    char t[16], by[24];
    int sh = 0;
    const char *tk = tok(d);
    cmd(d, &d->a, "MULTI", NULL);
    if (rng_chance(&d->r, .5)) {
        cmd(d, &d->a, "SET", "r0", tk, "NX", "PX", ttl(d, t, &sh), NULL);
        cmd(d, &d->a, "GET", "r0:redlock:fence", NULL);
        cmd(d, &d->a, "TIME", NULL);
    } else {
        snprintf(by, sizeof by, "%lld", (long long)rng_range(&d->r, 0, 5000));
        cmd(d, &d->a, "GET", "r0", NULL);
        cmd(d, &d->a, "INCRBY", "r0:redlock:fence", by, NULL);
    }
    if (rng_chance(&d->r, .1)) cmd(d, &d->a, "GET", NULL); /* wrong arity: aborts the transaction */
    if (rng_chance(&d->r, .1))
        cmd(d, &d->a, "DISCARD", NULL);
    else
        exec_compare(d);
    return sh;
}

/* The subscriber session subscribes to r0's release channel, or leaves
 * it, or a message is published on it directly. */
static void pubsub(diff_t *d) {
    const char *ch = "redlock:released:r0";
    int what = (int)rng_below(&d->r, 3);
    if (what == 0 && !d->b_subscribed) {
        cmd(d, &d->b, "SUBSCRIBE", ch, NULL);
        d->b_subscribed = 1;
    } else if (what == 1 && d->b_subscribed) {
        cmd(d, &d->b, "UNSUBSCRIBE", NULL);
        d->b_subscribed = 0;
    } else if (what == 2 && d->b_subscribed) {
        cmd(d, &d->b, "GET", "r0", NULL); /* refused in a subscribed session */
    } else {
        cmd(d, &d->a, "PUBLISH", ch, tok(d), NULL);
    }
}

/* Runs `steps` random steps of seed on the server behind real/sub, then
 * the expiry check (dtexpiry.c) for `expiry` trials, adding what it
 * covered to *xs. With replica (the server's replica), every tenth step
 * also waits for it and compares it with the model's replica, adding
 * what it covered to *rc. Returns the mismatches. */
static uint64_t run_seed(redisContext *real, redisContext *sub, redisContext *replica, uint64_t seed, uint64_t steps,
                         uint64_t expiry, dt_expiry_stats_t *xs, diff_t *rc) {
    diff_t d = {0};
    rng_seed(&d.r, seed, 0);
    d.m = model_new(dt_real_us());
    model_set_push(d.m, on_push, &d);
    if (replica) {
        d.rreal = replica;
        d.rm = model_new(dt_real_us());
        d.rms = model_session_new(d.rm, NULL);
        model_set_recording(d.m, 1);
        model_set_wait(d.m, dt_replica_wait_hook, NULL);
    }
    d.a = (side_t){.real = real, .ms = model_session_new(d.m, NULL)};
    d.b = (side_t){.real = sub, .ms = model_session_new(d.m, NULL)};
    cmd(&d, &d.a, "FLUSHALL", NULL);
    cmd(&d, &d.a, "SCRIPT", "FLUSH", NULL);
    while (d.steps < steps) {
        int k = (int)rng_below(&d.r, 20), sh;
        if (k < 9)
            sh = plain(&d);
        else if (k < 17)
            sh = script(&d);
        else if (k < 19)
            sh = transaction(&d);
        else
            sh = 0, pubsub(&d);
        if (sh) usleep(8000); /* let the short TTL run out on both */
        if (replica && d.steps / 10 != d.checks) {
            cmd(&d, &d.a, "WAIT", "1", "2000", NULL); /* (the real replica has every change) */
            dt_replica_check(&d, KEYS, sizeof KEYS / sizeof KEYS[0]);
        }
    }
    if (d.b_subscribed) cmd(&d, &d.b, "UNSUBSCRIBE", NULL);
    if (expiry) {
        rng_t xr;
        rng_seed(&xr, seed, 1);
        dt_expiry(&d, &xr, expiry, xs);
    }
    sb_free(&d.a.pushed);
    sb_free(&d.b.pushed);
    model_free(d.m);
    model_free(d.rm);
    if (rc) rc->checks += d.checks, rc->keys_compared += d.keys_compared, rc->instants_exact += d.instants_exact;
    return d.mismatches;
}

/* Stops the servers before dying of sig (INT or TERM). */
static void on_signal(int sig) {
    srv_stop();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Makes server i's directory and starts it on a free port (trying again
 * when the port was taken meanwhile), a replica of master_port when that
 * is above 0; returns a connection with *port set, or NULL after saying
 * why (every server stopped). */
static redisContext *start_server(int i, int *port, int master_port) {
    snprintf(srv_dir[i], sizeof srv_dir[i], "%s/sim-difftest-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(srv_dir[i])) {
        perror("difftest: mkdtemp");
        srv_dir[i][0] = '\0';
        return NULL;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    redisContext *real = NULL;
    for (int tries = 0; tries < 5 && !real; tries++)
        if ((*port = free_port()) > 0) real = srv_start(i, *port, master_port);
    if (!real) {
        fprintf(stderr, "difftest: could not start redis-server\n");
        srv_stop();
    }
    return real;
}

/* Waits up to 15 s until the replica behind r has its master's first
 * copy (master_link_status:up). Returns 1 then. */
static int await_link(redisContext *r) {
    for (int i = 0; i < 1500; i++, usleep(10000)) {
        redisReply *x = redisCommand(r, "INFO replication");
        int up = x && x->type == REDIS_REPLY_STRING && strstr(x->str, "master_link_status:up");
        if (x) freeReplyObject(x);
        if (up) return 1;
    }
    return 0;
}

/* The replication check: `seeds` seeds from first on a master (server 1)
 * and its replica (server 2). Returns the mismatches, or -1 when the
 * servers could not be started or linked (said on stderr). */
static long long replica_seeds(uint64_t first, uint64_t seeds, uint64_t steps) {
    int mport, rport;
    redisContext *m = start_server(1, &mport, 0), *r = m ? start_server(2, &rport, mport) : NULL, *sub = NULL;
    struct timeval tv = {2, 0};
    if (r) sub = redisConnectWithTimeout("127.0.0.1", mport, tv);
    if (!r || !sub || sub->err || !await_link(r)) {
        fprintf(stderr, "difftest: no master and linked replica for the replication check\n");
        redisFree(m), redisFree(r), redisFree(sub);
        return -1;
    }
    redisSetTimeout(sub, tv);
    uint64_t bad = 0;
    diff_t rc = {0};
    for (uint64_t s = first; s < first + seeds; s++) {
        uint64_t k = run_seed(m, sub, r, s, steps, 0, NULL, &rc);
        printf("replica seed %llu: %llu steps, %llu mismatches\n", (unsigned long long)s, (unsigned long long)steps,
               (unsigned long long)k);
        bad += k;
    }
    printf("replication: %llu seeds, %llu checks of the replica, %llu keys compared, %llu expiry instants the same "
           "on master and replica, %llu mismatches\n",
           (unsigned long long)seeds, (unsigned long long)rc.checks, (unsigned long long)rc.keys_compared,
           (unsigned long long)rc.instants_exact, (unsigned long long)bad);
    if (!rc.instants_exact) fprintf(stderr, "difftest: the replication check compared no expiry instant\n");
    redisFree(m), redisFree(r), redisFree(sub);
    return (long long)(bad + !rc.instants_exact);
}

/* Runs the seeds asked for; exits 0 when every reply matched, 1 on a
 * mismatch, 2 when the server could not be started. */
int main(int argc, char **argv) {
    uint64_t seeds = 4, first = 1, steps = 2500, expiry = 16, replica = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            first = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--expiry") && i + 1 < argc)
            expiry = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--replica-seeds") && i + 1 < argc)
            replica = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--seeds N] [--seed S] [--steps K] [--expiry T] [--replica-seeds R] [--verbose]\n",
                    argv[0]);
            return 2;
        }
    }
    int port;
    redisContext *real = start_server(0, &port, 0), *sub;
    if (!real) return 2;
    struct timeval tv = {2, 0};
    sub = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!sub || sub->err) return fprintf(stderr, "difftest: second connection failed\n"), srv_stop(), 2;
    redisSetTimeout(sub, tv);
    uint64_t bad = 0, total = 0;
    dt_expiry_stats_t xs = {0};
    for (uint64_t s = first; s < first + seeds; s++) {
        uint64_t m = run_seed(real, sub, NULL, s, steps, expiry, &xs, NULL);
        printf("seed %llu: %llu steps, %llu mismatches\n", (unsigned long long)s, (unsigned long long)steps,
               (unsigned long long)m);
        bad += m;
        total += steps;
    }
    redisFree(real);
    redisFree(sub);
    long long rbad = replica ? replica_seeds(first, replica, steps) : 0;
    srv_stop();
    mlua_shutdown();
    printf("difftest: %llu commands compared, %llu mismatches\n", (unsigned long long)total, (unsigned long long)bad);
    if (rbad < 0) return 2;
    bad += (uint64_t)rbad;
    int short_of = expiry && dt_expiry_report(&xs, expiry * seeds);
    return bad || short_of ? 1 : 0;
}
