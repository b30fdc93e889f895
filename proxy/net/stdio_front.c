/* SPDX-License-Identifier: MIT */
/*
 * The stdio front end (see stdio_front.h): the input (a line buffer fed
 * from the input descriptor), the output (one buffer drained to the output
 * descriptor, with a high and a low watermark), and the requests made from
 * the client's messages. Each request is a struct mx_req whose response
 * calls land in the ops below: a JSON answer is written as one line when it
 * is complete, an SSE answer event by event. Requests are freed from a
 * zero-delay timer, never inside a response call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "linebuf.h"
#include "log.h"
#include "req_int.h"
#include "rpc.h"
#include "sse.h"
#include "stdio_front.h"

#define SUBSYS "stdio"

#define READ_CHUNK    (64u * 1024)
#define OUT_HIGH      (1024u * 1024) /* above: producers wait, input is not read */
#define OUT_LOW       (256u * 1024)  /* below again: they resume */
#define OUT_CAP       (256u * 1024 * 1024)
#define BODY_CAP      (64u * 1024 * 1024) /* one JSON answer */
#define EVENT_CAP     (32u * 1024 * 1024) /* one SSE event (mcp.c writes at most 16 MiB) */
#define MAX_HEAD      (8u * 1024)
#define MAX_POSTS     256 /* client messages served at once; input waits beyond */
#define FLUSH_LIMIT_S 5.0 /* at the end, for the client to read what is left */
#define SID_MAX       128

/* JSON-RPC 2.0 codes used here. */

enum front_state {
    F_OPEN = 0,     /* serving the client */
    F_DRAINING = 1, /* input ended: requests in flight may finish */
    F_ENDING = 2,   /* session deleted: what is left goes out */
    F_DONE = 3,
};

enum sreq_kind {
    SR_POST = 0,
    SR_GET = 1,
    SR_DELETE = 2,
};

enum sreq_body {
    B_NONE = 0,
    B_JSON = 1,
    B_SSE = 2,
};

struct sreq {
    struct mx_stdio_front *f;
    struct mx_req *req;
    struct sreq *next;
    enum sreq_kind kind;
    enum sreq_body body;
    int status;
    bool answers;  /* what comes back goes to the client (a request, or bad input) */
    bool answered; /* the response to |id| went out */
    bool is_init;
    bool modern;  /* a request of MCP 2026-07-28 (its _meta names a version) */
    bool blocked; /* a write returned MX_EAGAIN: on_drain is owed */
    bool broken;  /* over a cap: the rest of the body is dropped */
    bool done;    /* ended or reset: freed from the loop */
    json_t *id;   /* the client's request id */
    struct mx_buf json;
    struct mx_sse_decoder sse;
};

struct mx_stdio_front {
    struct ev_loop *loop;
    mx_req_cb serve; /* every request made from the client's messages */
    void *serve_data;
    struct mx_stdio_front_opts o;
    int in_flags; /* as found, put back at free */
    int out_flags;
    mx_stdio_front_done_cb done;
    void *data;
    enum front_state state;

    ev_io rd;
    ev_io wr;
    ev_timer kick;     /* runs work() at the next loop iteration */
    ev_timer deadline; /* the drain or flush bound */
    ev_tstamp until;

    struct mx_linebuf in;
    bool in_eof;
    bool in_finished; /* the last line, without a newline, was taken */
    struct mx_buf out;
    bool out_dead;

    struct sreq *reqs;
    size_t posts;   /* client messages not answered yet */
    bool init_wait; /* initialize is being answered: the next messages wait */
    char sid[SID_MAX];
    char version[32]; /* the protocol version initialize agreed on */
    bool get_opened;
    struct sreq *get;
};

static void schedule(struct mx_stdio_front *f)
{
    if (!ev_is_active(&f->kick)) {
        ev_timer_set(&f->kick, 0.0, 0.0);
        ev_timer_start(f->loop, &f->kick);
    }
}

/* ---- output ---- */

static void out_flush(struct mx_stdio_front *f)
{
    while (mx_buf_len(&f->out)) {
        ssize_t n = write(f->o.out_fd, mx_buf_data(&f->out), mx_buf_len(&f->out));
        if (n > 0) {
            mx_buf_consume(&f->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ev_io_start(f->loop, &f->wr);
            return;
        }
        mx_log_info(SUBSYS, "stdout is closed (%s); ending",
                    n < 0 ? strerror(errno) : "no progress");
        f->out_dead = true;
        mx_buf_clear(&f->out);
        break;
    }
    ev_io_stop(f->loop, &f->wr);
    if (f->out.size > OUT_HIGH)
        mx_buf_clear(&f->out); /* a burst is over: give its memory back */
    if (f->out_dead)
        schedule(f);
}

/*
 * One message to the client, as one line. What mcplex answers is compact
 * JSON already; anything else is made so, or dropped, because stdout must
 * carry nothing but JSON-RPC messages (MCP 2025-06-18, Transports, stdio).
 */
static void emit(struct mx_stdio_front *f, struct mx_str msg)
{
    char *fixed = NULL;
    msg = mx_str_trim(msg);
    if (f->out_dead || msg.len == 0)
        return;
    if (msg.p[0] != '{' || memchr(msg.p, '\n', msg.len) || memchr(msg.p, '\r', msg.len)) {
        json_t *j = mx_rpc_parse(msg);
        if (!json_is_object(j)) {
            mx_log_warn(SUBSYS, "an answer that is not a JSON object was dropped (%zu bytes)",
                        msg.len);
            json_decref(j);
            return;
        }
        fixed = mx_rpc_dump(j);
        json_decref(j);
        msg = mx_str_cstr(fixed);
    }
    if (mx_buf_len(&f->out) + msg.len + 1 > OUT_CAP) {
        mx_log_err(SUBSYS, "the client reads nothing: %u bytes wait; a message was dropped",
                   OUT_CAP);
    } else {
        mx_buf_append(&f->out, msg.p, msg.len);
        mx_buf_append(&f->out, "\n", 1);
        out_flush(f);
    }
    free(fixed);
}

static void emit_json(struct mx_stdio_front *f, json_t *msg)
{
    char *text = mx_rpc_dump(msg);
    emit(f, mx_str_cstr(text));
    free(text);
    json_decref(msg);
}

static void wr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_stdio_front *f = mx_container_of(w, struct mx_stdio_front, wr);
    (void)loop;
    (void)revents;
    out_flush(f);
    if (mx_buf_len(&f->out) <= OUT_LOW)
        schedule(f);
}

/* ---- requests: the response side (struct mx_req_proto) ---- */

static void sreq_done(struct sreq *sr)
{
    struct mx_stdio_front *f = sr->f;
    if (sr->done)
        return;
    sr->done = true;
    if (sr->kind == SR_POST)
        f->posts--;
    if (sr->is_init)
        f->init_wait = false;
    if (sr == f->get) {
        f->get = NULL;
        if (f->state == F_OPEN)
            mx_log_warn(SUBSYS,
                        "the session's stream ended (HTTP %d); messages of no request "
                        "will not reach the client",
                        sr->status);
    }
    schedule(f);
}

/* Whether |data| is the response to |sr|'s request. */
static bool is_answer(const struct sreq *sr, struct mx_str data)
{
    json_t *j = mx_rpc_parse(data);
    bool yes =
        j && mx_rpc_classify(j) == MX_RPC_RESPONSE && json_equal(json_object_get(j, "id"), sr->id);
    json_decref(j);
    return yes;
}

static int on_event(const struct mx_sse_event *ev, void *data)
{
    struct sreq *sr = data;
    if (ev->data.len == 0)
        return 0;
    if (sr->answers && !sr->answered && sr->id && is_answer(sr, ev->data))
        sr->answered = true;
    emit(sr->f, ev->data);
    return 0;
}

static bool type_is(const char *value, const char *type)
{
    size_t n = strlen(type);
    return strncasecmp(value, type, n) == 0 && (value[n] == '\0' || value[n] == ';');
}

static int fe_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                    long long body_len)
{
    struct sreq *sr = req->conn;
    struct mx_stdio_front *f = sr->f;
    (void)body_len;
    sr->status = status;
    for (size_t i = 0; i < cnt; i++) {
        if (strcasecmp(hdrs[i].name, "Content-Type") == 0) {
            if (type_is(hdrs[i].value, "text/event-stream")) {
                sr->body = B_SSE;
                mx_sse_decoder_init(&sr->sse, EVENT_CAP, on_event, sr);
            } else if (type_is(hdrs[i].value, "application/json")) {
                sr->body = B_JSON;
            }
        } else if (strcasecmp(hdrs[i].name, "Mcp-Session-Id") == 0 && sr->is_init &&
                   status == 200 && strlen(hdrs[i].value) < sizeof(f->sid)) {
            snprintf(f->sid, sizeof(f->sid), "%s", hdrs[i].value);
        }
    }
    if (sr->kind == SR_GET && status != 200)
        mx_log_warn(SUBSYS, "the session's stream was refused (HTTP %d)", status);
    return 0;
}

static int fe_write(struct mx_req *req, const void *p, size_t len)
{
    struct sreq *sr = req->conn;
    struct mx_stdio_front *f = sr->f;
    if (sr->body == B_JSON && !sr->broken) {
        if (mx_buf_append(&sr->json, p, len) != 0) {
            mx_log_warn(SUBSYS, "an answer over %u bytes was dropped", BODY_CAP);
            sr->broken = true;
            mx_buf_clear(&sr->json);
        }
    } else if (sr->body == B_SSE && !sr->broken) {
        if (mx_sse_decode(&sr->sse, p, len) != 0) {
            mx_log_warn(SUBSYS, "a message over %u bytes was dropped", EVENT_CAP);
            sr->broken = true;
        }
    }
    if (mx_buf_len(&f->out) > OUT_HIGH) {
        sr->blocked = true;
        return MX_EAGAIN;
    }
    return 0;
}

/* The refusal of a notification or response: there is nobody to answer
 * (JSON-RPC 2.0 §4.1), so it is logged. */
static void log_refusal(const struct sreq *sr)
{
    json_t *j = mx_rpc_parse(mx_buf_str(&sr->json));
    const char *why = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    mx_log_warn(SUBSYS, "a message from the client was refused (HTTP %d): %s", sr->status,
                why ? why : "no reason given");
    json_decref(j);
}

/*
 * An HTTP refusal of a client's message carries a JSON-RPC error; one for a
 * message whose id could not be read has none, where JSON-RPC 2.0 §5 wants
 * "id": null (a client's parser may insist on it).
 */
static void emit_refusal(struct sreq *sr)
{
    json_t *j = mx_rpc_parse(mx_buf_str(&sr->json));
    if (json_is_object(j) && json_object_get(j, "error") && !json_object_get(j, "id")) {
        json_object_set_new(j, "id", json_null());
        emit_json(sr->f, j);
        return;
    }
    json_decref(j);
    emit(sr->f, mx_buf_str(&sr->json));
}

/* MCP 2025-06-18, Streamable HTTP: later requests name the version. */
static void note_version(struct mx_stdio_front *f, struct mx_str answer)
{
    json_t *j = mx_rpc_parse(answer);
    const char *v =
        json_string_value(json_object_get(json_object_get(j, "result"), "protocolVersion"));
    if (v && strlen(v) < sizeof(f->version))
        snprintf(f->version, sizeof(f->version), "%s", v);
    json_decref(j);
}

static void fe_end(struct mx_req *req)
{
    struct sreq *sr = req->conn;
    if (sr->body == B_JSON && !sr->broken && mx_buf_len(&sr->json)) {
        if (sr->answers && sr->status >= 400) {
            emit_refusal(sr);
            sr->answered = true;
        } else if (sr->answers) {
            if (sr->is_init)
                note_version(sr->f, mx_buf_str(&sr->json));
            emit(sr->f, mx_buf_str(&sr->json));
            sr->answered = true;
        } else if (sr->status >= 300 && sr->kind == SR_POST) {
            log_refusal(sr);
        }
    }
    if (sr->answers && !sr->answered && sr->id && sr->status >= 300)
        mx_log_warn(SUBSYS, "a request ended with HTTP %d and no answer", sr->status);
    sreq_done(sr);
}

static void fe_reset(struct mx_req *req)
{
    struct sreq *sr = req->conn;
    /* The answer was cut off: the client still gets one for its id. */
    if (sr->answers && !sr->answered && sr->id) {
        emit_json(sr->f, mx_rpc_error_new(sr->id, MX_RPC_INTERNAL_ERROR,
                                          "mcplex lost the answer to this request", NULL));
        sr->answered = true;
    }
    sreq_done(sr);
}

static const struct mx_req_proto fe_proto = {fe_start, fe_write, fe_end, fe_reset};

/* ---- requests: the request side ---- */

static void add_header(struct mx_req *req, const char *name, const char *value)
{
    /* the head is a few short headers, far under MAX_HEAD */
    int rc = mx_req_add_header_piece(req, true, name, strlen(name));
    rc |= mx_req_add_header_piece(req, false, value, strlen(value));
    MX_ASSERT(rc == 0);
}

/* A request as a client of /mcp would send it, with the session's id once
 * there is one (MCP 2025-06-18, Streamable HTTP). */
static struct sreq *sreq_new(struct mx_stdio_front *f, enum sreq_kind kind, struct mx_str body)
{
    static const char *const methods[] = {
        [SR_POST] = "POST", [SR_GET] = "GET", [SR_DELETE] = "DELETE"};
    struct sreq *sr = mx_xcalloc(1, sizeof(*sr));
    sr->f = f;
    sr->kind = kind;
    mx_buf_init(&sr->json, BODY_CAP);
    struct mx_req *req = mx_req_new(&fe_proto, sr, MAX_HEAD, body.len ? body.len : 1);
    sr->req = req;
    snprintf(req->method, sizeof(req->method), "%s", methods[kind]);
    snprintf(req->peer, sizeof(req->peer), "stdio");
    req->version = 0; /* no HTTP: what MCP asks of HTTP headers does not apply */
    mx_buf_append(&req->url, "/mcp", 4);
    if (kind == SR_POST) {
        add_header(req, "Content-Type", "application/json");
        add_header(req, "Accept", "application/json, text/event-stream");
    } else if (kind == SR_GET) {
        add_header(req, "Accept", "text/event-stream");
    }
    if (f->sid[0])
        add_header(req, "Mcp-Session-Id", f->sid);
    if (f->sid[0] && f->version[0])
        add_header(req, "MCP-Protocol-Version", f->version);
    mx_req_finish_head(req);
    MX_ASSERT(mx_buf_append(&req->body, body.p, body.len) == 0);
    sr->next = f->reqs;
    f->reqs = sr;
    if (kind == SR_POST)
        f->posts++;
    return sr;
}

static void sreq_free(struct sreq *sr)
{
    mx_req_free(sr->req);
    mx_buf_clear(&sr->json);
    if (sr->body == B_SSE)
        mx_sse_decoder_clear(&sr->sse);
    json_decref(sr->id);
    free(sr);
}

static void reap(struct mx_stdio_front *f)
{
    for (struct sreq **pp = &f->reqs; *pp;) {
        struct sreq *sr = *pp;
        if (sr->done) {
            *pp = sr->next;
            sreq_free(sr);
        } else {
            pp = &sr->next;
        }
    }
}

/* ---- input ---- */

/*
 * MCP 2026-07-28 over stdio: a request is cancelled with
 * notifications/cancelled naming it (over HTTP, by closing its stream). The
 * request of |msg|'s requestId, when it is a 2026-07-28 one still running,
 * is ended as a closed stream ends it; returns whether it was.
 */
static bool cancel_modern(struct mx_stdio_front *f, const json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method == NULL || strcmp(method, "notifications/cancelled") != 0)
        return false;
    json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
    for (struct sreq *sr = f->reqs; sr; sr = sr->next) {
        if (sr->modern && !sr->done && sr->id && json_equal(sr->id, rid)) {
            sr->answered = true; /* a cancelled request is not answered */
            mx_req_notify_abort(sr->req);
            sreq_done(sr);
            return true;
        }
    }
    return false;
}

static bool names_version(const json_t *msg)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    return json_is_string(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
}

static void handle_line(struct mx_stdio_front *f, struct mx_str line)
{
    line = mx_str_trim(line);
    if (line.len == 0)
        return;
    json_t *msg = mx_rpc_parse(line);
    enum mx_rpc_kind kind = json_is_object(msg) ? mx_rpc_classify(msg) : MX_RPC_INVALID;
    if (kind == MX_RPC_NOTIFICATION && cancel_modern(f, msg)) {
        json_decref(msg);
        return;
    }
    struct sreq *sr = sreq_new(f, SR_POST, line);
    sr->modern = kind == MX_RPC_REQUEST && names_version(msg);
    sr->answers = kind == MX_RPC_REQUEST || kind == MX_RPC_INVALID;
    if (kind == MX_RPC_REQUEST) {
        sr->id = json_incref(json_object_get(msg, "id"));
        const char *method = json_string_value(json_object_get(msg, "method"));
        /* The session id comes with the answer: later messages need it,
         * so they wait (MCP 2025-06-18, Lifecycle: nothing but pings goes
         * before the answer anyway). */
        if (strcmp(method, "initialize") == 0 && f->sid[0] == '\0') {
            sr->is_init = true;
            f->init_wait = true;
        }
    }
    json_decref(msg);
    f->serve(sr->req, f->serve_data);
}

static void report_dropped(struct mx_stdio_front *f)
{
    uint64_t n = mx_linebuf_take_dropped(&f->in);
    if (n == 0)
        return;
    mx_log_warn(SUBSYS, "%llu messages over %zu bytes from the client were dropped",
                (unsigned long long)n, f->o.max_line);
    char text[128];
    snprintf(text, sizeof(text), "Invalid Request: a message over %zu bytes was dropped",
             f->o.max_line);
    /* its id is unknown: JSON-RPC 2.0 §5 answers with a null id */
    json_t *null = json_null();
    emit_json(f, mx_rpc_error_new(null, MX_RPC_INVALID_REQUEST, text, NULL));
    json_decref(null);
}

static void begin_drain(struct mx_stdio_front *f)
{
    if (f->state != F_OPEN)
        return;
    f->state = F_DRAINING;
    ev_io_stop(f->loop, &f->rd);
    f->until = ev_now(f->loop) + f->o.drain_s;
    ev_timer_set(&f->deadline, f->o.drain_s, 0.0);
    ev_timer_start(f->loop, &f->deadline);
    mx_log_debug(SUBSYS, "input ended; %zu messages still being answered", f->posts);
    schedule(f);
}

/* Serve the lines held while nothing holds them back; read more when they
 * are all taken. */
static void take_input(struct mx_stdio_front *f)
{
    struct mx_str line;
    while (f->state == F_OPEN && !f->init_wait && !f->out_dead && mx_buf_len(&f->out) <= OUT_HIGH &&
           f->posts < MAX_POSTS) {
        if (mx_linebuf_next(&f->in, &line)) {
            handle_line(f, line);
            continue;
        }
        if (!f->in_eof) {
            ev_io_start(f->loop, &f->rd);
            return;
        }
        if (!f->in_finished) {
            f->in_finished = true;
            if (mx_linebuf_finish(&f->in, &line)) {
                handle_line(f, line);
                continue;
            }
        }
        begin_drain(f);
        return;
    }
    ev_io_stop(f->loop, &f->rd);
}

static void rd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_stdio_front *f = mx_container_of(w, struct mx_stdio_front, rd);
    char buf[READ_CHUNK];
    (void)revents;
    ssize_t n = read(f->o.in_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    ev_io_stop(loop, w);
    if (n > 0) {
        mx_linebuf_feed(&f->in, buf, (size_t)n);
        report_dropped(f);
    } else {
        if (n < 0)
            mx_log_warn(SUBSYS, "reading stdin: %s; ending", strerror(errno));
        else
            mx_log_debug(SUBSYS, "end of stdin");
        f->in_eof = true;
    }
    take_input(f);
}

/* ---- the end ---- */

static void end_session(struct mx_stdio_front *f)
{
    f->state = F_ENDING;
    ev_io_stop(f->loop, &f->rd);
    if (f->sid[0]) {
        /* as DELETE /mcp: calls in flight are cancelled upstream and the
         * upstream sessions of this client end */
        struct sreq *sr = sreq_new(f, SR_DELETE, mx_str_make("", 0));
        f->serve(sr->req, f->serve_data);
    }
    ev_timer_stop(f->loop, &f->deadline);
    f->until = ev_now(f->loop) + FLUSH_LIMIT_S;
    ev_timer_set(&f->deadline, FLUSH_LIMIT_S, 0.0);
    ev_timer_start(f->loop, &f->deadline);
}

static void open_get(struct mx_stdio_front *f)
{
    f->get_opened = true;
    struct sreq *sr = sreq_new(f, SR_GET, mx_str_make("", 0));
    f->get = sr;
    f->serve(sr->req, f->serve_data);
}

/* Owed drains, while the output has room. */
static void drain_blocked(struct mx_stdio_front *f)
{
    for (struct sreq *sr = f->reqs; sr && mx_buf_len(&f->out) <= OUT_LOW; sr = sr->next) {
        if (sr->blocked && !sr->done) {
            sr->blocked = false;
            mx_req_notify_drain(sr->req);
        }
    }
}

static void work(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_stdio_front *f = mx_container_of(w, struct mx_stdio_front, kick);
    (void)revents;
    reap(f);
    if (f->state == F_DONE)
        return;
    if (mx_buf_len(&f->out) <= OUT_LOW)
        drain_blocked(f);
    if (f->state == F_OPEN && f->out_dead)
        begin_drain(f);
    if (f->state == F_OPEN) {
        if (f->sid[0] && !f->get_opened)
            open_get(f);
        take_input(f);
    }
    ev_tstamp now = ev_now(loop);
    if (f->state == F_DRAINING && (f->posts == 0 || f->out_dead || now >= f->until))
        end_session(f);
    if (f->state == F_ENDING && (mx_buf_len(&f->out) == 0 || f->out_dead || now >= f->until)) {
        if (mx_buf_len(&f->out))
            mx_log_warn(SUBSYS, "%zu bytes for the client were not read in time",
                        mx_buf_len(&f->out));
        f->state = F_DONE;
        ev_io_stop(loop, &f->rd);
        ev_io_stop(loop, &f->wr);
        ev_timer_stop(loop, &f->deadline);
        f->done(f, f->data);
    }
}

static void deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_stdio_front *f = mx_container_of(w, struct mx_stdio_front, deadline);
    (void)loop;
    (void)revents;
    schedule(f);
}

void mx_stdio_front_close(struct mx_stdio_front *f)
{
    if (f->state == F_OPEN) {
        begin_drain(f);
    } else if (f->state == F_DRAINING) {
        f->until = ev_now(f->loop);
        schedule(f);
    }
}

/* ---- setup ---- */

static int nonblock(int fd, int *old)
{
    *old = fcntl(fd, F_GETFL);
    if (*old < 0 || fcntl(fd, F_SETFL, *old | O_NONBLOCK) < 0)
        return MX_EIO;
    return 0;
}

struct mx_stdio_front *mx_stdio_front_new(struct ev_loop *loop, mx_req_cb serve, void *serve_data,
                                          const struct mx_stdio_front_opts *o,
                                          mx_stdio_front_done_cb done, void *data)
{
    struct mx_stdio_front *f = mx_xcalloc(1, sizeof(*f));
    f->loop = loop;
    f->serve = serve;
    f->serve_data = serve_data;
    f->o = *o;
    f->done = done;
    f->data = data;
    f->in_flags = f->out_flags = -1;
    if (nonblock(o->in_fd, &f->in_flags) != 0 || nonblock(o->out_fd, &f->out_flags) != 0)
        mx_log_warn(SUBSYS, "cannot make stdin and stdout non-blocking: %s", strerror(errno));
    mx_linebuf_init(&f->in, o->max_line);
    mx_buf_init(&f->out, OUT_CAP);
    ev_io_init(&f->rd, rd_cb, o->in_fd, EV_READ);
    ev_io_init(&f->wr, wr_cb, o->out_fd, EV_WRITE);
    ev_init(&f->kick, work);
    ev_init(&f->deadline, deadline_cb);
    ev_io_start(loop, &f->rd);
    return f;
}

void mx_stdio_front_free(struct mx_stdio_front *f)
{
    if (f == NULL)
        return;
    ev_io_stop(f->loop, &f->rd);
    ev_io_stop(f->loop, &f->wr);
    ev_timer_stop(f->loop, &f->kick);
    ev_timer_stop(f->loop, &f->deadline);
    for (struct sreq *sr = f->reqs; sr; sr = sr->next) {
        if (!sr->done) {
            sr->done = true;
            mx_req_notify_abort(sr->req);
        }
    }
    while (f->reqs) {
        struct sreq *sr = f->reqs;
        f->reqs = sr->next;
        sreq_free(sr);
    }
    mx_linebuf_clear(&f->in);
    mx_buf_clear(&f->out);
    if (f->in_flags >= 0)
        fcntl(f->o.in_fd, F_SETFL, f->in_flags);
    if (f->out_flags >= 0)
        fcntl(f->o.out_fd, F_SETFL, f->out_flags);
    free(f);
}
