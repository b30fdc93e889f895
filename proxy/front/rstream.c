/* SPDX-License-Identifier: MIT */
/*
 * Resumable SSE streams (rstream.h): a list of encoded events, oldest
 * first, and the number of the last one written to the attached request;
 * what is not written yet waits in the same list while the client is slow
 * or away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "num.h"
#include "rstream.h"
#include "sse.h"
#include "sse_write.h"

#define SUBSYS "session"

struct rs_event {
    struct rs_event *next;
    uint64_t seq;
    size_t len;
    char *text; /* the whole event, id included */
};

struct mx_rstream {
    uint64_t no;
    struct mx_rstream_limits lim;
    bool prime;
    struct rs_event *head; /* oldest */
    struct rs_event *tail;
    size_t cnt;
    size_t bytes;
    uint64_t last_seq; /* the newest event's number; 0: none yet */
    uint64_t sent_seq; /* the last event written to |req| */
    uint64_t gone_seq; /* the newest event dropped from the buffer; 0: none */
    struct mx_req *req;
    bool blocked;
    bool ended;
    mx_rstream_cb cb;
    void *cb_data;
};

static size_t live_cnt;

size_t mx_rstream_live_cnt(void)
{
    return live_cnt;
}

struct mx_rstream *mx_rstream_new(uint64_t no, const struct mx_rstream_limits *lim, bool prime)
{
    struct mx_rstream *rs = mx_xcalloc(1, sizeof(*rs));
    rs->no = no;
    rs->lim = *lim;
    if (rs->lim.max_events == 0)
        rs->lim.max_events = 1;
    rs->prime = prime;
    live_cnt++;
    return rs;
}

static void drop_head(struct mx_rstream *rs)
{
    struct rs_event *e = rs->head;
    rs->head = e->next;
    if (rs->head == NULL)
        rs->tail = NULL;
    rs->cnt--;
    rs->bytes -= e->len;
    rs->gone_seq = e->seq;
    free(e->text);
    free(e);
}

/* Take |req| off the stream (its handler cleared); the caller ends it. */
static struct mx_req *take_req(struct mx_rstream *rs)
{
    struct mx_req *req = rs->req;
    rs->req = NULL;
    rs->blocked = false;
    if (req)
        mx_req_set_handler(req, NULL, NULL, NULL);
    return req;
}

void mx_rstream_end_req(struct mx_rstream *rs)
{
    struct mx_req *req = take_req(rs);
    if (req)
        mx_req_end(req);
}

void mx_rstream_free(struct mx_rstream *rs)
{
    if (rs == NULL)
        return;
    mx_rstream_end_req(rs);
    while (rs->head)
        drop_head(rs);
    free(rs);
    live_cnt--;
}

uint64_t mx_rstream_no(const struct mx_rstream *rs)
{
    return rs->no;
}

void mx_rstream_set_producer(struct mx_rstream *rs, mx_rstream_cb cb, void *data)
{
    rs->cb = cb;
    rs->cb_data = data;
}

bool mx_rstream_primes(const struct mx_rstream *rs)
{
    return rs->prime;
}

bool mx_rstream_attached(const struct mx_rstream *rs)
{
    return rs->req != NULL;
}

bool mx_rstream_is_ended(const struct mx_rstream *rs)
{
    return rs->ended;
}

uint64_t mx_rstream_oldest(const struct mx_rstream *rs)
{
    return rs->gone_seq;
}

/* The request is gone: what follows waits in the buffer. */
static void gone(struct mx_rstream *rs)
{
    rs->req = NULL;
    rs->blocked = false;
    if (rs->cb && !rs->ended)
        rs->cb(rs, rs->cb_data);
}

/* Write what the attached request has not had, while it takes it; end it
 * after the last event of an ended stream. */
static void flush(struct mx_rstream *rs)
{
    struct rs_event *e = rs->head;
    while (e && e->seq <= rs->sent_seq)
        e = e->next;
    if (rs->req && e && e->seq > rs->sent_seq + 1)
        mx_log_debug(SUBSYS,
                     "stream %llu: events %llu to %llu were dropped before the client "
                     "read them ([listen] stream_buffer_events, stream_buffer_bytes)",
                     (unsigned long long)rs->no, (unsigned long long)rs->sent_seq + 1,
                     (unsigned long long)e->seq - 1);
    for (; e && rs->req && !rs->blocked; e = e->next) {
        int rc = mx_req_write(rs->req, e->text, e->len);
        if (rc && rc != MX_EAGAIN) {
            gone(rs); /* MX_ECLOSED: on_abort will not come */
            return;
        }
        rs->sent_seq = e->seq;
        if (rc == MX_EAGAIN)
            rs->blocked = true;
    }
    if (rs->req && rs->ended && !rs->blocked && rs->sent_seq >= rs->last_seq)
        mx_rstream_end_req(rs);
}

static void on_drain(struct mx_req *req, void *data)
{
    struct mx_rstream *rs = data;
    (void)req;
    rs->blocked = false;
    flush(rs);
    if (rs->req && !rs->blocked && rs->cb && !rs->ended)
        rs->cb(rs, rs->cb_data);
}

static void on_abort(struct mx_req *req, void *data)
{
    (void)req;
    gone(data);
}

static int write_priming(struct mx_rstream *rs, uint64_t after)
{
    char text[96];
    /* MCP 2025-11-25, Streamable HTTP: an event id with empty data primes
     * the client to reconnect; retry says after how long */
    int n = snprintf(text, sizeof(text), "id: %llu-%llu\nretry: %d\ndata: \n\n",
                     (unsigned long long)rs->no, (unsigned long long)after, MX_RSTREAM_RETRY_MS);
    return mx_req_write(rs->req, text, (size_t)n);
}

int mx_rstream_attach(struct mx_rstream *rs, struct mx_req *req, bool started, bool resume,
                      uint64_t after)
{
    if (resume) {
        if (after > rs->last_seq)
            return MX_ENOTFOUND;
        if (after < rs->gone_seq)
            return MX_ELIMIT;
    } else {
        after = rs->sent_seq;
    }
    if (req == NULL)
        return 0;
    if (!started && mx_sse_start(req) != 0)
        return MX_ECLOSED;
    mx_rstream_end_req(rs); /* a connection the client left */
    rs->req = req;
    rs->blocked = false;
    rs->sent_seq = after;
    mx_req_set_handler(req, on_drain, on_abort, rs);
    if (rs->prime) {
        int rc = write_priming(rs, after);
        if (rc == MX_EAGAIN) {
            rs->blocked = true;
        } else if (rc) {
            gone(rs);
            return 0;
        }
    }
    flush(rs);
    return 0;
}

int mx_rstream_send(struct mx_rstream *rs, struct mx_str data, size_t cap)
{
    char id[48];
    struct mx_buf b;
    if (rs->ended)
        return 0;
    snprintf(id, sizeof(id), "%llu-%llu", (unsigned long long)rs->no,
             (unsigned long long)rs->last_seq + 1);
    mx_buf_init(&b, cap);
    if (mx_sse_encode(&b, "message", id, data) != 0) {
        mx_buf_clear(&b);
        return MX_ELIMIT;
    }
    struct rs_event *e = mx_xcalloc(1, sizeof(*e));
    e->seq = ++rs->last_seq;
    e->len = mx_buf_len(&b);
    e->text = mx_xstrndup(mx_buf_data(&b), e->len);
    mx_buf_clear(&b);
    if (rs->tail)
        rs->tail->next = e;
    else
        rs->head = e;
    rs->tail = e;
    rs->cnt++;
    rs->bytes += e->len;
    while (rs->head != e && (rs->cnt > rs->lim.max_events || rs->bytes > rs->lim.max_bytes))
        drop_head(rs);
    if (rs->req == NULL)
        return 0;
    flush(rs);
    return rs->req && rs->blocked ? MX_EAGAIN : 0;
}

void mx_rstream_comment(struct mx_rstream *rs, struct mx_str text)
{
    if (rs->req == NULL || rs->blocked)
        return;
    int rc = mx_req_write(rs->req, text.p, text.len);
    if (rc == MX_EAGAIN)
        rs->blocked = true;
    else if (rc)
        gone(rs);
}

void mx_rstream_end(struct mx_rstream *rs)
{
    if (rs->ended)
        return;
    rs->ended = true;
    if (rs->req && !rs->blocked)
        flush(rs);
}

int mx_rstream_parse_id(struct mx_str id, uint64_t *no, uint64_t *seq)
{
    const char *dash = memchr(id.p, '-', id.len);
    int64_t a, b;
    if (dash == NULL)
        return MX_EINVAL;
    size_t alen = (size_t)(dash - id.p);
    if (mx_num_parse(id.p, alen, 0, INT64_MAX, &a) != 0 ||
        mx_num_parse(dash + 1, id.len - alen - 1, 0, INT64_MAX, &b) != 0)
        return MX_EINVAL;
    *no = (uint64_t)a;
    *seq = (uint64_t)b;
    return 0;
}
