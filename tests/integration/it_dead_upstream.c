/* SPDX-License-Identifier: MIT */
/*
 * A dead upstream fails fast and says why. Behind mcplex: "good", a
 * sandbox-sim; "gone", a port nothing listens on and no wake hook; "hooked",
 * the same dead port with a wake hook. A call to gone fails within 2 s with
 * a JSON-RPC error naming the server and the cause, not after wake_timeout;
 * good keeps serving meanwhile; hooked is woken as before: it waits until
 * wake_timeout and says it did not wake.
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
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define WAKE_TIMEOUT_S 6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* POST initialize to |url|; the answer's error message, and its time in *secs. */
static char *init_error(const char *url, double *secs)
{
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    struct mx_it_answer a = {0};
    double t0 = now_s();
    assert_int_equal(mx_it_http_full("POST", url, hdrs,
                                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                                     "\"params\":{\"protocolVersion\":\"2025-11-25\","
                                     "\"capabilities\":{},\"clientInfo\":{\"name\":\"dead\","
                                     "\"version\":\"1\"}}}",
                                     (WAKE_TIMEOUT_S + 10) * 1000, &a.status, &a.headers, &a.body),
                     0);
    *secs = now_s() - t0;
    mx_it_answer_parse(&a);
    json_t *err = json_object_get(a.msg, "error");
    const char *m = json_string_value(json_object_get(err, "message"));
    char *out = mx_xstrdup(m ? m : "(no error)");
    fprintf(stderr, "# %s: %.2f s: %s\n", url, *secs, out);
    mx_it_answer_clear(&a);
    return out;
}

static void test_dead_upstream(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    mx_it_canary(token, sizeof(token));
    const char *sim_args[] = {"--name", "good", NULL};
    assert_true(mx_it_start_sim("good", token, sim_args, &sim_port) > 0);
    char *secret = mx_it_secret_file("good.secret", token);
    int dead_port = mx_it_free_port(); /* nothing listens there */
    int port = mx_it_free_port();
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                     "[servers.good]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                     "secret = \"file:%s\"\n"
                     "[servers.gone]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                     "wake_timeout = \"%ds\"\n"
                     "[servers.hooked]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                     "wake = \"cmd:/bin/true\"\nwake_timeout = \"%ds\"\n",
                     port, sim_port, secret, dead_port, WAKE_TIMEOUT_S, dead_port, WAKE_TIMEOUT_S);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);

    char *gone = mx_xasprintf("http://127.0.0.1:%d/mcp/gone", port);
    double secs;
    char *msg = init_error(gone, &secs);
    char want[96];
    snprintf(want, sizeof(want), "connection refused at 127.0.0.1:%d", dead_port);
    if (strstr(msg, "'gone'") == NULL || strstr(msg, want) == NULL)
        fail_msg("the error does not name the server and the cause (%s): %s", want, msg);
    if (secs >= 2.0)
        fail_msg("a dead upstream without a wake hook failed after %.2f s, not within 2 s", secs);
    free(msg);

    /* with a wake hook it is woken as before: it waits for wake_timeout */
    char *hooked = mx_xasprintf("http://127.0.0.1:%d/mcp/hooked", port);
    msg = init_error(hooked, &secs);
    if (strstr(msg, "did not wake") == NULL || secs < WAKE_TIMEOUT_S - 1)
        fail_msg("the hooked upstream did not wait to wake (%.2f s): %s", secs, msg);
    free(msg);

    /* the others keep serving (good's names are its own: nothing collides) */
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out = mx_it_client_ok(url, "call",
                                  "{\"name\":\"echo\","
                                  "\"arguments\":{\"message\":\"still here\"}}");
    const char *text = mx_it_result_text(out);
    if (text == NULL || strcmp(text, "still here") != 0)
        fail_msg("good's echo answered \"%s\"", text ? text : "(nothing)");
    json_decref(out);

    free(hooked);
    free(url);
    free(gone);
    free(cfg_path);
    free(cfg);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dead_upstream, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
