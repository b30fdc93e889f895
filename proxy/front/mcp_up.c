/* SPDX-License-Identifier: MIT */
/*
 * The upstream side of the endpoints: each upstream's catalogue
 * (initialize result, tools, prompts, resources, templates), refreshed
 * through an upstream session when first needed and after a list_changed;
 * the one wait of a request for those refreshes (initialize, discover, the
 * lists, a routed request whose name is not known yet); the merged views
 * built from the catalogues and what a client sees of them (merged or, at
 * /mcp/<server>, one upstream's: capabilities, list pages, URI routes); the
 * list_changed notifications clients get when what they would see changes
 * (an upstream joins late, goes down, comes back, or changes a list); and
 * what upstreams send outside any answer. The fan-out seam is
 * mcp_up_refresh(): a catalogue saved on disk stands in for it without
 * touching the client side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "catalogue.h"
#include "err.h"
#include "front_int.h"
#include "log.h"
#include "mcp.h"
#include "names.h"
#include "rand.h"
#include "revision.h"
#include "rpc.h"
#include "tasks.h"
#include "up2026.h"

#define SUBSYS           SUBSYS_MCP
#define ANNOUNCE_DELAY_S 0.01 /* coalesce bursts of changes into one list_changed */

static void release_init_waiters(struct mx_mcpup *u);
static void pages_clear(struct mx_mcp *m);
static const char *const list_methods[MX_AGG_KIND_CNT] = {
    "tools/list", "prompts/list", "resources/list", "resources/templates/list"};
static const char *const cap_names[MX_AGG_KIND_CNT] = {"tools", "prompts", "resources",
                                                       "resources"};

struct refresh {
    struct mx_mcpup *u;
    struct upctx *via;
    unsigned kinds;
    struct mx_uprpc *rpc;
    int kind; /* being fetched, -1: connecting */
    json_t *acc;
    size_t acc_bytes; /* what |acc| costs against max_list_bytes */
    size_t pages;
};

static void refresh_step(struct refresh *r);

json_t *mcp_internal_id(struct mx_mcp *m)
{
    char id[32];
    snprintf(id, sizeof(id), "mcplex-%llu", (unsigned long long)++m->internal_id);
    return json_string(id);
}

/* ---- state ---- */

static const char *up_state_name(enum mcpup_state s)
{
    switch (s) {
    case UPS_UNKNOWN:
        return "unknown";
    case UPS_CONNECTING:
        return "connecting";
    case UPS_READY:
        return "ready";
    case UPS_FAILED:
        return "failed";
    }
    return "?";
}

/*
 * An HTTP upstream that took no connection and has no wake hook is tried
 * again in the background after retry_s (which doubles while it stays
 * down), so that it rejoins the lists, with list_changed, once it is back.
 * One with a wake hook is never: it may be asleep by choice, and only a
 * call wakes it.
 */
static void schedule_retry(struct mx_mcpup *u)
{
    if (u->cfg->wake || u->cfg->url == NULL || strcmp(u->fail.reason, "unreachable") != 0)
        return;
    ev_timer_stop(u->m->loop, &u->retry);
    ev_timer_set(&u->retry, u->retry_s, 0.0);
    ev_timer_start(u->m->loop, &u->retry);
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_mcpup *u = mx_container_of(w, struct mx_mcpup, retry);
    (void)loop;
    (void)revents;
    if (u->state != UPS_FAILED || u->up->retired || u->m->shutting_down || u->refresh)
        return;
    mcp_up_refresh(u, mcp_up_session(u, NULL), KINDS_ALL, NULL);
}

static void set_up_state(struct mx_mcpup *u, enum mcpup_state st)
{
    if (u->state == st)
        return;
    mx_log_debug(SUBSYS, "up:%s aggregate %s -> %s", u->cfg->name, up_state_name(u->state),
                 up_state_name(st));
    bool was_visible = mcp_up_visible(u);
    u->state = st;
    if (st == UPS_FAILED)
        schedule_retry(u);
    if (was_visible != mcp_up_visible(u))
        mcp_changed(u->m);
}

/* Whether the upstream refused its credential: it is there, so the tools
 * known of it stay listed (names never move) and a call to one says why. */
static bool refused(const struct mx_mcpup *u)
{
    return u->state == UPS_FAILED && u->fail.reason && strcmp(u->fail.reason, "auth-failed") == 0;
}

bool mcp_up_visible(const struct mx_mcpup *u)
{
    return (u->state == UPS_READY || refused(u)) && !u->up->retired;
}

void mcp_up_note_ok(struct mx_mcpup *u)
{
    u->retry_s = RETRY_MIN_S;
    if (u->state == UPS_FAILED || u->state == UPS_CONNECTING) {
        if (u->state == UPS_FAILED)
            mx_log_info(SUBSYS, "up:%s is back; its lists are shown again", u->cfg->name);
        set_up_state(u, UPS_READY);
    }
}

void mcp_up_note_fail(struct mx_mcpup *u, const struct mx_upfail *f)
{
    /* Only failures that say the upstream cannot serve anyone hide it: a
     * slow call or a broken answer is about that call. */
    if (strcmp(f->reason, "auth-failed") != 0 && strcmp(f->reason, "unreachable") != 0 &&
        strcmp(f->reason, "not-awake") != 0 && strcmp(f->reason, "gone") != 0)
        return;
    bool was_visible = mcp_up_visible(u);
    u->fail = *f;
    u->failed_at = ev_now(u->m->loop);
    if (u->state != UPS_FAILED) {
        mx_log_warn(SUBSYS, "%s; %s", f->message,
                    strcmp(f->reason, "auth-failed") == 0
                        ? "its known tools stay listed and a call to one says why"
                        : "its tools leave the merged lists");
        set_up_state(u, UPS_FAILED);
    } else {
        u->retry_s = u->retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : u->retry_s * 2;
        schedule_retry(u);
        if (was_visible != mcp_up_visible(u)) /* unreachable, now refusing, or back */
            mcp_changed(u->m);
    }
}

/* ---- upstream sessions ---- */

static void on_up_message(struct mx_upsess *s, uint64_t key, json_t *msg, void *data)
{
    struct upctx *ctx = data;
    (void)s;
    mcp_up_unsolicited(ctx, key, msg);
}

static void send_level(struct upctx *ctx, int level);

/*
 * MCP 2025-11-25 tasks live in a server's session (server-everything keeps
 * them there), so the shared session of an upstream that runs tasks
 * outlives mcplex: kept beside its catalogue (mx_catalogue_session_save),
 * not ended when mcplex stops, and taken up again by the next run, so a
 * task still reaches its server after a restart.
 */
static char *kept_session_path(const struct mx_mcpup *u)
{
    json_t *caps = json_object_get(u->init, "capabilities");
    if (u->m->cfg->proxy.state_dir == NULL || u->m->ops->keep == NULL ||
        !json_is_object(json_object_get(caps, "tasks")) ||
        !(mx_upsess_caps(u->cfg) & MX_UPSESS_CAP_CATALOGUE))
        return NULL;
    return mx_catalogue_path(u->m->cfg->proxy.state_dir, u->cfg);
}

static void session_kept(struct upctx *ctx)
{
    struct mx_mcpup *u = ctx->u;
    const char *version;
    char *path = ctx->owner == NULL ? kept_session_path(u) : NULL;
    const char *sid = path ? u->m->ops->session_id(ctx->v.s, &version) : NULL;
    if (sid) {
        mx_catalogue_session_save(path, u->cfg, sid, version);
        u->m->ops->keep(ctx->v.s, true, NULL, NULL, NULL);
    }
    free(path);
}

static void session_take_up(struct upctx *ctx)
{
    struct mx_mcpup *u = ctx->u;
    char *sid, *version;
    char *path = ctx->owner == NULL ? kept_session_path(u) : NULL;
    if (path && mx_catalogue_session_load(path, u->cfg, &sid, &version) == 0) {
        u->m->ops->keep(ctx->v.s, true, sid, version, u->init);
        free(sid);
        free(version);
    }
    free(path);
}

static void on_up_ready(struct mx_upsess *s, json_t *init, void *data)
{
    struct upctx *ctx = data;
    struct mx_mcpup *u = ctx->u;
    (void)s;
    bool again = u->init != NULL && ctx->owner == NULL;
    json_decref(u->init);
    u->init = json_incref(init);
    session_kept(ctx);
    if (again) {
        /* a new session on an upstream we knew: it may have restarted with
         * other lists; look again (MCP 2025-06-18, Session Management) */
        for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
            if (u->lists[k])
                u->stale[k] = true;
        }
        mcp_up_refresh(u, ctx, 0, NULL);
    }
    int level = ctx->owner ? ctx->owner->log_level : mcp_min_log_level(u->m);
    if (level >= 0)
        send_level(ctx, level);
}

json_t *mcp_client_caps(const struct mx_session *owner)
{
    /* What mcplex can pass on for a client. For a shared session every
     * client is behind it, so sampling and elicitation are offered and a
     * request from the upstream goes to the client whose call caused it
     * (refused if that client lacks the capability); roots belong to one
     * client, so only a per-client session declares them. */
    if (owner == NULL)
        return json_pack("{s:{}, s:{}}", "sampling", "elicitation");
    json_t *caps = json_object_get(owner->init_params, "capabilities");
    json_t *out = json_object();
    static const char *const keep[] = {"sampling", "elicitation", "roots"};
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *v = json_object_get(caps, keep[i]);
        if (json_is_object(v))
            json_object_set(out, keep[i], v);
    }
    return out;
}

/* idle_close had closed the session's notification stream: a list_changed
 * sent meanwhile was missed, so the lists are fetched again (clients hear
 * list_changed if they differ). */
static void on_up_gap(struct mx_upsess *s, void *data)
{
    struct upctx *ctx = data;
    struct mx_mcpup *u = ctx->u;
    (void)s;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (u->lists[k])
            u->stale[k] = true;
    }
    if (!u->m->shutting_down)
        mcp_up_refresh(u, ctx, 0, NULL);
}

static const struct mx_upsess_cbs upsess_cbs = {on_up_message, on_up_ready, on_up_gap};

struct upctx *mcp_up_session(struct mx_mcpup *u, struct mx_session *s)
{
    struct upctx *ctx;
    if (u->cfg->session == MX_SESSION_SHARED || s == NULL) {
        ctx = &u->shared;
    } else {
        struct sessx *sx = s->owner;
        if (u->idx >= sx->pc_cnt) {
            sx->pc = mx_xrealloc(sx->pc, (u->idx + 1) * sizeof(*sx->pc));
            memset(sx->pc + sx->pc_cnt, 0, (u->idx + 1 - sx->pc_cnt) * sizeof(*sx->pc));
            sx->pc_cnt = u->idx + 1;
        }
        if (sx->pc[u->idx] == NULL)
            sx->pc[u->idx] = mx_xcalloc(1, sizeof(*sx->pc[u->idx]));
        ctx = sx->pc[u->idx];
        ctx->owner = s;
    }
    ctx->u = u;
    if (ctx->v.key == 0)
        ctx->v.key = ++u->m->ctx_keys;
    if (ctx->v.s == NULL) {
        json_t *caps = mcp_client_caps(ctx->owner);
        ctx->v.s =
            u->m->ops->open(&u->env, caps, ctx->owner ? ctx->owner->id : NULL, &upsess_cbs, ctx);
        json_decref(caps);
        session_take_up(ctx);
    }
    return ctx;
}

struct upctx *mcp_pc(struct sessx *sx, size_t idx)
{
    return sx && idx < sx->pc_cnt ? sx->pc[idx] : NULL;
}

static void refresh_abort(struct mx_mcpup *u);

/* Close one upstream session of |u| (shared or a client's). */
static void ctx_close(struct mx_mcpup *u, struct upctx *ctx)
{
    if (ctx == NULL)
        return;
    if (u->refresh && u->refresh->via == ctx)
        refresh_abort(u);
    if (ctx->v.s) {
        mx_idmap_drop_upsess(u->m->ids, u->m->ops->key(ctx->v.s));
        u->m->ops->close(ctx->v.s);
        ctx->v.s = NULL;
    }
}

void mcp_up_session_closed(struct mx_session *s)
{
    struct sessx *sx = s->owner;
    if (sx == NULL)
        return;
    for (size_t i = 0; i < sx->pc_cnt; i++)
        ctx_close(sx->m->ups[i], sx->pc[i]);
}

/* ---- catalogue refresh ---- */

bool mcp_up_offers(const struct mx_mcpup *u, int kind)
{
    json_t *caps = json_object_get(u->init, "capabilities");
    return json_is_object(json_object_get(caps, cap_names[kind]));
}

/* MCP 2026-07-28, Caching: a list whose upstream gave a ttlMs is not
 * reused past it (one without, the 2025 servers, until its list_changed). */
static bool expired(const struct mx_mcpup *u, int k)
{
    return u->ttl_given[k] && u->lists[k] &&
           (ev_now(u->m->loop) - u->ttl_at[k]) * 1000.0 >= (double)u->ttl_ms[k];
}

bool mcp_up_needs(struct mx_mcpup *u, unsigned kinds, bool for_list)
{
    if (u->up->retired)
        return false; /* retired ones leave */
    if (u->refresh)
        return true;
    switch (u->state) {
    case UPS_UNKNOWN:
    case UPS_CONNECTING:
        return true;
    case UPS_FAILED:
        return for_list && ev_now(u->m->loop) - u->failed_at >= u->retry_s;
    case UPS_READY:
        break;
    }
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (!(kinds & KIND_BIT(k)))
            continue;
        if (for_list && expired(u, k))
            u->stale[k] = true; /* fetched again, as if a list_changed had come */
        if (u->lists[k] == NULL || u->stale[k])
            return true;
    }
    return false;
}

static void refresh_free(struct refresh *r)
{
    json_decref(r->acc);
    free(r);
}

/* Tell the waiters and let go; |again| (may be NULL) serves a list_changed
 * that came after its list was fetched. */
/* After a good refresh, keep what the upstream said for the next start. */
static void catalogue_save(struct mx_mcpup *u)
{
    if (u->state != UPS_READY || u->init == NULL ||
        !(mx_upsess_caps(u->cfg) & MX_UPSESS_CAP_CATALOGUE) || u->m->cfg->proxy.state_dir == NULL)
        return;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (mcp_up_offers(u, k) && (u->lists[k] == NULL || u->stale[k]))
            return; /* not complete yet */
    }
    char *path = mx_catalogue_path(u->m->cfg->proxy.state_dir, u->cfg);
    mx_catalogue_save(path, u->cfg, u->init, u->lists);
    free(path);
}

/* At start: the last catalogue stands in for the fan-out, so a client's
 * initialize and lists wake no sandbox; only a call opens a session
 * (DESIGN.md, Wake-on-use). The session's own answer replaces it. */
static void catalogue_load(struct mx_mcpup *u)
{
    json_t *init = NULL, *lists[MX_CATALOGUE_KINDS] = {NULL};
    if (!(mx_upsess_caps(u->cfg) & MX_UPSESS_CAP_CATALOGUE) || u->m->cfg->proxy.state_dir == NULL)
        return;
    char *path = mx_catalogue_path(u->m->cfg->proxy.state_dir, u->cfg);
    int rc = mx_catalogue_load(path, u->cfg, &init, lists);
    if (rc == MX_EPROTO)
        mx_log_warn(SUBSYS, "up:%s ignoring the unreadable catalogue %s", u->cfg->name, path);
    else if (rc == MX_ELIMIT)
        mx_log_warn(SUBSYS, "up:%s ignoring the catalogue %s: over max_list_bytes (%lld)",
                    u->cfg->name, path, (long long)u->cfg->max_list_bytes);
    free(path);
    if (rc)
        return;
    u->init = init;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        u->lists[k] = lists[k];
        u->list_bytes[k] = mx_catalogue_list_bytes(lists[k]);
        u->gen[k]++;
    }
    u->from_catalogue = true;
    /* MCP 2026-07-28, Custom Headers: the tools' x-mcp-header arguments, as
     * a live tools/list would have taught them, so a call made before the
     * first one carries its Mcp-Param-* headers */
    if (u->lists[MX_AGG_TOOLS]) {
        json_t *res = json_pack("{s:O}", "tools", u->lists[MX_AGG_TOOLS]);
        if (u->env.tool_params == NULL)
            u->env.tool_params = json_object();
        json_decref(mx_up26_tools_seen(res, u->env.tool_params, NULL));
        json_decref(res);
    }
    mx_log_info(SUBSYS, "up:%s lists loaded from the catalogue; no contact until a call",
                u->cfg->name);
    set_up_state(u, UPS_READY);
}

static void refresh_end(struct mx_mcpup *u, struct upctx *again)
{
    struct refresh *r = u->refresh;
    u->refresh = NULL;
    if (r)
        catalogue_save(u);
    if (r) {
        if (r->rpc)
            u->m->ops->cancel(r->rpc);
        refresh_free(r);
    }
    struct upwait *w = u->waiters;
    u->waiters = NULL;
    while (w) {
        struct upwait *n = w->next;
        w->next = NULL;
        w->cb(w, u);
        w = n;
    }
    mcp_changed(u->m);
    for (int k = 0; again && k < MX_AGG_KIND_CNT; k++) {
        if (u->stale[k] && u->lists[k] && u->state == UPS_READY && !u->m->shutting_down) {
            mcp_up_refresh(u, again, 0, NULL);
            break;
        }
    }
}

static void refresh_abort(struct mx_mcpup *u)
{
    refresh_end(u, NULL);
}

static void refresh_failed(struct refresh *r, const struct mx_upfail *fail)
{
    struct mx_mcpup *u = r->u;
    r->rpc = NULL;
    if (u->state == UPS_CONNECTING || u->state == UPS_UNKNOWN) {
        /* first contact failed: nothing of it can be shown */
        mx_log_warn(SUBSYS, "%s", fail->message);
        u->fail = *fail;
        u->failed_at = ev_now(u->m->loop);
        set_up_state(u, UPS_FAILED);
    } else {
        mx_log_info(SUBSYS, "%s", fail->message);
        mcp_up_note_fail(u, fail);
    }
    refresh_end(u, NULL);
}

/* Keep |items| (owned), which cost |bytes|, as |u|'s list |kind|. */
static void store_list(struct mx_mcpup *u, int kind, json_t *items, size_t bytes)
{
    u->stale[kind] = false;
    u->list_bytes[kind] = bytes;
    if (u->lists[kind] && json_equal(u->lists[kind], items)) {
        json_decref(items);
        return;
    }
    json_decref(u->lists[kind]);
    u->lists[kind] = items;
    u->gen[kind]++;
    mcp_changed(u->m);
}

/*
 * Add the items of one page to |r|'s list while they fit: MAX_ITEMS items,
 * and max_list_bytes for the upstream's lists together (the other kinds
 * as last stored, this one as fetched so far). Returns false when an item
 * did not fit the bytes: the list is full.
 */
static bool take_items(struct refresh *r, json_t *items)
{
    const struct mx_mcpup *u = r->u;
    size_t cap = (size_t)u->cfg->max_list_bytes, others = 0, i;
    json_t *it;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++)
        others += k == r->kind ? 0 : u->list_bytes[k];
    size_t room = others < cap ? cap - others : 0;
    json_array_foreach(items, i, it)
    {
        if (json_array_size(r->acc) >= MAX_ITEMS)
            break;
        size_t n = mx_catalogue_item_bytes(it);
        if (n > room - r->acc_bytes)
            return false;
        r->acc_bytes += n;
        json_array_append(r->acc, it);
    }
    return true;
}

static void on_list_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                         void *data)
{
    struct refresh *r = data;
    struct mx_mcpup *u = r->u;
    (void)rpc;
    r->rpc = NULL;
    if (fail) {
        refresh_failed(r, fail);
        return;
    }
    mcp_up_note_ok(u);
    json_t *result = json_object_get(resp, "result");
    json_t *items = json_object_get(result, mx_agg_list_key((enum mx_agg_kind)r->kind));
    /* MCP 2026-07-28, Caching: no hint is 0; a list is as fresh as its stalest page */
    json_int_t ttl = json_integer_value(json_object_get(result, "ttlMs"));
    if (r->pages == 1 || ttl < u->ttl_ms[r->kind])
        u->ttl_ms[r->kind] = ttl > 0 ? ttl : 0;
    if (r->pages == 1) {
        u->ttl_at[r->kind] = ev_now(u->m->loop);
        u->ttl_given[r->kind] = json_is_integer(json_object_get(result, "ttlMs"));
    }
    if (!json_is_object(result) || !json_is_array(items)) {
        /* an error (often "method not found"): nothing of this kind */
        store_list(u, r->kind, json_array(), 0);
        json_decref(r->acc);
        r->acc = NULL;
        refresh_step(r);
        return;
    }
    bool full = !take_items(r, items);
    const char *next = json_string_value(json_object_get(result, "nextCursor"));
    /* MCP 2025-06-18, Pagination: no nextCursor ends the list; bounded. */
    if (full) {
        /* past the cap nothing more is fetched: what fits is kept */
        const char *key = mx_agg_list_key((enum mx_agg_kind)r->kind);
        snprintf(u->cut[r->kind], sizeof(u->cut[r->kind]),
                 "cut to %zu items (%zu bytes) after %zu pages: its lists together are over "
                 "max_list_bytes (%lld)",
                 json_array_size(r->acc), r->acc_bytes, r->pages,
                 (long long)u->cfg->max_list_bytes);
        mx_log_warn(SUBSYS, "up:%s %s %s", u->cfg->name, key, u->cut[r->kind]);
    } else if (next && r->pages < MAX_PAGES && json_array_size(r->acc) < MAX_ITEMS) {
        json_t *msg =
            json_pack("{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", mcp_internal_id(u->m),
                      "method", list_methods[r->kind], "params", "cursor", next);
        r->pages++;
        static const struct mx_uprpc_cbs cbs = {NULL, on_list_done, NULL};
        int rc = u->m->ops->request(r->via->v.s, msg, (long)u->cfg->request_timeout_ms, &cbs, r,
                                    &r->rpc);
        json_decref(msg);
        if (rc == 0)
            return;
    } else if (next) {
        mx_log_warn(SUBSYS,
                    "up:%s lists more than %d pages or %d items of %s; the rest is left "
                    "out",
                    u->cfg->name, MAX_PAGES, MAX_ITEMS, mx_agg_list_key((enum mx_agg_kind)r->kind));
    }
    if (!full)
        u->cut[r->kind][0] = '\0';
    store_list(u, r->kind, r->acc, r->acc_bytes);
    r->acc = NULL;
    refresh_step(r);
}

static int next_kind(struct refresh *r)
{
    struct mx_mcpup *u = r->u;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        bool wanted = (r->kinds & KIND_BIT(k)) || (u->lists[k] && u->stale[k]);
        if (wanted && (u->lists[k] == NULL || u->stale[k]))
            return k;
    }
    return -1;
}

static void refresh_step(struct refresh *r)
{
    struct mx_mcpup *u = r->u;
    static const struct mx_uprpc_cbs cbs = {NULL, on_list_done, NULL};
    for (;;) {
        int k = next_kind(r);
        if (k < 0) {
            refresh_end(u, r->via);
            return;
        }
        if (!mcp_up_offers(u, k)) {
            store_list(u, k, json_array(), 0);
            continue;
        }
        r->kind = k;
        r->pages = 1;
        r->acc = json_array();
        r->acc_bytes = 0;
        json_t *msg = json_pack("{s:s, s:o, s:s}", "jsonrpc", "2.0", "id", mcp_internal_id(u->m),
                                "method", list_methods[k]);
        int rc = u->m->ops->request(r->via->v.s, msg, (long)u->cfg->request_timeout_ms, &cbs, r,
                                    &r->rpc);
        json_decref(msg);
        if (rc) {
            struct mx_upfail fail;
            mx_upfail_proto(u->cfg, "its session is closed", &fail);
            refresh_failed(r, &fail);
        }
        return;
    }
}

static void on_connected(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                         void *data)
{
    struct refresh *r = data;
    struct mx_mcpup *u = r->u;
    (void)rpc;
    (void)resp;
    r->rpc = NULL;
    if (fail) {
        refresh_failed(r, fail);
        return;
    }
    if (u->init == NULL)
        u->init = json_incref(u->m->ops->init_result(r->via->v.s));
    mcp_up_note_ok(u);
    refresh_step(r); /* may end the refresh, and free r */
    release_init_waiters(u);
}

/* The waiters that wanted |u|'s initialize only: done now. Taken off the
 * list first, since their callbacks may add waiters or end the refresh. */
static void release_init_waiters(struct mx_mcpup *u)
{
    struct upwait *done = NULL, **pp = &u->waiters;
    while (*pp) {
        struct upwait *w = *pp;
        if (w->init_only) {
            *pp = w->next;
            w->next = done;
            done = w;
        } else {
            pp = &w->next;
        }
    }
    while (done) {
        struct upwait *n = done->next;
        done->next = NULL;
        done->cb(done, u);
        done = n;
    }
}

void mcp_up_refresh(struct mx_mcpup *u, struct upctx *via, unsigned kinds, struct upwait *w)
{
    if (w) {
        w->next = u->waiters;
        u->waiters = w;
    }
    if (u->refresh) {
        u->refresh->kinds |= kinds;
        return;
    }
    if (u->m->shutting_down) {
        refresh_end(u, NULL);
        return;
    }
    struct refresh *r = mx_xcalloc(1, sizeof(*r));
    r->u = u;
    r->via = via;
    r->kinds = kinds;
    r->kind = -1;
    u->refresh = r;
    if (u->state == UPS_UNKNOWN)
        set_up_state(u, UPS_CONNECTING);
    static const struct mx_uprpc_cbs cbs = {NULL, on_connected, NULL};
    if (via->v.s == NULL || u->m->ops->request(via->v.s, NULL, 0, &cbs, r, &r->rpc) != 0) {
        struct mx_upfail fail;
        mx_upfail_proto(u->cfg, "its session is closed", &fail);
        refresh_failed(r, &fail);
    }
}

static void unwait(struct mx_mcpup *u, struct upwait *w)
{
    for (struct upwait **pp = &u->waiters; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            w->next = NULL;
            return;
        }
    }
}

static void upwaits_one_done(struct upwait *w, struct mx_mcpup *u)
{
    struct upwait_slot *slot = mx_container_of(w, struct upwait_slot, w);
    struct upwaits *ws = slot->ws;
    (void)u;
    slot->active = false;
    ws->waiting--;
    if (!ws->starting)
        ws->cb(ws);
}

static void mcp_upwaits_init(struct upwaits *ws, struct mx_mcp *m, void (*cb)(struct upwaits *ws))
{
    memset(ws, 0, sizeof(*ws));
    ws->cnt = m->up_cnt;
    ws->v = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*ws->v));
    ws->starting = true;
    ws->cb = cb;
}

static void mcp_upwaits_add(struct upwaits *ws, struct mx_mcpup *u, struct upctx *via,
                            unsigned kinds, bool init_only)
{
    MX_ASSERT(u->idx < ws->cnt);
    struct upwait_slot *slot = &ws->v[u->idx];
    MX_ASSERT(!slot->active);
    slot->ws = ws;
    slot->w.cb = upwaits_one_done;
    slot->w.init_only = init_only;
    slot->active = true;
    ws->waiting++;
    mcp_up_refresh(u, via, kinds, &slot->w);
}

static size_t mcp_upwaits_started(struct upwaits *ws)
{
    ws->starting = false;
    return ws->waiting;
}

static void mcp_upwaits_clear(struct upwaits *ws, struct mx_mcp *m)
{
    for (size_t i = 0; i < ws->cnt; i++) {
        if (ws->v[i].active)
            unwait(m->ups[i], &ws->v[i].w);
        ws->v[i].active = false;
    }
    free(ws->v);
    ws->v = NULL;
    ws->cnt = 0;
}

/* ---- merged views and list_changed ---- */

static void rebuild(struct mx_mcp *m)
{
    struct mx_agg_source *srcs = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*srcs));
    struct mx_uri_source *usrc = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*usrc));
    json_t **pins = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*pins));
    struct mx_agg_opts o = {m->cfg->proxy.prefix, (size_t)m->cfg->proxy.name_budget};
    mx_names_settings(m->names, o.prefix, o.name_budget);
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        for (size_t i = 0; i < m->up_cnt; i++) {
            struct mx_mcpup *u = m->ups[i];
            srcs[i].alias = u->cfg->alias;
            pins[i] = u->up->retired ? NULL
                                     : mx_names_pins(m->names, u->cfg->name, u->cfg->alias,
                                                     (enum mx_agg_kind)k);
            /* a retired upstream's names neither show nor push others aside */
            srcs[i].items = u->up->retired ? NULL : u->lists[k];
            srcs[i].visible = mcp_up_visible(u);
            srcs[i].allow = k == MX_AGG_TOOLS     ? &u->cfg->tools
                            : k == MX_AGG_PROMPTS ? &u->cfg->prompts
                                                  : NULL;
            srcs[i].deny = k == MX_AGG_TOOLS     ? &u->cfg->tools_deny
                           : k == MX_AGG_PROMPTS ? &u->cfg->prompts_deny
                                                 : NULL;
        }
        mx_agg_view_free(m->views[k]);
        m->views[k] = NULL;
        if (mx_agg_build_pinned((enum mx_agg_kind)k, srcs, m->up_cnt, &o, pins, &m->views[k]) != 0)
            mx_fatal(SUBSYS, "cannot merge lists (name_budget %lld)",
                     (long long)m->cfg->proxy.name_budget);
    }
    for (size_t i = 0; i < m->up_cnt; i++) {
        if (m->ups[i]->up->retired)
            continue;
        usrc[i].resources = m->ups[i]->lists[MX_AGG_RESOURCES];
        usrc[i].templates = m->ups[i]->lists[MX_AGG_TEMPLATES];
    }
    mx_uriroute_free(m->uris);
    m->uris = mx_uriroute_new(usrc, m->up_cnt);
    free(srcs);
    free(usrc);
    free(pins);
    m->views_dirty = false;
    m->views_rev++;
}

struct mx_agg_view *mcp_view(struct mx_mcp *m, enum mx_agg_kind kind)
{
    if (m->views_dirty || m->views[kind] == NULL)
        rebuild(m);
    return m->views[kind];
}

/* A merged list is about to be shown: its names are pinned, once per
 * rebuild, so that they never move (names.h). */
static void names_shown(struct mx_mcp *m, enum mx_agg_kind kind)
{
    struct mx_agg_view *v = mcp_view(m, kind);
    if (m->noted_rev[kind] == m->views_rev + 1)
        return;
    m->noted_rev[kind] = m->views_rev + 1;
    const char **servers = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*servers));
    const char **aliases = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*aliases));
    for (size_t i = 0; i < m->up_cnt; i++) {
        servers[i] = m->ups[i]->up->retired ? NULL : m->ups[i]->cfg->name;
        aliases[i] = m->ups[i]->cfg->alias;
    }
    mx_names_note(m->names, kind, v, servers, aliases, m->up_cnt);
    free(servers);
    free(aliases);
}

struct mx_uriroute *mcp_uris(struct mx_mcp *m)
{
    if (m->views_dirty || m->uris == NULL)
        rebuild(m);
    return m->uris;
}

struct mx_mcpup *mcp_uri_target(struct mx_mcp *m, const char *uri, bool as_template,
                                struct mx_uriroute_result *r)
{
    r->cnt = 0;
    if (as_template)
        mx_uriroute_find_template(mcp_uris(m), mx_str_cstr(uri), r);
    if (r->cnt == 0)
        mx_uriroute_find(mcp_uris(m), mx_str_cstr(uri), r);
    return r->cnt == 1 ? m->ups[r->cands[0]] : NULL;
}

/* Not in any list: with one upstream that serves resources at all, it is
 * the only place a URI can live. */
struct mx_mcpup *mcp_uri_only(struct mx_mcp *m)
{
    struct mx_mcpup *only = NULL;
    size_t with = 0;
    for (size_t i = 0; i < m->up_cnt; i++) {
        json_t *caps = json_object_get(m->ups[i]->init, "capabilities");
        if (!m->ups[i]->up->retired && json_is_object(json_object_get(caps, "resources"))) {
            only = m->ups[i];
            with++;
        }
    }
    return with == 1 ? only : NULL;
}

void mcp_uri_refuse(struct mx_mcp *m, struct mx_call *c, const char *uri,
                    const struct mx_uriroute_result *r, int not_found)
{
    char text[400];
    if (r->cnt == 0) {
        snprintf(text, sizeof(text),
                 "Resource not found: no upstream lists %.200s or a template that matches it", uri);
        mx_call_error(c, 200, not_found, text, json_pack("{s:s}", "uri", uri));
        return;
    }
    json_t *e = mcp_uri_ambiguous(m, uri, r);
    mx_call_reply(c, e, true, 200);
    json_decref(e);
}

json_t *mcp_uri_ambiguous(struct mx_mcp *m, const char *uri, const struct mx_uriroute_result *r)
{
    char text[600];
    size_t n =
        (size_t)snprintf(text, sizeof(text),
                         "Ambiguous resource URI %.200s: it belongs to several upstreams (", uri);
    json_t *cands = json_array();
    for (size_t i = 0; i < r->cnt; i++) {
        const char *nm = m->ups[r->cands[i]]->cfg->name;
        if (n < sizeof(text))
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s", i ? ", " : "", nm);
        json_array_append_new(cands, json_string(nm));
    }
    if (n < sizeof(text))
        snprintf(text + n, sizeof(text) - n, "); read it through /mcp/<server>");
    /* MCP 2025-06-18 and 2026-07-28: invalid params, with the URI in data */
    return json_pack("{s:i, s:s, s:{s:s, s:o}}", "code", MX_RPC_INVALID_PARAMS, "message", text,
                     "data", "uri", uri, "candidates", cands);
}

/* What a client would see of |kind|: names, sources and list generations. */
static uint64_t view_sig(struct mx_mcp *m, int kind)
{
    struct mx_agg_view *v = mcp_view(m, (enum mx_agg_kind)kind);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
        const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
        if (!e->visible)
            continue;
        for (const char *p = e->key; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        h = (h ^ (e->src + 1)) * 0x100000001b3ULL;
        h = (h ^ m->ups[e->src]->gen[kind]) * 0x100000001b3ULL;
    }
    return h;
}

/* view_sig(), computed once per rebuild of the views */
static uint64_t cur_sig(struct mx_mcp *m, int kind)
{
    (void)mcp_view(m, (enum mx_agg_kind)kind);
    if (m->sig_rev[kind] != m->views_rev + 1) {
        m->sig_val[kind] = view_sig(m, kind);
        m->sig_rev[kind] = m->views_rev + 1; /* 0: never computed */
    }
    return m->sig_val[kind];
}

void mcp_session_told(struct mx_mcp *m, struct sessx *sx, int kind)
{
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (kind >= 0 && k != kind)
            continue;
        if (sx->scope)
            sx->seen[k] = mcp_scope_gen(sx->scope, k);
        else
            sx->told[k] = cur_sig(m, k);
    }
}

static void announce_cb(struct ev_loop *loop, ev_timer *w, int revents);

void mcp_changed(struct mx_mcp *m)
{
    m->views_dirty = true;
    if (!m->shutting_down && !ev_is_active(&m->announce))
        ev_timer_start(m->loop, &m->announce);
}

static void announce_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_mcp *m = mx_container_of(w, struct mx_mcp, announce);
    static const char *const methods[MX_AGG_KIND_CNT] = {
        "notifications/tools/list_changed", "notifications/prompts/list_changed",
        "notifications/resources/list_changed", "notifications/resources/list_changed"};
    bool changed[MX_AGG_KIND_CNT];
    uint64_t sig[MX_AGG_KIND_CNT];
    (void)loop;
    (void)revents;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        sig[k] = cur_sig(m, k);
        changed[k] = sig[k] != m->seen_sig[k];
        m->seen_sig[k] = sig[k];
    }
    changed[MX_AGG_RESOURCES] = changed[MX_AGG_RESOURCES] || changed[MX_AGG_TEMPLATES];
    for (int k = 0; k < MX_AGG_TEMPLATES; k++) {
        if (!changed[k])
            continue;
        json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", methods[k]);
        size_t n = 0;
        for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
            struct sessx *sx = s->owner;
            /* MCP 2025-06-18, Tools: list_changed once the client could
             * have listed; before its initialize answer it lists anyway.
             * Not to a client answered with this view already. */
            if (!s->answered || sx == NULL || sx->scope != NULL)
                continue;
            bool moved =
                sx->told[k] != sig[k] ||
                (k == MX_AGG_RESOURCES && sx->told[MX_AGG_TEMPLATES] != sig[MX_AGG_TEMPLATES]);
            if (!moved)
                continue;
            sx->told[k] = sig[k];
            if (k == MX_AGG_RESOURCES)
                sx->told[MX_AGG_TEMPLATES] = sig[MX_AGG_TEMPLATES];
            mcp_push(s, note);
            n++;
        }
        mx_log_debug(SUBSYS, "%s to %zu sessions", methods[k], n);
        json_decref(note);
    }
    /* /mcp/<server>: what that upstream's own lists did */
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        struct sessx *sx = s->owner;
        if (!s->answered || sx == NULL || sx->scope == NULL)
            continue;
        for (int k = 0; k < MX_AGG_TEMPLATES; k++) {
            uint32_t g = mcp_scope_gen(sx->scope, k);
            if (g == sx->seen[k])
                continue;
            sx->seen[k] = g;
            json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", methods[k]);
            mcp_push(s, note);
            json_decref(note);
        }
    }
    mcp_modern_announce(m, changed);
}

void mcp_announce_now(struct mx_mcp *m)
{
    if (!ev_is_active(&m->announce))
        return;
    ev_timer_stop(m->loop, &m->announce);
    announce_cb(m->loop, &m->announce, 0);
}

/* ---- the one wait for lists ---- */

struct mcp_wait {
    struct mx_mcp *m;
    struct mcp_wait *next;
    struct mx_call *c; /* held */
    json_t *msg;
    int what;
    struct mx_mcpup *scope;
    enum mx_agg_kind kind;
    char *name; /* NULL: no early end */
    mcp_wait_cb done;
    void *data;
    ev_timer timer;
    struct upwaits ups;
};

static void wait_free(struct mcp_wait *w)
{
    struct mx_mcp *m = w->m;
    ev_timer_stop(m->loop, &w->timer);
    mcp_upwaits_clear(&w->ups, m);
    for (struct mcp_wait **pp = &m->waits; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    json_decref(w->msg);
    free(w->name);
    mx_call_release(w->c);
    free(w);
}

/* Forget |w| and hand its call to its |done| with |end|. */
static void wait_end(struct mcp_wait *w, enum mcp_wait_end end)
{
    struct mx_mcp *m = w->m;
    struct mx_call *c = w->c;
    json_t *msg = json_incref(w->msg);
    mcp_wait_cb done = w->done;
    void *data = w->data;
    int what = w->what;
    struct mx_mcpup *scope = w->scope;
    mx_call_hold(c);
    mx_call_unwait(c);
    wait_free(w);
    done(m, c, msg, what, scope, end, data);
    mx_call_release(c);
    json_decref(msg);
}

static void wait_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mcp_wait *wt = mx_container_of(w, struct mcp_wait, timer);
    (void)loop;
    (void)revents;
    mx_log_debug(SUBSYS, "%.60s: the lists waited for did not all come in time",
                 wt->name ? wt->name : "a list wait");
    wait_end(wt, MCP_WAIT_READY);
}

static bool resolves(struct mx_mcp *m, enum mx_agg_kind kind, const char *name);

static void wait_up_done(struct upwaits *ws)
{
    struct mcp_wait *w = mx_container_of(ws, struct mcp_wait, ups);
    if (ws->waiting == 0 || (w->name && resolves(w->m, w->kind, w->name)))
        wait_end(w, MCP_WAIT_READY);
}

/* The client went away: the wait goes, nothing is answered. */
static void wait_gone(struct mx_call *c, void *data)
{
    (void)c;
    wait_free(data);
}

struct mcp_wait *mcp_wait_new(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                              struct mx_mcpup *scope, mcp_wait_cb done, void *data)
{
    struct mcp_wait *w = mx_xcalloc(1, sizeof(*w));
    w->m = m;
    w->c = c;
    mx_call_hold(c);
    w->msg = json_incref(msg);
    w->what = what;
    w->scope = scope;
    w->done = done;
    w->data = data;
    ev_init(&w->timer, wait_timer);
    mcp_upwaits_init(&w->ups, m, wait_up_done);
    w->next = m->waits;
    m->waits = w;
    mx_call_wait(c, wait_gone, w);
    return w;
}

void mcp_wait_add(struct mcp_wait *w, struct mx_mcpup *u, struct upctx *via, unsigned kinds)
{
    mcp_upwaits_add(&w->ups, u, via, kinds, false);
}

void mcp_wait_add_init(struct mcp_wait *w, struct mx_mcpup *u, struct upctx *via, unsigned kinds)
{
    if (u->state == UPS_READY && u->init) {
        mcp_up_refresh(u, via, kinds, NULL); /* answered before: nothing to wait for */
        return;
    }
    mcp_upwaits_add(&w->ups, u, via, kinds, true);
}

void mcp_wait_until(struct mcp_wait *w, enum mx_agg_kind kind, const char *name)
{
    w->kind = kind;
    free(w->name);
    w->name = mx_xstrdup(name);
}

void mcp_wait_start(struct mcp_wait *w, double bound_s)
{
    if (mcp_upwaits_started(&w->ups) == 0) {
        wait_end(w, MCP_WAIT_READY);
        return;
    }
    ev_timer_set(&w->timer, bound_s, 0.0);
    ev_timer_start(w->m->loop, &w->timer);
}

void mcp_wait_drop(struct mx_mcp *m, const void *owner, bool any, const struct mx_mcpup *scope,
                   enum mcp_wait_end end)
{
    for (;;) {
        struct mcp_wait *w = m->waits;
        while (w && !(scope ? w->scope == scope : any || w->c->owner == owner))
            w = w->next;
        if (w == NULL)
            return;
        wait_end(w, end);
    }
}

/* ---- routed requests waiting for lists ---- */

static bool is_named(enum mx_agg_kind kind)
{
    return kind == MX_AGG_TOOLS || kind == MX_AGG_PROMPTS;
}

/* The lists that say where |kind|'s names go: resources with templates. */
static unsigned route_kinds(enum mx_agg_kind kind)
{
    return is_named(kind) ? KIND_BIT(kind)
                          : KIND_BIT(MX_AGG_RESOURCES) | KIND_BIT(MX_AGG_TEMPLATES);
}

/* Whether |name| reaches some upstream now (a URI several hold counts: the
 * caller refuses it as ambiguous, and no list to come changes that). */
static bool resolves(struct mx_mcp *m, enum mx_agg_kind kind, const char *name)
{
    struct mx_uriroute_result r;
    if (is_named(kind))
        return mx_agg_lookup(mcp_view(m, kind), mx_str_cstr(name)) != NULL;
    mx_uriroute_find(mcp_uris(m), mx_str_cstr(name), &r);
    if (r.cnt == 0)
        mx_uriroute_find_template(mcp_uris(m), mx_str_cstr(name), &r);
    return r.cnt > 0;
}

/*
 * Whether |name| may be |u|'s once its lists are in. The name rule (README,
 * Name rule) gives a late upstream's names its alias prefix, or with
 * prefix = "conditional" none at all when nobody else holds them: so any
 * name may be an unlisted upstream's. URIs are never renamed: any may be.
 */
static bool could_hold(const struct mx_mcpup *u, enum mx_agg_kind kind, const char *name)
{
    if (u->init && !mcp_up_offers(u, kind))
        return false; /* it said what it serves (the catalogue too): not this */
    if (!is_named(kind))
        return u->lists[MX_AGG_RESOURCES] == NULL || u->lists[MX_AGG_TEMPLATES] == NULL;
    size_t al = strlen(u->cfg->alias);
    if (strncmp(name, u->cfg->alias, al) == 0 && name[al] == '_')
        return true;
    return u->lists[kind] == NULL && u->m->cfg->proxy.prefix == MX_PREFIX_CONDITIONAL;
}

void mcp_unknown_name(struct mx_mcp *m, struct mx_call *c, enum mx_agg_kind kind, const char *name)
{
    char text[1024];
    int n = snprintf(text, sizeof(text), "Unknown %s: %.200s",
                     kind == MX_AGG_TOOLS ? "tool" : "prompt", name ? name : "(none)");
    for (size_t i = 0; name && i < m->up_cnt && n > 0 && (size_t)n < sizeof(text); i++) {
        const struct mx_mcpup *u = m->ups[i];
        if (u->up->retired || u->state != UPS_FAILED || !could_hold(u, kind, name))
            continue;
        n += snprintf(text + n, sizeof(text) - (size_t)n,
                      "; upstream '%s', which may hold it, failed: %.300s", u->cfg->name,
                      u->fail.message);
    }
    mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, text, NULL);
}

/* How long a call would wait for |u| to wake: wake_timeout, and never past
 * what request_timeout allows the call itself. */
static double park_bound_s(const struct mx_mcpup *u)
{
    int64_t ms = u->cfg->wake_timeout_ms;
    if (u->cfg->request_timeout_ms > 0 && u->cfg->request_timeout_ms < ms)
        ms = u->cfg->request_timeout_ms;
    return (double)ms / 1000.0;
}

bool mcp_park(struct mx_mcp *m, struct mx_session *owner, struct mx_call *c, json_t *msg,
              enum mx_agg_kind kind, const char *name, mcp_wait_cb retry, void *data)
{
    unsigned kinds = route_kinds(kind);
    struct mcp_wait *w = NULL;
    double bound_s = 0;
    if (name == NULL || m->shutting_down)
        return false;
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        /* pending: never contacted, connecting (waking included), lists
         * missing or being fetched; not one that failed and rests */
        if (!mcp_up_needs(u, kinds, false) || !could_hold(u, kind, name))
            continue;
        if (w == NULL) {
            w = mcp_wait_new(m, c, msg, 0, NULL, retry, data);
            mcp_wait_until(w, kind, name);
        }
        if (park_bound_s(u) > bound_s)
            bound_s = park_bound_s(u);
        mcp_wait_add(w, u, mcp_up_session(u, owner), kinds);
    }
    if (w == NULL)
        return false;
    mx_log_debug(SUBSYS, "%.60s: no upstream holds it yet; waiting up to %.0f s for %zu list(s)",
                 name, bound_s, w->ups.waiting);
    /* every refresh failed at once: no list is coming, and |retry| refuses */
    mcp_wait_start(w, bound_s);
    return true;
}

/* ---- messages from upstreams ---- */

static void resources_updated(struct upctx *ctx, json_t *msg)
{
    struct mx_mcp *m = ctx->u->m;
    const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
    if (uri == NULL)
        return;
    if (ctx->owner == NULL)
        mcp_modern_resource_updated(m, ctx->u->idx, msg);
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        struct sessx *sx = s->owner;
        if (sx == NULL || (ctx->owner && ctx->owner != s))
            continue;
        for (struct sub *b = sx->subs; b; b = b->next) {
            if (b->up == ctx->u->idx && strcmp(b->uri, uri) == 0) {
                mcp_push(s, msg);
                break;
            }
        }
    }
}

/* MCP 2025-06-18, Logging: levels per RFC 5424, least severe first. At
 * /mcp the logger names the upstream; at /mcp/<server> it is the server's
 * own. */
static void log_message(struct upctx *ctx, json_t *msg)
{
    struct mx_mcp *m = ctx->u->m;
    json_t *params = json_object_get(msg, "params");
    int level = mx_call_log_level(json_string_value(json_object_get(params, "level")));
    json_t *out = json_deep_copy(msg);
    json_t *op = json_object_get(out, "params");
    const char *logger = json_string_value(json_object_get(params, "logger"));
    char *name =
        logger ? mx_xasprintf("%s/%s", ctx->u->cfg->alias, logger) : mx_xstrdup(ctx->u->cfg->alias);
    if (json_is_object(op))
        json_object_set_new(op, "logger", json_string(name));
    free(name);
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        struct sessx *sx = s->owner;
        if (sx == NULL || (ctx->owner && ctx->owner != s) || (sx->scope && sx->scope != ctx->u))
            continue;
        if (!s->answered || (s->log_level >= 0 && level >= 0 && level < s->log_level))
            continue;
        mcp_push(s, sx->scope ? msg : out);
    }
    json_decref(out);
}

void mcp_up_dropped(struct mx_mcpup *u, const char *method, const char *why)
{
    u->dropped++;
    const struct mx_front_hooks *hk = mx_callhub_hooks(u->m->hub);
    if (hk->dropped)
        hk->dropped(u->up, hk->data);
    /* a hostile upstream can send these at line rate: powers of two only */
    if ((u->dropped & (u->dropped - 1)) == 0)
        mx_log_debug(SUBSYS, "up:%s %s dropped: it %s (%llu so far)", u->cfg->name, method, why,
                     (unsigned long long)u->dropped);
}

/* The upstream withdrew a request it had sent to a client. */
static void cancelled(struct upctx *ctx, uint64_t key, json_t *msg)
{
    struct mx_mcp *m = ctx->u->m;
    json_t *params = json_object_get(msg, "params");
    /* by the upstream session it came from: ids of other sessions never match */
    const struct mx_idmap_s2c *e =
        mx_idmap_s2c_by_up(m->ids, key, json_object_get(params, "requestId"));
    if (e == NULL) {
        mcp_up_dropped(ctx->u, "notifications/cancelled", "names no request of its session");
        return;
    }
    struct mx_session *s = mx_session_by_key(m->sessions, e->session);
    if (s) {
        json_t *out = json_deep_copy(msg);
        json_object_set_new(json_object_get(out, "params"), "requestId",
                            json_integer((json_int_t)e->client_id));
        mcp_push(s, out);
        json_decref(out);
    }
    mx_idmap_s2c_remove(m->ids, e->client_id);
}

void mcp_up_unsolicited(struct upctx *ctx, uint64_t key, json_t *msg)
{
    struct mx_mcpup *u = ctx->u;
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    if (kind == MX_RPC_REQUEST) {
        mcp_s2c_request(ctx, key, msg, NULL);
        return;
    }
    if (kind != MX_RPC_NOTIFICATION)
        return;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (strcmp(method, "notifications/tools/list_changed") == 0 ||
        strcmp(method, "notifications/prompts/list_changed") == 0 ||
        strcmp(method, "notifications/resources/list_changed") == 0) {
        if (strcmp(method, "notifications/tools/list_changed") == 0) {
            u->stale[MX_AGG_TOOLS] = u->lists[MX_AGG_TOOLS] != NULL;
        } else if (strcmp(method, "notifications/prompts/list_changed") == 0) {
            u->stale[MX_AGG_PROMPTS] = u->lists[MX_AGG_PROMPTS] != NULL;
        } else {
            u->stale[MX_AGG_RESOURCES] = u->lists[MX_AGG_RESOURCES] != NULL;
            u->stale[MX_AGG_TEMPLATES] = u->lists[MX_AGG_TEMPLATES] != NULL;
        }
        mx_log_debug(SUBSYS, "up:%s %s", u->cfg->name, method);
        if (!u->m->shutting_down)
            mcp_up_refresh(u, ctx, 0, NULL);
    } else if (strcmp(method, "notifications/resources/updated") == 0) {
        resources_updated(ctx, msg);
    } else if (strcmp(method, "notifications/message") == 0) {
        log_message(ctx, msg);
    } else if (strcmp(method, "notifications/progress") == 0) {
        mx_callhub_progress(u->m->hub, u->idx, ctx->v.key, msg);
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        cancelled(ctx, key, msg);
    } else if (strcmp(method, "notifications/tasks/status") == 0) {
        mcp_tasks25_status(u->m, u, ctx->owner, msg);
    } else if (strcmp(method, "notifications/tasks") == 0) {
        mcp_tasks26_status(u->m, u, msg);
    } else {
        mx_log_debug(SUBSYS, "up:%s %s not passed on", u->cfg->name, method);
    }
}

/* ---- logging/setLevel ---- */

static void on_level_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                          void *data)
{
    (void)rpc;
    (void)resp;
    (void)fail;
    (void)data;
}

static void send_level(struct upctx *ctx, int level)
{
    static const struct mx_uprpc_cbs cbs = {NULL, on_level_done, NULL};
    struct mx_uprpc *rpc;
    json_t *caps = json_object_get(ctx->u->init, "capabilities");
    if (ctx->v.s == NULL || !json_is_object(json_object_get(caps, "logging")))
        return;
    json_t *msg =
        json_pack("{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", mcp_internal_id(ctx->u->m),
                  "method", "logging/setLevel", "params", "level", mx_call_log_level_name(level));
    ctx->u->m->ops->request(ctx->v.s, msg, (long)ctx->u->cfg->request_timeout_ms, &cbs, NULL, &rpc);
    json_decref(msg);
}

/* The shared sessions follow the most verbose level anyone wants; each
 * client is filtered to its own level on the way out. */
void mcp_up_levels(struct mx_mcp *m, struct mx_session *s)
{
    int min = mcp_min_log_level(m);
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        if (u->cfg->session == MX_SESSION_SHARED) {
            if (u->shared.v.s && m->ops->is_ready(u->shared.v.s) && min >= 0)
                send_level(&u->shared, min);
        } else if (s) {
            struct upctx *pc = mcp_pc(s->owner, i);
            if (pc && pc->v.s && m->ops->is_ready(pc->v.s))
                send_level(pc, s->log_level);
        }
    }
}

/* ---- keepalive ---- */

static void on_ping_done(struct mx_uprpc *r, json_t *resp, const struct mx_upfail *f, void *data)
{
    (void)r;
    (void)resp;
    (void)data;
    if (f)
        mx_log_debug(SUBSYS, "keepalive ping failed: %s", f->message);
}

/* An open, ready session of |u|: the shared one, else a client's. */
static struct upctx *ready_ctx(struct mx_mcpup *u)
{
    if (u->shared.v.s && u->m->ops->is_ready(u->shared.v.s))
        return &u->shared;
    for (struct mx_session *s = mx_session_first(u->m->sessions); s; s = s->next) {
        struct upctx *pc = mcp_pc(s->owner, u->idx);
        if (pc && pc->v.s && u->m->ops->is_ready(pc->v.s))
            return pc;
    }
    return NULL;
}

/* keepalive: once the upstream has been quiet that long, ping it on a
 * session mcplex has open (none open: nothing to keep, nothing is sent; a
 * sandbox nobody uses may pause). */
static void keepalive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_mcpup *u = mx_container_of(w, struct mx_mcpup, keepalive);
    double every = (double)u->cfg->keepalive_ms / 1000.0;
    double quiet = ev_now(loop) - u->up->last_activity;
    (void)revents;
    if (u->up->retired)
        return;
    struct upctx *ctx = quiet >= every ? ready_ctx(u) : NULL;
    if (ctx) {
        static const struct mx_uprpc_cbs cbs = {NULL, on_ping_done, NULL};
        struct mx_uprpc *rpc;
        /* MCP 2026-07-28 has no ping: server/discover is as cheap and as
         * free of effects */
        const char *v =
            json_string_value(json_object_get(u->m->ops->init_result(ctx->v.s), "protocolVersion"));
        const char *method = v && strcmp(v, MX_UP26_VERSION) >= 0 ? "server/discover" : "ping";
        json_t *msg = json_pack("{s:s, s:o, s:s}", "jsonrpc", "2.0", "id", mcp_internal_id(u->m),
                                "method", method);
        u->m->ops->request(ctx->v.s, msg, (long)u->cfg->request_timeout_ms, &cbs, NULL, &rpc);
        json_decref(msg);
        /* stdio upstreams have no HTTP answer to mark activity: count the ping */
        u->up->last_activity = ev_now(loop);
        quiet = 0;
    }
    ev_timer_set(w, quiet < every ? every - quiet : every, 0.0);
    ev_timer_start(loop, w);
}

/* ---- setup, and upstreams joining and leaving at reload ---- */

/* Make the aggregate's side of gateway slot |up|->idx, or remake it for a
 * slot reused after a reload. */
static struct mx_mcpup *slot_setup(struct mx_mcp *m, struct mx_upstream *up)
{
    size_t idx = up->idx;
    if (idx >= m->up_cnt) {
        m->ups = mx_xrealloc(m->ups, (idx + 1) * sizeof(*m->ups));
        memset(m->ups + m->up_cnt, 0, (idx + 1 - m->up_cnt) * sizeof(*m->ups));
        m->up_cnt = idx + 1;
    }
    if (m->ups[idx] == NULL)
        m->ups[idx] = mx_xcalloc(1, sizeof(*m->ups[idx]));
    struct mx_mcpup *u = m->ups[idx];
    uint32_t gen[MX_AGG_KIND_CNT];
    memcpy(gen, u->gen, sizeof(gen));
    if (u->m) {
        m->ops->env_clear(&u->env); /* a goodbye of the former upstream still going */
        ev_timer_stop(m->loop, &u->keepalive);
        ev_timer_stop(m->loop, &u->retry);
    }
    memset(u, 0, sizeof(*u));
    /* a cursor from the slot's former upstream never matches the new one */
    for (int k = 0; k < MX_AGG_KIND_CNT; k++)
        u->gen[k] = gen[k] + 1;
    u->m = m;
    u->idx = idx;
    u->up = up;
    u->cfg = up->cfg;
    u->env.loop = m->loop;
    u->env.uc = m->uc;
    u->env.up = up;
    u->shared.u = u;
    u->retry_s = RETRY_MIN_S;
    ev_init(&u->retry, retry_cb);
    ev_init(&u->keepalive, keepalive_cb);
    if (u->cfg->keepalive_ms > 0) {
        ev_timer_set(&u->keepalive, (double)u->cfg->keepalive_ms / 1000.0, 0.0);
        ev_timer_start(m->loop, &u->keepalive);
    }
    return u;
}

/* start = "eager": open the session (start the process) and load the
 * catalogue now rather than at the first client */
static void slot_start(struct mx_mcpup *u)
{
    if (u->cfg->start == MX_START_EAGER)
        mcp_up_refresh(u, mcp_up_session(u, NULL), KINDS_ALL, NULL);
}

void mcp_up_init(struct mx_mcp *m, struct mx_upstream *const *ups, size_t cnt)
{
    ev_timer_init(&m->announce, announce_cb, ANNOUNCE_DELAY_S, 0.0);
    m->views_dirty = true;
    m->names = mx_names_open(m->cfg->proxy.state_dir);
    for (size_t i = 0; i < cnt; i++)
        catalogue_load(slot_setup(m, ups[i]));
    /* what a client sees before any upstream answered: nothing */
    for (int k = 0; k < MX_AGG_KIND_CNT; k++)
        m->seen_sig[k] = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < m->up_cnt; i++)
        slot_start(m->ups[i]);
}

void mx_mcp_slot_added(struct mx_mcp *m, struct mx_upstream *up)
{
    struct mx_mcpup *u = slot_setup(m, up);
    catalogue_load(u);
    /* Clients already connected listed without it: load its lists now, so
     * that they hear list_changed when its names arrive. */
    if (u->cfg->start == MX_START_EAGER || mx_session_cnt(m->sessions) > 0)
        mcp_up_refresh(u, mcp_up_session(u, NULL), KINDS_ALL, NULL);
    mcp_changed(m);
}

void mcp_up_retired(struct mx_mcp *m, size_t idx)
{
    struct mx_mcpup *u = m->ups[idx];
    /* hidden now (mcp_up_visible); its sessions stay for the calls in flight */
    if (u->refresh && u->waiters == NULL)
        refresh_abort(u);
    m->views_dirty = true;
    mcp_changed(m);
}

void mx_mcp_slot_gone(struct mx_mcp *m, size_t idx)
{
    if (idx >= m->up_cnt)
        return;
    struct mx_mcpup *u = m->ups[idx];
    ev_timer_stop(m->loop, &u->keepalive);
    ev_timer_stop(m->loop, &u->retry);
    if (u->refresh)
        refresh_abort(u);
    /* what is left of its /mcp/<server> sessions ends with it */
    for (struct mx_session *s = mx_session_first(m->sessions); s;) {
        struct mx_session *next = s->next;
        struct sessx *sx = s->owner;
        if (sx && sx->scope == u)
            mx_session_close(s);
        s = next;
    }
    /* a server no longer configured: its session ends, nothing is kept */
    char *kept = u->shared.v.s ? kept_session_path(u) : NULL;
    if (kept) {
        m->ops->keep(u->shared.v.s, false, NULL, NULL, NULL);
        mx_catalogue_session_save(kept, u->cfg, NULL, NULL);
        free(kept);
    }
    ctx_close(u, &u->shared);
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        struct sessx *sx = s->owner;
        if (sx == NULL)
            continue;
        struct upctx *pc = mcp_pc(sx, idx);
        ctx_close(u, pc);
        free(pc);
        if (idx < sx->pc_cnt)
            sx->pc[idx] = NULL;
        for (struct sub **bp = &sx->subs; *bp;) {
            struct sub *b = *bp;
            if (b->up != idx) {
                bp = &b->next;
                continue;
            }
            *bp = b->next;
            free(b->uri);
            free(b);
        }
    }
    /* u->env stays: the sessions' DELETEs are on their way through it */
    json_decref(u->init);
    u->init = NULL;
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        json_decref(u->lists[k]);
        u->lists[k] = NULL;
        u->list_bytes[k] = 0;
    }
    u->state = UPS_UNKNOWN;
    u->cfg = &mx_upstream_gone_cfg;
    m->views_dirty = true;
}

void mx_mcp_reloaded(struct mx_mcp *m, const struct mx_config *cfg)
{
    m->cfg = cfg;
    m->views_dirty = true;
    mcp_changed(m);
}

void mcp_up_clear(struct mx_mcp *m)
{
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        ev_timer_stop(m->loop, &u->keepalive);
        ev_timer_stop(m->loop, &u->retry);
        if (u->refresh)
            refresh_abort(u);
        m->ops->close(u->shared.v.s);
        u->shared.v.s = NULL;
    }
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        m->ops->env_clear(&u->env);
        json_decref(u->init);
        for (int k = 0; k < MX_AGG_KIND_CNT; k++)
            json_decref(u->lists[k]);
        free(u);
    }
    ev_timer_stop(m->loop, &m->announce);
    pages_clear(m);
    free(m->pages);
    for (int k = 0; k < MX_AGG_KIND_CNT; k++)
        mx_agg_view_free(m->views[k]);
    mx_names_free(m->names);
    m->names = NULL;
    mx_uriroute_free(m->uris);
    free(m->ups);
}

/* ---- what clients see of the catalogues ---- */

struct upctx *mcp_ctx_of(struct mx_call_via *via)
{
    return mx_container_of(via, struct upctx, v);
}

int mcp_min_log_level(struct mx_mcp *m)
{
    int min = -1;
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        if (s->log_level >= 0 && (min < 0 || s->log_level < min))
            min = s->log_level;
    }
    return min;
}

json_t *mcp_merged_caps(struct mx_mcp *m)
{
    bool tools = false, prompts = false, resources = false, subscribe = false;
    bool completions = false, unknown = false;
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        json_t *caps = json_object_get(u->init, "capabilities");
        if (u->up->retired)
            continue;
        if (u->init == NULL) {
            unknown = unknown || u->state != UPS_FAILED;
            continue;
        }
        tools = tools || json_is_object(json_object_get(caps, "tools"));
        prompts = prompts || json_is_object(json_object_get(caps, "prompts"));
        json_t *res = json_object_get(caps, "resources");
        resources = resources || json_is_object(res);
        subscribe = subscribe || json_is_true(json_object_get(res, "subscribe"));
        completions = completions || json_is_object(json_object_get(caps, "completions"));
    }
    /* An upstream that has not answered yet may offer anything: say so, and
     * its lists arrive with a list_changed. listChanged is always true: the
     * merged lists change when upstreams come and go (MCP checklist §6). */
    json_t *out = json_object();
    if (tools || unknown)
        json_object_set_new(out, "tools", json_pack("{s:b}", "listChanged", 1));
    if (prompts || unknown)
        json_object_set_new(out, "prompts", json_pack("{s:b}", "listChanged", 1));
    if (resources || unknown)
        json_object_set_new(out, "resources",
                            json_pack("{s:b, s:b}", "listChanged", 1, "subscribe", subscribe));
    if (completions)
        json_object_set_new(out, "completions", json_object());
    /* logging/setLevel is answered here for every client */
    json_object_set_new(out, "logging", json_object());
    /* MCP 2025-11-25 tasks: listed here, the rest as the upstreams offer */
    json_t *tasks = mcp_tasks25_caps(m, NULL);
    if (tasks)
        json_object_set_new(out, "tasks", tasks);
    return out;
}

json_t *mcp_merged_instructions(struct mx_mcp *m)
{
    struct mx_buf b;
    mx_buf_init(&b, 256 * 1024);
    for (size_t i = 0; i < m->up_cnt; i++) {
        const char *ins = json_string_value(json_object_get(m->ups[i]->init, "instructions"));
        if (ins == NULL || *ins == '\0' || m->ups[i]->up->retired)
            continue;
        if (mx_buf_len(&b))
            mx_buf_append_str(&b, "\n\n");
        mx_buf_printf(&b, "## %s\n", m->ups[i]->cfg->alias);
        mx_buf_append_str(&b, ins);
    }
    json_t *out = mx_buf_len(&b) ? json_stringn(mx_buf_data(&b), mx_buf_len(&b)) : NULL;
    mx_buf_clear(&b);
    return out;
}

/* What one upstream offers, of what mcplex serves for it: listChanged on
 * each list, since mcplex reports any change it sees (also after the
 * upstream restarted); resources.subscribe as the upstream says. */
json_t *mcp_scope_caps(const struct mx_mcpup *u)
{
    static const char *const keys[] = {"tools", "prompts", "resources", "completions", "logging"};
    json_t *caps = json_object_get(u->init, "capabilities");
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(caps, keys[i]);
        if (!json_is_object(v))
            continue;
        json_t *c = json_deep_copy(v);
        if (i < 3)
            json_object_set_new(c, "listChanged", json_true());
        json_object_set_new(out, keys[i], c);
    }
    /* MCP 2025-11-25 tasks as mcplex offers them (tasks/list is its own) */
    json_t *tasks = mcp_tasks25_caps(u->m, u);
    if (tasks)
        json_object_set_new(out, "tasks", tasks);
    return out;
}

bool mcp_scope_unready(const struct mx_mcpup *u, int kind, struct mx_upfail *f)
{
    if (mcp_up_visible(u) && u->init && (kind < 0 || u->lists[kind]))
        return false;
    if (u->state == UPS_FAILED)
        *f = u->fail;
    else
        mx_upfail_transport(u->cfg, MX_ETIMEDOUT, NULL, f);
    return true;
}

/* How long /mcp/<server> waits for its upstream's catalogue: as long as a
 * request to it may take, a wake included (the refresh ends sooner, and
 * says why when it fails). */
double mcp_scope_wait_s(const struct mx_mcpup *u)
{
    int64_t rt = u->cfg->request_timeout_ms > 0 ? u->cfg->request_timeout_ms : 300000;
    return (double)(rt + u->cfg->wake_timeout_ms) / 1000.0 + 1.0;
}

uint32_t mcp_scope_gen(const struct mx_mcpup *u, int k)
{
    /* generations only grow, so a changed sum is a changed list; resources
     * change with their templates */
    return k == MX_AGG_RESOURCES ? u->gen[k] + u->gen[MX_AGG_TEMPLATES] : u->gen[k];
}

static bool cursor_source(struct mx_mcp *m, size_t i, enum mx_agg_kind kind)
{
    return i < MX_CURSOR_MAX_SOURCES && mcp_up_visible(m->ups[i]) && m->ups[i]->lists[kind] != NULL;
}

/*
 * One page of one upstream's own list, in its order and with its names. The
 * cursor is one of /mcp's with a single source and the kind marked, so that
 * neither endpoint takes the other's.
 */
static json_t *scope_page(struct mx_mcp *m, const struct mx_mcpup *u, enum mx_agg_kind kind,
                          const json_t *params, const char **why)
{
    json_t *all = u->lists[kind];
    json_t *cur = json_object_get(params, "cursor");
    uint8_t ckind = (uint8_t)(kind | CURSOR_SCOPED);
    struct mx_cursor c;
    size_t pos = 0;
    if (cur) {
        const char *t = json_string_value(cur);
        if (t == NULL ||
            mx_cursor_decode(mx_str_make(t, json_string_length(cur)), m->cursor_key, &c) != 0 ||
            c.kind != ckind || c.cnt != 1 || c.v[0].src != u->idx) {
            *why = "Invalid cursor";
            return NULL;
        }
        if (c.v[0].gen != u->gen[kind]) {
            *why = "Invalid cursor: the list changed since; list again from the start";
            return NULL;
        }
        pos = c.v[0].pos;
    }
    size_t n = json_array_size(all);
    /* a slot past what a cursor can name gets the list on one page */
    size_t page = u->idx < MX_CURSOR_MAX_SOURCES ? (size_t)m->cfg->proxy.page_size : n;
    json_t *items = json_array();
    for (size_t i = pos; i < n && i - pos < page; i++)
        json_array_append(items, json_array_get(all, i));
    json_t *result = json_pack("{s:o}", mx_agg_list_key(kind), items);
    if (pos + page < n) {
        char text[MX_CURSOR_TEXT_MAX];
        memset(&c, 0, sizeof(c));
        c.kind = ckind;
        c.cnt = 1;
        c.v[0].src = (uint8_t)u->idx;
        c.v[0].gen = u->gen[kind];
        c.v[0].pos = (uint32_t)(pos + page);
        if (mx_cursor_encode(&c, m->cursor_key, text, sizeof(text)) > 0)
            json_object_set_new(result, "nextCursor", json_string(text));
    }
    return result;
}

json_t *mcp_list_page(struct mx_mcp *m, enum mx_agg_kind kind, const json_t *params,
                      const struct mx_mcpup *scope, const char **why)
{
    if (scope)
        return scope_page(m, scope, kind, params, why);
    json_t *cur = json_object_get(params, "cursor");
    names_shown(m, kind);
    struct mx_agg_view *v = mcp_view(m, kind);
    uint32_t *pos = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*pos));
    uint32_t *next = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*next));
    struct mx_cursor c;
    const char *bad = NULL;

    if (cur && !json_is_string(cur)) {
        bad = "Invalid cursor";
    } else if (cur) {
        const char *t = json_string_value(cur);
        if (mx_cursor_decode(mx_str_make(t, json_string_length(cur)), m->cursor_key, &c) != 0 ||
            c.kind != kind) {
            bad = "Invalid cursor";
        } else {
            /* every upstream listed then must be listed now, with the same
             * list, and no other: else the positions mean nothing */
            size_t k = 0;
            for (size_t i = 0; i < m->up_cnt && !bad; i++) {
                if (!cursor_source(m, i, kind))
                    continue;
                if (k >= c.cnt || c.v[k].src != i || c.v[k].gen != m->ups[i]->gen[kind])
                    bad = "Invalid cursor: the list changed since; list again from the start";
                else
                    pos[i] = c.v[k++].pos;
            }
            if (!bad && k != c.cnt)
                bad = "Invalid cursor: the list changed since; list again from the start";
        }
    }
    if (bad) {
        *why = bad;
        free(pos);
        free(next);
        return NULL;
    }
    json_t *items = json_array();
    bool more = mx_agg_page(v, pos, (size_t)m->cfg->proxy.page_size, items, next);
    json_t *result = json_pack("{s:o}", mx_agg_list_key(kind), items);
    if (more) {
        char text[MX_CURSOR_TEXT_MAX];
        memset(&c, 0, sizeof(c));
        c.kind = (uint8_t)kind;
        for (size_t i = 0; i < m->up_cnt; i++) {
            if (!cursor_source(m, i, kind))
                continue;
            c.v[c.cnt].src = (uint8_t)i;
            c.v[c.cnt].gen = m->ups[i]->gen[kind];
            c.v[c.cnt].pos = next[i];
            c.cnt++;
        }
        if (mx_cursor_encode(&c, m->cursor_key, text, sizeof(text)) > 0)
            json_object_set_new(result, "nextCursor", json_string(text));
    }
    free(pos);
    free(next);
    return result;
}

/* ---- the page cache ---- */

/*
 * A page as sent: found by its kind, endpoint (slot + 1, 0 at /mcp) and
 * cursor ("" for the first), good while the lists are in the state it was
 * made in. Bounded: PAGE_SLOTS pages, and no more bytes than twice what
 * the upstreams' lists hold (every entry goes when a page would pass it).
 */
#define PAGE_SLOTS 64

struct mcp_page {
    char *cursor; /* NULL: a free slot */
    int kind;
    size_t scope;
    uint64_t rev;   /* views_rev when made (at /mcp) */
    uint64_t state; /* page_state() when made */
    char *text;
    size_t len;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* What a page of |kind| is made of besides its cursor. */
static uint64_t page_state(struct mx_mcp *m, enum mx_agg_kind kind, const struct mx_mcpup *scope)
{
    uint64_t h = 0xcbf29ce484222325ULL, v[3];
    if (scope) {
        v[0] = scope->gen[kind];
        v[1] = (uint64_t)(uintptr_t)scope->lists[kind];
        v[2] = scope->idx;
        return fnv(h, v, sizeof(v));
    }
    for (size_t i = 0; i < m->up_cnt; i++) {
        v[0] = cursor_source(m, i, kind);
        v[1] = m->ups[i]->gen[kind];
        v[2] = i;
        h = fnv(h, v, sizeof(v));
    }
    return h;
}

static void page_drop(struct mx_mcp *m, struct mcp_page *p)
{
    m->page_bytes -= p->len;
    free(p->cursor);
    free(p->text);
    memset(p, 0, sizeof(*p));
}

static void pages_clear(struct mx_mcp *m)
{
    for (size_t i = 0; m->pages && i < PAGE_SLOTS; i++) {
        if (m->pages[i].cursor)
            page_drop(m, &m->pages[i]);
    }
}

static size_t page_budget(const struct mx_mcp *m)
{
    size_t sum = 0;
    for (size_t i = 0; i < m->up_cnt; i++) {
        for (int k = 0; k < MX_AGG_KIND_CNT; k++)
            sum += m->ups[i]->list_bytes[k];
    }
    return 2 * sum + 64 * 1024;
}

bool mcp_list_page_text(struct mx_mcp *m, enum mx_agg_kind kind, const json_t *params,
                        const struct mx_mcpup *scope, struct mx_str *out, const char **why)
{
    json_t *cur = json_object_get(params, "cursor");
    const char *ctext = json_is_string(cur) ? json_string_value(cur) : "";
    size_t sidx = scope ? scope->idx + 1 : 0;
    if (m->pages == NULL)
        m->pages = mx_xcalloc(PAGE_SLOTS, sizeof(*m->pages));
    if (scope == NULL)
        (void)mcp_view(m, kind); /* rebuilt first when the lists changed */
    uint64_t state = page_state(m, kind, scope);
    uint64_t rev = scope ? 0 : m->views_rev;
    uint64_t key = fnv(fnv(fnv(0xcbf29ce484222325ULL, &sidx, sizeof(sidx)), &kind, sizeof(kind)),
                       ctext, strlen(ctext));
    struct mcp_page *p = &m->pages[key % PAGE_SLOTS];
    if (p->cursor && p->kind == (int)kind && p->scope == sidx && p->rev == rev &&
        p->state == state && (cur == NULL || json_is_string(cur)) &&
        strcmp(p->cursor, ctext) == 0) {
        *out = mx_str_make(p->text, p->len);
        return true;
    }
    json_t *result = mcp_list_page(m, kind, params, scope, why);
    if (result == NULL)
        return false;
    char *text = mx_rpc_dump(result);
    json_decref(result);
    size_t len = strlen(text);
    if (p->cursor)
        page_drop(m, p);
    if (m->page_bytes + len > page_budget(m))
        pages_clear(m);
    p->cursor = mx_xstrdup(ctext);
    p->kind = (int)kind;
    p->scope = sidx;
    p->rev = rev;
    p->state = state;
    p->text = text;
    p->len = len;
    m->page_bytes += len;
    *out = mx_str_make(text, len);
    return true;
}

static void on_sub_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                        void *data)
{
    (void)rpc;
    (void)resp;
    (void)fail;
    (void)data;
}

/* MCP 2025-06-18, Resources: the 2025 way to hear notifications/resources/updated. */
void mcp_up_task_watch(struct mx_mcpup *u, bool on, const char *up_id)
{
    static const struct mx_uprpc_cbs cbs = {NULL, on_sub_done, NULL};
    struct mx_uprpc *rpc;
    struct upctx *ctx = mcp_up_session(u, NULL);
    json_t *msg = json_pack(
        "{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", mcp_internal_id(u->m), "method",
        on ? MX_UP26_TASK_WATCH : MX_UP26_TASK_UNWATCH, "params", "taskId", up_id);
    u->m->ops->request(ctx->v.s, msg, (long)u->cfg->request_timeout_ms, &cbs, NULL, &rpc);
    json_decref(msg);
}

void mcp_up_subscribe(struct mx_mcpup *u, const char *method, const char *uri)
{
    static const struct mx_uprpc_cbs cbs = {NULL, on_sub_done, NULL};
    struct mx_uprpc *rpc;
    struct upctx *ctx = mcp_up_session(u, NULL);
    json_t *msg = json_pack("{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id",
                            mcp_internal_id(u->m), "method", method, "params", "uri", uri);
    u->m->ops->request(ctx->v.s, msg, (long)u->cfg->request_timeout_ms, &cbs, NULL, &rpc);
    json_decref(msg);
}

/* ---- health ---- */

json_t *mx_mcp_health(struct mx_mcp *m)
{
    json_t *ups = json_array();
    json_t *renamed = json_array();
    if (m == NULL)
        return json_object();
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        if (u->up->retired)
            continue;
        json_t *o = json_pack("{s:s, s:s, s:b}", "name", u->cfg->name, "state",
                              up_state_name(u->state), "listed", mcp_up_visible(u));
        for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
            if (u->lists[k])
                json_object_set_new(o, mx_agg_list_key((enum mx_agg_kind)k),
                                    json_integer((json_int_t)json_array_size(u->lists[k])));
        }
        /* what the status page shows: the revision the upstream answered
         * initialize with, and whether its lists are this run's or the
         * catalogue's from disk */
        const char *rev = json_string_value(json_object_get(u->init, "protocolVersion"));
        if (rev == NULL && u->env.era == MX_UPSESS_ERA_MODERN)
            rev = MX_REV_MODERN;
        json_object_set_new(o, "revision", rev ? json_string(rev) : json_null());
        json_object_set_new(o, "catalogue", json_string(u->from_catalogue ? "cached" : "fresh"));
        if (u->state == UPS_FAILED)
            json_object_set_new(o, "reason", json_string(u->fail.message));
        if (u->dropped)
            json_object_set_new(o, "notifications_dropped", json_integer((json_int_t)u->dropped));
        json_t *cut = json_object();
        for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
            if (u->cut[k][0])
                json_object_set_new(cut, mx_agg_list_key((enum mx_agg_kind)k),
                                    json_string(u->cut[k]));
        }
        if (json_object_size(cut))
            json_object_set_new(o, "lists_cut", cut);
        else
            json_decref(cut);
        json_array_append_new(ups, o);
    }
    for (int k = MX_AGG_TOOLS; k <= MX_AGG_PROMPTS; k++) {
        struct mx_agg_view *v = mcp_view(m, (enum mx_agg_kind)k);
        for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
            const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
            if (strcmp(e->key, e->orig) == 0)
                continue;
            json_array_append_new(renamed, json_pack("{s:s, s:s, s:s, s:s}", "kind",
                                                     k == MX_AGG_TOOLS ? "tool" : "prompt", "name",
                                                     e->key, "server", m->ups[e->src]->cfg->name,
                                                     "original", e->orig));
        }
    }
    return json_pack("{s:I, s:o, s:o}", "sessions", (json_int_t)mx_session_cnt(m->sessions),
                     "upstreams", ups, "renamed", renamed);
}
