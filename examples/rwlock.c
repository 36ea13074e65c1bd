/* rwlock.c -- a read-write lock on "config:payments": two readers hold it
 * together, a writer (an ordinary exclusive lock of the same name) is
 * refused while they do, and granted once they are gone.
 *
 *   rwlock URI...   (exit 0 when the lock behaved so) */
#include <stdio.h>

#include <redlock.h>

int main(int argc, char **argv) {
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 1;
    opt.n_nodes = (size_t)(argc - 1);
    redlock_t *rl;
    if (redlock_new(&rl, &opt) != REDLOCK_OK) return 2;
    redlock_lock_t *r1 = NULL, *r2 = NULL, *w = NULL;
    redlock_report_t rep;
    /* readers: 5 s each, waiting up to 2 s for a writer to finish */
    int ok = redlock_acquire_shared(rl, "config:payments", 5000, 2000, &r1, NULL) == REDLOCK_OK &&
             redlock_acquire_shared(rl, "config:payments", 5000, 2000, &r2, NULL) == REDLOCK_OK;
    printf("two readers: %s\n", ok ? "both in" : "refused");
    /* the writer, one attempt: refused while readers hold it */
    int rc = redlock_acquire_ex(rl, "config:payments", 5000, 0, &w, &rep);
    printf("writer while they read: %s\n", rc == REDLOCK_OK ? "granted" : rep.message);
    ok = ok && rc == REDLOCK_ERR_TAKEN;
    if (r1) redlock_release(rl, r1);
    if (r2) redlock_release(rl, r2);
    if (rc == REDLOCK_OK) redlock_release(rl, w);
    /* the readers are gone: the writer gets it */
    rc = redlock_acquire_ex(rl, "config:payments", 5000, 2000, &w, &rep);
    printf("writer afterwards: %s\n", rc == REDLOCK_OK ? "granted" : rep.message);
    ok = ok && rc == REDLOCK_OK;
    if (rc == REDLOCK_OK) redlock_release(rl, w);
    redlock_free(rl);
    return ok ? 0 : 1;
}
