/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 front end on a connection (conn.h): http-parser callbacks fill an
 * mx_req; one request in flight per connection (pipelined bytes wait in the
 * input buffer and are parsed only after the response ends); responses go
 * out with Content-Length or chunked, through the connection's capped output
 * with its watermarks. Transport, TLS and the socket are the core's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "alloc.h"
#include "httpd_int.h"
#include "err.h"
#include "log.h"
#include "req_int.h"

struct h1 {
    http_parser parser;
    struct mx_req *req; /* request being parsed or handled; owned */
    size_t requests;
    int error_status; /* set by parser callbacks to answer a limit */
    bool in_message;  /* between message begin and complete */
    bool dispatched;  /* the current request went to the handler */
    bool chunked;     /* response uses chunked encoding */
    bool keep_alive;
    bool draining_notify; /* the handler waits for on_drain */
};

static const struct mx_req_proto h1_req_proto;
static const http_parser_settings h1_settings;

static struct h1 *h1_of(struct mx_conn *c)
{
    return c->proto_data;
}

/* Answer |status| ourselves and close; the peer may still be sending the
 * request (an upload over max_body), so the close lingers (conn.h). */
static void simple_response(struct mx_conn *c, int status, const char *msg)
{
    char body[512];
    char head[256];
    size_t bl = mx_conn_refusal_body(c, status, msg, body, sizeof(body));
    int hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      status, mx_http_reason(status), bl);
    if (mx_conn_write(c, head, (size_t)hl) || mx_conn_write(c, body, bl))
        return;
    mx_conn_pause_read(c, true);
    mx_conn_set_timer(c, 0);
    mx_conn_linger_close(c);
    mx_conn_flush(c);
}

/* ---- mx_req_proto for HTTP/1.1 ---- */

static bool hdr_is(const char *name, const char *want)
{
    return strcasecmp(name, want) == 0;
}

static int h1_start_in(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                       long long body_len)
{
    struct mx_conn *c = req->conn;
    struct h1 *h = h1_of(c);
    struct mx_buf b;
    int rc = 0;
    if (mx_conn_is_closed(c))
        return MX_ECLOSED;
    mx_buf_init(&b, 64 * 1024);
    rc |= mx_buf_append_str(&b, req->version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    rc |= mx_buf_append_int(&b, status);
    rc |= mx_buf_append(&b, " ", 1);
    rc |= mx_buf_append_str(&b, mx_http_reason(status));
    rc |= mx_buf_append(&b, "\r\n", 2);
    for (size_t i = 0; i < cnt; i++) {
        /* Framing headers are ours to set (RFC 9112 §6). */
        if (hdr_is(hdrs[i].name, "Content-Length") || hdr_is(hdrs[i].name, "Transfer-Encoding") ||
            hdr_is(hdrs[i].name, "Connection"))
            continue;
        rc |= mx_buf_append_str(&b, hdrs[i].name);
        rc |= mx_buf_append(&b, ": ", 2);
        rc |= mx_buf_append_str(&b, hdrs[i].value);
        rc |= mx_buf_append(&b, "\r\n", 2);
    }
    h->chunked = false;
    if (body_len >= 0) {
        if (status >= 200 && status != 204 && status != 304) {
            rc |= mx_buf_append_str(&b, "Content-Length: ");
            rc |= mx_buf_append_int(&b, body_len);
            rc |= mx_buf_append(&b, "\r\n", 2);
        }
    } else if (req->version >= 11) {
        h->chunked = true;
        rc |= mx_buf_append_str(&b, "Transfer-Encoding: chunked\r\n");
    } else {
        /* HTTP/1.0 without a length: the close delimits the body. */
        h->keep_alive = false;
    }
    if (!h->keep_alive)
        rc |= mx_buf_append_str(&b, "Connection: close\r\n");
    rc |= mx_buf_append_str(&b, "\r\n");
    if (rc) {
        mx_buf_clear(&b);
        return MX_ELIMIT;
    }
    rc = mx_conn_write(c, mx_buf_data(&b), mx_buf_len(&b));
    mx_buf_clear(&b);
    if (rc)
        return rc;
    mx_conn_flush_soon(c);
    return 0;
}

static int h1_write_in(struct mx_req *req, const void *p, size_t len)
{
    struct mx_conn *c = req->conn;
    struct h1 *h = h1_of(c);
    if (mx_conn_is_closed(c))
        return MX_ECLOSED;
    if (h->chunked) {
        char sz[32];
        int n = snprintf(sz, sizeof(sz), "%zx\r\n", len);
        if (mx_conn_write(c, sz, (size_t)n) || mx_conn_write(c, p, len) ||
            mx_conn_write(c, "\r\n", 2))
            return MX_ECLOSED;
    } else if (mx_conn_write(c, p, len)) {
        return MX_ECLOSED;
    }
    /* Write now once a lot is queued; otherwise with the rest of this turn's output. */
    if (mx_conn_out_len(c) > MX_CONN_OUT_LOW)
        mx_conn_flush(c);
    else
        mx_conn_flush_soon(c);
    if (mx_conn_is_closed(c))
        return MX_ECLOSED;
    if (mx_conn_out_len(c) > MX_CONN_OUT_HIGH) {
        h->draining_notify = true;
        return MX_EAGAIN;
    }
    return 0;
}

static void finish_request(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    mx_req_free(h->req);
    h->req = NULL;
    h->dispatched = false;
    h->draining_notify = false;
    if (!h->keep_alive) {
        mx_conn_close_after(c);
        return;
    }
    /* Not now: we are inside the handler's mx_req_end(), and the next
     * pipelined request must not re-enter it. */
    mx_conn_kick(c);
}

static void h1_end_in(struct mx_req *req)
{
    struct mx_conn *c = req->conn;
    struct h1 *h = h1_of(c);
    if (mx_conn_is_closed(c))
        return;
    if (h->chunked && mx_conn_write(c, "0\r\n\r\n", 5))
        return;
    mx_conn_flush_soon(c);
    finish_request(c);
}

static void h1_reset_in(struct mx_req *req)
{
    struct mx_conn *c = req->conn;
    if (mx_conn_is_closed(c))
        return;
    /* Drop unsent bytes too: a reset means the stream broke. */
    mx_buf_reset(&c->out);
    h1_of(c)->dispatched = false; /* no abort callback for a reset the handler asked for */
    mx_conn_close(c);
}

/* The handler's calls are bracketed so that a close inside them does not
 * call back into the handler (it learns of it from MX_ECLOSED). */
static int h1_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                    long long body_len)
{
    struct mx_conn *c = req->conn;
    c->in_call++;
    int rc = h1_start_in(req, status, hdrs, cnt, body_len);
    c->in_call--;
    return rc;
}

static int h1_write(struct mx_req *req, const void *p, size_t len)
{
    struct mx_conn *c = req->conn;
    c->in_call++;
    int rc = h1_write_in(req, p, len);
    c->in_call--;
    return rc;
}

static void h1_end(struct mx_req *req)
{
    struct mx_conn *c = req->conn;
    c->in_call++;
    h1_end_in(req);
    c->in_call--;
}

static void h1_reset(struct mx_req *req)
{
    struct mx_conn *c = req->conn;
    c->in_call++;
    h1_reset_in(req);
    c->in_call--;
}

static const struct mx_req_proto h1_req_proto = {h1_start, h1_write, h1_end, h1_reset};

/* ---- parser callbacks ---- */

static int on_message_begin(http_parser *p)
{
    struct mx_conn *c = p->data;
    struct h1 *h = h1_of(c);
    const struct mx_httpd_opts *o = mx_conn_opts(c);
    h->req = mx_req_new(&h1_req_proto, c, o->max_header, o->max_body);
    snprintf(h->req->peer, sizeof(h->req->peer), "%s", c->peer);
    h->in_message = true;
    /* The head and body must arrive within header_timeout (slowloris). */
    mx_conn_set_timer(c, o->header_timeout_s);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct mx_conn *c = p->data;
    struct h1 *h = h1_of(c);
    if (mx_buf_append(&h->req->url, at, len)) {
        h->error_status = 414;
        return -1;
    }
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct h1 *h = h1_of(p->data);
    if (mx_req_add_header_piece(h->req, true, at, len)) {
        h->error_status = 431;
        return -1;
    }
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct h1 *h = h1_of(p->data);
    if (mx_req_add_header_piece(h->req, false, at, len)) {
        h->error_status = 431;
        return -1;
    }
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct mx_conn *c = p->data;
    struct h1 *h = h1_of(c);
    struct mx_req *req = h->req;
    const struct mx_httpd_opts *o = mx_conn_opts(c);
    const char *m = http_method_str((enum http_method)p->method);
    snprintf(req->method, sizeof(req->method), "%s", m);
    req->version = p->http_major * 10 + p->http_minor;
    if (p->http_major != 1) {
        h->error_status = 505;
        return -1;
    }
    /* plain HTTP on the TLS port: the head is read, the answer is 400 */
    if (c->not_tls) {
        h->error_status = 400;
        return -1;
    }
    mx_req_finish_head(req);
    h->keep_alive = http_should_keep_alive(p) != 0;
    /* max_requests_per_connection: this answer says Connection: close. */
    if (o->max_requests_per_conn && h->requests + 1 >= o->max_requests_per_conn)
        h->keep_alive = false;
    /* Refuse an announced oversized body before reading it. */
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > o->max_body) {
        h->error_status = 413;
        return -1;
    }
    const struct mx_str *expect = mx_req_header(req, "Expect");
    if (expect && mx_str_caseeq_cstr(*expect, "100-continue") && req->version >= 11 &&
        mx_conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0)
        mx_conn_flush(c);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct h1 *h = h1_of(p->data);
    if (mx_buf_append(&h->req->body, at, len)) {
        h->error_status = 413;
        return -1;
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct mx_conn *c = p->data;
    struct h1 *h = h1_of(c);
    h->in_message = false;
    h->requests++;
    mx_conn_set_timer(c, 0);
    /* One request in flight: stop here until the response ends. */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings h1_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- input ---- */

/* Parse buffered input; dispatches at most one request. */
static void parse_input(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (mx_conn_is_closed(c) || h->dispatched || mx_buf_len(&c->in) == 0)
        return;
    size_t n =
        http_parser_execute(&h->parser, &h1_settings, mx_buf_data(&c->in), mx_buf_len(&c->in));
    enum http_errno e = HTTP_PARSER_ERRNO(&h->parser);
    if (e == HPE_PAUSED) {
        /* http-parser stops after the byte that completed the message */
        mx_buf_consume(&c->in, n);
        http_parser_pause(&h->parser, 0);
        h->dispatched = true;
        mx_conn_dispatch(c, h->req);
        return;
    }
    if (e != HPE_OK && c->not_tls) {
        char where[80], msg[128];
        mx_conn_local_name(c, where, sizeof(where));
        snprintf(msg, sizeof(msg), "plain HTTP sent to an HTTPS port: use https://%s%s", where,
                 where[0] ? "/" : "");
        simple_response(c, 400, msg);
        return;
    }
    if (e != HPE_OK) {
        int status = h->error_status ? h->error_status : 400;
        if (status == 413 || status == 431 || status == 414)
            mx_log_warn("http", "conn#%lu from %s: request over a size limit (%d)", c->id, c->peer,
                        status);
        else
            mx_log_debug("http", "conn#%lu bad request: %s", c->id, http_errno_name(e));
        simple_response(c, status, status == 400 ? "malformed HTTP request" : NULL);
        return;
    }
    mx_buf_consume(&c->in, n);
}

static void resume_parsing(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (mx_buf_len(&c->in))
        parse_input(c);
    if (!mx_conn_is_closed(c) && !h->dispatched) {
        if (!h->in_message)
            mx_conn_set_timer(c, mx_conn_opts(c)->idle_timeout_s);
        mx_conn_pause_read(c, false);
    }
}

/* ---- mx_conn_proto ---- */

static void h1_conn_start(struct mx_conn *c)
{
    struct h1 *h = mx_xcalloc(1, sizeof(*h));
    http_parser_init(&h->parser, HTTP_REQUEST);
    h->parser.data = c;
    c->proto_data = h;
    parse_input(c);
}

static void h1_conn_input(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (h->dispatched) {
        /* Pipelined bytes wait; keep reading only to notice a close. */
        if (mx_buf_len(&c->in) >= c->in.cap / 2)
            mx_conn_pause_read(c, true);
        return;
    }
    parse_input(c);
}

static void h1_conn_drained(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (h->draining_notify && h->req) {
        h->draining_notify = false;
        mx_req_notify_drain(h->req);
    }
}

static void h1_conn_kick(struct mx_conn *c)
{
    resume_parsing(c);
}

static void h1_conn_timeout(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (h->in_message && !h->dispatched) {
        mx_log_debug("http", "conn#%lu from %s: request not received in time", c->id, c->peer);
        simple_response(c, 408, "request not received in time");
        return;
    }
    mx_conn_close(c);
}

static void h1_conn_stop(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    h->keep_alive = false;
    if (!h->dispatched && !h->in_message)
        mx_conn_close(c);
}

static void h1_conn_closed(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (h->req == NULL || !h->dispatched)
        return;
    /* Inside a handler's own call the handler learns it from MX_ECLOSED;
     * calling back into it there would free what it is still using. */
    if (c->in_call)
        h->req->ended = true;
    else
        mx_req_notify_abort(h->req);
}

static void h1_conn_free(struct mx_conn *c)
{
    struct h1 *h = h1_of(c);
    if (h == NULL)
        return;
    mx_req_free(h->req);
    free(h);
    c->proto_data = NULL;
}

const struct mx_conn_proto mx_http1_proto = {
    .name = "http/1.1",
    .start = h1_conn_start,
    .input = h1_conn_input,
    .drained = h1_conn_drained,
    .kick = h1_conn_kick,
    .timeout = h1_conn_timeout,
    .stop = h1_conn_stop,
    .closed = h1_conn_closed,
    .free = h1_conn_free,
};
