/* SPDX-License-Identifier: MIT */
/*
 * What reload decides per server: the same settings and the same resolved
 * secrets keep it; any setting a user can write, or a rotated secret behind
 * an unchanged reference, makes it changed. And wiping a server's secrets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define ENV_A "MX_TEST_RELOAD_A"
#define ENV_B "MX_TEST_RELOAD_B"

static struct mx_config *load(const char *server_body)
{
    char *text = NULL;
    size_t n = (size_t)snprintf(NULL, 0, "[servers.s]\n%s", server_body) + 1;
    text = malloc(n);
    assert_non_null(text);
    snprintf(text, n, "[servers.s]\n%s", server_body);
    struct mx_config *cfg = NULL;
    struct mx_diag d = {0};
    assert_int_equal(mx_config_parse("r.toml", text, strlen(text), &cfg, &d), 0);
    assert_int_equal(mx_config_resolve_secrets(cfg, &d), 0);
    free(text);
    return cfg;
}

static bool same(const char *a, const char *b)
{
    struct mx_config *x = load(a), *y = load(b);
    bool r = mx_server_cfg_same(&x->servers[0], &y->servers[0]);
    mx_config_free(x);
    mx_config_free(y);
    return r;
}

static const char base[] = "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\n";

static void test_same_settings(void **state)
{
    (void)state;
    setenv(ENV_A, "token-one", 1);
    assert_true(same(base, base));
    /* a comment or the order of keys is not a change */
    assert_true(
        same(base, "# moved\nsecret = \"env:" ENV_A "\"\nurl = \"http://127.0.0.1:1/mcp\"\n"));
}

static void test_changed_settings(void **state)
{
    (void)state;
    setenv(ENV_A, "token-one", 1);
    setenv(ENV_B, "token-one", 1);
    static const char *const other[] = {
        "url = \"http://127.0.0.1:2/mcp\"\nsecret = \"env:" ENV_A "\"\n",
        /* same value, other reference: the reference shows in errors */
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_B "\"\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\ntools = [\"e*\"]\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\nalias = \"x\"\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\nrequest_timeout = \"5s\"\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\nretry_on = [503]\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\nsession = \"per-client\"\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\nstart = \"eager\"\n",
        "url = \"http://127.0.0.1:1/mcp\"\nsecret = \"env:" ENV_A "\"\nrefresh = \"cmd:renew\"\n",
        "url = \"http://127.0.0.1:1/mcp\"\n",
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        if (same(base, other[i]))
            fail_msg("not seen as changed: %s", other[i]);
    }
}

static void test_rotated_secret(void **state)
{
    (void)state;
    setenv(ENV_A, "token-one", 1);
    struct mx_config *x = load(base);
    setenv(ENV_A, "token-two", 1);
    struct mx_config *y = load(base);
    assert_false(mx_server_cfg_same(&x->servers[0], &y->servers[0]));
    /* the rest is the same: a running upstream may hold the new value from
     * its refresh command (ops/reload.c decides with it) */
    assert_true(mx_server_cfg_same_keys(&x->servers[0], &y->servers[0]));
    mx_config_free(x);
    mx_config_free(y);
}

static void test_wipe(void **state)
{
    (void)state;
    setenv(ENV_A, "token-one", 1);
    struct mx_config *x = load("command = [\"true\"]\nenv = [\"K=env:" ENV_A "\"]\n");
    assert_non_null(x->servers[0].env_secret[0]);
    mx_server_cfg_wipe_secrets(&x->servers[0]);
    assert_null(x->servers[0].secret);
    assert_null(x->servers[0].env_secret[0]);
    mx_server_cfg_wipe_secrets(&x->servers[0]); /* twice is fine */
    mx_config_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_settings),
        cmocka_unit_test(test_changed_settings),
        cmocka_unit_test(test_rotated_secret),
        cmocka_unit_test(test_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
