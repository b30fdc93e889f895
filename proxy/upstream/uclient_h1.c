/* SPDX-License-Identifier: MIT */
/*
 * The upstream client's engine of its own: plain HTTP/1.1 to an address
 * given as an IP literal (or localhost), the kind of upstream a sandbox's
 * local port or a bridge in front of a stdio server is. libcurl spends most
 * of a proxied call's instructions and system calls on such a request (an
 * easy handle set up and reset, a poll() that checks a reused connection,
 * the head and the body sent apart); this engine keeps the same contract
 * (uclient.h) with less:
 *
 * - A request's bytes are laid out once, at mx_ureq_start(): the head (the
 *   caller's lines, Host, Content-Length) right before the body, so it
 *   leaves in one send() on a kept connection.
 * - Kept connections are watched for reading while idle: the server's
 *   close or any byte it sends unasked drops the connection there, so none
 *   is checked before reuse. One closed in the instant it was taken again
 *   fails the request before any answer byte, and the request is sent once
 *   more on a new connection only when the caller said it may be repeated.
 * - The response is read on http-parser until a short read; the body goes
 *   to on_data as it is decoded. When on_data asks for a pause, the rest of
 *   that read is kept (at most one read buffer) and the socket is not read
 *   until mx_ureq_resume().
 * - Connections belong to the request's pool (or the common list) and
 *   count in its |conns|, so the pool's idle close closes them too.
 *
 * Callbacks run from this file's watchers and from on_kick, never from
 * inside mx_ureq_start() or mx_ureq_resume(). A request cancelled inside
 * one of its own callbacks is freed once the callback returned.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <http_parser.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "str.h"
#include "uclient_int.h"

#define SUBSYS "uclient"

/* one read; a read that fills it is followed by another in the same pass */
#define H1_READ_BYTES (64u * 1024u)
/* reads of one connection per pass, so one busy upstream cannot hold the loop */
#define H1_READS_PER_PASS 16
/* a header name and value as the parser hands them over in pieces */
#define H1_FIELD_MAX (64u * 1024u)

union h1addr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
};

struct h1conn {
    struct mx_uclient *c;
    struct mx_upool *p; /* counts it in |conns|; NULL: the common list */
    struct link node;   /* in an idle list while idle */
    ev_io io;
    int fd;
    int events; /* what io watches; 0: stopped */
    union h1addr addr;
    struct mx_ureq *u; /* the request on it; NULL while idle */
    http_parser parser;
    ev_tstamp idle_since;
    bool idle;
    bool connecting;
};

struct mx_uc_h1req {
    union h1addr addr[2]; /* localhost: 127.0.0.1, then ::1 */
    unsigned naddr;
    unsigned next_addr; /* the address a new connection tries next */
    char *wire;         /* head, then the body (u->body follows it) */
    size_t wire_len;
    size_t sent;
    struct h1conn *k;
    ev_timer timer;
    ev_tstamp deadline; /* of the whole request; 0: none */
    double connect_timeout_s;
    double idle_close_s;
    struct timespec t0;
    double connect_s, first_s, total_s;
    int conn_err;        /* errno of the last failed connect; 0: none */
    bool busy;           /* one of its callbacks is running */
    bool reused;         /* sent on a connection kept from before */
    bool retried;        /* sent again on a new connection once */
    bool complete;       /* the response ended; held bytes may still wait */
    bool in_value;       /* the parser's last header piece was a value */
    size_t name_len;     /* of the header name at the start of |field| */
    int fail;            /* the error a callback stopped the parser with */
    struct mx_buf field; /* the header being collected: name, then value */
    struct mx_buf held;  /* body bytes decoded while the consumer paused */
};

static void conn_io(struct ev_loop *loop, ev_io *w, int revents);
static void req_timeout(struct ev_loop *loop, ev_timer *w, int revents);
static void connect_next(struct mx_ureq *u);

/* ---- the URL ---- */

struct h1url {
    struct mx_str host; /* as written; v6 with its brackets */
    struct mx_str authority;
    struct mx_str path; /* from its '/', query included; "/" when empty */
    unsigned port;
};

static bool h1_parse_url(const char *url, struct h1url *out, union h1addr addr[2], unsigned *naddr)
{
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    const char *a = url + 7;
    size_t alen = strcspn(a, "/?#");
    if (strchr(a, '#') || memchr(a, '@', alen) || alen == 0)
        return false;
    const char *path = a + alen;
    for (const char *p = path; *p; p++) {
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return false;
    }
    const char *hend, *port = NULL;
    if (a[0] == '[') {
        const char *rb = memchr(a, ']', alen);
        if (!rb)
            return false;
        hend = rb + 1;
    } else {
        hend = memchr(a, ':', alen);
        if (!hend)
            hend = a + alen;
    }
    if (hend < a + alen) {
        if (*hend != ':')
            return false;
        port = hend + 1;
    }
    unsigned pn = 80;
    if (port) {
        size_t plen = (size_t)(a + alen - port);
        if (plen == 0 || plen > 5)
            return false;
        pn = 0;
        for (size_t i = 0; i < plen; i++) {
            if (port[i] < '0' || port[i] > '9')
                return false;
            pn = pn * 10 + (unsigned)(port[i] - '0');
        }
        if (pn == 0 || pn > 65535)
            return false;
    }
    char host[64];
    size_t hlen = (size_t)(hend - a);
    if (hlen >= sizeof(host))
        return false;
    memcpy(host, a, hlen);
    host[hlen] = '\0';
    memset(addr, 0, 2 * sizeof(*addr));
    *naddr = 0;
    if (host[0] == '[') {
        host[hlen - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &addr[0].in6.sin6_addr) != 1)
            return false;
        addr[0].in6.sin6_family = AF_INET6;
        addr[0].in6.sin6_port = htons((uint16_t)pn);
        *naddr = 1;
    } else if (strcasecmp(host, "localhost") == 0) {
        addr[0].in.sin_family = AF_INET;
        addr[0].in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr[0].in.sin_port = htons((uint16_t)pn);
        addr[1].in6.sin6_family = AF_INET6;
        addr[1].in6.sin6_addr = in6addr_loopback;
        addr[1].in6.sin6_port = htons((uint16_t)pn);
        *naddr = 2;
    } else {
        if (inet_pton(AF_INET, host, &addr[0].in.sin_addr) != 1)
            return false;
        addr[0].in.sin_family = AF_INET;
        addr[0].in.sin_port = htons((uint16_t)pn);
        *naddr = 1;
    }
    out->host = mx_str_make(a, hlen);
    out->authority = mx_str_make(a, alen);
    out->path = *path ? mx_str_cstr(path) : mx_str_cstr("/");
    out->port = pn;
    return true;
}

bool mx_uc_h1_wants(const char *url)
{
    struct h1url pu;
    union h1addr addr[2];
    unsigned n;
    return h1_parse_url(url, &pu, addr, &n);
}

/* ---- the request's bytes ---- */

/* A caller's line "Name:" with nothing after it asks libcurl not to send a
 * header it would add; this engine adds none of those, so it sends none. */
static bool line_is_removal(const char *line)
{
    const char *colon = strchr(line, ':');
    if (!colon)
        return false;
    for (const char *p = colon + 1; *p; p++) {
        if (*p != ' ' && *p != '\t')
            return false;
    }
    return true;
}

/* "Name;" is libcurl's way to send a header with an empty value: "Name:". */
static bool line_is_empty_form(const char *line, size_t len)
{
    return len > 1 && line[len - 1] == ';' && memchr(line, ':', len) == NULL;
}

static bool has_header(const struct mx_ureq_opts *o, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < o->header_cnt; i++) {
        if (strncasecmp(o->headers[i], name, n) == 0 && o->headers[i][n] == ':')
            return true;
    }
    return false;
}

static bool sends_length(const struct mx_ureq_opts *o)
{
    return o->body_len > 0 || strcmp(o->method, "POST") == 0;
}

#define CRLF   "\r\n"
#define LIT(s) s, sizeof(s) - 1

/* Room before the head: the engine's state, aligned for it. */
static size_t state_size(void)
{
    return (sizeof(struct mx_uc_h1req) + 15u) & ~(size_t)15u;
}

static size_t head_size(const struct mx_ureq_opts *o, const struct h1url *pu)
{
    size_t n = strlen(o->method) + 1 + pu->path.len + sizeof(" HTTP/1.1" CRLF) - 1;
    n += sizeof("Host: " CRLF) - 1 + pu->authority.len;
    for (size_t i = 0; i < o->header_cnt; i++) {
        if (!line_is_removal(o->headers[i]))
            n += strlen(o->headers[i]) + 2;
    }
    if (!has_header(o, "accept"))
        n += sizeof("Accept: */*" CRLF) - 1;
    if (sends_length(o))
        n += sizeof("Content-Length: " CRLF) - 1 + 20;
    return n + 2;
}

size_t mx_uc_h1_size(const struct mx_ureq_opts *opts)
{
    struct h1url pu;
    union h1addr addr[2];
    unsigned n;
    if (!h1_parse_url(opts->url, &pu, addr, &n))
        return state_size();
    return state_size() + head_size(opts, &pu);
}

static char *put(char *w, const char *p, size_t len)
{
    memcpy(w, p, len);
    return w + len;
}

static char *put_size(char *w, size_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return put(w, tmp + i, sizeof(tmp) - i);
}

int mx_uc_h1_setup(struct mx_ureq *u, const struct mx_ureq_opts *o, char *tail)
{
    struct h1url pu;
    struct mx_uc_h1req *r = (struct mx_uc_h1req *)(void *)tail;
    memset(r, 0, sizeof(*r));
    if (!h1_parse_url(o->url, &pu, r->addr, &r->naddr))
        return MX_EINVAL;
    /* the head is written to end where the body starts */
    size_t room = head_size(o, &pu);
    char *start = tail + state_size();
    char *w = start;
    w = put(w, o->method, strlen(o->method));
    *w++ = ' ';
    w = put(w, pu.path.p, pu.path.len);
    w = put(w, LIT(" HTTP/1.1" CRLF "Host: "));
    w = put(w, pu.authority.p, pu.authority.len);
    w = put(w, LIT(CRLF));
    for (size_t i = 0; i < o->header_cnt; i++) {
        const char *line = o->headers[i];
        size_t n = strlen(line);
        if (line_is_removal(line))
            continue;
        if (line_is_empty_form(line, n)) {
            w = put(w, line, n - 1);
            *w++ = ':';
        } else {
            w = put(w, line, n);
        }
        w = put(w, LIT(CRLF));
    }
    if (!has_header(o, "accept"))
        w = put(w, LIT("Accept: */*" CRLF));
    if (sends_length(o)) {
        w = put(w, LIT("Content-Length: "));
        w = put_size(w, o->body_len);
        w = put(w, LIT(CRLF));
    }
    w = put(w, LIT(CRLF));
    size_t len = (size_t)(w - start);
    MX_ASSERT(len <= room);
    r->wire = start + room - len;
    memmove(r->wire, start, len);
    r->wire_len = len + o->body_len;
    r->connect_timeout_s = (double)o->connect_timeout_ms / 1000.0;
    r->idle_close_s = (double)o->idle_close_ms / 1000.0;
    r->deadline = o->timeout_ms > 0 ? (double)o->timeout_ms / 1000.0 : 0; /* relative until begin */
    mx_buf_init(&r->field, H1_FIELD_MAX);
    mx_buf_init(&r->held, 2 * H1_READ_BYTES);
    ev_init(&r->timer, req_timeout);
    r->timer.data = u;
    u->h1 = r;
    return 0;
}

/* ---- connections ---- */

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void conn_events(struct h1conn *k, int ev)
{
    if (ev == k->events)
        return;
    ev_io_stop(k->c->loop, &k->io);
    k->events = ev;
    if (ev) {
        ev_io_modify(&k->io, ev);
        ev_io_start(k->c->loop, &k->io);
    }
}

static void conn_close(struct h1conn *k)
{
    struct mx_uclient *c = k->c;
    ev_io_stop(c->loop, &k->io);
    if (k->idle) {
        link_del(&k->node);
        MX_ASSERT(c->h1_idle_cnt > 0);
        c->h1_idle_cnt--;
    }
    close(k->fd);
    if (k->p) {
        MX_ASSERT(k->p->conns > 0);
        k->p->conns--;
        mx_uc_held_note(k->p);
    }
    free(k);
}

static bool addr_eq(const union h1addr *a, const union h1addr *b)
{
    if (a->sa.sa_family != b->sa.sa_family)
        return false;
    if (a->sa.sa_family == AF_INET)
        return a->in.sin_port == b->in.sin_port && a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
    return a->in6.sin6_port == b->in6.sin6_port &&
           memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, sizeof(a->in6.sin6_addr)) == 0;
}

static socklen_t addr_len(const union h1addr *a)
{
    return a->sa.sa_family == AF_INET ? (socklen_t)sizeof(a->in) : (socklen_t)sizeof(a->in6);
}

static struct link *idle_list(struct mx_uclient *c, struct mx_upool *p)
{
    return p ? &p->h1_idle : &c->h1_idle;
}

/* The connection used last to one of |r|'s addresses, not idle too long. */
static struct h1conn *idle_take(struct mx_uclient *c, struct mx_upool *p,
                                const struct mx_uc_h1req *r)
{
    struct link *list = idle_list(c, p);
    ev_tstamp now = ev_now(c->loop);
    for (struct link *l = list->prev, *prev; l != list; l = prev) {
        prev = l->prev;
        struct h1conn *k = mx_container_of(l, struct h1conn, node);
        bool match = false;
        for (unsigned i = 0; i < r->naddr && !match; i++)
            match = addr_eq(&k->addr, &r->addr[i]);
        if (!match)
            continue;
        if (r->idle_close_s > 0 && now - k->idle_since > r->idle_close_s) {
            /* idle past idle_close: the sandbox may have paused meanwhile */
            conn_close(k);
            continue;
        }
        link_del(&k->node);
        k->idle = false;
        c->h1_idle_cnt--;
        return k;
    }
    return NULL;
}

static void idle_park(struct h1conn *k)
{
    struct mx_uclient *c = k->c;
    if ((k->p && (k->p->dead || k->p->closing)) || c->h1_idle_cnt >= UCLIENT_MAX_IDLE_CONNS) {
        conn_close(k);
        return;
    }
    k->u = NULL;
    k->idle = true;
    k->idle_since = ev_now(c->loop);
    link_add_tail(idle_list(c, k->p), &k->node);
    c->h1_idle_cnt++;
    conn_events(k, EV_READ);
}

void mx_uc_h1_close_idle(struct mx_uclient *c, struct mx_upool *p)
{
    struct link *list = idle_list(c, p);
    while (!link_empty(list))
        conn_close(mx_container_of(list->next, struct h1conn, node));
}

/* ---- the end of a request ---- */

/* Detach |u| from its connection: kept for the next request, or closed. */
static void detach(struct mx_ureq *u, bool keep)
{
    struct mx_uc_h1req *r = u->h1;
    ev_timer_stop(u->c->loop, &r->timer);
    struct h1conn *k = r->k;
    r->k = NULL;
    if (!k)
        return;
    k->u = NULL;
    if (keep)
        idle_park(k);
    else
        conn_close(k);
}

static void fail(struct mx_ureq *u, int err)
{
    u->h1->total_s = since(&u->h1->t0);
    detach(u, false);
    mx_log_debug(SUBSYS, "req#%lu failed: %s", u->id, mx_strerror(err));
    mx_uc_deliver_done(u, err);
}

static void succeed(struct mx_ureq *u, bool keep)
{
    u->h1->total_s = since(&u->h1->t0);
    detach(u, keep);
    mx_uc_deliver_done(u, 0);
}

void mx_uc_h1_abort(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    detach(u, false);
    mx_buf_clear(&r->field);
    mx_buf_clear(&r->held);
}

void mx_uc_h1_cancel(struct mx_ureq *u)
{
    if (u->h1->busy) {
        mx_uc_set_state(u, MX_UREQ_CANCELLED);
        return;
    }
    mx_uc_ureq_free(u);
}

void mx_uc_h1_info(const struct mx_ureq *u, struct mx_ureq_info *info)
{
    const struct mx_uc_h1req *r = u->h1;
    info->connect_s = r->connect_s;
    info->starttransfer_s = r->first_s;
    info->total_s = r->total_s;
    info->reused = r->reused && !r->retried;
    if (r->conn_err == 0 || u->attempts > 0)
        return;
    info->no_connection = true;
    const union h1addr *a = &r->addr[r->next_addr > 0 ? r->next_addr - 1 : 0];
    char ip[INET6_ADDRSTRLEN] = "";
    unsigned port;
    if (a->sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
        port = ntohs(a->in.sin_port);
    } else {
        inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
        port = ntohs(a->in6.sin6_port);
    }
    const char *why = r->conn_err == ECONNREFUSED ? "connection refused" : strerror(r->conn_err);
    snprintf(info->cause, sizeof(info->cause),
             a->sa.sa_family == AF_INET ? "%s at %s:%u" : "%s at [%s]:%u", why, ip, port);
}

/* ---- the response ---- */

static struct mx_ureq *parser_req(http_parser *hp)
{
    struct h1conn *k = hp->data;
    return k->u;
}

static int field_flush(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    if (!r->in_value)
        return 0;
    const char *b = mx_buf_data(&r->field);
    int rc = mx_uc_head_field(u, mx_str_make(b, r->name_len),
                              mx_str_make(b + r->name_len, mx_buf_len(&r->field) - r->name_len));
    mx_buf_reset(&r->field);
    r->in_value = false;
    r->name_len = 0;
    if (rc == MX_EPROTO) {
        u->bad_header = true;
        mx_log_debug(SUBSYS, "req#%lu: a response header value holds a control byte", u->id);
    } else if (rc) {
        mx_log_debug(SUBSYS, "req#%lu: response head over its caps", u->id);
    }
    return rc;
}

static int on_field(http_parser *hp, const char *at, size_t len)
{
    struct mx_ureq *u = parser_req(hp);
    struct mx_uc_h1req *r = u->h1;
    int rc = field_flush(u);
    if (rc == 0 && mx_buf_append(&r->field, at, len))
        rc = MX_ELIMIT;
    if (rc) {
        r->fail = rc == MX_EPROTO ? MX_EPROTO : MX_EUPSTREAM;
        return -1;
    }
    return 0;
}

static int on_value(http_parser *hp, const char *at, size_t len)
{
    struct mx_ureq *u = parser_req(hp);
    struct mx_uc_h1req *r = u->h1;
    if (!r->in_value) {
        r->in_value = true;
        r->name_len = mx_buf_len(&r->field);
    }
    if (mx_buf_append(&r->field, at, len)) {
        r->fail = MX_EUPSTREAM;
        return -1;
    }
    return 0;
}

static int on_headers_complete(http_parser *hp)
{
    struct mx_ureq *u = parser_req(hp);
    struct mx_uc_h1req *r = u->h1;
    int rc = field_flush(u);
    if (rc) {
        r->fail = rc == MX_EPROTO ? MX_EPROTO : MX_EUPSTREAM;
        return -1;
    }
    if (hp->status_code < 200) {
        /* RFC 9110 §15.2: a 1xx is interim; the final answer follows */
        mx_uc_head_reset(u);
        return 0;
    }
    u->status = hp->status_code;
    mx_uc_deliver_head(u);
    return u->state == MX_UREQ_RUNNING ? 0 : -1;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    struct mx_ureq *u = parser_req(hp);
    struct mx_uc_h1req *r = u->h1;
    if (u->consumer_paused || mx_buf_len(&r->held)) {
        /* at most what one read holds: no read while any is kept */
        if (mx_buf_append(&r->held, at, len)) {
            r->fail = MX_EUPSTREAM;
            return -1;
        }
        return 0;
    }
    int rc = u->cbs.on_data ? u->cbs.on_data(u, at, len, u->data) : 0;
    MX_ASSERT(rc == 0 || rc == MX_EAGAIN);
    if (u->state != MX_UREQ_RUNNING)
        return -1;
    if (rc == MX_EAGAIN)
        u->consumer_paused = true;
    return 0;
}

static int on_message_complete(http_parser *hp)
{
    struct mx_ureq *u = parser_req(hp);
    if (!u->head_done)
        return 0; /* the end of a 1xx */
    u->h1->complete = true;
    /* stop here: any byte after the answer is one the server had no
     * request for, and the connection is not kept */
    http_parser_pause(hp, 1);
    return 0;
}

static const http_parser_settings h1_settings = {
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* After the parser or a held delivery ran: cancelled, failed, done, paused
 * or reading on. Returns false when |u| is no longer on |k|. */
static bool settle_req(struct mx_ureq *u, bool leftover)
{
    struct mx_uc_h1req *r = u->h1;
    if (u->state == MX_UREQ_CANCELLED) {
        mx_uc_ureq_free(u);
        return false;
    }
    if (r->fail) {
        fail(u, r->fail);
        return false;
    }
    struct h1conn *k = r->k;
    if (r->complete && mx_buf_len(&r->held) == 0) {
        bool keep = !leftover && r->sent == r->wire_len && http_should_keep_alive(&k->parser);
        succeed(u, keep);
        return false;
    }
    if (u->consumer_paused || mx_buf_len(&r->held) || r->complete)
        conn_events(k, r->sent < r->wire_len ? EV_WRITE : 0);
    return true;
}

static bool feed(struct mx_ureq *u, const char *p, size_t len)
{
    struct mx_uc_h1req *r = u->h1;
    struct h1conn *k = r->k;
    r->busy = true;
    size_t n = http_parser_execute(&k->parser, &h1_settings, p, len);
    r->busy = false;
    enum http_errno he = HTTP_PARSER_ERRNO(&k->parser);
    if (u->state == MX_UREQ_RUNNING && r->fail == 0 && he != HPE_OK && he != HPE_PAUSED) {
        mx_log_debug(SUBSYS, "req#%lu: the upstream's answer is not HTTP/1.1: %s", u->id,
                     http_errno_name(he));
        /* the parser refuses a control byte (a bare CR too) in the head
         * before our check sees the value: the same refusal */
        bool ctl = !u->head_done &&
                   (he == HPE_INVALID_HEADER_TOKEN || he == HPE_LF_EXPECTED || he == HPE_STRICT);
        u->bad_header = u->bad_header || ctl;
        r->fail = ctl ? MX_EPROTO : MX_EUPSTREAM;
    }
    return settle_req(u, r->complete && n < len);
}

/* The server closed, or the connection broke. */
static void on_eof(struct mx_ureq *u, int err)
{
    struct mx_uc_h1req *r = u->h1;
    struct h1conn *k = r->k;
    if (!u->resp_started && r->reused && !r->retried) {
        /* a kept connection the server closed as it was taken */
        detach(u, false);
        if (!u->may_repeat) {
            mx_log_debug(SUBSYS, "req#%lu: a kept connection closed; not sent again", u->id);
            fail(u, MX_ECLOSED);
            return;
        }
        r->retried = true;
        r->next_addr = 0;
        connect_next(u);
        return;
    }
    if (u->resp_started && err == 0) {
        /* an answer whose end is the close */
        r->busy = true;
        http_parser_execute(&k->parser, &h1_settings, NULL, 0);
        r->busy = false;
        if (u->state == MX_UREQ_RUNNING && r->fail == 0 && r->complete) {
            settle_req(u, true);
            return;
        }
        if (u->state != MX_UREQ_RUNNING || r->fail) {
            settle_req(u, true);
            return;
        }
    }
    fail(u, MX_ECLOSED);
}

static void read_more(struct mx_ureq *u)
{
    struct mx_uclient *c = u->c;
    if (!c->h1_rbuf)
        c->h1_rbuf = mx_xmalloc(H1_READ_BYTES);
    for (int i = 0; i < H1_READS_PER_PASS; i++) {
        struct h1conn *k = u->h1->k;
        ssize_t n = recv(k->fd, c->h1_rbuf, H1_READ_BYTES, 0);
        if (n > 0) {
            if (!u->resp_started) {
                u->resp_started = true;
                u->h1->first_s = since(&u->h1->t0);
            }
            if (!feed(u, c->h1_rbuf, (size_t)n))
                return;
            if (u->consumer_paused || mx_buf_len(&u->h1->held) || (size_t)n < H1_READ_BYTES)
                return; /* a short read: the socket is empty for now */
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        on_eof(u, n == 0 ? 0 : errno);
        return;
    }
}

/* ---- sending ---- */

static void write_more(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    struct h1conn *k = r->k;
    while (r->sent < r->wire_len) {
        ssize_t n = send(k->fd, r->wire + r->sent, r->wire_len - r->sent, MSG_NOSIGNAL);
        if (n > 0) {
            r->sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_events(k, EV_READ | EV_WRITE);
            return;
        }
        on_eof(u, errno);
        return;
    }
    if (u->body_len)
        u->body_handed = true;
    conn_events(k, EV_READ);
}

static void send_on(struct mx_ureq *u, struct h1conn *k)
{
    struct mx_uc_h1req *r = u->h1;
    r->k = k;
    k->u = u;
    r->sent = 0;
    u->attempts++;
    http_parser_init(&k->parser, HTTP_RESPONSE);
    k->parser.data = k;
    write_more(u);
}

static void arm_timer(struct mx_ureq *u, bool connecting)
{
    struct mx_uc_h1req *r = u->h1;
    struct ev_loop *loop = u->c->loop;
    ev_tstamp at = r->deadline;
    if (connecting && r->connect_timeout_s > 0) {
        ev_tstamp c = ev_now(loop) + r->connect_timeout_s;
        if (at == 0 || c < at)
            at = c;
    }
    ev_timer_stop(loop, &r->timer);
    if (at > 0) {
        ev_timer_set(&r->timer, at - ev_now(loop) > 0 ? at - ev_now(loop) : 0.0, 0.0);
        ev_timer_start(loop, &r->timer);
    }
}

static void connect_done(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    struct h1conn *k = r->k;
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
        soerr = errno;
    if (soerr) {
        r->conn_err = soerr;
        r->k = NULL;
        conn_close(k);
        connect_next(u);
        return;
    }
    k->connecting = false;
    r->connect_s = since(&r->t0);
    arm_timer(u, false);
    send_on(u, k);
}

/* A new connection to the next address; the request fails once none is left. */
static void connect_next(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    struct mx_uclient *c = u->c;
    while (r->next_addr < r->naddr) {
        const union h1addr *a = &r->addr[r->next_addr++];
        int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            r->conn_err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct h1conn *k = mx_xcalloc(1, sizeof(*k));
        k->c = c;
        k->fd = fd;
        k->addr = *a;
        link_init(&k->node);
        ev_io_init(&k->io, conn_io, fd, EV_READ);
        k->p = u->pool;
        if (k->p) {
            k->p->conns++;
            mx_uc_held_note(k->p);
        }
        r->k = k;
        k->u = u;
        r->reused = false;
        if (connect(fd, &a->sa, addr_len(a)) == 0) {
            r->connect_s = since(&r->t0);
            arm_timer(u, false);
            send_on(u, k);
            return;
        }
        if (errno == EINPROGRESS) {
            k->connecting = true;
            arm_timer(u, true);
            conn_events(k, EV_WRITE);
            return;
        }
        r->conn_err = errno;
        r->k = NULL;
        conn_close(k);
    }
    r->total_s = since(&r->t0);
    detach(u, false);
    mx_log_debug(SUBSYS, "req#%lu: no connection: %s", u->id, strerror(r->conn_err));
    mx_uc_deliver_done(u, MX_ECLOSED);
}

void mx_uc_h1_begin(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    mx_uc_set_state(u, MX_UREQ_RUNNING);
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    if (r->deadline > 0)
        r->deadline += ev_now(u->c->loop);
    struct h1conn *k = idle_take(u->c, u->pool, r);
    if (k) {
        r->reused = true;
        arm_timer(u, false);
        send_on(u, k);
        return;
    }
    connect_next(u);
}

void mx_uc_h1_resume(struct mx_ureq *u)
{
    struct mx_uc_h1req *r = u->h1;
    if (mx_buf_len(&r->held)) {
        /* what was kept goes at once: on_data consumes what it is given,
         * even when it asks for a pause again */
        r->busy = true;
        int rc = u->cbs.on_data
                     ? u->cbs.on_data(u, mx_buf_data(&r->held), mx_buf_len(&r->held), u->data)
                     : 0;
        r->busy = false;
        mx_buf_reset(&r->held);
        if (u->state == MX_UREQ_RUNNING && rc == MX_EAGAIN)
            u->consumer_paused = true;
        if (!settle_req(u, false))
            return;
    }
    if (!u->consumer_paused && mx_buf_len(&r->held) == 0 && !r->complete && r->k)
        conn_events(r->k, r->sent < r->wire_len ? EV_READ | EV_WRITE : EV_READ);
}

/* ---- the watchers ---- */

static void conn_io(struct ev_loop *loop, ev_io *w, int revents)
{
    struct h1conn *k = mx_container_of(w, struct h1conn, io);
    (void)loop;
    if (k->idle || !k->u) {
        /* an idle connection spoke: closed by the server, or bytes it had
         * no request for; either way it is not used again */
        conn_close(k);
        return;
    }
    struct mx_ureq *u = k->u;
    if (k->connecting) {
        connect_done(u);
        return;
    }
    if ((revents & EV_WRITE) && u->h1->sent < u->h1->wire_len) {
        write_more(u);
        if (u->h1->k != k)
            return;
    }
    if (revents & EV_READ)
        read_more(u);
}

static void req_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_ureq *u = w->data;
    (void)loop;
    (void)revents;
    if (u->h1->k && u->h1->k->connecting)
        mx_log_debug(SUBSYS, "req#%lu: no connection within its time", u->id);
    fail(u, MX_ETIMEDOUT);
}
