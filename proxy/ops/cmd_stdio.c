/* SPDX-License-Identifier: MIT */
/*
 * `mcplex stdio`: the merged /mcp endpoint for clients that only launch
 * commands. Loads the config and its secrets as `serve` does, builds the
 * gateway without a listener (no port is bound) and serves one client on
 * stdin/stdout (stdio_front.h). stdout carries JSON-RPC only: the process's
 * own descriptors 0 and 1 are moved aside first, so nothing else (a stray
 * print, a child process inheriting them) can read the client's messages
 * or write between them; logs go to stderr. End of stdin or SIGTERM/SIGINT
 * ends the session and exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>

#include "alloc.h"
#include "child.h"
#include "cmd.h"
#include "cmdline.h"
#include "gateway.h"
#include "log.h"
#include "mcp.h"
#include "stdio_front.h"

#define SUBSYS             "stdio"
#define DRAIN_LIMIT_S      10.0
#define CHILD_STOP_LIMIT_S 5.0

struct run {
    struct ev_loop *loop;
    struct mx_stdio_front *front;
    ev_signal sigterm;
    ev_signal sigint;
    ev_signal sighup;
    int signals;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex stdio [-c FILE] [--log-level error|warn|info|debug] [--access-log]\n"
               "\n"
               "Serves the merged /mcp aggregate to one client over stdio: newline-delimited\n"
               "JSON-RPC on stdin and stdout. Binds no port; stdout carries JSON-RPC only,\n"
               "logs go to stderr. End of stdin or SIGTERM ends the session and exits 0.\n"
               "For clients that launch a command, e.g.\n"
               "  claude mcp add mcplex -- mcplex stdio\n"
               "\n"
               "  -c FILE           config (default: $MCPLEX_CONFIG, ./mcplex.toml,\n"
               "                    $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"
               "  --log-level L     overrides [proxy] log_level\n"
               "  --access-log      one line per request on stderr at info (default: at debug)\n");
}

/* The stdio client's requests go where POST /mcp goes. */
static void serve_cb(struct mx_req *req, void *data)
{
    mx_mcp_serve(data, req);
}

static void done_cb(struct mx_stdio_front *f, void *data)
{
    struct run *r = data;
    (void)f;
    ev_break(r->loop, EVBREAK_ALL);
}

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct run *r = w->data;
    (void)revents;
    r->signals++;
    if (r->signals > 2) {
        mx_log_info(SUBSYS, "third signal: exiting now");
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    mx_log_info(SUBSYS, "signal %d: ending the session", w->signum);
    /* the first lets requests in flight finish; the second stops waiting */
    mx_stdio_front_close(r->front);
}

static void hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    mx_log_warn(SUBSYS, "SIGHUP: reloading is not supported by this version; restart the client's "
                        "mcplex to apply config changes");
}

/*
 * Keep the client's stdin and stdout for the front end alone, on descriptors
 * no child inherits; 0 becomes /dev/null and 1 a copy of stderr. Returns 0,
 * or -1 after printing why.
 */
static int take_stdio(int *in_fd, int *out_fd)
{
    *in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    *out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (*in_fd < 0 || *out_fd < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0 ||
        dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fprintf(stderr, "mcplex: cannot set up stdin and stdout: %s\n", strerror(errno));
        if (null >= 0)
            close(null);
        return -1;
    }
    close(null);
    return 0;
}

int mx_cmd_stdio(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"log-level", required_argument, NULL, 'l'},
                                         {"access-log", no_argument, NULL, 'a'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const struct mx_cmdline cl = {"c:h", opts, usage, mx_cmdline_run_opt, NULL};
    struct mx_cmdline_run o = {0};
    int rc = mx_cmdline_parse(&cl, argc, argv, &o);
    if (rc != MX_CMDLINE_RUN)
        return rc;

    int in_fd, out_fd;
    if (take_stdio(&in_fd, &out_fd) != 0)
        return 1;
    struct mx_config *cfg = mx_cmdline_config(o.cfg);
    if (cfg == NULL)
        return 1;
    /* as serve: the log level, the secrets in a protected process, then a
     * state_dir of the user's own */
    if (mx_cmdline_log_level(o.level, cfg) != 0 || mx_cmdline_secrets(cfg, SUBSYS) != 0 ||
        mx_cmdline_state_dir(cfg) != 0) {
        mx_config_free(cfg);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if (mx_cmdline_curl_init() != 0) {
        mx_config_free(cfg);
        return 1;
    }
    struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
    struct mx_diag diag = {0};
    char msg[1024];
    struct mx_gateway *gw = mx_gateway_new_unbound(loop, cfg, &diag);
    if (gw == NULL) {
        fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, msg, sizeof(msg)));
        mx_config_free(cfg);
        curl_global_cleanup();
        return 1;
    }
    struct run r = {0};
    r.loop = loop;
    struct mx_stdio_front_opts fo = {in_fd, out_fd, (size_t)cfg->listen.max_body, DRAIN_LIMIT_S};
    r.front = mx_stdio_front_new(loop, serve_cb, gw->mcp, &fo, done_cb, &r);
    ev_signal_init(&r.sigterm, stop_cb, SIGTERM);
    ev_signal_init(&r.sigint, stop_cb, SIGINT);
    ev_signal_init(&r.sighup, hup_cb, SIGHUP);
    r.sigterm.data = r.sigint.data = &r;
    ev_signal_start(loop, &r.sigterm);
    ev_signal_start(loop, &r.sigint);
    ev_signal_start(loop, &r.sighup);
    mx_log_info(SUBSYS, "mcplex %s serving %zu upstreams on stdin/stdout", MX_VERSION,
                gw->upstream_cnt);

    ev_run(loop, 0);

    ev_signal_stop(loop, &r.sigterm);
    ev_signal_stop(loop, &r.sigint);
    ev_signal_stop(loop, &r.sighup);
    mx_stdio_front_free(r.front); /* before the aggregate its requests live in */
    mx_gateway_free(gw);
    mx_child_shutdown(loop, CHILD_STOP_LIMIT_S); /* stdio upstreams end with their groups */
    curl_global_cleanup();
    close(in_fd);
    close(out_fd);
    mx_log_info(SUBSYS, "stopped");
    return 0;
}
