/* SPDX-License-Identifier: MIT */
/*
 * `mcplex doctor`: one command that looks at everything a working setup
 * needs and says, line by line, what is right, what is wrong and the
 * command that fixes it. Per upstream a real initialize and tools/list with
 * its own credential (the engine of `mcplex bench`, direct to the upstream);
 * for the gateway whether one runs on [listen] (and its pid) or something
 * else holds the port; the local CA's trust by the system store and by
 * Node; the modes of the vault and the state directory. A command-line
 * tool: it blocks, every request has a timeout. Nothing it prints holds a
 * secret: references are shown as mx_secret_ref_show does.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "alloc.h"
#include "benchrun.h"
#include "certs.h"
#include "cmd.h"
#include "cmd_status.h"
#include "cmdline.h"
#include "diag.h"
#include "model.h"
#include "secret.h"
#include "secret_ref.h"
#include "trust.h"
#include "upsess.h"

#define PROBE_TIMEOUT_MS 10000

struct doctor {
    int problems;
    int warnings;
};

/* One line: "ok", "warn", "FAIL" or "skip", what was looked at, and for a
 * problem the fix. */
static void say(struct doctor *d, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct doctor *d, const char *tag, const char *fmt, ...)
{
    va_list ap;
    if (strcmp(tag, "FAIL") == 0)
        d->problems++;
    else if (strcmp(tag, "warn") == 0)
        d->warnings++;
    printf("%-5s ", tag);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A file that holds secrets, or a directory of mcplex's state: yours, and
 * nobody else's to read or write. */
static void private_mode(struct doctor *d, const char *what, const char *path, bool dir)
{
    struct stat st;
    if (path == NULL || stat(path, &st) != 0) {
        say(d, "ok", "%s %s: not there yet (made 0%o on first use)", what, path ? path : "-",
            dir ? 0700 : 0600);
        return;
    }
    unsigned mode = (unsigned)(st.st_mode & 07777);
    if (st.st_uid != geteuid())
        say(d, "FAIL", "%s %s: owned by uid %u, not you; fix: chown %u %s", what, path,
            (unsigned)st.st_uid, (unsigned)geteuid(), path);
    else if (st.st_mode & (dir ? 022 : 077))
        say(d, "FAIL", "%s %s: mode 0%o lets others in; fix: chmod %s %s", what, path, mode,
            dir ? "700" : "600", path);
    else
        say(d, "ok", "%s %s: yours, mode 0%o", what, path, mode);
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static void check_ca(struct doctor *d, const struct mx_config *cfg)
{
    if (!cfg->listen.tls) {
        say(d, "ok", "TLS: off ([listen] tls = false); clients use http://");
        return;
    }
    if (cfg->listen.cert) {
        say(d, "ok", "TLS: your own certificate %s; its trust is yours to set up",
            cfg->listen.cert);
        return;
    }
    struct mx_certs_paths p;
    char *dir = mx_xasprintf("%s/certs", cfg->proxy.state_dir);
    mx_certs_paths_init(&p, dir);
    free(dir);
    struct stat st;
    if (stat(p.ca_cert, &st) != 0) {
        say(d, "warn", "CA %s: not made yet; fix: mcplex certs init (serve makes it at start)",
            p.ca_cert);
        mx_certs_paths_clear(&p);
        return;
    }
    if (mx_trust_system_has(p.ca_cert))
        say(d, "ok", "CA %s: trusted by the system store", p.ca_cert);
    else
        say(d, "warn",
            "CA %s: not trusted by the system store (curl, browsers); fix: mcplex "
            "certs trust",
            p.ca_cert);
    const char *extra = getenv("NODE_EXTRA_CA_CERTS");
    const char *sys = getenv("NODE_USE_SYSTEM_CA");
    if (same_file(extra, p.ca_cert))
        say(d, "ok", "CA: Node-based clients see it (NODE_EXTRA_CA_CERTS)");
    else if (sys && strcmp(sys, "1") == 0 && mx_trust_system_has(p.ca_cert))
        say(d, "ok", "CA: Node-based clients see it (NODE_USE_SYSTEM_CA=1)");
    else
        say(d, "warn",
            "CA: Node-based clients (Claude Code, the SDK) ignore the system store; "
            "fix: export NODE_EXTRA_CA_CERTS=%s",
            p.ca_cert);
    mx_certs_paths_clear(&p);
}

static void check_gateway(struct doctor *d, const struct mx_config *cfg, const char *cfg_path)
{
    long pid = 0;
    switch (mx_status_port_owner(cfg, &pid)) {
    case MX_PORT_MCPLEX:
        say(d, "ok", "gateway: mcplex (pid %ld) serves %s", pid, cfg->listen.address);
        break;
    case MX_PORT_FREE:
        say(d, "warn",
            "gateway: nothing serves %s; fix: mcplex serve -c %s (or systemctl --user "
            "start mcplex)",
            cfg->listen.address, cfg_path);
        break;
    case MX_PORT_OTHER:
        say(d, "FAIL",
            "gateway: %s is taken by another program, not mcplex; fix: stop it, or "
            "choose another [listen] address",
            cfg->listen.address);
        break;
    }
}

/* How to put the right credential where |ref| reads it. */
static void secret_fix(const char *ref, const char *shown, char *out, size_t cap)
{
    if (ref == NULL)
        snprintf(out, cap, "give the server a secret (secret = \"vault:NAME\")");
    else if (strncmp(ref, "vault:", 6) == 0)
        snprintf(out, cap, "store the right token: mcplex vault set %s (value on stdin)", ref + 6);
    else if (strncmp(ref, "file:", 5) == 0)
        snprintf(out, cap, "write the right token to %s (mode 0600)", ref + 5);
    else if (strncmp(ref, "env:", 4) == 0)
        snprintf(out, cap, "set %s to the right token where mcplex runs", ref + 4);
    else
        snprintf(out, cap, "make %s give the right token", shown);
}

/* What to do about a failed probe, from what failed. */
static void probe_fix(const struct mx_server_cfg *sc, const char *shown, const char *err, char *out,
                      size_t cap)
{
    if (strstr(err, "HTTP 401") || strstr(err, "HTTP 403"))
        secret_fix(sc->secret_ref, shown, out, cap);
    else if (strstr(err, "SSL") || strstr(err, "certificate"))
        snprintf(out, cap,
                 "its TLS did not verify: give the CA that signed it as the server's "
                 "'ca'");
    else if (strstr(err, "HTTP 404"))
        snprintf(out, cap, "no MCP endpoint at that url: check its path (often /mcp)");
    else
        snprintf(out, cap, "start the sandbox (or its wake hook), or correct its url");
}

static void check_upstream(struct doctor *d, const struct mx_config *cfg, struct mx_server_cfg *sc)
{
    char shown[256], msg[1024], err[512], fix[512];
    struct mx_diag diag = {0};
    const char *ref =
        sc->secret_ref ? mx_secret_ref_show(sc->secret_ref, shown, sizeof(shown)) : "(no secret)";
    if (mx_server_resolve_secrets(cfg, sc, &diag) != 0) {
        say(d, "FAIL", "upstream %s: %s; fix: mcplex check -c %s, then store the secret", sc->name,
            mx_diag_format(&diag, msg, sizeof(msg)), cfg->path);
        return;
    }
    if (!(mx_upsess_caps(sc) & MX_UPSESS_CAP_DIRECT)) {
        say(d, "skip", "upstream %s: %s upstream, started by mcplex itself; not probed here",
            sc->name, mx_upsess_transport_label(sc));
        return;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct mx_bench_side *s = mx_bench_side_new(
        sc->url, sc->ca, mx_secret_header_new(sc->secret, sc->auth, sc->auth_name), false,
        PROBE_TIMEOUT_MS);
    if (mx_bench_side_open(s, err, sizeof(err)) != 0) {
        probe_fix(sc, ref, err, fix, sizeof(fix));
        say(d, "FAIL", "upstream %s: initialize failed after %.0f ms: %s (secret %s); fix: %s",
            sc->name, ms_since(&t0), err, ref, fix);
        mx_bench_side_free(s);
        return;
    }
    double init_ms = ms_since(&t0);
    json_t *tools = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mx_bench_side_tools(s, &tools, err, sizeof(err)) != 0) {
        probe_fix(sc, ref, err, fix, sizeof(fix));
        say(d, "FAIL", "upstream %s: initialize ok in %.1f ms, tools/list failed: %s; fix: %s",
            sc->name, init_ms, err, fix);
    } else {
        size_t n = json_array_size(json_object_get(tools, "tools"));
        say(d, "ok",
            "upstream %s: initialize %.1f ms, tools/list %.1f ms, %zu tool%s%s (secret %s)",
            sc->name, init_ms, ms_since(&t0), n, n == 1 ? "" : "s",
            json_object_get(tools, "nextCursor") ? " on the first page" : "", ref);
    }
    json_decref(tools);
    mx_bench_side_free(s);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex doctor [-c FILE]\n"
               "\n"
               "Checks a setup end to end and prints one line per check: ok, warn,\n"
               "FAIL or skip, and for each problem the command that fixes it.\n"
               "Per upstream: its secret, a real initialize and tools/list with it\n"
               "(time and tool count). The gateway: whether an mcplex serves [listen]\n"
               "(its pid) or another program holds the port; whether the local CA is\n"
               "trusted by the system store and by Node; the modes of the vault and\n"
               "the state directory. `mcplex check` stays offline.\n"
               "\n"
               "  -c, --config FILE  config file (default: $MCPLEX_CONFIG, ./mcplex.toml,\n"
               "                     $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"
               "  -h, --help         this text\n"
               "\n"
               "Exit status: 0 no problem (warnings allowed), 1 a problem, 2 usage error.\n");
}

static int doctor_opt(int ch, const char *arg, void *data)
{
    const char **cfg = data;
    if (ch == 'c')
        *cfg = arg;
    return 0;
}

int mx_cmd_doctor(int argc, char **argv)
{
    static const struct option lo[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct mx_cmdline cl = {"c:h", lo, usage, doctor_opt, NULL};
    const char *cfg_arg = NULL;
    int rc = mx_cmdline_parse(&cl, argc, argv, &cfg_arg);
    if (rc != MX_CMDLINE_RUN)
        return rc;
    struct doctor d = {0};
    struct mx_config *cfg = mx_cmdline_config(cfg_arg);
    if (cfg == NULL) {
        say(&d, "FAIL", "config: it does not load (the error is above); fix: mcplex check");
        return 1;
    }
    say(&d, "ok", "config %s: %zu server%s, listen %s (%s)", cfg->path, cfg->server_cnt,
        cfg->server_cnt == 1 ? "" : "s", cfg->listen.address, cfg->listen.tls ? "TLS" : "plain");
    if (cfg->server_cnt == 0)
        say(&d, "warn", "config: no [servers.NAME]; fix: mcplex add NAME URL");
    private_mode(&d, "vault", cfg->proxy.vault, false);
    private_mode(&d, "state dir", cfg->proxy.state_dir, true);
    if (mx_cmdline_curl_init() != 0) {
        mx_config_free(cfg);
        return 1;
    }
    check_gateway(&d, cfg, cfg->path);
    check_ca(&d, cfg);
    for (size_t i = 0; i < cfg->server_cnt; i++)
        check_upstream(&d, cfg, &cfg->servers[i]);
    printf("doctor: %d problem%s, %d warning%s\n", d.problems, d.problems == 1 ? "" : "s",
           d.warnings, d.warnings == 1 ? "" : "s");
    mx_config_free(cfg);
    return d.problems ? 1 : 0;
}
