/* semaphore.c -- at most 2 holders of "jobs:export": two permits are
 * granted, a third is refused while both are held, and granted once one
 * is given back. Each permit is a Redlock lock on one of the semaphore's
 * slot keys, held on a quorum, so a minority of nodes may be down.
 *
 *   semaphore URI...   (exit 0 when the semaphore behaved so) */
#include <stdio.h>

#include <redlock.h>

/* One attempt (wait 0) at one of 2 permits of "jobs:export", for 10 s. */
static int take(redlock_t *rl, const char *who, redlock_lock_t **permit) {
    redlock_report_t rep;
    int rc = redlock_acquire_permit(rl, "jobs:export", 2, 10000, 0, permit, &rep);
    if (rc == REDLOCK_OK)
        printf("%s: slot %d\n", who, redlock_lock_slot(*permit));
    else
        printf("%s: %s\n", who, rep.message);
    return rc;
}

int main(int argc, char **argv) {
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = (const char *const *)argv + 1;
    opt.n_nodes = (size_t)(argc - 1);
    redlock_t *rl;
    if (redlock_new(&rl, &opt) != REDLOCK_OK) return 2;
    redlock_lock_t *a = NULL, *b = NULL, *c = NULL;
    int ok = take(rl, "first", &a) == REDLOCK_OK && take(rl, "second", &b) == REDLOCK_OK &&
             take(rl, "third", &c) == REDLOCK_ERR_TAKEN; /* both permits are held */
    if (a) redlock_release(rl, a);                       /* gives its slot back */
    ok = ok && take(rl, "third, again", &c) == REDLOCK_OK;
    if (b) redlock_release(rl, b);
    if (c) redlock_release(rl, c);
    redlock_free(rl);
    return ok ? 0 : 1;
}
