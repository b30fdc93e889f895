/* SPDX-License-Identifier: MIT */
/*
 * `mcplex connect claude|cursor|codex` against a real TLS gateway whose
 * local CA serve made: each client's entry printed with the line that makes
 * it trust the CA (NODE_EXTRA_CA_CERTS for the Node-based ones,
 * CODEX_CA_CERTIFICATE for Codex); --write merges it into the client's own
 * file and keeps every other entry and line (a ~/.claude.json with state of
 * its own, a Codex config.toml with comments, another server and an older
 * mcplex table); and Claude Code itself (the npm package in tests/js), with
 * the CA line from connect's output, reports the written entry connected.
 * With a client token the entries read it from $MCPLEX_TOKEN; serve's banner
 * comes from the same source.
 */
#include <setjmp.h>
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

struct world {
    int port;
    char *state, *ca, *cfg, *home, *url;
    char *env_home, *env_claude, *env_codex;
};

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static void world_init(struct world *w, const char *listen_extra, const char *servers)
{
    memset(w, 0, sizeof(*w));
    w->state = mx_it_path("state");
    w->ca = mx_xasprintf("%s/certs/ca.pem", w->state);
    w->home = mx_it_path("home");
    w->port = mx_it_free_port();
    w->url = mx_xasprintf("https://127.0.0.1:%d/mcp", w->port);
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n%s"
                             "[proxy]\nstate_dir = \"%s\"\n%s",
                             w->port, listen_extra, w->state, servers);
    w->cfg = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg, cfg, strlen(cfg)), 0);
    free(cfg);
    assert_int_equal(mkdir(w->home, 0700), 0);
    w->env_home = mx_xasprintf("HOME=%s", w->home);
    w->env_claude = mx_xasprintf("CLAUDE_CONFIG_DIR=%s/.claude", w->home);
    w->env_codex = mx_xasprintf("CODEX_HOME=%s/.codex", w->home);
}

static void world_free(struct world *w)
{
    free(w->state);
    free(w->ca);
    free(w->cfg);
    free(w->home);
    free(w->url);
    free(w->env_home);
    free(w->env_claude);
    free(w->env_codex);
}

/* `mcplex connect <args> -c cfg` with HOME and the clients' dirs in the test directory. */
static int run_connect(const struct world *w, const char *name, const char *const *args, char **out)
{
    char *exe = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[16];
    size_t n = 0;
    argv[n++] = exe;
    argv[n++] = "connect";
    for (; *args && n < 13; args++)
        argv[n++] = *args;
    argv[n++] = "-c";
    argv[n++] = w->cfg;
    argv[n] = NULL;
    const char *env[] = {w->env_home, w->env_claude, w->env_codex, NULL};
    int rc = mx_it_run(name, argv, env, RUN_MS, out);
    fprintf(stderr, "it_connect: %s: exit %d\n%s\n", name, rc, *out);
    free(exe);
    return rc;
}

static char *read_text(const char *path)
{
    char *t = mx_it_read_file(path, NULL);
    if (t == NULL)
        fail_msg("cannot read %s", path);
    return t;
}

/* `claude mcp list` as it_claude_code runs it, trusting |ca|. */
static char *claude_list(const struct world *w, const char *ca)
{
    char *exe = mx_xasprintf("%s/tests/js/node_modules/.bin/claude", mx_it_source_dir());
    if (access(exe, X_OK) != 0)
        fail_msg("%s is missing: run `npm ci` in tests/js", exe);
    const char *argv[] = {exe, "mcp", "list", NULL};
    char *extra = mx_xasprintf("NODE_EXTRA_CA_CERTS=%s", ca);
    const char *env[] = {w->env_home,
                         w->env_claude,
                         extra,
                         "DISABLE_AUTOUPDATER=1",
                         "DISABLE_TELEMETRY=1",
                         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                         "ANTHROPIC_API_KEY",
                         "CLAUDE_CODE_OAUTH_TOKEN",
                         "HTTPS_PROXY",
                         "https_proxy",
                         "HTTP_PROXY",
                         "http_proxy",
                         "SSL_CERT_FILE",
                         "SSL_CERT_DIR",
                         NULL};
    char *out = NULL;
    int rc = mx_it_run("claude-list", argv, env, RUN_MS, &out);
    assert_true(rc >= 0);
    fprintf(stderr, "it_connect: claude mcp list:\n%s\n", out);
    free(extra);
    free(exe);
    return out;
}

/* What follows "export NAME=" in |out|, up to the line's end. */
static char *export_value(const char *out, const char *name)
{
    char *key = mx_xasprintf("export %s=", name);
    const char *p = strstr(out, key);
    if (p == NULL)
        fail_msg("no \"%s\" in:\n%s", key, out);
    p += strlen(key);
    char *v = mx_xstrndup(p, strcspn(p, "\n"));
    free(key);
    return v;
}

static void test_connect_print(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL, *want;
    /* serve prints its banner when it has upstreams: one that is never asked */
    world_init(&w, "", "[servers.s]\nurl = \"http://127.0.0.1:9/mcp\"\n");
    assert_true(mx_it_start_mcplex_tls(w.cfg, w.port, w.ca) > 0);

    const char *claude[] = {"claude", NULL};
    assert_int_equal(run_connect(&w, "connect-claude", claude, &out), 0);
    want = mx_xasprintf("claude mcp add-json -s user mcplex '{\"type\":\"http\",\"url\":\"%s\"}'\n",
                        w.url);
    assert_contains(out, want);
    free(want);
    char *ca = export_value(out, "NODE_EXTRA_CA_CERTS");
    assert_string_equal(ca, w.ca);
    free(ca);
    free(out);

    const char *cursor[] = {"cursor", NULL};
    assert_int_equal(run_connect(&w, "connect-cursor", cursor, &out), 0);
    want = mx_xasprintf("\"mcplex\": {\"url\":\"%s\"}\n", w.url);
    assert_contains(out, want);
    free(want);
    ca = export_value(out, "NODE_EXTRA_CA_CERTS");
    assert_string_equal(ca, w.ca);
    free(ca);
    free(out);

    const char *codex[] = {"codex", NULL};
    assert_int_equal(run_connect(&w, "connect-codex", codex, &out), 0);
    want = mx_xasprintf("[mcp_servers.mcplex]\nurl = \"%s\"\n", w.url);
    assert_contains(out, want);
    free(want);
    ca = export_value(out, "CODEX_CA_CERTIFICATE");
    assert_string_equal(ca, w.ca);
    free(ca);
    free(out);

    const char *bad[] = {"vscode", NULL};
    assert_int_equal(run_connect(&w, "connect-bad", bad, &out), 2);
    assert_contains(out, "usage: mcplex connect claude|cursor|codex");
    free(out);

    /* serve's banner is made by the same code */
    char *log_path = mx_it_path("mcplex.log");
    char *log = read_text(log_path);
    want = mx_xasprintf("Cursor (~/.cursor/mcp.json): {\"mcpServers\": {\"mcplex\": {\"url\": "
                        "\"%s\"}}}\n",
                        w.url);
    assert_contains(log, want);
    free(want);
    want = mx_xasprintf("Claude Code: claude mcp add --transport http mcplex %s\n", w.url);
    assert_contains(log, want);
    free(want);
    free(log);
    free(log_path);
    world_free(&w);
    mx_it_pass();
}

static void test_connect_write(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL;
    world_init(&w, "", "");
    assert_true(mx_it_start_mcplex_tls(w.cfg, w.port, w.ca) > 0);

    /* Claude Code: its own state and another server stay */
    char *claude_dir = mx_xasprintf("%s/.claude", w.home);
    assert_int_equal(mkdir(claude_dir, 0700), 0);
    char *claude_json = mx_xasprintf("%s/.claude.json", claude_dir);
    const char *before = "{\n  \"numStartups\": 3,\n  \"theme\": \"dark\",\n"
                         "  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n"
                         "      \"command\": \"true\"\n    }\n  }\n}\n";
    assert_int_equal(mx_it_write_file(claude_json, before, strlen(before)), 0);
    const char *claude[] = {"claude", "--write", NULL};
    assert_int_equal(run_connect(&w, "write-claude", claude, &out), 0);
    assert_contains(out, claude_json);
    char *ca = export_value(out, "NODE_EXTRA_CA_CERTS");
    free(out);
    char *text = read_text(claude_json);
    char *want = mx_xasprintf("{\n  \"numStartups\": 3,\n  \"theme\": \"dark\",\n"
                              "  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n"
                              "      \"command\": \"true\"\n    },\n    \"mcplex\": {\n"
                              "      \"type\": \"http\",\n      \"url\": \"%s\"\n    }\n  }\n}\n",
                              w.url);
    assert_string_equal(text, want);
    free(want);
    free(text);
    /* twice: the same file, not a second entry */
    assert_int_equal(run_connect(&w, "write-claude-again", claude, &out), 0);
    free(out);
    text = read_text(claude_json);
    assert_non_null(strstr(text, "\"mcplex\""));
    assert_null(strstr(strstr(text, "\"mcplex\"") + 1, "\"mcplex\""));
    free(text);
    /* Claude Code reads the entry and, trusting the CA as told, connects */
    char *list = claude_list(&w, ca);
    char *line = mx_xasprintf("mcplex: %s (HTTP) - ✔ Connected", w.url);
    assert_contains(list, line);
    free(line);
    free(list);
    free(ca);

    /* Cursor: a new file, 0600, in a new 0700 directory */
    const char *cursor[] = {"cursor", "--write", NULL};
    assert_int_equal(run_connect(&w, "write-cursor", cursor, &out), 0);
    free(out);
    char *cursor_json = mx_xasprintf("%s/.cursor/mcp.json", w.home);
    text = read_text(cursor_json);
    want = mx_xasprintf("{\n  \"mcpServers\": {\n    \"mcplex\": {\n      \"url\": \"%s\"\n"
                        "    }\n  }\n}\n",
                        w.url);
    assert_string_equal(text, want);
    free(want);
    free(text);
    struct stat st;
    assert_int_equal(stat(cursor_json, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* Codex: comments, another server and an older mcplex table (with a
     * sub-table) in config.toml; only that table changes */
    char *codex_dir = mx_xasprintf("%s/.codex", w.home);
    assert_int_equal(mkdir(codex_dir, 0700), 0);
    char *codex_toml = mx_xasprintf("%s/config.toml", codex_dir);
    const char *head = "# my codex settings\nmodel = \"o4\"  # the default\n\n";
    const char *old = "# the gateway\n[mcp_servers.mcplex]\nurl = \"https://127.0.0.1:1/mcp\"\n"
                      "\n[mcp_servers.mcplex.env]\nX = \"1\"\n\n";
    const char *tail = "[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\n  \"--port\",\n"
                       "  \"[1]\",\n]\n";
    char *codex_before = mx_xasprintf("%s%s%s", head, old, tail);
    assert_int_equal(mx_it_write_file(codex_toml, codex_before, strlen(codex_before)), 0);
    const char *codex[] = {"codex", "--write", NULL};
    assert_int_equal(run_connect(&w, "write-codex", codex, &out), 0);
    ca = export_value(out, "CODEX_CA_CERTIFICATE");
    assert_string_equal(ca, w.ca);
    free(ca);
    free(out);
    text = read_text(codex_toml);
    want = mx_xasprintf("%s%s\n[mcp_servers.mcplex]\nurl = \"%s\"\n", head, tail, w.url);
    assert_string_equal(text, want);
    free(want);
    free(text);

    free(codex_before);
    free(codex_toml);
    free(codex_dir);
    free(cursor_json);
    free(claude_json);
    free(claude_dir);
    world_free(&w);
    mx_it_pass();
}

/* With [listen] client_token the entries read the token from $MCPLEX_TOKEN. */
static void test_connect_token(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL, *want;
    world_init(&w, "client_token = \"env:MX_IT_NOT_READ\"\n", "");
    const char *claude[] = {"claude", NULL};
    assert_int_equal(run_connect(&w, "token-claude", claude, &out), 0);
    want = mx_xasprintf("'{\"type\":\"http\",\"url\":\"%s\",\"headers\":{\"Authorization\":"
                        "\"Bearer ${MCPLEX_TOKEN}\"}}'",
                        w.url);
    assert_contains(out, want);
    free(want);
    assert_contains(out, "export MCPLEX_TOKEN=");
    free(out);
    const char *cursor[] = {"cursor", NULL};
    assert_int_equal(run_connect(&w, "token-cursor", cursor, &out), 0);
    assert_contains(out, "\"Bearer ${env:MCPLEX_TOKEN}\"");
    free(out);
    const char *codex[] = {"codex", NULL};
    assert_int_equal(run_connect(&w, "token-codex", codex, &out), 0);
    assert_contains(out, "bearer_token_env_var = \"MCPLEX_TOKEN\"\n");
    free(out);
    world_free(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_connect_print, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_connect_write, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_connect_token, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
