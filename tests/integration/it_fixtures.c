/* SPDX-License-Identifier: MIT */
/*
 * The fixtures every other scenario relies on, checked without the gateway:
 * the harness itself (spawn, wait, kill, ports, canary scan), server-everything
 * behind the bind-localhost and require-auth preloads, and sandbox-sim, each
 * driven by the official SDK client with the right and a wrong bearer.
 */
#include <errno.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "err.h"
#include "num.h"
#include "harness.h"

/* Running and not a zombie: a killed grandchild is reparented and may stay a
 * zombie for a while, which kill(pid, 0) still reports as present. */
static bool is_alive(pid_t pid)
{
    char path[64];
    char *stat;
    const char *close_paren;
    bool alive;

    if (kill(pid, 0) != 0)
        return errno != ESRCH;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    stat = mx_it_read_file(path, NULL);
    if (stat == NULL)
        return false;
    close_paren = strrchr(stat, ')');
    alive = close_paren == NULL || (close_paren[1] == ' ' && close_paren[2] != 'Z');
    free(stat);
    return alive;
}

/* Every listening TCP socket on |port| must be bound to 127.0.0.1. Reads
 * /proc/net/tcp{,6}: "sl local_address rem_address st ...", hex, st 0A = LISTEN. */
static void assert_listens_on_loopback_only(int port)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    char want[16];
    int found = 0;

    snprintf(want, sizeof(want), ":%04X", port);
    for (size_t f = 0; f < 2; f++) {
        char *data = mx_it_read_file(files[f], NULL);
        char *save = NULL;
        if (data == NULL)
            continue;
        for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char local[64], remote[64], st[8];
            const char *colon;
            if (sscanf(line, " %*s %63s %63s %7s", local, remote, st) != 3)
                continue;
            colon = strrchr(local, ':');
            if (strcmp(st, "0A") != 0 || colon == NULL || strcmp(colon, want) != 0)
                continue;
            found++;
            if (f == 0)
                assert_true(strncmp(local, "0100007F:", 9) == 0);
            else
                fail_msg("port %d also listens on IPv6 (%s)", port, local);
        }
        free(data);
    }
    assert_true(found >= 1);
}

/* The pid a test shell wrote to |path|, waiting up to 5 s for it. */
static pid_t read_pid_file(const char *path)
{
    for (int i = 0; i < 250; i++) {
        size_t len = 0;
        char *data = mx_it_read_file(path, &len);
        int64_t v = 0;
        if (data && len > 1 && data[len - 1] == '\n' &&
            mx_num_parse(data, len - 1, 1, INT32_MAX, &v) == 0) {
            free(data);
            return (pid_t)v;
        }
        free(data);
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return -1;
}

/* No file under the test directory holds |needle|; names them if one does. */
static void assert_nowhere(const char *needle)
{
    const char *paths[] = {mx_it_dir(), NULL};
    char **hits = NULL;
    int n = mx_it_scan_for(paths, needle, &hits);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "secret found in %s\n", hits[i]);
    mx_it_strv_free(hits);
    assert_int_equal(n, 0);
}

static json_t *obj_path(json_t *root, const char *a, const char *b)
{
    json_t *v = json_object_get(root, a);
    return b ? json_object_get(v, b) : v;
}

/* result.content[0].text of a tools/call result. */
static const char *first_text(json_t *result)
{
    json_t *content = json_object_get(result, "content");
    return json_string_value(json_object_get(json_array_get(content, 0), "text"));
}

static void assert_json_has_no(json_t *j, const char *needle)
{
    char *dump = json_dumps(j, JSON_COMPACT);
    assert_non_null(dump);
    assert_null(strstr(dump, needle));
    free(dump);
}

/* ---- the harness ------------------------------------------------------ */

static void test_harness_canary_and_scan(void **state)
{
    char canary[MX_IT_CANARY_SIZE], other[MX_IT_CANARY_SIZE];
    char *sub = mx_it_path("sub");
    char *a = mx_it_path("a.log");
    char *b = mx_it_path("sub/b.jsonl");
    char *c = mx_it_path("c.txt");
    const char *paths[] = {mx_it_dir(), NULL};
    char **hits = NULL;
    char *big;
    size_t big_len = 3 * 1024 * 1024;

    (void)state;
    mx_it_canary(canary, sizeof(canary));
    mx_it_canary(other, sizeof(other));
    assert_int_equal(strlen(canary), MX_IT_CANARY_SIZE - 1);
    assert_memory_equal(canary, "canary-", 7);
    assert_int_equal(strspn(canary + 7, "0123456789abcdef"), 32);
    assert_string_not_equal(canary, other);

    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(mx_it_write_file(a, "nothing here\n", 13), 0);
    /* Straddles the scanner's 1 MiB chunk border. */
    big = mx_xmalloc(big_len);
    memset(big, 'x', big_len);
    memcpy(big + 1024 * 1024 - 10, canary, strlen(canary));
    assert_int_equal(mx_it_write_file(b, big, big_len), 0);
    free(big);
    assert_int_equal(mx_it_write_file(c, other, strlen(other)), 0);

    assert_int_equal(mx_it_scan_for(paths, canary, &hits), 1);
    assert_string_equal(hits[0], b);
    assert_null(hits[1]);
    mx_it_strv_free(hits);
    {
        const char *files[] = {a, c, NULL};
        assert_int_equal(mx_it_scan_for(files, canary, NULL), 0);
        assert_int_equal(mx_it_scan_for(files, other, NULL), 1);
    }
    {
        char *missing = mx_it_path("missing");
        const char *files[] = {missing, NULL};
        assert_int_equal(mx_it_scan_for(files, canary, NULL), MX_EIO);
        free(missing);
    }
    free(sub);
    free(a);
    free(b);
    free(c);
    mx_it_pass();
}

static void test_harness_processes(void **state)
{
    char *child_file = mx_it_path("grandchild.pid");
    char *script = mx_xasprintf("sleep 300 & echo $! > '%s'; exec sleep 300", child_file);
    const char *exit7[] = {
        "sh", "-c",
        "echo out; echo err >&2; echo \"probe=$MX_IT_PROBE home=${HOME-unset}\"; exit 7", NULL};
    const char *tree[] = {"sh", "-c", script, NULL};
    char *ready_file = mx_it_path("stubborn.pid");
    char *stubborn_script =
        mx_xasprintf("trap '' TERM; echo $$ > '%s'; while :; do sleep 1; done", ready_file);
    const char *stubborn[] = {"sh", "-c", stubborn_script, NULL};
    const char *env[] = {"MX_IT_PROBE=1", "HOME", NULL};
    pid_t p1, p2, p3, grandchild;
    int st;
    char *log;

    (void)state;
    p1 = mx_it_spawn("exit7", exit7, env, NULL);
    assert_true(p1 > 0);
    st = mx_it_wait_exit(p1, 5000);
    assert_true(st >= 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 7);
    assert_int_equal(mx_it_wait_exit(p1, 0), st);
    log = mx_it_path("exit7.log");
    {
        char *text = mx_it_read_file(log, NULL);
        assert_non_null(text);
        assert_non_null(strstr(text, "out\n"));
        assert_non_null(strstr(text, "err\n"));
        assert_non_null(strstr(text, "probe=1 home=unset\n"));
        free(text);
    }
    free(log);

    p2 = mx_it_spawn("tree", tree, NULL, NULL);
    assert_true(p2 > 0);
    grandchild = read_pid_file(child_file);
    assert_true(grandchild > 0);
    assert_int_equal(mx_it_wait_exit(p2, 100), MX_ETIMEDOUT);
    assert_true(is_alive(p2));
    assert_true(is_alive(grandchild));

    p3 = mx_it_spawn("stubborn", stubborn, NULL, NULL);
    assert_true(p3 > 0);
    assert_int_equal(read_pid_file(ready_file), p3); /* its trap is set */
    assert_int_equal(mx_it_signal(getpid(), SIGTERM), MX_ENOTFOUND);

    mx_it_kill_all();
    assert_false(is_alive(p2));
    assert_false(is_alive(grandchild));
    assert_false(is_alive(p3));
    st = mx_it_wait_exit(p3, 0);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    assert_int_equal(mx_it_signal(p3, SIGTERM), MX_ENOTFOUND);

    free(child_file);
    free(script);
    free(ready_file);
    free(stubborn_script);
    mx_it_pass();
}

static void test_harness_ports(void **state)
{
    int port = mx_it_free_port();
    char *pf = mx_it_path("x.port");
    const char *argv[] = {"sh", "-c", "sleep 0.2; printf 4242 > \"$PF\"; sleep 300", NULL};
    char *pf_env = mx_xasprintf("PF=%s", pf);
    const char *env[] = {pf_env, NULL};
    const char *quick[] = {"true", NULL};
    pid_t pid;

    (void)state;
    assert_true(port > 0 && port <= 65535);
    pid = mx_it_spawn("portwriter", argv, env, NULL);
    assert_true(pid > 0);
    assert_int_equal(mx_it_port_file(pid, pf, 5000), 4242);

    pid = mx_it_spawn("quick", quick, NULL, NULL);
    assert_true(pid > 0);
    free(pf);
    pf = mx_it_path("never.port");
    assert_int_equal(mx_it_port_file(pid, pf, 5000), MX_ECLOSED);
    assert_int_equal(mx_it_port_file(0, pf, 100), MX_ETIMEDOUT);

    /* Nothing listens there (a small race, as documented): no answer in time. */
    {
        char *url = mx_xasprintf("http://127.0.0.1:%d/", mx_it_free_port());
        assert_int_equal(mx_it_wait_http(url, 300), MX_ETIMEDOUT);
        free(url);
    }
    free(pf);
    free(pf_env);
    mx_it_pass();
}

/* ---- server-everything -------------------------------------------------- */

static void test_fixtures_everything(void **state)
{
    const char *json_ct[] = {"Content-Type: application/json", NULL};
    char canary[MX_IT_CANARY_SIZE], wrong[MX_IT_CANARY_SIZE];
    char *url, *stats_url, *body = NULL;
    json_t *out = NULL, *stats;
    long status = 0;
    int port = 0;
    pid_t pid;

    (void)state;
    mx_it_canary(canary, sizeof(canary));
    mx_it_canary(wrong, sizeof(wrong));
    pid = mx_it_start_everything(canary, &port);
    assert_true(pid > 0);
    assert_listens_on_loopback_only(port);
    url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    stats_url = mx_xasprintf("http://127.0.0.1:%d/__auth_stats", port);

    /* Right bearer: initialize, tools/list, echo. */
    assert_int_equal(mx_it_client(url, "smoke", "{\"message\":\"fixture-hello\"}", canary, &out),
                     0);
    assert_non_null(out);
    assert_true(json_is_true(json_object_get(out, "ok")));
    assert_string_equal(json_string_value(obj_path(out, "initialize", "protocol_version")),
                        "2025-11-25");
    assert_string_equal(first_text(json_object_get(out, "echo")), "Echo: fixture-hello");
    assert_true(json_array_size(json_object_get(out, "tools")) >= 10);
    assert_json_has_no(out, canary);
    json_decref(out);

    /* The upstream cannot hand its credential out: require-auth took it out of
     * the environment that get-env prints. */
    assert_int_equal(mx_it_client(url, "call", "{\"name\":\"get-env\"}", canary, &out), 0);
    assert_non_null(first_text(json_object_get(out, "result")));
    assert_non_null(strstr(first_text(json_object_get(out, "result")), "PORT"));
    assert_json_has_no(out, canary);
    json_decref(out);

    /* Progress notifications arrive before the result, in order. */
    assert_int_equal(mx_it_client(url, "progress",
                                  "{\"name\":\"trigger-long-running-operation\","
                                  "\"arguments\":{\"duration\":0.6,\"steps\":3}}",
                                  canary, &out),
                     0);
    {
        json_t *prog = json_object_get(out, "progress");
        double last_t = 0;
        assert_int_equal(json_array_size(prog), 3);
        for (size_t i = 0; i < 3; i++) {
            json_t *n = json_array_get(prog, i);
            double t = json_number_value(json_object_get(n, "t_ms"));
            assert_int_equal(json_integer_value(json_object_get(n, "progress")), (json_int_t)i + 1);
            assert_true(t >= last_t);
            last_t = t;
        }
        assert_true(json_number_value(json_object_get(out, "result_t_ms")) >= last_t);
        assert_non_null(strstr(first_text(json_object_get(out, "result")), "completed"));
    }
    json_decref(out);

    /* Wrong bearer and no bearer, both at once: each scenario runs and its
     * initialize gets 401. */
    {
        pid_t with_wrong = mx_it_client_start(url, "smoke", NULL, wrong);
        pid_t with_none = mx_it_client_start(url, "smoke", NULL, NULL);
        assert_true(with_wrong > 0 && with_none > 0);
        assert_int_equal(mx_it_node_finish(with_wrong, MX_IT_NODE_TIMEOUT_MS, &out), 0);
        assert_false(json_is_true(json_object_get(out, "ok")));
        assert_int_equal(json_integer_value(obj_path(out, "error", "code")), 401);
        assert_json_has_no(out, wrong);
        json_decref(out);
        assert_int_equal(mx_it_node_finish(with_none, MX_IT_NODE_TIMEOUT_MS, &out), 0);
        assert_int_equal(json_integer_value(obj_path(out, "error", "code")), 401);
        json_decref(out);
    }

    /* Raw HTTP through the harness: 401 JSON without the credential. */
    assert_int_equal(mx_it_http("POST", url, json_ct, "{}", &status, &body), 0);
    assert_int_equal(status, 401);
    assert_non_null(strstr(body, "unauthorized"));
    free(body);
    assert_int_equal(mx_it_http("GET", stats_url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    stats = json_loads(body, 0, NULL);
    assert_non_null(stats);
    assert_int_equal(json_integer_value(json_object_get(stats, "rejected")), 3);
    assert_true(json_integer_value(json_object_get(stats, "accepted")) >= 6);
    json_decref(stats);
    free(body);

    /* The canary is nowhere: logs, client output, port files. */
    mx_it_kill_all();
    assert_false(is_alive(pid));
    assert_nowhere(canary);

    free(url);
    free(stats_url);
    mx_it_pass();
}

/* ---- sandbox-sim ------------------------------------------------------ */

static void test_fixtures_sim(void **state)
{
    char canary[MX_IT_CANARY_SIZE], wrong[MX_IT_CANARY_SIZE];
    char *url, *stats_url, *auth, *body = NULL;
    json_t *out = NULL, *stats;
    long status = 0;
    int port = 0;
    pid_t pid;

    (void)state;
    mx_it_canary(canary, sizeof(canary));
    mx_it_canary(wrong, sizeof(wrong));
    pid = mx_it_start_sim("sim", canary, NULL, &port);
    assert_true(pid > 0);
    assert_listens_on_loopback_only(port);
    url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    stats_url = mx_xasprintf("http://127.0.0.1:%d/__stats", port);
    auth = mx_xasprintf("Authorization: Bearer %s", canary);

    assert_int_equal(mx_it_client(url, "smoke", "{\"message\":\"sim-hello\"}", canary, &out), 0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    assert_non_null(first_text(json_object_get(out, "echo")));
    assert_non_null(strstr(first_text(json_object_get(out, "echo")), "sim-hello"));
    assert_json_has_no(out, canary);
    json_decref(out);

    assert_int_equal(mx_it_client(url, "smoke", NULL, wrong, &out), 0);
    assert_false(json_is_true(json_object_get(out, "ok")));
    assert_int_equal(json_integer_value(obj_path(out, "error", "code")), 401);
    assert_json_has_no(out, wrong);
    json_decref(out);

    assert_int_equal(mx_it_http("GET", stats_url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 401);
    free(body);
    assert_int_equal(
        mx_it_http("GET", stats_url, (const char *const[]){auth, NULL}, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    stats = json_loads(body, 0, NULL);
    assert_true(json_is_object(stats));
    json_decref(stats);
    free(body);

    mx_it_kill_all();
    assert_false(is_alive(pid));
    assert_nowhere(canary);

    free(url);
    free(stats_url);
    free(auth);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_harness_canary_and_scan, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_harness_processes, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_harness_ports, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_fixtures_everything, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_fixtures_sim, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests_name("it_fixtures", tests, NULL, NULL);
}
