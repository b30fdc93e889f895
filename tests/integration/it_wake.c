/* SPDX-License-Identifier: MIT */
/*
 * Wake-on-use through mcplex with sandbox-sim as the paused sandbox: hold
 * mode (the first call after a pause just takes longer), refuse mode with a
 * wake hook (50 concurrent calls share one wake, none runs twice), a call
 * whose connection breaks after it was sent (not repeated: outcome unknown),
 * and a wake that never comes (a clear error in the configured time).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define CONCURRENT 50

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

struct world {
    char secret[MX_IT_CANARY_SIZE];
    int sim_port;
    int port;
    char *url;     /* mcplex /mcp/sim */
    char *sim_url; /* sandbox-sim base */
    char session[128];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void start_sim(struct world *w, const char *const *sim_args)
{
    mx_it_canary(w->secret, sizeof(w->secret));
    assert_true(mx_it_start_sim("sim", w->secret, sim_args, &w->sim_port) > 0);
    w->sim_url = mx_xasprintf("http://127.0.0.1:%d", w->sim_port);
}

static void start_gw(struct world *w, const char *server_extra)
{
    char *sec = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(sec, w->secret, strlen(w->secret)), 0);
    assert_int_equal(chmod(sec, 0600), 0);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n%s",
                             w->port, w->sim_port, sec, server_extra ? server_extra : "");
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(path, w->port) > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp/sim", w->port);
    free(sec);
    free(cfg);
    free(path);
}

static void start(struct world *w, const char *const *sim_args, const char *server_extra)
{
    start_sim(w, sim_args);
    start_gw(w, server_extra);
}

static void stop(struct world *w)
{
    free(w->url);
    free(w->sim_url);
}

/* Talk to the sim itself (stats, control) with its credential. */
static json_t *sim_call(const struct world *w, const char *method, const char *path,
                        const char *body)
{
    char *url = mx_xasprintf("%s%s", w->sim_url, path);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w->secret);
    const char *h[] = {auth, "Content-Type: application/json", NULL};
    long status = 0;
    char *resp = NULL;
    assert_int_equal(mx_it_http(method, url, h, body, &status, &resp), 0);
    assert_int_equal(status, 200);
    json_t *j = json_loads(resp, 0, NULL);
    assert_non_null(j);
    free(resp);
    free(auth);
    free(url);
    return j;
}

static json_int_t stat_int(const struct world *w, const char *a, const char *b)
{
    json_t *s = sim_call(w, "GET", "/__stats", NULL);
    json_t *v = json_object_get(s, a);
    if (b)
        v = json_object_get(v, b);
    json_int_t r = json_integer_value(v);
    json_decref(s);
    return r;
}

/* initialize + notifications/initialized through mcplex; keeps the session. */
static void open_session(struct world *w)
{
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream", NULL};
    long status = 0;
    char *hdrs = NULL, *body = NULL;
    assert_int_equal(mx_it_http_full("POST", w->url, h, init_body, 30000, &status, &hdrs, &body),
                     0);
    assert_int_equal(status, 200);
    const char *sid = strcasestr(hdrs, "Mcp-Session-Id:");
    assert_non_null(sid);
    sid += strlen("Mcp-Session-Id:");
    while (*sid == ' ')
        sid++;
    size_t n = strcspn(sid, "\r\n");
    assert_true(n < sizeof(w->session));
    memcpy(w->session, sid, n);
    w->session[n] = '\0';
    free(hdrs);
    free(body);
}

static char *call_body(int id, const char *msg)
{
    return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                        "\"name\":\"echo\",\"arguments\":{\"message\":\"%s\"}}}",
                        id, msg);
}

/* One tools/call echo through mcplex; returns the body (caller frees). */
static char *call_echo(const struct world *w, int id, const char *msg, double *secs)
{
    char *sid = mx_xasprintf("Mcp-Session-Id: %s", w->session);
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream",
                       "MCP-Protocol-Version: 2025-06-18", sid, NULL};
    char *body = call_body(id, msg);
    long status = 0;
    char *resp = NULL;
    double t0 = now_s();
    assert_int_equal(mx_it_http_full("POST", w->url, h, body, 60000, &status, NULL, &resp), 0);
    if (secs)
        *secs = now_s() - t0;
    assert_int_equal(status, 200);
    free(body);
    free(sid);
    return resp;
}

static void test_wake_hold_mode(void **state)
{
    struct world w = {0};
    (void)state;
    const char *args[] = {
        "--pause-after-ms", "800", "--pause-mode", "hold", "--hold-ms", "1500", NULL};
    start(&w, args, "idle_close = \"1s\"\n");
    open_session(&w);
    json_int_t wakes_before = stat_int(&w, "wakes", NULL);
    struct timespec idle = {1, 300 * 1000 * 1000};
    nanosleep(&idle, NULL); /* past pause_after_ms: paused again */
    double secs = 0;
    char *resp = call_echo(&w, 2, "after the pause", &secs);
    assert_non_null(strstr(resp, "after the pause"));
    /* it took about the hold time, no error, no extra round trips */
    assert_true(secs >= 1.4);
    assert_true(secs < 3.0);
    free(resp);
    assert_int_equal(stat_int(&w, "tools", "echo"), 1);
    assert_int_equal(stat_int(&w, "wakes", NULL), wakes_before + 1);

    /* paused again; this time the client asked for progress: it hears that
     * the sandbox is waking, then gets its result on the same SSE answer */
    nanosleep(&idle, NULL);
    char *sid = mx_xasprintf("Mcp-Session-Id: %s", w.session);
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream",
                       "MCP-Protocol-Version: 2025-06-18", sid, NULL};
    long status = 0;
    char *hdrs = NULL;
    assert_int_equal(mx_it_http_full("POST", w.url, h,
                                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                                     "\"params\":{\"name\":\"echo\",\"arguments\":{"
                                     "\"message\":\"with progress\"},\"_meta\":{"
                                     "\"progressToken\":\"tok-1\"}}}",
                                     30000, &status, &hdrs, &resp),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strcasestr(hdrs, "text/event-stream"));
    const char *prog = strstr(resp, "notifications/progress");
    const char *result = strstr(resp, "\"text\":\"with progress\"");
    assert_non_null(prog);
    assert_non_null(strstr(resp, "\"progressToken\":\"tok-1\""));
    assert_non_null(strstr(resp, "waiting for sandbox 'sim' to wake"));
    assert_non_null(result);
    assert_true(prog < result);
    free(resp);
    free(hdrs);
    free(sid);
    stop(&w);
    mx_it_pass();
}

struct multi_call {
    char *body;
    struct curl_slist *hdrs;
    char resp[4096];
    size_t len;
};

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
    struct multi_call *m = ud;
    size_t len = sz * n;
    size_t room = sizeof(m->resp) - 1 - m->len;
    memcpy(m->resp + m->len, p, len < room ? len : room);
    m->len += len < room ? len : room;
    m->resp[m->len] = '\0';
    return len;
}

static void test_wake_refuse_mode_shared_wake(void **state)
{
    struct world w = {0};
    (void)state;
    const char *args[] = {"--pause-after-ms",
                          "600000",
                          "--pause-mode",
                          "refuse",
                          "--refuse-status",
                          "503",
                          "--wake-ms",
                          "700",
                          NULL};
    start_sim(&w, args);
    /* The hook is a command (no shell, no secrets in its environment): curl
     * reads the sim's credential from a header file the test wrote. */
    char *hdr_file = mx_it_path("wake.hdr");
    char *hdr = mx_xasprintf("Authorization: Bearer %s\n", w.secret);
    assert_int_equal(mx_it_write_file(hdr_file, hdr, strlen(hdr)), 0);
    char *extra = mx_xasprintf("wake = \"cmd:curl -sf -X POST -H @%s %s/__wake\"\n"
                               "wake_timeout = \"20s\"\nmax_concurrency = 64\n",
                               hdr_file, w.sim_url);
    start_gw(&w, extra);
    json_decref(sim_call(&w, "POST", "/__control", "{\"action\":\"pause\"}"));
    open_session(&w); /* paused: the first wake */
    assert_int_equal(stat_int(&w, "wakes", NULL), 1);

    /* pause again, then 50 concurrent calls */
    json_decref(sim_call(&w, "POST", "/__control", "{\"action\":[\"pause\",\"reset_stats\"]}"));
    CURLM *multi = curl_multi_init();
    struct multi_call calls[CONCURRENT];
    char *sid = mx_xasprintf("Mcp-Session-Id: %s", w.session);
    for (int i = 0; i < CONCURRENT; i++) {
        struct multi_call *m = &calls[i];
        char msg[32];
        memset(m, 0, sizeof(*m));
        snprintf(msg, sizeof(msg), "call-%d", i);
        m->body = call_body(100 + i, msg);
        m->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
        m->hdrs = curl_slist_append(m->hdrs, "Accept: application/json, text/event-stream");
        m->hdrs = curl_slist_append(m->hdrs, "MCP-Protocol-Version: 2025-06-18");
        m->hdrs = curl_slist_append(m->hdrs, sid);
        CURL *e = curl_easy_init();
        curl_easy_setopt(e, CURLOPT_URL, w.url);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, m->body);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, m->hdrs);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, m);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
        curl_easy_setopt(e, CURLOPT_PRIVATE, m);
        curl_multi_add_handle(multi, e);
    }
    int running = 1;
    double t0 = now_s();
    while (running && now_s() - t0 < 40) {
        curl_multi_perform(multi, &running);
        curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    assert_int_equal(running, 0);
    CURLMsg *msg;
    int left, ok = 0;
    while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
        struct multi_call *m = NULL;
        long status = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&m);
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        assert_int_equal(msg->data.result, CURLE_OK);
        assert_int_equal(status, 200);
        int idx = (int)(m - calls);
        char want[64];
        snprintf(want, sizeof(want), "\"text\":\"call-%d\"", idx);
        if (strstr(m->resp, want) == NULL)
            fail_msg("call %d got %s", idx, m->resp);
        ok++;
        curl_multi_remove_handle(multi, msg->easy_handle);
        curl_easy_cleanup(msg->easy_handle);
    }
    assert_int_equal(ok, CONCURRENT);
    curl_multi_cleanup(multi);
    for (int i = 0; i < CONCURRENT; i++) {
        free(calls[i].body);
        curl_slist_free_all(calls[i].hdrs);
    }
    /* exactly one wake for all fifty, and each call ran exactly once */
    assert_int_equal(stat_int(&w, "wakes", NULL), 1);
    assert_int_equal(stat_int(&w, "tools", "echo"), CONCURRENT);

    /* a call whose connection breaks after the sandbox got it is not repeated */
    json_decref(sim_call(&w, "POST", "/__control",
                         "{\"action\":[\"reset_stats\",\"drop_next_before_response\"]}"));
    char *resp = call_echo(&w, 900, "maybe-ran", NULL);
    assert_non_null(strstr(resp, "-32013"));
    assert_non_null(strstr(resp, "not repeated"));
    free(resp);
    assert_int_equal(stat_int(&w, "tools", "echo"), 1);
    /* and the next call works */
    resp = call_echo(&w, 901, "next", NULL);
    assert_non_null(strstr(resp, "\"text\":\"next\""));
    free(resp);

    /* /health counted the wakes and shows the upstream up */
    char *hurl = mx_xasprintf("http://127.0.0.1:%d/health", w.port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", hurl, NULL, NULL, &status, &body), 0);
    assert_non_null(strstr(body, "\"state\":\"up\""));
    free(body);
    free(hurl);
    free(sid);
    free(extra);
    free(hdr);
    free(hdr_file);
    stop(&w);
    mx_it_pass();
}

static void test_wake_never_comes(void **state)
{
    struct world w = {0};
    (void)state;
    const char *args[] = {
        "--pause-after-ms", "600000", "--pause-mode", "refuse", "--refuse-status", "502", NULL};
    start_sim(&w, args);
    /* no wake hook, and nothing else wakes it */
    start_gw(&w, "wake_timeout = \"2s\"\n");
    json_decref(sim_call(&w, "POST", "/__control", "{\"action\":\"pause\"}"));
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream", NULL};
    long status = 0;
    char *body = NULL;
    double t0 = now_s();
    assert_int_equal(mx_it_http_full("POST", w.url, h, init_body, 30000, &status, NULL, &body), 0);
    double secs = now_s() - t0;
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "did not wake within 2 s"));
    assert_non_null(strstr(body, "-32010"));
    assert_true(secs >= 1.8 && secs < 5.0);
    free(body);
    char *hurl = mx_xasprintf("http://127.0.0.1:%d/health", w.port);
    assert_int_equal(mx_it_http("GET", hurl, NULL, NULL, &status, &body), 0);
    assert_non_null(strstr(body, "\"state\":\"down\""));
    free(body);
    free(hurl);
    /* the sim never ran anything */
    assert_int_equal(stat_int(&w, "methods", "initialize"), 0);
    stop(&w);
    mx_it_pass();
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wake_hold_mode, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_wake_refuse_mode_shared_wake, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_wake_never_comes, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
