/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim command line: flags, the credential from the environment, the
 * port file, signals, and the loop. Everything it serves lives in the other
 * files of this directory (see sim.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "num.h"
#include "sim.h"
#include "tasks.h"
#include "tls.h"

struct cli {
    const char *listen;
    const char *port_file;
    const char *tls_cert; /* serve https (h2 by ALPN) with this chain and key */
    const char *tls_key;
    const char *name;
    const char *bearer_env;
    const char *cookie;
    const char *cookie_env;
    const char *log_level;
    int64_t drop_after_events;
    bool conformance;
    bool modern_only;
    bool get_stream;
    bool whoami_credential;
    const char *bad_header;
    int64_t list_ttl_ms;
    int64_t extra_tools;
    int64_t forge_progress; /* -1: off */
    int64_t huge_pages;
    const char *claim_uri;
};

static void usage(FILE *f)
{
    fputs("usage: sandbox-sim [options]\n"
          "\n"
          "A simulated sandboxed MCP server (Streamable HTTP, MCP 2025-06-18) for tests and\n"
          "demos. MCP is served at /mcp; /__stats, /__control and /__wake are for tests.\n"
          "\n"
          "  --listen ADDR            host:port to listen on (default 127.0.0.1:0)\n"
          "  --port-file FILE         write the bound port to FILE (atomic rename)\n"
          "  --name NAME              serverInfo name and whoami answer (default sandbox-sim)\n"
          "  --bearer-env VAR         require Authorization: Bearer <value of $VAR>\n"
          "  --cookie NAME            require the cookie NAME=<value of $VAR>, with\n"
          "  --cookie-env VAR           the variable holding the value\n"
          "  --pause-after-ms N       pause after N ms without /mcp requests (0: never)\n"
          "  --pause-mode MODE        hold (hold the next request) or refuse (answer\n"
          "                           --refuse-status until POST /__wake); default hold\n"
          "  --hold-ms M              how long hold mode holds (default 1000)\n"
          "  --refuse-status S        status while paused in refuse mode (default 503)\n"
          "  --wake-ms M              ready this long after POST /__wake (default 500)\n"
          "  --retry-after N          refuse mode: send Retry-After: N (seconds) with the\n"
          "                           refusal (default -1: no header)\n"
          "  --gone 1                 the sandbox was deleted: every /mcp request gets 410\n"
          "  --drop-after-events K    drop the first SSE response after K events\n"
          "  --list-ttl-ms N          put ttlMs N (a caching hint) on every list result\n"
          "  --extra-tools N          also list N generated tools gen-1 ... gen-N, each\n"
          "                           answering its own name (default 0)\n"
          "  --error-rate P           answer 503 to this share of /mcp requests (0..1)\n"
          "  --seed N                 seed of the error-rate generator (default 1)\n"
          "  --unauthorized-delay-ms N  answer a wrong credential's 401 N ms late\n"
          "  --log-level LEVEL        error, warn, info (default) or debug\n"
          "  --get-stream             GET /mcp opens the session's notification stream\n"
          "  --conformance            serve the fixture set of the MCP conformance suite\n"
          "                           instead of the sim's own tools (see README)\n"
          "  --modern-only            with --conformance: speak MCP 2026-07-28 only (a\n"
          "                           2025 request gets 400/-32022, GET and DELETE 405)\n"
          "  --whoami-credential yes  whoami also answers the credential header it got\n"
          "                           (a misbehaving server, for leak tests)\n"
          "  --forge-progress N       each step of a slow stream also sends progress for\n"
          "                           the tokens 0..N it was not given (a hostile server)\n"
          "  --huge-pages BYTES       tools/list pages never end, each one tool with a\n"
          "                           description of BYTES (a hostile server)\n"
          "  --bad-header NAME        every JSON answer at /mcp carries header NAME with\n"
          "                           a bare CR in its value (a misbehaving server)\n"
          "  --claim-uri URI          also list the resource URI and answer its read with\n"
          "                           \"claimed by NAME\" (a hostile server)\n"
          "  --help                   this text\n",
          f);
}

/* "--pause-after-ms" -> "pause_after_ms" */
static void flag_to_setting(const char *flag, char *out, size_t cap)
{
    size_t i = 0;
    for (; flag[i] && i + 1 < cap; i++)
        out[i] = flag[i] == '-' ? '_' : flag[i];
    out[i] = '\0';
}

static int parse_cli(int argc, char **argv, struct cli *cli, struct mx_sim_settings *set)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val;
        char flag[64], key[64], err[160];
        const char *eq;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(arg, "--conformance") == 0) {
            cli->conformance = true;
            continue;
        }
        if (strcmp(arg, "--modern-only") == 0) {
            cli->modern_only = true;
            continue;
        }
        if (strcmp(arg, "--get-stream") == 0) {
            cli->get_stream = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "sandbox-sim: unexpected argument '%s'\n", arg);
            return MX_EINVAL;
        }
        eq = strchr(arg, '=');
        snprintf(flag, sizeof(flag), "%.*s", (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            fprintf(stderr, "sandbox-sim: %s needs a value\n", flag);
            return MX_EINVAL;
        }
        if (strcmp(flag, "--listen") == 0) {
            cli->listen = val;
        } else if (strcmp(flag, "--port-file") == 0) {
            cli->port_file = val;
        } else if (strcmp(flag, "--tls-cert") == 0) {
            cli->tls_cert = val;
        } else if (strcmp(flag, "--tls-key") == 0) {
            cli->tls_key = val;
        } else if (strcmp(flag, "--name") == 0) {
            cli->name = val;
        } else if (strcmp(flag, "--bearer-env") == 0) {
            cli->bearer_env = val;
        } else if (strcmp(flag, "--cookie") == 0) {
            cli->cookie = val;
        } else if (strcmp(flag, "--cookie-env") == 0) {
            cli->cookie_env = val;
        } else if (strcmp(flag, "--log-level") == 0) {
            cli->log_level = val;
        } else if (strcmp(flag, "--bad-header") == 0) {
            cli->bad_header = val;
        } else if (strcmp(flag, "--whoami-credential") == 0) {
            cli->whoami_credential = strcmp(val, "yes") == 0;
        } else if (strcmp(flag, "--claim-uri") == 0) {
            cli->claim_uri = val;
        } else if (strcmp(flag, "--list-ttl-ms") == 0) {
            if (mx_num_parse(val, strlen(val), 1, 86400000, &cli->list_ttl_ms)) {
                fprintf(stderr, "sandbox-sim: --list-ttl-ms must be 1..86400000\n");
                return -1;
            }
        } else if (strcmp(flag, "--drop-after-events") == 0) {
            if (mx_num_parse(val, strlen(val), 0, 1000000, &cli->drop_after_events)) {
                fprintf(stderr, "sandbox-sim: --drop-after-events must be 0..1000000\n");
                return MX_EINVAL;
            }
        } else if (strcmp(flag, "--forge-progress") == 0) {
            if (mx_num_parse(val, strlen(val), 0, 100000, &cli->forge_progress)) {
                fprintf(stderr, "sandbox-sim: --forge-progress must be 0..100000\n");
                return MX_EINVAL;
            }
        } else if (strcmp(flag, "--huge-pages") == 0) {
            if (mx_num_parse(val, strlen(val), 1, MX_SIM_HUGE_PAGE_MAX, &cli->huge_pages)) {
                fprintf(stderr, "sandbox-sim: --huge-pages must be 1..%d\n", MX_SIM_HUGE_PAGE_MAX);
                return MX_EINVAL;
            }
        } else if (strcmp(flag, "--extra-tools") == 0) {
            if (mx_num_parse(val, strlen(val), 0, MX_SIM_EXTRA_TOOLS_MAX, &cli->extra_tools)) {
                fprintf(stderr, "sandbox-sim: --extra-tools must be 0..%d\n",
                        MX_SIM_EXTRA_TOOLS_MAX);
                return MX_EINVAL;
            }
        } else {
            flag_to_setting(flag + 2, key, sizeof(key));
            int rc = mx_sim_setting_parse(set, key, val, err, sizeof(err));
            if (rc == MX_ENOTFOUND) {
                fprintf(stderr, "sandbox-sim: unknown option %s\n", flag);
                return rc;
            }
            if (rc) {
                fprintf(stderr, "sandbox-sim: %s: %s\n", flag, err);
                return rc;
            }
        }
    }
    if (cli->modern_only && !cli->conformance) {
        fprintf(stderr, "sandbox-sim: --modern-only needs --conformance\n");
        return MX_EINVAL;
    }
    if (cli->bearer_env && (cli->cookie || cli->cookie_env)) {
        fprintf(stderr, "sandbox-sim: use either --bearer-env or --cookie/--cookie-env\n");
        return MX_EINVAL;
    }
    if ((cli->tls_cert == NULL) != (cli->tls_key == NULL)) {
        fprintf(stderr, "sandbox-sim: --tls-cert and --tls-key go together\n");
        return MX_EINVAL;
    }
    if ((cli->cookie == NULL) != (cli->cookie_env == NULL)) {
        fprintf(stderr, "sandbox-sim: --cookie and --cookie-env go together\n");
        return MX_EINVAL;
    }
    return 0;
}

/* Take the credential from $|var|, then wipe and remove it from the
 * environment: the sandbox edge holds it, not the server (see get-env). */
static int take_secret(struct mx_sim *sim, const char *var)
{
    char *v = getenv(var);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "sandbox-sim: environment variable %s is not set or empty\n", var);
        return MX_EINVAL;
    }
    sim->secret_len = strlen(v);
    sim->secret = mx_xmalloc(sim->secret_len);
    memcpy(sim->secret, v, sim->secret_len);
    OPENSSL_cleanse(v, sim->secret_len);
    unsetenv(var);
    return 0;
}

static int write_port_file(const char *path, int port)
{
    char *tmp = mx_xasprintf("%s.%ld.tmp", path, (long)getpid());
    char text[16];
    int n = snprintf(text, sizeof(text), "%d\n", port);
    int rc = MX_EIO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd >= 0) {
        bool ok = write(fd, text, (size_t)n) == n;
        ok = close(fd) == 0 && ok;
        /* rename(2) makes the whole file appear at once for a polling test. */
        if (ok && rename(tmp, path) == 0)
            rc = 0;
    }
    if (rc) {
        fprintf(stderr, "sandbox-sim: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)revents;
    mx_log_info("sim", "signal %d: stopping", w->signum);
    ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
    struct cli cli = {.listen = "127.0.0.1:0",
                      .name = "sandbox-sim",
                      .drop_after_events = -1,
                      .forge_progress = -1};
    struct mx_sim sim;
    enum mx_log_level level;
    ev_signal sigint_w, sigterm_w;
    char err[256];
    int port = 0, rc = 1;
    struct mx_tls *tls = NULL;

    memset(&sim, 0, sizeof(sim));
    mx_sim_settings_default(&sim.set);
    if (parse_cli(argc, argv, &cli, &sim.set)) {
        fprintf(stderr, "sandbox-sim --help lists the options\n");
        return 2;
    }
    if (cli.log_level) {
        if (mx_log_level_parse(cli.log_level, &level)) {
            fprintf(stderr, "sandbox-sim: unknown log level '%s'\n", cli.log_level);
            return 2;
        }
        mx_log_set_level(level);
    }
    if (cli.bearer_env) {
        sim.auth_mode = MX_SIM_AUTH_BEARER;
        if (take_secret(&sim, cli.bearer_env))
            return 2;
    } else if (cli.cookie) {
        sim.auth_mode = MX_SIM_AUTH_COOKIE;
        sim.cookie_name = mx_xstrdup(cli.cookie);
        if (take_secret(&sim, cli.cookie_env))
            return 2;
    }
    sim.name = mx_xstrdup(cli.name);
    sim.drop_after_events = cli.drop_after_events;
    sim.conformance = cli.conformance;
    sim.modern_only = cli.modern_only;
    sim.tasks = mx_sim_tasks_new();
    sim.get_stream = cli.get_stream;
    if (RAND_bytes(sim.state_key, (int)sizeof(sim.state_key)) != 1) {
        fprintf(stderr, "sandbox-sim: no randomness for the requestState key\n");
        return 1;
    }
    sim.whoami_credential = cli.whoami_credential;
    sim.forge_progress = cli.forge_progress;
    sim.huge_pages = cli.huge_pages;
    sim.bad_header = cli.bad_header;
    sim.claim_uri = cli.claim_uri;
    sim.list_ttl_ms = cli.list_ttl_ms;
    sim.extra_tools = cli.extra_tools;
    sim.loop = ev_default_loop(0);
    /* A client that leaves mid-response must not kill us with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);

    if (mx_sim_start(&sim, cli.listen, &port, err, sizeof(err))) {
        fprintf(stderr, "sandbox-sim: %s\n", err);
        goto out;
    }
    if (cli.tls_cert) {
        if (mx_tls_new(cli.tls_cert, cli.tls_key, &tls, err, sizeof(err)) != 0) {
            fprintf(stderr, "sandbox-sim: %s\n", err);
            goto out;
        }
        mx_httpd_set_tls(sim.httpd, tls);
    }
    if (cli.port_file && write_port_file(cli.port_file, port))
        goto out;
    {
        const char *colon = strrchr(cli.listen, ':');
        mx_log_info("sim", "listening on %s://%.*s:%d/mcp", cli.tls_cert ? "https" : "http",
                    (int)(colon - cli.listen), cli.listen, port);
    }
    mx_log_info("sim", "name %s, auth %s, pause after %lld ms (%s)", sim.name,
                sim.auth_mode == MX_SIM_AUTH_BEARER   ? "bearer"
                : sim.auth_mode == MX_SIM_AUTH_COOKIE ? "cookie"
                                                      : "none",
                (long long)sim.set.pause_after_ms,
                sim.set.pause_mode == MX_SIM_PAUSE_REFUSE ? "refuse" : "hold");

    ev_signal_init(&sigint_w, stop_cb, SIGINT);
    ev_signal_init(&sigterm_w, stop_cb, SIGTERM);
    ev_signal_start(sim.loop, &sigint_w);
    ev_signal_start(sim.loop, &sigterm_w);
    ev_run(sim.loop, 0);
    ev_signal_stop(sim.loop, &sigint_w);
    ev_signal_stop(sim.loop, &sigterm_w);
    rc = 0;

out:
    mx_sim_stop(&sim);
    mx_tls_free(tls);
    if (sim.secret)
        OPENSSL_cleanse(sim.secret, sim.secret_len);
    free(sim.secret);
    free(sim.cookie_name);
    free(sim.name);
    return rc;
}
