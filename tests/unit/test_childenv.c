/* SPDX-License-Identifier: MIT */
/*
 * The environment of a stdio upstream's process: exactly the allowlisted
 * names, forwarded from the parent or set from a secret; names the parent
 * lacks are left out; nothing else (no HOME, no PATH) unless named; bad,
 * duplicate or unresolved entries refused without a value in the message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "childenv.h"
#include "err.h"

static const char *const parent_text[] = {
    "HOME=/home/someone",
    "PATH=/usr/bin:/bin",
    "LANG=C.UTF-8",
    "OTHER_TOKEN=canary-of-another",
    "EMPTY=",
    "PATHX=not-path",
    NULL,
};

/* A NULL-terminated heap copy of |cnt| strings (or up to a NULL). */
static char **dupv(const char *const *v, size_t cnt)
{
    char **out = calloc(cnt + 1, sizeof(*out));
    assert_non_null(out);
    for (size_t i = 0; i < cnt && v[i]; i++) {
        out[i] = strdup(v[i]);
        assert_non_null(out[i]);
    }
    return out;
}

static void freev(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static char **parent_env;

static int setup(void **state)
{
    (void)state;
    parent_env = dupv(parent_text, sizeof(parent_text) / sizeof(parent_text[0]));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    freev(parent_env);
    return 0;
}

static struct mx_strv strv(const char *const *v, size_t cnt)
{
    struct mx_strv s = {dupv(v, cnt), cnt};
    return s;
}

static void test_childenv_forward_and_secret(void **state)
{
    static const char *const allow_v[] = {"PATH", "API_KEY=vault:api", "LANG", "EMPTY"};
    struct mx_strv allow = strv(allow_v, 4);
    struct mx_secret *secrets[4] = {NULL, mx_secret_new("s3cret", 6), NULL, NULL};
    struct mx_childenv e;
    (void)state;
    assert_int_equal(mx_childenv_build(&allow, secrets, parent_env, &e, NULL, 0), 0);
    assert_int_equal(e.cnt, 4);
    assert_string_equal(e.envp[0], "PATH=/usr/bin:/bin");
    assert_string_equal(e.envp[1], "API_KEY=s3cret");
    assert_string_equal(e.envp[2], "LANG=C.UTF-8");
    assert_string_equal(e.envp[3], "EMPTY=");
    assert_null(e.envp[4]);
    /* nothing else: not HOME, not another upstream's token, not PATHX */
    assert_null(mx_childenv_get(&e, "HOME"));
    assert_null(mx_childenv_get(&e, "OTHER_TOKEN"));
    assert_null(mx_childenv_get(&e, "PATHX"));
    assert_string_equal(mx_childenv_get(&e, "API_KEY"), "s3cret");
    mx_childenv_clear(&e);
    assert_null(e.envp);
    mx_childenv_clear(&e); /* twice is fine */
    mx_secret_free(secrets[1]);
    freev(allow.v);
}

static void test_childenv_unset_skipped(void **state)
{
    static const char *const allow_v[] = {"NOT_SET_ANYWHERE", "HOME"};
    struct mx_strv allow = strv(allow_v, 2);
    struct mx_childenv e;
    (void)state;
    assert_int_equal(mx_childenv_build(&allow, NULL, parent_env, &e, NULL, 0), 0);
    assert_int_equal(e.cnt, 1);
    assert_string_equal(e.envp[0], "HOME=/home/someone");
    assert_null(e.envp[1]);
    mx_childenv_clear(&e);
    /* no parent environment at all */
    assert_int_equal(mx_childenv_build(&allow, NULL, NULL, &e, NULL, 0), 0);
    assert_int_equal(e.cnt, 0);
    assert_null(e.envp[0]);
    mx_childenv_clear(&e);
    freev(allow.v);
}

static void test_childenv_empty_allowlist(void **state)
{
    struct mx_strv allow = {NULL, 0};
    struct mx_childenv e;
    (void)state;
    /* HOME and PATH are not passed unless named */
    assert_int_equal(mx_childenv_build(&allow, NULL, parent_env, &e, NULL, 0), 0);
    assert_int_equal(e.cnt, 0);
    assert_null(e.envp[0]);
    mx_childenv_clear(&e);
    assert_int_equal(mx_childenv_build(NULL, NULL, parent_env, &e, NULL, 0), 0);
    assert_int_equal(e.cnt, 0);
    mx_childenv_clear(&e);
}

static void test_childenv_bad_entries(void **state)
{
    static const struct {
        const char *entry;
        const char *why;
    } bad[] = {
        {"", "env entry 2 is not NAME"},
        {"1ABC", "env entry 2 is not NAME"},
        {"A-B", "env entry 2 is not NAME"},
        {"=vault:x", "env entry 2 is not NAME"},
        {"TOKEN abc123", "env entry 2 is not NAME"},
        {"LANG", "env LANG is listed twice"},
        {"LANG=env:X", "env LANG is listed twice"},
        {"KEY=vault:k", "env KEY: its secret is not resolved"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *const allow_v[] = {"LANG", bad[i].entry};
        struct mx_strv allow = strv(allow_v, 2);
        struct mx_secret *secrets[2] = {NULL, NULL};
        struct mx_childenv e;
        char why[200] = "";
        assert_int_equal(mx_childenv_build(&allow, secrets, parent_env, &e, why, sizeof(why)),
                         MX_EINVAL);
        if (strstr(why, bad[i].why) == NULL)
            fail_msg("%s: got \"%s\"", bad[i].entry, why);
        assert_null(strstr(why, "abc123"));
        assert_null(e.envp);
        assert_int_equal(e.cnt, 0);
        freev(allow.v);
    }
}

static void test_childenv_first_parent_entry_wins(void **state)
{
    static const char *const dup_text[] = {"A=1", "A=2"};
    static const char *const allow_v[] = {"A"};
    char **dup_env = dupv(dup_text, 2);
    struct mx_strv allow = strv(allow_v, 1);
    struct mx_childenv e;
    (void)state;
    assert_int_equal(mx_childenv_build(&allow, NULL, dup_env, &e, NULL, 0), 0);
    assert_int_equal(e.cnt, 1);
    assert_string_equal(e.envp[0], "A=1");
    mx_childenv_clear(&e);
    freev(dup_env);
    freev(allow.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_childenv_forward_and_secret),
        cmocka_unit_test(test_childenv_unset_skipped),
        cmocka_unit_test(test_childenv_empty_allowlist),
        cmocka_unit_test(test_childenv_bad_entries),
        cmocka_unit_test(test_childenv_first_parent_entry_wins),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
