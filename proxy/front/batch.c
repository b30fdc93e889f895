/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC batches of MCP 2025-03-26: one request per element (a front end
 * of its own, whose responses land on the parent's SSE stream), see
 * batch.h.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ev.h>

#include "alloc.h"
#include "batch.h"
#include "err.h"
#include "log.h"
#include "req_int.h"
#include "rpc.h"
#include "sse.h"
#include "sse_write.h"

struct batch;

struct elem {
    struct batch *b;
    struct mx_req *req; /* NULL once freed */
    json_t *id;         /* the element's id when it is a request */
    int status;
    bool sse;
    bool answered; /* its response went out */
    bool overflow; /* its answer exceeded max_event */
    bool blocked;  /* a write of it met a full parent: EAGAIN */
    bool closed;   /* its handler was told MX_ECLOSED and forgot it */
    struct mx_buf json;
    struct mx_sse_decoder dec;
};

struct batch {
    struct mx_req *parent; /* NULL once the client is gone or answered */
    struct ev_loop *loop;
    struct elem *elems;
    size_t cnt;
    size_t open; /* elements whose requests have not ended */
    size_t max_event;
    bool has_request;
    bool started;     /* the parent's SSE response began */
    bool dispatching; /* inside the dispatch loop: finish later */
    bool gone;        /* the client went away */
    ev_timer later;   /* finishing or aborting outside a callback */
    int fail_status;  /* for a batch without requests: the first refusal */
    char *fail_body;
};

static size_t live_cnt;

static void el_done(struct elem *e, bool broken);

size_t mx_batch_live_cnt(void)
{
    return live_cnt;
}

static void batch_free(struct batch *b)
{
    ev_timer_stop(b->loop, &b->later);
    for (size_t i = 0; i < b->cnt; i++) {
        struct elem *e = &b->elems[i];
        mx_req_free(e->req);
        json_decref(e->id);
        mx_buf_clear(&e->json);
        mx_sse_decoder_clear(&e->dec);
    }
    free(b->elems);
    free(b->fail_body);
    free(b);
    live_cnt--;
}

/* The client is gone: every element still running is aborted (its handler
 * drops it and cancels what it started), then the batch is freed. */
static void abort_all(struct batch *b)
{
    for (size_t i = 0; i < b->cnt; i++) {
        struct mx_req *r = b->elems[i].req;
        if (r && !r->ended && !b->elems[i].closed)
            mx_req_notify_abort(r);
    }
    batch_free(b);
}

static void finish(struct batch *b)
{
    if (b->has_request) {
        if (!b->started)
            mx_req_start(b->parent, 200, NULL, 0, 0);
        mx_req_end(b->parent);
    } else if (b->fail_status) {
        const char *body = b->fail_body ? b->fail_body : "";
        mx_req_respond(b->parent, b->fail_status, NULL, 0, "application/json", body, strlen(body));
    } else {
        /* MCP 2025-03-26, Streamable HTTP: only notifications and
         * responses, all accepted */
        mx_req_respond(b->parent, 202, NULL, 0, NULL, NULL, 0);
    }
    b->parent = NULL;
    batch_free(b);
}

static void later_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct batch *b = w->data;
    (void)loop;
    (void)revents;
    if (b->gone)
        abort_all(b);
    else
        finish(b);
}

/* Finishing (or, when the client is gone, aborting the rest) happens on
 * the next loop iteration, never inside an element's own callback. */
static void schedule(struct batch *b)
{
    if (!ev_is_active(&b->later))
        ev_timer_start(b->loop, &b->later);
}

static void client_gone(struct batch *b)
{
    if (b->gone)
        return;
    b->gone = true;
    b->parent = NULL;
    schedule(b);
}

/* One JSON-RPC message of an element to the client. Returns 0, MX_EAGAIN
 * or MX_ECLOSED. */
static int emit(struct elem *e, struct mx_str data)
{
    struct batch *b = e->b;
    if (b->gone)
        return MX_ECLOSED;
    if (!b->started) {
        b->started = true;
        if (mx_sse_start(b->parent) != 0) {
            client_gone(b);
            return MX_ECLOSED;
        }
    }
    int rc = mx_sse_write_event(b->parent, data, b->max_event + 256);
    if (rc == MX_ECLOSED)
        client_gone(b);
    return rc == MX_ELIMIT ? 0 : rc;
}

/* Whether |msg| is the response to the element's own request. */
static bool is_answer(const struct elem *e, const json_t *msg)
{
    return e->id && mx_rpc_classify(msg) == MX_RPC_RESPONSE &&
           json_equal(json_object_get(msg, "id"), e->id);
}

/* A JSON-RPC error for the element's request in place of an answer. */
static void emit_error(struct elem *e, const char *why)
{
    if (e->id == NULL || e->answered)
        return;
    json_t *err = mx_rpc_error_new(e->id, MX_RPC_INTERNAL_ERROR, why, NULL);
    char *s = json_dumps(err, JSON_COMPACT);
    json_decref(err);
    e->answered = true;
    emit(e, mx_str_cstr(s));
    free(s);
}

/* An event of an element's SSE answer: passed on whole. */
static int on_event(const struct mx_sse_event *ev, void *data)
{
    struct elem *e = data;
    if (ev->data.len == 0)
        return 0; /* a priming event, for resumption the batch does not offer */
    json_t *msg = mx_rpc_parse(ev->data);
    if (msg && is_answer(e, msg))
        e->answered = true;
    json_decref(msg);
    int rc = emit(e, ev->data);
    if (rc == MX_EAGAIN) {
        e->blocked = true;
        return 0;
    }
    return rc;
}

static struct elem *elem_of(struct mx_req *req)
{
    return req->conn;
}

static int el_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                    long long body_len)
{
    struct elem *e = elem_of(req);
    (void)body_len;
    if (e->b->gone) {
        e->closed = true;
        return MX_ECLOSED;
    }
    e->status = status;
    for (size_t i = 0; i < cnt; i++) {
        if (strcasecmp(hdrs[i].name, "Content-Type") == 0 &&
            strncasecmp(hdrs[i].value, "text/event-stream", 17) == 0)
            e->sse = true;
    }
    return 0;
}

static int el_write(struct mx_req *req, const void *p, size_t len)
{
    struct elem *e = elem_of(req);
    if (e->b->gone) {
        e->closed = true;
        return MX_ECLOSED;
    }
    if (!e->sse) {
        if (!e->overflow && mx_buf_append(&e->json, p, len) != 0)
            e->overflow = true;
        return 0;
    }
    e->blocked = false;
    int rc = mx_sse_decode(&e->dec, p, len);
    if (rc == MX_ELIMIT) {
        /* an event too large for the batch: the element ends here */
        e->overflow = true;
        rc = MX_ECLOSED;
    }
    if (rc != 0) {
        e->closed = rc == MX_ECLOSED;
        if (e->closed)
            el_done(e, false);
        return rc;
    }
    return e->blocked ? MX_EAGAIN : 0;
}

/* The element's request is over: its answer (if JSON) goes out now. */
static void el_done(struct elem *e, bool broken)
{
    struct batch *b = e->b;
    if (!b->gone) {
        if (e->overflow) {
            emit_error(e, "Internal error: the answer is too large for a batch");
        } else if (!e->sse && mx_buf_len(&e->json) > 0) {
            json_t *msg = mx_rpc_parse(mx_str_make(mx_buf_data(&e->json), mx_buf_len(&e->json)));
            if (e->id && msg && is_answer(e, msg)) {
                char *s = json_dumps(msg, JSON_COMPACT);
                e->answered = true;
                emit(e, mx_str_cstr(s));
                free(s);
            } else if (e->id == NULL && msg && b->has_request &&
                       json_is_object(json_object_get(msg, "error")) &&
                       !json_is_string(json_object_get(msg, "id")) &&
                       !json_is_integer(json_object_get(msg, "id"))) {
                /* JSON-RPC 2.0, Batch: an element that is no valid
                 * request still gets its error (id null) */
                char *s = json_dumps(msg, JSON_COMPACT);
                emit(e, mx_str_cstr(s));
                free(s);
            } else if (e->id == NULL && e->status >= 400 && b->fail_status == 0) {
                b->fail_status = e->status;
                b->fail_body = mx_xstrndup(mx_buf_data(&e->json), mx_buf_len(&e->json));
            }
            json_decref(msg);
        }
        if (broken)
            emit_error(e, "Internal error: the answer broke off");
        else if (!e->answered && e->id)
            emit_error(e, "Internal error: no answer");
    }
    if (--b->open == 0 && !b->dispatching)
        schedule(b);
}

static void el_end(struct mx_req *req)
{
    el_done(elem_of(req), false);
}

static void el_reset(struct mx_req *req)
{
    el_done(elem_of(req), true);
}

static const struct mx_req_proto elem_proto = {el_start, el_write, el_end, el_reset};

bool mx_batch_is_element(const struct mx_req *req)
{
    return req->proto == &elem_proto;
}

static void parent_drain(struct mx_req *req, void *data)
{
    struct batch *b = data;
    (void)req;
    for (size_t i = 0; i < b->cnt; i++) {
        struct elem *e = &b->elems[i];
        if (e->blocked && e->req && !e->req->ended) {
            e->blocked = false;
            mx_req_notify_drain(e->req);
        }
    }
}

static void parent_abort(struct mx_req *req, void *data)
{
    struct batch *b = data;
    (void)req;
    client_gone(b);
}

/* A request for |e| with the parent's head and |body|. */
static struct mx_req *derive(const struct mx_req *parent, struct elem *e, const char *body)
{
    size_t blen = strlen(body);
    struct mx_req *r = mx_req_new(&elem_proto, e, parent->head.cap, blen + 1);
    r->version = parent->version;
    memcpy(r->peer, parent->peer, sizeof(r->peer));
    memcpy(r->method, parent->method, sizeof(r->method));
    if (mx_buf_append(&r->url, mx_buf_data(&parent->url), mx_buf_len(&parent->url)) != 0 ||
        mx_buf_append(&r->head, mx_buf_data(&parent->head), mx_buf_len(&parent->head)) != 0 ||
        mx_buf_append(&r->body, body, blen) != 0) {
        mx_req_free(r);
        return NULL;
    }
    r->header_cnt = parent->header_cnt;
    r->header_cap = parent->header_cnt;
    r->header_offs =
        mx_xcalloc(parent->header_cnt ? parent->header_cnt * 4 : 1, sizeof(*r->header_offs));
    memcpy(r->header_offs, parent->header_offs, parent->header_cnt * 4 * sizeof(size_t));
    mx_req_finish_head(r);
    return r;
}

const char *mx_batch_refusal(const json_t *arr, const char *version)
{
    if (version == NULL || strcmp(version, "2025-03-26") != 0)
        return "Invalid Request: JSON-RPC batches belong to MCP 2025-03-26 only";
    size_t i;
    json_t *el;
    json_array_foreach(arr, i, el)
    {
        const char *m = json_string_value(json_object_get(el, "method"));
        if (m && strcmp(m, "initialize") == 0)
            return "Invalid Request: initialize must not be part of a JSON-RPC batch";
    }
    if (json_array_size(arr) == 0 || json_array_size(arr) > MX_BATCH_MAX)
        return "Invalid Request: a JSON-RPC batch holds 1 to 64 messages";
    return NULL;
}

int mx_batch_serve(struct ev_loop *loop, struct mx_req *parent, const json_t *arr, size_t max_event,
                   mx_batch_dispatch_fn dispatch, void *data)
{
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n == 0 || n > MX_BATCH_MAX)
        return MX_EINVAL;
    struct batch *b = mx_xcalloc(1, sizeof(*b));
    live_cnt++;
    b->parent = parent;
    b->loop = loop;
    b->cnt = n;
    b->open = n;
    b->max_event = max_event;
    b->elems = mx_xcalloc(n, sizeof(*b->elems));
    ev_timer_init(&b->later, later_cb, 0.0, 0.0);
    b->later.data = b;
    for (size_t i = 0; i < n; i++) {
        struct elem *e = &b->elems[i];
        json_t *m = json_array_get(arr, i);
        e->b = b;
        mx_buf_init(&e->json, max_event);
        mx_sse_decoder_init(&e->dec, max_event, on_event, e);
        if (mx_rpc_classify(m) == MX_RPC_REQUEST) {
            e->id = json_incref(json_object_get(m, "id"));
            b->has_request = true;
        }
    }
    mx_req_set_handler(parent, parent_drain, parent_abort, b);
    b->dispatching = true;
    for (size_t i = 0; i < n && !b->gone; i++) {
        struct elem *e = &b->elems[i];
        if (!json_is_object(json_array_get(arr, i))) {
            /* JSON-RPC 2.0, Batch: an element that is no object gets an
             * Invalid Request error of its own, id null */
            json_t *err =
                mx_rpc_error_new(json_null(), MX_RPC_INVALID_REQUEST, "Invalid Request", NULL);
            char *s = json_dumps(err, JSON_COMPACT);
            json_decref(err);
            emit(e, mx_str_cstr(s));
            free(s);
            b->open--;
            continue;
        }
        char *body = json_dumps(json_array_get(arr, i), JSON_COMPACT);
        e->req = body ? derive(parent, e, body) : NULL;
        free(body);
        if (e->req == NULL) {
            emit_error(e, "Internal error: the element could not be read");
            b->open--;
            continue;
        }
        dispatch(e->req, data);
    }
    b->dispatching = false;
    if (b->gone || b->open == 0)
        schedule(b);
    return 0;
}
