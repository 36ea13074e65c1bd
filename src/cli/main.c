/* main.c -- the redlock tool's entry point: global options before the
 * command name, --help / --version, and dispatch to the subcommands. */
#include <string.h>

#include "cli.h"

#define CLI_COMMANDS "exec, acquire, extend, release, status, ping, stats or membership"

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
            rc = cli_usage_error(&c, "expected a command (%s) before '--'", CLI_COMMANDS);
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
        rc = cli_usage_error(&c, "missing command: %s", CLI_COMMANDS);
        goto out;
    }
    const char *cmd = argv[i];
    static const struct {
        const char *name;
        int (*run)(cli_t *, int, char **);
    } cmds[] = {{"exec", cli_cmd_exec},       {"status", cli_cmd_status},        {"ping", cli_cmd_ping},
                {"acquire", cli_cmd_acquire}, {"extend", cli_cmd_extend},        {"release", cli_cmd_release},
                {"stats", cli_cmd_stats},     {"membership", cli_cmd_membership}};
    size_t k = 0;
    while (k < sizeof cmds / sizeof cmds[0] && strcmp(cmd, cmds[k].name)) k++;
    if (k < sizeof cmds / sizeof cmds[0])
        rc = cmds[k].run(&c, argc - i, argv + i);
    else if (!strcmp(cmd, "help")) {
        cli_print_usage(stdout, c.prog);
        rc = CLI_EX_OK;
    } else
        rc = cli_usage_error(&c, "unknown command '%s' (expected %s)", cmd, CLI_COMMANDS);
out:
    cli_free_nodes(&c.nodes);
    cli_free_nodes(&c.next);
    return rc;
}
