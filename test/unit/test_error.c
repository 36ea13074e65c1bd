/* test_error.c -- error codes and their strings (src/base/error.c), no server.
 *
 * The table below is built from REDLOCK_ERRNO_MAP itself, so a code appended
 * to the X-macro is covered without touching this file.
 */
#include <criterion/criterion.h>

#include <limits.h>
#include <string.h>

#include "redlock.h"

typedef struct err_entry {
    int code;
    const char *name;
    const char *msg;
} err_entry_t;

#define ERR_ENTRY_(name, value, msg) {REDLOCK_ERR_##name, #name, msg},
static const err_entry_t errs[] = {REDLOCK_ERRNO_MAP(ERR_ENTRY_)};
#undef ERR_ENTRY_
#define N_ERRS (sizeof errs / sizeof errs[0])

/* The enum values come from the same macro; check they agree with it. */
#define ERR_VALUE_(name, value, msg) {value, #name, msg},
static const err_entry_t raw_values[] = {REDLOCK_ERRNO_MAP(ERR_VALUE_)};
#undef ERR_VALUE_

Test(error, codes_are_negative_distinct_and_appended_in_order) {
    cr_assert_geq(N_ERRS, 9u, "the design names at least nine codes");
    for (size_t i = 0; i < N_ERRS; i++) {
        cr_assert_lt(errs[i].code, 0, "REDLOCK_ERR_%s = %d is not negative", errs[i].name, errs[i].code);
        cr_assert_eq(errs[i].code, raw_values[i].code, "REDLOCK_ERR_%s", errs[i].name);
        cr_assert_neq(errs[i].code, REDLOCK_OK);
        for (size_t j = 0; j < i; j++)
            cr_assert_neq(errs[i].code, errs[j].code, "REDLOCK_ERR_%s and REDLOCK_ERR_%s share %d", errs[i].name,
                          errs[j].name, errs[i].code);
        /* New codes are only appended: each one below the one before. */
        if (i > 0)
            cr_assert_lt(errs[i].code, errs[i - 1].code, "REDLOCK_ERR_%s (%d) is not after REDLOCK_ERR_%s (%d)",
                         errs[i].name, errs[i].code, errs[i - 1].name, errs[i - 1].code);
    }
    /* REDLOCK_ERR_LAST_ must follow the list. */
    cr_assert_eq(REDLOCK_ERR_LAST_, errs[N_ERRS - 1].code,
                 "REDLOCK_ERR_LAST_ is %d, the last code in REDLOCK_ERRNO_MAP is %d", REDLOCK_ERR_LAST_,
                 errs[N_ERRS - 1].code);
}

Test(error, design_codes_exist) {
    /* The names the design (section 3) promises. */
    static const char *const required[] = {"INVALID", "CONFIG",   "NOMEM", "TAKEN", "NO_QUORUM",
                                           "EXPIRED", "NOT_HELD", "AUTH",  "IO"};
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
        int found = 0;
        for (size_t i = 0; i < N_ERRS; i++) found |= strcmp(errs[i].name, required[r]) == 0;
        cr_assert(found, "REDLOCK_ERR_%s missing from REDLOCK_ERRNO_MAP", required[r]);
    }
}

Test(error, every_code_has_its_own_message) {
    for (size_t i = 0; i < N_ERRS; i++) {
        const char *s = redlock_strerror(errs[i].code);
        cr_assert_not_null(s, "REDLOCK_ERR_%s", errs[i].name);
        cr_assert_gt(strlen(s), 0u, "REDLOCK_ERR_%s has an empty message", errs[i].name);
        cr_assert_str_eq(s, errs[i].msg, "REDLOCK_ERR_%s: '%s' is not the X-macro's '%s'", errs[i].name, s,
                         errs[i].msg);
        cr_assert_str_neq(s, "unknown error", "REDLOCK_ERR_%s has no message", errs[i].name);
        cr_assert_str_neq(s, "success", "REDLOCK_ERR_%s says success", errs[i].name);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(s, redlock_strerror(errs[j].code), "REDLOCK_ERR_%s and REDLOCK_ERR_%s read alike",
                              errs[i].name, errs[j].name);
    }
}

Test(error, ok_is_success) {
    cr_assert_eq(REDLOCK_OK, 0);
    cr_assert_str_eq(redlock_strerror(REDLOCK_OK), "success");
}

Test(error, unknown_codes) {
    static const int unknown[] = {-9999, 1, 2, 42, INT_MAX, INT_MIN, -1000};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = redlock_strerror(unknown[i]);
        cr_assert_not_null(s);
        cr_assert_str_eq(s, "unknown error", "code %d: '%s'", unknown[i], s);
    }
    /* One past the last code is unknown too. */
    cr_assert_str_eq(redlock_strerror(errs[N_ERRS - 1].code - 1), "unknown error");
}

Test(error, vote_names) {
    static const redlock_vote_t votes[] = {REDLOCK_VOTE_NONE,      REDLOCK_VOTE_YES,  REDLOCK_VOTE_NO,
                                           REDLOCK_VOTE_TIMEOUT,   REDLOCK_VOTE_DOWN, REDLOCK_VOTE_ERROR,
                                           REDLOCK_VOTE_MEMBERSHIP};
    const size_t n = sizeof votes / sizeof votes[0];
    for (size_t i = 0; i < n; i++) {
        const char *s = redlock_vote_name(votes[i]);
        cr_assert_not_null(s, "vote %d", (int)votes[i]);
        cr_assert_gt(strlen(s), 0u, "vote %d has an empty name", (int)votes[i]);
        cr_assert_str_neq(s, "unknown", "vote %d has no name", (int)votes[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(s, redlock_vote_name(votes[j]), "votes %d and %d share the name '%s'", (int)votes[i],
                              (int)votes[j], s);
    }
    /* The names the header documents. */
    cr_assert_str_eq(redlock_vote_name(REDLOCK_VOTE_YES), "yes");
    cr_assert_str_eq(redlock_vote_name(REDLOCK_VOTE_NO), "no");
    cr_assert_str_eq(redlock_vote_name(REDLOCK_VOTE_TIMEOUT), "timeout");
    cr_assert_str_eq(redlock_vote_name(REDLOCK_VOTE_MEMBERSHIP), "membership");
    /* A value outside the enum still gets a string, not NULL. */
    cr_assert_not_null(redlock_vote_name((redlock_vote_t)99));
}
