/* SPDX-License-Identifier: MIT */
/* The status page, its feed and its login (statuspage.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "alloc.h"
#include "buf.h"
#include "callring.h"
#include "err.h"
#include "html.h"
#include "log.h"
#include "metrics.h"
#include "rand.h"
#include "sse_write.h"
#include "statuspage.h"

#define SUBSYS      "status"
#define CODE_LEN    32 /* hex characters of a login code */
#define COOKIE_LEN  64 /* hex characters of a login cookie */
#define MAX_CODES   8
#define MAX_COOKIES 32
#define WAKES_KEPT  4 /* per upstream, for the wake part of a call */
#define PAGE_CAP    (2 * 1024 * 1024)
#define EVENT_CAP   (2 * 1024 * 1024)
#define P_WINDOW_S  300.0 /* p50 and p99 over the last five minutes */
#define CSP         "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

struct secret_slot {
    char v[COOKIE_LEN + 1]; /* "" when free */
    double until;           /* monotonic */
};

struct wakes {
    double from[WAKES_KEPT], to[WAKES_KEPT]; /* monotonic; to 0: running */
    size_t next;
    time_t last_at; /* wall clock the last wake began; 0: none */
    double last_s;  /* how long it took; < 0: running */
};

struct feed {
    struct feed *next, *prev;
    struct mx_statuspage *sp;
    struct mx_req *req;
    bool slow;   /* the client did not drain: events are skipped until it does */
    bool missed; /* skipped something: a full state follows the drain */
};

struct mx_statuspage {
    struct mx_statuspage_src src;
    struct mx_callring ring;
    struct feed *feeds;
    size_t feed_cnt;
    ev_timer tick;
    struct secret_slot codes[MAX_CODES];
    struct secret_slot cookies[MAX_COOKIES];
    struct wakes wakes[MX_STATUS_SLOTS];
    uint64_t modern_cnt; /* 2026-07-28 requests seen */
};

const struct mx_status_asset *mx_status_asset(const char *name)
{
    for (size_t i = 0; i < mx_status_asset_cnt; i++) {
        if (strcmp(mx_status_assets[i].name, name) == 0)
            return &mx_status_assets[i];
    }
    return NULL;
}

static double now_mono(void)
{
    return mx_call_now();
}

/* ---- the facts ---- */

/* The page's state: the source's facts with "type" and the 2026-07-28
 * requests seen, and with |calls| the last calls. */
static json_t *state_json(struct mx_statuspage *sp, bool calls)
{
    json_t *o = sp->src.state(sp->src.data);
    json_object_set_new(o, "type", json_string("state"));
    json_t *sess = json_object_get(o, "sessions");
    if (json_is_object(sess))
        json_object_set_new(sess, "modern_requests", json_integer((json_int_t)sp->modern_cnt));
    if (calls)
        json_object_set_new(o, "calls", mx_callring_json(&sp->ring));
    return o;
}

/* ---- server-side HTML ---- */

static int put_text(struct mx_buf *b, const json_t *v)
{
    char num[48];
    if (json_is_string(v))
        return mx_html_escape(b, json_string_value(v), json_string_length(v));
    if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        return mx_buf_append_str(b, num);
    }
    if (json_is_real(v)) {
        double ms = json_real_value(v);
        snprintf(num, sizeof(num), ms < 10.0 ? "%.2f ms" : "%.0f ms", ms);
        return mx_buf_append_str(b, num);
    }
    return mx_buf_append_str(b, "-");
}

/* <td class="|cls|">|v| as text</td>; the same cells the script makes. */
static int cell(struct mx_buf *b, const json_t *o, const char *key, const char *cls)
{
    int rc = mx_buf_append_str(b, "<td");
    if (cls) {
        rc |= mx_buf_append_str(b, " class=\"");
        rc |= mx_html_escape_cstr(b, cls);
        rc |= mx_buf_append_str(b, "\"");
    }
    rc |= mx_buf_append_str(b, ">");
    rc |= put_text(b, json_object_get(o, key));
    rc |= mx_buf_append_str(b, "</td>");
    return rc;
}

static const char *const up_cols[] = {"name",         "state",     "transport", "revision",
                                      "tools",        "prompts",   "resources", "calls",
                                      "errors",       "p50_ms",    "p99_ms",    "last_wake_at",
                                      "last_wake_ms", "catalogue", "last_error"};
static const char *const call_cols[] = {"at",      "session", "method",      "server",   "target",
                                        "wait_ms", "wake_ms", "upstream_ms", "total_ms", "outcome"};
static const char *const ren_cols[] = {"name", "kind", "server", "original"};

static int rows(struct mx_buf *b, const json_t *arr, const char *const *cols, size_t ncol,
                bool upstream, bool newest_first)
{
    int rc = 0;
    size_t n = json_array_size(arr);
    for (size_t k = 0; k < n && rc == 0; k++) {
        const json_t *o = json_array_get(arr, newest_first ? n - 1 - k : k);
        if (upstream) {
            rc |= mx_buf_append_str(b, "<tr data-server=\"");
            rc |= put_text(b, json_object_get(o, "name"));
            rc |= mx_buf_append_str(b, "\">");
        } else {
            rc |= mx_buf_append_str(b, "<tr>");
        }
        for (size_t c = 0; c < ncol; c++) {
            char cls[48] = "";
            if (upstream && strcmp(cols[c], "state") == 0)
                snprintf(cls, sizeof(cls), "state st-%s",
                         json_string_value(json_object_get(o, "state")));
            rc |= cell(b, o, cols[c], cls[0] ? cls : NULL);
        }
        rc |= mx_buf_append_str(b, "</tr>\n");
    }
    return rc;
}

/* The template with each <!--@name--> marker replaced by its rows. */
static int render_page(struct mx_statuspage *sp, struct mx_buf *b)
{
    const struct mx_status_asset *t = mx_status_asset("page.html");
    MX_ASSERT(t != NULL); /* embedded at build time */
    json_t *st = state_json(sp, true);
    const char *p = (const char *)t->data, *end = p + t->len;
    int rc = 0;
    while (p < end && rc == 0) {
        const char *m = memmem(p, (size_t)(end - p), "<!--@", 5);
        if (m == NULL) {
            rc = mx_buf_append(b, p, (size_t)(end - p));
            break;
        }
        const char *close = memmem(m, (size_t)(end - m), "-->", 3);
        if (close == NULL) {
            rc = mx_buf_append(b, p, (size_t)(end - p));
            break;
        }
        rc |= mx_buf_append(b, p, (size_t)(m - p));
        struct mx_str name = mx_str_make(m + 5, (size_t)(close - m - 5));
        const json_t *sess = json_object_get(st, "sessions");
        if (mx_str_eq(name, MX_STR_LIT("upstreams")))
            rc |= rows(b, json_object_get(st, "upstreams"), up_cols,
                       sizeof(up_cols) / sizeof(up_cols[0]), true, false);
        else if (mx_str_eq(name, MX_STR_LIT("calls")))
            rc |= rows(b, json_object_get(st, "calls"), call_cols,
                       sizeof(call_cols) / sizeof(call_cols[0]), false, true);
        else if (mx_str_eq(name, MX_STR_LIT("renamed")))
            rc |= rows(b, json_object_get(st, "renamed"), ren_cols,
                       sizeof(ren_cols) / sizeof(ren_cols[0]), false, false);
        else if (mx_str_eq(name, MX_STR_LIT("legacy")))
            rc |= put_text(b, json_object_get(sess, "legacy"));
        else if (mx_str_eq(name, MX_STR_LIT("modern")))
            rc |= put_text(b, json_object_get(sess, "modern_requests"));
        else if (mx_str_eq(name, MX_STR_LIT("version")))
            rc |= put_text(b, json_object_get(st, "version"));
        p = close + 3;
    }
    json_decref(st);
    return rc;
}

/* ---- the feed ---- */

/* |status| with a JSON body {"error": |msg|}, as the gateway's other
 * refusals. */
static void refuse(struct mx_req *req, int status, const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    mx_req_respond(req, status, NULL, 0, "application/json", body, strlen(body));
    free(body);
}

static void feed_drop(struct feed *f)
{
    struct mx_statuspage *sp = f->sp;
    if (f->prev)
        f->prev->next = f->next;
    else
        sp->feeds = f->next;
    if (f->next)
        f->next->prev = f->prev;
    sp->feed_cnt--;
    free(f);
    if (sp->feed_cnt == 0)
        ev_timer_stop(sp->src.loop, &sp->tick);
}

/* Send |msg| to |f|; false when the client is gone (|f| freed). */
static bool feed_send(struct feed *f, struct mx_str msg)
{
    if (f->slow) {
        f->missed = true;
        return true;
    }
    int rc = mx_sse_write_event(f->req, msg, EVENT_CAP);
    if (rc == MX_EAGAIN) {
        f->slow = true;
    } else if (rc == MX_ECLOSED) {
        feed_drop(f);
        return false;
    } else if (rc != 0) {
        f->missed = true; /* too large for one event: never the case for a call */
    }
    return true;
}

static void broadcast(struct mx_statuspage *sp, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    struct feed *next;
    for (struct feed *f = sp->feeds; f; f = next) {
        next = f->next;
        feed_send(f, mx_str_cstr(text));
    }
    free(text);
}

static void send_state(struct mx_statuspage *sp, struct feed *only, bool calls)
{
    json_t *st = state_json(sp, calls);
    if (only) {
        char *text = json_dumps(st, JSON_COMPACT);
        feed_send(only, mx_str_cstr(text));
        free(text);
    } else {
        broadcast(sp, st);
    }
    json_decref(st);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_statuspage *sp = w->data;
    (void)loop;
    (void)revents;
    send_state(sp, NULL, false);
}

static void feed_drain(struct mx_req *req, void *data)
{
    struct feed *f = data;
    (void)req;
    f->slow = false;
    if (f->missed) {
        f->missed = false;
        send_state(f->sp, f, true);
    }
}

static void feed_abort(struct mx_req *req, void *data)
{
    (void)req;
    feed_drop(data);
}

static void serve_feed(struct mx_statuspage *sp, struct mx_req *req)
{
    if (sp->feed_cnt >= MX_STATUS_MAX_FEEDS) {
        refuse(req, 503, "too many status feeds open; close a status page tab");
        return;
    }
    if (mx_sse_start(req) != 0)
        return;
    struct feed *f = mx_xcalloc(1, sizeof(*f));
    f->sp = sp;
    f->req = req;
    f->next = sp->feeds;
    if (sp->feeds)
        sp->feeds->prev = f;
    sp->feeds = f;
    sp->feed_cnt++;
    mx_req_set_handler(req, feed_drain, feed_abort, f);
    if (!ev_is_active(&sp->tick))
        ev_timer_again(sp->src.loop, &sp->tick);
    send_state(sp, f, true);
}

size_t mx_statuspage_feed_cnt(const struct mx_statuspage *sp)
{
    return sp ? sp->feed_cnt : 0;
}

/* ---- what the gateway tells ---- */

void mx_statuspage_call(struct mx_statuspage *sp, const struct mx_call_report *r,
                        const char *outcome, double now)
{
    struct mx_callrec rec;
    struct mx_callsplit split;
    const struct wakes *w = r->up && r->up->idx < MX_STATUS_SLOTS ? &sp->wakes[r->up->idx] : NULL;
    if (sp == NULL)
        return;
    mx_callring_split(r->t_recv, r->t_up_start, r->t_up_done, now, w ? w->from : NULL,
                      w ? w->to : NULL, w ? WAKES_KEPT : 0, &split);
    rec.at = (double)time(NULL);
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
        rec.at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    rec.session = mx_callring_session_hash(r->session);
    rec.modern = r->modern;
    rec.status = r->status;
    rec.wait_s = split.wait_s;
    rec.wake_s = split.wake_s;
    rec.upstream_s = split.upstream_s;
    rec.total_s = r->t_recv > 0.0 && now >= r->t_recv ? now - r->t_recv : -1.0;
    mx_callring_copy(rec.method, sizeof(rec.method), mx_metrics_method_label(r->rpc_method));
    mx_callring_copy(rec.server, sizeof(rec.server), r->up ? r->up->cfg->name : NULL);
    mx_callring_copy(rec.target, sizeof(rec.target), r->target);
    mx_callring_copy(rec.outcome, sizeof(rec.outcome), outcome);
    if (r->modern)
        sp->modern_cnt++;
    mx_callring_push(&sp->ring, &rec);
    /* formatted only for someone watching */
    if (sp->feed_cnt == 0)
        return;
    json_t *msg = json_pack(
        "{s:s, s:o}", "type", "call", "call",
        mx_callrec_json(&sp->ring.rec[(sp->ring.next + MX_CALLRING_CNT - 1) % MX_CALLRING_CNT]));
    broadcast(sp, msg);
    json_decref(msg);
}

void mx_statuspage_wake(struct mx_statuspage *sp, struct mx_upstream *u, bool start,
                        double duration_s)
{
    if (sp == NULL || u->idx >= MX_STATUS_SLOTS)
        return;
    struct wakes *w = &sp->wakes[u->idx];
    double now = now_mono();
    if (start) {
        w->from[w->next] = now;
        w->to[w->next] = 0.0;
        w->next = (w->next + 1) % WAKES_KEPT;
        w->last_at = time(NULL);
        w->last_s = -1.0;
    } else {
        size_t last = (w->next + WAKES_KEPT - 1) % WAKES_KEPT;
        if (w->to[last] == 0.0 && w->from[last] > 0.0)
            w->to[last] = now;
        w->last_s = duration_s;
    }
    if (sp->feed_cnt)
        send_state(sp, NULL, false);
}

void mx_statuspage_wake_last(const struct mx_statuspage *sp, size_t idx, time_t *at,
                             double *duration_s)
{
    *at = 0;
    *duration_s = -1.0;
    if (sp && idx < MX_STATUS_SLOTS) {
        *at = sp->wakes[idx].last_at;
        *duration_s = sp->wakes[idx].last_s;
    }
}

/* ---- login ---- */

/* The live slot holding |v| (|len| hex characters), or NULL. */
static struct secret_slot *find_slot(struct secret_slot *slots, size_t cnt, struct mx_str v,
                                     size_t len, double now)
{
    struct secret_slot *hit = NULL;
    if (v.len != len)
        return NULL;
    for (size_t i = 0; i < cnt; i++) {
        if (slots[i].v[0] == '\0')
            continue;
        if (slots[i].until <= now) {
            OPENSSL_cleanse(slots[i].v, sizeof(slots[i].v));
            continue;
        }
        if (CRYPTO_memcmp(slots[i].v, v.p, len) == 0)
            hit = &slots[i];
    }
    return hit;
}

/* A fresh random value in a free slot (else the one closest to expiring). */
static struct secret_slot *new_slot(struct secret_slot *slots, size_t cnt, size_t len, double ttl_s)
{
    struct secret_slot *s = &slots[0];
    for (size_t i = 0; i < cnt; i++) {
        if (slots[i].v[0] == '\0') {
            s = &slots[i];
            break;
        }
        if (slots[i].until < s->until)
            s = &slots[i];
    }
    mx_rand_hex(s->v, len + 1);
    s->until = now_mono() + ttl_s;
    return s;
}

static void slot_clear(struct secret_slot *s)
{
    OPENSSL_cleanse(s->v, sizeof(s->v));
    s->until = 0.0;
}

/* The value of cookie |name| in the Cookie header of |req| (RFC 6265 §5.4). */
static bool cookie_value(const struct mx_req *req, const char *name, struct mx_str *out)
{
    size_t nlen = strlen(name);
    for (size_t i = 0; i < mx_req_header_cnt(req); i++) {
        const struct mx_header *h = mx_req_header_at(req, i);
        if (!mx_str_caseeq_cstr(h->name, "Cookie"))
            continue;
        const char *p = h->value.p, *end = p + h->value.len;
        while (p < end) {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            struct mx_str pair = mx_str_trim(mx_str_make(p, (size_t)((semi ? semi : end) - p)));
            if (pair.len > nlen && pair.p[nlen] == '=' && memcmp(pair.p, name, nlen) == 0) {
                *out = mx_str_make(pair.p + nlen + 1, pair.len - nlen - 1);
                return true;
            }
            p = semi ? semi + 1 : end;
        }
    }
    return false;
}

bool mx_statuspage_logged_in(struct mx_statuspage *sp, const struct mx_req *req)
{
    struct mx_str v;
    if (sp == NULL || !cookie_value(req, MX_STATUS_COOKIE_NAME, &v))
        return false;
    return find_slot(sp->cookies, MAX_COOKIES, v, COOKIE_LEN, now_mono()) != NULL;
}

/* The value of |key| in the query string |q| (no decoding: codes are hex). */
static bool query_value(struct mx_str q, const char *key, struct mx_str *out)
{
    size_t klen = strlen(key);
    const char *p = q.p, *end = q.p + q.len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        struct mx_str kv = mx_str_make(p, (size_t)((amp ? amp : end) - p));
        if (kv.len > klen && kv.p[klen] == '=' && memcmp(kv.p, key, klen) == 0) {
            *out = mx_str_make(kv.p + klen + 1, kv.len - klen - 1);
            return true;
        }
        p = amp ? amp + 1 : end;
    }
    return false;
}

static void serve_code(struct mx_statuspage *sp, struct mx_req *req)
{
    struct secret_slot *s = new_slot(sp->codes, MAX_CODES, CODE_LEN, MX_STATUS_CODE_TTL_S);
    json_t *o = json_pack("{s:s, s:i}", "code", s->v, "expires_in_s", (int)MX_STATUS_CODE_TTL_S);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    struct mx_hdr_out h[] = {{"Cache-Control", "no-store"}};
    mx_req_respond(req, 200, h, 1, "application/json", body, strlen(body));
    OPENSSL_cleanse(body, strlen(body));
    free(body);
    mx_log_info(SUBSYS, "a status page login code was made; it works once within %d s",
                (int)MX_STATUS_CODE_TTL_S);
}

static void serve_login(struct mx_statuspage *sp, struct mx_req *req)
{
    struct mx_str code;
    struct secret_slot *s = NULL;
    if (query_value(mx_req_query(req), "code", &code))
        s = find_slot(sp->codes, MAX_CODES, code, CODE_LEN, now_mono());
    if (s == NULL) {
        static const char msg[] = "This login link was used already, has expired (links "
                                  "work once, within a minute) or is wrong. Run `mcplex "
                                  "status --open` for a new one.\n";
        struct mx_hdr_out h[] = {{"Cache-Control", "no-store"}};
        mx_req_respond(req, 403, h, 1, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
        return;
    }
    slot_clear(s); /* once */
    struct secret_slot *c = new_slot(sp->cookies, MAX_COOKIES, COOKIE_LEN, MX_STATUS_COOKIE_TTL_S);
    char cookie[256];
    snprintf(cookie, sizeof(cookie), "%s=%s; HttpOnly; SameSite=Strict; Path=/status; Max-Age=%d%s",
             MX_STATUS_COOKIE_NAME, c->v, (int)MX_STATUS_COOKIE_TTL_S,
             sp->src.tls ? "; Secure" : "");
    struct mx_hdr_out h[] = {{"Set-Cookie", cookie},
                             {"Location", "/status"},
                             {"Cache-Control", "no-store"},
                             {"Referrer-Policy", "no-referrer"}};
    /* logged before the answer: once it is sent, |req| may be gone */
    mx_log_info(SUBSYS, "a browser logged in to the status page from %s", mx_req_peer(req));
    mx_req_respond(req, 303, h, sizeof(h) / sizeof(h[0]), NULL, NULL, 0);
    OPENSSL_cleanse(cookie, sizeof(cookie));
}

/* ---- routes ---- */

static void respond_doc(struct mx_req *req, const char *type, const void *body, size_t len)
{
    struct mx_hdr_out h[] = {{"Content-Security-Policy", CSP},
                             {"X-Content-Type-Options", "nosniff"},
                             {"Referrer-Policy", "no-referrer"},
                             {"Cache-Control", "no-store"}};
    mx_req_respond(req, 200, h, sizeof(h) / sizeof(h[0]), type, body, len);
}

void mx_statuspage_serve(struct mx_statuspage *sp, struct mx_req *req)
{
    struct mx_str path = mx_req_path(req);
    bool get = mx_str_eq(mx_req_method(req), MX_STR_LIT("GET"));
    if (mx_str_eq(path, MX_STR_LIT("/status/code"))) {
        if (!mx_str_eq(mx_req_method(req), MX_STR_LIT("POST")))
            refuse(req, 405, "use POST /status/code (as `mcplex status --open` does)");
        else
            serve_code(sp, req);
        return;
    }
    if (!get) {
        refuse(req, 405, "the status page takes GET only");
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/")) || mx_str_eq(path, MX_STR_LIT("/status")) ||
        mx_str_eq(path, MX_STR_LIT("/status/"))) {
        struct mx_buf b;
        mx_buf_init(&b, PAGE_CAP);
        if (render_page(sp, &b) != 0)
            refuse(req, 500, "the status page exceeds its size cap");
        else
            respond_doc(req, "text/html; charset=utf-8", mx_buf_data(&b), mx_buf_len(&b));
        mx_buf_clear(&b);
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/status/events"))) {
        serve_feed(sp, req);
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/status/state"))) {
        json_t *st = state_json(sp, true);
        char *body = json_dumps(st, JSON_COMPACT);
        json_decref(st);
        respond_doc(req, "application/json", body, strlen(body));
        free(body);
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/status/login"))) {
        serve_login(sp, req);
        return;
    }
    static const struct mx_str prefix = {"/status/", 8};
    if (mx_str_has_prefix(path, prefix) && path.len - prefix.len < 32) {
        char name[32];
        snprintf(name, sizeof(name), "%.*s", (int)(path.len - prefix.len), path.p + prefix.len);
        const struct mx_status_asset *a = mx_status_asset(name);
        /* the template is served only rendered */
        if (a && strcmp(name, "page.html") != 0) {
            respond_doc(req, a->type, a->data, a->len);
            return;
        }
    }
    refuse(req, 404, "not found; the status page is at /status");
}

struct mx_statuspage *mx_statuspage_new(const struct mx_statuspage_src *src)
{
    struct mx_statuspage *sp = mx_xcalloc(1, sizeof(*sp));
    sp->src = *src;
    ev_init(&sp->tick, on_tick);
    sp->tick.repeat = MX_STATUS_TICK_S;
    sp->tick.data = sp;
    return sp;
}

void mx_statuspage_free(struct mx_statuspage *sp)
{
    if (sp == NULL)
        return;
    ev_timer_stop(sp->src.loop, &sp->tick);
    while (sp->feeds) {
        struct feed *f = sp->feeds;
        struct mx_req *req = f->req;
        mx_req_set_handler(req, NULL, NULL, NULL);
        feed_drop(f);
        mx_req_end(req);
    }
    OPENSSL_cleanse(sp->codes, sizeof(sp->codes));
    OPENSSL_cleanse(sp->cookies, sizeof(sp->cookies));
    free(sp);
}
