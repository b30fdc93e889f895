/* SPDX-License-Identifier: MIT */
/*
 * `mcplex connect claude|cursor|codex [--write]`: the entry one client
 * needs for the gateway the config describes (snippet.c makes it), printed,
 * or merged into that client's own config file: the mcpServers member of a
 * JSON file (every other member kept), or Codex's [mcp_servers.NAME] table
 * (every other line kept, through cfgedit).
 */
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc.h"
#include "cfgedit.h"
#include "cli.h"
#include "cmd.h"
#include "err.h"
#include "fileio.h"
#include "model.h"
#include "path.h"
#include "snippet.h"

#define CLIENT_FILE_MAX (64 * 1024 * 1024) /* ~/.claude.json keeps history too */

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex connect claude|cursor|codex [--write [--file PATH]] [--name NAME]\n"
               "                      [-c FILE]\n"
               "\n"
               "Prints the entry the client needs for the gateway this config describes\n"
               "(its /mcp URL, the client token from $MCPLEX_TOKEN when [listen] sets one)\n"
               "and the line that makes the client trust mcplex's local CA. With --write\n"
               "the entry goes into the client's config file; its other entries are kept:\n"
               "  claude  ~/.claude.json (or $CLAUDE_CONFIG_DIR/.claude.json), mcpServers\n"
               "  cursor  ~/.cursor/mcp.json, mcpServers\n"
               "  codex   ~/.codex/config.toml (or $CODEX_HOME/config.toml), [mcp_servers.NAME]\n"
               "\n"
               "  --write            write the entry instead of printing it\n"
               "  --file PATH        the client config file to write (e.g. a project's .mcp.json)\n"
               "  --name NAME        the entry's name (default: mcplex)\n"
               "  -c, --config FILE  the mcplex config (default: as `mcplex check` finds it)\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 done, 1 failed, 2 usage error.\n");
}

static char *client_file(enum mx_client c)
{
    const char *dir;
    switch (c) {
    case MX_CLIENT_CLAUDE:
        dir = getenv("CLAUDE_CONFIG_DIR");
        return dir && dir[0] ? mx_xasprintf("%s/.claude.json", dir)
                             : mx_path_expand("~/.claude.json");
    case MX_CLIENT_CURSOR:
        return mx_path_expand("~/.cursor/mcp.json");
    case MX_CLIENT_CODEX:
        dir = getenv("CODEX_HOME");
        return dir && dir[0] ? mx_xasprintf("%s/config.toml", dir)
                             : mx_path_expand("~/.codex/config.toml");
    }
    return NULL;
}

/* The client file's text, "" when it does not exist yet (then its
 * directory is made, 0700). Returns 0, or 1 after printing why. */
static int read_client_file(const char *path, char **text, size_t *len)
{
    struct mx_diag d = {0};
    char msg[1024];
    int rc = mx_cfgedit_read(path, CLIENT_FILE_MAX, text, len, &d);
    if (rc == MX_ENOTFOUND) {
        char *copy = mx_xstrdup(path);
        const char *dir = dirname(copy);
        rc = access(dir, F_OK) == 0 ? 0 : mx_dir_private(dir, &d);
        free(copy);
        if (rc == 0) {
            *text = mx_xstrdup("");
            *len = 0;
            return 0;
        }
    }
    if (rc) {
        fprintf(stderr, "mcplex connect: %s\n", mx_diag_format(&d, msg, sizeof(msg)));
        return 1;
    }
    return 0;
}

/* |text| with mcpServers.|name| set to |entry| (stolen): a new string, or
 * NULL after printing why (not a JSON object). */
static char *merge_json(const char *path, const char *text, size_t len, const char *name,
                        json_t *entry)
{
    json_error_t err;
    json_t *root = len ? json_loadb(text, len, 0, &err) : json_object();
    char *out = NULL;
    if (root == NULL) {
        /* the position only: jansson's text quotes the bytes near it, which
         * may be a token */
        fprintf(stderr, "mcplex connect: %s:%d:%d: not valid JSON; it is left as it is\n", path,
                err.line, err.column);
        goto out;
    }
    if (!json_is_object(root)) {
        fprintf(stderr, "mcplex connect: %s is not a JSON object; it is left as it is\n", path);
        goto out;
    }
    json_t *servers = json_object_get(root, "mcpServers");
    if (servers == NULL) {
        servers = json_object();
        json_object_set_new(root, "mcpServers", servers);
    } else if (!json_is_object(servers)) {
        fprintf(stderr,
                "mcplex connect: %s: \"mcpServers\" is not an object; it is left as it is\n", path);
        goto out;
    }
    json_object_set(servers, name, entry);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    out = mx_xasprintf("%s\n", s);
    free(s);
out:
    json_decref(root);
    json_decref(entry);
    return out;
}

static int write_entry(enum mx_client c, const char *path, const char *name,
                       const struct mx_config *cfg)
{
    char *url, *ca, *text = NULL, *out = NULL;
    size_t len = 0, out_len = 0;
    struct mx_diag d = {0};
    char msg[1024];
    int status = 1;
    if (mx_snippet_target(cfg, &url, &ca) != 0)
        return 1;
    const char *token_env = cfg->listen.client_token_ref ? MX_SNIPPET_TOKEN_ENV : NULL;
    if (read_client_file(path, &text, &len) != 0)
        goto out;
    if (c == MX_CLIENT_CODEX) {
        struct mx_cfgedit_span span;
        char *table = mx_xasprintf("mcp_servers.%s", name);
        char *block = mx_snippet_codex(name, url, token_env);
        if (mx_cfgedit_find(text, len, table, &span) == 0) {
            char *cut = mx_cfgedit_cut(text, len, &span, &len);
            free(text);
            text = cut;
        }
        out = mx_cfgedit_append(text, len, block, &out_len);
        free(block);
        free(table);
    } else {
        out = merge_json(path, text, len, name, mx_snippet_json(c, url, token_env));
        out_len = out ? strlen(out) : 0;
    }
    if (out == NULL)
        goto out;
    if (mx_cfgedit_write(path, out, out_len, &d) != 0) {
        fprintf(stderr, "mcplex connect: %s\n", mx_diag_format(&d, msg, sizeof(msg)));
        goto out;
    }
    printf("wrote the %s entry (%s) into %s; its other entries are kept\n", name, url, path);
    if (token_env)
        printf("the client reads the client token from $" MX_SNIPPET_TOKEN_ENV "\n");
    if (ca) {
        printf("the client trusts mcplex's local CA when it starts with:\n");
        mx_snippet_ca(stdout, c, ca);
        putchar('\n');
    }
    status = 0;
out:
    free(out);
    free(text);
    free(url);
    free(ca);
    return status;
}

int mx_cmd_connect(int argc, char **argv)
{
    const char *cfg_arg = NULL, *file = NULL, *name = "mcplex";
    const char *pos[1];
    bool write = false;
    const struct mx_cli_opt opts[] = {{"-c", "--config", &cfg_arg, NULL},
                                      {NULL, "--file", &file, NULL},
                                      {NULL, "--name", &name, NULL},
                                      {NULL, "--write", NULL, &write},
                                      {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"connect", usage, opts, pos, 1, 0};
    enum mx_client c;
    struct mx_config *cfg;
    struct mx_diag d = {0};
    char msg[1024];

    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    if (cli.pos_cnt != 1 || mx_snippet_client(pos[0], &c) != 0) {
        usage(stderr);
        return 2;
    }
    if (file && !write) {
        fprintf(stderr, "mcplex connect: --file goes with --write\n");
        return 2;
    }
    if (mx_config_name_check(name) != NULL) {
        fprintf(stderr, "mcplex connect: --name '%s' %s\n", name, mx_config_name_check(name));
        return 2;
    }
    if (mx_config_open(cfg_arg, &cfg, &d) != 0) {
        fprintf(stderr, "mcplex connect: %s\n", mx_diag_format(&d, msg, sizeof(msg)));
        return 1;
    }
    if (write) {
        char *path = file ? mx_path_expand(file) : client_file(c);
        rc = write_entry(c, path, name, cfg);
        free(path);
    } else {
        rc = mx_snippet_for_config(stdout, c, name, cfg) ? 1 : 0;
    }
    mx_config_free(cfg);
    return rc;
}
