/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by mcp.c (the client side of /mcp: HTTP, dispatch, calls)
 * and mcp_up.c (the upstream side: catalogues, fan-out, merged views,
 * notifications from upstreams). Not for other modules.
 */
#ifndef MX_MCP_INT_H
#define MX_MCP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "aggregate.h"
#include "cursor.h"
#include "gateway.h"
#include "idmap.h"
#include "mcp.h"
#include "mcp_2026.h"
#include "session.h"
#include "upsess.h"
#include "uriroute.h"

#define SUBSYS_MCP "mcp"

/* Lists an upstream may hold, as bits of enum mx_agg_kind. */
#define KIND_BIT(k) (1u << (k))
#define KINDS_ALL   0xfu
#define MAX_PAGES   100   /* pages fetched from one upstream for one list */
#define MAX_ITEMS   10000 /* items kept from one upstream for one list */
#define RETRY_MIN_S 5.0   /* a failed upstream is tried again by lists after this */
#define RETRY_MAX_S 60.0

enum mcpup_state {
    UPS_UNKNOWN = 0,    /* never contacted */
    UPS_CONNECTING = 1, /* opening its session, first contact */
    UPS_READY = 2,      /* initialized; lists may be loading */
    UPS_FAILED = 3,     /* the last attempt failed: hidden from lists */
};

struct mx_mcp;
struct mx_mcpup;

/* Where an upstream session's unsolicited messages go. */
struct upctx {
    struct mx_mcpup *u;
    struct mx_session *owner; /* per-client sessions; NULL for the shared one */
    struct mx_upsess *s;
    uint64_t key; /* never 0 once in use, kept across re-initializations: the
                   * upsess of the calls sent over it (idmap.h) */
};

/* Someone waiting for an upstream's catalogue refresh. */
struct upwait {
    struct upwait *next;
    void (*cb)(struct upwait *w, struct mx_mcpup *u);
};

struct upwaits;

struct upwait_slot {
    struct upwait w;
    struct upwaits *ws;
    bool active;
};

/* A request's wait for the refreshes of several upstreams (initialize and
 * lists of both revisions, parked routes): one slot per upstream slot at
 * the start (reloads add slots). */
struct upwaits {
    struct upwait_slot *v;
    size_t cnt;
    size_t waiting;                 /* refreshes not ended yet */
    bool starting;                  /* still adding: |cb| is held back */
    void (*cb)(struct upwaits *ws); /* after the start, each time one ends */
};

struct refresh; /* mcp_up.c */
struct park;    /* mcp_up.c */

struct mx_mcpup {
    struct mx_mcp *m;
    size_t idx;
    struct mx_upstream *up;
    const struct mx_server_cfg *cfg;
    struct mx_upsess_env env;
    struct upctx shared; /* .s: the shared session (session = "shared") */
    enum mcpup_state state;
    struct mx_upfail fail; /* why it is FAILED */
    ev_tstamp failed_at;
    double retry_s;
    json_t *init;                   /* last initialize result */
    json_t *lists[MX_AGG_KIND_CNT]; /* NULL: not fetched */
    uint32_t gen[MX_AGG_KIND_CNT];  /* bumped when a list's content changes */
    bool stale[MX_AGG_KIND_CNT];    /* a list_changed came */
    struct refresh *refresh;        /* in progress */
    struct upwait *waiters;
    bool from_catalogue; /* init and lists came from disk, not this run */
    ev_timer keepalive;  /* keepalive > 0: ping the upstream when idle that long */
    /* freshness hint (MCP 2026-07-28 ttlMs) of each list, 0 when none, and
     * when it was received */
    int64_t ttl_ms[MX_AGG_KIND_CNT];
    ev_tstamp ttl_at[MX_AGG_KIND_CNT];
    bool ttl_given[MX_AGG_KIND_CNT]; /* the upstream gave one: the list expires then */
    uint64_t dropped;                /* notifications naming a request not sent to it */
    /* max_list_bytes: what each list costs (mx_catalogue_list_bytes), and
     * why a list was cut to fit ("" when it was not) */
    size_t list_bytes[MX_AGG_KIND_CNT];
    char cut[MX_AGG_KIND_CNT][160];
};

/* Per client session (mx_session.owner). */
struct sub {
    struct sub *next;
    size_t up;
    char *uri;
};

struct call;

struct sessx {
    struct mx_mcp *m;
    struct upctx **pc; /* per-client upstream sessions by upstream slot, made on first use */
    size_t pc_cnt;
    struct call *calls;
    struct sub *subs;
    struct pending *pendings; /* initialize and lists waiting for a fan-out */
};

struct mx_mcp {
    struct mx_gateway *gw;
    struct ev_loop *loop;
    const struct mx_config *cfg;
    struct mx_session_table *sessions;
    struct mx_idmap *ids;
    struct mx_mcpup **ups; /* one per gateway upstream slot, same index */
    size_t up_cnt;
    uint8_t cursor_key[MX_CURSOR_KEY_LEN];
    uint64_t internal_id; /* ids of mcplex's own upstream requests */
    uint64_t ctx_keys;    /* the last upctx key handed out */

    struct mx_agg_view *views[MX_AGG_KIND_CNT];
    struct mx_uriroute *uris;
    bool views_dirty;
    uint64_t seen_sig[MX_AGG_KIND_CNT]; /* what clients were last told about */
    bool sig_known;
    ev_timer announce;  /* coalesces list_changed announcements */
    struct park *parks; /* routed requests waiting for lists (mcp_park) */
    bool shutting_down;
    struct mcp_modern *modern; /* MCP 2026-07-28 clients (mcp_2026.c) */
};

/* ---- mcp_up.c ---- */

void mcp_up_init(struct mx_mcp *m);
void mcp_up_clear(struct mx_mcp *m);

/* The upstream session |s| should use for |u|, opened if needed. */
struct upctx *mcp_up_session(struct mx_mcpup *u, struct mx_session *s);
/* Close the per-client upstream sessions of |s|. */
void mcp_up_session_closed(struct mx_session *s);
/* The per-client upstream context of |sx| for slot |idx|, or NULL. */
struct upctx *mcp_pc(struct sessx *sx, size_t idx);

/* Whether |u| needs a refresh for |kinds| before answering. */
bool mcp_up_needs(struct mx_mcpup *u, unsigned kinds, bool for_list);
/* Start (or join) a refresh of |u| through |via|; |w| (may be NULL) hears
 * when it ends. */
void mcp_up_refresh(struct mx_mcpup *u, struct upctx *via, unsigned kinds, struct upwait *w);

/* Begin a wait over |m|'s upstreams; |cb| as in struct upwaits. */
void mcp_upwaits_init(struct upwaits *ws, struct mx_mcp *m, void (*cb)(struct upwaits *ws));
/* Start (or join) |u|'s refresh of |kinds| through |via| and wait for it. */
void mcp_upwaits_add(struct upwaits *ws, struct mx_mcpup *u, struct upctx *via, unsigned kinds);
/* Done adding: returns how many refreshes are still waited for (0: none,
 * and |cb| will not be called). */
size_t mcp_upwaits_started(struct upwaits *ws);
/* Stop waiting (|cb| is not called again) and free the slots. */
void mcp_upwaits_clear(struct upwaits *ws, struct mx_mcp *m);

/* Visible: its lists are shown to clients. */
bool mcp_up_visible(const struct mx_mcpup *u);
/* Note the outcome of a call: failures hide the upstream, successes show it. */
void mcp_up_note_ok(struct mx_mcpup *u);
void mcp_up_note_fail(struct mx_mcpup *u, const struct mx_upfail *f);

/* The merged view of |kind| and the URI router, rebuilt when stale. */
struct mx_agg_view *mcp_view(struct mx_mcp *m, enum mx_agg_kind kind);
struct mx_uriroute *mcp_uris(struct mx_mcp *m);
/* The JSON-RPC error for |uri| held by the several upstreams of |r|: one
 * message for every path, naming them in its text and data.candidates. */
json_t *mcp_uri_ambiguous(struct mx_mcp *m, const json_t *id, const char *uri,
                          const struct mx_uriroute_result *r);
/* Catalogues changed: rebuild views lazily and announce list_changed. */
void mcp_changed(struct mx_mcp *m);

/* Announce pending changes now, to the sessions answered so far (before
 * answering one more, which sees the changes in its answer). */
void mcp_announce_now(struct mx_mcp *m);

/* A message from upstream |u| outside any answer, or a notification on a
 * call's stream that concerns everyone (list_changed, resources/updated). */
void mcp_up_unsolicited(struct upctx *ctx, uint64_t key, json_t *msg);

/* A notification |method| from |u| naming a request it was not sent
 * (|why|): counted in /metrics and /health, logged at debug level for the
 * 1st, 2nd, 4th, 8th ... drop of |u|. */
void mcp_up_dropped(struct mx_mcpup *u, const char *method, const char *why);

/* A parked request handed back (|data| as given to mcp_park()). */
typedef void (*mcp_park_cb)(struct mx_mcp *m, struct mx_req *req, json_t *msg, void *data);

/*
 * The one wait of a routed request (tools/call, prompts/get, resources/read,
 * completion/complete; every client path of /mcp) for lists still to come.
 * |msg| (client request |req|) names |name|: a tool or prompt of |kind|, or
 * with MX_AGG_RESOURCES a resource URI, that no upstream holds now. When an
 * upstream that could hold it (one not known to lack the capability that
 * never listed |kind|, or, for a tool or prompt, whose alias prefixes
 * |name|) has those lists pending or is waking, the request is parked:
 * their refreshes start (through |owner|'s
 * upstream sessions; NULL: the shared ones) and true is returned. |retry|
 * is then called once, to route or refuse, as soon as |name| resolves, or
 * none of them is pending any more, or their longest wake_timeout (each
 * within its request_timeout) has passed; never when the client went away
 * first, or when mcp_park_drop() took the request. Returns false, touching
 * nothing, when no such upstream is pending: refuse at once.
 */
bool mcp_park(struct mx_mcp *m, struct mx_session *owner, struct mx_req *req, json_t *msg,
              enum mx_agg_kind kind, const char *name, mcp_park_cb retry, void *data);
/* Hand every request parked for |owner| (NULL: those of no session) to
 * |gone|, which answers it, and forget them. */
void mcp_park_drop(struct mx_mcp *m, const struct mx_session *owner, mcp_park_cb gone, void *data);

/* Session |s| changed its log level: tell the upstream sessions. */
void mcp_up_levels(struct mx_mcp *m, struct mx_session *s);

/* An internal request id ("mcplex-<n>") for mcplex's own upstream requests. */
json_t *mcp_internal_id(struct mx_mcp *m);

/* ---- mcp.c ---- */

/* A request from upstream |ctx| (sampling, elicitation, roots, ping) on
 * behalf of |call| (may be NULL): answer it or pass it to the client. */
void mcp_s2c_request(struct upctx *ctx, uint64_t key, json_t *msg, struct call *call);
/* Progress from upstream session |ctx|: to the call that owns the token,
 * if that call went over |ctx|; else dropped and counted. */
void mcp_progress(struct upctx *ctx, json_t *msg);
/* The log level index of "debug".."emergency", or -1. */
int mcp_log_level(const char *name);
/* Send |msg| to session |s|: on the GET stream (queued while absent). */
void mcp_push(struct mx_session *s, const json_t *msg);
/* The most verbose level any session asked for, or -1. */
int mcp_min_log_level(struct mx_mcp *m);
const char *mcp_log_level_name(int level);
/* The capabilities and instructions of the merged server (new references;
 * instructions NULL when no upstream has any). */
json_t *mcp_merged_caps(struct mx_mcp *m);
json_t *mcp_merged_instructions(struct mx_mcp *m);
/* One page of the merged |kind| list for |params| (its cursor): a new
 * result object, or NULL with |*why| set when the cursor is refused. */
json_t *mcp_list_page(struct mx_mcp *m, enum mx_agg_kind kind, const json_t *params,
                      const char **why);

#endif
