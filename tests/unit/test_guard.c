/* SPDX-License-Identifier: MIT */
/* Host, Origin and client-token rules, table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guard.h"

static void test_guard_host_loopback(void **state)
{
    static const struct {
        const char *host;
        bool ok;
    } cases[] = {
        {"localhost", true},
        {"localhost:8443", true},
        {"LOCALHOST", true},
        {"localhost.", true},
        {"app.localhost:1", true},
        {"127.0.0.1", true},
        {"127.0.0.1:8443", true},
        {"127.1.2.3", true},
        {"[::1]", true},
        {"[::1]:8443", true},
        {"evil.example", false},
        {"evil.example:8443", false},
        {"localhost.evil", false},
        {"128.0.0.1", false},
        {"127.0.0.256", false},
        {"127.0.0", false},
        {"127.0.0.1.2", false},
        {"[::2]", false},
        {"", false},
        {"[::1", false},
        {"localhost:", false},
        {"localhost:99999", false},
        {"127.0.0.1:-1", false},
        {"0x7f.0.0.1", false},
        {"xlocalhost", false},
        {"127.000.0.1", true},
        {"1270.0.0.1", false},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = mx_guard_host_is_loopback(mx_str_cstr(cases[i].host));
        if (got != cases[i].ok)
            fail_msg("host '%s': got %d, want %d", cases[i].host, got, cases[i].ok);
    }
}

static enum mx_guard_verdict check(const struct mx_guard_cfg *cfg, const char *method,
                                   const char *path, const char *host, const char *origin,
                                   const char *auth)
{
    struct mx_str h = mx_str_cstr(host), o = mx_str_cstr(origin), a = mx_str_cstr(auth);
    struct mx_guard_req r = {mx_str_cstr(method), mx_str_cstr(path), host ? &h : NULL,
                             origin ? &o : NULL, auth ? &a : NULL};
    return mx_guard_check(cfg, &r);
}

static void test_guard_host_origin_token(void **state)
{
    static const char *const origins[] = {"http://localhost:3000"};
    struct mx_secret *tok = mx_secret_new("s3cret-token", 12);
    struct mx_guard_cfg open = {"127.0.0.1", origins, 1, NULL};
    struct mx_guard_cfg named = {"gw.internal", NULL, 0, NULL};
    struct mx_guard_cfg locked = {"127.0.0.1", origins, 1, tok};
    (void)state;

    assert_int_equal(check(&open, "POST", "/mcp", "127.0.0.1:8443", NULL, NULL), MX_GUARD_OK);
    assert_int_equal(check(&open, "POST", "/mcp", NULL, NULL, NULL), MX_GUARD_BAD_HOST);
    assert_int_equal(check(&open, "POST", "/mcp", "evil.example", NULL, NULL), MX_GUARD_BAD_HOST);
    assert_int_equal(check(&named, "POST", "/mcp", "gw.internal:8443", NULL, NULL), MX_GUARD_OK);
    assert_int_equal(check(&named, "POST", "/mcp", "gw.internal.evil", NULL, NULL),
                     MX_GUARD_BAD_HOST);
    assert_int_equal(check(&open, "POST", "/mcp", "localhost", "http://localhost:3000", NULL),
                     MX_GUARD_OK);
    assert_int_equal(check(&open, "POST", "/mcp", "localhost", "http://evil.example", NULL),
                     MX_GUARD_BAD_ORIGIN);
    assert_int_equal(check(&open, "POST", "/mcp", "localhost", "null", NULL), MX_GUARD_BAD_ORIGIN);
    /* the Host's own origin (a page mcplex would serve) is same-origin, and allowed */
    assert_int_equal(check(&open, "POST", "/mcp", "127.0.0.1:8443", "http://127.0.0.1:8443", NULL),
                     MX_GUARD_OK);
    assert_int_equal(check(&open, "POST", "/mcp", "LocalHost:8443", "HTTPS://localhost:8443", NULL),
                     MX_GUARD_OK);
    assert_int_equal(check(&open, "POST", "/mcp", "[::1]:9", "http://[::1]:9", NULL), MX_GUARD_OK);
    /* another port, another origin: a different local web server's page */
    assert_int_equal(check(&open, "POST", "/mcp", "127.0.0.1:8443", "http://127.0.0.1:8080", NULL),
                     MX_GUARD_BAD_ORIGIN);
    assert_int_equal(check(&open, "POST", "/mcp", "127.0.0.1:8443", "http://127.0.0.1:84431", NULL),
                     MX_GUARD_BAD_ORIGIN);
    assert_int_equal(check(&open, "POST", "/mcp", "127.0.0.1:8443", "ftp://127.0.0.1:8443", NULL),
                     MX_GUARD_BAD_ORIGIN);
    /* a configured non-loopback name never counts as its own origin */
    assert_int_equal(
        check(&named, "POST", "/mcp", "gw.internal:8443", "http://gw.internal:8443", NULL),
        MX_GUARD_BAD_ORIGIN);
    /* token: required everywhere but GET /health */
    assert_int_equal(check(&locked, "POST", "/mcp", "localhost", NULL, NULL), MX_GUARD_NO_TOKEN);
    assert_int_equal(check(&locked, "POST", "/mcp", "localhost", NULL, "Bearer wrong"),
                     MX_GUARD_NO_TOKEN);
    assert_int_equal(check(&locked, "POST", "/mcp", "localhost", NULL, "Bearer s3cret-toke"),
                     MX_GUARD_NO_TOKEN);
    assert_int_equal(check(&locked, "POST", "/mcp", "localhost", NULL, "Basic s3cret-token"),
                     MX_GUARD_NO_TOKEN);
    assert_int_equal(check(&locked, "POST", "/mcp", "localhost", NULL, "Bearer s3cret-token"),
                     MX_GUARD_OK);
    assert_int_equal(check(&locked, "POST", "/mcp", "localhost", NULL, "bearer  s3cret-token "),
                     MX_GUARD_OK);
    assert_int_equal(check(&locked, "GET", "/health", "localhost", NULL, NULL), MX_GUARD_OK);
    assert_int_equal(check(&locked, "POST", "/health", "localhost", NULL, NULL), MX_GUARD_NO_TOKEN);
    /* Host is checked before the token: a rebinding page learns nothing */
    assert_int_equal(check(&locked, "POST", "/mcp", "evil.example", NULL, "Bearer s3cret-token"),
                     MX_GUARD_BAD_HOST);
    assert_null(strstr(mx_guard_message(MX_GUARD_NO_TOKEN), "s3cret"));
    mx_secret_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_host_loopback),
        cmocka_unit_test(test_guard_host_origin_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
