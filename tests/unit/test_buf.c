/* SPDX-License-Identifier: MIT */
/* The capped buffer: appends up to its cap and not beyond, and integers
 * written in decimal without printf. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"

static void assert_int_text(long long v)
{
    char want[32];
    struct mx_buf b;
    mx_buf_init(&b, 64);
    snprintf(want, sizeof(want), "%lld", v);
    assert_int_equal(mx_buf_append_int(&b, v), 0);
    assert_int_equal(mx_buf_len(&b), strlen(want));
    assert_memory_equal(mx_buf_data(&b), want, strlen(want));
    mx_buf_clear(&b);
}

static void test_append_int(void **state)
{
    (void)state;
    const long long vs[] = {0, 7, -7, 10, 200, 413, -1000, 1234567890123LL, LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
        assert_int_text(vs[i]);
}

static void test_cap(void **state)
{
    struct mx_buf b;
    (void)state;
    mx_buf_init(&b, 4);
    assert_int_equal(mx_buf_append_str(&b, "HTTP"), 0);
    /* nothing of a write that does not fit */
    assert_int_equal(mx_buf_append_int(&b, 1), MX_ELIMIT);
    assert_int_equal(mx_buf_len(&b), 4);
    mx_buf_reset(&b);
    assert_int_equal(mx_buf_append_int(&b, 12345), MX_ELIMIT);
    assert_int_equal(mx_buf_append_int(&b, -123), 0);
    assert_memory_equal(mx_buf_data(&b), "-123", 4);
    mx_buf_clear(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_int),
        cmocka_unit_test(test_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
