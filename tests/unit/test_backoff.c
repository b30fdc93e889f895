/* SPDX-License-Identifier: MIT */
/* The retry schedule and the upstream health state machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backoff.h"
#include "upstream.h"

static void test_backoff_schedule_bounds(void **state)
{
    (void)state;
    /* equal jitter: within [d/2, d] where d doubles from base up to the cap */
    static const int64_t want_d[] = {100, 200, 400, 800, 1600, 2000, 2000, 2000};
    for (unsigned a = 0; a < sizeof(want_d) / sizeof(want_d[0]); a++) {
        int64_t lo = mx_backoff_ms(a, 100, 2000, 0);
        int64_t hi = mx_backoff_ms(a, 100, 2000, (uint64_t)want_d[a] / 2);
        assert_int_equal(lo, want_d[a] / 2);
        assert_int_equal(hi, want_d[a]);
        for (uint64_t r = 0; r < 5000; r += 37) {
            int64_t d = mx_backoff_ms(a, 100, 2000, r);
            assert_true(d >= want_d[a] / 2 && d <= want_d[a]);
        }
    }
    /* huge attempt numbers neither overflow nor pass the cap */
    assert_true(mx_backoff_ms(1000, 100, 2000, UINT64_MAX) <= 2000);
    assert_true(mx_backoff_ms(63, 1, INT64_MAX / 4, 12345) > 0);
}

static void test_backoff_total_wait_fits_wake_timeout(void **state)
{
    (void)state;
    /* with the defaults, a 60 s wake gets dozens of probes, never a burst */
    int64_t t = 0;
    unsigned a = 0;
    while (t < 60000) {
        int64_t d = mx_backoff_ms(a, 100, 2000, (uint64_t)a * 7919);
        a++;
        assert_true(d >= 50);
        t += d;
    }
    assert_true(a >= 30 && a <= 1200);
}

static void test_upstream_state_transitions(void **state)
{
    (void)state;
    struct mx_server_cfg cfg;
    int retry_on[] = {502, 503, 504, 423};
    char name[] = "files";
    char url[] = "https://user:pw@box.example:8443/mcp";
    memset(&cfg, 0, sizeof(cfg));
    cfg.name = name;
    cfg.url = url;
    cfg.retry_on = retry_on;
    cfg.retry_on_cnt = 4;
    struct mx_upstream u;
    mx_upstream_init(&u, &cfg);
    assert_string_equal(u.host, "box.example:8443"); /* userinfo never shown */
    assert_int_equal(u.state, MX_UPSTREAM_UNKNOWN);

    static const struct {
        enum mx_upstream_event ev;
        enum mx_upstream_state want;
    } steps[] = {
        {MX_UPSTREAM_EV_NOT_AWAKE, MX_UPSTREAM_WAKING},
        {MX_UPSTREAM_EV_OK, MX_UPSTREAM_UP},
        {MX_UPSTREAM_EV_AUTH_REFUSED, MX_UPSTREAM_AUTH_FAILED},
        {MX_UPSTREAM_EV_OK, MX_UPSTREAM_UP},
        {MX_UPSTREAM_EV_UNREACHABLE, MX_UPSTREAM_DOWN},
        {MX_UPSTREAM_EV_NOT_AWAKE, MX_UPSTREAM_WAKING},
        {MX_UPSTREAM_EV_TIMEOUT, MX_UPSTREAM_DOWN},
        {MX_UPSTREAM_EV_OK, MX_UPSTREAM_UP},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        mx_upstream_note(&u, steps[i].ev);
        assert_int_equal(u.state, steps[i].want);
    }
    assert_int_equal(u.requests, 8);
    assert_int_equal(u.failures, 5);

    assert_int_equal(mx_upstream_classify_status(&u, 200), MX_UPSTREAM_EV_OK);
    assert_int_equal(mx_upstream_classify_status(&u, 404), MX_UPSTREAM_EV_OK);
    assert_int_equal(mx_upstream_classify_status(&u, 401), MX_UPSTREAM_EV_AUTH_REFUSED);
    assert_int_equal(mx_upstream_classify_status(&u, 403), MX_UPSTREAM_EV_AUTH_REFUSED);
    assert_int_equal(mx_upstream_classify_status(&u, 423), MX_UPSTREAM_EV_NOT_AWAKE);
    assert_int_equal(mx_upstream_classify_status(&u, 503), MX_UPSTREAM_EV_NOT_AWAKE);
    assert_int_equal(mx_upstream_classify_status(&u, 500), MX_UPSTREAM_EV_OK);
    assert_string_equal(mx_upstream_state_name(MX_UPSTREAM_AUTH_FAILED), "auth-failed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_schedule_bounds),
        cmocka_unit_test(test_backoff_total_wait_fits_wake_timeout),
        cmocka_unit_test(test_upstream_state_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
