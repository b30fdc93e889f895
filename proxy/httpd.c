/* SPDX-License-Identifier: MIT */
/*
 * Listening sockets, connections and HTTP/1.1 on the libev loop. Each
 * connection parses with http-parser, holds at most one request in flight
 * (pipelined bytes wait, parsed only after the response ends), and streams
 * the response from a capped output buffer with high/low watermarks. A
 * connection is never freed inside its own callbacks: close marks it and the
 * reaper (an ev_prepare) frees it before the loop blocks again.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <http_parser.h>

#include "alloc.h"
#include "err.h"
#include "httpd.h"
#include "log.h"
#include "num.h"
#include "req_int.h"

#define READ_CHUNK 16384
#define OUT_HIGH   (256 * 1024)
#define OUT_LOW    (64 * 1024)
#define OUT_CAP    (64 * 1024 * 1024)
#define MAX_LISTEN 4

struct listener {
    ev_io io;
    int fd;
    struct mx_httpd *srv;
};

struct conn {
    struct mx_httpd *srv;
    struct conn *next; /* live list or reap list */
    struct conn *prev;
    unsigned long id;
    int fd;
    char peer[64];
    ev_io rio;
    ev_io wio;
    ev_timer timer;
    ev_timer kick; /* resumes parsing on the next loop turn, outside the handler */
    http_parser parser;
    struct mx_buf in;   /* received, not yet parsed */
    struct mx_buf out;  /* to send */
    struct mx_req *req; /* request being parsed or handled; owned */
    size_t requests;
    int error_status; /* set by parser callbacks to answer a limit */
    bool in_message;  /* between message begin and complete */
    bool dispatched;  /* the current request went to the handler */
    bool chunked;     /* response uses chunked encoding */
    bool close_after; /* close once the output drained */
    bool keep_alive;
    bool closing;
    bool draining_notify; /* handler asked to be told when output drains */
    int in_call;          /* inside a response call made by the handler */
};

struct mx_httpd {
    struct ev_loop *loop;
    struct mx_httpd_opts opts;
    mx_httpd_request_cb on_request;
    void *data;
    struct listener listeners[MAX_LISTEN];
    size_t listener_cnt;
    struct conn *conns; /* live */
    struct conn *reap;  /* closed, freed by the reaper */
    size_t conn_cnt;
    unsigned long next_conn_id;
    ev_prepare reaper;
    http_parser_settings settings;
    bool limit_logged;
};

static const struct mx_req_proto h1_proto;

void mx_httpd_opts_default(struct mx_httpd_opts *o)
{
    o->max_header = 64 * 1024;
    o->max_body = 4 * 1024 * 1024;
    o->max_connections = 1024;
    o->header_timeout_s = 10.0;
    o->idle_timeout_s = 120.0;
    o->max_requests_per_conn = 0;
}

/* ---- connection lifecycle ---- */

static void conn_close(struct conn *c)
{
    struct mx_httpd *s = c->srv;
    if (c->closing)
        return;
    c->closing = true;
    ev_io_stop(s->loop, &c->rio);
    ev_io_stop(s->loop, &c->wio);
    ev_timer_stop(s->loop, &c->timer);
    ev_timer_stop(s->loop, &c->kick);
    if (c->req && c->dispatched) {
        /* Inside a handler's own call the handler learns it from MX_ECLOSED;
         * calling back into it there would free what it is still using. */
        if (c->in_call)
            c->req->ended = true;
        else
            mx_req_notify_abort(c->req);
    }
    close(c->fd);
    c->fd = -1;
    /* unlink from live list, push on reap list */
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = NULL;
    c->next = s->reap;
    s->reap = c;
    s->conn_cnt--;
}

static void conn_free(struct conn *c)
{
    mx_req_free(c->req);
    mx_buf_clear(&c->in);
    mx_buf_clear(&c->out);
    free(c);
}

static void reaper_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct mx_httpd *s = mx_container_of(w, struct mx_httpd, reaper);
    (void)loop;
    (void)revents;
    while (s->reap) {
        struct conn *c = s->reap;
        s->reap = c->next;
        conn_free(c);
    }
}

/* ---- output ---- */

static void conn_flush(struct conn *c)
{
    while (mx_buf_len(&c->out)) {
        /* MSG_NOSIGNAL: a peer that left must not kill us with SIGPIPE. */
        ssize_t n = send(c->fd, mx_buf_data(&c->out), mx_buf_len(&c->out), MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(c->fd, mx_buf_data(&c->out), mx_buf_len(&c->out));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            mx_log_debug("http", "conn#%lu write: %s", c->id, strerror(errno));
            conn_close(c);
            return;
        }
        mx_buf_consume(&c->out, (size_t)n);
    }
    if (mx_buf_len(&c->out))
        ev_io_start(c->srv->loop, &c->wio);
    else
        ev_io_stop(c->srv->loop, &c->wio);
}

static void resume_parsing(struct conn *c);

static void after_flush(struct conn *c)
{
    if (c->closing)
        return;
    if (mx_buf_len(&c->out) == 0 && c->close_after) {
        conn_close(c);
        return;
    }
    if (c->draining_notify && mx_buf_len(&c->out) <= OUT_LOW && c->req) {
        c->draining_notify = false;
        mx_req_notify_drain(c->req);
    }
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = mx_container_of(w, struct conn, wio);
    (void)loop;
    (void)revents;
    conn_flush(c);
    after_flush(c);
}

static int out_append(struct conn *c, const void *p, size_t len)
{
    if (mx_buf_append(&c->out, p, len)) {
        /* A handler that ignores MX_EAGAIN would grow us without bound. */
        mx_log_warn("http", "conn#%lu output over %d bytes; closing", c->id, OUT_CAP);
        conn_close(c);
        return MX_ECLOSED;
    }
    return 0;
}

static void simple_response(struct conn *c, int status, const char *msg)
{
    char body[256];
    char head[512];
    int bl = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", msg);
    int hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\nConnection: close\r\n\r\n",
                      status, mx_http_reason(status), bl);
    out_append(c, head, (size_t)hl);
    out_append(c, body, (size_t)bl);
    c->close_after = true;
    ev_io_stop(c->srv->loop, &c->rio);
    ev_timer_stop(c->srv->loop, &c->timer);
    conn_flush(c);
    after_flush(c);
}

/* ---- mx_req_proto for HTTP/1.1 ---- */

static bool hdr_is(const char *name, const char *want)
{
    return strcasecmp(name, want) == 0;
}

static int h1_start_in(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                       long long body_len)
{
    struct conn *c = req->conn;
    struct mx_buf h;
    int rc = 0;
    if (c == NULL || c->closing)
        return MX_ECLOSED;
    mx_buf_init(&h, 64 * 1024);
    rc |= mx_buf_printf(&h, "HTTP/1.%d %d %s\r\n", req->version == 10 ? 0 : 1, status,
                        mx_http_reason(status));
    for (size_t i = 0; i < cnt; i++) {
        /* Framing headers are ours to set (RFC 9112 §6). */
        if (hdr_is(hdrs[i].name, "Content-Length") || hdr_is(hdrs[i].name, "Transfer-Encoding") ||
            hdr_is(hdrs[i].name, "Connection"))
            continue;
        rc |= mx_buf_printf(&h, "%s: %s\r\n", hdrs[i].name, hdrs[i].value);
    }
    c->chunked = false;
    if (body_len >= 0) {
        if (status >= 200 && status != 204 && status != 304)
            rc |= mx_buf_printf(&h, "Content-Length: %lld\r\n", body_len);
    } else if (req->version >= 11) {
        c->chunked = true;
        rc |= mx_buf_append_str(&h, "Transfer-Encoding: chunked\r\n");
    } else {
        /* HTTP/1.0 without a length: the close delimits the body. */
        c->keep_alive = false;
    }
    if (!c->keep_alive)
        rc |= mx_buf_append_str(&h, "Connection: close\r\n");
    rc |= mx_buf_append_str(&h, "\r\n");
    if (rc) {
        mx_buf_clear(&h);
        return MX_ELIMIT;
    }
    rc = out_append(c, mx_buf_data(&h), mx_buf_len(&h));
    mx_buf_clear(&h);
    if (rc)
        return rc;
    conn_flush(c);
    return c->closing ? MX_ECLOSED : 0;
}

static int h1_write_in(struct mx_req *req, const void *p, size_t len)
{
    struct conn *c = req->conn;
    if (c == NULL || c->closing)
        return MX_ECLOSED;
    if (c->chunked) {
        char sz[32];
        int n = snprintf(sz, sizeof(sz), "%zx\r\n", len);
        if (out_append(c, sz, (size_t)n) || out_append(c, p, len) || out_append(c, "\r\n", 2))
            return MX_ECLOSED;
    } else if (out_append(c, p, len)) {
        return MX_ECLOSED;
    }
    conn_flush(c);
    if (c->closing)
        return MX_ECLOSED;
    if (mx_buf_len(&c->out) > OUT_HIGH) {
        c->draining_notify = true;
        return MX_EAGAIN;
    }
    return 0;
}

static void finish_request(struct conn *c)
{
    mx_req_free(c->req);
    c->req = NULL;
    c->dispatched = false;
    c->draining_notify = false;
    if (!c->keep_alive) {
        c->close_after = true;
        after_flush(c);
        return;
    }
    /* Not now: we are inside the handler's mx_req_end(), and the next
     * pipelined request must not re-enter it. */
    ev_timer_start(c->srv->loop, &c->kick);
}

static void h1_end_in(struct mx_req *req)
{
    struct conn *c = req->conn;
    if (c == NULL || c->closing)
        return;
    if (c->chunked && out_append(c, "0\r\n\r\n", 5))
        return;
    conn_flush(c);
    if (c->closing)
        return;
    finish_request(c);
}

static void h1_reset_in(struct mx_req *req)
{
    struct conn *c = req->conn;
    if (c == NULL || c->closing)
        return;
    /* Drop unsent bytes too: a reset means the stream broke. */
    mx_buf_reset(&c->out);
    c->dispatched = false; /* no abort callback for a reset the handler asked for */
    conn_close(c);
}

/* The handler's calls are bracketed so conn_close knows not to call back. */
static int h1_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                    long long body_len)
{
    struct conn *c = req->conn;
    c->in_call++;
    int rc = h1_start_in(req, status, hdrs, cnt, body_len);
    c->in_call--;
    return rc;
}

static int h1_write(struct mx_req *req, const void *p, size_t len)
{
    struct conn *c = req->conn;
    c->in_call++;
    int rc = h1_write_in(req, p, len);
    c->in_call--;
    return rc;
}

static void h1_end(struct mx_req *req)
{
    struct conn *c = req->conn;
    c->in_call++;
    h1_end_in(req);
    c->in_call--;
}

static void h1_reset(struct mx_req *req)
{
    struct conn *c = req->conn;
    c->in_call++;
    h1_reset_in(req);
    c->in_call--;
}

static const struct mx_req_proto h1_proto = {h1_start, h1_write, h1_end, h1_reset};

/* ---- parser callbacks ---- */

static int on_message_begin(http_parser *p)
{
    struct conn *c = p->data;
    c->req = mx_req_new(&h1_proto, c, c->srv->opts.max_header, c->srv->opts.max_body);
    snprintf(c->req->peer, sizeof(c->req->peer), "%s", c->peer);
    c->in_message = true;
    /* The head and body must arrive within header_timeout (slowloris). */
    ev_timer_stop(c->srv->loop, &c->timer);
    ev_timer_set(&c->timer, c->srv->opts.header_timeout_s, 0.0);
    ev_timer_start(c->srv->loop, &c->timer);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (mx_buf_append(&c->req->url, at, len)) {
        c->error_status = 414;
        return -1;
    }
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (mx_req_add_header_piece(c->req, true, at, len)) {
        c->error_status = 431;
        return -1;
    }
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (mx_req_add_header_piece(c->req, false, at, len)) {
        c->error_status = 431;
        return -1;
    }
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct conn *c = p->data;
    struct mx_req *req = c->req;
    const char *m = http_method_str((enum http_method)p->method);
    snprintf(req->method, sizeof(req->method), "%s", m);
    req->version = p->http_major * 10 + p->http_minor;
    if (p->http_major != 1) {
        c->error_status = 505;
        return -1;
    }
    mx_req_finish_head(req);
    c->keep_alive = http_should_keep_alive(p) != 0;
    if (c->srv->opts.max_requests_per_conn && c->requests + 1 >= c->srv->opts.max_requests_per_conn)
        c->keep_alive = false;
    /* Refuse an announced oversized body before reading it. */
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > c->srv->opts.max_body) {
        c->error_status = 413;
        return -1;
    }
    const struct mx_str *expect = mx_req_header(req, "Expect");
    if (expect && mx_str_caseeq_cstr(*expect, "100-continue") && req->version >= 11 &&
        out_append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0)
        conn_flush(c);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (mx_buf_append(&c->req->body, at, len)) {
        c->error_status = 413;
        return -1;
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct conn *c = p->data;
    c->in_message = false;
    c->requests++;
    ev_timer_stop(c->srv->loop, &c->timer);
    /* One request in flight: stop here until the response ends. */
    http_parser_pause(p, 1);
    return 0;
}

/* ---- input ---- */

static void dispatch(struct conn *c)
{
    c->dispatched = true;
    c->srv->on_request(c->req, c->srv->data);
}

static void arm_idle(struct conn *c)
{
    ev_timer_stop(c->srv->loop, &c->timer);
    ev_timer_set(&c->timer, c->srv->opts.idle_timeout_s, 0.0);
    ev_timer_start(c->srv->loop, &c->timer);
}

/* Parse buffered input; dispatches at most one request. */
static void parse_input(struct conn *c)
{
    if (c->closing || c->dispatched || mx_buf_len(&c->in) == 0)
        return;
    size_t n =
        http_parser_execute(&c->parser, &c->srv->settings, mx_buf_data(&c->in), mx_buf_len(&c->in));
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    if (e == HPE_PAUSED) {
        /* http-parser stops after the byte that completed the message */
        mx_buf_consume(&c->in, n);
        http_parser_pause(&c->parser, 0);
        dispatch(c);
        return;
    }
    if (e != HPE_OK) {
        int status = c->error_status ? c->error_status : 400;
        if (status == 413 || status == 431 || status == 414) {
            if (!c->srv->limit_logged)
                mx_log_warn("http", "conn#%lu from %s: request over a size limit (%d)", c->id,
                            c->peer, status);
        } else {
            mx_log_debug("http", "conn#%lu bad request: %s", c->id, http_errno_name(e));
        }
        simple_response(c, status,
                        status == 400 ? "malformed HTTP request" : mx_http_reason(status));
        return;
    }
    mx_buf_consume(&c->in, n);
}

static void resume_parsing(struct conn *c)
{
    if (mx_buf_len(&c->in))
        parse_input(c);
    if (!c->closing && !c->dispatched) {
        if (!c->in_message)
            arm_idle(c);
        ev_io_start(c->srv->loop, &c->rio);
    }
}

static void read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = mx_container_of(w, struct conn, rio);
    char buf[READ_CHUNK];
    (void)loop;
    (void)revents;
    ssize_t n = read(c->fd, buf, sizeof(buf));
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        conn_close(c);
        return;
    }
    if (n == 0) {
        conn_close(c);
        return;
    }
    if (mx_buf_append(&c->in, buf, (size_t)n)) {
        /* Only reachable while a request is being handled: stop reading. */
        ev_io_stop(c->srv->loop, &c->rio);
        return;
    }
    if (c->dispatched) {
        /* Pipelined bytes wait; keep reading only to notice a close. */
        if (mx_buf_len(&c->in) >= c->in.cap / 2)
            ev_io_stop(c->srv->loop, &c->rio);
        return;
    }
    parse_input(c);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = mx_container_of(w, struct conn, kick);
    (void)loop;
    (void)revents;
    resume_parsing(c);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = mx_container_of(w, struct conn, timer);
    (void)loop;
    (void)revents;
    if (c->in_message && !c->dispatched) {
        mx_log_debug("http", "conn#%lu from %s: request not received in time", c->id, c->peer);
        simple_response(c, 408, "request not received in time");
        return;
    }
    conn_close(c);
}

/* ---- accept ---- */

void mx_httpd_adopt(struct mx_httpd *s, int fd, const char *peer)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct conn *c = mx_xcalloc(1, sizeof(*c));
    c->srv = s;
    c->fd = fd;
    c->id = ++s->next_conn_id;
    snprintf(c->peer, sizeof(c->peer), "%s", peer ? peer : "");
    mx_buf_init(&c->in, s->opts.max_header + READ_CHUNK);
    mx_buf_init(&c->out, OUT_CAP);
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    ev_io_init(&c->rio, read_cb, fd, EV_READ);
    ev_io_init(&c->wio, write_cb, fd, EV_WRITE);
    ev_init(&c->timer, timer_cb);
    ev_timer_init(&c->kick, kick_cb, 0.0, 0.0);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->conn_cnt++;
    /* Until the first byte, the header timeout applies (slowloris). */
    ev_timer_set(&c->timer, s->opts.header_timeout_s, 0.0);
    ev_timer_start(s->loop, &c->timer);
    ev_io_start(s->loop, &c->rio);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct listener *l = mx_container_of(w, struct listener, io);
    struct mx_httpd *s = l->srv;
    (void)loop;
    (void)revents;
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                mx_log_warn("http", "accept: %s", strerror(errno));
            return;
        }
        if (s->conn_cnt >= s->opts.max_connections) {
            if (!s->limit_logged) {
                mx_log_warn("http", "connection limit (%zu) reached; refusing",
                            s->opts.max_connections);
                s->limit_logged = true;
            }
            close(fd);
            continue;
        }
        char peer[64] = "";
        if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, peer, sizeof(peer));
        else if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, peer, sizeof(peer));
        mx_httpd_adopt(s, fd, peer);
    }
}

/* ---- server ---- */

struct mx_httpd *mx_httpd_new(struct ev_loop *loop, const struct mx_httpd_opts *opts,
                              mx_httpd_request_cb on_request, void *data)
{
    struct mx_httpd *s = mx_xcalloc(1, sizeof(*s));
    s->loop = loop;
    if (opts)
        s->opts = *opts;
    else
        mx_httpd_opts_default(&s->opts);
    s->on_request = on_request;
    s->data = data;
    s->settings.on_message_begin = on_message_begin;
    s->settings.on_url = on_url;
    s->settings.on_header_field = on_header_field;
    s->settings.on_header_value = on_header_value;
    s->settings.on_headers_complete = on_headers_complete;
    s->settings.on_body = on_body;
    s->settings.on_message_complete = on_message_complete;
    ev_prepare_init(&s->reaper, reaper_cb);
    ev_prepare_start(loop, &s->reaper);
    ev_unref(loop); /* the reaper alone must not keep the loop alive */
    return s;
}

int mx_httpd_listen(struct mx_httpd *s, const char *address, int *port, char *err, size_t errcap)
{
    char host[256];
    const char *colon = strrchr(address, ':');
    const char *h = address;
    size_t hl;
    int64_t pnum;
    if (s->listener_cnt == MAX_LISTEN || colon == NULL) {
        snprintf(err, errcap, "address '%s' is not host:port", address);
        return MX_EINVAL;
    }
    hl = (size_t)(colon - address);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= sizeof(host) ||
        mx_num_parse(colon + 1, strlen(colon + 1), 0, 65535, &pnum)) {
        snprintf(err, errcap, "address '%s' is not host:port", address);
        return MX_EINVAL;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';

    struct addrinfo hints = {0}, *ai = NULL;
    char pstr[16];
    snprintf(pstr, sizeof(pstr), "%d", (int)pnum);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, pstr, &hints, &ai);
    if (gai != 0 || ai == NULL) {
        snprintf(err, errcap, "cannot resolve '%s': %s", host, gai_strerror(gai));
        return MX_EINVAL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 511) != 0) {
        snprintf(err, errcap, "cannot listen on %s: %s", address, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return MX_EIO;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    if (port)
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    struct listener *l = &s->listeners[s->listener_cnt++];
    l->fd = fd;
    l->srv = s;
    ev_io_init(&l->io, accept_cb, fd, EV_READ);
    ev_io_start(s->loop, &l->io);
    return 0;
}

void mx_httpd_stop_accepting(struct mx_httpd *s)
{
    for (size_t i = 0; i < s->listener_cnt; i++) {
        if (s->listeners[i].fd < 0)
            continue;
        ev_io_stop(s->loop, &s->listeners[i].io);
        close(s->listeners[i].fd);
        s->listeners[i].fd = -1;
    }
    /* Idle keep-alive connections go now; busy ones close after their response. */
    for (struct conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        c->keep_alive = false;
        if (!c->dispatched && !c->in_message)
            conn_close(c);
    }
}

size_t mx_httpd_conn_cnt(const struct mx_httpd *s)
{
    return s->conn_cnt;
}

void mx_httpd_free(struct mx_httpd *s)
{
    if (s == NULL)
        return;
    mx_httpd_stop_accepting(s);
    while (s->conns)
        conn_close(s->conns);
    reaper_cb(s->loop, &s->reaper, 0);
    ev_ref(s->loop);
    ev_prepare_stop(s->loop, &s->reaper);
    free(s);
}
