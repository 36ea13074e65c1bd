/* test_membership.c -- fingerprints and the membership record
 * (src/core/membership.c), no server. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "membership.h"
#include "redlock.h"
#include "uri.h"

/* The fingerprint of n URIs, into out. */
static void fp_of(const char *const *s, size_t n, char out[RL_FP_HEX + 1]) {
    rl_uri_t u[8];
    for (size_t i = 0; i < n; i++) cr_assert_eq(rl_uri_parse(s[i], &u[i], NULL, 0), REDLOCK_OK, "%s", s[i]);
    cr_assert_eq(rl_fingerprint(u, n, out), 0);
    for (size_t i = 0; i < n; i++) rl_uri_clear(&u[i]);
}

Test(membership, a_fingerprint_names_the_nodes_not_their_order_credentials_or_tls) {
    const char *a[] = {"redis://10.0.0.1:6379", "redis://Host-B:6380", "unix:///run/r.sock"};
    const char *b[] = {"unix:///run/r.sock", "rediss://user:secret@host-b:6380", "redis://10.0.0.1"};
    const char *c[] = {"redis://10.0.0.1:6379/1", "redis://host-b:6380", "unix:///run/r.sock"};
    char fa[RL_FP_HEX + 1], fb[RL_FP_HEX + 1], fc[RL_FP_HEX + 1], j[RL_FP_HEX + 1], k[RL_FP_HEX + 1];
    fp_of(a, 3, fa);
    fp_of(b, 3, fb);
    fp_of(c, 3, fc);
    cr_assert_eq(strlen(fa), RL_FP_HEX);
    cr_assert_str_eq(fa, fb, "order, case, credentials or TLS changed the fingerprint");
    cr_assert_str_neq(fa, fc, "another db is another node");
    rl_fingerprint_joint(fa, fc, j);
    rl_fingerprint_joint(fc, fa, k);
    cr_assert_str_neq(j, fa);
    cr_assert_str_neq(j, fc);
    cr_assert_str_neq(j, k, "a change and its reverse share a fingerprint");
}

Test(membership, identities_of_each_kind) {
    const char *s[] = {"redis://[::1]:7000/2", "redis+sentinel://h:26379/mymaster",
                       "redis+cluster://h:7001?seed=h:7002"};
    const char *want[] = {"tcp:[::1]:7000/2", "sentinel:mymaster@h:26379/0", "cluster:h:7001"};
    for (size_t i = 0; i < 3; i++) {
        rl_uri_t u;
        char id[128];
        cr_assert_eq(rl_uri_parse(s[i], &u, NULL, 0), REDLOCK_OK);
        rl_uri_identity(&u, id, sizeof id);
        cr_assert_str_eq(id, want[i]);
        rl_uri_clear(&u);
    }
}

/* Parses rec's own fields back. */
static int round_trip(const rl_record_t *rec, rl_record_t *back, char *err) {
    char buf[64];
    const char *f[RL_RECORD_FIELDS * 2];
    size_t len[RL_RECORD_FIELDS * 2];
    size_t n = rl_record_fields(rec, buf, f, len);
    return rl_record_parse(f, len, n, back, err, 200);
}

Test(membership, each_phase_accepts_what_the_procedure_says_and_reads_back) {
    const char *old = "0123456789abcdef", *new = "fedcba9876543210";
    char joint[RL_FP_HEX + 1];
    rl_fingerprint_joint(old, new, joint);
    struct {
        rl_phase_t p;
        int old, joint, new;
    } want[] = {{RL_PHASE_BEGUN, 1, 1, 0},
                {RL_PHASE_JOINT, 0, 1, 0},
                {RL_PHASE_ADVANCED, 0, 1, 1},
                {RL_PHASE_FINISHED, 0, 0, 1},
                {RL_PHASE_LEFT, 0, 0, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        rl_record_t rec, back;
        char err[200] = "";
        rl_record_make(&rec, want[i].p, old, new, "tcp:a:1/0", "tcp:b:1/0", 1234);
        cr_assert_eq(round_trip(&rec, &back, err), 0, "%s: %s", rl_phase_name(want[i].p), err);
        cr_assert_eq(back.phase, want[i].p);
        cr_assert_str_eq(back.change, joint);
        cr_assert_str_eq(back.old_list, "tcp:a:1/0");
        cr_assert_eq(back.written_ms, 1234);
        cr_assert_eq(rl_record_accepts(&back, old), want[i].old, "%s and OLD", rl_phase_name(want[i].p));
        cr_assert_eq(rl_record_accepts(&back, joint), want[i].joint, "%s and JOINT", rl_phase_name(want[i].p));
        cr_assert_eq(rl_record_accepts(&back, new), want[i].new, "%s and NEW", rl_phase_name(want[i].p));
    }
    rl_record_t none;
    char err[200];
    cr_assert_eq(rl_record_parse(NULL, NULL, 0, &none, err, sizeof err), 0);
    cr_assert(rl_record_accepts(&none, old), "no record accepts every configuration");
}

/* A record with field `name` set to value, else a good begun one. */
static int parse_with(const char *name, const char *value, char *err) {
    rl_record_t rec, back;
    rl_record_make(&rec, RL_PHASE_BEGUN, "0123456789abcdef", "fedcba9876543210", "", "", 1);
    char buf[64];
    const char *f[RL_RECORD_FIELDS * 2];
    size_t len[RL_RECORD_FIELDS * 2];
    size_t n = rl_record_fields(&rec, buf, f, len);
    for (size_t i = 0; i < n; i += 2)
        if (!strcmp(f[i], name)) f[i + 1] = value, len[i + 1] = strlen(value);
    return rl_record_parse(f, len, name[0] ? n : n - 1, &back, err, 200);
}

Test(membership, a_record_that_cannot_be_read_says_why) {
    char err[200] = "";
    cr_assert_eq(parse_with("phase", "halfway", err), -1);
    cr_assert(strstr(err, "phase 'halfway'"), "%s", err);
    cr_assert_eq(parse_with("accepts", "0123 fedcba9876543210", err), -1);
    cr_assert(strstr(err, "accepts '0123'"), "%s", err);
    cr_assert_eq(parse_with("change", "ZZZZZZZZZZZZZZZZ", err), -1);
    cr_assert(strstr(err, "change"), "%s", err);
    cr_assert_eq(parse_with("", "", err), -1);
    cr_assert(strstr(err, "not name and value pairs"), "%s", err);
    const char *only[2] = {"phase", "begun"};
    size_t ol[2] = {5, 5};
    rl_record_t back;
    cr_assert_eq(rl_record_parse(only, ol, 2, &back, err, 200), -1);
    cr_assert(strstr(err, "lacks a field"), "%s", err);
}

/* rl_record_refusal's detail for the guard's text t and fingerprint fp. */
static const char *refusal(const char *t, const char *fp) {
    static char d[256];
    rl_record_refusal(t, fp, d, sizeof d);
    return d;
}

Test(membership, a_refusal_names_what_the_node_accepts_which_list_the_handle_uses_and_the_step) {
    const char *o = "1111111111111111", *n = "2222222222222222", *j = "3333333333333333";
    char t[160];
    snprintf(t, sizeof t, "MEMBERSHIP joint %s %s %s %s", j, o, n, j);
    cr_assert_str_eq(refusal(t, o), "membership record (phase joint) accepts JOINT only; this handle uses OLD "
                                    "(1111111111111111): this handle still uses the old list: redeploy it with the "
                                    "new list as next nodes");
    cr_assert(strstr(refusal(t, n), "uses NEW") && strstr(refusal(t, n), "advance` is not done"), "%s", refusal(t, n));
    snprintf(t, sizeof t, "MEMBERSHIP advanced %s %s %s %s %s", j, o, n, j, n);
    cr_assert(strstr(refusal(t, o), "accepts JOINT and NEW only") && strstr(refusal(t, o), "redeploy it with the new"),
              "%s", refusal(t, o));
    snprintf(t, sizeof t, "MEMBERSHIP begun %s %s %s %s %s", j, o, n, o, j);
    cr_assert(strstr(refusal(t, n), "accepts OLD and JOINT only") && strstr(refusal(t, n), "has only begun"), "%s",
              refusal(t, n));
    snprintf(t, sizeof t, "MEMBERSHIP finished %s %s %s %s", j, o, n, n);
    cr_assert(strstr(refusal(t, j), "uses JOINT") && strstr(refusal(t, j), "use the new list alone"), "%s",
              refusal(t, j));
    snprintf(t, sizeof t, "MEMBERSHIP left %s %s %s", j, o, n);
    cr_assert(strstr(refusal(t, o), "accepts no node list") && strstr(refusal(t, o), "left the node set"), "%s",
              refusal(t, o));
    /* a handle of neither list, and a record of another change */
    snprintf(t, sizeof t, "MEMBERSHIP finished %s %s %s %s", j, o, n, n);
    cr_assert(strstr(refusal(t, "4444444444444444"), "uses another list (4444444444444444)"), "%s",
              refusal(t, "4444444444444444"));
}

Test(membership, a_refusal_of_an_unreadable_record_says_so) {
    cr_assert(strstr(refusal("MEMBERSHIP-UNREADABLE the record lacks its phase or accepts field", "1"),
                     "cannot be read (the record lacks its phase or accepts field)"),
              "%s", refusal("MEMBERSHIP-UNREADABLE the record lacks its phase or accepts field", "1"));
    cr_assert(strstr(refusal("MEMBERSHIP sideways - - - x", "1"), "cannot be read"), "%s",
              refusal("MEMBERSHIP sideways - - - x", "1"));
    cr_assert(strstr(refusal("MEMBERSHIP", "1"), "cannot be read"), "%s", refusal("MEMBERSHIP", "1"));
    char tiny[8];
    rl_record_refusal("MEMBERSHIP joint a b c d", "1", tiny, sizeof tiny); /* truncated, terminated */
    cr_assert_eq(strlen(tiny), sizeof tiny - 1);
}
