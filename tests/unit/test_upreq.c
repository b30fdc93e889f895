/* SPDX-License-Identifier: MIT */
/*
 * What every upstream request shares: header lines (the cap, values that
 * would smuggle headers, the credential line per auth kind) and the failure
 * descriptions a client reads (code, reason, a message naming the server
 * and never the secret).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "refresh.h"
#include "rpc.h"
#include "secret.h"
#include "upreq.h"

static const char canary[] = "canary-0123456789abcdef";

static void cfg_init(struct mx_server_cfg *c, enum mx_auth_kind auth, const char *auth_name,
                     const char *ref)
{
    static int retry[] = {502, 503, 504, 423};
    memset(c, 0, sizeof(*c));
    c->name = (char *)(uintptr_t) "files";
    c->auth = auth;
    c->auth_name = (char *)(uintptr_t)auth_name;
    c->secret_ref = (char *)(uintptr_t)ref;
    c->retry_on = retry;
    c->retry_on_cnt = 4;
    c->request_timeout_ms = 120000;
    c->wake_timeout_ms = 60000;
}

static void test_upreq_headers(void **state)
{
    struct mx_upreq_hdrs h;
    (void)state;
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_upreq_hdrs_add(&h, "Accept", MX_STR_LIT("text/event-stream")), 0);
    assert_string_equal(h.lines[0], "Accept: text/event-stream");
    assert_int_equal(mx_upreq_hdrs_add(&h, "X", MX_STR_LIT("a\r\nEvil: 1")), MX_EINVAL);
    assert_int_equal(mx_upreq_hdrs_add(&h, "X", mx_str_make("a\0b", 3)), MX_EINVAL);
    assert_int_equal(h.cnt, 1);
    /* libcurl's form of an empty header ("X:" would remove one) */
    assert_int_equal(mx_upreq_hdrs_add(&h, "Mcp-Param-Empty", MX_STR_LIT("")), 0);
    assert_string_equal(h.lines[1], "Mcp-Param-Empty;");
    /* at the cap and one past it */
    while (h.cnt < MX_UPREQ_MAX_HEADERS - 1)
        assert_int_equal(mx_upreq_hdrs_add(&h, "X-N", MX_STR_LIT("1")), 0);
    assert_int_equal(mx_upreq_hdrs_add(&h, "X-Last", MX_STR_LIT("1")), 0);
    assert_int_equal(h.cnt, MX_UPREQ_MAX_HEADERS);
    assert_int_equal(mx_upreq_hdrs_add(&h, "X-Over", MX_STR_LIT("1")), MX_ELIMIT);
    struct mx_server_cfg c;
    struct mx_upstream up;
    cfg_init(&c, MX_AUTH_BEARER, NULL, "vault:files");
    mx_upstream_init(&up, &c);
    assert_int_equal(mx_upreq_hdrs_auth(&h, &up), MX_ELIMIT);
    mx_upreq_hdrs_clear(&h);
    assert_int_equal(h.cnt, 0);
}

static void test_upreq_auth_lines(void **state)
{
    static const struct {
        enum mx_auth_kind kind;
        const char *name;
        const char *want; /* the line with the canary as its value */
    } cases[] = {
        {MX_AUTH_BEARER, NULL, "Authorization: Bearer canary-0123456789abcdef"},
        {MX_AUTH_COOKIE, "__sbx_auth", "Cookie: __sbx_auth=canary-0123456789abcdef"},
        {MX_AUTH_HEADER, "X-Api-Key", "X-Api-Key: canary-0123456789abcdef"},
        {MX_AUTH_NONE, NULL, NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_server_cfg c;
        struct mx_upreq_hdrs h;
        cfg_init(&c, cases[i].kind, cases[i].name, "env:TOKEN");
        c.secret = cases[i].kind == MX_AUTH_NONE ? NULL : mx_secret_new(canary, strlen(canary));
        struct mx_upstream up;
        mx_upstream_init(&up, &c);
        mx_upreq_hdrs_init(&h);
        assert_int_equal(mx_upreq_hdrs_auth(&h, &up), 0);
        if (cases[i].want) {
            assert_int_equal(h.cnt, 1);
            assert_string_equal(h.lines[0], cases[i].want);
        } else {
            assert_int_equal(h.cnt, 0);
        }
        mx_upreq_hdrs_clear(&h);
        mx_secret_free(c.secret);
    }
}

/* A credential a refresh renewed: used in place of the configured one,
 * blanked by the upstream's redaction, wiped when the upstream goes; and
 * the message when it gave none. */
static void test_upreq_refreshed_credential(void **state)
{
    static const char fresh[] = "canary-fedcba9876543210";
    struct mx_server_cfg c;
    struct mx_upstream up;
    struct mx_upreq_hdrs h;
    (void)state;
    cfg_init(&c, MX_AUTH_BEARER, NULL, "cmd:renew --key k");
    c.secret = mx_secret_new(canary, strlen(canary));
    mx_upstream_init(&up, &c);
    assert_string_equal(mx_refresh_ref(&c), "cmd:renew --key k");
    up.secret = mx_secret_new(fresh, strlen(fresh));
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_upreq_hdrs_auth(&h, &up), 0);
    assert_string_equal(h.lines[0], "Authorization: Bearer canary-fedcba9876543210");
    mx_upreq_hdrs_clear(&h);
    char line[] = "{\"got\":\"canary-fedcba9876543210\",\"old\":\"canary-0123456789abcdef\"}";
    mx_upstream_redact(&up, line, strlen(line));
    assert_null(strstr(line, fresh));
    assert_non_null(strstr(line, canary)); /* the config's own is the config's to redact */
    mx_refresh_clear(&up);
    assert_null(up.secret);
    assert_true(mx_upstream_secret(&up) == c.secret);

    struct mx_ureq_info info;
    struct mx_upfail f;
    memset(&info, 0, sizeof(info));
    info.http_status = 403;
    snprintf(info.cause, sizeof(info.cause),
             "running cmd:renew again gave no new credential (it printed nothing)");
    mx_upfail_transport(&c, MX_EAUTH, &info, &f);
    assert_int_equal(f.code, MX_RPC_UPSTREAM_AUTH);
    assert_string_equal(f.reason, "auth-failed");
    assert_string_equal(f.message,
                        "upstream 'files' auth-failed: it refused its credential (HTTP 403); "
                        "running cmd:renew again gave no new credential (it printed nothing); "
                        "check the secret cmd:renew");
    /* no refresh command without a cmd: secret or a refresh key */
    c.secret_ref = (char *)(uintptr_t) "vault:files";
    assert_null(mx_refresh_ref(&c));
    c.refresh = (char *)(uintptr_t) "cmd:renew";
    assert_string_equal(mx_refresh_ref(&c), "cmd:renew");
    mx_secret_free(c.secret);
}

static void test_upreq_failures(void **state)
{
    static const struct {
        long status;
        int err;
        bool body_sent;
        bool wake_timeout;
        int code;
        const char *reason;
        const char *text;
    } cases[] = {
        {401, 0, false, false, MX_RPC_UPSTREAM_AUTH, "auth-failed", "check vault entry files"},
        {403, 0, false, false, MX_RPC_UPSTREAM_AUTH, "auth-failed", "HTTP 403"},
        {503, 0, false, false, MX_RPC_UPSTREAM_UNAVAILABLE, "not-awake", "answered HTTP 503"},
        {500, 0, false, false, MX_RPC_UPSTREAM_HTTP, "http-error", "answered HTTP 500"},
        {0, MX_ETIMEDOUT, true, false, MX_RPC_UPSTREAM_TIMEOUT, "timed-out",
         "timed out after 120 s"},
        {0, MX_ETIMEDOUT, false, true, MX_RPC_UPSTREAM_UNAVAILABLE, "not-awake",
         "did not wake within 60 s"},
        {0, MX_ECLOSED, true, false, MX_RPC_OUTCOME_UNKNOWN, "outcome-unknown", "not repeated"},
        {0, MX_ECLOSED, false, false, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", "unreachable"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_server_cfg c;
        struct mx_upfail f;
        cfg_init(&c, MX_AUTH_BEARER, NULL, "vault:files");
        if (cases[i].status) {
            mx_upfail_status(&c, cases[i].status, &f);
        } else {
            struct mx_ureq_info info;
            memset(&info, 0, sizeof(info));
            info.body_sent = cases[i].body_sent;
            info.wake_timeout = cases[i].wake_timeout;
            mx_upfail_transport(&c, cases[i].err, &info, &f);
        }
        assert_int_equal(f.code, cases[i].code);
        assert_string_equal(f.reason, cases[i].reason);
        assert_non_null(strstr(f.message, "'files'"));
        if (strstr(f.message, cases[i].text) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, f.message, cases[i].text);
        json_t *e = mx_upfail_error(&c, &f);
        assert_int_equal(json_integer_value(json_object_get(e, "code")), cases[i].code);
        json_t *data = json_object_get(e, "data");
        assert_string_equal(json_string_value(json_object_get(data, "server")), "files");
        assert_string_equal(json_string_value(json_object_get(data, "reason")), cases[i].reason);
        json_decref(e);
    }
    struct mx_server_cfg c;
    struct mx_upfail f;
    cfg_init(&c, MX_AUTH_BEARER, NULL, "file:/run/tok");
    mx_upfail_status(&c, 401, &f);
    assert_non_null(strstr(f.message, "check the secret file:/run/tok"));
    /* the sandbox was deleted: said the same for the 410 and for a call
     * that finds it gone */
    mx_upfail_status(&c, 410, &f);
    assert_int_equal(f.code, MX_RPC_UPSTREAM_UNAVAILABLE);
    assert_string_equal(f.reason, "gone");
    assert_string_equal(f.message, "upstream 'files': the sandbox is gone (410 from upstream); "
                                   "recreate it and update its url in the config");
    struct mx_ureq_info info;
    memset(&info, 0, sizeof(info));
    info.gone = true;
    struct mx_upfail g;
    mx_upfail_transport(&c, MX_ECLOSED, &info, &g);
    assert_string_equal(g.reason, "gone");
    assert_string_equal(g.message, f.message);
    /* a Retry-After past the call's wake time */
    memset(&info, 0, sizeof(info));
    info.retry_after_s = 30;
    info.http_status = 429;
    mx_upfail_transport(&c, MX_EAGAIN, &info, &f);
    assert_int_equal(f.code, MX_RPC_UPSTREAM_UNAVAILABLE);
    assert_string_equal(f.reason, "retry-after");
    assert_non_null(strstr(f.message, "upstream 'files' asked to retry after 30 s (HTTP 429"));
    assert_non_null(strstr(f.message, "wake_timeout 60 s"));
    /* no connection: TLS says so, and what to do */
    memset(&info, 0, sizeof(info));
    info.no_connection = true;
    info.tls = true;
    snprintf(info.cause, sizeof(info.cause), "certificate verify failed at https://h:1 (x)");
    mx_upfail_transport(&c, MX_EUPSTREAM, &info, &f);
    assert_string_equal(f.reason, "unreachable");
    assert_non_null(strstr(f.message, "upstream 'files' is unreachable: tls: certificate verify "
                                      "failed at https://h:1 (x); "));
    assert_non_null(strstr(f.message, "'ca'"));
    mx_upfail_proto(&c, "it said nothing", &f);
    assert_string_equal(f.reason, "protocol-error");
    assert_non_null(strstr(f.message, "it said nothing"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upreq_headers),
        cmocka_unit_test(test_upreq_auth_lines),
        cmocka_unit_test(test_upreq_refreshed_credential),
        cmocka_unit_test(test_upreq_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
