/* SPDX-License-Identifier: MIT */
/*
 * The TOML-subset parser: every error class at its exact line and column,
 * the caps, and the happy paths (escapes, multi-line arrays, comments, table
 * order and positions).
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "toml.h"

struct err_case {
    const char *name;
    const char *in;
    int line;
    int col;
    const char *msg; /* substring of the message */
};

static const struct err_case err_cases[] = {
    /* strings */
    {"unterminated string at eol", "a = \"abc\nb = 1\n", 1, 5, "unterminated string"},
    {"unterminated string at eof", "a = \"abc", 1, 5, "unterminated string"},
    {"unterminated after backslash", "a = \"abc\\", 1, 5, "unterminated string"},
    {"bad escape", "a = \"x\\qy\"", 1, 7, "invalid escape sequence '\\q'"},
    {"bad \\u digits", "a = \"\\u12G4\"", 1, 6, "invalid \\u escape: expected 4 hex digits"},
    {"short \\U", "a = \"\\U0001F6\"", 1, 6, "invalid \\U escape: expected 8 hex digits"},
    {"surrogate escape", "a = \"\\uD800\"", 1, 6, "not a Unicode scalar value"},
    {"escape above U+10FFFF", "a = \"\\U00110000\"", 1, 6, "not a Unicode scalar value"},
    {"NUL escape", "a = \"\\u0000\"", 1, 6, "NUL"},
    {"control char in string", "a = \"x\x01y\"", 1, 7, "control character U+0001 in string"},
    {"DEL in string", "a = \"x\x7f\"", 1, 7, "control character U+007F"},
    {"bare CR in string", "a = \"x\ry\"", 1, 7, "control character U+000D"},
    {"invalid UTF-8 in string", "a = \"\xff\"", 1, 6, "invalid UTF-8 in string"},
    {"overlong UTF-8", "a = \"\xc0\xaf\"", 1, 6, "invalid UTF-8"},
    {"UTF-8 surrogate", "a = \"\xed\xa0\x80\"", 1, 6, "invalid UTF-8"},
    {"literal string", "a = 'x'", 1, 5, "literal strings"},
    {"multi-line string", "a = \"\"\"x\"\"\"", 1, 5, "multi-line strings"},
    /* keys and '=' */
    {"missing equals", "key value\n", 1, 5, "expected '=' after key 'key', found 'v'"},
    {"missing equals at eol", "key\n", 1, 4, "expected '=' after key 'key', found end of line"},
    {"missing equals at eof", "x = 1\nkey", 2, 4, "found end of file"},
    {"missing value", "a =\n", 1, 4, "missing value after '='"},
    {"missing value at eof", "a = ", 1, 5, "missing value"},
    {"missing value before comment", "a = # c\n", 1, 5, "missing value"},
    {"invalid key char", "a$b = 1\n", 1, 2, "invalid character '$' in key"},
    {"invalid first key char", "$a = 1\n", 1, 1, "expected a key or a [table] header, found '$'"},
    {"non-ASCII key", "\xc3\xa9 = 1\n", 1, 1, "found non-ASCII character"},
    {"quoted key", "\"a\" = 1\n", 1, 1, "quoted keys are not supported"},
    {"dotted key", "a.b = 1\n", 1, 2, "dotted keys are not supported"},
    {"missing key", "= 1\n", 1, 1, "missing key before '='"},
    {"duplicate key", "a = 1\nb = 2\na = 3\n", 3, 1, "duplicate key 'a', first defined at line 1"},
    {"duplicate key in table", "[t]\n  x = 1\n  x = 2\n", 3, 3,
     "duplicate key 'x', first defined at line 2"},
    {"key clashes with table", "[a.b]\n[a]\nb = 1\n", 3, 1,
     "duplicate key 'b', first defined at line 1"},
    /* integers */
    {"bad integer", "a = 12abc\n", 1, 5, "strings need double quotes: write a = \"...\""},
    {"float", "a = 1.5\n", 1, 6, "floats are not supported"},
    {"exponent", "a = 1e3\n", 1, 6, "floats are not supported"},
    {"inf", "a = inf\n", 1, 5, "floats are not supported"},
    {"signed inf", "a = -inf\n", 1, 6, "floats are not supported"},
    {"leading zero", "a = 012\n", 1, 5, "leading zeros are not allowed"},
    {"signed leading zero", "a = -07\n", 1, 6, "leading zeros are not allowed"},
    {"hex", "a = 0x1F\n", 1, 6, "only decimal integers are supported"},
    {"underscore", "a = 1_000\n", 1, 6, "underscores in integers are not supported"},
    {"date", "a = 1979-05-27\n", 1, 9, "dates and times are not supported"},
    {"sign only", "a = -\n", 1, 6, "expected a digit, found end of line"},
    {"integer overflow", "a = 9223372036854775808\n", 1, 5, "integer out of range"},
    {"integer underflow", "a = -9223372036854775809\n", 1, 5, "integer out of range"},
    /* other values */
    {"bare word", "a = yes\n", 1, 5, "strings need double quotes: write a = \"...\""},
    {"capital True", "a = True\n", 1, 5, "strings need double quotes"},
    {"inline table", "a = {}\n", 1, 5, "inline tables are not supported"},
    {"leading dot", "a = .5\n", 1, 5, "floats are not supported"},
    {"unexpected value char", "a = =\n", 1, 5, "expected a value, found '='"},
    {"garbage after value", "a = 1 x\n", 1, 7, "unexpected 'x' after value"},
    {"garbage after string", "a = \"s\" \"t\"\n", 1, 9, "unexpected '\"' after value"},
    {"garbage after bool", "a = true false\n", 1, 10, "unexpected 'f' after value"},
    {"lone CR after value", "a = 1\rb = 2\n", 1, 6, "unexpected carriage return after value"},
    {"lone CR at line start", "\rb = 2\n", 1, 1, "carriage return without a line feed"},
    /* arrays */
    {"mixed array", "a = [1, \"x\"]\n", 1, 9,
     "mixed types in array: expected an integer, found a string"},
    {"mixed array on later line", "a = [\n  \"x\",\n  2,\n]\n", 3, 3,
     "expected a string, found an integer"},
    {"boolean array", "a = [true]\n", 1, 6, "arrays may hold only strings or integers"},
    {"nested array", "a = [[1]]\n", 1, 6, "nested arrays are not supported"},
    {"unterminated array", "a = [1, 2\n", 1, 5, "unterminated array"},
    {"unterminated empty array", "\na = [\n# c\n", 2, 5, "unterminated array"},
    {"missing comma", "a = [1 2]\n", 1, 8, "expected ',' or ']' after array item, found '2'"},
    {"array runs into next key", "a = [1,\nb = 2\n", 2, 1,
     "key 'b' inside an array: close the array opened at line 1 with ']'"},
    {"array missing close before key", "a = [1\nb = 2\n", 2, 1, "(array opened at line 1)"},
    {"double comma", "a = [1,,2]\n", 1, 8, "expected a value, found ','"},
    {"leading comma", "a = [,]\n", 1, 6, "expected a value, found ','"},
    /* tables */
    {"duplicate table", "[x]\na = 1\n[x]\n", 3, 1, "duplicate table [x], first defined at line 1"},
    {"duplicate dotted table", "[a.b]\n[a.b]\n", 2, 1,
     "duplicate table [a.b], first defined at line 1"},
    {"table over value", "a = 1\n[a.b]\n", 2, 2, "'a' is already defined as a value at line 1"},
    {"space in table name", "[a b]\n", 1, 4, "expected '.' or ']' in table header, found 'b'"},
    {"empty table name", "[]\n", 1, 2, "empty table name"},
    {"unclosed header", "[a\n", 1, 3, "expected '.' or ']' in table header, found end of line"},
    {"empty segment", "[a.]\n", 1, 4, "expected a table name, found ']'"},
    {"bad table char", "[a$]\n", 1, 3, "invalid character '$' in table name"},
    {"quoted table name", "[\"a\"]\n", 1, 2, "quoted keys are not supported"},
    {"array of tables", "[[a]]\n", 1, 1, "arrays of tables"},
    {"garbage after header", "[a] x\n", 1, 5, "unexpected 'x' after table header"},
    /* comments, columns, line ends */
    {"control char in comment", "# x\x01\n", 1, 4, "control character U+0001 in comment"},
    {"bad UTF-8 in comment", "a = 1 # \xfe\n", 1, 9, "invalid UTF-8 in comment"},
    {"columns count characters", "a = \"\xc3\xa9\xe2\x82\xac\" x\n", 1, 10, "unexpected 'x'"},
    {"CRLF lines", "a = 1\r\nb = 2\r\nb = 3\r\n", 3, 1, "duplicate key 'b'"},
    {"tab counts one column", "\ta = 1 x\n", 1, 8, "unexpected 'x'"},
};

static void test_toml_errors_have_positions(void **state)
{
    int bad = 0;
    (void)state;
    for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
        const struct err_case *c = &err_cases[i];
        struct mx_toml_table *t = NULL;
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        int rc = mx_toml_parse("t.toml", c->in, strlen(c->in), &t, &d);
        if (rc != MX_EINVAL || t != NULL || d.line != c->line || d.col != c->col ||
            strstr(d.msg, c->msg) == NULL || strcmp(d.file, "t.toml") != 0) {
            print_error("case '%s': rc %d, got %d:%d \"%s\", want %d:%d \"%s\"\n", c->name, rc,
                        d.line, d.col, d.msg, c->line, c->col, c->msg);
            bad++;
        }
        mx_toml_free(t);
    }
    assert_int_equal(bad, 0);
}

static struct mx_toml_table *parse_ok(const char *in)
{
    struct mx_toml_table *t = NULL;
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    int rc = mx_toml_parse("t.toml", in, strlen(in), &t, &d);
    if (rc)
        print_error("unexpected error %d:%d: %s\n", d.line, d.col, d.msg);
    assert_int_equal(rc, 0);
    assert_non_null(t);
    return t;
}

static char shown_table[64], shown_key[64];

/* Stands in for the model: values of "address" may be quoted back. */
static bool may_show(const char *table, const char *key)
{
    snprintf(shown_table, sizeof(shown_table), "%s", table);
    snprintf(shown_key, sizeof(shown_key), "%s", key);
    return strcmp(key, "address") == 0;
}

/* A value without quotes: the message says so, verbatim, at the value;
 * it quotes the value back only where |may_show| allows. */
static void test_toml_bare_values_need_quotes(void **state)
{
    static const struct {
        const char *in;
        bool hook;
        const char *want;
    } cases[] = {
        {"a = yes\n", false, "t.toml:1:5: strings need double quotes: write a = \"...\""},
        {"address = 127.0.0.1:8443\n", false,
         "t.toml:1:11: strings need double quotes: write address = \"...\""},
        {"[listen]\naddress = 127.0.0.1:8443 # c\n", true,
         "t.toml:2:11: strings need double quotes: write address = \"127.0.0.1:8443\""},
        {"[l]\naddress = ab\"c\n", true,
         "t.toml:2:11: strings need double quotes: write address = \"...\""},
        {"[l]\naddress = [x, \"y\"]\n", true,
         "t.toml:2:12: strings need double quotes, also in arrays: write \"x\""},
        {"[l]\nother = [x]\n", true,
         "t.toml:2:10: strings need double quotes, also in arrays: write other = [\"...\", ...]"},
        {"t = http://127.0.0.1:1/mcp\n", true,
         "t.toml:1:5: strings need double quotes: write t = \"...\""},
        {"p = /tmp/x\n", false, "t.toml:1:5: strings need double quotes: write p = \"...\""},
        {"d = 30s\n", false, "t.toml:1:5: strings need double quotes: write d = \"...\""},
        /* what TOML gives another meaning keeps its message */
        {"f = 1.5\n", false, "t.toml:1:6: floats are not supported"},
        {"f = -2e10\n", false, "t.toml:1:7: floats are not supported"},
        {"d = 1979-05-27\n", false, "t.toml:1:9: dates and times are not supported"},
        {"t = 07:32:00\n", false, "t.toml:1:7: dates and times are not supported"},
        {"t = 17:32:00\n", false, "t.toml:1:7: dates and times are not supported"},
        {"h = 0xff\n", false, "t.toml:1:6: only decimal integers are supported"},
        {"u = 1_000\n", false, "t.toml:1:6: underscores in integers are not supported"},
    };
    int bad = 0;
    char got[1024];
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_toml_table *t = NULL;
        struct mx_diag d;
        memset(&d, 0, sizeof(d));
        int rc = mx_toml_parse_shown("t.toml", cases[i].in, strlen(cases[i].in),
                                     cases[i].hook ? may_show : NULL, &t, &d);
        mx_diag_format(&d, got, sizeof(got));
        if (rc != MX_EINVAL || t != NULL || strcmp(got, cases[i].want) != 0) {
            print_error("case %zu: rc %d\n  got  %s\n  want %s\n", i, rc, got, cases[i].want);
            bad++;
        }
        mx_toml_free(t);
    }
    assert_int_equal(bad, 0);
    struct mx_toml_table *t = NULL;
    struct mx_diag d;
    const char *in = "[a.b]\nkey = bare\n";
    assert_int_equal(mx_toml_parse_shown("t.toml", in, strlen(in), may_show, &t, &d), MX_EINVAL);
    assert_string_equal(shown_table, "a.b");
    assert_string_equal(shown_key, "key");
}

static void test_toml_nul_byte_is_an_error(void **state)
{
    static const char in[] = "a = \"x\0y\"";
    struct mx_toml_table *t = NULL;
    struct mx_diag d;
    (void)state;
    assert_int_equal(mx_toml_parse("t.toml", in, sizeof(in) - 1, &t, &d), MX_EINVAL);
    assert_int_equal(d.line, 1);
    assert_int_equal(d.col, 7);
    assert_non_null(strstr(d.msg, "U+0000"));
    assert_int_equal(mx_toml_parse("t.toml", "\0", 1, &t, &d), MX_EINVAL);
    assert_int_equal(d.col, 1);
}

static void test_toml_input_cap(void **state)
{
    struct mx_toml_table *t = NULL;
    struct mx_diag d;
    (void)state;
    char *big = malloc(MX_TOML_MAX_INPUT + 1);
    assert_non_null(big);
    memset(big, '\n', MX_TOML_MAX_INPUT + 1);
    /* at the cap: blank lines parse */
    assert_int_equal(mx_toml_parse("t.toml", big, MX_TOML_MAX_INPUT, &t, &d), 0);
    mx_toml_free(t);
    t = NULL;
    assert_int_equal(mx_toml_parse("t.toml", big, MX_TOML_MAX_INPUT + 1, &t, &d), MX_ELIMIT);
    assert_null(t);
    assert_int_equal(d.line, 0);
    assert_non_null(strstr(d.msg, "larger than"));
    free(big);
}

static void test_toml_depth_cap(void **state)
{
    struct mx_toml_table *t = NULL;
    struct mx_diag d;
    (void)state;
    t = parse_ok("[a.b.c.d.e.f.g.h]\nx = 1\n");
    mx_toml_free(t);
    t = NULL;
    const char *deep = "[a.b.c.d.e.f.g.h.i]\n";
    assert_int_equal(mx_toml_parse("t.toml", deep, strlen(deep), &t, &d), MX_ELIMIT);
    assert_int_equal(d.line, 1);
    assert_int_equal(d.col, 18);
    assert_non_null(strstr(d.msg, "deeper than 8"));
}

/* |n| lines "k0 = 1", "k1 = 1", ... */
static char *many_keys(size_t n)
{
    size_t cap = n * 16 + 1, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "k%zu = 1\n", i);
    return s;
}

static void test_toml_key_and_item_caps(void **state)
{
    struct mx_toml_table *t = NULL;
    struct mx_diag d;
    (void)state;
    char *s = many_keys(MX_TOML_MAX_KEYS);
    t = parse_ok(s);
    assert_int_equal(t->cnt, MX_TOML_MAX_KEYS);
    mx_toml_free(t);
    t = NULL;
    free(s);
    s = many_keys(MX_TOML_MAX_KEYS + 1);
    assert_int_equal(mx_toml_parse("t.toml", s, strlen(s), &t, &d), MX_ELIMIT);
    assert_int_equal(d.line, MX_TOML_MAX_KEYS + 1);
    free(s);

    size_t cap = MX_TOML_MAX_ITEMS * 8 + 16, len = 0;
    s = malloc(cap);
    assert_non_null(s);
    len += (size_t)snprintf(s + len, cap - len, "a = [");
    for (size_t i = 0; i < MX_TOML_MAX_ITEMS; i++)
        len += (size_t)snprintf(s + len, cap - len, "%zu,", i);
    snprintf(s + len, cap - len, "]\n");
    t = parse_ok(s);
    assert_int_equal(t->entries[0].val.item_cnt, MX_TOML_MAX_ITEMS);
    mx_toml_free(t);
    t = NULL;
    snprintf(s + len, cap - len, "1]\n");
    assert_int_equal(mx_toml_parse("t.toml", s, strlen(s), &t, &d), MX_ELIMIT);
    assert_non_null(strstr(d.msg, "items"));
    free(s);
}

static void test_toml_escapes(void **state)
{
    (void)state;
    struct mx_toml_table *t =
        parse_ok("s = \"q\\\" b\\\\ n\\n t\\t r\\r b\\b f\\f u\\u00e9 U\\U0001F600 raw\ttab\"\n"
                 "e = \"\"\n"
                 "u = \"h\xc3\xa9llo \xe2\x82\xac\"\n");
    const struct mx_toml_entry *e = mx_toml_find(t, "s");
    assert_non_null(e);
    assert_int_equal(e->val.type, MX_TOML_STRING);
    static const char want[] = "q\" b\\ n\n t\t r\r b\b f\f u\xc3\xa9 U\xf0\x9f\x98\x80 raw\ttab";
    assert_int_equal(e->val.str_len, sizeof(want) - 1);
    assert_memory_equal(e->val.str, want, sizeof(want));
    e = mx_toml_find(t, "e");
    assert_int_equal(e->val.str_len, 0);
    assert_string_equal(e->val.str, "");
    assert_string_equal(mx_toml_find(t, "u")->val.str, "h\xc3\xa9llo \xe2\x82\xac");
    mx_toml_free(t);
}

static void test_toml_integers_and_booleans(void **state)
{
    (void)state;
    struct mx_toml_table *t = parse_ok("a = 0\nb = -9223372036854775808\nc = 9223372036854775807\n"
                                       "d = +42\ne = -0\nf = true\ng = false\n");
    assert_int_equal(mx_toml_find(t, "a")->val.i, 0);
    assert_true(mx_toml_find(t, "b")->val.i == INT64_MIN);
    assert_true(mx_toml_find(t, "c")->val.i == INT64_MAX);
    assert_int_equal(mx_toml_find(t, "d")->val.i, 42);
    assert_int_equal(mx_toml_find(t, "e")->val.i, 0);
    assert_int_equal(mx_toml_find(t, "f")->val.type, MX_TOML_BOOL);
    assert_true(mx_toml_find(t, "f")->val.b);
    assert_false(mx_toml_find(t, "g")->val.b);
    mx_toml_free(t);
}

static void test_toml_multiline_arrays(void **state)
{
    (void)state;
    struct mx_toml_table *t = parse_ok("tools = [   # first\n"
                                       "  \"a\",  # second\n"
                                       "  # a whole comment line\n"
                                       "\n"
                                       "  \"b\",\n"
                                       "]\n"
                                       "codes = [502,503 , 504]\n"
                                       "empty = [ ]\n"
                                       "crlf = [\r\n1,\r\n2\r\n]\r\n");
    const struct mx_toml_entry *e = mx_toml_find(t, "tools");
    assert_int_equal(e->val.type, MX_TOML_ARRAY);
    assert_int_equal(e->val.item_cnt, 2);
    assert_string_equal(e->val.items[0].str, "a");
    assert_int_equal(e->val.items[0].line, 2);
    assert_int_equal(e->val.items[0].col, 3);
    assert_string_equal(e->val.items[1].str, "b");
    assert_int_equal(e->val.items[1].line, 5);
    e = mx_toml_find(t, "codes");
    assert_int_equal(e->line, 7);
    assert_int_equal(e->val.item_cnt, 3);
    assert_int_equal(e->val.items[2].i, 504);
    assert_int_equal(e->val.items[2].col, 20);
    assert_int_equal(mx_toml_find(t, "empty")->val.item_cnt, 0);
    e = mx_toml_find(t, "crlf");
    assert_int_equal(e->line, 9);
    assert_int_equal(e->val.item_cnt, 2);
    mx_toml_free(t);
}

static void test_toml_tables_keep_order_and_positions(void **state)
{
    (void)state;
    struct mx_toml_table *t = parse_ok("\xef\xbb\xbf# leading comment\n"
                                       "top = 1\n"
                                       "\n"
                                       "[listen]\n"
                                       "  address = \"x\"   # trailing\n"
                                       "[ servers . files ]\n"
                                       "url = \"u\"\n"
                                       "[servers.everything]\n"
                                       "[servers]\n"
                                       "[a.b]\n"
                                       "[a]\n"
                                       "k = 2\n");
    assert_string_equal(t->name, "");
    assert_int_equal(t->cnt, 4);
    assert_string_equal(t->entries[0].key, "top");
    assert_int_equal(t->entries[0].line, 2);
    assert_int_equal(t->entries[0].col, 1);
    assert_int_equal(t->entries[0].val.col, 7);
    assert_string_equal(t->entries[1].key, "listen");
    assert_string_equal(t->entries[2].key, "servers");
    assert_string_equal(t->entries[3].key, "a");

    const struct mx_toml_table *listen = t->entries[1].val.table;
    assert_true(listen->defined);
    assert_int_equal(listen->line, 4);
    const struct mx_toml_entry *addr = mx_toml_find(listen, "address");
    assert_int_equal(addr->line, 5);
    assert_int_equal(addr->col, 3);
    assert_int_equal(addr->val.col, 13);

    const struct mx_toml_entry *se = &t->entries[2];
    assert_int_equal(se->val.type, MX_TOML_TABLE);
    const struct mx_toml_table *servers = se->val.table;
    assert_string_equal(servers->name, "servers");
    assert_true(servers->defined);
    assert_int_equal(servers->line, 9);
    assert_int_equal(servers->cnt, 2);
    assert_string_equal(servers->entries[0].key, "files");
    /* the segment of the header that named it */
    assert_int_equal(servers->entries[0].line, 6);
    assert_int_equal(servers->entries[0].col, 13);
    assert_string_equal(servers->entries[0].val.table->name, "servers.files");
    assert_string_equal(servers->entries[1].key, "everything");
    assert_true(servers->entries[1].val.table->defined);
    assert_int_equal(servers->entries[1].val.table->cnt, 0);

    const struct mx_toml_table *a = t->entries[3].val.table;
    assert_true(a->defined);
    assert_int_equal(a->line, 11);
    assert_string_equal(a->entries[0].key, "b");
    assert_string_equal(a->entries[1].key, "k");
    assert_null(mx_toml_find(a, "missing"));
    mx_toml_free(t);
}

static void test_toml_empty_and_comment_only(void **state)
{
    (void)state;
    struct mx_toml_table *t = parse_ok("");
    assert_int_equal(t->cnt, 0);
    mx_toml_free(t);
    t = parse_ok("# only\n\n   # comments \xc3\xa9\n\t\n");
    assert_int_equal(t->cnt, 0);
    mx_toml_free(t);
    t = parse_ok("a=1#c");
    assert_int_equal(mx_toml_find(t, "a")->val.i, 1);
    mx_toml_free(t);
    mx_toml_free(NULL);
}

static void test_toml_type_names(void **state)
{
    (void)state;
    assert_string_equal(mx_toml_type_name(MX_TOML_STRING), "a string");
    assert_string_equal(mx_toml_type_name(MX_TOML_INT), "an integer");
    assert_string_equal(mx_toml_type_name(MX_TOML_BOOL), "a boolean");
    assert_string_equal(mx_toml_type_name(MX_TOML_ARRAY), "an array");
    assert_string_equal(mx_toml_type_name(MX_TOML_TABLE), "a table");
}

static int no_leaks(void **state)
{
    (void)state;
    return mx_toml_live_cnt() == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_toml_errors_have_positions, no_leaks),
        cmocka_unit_test_teardown(test_toml_bare_values_need_quotes, no_leaks),
        cmocka_unit_test_teardown(test_toml_nul_byte_is_an_error, no_leaks),
        cmocka_unit_test_teardown(test_toml_input_cap, no_leaks),
        cmocka_unit_test_teardown(test_toml_depth_cap, no_leaks),
        cmocka_unit_test_teardown(test_toml_key_and_item_caps, no_leaks),
        cmocka_unit_test_teardown(test_toml_escapes, no_leaks),
        cmocka_unit_test_teardown(test_toml_integers_and_booleans, no_leaks),
        cmocka_unit_test_teardown(test_toml_multiline_arrays, no_leaks),
        cmocka_unit_test_teardown(test_toml_tables_keep_order_and_positions, no_leaks),
        cmocka_unit_test_teardown(test_toml_empty_and_comment_only, no_leaks),
        cmocka_unit_test_teardown(test_toml_type_names, no_leaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
