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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
