/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 server over a socketpair: request parsing edge cases, limits,
 * keep-alive and pipelining, streamed responses and client aborts.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "buf.h"
#include "err.h"
#include "httpd.h"
#include "req_int.h"

enum mode {
    MODE_ECHO = 0,   /* answer with a summary of the request */
    MODE_STREAM = 1, /* stream three chunks */
    MODE_HOLD = 2,   /* keep the request without answering */
};

struct fx {
    struct ev_loop *loop;
    struct mx_httpd *srv;
    int peer; /* client end */
    struct mx_buf got;
    enum mode mode;
    int requests;
    int aborts;
    struct mx_req *held;
};

static void on_abort(struct mx_req *req, void *data)
{
    struct fx *f = data;
    (void)req;
    f->aborts++;
    f->held = NULL;
}

static void on_request(struct mx_req *req, void *data)
{
    struct fx *f = data;
    char out[8192];
    f->requests++;
    if (f->mode == MODE_HOLD) {
        f->held = req;
        mx_req_set_handler(req, NULL, on_abort, f);
        return;
    }
    if (f->mode == MODE_STREAM) {
        mx_req_start(req, 200, NULL, 0, -1);
        mx_req_write(req, "one,", 4);
        mx_req_write(req, "two,", 4);
        mx_req_write(req, "three", 5);
        mx_req_end(req);
        return;
    }
    struct mx_str m = mx_req_method(req), p = mx_req_path(req), q = mx_req_query(req),
                  b = mx_req_body(req);
    const struct mx_str *x = mx_req_header(req, "X-Test");
    int n = snprintf(out, sizeof(out), "%.*s %.*s ?%.*s x=%.*s hdrs=%zu body=%.*s", (int)m.len, m.p,
                     (int)p.len, p.p, (int)q.len, q.p, x ? (int)x->len : 0, x ? x->p : "",
                     mx_req_header_cnt(req), (int)b.len, b.p);
    mx_req_respond(req, 200, NULL, 0, "text/plain", out, (size_t)n);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    int sv[2];
    struct mx_httpd_opts o;
    f->loop = ev_loop_new(EVFLAG_AUTO);
    mx_httpd_opts_default(&o);
    o.max_header = 1024;
    o.max_body = 2048;
    o.header_timeout_s = 0.3;
    o.idle_timeout_s = 5;
    f->srv = mx_httpd_new(f->loop, &o, on_request, f);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    mx_httpd_adopt(f->srv, sv[0], "test");
    f->peer = sv[1];
    mx_buf_init(&f->got, 1 << 20);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    close(f->peer);
    mx_httpd_free(f->srv);
    ev_loop_destroy(f->loop);
    mx_buf_clear(&f->got);
    assert_int_equal(mx_req_live_cnt(), 0);
    free(f);
    return 0;
}

static void send_str(struct fx *f, const char *s, size_t len)
{
    assert_int_equal(write(f->peer, s, len), (ssize_t)len);
}

/* Run the loop until the peer has read |want| (as a substring) or EOF, or
 * the time runs out. Returns 1 if the peer saw EOF. */
static int pump(struct fx *f, const char *want, double seconds)
{
    ev_tstamp end = ev_time() + seconds;
    int eof = 0;
    while (ev_time() < end) {
        ev_run(f->loop, EVRUN_NOWAIT);
        char buf[4096];
        ssize_t n = read(f->peer, buf, sizeof(buf));
        if (n > 0)
            mx_buf_append(&f->got, buf, (size_t)n);
        else if (n == 0) {
            eof = 1;
            break;
        }
        if (want && memmem(mx_buf_data(&f->got), mx_buf_len(&f->got), want, strlen(want)))
            break;
        usleep(1000);
    }
    return eof;
}

static int got_has(struct fx *f, const char *s)
{
    return memmem(mx_buf_data(&f->got), mx_buf_len(&f->got), s, strlen(s)) != NULL;
}

static void test_http1_get_with_query_and_headers(void **state)
{
    struct fx *f = *state;
    const char *r = "GET /mcp/files?a=1 HTTP/1.1\r\nHost: x\r\nX-Test:  padded  \r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, "hdrs=2", 2);
    assert_true(got_has(f, "HTTP/1.1 200 OK\r\n"));
    assert_true(got_has(f, "GET /mcp/files ?a=1 x=padded hdrs=2 body="));
}

static void test_http1_header_split_byte_by_byte(void **state)
{
    struct fx *f = *state;
    const char *r = "POST /p HTTP/1.1\r\nHost: x\r\nX-Test: abc\r\nContent-Length: 5\r\n\r\nhello";
    for (size_t i = 0; i < strlen(r); i++) {
        send_str(f, r + i, 1);
        ev_run(f->loop, EVRUN_NOWAIT);
    }
    pump(f, "body=hello", 2);
    assert_true(got_has(f, "POST /p ? x=abc hdrs=3 body=hello"));
}

static void test_http1_chunked_request_body(void **state)
{
    struct fx *f = *state;
    const char *r = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, "body=abcdefg", 2);
    assert_true(got_has(f, "body=abcdefg"));
}

static void test_http1_chunked_trailers_ignored(void **state)
{
    struct fx *f = *state;
    const char *r = "POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "3\r\nabc\r\n0\r\nX-Trailer: 1\r\nX-Test: late\r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, "body=abc", 2);
    /* the trailer neither adds headers nor overrides X-Test */
    assert_true(got_has(f, "POST /t ? x= hdrs=2 body=abc"));
}

static void test_http1_pipelined_in_order(void **state)
{
    struct fx *f = *state;
    const char *r = "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, "GET /two", 2);
    const char *d = mx_buf_data(&f->got);
    const char *one = memmem(d, mx_buf_len(&f->got), "GET /one", 8);
    const char *two = memmem(d, mx_buf_len(&f->got), "GET /two", 8);
    assert_non_null(one);
    assert_non_null(two);
    assert_true(one < two);
    assert_int_equal(f->requests, 2);
}

static void test_http1_header_too_large_431(void **state)
{
    struct fx *f = *state;
    char r[4096];
    int n = snprintf(r, sizeof(r), "GET / HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(r + n, 'a', 2000);
    memcpy(r + n + 2000, "\r\n\r\n", 4);
    send_str(f, r, (size_t)n + 2004);
    int eof = pump(f, NULL, 2);
    assert_true(got_has(f, "HTTP/1.1 431 "));
    assert_true(eof);
    assert_int_equal(f->requests, 0);
}

static void test_http1_body_too_large_413(void **state)
{
    struct fx *f = *state;
    const char *r = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n";
    send_str(f, r, strlen(r));
    int eof = pump(f, NULL, 2);
    assert_true(got_has(f, "HTTP/1.1 413 "));
    assert_true(eof);
    assert_int_equal(f->requests, 0);
}

static void test_http1_body_at_cap_accepted(void **state)
{
    struct fx *f = *state;
    char r[4096];
    int n = snprintf(r, sizeof(r), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n");
    memset(r + n, 'b', 2048);
    send_str(f, r, (size_t)n + 2048);
    pump(f, "bbbb", 2);
    assert_true(got_has(f, "HTTP/1.1 200 OK"));
    assert_int_equal(f->requests, 1);
}

static void test_http1_chunked_body_over_cap_413(void **state)
{
    struct fx *f = *state;
    char r[8192];
    int n = snprintf(r, sizeof(r),
                     "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "1000\r\n");
    memset(r + n, 'c', 4096);
    memcpy(r + n + 4096, "\r\n0\r\n\r\n", 7);
    send_str(f, r, (size_t)n + 4096 + 7);
    pump(f, NULL, 2);
    assert_true(got_has(f, "HTTP/1.1 413 "));
    assert_int_equal(f->requests, 0);
}

static void test_http1_malformed_400(void **state)
{
    struct fx *f = *state;
    const char *r = "GARBAGE\r\n\r\n";
    send_str(f, r, strlen(r));
    int eof = pump(f, NULL, 2);
    assert_true(got_has(f, "HTTP/1.1 400 "));
    assert_true(eof);
}

static void test_http1_http10_closes(void **state)
{
    struct fx *f = *state;
    const char *r = "GET /old HTTP/1.0\r\n\r\n";
    send_str(f, r, strlen(r));
    int eof = pump(f, NULL, 2);
    assert_true(got_has(f, "HTTP/1.0 200 OK"));
    assert_true(got_has(f, "Connection: close"));
    assert_true(eof);
}

static void test_http1_streamed_response_chunked(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_STREAM;
    const char *r = "GET /s HTTP/1.1\r\nHost: x\r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, "0\r\n\r\n", 2);
    assert_true(got_has(f, "Transfer-Encoding: chunked"));
    assert_true(got_has(f, "4\r\none,\r\n4\r\ntwo,\r\n5\r\nthree\r\n0\r\n\r\n"));
}

static void test_http1_expect_continue(void **state)
{
    struct fx *f = *state;
    const char *r =
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, "100 Continue", 2);
    assert_true(got_has(f, "HTTP/1.1 100 Continue\r\n\r\n"));
    send_str(f, "hi", 2);
    pump(f, "body=hi", 2);
    assert_true(got_has(f, "body=hi"));
}

static void test_http1_header_timeout_408(void **state)
{
    struct fx *f = *state;
    const char *r = "GET / HTTP/1.1\r\nHost: x\r\n";
    send_str(f, r, strlen(r));
    int eof = pump(f, NULL, 2);
    assert_true(got_has(f, "HTTP/1.1 408 "));
    assert_true(eof);
}

static void test_http1_client_abort_notifies(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_HOLD;
    const char *r = "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n";
    send_str(f, r, strlen(r));
    pump(f, NULL, 0.1);
    assert_non_null(f->held);
    close(f->peer);
    f->peer = -1;
    for (int i = 0; i < 50 && f->aborts == 0; i++) {
        ev_run(f->loop, EVRUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(f->aborts, 1);
    assert_null(f->held);
    f->peer = open("/dev/null", O_RDONLY);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http1_get_with_query_and_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_header_split_byte_by_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_chunked_request_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_chunked_trailers_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_pipelined_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_header_too_large_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_body_too_large_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_body_at_cap_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_chunked_body_over_cap_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_malformed_400, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_http10_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_streamed_response_chunked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_expect_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_header_timeout_408, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http1_client_abort_notifies, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
