/* handover.c -- a lock handed to another process by its token. The
 * supervisor takes "import:2024-06", starts a worker (this program again,
 * with --worker) with the token in its environment, and lets go of its
 * lock object without releasing the lock; the worker adopts the lock,
 * works, and releases it. The lock is held throughout.
 *
 *   handover URI...   (exit 0 when the worker adopted and released it) */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redlock.h>

/* The worker: adopts the lock from its token, works, releases. */
static int worker(redlock_t *rl) {
    const char *token = getenv("IMPORT_TOKEN");
    redlock_lock_t *lock;
    redlock_report_t rep;
    if (!token || redlock_lock_adopt(rl, "import:2024-06", token, 30000, &lock, &rep) != REDLOCK_OK) {
        fprintf(stderr, "worker: not ours: %s\n", token ? rep.message : "no IMPORT_TOKEN");
        return 1;
    }
    printf("worker: adopted, valid for %lld ms\n", (long long)redlock_lock_validity_ms(lock));
    /* ... the import ... */
    return redlock_release(rl, lock) == REDLOCK_OK ? 0 : 1;
}

/* The supervisor: locks, starts the worker with the token, waits for it. */
static int supervisor(redlock_t *rl, char **worker_argv) {
    redlock_lock_t *lock;
    if (redlock_acquire(rl, "import:2024-06", 30000, &lock) != REDLOCK_OK) return 1;
    if (setenv("IMPORT_TOKEN", redlock_lock_token(lock), 1) != 0) {
        redlock_release(rl, lock);
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", worker_argv);
        _exit(127);
    }
    redlock_lock_free(lock); /* not redlock_release: the lock lives on, the worker's now */
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
    int is_worker = argc > 1 && strcmp(argv[1], "--worker") == 0;
    char *worker_argv[REDLOCK_MAX_NODES + 3] = {argv[0], "--worker"};
    for (int i = 1 + is_worker, k = 2; i < argc && k < REDLOCK_MAX_NODES + 2; i++) worker_argv[k++] = argv[i];
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 1 + is_worker;
    opt.n_nodes = (size_t)(argc - 1 - is_worker);
    redlock_t *rl;
    if (redlock_new(&rl, &opt) != REDLOCK_OK) return 2;
    int rc = is_worker ? worker(rl) : supervisor(rl, worker_argv);
    redlock_free(rl);
    return rc;
}
