/* SPDX-License-Identifier: MIT */
/*
 * The client session table: a list with lookup by id (constant-time
 * compare), idle timers, the resumable streams of each session, and a reaper (an
 * ev_prepare) that frees closed sessions at the start of the next loop
 * iteration, so no session is freed inside a callback that still uses it.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "limit.h"
#include "log.h"
#include "rand.h"
#include "session.h"
#include "sse.h"
#include "sse_write.h"

#define SUBSYS "session"

struct mx_session_stream {
    struct mx_session_stream *next;
    struct mx_rstream *rs;
};

struct mx_session_table {
    struct ev_loop *loop;
    int64_t idle_ms;
    size_t max;
    struct mx_session_cbs cbs;
    void *data;
    struct mx_session *head;
    size_t cnt;
    struct mx_session *dead; /* closed, waiting for the reaper */
    ev_prepare reaper;
    uint64_t next_key;
    struct mx_limit_log full; /* refusals over |max| */
    struct mx_rstream_limits lim;
};

static size_t live_cnt;

size_t mx_session_live_cnt(void)
{
    return live_cnt;
}

static void session_free(struct mx_session *s)
{
    while (s->streams) {
        struct mx_session_stream *st = s->streams;
        s->streams = st->next;
        mx_rstream_free(st->rs);
        free(st);
    }
    mx_rstream_free(s->get);
    json_decref(s->init_params);
    free(s);
    live_cnt--;
}

static void reap_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct mx_session_table *t = mx_container_of(w, struct mx_session_table, reaper);
    (void)revents;
    ev_prepare_stop(loop, w);
    while (t->dead) {
        struct mx_session *s = t->dead;
        t->dead = s->next;
        session_free(s);
    }
}

static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_session *s = mx_container_of(w, struct mx_session, idle);
    (void)loop;
    (void)revents;
    bool attached = s->get && mx_rstream_attached(s->get);
    for (struct mx_session_stream *st = s->streams; st && !attached; st = st->next)
        attached = mx_rstream_attached(st->rs);
    if (attached || s->busy) {
        /* a client holding its GET stream open, or waiting for an answer,
         * is not idle */
        ev_timer_again(s->t->loop, &s->idle);
        return;
    }
    mx_log_info(SUBSYS, "session %.8s... expired after %lld s idle", s->id,
                (long long)(s->t->idle_ms / 1000));
    mx_session_close(s);
}

static void keepalive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_session *s = mx_container_of(w, struct mx_session, keepalive);
    (void)loop;
    (void)revents;
    /* an SSE comment keeps intermediaries from timing the stream out */
    if (s->get)
        mx_rstream_comment(s->get, MX_STR_LIT(": keepalive\n\n"));
}

struct mx_session_table *mx_session_table_new(struct ev_loop *loop, int64_t idle_ms, size_t max,
                                              const struct mx_session_cbs *cbs, void *data)
{
    struct mx_session_table *t = mx_xcalloc(1, sizeof(*t));
    t->loop = loop;
    t->idle_ms = idle_ms > 0 ? idle_ms : 30 * 60 * 1000;
    t->max = max;
    t->cbs = *cbs;
    t->data = data;
    t->next_key = 1;
    t->lim.max_events = MX_SESSION_QUEUE_MAX;
    t->lim.max_bytes = MX_SESSION_QUEUE_BYTES;
    ev_prepare_init(&t->reaper, reap_cb);
    return t;
}

void mx_session_table_set_limits(struct mx_session_table *t, const struct mx_rstream_limits *lim)
{
    t->lim = *lim;
}

void mx_session_table_free(struct mx_session_table *t)
{
    if (t == NULL)
        return;
    while (t->head)
        mx_session_close(t->head);
    ev_prepare_stop(t->loop, &t->reaper);
    while (t->dead) {
        struct mx_session *s = t->dead;
        t->dead = s->next;
        session_free(s);
    }
    free(t);
}

struct mx_session *mx_session_new(struct mx_session_table *t)
{
    if (t->cnt >= t->max) {
        uint64_t quiet = 0;
        char note[64];
        if (mx_limit_log_due(&t->full, ev_now(t->loop), &quiet))
            mx_log_warn(SUBSYS, "[listen] max_sessions (%zu) reached; refusing new sessions%s",
                        t->max, mx_limit_log_note(quiet, note, sizeof(note)));
        return NULL;
    }
    struct mx_session *s = mx_xcalloc(1, sizeof(*s));
    /* MCP 2025-06-18, Session Management: globally unique and
     * cryptographically secure; visible ASCII only. */
    mx_rand_hex(s->id, sizeof(s->id));
    s->key = t->next_key++;
    s->t = t;
    s->log_level = -1;
    double idle = (double)t->idle_ms / 1000.0;
    ev_init(&s->idle, idle_cb);
    s->idle.repeat = idle;
    ev_timer_again(t->loop, &s->idle);
    ev_init(&s->keepalive, keepalive_cb);
    s->keepalive.repeat = MX_SESSION_KEEPALIVE_S;
    s->next = t->head;
    if (t->head)
        t->head->prev = s;
    t->head = s;
    t->cnt++;
    live_cnt++;
    return s;
}

struct mx_session *mx_session_find(struct mx_session_table *t, struct mx_str id)
{
    if (id.len != MX_SESSION_ID_LEN)
        return NULL;
    for (struct mx_session *s = t->head; s; s = s->next) {
        /* constant time per candidate: ids are bearer-like capabilities */
        if (CRYPTO_memcmp(s->id, id.p, MX_SESSION_ID_LEN) == 0) {
            ev_timer_again(t->loop, &s->idle);
            return s;
        }
    }
    return NULL;
}

struct mx_session *mx_session_by_key(struct mx_session_table *t, uint64_t key)
{
    for (struct mx_session *s = t->head; s; s = s->next) {
        if (s->key == key)
            return s;
    }
    return NULL;
}

struct mx_session *mx_session_first(struct mx_session_table *t)
{
    return t->head;
}

uint64_t mx_session_refused_cnt(const struct mx_session_table *t)
{
    return t ? t->full.total : 0;
}

size_t mx_session_cnt(const struct mx_session_table *t)
{
    return t ? t->cnt : 0;
}

void mx_session_end_get(struct mx_session *s)
{
    if (s->get)
        mx_rstream_end_req(s->get);
    ev_timer_stop(s->t->loop, &s->keepalive);
}

void mx_session_close(struct mx_session *s)
{
    struct mx_session_table *t = s->t;
    if (s->closed)
        return;
    s->closed = true;
    ev_timer_stop(t->loop, &s->idle);
    mx_session_end_get(s);
    if (t->cbs.on_close)
        t->cbs.on_close(s, t->data);
    if (s->prev)
        s->prev->next = s->next;
    else
        t->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    t->cnt--;
    s->prev = NULL;
    s->next = t->dead;
    t->dead = s;
    if (!ev_is_active(&t->reaper))
        ev_prepare_start(t->loop, &t->reaper);
}

/* MCP 2025-11-25, Streamable HTTP: only clients of that revision or later
 * expect the priming event (an empty data field). */
bool mx_session_primes(const struct mx_session *s)
{
    return strcmp(s->version, "2025-11-25") >= 0;
}

static struct mx_rstream *get_stream(struct mx_session *s)
{
    if (s->get == NULL)
        s->get = mx_rstream_new(0, &s->t->lim, mx_session_primes(s));
    return s->get;
}

bool mx_session_has_get(const struct mx_session *s)
{
    return s->get && mx_rstream_attached(s->get);
}

int mx_session_attach_get(struct mx_session *s, struct mx_req *req)
{
    struct mx_rstream *rs = get_stream(s);
    if (mx_rstream_attached(rs))
        return MX_EEXIST;
    int rc = mx_rstream_attach(rs, req, false, false, 0);
    if (rc == 0)
        ev_timer_again(s->t->loop, &s->keepalive);
    return rc;
}

struct mx_rstream *mx_session_stream_new(struct mx_session *s)
{
    /* the oldest ended stream goes first; live ones stay (each is a call
     * in flight, which the id tables bound) */
    while (s->stream_cnt >= MX_SESSION_STREAMS_KEPT) {
        struct mx_session_stream **old = NULL;
        for (struct mx_session_stream **pp = &s->streams; *pp; pp = &(*pp)->next) {
            if (mx_rstream_is_ended((*pp)->rs))
                old = pp;
        }
        if (old == NULL)
            break;
        struct mx_session_stream *st = *old;
        *old = st->next;
        mx_rstream_free(st->rs);
        free(st);
        s->stream_cnt--;
    }
    struct mx_session_stream *st = mx_xcalloc(1, sizeof(*st));
    st->rs = mx_rstream_new(++s->stream_nos, &s->t->lim, mx_session_primes(s));
    st->next = s->streams;
    s->streams = st;
    s->stream_cnt++;
    return st->rs;
}

int mx_session_resume(struct mx_session *s, struct mx_req *req, struct mx_str id, uint64_t *oldest)
{
    uint64_t no, seq;
    struct mx_rstream *rs = NULL;
    if (mx_rstream_parse_id(id, &no, &seq) != 0)
        return MX_EINVAL;
    if (no == 0) {
        rs = get_stream(s);
    } else {
        for (struct mx_session_stream *st = s->streams; st && rs == NULL; st = st->next) {
            if (mx_rstream_no(st->rs) == no)
                rs = st->rs;
        }
    }
    if (rs == NULL)
        return MX_ENOTFOUND;
    int rc = mx_rstream_attach(rs, req, false, true, seq);
    if (rc == MX_ELIMIT)
        *oldest = mx_rstream_oldest(rs);
    if (rc == 0 && req && rs == s->get)
        ev_timer_again(s->t->loop, &s->keepalive);
    return rc;
}

void mx_session_push(struct mx_session *s, const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (text == NULL || s->closed) {
        free(text);
        return;
    }
    if (mx_rstream_send(get_stream(s), mx_str_cstr(text), MX_SESSION_QUEUE_BYTES) == MX_ELIMIT)
        mx_log_warn(SUBSYS, "session %.8s...: a message over %u bytes was dropped", s->id,
                    MX_SESSION_QUEUE_BYTES);
    free(text);
}
