/* SPDX-License-Identifier: MIT */
/*
 * Paths in a config are the config file's: mcplex started from another
 * directory, with a config named by a relative path whose file: secret,
 * trace and state_dir are relative, reads the secret next to the config and
 * writes the trace and the state (the local CA) there, not in its working
 * directory; SIGHUP resolves a new relative file: secret the same way. A
 * missing file: secret stops the start with the absolute path it tried and
 * no secret value.
 */
#include <limits.h>
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define RUN_TIMEOUT_MS    10000
#define RELOAD_TIMEOUT_MS 15000

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

/* A new directory of the test, as mcplex sees it (no symbolic links). */
static char *make_dir(const char *name)
{
    char real[PATH_MAX];
    char *p = mx_it_path(name);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_non_null(realpath(p, real));
    free(p);
    return mx_xstrdup(real);
}

static bool exists(const char *dir, const char *name)
{
    char *p = mx_xasprintf("%s/%s", dir, name);
    bool ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

/* tools/call whoami at |url| (an /mcp/<server> URL) in a new session; its text. */
static char *whoami(const char *url)
{
    char sid[160], sid_h[200];
    mx_it_open_session(url, "paths-test", sid, sizeof(sid));
    snprintf(sid_h, sizeof(sid_h), "Mcp-Session-Id: %s", sid);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", sid_h,
                          "MCP-Protocol-Version: 2025-11-25", NULL};
    struct mx_it_answer a = {0};
    assert_int_equal(mx_it_http_full("POST", url, hdrs,
                                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                                     "\"params\":{\"name\":\"whoami\",\"arguments\":{}}}",
                                     20000, &a.status, &a.headers, &a.body),
                     0);
    assert_int_equal(a.status, 200);
    mx_it_answer_parse(&a);
    const char *text = mx_it_first_text(mx_it_result(&a));
    char *out = mx_xstrdup(text ? text : "");
    mx_it_answer_clear(&a);
    return out;
}

static json_int_t reloads_ok(int port)
{
    char *url = mx_xasprintf("https://127.0.0.1:%d/health", port);
    long status = 0;
    char *body = NULL;
    json_int_t n = -1;
    if (mx_it_http("GET", url, NULL, NULL, &status, &body) == 0 && status == 200) {
        json_t *h = json_loads(body, 0, NULL);
        n = json_integer_value(json_object_get(json_object_get(h, "reload"), "ok"));
        json_decref(h);
    }
    free(body);
    free(url);
    return n;
}

static void test_it_paths_relative_to_config(void **state)
{
    (void)state;
    char tok[2][MX_IT_CANARY_SIZE];
    int sim_port[2];
    mx_it_canary(tok[0], sizeof(tok[0]));
    mx_it_canary(tok[1], sizeof(tok[1]));
    const char *args1[] = {"--name", "sim-one", NULL};
    const char *args2[] = {"--name", "sim-two", NULL};
    assert_true(mx_it_start_sim("sim-one", tok[0], args1, &sim_port[0]) > 0);
    assert_true(mx_it_start_sim("sim-two", tok[1], args2, &sim_port[1]) > 0);

    char *conf = make_dir("conf");
    char *other = make_dir("other");
    char *tok1 = mx_xasprintf("%s/one.tok", conf);
    char *tok2 = mx_xasprintf("%s/two.tok", conf);
    assert_int_equal(mx_it_write_file(tok1, tok[0], strlen(tok[0])), 0);
    assert_int_equal(mx_it_write_file(tok2, tok[1], strlen(tok[1])), 0);
    int port = mx_it_free_port();
    char *head = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\n"
                              "[proxy]\ntrace = \"trace.jsonl\"\nstate_dir = \"state\"\n"
                              "[servers.one]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                              "secret = \"file:one.tok\"\n",
                              port, sim_port[0]);
    char *cfg_path = mx_xasprintf("%s/mcplex.toml", conf);
    assert_int_equal(mx_it_write_file(cfg_path, head, strlen(head)), 0);

    /* from another directory, naming the config relatively; the CA that
     * serve makes on its first run lands in <conf>/state/certs */
    char *ca = mx_xasprintf("%s/state/certs/ca.pem", conf);
    mx_it_set_cwd(other);
    pid_t pid = mx_it_start_mcplex_tls("../conf/mcplex.toml", port, ca);
    assert_true(pid > 0);
    char *one_url = mx_xasprintf("https://127.0.0.1:%d/mcp/one", port);
    char *text = whoami(one_url);
    assert_contains(text, "sim-one");
    free(text);

    char *trace = mx_xasprintf("%s/trace.jsonl", conf);
    assert_true(mx_it_trace_wait(trace, "c2s", "one", "whoami", 1, 5000) >= 1);
    struct stat st;
    char *state_dir = mx_xasprintf("%s/state", conf);
    assert_int_equal(stat(state_dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    if (exists(other, "trace.jsonl") || exists(other, "state") || exists(other, "one.tok"))
        fail_msg("mcplex wrote into its working directory %s", other);

    /* SIGHUP: a server added with a relative file: secret resolves alike */
    char *both = mx_xasprintf("%s[servers.two]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                              "secret = \"file:./two.tok\"\n",
                              head, sim_port[1]);
    assert_int_equal(mx_it_write_file(cfg_path, both, strlen(both)), 0);
    json_int_t ok0 = reloads_ok(port);
    assert_true(ok0 >= 0);
    assert_int_equal(mx_it_signal(pid, SIGHUP), 0);
    int waited = 0;
    while (reloads_ok(port) == ok0) {
        if (waited > RELOAD_TIMEOUT_MS)
            fail_msg("no reload within %d ms", RELOAD_TIMEOUT_MS);
        sleep_ms(100);
        waited += 100;
    }
    char *two_url = mx_xasprintf("https://127.0.0.1:%d/mcp/two", port);
    text = whoami(two_url);
    assert_contains(text, "sim-two");
    free(text);

    /* no token in anything mcplex wrote */
    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, trace, state_dir, other, NULL};
    const char *canaries[] = {tok[0], tok[1]};
    assert_int_equal(mx_it_canary_hits(files, canaries, 2), 0);

    free(log);
    free(two_url);
    free(both);
    free(state_dir);
    free(trace);
    free(one_url);
    free(ca);
    free(cfg_path);
    free(head);
    free(tok2);
    free(tok1);
    free(other);
    free(conf);
    mx_it_pass();
}

static void test_it_paths_missing_secret(void **state)
{
    (void)state;
    char tok[MX_IT_CANARY_SIZE];
    mx_it_canary(tok, sizeof(tok));
    char *conf = make_dir("conf");
    char *other = make_dir("other");
    char *tok_path = mx_xasprintf("%s/ok.tok", conf);
    assert_int_equal(mx_it_write_file(tok_path, tok, strlen(tok)), 0);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"state\"\n"
                             "[servers.ok]\nurl = \"http://127.0.0.1:9/mcp\"\n"
                             "secret = \"file:ok.tok\"\n"
                             "[servers.gone]\nurl = \"http://127.0.0.1:9/mcp\"\n"
                             "secret = \"file:missing.tok\"\n",
                             port);
    char *cfg_path = mx_xasprintf("%s/mcplex.toml", conf);
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);

    mx_it_set_cwd(other);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "serve", "-c", "../conf/mcplex.toml", NULL};
    char *out = NULL;
    int rc = mx_it_run("serve-missing", argv, NULL, RUN_TIMEOUT_MS, &out);
    if (rc != 1)
        fail_msg("serve with a missing file: secret: exit %d, want 1:\n%s", rc, out);
    char *want = mx_xasprintf("server 'gone': file:missing.tok: cannot open secret file "
                              "%s/missing.tok: No such file or directory",
                              conf);
    assert_contains(out, want);
    if (strstr(out, tok))
        fail_msg("the output holds the secret value:\n%s", out);

    free(want);
    free(out);
    free(bin);
    free(cfg_path);
    free(cfg);
    free(tok_path);
    free(other);
    free(conf);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_it_paths_relative_to_config, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_paths_missing_secret, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
