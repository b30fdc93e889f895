/* SPDX-License-Identifier: MIT */
/*
 * Servers added and removed without editing TOML, against the real binary:
 * `mcplex init` writes a commented starter config (0600) that `check`
 * accepts and will not overwrite without --force; `mcplex add` appends a
 * [servers.NAME] table to a hand-written, commented config, the token read
 * from stdin into the vault, and a running mcplex (a sandbox-sim behind
 * it) serves the new server's tools at /mcp at once; `mcplex rm` takes the
 * table out again and the gateway drops the server. Every byte of the file
 * that the edit does not own stays as it was (add then rm gives back the
 * original file), every result passes `mcplex check`, names that exist (add)
 * or do not (rm) and configs that would not load are refused and leave the
 * file alone, and with no gateway running the edit succeeds and says so.
 * The canary token is in no file, log or output but the vault.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define RUN_MS 30000

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static char *bin(void)
{
    return mx_xasprintf("%s/mcplex", mx_it_build_dir());
}

/*
 * `mcplex <args>` with |stdin_text| (NULL: /dev/null) on its stdin through
 * a shell builtin, so the text is in no argv; |env| more environment. The
 * exit status; stdout and stderr in *|out|.
 */
static int mcplex(const char *name, const char *const *args, const char *stdin_text,
                  const char *const *env, char **out)
{
    char *exe = bin();
    const char *argv[24];
    size_t n = 0;
    char *input = stdin_text ? mx_xasprintf("MX_IT_STDIN=%s", stdin_text) : NULL;
    const char *full_env[8];
    size_t e = 0;
    if (stdin_text) {
        argv[n++] = "/bin/sh";
        argv[n++] = "-c";
        argv[n++] = "printf '%s' \"$MX_IT_STDIN\" | \"$0\" \"$@\"";
        full_env[e++] = input;
    }
    for (; env && *env && e < 7; env++)
        full_env[e++] = *env;
    full_env[e] = NULL;
    argv[n++] = exe;
    for (; *args && n < 23; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    int rc = mx_it_run(name, argv, full_env, RUN_MS, out);
    fprintf(stderr, "it_config_edit: %s: exit %d\n%s\n", name, rc, *out);
    free(exe);
    free(input);
    return rc;
}

static char *read_text(const char *path)
{
    char *t = mx_it_read_file(path, NULL);
    assert_non_null(t);
    return t;
}

/* Fail unless the file |path| holds exactly |want|. */
static void assert_file_is(const char *path, const char *want)
{
    char *text = read_text(path);
    assert_string_equal(text, want);
    free(text);
}

static void assert_mode(const char *path, mode_t want)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    if ((st.st_mode & 07777) != want)
        fail_msg("%s has mode %04o, not %04o", path, (unsigned)(st.st_mode & 07777),
                 (unsigned)want);
}

static void check_ok(const char *cfg)
{
    const char *args[] = {"check", "-c", cfg, NULL};
    char *out = NULL;
    if (mcplex("check", args, NULL, NULL, &out) != 0)
        fail_msg("mcplex check refused the edited config:\n%s", out);
    free(out);
}

/* `mcplex init` at the XDG path and at -c, 0600, commented, never over a file. */
static void test_init(void **state)
{
    (void)state;
    char *xdg = mx_it_path("xdg");
    char *xdg_env = mx_xasprintf("XDG_CONFIG_HOME=%s", xdg);
    const char *env[] = {xdg_env, "MCPLEX_CONFIG", NULL};
    const char *init[] = {"init", NULL};
    char *out = NULL;
    assert_int_equal(mcplex("init-xdg", init, NULL, env, &out), 0);
    char *path = mx_xasprintf("%s/mcplex/mcplex.toml", xdg);
    assert_contains(out, path);
    free(out);
    assert_mode(path, 0600);
    char *dir = mx_xasprintf("%s/mcplex", xdg);
    assert_mode(dir, 0700);
    char *text = read_text(path);
    assert_contains(text, "# ");
    assert_contains(text, "[listen]");
    assert_contains(text, "# [servers.");
    check_ok(path);

    /* a second init refuses, and leaves the file alone */
    assert_int_equal(mx_it_write_file(path, "# mine\n", 7), 0);
    assert_int_equal(mcplex("init-again", init, NULL, env, &out), 1);
    assert_contains(out, "already exists");
    assert_contains(out, "--force");
    free(out);
    assert_file_is(path, "# mine\n");
    const char *force[] = {"init", "--force", NULL};
    assert_int_equal(mcplex("init-force", force, NULL, env, &out), 0);
    free(out);
    assert_file_is(path, text);

    /* -c FILE */
    char *other = mx_it_path("other.toml");
    const char *init_c[] = {"init", "-c", other, NULL};
    assert_int_equal(mcplex("init-c", init_c, NULL, NULL, &out), 0);
    free(out);
    assert_mode(other, 0600);
    check_ok(other);

    free(other);
    free(text);
    free(dir);
    free(path);
    free(xdg_env);
    free(xdg);
    mx_it_pass();
}

struct world {
    char token_a[MX_IT_CANARY_SIZE];
    char token_b[MX_IT_CANARY_SIZE];
    int port_a, port_b, port;
    char *cfg;
    char *vault;
    char *original;
    pid_t mcplex;
};

/* A config as a person writes one: comments above, beside and below. */
static void world_start(struct world *w)
{
    mx_it_canary(w->token_a, sizeof(w->token_a));
    mx_it_canary(w->token_b, sizeof(w->token_b));
    const char *args_a[] = {"--name", "sim-a", NULL};
    const char *args_b[] = {"--name", "sim-b", NULL};
    assert_true(mx_it_start_sim("sim-a", w->token_a, args_a, &w->port_a) > 0);
    assert_true(mx_it_start_sim("sim-b", w->token_b, args_b, &w->port_b) > 0);
    char *secret_a = mx_it_secret_file("a.secret", w->token_a);
    char *state = mx_it_path("state");
    w->vault = mx_it_path("vault");
    w->cfg = mx_it_path("mcplex.toml");
    w->port = mx_it_free_port();
    w->original = mx_xasprintf("# my gateway: two sandboxes\n"
                               "\n"
                               "[listen]\n"
                               "address = \"127.0.0.1:%d\"   # loopback only\n"
                               "tls = false\n"
                               "\n"
                               "[proxy]\n"
                               "vault = \"%s\"\n"
                               "state_dir = \"%s\"\n"
                               "\n"
                               "# the first sandbox\n"
                               "[servers.a]\n"
                               "url = \"http://127.0.0.1:%d/mcp\"\n"
                               "secret = \"file:%s\"   # its token\n"
                               "# wake = \"cmd:/bin/true\"\n"
                               "\n"
                               "# notes at the end\n",
                               w->port, w->vault, state, w->port_a, secret_a);
    assert_int_equal(mx_it_write_file(w->cfg, w->original, strlen(w->original)), 0);
    free(secret_a);
    free(state);
}

static void world_free(struct world *w)
{
    free(w->cfg);
    free(w->vault);
    free(w->original);
}

/* The tool names at /mcp. */
static json_t *tool_names(const struct world *w)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    json_t *out = mx_it_client_ok(url, "list-all", NULL);
    json_t *names = json_incref(json_object_get(json_object_get(out, "tools"), "names"));
    assert_non_null(names);
    json_decref(out);
    free(url);
    return names;
}

static long server_status(const struct world *w, const char *name)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/%s", w->port, name);
    long status = 0;
    char *body = NULL;
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    assert_int_equal(mx_it_http("POST", url, hdrs,
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                                "\"params\":{\"protocolVersion\":\"2025-06-18\","
                                "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
                                "\"version\":\"1\"}}}",
                                &status, &body),
                     0);
    free(body);
    free(url);
    return status;
}

/* add and rm against a running gateway: tools come and go, bytes stay. */
static void test_add_rm_live(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL;
    world_start(&w);
    w.mcplex = mx_it_start_mcplex(w.cfg, w.port);
    assert_true(w.mcplex > 0);
    json_t *names = tool_names(&w);
    assert_true(mx_it_json_has(names, "whoami"));
    json_decref(names);

    char *url_b = mx_xasprintf("http://127.0.0.1:%d/mcp", w.port_b);
    const char *add[] = {"add", "b", url_b, "-c", w.cfg, NULL};
    assert_int_equal(mcplex("add-b", add, w.token_b, NULL, &out), 0);
    assert_contains(out, "vault:b");
    assert_contains(out, "reloaded");
    free(out);

    /* the old bytes are the head of the new file; the table follows */
    char *want =
        mx_xasprintf("%s\n[servers.b]\nurl = \"%s\"\nsecret = \"vault:b\"\n", w.original, url_b);
    assert_file_is(w.cfg, want);
    free(want);
    assert_mode(w.cfg, 0600);
    check_ok(w.cfg);

    /* the running gateway serves b: its names at /mcp (colliding, so
     * prefixed) and /mcp/b */
    names = tool_names(&w);
    assert_true(mx_it_json_has(names, "b_whoami"));
    json_decref(names);
    assert_int_equal(server_status(&w, "b"), 200);

    /* b twice: refused, nothing changes */
    char *before = read_text(w.cfg);
    assert_int_equal(mcplex("add-b-again", add, w.token_b, NULL, &out), 1);
    assert_contains(out, "server 'b' already exists");
    free(out);
    assert_file_is(w.cfg, before);

    /* rm b: the file is the original again, and the gateway drops b */
    const char *rm_b[] = {"rm", "b", "-c", w.cfg, NULL};
    assert_int_equal(mcplex("rm-b", rm_b, NULL, NULL, &out), 0);
    assert_contains(out, "reloaded");
    free(out);
    assert_file_is(w.cfg, w.original);
    check_ok(w.cfg);
    names = tool_names(&w);
    assert_false(mx_it_json_has(names, "b_whoami"));
    assert_true(mx_it_json_has(names, "whoami"));
    json_decref(names);
    assert_int_equal(server_status(&w, "b"), 404);

    /* rm of a name that is not there */
    assert_int_equal(mcplex("rm-b-again", rm_b, NULL, NULL, &out), 1);
    assert_contains(out, "no server 'b' in");
    free(out);

    /* rm a, the table between others: its comment above goes with it, the
     * commented-out key in it too, the notes after it stay */
    const char *rm_a[] = {"rm", "a", "-c", w.cfg, NULL};
    assert_int_equal(mcplex("rm-a", rm_a, NULL, NULL, &out), 0);
    free(out);
    const char *cut = strstr(w.original, "# the first sandbox\n");
    const char *rest = strstr(w.original, "# notes at the end\n");
    char *expect = mx_xasprintf("%.*s%s", (int)(cut - w.original), w.original, rest);
    assert_file_is(w.cfg, expect);
    free(expect);
    check_ok(w.cfg);
    names = tool_names(&w);
    assert_false(mx_it_json_has(names, "whoami"));
    json_decref(names);

    /* no token anywhere but in the vault (base64 there) */
    const char *files[] = {w.cfg, mx_it_dir(), NULL};
    const char *canaries[] = {w.token_b};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);

    free(before);
    free(url_b);
    world_free(&w);
    mx_it_pass();
}

/* What add refuses, and add with no gateway running. */
static void test_add_refusals(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL;
    world_start(&w);

    /* a URL the config does not take: refused by the check, file and
     * vault untouched */
    const char *bad[] = {"add", "bad", "ftp://127.0.0.1/mcp", "-c", w.cfg, NULL};
    assert_int_equal(mcplex("add-bad-url", bad, w.token_b, NULL, &out), 1);
    assert_contains(out, "url");
    assert_contains(out, "not changed");
    free(out);
    assert_file_is(w.cfg, w.original);
    assert_int_equal(access(w.vault, F_OK), -1);

    /* a name the config does not take */
    const char *badname[] = {"add", "no/slash", "http://127.0.0.1:1/mcp", "-c", w.cfg, NULL};
    assert_int_equal(mcplex("add-bad-name", badname, w.token_b, NULL, &out), 2);
    assert_contains(out, "server name");
    free(out);

    /* no token on stdin */
    char *url_b = mx_xasprintf("http://127.0.0.1:%d/mcp", w.port_b);
    const char *add[] = {"add", "b", url_b, "-c", w.cfg, NULL};
    assert_int_equal(mcplex("add-no-token", add, "", NULL, &out), 1);
    assert_contains(out, "--no-auth");
    free(out);

    /* a --secret that does not resolve would make a config serve refuses */
    const char *unset[] = {"add", "b", url_b, "--secret", "env:MX_IT_NOT_SET", "-c", w.cfg, NULL};
    const char *no_env[] = {"MX_IT_NOT_SET", NULL};
    assert_int_equal(mcplex("add-unset", unset, NULL, no_env, &out), 1);
    assert_contains(out, "env:MX_IT_NOT_SET");
    free(out);
    assert_file_is(w.cfg, w.original);

    /* --cookie, --header and --secret give those keys; no gateway runs:
     * said, and done */
    char *secret_b = mx_it_secret_file("b.secret", w.token_b);
    char *file_ref = mx_xasprintf("file:%s", secret_b);
    const char *cookie[] = {"add",      "c",      url_b, "--cookie", "sid",
                            "--secret", file_ref, "-c",  w.cfg,      NULL};
    assert_int_equal(mcplex("add-cookie", cookie, NULL, NULL, &out), 0);
    assert_contains(out, "no gateway");
    free(out);
    const char *header[] = {"add",      "d",      url_b, "--header", "X-Api-Key",
                            "--secret", file_ref, "-c",  w.cfg,      NULL};
    assert_int_equal(mcplex("add-header", header, NULL, NULL, &out), 0);
    free(out);
    const char *bearer[] = {"add", "e", url_b, "--bearer", "-c", w.cfg, NULL};
    assert_int_equal(mcplex("add-bearer", bearer, w.token_b, NULL, &out), 0);
    free(out);
    const char *none[] = {"add", "f", url_b, "--no-auth", "-c", w.cfg, NULL};
    assert_int_equal(mcplex("add-none", none, NULL, NULL, &out), 0);
    free(out);
    char *want = mx_xasprintf("%s\n[servers.c]\nurl = \"%s\"\nauth = \"cookie:sid\"\n"
                              "secret = \"%s\"\n"
                              "\n[servers.d]\nurl = \"%s\"\nauth = \"header:X-Api-Key\"\n"
                              "secret = \"%s\"\n"
                              "\n[servers.e]\nurl = \"%s\"\nsecret = \"vault:e\"\n"
                              "\n[servers.f]\nurl = \"%s\"\n",
                              w.original, url_b, file_ref, url_b, file_ref, url_b, url_b);
    assert_file_is(w.cfg, want);
    free(want);
    check_ok(w.cfg);
    assert_mode(w.vault, 0600);

    /* the stored token is what the gateway sends: it serves e */
    w.mcplex = mx_it_start_mcplex(w.cfg, w.port);
    assert_true(w.mcplex > 0);
    char *url_e = mx_xasprintf("http://127.0.0.1:%d/mcp/e", w.port);
    json_t *res = mx_it_client_ok(url_e, "call", "{\"name\":\"whoami\"}");
    const char *who = mx_it_result_text(res);
    if (who == NULL || strstr(who, "sim-b") == NULL)
        fail_msg("e's whoami answered \"%s\"", who ? who : "(nothing)");
    json_decref(res);
    free(url_e);

    const char *files[] = {w.cfg, mx_it_dir(), NULL};
    const char *canaries[] = {w.token_b};
    /* the secret file itself holds it: look everywhere else */
    unlink(secret_b);
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);

    free(secret_b);
    free(file_ref);
    free(url_b);
    world_free(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_add_rm_live, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_add_refusals, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
