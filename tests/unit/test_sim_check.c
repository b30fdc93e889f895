/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim's pure header checks and revision rules: Accept and
 * Content-Type media types, bearer and cookie credentials, negotiation and
 * the MCP-Protocol-Version header. The sim is an executable, not a library,
 * so its .c files are included here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../examples/sandbox-sim/check.c"
#include "../../examples/sandbox-sim/rev.c"

static const unsigned char secret[] = "s3cret";
#define SECRET_LEN (sizeof(secret) - 1)

static struct mx_str s(const char *c)
{
    return mx_str_cstr(c);
}

static void test_sim_check_accept(void **state)
{
    static const struct {
        const char *accept;
        bool json;
        bool sse;
    } cases[] = {
        {"application/json, text/event-stream", true, true},
        {"text/event-stream,application/json", true, true},
        {"Application/JSON; q=0.9 , TEXT/Event-Stream;q=1", true, true},
        {"application/json", true, false},
        {"*/*", false, false},
        {"application/jsonx, text/event-streams", false, false},
        {"", false, false},
        {",,, ,application/json,", true, false},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(mx_sim_accept_has(s(cases[i].accept), "application/json"), cases[i].json);
        assert_int_equal(mx_sim_accept_has(s(cases[i].accept), "text/event-stream"), cases[i].sse);
    }
}

static void test_sim_check_content_type(void **state)
{
    (void)state;
    assert_true(mx_sim_ctype_is(s("application/json"), "application/json"));
    assert_true(mx_sim_ctype_is(s("application/json; charset=utf-8"), "application/json"));
    assert_true(mx_sim_ctype_is(s(" APPLICATION/JSON "), "application/json"));
    assert_false(mx_sim_ctype_is(s("text/plain"), "application/json"));
    assert_false(mx_sim_ctype_is(s("application/json-seq"), "application/json"));
    assert_false(mx_sim_ctype_is(s(""), "application/json"));
}

static void test_sim_check_bearer(void **state)
{
    (void)state;
    assert_true(mx_sim_bearer_ok(s("Bearer s3cret"), secret, SECRET_LEN));
    assert_true(mx_sim_bearer_ok(s("bearer s3cret"), secret, SECRET_LEN));
    assert_true(mx_sim_bearer_ok(s("Bearer s3cret "), secret, SECRET_LEN));
    assert_false(mx_sim_bearer_ok(s("Bearer s3cre"), secret, SECRET_LEN));
    assert_false(mx_sim_bearer_ok(s("Bearer s3cretX"), secret, SECRET_LEN));
    assert_false(mx_sim_bearer_ok(s("Basic s3cret"), secret, SECRET_LEN));
    assert_false(mx_sim_bearer_ok(s("Bearers3cret"), secret, SECRET_LEN));
    assert_false(mx_sim_bearer_ok(s("Bearer"), secret, SECRET_LEN));
    assert_false(mx_sim_bearer_ok(s(""), secret, SECRET_LEN));
    /* An empty expected secret never matches. */
    assert_false(mx_sim_bearer_ok(s("Bearer "), secret, 0));
}

static void test_sim_check_cookie(void **state)
{
    (void)state;
    assert_true(mx_sim_cookie_ok(s("auth=s3cret"), "auth", secret, SECRET_LEN));
    assert_true(mx_sim_cookie_ok(s("a=1; auth=s3cret; b=2"), "auth", secret, SECRET_LEN));
    assert_true(mx_sim_cookie_ok(s("a=1;auth=\"s3cret\""), "auth", secret, SECRET_LEN));
    /* A wrong value first does not hide a right one later. */
    assert_true(mx_sim_cookie_ok(s("auth=x; auth=s3cret"), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s("Auth=s3cret"), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s("xauth=s3cret"), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s("auth=s3cret2"), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s("auth"), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s("a=s3cret"), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s(""), "auth", secret, SECRET_LEN));
    assert_false(mx_sim_cookie_ok(s("auth="), "auth", secret, SECRET_LEN));
}

static void test_sim_check_revisions(void **state)
{
    struct mx_str v = s("2025-06-18");
    struct mx_str other = s("2025-03-26");
    struct mx_str future = s("2099-01-01");
    (void)state;
    assert_string_equal(mx_sim_rev_negotiate("2025-03-26"), "2025-03-26");
    assert_string_equal(mx_sim_rev_negotiate("2025-06-18"), "2025-06-18");
    assert_string_equal(mx_sim_rev_negotiate("2025-11-25"), "2025-11-25");
    assert_string_equal(mx_sim_rev_negotiate("2024-11-05"), MX_SIM_REV_DEFAULT);
    assert_string_equal(mx_sim_rev_negotiate("2099-01-01"), MX_SIM_REV_DEFAULT);
    assert_string_equal(mx_sim_rev_negotiate(NULL), MX_SIM_REV_DEFAULT);
    assert_true(mx_sim_rev_is_supported(v));
    assert_false(mx_sim_rev_is_supported(s("2025-06-1")));
    /* Absent header: the negotiated revision is assumed. */
    assert_true(mx_sim_rev_header_ok(NULL, "2025-06-18"));
    assert_true(mx_sim_rev_header_ok(&v, "2025-06-18"));
    assert_true(mx_sim_rev_header_ok(&other, "2025-06-18")); /* supported, not the session's */
    assert_false(mx_sim_rev_header_ok(&future, "2025-06-18"));
}

static void test_sim_check_host_origin(void **state)
{
    struct mx_str local = s("127.0.0.1:8080"), named = s("localhost:1"),
                  evil = s("evil.example.com");
    struct mx_str o_local = s("http://127.0.0.1:8080"), o_v6 = s("https://[::1]:9");
    struct mx_str o_evil = s("http://evil.example.com"), o_null = s("null");
    (void)state;
    assert_true(mx_sim_host_origin_ok(&local, NULL));
    assert_true(mx_sim_host_origin_ok(&named, &o_local));
    assert_true(mx_sim_host_origin_ok(&local, &o_v6));
    assert_false(mx_sim_host_origin_ok(NULL, NULL));
    assert_false(mx_sim_host_origin_ok(&evil, NULL));
    assert_false(mx_sim_host_origin_ok(&evil, &o_local));
    assert_false(mx_sim_host_origin_ok(&local, &o_evil));
    assert_false(mx_sim_host_origin_ok(&local, &o_null));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_check_accept),    cmocka_unit_test(test_sim_check_content_type),
        cmocka_unit_test(test_sim_check_bearer),    cmocka_unit_test(test_sim_check_cookie),
        cmocka_unit_test(test_sim_check_revisions), cmocka_unit_test(test_sim_check_host_origin),
    };
    return cmocka_run_group_tests_name("sim_check", tests, NULL, NULL);
}
