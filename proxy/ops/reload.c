/* SPDX-License-Identifier: MIT */
/*
 * Reload: a new config applied to the running gateway, upstream by
 * upstream. Slots: every upstream lives in a slot whose index is its name
 * in the aggregate's tables (id maps, per-client sessions, list cursors).
 * A slot whose server is unchanged keeps its sessions, connections and
 * config generation; a removed or changed one is retired: hidden from lists
 * and routing at once, its GET streams ended, and freed (its secrets wiped)
 * once the requests holding it have ended. A changed server gets a new slot
 * next to the retiring one. Freed slots are reused by later reloads.
 * Every slot's upstream reports to the gateway's metrics and trace through
 * the observer installed here (struct mx_upstream_obs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cursor.h"
#include "err.h"
#include "gateway.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "statuspage.h"
#include "trace.h"

_Static_assert(MX_GATEWAY_MAX_SLOTS <= MX_CURSOR_MAX_SOURCES, "a list cursor names every slot");

#define SUBSYS          "reload"
#define RETIRE_CHECK_S  0.25 /* how often retired slots are looked at */
#define RETIRE_NOTICE_S 60.0 /* a slot still busy after this is logged, once */

/* The upstream observer (upstream.h): what the upstream layer reports goes
 * to the gateway's metrics and trace. */
static void obs_retry(struct mx_upstream *u, void *data)
{
    (void)data;
    mx_metrics_upstream_retry(u->metrics, u->metrics_slot);
}

static void obs_bytes(struct mx_upstream *u, uint64_t sent, uint64_t received, void *data)
{
    (void)data;
    mx_metrics_upstream_bytes(u->metrics, u->metrics_slot, sent, received);
}

static void obs_wake_start(struct mx_upstream *u, void *data)
{
    struct mx_gateway *gw = data;
    mx_metrics_wake_start(u->metrics, u->metrics_slot);
    mx_statuspage_wake(gw->status, u, true, 0.0);
}

static void obs_wake_end(struct mx_upstream *u, double duration_s, bool woke, void *data)
{
    struct mx_gateway *gw = data;
    mx_metrics_wake_end(u->metrics, u->metrics_slot, duration_s,
                        woke ? MX_METRICS_WOKE : MX_METRICS_NO_WAKE);
    mx_statuspage_wake(gw->status, u, false, duration_s);
}

static void obs_traced(struct mx_upstream *u, const char *dir, const char *session,
                       struct mx_str msg, void *data)
{
    struct mx_gateway *gw = data;
    mx_trace_msg(gw->trace, dir, u->cfg->name, session, msg);
}

static const struct mx_upstream_obs gateway_obs = {obs_retry, obs_bytes, obs_wake_start,
                                                   obs_wake_end, obs_traced};

/* A slot that was freed and may take a new upstream. */
static bool slot_free(const struct mx_upstream *u)
{
    return u->retired && u->gen == NULL;
}

struct mx_upstream *mx_gateway_slot_add(struct mx_gateway *gw, const struct mx_server_cfg *cfg,
                                        struct mx_cfg_gen *gen)
{
    size_t idx = gw->upstream_cnt;
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        if (slot_free(gw->upstreams[i])) {
            idx = i;
            break;
        }
    }
    if (idx == gw->upstream_cnt) {
        if (idx >= MX_GATEWAY_MAX_SLOTS)
            return NULL;
        gw->upstreams = mx_xrealloc(gw->upstreams, (idx + 1) * sizeof(*gw->upstreams));
        gw->upstreams[idx] = mx_xcalloc(1, sizeof(*gw->upstreams[idx]));
        gw->upstream_cnt++;
    }
    struct mx_upstream *u = gw->upstreams[idx];
    mx_upstream_init(u, cfg);
    u->idx = idx;
    u->gen = gen;
    gen->users++;
    u->metrics = gw->metrics;
    u->metrics_slot = mx_metrics_server_slot(gw->metrics, cfg->name);
    u->obs = &gateway_obs;
    u->obs_data = gw;
    return u;
}

/* Free generation |g| when nothing uses it any more. */
static void gen_put(struct mx_gateway *gw, struct mx_cfg_gen *g)
{
    if (g->users > 0 || g->cfg == gw->cfg)
        return;
    for (struct mx_cfg_gen **pp = &gw->gens; *pp; pp = &(*pp)->next) {
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    }
    mx_config_free(g->cfg); /* wipes what secrets are left */
    free(g);
}

/* The retired slot |u| has no request left: free it. */
static void slot_finish(struct mx_gateway *gw, struct mx_upstream *u)
{
    mx_log_info(SUBSYS, "up:%s retired: its sessions are closed", u->cfg->name);
    mx_mcp_slot_gone(gw->mcp, u->idx);
    mx_upstream_clear(u);
    struct mx_cfg_gen *g = u->gen;
    /* the server's secrets go now, even if its generation lives on for
     * upstreams that did not change */
    for (size_t i = 0; i < g->cfg->server_cnt; i++) {
        if (&g->cfg->servers[i] == u->cfg)
            mx_server_cfg_wipe_secrets(&g->cfg->servers[i]);
    }
    u->cfg = &mx_upstream_gone_cfg;
    u->gen = NULL;
    g->users--;
    gen_put(gw, g);
}

static void retire_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_gateway *gw = mx_container_of(w, struct mx_gateway, retire_timer);
    size_t busy = 0;
    (void)revents;
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        struct mx_upstream *u = gw->upstreams[i];
        if (!u->retired || u->gen == NULL)
            continue;
        if (u->refs == 0 && u->inflight == 0 && u->q_head == NULL) {
            slot_finish(gw, u);
            continue;
        }
        busy++;
        if (!u->retire_noted && ev_now(loop) - u->retired_at > RETIRE_NOTICE_S) {
            u->retire_noted = true;
            mx_log_warn(SUBSYS, "up:%s left the config %.0f s ago and still has %zu requests",
                        u->cfg->name, RETIRE_NOTICE_S, u->refs);
        }
    }
    if (busy == 0)
        ev_timer_stop(loop, w);
}

static void slot_retire(struct mx_gateway *gw, struct mx_upstream *u, const char *why)
{
    mx_log_info(SUBSYS, "up:%s %s: retiring it once its %zu requests end", u->cfg->name, why,
                u->refs);
    u->retired = true;
    u->retired_at = ev_now(gw->loop);
    mx_mcp_slot_retired(gw->mcp, u->idx);
    if (!ev_is_active(&gw->retire_timer)) {
        ev_timer_init(&gw->retire_timer, retire_cb, 0.0, RETIRE_CHECK_S);
        ev_timer_start(gw->loop, &gw->retire_timer);
    }
}

static bool str_differs(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a != b;
    return strcmp(a, b) != 0;
}

/*
 * Whether the running |u| is what the new config's |n| asks for. A
 * credential its refresh command renewed lives in the upstream, not in
 * the config: a reload whose `cmd:` now prints that value (or still
 * prints the old one) leaves the server unchanged and the upstream keeps
 * the renewed credential, its sessions and its connections. A value that
 * is neither is a new credential: the server changed.
 */
static bool server_same(const struct mx_upstream *u, const struct mx_server_cfg *n)
{
    return mx_server_cfg_same_keys(u->cfg, n) &&
           (mx_secret_same(u->cfg->secret, n->secret) ||
            (u->secret && mx_secret_same(u->secret, n->secret)));
}

/* [listen] and [proxy] keys a running gateway cannot take: say so. */
static void warn_restart_keys(const struct mx_config *old, const struct mx_config *cfg)
{
    const char *keys[6];
    size_t n = 0;
    if (str_differs(old->listen.address, cfg->listen.address))
        keys[n++] = "[listen] address";
    if (old->listen.tls != cfg->listen.tls)
        keys[n++] = "[listen] tls";
    if (str_differs(old->listen.cert, cfg->listen.cert) ||
        str_differs(old->listen.key, cfg->listen.key))
        keys[n++] = "[listen] cert/key";
    if (str_differs(old->proxy.trace, cfg->proxy.trace))
        keys[n++] = "[proxy] trace";
    if (old->listen.max_body != cfg->listen.max_body ||
        old->listen.max_header != cfg->listen.max_header ||
        old->listen.max_connections != cfg->listen.max_connections ||
        old->listen.header_timeout_ms != cfg->listen.header_timeout_ms ||
        old->listen.idle_timeout_ms != cfg->listen.idle_timeout_ms)
        keys[n++] = "[listen] limits";
    for (size_t i = 0; i < n; i++)
        mx_log_warn(SUBSYS, "%s changed: it takes effect at the next restart", keys[i]);
}

/* Slots the reload needs beyond those it frees or reuses; 0 when it fits. */
static size_t slots_short(const struct mx_gateway *gw, const struct mx_config *cfg)
{
    size_t in_use = 0, keep = 0;
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        const struct mx_upstream *u = gw->upstreams[i];
        if (slot_free(u))
            continue;
        in_use++; /* live, or retiring: held until its requests end */
        const struct mx_server_cfg *n = u->retired ? NULL : mx_config_server(cfg, u->cfg->name);
        if (n && server_same(u, n))
            keep++;
    }
    size_t need = in_use + (cfg->server_cnt - keep);
    return need > MX_GATEWAY_MAX_SLOTS ? need - MX_GATEWAY_MAX_SLOTS : 0;
}

void mx_gateway_reload_refused(struct mx_gateway *gw, const char *why)
{
    gw->reload.failed++;
    gw->reload.at = time(NULL);
    snprintf(gw->reload.error, sizeof(gw->reload.error), "%s", why);
    mx_log_err(SUBSYS, "reload refused, the running config keeps serving: %s", why);
}

int mx_gateway_reload(struct mx_gateway *gw, struct mx_config *cfg, char *err, size_t cap)
{
    size_t short_by = slots_short(gw, cfg);
    if (short_by) {
        snprintf(err, cap,
                 "%zu more upstream slots than the %d a running mcplex has are needed while "
                 "changed servers finish their requests; try again when they did, or restart",
                 short_by, MX_GATEWAY_MAX_SLOTS);
        mx_gateway_reload_refused(gw, err);
        mx_config_free(cfg);
        return MX_ELIMIT;
    }
    struct mx_config *old = gw->cfg;
    struct mx_cfg_gen *gen = mx_xcalloc(1, sizeof(*gen));
    gen->cfg = cfg;
    gen->next = gw->gens;
    gw->gens = gen;
    warn_restart_keys(old, cfg);

    size_t kept = 0, retired = 0, added = 0;
    size_t live_cnt = gw->upstream_cnt;
    bool *keep = mx_xcalloc(cfg->server_cnt ? cfg->server_cnt : 1, sizeof(*keep));
    for (size_t i = 0; i < live_cnt; i++) {
        struct mx_upstream *u = gw->upstreams[i];
        if (u->retired)
            continue;
        const struct mx_server_cfg *n = mx_config_server(cfg, u->cfg->name);
        if (n && server_same(u, n)) {
            keep[n - cfg->servers] = true;
            kept++;
            continue;
        }
        slot_retire(gw, u, n ? "changed" : "was removed");
        retired++;
    }
    /* The new config is current before the new slots come, so that what
     * they read through the gateway is already the new one. */
    gw->cfg = cfg;
    gw->guard.client_token = cfg->listen.client_token;
    gw->guard.allowed_origins = (const char *const *)cfg->listen.allowed_origins.v;
    gw->guard.allowed_origin_cnt = cfg->listen.allowed_origins.cnt;
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        if (keep[i])
            continue;
        struct mx_upstream *u = mx_gateway_slot_add(gw, &cfg->servers[i], gen);
        MX_ASSERT(u != NULL); /* slots_short() made room */
        mx_mcp_slot_added(gw->mcp, u);
        mx_log_info(SUBSYS, "up:%s joined", cfg->servers[i].name);
        added++;
    }
    free(keep);
    /* the old client token is no longer checked: wipe it now, even if its
     * generation lives on for upstreams that did not change */
    if (old->listen.client_token != cfg->listen.client_token) {
        mx_secret_free(old->listen.client_token);
        old->listen.client_token = NULL;
    }
    mx_mcp_reloaded(gw->mcp, cfg);
    /* the generation before this one loses its "current" hold */
    for (struct mx_cfg_gen *g = gw->gens; g; g = g->next) {
        if (g->cfg == old) {
            gen_put(gw, g);
            break;
        }
    }
    gw->reload.ok++;
    gw->reload.at = time(NULL);
    gw->reload.error[0] = '\0';
    mx_log_info(SUBSYS, "config %s applied: %zu upstreams unchanged, %zu joined, %zu retiring",
                cfg->path, kept, added, retired);
    return 0;
}
