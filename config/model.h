/* SPDX-License-Identifier: MIT */
/*
 * The validated configuration: every key of the TOML subset described in
 * DESIGN.md, with defaults applied. Parsing lives in toml.c; this module turns
 * the parsed tree into struct mx_config, rejecting unknown keys and bad values
 * with file:line:col diagnostics, and resolves secret references.
 */
#ifndef MX_MODEL_H
#define MX_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "secret.h"

enum mx_prefix_mode {
    MX_PREFIX_CONDITIONAL = 0,
    MX_PREFIX_ALWAYS = 1,
};

enum mx_session_mode {
    MX_SESSION_SHARED = 0,
    MX_SESSION_PER_CLIENT = 1,
};

enum mx_transport {
    MX_TRANSPORT_HTTP = 0,  /* Streamable HTTP (url) */
    MX_TRANSPORT_SSE = 1,   /* legacy HTTP+SSE (url, transport = "sse") */
    MX_TRANSPORT_STDIO = 2, /* command */
};

/* The config spelling of |t| ("streamable-http", "sse", "stdio"). */
const char *mx_transport_name(enum mx_transport t);

enum mx_start_mode {
    MX_START_LAZY = 0,
    MX_START_EAGER = 1,
};

struct mx_strv {
    char **v;
    size_t cnt;
};

struct mx_server_cfg {
    char *name;
    int line; /* where [servers.NAME] was declared */

    enum mx_transport transport;
    char *url;                     /* http(s) URL, NULL for stdio */
    struct mx_strv command;        /* argv for stdio upstreams */
    char *cwd;                     /* NULL: inherit */
    char *ca;                      /* extra CA file for an https url (a private CA); NULL: system */
    struct mx_strv env;            /* "NAME" or "NAME=<secret ref>" entries */
    struct mx_secret **env_secret; /* env.cnt slots, set by mx_config_resolve_secrets()
                                      for "NAME=<secret ref>" entries, else NULL */
    enum mx_start_mode start;

    enum mx_auth_kind auth;
    char *auth_name;          /* cookie or header name for MX_AUTH_COOKIE/HEADER */
    char *secret_ref;         /* reference text ("vault:files"), NULL when none */
    struct mx_secret *secret; /* set by mx_config_resolve_secrets() */

    struct mx_strv tools;        /* allow-list of glob patterns; empty: all */
    struct mx_strv tools_deny;   /* tools never exposed at /mcp (glob patterns) */
    struct mx_strv prompts;      /* allow-list of prompt names (glob patterns); empty: all */
    struct mx_strv prompts_deny; /* prompts never exposed at /mcp (glob patterns) */
    char *wake;                  /* "cmd:..." or "url:...", NULL when none */
    char *refresh; /* "cmd:..." run when the upstream refuses the credential (401/403);
                      NULL: a "cmd:" secret_ref runs again instead, else nothing */
    int *retry_on; /* HTTP statuses meaning "not awake yet" */
    size_t retry_on_cnt;
    char *alias; /* prefix when names are prefixed; defaults to name */
    enum mx_session_mode session;
    int64_t max_concurrency;
    int64_t max_list_bytes; /* its lists, all pages of all four together, as JSON */
    int64_t keepalive_ms;
    int64_t request_timeout_ms;
    int64_t wake_timeout_ms;
    int64_t idle_close_ms;
};

struct mx_listen_cfg {
    char *address; /* "127.0.0.1:8443", "[::1]:8443" */
    bool tls;
    char *cert; /* NULL: state_dir default */
    char *key;
    char *client_token_ref;
    struct mx_secret *client_token;
    struct mx_strv allowed_origins;
    bool allow_remote;
    int64_t max_body;                    /* bytes, default 4 MiB */
    int64_t max_header;                  /* bytes of request head, default 64 KiB */
    int64_t max_connections;             /* default 1024 */
    int64_t header_timeout_ms;           /* default 10 s */
    int64_t idle_timeout_ms;             /* default 120 s */
    int64_t session_idle_ms;             /* client session expiry, default 30 min */
    int64_t max_connections_per_client;  /* per peer address; 0: no cap but max_connections */
    int64_t max_sessions;                /* open /mcp client sessions, default 4096 */
    int64_t max_requests_per_connection; /* then Connection: close / GOAWAY, default 100000 */
    /* what each SSE stream to a client keeps for a reconnect with
     * Last-Event-ID: events (default 256) and bytes (default 4 MiB) */
    int64_t stream_buffer_events;
    int64_t stream_buffer_bytes;
    int64_t stream_poll_ms; /* 0: a POST's SSE answer stays open until its end */
};

/* Every path below (and a server's cwd and ca, [listen] cert and key, and
 * file: secrets when resolved) is absolute: "~/" expanded, a relative one
 * taken in the config file's directory (struct mx_config dir). */
struct mx_proxy_cfg {
    char *trace;     /* JSONL trace path or NULL */
    char *vault;     /* default: mx_vault_default_path() */
    char *state_dir; /* default: mx_config_default_state_dir() */
    enum mx_prefix_mode prefix;
    int64_t name_budget;
    int64_t page_size;         /* items per page of /mcp's merged lists, default 100 */
    int64_t max_list_bytes;    /* default of the servers' max_list_bytes, 16 MiB */
    int64_t fanout_timeout_ms; /* how long /mcp waits for upstreams, default 3 s */
    int64_t request_timeout_ms;
    int64_t wake_timeout_ms;
    int64_t idle_close_ms;
    char *log_level; /* "error" | "warn" | "info" | "debug" */
};

struct mx_config {
    char *path; /* file it was read from */
    char *dir;  /* absolute directory that relative paths in it are resolved against */
    struct mx_listen_cfg listen;
    struct mx_proxy_cfg proxy;
    struct mx_server_cfg *servers;
    size_t server_cnt;
};

/*
 * Parse and validate |len| bytes of |text|; |path| names the file in
 * diagnostics, and its directory is the one relative paths in it are
 * resolved against (the working directory when |path| is NULL: a config
 * with no file of its own). Does not resolve secrets. Returns 0 and |*out|
 * (free with mx_config_free), or MX_EINVAL with |diag| set.
 */
int mx_config_parse(const char *path, const char *text, size_t len, struct mx_config **out,
                    struct mx_diag *diag);

/* Read |path| and parse it. Returns as mx_config_parse, or MX_ENOTFOUND / MX_EIO. */
int mx_config_load(const char *path, struct mx_config **out, struct mx_diag *diag);

/*
 * mx_config_load of [listen] and [proxy] alone: the file must be TOML, but
 * other tables and keys are not looked at, and the config has no servers.
 * For commands that find a running gateway by its config, whose other
 * parts may be in the middle of an edit. Returns as mx_config_load.
 */
int mx_config_load_listen(const char *path, struct mx_config **out, struct mx_diag *diag);

/*
 * Resolve every secret reference (servers, client token). Returns 0 or the
 * first failure from mx_secret_resolve with |diag| naming the server and
 * the reference.
 */
int mx_config_resolve_secrets(struct mx_config *cfg, struct mx_diag *diag);
/* The same for one server of |cfg|: its secret and its env secrets. */
int mx_server_resolve_secrets(const struct mx_config *cfg, struct mx_server_cfg *s,
                              struct mx_diag *diag);

/* Wipes secrets and frees; accepts NULL. */
void mx_config_free(struct mx_config *cfg);

/*
 * The config path to use: |arg| if non-NULL, else $MCPLEX_CONFIG, else
 * ./mcplex.toml if it exists, else $XDG_CONFIG_HOME/mcplex/mcplex.toml
 * (XDG default ~/.config). Returns a new string the caller frees.
 */
char *mx_config_find(const char *arg);

/* $XDG_STATE_HOME/mcplex, else ~/.local/state/mcplex; caller frees. */
char *mx_config_default_state_dir(void);

/* mx_config_load of the file mx_config_find(|arg|) names; returns as that. */
int mx_config_open(const char *arg, struct mx_config **out, struct mx_diag *diag);

/*
 * Reload (model_reload.c): whether two servers have the same settings and
 * resolved secrets (a server that is the same keeps its sessions: a token
 * rotated in the vault makes it "changed"); the same settings and env
 * secrets, leaving 'secret''s value to the caller (a running upstream may
 * hold a refreshed one); and wiping the secrets of a server that left,
 * before its config is freed.
 */
bool mx_server_cfg_same(const struct mx_server_cfg *a, const struct mx_server_cfg *b);
bool mx_server_cfg_same_keys(const struct mx_server_cfg *a, const struct mx_server_cfg *b);
void mx_server_cfg_wipe_secrets(struct mx_server_cfg *s);

/*
 * What a valid config may still lack, as one sentence that says what to
 * add (no servers: mcplex would serve an empty /mcp), or NULL. Static text.
 */
const char *mx_config_warning(const struct mx_config *cfg);

/* NULL when |name| can name a server (1 to 32 characters from
 * A-Za-z0-9_-), else a sentence saying why not. */
const char *mx_config_name_check(const char *name);

/* Find a server by name; NULL if absent. */
const struct mx_server_cfg *mx_config_server(const struct mx_config *cfg, const char *name);

/*
 * Mask in |p|,|len| every resolved secret |cfg| holds (client token,
 * upstream secrets, stdio env secrets) in every form mx_secret_redact
 * knows. The one redaction of config secrets, for the trace and the log.
 */
void mx_config_redact(const struct mx_config *cfg, char *p, size_t len);

#endif
