/* SPDX-License-Identifier: MIT */
/*
 * Tests for proxy/uclient: the libcurl multi client on a libev loop. Each
 * test starts tiny HTTP/1.1 responders on 127.0.0.1:0, driven by the same
 * loop with canned bytes, so what the client sent and how often can be
 * counted on the server side. Every wait is bounded by a watchdog; teardown
 * checks that no request is left and that every socket was closed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <ev.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "num.h"
#include "str.h"
#include "uclient.h"

#define WATCHDOG_S  5.0
#define BIG_LEN     (1024u * 1024u)
#define SRV_OUT_CAP (8u * 1024u * 1024u)
#define SRV_IN_CAP  (4u * 1024u * 1024u)
#define CANARY      "mx-canary-5f0c1d2e9b"

/* ---- a tiny HTTP/1.1 responder ---- */

enum srv_mode {
    SRV_JSON,        /* 200 with a JSON body, keep-alive */
    SRV_SLOW_JSON,   /* the same, 100 ms after the request */
    SRV_CHUNKED,     /* chunked body in pieces 100 ms apart */
    SRV_FOREVER,     /* chunks every 20 ms, never ending */
    SRV_BIG,         /* BIG_LEN bytes of a known pattern */
    SRV_DROP,        /* read the request, close without a byte */
    SRV_DROP_SECOND, /* like SRV_JSON, but the second request is dropped */
    SRV_CLOSE_IDLE,  /* answer, then close the idle connection silently */
    SRV_SILENT,      /* read the request, never answer */
    SRV_REDIRECT,    /* 302 to another path */
    SRV_EARLY_HINTS, /* 103 with a Link header, then 200 */
    SRV_BAD_REQUEST, /* any first bytes (a TLS hello too): 400, then close */
    SRV_TO_CLOSE,    /* 200 without a length: the body ends with the close */
    SRV_EXTRA,       /* 200, then bytes no request asked for */
    SRV_CTL_VALUE,   /* a header value with a control byte in it */
    SRV_HUGE_HEAD,   /* a response head over 64 KiB */
};

struct srv;

struct sconn {
    struct srv *srv;
    int fd;
    ev_io rio;
    ev_io wio;
    ev_timer tick;
    struct mx_buf in;
    struct mx_buf out;
    int piece;
    bool close_after_write;
    struct sconn *next;
};

struct srv {
    struct ev_loop *loop;
    enum srv_mode mode;
    int lfd;
    int port;
    ev_io aio;
    struct sconn *conns;
    int accepted; /* connections */
    int requests; /* complete requests read */
    int pending;  /* requests read and not yet answered */
    int max_pending;
    int eofs;           /* connections the client closed */
    bool finished;      /* the last byte of a streamed body was written */
    struct mx_buf head; /* the last request head */
    struct mx_buf body; /* the last request body */
};

static void sconn_close(struct sconn *sc)
{
    struct srv *s = sc->srv;
    for (struct sconn **p = &s->conns; *p; p = &(*p)->next) {
        if (*p == sc) {
            *p = sc->next;
            break;
        }
    }
    ev_io_stop(s->loop, &sc->rio);
    ev_io_stop(s->loop, &sc->wio);
    ev_timer_stop(s->loop, &sc->tick);
    close(sc->fd);
    mx_buf_clear(&sc->in);
    mx_buf_clear(&sc->out);
    free(sc);
}

static void sconn_queue(struct sconn *sc, const char *p, size_t len)
{
    assert_int_equal(mx_buf_append(&sc->out, p, len), 0);
    ev_io_start(sc->srv->loop, &sc->wio);
}

static void sconn_queue_str(struct sconn *sc, const char *s)
{
    sconn_queue(sc, s, strlen(s));
}

static void on_sconn_write(struct ev_loop *loop, ev_io *w, int revents)
{
    struct sconn *sc = mx_container_of(w, struct sconn, wio);
    (void)revents;
    while (mx_buf_len(&sc->out)) {
        ssize_t n = send(sc->fd, mx_buf_data(&sc->out), mx_buf_len(&sc->out), MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            sconn_close(sc);
            return;
        }
        mx_buf_consume(&sc->out, (size_t)n);
    }
    ev_io_stop(loop, w);
    if (sc->close_after_write)
        sconn_close(sc);
}

static const char json_body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";

static void answer_json(struct sconn *sc)
{
    char head[256];
    snprintf(head, sizeof(head),
             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Test: yes\r\n"
             "Content-Length: %zu\r\n\r\n",
             strlen(json_body));
    sconn_queue_str(sc, head);
    sconn_queue_str(sc, json_body);
    sc->srv->pending--;
}

static void on_sconn_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct sconn *sc = mx_container_of(w, struct sconn, tick);
    struct srv *s = sc->srv;
    (void)loop;
    (void)revents;
    sc->piece++;
    switch (s->mode) {
    case SRV_SLOW_JSON:
        ev_timer_stop(loop, w);
        answer_json(sc);
        break;
    case SRV_CHUNKED:
        if (sc->piece == 1) {
            sconn_queue_str(sc, "3\r\nbbb\r\n");
        } else if (sc->piece == 2) {
            sconn_queue_str(sc, "3\r\nccc\r\n");
        } else {
            ev_timer_stop(loop, w);
            sconn_queue_str(sc, "0\r\n\r\n");
            s->finished = true;
        }
        break;
    case SRV_FOREVER:
        sconn_queue_str(sc, "5\r\nhello\r\n");
        break;
    default:
        ev_timer_stop(loop, w);
        break;
    }
}

/* Returns false when |sc| was closed. */
static bool respond(struct sconn *sc)
{
    struct srv *s = sc->srv;
    char head[256];
    switch (s->mode) {
    case SRV_JSON:
        answer_json(sc);
        break;
    case SRV_SLOW_JSON:
        ev_timer_set(&sc->tick, 0.1, 0.);
        ev_timer_start(s->loop, &sc->tick);
        break;
    case SRV_CHUNKED:
    case SRV_FOREVER:
        sconn_queue_str(sc, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n3\r\naaa\r\n");
        ev_timer_set(&sc->tick, s->mode == SRV_CHUNKED ? 0.1 : 0.02,
                     s->mode == SRV_CHUNKED ? 0.1 : 0.02);
        ev_timer_start(s->loop, &sc->tick);
        break;
    case SRV_BIG: {
        snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                 "Content-Length: %u\r\n\r\n",
                 BIG_LEN);
        sconn_queue_str(sc, head);
        char *big = mx_xmalloc(BIG_LEN);
        for (size_t i = 0; i < BIG_LEN; i++)
            big[i] = (char)(i % 251);
        sconn_queue(sc, big, BIG_LEN);
        free(big);
        break;
    }
    case SRV_DROP:
        sconn_close(sc);
        return false;
    case SRV_DROP_SECOND:
        if (s->requests == 2) {
            sconn_close(sc);
            return false;
        }
        answer_json(sc);
        break;
    case SRV_CLOSE_IDLE:
        answer_json(sc);
        sc->close_after_write = true;
        break;
    case SRV_SILENT:
        break;
    case SRV_REDIRECT:
        snprintf(head, sizeof(head),
                 "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/elsewhere\r\n"
                 "Content-Length: 5\r\n\r\nmoved",
                 s->port);
        sconn_queue_str(sc, head);
        break;
    case SRV_EARLY_HINTS:
        sconn_queue_str(sc, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                            "HTTP/1.1 200 OK\r\nX-Final: 1\r\nContent-Length: 2\r\n\r\nok");
        break;
    case SRV_BAD_REQUEST:
        break; /* answered on its first bytes (on_sconn_read) */
    case SRV_TO_CLOSE:
        sconn_queue_str(sc, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end");
        sc->close_after_write = true;
        break;
    case SRV_EXTRA:
        answer_json(sc);
        sconn_queue_str(sc, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        break;
    case SRV_CTL_VALUE:
        sconn_queue_str(sc, "HTTP/1.1 200 OK\r\nX-Evil: a\x01b\r\nContent-Length: 2\r\n\r\nok");
        break;
    case SRV_HUGE_HEAD: {
        sconn_queue_str(sc, "HTTP/1.1 200 OK\r\n");
        char line[1100];
        memset(line, 'v', sizeof(line));
        memcpy(line, "X-Big: ", 7);
        memcpy(line + sizeof(line) - 2, "\r\n", 2);
        for (int i = 0; i < 70; i++)
            sconn_queue(sc, line, sizeof(line));
        sconn_queue_str(sc, "Content-Length: 2\r\n\r\nok");
        break;
    }
    }
    return true;
}

static bool line_is(const char *p, size_t len, const char *name)
{
    size_t n = strlen(name);
    return len >= n && strncasecmp(p, name, n) == 0;
}

/* Consume complete requests from sc->in; returns false when |sc| was closed. */
static bool parse_requests(struct sconn *sc)
{
    struct srv *s = sc->srv;
    for (;;) {
        const char *p = mx_buf_data(&sc->in);
        size_t len = mx_buf_len(&sc->in);
        const char *end = memmem(p, len, "\r\n\r\n", 4);
        if (!end)
            return true;
        size_t head_len = (size_t)(end - p) + 4;
        size_t body_len = 0;
        for (const char *l = p; l < end;) {
            const char *nl = memmem(l, (size_t)(end - l) + 2, "\r\n", 2);
            if (line_is(l, (size_t)(nl - l), "content-length:")) {
                struct mx_str v = mx_str_trim(mx_str_make(l + 15, (size_t)(nl - l) - 15));
                int64_t n = 0;
                assert_int_equal(mx_num_parse(v.p, v.len, 0, SRV_IN_CAP, &n), 0);
                body_len = (size_t)n;
            }
            l = nl + 2;
        }
        if (len < head_len + body_len)
            return true;
        mx_buf_reset(&s->head);
        mx_buf_reset(&s->body);
        assert_int_equal(mx_buf_append(&s->head, p, head_len), 0);
        assert_int_equal(mx_buf_append(&s->body, p + head_len, body_len), 0);
        mx_buf_consume(&sc->in, head_len + body_len);
        s->requests++;
        s->pending++;
        if (s->pending > s->max_pending)
            s->max_pending = s->pending;
        if (!respond(sc))
            return false;
    }
}

static void on_sconn_read(struct ev_loop *loop, ev_io *w, int revents)
{
    struct sconn *sc = mx_container_of(w, struct sconn, rio);
    char buf[16384];
    (void)loop;
    (void)revents;
    ssize_t n = recv(sc->fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        sc->srv->eofs++;
        sconn_close(sc);
        return;
    }
    assert_int_equal(mx_buf_append(&sc->in, buf, (size_t)n), 0);
    if (sc->srv->mode == SRV_BAD_REQUEST) {
        static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        assert_int_equal(send(sc->fd, bad, sizeof(bad) - 1, MSG_NOSIGNAL), sizeof(bad) - 1);
        sconn_close(sc);
        return;
    }
    parse_requests(sc);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    struct srv *s = mx_container_of(w, struct srv, aio);
    (void)revents;
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct sconn *sc = mx_xcalloc(1, sizeof(*sc));
    sc->srv = s;
    sc->fd = fd;
    mx_buf_init(&sc->in, SRV_IN_CAP);
    mx_buf_init(&sc->out, SRV_OUT_CAP);
    ev_io_init(&sc->rio, on_sconn_read, fd, EV_READ);
    ev_io_init(&sc->wio, on_sconn_write, fd, EV_WRITE);
    ev_init(&sc->tick, on_sconn_tick);
    ev_io_start(loop, &sc->rio);
    sc->next = s->conns;
    s->conns = sc;
    s->accepted++;
}

static struct srv *srv_new(struct ev_loop *loop, enum srv_mode mode)
{
    struct srv *s = mx_xcalloc(1, sizeof(*s));
    s->loop = loop;
    s->mode = mode;
    mx_buf_init(&s->head, 64 * 1024);
    mx_buf_init(&s->body, SRV_IN_CAP);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(s->lfd, 16), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &sl), 0);
    s->port = ntohs(sa.sin_port);
    ev_io_init(&s->aio, on_accept, s->lfd, EV_READ);
    ev_io_start(loop, &s->aio);
    return s;
}

static void srv_free(struct srv *s)
{
    if (!s)
        return;
    while (s->conns)
        sconn_close(s->conns);
    ev_io_stop(s->loop, &s->aio);
    close(s->lfd);
    mx_buf_clear(&s->head);
    mx_buf_clear(&s->body);
    free(s);
}

static bool srv_head_has(const struct srv *s, const char *line)
{
    char want[512];
    snprintf(want, sizeof(want), "\r\n%s\r\n", line);
    return memmem(mx_buf_data(&s->head), mx_buf_len(&s->head), want, strlen(want)) != NULL;
}

static bool srv_head_has_name(const struct srv *s, const char *name)
{
    const char *p = mx_buf_data(&s->head);
    size_t len = mx_buf_len(&s->head);
    for (const char *l = p; l < p + len;) {
        const char *nl = memmem(l, (size_t)(p + len - l), "\r\n", 2);
        if (!nl)
            break;
        if (line_is(l, (size_t)(nl - l), name))
            return true;
        l = nl + 2;
    }
    return false;
}

/* ---- the client side ---- */

#define MAX_SRV 3

struct tc {
    struct ev_loop *loop;
    struct mx_uclient *c;
    struct srv *srv[MAX_SRV];
    int fds_before;
    bool expired;
};

struct rsp {
    struct tc *t;
    struct srv *srv; /* for streaming checks */
    struct mx_ureq *u;
    int heads;
    long status;
    struct mx_buf hdrs; /* "name: value\n" per header */
    struct mx_buf body;
    int datas;
    int dones;
    bool done;
    int err;
    struct mx_ureq_info info;
    bool first_data_before_finish;
    bool late; /* a callback after cancel */
    bool cancelled;
    int cancel_at_data; /* cancel inside on_data number N */
    bool cancel_at_head;
    struct rsp *cancel_other; /* cancel this one inside our first on_data */
    struct rsp *start_other;  /* start this one inside our on_head */
    const struct mx_ureq_opts *start_other_opts;
    bool pause_each;
    bool paused;
    bool data_while_paused;
    int pauses;
    ev_timer resume;
};

static void on_resume(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rsp *r = mx_container_of(w, struct rsp, resume);
    (void)loop;
    (void)revents;
    r->paused = false;
    mx_ureq_resume(r->u);
}

static void rsp_init(struct rsp *r, struct tc *t)
{
    memset(r, 0, sizeof(*r));
    r->t = t;
    mx_buf_init(&r->hdrs, 64 * 1024);
    mx_buf_init(&r->body, 4 * 1024 * 1024);
    ev_init(&r->resume, on_resume);
}

static void rsp_clear(struct rsp *r)
{
    ev_timer_stop(r->t->loop, &r->resume);
    mx_buf_clear(&r->hdrs);
    mx_buf_clear(&r->body);
}

static bool rsp_has_header(const struct rsp *r, const char *line)
{
    char want[512];
    snprintf(want, sizeof(want), "%s\n", line);
    return memmem(mx_buf_data(&r->hdrs), mx_buf_len(&r->hdrs), want, strlen(want)) != NULL;
}

static const struct mx_ureq_cbs test_cbs;

static void on_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data)
{
    struct rsp *r = data;
    assert_ptr_equal(u, r->u);
    if (r->cancelled)
        r->late = true;
    r->heads++;
    r->status = status;
    for (size_t i = 0; i < cnt; i++) {
        mx_buf_append(&r->hdrs, hdrs[i].name.p, hdrs[i].name.len);
        mx_buf_append(&r->hdrs, ": ", 2);
        mx_buf_append(&r->hdrs, hdrs[i].value.p, hdrs[i].value.len);
        mx_buf_append(&r->hdrs, "\n", 1);
    }
    if (r->cancel_at_head) {
        mx_ureq_cancel(u);
        r->cancelled = true;
    }
    if (r->start_other) {
        struct rsp *o = r->start_other;
        assert_int_equal(mx_ureq_start(r->t->c, r->start_other_opts, &test_cbs, o, &o->u), 0);
        /* Not even from inside another request's callback. */
        assert_int_equal(o->heads + o->dones, 0);
    }
}

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    struct rsp *r = data;
    assert_ptr_equal(u, r->u);
    if (r->cancelled)
        r->late = true;
    if (r->paused)
        r->data_while_paused = true;
    if (r->heads != 1)
        r->late = true; /* on_head must come first */
    r->datas++;
    if (r->datas == 1 && r->srv)
        r->first_data_before_finish = !r->srv->finished;
    assert_int_equal(mx_buf_append(&r->body, p, len), 0);
    if (r->cancel_other && r->datas == 1) {
        mx_ureq_cancel(r->cancel_other->u);
        r->cancel_other->cancelled = true;
    }
    if (r->cancel_at_data && r->datas == r->cancel_at_data) {
        mx_ureq_cancel(u);
        r->cancelled = true;
        return 0;
    }
    if (r->pause_each) {
        r->paused = true;
        r->pauses++;
        ev_timer_set(&r->resume, 0.001, 0.);
        ev_timer_start(r->t->loop, &r->resume);
        return MX_EAGAIN;
    }
    return 0;
}

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct rsp *r = data;
    assert_ptr_equal(u, r->u);
    if (r->cancelled)
        r->late = true;
    r->dones++;
    r->done = true;
    r->err = err;
    r->info = *info;
    /* |u| is freed when we return: no resume may reach it. */
    ev_timer_stop(r->t->loop, &r->resume);
    r->u = NULL;
}

static const struct mx_ureq_cbs test_cbs = {on_head, on_data, on_done};

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct tc *t = w->data;
    (void)loop;
    (void)revents;
    t->expired = true;
}

/* Run the loop until *|flag| or the watchdog; false if the watchdog fired. */
static bool run_until(struct tc *t, const bool *flag)
{
    ev_timer dog;
    ev_timer_init(&dog, on_watchdog, WATCHDOG_S, 0.);
    dog.data = t;
    t->expired = false;
    ev_timer_start(t->loop, &dog);
    while (!*flag && !t->expired)
        ev_run(t->loop, EVRUN_ONCE);
    ev_timer_stop(t->loop, &dog);
    return *flag;
}

static void on_elapsed(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    *(bool *)w->data = true;
}

/* Let the loop run for |s| seconds (stray bytes arrive, timers fire). */
static void run_for(struct tc *t, double s)
{
    bool elapsed = false;
    ev_timer tm;
    ev_timer_init(&tm, on_elapsed, s, 0.);
    tm.data = &elapsed;
    ev_timer_start(t->loop, &tm);
    assert_true(run_until(t, &elapsed));
    ev_timer_stop(t->loop, &tm);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int setup(void **state)
{
    struct tc *t = mx_xcalloc(1, sizeof(*t));
    t->fds_before = count_fds();
    t->loop = ev_loop_new(EVFLAG_AUTO);
    if (!t->loop)
        return -1;
    t->c = mx_uclient_new(t->loop);
    if (!t->c)
        return -1;
    *state = t;
    return 0;
}

/* The same client with plain HTTP/1.1 through libcurl too. */
static int setup_curl(void **state)
{
    int rc = setup(state);
    if (rc == 0)
        mx_uclient_own_h1(((struct tc *)*state)->c, false);
    return rc;
}

static int teardown(void **state)
{
    struct tc *t = *state;
    if (t->c) {
        assert_int_equal(mx_uclient_active(t->c), 0);
        mx_uclient_free(t->c);
    }
    for (int i = 0; i < MAX_SRV; i++)
        srv_free(t->srv[i]);
    ev_loop_destroy(t->loop);
    assert_int_equal(count_fds(), t->fds_before);
    free(t);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    /* Global init once, so its lasting state is not counted as a leaked fd. */
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    curl_global_cleanup();
    return 0;
}

static char *url_of(const struct srv *s, const char *path)
{
    return mx_xasprintf("http://127.0.0.1:%d%s", s->port, path);
}

static const char *const json_headers[] = {"Content-Type: application/json",
                                           "Accept: application/json, text/event-stream"};

static void post_opts(struct mx_ureq_opts *o, const char *url)
{
    memset(o, 0, sizeof(*o));
    o->method = "POST";
    o->url = url;
    o->headers = json_headers;
    o->header_cnt = 2;
    o->body = json_body;
    o->body_len = strlen(json_body);
    o->timeout_ms = 3000;
}

static void start(struct tc *t, const struct mx_ureq_opts *o, struct rsp *r)
{
    assert_int_equal(mx_ureq_start(t->c, o, &test_cbs, r, &r->u), 0);
    /* Callbacks never run from inside mx_ureq_start(). */
    assert_int_equal(r->heads + r->datas + r->dones, 0);
}

/* ---- tests ---- */

static void test_uclient_post_json(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_int_equal(mx_uclient_active(t->c), 1);
    assert_true(run_until(t, &r.done));

    assert_int_equal(r.err, 0);
    assert_int_equal(r.heads, 1);
    assert_int_equal(r.dones, 1);
    assert_int_equal(r.status, 200);
    assert_true(rsp_has_header(&r, "Content-Type: application/json"));
    assert_true(rsp_has_header(&r, "X-Test: yes"));
    assert_int_equal(mx_buf_len(&r.body), strlen(json_body));
    assert_memory_equal(mx_buf_data(&r.body), json_body, strlen(json_body));
    assert_true(r.info.body_sent);
    assert_true(r.info.response_started);
    assert_int_equal(r.info.http_status, 200);
    assert_false(r.info.reused);
    assert_true(r.info.total_s > 0);
    assert_true(r.info.starttransfer_s <= r.info.total_s);

    assert_int_equal(s->requests, 1);
    assert_true(mx_buf_len(&s->head) > 20);
    assert_memory_equal(mx_buf_data(&s->head), "POST /mcp HTTP/1.1\r\n", 20);
    assert_int_equal(mx_buf_len(&s->body), strlen(json_body));
    assert_memory_equal(mx_buf_data(&s->body), json_body, strlen(json_body));
    assert_int_equal(mx_uclient_active(t->c), 0);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_sends_headers_exactly(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    static const char *const hdrs[] = {
        "Content-Type: application/json",   "Accept: application/json, text/event-stream",
        ("Authorization: Bearer " CANARY),  "Mcp-Session-Id: 0f9d3c",
        "MCP-Protocol-Version: 2025-06-18",
    };
    /* Above libcurl's 1 MiB threshold for sending Expect: 100-continue. */
    size_t big = 1100 * 1024;
    char *body = mx_xmalloc(big);
    memset(body, 'x', big);
    struct mx_ureq_opts o = {0};
    o.method = "POST";
    o.url = url;
    o.headers = hdrs;
    o.header_cnt = 5;
    o.body = body;
    o.body_len = big;
    o.timeout_ms = 3000;
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    assert_int_equal(s->requests, 1);
    for (size_t i = 0; i < 5; i++)
        assert_true(srv_head_has(s, hdrs[i]));
    char cl[64];
    snprintf(cl, sizeof(cl), "Content-Length: %zu", big);
    assert_true(srv_head_has(s, cl));
    assert_false(srv_head_has_name(s, "expect:"));
    assert_false(srv_head_has_name(s, "accept-encoding:"));
    assert_false(srv_head_has_name(s, "transfer-encoding:"));
    assert_int_equal(mx_buf_len(&s->body), big);
    assert_memory_equal(mx_buf_data(&s->body), body, big);
    rsp_clear(&r);
    free(body);
    free(url);
}

static void test_uclient_default_content_type_removed(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    o.headers = NULL;
    o.header_cnt = 0;
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    /* libcurl would otherwise claim application/x-www-form-urlencoded. */
    assert_false(srv_head_has_name(s, "content-type:"));
    assert_false(srv_head_has_name(s, "expect:"));
    rsp_clear(&r);
    free(url);
}

static void test_uclient_streams_chunks(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_CHUNKED);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    r.srv = s;
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    assert_int_equal(r.status, 200);
    assert_true(rsp_has_header(&r, "Transfer-Encoding: chunked"));
    assert_true(r.datas >= 3);
    assert_true(r.first_data_before_finish);
    assert_int_equal(mx_buf_len(&r.body), 9);
    assert_memory_equal(mx_buf_data(&r.body), "aaabbbccc", 9);
    assert_false(r.late);
    rsp_clear(&r);
    free(url);
}

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    close(fd); /* bound, never listening: connecting is refused */
    return ntohs(sa.sin_port);
}

static void test_uclient_refused(void **state)
{
    struct tc *t = *state;
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", closed_port());
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, MX_ECLOSED);
    assert_false(r.info.body_sent);
    assert_false(r.info.response_started);
    assert_false(r.info.reused);
    assert_int_equal(r.info.http_status, 0);
    assert_int_equal(r.heads + r.datas, 0);
    /* the cause: where, and why */
    char want[64];
    snprintf(want, sizeof(want), "connection refused at 127.0.0.1:%s", strrchr(url, ':') + 1);
    *strrchr(want, '/') = '\0';
    assert_true(r.info.no_connection);
    assert_false(r.info.tls);
    assert_string_equal(r.info.cause, want);
    rsp_clear(&r);
    free(url);
}

/* https to a server that answers in plain HTTP: the TLS handshake fails,
 * and the cause says so with the scheme, host and port, never the path or
 * the query. */
static void test_uclient_tls_cause(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_BAD_REQUEST);
    char *url = mx_xasprintf("https://127.0.0.1:%d/mcp?sig=secret-query", s->port);
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_true(r.err != 0);
    assert_true(r.info.no_connection);
    assert_true(r.info.tls);
    char want[64];
    snprintf(want, sizeof(want), "handshake failed at https://127.0.0.1:%d (", s->port);
    if (strncmp(r.info.cause, want, strlen(want)) != 0)
        fail_msg("cause \"%s\" does not start with \"%s\"", r.info.cause, want);
    assert_null(strstr(r.info.cause, "secret-query"));
    assert_null(strstr(r.info.cause, "/mcp"));
    rsp_clear(&r);
    free(url);
}

static void test_uclient_drop_fresh_not_resent(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_DROP);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, MX_ECLOSED);
    assert_true(r.info.body_sent);
    assert_false(r.info.response_started);
    run_for(t, 0.1);
    assert_int_equal(s->requests, 1);
    rsp_clear(&r);
    free(url);
}

/*
 * First request answered with keep-alive; the server then reads the second
 * one on the same connection and closes without answering. That is the case
 * where libcurl retries by itself on a new connection.
 */
static void drop_second(struct tc *t, const char *method, bool may_repeat, struct rsp *r2,
                        struct srv **out)
{
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_DROP_SECOND);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r1;
    rsp_init(&r1, t);
    start(t, &o, &r1);
    assert_true(run_until(t, &r1.done));
    assert_int_equal(r1.err, 0);
    assert_int_equal(s->accepted, 1);

    o.method = method;
    if (strcmp(method, "POST") != 0) {
        o.body = NULL;
        o.body_len = 0;
    }
    o.may_repeat = may_repeat;
    start(t, &o, r2);
    assert_true(run_until(t, &r2->done));
    run_for(t, 0.1);
    rsp_clear(&r1);
    free(url);
    *out = s;
}

static void test_uclient_reused_post_not_resent(void **state)
{
    struct tc *t = *state;
    struct srv *s;
    struct rsp r;
    rsp_init(&r, t);
    drop_second(t, "POST", false, &r, &s);
    assert_int_equal(r.err, MX_ECLOSED);
    assert_true(r.info.body_sent);
    assert_false(r.info.response_started);
    assert_int_equal(r.heads + r.datas, 0);
    assert_int_equal(s->requests, 2); /* the dropped one reached the server once */
    rsp_clear(&r);
}

/* The control: allowed to repeat, libcurl re-sends and the retry succeeds,
 * so the test above really exercised libcurl's silent retry. */
static void test_uclient_reused_post_resent_when_allowed(void **state)
{
    struct tc *t = *state;
    struct srv *s;
    struct rsp r;
    rsp_init(&r, t);
    drop_second(t, "POST", true, &r, &s);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(s->requests, 3);
    assert_int_equal(s->accepted, 2);
    assert_int_equal(mx_buf_len(&s->body), strlen(json_body));
    rsp_clear(&r);
}

static void test_uclient_reused_delete_not_resent(void **state)
{
    struct tc *t = *state;
    struct srv *s;
    struct rsp r;
    rsp_init(&r, t);
    drop_second(t, "DELETE", false, &r, &s);
    assert_int_equal(r.err, MX_ECLOSED);
    /* No body: the head alone may have reached the server. */
    assert_true(r.info.body_sent);
    assert_int_equal(s->requests, 2);
    rsp_clear(&r);
}

static void test_uclient_reused_delete_resent_when_allowed(void **state)
{
    struct tc *t = *state;
    struct srv *s;
    struct rsp r;
    rsp_init(&r, t);
    drop_second(t, "DELETE", true, &r, &s);
    assert_int_equal(r.err, 0);
    assert_int_equal(s->requests, 3);
    assert_memory_equal(mx_buf_data(&s->head), "DELETE /mcp HTTP/1.1\r\n", 22);
    rsp_clear(&r);
}

static void test_uclient_idle_close_uses_new_connection(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_CLOSE_IDLE);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r1, r2;
    rsp_init(&r1, t);
    rsp_init(&r2, t);
    start(t, &o, &r1);
    assert_true(run_until(t, &r1.done));
    assert_int_equal(r1.err, 0);
    run_for(t, 0.05); /* the server's FIN reaches the idle cached connection */
    start(t, &o, &r2);
    assert_true(run_until(t, &r2.done));
    assert_int_equal(r2.err, 0);
    assert_false(r2.info.reused);
    run_for(t, 0.05);
    assert_int_equal(s->requests, 2);
    assert_int_equal(s->accepted, 2);
    rsp_clear(&r1);
    rsp_clear(&r2);
    free(url);
}

static void test_uclient_reuses_connection(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    for (int i = 0; i < 3; i++) {
        struct rsp r;
        rsp_init(&r, t);
        start(t, &o, &r);
        assert_true(run_until(t, &r.done));
        assert_int_equal(r.err, 0);
        assert_int_equal(r.info.reused, i > 0);
        rsp_clear(&r);
    }
    assert_int_equal(s->accepted, 1);
    assert_int_equal(s->requests, 3);
    free(url);
}

static void test_uclient_reuses_easy_handle(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    assert_int_equal(mx_uclient_spare(t->c), 0);
    for (int i = 0; i < 3; i++) {
        struct rsp r;
        rsp_init(&r, t);
        start(t, &o, &r);
        assert_int_equal(mx_uclient_spare(t->c), 0); /* taken by the request */
        assert_true(run_until(t, &r.done));
        assert_int_equal(r.err, 0);
        assert_int_equal(mx_uclient_spare(t->c), 1); /* back for the next one */
        rsp_clear(&r);
    }
    /* many at once (over three servers, each within its listen backlog):
     * what is kept afterwards is bounded */
    enum { PER = 10, N = 3 * PER };
    char *urls[3] = {url, NULL, NULL};
    for (int k = 1; k < 3; k++) {
        t->srv[k] = srv_new(t->loop, SRV_JSON);
        urls[k] = url_of(t->srv[k], "/mcp");
    }
    struct rsp *rs = mx_xcalloc(N, sizeof(*rs));
    for (int i = 0; i < N; i++) {
        post_opts(&o, urls[i % 3]);
        rsp_init(&rs[i], t);
        start(t, &o, &rs[i]);
    }
    for (int i = 0; i < N; i++) {
        assert_true(run_until(t, &rs[i].done));
        assert_int_equal(rs[i].err, 0);
        rsp_clear(&rs[i]);
    }
    free(rs);
    assert_true(mx_uclient_spare(t->c) > 1);
    assert_true(mx_uclient_spare(t->c) < N);
    assert_int_equal(s->requests, 3 + PER);
    for (int k = 0; k < 3; k++)
        free(urls[k]);
}

static bool pool_idle_true(struct mx_upool *p, void *data)
{
    (void)p;
    (*(int *)data)++;
    return true;
}

static const struct mx_upool_cbs pool_true_cbs = {pool_idle_true};

/*
 * A handle used for one upstream and taken again for another must carry
 * nothing over: not its header lines (a credential), method, body size,
 * nor its pool's connections.
 */
static void test_uclient_reused_handle_forgets_request(void **state)
{
    struct tc *t = *state;
    struct srv *a = t->srv[0] = srv_new(t->loop, SRV_JSON);
    struct srv *b = t->srv[1] = srv_new(t->loop, SRV_JSON);
    char *url_a = url_of(a, "/a");
    char *url_b = url_of(b, "/b");
    int idles = 0;
    struct mx_upool *pa = mx_upool_new(t->c, 0, &pool_true_cbs, &idles);
    static const char *const secret_hdrs[] = {("Authorization: Bearer " CANARY),
                                              ("Cookie: __sbx_auth=" CANARY),
                                              "Content-Type: text/x-canary"};
    struct mx_ureq_opts o;
    post_opts(&o, url_a);
    o.method = "DELETE";
    o.headers = secret_hdrs;
    o.header_cnt = 3;
    o.pool = pa;
    o.timeout_ms = 100000;
    struct rsp r1;
    rsp_init(&r1, t);
    start(t, &o, &r1);
    assert_true(run_until(t, &r1.done));
    assert_int_equal(r1.err, 0);
    assert_true(srv_head_has(a, "Authorization: Bearer " CANARY));
    assert_memory_equal(mx_buf_data(&a->head), "DELETE /a HTTP/1.1\r\n", 20);

    /* the same server without the pool: a connection of its own */
    struct mx_ureq_opts g = {0};
    g.method = "GET";
    g.url = url_a;
    g.timeout_ms = 3000;
    struct rsp r2;
    rsp_init(&r2, t);
    start(t, &g, &r2);
    assert_true(run_until(t, &r2.done));
    assert_int_equal(r2.err, 0);
    assert_false(r2.info.reused);
    assert_int_equal(a->accepted, 2);
    assert_memory_equal(mx_buf_data(&a->head), "GET /a HTTP/1.1\r\n", 17);
    assert_null(memmem(mx_buf_data(&a->head), mx_buf_len(&a->head), CANARY, strlen(CANARY)));
    assert_false(srv_head_has_name(a, "content-type:"));
    assert_false(srv_head_has_name(a, "content-length:"));
    assert_int_equal(mx_buf_len(&a->body), 0);

    /* another upstream, through a pool of its own */
    struct mx_upool *pb = mx_upool_new(t->c, 0, &pool_true_cbs, &idles);
    g.url = url_b;
    g.pool = pb;
    struct rsp r3;
    rsp_init(&r3, t);
    start(t, &g, &r3);
    assert_true(run_until(t, &r3.done));
    assert_int_equal(r3.err, 0);
    assert_false(r3.info.reused);
    assert_memory_equal(mx_buf_data(&b->head), "GET /b HTTP/1.1\r\n", 17);
    assert_null(memmem(mx_buf_data(&b->head), mx_buf_len(&b->head), CANARY, strlen(CANARY)));
    assert_false(srv_head_has_name(b, "authorization:"));
    assert_false(srv_head_has_name(b, "cookie:"));

    /* a freed pool closes its connections although its handles live on */
    mx_upool_free(pa);
    mx_upool_free(pb);
    run_for(t, 0.05);
    assert_int_equal(a->eofs, 1); /* the pooled one; the common cache keeps the other */
    assert_int_equal(b->eofs, 1);
    assert_int_equal(idles, 0);
    rsp_clear(&r1);
    rsp_clear(&r2);
    rsp_clear(&r3);
    free(url_a);
    free(url_b);
}

/* An idle pool closes its connections after its transfers' handles were
 * kept for reuse (they must not hold on to its connection cache). */
static void test_uclient_idle_pool_closes_after_reuse(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    int idles = 0;
    struct mx_upool *p = mx_upool_new(t->c, 100, &pool_true_cbs, &idles);
    struct mx_ureq_opts o;
    post_opts(&o, url);
    o.pool = p;
    for (int i = 0; i < 2; i++) {
        struct rsp r;
        rsp_init(&r, t);
        start(t, &o, &r);
        assert_true(run_until(t, &r.done));
        assert_int_equal(r.err, 0);
        assert_int_equal(r.info.reused, i > 0);
        rsp_clear(&r);
    }
    struct mx_upool_info info;
    mx_upool_info(p, &info);
    assert_int_equal(info.conns, 1);
    run_for(t, 0.3);
    assert_int_equal(idles, 1);
    mx_upool_info(p, &info);
    assert_int_equal(info.conns, 0);
    assert_true(info.idle_closed != 0);
    assert_int_equal(s->eofs, 1);
    /* and the pool works again afterwards, on a new connection */
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    assert_false(r.info.reused);
    assert_int_equal(s->accepted, 2);
    rsp_clear(&r);
    mx_upool_free(p);
    free(url);
}

static void test_uclient_timeout(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_SILENT);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    o.timeout_ms = 200;
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, MX_ETIMEDOUT);
    assert_true(r.info.body_sent);
    assert_false(r.info.response_started);
    assert_true(r.info.total_s >= 0.15);
    assert_int_equal(s->requests, 1);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_cancel_in_on_data(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_FOREVER);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    r.cancel_at_data = 2;
    start(t, &o, &r);
    assert_true(run_until(t, &r.cancelled));
    /* Removed as soon as libcurl returned, within the same loop pass. */
    assert_int_equal(mx_uclient_active(t->c), 0);
    run_for(t, 0.2); /* the server keeps sending every 20 ms meanwhile */
    assert_int_equal(r.datas, 2);
    assert_int_equal(r.dones, 0);
    assert_false(r.late);
    /* A half-read response cannot be reused: the connection was closed. */
    assert_int_equal(s->eofs, 1);
    assert_null(s->conns);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_cancel_in_on_head(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    r.cancel_at_head = true;
    start(t, &o, &r);
    assert_true(run_until(t, &r.cancelled));
    run_for(t, 0.1);
    assert_int_equal(r.heads, 1);
    assert_int_equal(r.datas + r.dones, 0);
    assert_false(r.late);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_cancel_before_start(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    mx_ureq_cancel(r.u);
    r.cancelled = true;
    assert_int_equal(mx_uclient_active(t->c), 0);
    run_for(t, 0.1);
    assert_int_equal(r.heads + r.datas + r.dones, 0);
    assert_int_equal(s->requests, 0);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_cancel_other_in_callback(void **state)
{
    struct tc *t = *state;
    struct srv *sa = t->srv[0] = srv_new(t->loop, SRV_CHUNKED);
    struct srv *sb = t->srv[1] = srv_new(t->loop, SRV_SLOW_JSON);
    char *ua = url_of(sa, "/a");
    char *ub = url_of(sb, "/b");
    struct mx_ureq_opts oa, ob;
    post_opts(&oa, ua);
    post_opts(&ob, ub);
    struct rsp a, b;
    rsp_init(&a, t);
    rsp_init(&b, t);
    a.cancel_other = &b;
    start(t, &ob, &b);
    start(t, &oa, &a);
    assert_true(run_until(t, &a.done));
    run_for(t, 0.2); /* B's server answers after 100 ms; nothing may arrive */
    assert_int_equal(a.err, 0);
    assert_true(b.cancelled);
    assert_int_equal(b.heads + b.datas + b.dones, 0);
    assert_false(a.late);
    assert_false(b.late);
    rsp_clear(&a);
    rsp_clear(&b);
    free(ua);
    free(ub);
}

static void test_uclient_start_in_callback(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp a, b;
    rsp_init(&a, t);
    rsp_init(&b, t);
    a.start_other = &b;
    a.start_other_opts = &o;
    start(t, &o, &a);
    assert_true(run_until(t, &a.done));
    assert_true(run_until(t, &b.done));
    assert_int_equal(a.err, 0);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.status, 200);
    assert_int_equal(s->requests, 2);
    rsp_clear(&a);
    rsp_clear(&b);
    free(url);
}

static void test_uclient_pause_resume(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_BIG);
    char *url = url_of(s, "/big");
    struct mx_ureq_opts o = {0};
    o.method = "GET";
    o.url = url;
    o.timeout_ms = 4000;
    struct rsp r;
    rsp_init(&r, t);
    r.pause_each = true;
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    assert_false(r.data_while_paused);
    assert_true(r.pauses > 1);
    assert_int_equal(mx_buf_len(&r.body), BIG_LEN);
    const unsigned char *b = (const unsigned char *)mx_buf_data(&r.body);
    size_t bad = 0;
    for (size_t i = 0; i < BIG_LEN; i++)
        bad += b[i] != (unsigned char)(i % 251);
    assert_int_equal(bad, 0);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_concurrent(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_SLOW_JSON);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp a, b;
    rsp_init(&a, t);
    rsp_init(&b, t);
    start(t, &o, &a);
    start(t, &o, &b);
    assert_int_equal(mx_uclient_active(t->c), 2);
    assert_true(run_until(t, &a.done));
    assert_true(run_until(t, &b.done));
    assert_int_equal(a.err, 0);
    assert_int_equal(b.err, 0);
    assert_int_equal(a.status, 200);
    assert_int_equal(b.status, 200);
    assert_int_equal(s->requests, 2);
    assert_int_equal(s->max_pending, 2); /* both were in flight at once */
    rsp_clear(&a);
    rsp_clear(&b);
    free(url);
}

static void test_uclient_no_redirect(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_REDIRECT);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    run_for(t, 0.1);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.status, 302);
    assert_int_equal(r.info.http_status, 302);
    char loc[128];
    snprintf(loc, sizeof(loc), "Location: http://127.0.0.1:%d/elsewhere", s->port);
    assert_true(rsp_has_header(&r, loc));
    assert_int_equal(mx_buf_len(&r.body), 5);
    assert_int_equal(s->requests, 1);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_skips_interim_heads(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_EARLY_HINTS);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    assert_int_equal(r.heads, 1);
    assert_int_equal(r.status, 200);
    assert_true(rsp_has_header(&r, "X-Final: 1"));
    assert_null(memmem(mx_buf_data(&r.hdrs), mx_buf_len(&r.hdrs), "Link", 4));
    assert_int_equal(mx_buf_len(&r.body), 2);
    rsp_clear(&r);
    free(url);
}

static void test_uclient_free_cancels_all(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_SILENT);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp a, b, p;
    rsp_init(&a, t);
    rsp_init(&b, t);
    rsp_init(&p, t);
    start(t, &o, &a);
    start(t, &o, &b);
    run_for(t, 0.1);
    assert_int_equal(s->requests, 2);
    start(t, &o, &p); /* still waiting to be added */
    assert_int_equal(mx_uclient_active(t->c), 3);
    mx_uclient_free(t->c);
    t->c = NULL;
    run_for(t, 0.1);
    assert_int_equal(a.dones + b.dones + p.dones, 0);
    assert_int_equal(s->eofs, 2);
    rsp_clear(&a);
    rsp_clear(&b);
    rsp_clear(&p);
    free(url);
}

static void test_uclient_bad_opts(void **state)
{
    struct tc *t = *state;
    struct mx_ureq *u = NULL;
    struct mx_ureq_opts o;
    struct rsp r;
    rsp_init(&r, t);
    post_opts(&o, "ftp://127.0.0.1/x");
    assert_int_equal(mx_ureq_start(t->c, &o, &test_cbs, &r, &u), MX_EINVAL);
    post_opts(&o, "http://127.0.0.1:1/x");
    o.method = "PATCH ";
    assert_int_equal(mx_ureq_start(t->c, &o, &test_cbs, &r, &u), MX_EINVAL);
    static const char *const smuggle[] = {"X-A: 1\r\nX-B: 2"};
    post_opts(&o, "http://127.0.0.1:1/x");
    o.headers = smuggle;
    o.header_cnt = 1;
    assert_int_equal(mx_ureq_start(t->c, &o, &test_cbs, &r, &u), MX_EINVAL);
    post_opts(&o, "http://127.0.0.1:1/x");
    o.body = NULL;
    assert_int_equal(mx_ureq_start(t->c, &o, &test_cbs, &r, &u), MX_EINVAL);
    post_opts(&o, "http://127.0.0.1:1/x");
    o.method = "GET";
    assert_int_equal(mx_ureq_start(t->c, &o, &test_cbs, &r, &u), MX_EINVAL);
    assert_null(u);
    assert_int_equal(mx_uclient_active(t->c), 0);
    run_for(t, 0.05);
    assert_int_equal(r.heads + r.datas + r.dones, 0);
    rsp_clear(&r);
}

/* Failures are logged at debug level; header values must not be. */
static void test_uclient_secret_not_logged(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_DROP);
    static const char *const hdrs[] = {("Authorization: Bearer " CANARY),
                                       ("Cookie: __sbx_auth=" CANARY)};
    char *urls[2] = {url_of(s, "/mcp"), mx_xasprintf("http://127.0.0.1:%d/", closed_port())};
    FILE *log = tmpfile();
    assert_non_null(log);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(log), STDERR_FILENO) >= 0);
    mx_log_set_level(MX_LOG_DEBUG);

    struct rsp r[2];
    for (int i = 0; i < 2; i++) {
        struct mx_ureq_opts o;
        post_opts(&o, urls[i]);
        o.headers = hdrs;
        o.header_cnt = 2;
        rsp_init(&r[i], t);
        start(t, &o, &r[i]);
    }
    bool ok = run_until(t, &r[0].done) && run_until(t, &r[1].done);

    mx_log_set_level(MX_LOG_INFO);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    assert_true(ok);

    char buf[65536];
    rewind(log);
    size_t n = fread(buf, 1, sizeof(buf) - 1, log);
    fclose(log);
    buf[n] = '\0';
    assert_int_equal(r[0].err, MX_ECLOSED);
    assert_int_equal(r[1].err, MX_ECLOSED);
    assert_non_null(strstr(buf, "failed")); /* the failures were logged */
    assert_null(strstr(buf, CANARY));
    for (int i = 0; i < 2; i++) {
        rsp_clear(&r[i]);
        free(urls[i]);
    }
}

/* One POST to a new responder in |mode|, run to its end; |r| holds it. */
static struct srv *post_once(struct tc *t, enum srv_mode mode, struct rsp *r)
{
    struct srv *s = t->srv[0] = srv_new(t->loop, mode);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    rsp_init(r, t);
    start(t, &o, r);
    assert_true(run_until(t, &r->done));
    free(url);
    return s;
}

/* An answer whose end is the close: the whole body, then success. */
static void test_uclient_body_to_close(void **state)
{
    struct rsp r;
    post_once(*state, SRV_TO_CLOSE, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(mx_buf_len(&r.body), strlen("until the end"));
    assert_memory_equal(mx_buf_data(&r.body), "until the end", strlen("until the end"));
    rsp_clear(&r);
}

/* Bytes after the answer that no request asked for: the answer stands, the
 * connection is not used again. */
static void test_uclient_extra_bytes_not_reused(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_EXTRA);
    char *url = url_of(s, "/mcp");
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r1, r2;
    rsp_init(&r1, t);
    rsp_init(&r2, t);
    start(t, &o, &r1);
    assert_true(run_until(t, &r1.done));
    assert_int_equal(r1.err, 0);
    assert_int_equal(mx_buf_len(&r1.body), strlen(json_body));
    run_for(t, 0.05);
    start(t, &o, &r2);
    assert_true(run_until(t, &r2.done));
    assert_int_equal(r2.err, 0);
    assert_false(r2.info.reused);
    assert_int_equal(s->accepted, 2);
    rsp_clear(&r1);
    rsp_clear(&r2);
    free(url);
}

/* A control byte in a header value: the answer is refused before on_head. */
static void test_uclient_control_byte_refused(void **state)
{
    struct rsp r;
    post_once(*state, SRV_CTL_VALUE, &r);
    assert_int_equal(r.err, MX_EPROTO);
    assert_int_equal(r.heads + r.datas, 0);
    rsp_clear(&r);
}

/* A head past the cap: refused, nothing delivered. */
static void test_uclient_huge_head_refused(void **state)
{
    struct rsp r;
    post_once(*state, SRV_HUGE_HEAD, &r);
    assert_true(r.err == MX_EUPSTREAM || r.err == MX_ECLOSED);
    assert_int_equal(r.heads + r.datas, 0);
    rsp_clear(&r);
}

/* "Name;" sends a header with an empty value, as libcurl does; "Name:"
 * sends nothing. */
static void test_uclient_empty_header_value(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = url_of(s, "/mcp");
    static const char *const hdrs[] = {"Content-Type: application/json", "Mcp-Param-Empty;",
                                       "X-Removed:"};
    struct mx_ureq_opts o;
    post_opts(&o, url);
    o.headers = hdrs;
    o.header_cnt = 3;
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    assert_true(srv_head_has(s, "Mcp-Param-Empty:"));
    assert_false(srv_head_has_name(s, "x-removed:"));
    assert_null(memmem(mx_buf_data(&s->head), mx_buf_len(&s->head), ";", 1));
    rsp_clear(&r);
    free(url);
}

/* localhost: the engine tries 127.0.0.1 first. */
static void test_uclient_localhost(void **state)
{
    struct tc *t = *state;
    struct srv *s = t->srv[0] = srv_new(t->loop, SRV_JSON);
    char *url = mx_xasprintf("http://localhost:%d/mcp?x=1", s->port);
    struct mx_ureq_opts o;
    post_opts(&o, url);
    struct rsp r;
    rsp_init(&r, t);
    start(t, &o, &r);
    assert_true(run_until(t, &r.done));
    assert_int_equal(r.err, 0);
    char host[64];
    snprintf(host, sizeof(host), "Host: localhost:%d", s->port);
    assert_true(srv_head_has(s, host));
    assert_memory_equal(mx_buf_data(&s->head), "POST /mcp?x=1 HTTP/1.1\r\n", 24);
    rsp_clear(&r);
    free(url);
}

int main(void)
{
    /* every test against the engine of its own (plain http to an IP literal),
     * then against libcurl, which carries https and every other URL */
    const struct CMUnitTest own[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_uclient_post_json),
        T(test_uclient_sends_headers_exactly),
        T(test_uclient_default_content_type_removed),
        T(test_uclient_streams_chunks),
        T(test_uclient_refused),
        T(test_uclient_drop_fresh_not_resent),
        T(test_uclient_reused_post_not_resent),
        T(test_uclient_reused_post_resent_when_allowed),
        T(test_uclient_reused_delete_not_resent),
        T(test_uclient_reused_delete_resent_when_allowed),
        T(test_uclient_idle_close_uses_new_connection),
        T(test_uclient_reuses_connection),
        T(test_uclient_idle_pool_closes_after_reuse),
        T(test_uclient_timeout),
        T(test_uclient_cancel_in_on_data),
        T(test_uclient_cancel_in_on_head),
        T(test_uclient_cancel_before_start),
        T(test_uclient_cancel_other_in_callback),
        T(test_uclient_start_in_callback),
        T(test_uclient_pause_resume),
        T(test_uclient_concurrent),
        T(test_uclient_no_redirect),
        T(test_uclient_skips_interim_heads),
        T(test_uclient_free_cancels_all),
        T(test_uclient_bad_opts),
        T(test_uclient_secret_not_logged),
        T(test_uclient_body_to_close),
        T(test_uclient_extra_bytes_not_reused),
        T(test_uclient_control_byte_refused),
        T(test_uclient_huge_head_refused),
        T(test_uclient_localhost),
        T(test_uclient_empty_header_value),
#undef T
    };
    const struct CMUnitTest curl[] = {
#define C(fn) cmocka_unit_test_setup_teardown(fn, setup_curl, teardown)
        C(test_uclient_post_json),
        C(test_uclient_sends_headers_exactly),
        C(test_uclient_default_content_type_removed),
        C(test_uclient_streams_chunks),
        C(test_uclient_refused),
        C(test_uclient_tls_cause),
        C(test_uclient_drop_fresh_not_resent),
        C(test_uclient_reused_post_not_resent),
        C(test_uclient_reused_post_resent_when_allowed),
        C(test_uclient_reused_delete_not_resent),
        C(test_uclient_reused_delete_resent_when_allowed),
        C(test_uclient_idle_close_uses_new_connection),
        C(test_uclient_reuses_connection),
        C(test_uclient_reuses_easy_handle),
        C(test_uclient_reused_handle_forgets_request),
        C(test_uclient_idle_pool_closes_after_reuse),
        C(test_uclient_timeout),
        C(test_uclient_cancel_in_on_data),
        C(test_uclient_cancel_in_on_head),
        C(test_uclient_cancel_before_start),
        C(test_uclient_cancel_other_in_callback),
        C(test_uclient_start_in_callback),
        C(test_uclient_pause_resume),
        C(test_uclient_concurrent),
        C(test_uclient_no_redirect),
        C(test_uclient_skips_interim_heads),
        C(test_uclient_free_cancels_all),
        C(test_uclient_bad_opts),
        C(test_uclient_secret_not_logged),
        C(test_uclient_body_to_close),
        C(test_uclient_extra_bytes_not_reused),
        C(test_uclient_control_byte_refused),
        C(test_uclient_huge_head_refused),
        C(test_uclient_localhost),
        C(test_uclient_empty_header_value),
#undef C
    };
    int failed =
        cmocka_run_group_tests_name("own HTTP/1.1 engine", own, group_setup, group_teardown);
    return failed + cmocka_run_group_tests_name("libcurl", curl, group_setup, group_teardown);
}
