/* SPDX-License-Identifier: MIT */
/*
 * `mcplex reload`: make a running gateway re-read its config and vault, and
 * say whether it took the new config. The gateway is found the way `mcplex
 * status` finds it (the config's [listen], or --url); its /health names its
 * process, which gets SIGHUP; then /health is asked again until the reload
 * counters move. The gateway reloads the file it was started with: -c only
 * says where to find it.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "cmd.h"
#include "cmdline.h"
#include "model.h"

#define RELOAD_WAIT_MS 30000 /* secrets from `cmd:` sources may take a while */
#define POLL_MS        100

static void usage(FILE *f)
{
    fprintf(f, "usage: mcplex reload [-c FILE | --url URL [--ca FILE]]\n"
               "\n"
               "Makes the running gateway re-read its config file and vault (as SIGHUP\n"
               "does) and waits for the outcome: unchanged upstreams keep their sessions,\n"
               "new ones join, removed ones leave once their requests end. A config with\n"
               "an error is refused with its file:line:col and the old one keeps serving.\n"
               "The gateway is found as `mcplex status` finds it:\n"
               "\n" MX_STATUS_WHERE_HELP "  -h, --help         this text\n");
}

static json_int_t counter(const json_t *health, const char *name)
{
    return json_integer_value(json_object_get(json_object_get(health, "reload"), name));
}

/* Whether |pid| is an mcplex process of this user: never signal another. */
static bool is_mcplex(pid_t pid)
{
    char path[64], comm[64] = "";
    snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool ok = fgets(comm, sizeof(comm), f) != NULL;
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    /* the build names it mcplex; a package may too: accept mcplex* */
    return ok && strncmp(comm, "mcplex", 6) == 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* With -c, the file is read here first: an error is shown before anything
 * is sent (the gateway would refuse it the same way). */
static int precheck(const char *cfg_arg)
{
    struct mx_diag diag = {0};
    struct mx_config *cfg = NULL;
    char msg[1024];
    int rc = mx_config_open(cfg_arg, &cfg, &diag);
    mx_config_free(cfg);
    if (rc == 0)
        return 0;
    fprintf(stderr, "mcplex: %s\nmcplex: reload refused: the running gateway keeps its config\n",
            mx_diag_format(&diag, msg, sizeof(msg)));
    return 1;
}

static int reload(const struct mx_status_where *w)
{
    if (w->url == NULL && precheck(w->cfg) != 0)
        return 1;
    json_t *h = mx_status_fetch(w);
    if (h == NULL)
        return 1;
    json_t *jpid = json_object_get(h, "pid");
    json_int_t ok0 = counter(h, "ok"), failed0 = counter(h, "failed");
    json_int_t pid_val = json_is_integer(jpid) ? json_integer_value(jpid) : 0;
    json_decref(h);
    if (pid_val <= 1) {
        fprintf(stderr, "mcplex: the gateway's /health does not name its process; it may be "
                        "older than `mcplex reload`: send it SIGHUP\n");
        return 1;
    }
    pid_t pid = (pid_t)pid_val;
    if (!is_mcplex(pid)) {
        fprintf(stderr,
                "mcplex: process %ld is not an mcplex visible from here (another machine or "
                "container?); send SIGHUP to the gateway there\n",
                (long)pid);
        return 1;
    }
    if (kill(pid, SIGHUP) != 0) {
        fprintf(stderr, "mcplex: cannot signal process %ld: %s\n", (long)pid, strerror(errno));
        return 1;
    }
    for (long waited = 0; waited < RELOAD_WAIT_MS; waited += POLL_MS) {
        sleep_ms(POLL_MS);
        h = mx_status_fetch(w);
        if (h == NULL)
            return 1;
        json_int_t ok = counter(h, "ok"), failed = counter(h, "failed");
        const char *err = json_string_value(json_object_get(json_object_get(h, "reload"), "error"));
        int rc = -1;
        if (failed != failed0) {
            fprintf(stderr, "mcplex: reload refused, the running config keeps serving: %s\n",
                    err ? err : "(no reason given)");
            rc = 1;
        } else if (ok != ok0) {
            size_t n = json_array_size(json_object_get(h, "upstreams"));
            printf("reloaded: %zu upstream%s configured\n", n, n == 1 ? "" : "s");
            rc = 0;
        }
        json_decref(h);
        if (rc >= 0)
            return rc;
    }
    fprintf(stderr, "mcplex: the gateway did not report a reload within %d s\n",
            RELOAD_WAIT_MS / 1000);
    return 1;
}

/* Whether anything accepts TCP connections at the host and port of the
 * base URL |base| ("https://127.0.0.1:8443", "http://[::1]:80"). */
static bool listening(const char *base)
{
    const char *h = strstr(base, "://");
    h = h ? h + 3 : base;
    const char *colon = strrchr(h, ':');
    if (colon == NULL)
        return false;
    char *host = mx_xstrndup(h, (size_t)(colon - h));
    if (host[0] == '[') {
        memmove(host, host + 1, strlen(host));
        host[strcspn(host, "]")] = '\0';
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    bool up = false;
    if (getaddrinfo(host, colon + 1, &hints, &res) == 0) {
        for (struct addrinfo *ai = res; ai && !up; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0)
                continue;
            up = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
            close(fd);
        }
        freeaddrinfo(res);
    }
    free(host);
    return up;
}

int mx_reload_after_edit(const char *cfg_path)
{
    struct mx_diag diag = {0};
    struct mx_config *cfg = NULL;
    char msg[1024], *base = NULL, *ca = NULL;
    if (mx_config_load(cfg_path, &cfg, &diag) != 0) {
        fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, msg, sizeof(msg)));
        return 1;
    }
    int rc = mx_status_gateway_base(cfg, &base, &ca);
    mx_config_free(cfg);
    free(ca);
    if (rc != 0) {
        free(base);
        return 1;
    }
    if (!listening(base)) {
        printf("no gateway is running at %s; `mcplex serve` will use the new config\n", base);
        free(base);
        return 0;
    }
    free(base);
    if (mx_cmdline_curl_init() != 0)
        return 1;
    struct mx_status_where w = {cfg_path, NULL, NULL};
    rc = reload(&w);
    curl_global_cleanup();
    return rc;
}

int mx_cmd_reload(int argc, char **argv)
{
    static const struct option opts[] = {
        MX_STATUS_WHERE_OPTIONS, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    static const struct mx_cmdline cl = {"c:h", opts, usage, mx_status_where_opt,
                                         mx_status_where_fits};
    struct mx_status_where w = {0};
    int rc = mx_cmdline_parse(&cl, argc, argv, &w);
    if (rc != MX_CMDLINE_RUN)
        return rc;
    if (mx_cmdline_curl_init() != 0)
        return 1;
    rc = reload(&w);
    curl_global_cleanup();
    return rc;
}
