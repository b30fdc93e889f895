/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC batches at /mcp (MCP 2025-03-26, Streamable HTTP), raw HTTP in
 * front of sandbox-sim: a session negotiated at 2025-03-26 POSTs batches of
 * requests, notifications and invalid elements and gets every answer on one
 * SSE stream, progress included, each event whole even when two calls
 * stream at once; a batch of notifications only is 202; batches are refused
 * for later revisions, with initialize inside, empty or too long, and
 * without a session; a client that goes away mid-batch cancels the call
 * upstream and mcplex keeps serving. The same at /mcp/<server> for a
 * command upstream (server-everything over stdio), whose sessions there are
 * mcplex's own. No canary in mcplex's log.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "harness.h"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int port;
    int sim_port;
    char *url;
    char *log;
};

static void start_world(struct world *w)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->token, sizeof(w->token));
    const char *args[] = {"--name", "alpha", NULL};
    assert_true(mx_it_start_sim("alpha", w->token, args, &w->sim_port) > 0);
    char *secret = mx_it_secret_file("alpha.secret", w->token);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.alpha]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, w->sim_port, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, w->port) > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    w->log = mx_it_path("mcplex.log");
    free(cfg);
    free(cfg_path);
    free(secret);
}

static void world_end(struct world *w)
{
    const char *files[] = {w->log, NULL};
    const char *canaries[] = {w->token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);
    free(w->url);
    free(w->log);
}

/* POST |body| to /mcp within the session |sid| (NULL: none); the status,
 * the Content-Type and the body (caller frees). */
static char *post(const struct world *w, const char *sid, const char *body, int timeout_ms,
                  long *status, char *ctype, size_t ccap)
{
    char *sid_h = sid ? mx_xasprintf("Mcp-Session-Id: %s", sid) : NULL;
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", sid_h, NULL};
    char *resp_h = NULL, *resp = NULL;
    *status = 0;
    mx_it_http_full("POST", w->url, hdrs, body, timeout_ms, status, &resp_h, &resp);
    if (ctype)
        mx_it_header_value(resp_h, "Content-Type", ctype, ccap);
    free(resp_h);
    free(sid_h);
    return resp ? resp : mx_xstrdup("");
}

/* initialize at |version| and notifications/initialized; the session id. */
static char *open_session(const struct world *w, const char *version)
{
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                              "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
                              "\"clientInfo\":{\"name\":\"batch-test\",\"version\":\"1\"}}}",
                              version);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    char *resp_h = NULL, *resp = NULL;
    long status = 0;
    assert_int_equal(mx_it_http_full("POST", w->url, hdrs, body, 10000, &status, &resp_h, &resp),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(resp, version));
    char sid[128];
    mx_it_header_value(resp_h, "Mcp-Session-Id", sid, sizeof(sid));
    assert_true(strlen(sid) > 0);
    free(resp);
    free(resp_h);
    free(body);
    char *r = post(w, sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 10000,
                   &status, NULL, 0);
    assert_int_equal(status, 202);
    free(r);
    return mx_xstrdup(sid);
}

/* Every "data:" line of an SSE body, each parsed as JSON (a line that is no
 * JSON fails the test: an event was cut or interleaved). */
static json_t *sse_messages(const char *body)
{
    json_t *arr = json_array();
    for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "data: ", 6) != 0)
            continue;
        size_t len = strcspn(p + 6, "\r\n");
        json_error_t err;
        json_t *m = json_loadb(p + 6, len, 0, &err);
        if (m == NULL)
            fail_msg("an SSE data line is not JSON: %.*s", (int)len, p + 6);
        json_array_append_new(arr, m);
    }
    return arr;
}

/* The response with id |id| among |msgs| and its position, or NULL. */
static json_t *by_id(json_t *msgs, json_int_t id, size_t *at)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        if (json_integer_value(json_object_get(m, "id")) == id &&
            json_object_get(m, "method") == NULL) {
            if (at)
                *at = i;
            return m;
        }
    }
    return NULL;
}

static const char *first_text(json_t *resp)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(resp, "result"), "content"), 0), "text"));
}

/* Progress notifications of |token| among |msgs|, and the last one's index. */
static size_t progress_of(json_t *msgs, const char *token, size_t *last)
{
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        const char *method = json_string_value(json_object_get(m, "method"));
        const char *tok =
            json_string_value(json_object_get(json_object_get(m, "params"), "progressToken"));
        if (method && strcmp(method, "notifications/progress") == 0 && tok &&
            strcmp(tok, token) == 0) {
            n++;
            *last = i;
        }
    }
    return n;
}

static void test_batch_answers_on_one_stream(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    char *sid = open_session(&w, "2025-03-26");
    long status;
    char ctype[128];
    char *body = post(&w, sid,
                      "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                      "\"params\":{\"name\":\"whoami\"}},"
                      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"slow\",\"arguments\":{\"steps\":3,\"interval_ms\":50},"
                      "\"_meta\":{\"progressToken\":\"p3\"}}},"
                      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"},"
                      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"no/such\"},"
                      "5]",
                      10000, &status, ctype, sizeof(ctype));
    assert_int_equal(status, 200);
    assert_string_equal(ctype, "text/event-stream");
    json_t *msgs = sse_messages(body);
    /* 4 responses, 3 progress notifications, 1 error for the element 5 */
    assert_int_equal(json_array_size(msgs), 8);
    assert_true(json_is_object(json_object_get(by_id(msgs, 1, NULL), "result")));
    assert_string_equal(first_text(by_id(msgs, 2, NULL)), "alpha");
    size_t at3 = 0, last = 0;
    assert_string_equal(first_text(by_id(msgs, 3, &at3)), "done after 3 steps");
    assert_int_equal(progress_of(msgs, "p3", &last), 3);
    assert_true(last < at3);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(by_id(msgs, 4, NULL), "error"), "code")),
        -32601);
    size_t i, invalid = 0;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        json_t *id = json_object_get(m, "id");
        if ((id == NULL || json_is_null(id)) && json_object_get(m, "error")) {
            assert_int_equal(
                json_integer_value(json_object_get(json_object_get(m, "error"), "code")), -32600);
            invalid++;
        }
    }
    assert_int_equal(invalid, 1);
    json_decref(msgs);
    free(body);

    /* two calls streaming at once: every event whole, both answered */
    body = post(&w, sid,
                "[{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":"
                "{\"name\":\"slow\",\"arguments\":{\"steps\":20,\"interval_ms\":10},"
                "\"_meta\":{\"progressToken\":\"a\"}}},"
                "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":"
                "{\"name\":\"slow\",\"arguments\":{\"steps\":20,\"interval_ms\":10},"
                "\"_meta\":{\"progressToken\":\"b\"}}}]",
                10000, &status, ctype, sizeof(ctype));
    assert_int_equal(status, 200);
    msgs = sse_messages(body);
    assert_int_equal(json_array_size(msgs), 42);
    assert_int_equal(progress_of(msgs, "a", &last), 20);
    assert_int_equal(progress_of(msgs, "b", &last), 20);
    assert_string_equal(first_text(by_id(msgs, 10, NULL)), "done after 20 steps");
    assert_string_equal(first_text(by_id(msgs, 11, NULL)), "done after 20 steps");
    json_decref(msgs);
    free(body);

    /* notifications only: accepted, no body */
    body = post(&w, sid,
                "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"},"
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                "\"params\":{\"requestId\":77}}]",
                10000, &status, NULL, 0);
    assert_int_equal(status, 202);
    assert_string_equal(body, "");
    free(body);
    free(sid);
    world_end(&w);
    mx_it_pass();
}

/* A refusal: |status| and a JSON-RPC -32600 whose message holds |why|. */
static void assert_refused(const struct world *w, const char *sid, const char *batch, long want,
                           const char *why)
{
    long status;
    char *body = post(w, sid, batch, 10000, &status, NULL, 0);
    assert_int_equal(status, want);
    json_t *r = json_loads(body, 0, NULL);
    assert_non_null(r);
    json_t *err = json_object_get(r, "error");
    if (want != 404)
        assert_int_equal(json_integer_value(json_object_get(err, "code")), -32600);
    const char *msg = json_string_value(json_object_get(err, "message"));
    if (msg == NULL || strstr(msg, why) == NULL)
        fail_msg("refusal without '%s': %s", why, body);
    json_decref(r);
    free(body);
}

static void test_batch_refusals(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    const char *ping = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]";
    char *later = open_session(&w, "2025-06-18");
    assert_refused(&w, later, ping, 400, "2025-03-26");
    free(later);
    later = open_session(&w, "2025-11-25");
    assert_refused(&w, later, ping, 400, "2025-03-26");
    free(later);
    char *sid = open_session(&w, "2025-03-26");
    assert_refused(&w, sid,
                   "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}]", 400,
                   "initialize");
    assert_refused(&w, sid, "[]", 400, "1 to 64");
    struct mx_buf big;
    mx_buf_init(&big, 1 << 20);
    mx_buf_append_str(&big, "[");
    for (int i = 0; i < 65; i++)
        mx_buf_printf(&big, "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}", i ? "," : "",
                      i);
    mx_buf_append(&big, "]", 2); /* with its NUL */
    assert_refused(&w, sid, mx_buf_data(&big), 400, "1 to 64");
    mx_buf_clear(&big);
    assert_refused(&w, NULL, ping, 400, "Mcp-Session-Id");
    assert_refused(&w, "00000000000000000000000000000000", ping, 404, "Session not found");
    /* the session still serves a batch after all that */
    long status;
    char *body = post(&w, sid, ping, 10000, &status, NULL, 0);
    assert_int_equal(status, 200);
    json_t *msgs = sse_messages(body);
    assert_int_equal(json_array_size(msgs), 1);
    json_decref(msgs);
    free(body);
    free(sid);
    world_end(&w);
    mx_it_pass();
}

static json_int_t sim_cancelled(const struct world *w)
{
    json_t *st = mx_it_sim_stats(w->sim_port, w->token);
    assert_non_null(st);
    json_int_t n = json_integer_value(json_object_get(st, "cancelled"));
    json_decref(st);
    return n;
}

static void test_batch_client_gone(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    char *sid = open_session(&w, "2025-03-26");
    long status;
    /* a 4 s call; the client gives up after 400 ms */
    char *body = post(&w, sid,
                      "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"slow\",\"arguments\":{\"steps\":40,\"interval_ms\":100},"
                      "\"_meta\":{\"progressToken\":\"g\"}}},"
                      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]",
                      400, &status, NULL, 0);
    free(body);
    /* the upstream hears the cancel well before the call would have ended */
    int waited = 0;
    while (sim_cancelled(&w) < 1 && waited < 3000) {
        usleep(100 * 1000);
        waited += 100;
    }
    assert_int_equal(sim_cancelled(&w), 1);
    body = post(&w, sid,
                "[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                "\"params\":{\"name\":\"whoami\"}}]",
                10000, &status, NULL, 0);
    assert_int_equal(status, 200);
    json_t *msgs = sse_messages(body);
    assert_string_equal(first_text(by_id(msgs, 3, NULL)), "alpha");
    json_decref(msgs);
    free(body);
    free(sid);
    world_end(&w);
    mx_it_pass();
}

/* /mcp/<server> for a command upstream (served by mcplex's own sessions
 * there): a 2025-03-26 session's batch too. */
static void test_batch_per_server_stdio(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    char *js = mx_xasprintf(
        "%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        mx_it_source_dir());
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.ev]\ncommand = [\"node\", \"%s\", \"stdio\"]\n"
                             "env = [\"PATH\"]\n",
                             port, js);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    w.url = mx_xasprintf("http://127.0.0.1:%d/mcp/ev", port);
    w.log = mx_it_path("mcplex.log");
    char *sid = open_session(&w, "2025-03-26");
    long status;
    char ctype[128];
    char *body = post(&w, sid,
                      "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"echo\",\"arguments\":{\"message\":\"batched\"}}}]",
                      20000, &status, ctype, sizeof(ctype));
    assert_int_equal(status, 200);
    assert_string_equal(ctype, "text/event-stream");
    json_t *msgs = sse_messages(body);
    assert_true(json_is_object(json_object_get(by_id(msgs, 1, NULL), "result")));
    const char *t = first_text(by_id(msgs, 2, NULL));
    assert_non_null(t);
    assert_non_null(strstr(t, "batched"));
    json_decref(msgs);
    free(body);
    free(sid);
    char *later = open_session(&w, "2025-06-18");
    assert_refused(&w, later, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 400,
                   "2025-03-26");
    free(later);
    free(cfg);
    free(cfg_path);
    free(js);
    /* no secret in this world: nothing to scan the log for */
    free(w.url);
    free(w.log);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batch_answers_on_one_stream, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_batch_refusals, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_batch_client_gone, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_batch_per_server_stdio, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
