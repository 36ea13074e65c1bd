/* test_hosts.c -- node host names against real redis-server processes, run
 * by ns_run.sh in private mount and network namespaces: a test /etc/hosts
 * (Debian's standard one, plus names each test adds), a resolver address
 * (127.0.0.53) where a test can bind a socket that drops every query, a
 * 5-node cluster on 127.0.0.1 and one node listening on [::1] only.
 *
 *  - `localhost` is [::1] first and 127.0.0.1 second (refused, then live);
 *  - a name whose first address drops packets (ip6tables) and whose second
 *    is live: every acquire is granted over the second;
 *  - a name whose lookup never answers: the other four nodes' rounds run
 *    at their usual speed, the node's vote fails saying so, and it votes
 *    again once the name resolves (the hosts file rewritten);
 *  - IPv4 / IPv6 literals never go through the resolver. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "blocking.h"
#include "engine.h"
#include "rltest.h"

static tc_cluster_t C;
static int dns_fd = -1;

/* Debian's standard lines (as ns_run.sh wrote them) plus extra. */
static void set_hosts(const char *extra) {
    const char *path = getenv("RL_HOSTS_FILE");
    cr_assert_not_null(path, "RL_HOSTS_FILE unset: run through test/hosts/ns_run.sh");
    FILE *f = fopen(path, "w"); /* in place: the bind mount follows the inode */
    cr_assert_not_null(f, "cannot rewrite %s: %s", path, strerror(errno));
    fprintf(f, "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n%s", extra);
    fclose(f);
}

static void setup(void) {
    rt_setup(&C);
    set_hosts("");
}

static void teardown(void) {
    if (dns_fd >= 0) close(dns_fd);
    dns_fd = -1;
    int rc = system("ip6tables -D OUTPUT -d ::1 -p tcp -j DROP 2>/dev/null");
    (void)rc;
}

/* A resolver that receives every query and answers none. */
static void dns_blackhole(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
    inet_pton(AF_INET, "127.0.0.53", &a.sin_addr);
    dns_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(dns_fd, 0);
    cr_assert_eq(bind(dns_fd, (struct sockaddr *)&a, sizeof a), 0, "bind 127.0.0.53:53: %s", strerror(errno));
}

/* The family of the first address the resolver gives for name. */
static int first_family(const char *name) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    cr_assert_eq(getaddrinfo(name, "6379", &hints, &res), 0, "%s does not resolve", name);
    int fam = res->ai_family;
    freeaddrinfo(res);
    return fam;
}

/* A redlock_t over uris with the library's defaults (no retries). */
static redlock_t *new_rl(const char **uris, size_t n) {
    redlock_options_t o;
    rt_options(&o);
    o.nodes = uris;
    o.n_nodes = n;
    redlock_t *rl = NULL;
    char err[256];
    int rc = redlock_new_ex(&rl, &o, err, sizeof err);
    cr_assert_eq(rc, REDLOCK_OK, "redlock_new: %s", err);
    return rl;
}

/* Waits (up to 10 s) for a first grant: names are looked up on the first
 * call, within the connect deadline, which a slow first lookup (valgrind
 * loading the NSS modules) may miss. */
static void warm_up(redlock_t *rl) {
    redlock_lock_t *l = NULL;
    int rc = -1;
    for (int k = 0; k < 100 && rc != REDLOCK_OK; k++)
        if ((rc = redlock_acquire_ex(rl, "hosts:warm", 5000, 0, &l, NULL)) != REDLOCK_OK) rt_sleep_ms(100);
    cr_assert_eq(rc, REDLOCK_OK, "no grant within 10 s");
    redlock_release(rl, l);
}

/* Fills uris[i] (in buf) with scheme://<host>:<port of node i>. */
static void name_uris(char buf[][128], const char **uris, size_t n, const char *host) {
    for (size_t i = 0; i < n; i++) {
        snprintf(buf[i], 128, "redis://%s:%d", host, C.port[i]);
        uris[i] = buf[i];
    }
}

/* Acquires and releases res; asserts the grant and that every node that
 * voted yes did so over 127.0.0.1 at its own port. Returns the elapsed
 * microseconds of the acquire. */
static uint64_t cycle(redlock_t *rl, const char *res, redlock_report_t *rep) {
    redlock_lock_t *l = NULL;
    uint64_t t0 = rt_now_us();
    int rc = redlock_acquire_ex(rl, res, 5000, 0, &l, rep);
    uint64_t us = rt_now_us() - t0;
    cr_assert_eq(rc, REDLOCK_OK, "acquire: %s", rep->message);
    for (size_t i = 0; i < rep->n_nodes && i < (size_t)C.n; i++) {
        if (rep->nodes[i].vote != REDLOCK_VOTE_YES) continue;
        char want[64];
        snprintf(want, sizeof want, "127.0.0.1:%d", C.port[i]);
        cr_assert_str_eq(rep->nodes[i].address, want, "node %zu voted over %s", i, rep->nodes[i].address);
    }
    redlock_release(rl, l);
    return us;
}

/* 20 acquire + release cycles on the 5 nodes named host (after a first
 * grant), each granted over 127.0.0.1. */
static void cycles_by_name(const char *host, const char *res) {
    char buf[5][128];
    const char *uris[5];
    name_uris(buf, uris, 5, host);
    redlock_t *rl = new_rl(uris, 5);
    redlock_report_t rep;
    warm_up(rl);
    for (int k = 0; k < 20; k++) cycle(rl, res, &rep);
    cr_assert_geq(rep.yes, 3u);
    redlock_free(rl);
}

TestSuite(hosts, .init = setup, .fini = teardown, .timeout = 120);

/* Debian's /etc/hosts: localhost is ::1 (nothing listens there) first. */
Test(hosts, debian_localhost_is_refused_on_ipv6_then_used_on_ipv4) {
    cr_assert_eq(first_family("localhost"), AF_INET6, "precondition: localhost must be ::1 first");
    cycles_by_name("localhost", "hosts:debian");
}

/* lockhost is [::1] (every packet dropped: the connect hangs) then
 * 127.0.0.1: the first address gets its share of the connect deadline,
 * the second is used, every acquire is granted. */
Test(hosts, unreachable_first_address_then_live_one) {
    set_hosts("::1\tlockhost\n127.0.0.1\tlockhost\n");
    cr_assert_eq(first_family("lockhost"), AF_INET6, "precondition: lockhost must be ::1 first");
    cr_assert_eq(system("ip6tables -I OUTPUT -d ::1 -p tcp -j DROP"), 0, "ip6tables");
    cycles_by_name("lockhost", "hosts:fallback");

    /* both addresses failing: the detail names each and why */
    set_hosts("::1\tdeadhost\n127.0.0.1\tdeadhost\n");
    char one[128];
    snprintf(one, sizeof one, "redis://deadhost:%d", 1); /* nothing listens on port 1 */
    const char *u1[1] = {one};
    redlock_t *rl = new_rl(u1, 1);
    redlock_report_t rep;
    redlock_lock_t *l = NULL;
    cr_assert_neq(redlock_acquire_ex(rl, "hosts:dead", 5000, 0, &l, &rep), REDLOCK_OK);
    cr_assert_str_eq(rep.nodes[0].detail, "deadhost: [::1]:1 timed out; 127.0.0.1:1 connection refused", "detail: %s",
                     rep.nodes[0].detail);
    redlock_free(rl);
}

/* Counts the nodes whose report says the lookup of `name` did not work. */
static int says_lookup(const redlock_report_t *rep, size_t i, const char *name) {
    char want[160];
    snprintf(want, sizeof want, "lookup of %s", name);
    return rep->nodes[i].vote != REDLOCK_VOTE_YES && strstr(rep->nodes[i].detail, want) != NULL;
}

/* Node 4's name is not in the hosts file and its DNS query is never
 * answered (getaddrinfo waits 10 s for it). The other four nodes' rounds
 * are not delayed; node 4 is a failed vote that says so. Then the name is
 * added to the hosts file, and node 4 votes again: with the key held by
 * someone else on nodes 0 and 1, a grant now needs its yes. */
Test(hosts, dead_resolver_delays_only_its_node_which_comes_back) {
    dns_blackhole();
    char buf[5][128];
    const char *uris[5];
    name_uris(buf, uris, 5, "localhost");
    snprintf(buf[4], 128, "redis://redis-3.test:%d", C.port[4]);
    redlock_t *rl = new_rl(uris, 5);
    redlock_report_t rep;
    warm_up(rl);
    uint64_t worst = 0, start = rt_now_us();
    int said = 0, n = 0;
    while (rt_now_us() - start < 2500000u) { /* past the connect deadline and a few reconnects */
        uint64_t us = cycle(rl, "hosts:dns", &rep);
        if (us > worst) worst = us;
        said += says_lookup(&rep, 4, "redis-3.test");
        n++;
        rt_sleep_ms(20);
    }
    cr_assert_lt(worst, 500000u, "an acquire took %llu ms with one name unresolvable",
                 (unsigned long long)(worst / 1000));
    cr_assert_gt(said, 0, "no report of %d said why node 4 failed (last: '%s')", n, rep.nodes[4].detail);
    fprintf(stderr, "%d acquires, slowest %llu us; node 4: %s\n", n, (unsigned long long)worst, rep.nodes[4].detail);

    /* held by another owner on nodes 0 and 1: no quorum without node 4 */
    cr_assert_eq(tc_set(&C, 0, "hosts:back", "someone-else", 60000), 0);
    cr_assert_eq(tc_set(&C, 1, "hosts:back", "someone-else", 60000), 0);
    redlock_lock_t *l = NULL;
    cr_assert_neq(redlock_acquire_ex(rl, "hosts:back", 5000, 0, &l, &rep), REDLOCK_OK, "the schedule must need node 4");
    set_hosts("127.0.0.1\tredis-3.test\n");
    int rc = -1;
    for (start = rt_now_us(); rt_now_us() - start < 20000000u; rt_sleep_ms(100))
        if ((rc = redlock_acquire_ex(rl, "hosts:back", 5000, 0, &l, &rep)) == REDLOCK_OK) break;
    cr_assert_eq(rc, REDLOCK_OK, "node 4 never voted again after its name resolved: %s / %s", rep.message,
                 rep.nodes[4].detail);
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d", C.port[4]);
    cr_assert_eq(rep.nodes[4].vote, REDLOCK_VOTE_YES);
    cr_assert_str_eq(rep.nodes[4].address, want);
    fprintf(stderr, "node 4 back after %llu ms\n", (unsigned long long)((rt_now_us() - start) / 1000));
    redlock_release(rl, l);
    redlock_free(rl);
}

/* A lookup that fails at once (nothing at the resolver address: port
 * unreachable) is a failed vote naming the lookup and its reason. The
 * connect deadline is long here: under valgrind the first lookup (loading
 * the NSS modules) can outlast the default one and vote "timeout". */
Test(hosts, failed_lookup_is_a_failed_vote_naming_it) {
    char one[128];
    snprintf(one, sizeof one, "redis://nowhere.test:%d", C.port[0]);
    const char *u1[1] = {one};
    redlock_options_t o;
    rt_options(&o);
    o.nodes = u1;
    o.n_nodes = 1;
    o.connect_timeout_ms = 10000;
    redlock_t *rl = NULL;
    cr_assert_eq(redlock_new_ex(&rl, &o, NULL, 0), REDLOCK_OK);
    redlock_report_t rep;
    redlock_lock_t *l = NULL;
    cr_assert_eq(redlock_acquire_ex(rl, "hosts:nowhere", 30000, 0, &l, &rep), REDLOCK_ERR_NO_QUORUM);
    cr_assert_eq(rep.nodes[0].vote, REDLOCK_VOTE_ERROR, "vote %s", redlock_vote_name(rep.nodes[0].vote));
    cr_assert(strstr(rep.nodes[0].detail, "lookup of nowhere.test failed: "), "detail: %s", rep.nodes[0].detail);
    cr_assert_str_eq(rep.nodes[0].address, "");
    redlock_free(rl);
}

/* IPv6 and IPv4 literals never go through the resolver (its queries
 * would hang here), and [::1] works. */
Test(hosts, literals_skip_the_resolver) {
    dns_blackhole();
    const char *v6 = getenv("RL_V6_PORT");
    cr_assert_not_null(v6, "RL_V6_PORT unset: run through test/hosts/ns_run.sh");
    char a[128], b[128], c[128];
    snprintf(a, sizeof a, "redis://[::1]:%s", v6);
    snprintf(b, sizeof b, "redis://127.0.0.1:%d", C.port[0]);
    snprintf(c, sizeof c, "rediss://[fd00::5]:%d", C.port[1]); /* parsed only: TLS, never reached here */
    const char *uris[2] = {a, b};
    redlock_t *rl = new_rl(uris, 2);
    redlock_report_t rep;
    redlock_lock_t *l = NULL;
    uint64_t t0 = rt_now_us();
    cr_assert_eq(redlock_acquire_ex(rl, "hosts:literal", 5000, 0, &l, &rep), REDLOCK_OK, "%s", rep.message);
    cr_assert_lt(rt_now_us() - t0, 500000u);
    char want[64];
    snprintf(want, sizeof want, "[::1]:%s", v6);
    cr_assert_str_eq(rep.nodes[0].address, want);
    redlock_release(rl, l);
    cr_assert_eq(rl_engine_node_lookups(rl_blocking_of(rl)->eng, 0), 0u);
    cr_assert_eq(rl_engine_node_lookups(rl_blocking_of(rl)->eng, 1), 0u);
    redlock_free(rl);
    const char *u3[1] = {c};
    rl = new_rl(u3, 1);
    redlock_free(rl);
}

/* Malformed hosts are configuration errors naming the URI, password
 * masked; nothing is resolved or connected. */
Test(hosts, malformed_hosts_are_refused_at_new) {
    const char *bad[] = {"redis://[::1", "redis://u:pw@[::1:6379", "redis://:6379", "redis://h:70000",
                         "redis://[not-v6]:6379"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redlock_options_t o;
        rt_options(&o);
        o.nodes = &bad[i];
        o.n_nodes = 1;
        redlock_t *rl = NULL;
        char err[256] = "";
        int rc = redlock_new_ex(&rl, &o, err, sizeof err);
        cr_assert_eq(rc, REDLOCK_ERR_CONFIG, "%s: rc %d", bad[i], rc);
        cr_assert_null(rl);
        cr_assert(strstr(err, "bad node URI"), "%s: %s", bad[i], err);
        cr_assert_null(strstr(err, "pw"), "the password leaked: %s", err);
    }
}
