/* SPDX-License-Identifier: MIT */
/* Client snippets for `mcplex serve`. */
#include "snippet.h"

/* Node reads its own CA list, not the system store, so Claude Code and the SDK need the CA named
 * even once the system trusts it. */
static void print_ca(FILE *f, const struct mx_snippet_ca *ca)
{
    if (ca == NULL || ca->path == NULL)
        return;
    if (!ca->trusted)
        fprintf(f, "\nThe local CA is not trusted by the system yet: run `mcplex certs trust` "
                   "(`--dry-run` shows the steps first).\n");
    fprintf(f,
            "Node-based clients (Claude Code, the TypeScript SDK) need it named: "
            "export NODE_EXTRA_CA_CERTS=%s\n",
            ca->path);
}

void mx_snippet_print(FILE *f, const char *name, const char *url, const char *token_env,
                      const struct mx_snippet_ca *ca)
{
    print_ca(f, ca);
    fprintf(f, "\nPoint MCP clients at %s\n", url);
    if (token_env == NULL) {
        fprintf(f,
                "  Claude Code: claude mcp add --transport http %s %s\n"
                "  Cursor (~/.cursor/mcp.json): {\"mcpServers\": {\"%s\": {\"url\": \"%s\"}}}\n"
                "  TypeScript SDK: new StreamableHTTPClientTransport(new URL(\"%s\"))\n\n",
                name, url, name, url, url);
        return;
    }
    /* ${VAR} is expanded by the client at run time; the token stays in the
     * environment, out of every config file. */
    fprintf(f,
            "  export %s=<the client token>   # the value of [listen] client_token\n"
            "  Claude Code: claude mcp add-json %s "
            "'{\"type\":\"http\",\"url\":\"%s\",\"headers\":{\"Authorization\":\"Bearer "
            "${%s}\"}}'\n"
            "  Cursor (~/.cursor/mcp.json): {\"mcpServers\": {\"%s\": {\"url\": \"%s\", "
            "\"headers\": {\"Authorization\": \"Bearer ${env:%s}\"}}}}\n"
            "  TypeScript SDK: new StreamableHTTPClientTransport(new URL(\"%s\"), "
            "{requestInit: {headers: {Authorization: `Bearer ${process.env.%s}`}}})\n\n",
            token_env, name, url, token_env, name, url, token_env, url, token_env);
}
