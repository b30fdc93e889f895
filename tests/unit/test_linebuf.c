/* SPDX-License-Identifier: MIT */
/*
 * Line framing of a stdio upstream's output: the same lines for every split
 * of the input, CRLF, empty lines, a last line without LF, and lines at the
 * cap (kept) and over it (dropped whole, counted, framing resumes after).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "linebuf.h"

#define MAX_OUT 64

struct got {
    char *lines[MAX_OUT];
    size_t cnt;
};

static void got_clear(struct got *g)
{
    for (size_t i = 0; i < g->cnt; i++)
        free(g->lines[i]);
    g->cnt = 0;
}

static void take_all(struct mx_linebuf *lb, struct got *g)
{
    struct mx_str line;
    while (mx_linebuf_next(lb, &line)) {
        assert_true(g->cnt < MAX_OUT);
        char *copy = malloc(line.len + 1);
        assert_non_null(copy);
        memcpy(copy, line.p, line.len);
        copy[line.len] = '\0';
        g->lines[g->cnt++] = copy;
    }
}

static void finish(struct mx_linebuf *lb, struct got *g)
{
    struct mx_str line;
    take_all(lb, g);
    if (mx_linebuf_finish(lb, &line)) {
        assert_true(g->cnt < MAX_OUT);
        char *copy = malloc(line.len + 1);
        assert_non_null(copy);
        memcpy(copy, line.p, line.len);
        copy[line.len] = '\0';
        g->lines[g->cnt++] = copy;
    }
}

static void expect(const struct got *g, const char *const *want, size_t cnt)
{
    if (g->cnt != cnt)
        fail_msg("got %zu lines, want %zu", g->cnt, cnt);
    for (size_t i = 0; i < cnt; i++)
        assert_string_equal(g->lines[i], want[i]);
}

/* Feed |in| split at |cut1| and |cut2|, take lines after each feed. */
static void feed_split(const char *in, size_t len, size_t cut1, size_t cut2, size_t max,
                       struct got *g, uint64_t *dropped)
{
    struct mx_linebuf lb;
    mx_linebuf_init(&lb, max);
    mx_linebuf_feed(&lb, in, cut1);
    take_all(&lb, g);
    mx_linebuf_feed(&lb, in + cut1, cut2 - cut1);
    take_all(&lb, g);
    mx_linebuf_feed(&lb, in + cut2, len - cut2);
    finish(&lb, g);
    *dropped = mx_linebuf_take_dropped(&lb);
    mx_linebuf_clear(&lb);
}

static void test_linebuf_every_split(void **state)
{
    static const char in[] = "{\"a\":1}\r\n\n{\"b\":2}\nplain text\r\n\r\n{\"c\":3}";
    static const char *const want[] = {"{\"a\":1}", "", "{\"b\":2}", "plain text", "", "{\"c\":3}"};
    size_t len = sizeof(in) - 1;
    (void)state;
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b++) {
            struct got g = {0};
            uint64_t dropped;
            feed_split(in, len, a, b, 1024, &g, &dropped);
            expect(&g, want, sizeof(want) / sizeof(want[0]));
            assert_int_equal(dropped, 0);
            got_clear(&g);
        }
    }
}

static void test_linebuf_byte_by_byte(void **state)
{
    static const char in[] = "one\r\ntwo\nthree\r\n";
    static const char *const want[] = {"one", "two", "three"};
    struct mx_linebuf lb;
    struct got g = {0};
    (void)state;
    mx_linebuf_init(&lb, 16);
    for (size_t i = 0; i < sizeof(in) - 1; i++) {
        mx_linebuf_feed(&lb, in + i, 1);
        take_all(&lb, &g);
    }
    finish(&lb, &g);
    expect(&g, want, 3);
    assert_int_equal(mx_linebuf_len(&lb), 0);
    got_clear(&g);
    mx_linebuf_clear(&lb);
}

static void test_linebuf_cap(void **state)
{
    /* cap 8: "12345678" is kept, "123456789" is not, with and without CR,
     * whether the long line arrives whole or in pieces */
    static const char in[] = "12345678\n123456789\nok\n1234567\r\n12345678\r\nlast";
    static const char *const want[] = {"12345678", "ok", "1234567", "last"};
    size_t len = sizeof(in) - 1;
    (void)state;
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b++) {
            struct got g = {0};
            uint64_t dropped;
            feed_split(in, len, a, b, 8, &g, &dropped);
            expect(&g, want, sizeof(want) / sizeof(want[0]));
            assert_int_equal(dropped, 2);
            got_clear(&g);
        }
    }
}

static void test_linebuf_long_line_streamed(void **state)
{
    /* a line far over the cap, fed in chunks: nothing of it is held, and
     * the next line comes through */
    struct mx_linebuf lb;
    struct got g = {0};
    char chunk[1000];
    (void)state;
    memset(chunk, 'x', sizeof(chunk));
    mx_linebuf_init(&lb, 100);
    mx_linebuf_feed(&lb, "first\n", 6);
    for (int i = 0; i < 1000; i++) {
        mx_linebuf_feed(&lb, chunk, sizeof(chunk));
        take_all(&lb, &g);
        assert_true(mx_linebuf_len(&lb) <= 100);
    }
    mx_linebuf_feed(&lb, "xx\nsecond\n", 10);
    finish(&lb, &g);
    static const char *const want[] = {"first", "second"};
    expect(&g, want, 2);
    assert_int_equal(mx_linebuf_take_dropped(&lb), 1);
    assert_int_equal(mx_linebuf_take_dropped(&lb), 0);
    got_clear(&g);
    mx_linebuf_clear(&lb);
}

static void test_linebuf_over_cap_at_end(void **state)
{
    /* no final LF and over the cap: nothing at finish */
    struct mx_linebuf lb;
    struct mx_str line;
    (void)state;
    mx_linebuf_init(&lb, 4);
    mx_linebuf_feed(&lb, "abcdefgh", 8);
    assert_false(mx_linebuf_next(&lb, &line));
    assert_false(mx_linebuf_finish(&lb, &line));
    assert_int_equal(mx_linebuf_take_dropped(&lb), 1);
    /* an empty input and a lone CR */
    mx_linebuf_clear(&lb);
    assert_false(mx_linebuf_finish(&lb, &line));
    mx_linebuf_feed(&lb, "\r", 1);
    assert_true(mx_linebuf_finish(&lb, &line));
    assert_int_equal(line.len, 0);
    mx_linebuf_clear(&lb);
}

static void test_linebuf_many_lines_one_feed(void **state)
{
    /* a burst larger than the buffer's first allocation */
    struct mx_linebuf lb;
    struct mx_str line;
    char text[20000];
    size_t len = 0;
    (void)state;
    for (int i = 0; i < 2000; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%d\n", i);
    mx_linebuf_init(&lb, 16);
    mx_linebuf_feed(&lb, text, len);
    for (int i = 0; i < 2000; i++) {
        char want[16];
        snprintf(want, sizeof(want), "%d", i);
        assert_true(mx_linebuf_next(&lb, &line));
        assert_int_equal(line.len, strlen(want));
        assert_memory_equal(line.p, want, line.len);
    }
    assert_false(mx_linebuf_next(&lb, &line));
    mx_linebuf_clear(&lb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linebuf_every_split),
        cmocka_unit_test(test_linebuf_byte_by_byte),
        cmocka_unit_test(test_linebuf_cap),
        cmocka_unit_test(test_linebuf_long_line_streamed),
        cmocka_unit_test(test_linebuf_over_cap_at_end),
        cmocka_unit_test(test_linebuf_many_lines_one_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
