/* SPDX-License-Identifier: MIT */
/*
 * The stdio front end against a scripted /mcp (fake_serve, the handler the
 * front end is given, stands for the aggregate): input held until
 * initialize is answered, the session id and protocol version on every
 * later request, the GET stream opened once, answers as single lines (a
 * multi-line JSON body re-encoded, SSE events one by one, id null on a
 * refusal without an id, nothing for a notification), an over-long line
 * refused, output backpressure (MX_EAGAIN at the watermark, input not read
 * meanwhile, on_drain once the client reads), and the end of input:
 * requests in flight finish, DELETE, done, no request left.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>
#include <jansson.h>

#include "err.h"
#include "req.h"
#include "req_int.h"
#include "stdio_front.h"

/* ---- a scripted /mcp ---- */

struct fake_mcp {
    int posts;
    int gets;
    int deletes;
    int drains;
    char last_sid[64];
    char last_version[32];
    char last_method[64];
    struct mx_req *held; /* initialize, answered by the test */
    struct mx_req *slow; /* a call answered by the test */
    struct mx_req *get;
};

static void copy_header(const struct mx_req *req, const char *name, char *out, size_t cap)
{
    const struct mx_str *v = mx_req_header(req, name);
    snprintf(out, cap, "%.*s", v ? (int)v->len : 0, v ? v->p : "");
}

static void get_drain(struct mx_req *req, void *data)
{
    struct fake_mcp *m = data;
    (void)req;
    m->drains++;
}

static void get_abort(struct mx_req *req, void *data)
{
    struct fake_mcp *m = data;
    (void)req;
    m->get = NULL;
}

static void respond(struct mx_req *req, int status, const char *body)
{
    mx_req_respond(req, status, NULL, 0, body ? "application/json" : NULL, body,
                   body ? strlen(body) : 0);
}

static void fake_serve(struct mx_req *req, void *data)
{
    struct fake_mcp *m = data;
    static const struct mx_hdr_out sse[] = {{"Content-Type", "text/event-stream"}};
    struct mx_str method = mx_req_method(req);
    copy_header(req, "Mcp-Session-Id", m->last_sid, sizeof(m->last_sid));
    copy_header(req, "MCP-Protocol-Version", m->last_version, sizeof(m->last_version));
    if (mx_str_eq(method, MX_STR_LIT("GET"))) {
        m->gets++;
        assert_int_equal(mx_req_start(req, 200, sse, 1, -1), 0);
        mx_req_set_handler(req, get_drain, get_abort, m);
        m->get = req;
        return;
    }
    if (mx_str_eq(method, MX_STR_LIT("DELETE"))) {
        m->deletes++;
        if (m->get) {
            struct mx_req *g = m->get;
            m->get = NULL;
            mx_req_end(g);
        }
        respond(req, 200, NULL);
        return;
    }
    m->posts++;
    struct mx_str body = mx_req_body(req);
    json_t *msg = json_loadb(body.p, body.len, 0, NULL);
    const char *rpc = json_string_value(json_object_get(msg, "method"));
    snprintf(m->last_method, sizeof(m->last_method), "%s", rpc ? rpc : "");
    json_t *id = json_object_get(msg, "id");
    char *text = NULL;
    if (msg == NULL) {
        respond(req, 400,
                "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse "
                "error\"}}");
    } else if (rpc && id == NULL) {
        respond(req, 202, NULL);
    } else if (rpc && strcmp(rpc, "initialize") == 0) {
        m->held = req;
    } else if (rpc && strcmp(rpc, "slow") == 0) {
        m->slow = req;
    } else if (rpc && strcmp(rpc, "pretty") == 0) {
        /* a body over several lines must still go out as one */
        json_t *r = json_pack("{s:s, s:O, s:{s:s}}", "jsonrpc", "2.0", "id", id, "result", "text",
                              "two\nlines");
        text = json_dumps(r, JSON_INDENT(2));
        json_decref(r);
        respond(req, 200, text);
    } else if (rpc && strcmp(rpc, "stream") == 0) {
        assert_int_equal(mx_req_start(req, 200, sse, 1, -1), 0);
        const char *ev = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                         "progress\",\"params\":{\"progress\":1}}\n\n: a comment\n\n";
        assert_int_equal(mx_req_write(req, ev, strlen(ev)), 0);
        char *answer = json_dumps(id, JSON_ENCODE_ANY);
        text = calloc(1, strlen(answer) + 64);
        snprintf(text, strlen(answer) + 64,
                 "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", answer);
        free(answer);
        assert_int_equal(mx_req_write(req, text, strlen(text)), 0);
        mx_req_end(req);
    } else {
        char *i = json_dumps(id, JSON_ENCODE_ANY);
        text = calloc(1, strlen(i) + 64);
        snprintf(text, strlen(i) + 64, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}", i);
        free(i);
        respond(req, 200, text);
    }
    free(text);
    json_decref(msg);
}

/* ---- the test's side of the pipes ---- */

struct io {
    struct ev_loop *loop;
    int to_front; /* the test writes the client's lines here */
    int from_front;
    int in_fd;
    int out_fd;
    struct mx_stdio_front *f;
    struct fake_mcp m;
    int done;
    char got[4 * 1024 * 1024];
    size_t got_len;
};

static void on_done(struct mx_stdio_front *f, void *data)
{
    struct io *io = data;
    (void)f;
    io->done++;
}

static void io_start(struct io *io, size_t max_line)
{
    int a[2], b[2];
    memset(io, 0, sizeof(*io));
    io->loop = ev_default_loop(0);
    assert_int_equal(pipe2(a, O_CLOEXEC), 0);
    assert_int_equal(pipe2(b, O_CLOEXEC), 0);
    io->to_front = a[1];
    io->in_fd = a[0];
    io->out_fd = b[1];
    io->from_front = b[0];
    assert_int_equal(fcntl(io->from_front, F_SETFL, O_NONBLOCK), 0);
    struct mx_stdio_front_opts o = {io->in_fd, io->out_fd, max_line, 5.0};
    io->f = mx_stdio_front_new(io->loop, fake_serve, &io->m, &o, on_done, io);
}

static void io_send(struct io *io, const char *text)
{
    assert_int_equal(write(io->to_front, text, strlen(text)), (ssize_t)strlen(text));
}

/* Run the loop a little, reading what the front end wrote. */
static void io_spin(struct io *io, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        ev_run(io->loop, EVRUN_NOWAIT);
        ssize_t n;
        while ((n = read(io->from_front, io->got + io->got_len,
                         sizeof(io->got) - 1 - io->got_len)) > 0)
            io->got_len += (size_t)n;
        io->got[io->got_len] = '\0';
    }
}

/* The lines written so far, each parsed (a failure if one is not JSON);
 * they are consumed. */
static json_t *io_lines(struct io *io)
{
    json_t *all = json_array();
    char *p = io->got;
    char *nl;
    while ((nl = memchr(p, '\n', io->got_len - (size_t)(p - io->got))) != NULL) {
        json_t *m = json_loadb(p, (size_t)(nl - p), 0, NULL);
        if (!json_is_object(m))
            fail_msg("not a JSON object: %.*s", (int)(nl - p), p);
        json_array_append_new(all, m);
        p = nl + 1;
    }
    assert_int_equal(p - io->got, io->got_len); /* whole lines only */
    io->got_len = 0;
    return all;
}

static void io_end(struct io *io)
{
    mx_stdio_front_free(io->f);
    close(io->to_front);
    close(io->in_fd);
    close(io->out_fd);
    close(io->from_front);
    assert_int_equal(mx_req_live_cnt(), 0);
}

static void answer_init(struct io *io)
{
    static const struct mx_hdr_out h[] = {{"Mcp-Session-Id", "0123abcd"}};
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-"
                       "18\"}}";
    struct mx_req *req = io->m.held;
    io->m.held = NULL;
    mx_req_respond(req, 200, h, 1, "application/json", body, strlen(body));
}

static void init_session(struct io *io)
{
    io_send(io, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n"
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n"
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    io_spin(io, 5);
    /* the rest waits for the session id */
    assert_int_equal(io->m.posts, 1);
    assert_non_null(io->m.held);
    assert_string_equal(io->m.last_sid, "");
    answer_init(io);
    io_spin(io, 5);
    assert_int_equal(io->m.posts, 3);
    assert_int_equal(io->m.gets, 1);
    assert_string_equal(io->m.last_sid, "0123abcd");
    assert_string_equal(io->m.last_version, "2025-06-18");
    json_t *lines = io_lines(io);
    /* the initialize answer first; nothing for the notification */
    assert_int_equal(json_array_size(lines), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 0), "id")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 1), "id")), 2);
    json_decref(lines);
}

static void test_stdio_front_session(void **state)
{
    struct io *io = calloc(1, sizeof(*io));
    (void)state;
    io_start(io, 4096);
    init_session(io);

    io_send(io, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"pretty\"}\n"
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"stream\"}\n"
                "not json\n"
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n");
    io_spin(io, 5);
    /* something of the session's own, on its GET stream */
    const char *ev = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"
                     "\n\n";
    assert_int_equal(mx_req_write(io->m.get, ev, strlen(ev)), 0);
    io_spin(io, 3);
    json_t *lines = io_lines(io);
    assert_int_equal(json_array_size(lines), 5);
    json_t *pretty = json_array_get(lines, 0);
    assert_string_equal(json_string_value(json_object_get(pretty, "id")), "p");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(pretty, "result"), "text")),
        "two\nlines");
    assert_string_equal(json_string_value(json_object_get(json_array_get(lines, 1), "method")),
                        "notifications/progress");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 2), "id")), 3);
    json_t *parse = json_array_get(lines, 3);
    assert_true(json_is_null(json_object_get(parse, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(parse, "error"), "code")),
                     -32700);
    assert_string_equal(json_string_value(json_object_get(json_array_get(lines, 4), "method")),
                        "notifications/tools/list_changed");
    json_decref(lines);
    assert_int_equal(io->m.gets, 1); /* opened once */

    /* the end of input: the slow call finishes first, then DELETE */
    io_send(io, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"slow\"}");
    close(io->to_front);
    io->to_front = open("/dev/null", O_WRONLY | O_CLOEXEC);
    io_spin(io, 5);
    assert_non_null(io->m.slow); /* the last line had no newline: served all the same */
    assert_int_equal(io->m.deletes, 0);
    assert_int_equal(io->done, 0);
    respond(io->m.slow, 200, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
    io_spin(io, 5);
    assert_int_equal(io->m.deletes, 1);
    assert_int_equal(io->done, 1);
    lines = io_lines(io);
    assert_int_equal(json_array_size(lines), 1);
    json_decref(lines);
    io_end(io);
    free(io);
}

static void test_stdio_front_long_line(void **state)
{
    struct io *io = calloc(1, sizeof(*io));
    char line[256];
    (void)state;
    io_start(io, 100);
    init_session(io);
    memset(line, 'x', sizeof(line));
    line[sizeof(line) - 1] = '\n';
    assert_int_equal(write(io->to_front, line, sizeof(line)), (ssize_t)sizeof(line));
    io_send(io, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
    io_spin(io, 5);
    json_t *lines = io_lines(io);
    assert_int_equal(json_array_size(lines), 2);
    json_t *err = json_array_get(lines, 0);
    assert_true(json_is_null(json_object_get(err, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(err, "error"), "code")),
                     -32600);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 1), "id")), 7);
    json_decref(lines);
    /* close: no EOF needed */
    mx_stdio_front_close(io->f);
    io_spin(io, 5);
    assert_int_equal(io->m.deletes, 1);
    assert_int_equal(io->done, 1);
    io_end(io);
    free(io);
}

static void test_stdio_front_backpressure(void **state)
{
    struct io *io = calloc(1, sizeof(*io));
    char ev[4096 + 64];
    (void)state;
    io_start(io, 4096);
    init_session(io);
    /* a client that reads nothing: events go out until the watermark */
    char data[4096];
    memset(data, 'd', sizeof(data));
    snprintf(ev, sizeof(ev), "data: {\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"%.*s\"}\n\n",
             4000, data);
    size_t written = 0;
    int rc = 0;
    while (rc == 0 && written < 8u * 1024 * 1024) {
        rc = mx_req_write(io->m.get, ev, strlen(ev));
        written += strlen(ev);
    }
    assert_int_equal(rc, MX_EAGAIN);
    assert_true(written > 1024 * 1024);          /* not before the high watermark */
    assert_true(written < 1024 * 1024 + 200000); /* and soon after it */
    /* input waits while the output is backed up */
    int posts = io->m.posts;
    io_send(io, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
    ev_run(io->loop, EVRUN_NOWAIT);
    ev_run(io->loop, EVRUN_NOWAIT);
    assert_int_equal(io->m.posts, posts);
    assert_int_equal(io->m.drains, 0);
    /* the client reads: on_drain, and the ping is served */
    for (int i = 0; i < 200 && (io->m.drains == 0 || io->m.posts == posts); i++) {
        io_spin(io, 1);
        io->got_len = 0; /* whole events; not checked here */
    }
    assert_int_equal(io->m.drains, 1);
    assert_int_equal(io->m.posts, posts + 1);
    mx_stdio_front_close(io->f);
    for (int i = 0; i < 500 && io->done == 0; i++) {
        io_spin(io, 1);
        io->got_len = 0;
    }
    assert_int_equal(io->done, 1);
    io_end(io);
    free(io);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stdio_front_session),
        cmocka_unit_test(test_stdio_front_long_line),
        cmocka_unit_test(test_stdio_front_backpressure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
