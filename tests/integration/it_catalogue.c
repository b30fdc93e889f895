/* SPDX-License-Identifier: MIT */
/*
 * The catalogue: after one run has seen two upstreams' lists, a new mcplex
 * process answers a client's initialize and lists while both sandboxes are
 * paused, without a single request to either; the first call wakes only the
 * sandbox it needs.
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
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct sim {
    char token[MX_IT_CANARY_SIZE];
    int port;
};

static json_t *sim_call(const struct sim *s, const char *method, const char *path, const char *body)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d%s", s->port, path);
    char *auth = mx_xasprintf("Authorization: Bearer %s", s->token);
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

static json_int_t stat_of(const struct sim *s, const char *key)
{
    json_t *j = sim_call(s, "GET", "/__stats", NULL);
    json_int_t v = json_integer_value(json_object_get(j, key));
    json_decref(j);
    return v;
}

static char *write_config(const struct sim *a, const struct sim *b, int port, const char *name)
{
    char *state = mx_it_path("state");
    char *sa = mx_it_path("a.secret"), *sb = mx_it_path("b.secret");
    assert_int_equal(mx_it_write_file(sa, a->token, strlen(a->token)), 0);
    assert_int_equal(mx_it_write_file(sb, b->token, strlen(b->token)), 0);
    assert_int_equal(chmod(sa, 0600), 0);
    assert_int_equal(chmod(sb, 0600), 0);
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                     "[proxy]\nstate_dir = \"%s\"\nwake_timeout = \"20s\"\n"
                     "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
                     "wake = \"url:http://127.0.0.1:%d/__wake\"\n"
                     "[servers.b]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
                     "wake = \"url:http://127.0.0.1:%d/__wake\"\n",
                     port, state, a->port, sa, a->port, b->port, sb, b->port);
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    free(cfg);
    free(sa);
    free(sb);
    free(state);
    return path;
}

static json_t *tool_names(const char *url)
{
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url, "list-all", NULL, NULL, &out), 0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    json_t *names = json_incref(json_object_get(json_object_get(out, "tools"), "names"));
    json_decref(out);
    assert_true(json_array_size(names) > 0);
    return names;
}

static void test_catalogue_answers_while_paused(void **state)
{
    struct sim a = {0}, b = {0};
    (void)state;
    const char *args[] = {"--pause-after-ms",
                          "600000",
                          "--pause-mode",
                          "refuse",
                          "--refuse-status",
                          "503",
                          "--wake-ms",
                          "300",
                          NULL};
    mx_it_canary(a.token, sizeof(a.token));
    mx_it_canary(b.token, sizeof(b.token));
    assert_true(mx_it_start_sim("a", a.token, args, &a.port) > 0);
    assert_true(mx_it_start_sim("b", b.token, args, &b.port) > 0);

    /* first run: both awake, their lists are seen and saved */
    int port1 = mx_it_free_port();
    char *cfg1 = write_config(&a, &b, port1, "run1.toml");
    pid_t gw1 = mx_it_start_mcplex(cfg1, port1);
    assert_true(gw1 > 0);
    char *url1 = mx_xasprintf("http://127.0.0.1:%d/mcp", port1);
    json_t *before = tool_names(url1);
    assert_int_equal(mx_it_signal(gw1, SIGTERM), 0);
    int st = mx_it_wait_exit(gw1, 10000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* both sandboxes pause */
    json_decref(sim_call(&a, "POST", "/__control", "{\"action\":[\"pause\",\"reset_stats\"]}"));
    json_decref(sim_call(&b, "POST", "/__control", "{\"action\":[\"pause\",\"reset_stats\"]}"));

    /* a new mcplex: a client initializes and lists everything */
    int port2 = mx_it_free_port();
    char *cfg2 = write_config(&a, &b, port2, "run2.toml");
    assert_true(mx_it_start_mcplex(cfg2, port2) > 0);
    char *url2 = mx_xasprintf("http://127.0.0.1:%d/mcp", port2);
    json_t *after = tool_names(url2);
    assert_true(json_equal(before, after));
    /* ... and neither sandbox heard a thing */
    assert_int_equal(stat_of(&a, "requests"), 0);
    assert_int_equal(stat_of(&b, "requests"), 0);
    assert_int_equal(stat_of(&a, "wakes"), 0);
    assert_int_equal(stat_of(&b, "wakes"), 0);

    /* the first call wakes the one sandbox it needs, and only that one */
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url2, "call",
                                  "{\"name\":\"a_echo\",\"arguments\":{\"message\":\"woken\"}}",
                                  NULL, &out),
                     0);
    json_t *content = json_object_get(json_object_get(out, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "woken");
    json_decref(out);
    assert_int_equal(stat_of(&a, "wakes"), 1);
    assert_int_equal(stat_of(&b, "wakes"), 0);
    assert_int_equal(stat_of(&b, "requests"), 0);

    json_decref(before);
    json_decref(after);
    free(url1);
    free(url2);
    free(cfg1);
    free(cfg2);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_catalogue_answers_while_paused, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
