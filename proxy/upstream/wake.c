/* SPDX-License-Identifier: MIT */
/*
 * Wake hooks. A command runs as a child watched by ev_child (libev's default
 * loop reaps it); a URL goes through the shared upstream client. Nothing
 * blocks the loop, and a hook that hangs is killed at its timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "wake.h"

#define MAX_ARGS 32

struct mx_wake_hook {
    struct ev_loop *loop;
    const struct mx_server_cfg *cfg;
    mx_wake_done_cb cb;
    void *data;
    pid_t pid;
    ev_child child;
    ev_timer timer;
    struct mx_ureq *ureq;
    long status;
};

static void hook_free(struct mx_wake_hook *h)
{
    ev_child_stop(h->loop, &h->child);
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

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
    struct mx_wake_hook *h = mx_container_of(w, struct mx_wake_hook, child);
    (void)loop;
    (void)revents;
    int ok = WIFEXITED(w->rstatus) && WEXITSTATUS(w->rstatus) == 0;
    if (!ok)
        mx_log_warn("wake", "up:%s wake command failed (status %d)", h->cfg->name, w->rstatus);
    h->pid = 0;
    finish(h, ok ? 0 : MX_EUPSTREAM);
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_wake_hook *h = mx_container_of(w, struct mx_wake_hook, timer);
    (void)loop;
    (void)revents;
    mx_log_warn("wake", "up:%s wake hook did not finish in time", h->cfg->name);
    if (h->pid > 0)
        kill(-h->pid, SIGKILL);
    if (h->ureq)
        mx_ureq_cancel(h->ureq);
    finish(h, MX_ETIMEDOUT);
}

static int run_cmd(struct mx_wake_hook *h, const char *cmd)
{
    char *copy = mx_xstrdup(cmd);
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (char *p = copy; *p && argc < MAX_ARGS;) {
        while (*p == ' ')
            *p++ = '\0';
        if (*p == '\0')
            break;
        argv[argc++] = p;
        while (*p && *p != ' ')
            p++;
    }
    argv[argc] = NULL;
    if (argc == 0) {
        free(copy);
        return MX_EINVAL;
    }
    /* Nothing of mcplex's environment (where secrets may live) but PATH. */
    const char *path = getenv("PATH");
    char *path_env = mx_xasprintf("PATH=%s", path ? path : "/usr/bin:/bin");
    char *envp[] = {path_env, NULL};
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    /* stdin and stdout from/to /dev/null: in `mcplex stdio` stdout carries
     * JSON-RPC only; stderr joins mcplex's log. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(path_env);
    if (rc != 0) {
        mx_log_warn("wake", "up:%s cannot run wake command %s: %s", h->cfg->name, argv[0],
                    strerror(rc));
        free(copy);
        return MX_EIO;
    }
    free(copy);
    h->pid = pid;
    ev_child_init(&h->child, child_cb, pid, 0);
    ev_child_start(h->loop, &h->child);
    return 0;
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

static int run_url(struct mx_wake_hook *h, struct mx_uclient *uc, const char *url, long timeout_ms)
{
    const char *lines[2];
    size_t n = 0;
    char *auth = mx_secret_header_new(h->cfg->secret, h->cfg->auth, h->cfg->auth_name);
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
                     long timeout_ms, mx_wake_done_cb cb, void *data, struct mx_wake_hook **out)
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
    if (strncmp(cfg->wake, "cmd:", 4) == 0)
        rc = run_cmd(h, cfg->wake + 4);
    else if (strncmp(cfg->wake, "url:", 4) == 0)
        rc = run_url(h, uc, cfg->wake + 4, timeout_ms);
    else
        rc = MX_EINVAL;
    if (rc) {
        free(h);
        return rc;
    }
    ev_timer_start(loop, &h->timer);
    mx_log_info("wake", "up:%s running its wake hook", cfg->name);
    *out = h;
    return 0;
}

void mx_wake_hook_cancel(struct mx_wake_hook *h)
{
    if (h == NULL)
        return;
    if (h->pid > 0)
        kill(-h->pid, SIGKILL);
    if (h->ureq)
        mx_ureq_cancel(h->ureq);
    hook_free(h);
}
