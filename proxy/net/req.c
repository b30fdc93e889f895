/* SPDX-License-Identifier: MIT */
/*
 * The protocol-neutral request object. It stores the request head and body
 * as a front end delivers them and forwards response calls to that front
 * end's ops, so the handler never knows which protocol it is serving.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "req_int.h"

#define MAX_HEADERS 128

static unsigned long next_id = 1;
static size_t live_cnt;

struct mx_req *mx_req_new(const struct mx_req_proto *proto, void *conn, size_t max_head,
                          size_t max_body)
{
    struct mx_req *req = mx_xcalloc(1, sizeof(*req));
    req->proto = proto;
    req->conn = conn;
    req->id = next_id++;
    req->version = 11;
    mx_buf_init(&req->url, max_head);
    mx_buf_init(&req->head, max_head);
    mx_buf_init(&req->body, max_body);
    live_cnt++;
    return req;
}

void mx_req_free(struct mx_req *req)
{
    if (req == NULL)
        return;
    mx_buf_clear(&req->url);
    mx_buf_clear(&req->head);
    mx_buf_clear(&req->body);
    free(req->headers);
    free(req->header_offs);
    for (size_t i = 0; i < req->extra_cnt; i++) {
        free(req->extra_name[i]);
        free(req->extra_value[i]);
    }
    free(req);
    live_cnt--;
}

size_t mx_req_live_cnt(void)
{
    return live_cnt;
}

int mx_req_add_header_piece(struct mx_req *req, bool is_name, const char *p, size_t len)
{
    size_t *o;
    /* Trailer fields after a chunked body (RFC 9112 §7.1.2) arrive through
     * the same parser callbacks; the head is already sliced, so drop them. */
    if (req->headers)
        return 0;
    /* A name piece after a value (or first) starts a new header. */
    if (is_name &&
        (req->header_cnt == 0 || req->header_offs[4 * (req->header_cnt - 1) + 3] != (size_t)-1)) {
        if (req->header_cnt == MAX_HEADERS)
            return MX_ELIMIT;
        if (req->header_cnt == req->header_cap) {
            req->header_cap = req->header_cap ? req->header_cap * 2 : 16;
            req->header_offs =
                mx_xrealloc(req->header_offs, req->header_cap * 4 * sizeof(*req->header_offs));
        }
        o = &req->header_offs[4 * req->header_cnt++];
        o[0] = req->head.len;
        o[1] = 0;
        o[2] = 0;
        o[3] = (size_t)-1; /* value not started */
    }
    if (req->header_cnt == 0)
        return MX_EPROTO;
    o = &req->header_offs[4 * (req->header_cnt - 1)];
    if (!is_name && o[3] == (size_t)-1) {
        o[2] = req->head.len;
        o[3] = 0;
    }
    if (mx_buf_append(&req->head, p, len))
        return MX_ELIMIT;
    if (is_name)
        o[1] += len;
    else
        o[3] += len;
    return 0;
}

void mx_req_finish_head(struct mx_req *req)
{
    req->headers = mx_xcalloc(req->header_cnt, sizeof(*req->headers));
    for (size_t i = 0; i < req->header_cnt; i++) {
        size_t *o = &req->header_offs[4 * i];
        size_t vlen = o[3] == (size_t)-1 ? 0 : o[3];
        req->headers[i].name = mx_str_make(req->head.p + o[0], o[1]);
        req->headers[i].value = mx_str_trim(mx_str_make(req->head.p + o[2], vlen));
    }
}

struct mx_str mx_req_method(const struct mx_req *req)
{
    return mx_str_cstr(req->method);
}

struct mx_str mx_req_path(const struct mx_req *req)
{
    struct mx_str u = mx_buf_str(&req->url);
    const char *q = memchr(u.p, '?', u.len);
    return q ? mx_str_make(u.p, (size_t)(q - u.p)) : u;
}

struct mx_str mx_req_query(const struct mx_req *req)
{
    struct mx_str u = mx_buf_str(&req->url);
    const char *q = memchr(u.p, '?', u.len);
    return q ? mx_str_make(q + 1, u.len - (size_t)(q - u.p) - 1) : mx_str_make("", 0);
}

struct mx_str mx_req_body(const struct mx_req *req)
{
    return mx_buf_str(&req->body);
}

size_t mx_req_header_cnt(const struct mx_req *req)
{
    return req->header_cnt;
}

const struct mx_header *mx_req_header_at(const struct mx_req *req, size_t i)
{
    return i < req->header_cnt && req->headers ? &req->headers[i] : NULL;
}

const struct mx_str *mx_req_header(const struct mx_req *req, const char *name)
{
    if (req->headers == NULL)
        return NULL;
    struct mx_str n = mx_str_cstr(name);
    for (size_t i = 0; i < req->header_cnt; i++) {
        if (mx_str_caseeq(req->headers[i].name, n))
            return &req->headers[i].value;
    }
    return NULL;
}

const char *mx_req_peer(const struct mx_req *req)
{
    return req->peer;
}

int mx_req_http_version(const struct mx_req *req)
{
    return req->version;
}

unsigned long mx_req_id(const struct mx_req *req)
{
    return req->id;
}

void mx_req_set_handler(struct mx_req *req, mx_req_cb on_drain, mx_req_cb on_abort, void *data)
{
    req->on_drain = on_drain;
    req->on_abort = on_abort;
    req->data = data;
}

void *mx_req_handler_data(const struct mx_req *req)
{
    return req->data;
}

int mx_req_add_response_header(struct mx_req *req, const char *name, const char *value)
{
    if (req->extra_cnt >= MX_REQ_EXTRA_MAX)
        return MX_ELIMIT;
    req->extra_name[req->extra_cnt] = mx_xstrdup(name);
    req->extra_value[req->extra_cnt] = mx_xstrdup(value);
    req->extra_cnt++;
    return 0;
}

int mx_req_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                 long long body_len)
{
    if (req->started || req->ended)
        return MX_EINVAL;
    req->started = true;
    if (req->extra_cnt == 0)
        return req->proto->start(req, status, hdrs, cnt, body_len);
    struct mx_hdr_out all[40];
    size_t n = 0;
    for (size_t i = 0; i < cnt && n < sizeof(all) / sizeof(all[0]) - MX_REQ_EXTRA_MAX; i++)
        all[n++] = hdrs[i];
    for (size_t i = 0; i < req->extra_cnt; i++)
        all[n++] = (struct mx_hdr_out){req->extra_name[i], req->extra_value[i]};
    return req->proto->start(req, status, all, n, body_len);
}

int mx_req_write(struct mx_req *req, const void *p, size_t len)
{
    if (!req->started || req->ended)
        return MX_EINVAL;
    if (len == 0)
        return 0;
    return req->proto->write(req, p, len);
}

void mx_req_end(struct mx_req *req)
{
    if (req->ended)
        return;
    if (!req->started)
        mx_req_start(req, 204, NULL, 0, 0);
    req->ended = true;
    req->on_drain = NULL;
    req->on_abort = NULL;
    req->proto->end(req);
}

void mx_req_reset(struct mx_req *req)
{
    if (req->ended)
        return;
    req->ended = true;
    req->on_drain = NULL;
    req->on_abort = NULL;
    req->proto->reset(req);
}

int mx_req_respond(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                   const char *content_type, const void *body, size_t len)
{
    struct mx_hdr_out all[32];
    size_t n = 0;
    if (content_type)
        all[n++] = (struct mx_hdr_out){"Content-Type", content_type};
    for (size_t i = 0; i < cnt && n < sizeof(all) / sizeof(all[0]); i++)
        all[n++] = hdrs[i];
    int rc = mx_req_start(req, status, all, n, (long long)len);
    if (rc == 0 && len)
        rc = mx_req_write(req, body, len);
    if (rc == MX_EAGAIN)
        rc = 0;
    mx_req_end(req);
    return rc;
}

void mx_req_notify_abort(struct mx_req *req)
{
    mx_req_cb cb = req->on_abort;
    if (req->ended)
        return;
    req->ended = true;
    req->on_abort = NULL;
    req->on_drain = NULL;
    if (cb)
        cb(req, req->data);
}

void mx_req_notify_drain(struct mx_req *req)
{
    if (!req->ended && req->on_drain)
        req->on_drain(req, req->data);
}

const char *mx_http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 421:
        return "Misdirected Request";
    case 423:
        return "Locked";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}
