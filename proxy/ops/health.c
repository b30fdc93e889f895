/* SPDX-License-Identifier: MIT */
/*
 * The read-only endpoints: GET /health (states and counts, never a secret,
 * not even a reference) and GET /metrics (what metrics.c counted, with the
 * gauges read from the gateway when it is asked for).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "callring.h"
#include "gateway.h"
#include "mcp.h"
#include "metrics.h"
#include "procstat.h"
#include "statuspage.h"
#include "upsess.h"

static void iso_time(time_t t, char *out, size_t cap)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The upstream's last error as the upstream layer classified it, or null:
 * {"class", "message" ("unreachable: connection refused at ..."), "at",
 * "age_s"}. Its words name hosts, ports and servers, never a secret nor
 * the URL's userinfo, path or query (upstream.h). */
static json_t *last_error(const struct mx_upstream *u, time_t now)
{
    char text[256], at[32];
    if (u->fault == MX_UPSTREAM_FAULT_NONE)
        return json_null();
    mx_upstream_fault_text(u, text, sizeof(text));
    iso_time(u->fault_at, at, sizeof(at));
    return json_pack("{s:s, s:s, s:s, s:I}", "class", mx_upstream_fault_name(u->fault), "message",
                     text, "at", at, "age_s",
                     (json_int_t)(now > u->fault_at ? now - u->fault_at : 0));
}

json_t *mx_health_json(struct mx_gateway *gw)
{
    json_t *ups = json_array();
    char since[32];
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        const struct mx_upstream *u = gw->upstreams[i];
        if (u->retired)
            continue;
        iso_time(u->since, since, sizeof(since));
        json_t *uo =
            json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "name", u->cfg->name, "host", u->host,
                      "state", mx_upstream_state_name(u->state), "since", since, "requests",
                      (json_int_t)u->requests, "failures", (json_int_t)u->failures);
        json_object_set_new(uo, "last_error", last_error(u, time(NULL)));
        /* for `mcplex status`: wakes and the median of the last minute (metrics.h) */
        double p50;
        json_object_set_new(uo, "wakes", json_integer((json_int_t)u->wakes));
        json_object_set_new(uo, "p50_ms_1m",
                            mx_metrics_p50(u->metrics, u->metrics_slot, 60.0, &p50) == 0
                                ? json_real(p50 * 1000.0)
                                : json_null());
        /* idle_close: what mcplex holds open to it, since when, and when it
         * last closed everything for idleness (uclient.h) */
        struct mx_upool_info pi;
        mx_upool_info(u->pool, &pi);
        char t[32];
        json_object_set_new(uo, "held",
                            json_pack("{s:I, s:I}", "connections", (json_int_t)pi.conns, "streams",
                                      (json_int_t)pi.streams));
        if (pi.held_since)
            iso_time(pi.held_since, t, sizeof(t));
        json_object_set_new(uo, "held_since", pi.held_since ? json_string(t) : json_null());
        if (pi.idle_closed)
            iso_time(pi.idle_closed, t, sizeof(t));
        json_object_set_new(uo, "idle_closed_at", pi.idle_closed ? json_string(t) : json_null());
        json_array_append_new(ups, uo);
    }
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:o}", "status", "ok", "version",
                          MX_VERSION, "uptime_s", (json_int_t)(time(NULL) - gw->started),
                          "connections", (json_int_t)mx_httpd_conn_cnt(gw->httpd), "inflight",
                          (json_int_t)mx_gateway_inflight(gw), "refused", (json_int_t)gw->refused,
                          "upstreams", ups);
    /* pid: `mcplex reload` signals it; reload: what the last one did */
    json_object_set_new(o, "pid", json_integer((json_int_t)getpid()));
    char at[32] = "";
    if (gw->reload.at)
        iso_time(gw->reload.at, at, sizeof(at));
    json_object_set_new(o, "reload",
                        json_pack("{s:I, s:I, s:s?, s:s?}", "ok", (json_int_t)gw->reload.ok,
                                  "failed", (json_int_t)gw->reload.failed, "at",
                                  gw->reload.at ? at : NULL, "error",
                                  gw->reload.error[0] ? gw->reload.error : NULL));
    json_object_set_new(o, "listen",
                        json_pack("{s:s, s:i, s:b}", "address", gw->cfg->listen.address, "port",
                                  gw->port, "tls", gw->cfg->listen.tls));
    /* what the [listen] limits refused since start */
    json_object_set_new(o, "limits",
                        json_pack("{s:I, s:I, s:I}", "max_connections",
                                  (json_int_t)mx_httpd_refused_cnt(gw->httpd),
                                  "max_connections_per_client",
                                  (json_int_t)mx_httpd_refused_per_client_cnt(gw->httpd),
                                  "max_sessions", (json_int_t)mx_mcp_sessions_refused(gw->mcp)));
    /* the merged /mcp endpoint: sessions, per-upstream lists, renamed names */
    json_object_set_new(o, "mcp", mx_mcp_health(gw->mcp));
    return o;
}

void mx_health_serve(struct mx_gateway *gw, struct mx_req *req)
{
    json_t *o = mx_health_json(gw);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    struct mx_hdr_out h[] = {{"Cache-Control", "no-store"}};
    mx_req_respond(req, 200, h, 1, "application/json", body, strlen(body));
    free(body);
}

/* ---- the status page's facts (statuspage.h) ---- */

#define P_WINDOW_S 300.0 /* the page's p50 and p99: the last five minutes */

static const json_t *mcp_entry(const json_t *health, const char *name)
{
    const json_t *ups = json_object_get(json_object_get(health, "mcp"), "upstreams"), *u;
    size_t i;
    json_array_foreach(ups, i, u)
    {
        const char *n = json_string_value(json_object_get(u, "name"));
        if (n && strcmp(n, name) == 0)
            return u;
    }
    return NULL;
}

static json_t *count_of(const json_t *e, const char *key)
{
    json_t *v = json_object_get(e, key);
    return json_is_integer(v) ? json_incref(v) : json_null();
}

static json_t *quantile_ms(const struct mx_upstream *u, double q)
{
    double v;
    return mx_metrics_quantile(u->metrics, u->metrics_slot, P_WINDOW_S, q, &v) == 0
               ? mx_callring_ms(v)
               : json_null();
}

/* One upstream row: what /health says of it, with the page's extras. */
static json_t *page_upstream(struct mx_gateway *gw, const struct mx_upstream *u, const json_t *hu,
                             const json_t *health)
{
    const json_t *e = mcp_entry(health, u->cfg->name);
    time_t wake_at;
    double wake_s;
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:I, s:I}", "name", u->cfg->name, "state",
                  mx_upstream_state_name(u->state), "transport", mx_upsess_transport_label(u->cfg),
                  "calls", (json_int_t)u->requests, "errors", (json_int_t)u->failures);
    json_object_set(o, "since", json_object_get(hu, "since"));
    const json_t *le = json_object_get(hu, "last_error");
    json_object_set(o, "last_error",
                    json_is_object(le) ? json_object_get(le, "message") : json_null());
    json_object_set(o, "revision", e ? json_object_get(e, "revision") : json_null());
    json_object_set(o, "catalogue", e ? json_object_get(e, "catalogue") : json_null());
    json_object_set_new(o, "tools", count_of(e, "tools"));
    json_object_set_new(o, "prompts", count_of(e, "prompts"));
    json_object_set_new(o, "resources", count_of(e, "resources"));
    json_object_set_new(o, "p50_ms", quantile_ms(u, 0.5));
    json_object_set_new(o, "p99_ms", quantile_ms(u, 0.99));
    mx_statuspage_wake_last(gw->status, u->idx, &wake_at, &wake_s);
    char at[32];
    if (wake_at)
        iso_time(wake_at, at, sizeof(at));
    json_object_set_new(o, "last_wake_at", wake_at ? json_string(at) : json_null());
    json_object_set_new(o, "last_wake_ms", wake_at ? mx_callring_ms(wake_s) : json_null());
    return o;
}

json_t *mx_health_page_state(void *data)
{
    struct mx_gateway *gw = data;
    json_t *health = mx_health_json(gw);
    json_t *ups = json_array();
    const json_t *hups = json_object_get(health, "upstreams");
    size_t hi = 0;
    /* /health lists the live slots in slot order too */
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        const struct mx_upstream *u = gw->upstreams[i];
        if (u->retired)
            continue;
        json_array_append_new(ups, page_upstream(gw, u, json_array_get(hups, hi++), health));
    }
    json_t *o = json_pack("{s:s, s:O, s:o, s:O, s:O, s:O}", "version", MX_VERSION, "uptime_s",
                          json_object_get(health, "uptime_s"), "upstreams", ups, "renamed",
                          json_object_get(json_object_get(health, "mcp"), "renamed"), "inflight",
                          json_object_get(health, "inflight"), "refused",
                          json_object_get(health, "refused"));
    json_object_set_new(o, "sessions",
                        json_pack("{s:I}", "legacy", (json_int_t)mx_mcp_session_cnt(gw->mcp)));
    json_decref(health);
    return o;
}

#define METRICS_BODY_CAP (8 * 1024 * 1024)

void mx_metrics_serve(struct mx_gateway *gw, struct mx_req *req)
{
    struct mx_metrics_gauges g = {0};
    struct mx_buf b;

    g.start_time_s = (double)gw->started;
    g.connections = mx_httpd_conn_cnt(gw->httpd);
    g.inflight = mx_gateway_inflight(gw);
    g.refused = gw->refused;
    g.refused_connections = mx_httpd_refused_cnt(gw->httpd);
    g.refused_per_client = mx_httpd_refused_per_client_cnt(gw->httpd);
    g.refused_sessions = mx_mcp_sessions_refused(gw->mcp);
    g.sessions = -1;
    g.ups = gw->upstreams;
    g.up_cnt = gw->upstream_cnt;
    g.reloads_ok = gw->reload.ok;
    g.reloads_failed = gw->reload.failed;
    g.sessions = (long long)mx_mcp_session_cnt(gw->mcp);
    struct mx_procstat ps;
    if (mx_procstat_read(&ps) == 0)
        g.proc = &ps;

    mx_buf_init(&b, METRICS_BODY_CAP);
    if (mx_metrics_render(gw->metrics, &g, &b) != 0) {
        mx_buf_clear(&b);
        mx_gateway_error(req, 500, "metrics exceed their size cap");
        return;
    }
    struct mx_hdr_out h[] = {{"Cache-Control", "no-store"}};
    mx_req_respond(req, 200, h, 1, "text/plain; version=0.0.4; charset=utf-8", mx_buf_data(&b),
                   mx_buf_len(&b));
    mx_buf_clear(&b);
}
