/* SPDX-License-Identifier: MIT */
/*
 * The client session table: a list with lookup by id (constant-time
 * compare), idle timers, GET streams with a bounded queue, and a reaper (an
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

struct mx_session_qmsg {
    struct mx_session_qmsg *next;
    char *text;
    size_t len;
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
};

static size_t live_cnt;

size_t mx_session_live_cnt(void)
{
    return live_cnt;
}

static void q_drop_head(struct mx_session *s)
{
    struct mx_session_qmsg *q = s->q_head;
    s->q_head = q->next;
    if (s->q_head == NULL)
        s->q_tail = NULL;
    s->q_cnt--;
    s->q_bytes -= q->len;
    free(q->text);
    free(q);
}

static void session_free(struct mx_session *s)
{
    while (s->q_head)
        q_drop_head(s);
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
    if (s->get || s->busy) {
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
    if (s->get == NULL || s->get_blocked)
        return;
    /* an SSE comment keeps intermediaries from timing the stream out */
    int rc = mx_req_write(s->get, ": keepalive\n\n", 13);
    if (rc == MX_EAGAIN)
        s->get_blocked = true;
    else if (rc)
        s->get = NULL;
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
    ev_prepare_init(&t->reaper, reap_cb);
    return t;
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
    if (s->get) {
        struct mx_req *g = s->get;
        s->get = NULL;
        mx_req_end(g);
    }
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

/* Write queued messages while the stream takes them. */
static void flush(struct mx_session *s)
{
    while (s->get && !s->get_blocked && s->q_head) {
        struct mx_session_qmsg *q = s->q_head;
        int rc = mx_req_write(s->get, q->text, q->len);
        if (rc && rc != MX_EAGAIN) {
            s->get = NULL; /* MX_ECLOSED: the request is gone */
            ev_timer_stop(s->t->loop, &s->keepalive);
            return;
        }
        q_drop_head(s);
        if (rc == MX_EAGAIN)
            s->get_blocked = true;
    }
}

static void get_drain(struct mx_req *req, void *data)
{
    struct mx_session *s = data;
    (void)req;
    s->get_blocked = false;
    flush(s);
}

static void get_abort(struct mx_req *req, void *data)
{
    struct mx_session *s = data;
    (void)req;
    s->get = NULL;
    s->get_blocked = false;
    ev_timer_stop(s->t->loop, &s->keepalive);
}

int mx_session_attach_get(struct mx_session *s, struct mx_req *req)
{
    if (s->get)
        return MX_EEXIST;
    if (mx_sse_start(req) != 0)
        return MX_ECLOSED;
    s->get = req;
    s->get_blocked = false;
    mx_req_set_handler(req, get_drain, get_abort, s);
    ev_timer_again(s->t->loop, &s->keepalive);
    flush(s);
    return 0;
}

void mx_session_push(struct mx_session *s, const json_t *msg)
{
    struct mx_buf b;
    char *text = json_dumps(msg, JSON_COMPACT);
    if (text == NULL || s->closed) {
        free(text);
        return;
    }
    mx_buf_init(&b, MX_SESSION_QUEUE_BYTES);
    int rc = mx_sse_encode(&b, "message", NULL, mx_str_cstr(text));
    free(text);
    if (rc) {
        mx_log_warn(SUBSYS, "session %.8s...: a message over %u bytes was dropped", s->id,
                    MX_SESSION_QUEUE_BYTES);
        mx_buf_clear(&b);
        return;
    }
    struct mx_session_qmsg *q = mx_xcalloc(1, sizeof(*q));
    q->len = mx_buf_len(&b);
    q->text = mx_xstrndup(mx_buf_data(&b), q->len);
    mx_buf_clear(&b);
    while (s->q_head &&
           (s->q_cnt + 1 > MX_SESSION_QUEUE_MAX || s->q_bytes + q->len > MX_SESSION_QUEUE_BYTES)) {
        mx_log_debug(SUBSYS, "session %.8s...: queue full; dropping the oldest message", s->id);
        q_drop_head(s);
    }
    if (s->q_tail)
        s->q_tail->next = q;
    else
        s->q_head = q;
    s->q_tail = q;
    s->q_cnt++;
    s->q_bytes += q->len;
    flush(s);
}
