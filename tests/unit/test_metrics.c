/* SPDX-License-Identifier: MIT */
/*
 * Counters, histograms and the Prometheus text rendering: family headers,
 * label escaping, cumulative buckets, the outcome and method mappings, the
 * latency ring behind /health's p50, and the size cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "metrics.h"
#include "procstat.h"

static double fake_now;

static double fake_clock(void)
{
    return fake_now;
}

static char *render(const struct mx_metrics *m, const struct mx_metrics_gauges *g)
{
    struct mx_buf b;
    mx_buf_init(&b, 1 << 20);
    assert_int_equal(mx_metrics_render(m, g, &b), 0);
    char *s = malloc(mx_buf_len(&b) + 1);
    assert_non_null(s);
    memcpy(s, mx_buf_data(&b), mx_buf_len(&b));
    s[mx_buf_len(&b)] = '\0';
    mx_buf_clear(&b);
    return s;
}

/* The value of the sample whose name-and-labels part is exactly |series|;
 * fails the test when it is absent. */
static double value_of(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    fail_msg("no sample %s", series);
    return -1;
}

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return true;
    }
    return false;
}

static void test_metrics_render_families(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {1700000000.0, 3, 2, 5, -1, NULL, 0, 4, 1, 7, 8, 9, NULL};
    char *t = render(m, &g);
    assert_true(has_line(t, "# TYPE mcplex_client_connections gauge"));
    assert_true(has_line(t, "# TYPE mcplex_guard_refusals_total counter"));
    assert_true(has_line(t, "# TYPE mcplex_upstream_requests_total counter"));
    assert_true(has_line(t, "# TYPE mcplex_upstream_request_duration_seconds histogram"));
    assert_true(has_line(t, "# TYPE mcplex_gateway_added_duration_seconds histogram"));
    assert_true(has_line(t, "# TYPE mcplex_upstream_wake_duration_seconds histogram"));
    assert_true(has_line(t, "mcplex_start_time_seconds 1700000000"));
    assert_true(has_line(t, "mcplex_client_connections 3"));
    assert_true(has_line(t, "mcplex_inflight_requests 2"));
    assert_true(has_line(t, "mcplex_guard_refusals_total 5"));
    assert_true(has_line(t, "mcplex_config_reloads_total{result=\"ok\"} 4"));
    assert_true(has_line(t, "mcplex_config_reloads_total{result=\"failed\"} 1"));
    assert_true(has_line(t, "# TYPE mcplex_limit_refusals_total counter"));
    assert_true(has_line(t, "mcplex_limit_refusals_total{limit=\"max_connections\"} 7"));
    assert_true(has_line(t, "mcplex_limit_refusals_total{limit=\"max_connections_per_client\"} 8"));
    assert_true(has_line(t, "mcplex_limit_refusals_total{limit=\"max_sessions\"} 9"));
    /* an unknown session count is left out, not shown as 0 */
    assert_null(strstr(t, "mcplex_sessions"));
    free(t);

    g.sessions = 4;
    t = render(m, &g);
    assert_true(has_line(t, "# TYPE mcplex_sessions gauge"));
    assert_true(has_line(t, "mcplex_sessions 4"));
    /* every family has HELP before TYPE, each once */
    assert_non_null(strstr(t, "# HELP mcplex_sessions "));
    assert_true(strstr(t, "# HELP mcplex_sessions ") < strstr(t, "# TYPE mcplex_sessions "));
    /* no process_* series unless the caller read them */
    assert_null(strstr(t, "process_"));
    free(t);

    const struct mx_procstat ps = {1.5, 8u << 20, 64u << 20, 11, 1024};
    g.proc = &ps;
    t = render(m, &g);
    assert_true(has_line(t, "# TYPE process_cpu_seconds_total counter"));
    assert_true(has_line(t, "process_cpu_seconds_total 1.5"));
    assert_true(has_line(t, "process_resident_memory_bytes 8388608"));
    assert_true(has_line(t, "process_virtual_memory_bytes 67108864"));
    assert_true(has_line(t, "process_open_fds 11"));
    assert_true(has_line(t, "process_max_fds 1024"));
    assert_true(has_line(t, "process_start_time_seconds 1700000000"));
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_label_escaping(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    size_t s = mx_metrics_server_slot(m, "we\"ird\\na\nme");
    mx_metrics_upstream_retry(m, s);
    char *t = render(m, &g);
    /* Exposition format 0.0.4: \\ then \" then \n, nothing else changed. */
    assert_true(has_line(t, "mcplex_upstream_retries_total{server=\"we\\\"ird\\\\na\\nme\"} 1"));
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_histogram_cumulative(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    size_t s = mx_metrics_server_slot(m, "a");
    /* on a bound counts in that bucket (le is "less or equal") */
    mx_metrics_upstream_call(m, s, "tools/call", MX_METRICS_OK, 0.001, 0.0001);
    mx_metrics_upstream_call(m, s, "tools/call", MX_METRICS_OK, 0.003, 0.0002);
    mx_metrics_upstream_call(m, s, "tools/call", MX_METRICS_ERROR, 0.7, 0.002);
    mx_metrics_upstream_call(m, s, "tools/call", MX_METRICS_OK, 500.0, 3.0);
    char *t = render(m, &g);
    const char *h = "mcplex_upstream_request_duration_seconds";
    char k[256];
#define SERIES(le)                                                                                 \
    (snprintf(k, sizeof(k), "%s_bucket{server=\"a\",method=\"tools/call\",le=\"%s\"}", h, le), k)
    assert_int_equal((int)value_of(t, SERIES("0.001")), 1);
    assert_int_equal((int)value_of(t, SERIES("0.0025")), 1);
    assert_int_equal((int)value_of(t, SERIES("0.005")), 2);
    assert_int_equal((int)value_of(t, SERIES("0.5")), 2);
    assert_int_equal((int)value_of(t, SERIES("1")), 3);
    assert_int_equal((int)value_of(t, SERIES("120")), 3);
    assert_int_equal((int)value_of(t, SERIES("+Inf")), 4);
#undef SERIES
    snprintf(k, sizeof(k), "%s_count{server=\"a\",method=\"tools/call\"}", h);
    assert_int_equal((int)value_of(t, k), 4);
    snprintf(k, sizeof(k), "%s_sum{server=\"a\",method=\"tools/call\"}", h);
    assert_true(value_of(t, k) > 500.703 && value_of(t, k) < 500.705);
    /* buckets never decrease, whatever the family */
    double last = -1;
    const char *p = t;
    while ((p = strstr(p, "mcplex_gateway_added_duration_seconds_bucket{")) != NULL) {
        double v = strtod(strchr(p, '}') + 2, NULL);
        assert_true(v >= last);
        last = v;
        p++;
    }
    assert_int_equal((int)last, 4);
    assert_int_equal(
        (int)value_of(t, "mcplex_upstream_requests_total{server=\"a\",method=\"tools/call\","
                         "outcome=\"ok\"}"),
        3);
    assert_int_equal(
        (int)value_of(t, "mcplex_upstream_requests_total{server=\"a\",method=\"tools/call\","
                         "outcome=\"error\"}"),
        1);
    /* outcomes that never happened are not listed */
    assert_null(strstr(t, "outcome=\"timeout\""));
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_outcome_mapping(void **state)
{
    (void)state;
    static const struct {
        int err;
        long status;
        bool body_sent;
        bool wake_timeout;
        enum mx_metrics_outcome want;
    } cases[] = {
        {0, 200, true, false, MX_METRICS_OK},
        {0, 202, true, false, MX_METRICS_OK},
        {0, 401, true, false, MX_METRICS_AUTH_FAILED},
        {0, 403, true, false, MX_METRICS_AUTH_FAILED},
        {0, 404, true, false, MX_METRICS_ERROR},
        {0, 500, true, false, MX_METRICS_ERROR},
        {MX_ETIMEDOUT, 0, true, false, MX_METRICS_TIMEOUT},
        {MX_ETIMEDOUT, 0, false, true, MX_METRICS_WAKE_TIMEOUT},
        {MX_ECLOSED, 0, false, false, MX_METRICS_UNREACHABLE},
        {MX_EUPSTREAM, 0, false, false, MX_METRICS_UNREACHABLE},
        {MX_ECLOSED, 0, true, false, MX_METRICS_OUTCOME_UNKNOWN},
        {MX_ECLOSED, 200, true, false, MX_METRICS_OUTCOME_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_ureq_info info;
        memset(&info, 0, sizeof(info));
        info.http_status = cases[i].status;
        info.body_sent = cases[i].body_sent;
        info.wake_timeout = cases[i].wake_timeout;
        assert_int_equal(mx_metrics_outcome_of(cases[i].err, &info), cases[i].want);
    }
    assert_int_equal(mx_metrics_outcome_of(MX_ECLOSED, NULL), MX_METRICS_UNREACHABLE);
    /* a gone sandbox is the error its 410 is, said at once or not; a
     * Retry-After past the wake time is unavailable, by either path */
    struct mx_ureq_info info;
    memset(&info, 0, sizeof(info));
    info.http_status = 410;
    assert_int_equal(mx_metrics_outcome_of(0, &info), MX_METRICS_ERROR);
    memset(&info, 0, sizeof(info));
    info.gone = true;
    assert_int_equal(mx_metrics_outcome_of(MX_ECLOSED, &info), MX_METRICS_ERROR);
    struct mx_upfail f = {.reason = "gone"};
    assert_int_equal(mx_metrics_outcome_of_fail(&f), MX_METRICS_ERROR);
    memset(&info, 0, sizeof(info));
    info.retry_after_s = 30;
    info.http_status = 503;
    assert_int_equal(mx_metrics_outcome_of(MX_EAGAIN, &info), MX_METRICS_UNREACHABLE);
    f.reason = "retry-after";
    assert_int_equal(mx_metrics_outcome_of_fail(&f), MX_METRICS_UNREACHABLE);
    assert_string_equal(mx_metrics_outcome_name(MX_METRICS_OUTCOME_UNKNOWN), "outcome_unknown");
    assert_string_equal(mx_metrics_outcome_name(MX_METRICS_WAKE_TIMEOUT), "wake_timeout");
    assert_string_equal(mx_metrics_outcome_name(MX_METRICS_AUTH_FAILED), "auth_failed");
    assert_string_equal(mx_metrics_outcome_name((enum mx_metrics_outcome)99), "error");
}

static void test_metrics_method_label_bounded(void **state)
{
    (void)state;
    assert_string_equal(mx_metrics_method_label("tools/call"), "tools/call");
    assert_string_equal(mx_metrics_method_label("resources/templates/list"),
                        "resources/templates/list");
    assert_string_equal(mx_metrics_method_label("GET"), "GET");
    assert_string_equal(mx_metrics_method_label("tools/call2"), "other");
    assert_string_equal(mx_metrics_method_label("Tools/Call"), "other");
    assert_string_equal(mx_metrics_method_label(""), "other");
    assert_string_equal(mx_metrics_method_label(NULL), "other");

    /* a client inventing method names adds no series */
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    size_t s = mx_metrics_server_slot(m, "a");
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "x/%d", i);
        mx_metrics_upstream_call(m, s, name, MX_METRICS_OK, 0.01, 0.0001);
    }
    char *t = render(m, &g);
    assert_int_equal(
        (int)value_of(
            t, "mcplex_upstream_requests_total{server=\"a\",method=\"other\",outcome=\"ok\"}"),
        1000);
    assert_null(strstr(t, "x/1"));
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_streams_counted_not_timed(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    size_t s = mx_metrics_server_slot(m, "a");
    mx_metrics_upstream_call(m, s, "GET", MX_METRICS_OK, 3600.0, 0.001);
    mx_metrics_upstream_call(m, s, "subscriptions/listen", MX_METRICS_CANCELLED, 10.0, 0.001);
    char *t = render(m, &g);
    assert_int_equal(
        (int)value_of(t,
                      "mcplex_upstream_requests_total{server=\"a\",method=\"GET\",outcome=\"ok\"}"),
        1);
    assert_int_equal((int)value_of(t, "mcplex_upstream_requests_total{server=\"a\",method="
                                      "\"subscriptions/listen\",outcome=\"cancelled\"}"),
                     1);
    assert_null(strstr(t, "mcplex_upstream_request_duration_seconds_count{"));
    assert_int_equal((int)value_of(t, "mcplex_gateway_added_duration_seconds_count{server=\"a\"}"),
                     0);
    double p50;
    assert_int_equal(mx_metrics_p50(m, s, 60.0, &p50), MX_ENOTFOUND);
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_negative_not_observed(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    size_t s = mx_metrics_server_slot(m, "a");
    mx_metrics_upstream_call(m, s, "ping", MX_METRICS_CANCELLED, -1.0, -1.0);
    mx_metrics_wake_end(m, s, -3.0, MX_METRICS_WOKE);
    char *t = render(m, &g);
    assert_int_equal(
        (int)value_of(
            t,
            "mcplex_upstream_requests_total{server=\"a\",method=\"ping\",outcome=\"cancelled\"}"),
        1);
    assert_null(strstr(t, "mcplex_upstream_request_duration_seconds_count{"));
    assert_int_equal((int)value_of(t, "mcplex_gateway_added_duration_seconds_count{server=\"a\"}"),
                     0);
    assert_int_equal(
        (int)value_of(t,
                      "mcplex_upstream_wake_duration_seconds_count{server=\"a\",result=\"woke\"}"),
        0);
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_wakes_retries_bytes(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    size_t a = mx_metrics_server_slot(m, "a");
    size_t b = mx_metrics_server_slot(m, "b");
    assert_int_not_equal(a, b);
    assert_int_equal(mx_metrics_server_slot(m, "a"), a);
    mx_metrics_wake_start(m, a);
    mx_metrics_wake_end(m, a, 4.0, MX_METRICS_WOKE);
    mx_metrics_wake_start(m, a);
    mx_metrics_wake_end(m, a, 60.5, MX_METRICS_NO_WAKE);
    mx_metrics_upstream_retry(m, a);
    mx_metrics_upstream_retry(m, a);
    mx_metrics_upstream_bytes(m, b, 100, 0);
    mx_metrics_upstream_bytes(m, b, 20, 7);
    char *t = render(m, &g);
    assert_int_equal((int)value_of(t, "mcplex_upstream_wakes_total{server=\"a\"}"), 2);
    assert_int_equal((int)value_of(t, "mcplex_upstream_wakes_total{server=\"b\"}"), 0);
    assert_int_equal((int)value_of(t, "mcplex_upstream_retries_total{server=\"a\"}"), 2);
    assert_int_equal((int)value_of(t, "mcplex_upstream_sent_bytes_total{server=\"b\"}"), 120);
    assert_int_equal((int)value_of(t, "mcplex_upstream_received_bytes_total{server=\"b\"}"), 7);
    assert_int_equal((int)value_of(t, "mcplex_upstream_wake_duration_seconds_bucket{server=\"a\","
                                      "result=\"woke\",le=\"5\"}"),
                     1);
    assert_int_equal((int)value_of(t, "mcplex_upstream_wake_duration_seconds_bucket{server=\"a\","
                                      "result=\"no_wake\",le=\"60\"}"),
                     0);
    assert_int_equal((int)value_of(t, "mcplex_upstream_wake_duration_seconds_bucket{server=\"a\","
                                      "result=\"no_wake\",le=\"90\"}"),
                     1);
    /* a slot out of range, like a NULL set, is ignored */
    mx_metrics_upstream_retry(m, 99);
    free(t);
    mx_metrics_free(m);
}

static void test_metrics_upstream_state_gauge(void **state)
{
    (void)state;
    struct mx_server_cfg cfg[2];
    struct mx_upstream ups[2];
    char n0[] = "alpha", n1[] = "beta";
    memset(cfg, 0, sizeof(cfg));
    cfg[0].name = n0;
    cfg[1].name = n1;
    mx_upstream_init(&ups[0], &cfg[0]);
    mx_upstream_init(&ups[1], &cfg[1]);
    mx_upstream_note(&ups[1], MX_UPSTREAM_EV_AUTH_REFUSED);
    struct mx_upstream *slots[2] = {&ups[0], &ups[1]};
    struct mx_metrics_gauges g = {0, 0, 0, 0, -1, slots, 2, 0, 0, 0, 0, 0, NULL};
    char *t = render(NULL, &g);
    static const char *const states[] = {"unknown", "up", "waking", "down", "auth-failed"};
    for (size_t i = 0; i < 2; i++) {
        double sum = 0;
        for (size_t k = 0; k < 5; k++) {
            char series[128];
            snprintf(series, sizeof(series), "mcplex_upstream_state{server=\"%s\",state=\"%s\"}",
                     cfg[i].name, states[k]);
            sum += value_of(t, series);
        }
        assert_true(sum == 1.0);
    }
    assert_true(value_of(t, "mcplex_upstream_state{server=\"alpha\",state=\"unknown\"}") == 1.0);
    assert_true(value_of(t, "mcplex_upstream_state{server=\"beta\",state=\"auth-failed\"}") == 1.0);
    free(t);
}

static void test_metrics_p50_window(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    size_t s = mx_metrics_server_slot(m, "a");
    double p50 = 0;
    assert_int_equal(mx_metrics_p50(m, s, 60.0, &p50), MX_ENOTFOUND);
    fake_now = 1000.0;
    /* old samples, then newer ones: only the last minute counts */
    for (int i = 0; i < 10; i++)
        mx_metrics_upstream_call(m, s, "ping", MX_METRICS_OK, 5.0, 0.0);
    fake_now = 1100.0;
    mx_metrics_upstream_call(m, s, "ping", MX_METRICS_OK, 0.030, 0.0);
    mx_metrics_upstream_call(m, s, "ping", MX_METRICS_OK, 0.010, 0.0);
    mx_metrics_upstream_call(m, s, "ping", MX_METRICS_OK, 0.020, 0.0);
    mx_metrics_upstream_call(m, s, "ping", MX_METRICS_ERROR, 0.001, 0.0); /* not ok: left out */
    assert_int_equal(mx_metrics_p50(m, s, 60.0, &p50), 0);
    assert_true(p50 == 0.020);
    mx_metrics_upstream_call(m, s, "ping", MX_METRICS_OK, 0.040, 0.0);
    assert_int_equal(mx_metrics_p50(m, s, 60.0, &p50), 0);
    assert_true(p50 == 0.020); /* nearest rank of 4: the 2nd */
    assert_int_equal(mx_metrics_p50(m, s, 200.0, &p50), 0);
    assert_true(p50 == 5.0);
    /* the ring keeps the last 256: many new samples push the old out */
    for (int i = 0; i < 300; i++)
        mx_metrics_upstream_call(m, s, "ping", MX_METRICS_OK, 0.001, 0.0);
    assert_int_equal(mx_metrics_p50(m, s, 200.0, &p50), 0);
    assert_true(p50 == 0.001);
    fake_now = 2000.0;
    assert_int_equal(mx_metrics_p50(m, s, 60.0, &p50), MX_ENOTFOUND);
    assert_int_equal(mx_metrics_p50(m, 7, 60.0, &p50), MX_ENOTFOUND);
    mx_metrics_free(m);
}

static void test_metrics_render_cap(void **state)
{
    (void)state;
    struct mx_metrics *m = mx_metrics_new(fake_clock);
    struct mx_metrics_gauges g = {0, 0, 0, 0, 1, NULL, 0, 0, 0, 0, 0, 0, NULL};
    mx_metrics_server_slot(m, "a");
    struct mx_buf b;
    mx_buf_init(&b, 1 << 20);
    assert_int_equal(mx_metrics_render(m, &g, &b), 0);
    size_t full = mx_buf_len(&b);
    mx_buf_clear(&b);
    /* at the cap it fits; one byte less and it says so */
    mx_buf_init(&b, full);
    assert_int_equal(mx_metrics_render(m, &g, &b), 0);
    mx_buf_clear(&b);
    mx_buf_init(&b, full - 1);
    assert_int_equal(mx_metrics_render(m, &g, &b), MX_ELIMIT);
    mx_buf_clear(&b);
    mx_metrics_free(m);
}

static void test_metrics_null_safe(void **state)
{
    (void)state;
    double p50;
    mx_metrics_upstream_call(NULL, 0, "ping", MX_METRICS_OK, 1.0, 1.0);
    mx_metrics_upstream_retry(NULL, 0);
    mx_metrics_upstream_bytes(NULL, 0, 1, 1);
    mx_metrics_wake_start(NULL, 0);
    mx_metrics_wake_end(NULL, 0, 1.0, MX_METRICS_WOKE);
    assert_int_equal(mx_metrics_p50(NULL, 0, 60.0, &p50), MX_ENOTFOUND);
    mx_metrics_free(NULL);
    assert_true(mx_metrics_now() > 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_render_families),
        cmocka_unit_test(test_metrics_label_escaping),
        cmocka_unit_test(test_metrics_histogram_cumulative),
        cmocka_unit_test(test_metrics_outcome_mapping),
        cmocka_unit_test(test_metrics_method_label_bounded),
        cmocka_unit_test(test_metrics_streams_counted_not_timed),
        cmocka_unit_test(test_metrics_negative_not_observed),
        cmocka_unit_test(test_metrics_wakes_retries_bytes),
        cmocka_unit_test(test_metrics_upstream_state_gauge),
        cmocka_unit_test(test_metrics_p50_window),
        cmocka_unit_test(test_metrics_render_cap),
        cmocka_unit_test(test_metrics_null_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
