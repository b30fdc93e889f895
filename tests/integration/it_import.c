/* SPDX-License-Identifier: MIT */
/*
 * `mcplex import` of a Claude Code style .mcp.json into a commented config
 * with a gateway running: a url server with a canary bearer token (a
 * sandbox-sim that requires it), one with a cookie, one with an API key
 * header, a command server (server-everything over stdio) with a canary
 * env value, and the client's own entry for mcplex, which is skipped. Every
 * token lands in the vault, never in the TOML, the gateway's log or the
 * command's output; the gateway serves the imported servers at once (the
 * bearer and the env value reach their upstreams from the vault); the
 * untouched part of the config is byte for byte the same and the result
 * passes `mcplex check`; the output names the one entry the client needs,
 * with the CA setting. A file with a server mcplex cannot take imports
 * nothing, and ${VAR} values become env: references.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int mcplex(const char *name, const char *const *args, const char *const *env, char **out)
{
    char *exe = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[16];
    size_t n = 0;
    argv[n++] = exe;
    for (; *args && n < 15; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    int rc = mx_it_run(name, argv, env, RUN_MS, out);
    fprintf(stderr, "it_import: %s: exit %d\n%s\n", name, rc, *out);
    free(exe);
    return rc;
}

static char *everything_js(void)
{
    return mx_xasprintf(
        "%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        mx_it_source_dir());
}

static char *write_config(int port, char **text)
{
    char *cfg = mx_it_path("mcplex.toml");
    char *vault = mx_it_path("vault");
    char *state = mx_it_path("state");
    *text = mx_xasprintf("# the gateway for this project\n"
                         "[listen]\n"
                         "address = \"127.0.0.1:%d\"  # plain, for the test\n"
                         "tls = false\n"
                         "\n"
                         "[proxy]\n"
                         "vault = \"%s\"\n"
                         "state_dir = \"%s\"\n"
                         "fanout_timeout = \"20s\"\n"
                         "\n"
                         "# servers come from the import\n",
                         port, vault, state);
    assert_int_equal(mx_it_write_file(cfg, *text, strlen(*text)), 0);
    free(vault);
    free(state);
    return cfg;
}

static void test_import_claude_code(void **state)
{
    (void)state;
    char bearer[MX_IT_CANARY_SIZE], cookie[MX_IT_CANARY_SIZE], key[MX_IT_CANARY_SIZE],
        env_val[MX_IT_CANARY_SIZE];
    mx_it_canary(bearer, sizeof(bearer));
    mx_it_canary(cookie, sizeof(cookie));
    mx_it_canary(key, sizeof(key));
    mx_it_canary(env_val, sizeof(env_val));
    int sim_port;
    const char *sim_args[] = {"--name", "sim-alpha", NULL};
    assert_true(mx_it_start_sim("sim-alpha", bearer, sim_args, &sim_port) > 0);
    int port = mx_it_free_port();
    char *original;
    char *cfg = write_config(port, &original);
    assert_true(mx_it_start_mcplex(cfg, port) > 0);

    char *js = everything_js();
    char *json = mx_xasprintf(
        "{\n"
        "  \"mcpServers\": {\n"
        "    \"alpha\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:%d/mcp\",\n"
        "              \"headers\": {\"Authorization\": \"Bearer %s\"}},\n"
        "    \"cookie box\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:%d/mcp\",\n"
        "                   \"headers\": {\"Cookie\": \"sid=%s\"}},\n"
        "    \"keyed\": {\"type\": \"sse\", \"url\": \"http://127.0.0.1:%d/sse\",\n"
        "              \"headers\": {\"X-Api-Key\": \"%s\"}},\n"
        "    \"ev\": {\"command\": \"node\", \"args\": [\"%s\", \"stdio\"],\n"
        "           \"env\": {\"EV_KEY\": \"%s\"}},\n"
        "    \"mcplex\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:%d/mcp\"}\n"
        "  }\n"
        "}\n",
        sim_port, bearer, sim_port, cookie, sim_port, key, js, env_val, port);
    char *json_path = mx_it_path(".mcp.json");
    assert_int_equal(mx_it_write_file(json_path, json, strlen(json)), 0);

    char *out = NULL;
    const char *args[] = {"import", json_path, "-c", cfg, NULL};
    assert_int_equal(mcplex("import", args, NULL, &out), 0);
    assert_contains(out, "imported 4 servers");
    assert_contains(out, "skipped 'mcplex': it is mcplex itself");
    assert_contains(out, "cookie-box (from 'cookie box')");
    assert_contains(out, "reloaded: 4 upstreams configured");
    /* the one entry Claude Code needs now */
    char *entry = mx_xasprintf("claude mcp add-json -s user mcplex "
                               "'{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/mcp\"}'",
                               port);
    assert_contains(out, entry);
    free(entry);

    /* the config: the old bytes, then the tables, references only */
    char *text = mx_it_read_file(cfg, NULL);
    assert_non_null(text);
    assert_memory_equal(text, original, strlen(original));
    char *want = mx_xasprintf(
        "\n[servers.alpha]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"vault:alpha\"\n"
        "\n[servers.cookie-box]\nurl = \"http://127.0.0.1:%d/mcp\"\nauth = \"cookie:sid\"\n"
        "secret = \"vault:cookie-box\"\n"
        "\n[servers.keyed]\nurl = \"http://127.0.0.1:%d/sse\"\ntransport = \"sse\"\n"
        "auth = \"header:X-Api-Key\"\nsecret = \"vault:keyed\"\n"
        "\n[servers.ev]\ncommand = [\"node\", \"%s\", \"stdio\"]\n"
        "env = [\"PATH\", \"HOME\", \"EV_KEY=vault:ev.EV_KEY\"]\n",
        sim_port, sim_port, sim_port, js);
    assert_string_equal(text + strlen(original), want);
    free(want);
    const char *check[] = {"check", "-c", cfg, NULL};
    char *check_out = NULL;
    assert_int_equal(mcplex("check", check, NULL, &check_out), 0);
    free(check_out);

    /* alpha's token reached alpha from the vault: its tools are served */
    char *alpha = mx_xasprintf("http://127.0.0.1:%d/mcp/alpha", port);
    json_t *res = mx_it_client_ok(alpha, "call", "{\"name\":\"whoami\"}");
    assert_non_null(mx_it_result_text(res));
    assert_contains(mx_it_result_text(res), "sim-alpha");
    json_decref(res);
    /* the env value reached the stdio child from the vault */
    char *ev = mx_xasprintf("http://127.0.0.1:%d/mcp/ev", port);
    res = mx_it_client_ok(ev, "call", "{\"name\":\"get-env\"}");
    const char *env_text = mx_it_result_text(res);
    assert_non_null(env_text);
    json_t *env = json_loads(env_text, 0, NULL);
    assert_non_null(env);
    assert_string_equal(json_string_value(json_object_get(env, "EV_KEY")), env_val);
    json_decref(env);
    json_decref(res);

    /* no token in the TOML, the gateway's log or any command's output */
    char *log = mx_it_path("mcplex.log");
    char *import_log = mx_it_path("import.log");
    char *check_log = mx_it_path("check.log");
    const char *files[] = {cfg, log, import_log, check_log, NULL};
    const char *canaries[] = {bearer, cookie, key, env_val};
    assert_int_equal(mx_it_canary_hits(files, canaries, 4), 0);
    assert_null(strstr(out, bearer));

    free(log);
    free(import_log);
    free(check_log);
    free(ev);
    free(alpha);
    free(text);
    free(out);
    free(json_path);
    free(json);
    free(js);
    free(cfg);
    free(original);
    mx_it_pass();
}

/* One server mcplex cannot take: nothing is imported. ${VAR}: env:VAR. */
static void test_import_refusals(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    int port = mx_it_free_port();
    char *original;
    char *cfg = write_config(port, &original);
    char *json = mx_xasprintf("{\"mcpServers\": {"
                              "\"ok\": {\"url\": \"http://127.0.0.1:1/mcp\","
                              "         \"headers\": {\"Authorization\": \"Bearer %s\"}},"
                              "\"two\": {\"url\": \"http://127.0.0.1:1/mcp\","
                              "          \"headers\": {\"A\": \"%s\", \"B\": \"%s\"}},"
                              "\"odd\": {\"type\": \"websocket\", \"url\": \"ws://x\"}}}",
                              token, token, token);
    char *json_path = mx_it_path("mcp.json");
    assert_int_equal(mx_it_write_file(json_path, json, strlen(json)), 0);
    char *out = NULL;
    const char *args[] = {"import", json_path, "-c", cfg, NULL};
    assert_int_equal(mcplex("import-bad", args, NULL, &out), 1);
    assert_contains(out, "server 'two': has 2 headers; mcplex sends one credential per server");
    assert_contains(out, "server 'odd': unknown type 'websocket'");
    assert_contains(out, "nothing imported");
    assert_null(strstr(out, token));
    free(out);
    char *text = mx_it_read_file(cfg, NULL);
    assert_string_equal(text, original);
    free(text);
    char *vault = mx_it_path("vault");
    assert_int_equal(access(vault, F_OK), -1);

    /* a file that is not JSON: its position, never the bytes near it */
    char *broken = mx_xasprintf("{\"mcpServers\": {\"x\": {\"headers\": {\"A\": %s}}}}", token);
    assert_int_equal(mx_it_write_file(json_path, broken, strlen(broken)), 0);
    assert_int_equal(mcplex("import-broken", args, NULL, &out), 1);
    assert_contains(out, "mcp.json:1:");
    assert_contains(out, "not valid JSON");
    assert_null(strstr(out, token));
    free(out);
    free(broken);

    /* ${VAR} and ${env:VAR}: references to mcplex's environment, no vault */
    const char *env_json = "{\"mcpServers\": {"
                           "\"a\": {\"url\": \"http://127.0.0.1:1/mcp\","
                           "        \"headers\": {\"Authorization\": \"Bearer ${MX_IT_TOK}\"}},"
                           "\"b\": {\"url\": \"http://127.0.0.1:1/mcp\","
                           "        \"headers\": {\"X-Key\": \"${env:MX_IT_TOK}\"}}}}";
    assert_int_equal(mx_it_write_file(json_path, env_json, strlen(env_json)), 0);
    const char *env[] = {"MX_IT_TOK=set-for-the-check", NULL};
    assert_int_equal(mcplex("import-env", args, env, &out), 0);
    assert_contains(out, "no gateway is running");
    free(out);
    text = mx_it_read_file(cfg, NULL);
    char *want = mx_xasprintf("%s\n[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n"
                              "secret = \"env:MX_IT_TOK\"\n"
                              "\n[servers.b]\nurl = \"http://127.0.0.1:1/mcp\"\n"
                              "auth = \"header:X-Key\"\nsecret = \"env:MX_IT_TOK\"\n",
                              original);
    assert_string_equal(text, want);
    assert_int_equal(access(vault, F_OK), -1);

    /* a name that is taken */
    assert_int_equal(mcplex("import-again", args, env, &out), 1);
    assert_contains(out, "a server named 'a' is already configured; `mcplex rm a` first");
    free(out);

    free(want);
    free(text);
    free(vault);
    free(json_path);
    free(json);
    free(cfg);
    free(original);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_import_claude_code, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_import_refusals, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
