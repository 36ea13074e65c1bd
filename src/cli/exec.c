/* exec.c -- `redlock exec`: lock a resource, run a command while the
 * watchdog extends the lock, release it, exit with the command's status.
 *
 * Threads and signals: the library's watchdog thread calls on_lost; it
 * only stores atomics, calls kill(2) and writes one line to stderr. SIGINT,
 * SIGTERM and SIGHUP are blocked before the watchdog thread starts (it
 * inherits the mask), so they reach the main thread only, whose handler
 * forwards them to the command with kill(2). The command is reaped only
 * after forwarding and the watchdog are switched off, so no signal can
 * reach a recycled pid. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
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
    int lost_sig;             /* SIGTERM, SIGKILL, or 0 (ignore) */
    _Atomic pid_t child;      /* the command while the watchdog may signal it */
    atomic_int lost;
    atomic_int lost_reason;
} exec_state_t;

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

/* on_lost, from the watchdog thread. */
static void on_lost(redlock_lock_t *lock, int reason, void *arg) {
    exec_state_t *st = arg;
    (void)lock;
    atomic_store(&st->lost_reason, reason);
    atomic_store(&st->lost, 1);
    pid_t p = atomic_load(&st->child);
    if (p > 0 && st->lost_sig) kill(p, st->lost_sig);
    fprintf(stderr, "%s: lock on '%s' lost while the command runs: %s; %s\n", st->cli->prog, st->resource,
            redlock_strerror(reason),
            st->lost_sig == SIGTERM  ? "sending it SIGTERM"
            : st->lost_sig == SIGKILL ? "sending it SIGKILL"
                                      : "letting it finish (--on-lost ignore)");
}

/* environ without REDLOCK_RESOURCE / REDLOCK_TOKEN, plus ours. The two new
 * strings are env[n-2] and env[n-1] (freed by free_env). */
static char **child_env(const char *resource, const char *token, size_t *n_out) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(environ[i], "REDLOCK_RESOURCE=", 17) || !strncmp(environ[i], "REDLOCK_TOKEN=", 14)) continue;
        env[k++] = environ[i];
    }
    size_t rl = strlen(resource), tl = strlen(token);
    char *r = malloc(17 + rl + 1), *t = malloc(14 + tl + 1);
    if (!r || !t) {
        free(r);
        free(t);
        free(env);
        return NULL;
    }
    memcpy(r, "REDLOCK_RESOURCE=", 17);
    memcpy(r + 17, resource, rl + 1);
    memcpy(t, "REDLOCK_TOKEN=", 14);
    memcpy(t + 14, token, tl + 1);
    env[k++] = r;
    env[k++] = t;
    env[k] = NULL;
    *n_out = k;
    return env;
}

static void free_env(char **env, size_t n) {
    if (!env) return;
    free(env[n - 2]);
    free(env[n - 1]);
    free(env);
}

/* Words for a wait status. */
static void describe_status(int status, char *buf, size_t n) {
    if (WIFEXITED(status)) snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
    else snprintf(buf, n, "ended with wait status 0x%x", (unsigned)status);
}

/* Installs forward_signal for the forwarded signals the tool was not
 * started with ignored (as shells do, an ignored signal stays ignored). */
static void install_handlers(struct sigaction *saved, int *installed) {
    for (size_t k = 0; k < N_FORWARDED; k++) {
        installed[k] = 0;
        if (sigaction(forwarded[k], NULL, &saved[k]) < 0 || saved[k].sa_handler == SIG_IGN) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = forward_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        installed[k] = sigaction(forwarded[k], &sa, NULL) == 0;
    }
}

/* Parses --on-lost. Returns the signal (0 for ignore) or -1. */
static int parse_on_lost(const char *v) {
    if (!strcmp(v, "term")) return SIGTERM;
    if (!strcmp(v, "kill")) return SIGKILL;
    if (!strcmp(v, "ignore")) return 0;
    return -1;
}

/* Runs the command (lock held and auto-extended): spawns it, waits for it,
 * and returns its exit code or the tool's. */
static int run_command(exec_state_t *st, char **cmd, char **env, const sigset_t *orig_mask, const sigset_t *fwd,
                       redlock_t *rl, redlock_lock_t *lock) {
    const cli_t *c = st->cli;
    posix_spawnattr_t attr;
    if (posix_spawnattr_init(&attr) != 0) {
        cli_error(c, "posix_spawnattr_init failed");
        return CLI_EX_OSERR;
    }
    posix_spawnattr_setsigmask(&attr, orig_mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    int err = posix_spawnp(&pid, cmd[0], NULL, &attr, cmd, env);
    posix_spawnattr_destroy(&attr);
    if (err != 0) {
        cli_error(c, "cannot run '%s': %s", cmd[0], strerror(err));
        if (err == ENOENT) return CLI_EX_NOTFOUND;
        if (err == ENOMEM || err == EAGAIN || err == E2BIG) return CLI_EX_OSERR;
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

int cli_cmd_exec(cli_t *c, int argc, char **argv) {
    int64_t ttl = DEFAULT_TTL_MS, wait = 0;
    int lost_sig = SIGTERM, cmd_at = -1;
    const char *resource = NULL;
    char err[200];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int r;
        if (!strcmp(a, "--")) {
            cmd_at = i + 1;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_print_usage(stdout, c->prog);
            return CLI_EX_OK;
        }
        if ((r = cli_opt_value(c, argc, argv, &i, "--ttl", &v)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
            if (cli_parse_duration(v, &ttl, err, sizeof err) < 0)
                return cli_usage_error(c, "invalid value for --ttl: %s", err);
            if (ttl == 0) return cli_usage_error(c, "invalid value for --ttl: '%s' must be more than 0", v);
            continue;
        }
        if ((r = cli_opt_value(c, argc, argv, &i, "--wait", &v)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
            if (!strcmp(v, "forever")) wait = -1;
            else if (cli_parse_duration(v, &wait, err, sizeof err) < 0)
                return cli_usage_error(c, "invalid value for --wait: %s (or 'forever')", err);
            continue;
        }
        if ((r = cli_opt_value(c, argc, argv, &i, "--on-lost", &v)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
            if ((lost_sig = parse_on_lost(v)) < 0)
                return cli_usage_error(c, "invalid value for --on-lost: '%s' (expected term, kill or ignore)", v);
            continue;
        }
        if ((r = cli_global_option(c, argc, argv, &i)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') return cli_usage_error(c, "exec: unknown option '%s'", a);
        if (resource)
            return cli_usage_error(c, "exec: unexpected argument '%s': put '--' between RESOURCE and the command", a);
        resource = a;
    }
    if (!resource) return cli_usage_error(c, "exec: missing RESOURCE");
    if (cmd_at < 0) return cli_usage_error(c, "exec: missing '--' before the command");
    if (cmd_at >= argc) return cli_usage_error(c, "exec: missing command after '--'");
    if (wait != 0) c->opt.retry_count = UINT32_MAX; /* the wait bounds the retries */

    redlock_t *rl = NULL;
    int rc = cli_open(c, &rl);
    if (rc) return rc;

    static redlock_report_t rep; /* ~10 KB: kept off the stack */
    redlock_lock_t *lock = NULL;
    int arc = redlock_acquire_ex(rl, resource, (uint32_t)ttl, wait, &lock, &rep);
    if (arc != REDLOCK_OK) {
        cli_error(c, "cannot lock '%s': %s", resource, rep.message[0] ? rep.message : redlock_strerror(arc));
        if (c->verbose && rep.n_nodes) {
            fprintf(stderr, "%s: %u attempt(s); the last one, node by node:\n", c->prog, rep.attempts);
            cli_print_report(stderr, &rep);
        }
        redlock_free(rl);
        return cli_exit_code(arc);
    }
    if (c->verbose) {
        char pfx[CLI_TOKEN_PREFIX + 1];
        cli_prefix(pfx, redlock_lock_token(lock), strlen(redlock_lock_token(lock)));
        cli_error(c, "locked '%s' (token %s...) on %zu of %zu nodes (quorum %zu) after %u attempt(s); valid for %lld ms",
                  resource, pfx, rep.yes, rep.n_nodes, rep.quorum, rep.attempts, (long long)rep.validity_ms);
        cli_print_report(stderr, &rep);
    }

    exec_state_t st;
    memset(&st, 0, sizeof st);
    st.cli = c;
    st.resource = resource;
    st.lost_sig = lost_sig;
    atomic_init(&st.child, 0);
    atomic_init(&st.lost, 0);
    atomic_init(&st.lost_reason, 0);

    /* Block the forwarded signals before the watchdog thread exists. */
    sigset_t fwd, orig;
    sigemptyset(&fwd);
    for (size_t k = 0; k < N_FORWARDED; k++) sigaddset(&fwd, forwarded[k]);
    pthread_sigmask(SIG_BLOCK, &fwd, &orig);
    struct sigaction saved[N_FORWARDED];
    int installed[N_FORWARDED];
    install_handlers(saved, installed);

    size_t n_env = 0;
    char **env = NULL;
    int code;
    int wrc = redlock_autoextend(rl, lock, NULL, on_lost, &st);
    if (wrc != REDLOCK_OK) {
        cli_error(c, "cannot auto-extend the lock on '%s': %s", resource, redlock_strerror(wrc));
        code = wrc == REDLOCK_ERR_NOT_HELD ? CLI_EX_TEMPFAIL : cli_exit_code(wrc);
    } else if (!(env = child_env(resource, redlock_lock_token(lock), &n_env))) {
        cli_error(c, "out of memory");
        code = CLI_EX_OSERR;
    } else {
        code = run_command(&st, argv + cmd_at, env, &orig, &fwd, rl, lock);
    }
    redlock_autoextend_stop(rl, lock);

    int was_lost = atomic_load(&st.lost) || redlock_lock_lost(lock);
    static redlock_report_t rrep;
    int rrc = redlock_release_ex(rl, lock, &rrep);
    if (rrc == REDLOCK_ERR_NOT_HELD && !was_lost && wrc == REDLOCK_OK) {
        cli_error(c, "lock on '%s' was no longer held when the command ended (expired or taken over): "
                  "the command may not have run alone", resource);
        was_lost = 1;
    } else if (rrc != REDLOCK_OK && rrc != REDLOCK_ERR_NOT_HELD) {
        cli_error(c, "release of '%s' not confirmed: %s; the lock expires within %lld ms", resource,
                  rrep.message[0] ? rrep.message : redlock_strerror(rrc), (long long)ttl);
    }
    if (c->verbose) {
        cli_error(c, "release of '%s': %s (%zu of %zu nodes deleted it)", resource, redlock_strerror(rrc), rrep.yes,
                  rrep.n_nodes);
        cli_print_report(stderr, &rrep);
    }
    if (was_lost && wrc == REDLOCK_OK) {
        cli_error(c, "exiting with status %d: the lock on '%s' was lost while the command ran (its own status: %d)",
                  CLI_EX_LOST, resource, code);
        code = CLI_EX_LOST;
    }
    free_env(env, n_env);
    redlock_free(rl);
    for (size_t k = 0; k < N_FORWARDED; k++)
        if (installed[k]) sigaction(forwarded[k], &saved[k], NULL);
    pthread_sigmask(SIG_SETMASK, &orig, NULL);
    return code;
}
