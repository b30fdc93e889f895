/* SPDX-License-Identifier: MIT */
/*
 * `mcplex add`, `mcplex rm` and `mcplex import`: servers added to and
 * removed from the config without editing it by hand. Each edits the file in
 * place through cfgedit (the table's own lines only; comments and layout
 * elsewhere stay byte for byte), checks the result as `serve` would load it
 * before the rename (mx_config_commit), keeps tokens in the vault and never
 * in the TOML, argv or output, then reloads a running gateway as `mcplex
 * reload` does.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "alloc.h"
#include "cfgedit.h"
#include "cli.h"
#include "cmd.h"
#include "err.h"
#include "model.h"
#include "path.h"
#include "snippet.h"
#include "toml.h"
#include "vault.h"

#define IMPORT_FILE_MAX (64 * 1024 * 1024) /* ~/.claude.json keeps history too */

/* The config text at |path| and its model; 0, or 1 after printing why. */
static int open_config(const char *cmd, const char *path, char **text, size_t *len,
                       struct mx_config **cfg)
{
    struct mx_diag d = {0};
    char msg[1024];
    int rc = mx_cfgedit_read(path, MX_TOML_MAX_INPUT, text, len, &d);
    if (rc == MX_ENOTFOUND) {
        fprintf(stderr, "mcplex %s: no config at %s; `mcplex init` writes a starter one\n", cmd,
                path);
        return 1;
    }
    if (rc == 0 && cfg && mx_config_parse(path, *text, *len, cfg, &d) != 0) {
        fprintf(stderr, "mcplex %s: %s\nmcplex %s: the config must load before it is edited\n", cmd,
                mx_diag_format(&d, msg, sizeof(msg)), cmd);
        rc = 1;
    } else if (rc) {
        fprintf(stderr, "mcplex %s: %s\n", cmd, mx_diag_format(&d, msg, sizeof(msg)));
    }
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc ? 1 : 0;
}

/* Whether |text| loads as a config; says why not, and that |path| is kept. */
static bool would_load(const char *cmd, const char *path, const char *text, size_t len,
                       struct mx_config **cfg)
{
    struct mx_diag d = {0};
    char msg[1024];
    if (mx_config_parse(path, text, len, cfg, &d) == 0)
        return true;
    fprintf(stderr, "mcplex %s: the result would not load: %s\nmcplex %s: %s is not changed\n", cmd,
            mx_diag_format(&d, msg, sizeof(msg)), cmd, path);
    return false;
}

static int commit(const char *cmd, const char *path, const char *text, size_t len,
                  const char *const *names, size_t cnt)
{
    struct mx_diag d = {0};
    char msg[1024];
    if (mx_config_commit(path, text, len, names, cnt, &d) == 0)
        return 0;
    fprintf(stderr, "mcplex %s: %s\nmcplex %s: %s is not changed\n", cmd,
            mx_diag_format(&d, msg, sizeof(msg)), cmd, path);
    return 1;
}

static int store(const char *cmd, const char *vault, const char *name, const char *value,
                 size_t len)
{
    struct mx_diag d = {0};
    char msg[1024];
    if (mx_vault_set(vault, name, value, len, &d) == 0)
        return 0;
    fprintf(stderr, "mcplex %s: %s\n", cmd, mx_diag_format(&d, msg, sizeof(msg)));
    return 1;
}

/* ---- add ---------------------------------------------------------------- */

static void add_usage(FILE *f)
{
    fprintf(f, "usage: mcplex add NAME URL [--bearer | --cookie NAME | --header NAME | --no-auth]\n"
               "                  [--secret REF] [--sse] [-c FILE]\n"
               "\n"
               "Appends a [servers.NAME] table to the config, keeping the rest of the file\n"
               "as it is, checks that the result loads, and reloads a running gateway.\n"
               "Without --secret the token is read from stdin (not echoed on a terminal)\n"
               "and stored in the vault as NAME; the config then says secret = \"vault:NAME\".\n"
               "\n"
               "  --bearer           send it as Authorization: Bearer <token> (the default)\n"
               "  --cookie NAME      send it as the cookie NAME\n"
               "  --header NAME      send it as the header NAME\n"
               "  --no-auth          the server needs no credential\n"
               "  --secret REF       a secret reference (vault:, env:, file:, cmd:) instead\n"
               "                     of a token on stdin\n"
               "  --sse              the URL speaks the legacy HTTP+SSE transport\n"
               "  -c, --config FILE  the config (default: as `mcplex check` finds it)\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 added, 1 failed (the config is then as it was), 2 usage error.\n");
}

/* The [servers.NAME] table; |auth| NULL for the default, |ref| NULL for none. */
static char *server_block(const char *name, const char *url, bool sse, const char *auth,
                          const char *ref)
{
    char *q_url = mx_cfgedit_quote(url);
    char *q_auth = auth ? mx_cfgedit_quote(auth) : NULL;
    char *q_ref = ref ? mx_cfgedit_quote(ref) : NULL;
    char *b = mx_xasprintf("[servers.%s]\nurl = %s\n%s%s%s%s%s%s%s", name, q_url,
                           sse ? "transport = \"sse\"\n" : "", q_auth ? "auth = " : "",
                           q_auth ? q_auth : "", q_auth ? "\n" : "", q_ref ? "secret = " : "",
                           q_ref ? q_ref : "", q_ref ? "\n" : "");
    free(q_url);
    free(q_auth);
    free(q_ref);
    return b;
}

int mx_cmd_add(int argc, char **argv)
{
    const char *cfg_arg = NULL, *cookie = NULL, *header = NULL, *secret = NULL;
    bool bearer = false, no_auth = false, sse = false;
    const char *pos[2];
    const struct mx_cli_opt opts[] = {
        {"-c", "--config", &cfg_arg, NULL}, {NULL, "--cookie", &cookie, NULL},
        {NULL, "--header", &header, NULL},  {NULL, "--secret", &secret, NULL},
        {NULL, "--bearer", NULL, &bearer},  {NULL, "--no-auth", NULL, &no_auth},
        {NULL, "--sse", NULL, &sse},        {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"add", add_usage, opts, pos, 2, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    if (cli.pos_cnt != 2) {
        add_usage(stderr);
        return 2;
    }
    const char *name = pos[0], *url = pos[1];
    const char *why = mx_config_name_check(name);
    if (why) {
        fprintf(stderr, "mcplex add: server name '%s' %s\n", name, why);
        return 2;
    }
    if ((int)bearer + (cookie != NULL) + (header != NULL) + (int)no_auth > 1) {
        fprintf(stderr, "mcplex add: give one of --bearer, --cookie, --header, --no-auth\n");
        return 2;
    }
    if (no_auth && secret) {
        fprintf(stderr, "mcplex add: --no-auth and --secret contradict each other\n");
        return 2;
    }

    char *path = mx_config_find(cfg_arg), *text = NULL, *next = NULL, *block = NULL;
    char *auth = NULL, *ref = NULL, *token = NULL;
    struct mx_config *cfg = NULL, *edited = NULL;
    size_t len, next_len, token_len = 0;
    int status = 1;
    if (open_config("add", path, &text, &len, &cfg) != 0)
        goto out;
    const struct mx_server_cfg *old = mx_config_server(cfg, name);
    if (old) {
        fprintf(stderr,
                "mcplex add: server '%s' already exists in %s (line %d); `mcplex rm %s` removes "
                "it\n",
                name, path, old->line, name);
        goto out;
    }
    if (cookie)
        auth = mx_xasprintf("cookie:%s", cookie);
    else if (header)
        auth = mx_xasprintf("header:%s", header);
    if (!no_auth)
        ref = secret ? mx_xstrdup(secret) : mx_xasprintf("vault:%s", name);
    block = server_block(name, url, sse, auth, ref);
    next = mx_cfgedit_append(text, len, block, &next_len);
    if (!would_load("add", path, next, next_len, &edited))
        goto out;
    if (!no_auth && secret == NULL) {
        token = mx_cli_read_secret("add", name, &token_len);
        if (token == NULL) {
            fprintf(stderr,
                    "mcplex add: give the token on stdin, a reference with --secret REF, "
                    "or --no-auth for a server that needs none; %s is not changed\n",
                    path);
            goto out;
        }
        if (store("add", edited->proxy.vault, name, token, token_len) != 0)
            goto out;
        printf("stored the token as vault:%s in %s\n", name, edited->proxy.vault);
    }
    const char *names[] = {name};
    if (commit("add", path, next, next_len, names, 1) != 0)
        goto out;
    printf("added server '%s' (%s) to %s\n", name, url, path);
    status = mx_reload_after_edit(path);
out:
    mx_cli_secret_free(token);
    mx_config_free(cfg);
    mx_config_free(edited);
    free(auth);
    free(ref);
    free(block);
    free(next);
    free(text);
    free(path);
    return status;
}

/* ---- rm ----------------------------------------------------------------- */

static void rm_usage(FILE *f)
{
    fprintf(f, "usage: mcplex rm NAME [-c FILE]\n"
               "\n"
               "Removes the [servers.NAME] table from the config (with the comment lines\n"
               "directly above it), keeping the rest of the file as it is, checks that the\n"
               "result loads, and reloads a running gateway. A vault entry the server used\n"
               "stays; `mcplex vault rm` removes it.\n"
               "\n"
               "  -c, --config FILE  the config (default: as `mcplex check` finds it)\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 removed, 1 failed (the config is then as it was), 2 usage error.\n");
}

int mx_cmd_rm(int argc, char **argv)
{
    const char *cfg_arg = NULL;
    const char *pos[1];
    const struct mx_cli_opt opts[] = {{"-c", "--config", &cfg_arg, NULL}, {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"rm", rm_usage, opts, pos, 1, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    if (cli.pos_cnt != 1) {
        rm_usage(stderr);
        return 2;
    }
    const char *name = pos[0];
    char *path = mx_config_find(cfg_arg), *text = NULL, *next = NULL, *table = NULL;
    struct mx_config *cfg = NULL;
    struct mx_cfgedit_span span;
    size_t len, next_len;
    int status = 1;
    if (open_config("rm", path, &text, &len, &cfg) != 0)
        goto out;
    table = mx_xasprintf("servers.%s", name);
    const struct mx_server_cfg *s = mx_config_server(cfg, name);
    if (s == NULL || mx_cfgedit_find(text, len, table, &span) != 0) {
        fprintf(stderr, "mcplex rm: no server '%s' in %s", name, path);
        for (size_t i = 0; i < cfg->server_cnt; i++)
            fprintf(stderr, "%s%s", i ? ", " : "; its servers: ", cfg->servers[i].name);
        fprintf(stderr, "%s\n", cfg->server_cnt ? "" : "; it has no servers");
        goto out;
    }
    next = mx_cfgedit_cut(text, len, &span, &next_len);
    if (commit("rm", path, next, next_len, NULL, 0) != 0)
        goto out;
    printf("removed server '%s' from %s\n", name, path);
    if (s->secret_ref && strncmp(s->secret_ref, "vault:", 6) == 0)
        printf("its token stays in the vault as '%s' (`mcplex vault rm %s` deletes it)\n",
               s->secret_ref + 6, s->secret_ref + 6);
    status = mx_reload_after_edit(path);
out:
    mx_config_free(cfg);
    free(table);
    free(next);
    free(text);
    free(path);
    return status;
}

/* ---- import ------------------------------------------------------------- */

static void import_usage(FILE *f)
{
    fprintf(f, "usage: mcplex import FILE [-c FILE]\n"
               "\n"
               "Reads the \"mcpServers\" of a client's JSON config (Claude Code's .mcp.json\n"
               "or ~/.claude.json, Claude Desktop's claude_desktop_config.json, Cursor's\n"
               "mcp.json) and adds each server to the mcplex config: \"url\" entries (type\n"
               "http, streamable-http or sse) with their one credential header, \"command\"\n"
               "entries with their args and env. Every header token and env value goes\n"
               "into the vault, never into the config; a value written ${VAR} becomes the\n"
               "reference env:VAR. Then it prints the one entry the client needs instead.\n"
               "Nothing is written unless every server can be imported.\n"
               "\n"
               "  -c, --config FILE  the mcplex config (default: as `mcplex check` finds it)\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 imported, 1 failed (nothing written), 2 usage error.\n");
}

/* A value the vault will hold. */
struct secret {
    char *name;
    char *value;
};

/* One server to import. */
struct entry {
    char *from; /* its name in the JSON file */
    char *name; /* its name in mcplex */
    char *block;
    char *what; /* for the summary: "url, token in vault:a" */
    struct secret secrets[64];
    size_t secret_cnt;
};

struct import {
    const char *file;
    struct entry *v;
    size_t cnt;
    int errors;
};

static void entry_clear(struct entry *e)
{
    for (size_t i = 0; i < e->secret_cnt; i++) {
        OPENSSL_cleanse(e->secrets[i].value, strlen(e->secrets[i].value));
        free(e->secrets[i].value);
        free(e->secrets[i].name);
    }
    free(e->from);
    free(e->name);
    free(e->block);
    free(e->what);
}

static void fail(struct import *im, const struct entry *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct import *im, const struct entry *e, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mcplex import: %s: server '%s': ", im->file, e->from);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    im->errors++;
}

/* A name mcplex takes: other characters become '-', at most 32 of them. */
static char *server_name(const char *from)
{
    char *n = mx_xstrndup(from, strnlen(from, 32));
    for (char *p = n; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            *p = '-';
    }
    return n;
}

/*
 * "${VAR}" or "${env:VAR}" (the clients' own expansion of an environment
 * variable) as the reference "env:VAR"; NULL when |v| is no such thing.
 */
static char *env_ref(const char *v)
{
    size_t n = strlen(v);
    if (n < 4 || strncmp(v, "${", 2) != 0 || v[n - 1] != '}')
        return NULL;
    const char *var = v + 2;
    size_t vn = n - 3;
    if (vn > 4 && strncmp(var, "env:", 4) == 0) {
        var += 4;
        vn -= 4;
    }
    for (size_t i = 0; i < vn; i++) {
        char c = var[i];
        if (!(isalnum((unsigned char)c) || c == '_') || (i == 0 && isdigit((unsigned char)c)))
            return NULL;
    }
    return vn ? mx_xasprintf("env:%.*s", (int)vn, var) : NULL;
}

/* The reference for |value|: env:VAR, or a new vault entry |vault_name|. */
static char *secret_ref(struct import *im, struct entry *e, const char *vault_name,
                        const char *value, const char *label)
{
    char *ref = env_ref(value);
    if (ref)
        return ref;
    if (strstr(value, "${")) {
        fail(im, e, "%s uses ${...} inside a longer value, which mcplex cannot take over; %s",
             label, "store the whole value with `mcplex vault set` and edit the TOML");
        return NULL;
    }
    if (e->secret_cnt == sizeof(e->secrets) / sizeof(e->secrets[0]) ||
        !mx_vault_name_is_valid(vault_name)) {
        fail(im, e, "%s cannot be kept in the vault as '%s'", label, vault_name);
        return NULL;
    }
    e->secrets[e->secret_cnt].name = mx_xstrdup(vault_name);
    e->secrets[e->secret_cnt].value = mx_xstrdup(value);
    e->secret_cnt++;
    return mx_xasprintf("vault:%s", vault_name);
}

static void import_url(struct import *im, struct entry *e, json_t *j, const char *url)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    if (type == NULL)
        type = json_string_value(json_object_get(j, "transport"));
    bool sse = false;
    if (type && strcmp(type, "sse") == 0)
        sse = true;
    else if (type && strcmp(type, "http") != 0 && strcmp(type, "streamable-http") != 0 &&
             strcmp(type, "streamableHttp") != 0) {
        fail(im, e, "unknown type '%s' for a url server (http, streamable-http, sse)", type);
        return;
    }
    json_t *headers = json_object_get(j, "headers");
    if (headers && !json_is_object(headers)) {
        fail(im, e, "\"headers\" is not an object");
        return;
    }
    size_t n = json_object_size(headers);
    if (n > 1) {
        fail(im, e,
             "has %zu headers; mcplex sends one credential per server (keep one in the file, "
             "or import it and set the rest by hand)",
             n);
        return;
    }
    char *auth = NULL, *ref = NULL;
    const char *hname = NULL;
    json_t *hval = NULL;
    json_object_foreach(headers, hname, hval)
    {
        break;
    }
    if (hname) {
        const char *v = json_string_value(hval);
        if (v == NULL || v[0] == '\0') {
            fail(im, e, "header %s has no string value", hname);
            return;
        }
        if (strcasecmp(hname, "Authorization") == 0 && strncasecmp(v, "Bearer ", 7) == 0) {
            v += 7;
        } else if (strcasecmp(hname, "Cookie") == 0 && strchr(v, '=') && !strchr(v, ';') &&
                   !strstr(v, "${")) {
            const char *eq = strchr(v, '=');
            auth = mx_xasprintf("cookie:%.*s", (int)(eq - v), v);
            v = eq + 1;
        } else {
            auth = mx_xasprintf("header:%s", hname);
        }
        char label[96];
        snprintf(label, sizeof(label), "header %s", hname);
        ref = secret_ref(im, e, e->name, v, label);
        if (ref == NULL) {
            free(auth);
            return;
        }
    }
    e->block = server_block(e->name, url, sse, auth, ref);
    e->what = mx_xasprintf("%s%s%s%s", url, ref ? ", credential in " : "", ref ? ref : "",
                           sse ? ", sse" : "");
    free(auth);
    free(ref);
}

static void import_command(struct import *im, struct entry *e, json_t *j, const char *command)
{
    json_t *args = json_object_get(j, "args"), *env = json_object_get(j, "env");
    json_t *a;
    size_t i;
    const char *key;
    char *ref;
    if ((args && !json_is_array(args)) || (env && !json_is_object(env))) {
        fail(im, e, "\"args\" must be an array and \"env\" an object");
        return;
    }
    char *q = mx_cfgedit_quote(command);
    char *cmd = mx_xasprintf("command = [%s", q);
    free(q);
    json_array_foreach(args, i, a)
    {
        if (!json_is_string(a))
            goto bad_arg;
        q = mx_cfgedit_quote(json_string_value(a));
        char *more = mx_xasprintf("%s, %s", cmd, q);
        free(q);
        free(cmd);
        cmd = more;
    }
    /* The child gets only what env lists; what clients pass by default
     * (their own PATH and HOME) is passed on by name. */
    bool path = json_object_get(env, "PATH") != NULL, home = json_object_get(env, "HOME") != NULL;
    char *envs = mx_xasprintf("%s%s%s", !path ? "\"PATH\"" : "", !path && !home ? ", " : "",
                              !home ? "\"HOME\"" : "");
    size_t vaulted = 0;
    json_object_foreach(env, key, a)
    {
        const char *v = json_string_value(a);
        char vault_name[128], label[96];
        if (v == NULL) {
            fail(im, e, "env %s is not a string", key);
            continue;
        }
        snprintf(vault_name, sizeof(vault_name), "%s.%s", e->name, key);
        snprintf(label, sizeof(label), "env %s", key);
        ref = secret_ref(im, e, vault_name, v, label);
        if (ref == NULL)
            continue;
        vaulted += strncmp(ref, "vault:", 6) == 0;
        char *item = mx_xasprintf("%s=%s", key, ref);
        q = mx_cfgedit_quote(item);
        char *more = mx_xasprintf("%s%s%s", envs, envs[0] ? ", " : "", q);
        free(q);
        free(item);
        free(envs);
        envs = more;
        free(ref);
    }
    const char *cwd = json_string_value(json_object_get(j, "cwd"));
    char *q_cwd = cwd ? mx_cfgedit_quote(cwd) : NULL;
    e->block = mx_xasprintf("[servers.%s]\n%s]\nenv = [%s]\n%s%s%s", e->name, cmd, envs,
                            q_cwd ? "cwd = " : "", q_cwd ? q_cwd : "", q_cwd ? "\n" : "");
    e->what = mx_xasprintf("command %s, %zu env value%s in the vault", command, vaulted,
                           vaulted == 1 ? "" : "s");
    free(q_cwd);
    free(envs);
    free(cmd);
    return;
bad_arg:
    free(cmd);
    fail(im, e, "\"args\" holds something other than strings");
}

/* Whether |j| is an entry for this gateway (an earlier `mcplex connect`). */
static bool is_self(json_t *j, const char *self_url)
{
    const char *url = json_string_value(json_object_get(j, "url"));
    const char *cmd = json_string_value(json_object_get(j, "command"));
    if (url && self_url && strncmp(url, self_url, strlen(self_url)) == 0)
        return true;
    if (cmd) {
        const char *base = strrchr(cmd, '/');
        return strcmp(base ? base + 1 : cmd, "mcplex") == 0;
    }
    return false;
}

/* The client whose file |file| probably is, for the entry printed at the end. */
static enum mx_client guess_client(const char *file)
{
    return strstr(file, "cursor") ? MX_CLIENT_CURSOR : MX_CLIENT_CLAUDE;
}

static void print_client_entry(const char *file, const char *cfg_path, const struct mx_config *cfg)
{
    printf("\nIn %s, this one entry replaces the imported ones:\n", file);
    if (strstr(file, "claude_desktop")) {
        /* Claude Desktop's file takes commands only. */
        json_t *e = json_pack("{s:{s:s,s:[s,s,s]}}", "mcplex", "command", "mcplex", "args", "stdio",
                              "-c", cfg_path);
        char *s = json_dumps(e, JSON_INDENT(2));
        printf("\"mcpServers\": %s\n", s);
        free(s);
        json_decref(e);
        return;
    }
    enum mx_client c = guess_client(file);
    mx_snippet_for_config(stdout, c, "mcplex", cfg);
    printf("(`mcplex connect %s --write` writes it)\n",
           c == MX_CLIENT_CURSOR ? "cursor" : "claude");
}

static json_t *load_servers(const char *file, json_t **root)
{
    char *text = NULL;
    size_t len;
    struct mx_diag d = {0};
    char msg[1024];
    json_error_t err;
    *root = NULL;
    char *path = mx_path_expand(file);
    int rc = mx_cfgedit_read(path, IMPORT_FILE_MAX, &text, &len, &d);
    free(path);
    if (rc) {
        fprintf(stderr, "mcplex import: %s\n", mx_diag_format(&d, msg, sizeof(msg)));
        return NULL;
    }
    *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    OPENSSL_cleanse(text, len);
    free(text);
    if (*root == NULL) {
        /* the position only: jansson's text quotes the bytes near it, which
         * may be a token */
        fprintf(stderr, "mcplex import: %s:%d:%d: not valid JSON (or a key given twice)\n", file,
                err.line, err.column);
        return NULL;
    }
    json_t *servers = json_object_get(*root, "mcpServers");
    if (!json_is_object(servers)) {
        fprintf(stderr, "mcplex import: %s has no \"mcpServers\" object at its top\n", file);
        return NULL;
    }
    return servers;
}

static void plan(struct import *im, json_t *servers, const struct mx_config *cfg,
                 const char *self_url)
{
    const char *from;
    json_t *j;
    im->v = mx_xcalloc(json_object_size(servers) + 1, sizeof(*im->v));
    json_object_foreach(servers, from, j)
    {
        struct entry *e = &im->v[im->cnt];
        memset(e, 0, sizeof(*e));
        e->from = mx_xstrdup(from);
        e->name = server_name(from);
        if (!json_is_object(j) || is_self(j, self_url)) {
            printf("skipped '%s': %s\n", from,
                   json_is_object(j) ? "it is mcplex itself" : "not an object");
            entry_clear(e);
            continue;
        }
        im->cnt++;
        if (e->name[0] == '\0') {
            fail(im, e, "has no name mcplex can use");
            continue;
        }
        bool taken = mx_config_server(cfg, e->name) != NULL;
        for (size_t i = 0; i + 1 < im->cnt && !taken; i++)
            taken = strcmp(im->v[i].name, e->name) == 0;
        if (taken) {
            fail(im, e, "a server named '%s' is already configured; `mcplex rm %s` first", e->name,
                 e->name);
            continue;
        }
        const char *url = json_string_value(json_object_get(j, "url"));
        const char *cmd = json_string_value(json_object_get(j, "command"));
        if (url && cmd)
            fail(im, e, "has both \"url\" and \"command\"");
        else if (url)
            import_url(im, e, j, url);
        else if (cmd)
            import_command(im, e, j, cmd);
        else
            fail(im, e, "has neither \"url\" nor \"command\"");
    }
}

int mx_cmd_import(int argc, char **argv)
{
    const char *cfg_arg = NULL;
    const char *pos[1];
    const struct mx_cli_opt opts[] = {{"-c", "--config", &cfg_arg, NULL}, {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"import", import_usage, opts, pos, 1, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    if (cli.pos_cnt != 1) {
        import_usage(stderr);
        return 2;
    }
    struct import im = {pos[0], NULL, 0, 0};
    char *path = mx_config_find(cfg_arg), *text = NULL, *self_url = NULL, *ca = NULL;
    struct mx_config *cfg = NULL, *edited = NULL;
    const char **names = NULL;
    size_t len;
    json_t *root = NULL;
    int status = 1;
    json_t *servers = load_servers(im.file, &root);
    if (servers == NULL || open_config("import", path, &text, &len, &cfg) != 0)
        goto out;
    if (mx_snippet_target(cfg, &self_url, &ca) != 0)
        self_url = NULL;
    plan(&im, servers, cfg, self_url);
    if (im.errors) {
        fprintf(stderr, "mcplex import: nothing imported; %s is not changed\n", path);
        goto out;
    }
    if (im.cnt == 0) {
        fprintf(stderr, "mcplex import: %s has no servers to import\n", im.file);
        goto out;
    }
    names = mx_xcalloc(im.cnt, sizeof(*names));
    for (size_t i = 0; i < im.cnt; i++) {
        size_t n;
        char *more = mx_cfgedit_append(text, len, im.v[i].block, &n);
        free(text);
        text = more;
        len = n;
        names[i] = im.v[i].name;
    }
    if (!would_load("import", path, text, len, &edited))
        goto out;
    for (size_t i = 0; i < im.cnt; i++) {
        for (size_t k = 0; k < im.v[i].secret_cnt; k++) {
            const struct secret *s = &im.v[i].secrets[k];
            if (store("import", edited->proxy.vault, s->name, s->value, strlen(s->value)) != 0)
                goto out;
        }
    }
    if (commit("import", path, text, len, names, im.cnt) != 0)
        goto out;
    size_t stored = 0;
    for (size_t i = 0; i < im.cnt; i++)
        stored += im.v[i].secret_cnt;
    printf("imported %zu server%s into %s", im.cnt, im.cnt == 1 ? "" : "s", path);
    if (stored)
        printf(" (%zu value%s stored in the vault %s)", stored, stored == 1 ? "" : "s",
               edited->proxy.vault);
    printf(":\n");
    for (size_t i = 0; i < im.cnt; i++) {
        if (strcmp(im.v[i].from, im.v[i].name) != 0)
            printf("  %s (from '%s'): %s\n", im.v[i].name, im.v[i].from, im.v[i].what);
        else
            printf("  %s: %s\n", im.v[i].name, im.v[i].what);
    }
    print_client_entry(im.file, path, edited);
    status = mx_reload_after_edit(path);
out:
    for (size_t i = 0; i < im.cnt; i++)
        entry_clear(&im.v[i]);
    free(im.v);
    free(names);
    json_decref(root);
    mx_config_free(cfg);
    mx_config_free(edited);
    free(self_url);
    free(ca);
    free(text);
    free(path);
    return status;
}
