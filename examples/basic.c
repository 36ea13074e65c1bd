/* basic.c -- the complete libredlock example: acquire, work, extend, release.
 *
 *   basic redis://127.0.0.1:7001 redis://127.0.0.1:7002 redis://127.0.0.1:7003
 *   REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,... basic
 *
 * Exit status: 0 when the lock was acquired, extended and released cleanly,
 * 1 when a call failed, 2 on a usage error. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

/* Prints how every node voted in the call that filled rep. */
static void print_nodes(const redlock_report_t *rep) {
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const redlock_node_report_t *nr = &rep->nodes[i];
        if (nr->rtt_us >= 0)
            printf("  %-28s %-8s %6lld us  %s\n", nr->node, redlock_vote_name(nr->vote), (long long)nr->rtt_us,
                   nr->detail);
        else /* no answer: not waited for ("pending"), timed out, down or failed */
            printf("  %-28s %-8s %9s  %s\n", nr->node, redlock_vote_name(nr->vote), "-", nr->detail);
    }
}

/* Prints a failed call: the code's name, the report's reason, the votes. */
static void print_failure(const char *call, int rc, const redlock_report_t *rep) {
    fprintf(stderr, "%s failed: %s (%d): %s\n", call, redlock_strerror(rc), rc, rep->message);
    print_nodes(rep);
}

int main(int argc, char **argv) {
    const char *nodes[REDLOCK_MAX_NODES];
    size_t n_nodes = 0;
    char *env_copy = NULL; /* REDLOCK_NODES, split in place at the commas */

    if (argc > 1) {
        for (int i = 1; i < argc && n_nodes < REDLOCK_MAX_NODES; i++) nodes[n_nodes++] = argv[i];
    } else if (getenv("REDLOCK_NODES")) {
        const char *env = getenv("REDLOCK_NODES");
        env_copy = malloc(strlen(env) + 1);
        if (!env_copy) return 1;
        strcpy(env_copy, env);
        for (char *uri = strtok(env_copy, ","); uri && n_nodes < REDLOCK_MAX_NODES; uri = strtok(NULL, ","))
            nodes[n_nodes++] = uri;
    }
    if (n_nodes == 0) {
        fprintf(stderr, "usage: %s URI...  (or REDLOCK_NODES=URI,URI,... %s)\n", argv[0], argv[0]);
        free(env_copy);
        return 2;
    }

    /* Always start from the defaults, then set what differs. */
    redlock_options_t opt;
    redlock_options_init(&opt);
    opt.nodes = nodes;
    opt.n_nodes = n_nodes;

    char err[256];
    redlock_t *rl = NULL;
    int rc = redlock_new_ex(&rl, &opt, err, sizeof err); /* copies the URIs */
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "redlock_new: %s: %s\n", redlock_strerror(rc), err);
        free(env_copy);
        return 1;
    }

    /* Acquire for 10 s; -1: no wait bound, only retry_count limits retries. */
    redlock_report_t rep;
    redlock_lock_t *lock = NULL;
    rc = redlock_acquire_ex(rl, "my-resource", 10000, -1, &lock, &rep);
    if (rc != REDLOCK_OK) {
        print_failure("acquire", rc, &rep); /* e.g. TAKEN: another owner holds it */
        redlock_free(rl);
        free(env_copy);
        return 1;
    }
    printf("acquired '%s' after %u attempt(s): %zu yes of %zu nodes (quorum %zu); valid for %lld ms\n",
           redlock_lock_resource(lock), rep.attempts, rep.yes, rep.n_nodes, rep.quorum,
           (long long)redlock_lock_validity_ms(lock));
    print_nodes(&rep);

    /* The work. It must end before the validity runs out: check it before
     * anything that relies on holding the lock. */
    struct timespec work = {0, 100 * 1000 * 1000}; /* 100 ms */
    nanosleep(&work, NULL);
    printf("worked; %lld ms of validity left\n", (long long)redlock_lock_validity_ms(lock));

    /* Need more time: reset the TTL to 10 s on a quorum. On failure the lock
     * keeps its old deadline, so it can still be released below. */
    int status = 0;
    rc = redlock_extend_ex(rl, lock, 10000, &rep);
    if (rc == REDLOCK_OK) {
        printf("extended; valid for %lld ms\n", (long long)redlock_lock_validity_ms(lock));
    } else {
        print_failure("extend", rc, &rep);
        status = 1;
    }

    /* Release on every node; this frees the lock whatever it returns. */
    rc = redlock_release_ex(rl, lock, &rep);
    lock = NULL;
    if (rc == REDLOCK_OK) {
        printf("released: %zu of %zu nodes confirmed (quorum %zu)\n", rep.yes, rep.n_nodes, rep.quorum);
    } else {
        /* NOT_HELD: a quorum no longer had our token -- the lock expired or
         * was taken over, so the work above may not have been exclusive. */
        print_failure("release", rc, &rep);
        status = 1;
    }

    redlock_free(rl);
    free(env_copy);
    return status;
}
