/* SPDX-License-Identifier: MIT */
/*
 * What mcplex shows of a secret it cannot use, or of a secret reference.
 *
 * A config with a literal value where a secret belongs (client_token or
 * secret = "<literal>", a url or wake url with user:password@, an env entry
 * "K=<literal>") is refused by `mcplex check`, by `mcplex serve`, by
 * `mcplex reload` and by SIGHUP with file:line:col and the key's name,
 * never with the value; /health (unauthenticated) says where a reload
 * failed, not what the file held.
 *
 * A "cmd:" reference shows its program, never its arguments (which may hold
 * a key): in `mcplex check` (resolved or not), in the -32011 error an
 * upstream's 401 becomes, in /health and in the log.
 *
 * Every literal and argument is a random canary, searched for afterwards in
 * everything mcplex printed or answered.
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

/* One secret-bearing place holding a literal. */
struct bad {
    const char *key;  /* the key the message must name */
    const char *pre;  /* the lines to add, up to the canary */
    const char *post; /* and after it */
    const char *want; /* a word of the reason the message must give */
};

static const struct bad bads[] = {
    {"client_token", "[listen]\nclient_token = \"", "\"\n", "reference"},
    {"secret", "[servers.lit]\nurl = \"http://127.0.0.1:9/mcp\"\nsecret = \"", "\"\n", "reference"},
    {"url", "[servers.lit]\nurl = \"https://user:", "@127.0.0.1:9/mcp\"\n", "password"},
    {"env", "[servers.lit]\ncommand = [\"/bin/true\"]\nenv = [\"API_KEY=", "\"]\n", "reference"},
    {"wake", "[servers.lit]\nurl = \"http://127.0.0.1:9/mcp\"\nwake = \"url:http://u:",
     "@127.0.0.1:9/\"\n", "password"},
};
#define BAD_CNT (sizeof(bads) / sizeof(bads[0]))

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The config |head| + bad entry |b| with |canary|; *|line| is the line of
 * the entry's value (its last line). */
static char *bad_config(const char *head, const struct bad *b, const char *canary, int *line)
{
    char *all = mx_xasprintf("%s%s%s%s", head, b->pre, canary, b->post);
    *line = count_lines(all);
    return all;
}

/* Fail unless |text| says "<cfg>:<line>:" and names |b|'s key and reason. */
static void assert_names_place(const char *what, const char *text, const char *cfg_path, int line,
                               const struct bad *b)
{
    char *where = mx_xasprintf("%s:%d:", cfg_path, line);
    char *key = mx_xasprintf("'%s'", b->key);
    if (text == NULL || strstr(text, where) == NULL || strstr(text, key) == NULL ||
        strstr(text, b->want) == NULL)
        fail_msg("%s for %s: expected %s, %s and '%s' in: %s", what, b->key, where, key, b->want,
                 text ? text : "(nothing)");
    free(where);
    free(key);
}

static char *mcplex_bin(void)
{
    return mx_xasprintf("%s/mcplex", mx_it_build_dir());
}

/* `mcplex |cmd| -c |cfg_path|` must fail (exit 1) naming the place of |b|. */
static void assert_refused(const char *cmd, const char *cfg_path, int line, const struct bad *b)
{
    char *bin = mcplex_bin();
    const char *argv[] = {bin, cmd, "-c", cfg_path, NULL};
    char *name = mx_xasprintf("%s-%s", cmd, b->key);
    char *what = mx_xasprintf("mcplex %s", cmd);
    char *out = NULL;
    assert_int_equal(mx_it_run(name, argv, NULL, 40000, &out), 1);
    assert_names_place(what, out, cfg_path, line, b);
    free(out);
    free(what);
    free(name);
    free(bin);
}

/* Append |text| to the file of everything mcplex answered. */
static void keep(const char *path, const char *text)
{
    char *old = mx_it_read_file(path, NULL);
    char *all = mx_xasprintf("%s%s\n", old ? old : "", text ? text : "");
    assert_int_equal(mx_it_write_file(path, all, strlen(all)), 0);
    free(old);
    free(all);
}

/* No canary of |cans| in the test directory (logs, outputs, kept answers);
 * the config files, which hold them on purpose, are left out of the
 * search by living elsewhere. */
static void assert_no_canary(const char *const *cans, size_t cnt)
{
    const char *paths[] = {mx_it_dir(), NULL};
    assert_int_equal(mx_it_canary_hits(paths, cans, cnt), 0);
}

/* A directory outside the test directory for configs that hold canaries. */
static char *config_dir(void)
{
    char *dir = mx_xasprintf("%s.cfg", mx_it_dir());
    char *cmd = mx_xasprintf("mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return dir;
}

static void remove_config_dir(const char *dir)
{
    char *cmd = mx_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

/* check and serve refuse each literal at its place, quoting nothing. */
static void test_literal_refused_at_load(void **state)
{
    (void)state;
    char cans[BAD_CNT][MX_IT_CANARY_SIZE];
    const char *canp[BAD_CNT];
    char *dir = config_dir();
    char *cfg_path = mx_xasprintf("%s/mcplex.toml", dir);
    char *head = mx_xasprintf("[proxy]\nstate_dir = \"%s\"\n", mx_it_dir());
    for (size_t i = 0; i < BAD_CNT; i++) {
        mx_it_canary(cans[i], sizeof(cans[i]));
        canp[i] = cans[i];
        int line = 0;
        char *cfg = bad_config(head, &bads[i], cans[i], &line);
        assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);

        assert_refused("check", cfg_path, line, &bads[i]);
        assert_refused("serve", cfg_path, line, &bads[i]);
        free(cfg);
    }
    assert_no_canary(canp, BAD_CNT);
    remove_config_dir(dir);
    free(head);
    free(cfg_path);
    free(dir);
    mx_it_pass();
}

/* A running mcplex refuses each literal on reload (`mcplex reload` and
 * SIGHUP); /health says where, and holds none of them. */
static void test_literal_refused_at_reload(void **state)
{
    (void)state;
    char cans[BAD_CNT][MX_IT_CANARY_SIZE];
    const char *canp[BAD_CNT];
    char *dir = config_dir();
    char *cfg_path = mx_xasprintf("%s/mcplex.toml", dir);
    char *seen = mx_it_path("seen.txt");
    int port = mx_it_free_port();
    char *head = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                              "[proxy]\nstate_dir = \"%s\"\n",
                              port, mx_it_dir());
    assert_int_equal(mx_it_write_file(cfg_path, head, strlen(head)), 0);
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    /* the [listen] table of a bad client_token config is its own */
    char *head_srv = mx_xasprintf("[proxy]\nstate_dir = \"%s\"\n[listen]\naddress = "
                                  "\"127.0.0.1:%d\"\ntls = false\n",
                                  mx_it_dir(), port);

    for (size_t i = 0; i < BAD_CNT; i++) {
        mx_it_canary(cans[i], sizeof(cans[i]));
        canp[i] = cans[i];
        int line = 0;
        char *cfg;
        if (strcmp(bads[i].key, "client_token") == 0) {
            char *tail = mx_xasprintf("client_token = \"%s\"\n", cans[i]);
            cfg = mx_xasprintf("%s%s", head_srv, tail);
            line = count_lines(cfg);
            free(tail);
        } else {
            cfg = bad_config(head, &bads[i], cans[i], &line);
        }
        assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);

        assert_refused("reload", cfg_path, line, &bads[i]);

        assert_int_equal(mx_it_signal(mcplex, SIGHUP), 0);
        json_t *h = NULL;
        char *body = NULL;
        for (int waited = 0;; waited += 50) {
            h = mx_it_health(port, &body);
            json_int_t failed =
                json_integer_value(json_object_get(json_object_get(h, "reload"), "failed"));
            if (failed == (json_int_t)i + 1)
                break;
            if (waited > 10000)
                fail_msg("SIGHUP with a literal %s was not refused: %s", bads[i].key, body);
            json_decref(h);
            free(body);
            sleep_ms(50);
        }
        keep(seen, body);
        const char *err = json_string_value(json_object_get(json_object_get(h, "reload"), "error"));
        assert_names_place("/health reload.error", err, cfg_path, line, &bads[i]);
        json_decref(h);
        free(body);
        free(cfg);
    }
    /* still serving the first config */
    json_t *h = mx_it_health(port, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "reload"), "ok")), 0);
    json_decref(h);
    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(mcplex, 10000) >= 0);
    assert_no_canary(canp, BAD_CNT);
    remove_config_dir(dir);
    free(head_srv);
    free(head);
    free(seen);
    free(cfg_path);
    free(dir);
    mx_it_pass();
}

/* A cmd: reference with a key among its arguments: named by its program
 * only, in check (resolved and not), in the 401 error, /health and the log. */
static void test_cmd_reference_arguments_hidden(void **state)
{
    (void)state;
    char sim_token[MX_IT_CANARY_SIZE], arg[MX_IT_CANARY_SIZE], arg_bad[MX_IT_CANARY_SIZE];
    mx_it_canary(sim_token, sizeof(sim_token));
    mx_it_canary(arg, sizeof(arg));
    mx_it_canary(arg_bad, sizeof(arg_bad));
    char *dir = config_dir();
    char *cfg_path = mx_xasprintf("%s/mcplex.toml", dir);
    char *seen = mx_it_path("seen.txt");
    char *bin = mcplex_bin();
    int sim_port = 0;
    /* the sim wants another token than the command prints: it answers 401 */
    assert_true(mx_it_start_sim("sim", sim_token, NULL, &sim_port) > 0);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.keyed]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"cmd:/bin/echo %s\"\n",
                             port, mx_it_dir(), sim_port, arg);
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);

    /* check, resolved */
    const char *check[] = {bin, "check", "-c", cfg_path, NULL};
    char *out = NULL;
    assert_int_equal(mx_it_run("check-resolved", check, NULL, 20000, &out), 0);
    if (strstr(out, "cmd:/bin/echo") == NULL)
        fail_msg("check does not name the program: %s", out);
    free(out);

    /* check, not resolved: the command fails */
    char *cfg_bad = mx_xasprintf("%s[servers.broken]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                 "secret = \"cmd:/bin/false %s\"\n",
                                 cfg, sim_port, arg_bad);
    assert_int_equal(mx_it_write_file(cfg_path, cfg_bad, strlen(cfg_bad)), 0);
    out = NULL;
    assert_int_equal(mx_it_run("check-failed", check, NULL, 20000, &out), 1);
    if (strstr(out, "cmd:/bin/false") == NULL || strstr(out, "status 1") == NULL)
        fail_msg("check of a failing command said: %s", out);
    free(out);
    const char *serve_bad[] = {bin, "serve", "-c", cfg_path, NULL};
    out = NULL;
    assert_true(mx_it_run("serve-failed", serve_bad, NULL, 20000, &out) > 0);
    if (strstr(out, "cmd:/bin/false") == NULL)
        fail_msg("serve with a failing command said: %s", out);
    free(out);

    /* serve; the upstream refuses the credential */
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                       "\"name\":\"t\",\"version\":\"1\"}}}";
    const char *paths[] = {"/mcp/keyed", "/mcp"};
    bool saw_auth_error = false;
    for (size_t i = 0; i < 2; i++) {
        char *url = mx_xasprintf("http://127.0.0.1:%d%s", port, paths[i]);
        struct mx_it_answer a = {0};
        assert_int_equal(
            mx_it_http_full("POST", url, hdrs, init, 20000, &a.status, &a.headers, &a.body), 0);
        keep(seen, a.headers);
        keep(seen, a.body);
        mx_it_answer_parse(&a);
        if (mx_it_error_code(&a) == -32011) {
            const char *msg =
                json_string_value(json_object_get(json_object_get(a.msg, "error"), "message"));
            if (msg == NULL || strstr(msg, "cmd:/bin/echo") == NULL)
                fail_msg("the auth error does not name the reference: %s", a.body);
            saw_auth_error = true;
        }
        mx_it_answer_clear(&a);
        free(url);
    }
    assert_true(saw_auth_error);
    char *body = NULL;
    json_t *h = mx_it_health(port, &body);
    keep(seen, body);
    json_decref(h);
    free(body);
    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(mcplex, 10000) >= 0);

    const char *cans[] = {arg, arg_bad};
    assert_no_canary(cans, 2);
    remove_config_dir(dir);
    free(cfg_bad);
    free(cfg);
    free(bin);
    free(seen);
    free(cfg_path);
    free(dir);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_literal_refused_at_load, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_literal_refused_at_reload, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_cmd_reference_arguments_hidden, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
