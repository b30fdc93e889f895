/* SPDX-License-Identifier: MIT */
/*
 * mcplex as a client of an MCP 2026-07-28 upstream: sandbox-sim
 * --conformance speaks both eras and offers some tools (the
 * test_input_required_result_* family, test_trigger_tool_change) only to
 * 2026-07-28 clients. Through /mcp, with the official 2025 TypeScript SDK
 * client and with the SDK v2 client pinned to 2026-07-28: the 2026-only
 * tools are listed (mcplex learnt the revision with server/discover and
 * spoke it), calls answer, progress reaches the caller, a sampling question
 * of an input_required result reaches the client and its answer goes back
 * in the retry, and a tool list change reaches a 2025 client through
 * mcplex's subscriptions/listen upstream; a stateless client's own
 * capabilities reach the upstream (a refusal for one it lacks keeps its
 * 400/-32021), and the questions of one input_required result reach it at
 * once under the upstream's keys. A 2025 client's resources/subscribe and
 * unsubscribe become the resourceSubscriptions of mcplex's listen stream
 * toward the upstream (opened again with the new filter, the old one
 * closed, list changes still heard), and its logging/setLevel level goes
 * with each of its calls as the logLevel of _meta, so the tool's log
 * messages reach it (and none without a level, and none below it). The
 * sim counts no initialize and no session; mcplex's trace shows
 * server/discover and no initialize toward the upstream; the outcome is
 * logged once. The fixture honours no resourceSubscriptions, so a second
 * scenario puts an upstream that does behind mcplex: another mcplex, in
 * front of server-everything, whose updates then reach the 2025 client
 * until it unsubscribes. No canary anywhere.
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
#include "err.h"
#include "harness.h"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int port;
    int sim_port;
    pid_t sim;
    pid_t mcplex;
    char *url;
    char *log;
    char *trace;
};

static void start_world(struct world *w)
{
    mx_it_canary(w->token, sizeof(w->token));
    const char *args[] = {"--conformance", "--name", "conf-sim", NULL};
    w->sim = mx_it_start_sim("conf-sim", w->token, args, &w->sim_port);
    assert_true(w->sim > 0);
    char *secret = mx_it_path("conf.secret");
    assert_int_equal(mx_it_write_file(secret, w->token, strlen(w->token)), 0);
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\n"
                             "[servers.conf]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, w->trace, w->sim_port, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    w->log = mx_it_path("mcplex.log");
    free(cfg);
    free(cfg_path);
    free(secret);
}

static json_t *sim_stats(const struct world *w)
{
    json_t *st = mx_it_sim_stats(w->sim_port, w->token);
    assert_non_null(st);
    return st;
}

static json_t *client_ok_at(const char *url, const char *scenario, const char *args)
{
    json_t *out = mx_it_client_ok(url, scenario, args);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("client %s: %s", scenario, json_dumps(out, 0));
    return out;
}

static json_t *client_ok(const struct world *w, const char *scenario, const char *args)
{
    return client_ok_at(w->url, scenario, args);
}

/* The 2025 SDK client: lists, a call, progress, sampling through MRTR. */
static void assert_client_2025(const struct world *w)
{
    json_t *out = client_ok(w, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    assert_true(mx_it_has_string(tools, "test_simple_text"));
    assert_true(mx_it_has_string(tools, "test_tool_with_progress"));
    /* offered by the sim to 2026-07-28 clients only */
    assert_true(mx_it_has_string(tools, "test_input_required_result_sampling"));
    assert_true(mx_it_has_string(tools, "test_trigger_tool_change"));
    assert_true(mx_it_has_string(json_object_get(json_object_get(out, "prompts"), "names"),
                                 "test_simple_prompt"));
    json_decref(out);

    out = client_ok(w, "call", "{\"name\":\"test_simple_text\"}");
    const char *t = mx_it_result_text(out);
    assert_non_null(t);
    assert_true(strlen(t) > 0);
    /* nothing of 2026-07-28 reaches the 2025 client, nor the upstream's
     * serverInfo (mcplex is its server) */
    json_t *res = json_object_get(out, "result");
    assert_null(json_object_get(res, "resultType"));
    assert_null(
        json_object_get(json_object_get(res, "_meta"), "io.modelcontextprotocol/serverInfo"));
    json_decref(out);

    out = client_ok(w, "progress", "{\"name\":\"test_tool_with_progress\"}");
    json_t *progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(progress, 2), "progress")),
                     100);
    assert_null(json_object_get(json_object_get(out, "result"), "error"));
    json_decref(out);

    out = client_ok(w, "sampling",
                    "{\"name\":\"test_input_required_result_sampling\","
                    "\"reply\":\"REPLY-2025-77\"}");
    mx_it_assert_sampled_once(out, "REPLY-2025-77");
    json_decref(out);
}

static json_int_t sim_method_count(const struct world *w, const char *method)
{
    json_t *st = sim_stats(w);
    json_int_t n = json_integer_value(json_object_get(json_object_get(st, "methods"), method));
    json_decref(st);
    return n;
}

/* A change of the upstream's tool list makes mcplex list its tools again:
 * it hears it on its subscriptions/listen stream (the trace shows the
 * notification, then a tools/list toward the upstream). */
static void assert_list_change(const struct world *w)
{
    json_int_t before = sim_method_count(w, "tools/list");
    json_t *out = client_ok(w, "call", "{\"name\":\"test_trigger_tool_change\"}");
    json_decref(out);
    json_int_t after = before;
    for (int i = 0; i < 100 && after <= before; i++) {
        usleep(50 * 1000);
        after = sim_method_count(w, "tools/list");
    }
    assert_true(after > before);

    char *trace = mx_it_read_file(w->trace, NULL);
    assert_non_null(trace);
    const char *note = strstr(trace, "\"method\":\"notifications/tools/list_changed\"");
    assert_non_null(note);
    assert_non_null(strstr(note, "io.modelcontextprotocol/subscriptionId"));
    const char *relist = strstr(note, "\"method\":\"tools/list\"");
    assert_non_null(relist);
    free(trace);
}

/* A 2025 session at /mcp over raw HTTP; its Mcp-Session-Id (caller frees). */
static char *session_2025(const struct world *w)
{
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"it-raw\",\"version\":\"1\"}}}";
    long status = 0;
    char *rh = NULL, *rb = NULL;
    assert_int_equal(mx_it_http_full("POST", w->url, hdrs, init, 20000, &status, &rh, &rb), 0);
    assert_int_equal(status, 200);
    const char *p = strcasestr(rh, "Mcp-Session-Id: ");
    assert_non_null(p);
    p += strlen("Mcp-Session-Id: ");
    size_t n = strcspn(p, "\r\n");
    char *sid = mx_xstrndup(p, n);
    free(rh);
    free(rb);
    char *sh = mx_xasprintf("Mcp-Session-Id: %s", sid);
    const char *hdrs2[] = {"Content-Type: application/json",
                           "Accept: application/json, text/event-stream",
                           "MCP-Protocol-Version: 2025-11-25", sh, NULL};
    assert_int_equal(
        mx_it_http_full("POST", w->url, hdrs2,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 20000,
                        &status, NULL, NULL),
        0);
    assert_int_equal(status, 202);
    free(sh);
    return sid;
}

/* POST |body| on 2025 session |sid|: the response body (JSON or SSE; caller
 * frees), which must hold a result. */
static char *post_2025(const struct world *w, const char *sid, const char *body)
{
    char *sh = mx_xasprintf("Mcp-Session-Id: %s", sid);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream",
                          "MCP-Protocol-Version: 2025-11-25", sh, NULL};
    long status = 0;
    char *rb = NULL;
    assert_int_equal(mx_it_http_full("POST", w->url, hdrs, body, 20000, &status, NULL, &rb), 0);
    assert_int_equal(status, 200);
    if (strstr(rb, "\"result\"") == NULL)
        fail_msg("no result for %s: %s", body, rb);
    free(sh);
    return rb;
}

/* resources/subscribe or unsubscribe (|method|) of |uri| with id |id| on
 * session |sid|: answered {}. */
static void sub_2025(const struct world *w, const char *sid, const char *method, int id,
                     const char *uri)
{
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\","
                              "\"params\":{\"uri\":\"%s\"}}",
                              id, method, uri);
    char *rb = post_2025(w, sid, body);
    if (strstr(rb, "\"result\":{}") == NULL)
        fail_msg("%s %s: %s", method, uri, rb);
    free(rb);
    free(body);
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* How many test_tool_with_logging log messages session |sid| gets. */
static size_t logging_call(const struct world *w, const char *sid)
{
    char *rb = post_2025(w, sid,
                         "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
                         "\"name\":\"test_tool_with_logging\",\"arguments\":{}}}");
    size_t n = count_of(rb, "\"method\":\"notifications/message\"");
    free(rb);
    return n;
}

static void set_level_2025(const struct world *w, const char *sid, const char *level)
{
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\","
                              "\"params\":{\"level\":\"%s\"}}",
                              level);
    free(post_2025(w, sid, body));
    free(body);
}

/* The upstream's lines of the trace toward it that hold |needle|. */
static int up_lines(const struct world *w, const char *needle)
{
    return mx_it_trace_count(w->trace, "c2s", "conf", needle);
}

/*
 * logging/setLevel of a 2025 client is answered by mcplex and its level
 * travels with each of that client's calls (MCP 2026-07-28 has no
 * setLevel): the fixture logs only for a request whose _meta names a
 * level, at info. Two clients share the upstream session and each gets
 * what its own level asks for; mcplex's own requests carry none.
 */
static void assert_logging(const struct world *w)
{
    char *quiet = session_2025(w);
    char *loud = session_2025(w);
    char *picky = session_2025(w);
    assert_int_equal(logging_call(w, quiet), 0);
    assert_int_equal(up_lines(w, "io.modelcontextprotocol/logLevel"), 0);
    set_level_2025(w, loud, "debug");
    set_level_2025(w, picky, "error");
    assert_int_equal(logging_call(w, loud), 3);
    assert_int_equal(logging_call(w, quiet), 0);
    assert_int_equal(logging_call(w, picky), 0);
    assert_int_equal(up_lines(w, "\"io.modelcontextprotocol/logLevel\":\"debug\""), 1);
    assert_int_equal(up_lines(w, "\"io.modelcontextprotocol/logLevel\":\"error\""), 1);
    assert_int_equal(up_lines(w, "io.modelcontextprotocol/logLevel"), 2);
    /* no setLevel went upstream: that revision has none */
    assert_int_equal(up_lines(w, "logging/setLevel"), 0);
    free(quiet);
    free(loud);
    free(picky);
}

static json_int_t sim_streams(const struct world *w)
{
    json_t *st = sim_stats(w);
    json_int_t n = json_integer_value(json_object_get(st, "streams"));
    json_decref(st);
    return n;
}

/* Wait (bounded) until the sim holds |want| streams open. */
static void wait_streams(const struct world *w, json_int_t want)
{
    json_int_t n = -1;
    for (int i = 0; i < 100 && n != want; i++) {
        n = sim_streams(w);
        if (n != want)
            usleep(50 * 1000);
    }
    assert_int_equal(n, want);
}

/*
 * resources/subscribe and unsubscribe of a 2025 client: mcplex opens its
 * listen stream toward the upstream again with the URI among its
 * resourceSubscriptions (without it after the unsubscribe), answers once
 * the upstream has acknowledged the new stream, and closes the old one; a
 * tool list change still reaches mcplex after each re-open. The fixture
 * does not honour resourceSubscriptions, which mcplex logs.
 */
static void assert_subscriptions(const struct world *w)
{
    static const char with_uri[] = "\"resourceSubscriptions\":[\"test://watched-resource\"]";
    char *sid = session_2025(w);
    wait_streams(w, 1); /* the listen stream for the list changes */
    int listens = up_lines(w, "\"method\":\"subscriptions/listen\"");
    assert_int_equal(up_lines(w, "resourceSubscriptions"), 0);

    sub_2025(w, sid, "resources/subscribe", 11, "test://watched-resource");
    /* answered after the new stream was acknowledged */
    assert_int_equal(up_lines(w, "\"method\":\"subscriptions/listen\""), listens + 1);
    assert_int_equal(up_lines(w, with_uri), 1);
    assert_int_equal(up_lines(w, "resources/subscribe"), 0);
    /* in the trace: the new stream, its acknowledgement, then the answer */
    char *trace = mx_it_read_file(w->trace, NULL);
    assert_non_null(trace);
    const char *opened = strstr(trace, with_uri);
    assert_non_null(opened);
    const char *ack = strstr(opened, "notifications/subscriptions/acknowledged");
    assert_non_null(ack);
    assert_non_null(strstr(ack, "\"id\":11,\"result\":{}"));
    free(trace);
    wait_streams(w, 1); /* the old stream is closed */
    char *log = mx_it_read_file(w->log, NULL);
    assert_non_null(strstr(log, "does not honour a subscription to test://watched-resource"));
    free(log);
    assert_list_change(w);

    /* a second subscribe of the same URI changes nothing upstream */
    char *other = session_2025(w);
    sub_2025(w, other, "resources/subscribe", 12, "test://watched-resource");
    assert_int_equal(up_lines(w, "\"method\":\"subscriptions/listen\""), listens + 1);
    sub_2025(w, other, "resources/unsubscribe", 13, "test://watched-resource");
    assert_int_equal(up_lines(w, "\"method\":\"subscriptions/listen\""), listens + 1);

    /* the last subscriber leaves: a stream without the URI */
    sub_2025(w, sid, "resources/unsubscribe", 14, "test://watched-resource");
    assert_int_equal(up_lines(w, "\"method\":\"subscriptions/listen\""), listens + 2);
    assert_int_equal(up_lines(w, with_uri), 1);
    wait_streams(w, 1);
    assert_list_change(w);
    free(other);
    free(sid);
}

/*
 * The upstream restarts while a 2025 client is subscribed: the listen
 * stream breaks, and the one mcplex opens again (retrying while the
 * upstream is away) still carries the subscription and is acknowledged;
 * list changes are heard on it.
 */
static void assert_subscription_survives(struct world *w)
{
    static const char with_uri[] = "\"resourceSubscriptions\":[\"test://watched-resource\"]";
    char *sid = session_2025(w);
    sub_2025(w, sid, "resources/subscribe", 21, "test://watched-resource");
    int before = up_lines(w, with_uri);
    assert_int_equal(mx_it_signal(w->sim, SIGTERM), 0);
    assert_true(mx_it_wait_exit(w->sim, 10000) >= 0);
    usleep(300 * 1000);
    char *at = mx_xasprintf("127.0.0.1:%d", w->sim_port);
    const char *args[] = {"--conformance", "--name", "conf-sim", "--listen", at, NULL};
    int port = 0;
    w->sim = mx_it_start_sim("conf-sim-again", w->token, args, &port);
    assert_true(w->sim > 0);
    assert_int_equal(port, w->sim_port);
    /* bounded: the re-opens back off to a few seconds at most */
    const char *ack = NULL;
    char *trace = NULL;
    for (int i = 0; i < 300 && ack == NULL; i++) {
        free(trace);
        usleep(50 * 1000);
        trace = mx_it_read_file(w->trace, NULL);
        const char *last = NULL;
        for (const char *p = strstr(trace, with_uri); p; p = strstr(p + 1, with_uri))
            last = p;
        if (last && up_lines(w, with_uri) > before)
            ack = strstr(last, "notifications/subscriptions/acknowledged");
    }
    assert_non_null(ack);
    free(trace);
    wait_streams(w, 1);
    assert_list_change(w);
    free(at);
    free(sid);
}

/* The SDK v2 client pinned to 2026-07-28, in front of mcplex. */
static void assert_client_2026(const struct world *w)
{
    const char *args[] = {w->url,
                          "{\"calls\":[{\"name\":\"test_simple_text\"}],"
                          "\"progress\":{\"name\":\"test_tool_with_progress\"},"
                          "\"sampling\":{\"name\":\"test_input_required_result_sampling\","
                          "\"reply\":\"REPLY-2026-88\"}}",
                          NULL};
    json_t *out = NULL;
    assert_int_equal(mx_it_node("client26.mjs", args, NULL, &out), 0);
    assert_non_null(out);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("SDK v2 client: %s", json_dumps(out, 0));
    assert_string_equal(json_string_value(json_object_get(out, "protocol_version")), "2026-07-28");
    json_t *tools = json_object_get(out, "tools");
    assert_true(mx_it_has_string(tools, "test_simple_text"));
    assert_true(mx_it_has_string(tools, "test_input_required_result_elicitation"));
    const char *t = json_string_value(json_array_get(json_object_get(out, "calls"), 0));
    assert_non_null(t);
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    const char *s = json_string_value(json_object_get(out, "sampling_result"));
    if (s == NULL || strstr(s, "REPLY-2026-88") == NULL)
        fail_msg("sampling answer not in the result: %s", s ? s : "(none)");
    json_decref(out);
}

/* The answer in |body| (JSON, or the last SSE event); new reference. */
static json_t *answer_of(const char *body)
{
    const char *last = NULL;
    for (const char *p = strstr(body, "data: "); p; p = strstr(p + 1, "data: "))
        last = p + 6;
    json_t *msg = json_loads(last ? last : body, JSON_DISABLE_EOF_CHECK, NULL);
    if (msg == NULL)
        fail_msg("not JSON: %s", body);
    return msg;
}

/* A raw 2026 tools/call of |tool| with clientCapabilities |caps| and more
 * params |extra| ("" for none, else starting with a comma): the HTTP
 * status and the parsed answer (the last SSE event or the body). */
static json_t *call26(const struct world *w, const char *tool, const char *caps, const char *extra,
                      long *status)
{
    char *body =
        mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                     "\"%s\",\"arguments\":{}%s,\"_meta\":{"
                     "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                     "\"io.modelcontextprotocol/clientCapabilities\":%s}}}",
                     tool, extra, caps);
    char *name = mx_xasprintf("Mcp-Name: %s", tool);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream",
                          "MCP-Protocol-Version: 2026-07-28",
                          "Mcp-Method: tools/call",
                          name,
                          NULL};
    char *resp_headers = NULL, *resp = NULL;
    assert_int_equal(
        mx_it_http_full("POST", w->url, hdrs, body, 20000, status, &resp_headers, &resp), 0);
    json_t *msg = answer_of(resp);
    free(name);
    free(body);
    free(resp_headers);
    free(resp);
    return msg;
}

static json_t *call_missing_capability(const struct world *w, const char *caps, long *status)
{
    return call26(w, "test_missing_capability", caps, "", status);
}

/* Three questions of one input_required result reach a stateless client
 * at once, under the upstream's keys; the retry with the answers and
 * mcplex's requestState gets the upstream's final result. */
static void assert_input_required_keys(const struct world *w)
{
    static const char caps[] = "{\"sampling\":{},\"elicitation\":{},\"roots\":{}}";
    long status = 0;
    json_t *a = call26(w, "test_input_required_result_multiple_inputs", caps, "", &status);
    assert_int_equal(status, 200);
    json_t *r = json_object_get(a, "result");
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    json_t *reqs = json_object_get(r, "inputRequests");
    assert_int_equal(json_object_size(reqs), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(reqs, "user_name"), "method")),
        "elicitation/create");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(reqs, "greeting"), "method")),
        "sampling/createMessage");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(reqs, "client_roots"), "method")),
        "roots/list");
    const char *state = json_string_value(json_object_get(r, "requestState"));
    assert_non_null(state);
    char *extra = mx_xasprintf(
        ",\"inputResponses\":{\"user_name\":{\"action\":\"accept\",\"content\":{\"name\":"
        "\"Ada-4711\"}},\"greeting\":{\"role\":\"assistant\",\"model\":\"m\",\"content\":"
        "{\"type\":\"text\",\"text\":\"Hi-4712\"}},\"client_roots\":{\"roots\":[{\"uri\":"
        "\"file:///tmp\",\"name\":\"tmp\"}]}},\"requestState\":\"%s\"",
        state);
    json_t *b = call26(w, "test_input_required_result_multiple_inputs", caps, extra, &status);
    assert_int_equal(status, 200);
    r = json_object_get(b, "result");
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    char *dump = json_dumps(r, 0);
    if (strstr(dump, "Ada-4711") == NULL || strstr(dump, "Hi-4712") == NULL)
        fail_msg("answers not in the result: %s", dump);
    free(dump);
    free(extra);
    json_decref(b);
    json_decref(a);
}

/* The upstream hears the stateless client's own capabilities, not those of
 * mcplex's shared session: without sampling the fixture refuses with
 * 400/-32021, and mcplex keeps both. */
static void assert_client_capabilities(const struct world *w)
{
    long status = 0;
    json_t *a = call_missing_capability(w, "{}", &status);
    assert_int_equal(status, 400);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "error"), "code")),
                     -32021);
    json_decref(a);
    a = call_missing_capability(w, "{\"sampling\":{}}", &status);
    assert_int_equal(status, 200);
    assert_true(json_is_object(json_object_get(a, "result")));
    json_decref(a);
}

/* Nothing of the 2025 handshake reached the upstream. */
static void assert_stateless_upstream(const struct world *w)
{
    json_t *st = sim_stats(w);
    json_t *methods = json_object_get(st, "methods");
    assert_int_equal(json_integer_value(json_object_get(methods, "initialize")), 0);
    assert_true(json_integer_value(json_object_get(methods, "tools/call")) >= 6);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(st, "sessions"), "created")), 0);
    /* no GET stream either: the fixture refuses a GET without a session
     * with 405, and counted none */
    assert_null(json_object_get(json_object_get(st, "status"), "405"));
    json_decref(st);

    /* mcplex's trace of its side toward the upstream */
    char *trace = mx_it_read_file(w->trace, NULL);
    assert_non_null(trace);
    size_t discover = 0, listen = 0, up_lines = 0;
    for (char *line = trace, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, "\"server\":\"conf\"") == NULL || strstr(line, "\"dir\":\"c2s\"") == NULL)
            continue;
        up_lines++;
        if (strstr(line, "\"method\":\"initialize\"") || strstr(line, "notifications/initialized"))
            fail_msg("initialize sent upstream: %s", line);
        if (strstr(line, "\"method\":\"server/discover\""))
            discover++;
        if (strstr(line, "\"method\":\"subscriptions/listen\""))
            listen++;
        if (strstr(line, "\"method\":\"tools/call\""))
            assert_non_null(strstr(line, "io.modelcontextprotocol/protocolVersion"));
    }
    free(trace);
    assert_true(up_lines > 0);
    assert_int_equal(discover, 1); /* learnt once for the upstream */
    assert_true(listen >= 1);

    /* the outcome is logged once, at info */
    char *log = mx_it_read_file(w->log, NULL);
    assert_non_null(log);
    char *first = strstr(log, "speaks MCP 2026-07-28");
    assert_non_null(first);
    assert_null(strstr(first + 1, "speaks MCP 2026-07-28"));
    free(log);
}

static void test_upstream_2026(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_client_2025(&w);
    assert_list_change(&w);
    assert_client_2026(&w);
    assert_client_capabilities(&w);
    assert_input_required_keys(&w);
    assert_logging(&w);
    assert_subscriptions(&w);
    assert_stateless_upstream(&w);
    assert_subscription_survives(&w);

    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    const char *files[] = {w.log, w.trace, NULL};
    char **hits = NULL;
    int n = mx_it_scan_for(files, w.token, &hits);
    for (int k = 0; k < n; k++)
        fprintf(stderr, "canary found in %s\n", hits[k]);
    mx_it_strv_free(hits);
    assert_int_equal(n, 0);
    free(w.url);
    free(w.log);
    free(w.trace);
    mx_it_pass();
}

/* What session |sid| of |w| gets on its GET stream in |ms| (caller frees). */
static char *get_stream(const struct world *w, const char *sid, int ms)
{
    char *sh = mx_xasprintf("Mcp-Session-Id: %s", sid);
    const char *hdrs[] = {"Accept: text/event-stream", "MCP-Protocol-Version: 2025-11-25", sh,
                          NULL};
    long status = 0;
    char *rb = NULL;
    int rc = 0;
    /* 409 while mcplex has not yet seen the previous stream close */
    for (int i = 0; i < 20; i++) {
        free(rb);
        rb = NULL;
        rc = mx_it_http_full("GET", w->url, hdrs, NULL, ms, &status, NULL, &rb);
        if (rc != 0 || status != 409)
            break;
        usleep(100 * 1000);
    }
    if (rc != MX_ETIMEDOUT)
        fail_msg("GET stream: %d, HTTP %ld: %s", rc, status, rb);
    free(sh);
    return rb;
}

static char *write_config(const char *name, int port, const char *trace, const char *server)
{
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\n%s",
                             port, trace, server);
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    free(cfg);
    return path;
}

/*
 * Through a 2026-07-28 upstream that honours resourceSubscriptions: an
 * inner mcplex in front of server-everything (which has resources/subscribe
 * and a tool that makes it send updates) is the outer one's upstream. The
 * outer mcplex learns with server/discover that the inner one speaks
 * 2026-07-28; a 2025 client's subscribe becomes the resourceSubscriptions
 * of the outer one's listen stream, which the inner one acknowledges with
 * the URI (and subscribes on server-everything); an update reaches the
 * client's GET stream, without the listen stream's subscription id; after
 * the unsubscribe none does. A 2026-07-28 client's listen stream for the
 * same resource goes the same way and gets the updates.
 */
static void test_subscription_updates(void **state)
{
    char token[MX_IT_CANARY_SIZE];
    (void)state;
    mx_it_canary(token, sizeof(token));
    int every_port = 0;
    assert_true(mx_it_start_everything(token, &every_port) > 0);
    char *secret = mx_it_path("every.secret");
    assert_int_equal(mx_it_write_file(secret, token, strlen(token)), 0);
    int inner_port = mx_it_free_port();
    char *inner_trace = mx_it_path("inner.jsonl");
    char *every = mx_xasprintf("[servers.every]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                               "secret = \"file:%s\"\n",
                               every_port, secret);
    char *inner_cfg = write_config("inner.toml", inner_port, inner_trace, every);
    pid_t inner = mx_it_start_mcplex(inner_cfg, inner_port); /* mcplex.log */
    assert_true(inner > 0);

    struct world w;
    memset(&w, 0, sizeof(w));
    w.port = mx_it_free_port();
    w.trace = mx_it_path("outer.jsonl");
    char *up = mx_xasprintf("[servers.conf]\nurl = \"http://127.0.0.1:%d/mcp\"\n", inner_port);
    char *outer_cfg = write_config("outer.toml", w.port, w.trace, up);
    w.mcplex = mx_it_start_mcplex(outer_cfg, w.port); /* mcplex-2.log */
    assert_true(w.mcplex > 0);
    w.url = mx_xasprintf("http://127.0.0.1:%d/mcp", w.port);
    w.log = mx_it_path("mcplex-2.log");

    char *sid = session_2025(&w);
    char *rb = post_2025(&w, sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\"}");
    json_t *list = answer_of(rb);
    free(rb);
    const char *uri = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(list, "result"), "resources"), 0), "uri"));
    assert_non_null(uri);
    sub_2025(&w, sid, "resources/subscribe", 3, uri);
    /* the outer mcplex spoke 2026-07-28 to the inner one, which honoured
     * the URI in its acknowledgement and subscribed upstream */
    assert_int_equal(up_lines(&w, "\"method\":\"server/discover\""), 1);
    assert_int_equal(up_lines(&w, "\"method\":\"initialize\""), 0);
    char *filter = mx_xasprintf("\"resourceSubscriptions\":[\"%s\"]", uri);
    assert_int_equal(mx_it_trace_wait(w.trace, "c2s", "conf", filter, 1, 3000), 1);
    assert_int_equal(mx_it_trace_wait(w.trace, "s2c", "conf", filter, 1, 3000), 1);
    assert_int_equal(mx_it_trace_wait(inner_trace, "c2s", "every", "resources/subscribe", 1, 3000),
                     1);
    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(log);
    assert_null(strstr(log, "does not honour"));
    free(log);

    /* server-everything sends an update at once, then every 5 s */
    rb = post_2025(&w, sid,
                   "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
                   "\"name\":\"toggle-subscriber-updates\",\"arguments\":{}}}");
    free(rb);
    char *updated = mx_xasprintf("\"method\":\"notifications/resources/updated\","
                                 "\"params\":{\"uri\":\"%s\"}",
                                 uri);
    char *got = NULL;
    for (int i = 0; i < 10 && (got == NULL || strstr(got, updated) == NULL); i++) {
        free(got);
        got = get_stream(&w, sid, 700);
    }
    if (strstr(got, updated) == NULL)
        fail_msg("no update on the GET stream: %s", got);
    assert_null(strstr(got, "subscriptionId"));
    free(got);

    sub_2025(&w, sid, "resources/unsubscribe", 5, uri);
    /* the inner mcplex unsubscribes once the outer one's old stream closes */
    int gone = 0;
    for (int i = 0; i < 100 && gone == 0; i++) {
        gone = mx_it_trace_count(inner_trace, "c2s", "every", "resources/unsubscribe");
        if (gone == 0)
            usleep(50 * 1000);
    }
    assert_int_equal(gone, 1);
    /* longer than server-everything's interval: nothing more comes */
    got = get_stream(&w, sid, 6000);
    assert_null(strstr(got, "notifications/resources/updated"));
    free(got);

    /* a 2026-07-28 client of the outer mcplex listens to the same resource:
     * its subscription takes the same way (resources/subscribe on the
     * shared session, bridged into the listen filter); server-everything
     * is still sending every 5 s */
    char *listen = mx_xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":\"L1\",\"method\":\"subscriptions/listen\",\"params\":{"
        "\"notifications\":{\"resourceSubscriptions\":[\"%s\"]},\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        uri);
    const char *hdrs26[] = {
        "Content-Type: application/json", "Accept: application/json, text/event-stream",
        "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: subscriptions/listen", NULL};
    long status = 0;
    got = NULL;
    /* two of server-everything's 5 s ticks: the first may pass while the
     * subscription is still being bridged on a loaded machine */
    assert_int_equal(mx_it_http_full("POST", w.url, hdrs26, listen, 12000, &status, NULL, &got),
                     MX_ETIMEDOUT);
    const char *ack = strstr(got, "notifications/subscriptions/acknowledged");
    const char *upd = ack ? strstr(ack, "\"method\":\"notifications/resources/updated\"") : NULL;
    if (ack == NULL || strstr(ack, filter) == NULL || upd == NULL || strstr(upd, uri) == NULL ||
        strstr(upd, "\"io.modelcontextprotocol/subscriptionId\":\"L1\"") == NULL)
        fail_msg("2026 listen stream: %s", got);
    free(got);
    free(listen);
    assert_int_equal(up_lines(&w, filter), 2);
    /* no 2025 subscription method ever went to the 2026 upstream */
    assert_int_equal(up_lines(&w, "resources/subscribe"), 0);
    assert_int_equal(up_lines(&w, "resources/unsubscribe"), 0);

    pid_t pids[] = {w.mcplex, inner};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(mx_it_signal(pids[i], SIGTERM), 0);
        int st = mx_it_wait_exit(pids[i], 15000);
        assert_true(st >= 0 && WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    char *inner_log = mx_it_path("mcplex.log");
    const char *files[] = {w.log, inner_log, w.trace, inner_trace, NULL};
    assert_int_equal(mx_it_scan_for(files, token, NULL), 0);
    free(inner_log);
    free(updated);
    free(filter);
    json_decref(list);
    free(sid);
    free(up);
    free(outer_cfg);
    free(inner_cfg);
    free(every);
    free(inner_trace);
    free(secret);
    free(w.url);
    free(w.log);
    free(w.trace);
    mx_it_pass();
}

/* mcplex with the conformance sim as its only upstream and |state| as its
 * state directory, on a fresh port; its pid. */
static pid_t start_with_state(const char *state, int sim_port, const char *secret, int *port)
{
    *port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.conf]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             *port, state, sim_port, secret);
    char *cfg_path = mx_it_path("mcplex-state.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t pid = mx_it_start_mcplex(cfg_path, *port);
    assert_true(pid > 0);
    free(cfg);
    free(cfg_path);
    return pid;
}

/* A tool whose argument travels in an Mcp-Param-* header, called by a
 * mcplex that knows the tool from its on-disk catalogue only (restarted,
 * no live tools/list yet): the header goes along, the call succeeds. */
static void test_catalogue_param_headers(void **state)
{
    char token[MX_IT_CANARY_SIZE];
    int sim_port, port;
    (void)state;
    mx_it_canary(token, sizeof(token));
    const char *args[] = {"--conformance", "--name", "conf-sim", NULL};
    assert_true(mx_it_start_sim("conf-sim", token, args, &sim_port) > 0);
    char *secret = mx_it_secret_file("conf.secret", token);
    char *state_dir = mx_it_path("state");
    pid_t first = start_with_state(state_dir, sim_port, secret, &port);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out = client_ok_at(url, "list-all", NULL);
    assert_true(mx_it_has_string(json_object_get(json_object_get(out, "tools"), "names"),
                                 "test_header_param"));
    json_decref(out);
    free(url);
    assert_int_equal(mx_it_signal(first, SIGTERM), 0);
    assert_int_equal(mx_it_wait_exit(first, 10000), 0);

    pid_t second = start_with_state(state_dir, sim_port, secret, &port);
    url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    out = client_ok_at(url, "call",
                       "{\"name\":\"test_header_param\",\"arguments\":{\"region\":"
                       "\"Caf\u00e9 Nord\"}}");
    const char *t = mx_it_result_text(out);
    if (t == NULL || strcmp(t, "Region: Caf\u00e9 Nord") != 0)
        fail_msg("call from the catalogue: %s", json_dumps(out, 0));
    json_decref(out);
    assert_int_equal(mx_it_signal(second, SIGTERM), 0);
    free(url);
    free(state_dir);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_upstream_2026, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_subscription_updates, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_catalogue_param_headers, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
