/* output.c -- exit codes, JSON strings, token prefixes, per-node reports. */
#include <string.h>

#include "cli.h"

int cli_exit_code(int rc) {
    switch (rc) {
    case REDLOCK_OK: return CLI_EX_OK;
    case REDLOCK_ERR_INVALID: return CLI_EX_USAGE;
    case REDLOCK_ERR_CONFIG:
    case REDLOCK_ERR_MEMBERSHIP: return CLI_EX_CONFIG;
    case REDLOCK_ERR_TAKEN:
    case REDLOCK_ERR_EXPIRED: return CLI_EX_TEMPFAIL;
    case REDLOCK_ERR_NOMEM: return CLI_EX_OSERR;
    default: /* NO_QUORUM, AUTH, IO, TIMEOUT, SERVER, NOT_HELD */ return CLI_EX_UNAVAILABLE;
    }
}

int cli_step_code(int rc) {
    switch (rc) {
    case REDLOCK_OK: return CLI_STEP_OK;
    case REDLOCK_ERR_TAKEN:
    case REDLOCK_ERR_EXPIRED:
    case REDLOCK_ERR_NOT_HELD: return CLI_STEP_REFUSED;
    case REDLOCK_ERR_INVALID:
    case REDLOCK_ERR_CONFIG:
    case REDLOCK_ERR_MEMBERSHIP: return CLI_STEP_BAD_INPUT;
    default: /* NO_QUORUM, AUTH, IO, TIMEOUT, SERVER, QUARANTINED, NOMEM */ return CLI_STEP_NO_QUORUM;
    }
}

int cli_step_exit(int ex) {
    if (ex == CLI_EX_OK) return CLI_STEP_OK;
    if (ex == CLI_EX_USAGE || ex == CLI_EX_CONFIG) return CLI_STEP_BAD_INPUT;
    return ex == CLI_EX_TEMPFAIL ? CLI_STEP_REFUSED : CLI_STEP_NO_QUORUM;
}

/* 1 when b may follow the lead byte lead in well-formed UTF-8 (RFC 3629):
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static int second_byte_ok(unsigned char lead, unsigned char b) {
    if (lead == 0xe0) return b >= 0xa0 && b <= 0xbf;
    if (lead == 0xed) return b >= 0x80 && b <= 0x9f;
    if (lead == 0xf0) return b >= 0x90 && b <= 0xbf;
    if (lead == 0xf4) return b >= 0x80 && b <= 0x8f;
    return (b & 0xc0) == 0x80;
}

void cli_json_strn(FILE *f, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (ch < 0x20 || ch == 0x7f) {
                fprintf(f, "\\u00%c%c", hex[ch >> 4], hex[ch & 15]);
            } else if (ch < 0x80) {
                fputc(ch, f);
            } else {
                /* pass well-formed UTF-8 through; any other byte becomes U+FFFD */
                size_t len = (ch & 0xe0) == 0xc0 ? 2 : (ch & 0xf0) == 0xe0 ? 3 : (ch & 0xf8) == 0xf0 ? 4 : 0;
                size_t k = 1;
                while (len && k < len && i + k < n && ((unsigned char)s[i + k] & 0xc0) == 0x80) k++;
                if (len && k == len && ch >= 0xc2 && ch <= 0xf4 && second_byte_ok(ch, (unsigned char)s[i + 1])) {
                    fwrite(s + i, 1, len, f);
                    i += len - 1;
                } else {
                    fputs("\\ufffd", f);
                }
            }
        }
    }
    fputc('"', f);
}

void cli_json_str(FILE *f, const char *s) {
    if (!s)
        fputs("null", f);
    else
        cli_json_strn(f, s, strlen(s));
}

void cli_prefix(char *out, const char *v, size_t n) {
    size_t k = 0;
    for (; k < n && k < CLI_TOKEN_PREFIX; k++) {
        unsigned char ch = (unsigned char)v[k];
        out[k] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    out[k] = '\0';
}

void cli_node_label(const redlock_node_report_t *nr, char *buf, size_t n) {
    const char *node = nr->node ? nr->node : "?";
    if (nr->address[0])
        snprintf(buf, n, "%s -> %s", node, nr->address);
    else
        snprintf(buf, n, "%s", node);
}

int cli_node_width(const redlock_report_t *rep, int min) {
    int w = min;
    for (size_t i = 0; i < rep->n_nodes; i++) {
        char label[CLI_LABEL_LEN];
        cli_node_label(&rep->nodes[i], label, sizeof label);
        int len = (int)strlen(label);
        if (len > w) w = len;
    }
    return w;
}

const char *cli_lists_name(unsigned lists) {
    return lists == (REDLOCK_IN_NODES | REDLOCK_IN_NEXT_NODES) ? "both"
           : lists == REDLOCK_IN_NEXT_NODES                    ? "new"
                                                               : "old";
}

void cli_print_report(FILE *f, const redlock_report_t *rep) {
    int w = cli_node_width(rep, 4);
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const redlock_node_report_t *nr = &rep->nodes[i];
        char label[CLI_LABEL_LEN];
        cli_node_label(nr, label, sizeof label);
        fprintf(f, "  %2zu  %-*s  ", i, w, label);
        if (rep->n_lists == 2) fprintf(f, "%-4s  ", cli_lists_name(nr->lists));
        fprintf(f, "%-7s", redlock_vote_name(nr->vote));
        if (nr->rtt_us >= 0)
            fprintf(f, "  %8lld us", (long long)nr->rtt_us);
        else
            fprintf(f, "  %11s", "-");
        if (nr->detail[0]) fprintf(f, "  %s", nr->detail);
        fputc('\n', f);
    }
}

void cli_json_nodes(FILE *f, const redlock_report_t *rep) {
    fputs("\"nodes\":[", f);
    for (size_t i = 0; i < rep->n_nodes; i++) {
        const redlock_node_report_t *nr = &rep->nodes[i];
        fprintf(f, "%s{\"index\":%zu,\"node\":", i ? "," : "", i);
        cli_json_str(f, nr->node);
        fprintf(f, ",\"vote\":\"%s\",\"rtt_us\":", redlock_vote_name(nr->vote));
        if (nr->rtt_us >= 0)
            fprintf(f, "%lld", (long long)nr->rtt_us);
        else
            fputs("null", f);
        fputs(",\"error\":", f);
        cli_json_str(f, nr->detail[0] ? nr->detail : NULL);
        if (rep->n_lists == 2) fprintf(f, ",\"lists\":\"%s\"", cli_lists_name(nr->lists));
        fputc('}', f);
    }
    fputc(']', f);
}
