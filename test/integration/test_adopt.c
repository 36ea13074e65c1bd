/* test_adopt.c -- redlock_lock_adopt against the 5-master fixture cluster:
 * a lock handed over between handles keeps working (extend, auto-extend,
 * release) with fresh validity; a wrong, expired or unknown token is
 * NOT_HELD and deletes nothing; a malformed token is INVALID without the
 * token in the message; and a hand-over to another process (the redlock
 * tool's extend step, fork + exec) keeps the lock held the whole time --
 * a competitor polling all along never gets it -- until that process's
 * release step frees it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rltest.h"

#ifndef REDLOCK_CLI
#error "REDLOCK_CLI (path of the redlock program) must be defined by the build"
#endif

extern char **environ;

static tc_cluster_t C;
static redlock_t *g_rl, *g_other;
static redlock_report_t R;
static int g_slow; /* under valgrind: everything many times slower */

static void setup(void) {
    const char *pre = getenv("LD_PRELOAD");
    g_slow = pre && strstr(pre, "vgpreload") != NULL;
    rt_setup(&C);
}

static void stop_rival(void);

static void teardown(void) {
    stop_rival(); /* before the handle it uses is freed */
    for (int i = 0; i < C.n; i++) tc_node_resume(&C, i);
    redlock_free(g_rl);
    redlock_free(g_other);
    g_rl = g_other = NULL;
}

TestSuite(adopt, .init = setup, .fini = teardown, .timeout = 300);

static uint32_t scaled(uint32_t ms) {
    return g_slow ? ms * 10 : ms;
}

/* A handle over the 5 nodes, no retries, fencing as asked. */
static redlock_t *new_rl(int fencing) {
    redlock_options_t o;
    rt_options(&o);
    o.op_timeout_ms = scaled(200);
    o.connect_timeout_ms = 2000;
    o.node_down_ms = 600000;
    o.fencing = fencing;
    return rt_new(&C, 5, &o);
}

/* Copies the token of lk into tok (41 bytes). */
static void token_of(const redlock_lock_t *lk, char *tok) {
    memcpy(tok, redlock_lock_token(lk), REDLOCK_TOKEN_LEN + 1);
}

/* g_rl (fencing as asked) acquires res for ttl ms, copies the token into
 * tok and lets go of its handle, not of the lock; g_other is made to adopt. */
static void hand_over(int fencing, const char *res, uint32_t ttl, char *tok) {
    redlock_lock_t *orig;
    g_rl = new_rl(fencing);
    g_other = new_rl(fencing);
    cr_assert_eq(redlock_try_acquire(g_rl, res, ttl, &orig), REDLOCK_OK);
    cr_assert_eq(redlock_lock_fence(orig) > 0, fencing != 0);
    token_of(orig, tok);
    redlock_lock_free(orig);
}

Test(adopt, handover_between_handles) {
    redlock_lock_t *lk = NULL;
    char tok[REDLOCK_TOKEN_LEN + 1];
    hand_over(0, "adopt:a", scaled(2000), tok);
    int rc = redlock_lock_adopt(g_other, "adopt:a", tok, 30000, &lk, &R);
    cr_assert_eq(rc, REDLOCK_OK, "%s", R.message);
    cr_assert_eq(R.result, REDLOCK_OK);
    cr_assert_geq(R.yes, 3);
    cr_assert_gt(R.validity_ms, 25000, "validity %lld", (long long)R.validity_ms);
    cr_assert_gt(redlock_lock_validity_ms(lk), 25000);
    cr_assert_str_eq(redlock_lock_token(lk), tok);
    cr_assert_str_eq(redlock_lock_resource(lk), "adopt:a");
    int long_ttl = 0;
    for (int i = 0; i < 5; i++) long_ttl += tc_pttl(&C, i, "adopt:a") > 25000;
    cr_assert_geq(long_ttl, 3, "the key's TTL was reset on a quorum");
    cr_assert_eq(redlock_extend(g_other, lk, 9000), REDLOCK_OK);
    cr_assert_eq(redlock_release(g_other, lk), REDLOCK_OK);
    cr_assert_eq(tc_await_count(&C, "adopt:a", tok, 0), 0);
    static redlock_stats_t s;
    redlock_stats(g_other, &s);
    cr_assert_eq(s.adopts[0], 1);
    cr_assert_eq(s.extends[0], 1);
    cr_assert_eq(s.releases[0], 1);
}

Test(adopt, adopted_lock_auto_extends) {
    redlock_lock_t *lk = NULL;
    char tok[REDLOCK_TOKEN_LEN + 1];
    hand_over(0, "adopt:auto", scaled(1000), tok);
    cr_assert_eq(redlock_lock_adopt(g_other, "adopt:auto", tok, scaled(900), &lk, NULL), REDLOCK_OK);
    redlock_autoextend_options_t ao;
    redlock_autoextend_options_init(&ao);
    ao.interval_ms = scaled(200);
    cr_assert_eq(redlock_autoextend(g_other, lk, &ao, NULL, NULL), REDLOCK_OK);
    rt_sleep_ms(scaled(2000)); /* more than twice the TTL */
    cr_assert(redlock_lock_valid(lk, 0), "the adopted lock expired under auto-extension");
    cr_assert_geq(redlock_lock_extensions(lk), 4);
    cr_assert_geq(tc_count_value(&C, "adopt:auto", tok), 3);
    cr_assert_eq(redlock_release(g_other, lk), REDLOCK_OK);
}

Test(adopt, wrong_expired_or_unknown_token_is_not_held) {
    g_rl = new_rl(0);
    g_other = new_rl(0);
    redlock_lock_t *held, *lk = (redlock_lock_t *)&lk;
    char tok[REDLOCK_TOKEN_LEN + 1], wrong[REDLOCK_TOKEN_LEN + 1];
    cr_assert_eq(redlock_try_acquire(g_rl, "adopt:w", 10000, &held), REDLOCK_OK);
    token_of(held, tok);
    memcpy(wrong, tok, sizeof wrong);
    wrong[0] = wrong[0] == 'a' ? 'b' : 'a'; /* a valid token, not the holder's */
    cr_assert_eq(redlock_lock_adopt(g_other, "adopt:w", wrong, 5000, &lk, &R), REDLOCK_ERR_NOT_HELD);
    cr_assert_null(lk);
    cr_assert_geq(R.no, 3);
    cr_assert_eq(tc_await_count(&C, "adopt:w", tok, 5), 5, "a refused adoption left the holder's keys alone");
    cr_assert_eq(redlock_lock_adopt(g_other, "adopt:nothing-here", wrong, 5000, &lk, NULL), REDLOCK_ERR_NOT_HELD);

    redlock_lock_t *brief;
    cr_assert_eq(redlock_try_acquire(g_rl, "adopt:expired", scaled(300), &brief), REDLOCK_OK);
    token_of(brief, tok);
    redlock_lock_free(brief);
    rt_sleep_ms(scaled(300) + 300);
    cr_assert_eq(redlock_lock_adopt(g_other, "adopt:expired", tok, 5000, &lk, NULL), REDLOCK_ERR_NOT_HELD);
    cr_assert_eq(tc_count_value(&C, "adopt:expired", tok), 0, "an expired lock stays expired");
    static redlock_stats_t s;
    redlock_stats(g_other, &s);
    cr_assert_eq(s.adopts[-REDLOCK_ERR_NOT_HELD], 3);
    redlock_release(g_rl, held);
}

Test(adopt, no_quorum_deletes_nothing) {
    g_rl = new_rl(0);
    g_other = new_rl(0);
    redlock_lock_t *held, *lk = NULL;
    char tok[REDLOCK_TOKEN_LEN + 1];
    cr_assert_eq(redlock_try_acquire(g_rl, "adopt:nq", 10000, &held), REDLOCK_OK);
    token_of(held, tok);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_pause(&C, i), 0);
    cr_assert_eq(redlock_lock_adopt(g_other, "adopt:nq", tok, 5000, &lk, &R), REDLOCK_ERR_NO_QUORUM, "%s", R.message);
    cr_assert_null(lk);
    for (int i = 0; i < 3; i++) cr_assert_eq(tc_node_resume(&C, i), 0);
    /* (a resumed node answers when it has caught up: the count waits for it) */
    cr_assert_eq(tc_await_count(&C, "adopt:nq", tok, 5), 5, "the failed adoption deleted the holder's keys");
    cr_assert_eq(redlock_release(g_rl, held), REDLOCK_OK);
}

/* Adopts with token and expects INVALID with no part of it in the message. */
static void expect_invalid(const char *res, const char *token, uint32_t ttl) {
    redlock_lock_t *lk = (redlock_lock_t *)&lk;
    cr_assert_eq(redlock_lock_adopt(g_rl, res, token, ttl, &lk, &R), REDLOCK_ERR_INVALID, "token %s", token);
    cr_assert_null(lk);
    cr_assert(R.message[0], "no message");
    if (token && strlen(token) >= 8) {
        char head[9];
        memcpy(head, token, 8);
        head[8] = '\0';
        cr_assert_null(strstr(R.message, head), "the message quotes the token: %s", R.message);
    }
}

Test(adopt, bad_input_is_invalid) {
    g_rl = new_rl(0);
    const char *ok = "0123456789abcdef0123456789abcdef01234567";
    expect_invalid("adopt:bad", "0123456789abcdef0123456789abcdef0123456", 5000);   /* 39 */
    expect_invalid("adopt:bad", "0123456789abcdef0123456789abcdef012345678", 5000); /* 41 */
    expect_invalid("adopt:bad", "0123456789ABCDEF0123456789abcdef01234567", 5000);  /* upper case */
    expect_invalid("adopt:bad", "0123456789abcdeg0123456789abcdef01234567", 5000);  /* not hex */
    expect_invalid("adopt:bad", "", 5000);
    expect_invalid("adopt:bad", NULL, 5000);
    expect_invalid("adopt:bad", ok, 0); /* TTL out of range */
    expect_invalid("", ok, 5000);       /* empty resource */
    expect_invalid(NULL, ok, 5000);
    cr_assert(strstr(R.message, "resource"), "%s", R.message);
    redlock_lock_t *lk;
    cr_assert_eq(redlock_lock_adopt(NULL, "adopt:bad", ok, 5000, &lk, NULL), REDLOCK_ERR_INVALID);
    cr_assert_eq(redlock_lock_adopt(g_rl, "adopt:bad", ok, 5000, NULL, NULL), REDLOCK_ERR_INVALID);
    redlock_lock_adopt(g_rl, "adopt:bad", "0123456789abcdef0123456789abcdef0123456", 5000, &lk, &R);
    cr_assert(strstr(R.message, "39"), "the message gives the length: %s", R.message);
    redlock_lock_adopt(g_rl, "adopt:bad", "0123456789abcdeg0123456789abcdef01234567", 5000, &lk, &R);
    cr_assert(strstr(R.message, "16"), "the message gives the bad position: %s", R.message);
}

Test(adopt, fenced_lock_adopts_with_fence_zero) {
    redlock_lock_t *lk = NULL;
    char tok[REDLOCK_TOKEN_LEN + 1];
    hand_over(1, "adopt:fenced", 10000, tok);
    cr_assert_eq(redlock_lock_adopt(g_other, "adopt:fenced", tok, 10000, &lk, NULL), REDLOCK_OK);
    cr_assert_eq(redlock_lock_fence(lk), 0, "the counter is per resource: the holder's fence is not known");
    cr_assert_eq(redlock_release(g_other, lk), REDLOCK_OK);
}

/* ------------------------------------------------------------ another process */

/* Runs the redlock tool with args, REDLOCK_NODES and ADOPT_TOKEN=token in
 * its environment and stdin_text (may be NULL) on its stdin; returns its
 * exit code, or fails the test after limit_ms. */
static int run_cli(char *const args[], const char *token, const char *stdin_text, unsigned limit_ms) {
    static char nodes[2048], tokvar[128], *env[1024], *argv[32];
    snprintf(nodes, sizeof nodes, "REDLOCK_NODES=");
    for (int i = 0; i < C.n; i++)
        snprintf(nodes + strlen(nodes), sizeof nodes - strlen(nodes), "%s%s", i ? "," : "", C.uri[i]);
    snprintf(tokvar, sizeof tokvar, "ADOPT_TOKEN=%s", token);
    size_t k = 0, a = 0;
    for (char **e = environ; *e && k < 1000; e++)
        if (strncmp(*e, "REDLOCK_", 8)) env[k++] = *e;
    env[k++] = nodes, env[k++] = tokvar, env[k] = NULL;
    argv[a++] = REDLOCK_CLI;
    if (g_slow) argv[a++] = "--op-timeout", argv[a++] = "2s", argv[a++] = "--connect-timeout", argv[a++] = "3s";
    for (size_t i = 0; args[i] && a < 31; i++) argv[a++] = args[i];
    argv[a] = NULL;
    int in[2];
    cr_assert_eq(pipe(in), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(in[0], 0);
        close(in[0]), close(in[1]);
        execve(argv[0], argv, env);
        _exit(127);
    }
    close(in[0]);
    if (stdin_text && write(in[1], stdin_text, strlen(stdin_text)) < 0) perror("write");
    close(in[1]);
    int st = 0;
    for (unsigned waited = 0; waitpid(pid, &st, WNOHANG) == 0; waited += 10) {
        if (waited > limit_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            cr_assert_fail("%s %s did not finish within %u ms", REDLOCK_CLI, args[0], limit_ms);
        }
        rt_sleep_ms(10);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The competitor: tries the resource all along, counts its grants. */
typedef struct rival {
    pthread_t th;
    redlock_t *rl;
    atomic_int stop, grants;
} rival_t;

static rival_t g_rival;
static int g_rival_on;

static void stop_rival(void) {
    if (!g_rival_on) return;
    atomic_store(&g_rival.stop, 1);
    pthread_join(g_rival.th, NULL);
    g_rival_on = 0;
}

static void *rival_main(void *arg) {
    rival_t *r = arg;
    while (!atomic_load(&r->stop)) {
        redlock_lock_t *lk = NULL;
        if (redlock_try_acquire(r->rl, "adopt:proc", 5000, &lk) == REDLOCK_OK) {
            atomic_fetch_add(&r->grants, 1);
            redlock_release(r->rl, lk);
        }
        rt_sleep_ms(20);
    }
    return NULL;
}

Test(adopt, another_process_keeps_it_held_until_its_release) {
    g_rl = new_rl(0);
    g_other = new_rl(0);
    uint32_t ttl = scaled(1500);
    redlock_lock_t *orig;
    char tok[REDLOCK_TOKEN_LEN + 1], ttl_arg[32], line[64];
    uint64_t t0 = rt_now_us();
    cr_assert_eq(redlock_try_acquire(g_rl, "adopt:proc", ttl, &orig), REDLOCK_OK);
    token_of(orig, tok);
    rival_t *rival = &g_rival;
    rival->rl = g_other;
    atomic_init(&rival->stop, 0);
    atomic_init(&rival->grants, 0);
    cr_assert_eq(pthread_create(&rival->th, NULL, rival_main, rival), 0);
    g_rival_on = 1;
    redlock_lock_free(orig); /* handed over: this process lets go of its handle */
    snprintf(ttl_arg, sizeof ttl_arg, "%us", scaled(6));
    char *extend[] = {"extend", "--token-env", "ADOPT_TOKEN", "--ttl", ttl_arg, "adopt:proc", NULL};
    int code = run_cli(extend, tok, NULL, scaled(5000));
    uint64_t handed = (rt_now_us() - t0) / 1000;
    cr_assert_eq(code, 0, "extend step exited %d", code);
    cr_assert_lt(handed, ttl, "the hand-over took %llu ms, longer than the TTL", (unsigned long long)handed);
    while ((rt_now_us() - t0) / 1000 < ttl + 700u) rt_sleep_ms(20); /* well past the first TTL */
    cr_assert_eq(atomic_load(&rival->grants), 0, "the competitor got the lock during the hand-over");
    snprintf(line, sizeof line, "%s\n", tok);
    char *release[] = {"release", "--token-stdin", "adopt:proc", NULL};
    code = run_cli(release, tok, line, scaled(5000));
    cr_assert_eq(code, 0, "release step exited %d", code);
    for (int t = 0; t < 150 && atomic_load(&rival->grants) == 0; t++) rt_sleep_ms(20);
    stop_rival();
    cr_assert_gt(atomic_load(&rival->grants), 0, "the competitor never got the lock after the release");
}
