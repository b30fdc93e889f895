/* SPDX-License-Identifier: MIT */
/*
 * Nearest-name suggestions: the distance (swaps of neighbours count one,
 * case is ignored), the closeness rule, and the length cap at cap and cap+1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "suggest.h"

static size_t dist(const char *a, const char *b)
{
    return mx_edit_distance(mx_str_cstr(a), mx_str_cstr(b));
}

static void test_suggest_distance(void **state)
{
    (void)state;
    assert_int_equal(dist("", ""), 0);
    assert_int_equal(dist("", "abc"), 3);
    assert_int_equal(dist("adress", "address"), 1);
    assert_int_equal(dist("valut", "vault"), 1);
    assert_int_equal(dist("Proxy", "proxy"), 0);
    assert_int_equal(dist("kitten", "sitting"), 3);
    assert_int_equal(dist("token", "tools"), 3);
}

static void test_suggest_closeness(void **state)
{
    static const char *const keys[] = {"address", "tls", NULL, "cert", "key", "vault"};
    const size_t n = sizeof(keys) / sizeof(keys[0]);
    (void)state;
    assert_int_equal(mx_suggest(mx_str_cstr("adress"), keys, n), 0);
    assert_int_equal(mx_suggest(mx_str_cstr("tsl"), keys, n), 1);
    assert_int_equal(mx_suggest(mx_str_cstr("valut"), keys, n), 5);
    /* one edit in two characters is not a slip: no suggestion */
    assert_int_equal(mx_suggest(mx_str_cstr("ky"), keys, n), -1);
    /* two edits need six characters */
    assert_int_equal(dist("adrres", "address"), 2);
    assert_int_equal(mx_suggest(mx_str_cstr("adrres"), keys, n), 0);
    assert_int_equal(dist("adres", "address"), 2);
    assert_int_equal(mx_suggest(mx_str_cstr("adres"), keys, n), -1);
    assert_int_equal(mx_suggest(mx_str_cstr("token"), keys, n), -1);
    /* a known name is not a typo */
    assert_int_equal(mx_suggest(mx_str_cstr("cert"), keys, n), -1);
    assert_int_equal(mx_suggest(mx_str_cstr("x"), keys, 0), -1);
}

static void test_suggest_length_cap(void **state)
{
    char a[MX_SUGGEST_MAX_LEN + 2], b[MX_SUGGEST_MAX_LEN + 2];
    (void)state;
    memset(a, 'a', sizeof(a));
    memset(b, 'a', sizeof(b));
    b[0] = 'b';
    assert_int_equal(
        mx_edit_distance(mx_str_make(a, MX_SUGGEST_MAX_LEN), mx_str_make(b, MX_SUGGEST_MAX_LEN)),
        1);
    assert_int_equal(mx_edit_distance(mx_str_make(a, MX_SUGGEST_MAX_LEN + 1),
                                      mx_str_make(b, MX_SUGGEST_MAX_LEN)),
                     SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suggest_distance),
        cmocka_unit_test(test_suggest_closeness),
        cmocka_unit_test(test_suggest_length_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
