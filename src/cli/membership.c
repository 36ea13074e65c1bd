/* membership.c -- `redlock membership begin | advance | finish | show`: the
 * steps of a change of the node set from --nodes (OLD) to --next-nodes
 * (NEW), each writing the membership record to every node of OLD and NEW
 * (doc/membership.md), and what the records say. */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blocking.h"
#include "cli.h"
#include "membership.h"

#define REFRESH_MS 1000 /* a handle reads a node's record at least this often */

/* The change: both lists parsed, their union, and the fingerprints. */
typedef struct change {
    rl_uri_t old[REDLOCK_MAX_NODES], new[REDLOCK_MAX_NODES];
    size_t n_old, n_new;
    const char *uri[REDLOCK_MAX_NODES]; /* the union, OLD's first; the caller's URIs */
    const rl_uri_t *parsed[REDLOCK_MAX_NODES];
    unsigned lists[REDLOCK_MAX_NODES]; /* REDLOCK_IN_NODES / REDLOCK_IN_NEXT_NODES */
    int skip[REDLOCK_MAX_NODES];       /* --skip: a dead node that is leaving, not written */
    size_t n;
    char old_fp[RL_FP_HEX + 1], new_fp[RL_FP_HEX + 1], joint_fp[RL_FP_HEX + 1];
    char old_ids[1024], new_ids[1024];
} change_t;

/* What each node of the union said of its record. */
typedef struct reading {
    int answered[REDLOCK_MAX_NODES];
    int bad[REDLOCK_MAX_NODES]; /* a record that cannot be parsed: why[] says why */
    char why[REDLOCK_MAX_NODES][160];
    rl_record_t rec[REDLOCK_MAX_NODES];
} reading_t;

typedef struct margs {
    const char *verb;
    const char *skip[REDLOCK_MAX_NODES];
    size_t n_skip;
    int force, json;
} margs_t;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ the change */

/* Parses list into u; an unparsable URI is exit 78, named. */
static int parse_list(cli_t *c, const cli_nodes_t *l, rl_uri_t *u) {
    for (size_t i = 0; i < l->n; i++) {
        char err[300];
        if (rl_uri_parse(l->uri[i], &u[i], err, sizeof err) != REDLOCK_OK) {
            while (i--) rl_uri_clear(&u[i]);
            cli_error(c, "%s", err);
            return CLI_EX_CONFIG;
        }
    }
    return 0;
}

static void change_free(change_t *ch) {
    for (size_t i = 0; i < ch->n_old; i++) rl_uri_clear(&ch->old[i]);
    for (size_t i = 0; i < ch->n_new; i++) rl_uri_clear(&ch->new[i]);
}

/* Adds node u (the caller's uri) of list to the union, or marks the node
 * it already is. */
static void add_union(change_t *ch, const char *uri, const rl_uri_t *u, unsigned list) {
    for (size_t k = 0; k < ch->n; k++)
        if (rl_uri_same_node(ch->parsed[k], u)) {
            ch->lists[k] |= list;
            return;
        }
    ch->uri[ch->n] = uri;
    ch->parsed[ch->n] = u;
    ch->lists[ch->n++] = list;
}

/* Builds the change from the tool's lists (NEW may be empty for show). */
static int change_init(cli_t *c, change_t *ch) {
    memset(ch, 0, sizeof *ch);
    int rc = parse_list(c, &c->nodes, ch->old);
    if (rc) return rc;
    ch->n_old = c->nodes.n;
    if ((rc = parse_list(c, &c->next, ch->new))) return rc;
    ch->n_new = c->next.n;
    for (size_t i = 0; i < ch->n_old; i++) add_union(ch, c->nodes.uri[i], &ch->old[i], REDLOCK_IN_NODES);
    for (size_t i = 0; i < ch->n_new; i++) add_union(ch, c->next.uri[i], &ch->new[i], REDLOCK_IN_NEXT_NODES);
    for (size_t k = 0; k < ch->n; k++) /* a script on a cluster reaches its own slot only: no record is checked */
        if (ch->parsed[k]->cluster)
            return cli_usage_error(c,
                                   "membership: node '%s' is a Redis Cluster, where handles check no record: change "
                                   "a cluster node set with a joint handle alone (doc/membership.md)",
                                   ch->uri[k]);
    if (rl_fingerprint(ch->old, ch->n_old, ch->old_fp) < 0 || rl_fingerprint(ch->new, ch->n_new, ch->new_fp) < 0 ||
        rl_identity_list(ch->old, ch->n_old, ch->old_ids, sizeof ch->old_ids) < 0 ||
        rl_identity_list(ch->new, ch->n_new, ch->new_ids, sizeof ch->new_ids) < 0) {
        cli_error(c, "the node lists are too long to record");
        return CLI_EX_CONFIG;
    }
    rl_fingerprint_joint(ch->old_fp, ch->new_fp, ch->joint_fp);
    return 0;
}

/* Marks the --skip nodes: each must be a node that is leaving (in OLD,
 * not in NEW), at most quorum(OLD) - 1 of them. Returns 0 or 64. */
static int mark_skips(cli_t *c, change_t *ch, const margs_t *m) {
    for (size_t s = 0; s < m->n_skip; s++) {
        rl_uri_t u;
        char err[300];
        if (rl_uri_parse(m->skip[s], &u, err, sizeof err) != REDLOCK_OK)
            return cli_usage_error(c, "membership: --skip: %s", err);
        size_t k = 0;
        while (k < ch->n && !rl_uri_same_node(ch->parsed[k], &u)) k++;
        rl_uri_clear(&u);
        if (k == ch->n || ch->lists[k] != REDLOCK_IN_NODES)
            return cli_usage_error(c,
                                   "membership: --skip '%s': only a node that is leaving (in --nodes, not in "
                                   "--next-nodes) may be skipped",
                                   m->skip[s]);
        ch->skip[k] = 1;
    }
    if (m->n_skip && m->n_skip > redlock_quorum(ch->n_old) - 1)
        return cli_usage_error(c, "membership: %zu nodes skipped: at most %zu (one less than the old list's quorum)",
                               m->n_skip, redlock_quorum(ch->n_old) - 1);
    return 0;
}

/* ------------------------------------------------------------ reading */

static void on_record(void *arg, size_t node, const void *reply) {
    reading_t *rd = arg;
    const redisReply *r = reply;
    if (node >= REDLOCK_MAX_NODES) return;
    rd->answered[node] = 1;
    if (r->type != REDIS_REPLY_ARRAY) {
        rd->bad[node] = 1;
        snprintf(rd->why[node], sizeof rd->why[node], "the record is not a hash (reply type %d)", r->type);
        return;
    }
    const char *f[64];
    size_t len[64], nf = r->elements < 64 ? r->elements : 64;
    for (size_t i = 0; i < nf; i++) {
        f[i] = r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "";
        len[i] = r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->len : 0;
    }
    if (rl_record_parse(f, len, nf, &rd->rec[node], rd->why[node], sizeof rd->why[node]) < 0) rd->bad[node] = 1;
}

/* Reads every node's record (over a plain handle on the union). */
static int read_records(cli_t *c, const change_t *ch, reading_t *rd) {
    redlock_t *rl = NULL;
    int rc = cli_open_over(c, ch->uri, ch->n, NULL, 0, &rl);
    if (rc) return rc;
    memset(rd, 0, sizeof *rd);
    const char *argv[2] = {"HGETALL", RL_MEMBERSHIP_KEY};
    size_t lens[2] = {7, sizeof RL_MEMBERSHIP_KEY - 1};
    static redlock_report_t rep;
    rl_query(rl, 2, argv, lens, on_record, rd, &rep);
    redlock_free(rl);
    return 0;
}

/* ------------------------------------------------------------ the steps */

/* 1 when rec lets verb go on at this node: its record is of this change
 * at a phase the step follows (or repeats), or none for begin (or the end
 * of the change that made OLD). */
static int in_order(const char *verb, const rl_record_t *rec, const change_t *ch) {
    int ours = rec->phase != RL_PHASE_NONE && !strcmp(rec->change, ch->joint_fp);
    if (!strcmp(verb, "begin"))
        return rec->phase == RL_PHASE_NONE || (ours && rec->phase == RL_PHASE_BEGUN) ||
               (!ours && rec->phase == RL_PHASE_FINISHED && rl_record_accepts(rec, ch->old_fp));
    if (!strcmp(verb, "advance")) return ours && rec->phase >= RL_PHASE_BEGUN && rec->phase <= RL_PHASE_ADVANCED;
    return ours && rec->phase >= RL_PHASE_ADVANCED; /* finish */
}

/* Checks every node that is not skipped before anything is written: it
 * answered, its record can be read, and the step is in order there (a
 * record of another change only with --force). Returns 0 or an exit code. */
static int check_nodes(cli_t *c, const change_t *ch, const reading_t *rd, const margs_t *m) {
    for (size_t k = 0; k < ch->n; k++) {
        const rl_record_t *rec = &rd->rec[k];
        if (ch->skip[k]) continue;
        if (!rd->answered[k]) {
            cli_error(c, "membership %s: node '%s' did not answer: no step was written", m->verb, ch->uri[k]);
            return CLI_EX_UNAVAILABLE;
        }
        int other = !rd->bad[k] && rec->phase != RL_PHASE_NONE && strcmp(rec->change, ch->joint_fp) != 0;
        if ((rd->bad[k] || (other && !in_order(m->verb, rec, ch))) && m->force) continue;
        if (rd->bad[k])
            return cli_usage_error(c,
                                   "membership %s: node '%s' holds a record that cannot be read (%s); --force "
                                   "overwrites it",
                                   m->verb, ch->uri[k], rd->why[k]);
        if (other && !in_order(m->verb, rec, ch))
            return cli_usage_error(c,
                                   "membership %s: node '%s' holds the record of another change (phase %s, "
                                   "change %s, from [%s] to [%s]); --force overwrites it",
                                   m->verb, ch->uri[k], rl_phase_name(rec->phase), rec->change, rec->old_list,
                                   rec->new_list);
        if (!in_order(m->verb, rec, ch))
            return cli_usage_error(c, "membership %s: node '%s' %s %s: %s comes %s", m->verb, ch->uri[k],
                                   rec->phase ? "is at phase" : "has no record, phase", rl_phase_name(rec->phase),
                                   m->verb,
                                   !strcmp(m->verb, "begin")     ? "first"
                                   : !strcmp(m->verb, "advance") ? "after begin"
                                                                 : "after advance");
    }
    return 0;
}

/* Writes phase p's record to the nodes of the union whose lists, masked
 * with mask, are want (0, 0: every node), skipped ones aside. Returns 0,
 * or 69 naming a node that did not take it. */
static int write_phase(cli_t *c, const change_t *ch, rl_phase_t p, unsigned mask, unsigned want) {
    const char *uri[REDLOCK_MAX_NODES];
    size_t n = 0;
    for (size_t k = 0; k < ch->n; k++)
        if (!ch->skip[k] && (ch->lists[k] & mask) == want) uri[n++] = ch->uri[k];
    if (!n) return 0;
    rl_record_t rec;
    rl_record_make(&rec, p, ch->old_fp, ch->new_fp, ch->old_ids, ch->new_ids, now_ms());
    char buf[64];
    const char *argv[2 + RL_RECORD_FIELDS * 2];
    size_t lens[2 + RL_RECORD_FIELDS * 2];
    argv[0] = RL_MEMBERSHIP_CHANNEL;
    lens[0] = sizeof RL_MEMBERSHIP_CHANNEL - 1;
    argv[1] = rec.change;
    lens[1] = RL_FP_HEX;
    size_t argc = 2 + rl_record_fields(&rec, buf, argv + 2, lens + 2);
    const char *keys_and_args[3 + RL_RECORD_FIELDS * 2];
    size_t kl[3 + RL_RECORD_FIELDS * 2];
    keys_and_args[0] = RL_MEMBERSHIP_KEY;
    kl[0] = sizeof RL_MEMBERSHIP_KEY - 1;
    memcpy(keys_and_args + 1, argv, argc * sizeof argv[0]);
    memcpy(kl + 1, lens, argc * sizeof lens[0]);
    redlock_t *rl = NULL;
    int rc = cli_open_over(c, uri, n, NULL, 0, &rl);
    if (rc) return rc;
    static redlock_report_t rep;
    rl_query_script(rl, "membership_set", 1, (int)argc + 1, keys_and_args, kl, NULL, NULL, &rep);
    for (size_t i = 0; i < rep.n_nodes && !rc; i++)
        if (rep.nodes[i].vote != REDLOCK_VOTE_YES) {
            cli_error(c, "membership: node '%s' did not take the %s record: %s", uri[i], rl_phase_name(p),
                      rep.nodes[i].detail[0] ? rep.nodes[i].detail : redlock_vote_name(rep.nodes[i].vote));
            rc = CLI_EX_UNAVAILABLE;
        }
    redlock_free(rl);
    if (!rc) printf("%zu node%s now %s (record %s)\n", n, n == 1 ? "" : "s", rl_phase_name(p), rec.change);
    return rc;
}

/* advance: JOINT only, the wait that ends every lock an old handle may
 * hold, then JOINT and NEW. */
static int advance(cli_t *c, const change_t *ch) {
    int rc = write_phase(c, ch, RL_PHASE_JOINT, 0, 0);
    if (rc) return rc;
    unsigned wait = c->opt.max_ttl_ms + REFRESH_MS;
    printf("waiting %u ms (--max-ttl %u ms + the records' refresh, %d ms): every lock an old handle holds ends by "
           "then, and every handle has read the records\n",
           wait, c->opt.max_ttl_ms, REFRESH_MS);
    fflush(stdout);
    struct timespec ts = {.tv_sec = wait / 1000, .tv_nsec = (long)(wait % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) continue; /* (a signal: sleep the rest) */
    return write_phase(c, ch, RL_PHASE_ADVANCED, 0, 0);
}

/* ------------------------------------------------------------ show */

/* Which configuration of rec's change a fingerprint is, in words. */
static const char *config_name(const rl_record_t *rec, const char *fp) {
    return !strcmp(fp, rec->change)   ? "JOINT"
           : !strcmp(fp, rec->old_fp) ? "OLD"
           : !strcmp(fp, rec->new_fp) ? "NEW"
                                      : "?";
}

static void show_text(const change_t *ch, const reading_t *rd, const char *mine) {
    if (ch->n_new)
        printf("this handle: JOINT %s, of OLD %s [%s] and NEW %s [%s]\n", mine, ch->old_fp, ch->old_ids, ch->new_fp,
               ch->new_ids);
    else
        printf("this handle: %s [%s]\n", mine, ch->old_ids);
    for (size_t k = 0; k < ch->n; k++) {
        const rl_record_t *rec = &rd->rec[k];
        printf("  %2zu  %s  %-4s  ", k, ch->uri[k], cli_lists_name(ch->lists[k]));
        if (!rd->answered[k])
            printf("unreachable\n");
        else if (rd->bad[k])
            printf("record unreadable: %s (no vote for anyone)\n", rd->why[k]);
        else if (rec->phase == RL_PHASE_NONE)
            printf("no record: accepts every configuration\n");
        else {
            printf("%s, accepts", rl_phase_name(rec->phase));
            for (size_t i = 0; i < rec->n_accepts; i++)
                printf("%s %s %s", i ? "," : "", config_name(rec, rec->accepts[i]), rec->accepts[i]);
            printf("%s; this handle %s\n", rec->n_accepts ? "" : " nothing",
                   rl_record_accepts(rec, mine) ? "accepted" : "refused");
        }
    }
}

static void show_json(const change_t *ch, const reading_t *rd, const char *mine) {
    printf("{\"fingerprint\":\"%s\",\"old\":\"%s\",\"new\":", mine, ch->old_fp);
    cli_json_str(stdout, ch->n_new ? ch->new_fp : NULL);
    printf(",\"joint\":");
    cli_json_str(stdout, ch->n_new ? ch->joint_fp : NULL);
    printf(",\"nodes\":[");
    for (size_t k = 0; k < ch->n; k++) {
        const rl_record_t *rec = &rd->rec[k];
        printf("%s{\"node\":", k ? "," : "");
        cli_json_str(stdout, ch->uri[k]);
        printf(",\"lists\":\"%s\",\"answered\":%s,\"error\":", cli_lists_name(ch->lists[k]),
               rd->answered[k] ? "true" : "false");
        cli_json_str(stdout, rd->bad[k] ? rd->why[k] : NULL);
        printf(",\"phase\":\"%s\",\"change\":", rl_phase_name(rec->phase));
        cli_json_str(stdout, rec->phase ? rec->change : NULL);
        printf(",\"accepts\":[");
        for (size_t i = 0; i < rec->n_accepts; i++) printf("%s\"%s\"", i ? "," : "", rec->accepts[i]);
        printf("],\"written_ms\":%lld,\"accepts_this_handle\":%s}", rec->written_ms,
               rd->answered[k] && !rd->bad[k] && rl_record_accepts(rec, mine) ? "true" : "false");
    }
    printf("]}\n");
}

/* ------------------------------------------------------------ the command */

/* Reads the step's arguments. Returns -1 to go on, else an exit code. */
static int membership_args(cli_t *c, int argc, char **argv, margs_t *m) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int r;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_print_usage(stdout, c->prog);
            return CLI_EX_OK;
        }
        if (cli_opt_flag(argv, &i, "--json"))
            m->json = 1;
        else if (cli_opt_flag(argv, &i, "--force"))
            m->force = 1;
        else if ((r = cli_opt_value(c, argc, argv, &i, "--skip", &v)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
            if (m->n_skip == REDLOCK_MAX_NODES) return cli_usage_error(c, "membership: too many --skip");
            m->skip[m->n_skip++] = v;
        } else if ((r = cli_global_option(c, argc, argv, &i)) != 0) {
            if (r < 0) return CLI_EX_USAGE;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(c, "membership: unknown option '%s'", a);
        } else if (m->verb) {
            return cli_usage_error(c, "membership: unexpected argument '%s'", a);
        } else {
            m->verb = a;
        }
    }
    static const char *const verbs[] = {"begin", "advance", "finish", "show"};
    for (size_t k = 0; m->verb && k < 4; k++)
        if (!strcmp(m->verb, verbs[k])) return -1;
    return cli_usage_error(c, "membership: %s%s%s (expected begin, advance, finish or show)",
                           m->verb ? "unknown step '" : "missing step", m->verb ? m->verb : "", m->verb ? "'" : "");
}

/* A step: check every node, then write. */
static int run_step(cli_t *c, const change_t *ch, const margs_t *m) {
    reading_t *rd = calloc(1, sizeof *rd);
    if (!rd) return CLI_EX_OSERR;
    int rc = read_records(c, ch, rd);
    if (!rc) rc = check_nodes(c, ch, rd, m);
    free(rd);
    if (rc) return rc;
    if (!strcmp(m->verb, "begin")) return write_phase(c, ch, RL_PHASE_BEGUN, 0, 0);
    if (!strcmp(m->verb, "advance")) return advance(c, ch);
    rc = write_phase(c, ch, RL_PHASE_FINISHED, REDLOCK_IN_NEXT_NODES, REDLOCK_IN_NEXT_NODES);
    return rc ? rc : write_phase(c, ch, RL_PHASE_LEFT, REDLOCK_IN_NEXT_NODES, 0);
}

int cli_cmd_membership(cli_t *c, int argc, char **argv) {
    margs_t m = {0};
    int rc = membership_args(c, argc, argv, &m);
    if (rc >= 0) return rc;
    if ((rc = cli_resolve_nodes(c))) return rc;
    int show = !strcmp(m.verb, "show");
    if (!show && !c->next.n)
        return cli_usage_error(c, "membership %s: give the new list with --next-nodes or REDLOCK_NEXT_NODES", m.verb);
    if (!strcmp(m.verb, "advance") && !c->opt.max_ttl_ms)
        return cli_usage_error(c, "membership advance: --max-ttl DUR is required: the longest TTL an old client uses");
    change_t *ch = calloc(1, sizeof *ch);
    if (!ch) return CLI_EX_OSERR;
    rc = change_init(c, ch);
    if (!rc) rc = mark_skips(c, ch, &m);
    if (!rc && show) {
        reading_t *rd = calloc(1, sizeof *rd);
        rc = rd ? read_records(c, ch, rd) : CLI_EX_OSERR;
        if (!rc) {
            const char *mine = ch->n_new ? ch->joint_fp : ch->old_fp;
            if (m.json)
                show_json(ch, rd, mine);
            else
                show_text(ch, rd, mine);
            for (size_t k = 0; k < ch->n && !rc; k++)
                if (!rd->answered[k]) rc = CLI_EX_UNAVAILABLE;
        }
        free(rd);
    } else if (!rc) {
        rc = run_step(c, ch, &m);
    }
    change_free(ch);
    free(ch);
    return rc;
}
