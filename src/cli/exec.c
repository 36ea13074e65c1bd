/* exec.c -- `redlock exec`: lock a resource, run a command while the
 * watchdog extends the lock, release it, exit with the command's status.
 *
 * Threads and signals: the library's watchdog thread calls on_lost; it
 * only stores atomics, calls kill(2) and writes one line to stderr. SIGINT,
 * SIGTERM and SIGHUP are blocked before the watchdog thread starts (it
 * inherits the mask), so they reach the main thread only, whose handler
 * forwards them to the command with kill(2). The command is reaped only
 * after forwarding and the watchdog are switched off, so no signal can
 * reach a recycled pid. The command is started with fork + execve, its
 * exec errors reported back through a pipe (start_command). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

#define DEFAULT_TTL_MS 10000

/* Signals the tool forwards to the command. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
#define N_FORWARDED (sizeof forwarded / sizeof forwarded[0])

/* The command's pid while signals may be forwarded to it, else 0. */
static volatile sig_atomic_t g_child;

typedef struct exec_state {
    const cli_t *cli;
    const char *resource;
    int lost_sig;        /* SIGTERM, SIGKILL, or 0 (ignore) */
    _Atomic pid_t child; /* the command while the watchdog may signal it */
    atomic_int lost;
    atomic_int lost_reason;
    atomic_int held_out;  /* the lock ended at --max-hold */
    int64_t max_hold_ms;  /* --max-hold; 0: none */
    int64_t ttl_ms;       /* --ttl */
    int64_t locked_at_ms; /* monotonic, when the acquire returned */
    const char *max_hold_s;
} exec_state_t;

/* The monotonic clock in ms. */
static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGINT/SIGTERM/SIGHUP handler: passes the signal on to the command. A
 * signal the kernel sent (a terminal's ^C or hangup) went to the whole
 * foreground process group, the command included, so it is not sent twice. */
static void forward_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    int saved = errno;
    pid_t p = (pid_t)g_child;
    if (p > 0 && !(si && si->si_code > 0)) kill(p, sig);
    errno = saved;
}

/* on_lost, from the watchdog thread. A lock that expired once the
 * watchdog no longer extended it for --max-hold (within a TTL of it) ended
 * at the cap, not lost. */
static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    exec_state_t *st = arg;
    (void)lock;
    int capped = st->max_hold_ms && reason == REDLOCK_ERR_EXPIRED &&
                 mono_ms() - st->locked_at_ms >= st->max_hold_ms - st->ttl_ms;
    atomic_store(&st->lost_reason, reason);
    atomic_store(&st->held_out, capped);
    atomic_store(&st->lost, 1);
    pid_t p = atomic_load(&st->child);
    if (p > 0 && st->lost_sig) kill(p, st->lost_sig);
    const char *then = st->lost_sig == SIGTERM   ? "sending it SIGTERM"
                       : st->lost_sig == SIGKILL ? "sending it SIGKILL"
                                                 : "letting it finish (--on-lost ignore)";
    if (capped)
        fprintf(stderr, "%s: lock on '%s' ended at --max-hold %s while the command runs; %s\n", st->cli->prog,
                st->resource, st->max_hold_s, then);
    else
        fprintf(stderr, "%s: lock on '%s' lost while the command runs: %s; %s\n", st->cli->prog, st->resource,
                redlock_strerror(reason), then);
}

/* The variables the tool sets for the command; inherited values of all of
 * them are removed, so the command never sees a stale one (REDLOCK_FENCE
 * without --fencing, for instance). */
static const char *const child_vars[] = {"REDLOCK_RESOURCE", "REDLOCK_TOKEN", "REDLOCK_FENCE", "REDLOCK_SLOT"};
#define N_CHILD_VARS (sizeof child_vars / sizeof child_vars[0])

/* 1 when the environment entry e sets one of child_vars. */
static int is_child_var(const char *e) {
    for (size_t v = 0; v < N_CHILD_VARS; v++) {
        size_t len = strlen(child_vars[v]);
        if (!strncmp(e, child_vars[v], len) && e[len] == '=') return 1;
    }
    return 0;
}

/* Makes "name=value" in a new string, or NULL. */
static char *env_entry(const char *name, const char *value) {
    size_t nl = strlen(name), vl = strlen(value);
    char *s = malloc(nl + 1 + vl + 1);
    if (!s) return NULL;
    memcpy(s, name, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, value, vl + 1);
    return s;
}

/* environ without child_vars, plus REDLOCK_RESOURCE, REDLOCK_TOKEN and,
 * when fence is not 0, REDLOCK_FENCE (decimal), and for a permit (slot >=
 * 0) REDLOCK_SLOT (decimal, 0-based). The new strings are the last *n_own
 * entries (freed by free_env). */
static char **child_env(const char *resource, const char *token, uint64_t fence, int slot, size_t *n_out,
                        size_t *n_own) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **env = calloc(n + N_CHILD_VARS + 1, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_child_var(environ[i])) env[k++] = environ[i];
    char fence_s[24], slot_s[16];
    snprintf(fence_s, sizeof fence_s, "%llu", (unsigned long long)fence);
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    size_t first = k;
    int ok = (env[k++] = env_entry("REDLOCK_RESOURCE", resource)) != NULL;
    ok = ok && (env[k++] = env_entry("REDLOCK_TOKEN", token)) != NULL;
    if (ok && fence) ok = (env[k++] = env_entry("REDLOCK_FENCE", fence_s)) != NULL;
    if (ok && slot >= 0) ok = (env[k++] = env_entry("REDLOCK_SLOT", slot_s)) != NULL;
    if (!ok) {
        for (size_t i = first; i < k; i++) free(env[i]);
        free(env);
        return NULL;
    }
    env[k] = NULL;
    *n_out = k;
    *n_own = k - first;
    return env;
}

/* Frees what child_env made (NULL-safe). */
static void free_env(char **env, size_t n, size_t n_own) {
    if (!env) return;
    for (size_t i = n - n_own; i < n; i++) free(env[i]);
    free(env);
}

/* Words for a wait status. */
static void describe_status(int status, char *buf, size_t n) {
    if (WIFEXITED(status))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, n, "ended with wait status 0x%x", (unsigned)status);
}

/* Installs forward_signal for the forwarded signals the tool was not
 * started with ignored (as shells do, an ignored signal stays ignored). */
static void install_handlers(void) {
    for (size_t k = 0; k < N_FORWARDED; k++) {
        struct sigaction old;
        if (sigaction(forwarded[k], NULL, &old) < 0 || old.sa_handler == SIG_IGN) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = forward_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(forwarded[k], &sa, NULL);
    }
}

/* Parses --on-lost. Returns the signal (0 for ignore) or -1. */
static int parse_on_lost(const char *v) {
    if (!strcmp(v, "term")) return SIGTERM;
    if (!strcmp(v, "kill")) return SIGKILL;
    if (!strcmp(v, "ignore")) return 0;
    return -1;
}

/* The paths to try for cmd, as execvp would: cmd itself if it holds a
 * slash, else cmd in each directory of PATH (an empty entry is "."). Made
 * before fork, since the child of a threaded process may not allocate. */
static char **exec_candidates(const char *cmd, size_t *n_out) {
    *n_out = 0;
    if (strchr(cmd, '/')) {
        char **v = calloc(2, sizeof *v);
        if (!v || !(v[0] = malloc(strlen(cmd) + 1))) {
            free(v);
            return NULL;
        }
        strcpy(v[0], cmd);
        *n_out = 1;
        return v;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    size_t n = 1;
    for (const char *p = path; *p; p++) n += *p == ':';
    char **v = calloc(n + 1, sizeof *v);
    if (!v) return NULL;
    size_t k = 0, clen = strlen(cmd);
    for (const char *p = path;; p++) {
        const char *e = strchr(p, ':');
        size_t dlen = e ? (size_t)(e - p) : strlen(p);
        const char *dir = dlen ? p : ".";
        if (!dlen) dlen = 1;
        char *full = malloc(dlen + 1 + clen + 1);
        if (!full) break;
        memcpy(full, dir, dlen);
        full[dlen] = '/';
        memcpy(full + dlen + 1, cmd, clen + 1);
        v[k++] = full;
        if (!e) break;
        p = e;
    }
    *n_out = k;
    return v;
}

static void free_candidates(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

/* Starts cmd with env: fork, then in the child only async-signal-safe
 * calls (the parent has threads): default handlers for the forwarded
 * signals, the original signal mask, execve on each candidate path. An
 * exec failure's errno comes back through a close-on-exec pipe, so the
 * caller can tell "not found" (127) from "cannot execute" (126) whatever
 * the libc or a tool like valgrind does with vfork. Returns 0 and sets
 * *pid, or an errno. */
/* The candidates, reachable from a global while the child runs (so leak
 * checkers do not count the child's copy as lost; volatile: never read). */
static char **volatile g_cand;

static int start_command(char **cmd, char **env, const sigset_t *orig_mask, pid_t *pid) {
    if (!cmd[0][0]) return ENOENT;
    size_t n_cand = 0;
    char **cand = g_cand = exec_candidates(cmd[0], &n_cand);
    if (!cand || n_cand == 0) {
        free_candidates(cand, n_cand);
        return ENOMEM;
    }
    int pfd[2];
    if (pipe(pfd) < 0) {
        int e = errno;
        free_candidates(cand, n_cand);
        return e;
    }
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    pid_t p = fork();
    if (p == 0) {
        close(pfd[0]);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        for (size_t k = 0; k < N_FORWARDED; k++) {
            struct sigaction cur;
            if (sigaction(forwarded[k], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
                sigaction(forwarded[k], &dfl, NULL);
        }
        sigprocmask(SIG_SETMASK, orig_mask, NULL);
        int err = ENOENT, denied = 0;
        for (size_t i = 0; i < n_cand; i++) {
            execve(cand[i], cmd, env);
            err = errno;
            if (err == EACCES)
                denied = 1;
            else if (err != ENOENT && err != ENOTDIR)
                break;
        }
        if (denied && (err == ENOENT || err == ENOTDIR)) err = EACCES; /* as execvp */
        ssize_t w = write(pfd[1], &err, sizeof err);
        (void)w;
        _exit(CLI_EX_NOTFOUND);
    }
    int fork_err = p < 0 ? errno : 0;
    close(pfd[1]);
    free_candidates(cand, n_cand);
    g_cand = NULL;
    if (p < 0) {
        close(pfd[0]);
        return fork_err;
    }
    int err = 0;
    ssize_t got;
    while ((got = read(pfd[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    close(pfd[0]);
    if (got == (ssize_t)sizeof err) { /* exec failed: reap the child */
        while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
        }
        return err ? err : ENOEXEC;
    }
    *pid = p;
    return 0;
}

/* Runs the command (lock held and auto-extended): starts it, waits for it,
 * and returns its exit code or the tool's. */
static int run_command(exec_state_t *st, char **cmd, char **env, const sigset_t *orig_mask, const sigset_t *fwd,
                       redlock_t *rl, redlock_lock_t *lock) {
    const cli_t *c = st->cli;
    pid_t pid = 0;
    int err = start_command(cmd, env, orig_mask, &pid);
    if (err != 0) {
        cli_error(c, "cannot run '%s': %s", cmd[0], strerror(err));
        if (err == ENOENT || err == ENOTDIR) return CLI_EX_NOTFOUND;
        if (err == ENOMEM || err == EAGAIN) return CLI_EX_OSERR;
        return CLI_EX_NOEXEC;
    }
    g_child = (sig_atomic_t)pid;
    atomic_store(&st->child, pid);
    if (atomic_load(&st->lost) && st->lost_sig) kill(pid, st->lost_sig); /* lost before the spawn */
    if (c->verbose) cli_error(c, "running '%s' (pid %ld)", cmd[0], (long)pid);

    /* Wait without reaping, with the forwarded signals deliverable. */
    pthread_sigmask(SIG_SETMASK, orig_mask, NULL);
    siginfo_t si;
    int werr = 0;
    for (;;) {
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0) break;
        if (errno != EINTR) {
            werr = errno;
            break;
        }
    }
    pthread_sigmask(SIG_BLOCK, fwd, NULL);
    g_child = 0;
    redlock_autoextend_stop(rl, lock); /* waits for an on_lost in progress */
    atomic_store(&st->child, 0);

    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (w != pid) {
        cli_error(c, "waiting for the command failed: %s", strerror(werr ? werr : errno));
        return CLI_EX_OSERR;
    }
    char how[64];
    describe_status(status, how, sizeof how);
    if (c->verbose) cli_error(c, "'%s' %s", cmd[0], how);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return CLI_EX_SOFTWARE;
}

/* exec's command line. */
typedef struct exec_args {
    int64_t ttl, wait, max_hold;
    const char *max_hold_s; /* --max-hold as given, for messages */
    int lost_sig, cmd_at, ttl_given, fencing;
    const char *resource;
    const char *limit_s; /* --limit as given, for messages */
    cli_kind_t kind;
} exec_args_t;

/* Tries exec's own options at argv[*i]. Returns 1 if consumed, 0 if not
 * one of them, or CLI_EX_USAGE after printing why. */
static int exec_option(cli_t *c, int argc, char **argv, int *i, exec_args_t *a) {
    const char *v = NULL;
    int r;
    if ((r = cli_opt_value(c, argc, argv, i, "--ttl", &v)) != 0) {
        if (r < 0 || cli_ttl_value(c, v, &a->ttl)) return CLI_EX_USAGE;
        return a->ttl_given = 1;
    }
    if (cli_opt_flag(argv, i, "--fencing")) return a->fencing = 1;
    if (cli_opt_flag(argv, i, "--shared")) return a->kind.shared = 1;
    if ((r = cli_opt_value(c, argc, argv, i, "--limit", &v)) != 0) {
        a->limit_s = v;
        return r < 0 || cli_limit_value(c, v, &a->kind.limit) ? CLI_EX_USAGE : 1;
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--wait", &v)) != 0)
        return r < 0 || cli_wait_value(c, v, &a->wait) ? CLI_EX_USAGE : 1;
    if ((r = cli_opt_value(c, argc, argv, i, "--max-hold", &v)) != 0) {
        a->max_hold_s = v;
        return r < 0 || cli_positive_duration(c, "--max-hold", v, &a->max_hold) ? CLI_EX_USAGE : 1;
    }
    if ((r = cli_opt_value(c, argc, argv, i, "--on-lost", &v)) != 0) {
        if (r < 0) return CLI_EX_USAGE;
        if ((a->lost_sig = parse_on_lost(v)) < 0)
            return cli_usage_error(c, "invalid value for --on-lost: '%s' (expected term, kill or ignore)", v);
        return 1;
    }
    return 0;
}

/* Checks the options that exclude each other and what the command line
 * lacks. Returns 0, or CLI_EX_USAGE after printing why. */
static int exec_check(const cli_t *c, const exec_args_t *a, int argc) {
    if (a->kind.limit && a->kind.shared)
        return cli_usage_error(c,
                               "exec: --limit %s and --shared cannot be used together (a permit of a semaphore, "
                               "or a reader's lock: one or the other)",
                               a->limit_s);
    if (a->kind.shared && a->fencing)
        return cli_usage_error(c, "exec: --fencing and --shared cannot be used together (a reader's lock has no "
                                  "fencing token)");
    if (!a->resource) return cli_usage_error(c, "exec: missing RESOURCE");
    if (a->cmd_at < 0) return cli_usage_error(c, "exec: missing '--' before the command");
    if (a->cmd_at >= argc) return cli_usage_error(c, "exec: missing command after '--'");
    return 0;
}

/* Parses exec's arguments into a. Returns -1 to go on, else the exit
 * code to return at once (CLI_EX_OK after --help, CLI_EX_USAGE). */
static int exec_parse(cli_t *c, int argc, char **argv, exec_args_t *a) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int r;
        if (!strcmp(s, "--")) {
            a->cmd_at = i + 1;
            break;
        }
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            cli_print_usage(stdout, c->prog);
            return CLI_EX_OK;
        }
        if ((r = exec_option(c, argc, argv, &i, a)) != 0 || (r = cli_global_option(c, argc, argv, &i)) != 0) {
            if (r != 1) return CLI_EX_USAGE;
            continue;
        }
        if (s[0] == '-' && s[1] != '\0') return cli_usage_error(c, "exec: unknown option '%s'", s);
        if (a->resource)
            return cli_usage_error(c, "exec: unexpected argument '%s': put '--' between RESOURCE and the command", s);
        a->resource = s;
    }
    if (exec_check(c, a, argc)) return CLI_EX_USAGE;
    if (a->wait != 0) c->opt.retry_count = UINT32_MAX; /* the wait bounds the retries */
    if (cli_fit_ttl(c, &a->ttl, a->ttl_given)) return CLI_EX_USAGE;
    if (a->max_hold && a->max_hold < a->ttl)
        return cli_usage_error(c,
                               "exec: --max-hold %s is shorter than the lock's TTL (%lld ms): give a longer --max-hold "
                               "or a shorter --ttl",
                               a->max_hold_s, (long long)a->ttl);
    c->opt.fencing = a->fencing;
    return -1;
}

/* Words for the lock exec holds, for -v: "", " (permit: slot 1 of 2)" or
 * " (shared)". */
static void describe_kind(const exec_args_t *a, const redlock_lock_t *lock, char *buf, size_t n) {
    if (a->kind.limit)
        snprintf(buf, n, " (permit: slot %d of %u)", redlock_lock_slot(lock), a->kind.limit);
    else if (a->kind.shared)
        snprintf(buf, n, " (shared)");
    else
        buf[0] = '\0';
}

/* Locks a->resource on rl for exec, saying why when it cannot (with -v,
 * the report either way). Returns -1 with *lock and *fence set, else the
 * exit code to end with (the caller frees rl). */
static int exec_lock(cli_t *c, redlock_t *rl, exec_args_t *a, redlock_lock_t **lock, uint64_t *fence) {
    static redlock_report_t rep; /* about 22 KiB: kept off the stack */
    int sig_exit = 0;
    int arc = cli_acquire_interruptible(c, rl, a->resource, &a->kind, (uint32_t)a->ttl, a->wait, lock, &rep, &sig_exit);
    if (sig_exit) return sig_exit;
    if (arc != REDLOCK_OK) {
        cli_error(c, "cannot lock '%s': %s", a->resource, rep.message[0] ? rep.message : redlock_strerror(arc));
        if (c->verbose && rep.n_nodes) {
            fprintf(stderr, "%s: %u attempt(s); the last one, node by node:\n", c->prog, rep.attempts);
            cli_print_report(stderr, &rep);
        }
        return cli_exit_code(arc);
    }
    *fence = redlock_lock_fence(*lock);
    if (a->fencing && *fence == 0) { /* not expected: a fenced acquire that succeeded has a token */
        cli_error(c, "locked '%s' but got no fencing token; not running the command", a->resource);
        redlock_release(rl, *lock);
        return CLI_EX_SOFTWARE;
    }
    if (c->verbose) {
        char pfx[CLI_TOKEN_PREFIX + 1], fence_s[40] = "", kind_s[48];
        cli_prefix(pfx, redlock_lock_token(*lock), strlen(redlock_lock_token(*lock)));
        if (a->fencing) snprintf(fence_s, sizeof fence_s, ", fence %llu", (unsigned long long)*fence);
        describe_kind(a, *lock, kind_s, sizeof kind_s);
        cli_error(c,
                  "locked '%s'%s (token %s...%s) on %zu of %zu nodes (quorum %zu) after %u attempt(s); "
                  "valid for %lld ms",
                  a->resource, kind_s, pfx, fence_s, rep.yes, rep.n_nodes, rep.quorum, rep.attempts,
                  (long long)rep.validity_ms);
        cli_print_report(stderr, &rep);
    }
    return -1;
}

/* Runs the command of argv (from a->cmd_at) while lock is held and
 * auto-extended, with the forwarded signals blocked before the watchdog
 * thread exists (they stay blocked after). Sets *wrc to the auto-extension's
 * start. Returns the command's exit status, or the tool's when it could
 * not run it. */
static int exec_run(cli_t *c, exec_state_t *st, redlock_t *rl, redlock_lock_t *lock, uint64_t fence,
                    const exec_args_t *a, char **argv, int *wrc) {
    sigset_t fwd, orig;
    sigemptyset(&fwd);
    for (size_t k = 0; k < N_FORWARDED; k++) sigaddset(&fwd, forwarded[k]);
    pthread_sigmask(SIG_BLOCK, &fwd, &orig);
    install_handlers();
    size_t n_env = 0, n_own = 0;
    char **env = NULL;
    int code;
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.max_hold_ms = (uint64_t)a->max_hold;
    *wrc = redlock_autoextend(rl, lock, &ao, on_lost, st);
    if (*wrc != REDLOCK_OK) {
        cli_error(c, "cannot auto-extend the lock on '%s': %s", a->resource, redlock_strerror(*wrc));
        code = *wrc == REDLOCK_ERR_NOT_HELD ? CLI_EX_TEMPFAIL : cli_exit_code(*wrc);
    } else if (!(env = child_env(a->resource, redlock_lock_token(lock), fence, redlock_lock_slot(lock), &n_env,
                                 &n_own))) {
        cli_error(c, "out of memory");
        code = CLI_EX_OSERR;
    } else {
        code = run_command(st, argv + a->cmd_at, env, &orig, &fwd, rl, lock);
    }
    redlock_autoextend_stop(rl, lock);
    free_env(env, n_env, n_own);
    return code;
}

/* Releases lock once the command ended with code, saying what went wrong
 * (with -v, the release's report). Returns code, CLI_EX_MAXHOLD when the
 * lock ended at --max-hold, or CLI_EX_LOST when it was lost while the
 * command ran. */
static int exec_release(cli_t *c, exec_state_t *st, redlock_t *rl, redlock_lock_t *lock, const exec_args_t *a, int wrc,
                        int code) {
    int was_lost = atomic_load(&st->lost) || redlock_lock_lost(lock);
    static redlock_report_t rrep;
    int rrc = redlock_release_ex(rl, lock, &rrep);
    if (rrc == REDLOCK_ERR_NOT_HELD && !was_lost && wrc == REDLOCK_OK) {
        cli_error(c,
                  "lock on '%s' was no longer held when the command ended (expired or taken over): "
                  "the command may not have run alone",
                  a->resource);
        was_lost = 1;
    } else if (rrc != REDLOCK_OK && rrc != REDLOCK_ERR_NOT_HELD) {
        cli_error(c, "release of '%s' not confirmed: %s; the lock expires within %lld ms", a->resource,
                  rrep.message[0] ? rrep.message : redlock_strerror(rrc), (long long)a->ttl);
    }
    if (c->verbose) {
        cli_error(c, "release of '%s': %s (%zu of %zu nodes deleted it)", a->resource, redlock_strerror(rrc), rrep.yes,
                  rrep.n_nodes);
        cli_print_report(stderr, &rrep);
    }
    if (!was_lost || wrc != REDLOCK_OK) return code;
    if (atomic_load(&st->held_out)) {
        cli_error(c,
                  "exiting with status %d: the lock on '%s' ended at --max-hold %s while the command ran (its own "
                  "status: %d)",
                  CLI_EX_MAXHOLD, a->resource, a->max_hold_s, code);
        return CLI_EX_MAXHOLD;
    }
    cli_error(c, "exiting with status %d: the lock on '%s' was lost while the command ran (its own status: %d)",
              CLI_EX_LOST, a->resource, code);
    return CLI_EX_LOST;
}

int cli_cmd_exec(cli_t *c, int argc, char **argv) {
    exec_args_t a = {.ttl = DEFAULT_TTL_MS, .lost_sig = SIGTERM, .cmd_at = -1};
    int stop = exec_parse(c, argc, argv, &a);
    if (stop >= 0) return stop;
    redlock_t *rl = NULL;
    int rc = cli_open(c, &rl);
    if (rc) return rc;
    redlock_lock_t *lock = NULL;
    uint64_t fence = 0;
    int code = exec_lock(c, rl, &a, &lock, &fence);
    if (code < 0) {
        exec_state_t st;
        memset(&st, 0, sizeof st);
        st.cli = c;
        st.resource = a.resource;
        st.lost_sig = a.lost_sig;
        st.max_hold_ms = a.max_hold;
        st.max_hold_s = a.max_hold_s;
        st.ttl_ms = a.ttl;
        st.locked_at_ms = mono_ms();
        atomic_init(&st.held_out, 0);
        atomic_init(&st.child, 0);
        atomic_init(&st.lost, 0);
        atomic_init(&st.lost_reason, 0);
        int wrc;
        code = exec_run(c, &st, rl, lock, fence, &a, argv, &wrc);
        code = exec_release(c, &st, rl, lock, &a, wrc, code);
    }
    redlock_free(rl);
    /* The forwarded signals stay blocked: one that arrives now (the command
     * is gone) must not kill the tool before it reports the status. */
    return code;
}
