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
 * they never equal another transport's. The session core (states,
 * initialize, dispatch) is upchan.c's, the request table upmsg.c's; this
 * file is the endpoint, the POSTs and the stream. States (upchan.h):
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
 * Re-entrancy, beyond upchan.h: a POST is out of the session's list before
 * its last callback runs any caller code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "rpc.h"
#include "sse.h"
#include "upcall.h"
#include "upchan.h"
#include "upsess_sse.h"

#define SUBSYS "upsse"

#define SSE_EVENT_CAP      (16u * 1024 * 1024) /* one event from the stream */
#define ERR_BODY_CAP       (64u * 1024)        /* body of a refused POST */
#define ENDPOINT_CAP       2048u               /* longest endpoint URL accepted */
#define INIT_LIMIT_MS      30000L /* stream opened to session ready, on top of waking */
#define POST_TIMEOUT_MS    30000L /* one POST: the server answers 202 at once */
#define CONNECT_TIMEOUT_MS 10000L
#define KEY_BIT            (1ULL << 62)

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
    struct mx_upchan c;    /* first: the session (upchan.h); c.conn numbers the streams */
    char *endpoint;        /* where to POST; NULL before the endpoint event */
    struct mx_upcall *get; /* the stream */
    long get_status;
    bool get_ok; /* 2xx text/event-stream */
    struct mx_sse_decoder dec;
    struct post *posts;
};

static uint64_t next_key = 1;

static struct se *SE(struct mx_upchan *c)
{
    return mx_container_of(c, struct se, c);
}

static const char *name(const struct se *s)
{
    return s->c.cfg->name;
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

static void sse_free(struct mx_upchan *c)
{
    struct se *s = SE(c);
    free(s->endpoint);
    mx_sse_decoder_clear(&s->dec);
    free(s);
}

/* A request leaves the table: its POST runs on (it may have reached the
 * server) without it. */
static void sse_forget(struct mx_upchan *c, struct mx_upmsg_rpc *r)
{
    struct post *p = r->link;
    (void)c;
    if (p) {
        p->r = NULL;
        r->link = NULL;
    }
}

static void sse_resume(struct mx_upchan *c)
{
    struct se *s = SE(c);
    if (s->get)
        mx_upcall_resume(s->get);
}

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

/* POST |msg| to the endpoint. Returns 0 and the POST in |*out| (|out| may
 * be NULL), or the error of mx_upcall_start after filling |fail|. */
static int post_start(struct se *s, enum post_kind kind, const json_t *msg, struct post **out,
                      struct mx_upfail *fail)
{
    struct mx_upreq_hdrs h;
    mx_upreq_hdrs_init(&h);
    mx_upreq_hdrs_add(&h, "Content-Type", MX_STR_LIT("application/json"));
    /* the credential: mx_upcall_start adds it to each attempt */
    char *body = mx_rpc_dump(msg);
    struct post *p = mx_xcalloc(1, sizeof(*p));
    p->s = s;
    p->kind = kind;
    p->conn = s->c.conn;
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
    o.idle_close_ms = (long)s->c.cfg->idle_close_ms;
    o.ca_file = s->c.cfg->ca;
    o.may_repeat = false; /* it may have run once it left */
    struct mx_upsess_env *env = s->c.base.env;
    int rc = mx_upcall_start(env->loop, env->uc, env->up, &o, &post_cbs, p, &p->call);
    mx_upreq_hdrs_clear(&h);
    if (rc) {
        struct mx_ureq_info info;
        memset(&info, 0, sizeof(info));
        mx_upfail_transport(s->c.cfg, rc, &info, fail);
        post_free(p);
        free(body);
        return rc;
    }
    mx_upsess_trace(&s->c.base, "c2s", mx_str_cstr(body));
    free(body);
    p->next = s->posts;
    if (s->posts)
        s->posts->prev = p;
    s->posts = p;
    if (out)
        *out = p;
    return 0;
}

/* A POST that cannot start: initialize and initialized fail the start, the
 * caller's message is logged, mcplex's own notes are dropped. */
static int sse_write(struct mx_upchan *c, enum mx_upchan_msg what, const json_t *msg)
{
    static const enum post_kind kinds[] = {
        [MX_UPCHAN_INITIALIZE] = P_INIT,
        [MX_UPCHAN_INITIALIZED] = P_INITIALIZED,
        [MX_UPCHAN_NOTE] = P_SEND,
        [MX_UPCHAN_SEND] = P_SEND,
    };
    struct se *s = SE(c);
    struct mx_upfail f;
    int rc = post_start(s, kinds[what], msg, NULL, &f);
    if (rc == 0)
        return 0;
    if (what == MX_UPCHAN_SEND)
        mx_log_warn(SUBSYS, "up:%s message not sent: %s", name(s), f.message);
    else if (what != MX_UPCHAN_NOTE)
        mx_upchan_start_failed(c, &f);
    return rc;
}

/* The session closes: its POSTs go with it. */
static void sse_close(struct mx_upchan *c)
{
    struct se *s = SE(c);
    while (s->posts) {
        struct post *p = s->posts;
        if (p->call)
            mx_upcall_cancel(p->call);
        post_unlink(p);
        post_free(p);
    }
}

/* ---- the stream ---- */

static void get_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                     void *data);
static int get_data(struct mx_ureq *u, const char *p, size_t len, void *data);
static void get_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data);
static int on_event(const struct mx_sse_event *ev, void *data);

static void get_idle(void *data);
static const struct mx_upcall_cbs get_cbs = {{get_head, get_data, get_done}, NULL, get_idle};

/* Drop the stream and everything that belongs to it (not the requests):
 * MCP 2024-11-05, the session ends with its stream. */
static void sse_end(struct mx_upchan *c)
{
    struct se *s = SE(c);
    if (s->get) {
        mx_upcall_cancel(s->get);
        s->get = NULL;
    }
    free(s->endpoint);
    s->endpoint = NULL;
    /* POSTs of the old stream run on (they may have reached the server);
     * conn tells their answers apart */
}

static void sse_failed(struct mx_upchan *c, const struct mx_upfail *f, int64_t ms)
{
    (void)ms;
    mx_log_warn(SUBSYS, "%s; next attempt in %.1f s at the earliest", f->message,
                c->retry_at - ev_now(c->base.env->loop));
}

static bool sse_init_wait(struct mx_upchan *c, struct mx_upfail *f)
{
    mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", f, "%s",
                  c->state == MX_UPCHAN_OPENING ? "did not announce its message endpoint in time"
                                                : "did not answer initialize in time");
    return true;
}

static void sse_start(struct mx_upchan *c)
{
    struct se *s = SE(c);
    struct mx_upreq_hdrs h;
    struct mx_upfail f;
    mx_upreq_hdrs_init(&h);
    mx_upreq_hdrs_add(&h, "Accept", MX_STR_LIT("text/event-stream"));
    struct mx_ureq_opts o;
    memset(&o, 0, sizeof(o));
    o.method = "GET";
    o.url = c->cfg->url;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.timeout_ms = 0; /* the stream lives as long as the session */
    o.connect_timeout_ms = CONNECT_TIMEOUT_MS;
    o.idle_close_ms = (long)c->cfg->idle_close_ms;
    o.ca_file = c->cfg->ca;
    o.may_repeat = true;
    s->get_status = 0;
    s->get_ok = false;
    mx_sse_decoder_clear(&s->dec);
    mx_sse_decoder_init(&s->dec, SSE_EVENT_CAP, on_event, s);
    mx_upchan_set_state(c, MX_UPCHAN_OPENING);
    struct mx_upsess_env *env = c->base.env;
    int rc = mx_upcall_start(env->loop, env->uc, env->up, &o, &get_cbs, s, &s->get);
    mx_upreq_hdrs_clear(&h);
    if (rc) {
        struct mx_ureq_info info;
        memset(&info, 0, sizeof(info));
        s->get = NULL;
        mx_upfail_transport(c->cfg, rc, &info, &f);
        mx_upchan_start_failed(c, &f);
        return;
    }
    /* waking may hold the GET: its bound comes on top */
    mx_upchan_wait_init(c, (double)(INIT_LIMIT_MS + c->cfg->wake_timeout_ms) / 1000.0);
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
    if (s->c.state == MX_UPCHAN_CLOSED || s->get == NULL)
        return 0;
    if (!s->get_ok)
        return 0; /* a refusal: its status says enough */
    mx_upchan_ref(&s->c);
    uint64_t conn = s->c.conn;
    int rc = mx_sse_decode(&s->dec, p, len);
    if (rc == MX_ELIMIT && s->c.conn == conn && s->get)
        mx_log_warn(SUBSYS, "up:%s sent an event over %u bytes; dropped", name(s), SSE_EVENT_CAP);
    bool pause =
        s->c.state == MX_UPCHAN_READY && s->c.q.paused_cnt > 0 && s->c.conn == conn && s->get;
    mx_upchan_unref(&s->c);
    return pause ? MX_EAGAIN : 0;
}

static void get_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct se *s = data;
    struct mx_upfail f;
    char how[96];
    (void)u;
    s->get = NULL; /* gone after this callback */
    if (s->c.state == MX_UPCHAN_CLOSED)
        return;
    mx_upchan_ref(&s->c);
    if (s->c.state == MX_UPCHAN_READY) {
        if (err)
            snprintf(how, sizeof(how), "lost its event stream (%s)", mx_strerror(err));
        else
            snprintf(how, sizeof(how), "ended its event stream");
        mx_upchan_lost(&s->c, how);
    } else if (s->c.state == MX_UPCHAN_OPENING || s->c.state == MX_UPCHAN_INIT) {
        if (err) {
            mx_upfail_transport(s->c.cfg, err, info, &f);
        } else if (!is_2xx(s->get_status)) {
            mx_upfail_status(s->c.cfg, s->get_status, &f); /* logged by sse_failed */
        } else if (!s->get_ok) {
            mx_upfail_proto(s->c.cfg, "its url did not answer with an event stream", &f);
        } else {
            mx_upfail_proto(s->c.cfg, "its event stream ended before the session was ready", &f);
        }
        mx_upchan_start_failed(&s->c, &f);
    }
    mx_upchan_unref(&s->c);
}

/* idle_close closed the event stream, and with it the server's session
 * (the transport has no other): the next request opens a new one and
 * initializes again, which tells the caller (on_ready) to look again. */
static void get_idle(void *data)
{
    struct se *s = data;
    struct mx_upfail f;
    s->get = NULL; /* gone */
    if (s->c.state == MX_UPCHAN_CLOSED)
        return;
    mx_upchan_ref(&s->c);
    if (s->c.state == MX_UPCHAN_READY) {
        mx_upchan_end(&s->c);
        mx_log_info(SUBSYS,
                    "up:%s event stream closed at idle_close; a new one opens at the "
                    "next request",
                    name(s));
    } else {
        mx_upfail_proto(s->c.cfg, "its event stream was closed at idle_close", &f);
        mx_upchan_start_failed(&s->c, &f);
    }
    mx_upchan_unref(&s->c);
}

/* ---- initialize ---- */

static void got_endpoint(struct se *s, struct mx_str data)
{
    struct mx_upfail f;
    const char *why;
    char *url;
    if (s->c.state != MX_UPCHAN_OPENING) {
        mx_log_debug(SUBSYS, "up:%s announced an endpoint again; ignored", name(s));
        return;
    }
    int rc = mx_sse_endpoint_resolve(s->c.cfg->url, mx_str_trim(data), &url, &why);
    if (rc) {
        /* the endpoint itself is not logged: it is the server's word */
        mx_upmsg_fail(s->c.cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", &f,
                      "broke the protocol: mcplex refuses its message endpoint: %s", why);
        mx_upchan_start_failed(&s->c, &f);
        return;
    }
    s->endpoint = url;
    mx_upchan_set_state(&s->c, MX_UPCHAN_INIT);
    mx_log_debug(SUBSYS, "up:%s message endpoint known; initializing", name(s));
    /* the transport is 2024-11-05's; the version, whichever the server picks */
    mx_upchan_send_initialize(&s->c, s->c.conn);
}

static void sse_ready(struct mx_upchan *c)
{
    const char *v = json_string_value(json_object_get(c->base.init_result, "protocolVersion"));
    mx_log_info(SUBSYS, "up:%s ready over HTTP+SSE (MCP %s, %.1f s to connect)", c->cfg->name,
                v ? v : "?", c->ready_at - c->started_at);
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
    bool current = p->conn == s->c.conn && s->c.state != MX_UPCHAN_CLOSED;
    bool ok = err == 0 && is_2xx(p->status);
    if (!ok) {
        if (err)
            mx_upfail_transport(s->c.cfg, err, info, &f);
        else
            mx_upfail_status(s->c.cfg, p->status, &f);
        if (!err && (p->status == 401 || p->status == 403))
            mx_log_warn(SUBSYS, "up:%s answered %ld: credential refused", name(s), p->status);
    }
    mx_upchan_ref(&s->c);
    switch (p->kind) {
    case P_INIT:
        if (!ok && current && s->c.state == MX_UPCHAN_INIT)
            mx_upchan_start_failed(&s->c, &f);
        break;
    case P_INITIALIZED:
        if (current && s->c.state == MX_UPCHAN_INIT) {
            if (ok)
                mx_upchan_ready(&s->c);
            else
                mx_upchan_start_failed(&s->c, &f);
        }
        break;
    case P_RPC:
        if (ok || r == NULL || r->dead)
            break;
        if (!err) {
            json_t *m = error_answer(mx_buf_str(&p->body), p->id);
            if (m) {
                mx_upsess_trace(&s->c.base, "s2c", mx_buf_str(&p->body));
                mx_upmsg_finish(r, m, NULL);
                json_decref(m);
                break;
            }
        }
        mx_upmsg_finish(r, NULL, &f);
        /* a server that no longer knows the session (Python SDK: 404) will
         * answer nothing more on this stream */
        if (!err && p->status == 404 && current && s->c.state == MX_UPCHAN_READY)
            mx_upchan_lost(&s->c, "no longer knows the session");
        break;
    case P_SEND:
        if (!ok)
            mx_log_debug(SUBSYS, "up:%s message not delivered: %s", name(s), f.message);
        break;
    }
    mx_upchan_unref(&s->c);
    post_free(p);
}

/* ---- reading the stream ---- */

static void sse_junk(struct mx_upchan *c, enum mx_upchan_junk what)
{
    if (what == MX_UPCHAN_JUNK_TEXT)
        mx_log_debug(SUBSYS, "up:%s sent an event that is not JSON-RPC; ignored", c->cfg->name);
    else if (what == MX_UPCHAN_JUNK_JSON)
        mx_log_debug(SUBSYS, "up:%s sent JSON that is not JSON-RPC; ignored", c->cfg->name);
    /* a batch item that is not an object: skipped */
}

static int on_event(const struct mx_sse_event *ev, void *data)
{
    struct se *s = data;
    uint64_t conn = s->c.conn;
    if (mx_str_eq(ev->event, MX_STR_LIT("endpoint")))
        got_endpoint(s, ev->data);
    else if (ev->event.len == 0 || mx_str_eq(ev->event, MX_STR_LIT("message")))
        mx_upchan_input(&s->c, ev->data);
    /* other event names: not ours (MCP 2024-11-05 defines these two) */
    if (s->c.state == MX_UPCHAN_CLOSED || s->c.conn != conn || s->get == NULL)
        return MX_ECLOSED; /* the stream was dropped: no more of it */
    return 0;
}

/* ---- launching ---- */

static bool sse_launch(struct mx_upchan *c, struct mx_upmsg_rpc *r)
{
    struct se *s = SE(c);
    struct mx_upfail f;
    struct post *p;
    r->sent = true;
    r->key = c->base.key;
    if (post_start(s, P_RPC, r->msg, &p, &f) != 0) {
        mx_upmsg_finish(r, NULL, &f);
        return true;
    }
    p->r = r;
    p->id = json_incref(r->id);
    r->link = p;
    return true;
}

/* ---- the ops ---- */

static const struct mx_upchan_ops chan_ops = {
    .transport = &mx_upsess_sse_ops,
    .subsys = SUBSYS,
    .state_names = {[MX_UPCHAN_IDLE] = "idle",
                    [MX_UPCHAN_OPENING] = "connecting",
                    [MX_UPCHAN_INIT] = "init",
                    [MX_UPCHAN_READY] = "ready",
                    [MX_UPCHAN_CLOSED] = "closed"},
    .key_bit = KEY_BIT,
    .next_key = &next_key,
    .lost_then = "a new stream opens at the next request",
    .ready_on_write = false, /* once the POST of initialized is accepted */
    .start = sse_start,
    .write = sse_write,
    .launch = sse_launch,
    .end = sse_end,
    .close = sse_close,
    .resume = sse_resume,
    .forget = sse_forget,
    .init_wait = sse_init_wait,
    .ready = sse_ready,
    .failed = sse_failed,
    .junk = sse_junk,
    .free = sse_free,
};

static struct mx_upsess *sse_open(struct mx_upsess_env *env, const json_t *caps,
                                  const char *trace_session, const struct mx_upsess_cbs *cbs,
                                  void *data)
{
    struct se *s = mx_xcalloc(1, sizeof(*s));
    mx_upchan_init(&s->c, &chan_ops, env, caps, trace_session, cbs, data);
    s->c.no_channel = s->c.cfg->url == NULL;
    mx_sse_decoder_init(&s->dec, SSE_EVENT_CAP, on_event, s);
    return &s->c.base;
}

const struct mx_upsess_ops mx_upsess_sse_ops = {
    .label = "legacy HTTP+SSE",
    .subsys = SUBSYS,
    .caps = 0,
    .open = sse_open,
    .close = mx_upchan_close,
    .request = mx_upchan_request,
    .send = mx_upchan_send,
    .cancel = mx_upmsg_cancel,
    .resume = mx_upmsg_resume,
};
