/* SPDX-License-Identifier: MIT */
/*
 * The status page: GET / and /status (HTML rendered on the server, so it
 * reads without JavaScript), its script and style at their own paths (the
 * CSP is default-src 'self': no inline script), /status/state (the same
 * facts as JSON), the live feed /status/events (SSE), and the login of a
 * browser when the gateway has a client token: POST /status/code (the
 * token only) gives a one-time code, GET /status/login?code=... turns it
 * into a cookie for the page's paths (net/guard.c decides where it
 * counts). Codes and cookies are random, kept in memory only, and expire.
 *
 * Nothing here costs a call anything while no one watches: a finished
 * call is copied into the ring of the last ones (callring.h); it is
 * formatted and sent only to open feeds.
 */
#ifndef MX_STATUSPAGE_H
#define MX_STATUSPAGE_H
#include <stdbool.h>
#include <stddef.h>

#include "call.h"
#include "req.h"
#include "upstream.h"

#include <time.h>

#include <ev.h>
#include <jansson.h>

struct mx_statuspage;

#define MX_STATUS_CODE_TTL_S   60.0          /* a login code lives this long, once */
#define MX_STATUS_COOKIE_TTL_S (12 * 3600.0) /* a login cookie */
#define MX_STATUS_COOKIE_NAME  "mcplex_status"
#define MX_STATUS_MAX_FEEDS    16  /* open /status/events at once */
#define MX_STATUS_TICK_S       1.0 /* a fresh state on the feed this often, while watched */

#define MX_STATUS_SLOTS 256 /* upstream slots whose wakes are kept (the gateway's most) */

/* What the page shows comes from its owner (the gateway, health.c). */
struct mx_statuspage_src {
    struct ev_loop *loop;
    bool tls; /* the listener serves TLS: the login cookie is Secure */
    /* A new object: {"version", "uptime_s", "upstreams": [...], "renamed",
     * "inflight", "refused", "sessions": {"legacy"}}; never a secret. */
    json_t *(*state)(void *data);
    void *data;
};

/* A new page; |src| is copied. */
struct mx_statuspage *mx_statuspage_new(const struct mx_statuspage_src *src);
/* Ends every open feed; accepts NULL. */
void mx_statuspage_free(struct mx_statuspage *sp);
/* Whether |req| carries a live login cookie of this page (for the guard's
 * page_login; constant-time compare). */
bool mx_statuspage_logged_in(struct mx_statuspage *sp, const struct mx_req *req);
/* Answer |req|, whose path is one of the page's (mx_guard_is_page_path),
 * after the guard let it in. */
void mx_statuspage_serve(struct mx_statuspage *sp, struct mx_req *req);
/* A client request ended (the front's done hook): kept in the ring, and
 * sent to open feeds. |outcome| is the metrics' word for it. */
void mx_statuspage_call(struct mx_statuspage *sp, const struct mx_call_report *r,
                        const char *outcome, double now);
/* Upstream |u| began (|start|) or ended a wake that took |duration_s|. */
void mx_statuspage_wake(struct mx_statuspage *sp, struct mx_upstream *u, bool start,
                        double duration_s);
/* When upstream slot |idx| last began a wake (0: never) and how long it
 * took (< 0: still running or none). */
void mx_statuspage_wake_last(const struct mx_statuspage *sp, size_t idx, time_t *at,
                             double *duration_s);
/* Open feeds (for tests and /health). */
size_t mx_statuspage_feed_cnt(const struct mx_statuspage *sp);

/* The embedded assets (generated from proxy/ops/status/ at build time). */
struct mx_status_asset {
    const char *name; /* file name: "page.html", "status.js", ... */
    const char *type; /* Content-Type */
    const unsigned char *data;
    size_t len;
};
extern const struct mx_status_asset mx_status_assets[];
extern const size_t mx_status_asset_cnt;
/* The asset called |name|, or NULL. */
const struct mx_status_asset *mx_status_asset(const char *name);
#endif
