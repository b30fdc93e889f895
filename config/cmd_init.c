/* SPDX-License-Identifier: MIT */
/*
 * `mcplex init`: write a commented starter config where the other commands
 * look for one (or at -c), mode 0600, never over an existing file unless
 * --force. The starter is a valid config with no servers; `mcplex add` and
 * `mcplex import` fill it in.
 */
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "cli.h"
#include "cmd_config.h"
#include "err.h"
#include "fileio.h"
#include "model.h"

static const char starter[] =
    "# mcplex: one local MCP endpoint in front of your MCP servers.\n"
    "# Every key is described in `man mcplex` and the README; `mcplex check`\n"
    "# validates this file without starting anything.\n"
    "#\n"
    "# Servers are added and removed without editing this file (comments and\n"
    "# layout are kept):\n"
    "#   mcplex add NAME URL        the token is read from stdin into the vault\n"
    "#   mcplex import FILE         the mcpServers of a Claude Code, Claude Desktop\n"
    "#                              or Cursor config, tokens moved into the vault\n"
    "#   mcplex rm NAME\n"
    "# then `mcplex serve`, and `mcplex connect claude|cursor|codex` for clients.\n"
    "\n"
    "[listen]\n"
    "# Clients use https://127.0.0.1:8443/mcp; the local CA and the localhost\n"
    "# certificate are made on the first `mcplex serve`.\n"
    "address = \"127.0.0.1:8443\"\n"
    "tls = true\n"
    "# client_token = \"vault:client\"   # then clients send Authorization: Bearer\n"
    "\n"
    "[proxy]\n"
    "# vault = \"~/.config/mcplex/vault\"     # upstream secrets, a 0600 file\n"
    "# state_dir = \"~/.local/state/mcplex\"  # certificates and caches, no secrets\n"
    "# log_level = \"info\"\n"
    "\n"
    "# One [servers.NAME] table per upstream, reachable alone at /mcp/NAME.\n"
    "#\n"
    "# [servers.files]\n"
    "# url = \"https://files.example.com/mcp\"\n"
    "# secret = \"vault:files\"          # sent as Authorization: Bearer <secret>\n"
    "# auth = \"cookie:session\"         # or header:NAME; the default is bearer\n"
    "#\n"
    "# [servers.scratch]\n"
    "# command = [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"]\n"
    "# env = [\"PATH\", \"HOME\"]         # its whole environment\n";

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex init [-c FILE] [--force]\n"
               "\n"
               "Writes a commented starter config (mode 0600) with [listen] and [proxy]\n"
               "and no servers; `mcplex add` and `mcplex import` add them.\n"
               "\n"
               "  -c, --config FILE  where to write it (default: $MCPLEX_CONFIG, else\n"
               "                     ./mcplex.toml when it exists, else\n"
               "                     $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"
               "  --force            replace an existing file\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 written, 1 failed (or the file exists), 2 usage error.\n");
}

/* The file's directory, made 0700 when missing. */
static int make_dir(const char *path, struct mx_diag *d)
{
    char *copy = mx_xstrdup(path);
    const char *dir = dirname(copy);
    int rc = 0;
    if (access(dir, F_OK) != 0)
        rc = mx_dir_private(dir, d);
    free(copy);
    return rc;
}

int mx_cmd_init(int argc, char **argv)
{
    const char *arg = NULL;
    bool force = false;
    struct mx_diag d;
    char line[1024];

    const struct mx_cli_opt opts[] = {
        {"-c", "--config", &arg, NULL}, {NULL, "--force", NULL, &force}, {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"init", usage, opts, NULL, 0, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    char *path = mx_config_find(arg);
    memset(&d, 0, sizeof(d));
    rc = make_dir(path, &d);
    if (rc == 0)
        rc = mx_file_write(path, starter, sizeof(starter) - 1, 0600,
                           MX_FILE_SYNC | (force ? MX_FILE_REPLACE : 0), &d);
    if (rc == MX_EEXIST) {
        fprintf(stderr,
                "mcplex init: %s already exists; it is left as it is (--force replaces it, "
                "`mcplex add` adds servers to it)\n",
                path);
    } else if (rc) {
        fprintf(stderr, "mcplex init: %s\n", mx_diag_format(&d, line, sizeof(line)));
    } else {
        printf("wrote %s\n"
               "next: mcplex add NAME URL (the token on stdin), or mcplex import FILE;\n"
               "      then mcplex serve, and mcplex connect claude|cursor|codex\n",
               path);
    }
    free(path);
    return rc ? 1 : 0;
}
