/* SPDX-License-Identifier: MIT */
/* Client configuration for mcplex: serve's snippets, connect's entries. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cmd_status.h"
#include "err.h"
#include "model.h"
#include "snippet.h"

static const char *const client_names[] = {"claude", "cursor", "codex"};

int mx_snippet_client(const char *name, enum mx_client *c)
{
    for (size_t i = 0; i < sizeof(client_names) / sizeof(client_names[0]); i++) {
        if (strcmp(name, client_names[i]) == 0) {
            *c = (enum mx_client)i;
            return 0;
        }
    }
    return MX_EINVAL;
}

json_t *mx_snippet_json(enum mx_client c, const char *url, const char *token_env)
{
    json_t *e = json_object();
    /* Claude Code needs the transport named; Cursor tells it from "url". */
    if (c == MX_CLIENT_CLAUDE)
        json_object_set_new(e, "type", json_string("http"));
    json_object_set_new(e, "url", json_string(url));
    if (token_env) {
        /* ${VAR} (Claude Code) and ${env:VAR} (Cursor) are expanded by the
         * client at run time; the token stays in the environment. */
        char *v =
            mx_xasprintf(c == MX_CLIENT_CURSOR ? "Bearer ${env:%s}" : "Bearer ${%s}", token_env);
        json_object_set_new(e, "headers", json_pack("{s:s}", "Authorization", v));
        free(v);
    }
    return e;
}

char *mx_snippet_codex(const char *name, const char *url, const char *token_env)
{
    if (token_env)
        return mx_xasprintf("[mcp_servers.%s]\nurl = \"%s\"\nbearer_token_env_var = \"%s\"\n", name,
                            url, token_env);
    return mx_xasprintf("[mcp_servers.%s]\nurl = \"%s\"\n", name, url);
}

/* Node reads its own CA list, not the system store, so Claude Code and the SDK need the CA named
 * even once the system trusts it. */
static void print_ca(FILE *f, const struct mx_snippet_ca *ca)
{
    if (ca == NULL || ca->path == NULL)
        return;
    if (!ca->trusted)
        fprintf(f, "\nThe local CA is not trusted by the system yet: run `mcplex certs trust` "
                   "(`--dry-run` shows the steps first).\n");
    fprintf(f, "Node-based clients (Claude Code, the TypeScript SDK) need it named: ");
    mx_snippet_ca(f, MX_CLIENT_CLAUDE, ca->path); /* the one spelling of that line */
    fputc('\n', f);
}

void mx_snippet_print(FILE *f, const char *name, const char *url, const char *token_env,
                      const struct mx_snippet_ca *ca)
{
    json_t *claude = mx_snippet_json(MX_CLIENT_CLAUDE, url, token_env);
    json_t *cursor = json_pack("{s:{s:o}}", "mcpServers", name,
                               mx_snippet_json(MX_CLIENT_CURSOR, url, token_env));
    char *claude_s = json_dumps(claude, JSON_COMPACT);
    char *cursor_s = json_dumps(cursor, 0);
    print_ca(f, ca);
    fprintf(f, "\nPoint MCP clients at %s\n", url);
    if (token_env)
        fprintf(f, "  export %s=<the client token>   # the value of [listen] client_token\n",
                token_env);
    if (token_env)
        fprintf(f, "  Claude Code: claude mcp add-json %s '%s'\n", name, claude_s);
    else
        fprintf(f, "  Claude Code: claude mcp add --transport http %s %s\n", name, url);
    fprintf(f, "  Cursor (~/.cursor/mcp.json): %s\n", cursor_s);
    if (token_env)
        fprintf(f,
                "  TypeScript SDK: new StreamableHTTPClientTransport(new URL(\"%s\"), "
                "{requestInit: {headers: {Authorization: `Bearer ${process.env.%s}`}}})\n\n",
                url, token_env);
    else
        fprintf(f, "  TypeScript SDK: new StreamableHTTPClientTransport(new URL(\"%s\"))\n\n", url);
    free(claude_s);
    free(cursor_s);
    json_decref(claude);
    json_decref(cursor);
}

int mx_snippet_target(const struct mx_config *cfg, char **url, char **ca_file)
{
    char *base = NULL;
    *url = NULL;
    int rc = mx_status_gateway_base(cfg, &base, ca_file);
    if (rc)
        return rc;
    *url = mx_xasprintf("%s/mcp", base);
    free(base);
    return 0;
}

void mx_snippet_ca(FILE *f, enum mx_client c, const char *ca_file)
{
    /* Node-based clients read only their own variable, at start, and not
     * the system store; Codex reads CODEX_CA_CERTIFICATE. */
    fprintf(f, "export %s=%s",
            c == MX_CLIENT_CODEX ? "CODEX_CA_CERTIFICATE" : "NODE_EXTRA_CA_CERTS", ca_file);
}

int mx_snippet_for_config(FILE *f, enum mx_client c, const char *name, const struct mx_config *cfg)
{
    char *url, *ca;
    int rc = mx_snippet_target(cfg, &url, &ca);
    if (rc)
        return rc;
    const char *token_env = cfg->listen.client_token_ref ? MX_SNIPPET_TOKEN_ENV : NULL;
    if (c == MX_CLIENT_CODEX) {
        char *t = mx_snippet_codex(name, url, token_env);
        fprintf(f, "# Codex: in ~/.codex/config.toml\n%s", t);
        free(t);
    } else {
        json_t *e = mx_snippet_json(c, url, token_env);
        char *s = json_dumps(e, JSON_COMPACT);
        if (c == MX_CLIENT_CLAUDE)
            fprintf(f,
                    "# Claude Code: run (or put under \"mcpServers\" in ~/.claude.json)\n"
                    "claude mcp add-json -s user %s '%s'\n",
                    name, s);
        else
            fprintf(f, "# Cursor: under \"mcpServers\" in ~/.cursor/mcp.json\n\"%s\": %s\n", name,
                    s);
        free(s);
        json_decref(e);
    }
    if (token_env)
        fprintf(f, "# the client token, from [listen] client_token, in its environment:\n"
                   "export " MX_SNIPPET_TOKEN_ENV "=...\n");
    if (ca) {
        fprintf(f, "# the client trusts mcplex's local CA when it starts with:\n");
        mx_snippet_ca(f, c, ca);
        fputc('\n', f);
    }
    free(url);
    free(ca);
    return 0;
}
