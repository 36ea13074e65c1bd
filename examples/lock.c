#include <stdio.h>
#include <redlock.h>

int main(int argc, char **argv) {
    redlock_options_t opt;
    redlock_options_init(&opt); /* the defaults; then set what differs */
    opt.nodes = (const char *const *)argv + 1;
    opt.n_nodes = (size_t)(argc - 1);
    redlock_t *rl;
    char err[256];
    if (redlock_new_ex(&rl, &opt, err, sizeof err) != REDLOCK_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    redlock_lock_t *lock;
    redlock_report_t rep; /* why, node by node, whatever the result */
    int rc = redlock_acquire_ex(rl, "invoice:42", 10000, 2000, &lock, &rep); /* 10 s lock, wait up to 2 s */
    if (rc == REDLOCK_OK) {
        if (redlock_lock_valid(lock, 500)) puts("holding invoice:42: the only holder anywhere");
        rc = redlock_release(rl, lock); /* on every node; frees lock */
    } else {
        fprintf(stderr, "not granted: %s\n", rep.message);
    }
    redlock_free(rl);
    return rc == REDLOCK_OK ? 0 : 1;
}
