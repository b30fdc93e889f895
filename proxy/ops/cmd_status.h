/* SPDX-License-Identifier: MIT */
/*
 * `mcplex status`: ask a running gateway for GET /health and print it as a
 * table (or as the raw JSON). A command-line tool, so it blocks: one libcurl
 * easy transfer, bounded by a timeout. It reads the config only for the
 * listen address and TLS setting; it resolves no secret.
 */
#ifndef MX_CMD_STATUS_H
#define MX_CMD_STATUS_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

struct mx_config;
/* Where `status --open` with --url, and a client's config, take the client token from. */
#define MX_STATUS_TOKEN_ENV "MCPLEX_TOKEN"

int mx_cmd_status(int argc, char **argv);

/*
 * Print the /health object |health| fetched from |url| as the status
 * table, ages relative to |now|. Missing members print as "-"; a /health
 * from an older or newer gateway still prints what it has.
 */
void mx_status_render(FILE *out, const json_t *health, const char *url, time_t now);

/*
 * Where a running gateway is, as `status` and `reload` take it: the config
 * whose [listen] names it (-c), or its URL (--url) with the CA to trust
 * (--ca, or --cacert as curl spells it). Each is NULL when not given.
 */
struct mx_status_where {
    const char *cfg;
    const char *url;
    const char *ca;
};

/* The getopt_long rows of those options, for a command's table. */
#define MX_STATUS_WHERE_OPTIONS                                                                    \
    {"config", required_argument, NULL, 'c'}, {"url", required_argument, NULL, 'u'},               \
        {"ca", required_argument, NULL, 'a'},                                                      \
    {                                                                                              \
        "cacert", required_argument, NULL, 'a'                                                     \
    }
/* Their lines of a command's help text. */
#define MX_STATUS_WHERE_HELP                                                                       \
    "  -c, --config FILE  config whose [listen] names the gateway (default:\n"                     \
    "                     $MCPLEX_CONFIG, ./mcplex.toml,\n"                                        \
    "                     $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"                                  \
    "  --url URL          the gateway's URL instead, from anywhere, no config needed:\n"           \
    "                     its base (https://127.0.0.1:8443) or the /mcp or\n"                      \
    "                     /mcp/SERVER URL clients use\n"                                           \
    "  --ca FILE          with an https --url: the CA to trust (PEM; default: the\n"               \
    "                     local CA of the default state dir, when there is one);\n"                \
    "                     --cacert is the same\n"

/*
 * An mx_cmdline option callback (cmdline.h) for -c, --url and --ca, as
 * getopt_long's 'c', 'u' and 'a', into the struct mx_status_where |data|;
 * returns 0.
 */
int mx_status_where_opt(int ch, const char *arg, void *data);
/* Whether the struct mx_status_where |data| holds options that go
 * together: -c or --url, not both; --ca only with --url. */
bool mx_status_where_fits(const void *data);

/*
 * "<base>/health" for the gateway URL |url| as a user gives it: its base,
 * the /mcp or /mcp/<server> URL serve gives clients, or /health itself
 * (trailing slashes, a query and a fragment dropped; a path prefix before
 * /mcp kept). NULL when |url| is not http:// or https:// with a host.
 * Caller frees.
 */
char *mx_status_health_url(const char *url);

/*
 * GET /health of the gateway at |w->url| (its /health, with |w->ca|, else
 * the local CA of the default state dir when it exists) or else at the
 * [listen] address of the config |w->cfg| names (mx_config_find), read
 * alone when the rest of the file has an error (a warning says what). A
 * TLS trust or handshake failure is said as such, apart from no answer.
 * The caller has initialised libcurl. Returns the object, or NULL after
 * printing why on stderr.
 */
json_t *mx_status_fetch(const struct mx_status_where *w);

int mx_cmd_reload(int argc, char **argv);

enum mx_port_owner {
    MX_PORT_FREE = 0,   /* nothing accepts there (or the port is 0: any) */
    MX_PORT_MCPLEX = 1, /* an mcplex answered /health there */
    MX_PORT_OTHER = 2,  /* something else accepts connections there */
};

/*
 * Who holds the [listen] address of |cfg|, asked before `serve` binds it:
 * one GET /health there (the config's scheme, then the other one), within
 * about 3 s even when the holder never answers. For MX_PORT_MCPLEX, *|pid|
 * is the process its /health names. The caller has initialised libcurl.
 */
enum mx_port_owner mx_status_port_owner(const struct mx_config *cfg, long *pid);

/*
 * After a command changed the config file |cfg_path|: reload the gateway its
 * [listen] names, as `mcplex reload -c` does, printing the outcome. When
 * nothing listens there, says so on stdout and returns 0: the next `serve`
 * reads the new file. Returns 0 or 1 (after printing why).
 */
int mx_reload_after_edit(const char *cfg_path);

/*
 * The base URL ("https://127.0.0.1:8443", no path) of the gateway that
 * [listen] of |cfg| describes (a wildcard bind is asked on loopback), and in
 * |*ca_file| the local CA to verify it with when it serves the default
 * certificate (NULL: the system store). Both are the caller's to free.
 * Returns 0, or MX_EINVAL after printing why (no port, or port 0, which
 * cannot be known from outside).
 */
int mx_status_gateway_base(const struct mx_config *cfg, char **base, char **ca_file);

#endif
