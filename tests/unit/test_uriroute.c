/* SPDX-License-Identifier: MIT */
/*
 * URI routing: exact URIs first, then templates; several holders make a URI
 * ambiguous; unknown URIs have no candidate; template matching per
 * operator, malformed templates, and the cost bound on long URIs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "uriroute.h"

static const struct {
    const char *tpl;
    const char *uri;
    bool match;
} tpl_cases[] = {
    {"demo://resource/dynamic/text/{index}", "demo://resource/dynamic/text/7", true},
    {"demo://resource/dynamic/text/{index}", "demo://resource/dynamic/text/", false},
    {"demo://resource/dynamic/text/{index}", "demo://resource/dynamic/text/7/8", false},
    {"demo://resource/dynamic/text/{index}", "demo://resource/dynamic/blob/7", false},
    {"file:///{path}", "file:///a", true},
    {"file:///{+path}", "file:///a/b/c.txt", true},
    {"file:///{path}", "file:///a/b", false},
    {"x://{a}-{b}", "x://1-2", true},
    {"x://{a}-{b}", "x://1-2-3", true},
    {"x://{a}{b}", "x://12", true},
    {"x://{a}{b}", "x://1", false},
    {"x://doc{#frag}", "x://doc#sec/1", true},
    {"x://doc{#frag}", "x://doc", false},
    {"x://a{/seg}", "x://a/b", true},
    {"x://a{/seg}", "x://a", false},
    {"x://a{.ext}", "x://a.json", true},
    {"x://a{;p}", "x://a;p=1", true},
    {"x://s{?q,r}", "x://s", true},
    {"x://s{?q,r}", "x://s?q=1&r=2", true},
    {"x://s{?q}{&r}", "x://s?q=1&r=2", true},
    {"x://s{?q}", "x://s#f", false},
    {"plain://exact", "plain://exact", true},
    {"plain://exact", "plain://exactly", false},
    {"bad://{unclosed", "bad://{unclosed", false},
    {"bad://}x", "bad://}x", false},
    {"bad://{}", "bad://x", false},
    {"bad://{=x}", "bad://x", false},
    {"bad://{a{b}", "bad://x", false},
    {"", "", false},
};

static void test_uriroute_template_match(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(tpl_cases) / sizeof(tpl_cases[0]); i++) {
        bool got = mx_uritpl_match(mx_str_cstr(tpl_cases[i].tpl), mx_str_cstr(tpl_cases[i].uri));
        if (got != tpl_cases[i].match)
            fail_msg("%s vs %s: got %d", tpl_cases[i].tpl, tpl_cases[i].uri, got);
    }
}

static void test_uriroute_long_uri(void **state)
{
    (void)state;
    /* many adjacent expressions against a long URI stay linear */
    size_t n = MX_URITPL_MAX_URI;
    char *uri = malloc(n + 1);
    memset(uri, 'a', n);
    memcpy(uri, "x://", 4);
    uri[n] = '\0';
    assert_true(
        mx_uritpl_match(MX_STR_LIT("x://{a}{b}{c}{d}{e}{f}{g}{h}{i}{j}{k}"), mx_str_make(uri, n)));
    assert_false(
        mx_uritpl_match(MX_STR_LIT("x://{a}{b}{c}{d}{e}{f}{g}{h}{i}{j}{k}/"), mx_str_make(uri, n)));
    uri[n - 1] = 'a';
    assert_false(mx_uritpl_match(MX_STR_LIT("x://{+a}"), mx_str_make(uri, n + 0) /* at cap */) ==
                 false);
    free(uri);
    char big[MX_URITPL_MAX_URI + 2];
    memset(big, 'b', sizeof(big));
    memcpy(big, "x://", 4);
    assert_false(mx_uritpl_match(MX_STR_LIT("x://{+a}"), mx_str_make(big, sizeof(big))));
}

static void test_uriroute_find(void **state)
{
    (void)state;
    json_t *ev1_res = json_pack("[{s:s},{s:s}]", "uri", "demo://resource/static/document/a.md",
                                "uri", "demo://only-ev1");
    json_t *ev2_res = json_pack("[{s:s}]", "uri", "demo://resource/static/document/a.md");
    json_t *ev_tpl = json_pack("[{s:s}]", "uriTemplate", "demo://resource/dynamic/text/{index}");
    json_t *sim_res = json_pack("[{s:s},{s:s}]", "uri", "sim://readme", "uri", "sim://config");
    json_t *tpl_only = json_pack("[{s:s}]", "uriTemplate", "only://{x}");
    struct mx_uri_source srcs[4] = {
        {ev1_res, ev_tpl}, {ev2_res, ev_tpl}, {sim_res, NULL}, {NULL, tpl_only}};
    struct mx_uriroute *r = mx_uriroute_new(srcs, 4);
    struct mx_uriroute_result res;

    mx_uriroute_find(r, MX_STR_LIT("sim://readme"), &res);
    assert_int_equal(res.how, MX_URIROUTE_EXACT);
    assert_int_equal(res.cnt, 1);
    assert_int_equal(res.cands[0], 2);

    mx_uriroute_find(r, MX_STR_LIT("demo://only-ev1"), &res);
    assert_int_equal(res.cnt, 1);
    assert_int_equal(res.cands[0], 0);

    /* listed by two upstreams: ambiguous, both named */
    mx_uriroute_find(r, MX_STR_LIT("demo://resource/static/document/a.md"), &res);
    assert_int_equal(res.how, MX_URIROUTE_EXACT);
    assert_int_equal(res.cnt, 2);
    assert_int_equal(res.cands[0], 0);
    assert_int_equal(res.cands[1], 1);

    mx_uriroute_find(r, MX_STR_LIT("demo://resource/dynamic/text/3"), &res);
    assert_int_equal(res.how, MX_URIROUTE_TEMPLATE);
    assert_int_equal(res.cnt, 2);

    mx_uriroute_find(r, MX_STR_LIT("only://thing"), &res);
    assert_int_equal(res.how, MX_URIROUTE_TEMPLATE);
    assert_int_equal(res.cnt, 1);
    assert_int_equal(res.cands[0], 3);

    mx_uriroute_find(r, MX_STR_LIT("nobody://x"), &res);
    assert_int_equal(res.how, MX_URIROUTE_NONE);
    assert_int_equal(res.cnt, 0);
    mx_uriroute_find(r, MX_STR_LIT(""), &res);
    assert_int_equal(res.cnt, 0);
    mx_uriroute_find(r, MX_STR_LIT("sim://readm"), &res);
    assert_int_equal(res.cnt, 0);

    mx_uriroute_find_template(r, MX_STR_LIT("only://{x}"), &res);
    assert_int_equal(res.cnt, 1);
    assert_int_equal(res.cands[0], 3);
    mx_uriroute_find_template(r, MX_STR_LIT("only://thing"), &res);
    assert_int_equal(res.cnt, 0);
    mx_uriroute_free(r);

    /* no sources at all */
    r = mx_uriroute_new(NULL, 0);
    mx_uriroute_find(r, MX_STR_LIT("sim://readme"), &res);
    assert_int_equal(res.cnt, 0);
    mx_uriroute_free(r);
    mx_uriroute_free(NULL);
    json_decref(ev1_res);
    json_decref(ev2_res);
    json_decref(ev_tpl);
    json_decref(sim_res);
    json_decref(tpl_only);
}

/*
 * No URI takeover: an exact URI one upstream lists and another upstream's
 * template that matches it make the URI ambiguous (both named), whichever
 * upstream comes first; an upstream whose own template matches its own
 * exact URI is still the one holder.
 */
static void test_uriroute_exact_meets_template(void **state)
{
    (void)state;
    json_t *wide = json_pack("[{s:s}]", "uriTemplate", "files://{+path}");
    json_t *exact = json_pack("[{s:s},{s:s}]", "uri", "files://secret/a.txt", "uri", "mine://1");
    json_t *own = json_pack("[{s:s}]", "uriTemplate", "mine://{x}");
    struct mx_uri_source before[2] = {{NULL, wide}, {exact, own}};
    struct mx_uri_source after[2] = {{exact, own}, {NULL, wide}};
    struct mx_uriroute_result res;

    struct mx_uriroute *r = mx_uriroute_new(before, 2);
    mx_uriroute_find(r, MX_STR_LIT("files://secret/a.txt"), &res);
    assert_int_equal(res.cnt, 2);
    assert_int_equal(res.cands[0], 0);
    assert_int_equal(res.cands[1], 1);
    mx_uriroute_find(r, MX_STR_LIT("mine://1"), &res);
    assert_int_equal(res.cnt, 1);
    assert_int_equal(res.cands[0], 1);
    mx_uriroute_find(r, MX_STR_LIT("files://elsewhere"), &res);
    assert_int_equal(res.how, MX_URIROUTE_TEMPLATE);
    assert_int_equal(res.cnt, 1);
    assert_int_equal(res.cands[0], 0);
    mx_uriroute_free(r);

    r = mx_uriroute_new(after, 2);
    mx_uriroute_find(r, MX_STR_LIT("files://secret/a.txt"), &res);
    assert_int_equal(res.cnt, 2);
    assert_int_equal(res.cands[0], 0);
    assert_int_equal(res.cands[1], 1);
    mx_uriroute_free(r);
    json_decref(wide);
    json_decref(exact);
    json_decref(own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uriroute_template_match),
        cmocka_unit_test(test_uriroute_long_uri),
        cmocka_unit_test(test_uriroute_find),
        cmocka_unit_test(test_uriroute_exact_meets_template),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
