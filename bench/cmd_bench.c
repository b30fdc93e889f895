/* SPDX-License-Identifier: MIT */
/*
 * `mcplex bench`: for each upstream of the config, the same MCP requests
 * sent directly (with the upstream's credential, resolved as serve resolves
 * it) and through the running gateway's /mcp/<server>, or its merged /mcp
 * with --merged (with the client token when one is configured), interleaved
 * so both see the same machine state.
 * Rows: TCP connect, TLS handshake, initialize, ping, tools/list and one
 * tools/call, sequentially and at a concurrency; optionally the first call
 * after an idle pause (--wake). Prints a table or JSON. The requests are in
 * benchrun.c, the order statistics in benchstat.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "benchreport.h"
#include "benchrun.h"
#include "benchstat.h"
#include "cmd.h"
#include "cmd_status.h"
#include "cmdline.h"
#include "diag.h"
#include "err.h"
#include "model.h"
#include "num.h"
#include "secret.h"
#include "upsess.h"

#define DEFAULT_N           100
#define DEFAULT_CONC        8
#define MAX_N               1000000
#define MAX_CONC            1024
#define REQUEST_TIMEOUT_MS  30000L
#define WAKE_TIMEOUT_MS     300000L
#define CHUNKS              4 /* a concurrent row alternates sides this many times */
#define WAKE_CONTROL_ROUNDS 5

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mcplex bench [-c FILE] [--server NAME] [--call TOOL [--args JSON]]\n"
            "                    [-n N] [--concurrency C] [--json | --wide] [--wake]\n"
            "                    [--merged] [--html FILE]\n"
            "\n"
            "Measures each upstream directly and through the running gateway\n"
            "(/mcp/<server> at the config's [listen] address): TCP connect, TLS\n"
            "handshake, initialize, ping, tools/list and one tools/call, first one\n"
            "request at a time, then C at a time; prints p50/p99 (--wide: p90, max) and the\n"
            "latency the gateway adds. Direct requests carry the upstream's credential\n"
            "from the config (never printed); gateway requests carry the client token\n"
            "when one is configured.\n"
            "\n"
            "  -c, --config FILE    the config (default: $MCPLEX_CONFIG, ./mcplex.toml,\n"
            "                       $XDG_CONFIG_HOME/mcplex/mcplex.toml)\n"
            "  --server NAME        only this upstream (default: every HTTP upstream)\n"
            "  --call TOOL          the tool of the tools/call rows (the upstream's own\n"
            "                       name); without it there are no tools/call rows\n"
            "  --args JSON          its arguments, a JSON object (default {})\n"
            "  -n N                 requests per row and side (default %d)\n"
            "  --concurrency C      requests in flight for the concurrent rows (default\n"
            "                       %d; 1: sequential rows only)\n"
            "  --json               print the results as JSON instead of a table\n"
            "  --wide               every column (HTTP version, p90, max); the default\n"
            "                       table fits 100 columns\n"
            "  --wake               also measure the first call after an idle pause: wait\n"
            "                       --wake-after (no requests to the upstream meanwhile),\n"
            "                       then time one call through the gateway\n"
            "  --wake-after DUR     how long the sandbox takes to pause when idle\n"
            "                       (default: the server's idle_close + 30s)\n"
            "  --wake-control       pause the upstream at once through its POST /__control\n"
            "                       (sandbox-sim's test switch) instead of waiting, and\n"
            "                       measure %d rounds, direct and through the gateway\n"
            "  --merged             through the gateway's merged /mcp instead of\n"
            "                       /mcp/<server>: the --call tool is called by the name\n"
            "                       /mcp lists it under (plain, else <alias>_TOOL)\n"
            "  --html FILE          also write a report page to FILE: the latency\n"
            "                       distribution (CDF) of each row direct and through the\n"
            "                       gateway, what the gateway added, and the wake timeline\n"
            "                       with --wake (inline SVG, no script)\n"
            "  --gateway URL        the gateway's base URL instead of the config's [listen]\n"
            "  --cacert FILE        with an https --gateway: the CA to trust (PEM)\n"
            "  --http1.1            HTTP/1.1 only (default: h2 where TLS offers it)\n"
            "  -h, --help           this text\n"
            "\n"
            "Exit status: 0 every row measured, 1 an upstream or the gateway could not be\n"
            "reached or a row had no successful request, 2 usage error.\n",
            DEFAULT_N, DEFAULT_CONC, WAKE_CONTROL_ROUNDS);
}

struct opts {
    const char *config;
    const char *server;
    const char *call;
    const char *args_arg; /* --args as given */
    json_t *args;         /* and as parsed */
    size_t n;
    size_t conc;
    bool json;
    bool wake;
    int64_t wake_after_ms; /* -1: the server's idle_close + 30 s */
    bool wake_control;
    const char *gateway;
    const char *cacert;
    bool http1;
    bool merged;      /* the gateway side at /mcp, not /mcp/<server> */
    bool wide;        /* every column; else the table fits 100 columns */
    const char *html; /* --html FILE */
};

/* One measurement: the same requests direct and through the gateway. */
struct row {
    const char *server; /* borrowed from the config */
    const char *measure;
    size_t conc;
    bool has_direct;
    struct mx_benchstat st[2]; /* 0 direct, 1 gateway */
    int64_t wall_us[2];
    char http[2][8];
    char why[2][CURL_ERROR_SIZE + 64]; /* the last error of each side, "" when none */
};

struct report {
    struct row *rows;
    size_t cnt, cap;
    json_t *servers; /* [{name, status, note}] */
    int failures;
};

static const char *const PATHS[2] = {"direct", "gateway"};

static struct row *row_add(struct report *r, const char *server, const char *measure, size_t conc,
                           size_t n)
{
    if (r->cnt == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 32;
        r->rows = mx_xrealloc(r->rows, r->cap * sizeof(*r->rows));
    }
    struct row *w = &r->rows[r->cnt++];
    memset(w, 0, sizeof(*w));
    w->server = server;
    w->measure = measure;
    w->conc = conc;
    w->has_direct = true;
    mx_benchstat_init(&w->st[0], n);
    mx_benchstat_init(&w->st[1], n);
    return w;
}

/* ---- progress on a terminal ---- */

struct progress {
    bool on;
    char label[96];
    uint64_t base, total; /* over both sides of a row */
    int64_t last_us;
};

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void progress_draw(struct progress *p, uint64_t done, bool force)
{
    if (!p->on)
        return;
    int64_t t = mono_us();
    if (!force && t - p->last_us < 100000)
        return;
    p->last_us = t;
    char line[160];
    mx_benchstat_bar(line, sizeof(line), 30, done, p->total, p->label);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

static void progress_cb(void *ud, uint64_t done, uint64_t total)
{
    struct progress *p = ud;
    (void)total;
    progress_draw(p, p->base + done, false);
}

static void progress_end(struct progress *p)
{
    if (p->on) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}

/* ---- measuring ---- */

static const char *kind_measure(enum mx_bench_kind k)
{
    switch (k) {
    case MX_BENCH_CONNECT:
        return "tcp connect";
    case MX_BENCH_INITIALIZE:
        return "initialize";
    case MX_BENCH_PING:
        return "ping";
    case MX_BENCH_TOOLS_LIST:
        return "tools/list";
    case MX_BENCH_TOOLS_CALL:
        return "tools/call";
    }
    return "?";
}

/*
 * Measure |kind| at |conc| on both sides. Sequential rows alternate one
 * request at a time; concurrent rows alternate in CHUNKS batches, so neither
 * side gets the quieter half of the run.
 */
static void measure(struct report *rep, const char *server, struct mx_bench_side *sd[2],
                    enum mx_bench_kind kind, size_t n, size_t conc, struct progress *pg)
{
    struct row *w = row_add(rep, server, kind_measure(kind), conc, n);
    struct row *tls = NULL;
    bool any_tls = mx_bench_side_is_tls(sd[0]) || mx_bench_side_is_tls(sd[1]);
    if (kind == MX_BENCH_CONNECT && any_tls) {
        tls = row_add(rep, server, "tls handshake", conc, n);
        w = &rep->rows[rep->cnt - 2]; /* the realloc may have moved it */
        /* a plain side has no handshake: only the TLS sides fill this row */
        tls->has_direct = mx_bench_side_is_tls(sd[0]);
    }
    snprintf(pg->label, sizeof(pg->label), "%s  %s  c=%zu", server, w->measure, conc);
    pg->base = 0;
    pg->total = 2 * (uint64_t)n;
    size_t per = conc <= 1 ? 1 : (n + CHUNKS - 1) / CHUNKS;
    size_t sent[2] = {0, 0}, errs[2] = {0, 0};
    while (sent[0] < n || sent[1] < n) {
        for (int i = 0; i < 2; i++) {
            size_t k = n - sent[i] < per ? n - sent[i] : per;
            if (k == 0)
                continue;
            int64_t wall = 0;
            mx_bench_side_run(sd[i], kind, k, conc, &w->st[i], tls ? &tls->st[i] : NULL, &wall,
                              progress_cb, pg);
            w->wall_us[i] += wall;
            if (w->st[i].errors > errs[i]) {
                errs[i] = w->st[i].errors;
                snprintf(w->why[i], sizeof(w->why[i]), "%s", mx_bench_side_last_error(sd[i]));
            }
            sent[i] += k;
            pg->base += k;
            snprintf(w->http[i], sizeof(w->http[i]), "%s", mx_bench_side_http_version(sd[i]));
        }
    }
    if (tls) {
        for (int i = 0; i < 2; i++) {
            tls->wall_us[i] = w->wall_us[i];
            memcpy(tls->http[i], w->http[i], sizeof(tls->http[i]));
        }
    }
}

/* "http://host:port/path" → "http://host:port/__control" (sandbox-sim's switch). */
static char *control_url(const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t hostlen = strcspn(p, "/?#");
    return mx_xasprintf("%.*s/__control", (int)((size_t)(p - url) + hostlen), url);
}

/* POST {"action":"pause"} to the upstream's /__control with its credential. */
static int pause_upstream(const char *url, const char *ca, const struct mx_server_cfg *sc)
{
    char *cu = control_url(url);
    char *auth = mx_secret_header_new(sc->secret, sc->auth, sc->auth_name);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth)
        h = curl_slist_append(h, auth);
    CURL *c = curl_easy_init();
    long status = 0;
    CURLcode rc = CURLE_FAILED_INIT;
    if (c) {
        FILE *null = fopen("/dev/null", "w");
        curl_easy_setopt(c, CURLOPT_URL, cu);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"action\":\"pause\"}");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
        if (null)
            curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
        if (ca)
            curl_easy_setopt(c, CURLOPT_CAINFO, ca);
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        if (null)
            fclose(null);
    }
    for (struct curl_slist *i = h; i; i = i->next)
        memset(i->data, 0, strlen(i->data));
    curl_slist_free_all(h);
    mx_secret_wipe_free(auth);
    free(cu);
    return rc == CURLE_OK && status == 200 ? 0 : MX_EUPSTREAM;
}

static void sleep_ms(int64_t ms, struct progress *pg)
{
    int64_t end = mono_us() + ms * 1000;
    for (;;) {
        int64_t left = end - mono_us();
        if (left <= 0)
            break;
        progress_draw(pg, (uint64_t)(ms * 1000 - left) / 1000, false);
        struct timespec ts = {0, (left > 200000 ? 200000 : left) * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The first call after an idle pause, through the gateway (and direct with
 * --wake-control, where each round pauses the sandbox again). */
static int measure_wake(struct report *rep, const struct opts *o, const struct mx_server_cfg *sc,
                        struct mx_bench_side *sd[2], struct mx_bench_side *wk[2],
                        struct progress *pg)
{
    enum mx_bench_kind kind = o->call ? MX_BENCH_TOOLS_CALL : MX_BENCH_PING;
    size_t rounds = o->wake_control ? WAKE_CONTROL_ROUNDS : 1;
    struct row *w = row_add(rep, sc->name, o->call ? "wake: tools/call" : "wake: ping", 1, rounds);
    w->has_direct = o->wake_control;
    int64_t after = o->wake_after_ms >= 0 ? o->wake_after_ms : sc->idle_close_ms + 30000;
    (void)sd;
    for (size_t r = 0; r < rounds; r++) {
        for (int i = o->wake_control ? 0 : 1; i < 2; i++) {
            if (o->wake_control) {
                if (pause_upstream(sc->url, sc->ca, sc) != 0) {
                    fprintf(stderr, "mcplex: %s: POST /__control did not pause the upstream\n",
                            sc->name);
                    return MX_EUPSTREAM;
                }
            } else {
                snprintf(pg->label, sizeof(pg->label), "%s  waiting %llds for an idle pause",
                         sc->name, (long long)(after / 1000));
                pg->total = (uint64_t)after;
                sleep_ms(after, pg);
            }
            int64_t wall = 0;
            size_t before = w->st[i].errors;
            mx_bench_side_run(wk[i], kind, 1, 1, &w->st[i], NULL, &wall, NULL, NULL);
            w->wall_us[i] += wall;
            if (w->st[i].errors > before)
                snprintf(w->why[i], sizeof(w->why[i]), "%s", mx_bench_side_last_error(wk[i]));
            snprintf(w->http[i], sizeof(w->http[i]), "%s", mx_bench_side_http_version(wk[i]));
        }
    }
    return 0;
}

static void server_note(struct report *rep, const char *name, const char *status, const char *note)
{
    json_array_append_new(
        rep->servers, json_pack("{s:s, s:s, s:s?}", "name", name, "status", status, "note", note));
}

static bool tool_listed(const json_t *tools_result, const char *tool)
{
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(tools_result, "tools"), i, t)
    {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && strcmp(n, tool) == 0)
            return true;
    }
    return false;
}

/* Both sides of one server: new sessions, the rows, the sessions closed. */
static void bench_server(struct report *rep, const struct opts *o, const struct mx_config *cfg,
                         const struct mx_server_cfg *sc, const char *gw_base, const char *gw_ca)
{
    char err[512];
    struct mx_bench_side *sd[2] = {NULL, NULL}, *wk[2] = {NULL, NULL};
    struct progress pg = {.on = isatty(STDERR_FILENO) == 1};

    if (!(mx_upsess_caps(sc) & MX_UPSESS_CAP_DIRECT)) {
        char why[128];
        snprintf(why, sizeof(why), "%s upstream: %s", mx_upsess_transport_label(sc),
                 sc->url ? "not measured" : "there is no direct HTTP path to compare with");
        server_note(rep, sc->name, "skipped", why);
        return;
    }
    char *gw_url =
        o->merged ? mx_xasprintf("%s/mcp", gw_base) : mx_xasprintf("%s/mcp/%s", gw_base, sc->name);
    for (int pass = 0; pass < (o->wake ? 2 : 1); pass++) {
        struct mx_bench_side **dst = pass == 0 ? sd : wk;
        dst[0] = mx_bench_side_new(sc->url, sc->ca,
                                   mx_secret_header_new(sc->secret, sc->auth, sc->auth_name),
                                   o->http1, pass ? WAKE_TIMEOUT_MS : REQUEST_TIMEOUT_MS);
        dst[1] = mx_bench_side_new(
            gw_url, gw_ca,
            cfg->listen.client_token
                ? mx_secret_header_new(cfg->listen.client_token, MX_AUTH_BEARER, NULL)
                : NULL,
            o->http1, pass ? WAKE_TIMEOUT_MS : REQUEST_TIMEOUT_MS);
    }
    free(gw_url);

    for (int i = 0; i < 2; i++) {
        if (mx_bench_side_open(sd[i], err, sizeof(err)) != 0 ||
            (wk[i] && mx_bench_side_open(wk[i], err, sizeof(err)) != 0)) {
            char *note = mx_xasprintf("%s: %s", PATHS[i], err);
            fprintf(stderr, "mcplex: %s: %s\n", sc->name, note);
            server_note(rep, sc->name, "unreachable", note);
            free(note);
            rep->failures++;
            goto out;
        }
    }

    bool call = false;
    char *gw_call = NULL; /* the name the gateway side lists the tool under */
    if (o->call) {
        json_t *tools = NULL;
        if (mx_bench_side_tools(sd[1], &tools, err, sizeof(err)) != 0) {
            fprintf(stderr, "mcplex: %s: gateway: %s\n", sc->name, err);
        } else if (tool_listed(tools, o->call)) {
            gw_call = mx_xstrdup(o->call);
        } else if (o->merged) {
            /* /mcp prefixes a name with the server's alias on a collision
             * or always (the name rule); a shortened name is not looked for */
            gw_call = mx_xasprintf("%s_%s", sc->alias ? sc->alias : sc->name, o->call);
            if (!tool_listed(tools, gw_call)) {
                free(gw_call);
                gw_call = NULL;
            }
        }
        if (gw_call) {
            call = true;
        } else if (tools) {
            fprintf(stderr, "mcplex: %s: offers no tool '%s'; no tools/call rows\n", sc->name,
                    o->call);
        }
        json_decref(tools);
        for (int i = 0; i < 2 && call; i++) {
            const char *name = i == 1 ? gw_call : o->call;
            mx_bench_side_set_call(sd[i], name, o->args);
            if (wk[i])
                mx_bench_side_set_call(wk[i], name, o->args);
        }
        free(gw_call);
    }
    server_note(rep, sc->name, "measured",
                o->call && !call ? "the --call tool is not offered; no tools/call rows" : NULL);

    static const enum mx_bench_kind kinds[] = {MX_BENCH_CONNECT, MX_BENCH_INITIALIZE, MX_BENCH_PING,
                                               MX_BENCH_TOOLS_LIST, MX_BENCH_TOOLS_CALL};
    size_t concs[2] = {1, o->conc};
    for (size_t c = 0; c < (o->conc > 1 ? 2u : 1u); c++) {
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            if (kinds[k] == MX_BENCH_TOOLS_CALL && !call)
                continue;
            measure(rep, sc->name, sd, kinds[k], o->n, concs[c], &pg);
        }
    }
    if (o->wake && measure_wake(rep, o, sc, sd, wk, &pg) != 0)
        rep->failures++;
out:
    progress_end(&pg);
    for (int i = 0; i < 2; i++) {
        mx_bench_side_free(sd[i]);
        mx_bench_side_free(wk[i]);
    }
}

/* ---- output ---- */

#define HTML_CAP (32 * 1024 * 1024)

/* The --html page into |path|, from the samples in the order they came
 * (before the table sorts them). Returns 0, or 1 after saying why. */
static int write_html(const struct report *rep, const struct opts *o, const char *gw_base,
                      const char *path)
{
    struct mx_benchreport_row *rows = mx_xcalloc(rep->cnt + 1, sizeof(*rows));
    for (size_t i = 0; i < rep->cnt; i++) {
        const struct row *w = &rep->rows[i];
        rows[i].server = w->server;
        rows[i].measure = w->measure;
        rows[i].conc = w->conc;
        rows[i].wake = strncmp(w->measure, "wake:", 5) == 0;
        for (int k = 0; k < 2; k++) {
            bool shown = k == 1 || w->has_direct;
            rows[i].us[k] = w->st[k].us;
            rows[i].cnt[k] = shown ? w->st[k].cnt : 0;
            rows[i].errors[k] = w->st[k].errors;
        }
    }
    char when[40];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
    struct mx_benchreport r = {MX_VERSION, gw_base, o->merged ? "/mcp" : "/mcp/<server>",
                               o->call,    when,    o->n,
                               o->conc,    rows,    rep->cnt};
    struct mx_buf b;
    int ret = 1;
    mx_buf_init(&b, HTML_CAP);
    if (mx_benchreport_html(&b, &r) != 0) {
        fprintf(stderr, "mcplex: the --html report would exceed %d MiB; use a smaller -n\n",
                HTML_CAP / (1024 * 1024));
    } else {
        FILE *f = fopen(path, "w");
        if (f == NULL || fwrite(mx_buf_data(&b), 1, mx_buf_len(&b), f) != mx_buf_len(&b)) {
            fprintf(stderr, "mcplex: cannot write the --html report to %s: %s\n", path,
                    strerror(errno));
        } else {
            ret = 0;
        }
        if (f && fclose(f) != 0 && ret == 0) {
            fprintf(stderr, "mcplex: cannot write the --html report to %s: %s\n", path,
                    strerror(errno));
            ret = 1;
        }
    }
    mx_buf_clear(&b);
    free(rows);
    return ret;
}

struct summary {
    bool ok;
    int64_t p50, p90, p99, max;
    double mean, rps;
};

static struct summary summarize(struct row *w, int i)
{
    struct summary s = {0};
    struct mx_benchstat *st = &w->st[i];
    if (mx_benchstat_pct(st, 50, &s.p50) != 0)
        return s;
    mx_benchstat_pct(st, 90, &s.p90);
    mx_benchstat_pct(st, 99, &s.p99);
    mx_benchstat_pct(st, 100, &s.max);
    s.mean = mx_benchstat_mean(st);
    s.rps = w->wall_us[i] > 0 ? (double)(st->cnt + st->errors) * 1e6 / (double)w->wall_us[i] : 0;
    s.ok = true;
    return s;
}

static void us_cell(char *out, size_t cap, int64_t us)
{
    if (us < 10000)
        snprintf(out, cap, "%lld us", (long long)us);
    else if (us < 10000000)
        snprintf(out, cap, "%.1f ms", (double)us / 1000.0);
    else
        snprintf(out, cap, "%.2f s", (double)us / 1e6);
}

static void added_cell(char *out, size_t cap, int64_t d)
{
    char v[40];
    us_cell(v, sizeof(v), d < 0 ? -d : d);
    snprintf(out, cap, "%s%s", d < 0 ? "-" : "+", v);
}

static void print_table(struct report *rep, const struct opts *o, const char *gw_base)
{
    printf("mcplex bench: %zu requests per row and side, concurrency 1 and %zu\ngateway %s%s\n\n",
           o->n, o->conc, gw_base, o->merged ? "/mcp" : "/mcp/<server>");
    if (o->wide)
        printf("%-14s %-18s %4s %-8s %4s %6s %6s %10s %10s %10s %10s %9s %11s %11s\n", "SERVER",
               "MEASURE", "C", "PATH", "HTTP", "OK", "ERR", "P50", "P90", "P99", "MAX", "REQ/S",
               "ADDED P50", "ADDED P99");
    else
        printf("%-12s %-16s %3s %-7s %5s %4s %8s %8s %6s %9s %9s\n", "SERVER", "MEASURE", "C",
               "PATH", "OK", "ERR", "P50", "P99", "REQ/S", "ADDED P50", "ADDED P99");
    for (size_t r = 0; r < rep->cnt; r++) {
        struct row *w = &rep->rows[r];
        struct summary s[2] = {summarize(w, 0), summarize(w, 1)};
        for (int i = w->has_direct ? 0 : 1; i < 2; i++) {
            char p50[40] = "-", p90[40] = "-", p99[40] = "-", mx[40] = "-", rps[40] = "-";
            char a50[48] = "", a99[48] = "";
            if (s[i].ok) {
                us_cell(p50, sizeof(p50), s[i].p50);
                us_cell(p90, sizeof(p90), s[i].p90);
                us_cell(p99, sizeof(p99), s[i].p99);
                us_cell(mx, sizeof(mx), s[i].max);
                snprintf(rps, sizeof(rps), "%.0f", s[i].rps);
            }
            if (i == 1 && w->has_direct && s[0].ok && s[1].ok) {
                added_cell(a50, sizeof(a50), s[1].p50 - s[0].p50);
                added_cell(a99, sizeof(a99), s[1].p99 - s[0].p99);
            }
            if (o->wide)
                printf("%-14.14s %-18s %4zu %-8s %4s %6zu %6zu %10s %10s %10s %10s %9s %11s "
                       "%11s\n",
                       w->server, w->measure, w->conc, PATHS[i], w->http[i], w->st[i].cnt,
                       w->st[i].errors, p50, p90, p99, mx, rps, a50, a99);
            else
                printf("%-12.12s %-16.16s %3zu %-7s %5zu %4zu %8s %8s %6s %9s %9s\n", w->server,
                       w->measure, w->conc, PATHS[i], w->st[i].cnt, w->st[i].errors, p50, p99, rps,
                       a50, a99);
        }
    }
    for (size_t r = 0; r < rep->cnt; r++) {
        struct row *w = &rep->rows[r];
        for (int i = 0; i < 2; i++) {
            if (w->why[i][0])
                printf("\n%s %s c=%zu %s: %zu error(s), the last: %s", w->server, w->measure,
                       w->conc, PATHS[i], w->st[i].errors, w->why[i]);
        }
    }
    size_t i;
    json_t *sv;
    json_array_foreach(rep->servers, i, sv)
    {
        const char *note = json_string_value(json_object_get(sv, "note"));
        if (note)
            printf("\n%s: %s (%s)", json_string_value(json_object_get(sv, "name")),
                   json_string_value(json_object_get(sv, "status")), note);
    }
    printf("\nADDED = gateway minus direct, same row, measured interleaved in this run.\n");
}

static void print_json(struct report *rep, const struct opts *o, const char *gw_base)
{
    json_t *rows = json_array();
    for (size_t r = 0; r < rep->cnt; r++) {
        struct row *w = &rep->rows[r];
        struct summary s[2] = {summarize(w, 0), summarize(w, 1)};
        for (int i = w->has_direct ? 0 : 1; i < 2; i++) {
            json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I}", "server", w->server,
                                  "measure", w->measure, "concurrency", (json_int_t)w->conc, "path",
                                  PATHS[i], "http", w->http[i], "ok", (json_int_t)w->st[i].cnt,
                                  "errors", (json_int_t)w->st[i].errors);
            if (s[i].ok) {
                json_object_set_new(j, "p50_us", json_integer(s[i].p50));
                json_object_set_new(j, "p90_us", json_integer(s[i].p90));
                json_object_set_new(j, "p99_us", json_integer(s[i].p99));
                json_object_set_new(j, "max_us", json_integer(s[i].max));
                json_object_set_new(j, "mean_us", json_real(s[i].mean));
                json_object_set_new(j, "rps", json_real(s[i].rps));
            }
            if (w->why[i][0])
                json_object_set_new(j, "last_error", json_string(w->why[i]));
            if (i == 1 && w->has_direct && s[0].ok && s[1].ok) {
                json_object_set_new(j, "added_p50_us", json_integer(s[1].p50 - s[0].p50));
                json_object_set_new(j, "added_p99_us", json_integer(s[1].p99 - s[0].p99));
            }
            json_array_append_new(rows, j);
        }
    }
    json_t *top = json_pack("{s:s, s:s, s:I, s:I, s:O, s:o}", "version", MX_VERSION, "gateway",
                            gw_base, "n", (json_int_t)o->n, "concurrency", (json_int_t)o->conc,
                            "servers", rep->servers, "rows", rows);
    if (o->call)
        json_object_set_new(top, "call", json_string(o->call));
    json_object_set_new(top, "endpoint", json_string(o->merged ? "/mcp" : "/mcp/<server>"));
    char *out = json_dumps(top, JSON_INDENT(1));
    json_decref(top);
    if (out) {
        puts(out);
        free(out);
    }
}

/* ---- command line ---- */

static int parse_size(const char *what, const char *s, int64_t min, int64_t max, size_t *out)
{
    int64_t v;
    if (mx_num_parse(s, strlen(s), min, max, &v) != 0) {
        fprintf(stderr, "mcplex: %s must be a number from %lld to %lld, not '%s'\n", what,
                (long long)min, (long long)max, s);
        return MX_EINVAL;
    }
    *out = (size_t)v;
    return 0;
}

/* One option of the command line into |data|, a struct opts. */
static int bench_opt(int ch, const char *arg, void *data)
{
    struct opts *o = data;
    switch (ch) {
    case 'c':
        o->config = arg;
        break;
    case 's':
        o->server = arg;
        break;
    case 't':
        o->call = arg;
        break;
    case 'a':
        o->args_arg = arg;
        break;
    case 'n':
        if (parse_size("-n", arg, 1, MAX_N, &o->n) != 0)
            return 2;
        break;
    case 'C':
        if (parse_size("--concurrency", arg, 1, MAX_CONC, &o->conc) != 0)
            return 2;
        break;
    case 'j':
        o->json = true;
        break;
    case 'w':
        o->wake = true;
        break;
    case 'W':
        if (mx_duration_parse(arg, strlen(arg), 24 * 3600 * 1000LL, &o->wake_after_ms) != 0) {
            fprintf(stderr, "mcplex: --wake-after wants a duration such as 90s or 5m\n");
            return 2;
        }
        break;
    case 'K':
        o->wake_control = true;
        break;
    case 'g':
        o->gateway = arg;
        break;
    case 'A':
        o->cacert = arg;
        break;
    case '1':
        o->http1 = true;
        break;
    case 'M':
        o->merged = true;
        break;
    case 'X':
        o->wide = true;
        break;
    case 'H':
        o->html = arg;
        break;
    }
    return 0;
}

/* Returns MX_CMDLINE_RUN, or the exit status (cmdline.h). */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {{"config", required_argument, NULL, 'c'},
                                       {"server", required_argument, NULL, 's'},
                                       {"call", required_argument, NULL, 't'},
                                       {"args", required_argument, NULL, 'a'},
                                       {"concurrency", required_argument, NULL, 'C'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"wake", no_argument, NULL, 'w'},
                                       {"wake-after", required_argument, NULL, 'W'},
                                       {"wake-control", no_argument, NULL, 'K'},
                                       {"gateway", required_argument, NULL, 'g'},
                                       {"cacert", required_argument, NULL, 'A'},
                                       {"http1.1", no_argument, NULL, '1'},
                                       {"merged", no_argument, NULL, 'M'},
                                       {"wide", no_argument, NULL, 'X'},
                                       {"html", required_argument, NULL, 'H'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    static const struct mx_cmdline cl = {"c:n:h", lo, usage, bench_opt, NULL};
    o->n = DEFAULT_N;
    o->conc = DEFAULT_CONC;
    o->wake_after_ms = -1;
    int rc = mx_cmdline_parse(&cl, argc, argv, o);
    if (rc != MX_CMDLINE_RUN)
        return rc;
    if (o->args_arg && !o->call) {
        fprintf(stderr, "mcplex: --args needs --call\n");
        return 2;
    }
    if ((o->wake_control || o->wake_after_ms >= 0) && !o->wake) {
        fprintf(stderr, "mcplex: --wake-after and --wake-control need --wake\n");
        return 2;
    }
    if (o->cacert && !o->gateway) {
        fprintf(stderr, "mcplex: --cacert goes with --gateway\n");
        return 2;
    }
    json_error_t e;
    o->args = json_loads(o->args_arg ? o->args_arg : "{}", JSON_REJECT_DUPLICATES, &e);
    if (!json_is_object(o->args)) {
        fprintf(stderr, "mcplex: --args must be a JSON object%s%s\n", o->args ? "" : ": ",
                o->args ? "" : e.text);
        return 2;
    }
    return MX_CMDLINE_RUN;
}

int mx_cmd_bench(int argc, char **argv)
{
    struct opts o = {0};
    int rc = parse_opts(argc, argv, &o);
    if (rc != MX_CMDLINE_RUN) {
        json_decref(o.args);
        return rc;
    }

    struct mx_diag diag = {0};
    char msg[1024];
    int ret = 1;
    char *gw_base = NULL, *gw_ca = NULL;
    struct report rep = {0};
    struct mx_config *cfg = mx_cmdline_config(o.config);
    if (cfg == NULL)
        goto out;
    if (mx_config_resolve_secrets(cfg, &diag) != 0) {
        fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, msg, sizeof(msg)));
        goto out;
    }
    if (o.server && mx_config_server(cfg, o.server) == NULL) {
        fprintf(stderr, "mcplex: %s: no [servers.%s]\n", cfg->path, o.server);
        goto out;
    }
    if (o.gateway) {
        size_t l = strlen(o.gateway);
        while (l && o.gateway[l - 1] == '/')
            l--;
        gw_base = mx_xstrndup(o.gateway, l);
        gw_ca = o.cacert ? mx_xstrdup(o.cacert) : NULL;
    } else if (mx_status_gateway_base(cfg, &gw_base, &gw_ca) != 0) {
        goto out;
    }
    if (mx_cmdline_curl_init() != 0)
        goto out;
    rep.servers = json_array();
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        const struct mx_server_cfg *sc = &cfg->servers[i];
        if (o.server && strcmp(sc->name, o.server) != 0)
            continue;
        bench_server(&rep, &o, cfg, sc, gw_base, gw_ca);
    }
    int html_rc = o.html ? write_html(&rep, &o, gw_base, o.html) : 0;
    if (o.json)
        print_json(&rep, &o, gw_base);
    else
        print_table(&rep, &o, gw_base);
    ret = rep.failures || html_rc ? 1 : 0;
    for (size_t r = 0; r < rep.cnt; r++) {
        if (rep.rows[r].st[1].cnt == 0 || (rep.rows[r].has_direct && rep.rows[r].st[0].cnt == 0))
            ret = 1;
    }
    curl_global_cleanup();
out:
    for (size_t r = 0; r < rep.cnt; r++) {
        mx_benchstat_clear(&rep.rows[r].st[0]);
        mx_benchstat_clear(&rep.rows[r].st[1]);
    }
    free(rep.rows);
    json_decref(rep.servers);
    free(gw_base);
    free(gw_ca);
    json_decref(o.args);
    mx_config_free(cfg);
    if (fflush(stdout) != 0)
        ret = 1;
    return ret;
}
