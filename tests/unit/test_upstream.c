/* SPDX-License-Identifier: MIT */
/*
 * The upstream's last error, classified in one place (upstream.c): what
 * each failure sets, what clears it, a gone upstream that stays gone, the
 * text /health shows, and the Retry-After values a provider may send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "upstream.h"

struct fixture {
    struct mx_server_cfg cfg;
    int retry_on[4];
    char name[8];
    char url[64];
    struct mx_upstream u;
};

static void fixture_init(struct fixture *f)
{
    static const int retry_on[] = {502, 503, 504, 423};
    memset(f, 0, sizeof(*f));
    memcpy(f->retry_on, retry_on, sizeof(retry_on));
    snprintf(f->name, sizeof(f->name), "files");
    snprintf(f->url, sizeof(f->url), "https://box.example:8443/mcp?sig=q");
    f->cfg.name = f->name;
    f->cfg.url = f->url;
    f->cfg.retry_on = f->retry_on;
    f->cfg.retry_on_cnt = 4;
    mx_upstream_init(&f->u, &f->cfg);
}

static void assert_fault(const struct mx_upstream *u, enum mx_upstream_fault want, const char *text)
{
    char got[256];
    assert_int_equal(u->fault, want);
    mx_upstream_fault_text(u, got, sizeof(got));
    assert_string_equal(got, text);
    if (want != MX_UPSTREAM_FAULT_NONE)
        assert_true(u->fault_at > 0);
}

static void test_upstream_fault_classes(void **state)
{
    struct fixture f;
    (void)state;
    fixture_init(&f);
    struct mx_upstream *u = &f.u;
    assert_fault(u, MX_UPSTREAM_FAULT_NONE, "");

    /* no connection, then a connection: cleared */
    mx_upstream_note_no_connection(u, 10.0, false, "connection refused at 127.0.0.1:9999");
    assert_fault(u, MX_UPSTREAM_FAULT_UNREACHABLE,
                 "unreachable: connection refused at 127.0.0.1:9999");
    assert_true(u->unreachable_since == 10.0);
    mx_upstream_note_no_connection(u, 11.0, false, "connection refused at 127.0.0.1:9999");
    assert_true(u->unreachable_since == 10.0); /* since the first */
    mx_upstream_note_connected(u);
    assert_fault(u, MX_UPSTREAM_FAULT_NONE, "");
    assert_true(u->unreachable_since == 0);

    mx_upstream_note_no_connection(u, 12.0, true,
                                   "certificate verify failed at https://box.example:8443 (x)");
    assert_fault(u, MX_UPSTREAM_FAULT_TLS,
                 "tls: certificate verify failed at https://box.example:8443 (x)");
    mx_upstream_note_status(u, 200);
    assert_fault(u, MX_UPSTREAM_FAULT_NONE, "");
    assert_int_equal(u->state, MX_UPSTREAM_UP);

    /* refused credentials: only an answer clears it, a connection does not */
    mx_upstream_note_status(u, 401);
    assert_int_equal(u->state, MX_UPSTREAM_AUTH_FAILED);
    assert_fault(u, MX_UPSTREAM_FAULT_AUTH, "auth-failed: 401 from files");
    mx_upstream_note_connected(u);
    assert_fault(u, MX_UPSTREAM_FAULT_AUTH, "auth-failed: 401 from files");
    mx_upstream_note_status(u, 403);
    assert_fault(u, MX_UPSTREAM_FAULT_AUTH, "auth-failed: 403 from files");
    mx_upstream_note_status(u, 404); /* an answer, if not a good one */
    assert_fault(u, MX_UPSTREAM_FAULT_NONE, "");
    assert_string_equal(mx_upstream_fault_name(MX_UPSTREAM_FAULT_AUTH), "auth-failed");
}

static void test_upstream_gone_stays_gone(void **state)
{
    struct fixture f;
    (void)state;
    fixture_init(&f);
    struct mx_upstream *u = &f.u;
    mx_upstream_note_status(u, 410);
    assert_int_equal(u->state, MX_UPSTREAM_GONE);
    assert_string_equal(mx_upstream_state_name(u->state), "gone");
    assert_fault(u, MX_UPSTREAM_FAULT_GONE, "gone: 410 from files");
    /* nothing but an answer takes it out of gone: no wake, no down, and
     * the last error stays the one that says why */
    mx_upstream_note(u, MX_UPSTREAM_EV_NOT_AWAKE);
    mx_upstream_note(u, MX_UPSTREAM_EV_UNREACHABLE);
    mx_upstream_note(u, MX_UPSTREAM_EV_TIMEOUT);
    mx_upstream_note_no_connection(u, 5.0, false, "connection refused at 127.0.0.1:1");
    mx_upstream_note_status(u, 401);
    assert_int_equal(u->state, MX_UPSTREAM_GONE);
    assert_fault(u, MX_UPSTREAM_FAULT_GONE, "gone: 410 from files");
    mx_upstream_note_status(u, 200);
    assert_int_equal(u->state, MX_UPSTREAM_UP);
    assert_fault(u, MX_UPSTREAM_FAULT_NONE, "");
    assert_int_equal(mx_upstream_classify_status(u, 410), MX_UPSTREAM_EV_GONE);
}

static void test_upstream_retry_after_parse(void **state)
{
    /* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110 §5.6.7's example */
    const time_t t = 784111777;
    static const struct {
        const char *value;
        int64_t now_offset; /* now = t + this */
        int rc;
        int64_t secs;
    } cases[] = {
        {"120", 0, 0, 120},
        {"0", 0, 0, 0},
        {" 5\t", 0, 0, 5},
        {"99999999999999999999999", 0, 0, 365LL * 86400}, /* capped, not refused */
        {"Sun, 06 Nov 1994 08:49:37 GMT", -30, 0, 30},    /* IMF-fixdate */
        {"Sunday, 06-Nov-94 08:49:37 GMT", -30, 0, 30},   /* obsolete RFC 850 */
        {"Sun Nov  6 08:49:37 1994", -30, 0, 30},         /* obsolete asctime */
        {"Sun, 06 Nov 1994 08:49:37 GMT", 10, 0, 0},      /* already past */
        {"-1", 0, MX_EINVAL, 0},
        {"1.5", 0, MX_EINVAL, 0},
        {"12s", 0, MX_EINVAL, 0},
        {"", 0, MX_EINVAL, 0},
        {"soon", 0, MX_EINVAL, 0},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t secs = -7;
        int rc = mx_upstream_retry_after_parse(mx_str_cstr(cases[i].value),
                                               t + (time_t)cases[i].now_offset, &secs);
        if (rc != cases[i].rc || (rc == 0 && secs != cases[i].secs))
            fail_msg("case %zu \"%s\": rc %d secs %lld, want rc %d secs %lld", i, cases[i].value,
                     rc, (long long)secs, cases[i].rc, (long long)cases[i].secs);
    }
    /* a value longer than any date is refused, not cut */
    char long_value[128];
    memset(long_value, 'x', sizeof(long_value) - 1);
    long_value[sizeof(long_value) - 1] = '\0';
    int64_t secs;
    assert_int_equal(mx_upstream_retry_after_parse(mx_str_cstr(long_value), t, &secs), MX_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upstream_fault_classes),
        cmocka_unit_test(test_upstream_gone_stays_gone),
        cmocka_unit_test(test_upstream_retry_after_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
