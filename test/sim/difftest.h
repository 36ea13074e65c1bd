/* difftest.h -- what the differential test's parts share (difftest.c:
 * the server, reply comparison and random sequences; dtexpiry.c: the
 * expiry check to the millisecond). */
#ifndef SIM_DIFFTEST_H
#define SIM_DIFFTEST_H
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "rng.h"
#include "sbuf.h"

/* One connection on both sides: the real one and the model's session. */
typedef struct side {
    redisContext *real;
    model_session_t *ms;
    sbuf_t pushed; /* what the model sent this session (replies and messages) */
} side_t;

/* A seed's run against one server and one model. */
typedef struct diff {
    rng_t r;
    model_t *m;
    side_t a, b; /* a: commands; b: a subscriber */
    int b_subscribed;
    uint64_t steps, mismatches;
    char what[256]; /* the step's description, for messages */
    /* the replication check (dtrepl.c): the real master's replica and the
     * model's, which takes each batch of the model master's changes */
    redisContext *rreal;
    model_t *rm;
    model_session_t *rms;
    uint64_t checks, keys_compared, instants_exact;
} diff_t;

/* Whether a real reply and the model's match: exactly when tol is 0,
 * else values derived from the clock within difftest.c's tolerance. */
int dt_same(const redisReply *r, const redisReply *m, int tol);
/* Prints reply r on one line. */
void dt_show(FILE *f, const redisReply *r);
/* Prints a command's arguments, then the server's reply and the
 * model's (NULL: none), a line each. */
void dt_show_pair(FILE *f, int argc, const char *const *argv, const size_t *lens, const redisReply *real,
                  const redisReply *mod);
/* The model's next reply in b, parsed (consumed from b); NULL when b
 * holds no whole reply. The caller frees it (freeReplyObject). */
redisReply *dt_parse_model(sbuf_t *b);
/* Now on the machine's real clock, µs since the epoch. */
uint64_t dt_real_us(void);

/* dtexpiry.c: the expiry check on d's connection a, drawing from r:
 * rounds of trials until `want` trials were compared to the millisecond
 * and `want` keys were seen at both edges of their expiry, or a bound
 * ran out. Adds what it found to *stats; returns the mismatches. */
typedef struct dt_expiry_stats {
    uint64_t trials, compared, dropped; /* trials run, compared to the ms, dropped (TIMEs a ms apart) */
    uint64_t keys, at_edge, past_edge;  /* keys that expired; seen at their expiry ms; the ms after */
    uint64_t both;                      /* keys seen at both */
    uint64_t by_kind[16];               /* trials compared by how they set the TTL */
    uint64_t ttl_lo, ttl_hi;            /* the least and most TTL compared (ms) */
    uint64_t probes;                    /* PTTL probes compared to the ms */
} dt_expiry_stats_t;
uint64_t dt_expiry(diff_t *d, rng_t *r, uint64_t want, dt_expiry_stats_t *stats);
/* Prints what the expiry check covered; returns 0 when it covered its
 * floors (want compared trials, keys seen at both edges, every kind),
 * else 1 after saying what fell short. */
int dt_expiry_report(const dt_expiry_stats_t *s, uint64_t want);

/* dtrepl.c: the replication check. dt_replicate hands the model master's
 * last changes to its replica (after each command, when d->rm is set);
 * dt_replica_wait_hook answers WAIT as a master whose one replica has
 * every change; dt_replica_check compares, key by key, what the real
 * replica and the model's hold (type, value, expiry instant), and that
 * the real replica's expiry instants are its master's to the
 * millisecond. Returns the mismatches it found (added to d's). */
void dt_replicate(diff_t *d);
void dt_replica_wait_hook(void *arg, model_session_t *s, long long n, long long timeout_ms, sbuf_t *out);
uint64_t dt_replica_check(diff_t *d, const char *const *keys, size_t n);

#endif
