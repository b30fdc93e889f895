/* SPDX-License-Identifier: MIT */
/*
 * `mcplex vault set NAME | list | rm NAME`. A value is read from stdin only,
 * never from argv (which other users can see in ps), with the terminal echo
 * off when stdin is a terminal. The vault file is found from --vault, else
 * the config's [proxy] vault, else the default path.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cli.h"
#include "cmd_config.h"
#include "model.h"
#include "path.h"
#include "vault.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mcplex vault [--vault PATH] [-c FILE] set NAME\n"
            "       mcplex vault [--vault PATH] [-c FILE] list\n"
            "       mcplex vault [--vault PATH] [-c FILE] rm NAME\n"
            "\n"
            "Keeps upstream secrets in the vault file (mode 0600), for references\n"
            "such as secret = \"vault:NAME\". NAME is 1 to 64 characters from\n"
            "A-Za-z0-9_.-.\n"
            "\n"
            "  set NAME           store the value read from stdin (one trailing\n"
            "                     newline is dropped; an empty value is refused)\n"
            "  list               print the names, never the values\n"
            "  rm NAME            remove an entry\n"
            "  --vault PATH       the vault file to use\n"
            "  -c, --config FILE  take the vault path from this config's [proxy] vault\n"
            "                     (default: the config mcplex check would find, else\n"
            "                     %s)\n"
            "  -h, --help         this text\n"
            "\n"
            "Exit status: 0 done, 1 failed, 2 usage error.\n",
            "$XDG_CONFIG_HOME/mcplex/vault, XDG default ~/.config");
}

/* Returns a new path, or NULL after printing why. */
static char *vault_path(const char *vault_arg, const char *config_arg)
{
    struct mx_config *cfg;
    struct mx_diag d;
    char line[1024];

    if (vault_arg)
        return mx_path_expand(vault_arg);
    char *cfg_path = mx_config_find(config_arg);
    if (config_arg == NULL && access(cfg_path, F_OK) != 0) {
        free(cfg_path);
        return mx_vault_default_path();
    }
    memset(&d, 0, sizeof(d));
    int rc = mx_config_load(cfg_path, &cfg, &d);
    free(cfg_path);
    if (rc) {
        fprintf(stderr, "%s\n", mx_diag_format(&d, line, sizeof(line)));
        fprintf(stderr, "mcplex vault: cannot tell which vault to use; pass --vault PATH\n");
        return NULL;
    }
    char *path = mx_xstrdup(cfg->proxy.vault);
    mx_config_free(cfg);
    return path;
}

static int do_set(const char *path, const char *name)
{
    struct mx_diag d;
    char line[1024];
    size_t len;
    int status = 1;

    if (!mx_vault_name_is_valid(name)) {
        fprintf(stderr, "mcplex vault: invalid name '%s' (1 to 64 characters from A-Za-z0-9_.-)\n",
                name);
        return 2;
    }
    char *buf = mx_cli_read_secret("vault", name, &len);
    if (buf == NULL)
        return 1;
    memset(&d, 0, sizeof(d));
    if (mx_vault_set(path, name, buf, len, &d) != 0) {
        fprintf(stderr, "%s\n", mx_diag_format(&d, line, sizeof(line)));
        goto out;
    }
    printf("stored '%s' in %s\n", name, path);
    status = 0;
out:
    mx_cli_secret_free(buf);
    return status;
}

static int do_list(const char *path)
{
    struct mx_diag d;
    char line[1024];
    char **names;
    size_t cnt;

    memset(&d, 0, sizeof(d));
    if (mx_vault_list(path, &names, &cnt, &d) != 0) {
        fprintf(stderr, "%s\n", mx_diag_format(&d, line, sizeof(line)));
        return 1;
    }
    for (size_t i = 0; i < cnt; i++)
        printf("%s\n", names[i]);
    if (cnt == 0)
        fprintf(stderr, "mcplex vault: %s holds no secrets\n", path);
    mx_vault_names_free(names, cnt);
    return 0;
}

static int do_rm(const char *path, const char *name)
{
    struct mx_diag d;
    char line[1024];

    if (!mx_vault_name_is_valid(name)) {
        fprintf(stderr, "mcplex vault: invalid name '%s' (1 to 64 characters from A-Za-z0-9_.-)\n",
                name);
        return 2;
    }
    memset(&d, 0, sizeof(d));
    if (mx_vault_remove(path, name, &d) != 0) {
        fprintf(stderr, "%s\n", mx_diag_format(&d, line, sizeof(line)));
        return 1;
    }
    printf("removed '%s' from %s\n", name, path);
    return 0;
}

int mx_cmd_vault(int argc, char **argv)
{
    const char *vault_arg = NULL, *config_arg = NULL;
    const char *pos[3];
    const struct mx_cli_opt opts[] = {{NULL, "--vault", &vault_arg, NULL},
                                      {"-c", "--config", &config_arg, NULL},
                                      {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"vault", usage, opts, pos, 3, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    int npos = cli.pos_cnt;
    const char *sub = npos ? pos[0] : NULL;
    bool named = sub && (strcmp(sub, "set") == 0 || strcmp(sub, "rm") == 0);
    if (sub == NULL || (named && npos != 2) ||
        (!named && (strcmp(sub, "list") != 0 || npos != 1))) {
        usage(stderr);
        return 2;
    }
    char *path = vault_path(vault_arg, config_arg);
    if (path == NULL)
        return 1;
    int status;
    if (strcmp(sub, "set") == 0)
        status = do_set(path, pos[1]);
    else if (strcmp(sub, "rm") == 0)
        status = do_rm(path, pos[1]);
    else
        status = do_list(path);
    free(path);
    return status;
}
