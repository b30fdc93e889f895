/* SPDX-License-Identifier: MIT */
/*
 * The config model: every key accepted, defaults, each validation error at
 * its line and column, config discovery, secret resolution with positions,
 * and `mcplex check` end to end on files in a temporary directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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

#include "alloc.h"
#include "cmd_config.h"
#include "err.h"
#include "model.h"
#include "model_int.h"
#include "path.h"
#include "rand.h"
#include "secret_int.h"
#include "toml.h"

static char tmp_dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/mx-test-model-XXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
        return -1;
    /* as a config's directory is known: without symbolic links */
    char real[PATH_MAX];
    if (realpath(tmp_dir, real) == NULL || strlen(real) >= sizeof(tmp_dir))
        return -1;
    memcpy(tmp_dir, real, strlen(real) + 1);
    setenv("HOME", tmp_dir, 1);
    unsetenv("MCPLEX_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("XDG_STATE_HOME");
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A path in the test directory, by value so that nothing overwrites it. */
struct path {
    char s[256];
};

static struct path tmp_path(const char *name)
{
    struct path p;
    snprintf(p.s, sizeof(p.s), "%s/%s", tmp_dir, name);
    return p;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static struct mx_config *parse_ok(const char *text)
{
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    int rc = mx_config_parse("t.toml", text, strlen(text), &cfg, &d);
    if (rc)
        print_error("unexpected error %d:%d: %s\n", d.line, d.col, d.msg);
    assert_int_equal(rc, 0);
    assert_non_null(cfg);
    return cfg;
}

static const char design_example[] =
    "[listen]\n"
    "address = \"127.0.0.1:8443\"        # loopback only unless allow_remote = true\n"
    "tls = true                         # false: plain HTTP\n"
    "# cert / key: default to the files `mcplex certs init` makes in the state dir\n"
    "client_token = \"vault:client\"      # optional\n"
    "allowed_origins = []\n"
    "\n"
    "[proxy]\n"
    "trace = \"mcplex-trace.jsonl\"\n"
    "vault = \"~/.config/mcplex/vault\"\n"
    "state_dir = \"~/.local/state/mcplex\"\n"
    "prefix = \"conditional\"\n"
    "name_budget = 48\n"
    "request_timeout = \"120s\"\n"
    "wake_timeout = \"60s\"\n"
    "idle_close = \"60s\"\n"
    "\n"
    "[servers.files]\n"
    "url = \"https://quick-clear-canyon-8000.box.sandboxer.com/mcp\"\n"
    "auth = \"cookie:__sbx_auth\"         # bearer | cookie:NAME | header:NAME | none\n"
    "secret = \"vault:files\"\n"
    "tools = [\"read_text_file\", \"list_directory\"]   # optional allow-list\n"
    "\n"
    "[servers.everything]\n"
    "url = \"https://clean-chief-hare-8000.box.sandboxer.com/mcp\"\n"
    "auth = \"bearer\"\n"
    "secret = \"env:EVERYTHING_MCP_AUTH\"\n"
    "wake = \"cmd:sbx resume everything\"\n"
    "retry_on = [502, 503, 504, 423]\n"
    "alias = \"ev\"\n"
    "session = \"shared\"\n"
    "max_concurrency = 8\n"
    "keepalive = \"0s\"\n"
    "\n"
    "[servers.scratch]                  # a stdio upstream\n"
    "command = [\"npx\", \"-y\", \"mcp-sandbox\", \"run\", \"--\", \"mcp-server-everything\"]\n"
    "env = [\"E2B_API_KEY=vault:e2b\"]\n";

static void test_model_design_example(void **state)
{
    char cwd[PATH_MAX], trace[PATH_MAX + 32];
    (void)state;
    struct mx_config *cfg = parse_ok(design_example);
    assert_string_equal(cfg->path, "t.toml");
    /* a relative path is the file's, and t.toml is in the working directory */
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(trace, sizeof(trace), "%s/mcplex-trace.jsonl", cwd);
    assert_string_equal(cfg->listen.address, "127.0.0.1:8443");
    assert_true(cfg->listen.tls);
    assert_string_equal(cfg->listen.client_token_ref, "vault:client");
    assert_null(cfg->listen.client_token);
    assert_int_equal(cfg->listen.allowed_origins.cnt, 0);
    assert_string_equal(cfg->proxy.trace, trace);
    assert_string_equal(cfg->proxy.vault, tmp_path(".config/mcplex/vault").s);
    assert_string_equal(cfg->proxy.state_dir, tmp_path(".local/state/mcplex").s);
    assert_int_equal(cfg->server_cnt, 3);

    const struct mx_server_cfg *f = &cfg->servers[0];
    assert_string_equal(f->name, "files");
    assert_int_equal(f->line, 18);
    assert_int_equal(f->transport, MX_TRANSPORT_HTTP);
    assert_int_equal(f->auth, MX_AUTH_COOKIE);
    assert_string_equal(f->auth_name, "__sbx_auth");
    assert_string_equal(f->secret_ref, "vault:files");
    assert_int_equal(f->tools.cnt, 2);
    assert_string_equal(f->tools.v[1], "list_directory");
    assert_string_equal(f->alias, "files");

    const struct mx_server_cfg *e = mx_config_server(cfg, "everything");
    assert_ptr_equal(e, &cfg->servers[1]);
    assert_int_equal(e->auth, MX_AUTH_BEARER);
    assert_null(e->auth_name);
    assert_string_equal(e->wake, "cmd:sbx resume everything");
    assert_int_equal(e->retry_on_cnt, 4);
    assert_int_equal(e->retry_on[3], 423);
    assert_string_equal(e->alias, "ev");

    const struct mx_server_cfg *s = mx_config_server(cfg, "scratch");
    assert_int_equal(s->transport, MX_TRANSPORT_STDIO);
    assert_null(s->url);
    assert_int_equal(s->command.cnt, 6);
    assert_string_equal(s->command.v[0], "npx");
    assert_int_equal(s->env.cnt, 1);
    assert_string_equal(s->env.v[0], "E2B_API_KEY=vault:e2b");
    assert_non_null(s->env_secret);
    assert_null(s->env_secret[0]);
    assert_int_equal(s->auth, MX_AUTH_NONE);
    assert_null(mx_config_server(cfg, "nope"));
    mx_config_free(cfg);
}

static void test_model_defaults(void **state)
{
    (void)state;
    struct mx_config *cfg = parse_ok("# nothing but a comment\n");
    const struct mx_listen_cfg *l = &cfg->listen;
    assert_string_equal(l->address, "127.0.0.1:8443");
    assert_true(l->tls);
    assert_null(l->cert);
    assert_null(l->key);
    assert_null(l->client_token_ref);
    assert_int_equal(l->allowed_origins.cnt, 0);
    assert_false(l->allow_remote);
    assert_int_equal(l->max_body, 4194304);
    assert_int_equal(l->max_header, 65536);
    assert_int_equal(l->max_connections, 1024);
    assert_int_equal(l->header_timeout_ms, 10000);
    assert_int_equal(l->idle_timeout_ms, 120000);
    assert_int_equal(l->session_idle_ms, 30 * 60000);
    assert_int_equal(l->max_connections_per_client, 0);
    assert_int_equal(l->max_sessions, 4096);
    assert_int_equal(l->max_requests_per_connection, 100000);
    assert_int_equal(l->stream_poll_ms, 0);
    const struct mx_proxy_cfg *p = &cfg->proxy;
    assert_null(p->trace);
    assert_string_equal(p->vault, tmp_path(".config/mcplex/vault").s);
    assert_string_equal(p->state_dir, tmp_path(".local/state/mcplex").s);
    assert_int_equal(p->prefix, MX_PREFIX_CONDITIONAL);
    assert_int_equal(p->name_budget, 48);
    assert_int_equal(p->request_timeout_ms, 120000);
    assert_int_equal(p->wake_timeout_ms, 60000);
    assert_int_equal(p->idle_close_ms, 60000);
    assert_string_equal(p->log_level, "info");
    /* an empty gateway is valid */
    assert_int_equal(cfg->server_cnt, 0);
    mx_config_free(cfg);
}

static void test_model_server_defaults(void **state)
{
    (void)state;
    /* [proxy] after the servers still supplies their defaults */
    struct mx_config *cfg = parse_ok("[servers.a]\nurl = \"http://127.0.0.1:9000/mcp\"\n"
                                     "[servers.b]\ncommand = [\"x\"]\n"
                                     "[proxy]\nrequest_timeout = \"7s\"\nwake_timeout = \"8s\"\n"
                                     "idle_close = \"9s\"\n");
    const struct mx_server_cfg *a = &cfg->servers[0];
    assert_int_equal(a->transport, MX_TRANSPORT_HTTP);
    assert_int_equal(a->start, MX_START_LAZY);
    assert_int_equal(a->auth, MX_AUTH_NONE);
    assert_null(a->secret_ref);
    assert_int_equal(a->tools.cnt, 0);
    assert_null(a->wake);
    assert_int_equal(a->retry_on_cnt, 4);
    assert_int_equal(a->retry_on[0], 502);
    assert_int_equal(a->retry_on[1], 503);
    assert_int_equal(a->retry_on[2], 504);
    assert_int_equal(a->retry_on[3], 423);
    assert_string_equal(a->alias, "a");
    assert_int_equal(a->session, MX_SESSION_SHARED);
    assert_int_equal(a->max_concurrency, 8);
    assert_int_equal(a->keepalive_ms, 0);
    assert_int_equal(a->request_timeout_ms, 7000);
    assert_int_equal(a->wake_timeout_ms, 8000);
    assert_int_equal(a->idle_close_ms, 9000);
    assert_null(a->cwd);
    assert_int_equal(a->env.cnt, 0);
    assert_int_equal(cfg->servers[1].transport, MX_TRANSPORT_STDIO);
    assert_int_equal(cfg->servers[1].idle_close_ms, 9000);
    mx_config_free(cfg);
}

static void test_model_every_key(void **state)
{
    (void)state;
    struct mx_config *cfg =
        parse_ok("[listen]\n"
                 "address = \"[::1]:9443\"\n"
                 "tls = false\n"
                 "cert = \"~/c.pem\"\n"
                 "key = \"~/k.pem\"\n"
                 "client_token = \"env:MX_TEST_TOKEN\"\n"
                 "allowed_origins = [\"https://app.example.com\", \"http://localhost:3000\"]\n"
                 "allow_remote = false\n"
                 "max_body = 1000\n"
                 "max_header = 2048\n"
                 "max_connections = 10\n"
                 "header_timeout = \"5s\"\n"
                 "idle_timeout = \"1m\"\n"
                 "session_idle = \"1h\"\n"
                 "max_connections_per_client = 8\n"
                 "max_sessions = 20\n"
                 "max_requests_per_connection = 500\n"
                 "stream_poll = \"250ms\"\n"
                 "[proxy]\n"
                 "trace = \"~/trace.jsonl\"\n"
                 "vault = \"~/v/vault\"\n"
                 "state_dir = \"/var/tmp/mx\"\n"
                 "prefix = \"always\"\n"
                 "name_budget = 64\n"
                 "request_timeout = \"30s\"\n"
                 "wake_timeout = \"45s\"\n"
                 "idle_close = \"500ms\"\n"
                 "log_level = \"debug\"\n"
                 "[servers.web]\n"
                 "url = \"http://127.0.0.1:8000/mcp\"\n"
                 "transport = \"sse\"\n"
                 "start = \"eager\"\n"
                 "auth = \"header:X-Api-Key\"\n"
                 "secret = \"file:~/key.txt\"\n"
                 "tools = [\"read_*\", \"list?\"]\n"
                 "wake = \"url:https://api.example.com/resume\"\n"
                 "retry_on = [503]\n"
                 "alias = \"w\"\n"
                 "session = \"per-client\"\n"
                 "max_concurrency = 2\n"
                 "keepalive = \"30s\"\n"
                 "request_timeout = \"10s\"\n"
                 "wake_timeout = \"20s\"\n"
                 "idle_close = \"2m\"\n"
                 "[servers.local]\n"
                 "command = [\"node\", \"server.js\"]\n"
                 "transport = \"stdio\"\n"
                 "cwd = \"~/srv\"\n"
                 "env = [\"PATH\", \"TOKEN=vault:tok\"]\n"
                 "start = \"lazy\"\n"
                 "auth = \"none\"\n"
                 "[servers.bear]\n"
                 "url = \"https://h.example/mcp\"\n"
                 "secret = \"cmd:pass show x\"\n"
                 "[servers.cook]\n"
                 "url = \"https://h.example:8443/\"\n"
                 "auth = \"cookie:sid\"\n"
                 "secret = \"vault:c\"\n"
                 "retry_on = []\n"
                 "tools = []\n");
    const struct mx_listen_cfg *l = &cfg->listen;
    assert_string_equal(l->address, "[::1]:9443");
    assert_false(l->tls);
    assert_string_equal(l->cert, tmp_path("c.pem").s);
    assert_string_equal(l->key, tmp_path("k.pem").s);
    assert_string_equal(l->client_token_ref, "env:MX_TEST_TOKEN");
    assert_int_equal(l->allowed_origins.cnt, 2);
    assert_string_equal(l->allowed_origins.v[1], "http://localhost:3000");
    assert_int_equal(l->max_body, 1000);
    assert_int_equal(l->max_header, 2048);
    assert_int_equal(l->max_connections, 10);
    assert_int_equal(l->header_timeout_ms, 5000);
    assert_int_equal(l->idle_timeout_ms, 60000);
    assert_int_equal(l->session_idle_ms, 3600000);
    assert_int_equal(l->max_connections_per_client, 8);
    assert_int_equal(l->max_sessions, 20);
    assert_int_equal(l->max_requests_per_connection, 500);
    assert_int_equal(l->stream_poll_ms, 250);
    const struct mx_proxy_cfg *p = &cfg->proxy;
    assert_string_equal(p->trace, tmp_path("trace.jsonl").s);
    assert_string_equal(p->vault, tmp_path("v/vault").s);
    assert_string_equal(p->state_dir, "/var/tmp/mx");
    assert_int_equal(p->prefix, MX_PREFIX_ALWAYS);
    assert_int_equal(p->name_budget, 64);
    assert_int_equal(p->request_timeout_ms, 30000);
    assert_int_equal(p->wake_timeout_ms, 45000);
    assert_int_equal(p->idle_close_ms, 500);
    assert_string_equal(p->log_level, "debug");

    assert_int_equal(cfg->server_cnt, 4);
    const struct mx_server_cfg *w = &cfg->servers[0];
    assert_string_equal(w->name, "web");
    assert_string_equal(w->url, "http://127.0.0.1:8000/mcp");
    assert_int_equal(w->transport, MX_TRANSPORT_SSE);
    assert_string_equal(mx_transport_name(w->transport), "sse");
    assert_string_equal(mx_transport_name(MX_TRANSPORT_HTTP), "streamable-http");
    assert_string_equal(mx_transport_name(MX_TRANSPORT_STDIO), "stdio");
    assert_string_equal(mx_transport_name((enum mx_transport)3), "?");
    assert_int_equal(w->start, MX_START_EAGER);
    assert_int_equal(w->auth, MX_AUTH_HEADER);
    assert_string_equal(w->auth_name, "X-Api-Key");
    assert_string_equal(w->secret_ref, "file:~/key.txt");
    assert_int_equal(w->tools.cnt, 2);
    assert_string_equal(w->wake, "url:https://api.example.com/resume");
    assert_int_equal(w->retry_on_cnt, 1);
    assert_int_equal(w->retry_on[0], 503);
    assert_string_equal(w->alias, "w");
    assert_int_equal(w->session, MX_SESSION_PER_CLIENT);
    assert_int_equal(w->max_concurrency, 2);
    assert_int_equal(w->keepalive_ms, 30000);
    assert_int_equal(w->request_timeout_ms, 10000);
    assert_int_equal(w->wake_timeout_ms, 20000);
    assert_int_equal(w->idle_close_ms, 120000);

    const struct mx_server_cfg *s = &cfg->servers[1];
    assert_int_equal(s->transport, MX_TRANSPORT_STDIO);
    assert_int_equal(s->command.cnt, 2);
    assert_string_equal(s->command.v[1], "server.js");
    assert_string_equal(s->cwd, tmp_path("srv").s);
    assert_int_equal(s->env.cnt, 2);
    assert_string_equal(s->env.v[0], "PATH");
    assert_string_equal(s->env.v[1], "TOKEN=vault:tok");
    assert_int_equal(s->auth, MX_AUTH_NONE);
    assert_int_equal(s->request_timeout_ms, 30000);

    /* auth left out with a secret means bearer */
    assert_int_equal(cfg->servers[2].auth, MX_AUTH_BEARER);
    assert_int_equal(cfg->servers[3].auth, MX_AUTH_COOKIE);
    assert_string_equal(cfg->servers[3].auth_name, "sid");
    assert_int_equal(cfg->servers[3].retry_on_cnt, 0);
    mx_config_free(cfg);
}

static void test_model_servers_table_and_remote(void **state)
{
    (void)state;
    struct mx_config *cfg = parse_ok("[servers]\n[servers.b]\nurl = \"http://[::1]:1/\"\n"
                                     "[servers.a]\ncommand = [\"a\"]\n"
                                     "[listen]\naddress = \"0.0.0.0:8443\"\nallow_remote = true\n"
                                     "allowed_origins = [\"vscode-webview://abc\"]\n");
    assert_int_equal(cfg->server_cnt, 2);
    assert_string_equal(cfg->servers[0].name, "b");
    assert_string_equal(cfg->servers[1].name, "a");
    assert_true(cfg->listen.allow_remote);
    mx_config_free(cfg);
    cfg = parse_ok("[listen]\naddress = \"localhost:0\"\n");
    mx_config_free(cfg);
    cfg = parse_ok("[listen]\naddress = \"127.1.2.3:65535\"\n");
    mx_config_free(cfg);
}

struct err_case {
    const char *name;
    const char *in;
    int line;
    int col;
    const char *msg;
};

#define SRV "[servers.a]\n"
#define URL "url = \"http://127.0.0.1:9/mcp\"\n"

static const struct err_case err_cases[] = {
    {"syntax error passes through", "[listen\n", 1, 8, "expected '.' or ']'"},
    {"unknown root key", "foo = 1\n", 1, 1, "unknown key 'foo' outside any table"},
    {"unknown table", "[lisen]\n", 1, 2, "unknown table [lisen]"},
    {"unknown subtable", "[listen.extra]\n", 1, 9, "unknown table [listen.extra]"},
    {"unknown server subtable", SRV URL "[servers.a.x]\n", 3, 12, "unknown table [servers.a.x]"},
    {"listen not a table", "listen = 1\n", 1, 1, "'listen' must be a [listen] table"},
    {"unknown listen key", "[listen]\nadress = \"x\"\n", 2, 1, "unknown key 'adress' in [listen]"},
    {"unknown proxy key", "[proxy]\n\n  valut = \"x\"\n", 3, 3, "unknown key 'valut' in [proxy]"},
    {"unknown server key", SRV URL "token = \"x\"\n", 3, 1, "unknown key 'token' in [servers.a]"},
    {"key in [servers]", "[servers]\nx = 1\n", 2, 1, "unknown key 'x' in [servers]"},
    {"bad server name", "[servers.this-name-is-far-too-long-for-a-server]\n", 1, 10,
     "server name 'this-name-is-far-too-long-for-a-server' must be 1 to 32"},
    /* types */
    {"bool as string", "[listen]\ntls = \"yes\"\n", 2, 7, "'tls' must be a boolean, not a string"},
    {"int as string", "[listen]\nmax_body = \"4M\"\n", 2, 12,
     "'max_body' must be an integer, not a string"},
    {"string as int", "[proxy]\nvault = 1\n", 2, 9, "'vault' must be a string, not an integer"},
    {"array as string", SRV "command = \"node\"\n", 2, 11,
     "'command' must be an array, not a string"},
    {"array of ints", SRV "command = [1]\n", 2, 12, "'command' must be an array of strings"},
    {"string as array", SRV URL "tools = [\"a\"]\nalias = [\"x\"]\n", 4, 9,
     "'alias' must be a string, not an array"},
    {"table as value", "[listen.tls]\n", 1, 9, "'tls' must be a boolean, not a table"},
    /* enums, numbers, durations */
    {"bad prefix", "[proxy]\nprefix = \"sometimes\"\n", 2, 10,
     "'prefix': \"sometimes\": must be one of conditional, always"},
    {"bad log level", "[proxy]\nlog_level = \"trace\"\n", 2, 13, "must be one of error, warn"},
    {"bad session", SRV URL "session = \"per-user\"\n", 3, 11,
     "'session': \"per-user\": must be one of shared, per-client"},
    {"bad start", SRV URL "start = \"now\"\n", 3, 9,
     "'start': \"now\": must be one of lazy, eager"},
    {"bad transport", SRV URL "transport = \"http\"\n", 3, 13,
     "'transport': \"http\": must be one of streamable-http, sse, stdio"},
    {"bad duration", "[proxy]\nwake_timeout = \"60\"\n", 2, 16,
     "'wake_timeout': \"60\": is not a duration"},
    {"bad duration unit", SRV URL "keepalive = \"5d\"\n", 3, 13, "is not a duration"},
    {"duration as int", "[proxy]\nwake_timeout = 60\n", 2, 16,
     "'wake_timeout' must be a duration string such as \"30s\", not an integer"},
    {"duration too long", "[proxy]\nidle_close = \"25h\"\n", 2, 14,
     "'idle_close' must be at most 24h"},
    {"zero timeout", "[listen]\nheader_timeout = \"0s\"\n", 2, 18, "must be more than 0"},
    {"name_budget low", "[proxy]\nname_budget = 7\n", 2, 15, "between 8 and 128"},
    {"name_budget high", "[proxy]\nname_budget = 129\n", 2, 15, "between 8 and 128"},
    {"max_concurrency 0", SRV URL "max_concurrency = 0\n", 3, 19, "between 1 and 10000"},
    {"max_connections 0", "[listen]\nmax_connections = 0\n", 2, 19, "between 1 and"},
    {"max_header small", "[listen]\nmax_header = 100\n", 2, 14, "between 1024 and"},
    {"max_connections_per_client negative", "[listen]\nmax_connections_per_client = -1\n", 2, 30,
     "between 0 and 1000000"},
    {"max_sessions 0", "[listen]\nmax_sessions = 0\n", 2, 16, "between 1 and 1000000"},
    {"max_sessions string", "[listen]\n\nmax_sessions = \"10\"\n", 3, 16, "integer"},
    {"max_requests_per_connection 0", "[listen]\nmax_requests_per_connection = 0\n", 2, 31,
     "between 1 and"},
    {"empty path", "[proxy]\nvault = \"\"\n", 2, 9, "'vault' must not be empty"},
    /* listen */
    {"address without port", "[listen]\naddress = \"127.0.0.1\"\n", 2, 11, "must be host:port"},
    {"address bad port", "[listen]\naddress = \"127.0.0.1:70000\"\n", 2, 11, "has a bad port"},
    {"address v6 no brackets", "[listen]\naddress = \"::1:8443\"\n", 2, 11, "IPv6 in brackets"},
    {"address bad v6", "[listen]\naddress = \"[::g]:1\"\n", 2, 11, "bad [IPv6] host"},
    {"address host name", "[listen]\naddress = \"example.com:80\"\n", 2, 11,
     "host must be an IP address or localhost"},
    {"address not loopback", "[listen]\naddress = \"0.0.0.0:8443\"\n", 2, 11,
     "not a loopback address; set allow_remote = true"},
    {"v6 not loopback", "[listen]\nallow_remote = false\naddress = \"[::]:8443\"\n", 3, 11,
     "not a loopback address"},
    {"bad origin", "[listen]\nallowed_origins = [\"https://ok.example\", \"https://x.example/\"]\n",
     2, 42, "'allowed_origins': \"https://x.example/\": "},
    {"origin wildcard", "[listen]\nallowed_origins = [\"*\"]\n", 2, 20, "scheme://host[:port]"},
    {"cert without key", "[listen]\ncert = \"c.pem\"\n", 2, 1, "set 'cert' and 'key' together"},
    {"bad client token ref", "[listen]\nclient_token = \"hunter2\"\n", 2, 16,
     "unknown kind of secret reference"},
    /* servers */
    {"url and command", SRV URL "command = [\"y\"]\n", 3, 1, "set 'url' or 'command', not both"},
    {"command then url", SRV "command = [\"y\"]\n" URL, 3, 1, "not both"},
    {"neither url nor command", "\n[servers.a]\nalias = \"b\"\n", 2, 10,
     "server 'a' needs a 'url' or a 'command'"},
    {"url scheme", SRV "url = \"ftp://x\"\n", 2, 7, "must start with http:// or https://"},
    {"url credentials", SRV "url = \"https://u:p@x.example/\"\n", 2, 7, "user:password@"},
    {"url no host", SRV "url = \"https:///mcp\"\n", 2, 7, "has no host"},
    {"url space", SRV "url = \"https://x.example/a b\"\n", 2, 7, "space or control"},
    {"url fragment", SRV "url = \"https://x.example/#f\"\n", 2, 7, "#fragment"},
    {"url port 0", SRV "url = \"https://x.example:0/\"\n", 2, 7, "has a bad port"},
    {"stdio transport with url", SRV URL "transport = \"stdio\"\n", 3, 13,
     "\"stdio\" needs a 'command'"},
    {"http transport with command", SRV "command = [\"x\"]\ntransport = \"sse\"\n", 3, 13,
     "a 'command' server speaks stdio"},
    {"empty command", SRV "command = []\n", 2, 11, "'command' must not be empty"},
    {"empty argv0", SRV "command = [\"\"]\n", 2, 12, "must not be empty"},
    {"auth on stdio", SRV "command = [\"x\"]\nauth = \"bearer\"\n", 3, 8,
     "'auth' applies to url servers"},
    {"secret on stdio", SRV "command = [\"x\"]\nsecret = \"env:X\"\n", 3, 10,
     "'secret' applies to url servers"},
    {"auth without secret", SRV URL "auth = \"bearer\"\n", 3, 8,
     "'auth': \"bearer\": needs a 'secret'"},
    {"cookie without secret", SRV URL "auth = \"cookie:s\"\n", 3, 8, "needs a 'secret'"},
    {"secret with auth none", SRV URL "auth = \"none\"\nsecret = \"env:X\"\n", 4, 1,
     "'secret' is set but auth = \"none\""},
    {"bad auth", SRV URL "auth = \"basic\"\n", 3, 8,
     "'auth': \"basic\": must be bearer, cookie:NAME, header:NAME or none"},
    {"bad cookie name", SRV URL "auth = \"cookie:a b\"\nsecret = \"env:X\"\n", 3, 8,
     "not a valid cookie name"},
    {"empty header name", SRV URL "auth = \"header:\"\n", 3, 8, "not a valid header name"},
    {"reserved header", SRV URL "auth = \"header:Host\"\nsecret = \"env:X\"\n", 3, 8,
     "'auth': \"header:Host\": mcplex sets this header itself"},
    {"bad secret ref", SRV URL "secret = \"password\"\n", 3, 10,
     "unknown kind of secret reference"},
    {"bad vault name", SRV URL "secret = \"vault:a/b\"\n", 3, 10, "vault: needs an entry name"},
    {"bad env ref", SRV URL "secret = \"env:1X\"\n", 3, 10, "env: needs a variable name"},
    {"empty cmd ref", SRV URL "secret = \"cmd: \"\n", 3, 10, "cmd: needs a command"},
    {"env on url server", SRV URL "env = [\"A\"]\n", 3, 1,
     "'env' applies only to 'command' servers"},
    {"cwd on url server", SRV URL "cwd = \"/\"\n", 3, 1, "'cwd' applies only"},
    {"bad env name", SRV "command = [\"x\"]\nenv = [\"OK\", \"1A\"]\n", 3, 14, "must be NAME or"},
    {"bad env ref in env", SRV "command = [\"x\"]\nenv = [\"A=B\"]\n", 3, 8,
     "unknown kind of secret reference"},
    {"env listed twice", SRV "command = [\"x\"]\nenv = [\"A\", \"B\", \"A=env:C\"]\n", 3, 18,
     "A is listed twice"},
    {"retry_on range", SRV URL "retry_on = [502, 99]\n", 3, 18, "99 is not an HTTP status"},
    {"retry_on strings", SRV URL "retry_on = [\"502\"]\n", 3, 13, "must be an array of integers"},
    {"bad wake", SRV URL "wake = \"sbx resume\"\n", 3, 8, "must be cmd:COMMAND or url:URL"},
    {"bad wake url", SRV URL "wake = \"url:ftp://x\"\n", 3, 8, "must start with http://"},
    {"refresh not cmd", SRV URL "secret = \"env:T\"\nrefresh = \"env:T\"\n", 4, 11,
     "must be cmd:COMMAND, a command that prints the new credential"},
    {"refresh blank cmd", SRV URL "secret = \"env:T\"\nrefresh = \"cmd: \"\n", 4, 11,
     "cmd: needs a command"},
    {"refresh without secret", SRV URL "refresh = \"cmd:renew\"\n", 3, 1,
     "'refresh' needs a 'secret', the credential used until the first refresh"},
    {"refresh on stdio", SRV "command = [\"x\"]\nrefresh = \"cmd:renew\"\n", 3, 11,
     "'refresh' applies to url servers"},
    {"bad alias", SRV URL "alias = \"a b\"\n", 3, 9, "must be 1 to 32 characters"},
    {"duplicate alias", SRV URL "[servers.b]\n" URL "alias = \"a\"\n", 5, 9,
     "alias 'a' is already used by server 'a'"},
    {"bad tool pattern", SRV URL "tools = [\"a b\"]\n", 3, 10, "non-empty without spaces"},
};

static void test_model_errors_have_positions(void **state)
{
    int bad = 0;
    (void)state;
    for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
        const struct err_case *c = &err_cases[i];
        struct mx_config *cfg = NULL;
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        int rc = mx_config_parse("m.toml", c->in, strlen(c->in), &cfg, &d);
        if (rc != MX_EINVAL || cfg != NULL || d.line != c->line || d.col != c->col ||
            strstr(d.msg, c->msg) == NULL || strcmp(d.file, "m.toml") != 0) {
            print_error("case '%s': rc %d, got %d:%d \"%s\", want %d:%d \"%s\"\n", c->name, rc,
                        d.line, d.col, d.msg, c->line, c->col, c->msg);
            bad++;
        }
        mx_config_free(cfg);
    }
    assert_int_equal(bad, 0);
}

/* Errors that teach, each asserted verbatim with its file:line:col: the
 * nearest known key or table, the section a key belongs in, and the quotes a
 * bare value needs (quoted back only where the key never holds a secret). */
static const struct {
    const char *in;
    const char *want;
} teach_cases[] = {
    {"[listen]\nadress = \"127.0.0.1:8443\"\n",
     "m.toml:2:1: unknown key 'adress' in [listen]; did you mean 'address'?"},
    {"[proxy]\n\n  valut = \"x\"\n",
     "m.toml:3:3: unknown key 'valut' in [proxy]; did you mean 'vault'?"},
    {SRV URL "secert = \"env:X\"\n",
     "m.toml:3:1: unknown key 'secert' in [servers.a]; did you mean 'secret'?"},
    {SRV URL "max_concurency = 4\n",
     "m.toml:3:1: unknown key 'max_concurency' in [servers.a]; did you mean 'max_concurrency'?"},
    {SRV URL "token = \"x\"\n", "m.toml:3:1: unknown key 'token' in [servers.a]"},
    {"[proxy]\ntls = false\n",
     "m.toml:2:1: unknown key 'tls' in [proxy]; 'tls' belongs in [listen]"},
    {"[listen]\nurl = \"http://127.0.0.1:1/\"\n",
     "m.toml:2:1: unknown key 'url' in [listen]; 'url' belongs in [servers.NAME]"},
    {"adress = \"127.0.0.1:1\"\n",
     "m.toml:1:1: unknown key 'adress' outside any table; did you mean 'address' in [listen]?"},
    {"trace = \"t.jsonl\"\n",
     "m.toml:1:1: unknown key 'trace' outside any table; 'trace' belongs in [proxy]"},
    {"foo = 1\n", "m.toml:1:1: unknown key 'foo' outside any table; keys go under [listen], "
                  "[proxy] or [servers.NAME]"},
    {"[lisen]\n", "m.toml:1:2: unknown table [lisen]; did you mean [listen]?"},
    {"[Proxy]\n", "m.toml:1:2: unknown table [Proxy]; did you mean [proxy]?"},
    {"[server.files]\n" URL,
     "m.toml:1:2: unknown table [server.files]; did you mean [servers.files]?"},
    {"[upstreams]\n", "m.toml:1:2: unknown table [upstreams]; expected [listen], [proxy] or "
                      "[servers.NAME]"},
    /* values that need quotes */
    {"[listen]\naddress = 127.0.0.1:8443\n",
     "m.toml:2:11: strings need double quotes: write address = \"127.0.0.1:8443\""},
    {SRV URL "transport = http\n",
     "m.toml:3:13: strings need double quotes: write transport = \"http\""},
    {"[proxy]\nidle_close = 30s\n",
     "m.toml:2:14: strings need double quotes: write idle_close = \"30s\""},
    {"[proxy]\ntrace = ~/t.jsonl\n",
     "m.toml:2:9: strings need double quotes: write trace = \"~/t.jsonl\""},
    {SRV URL "tools = [\"a\", read_file]\n",
     "m.toml:3:15: strings need double quotes, also in arrays: write \"read_file\""},
    {SRV "url = https://x.example/mcp\n",
     "m.toml:2:7: strings need double quotes: write url = \"...\""},
    {SRV "command = [node, \"s.js\"]\n",
     "m.toml:2:12: strings need double quotes, also in arrays: write command = [\"...\", ...]"},
    {"[listen]\nadress = 127.0.0.1:8443\n",
     "m.toml:2:10: strings need double quotes: write adress = \"...\""},
    /* numbers stay numbers */
    {"[proxy]\npage_size = 1.5\n", "m.toml:2:14: floats are not supported"},
    {"[proxy]\npage_size = \"50\"\n", "m.toml:2:13: 'page_size' must be an integer, not a string"},
};

static void test_model_errors_teach(void **state)
{
    int bad = 0;
    char got[1024];
    (void)state;
    for (size_t i = 0; i < sizeof(teach_cases) / sizeof(teach_cases[0]); i++) {
        struct mx_config *cfg = NULL;
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        int rc = mx_config_parse("m.toml", teach_cases[i].in, strlen(teach_cases[i].in), &cfg, &d);
        mx_diag_format(&d, got, sizeof(got));
        if (rc != MX_EINVAL || strcmp(got, teach_cases[i].want) != 0) {
            print_error("case %zu: rc %d\n  got  %s\n  want %s\n", i, rc, got, teach_cases[i].want);
            bad++;
        }
        mx_config_free(cfg);
    }
    assert_int_equal(bad, 0);
    struct mx_config *cfg = parse_ok("[proxy]\npage_size = 50\nname_budget = +64\n");
    assert_int_equal(cfg->proxy.page_size, 50);
    assert_int_equal(cfg->proxy.name_budget, 64);
    mx_config_free(cfg);
}

/* A bare value where a secret belongs is never quoted back: the parser
 * does not know the key's meaning, the model says which keys may be shown. */
static void test_model_bare_secret_not_quoted(void **state)
{
    static const struct {
        const char *pre, *post;
    } cases[] = {
        {"[listen]\nclient_token = ", "\n"},
        {SRV URL "secret = ", "\n"},
        {SRV "url = https://u:", "@x.example/\n"},
        {SRV "command = [\"x\"]\nenv = [K=", "]\n"},
        {SRV URL "wake = cmd:", "\n"},
        {SRV URL "tokn = ", "\n"},
        {"tokn = ", "\n"},
    };
    char canary[33], text[256];
    (void)state;
    mx_rand_hex(canary, sizeof(canary));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_config *cfg = NULL;
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        /* "k" first: an all-digit canary would read as an integer */
        snprintf(text, sizeof(text), "%sk%s%s", cases[i].pre, canary, cases[i].post);
        assert_int_equal(mx_config_parse("t.toml", text, strlen(text), &cfg, &d), MX_EINVAL);
        if (strstr(d.msg, canary) || strstr(d.msg, "strings need double quotes") == NULL)
            fail_msg("case %zu: %d:%d %s", i, d.line, d.col, d.msg);
    }
}

static void test_model_path_expand(void **state)
{
    (void)state;
    char *p = mx_path_expand("~/a/b");
    assert_string_equal(p, tmp_path("a/b").s);
    free(p);
    p = mx_path_expand("~");
    assert_string_equal(p, tmp_dir);
    free(p);
    p = mx_path_expand("~user/x");
    assert_string_equal(p, "~user/x");
    free(p);
    p = mx_path_expand("/abs/~/x");
    assert_string_equal(p, "/abs/~/x");
    free(p);
    p = mx_path_expand("rel");
    assert_string_equal(p, "rel");
    free(p);
    setenv("HOME", "/h/", 1);
    p = mx_path_expand("~/x");
    assert_string_equal(p, "/h/x");
    free(p);
    setenv("HOME", tmp_dir, 1);
}

static void test_model_path_resolve(void **state)
{
    char cwd[PATH_MAX];
    (void)state;
    static const struct {
        const char *dir, *in, *want;
    } cases[] = {
        {"/etc/mcplex", "t.jsonl", "/etc/mcplex/t.jsonl"},
        {"/etc/mcplex/", "./t.jsonl", "/etc/mcplex/t.jsonl"},
        {"/etc/mcplex", ".//a/./b", "/etc/mcplex/a/./b"},
        {"/etc/mcplex", "../x", "/etc/mcplex/../x"},
        {"/etc/mcplex", ".", "/etc/mcplex"},
        {"/", "t.jsonl", "/t.jsonl"},
        {"/etc/mcplex", "/var/t.jsonl", "/var/t.jsonl"},
        {"/etc/mcplex", "~user/x", "/etc/mcplex/~user/x"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *p = mx_path_resolve(cases[i].dir, cases[i].in);
        if (strcmp(p, cases[i].want) != 0)
            fail_msg("resolve(%s, %s) = %s, want %s", cases[i].dir, cases[i].in, p, cases[i].want);
        free(p);
    }
    char *p = mx_path_resolve("/etc/mcplex", "~/x");
    assert_string_equal(p, tmp_path("x").s);
    free(p);

    /* no directory: the working one; a file's directory without symbolic links */
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(mkdir(tmp_path("pr").s, 0700), 0);
    assert_int_equal(symlink(tmp_path("pr").s, tmp_path("link").s), 0);
    assert_int_equal(chdir(tmp_path("pr").s), 0);
    p = mx_path_resolve(NULL, "a/b");
    assert_string_equal(p, tmp_path("pr/a/b").s);
    free(p);
    p = mx_path_dir_of("c.toml");
    assert_string_equal(p, tmp_path("pr").s);
    free(p);
    assert_int_equal(chdir(cwd), 0);
    p = mx_path_dir_of(tmp_path("link/c.toml").s);
    assert_string_equal(p, tmp_path("pr").s);
    free(p);
    /* a directory that does not exist is still made absolute */
    p = mx_path_dir_of("/nonexistent/mx/c.toml");
    assert_string_equal(p, "/nonexistent/mx");
    free(p);
    p = mx_path_dir_of("/c.toml");
    assert_string_equal(p, "/");
    free(p);
}

static void test_model_find(void **state)
{
    char cwd[1024];
    (void)state;
    char *p = mx_config_find("given.toml");
    assert_string_equal(p, "given.toml");
    free(p);

    assert_non_null(getcwd(cwd, sizeof(cwd)));
    struct path dir_p = tmp_path("findcwd");
    const char *dir = dir_p.s;
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chdir(dir), 0);
    p = mx_config_find(NULL);
    assert_string_equal(p, tmp_path(".config/mcplex/mcplex.toml").s);
    free(p);
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    p = mx_config_find(NULL);
    assert_string_equal(p, "/xdg/mcplex/mcplex.toml");
    free(p);
    /* a relative XDG_CONFIG_HOME is ignored, as the spec says */
    setenv("XDG_CONFIG_HOME", "rel", 1);
    p = mx_config_find(NULL);
    assert_string_equal(p, tmp_path(".config/mcplex/mcplex.toml").s);
    free(p);
    write_file("mcplex.toml", "", 0644);
    p = mx_config_find(NULL);
    assert_string_equal(p, "mcplex.toml");
    free(p);
    setenv("MCPLEX_CONFIG", "/env/mcplex.toml", 1);
    p = mx_config_find(NULL);
    assert_string_equal(p, "/env/mcplex.toml");
    free(p);
    p = mx_config_find("arg.toml");
    assert_string_equal(p, "arg.toml");
    free(p);
    unsetenv("MCPLEX_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    assert_int_equal(chdir(cwd), 0);
}

static void test_model_load(void **state)
{
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    (void)state;
    struct path path_p = tmp_path("load.toml");
    const char *path = path_p.s;
    write_file(path, "[servers.x]\nurl = \"https://x.example/\"\n", 0644);
    assert_int_equal(mx_config_load(path, &cfg, &d), 0);
    assert_string_equal(cfg->path, path);
    assert_int_equal(cfg->server_cnt, 1);
    mx_config_free(cfg);

    write_file(path, "[servers.x]\nurl = 5\n", 0644);
    assert_int_equal(mx_config_load(path, &cfg, &d), MX_EINVAL);
    assert_null(cfg);
    assert_string_equal(d.file, path);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.col, 7);

    assert_int_equal(mx_config_load(tmp_path("missing.toml").s, &cfg, &d), MX_ENOTFOUND);
    assert_string_equal(d.file, tmp_path("missing.toml").s);
    assert_int_equal(d.line, 0);
    assert_int_equal(mx_config_load(tmp_dir, &cfg, &d), MX_EIO);
    mx_config_free(NULL);
}

/* [listen] and [proxy] alone: an error elsewhere does not stop a command
 * that only needs to find the gateway; one in [listen] or in the TOML does. */
static void test_model_load_listen(void **state)
{
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    (void)state;
    memset(&d, 0, sizeof(d));
    struct path p = tmp_path("listen.toml");
    const char *path = p.s;
    write_file(path,
               "[listen]\naddress = \"127.0.0.1:9001\"\ntls = false\n[proxy]\nstate_dir = \"st\"\n"
               "[servers.bad]\nurl = \"ftp://x.example/\"\n[unknown]\nx = 1\n",
               0600);
    assert_int_equal(mx_config_load(path, &cfg, &d), MX_EINVAL);
    assert_null(cfg);
    assert_int_equal(mx_config_load_listen(path, &cfg, &d), 0);
    assert_string_equal(cfg->listen.address, "127.0.0.1:9001");
    assert_false(cfg->listen.tls);
    assert_string_equal(cfg->proxy.state_dir, tmp_path("st").s);
    assert_int_equal(cfg->server_cnt, 0);
    mx_config_free(cfg);

    write_file(path, "[listen]\naddress = \"127.0.0.1\"\n[servers.x]\nurl = \"https://x/\"\n",
               0600);
    assert_int_equal(mx_config_load_listen(path, &cfg, &d), MX_EINVAL);
    assert_null(cfg);
    assert_int_equal(d.line, 2);
    write_file(path, "[listen]\naddress = \"127.0.0.1:1\"\n[servers.x\n", 0600);
    assert_int_equal(mx_config_load_listen(path, &cfg, &d), MX_EINVAL);
    assert_int_equal(d.line, 3);
    assert_int_equal(mx_config_load_listen(tmp_path("none.toml").s, &cfg, &d), MX_ENOTFOUND);
}

static void test_model_resolve_secrets(void **state)
{
    struct mx_diag d;
    char canary[33];
    (void)state;
    mx_rand_hex(canary, sizeof(canary));
    setenv("MX_TEST_CLIENT", "client-token", 1);
    setenv("MX_TEST_UP", canary, 1);
    setenv("MX_TEST_CHILD", "child", 1);
    unsetenv("MX_TEST_UNSET");
    struct mx_config *cfg = parse_ok("[listen]\nclient_token = \"env:MX_TEST_CLIENT\"\n"
                                     "[servers.up]\nurl = \"https://x.example/\"\n"
                                     "secret = \"env:MX_TEST_UP\"\n"
                                     "[servers.kid]\ncommand = [\"x\"]\n"
                                     "env = [\"PATH\", \"TOKEN=env:MX_TEST_CHILD\"]\n");
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_config_resolve_secrets(cfg, &d), 0);
    assert_true(mx_secret_equal(cfg->listen.client_token, "client-token", 12));
    assert_true(mx_secret_equal(cfg->servers[0].secret, canary, strlen(canary)));
    assert_null(cfg->servers[1].secret);
    assert_null(cfg->servers[1].env_secret[0]);
    assert_true(mx_secret_equal(cfg->servers[1].env_secret[1], "child", 5));
    /* resolving again (a reload) replaces the secrets without leaking */
    assert_int_equal(mx_config_resolve_secrets(cfg, &d), 0);
    mx_config_free(cfg);

    cfg = parse_ok("[servers.up]\nurl = \"https://x.example/\"\nsecret = \"env:MX_TEST_UP\"\n"
                   "[servers.kid]\ncommand = [\"x\"]\n"
                   "env = [\"TOKEN=env:MX_TEST_UNSET\"]\n");
    assert_int_equal(mx_config_resolve_secrets(cfg, &d), MX_ENOTFOUND);
    assert_string_equal(d.file, "t.toml");
    assert_int_equal(d.line, 6);
    assert_int_equal(d.col, 8);
    assert_non_null(strstr(d.msg, "server 'kid': env TOKEN: env:MX_TEST_UNSET"));
    assert_non_null(strstr(d.msg, "MX_TEST_UNSET is not set"));
    assert_null(strstr(d.msg, canary));
    mx_config_free(cfg);

    cfg = parse_ok("[listen]\nclient_token = \"env:MX_TEST_UNSET\"\n");
    assert_int_equal(mx_config_resolve_secrets(cfg, &d), MX_ENOTFOUND);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.col, 16);
    assert_non_null(strstr(d.msg, "client_token: env:MX_TEST_UNSET"));
    mx_config_free(cfg);
}

/*
 * Paths in a config file are the file's: written relative, they resolve
 * against its directory (as nginx, Caddy and systemd units do), whatever the
 * process's working directory; "~/" and absolute paths are kept.
 */
static void test_model_relative_paths(void **state)
{
    char cwd[1024];
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    (void)state;
    memset(&d, 0, sizeof(d));
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(mkdir(tmp_path("conf").s, 0700), 0);
    assert_int_equal(mkdir(tmp_path("elsewhere").s, 0700), 0);
    write_file(tmp_path("conf/rel.toml").s,
               "[listen]\ncert = \"certs/c.pem\"\nkey = \"./certs/k.pem\"\n"
               "[proxy]\ntrace = \"t.jsonl\"\nvault = \"../v/vault\"\nstate_dir = \"state\"\n"
               "[servers.kid]\ncommand = [\"./run.sh\"]\ncwd = \"work\"\n"
               "[servers.web]\nurl = \"https://w.example/\"\nca = \"ca.pem\"\n",
               0600);
    /* from another directory, naming the config by a relative path */
    assert_int_equal(chdir(tmp_path("elsewhere").s), 0);
    assert_int_equal(mx_config_load("../conf/rel.toml", &cfg, &d), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_string_equal(cfg->dir, tmp_path("conf").s);
    assert_string_equal(cfg->listen.cert, tmp_path("conf/certs/c.pem").s);
    assert_string_equal(cfg->listen.key, tmp_path("conf/certs/k.pem").s);
    assert_string_equal(cfg->proxy.trace, tmp_path("conf/t.jsonl").s);
    assert_string_equal(cfg->proxy.vault, tmp_path("conf/../v/vault").s);
    assert_string_equal(cfg->proxy.state_dir, tmp_path("conf/state").s);
    assert_string_equal(cfg->servers[0].cwd, tmp_path("conf/work").s);
    /* a command is looked up as the system does, not as a path of the file */
    assert_string_equal(cfg->servers[0].command.v[0], "./run.sh");
    assert_string_equal(cfg->servers[1].ca, tmp_path("conf/ca.pem").s);
    mx_config_free(cfg);

    /* "~/" and absolute paths are not the file's */
    write_file(tmp_path("conf/abs.toml").s,
               "[proxy]\ntrace = \"~/t.jsonl\"\nstate_dir = \"/var/tmp/mx\"\n", 0600);
    assert_int_equal(mx_config_load(tmp_path("conf/abs.toml").s, &cfg, &d), 0);
    assert_string_equal(cfg->dir, tmp_path("conf").s);
    assert_string_equal(cfg->proxy.trace, tmp_path("t.jsonl").s);
    assert_string_equal(cfg->proxy.state_dir, "/var/tmp/mx");
    mx_config_free(cfg);

    /* a config with no file (parsed from text) has the working directory */
    assert_int_equal(chdir(tmp_path("elsewhere").s), 0);
    const char *text = "[proxy]\ntrace = \"t.jsonl\"\n";
    assert_int_equal(mx_config_parse(NULL, text, strlen(text), &cfg, &d), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_string_equal(cfg->dir, tmp_path("elsewhere").s);
    assert_string_equal(cfg->proxy.trace, tmp_path("elsewhere/t.jsonl").s);
    mx_config_free(cfg);
}

/* A relative file: secret is the config file's too, and a failure names
 * the absolute path it tried, never a value. */
static void test_model_relative_file_secret(void **state)
{
    char cwd[1024];
    char canary[33];
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    (void)state;
    memset(&d, 0, sizeof(d));
    mx_rand_hex(canary, sizeof(canary));
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(mkdir(tmp_path("sconf").s, 0700), 0);
    assert_int_equal(mkdir(tmp_path("sconf/sub").s, 0700), 0);
    write_file(tmp_path("sconf/tok.txt").s, canary, 0600);
    write_file(tmp_path("sconf/sub/env.txt").s, "child", 0600);
    write_file(tmp_path("sconf/ok.toml").s,
               "[servers.up]\nurl = \"https://x.example/\"\nsecret = \"file:tok.txt\"\n"
               "[servers.kid]\ncommand = [\"x\"]\nenv = [\"TOKEN=file:./sub/env.txt\"]\n",
               0600);
    write_file(tmp_path("sconf/bad.toml").s,
               "[servers.up]\nurl = \"https://x.example/\"\nsecret = \"file:tok.txt\"\n"
               "[servers.gone]\nurl = \"https://y.example/\"\nsecret = \"file:missing.txt\"\n",
               0600);
    assert_int_equal(chdir(tmp_dir), 0);
    assert_int_equal(mx_config_load("sconf/ok.toml", &cfg, &d), 0);
    int rc = mx_config_resolve_secrets(cfg, &d);
    if (rc)
        print_error("%s\n", d.msg);
    assert_int_equal(rc, 0);
    assert_true(mx_secret_equal(cfg->servers[0].secret, canary, strlen(canary)));
    assert_true(mx_secret_equal(cfg->servers[1].env_secret[0], "child", 5));
    /* the reference is shown as written */
    assert_string_equal(cfg->servers[0].secret_ref, "file:tok.txt");
    mx_config_free(cfg);

    assert_int_equal(mx_config_load("sconf/bad.toml", &cfg, &d), 0);
    assert_int_equal(mx_config_resolve_secrets(cfg, &d), MX_ENOTFOUND);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(d.line, 6);
    assert_non_null(strstr(d.msg, "server 'gone': file:missing.txt"));
    assert_non_null(strstr(d.msg, tmp_path("sconf/missing.txt").s));
    assert_null(strstr(d.msg, canary));
    mx_config_free(cfg);
}

/* The default vault follows $XDG_CONFIG_HOME and the default state dir
 * $XDG_STATE_HOME; a relative value is ignored, as the spec says. */
static void test_model_xdg_defaults(void **state)
{
    (void)state;
    setenv("XDG_CONFIG_HOME", "/xdg-config", 1);
    setenv("XDG_STATE_HOME", "/xdg-state/", 1);
    struct mx_config *cfg = parse_ok("");
    assert_string_equal(cfg->proxy.vault, "/xdg-config/mcplex/vault");
    assert_string_equal(cfg->proxy.state_dir, "/xdg-state/mcplex");
    mx_config_free(cfg);
    setenv("XDG_CONFIG_HOME", "rel", 1);
    setenv("XDG_STATE_HOME", "", 1);
    cfg = parse_ok("");
    assert_string_equal(cfg->proxy.vault, tmp_path(".config/mcplex/vault").s);
    assert_string_equal(cfg->proxy.state_dir, tmp_path(".local/state/mcplex").s);
    mx_config_free(cfg);
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("XDG_STATE_HOME");
}

/*
 * Runs |fn| on the NULL-terminated argument list with stdout and stderr
 * captured into |out|; returns its exit status.
 */
static int run_cmd(int (*fn)(int, char **), char *out, size_t out_cap, ...)
{
    char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, out_cap);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 15;)
        argv[argc++] = strdup(a);
    va_end(ap);
    argv[argc] = NULL;

    struct path path_p = tmp_path("captured.txt");
    const char *path = path_p.s;
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && saved_out >= 0 && saved_err >= 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    int status = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, out, out_cap - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return status;
}

/* The keys of the merged /mcp endpoint: filters per server, paging, fan-out. */
static void test_model_aggregate_keys(void **state)
{
    (void)state;
    struct mx_config *cfg = parse_ok("[proxy]\n"
                                     "page_size = 7\n"
                                     "fanout_timeout = \"1500ms\"\n"
                                     "max_list_bytes = 1048576\n"
                                     "[servers.a]\n"
                                     "url = \"http://127.0.0.1:1/mcp\"\n"
                                     "max_list_bytes = 65536\n"
                                     "tools_deny = [\"*_secret\", \"rm\"]\n"
                                     "prompts = [\"greet*\"]\n"
                                     "prompts_deny = [\"greet_admin\"]\n"
                                     "[servers.b]\n"
                                     "url = \"http://127.0.0.1:2/mcp\"\n");
    assert_int_equal(cfg->proxy.page_size, 7);
    assert_int_equal(cfg->proxy.fanout_timeout_ms, 1500);
    const struct mx_server_cfg *a = &cfg->servers[0];
    assert_int_equal(a->tools_deny.cnt, 2);
    assert_string_equal(a->tools_deny.v[1], "rm");
    assert_int_equal(a->prompts.cnt, 1);
    assert_string_equal(a->prompts.v[0], "greet*");
    assert_int_equal(a->prompts_deny.cnt, 1);
    const struct mx_server_cfg *b = &cfg->servers[1];
    assert_int_equal(b->tools_deny.cnt, 0);
    assert_int_equal(b->prompts.cnt, 0);
    /* a server's own list cap, else [proxy]'s */
    assert_int_equal(a->max_list_bytes, 65536);
    assert_int_equal(b->max_list_bytes, 1048576);
    mx_config_free(cfg);

    cfg = parse_ok("[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n");
    assert_int_equal(cfg->proxy.page_size, 100);
    assert_int_equal(cfg->proxy.fanout_timeout_ms, 3000);
    assert_int_equal(cfg->proxy.max_list_bytes, 16 * 1024 * 1024);
    assert_int_equal(cfg->servers[0].max_list_bytes, 16 * 1024 * 1024);
    mx_config_free(cfg);

    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"[proxy]\npage_size = 0\n", "between 1 and 10000"},
        {"[proxy]\npage_size = 10001\n", "between 1 and 10000"},
        {"[proxy]\nfanout_timeout = 3\n", "duration"},
        {"[proxy]\nmax_list_bytes = 100\n", "between 65536 and 1073741824"},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nmax_list_bytes = 2147483648\n",
         "between 65536 and 1073741824"},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nprompts = [\"a b\"]\n",
         "non-empty without spaces"},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\ntools_deny = [\"\"]\n",
         "non-empty without spaces"},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nprompts_deny = \"x\"\n", "array"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        assert_int_equal(mx_config_parse("t.toml", bad[i].text, strlen(bad[i].text), &cfg, &d),
                         MX_EINVAL);
        assert_null(cfg);
        if (strstr(d.msg, bad[i].why) == NULL)
            fail_msg("%s: got \"%s\"", bad[i].text, d.msg);
    }
}

/* A literal in a secret-bearing place is refused at its position and by
 * key; the message never quotes the value. */
static void test_model_secret_literal_not_quoted(void **state)
{
    static const struct {
        const char *pre, *post, *key;
        int line;
    } cases[] = {
        {"[listen]\nclient_token = \"", "\"\n", "'client_token'", 2},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nsecret = \"", "\"\n", "'secret'", 3},
        {"[servers.a]\nurl = \"https://u:", "@x.example/\"\n", "'url'", 2},
        {"[servers.a]\nurl = \"https://x.example/a b", "\"\n", "'url'", 2},
        {"[servers.a]\ncommand = [\"x\"]\nenv = [\"K=", "\"]\n", "'env'", 3},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nwake = \"url:http://u:", "@h/\"\n",
         "'wake'", 3},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nwake = \"", "\"\n", "'wake'", 3},
        {"[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:T\"\nrefresh = \"", "\"\n",
         "'refresh'", 4},
    };
    char canary[33];
    struct mx_config *cfg = NULL;
    (void)state;
    mx_rand_hex(canary, sizeof(canary));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = mx_xasprintf("%s%s%s", cases[i].pre, canary, cases[i].post);
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        assert_int_equal(mx_config_parse("t.toml", text, strlen(text), &cfg, &d), MX_EINVAL);
        assert_null(cfg);
        if (strstr(d.msg, canary) || strstr(d.msg, cases[i].key) == NULL || d.line != cases[i].line)
            fail_msg("case %zu: %d:%d %s", i, d.line, d.col, d.msg);
        free(text);
    }
    /* other keys still quote what they refuse */
    const char *text = "[proxy]\nprefix = \"sometimes\"\n";
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_config_parse("t.toml", text, strlen(text), &cfg, &d), MX_EINVAL);
    assert_non_null(strstr(d.msg, "\"sometimes\""));
}

static void test_model_check_command(void **state)
{
    char out[8192], canary[33], text[1024];
    (void)state;
    mx_rand_hex(canary, sizeof(canary));
    setenv("MX_TEST_CHECK", canary, 1);
    setenv("MX_TEST_FWD", "fwd-value-7f3a", 1);
    unsetenv("MX_TEST_UNSET");
    struct path path_p = tmp_path("check.toml");
    const char *path = path_p.s;
    snprintf(text, sizeof(text),
             "[servers.good]\nurl = \"https://good.example/mcp\"\nsecret = \"env:MX_TEST_CHECK\"\n"
             "[servers.kid]\ncommand = [\"node\", \"s.js\"]\nenv = [\"HOME\", "
             "\"MX_TEST_FWD\", \"K=env:MX_TEST_CHECK\"]\n");
    write_file(path, text, 0644);
    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "-c", path, NULL), 0);
    assert_non_null(strstr(out, "server good: streamable-http, host good.example, auth bearer"));
    assert_non_null(strstr(out, "secret env:MX_TEST_CHECK: resolved"));
    assert_non_null(strstr(out, "server kid: stdio, command node"));
    assert_non_null(strstr(out, "env K=env:MX_TEST_CHECK: resolved"));
    /* a forwarded name, never its value; argv[0] only (arguments may hold
     * anything) */
    assert_non_null(strstr(out, "env MX_TEST_FWD: forwarded"));
    assert_null(strstr(out, "fwd-value-7f3a"));
    assert_null(strstr(out, "s.js"));
    assert_null(strstr(out, canary));

    write_file(path,
               "[servers.bad]\nurl = \"https://bad.example/\"\n"
               "secret = \"env:MX_TEST_UNSET\"\n",
               0644);
    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "-c", path, NULL), 1);
    snprintf(text, sizeof(text), "%s:3:10: server 'bad': env:MX_TEST_UNSET", path);
    assert_non_null(strstr(out, text));
    assert_non_null(strstr(out, "check failed"));

    write_file(path, "[servers.bad]\nurl = 1\n", 0644);
    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "-c", path, NULL), 1);
    snprintf(text, sizeof(text), "%s:2:7: 'url' must be a string", path);
    assert_non_null(strstr(out, text));

    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "--help", NULL), 0);
    assert_non_null(strstr(out, "usage: mcplex check"));
    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "--bogus", NULL), 2);
    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "-c", NULL), 2);
    assert_int_equal(
        run_cmd(mx_cmd_check, out, sizeof(out), "check", "--config=/nonexistent/mcplex.toml", NULL),
        1);
    assert_non_null(strstr(out, "/nonexistent/mcplex.toml: cannot read config"));
}

/* A config that gives mcplex nothing to serve is valid, and says what to add. */
static void test_model_no_servers_warns(void **state)
{
    char out[8192], want[1024];
    (void)state;
    struct path path_p = tmp_path("empty.toml");
    const char *path = path_p.s;

    static const struct {
        const char *text, *why;
    } cases[] = {
        {"# nothing yet\n", "the config is empty"},
        {"[listen]\naddress = \"127.0.0.1:8443\"\n", "no [servers.NAME] table"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_file(path, cases[i].text, 0644);
        assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "-c", path, NULL), 0);
        snprintf(want, sizeof(want),
                 "%s: warning: %s, so mcplex serves no upstream; add a server: [servers.NAME] "
                 "with url = \"https://HOST/mcp\" (or command = [\"PROGRAM\"])\n",
                 path, cases[i].why);
        if (strstr(out, want) == NULL)
            fail_msg("got:\n%s", out);
    }

    write_file(path, "[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n", 0644);
    assert_int_equal(run_cmd(mx_cmd_check, out, sizeof(out), "check", "-c", path, NULL), 0);
    assert_null(strstr(out, "warning"));
}

static int no_leaks(void **state)
{
    (void)state;
    return mx_config_live_cnt() == 0 && mx_secret_live_cnt() == 0 && mx_toml_live_cnt() == 0 ? 0
                                                                                             : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_model_design_example, no_leaks),
        cmocka_unit_test_teardown(test_model_secret_literal_not_quoted, no_leaks),
        cmocka_unit_test_teardown(test_model_defaults, no_leaks),
        cmocka_unit_test_teardown(test_model_server_defaults, no_leaks),
        cmocka_unit_test_teardown(test_model_every_key, no_leaks),
        cmocka_unit_test_teardown(test_model_servers_table_and_remote, no_leaks),
        cmocka_unit_test_teardown(test_model_errors_have_positions, no_leaks),
        cmocka_unit_test_teardown(test_model_errors_teach, no_leaks),
        cmocka_unit_test_teardown(test_model_bare_secret_not_quoted, no_leaks),
        cmocka_unit_test_teardown(test_model_path_expand, no_leaks),
        cmocka_unit_test_teardown(test_model_path_resolve, no_leaks),
        cmocka_unit_test_teardown(test_model_find, no_leaks),
        cmocka_unit_test_teardown(test_model_load, no_leaks),
        cmocka_unit_test_teardown(test_model_load_listen, no_leaks),
        cmocka_unit_test_teardown(test_model_resolve_secrets, no_leaks),
        cmocka_unit_test_teardown(test_model_relative_paths, no_leaks),
        cmocka_unit_test_teardown(test_model_relative_file_secret, no_leaks),
        cmocka_unit_test_teardown(test_model_xdg_defaults, no_leaks),
        cmocka_unit_test_teardown(test_model_aggregate_keys, no_leaks),
        cmocka_unit_test_teardown(test_model_check_command, no_leaks),
        cmocka_unit_test_teardown(test_model_no_servers_warns, no_leaks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
