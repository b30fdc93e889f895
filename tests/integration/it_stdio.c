/* SPDX-License-Identifier: MIT */
/*
 * stdio upstreams end to end: server-everything in stdio mode as `command`
 * upstreams beside sandbox-sim over HTTP, driven by the official SDK client
 * through the merged /mcp and through /mcp/<server>. Checks lists, calls,
 * progress and cancellation; that a child's environment holds exactly its
 * allowlist (and no other upstream's canary); that a child killed between
 * calls and one killed during a call are started again at the next call;
 * that a child writing garbage to stdout and noise to stderr keeps working
 * (and its stderr reaches the log, redacted and rate-limited); that a
 * per-client server gets a process per client session, ended with it; that
 * a slow command that loses the first message still answers the client's
 * first request; that start = "eager" starts a process before any client;
 * and no canary in anything mcplex printed or wrote.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char ev_token[MX_IT_CANARY_SIZE];   /* EV_TOKEN of the "ev" child */
    char junk_token[MX_IT_CANARY_SIZE]; /* MX_IT_JUNK_TOKEN of the "junk" child */
    char sim_token[MX_IT_CANARY_SIZE];  /* bearer of sandbox-sim */
    char stray[MX_IT_CANARY_SIZE];      /* in mcplex's environment, allowlisted nowhere */
    int port;
    pid_t mcplex;
    char *url;
    char *log;
    char *trace;
    char *junk_pids;
    char *pc_pids;
};

static char *secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

static char *everything_js(void)
{
    return mx_xasprintf(
        "%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        mx_it_source_dir());
}

static char *wrapper(void)
{
    return mx_xasprintf("%s/tests/integration/stdio-child.sh", mx_it_source_dir());
}

static size_t read_pids(const char *path, pid_t *out, size_t cap);
static size_t wait_pids(const char *path, size_t have, pid_t *out, size_t cap, int ms);

static void start_world(struct world *w)
{
    int sim_port;
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    mx_it_canary(w->junk_token, sizeof(w->junk_token));
    mx_it_canary(w->sim_token, sizeof(w->sim_token));
    mx_it_canary(w->stray, sizeof(w->stray));
    /* what mcplex's environment holds; the children see only what is named */
    assert_int_equal(setenv("MX_IT_FWD", "forwarded-value", 1), 0);
    assert_int_equal(setenv("MX_IT_STRAY", w->stray, 1), 0);
    assert_int_equal(unsetenv("MX_IT_UNSET"), 0);
    assert_true(mx_it_start_sim("sim", w->sim_token, NULL, &sim_port) > 0);

    char *ev_s = secret_file("ev.secret", w->ev_token);
    char *junk_s = secret_file("junk.secret", w->junk_token);
    char *sim_s = secret_file("sim.secret", w->sim_token);
    char *js = everything_js();
    char *sh = wrapper();
    w->junk_pids = mx_it_path("junk.pids");
    w->pc_pids = mx_it_path("pc.pids");
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf(
        "[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
        "[proxy]\ntrace = \"%s\"\nfanout_timeout = \"20s\"\nrequest_timeout = \"30s\"\n"
        "[servers.ev]\ncommand = [\"node\", \"%s\", \"stdio\"]\n"
        "env = [\"PATH\", \"MX_IT_FWD\", \"MX_IT_UNSET\", \"EV_TOKEN=file:%s\"]\n"
        "[servers.junk]\nstart = \"eager\"\n"
        "command = [\"/bin/sh\", \"%s\", \"--pid-file\", \"%s\", \"--junk\", \"--\", \"node\", "
        "\"%s\", \"stdio\"]\n"
        "env = [\"PATH\", \"MX_IT_JUNK_TOKEN=file:%s\"]\n"
        "[servers.pc]\nsession = \"per-client\"\n"
        "command = [\"/bin/sh\", \"%s\", \"--pid-file\", \"%s\", \"--\", \"node\", \"%s\", "
        "\"stdio\"]\n"
        "env = [\"PATH\"]\n"
        "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
        w->port, w->trace, js, ev_s, sh, w->junk_pids, js, junk_s, sh, w->pc_pids, js, sim_port,
        sim_s);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    w->log = mx_it_path("mcplex.log");
    /* start = "eager": running before any client asked; the others wait */
    pid_t pids[4];
    assert_int_equal(wait_pids(w->junk_pids, 0, pids, 4, 10000), 1);
    assert_int_equal(read_pids(w->pc_pids, pids, 4), 0);
    free(ev_s);
    free(junk_s);
    free(sim_s);
    free(js);
    free(sh);
    free(cfg);
    free(cfg_path);
}

static void free_world(struct world *w)
{
    free(w->url);
    free(w->log);
    free(w->trace);
    free(w->junk_pids);
    free(w->pc_pids);
}

static json_t *client_at(const char *url, const char *scenario, const char *args)
{
    json_t *out = NULL;
    int rc = mx_it_client(url, scenario, args, NULL, &out);
    if (rc != 0 || out == NULL)
        fail_msg("client %s %s: exit %d", scenario, args ? args : "", rc);
    return out;
}

static const char *result_text(json_t *out)
{
    json_t *r = json_object_get(out, "result");
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

static bool has_name(json_t *names, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

/* The pids a wrapper wrote, one a line; returns how many (at most |cap|). */
static size_t read_pids(const char *path, pid_t *out, size_t cap)
{
    char *text = mx_it_read_file(path, NULL);
    size_t n = 0;
    if (text == NULL)
        return 0;
    for (char *p = text; *p && n < cap;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v > 0)
            out[n++] = (pid_t)v;
        p = end;
        while (*p == '\n')
            p++;
    }
    free(text);
    return n;
}

static bool pid_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* Wait up to |ms| for |pid| (a child of mcplex) to be gone and reaped. */
static bool wait_gone(pid_t pid, int ms)
{
    for (int waited = 0; waited < ms; waited += 50) {
        if (pid_gone(pid))
            return true;
        usleep(50 * 1000);
    }
    return pid_gone(pid);
}

/* Wait up to |ms| for |path| to list more than |have| pids. */
static size_t wait_pids(const char *path, size_t have, pid_t *out, size_t cap, int ms)
{
    size_t n = 0;
    for (int waited = 0; waited <= ms; waited += 50) {
        n = read_pids(path, out, cap);
        if (n > have)
            return n;
        usleep(50 * 1000);
    }
    return n;
}

static void assert_lists(const struct world *w)
{
    json_t *out = client_at(w->url, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    /* every upstream's echo and get-env collide: each is prefixed */
    static const char *const want[] = {
        "ev_echo",    "junk_echo",    "pc_echo",     "sim_echo",
        "ev_get-env", "junk_get-env", "sim_get-env", "ev_trigger-long-running-operation",
        "slow",       "add",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!has_name(tools, want[i]))
            fail_msg("no tool %s in the merged list", want[i]);
    }
    assert_true(json_array_size(json_object_get(json_object_get(out, "prompts"), "names")) > 0);
    assert_true(json_array_size(json_object_get(json_object_get(out, "resources"), "names")) > 0);
    json_decref(out);
}

static void assert_calls(const struct world *w)
{
    json_t *out =
        client_at(w->url, "call", "{\"name\":\"ev_echo\",\"arguments\":{\"message\":\"a\"}}");
    assert_string_equal(result_text(out), "Echo: a");
    json_decref(out);
    out = client_at(w->url, "call", "{\"name\":\"sim_echo\",\"arguments\":{\"message\":\"b\"}}");
    assert_non_null(strstr(result_text(out), "b"));
    json_decref(out);
    /* the garbage writer works like the others */
    out = client_at(w->url, "call", "{\"name\":\"junk_echo\",\"arguments\":{\"message\":\"c\"}}");
    assert_string_equal(result_text(out), "Echo: c");
    json_decref(out);
}

static void assert_env(const struct world *w)
{
    json_t *out = client_at(w->url, "call", "{\"name\":\"ev_get-env\"}");
    const char *text = result_text(out);
    assert_non_null(text);
    json_error_t err;
    json_t *env = json_loads(text, 0, &err);
    assert_non_null(env);
    /* exactly the allowlist: MX_IT_UNSET is unset in mcplex, so absent */
    assert_int_equal(json_object_size(env), 3);
    assert_non_null(json_object_get(env, "PATH"));
    assert_string_equal(json_string_value(json_object_get(env, "MX_IT_FWD")), "forwarded-value");
    assert_string_equal(json_string_value(json_object_get(env, "EV_TOKEN")), w->ev_token);
    assert_null(json_object_get(env, "HOME"));
    assert_null(strstr(text, w->junk_token));
    assert_null(strstr(text, w->sim_token));
    assert_null(strstr(text, w->stray));
    json_decref(env);
    json_decref(out);

    /* through /mcp/<server> as well: that endpoint's own process */
    char *url = mx_xasprintf("%s/ev", w->url);
    out = client_at(url, "call", "{\"name\":\"get-env\"}");
    text = result_text(out);
    assert_non_null(text);
    env = json_loads(text, 0, &err);
    assert_non_null(env);
    assert_int_equal(json_object_size(env), 3);
    assert_string_equal(json_string_value(json_object_get(env, "EV_TOKEN")), w->ev_token);
    assert_null(strstr(text, w->junk_token));
    assert_null(strstr(text, w->stray));
    json_decref(env);
    json_decref(out);
    free(url);
}

static void assert_progress_and_cancel(const struct world *w)
{
    json_t *out = client_at(w->url, "progress",
                            "{\"name\":\"ev_trigger-long-running-operation\","
                            "\"arguments\":{\"duration\":1,\"steps\":4}}");
    json_t *progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 4);
    assert_non_null(strstr(result_text(out), "Steps: 4"));
    double first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) - first >= 500.0);
    json_decref(out);

    out = client_at(w->url, "cancel",
                    "{\"name\":\"ev_trigger-long-running-operation\","
                    "\"arguments\":{\"duration\":20,\"steps\":40},"
                    "\"after_progress\":2,\"settle_ms\":700}");
    assert_true(json_is_true(json_object_get(out, "cancelled")));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) < 5000.0);
    json_decref(out);
    /* the cancellation reached the process */
    assert_int_equal(mx_it_trace_count(w->trace, "c2s", "ev", "notifications/cancelled"), 1);

    /* progress through /mcp/<server> */
    char *url = mx_xasprintf("%s/ev", w->url);
    out = client_at(url, "progress",
                    "{\"name\":\"trigger-long-running-operation\","
                    "\"arguments\":{\"duration\":0.6,\"steps\":3}}");
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_non_null(strstr(result_text(out), "Steps: 3"));
    json_decref(out);
    free(url);
}

static void assert_restart(const struct world *w)
{
    pid_t pids[16];
    size_t n = read_pids(w->junk_pids, pids, 16);
    assert_true(n >= 1);
    pid_t victim = pids[n - 1];
    /* killed between calls: the next call starts it again */
    assert_int_equal(kill(victim, SIGKILL), 0);
    assert_true(wait_gone(victim, 5000));
    json_t *out =
        client_at(w->url, "call", "{\"name\":\"junk_echo\",\"arguments\":{\"message\":\"again\"}}");
    assert_string_equal(result_text(out), "Echo: again");
    json_decref(out);
    size_t m = read_pids(w->junk_pids, pids, 16);
    assert_int_equal(m, n + 1);
    assert_true(pids[m - 1] != victim);

    /* killed during a call: that call fails with a clear error, not
     * repeated; the next one works */
    victim = pids[m - 1];
    pid_t c = mx_it_client_start(w->url, "progress",
                                 "{\"name\":\"junk_trigger-long-running-operation\","
                                 "\"arguments\":{\"duration\":8,\"steps\":8}}",
                                 NULL);
    assert_true(c > 0);
    /* the call reached the process */
    for (int waited = 0; waited < 20000; waited += 50) {
        if (mx_it_trace_count(w->trace, "c2s", "junk", "trigger-long-running-operation") > 0)
            break;
        usleep(50 * 1000);
    }
    assert_int_equal(mx_it_trace_count(w->trace, "c2s", "junk", "trigger-long-running-operation"),
                     1);
    usleep(300 * 1000);
    assert_int_equal(kill(victim, SIGKILL), 0);
    json_t *res = NULL;
    assert_int_equal(mx_it_node_finish(c, MX_IT_NODE_TIMEOUT_MS, &res), 0);
    json_t *e = json_object_get(json_object_get(res, "result"), "error");
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32013);
    const char *msg = json_string_value(json_object_get(e, "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "upstream 'junk' was killed by signal 9"));
    assert_true(json_number_value(json_object_get(res, "result_t_ms")) < 6000.0);
    json_decref(res);
    out =
        client_at(w->url, "call", "{\"name\":\"junk_echo\",\"arguments\":{\"message\":\"back\"}}");
    assert_string_equal(result_text(out), "Echo: back");
    json_decref(out);
}

static void assert_per_client(const struct world *w)
{
    pid_t pids[16];
    size_t before = read_pids(w->pc_pids, pids, 16);
    /* two client sessions, one after the other, each ending its session */
    for (int i = 0; i < 2; i++) {
        json_t *out = client_at(
            w->url, "call",
            "{\"name\":\"pc_echo\",\"arguments\":{\"message\":\"pc\"},\"terminate\":true}");
        assert_string_equal(result_text(out), "Echo: pc");
        json_decref(out);
    }
    size_t n = read_pids(w->pc_pids, pids, 16);
    /* a process per client session, each ended with its session */
    assert_true(n >= before + 2);
    int gone = 0;
    for (size_t i = before; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            assert_true(pids[i] != pids[j]);
        if (wait_gone(pids[i], 8000))
            gone++;
    }
    assert_true(gone >= 2);
}

static void assert_log(const struct world *w)
{
    char *log = mx_it_read_file(w->log, NULL);
    assert_non_null(log);
    /* stderr lines in the log with the server's name, never in the protocol */
    assert_non_null(strstr(log, "[junk] noise line 0"));
    assert_non_null(strstr(log, "[ev] Starting default (STDIO) server..."));
    /* the child's own secret, printed to stderr, blanked out */
    assert_non_null(strstr(log, "[junk] the token is ****"));
    /* 300 lines at once: the rest is counted, not logged */
    assert_non_null(strstr(log, "stderr lines not logged"));
    assert_null(strstr(log, "[junk] noise line 299"));
    assert_non_null(strstr(log, "up:junk wrote a line that is not JSON-RPC on stdout; ignored"));
    assert_non_null(strstr(log, "[junk] 1 stdout lines over 16777216 bytes dropped"));
    assert_non_null(strstr(log, "up:junk was killed by signal 9"));
    free(log);
}

static void assert_no_canary(const struct world *w)
{
    const char *canaries[] = {w->ev_token, w->junk_token, w->sim_token, w->stray};
    const char *files[] = {w->log, w->trace, NULL};
    for (size_t i = 0; i < sizeof(canaries) / sizeof(canaries[0]); i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, canaries[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
}

static void stop_mcplex(const struct world *w)
{
    pid_t pids[16];
    size_t n = read_pids(w->junk_pids, pids, 16);
    assert_int_equal(mx_it_signal(w->mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w->mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* its children went with it */
    assert_true(n >= 1);
    assert_true(wait_gone(pids[n - 1], 3000));
}

static void test_stdio_beside_http(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_lists(&w);
    assert_calls(&w);
    assert_env(&w);
    assert_progress_and_cancel(&w);
    assert_restart(&w);
    assert_per_client(&w);
    stop_mcplex(&w);
    assert_log(&w);
    assert_no_canary(&w);
    free_world(&w);
    mx_it_pass();
}

/*
 * A command that takes 3 s to start and then loses the first line it was
 * sent (an installer re-exec'ing): initialize goes again, and the client's
 * first request, through /mcp and through /mcp/<server>, is answered.
 * /mcp/<server> is the same engine as /mcp, over the same process: a second
 * mcplex, whose first request comes at /mcp/<server>, starts its own.
 */
static void test_stdio_slow_start(void **state)
{
    (void)state;
    int sim_port;
    char sim_token[MX_IT_CANARY_SIZE];
    mx_it_canary(sim_token, sizeof(sim_token));
    assert_true(mx_it_start_sim("sim", sim_token, NULL, &sim_port) > 0);
    char *sim_s = secret_file("sim.secret", sim_token);
    char *js = everything_js();
    char *sh = wrapper();
    char *pids_path = mx_it_path("slow.pids");
    int port = mx_it_free_port();
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                     "[proxy]\nfanout_timeout = \"20s\"\n"
                     "[servers.slow]\n"
                     "command = [\"/bin/sh\", \"%s\", \"--pid-file\", \"%s\", \"--sleep\", \"3\", "
                     "\"--swallow\", \"--\", \"node\", \"%s\", \"stdio\"]\n"
                     "env = [\"PATH\"]\n"
                     "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
                     port, sh, pids_path, js, sim_port, sim_s);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);

    /* the first thing the client does, initialize (which waits for every
     * upstream here), and the first call */
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out =
        client_at(url, "call", "{\"name\":\"slow_echo\",\"arguments\":{\"message\":\"first\"}}");
    assert_string_equal(result_text(out), "Echo: first");
    assert_true(json_number_value(json_object_get(json_object_get(out, "timings"), "connect_ms")) >=
                2500.0);
    json_decref(out);
    /* /mcp/<server> of the same mcplex: the process /mcp started answers */
    char *one = mx_xasprintf("http://127.0.0.1:%d/mcp/slow", port);
    out = client_at(one, "call", "{\"name\":\"echo\",\"arguments\":{\"message\":\"one\"}}");
    assert_string_equal(result_text(out), "Echo: one");
    json_decref(out);
    pid_t pids[4];
    assert_int_equal(read_pids(pids_path, pids, 4), 1);

    /* a second mcplex, its first request at /mcp/<server>: its own
     * process, again slow, again answered */
    int port2 = mx_it_free_port();
    char *cfg2 =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                     "[servers.slow]\n"
                     "command = [\"/bin/sh\", \"%s\", \"--pid-file\", \"%s\", \"--sleep\", \"3\", "
                     "\"--swallow\", \"--\", \"node\", \"%s\", \"stdio\"]\n"
                     "env = [\"PATH\"]\n",
                     port2, sh, pids_path, js);
    char *cfg2_path = mx_it_path("mcplex-2.toml");
    assert_int_equal(mx_it_write_file(cfg2_path, cfg2, strlen(cfg2)), 0);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *log2_path = mx_it_path("mcplex-2.log");
    const char *argv2[] = {bin, "serve", "-c", cfg2_path, NULL};
    pid_t mcplex2 = mx_it_spawn("mcplex-2", argv2, NULL, log2_path);
    assert_true(mcplex2 > 0);
    char *health2 = mx_xasprintf("http://127.0.0.1:%d/health", port2);
    assert_int_equal(mx_it_wait_http_status(health2, 200, MX_IT_START_TIMEOUT_MS), 0);
    char *one2 = mx_xasprintf("http://127.0.0.1:%d/mcp/slow", port2);
    out = client_at(one2, "call", "{\"name\":\"echo\",\"arguments\":{\"message\":\"two\"}}");
    assert_string_equal(result_text(out), "Echo: two");
    assert_true(json_number_value(json_object_get(json_object_get(out, "timings"), "connect_ms")) >=
                2500.0);
    json_decref(out);

    assert_int_equal(wait_pids(pids_path, 1, pids, 4, 1000), 2);
    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_int_equal(mx_it_signal(mcplex2, SIGTERM), 0);
    int st = mx_it_wait_exit(mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = mx_it_wait_exit(mcplex2, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(wait_gone(pids[0], 3000));
    assert_true(wait_gone(pids[1], 3000));
    const char *logs[] = {"mcplex.log", "mcplex-2.log"};
    for (size_t i = 0; i < 2; i++) {
        char *log_path = mx_it_path(logs[i]);
        char *log = mx_it_read_file(log_path, NULL);
        assert_non_null(log);
        if (strstr(log, "up:slow has not answered initialize after 3 s; sending it again") == NULL)
            fail_msg("%s: no second initialize", logs[i]);
        free(log);
        free(log_path);
    }
    free(one2);
    free(health2);
    free(log2_path);
    free(bin);
    free(cfg2_path);
    free(cfg2);
    free(one);
    free(url);
    free(cfg_path);
    free(cfg);
    free(pids_path);
    free(sh);
    free(js);
    free(sim_s);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stdio_beside_http, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_stdio_slow_start, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
