/* SPDX-License-Identifier: MIT */
/*
 * A request body over [listen] max_body, sent whole by a client that does
 * not wait to be told (chunked, or Content-Length without Expect), against
 * a real mcplex: the client must read 413 with a JSON-RPC error, never a
 * connection reset, over HTTP/1.1 (plain and TLS: mcplex answers, ends its
 * side and discards the rest of the upload for a bounded time) and over
 * HTTP/2 (plain with prior knowledge and TLS: the answer, then RST_STREAM);
 * and the next connection is served.
 */
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define MAX_BODY   (1024 * 1024)
#define UPLOAD_LEN (10u * 1024 * 1024)

/* mcplex in front of one sandbox-sim, max_body = 1 MiB; over TLS when |ca|
 * is not NULL. Returns the port. */
static int start(char **ca)
{
    char listen[64];
    snprintf(listen, sizeof(listen), "max_body = %d\n", MAX_BODY);
    return mx_it_start_sim_behind_mcplex(listen, ca);
}

/* The upload: a JSON-RPC request whose string argument never ends. */
struct upload {
    size_t sent;
    char *resp;
    size_t resp_len;
};

static size_t read_cb(char *buf, size_t size, size_t n, void *data)
{
    struct upload *u = data;
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"";
    size_t room = size * n, k = 0;
    while (k < room && u->sent < UPLOAD_LEN) {
        buf[k++] = u->sent < sizeof(head) - 1 ? head[u->sent] : 'x';
        u->sent++;
    }
    return k;
}

static size_t write_cb(char *p, size_t size, size_t n, void *data)
{
    struct upload *u = data;
    size_t len = size * n;
    if (u->resp_len + len > 65536)
        return 0;
    u->resp = mx_xrealloc(u->resp, u->resp_len + len + 1);
    memcpy(u->resp + u->resp_len, p, len);
    u->resp_len += len;
    u->resp[u->resp_len] = '\0';
    return len;
}

/* |text| starts with a JSON-RPC error (id null, -32600) naming max_body. */
static void assert_refusal(const char *text)
{
    json_error_t jerr;
    json_t *msg = json_loads(text, JSON_DISABLE_EOF_CHECK, &jerr);
    if (msg == NULL)
        fprintf(stderr, "not JSON: %.200s\n", text);
    assert_non_null(msg);
    assert_string_equal(json_string_value(json_object_get(msg, "jsonrpc")), "2.0");
    assert_true(json_is_null(json_object_get(msg, "id")));
    json_t *err = json_object_get(msg, "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32600);
    assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "max_body"));
    json_decref(msg);
}

/* POST 10 MiB to |url| over |version| (a CURL_HTTP_VERSION_*), chunked or
 * with Content-Length, never waiting for 100 Continue; asserts 413 with a
 * JSON-RPC error body naming max_body, and prints what the client saw. */
static void post_too_large(const char *url, const char *ca, long version, bool chunked,
                           const char *label)
{
    struct upload u = {0};
    CURL *e = curl_easy_init();
    assert_non_null(e);
    struct curl_slist *hl = NULL;
    hl = curl_slist_append(hl, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
    hl = curl_slist_append(hl, "Expect:");
    if (chunked)
        hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(e, CURLOPT_READDATA, &u);
    if (!chunked)
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)UPLOAD_LEN);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, version);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &u);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 20000L);
    if (ca)
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    double total = 0;
    curl_off_t up = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &total);
    curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &up);
    fprintf(stderr,
            "%s: curl %d (%s), status %ld, %zu body bytes read by curl, %lld sent, %.3f s\n", label,
            (int)cc, curl_easy_strerror(cc), status, u.sent, (long long)up, total);
    curl_slist_free_all(hl);
    curl_easy_cleanup(e);

    assert_int_equal(cc, CURLE_OK);
    assert_int_equal(status, 413);
    assert_non_null(u.resp);
    assert_refusal(u.resp);
    free(u.resp);
    /* the answer came at once, not after a timeout */
    assert_true(total < 5.0);
}

/*
 * The same over HTTP/2 with nghttp (curl 7.88 turns the RST_STREAM(NO_ERROR)
 * that follows a complete answer into an error, against RFC 9113 §8.1):
 * |stream_len| uploads without content-length. Asserts the 413 with its
 * JSON-RPC error, then RST_STREAM(NO_ERROR) for the rest of the upload.
 */
static void post_too_large_h2(const char *url, bool stream_len, const char *label)
{
    char *file = mx_it_path("upload.json");
    if (access(file, R_OK) != 0) {
        char *big = mx_xmalloc(UPLOAD_LEN);
        struct upload u = {0};
        assert_int_equal(read_cb(big, 1, UPLOAD_LEN, &u), UPLOAD_LEN);
        assert_int_equal(mx_it_write_file(file, big, UPLOAD_LEN), 0);
        free(big);
    }
    const char *argv[] = {"nghttp", "-v",
                          "-d",     file,
                          "-H",     "content-type: application/json",
                          url,      stream_len ? "--no-content-length" : NULL,
                          NULL};
    char *out = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = mx_it_run("nghttp", argv, NULL, 20000, &out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    const char *st = strstr(out, ":status: ");
    const char *body = strstr(out, "{\"jsonrpc\"");
    const char *rst = strstr(out, "recv RST_STREAM");
    fprintf(stderr, "%s: nghttp exit %d, status %.3s, RST_STREAM %s, %.3f s\n", label, rc,
            st ? st + 9 : "none", rst ? "received" : "none", secs);
    assert_int_equal(rc, 0);
    assert_non_null(st);
    assert_memory_equal(st + 9, "413", 3);
    assert_non_null(body);
    assert_refusal(body);
    assert_non_null(rst);
    assert_non_null(strstr(rst, "NO_ERROR"));
    assert_true(secs < 5.0);
    free(out);
    free(file);
}

/* The next connection is served. */
static void next_served(const char *base, const char *ca, long version)
{
    char *url = mx_xasprintf("%s/health", base);
    CURL *e = curl_easy_init();
    struct upload u = {0};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, version);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &u);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    if (ca)
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    assert_int_equal(curl_easy_perform(e), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 200);
    curl_easy_cleanup(e);
    free(u.resp);
    free(url);
}

static void test_http1_too_large(void **state)
{
    (void)state;
    int port = start(NULL);
    char *base = mx_xasprintf("http://127.0.0.1:%d", port);
    char *url = mx_xasprintf("%s/mcp/sim", base);
    char *agg = mx_xasprintf("%s/mcp", base);
    post_too_large(url, NULL, CURL_HTTP_VERSION_1_1, true, "h1 chunked /mcp/sim");
    next_served(base, NULL, CURL_HTTP_VERSION_1_1);
    post_too_large(agg, NULL, CURL_HTTP_VERSION_1_1, true, "h1 chunked /mcp");
    next_served(base, NULL, CURL_HTTP_VERSION_1_1);
    post_too_large(url, NULL, CURL_HTTP_VERSION_1_1, false, "h1 content-length /mcp/sim");
    next_served(base, NULL, CURL_HTTP_VERSION_1_1);
    free(agg);
    free(url);
    free(base);
    mx_it_pass();
}

static void test_http2_prior_knowledge_too_large(void **state)
{
    (void)state;
    int port = start(NULL);
    char *base = mx_xasprintf("http://127.0.0.1:%d", port);
    char *url = mx_xasprintf("%s/mcp/sim", base);
    post_too_large_h2(url, true, "h2c no content-length /mcp/sim");
    next_served(base, NULL, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    post_too_large_h2(url, false, "h2c content-length /mcp/sim");
    next_served(base, NULL, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    free(url);
    free(base);
    mx_it_pass();
}

static void test_tls_too_large(void **state)
{
    (void)state;
    char *ca = NULL;
    int port = start(&ca);
    char *base = mx_xasprintf("https://127.0.0.1:%d", port);
    char *url = mx_xasprintf("%s/mcp/sim", base);
    post_too_large(url, ca, CURL_HTTP_VERSION_1_1, true, "h1 tls chunked /mcp/sim");
    next_served(base, ca, CURL_HTTP_VERSION_1_1);
    post_too_large(url, ca, CURL_HTTP_VERSION_1_1, false, "h1 tls content-length /mcp/sim");
    next_served(base, ca, CURL_HTTP_VERSION_1_1);
    post_too_large_h2(url, true, "h2 tls no content-length /mcp/sim");
    next_served(base, ca, CURL_HTTP_VERSION_2TLS);
    free(url);
    free(base);
    free(ca);
    mx_it_pass();
}

/* A raw client over the limit that reads the answer, then keeps sending
 * and never closes: mcplex drops what it sends, for a bounded time only. */
static void test_linger_bounded(void **state)
{
    (void)state;
    int port = start(NULL);
    int fd = mx_it_connect_from(NULL, port);
    static const char head[] = "POST /mcp/sim HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 104857600\r\n\r\n";
    assert_true(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(head) - 1));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char resp[4096], chunk[16384];
    size_t got = 0;
    bool eof = false, closed = false;
    memset(chunk, 'x', sizeof(chunk));
    /* 16 KiB every 20 ms, reading whatever comes, for at most 10 s */
    for (int i = 0; i < 500 && !closed; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        while (!eof && poll(&p, 1, 0) > 0) {
            ssize_t n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
            if (n <= 0) {
                eof = true; /* mcplex ended its side */
                break;
            }
            got += (size_t)n;
        }
        if (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0)
            closed = errno == EPIPE || errno == ECONNRESET;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    resp[got] = '\0';
    fprintf(stderr, "raw client: answer %.12s, our side ended by mcplex: %s, closed after %.2f s\n",
            resp, eof ? "yes" : "no", secs);
    close(fd);
    assert_memory_equal(resp, "HTTP/1.1 413", 12);
    assert_refusal(strstr(resp, "\r\n\r\n") + 4);
    assert_true(eof);
    assert_true(closed);
    /* the bound (5 s), not earlier: the client kept sending all along */
    assert_true(secs >= 4.5 && secs < 8.0);
    char *base = mx_xasprintf("http://127.0.0.1:%d", port);
    next_served(base, NULL, CURL_HTTP_VERSION_1_1);
    free(base);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http1_too_large, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_http2_prior_knowledge_too_large, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_too_large, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_linger_bounded, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
