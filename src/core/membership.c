/* membership.c -- fingerprints and the membership record (membership.h). */
#include "membership.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_names[] = {"none", "begun", "joint", "advanced", "finished", "left"};

const char *rl_phase_name(rl_phase_t p) {
    return (unsigned)p < sizeof phase_names / sizeof phase_names[0] ? phase_names[p] : "unknown";
}

/* The first RL_FP_HEX / 2 bytes of the BLAKE2b hash of data, in hex. */
static void short_hash(const unsigned char *data, size_t len, char out[RL_FP_HEX + 1]) {
    unsigned char h[crypto_generichash_BYTES_MIN];
    crypto_generichash(h, sizeof h, data, len, NULL, 0);
    sodium_bin2hex(out, RL_FP_HEX + 1, h, RL_FP_HEX / 2);
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rl_fingerprint(const rl_uri_t *u, size_t n, char out[RL_FP_HEX + 1]) {
    char *id[64], buf[64 * 320];
    size_t used = 0;
    if (n > 64) return -1;
    for (size_t i = 0; i < n; i++) {
        id[i] = buf + used;
        size_t len = rl_uri_identity(&u[i], id[i], sizeof buf - used);
        if (len >= sizeof buf - used) return -1;
        used += len + 1;
    }
    qsort(id, n, sizeof id[0], by_string);
    char joined[sizeof buf];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) at += (size_t)snprintf(joined + at, sizeof joined - at, "%s\n", id[i]);
    short_hash((const unsigned char *)joined, at, out);
    return 0;
}

void rl_fingerprint_joint(const char *old_fp, const char *new_fp, char out[RL_FP_HEX + 1]) {
    char both[2 * RL_FP_HEX + 2];
    snprintf(both, sizeof both, "%s+%s", old_fp, new_fp);
    short_hash((const unsigned char *)both, strlen(both), out);
}

int rl_identity_list(const rl_uri_t *u, size_t n, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i) {
            if (at + 1 >= len) return -1;
            buf[at++] = ',';
        }
        size_t w = rl_uri_identity(&u[i], buf + at, len - at);
        if (w >= len - at) return -1;
        at += w;
    }
    return 0;
}

void rl_record_make(rl_record_t *rec, rl_phase_t p, const char *old_fp, const char *new_fp, const char *old_list,
                    const char *new_list, long long now_ms) {
    memset(rec, 0, sizeof *rec);
    rec->phase = p;
    snprintf(rec->old_fp, sizeof rec->old_fp, "%s", old_fp);
    snprintf(rec->new_fp, sizeof rec->new_fp, "%s", new_fp);
    rl_fingerprint_joint(old_fp, new_fp, rec->change);
    snprintf(rec->old_list, sizeof rec->old_list, "%s", old_list);
    snprintf(rec->new_list, sizeof rec->new_list, "%s", new_list);
    rec->written_ms = now_ms;
    const char *acc[RL_RECORD_ACCEPTS] = {NULL, NULL};
    switch (p) {
    case RL_PHASE_BEGUN: acc[0] = old_fp, acc[1] = rec->change; break;
    case RL_PHASE_JOINT: acc[0] = rec->change; break;
    case RL_PHASE_ADVANCED: acc[0] = rec->change, acc[1] = new_fp; break;
    case RL_PHASE_FINISHED: acc[0] = new_fp; break;
    default: break; /* NONE and LEFT: nothing listed */
    }
    for (size_t i = 0; i < RL_RECORD_ACCEPTS && acc[i]; i++)
        snprintf(rec->accepts[rec->n_accepts++], RL_FP_HEX + 1, "%s", acc[i]);
}

int rl_record_accepts(const rl_record_t *rec, const char *fp) {
    if (rec->phase == RL_PHASE_NONE) return 1;
    for (size_t i = 0; i < rec->n_accepts; i++)
        if (!strcmp(rec->accepts[i], fp)) return 1;
    return 0;
}

/* 1 when s (len bytes) is a fingerprint: RL_FP_HEX lowercase hex digits. */
static int is_fp(const char *s, size_t len) {
    if (len != RL_FP_HEX) return 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789abcdef", s[i])) return 0;
    return 1;
}

/* Copies a fingerprint field into dst, or says why it is not one. */
static int take_fp(char *dst, const char *name, const char *v, size_t len, char *err, size_t n) {
    if (!is_fp(v, len)) {
        snprintf(err, n, "field %s '%.*s' is not a fingerprint (%d hex digits)", name, (int)(len > 40 ? 40 : len), v,
                 RL_FP_HEX);
        return -1;
    }
    memcpy(dst, v, len);
    dst[len] = '\0';
    return 0;
}

/* Reads the accepts field: fingerprints separated by single spaces. */
static int take_accepts(rl_record_t *rec, const char *v, size_t len, char *err, size_t n) {
    rec->n_accepts = 0;
    for (size_t at = 0; at < len;) {
        size_t end = at;
        while (end < len && v[end] != ' ') end++;
        if (rec->n_accepts == RL_RECORD_ACCEPTS) {
            snprintf(err, n, "field accepts lists more than %d configurations", RL_RECORD_ACCEPTS);
            return -1;
        }
        if (take_fp(rec->accepts[rec->n_accepts++], "accepts", v + at, end - at, err, n) < 0) return -1;
        at = end + (end < len);
    }
    return 0;
}

/* Reads one field of the record; unknown names are left for later versions. */
static int take_field(rl_record_t *rec, const char *k, size_t kl, const char *v, size_t vl, unsigned *seen, char *err,
                      size_t n) {
#define IS(name) (kl == sizeof name - 1 && !memcmp(k, name, kl))
    if (IS("phase")) {
        for (size_t p = RL_PHASE_BEGUN; p < sizeof phase_names / sizeof phase_names[0]; p++)
            if (vl == strlen(phase_names[p]) && !memcmp(v, phase_names[p], vl)) rec->phase = (rl_phase_t)p;
        if (rec->phase == RL_PHASE_NONE) {
            snprintf(err, n, "field phase '%.*s' is not a phase", (int)(vl > 40 ? 40 : vl), v);
            return -1;
        }
        *seen |= 1;
    } else if (IS("change")) {
        *seen |= 2;
        return take_fp(rec->change, "change", v, vl, err, n);
    } else if (IS("old_fp")) {
        *seen |= 4;
        return take_fp(rec->old_fp, "old_fp", v, vl, err, n);
    } else if (IS("new_fp")) {
        *seen |= 8;
        return take_fp(rec->new_fp, "new_fp", v, vl, err, n);
    } else if (IS("accepts")) {
        *seen |= 16;
        return take_accepts(rec, v, vl, err, n);
    } else if (IS("old") || IS("new")) {
        char *dst = IS("old") ? rec->old_list : rec->new_list;
        if (vl >= sizeof rec->old_list) {
            snprintf(err, n, "field %.*s is longer than %zu bytes", (int)kl, k, sizeof rec->old_list - 1);
            return -1;
        }
        memcpy(dst, v, vl);
        dst[vl] = '\0';
    } else if (IS("written_ms")) {
        char num[24];
        snprintf(num, sizeof num, "%.*s", (int)(vl < 23 ? vl : 23), v);
        rec->written_ms = strtoll(num, NULL, 10);
    }
    return 0;
#undef IS
}

int rl_record_parse(const char *const *fields, const size_t *lens, size_t nf, rl_record_t *rec, char *err, size_t n) {
    memset(rec, 0, sizeof *rec);
    if (nf == 0) return 0;
    if (nf % 2) {
        snprintf(err, n, "the record's reply has %zu strings, not name and value pairs", nf);
        return -1;
    }
    unsigned seen = 0;
    for (size_t i = 0; i < nf; i += 2)
        if (take_field(rec, fields[i], lens[i], fields[i + 1], lens[i + 1], &seen, err, n) < 0) return -1;
    if (seen != 31) {
        snprintf(err, n, "the record lacks a field (phase, change, old_fp, new_fp and accepts are required)");
        return -1;
    }
    return 0;
}

size_t rl_record_fields(const rl_record_t *rec, char *buf, const char **argv, size_t *lens) {
    char *acc = buf; /* "FP FP" */
    size_t at = 0;
    acc[0] = '\0';
    for (size_t i = 0; i < rec->n_accepts; i++)
        at += (size_t)snprintf(acc + at, 48 - at, "%s%s", i ? " " : "", rec->accepts[i]);
    char *ms = buf + 48;
    snprintf(ms, 16, "%lld", rec->written_ms);
    const char *kv[RL_RECORD_FIELDS * 2] = {"phase",      rl_phase_name(rec->phase),
                                            "change",     rec->change,
                                            "old_fp",     rec->old_fp,
                                            "new_fp",     rec->new_fp,
                                            "accepts",    acc,
                                            "old",        rec->old_list,
                                            "new",        rec->new_list,
                                            "written_ms", ms};
    for (size_t i = 0; i < RL_RECORD_FIELDS * 2; i++) {
        argv[i] = kv[i];
        lens[i] = strlen(kv[i]);
    }
    return RL_RECORD_FIELDS * 2;
}

/* The name of configuration fp in a change: OLD, JOINT, NEW, or NULL. */
static const char *config_name(const char *fp, const char *change, const char *old_fp, const char *new_fp) {
    if (!strcmp(fp, old_fp)) return "OLD";
    if (!strcmp(fp, change)) return "JOINT";
    if (!strcmp(fp, new_fp)) return "NEW";
    return NULL;
}

/* The step a handle of configuration me (a config_name, or NULL) refused
 * in phase takes. */
static const char *step_to_take(rl_phase_t phase, const char *me) {
    if (phase == RL_PHASE_LEFT) return "this node left the node set: take it out of the node list";
    if (!me)
        return "this handle's node list belongs to no change recorded here: use the lists `redlock membership "
               "show` prints";
    switch (phase) {
    case RL_PHASE_BEGUN:
        return "the change has only begun: use the old list with the new one as next nodes until `redlock "
               "membership advance` is done";
    case RL_PHASE_JOINT:
        if (!strcmp(me, "NEW")) return "`redlock membership advance` is not done: use both lists until it is";
        return "this handle still uses the old list: redeploy it with the new list as next nodes";
    case RL_PHASE_ADVANCED: return "this handle still uses the old list: redeploy it with the new list";
    default: return "the change is finished: use the new list alone (no next nodes)";
    }
}

void rl_record_refusal(const char *text, const char *fp, char *detail, size_t n) {
    char phase[16] = "", f[5][RL_FP_HEX + 2] = {"", "", "", "", ""};
    if (!strncmp(text, "MEMBERSHIP-UNREADABLE", 21)) {
        snprintf(detail, n, "membership record cannot be read (%s): no vote until it is fixed",
                 text + 21 + (text[21] == ' '));
        return;
    }
    int got = sscanf(text, "MEMBERSHIP %15s %17s %17s %17s %17s %17s", phase, f[0], f[1], f[2], f[3], f[4]);
    rl_phase_t p = RL_PHASE_NONE;
    for (size_t k = RL_PHASE_BEGUN; k < sizeof phase_names / sizeof phase_names[0]; k++)
        if (!strcmp(phase, phase_names[k])) p = (rl_phase_t)k;
    if (got < 4 || p == RL_PHASE_NONE) {
        snprintf(detail, n, "membership record cannot be read (the guard said: %.120s): no vote until it is fixed",
                 text);
        return;
    }
    const char *a = got > 4 ? config_name(f[3], f[0], f[1], f[2]) : NULL;
    const char *b = got > 5 ? config_name(f[4], f[0], f[1], f[2]) : NULL;
    const char *me = config_name(fp, f[0], f[1], f[2]);
    char accepts[48];
    if (!a)
        snprintf(accepts, sizeof accepts, "%s", got > 4 ? "another change's lists" : "no node list");
    else
        snprintf(accepts, sizeof accepts, "%s%s%s only", a, b ? " and " : "", b ? b : "");
    snprintf(detail, n, "membership record (phase %s) accepts %s; this handle uses %s (%s): %s", phase, accepts,
             me ? me : "another list", fp, step_to_take(p, me));
}
