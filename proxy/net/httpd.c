/* SPDX-License-Identifier: MIT */
/*
 * The server core: listening sockets, accepted connections, the transport
 * (plain or TLS, through the xprt ops table) and its handshake, the choice of
 * HTTP front end (ALPN, or on a plain socket the HTTP/2 client preface), and
 * capped input and output buffers moved on one ev_io per connection. A
 * connection is never freed inside its own callbacks: close marks it and the
 * reaper (an ev_prepare) frees it before the loop blocks again.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <jansson.h>

#include "alloc.h"
#include "httpd_int.h"
#include "err.h"
#include "evsoon.h"
#include "httpd.h"
#include "limit.h"
#include "log.h"
#include "num.h"
#include "rpc.h"
#include "tls.h"

#define MAX_LISTEN   4
#define READ_ROUNDS  16 /* reads per readiness event before yielding to others */
#define ACCEPT_BATCH 64

/* RFC 9113 §3.4: the client connection preface. */
static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof(h2_preface) - 1)

struct listener {
    ev_io io;
    int fd;
    struct mx_httpd *srv;
};

struct mx_httpd {
    struct ev_loop *loop;
    struct mx_httpd_opts opts;
    mx_httpd_request_cb on_request;
    void *data;
    mx_xprt_new_cb xprt_new;
    void *xprt_ctx;
    struct listener listeners[MAX_LISTEN];
    size_t listener_cnt;
    struct mx_conn *conns;   /* live */
    struct mx_conn *reap;    /* closed, freed by the reaper */
    struct core_conn *flush; /* connections with output to write before the loop blocks */
    size_t conn_cnt;
    uint64_t accepted; /* connections ever accepted or adopted */
    unsigned long next_conn_id;
    ev_prepare reaper;
    struct mx_limit_log conn_limit;   /* max_connections */
    struct mx_limit_log client_limit; /* max_per_client */
};

/* Core-private per-connection flags live beside the shared struct. */
struct core_conn {
    struct mx_conn c;
    unsigned io_events; /* EV_READ / EV_WRITE currently set on c.io */
    bool read_more;     /* the last read round stopped before MX_EAGAIN */
    bool proto_kick;    /* the front end asked for a kick */
    bool flush_soon;    /* on the server's flush list */
    struct core_conn *flush_next;
    size_t linger_bytes;    /* MX_CONN_LINGER: peer bytes dropped */
    ev_tstamp linger_start; /* MX_CONN_LINGER: since when */
};

static struct core_conn *cc(struct mx_conn *c)
{
    return mx_container_of(c, struct core_conn, c);
}

void mx_httpd_opts_default(struct mx_httpd_opts *o)
{
    o->max_header = 64 * 1024;
    o->max_body = 4 * 1024 * 1024;
    o->max_connections = 1024;
    o->max_per_client = 0;
    o->header_timeout_s = 10.0;
    o->idle_timeout_s = 120.0;
    o->max_requests_per_conn = 0;
    o->h2_max_streams = 128;
}

const struct mx_httpd_opts *mx_conn_opts(const struct mx_conn *c)
{
    return &c->srv->opts;
}

void mx_conn_local_name(const struct mx_conn *c, char *out, size_t cap)
{
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "";
    out[0] = '\0';
    if (getsockname(c->x->fd, (struct sockaddr *)&ss, &sl) != 0)
        return;
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        snprintf(out, cap, "[%s]:%d", host, ntohs(a->sin6_port));
    } else if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        snprintf(out, cap, "%s:%d", host, ntohs(a->sin_port));
    }
}

void mx_conn_dispatch(struct mx_conn *c, struct mx_req *req)
{
    c->srv->on_request(req, c->srv->data);
}

size_t mx_conn_refusal_body(const struct mx_conn *c, int status, const char *what, char *buf,
                            size_t cap)
{
    char msg[160];
    const struct mx_httpd_opts *o = &c->srv->opts;
    if (what)
        snprintf(msg, sizeof(msg), "%s", what);
    else if (status == 413)
        snprintf(msg, sizeof(msg), "request body over [listen] max_body (%zu bytes)", o->max_body);
    else if (status == 431 || status == 414)
        snprintf(msg, sizeof(msg), "request head over [listen] max_header (%zu bytes)",
                 o->max_header);
    else
        snprintf(msg, sizeof(msg), "%s", mx_http_reason(status));
    json_t *e = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code",
                          MX_RPC_INVALID_REQUEST, "message", msg);
    size_t n = json_dumpb(e, buf, cap - 1, JSON_COMPACT);
    json_decref(e);
    if (n >= cap)
        n = 0; /* cannot happen with the caps callers use */
    buf[n] = '\0';
    return n;
}

const char *mx_conn_state_name(enum mx_conn_state st)
{
    switch (st) {
    case MX_CONN_HANDSHAKE:
        return "handshake";
    case MX_CONN_SNIFF:
        return "sniff";
    case MX_CONN_OPEN:
        return "open";
    case MX_CONN_LINGER:
        return "linger";
    case MX_CONN_CLOSED:
        return "closed";
    }
    return "?";
}

static void set_state(struct mx_conn *c, enum mx_conn_state st)
{
    mx_log_debug("http", "conn#%lu %s -> %s", c->id, mx_conn_state_name(c->state),
                 mx_conn_state_name(st));
    c->state = st;
}

bool mx_conn_is_closed(const struct mx_conn *c)
{
    return c->state == MX_CONN_CLOSED || c->state == MX_CONN_LINGER;
}

/* ---- watchers ---- */

static unsigned to_ev(unsigned xprt_events)
{
    return ((xprt_events & MX_XPRT_READ) ? (unsigned)EV_READ : 0u) |
           ((xprt_events & MX_XPRT_WRITE) ? (unsigned)EV_WRITE : 0u);
}

static bool input_full(const struct mx_conn *c)
{
    return mx_buf_len(&c->in) >= c->in.cap;
}

/* Set the socket events from what the connection waits for now. */
static void update_io(struct mx_conn *c)
{
    struct core_conn *k = cc(c);
    const struct mx_xprt_ops *ops = c->x->ops;
    unsigned want = 0;
    if (c->state == MX_CONN_CLOSED)
        return;
    if (c->state == MX_CONN_HANDSHAKE) {
        want = ops->wants(c->x, MX_XPRT_READ);
    } else if (c->state == MX_CONN_LINGER) {
        want = MX_XPRT_READ; /* raw bytes, below any TLS */
    } else {
        if (!c->read_paused && !c->eof && !input_full(c))
            want |= ops->wants(c->x, MX_XPRT_READ);
        if (mx_buf_len(&c->out))
            want |= ops->wants(c->x, MX_XPRT_WRITE);
    }
    unsigned ev = to_ev(want);
    if (ev == k->io_events)
        return;
    ev_io_stop(c->loop, &c->io);
    k->io_events = ev;
    if (ev) {
        /* the events only: setting the fd again (ev_io_set) makes libev
         * register it with the kernel anew, an EPOLL_CTL_ADD that fails
         * with EEXIST on every change */
        ev_io_modify(&c->io, (int)ev);
        ev_io_start(c->loop, &c->io);
    }
}

void mx_conn_set_timer(struct mx_conn *c, double seconds)
{
    if (c->state == MX_CONN_LINGER)
        return; /* the core's own timer now */
    ev_timer_stop(c->loop, &c->timer);
    if (seconds <= 0 || c->state == MX_CONN_CLOSED)
        return;
    ev_timer_set(&c->timer, seconds, 0.0);
    ev_timer_start(c->loop, &c->timer);
}

void mx_conn_kick(struct mx_conn *c)
{
    if (mx_conn_is_closed(c))
        return;
    cc(c)->proto_kick = true;
    mx_ev_soon(c->loop, &c->kick);
}

void mx_conn_pause_read(struct mx_conn *c, bool paused)
{
    if (c->read_paused == paused || mx_conn_is_closed(c))
        return;
    c->read_paused = paused;
    /* TLS may hold decrypted bytes the socket will not signal again, and
     * bytes read ahead wait in the input buffer */
    if (!paused && (c->x->ops->holds_input || mx_buf_len(&c->in) > 0)) {
        cc(c)->read_more = true;
        mx_ev_soon(c->loop, &c->kick);
    }
    update_io(c);
}

/* ---- lifecycle ---- */

void mx_conn_close(struct mx_conn *c)
{
    struct mx_httpd *s = c->srv;
    if (c->state == MX_CONN_CLOSED)
        return;
    bool lingered = c->state == MX_CONN_LINGER; /* told the front end and shut down already */
    set_state(c, MX_CONN_CLOSED);
    ev_io_stop(s->loop, &c->io);
    ev_timer_stop(s->loop, &c->timer);
    ev_timer_stop(s->loop, &c->kick);
    if (c->proto && !lingered)
        c->proto->closed(c);
    if (mx_buf_len(&c->out) == 0 && !lingered)
        c->x->ops->shutdown(c->x);
    c->x->ops->close(c->x);
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

/* ---- lingering close ---- */

static void linger_end(struct mx_conn *c, const char *why)
{
    struct core_conn *k = cc(c);
    mx_log_debug("http", "conn#%lu from %s: lingering close: %zu bytes discarded in %.3f s (%s)",
                 c->id, c->peer, k->linger_bytes, ev_now(c->loop) - k->linger_start, why);
    mx_conn_close(c);
}

/* Our answer is out: end our side and drop what the peer still sends. */
static void linger_start(struct mx_conn *c)
{
    struct core_conn *k = cc(c);
    if (c->eof || c->proto == NULL) {
        mx_conn_close(c);
        return;
    }
    set_state(c, MX_CONN_LINGER);
    ev_timer_stop(c->loop, &c->kick);
    c->proto->closed(c);
    c->x->ops->shutdown(c->x);
    mx_buf_clear(&c->in);
    k->linger_bytes = 0;
    k->linger_start = ev_now(c->loop);
    ev_timer_stop(c->loop, &c->timer);
    ev_timer_set(&c->timer, MX_CONN_LINGER_IDLE_S, 0.0);
    ev_timer_start(c->loop, &c->timer);
    update_io(c);
}

static void linger_read(struct mx_conn *c)
{
    struct core_conn *k = cc(c);
    for (int i = 0; i < READ_ROUNDS; i++) {
        ssize_t n = mx_xprt_discard(c->x, MX_CONN_READ_CHUNK);
        if (n == MX_EAGAIN)
            break;
        if (n <= 0) {
            linger_end(c, n == 0 ? "peer closed" : "peer reset");
            return;
        }
        k->linger_bytes += (size_t)n;
        if (k->linger_bytes >= MX_CONN_LINGER_BYTES) {
            linger_end(c, "byte bound");
            return;
        }
    }
    /* Rounds used up with more to read: the socket signals again. */
    double left = k->linger_start + MX_CONN_LINGER_S - ev_now(c->loop);
    if (left <= 0) {
        linger_end(c, "time bound");
        return;
    }
    ev_timer_stop(c->loop, &c->timer);
    ev_timer_set(&c->timer, left < MX_CONN_LINGER_IDLE_S ? left : MX_CONN_LINGER_IDLE_S, 0.0);
    ev_timer_start(c->loop, &c->timer);
}

static void close_now(struct mx_conn *c)
{
    if (c->linger && c->state == MX_CONN_OPEN)
        linger_start(c);
    else
        mx_conn_close(c);
}

void mx_conn_linger_close(struct mx_conn *c)
{
    c->linger = true;
    mx_conn_close_after(c);
}

void mx_conn_close_after(struct mx_conn *c)
{
    c->close_after = true;
    if (mx_buf_len(&c->out) == 0)
        close_now(c);
}

static void conn_free(struct mx_conn *c)
{
    if (c->proto)
        c->proto->free(c);
    c->x->ops->free(c->x);
    mx_buf_clear(&c->in);
    mx_buf_clear(&c->out);
    free(cc(c));
}

static void after_write(struct mx_conn *c);

static void reaper_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct mx_httpd *s = mx_container_of(w, struct mx_httpd, reaper);
    (void)loop;
    (void)revents;
    /* Everything the handlers wrote during this loop turn goes out in one
     * write per connection (status line, headers, body and end together),
     * before the loop blocks. */
    while (s->flush) {
        struct core_conn *k = s->flush;
        s->flush = k->flush_next;
        k->flush_next = NULL;
        k->flush_soon = false;
        if (k->c.state == MX_CONN_CLOSED)
            continue;
        mx_conn_flush(&k->c);
        after_write(&k->c);
    }
    while (s->reap) {
        struct mx_conn *c = s->reap;
        s->reap = c->next;
        conn_free(c);
    }
}

/* ---- output ---- */

/* Write |len| bytes of |p| to the socket now, after what is queued, as
 * far as it takes them; *|done| is how many of |p| went. */
static int write_through(struct mx_conn *c, const char *p, size_t len, size_t *done)
{
    *done = 0;
    while (len > *done) {
        bool queued = mx_buf_len(&c->out) > 0;
        const char *from = queued ? mx_buf_data(&c->out) : p + *done;
        size_t n_from = queued ? mx_buf_len(&c->out) : len - *done;
        ssize_t n = c->x->ops->write(c->x, from, n_from);
        if (n == MX_EAGAIN)
            return 0;
        if (n <= 0) {
            const char *why = c->x->ops->error(c->x);
            mx_log_debug("http", "conn#%lu write: %s", c->id, *why ? why : mx_strerror((int)n));
            mx_conn_close(c);
            return MX_ECLOSED;
        }
        if (queued)
            mx_buf_consume(&c->out, (size_t)n);
        else
            *done += (size_t)n;
    }
    return 0;
}

int mx_conn_write(struct mx_conn *c, const void *p, size_t len)
{
    if (mx_conn_is_closed(c))
        return MX_ECLOSED;
    if (len >= MX_CONN_DIRECT_MIN && c->state == MX_CONN_OPEN) {
        /* a large write (a list page of megabytes) goes to the socket at
         * once, after what is queued; only what it does not take is copied */
        size_t done;
        if (write_through(c, p, len, &done))
            return MX_ECLOSED;
        p = (const char *)p + done;
        len -= done;
        if (len == 0)
            return 0;
    }
    if (mx_buf_append(&c->out, p, len)) {
        /* A producer that ignores MX_EAGAIN would grow us without bound. */
        mx_log_warn("http", "conn#%lu output over %d bytes; closing", c->id, MX_CONN_OUT_CAP);
        mx_conn_close(c);
        return MX_ECLOSED;
    }
    if (mx_buf_len(&c->out) >= MX_CONN_OUT_HIGH)
        c->out_high = true;
    return 0;
}

void mx_conn_flush(struct mx_conn *c)
{
    if (mx_conn_is_closed(c) || c->state == MX_CONN_HANDSHAKE)
        return;
    while (mx_buf_len(&c->out)) {
        ssize_t n = c->x->ops->write(c->x, mx_buf_data(&c->out), mx_buf_len(&c->out));
        if (n == MX_EAGAIN)
            break;
        if (n <= 0) {
            const char *why = c->x->ops->error(c->x);
            mx_log_debug("http", "conn#%lu write: %s", c->id, *why ? why : mx_strerror((int)n));
            mx_conn_close(c);
            return;
        }
        mx_buf_consume(&c->out, (size_t)n);
    }
    if (mx_buf_len(&c->out) == 0 && c->close_after) {
        close_now(c);
        return;
    }
    update_io(c);
}

void mx_conn_flush_soon(struct mx_conn *c)
{
    struct core_conn *k = cc(c);
    if (k->flush_soon || mx_conn_is_closed(c))
        return;
    k->flush_soon = true;
    k->flush_next = c->srv->flush;
    c->srv->flush = k;
}

/* After a write event: tell the front end when the output fell low. */
static void after_write(struct mx_conn *c)
{
    if (c->state != MX_CONN_OPEN)
        return;
    if (c->out_high && mx_buf_len(&c->out) <= MX_CONN_OUT_LOW) {
        c->out_high = false;
        c->proto->drained(c);
    }
}

/* ---- input ---- */

static void attach(struct mx_conn *c, const struct mx_conn_proto *proto)
{
    set_state(c, MX_CONN_OPEN);
    c->proto = proto;
    mx_log_debug("http", "conn#%lu from %s: %s over %s", c->id, c->peer, proto->name,
                 c->x->ops->name);
    proto->start(c);
}

/* Plain socket, no ALPN: the first bytes tell HTTP/2 with prior knowledge
 * (RFC 9113 §3.3) from HTTP/1.x. */
static void sniff(struct mx_conn *c)
{
    size_t n = mx_buf_len(&c->in);
    if (n > H2_PREFACE_LEN)
        n = H2_PREFACE_LEN;
    if (memcmp(mx_buf_data(&c->in), h2_preface, n) != 0)
        attach(c, &mx_http1_proto);
    else if (n == H2_PREFACE_LEN)
        attach(c, &mx_http2_proto);
}

static void do_read(struct mx_conn *c)
{
    char buf[MX_CONN_READ_CHUNK];
    for (int i = 0; i < READ_ROUNDS; i++) {
        if (mx_conn_is_closed(c) || c->read_paused || c->eof)
            return;
        size_t room = c->in.cap - mx_buf_len(&c->in);
        if (room == 0)
            return;
        size_t want = room < sizeof(buf) ? room : sizeof(buf);
        ssize_t n = c->x->ops->read(c->x, buf, want);
        if (n == MX_EAGAIN)
            return;
        if (n <= 0) {
            if (n < 0) {
                const char *why = c->x->ops->error(c->x);
                mx_log_debug("http", "conn#%lu read: %s", c->id, *why ? why : mx_strerror((int)n));
            }
            /* A peer that ends its side gets no more answers from us either. */
            c->eof = true;
            mx_conn_close(c);
            return;
        }
        /* Cannot fail: |n| fits in the room left. */
        mx_buf_append(&c->in, buf, (size_t)n);
        if (c->state == MX_CONN_SNIFF)
            sniff(c);
        else
            c->proto->input(c);
        /* Less than asked: the socket is empty for now, and it signals
         * again when more comes; no read to hear MX_EAGAIN. Not so where
         * the transport holds bytes the socket no longer shows (TLS). */
        if ((size_t)n < want && !c->x->ops->holds_input)
            return;
    }
    cc(c)->read_more = true;
    mx_ev_soon(c->loop, &c->kick);
}

/*
 * Plain HTTP came to a TLS listener: the socket moves to a plain transport
 * and HTTP/1.1, which answers every request with 400 and a lingering close
 * (http1.c), so the peer reads why instead of a reset.
 */
static void answer_in_plain(struct mx_conn *c)
{
    int fd = c->x->fd;
    mx_log_debug("http", "conn#%lu from %s: %s; answering 400", c->id, c->peer,
                 c->x->ops->error(c->x));
    c->x->fd = -1; /* the socket is the new transport's now */
    c->x->ops->free(c->x);
    c->x = mx_xprt_plain_new(NULL, fd);
    c->not_tls = true;
    attach(c, &mx_http1_proto);
    do_read(c);
    update_io(c);
}

static void do_handshake(struct mx_conn *c)
{
    int rc = c->x->ops->handshake(c->x);
    if (rc == MX_EAGAIN) {
        update_io(c);
        return;
    }
    if (rc == MX_ENOTTLS) {
        answer_in_plain(c);
        return;
    }
    if (rc < 0) {
        const char *why = c->x->ops->error(c->x);
        mx_log_info("http", "conn#%lu from %s: %s", c->id, c->peer, *why ? why : mx_strerror(rc));
        mx_conn_close(c);
        return;
    }
    const char *alpn = c->x->ops->alpn(c->x);
    if (alpn == NULL)
        set_state(c, MX_CONN_SNIFF);
    else
        attach(c, strcmp(alpn, "h2") == 0 ? &mx_http2_proto : &mx_http1_proto);
    /* The peer's first request may have arrived with its last handshake bytes. */
    do_read(c);
    update_io(c);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_conn *c = mx_container_of(w, struct mx_conn, io);
    (void)loop;
    (void)revents;
    if (c->state == MX_CONN_HANDSHAKE) {
        do_handshake(c);
        return;
    }
    if (c->state == MX_CONN_LINGER) {
        linger_read(c);
        return;
    }
    /* Both directions on any event: a TLS read may wait for writability. */
    if (mx_buf_len(&c->out)) {
        mx_conn_flush(c);
        after_write(c);
    }
    do_read(c);
    update_io(c);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_conn *c = mx_container_of(w, struct mx_conn, kick);
    struct core_conn *k = cc(c);
    (void)loop;
    (void)revents;
    if (k->read_more) {
        k->read_more = false;
        do_read(c);
    }
    if (k->proto_kick && c->state == MX_CONN_OPEN) {
        k->proto_kick = false;
        c->proto->kick(c);
    }
    update_io(c);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_conn *c = mx_container_of(w, struct mx_conn, timer);
    (void)revents;
    if (c->state == MX_CONN_OPEN) {
        c->proto->timeout(c);
        return;
    }
    if (c->state == MX_CONN_LINGER) {
        bool all = ev_now(loop) - cc(c)->linger_start >= MX_CONN_LINGER_S;
        linger_end(c, all ? "time bound" : "idle bound");
        return;
    }
    mx_log_debug("http", "conn#%lu from %s: no request in time", c->id, c->peer);
    mx_conn_close(c);
}

/* ---- accept ---- */

void mx_httpd_adopt(struct mx_httpd *s, int fd, const char *peer)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct core_conn *k = mx_xcalloc(1, sizeof(*k));
    struct mx_conn *c = &k->c;
    c->srv = s;
    c->loop = s->loop;
    c->x = s->xprt_new(s->xprt_ctx, fd);
    c->id = ++s->next_conn_id;
    c->state = MX_CONN_HANDSHAKE;
    snprintf(c->peer, sizeof(c->peer), "%s", peer ? peer : "");
    mx_buf_init(&c->in, s->opts.max_header + MX_CONN_READ_CHUNK);
    mx_buf_init(&c->out, MX_CONN_OUT_CAP);
    ev_io_init(&c->io, io_cb, fd, EV_READ);
    ev_init(&c->timer, timer_cb);
    ev_timer_init(&c->kick, kick_cb, 0.0, 0.0);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->conn_cnt++;
    s->accepted++;
    /* Handshake and first request within the header timeout (slowloris). */
    mx_conn_set_timer(c, s->opts.header_timeout_s);
    k->io_events = EV_READ;
    ev_io_start(s->loop, &c->io);
}

static size_t peer_conn_cnt(const struct mx_httpd *s, const char *peer)
{
    size_t n = 0;
    for (const struct mx_conn *c = s->conns; c; c = c->next) {
        if (strcmp(c->peer, peer) == 0)
            n++;
    }
    return n;
}

/*
 * The connection caps, checked before any byte is read: closing at accept
 * costs a flood nothing (no TLS handshake, no buffers). The log gets one
 * line per cause and quiet period (limit.h), not one per connection.
 */
static bool refuse_at_accept(struct mx_httpd *s, const char *peer)
{
    uint64_t quiet = 0;
    char note[64];
    double now = ev_now(s->loop);
    if (s->conn_cnt >= s->opts.max_connections) {
        if (mx_limit_log_due(&s->conn_limit, now, &quiet))
            mx_log_warn("http", "[listen] max_connections (%zu) reached; closing new connections%s",
                        s->opts.max_connections, mx_limit_log_note(quiet, note, sizeof(note)));
        return true;
    }
    if (s->opts.max_per_client && peer_conn_cnt(s, peer) >= s->opts.max_per_client) {
        if (mx_limit_log_due(&s->client_limit, now, &quiet))
            mx_log_warn("http",
                        "[listen] max_connections_per_client (%zu) reached by %s; closing its new "
                        "connections%s",
                        s->opts.max_per_client, peer, mx_limit_log_note(quiet, note, sizeof(note)));
        return true;
    }
    return false;
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct listener *l = mx_container_of(w, struct listener, io);
    struct mx_httpd *s = l->srv;
    (void)loop;
    (void)revents;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss = {0};
        socklen_t sl = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                mx_log_warn("http", "accept: %s", strerror(errno));
            return;
        }
        char peer[64] = "";
        if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, peer, sizeof(peer));
        else if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, peer, sizeof(peer));
        if (refuse_at_accept(s, peer)) {
            close(fd);
            continue;
        }
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
    if (s->opts.h2_max_streams == 0)
        s->opts.h2_max_streams = 128;
    s->on_request = on_request;
    s->data = data;
    s->xprt_new = mx_xprt_plain_new;
    ev_prepare_init(&s->reaper, reaper_cb);
    ev_prepare_start(loop, &s->reaper);
    ev_unref(loop); /* the reaper alone must not keep the loop alive */
    return s;
}

void mx_httpd_set_tls(struct mx_httpd *s, struct mx_tls *tls)
{
    s->xprt_new = mx_tls_xprt_new;
    s->xprt_ctx = tls;
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
    struct sockaddr_storage ss = {0};
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
    /* Connections without a front end yet go now; the others finish what
     * is in flight (HTTP/1.1: the current request; HTTP/2: GOAWAY). */
    for (struct mx_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == MX_CONN_OPEN)
            c->proto->stop(c);
        else
            mx_conn_close(c);
    }
}

uint64_t mx_httpd_accepted_cnt(const struct mx_httpd *s)
{
    return s->accepted;
}

size_t mx_httpd_conn_cnt(const struct mx_httpd *s)
{
    return s->conn_cnt;
}

uint64_t mx_httpd_refused_cnt(const struct mx_httpd *s)
{
    return s->conn_limit.total;
}

uint64_t mx_httpd_refused_per_client_cnt(const struct mx_httpd *s)
{
    return s->client_limit.total;
}

void mx_httpd_free(struct mx_httpd *s)
{
    if (s == NULL)
        return;
    mx_httpd_stop_accepting(s);
    while (s->conns)
        mx_conn_close(s->conns);
    reaper_cb(s->loop, &s->reaper, 0);
    ev_ref(s->loop);
    ev_prepare_stop(s->loop, &s->reaper);
    free(s);
}
