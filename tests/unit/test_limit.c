/* SPDX-License-Identifier: MIT */
/*
 * The log rate of limit refusals: the first refusal logs, a flood within the
 * quiet period does not, and the next line after it counts what was skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limit.h"

static void test_limit_log_once_per_quiet_period(void **state)
{
    struct mx_limit_log l = {0};
    uint64_t quiet = 99;
    (void)state;
    assert_true(mx_limit_log_due(&l, 100.0, &quiet));
    assert_int_equal(quiet, 0);
    for (int i = 0; i < 1000; i++)
        assert_false(mx_limit_log_due(&l, 100.0 + i * 0.01, &quiet));
    /* just before the end of the quiet period: still quiet */
    assert_false(mx_limit_log_due(&l, 100.0 + MX_LIMIT_LOG_QUIET_S - 0.001, &quiet));
    /* at its end: one line, naming the 1001 skipped */
    assert_true(mx_limit_log_due(&l, 100.0 + MX_LIMIT_LOG_QUIET_S, &quiet));
    assert_int_equal(quiet, 1001);
    assert_int_equal(l.total, 1003);
    /* much later, after nothing: logs again with nothing skipped */
    assert_true(mx_limit_log_due(&l, 10000.0, &quiet));
    assert_int_equal(quiet, 0);
}

static void test_limit_log_note(void **state)
{
    char buf[64];
    (void)state;
    assert_string_equal(mx_limit_log_note(0, buf, sizeof(buf)), "");
    assert_string_equal(mx_limit_log_note(1001, buf, sizeof(buf)),
                        " (1001 more since the last such line)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_log_once_per_quiet_period),
        cmocka_unit_test(test_limit_log_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
