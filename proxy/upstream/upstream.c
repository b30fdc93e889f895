/* SPDX-License-Identifier: MIT */
/* Upstream health state machine, its last error, and the reports to its
 * observer. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "err.h"
#include "log.h"
#include "num.h"
#include "upstream.h"

static void url_host(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    /* drop any userinfo: it may hold a credential */
    const char *end = p + strcspn(p, "/?#");
    const char *at = memchr(p, '@', (size_t)(end - p));
    if (at)
        p = at + 1;
    snprintf(out, cap, "%.*s", (int)(end - p), p);
}

static char gone_name[] = "(removed)";
const struct mx_server_cfg mx_upstream_gone_cfg = {
    .name = gone_name,
    .alias = gone_name,
};

void mx_upstream_init(struct mx_upstream *u, const struct mx_server_cfg *cfg)
{
    memset(u, 0, sizeof(*u));
    u->cfg = cfg;
    if (cfg->url)
        url_host(cfg->url, u->host, sizeof(u->host));
    else if (cfg->command.cnt)
        snprintf(u->host, sizeof(u->host), "%s", cfg->command.v[0]);
    u->state = MX_UPSTREAM_UNKNOWN;
    u->since = time(NULL);
}

const char *mx_upstream_state_name(enum mx_upstream_state s)
{
    switch (s) {
    case MX_UPSTREAM_UNKNOWN:
        return "unknown";
    case MX_UPSTREAM_UP:
        return "up";
    case MX_UPSTREAM_WAKING:
        return "waking";
    case MX_UPSTREAM_DOWN:
        return "down";
    case MX_UPSTREAM_AUTH_FAILED:
        return "auth-failed";
    case MX_UPSTREAM_GONE:
        return "gone";
    }
    return "?";
}

bool mx_upstream_may_sleep(const struct mx_upstream *u, ev_tstamp now)
{
    return u->state == MX_UPSTREAM_UNKNOWN ||
           now - u->last_activity >= (double)u->cfg->idle_close_ms / 1000.0;
}

const char *mx_upstream_fault_name(enum mx_upstream_fault f)
{
    switch (f) {
    case MX_UPSTREAM_FAULT_NONE:
        return "";
    case MX_UPSTREAM_FAULT_UNREACHABLE:
        return "unreachable";
    case MX_UPSTREAM_FAULT_TLS:
        return "tls";
    case MX_UPSTREAM_FAULT_AUTH:
        return "auth-failed";
    case MX_UPSTREAM_FAULT_GONE:
        return "gone";
    }
    return "?";
}

void mx_upstream_fault_text(const struct mx_upstream *u, char *out, size_t cap)
{
    if (u->fault == MX_UPSTREAM_FAULT_NONE)
        snprintf(out, cap, "%s", "");
    else
        snprintf(out, cap, "%s: %s", mx_upstream_fault_name(u->fault), u->fault_detail);
}

static void set_fault(struct mx_upstream *u, enum mx_upstream_fault f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_fault(struct mx_upstream *u, enum mx_upstream_fault f, const char *fmt, ...)
{
    va_list ap;
    u->fault = f;
    u->fault_at = time(NULL);
    va_start(ap, fmt);
    vsnprintf(u->fault_detail, sizeof(u->fault_detail), fmt, ap);
    va_end(ap);
}

static void clear_fault(struct mx_upstream *u)
{
    u->fault = MX_UPSTREAM_FAULT_NONE;
    u->fault_detail[0] = '\0';
    u->fault_at = 0;
}

static void set_state(struct mx_upstream *u, enum mx_upstream_state s)
{
    if (u->state == s)
        return;
    mx_log_info("upstream", "up:%s %s -> %s", u->cfg->name, mx_upstream_state_name(u->state),
                mx_upstream_state_name(s));
    /* Every wake starts and ends here, whichever path noticed it. */
    if (s == MX_UPSTREAM_WAKING) {
        if (u->obs && u->obs->wake_start)
            u->obs->wake_start(u, u->obs_data);
    } else if (u->state == MX_UPSTREAM_WAKING) {
        if (u->obs && u->obs->wake_end)
            u->obs->wake_end(u, ev_time() - u->waking_since, s != MX_UPSTREAM_DOWN, u->obs_data);
    }
    u->state = s;
    u->since = time(NULL);
}

void mx_upstream_note(struct mx_upstream *u, enum mx_upstream_event ev)
{
    u->requests++;
    /* A deleted sandbox is not woken, and nothing but an answer says it
     * is back (a new one at the same address). */
    if (u->state == MX_UPSTREAM_GONE && ev != MX_UPSTREAM_EV_OK) {
        u->failures++;
        return;
    }
    switch (ev) {
    case MX_UPSTREAM_EV_OK:
        clear_fault(u);
        set_state(u, MX_UPSTREAM_UP);
        break;
    case MX_UPSTREAM_EV_GONE:
        u->failures++;
        set_state(u, MX_UPSTREAM_GONE);
        break;
    case MX_UPSTREAM_EV_AUTH_REFUSED:
        u->failures++;
        set_state(u, MX_UPSTREAM_AUTH_FAILED);
        break;
    case MX_UPSTREAM_EV_NOT_AWAKE:
        u->failures++;
        set_state(u, MX_UPSTREAM_WAKING);
        break;
    case MX_UPSTREAM_EV_UNREACHABLE:
    case MX_UPSTREAM_EV_TIMEOUT:
        u->failures++;
        set_state(u, MX_UPSTREAM_DOWN);
        break;
    }
}

enum mx_upstream_event mx_upstream_classify_status(const struct mx_upstream *u, long status)
{
    if (status == 401 || status == 403)
        return MX_UPSTREAM_EV_AUTH_REFUSED;
    if (status == 410)
        return MX_UPSTREAM_EV_GONE;
    for (size_t i = 0; i < u->cfg->retry_on_cnt; i++) {
        if (u->cfg->retry_on[i] == status)
            return MX_UPSTREAM_EV_NOT_AWAKE;
    }
    return MX_UPSTREAM_EV_OK;
}

void mx_upstream_note_status(struct mx_upstream *u, long status)
{
    enum mx_upstream_event ev = mx_upstream_classify_status(u, status);
    mx_upstream_note(u, ev);
    if (u->state == MX_UPSTREAM_GONE && ev != MX_UPSTREAM_EV_GONE)
        return;
    /* what it said is the last error; an answer ends the one before */
    if (ev == MX_UPSTREAM_EV_AUTH_REFUSED)
        set_fault(u, MX_UPSTREAM_FAULT_AUTH, "%ld from %s", status, u->cfg->name);
    else if (ev == MX_UPSTREAM_EV_GONE)
        set_fault(u, MX_UPSTREAM_FAULT_GONE, "410 from %s", u->cfg->name);
    else
        mx_upstream_note_connected(u);
}

void mx_upstream_note_no_connection(struct mx_upstream *u, ev_tstamp now, bool tls,
                                    const char *cause)
{
    if (u->unreachable_since == 0)
        u->unreachable_since = now;
    if (u->state == MX_UPSTREAM_GONE)
        return;
    set_fault(u, tls ? MX_UPSTREAM_FAULT_TLS : MX_UPSTREAM_FAULT_UNREACHABLE, "%s", cause);
}

void mx_upstream_note_connected(struct mx_upstream *u)
{
    u->unreachable_since = 0;
    if (u->fault == MX_UPSTREAM_FAULT_UNREACHABLE || u->fault == MX_UPSTREAM_FAULT_TLS)
        clear_fault(u);
}

/* RFC 9110 §10.2.3 and §5.6.7: delay-seconds is 1*DIGIT; an HTTP-date is
 * IMF-fixdate (or one of the two obsolete forms recipients must accept,
 * which curl_getdate() reads too). */
#define RETRY_AFTER_MAX_S (365LL * 86400)

int mx_upstream_retry_after_parse(struct mx_str value, time_t now, int64_t *secs)
{
    char date[64];
    while (value.len && (value.p[0] == ' ' || value.p[0] == '\t')) {
        value.p++;
        value.len--;
    }
    while (value.len && (value.p[value.len - 1] == ' ' || value.p[value.len - 1] == '\t'))
        value.len--;
    if (value.len == 0)
        return MX_EINVAL;
    if (value.p[0] >= '0' && value.p[0] <= '9') {
        size_t digits = 0;
        while (digits < value.len && value.p[digits] >= '0' && value.p[digits] <= '9')
            digits++;
        if (digits != value.len)
            return MX_EINVAL;
        /* a longer wait than any call may take is as good as that */
        if (digits > 12 || mx_num_parse(value.p, value.len, 0, INT64_MAX, secs) != 0 ||
            *secs > RETRY_AFTER_MAX_S)
            *secs = RETRY_AFTER_MAX_S;
        return 0;
    }
    if (value.len >= sizeof(date))
        return MX_EINVAL;
    memcpy(date, value.p, value.len);
    date[value.len] = '\0';
    time_t at = curl_getdate(date, NULL);
    if (at == -1)
        return MX_EINVAL;
    *secs = at <= now ? 0 : (int64_t)(at - now);
    if (*secs > RETRY_AFTER_MAX_S)
        *secs = RETRY_AFTER_MAX_S;
    return 0;
}

const struct mx_secret *mx_upstream_secret(const struct mx_upstream *u)
{
    return u->secret ? u->secret : u->cfg->secret;
}

void mx_upstream_redact(const struct mx_upstream *u, char *p, size_t len)
{
    if (u->secret)
        mx_secret_redact(u->secret, p, len);
}

void mx_upstream_report_retry(struct mx_upstream *u)
{
    if (u->obs && u->obs->retry)
        u->obs->retry(u, u->obs_data);
}

void mx_upstream_report_bytes(struct mx_upstream *u, uint64_t sent, uint64_t received)
{
    if (u->obs && u->obs->bytes)
        u->obs->bytes(u, sent, received, u->obs_data);
}

void mx_upstream_report_msg(struct mx_upstream *u, const char *dir, const char *session,
                            struct mx_str msg)
{
    if (u->obs && u->obs->traced)
        u->obs->traced(u, dir, session, msg, u->obs_data);
}
