/* SPDX-License-Identifier: MIT */
/*
 * `mcplex check`: load and validate the config, resolve every secret
 * reference, and print what was checked: reference names and "resolved" or
 * why not, never a value. Errors also go to stderr as file:line:col: msg.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_config.h"
#include "model.h"
#include "model_int.h"
#include "secret_ref.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex check [-c FILE]\n"
               "\n"
               "Validates the config and resolves every secret reference, printing\n"
               "reference names and whether they resolved, never their values.\n"
               "\n"
               "  -c, --config FILE  config file (default: $MCPLEX_CONFIG, ./mcplex.toml,\n"
               "                     $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 valid, 1 invalid, 2 usage error.\n");
}

static void print_auth(const struct mx_server_cfg *s)
{
    switch (s->auth) {
    case MX_AUTH_NONE:
        printf(", auth none\n");
        break;
    case MX_AUTH_BEARER:
        printf(", auth bearer\n");
        break;
    case MX_AUTH_COOKIE:
        printf(", auth cookie:%s\n", s->auth_name);
        break;
    case MX_AUTH_HEADER:
        printf(", auth header:%s\n", s->auth_name);
        break;
    }
}

/* What renews the credential when the upstream refuses it; check runs
 * nothing for it (a refresh command runs only on a 401 or 403). */
static void print_refresh(const struct mx_server_cfg *s)
{
    char shown[256];
    if (s->refresh)
        printf("  refresh %s: runs when the upstream refuses the credential (401, 403)\n",
               mx_secret_ref_show(s->refresh, shown, sizeof(shown)));
    else if (s->secret_ref && strncmp(s->secret_ref, "cmd:", 4) == 0)
        printf("  refresh: secret %s runs again when the upstream refuses it (401, 403)\n",
               mx_secret_ref_show(s->secret_ref, shown, sizeof(shown)));
}

struct tally {
    int refs;
    int failed;
};

/* One reference: "  <label><ref>: resolved" or the error, also on stderr with its position. */
static void check_ref(const struct mx_config *cfg, const struct mx_server_cfg *srv, size_t env_idx,
                      const char *label, const char *who, struct tally *t)
{
    struct mx_secret *sec;
    struct mx_diag d;
    const char *ref;

    if (srv == NULL)
        ref = cfg->listen.client_token_ref;
    else if (env_idx == MX_CONFIG_REF_SECRET)
        ref = srv->secret_ref;
    else
        ref = strchr(srv->env.v[env_idx], '=') + 1;
    memset(&d, 0, sizeof(d));
    t->refs++;
    if (mx_config_resolve_ref(cfg, srv, env_idx, &sec, &d) == 0) {
        char shown[256];
        printf("  %s%s: resolved\n", label, mx_secret_ref_show(ref, shown, sizeof(shown)));
        mx_secret_free(sec);
        return;
    }
    t->failed++;
    /* The message starts with the reference itself. */
    printf("  %s%s\n", label, d.msg);
    fflush(stdout);
    fprintf(stderr, "%s:%d:%d: %s: %s\n", d.file, d.line, d.col, who, d.msg);
}

static void check_server(const struct mx_config *cfg, const struct mx_server_cfg *s,
                         struct tally *t)
{
    char who[64];
    snprintf(who, sizeof(who), "server '%s'", s->name);
    printf("server %s: %s", s->name, mx_transport_name(s->transport));
    if (s->transport == MX_TRANSPORT_STDIO) {
        printf(", command %s\n", s->command.v[0]);
    } else {
        struct mx_str host = {"", 0};
        mx_url_check(s->url, &host);
        printf(", host %.*s", (int)host.len, host.p);
        print_auth(s);
    }
    if (s->secret_ref)
        check_ref(cfg, s, MX_CONFIG_REF_SECRET, "secret ", who, t);
    print_refresh(s);
    for (size_t i = 0; i < s->env.cnt; i++) {
        const char *eq = strchr(s->env.v[i], '=');
        if (eq == NULL) {
            printf("  env %s: forwarded\n", s->env.v[i]);
            continue;
        }
        char label[160], env_who[200];
        int n = (int)(eq - s->env.v[i]);
        snprintf(label, sizeof(label), "env %.*s=", n, s->env.v[i]);
        snprintf(env_who, sizeof(env_who), "%s: env %.*s", who, n, s->env.v[i]);
        check_ref(cfg, s, i, label, env_who, t);
    }
}

int mx_cmd_check(int argc, char **argv)
{
    const char *arg = NULL;
    struct mx_config *cfg;
    struct mx_diag d;
    char line[1024];
    struct tally t = {0, 0};

    const struct mx_cli_opt opts[] = {{"-c", "--config", &arg, NULL}, {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"check", usage, opts, NULL, 0, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    memset(&d, 0, sizeof(d));
    if (mx_config_open(arg, &cfg, &d) != 0) {
        fprintf(stderr, "%s\n", mx_diag_format(&d, line, sizeof(line)));
        return 1;
    }
    printf("config %s: syntax and values ok\n", cfg->path);
    printf("listen %s, %s", cfg->listen.address, cfg->listen.tls ? "tls" : "plain http");
    if (cfg->listen.tls && cfg->listen.cert)
        printf(" (cert %s, key %s)", cfg->listen.cert, cfg->listen.key);
    else if (cfg->listen.tls)
        printf(" (cert and key from %s)", cfg->proxy.state_dir);
    printf(", %s, %zu allowed origin(s)\n",
           cfg->listen.allow_remote ? "remote clients allowed" : "loopback only",
           cfg->listen.allowed_origins.cnt);
    if (cfg->listen.client_token_ref)
        check_ref(cfg, NULL, 0, "client_token ", "client_token", &t);
    printf("proxy vault %s, state_dir %s%s%s\n", cfg->proxy.vault, cfg->proxy.state_dir,
           cfg->proxy.trace ? ", trace " : "", cfg->proxy.trace ? cfg->proxy.trace : "");
    for (size_t i = 0; i < cfg->server_cnt; i++)
        check_server(cfg, &cfg->servers[i], &t);
    const char *warning = mx_config_warning(cfg);
    if (warning) {
        fflush(stdout);
        fprintf(stderr, "%s: warning: %s\n", cfg->path, warning);
    }
    mx_config_free(cfg);
    if (t.failed) {
        printf("check failed: %d of %d secret reference(s) did not resolve\n", t.failed, t.refs);
        return 1;
    }
    printf("ok: %d secret reference(s) resolved\n", t.refs);
    return 0;
}
