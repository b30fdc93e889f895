/* SPDX-License-Identifier: MIT */
/*
 * A call to one upstream that rides through wake-on-use pauses. Same
 * callbacks as a plain mx_ureq (uclient.h), plus the policy of DESIGN.md
 * "Wake-on-use":
 *
 * - A call is retried only when it cannot have reached the server: the
 *   connection was refused or reset before any byte of an answer and before
 *   the request was fully sent (or the method is safe to repeat), or the
 *   upstream's front answered a `retry_on` status (default 502, 503, 504,
 *   423), which means the sandbox behind it did not run it. Anything else —
 *   a broken answer, a connection lost after the body went out — reaches
 *   the caller unchanged and is never re-sent.
 * - The first retryable failure puts the upstream in `waking`, runs its
 *   `wake` hook once, and makes this call the probe: it alone retries, with
 *   exponential backoff and jitter, until it gets through or `wake_timeout`
 *   passes. Calls that arrive meanwhile wait on the same wake and all go out
 *   when the probe gets an answer (one probe at a time, no thundering herd).
 * - At most `max_concurrency` calls are in flight per upstream (long-lived
 *   GET streams excluded); the rest queue in arrival order.
 * - idle_close: the upstream's connections are its own (a uclient pool).
 *   Once no call has been in flight for idle_close, the streams it holds
 *   open for the upstream's own messages (calls with on_idle) are closed
 *   and then every connection to it, so a sandbox sees nothing open and may
 *   pause; nothing is sent until the next call.
 */
#ifndef MX_UPCALL_H
#define MX_UPCALL_H

#include <ev.h>

#include "uclient.h"
#include "upstream.h"

struct mx_upcall;

struct mx_upcall_cbs {
    struct mx_ureq_cbs base; /* as for mx_ureq; on_done's err adds MX_ETIMEDOUT for a wake
                                that did not come within wake_timeout */
    /* Optional: the call is waiting for the upstream to wake (called once per
     * call, when it starts to wait). */
    void (*on_wait)(struct mx_upcall *c, void *data);
    /* Optional, and it marks the call as a stream held open for the
     * upstream's own messages (a GET stream, a listen stream): it is not
     * use of the upstream once its head came. At idle_close the call is
     * cancelled and on_idle is called in place of on_done (once); the
     * caller opens it again with its next call. */
    void (*on_idle)(void *data);
};

/*
 * Start a call to |up| through |uc|. |opts| is copied (header lines are wiped
 * when the call ends). Returns 0 and |*out|, or MX_EINVAL; callbacks never
 * run from inside this function.
 */
int mx_upcall_start(struct ev_loop *loop, struct mx_uclient *uc, struct mx_upstream *up,
                    const struct mx_ureq_opts *opts, const struct mx_upcall_cbs *cbs, void *data,
                    struct mx_upcall **out);

/* No callback after this; safe inside the call's own callbacks. */
void mx_upcall_cancel(struct mx_upcall *c);

/* Resume after on_data returned MX_EAGAIN. */
void mx_upcall_resume(struct mx_upcall *c);

/* Whether the call has been waiting for a wake. */
bool mx_upcall_waited(const struct mx_upcall *c);

#endif
