/* SPDX-License-Identifier: MIT */
/*
 * What crosses mcplex in header values, and what a web page can make it
 * send. A hostile sandbox-sim (--bad-header) puts a bare CR in a header
 * value: mcplex never relays it, the client gets a JSON-RPC error naming
 * the upstream and "invalid header" instead, at /mcp/<server> and at /mcp.
 * A client header value with a control byte never reaches the upstream.
 * And a GET that is no SSE stream request (an <img> tag: no Accept, or an
 * image's Accept list) is answered 406 by mcplex: the upstream sees nothing
 * and its wake hook does not run.
 */
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define INIT_BODY                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"     \
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}"
#define ECHO_BODY                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","       \
    "\"arguments\":{\"message\":\"hi\"}}}"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    int port;
    char *hook_file; /* the wake hook touches it */
};

/* sandbox-sim with |sim_args|, mcplex in front of it with a wake hook that
 * touches w->hook_file. */
static void start(struct world *w, const char *const *sim_args)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->token, sizeof(w->token));
    assert_true(mx_it_start_sim("sim", w->token, sim_args, &w->sim_port) > 0);
    char *sec = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(sec, w->token, strlen(w->token)), 0);
    w->hook_file = mx_it_path("hook-ran");
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n"
                             "wake = \"cmd:touch %s\"\nwake_timeout = \"2s\"\n",
                             w->port, mx_it_dir(), w->sim_port, sec, w->hook_file);
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(path, w->port) > 0);
    free(path);
    free(cfg);
    free(sec);
}

static void stop(struct world *w)
{
    free(w->hook_file);
}

/* Whether |head| holds a CR that does not end a line. */
static bool bare_cr(const char *head)
{
    for (const char *p = head; p && *p; p++) {
        if (*p == '\r' && p[1] != '\n')
            return true;
    }
    return false;
}

/* |body| is a JSON-RPC error for |id| whose message names the server and
 * says "invalid header". */
static void assert_invalid_header_error(const char *body, int id)
{
    json_error_t jerr;
    json_t *msg = json_loads(body, 0, &jerr);
    if (msg == NULL)
        fprintf(stderr, "not JSON: %.300s\n", body);
    assert_non_null(msg);
    assert_int_equal(json_integer_value(json_object_get(msg, "id")), id);
    json_t *err = json_object_get(msg, "error");
    const char *m = json_string_value(json_object_get(err, "message"));
    if (m == NULL || strstr(m, "'sim'") == NULL || strstr(m, "invalid header") == NULL)
        fprintf(stderr, "error message: %s\n", m ? m : "(none)");
    assert_non_null(m);
    assert_non_null(strstr(m, "'sim'"));
    assert_non_null(strstr(m, "invalid header"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "server")),
                        "sim");
    json_decref(msg);
}

/* POST |body| to |url|; returns the status, the head and body in *|head|
 * and *|resp| (caller frees). */
static long post(const char *url, const char *sid, const char *body, char **head, char **resp)
{
    char *sid_h = sid ? mx_xasprintf("Mcp-Session-Id: %s", sid) : NULL;
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream", sid_h, NULL};
    long status = 0;
    assert_int_equal(mx_it_http_full("POST", url, h, body, 15000, &status, head, resp), 0);
    free(sid_h);
    return status;
}

/* The upstream puts a bare CR in |header|: at /mcp/sim, the client gets no
 * bare CR and no injected header, but a JSON-RPC error. */
static void relay_refuses(const char *header)
{
    struct world w;
    const char *args[] = {"--bad-header", header, NULL};
    start(&w, args);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/sim", w.port);
    char *head = NULL, *body = NULL;
    long st = post(url, NULL, INIT_BODY, &head, &body);
    fprintf(stderr, "%s with a bare CR, relayed: status %ld, bare CR in head: %s\n", header, st,
            bare_cr(head) ? "yes" : "no");
    assert_false(bare_cr(head));
    assert_null(strstr(head, "X-Injected"));
    assert_int_equal(st, 200);
    assert_invalid_header_error(body, 1);
    free(head);
    free(body);
    free(url);
    stop(&w);
}

static void test_relay_session_id_with_cr(void **state)
{
    (void)state;
    relay_refuses("Mcp-Session-Id");
    mx_it_pass();
}

static void test_relay_content_type_with_cr(void **state)
{
    (void)state;
    relay_refuses("Content-Type");
    mx_it_pass();
}

/* The same upstream behind /mcp: its session id is never used nor shown
 * (mcplex's own session is the client's), the upstream counts as failed
 * with a log line naming it, and the client still gets clean answers. */
static void test_aggregate_session_id_with_cr(void **state)
{
    (void)state;
    struct world w;
    const char *args[] = {"--bad-header", "Mcp-Session-Id", NULL};
    start(&w, args);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", w.port);
    char *head = NULL, *body = NULL;
    assert_int_equal(post(url, NULL, INIT_BODY, &head, &body), 200);
    char sid[256];
    mx_it_header_value(head, "Mcp-Session-Id", sid, sizeof(sid));
    assert_true(sid[0] != '\0');
    free(head);
    free(body);
    long st = post(url, sid, ECHO_BODY, &head, &body);
    fprintf(stderr, "/mcp tools/call: status %ld, body %.300s\n", st, body);
    assert_false(bare_cr(head));
    assert_null(strstr(head, "X-Injected"));
    assert_int_equal(st, 200);
    assert_non_null(strstr(body, "\"error\""));
    /* the error says why the name is unknown: the upstream that may hold
     * it failed, and how */
    assert_non_null(strstr(body, "'sim'"));
    assert_non_null(strstr(body, "invalid header"));
    free(head);
    free(body);
    free(url);
    char *log_path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(log_path, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "upstream 'sim' sent an invalid header"));
    free(log);
    free(log_path);
    stop(&w);
    mx_it_pass();
}

/* The number of /mcp requests the sim has seen. */
static json_int_t sim_requests(const struct world *w)
{
    json_t *st = mx_it_sim_stats(w->sim_port, w->token);
    assert_non_null(st);
    json_int_t n = json_integer_value(json_object_get(st, "requests"));
    json_decref(st);
    return n;
}

/* A client header value with a control byte (0x01) at /mcp/sim: refused by
 * mcplex with a JSON-RPC error, never relayed. */
static void test_client_header_with_control_byte(void **state)
{
    (void)state;
    struct world w;
    start(&w, NULL);
    json_int_t before = sim_requests(&w);
    char req[1024];
    int n = snprintf(req, sizeof(req),
                     "POST /mcp/sim HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "Mcp-Session-Id: abc\001def\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(ECHO_BODY), ECHO_BODY);
    char *resp = mx_it_raw_exchange(mx_it_connect_from(NULL, w.port), req, (size_t)n, 5000);
    json_int_t after = sim_requests(&w);
    fprintf(stderr, "client Mcp-Session-Id with 0x01: %.40s..., the sim saw %lld request(s)\n",
            resp, (long long)(after - before));
    assert_int_equal(after, before);
    assert_memory_equal(resp, "HTTP/1.1 4", 10);
    const char *body = strstr(resp, "\r\n\r\n");
    assert_non_null(body);
    json_error_t jerr;
    json_t *msg = json_loads(body + 4, 0, &jerr);
    assert_non_null(msg);
    assert_non_null(json_object_get(msg, "error"));
    json_decref(msg);
    free(resp);
    stop(&w);
    mx_it_pass();
}

/* GET with |accept| (NULL: none) at |path|: 406 with a JSON-RPC error. */
static void get_refused(const struct world *w, const char *path, const char *accept)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d%s", w->port, path);
    char *acc = accept ? mx_xasprintf("Accept: %s", accept) : mx_xstrdup("Accept:");
    const char *h[] = {acc, NULL};
    long st = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http_full("GET", url, h, NULL, 10000, &st, NULL, &body), 0);
    fprintf(stderr, "GET %s with %s: %ld %.200s\n", path, acc, st, body);
    assert_int_equal(st, 406);
    json_error_t jerr;
    json_t *msg = json_loads(body, 0, &jerr);
    assert_non_null(msg);
    assert_string_equal(json_string_value(json_object_get(msg, "jsonrpc")), "2.0");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(msg, "error"), "code")),
                     -32600);
    json_decref(msg);
    free(body);
    free(acc);
    free(url);
}

/* A page's <img src="http://127.0.0.1:PORT/mcp/sim"> at a paused sandbox. */
static void test_get_without_sse_accept(void **state)
{
    (void)state;
    struct world w;
    const char *args[] = {"--pause-after-ms", "1", "--pause-mode", "refuse", NULL};
    start(&w, args);
    json_int_t before = sim_requests(&w);
    assert_int_not_equal(access(w.hook_file, F_OK), 0);
    static const char *const accepts[] = {
        NULL, "image/*", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", "*/*",
        "text/html"};
    for (size_t i = 0; i < sizeof(accepts) / sizeof(accepts[0]); i++) {
        get_refused(&w, "/mcp/sim", accepts[i]);
        get_refused(&w, "/mcp", accepts[i]);
    }
    /* the wake hook would have run by now (wake_timeout 2 s) */
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    json_int_t after = sim_requests(&w);
    bool hook = access(w.hook_file, F_OK) == 0;
    fprintf(stderr, "the sim saw %lld request(s); the wake hook ran: %s\n",
            (long long)(after - before), hook ? "yes" : "no");
    assert_int_equal(after, before);
    assert_false(hook);
    stop(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_relay_session_id_with_cr, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_relay_content_type_with_cr, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_aggregate_session_id_with_cr, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_client_header_with_control_byte, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_get_without_sse_accept, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
