/* test_cli.c -- the redlock command-line tool, driven as a program against
 * the 5-master fixture cluster: mutual exclusion between concurrent
 * processes (also while 2 nodes die), every exit code, the command's
 * environment, lock loss, signal forwarding, status and ping, fencing
 * tokens (REDLOCK_FENCE) and the safety options (--max-ttl, quarantine,
 * clock-jump settings).
 *
 * Every process a test starts is put in its own process group, gets
 * SIGKILL if the test worker dies (PR_SET_PDEATHSIG), and is killed with its
 * group by the suite's fini if a test fails before reaping it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rltest.h"

#ifndef REDLOCK_CLI
#error "REDLOCK_CLI (path of the redlock program) must be defined by the build"
#endif

extern char **environ;

static tc_cluster_t C;
static char g_dir[128];    /* this test's scratch directory */
static char g_nodes[2048]; /* the cluster's URIs, comma-separated */

/* Process groups started and not yet reaped. */
#define MAX_TRACKED 64
static pid_t g_tracked[MAX_TRACKED];

static void track(pid_t pid) {
    for (int i = 0; i < MAX_TRACKED; i++)
        if (!g_tracked[i]) {
            g_tracked[i] = pid;
            return;
        }
}

static void untrack(pid_t pid) {
    for (int i = 0; i < MAX_TRACKED; i++)
        if (g_tracked[i] == pid) g_tracked[i] = 0;
}

/* Under valgrind (test/valgrind.sh traces the tool too) everything is many
 * times slower: the tool gets generous timeouts and time limits grow. */
static int g_slow;
static uint64_t scaled(uint64_t ms) {
    return g_slow ? ms * 10 : ms;
}

static void setup(void) {
    const char *pre = getenv("LD_PRELOAD");
    g_slow = pre && strstr(pre, "vgpreload") != NULL;
    rt_setup(&C);
    memset(g_tracked, 0, sizeof g_tracked);
    g_nodes[0] = '\0';
    for (int i = 0; i < C.n; i++) {
        if (i) strcat(g_nodes, ",");
        strcat(g_nodes, C.uri[i]);
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/redlock-cli-test.XXXXXX");
    cr_assert_not_null(mkdtemp(g_dir), "mkdtemp: %s", strerror(errno));
}

static redlock_t *g_rl; /* a test's own client, freed even if the test fails */

static void teardown(void) {
    redlock_free(g_rl);
    g_rl = NULL;
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (!g_tracked[i]) continue;
        kill(-g_tracked[i], SIGKILL);
        waitpid(g_tracked[i], NULL, 0);
        g_tracked[i] = 0;
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "test_cli: could not remove %s\n", g_dir);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 300);

/* ------------------------------------------------------------ processes */

/* Starts argv (argv[0] a path) in a new process group with stdin from
 * /dev/null, stdout/stderr on out_fd/err_fd (-1: inherited) and
 * REDLOCK_NODES set to nodes_env (NULL: unset). Returns the pid. */
static pid_t spawn(char *const argv[], const char *nodes_env, int out_fd, int err_fd) {
    static char *env[1024];
    static char *args[64];
    if (!strcmp(argv[0], REDLOCK_CLI) && g_slow) { /* the tool: add slow-run timeouts first */
        static char *const extra[] = {"--op-timeout", "2s", "--connect-timeout", "3s"};
        size_t k = 0;
        args[k++] = argv[0];
        for (size_t i = 0; i < 4; i++) args[k++] = extra[i];
        for (size_t i = 1; argv[i] && k < 63; i++) args[k++] = argv[i];
        args[k] = NULL;
        argv = args;
    }
    static char kv[4096];
    size_t k = 0;
    for (char **e = environ; *e && k < 1000; e++)
        if (strncmp(*e, "REDLOCK_", 8) != 0) env[k++] = *e;
    if (nodes_env) {
        snprintf(kv, sizeof kv, "REDLOCK_NODES=%s", nodes_env);
        env[k++] = kv;
    }
    env[k] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        if (out_fd >= 0) dup2(out_fd, 1);
        if (err_fd >= 0) dup2(err_fd, 2);
        execve(argv[0], argv, env);
        _exit(126);
    }
    setpgid(pid, pid);
    track(pid);
    return pid;
}

/* Exit code of a wait status: the status, or 128 + signal. */
static int exit_code(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

/* Waits up to timeout_ms for pid; on timeout kills its group and fails. */
static int wait_code(pid_t pid, unsigned timeout_ms) {
    uint64_t end = rt_now_us() + (uint64_t)timeout_ms * 1000u;
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        cr_assert(w == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
        if (rt_now_us() > end) {
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            untrack(pid);
            cr_assert_fail("process %d still running after %u ms", (int)pid, timeout_ms);
        }
        rt_sleep_ms(5);
    }
    untrack(pid);
    return exit_code(st);
}

typedef struct run {
    int code;
    uint64_t ms;
    char out[32768], err[32768];
    size_t out_len, err_len;
} run_t;

static void set_cloexec(int fd) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* Runs argv to completion (at most 120 s), capturing stdout and stderr. */
static void run_argv(run_t *r, const char *nodes_env, char *const argv[]) {
    int po[2], pe[2];
    cr_assert_eq(pipe(po), 0);
    cr_assert_eq(pipe(pe), 0);
    for (int i = 0; i < 2; i++) set_cloexec(po[i]), set_cloexec(pe[i]);
    r->out_len = r->err_len = 0;
    uint64_t t0 = rt_now_us();
    pid_t pid = spawn(argv, nodes_env, po[1], pe[1]);
    close(po[1]);
    close(pe[1]);
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        int n = poll(pf, 2, 1000);
        if (n < 0 && errno == EINTR) continue;
        cr_assert_geq(n, 0);
        if (rt_now_us() - t0 > 120000000u) break;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !pf[i].revents) continue;
            char *buf = i ? r->err : r->out;
            size_t *len = i ? &r->err_len : &r->out_len;
            char tmp[4096];
            ssize_t got = read(pf[i].fd, tmp, sizeof tmp);
            if (got <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
                continue;
            }
            size_t room = sizeof r->out - 1 - *len;
            size_t take = (size_t)got < room ? (size_t)got : room;
            memcpy(buf + *len, tmp, take);
            *len += take;
        }
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0) close(pf[i].fd);
    r->out[r->out_len] = '\0';
    r->err[r->err_len] = '\0';
    r->code = wait_code(pid, 5000);
    r->ms = (rt_now_us() - t0) / 1000;
}

/* RUN(r, nodes_env, args...): runs the redlock program with args. */
#define RUN(r, env, ...) run_argv((r), (env), (char *[]){REDLOCK_CLI, __VA_ARGS__, NULL})

/* Starts the redlock program in the background, output to DIR/name. */
static pid_t start_bg(const char *name, char *const argv[]) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    pid_t pid = spawn(argv, g_nodes, fd, fd);
    close(fd);
    return pid;
}
#define START(name, ...) start_bg((name), (char *[]){REDLOCK_CLI, __VA_ARGS__, NULL})

/* ------------------------------------------------------------ files */

static void path_of(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_dir, name);
}

/* Contents of DIR/name (empty string if missing), in a static buffer. */
static const char *slurp(const char *name) {
    static char buf[65536];
    char path[256];
    path_of(path, sizeof path, name);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_file(const char *name, const char *text, mode_t mode) {
    char path[256];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* Waits until DIR/name holds a complete line; returns its contents. On
 * timeout, fails showing DIR/log (the tool's output). */
static const char *wait_line(const char *name, uint64_t timeout_ms, const char *log) {
    uint64_t end = rt_now_us() + timeout_ms * 1000u;
    for (;;) {
        const char *s = slurp(name);
        if (strchr(s, '\n')) return s;
        if (rt_now_us() > end) {
            static char out[4096];
            snprintf(out, sizeof out, "%s", slurp(log));
            cr_assert_fail("%s/%s not written within %llu ms; %s says: %s", g_dir, name, (unsigned long long)timeout_ms,
                           log, out);
        }
        rt_sleep_ms(10);
    }
}

/* 1 when s holds a JSON text whose braces and brackets balance outside strings. */
static int json_balanced(const char *s) {
    int depth = 0, in_str = 0, esc = 0, seen = 0;
    for (; *s; s++) {
        if (in_str) {
            if (esc)
                esc = 0;
            else if (*s == '\\')
                esc = 1;
            else if (*s == '"')
                in_str = 0;
            else if ((unsigned char)*s < 0x20)
                return 0;
            continue;
        }
        if (*s == '"')
            in_str = 1;
        else if (*s == '{' || *s == '[')
            depth++, seen = 1;
        else if (*s == '}' || *s == ']') {
            if (--depth < 0) return 0;
        }
    }
    return seen && depth == 0 && !in_str;
}

/* A loopback port nothing listens on (bound and released). */
static int unused_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static int is_hex40(const char *s, size_t n) {
    if (n != 40) return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", s[i])) return 0;
    return 1;
}

/* ------------------------------------------------------------ exclusion */

/* 8 shell loops, each running 25 `redlock exec` whose command does a
 * read-sleep-write increment of one counter file. With kill_at > 0, nodes 1
 * and 3 are killed once the counter reaches kill_at. */
static void counter_race(const char *resource, int kill_at) {
    char counter[256], script[2048];
    path_of(counter, sizeof counter, "counter");
    write_file("counter", "0\n", 0644);
    snprintf(script, sizeof script,
             "i=0; while [ $i -lt 25 ]; do "
             "'%s' exec --wait 60s --retry-delay 20ms --retry-jitter 10ms %s -- "
             "sh -c 'v=$(cat %s); sleep 0.01; echo $((v+1)) > %s' || exit $?; "
             "i=$((i+1)); done",
             REDLOCK_CLI, resource, counter, counter);
    pid_t pids[8];
    for (int p = 0; p < 8; p++) pids[p] = spawn((char *[]){"/bin/sh", "-c", script, NULL}, g_nodes, -1, -1);
    int killed_at = -1;
    if (kill_at > 0) {
        uint64_t end = rt_now_us() + 60000000u;
        while (killed_at < 0 && rt_now_us() < end) {
            int v = atoi(slurp("counter"));
            if (v >= kill_at) {
                cr_assert_eq(tc_node_kill(&C, 1), 0);
                cr_assert_eq(tc_node_kill(&C, 3), 0);
                killed_at = v;
            }
            rt_sleep_ms(10);
        }
        cr_assert_geq(killed_at, kill_at, "the counter never reached %d", kill_at);
    }
    for (int p = 0; p < 8; p++) cr_assert_eq(wait_code(pids[p], 180000), 0, "loop %d failed", p);
    cr_assert_eq(atoi(slurp("counter")), 200, "counter is %s, not 200: an update was lost", slurp("counter"));
    if (kill_at > 0) {
        cr_assert_lt(killed_at, 200, "nodes were killed only after the last increment");
        cr_log_info("nodes 1 and 3 killed at counter %d", killed_at);
    }
}

Test(cli, eight_concurrent_execs_increment_a_counter_exactly) {
    counter_race("cli:counter", 0);
}

Test(cli, counter_stays_exact_when_2_of_5_nodes_die_midway) {
    counter_race("cli:counter-kill", 60);
    tc_cluster_heal(&C);
}

/* ------------------------------------------------------------ exit codes */

Test(cli, command_status_is_passed_through) {
    run_t r;
    RUN(&r, g_nodes, "exec", "cli:st", "--", "/bin/true");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    RUN(&r, g_nodes, "exec", "cli:st", "--", "sh", "-c", "exit 3");
    cr_assert_eq(r.code, 3, "stderr: %s", r.err);
    RUN(&r, g_nodes, "exec", "cli:st", "--", "sh", "-c", "kill -9 $$");
    cr_assert_eq(r.code, 128 + 9, "a command killed by SIGKILL gives 137; stderr: %s", r.err);
    RUN(&r, g_nodes, "exec", "cli:st", "--", "sh", "-c", "echo out; echo err >&2");
    cr_assert_eq(r.code, 0);
    cr_assert_str_eq(r.out, "out\n");
    cr_assert_str_eq(r.err, "err\n", "nothing but the command's own output without -v");
    for (int i = 0; i < C.n; i++) cr_assert_null(tc_get(&C, i, "cli:st"), "released on node %d", i);
}

Test(cli, missing_or_unexecutable_command_gives_127_or_126) {
    run_t r;
    RUN(&r, g_nodes, "exec", "cli:nx", "--", "no-such-command-for-redlock-test");
    cr_assert_eq(r.code, 127, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "no-such-command-for-redlock-test"), "stderr: %s", r.err);
    RUN(&r, g_nodes, "exec", "cli:nx", "--", "/nonexistent/dir/cmd");
    cr_assert_eq(r.code, 127, "stderr: %s", r.err);
    write_file("notexec.sh", "#!/bin/sh\nexit 0\n", 0644);
    char path[256];
    path_of(path, sizeof path, "notexec.sh");
    RUN(&r, g_nodes, "exec", "cli:nx", "--", path);
    cr_assert_eq(r.code, 126, "stderr: %s", r.err);
    /* the lock was released each time */
    RUN(&r, g_nodes, "status", "cli:nx");
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "free:"), "%s", r.out);
}

Test(cli, usage_errors_exit_64_and_name_the_bad_value) {
    static const struct {
        const char *args[8];
        const char *names;
    } cases[] = {
        {{"exec", "--ttl", "5x", "R", "--", "true"}, "5x"},
        {{"exec", "--ttl", "-5s", "R", "--", "true"}, "-5s"},
        {{"exec", "--wait", "99999999999999s", "R", "--", "true"}, "99999999999999s"},
        {{"exec", "--wait", "1.5ms", "R", "--", "true"}, "1.5ms"},
        {{"exec", "--ttl", "30m1h", "R", "--", "true"}, "'30m1h'"},
        {{"exec", "--ttl", "1h1h", "R", "--", "true"}, "'1h1h'"},
        {{"exec", "--ttl", "1h30", "R", "--", "true"}, "'1h30'"},
        {{"exec", "--ttl", "1d", "R", "--", "true"}, "'1d'"},
        {{"exec", "--ttl", "597h", "R", "--", "true"}, "'597h' is too large"},
        {{"exec", "--wait", "1h-5m", "R", "--", "true"}, "'1h-5m' is negative"},
        {{"exec", "--wait", "1hm", "R", "--", "true"}, "'1hm'"},
        {{"--retry-delay", "2s1m", "ping"}, "'2s1m'"},
        {{"exec", "--ttl", "", "R", "--", "true"}, "--ttl"},
        {{"exec", "--ttl"}, "--ttl"},
        {{"--op-timeout", "fast", "ping"}, "fast"},
        {{"--drift-factor", "lots", "ping"}, "lots"},
        {{"exec", "--on-lost", "maybe", "R", "--", "true"}, "maybe"},
        {{"exec", "--max-hold", "soon", "R", "--", "true"}, "'soon'"},
        {{"exec", "--max-hold", "0", "R", "--", "true"}, "'0'"},
        {{"exec", "--max-hold", "500ms", "--ttl", "600ms", "R", "--", "true"}, "--max-hold 500ms is shorter"},
        {{"--bogus", "exec", "R", "--", "true"}, "--bogus"},
        {{"exec", "--bogus", "R", "--", "true"}, "--bogus"},
        {{"exec", "R", "true"}, "--"},
        {{"exec", "R"}, "--"},
        {{"exec", "--", "true"}, "RESOURCE"},
        {{"exec", "R", "--"}, "command"},
        {{"status"}, "RESOURCE"},
        {{"exec", "--limit", "0", "R", "--", "true"}, "'0'"},
        {{"exec", "--limit", "65", "R", "--", "true"}, "'65'"},
        {{"exec", "--limit=abc", "R", "--", "true"}, "'abc'"},
        {{"exec", "--limit", "2", "--shared", "R", "--", "true"}, "--limit 2 and --shared"},
        {{"exec", "--shared", "--fencing", "R", "--", "true"}, "--fencing and --shared"},
        {{"status", "--limit", "65", "R"}, "'65'"},
        {{"ping", "--limit", "2"}, "--limit"},
        {{"ping", "extra"}, "extra"},
        {{"frobnicate"}, "frobnicate"},
        {{NULL}, "command"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[12] = {REDLOCK_CLI};
        size_t k = 1;
        for (; k <= 8 && cases[i].args[k - 1]; k++) argv[k] = (char *)cases[i].args[k - 1];
        argv[k] = NULL;
        run_t r;
        run_argv(&r, g_nodes, argv);
        cr_assert_eq(r.code, 64, "case %zu: exit %d, stderr: %s", i, r.code, r.err);
        cr_assert(strstr(r.err, cases[i].names), "case %zu: stderr does not name '%s': %s", i, cases[i].names, r.err);
        cr_assert_eq(r.out_len, 0, "case %zu: usage errors print nothing on stdout", i);
    }
    /* A TTL the library finds too short to ever be valid is a bad argument too. */
    run_t r;
    RUN(&r, g_nodes, "exec", "--ttl", "10ms", "cli:short", "--", "true");
    cr_assert_eq(r.code, 64, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "ttl_ms=10"), "stderr: %s", r.err);
}

Test(cli, no_quorum_exits_69) {
    char nodes[256];
    snprintf(nodes, sizeof nodes, "redis://127.0.0.1:%d,redis://127.0.0.1:%d,redis://127.0.0.1:%d", unused_port(),
             unused_port(), unused_port());
    run_t r;
    RUN(&r, NULL, "--nodes", nodes, "exec", "cli:nq", "--", "/bin/true");
    cr_assert_eq(r.code, 69, "stderr: %s", r.err);
    RUN(&r, NULL, "--nodes", nodes, "status", "cli:nq");
    cr_assert_eq(r.code, 69, "stderr: %s", r.err);
    RUN(&r, NULL, "--nodes", nodes, "ping");
    cr_assert_eq(r.code, 69, "stderr: %s", r.err);

    /* real faults: 3 of the 5 fixture nodes killed */
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_kill(&C, i), 0);
    write_file("ran", "", 0644);
    char marker[256];
    path_of(marker, sizeof marker, "ran");
    RUN(&r, g_nodes, "-v", "exec", "cli:nq", "--", "sh", "-c", "echo yes > \"$1\"", "sh", marker);
    cr_assert_eq(r.code, 69, "stderr: %s", r.err);
    cr_assert_str_eq(slurp("ran"), "", "the command must not run without the lock");
    cr_assert(strstr(r.err, "connection refused"), "-v shows why, node by node: %s", r.err);
    RUN(&r, g_nodes, "status", "cli:nq");
    cr_assert_eq(r.code, 69);
    RUN(&r, g_nodes, "ping");
    cr_assert_eq(r.code, 69);
    tc_cluster_heal(&C);
}

Test(cli, ping_with_a_minority_down_warns_and_exits_0) {
    cr_assert_eq(tc_node_kill(&C, 4), 0);
    run_t r;
    RUN(&r, g_nodes, "ping");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "warning"), "stderr: %s", r.err);
    cr_assert(strstr(r.out, "4 of 5 nodes answered"), "%s", r.out);
    tc_cluster_heal(&C);
}

Test(cli, held_lock_exits_75_at_once_or_after_wait) {
    redlock_t *rl = g_rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "cli:held", 20000, &lk), REDLOCK_OK);
    run_t r;
    RUN(&r, g_nodes, "exec", "cli:held", "--", "/bin/true");
    cr_assert_eq(r.code, 75, "stderr: %s", r.err);
    cr_assert_lt(r.ms, scaled(500), "--wait 0 (the default) must refuse at once, took %llu ms",
                 (unsigned long long)r.ms);
    RUN(&r, g_nodes, "exec", "--wait", "0", "cli:held", "--", "/bin/true");
    cr_assert_eq(r.code, 75);
    cr_assert_lt(r.ms, scaled(500), "--wait 0 took %llu ms", (unsigned long long)r.ms);

    RUN(&r, g_nodes, "-v", "exec", "--wait", "300ms", "--retry-delay", "50ms", "--retry-jitter", "0", "cli:held", "--",
        "/bin/true");
    cr_assert_eq(r.code, 75, "stderr: %s", r.err);
    cr_assert_geq(r.ms, 200, "--wait 300ms gave up after %llu ms", (unsigned long long)r.ms);
    cr_assert_lt(r.ms, scaled(2500), "--wait 300ms took %llu ms", (unsigned long long)r.ms);
    cr_assert(strstr(r.err, "held by another owner"), "stderr: %s", r.err);
    cr_assert(strstr(r.err, " no "), "-v prints the votes node by node: %s", r.err);
    cr_assert_null(strstr(r.err, redlock_lock_token(lk)), "the holder's token must not be printed");

    /* --wait long enough: granted once the holder releases */
    pid_t pid = START("waiter.log", "exec", "--wait", "10s", "--retry-delay", "50ms", "--retry-jitter", "20ms",
                      "cli:held", "--", "/bin/true");
    rt_sleep_ms(300);
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
    cr_assert_eq(wait_code(pid, 15000), 0, "%s", slurp("waiter.log"));
}

Test(cli, configuration_errors_exit_78_and_name_the_uri) {
    run_t r;
    RUN(&r, NULL, "--nodes", "redis://127.0.0.1:notaport", "exec", "cli:cfg", "--", "/bin/true");
    cr_assert_eq(r.code, 78, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "redis://127.0.0.1:notaport"), "stderr: %s", r.err);
    RUN(&r, NULL, "--nodes", "http://example.com", "status", "cli:cfg");
    cr_assert_eq(r.code, 78, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "http://example.com"), "stderr: %s", r.err);
    RUN(&r, NULL, "--op-timeout", "0", "--nodes", C.uri[0], "ping");
    cr_assert_eq(r.code, 78, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "op_timeout_ms=0"), "stderr: %s", r.err);
    RUN(&r, NULL, "exec", "cli:cfg", "--", "/bin/true");
    cr_assert_eq(r.code, 78, "no nodes at all: %s", r.err);
    cr_assert(strstr(r.err, "REDLOCK_NODES"), "stderr: %s", r.err);
}

Test(cli, next_nodes_make_a_joint_lock_that_needs_both_quorums) {
    char old[800], new[800], next_env[820];
    snprintf(old, sizeof old, "%s,%s,%s", C.uri[0], C.uri[1], C.uri[2]);
    snprintf(new, sizeof new, "%s,%s,%s", C.uri[2], C.uri[3], C.uri[4]);
    snprintf(next_env, sizeof next_env, "REDLOCK_NEXT_NODES=%s", new);
    /* NEW's nodes 3 and 4 are taken: OLD alone would grant, the joint lock may not */
    for (int i = 3; i < 5; i++) cr_assert_eq(tc_set(&C, i, "cli:joint", "someone-else", 20000), 0);
    run_t r;
    RUN(&r, NULL, "--nodes", old, "--next-nodes", new, "exec", "--ttl", "10s", "cli:joint", "--", "/bin/true");
    cr_assert_eq(r.code, 75, "a joint lock without NEW's quorum: exit %d, stderr: %s", r.code, r.err);
    cr_assert(strstr(r.err, "old ") && strstr(r.err, "new "), "stderr names no tallies: %s", r.err);
    for (int i = 3; i < 5; i++) cr_assert_eq(tc_del(&C, i, "cli:joint"), 1);
    /* the next list from the environment this time */
    run_argv(&r, old,
             (char *[]){"/usr/bin/env", next_env, REDLOCK_CLI, "acquire", "--json", "--ttl", "10s", "cli:joint", NULL});
    cr_assert_eq(r.code, 0, "exit %d, stderr: %s", r.code, r.err);
    cr_assert(strstr(r.out, "\"lists\":\"both\"") && strstr(r.out, "\"lists\":\"new\""), "json: %s", r.out);
    cr_assert_eq(tc_await_count(&C, "cli:joint", NULL, 5), 5, "the joint lock is not on all five nodes");
    RUN(&r, NULL, "--nodes", old, "--next-nodes", old, "ping");
    cr_assert_eq(r.code, 78, "a next list equal to the current one: exit %d, stderr: %s", r.code, r.err);
    cr_assert(strstr(r.err, "next_nodes names the same 3 nodes"), "stderr: %s", r.err);
    RUN(&r, NULL, "--nodes", old, "--next-nodes", "redis://127.0.0.1:notaport", "ping");
    cr_assert_eq(r.code, 78, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "redis://127.0.0.1:notaport"), "stderr: %s", r.err);
}

Test(cli, passwords_are_never_printed) {
    char nodes[256];
    snprintf(nodes, sizeof nodes, "redis://user:s3cr3tpw@127.0.0.1:%d", unused_port());
    run_t r;
    RUN(&r, NULL, "-vv", "--nodes", nodes, "exec", "cli:pw", "--", "/bin/true");
    cr_assert_eq(r.code, 69, "stderr: %s", r.err);
    cr_assert_null(strstr(r.err, "s3cr3tpw"), "stderr: %s", r.err);
    RUN(&r, NULL, "--nodes", nodes, "status", "--json", "cli:pw");
    cr_assert_eq(r.code, 69);
    cr_assert_null(strstr(r.out, "s3cr3tpw"), "stdout: %s", r.out);
    cr_assert(strstr(r.out, "***"), "the URI is shown masked: %s", r.out);
    RUN(&r, NULL, "--nodes", nodes, "ping", "--json");
    cr_assert_null(strstr(r.out, "s3cr3tpw"), "stdout: %s", r.out);
    cr_assert_null(strstr(r.err, "s3cr3tpw"), "stderr: %s", r.err);
}

/* ------------------------------------------------------------ lock loss */

/* Runs a command that records its token and traps SIGTERM under
 * `exec --ttl 1s --on-lost MODE`, takes the lock over on a majority, and
 * returns the tool's exit code; *after_ms: from the takeover to its exit. */
static int lose_lock(const char *mode, const char *resource, const char *body, uint64_t *after_ms) {
    char script[1024], tok[256], marker[256];
    path_of(tok, sizeof tok, "token");
    path_of(marker, sizeof marker, "marker");
    unlink(tok);
    unlink(marker);
    /* (the trap before the token: once the test reads the token, a TERM is caught) */
    snprintf(script, sizeof script, "trap 'echo term > %s; exit 0' TERM; echo \"$REDLOCK_TOKEN\" > %s; %s", marker, tok,
             body);
    pid_t pid = START("lost.log", "exec", "--ttl", g_slow ? "3s" : "1s", "--on-lost", (char *)mode, (char *)resource,
                      "--", "/bin/sh", "-c", script);
    char token[64];
    snprintf(token, sizeof token, "%s", wait_line("token", scaled(5000), "lost.log"));
    token[strcspn(token, "\n")] = '\0';
    cr_assert(is_hex40(token, strlen(token)), "token '%s'", token);
    cr_assert_eq(tc_await_count(&C, resource, token, 5), 5);
    uint64_t t0 = rt_now_us();
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_set(&C, i, resource, "foreign-owner", 20000), 0);
    int code = wait_code(pid, 20000);
    *after_ms = (rt_now_us() - t0) / 1000;
    cr_assert(strstr(slurp("lost.log"), "lost"), "the tool says the lock was lost: %s", slurp("lost.log"));
    cr_assert_eq(tc_count_value(&C, resource, "foreign-owner"), 3, "the new owner's keys must survive the release");
    cr_assert_null(strstr(slurp("lost.log"), token), "the token must not be printed");
    return code;
}

#define BOUNDED_SLEEP "i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 9"

Test(cli, lost_lock_sends_sigterm_and_exits_79) {
    uint64_t ms;
    int code = lose_lock("term", "cli:lost-term", BOUNDED_SLEEP, &ms);
    cr_assert_eq(code, 79, "%s", slurp("lost.log"));
    cr_assert_str_eq(slurp("marker"), "term\n", "the command got SIGTERM");
    cr_assert_lt(ms, scaled(3000), "lost after %llu ms (TTL 1 s, extended every 333 ms)", (unsigned long long)ms);
}

Test(cli, lost_lock_with_on_lost_kill_and_ignore) {
    uint64_t ms;
    int code = lose_lock("kill", "cli:lost-kill", BOUNDED_SLEEP, &ms);
    cr_assert_eq(code, 79, "%s", slurp("lost.log"));
    cr_assert_str_eq(slurp("marker"), "", "SIGKILL cannot be trapped");
    cr_assert_lt(ms, scaled(3000));

    char done[256], body[512];
    path_of(done, sizeof done, "done");
    snprintf(body, sizeof body, "sleep 1.5; echo finished > %s; exit 0", done);
    code = lose_lock("ignore", "cli:lost-ignore", body, &ms);
    cr_assert_eq(code, 79, "%s", slurp("lost.log"));
    cr_assert_str_eq(slurp("done"), "finished\n", "--on-lost ignore lets the command finish");
    cr_assert_str_eq(slurp("marker"), "");
}

/* `exec --max-hold 1500ms --ttl 600ms R -- <a trapped 10 s sleep>` (7.5 s
 * and 3 s under valgrind): the watchdog stops extending at the cap, the
 * command gets SIGTERM when the lock's validity ends, the tool exits 80,
 * and the lock is free at once. */
Test(cli, max_hold_ends_the_lock_at_the_cap_and_exits_80) {
    char marker[256], script[512], said[64];
    const char *hold = g_slow ? "7500ms" : "1500ms";
    uint64_t hold_ms = g_slow ? 7500 : 1500;
    path_of(marker, sizeof marker, "held-out");
    snprintf(script, sizeof script, "trap 'echo term > %s; exit 0' TERM; %s", marker, BOUNDED_SLEEP);
    run_t r;
    RUN(&r, g_nodes, "exec", "--max-hold", (char *)hold, "--ttl", g_slow ? "3s" : "600ms", "cli:max-hold", "--",
        "/bin/sh", "-c", script);
    cr_assert_eq(r.code, 80, "exit %d; stderr: %s", r.code, r.err);
    cr_assert_str_eq(slurp("held-out"), "term\n", "the command did not get SIGTERM");
    snprintf(said, sizeof said, "ended at --max-hold %s", hold);
    cr_assert(strstr(r.err, said), "stderr: %s", r.err);
    cr_assert_geq(r.ms, hold_ms - 100, "the lock ended %llu ms after the start, before its %s cap",
                  (unsigned long long)r.ms, hold);
    cr_assert_lt(r.ms, hold_ms + scaled(2500), "the 10 s command ran %llu ms under a %s cap", (unsigned long long)r.ms,
                 hold);
    cr_assert_eq(tc_count_value(&C, "cli:max-hold", NULL), 0, "keys of the capped lock remain after the tool exited");
    RUN(&r, g_nodes, "exec", "cli:max-hold", "--", "true");
    cr_assert_eq(r.code, 0, "the lock was not free right after: %s", r.err);
}

/* ------------------------------------------------------------ environment, status */

Test(cli, command_sees_its_resource_and_token_and_status_shows_the_holder) {
    char envf[256], go[256], script[2048];
    path_of(envf, sizeof envf, "env");
    path_of(go, sizeof go, "go");
    snprintf(script, sizeof script,
             "printf '%%s\\n%%s\\n' \"$REDLOCK_RESOURCE\" \"$REDLOCK_TOKEN\" > %s.tmp && mv %s.tmp %s; "
             "i=0; while [ ! -e %s ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done",
             envf, envf, envf, go);
    pid_t pid = START("env.log", "exec", "cli:env", "--", "/bin/sh", "-c", script);
    wait_line("env", scaled(5000), "env.log");
    char res[64] = "", token[64] = "";
    cr_assert_eq(sscanf(slurp("env"), "%63s %63s", res, token), 2, "env file: %s", slurp("env"));
    cr_assert_str_eq(res, "cli:env");
    cr_assert(is_hex40(token, strlen(token)), "REDLOCK_TOKEN='%s'", token);
    cr_assert_eq(tc_await_count(&C, "cli:env", token, 5), 5, "the token is the lock's value on every node");

    char prefix[9];
    memcpy(prefix, token, 8);
    prefix[8] = '\0';
    run_t r;
    RUN(&r, g_nodes, "status", "cli:env");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, prefix), "status shows the token prefix: %s", r.out);
    cr_assert_null(strstr(r.out, token), "status must not show the whole token: %s", r.out);
    cr_assert(strstr(r.out, "held: token"), "%s", r.out);
    cr_assert(strstr(r.out, "on 5 of 5 nodes (quorum 3), expires in"), "%s", r.out);
    for (int i = 0; i < C.n; i++) cr_assert(strstr(r.out, C.uri[i]), "node %d missing: %s", i, r.out);

    RUN(&r, g_nodes, "status", "--json", "cli:env");
    cr_assert_eq(r.code, 0);
    cr_assert(json_balanced(r.out), "not balanced JSON: %s", r.out);
    cr_assert_null(strstr(r.out, token));
    char want[64];
    snprintf(want, sizeof want, "\"token_prefix\":\"%s\"", prefix);
    cr_assert(strstr(r.out, want), "%s", r.out);
    static const char *const keys[] = {"\"resource\":\"cli:env\"",
                                       "\"state\":\"held\"",
                                       "\"quorum\":3",
                                       "\"nodes\":[",
                                       "\"pttl_ms\":",
                                       "\"rtt_us\":",
                                       "\"reachable\":true",
                                       "\"exists\":true",
                                       "\"holder_nodes\":5"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert(strstr(r.out, keys[i]), "%s in %s", keys[i], r.out);
    long long pttl = -1;
    const char *p = strstr(r.out, "\"pttl_ms\":");
    cr_assert_eq(sscanf(p, "\"pttl_ms\":%lld", &pttl), 1);
    cr_assert(pttl > 0 && pttl <= 10000, "pttl %lld (default TTL 10 s)", pttl);

    write_file("go", "", 0644);
    cr_assert_eq(wait_code(pid, 10000), 0, "%s", slurp("env.log"));
    cr_assert_eq(tc_await_count(&C, "cli:env", token, 0), 0, "released on exit");
    RUN(&r, g_nodes, "status", "--json", "cli:env");
    cr_assert(strstr(r.out, "\"state\":\"free\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"exists\":false"), "%s", r.out);
}

Test(cli, status_with_a_node_down_and_a_foreign_holder) {
    cr_assert_eq(tc_node_kill(&C, 2), 0);
    for (int i = 0; i < 3; i++)
        if (i != 2) cr_assert_eq(tc_set(&C, i, "cli:foreign", "other-client-value", 30000), 0);
    cr_assert_eq(tc_set(&C, 3, "cli:foreign", "other-client-value", 30000), 0);
    run_t r;
    RUN(&r, g_nodes, "status", "cli:foreign");
    cr_assert_eq(r.code, 0, "a quorum answered: %s", r.err);
    cr_assert(strstr(r.out, "held: token other-cl... on 3 of 5 nodes"), "%s", r.out);
    cr_assert_null(strstr(r.out, "other-client-value"));
    RUN(&r, g_nodes, "status", "--json", "cli:foreign");
    cr_assert(json_balanced(r.out), "%s", r.out);
    cr_assert(strstr(r.out, "\"reachable\":false"), "%s", r.out);
    cr_assert(strstr(r.out, "\"answered\":4"), "%s", r.out);
    tc_cluster_heal(&C);
}

/* ------------------------------------------------------------ semaphores, read-write locks */

/* A command for `exec --limit` / `exec --shared`: records "$what ns" in
 * DIR/start.$1 (what: "$REDLOCK_SLOT" or "$REDLOCK_TOKEN", ns: the
 * wall clock in ns), waits for DIR/go (at most 30 s), then records the
 * time in DIR/end.$1. Files appear whole (written aside, then renamed). */
static void holder_script(char *buf, size_t n, const char *what) {
    snprintf(
        buf, n,
        "d='%s'; printf '%%s %%s\\n' \"%s\" \"$(date +%%s%%N)\" > $d/start.$1.tmp && mv $d/start.$1.tmp $d/start.$1; "
        "i=0; while [ ! -e $d/go ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done; "
        "date +%%s%%N > $d/end.$1.tmp && mv $d/end.$1.tmp $d/end.$1",
        g_dir, what);
}

/* How many of DIR/<prefix>.0 .. <prefix>.n-1 exist. */
static int count_files(const char *prefix, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        char name[64], path[256];
        struct stat sb;
        snprintf(name, sizeof name, "%s.%d", prefix, i);
        path_of(path, sizeof path, name);
        k += stat(path, &sb) == 0;
    }
    return k;
}

/* Waits until count_files(prefix, n) >= want (at most timeout_ms); returns the count. */
static int wait_files(const char *prefix, int n, int want, uint64_t timeout_ms) {
    uint64_t end = rt_now_us() + timeout_ms * 1000u;
    int k;
    while ((k = count_files(prefix, n)) < want && rt_now_us() < end) rt_sleep_ms(20);
    return k;
}

/* A holder's run: what it got (slot or token) and its start and end in ns. */
typedef struct span {
    char what[64];
    unsigned long long start, end;
} span_t;

/* Reads DIR/start.i and DIR/end.i into sp. */
static void read_span(int i, span_t *sp) {
    char name[32];
    snprintf(name, sizeof name, "start.%d", i);
    cr_assert_eq(sscanf(slurp(name), "%63s %llu", sp->what, &sp->start), 2, "%s: %s", name, slurp(name));
    snprintf(name, sizeof name, "end.%d", i);
    cr_assert_eq(sscanf(slurp(name), "%llu", &sp->end), 1, "%s: %s", name, slurp(name));
}

/* The most spans running at one instant (each span's start is checked). */
static int max_overlap(const span_t *sp, int n) {
    int most = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (int j = 0; j < n; j++) k += sp[j].start <= sp[i].start && sp[j].end > sp[i].start;
        if (k > most) most = k;
    }
    return most;
}

Test(cli, exec_limit_2_runs_at_most_two_commands_at_once) {
    char script[1024], marker[256];
    holder_script(script, sizeof script, "$REDLOCK_SLOT");
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        char log[32], idx[16];
        snprintf(log, sizeof log, "sem%d.log", i);
        snprintf(idx, sizeof idx, "%d", i);
        pids[i] =
            START(log, "exec", "--limit", "2", "--wait", "60s", "cli:sem", "--", "/bin/sh", "-c", script, "sh", idx);
    }
    cr_assert_eq(wait_files("start", 3, 2, scaled(10000)), 2, "two permits within 10 s: %s", slurp("sem0.log"));
    rt_sleep_ms(scaled(700));
    cr_assert_eq(count_files("start", 3), 2, "a third command runs under limit 2");

    /* without --wait, a fourth is refused at once and its command never runs */
    path_of(marker, sizeof marker, "ran");
    run_t r;
    RUN(&r, g_nodes, "exec", "--limit", "2", "cli:sem", "--", "sh", "-c", "echo yes > \"$1\"", "sh", marker);
    cr_assert_eq(r.code, 75, "stderr: %s", r.err);
    cr_assert_str_eq(slurp("ran"), "", "the refused command ran");

    RUN(&r, g_nodes, "status", "--limit", "2", "cli:sem");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, "permits: 2 of 2 held on a quorum"), "%s", r.out);
    cr_assert(strstr(r.out, "slot 0") && strstr(r.out, "slot 1"), "%s", r.out);

    write_file("go", "", 0644);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(wait_code(pids[i], scaled(30000)), 0, "holder %d: %s", i, slurp("sem0.log"));
    span_t sp[3];
    for (int i = 0; i < 3; i++) read_span(i, &sp[i]);
    cr_assert_eq(max_overlap(sp, 3), 2, "at most (and here exactly) 2 commands at once");
    int seen[2] = {0, 0};
    for (int i = 0; i < 3; i++) {
        int slot = atoi(sp[i].what);
        cr_assert(slot == 0 || slot == 1, "REDLOCK_SLOT='%s'", sp[i].what);
        seen[slot]++;
    }
    cr_assert(seen[0] && seen[1], "the first two held slots 0 and 1");
    for (int i = 0; i < C.n; i++)
        for (int s = 0; s < 2; s++) {
            char key[64];
            snprintf(key, sizeof key, "cli:sem:permit:%d", s);
            cr_assert_eq(tc_pttl(&C, i, key), -2, "%s left on node %d", key, i);
        }
}

Test(cli, exec_shared_readers_overlap_and_keep_a_writer_out) {
    char script[1024], marker[256], writer[512];
    holder_script(script, sizeof script, "$REDLOCK_TOKEN");
    pid_t rd[2];
    rd[0] = START("r0.log", "exec", "--shared", "cli:rw", "--", "/bin/sh", "-c", script, "sh", "0");
    rd[1] = START("r1.log", "exec", "--shared", "cli:rw", "--", "/bin/sh", "-c", script, "sh", "1");
    cr_assert_eq(wait_files("start", 2, 2, scaled(10000)), 2, "both readers run at once: %s %s", slurp("r0.log"),
                 slurp("r1.log"));
    cr_assert_eq(count_files("end", 2), 0);

    /* a writer without --wait is refused at once, its command never runs */
    path_of(marker, sizeof marker, "ran");
    run_t r;
    RUN(&r, g_nodes, "exec", "cli:rw", "--", "sh", "-c", "echo yes > \"$1\"", "sh", marker);
    cr_assert_eq(r.code, 75, "stderr: %s", r.err);
    cr_assert_str_eq(slurp("ran"), "", "the writer ran while readers held the lock");

    /* status: both readers, by prefix only */
    RUN(&r, g_nodes, "status", "cli:rw");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, "shared: 2 reader(s) hold it on a quorum"), "%s", r.out);
    for (int i = 0; i < 2; i++) {
        char name[32], token[64] = "", line[64];
        snprintf(name, sizeof name, "start.%d", i);
        cr_assert_eq(sscanf(slurp(name), "%63s", token), 1);
        cr_assert(is_hex40(token, strlen(token)), "REDLOCK_TOKEN='%s'", token);
        snprintf(line, sizeof line, "%.8s  shared       5/5  yes", token);
        cr_assert(strstr(r.out, line), "no line '%s' in %s", line, r.out);
        cr_assert_null(strstr(r.out, token), "whole token shown: %s", r.out);
    }
    RUN(&r, g_nodes, "status", "--json", "cli:rw");
    cr_assert(json_balanced(r.out), "%s", r.out);
    cr_assert(strstr(r.out, "\"state\":\"shared\"") && strstr(r.out, "\"readers_held\":2"), "%s", r.out);
    cr_assert(strstr(r.out, "\"type\":\"hash\"") && strstr(r.out, "\"readers\":2"), "%s", r.out);

    /* a writer that waits runs once both readers are done, after both */
    char wfile[256];
    path_of(wfile, sizeof wfile, "writer");
    snprintf(writer, sizeof writer, "date +%%s%%N > '%s'", wfile);
    pid_t w = START("w.log", "exec", "--wait", "60s", "cli:rw", "--", "/bin/sh", "-c", writer);
    uint64_t end = rt_now_us() + scaled(5000) * 1000u;
    do {
        rt_sleep_ms(100);
        RUN(&r, g_nodes, "status", "cli:rw");
    } while (!strstr(r.out, "writer waiting: mark on") && rt_now_us() < end);
    cr_assert(strstr(r.out, "writer waiting: mark on"), "the waiting writer's mark is shown: %s", r.out);
    cr_assert_str_eq(slurp("writer"), "", "the writer ran while readers held the lock");
    write_file("go", "", 0644);
    for (int i = 0; i < 2; i++) cr_assert_eq(wait_code(rd[i], scaled(30000)), 0, "reader %d", i);
    cr_assert_eq(wait_code(w, scaled(30000)), 0, "writer: %s", slurp("w.log"));
    span_t sp[2];
    for (int i = 0; i < 2; i++) read_span(i, &sp[i]);
    cr_assert_eq(max_overlap(sp, 2), 2, "the readers overlapped");
    unsigned long long wrote = strtoull(slurp("writer"), NULL, 10);
    cr_assert(wrote > sp[0].end && wrote > sp[1].end, "the writer ran before a reader ended");
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_pttl(&C, i, "cli:rw"), -2, "cli:rw left on node %d", i);
}

/* The "pttl_ms":[...] of the holder whose JSON object starts at kind
 * (e.g. "\"kind\":\"exclusive\""): each of the 5 must be in 1..max. */
static void check_holder_ttls(const char *json, const char *kind, long long max) {
    const char *p = strstr(json, kind);
    cr_assert_not_null(p, "no %s in %s", kind, json);
    p = strstr(p, "\"pttl_ms\":[");
    cr_assert_not_null(p);
    p += strlen("\"pttl_ms\":[");
    for (int i = 0; i < 5; i++) {
        char *e;
        long long v = strtoll(p, &e, 10);
        cr_assert(e != p && v > 0 && v <= max, "%s: PTTL %d is '%.12s'", kind, i, p);
        p = e + 1;
    }
}

Test(cli, status_lists_exclusive_shared_and_permit_holders) {
    redlock_t *rl = g_rl = rt_new(&C, 5, NULL);
    redlock_lock_t *ex = NULL, *p[2] = {NULL, NULL}, *rd[2] = {NULL, NULL};
    cr_assert_eq(redlock_acquire(rl, "cli:all", 20000, &ex), REDLOCK_OK);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(redlock_acquire_permit(rl, "cli:all", 3, 20000, 0, &p[i], NULL), REDLOCK_OK);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(redlock_acquire_shared(rl, "cli:all-rw", 20000, 0, &rd[i], NULL), REDLOCK_OK);
    /* slot 2 held by another client on 2 nodes only: not a quorum */
    for (int i = 0; i < 2; i++) cr_assert_eq(tc_set(&C, i, "cli:all:permit:2", "minority-holder", 20000), 0);

    run_t r;
    RUN(&r, g_nodes, "status", "cli:all");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    char line[96];
    snprintf(line, sizeof line, "%.8s  exclusive    5/5  yes", redlock_lock_token(ex));
    cr_assert(strstr(r.out, line), "no '%s' in %s", line, r.out);
    for (int i = 0; i < 2; i++) {
        snprintf(line, sizeof line, "%.8s  slot %d       5/5  yes", redlock_lock_token(p[i]), redlock_lock_slot(p[i]));
        cr_assert(strstr(r.out, line), "no '%s' in %s", line, r.out);
    }
    cr_assert(strstr(r.out, "minority  slot 2       2/5  no "), "%s", r.out);
    cr_assert(strstr(r.out, "held: token") && strstr(r.out, "permits: 2 held on a quorum"), "%s", r.out);
    const redlock_lock_t *all[] = {ex, p[0], p[1], rd[0], rd[1]};
    for (size_t i = 0; i < 5; i++) cr_assert_null(strstr(r.out, redlock_lock_token(all[i])), "whole token: %s", r.out);
    cr_assert_null(strstr(r.out, "minority-holder"));

    RUN(&r, g_nodes, "status", "--limit", "2", "cli:all");
    cr_assert(strstr(r.out, "permits: 2 of 2 held on a quorum"), "%s", r.out);
    cr_assert_null(strstr(r.out, "slot 2"), "--limit 2 looks at slots 0 and 1 only: %s", r.out);

    RUN(&r, g_nodes, "status", "--json", "cli:all");
    cr_assert(json_balanced(r.out), "%s", r.out);
    cr_assert(strstr(r.out, "\"state\":\"held\"") && strstr(r.out, "\"permits\":{\"limit\":null,\"slots_checked\":64,"
                                                                   "\"held\":2}"),
              "%s", r.out);
    cr_assert(strstr(r.out, "\"kind\":\"slot\",\"slot\":2,\"token_prefix\":\"minority\",\"nodes\":2,"
                            "\"quorum\":false,\"pttl_ms\":["),
              "%s", r.out);
    check_holder_ttls(r.out, "\"kind\":\"exclusive\"", 20000);
    check_holder_ttls(r.out, "\"kind\":\"slot\",\"slot\":0", 20000);

    RUN(&r, g_nodes, "status", "--json", "cli:all-rw");
    cr_assert(strstr(r.out, "\"state\":\"shared\""), "%s", r.out);
    check_holder_ttls(r.out, "\"kind\":\"shared\"", 20000);
    for (int i = 0; i < 2; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"kind\":\"shared\",\"slot\":null,\"token_prefix\":\"%.8s\"",
                 redlock_lock_token(rd[i]));
        cr_assert(strstr(r.out, want), "no %s in %s", want, r.out);
    }

    cr_assert_eq(redlock_release(rl, ex), REDLOCK_OK);
    for (int i = 0; i < 2; i++) cr_assert_eq(redlock_release(rl, p[i]), REDLOCK_OK);
    for (int i = 0; i < 2; i++) cr_assert_eq(redlock_release(rl, rd[i]), REDLOCK_OK);
    for (int i = 0; i < 2; i++) tc_del(&C, i, "cli:all:permit:2");
    RUN(&r, g_nodes, "status", "cli:all");
    cr_assert(strstr(r.out, "free:") && !strstr(r.out, "holders"), "%s", r.out);
    RUN(&r, g_nodes, "status", "cli:all-rw");
    cr_assert(strstr(r.out, "free:"), "%s", r.out);
}

Test(cli, ping_shows_health_and_persistence) {
    run_t r;
    RUN(&r, g_nodes, "ping");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, "APPENDONLY"), "%s", r.out);
    cr_assert(strstr(r.out, "master"), "%s", r.out);
    cr_assert(strstr(r.out, "5 of 5 nodes answered (quorum 3)"), "%s", r.out);
    RUN(&r, g_nodes, "ping", "--json");
    cr_assert_eq(r.code, 0);
    cr_assert(json_balanced(r.out), "%s", r.out);
    static const char *const keys[] = {
        "\"n_nodes\":5",         "\"answered\":5",     "\"redis_version\":\"",  "\"role\":\"master\"",
        "\"appendonly\":\"no\"", "\"appendfsync\":\"", "\"aof_enabled\":false", "\"rdb_last_save\":",
        "\"uptime_s\":",         "\"rtt_us\":"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert(strstr(r.out, keys[i]), "%s in %s", keys[i], r.out);
}

Test(cli, nodes_come_from_the_option_or_the_environment) {
    run_t r;
    RUN(&r, g_nodes, "exec", "cli:envnodes", "--", "/bin/true");
    cr_assert_eq(r.code, 0, "REDLOCK_NODES alone: %s", r.err);
    RUN(&r, NULL, "--nodes", g_nodes, "exec", "cli:envnodes", "--", "/bin/true");
    cr_assert_eq(r.code, 0, "--nodes alone: %s", r.err);
    RUN(&r, "redis://127.0.0.1:notaport", "--nodes", g_nodes, "exec", "cli:envnodes", "--", "/bin/true");
    cr_assert_eq(r.code, 0, "--nodes wins over REDLOCK_NODES: %s", r.err);
    RUN(&r, "redis://127.0.0.1:notaport", "exec", "cli:envnodes", "--", "/bin/true");
    cr_assert_eq(r.code, 78, "REDLOCK_NODES is used without --nodes: %s", r.err);
    /* repeated --nodes accumulate; global options also after the command name */
    char a[1024] = "", b[1024] = "";
    for (int i = 0; i < C.n; i++) {
        char *dst = i < 2 ? a : b;
        if (*dst) strcat(dst, ", ");
        strcat(dst, C.uri[i]);
    }
    RUN(&r, NULL, "status", "--nodes", a, "--nodes", b, "--json", "cli:envnodes");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"n_nodes\":5"), "%s", r.out);
}

Test(cli, signals_to_the_tool_are_forwarded_to_the_command) {
    char tok[256], marker[256], script[1024];
    path_of(tok, sizeof tok, "token");
    path_of(marker, sizeof marker, "marker");
    /* (the trap before the token: once the test reads the token, a TERM is caught) */
    snprintf(script, sizeof script, "trap 'echo term > %s; exit 7' TERM; echo \"$REDLOCK_TOKEN\" > %s; %s", marker, tok,
             BOUNDED_SLEEP);
    pid_t pid = START("fwd.log", "exec", "cli:fwd", "--", "/bin/sh", "-c", script);
    char token[64];
    snprintf(token, sizeof token, "%s", wait_line("token", scaled(5000), "fwd.log"));
    token[strcspn(token, "\n")] = '\0';
    cr_assert_eq(kill(pid, SIGTERM), 0);
    cr_assert_eq(wait_code(pid, 10000), 7, "the tool exits with the command's status: %s", slurp("fwd.log"));
    cr_assert_str_eq(slurp("marker"), "term\n");
    cr_assert_eq(tc_await_count(&C, "cli:fwd", token, 0), 0, "the lock was released");
}

Test(cli, sigterm_or_sigint_during_wait_ends_it_with_nothing_held) {
    redlock_t *rl = g_rl = rt_new(&C, 5, NULL);
    redlock_lock_t *lk = NULL;
    cr_assert_eq(redlock_acquire(rl, "cli:waitsig", 30000, &lk), REDLOCK_OK);
    static const char *const verbs[] = {"exec", "acquire"};
    static const int sigs[] = {SIGTERM, SIGINT};
    for (int v = 0; v < 2; v++) {
        pid_t pid = v == 0 ? START("waitsig.log", "exec", "--wait", "20s", "cli:waitsig", "--", "/bin/true")
                           : START("waitsig.log", "acquire", "--wait", "20s", "cli:waitsig");
        rt_sleep_ms((unsigned)scaled(800)); /* waiting by now: the lock is held */
        uint64_t t = rt_now_us();
        cr_assert_eq(kill(pid, sigs[v]), 0);
        int code = wait_code(pid, 10000);
        uint64_t took = (rt_now_us() - t) / 1000;
        cr_assert_eq(code, 128 + sigs[v], "%s: exit %d: %s", verbs[v], code, slurp("waitsig.log"));
        cr_assert_lt(took, scaled(1500), "%s: the wait took %llu ms to end", verbs[v], (unsigned long long)took);
        const char *log = slurp("waitsig.log");
        cr_assert(strstr(log, "while waiting for 'cli:waitsig'") && strstr(log, "nothing is held"), "%s", log);
        /* only the holder's key is there, on every node */
        cr_assert_eq(tc_count_value(&C, "cli:waitsig", redlock_lock_token(lk)), 5);
    }
    cr_assert_eq(redlock_release(rl, lk), REDLOCK_OK);
}

Test(cli, help_and_version) {
    run_t r;
    RUN(&r, NULL, "--help");
    cr_assert_eq(r.code, 0);
    static const char *const words[] = {"--nodes",
                                        "REDLOCK_NODES",
                                        "--connect-timeout",
                                        "--op-timeout",
                                        "--drift-factor",
                                        "--drift-min",
                                        "--retry-delay",
                                        "--retry-jitter",
                                        "--ttl",
                                        "--wait",
                                        "--on-lost",
                                        "--json",
                                        "-v",
                                        "64",
                                        "69",
                                        "75",
                                        "78",
                                        "79",
                                        "126",
                                        "127",
                                        "--fencing",
                                        "REDLOCK_FENCE",
                                        "--max-ttl",
                                        "--no-quarantine",
                                        "--clock-jump",
                                        "--clock-check",
                                        "acquire",
                                        "extend",
                                        "release",
                                        "--token-env",
                                        "--token-stdin",
                                        "stats",
                                        "--prometheus",
                                        "--count",
                                        "1h30m"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        cr_assert(strstr(r.out, words[i]), "--help does not mention %s", words[i]);
    RUN(&r, NULL, "--version");
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, REDLOCK_VERSION), "%s", r.out);
}

/* ------------------------------------------------------------ fencing, safety options */

/* Parses s (up to a newline) as a decimal uint64; fails the test otherwise. */
static uint64_t parse_fence(const char *s) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    cr_assert(end != s && (*end == '\n' || *end == '\0') && errno == 0 && s[0] >= '0' && s[0] <= '9',
              "REDLOCK_FENCE is not a decimal number: '%s'", s);
    return (uint64_t)v;
}

Test(cli, fencing_exports_a_strictly_increasing_fence) {
    const char *res = "cli:fence";
    char key[64];
    snprintf(key, sizeof key, "%s:redlock:fence", res);
    /* the tool inherits a stale REDLOCK_FENCE: ours replaces it. The count
     * comes from the environment the command was started with
     * (/proc/$$/environ), since a shell keeps only one of two duplicates. */
    char script[1024];
    snprintf(script, sizeof script,
             "REDLOCK_FENCE=99999999999999999999 exec '%s' exec --fencing %s -- "
             "sh -c 'printf \"%%s\\n\" \"$REDLOCK_FENCE\"; tr \"\\0\" \"\\n\" < /proc/$$/environ | "
             "grep -c ^REDLOCK_FENCE= >&2'",
             REDLOCK_CLI, res);
    uint64_t prev = 0;
    for (int round = 0; round < 4; round++) {
        run_t r;
        run_argv(&r, g_nodes, (char *[]){"/bin/sh", "-c", script, NULL});
        cr_assert_eq(r.code, 0, "round %d: stderr: %s", round, r.err);
        uint64_t f = parse_fence(r.out);
        cr_assert_gt(f, prev, "round %d: fence %llu is not above the previous one, %llu", round, (unsigned long long)f,
                     (unsigned long long)prev);
        cr_assert_str_eq(r.err, "1\n", "exactly one REDLOCK_FENCE in the environment: %s", r.err);
        /* the fence the child saw is the counter a quorum of nodes keeps */
        char want[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)f);
        cr_assert_geq(tc_count_value(&C, key, want), 3, "fence %s is not the counter on a quorum", want);
        prev = f;
    }
    /* -v names the fence (it is no secret) but still not the token */
    run_t r;
    RUN(&r, g_nodes, "-v", "exec", "--fencing", (char *)res, "--", "sh", "-c",
        "echo \"$REDLOCK_FENCE $REDLOCK_TOKEN\"");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    char fence_s[32] = "", token[64] = "";
    cr_assert_eq(sscanf(r.out, "%31s %63s", fence_s, token), 2, "stdout: %s", r.out);
    cr_assert_gt(parse_fence(fence_s), prev);
    char want[48];
    snprintf(want, sizeof want, "fence %s", fence_s);
    cr_assert(strstr(r.err, want), "-v shows '%s': %s", want, r.err);
    cr_assert(is_hex40(token, strlen(token)), "token '%s'", token);
    cr_assert_null(strstr(r.err, token), "the token must not be printed: %s", r.err);
}

Test(cli, without_fencing_an_inherited_fence_is_removed) {
    char script[1024];
    snprintf(script, sizeof script,
             "REDLOCK_FENCE=12345 REDLOCK_TOKEN=stale REDLOCK_RESOURCE=stale exec '%s' exec cli:nofence -- "
             "sh -c 'echo \"${REDLOCK_FENCE-unset} $REDLOCK_RESOURCE ${#REDLOCK_TOKEN}\"'",
             REDLOCK_CLI);
    run_t r;
    run_argv(&r, g_nodes, (char *[]){"/bin/sh", "-c", script, NULL});
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert_str_eq(r.out, "unset cli:nofence 40\n", "the child must not see the stale values");
    /* and no fence counter is kept for a lock without --fencing */
    for (int i = 0; i < C.n; i++) cr_assert_null(tc_get(&C, i, "cli:nofence:redlock:fence"), "node %d", i);
}

Test(cli, max_ttl_caps_the_ttl) {
    run_t r;
    char marker[256];
    path_of(marker, sizeof marker, "ran");
    RUN(&r, g_nodes, "--max-ttl", "5s", "exec", "--ttl", "10s", "cli:maxttl", "--", "sh", "-c", "echo yes > \"$1\"",
        "sh", marker);
    cr_assert_eq(r.code, 64, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "--ttl 10000 ms exceeds --max-ttl 5000 ms"), "stderr names both values: %s", r.err);
    cr_assert_str_eq(slurp("ran"), "", "the command must not run");
    cr_assert_eq(r.out_len, 0);
    for (int i = 0; i < C.n; i++) cr_assert_null(tc_get(&C, i, "cli:maxttl"), "nothing locked on node %d", i);

    /* without --ttl the default (10 s) shrinks to --max-ttl; the option may
     * also follow the command name. Nodes up for less than max-ttl would be
     * quarantined: --no-quarantine keeps this test independent of restarts.
     * (Under valgrind the op timeout is 2 s, so the TTL must be longer.) */
    char *max = g_slow ? "5s" : "2s";
    RUN(&r, g_nodes, "exec", "--max-ttl", max, "--no-quarantine", "cli:maxttl", "--", "sh", "-c",
        "sleep 0.1; echo started");
    cr_assert_eq(r.code, 0, "stderr: %s", r.err);
    cr_assert_str_eq(r.out, "started\n");
    run_t s;
    pid_t pid = START("maxttl.log", "--max-ttl", max, "--no-quarantine", "exec", "cli:maxttl", "--", "sh", "-c",
                      "echo locked; sleep 1");
    wait_line("maxttl.log", scaled(5000), "maxttl.log");
    long long pttl = tc_pttl(&C, 0, "cli:maxttl");
    cr_assert(pttl > 0 && pttl <= (g_slow ? 5000 : 2000), "PTTL %lld with --max-ttl %s and no --ttl", pttl, max);
    cr_assert_eq(wait_code(pid, scaled(10000)), 0, "%s", slurp("maxttl.log"));
    RUN(&s, g_nodes, "--max-ttl=3000", "--no-quarantine", "exec", "--ttl", "3s", "cli:maxttl", "--", "true");
    cr_assert_eq(s.code, 0, "a TTL equal to --max-ttl is fine: %s", s.err);
}

Test(cli, max_ttl_turns_on_the_restart_quarantine) {
    /* No fixture node has been up for a day: with --max-ttl 24h every node
     * counts as recently restarted and gets no vote, unless --no-quarantine. */
    char marker[256];
    path_of(marker, sizeof marker, "ran");
    run_t r;
    RUN(&r, g_nodes, "-v", "--max-ttl", "24h", "exec", "cli:quar", "--", "sh", "-c", "echo yes > \"$1\"", "sh", marker);
    cr_assert_eq(r.code, 69, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "quarantined"), "-v says why: %s", r.err);
    cr_assert_str_eq(slurp("ran"), "", "the command must not run without the lock");
    RUN(&r, g_nodes, "--max-ttl", "24h", "--no-quarantine", "exec", "cli:quar", "--", "true");
    cr_assert_eq(r.code, 0, "--no-quarantine: %s", r.err);
}

Test(cli, safety_option_values_are_checked) {
    static const struct {
        const char *opt, *val;
        int code;
        const char *names[2];
    } cases[] = {
        {"--clock-jump", "soon", 64, {"--clock-jump", "'soon'"}},
        {"--clock-jump", "-1ms", 64, {"--clock-jump", "'-1ms'"}},
        {"--clock-check", "1.5ms", 64, {"--clock-check", "'1.5ms'"}},
        {"--max-ttl", "10q", 64, {"--max-ttl", "'10q'"}},
        {"--clock-jump", "", 64, {"--clock-jump", "empty"}},
        /* parsed, but outside what the library accepts: a configuration error */
        {"--clock-jump", "61m", 78, {"clock_jump_ms=3660000", "0..3600000"}},
        {"--clock-jump", "1h0m1s", 78, {"clock_jump_ms=3601000", "0..3600000"}},
        {"--clock-jump", "2h", 78, {"clock_jump_ms=7200000", "0..3600000"}},
        {"--clock-jump", "1h", 0, {"", ""}},
        {"--max-ttl", "600h", 64, {"--max-ttl", "'600h' is too large"}},
        {"--clock-check", "1m1h", 64, {"--clock-check", "'1m1h'"}},
        {"--clock-check", "2m", 0, {"", ""}},
        {"--clock-jump", "0", 0, {"", ""}},
        {"--clock-check", "0", 0, {"", ""}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_t r;
        char *ttl = g_slow ? "10s" : "1s";
        RUN(&r, g_nodes, (char *)cases[i].opt, (char *)cases[i].val, "--max-ttl", ttl, "--no-quarantine", "exec",
            "--ttl", ttl, "cli:opts", "--", "true");
        cr_assert_eq(r.code, cases[i].code, "case %zu (%s %s): exit %d, stderr: %s", i, cases[i].opt, cases[i].val,
                     r.code, r.err);
        for (int k = 0; k < 2; k++)
            cr_assert(strstr(r.err, cases[i].names[k]), "case %zu: stderr does not name %s: %s", i, cases[i].names[k],
                      r.err);
        if (cases[i].code) cr_assert_eq(r.out_len, 0, "case %zu", i);
    }
    /* a value-less option at the end */
    run_t r;
    RUN(&r, g_nodes, "ping", "--clock-check");
    cr_assert_eq(r.code, 64, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "--clock-check needs a value"), "stderr: %s", r.err);
}

/* ------------------------------------------------------------ durations */

/* Fails unless key's PTTL is in (want - slack, want] on a majority of the
 * nodes and on every node that has the key. The tool exits once a majority
 * granted: a node that answers late may never get the SET, e.g. one that a
 * previous test restarted, whose EVALSHA comes back NOSCRIPT after the
 * tool is gone (seen with another test running beside this one). */
static void expect_pttl(const char *key, long long want, long long slack) {
    int have = 0;
    for (int i = 0; i < C.n; i++) {
        long long pttl = tc_pttl(&C, i, key);
        if (pttl == -2) continue;
        have++;
        cr_expect(pttl > want - slack && pttl <= want, "%s on node %d: PTTL %lld, expected about %lld", key, i, pttl,
                  want);
    }
    cr_expect_geq(have, C.n / 2 + 1, "%s is on %d of %d nodes", key, have, C.n);
}

/* Runs `acquire --ttl TTL RESOURCE` and returns its token (static buffer). */
static const char *acquire_token(const char *ttl, const char *resource) {
    static run_t r;
    RUN(&r, g_nodes, "acquire", "--ttl", (char *)ttl, (char *)resource);
    cr_assert_eq(r.code, 0, "acquire --ttl %s: exit %d, stderr: %s", ttl, r.code, r.err);
    cr_assert(r.out_len == 41 && is_hex40(r.out, 40), "acquire printed '%s'", r.out);
    r.out[40] = '\0';
    return r.out;
}

/* Durations in hours and compounds reach the nodes as the ms they mean:
 * acquire --ttl 2h, --ttl 1h30m, extend --ttl 2m30s, exec --ttl 1h0m5s. */
Test(cli, durations_in_hours_and_compounds_reach_the_nodes) {
    long long slack = (long long)scaled(5000);
    char tok[41];
    snprintf(tok, sizeof tok, "%s", acquire_token("2h", "cli:dur2h"));
    expect_pttl("cli:dur2h", 7200000, slack);
    run_t r;
    RUN(&r, g_nodes, "release", "cli:dur2h", tok);
    cr_assert_eq(r.code, 0, "release: %s", r.err);

    snprintf(tok, sizeof tok, "%s", acquire_token("1h30m", "cli:dur90m"));
    expect_pttl("cli:dur90m", 5400000, slack);
    RUN(&r, g_nodes, "extend", "--ttl", "2m30s", "cli:dur90m", tok);
    cr_assert_eq(r.code, 0, "extend --ttl 2m30s: %s", r.err);
    expect_pttl("cli:dur90m", 150000, slack);
    RUN(&r, g_nodes, "release", "cli:dur90m", tok);
    cr_assert_eq(r.code, 0, "release: %s", r.err);

    RUN(&r, g_nodes, "exec", "--ttl", "1h0m5s", "cli:dur1h5s", "--", "sh", "-c", "sleep 0.2");
    cr_assert_eq(r.code, 0, "exec --ttl 1h0m5s: %s", r.err);
    /* the lock was held while the command ran and is gone after */
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_pttl(&C, i, "cli:dur1h5s"), -2, "node %d", i);
}

/* The step commands refuse a bad duration with their bad-input code (2),
 * exec with the usage code (64); both name the value and lock nothing. */
Test(cli, bad_durations_are_refused_with_the_usage_code) {
    static const char *const bad[] = {"30m1h", "1h1h", "1h30", "2w", "1.5ms", "-1h", "597h", "1h:30m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_t r;
        RUN(&r, g_nodes, "acquire", "--ttl", (char *)bad[i], "cli:durbad");
        cr_expect_eq(r.code, 2, "acquire --ttl %s: exit %d, stderr: %s", bad[i], r.code, r.err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        cr_expect(strstr(r.err, quoted) && strstr(r.err, "--ttl"), "acquire --ttl %s: %s", bad[i], r.err);
        cr_expect_eq(r.out_len, 0, "acquire --ttl %s printed '%s'", bad[i], r.out);
        RUN(&r, g_nodes, "exec", "--wait", (char *)bad[i], "cli:durbad", "--", "true");
        cr_expect_eq(r.code, 64, "exec --wait %s: exit %d, stderr: %s", bad[i], r.code, r.err);
        cr_expect(strstr(r.err, quoted) && strstr(r.err, "--wait"), "exec --wait %s: %s", bad[i], r.err);
    }
    for (int i = 0; i < C.n; i++) cr_assert_eq(tc_pttl(&C, i, "cli:durbad"), -2, "node %d", i);
}
