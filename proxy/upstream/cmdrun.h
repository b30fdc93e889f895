/* SPDX-License-Identifier: MIT */
/*
 * A helper command run on the loop: a wake hook's `cmd:`, a credential
 * refresh. No shell (split on spaces and tabs), its own process group,
 * stdin from /dev/null, no descriptor of mcplex (base/spawn.h); reaped by
 * ev_child (libev's default loop), its whole group killed at the timeout.
 * Its stdout is either /dev/null or captured through a non-blocking pipe
 * read by an ev_io watcher, up to a cap. Nothing blocks the loop.
 */
#ifndef MX_CMDRUN_H
#define MX_CMDRUN_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

#include "str.h"

struct mx_cmdrun;

struct mx_cmdrun_opts {
    const char *cmd;   /* "PROGRAM ARGS..." */
    const char *label; /* names it in log lines: "up:NAME wake command" */
    long timeout_ms;   /* > 0 */
    size_t out_cap;    /* 0: stdout to /dev/null; else bytes captured at most */
    bool inherit_env;  /* mcplex's environment; else PATH alone */
    bool keep_stderr;  /* its stderr joins mcplex's log; else /dev/null */
};

/*
 * The command ended. |err| 0: it exited with status 0 (and, when captured,
 * its stdout reached EOF); MX_EUPSTREAM: another status or a signal;
 * MX_ETIMEDOUT: killed at the timeout; MX_ELIMIT: it printed more than
 * out_cap (killed). |why| says so in a few words ("exited with status 1"),
 * never quoting the output. |out| is what it printed (empty unless
 * captured), borrowed: wiped and freed once the callback returns.
 */
typedef void (*mx_cmdrun_cb)(int err, const char *why, struct mx_str out, void *data);

/*
 * Start |o->cmd|. Returns 0 and |*out| (valid until the callback returns or
 * mx_cmdrun_cancel()), or MX_EINVAL (no command, too many arguments),
 * MX_ENOTFOUND (no such program) or MX_EIO (pipe or spawn failed), with a
 * sentence in |why| and a warning logged; the callback is then never
 * called. It is never called from inside this function.
 */
int mx_cmdrun_start(struct ev_loop *loop, const struct mx_cmdrun_opts *o, mx_cmdrun_cb cb,
                    void *data, struct mx_cmdrun **out, char *why, size_t why_cap);

/* Stop waiting: a running command's group is killed; no callback afterwards.
 * Accepts NULL. */
void mx_cmdrun_cancel(struct mx_cmdrun *r);

#endif
