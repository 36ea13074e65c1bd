/* tokenarg.c -- where the extend and release steps get their token: the
 * command line, an environment variable (--token-env NAME) or the first
 * line of standard input (--token-stdin). A token on the command line can
 * be read by every local user while the command runs (ps, /proc/PID/
 * cmdline); a process's environment only by its user and root; a pipe by
 * no one else. Messages about a bad token never show any of it. */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "token.h"

/* Reads the first line of stdin into buf (n bytes), without its line end.
 * Returns 0, or -1 on a read error or an empty input. */
static int stdin_line(char *buf, size_t n) {
    if (!fgets(buf, (int)n, stdin)) return -1;
    size_t len = strlen(buf);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
    return 0;
}

/* Counts the token sources given. */
static int sources(const cli_token_src_t *src) {
    return (src->arg != NULL) + (src->env != NULL) + (src->from_stdin != 0);
}

int cli_read_token(const cli_t *c, const char *cmd, const cli_token_src_t *src, char *out) {
    char line[128] = "", msg[160];
    const char *v = src->arg, *from = "the command line";
    if (sources(src) != 1)
        return cli_usage_error(c, "%s: %s", cmd,
                               sources(src) ? "give the token one way only (TOKEN, --token-env or "
                                              "--token-stdin)"
                                            : "missing TOKEN (or --token-env NAME, --token-stdin)");
    if (src->env && !(v = getenv(src->env))) {
        cli_error(c, "%s: environment variable %s (--token-env) is not set", cmd, src->env);
        return CLI_EX_USAGE;
    }
    if (src->env) from = "the environment";
    if (src->from_stdin) {
        from = "standard input";
        if (stdin_line(line, sizeof line) < 0) {
            cli_error(c, "%s: --token-stdin: no token on standard input", cmd);
            return CLI_EX_USAGE;
        }
        v = line;
    }
    int bad = rl_token_check(v, msg, sizeof msg) < 0;
    if (!bad) memcpy(out, v, REDLOCK_TOKEN_LEN + 1);
    sodium_memzero(line, sizeof line);
    if (bad) {
        cli_error(c, "%s: bad token from %s: %s", cmd, from, msg);
        return CLI_EX_USAGE;
    }
    return 0;
}
