/* SPDX-License-Identifier: MIT */
/*
 * The status page in a real browser: mcplex with a client token in front of
 * two sandbox-sims (alpha pauses on demand, refuse mode, with a wake hook)
 * and a stdio server (the official SDK) that lists a tool named
 * `<img src=x onerror=alert(1)>`. `mcplex status --open` (no desktop: it
 * prints the link) gives the login link; tests/js/status-page.mjs drives
 * Debian's chromium through puppeteer-core and reports what it saw: the
 * page refused without the cookie, no console error nor failed request,
 * the three servers, an SDK call shown within 1 s without a reload, the
 * hostile name as text with no dialog, alpha's row turning "waking" and
 * back, and the CSP header. The client token never reaches the browser,
 * the log or the test's output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "alloc.h"
#include "harness.h"

static char *login_link(const char *cfg_path)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "status", "--open", "-c", cfg_path, NULL};
    const char *env[] = {"DISPLAY", "WAYLAND_DISPLAY", NULL};
    char *out = NULL;
    assert_int_equal(mx_it_run("status-open", argv, env, 15000, &out), 0);
    free(bin);
    char *at = strstr(out, "http://");
    assert_non_null(at);
    char *end = strpbrk(at, "\r\n");
    char *link = mx_xstrndup(at, end ? (size_t)(end - at) : strlen(at));
    free(out);
    assert_non_null(strstr(link, "/status/login?code="));
    return link;
}

/* Without JavaScript: the HTML itself holds the upstream table, and what
 * an upstream named is escaped in it. The stdio server's lists come with
 * a first /mcp client, so one is made here with curl. */
static void server_rendered(const char *base, const char *ctok)
{
    char *auth = mx_xasprintf("Authorization: Bearer %s", ctok);
    char *mcp = mx_xasprintf("%s/mcp", base);
    const char *h[] = {auth, "Content-Type: application/json",
                       "Accept: application/json, text/event-stream",
                       "MCP-Protocol-Version: 2025-06-18", NULL};
    long status = 0;
    char *hdrs = NULL, *body = NULL;
    assert_int_equal(mx_it_http_full("POST", mcp, h,
                                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                                     "\"params\":{\"protocolVersion\":\"2025-06-18\","
                                     "\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\","
                                     "\"version\":\"1\"}}}",
                                     30000, &status, &hdrs, &body),
                     0);
    assert_int_equal(status, 200);
    free(hdrs);
    free(body);
    char *page = mx_xasprintf("%s/status", base);
    const char *ah[] = {auth, NULL};
    bool seen = false;
    /* the stdio server's lists arrive on their own after initialize */
    for (int i = 0; i < 100 && !seen; i++) {
        assert_int_equal(mx_it_http_full("GET", page, ah, NULL, 10000, &status, &hdrs, &body), 0);
        assert_int_equal(status, 200);
        seen = strstr(body, "&lt;img src=x onerror=alert(1)&gt;") != NULL;
        if (seen) {
            assert_non_null(strstr(body, "<tr data-server=\"alpha\">"));
            assert_non_null(strstr(body, "<tr data-server=\"beta\">"));
            assert_non_null(strstr(body, "<tr data-server=\"files\">"));
            assert_null(strstr(body, "<img"));
            assert_null(strstr(body, "<script>"));
            assert_non_null(strstr(hdrs, "default-src 'self'"));
        }
        free(hdrs);
        free(body);
        if (!seen) {
            struct timespec t = {0, 100 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
    }
    assert_true(seen);
    free(page);
    free(mcp);
    free(auth);
}

/* Over TLS: the cookie is Secure, HttpOnly, SameSite=Strict, for /status;
 * it opens the page and its feed, never /mcp nor /status/code; a code
 * works once; a wrong one opens nothing. */
static void test_status_login_over_tls(void **state)
{
    char ctok[MX_IT_CANARY_SIZE];
    char *ca = NULL;
    (void)state;
    mx_it_canary(ctok, sizeof(ctok));
    char *tok_file = mx_it_secret_file("client.secret", ctok);
    char *extra = mx_xasprintf("client_token = \"file:%s\"\n", tok_file);
    int port = mx_it_start_sim_behind_mcplex(extra, &ca);
    mx_it_set_ca_file(ca);
    char *auth = mx_xasprintf("Authorization: Bearer %s", ctok);
    char *code_url = mx_xasprintf("https://127.0.0.1:%d/status/code", port);
    long status = 0;
    char *hdrs = NULL, *body = NULL;
    const char *ah[] = {auth, NULL};
    /* no token, no code; the page refused */
    assert_int_equal(mx_it_http("POST", code_url, NULL, "", &status, NULL), 0);
    assert_int_equal(status, 403);
    char *page = mx_xasprintf("https://127.0.0.1:%d/status", port);
    assert_int_equal(mx_it_http("GET", page, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 403);
    assert_non_null(strstr(body, "mcplex status --open"));
    free(body);
    assert_int_equal(mx_it_http("POST", code_url, ah, "", &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *o = json_loads(body, 0, NULL);
    free(body);
    char *login = mx_xasprintf("https://127.0.0.1:%d/status/login?code=%s", port,
                               json_string_value(json_object_get(o, "code")));
    json_decref(o);
    char *wrong = mx_xasprintf("https://127.0.0.1:%d/status/login?code=%032d", port, 0);
    assert_int_equal(mx_it_http_full("GET", wrong, NULL, NULL, 10000, &status, &hdrs, NULL), 0);
    assert_int_equal(status, 403);
    assert_null(strstr(hdrs, "Set-Cookie"));
    free(hdrs);
    assert_int_equal(mx_it_http_full("GET", login, NULL, NULL, 10000, &status, &hdrs, NULL), 0);
    assert_int_equal(status, 303);
    const char *sc = strcasestr(hdrs, "Set-Cookie: mcplex_status=");
    assert_non_null(sc);
    char cookie[128];
    size_t n = strcspn(sc + 12, ";\r\n");
    assert_true(n < sizeof(cookie) - 8);
    snprintf(cookie, sizeof(cookie), "Cookie: %.*s", (int)n, sc + 12);
    const char *eol = strpbrk(sc, "\r\n");
    char *line = mx_xstrndup(sc, eol ? (size_t)(eol - sc) : strlen(sc));
    assert_non_null(strstr(line, "; HttpOnly"));
    assert_non_null(strstr(line, "; SameSite=Strict"));
    assert_non_null(strstr(line, "; Path=/status"));
    assert_non_null(strstr(line, "; Secure"));
    assert_non_null(strcasestr(hdrs, "Location: /status"));
    free(line);
    free(hdrs);
    /* once */
    assert_int_equal(mx_it_http("GET", login, NULL, NULL, &status, NULL), 0);
    assert_int_equal(status, 403);
    /* the cookie opens the page and the feed's first state ... */
    const char *ch[] = {cookie, NULL};
    assert_int_equal(mx_it_http("GET", page, ch, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "<tr data-server=\"sim\">"));
    free(body);
    char *state_url = mx_xasprintf("https://127.0.0.1:%d/status/state", port);
    assert_int_equal(mx_it_http("GET", state_url, ch, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"type\":\"state\""));
    free(body);
    /* ... and nothing else */
    char *mcp = mx_xasprintf("https://127.0.0.1:%d/mcp", port);
    const char *mh[] = {cookie, "Content-Type: application/json",
                        "Accept: application/json, text/event-stream", NULL};
    assert_int_equal(mx_it_http("POST", mcp, mh,
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status,
                                NULL),
                     0);
    assert_int_equal(status, 403);
    char *metrics = mx_xasprintf("https://127.0.0.1:%d/metrics", port);
    assert_int_equal(mx_it_http("GET", metrics, ch, NULL, &status, NULL), 0);
    assert_int_equal(status, 403);
    assert_int_equal(mx_it_http("POST", code_url, ch, "", &status, NULL), 0);
    assert_int_equal(status, 403);
    /* a forged cookie is no login */
    const char *fh[] = {"Cookie: mcplex_status="
                        "0000000000000000000000000000000000000000000000000000000000000000",
                        NULL};
    assert_int_equal(mx_it_http("GET", page, fh, NULL, &status, NULL), 0);
    assert_int_equal(status, 403);
    /* no code nor cookie value in the log */
    char *log_path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(log_path, NULL);
    assert_non_null(log);
    assert_null(strstr(log, strchr(login, '=') + 1));
    assert_null(strstr(log, cookie + strlen("Cookie: mcplex_status=")));
    assert_null(strstr(log, ctok));
    free(log);
    free(log_path);
    free(metrics);
    free(mcp);
    free(state_url);
    free(wrong);
    free(login);
    free(page);
    free(code_url);
    free(auth);
    free(extra);
    free(tok_file);
    free(ca);
    mx_it_pass();
}

static void test_status_page_in_chromium(void **state)
{
    char ctok[MX_IT_CANARY_SIZE], stok[MX_IT_CANARY_SIZE];
    int alpha_port = 0, beta_port = 0;
    (void)state;
    mx_it_canary(ctok, sizeof(ctok));
    mx_it_canary(stok, sizeof(stok));
    const char *alpha_args[] = {"--pause-mode", "refuse", "--refuse-status", "503", "--wake-ms",
                                "600",          NULL};
    assert_true(mx_it_start_sim("alpha", stok, alpha_args, &alpha_port) > 0);
    assert_true(mx_it_start_sim("beta", stok, NULL, &beta_port) > 0);

    char *sim_secret = mx_it_secret_file("sim.secret", stok);
    char *client_secret = mx_it_secret_file("client.secret", ctok);
    char *hdr_file = mx_it_path("wake.hdr");
    char *hdr = mx_xasprintf("Authorization: Bearer %s\n", stok);
    assert_int_equal(mx_it_write_file(hdr_file, hdr, strlen(hdr)), 0);
    char *hostile = mx_xasprintf("%s/tests/js/hostile-stdio.mjs", mx_it_source_dir());
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf(
        "[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\nclient_token = \"file:%s\"\n"
        "[proxy]\nwake_timeout = \"20s\"\n"
        "[servers.alpha]\nurl = \"http://127.0.0.1:%d/mcp\"\nauth = \"bearer\"\n"
        "secret = \"file:%s\"\nwake = \"cmd:curl -sf -X POST -H @%s "
        "http://127.0.0.1:%d/__wake\"\n"
        "[servers.beta]\nurl = \"http://127.0.0.1:%d/mcp\"\nauth = \"bearer\"\n"
        "secret = \"file:%s\"\n"
        "[servers.files]\ncommand = [\"node\", \"%s\"]\n",
        port, client_secret, alpha_port, sim_secret, hdr_file, alpha_port, beta_port, sim_secret,
        hostile);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);

    char *link = login_link(cfg_path);
    char *base = mx_xasprintf("http://127.0.0.1:%d", port);
    server_rendered(base, ctok);
    char *sim_url = mx_xasprintf("http://127.0.0.1:%d", alpha_port);
    char *e_base = mx_xasprintf("MX_BASE=%s", base);
    char *e_login = mx_xasprintf("MX_LOGIN=%s", link);
    char *e_tok = mx_xasprintf("MX_TOKEN=%s", ctok);
    char *e_sim = mx_xasprintf("MX_SIM_URL=%s", sim_url);
    char *e_stok = mx_xasprintf("MX_SIM_TOKEN=%s", stok);
    const char *shots = getenv("MX_STATUS_SHOTS");
    char *e_shots = mx_xasprintf("MX_SHOTS=%s", shots ? shots : "");
    const char *report = getenv("MX_STATUS_REPORT");
    char *e_report = mx_xasprintf("MX_REPORT=%s", report ? report : "");
    const char *env[] = {e_base, e_login, e_tok, e_sim, e_stok, e_shots, e_report, NULL};
    json_t *out = NULL;
    int rc = mx_it_node("status-page.mjs", NULL, env, &out);
    char *text = out ? json_dumps(out, JSON_INDENT(1)) : NULL;
    fprintf(stderr, "status-page.mjs (exit %d): %s\n", rc, text ? text : "no JSON");
    free(text);
    assert_int_equal(rc, 0);
    assert_non_null(out);
    assert_null(json_object_get(out, "error"));

    /* refused without the login, in after it, at /status */
    assert_int_equal(json_integer_value(json_object_get(out, "withoutLogin")), 403);
    assert_int_equal(json_integer_value(json_object_get(out, "afterLogin")), 200);
    char *final = mx_xasprintf("%s/status", base);
    assert_string_equal(json_string_value(json_object_get(out, "finalUrl")), final);
    free(final);
    const char *csp = json_string_value(json_object_get(out, "csp"));
    assert_non_null(csp);
    assert_non_null(strstr(csp, "default-src 'self'"));
    /* a clean page */
    assert_int_equal(json_array_size(json_object_get(out, "consoleErrors")), 0);
    assert_int_equal(json_array_size(json_object_get(out, "failedRequests")), 0);
    assert_int_equal(json_array_size(json_object_get(out, "dialogs")), 0);
    /* both sims and the stdio server */
    const json_t *servers = json_object_get(out, "servers");
    assert_true(mx_it_has_string(servers, "alpha"));
    assert_true(mx_it_has_string(servers, "beta"));
    assert_true(mx_it_has_string(servers, "files"));
    /* the SDK's call, shown within 1 s, without a reload */
    assert_true(json_is_true(json_object_get(out, "callOk")));
    assert_true(json_is_integer(json_object_get(out, "callShownMs")));
    assert_true(json_integer_value(json_object_get(out, "callShownMs")) <= 1000);
    /* the hostile name, as its characters, and no element made of it */
    assert_true(
        mx_it_has_string(json_object_get(out, "renamedOriginals"), "<img src=x onerror=alert(1)>"));
    assert_int_equal(json_integer_value(json_object_get(out, "imgCount")), 0);
    /* a pause turns alpha's row to waking and back to up, with the wake's time */
    assert_int_equal(json_integer_value(json_object_get(out, "pauseStatus")), 200);
    assert_true(json_is_true(json_object_get(out, "sawWaking")));
    assert_true(json_is_true(json_object_get(out, "sawUpAgain")));
    assert_string_not_equal(json_string_value(json_object_get(out, "wakeCell")), "-");
    json_decref(out);

    /* the login link is spent */
    long status = 0;
    assert_int_equal(mx_it_http("GET", link, NULL, NULL, &status, NULL), 0);
    assert_int_equal(status, 403);

    /* the client token never reached the log, status --open's output nor
     * what the browser saw */
    char *scan_paths[] = {mx_it_path("mcplex.log"), mx_it_path("status-open.log"),
                          mx_it_path("node-status-page-1.out"),
                          mx_it_path("node-status-page-1.log")};
    const char *scan[] = {scan_paths[0], scan_paths[1], scan_paths[2], scan_paths[3], NULL};
    const char *canaries[] = {ctok};
    assert_int_equal(mx_it_canary_hits(scan, canaries, 1), 0);
    for (size_t i = 0; i < sizeof(scan_paths) / sizeof(scan_paths[0]); i++)
        free(scan_paths[i]);

    free(e_base);
    free(e_login);
    free(e_tok);
    free(e_sim);
    free(e_stok);
    free(e_shots);
    free(e_report);
    free(sim_url);
    free(base);
    free(link);
    free(cfg_path);
    free(cfg);
    free(hostile);
    free(hdr);
    free(hdr_file);
    free(client_secret);
    free(sim_secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_page_in_chromium, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_status_login_over_tls, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
