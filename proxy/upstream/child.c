/* SPDX-License-Identifier: MIT */
/*
 * stdio upstream processes on the loop. States of one child:
 *
 *   running --process exits--> exited (stdout read to its end, or 1 s)
 *   running|exited --mx_child_close--> closing --reaped, group gone--> freed
 *
 * Closed children are freed by a reaper (ev_prepare), never inside a
 * callback of theirs. Every wait has a timer: the flush after exit, the
 * SIGTERM and the SIGKILL after close.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "child.h"
#include "err.h"
#include "linebuf.h"
#include "log.h"

#define SUBSYS "child"

#define READ_CHUNK     (64u * 1024)
#define READS_PER_WAKE 4    /* then let others run */
#define LINES_PER_TURN 256  /* stdout lines handed out per loop turn */
#define ERR_LINE_MAX   4096 /* one stderr line; longer ones are dropped */
#define ERR_BURST      50.0 /* stderr lines logged at once at most... */
#define ERR_RATE       10.0 /* ...and per second after that */
#define EXIT_FLUSH_S   1.0  /* read stdout this long after the exit... */
#define EXIT_HOLD_S    30.0 /* ...or, while the owner pauses reading, this long */
#define TERM_AFTER_S   0.5  /* after closing stdin, then SIGTERM */
#define KILL_AFTER_S   2.0  /* after SIGTERM, then SIGKILL */

enum child_state {
    CS_RUNNING = 0,
    CS_EXITED = 1,  /* exit reported to the owner */
    CS_CLOSING = 2, /* owner closed it; ending the process group */
};

struct mx_child {
    struct ev_loop *loop;
    char *name;
    struct mx_child_cbs cbs;
    void *data;
    enum child_state state;
    pid_t pid;
    bool reaped;
    int status;
    ev_tstamp exited_at;
    bool term_sent;
    bool kill_sent;

    int in_fd;
    int out_fd;
    int err_fd;
    ev_io in_w;
    ev_io out_w;
    ev_io err_w;
    ev_child child_w;
    ev_timer timer; /* exit flush, then SIGTERM/SIGKILL after close */
    ev_idle kick;   /* hand out held lines after a resume */

    struct mx_buf in_q;
    bool in_blocked; /* a write left bytes queued: on_drain when empty */
    struct mx_linebuf out_lb;
    bool out_eof;
    bool out_done; /* read to the end and every line handed out (or given up) */
    bool paused;
    size_t max_line;
    struct mx_linebuf err_lb;

    double err_tokens;
    ev_tstamp err_at;
    unsigned long err_suppressed;

    struct mx_child *reap_next;
    struct mx_child *all_next; /* every live child, for shutdown */
    struct mx_child *all_prev;
};

static size_t live_cnt;
static struct mx_child *all_head;
static struct mx_child *reap_head;
static ev_prepare reaper;
static struct ev_loop *reaper_loop;
static bool draining;
static ev_timer drain_timer;

static void maybe_free(struct mx_child *c);

size_t mx_child_live_cnt(void)
{
    return live_cnt;
}

pid_t mx_child_pid(const struct mx_child *c)
{
    return c ? c->pid : 0;
}

size_t mx_child_queued(const struct mx_child *c)
{
    return c ? mx_buf_len(&c->in_q) : 0;
}

static void close_fd(struct ev_loop *loop, ev_io *w, int *fd)
{
    if (*fd < 0)
        return;
    ev_io_stop(loop, w);
    close(*fd);
    *fd = -1;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- freeing ---- */

/* Closes the pipes and stops every watcher; may be called again. */
static void stop_all(struct mx_child *c)
{
    close_fd(c->loop, &c->in_w, &c->in_fd);
    close_fd(c->loop, &c->out_w, &c->out_fd);
    close_fd(c->loop, &c->err_w, &c->err_fd);
    ev_child_stop(c->loop, &c->child_w);
    ev_timer_stop(c->loop, &c->timer);
    ev_idle_stop(c->loop, &c->kick);
}

static void child_free(struct mx_child *c)
{
    stop_all(c);
    if (c->all_prev)
        c->all_prev->all_next = c->all_next;
    else
        all_head = c->all_next;
    if (c->all_next)
        c->all_next->all_prev = c->all_prev;
    mx_buf_clear(&c->in_q);
    mx_linebuf_clear(&c->out_lb);
    mx_linebuf_clear(&c->err_lb);
    free(c->name);
    free(c);
    live_cnt--;
}

static void reaper_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)revents;
    while (reap_head) {
        struct mx_child *c = reap_head;
        reap_head = c->reap_next;
        child_free(c);
    }
    ev_prepare_stop(loop, w);
    if (draining && all_head == NULL)
        ev_break(loop, EVBREAK_ALL);
}

static void queue_free(struct mx_child *c)
{
    /* every watcher stops now; the memory goes before the loop's next wait */
    stop_all(c);
    c->reap_next = reap_head;
    reap_head = c;
    if (reaper_loop == NULL) {
        ev_prepare_init(&reaper, reaper_cb);
        reaper_loop = c->loop;
    }
    if (!ev_is_active(&reaper))
        ev_prepare_start(c->loop, &reaper);
}

/* Whether anything of the process group is left. */
static bool group_alive(const struct mx_child *c)
{
    if (c->pid <= 0)
        return false;
    return kill(-c->pid, 0) == 0 || errno == EPERM;
}

static void signal_group(struct mx_child *c, int sig)
{
    if (c->pid > 0 && kill(-c->pid, sig) != 0 && errno != ESRCH)
        mx_log_debug(SUBSYS, "[%s] kill(-%d, %d): %s", c->name, (int)c->pid, sig, strerror(errno));
}

/* A closing child goes once it is reaped and nothing of its group is left
 * (or SIGKILL was sent: what is left cannot outlive it). */
static void maybe_free(struct mx_child *c)
{
    if (c->state != CS_CLOSING || !c->reaped)
        return;
    if (!c->kill_sent && group_alive(c)) {
        if (!c->term_sent) {
            c->term_sent = true;
            signal_group(c, SIGTERM);
            ev_timer_stop(c->loop, &c->timer);
            ev_timer_set(&c->timer, KILL_AFTER_S, 0.0);
            ev_timer_start(c->loop, &c->timer);
        }
        return;
    }
    queue_free(c);
}

/* ---- stderr ---- */

static void log_err_line(struct mx_child *c, struct mx_str line)
{
    ev_tstamp now = ev_now(c->loop);
    c->err_tokens += (now - c->err_at) * ERR_RATE;
    if (c->err_tokens > ERR_BURST)
        c->err_tokens = ERR_BURST;
    c->err_at = now;
    if (c->err_tokens < 1.0) {
        c->err_suppressed++;
        return;
    }
    c->err_tokens -= 1.0;
    if (c->err_suppressed) {
        mx_log_warn(SUBSYS, "[%s] %lu stderr lines not logged (more than %.0f a second)", c->name,
                    c->err_suppressed, ERR_RATE);
        c->err_suppressed = 0;
    }
    /* The log masks secrets and escapes control bytes (log.h); a NUL
     * ends the line there. */
    size_t n = line.len < ERR_LINE_MAX ? line.len : ERR_LINE_MAX;
    if (n == 0)
        return;
    mx_log_info(SUBSYS, "[%s] %.*s", c->name, (int)n, line.p);
}

static void drain_err_lines(struct mx_child *c)
{
    struct mx_str line;
    while (mx_linebuf_next(&c->err_lb, &line))
        log_err_line(c, line);
    uint64_t dropped = mx_linebuf_take_dropped(&c->err_lb);
    if (dropped)
        mx_log_warn(SUBSYS, "[%s] %llu stderr lines over %u bytes not logged", c->name,
                    (unsigned long long)dropped, ERR_LINE_MAX);
}

static void err_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_child *c = mx_container_of(w, struct mx_child, err_w);
    char chunk[8192];
    (void)revents;
    for (int i = 0; i < READS_PER_WAKE; i++) {
        ssize_t n = read(c->err_fd, chunk, sizeof(chunk));
        if (n > 0) {
            mx_linebuf_feed(&c->err_lb, chunk, (size_t)n);
            drain_err_lines(c);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        struct mx_str line;
        if (mx_linebuf_finish(&c->err_lb, &line))
            log_err_line(c, line);
        close_fd(loop, &c->err_w, &c->err_fd);
        return;
    }
}

/* ---- stdout ---- */

/* The exit is reported once the process is reaped and its output handed
 * out (or given up on). */
static void report_exit(struct mx_child *c)
{
    if (c->state != CS_RUNNING || !c->reaped || !c->out_done)
        return;
    c->state = CS_EXITED;
    ev_timer_stop(c->loop, &c->timer);
    ev_idle_stop(c->loop, &c->kick);
    close_fd(c->loop, &c->out_w, &c->out_fd);
    c->cbs.on_exit(c, c->status, c->data);
}

static void deliver(struct mx_child *c, struct mx_str line)
{
    if (c->cbs.on_line(c, line, c->data) == MX_EAGAIN && c->state == CS_RUNNING)
        mx_child_pause(c);
}

/* Hand out held lines until paused, closed or none left (at most
 * LINES_PER_TURN; the idle watcher continues). Returns true when all were. */
static bool hand_out(struct mx_child *c)
{
    struct mx_str line;
    uint64_t dropped = mx_linebuf_take_dropped(&c->out_lb);
    if (dropped)
        mx_log_warn(SUBSYS, "[%s] %llu stdout lines over %zu bytes dropped", c->name,
                    (unsigned long long)dropped, c->max_line);
    for (int i = 0; i < LINES_PER_TURN; i++) {
        if (c->state != CS_RUNNING || c->paused)
            return false;
        if (!mx_linebuf_next(&c->out_lb, &line)) {
            if (!c->out_eof)
                return true;
            c->out_done = true;
            if (mx_linebuf_finish(&c->out_lb, &line))
                deliver(c, line);
            return true;
        }
        deliver(c, line);
    }
    return false;
}

static void out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_child *c = mx_container_of(w, struct mx_child, out_w);
    static char chunk[READ_CHUNK]; /* fed to the line buffer before any callback */
    (void)revents;
    if (c->state == CS_CLOSING) {
        /* read to the end and drop: a process writing to a closed pipe
         * dies of EPIPE instead of ending cleanly */
        ssize_t n = read(c->out_fd, chunk, READ_CHUNK);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            close_fd(loop, &c->out_w, &c->out_fd);
        return;
    }
    for (int i = 0; i < READS_PER_WAKE && c->state == CS_RUNNING && !c->paused; i++) {
        ssize_t n = read(c->out_fd, chunk, READ_CHUNK);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0) {
            c->out_eof = true;
            close_fd(loop, &c->out_w, &c->out_fd);
            if (hand_out(c))
                report_exit(c);
            else if (c->state == CS_RUNNING && !c->paused)
                ev_idle_start(loop, &c->kick);
            break;
        }
        mx_linebuf_feed(&c->out_lb, chunk, (size_t)n);
        if (!hand_out(c)) {
            if (c->state == CS_RUNNING && !c->paused)
                ev_idle_start(loop, &c->kick); /* more lines than one turn's share */
            if (c->out_fd >= 0)
                ev_io_stop(loop, &c->out_w);
            break;
        }
    }
}

static void kick_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    struct mx_child *c = mx_container_of(w, struct mx_child, kick);
    (void)revents;
    ev_idle_stop(loop, w);
    if (c->state != CS_RUNNING || c->paused)
        return;
    if (!hand_out(c)) {
        if (c->state == CS_RUNNING && !c->paused)
            ev_idle_start(loop, w);
        return;
    }
    if (c->out_fd >= 0)
        ev_io_start(loop, &c->out_w);
    else
        report_exit(c);
}

void mx_child_pause(struct mx_child *c)
{
    if (c == NULL || c->paused)
        return;
    c->paused = true;
    if (c->out_fd >= 0)
        ev_io_stop(c->loop, &c->out_w);
}

void mx_child_resume(struct mx_child *c)
{
    if (c == NULL || !c->paused || c->state != CS_RUNNING)
        return;
    c->paused = false;
    ev_idle_start(c->loop, &c->kick);
}

/* ---- stdin ---- */

/*
 * Writes the queue to the child's stdin until it is empty or the pipe is
 * full. Returns 0 (all written), MX_EAGAIN (the rest waits for POLLOUT) or
 * MX_ECLOSED (the pipe failed: the queue is dropped and the pipe closed).
 */
static int flush_in(struct mx_child *c)
{
    while (mx_buf_len(&c->in_q)) {
        ssize_t n = write(c->in_fd, mx_buf_data(&c->in_q), mx_buf_len(&c->in_q));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return MX_EAGAIN;
        if (n < 0) {
            /* EPIPE: it closed its stdin; what follows is its exit */
            mx_log_debug(SUBSYS, "[%s] stdin: %s", c->name, strerror(errno));
            mx_buf_reset(&c->in_q);
            close_fd(c->loop, &c->in_w, &c->in_fd);
            return MX_ECLOSED;
        }
        mx_buf_consume(&c->in_q, (size_t)n);
    }
    return 0;
}

static void in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct mx_child *c = mx_container_of(w, struct mx_child, in_w);
    (void)revents;
    if (flush_in(c) != 0)
        return;
    ev_io_stop(loop, w);
    if (c->in_blocked && c->state == CS_RUNNING) {
        c->in_blocked = false;
        if (c->cbs.on_drain)
            c->cbs.on_drain(c, c->data);
    }
}

int mx_child_write(struct mx_child *c, const char *p, size_t len)
{
    if (c == NULL || c->state != CS_RUNNING || c->in_fd < 0)
        return MX_ECLOSED;
    if (len + 1 > c->in_q.cap - mx_buf_len(&c->in_q))
        return MX_ELIMIT;
    bool was_empty = mx_buf_len(&c->in_q) == 0;
    if (mx_buf_append(&c->in_q, p, len) != 0 || mx_buf_append(&c->in_q, "\n", 1) != 0)
        return MX_ELIMIT; /* not reached: checked above */
    if (!was_empty)
        return 0;
    /* try at once; what the pipe does not take waits for POLLOUT */
    int rc = flush_in(c);
    if (rc == MX_ECLOSED)
        return rc;
    if (rc == MX_EAGAIN) {
        c->in_blocked = true;
        ev_io_start(c->loop, &c->in_w);
    }
    return 0;
}

/* ---- process ---- */

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
    struct mx_child *c = mx_container_of(w, struct mx_child, child_w);
    (void)revents;
    ev_child_stop(loop, w);
    c->reaped = true;
    c->status = w->rstatus;
    c->exited_at = ev_now(loop);
    if (c->state == CS_CLOSING) {
        maybe_free(c);
        return;
    }
    /* what it wrote before exiting may still be in the pipe */
    close_fd(loop, &c->in_w, &c->in_fd);
    if (c->out_done) {
        report_exit(c);
        return;
    }
    ev_timer_set(&c->timer, EXIT_FLUSH_S, 0.0);
    ev_timer_start(loop, &c->timer);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_child *c = mx_container_of(w, struct mx_child, timer);
    (void)loop;
    (void)revents;
    if (c->state == CS_RUNNING) {
        if (c->paused && ev_now(loop) - c->exited_at < EXIT_HOLD_S) {
            /* the owner will take the rest of its output: wait for it */
            ev_timer_set(w, EXIT_FLUSH_S, 0.0);
            ev_timer_start(loop, w);
            return;
        }
        /* exited, but something of its group holds stdout open, or the
         * owner paused reading too long: what is left of its output goes */
        c->out_done = true;
        report_exit(c);
        return;
    }
    if (c->state != CS_CLOSING)
        return;
    if (!c->term_sent) {
        c->term_sent = true;
        signal_group(c, SIGTERM);
        ev_timer_set(w, KILL_AFTER_S, 0.0);
        ev_timer_start(loop, w);
        return;
    }
    if (!c->kill_sent) {
        c->kill_sent = true;
        mx_log_warn(SUBSYS, "[%s] did not end within %.1f s of SIGTERM; sending SIGKILL", c->name,
                    KILL_AFTER_S);
        signal_group(c, SIGKILL);
    }
    maybe_free(c);
}

void mx_child_close(struct mx_child *c)
{
    if (c == NULL || c->state == CS_CLOSING)
        return;
    c->state = CS_CLOSING;
    ev_idle_stop(c->loop, &c->kick);
    ev_timer_stop(c->loop, &c->timer);
    close_fd(c->loop, &c->in_w, &c->in_fd);
    mx_linebuf_clear(&c->out_lb);
    if (c->out_fd >= 0)
        ev_io_start(c->loop, &c->out_w); /* drained and dropped from now on */
    if (c->err_suppressed)
        mx_log_warn(SUBSYS, "[%s] %lu stderr lines not logged", c->name, c->err_suppressed);
    c->err_suppressed = 0;
    if (c->reaped) {
        maybe_free(c);
        return;
    }
    /* MCP 2025-06-18, stdio shutdown: close its input, wait, then SIGTERM,
     * then SIGKILL */
    ev_timer_set(&c->timer, TERM_AFTER_S, 0.0);
    ev_timer_start(c->loop, &c->timer);
}

static int spawn_err(int rc)
{
    switch (rc) {
    case ENOENT:
    case ENOTDIR:
        return MX_ENOTFOUND;
    case EACCES:
    case EPERM:
        return MX_EPERM;
    default:
        return MX_EIO;
    }
}

int mx_child_start(struct ev_loop *loop, const struct mx_child_opts *o,
                   const struct mx_child_cbs *cbs, void *data, struct mx_child **out, char *why,
                   size_t why_cap)
{
    int in[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
    int rc;
    *out = NULL;
    if (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0') {
        snprintf(why, why_cap, "no command");
        return MX_ENOTFOUND;
    }
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        snprintf(why, why_cap, "cannot make pipes: %s", strerror(errno));
        rc = MX_EIO;
        goto fail;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    if (o->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
    /* 0, 1 and 2 only: whatever mcplex holds or inherited without
     * close-on-exec stays behind */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    /* its own process group, so closing ends it and all it started; signals
     * as a fresh process has them (mcplex ignores SIGPIPE) */
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    static char *const no_env[] = {NULL};
    int err = posix_spawnp(&pid, o->argv[0], &fa, &attr, o->argv, o->envp ? o->envp : no_env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (err != 0) {
        snprintf(why, why_cap, "cannot run %s%s%s: %s", o->argv[0], o->cwd ? " in " : "",
                 o->cwd ? o->cwd : "", strerror(err));
        rc = spawn_err(err);
        goto fail;
    }
    close(in[0]);
    close(outp[1]);
    close(errp[1]);
    set_nonblock(in[1]);
    set_nonblock(outp[0]);
    set_nonblock(errp[0]);

    struct mx_child *c = mx_xcalloc(1, sizeof(*c));
    c->loop = loop;
    c->name = mx_xstrdup(o->name ? o->name : "?");
    c->cbs = *cbs;
    c->data = data;
    c->pid = pid;
    c->in_fd = in[1];
    c->out_fd = outp[0];
    c->err_fd = errp[0];
    c->max_line = o->max_line;
    c->err_tokens = ERR_BURST;
    c->err_at = ev_now(loop);
    mx_buf_init(&c->in_q, o->in_cap);
    mx_linebuf_init(&c->out_lb, o->max_line);
    mx_linebuf_init(&c->err_lb, ERR_LINE_MAX);
    ev_io_init(&c->in_w, in_cb, c->in_fd, EV_WRITE);
    ev_io_init(&c->out_w, out_cb, c->out_fd, EV_READ);
    ev_io_init(&c->err_w, err_cb, c->err_fd, EV_READ);
    ev_init(&c->timer, timer_cb);
    ev_idle_init(&c->kick, kick_cb);
    ev_child_init(&c->child_w, child_cb, pid, 0);
    ev_child_start(loop, &c->child_w);
    ev_io_start(loop, &c->out_w);
    ev_io_start(loop, &c->err_w);
    c->all_next = all_head;
    if (all_head)
        all_head->all_prev = c;
    all_head = c;
    live_cnt++;
    *out = c;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    return rc;
}

/* ---- shutdown ---- */

static void drain_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    for (struct mx_child *c = all_head; c; c = c->all_next) {
        if (!c->kill_sent) {
            mx_log_warn(SUBSYS, "[%s] still running at exit; sending SIGKILL", c->name);
            c->kill_sent = true;
            signal_group(c, SIGKILL);
        }
    }
    ev_break(loop, EVBREAK_ALL);
}

void mx_child_shutdown(struct ev_loop *loop, double limit_s)
{
    for (struct mx_child *c = all_head; c; c = c->all_next)
        mx_child_close(c);
    if (all_head == NULL && reap_head == NULL)
        return;
    draining = true;
    ev_timer_init(&drain_timer, drain_timer_cb, limit_s, 0.0);
    ev_timer_start(loop, &drain_timer);
    ev_run(loop, 0);
    ev_timer_stop(loop, &drain_timer);
    draining = false;
    /* what is left was sent SIGKILL; free what was queued */
    while (reap_head) {
        struct mx_child *c = reap_head;
        reap_head = c->reap_next;
        child_free(c);
    }
    if (reaper_loop)
        ev_prepare_stop(reaper_loop, &reaper);
}
