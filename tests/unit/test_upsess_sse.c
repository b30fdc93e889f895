/* SPDX-License-Identifier: MIT */
/*
 * The legacy HTTP+SSE transport's `endpoint` event: resolving the URI it
 * carries against the configured url (RFC 3986 section 5.2), and refusing
 * one on another origin, so a server cannot have the upstream's credential
 * POSTed elsewhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "upsess_sse.h"

/* Resolve |ref| against |base|; returns the code, the URL in |*out|. */
static int resolve(const char *base, const char *ref, char **out)
{
    const char *why = NULL;
    int rc = mx_sse_endpoint_resolve(base, mx_str_cstr(ref), out, &why);
    if (rc == 0) {
        assert_non_null(*out);
        assert_null(why);
    } else {
        assert_null(*out);
        assert_non_null(why);
    }
    return rc;
}

static void assert_resolves(const char *base, const char *ref, const char *want)
{
    char *got = NULL;
    int rc = resolve(base, ref, &got);
    if (rc != 0)
        fail_msg("%s against %s: refused (%d)", ref, base, rc);
    assert_string_equal(got, want);
    free(got);
}

static void assert_refused(const char *base, const char *ref, int want_rc)
{
    char *got = NULL;
    assert_int_equal(resolve(base, ref, &got), want_rc);
}

static void test_relative_references(void **state)
{
    (void)state;
    /* what the TypeScript SDK's SSE server sends */
    assert_resolves("http://127.0.0.1:8080/sse", "/message?sessionId=4f2a",
                    "http://127.0.0.1:8080/message?sessionId=4f2a");
    /* relative path: next to the stream's path */
    assert_resolves("http://127.0.0.1:8080/mcp/sse", "messages?sessionId=1",
                    "http://127.0.0.1:8080/mcp/messages?sessionId=1");
    assert_resolves("http://h.example/a/b/sse", "../m", "http://h.example/a/m");
    assert_resolves("http://h.example/a/b/sse", "./m/./n/../o", "http://h.example/a/b/m/o");
    assert_resolves("http://h.example/sse", "m", "http://h.example/m");
    assert_resolves("http://h.example", "m", "http://h.example/m");
    /* dots never climb above the root */
    assert_resolves("http://h.example/a/sse", "/../../m", "http://h.example/m");
    assert_resolves("http://h.example/a/sse", "../../../m", "http://h.example/m");
    /* a query alone: the stream's own path */
    assert_resolves("http://h.example/a/sse?x=1", "?sessionId=9",
                    "http://h.example/a/sse?sessionId=9");
    /* dots in the query are the query's */
    assert_resolves("http://h.example/sse", "/m?p=../x", "http://h.example/m?p=../x");
    /* the fragment is never sent */
    assert_resolves("http://h.example/sse", "/m?s=1#frag", "http://h.example/m?s=1");
    /* a network-path reference on the same origin */
    assert_resolves("https://h.example:8443/sse", "//h.example:8443/m", "https://h.example:8443/m");
    /* surrounding whitespace is the caller's to trim; inside it is refused */
    assert_refused("http://h.example/sse", "/m ?x", MX_EINVAL);
}

static void test_absolute_same_origin(void **state)
{
    (void)state;
    assert_resolves("http://127.0.0.1:8080/sse", "http://127.0.0.1:8080/messages/?s=1",
                    "http://127.0.0.1:8080/messages/?s=1");
    /* scheme and host compare without case, a default port like none */
    assert_resolves("https://Example.COM/sse", "HTTPS://example.com:443/m",
                    "https://Example.COM/m");
    assert_resolves("http://example.com:80/sse", "http://EXAMPLE.com/m?a=b",
                    "http://example.com:80/m?a=b");
    assert_resolves("http://[::1]:9000/sse", "http://[::1]:9000/x/../m", "http://[::1]:9000/m");
    assert_resolves("http://h.example/sse", "http://h.example", "http://h.example/");
}

static void test_cross_origin_refused(void **state)
{
    (void)state;
    const char *base = "http://127.0.0.1:8080/sse";
    assert_refused(base, "http://evil.example/message?sessionId=1", MX_EPERM);
    assert_refused(base, "http://127.0.0.1:9999/message", MX_EPERM);
    assert_refused(base, "http://127.0.0.1/message", MX_EPERM); /* port 80, not 8080 */
    assert_refused(base, "http://localhost:8080/message", MX_EPERM);
    assert_refused(base, "//evil.example/message", MX_EPERM);
    assert_refused(base, "//evil.example:8080/message", MX_EPERM);
    /* no downgrade or upgrade of the scheme */
    assert_refused("https://h.example/sse", "http://h.example/m", MX_EPERM);
    assert_refused("http://h.example/sse", "https://h.example/m", MX_EPERM);
    /* a user in the URL: never, even on the same host */
    assert_refused(base, "http://user@127.0.0.1:8080/m", MX_EPERM);
    assert_refused(base, "http://evil.example@127.0.0.1:8080/m", MX_EPERM);
    assert_refused(base, "http://127.0.0.1:8080@evil.example/m", MX_EPERM);
    /* other schemes */
    assert_refused(base, "ftp://127.0.0.1:8080/m", MX_EPERM);
    assert_refused(base, "javascript:alert(1)", MX_EPERM);
    assert_refused(base, "file:///etc/passwd", MX_EPERM);
}

static void test_malformed_refused(void **state)
{
    (void)state;
    const char *base = "http://127.0.0.1:8080/sse";
    assert_refused(base, "", MX_EINVAL);
    assert_refused(base, "#only-a-fragment", MX_EINVAL);
    assert_refused(base, "/m\r\nX-Injected: 1", MX_EINVAL);
    assert_refused(base, "/m\tx", MX_EINVAL);
    assert_refused(base, "\\\\evil.example\\m", MX_EINVAL);
    assert_refused(base, "http://127.0.0.1:80800/m", MX_EINVAL);
    assert_refused(base, "http://127.0.0.1:x/m", MX_EINVAL);
    assert_refused(base, "http:/m", MX_EINVAL);
    assert_refused(base, "http://[::1/m", MX_EINVAL);
    char long_ref[4096];
    memset(long_ref, 'a', sizeof(long_ref) - 1);
    long_ref[0] = '/';
    long_ref[sizeof(long_ref) - 1] = '\0';
    assert_refused(base, long_ref, MX_EINVAL);
    /* a base that is not http(s) resolves nothing */
    assert_refused("ftp://h.example/sse", "/m", MX_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relative_references),
        cmocka_unit_test(test_absolute_same_origin),
        cmocka_unit_test(test_cross_origin_refused),
        cmocka_unit_test(test_malformed_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
