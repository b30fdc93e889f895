/* SPDX-License-Identifier: MIT */
/*
 * The legacy HTTP+SSE transport of upstream sessions (MCP 2024-11-05,
 * Transports), the row of `transport = "sse"` (mx_upsess_sse_ops): the
 * client opens a GET on the configured url and keeps it; the server's first
 * event, `endpoint`, names the URI to which every client message is POSTed
 * (the POST answers 202 and carries no JSON-RPC), and every server message,
 * answers included, comes as a `message` event on the GET stream. Callers
 * use the mx_upsess_* functions unchanged. Semantics, beyond upsess.h:
 * - the stream opens at the first request (or connect-only request);
 *   requests wait, in order, until the endpoint is known, initialize is
 *   answered and notifications/initialized was accepted;
 * - the upstream's credential goes on the GET and on every POST; the
 *   endpoint must have the configured url's origin (scheme, host, port) or
 *   it is refused, so a server cannot send the credential elsewhere
 *   (mx_sse_endpoint_resolve, upsess_sse.h);
 * - answers are matched to requests by id; progress notifications go to the
 *   request whose progress token they carry; a request from the server goes
 *   to the one request in flight that can cause one when there is exactly
 *   one, else to the session's on_message (as for stdio: the stream carries
 *   no other hint);
 * - a stream that breaks ends the upstream's session: requests POSTed on it
 *   fail (their outcome is unknown; never re-sent), the ones not yet POSTed
 *   wait, and a new stream opens for them (or the next request), after a
 *   backoff when it keeps breaking; on_ready fires again after the new
 *   initialize.
 * Session keys of these sessions have bit 62 set (stdio ones bit 63), so
 * they never equal another transport's. The request table is upmsg.c's.
 * States:
 *
 *   idle --a request waits--> connecting (GET open, no endpoint yet)
 *        --endpoint event--> init (initialize POSTed, then initialized)
 *        --initialized accepted--> ready
 *   connecting, init --stream ends, refused endpoint, bad answer, no answer
 *        in time--> idle (waiting requests fail; the next stream waits out
 *        a backoff)
 *   ready --stream ends--> idle (POSTed requests fail, waiting ones open a
 *        new stream)
 *   any --close--> closed
 *
 * Re-entrancy: callers' callbacks may cancel requests or close the session;
 * a request and the session stay allocated while their code is on the stack
 * (refs) and go afterwards. A POST is out of the session's list before its
 * last callback runs any caller code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "backoff.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "rand.h"
#include "rpc.h"
#include "sse.h"
#include "upcall.h"
#include "upmsg.h"
#include "upsess_sse.h"

#define SUBSYS "upsse"

#define SSE_EVENT_CAP      (16u * 1024 * 1024) /* one event from the stream */
#define ERR_BODY_CAP       (64u * 1024)        /* body of a refused POST */
#define ENDPOINT_CAP       2048u               /* longest endpoint URL accepted */
#define INIT_LIMIT_MS      30000L /* stream opened to session ready, on top of waking */
#define POST_TIMEOUT_MS    30000L /* one POST: the server answers 202 at once */
#define CONNECT_TIMEOUT_MS 10000L
#define STABLE_S           10.0 /* ready this long: a later break is no reconnect loop */
#define BACKOFF_BASE_MS    500
#define BACKOFF_CAP_MS     30000
#define KEY_BIT            (1ULL << 62)

enum se_state {
    SE_IDLE = 0,
    SE_CONNECTING = 1,
    SE_INIT = 2,
    SE_READY = 3,
    SE_CLOSED = 4,
};

enum post_kind {
    P_INIT = 0,
    P_INITIALIZED = 1,
    P_RPC = 2,
    P_SEND = 3,
};

struct se;

/* One POST to the endpoint. */
struct post {
    struct post *prev;
    struct post *next;
    struct se *s;
    enum post_kind kind;
    struct mx_upmsg_rpc *r; /* P_RPC, until the request ends */
    struct mx_upcall *call;
    json_t *id;    /* P_RPC: the id of the request it carries; owned */
    uint64_t conn; /* the stream it belongs to */
    long status;
    struct mx_buf body; /* an error answer, capped */
};

struct se {
    struct mx_upsess base; /* first (upsess_int.h) */
    const struct mx_server_cfg *cfg;
    int refs;
    enum se_state state;
    uint64_t conn; /* streams opened so far; the current one's number */
    char init_id[48];
    char *endpoint;        /* where to POST; NULL before the endpoint event */
    struct mx_upcall *get; /* the stream */
    long get_status;
    bool get_ok; /* 2xx text/event-stream */
    struct mx_sse_decoder dec;
    ev_timer kick;      /* opens and launches from the loop, never from a caller's call */
    ev_timer init_wait; /* bounds connecting + init */
    ev_tstamp opened_at;
    ev_tstamp ready_at;
    ev_tstamp retry_at;  /* no new stream before this */
    unsigned failures;   /* streams in a row that did not last */
    struct mx_upmsg_q q; /* the requests */
    struct post *posts;
};

static uint64_t next_key = 1;

static void se_kick(struct se *s, double after_s);
static void launch_waiting(struct se *s);

static struct se *SE(struct mx_upsess *s)
{
    return mx_container_of(s, struct se, base);
}

static const char *name(const struct se *s)
{
    return s->cfg->name;
}

static const char *state_name(enum se_state st)
{
    switch (st) {
    case SE_IDLE:
        return "idle";
    case SE_CONNECTING:
        return "connecting";
    case SE_INIT:
        return "init";
    case SE_READY:
        return "ready";
    case SE_CLOSED:
        return "closed";
    }
    return "?";
}

static void set_state(struct se *s, enum se_state st)
{
    if (s->state == st)
        return;
    mx_log_debug(SUBSYS, "up:%s session %s -> %s", name(s), state_name(s->state), state_name(st));
    s->state = st;
    s->base.ready = st == SE_READY;
}

/* ---- the endpoint URL (pure) ---- */

struct origin {
    struct mx_str scheme;
    struct mx_str host;
    long port;
    struct mx_str authority; /* as written */
    struct mx_str path;      /* up to '?' or '#' */
    bool userinfo;
};

static long default_port(struct mx_str scheme)
{
    if (mx_str_caseeq_cstr(scheme, "http"))
        return 80;
    if (mx_str_caseeq_cstr(scheme, "https"))
        return 443;
    return -1;
}

/* Split "authority path?query" after "scheme://". Returns 0 or -1. */
static int parse_authority(struct mx_str scheme, const char *p, const char *end, struct origin *o)
{
    const char *a = p;
    while (p < end && *p != '/' && *p != '?' && *p != '#')
        p++;
    o->scheme = scheme;
    o->authority = mx_str_make(a, (size_t)(p - a));
    o->userinfo = memchr(a, '@', (size_t)(p - a)) != NULL;
    const char *q = p;
    while (q < end && *q != '?' && *q != '#')
        q++;
    o->path = mx_str_make(p, (size_t)(q - p));
    const char *hp = a, *he = p;
    if (o->userinfo) {
        const char *at = a;
        for (const char *c = a; c < p; c++) {
            if (*c == '@')
                at = c;
        }
        hp = at + 1;
    }
    const char *colon = NULL;
    if (hp < he && *hp == '[') {
        const char *rb = memchr(hp, ']', (size_t)(he - hp));
        if (rb == NULL)
            return -1;
        o->host = mx_str_make(hp, (size_t)(rb + 1 - hp));
        if (rb + 1 < he) {
            if (rb[1] != ':')
                return -1;
            colon = rb + 1;
        }
    } else {
        colon = memchr(hp, ':', (size_t)(he - hp));
        o->host = mx_str_make(hp, (size_t)((colon ? colon : he) - hp));
    }
    if (o->host.len == 0)
        return -1;
    o->port = default_port(scheme);
    if (colon && colon + 1 < he) {
        long v = 0;
        for (const char *c = colon + 1; c < he; c++) {
            if (*c < '0' || *c > '9' || v > 65535)
                return -1;
            v = v * 10 + (*c - '0');
        }
        if (v < 1 || v > 65535)
            return -1;
        o->port = v;
    }
    return o->port > 0 ? 0 : -1;
}

/* The scheme of |p| when it starts with one (RFC 3986 section 3.1), or an
 * empty slice. */
static struct mx_str scheme_of(const char *p, const char *end)
{
    const char *c = p;
    if (c == end || !((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
        return mx_str_make(p, 0);
    while (c < end && ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                       (*c >= '0' && *c <= '9') || *c == '+' || *c == '-' || *c == '.'))
        c++;
    if (c < end && *c == ':')
        return mx_str_make(p, (size_t)(c - p));
    return mx_str_make(p, 0);
}

/* RFC 3986 section 5.2.4 on the NUL-terminated, writable |in|. */
static void remove_dot_segments(char *in, struct mx_buf *out)
{
    size_t n = strlen(in);
    size_t i = 0;
    while (i < n) {
        const char *r = in + i;
        size_t left = n - i;
        if (left >= 3 && memcmp(r, "../", 3) == 0) {
            i += 3;
        } else if (left >= 2 && memcmp(r, "./", 2) == 0) {
            i += 2;
        } else if (left >= 3 && memcmp(r, "/./", 3) == 0) {
            i += 2;
        } else if (left == 2 && memcmp(r, "/.", 2) == 0) {
            in[i + 1] = '/';
            i += 1;
        } else if ((left >= 4 && memcmp(r, "/../", 4) == 0) ||
                   (left == 3 && memcmp(r, "/..", 3) == 0)) {
            if (left == 3) {
                in[i + 2] = '/';
                i += 2;
            } else {
                i += 3;
            }
            /* drop the last segment written, and its '/' */
            const char *d = mx_buf_data(out);
            size_t len = mx_buf_len(out);
            while (len > 0 && d[len - 1] != '/')
                len--;
            if (len > 0)
                len--;
            out->len = out->off + len;
        } else if ((left == 1 && r[0] == '.') || (left == 2 && memcmp(r, "..", 2) == 0)) {
            i = n;
        } else {
            size_t k = r[0] == '/' ? 1 : 0;
            while (k < left && r[k] != '/')
                k++;
            mx_buf_append(out, r, k);
            i += k;
        }
    }
}

int mx_sse_endpoint_resolve(const char *base, struct mx_str ref, char **out, const char **why)
{
    struct origin b, t;
    *out = NULL;
    *why = NULL;
    if (ref.len == 0) {
        *why = "it is empty";
        return MX_EINVAL;
    }
    if (ref.len > ENDPOINT_CAP) {
        *why = "it is too long";
        return MX_EINVAL;
    }
    for (size_t i = 0; i < ref.len; i++) {
        unsigned char c = (unsigned char)ref.p[i];
        if (c <= 0x20 || c == 0x7f || c == '\\') {
            *why = "it holds spaces, control characters or backslashes";
            return MX_EINVAL;
        }
    }
    const char *rp = ref.p, *rend = ref.p + ref.len;
    const char *hash = memchr(rp, '#', ref.len);
    if (hash)
        rend = hash; /* RFC 3986 section 3.5: never sent */
    if (rend == rp) {
        *why = "it is empty";
        return MX_EINVAL;
    }
    struct mx_str bscheme = scheme_of(base, base + strlen(base));
    const char *bend = base + strlen(base);
    if (bscheme.len == 0 || default_port(bscheme) < 0 || bend - base < (long)bscheme.len + 3 ||
        memcmp(base + bscheme.len, "://", 3) != 0 ||
        parse_authority(bscheme, base + bscheme.len + 3, bend, &b) != 0) {
        *why = "the configured url is not http(s)";
        return MX_EINVAL;
    }

    struct mx_buf path; /* the path and query to resolve dots in */
    mx_buf_init(&path, 2 * ENDPOINT_CAP + 16);
    struct mx_str scheme = scheme_of(rp, rend);
    const char *auth_at = NULL;
    if (scheme.len) {
        if (default_port(scheme) < 0) {
            *why = "it is not an http or https URL";
            mx_buf_clear(&path);
            return MX_EPERM;
        }
        if (rend - rp < (long)scheme.len + 3 || memcmp(rp + scheme.len, "://", 3) != 0) {
            *why = "it is not a URL mcplex can use";
            mx_buf_clear(&path);
            return MX_EINVAL;
        }
        auth_at = rp + scheme.len + 3;
    } else if (rend - rp >= 2 && rp[0] == '/' && rp[1] == '/') {
        scheme = b.scheme; /* network-path reference: the base's scheme */
        auth_at = rp + 2;
    }
    if (auth_at) {
        if (parse_authority(scheme, auth_at, rend, &t) != 0) {
            *why = "its host or port cannot be read";
            mx_buf_clear(&path);
            return MX_EINVAL;
        }
        if (t.userinfo) {
            *why = "it names a user";
            mx_buf_clear(&path);
            return MX_EPERM;
        }
        if (!mx_str_caseeq(t.scheme, b.scheme) || !mx_str_caseeq(t.host, b.host) ||
            t.port != b.port) {
            *why = "it is on another origin than the configured url";
            mx_buf_clear(&path);
            return MX_EPERM;
        }
        const char *pp = t.authority.p + t.authority.len;
        if (pp == rend || *pp != '/')
            mx_buf_append(&path, "/", 1);
        mx_buf_append(&path, pp, (size_t)(rend - pp));
    } else if (rp[0] == '/') {
        mx_buf_append(&path, rp, (size_t)(rend - rp));
    } else if (rp[0] == '?') {
        if (b.path.len)
            mx_buf_append(&path, b.path.p, b.path.len);
        else
            mx_buf_append(&path, "/", 1);
        mx_buf_append(&path, rp, (size_t)(rend - rp));
    } else {
        /* RFC 3986 section 5.2.3: the base path up to its last '/' */
        size_t keep = b.path.len;
        while (keep > 0 && b.path.p[keep - 1] != '/')
            keep--;
        if (keep == 0)
            mx_buf_append(&path, "/", 1);
        else
            mx_buf_append(&path, b.path.p, keep);
        mx_buf_append(&path, rp, (size_t)(rend - rp));
    }
    /* dots count in the path only, not in the query */
    char *all = mx_xstrndup(mx_buf_data(&path), mx_buf_len(&path));
    mx_buf_clear(&path);
    char *q = strchr(all, '?');
    char *query = q ? mx_xstrdup(q) : NULL;
    if (q)
        *q = '\0';
    struct mx_buf clean;
    mx_buf_init(&clean, 2 * ENDPOINT_CAP + 16);
    remove_dot_segments(all, &clean);
    if (mx_buf_len(&clean) == 0 || mx_buf_data(&clean)[0] != '/') {
        struct mx_buf slash;
        mx_buf_init(&slash, 2 * ENDPOINT_CAP + 16);
        mx_buf_append(&slash, "/", 1);
        mx_buf_append(&slash, mx_buf_data(&clean), mx_buf_len(&clean));
        mx_buf_clear(&clean);
        clean = slash;
    }
    *out = mx_xasprintf("%.*s://%.*s%.*s%s", (int)b.scheme.len, b.scheme.p, (int)b.authority.len,
                        b.authority.p, (int)mx_buf_len(&clean), mx_buf_data(&clean),
                        query ? query : "");
    mx_buf_clear(&clean);
    free(all);
    free(query);
    return 0;
}

/* ---- lifetimes ---- */

static void se_ref(struct se *s)
{
    s->refs++;
}

static void se_unref(struct se *s)
{
    MX_ASSERT(s->refs > 0);
    if (--s->refs > 0)
        return;
    mx_upsess_base_clear(&s->base);
    free(s->endpoint);
    mx_sse_decoder_clear(&s->dec);
    free(s);
}

/* A request leaves the table: its POST runs on (it may have reached the
 * server) without it. */
static void rpc_forget(struct mx_upmsg_rpc *r, void *owner)
{
    struct post *p = r->link;
    (void)owner;
    if (p) {
        p->r = NULL;
        r->link = NULL;
    }
}

static void q_resume(void *owner)
{
    struct se *s = owner;
    if (s->get)
        mx_upcall_resume(s->get);
}

static void q_hold(void *owner)
{
    se_ref(owner);
}

static void q_release(void *owner)
{
    se_unref(owner);
}

static void rpc_timeout(struct mx_upmsg_rpc *r, void *owner);

static const struct mx_upmsg_q_ops q_ops = {rpc_forget, q_resume, rpc_timeout, q_hold, q_release};

/* ---- POSTs ---- */

static void post_unlink(struct post *p)
{
    struct se *s = p->s;
    if (p->prev)
        p->prev->next = p->next;
    else if (s->posts == p)
        s->posts = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    if (p->r) {
        p->r->link = NULL;
        p->r = NULL;
    }
}

static void post_free(struct post *p)
{
    json_decref(p->id);
    mx_buf_clear(&p->body);
    free(p);
}

static void post_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                      void *data)
{
    struct post *p = data;
    (void)u;
    (void)hdrs;
    (void)cnt;
    p->status = status;
}

static int post_data(struct mx_ureq *u, const char *b, size_t len, void *data)
{
    struct post *p = data;
    (void)u;
    mx_buf_append(&p->body, b, len); /* beyond the cap: dropped */
    return 0;
}

static void post_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data);

static const struct mx_upcall_cbs post_cbs = {{post_head, post_data, post_done}, NULL, NULL};

/* POST |msg| to the endpoint. Returns the POST, or NULL after filling
 * |fail|. */
static struct post *post_start(struct se *s, enum post_kind kind, const json_t *msg,
                               struct mx_upfail *fail)
{
    struct mx_upreq_hdrs h;
    mx_upreq_hdrs_init(&h);
    mx_upreq_hdrs_add(&h, "Content-Type", MX_STR_LIT("application/json"));
    mx_upreq_hdrs_auth(&h, s->cfg);
    char *body = mx_rpc_dump(msg);
    struct post *p = mx_xcalloc(1, sizeof(*p));
    p->s = s;
    p->kind = kind;
    p->conn = s->conn;
    mx_buf_init(&p->body, ERR_BODY_CAP);
    struct mx_ureq_opts o;
    memset(&o, 0, sizeof(o));
    o.method = "POST";
    o.url = s->endpoint;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.body = body;
    o.body_len = strlen(body);
    o.timeout_ms = POST_TIMEOUT_MS;
    o.connect_timeout_ms = CONNECT_TIMEOUT_MS;
    o.idle_close_ms = (long)s->cfg->idle_close_ms;
    o.ca_file = s->cfg->ca;
    o.may_repeat = false; /* it may have run once it left */
    int rc = mx_upcall_start(s->base.env->loop, s->base.env->uc, s->base.env->up, &o, &post_cbs, p,
                             &p->call);
    mx_upreq_hdrs_clear(&h);
    if (rc) {
        struct mx_ureq_info info;
        memset(&info, 0, sizeof(info));
        mx_upfail_transport(s->cfg, rc, &info, fail);
        post_free(p);
        free(body);
        return NULL;
    }
    mx_upsess_trace(&s->base, "c2s", mx_str_cstr(body));
    free(body);
    p->next = s->posts;
    if (s->posts)
        s->posts->prev = p;
    s->posts = p;
    return p;
}

/* ---- the stream ---- */

static void get_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                     void *data);
static int get_data(struct mx_ureq *u, const char *p, size_t len, void *data);
static void get_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data);
static int on_event(const struct mx_sse_event *ev, void *data);

static void get_idle(void *data);
static const struct mx_upcall_cbs get_cbs = {{get_head, get_data, get_done}, NULL, get_idle};

/* Drop the stream and everything that belongs to it (not the requests). */
static void end_stream(struct se *s)
{
    ev_timer_stop(s->base.env->loop, &s->init_wait);
    if (s->get) {
        mx_upcall_cancel(s->get);
        s->get = NULL;
    }
    free(s->endpoint);
    s->endpoint = NULL;
    s->base.key = 0;
    mx_upmsg_unpause_all(&s->q);
    /* POSTs of the old stream run on (they may have reached the server);
     * conn tells their answers apart */
}

static void schedule_retry(struct se *s)
{
    s->failures++;
    int64_t ms =
        mx_backoff_ms(s->failures - 1, BACKOFF_BASE_MS, BACKOFF_CAP_MS, mx_rand_below(UINT64_MAX));
    s->retry_at = ev_now(s->base.env->loop) + (double)ms / 1000.0;
}

/* Connecting or initializing failed: the waiting requests fail with |f|. */
static void connect_failed(struct se *s, const struct mx_upfail *f)
{
    if (s->state == SE_CLOSED)
        return;
    end_stream(s);
    set_state(s, SE_IDLE);
    schedule_retry(s);
    mx_log_warn(SUBSYS, "%s; next attempt in %.1f s at the earliest", f->message,
                s->retry_at - ev_now(s->base.env->loop));
    se_ref(s);
    mx_upmsg_fail_all(&s->q, false, f);
    /* requests made by those callbacks wait for the next attempt */
    if (s->state == SE_IDLE && mx_upmsg_first(&s->q, false, UINT64_MAX))
        se_kick(s, s->retry_at - ev_now(s->base.env->loop));
    se_unref(s);
}

/* The stream of a ready session ended: the server's session is gone. */
static void stream_lost(struct se *s, const char *how)
{
    struct mx_upfail f;
    if (s->state == SE_CLOSED)
        return;
    se_ref(s);
    end_stream(s);
    set_state(s, SE_IDLE);
    if (ev_now(s->base.env->loop) - s->ready_at >= STABLE_S)
        s->failures = 0;
    else
        schedule_retry(s);
    mx_log_warn(SUBSYS, "up:%s %s; a new stream opens at the next request", name(s), how);
    /* what was POSTed may have run: never POSTed twice */
    mx_upmsg_fail(s->cfg, MX_RPC_OUTCOME_UNKNOWN, "outcome-unknown", &f,
                  "%s before it answered; the request was not repeated", how);
    mx_upmsg_fail_all(&s->q, true, &f);
    if (s->state == SE_IDLE && mx_upmsg_first(&s->q, false, UINT64_MAX))
        se_kick(s, 0.0);
    se_unref(s);
}

static void init_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct se *s = mx_container_of(w, struct se, init_wait);
    struct mx_upfail f;
    (void)loop;
    (void)revents;
    if (s->state != SE_CONNECTING && s->state != SE_INIT)
        return;
    mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", &f, "%s",
                  s->state == SE_CONNECTING ? "did not announce its message endpoint in time"
                                            : "did not answer initialize in time");
    se_ref(s);
    connect_failed(s, &f);
    se_unref(s);
}

static void open_stream(struct se *s)
{
    struct mx_upreq_hdrs h;
    struct mx_upfail f;
    mx_upreq_hdrs_init(&h);
    mx_upreq_hdrs_add(&h, "Accept", MX_STR_LIT("text/event-stream"));
    mx_upreq_hdrs_auth(&h, s->cfg);
    struct mx_ureq_opts o;
    memset(&o, 0, sizeof(o));
    o.method = "GET";
    o.url = s->cfg->url;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.timeout_ms = 0; /* the stream lives as long as the session */
    o.connect_timeout_ms = CONNECT_TIMEOUT_MS;
    o.idle_close_ms = (long)s->cfg->idle_close_ms;
    o.ca_file = s->cfg->ca;
    o.may_repeat = true;
    s->conn++;
    s->get_status = 0;
    s->get_ok = false;
    mx_sse_decoder_clear(&s->dec);
    mx_sse_decoder_init(&s->dec, SSE_EVENT_CAP, on_event, s);
    set_state(s, SE_CONNECTING);
    int rc = mx_upcall_start(s->base.env->loop, s->base.env->uc, s->base.env->up, &o, &get_cbs, s,
                             &s->get);
    mx_upreq_hdrs_clear(&h);
    if (rc) {
        struct mx_ureq_info info;
        memset(&info, 0, sizeof(info));
        s->get = NULL;
        mx_upfail_transport(s->cfg, rc, &info, &f);
        connect_failed(s, &f);
        return;
    }
    s->opened_at = ev_now(s->base.env->loop);
    /* waking may hold the GET: its bound comes on top */
    double limit = (double)(INIT_LIMIT_MS + s->cfg->wake_timeout_ms) / 1000.0;
    ev_timer_set(&s->init_wait, limit, 0.0);
    ev_timer_start(s->base.env->loop, &s->init_wait);
    mx_log_debug(SUBSYS, "up:%s opening the event stream", name(s));
}

static bool is_2xx(long st)
{
    return st >= 200 && st < 300;
}

static void get_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                     void *data)
{
    struct se *s = data;
    bool sse = false;
    (void)u;
    s->get_status = status;
    for (size_t i = 0; i < cnt; i++) {
        if (mx_str_caseeq_cstr(hdrs[i].name, "Content-Type"))
            sse = mx_str_has_prefix(hdrs[i].value, MX_STR_LIT("text/event-stream"));
    }
    s->get_ok = is_2xx(status) && sse;
}

static int get_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    struct se *s = data;
    (void)u;
    if (s->state == SE_CLOSED || s->get == NULL)
        return 0;
    if (!s->get_ok)
        return 0; /* a refusal: its status says enough */
    se_ref(s);
    uint64_t conn = s->conn;
    int rc = mx_sse_decode(&s->dec, p, len);
    if (rc == MX_ELIMIT && s->conn == conn && s->get)
        mx_log_warn(SUBSYS, "up:%s sent an event over %u bytes; dropped", name(s), SSE_EVENT_CAP);
    bool pause = s->state == SE_READY && s->q.paused_cnt > 0 && s->conn == conn && s->get;
    se_unref(s);
    return pause ? MX_EAGAIN : 0;
}

static void get_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct se *s = data;
    struct mx_upfail f;
    char how[96];
    (void)u;
    s->get = NULL; /* gone after this callback */
    if (s->state == SE_CLOSED)
        return;
    se_ref(s);
    if (s->state == SE_READY) {
        if (err)
            snprintf(how, sizeof(how), "lost its event stream (%s)", mx_strerror(err));
        else
            snprintf(how, sizeof(how), "ended its event stream");
        stream_lost(s, how);
    } else if (s->state == SE_CONNECTING || s->state == SE_INIT) {
        if (err) {
            mx_upfail_transport(s->cfg, err, info, &f);
        } else if (!is_2xx(s->get_status)) {
            mx_upfail_status(s->cfg, s->get_status, &f); /* logged by connect_failed */
        } else if (!s->get_ok) {
            mx_upfail_proto(s->cfg, "its url did not answer with an event stream", &f);
        } else {
            mx_upfail_proto(s->cfg, "its event stream ended before the session was ready", &f);
        }
        connect_failed(s, &f);
    }
    se_unref(s);
}

/* idle_close closed the event stream, and with it the server's session
 * (the transport has no other): the next request opens a new one and
 * initializes again, which tells the caller (on_ready) to look again. */
static void get_idle(void *data)
{
    struct se *s = data;
    struct mx_upfail f;
    s->get = NULL; /* gone */
    if (s->state == SE_CLOSED)
        return;
    se_ref(s);
    if (s->state == SE_READY) {
        end_stream(s);
        set_state(s, SE_IDLE);
        mx_log_info(SUBSYS,
                    "up:%s event stream closed at idle_close; a new one opens at the "
                    "next request",
                    name(s));
    } else {
        mx_upfail_proto(s->cfg, "its event stream was closed at idle_close", &f);
        connect_failed(s, &f);
    }
    se_unref(s);
}

/* ---- initialize ---- */

static void send_initialize(struct se *s)
{
    struct mx_upfail f;
    snprintf(s->init_id, sizeof(s->init_id), "mcplex-init-%llu", (unsigned long long)s->conn);
    /* the transport is 2024-11-05's; the version, whichever the server picks */
    json_t *id = json_string(s->init_id);
    json_t *msg = mx_upmsg_initialize(s->base.caps, id);
    json_decref(id);
    struct post *p = post_start(s, P_INIT, msg, &f);
    json_decref(msg);
    if (p == NULL)
        connect_failed(s, &f);
}

static void got_endpoint(struct se *s, struct mx_str data)
{
    struct mx_upfail f;
    const char *why;
    char *url;
    if (s->state != SE_CONNECTING) {
        mx_log_debug(SUBSYS, "up:%s announced an endpoint again; ignored", name(s));
        return;
    }
    int rc = mx_sse_endpoint_resolve(s->cfg->url, mx_str_trim(data), &url, &why);
    if (rc) {
        /* the endpoint itself is not logged: it is the server's word */
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", &f,
                      "broke the protocol: mcplex refuses its message endpoint: %s", why);
        connect_failed(s, &f);
        return;
    }
    s->endpoint = url;
    set_state(s, SE_INIT);
    mx_log_debug(SUBSYS, "up:%s message endpoint known; initializing", name(s));
    send_initialize(s);
}

static void init_answered(struct se *s, json_t *msg)
{
    struct mx_upfail f;
    json_t *result = json_object_get(msg, "result");
    if (!mx_upmsg_init_ok(s->cfg, msg, &f)) {
        connect_failed(s, &f);
        return;
    }
    json_decref(s->base.init_result);
    s->base.init_result = json_incref(result);
    s->init_id[0] = '\0';
    /* MCP 2024-11-05, Lifecycle: initialized before anything else; requests
     * go once the server took it */
    json_t *note = mx_upmsg_initialized();
    struct post *p = post_start(s, P_INITIALIZED, note, &f);
    json_decref(note);
    if (p == NULL)
        connect_failed(s, &f);
}

/* The caller (post_done) holds a ref on |s| across the callbacks. */
static void session_ready(struct se *s)
{
    ev_timer_stop(s->base.env->loop, &s->init_wait);
    s->base.key = KEY_BIT | next_key++;
    s->ready_at = ev_now(s->base.env->loop);
    set_state(s, SE_READY);
    const char *v = json_string_value(json_object_get(s->base.init_result, "protocolVersion"));
    mx_log_info(SUBSYS, "up:%s ready over HTTP+SSE (MCP %s, %.1f s to connect)", name(s),
                v ? v : "?", s->ready_at - s->opened_at);
    launch_waiting(s);
    if (s->state == SE_READY && s->base.cbs.on_ready)
        s->base.cbs.on_ready(&s->base, s->base.init_result, s->base.data);
}

/* ---- POST answers ---- */

/* Is |body| a JSON-RPC error answering |id|? Returns it (new reference). */
static json_t *error_answer(struct mx_str body, const json_t *id)
{
    json_t *m = mx_rpc_parse(body);
    if (m && id && json_equal(json_object_get(m, "id"), id) && json_object_get(m, "error"))
        return m;
    json_decref(m);
    return NULL;
}

static void post_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct post *p = data;
    struct se *s = p->s;
    struct mx_upmsg_rpc *r = p->r;
    struct mx_upfail f;
    (void)u;
    p->call = NULL;
    post_unlink(p); /* nothing below reaches it again */
    bool current = p->conn == s->conn && s->state != SE_CLOSED;
    bool ok = err == 0 && is_2xx(p->status);
    if (!ok) {
        if (err)
            mx_upfail_transport(s->cfg, err, info, &f);
        else
            mx_upfail_status(s->cfg, p->status, &f);
        if (!err && (p->status == 401 || p->status == 403))
            mx_log_warn(SUBSYS, "up:%s answered %ld: credential refused", name(s), p->status);
    }
    se_ref(s);
    switch (p->kind) {
    case P_INIT:
        if (!ok && current && s->state == SE_INIT)
            connect_failed(s, &f);
        break;
    case P_INITIALIZED:
        if (current && s->state == SE_INIT) {
            if (ok)
                session_ready(s);
            else
                connect_failed(s, &f);
        }
        break;
    case P_RPC:
        if (ok || r == NULL || r->dead)
            break;
        if (!err) {
            json_t *m = error_answer(mx_buf_str(&p->body), p->id);
            if (m) {
                mx_upsess_trace(&s->base, "s2c", mx_buf_str(&p->body));
                mx_upmsg_finish(r, m, NULL);
                json_decref(m);
                break;
            }
        }
        mx_upmsg_finish(r, NULL, &f);
        /* a server that no longer knows the session (Python SDK: 404) will
         * answer nothing more on this stream */
        if (!err && p->status == 404 && current && s->state == SE_READY)
            stream_lost(s, "no longer knows the session");
        break;
    case P_SEND:
        if (!ok)
            mx_log_debug(SUBSYS, "up:%s message not delivered: %s", name(s), f.message);
        break;
    }
    se_unref(s);
    post_free(p);
}

/* ---- reading the stream ---- */

static void reply_ping(struct se *s, json_t *msg)
{
    struct mx_upfail f;
    json_t *r = mx_upmsg_ping_answer(msg);
    post_start(s, P_SEND, r, &f);
    json_decref(r);
}

static void handle_msg(struct se *s, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    switch (mx_rpc_classify(msg)) {
    case MX_RPC_RESPONSE: {
        json_t *id = json_object_get(msg, "id");
        if (s->state == SE_INIT && s->init_id[0] && json_is_string(id) &&
            strcmp(json_string_value(id), s->init_id) == 0) {
            init_answered(s, msg);
            return;
        }
        struct mx_upmsg_rpc *r = s->state == SE_READY ? mx_upmsg_by_id(&s->q, id) : NULL;
        if (r)
            mx_upmsg_finish(r, msg, NULL);
        else
            mx_log_debug(SUBSYS, "up:%s answered a request nobody waits for; dropped", name(s));
        return;
    }
    case MX_RPC_NOTIFICATION:
    case MX_RPC_REQUEST:
        if (s->state != SE_READY) {
            if (strcmp(method, "ping") == 0 && s->endpoint)
                reply_ping(s, msg);
            else
                mx_log_debug(SUBSYS, "up:%s %s before initialized; dropped", name(s), method);
            return;
        }
        if (mx_upmsg_route(&s->q, msg, s->base.key))
            return;
        break;
    case MX_RPC_INVALID:
        mx_log_debug(SUBSYS, "up:%s sent JSON that is not JSON-RPC; ignored", name(s));
        return;
    }
    if (s->base.cbs.on_message)
        s->base.cbs.on_message(&s->base, s->base.key, msg, s->base.data);
}

static void got_message(struct se *s, struct mx_str text)
{
    json_t *msg = mx_rpc_parse(text);
    if (msg == NULL || (!json_is_object(msg) && !json_is_array(msg))) {
        json_decref(msg);
        mx_log_debug(SUBSYS, "up:%s sent an event that is not JSON-RPC; ignored", name(s));
        return;
    }
    mx_upsess_trace(&s->base, "s2c", text);
    uint64_t conn = s->conn;
    if (json_is_object(msg)) {
        handle_msg(s, msg);
    } else {
        size_t i;
        json_t *v;
        json_array_foreach(msg, i, v)
        {
            if (s->state == SE_CLOSED || s->conn != conn || s->get == NULL)
                break;
            if (json_is_object(v))
                handle_msg(s, v);
        }
    }
    json_decref(msg);
}

static int on_event(const struct mx_sse_event *ev, void *data)
{
    struct se *s = data;
    uint64_t conn = s->conn;
    if (mx_str_eq(ev->event, MX_STR_LIT("endpoint")))
        got_endpoint(s, ev->data);
    else if (ev->event.len == 0 || mx_str_eq(ev->event, MX_STR_LIT("message")))
        got_message(s, ev->data);
    /* other event names: not ours (MCP 2024-11-05 defines these two) */
    if (s->state == SE_CLOSED || s->conn != conn || s->get == NULL)
        return MX_ECLOSED; /* the stream was dropped: no more of it */
    return 0;
}

/* ---- launching ---- */

static void post_rpc(struct se *s, struct mx_upmsg_rpc *r)
{
    struct mx_upfail f;
    r->sent = true;
    r->key = s->base.key;
    struct post *p = post_start(s, P_RPC, r->msg, &f);
    if (p == NULL) {
        mx_upmsg_finish(r, NULL, &f);
        return;
    }
    p->r = r;
    p->id = json_incref(r->id);
    r->link = p;
}

static void launch_waiting(struct se *s)
{
    struct mx_upmsg_rpc *r;
    se_ref(s);
    while (s->state == SE_READY && (r = mx_upmsg_first(&s->q, false, UINT64_MAX)) != NULL) {
        if (r->msg == NULL)
            mx_upmsg_finish(r, NULL, NULL);
        else
            post_rpc(s, r);
    }
    se_unref(s);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct se *s = mx_container_of(w, struct se, kick);
    (void)revents;
    if (s->state == SE_CLOSED)
        return;
    se_ref(s);
    if (s->state == SE_READY) {
        launch_waiting(s);
    } else if (s->state == SE_IDLE && mx_upmsg_first(&s->q, false, UINT64_MAX)) {
        ev_tstamp now = ev_now(loop);
        if (now < s->retry_at)
            se_kick(s, s->retry_at - now);
        else
            open_stream(s);
    }
    se_unref(s);
}

static void se_kick(struct se *s, double after_s)
{
    mx_upmsg_kick(s->base.env->loop, &s->kick, after_s);
}

static void rpc_timeout(struct mx_upmsg_rpc *r, void *owner)
{
    struct se *s = owner;
    struct mx_upfail f;
    if (r->sent && r->key == s->base.key && s->state == SE_READY) {
        /* MCP 2024-11-05, Cancellation: tell it to stop working on it */
        json_t *note = mx_upmsg_cancelled(r->id, "timed out in mcplex");
        post_start(s, P_SEND, note, &f);
        json_decref(note);
    }
    mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", &f, "timed out after %ld s%s",
                  (r->timeout_ms + 999) / 1000, r->sent ? "" : " before the request could be sent");
    mx_upmsg_finish(r, NULL, &f);
}

/* ---- the ops (upsess_int.h) ---- */

static struct mx_upsess *sse_open(struct mx_upsess_env *env, const json_t *caps,
                                  const char *trace_session, const struct mx_upsess_cbs *cbs,
                                  void *data)
{
    struct se *s = mx_xcalloc(1, sizeof(*s));
    mx_upsess_base_init(&s->base, &mx_upsess_sse_ops, env, caps, trace_session, cbs, data);
    s->cfg = env->up->cfg;
    s->refs = 1;
    s->state = SE_IDLE;
    mx_sse_decoder_init(&s->dec, SSE_EVENT_CAP, on_event, s);
    ev_init(&s->kick, kick_cb);
    ev_init(&s->init_wait, init_wait_cb);
    mx_upmsg_q_init(&s->q, env->loop, &mx_upsess_sse_ops, s->cfg, &q_ops, s);
    return &s->base;
}

static void sse_close(struct mx_upsess *pub)
{
    struct se *s = SE(pub);
    if (s->state == SE_CLOSED)
        return;
    set_state(s, SE_CLOSED);
    ev_timer_stop(s->base.env->loop, &s->kick);
    end_stream(s); /* MCP 2024-11-05: the session ends with its stream */
    while (s->posts) {
        struct post *p = s->posts;
        if (p->call)
            mx_upcall_cancel(p->call);
        post_unlink(p);
        post_free(p);
    }
    mx_upmsg_kill_all(&s->q);
    se_unref(s);
}

static int sse_request(struct mx_upsess *pub, json_t *msg, long timeout_ms,
                       const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    struct se *s = SE(pub);
    if (s->state == SE_CLOSED || s->cfg->url == NULL)
        return MX_EINVAL;
    mx_upmsg_add(&s->q, msg, timeout_ms, cbs, data, out);
    /* from the loop: no callback may run from inside this call */
    se_kick(s, 0.0);
    return 0;
}

static void sse_send(struct mx_upsess *pub, json_t *msg)
{
    struct se *s = SE(pub);
    struct mx_upfail f;
    if (post_start(s, P_SEND, msg, &f) == NULL) {
        mx_log_warn(SUBSYS, "up:%s message not sent: %s", name(s), f.message);
        return;
    }
    mx_upmsg_sent(&s->q, msg, s->base.key);
}

const struct mx_upsess_ops mx_upsess_sse_ops = {
    .label = "legacy HTTP+SSE",
    .subsys = SUBSYS,
    .caps = 0,
    .open = sse_open,
    .close = sse_close,
    .request = sse_request,
    .send = sse_send,
    .cancel = mx_upmsg_cancel,
    .resume = mx_upmsg_resume,
};
