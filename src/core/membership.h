/* membership.h -- changing the node set (doc/membership.md): a
 * configuration's fingerprint, and the membership record each node may
 * hold (a hash under RL_MEMBERSHIP_KEY) naming the configurations it
 * accepts during a change, the phase, and both node lists. */
#ifndef RL_MEMBERSHIP_H
#define RL_MEMBERSHIP_H
#include <stddef.h>

#include "uri.h"

#define RL_MEMBERSHIP_KEY "redlock:membership"     /* the record, on each node */
#define RL_MEMBERSHIP_CHANNEL "redlock:membership" /* a step announces itself here */
#define RL_FP_HEX 16                               /* hex characters of a fingerprint */
#define RL_RECORD_ACCEPTS 2                        /* configurations a record accepts at most */
/* A handle reads a node's record at least this often while it writes to
 * it, and writes without the guard only within this long of reading none.
 * `advance` waits this much beyond the longest TTL. */
#define RL_RECORD_REFRESH_MS 1000

/* The phases of a change, in order; each says what its nodes accept. */
typedef enum rl_phase {
    RL_PHASE_NONE = 0, /* no record: every configuration */
    RL_PHASE_BEGUN,    /* after begin: OLD and JOINT */
    RL_PHASE_JOINT,    /* advance, first half: JOINT only */
    RL_PHASE_ADVANCED, /* advance done: JOINT and NEW */
    RL_PHASE_FINISHED, /* finish, a node of NEW: NEW only */
    RL_PHASE_LEFT      /* finish, a node that left: nothing */
} rl_phase_t;

/* A node's record, parsed. */
typedef struct rl_record {
    rl_phase_t phase;
    char change[RL_FP_HEX + 1];                        /* JOINT's fingerprint: which change */
    char old_fp[RL_FP_HEX + 1], new_fp[RL_FP_HEX + 1]; /* OLD's and NEW's */
    char accepts[RL_RECORD_ACCEPTS][RL_FP_HEX + 1];
    size_t n_accepts;
    char old_list[1024], new_list[1024]; /* the identities, comma-separated (no credentials) */
    long long written_ms;                /* Unix time of the write */
} rl_record_t;

/* The phase's name ("begun", "joint", ...); "none" for RL_PHASE_NONE. */
const char *rl_phase_name(rl_phase_t p);

/* The fingerprint of the configuration of n parsed node URIs (the hash of
 * their sorted identities) into out. Returns 0, or -1 when out of memory. */
int rl_fingerprint(const rl_uri_t *u, size_t n, char out[RL_FP_HEX + 1]);

/* A joint configuration's fingerprint: the hash of its two lists'. */
void rl_fingerprint_joint(const char *old_fp, const char *new_fp, char out[RL_FP_HEX + 1]);

/* The identities of n parsed URIs, comma-separated, into buf (n bytes at
 * least 1). Returns 0, or -1 when they did not fit. */
int rl_identity_list(const rl_uri_t *u, size_t n, char *buf, size_t len);

/* Sets up rec for phase p of the change from old to new (fingerprints and
 * identity lists) written at now_ms: its accepts follow from the phase. */
void rl_record_make(rl_record_t *rec, rl_phase_t p, const char *old_fp, const char *new_fp, const char *old_list,
                    const char *new_list, long long now_ms);

/* Parses the fields of an HGETALL reply (nf strings, name then value)
 * into rec. An empty reply is RL_PHASE_NONE. Returns 0, or -1 with why in
 * err (the record cannot be read: never taken for "no record"). */
int rl_record_parse(const char *const *fields, const size_t *lens, size_t nf, rl_record_t *rec, char *err, size_t n);

/* The record's fields as HSET arguments: names and values into argv/lens
 * (room for RL_RECORD_FIELDS * 2), pointing into rec and buf (64 bytes).
 * Returns how many strings. */
#define RL_RECORD_FIELDS 8
size_t rl_record_fields(const rl_record_t *rec, char *buf, const char **argv, size_t *lens);

/* 1 when rec accepts the configuration of fingerprint fp. */
int rl_record_accepts(const rl_record_t *rec, const char *fp);

/* Explains the guard's refusal text (lua/guard/membership.lua: "MEMBERSHIP
 * phase change old_fp new_fp accepted..." or "MEMBERSHIP-UNREADABLE why")
 * to a handle of fingerprint fp: what the node accepts, which list the
 * handle uses, and the step to take, into detail (n bytes). */
void rl_record_refusal(const char *text, const char *fp, char *detail, size_t n);

#endif
