/* SPDX-License-Identifier: MIT */
/*
 * HTTP+SSE toward 2024-11-05 clients (legacy.h): the client's streams, the
 * requests made of its messages, and the way their answers go back.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "evsoon.h"
#include "legacy.h"
#include "log.h"
#include "rand.h"
#include "req_int.h"
#include "rpc.h"
#include "session.h"
#include "sse.h"
#include "sse_write.h"

#define SUBSYS   "legacy"
#define CHAN_LEN 32 /* hex characters: 128 random bits */

struct chan;

/* One request made of a client message (or the session's GET, or the
 * DELETE that ends it). */
struct inner {
    struct inner *next;
    struct chan *ch;
    struct mx_req *req;
    json_t *id; /* the message's id when it is a request */
    bool sse;
    bool ended;    /* its response is over: free it */
    bool aborted;  /* its handler was told the client is gone */
    bool blocked;  /* a write of it met a slow client: EAGAIN */
    bool answered; /* its answer went out */
    bool is_get;   /* the session's GET stream */
    struct mx_buf json;
    struct mx_sse_decoder dec;
};

struct chan {
    struct chan *next;
    struct mx_legacy *l;
    char id[CHAN_LEN + 1];
    char *server;                    /* NULL: /sse */
    struct mx_req *get;              /* the client's stream; NULL once it is gone */
    char sid[MX_SESSION_ID_LEN + 1]; /* the client session, once initialize was answered */
    struct inner *inners;
    bool gone;     /* the client's stream ended */
    bool want_get; /* the session's GET is due */
    bool has_get;  /* ... and was opened */
    bool deleted;  /* the session's DELETE was sent */
    ev_timer keepalive;
};

struct mx_legacy {
    struct ev_loop *loop;
    size_t max;
    size_t max_event;
    mx_legacy_dispatch_fn dispatch;
    void *data;
    struct chan *chans;
    size_t cnt;
    ev_timer later; /* the sweep, never inside a request's own callback */
};

static void chan_gone(struct chan *ch);

static void soon(struct mx_legacy *l)
{
    mx_ev_soon(l->loop, &l->later);
}

static void error_body(struct mx_req *req, int status, const char *msg)
{
    json_t *e = mx_rpc_error_new(json_null(), MX_RPC_INVALID_REQUEST, msg, NULL);
    char *body = mx_rpc_dump(e);
    json_decref(e);
    mx_req_respond(req, status, NULL, 0, "application/json", body, strlen(body));
    free(body);
}

/* One JSON-RPC message to the client as a "message" event. Returns 0,
 * MX_EAGAIN or MX_ECLOSED. */
static int emit(struct chan *ch, struct mx_str data)
{
    if (ch->gone)
        return MX_ECLOSED;
    int rc = mx_sse_write_event(ch->get, data, ch->l->max_event + 256);
    if (rc == MX_ECLOSED)
        chan_gone(ch);
    return rc == MX_ELIMIT ? 0 : rc;
}

static void emit_json(struct chan *ch, const json_t *msg)
{
    char *s = mx_rpc_dump(msg);
    emit(ch, mx_str_cstr(s));
    free(s);
}

static bool is_answer(const struct inner *in, const json_t *msg)
{
    return in->id && mx_rpc_classify(msg) == MX_RPC_RESPONSE &&
           json_equal(json_object_get(msg, "id"), in->id);
}

static int on_event(const struct mx_sse_event *ev, void *data)
{
    struct inner *in = data;
    if (ev->data.len == 0)
        return 0; /* a priming event: a 2024-11-05 stream does not resume */
    json_t *msg = mx_rpc_parse(ev->data);
    if (msg && is_answer(in, msg))
        in->answered = true;
    json_decref(msg);
    int rc = emit(in->ch, ev->data);
    if (rc == MX_EAGAIN) {
        in->blocked = true;
        return 0;
    }
    return rc;
}

static struct inner *inner_of(struct mx_req *req)
{
    return req->conn;
}

static int in_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                    long long body_len)
{
    struct inner *in = inner_of(req);
    struct chan *ch = in->ch;
    (void)status;
    (void)body_len;
    if (ch->gone)
        return MX_ECLOSED;
    for (size_t i = 0; i < cnt; i++) {
        if (strcasecmp(hdrs[i].name, "Content-Type") == 0 &&
            strncasecmp(hdrs[i].value, "text/event-stream", 17) == 0)
            in->sse = true;
        /* the answer to initialize names the session */
        if (strcasecmp(hdrs[i].name, "Mcp-Session-Id") == 0 && ch->sid[0] == '\0' &&
            strlen(hdrs[i].value) == MX_SESSION_ID_LEN) {
            memcpy(ch->sid, hdrs[i].value, MX_SESSION_ID_LEN + 1);
            ch->want_get = true;
        }
    }
    return 0;
}

static int in_write(struct mx_req *req, const void *p, size_t len)
{
    struct inner *in = inner_of(req);
    if (in->ch->gone)
        return MX_ECLOSED;
    if (!in->sse) {
        /* an answer too large is dropped whole below */
        if (mx_buf_append(&in->json, p, len) != 0)
            mx_buf_reset(&in->json);
        return 0;
    }
    in->blocked = false;
    int rc = mx_sse_decode(&in->dec, p, len);
    if (rc == MX_ELIMIT)
        rc = MX_ECLOSED; /* an event over the cap: the answer ends here */
    if (rc != 0)
        return rc;
    return in->blocked ? MX_EAGAIN : 0;
}

/* Its response is over: a JSON answer goes out now, and a request that got
 * none hears why. */
static void in_done(struct inner *in, bool broken)
{
    struct chan *ch = in->ch;
    in->ended = true;
    if (!ch->gone && !in->sse && mx_buf_len(&in->json) > 0) {
        json_t *msg = mx_rpc_parse(mx_str_make(mx_buf_data(&in->json), mx_buf_len(&in->json)));
        /* the error of a message that was no valid request carries id null */
        if (msg && (is_answer(in, msg) || json_object_get(msg, "error"))) {
            in->answered = in->answered || is_answer(in, msg) || in->id == NULL;
            emit_json(ch, msg);
        }
        json_decref(msg);
    }
    if (!ch->gone && in->id && !in->answered) {
        json_t *e = mx_rpc_error_new(
            in->id, MX_RPC_INTERNAL_ERROR,
            broken ? "Internal error: the answer broke off" : "Internal error: no answer", NULL);
        emit_json(ch, e);
        json_decref(e);
    }
    /* the session's GET stream ended without the client leaving: the
     * session is over (a reload retired its server), so is the stream */
    if (in->is_get && !ch->gone) {
        mx_log_info(SUBSYS, "stream %.8s...: its client session ended; closing the stream", ch->id);
        mx_req_end(ch->get);
        chan_gone(ch);
    }
    soon(ch->l);
}

static void in_end(struct mx_req *req)
{
    in_done(inner_of(req), false);
}

static void in_reset(struct mx_req *req)
{
    in_done(inner_of(req), true);
}

static const struct mx_req_proto inner_proto = {in_start, in_write, in_end, in_reset};

static void inner_free(struct inner *in)
{
    mx_req_free(in->req);
    json_decref(in->id);
    mx_buf_clear(&in->json);
    mx_sse_decoder_clear(&in->dec);
    free(in);
}

static bool header_is(const struct mx_header *h, const char *name)
{
    return h->name.len == strlen(name) && strncasecmp(h->name.p, name, h->name.len) == 0;
}

static int add_header(struct mx_req *r, const char *name, struct mx_str value)
{
    int rc = mx_req_add_header_piece(r, true, name, strlen(name));
    return rc ? rc : mx_req_add_header_piece(r, false, value.p, value.len);
}

/*
 * A request |method| of the Streamable HTTP endpoint for |ch| with |body|
 * (may be NULL), the head of the client's |from| (may be NULL: none; its
 * credentials and anything the endpoint reads of a client) with the
 * transport's own headers in place of the client's.
 */
static struct inner *inner_new(struct chan *ch, const struct mx_req *from, const char *method,
                               const char *body)
{
    static const char *const own[] = {"Content-Type",     "Content-Length",       "Accept",
                                      "Mcp-Session-Id",   "MCP-Protocol-Version", "Last-Event-ID",
                                      "Transfer-Encoding"};
    struct inner *in = mx_xcalloc(1, sizeof(*in));
    size_t blen = body ? strlen(body) : 0;
    in->ch = ch;
    mx_buf_init(&in->json, ch->l->max_event);
    mx_sse_decoder_init(&in->dec, ch->l->max_event, on_event, in);
    struct mx_req *r = mx_req_new(&inner_proto, in, (from ? from->head.cap : 0) + 512, blen + 1);
    in->req = r;
    r->version = from ? from->version : 11;
    if (from)
        memcpy(r->peer, from->peer, sizeof(r->peer));
    snprintf(r->method, sizeof(r->method), "%s", method);
    int rc = mx_buf_append_str(&r->url, "/mcp");
    if (ch->server) {
        rc |= mx_buf_append_str(&r->url, "/");
        rc |= mx_buf_append_str(&r->url, ch->server);
    }
    rc |= mx_buf_append(&r->body, body ? body : "", blen);
    for (size_t i = 0; from && i < mx_req_header_cnt(from) && rc == 0; i++) {
        const struct mx_header *h = mx_req_header_at(from, i);
        bool mine = false;
        for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
            mine = mine || header_is(h, own[k]);
        if (!mine) {
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(h->name.len < 63 ? h->name.len : 63),
                     h->name.p);
            rc = add_header(r, name, h->value);
        }
    }
    if (body) {
        rc |= add_header(r, "Content-Type", MX_STR_LIT("application/json"));
        rc |= add_header(r, "Accept", MX_STR_LIT("application/json, text/event-stream"));
    } else {
        rc |= add_header(r, "Accept", MX_STR_LIT("text/event-stream"));
    }
    if (ch->sid[0])
        rc |= add_header(r, "Mcp-Session-Id", mx_str_cstr(ch->sid));
    if (rc != 0) {
        inner_free(in);
        return NULL;
    }
    mx_req_finish_head(r);
    in->next = ch->inners;
    ch->inners = in;
    return in;
}

/* ---- the client's stream ---- */

static void chan_gone(struct chan *ch)
{
    if (ch->gone)
        return;
    ch->gone = true;
    ch->get = NULL;
    ev_timer_stop(ch->l->loop, &ch->keepalive);
    soon(ch->l);
}

static void chan_free(struct chan *ch)
{
    while (ch->inners) {
        struct inner *in = ch->inners;
        ch->inners = in->next;
        inner_free(in);
    }
    ev_timer_stop(ch->l->loop, &ch->keepalive);
    free(ch->server);
    free(ch);
}

static void get_drain(struct mx_req *req, void *data)
{
    struct chan *ch = data;
    (void)req;
    for (struct inner *in = ch->inners; in; in = in->next) {
        if (in->blocked && !in->ended && !in->aborted) {
            in->blocked = false;
            mx_req_notify_drain(in->req);
        }
    }
}

static void get_abort(struct mx_req *req, void *data)
{
    (void)req;
    chan_gone(data);
}

static void keepalive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct chan *ch = mx_container_of(w, struct chan, keepalive);
    static const char text[] = ": keepalive\n\n";
    (void)loop;
    (void)revents;
    /* an SSE comment keeps intermediaries from timing the stream out */
    if (!ch->gone && mx_req_write(ch->get, text, sizeof(text) - 1) == MX_ECLOSED)
        chan_gone(ch);
}

/* The session's GET stream, once initialize was answered: what the
 * session's upstreams send outside a call reaches the client. */
static void open_session_get(struct chan *ch)
{
    ch->want_get = false;
    ch->has_get = true;
    struct inner *in = inner_new(ch, ch->get, "GET", NULL);
    if (in == NULL)
        return;
    in->is_get = true;
    ch->l->dispatch(in->req, ch->server, ch->l->data);
}

/* The client left: what runs for it is aborted (its calls end as when a
 * Streamable HTTP client leaves) and its session ends. */
static void chan_wind_down(struct chan *ch)
{
    for (struct inner *in = ch->inners; in; in = in->next) {
        if (!in->ended && !in->aborted) {
            in->aborted = true;
            mx_req_notify_abort(in->req);
        }
    }
    if (ch->sid[0] && !ch->deleted) {
        ch->deleted = true;
        mx_log_debug(SUBSYS, "stream %.8s... closed; ending its session", ch->id);
        /* the DELETE's answer goes nowhere: the client is gone */
        struct inner *del = inner_new(ch, NULL, "DELETE", NULL);
        if (del)
            ch->l->dispatch(del->req, ch->server, ch->l->data);
    }
}

static void sweep(struct mx_legacy *l)
{
    for (struct chan **pp = &l->chans; *pp;) {
        struct chan *ch = *pp;
        if (!ch->gone && ch->want_get && !ch->has_get)
            open_session_get(ch);
        if (ch->gone)
            chan_wind_down(ch);
        for (struct inner **ip = &ch->inners; *ip;) {
            struct inner *in = *ip;
            if (in->ended || in->aborted) {
                *ip = in->next;
                inner_free(in);
            } else {
                ip = &in->next;
            }
        }
        if (ch->gone && ch->inners == NULL) {
            *pp = ch->next;
            l->cnt--;
            chan_free(ch);
        } else {
            pp = &ch->next;
        }
    }
}

static void later_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_legacy *l = w->data;
    (void)loop;
    (void)revents;
    sweep(l);
}

static void open_stream(struct mx_legacy *l, const char *server, struct mx_req *req)
{
    if (l->cnt >= l->max) {
        static const struct mx_hdr_out retry[] = {{"Retry-After", MX_SESSION_RETRY_AFTER}};
        json_t *e = mx_rpc_error_new(json_null(), MX_RPC_UPSTREAM_UNAVAILABLE,
                                     "too many SSE streams ([listen] max_sessions); close one or "
                                     "retry later",
                                     NULL);
        char *body = mx_rpc_dump(e);
        json_decref(e);
        mx_req_respond(req, 503, retry, 1, "application/json", body, strlen(body));
        free(body);
        return;
    }
    struct chan *ch = mx_xcalloc(1, sizeof(*ch));
    ch->l = l;
    mx_rand_hex(ch->id, sizeof(ch->id));
    ch->server = server ? mx_xstrdup(server) : NULL;
    ch->get = req;
    ev_init(&ch->keepalive, keepalive_cb);
    ch->keepalive.repeat = MX_SESSION_KEEPALIVE_S;
    ch->next = l->chans;
    l->chans = ch;
    l->cnt++;
    mx_req_set_handler(req, get_drain, get_abort, ch);
    /* MCP 2024-11-05, HTTP with SSE: the first event names the URL of the
     * client's messages */
    char url[128];
    snprintf(url, sizeof(url), "/sse%s%s?session=%s", server ? "/" : "", server ? server : "",
             ch->id);
    struct mx_buf b;
    mx_buf_init(&b, 256);
    int rc = mx_sse_start(req);
    if (rc == 0 && mx_sse_encode(&b, "endpoint", NULL, mx_str_cstr(url)) == 0)
        rc = mx_req_write(req, mx_buf_data(&b), mx_buf_len(&b));
    mx_buf_clear(&b);
    if (rc == MX_ECLOSED)
        chan_gone(ch);
    else
        ev_timer_again(l->loop, &ch->keepalive);
}

/* The stream named by ?session=<id> of |req|'s query, at the same path. */
static struct chan *chan_of(struct mx_legacy *l, const char *server, const struct mx_req *req)
{
    static const struct mx_str key = {"session=", 8};
    struct mx_str q = mx_req_query(req);
    if (q.len != key.len + CHAN_LEN || memcmp(q.p, key.p, key.len) != 0)
        return NULL;
    for (struct chan *ch = l->chans; ch; ch = ch->next) {
        /* constant time per candidate: the id is the stream's capability */
        if (CRYPTO_memcmp(ch->id, q.p + key.len, CHAN_LEN) != 0 || ch->gone)
            continue;
        bool same = server ? ch->server && strcmp(ch->server, server) == 0 : ch->server == NULL;
        return same ? ch : NULL;
    }
    return NULL;
}

static void post_message(struct mx_legacy *l, const char *server, struct mx_req *req)
{
    struct chan *ch = chan_of(l, server, req);
    if (ch == NULL) {
        error_body(req, 404,
                   "no open SSE stream has this message URL; open GET /sse (or /sse/<server>) "
                   "and POST to the URL of its endpoint event");
        return;
    }
    const struct mx_str *ct = mx_req_header(req, "Content-Type");
    if (ct == NULL || ct->len < 16 || strncasecmp(ct->p, "application/json", 16) != 0) {
        error_body(req, 415,
                   "Unsupported Media Type: POST one JSON-RPC message as "
                   "Content-Type: application/json");
        return;
    }
    struct mx_str body = mx_req_body(req);
    json_t *msg = mx_rpc_parse(body);
    enum mx_rpc_kind kind = msg ? mx_rpc_classify(msg) : MX_RPC_INVALID;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (ch->sid[0] == '\0' && msg && kind != MX_RPC_INVALID &&
        !(kind == MX_RPC_REQUEST && strcmp(method, "initialize") == 0)) {
        /* MCP 2024-11-05, Lifecycle: initialize comes first */
        if (kind == MX_RPC_REQUEST) {
            json_t *e = mx_rpc_error_new(json_object_get(msg, "id"), MX_RPC_INVALID_REQUEST,
                                         "Invalid Request: send initialize first", NULL);
            emit_json(ch, e);
            json_decref(e);
        }
        json_decref(msg);
        mx_req_respond(req, 202, NULL, 0, NULL, NULL, 0);
        return;
    }
    char *text = mx_xstrndup(body.p, body.len);
    struct inner *in = inner_new(ch, req, "POST", text);
    free(text);
    if (in && kind == MX_RPC_REQUEST)
        in->id = json_incref(json_object_get(msg, "id"));
    json_decref(msg);
    if (in == NULL) {
        error_body(req, 431, "the message's headers are too large; send fewer or shorter ones");
        return;
    }
    /* MCP 2024-11-05, HTTP with SSE: the answer goes on the stream */
    mx_req_respond(req, 202, NULL, 0, "text/plain", "Accepted", 8);
    l->dispatch(in->req, ch->server, l->data);
}

void mx_legacy_serve(struct mx_legacy *l, const char *server, struct mx_req *req)
{
    static const struct mx_hdr_out allow[] = {{"Allow", "GET, POST"}};
    struct mx_str method = mx_req_method(req);
    if (mx_str_eq(method, MX_STR_LIT("GET")) && mx_req_query(req).len == 0) {
        open_stream(l, server, req);
    } else if (mx_str_eq(method, MX_STR_LIT("POST"))) {
        post_message(l, server, req);
    } else {
        static const char body[] = "{\"error\":\"use GET to open the stream and POST to the URL "
                                   "of its endpoint event\"}";
        mx_req_respond(req, 405, allow, 1, "application/json", body, sizeof(body) - 1);
    }
}

struct mx_legacy *mx_legacy_new(struct ev_loop *loop, size_t max, size_t max_event,
                                mx_legacy_dispatch_fn dispatch, void *data)
{
    struct mx_legacy *l = mx_xcalloc(1, sizeof(*l));
    l->loop = loop;
    l->max = max;
    l->max_event = max_event;
    l->dispatch = dispatch;
    l->data = data;
    ev_timer_init(&l->later, later_cb, 0.0, 0.0);
    l->later.data = l;
    return l;
}

void mx_legacy_free(struct mx_legacy *l)
{
    if (l == NULL)
        return;
    ev_timer_stop(l->loop, &l->later);
    while (l->chans) {
        struct chan *ch = l->chans;
        l->chans = ch->next;
        ch->gone = true;
        ch->get = NULL;
        for (struct inner *in = ch->inners; in; in = in->next) {
            if (!in->ended && !in->aborted) {
                in->aborted = true;
                mx_req_notify_abort(in->req);
            }
        }
        chan_free(ch);
    }
    free(l);
}

size_t mx_legacy_cnt(const struct mx_legacy *l)
{
    return l ? l->cnt : 0;
}
