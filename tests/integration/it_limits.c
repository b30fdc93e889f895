/* SPDX-License-Identifier: MIT */
/*
 * The [listen] limits a single client can run into, each against a real
 * mcplex: connections per client address (closed at accept, one log line
 * for a flood, other addresses still served), open /mcp sessions (503 with
 * Retry-After and a JSON-RPC error body, one log line, existing sessions
 * still served, room again after a DELETE) and requests per connection
 * (HTTP/1.1 Connection: close, HTTP/2 GOAWAY, the client carries on over a
 * new connection).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define PER_CLIENT 4
#define FLOOD      20

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

static int start(const char *listen_extra)
{
    return mx_it_start_sim_behind_mcplex(listen_extra, NULL);
}

/* How many lines of mcplex's log contain |needle|. */
static int log_lines_with(const char *needle)
{
    char *path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(path, NULL);
    int n = 0;
    assert_non_null(log);
    for (char *line = log; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, needle))
            n++;
        line = nl ? nl + 1 : NULL;
    }
    free(log);
    free(path);
    return n;
}

/* Wait up to |ms| for |fd| to be closed by the peer (EOF or reset). */
static bool closed_by_peer(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0)
        return false;
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* GET /health over a raw connection from |from|: the whole answer (caller
 * frees), "" when none came. */
static char *health_text_from(const char *from, int port)
{
    static const char req[] =
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    return mx_it_raw_exchange(mx_it_connect_from(from, port), req, sizeof(req) - 1, 5000);
}

/* The status of GET /health from |from|, or 0. */
static int health_from(const char *from, int port)
{
    char *t = health_text_from(from, port);
    int status = 0;
    if (strlen(t) >= 12 && strncmp(t, "HTTP/1.1 ", 9) == 0)
        status = (t[9] - '0') * 100 + (t[10] - '0') * 10 + (t[11] - '0');
    free(t);
    return status;
}

/* Wait until mcplex holds no connection but the one asking (the harness's
 * readiness checks from 127.0.0.1 may not have been noticed closed yet). */
static void wait_quiet(int port)
{
    for (int tries = 0; tries < 100; tries++) {
        char *t = health_text_from("127.0.0.9", port);
        bool quiet = strstr(t, "\"connections\":1,") || strstr(t, "\"connections\": 1,");
        free(t);
        if (quiet)
            return;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("mcplex kept other connections open");
}

static void test_limits_connections_per_client(void **state)
{
    (void)state;
    int port = start("max_connections_per_client = 4\nheader_timeout = \"20s\"\n");
    wait_quiet(port);

    /* 127.0.0.1 holds its four connections open, idle */
    int held[PER_CLIENT];
    for (int i = 0; i < PER_CLIENT; i++)
        held[i] = mx_it_connect_from("127.0.0.1", port);
    /* then floods: every further connection is closed at once */
    for (int i = 0; i < FLOOD; i++) {
        int fd = mx_it_connect_from("127.0.0.1", port);
        assert_true(closed_by_peer(fd, 3000));
        close(fd);
    }
    /* another client address is served meanwhile */
    assert_int_equal(health_from("127.0.0.2", port), 200);
    assert_int_equal(health_from("127.0.0.3", port), 200);
    /* the held connections are still open: they were never touched */
    for (int i = 0; i < PER_CLIENT; i++)
        assert_false(closed_by_peer(held[i], 0));
    /* /health counts every refusal */
    char *h = health_text_from("127.0.0.2", port);
    assert_non_null(strstr(h, "\"max_connections_per_client\":20"));
    free(h);
    /* one line for the whole flood, naming the key and the address */
    assert_int_equal(log_lines_with("max_connections_per_client (4) reached by 127.0.0.1"), 1);

    /* once 127.0.0.1 lets go, it is served again */
    for (int i = 0; i < PER_CLIENT; i++)
        close(held[i]);
    int status = 0;
    for (int tries = 0; tries < 50 && status != 200; tries++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        status = health_from("127.0.0.1", port);
    }
    assert_int_equal(status, 200);
    mx_it_pass();
}

/* The Mcp-Session-Id of a response head, as a request header (caller frees). */
static char *session_header(const char *head)
{
    const char *sid = strcasestr(head, "mcp-session-id:");
    assert_non_null(sid);
    sid += strlen("mcp-session-id:");
    while (*sid == ' ')
        sid++;
    return mx_xasprintf("Mcp-Session-Id: %.*s", (int)strcspn(sid, "\r\n"), sid);
}

static void test_limits_sessions(void **state)
{
    (void)state;
    int port = start("max_sessions = 3\n");
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream", NULL};
    char *sids[3];
    long status = 0;
    char *head = NULL, *body = NULL;

    for (int i = 0; i < 3; i++) {
        assert_int_equal(mx_it_http_full("POST", url, h, init_body, 10000, &status, &head, &body),
                         0);
        assert_int_equal(status, 200);
        sids[i] = session_header(head);
        free(head);
        free(body);
    }
    /* the fourth and later: 503, Retry-After, a JSON-RPC error for id 1 */
    for (int i = 0; i < 10; i++) {
        assert_int_equal(mx_it_http_full("POST", url, h, init_body, 10000, &status, &head, &body),
                         0);
        assert_int_equal(status, 503);
        assert_non_null(strcasestr(head, "Retry-After: 10"));
        assert_null(strcasestr(head, "Mcp-Session-Id"));
        json_error_t jerr;
        json_t *msg = json_loads(body, 0, &jerr);
        assert_non_null(msg);
        assert_int_equal(json_integer_value(json_object_get(msg, "id")), 1);
        const char *m =
            json_string_value(json_object_get(json_object_get(msg, "error"), "message"));
        assert_non_null(m);
        assert_non_null(strstr(m, "max_sessions"));
        json_decref(msg);
        free(head);
        free(body);
    }
    assert_int_equal(log_lines_with("max_sessions (3) reached"), 1);
    char *metrics = mx_xasprintf("http://127.0.0.1:%d/metrics", port);
    assert_int_equal(mx_it_http("GET", metrics, NULL, NULL, &status, &body), 0);
    assert_non_null(strstr(body, "mcplex_limit_refusals_total{limit=\"max_sessions\"} 10"));
    free(body);
    free(metrics);

    /* the open sessions keep working */
    const char *with[] = {h[0], h[1], sids[0], "MCP-Protocol-Version: 2025-06-18", NULL};
    assert_int_equal(
        mx_it_http("POST", url, with,
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                   "{\"name\":\"echo\",\"arguments\":{\"message\":\"still-here\"}}}",
                   &status, &body),
        0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "still-here"));
    free(body);

    /* a DELETE makes room for a new client */
    const char *del[] = {sids[1], NULL};
    assert_int_equal(mx_it_http("DELETE", url, del, NULL, &status, &body), 0);
    assert_true(status == 200 || status == 204);
    free(body);
    assert_int_equal(mx_it_http_full("POST", url, h, init_body, 10000, &status, &head, &body), 0);
    assert_int_equal(status, 200);
    assert_non_null(strcasestr(head, "Mcp-Session-Id"));
    free(head);
    free(body);
    for (int i = 0; i < 3; i++)
        free(sids[i]);
    free(url);
    mx_it_pass();
}

static size_t sink(char *p, size_t size, size_t n, void *data)
{
    (void)p;
    (void)data;
    return size * n;
}

static size_t head_cb(char *p, size_t size, size_t n, void *data)
{
    bool *close_seen = data;
    if (n * size >= 17 && strncasecmp(p, "Connection: close", 17) == 0)
        *close_seen = true;
    return size * n;
}

/* |n| GET /health on one curl handle; new_conn[i]: request i opened a
 * connection; close_hdr[i]: its answer said Connection: close. */
static void run_requests(const char *url, const char *ca, long version, int n, bool *new_conn,
                         bool *close_hdr)
{
    CURL *e = curl_easy_init();
    assert_non_null(e);
    curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, version);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, head_cb);
    for (int i = 0; i < n; i++) {
        long status = 0, conns = 0;
        close_hdr[i] = false;
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &close_hdr[i]);
        assert_int_equal(curl_easy_perform(e), CURLE_OK);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &conns);
        assert_int_equal(status, 200);
        long used = 0;
        curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &used);
        assert_int_equal(used, version == CURL_HTTP_VERSION_2TLS ? CURL_HTTP_VERSION_2_0
                                                                 : CURL_HTTP_VERSION_1_1);
        new_conn[i] = conns > 0;
    }
    curl_easy_cleanup(e);
}

static void test_limits_requests_per_connection(void **state)
{
    (void)state;
    char *ca = NULL;
    int port = mx_it_start_sim_behind_mcplex("max_requests_per_connection = 3\n", &ca);
    char *url = mx_xasprintf("https://127.0.0.1:%d/health", port);
    bool fresh[7], closing[7];
    /* every request is answered; the third on each connection says
     * Connection: close and the next one opens a new connection */
    run_requests(url, ca, CURL_HTTP_VERSION_1_1, 7, fresh, closing);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(fresh[i], i % 3 == 0);
        assert_int_equal(closing[i], i % 3 == 2);
    }
    /* HTTP/2 (ALPN h2): GOAWAY after the third stream; same rhythm */
    run_requests(url, ca, CURL_HTTP_VERSION_2TLS, 7, fresh, closing);
    for (int i = 0; i < 7; i++)
        assert_int_equal(fresh[i], i % 3 == 0);
    free(url);
    free(ca);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_limits_connections_per_client, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_limits_sessions, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_limits_requests_per_connection, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
