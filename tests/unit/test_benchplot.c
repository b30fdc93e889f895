/* SPDX-License-Identifier: MIT */
/* The bench report's plots: one curve per series, one bar per bar, labels
 * escaped, the cap kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "benchplot.h"
#include "benchreport.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_cdf_one_curve_per_series(void **state)
{
    static const int64_t a[] = {120, 90, 300, 150, 5000}, b[] = {200, 210, 190};
    struct mx_plot_series s[] = {{"direct", a, 5}, {"gateway", b, 3}, {"<b>&", NULL, 0}};
    struct mx_buf buf;
    (void)state;
    mx_buf_init(&buf, 1 << 20);
    assert_int_equal(mx_plot_cdf_svg(&buf, "ping <c=1>", s, 3), 0);
    assert_int_equal(mx_buf_append(&buf, "", 1), 0);
    const char *svg = mx_buf_data(&buf);
    assert_int_equal(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"cdf\"", 51),
                     0);
    /* a series without samples has a legend entry but no curve */
    assert_int_equal(count(svg, "class=\"curve\""), 2);
    assert_non_null(strstr(svg, "data-series=\"direct\""));
    assert_non_null(strstr(svg, "data-series=\"gateway\""));
    assert_non_null(strstr(svg, "ping &lt;c=1&gt;"));
    assert_non_null(strstr(svg, "&lt;b&gt;&amp;"));
    assert_null(strstr(svg, "<b>"));
    assert_int_equal(count(svg, "<svg"), count(svg, "</svg>"));
    mx_buf_clear(&buf);
    /* the cap */
    mx_buf_init(&buf, 200);
    assert_int_not_equal(mx_plot_cdf_svg(&buf, "x", s, 2), 0);
    mx_buf_clear(&buf);
}

static void test_report_sections(void **state)
{
    static const int64_t d[] = {100, 110, 120}, g[] = {180, 200, 230};
    static const int64_t wd[] = {300000, 310000}, wg[] = {320000, 305000};
    struct mx_benchreport_row rows[] = {
        {"sim", "ping", 1, false, {d, g}, {3, 3}, {0, 0}},
        {"sim", "tools/call", 8, false, {NULL, g}, {0, 3}, {0, 1}},
        {"sim", "wake: tools/call", 1, true, {wd, wg}, {2, 2}, {0, 0}},
    };
    struct mx_benchreport r = {
        "0.1.0", "http://127.0.0.1:1", "/mcp/<server>", "echo", "2026-12-04", 3, 8, rows, 3};
    struct mx_buf buf;
    (void)state;
    mx_buf_init(&buf, 1 << 20);
    assert_int_equal(mx_benchreport_html(&buf, &r), 0);
    assert_int_equal(mx_buf_append(&buf, "", 1), 0);
    const char *html = mx_buf_data(&buf);
    assert_null(strstr(html, "<script"));
    /* two CDFs: ping with both sides, tools/call with the gateway only */
    assert_int_equal(count(html, "class=\"cdf\""), 2);
    assert_int_equal(count(html, "class=\"curve\""), 3);
    /* the added latency of the row with both sides: p50 and p99 bars */
    assert_int_equal(count(html, "class=\"bars\""), 1);
    /* the wake timeline: the rounds in order, each side */
    assert_int_equal(count(html, "class=\"timeline\""), 1);
    const char *t = strstr(html, "class=\"timeline\"");
    assert_int_equal(count(t, "class=\"bar\""), 4);
    assert_non_null(strstr(t, "round 2, gateway"));
    assert_non_null(strstr(html, "/mcp/&lt;server&gt;"));
    assert_int_equal(count(html, "<svg"), count(html, "</svg>"));
    mx_buf_clear(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cdf_one_curve_per_series),
        cmocka_unit_test(test_report_sections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
