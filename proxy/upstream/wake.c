/* SPDX-License-Identifier: MIT */
/*
 * Wake hooks. A command runs through cmdrun.h (a child watched by ev_child,
 * killed at its timeout); a URL goes through the shared upstream client.
 * Nothing blocks the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cmdrun.h"
#include "err.h"
#include "log.h"
#include "wake.h"

struct mx_wake_hook {
    struct ev_loop *loop;
    const struct mx_server_cfg *cfg;
    mx_wake_done_cb cb;
    void *data;
    struct mx_cmdrun *run;
    ev_timer timer; /* a url: hook's deadline (a command has its own) */
    struct mx_ureq *ureq;
    long status;
};

static void hook_free(struct mx_wake_hook *h)
{
    ev_timer_stop(h->loop, &h->timer);
    free(h);
}

static void finish(struct mx_wake_hook *h, int err)
{
    mx_wake_done_cb cb = h->cb;
    void *data = h->data;
    hook_free(h);
    cb(err, data);
}

static void cmd_done(int err, const char *why, struct mx_str out, void *data)
{
    struct mx_wake_hook *h = data;
    (void)why; /* logged by cmdrun */
    (void)out;
    h->run = NULL;
    finish(h, err);
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_wake_hook *h = mx_container_of(w, struct mx_wake_hook, timer);
    (void)loop;
    (void)revents;
    mx_log_warn("wake", "up:%s wake hook did not finish in time", h->cfg->name);
    if (h->ureq)
        mx_ureq_cancel(h->ureq);
    finish(h, MX_ETIMEDOUT);
}

static int run_cmd(struct mx_wake_hook *h, const char *cmd, long timeout_ms)
{
    char label[96], why[160];
    snprintf(label, sizeof(label), "up:%s wake command", h->cfg->name);
    /* stdout to /dev/null: in `mcplex stdio` it carries JSON-RPC only;
     * stderr joins mcplex's log */
    struct mx_cmdrun_opts o = {cmd, label, timeout_ms, 0, false, true};
    return mx_cmdrun_start(h->loop, &o, cmd_done, h, &h->run, why, sizeof(why));
}

static void url_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                     void *data)
{
    struct mx_wake_hook *h = data;
    (void)u;
    (void)hdrs;
    (void)cnt;
    h->status = status;
}

static int url_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    (void)u;
    (void)p;
    (void)len;
    (void)data;
    return 0;
}

static void url_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct mx_wake_hook *h = data;
    (void)u;
    (void)info;
    h->ureq = NULL;
    if (err == 0 && (h->status < 200 || h->status >= 300)) {
        mx_log_warn("wake", "up:%s wake URL answered HTTP %ld", h->cfg->name, h->status);
        err = MX_EUPSTREAM;
    }
    finish(h, err);
}

static const struct mx_ureq_cbs url_cbs = {url_head, url_data, url_done};

static int run_url(struct mx_wake_hook *h, struct mx_uclient *uc, const struct mx_secret *secret,
                   const char *url, long timeout_ms)
{
    const char *lines[2];
    size_t n = 0;
    char *auth = mx_secret_header_new(secret, h->cfg->auth, h->cfg->auth_name);
    if (auth)
        lines[n++] = auth;
    lines[n++] = "Content-Type: application/json";
    struct mx_ureq_opts o = {0};
    o.method = "POST";
    o.url = url;
    o.headers = lines;
    o.header_cnt = n;
    o.body = "{}";
    o.body_len = 2;
    o.timeout_ms = timeout_ms;
    o.may_repeat = true;
    o.ca_file = h->cfg->ca;
    int rc = mx_ureq_start(uc, &o, &url_cbs, h, &h->ureq);
    mx_secret_wipe_free(auth);
    return rc;
}

int mx_wake_hook_run(struct ev_loop *loop, struct mx_uclient *uc, const struct mx_server_cfg *cfg,
                     const struct mx_secret *secret, long timeout_ms, mx_wake_done_cb cb,
                     void *data, struct mx_wake_hook **out)
{
    int rc;
    if (cfg->wake == NULL)
        return MX_ENOTFOUND;
    struct mx_wake_hook *h = mx_xcalloc(1, sizeof(*h));
    h->loop = loop;
    h->cfg = cfg;
    h->cb = cb;
    h->data = data;
    ev_timer_init(&h->timer, timeout_cb, (double)timeout_ms / 1000.0, 0.0);
    if (strncmp(cfg->wake, "cmd:", 4) == 0) {
        rc = run_cmd(h, cfg->wake + 4, timeout_ms);
    } else if (strncmp(cfg->wake, "url:", 4) == 0) {
        rc = run_url(h, uc, secret, cfg->wake + 4, timeout_ms);
        if (rc == 0)
            ev_timer_start(loop, &h->timer);
    } else {
        rc = MX_EINVAL;
    }
    if (rc) {
        free(h);
        return rc;
    }
    mx_log_info("wake", "up:%s running its wake hook", cfg->name);
    *out = h;
    return 0;
}

void mx_wake_hook_cancel(struct mx_wake_hook *h)
{
    if (h == NULL)
        return;
    mx_cmdrun_cancel(h->run);
    if (h->ureq)
        mx_ureq_cancel(h->ureq);
    hook_free(h);
}
