/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 server over a socketpair, with an nghttp2 client session as the
 * peer: requests and the request model (pseudo-headers, :authority as
 * Host), many concurrent streams, body limits, RST_STREAM aborting the
 * handler, flow control turning into MX_EAGAIN and on_drain, streamed
 * responses arriving before the end, GOAWAY on stop with in-flight streams
 * finished, and HTTP/1.1 still served on the same kind of socket.
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
#include <nghttp2/nghttp2.h>

#include "buf.h"
#include "err.h"
#include "http2.h"
#include "httpd.h"
#include "log.h"
#include "req_int.h"

#define MAX_CSTREAMS 256
#define BIG_TOTAL    (512 * 1024)
#define BIG_CHUNK    (16 * 1024)

#define NV(a, b)                                                                                   \
    ((nghttp2_nv){(uint8_t *)(uintptr_t)(a), (uint8_t *)(uintptr_t)(b), strlen(a), strlen(b),      \
                  NGHTTP2_NV_FLAG_NONE})

enum mode {
    MODE_ECHO = 0,   /* answer with a summary of the request */
    MODE_HOLD = 1,   /* keep the request without answering */
    MODE_BIG = 2,    /* stream BIG_TOTAL bytes, honouring MX_EAGAIN / on_drain */
    MODE_STREAM = 3, /* start, write one event, keep the request */
};

/* ---- the client side ---- */

struct cstream {
    int32_t id;
    int status;
    char content_type[64];
    struct mx_buf body;
    bool closed;
    uint32_t error;
    const char *upload; /* request body source */
    size_t upload_len;
    size_t upload_off;
};

struct client {
    nghttp2_session *ngh;
    int fd;
    struct mx_buf out;
    struct cstream s[MAX_CSTREAMS];
    size_t cnt;
    size_t closed_cnt;
    bool goaway;
    bool eof;
};

struct fx {
    struct ev_loop *loop;
    struct mx_httpd *srv;
    struct client cl;
    enum mode mode;
    int requests;
    int last_version;
    int aborts;
    int drains;
    int eagains;
    size_t big_sent;
    struct mx_req *held;
};

static int status_of(const uint8_t *v, size_t len)
{
    int st = 0;
    for (size_t i = 0; i < len && i < 3; i++)
        st = st * 10 + (v[i] - '0');
    return st;
}

static ssize_t c_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud)
{
    struct client *cl = ud;
    (void)s;
    (void)flags;
    if (mx_buf_append(&cl->out, data, len))
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return (ssize_t)len;
}

static int c_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                    size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    struct cstream *cs = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    (void)flags;
    (void)ud;
    if (cs == NULL)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0)
        cs->status = status_of(value, valuelen);
    if (namelen == 12 && memcmp(name, "content-type", 12) == 0 &&
        valuelen < sizeof(cs->content_type)) {
        memcpy(cs->content_type, value, valuelen);
        cs->content_type[valuelen] = '\0';
    }
    return 0;
}

static int c_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                  void *ud)
{
    struct cstream *cs = nghttp2_session_get_stream_user_data(s, id);
    (void)flags;
    (void)ud;
    if (cs)
        assert_int_equal(mx_buf_append(&cs->body, data, len), 0);
    return 0;
}

static int c_close(nghttp2_session *s, int32_t id, uint32_t error, void *ud)
{
    struct client *cl = ud;
    struct cstream *cs = nghttp2_session_get_stream_user_data(s, id);
    if (cs && !cs->closed) {
        cs->closed = true;
        cs->error = error;
        cl->closed_cnt++;
    }
    return 0;
}

static int c_frame(nghttp2_session *s, const nghttp2_frame *frame, void *ud)
{
    struct client *cl = ud;
    (void)s;
    if (frame->hd.type == NGHTTP2_GOAWAY)
        cl->goaway = true;
    return 0;
}

static ssize_t c_upload(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *ud)
{
    struct cstream *cs = src->ptr;
    size_t n = cs->upload_len - cs->upload_off;
    (void)s;
    (void)id;
    (void)ud;
    if (n > len)
        n = len;
    memcpy(buf, cs->upload + cs->upload_off, n);
    cs->upload_off += n;
    if (cs->upload_off == cs->upload_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void client_init(struct client *cl, int fd, bool manual_window)
{
    nghttp2_session_callbacks *cbs;
    nghttp2_option *opt;
    memset(cl, 0, sizeof(*cl));
    cl->fd = fd;
    mx_buf_init(&cl->out, 16 << 20);
    assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
    nghttp2_session_callbacks_set_send_callback(cbs, c_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, c_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, c_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, c_frame);
    assert_int_equal(nghttp2_option_new(&opt), 0);
    nghttp2_option_set_no_auto_window_update(opt, manual_window ? 1 : 0);
    assert_int_equal(nghttp2_session_client_new2(&cl->ngh, cbs, cl, opt), 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
}

static void client_settings(struct client *cl, uint32_t window)
{
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
    assert_int_equal(nghttp2_submit_settings(cl->ngh, NGHTTP2_FLAG_NONE, iv, 1), 0);
}

static void client_clear(struct client *cl)
{
    nghttp2_session_del(cl->ngh);
    for (size_t i = 0; i < cl->cnt; i++)
        mx_buf_clear(&cl->s[i].body);
    mx_buf_clear(&cl->out);
    if (cl->fd >= 0)
        close(cl->fd);
}

/* Move bytes both ways once. */
static void client_io(struct client *cl)
{
    uint8_t buf[65536];
    if (cl->fd < 0)
        return;
    assert_int_equal(nghttp2_session_send(cl->ngh), 0);
    while (mx_buf_len(&cl->out)) {
        ssize_t n = write(cl->fd, mx_buf_data(&cl->out), mx_buf_len(&cl->out));
        if (n <= 0)
            break;
        mx_buf_consume(&cl->out, (size_t)n);
    }
    for (int i = 0; i < 64 && !cl->eof; i++) {
        ssize_t n = read(cl->fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            cl->eof = true;
            break;
        }
        if (n < 0)
            break;
        assert_int_equal(nghttp2_session_mem_recv(cl->ngh, buf, (size_t)n), n);
    }
}

static struct cstream *submit(struct client *cl, const char *method, const char *path,
                              const char *body, const nghttp2_nv *extra, size_t extra_cnt)
{
    nghttp2_nv nv[16];
    size_t n = 0;
    nv[n++] = NV(":method", method);
    nv[n++] = NV(":scheme", "http");
    nv[n++] = NV(":authority", "127.0.0.1:8443");
    nv[n++] = NV(":path", path);
    for (size_t i = 0; i < extra_cnt && n < 16; i++)
        nv[n++] = extra[i];
    assert_true(cl->cnt < MAX_CSTREAMS);
    struct cstream *cs = &cl->s[cl->cnt++];
    mx_buf_init(&cs->body, 8 << 20);
    nghttp2_data_provider prd = {.source.ptr = cs, .read_callback = c_upload};
    if (body) {
        cs->upload = body;
        cs->upload_len = strlen(body);
    }
    cs->id = nghttp2_submit_request(cl->ngh, NULL, nv, n, body ? &prd : NULL, cs);
    assert_true(cs->id > 0);
    return cs;
}

/* ---- the server side ---- */

static void on_abort(struct mx_req *req, void *data)
{
    struct fx *f = data;
    (void)req;
    f->aborts++;
    f->held = NULL;
}

static void big_more(struct fx *f, struct mx_req *req)
{
    static char chunk[BIG_CHUNK];
    memset(chunk, 'z', sizeof(chunk));
    while (f->big_sent < BIG_TOTAL) {
        int rc = mx_req_write(req, chunk, sizeof(chunk));
        f->big_sent += sizeof(chunk);
        if (rc == MX_EAGAIN) {
            f->eagains++;
            return;
        }
        assert_int_equal(rc, 0);
    }
    f->held = NULL;
    mx_req_end(req);
}

static void on_drain(struct mx_req *req, void *data)
{
    struct fx *f = data;
    f->drains++;
    big_more(f, req);
}

static void on_request(struct mx_req *req, void *data)
{
    struct fx *f = data;
    char out[8192];
    f->requests++;
    f->last_version = mx_req_http_version(req);
    switch (f->mode) {
    case MODE_HOLD:
        f->held = req;
        mx_req_set_handler(req, NULL, on_abort, f);
        return;
    case MODE_BIG:
        f->held = req;
        mx_req_set_handler(req, on_drain, on_abort, f);
        assert_int_equal(mx_req_start(req, 200, NULL, 0, -1), 0);
        big_more(f, req);
        return;
    case MODE_STREAM: {
        static const struct mx_hdr_out h[] = {{"Content-Type", "text/event-stream"}};
        f->held = req;
        mx_req_set_handler(req, NULL, on_abort, f);
        assert_int_equal(mx_req_start(req, 200, h, 1, -1), 0);
        assert_int_equal(mx_req_write(req, "data: one\n\n", 11), 0);
        return;
    }
    case MODE_ECHO:
        break;
    }
    struct mx_str m = mx_req_method(req), p = mx_req_path(req), q = mx_req_query(req),
                  b = mx_req_body(req);
    const struct mx_str *host = mx_req_header(req, "Host");
    const struct mx_str *x = mx_req_header(req, "X-Test");
    int n = snprintf(out, sizeof(out), "%.*s %.*s ?%.*s host=%.*s x=%.*s body=%.*s", (int)m.len,
                     m.p, (int)p.len, p.p, (int)q.len, q.p, host ? (int)host->len : 0,
                     host ? host->p : "", x ? (int)x->len : 0, x ? x->p : "", (int)b.len, b.p);
    mx_req_respond(req, 200, NULL, 0, "text/plain", out, (size_t)n);
}

static struct fx *fx_new(bool manual_window)
{
    struct fx *f = calloc(1, sizeof(*f));
    int sv[2];
    struct mx_httpd_opts o;
    f->loop = ev_loop_new(EVFLAG_AUTO);
    mx_httpd_opts_default(&o);
    o.max_header = 2048;
    o.max_body = 4096;
    o.header_timeout_s = 0.5;
    o.idle_timeout_s = 5;
    f->srv = mx_httpd_new(f->loop, &o, on_request, f);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    mx_httpd_adopt(f->srv, sv[0], "test");
    client_init(&f->cl, sv[1], manual_window);
    return f;
}

static int setup(void **state)
{
    struct fx *f = fx_new(false);
    client_settings(&f->cl, 65535);
    *state = f;
    return 0;
}

static int setup_manual_window(void **state)
{
    struct fx *f = fx_new(true);
    /* A tiny stream window: the server can send almost nothing. */
    client_settings(&f->cl, 1024);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    client_clear(&f->cl);
    mx_httpd_free(f->srv);
    ev_loop_destroy(f->loop);
    assert_int_equal(mx_req_live_cnt(), 0);
    free(f);
    return 0;
}

typedef bool (*done_fn)(struct fx *f, const void *arg);

/* Run both sides until |done| or |seconds| pass. Returns whether done. */
static bool pump(struct fx *f, done_fn done, const void *arg, double seconds)
{
    ev_tstamp end = ev_time() + seconds;
    while (ev_time() < end) {
        ev_run(f->loop, EVRUN_NOWAIT);
        client_io(&f->cl);
        ev_run(f->loop, EVRUN_NOWAIT);
        if (done && done(f, arg))
            return true;
        usleep(500);
    }
    return false;
}

static bool stream_closed(struct fx *f, const void *arg)
{
    (void)f;
    return ((const struct cstream *)arg)->closed;
}

static bool all_closed(struct fx *f, const void *arg)
{
    return f->cl.closed_cnt >= *(const size_t *)arg;
}

static bool held(struct fx *f, const void *arg)
{
    (void)arg;
    return f->held != NULL;
}

static bool aborted(struct fx *f, const void *arg)
{
    (void)arg;
    return f->aborts > 0;
}

static bool client_eof(struct fx *f, const void *arg)
{
    (void)arg;
    return f->cl.eof;
}

static bool body_has(const struct cstream *cs, const char *s)
{
    return memmem(mx_buf_data(&cs->body), mx_buf_len(&cs->body), s, strlen(s)) != NULL;
}

/* ---- tests ---- */

static void test_http2_get_maps_authority_to_host(void **state)
{
    struct fx *f = *state;
    nghttp2_nv x = NV("x-test", "padded");
    struct cstream *cs = submit(&f->cl, "GET", "/mcp/files?a=1", NULL, &x, 1);
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 200);
    assert_int_equal(cs->error, NGHTTP2_NO_ERROR);
    assert_int_equal(f->last_version, 20);
    assert_string_equal(cs->content_type, "text/plain");
    assert_true(body_has(cs, "GET /mcp/files ?a=1 host=127.0.0.1:8443 x=padded body="));
}

static void test_http2_post_body(void **state)
{
    struct fx *f = *state;
    struct cstream *cs = submit(&f->cl, "POST", "/mcp/a", "{\"jsonrpc\":\"2.0\"}", NULL, 0);
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 200);
    assert_true(body_has(cs, "POST /mcp/a ? host=127.0.0.1:8443 x= body={\"jsonrpc\":\"2.0\"}"));
}

static void test_http2_many_concurrent_streams(void **state)
{
    struct fx *f = *state;
    char paths[100][32];
    size_t want = 100;
    for (int i = 0; i < 100; i++) {
        snprintf(paths[i], sizeof(paths[i]), "/call/%d", i);
        submit(&f->cl, "POST", paths[i], paths[i], NULL, 0);
    }
    assert_true(pump(f, all_closed, &want, 5));
    assert_int_equal(f->requests, 100);
    for (int i = 0; i < 100; i++) {
        char expect[128];
        snprintf(expect, sizeof(expect), "POST %.31s ? host=127.0.0.1:8443 x= body=%.31s", paths[i],
                 paths[i]);
        assert_int_equal(f->cl.s[i].status, 200);
        assert_true(body_has(&f->cl.s[i], expect));
    }
    assert_int_equal(mx_httpd_conn_cnt(f->srv), 1);
}

static void test_http2_body_over_cap_413(void **state)
{
    struct fx *f = *state;
    static char big[6000];
    memset(big, 'b', sizeof(big) - 1);
    struct cstream *cs = submit(&f->cl, "POST", "/big", big, NULL, 0);
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 413);
    assert_int_equal(f->requests, 0);
    /* The connection lives on for the next request. */
    f->mode = MODE_ECHO;
    struct cstream *ok = submit(&f->cl, "GET", "/after", NULL, NULL, 0);
    assert_true(pump(f, stream_closed, ok, 2));
    assert_int_equal(ok->status, 200);
}

static void test_http2_body_at_cap_accepted(void **state)
{
    struct fx *f = *state;
    static char body[4097];
    memset(body, 'c', 4096);
    struct cstream *cs = submit(&f->cl, "POST", "/cap", body, NULL, 0);
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 200);
    assert_int_equal(f->requests, 1);
}

/* Submit HEADERS without END_STREAM: a request whose body never comes. */
static struct cstream *submit_open(struct client *cl, const char *path, const nghttp2_nv *extra)
{
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":authority", "x"),
                       NV(":path", path), extra ? *extra : NV("x-none", "")};
    struct cstream *cs = &cl->s[cl->cnt++];
    mx_buf_init(&cs->body, 1 << 20);
    cs->id = nghttp2_submit_headers(cl->ngh, NGHTTP2_FLAG_NONE, -1, NULL, nv, 5, cs);
    assert_true(cs->id > 0);
    return cs;
}

static void test_http2_announced_length_over_cap_413(void **state)
{
    struct fx *f = *state;
    nghttp2_nv cl = NV("content-length", "5000");
    struct cstream *cs = submit_open(&f->cl, "/big", &cl);
    /* Refused at once from the announced length, not after a timeout. */
    assert_true(pump(f, stream_closed, cs, 0.4));
    assert_int_equal(cs->status, 413);
    assert_int_equal(cs->error, NGHTTP2_NO_ERROR);
    assert_int_equal(f->requests, 0);
}

static void test_http2_header_too_large_431(void **state)
{
    struct fx *f = *state;
    static char v[3000];
    memset(v, 'h', sizeof(v) - 1);
    nghttp2_nv big = NV("x-big", v);
    struct cstream *cs = submit(&f->cl, "GET", "/h", NULL, &big, 1);
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 431);
    assert_int_equal(f->requests, 0);
}

static void test_http2_rst_stream_aborts_handler(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_HOLD;
    struct cstream *cs = submit(&f->cl, "POST", "/hold", "{}", NULL, 0);
    assert_true(pump(f, held, NULL, 2));
    assert_int_equal(f->aborts, 0);
    nghttp2_submit_rst_stream(f->cl.ngh, NGHTTP2_FLAG_NONE, cs->id, NGHTTP2_CANCEL);
    assert_true(pump(f, aborted, NULL, 2));
    assert_int_equal(f->aborts, 1);
    assert_null(f->held);
    /* Freed once the loop turned; the connection still serves. */
    f->mode = MODE_ECHO;
    struct cstream *ok = submit(&f->cl, "GET", "/after", NULL, NULL, 0);
    assert_true(pump(f, stream_closed, ok, 2));
    assert_int_equal(ok->status, 200);
}

static void test_http2_stream_data_before_end(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_STREAM;
    struct cstream *cs = submit(&f->cl, "GET", "/sse", NULL, NULL, 0);
    assert_true(pump(f, held, NULL, 2));
    pump(f, NULL, NULL, 0.1);
    /* The first event is there while the response is still open. */
    assert_true(body_has(cs, "data: one\n\n"));
    assert_false(cs->closed);
    assert_int_equal(cs->status, 200);
    assert_string_equal(cs->content_type, "text/event-stream");
    assert_int_equal(mx_req_write(f->held, "data: two\n\n", 11), 0);
    mx_req_end(f->held);
    f->held = NULL;
    assert_true(pump(f, stream_closed, cs, 2));
    assert_true(body_has(cs, "data: one\n\ndata: two\n\n"));
    assert_int_equal(cs->error, NGHTTP2_NO_ERROR);
}

static void test_http2_flow_control_eagain_then_drain(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_BIG;
    struct cstream *cs = submit(&f->cl, "GET", "/big", NULL, NULL, 0);
    assert_true(pump(f, held, NULL, 2));
    pump(f, NULL, NULL, 0.2);
    /* The peer's window is closed: the handler was told to wait and is
     * still waiting; the server holds only what it was given. */
    assert_int_equal(f->eagains, 1);
    assert_int_equal(f->drains, 0);
    assert_true(f->big_sent <= MX_H2_STREAM_OUT_HIGH + BIG_CHUNK);
    assert_true(mx_buf_len(&cs->body) <= 1024);
    /* Open the windows (stream and connection): the queue drains. */
    nghttp2_submit_window_update(f->cl.ngh, NGHTTP2_FLAG_NONE, cs->id, 8 << 20);
    nghttp2_submit_window_update(f->cl.ngh, NGHTTP2_FLAG_NONE, 0, 8 << 20);
    assert_true(pump(f, stream_closed, cs, 5));
    assert_true(f->drains >= 1);
    assert_int_equal(mx_buf_len(&cs->body), BIG_TOTAL);
    assert_int_equal(cs->error, NGHTTP2_NO_ERROR);
}

static void test_http2_goaway_on_stop_finishes_streams(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_HOLD;
    struct cstream *cs = submit(&f->cl, "GET", "/inflight", NULL, NULL, 0);
    assert_true(pump(f, held, NULL, 2));
    mx_httpd_stop_accepting(f->srv);
    pump(f, NULL, NULL, 0.1);
    assert_true(f->cl.goaway);
    assert_false(cs->closed);
    assert_false(f->cl.eof);
    /* The in-flight stream still gets its answer, then the connection ends. */
    mx_req_respond(f->held, 200, NULL, 0, "text/plain", "late", 4);
    f->held = NULL;
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 200);
    assert_true(body_has(cs, "late"));
    assert_true(pump(f, client_eof, NULL, 2));
    assert_int_equal(f->aborts, 0);
}

static void test_http2_request_timeout_408(void **state)
{
    struct fx *f = *state;
    struct cstream *cs = submit_open(&f->cl, "/slow", NULL);
    assert_true(pump(f, stream_closed, cs, 3));
    assert_int_equal(cs->status, 408);
    assert_int_equal(f->requests, 0);
}

static void test_http2_connection_close_aborts_all(void **state)
{
    struct fx *f = *state;
    f->mode = MODE_HOLD;
    submit(&f->cl, "GET", "/a", NULL, NULL, 0);
    assert_true(pump(f, held, NULL, 2));
    close(f->cl.fd);
    f->cl.fd = -1;
    assert_true(pump(f, aborted, NULL, 2));
    assert_int_equal(f->aborts, 1);
}

static void test_http2_head_has_no_body(void **state)
{
    struct fx *f = *state;
    struct cstream *cs = submit(&f->cl, "HEAD", "/h", NULL, NULL, 0);
    assert_true(pump(f, stream_closed, cs, 2));
    assert_int_equal(cs->status, 200);
    assert_int_equal(mx_buf_len(&cs->body), 0);
    assert_int_equal(cs->error, NGHTTP2_NO_ERROR);
}

/* A connection error (DATA on stream 0, RFC 9113 §6.1) ends in GOAWAY and a close. */
static void test_http2_protocol_error_goaway_close(void **state)
{
    struct fx *f = *state;
    static const char bad[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                              "\x00\x00\x00\x04\x00\x00\x00\x00\x00"   /* SETTINGS */
                              "\x00\x00\x01\x00\x00\x00\x00\x00\x00x"; /* DATA, stream 0 */
    unsigned char got[4096];
    size_t len = 0;
    bool eof = false;
    assert_int_equal(write(f->cl.fd, bad, sizeof(bad) - 1), (ssize_t)(sizeof(bad) - 1));
    for (int i = 0; i < 2000 && !eof; i++) {
        ev_run(f->loop, EVRUN_NOWAIT);
        ssize_t n = read(f->cl.fd, got + len, sizeof(got) - len);
        if (n > 0)
            len += (size_t)n;
        else if (n == 0)
            eof = true;
        usleep(500);
    }
    assert_true(eof);
    bool goaway = false;
    for (size_t off = 0; off + 9 <= len;) {
        size_t flen = (size_t)got[off] << 16 | (size_t)got[off + 1] << 8 | got[off + 2];
        if (got[off + 3] == NGHTTP2_GOAWAY && off + 9 + 8 <= len)
            goaway = got[off + 9 + 7] == NGHTTP2_PROTOCOL_ERROR;
        off += 9 + flen;
    }
    assert_true(goaway);
    assert_int_equal(mx_httpd_conn_cnt(f->srv), 0);
}

/* HTTP/1.1 on a plain socket still works beside h2c detection. */
static void test_http2_plain_socket_still_speaks_http1(void **state)
{
    struct fx *f = *state;
    int sv[2];
    char buf[4096];
    size_t got = 0;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    mx_httpd_adopt(f->srv, sv[0], "h1");
    const char *r = "GET /one HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(write(sv[1], r, strlen(r)), (ssize_t)strlen(r));
    for (int i = 0; i < 2000 && got < sizeof(buf) - 1; i++) {
        ev_run(f->loop, EVRUN_NOWAIT);
        ssize_t n = read(sv[1], buf + got, sizeof(buf) - 1 - got);
        if (n > 0)
            got += (size_t)n;
        buf[got] = '\0';
        if (strstr(buf, "body="))
            break;
        usleep(500);
    }
    close(sv[1]);
    assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
    assert_int_equal(f->last_version, 11);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("MX_TEST_DEBUG"))
        mx_log_set_level(MX_LOG_DEBUG);
    if (getenv("MX_TEST_FILTER"))
        cmocka_set_test_filter(getenv("MX_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http2_get_maps_authority_to_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_post_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_many_concurrent_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_body_over_cap_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_body_at_cap_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_announced_length_over_cap_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_header_too_large_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_rst_stream_aborts_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_stream_data_before_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_flow_control_eagain_then_drain,
                                        setup_manual_window, teardown),
        cmocka_unit_test_setup_teardown(test_http2_goaway_on_stop_finishes_streams, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http2_request_timeout_408, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_connection_close_aborts_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_head_has_no_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_protocol_error_goaway_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http2_plain_socket_still_speaks_http1, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
