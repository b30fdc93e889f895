/* SPDX-License-Identifier: MIT */
/*
 * Credentials that expire. When an upstream refuses its credential (401 or
 * 403), the command of its `refresh` key, or else of its `cmd:` secret,
 * runs once more (cmdrun.h: asynchronous, bounded by the server's
 * wake_timeout or MX_REFRESH_TIMEOUT_MS, whichever is shorter) and what it
 * prints, by the rules of a `cmd:` secret (secret_ref.h), becomes the
 * upstream's credential (mx_upstream_secret). At most one runs per
 * upstream; upcall.c makes the calls that were refused wait for it and
 * go once more, or fail. Nothing here ever logs or keeps the output
 * elsewhere than in the upstream's struct mx_secret.
 */
#ifndef MX_REFRESH_H
#define MX_REFRESH_H

#include <ev.h>

#include "upstream.h"

#define MX_REFRESH_TIMEOUT_MS 10000

/* The command that renews |cfg|'s credential, "cmd:PROGRAM ARGS", or NULL
 * when it has none. */
const char *mx_refresh_ref(const struct mx_server_cfg *cfg);

/* The refresh of |up| ended; |up->refresh_ok| says whether a new credential
 * came (then it is mx_upstream_secret(up)), |up->refresh_why| why not. */
typedef void (*mx_refresh_done_cb)(struct mx_upstream *up);

/*
 * Run |up|'s refresh command (there must be one, and none in flight).
 * Returns 0: |up->refresh| is set and |done| is called once it ends. Else
 * the refresh ended at once (the command could not start): |up->refreshes|
 * counts it, |up->refresh_why| says why, |done| is never called; the
 * return value is cmdrun's error.
 */
int mx_refresh_start(struct ev_loop *loop, struct mx_upstream *up, mx_refresh_done_cb done);

/* Stop a refresh in flight (its command is killed), without the callback;
 * then wipe the refreshed credential. At shutdown and when |up| goes. */
void mx_refresh_clear(struct mx_upstream *up);

#endif
