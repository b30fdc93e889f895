/* SPDX-License-Identifier: MIT */
/*
 * Ready-to-paste client configuration printed by `mcplex serve`. When a
 * client token is configured the snippets read it from an environment
 * variable, so the token never lands in a client's config file.
 */
#ifndef MX_SNIPPET_H
#define MX_SNIPPET_H

#include <stdbool.h>
#include <stdio.h>

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

#endif
