/* SPDX-License-Identifier: MIT */
/*
 * Living with it: GET /metrics, `mcplex status` and the logs, end to end.
 * mcplex sits in front of sandbox-sim (a good and a wrong credential) and a
 * port nobody listens on. The test makes a known set of calls, has Debian's
 * `promtool check metrics` parse and lint /metrics, and checks that the
 * counters equal the calls made; that `mcplex status` prints the table (plain
 * and TLS listener) and fails clearly when nothing answers; that every line
 * of `--log-format json` parses, with one access line per request; that
 * calls through the merged /mcp (2025 and 2026-07-28 clients) and through
 * `mcplex stdio` have their series and access lines too; and that no canary
 * credential appears in /metrics, /health, status or the log.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char bearer[MX_IT_CANARY_SIZE]; /* what sandbox-sim accepts */
    char wrong[MX_IT_CANARY_SIZE];  /* a credential nobody accepts */
    int port;
    int sim_port;
    pid_t mcplex;
    char *cfg;
    char *log;
    char *ca; /* TLS listener: the local CA serve makes in the state dir */
    const char *scheme;
    size_t alpha_relayed; /* body bytes of the client's requests that went on to alpha */
};

static void world_clear(struct world *w)
{
    free(w->cfg);
    free(w->log);
    free(w->ca);
}

/*
 * sandbox-sim, and mcplex in front of it as three servers: alpha (right
 * bearer), wrongkey (same sim, wrong bearer) and gone (a port nobody
 * listens on, with a short wake_timeout). |serve_args| are added to
 * `mcplex serve`.
 */
static void start_world(struct world *w, bool tls, const char *const *serve_args)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->bearer, sizeof(w->bearer));
    mx_it_canary(w->wrong, sizeof(w->wrong));
    assert_true(mx_it_start_sim("sim", w->bearer, NULL, &w->sim_port) > 0);

    char *good = mx_it_path("good.secret");
    char *bad = mx_it_path("wrong.secret");
    char *state = mx_it_path("state");
    assert_int_equal(mx_it_write_file(good, w->bearer, strlen(w->bearer)), 0);
    assert_int_equal(mx_it_write_file(bad, w->wrong, strlen(w->wrong)), 0);
    int dead_port = mx_it_free_port();
    assert_true(dead_port > 0);
    w->port = mx_it_free_port();
    assert_true(w->port > 0);
    w->scheme = tls ? "https" : "http";
    char *cfg = mx_xasprintf("[listen]\n"
                             "address = \"127.0.0.1:%d\"\n"
                             "tls = %s\n"
                             "[proxy]\n"
                             "state_dir = \"%s\"\n"
                             "[servers.alpha]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.wrongkey]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.gone]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"none\"\n"
                             "wake_timeout = \"1s\"\n",
                             w->port, tls ? "true" : "false", state, w->sim_port, good, w->sim_port,
                             bad, dead_port);
    w->cfg = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg, cfg, strlen(cfg)), 0);
    if (tls) {
        w->ca = mx_xasprintf("%s/certs/ca.pem", state);
        mx_it_set_ca_file(w->ca);
    }

    /* spawned here rather than by mx_it_start_mcplex: it takes extra flags */
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[16] = {bin, "serve", "-c", w->cfg};
    size_t n = 4;
    for (size_t i = 0; serve_args && serve_args[i] && n < 15; i++)
        argv[n++] = serve_args[i];
    argv[n] = NULL;
    w->log = mx_it_path("mcplex.log");
    w->mcplex = mx_it_spawn("mcplex", argv, NULL, w->log);
    assert_true(w->mcplex > 0);
    char *health = mx_xasprintf("%s://127.0.0.1:%d/health", w->scheme, w->port);
    assert_int_equal(mx_it_wait_http_status(health, 200, MX_IT_START_TIMEOUT_MS), 0);
    free(health);
    free(bin);
    free(cfg);
    free(good);
    free(bad);
    free(state);
}

static char *gw_url(const struct world *w, const char *path)
{
    return mx_xasprintf("%s://127.0.0.1:%d%s", w->scheme, w->port, path);
}

/* The value of header |name| in |hdrs| (one string of "Name: value" lines). */
static char *header_value(const char *hdrs, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = hdrs; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            return mx_xstrndup(v, strcspn(v, "\r\n"));
        }
    }
    return NULL;
}

/*
 * POST |body| to /mcp/|server| as an MCP 2025-06-18 client; |sid| is sent
 * as Mcp-Session-Id when not NULL, and a new session id returned in
 * |*sid_out| when asked for. Returns the HTTP status.
 */
static long post(struct world *w, const char *server, const char *sid, const char *body,
                 char **sid_out)
{
    char *path = mx_xasprintf("/mcp/%s", server);
    char *url = gw_url(w, path);
    char *sid_h = sid ? mx_xasprintf("Mcp-Session-Id: %s", sid) : NULL;
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream",
                       "MCP-Protocol-Version: 2025-06-18", sid_h, NULL};
    long status = 0;
    char *hdrs = NULL, *resp = NULL;
    assert_int_equal(mx_it_http_full("POST", url, h, body, 20000, &status, &hdrs, &resp), 0);
    if (sid_out)
        *sid_out = header_value(hdrs, "Mcp-Session-Id");
    free(hdrs);
    free(resp);
    free(sid_h);
    free(url);
    free(path);
    return status;
}

#define INIT_BODY                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"     \
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"it-metrics\",\"version\":"      \
    "\"1\"}}}"

/*
 * The known traffic, each request at /mcp/<server> counted under that
 * server: alpha gets initialize, notifications/initialized, 3 tools/call,
 * 2 ping and one unknown method (which goes to the server as sent); wrongkey
 * 2 initialize (401 upstream); gone 1 initialize (nothing listens: waits
 * for a wake that never comes). Returns the number of requests made.
 */
static int make_calls(struct world *w)
{
    char *sid = NULL;
    char body[256];
    assert_int_equal(post(w, "alpha", NULL, INIT_BODY, &sid), 200);
    assert_non_null(sid);
    long st = post(w, "alpha", sid,
                   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL);
    assert_true(st == 202 || st == 200);
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"echo\",\"arguments\":{\"message\":\"call %d\"}}}",
                 10 + i, i);
        assert_int_equal(post(w, "alpha", sid, body, NULL), 200);
        w->alpha_relayed += strlen(body);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}", 20 + i);
        assert_int_equal(post(w, "alpha", sid, body, NULL), 200);
    }
    /* a method name the client made up: counted as "other", never as itself */
    static const char made_up[] = "{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"x/made-up\"}";
    assert_int_equal(post(w, "alpha", sid, made_up, NULL), 200);
    w->alpha_relayed += strlen(made_up);
    /* the upstream's 401 reaches the client as a JSON-RPC error in a 200 */
    for (int i = 0; i < 2; i++)
        assert_int_equal(post(w, "wrongkey", NULL, INIT_BODY, NULL), 200);
    assert_int_equal(post(w, "gone", NULL, INIT_BODY, NULL), 200);
    free(sid);
    return 8 + 2 + 1;
}

/* ---- a small reader of the exposition text (promtool checks the syntax) ---- */

/* The value of the sample |series| (name and labels exactly as rendered),
 * or -1 when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return -1;
}

static double calls(const char *text, const char *server, const char *method, const char *outcome)
{
    char s[256];
    snprintf(s, sizeof(s),
             "mcplex_upstream_requests_total{server=\"%s\",method=\"%s\",outcome=\"%s\"}", server,
             method, outcome);
    return sample(text, s);
}

/* The sum of every mcplex_upstream_requests_total sample of |server|. */
static double calls_of(const char *text, const char *server)
{
    char prefix[128];
    double sum = 0;
    int n =
        snprintf(prefix, sizeof(prefix), "mcplex_upstream_requests_total{server=\"%s\",", server);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, prefix, (size_t)n) == 0)
            sum += strtod(strchr(p, '}') + 2, NULL);
    }
    return sum;
}

static char *get_metrics(struct world *w, const char *save_as)
{
    char *url = gw_url(w, "/metrics");
    long status = 0;
    char *hdrs = NULL, *body = NULL;
    assert_int_equal(mx_it_http_full("GET", url, NULL, NULL, 10000, &status, &hdrs, &body), 0);
    assert_int_equal(status, 200);
    char *ct = header_value(hdrs, "Content-Type");
    assert_non_null(ct);
    assert_non_null(strstr(ct, "text/plain; version=0.0.4"));
    char *path = mx_it_path(save_as);
    assert_int_equal(mx_it_write_file(path, body, strlen(body)), 0);
    free(path);
    free(ct);
    free(hdrs);
    free(url);
    return body;
}

/* Debian's promtool parses the text format and lints names, units, HELP. */
static void promtool_check(const char *file)
{
    char *path = mx_it_path(file);
    const char *argv[] = {"sh",
                          "-c",
                          "command -v promtool >/dev/null || { echo 'promtool not found: install "
                          "Debian package prometheus (.ci/setup does)'; exit 127; }; "
                          "exec promtool check metrics < \"$1\"",
                          "sh",
                          path,
                          NULL};
    char *out = NULL;
    int rc = mx_it_run("promtool", argv, NULL, 30000, &out);
    if (rc != 0)
        fprintf(stderr, "promtool check metrics (exit %d):\n%s\n", rc, out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
    free(path);
}

static void assert_no_canary(const struct world *w, const char *const *files)
{
    const char *canaries[] = {w->bearer, w->wrong};
    for (size_t i = 0; i < 2; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, canaries[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
}

static void test_metrics_counts_agree(void **state)
{
    struct world w;
    (void)state;
    const char *args[] = {"--log-format", "json", "--access-log", NULL};
    start_world(&w, false, args);

    /* before any call: parses, and the per-server families are all zero */
    char *t = get_metrics(&w, "metrics-0.txt");
    promtool_check("metrics-0.txt");
    assert_true(sample(t, "mcplex_upstream_state{server=\"alpha\",state=\"unknown\"}") == 1);
    assert_true(calls_of(t, "alpha") == 0);
    free(t);

    int forwarded = make_calls(&w);
    /* refused by the guard: counted, never forwarded */
    char *url = gw_url(&w, "/mcp/alpha");
    const char *evil[] = {"Origin: http://evil.example", "Content-Type: application/json", NULL};
    long status = 0;
    assert_int_equal(mx_it_http_full("POST", url, evil, INIT_BODY, 5000, &status, NULL, NULL), 0);
    assert_int_equal(status, 403);
    free(url);

    t = get_metrics(&w, "metrics-1.txt");
    promtool_check("metrics-1.txt");

    assert_true(calls(t, "alpha", "initialize", "ok") == 1);
    assert_true(calls(t, "alpha", "notifications/initialized", "ok") == 1);
    assert_true(calls(t, "alpha", "tools/call", "ok") == 3);
    assert_true(calls(t, "alpha", "ping", "ok") == 2);
    assert_true(calls(t, "alpha", "other", "ok") == 1);
    assert_true(calls_of(t, "alpha") == 8);
    assert_true(calls(t, "wrongkey", "initialize", "auth_failed") == 2);
    assert_true(calls_of(t, "wrongkey") == 2);
    assert_true(calls(t, "gone", "initialize", "wake_timeout") == 1);
    assert_true(calls_of(t, "gone") == 1);
    assert_true(calls_of(t, "alpha") + calls_of(t, "wrongkey") + calls_of(t, "gone") == forwarded);
    assert_true(sample(t, "mcplex_guard_refusals_total") == 1);
    assert_true(sample(t, "mcplex_inflight_requests") == 0);
    assert_true(sample(t, "mcplex_client_connections") >= 1);
    assert_true(sample(t, "mcplex_sessions") >= 0);

    /* states: exactly one 1 per server */
    assert_true(sample(t, "mcplex_upstream_state{server=\"alpha\",state=\"up\"}") == 1);
    assert_true(sample(t, "mcplex_upstream_state{server=\"wrongkey\",state=\"auth-failed\"}") == 1);
    assert_true(sample(t, "mcplex_upstream_state{server=\"gone\",state=\"down\"}") == 1);
    assert_true(sample(t, "mcplex_upstream_state{server=\"gone\",state=\"up\"}") == 0);

    /* latency: one observation per timed call, buckets end at _count */
    assert_true(sample(t, "mcplex_upstream_request_duration_seconds_count{server=\"alpha\","
                          "method=\"tools/call\"}") == 3);
    assert_true(sample(t, "mcplex_upstream_request_duration_seconds_bucket{server=\"alpha\","
                          "method=\"tools/call\",le=\"+Inf\"}") == 3);
    assert_true(sample(t, "mcplex_gateway_added_duration_seconds_count{server=\"alpha\"}") == 8);
    assert_true(sample(t, "mcplex_gateway_added_duration_seconds_count{server=\"wrongkey\"}") == 2);
    /* what mcplex adds on loopback stays far below the upstream's time */
    assert_true(sample(t, "mcplex_gateway_added_duration_seconds_sum{server=\"alpha\"}") < 0.5);
    /* the wake that never came: at least 1 s, counted as no_wake */
    assert_true(sample(t, "mcplex_upstream_wakes_total{server=\"gone\"}") == 1);
    assert_true(sample(t, "mcplex_upstream_wake_duration_seconds_count{server=\"gone\","
                          "result=\"no_wake\"}") == 1);
    assert_true(sample(t, "mcplex_upstream_wake_duration_seconds_sum{server=\"gone\","
                          "result=\"no_wake\"}") >= 0.9);
    assert_true(sample(t, "mcplex_upstream_retries_total{server=\"gone\"}") >= 1);
    assert_true(sample(t, "mcplex_upstream_retries_total{server=\"alpha\"}") == 0);
    /* bytes: what alpha was sent (mcplex's own requests, which learnt its
     * lists, and the four calls it took from the client) and some answer
     * back; the sim ran each of those calls once */
    assert_true(sample(t, "mcplex_upstream_sent_bytes_total{server=\"alpha\"}") >
                (double)w.alpha_relayed);
    assert_true(sample(t, "mcplex_upstream_received_bytes_total{server=\"alpha\"}") > 0);
    assert_int_equal(mx_it_sim_method_count(w.sim_port, w.bearer, "tools/call"), 3);
    assert_int_equal(mx_it_sim_method_count(w.sim_port, w.bearer, "ping"), 0);
    assert_true(sample(t, "mcplex_upstream_sent_bytes_total{server=\"gone\"}") == 0);
    free(t);

    /* the JSON log: every line parses; one access line per request */
    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(log);
    int lines = 0, access = 0;
    for (char *p = log, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        assert_non_null(nl); /* every line is complete */
        json_error_t err;
        json_t *o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &err);
        if (!json_is_object(o))
            fail_msg("log line %d is not a JSON object (%s): %.*s", lines + 1, err.text,
                     (int)(nl - p), p);
        assert_true(json_is_string(json_object_get(o, "ts")));
        assert_true(json_is_string(json_object_get(o, "level")));
        assert_true(json_is_string(json_object_get(o, "sub")));
        assert_true(json_is_string(json_object_get(o, "msg")));
        if (strcmp(json_string_value(json_object_get(o, "sub")), "access") == 0) {
            access++;
            assert_string_equal(json_string_value(json_object_get(o, "level")), "info");
            assert_true(json_is_string(json_object_get(o, "server")));
            assert_true(json_is_string(json_object_get(o, "rpc_method")));
            assert_true(json_is_string(json_object_get(o, "outcome")));
            json_int_t st = json_integer_value(json_object_get(o, "status"));
            assert_true(st == 200 || st == 202);
            assert_true(json_is_number(json_object_get(o, "latency_ms")));
        }
        json_decref(o);
        lines++;
    }
    (void)lines;
    free(log);
    assert_int_equal(access, forwarded);

    char *health = mx_it_path("health.json");
    char *hurl = gw_url(&w, "/health");
    char *hbody = NULL;
    assert_int_equal(mx_it_http("GET", hurl, NULL, NULL, &status, &hbody), 0);
    assert_int_equal(mx_it_write_file(health, hbody, strlen(hbody)), 0);
    char *m0 = mx_it_path("metrics-0.txt"), *m1 = mx_it_path("metrics-1.txt");
    const char *files[] = {w.log, m0, m1, health, NULL};
    assert_no_canary(&w, files);
    free(m0);
    free(m1);
    free(hbody);
    free(hurl);
    free(health);
    world_clear(&w);
    mx_it_pass();
}

/* POST |body| to /mcp with |hdrs| (NULL-terminated, after the usual two);
 * the answer's body (caller frees), which must come with 200. */
static char *post_mcp(struct world *w, const char *const *hdrs, const char *body)
{
    char *url = gw_url(w, "/mcp");
    const char *h[12] = {"Content-Type: application/json",
                         "Accept: application/json, text/event-stream"};
    size_t n = 2;
    for (size_t i = 0; hdrs && hdrs[i] && n < 11; i++)
        h[n++] = hdrs[i];
    h[n] = NULL;
    long status = 0;
    char *resp = NULL;
    assert_int_equal(mx_it_http_full("POST", url, h, body, 20000, &status, NULL, &resp), 0);
    assert_int_equal(status, 200);
    free(url);
    return resp;
}

/* The access lines of a JSON log |log| at |path| for |rpc| (and |server|,
 * NULL: none), with status 200 and outcome ok. */
static int access_lines(const char *log, const char *path, const char *rpc, const char *server)
{
    int n = 0;
    for (const char *p = log; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        json_t *o = json_loadb(p, strcspn(p, "\n"), 0, NULL);
        const char *sub = json_string_value(json_object_get(o, "sub"));
        const char *srv = json_string_value(json_object_get(o, "server"));
        if (sub && strcmp(sub, "access") == 0 &&
            strcmp(json_string_value(json_object_get(o, "path")), path) == 0 &&
            strcmp(json_string_value(json_object_get(o, "rpc_method")), rpc) == 0 &&
            (server ? srv && strcmp(srv, server) == 0 : srv == NULL) &&
            json_integer_value(json_object_get(o, "status")) == 200 &&
            strcmp(json_string_value(json_object_get(o, "outcome")), "ok") == 0)
            n++;
        json_decref(o);
    }
    return n;
}

/*
 * Calls through the merged /mcp, by a 2025 client and a 2026-07-28 client,
 * and through `mcplex stdio`: each is one call of alpha in /metrics (by
 * method and outcome, timed) and one access line (path /mcp, its JSON-RPC
 * method, the server it went to); what mcplex answers itself for all
 * upstreams (initialize, the lists) has its access line without a server.
 */
static void test_metrics_calls_through_mcp(void **state)
{
    struct world w;
    (void)state;
    const char *args[] = {"--log-format", "json", "--access-log", NULL};
    start_world(&w, false, args);

    char *url = gw_url(&w, "/mcp");
    char sid[64];
    mx_it_open_session(url, "it-metrics", sid, sizeof(sid));
    char *sid_h = mx_xasprintf("Mcp-Session-Id: %s", sid);
    const char *legacy[] = {sid_h, "MCP-Protocol-Version: 2025-11-25", NULL};
    /* alpha's echo, under the name /mcp gives it */
    char *list = post_mcp(&w, legacy, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    const char *echo = strstr(list, "echo\"") ? "echo" : NULL;
    if (strstr(list, "\"alpha_echo\""))
        echo = "alpha_echo";
    assert_non_null(echo);
    free(list);
    char body[512];
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"%s\",\"arguments\":{\"message\":\"2025 call %d\"}}}",
                 10 + i, echo, i);
        char *resp = post_mcp(&w, legacy, body);
        assert_non_null(strstr(resp, "2025 call"));
        free(resp);
    }
    char name_h[64];
    snprintf(name_h, sizeof(name_h), "Mcp-Name: %s", echo);
    const char *modern[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", name_h,
                            NULL};
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":{\"message\":\"2026 call\"},\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
             "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
             echo);
    char *resp = post_mcp(&w, modern, body);
    assert_non_null(strstr(resp, "2026 call"));
    free(resp);

    char *t = get_metrics(&w, "metrics-mcp.txt");
    promtool_check("metrics-mcp.txt");
    assert_true(calls(t, "alpha", "tools/call", "ok") == 3);
    assert_true(sample(t, "mcplex_upstream_request_duration_seconds_count{server=\"alpha\","
                          "method=\"tools/call\"}") == 3);
    assert_true(calls_of(t, "alpha") == 3);
    /* the standard process_* series, read from the gateway process */
    assert_true(sample(t, "process_cpu_seconds_total") > 0.0);
    assert_true(sample(t, "process_resident_memory_bytes") > 1024.0 * 1024.0);
    assert_true(sample(t, "process_virtual_memory_bytes") >=
                sample(t, "process_resident_memory_bytes"));
    assert_true(sample(t, "process_open_fds") >= 4.0); /* stdio, a listener, a client */
    assert_true(sample(t, "process_max_fds") >= sample(t, "process_open_fds"));
    assert_true(sample(t, "process_start_time_seconds") == sample(t, "mcplex_start_time_seconds"));
    free(t);

    /* a client's GET stream at /mcp/alpha, whose upstream answers its own
     * GET with the 405 MCP allows: the client's stream is mcplex's, and it
     * counts as ok, not as an error */
    char *one = gw_url(&w, "/mcp/alpha");
    char one_sid[64];
    mx_it_open_session(one, "it-metrics", one_sid, sizeof(one_sid));
    char *sid_hdr = mx_xasprintf("Mcp-Session-Id: %s", one_sid);
    const char *get[] = {"curl", "-s",
                         "-o",   "/dev/null",
                         "-m",   "1",
                         "-H",   sid_hdr,
                         "-H",   "Accept: text/event-stream",
                         "-H",   "MCP-Protocol-Version: 2025-11-25",
                         one,    NULL};
    assert_int_equal(mx_it_run("get-stream", get, NULL, 10000, NULL), 28); /* held until -m */
    t = NULL;
    for (int i = 0; i < 50; i++) {
        free(t);
        t = get_metrics(&w, "metrics-get.txt");
        if (calls(t, "alpha", "GET", "ok") >= 1)
            break;
        usleep(100 * 1000);
    }
    assert_true(calls(t, "alpha", "GET", "ok") == 1);
    assert_true(calls(t, "alpha", "GET", "error") <= 0);
    free(t);
    free(sid_hdr);
    free(one);

    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(log);
    assert_int_equal(access_lines(log, "/mcp", "tools/call", "alpha"), 3);
    assert_int_equal(access_lines(log, "/mcp", "initialize", NULL), 1);
    assert_int_equal(access_lines(log, "/mcp", "tools/list", NULL), 1);
    free(log);

    /* the same call over `mcplex stdio`, with its own access log */
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *err_path = mx_it_path("stdio.log");
    const char *argv[] = {bin, "stdio", "-c", w.cfg, "--access-log", NULL};
    int in = -1;
    struct mx_it_lines *out = mx_xcalloc(1, sizeof(*out));
    pid_t pid = mx_it_spawn_piped("mcplex-stdio", argv, NULL, err_path, &in, &out->fd);
    assert_true(pid > 0);
    char *lines = mx_xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
        "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"raw\",\"version\":\"0\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
        "\"arguments\":{\"message\":\"stdio call\"}}}\n",
        echo);
    assert_int_equal(write(in, lines, strlen(lines)), (ssize_t)strlen(lines));
    free(lines);
    bool answered = false;
    for (int i = 0; i < 8 && !answered; i++) {
        json_t *m = mx_it_lines_next(out, 20000);
        assert_non_null(m);
        char *d = json_dumps(m, 0);
        answered = json_integer_value(json_object_get(m, "id")) == 2 && strstr(d, "stdio call");
        free(d);
        json_decref(m);
    }
    assert_true(answered);
    close(in);
    int st = mx_it_wait_exit(pid, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(out->fd);
    free(out);
    char *slog = mx_it_read_file(err_path, NULL);
    assert_non_null(slog);
    if (strstr(slog, "POST /mcp tools/call 200 ok") == NULL ||
        strstr(slog, "POST /mcp initialize 200 ok") == NULL)
        fail_msg("mcplex stdio wrote no access line for its calls:\n%s", slog);
    free(slog);
    free(err_path);
    free(bin);
    free(sid_h);
    free(url);
    world_clear(&w);
    mx_it_pass();
}

static char *run_status(const char *const *args, int *rc)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[12] = {bin, "status"};
    size_t n = 2;
    for (size_t i = 0; args[i] && n < 11; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char *out = NULL;
    *rc = mx_it_run("status", argv, NULL, 20000, &out);
    free(bin);
    return out;
}

/* The status line of |server| in the table, or NULL. */
static char *row_of(const char *out, const char *server)
{
    size_t n = strlen(server);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, server, n) == 0 && p[n] == ' ')
            return mx_xstrndup(p, strcspn(p, "\n"));
    }
    return NULL;
}

static void test_status_table_and_json(void **state)
{
    struct world w;
    int rc;
    (void)state;
    start_world(&w, false, NULL);
    make_calls(&w);

    const char *a1[] = {"-c", w.cfg, NULL};
    char *out = run_status(a1, &rc);
    fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "plain HTTP"));
    char *row = row_of(out, "alpha");
    assert_non_null(row);
    assert_non_null(strstr(row, " up "));
    assert_non_null(strstr(row, " ms")); /* a p50 from the last minute */
    free(row);
    row = row_of(out, "wrongkey");
    assert_non_null(row);
    assert_non_null(strstr(row, "auth-failed"));
    free(row);
    row = row_of(out, "gone");
    assert_non_null(row);
    assert_non_null(strstr(row, "down"));
    free(row);
    free(out);

    /* --json: the /health object as it came */
    char *url = gw_url(&w, "");
    const char *a2[] = {"--url", url, "--json", NULL};
    out = run_status(a2, &rc);
    assert_int_equal(rc, 0);
    json_error_t err;
    json_t *h = json_loads(out, 0, &err);
    assert_true(json_is_object(h));
    json_t *ups = json_object_get(h, "upstreams");
    assert_int_equal(json_array_size(ups), 3);
    json_t *alpha = json_array_get(ups, 0);
    assert_string_equal(json_string_value(json_object_get(alpha, "name")), "alpha");
    assert_true(json_is_number(json_object_get(alpha, "p50_ms_1m")));
    assert_true(json_integer_value(json_object_get(alpha, "requests")) >= 8);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ups, 2), "wakes")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "listen"), "port")),
                     w.port);
    json_decref(h);
    char *status_out = mx_it_path("status.json");
    assert_int_equal(mx_it_write_file(status_out, out, strlen(out)), 0);
    free(out);

    /* the access line is opt-in: without --access-log none at info */
    char *log = mx_it_read_file(w.log, NULL);
    assert_null(strstr(log, " access "));
    free(log);
    const char *files[] = {w.log, status_out, NULL};
    assert_no_canary(&w, files);
    free(status_out);

    /* nothing answers: exit 1, and it says so */
    assert_true(mx_it_signal(w.mcplex, SIGTERM) == 0);
    int ws = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    out = run_status(a1, &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no gateway answered"));
    free(out);
    out = run_status(a2, &rc);
    assert_int_equal(rc, 1);
    free(out);
    free(url);

    /* a config that asks for any port cannot be found from outside */
    char *any = mx_it_path("any.toml");
    const char *any_cfg = "[listen]\naddress = \"127.0.0.1:0\"\ntls = false\n";
    assert_int_equal(mx_it_write_file(any, any_cfg, strlen(any_cfg)), 0);
    const char *a3[] = {"-c", any, NULL};
    out = run_status(a3, &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "--url"));
    free(out);
    free(any);
    world_clear(&w);
    mx_it_pass();
}

static void test_status_tls_listener(void **state)
{
    struct world w;
    int rc;
    (void)state;
    start_world(&w, true, NULL);
    /* the TLS listener is verified against the local CA serve made */
    const char *a1[] = {"-c", w.cfg, NULL};
    char *out = run_status(a1, &rc);
    fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "(port"));
    assert_non_null(strstr(out, "TLS)"));
    assert_non_null(strstr(out, "https://127.0.0.1:"));
    free(out);
    /* --url without the CA: the certificate is not trusted, and it says so */
    char *url = gw_url(&w, "");
    const char *a2[] = {"--url", url, NULL};
    out = run_status(a2, &rc);
    assert_int_equal(rc, 1);
    free(out);
    const char *a3[] = {"--url", url, "--cacert", w.ca, NULL};
    out = run_status(a3, &rc);
    assert_int_equal(rc, 0);
    free(out);
    /* /metrics over TLS parses too */
    char *t = get_metrics(&w, "metrics-tls.txt");
    promtool_check("metrics-tls.txt");
    free(t);
    free(url);
    world_clear(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_metrics_counts_agree, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_calls_through_mcp, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_status_table_and_json, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_status_tls_listener, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
