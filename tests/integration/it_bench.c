/* SPDX-License-Identifier: MIT */
/*
 * `mcplex bench` against real processes: sandbox-sim behind a plain-HTTP
 * mcplex with a client token (every row present and sane in --json, every
 * tools/call ran exactly once, the wake rows see the sim's hold time, no
 * secret in the output), server-everything behind mcplex over TLS (h2 by
 * ALPN, a TLS handshake row), and the errors a user can make.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 120000
#define N              20
#define CONC           4
#define HOLD_MS        300
#define WAKE_ROUNDS    5 /* cmd_bench.c's rounds with --wake-control */

struct world {
    char secret[MX_IT_CANARY_SIZE]; /* the upstream's */
    char token[MX_IT_CANARY_SIZE];  /* the gateway's client token */
    int up_port;
    int port;
    char *cfg;
    char *ca;
};

static void world_clear(struct world *w)
{
    free(w->cfg);
    free(w->ca);
}

static char *secret_file(const char *name, const char *value)
{
    char *p = mx_it_path(name);
    assert_int_equal(mx_it_write_file(p, value, strlen(value)), 0);
    assert_int_equal(chmod(p, 0600), 0);
    return p;
}

/* sandbox-sim in hold mode behind plain mcplex that requires a client
 * token; the sim pauses by itself after |pause_after| ms idle ("0": never). */
static void start_sim_world_paused_after(struct world *w, const char *pause_after)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->secret, sizeof(w->secret));
    mx_it_canary(w->token, sizeof(w->token));
    const char *const sim_args[] = {
        "--pause-mode", "hold",        "--hold-ms", "300", "--pause-after-ms",
        pause_after,    "--log-level", "warn",      NULL};
    assert_true(mx_it_start_sim("sim", w->secret, sim_args, &w->up_port) > 0);
    char *sec = secret_file("sim.secret", w->secret);
    char *tok = secret_file("client.token", w->token);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "client_token = \"file:%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             w->port, tok, w->up_port, sec);
    w->cfg = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(w->cfg, w->port) > 0);
    free(cfg);
    free(sec);
    free(tok);
}

static void start_sim_world(struct world *w)
{
    start_sim_world_paused_after(w, "0");
}

/* Run `mcplex bench -c cfg ARGS...`; returns the exit status and the output. */
static int run_bench(const struct world *w, const char *const *args, char **out)
{
    char *mcplex = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[32] = {mcplex, "bench", "-c", w->cfg};
    size_t n = 4;
    for (size_t i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int rc = mx_it_run("bench", argv, NULL, RUN_TIMEOUT_MS, out);
    free(mcplex);
    return rc;
}

static const json_t *find_row_quiet(const json_t *rows, const char *measure, long conc,
                                    const char *path)
{
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "measure")), measure) == 0 &&
            json_integer_value(json_object_get(r, "concurrency")) == conc &&
            strcmp(json_string_value(json_object_get(r, "path")), path) == 0)
            return r;
    }
    return NULL;
}

static const json_t *find_row(const json_t *rows, const char *measure, long conc, const char *path)
{
    const json_t *r = find_row_quiet(rows, measure, conc, path);
    if (r == NULL)
        fprintf(stderr, "no row %s c=%ld %s\n", measure, conc, path);
    return r;
}

/* A row that measured |n| requests, no errors, ordered percentiles; a
 * gateway row with a direct twin also says what the gateway added. */
static void check_row_ex(const json_t *r, long n, const char *http, bool twin)
{
    assert_non_null(r);
    assert_int_equal(json_integer_value(json_object_get(r, "ok")), n);
    assert_int_equal(json_integer_value(json_object_get(r, "errors")), 0);
    json_int_t p50 = json_integer_value(json_object_get(r, "p50_us"));
    json_int_t p90 = json_integer_value(json_object_get(r, "p90_us"));
    json_int_t p99 = json_integer_value(json_object_get(r, "p99_us"));
    json_int_t max = json_integer_value(json_object_get(r, "max_us"));
    assert_true(json_is_integer(json_object_get(r, "p50_us")));
    assert_true(p50 >= 0 && p50 <= p90 && p90 <= p99 && p99 <= max);
    assert_true(max < 30 * 1000 * 1000); /* the request timeout */
    double mean = json_number_value(json_object_get(r, "mean_us"));
    assert_true(mean >= 0 && mean <= (double)max);
    assert_true(json_number_value(json_object_get(r, "rps")) > 0);
    if (http)
        assert_string_equal(json_string_value(json_object_get(r, "http")), http);
    if (twin && strcmp(json_string_value(json_object_get(r, "path")), "gateway") == 0)
        assert_true(json_is_integer(json_object_get(r, "added_p50_us")) &&
                    json_is_integer(json_object_get(r, "added_p99_us")));
    else
        assert_null(json_object_get(r, "added_p50_us"));
}

static void check_row(const json_t *r, long n, const char *http)
{
    check_row_ex(r, n, http, true);
}

static void test_bench_sim_every_row(void **state)
{
    (void)state;
    struct world w;
    start_sim_world(&w);
    char *out = NULL;
    static const char *const args[] = {
        "--call", "echo",   "--args", "{\"message\":\"bench\"}", "-n", "20", "--concurrency",
        "4",      "--json", "--wake", "--wake-control",          NULL};
    int rc = run_bench(&w, args, &out);
    if (rc != 0)
        fprintf(stderr, "bench exited %d:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, w.secret));
    assert_null(strstr(out, w.token));

    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    if (o == NULL)
        fprintf(stderr, "not JSON (%s):\n%s\n", e.text, out);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "n")), N);
    assert_int_equal(json_integer_value(json_object_get(o, "concurrency")), CONC);
    const json_t *sv = json_array_get(json_object_get(o, "servers"), 0);
    assert_string_equal(json_string_value(json_object_get(sv, "name")), "sim");
    assert_string_equal(json_string_value(json_object_get(sv, "status")), "measured");
    const json_t *rows = json_object_get(o, "rows");
    static const char *const measures[] = {"tcp connect", "initialize", "ping", "tools/list",
                                           "tools/call"};
    static const long concs[] = {1, CONC};
    for (size_t m = 0; m < 5; m++) {
        for (size_t c = 0; c < 2; c++) {
            check_row(find_row(rows, measures[m], concs[c], "direct"), N, "1.1");
            check_row(find_row(rows, measures[m], concs[c], "gateway"), N, "1.1");
        }
    }
    /* plain HTTP on both sides: no handshake row; 2 paths x 5 measures x 2 + wake */
    assert_null(strstr(out, "tls handshake"));
    assert_int_equal(json_array_size(rows), 2 * 5 * 2 + 2);
    const json_t *wd = find_row(rows, "wake: tools/call", 1, "direct");
    const json_t *wg = find_row(rows, "wake: tools/call", 1, "gateway");
    check_row(wd, WAKE_ROUNDS, NULL);
    check_row(wg, WAKE_ROUNDS, NULL);
    /* each round paused the sim, so each first call was held */
    assert_true(json_integer_value(json_object_get(wd, "p50_us")) >= HOLD_MS * 1000);
    assert_true(json_integer_value(json_object_get(wg, "p50_us")) >= HOLD_MS * 1000);
    json_decref(o);

    /* Every tools/call the table counts reached the sim exactly once:
     * 2 concurrencies x 2 paths x N, plus one per wake round and path. */
    json_t *st = mx_it_sim_stats(w.up_port, w.secret);
    assert_non_null(st);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "tools"), "echo")),
                     2 * 2 * N + 2 * WAKE_ROUNDS);
    /* and bench closed the sessions it opened: its own at the sim, and
     * those at the gateway; what the sim still has is mcplex's one shared
     * upstream session, which outlives its clients' */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "sessions"), "alive")),
                     1);
    json_decref(st);
    char *hurl = mx_xasprintf("http://127.0.0.1:%d/health", w.port);
    long hst = 0;
    char *hbody = NULL;
    assert_int_equal(mx_it_http("GET", hurl, NULL, NULL, &hst, &hbody), 0);
    assert_int_equal(hst, 200);
    json_t *h = json_loads(hbody, 0, NULL);
    assert_non_null(h);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "mcp"), "sessions")), 0);
    json_decref(h);
    free(hbody);
    free(hurl);

    /* the table form prints every measure and the added latency */
    free(out);
    static const char *const targs[] = {"-n", "5", "--concurrency", "2", NULL};
    assert_int_equal(run_bench(&w, targs, &out), 0);
    assert_non_null(strstr(out, "ADDED P50"));
    assert_non_null(strstr(out, "tools/list"));
    assert_null(strstr(out, "tools/call")); /* no --call, no call rows */
    assert_null(strstr(out, w.secret));
    assert_null(strstr(out, " P90 "));
    /* the table fits 100 columns; --wide has every column */
    for (const char *l = out; *l;) {
        size_t n = strcspn(l, "\n");
        if (n > 100)
            fail_msg("a line of %zu columns: %.*s", n, (int)n, l);
        l += n + (l[n] == '\n');
    }
    free(out);
    static const char *const wargs[] = {"-n", "5", "--concurrency", "2", "--wide", NULL};
    assert_int_equal(run_bench(&w, wargs, &out), 0);
    assert_non_null(strstr(out, " P90 "));
    assert_non_null(strstr(out, " MAX "));
    assert_non_null(strstr(out, "ADDED P99"));
    free(out);
    world_clear(&w);
    mx_it_pass();
}

/* --merged: the gateway side at /mcp, the one upstream's tool under its
 * own name there; every call reached the sim once. */
static void test_bench_sim_merged(void **state)
{
    (void)state;
    struct world w;
    start_sim_world(&w);
    char *out = NULL;
    static const char *const args[] = {
        "--call", "echo",     "--args", "{\"message\":\"bench\"}", "-n", "20", "--concurrency", "1",
        "--json", "--merged", NULL};
    int rc = run_bench(&w, args, &out);
    if (rc != 0)
        fprintf(stderr, "bench exited %d:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, w.secret));
    assert_null(strstr(out, w.token));
    json_t *o = json_loads(out, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "endpoint")), "/mcp");
    const json_t *rows = json_object_get(o, "rows");
    check_row(find_row(rows, "tools/call", 1, "direct"), N, "1.1");
    check_row(find_row(rows, "tools/call", 1, "gateway"), N, "1.1");
    json_decref(o);
    json_t *st = mx_it_sim_stats(w.up_port, w.secret);
    assert_non_null(st);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "tools"), "echo")),
                     2 * N);
    json_decref(st);
    free(out);
    world_clear(&w);
    mx_it_pass();
}

static void test_bench_everything_over_tls(void **state)
{
    (void)state;
    struct world w;
    memset(&w, 0, sizeof(w));
    mx_it_canary(w.secret, sizeof(w.secret));
    assert_true(mx_it_start_everything(w.secret, &w.up_port) > 0);
    char *sec = secret_file("everything.secret", w.secret);
    char *state_dir = mx_it_path("state");
    w.port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.everything]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             w.port, state_dir, w.up_port, sec);
    w.cfg = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w.cfg, cfg, strlen(cfg)), 0);
    w.ca = mx_xasprintf("%s/certs/ca.pem", state_dir);
    assert_true(mx_it_start_mcplex_tls(w.cfg, w.port, w.ca) > 0);

    char *out = NULL;
    static const char *const args[] = {"--call", "echo", "--args",        "{\"message\":\"tls\"}",
                                       "-n",     "10",   "--concurrency", "2",
                                       "--json", NULL};
    int rc = run_bench(&w, args, &out);
    if (rc != 0)
        fprintf(stderr, "bench exited %d:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, w.secret));
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    assert_non_null(o);
    const json_t *rows = json_object_get(o, "rows");
    static const char *const measures[] = {"tcp connect", "initialize", "ping", "tools/list",
                                           "tools/call"};
    for (size_t m = 0; m < 5; m++) {
        for (long c = 1; c <= 2; c++) {
            check_row(find_row(rows, measures[m], c, "direct"), 10, "1.1");
            check_row(find_row(rows, measures[m], c, "gateway"), 10, "2");
        }
    }
    /* the gateway side is TLS, the upstream plain: a handshake row for the
     * gateway only, with a real handshake time */
    for (long c = 1; c <= 2; c++) {
        const json_t *t = find_row(rows, "tls handshake", c, "gateway");
        check_row_ex(t, 10, "2", false);
        assert_true(json_integer_value(json_object_get(t, "p50_us")) > 0);
        assert_null(find_row_quiet(rows, "tls handshake", c, "direct"));
    }
    json_decref(o);
    free(out);
    free(cfg);
    free(sec);
    free(state_dir);
    world_clear(&w);
    mx_it_pass();
}

/* --wake without the test switch: bench stays quiet for --wake-after, the
 * sim pauses by itself meanwhile, and the first call through the gateway
 * is the one that waits for the wake. */
static void test_bench_wake_after_idle(void **state)
{
    (void)state;
    struct world w;
    start_sim_world_paused_after(&w, "400");
    char *out = NULL;
    static const char *const args[] = {"--call",
                                       "echo",
                                       "--args",
                                       "{\"message\":\"w\"}",
                                       "-n",
                                       "2",
                                       "--concurrency",
                                       "1",
                                       "--wake",
                                       "--wake-after",
                                       "1500ms",
                                       "--json",
                                       NULL};
    int rc = run_bench(&w, args, &out);
    if (rc != 0)
        fprintf(stderr, "bench exited %d:\n%s\n", rc, out);
    assert_int_equal(rc, 0);
    json_t *o = json_loads(out, 0, NULL);
    assert_non_null(o);
    const json_t *rows = json_object_get(o, "rows");
    /* one round, through the gateway only: nothing paused the sim but time */
    assert_null(find_row_quiet(rows, "wake: tools/call", 1, "direct"));
    const json_t *wg = find_row(rows, "wake: tools/call", 1, "gateway");
    check_row_ex(wg, 1, NULL, false);
    assert_true(json_integer_value(json_object_get(wg, "p50_us")) >= HOLD_MS * 1000);
    json_t *st = mx_it_sim_stats(w.up_port, w.secret);
    assert_non_null(st);
    assert_true(json_integer_value(json_object_get(st, "wakes")) >= 1);
    json_decref(st);
    json_decref(o);
    free(out);
    world_clear(&w);
    mx_it_pass();
}

/* Each <svg class="|kind|"> of |html| in turn: how many there are, and
 * fails unless each holds |per| elements of class |what| whose
 * data-series are, in order, |series|[0..per). */
static size_t count_plots(const char *html, const char *kind, const char *what, size_t per,
                          const char *const *series)
{
    char open[64], item[64];
    size_t plots = 0;
    snprintf(open, sizeof(open), "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\"", kind);
    snprintf(item, sizeof(item), "class=\"%s\" data-series=\"", what);
    for (const char *p = strstr(html, open); p; p = strstr(p + 1, open)) {
        const char *end = strstr(p, "</svg>");
        assert_non_null(end);
        size_t n = 0;
        for (const char *q = strstr(p, item); q && q < end; q = strstr(q + 1, item)) {
            const char *name = q + strlen(item);
            if (series && n < per)
                assert_int_equal(strncmp(name, series[n], strlen(series[n])), 0);
            n++;
        }
        if (n != per)
            fail_msg("a %s plot has %zu %s elements, want %zu", kind, n, what, per);
        plots++;
    }
    return plots;
}

/* --html: a well-formed page (xmllint reads it as XML), one CDF per
 * measured row with one curve per side, the added latency, and the wake
 * timeline: two bars (direct, gateway) for each of the rounds. */
static void test_bench_html_report(void **state)
{
    (void)state;
    struct world w;
    start_sim_world(&w);
    char *path = mx_it_path("report.html");
    const char *args[] = {"--server", "sim",
                          "-n",       "30",
                          "--call",   "echo",
                          "--args",   "{\"message\":\"plot\"}",
                          "--wake",   "--wake-control",
                          "--html",   path,
                          NULL};
    char *out = NULL;
    assert_int_equal(run_bench(&w, args, &out), 0);
    free(out);
    const char *lint[] = {"xmllint", "--noout", path, NULL};
    char *lint_out = NULL;
    int rc = mx_it_run("xmllint", lint, NULL, 30000, &lint_out);
    if (rc != 0)
        fail_msg("xmllint %d: %s", rc, lint_out);
    free(lint_out);
    size_t len = 0;
    char *html = mx_it_read_file(path, &len);
    assert_non_null(html);
    assert_null(strstr(html, "<script"));
    static const char *const sides[] = {"direct", "gateway"};
    /* tcp connect, initialize, ping, tools/list, tools/call at c=1 and c=8 */
    size_t cdf = count_plots(html, "cdf", "curve", 2, sides);
    assert_int_equal(cdf, 10);
    assert_int_equal(count_plots(html, "bars", "bar", 2 * cdf, NULL), 1);
    static const char *const rounds[] = {"direct",  "gateway", "direct",  "gateway", "direct",
                                         "gateway", "direct",  "gateway", "direct",  "gateway"};
    assert_int_equal(count_plots(html, "timeline", "bar", 2 * WAKE_ROUNDS, rounds), 1);
    free(html);
    free(path);
    world_clear(&w);
    mx_it_pass();
}

static void test_bench_usage_errors(void **state)
{
    (void)state;
    struct world w;
    start_sim_world(&w);
    char *out = NULL;
    static const char *const bad_args[] = {"--call", "echo", "--args", "[1]", NULL};
    assert_int_equal(run_bench(&w, bad_args, &out), 2);
    assert_non_null(strstr(out, "--args must be a JSON object"));
    free(out);
    static const char *const bad_n[] = {"-n", "0", NULL};
    assert_int_equal(run_bench(&w, bad_n, &out), 2);
    free(out);
    static const char *const no_server[] = {"--server", "nope", NULL};
    assert_int_equal(run_bench(&w, no_server, &out), 1);
    assert_non_null(strstr(out, "no [servers.nope]"));
    free(out);
    /* a tool the server does not offer: rows without tools/call, still 0 */
    static const char *const no_tool[] = {"--call", "nope", "-n", "3", "--concurrency", "1", NULL};
    assert_int_equal(run_bench(&w, no_tool, &out), 0);
    assert_non_null(strstr(out, "offers no tool 'nope'"));
    free(out);
    /* no gateway at that address: exit 1 with a reason, no secret */
    int dead = mx_it_free_port();
    char *gw = mx_xasprintf("http://127.0.0.1:%d", dead);
    const char *const dead_args[] = {"--gateway", gw, "-n", "2", NULL};
    assert_int_equal(run_bench(&w, dead_args, &out), 1);
    assert_non_null(strstr(out, "gateway"));
    assert_null(strstr(out, w.secret));
    assert_null(strstr(out, w.token));
    free(out);
    free(gw);
    world_clear(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bench_sim_every_row, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_bench_sim_merged, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_bench_everything_over_tls, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_bench_wake_after_idle, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_bench_html_report, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_bench_usage_errors, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
