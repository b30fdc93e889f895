/* SPDX-License-Identifier: MIT */
/* Host, Origin and client-token rules, table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "guard.h"
#include "revision.h"

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
    struct mx_guard_req r = {mx_str_cstr(method),
                             mx_str_cstr(path),
                             host ? &h : NULL,
                             origin ? &o : NULL,
                             auth ? &a : NULL,
                             NULL,
                             false};
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

static void test_guard_accepts_sse(void **state)
{
    static const struct {
        const char *accept;
        bool ok;
    } cases[] = {
        {"text/event-stream", true},
        {"application/json, text/event-stream", true},
        {"TEXT/Event-Stream;q=0.5", true},
        {" text/event-stream ; q=1", true},
        {"text/event-stream;q=0", false},
        {"text/event-stream; q=0.000", false},
        {"text/event-stream;q=0.001", true},
        {"*/*", false},
        {"text/*", false},
        {"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", false},
        {"text/event-streamx", false},
        {"application/json", false},
        {"", false},
        {",,;", false},
    };
    (void)state;
    assert_false(mx_rev_accepts(NULL, "text/event-stream", false));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_str a = mx_str_cstr(cases[i].accept);
        if (mx_rev_accepts(&a, "text/event-stream", false) != cases[i].ok)
            fail_msg("Accept '%s': want %d", cases[i].accept, cases[i].ok);
    }
}

static void test_guard_get_needs_sse_accept(void **state)
{
    struct mx_guard_cfg open = {"127.0.0.1", NULL, 0, NULL};
    struct mx_str host = MX_STR_LIT("127.0.0.1"), sse = MX_STR_LIT("text/event-stream"),
                  img = MX_STR_LIT("image/*");
    static const char *const paths[] = {"/mcp", "/mcp/files", "/mcp/a/b", "/sse", "/sse/files"};
    (void)state;
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct mx_guard_req r = {
            MX_STR_LIT("GET"), mx_str_cstr(paths[i]), &host, NULL, NULL, NULL, false};
        assert_int_equal(mx_guard_check(&open, &r), MX_GUARD_NOT_STREAM);
        r.accept = &img;
        assert_int_equal(mx_guard_check(&open, &r), MX_GUARD_NOT_STREAM);
        r.accept = &sse;
        assert_int_equal(mx_guard_check(&open, &r), MX_GUARD_OK);
        /* POST and DELETE are not stream requests */
        r.accept = NULL;
        r.method = MX_STR_LIT("POST");
        assert_int_equal(mx_guard_check(&open, &r), MX_GUARD_OK);
        r.method = MX_STR_LIT("DELETE");
        assert_int_equal(mx_guard_check(&open, &r), MX_GUARD_OK);
    }
    /* other paths keep their own rules */
    struct mx_guard_req h = {
        MX_STR_LIT("GET"), MX_STR_LIT("/health"), &host, NULL, NULL, NULL, false};
    assert_int_equal(mx_guard_check(&open, &h), MX_GUARD_OK);
    h.path = MX_STR_LIT("/mcpx");
    assert_int_equal(mx_guard_check(&open, &h), MX_GUARD_OK);
    assert_int_equal(mx_guard_status(MX_GUARD_NOT_STREAM), 406);
    assert_int_equal(mx_guard_status(MX_GUARD_BAD_ORIGIN), 403);
}

/* The status page: the login cookie stands in for the client token on the
 * page's own paths, never on /mcp, /metrics nor the code that makes logins. */
static void test_guard_page_login(void **state)
{
    struct mx_secret *tok = mx_secret_new("s3cret-token", 12);
    struct mx_guard_cfg open = {"127.0.0.1", NULL, 0, NULL};
    struct mx_guard_cfg locked = {"127.0.0.1", NULL, 0, tok};
    static const struct {
        const char *method, *path;
        bool login;
        const char *auth;
        enum mx_guard_verdict want;
    } cases[] = {
        {"GET", "/", false, NULL, MX_GUARD_NO_LOGIN},
        {"GET", "/status", false, NULL, MX_GUARD_NO_LOGIN},
        {"GET", "/status/events", false, NULL, MX_GUARD_NO_LOGIN},
        {"GET", "/status/app.js", false, NULL, MX_GUARD_NO_LOGIN},
        {"GET", "/status", false, "Bearer wrong", MX_GUARD_NO_LOGIN},
        {"GET", "/", true, NULL, MX_GUARD_OK},
        {"GET", "/status", true, NULL, MX_GUARD_OK},
        {"GET", "/status/events", true, NULL, MX_GUARD_OK},
        {"GET", "/status", false, "Bearer s3cret-token", MX_GUARD_OK},
        /* the one-time code is the login's credential */
        {"GET", "/status/login", false, NULL, MX_GUARD_OK},
        /* the cookie never opens anything else */
        {"POST", "/status/code", true, NULL, MX_GUARD_NO_TOKEN},
        {"POST", "/status/code", false, "Bearer s3cret-token", MX_GUARD_OK},
        {"POST", "/mcp", true, NULL, MX_GUARD_NO_TOKEN},
        {"GET", "/metrics", true, NULL, MX_GUARD_NO_TOKEN},
        {"POST", "/mcp/files", true, NULL, MX_GUARD_NO_TOKEN},
        {"GET", "/statusx", true, NULL, MX_GUARD_NO_TOKEN},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_str h = mx_str_cstr("127.0.0.1:8443"), a = mx_str_cstr(cases[i].auth);
        struct mx_guard_req r = {mx_str_cstr(cases[i].method),
                                 mx_str_cstr(cases[i].path),
                                 &h,
                                 NULL,
                                 cases[i].auth ? &a : NULL,
                                 NULL,
                                 cases[i].login};
        enum mx_guard_verdict got = mx_guard_check(&locked, &r);
        if (got != cases[i].want)
            fail_msg("%s %s login=%d: got %d, want %d", cases[i].method, cases[i].path,
                     cases[i].login, got, cases[i].want);
        /* without a client token the page is as open as every endpoint */
        r.authorization = NULL;
        r.page_login = false;
        if (mx_guard_check(&open, &r) != MX_GUARD_OK)
            fail_msg("%s %s: refused without a client token", cases[i].method, cases[i].path);
    }
    assert_int_equal(mx_guard_status(MX_GUARD_NO_LOGIN), 403);
    assert_non_null(strstr(mx_guard_message(MX_GUARD_NO_LOGIN), "mcplex status --open"));
    assert_true(mx_guard_is_page_path(mx_str_cstr("/")));
    assert_false(mx_guard_is_page_path(mx_str_cstr("/statusx")));
    assert_false(mx_guard_is_page_path(mx_str_cstr("/mcp")));
    mx_secret_free(tok);
}

static void test_guard_header_value(void **state)
{
    (void)state;
    assert_true(mx_guard_header_value_ok(MX_STR_LIT("")));
    assert_true(mx_guard_header_value_ok(MX_STR_LIT("application/json; charset=utf-8")));
    assert_true(mx_guard_header_value_ok(MX_STR_LIT("a\tb")));
    assert_true(mx_guard_header_value_ok(MX_STR_LIT("caf\xc3\xa9 \x80\xff")));
    for (int c = 0; c < 0x20; c++) {
        char v[4] = {'a', (char)c, 'b', 0};
        assert_int_equal(mx_guard_header_value_ok(mx_str_make(v, 3)), c == '\t');
    }
    assert_false(mx_guard_header_value_ok(MX_STR_LIT("a\x7f")));
    assert_false(mx_guard_header_value_ok(MX_STR_LIT("abc\rX-Injected: 1")));
    assert_false(mx_guard_header_value_ok(mx_str_make("a\0b", 3)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_host_loopback),
        cmocka_unit_test(test_guard_host_origin_token),
        cmocka_unit_test(test_guard_accepts_sse),
        cmocka_unit_test(test_guard_get_needs_sse_accept),
        cmocka_unit_test(test_guard_header_value),
        cmocka_unit_test(test_guard_page_login),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
