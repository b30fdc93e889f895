/* SPDX-License-Identifier: MIT */
/*
 * The wake hook of one upstream: `cmd:` runs a command (no shell, argv split
 * on spaces, an environment with nothing but PATH, its own process group,
 * killed at the timeout); `url:` sends a POST with the server's own
 * credential. Either way the caller hears back exactly once.
 */
#ifndef MX_WAKE_H
#define MX_WAKE_H

#include <ev.h>

#include "model.h"
#include "uclient.h"

struct mx_wake_hook;

/* |err| 0: the hook ran and reported success; otherwise why not. */
typedef void (*mx_wake_done_cb)(int err, void *data);

/*
 * Run |cfg|'s wake hook; a `url:` hook sends |secret| (the upstream's
 * current credential, mx_upstream_secret()). Returns 0 and |*out| (valid
 * until the callback returns or mx_wake_hook_cancel()), MX_ENOTFOUND when
 * the server has no hook or its program does not exist, or MX_EINVAL /
 * MX_EIO (then the callback is never called).
 */
int mx_wake_hook_run(struct ev_loop *loop, struct mx_uclient *uc, const struct mx_server_cfg *cfg,
                     const struct mx_secret *secret, long timeout_ms, mx_wake_done_cb cb,
                     void *data, struct mx_wake_hook **out);

/* Stop waiting (a running command is killed); no callback afterwards. */
void mx_wake_hook_cancel(struct mx_wake_hook *h);

#endif
