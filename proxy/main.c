/* SPDX-License-Identifier: MIT */
/* argv → subcommand. Each command lives in its own cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static const struct mx_cmd cmds[] = {
    {"init", "write a commented starter config", mx_cmd_init},
    {"add", "add a server to the config (its token into the vault)", mx_cmd_add},
    {"rm", "remove a server from the config", mx_cmd_rm},
    {"import", "take the servers of a client's mcpServers JSON", mx_cmd_import},
    {"connect", "print or write a client's entry for mcplex", mx_cmd_connect},
    {"serve", "run the gateway in the foreground", mx_cmd_serve},
    {"check", "validate the config and its secret references", mx_cmd_check},
    {"vault", "set, list or remove vault secrets", mx_cmd_vault},
    {"certs", "make or show the local CA and localhost certificate", mx_cmd_certs},
    {"status", "show a running gateway's upstreams and listener", mx_cmd_status},
    {"reload", "make a running gateway re-read its config and vault", mx_cmd_reload},
    {"stdio", "serve the aggregate to one client on stdin/stdout", mx_cmd_stdio},
    {"bench", "measure each upstream directly and through the gateway", mx_cmd_bench},
    {"doctor", "check every upstream, the gateway, the CA and file modes", mx_cmd_doctor},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\nmcplex <command> --help for the options of one command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("mcplex %s\n", MX_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "mcplex: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
