/* SPDX-License-Identifier: MIT */
/* SVG plots for the bench report (benchplot.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "benchplot.h"
#include "html.h"

#define W          720.0
#define PAD_L      60.0
#define PAD_R      170.0 /* the legend */
#define PAD_T      34.0
#define PAD_B      42.0
#define CDF_H      300.0
#define BAR_ROW    22.0
#define BAR_LABEL  220.0
#define MAX_POINTS 400 /* steps drawn per curve; more samples are thinned */

static const char *const palette[] = {"#0969da", "#cf222e", "#1a7f37",
                                      "#9a6700", "#8250df", "#bf3989"};
#define PALETTE_CNT (sizeof(palette) / sizeof(palette[0]))

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* "1 ms", "0.1 ms", "10 s" for a decade tick. */
static int put_decade(struct mx_buf *b, int e)
{
    double ms = pow(10.0, e);
    if (ms >= 1000.0)
        return mx_buf_printf(b, "%g s", ms / 1000.0);
    return mx_buf_printf(b, "%g ms", ms);
}

static int header(struct mx_buf *b, const char *kind, const char *title, double h)
{
    int rc = mx_buf_printf(b,
                           "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\" width=\"%.0f\" "
                           "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n<title>",
                           kind, W, h, W, h);
    rc |= mx_html_escape_cstr(b, title);
    rc |= mx_buf_append_str(b, "</title>\n<text x=\"8\" y=\"20\" class=\"t\">");
    rc |= mx_html_escape_cstr(b, title);
    rc |= mx_buf_append_str(b, "</text>\n");
    return rc;
}

static int legend(struct mx_buf *b, size_t i, const char *label)
{
    double y = PAD_T + 10.0 + 20.0 * (double)i;
    int rc = mx_buf_printf(b,
                           "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" fill=\"%s\"/>"
                           "<text x=\"%.1f\" y=\"%.1f\">",
                           W - PAD_R + 16.0, y - 4.0, palette[i % PALETTE_CNT], W - PAD_R + 36.0,
                           y + 1.0);
    rc |= mx_html_escape_cstr(b, label);
    rc |= mx_buf_append_str(b, "</text>\n");
    return rc;
}

int mx_plot_cdf_svg(struct mx_buf *b, const char *title, const struct mx_plot_series *s, size_t cnt)
{
    double lo = INFINITY, hi = -INFINITY;
    int rc = header(b, "cdf", title, CDF_H);
    for (size_t i = 0; i < cnt; i++) {
        for (size_t k = 0; k < s[i].cnt; k++) {
            double ms = (double)(s[i].us[k] > 10 ? s[i].us[k] : 10) / 1000.0;
            lo = ms < lo ? ms : lo;
            hi = ms > hi ? ms : hi;
        }
    }
    if (!(lo <= hi)) {
        lo = 1.0;
        hi = 10.0;
    }
    int e0 = (int)floor(log10(lo)), e1 = (int)ceil(log10(hi));
    if (e1 <= e0)
        e1 = e0 + 1;
    double x0 = PAD_L, x1 = W - PAD_R, y0 = CDF_H - PAD_B, y1 = PAD_T;
#define X(ms) (x0 + (log10(ms) - e0) / (double)(e1 - e0) * (x1 - x0))
#define Y(f)  (y0 - (f) * (y0 - y1))
    /* axes and grid */
    rc |= mx_buf_printf(b, "<g class=\"axis\">\n");
    for (int e = e0; e <= e1; e++) {
        double x = X(pow(10.0, e));
        rc |= mx_buf_printf(b,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                            x, y0, x, y1, x, y0 + 16.0);
        rc |= put_decade(b, e);
        rc |= mx_buf_append_str(b, "</text>\n");
    }
    static const double fy[] = {0.0, 0.5, 0.9, 1.0};
    for (size_t i = 0; i < sizeof(fy) / sizeof(fy[0]); i++) {
        rc |= mx_buf_printf(b,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                            x0, Y(fy[i]), x1, Y(fy[i]), x0 - 6.0, Y(fy[i]) + 4.0, fy[i]);
    }
    rc |= mx_buf_printf(b,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">latency (log "
                        "scale)</text>\n</g>\n",
                        (x0 + x1) / 2.0, CDF_H - 6.0);
    /* one step curve per series */
    for (size_t i = 0; i < cnt && rc == 0; i++) {
        rc |= legend(b, i, s[i].label);
        if (s[i].cnt == 0)
            continue;
        int64_t *v = mx_xmalloc(s[i].cnt * sizeof(*v));
        memcpy(v, s[i].us, s[i].cnt * sizeof(*v));
        qsort(v, s[i].cnt, sizeof(*v), cmp_i64);
        size_t step = (s[i].cnt + MAX_POINTS - 1) / MAX_POINTS;
        rc |= mx_buf_append_str(b, "<path class=\"curve\" data-series=\"");
        rc |= mx_html_escape_cstr(b, s[i].label);
        rc |= mx_buf_printf(b, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" d=\"M%.1f %.1f",
                            palette[i % PALETTE_CNT], X((double)(v[0] > 10 ? v[0] : 10) / 1000.0),
                            Y(0.0));
        for (size_t k = 0; k < s[i].cnt && rc == 0; k += step) {
            size_t at = k + step - 1 < s[i].cnt ? k + step - 1 : s[i].cnt - 1;
            double ms = (double)(v[at] > 10 ? v[at] : 10) / 1000.0;
            rc |= mx_buf_printf(b, " H%.1f V%.1f", X(ms), Y((double)(at + 1) / (double)s[i].cnt));
        }
        rc |= mx_buf_append_str(b, "\"/>\n");
        free(v);
    }
#undef X
#undef Y
    rc |= mx_buf_append_str(b, "</svg>\n");
    return rc ? MX_ELIMIT : 0;
}

int mx_plot_bars_svg(struct mx_buf *b, const char *kind, const char *title,
                     const struct mx_plot_bar *bars, size_t cnt)
{
    double h = PAD_T + PAD_B + BAR_ROW * (double)(cnt ? cnt : 1);
    double lo = 0.0, hi = 0.0;
    const char *seen[PALETTE_CNT];
    size_t seen_cnt = 0;
    int rc = header(b, kind, title, h);
    for (size_t i = 0; i < cnt; i++) {
        double end = bars[i].offset_ms + (bars[i].value_ms > 0.0 ? bars[i].value_ms : 0.0);
        hi = end > hi ? end : hi;
        lo = bars[i].offset_ms < lo ? bars[i].offset_ms : lo;
    }
    if (hi <= lo)
        hi = lo + 1.0;
    double x0 = BAR_LABEL, x1 = W - PAD_R;
#define X(ms) (x0 + ((ms)-lo) / (hi - lo) * (x1 - x0))
    rc |= mx_buf_printf(b,
                        "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                        "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\">%.1f ms</text>"
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f ms</text></g>\n",
                        x0, PAD_T - 4.0, x0, h - PAD_B + 4.0, x0, h - PAD_B + 18.0, lo, x1,
                        h - PAD_B + 18.0, hi);
    for (size_t i = 0; i < cnt && rc == 0; i++) {
        size_t c = 0;
        while (c < seen_cnt && strcmp(seen[c], bars[i].series) != 0)
            c++;
        if (c == seen_cnt && seen_cnt < PALETTE_CNT) {
            seen[seen_cnt++] = bars[i].series;
            rc |= legend(b, c, bars[i].series);
        }
        double y = PAD_T + BAR_ROW * (double)i;
        double v = bars[i].value_ms > 0.0 ? bars[i].value_ms : 0.0;
        rc |= mx_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8.0,
                            y + 15.0);
        rc |= mx_html_escape_cstr(b, bars[i].label);
        rc |= mx_buf_append_str(b, "</text><rect class=\"bar\" data-series=\"");
        rc |= mx_html_escape_cstr(b, bars[i].series);
        rc |= mx_buf_printf(
            b,
            "\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>"
            "<text x=\"%.1f\" y=\"%.1f\">%.1f ms</text>\n",
            X(bars[i].offset_ms), y + 4.0, X(bars[i].offset_ms + v) - X(bars[i].offset_ms),
            palette[c % PALETTE_CNT], X(bars[i].offset_ms + v) + 4.0, y + 15.0, bars[i].value_ms);
    }
#undef X
    rc |= mx_buf_append_str(b, "</svg>\n");
    return rc ? MX_ELIMIT : 0;
}
