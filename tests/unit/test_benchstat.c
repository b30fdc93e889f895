/* SPDX-License-Identifier: MIT */
/* Nearest-rank percentiles, errors and the progress bar of `mcplex bench`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "benchstat.h"
#include "err.h"

static void test_benchstat_empty(void **state)
{
    (void)state;
    struct mx_benchstat s;
    int64_t v = -1;
    mx_benchstat_init(&s, 0);
    assert_int_equal(mx_benchstat_pct(&s, 50, &v), MX_ENOTFOUND);
    assert_int_equal(v, -1);
    assert_true(mx_benchstat_mean(&s) == 0.0);
    mx_benchstat_error(&s);
    assert_int_equal(s.errors, 1);
    assert_int_equal(s.cnt, 0);
    mx_benchstat_clear(&s);
    mx_benchstat_clear(&s); /* twice is fine */
}

static void test_benchstat_bad_pct(void **state)
{
    (void)state;
    struct mx_benchstat s;
    int64_t v;
    mx_benchstat_init(&s, 4);
    mx_benchstat_add(&s, 10);
    assert_int_equal(mx_benchstat_pct(&s, 0, &v), MX_EINVAL);
    assert_int_equal(mx_benchstat_pct(&s, -1, &v), MX_EINVAL);
    assert_int_equal(mx_benchstat_pct(&s, 100.5, &v), MX_EINVAL);
    assert_int_equal(mx_benchstat_pct(&s, 100, &v), 0);
    assert_int_equal(v, 10);
    mx_benchstat_clear(&s);
}

/* 1..100 in scrambled order: the p-th percentile is p itself. */
static void test_benchstat_nearest_rank_hundred(void **state)
{
    (void)state;
    struct mx_benchstat s;
    int64_t v;
    mx_benchstat_init(&s, 2); /* grows */
    for (int i = 0; i < 100; i++)
        mx_benchstat_add(&s, (int64_t)((i * 37) % 100) + 1);
    assert_int_equal(s.cnt, 100);
    static const struct {
        double pct;
        int64_t want;
    } cases[] = {{1, 1}, {50, 50}, {90, 90}, {99, 99}, {99.5, 100}, {100, 100}, {0.001, 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(mx_benchstat_pct(&s, cases[i].pct, &v), 0);
        assert_int_equal(v, cases[i].want);
    }
    assert_true(mx_benchstat_mean(&s) == 50.5);
    mx_benchstat_clear(&s);
}

/* Small sets, where rounding matters: nearest rank never interpolates. */
static void test_benchstat_nearest_rank_small(void **state)
{
    (void)state;
    struct mx_benchstat s;
    int64_t v;
    mx_benchstat_init(&s, 4);
    mx_benchstat_add(&s, 300);
    mx_benchstat_add(&s, 100);
    mx_benchstat_add(&s, -5); /* clamps to 0 */
    mx_benchstat_add(&s, 200);
    /* sorted: 0 100 200 300 */
    assert_int_equal(mx_benchstat_pct(&s, 25, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(mx_benchstat_pct(&s, 26, &v), 0);
    assert_int_equal(v, 100);
    assert_int_equal(mx_benchstat_pct(&s, 50, &v), 0);
    assert_int_equal(v, 100);
    assert_int_equal(mx_benchstat_pct(&s, 51, &v), 0);
    assert_int_equal(v, 200);
    assert_int_equal(mx_benchstat_pct(&s, 99, &v), 0);
    assert_int_equal(v, 300);
    /* a sample added after sorting is seen by the next query */
    mx_benchstat_add(&s, 1000);
    assert_int_equal(mx_benchstat_pct(&s, 100, &v), 0);
    assert_int_equal(v, 1000);
    assert_int_equal(mx_benchstat_pct(&s, 60, &v), 0);
    assert_int_equal(v, 200);
    mx_benchstat_clear(&s);
}

static void test_benchstat_bar(void **state)
{
    (void)state;
    char out[128];
    mx_benchstat_bar(out, sizeof(out), 10, 5, 10, "ping");
    assert_string_equal(out, "[#####.....]  50%  ping");
    mx_benchstat_bar(out, sizeof(out), 4, 0, 0, NULL);
    assert_string_equal(out, "[....]   0%  ");
    mx_benchstat_bar(out, sizeof(out), 4, 7, 3, "x");
    assert_string_equal(out, "[####] 100%  x");
    /* cut to the buffer, still terminated */
    char small[8];
    mx_benchstat_bar(small, sizeof(small), 10, 1, 2, "label");
    assert_int_equal(strlen(small), sizeof(small) - 1);
    /* an absurd width is capped, not overflowed */
    char big[600];
    mx_benchstat_bar(big, sizeof(big), 100000, 1, 1, "y");
    assert_true(strlen(big) < sizeof(big));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_benchstat_empty),
        cmocka_unit_test(test_benchstat_bad_pct),
        cmocka_unit_test(test_benchstat_nearest_rank_hundred),
        cmocka_unit_test(test_benchstat_nearest_rank_small),
        cmocka_unit_test(test_benchstat_bar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
