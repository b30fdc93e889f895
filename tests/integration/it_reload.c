/* SPDX-License-Identifier: MIT */
/*
 * Reload end to end: mcplex in front of three sandbox-sims (keep, chg,
 * gone) with a client session open and calls in flight. The config is
 * rewritten (keep unchanged, chg pointed at another sandbox with another
 * token, gone removed, new added) and `mcplex reload` applies it: the calls
 * in flight finish, the open session hears list_changed and sees the new
 * names, keep's upstream session was not re-opened, gone's was closed once
 * its call ended, chg's names reach the new sandbox. Then reloads with a
 * syntax error and with a secret that does not resolve are refused with
 * their reason and the running config keeps serving. SIGHUP alone works
 * too. No canary token in anything mcplex printed or wrote.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

enum { KEEP, CHG, CHG2, GONE, NEW, SIM_CNT };
static const char *const sim_names[SIM_CNT] = {"sim-keep", "sim-chg", "sim-chg2", "sim-gone",
                                               "sim-new"};

struct world {
    char token[SIM_CNT][MX_IT_CANARY_SIZE];
    char *secret[SIM_CNT]; /* file holding each token */
    int sim_port[SIM_CNT];
    int port;
    pid_t mcplex;
    char *url;
    char *cfg_path;
    char *log;
    char *trace;
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One [servers.NAME] block for sandbox |i|. */
static char *server_block(const struct world *w, const char *name, int i)
{
    return mx_xasprintf("[servers.%s]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
                        name, w->sim_port[i], w->secret[i]);
}

static void write_config(const struct world *w, const char *servers)
{
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\nprefix = \"always\"\n%s",
                             w->port, w->trace, servers);
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    free(cfg);
}

static void start_world(struct world *w)
{
    for (int i = 0; i < SIM_CNT; i++) {
        char file[32];
        mx_it_canary(w->token[i], sizeof(w->token[i]));
        snprintf(file, sizeof(file), "%s.secret", sim_names[i]);
        w->secret[i] = mx_it_path(file);
        assert_int_equal(mx_it_write_file(w->secret[i], w->token[i], strlen(w->token[i])), 0);
        const char *args[] = {"--name", sim_names[i], NULL};
        assert_true(mx_it_start_sim(sim_names[i], w->token[i], args, &w->sim_port[i]) > 0);
    }
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    w->cfg_path = mx_it_path("mcplex.toml");
    w->log = mx_it_path("mcplex.log");
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    char *a = server_block(w, "keep", KEEP);
    char *b = server_block(w, "chg", CHG);
    char *c = server_block(w, "gone", GONE);
    char *all = mx_xasprintf("%s%s%s", a, b, c);
    write_config(w, all);
    w->mcplex = mx_it_start_mcplex(w->cfg_path, w->port);
    assert_true(w->mcplex > 0);
    free(a);
    free(b);
    free(c);
    free(all);
}

static void free_world(struct world *w)
{
    for (int i = 0; i < SIM_CNT; i++)
        free(w->secret[i]);
    free(w->url);
    free(w->cfg_path);
    free(w->log);
    free(w->trace);
}

static json_t *get_json(const char *url, const char *bearer)
{
    char *auth = bearer ? mx_xasprintf("Authorization: Bearer %s", bearer) : NULL;
    const char *hdrs[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, auth ? hdrs : NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    free(body);
    free(auth);
    return j;
}

static json_t *sim_stats(const struct world *w, int i)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__stats", w->sim_port[i]);
    json_t *j = get_json(url, w->token[i]);
    free(url);
    return j;
}

static json_int_t sim_sessions(const struct world *w, int i, const char *what)
{
    json_t *st = sim_stats(w, i);
    json_int_t n = json_integer_value(json_object_get(json_object_get(st, "sessions"), what));
    json_decref(st);
    return n;
}

static json_t *health(const struct world *w)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", w->port);
    json_t *j = get_json(url, NULL);
    free(url);
    return j;
}

static json_int_t health_reload(const struct world *w, const char *what)
{
    json_t *h = health(w);
    json_int_t n = json_integer_value(json_object_get(json_object_get(h, "reload"), what));
    json_decref(h);
    return n;
}

static void assert_whoami(const struct world *w, const char *tool, const char *want)
{
    char *args = mx_xasprintf("{\"name\":\"%s\",\"arguments\":{}}", tool);
    json_t *out = mx_it_client_ok(w->url, "call", args);
    const char *text = mx_it_result_text(out);
    if (text == NULL || strstr(text, want) == NULL)
        fail_msg("%s answered %s, expected %s", tool, text ? text : "(nothing)", want);
    json_decref(out);
    free(args);
}

/* `mcplex reload -c cfg`; returns its exit status and output. */
static int run_reload(const struct world *w, char **output)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "reload", "-c", w->cfg_path, NULL};
    int rc = mx_it_run("reload", argv, NULL, 40000, output);
    free(bin);
    return rc;
}

static void wait_file(const char *path, int timeout_ms)
{
    for (int waited = 0; access(path, F_OK) != 0; waited += 50) {
        if (waited > timeout_ms)
            fail_msg("%s did not appear within %d ms", path, timeout_ms);
        sleep_ms(50);
    }
}

/* Wait until mcplex reports |n| requests in flight. */
static void wait_inflight(const struct world *w, json_int_t n)
{
    for (int waited = 0;; waited += 50) {
        json_t *h = health(w);
        json_int_t got = json_integer_value(json_object_get(h, "inflight"));
        json_decref(h);
        if (got >= n)
            return;
        if (waited > 20000)
            fail_msg("only %lld requests in flight, expected %lld", (long long)got, (long long)n);
        sleep_ms(50);
    }
}

static void assert_live_reload(struct world *w)
{
    /* one session open and listening */
    char *ready = mx_it_path("ready-tools");
    char *args =
        mx_xasprintf("{\"ready_file\":\"%s\",\"wait_ms\":20000,\"kind\":\"tools\"}", ready);
    pid_t listener = mx_it_client_start(w->url, "list-changed", args, NULL);
    assert_true(listener > 0);
    wait_file(ready, 30000);
    /* a 3 s call in flight on the upstream that leaves and on the one that changes */
    const char *slow = "{\"steps\":15,\"interval_ms\":200}";
    char *gone_args = mx_xasprintf("{\"name\":\"gone_slow\",\"arguments\":%s}", slow);
    char *chg_args = mx_xasprintf("{\"name\":\"chg_slow\",\"arguments\":%s}", slow);
    pid_t gone_call = mx_it_client_start(w->url, "call", gone_args, NULL);
    pid_t chg_call = mx_it_client_start(w->url, "call", chg_args, NULL);
    assert_true(gone_call > 0 && chg_call > 0);
    wait_inflight(w, 2);
    json_int_t keep_sessions = sim_sessions(w, KEEP, "created");
    assert_true(keep_sessions >= 1);

    char *a = server_block(w, "keep", KEEP);
    char *b = server_block(w, "chg", CHG2);
    char *c = server_block(w, "new", NEW);
    char *all = mx_xasprintf("%s%s%s", a, b, c);
    write_config(w, all);
    char *output = NULL;
    int rc = run_reload(w, &output);
    if (rc != 0)
        fail_msg("mcplex reload: exit %d: %s", rc, output);
    assert_non_null(strstr(output, "reloaded: 3 upstreams"));
    free(output);

    /* the calls that were in flight finish, with their answers */
    json_t *out = NULL;
    assert_int_equal(mx_it_node_finish(gone_call, MX_IT_NODE_TIMEOUT_MS, &out), 0);
    assert_null(json_object_get(out, "error"));
    assert_false(json_is_true(json_object_get(json_object_get(out, "result"), "isError")));
    json_decref(out);
    out = NULL;
    assert_int_equal(mx_it_node_finish(chg_call, MX_IT_NODE_TIMEOUT_MS, &out), 0);
    assert_null(json_object_get(out, "error"));
    assert_false(json_is_true(json_object_get(json_object_get(out, "result"), "isError")));
    json_decref(out);

    /* the open session heard list_changed and lists the new names */
    out = NULL;
    assert_int_equal(mx_it_node_finish(listener, MX_IT_NODE_TIMEOUT_MS, &out), 0);
    assert_true(json_is_true(json_object_get(out, "notified")));
    json_t *before = json_object_get(json_object_get(out, "before"), "names");
    json_t *after = json_object_get(json_object_get(out, "after"), "names");
    assert_true(mx_it_has_string(before, "gone_echo"));
    assert_false(mx_it_has_string(before, "new_echo"));
    assert_true(mx_it_has_string(after, "keep_echo"));
    assert_true(mx_it_has_string(after, "chg_echo"));
    assert_true(mx_it_has_string(after, "new_echo"));
    assert_false(mx_it_has_string(after, "gone_echo"));
    json_decref(out);

    /* chg's names now reach the new sandbox; keep's session was kept */
    assert_whoami(w, "chg_whoami", "sim-chg2");
    assert_whoami(w, "new_whoami", "sim-new");
    assert_whoami(w, "keep_whoami", "sim-keep");
    assert_int_equal(sim_sessions(w, KEEP, "created"), keep_sessions);
    assert_int_equal(sim_sessions(w, KEEP, "deleted"), 0);
    /* the retired upstreams' sessions close once their calls ended */
    for (int waited = 0; sim_sessions(w, GONE, "deleted") < 1; waited += 100) {
        if (waited > 10000)
            fail_msg("the removed upstream's session was not closed");
        sleep_ms(100);
    }
    for (int waited = 0; sim_sessions(w, CHG, "deleted") < 1; waited += 100) {
        if (waited > 10000)
            fail_msg("the changed upstream's old session was not closed");
        sleep_ms(100);
    }
    /* /health knows the new set only */
    json_t *h = health(w);
    json_t *ups = json_object_get(h, "upstreams");
    assert_int_equal(json_array_size(ups), 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "reload"), "ok")), 1);
    json_decref(h);
    free(a);
    free(b);
    free(c);
    free(all);
    free(gone_args);
    free(chg_args);
    free(args);
    free(ready);
}

static void assert_refused_reloads(struct world *w)
{
    char *cfg = mx_it_read_file(w->cfg_path, NULL);
    assert_non_null(cfg);

    /* a syntax error: `mcplex reload` shows it and sends nothing; SIGHUP
     * makes the gateway refuse it with its place; the old config serves on */
    char *broken = mx_xasprintf("%s[servers.bad\nurl = 1\n", cfg);
    assert_int_equal(mx_it_write_file(w->cfg_path, broken, strlen(broken)), 0);
    char *output = NULL;
    assert_int_equal(run_reload(w, &output), 1);
    char *where = mx_xasprintf("%s:", w->cfg_path);
    if (strstr(output, "refused") == NULL || strstr(output, where) == NULL)
        fail_msg("reload of a broken config said: %s", output);
    free(output);
    assert_int_equal(health_reload(w, "failed"), 0);
    assert_int_equal(mx_it_signal(w->mcplex, SIGHUP), 0);
    for (int waited = 0; health_reload(w, "failed") < 1; waited += 50) {
        if (waited > 10000)
            fail_msg("SIGHUP with a broken config was not refused");
        sleep_ms(50);
    }
    json_t *h = health(w);
    const char *err = json_string_value(json_object_get(json_object_get(h, "reload"), "error"));
    if (err == NULL || strstr(err, where) == NULL)
        fail_msg("/health reload.error is %s", err ? err : "(none)");
    json_decref(h);
    free(where);
    assert_whoami(w, "new_whoami", "sim-new");

    /* a secret that does not resolve: refused as a whole */
    char *missing = mx_it_path("no-such.secret");
    char *bad_secret = mx_xasprintf("%s[servers.extra]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                    "secret = \"file:%s\"\n",
                                    cfg, w->sim_port[GONE], missing);
    assert_int_equal(mx_it_write_file(w->cfg_path, bad_secret, strlen(bad_secret)), 0);
    output = NULL;
    assert_int_equal(run_reload(w, &output), 1);
    if (strstr(output, "extra") == NULL)
        fail_msg("reload with a missing secret said: %s", output);
    free(output);
    assert_int_equal(health_reload(w, "failed"), 2);
    assert_whoami(w, "keep_whoami", "sim-keep");
    h = health(w);
    assert_int_equal(json_array_size(json_object_get(h, "upstreams")), 3);
    json_decref(h);

    /* the good config back, by SIGHUP alone: applied, nothing changes */
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    assert_int_equal(mx_it_signal(w->mcplex, SIGHUP), 0);
    for (int waited = 0; health_reload(w, "ok") < 2; waited += 50) {
        if (waited > 10000)
            fail_msg("SIGHUP did not reload");
        sleep_ms(50);
    }
    assert_whoami(w, "chg_whoami", "sim-chg2");
    /* and /metrics counts them */
    char *murl = mx_xasprintf("http://127.0.0.1:%d/metrics", w->port);
    long status = 0;
    char *metrics = NULL;
    assert_int_equal(mx_it_http("GET", murl, NULL, NULL, &status, &metrics), 0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(metrics, "mcplex_config_reloads_total{result=\"ok\"} 2\n"));
    assert_non_null(strstr(metrics, "mcplex_config_reloads_total{result=\"failed\"} 2\n"));
    free(metrics);
    free(murl);
    free(missing);
    free(bad_secret);
    free(broken);
    free(cfg);
}

static void assert_no_canary(const struct world *w)
{
    char *health_path = mx_it_path("health.json");
    json_t *h = health(w);
    char *body = json_dumps(h, JSON_COMPACT);
    assert_int_equal(mx_it_write_file(health_path, body, strlen(body)), 0);
    const char *files[] = {w->log, w->trace, health_path, NULL};
    for (int i = 0; i < SIM_CNT; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, w->token[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary of %s found in %s\n", sim_names[i], hits[k]);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
    free(body);
    json_decref(h);
    free(health_path);
}

static void test_reload(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_live_reload(&w);
    assert_refused_reloads(&w);
    assert_no_canary(&w);
    /* a drained mcplex still stops cleanly */
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free_world(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reload, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
