/* SPDX-License-Identifier: MIT */
/*
 * `mcplex stdio` end to end: the merged aggregate over stdin/stdout, driven
 * by the official TypeScript SDK client's StdioClientTransport (which
 * launches mcplex itself, as Claude Code or Cursor would). The upstreams
 * are two sandbox-sims with different canary bearers and server-everything
 * as a stdio child behind a wrapper that writes junk on its stdout and a
 * canary on its stderr. Checks the merged lists with the documented names,
 * calls to each upstream, prompts and resources (an ambiguous URI refused),
 * progress, cancellation, a sampling request answered by the client, a
 * list_changed reaching the client; and, for every run, that mcplex's
 * stdout held nothing but JSON-RPC lines, that it exited 0 soon after the
 * client closed its stdin, that it bound no TCP port, and that no canary
 * reached its stdout, its stderr or the trace. A second test talks raw
 * lines: a parse error answered with id null, a request answered after
 * stdin ended, and SIGTERM ending the process with status 0. A third: a
 * client of MCP 2026-07-28 over stdio (no headers, everything in _meta):
 * the SDK v2 client pinned to it (lists, calls, progress, a sampling
 * question as an input_required round trip), and in raw lines a call
 * cancelled with notifications/cancelled, which reaches the upstream.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define PAGE_SIZE   7
#define MAX_RUNS    16
#define EOF_EXIT_MS 1500.0 /* the SDK sends SIGTERM after 2000 ms */
#define RAW_WAIT_MS 15000
#define RAW_EXIT_MS 5000

struct world {
    char sim1_token[MX_IT_CANARY_SIZE];
    char sim2_token[MX_IT_CANARY_SIZE];
    char ev_token[MX_IT_CANARY_SIZE]; /* in the stdio child's environment only */
    pid_t sim1;
    int sim1_port;
    int listen_port; /* in the config's [listen]; never bound by `mcplex stdio` */
    char *cfg_path;
    char *trace;
    char *argv_json; /* MX_CLIENT_STDIO */
    char *runs[MAX_RUNS];
    int run_cnt;
};

static char *secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

static char *mcplex_bin(void)
{
    return mx_xasprintf("%s/mcplex", mx_it_build_dir());
}

static void start_world(struct world *w)
{
    int sim2_port;
    mx_it_canary(w->sim1_token, sizeof(w->sim1_token));
    mx_it_canary(w->sim2_token, sizeof(w->sim2_token));
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    const char *a1[] = {"--name", "sim-one", NULL};
    const char *a2[] = {"--name", "sim-two", NULL};
    w->sim1 = mx_it_start_sim("sim1", w->sim1_token, a1, &w->sim1_port);
    assert_true(w->sim1 > 0);
    assert_true(mx_it_start_sim("sim2", w->sim2_token, a2, &sim2_port) > 0);

    char *s1 = secret_file("sim1.secret", w->sim1_token);
    char *s2 = secret_file("sim2.secret", w->sim2_token);
    char *s3 = secret_file("ev.secret", w->ev_token);
    char *js = mx_xasprintf(
        "%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        mx_it_source_dir());
    char *sh = mx_xasprintf("%s/tests/integration/stdio-child.sh", mx_it_source_dir());
    char *state = mx_it_path("state");
    w->listen_port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf(
        "[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
        "[proxy]\ntrace = \"%s\"\nstate_dir = \"%s\"\npage_size = %d\n"
        "fanout_timeout = \"20s\"\n"
        "[servers.sim1]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
        "[servers.sim2]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
        "[servers.ev]\n"
        "command = [\"/bin/sh\", \"%s\", \"--junk\", \"--\", \"node\", \"%s\", \"stdio\"]\n"
        "env = [\"PATH\", \"MX_IT_JUNK_TOKEN=file:%s\"]\n",
        w->listen_port, w->trace, state, PAGE_SIZE, w->sim1_port, s1, sim2_port, s2, sh, js, s3);
    w->cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    char *bin = mcplex_bin();
    json_t *argv = json_pack("[s,s,s,s]", bin, "stdio", "-c", w->cfg_path);
    w->argv_json = json_dumps(argv, JSON_COMPACT);
    json_decref(argv);
    free(bin);
    free(s1);
    free(s2);
    free(s3);
    free(js);
    free(sh);
    free(state);
    free(cfg);
}

static void free_world(struct world *w)
{
    for (int i = 0; i < w->run_cnt; i++)
        free(w->runs[i]);
    free(w->cfg_path);
    free(w->trace);
    free(w->argv_json);
}

/* ---- one SDK client run, with its own mcplex stdio process ---- */

static pid_t client_start(struct world *w, const char *scenario, const char *args, char **prefix)
{
    char name[32];
    assert_true(w->run_cnt < MAX_RUNS);
    snprintf(name, sizeof(name), "stdio-%d", w->run_cnt);
    *prefix = mx_it_path(name);
    w->runs[w->run_cnt++] = mx_xstrdup(*prefix);
    char *e1 = mx_xasprintf("MX_CLIENT_STDIO=%s", w->argv_json);
    char *e2 = mx_xasprintf("MX_CLIENT_STDIO_LOG=%s", *prefix);
    const char *env[] = {e1, e2, NULL};
    const char *argv[] = {"stdio", scenario, args ? args : "{}", NULL};
    pid_t pid = mx_it_node_start("client.mjs", argv, env);
    assert_true(pid > 0);
    free(e1);
    free(e2);
    return pid;
}

/*
 * Every byte mcplex wrote on stdout: complete lines, each one JSON-RPC 2.0
 * message. Returns them as an array (new reference).
 */
static json_t *stdout_messages(const char *prefix)
{
    char *path = mx_xasprintf("%s.stdout", prefix);
    size_t len = 0;
    char *text = mx_it_read_file(path, &len);
    if (text == NULL)
        fail_msg("%s was not written", path);
    if (len == 0 || text[len - 1] != '\n')
        fail_msg("%s does not end with a newline", path);
    json_t *msgs = json_array();
    size_t lineno = 0;
    for (char *p = text; p < text + len; lineno++) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        json_error_t err;
        json_t *m = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &err);
        const char *v = json_string_value(json_object_get(m, "jsonrpc"));
        bool ok = json_is_object(m) && v && strcmp(v, "2.0") == 0 &&
                  (json_object_get(m, "method") || json_object_get(m, "id"));
        if (!ok)
            fail_msg("%s line %zu is not a JSON-RPC message: %.120s", path, lineno + 1, p);
        json_array_append_new(msgs, m);
        p = nl + 1;
    }
    free(text);
    free(path);
    return msgs;
}

/* The run's result, after the checks every run must pass. */
static json_t *client_finish(pid_t pid, const char *prefix, json_t **msgs)
{
    json_t *out = NULL;
    int rc = mx_it_node_finish(pid, MX_IT_NODE_TIMEOUT_MS, &out);
    if (rc != 0 || out == NULL)
        fail_msg("client %s: exit %d", prefix, rc);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("client %s: not ok", prefix);
    json_t *st = json_object_get(out, "stdio");
    json_t *ex = json_object_get(st, "exit");
    /* ended by the end of its stdin, before the SDK's SIGTERM, with 0 */
    assert_true(json_is_integer(json_object_get(ex, "code")));
    assert_int_equal(json_integer_value(json_object_get(ex, "code")), 0);
    assert_true(json_is_null(json_object_get(ex, "signal")));
    double after = json_number_value(json_object_get(st, "exit_after_eof_ms"));
    if (after >= EOF_EXIT_MS)
        fail_msg("mcplex exited %.0f ms after its stdin closed", after);
    json_t *m = stdout_messages(prefix);
    assert_true(json_array_size(m) >= 2);
    if (msgs)
        *msgs = m;
    else
        json_decref(m);
    return out;
}

static json_t *client(struct world *w, const char *scenario, const char *args)
{
    char *prefix;
    pid_t pid = client_start(w, scenario, args, &prefix);
    json_t *out = client_finish(pid, prefix, NULL);
    free(prefix);
    return out;
}

static const char *result_text(json_t *out)
{
    json_t *r = json_object_get(out, "result");
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

/* ---- sockets of a process ---- */

/* Socket inodes open in |pid|. */
static size_t socket_inodes(pid_t pid, unsigned long *v, size_t cap)
{
    char dir[64], link[PATH_MAX], target[128];
    size_t n = 0;
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (d == NULL)
        fail_msg("cannot list %s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap) {
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        ssize_t k = readlink(link, target, sizeof(target) - 1);
        if (k <= 0)
            continue;
        target[k] = '\0';
        if (strncmp(target, "socket:[", 8) == 0)
            v[n++] = strtoul(target + 8, NULL, 10);
    }
    closedir(d);
    return n;
}

/* How many of |inodes| are TCP sockets (IPv4 or IPv6) in state LISTEN, and
 * in *|tcp| how many are TCP sockets at all. */
static size_t listening(const unsigned long *inodes, size_t cnt, size_t *tcp)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    size_t n = 0;
    *tcp = 0;
    for (size_t t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        char line[512];
        if (f == NULL)
            continue;
        if (fgets(line, sizeof(line), f) == NULL) { /* header */
            fclose(f);
            continue;
        }
        while (fgets(line, sizeof(line), f)) {
            char local[64], remote[64];
            unsigned st;
            unsigned long inode;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
                       &inode) != 4)
                continue;
            for (size_t i = 0; i < cnt; i++) {
                if (inodes[i] == inode) {
                    (*tcp)++;
                    if (st == 0x0A)
                        n++;
                }
            }
        }
        fclose(f);
    }
    return n;
}

static void assert_no_listener(pid_t pid, const struct world *w)
{
    unsigned long inodes[512];
    size_t tcp;
    /* the scan sees a listener where there is one: sandbox-sim's */
    size_t n = socket_inodes(w->sim1, inodes, 512);
    assert_true(listening(inodes, n, &tcp) >= 1);

    n = socket_inodes(pid, inodes, 512);
    size_t l = listening(inodes, n, &tcp);
    if (l != 0)
        fail_msg("mcplex stdio (pid %d) holds %zu listening TCP sockets", (int)pid, l);
    /* and the configured [listen] address is closed */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)w->listen_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_not_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(errno, ECONNREFUSED);
    close(fd);
}

/* ---- the scenarios ---- */

static void assert_merged_lists(struct world *w)
{
    json_t *out = client(w, "list-all", NULL);
    json_t *tools = json_object_get(out, "tools");
    json_t *names = json_object_get(tools, "names");
    /* held by both sims: prefixed in both; echo and get-env also by ev */
    static const char *const prefixed[] = {"sim1_whoami", "sim2_whoami",  "sim1_slow", "sim2_slow",
                                           "sim1_add",    "sim2_add",     "sim1_echo", "sim2_echo",
                                           "ev_echo",     "sim1_get-env", "ev_get-env"};
    for (size_t i = 0; i < sizeof(prefixed) / sizeof(prefixed[0]); i++) {
        if (!mx_it_json_has(names, prefixed[i]))
            fail_msg("tools/list lacks %s", prefixed[i]);
    }
    /* held by one upstream: plain */
    assert_true(mx_it_json_has(names, "get-sum"));
    assert_true(mx_it_json_has(names, "trigger-long-running-operation"));
    assert_true(mx_it_json_has(names, "trigger-sampling-request"));
    assert_false(mx_it_json_has(names, "echo"));
    assert_false(mx_it_json_has(names, "whoami"));
    /* sorted, one entry per name, over several pages */
    size_t n = json_array_size(names);
    assert_true(n >= 20);
    mx_it_assert_sorted_unique(names);
    assert_int_equal(json_integer_value(json_object_get(tools, "pages")),
                     (json_int_t)((n + PAGE_SIZE - 1) / PAGE_SIZE));

    json_t *prompts = json_object_get(json_object_get(out, "prompts"), "names");
    assert_true(mx_it_json_has(prompts, "sim1_greet"));
    assert_true(mx_it_json_has(prompts, "sim2_greet"));
    assert_true(mx_it_json_has(prompts, "simple-prompt"));
    json_t *uris = json_object_get(json_object_get(out, "resources"), "uris");
    assert_true(mx_it_json_has(uris, "sim://readme"));
    assert_true(mx_it_json_has(uris, "demo://resource/static/document/features.md"));
    json_decref(out);
}

static void assert_calls(struct world *w)
{
    /* one call to each upstream, each answered by its own */
    static const struct {
        const char *args;
        const char *want; /* the answer's text contains it */
    } calls[] = {
        {"{\"name\":\"sim1_whoami\"}", "sim-one"},
        {"{\"name\":\"sim2_whoami\"}", "sim-two"},
        {"{\"name\":\"get-sum\",\"arguments\":{\"a\":2,\"b\":3}}", "5"},
        {"{\"name\":\"sim2_echo\",\"arguments\":{\"message\":\"to sim2\"}}", "to sim2"},
        {"{\"name\":\"ev_echo\",\"arguments\":{\"message\":\"to ev\"}}", "to ev"},
    };
    json_t *out;
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        out = client(w, "call", calls[i].args);
        const char *text = result_text(out);
        if (text == NULL || strstr(text, calls[i].want) == NULL)
            fail_msg("call %s answered \"%s\"", calls[i].args, text ? text : "(nothing)");
        json_decref(out);
    }

    out = client(w, "prompt", "{\"name\":\"sim1_greet\",\"arguments\":{\"name\":\"Ada\"}}");
    json_t *msgs = json_object_get(json_object_get(out, "result"), "messages");
    const char *text = json_string_value(
        json_object_get(json_object_get(json_array_get(msgs, 0), "content"), "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "Ada"));
    json_decref(out);

    out = client(w, "read", "{\"uri\":\"demo://resource/static/document/features.md\"}");
    json_t *contents = json_object_get(json_object_get(out, "result"), "contents");
    assert_int_equal(json_array_size(contents), 1);
    json_decref(out);

    /* listed by both sims: refused, both named */
    out = client(w, "read", "{\"uri\":\"sim://readme\"}");
    json_t *err = json_object_get(json_object_get(out, "result"), "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
    json_t *cands = json_object_get(json_object_get(err, "data"), "candidates");
    assert_true(mx_it_json_has(cands, "sim1") && mx_it_json_has(cands, "sim2"));
    json_decref(out);
}

static size_t count_progress(json_t *msgs)
{
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        const char *method = json_string_value(json_object_get(m, "method"));
        if (method && strcmp(method, "notifications/progress") == 0)
            n++;
    }
    return n;
}

static void assert_progress_and_cancel(struct world *w)
{
    char *prefix;
    json_t *msgs;
    pid_t pid = client_start(w, "progress",
                             "{\"name\":\"trigger-long-running-operation\","
                             "\"arguments\":{\"duration\":1,\"steps\":4}}",
                             &prefix);
    json_t *out = client_finish(pid, prefix, &msgs);
    free(prefix);
    /* every step went out; the SDK may drop the last when it shares a read
     * with the answer (it handles answers before notifications) */
    assert_int_equal(count_progress(msgs), 4);
    json_t *progress = json_object_get(out, "progress");
    assert_true(json_array_size(progress) >= 3);
    assert_non_null(strstr(result_text(out), "Steps: 4"));
    /* streamed, not held until the answer */
    double first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) - first >= 500.0);
    json_decref(msgs);
    json_decref(out);

    out = client(w, "cancel",
                 "{\"name\":\"sim1_slow\",\"arguments\":{\"steps\":30,\"interval_ms\":200},"
                 "\"after_progress\":2,\"settle_ms\":700}");
    assert_true(json_is_true(json_object_get(out, "cancelled")));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) < 3000.0);
    json_decref(out);
    /* the cancellation reached sim-one */
    char *url = mx_xasprintf("http://127.0.0.1:%d/__stats", w->sim1_port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w->sim1_token);
    const char *hdrs[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, hdrs, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *stats = json_loads(body, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(stats, "cancelled")), 1);
    json_decref(stats);
    free(body);
    free(auth);
    free(url);
}

static void assert_sampling(struct world *w)
{
    json_t *out = client(w, "sampling",
                         "{\"name\":\"trigger-sampling-request\","
                         "\"arguments\":{\"prompt\":\"say hi\",\"maxTokens\":20},"
                         "\"reply\":\"hello from the stdio client\"}");
    json_t *reqs = json_object_get(out, "sampling_requests");
    assert_int_equal(json_array_size(reqs), 1);
    const char *asked = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(json_array_get(reqs, 0), "messages"), 0),
                        "content"),
        "text"));
    assert_non_null(asked);
    assert_non_null(strstr(asked, "say hi"));
    assert_non_null(strstr(result_text(out), "hello from the stdio client"));
    json_decref(out);
}

/* server-everything adds a resource to its session and announces it; the
 * client hears list_changed over stdio. Meanwhile: no port bound. */
static void assert_list_change_and_no_port(struct world *w)
{
    char *prefix;
    char *ready = mx_it_path("ready");
    char *go = mx_it_path("go");
    char *args = mx_xasprintf(
        "{\"ready_file\":\"%s\",\"go_file\":\"%s\",\"wait_ms\":20000,\"kind\":\"resources\","
        "\"trigger\":{\"name\":\"gzip-file-as-resource\",\"arguments\":{\"name\":\"hello.txt\","
        "\"data\":\"data:text/plain;base64,aGVsbG8=\"}}}",
        ready, go);
    pid_t pid = client_start(w, "list-changed", args, &prefix);
    mx_it_wait_file(ready, 30000);
    /* mcplex is up, initialized, and waits with the client */
    char *pid_path = mx_xasprintf("%s.pid", prefix);
    char *pid_text = mx_it_read_file(pid_path, NULL);
    assert_non_null(pid_text);
    pid_t mcplex = (pid_t)strtol(pid_text, NULL, 10);
    assert_true(mcplex > 0);
    assert_false(mx_it_has_exited(pid)); /* the client, so mcplex too */
    assert_no_listener(mcplex, w);
    assert_int_equal(mx_it_write_file(go, "go\n", 3), 0);

    json_t *out = client_finish(pid, prefix, NULL);
    assert_true(json_is_true(json_object_get(out, "go")));
    assert_null(json_object_get(json_object_get(out, "trigger"), "error"));
    assert_true(json_is_true(json_object_get(out, "notified")));
    assert_true(json_integer_value(json_object_get(json_object_get(out, "changes"), "resources")) >=
                1);
    json_t *before = json_object_get(json_object_get(out, "before"), "uris");
    json_t *after = json_object_get(json_object_get(out, "after"), "uris");
    assert_false(mx_it_json_has(before, "demo://resource/session/hello.txt"));
    assert_true(mx_it_json_has(after, "demo://resource/session/hello.txt"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "stdio"), "pid")),
                     (json_int_t)mcplex);
    json_decref(out);
    free(pid_text);
    free(pid_path);
    free(args);
    free(go);
    free(ready);
    free(prefix);
}

static void assert_no_canary(const struct world *w)
{
    const char *canaries[] = {w->sim1_token, w->sim2_token, w->ev_token};
    const char *files[2 * MAX_RUNS + 2];
    char *owned[2 * MAX_RUNS];
    size_t n = 0;
    for (int i = 0; i < w->run_cnt; i++) {
        owned[2 * i] = mx_xasprintf("%s.stdout", w->runs[i]);
        owned[2 * i + 1] = mx_xasprintf("%s.stderr", w->runs[i]);
        files[n++] = owned[2 * i];
        files[n++] = owned[2 * i + 1];
    }
    files[n++] = w->trace;
    files[n] = NULL;
    for (size_t i = 0; i < 3; i++) {
        char **hits = NULL;
        int k = mx_it_scan_for(files, canaries[i], &hits);
        for (int j = 0; j < k; j++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[j]);
        mx_it_strv_free(hits);
        assert_int_equal(k, 0);
    }
    /* the stderr logs are there to be scanned: mcplex wrote to them */
    char *log = mx_it_read_file(owned[1], NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "serving 3 upstreams on stdin/stdout"));
    free(log);
    for (int i = 0; i < 2 * w->run_cnt; i++)
        free(owned[i]);
}

static void test_stdio_front_aggregate(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_merged_lists(&w);
    assert_calls(&w);
    assert_progress_and_cancel(&w);
    assert_sampling(&w);
    assert_list_change_and_no_port(&w);
    /* the trace saw both directions of the stdio client's session */
    char *trace = mx_it_read_file(w.trace, NULL);
    assert_non_null(trace);
    assert_non_null(strstr(trace, "sampling/createMessage"));
    free(trace);
    assert_no_canary(&w);
    free_world(&w);
    mx_it_pass();
}

/* ---- raw lines ---- */

struct raw {
    pid_t pid;
    int in;                 /* mcplex's stdin; -1 once closed */
    struct mx_it_lines out; /* mcplex's stdout */
};

static void raw_start(struct raw *r, const char *cfg_path, const char *err_path)
{
    char *bin = mcplex_bin();
    const char *argv[] = {bin, "stdio", "-c", cfg_path, NULL};
    r->out.len = 0;
    r->pid = mx_it_spawn_piped("mcplex-stdio", argv, NULL, err_path, &r->in, &r->out.fd);
    assert_true(r->pid > 0);
    free(bin);
}

static void raw_send(struct raw *r, const char *line)
{
    size_t len = strlen(line);
    assert_int_equal(write(r->in, line, len), (ssize_t)len);
}

/* The next line mcplex writes, parsed; NULL at EOF. Fails after RAW_WAIT_MS. */
/* The next message that is not a list_changed: lists that come after
 * initialize are announced, and a client takes that at any time. */
static json_t *raw_next(struct raw *r)
{
    for (;;) {
        json_t *m = mx_it_lines_next(&r->out, RAW_WAIT_MS);
        const char *method = json_string_value(json_object_get(m, "method"));
        if (m == NULL || method == NULL || strstr(method, "/list_changed") == NULL)
            return m;
        json_decref(m);
    }
}

/* Wait for the exit status; fails after RAW_EXIT_MS. */
static int raw_wait(struct raw *r)
{
    int st = mx_it_wait_exit(r->pid, RAW_EXIT_MS);
    if (st < 0)
        fail_msg("mcplex stdio (pid %d) still running after %d ms", (int)r->pid, RAW_EXIT_MS);
    close(r->out.fd);
    if (r->in >= 0)
        close(r->in);
    return st;
}

static void raw_initialize(struct raw *r)
{
    raw_send(r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                "\"clientInfo\":{\"name\":\"raw\",\"version\":\"0\"}}}\n"
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    json_t *m = raw_next(r);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(m, "result"), "serverInfo"), "name")),
                        "mcplex");
    json_decref(m);
}

/*
 * A client that sends |cnt| echo calls of |size| bytes each and does not read
 * for |stall_ms|: mcplex stops taking input once its output backs up, so the
 * writes stall too; then everything is read and every answer must be there.
 * Returns the bytes written before reading began.
 */
static size_t raw_flood(struct raw *r, int cnt, size_t size, int stall_ms)
{
    size_t total = 0, sent = 0, line_len = size + 128;
    char *all = mx_xmalloc((size_t)cnt * line_len);
    char *msg = mx_xmalloc(size + 1);
    memset(msg, 'm', size);
    msg[size] = '\0';
    for (int i = 0; i < cnt; i++)
        total += (size_t)snprintf(all + total, line_len,
                                  "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                                  "\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":"
                                  "\"%s\"}}}\n",
                                  100 + i, msg);
    assert_int_equal(fcntl(r->in, F_SETFL, O_NONBLOCK), 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t before_read = 0;
    bool reading = false;
    int answers = 0;
    while (answers < cnt) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (!reading && ms >= stall_ms) {
            reading = true;
            before_read = sent;
        }
        if (ms > stall_ms + RAW_WAIT_MS)
            fail_msg("%d of %d answers after %ld ms", answers, cnt, ms);
        struct pollfd p[2] = {{sent < total ? r->in : -1, POLLOUT, 0},
                              {reading ? r->out.fd : -1, POLLIN, 0}};
        if (poll(p, 2, 20) < 0)
            continue;
        if (p[0].revents & POLLOUT) {
            ssize_t n = write(r->in, all + sent, total - sent);
            if (n > 0)
                sent += (size_t)n;
        }
        if (p[1].revents & (POLLIN | POLLHUP)) {
            json_t *m = raw_next(r);
            assert_non_null(m);
            json_int_t id = json_integer_value(json_object_get(m, "id"));
            json_t *c = json_object_get(json_object_get(m, "result"), "content");
            const char *echoed = json_string_value(json_object_get(json_array_get(c, 0), "text"));
            if (id < 100 || id >= 100 + cnt || echoed == NULL || strlen(echoed) != size)
                fail_msg("answer %d: id %lld, %zu bytes", answers, (long long)id,
                         echoed ? strlen(echoed) : 0);
            json_decref(m);
            answers++;
        }
    }
    assert_int_equal(sent, total);
    free(all);
    free(msg);
    return before_read;
}

static void test_stdio_front_raw(void **state)
{
    static struct raw r;
    char token[MX_IT_CANARY_SIZE];
    int port;
    (void)state;
    mx_it_canary(token, sizeof(token));
    assert_true(mx_it_start_sim("sim", token, NULL, &port) > 0);
    char *secret = secret_file("sim.secret", token);
    char *state_dir = mx_it_path("state");
    char *cfg = mx_xasprintf("[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             state_dir, port, secret);
    char *cfg_path = mx_it_path("raw.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *err_path = mx_it_path("raw.stderr");

    /* SIGTERM ends the session and the process, with 0 */
    raw_start(&r, cfg_path, err_path);
    raw_initialize(&r);
    /* not JSON: a parse error for id null (JSON-RPC 2.0 §5), and on it goes */
    raw_send(&r, "this is not json\n");
    json_t *m = raw_next(&r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")),
                     -32700);
    assert_true(json_is_null(json_object_get(m, "id")));
    json_decref(m);
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"whoami\"}}\n");
    m = raw_next(&r);
    assert_string_equal(json_string_value(json_object_get(m, "id")), "two");
    assert_non_null(json_object_get(m, "result"));
    json_decref(m);
    assert_int_equal(kill(r.pid, SIGTERM), 0);
    assert_null(raw_next(&r));
    int st = raw_wait(&r);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    /* the end of stdin with a call in flight: it is answered, then exit 0 */
    raw_start(&r, cfg_path, err_path);
    raw_initialize(&r);
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"slow\",\"arguments\":{\"steps\":3,\"interval_ms\":200}}}\n");
    close(r.in);
    r.in = -1;
    m = raw_next(&r);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 3);
    assert_non_null(strstr(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(m, "result"), "content"), 0), "text")),
        "done after 3 steps"));
    json_decref(m);
    assert_null(raw_next(&r));
    st = raw_wait(&r);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    /* a client that does not read: mcplex stops reading it, and loses nothing */
    raw_start(&r, cfg_path, err_path);
    raw_initialize(&r);
    size_t before_read = raw_flood(&r, 40, 64 * 1024, 1000);
    assert_true(before_read < 40 * 64 * 1024);
    close(r.in);
    r.in = -1;
    assert_null(raw_next(&r));
    st = raw_wait(&r);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    /* nothing on stdin at all */
    const char *argv[] = {NULL, "stdio", "-c", cfg_path, NULL};
    char *bin = mcplex_bin();
    argv[0] = bin;
    assert_int_equal(mx_it_run("stdio-empty", argv, NULL, RAW_EXIT_MS, NULL), 0);

    const char *files[] = {err_path, NULL};
    assert_int_equal(mx_it_scan_for(files, token, NULL), 0);
    free(bin);
    free(err_path);
    free(cfg_path);
    free(cfg);
    free(state_dir);
    free(secret);
    mx_it_pass();
}

/* ---- MCP 2026-07-28 over stdio ---- */

static json_int_t sim_cancelled(int port, const char *token)
{
    json_t *st = mx_it_sim_stats(port, token);
    assert_non_null(st);
    json_int_t n = json_integer_value(json_object_get(st, "cancelled"));
    json_decref(st);
    return n;
}

static void test_stdio_front_2026(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    char *e1 = mx_xasprintf("MX_CLIENT_STDIO=%s", w.argv_json);
    const char *env[] = {e1, NULL};
    const char *argv[] = {
        "stdio",
        "{\"calls\":[{\"name\":\"sim1_whoami\"},{\"name\":\"sim2_whoami\"}],"
        "\"progress\":{\"name\":\"sim1_slow\",\"arguments\":{\"steps\":3,\"interval_ms\":50}},"
        "\"sampling\":{\"name\":\"trigger-sampling-request\",\"arguments\":{\"prompt\":\"q\","
        "\"maxTokens\":5},\"reply\":\"STDIO-REPLY-2026\"}}",
        NULL};
    json_t *out = NULL;
    assert_int_equal(mx_it_node("client26.mjs", argv, env, &out), 0);
    assert_non_null(out);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("SDK v2 over stdio: %s", json_string_value(json_object_get(out, "error")));
    assert_string_equal(json_string_value(json_object_get(out, "protocol_version")), "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "server"), "name")),
                        "mcplex");
    assert_true(mx_it_json_has(json_object_get(out, "tools"), "sim2_slow"));
    json_t *texts = json_object_get(out, "calls");
    assert_string_equal(json_string_value(json_array_get(texts, 0)), "sim-one");
    assert_string_equal(json_string_value(json_array_get(texts, 1)), "sim-two");
    /* the SDK's stdio reader may drop the last progress when it comes in
     * the same read as the answer; the 2025 test above counts them in
     * mcplex's raw stdout for that reason */
    assert_true(json_array_size(json_object_get(out, "progress")) >= 2);
    assert_string_equal(json_string_value(json_object_get(out, "progress_result")),
                        "done after 3 steps");
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    const char *sampled = json_string_value(json_object_get(out, "sampling_result"));
    assert_non_null(sampled);
    assert_non_null(strstr(sampled, "STDIO-REPLY-2026"));
    json_decref(out);
    free(e1);

    /* raw: a 2026-07-28 call, cancelled by name, is cancelled upstream and
     * not answered; the next one is */
    static struct raw r;
    char *err_path = mx_it_path("raw26.stderr");
    raw_start(&r, w.cfg_path, err_path);
#define META26                                                                                     \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}"
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"sim1_slow\",\"arguments\":{\"steps\":50,\"interval_ms\":100}," META26
                 ",\"progressToken\":\"p41\"}}}\n");
    json_t *m = raw_next(&r); /* the first progress: the call runs upstream */
    assert_string_equal(json_string_value(json_object_get(m, "method")), "notifications/progress");
    json_decref(m);
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                 "\"requestId\":41}}\n");
    int waited = 0;
    while (sim_cancelled(w.sim1_port, w.sim1_token) < 1 && waited < 3000) {
        usleep(50 * 1000);
        waited += 50;
    }
    assert_int_equal(sim_cancelled(w.sim1_port, w.sim1_token), 1);
    raw_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"sim2_whoami\"," META26 "}}}\n");
#undef META26
    /* progress of 41 that was already on its way may come first; no answer
     * to 41 ever does */
    for (;;) {
        m = raw_next(&r);
        assert_non_null(m);
        assert_true(json_integer_value(json_object_get(m, "id")) != 41 ||
                    json_object_get(m, "method") != NULL);
        if (json_integer_value(json_object_get(m, "id")) == 42)
            break;
        json_decref(m);
    }
    json_t *res = json_object_get(m, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
    json_decref(m);
    close(r.in);
    r.in = -1;
    assert_null(raw_next(&r));
    int st = raw_wait(&r);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    free(err_path);
    free_world(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stdio_front_aggregate, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_stdio_front_raw, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_stdio_front_2026, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
