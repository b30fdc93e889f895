/* SPDX-License-Identifier: MIT */
/*
 * The upstream HTTP client: one libcurl multi handle per mx_uclient, driven by
 * the libev loop (socket interest maps to ev_io watchers, curl's one timeout
 * to an ev_timer), with one easy handle per request at a time. This file
 * owns the easy handles, the header lists holding credentials and the copies
 * of request bodies; it does not decide what to send or whether to retry.
 *
 * A finished request's easy handle is kept for a later one (setting one up
 * with curl_easy_init costs more than the rest of the request's work here):
 * it leaves its pool's share and is reset before it is kept, so it carries
 * no option, header list, credential or connection cache of the upstream it
 * served.
 *
 * Re-entrancy: user callbacks run either inside a curl call (on_head and
 * on_data, from the header and write callbacks) or from the completion pass
 * (on_done). libcurl refuses multi calls made from inside its callbacks, so
 * no handle is added, removed or unpaused while a curl call is on the stack:
 * adding and unpausing wait for the next loop iteration (an ev_prepare), so
 * no callback runs inside mx_ureq_start() or mx_ureq_resume(); a cancelled
 * handle is removed at once when no curl call is on the stack, else right
 * after libcurl returns.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>
#include <openssl/crypto.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "guard.h"
#include "log.h"
#include "proc.h"
#include "str.h"
#include "uclient.h"
#include "uclient_int.h"

#define SUBSYS "uclient"

/*
 * Caps on one response head. libcurl itself refuses a head above 100 KiB;
 * an MCP server sends a handful of headers, so a smaller cap costs nothing
 * and bounds what a hostile upstream makes us hold.
 */
#define HEAD_MAX_BYTES   (64u * 1024u)
#define HEAD_MAX_HEADERS 128u

/* Record the first setopt failure; later calls are skipped. */
#define SETOPT(rc, easy, opt, val)                                                                 \
    do {                                                                                           \
        if ((rc) == CURLE_OK)                                                                      \
            (rc) = curl_easy_setopt((easy), (opt), (val));                                         \
    } while (0)

static void settle(struct mx_uclient *c);

static const char *ureq_state_name(enum mx_ureq_state s)
{
    switch (s) {
    case MX_UREQ_PENDING:
        return "pending";
    case MX_UREQ_RUNNING:
        return "running";
    case MX_UREQ_CANCELLED:
        return "cancelled";
    case MX_UREQ_DONE:
        return "done";
    }
    return "?";
}

void mx_uc_set_state(struct mx_ureq *u, enum mx_ureq_state s)
{
    mx_log_debug(SUBSYS, "req#%lu %s -> %s", u->id, ureq_state_name(u->state), ureq_state_name(s));
    u->state = s;
}

/* An easy handle with no option set: a kept one, else a new one. */
static CURL *easy_get(struct mx_uclient *c)
{
    if (c->spare_cnt > 0)
        return c->spare[--c->spare_cnt];
    return curl_easy_init();
}

/*
 * Keep |e| (out of the multi handle, not inside a curl call on it) for a
 * later request, to whichever upstream. curl_easy_reset(3) clears every
 * option (URL, header list, method, body size, CA file, callbacks and
 * their data) but keeps the share, so the share goes first: a handle
 * holding one makes curl_share_cleanup refuse (the pool could never close
 * its connections) and would take the next request, maybe for another
 * upstream, into that pool's connections.
 */
static void easy_put(struct mx_uclient *c, CURL *e)
{
    if (c->spare_cnt == UCLIENT_MAX_SPARE ||
        curl_easy_setopt(e, CURLOPT_SHARE, (CURLSH *)NULL) != CURLE_OK) {
        curl_easy_cleanup(e);
        return;
    }
    curl_easy_reset(e);
    c->spare[c->spare_cnt++] = e;
}

/* The easy handle must no longer be in the multi handle. */
static void pool_leave(struct mx_ureq *u)
{
    struct mx_upool *p = u->pool;
    if (p == NULL)
        return;
    u->pool = NULL;
    p->users--;
    if (u->held)
        p->streams--;
    else
        p->busy--;
    mx_uc_pool_check(p);
}

void mx_uc_ureq_free(struct mx_ureq *u)
{
    struct mx_uclient *c = u->c;
    link_del(&u->node);
    link_del(&u->todo);
    if (u->easy)
        easy_put(c, u->easy); /* detaches it from the pool's share */
    if (u->h1)
        mx_uc_h1_abort(u);
    pool_leave(u);
    OPENSSL_cleanse(u->lines, u->hdrs_size);
    mx_buf_clear(&u->head);
    free(u->pos);
    MX_ASSERT(c->active > 0);
    c->active--;
    free(u);
}

void mx_uc_schedule(struct mx_ureq *u)
{
    struct mx_uclient *c = u->c;
    if (link_empty(&u->todo))
        link_add_tail(&c->todo, &u->todo);
    if (!ev_is_active(&c->kick))
        ev_prepare_start(c->loop, &c->kick);
}

/* ---- pools ---- */

void mx_uc_held_note(struct mx_upool *p)
{
    if (p->conns + p->streams == 0)
        p->held_since = 0;
    else if (p->held_since == 0)
        p->held_since = time(NULL);
}

/* Close every connection of |p| (no transfer uses it); free a dead one. */
static void pool_close(struct mx_upool *p)
{
    MX_ASSERT(p->users == 0 && p->c->in_curl == 0);
    if (p->share) {
        /* closes the cached connections; close_sock counts them down */
        CURLSHcode sc = curl_share_cleanup(p->share);
        if (sc != CURLSHE_OK)
            mx_log_warn(SUBSYS, "curl_share_cleanup: %s", curl_share_strerror(sc));
        p->share = NULL;
    }
    mx_uc_h1_close_idle(p->c, p);
    if (p->closing)
        p->idle_closed = time(NULL);
    p->closing = false;
    mx_uc_held_note(p);
    if (p->dead) {
        ev_timer_stop(p->c->loop, &p->idle);
        link_del(&p->node);
        free(p);
    }
}

/* Usage changed: start the idle clock, or ask for the close at the next
 * safe point (this may run inside a curl callback). */
void mx_uc_pool_check(struct mx_upool *p)
{
    mx_uc_held_note(p);
    if (p->users == 0 && (p->closing || p->dead)) {
        if (!ev_is_active(&p->c->kick))
            ev_prepare_start(p->c->loop, &p->c->kick);
        return;
    }
    if (p->busy > 0 || p->dead || p->idle_s <= 0) {
        ev_timer_stop(p->c->loop, &p->idle);
    } else if (!ev_is_active(&p->idle) && !p->closing) {
        ev_timer_set(&p->idle, p->idle_s, 0.0);
        ev_timer_start(p->c->loop, &p->idle);
    }
}

static void pool_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upool *p = mx_container_of(w, struct mx_upool, idle);
    (void)revents;
    if (p->dead || p->busy > 0)
        return;
    if (!p->cbs.on_idle(p, p->data)) {
        ev_timer_set(&p->idle, p->idle_s, 0.0);
        ev_timer_start(loop, &p->idle);
        return;
    }
    /* on_idle cancelled the streams; a transfer it could not stop (one
     * that is being cancelled, a goodbye) closes the pool when it ends */
    ev_timer_stop(loop, &p->idle);
    if (p->busy > 0)
        return;
    p->closing = true;
    if (p->users == 0)
        pool_close(p);
}

/* Pools whose close waited for a safe point. */
static void pools_settle(struct mx_uclient *c)
{
    for (struct link *l = c->pools.next, *n; l != &c->pools; l = n) {
        n = l->next;
        struct mx_upool *p = mx_container_of(l, struct mx_upool, node);
        if (p->users == 0 && (p->closing || p->dead))
            pool_close(p);
    }
}

static void sock_free(struct sock *s)
{
    ev_io_stop(s->c->loop, &s->io);
    link_del(&s->node);
    free(s);
}

/* Our record of descriptor |fd|, parked or not, or NULL. */
static struct sock *sock_find(struct mx_uclient *c, curl_socket_t fd, bool parked_only)
{
    for (struct link *l = c->socks.next; l != &c->socks; l = l->next) {
        struct sock *sk = mx_container_of(l, struct sock, node);
        if (sk->fd == fd && (sk->parked || !parked_only))
            return sk;
    }
    return NULL;
}

/* Every upstream socket: libcurl's own socket() leaves the descriptor open
 * across exec, so a stdio upstream, wake hook or cmd: secret would inherit
 * every upstream connection. */
static curl_socket_t open_sock(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct sockctx *x = clientp;
    (void)purpose;
    int fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
    if (fd < 0)
        return CURL_SOCKET_BAD;
    /* a record under this number belongs to a socket closed behind our back */
    struct sock *stale = sock_find(x->c, fd, false);
    if (stale) {
        mx_log_warn(SUBSYS, "a socket was closed while watched");
        sock_free(stale);
    }
    if (x->p) {
        x->p->conns++;
        mx_uc_held_note(x->p);
    }
    return fd;
}

static int close_sock(void *clientp, curl_socket_t fd)
{
    struct sockctx *x = clientp;
    /* libev must never watch a descriptor that was closed: the kernel may
     * hand the number out again */
    struct sock *sk = sock_find(x->c, fd, false);
    if (sk) {
        if (!sk->parked)
            mx_log_warn(SUBSYS, "closing a watched socket");
        sock_free(sk);
    }
    if (x->p) {
        MX_ASSERT(x->p->conns > 0);
        x->p->conns--;
        mx_uc_held_note(x->p);
    }
    return close(fd);
}

struct mx_upool *mx_upool_new(struct mx_uclient *c, long idle_ms, const struct mx_upool_cbs *cbs,
                              void *data)
{
    struct mx_upool *p = mx_xcalloc(1, sizeof(*p));
    p->c = c;
    p->ctx.c = c;
    p->ctx.p = p;
    p->cbs = *cbs;
    p->data = data;
    p->idle_s = (double)idle_ms / 1000.0;
    ev_init(&p->idle, pool_idle_cb);
    link_init(&p->h1_idle);
    link_add_tail(&c->pools, &p->node);
    return p;
}

void mx_upool_free(struct mx_upool *p)
{
    if (p == NULL)
        return;
    p->dead = true;
    ev_timer_stop(p->c->loop, &p->idle);
    if (p->users == 0 && p->c->in_curl == 0)
        pool_close(p);
    else
        mx_uc_pool_check(p);
}

void mx_upool_info(const struct mx_upool *p, struct mx_upool_info *out)
{
    memset(out, 0, sizeof(*out));
    if (p == NULL)
        return;
    out->conns = p->conns;
    out->streams = p->streams;
    out->held_since = p->held_since;
    out->idle_closed = p->idle_closed;
}

/* libcurl's connections of |p| are in a share of its own (made anew after
 * each close). */
static int pool_share(struct mx_ureq *u, struct mx_upool *p)
{
    if (p->share == NULL) {
        p->share = curl_share_init();
        if (p->share == NULL)
            return MX_EUPSTREAM;
        CURLSHcode sc = curl_share_setopt(p->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
        if (sc != CURLSHE_OK) {
            mx_log_err(SUBSYS, "curl_share_setopt: %s", curl_share_strerror(sc));
            curl_share_cleanup(p->share);
            p->share = NULL;
            return MX_EUPSTREAM;
        }
    }
    CURLcode rc = CURLE_OK;
    SETOPT(rc, u->easy, CURLOPT_SHARE, p->share);
    SETOPT(rc, u->easy, CURLOPT_OPENSOCKETDATA, (void *)&p->ctx);
    SETOPT(rc, u->easy, CURLOPT_CLOSESOCKETDATA, (void *)&p->ctx);
    return rc == CURLE_OK ? 0 : MX_EUPSTREAM;
}

/* |u| uses |p|. */
static int pool_join(struct mx_ureq *u, struct mx_upool *p)
{
    if (u->easy) {
        int err = pool_share(u, p);
        if (err)
            return err;
    }
    /* a new use: the connections stay */
    p->closing = false;
    p->users++;
    p->busy++;
    u->pool = p;
    mx_uc_pool_check(p);
    return 0;
}

/* ---- socket and timer glue (curl's docs/examples/evhiperfifo.c shape) ---- */

static void drive(struct mx_uclient *c, curl_socket_t fd, int ev_bitmask)
{
    int running = 0;
    c->in_curl++;
    CURLMcode mc = curl_multi_socket_action(c->multi, fd, ev_bitmask, &running);
    c->in_curl--;
    if (mc != CURLM_OK)
        mx_log_debug(SUBSYS, "curl_multi_socket_action: %s", curl_multi_strerror(mc));
    settle(c);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    struct sock *s = mx_container_of(w, struct sock, io);
    if (s->parked) {
        /* the server closed or spoke on an idle connection: libcurl finds
         * out when it takes it again; until then nothing is watched */
        ev_io_stop(loop, w);
        return;
    }
    int action =
        ((revents & EV_READ) ? CURL_CSELECT_IN : 0) | ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    /* |s| may be freed inside drive() when libcurl drops the socket. */
    drive(s->c, s->fd, action);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uclient *c = mx_container_of(w, struct mx_uclient, timer);
    (void)loop;
    (void)revents;
    drive(c, CURL_SOCKET_TIMEOUT, 0);
}

static int sock_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *sockp)
{
    struct mx_uclient *c = userp;
    struct sock *s = sockp;
    (void)easy;

    if (what == CURL_POLL_REMOVE) {
        if (s == NULL)
            return 0;
        s->parked = true;
        if (ev_is_active(&s->io) && (s->io.events & (EV_READ | EV_WRITE)) == EV_READ)
            return 0;
        ev_io_stop(c->loop, &s->io);
        ev_io_set(&s->io, fd, EV_READ);
        ev_io_start(c->loop, &s->io);
        return 0;
    }
    if (s == NULL) {
        s = sock_find(c, fd, true);
        if (s == NULL) {
            s = mx_xcalloc(1, sizeof(*s));
            s->fd = fd;
            s->c = c;
            ev_init(&s->io, on_io);
            link_add_tail(&c->socks, &s->node);
        }
        s->parked = false;
        curl_multi_assign(c->multi, fd, s);
    }
    int events = ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (ev_is_active(&s->io) && (s->io.events & (EV_READ | EV_WRITE)) == events)
        return 0; /* as it is: no epoll_ctl */
    ev_io_stop(c->loop, &s->io);
    if (events) {
        ev_io_set(&s->io, fd, events);
        ev_io_start(c->loop, &s->io);
    }
    return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct mx_uclient *c = userp;
    (void)multi;
    ev_timer_stop(c->loop, &c->timer);
    /* 0 means "as soon as possible": a zero timer runs it on the next loop
     * iteration instead of calling back into libcurl from inside libcurl. */
    if (timeout_ms >= 0) {
        ev_timer_set(&c->timer, (ev_tstamp)timeout_ms / 1000.0, 0.);
        ev_timer_start(c->loop, &c->timer);
    }
    return 0;
}

/* ---- completion ---- */

static int map_result(const struct mx_ureq *u, CURLcode rc)
{
    if (u->bad_header)
        return MX_EPROTO;
    switch (rc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return MX_ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SEND_FAIL_REWIND:
        return MX_ECLOSED;
    case CURLE_ABORTED_BY_CALLBACK:
        /* Our prereq_cb stopped a second attempt: the connection died. */
        return u->retry_refused ? MX_ECLOSED : MX_EUPSTREAM;
    default:
        return MX_EUPSTREAM;
    }
}

static double info_seconds(CURL *easy, CURLINFO what)
{
    curl_off_t us = 0;
    if (curl_easy_getinfo(easy, what, &us) != CURLE_OK || us < 0)
        return 0;
    return (double)us / 1e6;
}

/* "host:port" (|scheme|: "https://host:port") of the request's URL, never
 * its userinfo, path or query; "" when it cannot be read. */
static void url_origin(const struct mx_ureq *u, bool scheme, char *out, size_t cap)
{
    char *url = NULL, *sch = NULL, *host = NULL, *port = NULL;
    CURLU *h = curl_url();
    out[0] = '\0';
    curl_easy_getinfo(u->easy, CURLINFO_EFFECTIVE_URL, &url);
    if (h && url && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_SCHEME, &sch, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
        snprintf(out, cap, "%s%s%.100s:%.8s", scheme ? sch : "", scheme ? "://" : "", host, port);
    curl_free(sch);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(h);
}

/* What kept a connection from being made, for the caller to say: the
 * address from libcurl (or the URL's host), the reason from errno or
 * libcurl's own text, which names hosts, ports and TLS errors, never
 * headers. */
static void connection_cause(const struct mx_ureq *u, struct mx_ureq_info *info)
{
    char *ip = NULL, where[160];
    long port = 0, os_errno = 0;
    if (u->result == CURLE_COULDNT_RESOLVE_HOST) {
        info->no_connection = true;
        snprintf(info->cause, sizeof(info->cause), "%.150s",
                 u->errbuf[0] ? u->errbuf : "could not resolve the host");
        info->cause[0] = (char)tolower((unsigned char)info->cause[0]);
        return;
    }
    if (u->result == CURLE_PEER_FAILED_VERIFICATION || u->result == CURLE_SSL_CONNECT_ERROR) {
        /* the TLS layer refused: the certificate (its chain, name or date),
         * or the handshake itself; libcurl's text says which */
        info->no_connection = true;
        info->tls = true;
        url_origin(u, true, where, sizeof(where));
        snprintf(info->cause, sizeof(info->cause), "%s at %.80s (%.80s)",
                 u->result == CURLE_PEER_FAILED_VERIFICATION ? "certificate verify failed"
                                                             : "handshake failed",
                 where[0] ? where : "the upstream",
                 u->errbuf[0] ? u->errbuf : curl_easy_strerror(u->result));
        return;
    }
    if (u->result != CURLE_COULDNT_CONNECT)
        return;
    info->no_connection = true;
    curl_easy_getinfo(u->easy, CURLINFO_PRIMARY_IP, &ip);
    curl_easy_getinfo(u->easy, CURLINFO_PRIMARY_PORT, &port);
    curl_easy_getinfo(u->easy, CURLINFO_OS_ERRNO, &os_errno);
    const char *why = os_errno == ECONNREFUSED ? "connection refused"
                      : os_errno               ? strerror((int)os_errno)
                                               : "cannot connect";
    if (ip && *ip && port > 0) {
        snprintf(info->cause, sizeof(info->cause), "%s at %s:%ld", why, ip, port);
        return;
    }
    /* no address tried (libcurl 7.88 keeps none for a failed connect): the
     * URL's host and port */
    url_origin(u, false, where, sizeof(where));
    if (where[0])
        snprintf(info->cause, sizeof(info->cause), "%s at %s", why, where);
    else
        snprintf(info->cause, sizeof(info->cause), "%s", why);
}

static void fill_info(const struct mx_ureq *u, struct mx_ureq_info *info)
{
    memset(info, 0, sizeof(*info));
    /*
     * body_sent answers "may the server hold the whole request?", so that a
     * caller knows whether repeating it could run it twice. It is true once
     * every body byte was handed to libcurl for a connection in any attempt
     * (for a request without a body: once libcurl was about to send the
     * head). It errs towards true: bytes handed over may still sit in a
     * buffer when the connection dies. CURLINFO_SIZE_UPLOAD_T is not used
     * because libcurl resets it for every attempt, so a refused second
     * attempt would hide that the first one sent everything.
     */
    info->body_sent = u->body_len > 0 ? u->body_handed : u->attempts > 0;
    info->response_started = u->resp_started;
    info->http_status = u->head_done ? u->status : 0;
    if (u->h1) {
        mx_uc_h1_info(u, info);
        return;
    }
    if (!u->easy)
        return;
    connection_cause(u, info);
    info->connect_s = info_seconds(u->easy, CURLINFO_CONNECT_TIME_T);
    info->appconnect_s = info_seconds(u->easy, CURLINFO_APPCONNECT_TIME_T);
    info->starttransfer_s = info_seconds(u->easy, CURLINFO_STARTTRANSFER_TIME_T);
    info->total_s = info_seconds(u->easy, CURLINFO_TOTAL_TIME_T);
    long connects = -1;
    /* No new connection made, yet a request went out: it rode a reused one. */
    info->reused = u->attempts > 0 &&
                   curl_easy_getinfo(u->easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK &&
                   connects == 0;
}

/* Deliver on_done and free |u|; its handle is already out of the multi. */
void mx_uc_deliver_done(struct mx_ureq *u, int err)
{
    struct mx_uclient *c = u->c;
    struct mx_ureq_info info;
    fill_info(u, &info);
    mx_uc_set_state(u, MX_UREQ_DONE);
    if (u->cbs.on_done) {
        c->in_done++;
        u->cbs.on_done(u, err, &info, u->data);
        c->in_done--;
    }
    mx_uc_ureq_free(u);
}

static void finish(struct mx_ureq *u, CURLcode result)
{
    struct mx_uclient *c = u->c;
    curl_multi_remove_handle(c->multi, u->easy);
    if (u->state == MX_UREQ_CANCELLED) {
        c->zombies--;
        mx_uc_ureq_free(u);
        return;
    }
    MX_ASSERT(u->state == MX_UREQ_RUNNING);
    u->result = result;
    int err = map_result(u, result);
    if (err)
        /* errbuf holds libcurl's failf() text: hosts, ports, byte counts,
         * never request headers. */
        mx_log_debug(SUBSYS, "req#%lu failed: %s (curl %d: %s)%s", u->id, mx_strerror(err),
                     (int)result, u->errbuf[0] ? u->errbuf : curl_easy_strerror(result),
                     u->retry_refused ? "; refused to send it again" : "");
    mx_uc_deliver_done(u, err);
}

/* The one place finished transfers are handled; never inside a curl call. */
static void check_done(struct mx_uclient *c)
{
    CURLMsg *msg;
    int left = 0;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* |msg| dies with the remove below: copy what we need first. */
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        char *priv = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        MX_ASSERT(priv != NULL);
        finish((struct mx_ureq *)(void *)priv, result);
    }
}

static void reap(struct mx_uclient *c)
{
    struct link *l = c->reqs.next;
    while (c->zombies && l != &c->reqs) {
        struct mx_ureq *u = mx_container_of(l, struct mx_ureq, node);
        l = l->next;
        if (u->state != MX_UREQ_CANCELLED)
            continue;
        curl_multi_remove_handle(c->multi, u->easy);
        c->zombies--;
        mx_uc_ureq_free(u);
    }
}

/* After a curl call returned: report finished transfers, drop cancelled ones. */
static void settle(struct mx_uclient *c)
{
    MX_ASSERT(c->in_curl == 0);
    check_done(c);
    reap(c);
    pools_settle(c);
}

static void on_kick(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct mx_uclient *c = mx_container_of(w, struct mx_uclient, kick);
    struct link batch;
    (void)revents;
    ev_prepare_stop(loop, w);
    /* Only what was queued before this pass: a consumer that resumes from
     * inside on_data must not keep this pass going forever. */
    link_splice(&c->todo, &batch);
    bool added = false;
    while (!link_empty(&batch)) {
        struct mx_ureq *u = mx_container_of(batch.next, struct mx_ureq, todo);
        link_del(&u->todo);
        if (u->h1) {
            if (u->state == MX_UREQ_PENDING)
                mx_uc_h1_begin(u);
            else if (u->state == MX_UREQ_RUNNING && !u->consumer_paused)
                mx_uc_h1_resume(u);
            continue;
        }
        if (u->state == MX_UREQ_PENDING) {
            CURLMcode mc = curl_multi_add_handle(c->multi, u->easy);
            if (mc != CURLM_OK) {
                mx_log_debug(SUBSYS, "req#%lu: curl_multi_add_handle: %s", u->id,
                             curl_multi_strerror(mc));
                mx_uc_deliver_done(u, MX_EUPSTREAM);
                continue;
            }
            mx_uc_set_state(u, MX_UREQ_RUNNING);
            added = true;
        } else if (u->state == MX_UREQ_RUNNING && u->curl_paused && !u->consumer_paused) {
            u->curl_paused = false;
            /* Unpausing hands the held bytes to write_cb before it returns;
             * on_data may pause again right there. */
            c->in_curl++;
            CURLcode rc = curl_easy_pause(u->easy, CURLPAUSE_CONT);
            c->in_curl--;
            if (rc != CURLE_OK)
                mx_log_debug(SUBSYS, "req#%lu: curl_easy_pause: %s", u->id, curl_easy_strerror(rc));
        }
    }
    /* New transfers start now rather than from the zero timer libcurl just
     * asked for: that would cost a loop iteration (an epoll_wait) each. Not
     * inside libcurl here, so calling it is safe. */
    if (added && c->in_curl == 0)
        drive(c, CURL_SOCKET_TIMEOUT, 0);
    else
        settle(c);
}

/* ---- easy handle callbacks: none of them touches the multi handle ---- */

void mx_uc_head_reset(struct mx_ureq *u)
{
    mx_buf_reset(&u->head);
    u->pos_cnt = 0;
    u->in_head = false;
    u->status = 0;
}

/* "HTTP/1.1 200 OK" or "HTTP/2 200": returns the status or -1. */
static long parse_status_line(struct mx_str line)
{
    size_t i = 5; /* after "HTTP/" */
    while (i < line.len && line.p[i] != ' ')
        i++;
    if (i + 4 > line.len || (i + 4 < line.len && line.p[i + 4] != ' '))
        return -1;
    long status = 0;
    for (size_t k = i + 1; k < i + 4; k++) {
        if (line.p[k] < '0' || line.p[k] > '9')
            return -1;
        status = status * 10 + (line.p[k] - '0');
    }
    return status >= 100 ? status : -1;
}

static int head_add(struct mx_ureq *u, struct mx_str line)
{
    if (line.p[0] == ' ' || line.p[0] == '\t') {
        /* obs-fold: RFC 9112 §5.2 says a user agent replaces it with SP.
         * The previous value is the last thing in the buffer. */
        if (u->pos_cnt == 0)
            return 0;
        struct mx_str more = mx_str_trim(line);
        if (!mx_guard_header_value_ok(more))
            return MX_EPROTO;
        if (mx_buf_append(&u->head, " ", 1) || mx_buf_append(&u->head, more.p, more.len))
            return MX_ELIMIT;
        u->pos[u->pos_cnt - 1].value_len += 1 + more.len;
        return 0;
    }
    const char *colon = memchr(line.p, ':', line.len);
    if (!colon || colon == line.p)
        return 0; /* not a field line; libcurl let it through, we drop it */
    struct mx_str name = mx_str_make(line.p, (size_t)(colon - line.p));
    return mx_uc_head_field(u, name, mx_str_make(colon + 1, line.len - name.len - 1));
}

int mx_uc_head_field(struct mx_ureq *u, struct mx_str name, struct mx_str value)
{
    if (u->pos_cnt == HEAD_MAX_HEADERS)
        return MX_ELIMIT;
    value = mx_str_trim(value);
    /* libcurl ends a line at LF only: a bare CR (or another control byte)
     * stays in the value, and relayed it would write header lines of the
     * upstream's choosing to our client. The whole answer is refused. */
    if (!mx_guard_header_value_ok(value))
        return MX_EPROTO;
    struct hdr_pos hp;
    hp.name_off = mx_buf_len(&u->head);
    hp.name_len = name.len;
    hp.value_off = hp.name_off + name.len;
    hp.value_len = value.len;
    if (mx_buf_append(&u->head, name.p, name.len) || mx_buf_append(&u->head, value.p, value.len))
        return MX_ELIMIT;
    if (u->pos_cnt % 16 == 0)
        u->pos = mx_xrealloc(u->pos, (u->pos_cnt + 16) * sizeof(*u->pos));
    u->pos[u->pos_cnt++] = hp;
    return 0;
}

/* Call on_head with slices into u->head; they die when it returns. */
void mx_uc_deliver_head(struct mx_ureq *u)
{
    u->head_done = true;
    if (u->stream && u->pool && !u->held && u->status >= 200 && u->status < 300) {
        /* an open stream: held from now on, no longer use */
        u->held = true;
        u->pool->busy--;
        u->pool->streams++;
        mx_uc_pool_check(u->pool);
    }
    struct mx_header *hdrs = NULL;
    if (u->pos_cnt)
        hdrs = mx_xcalloc(u->pos_cnt, sizeof(*hdrs));
    const char *base = mx_buf_data(&u->head);
    for (size_t i = 0; i < u->pos_cnt; i++) {
        hdrs[i].name = mx_str_make(base + u->pos[i].name_off, u->pos[i].name_len);
        hdrs[i].value = mx_str_make(base + u->pos[i].value_off, u->pos[i].value_len);
    }
    if (u->cbs.on_head)
        u->cbs.on_head(u, u->status, hdrs, u->pos_cnt, u->data);
    free(hdrs);
    /* Keep the status; the bytes are no longer needed. */
    mx_buf_clear(&u->head);
    free(u->pos);
    u->pos = NULL;
    u->pos_cnt = 0;
}

static size_t header_cb(char *p, size_t size, size_t nmemb, void *userp)
{
    struct mx_ureq *u = userp;
    size_t len = size * nmemb;
    if (u->state != MX_UREQ_RUNNING)
        return 0; /* cancelled: make libcurl stop */
    u->resp_started = true;
    if (u->head_done)
        return len; /* trailers: not part of the contract */
    struct mx_str line = mx_str_make(p, len);
    if (line.len && line.p[line.len - 1] == '\n')
        line.len--;
    if (line.len && line.p[line.len - 1] == '\r')
        line.len--;

    if (line.len >= 5 && memcmp(line.p, "HTTP/", 5) == 0) {
        /* Each response (1xx or final) restarts the collection. */
        mx_uc_head_reset(u);
        long status = parse_status_line(line);
        if (status < 0)
            return 0;
        u->status = status;
        u->in_head = true;
        return len;
    }
    if (!u->in_head)
        return len;
    if (line.len == 0) {
        if (u->status < 200) {
            /* RFC 9110 §15.2: a 1xx is interim; the final answer follows. */
            mx_uc_head_reset(u);
            return len;
        }
        mx_uc_deliver_head(u);
        return u->state == MX_UREQ_RUNNING ? len : 0;
    }
    int rc = head_add(u, line);
    if (rc == MX_EPROTO) {
        u->bad_header = true;
        mx_log_debug(SUBSYS, "req#%lu: a response header value holds a control byte", u->id);
        return 0;
    }
    if (rc) {
        mx_log_debug(SUBSYS, "req#%lu: response head over %u bytes or %u fields", u->id,
                     HEAD_MAX_BYTES, HEAD_MAX_HEADERS);
        return 0;
    }
    return len;
}

/*
 * Pausing. The contract says the bytes given to on_data are consumed even
 * when it returns MX_EAGAIN, while CURL_WRITEFUNC_PAUSE means "not consumed,
 * give them to me again". So MX_EAGAIN is answered with "all consumed" and
 * only noted; the next delivery, whose bytes on_data has not seen, is
 * refused with CURL_WRITEFUNC_PAUSE, which is exactly the case libcurl
 * documents: it keeps those bytes, stops reading the socket and hands them
 * over again after curl_easy_pause(CURLPAUSE_CONT). Every byte reaches
 * on_data once, in order, and at most one further read buffer is held by
 * libcurl once the consumer asked for a pause.
 */
static size_t write_cb(char *p, size_t size, size_t nmemb, void *userp)
{
    struct mx_ureq *u = userp;
    size_t len = size * nmemb;
    if (u->state != MX_UREQ_RUNNING)
        return 0;
    if (u->consumer_paused) {
        u->curl_paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    u->resp_started = true;
    if (!u->head_done) {
        /* libcurl ends every head with the blank line first; a body without
         * one (HTTP/0.9 is refused by default) would land here. */
        mx_uc_deliver_head(u);
        if (u->state != MX_UREQ_RUNNING)
            return 0;
    }
    int rc = u->cbs.on_data ? u->cbs.on_data(u, p, len, u->data) : 0;
    MX_ASSERT(rc == 0 || rc == MX_EAGAIN);
    if (u->state != MX_UREQ_RUNNING)
        return 0;
    if (rc == MX_EAGAIN)
        u->consumer_paused = true;
    return len;
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *userp)
{
    struct mx_ureq *u = userp;
    if (u->state != MX_UREQ_RUNNING)
        return CURL_READFUNC_ABORT;
    size_t n = size * nitems;
    size_t left = u->body_len - u->read_pos;
    if (n > left)
        n = left;
    memcpy(buf, u->body + u->read_pos, n);
    u->read_pos += n;
    if (u->read_pos == u->body_len)
        u->body_handed = true;
    return n;
}

/*
 * libcurl asks to rewind the body only to send it again: on a reused
 * connection that died before any answer byte arrived it silently retries
 * the request on a new one (DESIGN.md, "A trap to know"). The server may
 * have read and run the first copy, so this is allowed only for requests the
 * caller said may be repeated; refusing fails the transfer with
 * CURLE_SEND_FAIL_REWIND.
 */
static int seek_cb(void *userp, curl_off_t offset, int origin)
{
    struct mx_ureq *u = userp;
    if (u->state != MX_UREQ_RUNNING || !u->may_repeat || origin != SEEK_SET || offset < 0 ||
        (uint64_t)offset > u->body_len)
        return CURL_SEEKFUNC_FAIL;
    u->read_pos = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/*
 * Called each time libcurl is about to send the request on a connection. A
 * retry of a request without a body, or of one whose body had not been
 * counted as sent, needs no rewind and would pass seek_cb: the second call
 * here is the one place that sees every retry.
 */
static int prereq_cb(void *userp, char *primary_ip, char *local_ip, int primary_port,
                     int local_port)
{
    struct mx_ureq *u = userp;
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    u->attempts++;
    if (u->state != MX_UREQ_RUNNING)
        return CURL_PREREQFUNC_ABORT;
    if (u->attempts > 1 && !u->may_repeat) {
        u->retry_refused = true;
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

/* ---- public API ---- */

struct mx_uclient *mx_uclient_new(struct ev_loop *loop)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return NULL;
    struct mx_uclient *c = mx_xcalloc(1, sizeof(*c));
    c->loop = loop;
    link_init(&c->reqs);
    link_init(&c->todo);
    link_init(&c->socks);
    c->ctx.c = c;
    link_init(&c->pools);
    link_init(&c->h1_idle);
    ev_init(&c->timer, on_timer);
    ev_prepare_init(&c->kick, on_kick);
    c->multi = curl_multi_init();
    /* its wakeup socketpair is made without close-on-exec */
    mx_fd_cloexec_all();
    if (!c->multi)
        goto fail;
    CURLMcode mc = curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    if (mc == CURLM_OK)
        mc = curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    if (mc == CURLM_OK)
        mc = curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    if (mc == CURLM_OK)
        mc = curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    if (mc == CURLM_OK)
        mc = curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* libcurl's default cache holds 4 idle connections per easy handle in
     * the multi at the moment one is returned; with one handle per request
     * that dips under load and closes warm connections, so busy upstreams
     * reconnected every few dozen calls. idle_close still ends idle ones. */
    if (mc == CURLM_OK)
        mc = curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)UCLIENT_MAX_IDLE_CONNS);
    if (mc != CURLM_OK) {
        mx_log_err(SUBSYS, "curl_multi_setopt: %s", curl_multi_strerror(mc));
        goto fail;
    }
    return c;
fail:
    if (c->multi)
        curl_multi_cleanup(c->multi);
    free(c);
    curl_global_cleanup();
    return NULL;
}

void mx_uclient_free(struct mx_uclient *c)
{
    if (!c)
        return;
    /* Freeing the client from inside one of its callbacks would pull the
     * multi handle from under the caller's feet. */
    MX_ASSERT(c->in_curl == 0 && c->in_done == 0);
    while (!link_empty(&c->reqs)) {
        struct mx_ureq *u = mx_container_of(c->reqs.next, struct mx_ureq, node);
        if (u->easy && (u->state == MX_UREQ_RUNNING || u->state == MX_UREQ_CANCELLED))
            curl_multi_remove_handle(c->multi, u->easy);
        mx_uc_ureq_free(u);
    }
    mx_uc_h1_close_idle(c, NULL);
    c->zombies = 0;
    while (!link_empty(&c->pools)) {
        struct mx_upool *p = mx_container_of(c->pools.next, struct mx_upool, node);
        p->dead = true;
        pool_close(p);
    }
    while (c->spare_cnt > 0)
        curl_easy_cleanup(c->spare[--c->spare_cnt]);
    free(c->h1_rbuf);
    /* Closing the cached connections may still call sock_cb (REMOVE). */
    curl_multi_cleanup(c->multi);
    while (!link_empty(&c->socks))
        sock_free(mx_container_of(c->socks.next, struct sock, node));
    ev_timer_stop(c->loop, &c->timer);
    ev_prepare_stop(c->loop, &c->kick);
    free(c);
    curl_global_cleanup();
}

size_t mx_uclient_active(const struct mx_uclient *c)
{
    return c ? c->active : 0;
}

size_t mx_uclient_spare(const struct mx_uclient *c)
{
    return c ? c->spare_cnt : 0;
}

void mx_uclient_own_h1(struct mx_uclient *c, bool on)
{
    c->h1_off = !on;
}

static bool has_prefix_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static int check_opts(const struct mx_ureq_opts *o)
{
    if (!o->url || !o->method)
        return MX_EINVAL;
    if (!has_prefix_ci(o->url, "http://") && !has_prefix_ci(o->url, "https://"))
        return MX_EINVAL;
    if (strcmp(o->method, "POST") != 0 && strcmp(o->method, "GET") != 0 &&
        strcmp(o->method, "DELETE") != 0)
        return MX_EINVAL;
    if ((o->body_len && !o->body) || (o->body_len && strcmp(o->method, "GET") == 0))
        return MX_EINVAL;
    if (o->timeout_ms < 0 || o->connect_timeout_ms < 0 || (o->header_cnt && !o->headers))
        return MX_EINVAL;
    for (size_t i = 0; i < o->header_cnt; i++) {
        /* A CR or LF would let a value smuggle in further header lines. */
        if (!o->headers[i] || strpbrk(o->headers[i], "\r\n"))
            return MX_EINVAL;
    }
    return 0;
}

/* The lines libcurl gets after the caller's, in |extra|; returns how many. */
static size_t extra_headers(const struct mx_ureq_opts *o, bool has_body, const char *extra[2])
{
    if (!has_body)
        return 0;
    bool has_type = false;
    for (size_t i = 0; i < o->header_cnt && !has_type; i++)
        has_type = has_prefix_ci(o->headers[i], "content-type:");
    size_t n = 0;
    /* Large bodies would otherwise wait for a 100-continue round trip. */
    extra[n++] = "Expect:";
    /* Without this, libcurl labels the body form-urlencoded. */
    if (!has_type)
        extra[n++] = "Content-Type:";
    return n;
}

/* Fill |node| with copies of the |cnt| lines in |line|, their text at
 * |text|, each linked to the node after it; returns the end of the text. */
static char *copy_lines(struct curl_slist *node, const char *const *line, size_t cnt, char *text)
{
    for (size_t i = 0; i < cnt; i++) {
        size_t len = strlen(line[i]) + 1;
        memcpy(text, line[i], len);
        node[i].data = text;
        node[i].next = &node[i + 1];
        text += len;
    }
    return text;
}

static CURLcode setup_easy(struct mx_ureq *u, const struct mx_ureq_opts *o)
{
    CURL *e = u->easy;
    CURLcode rc = CURLE_OK;
    SETOPT(rc, e, CURLOPT_URL, o->url);
    SETOPT(rc, e, CURLOPT_PRIVATE, (void *)u);
    SETOPT(rc, e, CURLOPT_OPENSOCKETFUNCTION, open_sock);
    SETOPT(rc, e, CURLOPT_OPENSOCKETDATA, (void *)&u->c->ctx);
    SETOPT(rc, e, CURLOPT_CLOSESOCKETFUNCTION, close_sock);
    SETOPT(rc, e, CURLOPT_CLOSESOCKETDATA, (void *)&u->c->ctx);
    SETOPT(rc, e, CURLOPT_ERRORBUFFER, u->errbuf);
    SETOPT(rc, e, CURLOPT_NOSIGNAL, 1L);
    SETOPT(rc, e, CURLOPT_TCP_NODELAY, 1L);
    /* Credentials must never follow a redirect to another origin. */
    SETOPT(rc, e, CURLOPT_FOLLOWLOCATION, 0L);
    /* Ignore http_proxy and friends: a credential must reach its own
     * upstream's origin only, not a proxy named by the environment. */
    SETOPT(rc, e, CURLOPT_PROXY, "");
    SETOPT(rc, e, CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(rc, e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    /*
     * On https, wait for a connection being set up to say (by ALPN, at the
     * end of its handshake) whether it multiplexes, instead of opening a
     * second one next to it. Not on plain http: there libcurl learns it only
     * from the first response's status line, so every other request to that
     * host would queue behind an answer that may take the whole wake time.
     */
    if (has_prefix_ci(o->url, "https://"))
        SETOPT(rc, e, CURLOPT_PIPEWAIT, 1L);
    SETOPT(rc, e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    if (o->timeout_ms > 0)
        SETOPT(rc, e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    if (o->connect_timeout_ms > 0)
        SETOPT(rc, e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    if (o->ca_file)
        SETOPT(rc, e, CURLOPT_CAINFO, o->ca_file);
    /* A connection idle this long is closed rather than reused, so a
     * sandbox that paused meanwhile is met on a fresh connection. */
    if (o->idle_close_ms > 0)
        SETOPT(rc, e, CURLOPT_MAXAGE_CONN, o->idle_close_ms < 1000 ? 1L : o->idle_close_ms / 1000);
    SETOPT(rc, e, CURLOPT_HTTPHEADER, u->hdrs);
    SETOPT(rc, e, CURLOPT_HEADERFUNCTION, header_cb);
    SETOPT(rc, e, CURLOPT_HEADERDATA, (void *)u);
    SETOPT(rc, e, CURLOPT_WRITEFUNCTION, write_cb);
    SETOPT(rc, e, CURLOPT_WRITEDATA, (void *)u);
    SETOPT(rc, e, CURLOPT_PREREQFUNCTION, prereq_cb);
    SETOPT(rc, e, CURLOPT_PREREQDATA, (void *)u);
    if (u->has_body) {
        /* The body goes through read_cb, never CURLOPT_POSTFIELDS: only then
         * does a re-send have to ask seek_cb first. */
        SETOPT(rc, e, CURLOPT_POST, 1L);
        SETOPT(rc, e, CURLOPT_READFUNCTION, read_cb);
        SETOPT(rc, e, CURLOPT_READDATA, (void *)u);
        SETOPT(rc, e, CURLOPT_SEEKFUNCTION, seek_cb);
        SETOPT(rc, e, CURLOPT_SEEKDATA, (void *)u);
        SETOPT(rc, e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)u->body_len);
        if (strcmp(o->method, "POST") != 0)
            SETOPT(rc, e, CURLOPT_CUSTOMREQUEST, o->method);
    } else if (strcmp(o->method, "GET") == 0) {
        SETOPT(rc, e, CURLOPT_HTTPGET, 1L);
    } else {
        SETOPT(rc, e, CURLOPT_CUSTOMREQUEST, o->method);
    }
    return rc;
}

int mx_ureq_start(struct mx_uclient *c, const struct mx_ureq_opts *opts,
                  const struct mx_ureq_cbs *cbs, void *data, struct mx_ureq **out)
{
    if (!c || !opts || !cbs || !out)
        return MX_EINVAL;
    int err = check_opts(opts);
    if (err)
        return err;

    bool has_body = opts->body_len > 0 || strcmp(opts->method, "POST") == 0;
    bool own = !c->h1_off && mx_uc_h1_wants(opts->url);
    const char *extra[2];
    size_t extra_cnt = 0, cnt = 0, hdrs_size = 0;
    if (own) {
        hdrs_size = mx_uc_h1_size(opts);
    } else {
        extra_cnt = extra_headers(opts, has_body, extra);
        cnt = opts->header_cnt + extra_cnt;
        hdrs_size = cnt * sizeof(struct curl_slist);
        for (size_t i = 0; i < opts->header_cnt; i++)
            hdrs_size += strlen(opts->headers[i]) + 1;
        for (size_t i = 0; i < extra_cnt; i++)
            hdrs_size += strlen(extra[i]) + 1;
    }
    if (opts->body_len > SIZE_MAX - sizeof(struct mx_ureq) - hdrs_size)
        return MX_EINVAL;
    struct mx_ureq *u = mx_xmalloc(sizeof(*u) + hdrs_size + opts->body_len);
    memset(u, 0, sizeof(*u));
    u->c = c;
    link_init(&u->node);
    link_init(&u->todo);
    u->state = MX_UREQ_PENDING;
    u->id = ++c->next_id;
    u->cbs = *cbs;
    u->data = data;
    u->may_repeat = opts->may_repeat;
    u->has_body = has_body;
    u->hdrs_size = hdrs_size;
    u->body_len = opts->body_len;
    char *text = (char *)(u->lines + cnt);
    if (!own) {
        text = copy_lines(u->lines, opts->headers, opts->header_cnt, text);
        text = copy_lines(u->lines + opts->header_cnt, extra, extra_cnt, text);
        if (cnt) {
            u->lines[cnt - 1].next = NULL;
            u->hdrs = u->lines;
        }
    } else {
        text += hdrs_size; /* the engine's request and head bytes come first */
    }
    if (opts->body_len) {
        u->body = text;
        memcpy(u->body, opts->body, opts->body_len);
    }
    mx_buf_init(&u->head, HEAD_MAX_BYTES);
    link_add_tail(&c->reqs, &u->node);
    c->active++;
    u->stream = opts->stream;

    if (own) {
        err = mx_uc_h1_setup(u, opts, (char *)u->lines);
        if (err)
            goto fail;
    } else {
        u->easy = easy_get(c);
        if (!u->easy) {
            err = MX_EUPSTREAM;
            goto fail;
        }
        CURLcode rc = setup_easy(u, opts);
        if (rc != CURLE_OK) {
            mx_log_debug(SUBSYS, "curl_easy_setopt: %s", curl_easy_strerror(rc));
            err = MX_EUPSTREAM;
            goto fail;
        }
    }
    if (opts->pool) {
        err = pool_join(u, opts->pool);
        if (err)
            goto fail;
    }
    /* Added to the multi handle from on_kick: libcurl refuses that from
     * inside its callbacks, and no callback may run from in here. */
    mx_uc_schedule(u);
    *out = u;
    return 0;
fail:
    mx_uc_ureq_free(u);
    return err;
}

void mx_ureq_cancel(struct mx_ureq *u)
{
    if (!u)
        return;
    struct mx_uclient *c = u->c;
    switch (u->state) {
    case MX_UREQ_PENDING:
        mx_uc_ureq_free(u);
        return;
    case MX_UREQ_RUNNING:
        if (u->h1) {
            mx_uc_h1_cancel(u);
            return;
        }
        if (c->in_curl == 0) {
            curl_multi_remove_handle(c->multi, u->easy);
            mx_uc_ureq_free(u);
            return;
        }
        /* Inside a curl callback: the callbacks see the state and stop
         * libcurl; settle() removes the handle once libcurl returned. */
        mx_uc_set_state(u, MX_UREQ_CANCELLED);
        c->zombies++;
        return;
    case MX_UREQ_CANCELLED:
    case MX_UREQ_DONE:
        /* Already dropped, or on_done is running and frees it next. */
        return;
    }
}

void mx_ureq_resume(struct mx_ureq *u)
{
    if (!u || u->state != MX_UREQ_RUNNING || !u->consumer_paused)
        return;
    u->consumer_paused = false;
    /* If libcurl holds bytes, unpausing hands them to on_data at once: do
     * it from on_kick, not from inside the caller's stack. */
    if (u->curl_paused || u->h1)
        mx_uc_schedule(u);
}
