/* SPDX-License-Identifier: MIT */
/* The status page's pure parts: the HTML escape, the ring of the last
 * calls and where a call's time went, and the embedded assets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "callring.h"
#include "html.h"
#include "statuspage.h"

static char *escaped(const char *s, size_t len, size_t cap, int *rc)
{
    static char out[1024];
    struct mx_buf b;
    mx_buf_init(&b, cap);
    *rc = mx_html_escape(&b, s, len);
    snprintf(out, sizeof(out), "%.*s", (int)mx_buf_len(&b), mx_buf_data(&b));
    mx_buf_clear(&b);
    return out;
}

static void test_html_escape(void **state)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain_tool-1.x", "plain_tool-1.x"},
        {"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
        {"a&b", "a&amp;b"},
        {"\"quoted\" 'single'", "&quot;quoted&quot; &#39;single&#39;"},
        {"</script><script>", "&lt;/script&gt;&lt;script&gt;"},
        {"tab\tline\ncr\r", "tab\tline\ncr\r"},
        {"bell\x07"
         "del\x7f",
         "bell\xef\xbf\xbd"
         "del\xef\xbf\xbd"},
        {"caf\xc3\xa9", "caf\xc3\xa9"},
        {"", ""},
    };
    int rc;
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = escaped(cases[i].in, strlen(cases[i].in), 1024, &rc);
        assert_int_equal(rc, 0);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("escape '%s': got '%s', want '%s'", cases[i].in, got, cases[i].want);
    }
    /* a NUL inside the bytes is a control byte too */
    assert_string_equal(escaped("a\0b", 3, 64, &rc), "a\xef\xbf\xbd"
                                                     "b");
    /* the cap: "&lt;" is 4 bytes */
    escaped("<", 1, 4, &rc);
    assert_int_equal(rc, 0);
    escaped("<", 1, 3, &rc);
    assert_int_not_equal(rc, 0);
    struct mx_buf b;
    mx_buf_init(&b, 16);
    assert_int_equal(mx_html_escape_cstr(&b, NULL), 0);
    assert_int_equal(mx_buf_len(&b), 0);
    mx_buf_clear(&b);
}

static void test_callring_wraps(void **state)
{
    struct mx_callring *ring = calloc(1, sizeof(*ring));
    struct mx_callrec r = {0};
    (void)state;
    json_t *a = mx_callring_json(ring);
    assert_int_equal(json_array_size(a), 0);
    json_decref(a);
    for (int i = 0; i < MX_CALLRING_CNT + 5; i++) {
        snprintf(r.target, sizeof(r.target), "t%d", i);
        r.at = 1.8e9 + i;
        mx_callring_push(ring, &r);
    }
    a = mx_callring_json(ring);
    assert_int_equal(json_array_size(a), MX_CALLRING_CNT);
    /* oldest first: the first five went */
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "target")), "t5");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(a, MX_CALLRING_CNT - 1), "target")),
        "t104");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "seq")), 6);
    json_decref(a);
    free(ring);
}

static void test_callrec_json(void **state)
{
    struct mx_callrec r = {0};
    (void)state;
    r.at = 1800000000.25;
    r.session = mx_callring_session_hash("6f1c0e4b2a9d");
    r.wait_s = 0.0012;
    r.wake_s = 2.5;
    r.upstream_s = 0.010;
    r.total_s = 2.5112;
    r.status = 200;
    mx_callring_copy(r.method, sizeof(r.method), "tools/call");
    mx_callring_copy(r.target, sizeof(r.target), "<img src=x onerror=alert(1)>");
    json_t *o = mx_callrec_json(&r);
    assert_string_equal(json_string_value(json_object_get(o, "at")), "2027-01-15T08:00:00.250Z");
    assert_true(json_real_value(json_object_get(o, "wait_ms")) > 1.19 &&
                json_real_value(json_object_get(o, "wait_ms")) < 1.21);
    assert_true(json_real_value(json_object_get(o, "wake_ms")) == 2500.0);
    /* the session shows as a label, never as its id */
    const char *label = json_string_value(json_object_get(o, "session"));
    assert_non_null(label);
    assert_int_equal(strncmp(label, "s-", 2), 0);
    assert_null(strstr(label, "6f1c0e4b2a9d"));
    assert_string_equal(json_string_value(json_object_get(o, "era")), "2025");
    json_decref(o);
    r.session = 0;
    r.upstream_s = -1.0;
    o = mx_callrec_json(&r);
    assert_true(json_is_null(json_object_get(o, "session")));
    assert_true(json_is_null(json_object_get(o, "upstream_ms")));
    json_decref(o);
    assert_int_equal(mx_callring_session_hash(NULL), 0);
    assert_int_not_equal(mx_callring_session_hash(""), 0);
}

static void test_callring_copy_cuts_at_characters(void **state)
{
    char small[6];
    (void)state;
    /* "abcd" + "é" (2 bytes) does not fit in 5 bytes + NUL at a boundary */
    mx_callring_copy(small, sizeof(small), "abcd\xc3\xa9");
    assert_string_equal(small, "abcd");
    mx_callring_copy(small, sizeof(small), "abc\xc3\xa9z");
    assert_string_equal(small, "abc\xc3\xa9");
    mx_callring_copy(small, sizeof(small), NULL);
    assert_string_equal(small, "");
}

static void test_callring_split(void **state)
{
    struct mx_callsplit s;
    double from[2] = {0}, to[2] = {0};
    (void)state;
    /* no wake: 10 ms before, 100 ms upstream, 5 ms after */
    mx_callring_split(100.0, 100.010, 100.110, 100.115, from, to, 2, &s);
    assert_true(s.wait_s > 0.0149 && s.wait_s < 0.0151);
    assert_true(s.wake_s == 0.0);
    assert_true(s.upstream_s > 0.0999 && s.upstream_s < 0.1001);
    /* a wake from 99.5 to 102 covers 100.010..102 of an upstream side to 102.1 */
    from[0] = 99.5;
    to[0] = 102.0;
    mx_callring_split(100.0, 100.010, 102.1, 102.2, from, to, 2, &s);
    assert_true(s.wake_s > 1.9899 && s.wake_s < 1.9901);
    assert_true(s.upstream_s > 0.0999 && s.upstream_s < 0.1001);
    /* a wake still running counts to now, but never past the upstream side */
    to[0] = 0.0;
    mx_callring_split(100.0, 100.010, 101.0, 101.5, from, to, 2, &s);
    assert_true(s.wake_s > 0.9899 && s.wake_s < 0.9901);
    assert_true(s.upstream_s >= 0.0 && s.upstream_s < 1e-9);
    /* mcplex answered by itself: all of it is wait */
    mx_callring_split(100.0, 0.0, 0.0, 100.002, from, to, 2, &s);
    assert_true(s.wait_s > 0.0019 && s.wait_s < 0.0021);
    assert_true(s.wake_s < 0.0 && s.upstream_s < 0.0);
    /* no wakes given at all */
    mx_callring_split(100.0, 100.0, 100.5, 100.5, NULL, NULL, 0, &s);
    assert_true(s.wake_s == 0.0);
}

/* The page ships in the binary: under 64 KiB, its script at its own path
 * (the CSP is default-src 'self'), no inline script or handler. */
static void test_assets(void **state)
{
    size_t total = 0;
    (void)state;
    assert_true(mx_status_asset_cnt >= 3);
    for (size_t i = 0; i < mx_status_asset_cnt; i++)
        total += mx_status_assets[i].len;
    if (total >= 64 * 1024)
        fail_msg("the status page's assets take %zu bytes, over 64 KiB", total);
    const struct mx_status_asset *page = mx_status_asset("page.html");
    const struct mx_status_asset *js = mx_status_asset("status.js");
    assert_non_null(page);
    assert_non_null(js);
    assert_non_null(mx_status_asset("status.css"));
    assert_null(mx_status_asset("nope.js"));
    assert_string_equal(js->type, "text/javascript; charset=utf-8");
    char *html = strndup((const char *)page->data, page->len);
    assert_non_null(strstr(html, "<script src=\"/status/status.js\""));
    for (const char *p = html; (p = strstr(p, "<script")) != NULL; p++)
        assert_int_equal(strncmp(p, "<script src=", 12), 0);
    assert_null(strstr(html, " onload="));
    assert_null(strstr(html, " onerror="));
    assert_null(strstr(html, "javascript:"));
    free(html);
    /* the script never writes HTML */
    char *src = strndup((const char *)js->data, js->len);
    assert_null(strstr(src, "innerHTML"));
    assert_null(strstr(src, "outerHTML"));
    assert_null(strstr(src, "insertAdjacentHTML"));
    assert_null(strstr(src, "document.write"));
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_escape),
        cmocka_unit_test(test_callring_wraps),
        cmocka_unit_test(test_callrec_json),
        cmocka_unit_test(test_callring_copy_cuts_at_characters),
        cmocka_unit_test(test_callring_split),
        cmocka_unit_test(test_assets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
