/* SPDX-License-Identifier: MIT */
/* Upstream health state machine, and the reports to its observer. */
#include <stdio.h>
#include <string.h>

#include "log.h"
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
    }
    return "?";
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
    switch (ev) {
    case MX_UPSTREAM_EV_OK:
        set_state(u, MX_UPSTREAM_UP);
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
    for (size_t i = 0; i < u->cfg->retry_on_cnt; i++) {
        if (u->cfg->retry_on[i] == status)
            return MX_UPSTREAM_EV_NOT_AWAKE;
    }
    return MX_UPSTREAM_EV_OK;
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
