/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 front end on a connection (conn.h) with nghttp2 doing the
 * protocol: received bytes go to nghttp2_session_mem_recv(), frames leave
 * through nghttp2_session_send() into the connection's output, whose send
 * callback answers WOULDBLOCK above the output watermark. Each request
 * stream is an mx_req; its response body is a data provider that defers
 * while the handler has produced nothing and is resumed by mx_req_write().
 *
 * Handlers never run inside nghttp2 callbacks: the callbacks only record
 * (stream complete, closed, drained) and h2_run() acts on it afterwards,
 * dispatching requests, telling handlers of resets and freeing streams.
 * Handler calls (start/write/end/reset) only queue and ask for a kick, so
 * the frames of many streams leave in one send per loop turn.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "alloc.h"
#include "httpd_int.h"
#include "err.h"
#include "http2.h"
#include "log.h"
#include "req_int.h"

#define RUN_ROUNDS       8
#define SEND_ROUNDS      64
#define HDR_SCRATCH      8192 /* lowercased response header names */
#define MAX_RESP_HEADERS 64

struct h2;

struct h2_stream {
    struct h2 *h;
    struct h2_stream *next;
    struct h2_stream *prev;
    int32_t id;
    struct mx_req *req; /* owned */
    struct mx_buf out;  /* response body bytes not yet framed */
    ev_timer timer;     /* the request must arrive within header_timeout */
    int refuse_status;  /* answered by us, never dispatched */
    bool has_authority;
    bool head_done;  /* the request head was complete */
    bool complete;   /* END_STREAM received: the request is whole */
    bool dispatched; /* the handler has it */
    bool eof;        /* the response body is complete */
    bool deferred;   /* the data provider waits for bytes */
    bool want_drain; /* mx_req_write() returned MX_EAGAIN */
    bool drain_due;  /* on_drain to be called from h2_run() */
    bool closed;     /* nghttp2 closed the stream (or the connection went) */
};

struct h2 {
    struct mx_conn *c;
    nghttp2_session *ngh;
    struct h2_stream *head; /* every stream not yet freed, oldest first */
    struct h2_stream *tail;
    size_t open_cnt;   /* streams not closed */
    size_t body_bytes; /* request body bytes held by streams */
    size_t requests;   /* request streams the peer opened */
    bool work;         /* h2_run() has something to do */
    bool blocked;      /* the send callback answered WOULDBLOCK */
    bool goaway;       /* we sent (or queued) GOAWAY */
    bool failed;       /* the peer broke the protocol: flushing, then closing */
    bool idle_armed;
    /* resets of streams still in progress here (HTTP/2 rapid reset,
     * CVE-2023-44487): a token bucket, see on_frame_recv */
    double reset_tokens;
    ev_tstamp reset_at;
};

static const struct mx_req_proto h2_req_proto;
static void h2_run(struct h2 *h);

static struct h2 *h2_of(struct mx_conn *c)
{
    return c->proto_data;
}

static struct h2_stream *stream_get(struct h2 *h, int32_t id)
{
    return nghttp2_session_get_stream_user_data(h->ngh, id);
}

static void stream_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

static struct h2_stream *stream_new(struct h2 *h, int32_t id)
{
    struct mx_conn *c = h->c;
    const struct mx_httpd_opts *o = mx_conn_opts(c);
    struct h2_stream *s = mx_xcalloc(1, sizeof(*s));
    s->h = h;
    s->id = id;
    s->req = mx_req_new(&h2_req_proto, s, o->max_header, o->max_body);
    s->req->version = 20;
    snprintf(s->req->peer, sizeof(s->req->peer), "%s", c->peer);
    mx_buf_init(&s->out, MX_H2_STREAM_OUT_CAP);
    ev_timer_init(&s->timer, stream_timer_cb, o->header_timeout_s, 0.0);
    ev_timer_start(c->loop, &s->timer);
    s->prev = h->tail;
    if (h->tail)
        h->tail->next = s;
    else
        h->head = s;
    h->tail = s;
    h->open_cnt++;
    if (h->idle_armed) {
        h->idle_armed = false;
        mx_conn_set_timer(c, 0);
    }
    return s;
}

static void stream_free(struct h2_stream *s)
{
    struct h2 *h = s->h;
    ev_timer_stop(h->c->loop, &s->timer);
    if (s->prev)
        s->prev->next = s->next;
    else
        h->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        h->tail = s->prev;
    h->body_bytes -= mx_buf_len(&s->req->body);
    mx_req_free(s->req);
    mx_buf_clear(&s->out);
    free(s);
}

/* ---- response submission ---- */

static ssize_t data_read_cb(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
    struct h2_stream *s = source->ptr;
    size_t n = mx_buf_len(&s->out);
    (void)session;
    (void)stream_id;
    (void)user_data;
    if (n > length)
        n = length;
    memcpy(buf, mx_buf_data(&s->out), n);
    mx_buf_consume(&s->out, n);
    if (s->want_drain && mx_buf_len(&s->out) <= MX_H2_STREAM_OUT_LOW) {
        s->want_drain = false;
        s->drain_due = true;
        s->h->work = true;
    }
    if (mx_buf_len(&s->out) == 0) {
        if (s->eof) {
            *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        } else if (n == 0) {
            s->deferred = true;
            return NGHTTP2_ERR_DEFERRED;
        }
    }
    return (ssize_t)n;
}

static bool skip_response_header(const char *name)
{
    /* RFC 9113 §8.2.2: connection-specific fields are not used in HTTP/2;
     * Content-Length is ours to set from the body length. */
    static const char *const skip[] = {"connection", "keep-alive",        "proxy-connection",
                                       "upgrade",    "transfer-encoding", "content-length"};
    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++) {
        if (strcasecmp(name, skip[i]) == 0)
            return true;
    }
    return false;
}

static nghttp2_nv make_nv(const char *name, size_t nlen, const char *value, size_t vlen)
{
    nghttp2_nv nv;
    nv.name = (uint8_t *)(uintptr_t)name;
    nv.namelen = nlen;
    nv.value = (uint8_t *)(uintptr_t)value;
    nv.valuelen = vlen;
    nv.flags = NGHTTP2_NV_FLAG_NONE;
    return nv;
}

/*
 * Submit the response head; with |has_body| a data provider follows.
 * Returns 0 or MX_ECLOSED (nghttp2 no longer knows the stream) or MX_ELIMIT.
 */
static int submit_head(struct h2_stream *s, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                       long long body_len, bool has_body)
{
    nghttp2_nv nv[MAX_RESP_HEADERS + 2];
    char scratch[HDR_SCRATCH];
    char st[8], cl[24];
    size_t n = 0, used = 0;

    snprintf(st, sizeof(st), "%03d", status);
    nv[n++] = make_nv(":status", 7, st, strlen(st));
    for (size_t i = 0; i < cnt && n < MAX_RESP_HEADERS; i++) {
        size_t nl = strlen(hdrs[i].name);
        if (skip_response_header(hdrs[i].name))
            continue;
        if (nl > sizeof(scratch) - used)
            return MX_ELIMIT;
        /* RFC 9113 §8.2: field names are lowercase on the wire. */
        for (size_t k = 0; k < nl; k++) {
            char ch = hdrs[i].name[k];
            scratch[used + k] = (char)(ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch);
        }
        nv[n++] = make_nv(scratch + used, nl, hdrs[i].value, strlen(hdrs[i].value));
        used += nl;
    }
    if (body_len >= 0 && has_body) {
        snprintf(cl, sizeof(cl), "%lld", body_len);
        nv[n++] = make_nv("content-length", 14, cl, strlen(cl));
    }
    nghttp2_data_provider prd;
    prd.source.ptr = s;
    prd.read_callback = data_read_cb;
    /* nghttp2 copies the names and values before returning. */
    int rv = nghttp2_submit_response(s->h->ngh, s->id, nv, n, has_body ? &prd : NULL);
    if (rv != 0) {
        mx_log_debug("http2", "conn#%lu stream %d: cannot respond: %s", s->h->c->id, s->id,
                     nghttp2_strerror(rv));
        return MX_ECLOSED;
    }
    return 0;
}

/* Answer a request ourselves (limits, timeouts); the handler never sees it. */
static void refuse(struct h2_stream *s, int status, const char *msg)
{
    char body[512];
    if (s->refuse_status || s->dispatched || s->closed)
        return;
    s->refuse_status = status;
    ev_timer_stop(s->h->c->loop, &s->timer);
    size_t bl = mx_conn_refusal_body(s->h->c, status, msg, body, sizeof(body));
    mx_buf_reset(&s->out);
    mx_buf_append(&s->out, body, bl);
    s->eof = true;
    s->req->started = true;
    s->req->ended = true;
    static const struct mx_hdr_out ct[] = {{"Content-Type", "application/json"}};
    if (submit_head(s, status, ct, 1, (long long)bl, true) != 0)
        nghttp2_submit_rst_stream(s->h->ngh, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    s->h->work = true;
    mx_conn_kick(s->h->c);
}

static void stream_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct h2_stream *s = mx_container_of(w, struct h2_stream, timer);
    (void)loop;
    (void)revents;
    if (s->complete || s->closed)
        return;
    mx_log_debug("http2", "conn#%lu stream %d: request not received in time", s->h->c->id, s->id);
    refuse(s, 408, "request not received in time");
}

/* ---- mx_req_proto for HTTP/2 ---- */

/* The stream can no longer carry a response: the handler learns it from
 * MX_ECLOSED, and on_abort must not follow. */
static int gone(struct h2_stream *s)
{
    s->req->ended = true;
    return MX_ECLOSED;
}

static bool usable(const struct h2_stream *s)
{
    return !s->closed && !mx_conn_is_closed(s->h->c);
}

static void want_flush(struct h2_stream *s)
{
    mx_conn_kick(s->h->c);
}

static int h2_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                    long long body_len)
{
    struct h2_stream *s = req->conn;
    if (!usable(s))
        return gone(s);
    /* RFC 9110 §6.4.1: no content in responses to HEAD, 1xx, 204 and 304. */
    bool has_body = status >= 200 && status != 204 && status != 304 &&
                    !mx_str_eq(mx_req_method(req), MX_STR_LIT("HEAD"));
    if (!has_body)
        s->eof = true;
    int rc = submit_head(s, status, hdrs, cnt, body_len, has_body);
    if (rc == MX_ECLOSED)
        return gone(s);
    if (rc)
        return rc;
    want_flush(s);
    return 0;
}

static int h2_write(struct mx_req *req, const void *p, size_t len)
{
    struct h2_stream *s = req->conn;
    if (!usable(s))
        return gone(s);
    if (s->eof)
        return 0; /* a body the response may not have (HEAD, 204, 304) */
    if (mx_buf_append(&s->out, p, len)) {
        mx_log_warn("http2", "conn#%lu stream %d: response over %d queued bytes; resetting",
                    s->h->c->id, s->id, MX_H2_STREAM_OUT_CAP);
        nghttp2_submit_rst_stream(s->h->ngh, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
        want_flush(s);
        return gone(s);
    }
    if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->h->ngh, s->id);
    }
    want_flush(s);
    if (mx_buf_len(&s->out) > MX_H2_STREAM_OUT_HIGH) {
        s->want_drain = true;
        return MX_EAGAIN;
    }
    return 0;
}

static void h2_end(struct mx_req *req)
{
    struct h2_stream *s = req->conn;
    if (!usable(s))
        return;
    s->eof = true;
    if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->h->ngh, s->id);
    }
    want_flush(s);
}

static void h2_reset(struct mx_req *req)
{
    struct h2_stream *s = req->conn;
    if (!usable(s))
        return;
    nghttp2_submit_rst_stream(s->h->ngh, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    want_flush(s);
}

static const struct mx_req_proto h2_req_proto = {h2_start, h2_write, h2_end, h2_reset};

/* ---- nghttp2 callbacks: record, never call handlers ---- */

static ssize_t send_cb(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
                       void *user_data)
{
    struct h2 *h = user_data;
    (void)session;
    (void)flags;
    if (mx_conn_out_len(h->c) >= MX_CONN_OUT_HIGH) {
        h->blocked = true;
        h->c->out_high = true;
        return NGHTTP2_ERR_WOULDBLOCK;
    }
    if (mx_conn_write(h->c, data, length))
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return (ssize_t)length;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2 *h = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct h2_stream *s = stream_new(h, frame->hd.stream_id);
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, s);
    /* max_requests_per_connection: this stream is the last one served; a
     * client that sent more retries them on a new connection (RFC 9113 §6.8). */
    size_t max = mx_conn_opts(h->c)->max_requests_per_conn;
    if (max && ++h->requests >= max && !h->goaway) {
        mx_log_debug("http2", "conn#%lu: %zu requests; GOAWAY after stream %d", h->c->id,
                     h->requests, frame->hd.stream_id);
        h->goaway = true;
        nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR,
                              NULL, 0);
    }
    return 0;
}

static bool name_is(const uint8_t *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    struct h2 *h = user_data;
    struct h2_stream *s = stream_get(h, frame->hd.stream_id);
    (void)session;
    (void)flags;
    /* Trailers (a second HEADERS) carry nothing the request model keeps. */
    if (s == NULL || s->refuse_status || s->head_done)
        return 0;
    struct mx_req *req = s->req;
    const char *v = (const char *)value;
    int rc = 0;
    /* nghttp2 has already checked the RFC 9113 §8.3 rules: lowercase names,
     * required and unique pseudo-headers, pseudo-headers first. */
    if (namelen && name[0] == ':') {
        if (name_is(name, namelen, ":method")) {
            if (valuelen >= sizeof(req->method)) {
                refuse(s, 501, "method not implemented");
                return 0;
            }
            memcpy(req->method, v, valuelen);
            req->method[valuelen] = '\0';
        } else if (name_is(name, namelen, ":path")) {
            if (mx_buf_append(&req->url, v, valuelen)) {
                refuse(s, 414, NULL);
                return 0;
            }
        } else if (name_is(name, namelen, ":authority")) {
            /* RFC 9113 §8.3.1: :authority stands for Host. */
            s->has_authority = true;
            rc = mx_req_add_header_piece(req, true, "host", 4);
            if (rc == 0)
                rc = mx_req_add_header_piece(req, false, v, valuelen);
        }
    } else if (!(s->has_authority && name_is(name, namelen, "host"))) {
        rc = mx_req_add_header_piece(req, true, (const char *)name, namelen);
        if (rc == 0)
            rc = mx_req_add_header_piece(req, false, v, valuelen);
    }
    if (rc)
        refuse(s, 431, NULL);
    return 0;
}

static void head_complete(struct h2 *h, struct h2_stream *s)
{
    const struct mx_httpd_opts *o = mx_conn_opts(h->c);
    s->head_done = true;
    if (s->refuse_status)
        return;
    mx_req_finish_head(s->req);
    struct mx_str m = mx_req_method(s->req);
    struct mx_str path = mx_req_path(s->req);
    if (mx_str_eq(m, MX_STR_LIT("CONNECT"))) {
        refuse(s, 405, "CONNECT is not supported");
        return;
    }
    if (path.len == 0 || path.p[0] != '/') {
        refuse(s, 400, "malformed :path");
        return;
    }
    const struct mx_str *cl = mx_req_header(s->req, "content-length");
    if (cl && cl->len > 0) {
        int64_t v = 0;
        for (size_t i = 0; i < cl->len && v <= (int64_t)o->max_body; i++)
            v = v * 10 + (cl->p[i] - '0'); /* digits only: nghttp2 checked it */
        if (v > (int64_t)o->max_body) {
            mx_log_warn("http2", "conn#%lu from %s: request over a size limit (413)", h->c->id,
                        h->c->peer);
            refuse(s, 413, NULL);
        }
    }
}

static void request_complete(struct h2 *h, struct h2_stream *s)
{
    s->complete = true;
    ev_timer_stop(h->c->loop, &s->timer);
    h->work = true;
}

/* One more reset of a stream in progress; over the limit, the connection
 * ends with GOAWAY(ENHANCE_YOUR_CALM). */
static void reset_count(struct h2 *h)
{
    ev_tstamp now = ev_now(h->c->loop);
    h->reset_tokens += (now - h->reset_at) * MX_H2_RESET_RATE;
    if (h->reset_tokens > MX_H2_RESET_BURST)
        h->reset_tokens = MX_H2_RESET_BURST;
    h->reset_at = now;
    if (h->reset_tokens >= 1.0) {
        h->reset_tokens -= 1.0;
        return;
    }
    mx_log_warn("http2", "conn#%lu from %s: too many streams reset while in progress; closing",
                h->c->id, h->c->peer);
    nghttp2_session_terminate_session(h->ngh, NGHTTP2_ENHANCE_YOUR_CALM);
    h->goaway = true;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2 *h = user_data;
    struct h2_stream *s;
    (void)session;
    switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
        s = stream_get(h, frame->hd.stream_id);
        if (s == NULL)
            return 0;
        if (!s->head_done)
            head_complete(h, s);
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
            request_complete(h, s);
        break;
    case NGHTTP2_DATA:
        s = stream_get(h, frame->hd.stream_id);
        if (s && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
            request_complete(h, s);
        break;
    case NGHTTP2_RST_STREAM:
        /* Only a reset of a stream that is still in progress here costs
         * work (the request was started and is cancelled): count those. A
         * client that resets each stream after reading its whole answer, as
         * libcurl does, resets streams that are closed already. */
        s = stream_get(h, frame->hd.stream_id);
        if (s && !s->closed && !h->goaway)
            reset_count(h);
        break;
    default:
        break;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
    struct h2 *h = user_data;
    struct h2_stream *s = stream_get(h, stream_id);
    (void)session;
    (void)flags;
    if (s == NULL || s->refuse_status || s->complete)
        return 0;
    if (h->body_bytes + len > MX_H2_CONN_BODY_CAP) {
        refuse(s, 503, "too much request data in flight on this connection");
        return 0;
    }
    if (mx_buf_append(&s->req->body, data, len)) {
        mx_log_warn("http2", "conn#%lu from %s: request over a size limit (413)", h->c->id,
                    h->c->peer);
        refuse(s, 413, NULL);
        return 0;
    }
    h->body_bytes += len;
    return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2 *h = user_data;
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct h2_stream *s = stream_get(h, frame->hd.stream_id);
    /* RFC 9113 §8.1: a response sent before the request ended may ask the
     * client to stop sending with RST_STREAM(NO_ERROR). */
    if (s && !s->complete)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    struct h2 *h = user_data;
    struct h2_stream *s = stream_get(h, stream_id);
    (void)session;
    if (s == NULL || s->closed)
        return 0;
    if (error_code != NGHTTP2_NO_ERROR)
        mx_log_debug("http2", "conn#%lu stream %d closed: %s", h->c->id, stream_id,
                     nghttp2_http2_strerror(error_code));
    s->closed = true;
    ev_timer_stop(h->c->loop, &s->timer);
    h->open_cnt--;
    h->work = true;
    return 0;
}

static int on_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len,
                    void *user_data)
{
    struct h2 *h = user_data;
    (void)session;
    mx_log_debug("http2", "conn#%lu: %.*s (%s)", h->c->id, (int)len, msg,
                 nghttp2_strerror(lib_error_code));
    return 0;
}

/* ---- driving the session ---- */

/* Dispatch complete requests, tell handlers of resets, call on_drain and
 * free closed streams. Runs outside nghttp2. */
static void process(struct h2 *h)
{
    struct mx_conn *c = h->c;
    for (struct h2_stream *s = h->head, *next; s; s = next) {
        next = s->next;
        if (s->closed) {
            /* A client RST_STREAM (or the end of the connection) before the
             * response ended: the handler drops the request. */
            if (s->dispatched && !s->req->ended)
                mx_req_notify_abort(s->req);
            stream_free(s);
            continue;
        }
        if (s->complete && !s->dispatched && !s->refuse_status) {
            s->dispatched = true;
            mx_conn_dispatch(c, s->req);
        } else if (s->drain_due) {
            s->drain_due = false;
            mx_req_notify_drain(s->req);
        }
        if (mx_conn_is_closed(c))
            return;
    }
}

/* Frame what is queued into the connection's output and write it. */
static void send_frames(struct h2 *h)
{
    struct mx_conn *c = h->c;
    for (int i = 0; i < SEND_ROUNDS; i++) {
        h->blocked = false;
        int rv = nghttp2_session_send(h->ngh);
        if (rv != 0) {
            mx_log_debug("http2", "conn#%lu send: %s", c->id, nghttp2_strerror(rv));
            mx_conn_close(c);
            return;
        }
        mx_conn_flush(c);
        if (mx_conn_is_closed(c) || !h->blocked || mx_conn_out_len(c) > MX_CONN_OUT_LOW)
            return;
    }
    /* Still more to frame and the socket keeps taking it: next turn. */
    if (mx_conn_out_len(c) == 0)
        mx_conn_kick(c);
}

static void check_done(struct h2 *h)
{
    struct mx_conn *c = h->c;
    if (mx_conn_is_closed(c))
        return;
    if (!nghttp2_session_want_read(h->ngh) && !nghttp2_session_want_write(h->ngh)) {
        mx_conn_close_after(c);
        return;
    }
    if (h->open_cnt == 0 && !h->idle_armed && !h->goaway) {
        h->idle_armed = true;
        mx_conn_set_timer(c, mx_conn_opts(c)->idle_timeout_s);
    }
}

static void h2_run(struct h2 *h)
{
    struct mx_conn *c = h->c;
    for (int i = 0; i < RUN_ROUNDS; i++) {
        h->work = false;
        process(h);
        if (mx_conn_is_closed(c))
            return;
        send_frames(h);
        if (mx_conn_is_closed(c))
            return;
        if (!h->work)
            break;
    }
    if (h->work)
        mx_conn_kick(c);
    check_done(h);
}

/* ---- mx_conn_proto ---- */

static void h2_conn_input(struct mx_conn *c)
{
    struct h2 *h = h2_of(c);
    ssize_t n =
        nghttp2_session_mem_recv(h->ngh, (const uint8_t *)mx_buf_data(&c->in), mx_buf_len(&c->in));
    if (n < 0) {
        mx_log_debug("http2", "conn#%lu from %s: %s", c->id, c->peer, nghttp2_strerror((int)n));
        h->failed = true;
        mx_buf_reset(&c->in);
        /* Flush a GOAWAY nghttp2 may have queued, then go. */
        if (!nghttp2_is_fatal((int)n))
            nghttp2_session_send(h->ngh);
        mx_conn_pause_read(c, true);
        mx_conn_close_after(c);
        if (!mx_conn_is_closed(c))
            mx_conn_flush(c);
        return;
    }
    mx_buf_consume(&c->in, (size_t)n);
    h2_run(h);
    /* Back-pressure: a peer that does not read our frames is not read. */
    if (!mx_conn_is_closed(c) && c->out_high)
        mx_conn_pause_read(c, true);
}

static void h2_conn_start(struct mx_conn *c)
{
    const struct mx_httpd_opts *o = mx_conn_opts(c);
    struct h2 *h = mx_xcalloc(1, sizeof(*h));
    nghttp2_session_callbacks *cbs;
    h->c = c;
    c->proto_data = h;
    /* From here on streams have their own request timers and the connection
     * an idle timer while no stream is open (check_done). */
    mx_conn_set_timer(c, 0);
    MX_ASSERT(nghttp2_session_callbacks_new(&cbs) == 0);
    nghttp2_session_callbacks_set_send_callback(cbs, send_cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_error_callback2(cbs, on_error);
    /* nghttp2's own reset limit counts every RST_STREAM, also those of
     * streams that had ended: libcurl sends one after each answer, and a
     * busy client hit it after ~1,000 calls. on_frame_recv limits the
     * resets that matter instead. */
    nghttp2_option *opt;
    MX_ASSERT(nghttp2_option_new(&opt) == 0);
    nghttp2_option_set_stream_reset_rate_limit(opt, UINT64_C(1) << 40, UINT64_C(1) << 30);
    MX_ASSERT(nghttp2_session_server_new2(&h->ngh, cbs, h, opt) == 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    h->reset_tokens = MX_H2_RESET_BURST;
    h->reset_at = ev_now(c->loop);

    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)o->h2_max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)o->max_header},
    };
    nghttp2_submit_settings(h->ngh, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0]));
    if (mx_buf_len(&c->in))
        h2_conn_input(c);
    else
        h2_run(h);
}

static void h2_conn_drained(struct mx_conn *c)
{
    if (h2_of(c)->failed)
        return;
    mx_conn_pause_read(c, false);
    h2_run(h2_of(c));
}

static void h2_conn_kick(struct mx_conn *c)
{
    if (h2_of(c)->failed)
        return;
    h2_run(h2_of(c));
}

static void h2_conn_timeout(struct mx_conn *c)
{
    struct h2 *h = h2_of(c);
    h->idle_armed = false;
    if (h->open_cnt)
        return;
    /* Idle with no stream open: say goodbye (RFC 9113 §6.8). */
    h->goaway = true;
    nghttp2_session_terminate_session(h->ngh, NGHTTP2_NO_ERROR);
    h2_run(h);
}

static void h2_conn_stop(struct mx_conn *c)
{
    struct h2 *h = h2_of(c);
    if (h->goaway)
        return;
    h->goaway = true;
    /* Streams up to the last one we saw finish; the client retries the rest
     * elsewhere (RFC 9113 §6.8). */
    nghttp2_submit_goaway(h->ngh, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(h->ngh), NGHTTP2_NO_ERROR, NULL,
                          0);
    mx_conn_set_timer(c, 0);
    h->idle_armed = false;
    mx_conn_kick(c);
}

static void h2_conn_closed(struct mx_conn *c)
{
    struct h2 *h = h2_of(c);
    for (struct h2_stream *s = h->head; s; s = s->next) {
        ev_timer_stop(c->loop, &s->timer);
        if (s->closed)
            continue;
        s->closed = true;
        if (s->dispatched && !s->req->ended) {
            if (c->in_call)
                s->req->ended = true;
            else
                mx_req_notify_abort(s->req);
        }
    }
}

static void h2_conn_free(struct mx_conn *c)
{
    struct h2 *h = h2_of(c);
    if (h == NULL)
        return;
    /* nghttp2_session_del() calls no callbacks; the streams go after it. */
    nghttp2_session_del(h->ngh);
    while (h->head)
        stream_free(h->head);
    free(h);
    c->proto_data = NULL;
}

const struct mx_conn_proto mx_http2_proto = {
    .name = "h2",
    .start = h2_conn_start,
    .input = h2_conn_input,
    .drained = h2_conn_drained,
    .kick = h2_conn_kick,
    .timeout = h2_conn_timeout,
    .stop = h2_conn_stop,
    .closed = h2_conn_closed,
    .free = h2_conn_free,
};
