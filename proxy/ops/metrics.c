/* SPDX-License-Identifier: MIT */
/*
 * Counters, histograms and their Prometheus text rendering (metrics.h).
 * Format: "Exposition formats", text format 0.0.4, of the Prometheus docs:
 * one # HELP and one # TYPE line per family, its samples together, label
 * values escaped, histogram buckets cumulative and ending with le="+Inf",
 * whose value equals _count.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "alloc.h"
#include "err.h"
#include "metrics.h"
#include "procstat.h"

/* Latency buckets, seconds. Loopback answers take about a millisecond, a
 * held request of a resuming sandbox up to 45 s (DESIGN.md, Wake-on-use). */
static const double upstream_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,      2.5,   5,    10,    30,   60,  120};
/* What mcplex adds is meant to stay well under a millisecond. */
static const double added_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   1};
static const double wake_bounds[] = {0.25, 0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120};

#define MAX_BOUNDS 16
#define RING_CAP   256

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(COUNT_OF(upstream_bounds) <= MAX_BOUNDS, "bucket table too long");
_Static_assert(COUNT_OF(added_bounds) <= MAX_BOUNDS, "bucket table too long");
_Static_assert(COUNT_OF(wake_bounds) <= MAX_BOUNDS, "bucket table too long");

/* The bounded label set: MCP methods (2025-03-26 .. 2026-07-28 revisions),
 * the two non-POST requests of Streamable HTTP, client responses, "other". */
static const char *const method_names[] = {
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "response",
    "GET",
    "DELETE",
    "other",
};
#define METHOD_CNT   COUNT_OF(method_names)
#define METHOD_OTHER (METHOD_CNT - 1)

static const char *const outcome_names[MX_METRICS_OUTCOME_CNT] = {
    "ok",      "error",        "auth_failed",     "unreachable",
    "timeout", "wake_timeout", "outcome_unknown", "cancelled"};

static const char *const wake_result_names[] = {"woke", "no_wake"};

struct hist {
    uint64_t n[MAX_BOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
    uint64_t cnt;
    double sum;
};

struct sample {
    double at; /* monotonic seconds */
    double s;
};

struct server {
    char *name;
    uint64_t calls[METHOD_CNT][MX_METRICS_OUTCOME_CNT];
    struct hist upstream[METHOD_CNT];
    struct hist added;
    struct hist wake[2];
    uint64_t wakes;
    uint64_t retries;
    uint64_t sent_bytes;
    uint64_t received_bytes;
    uint64_t dropped;             /* notifications naming a request the upstream was not sent */
    struct sample ring[RING_CAP]; /* recent ok latencies, for /health's p50 */
    size_t ring_next;
    size_t ring_len;
};

struct mx_metrics {
    double (*clock)(void);
    struct server **servers; /* pointers stay put when the array grows */
    size_t server_cnt;
};

const char *mx_metrics_outcome_name(enum mx_metrics_outcome o)
{
    if ((unsigned)o >= MX_METRICS_OUTCOME_CNT)
        return "error";
    return outcome_names[o];
}

enum mx_metrics_outcome mx_metrics_outcome_of(int err, const struct mx_ureq_info *info)
{
    if (info && info->wake_timeout)
        return MX_METRICS_WAKE_TIMEOUT;
    /* gone (410, or a call to an upstream that answered it): an HTTP error */
    if (info && info->gone)
        return MX_METRICS_ERROR;
    if (err == 0) {
        long st = info ? info->http_status : 0;
        if (st == 401 || st == 403)
            return MX_METRICS_AUTH_FAILED;
        return st >= 400 || st == 0 ? MX_METRICS_ERROR : MX_METRICS_OK;
    }
    if (err == MX_ETIMEDOUT)
        return MX_METRICS_TIMEOUT;
    /* The request may have run: mcplex did not repeat it (upcall.h). */
    if (info && info->body_sent)
        return MX_METRICS_OUTCOME_UNKNOWN;
    return MX_METRICS_UNREACHABLE;
}

static size_t method_index(const char *name)
{
    if (name == NULL)
        return METHOD_OTHER;
    for (size_t i = 0; i < METHOD_OTHER; i++) {
        if (strcmp(name, method_names[i]) == 0)
            return i;
    }
    return METHOD_OTHER;
}

enum mx_metrics_outcome mx_metrics_outcome_of_fail(const struct mx_upfail *f)
{
    static const struct {
        const char *reason;
        enum mx_metrics_outcome o;
    } map[] = {
        {"auth-failed", MX_METRICS_AUTH_FAILED}, {"unreachable", MX_METRICS_UNREACHABLE},
        {"retry-after", MX_METRICS_UNREACHABLE}, {"timed-out", MX_METRICS_TIMEOUT},
        {"not-awake", MX_METRICS_WAKE_TIMEOUT},  {"outcome-unknown", MX_METRICS_OUTCOME_UNKNOWN},
    };
    for (size_t i = 0; f->reason && i < COUNT_OF(map); i++) {
        if (strcmp(f->reason, map[i].reason) == 0)
            return map[i].o;
    }
    return MX_METRICS_ERROR;
}

const char *mx_metrics_method_label(const char *name)
{
    return method_names[method_index(name)];
}

double mx_metrics_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct mx_metrics *mx_metrics_new(double (*clock)(void))
{
    struct mx_metrics *m = mx_xcalloc(1, sizeof(*m));
    m->clock = clock ? clock : mx_metrics_now;
    return m;
}

void mx_metrics_free(struct mx_metrics *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->server_cnt; i++) {
        free(m->servers[i]->name);
        free(m->servers[i]);
    }
    free(m->servers);
    free(m);
}

size_t mx_metrics_server_slot(struct mx_metrics *m, const char *name)
{
    for (size_t i = 0; i < m->server_cnt; i++) {
        if (strcmp(m->servers[i]->name, name) == 0)
            return i;
    }
    m->servers = mx_xrealloc(m->servers, (m->server_cnt + 1) * sizeof(*m->servers));
    struct server *s = mx_xcalloc(1, sizeof(*s));
    s->name = mx_xstrdup(name);
    m->servers[m->server_cnt] = s;
    return m->server_cnt++;
}

static struct server *server_at(const struct mx_metrics *m, size_t slot)
{
    if (m == NULL || slot >= m->server_cnt)
        return NULL;
    return m->servers[slot];
}

static void hist_observe(struct hist *h, const double *bounds, size_t nb, double v)
{
    size_t i = 0;
    /* NaN would poison _sum for good; a clock step backwards is not a
     * negative latency. Neither is observed. */
    if (!(v >= 0.0))
        return;
    while (i < nb && v > bounds[i])
        i++;
    h->n[i]++;
    h->cnt++;
    h->sum += v;
}

static bool is_stream(size_t method)
{
    return strcmp(method_names[method], "GET") == 0 ||
           strcmp(method_names[method], "subscriptions/listen") == 0;
}

void mx_metrics_upstream_call(struct mx_metrics *m, size_t slot, const char *method,
                              enum mx_metrics_outcome outcome, double upstream_s, double added_s)
{
    struct server *s = server_at(m, slot);
    if (s == NULL)
        return;
    if ((unsigned)outcome >= MX_METRICS_OUTCOME_CNT)
        outcome = MX_METRICS_ERROR;
    size_t mi = method_index(method);
    s->calls[mi][outcome]++;
    if (is_stream(mi))
        return;
    hist_observe(&s->upstream[mi], upstream_bounds, COUNT_OF(upstream_bounds), upstream_s);
    hist_observe(&s->added, added_bounds, COUNT_OF(added_bounds), added_s);
    if (outcome == MX_METRICS_OK && upstream_s >= 0.0) {
        s->ring[s->ring_next].at = m->clock();
        s->ring[s->ring_next].s = upstream_s;
        s->ring_next = (s->ring_next + 1) % RING_CAP;
        if (s->ring_len < RING_CAP)
            s->ring_len++;
    }
}

void mx_metrics_upstream_retry(struct mx_metrics *m, size_t slot)
{
    struct server *s = server_at(m, slot);
    if (s)
        s->retries++;
}

void mx_metrics_upstream_dropped(struct mx_metrics *m, size_t slot)
{
    struct server *s = server_at(m, slot);
    if (s)
        s->dropped++;
}

void mx_metrics_upstream_bytes(struct mx_metrics *m, size_t slot, uint64_t sent, uint64_t received)
{
    struct server *s = server_at(m, slot);
    if (s == NULL)
        return;
    s->sent_bytes += sent;
    s->received_bytes += received;
}

void mx_metrics_wake_start(struct mx_metrics *m, size_t slot)
{
    struct server *s = server_at(m, slot);
    if (s)
        s->wakes++;
}

void mx_metrics_wake_end(struct mx_metrics *m, size_t slot, double duration_s,
                         enum mx_metrics_wake_result result)
{
    struct server *s = server_at(m, slot);
    if (s == NULL)
        return;
    hist_observe(&s->wake[result == MX_METRICS_WOKE ? 0 : 1], wake_bounds, COUNT_OF(wake_bounds),
                 duration_s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int mx_metrics_p50(const struct mx_metrics *m, size_t slot, double window_s, double *out_s)
{
    return mx_metrics_quantile(m, slot, window_s, 0.5, out_s);
}

int mx_metrics_quantile(const struct mx_metrics *m, size_t slot, double window_s, double q,
                        double *out_s)
{
    const struct server *s = server_at(m, slot);
    double v[RING_CAP];
    size_t n = 0;
    if (s == NULL)
        return MX_ENOTFOUND;
    double since = m->clock() - window_s;
    for (size_t i = 0; i < s->ring_len; i++) {
        if (s->ring[i].at >= since)
            v[n++] = s->ring[i].s;
    }
    if (n == 0)
        return MX_ENOTFOUND;
    qsort(v, n, sizeof(v[0]), cmp_double);
    /* nearest rank: the smallest value with at least q of the samples at or below it */
    size_t rank = (size_t)(q * (double)n);
    if ((double)rank < q * (double)n - 1e-9)
        rank++;
    *out_s = v[(rank ? rank : 1) - 1];
    return 0;
}

/* ---- rendering ---- */

/* Exposition format: in label values, backslash, double quote and line feed
 * are escaped as \\, \" and \n; everything else is taken as UTF-8. */
static int put_label_value(struct mx_buf *b, const char *v)
{
    int rc = 0;
    for (const char *p = v; *p && rc == 0; p++) {
        if (*p == '\\')
            rc = mx_buf_append(b, "\\\\", 2);
        else if (*p == '"')
            rc = mx_buf_append(b, "\\\"", 2);
        else if (*p == '\n')
            rc = mx_buf_append(b, "\\n", 2);
        else
            rc = mx_buf_append(b, p, 1);
    }
    return rc;
}

/* Up to three labels: pairs of name and value, a NULL name ends the list. */
struct labels {
    const char *k[3];
    const char *v[3];
};

static int put_labels(struct mx_buf *b, const struct labels *l, const char *le)
{
    int rc = 0;
    bool any = false;
    for (size_t i = 0; i < 3 && l && l->k[i] && rc == 0; i++) {
        rc |= mx_buf_printf(b, "%s%s=\"", any ? "," : "{", l->k[i]);
        rc |= put_label_value(b, l->v[i]);
        rc |= mx_buf_append(b, "\"", 1);
        any = true;
    }
    if (le && rc == 0) {
        rc |= mx_buf_printf(b, "%sle=\"%s\"", any ? "," : "{", le);
        any = true;
    }
    if (any && rc == 0)
        rc |= mx_buf_append(b, "}", 1);
    return rc ? MX_ELIMIT : 0;
}

static int family(struct mx_buf *b, const char *name, const char *type, const char *help)
{
    return mx_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int sample_u64(struct mx_buf *b, const char *name, const struct labels *l, uint64_t v)
{
    int rc = mx_buf_append_str(b, name);
    rc |= put_labels(b, l, NULL);
    rc |= mx_buf_printf(b, " %" PRIu64 "\n", v);
    return rc ? MX_ELIMIT : 0;
}

/* Whole numbers (a start time) in full, others to 12 significant digits:
 * microseconds for sums up to about 10^6 s. */
static int put_double(struct mx_buf *b, double v)
{
    if (v > -9e15 && v < 9e15 && v == (double)(int64_t)v)
        return mx_buf_printf(b, " %" PRId64 "\n", (int64_t)v);
    return mx_buf_printf(b, " %.12g\n", v);
}

static int sample_double(struct mx_buf *b, const char *name, const struct labels *l, double v)
{
    int rc = mx_buf_append_str(b, name);
    rc |= put_labels(b, l, NULL);
    rc |= put_double(b, v);
    return rc ? MX_ELIMIT : 0;
}

static int sample_hist(struct mx_buf *b, const char *name, const struct labels *l,
                       const struct hist *h, const double *bounds, size_t nb)
{
    char le[32];
    uint64_t cum = 0;
    int rc = 0;
    for (size_t i = 0; i <= nb && rc == 0; i++) {
        cum += h->n[i];
        if (i < nb)
            snprintf(le, sizeof(le), "%g", bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        rc |= mx_buf_printf(b, "%s_bucket", name);
        rc |= put_labels(b, l, le);
        rc |= mx_buf_printf(b, " %" PRIu64 "\n", cum);
    }
    rc |= mx_buf_printf(b, "%s_sum", name);
    rc |= put_labels(b, l, NULL);
    rc |= put_double(b, h->sum);
    rc |= mx_buf_printf(b, "%s_count", name);
    rc |= put_labels(b, l, NULL);
    rc |= mx_buf_printf(b, " %" PRIu64 "\n", h->cnt);
    return rc ? MX_ELIMIT : 0;
}

/* The standard process_* series (Prometheus client conventions). */
static int render_os(struct mx_buf *b, const struct mx_metrics_gauges *g)
{
    int rc = 0;
    if (g->proc == NULL)
        return 0;
    const struct mx_procstat ps = *g->proc;
    rc |= family(b, "process_cpu_seconds_total", "counter",
                 "Total user and system CPU time spent in seconds.");
    rc |= sample_double(b, "process_cpu_seconds_total", NULL, ps.cpu_seconds);
    rc |= family(b, "process_start_time_seconds", "gauge",
                 "Start time of the process since unix epoch in seconds.");
    rc |= sample_double(b, "process_start_time_seconds", NULL, g->start_time_s);
    if (ps.resident_bytes) {
        rc |= family(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        rc |= sample_u64(b, "process_resident_memory_bytes", NULL, ps.resident_bytes);
        rc |= family(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        rc |= sample_u64(b, "process_virtual_memory_bytes", NULL, ps.virtual_bytes);
    }
    if (ps.open_fds) {
        rc |= family(b, "process_open_fds", "gauge", "Number of open file descriptors.");
        rc |= sample_u64(b, "process_open_fds", NULL, ps.open_fds);
    }
    if (ps.max_fds) {
        rc |= family(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        rc |= sample_u64(b, "process_max_fds", NULL, ps.max_fds);
    }
    return rc;
}

static int render_process(struct mx_buf *b, const struct mx_metrics_gauges *g)
{
    struct labels ver = {{"version"}, {MX_VERSION}};
    int rc = family(b, "mcplex_build_info", "gauge", "Always 1; the version in a label.");
    rc |= sample_u64(b, "mcplex_build_info", &ver, 1);
    rc |= family(b, "mcplex_start_time_seconds", "gauge",
                 "When the gateway started, in seconds since the Unix epoch.");
    rc |= sample_double(b, "mcplex_start_time_seconds", NULL, g->start_time_s);
    rc |= render_os(b, g);
    rc |= family(b, "mcplex_client_connections", "gauge", "Open client connections.");
    rc |= sample_u64(b, "mcplex_client_connections", NULL, g->connections);
    rc |= family(b, "mcplex_inflight_requests", "gauge",
                 "Client requests to /mcp and /mcp/<server> not finished.");
    rc |= sample_u64(b, "mcplex_inflight_requests", NULL, g->inflight);
    rc |= family(b, "mcplex_guard_refusals_total", "counter",
                 "Requests refused for their Host, Origin or client token.");
    rc |= sample_u64(b, "mcplex_guard_refusals_total", NULL, g->refused);
    struct labels ok = {{"result"}, {"ok"}}, failed = {{"result"}, {"failed"}};
    rc |= family(b, "mcplex_config_reloads_total", "counter",
                 "Config reloads (SIGHUP, mcplex reload) applied, and refused for an error.");
    rc |= sample_u64(b, "mcplex_config_reloads_total", &ok, g->reloads_ok);
    rc |= sample_u64(b, "mcplex_config_reloads_total", &failed, g->reloads_failed);
    rc |= family(b, "mcplex_limit_refusals_total", "counter",
                 "Connections closed at accept and sessions refused, by [listen] limit.");
    struct labels lim = {{"limit"}, {"max_connections"}};
    rc |= sample_u64(b, "mcplex_limit_refusals_total", &lim, g->refused_connections);
    lim.v[0] = "max_connections_per_client";
    rc |= sample_u64(b, "mcplex_limit_refusals_total", &lim, g->refused_per_client);
    lim.v[0] = "max_sessions";
    rc |= sample_u64(b, "mcplex_limit_refusals_total", &lim, g->refused_sessions);
    if (g->sessions >= 0) {
        rc |= family(b, "mcplex_sessions", "gauge", "Open client sessions of /mcp.");
        rc |= sample_u64(b, "mcplex_sessions", NULL, (uint64_t)g->sessions);
    }
    return rc ? MX_ELIMIT : 0;
}

static int render_states(struct mx_buf *b, const struct mx_metrics_gauges *g)
{
    static const enum mx_upstream_state states[] = {MX_UPSTREAM_UNKNOWN,     MX_UPSTREAM_UP,
                                                    MX_UPSTREAM_WAKING,      MX_UPSTREAM_DOWN,
                                                    MX_UPSTREAM_AUTH_FAILED, MX_UPSTREAM_GONE};
    int rc = family(b, "mcplex_upstream_state", "gauge",
                    "1 for the state each upstream is in, 0 for the others.");
    for (size_t i = 0; i < g->up_cnt && rc == 0; i++) {
        const struct mx_upstream *u = g->ups[i];
        if (u->retired)
            continue;
        for (size_t k = 0; k < COUNT_OF(states); k++) {
            struct labels l = {{"server", "state"},
                               {u->cfg->name, mx_upstream_state_name(states[k])}};
            rc |= sample_u64(b, "mcplex_upstream_state", &l, u->state == states[k] ? 1 : 0);
        }
    }
    return rc ? MX_ELIMIT : 0;
}

static int render_calls(struct mx_buf *b, const struct mx_metrics *m)
{
    int rc = family(b, "mcplex_upstream_requests_total", "counter",
                    "Calls to each upstream by JSON-RPC method and outcome.");
    for (size_t i = 0; i < m->server_cnt && rc == 0; i++) {
        const struct server *s = m->servers[i];
        for (size_t mi = 0; mi < METHOD_CNT; mi++) {
            for (size_t o = 0; o < MX_METRICS_OUTCOME_CNT; o++) {
                if (s->calls[mi][o] == 0)
                    continue;
                struct labels l = {{"server", "method", "outcome"},
                                   {s->name, method_names[mi], outcome_names[o]}};
                rc |= sample_u64(b, "mcplex_upstream_requests_total", &l, s->calls[mi][o]);
            }
        }
    }
    rc |= family(b, "mcplex_upstream_request_duration_seconds", "histogram",
                 "From handing a call to the upstream layer to its end, waits for a wake "
                 "included; streams are not timed.");
    for (size_t i = 0; i < m->server_cnt && rc == 0; i++) {
        const struct server *s = m->servers[i];
        for (size_t mi = 0; mi < METHOD_CNT; mi++) {
            if (s->upstream[mi].cnt == 0)
                continue;
            struct labels l = {{"server", "method"}, {s->name, method_names[mi]}};
            rc |= sample_hist(b, "mcplex_upstream_request_duration_seconds", &l, &s->upstream[mi],
                              upstream_bounds, COUNT_OF(upstream_bounds));
        }
    }
    rc |= family(b, "mcplex_gateway_added_duration_seconds", "histogram",
                 "Time mcplex itself spent on a call: request complete to upstream call "
                 "started, plus upstream call done to response ended.");
    for (size_t i = 0; i < m->server_cnt && rc == 0; i++) {
        struct labels l = {{"server"}, {m->servers[i]->name}};
        rc |= sample_hist(b, "mcplex_gateway_added_duration_seconds", &l, &m->servers[i]->added,
                          added_bounds, COUNT_OF(added_bounds));
    }
    return rc ? MX_ELIMIT : 0;
}

static int render_upstream(struct mx_buf *b, const struct mx_metrics *m)
{
    static const struct {
        const char *name;
        const char *help;
        size_t off;
    } counters[] = {
        {"mcplex_upstream_wakes_total", "Wakes started (the upstream entered the waking state).",
         offsetof(struct server, wakes)},
        {"mcplex_upstream_retries_total",
         "Attempts that failed before reaching the sandbox and were sent again.",
         offsetof(struct server, retries)},
        {"mcplex_upstream_sent_bytes_total", "Request body bytes sent to the upstream.",
         offsetof(struct server, sent_bytes)},
        {"mcplex_upstream_received_bytes_total", "Response body bytes received from the upstream.",
         offsetof(struct server, received_bytes)},
        {"mcplex_upstream_notifications_dropped_total",
         "Notifications from the upstream dropped for naming no request of its own in flight "
         "(progress or a cancellation for another upstream's request, or for none).",
         offsetof(struct server, dropped)},
    };
    int rc = 0;
    for (size_t c = 0; c < COUNT_OF(counters) && rc == 0; c++) {
        rc |= family(b, counters[c].name, "counter", counters[c].help);
        for (size_t i = 0; i < m->server_cnt && rc == 0; i++) {
            const struct server *s = m->servers[i];
            uint64_t v;
            memcpy(&v, (const char *)s + counters[c].off, sizeof(v));
            struct labels l = {{"server"}, {s->name}};
            rc |= sample_u64(b, counters[c].name, &l, v);
        }
    }
    rc |= family(b, "mcplex_upstream_wake_duration_seconds", "histogram",
                 "How long wakes took, by how they ended.");
    for (size_t i = 0; i < m->server_cnt && rc == 0; i++) {
        for (size_t r = 0; r < 2; r++) {
            struct labels l = {{"server", "result"}, {m->servers[i]->name, wake_result_names[r]}};
            rc |= sample_hist(b, "mcplex_upstream_wake_duration_seconds", &l,
                              &m->servers[i]->wake[r], wake_bounds, COUNT_OF(wake_bounds));
        }
    }
    return rc ? MX_ELIMIT : 0;
}

int mx_metrics_render(const struct mx_metrics *m, const struct mx_metrics_gauges *g,
                      struct mx_buf *out)
{
    static const struct mx_metrics empty = {0};
    if (m == NULL)
        m = &empty;
    if (render_process(out, g) || render_states(out, g) || render_calls(out, m) ||
        render_upstream(out, m))
        return MX_ELIMIT;
    return 0;
}
