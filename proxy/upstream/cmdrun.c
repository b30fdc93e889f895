/* SPDX-License-Identifier: MIT */
/*
 * Helper commands on the loop. A command that exits is done once what it
 * printed is read: everything it wrote before it exited is in the pipe,
 * and something it left running in the background may hold the pipe open,
 * so EOF is not waited for after the exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "cmdrun.h"
#include "err.h"
#include "log.h"
#include "proc.h"

struct mx_cmdrun {
    struct ev_loop *loop;
    mx_cmdrun_cb cb;
    void *data;
    char *label;
    pid_t pid; /* 0 once reaped */
    ev_child child;
    ev_timer timer;
    ev_io io;
    int fd; /* read end of the stdout pipe, or -1 */
    char *buf;
    size_t len;
    size_t cap;
    long timeout_ms;
};

static void stop(struct mx_cmdrun *r)
{
    ev_child_stop(r->loop, &r->child);
    ev_timer_stop(r->loop, &r->timer);
    if (r->fd >= 0) {
        ev_io_stop(r->loop, &r->io);
        close(r->fd);
        r->fd = -1;
    }
    if (r->pid > 0)
        kill(-r->pid, SIGKILL); /* reaped by libev's child handler */
    r->pid = 0;
}

static void wipe_free(char *buf, size_t size)
{
    if (buf) {
        OPENSSL_cleanse(buf, size);
        free(buf);
    }
}

static void finish(struct mx_cmdrun *r, int err, const char *why)
{
    mx_cmdrun_cb cb = r->cb;
    void *data = r->data;
    char *buf = r->buf;
    size_t size = buf ? r->cap + 1 : 0;
    struct mx_str out = {buf ? buf : "", r->len};
    stop(r);
    free(r->label);
    free(r);
    cb(err, why, out, data);
    wipe_free(buf, size);
}

/* Read what is in the pipe now. Returns 1 at EOF, MX_ELIMIT past the cap,
 * else 0. */
static int drain(struct mx_cmdrun *r)
{
    for (;;) {
        /* one byte of room past the cap tells "too much" from "just fits" */
        ssize_t n = read(r->fd, r->buf + r->len, r->cap + 1 - r->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 0; /* EAGAIN, or nothing more to read */
        if (n == 0)
            return 1;
        r->len += (size_t)n;
        if (r->len > r->cap)
            return MX_ELIMIT;
    }
}

static void too_much(struct mx_cmdrun *r)
{
    char why[96];
    mx_log_warn("cmdrun", "%s printed more than %zu bytes: killed", r->label, r->cap);
    snprintf(why, sizeof(why), "printed more than %zu bytes", r->cap);
    r->len = 0;
    finish(r, MX_ELIMIT, why);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_cmdrun *r = mx_container_of(w, struct mx_cmdrun, io);
    (void)loop;
    (void)revents;
    int rc = drain(r);
    if (rc == MX_ELIMIT) {
        too_much(r);
        return;
    }
    if (rc == 1) /* EOF: the exit comes through ev_child */
        ev_io_stop(r->loop, &r->io);
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
    struct mx_cmdrun *r = mx_container_of(w, struct mx_cmdrun, child);
    char why[96];
    (void)loop;
    (void)revents;
    r->pid = 0;
    if (r->fd >= 0 && drain(r) == MX_ELIMIT) {
        too_much(r);
        return;
    }
    int st = w->rstatus;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        finish(r, 0, "exited with status 0");
        return;
    }
    if (WIFEXITED(st))
        snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(why, sizeof(why), "was killed by signal %d", WTERMSIG(st));
    mx_log_warn("cmdrun", "%s %s", r->label, why);
    r->len = 0;
    finish(r, MX_EUPSTREAM, why);
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_cmdrun *r = mx_container_of(w, struct mx_cmdrun, timer);
    char why[96];
    (void)loop;
    (void)revents;
    snprintf(why, sizeof(why), "did not finish within %.3g s", (double)r->timeout_ms / 1000.0);
    mx_log_warn("cmdrun", "%s %s: killed", r->label, why);
    r->len = 0;
    finish(r, MX_ETIMEDOUT, why);
}

int mx_cmdrun_start(struct ev_loop *loop, const struct mx_cmdrun_opts *o, mx_cmdrun_cb cb,
                    void *data, struct mx_cmdrun **out, char *why, size_t why_cap)
{
    struct mx_argv a;
    int fds[2] = {-1, -1};
    pid_t pid;
    int rc = mx_argv_split(o->cmd, &a);
    if (rc) {
        snprintf(why, why_cap, rc == MX_ELIMIT ? "has more than %d arguments" : "is empty",
                 MX_SPAWN_MAX_ARGS);
        mx_log_warn("cmdrun", "%s %s", o->label, why);
        mx_argv_clear(&a);
        return MX_EINVAL;
    }
    /* O_NONBLOCK on the read end only: it is a flag of the open file, and
     * a child whose stdout gave EAGAIN would fail once the pipe is full */
    if (o->out_cap && (pipe2(fds, O_CLOEXEC) != 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0)) {
        snprintf(why, why_cap, "could not start: pipe: %s", strerror(errno));
        mx_log_warn("cmdrun", "%s %s", o->label, why);
        if (fds[0] >= 0) {
            close(fds[0]);
            close(fds[1]);
        }
        mx_argv_clear(&a);
        return MX_EIO;
    }
    /* Nothing of mcplex's environment (where secrets may live) but PATH,
     * unless the command is a secret source, which gets what it got when
     * the reference was first resolved. */
    const char *path = getenv("PATH");
    char *path_env = mx_xasprintf("PATH=%s", path ? path : "/usr/bin:/bin");
    char *path_only[] = {path_env, NULL};
    int err = mx_spawn(a.v, o->inherit_env ? environ : path_only, fds[1], o->keep_stderr, &pid);
    free(path_env);
    if (fds[1] >= 0)
        close(fds[1]);
    if (err) {
        /* the program's name only: its arguments may hold a key */
        snprintf(why, why_cap, "could not start %s: %s", a.v[0], strerror(err));
        mx_log_warn("cmdrun", "%s %s", o->label, why);
        if (fds[0] >= 0)
            close(fds[0]);
        mx_argv_clear(&a);
        return err == ENOENT ? MX_ENOTFOUND : MX_EIO;
    }
    mx_argv_clear(&a);
    struct mx_cmdrun *r = mx_xcalloc(1, sizeof(*r));
    r->loop = loop;
    r->cb = cb;
    r->data = data;
    r->label = mx_xstrdup(o->label);
    r->pid = pid;
    r->fd = fds[0];
    r->timeout_ms = o->timeout_ms;
    if (r->fd >= 0) {
        r->cap = o->out_cap;
        r->buf = mx_xmalloc(r->cap + 1);
        ev_io_init(&r->io, io_cb, r->fd, EV_READ);
        ev_io_start(loop, &r->io);
    }
    ev_child_init(&r->child, child_cb, pid, 0);
    ev_child_start(loop, &r->child);
    ev_timer_init(&r->timer, timeout_cb, (double)o->timeout_ms / 1000.0, 0.0);
    ev_timer_start(loop, &r->timer);
    *out = r;
    return 0;
}

void mx_cmdrun_cancel(struct mx_cmdrun *r)
{
    if (r == NULL)
        return;
    stop(r);
    wipe_free(r->buf, r->cap + 1);
    free(r->label);
    free(r);
}
