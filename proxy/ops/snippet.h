/* SPDX-License-Identifier: MIT */
/*
 * Client configuration for mcplex, the one source of it: the snippets
 * `mcplex serve` prints at start, and each client's entry that `mcplex
 * connect` prints or writes and `mcplex import` prints. When a client token
 * is configured the entries read it from an environment variable, so the
 * token never lands in a client's config file; when the gateway serves the
 * local CA's certificate, the entry comes with the setting that makes that
 * client trust the CA.
 */
#ifndef MX_SNIPPET_H
#define MX_SNIPPET_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "cmd_status.h"

struct mx_config;

/* What the snippets say about the certificate. */
struct mx_snippet_ca {
    const char *path; /* the local CA's ca.pem when serve uses it; NULL otherwise */
    bool trusted;     /* whether the system store holds it */
};

/* Print snippets for Claude Code, Cursor and the TypeScript SDK for the
 * endpoint |url| named |name|; |token_env| names the variable holding the
 * client token, or NULL when none is required. With |ca|'s path set they
 * start with the trust step: `mcplex certs trust` while the system store
 * lacks the CA, and NODE_EXTRA_CA_CERTS for Node-based clients. */
void mx_snippet_print(FILE *f, const char *name, const char *url, const char *token_env,
                      const struct mx_snippet_ca *ca);

/* The clients `mcplex connect` knows. */
enum mx_client {
    MX_CLIENT_CLAUDE = 0, /* Claude Code: ~/.claude.json, mcpServers */
    MX_CLIENT_CURSOR = 1, /* Cursor: ~/.cursor/mcp.json, mcpServers */
    MX_CLIENT_CODEX = 2,  /* Codex: ~/.codex/config.toml, [mcp_servers.NAME] */
};

/* |name| ("claude", "cursor", "codex") as a client. Returns 0, or MX_EINVAL. */
int mx_snippet_client(const char *name, enum mx_client *c);

/* The variable whose value is the client token, in every entry. */
#define MX_SNIPPET_TOKEN_ENV MX_STATUS_TOKEN_ENV

/*
 * The entry of a JSON-configured client |c| (Claude Code, Cursor) for |url|:
 * the value of its mcpServers member (a new reference). |token_env|: as for
 * mx_snippet_print.
 */
json_t *mx_snippet_json(enum mx_client c, const char *url, const char *token_env);

/* Codex's table for |url| named |name|, as TOML lines (caller frees). */
char *mx_snippet_codex(const char *name, const char *url, const char *token_env);

/*
 * The entry that client |c| needs for the gateway |cfg| describes, named
 * |name|: where it goes and the entry itself, then, when the gateway serves
 * the local CA's certificate, the line that makes the client trust it.
 * Returns 0, or MX_EINVAL after printing why on stderr (no fixed port).
 */
int mx_snippet_for_config(FILE *f, enum mx_client c, const char *name, const struct mx_config *cfg);

/*
 * The gateway's /mcp URL and its CA file (NULL: the system store, no
 * setting needed) for |cfg|; both the caller's to free. Returns 0, or
 * MX_EINVAL after printing why.
 */
int mx_snippet_target(const struct mx_config *cfg, char **url, char **ca_file);

/* The line that makes client |c| trust |ca_file|, without a newline. */
void mx_snippet_ca(FILE *f, enum mx_client c, const char *ca_file);

#endif
