/* SPDX-License-Identifier: MIT */
/*
 * Plots for `mcplex bench --html`: inline SVG, no script, well-formed XML
 * (the report is XHTML-compatible), every label through the one HTML
 * escape (html.h). Pure: samples in, text appended to a capped buffer.
 *
 * Each plot is an <svg> with a class saying its kind ("cdf", "bars",
 * "timeline") and one element of class "curve" (a CDF's path) or "bar" per
 * series or bar, each with data-series naming it, so a reader (or a test)
 * can count them.
 */
#ifndef MX_BENCHPLOT_H
#define MX_BENCHPLOT_H
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* One latency distribution: |cnt| samples in microseconds, any order. */
struct mx_plot_series {
    const char *label;
    const int64_t *us;
    size_t cnt;
};

/* One bar: |value_ms| long (negative values are drawn as 0 but labelled
 * as they are), |offset_ms| from the axis' start (timelines). */
struct mx_plot_bar {
    const char *label;
    const char *series; /* its legend entry and colour */
    double offset_ms;
    double value_ms;
};

/*
 * The cumulative distribution of each series on one chart: latency on a
 * log scale (x), share of requests at or below it (y), one step curve per
 * series with samples. Returns 0 or MX_ELIMIT (|b|'s cap).
 */
int mx_plot_cdf_svg(struct mx_buf *b, const char *title, const struct mx_plot_series *s,
                    size_t cnt);
/*
 * Horizontal bars, one per row, on a linear axis from 0 (or the smallest
 * offset) to the largest end. |kind| is the svg's class: "bars" or
 * "timeline". Returns 0 or MX_ELIMIT.
 */
int mx_plot_bars_svg(struct mx_buf *b, const char *kind, const char *title,
                     const struct mx_plot_bar *bars, size_t cnt);
#endif
