/* SPDX-License-Identifier: MIT */
/*
 * Names never move (with the config unchanged): two sandbox-sims that offer
 * the same tool names behind /mcp, seen by the official SDK client. On a
 * fresh start with one upstream's token wrong, the other's names are shown
 * plain; when the first comes back (its secret fixed, `mcplex reload`), the
 * names the client saw keep their meaning and only the newcomer's colliding
 * names are prefixed. The same names after a restart of mcplex (both
 * upstreams up from the start), and after a restart with the token wrong
 * again and the catalogue on disk: the refused upstream's tools stay
 * listed, and a call to one gets -32011 naming the server and its secret
 * reference.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

/* The tool names the client sees, sorted, as one JSON array. */
static json_t *tool_names(const char *url)
{
    json_t *out = mx_it_client_ok(url, "list-all", NULL);
    json_t *names = json_object_get(json_object_get(out, "tools"), "names");
    assert_true(json_is_array(names));
    json_t *copy = json_deep_copy(names);
    json_decref(out);
    mx_it_assert_sorted_unique(copy);
    return copy;
}

static bool all_in(const json_t *sub, const json_t *set)
{
    size_t i;
    json_t *v;
    json_array_foreach(sub, i, v)
    {
        if (!mx_it_json_has(set, json_string_value(v)))
            return false;
    }
    return true;
}

/* Who answers a call of |tool| (sandbox-sim's whoami says its --name). */
static char *who(const char *url, const char *tool)
{
    char *args = mx_xasprintf("{\"name\":\"%s\"}", tool);
    json_t *out = mx_it_client_ok(url, "call", args);
    char *name = mx_xstrdup(mx_it_result_text(out));
    json_decref(out);
    free(args);
    return name;
}

static pid_t stop(pid_t pid)
{
    assert_int_equal(mx_it_signal(pid, SIGTERM), 0);
    int st = mx_it_wait_exit(pid, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}

static void test_names_never_move(void **state)
{
    char ta[MX_IT_CANARY_SIZE], tb[MX_IT_CANARY_SIZE], wrong[MX_IT_CANARY_SIZE];
    int pa, pb, port;
    (void)state;
    mx_it_canary(ta, sizeof(ta));
    mx_it_canary(tb, sizeof(tb));
    mx_it_canary(wrong, sizeof(wrong));
    const char *a_args[] = {"--name", "sim-a", NULL};
    const char *b_args[] = {"--name", "sim-b", NULL};
    assert_true(mx_it_start_sim("sim-a", ta, a_args, &pa) > 0);
    assert_true(mx_it_start_sim("sim-b", tb, b_args, &pb) > 0);
    port = mx_it_free_port();
    assert_true(port > 0);

    char *sa = mx_it_secret_file("a.secret", ta);
    char *sb = mx_it_secret_file("b.secret", wrong); /* b refuses it */
    char *state_dir = mx_it_path("state");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\nfanout_timeout = \"2s\"\n"
                             "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.b]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, state_dir, pa, sa, pb, sb);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    /* 1. fresh state, b's token wrong: a's names come plain */
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    json_t *first = tool_names(url);
    assert_true(mx_it_json_has(first, "whoami"));
    assert_false(mx_it_json_has(first, "b_whoami"));
    char *w = who(url, "whoami");
    assert_string_equal(w, "sim-a");
    free(w);

    /* 2. b's secret fixed and reloaded: b comes back; what the client saw
     * keeps its name and meaning, b's colliding names are prefixed */
    assert_int_equal(mx_it_write_file(sb, tb, strlen(tb)), 0);
    assert_int_equal(mx_it_signal(mcplex, SIGHUP), 0);
    json_t *second = NULL;
    for (int i = 0; i < 50; i++) {
        json_decref(second);
        second = tool_names(url);
        if (mx_it_json_has(second, "b_whoami"))
            break;
        usleep(200 * 1000);
    }
    assert_true(mx_it_json_has(second, "b_whoami"));
    assert_true(all_in(first, second));
    assert_false(mx_it_json_has(second, "a_whoami"));
    w = who(url, "whoami");
    assert_string_equal(w, "sim-a");
    free(w);
    w = who(url, "b_whoami");
    assert_string_equal(w, "sim-b");
    free(w);
    mcplex = stop(mcplex);

    /* 3. restarted with both up from the start: the same names */
    mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    json_t *third = tool_names(url);
    assert_true(json_equal(second, third));
    w = who(url, "whoami");
    assert_string_equal(w, "sim-a");
    free(w);
    mcplex = stop(mcplex);

    /* 4. restarted with b's token wrong again, its catalogue on disk: b's
     * tools stay listed under the same names, and a call to one says why */
    assert_int_equal(mx_it_write_file(sb, wrong, strlen(wrong)), 0);
    mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    json_t *fourth = tool_names(url);
    assert_true(json_equal(second, fourth));
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url, "call", "{\"name\":\"b_whoami\"}", NULL, &out), 0);
    json_t *err = json_object_get(json_object_get(out, "result"), "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32011);
    const char *msg = json_string_value(json_object_get(err, "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "'b'"));
    assert_non_null(strstr(msg, "file:"));
    json_decref(out);
    json_t *fifth = tool_names(url);
    assert_true(json_equal(second, fifth));
    mcplex = stop(mcplex);

    /* no token in the logs, the names kept or the catalogue */
    char *l1 = mx_it_path("mcplex.log"), *l2 = mx_it_path("mcplex-2.log");
    char *l3 = mx_it_path("mcplex-3.log"), *names = mx_xasprintf("%s/names.json", state_dir);
    assert_int_equal(access(names, F_OK), 0);
    const char *files[] = {l1, l2, l3, state_dir, cfg_path, NULL};
    const char *canaries[] = {ta, tb, wrong};
    assert_int_equal(mx_it_canary_hits(files, canaries, 3), 0);
    free(names);
    free(l1);
    free(l2);
    free(l3);
    json_decref(first);
    json_decref(second);
    json_decref(third);
    json_decref(fourth);
    json_decref(fifth);
    free(url);
    free(cfg_path);
    free(cfg);
    free(state_dir);
    free(sa);
    free(sb);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_names_never_move, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
