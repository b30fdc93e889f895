/* SPDX-License-Identifier: MIT */
/*
 * Upstream calls with wake-on-use. The policy is in upcall.h; this file is
 * its state machine: queued → running → (backoff → running)* → done.
 * Retries and body bytes are reported to the upstream's observer
 * (upstream.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "backoff.h"
#include "err.h"
#include "log.h"
#include "rand.h"
#include "refresh.h"
#include "secret.h"
#include "secret_ref.h"
#include "upcall.h"
#include "wake.h"

/* Probes back off from 50 ms to at most 250 ms apart: a waking sandbox sees
 * a few requests a second, and the call goes out soon after it is ready. */
#define BACKOFF_BASE_MS 50
#define BACKOFF_CAP_MS  250
/* Where a wake hook was asked to resume the sandbox, it is expected back
 * soon: probes go from 10 ms to at most 50 ms apart (25 to 50 with the
 * jitter, one probe at a time per upstream), so the call goes out within
 * about 20 ms of the resume on average, not half a long backoff later. */
#define WAKE_BACKOFF_BASE_MS 10
#define WAKE_BACKOFF_CAP_MS  50
/* An upstream with no wake hook that takes no connection for this long is
 * down, not waking: its calls fail with the cause instead of waiting for
 * wake_timeout. */
#define UNREACHABLE_S 1.5
/* A request held this long by an upstream that had been idle is taken as a
 * sandbox resuming (Sandboxer holds the first request while it resumes). */
#define HOLD_S          1.0
#define IDLE_HOLD_S     10.0
#define HOOK_TIMEOUT_MS 30000

enum call_state {
    CALL_QUEUED = 0,
    CALL_RUNNING = 1,
    CALL_BACKOFF = 2,
};

struct mx_upcall {
    struct ev_loop *loop;
    struct mx_uclient *uc;
    struct mx_upstream *up;
    struct mx_upcall_cbs cbs;
    void *data;
    struct mx_ureq_opts opts; /* its strings and body point into text[] */
    size_t hdr_cnt;           /* the caller's header lines; the credential is added */
    size_t hdrs_len;          /* bytes of header text at the start of text[] */
    struct mx_ureq *ureq;
    struct mx_upcall *next; /* in up's queue */
    struct mx_upcall *prev;
    struct mx_upcall *snext; /* in up->streams (on_idle set) */
    struct mx_upcall *sprev;
    enum call_state state;
    ev_timer timer; /* backoff, or the wake deadline while queued */
    ev_timer hold;  /* notices a held request */
    ev_tstamp deadline;
    unsigned attempts;
    bool is_stream; /* GET: long-lived, takes no concurrency slot */
    bool counted;   /* holds a concurrency slot */
    bool queued;
    bool bypass; /* while queued: a stream, or it holds its slot (up->q_bypass) */
    bool retry;  /* this attempt got a retry_on status */
    bool passed; /* a head went to the caller: no more retries */
    bool waited;
    /* credential refresh: the 401 or 403 this attempt got (the call did
     * not run), whether the call had its one retry after a refresh, and
     * whether it waits in the queue for one; |seen| is up->refreshes when
     * the attempt went out */
    long refused;
    bool refreshed;
    bool auth_wait;
    uint64_t seen;
    /* One allocation with the call: the copies of the caller's strings
     * (they may be on its stack): opts.headers here (one slot more, for
     * the credential of each attempt), then their text (wiped), the
     * method, url, ca_file and the body. */
    char *lines[];
};

static void pump(struct mx_upstream *up);
static int launch(struct mx_upcall *c);
static void launch_or_fail(struct mx_upcall *c);

static ev_tstamp wake_timeout_s(const struct mx_upstream *up)
{
    return (double)up->cfg->wake_timeout_ms / 1000.0;
}

/* ---- queue ---- */

static void enqueue(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    c->next = NULL;
    c->prev = up->q_tail;
    if (up->q_tail)
        up->q_tail->next = c;
    else
        up->q_head = c;
    up->q_tail = c;
    c->queued = true;
    c->bypass = c->is_stream || c->counted;
    up->q_bypass += c->bypass;
    c->state = CALL_QUEUED;
}

static void dequeue(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    if (!c->queued)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        up->q_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        up->q_tail = c->prev;
    c->next = c->prev = NULL;
    c->queued = false;
    up->q_bypass -= c->bypass;
}

static void release_slot(struct mx_upcall *c)
{
    if (c->counted) {
        c->counted = false;
        c->up->inflight--;
    }
}

static bool must_wait(const struct mx_upcall *c)
{
    const struct mx_upstream *up = c->up;
    /* nothing goes out with a credential that is being replaced; a call
     * whose refresh failed is failed by refresh_done, never sent again */
    if (up->refresh || (c->auth_wait && !up->refresh_ok))
        return true;
    if (up->probe && up->probe != c)
        return true;
    return !c->is_stream && !c->counted && up->inflight >= (size_t)up->cfg->max_concurrency;
}

/* ---- end of a call ---- */

static void streams_unlink(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    if (c->sprev)
        c->sprev->snext = c->snext;
    else if (up->streams == c)
        up->streams = c->snext;
    if (c->snext)
        c->snext->sprev = c->sprev;
    c->snext = c->sprev = NULL;
}

static void call_free(struct mx_upcall *c)
{
    ev_timer_stop(c->loop, &c->timer);
    ev_timer_stop(c->loop, &c->hold);
    dequeue(c);
    release_slot(c);
    if (c->cbs.on_idle)
        streams_unlink(c);
    else
        c->up->calls--;
    if (c->up->probe == c)
        c->up->probe = NULL;
    OPENSSL_cleanse(c->lines + c->hdr_cnt + 1, c->hdrs_len);
    free(c);
}

static void finish(struct mx_upcall *c, int err, const struct mx_ureq_info *info)
{
    struct mx_upstream *up = c->up;
    void (*on_done)(struct mx_ureq *, int, const struct mx_ureq_info *, void *) =
        c->cbs.base.on_done;
    void *data = c->data;
    struct mx_ureq *u = c->ureq;
    call_free(c);
    on_done(u, err, info, data);
    pump(up);
}

static void hook_done(int err, void *data)
{
    struct mx_upstream *up = data;
    up->hook = NULL;
    if (err) {
        mx_log_warn("wake", "up:%s wake hook failed: %s; still probing until wake_timeout",
                    up->cfg->name, mx_strerror(err));
        return;
    }
    /* A hook that returned may mean the sandbox is back: probe now. */
    struct mx_upcall *c = up->probe;
    if (c && c->state == CALL_BACKOFF) {
        c->attempts = 0;
        ev_timer_stop(c->loop, &c->timer);
        ev_timer_set(&c->timer, 0.0, 0.0);
        ev_timer_start(c->loop, &c->timer);
    }
}

static void start_wake(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    if (up->state != MX_UPSTREAM_WAKING) {
        up->waking_since = ev_now(c->loop);
        up->wakes++;
        up->hook_started = false;
    }
    mx_upstream_note(up, MX_UPSTREAM_EV_NOT_AWAKE);
    if (!up->hook_started && up->cfg->wake) {
        up->hook_started = true;
        long t = up->cfg->wake_timeout_ms < HOOK_TIMEOUT_MS ? (long)up->cfg->wake_timeout_ms
                                                            : HOOK_TIMEOUT_MS;
        if (mx_wake_hook_run(c->loop, c->uc, up->cfg, mx_upstream_secret(up), t, hook_done, up,
                             &up->hook) != 0)
            up->hook = NULL;
    }
}

static void notify_wait(struct mx_upcall *c)
{
    if (c->waited)
        return;
    c->waited = true;
    if (c->cbs.on_wait)
        c->cbs.on_wait(c, c->data);
}

static void wake_timed_out(struct mx_upcall *c)
{
    struct mx_ureq_info info = {0};
    info.wake_timeout = true;
    mx_log_warn("wake", "up:%s did not wake within %.0f s", c->up->cfg->name,
                wake_timeout_s(c->up));
    mx_upstream_note(c->up, MX_UPSTREAM_EV_TIMEOUT);
    finish(c, MX_ETIMEDOUT, &info);
}

static bool retry_after_past_deadline(struct mx_upcall *c, ev_tstamp now);

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upcall *c = mx_container_of(w, struct mx_upcall, timer);
    (void)loop;
    (void)revents;
    if (c->state == CALL_QUEUED) {
        dequeue(c);
        wake_timed_out(c);
        return;
    }
    if (retry_after_past_deadline(c, ev_now(c->loop)))
        return;
    launch_or_fail(c);
}

/* No connection for UNREACHABLE_S and nothing that could wake it: the
 * call fails with what kept the connection from being made. */
static bool given_up(struct mx_upcall *c, ev_tstamp now)
{
    struct mx_upstream *up = c->up;
    if (up->cfg->wake || up->unreachable_since == 0 || now - up->unreachable_since < UNREACHABLE_S)
        return false;
    struct mx_ureq_info info = {0};
    info.no_connection = true;
    info.tls = up->fault == MX_UPSTREAM_FAULT_TLS;
    snprintf(info.cause, sizeof(info.cause), "%s", up->fault_detail);
    mx_upstream_note(up, MX_UPSTREAM_EV_UNREACHABLE);
    finish(c, MX_ECLOSED, &info);
    return true;
}

/* The upstream answered 410: the sandbox was deleted. Nothing wakes it and
 * nothing is probed; the call fails at once. */
static bool gone(struct mx_upcall *c)
{
    if (c->up->state != MX_UPSTREAM_GONE)
        return false;
    struct mx_ureq_info info = {0};
    info.gone = true;
    finish(c, MX_ECLOSED, &info);
    return true;
}

/* The upstream asked not to be asked again before retry_after_until
 * (Retry-After, RFC 9110 §10.2.3). When that is past the call's deadline
 * (wake_timeout), waiting cannot help: the call fails at once, saying how
 * long the upstream asked for. */
static bool retry_after_past_deadline(struct mx_upcall *c, ev_tstamp now)
{
    struct mx_upstream *up = c->up;
    if (up->retry_after_until <= now || up->retry_after_until <= c->deadline)
        return false;
    struct mx_ureq_info info = {0};
    double left = up->retry_after_until - now;
    info.retry_after_s = (int64_t)left + ((double)(int64_t)left < left ? 1 : 0);
    info.http_status = up->retry_after_status;
    mx_log_info("wake", "up:%s asked to retry after %lld s, past the call's wake_timeout",
                up->cfg->name, (long long)info.retry_after_s);
    finish(c, MX_EAGAIN, &info);
    return true;
}

/* The attempt failed in a way that cannot have reached the sandbox. */
static void not_awake(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    ev_tstamp now = ev_now(c->loop);
    if (gone(c) || given_up(c, now) || retry_after_past_deadline(c, now))
        return;
    start_wake(c);
    notify_wait(c);
    if (now >= c->deadline) {
        wake_timed_out(c);
        return;
    }
    mx_upstream_report_retry(up);
    if (up->probe && up->probe != c) {
        release_slot(c);
        enqueue(c);
        ev_timer_set(&c->timer, c->deadline - now, 0.0);
        ev_timer_start(c->loop, &c->timer);
        return;
    }
    up->probe = c;
    bool hooked = up->cfg->wake != NULL;
    int64_t ms =
        mx_backoff_ms(c->attempts++, hooked ? WAKE_BACKOFF_BASE_MS : BACKOFF_BASE_MS,
                      hooked ? WAKE_BACKOFF_CAP_MS : BACKOFF_CAP_MS, mx_rand_below(1u << 20));
    double delay = (double)ms / 1000.0;
    if (now + delay > c->deadline)
        delay = c->deadline - now;
    /* an unreachable upstream with no hook: look again when it is due */
    if (!up->cfg->wake && up->unreachable_since > 0 &&
        up->unreachable_since + UNREACHABLE_S - now < delay)
        delay = up->unreachable_since + UNREACHABLE_S - now > 0
                    ? up->unreachable_since + UNREACHABLE_S - now
                    : 0.0;
    /* and never before it asked (within the deadline, checked above) */
    if (up->retry_after_until - now > delay)
        delay = up->retry_after_until - now;
    c->state = CALL_BACKOFF;
    ev_timer_set(&c->timer, delay, 0.0);
    ev_timer_start(c->loop, &c->timer);
}

/* ---- credential refresh ---- */

/* The credential was refused and no usable one came: the call fails as
 * auth-failed, with |why| (what the refresh said; names no value). */
static void auth_failed(struct mx_upcall *c, const char *why)
{
    struct mx_upstream *up = c->up;
    struct mx_ureq_info info = {0};
    dequeue(c);
    info.http_status = c->refused;
    snprintf(info.cause, sizeof(info.cause), "%s", why);
    mx_upstream_note(up, MX_UPSTREAM_EV_AUTH_REFUSED);
    finish(c, MX_EAUTH, &info);
}

/* Every call that waited for the refresh goes once more with the new
 * credential, or fails with the refresh. One at a time from the head:
 * a caller's callback may end other calls. */
static void refresh_done(struct mx_upstream *up)
{
    while (!up->refresh_ok) {
        struct mx_upcall *c = up->q_head;
        while (c && !c->auth_wait)
            c = c->next;
        if (c == NULL)
            break;
        auth_failed(c, up->refresh_why);
    }
    pump(up);
}

/* The attempt got |c->refused|. A call refused again after its refresh
 * fails: a refresh never loops. Single flight: a refresh in flight is
 * joined; one that ended since the attempt went out is used (its new
 * credential, or its failure); else this call starts one. */
static void refused(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    release_slot(c);
    if (c->refreshed) {
        char shown[120], why[160];
        mx_secret_ref_show(mx_refresh_ref(up->cfg), shown, sizeof(shown));
        snprintf(why, sizeof(why), "the new one %s printed was refused too", shown);
        auth_failed(c, why);
        return;
    }
    c->refreshed = true;
    if (up->refresh == NULL && up->refreshes == c->seen &&
        mx_refresh_start(c->loop, up, refresh_done) != 0) {
        auth_failed(c, up->refresh_why);
        return;
    }
    if (up->refresh == NULL && !up->refresh_ok) {
        auth_failed(c, up->refresh_why);
        return;
    }
    mx_upstream_report_retry(up);
    c->auth_wait = true;
    enqueue(c);
    pump(up);
}

/* ---- uclient callbacks ---- */

static bool is_retry_status(const struct mx_upstream *up, long status)
{
    for (size_t i = 0; i < up->cfg->retry_on_cnt; i++) {
        if (up->cfg->retry_on[i] == status)
            return true;
    }
    return false;
}

/* Retry-After on a 503 or 429 (RFC 9110 §10.2.3, RFC 6585 §4): the seconds
 * it asks for, or -1 (none, another status, or not a value). */
static int64_t retry_after_of(long status, const struct mx_header *hdrs, size_t cnt)
{
    int64_t secs;
    if (status != 503 && status != 429)
        return -1;
    for (size_t i = 0; i < cnt; i++) {
        if (mx_str_caseeq_cstr(hdrs[i].name, "Retry-After"))
            return mx_upstream_retry_after_parse(hdrs[i].value, time(NULL), &secs) == 0 ? secs : -1;
    }
    return -1;
}

static void on_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data)
{
    struct mx_upcall *c = data;
    struct mx_upstream *up = c->up;
    ev_timer_stop(c->loop, &c->hold);
    /* a 503 or 429 that says when to come back was not run either, in or
     * out of retry_on: the call comes back then, if its wake_timeout
     * allows */
    int64_t ra = c->passed ? -1 : retry_after_of(status, hdrs, cnt);
    if (ra >= 0) {
        up->retry_after_until = ev_now(c->loop) + (double)ra;
        up->retry_after_status = status;
    }
    if (!c->passed && (ra >= 0 || is_retry_status(up, status))) {
        c->retry = true; /* the front answered for a sandbox that did not run it */
        return;
    }
    /* A refused credential: the call did not run. Where a command can
     * renew it, the call goes once more after the refresh (on_done), and
     * fails if refused again. The sandbox answered: a wake is over. */
    if (!c->passed && (status == 401 || status == 403) && mx_refresh_ref(up->cfg)) {
        c->refused = status;
        if (up->probe == c)
            up->probe = NULL;
        return;
    }
    c->passed = true;
    if (up->state == MX_UPSTREAM_WAKING)
        mx_log_info("wake", "up:%s answered after waking for %.0f ms", up->cfg->name,
                    (ev_now(c->loop) - up->waking_since) * 1000.0);
    mx_upstream_note_status(up, status);
    up->last_activity = ev_now(c->loop);
    /* The wake is over: everyone waiting on it may go. */
    if (up->probe == c)
        up->probe = NULL;
    c->cbs.base.on_head(u, status, hdrs, cnt, c->data);
    pump(up); /* |c| may be gone now */
}

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    struct mx_upcall *c = data;
    mx_upstream_report_bytes(c->up, 0, len);
    if (c->retry || c->refused)
        return 0;
    return c->cbs.base.on_data(u, p, len, c->data);
}

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct mx_upcall *c = data;
    (void)u;
    c->ureq = NULL;
    ev_timer_stop(c->loop, &c->hold);
    if (info->body_sent)
        mx_upstream_report_bytes(c->up, c->opts.body_len, 0);
    bool unsent =
        err == MX_ECLOSED && !info->response_started && (!info->body_sent || c->opts.may_repeat);
    if (info->no_connection)
        mx_upstream_note_no_connection(c->up, ev_now(c->loop), info->tls, info->cause);
    else if (err == 0 || info->response_started)
        mx_upstream_note_connected(c->up);
    if (c->refused) {
        refused(c);
        return;
    }
    if (!c->passed && (c->retry || unsent)) {
        c->retry = false;
        not_awake(c);
        return;
    }
    /* MX_EPROTO: it answered, just not in a form we pass on */
    if (err && err != MX_EPROTO && !c->passed)
        mx_upstream_note(c->up,
                         err == MX_ETIMEDOUT ? MX_UPSTREAM_EV_TIMEOUT : MX_UPSTREAM_EV_UNREACHABLE);
    finish(c, err, info);
}

static const struct mx_ureq_cbs wrap = {on_head, on_data, on_done};

static void hold_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upcall *c = mx_container_of(w, struct mx_upcall, hold);
    struct mx_upstream *up = c->up;
    (void)loop;
    (void)revents;
    /* Held after an idle spell: the sandbox is resuming. Let this call be
     * the probe so others wait for the same wake instead of piling on. A
     * deleted one is not resuming. */
    if (up->probe == NULL && up->state != MX_UPSTREAM_WAKING && up->state != MX_UPSTREAM_GONE) {
        up->probe = c;
        up->waking_since = ev_now(c->loop) - HOLD_S;
        up->wakes++;
        up->hook_started = true; /* it is resuming by itself */
        mx_upstream_note(up, MX_UPSTREAM_EV_NOT_AWAKE);
    }
    notify_wait(c);
}

/* Returns 0, or mx_ureq_start's error (the call is then not running). */
static int launch(struct mx_upcall *c)
{
    struct mx_upstream *up = c->up;
    ev_tstamp now = ev_now(c->loop);
    if (up->retry_after_until > now) {
        /* not before the upstream said (Retry-After): the timer launches
         * it then, or fails it at once when that is past its deadline */
        c->state = CALL_BACKOFF;
        ev_timer_set(&c->timer,
                     up->retry_after_until > c->deadline ? 0.0 : up->retry_after_until - now, 0.0);
        ev_timer_start(c->loop, &c->timer);
        return 0;
    }
    if (!c->is_stream && !c->counted) {
        c->counted = true;
        up->inflight++;
    }
    c->state = CALL_RUNNING;
    c->retry = false;
    c->refused = 0;
    c->auth_wait = false;
    c->seen = up->refreshes;
    /* the credential of this attempt: a refreshed one once there is one
     * (uclient copies the lines and wipes its copy) */
    char *auth = mx_secret_header_new(mx_upstream_secret(up), up->cfg->auth, up->cfg->auth_name);
    c->opts.header_cnt = c->hdr_cnt;
    if (auth)
        c->lines[c->opts.header_cnt++] = auth;
    int rc = mx_ureq_start(c->uc, &c->opts, &wrap, c, &c->ureq);
    c->lines[c->hdr_cnt] = NULL;
    c->opts.header_cnt = c->hdr_cnt;
    mx_secret_wipe_free(auth);
    if (rc) {
        c->ureq = NULL;
        return rc;
    }
    if (mx_upstream_may_sleep(up, now) && !c->is_stream) {
        ev_timer_set(&c->hold, HOLD_S, 0.0);
        ev_timer_start(c->loop, &c->hold);
    }
    return 0;
}

/* Launch from a timer or the queue: a failure is reported through on_done. */
static void launch_or_fail(struct mx_upcall *c)
{
    if (launch(c) != 0) {
        struct mx_ureq_info info = {0};
        finish(c, MX_EUPSTREAM, &info);
    }
}

static void pump(struct mx_upstream *up)
{
    /* In arrival order; launching takes a slot, so later calls keep waiting
     * once the upstream is at max_concurrency. */
    for (struct mx_upcall *c = up->q_head, *next; c; c = next) {
        next = c->next;
        if (must_wait(c)) {
            /* what keeps it waiting (the probe, or every slot taken) keeps
             * every later one too, unless that one needs no slot */
            if (up->q_bypass == 0)
                break;
            continue;
        }
        dequeue(c);
        ev_timer_stop(c->loop, &c->timer);
        launch_or_fail(c);
    }
}

/* ---- idle_close ---- */

/* The upstream's pool found no transfer in use for idle_close: close the
 * streams, unless a call waits without one (queued, backing off). */
static bool pool_idle(struct mx_upool *p, void *data)
{
    struct mx_upstream *up = data;
    (void)p;
    if (up->calls > 0)
        return false;
    if (up->streams)
        mx_log_info("upstream", "up:%s unused for %.3g s: closing its streams and connections",
                    up->cfg->name, (double)up->cfg->idle_close_ms / 1000.0);
    else
        mx_log_debug("upstream", "up:%s unused for %.3g s: closing its connections", up->cfg->name,
                     (double)up->cfg->idle_close_ms / 1000.0);
    while (up->streams) {
        struct mx_upcall *c = up->streams;
        void (*on_idle)(void *) = c->cbs.on_idle;
        void *cb_data = c->data;
        if (c->ureq)
            mx_ureq_cancel(c->ureq);
        call_free(c);
        on_idle(cb_data);
    }
    return true;
}

static const struct mx_upool_cbs pool_cbs = {pool_idle};

/* ---- public ---- */

int mx_upcall_start(struct ev_loop *loop, struct mx_uclient *uc, struct mx_upstream *up,
                    const struct mx_ureq_opts *opts, const struct mx_upcall_cbs *cbs, void *data,
                    struct mx_upcall **out)
{
    if (opts->method == NULL || opts->url == NULL)
        return MX_EINVAL;
    size_t hdrs_len = 0;
    for (size_t i = 0; i < opts->header_cnt; i++)
        hdrs_len += strlen(opts->headers[i]) + 1;
    size_t method_len = strlen(opts->method) + 1;
    size_t url_len = strlen(opts->url) + 1;
    size_t ca_len = opts->ca_file ? strlen(opts->ca_file) + 1 : 0;
    size_t fixed = sizeof(struct mx_upcall) + (opts->header_cnt + 1) * sizeof(char *) + hdrs_len +
                   method_len + url_len + ca_len;
    if (opts->body_len > SIZE_MAX - fixed)
        return MX_EINVAL;
    struct mx_upcall *c = mx_xmalloc(fixed + opts->body_len);
    memset(c, 0, sizeof(*c));
    c->loop = loop;
    c->uc = uc;
    c->up = up;
    c->cbs = *cbs;
    c->data = data;
    c->opts = *opts;
    c->hdr_cnt = opts->header_cnt;
    c->hdrs_len = hdrs_len;
    c->lines[c->hdr_cnt] = NULL;
    char *text = (char *)(c->lines + c->hdr_cnt + 1);
    for (size_t i = 0; i < opts->header_cnt; i++) {
        size_t len = strlen(opts->headers[i]) + 1;
        c->lines[i] = memcpy(text, opts->headers[i], len);
        text += len;
    }
    c->opts.headers = (const char *const *)c->lines;
    c->opts.method = memcpy(text, opts->method, method_len);
    text += method_len;
    c->opts.url = memcpy(text, opts->url, url_len);
    text += url_len;
    if (opts->ca_file) {
        c->opts.ca_file = memcpy(text, opts->ca_file, ca_len);
        text += ca_len;
    }
    c->opts.body = opts->body_len ? memcpy(text, opts->body, opts->body_len) : NULL;
    c->is_stream = strcmp(opts->method, "GET") == 0;
    if (up->pool == NULL)
        up->pool = mx_upool_new(uc, (long)up->cfg->idle_close_ms, &pool_cbs, up);
    c->opts.pool = up->pool;
    c->opts.stream = cbs->on_idle != NULL;
    if (cbs->on_idle) {
        c->snext = up->streams;
        if (up->streams)
            up->streams->sprev = c;
        up->streams = c;
    } else {
        up->calls++;
    }
    c->deadline = ev_now(loop) + wake_timeout_s(up);
    ev_init(&c->timer, timer_cb);
    ev_init(&c->hold, hold_cb);
    *out = c;
    if (must_wait(c)) {
        enqueue(c);
        if (up->probe) {
            notify_wait(c);
            ev_timer_set(&c->timer, wake_timeout_s(up), 0.0);
            ev_timer_start(loop, &c->timer);
        }
        return 0;
    }
    int rc = launch(c);
    if (rc) {
        *out = NULL;
        call_free(c);
        return rc;
    }
    return 0;
}

void mx_upcall_cancel(struct mx_upcall *c)
{
    if (c == NULL)
        return;
    struct mx_upstream *up = c->up;
    if (c->ureq)
        mx_ureq_cancel(c->ureq);
    call_free(c);
    pump(up);
}

void mx_upcall_resume(struct mx_upcall *c)
{
    if (c->ureq)
        mx_ureq_resume(c->ureq);
}

bool mx_upcall_waited(const struct mx_upcall *c)
{
    return c->waited;
}

void mx_upstream_clear(struct mx_upstream *up)
{
    while (up->q_head)
        mx_upcall_cancel(up->q_head);
    if (up->probe)
        mx_upcall_cancel(up->probe);
    mx_wake_hook_cancel(up->hook);
    up->hook = NULL;
    mx_refresh_clear(up);
    mx_upool_free(up->pool);
    up->pool = NULL;
}
