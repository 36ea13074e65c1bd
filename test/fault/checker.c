/* checker.c -- merges the workers' histories and judges them.
 *
 *   fault_check check --dir DIR --value FILE [--name NAME] [--liveness-ms MS]
 *                     [--min-acquisitions N] [--expect-violation KIND[,KIND]]
 *   fault_check selftest
 *   fault_check now
 *
 * `check` reads every DIR/NAME.log (worker histories, see worker.c) and
 * DIR/events (the harness's fault schedule), then reports:
 *   overlaps      holders whose windows [acq, min(rel, dl)] intersect: two
 *                 clients believed they held the lock at the same instant;
 *   lost updates  writes that are not on the chain of the protected value:
 *                 walking back from the file's final value through "value
 *                 read" links must reach the initial value and pass every
 *                 write (a write that read the same value as another one, or
 *                 that was overwritten by a write that never read it, is
 *                 lost); forks and broken links are listed as evidence;
 *   stale writes  writes that completed outside the writer's own window
 *                 (after its deadline or release): the client kept acting
 *                 on a lock it no longer held;
 *   liveness      for every "heal" event, the first acquisition that
 *                 followed it, which must come within --liveness-ms; for
 *                 every fault marked "live" (a minority fault), at least one
 *                 acquisition while the fault lasted.
 * Exit status: 0 when the verdict is the expected one (no violation and
 * liveness held; or, with --expect-violation, every listed kind of
 * violation found), 1 otherwise, 2 on a usage or input error.
 *
 * Events file lines: "E T_US KIND NAME [live]" with KIND start, fault, heal,
 * note or end; T_US is CLOCK_MONOTONIC microseconds (`fault_check now`).
 *
 * `selftest` writes deliberately broken histories into a temporary
 * directory and checks that each is judged as it must be: a checker that
 * cannot fail proves nothing. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TAGLEN 64
#define MAX_EXAMPLES 5

typedef struct rec {
    int pid, tid;
    char tok[16];
    int64_t t0, acq, dl, rel, end;
    long long rd_cnt, wr_cnt; /* wr_cnt -1: no write */
    char rd_tag[TAGLEN], wr_tag[TAGLEN];
    int64_t trd, twr;
    char relrc[16], kind[16];
    int yes;
} rec_t;

typedef struct event {
    int64_t t;
    char kind[16], name[64];
    int live;
} event_t;

typedef struct history {
    rec_t *r;
    size_t n, cap;
    event_t *e;
    size_t ne, cape;
    /* from the S lines */
    uint64_t acquired, taken, no_quorum, expired, other, skipped, rel_ok, rel_not_held, rel_other, refused;
    int processes;
} history_t;

typedef struct verdict {
    size_t acquisitions, writes, overlaps, lost, forks, broken, stale;
    size_t heals, heals_late, live_faults, live_faults_dead;
    int64_t max_recovery_us; /* -1: no heal */
    int64_t duration_us;
    int final_ok; /* the value file was readable */
} verdict_t;

static int quiet; /* selftest: suppress the detail lines */

static void say(const char *fmt, ...) {
    if (quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------- reading */

static int push_rec(history_t *h, const rec_t *r) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        rec_t *p = realloc(h->r, cap * sizeof *p);
        if (!p) return -1;
        h->r = p;
        h->cap = cap;
    }
    h->r[h->n++] = *r;
    return 0;
}

static int push_event(history_t *h, const event_t *e) {
    if (h->ne == h->cape) {
        size_t cap = h->cape ? h->cape * 2 : 64;
        event_t *p = realloc(h->e, cap * sizeof *p);
        if (!p) return -1;
        h->e = p;
        h->cape = cap;
    }
    h->e[h->ne++] = *e;
    return 0;
}

/* Parses one history line; returns 1 for a record, 0 for a line that is
 * not one (summary, blank), -1 for a malformed record. */
static int parse_line(history_t *h, const char *line, const char *file, int lineno) {
    if (line[0] == 'S' && line[1] == ' ') {
        unsigned long long v[9];
        int pid;
        if (sscanf(line,
                   "S %d acquired %llu taken %llu no_quorum %llu expired %llu other %llu skipped %llu rel_ok %llu "
                   "rel_not_held %llu rel_other %llu",
                   &pid, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) == 10) {
            h->acquired += v[0], h->taken += v[1], h->no_quorum += v[2], h->expired += v[3], h->other += v[4];
            h->skipped += v[5], h->rel_ok += v[6], h->rel_not_held += v[7], h->rel_other += v[8];
            const char *r = strstr(line, " refused ");
            if (r) h->refused += strtoull(r + 9, NULL, 10);
            h->processes++;
        }
        return 0;
    }
    if (line[0] != 'R' || line[1] != ' ') return 0;
    rec_t r;
    memset(&r, 0, sizeof r);
    char wr_cnt[32];
    long long t0, acq, dl, rel, trd, twr;
    int n =
        sscanf(line, "R %d %d %15s %lld %lld %lld %lld %lld %63s %31s %63s %lld %lld %15s %d %15s", &r.pid, &r.tid,
               r.tok, &t0, &acq, &dl, &rel, &r.rd_cnt, r.rd_tag, wr_cnt, r.wr_tag, &trd, &twr, r.relrc, &r.yes, r.kind);
    if (n != 16) {
        fprintf(stderr, "fault_check: %s:%d: malformed record (%d fields): %s", file, lineno, n, line);
        return -1;
    }
    r.t0 = t0, r.acq = acq, r.dl = dl, r.rel = rel, r.trd = trd, r.twr = twr;
    r.end = r.rel < r.dl ? r.rel : r.dl;
    if (!strcmp(wr_cnt, "-")) {
        r.wr_cnt = -1;
    } else {
        char *e;
        r.wr_cnt = strtoll(wr_cnt, &e, 10);
        if (*e || r.wr_cnt < 0) {
            fprintf(stderr, "fault_check: %s:%d: bad written value '%s'\n", file, lineno, wr_cnt);
            return -1;
        }
    }
    return push_rec(h, &r) == 0 ? 1 : -1;
}

static int read_file_lines(history_t *h, const char *path, int events) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (events && errno == ENOENT) return 0;
        fprintf(stderr, "fault_check: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!events) {
            if (parse_line(h, line, path, lineno) < 0) rc = -1;
            continue;
        }
        event_t e;
        memset(&e, 0, sizeof e);
        long long t;
        char live[16] = "";
        int n = sscanf(line, "E %lld %15s %63s %15s", &t, e.kind, e.name, live);
        if (n < 3) continue;
        e.t = t;
        e.live = !strcmp(live, "live");
        if (push_event(h, &e) != 0) rc = -1;
    }
    fclose(f);
    return rc;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int load_dir(history_t *h, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fault_check: cannot open directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d))) {
        if (!ends_with(de->d_name, ".log")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (read_file_lines(h, path, 0) != 0) rc = -1;
    }
    closedir(d);
    snprintf(path, sizeof path, "%s/events", dir);
    if (read_file_lines(h, path, 1) != 0) rc = -1;
    return rc;
}

/* Reads the final protected value "COUNTER TAG" into cnt/tag. */
static int read_value(const char *path, long long *cnt, char *tag) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fault_check: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    int n = fscanf(f, "%lld %63s", cnt, tag);
    fclose(f);
    if (n != 2) {
        fprintf(stderr, "fault_check: %s does not hold a value record\n", path);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- judging */

static void describe(const rec_t *r, char *buf, size_t len) {
    char wrote[160];
    if (r->wr_cnt < 0)
        snprintf(wrote, sizeof wrote, "nothing");
    else
        snprintf(wrote, sizeof wrote, "%lld:%s at %.6f s", r->wr_cnt, r->wr_tag, (double)r->twr / 1e6);
    snprintf(buf, len,
             "pid %d thread %d token %s (%s, %d yes) window [%.6f, %.6f] s, read %lld:%s, wrote %s, release %s", r->pid,
             r->tid, r->tok, r->kind, r->yes, (double)r->acq / 1e6, (double)r->end / 1e6, r->rd_cnt, r->rd_tag, wrote,
             r->relrc);
}

static int cmp_acq(const void *a, const void *b) {
    const rec_t *x = a, *y = b;
    return x->acq < y->acq ? -1 : x->acq > y->acq;
}

static int cmp_event(const void *a, const void *b) {
    const event_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* Index of writes sorted by written value (counter, then tag). */
static const history_t *sort_h;
static int cmp_written(const void *a, const void *b) {
    const rec_t *x = &sort_h->r[*(const size_t *)a], *y = &sort_h->r[*(const size_t *)b];
    if (x->wr_cnt != y->wr_cnt) return x->wr_cnt < y->wr_cnt ? -1 : 1;
    return strcmp(x->wr_tag, y->wr_tag);
}

/* The write that produced value (cnt, tag), or -1. */
static long find_writer(const history_t *h, const size_t *idx, size_t nw, long long cnt, const char *tag) {
    size_t lo = 0, hi = nw;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const rec_t *m = &h->r[idx[mid]];
        int c = m->wr_cnt != cnt ? (m->wr_cnt < cnt ? -1 : 1) : strcmp(m->wr_tag, tag);
        if (c == 0) return (long)idx[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Overlapping windows: a sweep in acquisition order against the latest
 * window end seen so far. */
static void check_overlaps(history_t *h, verdict_t *v) {
    if (h->n) qsort(h->r, h->n, sizeof *h->r, cmp_acq);
    long holder = -1;
    int64_t max_end = INT64_MIN;
    size_t shown = 0;
    char a[512], b[512];
    for (size_t i = 0; i < h->n; i++) {
        rec_t *r = &h->r[i];
        if (holder >= 0 && r->acq < max_end) {
            v->overlaps++;
            if (shown++ < MAX_EXAMPLES) {
                describe(&h->r[holder], a, sizeof a);
                describe(r, b, sizeof b);
                say("  OVERLAP by %.3f ms:\n    holder     %s\n    newcomer   %s\n", (double)(max_end - r->acq) / 1e3,
                    a, b);
            }
        }
        if (r->end > max_end) {
            max_end = r->end;
            holder = (long)i;
        }
    }
}

/* Stale writes: the write completed outside the writer's own window. */
static void check_stale(const history_t *h, verdict_t *v) {
    size_t shown = 0;
    char a[512];
    for (size_t i = 0; i < h->n; i++) {
        const rec_t *r = &h->r[i];
        if (r->wr_cnt < 0) continue;
        if (r->twr > r->end || r->trd < r->acq) {
            v->stale++;
            if (shown++ < MAX_EXAMPLES) {
                describe(r, a, sizeof a);
                say("  STALE WRITE %.3f ms after the window closed:\n    %s\n", (double)(r->twr - r->end) / 1e3, a);
            }
        }
    }
}

/* Lost updates: the chain walk from the final value back to "0 init". */
static int check_chain(const history_t *h, verdict_t *v, long long fin_cnt, const char *fin_tag) {
    size_t nw = 0;
    size_t *idx = malloc((h->n ? h->n : 1) * sizeof *idx);
    char *on_path = calloc(h->n ? h->n : 1, 1);
    unsigned *readers = calloc(h->n ? h->n : 1, sizeof *readers);
    if (!idx || !on_path || !readers) {
        free(idx), free(on_path), free(readers);
        return -1;
    }
    for (size_t i = 0; i < h->n; i++)
        if (h->r[i].wr_cnt >= 0) idx[nw++] = i;
    v->writes = nw;
    sort_h = h;
    if (nw) qsort(idx, nw, sizeof *idx, cmp_written);
    char a[512], b[512];

    /* Forks: a value read by more than one write (each extra one lost the
     * other's update, or its own was lost). */
    size_t shown = 0;
    unsigned init_readers = 0;
    for (size_t k = 0; k < nw; k++) {
        const rec_t *r = &h->r[idx[k]];
        if (r->rd_cnt == 0 && !strcmp(r->rd_tag, "init")) {
            if (++init_readers == 2) v->forks++;
            continue;
        }
        long w = find_writer(h, idx, nw, r->rd_cnt, r->rd_tag);
        if (w < 0) {
            v->broken++;
            if (shown++ < MAX_EXAMPLES) {
                describe(r, a, sizeof a);
                say("  BROKEN LINK: value %lld:%s was read but never written:\n    %s\n", r->rd_cnt, r->rd_tag, a);
            }
        } else if (++readers[w] == 2) {
            v->forks++;
        }
    }
    shown = 0;
    for (size_t k = 0; k < nw && shown < MAX_EXAMPLES; k++) { /* show the forks with both readers */
        const rec_t *r = &h->r[idx[k]];
        long w = find_writer(h, idx, nw, r->rd_cnt, r->rd_tag);
        if (w < 0 || readers[w] < 2) continue;
        for (size_t j = k + 1; j < nw; j++) {
            const rec_t *s = &h->r[idx[j]];
            if (s->rd_cnt == r->rd_cnt && !strcmp(s->rd_tag, r->rd_tag)) {
                describe(r, a, sizeof a);
                describe(s, b, sizeof b);
                say("  FORK: value %lld:%s was read by two writers:\n    %s\n    %s\n", r->rd_cnt, r->rd_tag, a, b);
                shown++;
                readers[w] = 0; /* once per value */
                break;
            }
        }
    }

    /* The walk: final value -> writer -> the value it read -> ... -> init. */
    size_t path = 0;
    long long cnt = fin_cnt;
    char tag[TAGLEN];
    snprintf(tag, sizeof tag, "%s", fin_tag);
    int reached_init = 0;
    while (path <= nw) {
        if (cnt == 0 && !strcmp(tag, "init")) {
            reached_init = 1;
            break;
        }
        long w = find_writer(h, idx, nw, cnt, tag);
        if (w < 0 || on_path[w]) break;
        on_path[w] = 1;
        path++;
        cnt = h->r[w].rd_cnt;
        snprintf(tag, sizeof tag, "%s", h->r[w].rd_tag);
    }
    if (!reached_init) {
        v->broken++;
        say("  BROKEN CHAIN: walking back from the final value %lld:%s stopped at %lld:%s after %zu writes\n", fin_cnt,
            fin_tag, cnt, tag, path);
    }
    v->lost = nw - path;
    shown = 0;
    for (size_t k = 0; k < nw && shown < MAX_EXAMPLES; k++) {
        if (on_path[idx[k]]) continue;
        describe(&h->r[idx[k]], a, sizeof a);
        say("  LOST UPDATE (not on the value's chain):\n    %s\n", a);
        shown++;
    }
    free(idx);
    free(on_path);
    free(readers);
    return 0;
}

/* Liveness: the first acquisition after each heal, and acquisitions
 * during each fault marked live. Records are sorted by acq. */
static void check_liveness(history_t *h, verdict_t *v, int64_t liveness_us) {
    if (h->ne) qsort(h->e, h->ne, sizeof *h->e, cmp_event);
    v->max_recovery_us = -1;
    for (size_t i = 0; i < h->ne; i++) {
        const event_t *e = &h->e[i];
        if (!strcmp(e->kind, "heal")) {
            v->heals++;
            int64_t first = -1;
            for (size_t k = 0; k < h->n; k++)
                if (h->r[k].acq >= e->t && strcmp(h->r[k].kind, "nolock")) {
                    first = h->r[k].acq;
                    break;
                }
            if (first < 0 || first - e->t > liveness_us) {
                v->heals_late++;
                if (first < 0)
                    say("  LIVENESS: no acquisition after heal '%s' at %.3f s\n", e->name, (double)e->t / 1e6);
                else
                    say("  LIVENESS: first acquisition %.3f s after heal '%s' (limit %.3f s)\n",
                        (double)(first - e->t) / 1e6, e->name, (double)liveness_us / 1e6);
            } else {
                say("  heal %-22s at %9.3f s: first acquisition after %7.1f ms\n", e->name, (double)e->t / 1e6,
                    (double)(first - e->t) / 1e3);
            }
            if (first >= 0 && first - e->t > v->max_recovery_us) v->max_recovery_us = first - e->t;
        } else if (!strcmp(e->kind, "fault") && e->live) {
            /* a minority fault: the majority must keep granting meanwhile */
            int64_t until = INT64_MAX;
            for (size_t j = i + 1; j < h->ne; j++)
                if (!strcmp(h->e[j].kind, "heal")) {
                    until = h->e[j].t;
                    break;
                }
            size_t during = 0;
            for (size_t k = 0; k < h->n; k++)
                if (h->r[k].acq > e->t && h->r[k].acq < until) during++;
            v->live_faults++;
            if (!during) v->live_faults_dead++;
            say("  fault %-21s at %9.3f s: %zu acquisitions while it lasted%s\n", e->name, (double)e->t / 1e6, during,
                during ? "" : " (NONE: a minority fault must not stop the majority)");
        }
    }
}

static int judge(history_t *h, const char *value_path, int64_t liveness_us, verdict_t *v) {
    memset(v, 0, sizeof *v);
    v->max_recovery_us = -1;
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->r[i].kind, "nolock")) v->acquisitions++;
    check_overlaps(h, v); /* sorts by acq */
    check_stale(h, v);
    long long fin_cnt = 0;
    char fin_tag[TAGLEN] = "init";
    if (value_path) {
        if (read_value(value_path, &fin_cnt, fin_tag) != 0) return -1;
        v->final_ok = 1;
    }
    if (check_chain(h, v, fin_cnt, fin_tag) != 0) return -1;
    check_liveness(h, v, liveness_us);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < h->ne; i++) {
        if (h->e[i].t < lo) lo = h->e[i].t;
        if (h->e[i].t > hi) hi = h->e[i].t;
    }
    for (size_t i = 0; i < h->n; i++) {
        if (h->r[i].acq < lo) lo = h->r[i].acq;
        if (h->r[i].rel > hi) hi = h->r[i].rel;
    }
    v->duration_us = hi > lo ? hi - lo : 0;
    return 0;
}

static void history_free(history_t *h) {
    free(h->r);
    free(h->e);
    memset(h, 0, sizeof *h);
}

/* ------------------------------------------------------------- check */

static int kind_found(const verdict_t *v, const char *kind) {
    if (!strcmp(kind, "overlap")) return v->overlaps > 0;
    if (!strcmp(kind, "lost")) return v->lost > 0 || v->forks > 0;
    if (!strcmp(kind, "stale")) return v->stale > 0;
    return -1;
}

static int cmd_check(int argc, char **argv) {
    const char *dir = NULL, *value = NULL, *name = "run", *expect = NULL;
    long liveness_ms = 4000, min_acq = 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) {
            fprintf(stderr, "fault_check: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--dir"))
            dir = val;
        else if (!strcmp(a, "--value"))
            value = val;
        else if (!strcmp(a, "--name"))
            name = val;
        else if (!strcmp(a, "--expect-violation"))
            expect = val;
        else if (!strcmp(a, "--liveness-ms"))
            liveness_ms = strtol(val, NULL, 10);
        else if (!strcmp(a, "--min-acquisitions"))
            min_acq = strtol(val, NULL, 10);
        else {
            fprintf(stderr, "fault_check: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (!dir || !value) {
        fprintf(stderr, "fault_check: check needs --dir and --value\n");
        return 2;
    }
    history_t h;
    memset(&h, 0, sizeof h);
    if (load_dir(&h, dir) != 0) {
        history_free(&h);
        return 2;
    }
    say("== %s: %zu records from %d worker process(es), %zu events\n", name, h.n, h.processes, h.ne);
    verdict_t v;
    if (judge(&h, value, (int64_t)liveness_ms * 1000, &v) != 0) {
        history_free(&h);
        return 2;
    }
    size_t violations = v.overlaps + v.lost + v.forks + v.broken + v.stale;
    say("  acquisitions %zu, writes %zu; failed acquire calls: taken %llu, no quorum %llu, expired %llu, other %llu;"
        " writes skipped (validity gone) %llu; releases: ok %llu, not held %llu, other %llu\n",
        v.acquisitions, v.writes, (unsigned long long)h.taken, (unsigned long long)h.no_quorum,
        (unsigned long long)h.expired, (unsigned long long)h.other, (unsigned long long)h.skipped,
        (unsigned long long)h.rel_ok, (unsigned long long)h.rel_not_held, (unsigned long long)h.rel_other);
    if (h.refused)
        say("  acquire calls refused by the nodes' membership records: %llu\n", (unsigned long long)h.refused);
    say("  overlaps %zu, lost updates %zu (forks %zu, broken links %zu), stale writes %zu\n", v.overlaps, v.lost,
        v.forks, v.broken, v.stale);
    int ok;
    if (expect) {
        ok = 1;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", expect);
        for (char *save = NULL, *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
            int f = kind_found(&v, k);
            if (f < 0) {
                fprintf(stderr, "fault_check: unknown violation kind '%s' (overlap, lost, stale)\n", k);
                history_free(&h);
                return 2;
            }
            say("  expected violation %-8s %s\n", k, f ? "DETECTED" : "NOT DETECTED");
            if (!f) ok = 0;
        }
    } else {
        ok = violations == 0 && v.heals_late == 0 && v.live_faults_dead == 0 && v.acquisitions >= (size_t)min_acq;
        if (v.acquisitions < (size_t)min_acq)
            say("  too few acquisitions: %zu < %ld (the workload did not run)\n", v.acquisitions, min_acq);
    }
    printf("FAULT-RESULT name=%s duration_ms=%lld acquisitions=%zu writes=%zu overlaps=%zu lost_updates=%zu "
           "stale_writes=%zu forks=%zu broken=%zu heals=%zu max_recovery_ms=%.0f liveness_failures=%zu "
           "verdict=%s%s\n",
           name, (long long)(v.duration_us / 1000), v.acquisitions, v.writes, v.overlaps, v.lost, v.stale, v.forks,
           v.broken, v.heals, v.max_recovery_us < 0 ? -1.0 : (double)v.max_recovery_us / 1e3,
           v.heals_late + v.live_faults_dead, ok ? "PASS" : "FAIL",
           expect ? (ok ? " (expected violation detected)" : " (expected violation NOT detected)") : "");
    history_free(&h);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------- selftest */

typedef struct st_case {
    const char *name;
    const char *records; /* R lines without the "R pid tid tok" prefix: t0 acq dl rel rd wr trd twr relrc yes kind */
    const char *events;
    const char *final; /* the value file's content */
    int load_fails;    /* the history itself must be rejected */
    size_t overlaps, lost, forks, broken, stale, heals_late, live_dead;
} st_case_t;

/* Writes text to dir/name. */
static int put_file(const char *dir, const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int run_case(const st_case_t *c, const char *dir) {
    char path[4096];
    /* A fresh directory content for this case. */
    const char *names[] = {"a.log", "events", "value"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    if (put_file(dir, "a.log", c->records) || put_file(dir, "events", c->events ? c->events : "") ||
        put_file(dir, "value", c->final)) {
        printf("FAIL %s: cannot write the case files in %s\n", c->name, dir);
        return 1;
    }
    history_t h;
    memset(&h, 0, sizeof h);
    int lrc = load_dir(&h, dir);
    if (c->load_fails) {
        history_free(&h);
        printf("%s %s: malformed history %s\n", lrc != 0 ? "ok  " : "FAIL", c->name,
               lrc != 0 ? "rejected" : "ACCEPTED");
        return lrc != 0 ? 0 : 1;
    }
    verdict_t v;
    snprintf(path, sizeof path, "%s/value", dir);
    quiet = 1;
    int jrc = lrc == 0 ? judge(&h, path, 2000000, &v) : -1;
    quiet = 0;
    history_free(&h);
    if (jrc != 0) {
        printf("FAIL %s: history could not be judged\n", c->name);
        return 1;
    }
    int ok = v.overlaps == c->overlaps && v.lost == c->lost && v.forks == c->forks && v.broken == c->broken &&
             v.stale == c->stale && v.heals_late == c->heals_late && v.live_faults_dead == c->live_dead;
    printf("%s %s: overlaps %zu/%zu lost %zu/%zu forks %zu/%zu broken %zu/%zu stale %zu/%zu late heals %zu/%zu "
           "dead live faults %zu/%zu (found/expected)\n",
           ok ? "ok  " : "FAIL", c->name, v.overlaps, c->overlaps, v.lost, c->lost, v.forks, c->forks, v.broken,
           c->broken, v.stale, c->stale, v.heals_late, c->heals_late, v.live_faults_dead, c->live_dead);
    return ok ? 0 : 1;
}

/* Times are in microseconds; each case is a tiny history in the workers'
 * format, with the violations it holds by construction. */
static const st_case_t CASES[] = {
    {"clean chain, heal followed by an acquisition",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n"
     "R 2 0 bbbb 0 3000 9000 4000 1 1.0.1 2 2.0.1 3100 3900 OK 5 normal\n"
     "R 1 1 cccc 0 5000 9000 6000 2 2.0.1 3 1.1.1 5100 5900 OK 3 normal\n",
     "E 0 start run\nE 2500 fault pause_minority live\nE 4500 heal pause_minority\nE 7000 end run\n", "3 1.1.1\n", 0, 0,
     0, 0, 0, 0, 0, 0},
    {"windows that only touch do not overlap",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n"
     "R 2 0 bbbb 0 2000 9000 3000 1 1.0.1 2 2.0.1 2100 2900 OK 5 normal\n",
     NULL, "2 2.0.1\n", 0, 0, 0, 0, 0, 0, 0, 0},
    {"two holders at once (overlap), updates still chained",
     "R 1 0 aaaa 0 1000 9000 4000 0 init 1 1.0.1 1100 1200 OK 3 normal\n"
     "R 2 0 bbbb 0 3000 9000 6000 1 1.0.1 2 2.0.1 3100 3200 OK 3 normal\n",
     NULL, "2 2.0.1\n", 0, 1, 0, 0, 0, 0, 0, 0},
    {"window ends at the deadline, not at a late release",
     "R 1 0 aaaa 0 1000 2500 8000 0 init 1 1.0.1 1100 1200 NOT_HELD 3 normal\n"
     "R 2 0 bbbb 0 3000 9000 6000 1 1.0.1 2 2.0.1 3100 3200 OK 3 normal\n",
     NULL, "2 2.0.1\n", 0, 0, 0, 0, 0, 0, 0, 0},
    {"lost update: two writers read the same value",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n"
     "R 2 0 bbbb 0 3000 9000 4000 0 init 1 2.0.1 3100 3900 OK 5 normal\n",
     NULL, "1 2.0.1\n", 0, 0, 1, 1, 0, 0, 0, 0},
    {"paused client: stale write overwrites two updates",
     "R 1 0 aaaa 0 1000 2000 9000 0 init 1 1.0.1 1100 8000 NOT_HELD 5 stall\n"
     "R 2 0 bbbb 0 3000 9000 4000 0 init 1 2.0.1 3100 3900 OK 5 normal\n"
     "R 3 0 cccc 0 5000 9000 6000 1 2.0.1 2 3.0.1 5100 5900 OK 5 normal\n"
     "R 2 0 dddd 0 10000 19000 11000 1 1.0.1 2 2.0.2 10100 10900 OK 5 normal\n",
     NULL, "2 2.0.2\n", 0, 0, 2, 1, 0, 1, 0, 0},
    {"final value not produced by any write (broken chain)",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n", NULL, "5 9.9.9\n", 0, 0, 1, 0, 1, 0, 0, 0},
    {"a value read that nobody wrote (torn read)",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n"
     "R 2 0 bbbb 0 3000 9000 4000 -1 unreadable 0 2.0.1 3100 3900 OK 5 normal\n",
     NULL, "0 2.0.1\n", 0, 0, 1, 0, 2, 0, 0, 0},
    {"no acquisition after a heal (liveness)", "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n",
     "E 500 fault pause_majority\nE 3000 heal pause_majority\n", "1 1.0.1\n", 0, 0, 0, 0, 0, 0, 1, 0},
    {"first acquisition after a heal too late (liveness)",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n"
     "R 1 0 bbbb 0 5000000 5009000 5002000 1 1.0.1 2 1.0.2 5001100 5001900 OK 5 normal\n",
     "E 2500 heal restart_delayed\n", "2 1.0.2\n", 0, 0, 0, 0, 0, 0, 1, 0},
    {"minority fault with no acquisition while it lasted",
     "R 1 0 aaaa 0 1000 9000 2000 0 init 1 1.0.1 1100 1900 OK 5 normal\n"
     "R 1 0 bbbb 0 9000 19000 10000 1 1.0.1 2 1.0.2 9100 9900 OK 5 normal\n",
     "E 3000 fault pause_minority live\nE 8000 heal pause_minority\n", "2 1.0.2\n", 0, 0, 0, 0, 0, 0, 0, 1},
    {"malformed record", "R 1 0 aaaa 0 1000 oops\n", NULL, "0 init\n", 1, 0, 0, 0, 0, 0, 0, 0},
};

static int cmd_selftest(void) {
    char dir[] = "/tmp/fault_check_selftest.XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "fault_check: mkdtemp: %s\n", strerror(errno));
        return 2;
    }
    int failed = 0, passed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        if (run_case(&CASES[i], dir))
            failed++;
        else
            passed++;
    }
    char path[4096];
    const char *names[] = {"a.log", "events", "value"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "now")) {
        printf("%lld\n", (long long)mono_us());
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "selftest")) return cmd_selftest();
    if (argc >= 2 && !strcmp(argv[1], "check")) return cmd_check(argc, argv);
    fprintf(stderr, "usage: fault_check check --dir DIR --value FILE [--name NAME] [--liveness-ms MS]\n"
                    "                         [--min-acquisitions N] [--expect-violation overlap,lost,stale]\n"
                    "       fault_check selftest\n"
                    "       fault_check now      (CLOCK_MONOTONIC in microseconds)\n");
    return 2;
}
