/* SPDX-License-Identifier: MIT */
/* The bench report as one HTML page (benchreport.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "benchplot.h"
#include "benchreport.h"
#include "err.h"
#include "html.h"

static const char *const SIDE[2] = {"direct", "gateway"};

static const char STYLE[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1rem 2rem;max-width:60rem}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "th,td{text-align:left;padding:.2rem .6rem;border-bottom:1px solid #ccc}"
    "svg{display:block;margin:.4rem 0 1.2rem;font:12px system-ui,sans-serif}"
    "svg .t{font-weight:600;font-size:13px}svg .axis line{stroke:#ddd}"
    "svg .axis text{fill:#555}";

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank |pct| of |cnt| samples; false without samples. */
static bool pct(const int64_t *us, size_t cnt, double p, int64_t *out)
{
    if (cnt == 0)
        return false;
    int64_t *v = mx_xmalloc(cnt * sizeof(*v));
    memcpy(v, us, cnt * sizeof(*v));
    qsort(v, cnt, sizeof(*v), cmp_i64);
    size_t rank = (size_t)(p / 100.0 * (double)cnt);
    if ((double)rank < p / 100.0 * (double)cnt)
        rank++;
    *out = v[(rank ? rank : 1) - 1];
    free(v);
    return true;
}

static int put_ms(struct mx_buf *b, int64_t us)
{
    return mx_buf_printf(b, "%.3f ms", (double)us / 1000.0);
}

static int title_of(char *out, size_t cap, const struct mx_benchreport_row *w)
{
    return snprintf(out, cap, "%s · %s · concurrency %zu", w->server, w->measure, w->conc);
}

static int cdfs(struct mx_buf *b, const struct mx_benchreport *r)
{
    int rc =
        mx_buf_append_str(b, "<h2>Latency distribution, direct and through the gateway</h2>\n");
    for (size_t i = 0; i < r->cnt && rc == 0; i++) {
        const struct mx_benchreport_row *w = &r->rows[i];
        struct mx_plot_series s[2];
        size_t n = 0;
        char title[256];
        if (w->wake)
            continue;
        for (int k = 0; k < 2; k++) {
            if (w->cnt[k])
                s[n++] = (struct mx_plot_series){SIDE[k], w->us[k], w->cnt[k]};
        }
        if (n == 0)
            continue;
        title_of(title, sizeof(title), w);
        rc |= mx_plot_cdf_svg(b, title, s, n);
    }
    return rc;
}

static int added(struct mx_buf *b, const struct mx_benchreport *r)
{
    struct mx_plot_bar *bars = mx_xcalloc(2 * r->cnt + 1, sizeof(*bars));
    char(*labels)[256] = mx_xcalloc(r->cnt + 1, sizeof(*labels));
    size_t nb = 0;
    int rc = mx_buf_append_str(b, "<h2>What the gateway added</h2>\n<table>\n<tr><th>server</th>"
                                  "<th>measure</th><th>c</th><th>direct p50</th><th>gateway "
                                  "p50</th><th>added p50</th><th>added p99</th></tr>\n");
    for (size_t i = 0; i < r->cnt && rc == 0; i++) {
        const struct mx_benchreport_row *w = &r->rows[i];
        int64_t d50, g50, d99 = 0, g99 = 0;
        if (w->wake || !pct(w->us[0], w->cnt[0], 50, &d50) || !pct(w->us[1], w->cnt[1], 50, &g50))
            continue;
        pct(w->us[0], w->cnt[0], 99, &d99);
        pct(w->us[1], w->cnt[1], 99, &g99);
        rc |= mx_buf_append_str(b, "<tr><td>");
        rc |= mx_html_escape_cstr(b, w->server);
        rc |= mx_buf_append_str(b, "</td><td>");
        rc |= mx_html_escape_cstr(b, w->measure);
        rc |= mx_buf_printf(b, "</td><td>%zu</td><td>", w->conc);
        rc |= put_ms(b, d50);
        rc |= mx_buf_append_str(b, "</td><td>");
        rc |= put_ms(b, g50);
        rc |= mx_buf_append_str(b, "</td><td>");
        rc |= put_ms(b, g50 - d50);
        rc |= mx_buf_append_str(b, "</td><td>");
        rc |= put_ms(b, g99 - d99);
        rc |= mx_buf_append_str(b, "</td></tr>\n");
        snprintf(labels[i], sizeof(labels[i]), "%s %s c=%zu", w->server, w->measure, w->conc);
        bars[nb++] = (struct mx_plot_bar){labels[i], "added p50", 0.0, (double)(g50 - d50) / 1e3};
        bars[nb++] = (struct mx_plot_bar){labels[i], "added p99", 0.0, (double)(g99 - d99) / 1e3};
    }
    rc |= mx_buf_append_str(b, "</table>\n");
    if (nb)
        rc |= mx_plot_bars_svg(b, "bars", "Added latency (gateway minus direct)", bars, nb);
    free(bars);
    free(labels);
    return rc;
}

/* Each wake round in the order it ran, one after the other on one axis. */
static int wakes(struct mx_buf *b, const struct mx_benchreport *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->cnt && rc == 0; i++) {
        const struct mx_benchreport_row *w = &r->rows[i];
        if (!w->wake)
            continue;
        size_t rounds = w->cnt[0] > w->cnt[1] ? w->cnt[0] : w->cnt[1];
        struct mx_plot_bar *bars = mx_xcalloc(2 * rounds + 1, sizeof(*bars));
        char(*labels)[64] = mx_xcalloc(2 * rounds + 1, sizeof(*labels));
        size_t nb = 0;
        double at = 0.0;
        for (size_t k = 0; k < rounds; k++) {
            for (int s = 0; s < 2; s++) {
                if (k >= w->cnt[s])
                    continue;
                double ms = (double)w->us[s][k] / 1e3;
                snprintf(labels[nb], sizeof(labels[nb]), "round %zu, %s", k + 1, SIDE[s]);
                bars[nb] = (struct mx_plot_bar){labels[nb], SIDE[s], at, ms};
                nb++;
                at += ms;
            }
        }
        char title[256];
        snprintf(title, sizeof(title), "Wake timeline: %s · %s (each round from a pause)",
                 w->server, w->measure);
        if (rc == 0 && nb == 0)
            rc |= mx_buf_append_str(b, "<p>No wake round succeeded.</p>\n");
        else
            rc |= mx_plot_bars_svg(b, "timeline", title, bars, nb);
        free(bars);
        free(labels);
    }
    return rc;
}

int mx_benchreport_html(struct mx_buf *b, const struct mx_benchreport *r)
{
    bool any_wake = false;
    for (size_t i = 0; i < r->cnt; i++)
        any_wake |= r->rows[i].wake;
    int rc = mx_buf_append_str(b, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" "
                                  "lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                                  "<title>mcplex bench</title>\n<style>");
    rc |= mx_buf_append_str(b, STYLE);
    rc |= mx_buf_append_str(b, "</style>\n</head>\n<body>\n<h1>mcplex bench</h1>\n<p>mcplex ");
    rc |= mx_html_escape_cstr(b, r->version);
    rc |= mx_buf_append_str(b, ", gateway ");
    rc |= mx_html_escape_cstr(b, r->gateway);
    rc |= mx_buf_append_str(b, r->endpoint ? " at " : "");
    rc |= mx_html_escape_cstr(b, r->endpoint);
    rc |= mx_buf_printf(b, "; %zu requests per row, concurrency %zu", r->n, r->conc);
    if (r->call) {
        rc |= mx_buf_append_str(b, "; tools/call of ");
        rc |= mx_html_escape_cstr(b, r->call);
    }
    if (r->when) {
        rc |= mx_buf_append_str(b, "; ");
        rc |= mx_html_escape_cstr(b, r->when);
    }
    rc |= mx_buf_append_str(b, ".</p>\n");
    rc |= cdfs(b, r);
    rc |= added(b, r);
    if (any_wake) {
        rc |= mx_buf_append_str(b, "<h2>Wakes</h2>\n");
        rc |= wakes(b, r);
    }
    rc |= mx_buf_append_str(b, "</body>\n</html>\n");
    return rc ? MX_ELIMIT : 0;
}
