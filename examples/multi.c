/* multi.c -- two resources as one lock: a transfer holds both accounts,
 * set on each node all or none, so nobody holds either meanwhile.
 *
 *   multi URI...   (exit 0 when the set excluded a single lock, then freed it) */
#include <stdio.h>

#include <redlock.h>

int main(int argc, char **argv) {
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 1;
    opt.n_nodes = (size_t)(argc - 1);
    redlock_t *rl;
    if (redlock_new(&rl, &opt) != REDLOCK_OK) return 2;
    const char *accounts[] = {"account:1", "account:2"};
    redlock_lock_t *both, *one;
    redlock_report_t rep;
    if (redlock_acquire_multi(rl, accounts, 2, 5000, 2000, &both, &rep) != REDLOCK_OK) {
        fprintf(stderr, "not granted: %s\n", rep.message);
        redlock_free(rl);
        return 1;
    }
    printf("holding %zu resources as one lock\n", redlock_lock_resource_count(both));
    int rc = redlock_acquire_ex(rl, "account:2", 5000, 0, &one, &rep); /* one attempt: taken */
    printf("account:2 alone meanwhile: %s\n", rc == REDLOCK_OK ? "granted" : rep.message);
    int ok = rc == REDLOCK_ERR_TAKEN;
    if (rc == REDLOCK_OK) redlock_release(rl, one);
    ok = redlock_release(rl, both) == REDLOCK_OK && ok; /* both keys, on every node */
    rc = redlock_acquire_ex(rl, "account:2", 5000, 0, &one, &rep);
    printf("account:2 afterwards: %s\n", rc == REDLOCK_OK ? "granted" : rep.message);
    if (rc == REDLOCK_OK) redlock_release(rl, one);
    redlock_free(rl);
    return ok && rc == REDLOCK_OK ? 0 : 1;
}
