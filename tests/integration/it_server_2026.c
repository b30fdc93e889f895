/* SPDX-License-Identifier: MIT */
/*
 * MCP 2026-07-28 (stateless) clients at /mcp/<server>: one upstream alone,
 * whatever its era. mcplex in front of a 2025-only sandbox-sim, sandbox-sim
 * --conformance (which speaks 2026-07-28), server-everything as a stdio
 * command and in its HTTP+SSE mode, an upstream that refuses its credential
 * and one that is down. In raw HTTP: server/discover with that upstream's
 * capabilities and instructions, its own names (where /mcp prefixes them),
 * its own paging, a call, progress on the call's stream, the refusals of the
 * revision (-32020, -32022, 405, 404), a requestState bound to its endpoint,
 * Multi Round-Trip questions of a 2025 stdio upstream and of a 2026
 * upstream answered in the retry, the JSON-RPC error naming a failed
 * upstream (never a 401). Then the official TypeScript SDK v2 client pinned
 * to 2026-07-28 against three of them (calls, progress, sampling answered
 * by its handler, a resource list change on subscriptions/listen), a 2025
 * client relayed at the same endpoint as before, the SDK v2 client over
 * TLS, and a paused sandbox woken by its hook while the call hears progress.
 * No canary in anything mcplex printed or wrote.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define PAGE_SIZE 2
#define CAPS_ALL  "{\"sampling\":{},\"elicitation\":{},\"roots\":{}}"

struct world {
    char a_token[MX_IT_CANARY_SIZE];
    char conf_token[MX_IT_CANARY_SIZE];
    char sse_token[MX_IT_CANARY_SIZE];
    char bad_token[MX_IT_CANARY_SIZE];
    int port;
    pid_t mcplex;
    char *base; /* http(s)://127.0.0.1:<port> */
    char *log;
    char *trace;
    char *ca; /* TLS only */
};

static char *secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

/* Every upstream kind behind one plain-HTTP mcplex. */
static void start_world(struct world *w)
{
    int a_port, conf_port, sse_port = 0;
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->a_token, sizeof(w->a_token));
    mx_it_canary(w->conf_token, sizeof(w->conf_token));
    mx_it_canary(w->sse_token, sizeof(w->sse_token));
    mx_it_canary(w->bad_token, sizeof(w->bad_token));
    const char *a_args[] = {"--name", "sim-a", "--list-ttl-ms", "30000", NULL};
    const char *conf_args[] = {"--conformance", "--name", "conf-sim", NULL};
    assert_true(mx_it_start_sim("sim-a", w->a_token, a_args, &a_port) > 0);
    assert_true(mx_it_start_sim("conf", w->conf_token, conf_args, &conf_port) > 0);
    assert_true(mx_it_start_everything_as("sse", w->sse_token, &sse_port) > 0);
    char *a_s = secret_file("a.secret", w->a_token);
    char *conf_s = secret_file("conf.secret", w->conf_token);
    char *sse_s = secret_file("sse.secret", w->sse_token);
    char *bad_s = secret_file("bad.secret", w->bad_token);
    char *js = mx_xasprintf(
        "%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        mx_it_source_dir());
    int down_port = mx_it_free_port(); /* nobody listens there */
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                     "[proxy]\ntrace = \"%s\"\npage_size = %d\nrequest_timeout = \"20s\"\n"
                     "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
                     "[servers.conf]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                     "secret = \"file:%s\"\n"
                     "[servers.ev]\ncommand = [\"node\", \"%s\", \"stdio\"]\n"
                     "env = [\"PATH\"]\n"
                     "[servers.evsse]\nurl = \"http://127.0.0.1:%d/sse\"\n"
                     "transport = \"sse\"\nsecret = \"file:%s\"\n"
                     "[servers.bad]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                     "secret = \"file:%s\"\n"
                     "[servers.down]\nurl = \"http://127.0.0.1:%d/mcp\"\nauth = \"none\"\n"
                     "wake_timeout = \"1s\"\n",
                     w->port, w->trace, PAGE_SIZE, a_port, a_s, conf_port, conf_s, js, sse_port,
                     sse_s, a_port, bad_s, down_port);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->base = mx_xasprintf("http://127.0.0.1:%d", w->port);
    w->log = mx_it_path("mcplex.log");
    free(a_s);
    free(conf_s);
    free(sse_s);
    free(bad_s);
    free(js);
    free(cfg);
    free(cfg_path);
}

static void free_world(struct world *w)
{
    free(w->base);
    free(w->log);
    free(w->trace);
    free(w->ca);
}

/*
 * POST to |path| a 2026 request: |method| with the params |params| (the
 * inside of the object, "" for none) and clientCapabilities |caps| (NULL:
 * {}; more _meta members may follow the object, as in {},"progressToken":1), its
 * version and method headers, Mcp-Name |name| when not NULL. |meta_version|
 * NULL: 2026-07-28; |hdr_method| NULL: |method|.
 */
/* post26() with one more request header |extra| ("Name: value"; NULL: none). */
static void post26_with(const struct world *w, const char *path, const char *method,
                        const char *name, const char *params, const char *caps,
                        const char *hdr_method, const char *version, const char *extra,
                        struct mx_it_answer *a)
{
    mx_it_post26(w->base, path, method, name, params, caps, hdr_method, version, extra, a);
}

static void post26(const struct world *w, const char *path, const char *method, const char *name,
                   const char *params, const char *caps, const char *hdr_method,
                   const char *version, struct mx_it_answer *a)
{
    post26_with(w, path, method, name, params, caps, hdr_method, version, NULL, a);
}

/* The names of every page of |path|'s tools/list; *|pages| counts them and
 * *|first_cursor| (when not NULL) keeps the first nextCursor. */
static json_t *tool_names(const struct world *w, const char *path, int *pages, char **first_cursor)
{
    json_t *names = json_array();
    char *cursor = NULL;
    *pages = 0;
    do {
        struct mx_it_answer a;
        char *params = cursor ? mx_xasprintf("\"cursor\":\"%s\"", cursor) : mx_xstrdup("");
        post26(w, path, "tools/list", NULL, params, NULL, NULL, NULL, &a);
        free(params);
        assert_int_equal(a.status, 200);
        json_t *r = mx_it_result(&a);
        mx_it_assert_modern_result(r, true);
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(r, "tools"), i, t)
        {
            json_array_append(names, json_object_get(t, "name"));
        }
        free(cursor);
        const char *next = json_string_value(json_object_get(r, "nextCursor"));
        cursor = next ? mx_xstrdup(next) : NULL;
        if (cursor && first_cursor && *first_cursor == NULL)
            *first_cursor = mx_xstrdup(cursor);
        mx_it_answer_clear(&a);
        assert_true(++*pages < 100);
    } while (cursor);
    return names;
}

/* server/discover and the lists of the 2025 sim: its own, not /mcp's. */
static void assert_discover_and_lists(const struct world *w)
{
    struct mx_it_answer a;
    post26(w, "/mcp/a", "server/discover", NULL, "", NULL, NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    json_t *r = mx_it_result(&a);
    mx_it_assert_modern_result(r, true);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(r, "supportedVersions"), 0)),
        "2026-07-28");
    json_t *caps = json_object_get(r, "capabilities");
    assert_true(json_is_object(json_object_get(caps, "tools")));
    assert_true(json_is_object(json_object_get(caps, "prompts")));
    /* the sim offers no completions, which /mcp has from server-everything */
    assert_null(json_object_get(caps, "completions"));
    /* its own instructions, not the labelled merge of /mcp */
    const char *ins = json_string_value(json_object_get(r, "instructions"));
    assert_non_null(ins);
    assert_null(strstr(ins, "## "));
    mx_it_answer_clear(&a);

    int pages = 0;
    char *cursor = NULL;
    json_t *own = tool_names(w, "/mcp/a", &pages, &cursor);
    size_t n = json_array_size(own);
    assert_int_equal(pages, (int)((n + PAGE_SIZE - 1) / PAGE_SIZE));
    assert_true(mx_it_has_string(own, "echo"));
    assert_true(mx_it_has_string(own, "whoami"));
    assert_false(mx_it_has_string(own, "a_echo"));
    assert_false(mx_it_has_string(own, "trigger-sampling-request"));
    /* in the sim's order: echo is its first tool */
    assert_string_equal(json_string_value(json_array_get(own, 0)), "echo");
    json_decref(own);
    /* at /mcp the same tool collides with server-everything's */
    json_t *merged = tool_names(w, "/mcp", &pages, NULL);
    assert_true(mx_it_has_string(merged, "a_echo"));
    assert_false(mx_it_has_string(merged, "echo"));
    json_decref(merged);

    /* a cursor of /mcp/a is not one of /mcp, nor of another server */
    char *p = mx_xasprintf("\"cursor\":\"%s\"", cursor);
    post26(w, "/mcp", "tools/list", NULL, p, NULL, NULL, NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);
    post26(w, "/mcp/ev", "tools/list", NULL, p, NULL, NULL, NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);
    free(p);
    free(cursor);

    post26(w, "/mcp/a", "resources/list", NULL, "", NULL, NULL, NULL, &a);
    r = mx_it_result(&a);
    mx_it_assert_modern_result(r, true);
    /* the sim's freshness hint, less the time since mcplex received it */
    json_int_t ttl = json_integer_value(json_object_get(r, "ttlMs"));
    assert_true(ttl > 0 && ttl <= 30000);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "resources"), 0), "uri")),
                        "sim://readme");
    mx_it_answer_clear(&a);
}

/* A call, and progress on the call's stream with the client's token. */
static void assert_calls(const struct world *w)
{
    struct mx_it_answer a;
    post26(w, "/mcp/a", "tools/call", "whoami", "\"name\":\"whoami\",\"arguments\":{}", NULL, NULL,
           NULL, &a);
    assert_int_equal(a.status, 200);
    json_t *r = mx_it_result(&a);
    mx_it_assert_modern_result(r, false);
    assert_string_equal(mx_it_first_text(r), "sim-a");
    mx_it_answer_clear(&a);

    post26(w, "/mcp/a", "tools/call", "slow",
           "\"name\":\"slow\",\"arguments\":{\"steps\":3,\"interval_ms\":30}",
           "{},\"progressToken\":\"tok-26\"", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.headers, "text/event-stream"));
    size_t progress = 0;
    for (const char *p = strstr(a.body, "notifications/progress"); p;
         p = strstr(p + 1, "notifications/progress"))
        progress++;
    assert_int_equal(progress, 3);
    assert_non_null(strstr(a.body, "\"progressToken\":\"tok-26\""));
    assert_null(strstr(a.body, "mcplex-"));
    assert_non_null(strstr(a.body, "done after 3 steps"));
    mx_it_answer_clear(&a);

    /* the upstream answers for a name it does not have */
    post26(w, "/mcp/a", "tools/call", "nope", "\"name\":\"nope\",\"arguments\":{}", NULL, NULL,
           NULL, &a);
    assert_int_equal(a.status, 200);
    assert_non_null(json_object_get(a.msg, "error"));
    mx_it_answer_clear(&a);
}

/* MCP 2026-07-28, Streamable HTTP: the same refusals as at /mcp. */
static void assert_refusals(const struct world *w)
{
    struct mx_it_answer a;
    post26(w, "/mcp/a", "tools/list", NULL, "", NULL, "prompts/list", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);
    post26(w, "/mcp/a", "tools/call", "whoami", "\"name\":\"echo\",\"arguments\":{}", NULL, NULL,
           NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);
    post26(w, "/mcp/ev", "tools/list", NULL, "", NULL, NULL, "2099-01-01", &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32022);
    json_t *data = json_object_get(json_object_get(a.msg, "error"), "data");
    assert_string_equal(json_string_value(json_object_get(data, "requested")), "2099-01-01");
    assert_true(mx_it_has_string(json_object_get(data, "supported"), "2026-07-28"));
    mx_it_answer_clear(&a);
    post26(w, "/mcp/conf", "ping", NULL, "", NULL, NULL, NULL, &a);
    assert_int_equal(a.status, 404);
    assert_int_equal(mx_it_error_code(&a), -32601);
    mx_it_answer_clear(&a);

    /* a body that is no JSON, or a batch, sent as 2026-07-28: refused by
     * mcplex, as at /mcp, for any kind of upstream */
    static const char *const bodies[] = {"this is not json", "[{\"jsonrpc\":\"2.0\"}]"};
    static const json_int_t codes[] = {-32700, -32600};
    for (size_t i = 0; i < 2; i++) {
        static const char *const at[] = {"/mcp/a", "/mcp/conf", "/mcp/ev", "/mcp"};
        for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
            char *url = mx_xasprintf("%s%s", w->base, at[k]);
            const char *ph[] = {"Content-Type: application/json",
                                "Accept: application/json, text/event-stream",
                                "MCP-Protocol-Version: 2026-07-28", NULL};
            memset(&a, 0, sizeof(a));
            assert_int_equal(
                mx_it_http_full("POST", url, ph, bodies[i], 5000, &a.status, &a.headers, &a.body),
                0);
            mx_it_answer_parse(&a);
            if (a.status != 400 || mx_it_error_code(&a) != codes[i])
                fail_msg("%s %s: %ld %s", at[k], bodies[i], a.status, a.body);
            /* mcplex's own answer at /mcp/<server>, not the upstream's */
            if (i == 1 && k < 3 && strstr(a.body, "one JSON-RPC message per POST") == NULL)
                fail_msg("%s: not mcplex's refusal: %s", at[k], a.body);
            mx_it_answer_clear(&a);
            free(url);
        }
    }

    /* no GET stream, no DELETE, for any kind of upstream */
    const char *gh[] = {"Accept: text/event-stream", "MCP-Protocol-Version: 2026-07-28", NULL};
    static const char *const paths[] = {"/mcp/a", "/mcp/conf", "/mcp/ev", "/mcp/evsse"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        char *url = mx_xasprintf("%s%s", w->base, paths[i]);
        long st = 0;
        char *h = NULL;
        assert_int_equal(mx_it_http_full("GET", url, gh, NULL, 5000, &st, &h, NULL), 0);
        assert_int_equal(st, 405);
        assert_non_null(strstr(h, "Allow: POST"));
        free(h);
        assert_int_equal(mx_it_http_full("DELETE", url, gh, NULL, 5000, &st, NULL, NULL), 0);
        assert_int_equal(st, 405);
        free(url);
    }
    /* a server mcplex does not have */
    post26(w, "/mcp/nosuch", "server/discover", NULL, "", NULL, NULL, NULL, &a);
    assert_int_equal(a.status, 404);
    mx_it_answer_clear(&a);
}

/* An upstream that refuses its credential, and one that is down: the
 * JSON-RPC error naming it, with HTTP 200. */
static void assert_failures(const struct world *w)
{
    static const char *const methods[] = {"server/discover", "tools/list", "tools/call"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        struct mx_it_answer a;
        bool call = strcmp(methods[i], "tools/call") == 0;
        post26(w, "/mcp/bad", methods[i], call ? "echo" : NULL,
               call ? "\"name\":\"echo\",\"arguments\":{\"message\":\"x\"}" : "", NULL, NULL, NULL,
               &a);
        assert_int_equal(a.status, 200);
        assert_int_equal(mx_it_error_code(&a), -32011);
        json_t *data = json_object_get(json_object_get(a.msg, "error"), "data");
        assert_string_equal(json_string_value(json_object_get(data, "server")), "bad");
        assert_string_equal(json_string_value(json_object_get(data, "reason")), "auth-failed");
        assert_null(strstr(a.headers, "WWW-Authenticate"));
        mx_it_answer_clear(&a);

        post26(w, "/mcp/down", methods[i], call ? "echo" : NULL,
               call ? "\"name\":\"echo\",\"arguments\":{}" : "", NULL, NULL, NULL, &a);
        assert_int_equal(a.status, 200);
        assert_int_equal(mx_it_error_code(&a), -32010);
        data = json_object_get(json_object_get(a.msg, "error"), "data");
        assert_string_equal(json_string_value(json_object_get(data, "server")), "down");
        mx_it_answer_clear(&a);
    }
}

/* Multi Round-Trip through a 2026 upstream: its three questions at once,
 * under its keys; the retry carries the answers. The requestState is good
 * at this endpoint only. */
static void assert_mrtr_2026(const struct world *w)
{
    static const char tool[] = "test_input_required_result_multiple_inputs";
    char *params = mx_xasprintf("\"name\":\"%s\",\"arguments\":{}", tool);
    struct mx_it_answer a;
    post26(w, "/mcp/conf", "tools/call", tool, params, CAPS_ALL, NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    json_t *r = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    json_t *reqs = json_object_get(r, "inputRequests");
    assert_int_equal(json_object_size(reqs), 3);
    assert_non_null(json_object_get(reqs, "user_name"));
    char *state = mx_xstrdup(json_string_value(json_object_get(r, "requestState")));
    mx_it_answer_clear(&a);
    char *retry = mx_xasprintf(
        "%s,\"inputResponses\":{\"user_name\":{\"action\":\"accept\",\"content\":{\"name\":"
        "\"Ada-5150\"}},\"greeting\":{\"role\":\"assistant\",\"model\":\"m\",\"content\":"
        "{\"type\":\"text\",\"text\":\"Hi-5151\"}},\"client_roots\":{\"roots\":[]}},"
        "\"requestState\":\"%s\"",
        params, state);
    /* the same tool name at /mcp: refused, the state is not for it */
    post26(w, "/mcp", "tools/call", tool, retry, CAPS_ALL, NULL, NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);
    post26(w, "/mcp/conf", "tools/call", tool, retry, CAPS_ALL, NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    r = mx_it_result(&a);
    mx_it_assert_modern_result(r, false);
    char *dump = json_dumps(r, 0);
    if (strstr(dump, "Ada-5150") == NULL || strstr(dump, "Hi-5151") == NULL)
        fail_msg("answers not in the result: %s", dump);
    free(dump);
    mx_it_answer_clear(&a);
    free(retry);
    free(state);
    free(params);
}

/* How many notifications/message an answer's SSE body holds. */
static int log_messages(const struct mx_it_answer *a)
{
    int n = 0;
    for (const char *p = a->body; p && (p = strstr(p, "notifications/message")); p++)
        n++;
    return n;
}

/* A 2026-07-28 client's logLevel reaches the 2026 upstream with its call,
 * at /mcp and at /mcp/<server>: the fixture logs for it, and not without. */
static void assert_log_level_2026(const struct world *w)
{
    static const char params[] = "\"name\":\"test_tool_with_logging\",\"arguments\":{}";
    static const char *const paths[] = {"/mcp", "/mcp/conf"};
    for (size_t i = 0; i < 2; i++) {
        struct mx_it_answer a;
        post26(w, paths[i], "tools/call", "test_tool_with_logging", params,
               "{},\"io.modelcontextprotocol/logLevel\":\"debug\"", NULL, NULL, &a);
        assert_int_equal(a.status, 200);
        mx_it_assert_modern_result(mx_it_result(&a), false);
        if (log_messages(&a) < 1)
            fail_msg("%s: no log messages for logLevel debug: %s", paths[i], a.body);
        mx_it_answer_clear(&a);
        post26(w, paths[i], "tools/call", "test_tool_with_logging", params, NULL, NULL, NULL, &a);
        assert_int_equal(a.status, 200);
        assert_int_equal(log_messages(&a), 0);
        mx_it_answer_clear(&a);
    }
}

/* MCP 2026-07-28, Custom Headers: the fixture's test_header_param mirrors
 * its region into Mcp-Param-Region. A call without the header, or with
 * another value, is refused by mcplex (400, before the upstream), at /mcp
 * and at /mcp/<server>; the right value passes. */
static void assert_param_headers(const struct world *w)
{
    static const char params[] =
        "\"name\":\"test_header_param\",\"arguments\":{\"region\":\"eu-1\"}";
    static const char *const paths[] = {"/mcp/conf", "/mcp"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct mx_it_answer a;
        post26(w, paths[i], "tools/call", "test_header_param", params, NULL, NULL, NULL, &a);
        assert_int_equal(a.status, 400);
        assert_int_equal(mx_it_error_code(&a), -32020);
        assert_non_null(strstr(a.body, "Mcp-Param-Region"));
        mx_it_answer_clear(&a);
    }
    /* with the header, but another value */
    struct mx_it_answer a;
    post26_with(w, "/mcp/conf", "tools/call", "test_header_param", params, NULL, NULL, NULL,
                "Mcp-Param-Region: us-2", &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);
    /* the right one (Base64 form) passes mcplex: whatever the upstream
     * then says comes with HTTP 200 */
    post26_with(w, "/mcp/conf", "tools/call", "test_header_param", params, NULL, NULL, NULL,
                "Mcp-Param-Region: =?base64?ZXUtMQ==?=", &a);
    assert_int_equal(a.status, 200);
    mx_it_answer_clear(&a);
}

/* Multi Round-Trip through a 2025 stdio upstream: server-everything asks
 * for sampling during the call, on the process's one session. */
static void assert_mrtr_stdio(const struct world *w)
{
    static const char params[] = "\"name\":\"trigger-sampling-request\",\"arguments\":{\"prompt\":"
                                 "\"capital?\",\"maxTokens\":20}";
    struct mx_it_answer a;
    int pages = 0;
    json_t *names = tool_names(w, "/mcp/ev", &pages, NULL);
    assert_true(mx_it_has_string(names, "echo"));
    assert_true(mx_it_has_string(names, "trigger-sampling-request"));
    assert_false(mx_it_has_string(names, "ev_echo"));
    json_decref(names);

    post26(w, "/mcp/ev", "tools/call", "trigger-sampling-request", params, "{\"sampling\":{}}",
           NULL, NULL, &a);
    json_t *r = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    json_t *reqs = json_object_get(r, "inputRequests");
    assert_int_equal(json_object_size(reqs), 1);
    char *key = mx_xstrdup(json_object_iter_key(json_object_iter(reqs)));
    assert_string_equal(json_string_value(json_object_get(json_object_get(reqs, key), "method")),
                        "sampling/createMessage");
    char *retry = mx_xasprintf(
        "%s,\"requestState\":\"%s\",\"inputResponses\":{\"%s\":{\"role\":\"assistant\","
        "\"content\":{\"type\":\"text\",\"text\":\"PARIS-5152\"},\"model\":\"m\"}}",
        params, json_string_value(json_object_get(r, "requestState")), key);
    mx_it_answer_clear(&a);
    post26(w, "/mcp/ev", "tools/call", "trigger-sampling-request", retry, "{\"sampling\":{}}", NULL,
           NULL, &a);
    r = mx_it_result(&a);
    mx_it_assert_modern_result(r, false);
    assert_non_null(strstr(mx_it_first_text(r), "PARIS-5152"));
    mx_it_answer_clear(&a);
    free(retry);
    free(key);
}

/* The legacy HTTP+SSE upstream, served the same way. */
static void assert_sse_upstream(const struct world *w)
{
    struct mx_it_answer a;
    post26(w, "/mcp/evsse", "tools/call", "echo",
           "\"name\":\"echo\",\"arguments\":{\"message\":\"over-sse-5153\"}", NULL, NULL, NULL, &a);
    json_t *r = mx_it_result(&a);
    mx_it_assert_modern_result(r, false);
    assert_non_null(strstr(mx_it_first_text(r), "over-sse-5153"));
    mx_it_answer_clear(&a);
    post26(w, "/mcp/evsse", "server/discover", NULL, "", NULL, NULL, NULL, &a);
    assert_true(json_is_object(
        json_object_get(json_object_get(mx_it_result(&a), "capabilities"), "completions")));
    mx_it_answer_clear(&a);
}

/* The SDK v2 client at |path|: |args| as client26.mjs takes them; the
 * output (ok checked, the revision checked). */
static json_t *sdk26(const struct world *w, const char *path, const char *args)
{
    char *url = mx_xasprintf("%s%s", w->base, path);
    json_t *out = mx_it_client26_ok(url, args);
    free(url);
    return out;
}

static void assert_sdk_sim(const struct world *w)
{
    json_t *out = sdk26(w, "/mcp/a",
                        "{\"calls\":[{\"name\":\"whoami\"},{\"name\":\"echo\",\"arguments\":"
                        "{\"message\":\"m-5154\"}}],\"progress\":{\"name\":\"slow\","
                        "\"arguments\":{\"steps\":3,\"interval_ms\":30}}}");
    assert_true(mx_it_has_string(json_object_get(out, "tools"), "echo"));
    assert_false(mx_it_has_string(json_object_get(out, "tools"), "a_echo"));
    json_t *texts = json_object_get(out, "calls");
    assert_string_equal(json_string_value(json_array_get(texts, 0)), "sim-a");
    assert_string_equal(json_string_value(json_array_get(texts, 1)), "m-5154");
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_string_equal(json_string_value(json_object_get(out, "progress_result")),
                        "done after 3 steps");
    json_decref(out);
}

static void assert_sdk_conf(const struct world *w)
{
    json_t *out = sdk26(w, "/mcp/conf",
                        "{\"calls\":[{\"name\":\"test_simple_text\"}],"
                        "\"progress\":{\"name\":\"test_tool_with_progress\"},"
                        "\"sampling\":{\"name\":\"test_input_required_result_sampling\","
                        "\"reply\":\"REPLY-5155\"}}");
    assert_true(mx_it_has_string(json_object_get(out, "tools"), "test_simple_text"));
    assert_non_null(json_string_value(json_array_get(json_object_get(out, "calls"), 0)));
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    const char *s = json_string_value(json_object_get(out, "sampling_result"));
    if (s == NULL || strstr(s, "REPLY-5155") == NULL)
        fail_msg("sampling answer not in the result: %s", s ? s : "(none)");
    json_decref(out);
}

static void assert_sdk_stdio(const struct world *w)
{
    json_t *out = sdk26(
        w, "/mcp/ev",
        "{\"sampling\":{\"name\":\"trigger-sampling-request\",\"arguments\":{\"prompt\":\"q\","
        "\"maxTokens\":5},\"reply\":\"SDK-REPLY-5156\"},"
        "\"listen\":{\"name\":\"gzip-file-as-resource\",\"arguments\":{\"name\":\"s26.txt\","
        "\"data\":\"data:text/plain;base64,aGVsbG8=\"}}}");
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    assert_non_null(
        strstr(json_string_value(json_object_get(out, "sampling_result")), "SDK-REPLY-5156"));
    assert_true(json_is_true(
        json_object_get(json_object_get(out, "listen_honored"), "resourcesListChanged")));
    assert_true(json_is_true(json_object_get(out, "notified")));
    assert_true(mx_it_has_string(json_object_get(out, "resources_after"),
                                 "demo://resource/session/s26.txt"));
    json_decref(out);
}

/* A 2025 client at the same endpoint is relayed as before: its session is
 * the sim's own. */
static void assert_2025_relayed(const struct world *w)
{
    char *url = mx_xasprintf("%s/mcp/a", w->base);
    json_t *out = mx_it_client_ok(url, "call", "{\"name\":\"whoami\"}");
    assert_true(json_is_true(json_object_get(out, "ok")));
    assert_string_equal(mx_it_result_text(out), "sim-a");
    json_decref(out);
    free(url);
}

static void stop_and_scan(struct world *w, const char *const *canaries, size_t cnt)
{
    assert_int_equal(mx_it_signal(w->mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w->mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* every file of the test (mcplex's log and trace, the clients'
     * output) but the secret files themselves */
    const char *dir[] = {mx_it_dir(), NULL};
    int found = 0;
    for (size_t i = 0; i < cnt; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(dir, canaries[i], &hits);
        assert_true(n >= 0);
        for (int k = 0; k < n; k++) {
            size_t len = strlen(hits[k]);
            if (len > 7 && strcmp(hits[k] + len - 7, ".secret") == 0)
                continue;
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
            found++;
        }
        mx_it_strv_free(hits);
    }
    assert_int_equal(found, 0);
}

static void test_server_2026_http(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    assert_discover_and_lists(&w);
    assert_calls(&w);
    assert_refusals(&w);
    assert_failures(&w);
    assert_mrtr_2026(&w);
    assert_log_level_2026(&w);
    assert_param_headers(&w);
    assert_mrtr_stdio(&w);
    assert_sse_upstream(&w);
    assert_sdk_sim(&w);
    assert_sdk_conf(&w);
    assert_sdk_stdio(&w);
    assert_2025_relayed(&w);
    /* the refusal was logged, without the secret */
    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(strstr(log, "upstream 'bad' auth-failed"));
    free(log);
    const char *canaries[] = {w.a_token, w.conf_token, w.sse_token, w.bad_token};
    stop_and_scan(&w, canaries, 4);
    free_world(&w);
    mx_it_pass();
}

/* The SDK v2 client over TLS (the CA of mcplex's state dir trusted through
 * NODE_EXTRA_CA_CERTS), and raw HTTPS. */
static void test_server_2026_tls(void **state)
{
    struct world w;
    int a_port;
    (void)state;
    memset(&w, 0, sizeof(w));
    mx_it_canary(w.a_token, sizeof(w.a_token));
    const char *a_args[] = {"--name", "sim-a", NULL};
    assert_true(mx_it_start_sim("sim-a", w.a_token, a_args, &a_port) > 0);
    char *a_s = secret_file("a.secret", w.a_token);
    char *st_dir = mx_it_path("state");
    w.ca = mx_xasprintf("%s/certs/ca.pem", st_dir);
    w.port = mx_it_free_port();
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n"
                     "[proxy]\nstate_dir = \"%s\"\n"
                     "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
                     w.port, st_dir, a_port, a_s);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w.mcplex = mx_it_start_mcplex_tls(cfg_path, w.port, w.ca);
    assert_true(w.mcplex > 0);
    w.base = mx_xasprintf("https://127.0.0.1:%d", w.port);
    w.log = mx_it_path("mcplex.log");

    struct mx_it_answer a;
    post26(&w, "/mcp/a", "server/discover", NULL, "", NULL, NULL, NULL, &a);
    mx_it_assert_modern_result(mx_it_result(&a), true);
    mx_it_answer_clear(&a);
    assert_int_equal(setenv("NODE_EXTRA_CA_CERTS", w.ca, 1), 0);
    assert_sdk_sim(&w);
    unsetenv("NODE_EXTRA_CA_CERTS");
    const char *canaries[] = {w.a_token};
    stop_and_scan(&w, canaries, 1);
    free(a_s);
    free(st_dir);
    free(cfg);
    free(cfg_path);
    free_world(&w);
    mx_it_pass();
}

/* A paused sandbox (refuse mode, woken by a hook) at /mcp/<server>: a
 * call that asked for progress hears that it is waking, with its own
 * token, then gets its answer; the call reached the sim once. */
static void test_server_2026_wake(void **state)
{
    struct world w;
    int sim_port;
    (void)state;
    memset(&w, 0, sizeof(w));
    mx_it_canary(w.a_token, sizeof(w.a_token));
    const char *args[] = {"--pause-after-ms",
                          "600000",
                          "--pause-mode",
                          "refuse",
                          "--refuse-status",
                          "503",
                          "--wake-ms",
                          "300",
                          NULL};
    assert_true(mx_it_start_sim("sim", w.a_token, args, &sim_port) > 0);
    char *secret = secret_file("sim.secret", w.a_token);
    /* the hook reads the sim's credential from a header file */
    char *hdr_file = mx_it_path("wake.secret");
    char *hdr = mx_xasprintf("Authorization: Bearer %s\n", w.a_token);
    assert_int_equal(mx_it_write_file(hdr_file, hdr, strlen(hdr)), 0);
    w.port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nwake_timeout = \"20s\"\n"
                             "wake = \"cmd:curl -sf -X POST -H @%s http://127.0.0.1:%d/__wake\"\n",
                             w.port, sim_port, secret, hdr_file, sim_port);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w.mcplex = mx_it_start_mcplex(cfg_path, w.port);
    assert_true(w.mcplex > 0);
    w.base = mx_xasprintf("http://127.0.0.1:%d", w.port);
    w.log = mx_it_path("mcplex.log");

    struct mx_it_answer a;
    post26(&w, "/mcp/sim", "tools/list", NULL, "", NULL, NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    mx_it_answer_clear(&a);
    /* pause the sandbox */
    char *control = mx_xasprintf("http://127.0.0.1:%d/__control", sim_port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w.a_token);
    const char *ch[] = {"Content-Type: application/json", auth, NULL};
    long st = 0;
    assert_int_equal(
        mx_it_http("POST", control, ch, "{\"action\":[\"pause\",\"reset_stats\"]}", &st, NULL), 0);
    assert_int_equal(st, 200);
    post26(&w, "/mcp/sim", "tools/call", "echo",
           "\"name\":\"echo\",\"arguments\":{\"message\":\"woke-5157\"}",
           "{},\"progressToken\":\"wake-tok\"", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strcasestr(a.headers, "text/event-stream"));
    const char *prog = strstr(a.body, "waiting for sandbox 'sim' to wake");
    const char *result = strstr(a.body, "woke-5157");
    assert_non_null(prog);
    assert_non_null(strstr(a.body, "\"progressToken\":\"wake-tok\""));
    assert_non_null(result);
    assert_true(prog < result);
    mx_it_assert_modern_result(mx_it_result(&a), false);
    mx_it_answer_clear(&a);
    json_t *stats = mx_it_sim_stats(sim_port, w.a_token);
    assert_non_null(stats);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(stats, "methods"), "tools/call")), 1);
    json_decref(stats);
    const char *canaries[] = {w.a_token};
    stop_and_scan(&w, canaries, 1);
    free(auth);
    free(control);
    free(cfg);
    free(cfg_path);
    free(hdr);
    free(hdr_file);
    free(secret);
    free_world(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_server_2026_http, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_server_2026_tls, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_server_2026_wake, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
