/* SPDX-License-Identifier: MIT */
/*
 * `mcplex serve`: load the config, resolve its secrets, set up TLS when
 * [listen] tls = true (making the local CA and localhost certificate on
 * first run), run the gateway on libev's default loop. SIGTERM/SIGINT stop
 * accepting, let in-flight requests finish (bounded) and exit 0.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>

#include "alloc.h"
#include "certs.h"
#include "child.h"
#include "cmd.h"
#include "cmd_status.h"
#include "cmdline.h"
#include "gateway.h"
#include "log.h"
#include "path.h"
#include "snippet.h"
#include "tls.h"
#include "trust.h"

#define DRAIN_LIMIT_S      10.0
#define CHILD_STOP_LIMIT_S 5.0

struct serve {
    struct mx_gateway *gw;
    ev_signal sigterm;
    ev_signal sigint;
    ev_signal sighup;
    ev_timer drain;
    ev_tstamp drain_started;
    bool draining;
    char *cfg_path;       /* what SIGHUP re-reads */
    bool level_from_flag; /* --log-level wins over the config at reload too */
};

static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct serve *s = mx_container_of(w, struct serve, drain);
    (void)revents;
    if (mx_gateway_inflight(s->gw) == 0 || ev_now(loop) - s->drain_started > DRAIN_LIMIT_S) {
        if (mx_gateway_inflight(s->gw))
            mx_log_warn("serve", "%zu requests still in flight after %.0f s; exiting",
                        mx_gateway_inflight(s->gw), DRAIN_LIMIT_S);
        ev_break(loop, EVBREAK_ALL);
    }
}

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct serve *s = w->data;
    (void)revents;
    if (s->draining) {
        mx_log_info("serve", "second signal: exiting now");
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    s->draining = true;
    mx_log_info("serve", "signal %d: draining %zu in-flight requests", w->signum,
                mx_gateway_inflight(s->gw));
    mx_httpd_stop_accepting(s->gw->httpd);
    s->drain_started = ev_now(loop);
    ev_timer_init(&s->drain, drain_cb, 0.0, 0.05);
    ev_timer_start(loop, &s->drain);
}

static bool is_loopback_address(const char *addr);

/*
 * SIGHUP: read the config and the vault again and apply them (gateway.h).
 * Anything wrong with the new config refuses the whole reload; the running
 * one keeps serving. Secrets are resolved here, on the loop: files and the
 * vault are small local reads; a `cmd:` source blocks up to its timeout.
 */
static void hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct serve *s = w->data;
    struct mx_diag diag = {0};
    struct mx_config *cfg = NULL;
    char msg[1024];
    (void)loop;
    (void)revents;
    if (s->draining)
        return;
    mx_log_info("serve", "SIGHUP: reloading %s", s->cfg_path);
    if (mx_config_load(s->cfg_path, &cfg, &diag) != 0) {
        mx_gateway_reload_refused(s->gw, mx_diag_format(&diag, msg, sizeof(msg)));
        return;
    }
    /* the listener stays where it is: a token it needs must stay too */
    const struct mx_listen_cfg *l = &s->gw->cfg->listen;
    if (!is_loopback_address(l->address) &&
        (!cfg->listen.allow_remote || cfg->listen.client_token_ref == NULL)) {
        snprintf(msg, sizeof(msg),
                 "%s: mcplex listens on %s, beyond loopback: the new config must keep "
                 "allow_remote = true and a client_token",
                 cfg->path, l->address);
        mx_gateway_reload_refused(s->gw, msg);
        mx_config_free(cfg);
        return;
    }
    enum mx_log_level level = MX_LOG_INFO;
    if (!s->level_from_flag && cfg->proxy.log_level &&
        mx_log_level_parse(cfg->proxy.log_level, &level) != 0) {
        snprintf(msg, sizeof(msg), "%s: unknown log level '%s'", cfg->path, cfg->proxy.log_level);
        mx_gateway_reload_refused(s->gw, msg);
        mx_config_free(cfg);
        return;
    }
    if (mx_config_resolve_secrets(cfg, &diag) != 0) {
        mx_gateway_reload_refused(s->gw, mx_diag_format(&diag, msg, sizeof(msg)));
        mx_config_free(cfg);
        return;
    }
    if (!s->level_from_flag)
        mx_log_set_level(cfg->proxy.log_level ? level : MX_LOG_INFO);
    if (mx_config_warning(cfg))
        mx_log_warn("serve", "%s: %s", cfg->path, mx_config_warning(cfg));
    mx_gateway_reload(s->gw, cfg, msg, sizeof(msg));
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex serve [-c FILE] [--log-level error|warn|info|debug] "
               "[--log-format text|json] [--access-log] [--port-file FILE]\n"
               "\n"
               "Runs the gateway in the foreground; logs go to stderr.\n"
               "  -c FILE           config (default: $MCPLEX_CONFIG, ./mcplex.toml,\n"
               "                    $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"
               "  --log-level L     overrides [proxy] log_level\n"
               "  --log-format F    text (default) or json: one JSON object per line\n"
               "  --access-log      one line per request at info (default: at debug)\n"
               "  --port-file FILE  write the bound port there once listening\n");
}

static int write_port_file(const char *path, int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

/*
 * The TLS context for [listen]: cert and key from the config, else the
 * localhost pair in <state_dir>/certs, made (CA included) on first run and
 * renewed when close to expiry; then *|ca_path| is that CA's file (caller
 * frees). Returns NULL after printing why.
 */
static struct mx_tls *tls_setup(const struct mx_config *cfg, char **ca_path)
{
    struct mx_certs_paths p = {0};
    struct mx_tls *tls = NULL;
    const char *cert = cfg->listen.cert, *key = cfg->listen.key;
    char err[1024];

    if (cert == NULL || key == NULL) {
        struct mx_diag diag = {0};
        bool created = false, renewed = false;
        char *dir = mx_certs_default_dir(cfg->proxy.state_dir);
        mx_certs_paths_init(&p, dir);
        free(dir);
        if (mx_certs_ensure(&p, MX_CERTS_RENEW_DAYS, &created, &renewed, &diag) != 0) {
            fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, err, sizeof(err)));
            goto out;
        }
        if (created)
            mx_log_info("serve",
                        "created a local CA and a localhost certificate in %s; clients must "
                        "trust %s (`mcplex certs show` says how)",
                        p.dir, p.ca_cert);
        if (renewed)
            mx_log_info("serve", "renewed the localhost certificate %s from the local CA",
                        p.leaf_cert);
        cert = p.leaf_cert;
        key = p.leaf_key;
        *ca_path = mx_xstrdup(p.ca_cert);
    }
    if (mx_tls_new(cert, key, &tls, err, sizeof(err)) != 0)
        fprintf(stderr, "mcplex: %s: [listen] %s\n", cfg->path, err);
out:
    mx_certs_paths_clear(&p);
    return tls;
}

static bool is_loopback_address(const char *addr)
{
    return strncmp(addr, "127.", 4) == 0 || strncmp(addr, "[::1]:", 6) == 0 ||
           strncmp(addr, "localhost:", 10) == 0;
}

/* 0 when [listen] looks free; else 1 after saying who holds it and what to do. */
static int refuse_taken_port(const struct mx_config *cfg)
{
    long pid = 0;
    switch (mx_status_port_owner(cfg, &pid)) {
    case MX_PORT_FREE:
        return 0;
    case MX_PORT_MCPLEX:
        fprintf(stderr,
                "mcplex (pid %ld) already serves %s; use `mcplex reload` or `mcplex status`\n", pid,
                cfg->listen.address);
        return 1;
    case MX_PORT_OTHER:
        break;
    }
    fprintf(stderr, "mcplex: %s is in use by another program; choose another [listen] address\n",
            cfg->listen.address);
    return 1;
}

struct serve_opts {
    struct mx_cmdline_run run;
    const char *port_file;
};

static int serve_opt(int ch, const char *arg, void *data)
{
    struct serve_opts *o = data;
    if (ch == 'p') {
        o->port_file = arg;
        return 0;
    }
    return mx_cmdline_run_opt(ch, arg, &o->run);
}

int mx_cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"log-level", required_argument, NULL, 'l'},
                                         {"port-file", required_argument, NULL, 'p'},
                                         {"log-format", required_argument, NULL, 'f'},
                                         {"access-log", no_argument, NULL, 'a'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const struct mx_cmdline cl = {"c:h", opts, usage, serve_opt, NULL};
    struct serve_opts o = {0};
    int rc = mx_cmdline_parse(&cl, argc, argv, &o);
    if (rc != MX_CMDLINE_RUN)
        return rc;

    struct mx_diag diag = {0};
    char msg[1024];
    struct serve s = {0};
    struct mx_config *cfg = mx_cmdline_config(o.run.cfg);
    if (cfg == NULL)
        return 1;
    if (mx_cmdline_log_level(o.run.level, cfg) != 0) {
        mx_config_free(cfg);
        return 2;
    }
    /* Beyond loopback, anyone on the network could spend the vault's tokens:
     * that takes an explicit allow_remote and a client token. */
    if (!is_loopback_address(cfg->listen.address) &&
        (!cfg->listen.allow_remote || cfg->listen.client_token_ref == NULL)) {
        fprintf(stderr,
                "mcplex: %s: [listen] address %s is not loopback; set allow_remote = true "
                "and a client_token to expose mcplex beyond this machine\n",
                cfg->path, cfg->listen.address);
        mx_config_free(cfg);
        return 1;
    }
    if (mx_cmdline_curl_init() != 0) {
        mx_config_free(cfg);
        return 1;
    }
    /* Before secrets are resolved (a cmd: source may take its time): a
     * second serve of the same config learns at once that one runs. */
    if (refuse_taken_port(cfg) != 0 || mx_cmdline_secrets(cfg, "serve") != 0 ||
        mx_cmdline_state_dir(cfg) != 0) {
        mx_config_free(cfg);
        curl_global_cleanup();
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    struct mx_tls *tls = NULL;
    char *ca_path = NULL;
    if (cfg->listen.tls && (tls = tls_setup(cfg, &ca_path)) == NULL) {
        free(ca_path);
        mx_config_free(cfg);
        curl_global_cleanup();
        return 1;
    }
    const char *scheme = tls ? "https" : "http";
    struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
    s.gw = mx_gateway_new(loop, cfg, &diag);
    if (s.gw == NULL) {
        fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, msg, sizeof(msg)));
        mx_config_free(cfg);
        mx_tls_free(tls);
        free(ca_path);
        curl_global_cleanup();
        return 1;
    }
    /* SIGHUP reads the same file, and resolves its relative paths the same way */
    s.cfg_path = mx_path_resolve(NULL, cfg->path);
    s.level_from_flag = o.run.level != NULL;
    /* Nothing is accepted before ev_run(), so every connection gets TLS. */
    if (tls)
        mx_httpd_set_tls(s.gw->httpd, tls);
    ev_signal_init(&s.sigterm, stop_cb, SIGTERM);
    ev_signal_init(&s.sigint, stop_cb, SIGINT);
    ev_signal_init(&s.sighup, hup_cb, SIGHUP);
    s.sigterm.data = s.sigint.data = s.sighup.data = &s;
    ev_signal_start(loop, &s.sigterm);
    ev_signal_start(loop, &s.sigint);
    ev_signal_start(loop, &s.sighup);

    const char *a = cfg->listen.address;
    const char *colon = strrchr(a, ':');
    mx_log_info("serve", "mcplex %s listening on %s://%.*s:%d (%zu upstreams)", MX_VERSION, scheme,
                (int)(colon - a), a, s.gw->port, cfg->server_cnt);
    for (size_t i = 0; i < s.gw->upstream_cnt; i++)
        mx_log_info("serve", "  %s://%.*s:%d/mcp/%s -> %s", scheme, (int)(colon - a), a, s.gw->port,
                    s.gw->upstreams[i]->cfg->name, s.gw->upstreams[i]->host);
    /* Serving nothing is allowed (servers may come with a reload), not silent. */
    if (mx_config_warning(cfg))
        mx_log_warn("serve", "%s: %s", cfg->path, mx_config_warning(cfg));
    /* Not in JSON lines: every line on stderr must parse for a collector. */
    if (s.gw->upstream_cnt && mx_log_enabled(MX_LOG_INFO) && mx_log_get_format() == MX_LOG_TEXT) {
        /* A ready snippet for the merged endpoint; the client token, if any,
         * is read from the environment by the client, never written into its
         * config. */
        char *url = mx_xasprintf("%s://%.*s:%d/mcp", scheme, (int)(colon - a), a, s.gw->port);
        /* Read at start only: one parse of the system bundle (a few ms). */
        struct mx_snippet_ca ca = {ca_path, ca_path && mx_trust_system_has(ca_path)};
        mx_snippet_print(stderr, "mcplex", url,
                         cfg->listen.client_token ? MX_SNIPPET_TOKEN_ENV : NULL, &ca);
        free(url);
    }
    free(ca_path);
    if (o.port_file && write_port_file(o.port_file, s.gw->port) != 0)
        mx_log_warn("serve", "cannot write port file %s: %s", o.port_file, strerror(errno));

    ev_run(loop, 0);

    ev_signal_stop(loop, &s.sigterm);
    ev_signal_stop(loop, &s.sigint);
    ev_signal_stop(loop, &s.sighup);
    ev_timer_stop(loop, &s.drain);
    mx_gateway_free(s.gw);
    mx_child_shutdown(loop, CHILD_STOP_LIMIT_S); /* stdio upstreams end with their groups */
    mx_tls_free(tls);
    curl_global_cleanup();
    free(s.cfg_path);
    mx_log_info("serve", "stopped");
    return 0;
}
