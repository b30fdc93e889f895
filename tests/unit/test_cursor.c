/* SPDX-License-Identifier: MIT */
/*
 * List cursors: round trips of every size, the canonical text only, and
 * refusal of anything else (other key, flipped bits, bad base64, padding
 * bits, truncation, sources out of order, unknown version), and a cursor
 * over every upstream slot the gateway can have.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cursor.h"
#include "err.h"
#include "gateway.h"

static const uint8_t key[MX_CURSOR_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const uint8_t other[MX_CURSOR_KEY_LEN] = "fedcba9876543210fedcba9876543210";

static struct mx_cursor make(uint8_t kind, size_t cnt)
{
    struct mx_cursor c;
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    c.cnt = (uint16_t)cnt;
    for (size_t i = 0; i < cnt; i++) {
        c.v[i].src = (uint8_t)i;
        c.v[i].gen = 0xfffffff0u + (uint32_t)i;
        c.v[i].pos = (uint32_t)(i * 1000003u);
    }
    return c;
}

static void test_cursor_round_trip(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 3, 7, 64, MX_CURSOR_MAX_SOURCES};
    char text[MX_CURSOR_TEXT_MAX];
    (void)state;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        struct mx_cursor c = make(2, sizes[k]), d;
        int n = mx_cursor_encode(&c, key, text, sizeof(text));
        assert_true(n > 0);
        assert_int_equal((size_t)n, strlen(text));
        assert_null(strpbrk(text, "+/="));
        assert_int_equal(mx_cursor_decode(mx_str_make(text, (size_t)n), key, &d), 0);
        assert_int_equal(d.kind, 2);
        assert_int_equal(d.cnt, sizes[k]);
        assert_memory_equal(d.v, c.v, sizes[k] * sizeof(c.v[0]));
        /* made with another key: refused */
        assert_int_equal(mx_cursor_decode(mx_str_make(text, (size_t)n), other, &d), MX_EINVAL);
    }
}

static void test_cursor_refuses_garbage(void **state)
{
    char text[MX_CURSOR_TEXT_MAX];
    struct mx_cursor c = make(0, 3), d;
    (void)state;
    int n = mx_cursor_encode(&c, key, text, sizeof(text));
    assert_true(n > 4);
    /* every single-character change is refused */
    for (int i = 0; i < n; i++) {
        char save = text[i];
        text[i] = save == 'A' ? 'B' : 'A';
        assert_int_equal(mx_cursor_decode(mx_str_make(text, (size_t)n), key, &d), MX_EINVAL);
        text[i] = save;
    }
    /* every truncation and an extra character */
    for (int len = 0; len < n; len++)
        assert_int_equal(mx_cursor_decode(mx_str_make(text, (size_t)len), key, &d), MX_EINVAL);
    text[n] = 'A';
    assert_int_equal(mx_cursor_decode(mx_str_make(text, (size_t)n + 1), key, &d), MX_EINVAL);
    text[n] = '\0';
    static const char *const bad[] = {"",     "=",        "AAAA====", "!!!!", "AAAA AAAA",
                                      "a+b/", "\xff\xfe", "AQ",       "AQAA", "AQAAAAAAAAAAAA"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mx_cursor_decode(mx_str_cstr(bad[i]), key, &d), MX_EINVAL);
    /* sources must be strictly increasing to encode */
    c.v[1].src = c.v[0].src;
    assert_int_equal(mx_cursor_encode(&c, key, text, sizeof(text)), MX_EINVAL);
    /* too small a buffer */
    c = make(0, 3);
    assert_int_equal(mx_cursor_encode(&c, key, text, 10), MX_ELIMIT);
    assert_true(mx_cursor_encode(&c, key, text, (size_t)n + 1) == n);
    assert_int_equal(mx_cursor_encode(&c, key, text, (size_t)n), MX_ELIMIT);
}

/*
 * Every slot in use: /mcp fills a cursor the way this does, one entry per
 * upstream slot with a list, so it must hold MX_GATEWAY_MAX_SLOTS entries.
 * On the heap, so that a write past its end is caught under ASan.
 */
static void test_cursor_every_slot(void **state)
{
    char text[MX_CURSOR_TEXT_MAX];
    struct mx_cursor *c = calloc(1, sizeof(*c)), *d = calloc(1, sizeof(*d));
    (void)state;
    assert_non_null(c);
    assert_non_null(d);
    c->kind = 1;
    for (size_t i = 0; i < MX_GATEWAY_MAX_SLOTS; i++) {
        c->v[c->cnt].src = (uint8_t)i;
        c->v[c->cnt].gen = (uint32_t)i * 7u;
        c->v[c->cnt].pos = (uint32_t)i + 1u;
        c->cnt++;
    }
    assert_int_equal(c->cnt, MX_GATEWAY_MAX_SLOTS);
    int n = mx_cursor_encode(c, key, text, sizeof(text));
    assert_true(n > 0);
    assert_int_equal(mx_cursor_decode(mx_str_make(text, (size_t)n), key, d), 0);
    assert_int_equal(d->cnt, MX_GATEWAY_MAX_SLOTS);
    for (size_t i = 0; i < d->cnt; i++) {
        assert_int_equal(d->v[i].src, i);
        assert_int_equal(d->v[i].pos, i + 1);
    }
    assert_memory_equal(d->v, c->v, MX_GATEWAY_MAX_SLOTS * sizeof(c->v[0]));
    free(c);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_round_trip),
        cmocka_unit_test(test_cursor_refuses_garbage),
        cmocka_unit_test(test_cursor_every_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
