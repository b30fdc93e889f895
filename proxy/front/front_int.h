/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the views of the front: mcp.c (the endpoints and the
 * 2025 sessions), mcp_2026.c (MCP 2026-07-28 stateless requests) and
 * mcp_up.c (the upstream side: catalogues, refreshes, the list waits, the
 * merged views, what upstreams send outside any answer). Each view sees
 * the others only through what is declared here, so no view includes
 * another's private header. Not for other modules.
 */
#ifndef MX_FRONT_INT_H
#define MX_FRONT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "aggregate.h"
#include "call.h"
#include "cursor.h"
#include "idmap.h"
#include "model.h"
#include "session.h"
#include "upsess.h"
#include "upstream.h"
#include "uriroute.h"

#define SUBSYS_MCP "mcp"

/* Lists an upstream may hold, as bits of enum mx_agg_kind. */
#define KIND_BIT(k)   (1u << (k))
#define KINDS_ALL     0xfu
#define MAX_PAGES     100   /* pages fetched from one upstream for one list */
#define MAX_ITEMS     10000 /* items kept from one upstream for one list */
#define RETRY_MIN_S   5.0   /* a failed upstream is tried again by lists after this */
#define RETRY_MAX_S   60.0
#define CURSOR_SCOPED 0x10 /* in a cursor's kind: a list of /mcp/<server> */

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
    struct mx_call_via v; /* .s, and .key: never 0 once in use, kept across
                           * re-initializations (the id tables name it) */
    struct mx_mcpup *u;
    struct mx_session *owner; /* per-client sessions; NULL for the shared one */
};

/* Someone waiting for an upstream's catalogue refresh. */
struct upwait {
    struct upwait *next;
    void (*cb)(struct upwait *w, struct mx_mcpup *u);
    /* done once the upstream answered initialize; its lists may still
     * be on their way */
    bool init_only;
};

struct upwaits;

struct upwait_slot {
    struct upwait w;
    struct upwaits *ws;
    bool active;
};

/* A wait for the refreshes of several upstreams: one slot per upstream
 * slot at the start (reloads add slots). */
struct upwaits {
    struct upwait_slot *v;
    size_t cnt;
    size_t waiting;                 /* refreshes not ended yet */
    bool starting;                  /* still adding: |cb| is held back */
    void (*cb)(struct upwaits *ws); /* after the start, each time one ends */
};

struct refresh; /* mcp_up.c */
struct mcp_wait;

struct mx_mcpup {
    struct mx_mcp *m;
    size_t idx;
    struct mx_upstream *up;
    const struct mx_server_cfg *cfg;
    struct mx_upsess_env env;
    struct upctx shared; /* .v.s: the shared session (session = "shared") */
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
    ev_timer retry;      /* unreachable, no wake hook: tried again after retry_s */
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

/* A resource a 2025 session is subscribed to (mx_session.owner's). */
struct sub {
    struct sub *next;
    size_t up;
    char *uri;
};

/* Per 2025 client session (mx_session.owner). */
struct sessx {
    struct mx_mcp *m;
    struct upctx **pc; /* per-client upstream sessions by upstream slot, made on first use */
    size_t pc_cnt;
    struct sub *subs;
    /* /mcp/<server>: the one upstream this session sees, and the list
     * generations it was last told about; NULL at /mcp */
    struct mx_mcpup *scope;
    uint32_t seen[MX_AGG_KIND_CNT];
    /* at /mcp: the merged views (view signatures) it was last answered
     * with, by initialize or a list: list_changed only when they moved */
    uint64_t told[MX_AGG_KIND_CNT];
};

struct mx_mcp {
    struct ev_loop *loop;
    const struct mx_config *cfg;
    struct mx_uclient *uc;
    struct mx_callhub *hub;
    const struct mx_call_upops *ops; /* the hub's */
    struct mx_session_table *sessions;
    struct mx_idmap *ids;  /* the hub's */
    struct mx_mcpup **ups; /* one per gateway upstream slot, same index */
    size_t up_cnt;
    uint8_t cursor_key[MX_CURSOR_KEY_LEN];
    uint8_t task_key[MX_CURSOR_KEY_LEN];
    uint64_t internal_id; /* ids of mcplex's own upstream requests */
    uint64_t ctx_keys;    /* the last upctx key handed out */

    struct mx_agg_view *views[MX_AGG_KIND_CNT];
    struct mx_names *names;              /* names that never move (names.h) */
    uint64_t noted_rev[MX_AGG_KIND_CNT]; /* views_rev + 1 whose names are pinned */
    struct mx_uriroute *uris;
    bool views_dirty;
    uint64_t views_rev;                /* counts the rebuilds of the views */
    uint64_t sig_val[MX_AGG_KIND_CNT]; /* view_sig() as of views_rev sig_rev */
    uint64_t sig_rev[MX_AGG_KIND_CNT];
    /* list pages as sent, by kind, endpoint and cursor (mcp_list_page_text) */
    struct mcp_page *pages;
    size_t page_bytes;
    uint64_t seen_sig[MX_AGG_KIND_CNT]; /* what clients were last told about */
    bool sig_known;
    ev_timer announce;      /* coalesces list_changed announcements */
    struct mcp_wait *waits; /* requests waiting for lists (mcp_wait_new) */
    bool shutting_down;
    struct mcp_modern *modern;  /* MCP 2026-07-28 clients (mcp_2026.c) */
    struct mcp_taskbook *tasks; /* what was last heard of each task (tasks.h) */
};

/* ---- mcp_up.c: upstreams ---- */

void mcp_up_init(struct mx_mcp *m, struct mx_upstream *const *ups, size_t cnt);
void mcp_up_clear(struct mx_mcp *m);
/* Slot |idx| was retired: hidden from lists and routing. */
void mcp_up_retired(struct mx_mcp *m, size_t idx);

/* Session |sx| was answered with what it sees of |kind| now (-1: every
 * kind, at initialize): list_changed tells it only of what moved since. */
void mcp_session_told(struct mx_mcp *m, struct sessx *sx, int kind);

/* The client capabilities an upstream session for client session |owner|
 * (NULL: the shared one) declares. A new reference. */
json_t *mcp_client_caps(const struct mx_session *owner);
/* The upstream session |s| should use for |u|, opened if needed. */
struct upctx *mcp_up_session(struct mx_mcpup *u, struct mx_session *s);
/* The upctx of a call's via. */
struct upctx *mcp_ctx_of(struct mx_call_via *via);
/* Close the per-client upstream sessions of |s|. */
void mcp_up_session_closed(struct mx_session *s);
/* The per-client upstream context of |sx| for slot |idx|, or NULL. */
struct upctx *mcp_pc(struct sessx *sx, size_t idx);

/* Whether |u| needs a refresh for |kinds| before answering. */
bool mcp_up_needs(struct mx_mcpup *u, unsigned kinds, bool for_list);
/* Start (or join) a refresh of |u| through |via|; |w| (may be NULL) hears
 * when it ends. */
void mcp_up_refresh(struct mx_mcpup *u, struct upctx *via, unsigned kinds, struct upwait *w);
/* Whether |u| offers list |kind| (its initialize result says so). */
bool mcp_up_offers(const struct mx_mcpup *u, int kind);

/* Visible: its lists are shown to clients. */
bool mcp_up_visible(const struct mx_mcpup *u);
/* Note the outcome of a call: failures hide the upstream, successes show it. */
void mcp_up_note_ok(struct mx_mcpup *u);
void mcp_up_note_fail(struct mx_mcpup *u, const struct mx_upfail *f);

/* The merged view of |kind| and the URI router, rebuilt when stale. */
struct mx_agg_view *mcp_view(struct mx_mcp *m, enum mx_agg_kind kind);
struct mx_uriroute *mcp_uris(struct mx_mcp *m);
/* The JSON-RPC error for |uri| held by the several upstreams of |r|: one
 * message for every path, naming them in its text and data.candidates
 * (the error member, a new reference). */
json_t *mcp_uri_ambiguous(struct mx_mcp *m, const char *uri, const struct mx_uriroute_result *r);
/* Where |uri| goes: the one upstream that lists it or whose template
 * matches it (templates first with |as_template|, for a completion's
 * ref), or NULL with the candidates in |*r| (none, or several). */
struct mx_mcpup *mcp_uri_target(struct mx_mcp *m, const char *uri, bool as_template,
                                struct mx_uriroute_result *r);
/* The one upstream that serves resources at all, or NULL. */
struct mx_mcpup *mcp_uri_only(struct mx_mcp *m);
/* Refuse |uri| that |r| found nowhere (error |not_found|, with data.uri)
 * or at several upstreams (the error naming them), for every era. */
void mcp_uri_refuse(struct mx_mcp *m, struct mx_call *c, const char *uri,
                    const struct mx_uriroute_result *r, int not_found);
/* Catalogues changed: rebuild views lazily and announce list_changed. */
void mcp_changed(struct mx_mcp *m);
/* Announce pending changes now, to the sessions answered so far (before
 * answering one more, which sees the changes in its answer). */
void mcp_announce_now(struct mx_mcp *m);

/* A message from upstream |ctx| outside any answer, or a notification on a
 * call's stream that concerns everyone (list_changed, resources/updated). */
void mcp_up_unsolicited(struct upctx *ctx, uint64_t key, json_t *msg);
/* A notification |method| from |u| naming a request it was not sent
 * (|why|): counted in /metrics and /health, logged at debug level for the
 * 1st, 2nd, 4th, 8th ... drop of |u|. */
void mcp_up_dropped(struct mx_mcpup *u, const char *method, const char *why);

/* Session |s| changed its log level: tell the upstream sessions. */
void mcp_up_levels(struct mx_mcp *m, struct mx_session *s);
/* The most verbose level any 2025 session asked for, or -1. */
int mcp_min_log_level(struct mx_mcp *m);
/* An internal request id ("mcplex-<n>") for mcplex's own upstream requests. */
json_t *mcp_internal_id(struct mx_mcp *m);

/* The capabilities and instructions of the merged server (new references;
 * instructions NULL when no upstream has any). */
json_t *mcp_merged_caps(struct mx_mcp *m);
json_t *mcp_merged_instructions(struct mx_mcp *m);
/* What one upstream offers, of what mcplex serves for it (/mcp/<server>). */
json_t *mcp_scope_caps(const struct mx_mcpup *u);
/* One page of the merged |kind| list for |params| (its cursor), or of
 * |scope|'s own list when not NULL: a new result object, or NULL with
 * |*why| set when the cursor is refused. */
json_t *mcp_list_page(struct mx_mcp *m, enum mx_agg_kind kind, const json_t *params,
                      const struct mx_mcpup *scope, const char **why);
/* The same page as encoded JSON (borrowed: valid until the lists change or
 * the next call of this): from the page cache, where a page is encoded
 * once per state of the lists, so that a client listing again costs a
 * copy. Returns false with |*why| set when the cursor is refused. */
bool mcp_list_page_text(struct mx_mcp *m, enum mx_agg_kind kind, const json_t *params,
                        const struct mx_mcpup *scope, struct mx_str *out, const char **why);
/* /mcp/<server> when |u| cannot be shown (down, refusing its credential,
 * not answered within the wait; |kind| a list it lacks, -1: any): its
 * failure into |*f| and true. */
bool mcp_scope_unready(const struct mx_mcpup *u, int kind, struct mx_upfail *f);
/* How long /mcp/<server> waits for its upstream's catalogue. */
double mcp_scope_wait_s(const struct mx_mcpup *u);
/* A number that changes whenever |u|'s list |k| does (resources with their
 * templates): what a scoped client was last told about. */
uint32_t mcp_scope_gen(const struct mx_mcpup *u, int k);
/* Follow task |up_id| of 2026-07-28 upstream |u| on its shared session's
 * listen stream (|on|), or stop: its notifications/tasks come to
 * mcp_up_unsolicited. */
void mcp_up_task_watch(struct mx_mcpup *u, bool on, const char *up_id);
/* resources/subscribe or unsubscribe (|method|) of |uri| by mcplex itself
 * on |u|'s shared session, answer dropped. */
void mcp_up_subscribe(struct mx_mcpup *u, const char *method, const char *uri);
/* How many 2025 sessions other than |self| hold |uri| of |up| on its
 * shared session. */
size_t mcp_legacy_subscribers(struct mx_mcp *m, const struct mx_session *self, size_t up,
                              const char *uri);

/* ---- mcp_up.c: waits for lists ---- */

/* How a wait ended. */
enum mcp_wait_end {
    MCP_WAIT_READY = 0,    /* the lists came (or the name resolved), or the bound passed */
    MCP_WAIT_GONE = 1,     /* the client session closed */
    MCP_WAIT_STOPPING = 2, /* mcplex stops */
    MCP_WAIT_RETIRED = 3,  /* the endpoint's upstream left the config */
};

/* The end of a wait: answer |c| (its client request is attached), whose
 * message was |msg|; |what|, |scope| and |data| as given to mcp_wait_new(). */
typedef void (*mcp_wait_cb)(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                            struct mx_mcpup *scope, enum mcp_wait_end end, void *data);

/*
 * The one wait of a request for upstreams' lists (initialize, discover,
 * the lists, a routed request whose name no upstream holds yet): |c|
 * (held) with its message |msg| (kept) and, for /mcp/<server>, its |scope|.
 * Add the refreshes to wait for, then start it; |done| is called once,
 * with the client request still attached, unless the client went away
 * first (then nothing is called and the call ends).
 */
struct mcp_wait *mcp_wait_new(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                              struct mx_mcpup *scope, mcp_wait_cb done, void *data);
/* Start (or join) |u|'s refresh of |kinds| through |via| and wait for it. */
void mcp_wait_add(struct mcp_wait *w, struct mx_mcpup *u, struct upctx *via, unsigned kinds);
/* The same, waiting only until |u| answered initialize: the lists go on
 * being fetched for the requests that need them. */
void mcp_wait_add_init(struct mcp_wait *w, struct mx_mcpup *u, struct upctx *via, unsigned kinds);
/* End early once |name| of |kind| reaches an upstream (a routed request). */
void mcp_wait_until(struct mcp_wait *w, enum mx_agg_kind kind, const char *name);
/* Done adding: wait at most |bound_s|. With nothing to wait for, |done|
 * runs now. */
void mcp_wait_start(struct mcp_wait *w, double bound_s);
/* End with |end| the waits of calls owned by |owner| (with |any|: all), or
 * whose scope is |scope| (when not NULL). */
void mcp_wait_drop(struct mx_mcp *m, const void *owner, bool any, const struct mx_mcpup *scope,
                   enum mcp_wait_end end);

/* Answer |c| with -32602 for the tool or prompt |name| no upstream holds,
 * naming every failed upstream that could have held it and why it failed
 * (both eras: MCP 2025-06-18 and 2026-07-28, Tools). */
void mcp_unknown_name(struct mx_mcp *m, struct mx_call *c, enum mx_agg_kind kind, const char *name);
/*
 * A routed request (tools/call, prompts/get, resources/read,
 * completion/complete; every client path of /mcp) for lists still to come.
 * |msg| names |name|: a tool or prompt of |kind|, or with MX_AGG_RESOURCES
 * a resource URI, that no upstream holds now. When an upstream that could
 * hold it (one not known to lack the capability that never listed |kind|,
 * or, for a tool or prompt, whose alias prefixes |name|) has those lists
 * pending or is waking, the request waits: their refreshes start (through
 * |owner|'s upstream sessions; NULL: the shared ones) and true is
 * returned; |retry| then routes or refuses it as soon as |name| resolves,
 * or none of them is pending any more, or their longest wake_timeout (each
 * within its request_timeout) has passed. Returns false, touching nothing,
 * when no such upstream is pending: refuse at once.
 */
bool mcp_park(struct mx_mcp *m, struct mx_session *owner, struct mx_call *c, json_t *msg,
              enum mx_agg_kind kind, const char *name, mcp_wait_cb retry, void *data);

/* ---- mcp.c: 2025 sessions ---- */

/* A request from upstream |ctx| (sampling, elicitation, roots) on behalf
 * of |call| (may be NULL): answer it or pass it to the client. */
void mcp_s2c_request(struct upctx *ctx, uint64_t key, json_t *msg, struct mx_call *call);
/* Send |msg| to session |s|: on the GET stream (queued while absent). */
void mcp_push(struct mx_session *s, const json_t *msg);

/* ---- mcp_2026.c: MCP 2026-07-28 (stateless) requests ---- */

struct mcp_modern;

/* State for the modern clients of |m|; freed with mcp_modern_free(), which
 * ends their calls and listen streams (accepts NULL). */
struct mcp_modern *mcp_modern_new(struct mx_mcp *m);
void mcp_modern_free(struct mcp_modern *mm);

/* Whether the parsed POST |msg| of |req| belongs to the stateless revision. */
bool mcp_modern_claims(const struct mx_req *req, const json_t *msg);
/* A GET or DELETE from a modern client (no session, modern version
 * header): answered with 405, returns true. */
bool mcp_modern_refuses(struct mx_mcp *m, struct mx_call *c);
/* Serve the modern POST |msg| (borrowed) of |c|, at /mcp (|scope| NULL) or
 * at /mcp/<server> of |scope|. */
void mcp_modern_post(struct mx_mcp *m, struct mx_call *c, json_t *msg, struct mx_mcpup *scope);

/* The merged lists changed (|changed| per enum mx_agg_kind, resources
 * including templates): tell the listen streams that asked for it. */
void mcp_modern_announce(struct mx_mcp *m, const bool *changed);
/* An upstream's notifications/resources/updated (its shared session, upstream
 * index |up|): to the listen streams that follow that resource. */
void mcp_modern_resource_updated(struct mx_mcp *m, size_t up, json_t *msg);
/* How many holders of |uri| of upstream |up| the modern clients count as
 * (0 or 1): the shared session stays subscribed while it is not 0. */
size_t mcp_modern_subscribed(struct mx_mcp *m, size_t up, const char *uri);
/* Upstream slot |idx| was retired at a reload: its scoped listen streams
 * end (with the final result). */
void mcp_modern_retired(struct mx_mcp *m, size_t idx);
/* What every 2026-07-28 result carries (resultType, serverInfo), added to
 * a result mcplex makes itself. */
void mcp_modern_finish(json_t *result);
/* A task's status (a SEP-2663 Task with the sealed taskId, borrowed) for
 * the listen streams that follow it (their taskIds). */
void mcp_modern_task_status(struct mx_mcp *m, const json_t *task);

#endif
