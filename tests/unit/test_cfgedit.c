/* SPDX-License-Identifier: MIT */
/* Line edits of TOML files: which lines a table owns, cut, append, quote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cfgedit.h"
#include "err.h"

struct cut_case {
    const char *name;  /* the table */
    const char *text;  /* the file */
    const char *after; /* the file without it; NULL: not found */
};

static const struct cut_case cut_cases[] = {
    /* between two tables: its comment above goes, the next one's stays */
    {"servers.b",
     "[servers.a]\nurl = \"a\"\n\n# b's\n[servers.b]\nurl = \"b\"\n\n# c's\n[servers.c]\n",
     "[servers.a]\nurl = \"a\"\n\n# c's\n[servers.c]\n"},
    /* a comment that follows a key with no blank line is the table's */
    {"servers.a", "[servers.a]\nurl = \"a\"\n# wake = \"x\"\n\n[servers.b]\n", "[servers.b]\n"},
    /* a comment after a blank line stays (a note, a divider) */
    {"servers.a", "[listen]\n\n[servers.a]\nurl = \"a\"\n\n# --- more ---\n\n[servers.b]\n",
     "[listen]\n\n# --- more ---\n\n[servers.b]\n"},
    /* the last table: the blank lines before it go, so no blank line ends the file */
    {"servers.b", "[servers.a]\nurl = \"a\"\n\n[servers.b]\nurl = \"b\"\n",
     "[servers.a]\nurl = \"a\"\n"},
    /* the last table with notes after a blank line: they stay */
    {"servers.a", "x = 1\n\n[servers.a]\nurl = \"a\"\n\n# notes\n", "x = 1\n\n# notes\n"},
    /* a comment touching both the body and the next header is the next one's */
    {"servers.a", "[servers.a]\nurl = \"a\"\n# b's\n[servers.b]\n", "# b's\n[servers.b]\n"},
    /* sub-tables go with it; a table whose name only starts the same stays */
    {"mcp_servers.m",
     "[mcp_servers.m]\nurl = \"u\"\n[mcp_servers.m.env]\nX = \"1\"\n\n"
     "[mcp_servers.mm]\nurl = \"v\"\n",
     "[mcp_servers.mm]\nurl = \"v\"\n"},
    /* blanks inside the header; a trailing comment on it */
    {"servers.a", "[ servers . a ]  # the first\nurl = \"a\"\n[b]\n", "[b]\n"},
    /* a line starting with [ inside a multi-line string or array is no header */
    {"t", "[t]\ns = \"\"\"\n[x]\n\"\"\"\na = [\n  \"[y]\",\n]\n\n[u]\n", "[u]\n"},
    /* only a header names a table */
    {"servers.a", "# [servers.a]\nname = \"[servers.a]\"\n", NULL},
    {"servers.a", "", NULL},
    /* the only table */
    {"servers.a", "[servers.a]\nurl = \"a\"\n", ""},
    /* CRLF lines */
    {"a", "[a]\r\nk = 1\r\n\r\n[b]\r\n", "[b]\r\n"},
};

static void test_cfgedit_cut(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cut_cases) / sizeof(cut_cases[0]); i++) {
        const struct cut_case *c = &cut_cases[i];
        struct mx_cfgedit_span span;
        int rc = mx_cfgedit_find(c->text, strlen(c->text), c->name, &span);
        if (c->after == NULL) {
            if (rc != MX_ENOTFOUND)
                fail_msg("case %zu: found %s", i, c->name);
            continue;
        }
        if (rc != 0)
            fail_msg("case %zu: %s not found", i, c->name);
        size_t n;
        char *out = mx_cfgedit_cut(c->text, strlen(c->text), &span, &n);
        if (strcmp(out, c->after) != 0)
            fail_msg("case %zu: got\n%s\nwant\n%s", i, out, c->after);
        assert_int_equal(n, strlen(c->after));
        free(out);
    }
}

static void test_cfgedit_append(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", "[n]\n"},
        {"a = 1\n", "a = 1\n\n[n]\n"},
        {"a = 1", "a = 1\n\n[n]\n"},
        {"a = 1\n\n", "a = 1\n\n[n]\n"},
        {"\n", "\n[n]\n"},
        {"# end\n", "# end\n\n[n]\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n;
        char *out = mx_cfgedit_append(cases[i].text, strlen(cases[i].text), "[n]\n", &n);
        if (strcmp(out, cases[i].want) != 0)
            fail_msg("case %zu: got \"%s\"", i, out);
        assert_int_equal(n, strlen(out));
        free(out);
    }
    /* append then cut: the bytes come back */
    const char *text = "# top\n[a]\nk = 1  # why\n";
    size_t n, m;
    char *added = mx_cfgedit_append(text, strlen(text), "[servers.x]\nurl = \"u\"\n", &n);
    struct mx_cfgedit_span span;
    assert_int_equal(mx_cfgedit_find(added, n, "servers.x", &span), 0);
    char *back = mx_cfgedit_cut(added, n, &span, &m);
    assert_string_equal(back, text);
    free(back);
    free(added);
}

static void test_cfgedit_quote(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain", "\"plain\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"tab\there", "\"tab\\there\""},
        {"nl\nx\x7f", "\"nl\\u000ax\\u007f\""},
        {"", "\"\""},
        {"ünï", "\"ünï\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *q = mx_cfgedit_quote(cases[i].in);
        assert_string_equal(q, cases[i].want);
        free(q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfgedit_cut),
        cmocka_unit_test(test_cfgedit_append),
        cmocka_unit_test(test_cfgedit_quote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
