/* SPDX-License-Identifier: MIT */
/*
 * The vault's promise, end to end: random canary secrets for two
 * sandbox-sim upstreams (a bearer token from the environment, a cookie from
 * a cmd: source) and for the client token (a 0600 file), the whole
 * scenario through mcplex (initialize, lists, calls at /mcp, also from the
 * official TypeScript SDK client, and at /mcp/<server>, refused requests,
 * one upstream killed mid-session and restarted, the client token rotated
 * and applied with `mcplex reload`, /health, /metrics), with
 * the trace on and the access log, once with JSON logs and once with text.
 * One upstream misbehaves and answers its own credential inside a tool
 * result: the trace must show it masked.
 * Afterwards no canary may appear in mcplex's log, the trace, `mcplex check`
 * output, any response header or body the test saw (but that deliberate
 * tool result, which mcplex passes through as tool content), and mcplex,
 * started with an unlimited core size and killed with SIGABRT, leaves no
 * core file: it made itself non-dumpable.
 *
 * The scenario is a table of steps (steps[] below) run in order against one
 * mcplex; a step that reloads the config goes into that table.
 */
#include <dirent.h>
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define COOKIE_NAME "__sbx_auth"

struct run {
    bool json_logs;
    char can_a[MX_IT_CANARY_SIZE]; /* alpha's bearer token (env:) */
    char can_b[MX_IT_CANARY_SIZE]; /* beta's cookie (cmd:) */
    char can_c[MX_IT_CANARY_SIZE]; /* the client token (file:) */
    char can_d[MX_IT_CANARY_SIZE]; /* the client token after the reload */
    int port;
    int beta_port;
    pid_t mcplex;
    pid_t beta;
    char *cfg_path;
    char *trace_path;
    char *seen_path; /* every response head and body the test saw */
    char *leak_path; /* the tool results that carry alpha's echoed credential */
    char *core_dir;  /* mcplex's working directory */
    char *bearer_hdr;
    char *sid_hdr;
};

/* ---- processes ---- */

/* sandbox-sim as |name| on 127.0.0.1:|port| (0: any), its credential in the
 * environment; with |cookie| it wants the cookie, else a bearer token. */
static pid_t start_sim(const char *name, const char *secret, bool cookie, bool leak, int *port)
{
    char *bin = mx_xasprintf("%s/sandbox-sim", mx_it_build_dir());
    char *listen = mx_xasprintf("127.0.0.1:%d", *port);
    char *pfname = mx_xasprintf("%s.port", name);
    char *port_file = mx_it_path(pfname);
    char *env_kv = mx_xasprintf("MX_SIM_SECRET=%s", secret);
    const char *env[] = {env_kv, NULL};
    const char *argv[16];
    size_t n = 0;
    unlink(port_file);
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--port-file";
    argv[n++] = port_file;
    argv[n++] = "--name";
    argv[n++] = name;
    if (cookie) {
        argv[n++] = "--cookie";
        argv[n++] = COOKIE_NAME;
        argv[n++] = "--cookie-env";
    } else {
        argv[n++] = "--bearer-env";
    }
    argv[n++] = "MX_SIM_SECRET";
    if (leak) {
        argv[n++] = "--whoami-credential";
        argv[n++] = "yes";
    }
    argv[n] = NULL;
    pid_t pid = mx_it_spawn(name, argv, env, NULL);
    assert_true(pid > 0);
    int p = mx_it_port_file(pid, port_file, MX_IT_START_TIMEOUT_MS);
    assert_true(p > 0);
    *port = p;
    char *stats = mx_xasprintf("http://127.0.0.1:%d/__stats", p);
    assert_true(mx_it_wait_http(stats, MX_IT_START_TIMEOUT_MS) > 0);
    free(stats);
    free(bin);
    free(listen);
    free(pfname);
    free(port_file);
    free(env_kv);
    return pid;
}

/* |argv| after a shell has set an unlimited core size and gone to |dir|:
 * the process keeps the shell's pid (exec). */
static pid_t spawn_with_cores(const char *name, const char *dir, const char *const *argv,
                              const char *const *env)
{
    const char *sh[24];
    size_t n = 0;
    sh[n++] = "/bin/sh";
    sh[n++] = "-c";
    sh[n++] = "ulimit -c unlimited && cd \"$0\" && exec \"$@\"";
    sh[n++] = dir;
    for (const char *const *a = argv; *a && n < 23; a++)
        sh[n++] = *a;
    sh[n] = NULL;
    return mx_it_spawn(name, sh, env, NULL);
}

/* Kill |pid| with SIGABRT; returns whether the kernel wrote a core. */
static bool abort_dumped(pid_t pid)
{
    assert_int_equal(mx_it_signal(pid, SIGABRT), 0);
    int st = mx_it_wait_exit(pid, 10000);
    assert_true(st >= 0);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
    return WCOREDUMP(st) != 0;
}

static bool dir_has_core(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool found = false;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        found |= strncmp(e->d_name, "core", 4) == 0;
    closedir(d);
    return found;
}

/* ---- HTTP, with everything seen kept ---- */

static void keep(const char *path, const char *what, long status, const char *head,
                 const char *body)
{
    char *old = mx_it_read_file(path, NULL);
    char *all = mx_xasprintf("%s=== %s -> %ld\n%s\n%s\n", old ? old : "", what, status,
                             head ? head : "", body ? body : "");
    assert_int_equal(mx_it_write_file(path, all, strlen(all)), 0);
    free(old);
    free(all);
}

/* One exchange with mcplex; the response goes to the seen file (or, with
 * |leak|, to the file of deliberate leaks). Returns the body (caller frees). */
static char *xchg(struct run *r, const char *method, const char *path, const char *body,
                  bool with_session, long want, bool leak)
{
    const char *h[8];
    size_t n = 0;
    h[n++] = r->bearer_hdr;
    h[n++] = "Content-Type: application/json";
    h[n++] = "Accept: application/json, text/event-stream";
    if (with_session && r->sid_hdr) {
        h[n++] = r->sid_hdr;
        h[n++] = "MCP-Protocol-Version: 2025-06-18";
    }
    h[n] = NULL;
    char *url = mx_xasprintf("http://127.0.0.1:%d%s", r->port, path);
    long status = 0;
    char *head = NULL, *resp = NULL;
    assert_int_equal(mx_it_http_full(method, url, h, body, 20000, &status, &head, &resp), 0);
    char *what = mx_xasprintf("%s %s %s", method, path, body ? body : "");
    keep(leak ? r->leak_path : r->seen_path, what, status, head, resp);
    if (want && status != want)
        fail_msg("%s: status %ld, wanted %ld: %s", what, status, want, resp ? resp : "");
    if (r->sid_hdr == NULL && head) {
        const char *sid = strcasestr(head, "mcp-session-id:");
        if (sid) {
            sid += strlen("mcp-session-id:");
            while (*sid == ' ')
                sid++;
            r->sid_hdr = mx_xasprintf("Mcp-Session-Id: %.*s", (int)strcspn(sid, "\r\n"), sid);
        }
    }
    free(what);
    free(url);
    free(head);
    return resp ? resp : mx_xstrdup("");
}

static void xchg_expect(struct run *r, const char *method, const char *path, const char *body,
                        bool with_session, long want, const char *needle)
{
    char *resp = xchg(r, method, path, body, with_session, want, false);
    if (needle && strstr(resp, needle) == NULL)
        fail_msg("%s %s: no '%s' in %s", method, path, needle, resp);
    free(resp);
}

/* ---- the scenario ---- */

static void step_start(struct run *r)
{
    int alpha_port = 0;
    r->beta_port = 0;
    mx_it_canary(r->can_a, sizeof(r->can_a));
    mx_it_canary(r->can_b, sizeof(r->can_b));
    mx_it_canary(r->can_c, sizeof(r->can_c));
    assert_true(start_sim("alpha", r->can_a, false, true, &alpha_port) > 0);
    r->beta = start_sim("beta", r->can_b, true, false, &r->beta_port);

    char *beta_file = mx_it_path("beta.secret");
    char *token_file = mx_it_path("client.token");
    assert_int_equal(mx_it_write_file(beta_file, r->can_b, strlen(r->can_b)), 0);
    assert_int_equal(mx_it_write_file(token_file, r->can_c, strlen(r->can_c)), 0);
    r->trace_path = mx_it_path("trace.jsonl");
    r->seen_path = mx_it_path("seen.txt");
    r->leak_path = mx_it_path("leaked-tool-results.txt");
    r->core_dir = mx_it_path("cores");
    assert_int_equal(mkdir(r->core_dir, 0700), 0);
    r->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "client_token = \"file:%s\"\n"
                             "[proxy]\ntrace = \"%s\"\nstate_dir = \"%s\"\nwake_timeout = \"2s\"\n"
                             "[servers.alpha]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"env:MX_CANARY_ALPHA\"\n"
                             "[servers.beta]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"cookie:" COOKIE_NAME "\"\nsecret = \"cmd:/bin/cat %s\"\n",
                             r->port, token_file, r->trace_path, mx_it_dir(), alpha_port,
                             r->beta_port, beta_file);
    r->cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(r->cfg_path, cfg, strlen(cfg)), 0);
    r->bearer_hdr = mx_xasprintf("Authorization: Bearer %s", r->can_c);

    /* mcplex check resolves every reference and prints names only */
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *env_a = mx_xasprintf("MX_CANARY_ALPHA=%s", r->can_a);
    const char *env[] = {env_a, NULL};
    const char *check[] = {bin, "check", "-c", r->cfg_path, NULL};
    char *out = NULL;
    assert_int_equal(mx_it_run("mcplex-check", check, env, 20000, &out), 0);
    assert_non_null(strstr(out, "env:MX_CANARY_ALPHA"));
    free(out);

    const char *serve[] = {bin,
                           "serve",
                           "-c",
                           r->cfg_path,
                           "--access-log",
                           "--log-format",
                           r->json_logs ? "json" : "text",
                           NULL};
    r->mcplex = spawn_with_cores("mcplex", r->core_dir, serve, env);
    assert_true(r->mcplex > 0);
    char *health = mx_xasprintf("http://127.0.0.1:%d/health", r->port);
    assert_int_equal(mx_it_wait_http_status(health, 200, MX_IT_START_TIMEOUT_MS), 0);
    free(health);
    free(env_a);
    free(bin);
    free(cfg);
    free(beta_file);
    free(token_file);
}

static void step_session(struct run *r)
{
    xchg_expect(r, "POST", "/mcp",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                "\"name\":\"canary\",\"version\":\"1\"}}}",
                false, 200, "\"result\"");
    assert_non_null(r->sid_hdr);
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                true, 202, NULL);
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", true,
                200, "alpha_whoami");
    xchg_expect(r, "POST", "/mcp",
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"beta_echo\",\"arguments\":{\"message\":\"to beta\"}}}",
                true, 200, "to beta");
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"prompts/list\"}",
                true, 200, "\"result\"");
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/list\"}",
                true, 200, "\"result\"");
}

/* the official TypeScript SDK client, with the client token */
static void step_sdk_client(struct run *r)
{
    json_t *out = NULL;
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", r->port);
    assert_int_equal(mx_it_client(url, "call",
                                  "{\"name\":\"beta_echo\",\"arguments\":{\"message\":\"sdk\"},"
                                  "\"terminate\":true}",
                                  r->can_c, &out),
                     0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    char *text = json_dumps(out, JSON_COMPACT);
    keep(r->seen_path, "SDK client call beta_echo", 200, NULL, text);
    assert_non_null(strstr(text, "sdk"));
    free(text);
    json_decref(out);
    free(url);
}

/* alpha answers whoami with the credential it got: the client sees it (tool
 * content passes through), the trace must not. */
static void step_leaky_upstream(struct run *r)
{
    char *a = xchg(r, "POST", "/mcp",
                   "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"alpha_whoami\",\"arguments\":{}}}",
                   true, 200, true);
    assert_non_null(strstr(a, r->can_a)); /* the test reaches the leak */
    free(a);
    /* the same through /mcp/alpha, one upstream alone */
    xchg_expect(r, "POST", "/mcp/alpha",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                "\"name\":\"canary\",\"version\":\"1\"}}}",
                false, 200, "\"result\"");
}

/* beta dies mid-session (SIGKILL by pid), a call fails cleanly, beta comes
 * back on its port with no sessions, and the next call works again. */
static void step_crash_restart(struct run *r)
{
    assert_int_equal(mx_it_signal(r->beta, SIGKILL), 0);
    assert_true(mx_it_wait_exit(r->beta, 5000) >= 0);
    xchg_expect(r, "POST", "/mcp",
                "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"beta_echo\",\"arguments\":{\"message\":\"while down\"}}}",
                true, 200, "\"error\"");
    int port = r->beta_port;
    r->beta = start_sim("beta", r->can_b, true, false, &port);
    assert_int_equal(port, r->beta_port);
    xchg_expect(r, "POST", "/mcp",
                "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"beta_echo\",\"arguments\":{\"message\":\"back again\"}}}",
                true, 200, "back again");
}

static void step_refusals(struct run *r)
{
    /* a wrong client token, an unknown session, a bad body */
    char *good = r->bearer_hdr;
    r->bearer_hdr = mx_xstrdup("Authorization: Bearer wrong");
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}", false, 403,
                "client token");
    free(r->bearer_hdr);
    r->bearer_hdr = good;
    char *sid = r->sid_hdr;
    r->sid_hdr = mx_xstrdup("Mcp-Session-Id: 00000000000000000000000000000000");
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}", true, 404,
                NULL);
    free(r->sid_hdr);
    r->sid_hdr = sid;
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":", true, 400, NULL);
    xchg_expect(r, "POST", "/mcp/nosuch", "{}", false, 404, NULL);
}

/* The client token is rotated in its file and `mcplex reload` applies it:
 * every secret reference is resolved again (the cmd: source runs again),
 * the old token is refused, the new one works, and the open session and
 * both upstreams (unchanged) carry on. */
static void step_reload(struct run *r)
{
    mx_it_canary(r->can_d, sizeof(r->can_d));
    char *token_file = mx_it_path("client.token");
    assert_int_equal(mx_it_write_file(token_file, r->can_d, strlen(r->can_d)), 0);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "reload", "-c", r->cfg_path, NULL};
    char *out = NULL;
    assert_int_equal(mx_it_run("mcplex-reload", argv, NULL, 40000, &out), 0);
    assert_non_null(strstr(out, "reloaded: 2 upstreams"));
    free(out);
    /* the old token is refused now */
    xchg_expect(r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"ping\"}", true, 403,
                NULL);
    free(r->bearer_hdr);
    r->bearer_hdr = mx_xasprintf("Authorization: Bearer %s", r->can_d);
    xchg_expect(r, "POST", "/mcp",
                "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"beta_echo\",\"arguments\":{\"message\":\"after reload\"}}}",
                true, 200, "after reload");
    xchg_expect(r, "POST", "/mcp",
                "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"alpha_echo\",\"arguments\":{\"message\":\"alpha after reload\"}}}",
                true, 200, "alpha after reload");
    xchg_expect(r, "GET", "/health", NULL, false, 200, "\"ok\":1");
    free(bin);
    free(token_file);
}

static void step_endpoints(struct run *r)
{
    xchg_expect(r, "GET", "/health", NULL, false, 200, "alpha");
    xchg_expect(r, "GET", "/metrics", NULL, false, 200, "mcplex_upstream_requests_total");
    xchg_expect(r, "DELETE", "/mcp", NULL, true, 0, NULL);
}

/* Kill mcplex the way a crash would: its core size is unlimited, yet no
 * core may be written, because serve made the process non-dumpable. */
static void step_crash_mcplex(struct run *r)
{
    assert_false(abort_dumped(r->mcplex));
    assert_false(dir_has_core(r->core_dir));
}

struct step {
    const char *name;
    void (*fn)(struct run *r);
};

/* In order. The reload comes after the crash and restart of an upstream
 * (the upstreams and the session are up then), and the endpoints and the
 * core checks that follow cover what the reload did. */
static const struct step steps[] = {
    {"start", step_start},
    {"session", step_session},
    {"SDK client", step_sdk_client},
    {"leaky upstream", step_leaky_upstream},
    {"crash and restart an upstream", step_crash_restart},
    {"reload with a rotated client token", step_reload},
    {"refusals", step_refusals},
    {"health and metrics", step_endpoints},
    {"crash mcplex", step_crash_mcplex},
};

static void scan_everything(struct run *r)
{
    char *log = mx_it_path("mcplex.log");
    char *check = mx_it_path("mcplex-check.log");
    char *reload = mx_it_path("mcplex-reload.log");
    const char *paths[] = {log, check, reload, r->trace_path, r->seen_path, r->core_dir, NULL};
    const char *canaries[] = {r->can_a, r->can_b, r->can_c, r->can_d};
    for (size_t i = 0; i < 4; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(paths, canaries[i], &hits);
        for (char **h = hits; n > 0 && h && *h; h++)
            fprintf(stderr, "canary %zu found in %s\n", i, *h);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
    /* the echoed credential reached the trace masked, and is still there as
     * text: the redaction, not a missing line, keeps it out */
    char *trace = mx_it_read_file(r->trace_path, NULL);
    assert_non_null(trace);
    assert_non_null(strstr(trace, "alpha got: Bearer "));
    free(trace);
    char *text = mx_it_read_file(log, NULL);
    assert_non_null(text);
    assert_true(r->json_logs ? text[0] == '{' : text[0] != '{');
    assert_non_null(strstr(text, "/mcp")); /* the access log is on */
    free(text);
    free(log);
    free(check);
    free(reload);
}

static void run_free(struct run *r)
{
    free(r->cfg_path);
    free(r->trace_path);
    free(r->seen_path);
    free(r->leak_path);
    free(r->core_dir);
    free(r->bearer_hdr);
    free(r->sid_hdr);
}

static void run_scenario(bool json_logs)
{
    struct run r = {0};
    r.json_logs = json_logs;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        fprintf(stderr, "canary: %s\n", steps[i].name);
        steps[i].fn(&r);
    }
    scan_everything(&r);
    run_free(&r);
}

static void test_canary_json_logs(void **state)
{
    (void)state;
    run_scenario(true);
    mx_it_pass();
}

static void test_canary_text_logs(void **state)
{
    (void)state;
    run_scenario(false);
    mx_it_pass();
}

/* The core check above means something only where cores are written: a
 * dumpable process started the same way leaves one. */
static void test_canary_cores_are_possible_here(void **state)
{
    (void)state;
    char *dir = mx_it_path("cores");
    assert_int_equal(mkdir(dir, 0700), 0);
    const char *argv[] = {"/bin/sleep", "30", NULL};
    pid_t pid = spawn_with_cores("sleeper", dir, argv, NULL);
    assert_true(pid > 0);
    usleep(200 * 1000);
    assert_true(abort_dumped(pid));
    assert_true(dir_has_core(dir));
    free(dir);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_canary_cores_are_possible_here, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_canary_json_logs, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_canary_text_logs, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
