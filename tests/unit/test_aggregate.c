/* SPDX-License-Identifier: MIT */
/*
 * The merge of upstream lists: the name rule (conditional and always), its
 * edge cases (an empty upstream, every name colliding, aliases with '_'
 * that would make equal names, the budget, bad characters), filters,
 * independence from source order where it must not matter, hidden sources,
 * and paging by per-source positions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aggregate.h"
#include "err.h"

/* "a,b,c" -> [{"name":"a"},{"name":"b"},{"name":"c"}]; "" -> [] */
static json_t *named(const char *csv)
{
    json_t *a = json_array();
    const char *p = csv;
    while (*p) {
        size_t n = strcspn(p, ",");
        json_array_append_new(a, json_pack("{s:s%, s:s}", "name", p, n, "description", "d"));
        p += n;
        if (*p == ',')
            p++;
    }
    return a;
}

static json_t *uris(const char *field, const char *csv)
{
    json_t *a = json_array();
    const char *p = csv;
    while (*p) {
        size_t n = strcspn(p, ",");
        json_array_append_new(a, json_pack("{s:s%, s:s}", field, p, n, "name", "r"));
        p += n;
        if (*p == ',')
            p++;
    }
    return a;
}

/* Every entry as "key<src" (or "key<src!" when hidden), joined by spaces. */
static char *render(const struct mx_agg_view *v)
{
    static char buf[8192];
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
        const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s<%zu%s", i ? " " : "", e->key, e->src,
                              e->visible ? "" : "!");
    }
    return buf;
}

struct name_case {
    const char *what;
    enum mx_prefix_mode mode;
    size_t budget;
    const char *aliases[4];
    const char *lists[4];
    const char *want;
};

static const struct name_case name_cases[] = {
    {"single upstream keeps names", MX_PREFIX_CONDITIONAL, 48, {"a"}, {"echo,add"}, "add<0 echo<0"},
    {"unique names stay plain",
     MX_PREFIX_CONDITIONAL,
     48,
     {"a", "b"},
     {"echo", "add"},
     "add<1 echo<0"},
    {"collision prefixes both",
     MX_PREFIX_CONDITIONAL,
     48,
     {"ev1", "sim"},
     {"echo,x", "echo,y"},
     "ev1_echo<0 sim_echo<1 x<0 y<1"},
    {"every name colliding",
     MX_PREFIX_CONDITIONAL,
     48,
     {"a", "b"},
     {"p,q", "q,p"},
     "a_p<0 a_q<0 b_p<1 b_q<1"},
    {"always prefixes all", MX_PREFIX_ALWAYS, 48, {"a", "b"}, {"echo", "add"}, "a_echo<0 b_add<1"},
    {"empty upstream changes nothing",
     MX_PREFIX_CONDITIONAL,
     48,
     {"a", "b"},
     {"echo", ""},
     "echo<0"},
    {"three-way collision",
     MX_PREFIX_CONDITIONAL,
     48,
     {"a", "b", "c"},
     {"t", "t", "t,u"},
     "a_t<0 b_t<1 c_t<2 u<2"},
    {"alias with underscore",
     MX_PREFIX_CONDITIONAL,
     48,
     {"my_srv", "x"},
     {"go", "go"},
     "my_srv_go<0 x_go<1"},
    /* "a"+"b_c" and "a_b"+"c" both give "a_b_c": both take a short tag */
    {"prefix ambiguity is told apart",
     MX_PREFIX_ALWAYS,
     48,
     {"a", "a_b"},
     {"b_c", "c"},
     "a_b_c_0c1d18<1 a_b_c_662f0b<0"},
    {"plain name equal to a prefixed one",
     MX_PREFIX_CONDITIONAL,
     48,
     {"ev", "x", "y"},
     {"echo", "ev_echo,echo", ""},
     "ev_echo_0b8472<0 ev_echo_19f114<1 x_echo<1"},
    {"bad characters become _",
     MX_PREFIX_CONDITIONAL,
     48,
     {"a"},
     {"read file,a/b"},
     "a_b<0 read_file<0"},
    {"a repeated name counts once", MX_PREFIX_CONDITIONAL, 48, {"a", "b"}, {"t,t", "u"}, "t<0 u<1"},
};

static void check_names(const struct name_case *c, const char *want, bool reverse)
{
    struct mx_agg_source srcs[4];
    json_t *lists[4] = {NULL};
    size_t n = 0;
    memset(srcs, 0, sizeof(srcs));
    while (n < 4 && c->aliases[n])
        n++;
    for (size_t i = 0; i < n; i++) {
        size_t k = reverse ? n - 1 - i : i;
        lists[i] = named(c->lists[k]);
        srcs[i].alias = c->aliases[k];
        srcs[i].items = lists[i];
        srcs[i].visible = true;
    }
    struct mx_agg_opts o = {c->mode, c->budget};
    struct mx_agg_view *v = NULL;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs, n, &o, &v), 0);
    if (want) {
        if (strcmp(render(v), want) != 0)
            fail_msg("%s: got \"%s\", want \"%s\"", c->what, render(v), want);
    }
    /* Every exposed name maps back to its source and original name. */
    for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
        const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
        const struct mx_agg_entry *f = mx_agg_lookup(v, mx_str_cstr(e->key));
        assert_ptr_equal(e, f);
        assert_true(strlen(e->key) <= c->budget);
        assert_string_equal(json_string_value(json_object_get(e->item, "name")), e->orig);
    }
    mx_agg_view_free(v);
    for (size_t i = 0; i < n; i++)
        json_decref(lists[i]);
}

static void test_aggregate_name_rule(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++)
        check_names(&name_cases[i], name_cases[i].want, false);
}

/* Exposed names depend on (alias, name) only, not on the source order. */
static void test_aggregate_order_independent(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
        const struct name_case *c = &name_cases[i];
        struct mx_agg_source srcs[2][4];
        json_t *lists[2][4] = {{NULL}};
        struct mx_agg_view *v[2];
        size_t n = 0;
        while (n < 4 && c->aliases[n])
            n++;
        memset(srcs, 0, sizeof(srcs));
        for (int r = 0; r < 2; r++) {
            for (size_t k = 0; k < n; k++) {
                size_t from = r ? n - 1 - k : k;
                lists[r][k] = named(c->lists[from]);
                srcs[r][k].alias = c->aliases[from];
                srcs[r][k].items = lists[r][k];
                srcs[r][k].visible = true;
            }
            struct mx_agg_opts o = {c->mode, c->budget};
            assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs[r], n, &o, &v[r]), 0);
        }
        assert_int_equal(mx_agg_entry_cnt(v[0]), mx_agg_entry_cnt(v[1]));
        for (size_t k = 0; k < mx_agg_entry_cnt(v[0]); k++) {
            const struct mx_agg_entry *a = mx_agg_entry_at(v[0], k);
            const struct mx_agg_entry *b = mx_agg_entry_at(v[1], k);
            assert_string_equal(a->key, b->key);
            assert_string_equal(a->orig, b->orig);
            assert_string_equal(c->aliases[a->src], c->aliases[n - 1 - b->src]);
        }
        for (int r = 0; r < 2; r++) {
            mx_agg_view_free(v[r]);
            for (size_t k = 0; k < n; k++)
                json_decref(lists[r][k]);
        }
    }
}

static void test_aggregate_budget(void **state)
{
    (void)state;
    /* 60 characters of name: cut to 48 with a tag, the same every time */
    const char *longname = "a_really_long_tool_name_that_goes_on_and_on_and_on_for_ever";
    json_t *a = json_pack("[{s:s}]", "name", longname);
    json_t *b = json_pack("[{s:s}]", "name", longname);
    struct mx_agg_source srcs[2] = {{"alpha", a, true, NULL, NULL}, {"beta", b, true, NULL, NULL}};
    struct mx_agg_opts o = {MX_PREFIX_CONDITIONAL, 48};
    struct mx_agg_view *v;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs, 2, &o, &v), 0);
    assert_int_equal(mx_agg_entry_cnt(v), 2);
    for (size_t i = 0; i < 2; i++) {
        const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
        assert_int_equal(strlen(e->key), 48);
        assert_int_equal(e->key[41], '_');
        assert_memory_equal(e->key, e->src == 0 ? "alpha_a_real" : "beta_a_reall", 12);
    }
    assert_string_not_equal(mx_agg_entry_at(v, 0)->key, mx_agg_entry_at(v, 1)->key);
    char first[64];
    snprintf(first, sizeof(first), "%s", mx_agg_entry_at(v, 0)->key);
    mx_agg_view_free(v);
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs, 2, &o, &v), 0);
    assert_string_equal(mx_agg_entry_at(v, 0)->key, first);
    mx_agg_view_free(v);

    /* at the budget exactly: unchanged; one over: short form */
    char at[49], over[50];
    memset(at, 'x', 48);
    at[48] = '\0';
    memset(over, 'y', 49);
    over[49] = '\0';
    json_t *c = json_pack("[{s:s},{s:s}]", "name", at, "name", over);
    struct mx_agg_source one = {"s", c, true, NULL, NULL};
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, &one, 1, &o, &v), 0);
    assert_string_equal(mx_agg_entry_at(v, 0)->key, at);
    assert_int_equal(strlen(mx_agg_entry_at(v, 1)->key), 48);
    assert_memory_equal(mx_agg_entry_at(v, 1)->key, over, 41);
    mx_agg_view_free(v);

    /* options out of range */
    o.name_budget = 7;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, &one, 1, &o, &v), MX_EINVAL);
    o.name_budget = MX_AGG_NAME_MAX + 1;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, &one, 1, &o, &v), MX_EINVAL);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_aggregate_filters(void **state)
{
    (void)state;
    char p1[] = "read_*", p2[] = "list_directory", p3[] = "*_secret";
    char *allow_v[] = {p1, p2};
    char *deny_v[] = {p3};
    struct mx_strv allow = {allow_v, 2}, deny = {deny_v, 1}, none = {NULL, 0};
    json_t *a = named("read_text_file,read_secret,list_directory,write_file");
    json_t *b = named("write_file,read_text_file");
    struct mx_agg_source srcs[2] = {{"files", a, true, &allow, &deny},
                                    {"other", b, true, &none, NULL}};
    struct mx_agg_opts o = {MX_PREFIX_CONDITIONAL, 48};
    struct mx_agg_view *v;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs, 2, &o, &v), 0);
    /* write_file of "files" is filtered out before merging: no collision */
    assert_string_equal(render(v), "files_read_text_file<0 list_directory<0 other_read_text_file<1 "
                                   "write_file<1");
    mx_agg_view_free(v);
    json_decref(a);
    json_decref(b);
}

static void test_aggregate_hidden_sources(void **state)
{
    (void)state;
    json_t *a = named("echo,a1");
    json_t *b = named("echo,b1");
    struct mx_agg_source srcs[2] = {{"a", a, true, NULL, NULL}, {"b", b, false, NULL, NULL}};
    struct mx_agg_opts o = {MX_PREFIX_CONDITIONAL, 48};
    struct mx_agg_view *v;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs, 2, &o, &v), 0);
    /* a hidden source still takes part in naming and routing */
    assert_string_equal(render(v), "a1<0 a_echo<0 b1<1! b_echo<1!");
    assert_non_null(mx_agg_lookup(v, MX_STR_LIT("b_echo")));
    assert_null(mx_agg_lookup(v, MX_STR_LIT("echo")));
    assert_null(mx_agg_lookup(v, MX_STR_LIT("b_ech")));
    assert_null(mx_agg_lookup(v, MX_STR_LIT("")));
    assert_int_equal(mx_agg_visible_cnt(v, 0), 2);
    assert_int_equal(mx_agg_visible_cnt(v, 1), 0);
    /* the item a client sees carries the exposed name, the rest untouched */
    json_t *it = mx_agg_item_json(v, mx_agg_lookup(v, MX_STR_LIT("a_echo")));
    assert_string_equal(json_string_value(json_object_get(it, "name")), "a_echo");
    assert_string_equal(json_string_value(json_object_get(it, "description")), "d");
    json_decref(it);
    /* and the upstream's own item is unchanged */
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "name")), "echo");
    uint32_t pos[2] = {0, 0}, next[2];
    json_t *page = json_array();
    assert_false(mx_agg_page(v, pos, 10, page, next));
    assert_int_equal(json_array_size(page), 2);
    json_decref(page);
    mx_agg_view_free(v);
    json_decref(a);
    json_decref(b);
}

/* Names seen before do not move: a pinned name stays while its item is
 * listed, an item that would take another's pinned name steps aside, and
 * pins that are broken or claim a taken name are ignored. */
static void test_aggregate_pinned(void **state)
{
    (void)state;
    struct mx_agg_opts o = {MX_PREFIX_CONDITIONAL, 48};
    struct mx_agg_view *v;
    json_t *a = named("echo,a1");
    json_t *b = named("echo,b1");

    /* b was down when a client first listed: a's echo was shown plain */
    struct mx_agg_source one[2] = {{"a", a, true, NULL, NULL}, {"b", NULL, false, NULL, NULL}};
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, one, 2, &o, &v), 0);
    assert_string_equal(render(v), "a1<0 echo<0");
    mx_agg_view_free(v);

    /* b is back with an echo of its own: unpinned, both would be prefixed */
    struct mx_agg_source two[2] = {{"a", a, true, NULL, NULL}, {"b", b, true, NULL, NULL}};
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, two, 2, &o, &v), 0);
    assert_string_equal(render(v), "a1<0 a_echo<0 b1<1 b_echo<1");
    mx_agg_view_free(v);

    /* with a's names pinned, a's echo keeps its name and b's steps aside */
    json_t *pa = json_pack("{s:s, s:s}", "echo", "echo", "a1", "a1");
    json_t *pins[2] = {pa, NULL};
    assert_int_equal(mx_agg_build_pinned(MX_AGG_TOOLS, two, 2, &o, pins, &v), 0);
    assert_string_equal(render(v), "a1<0 b1<1 b_echo<1 echo<0");
    const struct mx_agg_entry *e = mx_agg_lookup(v, MX_STR_LIT("echo"));
    assert_non_null(e);
    assert_int_equal(e->src, 0);
    mx_agg_view_free(v);

    /* the same while a is hidden (down): its pinned names still hold */
    two[0].visible = false;
    assert_int_equal(mx_agg_build_pinned(MX_AGG_TOOLS, two, 2, &o, pins, &v), 0);
    assert_string_equal(render(v), "a1<0! b1<1 b_echo<1 echo<0!");
    mx_agg_view_free(v);
    two[0].visible = true;

    /* a no longer lists echo: its pinned name is still not handed to b */
    json_t *a2 = named("a1");
    struct mx_agg_source gone[2] = {{"a", a2, true, NULL, NULL}, {"b", b, true, NULL, NULL}};
    assert_int_equal(mx_agg_build_pinned(MX_AGG_TOOLS, gone, 2, &o, pins, &v), 0);
    assert_string_equal(render(v), "a1<0 b1<1 b_echo<1");
    mx_agg_view_free(v);

    /* b's prefixed form is pinned to something else too: the short form */
    json_t *pa2 = json_pack("{s:s, s:s}", "echo", "echo", "b_echo", "b_echo");
    json_t *a3 = named("echo,b_echo");
    struct mx_agg_source crowd[2] = {{"a", a3, true, NULL, NULL}, {"b", b, true, NULL, NULL}};
    json_t *pins2[2] = {pa2, NULL};
    assert_int_equal(mx_agg_build_pinned(MX_AGG_TOOLS, crowd, 2, &o, pins2, &v), 0);
    e = mx_agg_lookup(v, MX_STR_LIT("b_echo"));
    assert_non_null(e);
    assert_int_equal(e->src, 0);
    assert_int_equal(mx_agg_entry_cnt(v), 4);
    for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
        e = mx_agg_entry_at(v, i);
        if (e->src == 1 && strcmp(e->orig, "echo") == 0) {
            assert_int_equal(strncmp(e->key, "b_echo_", 7), 0);
            assert_int_equal(strlen(e->key), strlen("b_echo_") + 6);
        }
    }
    mx_agg_view_free(v);

    /* broken pins are ignored; two sources claiming one name: the first wins */
    json_t *pbad = json_pack("{s:s, s:i}", "a1", "bad name!", "echo", 3);
    json_t *pb = json_pack("{s:s}", "echo", "echo");
    json_t *pins3[2] = {pbad, pb};
    assert_int_equal(mx_agg_build_pinned(MX_AGG_TOOLS, two, 2, &o, pins3, &v), 0);
    assert_string_equal(render(v), "a1<0 a_echo<0 b1<1 echo<1");
    mx_agg_view_free(v);
    json_t *pins4[2] = {pa, pb};
    assert_int_equal(mx_agg_build_pinned(MX_AGG_TOOLS, two, 2, &o, pins4, &v), 0);
    assert_string_equal(render(v), "a1<0 b1<1 b_echo<1 echo<0");
    mx_agg_view_free(v);

    json_decref(pa);
    json_decref(pa2);
    json_decref(pbad);
    json_decref(pb);
    json_decref(a);
    json_decref(a2);
    json_decref(a3);
    json_decref(b);
}

static void test_aggregate_resources(void **state)
{
    (void)state;
    json_t *a = uris("uri", "sim://readme,demo://x");
    json_t *b = uris("uri", "demo://x,demo://a");
    json_t *bad = json_pack("[{s:i},{s:s}]", "uri", 3, "name", "no uri");
    struct mx_agg_source srcs[3] = {
        {"a", a, true, NULL, NULL}, {"b", b, true, NULL, NULL}, {"c", bad, true, NULL, NULL}};
    struct mx_agg_opts o = {MX_PREFIX_ALWAYS, 48};
    struct mx_agg_view *v;
    assert_int_equal(mx_agg_build(MX_AGG_RESOURCES, srcs, 3, &o, &v), 0);
    /* URIs are never renamed; equal URIs stay, ordered by source */
    assert_string_equal(render(v), "demo://a<1 demo://x<0 demo://x<1 sim://readme<0");
    assert_null(mx_agg_lookup(v, MX_STR_LIT("demo://a")));
    mx_agg_view_free(v);
    json_t *t = uris("uriTemplate", "demo://t/{id}");
    struct mx_agg_source ts = {"a", t, true, NULL, NULL};
    assert_int_equal(mx_agg_build(MX_AGG_TEMPLATES, &ts, 1, &o, &v), 0);
    assert_string_equal(render(v), "demo://t/{id}<0");
    mx_agg_view_free(v);
    assert_string_equal(mx_agg_list_key(MX_AGG_TEMPLATES), "resourceTemplates");
    assert_string_equal(mx_agg_item_field(MX_AGG_TEMPLATES), "uriTemplate");
    json_decref(a);
    json_decref(b);
    json_decref(bad);
    json_decref(t);
}

/* Walking pages of any size visits every visible item once, in order. */
static void test_aggregate_pages(void **state)
{
    (void)state;
    json_t *a = named("a1,a2,a3,a4,a5,zz");
    json_t *b = named("b1,b2,zz");
    json_t *c = named("");
    struct mx_agg_source srcs[3] = {
        {"x", a, true, NULL, NULL}, {"y", b, true, NULL, NULL}, {"z", c, true, NULL, NULL}};
    struct mx_agg_opts o = {MX_PREFIX_CONDITIONAL, 48};
    struct mx_agg_view *v;
    assert_int_equal(mx_agg_build(MX_AGG_TOOLS, srcs, 3, &o, &v), 0);
    const char *want = "a1 a2 a3 a4 a5 b1 b2 x_zz y_zz ";
    for (size_t size = 1; size <= 10; size++) {
        uint32_t pos[3] = {0, 0, 0}, next[3];
        char got[256] = "";
        size_t n = 0, pages = 0;
        bool more;
        do {
            json_t *page = json_array();
            more = mx_agg_page(v, pos, size, page, next);
            assert_true(json_array_size(page) <= size);
            for (size_t i = 0; i < json_array_size(page); i++)
                n += (size_t)snprintf(
                    got + n, sizeof(got) - n, "%s ",
                    json_string_value(json_object_get(json_array_get(page, i), "name")));
            json_decref(page);
            memcpy(pos, next, sizeof(pos));
            pages++;
        } while (more && pages < 20);
        assert_string_equal(got, want);
        assert_int_equal(pages, (9 + size - 1) / size);
        assert_int_equal(pos[0], 6);
        assert_int_equal(pos[1], 3);
        assert_int_equal(pos[2], 0);
    }
    mx_agg_view_free(v);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_aggregate_no_sources(void **state)
{
    (void)state;
    struct mx_agg_opts o = {MX_PREFIX_CONDITIONAL, 48};
    struct mx_agg_view *v;
    assert_int_equal(mx_agg_build(MX_AGG_PROMPTS, NULL, 0, &o, &v), 0);
    assert_int_equal(mx_agg_entry_cnt(v), 0);
    json_t *page = json_array();
    assert_false(mx_agg_page(v, NULL, 5, page, NULL));
    assert_int_equal(json_array_size(page), 0);
    json_decref(page);
    mx_agg_view_free(v);
    mx_agg_view_free(NULL);
    struct mx_agg_source s = {NULL, NULL, true, NULL, NULL};
    assert_int_equal(mx_agg_build(MX_AGG_PROMPTS, &s, 1, &o, &v), MX_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregate_name_rule),
        cmocka_unit_test(test_aggregate_order_independent),
        cmocka_unit_test(test_aggregate_budget),
        cmocka_unit_test(test_aggregate_filters),
        cmocka_unit_test(test_aggregate_hidden_sources),
        cmocka_unit_test(test_aggregate_pinned),
        cmocka_unit_test(test_aggregate_resources),
        cmocka_unit_test(test_aggregate_pages),
        cmocka_unit_test(test_aggregate_no_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
