/* SPDX-License-Identifier: MIT */
/*
 * MCP 2026-07-28 (stateless) clients at the merged /mcp endpoint, in raw
 * HTTP, over two sandbox-sim upstreams and one server-everything (all
 * 2025-era): every refusal the revision specifies for headers and _meta,
 * server/discover, the merged lists paged with self-contained cursors and
 * the smallest upstream ttlMs, calls routed to each upstream, progress
 * streamed with the client's token, a missing resource as -32602 with
 * data.uri, a completion, sampling and elicitation questions from
 * server-everything answered through input_required results and their
 * retries, the clear error when the retry comes too late, closing a call's
 * stream cancelling it upstream, a list change and resource updates on
 * subscriptions/listen streams; then the same through the official
 * TypeScript SDK v2 client pinned to 2026-07-28. A 2025 client uses the same
 * mcplex at the same time. No canary in anything mcplex printed or wrote.
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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define PAGE_SIZE    4
#define EV_TIMEOUT_S 5 /* request_timeout of server-everything: bounds the MRTR wait */
#define META_FMT                                                                                   \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":%s%s}"

struct world {
    char a_token[MX_IT_CANARY_SIZE];
    char b_token[MX_IT_CANARY_SIZE];
    char ev_token[MX_IT_CANARY_SIZE];
    int port;
    int a_port;
    int b_port;
    char *a_secret;
    char *b_secret;
    pid_t mcplex;
    char *url;
    char *log;
    char *trace;
};

static char *secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

static void start_world(struct world *w)
{
    int pe;
    mx_it_canary(w->a_token, sizeof(w->a_token));
    mx_it_canary(w->b_token, sizeof(w->b_token));
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    /* both give a freshness hint on their lists; server-everything none */
    const char *a_args[] = {"--name", "sim-a", "--list-ttl-ms", "30000", NULL};
    const char *b_args[] = {"--name", "sim-b", "--list-ttl-ms", "20000", NULL};
    assert_true(mx_it_start_sim("sim-a", w->a_token, a_args, &w->a_port) > 0);
    assert_true(mx_it_start_sim("sim-b", w->b_token, b_args, &w->b_port) > 0);
    assert_true(mx_it_start_everything(w->ev_token, &pe) > 0);
    w->a_secret = secret_file("a.secret", w->a_token);
    w->b_secret = secret_file("b.secret", w->b_token);
    char *se = secret_file("ev.secret", w->ev_token);
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\npage_size = %d\n"
                             "[servers.alpha]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.beta]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nsession = \"per-client\"\n"
                             "[servers.ev]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nrequest_timeout = \"%ds\"\n",
                             w->port, w->trace, PAGE_SIZE, w->a_port, w->a_secret, w->b_port,
                             w->b_secret, pe, se, EV_TIMEOUT_S);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    w->log = mx_it_path("mcplex.log");
    free(se);
    free(cfg);
    free(cfg_path);
}

static void free_world(struct world *w)
{
    free(w->a_secret);
    free(w->b_secret);
    free(w->url);
    free(w->log);
    free(w->trace);
}

/* The body of a request: |params| is the inside of the params object
 * without _meta ("" for none); |caps| the clientCapabilities JSON. */
static char *body_of(int id, const char *method, const char *params, const char *caps,
                     const char *meta_extra)
{
    char *meta = mx_xasprintf(META_FMT, caps ? caps : "{}", meta_extra ? meta_extra : "");
    char *b = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{%s%s%s}}",
                           id, method, meta, *params ? "," : "", params);
    free(meta);
    return b;
}

/* POST |body| with the given 2026 headers (NULL: left out). */
static void post_raw(const char *url, const char *body, const char *version, const char *method,
                     const char *name, struct mx_it_answer *a)
{
    char *hv = version ? mx_xasprintf("MCP-Protocol-Version: %s", version) : NULL;
    char *hm = method ? mx_xasprintf("Mcp-Method: %s", method) : NULL;
    char *hn = name ? mx_xasprintf("Mcp-Name: %s", name) : NULL;
    const char *hdrs[6] = {"Content-Type: application/json",
                           "Accept: application/json, text/event-stream"};
    size_t n = 2;
    if (hv)
        hdrs[n++] = hv;
    if (hm)
        hdrs[n++] = hm;
    if (hn)
        hdrs[n++] = hn;
    hdrs[n] = NULL;
    memset(a, 0, sizeof(*a));
    assert_int_equal(
        mx_it_http_full("POST", url, hdrs, body, 20000, &a->status, &a->headers, &a->body), 0);
    mx_it_answer_parse(a);
    free(hv);
    free(hm);
    free(hn);
}

/* A well-formed 2026 request. */
static void call26_at(const char *url, const char *method, const char *name, const char *params,
                      const char *caps, const char *meta_extra, struct mx_it_answer *a)
{
    char *body = body_of(1, method, params, caps, meta_extra);
    post_raw(url, body, "2026-07-28", method, name, a);
    free(body);
}

static void call26(const struct world *w, const char *method, const char *name, const char *params,
                   const char *caps, const char *meta_extra, struct mx_it_answer *a)
{
    call26_at(w->url, method, name, params, caps, meta_extra, a);
}

/* MCP 2026-07-28, Streamable HTTP: each refusal with its status and code. */
static void assert_refusals(const struct world *w)
{
    struct mx_it_answer a;
    char *ok = body_of(11, "tools/list", "", NULL, NULL);
    post_raw(w->url, ok, NULL, "tools/list", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    /* the id of the request is echoed */
    assert_int_equal(json_integer_value(json_object_get(a.msg, "id")), 11);
    mx_it_answer_clear(&a);

    post_raw(w->url, ok, "2026-07-28", NULL, NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);

    post_raw(w->url, ok, "2026-07-28", "prompts/list", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);

    /* header 2026-07-28, _meta v999: a mismatch before anything else */
    char *b = mx_xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"v999\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    post_raw(w->url, b, "2026-07-28", "tools/list", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);
    free(b);

    /* no clientCapabilities: -32602 */
    b = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{"
                     "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    post_raw(w->url, b, "2026-07-28", "tools/list", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);
    free(b);

    /* a version nobody speaks: -32022 naming what is supported */
    b = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{"
                     "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                     "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    post_raw(w->url, b, "2099-01-01", "tools/list", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32022);
    json_t *data = json_object_get(json_object_get(a.msg, "error"), "data");
    assert_string_equal(json_string_value(json_object_get(data, "requested")), "2099-01-01");
    assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 0)),
                        "2026-07-28");
    mx_it_answer_clear(&a);
    free(b);

    /* Mcp-Name missing, then different from the body, for tools/call */
    b = body_of(6, "tools/call", "\"name\":\"alpha_echo\",\"arguments\":{\"message\":\"x\"}", NULL,
                NULL);
    post_raw(w->url, b, "2026-07-28", "tools/call", NULL, &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);
    post_raw(w->url, b, "2026-07-28", "tools/call", "beta_echo", &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32020);
    mx_it_answer_clear(&a);
    /* the Base64 sentinel form is decoded before comparing */
    post_raw(w->url, b, "2026-07-28", "tools/call", "=?base64?YWxwaGFfZWNobw==?=", &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(mx_it_first_text(mx_it_result(&a)), "x");
    mx_it_answer_clear(&a);
    free(b);

    /* methods 2026-07-28 removed: 404 with -32601 */
    static const char *const removed[] = {"ping", "initialize", "logging/setLevel",
                                          "resources/subscribe"};
    for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++) {
        call26(w, removed[i], NULL, "", NULL, NULL, &a);
        assert_int_equal(a.status, 404);
        assert_int_equal(mx_it_error_code(&a), -32601);
        mx_it_answer_clear(&a);
    }

    /* no GET stream and no DELETE for a modern client */
    const char *gh[] = {"Accept: text/event-stream", "MCP-Protocol-Version: 2026-07-28", NULL};
    long st = 0;
    assert_int_equal(mx_it_http_full("GET", w->url, gh, NULL, 5000, &st, NULL, NULL), 0);
    assert_int_equal(st, 405);
    assert_int_equal(mx_it_http_full("DELETE", w->url, gh, NULL, 5000, &st, NULL, NULL), 0);
    assert_int_equal(st, 405);
    free(ok);
}

static void assert_discover(const struct world *w)
{
    struct mx_it_answer a;
    call26(w, "server/discover", NULL, "", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    json_t *r = mx_it_result(&a);
    mx_it_assert_modern_result(r, true);
    json_t *versions = json_object_get(r, "supportedVersions");
    assert_int_equal(json_array_size(versions), 1);
    assert_string_equal(json_string_value(json_array_get(versions, 0)), "2026-07-28");
    json_t *caps = json_object_get(r, "capabilities");
    assert_true(json_is_true(json_object_get(json_object_get(caps, "tools"), "listChanged")));
    assert_true(json_is_object(json_object_get(caps, "prompts")));
    assert_true(json_is_object(json_object_get(caps, "resources")));
    /* the upstreams' instructions, labelled */
    assert_non_null(strstr(json_string_value(json_object_get(r, "instructions")), "## alpha"));
    mx_it_answer_clear(&a);
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

/* Every page of the merged tools list, each on its own connection: the
 * cursor alone carries the position. */
static json_t *list_all_at(const char *url, const char *method, const char *key, const char *field,
                           int *pages, json_t *ttls);

static json_t *list_all(const struct world *w, const char *method, const char *key,
                        const char *field, int *pages)
{
    json_t *ttls = json_array();
    json_t *names = list_all_at(w->url, method, key, field, pages, ttls);
    size_t i;
    json_t *t;
    /* server-everything gives no hint: 0 for the merged list */
    json_array_foreach(ttls, i, t)
    {
        assert_int_equal(json_integer_value(t), 0);
    }
    json_decref(ttls);
    return names;
}

static json_t *list_all_at(const char *url, const char *method, const char *key, const char *field,
                           int *pages, json_t *ttls)
{
    json_t *names = json_array();
    char *cursor = NULL;
    *pages = 0;
    for (;;) {
        struct mx_it_answer a;
        char *params = cursor ? mx_xasprintf("\"cursor\":\"%s\"", cursor) : mx_xstrdup("");
        call26_at(url, method, NULL, params, NULL, NULL, &a);
        free(params);
        assert_int_equal(a.status, 200);
        json_t *r = mx_it_result(&a);
        mx_it_assert_modern_result(r, true);
        json_array_append_new(ttls, json_integer(json_integer_value(json_object_get(r, "ttlMs"))));
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(r, key), i, it)
        {
            json_array_append(names, json_object_get(it, field));
        }
        (*pages)++;
        assert_true(*pages < 100);
        free(cursor);
        const char *next = json_string_value(json_object_get(r, "nextCursor"));
        cursor = next ? mx_xstrdup(next) : NULL;
        mx_it_answer_clear(&a);
        if (cursor == NULL)
            break;
    }
    return names;
}

static void assert_lists(const struct world *w)
{
    int pages;
    json_t *tools = list_all(w, "tools/list", "tools", "name", &pages);
    size_t n = json_array_size(tools);
    assert_int_equal(pages, (int)((n + PAGE_SIZE - 1) / PAGE_SIZE));
    /* the sims collide on every name; server-everything on echo and get-env */
    assert_true(has_name(tools, "alpha_whoami"));
    assert_true(has_name(tools, "beta_whoami"));
    assert_true(has_name(tools, "alpha_echo"));
    assert_true(has_name(tools, "ev_echo"));
    assert_true(has_name(tools, "trigger-sampling-request"));
    assert_false(has_name(tools, "echo"));
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(json_string_value(json_array_get(tools, i - 1)),
                           json_string_value(json_array_get(tools, i))) < 0);
    json_decref(tools);

    json_t *prompts = list_all(w, "prompts/list", "prompts", "name", &pages);
    assert_true(has_name(prompts, "alpha_greet") && has_name(prompts, "beta_greet"));
    json_decref(prompts);
    json_t *res = list_all(w, "resources/list", "resources", "uri", &pages);
    assert_true(has_name(res, "sim://readme"));
    json_decref(res);
    json_t *tpl =
        list_all(w, "resources/templates/list", "resourceTemplates", "uriTemplate", &pages);
    assert_true(json_array_size(tpl) >= 1);
    json_decref(tpl);

    /* a cursor that is not mcplex's: -32602 */
    struct mx_it_answer a;
    call26(w, "tools/list", NULL, "\"cursor\":\"not-a-cursor\"", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);
}

/* MCP 2026-07-28, Caching: upstream hints pass, the merged list carries
 * the smallest (another mcplex, over the two sims alone). */
static void assert_ttl_hints(const struct world *w)
{
    int port = mx_it_free_port();
    /* its own state_dir: lists from the first one's on-disk catalogue are
     * not fresh (a hint counts from receipt), so they carry 0 */
    char *state = mx_it_path("state-sims-only");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.alpha]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.beta]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, state, w->a_port, w->a_secret, w->b_port, w->b_secret);
    char *path = mx_it_path("sims-only.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    pid_t pid = mx_it_start_mcplex(path, port);
    assert_true(pid > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    static const char *const lists[][3] = {{"tools/list", "tools", "name"},
                                           {"prompts/list", "prompts", "name"},
                                           {"resources/list", "resources", "uri"}};
    for (size_t k = 0; k < 3; k++) {
        int pages;
        json_t *ttls = json_array();
        json_t *names = list_all_at(url, lists[k][0], lists[k][1], lists[k][2], &pages, ttls);
        assert_true(json_array_size(names) > 0);
        size_t i;
        json_t *t;
        /* counted from receipt: at most the 20 s hint, less the time since */
        json_array_foreach(ttls, i, t)
        {
            assert_true(json_integer_value(t) <= 20000);
            assert_true(json_integer_value(t) > 10000);
        }
        json_decref(ttls);
        json_decref(names);
    }
    assert_int_equal(mx_it_signal(pid, SIGTERM), 0);
    assert_true(mx_it_wait_exit(pid, 15000) >= 0);
    free(url);
    free(path);
    free(cfg);
    free(state);
}

static void assert_calls(const struct world *w)
{
    struct mx_it_answer a;
    call26(w, "tools/call", "alpha_whoami", "\"name\":\"alpha_whoami\"", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    mx_it_assert_modern_result(mx_it_result(&a), false);
    assert_string_equal(mx_it_first_text(mx_it_result(&a)), "sim-a");
    mx_it_answer_clear(&a);
    /* beta is per-client for 2025 clients: a stateless client still gets it */
    call26(w, "tools/call", "beta_whoami", "\"name\":\"beta_whoami\"", NULL, NULL, &a);
    assert_string_equal(mx_it_first_text(mx_it_result(&a)), "sim-b");
    mx_it_answer_clear(&a);
    call26(w, "tools/call", "get-sum", "\"name\":\"get-sum\",\"arguments\":{\"a\":20,\"b\":22}",
           NULL, NULL, &a);
    assert_non_null(strstr(mx_it_first_text(mx_it_result(&a)), "42"));
    mx_it_answer_clear(&a);

    /* an unknown tool: -32602 */
    call26(w, "tools/call", "echo", "\"name\":\"echo\"", NULL, NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);

    call26(w, "prompts/get", "beta_greet",
           "\"name\":\"beta_greet\",\"arguments\":{\"name\":\"Ada\"}", NULL, NULL, &a);
    json_t *msgs = json_object_get(mx_it_result(&a), "messages");
    const char *text = json_string_value(
        json_object_get(json_object_get(json_array_get(msgs, 0), "content"), "text"));
    assert_non_null(strstr(text, "Ada"));
    assert_non_null(strstr(text, "sim-b"));
    mx_it_answer_clear(&a);

    /* a resource only server-everything has; cacheable */
    call26(w, "resources/read", "demo://resource/static/document/features.md",
           "\"uri\":\"demo://resource/static/document/features.md\"", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    mx_it_assert_modern_result(mx_it_result(&a), true);
    assert_int_equal(json_array_size(json_object_get(mx_it_result(&a), "contents")), 1);
    mx_it_answer_clear(&a);
    /* nobody has it: 2026's not-found, -32602 with data.uri */
    call26(w, "resources/read", "nothing://here", "\"uri\":\"nothing://here\"", NULL, NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(a.msg, "error"), "data"), "uri")),
                        "nothing://here");
    mx_it_answer_clear(&a);

    /* completion by prompt name */
    call26(w, "completion/complete", NULL,
           "\"ref\":{\"type\":\"ref/prompt\",\"name\":\"completable-prompt\"},"
           "\"argument\":{\"name\":\"department\",\"value\":\"Eng\"}",
           NULL, NULL, &a);
    json_t *values = json_object_get(json_object_get(mx_it_result(&a), "completion"), "values");
    assert_int_equal(json_array_size(values), 1);
    assert_string_equal(json_string_value(json_array_get(values, 0)), "Engineering");
    mx_it_answer_clear(&a);

    /* progress, with the client's own token, streamed before the answer */
    call26(w, "tools/call", "alpha_slow",
           "\"name\":\"alpha_slow\",\"arguments\":{\"steps\":3,\"interval_ms\":50}", NULL,
           ",\"progressToken\":\"my-token-7\"", &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.headers, "text/event-stream"));
    size_t progress = 0;
    for (const char *p = strstr(a.body, "notifications/progress"); p;
         p = strstr(p + 1, "notifications/progress"))
        progress++;
    assert_int_equal(progress, 3);
    assert_non_null(strstr(a.body, "\"progressToken\":\"my-token-7\""));
    assert_null(strstr(a.body, "mcplex-"));
    assert_string_equal(mx_it_first_text(mx_it_result(&a)), "done after 3 steps");
    mx_it_answer_clear(&a);
}

static const char *sampling_args =
    "\"name\":\"trigger-sampling-request\",\"arguments\":{\"prompt\":\"capital?\",\"maxTokens\":"
    "20}";

/* server-everything asks for sampling during the call: input_required,
 * then the retry with the answer continues the same upstream call. */
static void assert_mrtr(const struct world *w)
{
    struct mx_it_answer a;
    call26(w, "tools/call", "trigger-sampling-request", sampling_args, "{\"sampling\":{}}", NULL,
           &a);
    assert_int_equal(a.status, 200);
    json_t *r = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    json_t *reqs = json_object_get(r, "inputRequests");
    assert_int_equal(json_object_size(reqs), 1);
    const char *key = json_object_iter_key(json_object_iter(reqs));
    json_t *q = json_object_get(reqs, key);
    assert_string_equal(json_string_value(json_object_get(q, "method")), "sampling/createMessage");
    assert_null(json_object_get(q, "id"));
    char *dumped = json_dumps(json_object_get(q, "params"), 0);
    assert_non_null(strstr(dumped, "capital?"));
    free(dumped);
    char *state = mx_xstrdup(json_string_value(json_object_get(r, "requestState")));
    char *k = mx_xstrdup(key);
    mx_it_answer_clear(&a);

    char *retry = mx_xasprintf(
        "%s,\"requestState\":\"%s\",\"inputResponses\":{\"%s\":{\"role\":\"assistant\","
        "\"content\":{\"type\":\"text\",\"text\":\"PARIS-FROM-CLIENT\"},\"model\":\"m\","
        "\"stopReason\":\"endTurn\"},\"unknown-key\":{}}",
        sampling_args, state, k);
    call26(w, "tools/call", "trigger-sampling-request", retry, "{\"sampling\":{}}", NULL, &a);
    assert_int_equal(a.status, 200);
    r = mx_it_result(&a);
    mx_it_assert_modern_result(r, false);
    assert_non_null(strstr(mx_it_first_text(r), "PARIS-FROM-CLIENT"));
    mx_it_answer_clear(&a);

    /* the same state again: that call is over */
    call26(w, "tools/call", "trigger-sampling-request", retry, "{\"sampling\":{}}", NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    assert_non_null(strstr(a.body, "has ended"));
    mx_it_answer_clear(&a);
    /* a state is bound to its tool: refused for another */
    char *other = mx_xasprintf("\"name\":\"get-sum\",\"arguments\":{\"a\":1,\"b\":2},"
                               "\"requestState\":\"%s\"",
                               state);
    call26(w, "tools/call", "get-sum", other, "{\"sampling\":{}}", NULL, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    assert_non_null(strstr(a.body, "not issued"));
    mx_it_answer_clear(&a);
    free(other);
    free(retry);

    /* elicitation the same way */
    call26(w, "tools/call", "trigger-elicitation-request",
           "\"name\":\"trigger-elicitation-request\",\"arguments\":{}", "{\"elicitation\":{}}",
           NULL, &a);
    r = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    reqs = json_object_get(r, "inputRequests");
    assert_int_equal(json_object_size(reqs), 1);
    char *ek = mx_xstrdup(json_object_iter_key(json_object_iter(reqs)));
    assert_string_equal(json_string_value(json_object_get(json_object_get(reqs, ek), "method")),
                        "elicitation/create");
    char *eretry = mx_xasprintf(
        "\"name\":\"trigger-elicitation-request\",\"arguments\":{},\"requestState\":\"%s\","
        "\"inputResponses\":{\"%s\":{\"action\":\"accept\",\"content\":{\"name\":"
        "\"ELICITED-NAME-3\"}}}",
        json_string_value(json_object_get(r, "requestState")), ek);
    mx_it_answer_clear(&a);
    call26(w, "tools/call", "trigger-elicitation-request", eretry, "{\"elicitation\":{}}", NULL,
           &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.body, "ELICITED-NAME-3"));
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "resultType")),
                        "complete");
    mx_it_answer_clear(&a);
    free(eretry);
    free(ek);

    /* a client that did not declare sampling is never asked: the upstream
     * hears the refusal and the call ends */
    call26(w, "tools/call", "trigger-sampling-request", sampling_args, "{}", NULL, &a);
    assert_int_equal(a.status, 200);
    assert_null(strstr(a.body, "input_required"));
    mx_it_answer_clear(&a);

    /* no retry within the bound: the parked call is cancelled, and a late
     * retry gets a clear error */
    call26(w, "tools/call", "trigger-sampling-request", sampling_args, "{\"sampling\":{}}", NULL,
           &a);
    r = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    free(state);
    state = mx_xstrdup(json_string_value(json_object_get(r, "requestState")));
    mx_it_answer_clear(&a);
    struct timespec ts = {EV_TIMEOUT_S + 1, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    retry = mx_xasprintf("%s,\"requestState\":\"%s\",\"inputResponses\":{\"%s\":{\"role\":"
                         "\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"late\"},"
                         "\"model\":\"m\"}}",
                         sampling_args, state, k);
    call26(w, "tools/call", "trigger-sampling-request", retry, "{\"sampling\":{}}", NULL, &a);
    assert_int_equal(a.status, 200);
    assert_int_equal(mx_it_error_code(&a), -32602);
    assert_non_null(strstr(a.body, "has ended"));
    mx_it_answer_clear(&a);
    free(retry);
    free(state);
    free(k);
}

static json_t *sim_stats(const struct world *w)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__stats", w->a_port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w->a_token);
    const char *hdrs[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, hdrs, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    free(body);
    free(auth);
    free(url);
    return j;
}

/* MCP 2026-07-28: closing the response stream is the cancel; the 2025
 * upstream hears notifications/cancelled. */
static void assert_close_cancels(const struct world *w)
{
    json_t *before = sim_stats(w);
    json_int_t cancelled0 = json_integer_value(json_object_get(before, "cancelled"));
    json_decref(before);
    char *body = body_of(21, "tools/call",
                         "\"name\":\"alpha_slow\",\"arguments\":{\"steps\":40,\"interval_ms\":100}",
                         NULL, ",\"progressToken\":1");
    int fd = mx_it_raw_post26(w->port, "tools/call", "alpha_slow", body);
    char *acc = NULL;
    size_t len = 0;
    assert_true(mx_it_raw_wait(fd, &acc, &len, "notifications/progress", 2, 10000));
    close(fd);
    free(acc);
    free(body);
    json_int_t cancelled = cancelled0;
    for (int i = 0; i < 50 && cancelled == cancelled0; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        json_t *s = sim_stats(w);
        cancelled = json_integer_value(json_object_get(s, "cancelled"));
        json_decref(s);
    }
    assert_int_equal(cancelled, cancelled0 + 1);
}

/* A list change of an upstream reaches a listen stream, tagged with the
 * subscription's id, and the list then shows it. */
static void assert_listen(const struct world *w)
{
    char *body = body_of(77, "subscriptions/listen",
                         "\"notifications\":{\"resourcesListChanged\":true,"
                         "\"promptsListChanged\":true}",
                         NULL, NULL);
    int fd = mx_it_raw_post26(w->port, "subscriptions/listen", NULL, body);
    char *acc = NULL;
    size_t len = 0;
    assert_true(
        mx_it_raw_wait(fd, &acc, &len, "notifications/subscriptions/acknowledged", 1, 10000));
    assert_non_null(strstr(acc, "text/event-stream"));
    assert_non_null(strstr(acc, "\"io.modelcontextprotocol/subscriptionId\":77"));
    assert_non_null(strstr(acc, "\"resourcesListChanged\":true"));
    assert_null(strstr(acc, "toolsListChanged"));
    /* let the catalogue loads the listen started settle, then change */
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    int seen = 0;
    for (const char *p = strstr(acc, "notifications/resources/list_changed"); p;
         p = strstr(p + 1, "notifications/resources/list_changed"))
        seen++;
    size_t before = len;
    struct mx_it_answer a;
    call26(w, "tools/call", "gzip-file-as-resource",
           "\"name\":\"gzip-file-as-resource\",\"arguments\":{\"name\":\"s26.txt\","
           "\"data\":\"data:text/plain;base64,aGVsbG8=\"}",
           NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    mx_it_answer_clear(&a);
    assert_true(
        mx_it_raw_wait(fd, &acc, &len, "notifications/resources/list_changed", seen + 1, 15000));
    const char *note = strstr(acc + before, "notifications/resources/list_changed");
    assert_non_null(note);
    assert_non_null(strstr(note, "\"io.modelcontextprotocol/subscriptionId\":77"));
    /* never a type the client did not ask for */
    assert_null(strstr(acc, "notifications/tools/list_changed"));
    int pages;
    json_t *uris = list_all(w, "resources/list", "resources", "uri", &pages);
    assert_true(has_name(uris, "demo://resource/session/s26.txt"));
    json_decref(uris);
    close(fd);
    free(acc);
    free(body);
}

/* resourceSubscriptions: the resources one upstream serves and lets
 * subscribe to are honoured (subscribed on its shared session), others are
 * left out of the acknowledgement; the upstream's updates arrive tagged. */
static void assert_resource_updates(const struct world *w)
{
    char *body = body_of(78, "subscriptions/listen",
                         "\"notifications\":{\"resourceSubscriptions\":["
                         "\"demo://resource/static/document/features.md\",\"nothing://here\"]}",
                         NULL, NULL);
    int fd = mx_it_raw_post26(w->port, "subscriptions/listen", NULL, body);
    char *acc = NULL;
    size_t len = 0;
    assert_true(
        mx_it_raw_wait(fd, &acc, &len, "notifications/subscriptions/acknowledged", 1, 10000));
    assert_non_null(strstr(acc, "\"resourceSubscriptions\":["
                                "\"demo://resource/static/document/features.md\"]"));
    assert_null(strstr(acc, "nothing://here"));
    /* server-everything sends updates for what its session subscribed to
     * once this tool is on: now, then every 5 s */
    struct mx_it_answer a;
    call26(w, "tools/call", "toggle-subscriber-updates",
           "\"name\":\"toggle-subscriber-updates\",\"arguments\":{}", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    mx_it_answer_clear(&a);
    assert_true(mx_it_raw_wait(fd, &acc, &len, "notifications/resources/updated", 1, 10000));
    const char *note = strstr(acc, "notifications/resources/updated");
    assert_non_null(strstr(note, "\"uri\":\"demo://resource/static/document/features.md\""));
    assert_non_null(strstr(note, "\"io.modelcontextprotocol/subscriptionId\":78"));
    close(fd);
    free(acc);
    free(body);
}

/* A 2025 client at the same time, on the same upstream sessions. */
static void assert_legacy_client(const struct world *w)
{
    json_t *out = NULL;
    int rc = mx_it_client(w->url, "call", "{\"name\":\"alpha_whoami\"}", NULL, &out);
    assert_int_equal(rc, 0);
    json_t *r = json_object_get(out, "result");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "sim-a");
    assert_null(json_object_get(r, "resultType"));
    json_decref(out);
}

/* The official TypeScript SDK v2 client pinned to 2026-07-28: discover,
 * lists, calls on both sims, progress, sampling through MRTR (answered by
 * its own handler), a list change through subscriptions/listen. */
static void assert_sdk_client(const struct world *w)
{
    const char *args[] = {
        w->url,
        "{\"calls\":[{\"name\":\"alpha_whoami\"},{\"name\":\"beta_whoami\"}],"
        "\"progress\":{\"name\":\"beta_slow\",\"arguments\":{\"steps\":3,\"interval_ms\":50}},"
        "\"sampling\":{\"name\":\"trigger-sampling-request\",\"arguments\":{\"prompt\":\"q\","
        "\"maxTokens\":5},\"reply\":\"SDK-REPLY-9\"},"
        "\"listen\":{\"name\":\"gzip-file-as-resource\",\"arguments\":{\"name\":\"sdk.txt\","
        "\"data\":\"data:text/plain;base64,aGVsbG8=\"}}}",
        NULL};
    json_t *out = NULL;
    assert_int_equal(mx_it_node("client26.mjs", args, NULL, &out), 0);
    assert_non_null(out);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("SDK client: %s", json_string_value(json_object_get(out, "error")));
    assert_string_equal(json_string_value(json_object_get(out, "protocol_version")), "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "server"), "name")),
                        "mcplex");
    /* it really spoke 2026: discover first, no initialize, no session */
    json_t *wire = json_object_get(out, "wire");
    assert_string_equal(json_string_value(json_object_get(json_array_get(wire, 0), "method")),
                        "server/discover");
    size_t i, calls = 0;
    json_t *e;
    json_array_foreach(wire, i, e)
    {
        const char *m = json_string_value(json_object_get(e, "method"));
        assert_true(m == NULL || strcmp(m, "initialize") != 0);
        assert_false(json_is_true(json_object_get(e, "session")));
        assert_string_equal(json_string_value(json_object_get(e, "version")), "2026-07-28");
        if (m && strcmp(m, "tools/call") == 0)
            calls++;
    }
    /* two plain calls, progress, and the sampling call plus its retry, the
     * listen's call */
    assert_int_equal(calls, 6);
    assert_true(has_name(json_object_get(out, "tools"), "alpha_slow"));
    json_t *texts = json_object_get(out, "calls");
    assert_string_equal(json_string_value(json_array_get(texts, 0)), "sim-a");
    assert_string_equal(json_string_value(json_array_get(texts, 1)), "sim-b");
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_string_equal(json_string_value(json_object_get(out, "progress_result")),
                        "done after 3 steps");
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    assert_non_null(
        strstr(json_string_value(json_object_get(out, "sampling_result")), "SDK-REPLY-9"));
    assert_true(json_is_true(
        json_object_get(json_object_get(out, "listen_honored"), "resourcesListChanged")));
    assert_true(json_is_true(json_object_get(out, "notified")));
    assert_false(
        has_name(json_object_get(out, "resources_before"), "demo://resource/session/sdk.txt"));
    assert_true(
        has_name(json_object_get(out, "resources_after"), "demo://resource/session/sdk.txt"));
    json_decref(out);
}

/* How many |method| requests the trace shows mcplex sending to |server|. */
static int upstream_sent(const struct world *w, const char *server, const char *method)
{
    char *trace = mx_it_read_file(w->trace, NULL);
    assert_non_null(trace);
    int n = 0;
    for (char *line = trace; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        json_t *j = json_loads(line, 0, NULL);
        const char *srv = json_string_value(json_object_get(j, "server"));
        const char *m = json_string_value(json_object_get(json_object_get(j, "msg"), "method"));
        const char *dir = json_string_value(json_object_get(j, "dir"));
        if (srv && m && dir && strcmp(srv, server) == 0 && strcmp(m, method) == 0 &&
            strcmp(dir, "c2s") == 0)
            n++;
        json_decref(j);
        line = nl ? nl + 1 : NULL;
    }
    free(trace);
    return n;
}

static void assert_no_canary(const struct world *w)
{
    const char *canaries[] = {w->a_token, w->b_token, w->ev_token};
    const char *files[] = {w->log, w->trace, NULL};
    for (size_t i = 0; i < 3; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, canaries[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
}

static void test_stateless_clients(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_refusals(&w);
    assert_discover(&w);
    assert_lists(&w);
    assert_ttl_hints(&w);
    assert_calls(&w);
    assert_mrtr(&w);
    assert_close_cancels(&w);
    assert_listen(&w);
    assert_resource_updates(&w);
    assert_sdk_client(&w);
    assert_legacy_client(&w);

    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_no_canary(&w);
    /* the upstream subscription ended with the last listen stream */
    assert_int_equal(upstream_sent(&w, "ev", "resources/subscribe"), 1);
    assert_int_equal(upstream_sent(&w, "ev", "resources/unsubscribe"), 1);
    free_world(&w);
    mx_it_pass();
}

/* A paused sandbox (hold mode) wakes on a 2026 call; a request that asked
 * for progress hears that it is waking, with its own token, then gets its
 * answer on the same stream. */
static void test_stateless_wake_progress(void **state)
{
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    (void)state;
    mx_it_canary(token, sizeof(token));
    const char *args[] = {"--name",    "sim",          "--pause-after-ms",
                          "800",       "--pause-mode", "hold",
                          "--hold-ms", "2500",         NULL};
    assert_true(mx_it_start_sim("sim", token, args, &sim_port) > 0);
    char *secret = secret_file("sim.secret", token);
    int port = mx_it_free_port();
    char *state_dir = mx_it_path("state");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nidle_close = \"1s\"\n",
                             port, state_dir, sim_port, secret);
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    pid_t pid = mx_it_start_mcplex(path, port);
    assert_true(pid > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    struct mx_it_answer a;
    call26_at(url, "tools/call", "echo", "\"name\":\"echo\",\"arguments\":{\"message\":\"one\"}",
              NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    mx_it_answer_clear(&a);
    struct timespec idle = {1, 400 * 1000 * 1000};
    nanosleep(&idle, NULL); /* past pause_after_ms: paused again */
    call26_at(url, "tools/call", "echo", "\"name\":\"echo\",\"arguments\":{\"message\":\"two\"}",
              NULL, ",\"progressToken\":\"wake-tok\"", &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strcasestr(a.headers, "text/event-stream"));
    const char *prog = strstr(a.body, "waiting for sandbox 'sim' to wake");
    const char *result = strstr(a.body, "\"text\":\"two\"");
    assert_non_null(prog);
    assert_non_null(strstr(a.body, "\"progressToken\":\"wake-tok\""));
    assert_non_null(result);
    assert_true(prog < result);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "resultType")),
                        "complete");
    mx_it_answer_clear(&a);
    assert_int_equal(mx_it_signal(pid, SIGTERM), 0);
    assert_true(mx_it_wait_exit(pid, 15000) >= 0);
    free(url);
    free(path);
    free(cfg);
    free(state_dir);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stateless_clients, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_stateless_wake_progress, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
