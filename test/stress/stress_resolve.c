/* stress_resolve.c -- the lookup threads under stress, as a plain program
 * for ThreadSanitizer (Criterion's runner cannot run under it). Run by
 * test/hosts/ns_run.sh (private namespaces: Debian's /etc/hosts, a 5-node
 * cluster, resolver address 127.0.0.53 where this program drops queries).
 *
 *  1. 8 threads share one redlock_t whose nodes are named (4 x localhost,
 *     one name that never resolves) and contend for one resource while
 *     nodes are killed and restarted: every failure makes a node's name be
 *     looked up again on a thread while the others drive I/O. No two
 *     threads may ever hold the resource at once.
 *  2. Handles made and freed while their lookups still run (hung or
 *     finishing), so lookups are let go of from both sides.
 * Prints "N passed, M failed"; exits 1 on any failure. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster.h"
#include "redlock.h"
#include "rttime.h"

static tc_cluster_t C;
static int passed, failed;
static atomic_int holders, overlaps, grants, stop;

static void check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s\n", what);
    }
}

/* Binds a UDP socket at the test resolver address and never answers. */
static int dns_blackhole(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
    inet_pton(AF_INET, "127.0.0.53", &a.sin_addr);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        printf("cannot bind 127.0.0.53:53 (run through test/hosts/ns_run.sh)\n");
        exit(1);
    }
    return fd;
}

/* A redlock_t over the cluster by name: localhost for nodes 0..3 and
 * `last` for node 4. */
static redlock_t *make_rl(const char *last) {
    char buf[5][128];
    const char *uris[5];
    for (int i = 0; i < 5; i++) {
        snprintf(buf[i], sizeof buf[i], "redis://%s:%d", i == 4 ? last : "localhost", C.port[i]);
        uris[i] = buf[i];
    }
    redlock_options_t o;
    redlock_options_init(&o);
    o.nodes = uris;
    o.n_nodes = 5;
    o.op_timeout_ms = 500;
    o.connect_timeout_ms = 1000;
    o.retry_count = 50;
    o.retry_delay_ms = 3;
    o.retry_jitter_ms = 2;
    redlock_t *rl = NULL;
    if (redlock_new(&rl, &o) != REDLOCK_OK) {
        printf("redlock_new failed\n");
        exit(1);
    }
    return rl;
}

static void *contender(void *arg) {
    redlock_t *rl = arg;
    while (!atomic_load(&stop)) {
        redlock_lock_t *l = NULL;
        if (redlock_acquire_ex(rl, "stress:resolve", 2000, 500, &l, NULL) != REDLOCK_OK) continue;
        if (atomic_fetch_add(&holders, 1) != 0) atomic_fetch_add(&overlaps, 1);
        atomic_fetch_add(&grants, 1);
        rt_sleep_ms(1);
        atomic_fetch_sub(&holders, 1);
        redlock_release(rl, l);
    }
    return NULL;
}

int main(void) {
    if (tc_cluster_load(&C) < 0 || C.n < 5) return 1;
    tc_cluster_heal(&C);
    int dns = dns_blackhole();

    redlock_t *rl = make_rl("redis-3.test");
    pthread_t t[8];
    for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, contender, rl);
    for (int round = 0; round < 3; round++) { /* failures: names looked up again */
        rt_sleep_ms(700);
        tc_node_kill(&C, round % 2);
        rt_sleep_ms(500);
        tc_node_restart(&C, round % 2, 0);
    }
    rt_sleep_ms(2500); /* past the abandon time of the hung lookup: a new one starts */
    atomic_store(&stop, 1);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    redlock_free(rl);
    printf("contention: %d grants, %d overlaps\n", atomic_load(&grants), atomic_load(&overlaps));
    check(atomic_load(&grants) > 20, "too few grants while nodes failed and a name hung");
    check(atomic_load(&overlaps) == 0, "two holders at once");

    for (int k = 0; k < 20; k++) { /* freed with lookups running or just done */
        redlock_t *r = make_rl(k % 2 ? "redis-3.test" : "localhost");
        redlock_lock_t *l = NULL;
        if (redlock_acquire_ex(r, "stress:resolve:free", 2000, 0, &l, NULL) == REDLOCK_OK) redlock_release(r, l);
        redlock_free(r);
    }
    check(1, "handles freed with lookups in flight");
    close(dns);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
