/* main.c -- the redlock tool's entry point: global options before the
 * command name, --help / --version, and dispatch to the subcommands. */
#include <string.h>

#include "cli.h"

int main(int argc, char **argv) {
    cli_t c;
    memset(&c, 0, sizeof c);
    c.prog = "redlock";
    redlock_options_init(&c.opt);
    int rc = CLI_EX_USAGE, i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_print_usage(stdout, c.prog);
            rc = fflush(stdout) == 0 ? CLI_EX_OK : CLI_EX_OSERR;
            goto out;
        }
        if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("%s %s (libredlock %s)\n", c.prog, REDLOCK_VERSION, REDLOCK_VERSION);
            rc = fflush(stdout) == 0 ? CLI_EX_OK : CLI_EX_OSERR;
            goto out;
        }
        if (a[0] != '-' || a[1] == '\0') break; /* the command name */
        if (!strcmp(a, "--")) {
            rc = cli_usage_error(&c, "expected a command (exec, status or ping) before '--'");
            goto out;
        }
        int r = cli_global_option(&c, argc, argv, &i);
        if (r < 0) goto out;
        if (r == 0) {
            rc = cli_usage_error(&c, "unknown option '%s'", a);
            goto out;
        }
    }
    if (i >= argc) {
        rc = cli_usage_error(&c, "missing command: exec, status or ping");
        goto out;
    }
    const char *cmd = argv[i];
    if (!strcmp(cmd, "exec")) rc = cli_cmd_exec(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "status")) rc = cli_cmd_status(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "ping")) rc = cli_cmd_ping(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "help")) {
        cli_print_usage(stdout, c.prog);
        rc = CLI_EX_OK;
    } else rc = cli_usage_error(&c, "unknown command '%s' (expected exec, status or ping)", cmd);
out:
    cli_free_nodes(&c);
    return rc;
}
