/* SPDX-License-Identifier: MIT */
/*
 * `mcplex status` and `mcplex reload` find the gateway: with --url from a
 * directory with no config, over TLS with the local CA of the default certs
 * directory, whether the URL is the gateway's base or the /mcp (or
 * /mcp/<server>) URL that serve gives clients; a CA that does not vouch for
 * the gateway is reported as a TLS trust failure with the way out; a port
 * where nothing listens is "no gateway answered"; a config with an error
 * that does not touch [listen] still names the gateway, and one whose
 * [listen] cannot be read says why.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 30000

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static char *make_dir(const char *name)
{
    char *p = mx_it_path(name);
    assert_int_equal(mkdir(p, 0700), 0);
    return p;
}

/* `mcplex ARGS...` (NULL-terminated) run to its end; its exit status, and
 * its output (stdout and stderr) in *|out|. */
static int mcplex(char **out, ...)
{
    const char *argv[12];
    int argc = 0;
    va_list ap;
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    argv[argc++] = bin;
    va_start(ap, out);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 11;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    int rc = mx_it_run(argv[1], argv, NULL, RUN_TIMEOUT_MS, out);
    free(bin);
    return rc;
}

/* A TLS gateway in front of one sandbox-sim "sim", its config in
 * <test>/conf with |state_line| in [proxy] (none: the default state dir,
 * under the test's home); its port, and its CA in *|ca_out|. The commands
 * run afterwards start in <test>/away, where there is no mcplex.toml (and
 * the test's home has no config either). */
static int start_tls_gateway(const char *state_line, char **ca_out)
{
    char tok[MX_IT_CANARY_SIZE];
    int sim_port;
    mx_it_canary(tok, sizeof(tok));
    assert_true(mx_it_start_sim("sim", tok, NULL, &sim_port) > 0);
    char *conf = make_dir("conf");
    char *secret = mx_xasprintf("%s/sim.tok", conf);
    assert_int_equal(mx_it_write_file(secret, tok, strlen(tok)), 0);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\n[proxy]\n%s\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, state_line, sim_port, secret);
    char *cfg_path = mx_xasprintf("%s/mcplex.toml", conf);
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *ca = state_line[0] ? mx_xasprintf("%s/state/certs/ca.pem", conf)
                             : mx_xasprintf("%s/.local/state/mcplex/certs/ca.pem", mx_it_dir());
    assert_true(mx_it_start_mcplex_tls(cfg_path, port, ca) > 0);
    *ca_out = ca;
    char *away = make_dir("away");
    mx_it_set_cwd(away);
    free(away);
    free(cfg_path);
    free(cfg);
    free(secret);
    free(conf);
    return port;
}

static void test_it_status_url_from_anywhere(void **state)
{
    (void)state;
    char *ca;
    int port = start_tls_gateway("", &ca);

    static const char *const paths[] = {"", "/", "/mcp", "/mcp/sim", "/health"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        char *url = mx_xasprintf("https://127.0.0.1:%d%s", port, paths[i]);
        char *out = NULL;
        int rc = mcplex(&out, "status", "--url", url, NULL);
        if (rc != 0)
            fail_msg("status --url %s: exit %d:\n%s", url, rc, out);
        char *want = mx_xasprintf("at https://127.0.0.1:%d/health: ok", port);
        assert_contains(out, want);
        assert_contains(out, "\nsim ");
        free(want);
        free(out);
        free(url);
    }
    /* reload shares the same finding */
    char *url = mx_xasprintf("https://127.0.0.1:%d/mcp", port);
    char *out = NULL;
    int rc = mcplex(&out, "reload", "--url", url, NULL);
    if (rc != 0)
        fail_msg("reload --url %s: exit %d:\n%s", url, rc, out);
    assert_contains(out, "reloaded: 1 upstream configured");
    free(out);
    /* --ca FILE names the CA explicitly */
    rc = mcplex(&out, "status", "--url", url, "--ca", ca, NULL);
    if (rc != 0)
        fail_msg("status --url %s --ca %s: exit %d:\n%s", url, ca, rc, out);
    free(out);
    free(url);
    free(ca);
    mx_it_pass();
}

static void test_it_status_tls_trust(void **state)
{
    (void)state;
    char *ca;
    /* a state dir of its own: the default certs directory has no CA */
    int port = start_tls_gateway("state_dir = \"state\"", &ca);
    char *url = mx_xasprintf("https://127.0.0.1:%d/mcp", port);
    char *out = NULL;
    int rc = mcplex(&out, "status", "--url", url, NULL);
    if (rc != 1)
        fail_msg("status with an untrusted CA: exit %d, want 1:\n%s", rc, out);
    char *want = mx_xasprintf("mcplex: TLS: certificate verify failed for "
                              "https://127.0.0.1:%d/health; is the CA from `mcplex certs init` "
                              "trusted? pass --ca FILE",
                              port);
    assert_contains(out, want);
    if (strstr(out, "no gateway answered"))
        fail_msg("a TLS failure reported as no answer:\n%s", out);
    free(want);
    free(out);

    /* reload says the same */
    rc = mcplex(&out, "reload", "--url", url, NULL);
    assert_int_equal(rc, 1);
    assert_contains(out, "TLS: certificate verify failed");
    free(out);

    /* with the gateway's CA it answers */
    rc = mcplex(&out, "status", "--url", url, "--ca", ca, NULL);
    if (rc != 0)
        fail_msg("status --ca %s: exit %d:\n%s", ca, rc, out);
    free(out);

    /* https:// to a plain-HTTP gateway is a handshake failure, not silence */
    char *plain_cfg = mx_it_path("plain.toml");
    int plain_port = mx_it_free_port();
    char *text = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n", plain_port);
    assert_int_equal(mx_it_write_file(plain_cfg, text, strlen(text)), 0);
    assert_true(mx_it_start_mcplex(plain_cfg, plain_port) > 0);
    char *plain_url = mx_xasprintf("https://127.0.0.1:%d", plain_port);
    rc = mcplex(&out, "status", "--url", plain_url, NULL);
    assert_int_equal(rc, 1);
    assert_contains(out, "TLS handshake");
    assert_contains(out, "use an http:// URL");
    free(out);

    free(plain_url);
    free(text);
    free(plain_cfg);
    free(url);
    free(ca);
    mx_it_pass();
}

static void test_it_status_no_gateway(void **state)
{
    (void)state;
    char *away = make_dir("away");
    mx_it_set_cwd(away);
    int port = mx_it_free_port();
    char *url = mx_xasprintf("https://127.0.0.1:%d/mcp", port);
    char *out = NULL;
    int rc = mcplex(&out, "status", "--url", url, NULL);
    assert_int_equal(rc, 1);
    char *want = mx_xasprintf("no gateway answered at https://127.0.0.1:%d/health", port);
    assert_contains(out, want);
    free(want);
    free(out);

    /* no --url and no config anywhere: it says so and what to pass */
    rc = mcplex(&out, "status", NULL);
    assert_int_equal(rc, 1);
    assert_contains(out, "cannot read config");
    assert_contains(out, "--url URL");
    free(out);
    free(url);
    free(away);
    mx_it_pass();
}

/* `status -c` of a config |text| (written to |name|) whose [listen]
 * cannot be read: exit 1, the error at "<file>|where|", and why it stops. */
static void assert_unreadable_listen(const char *name, const char *text, const char *where)
{
    char *path = mx_it_path(name);
    char *out = NULL;
    assert_int_equal(mx_it_write_file(path, text, strlen(text)), 0);
    int rc = mcplex(&out, "status", "-c", path, NULL);
    if (rc != 1)
        fail_msg("status -c %s: exit %d, want 1:\n%s", path, rc, out);
    char *want = mx_xasprintf("%s%s", path, where);
    assert_contains(out, want);
    assert_contains(out, "cannot tell the gateway's address from this config");
    free(want);
    free(out);
    free(path);
}

static void test_it_status_config_with_unrelated_error(void **state)
{
    (void)state;
    int port = mx_it_free_port();
    char *good = mx_it_path("good.toml");
    char *text = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n", port);
    assert_int_equal(mx_it_write_file(good, text, strlen(text)), 0);
    assert_true(mx_it_start_mcplex(good, port) > 0);

    /* the same [listen], and a server entry with an error */
    char *bad = mx_it_path("bad.toml");
    char *bad_text = mx_xasprintf("%s[servers.broken]\nurl = \"ftp://x.example/\"\n", text);
    assert_int_equal(mx_it_write_file(bad, bad_text, strlen(bad_text)), 0);
    char *out = NULL;
    int rc = mcplex(&out, "status", "-c", bad, NULL);
    if (rc != 0)
        fail_msg("status -c with a bad server entry: exit %d:\n%s", rc, out);
    char *want = mx_xasprintf("at http://127.0.0.1:%d/health: ok", port);
    assert_contains(out, want);
    /* and it says what is wrong with the file */
    char *where = mx_xasprintf("%s:5:7: 'url': must start with http:// or https://", bad);
    assert_contains(out, where);
    free(where);
    free(want);
    free(out);

    /* a file that does not parse at all, or an error in [listen] itself:
     * exactly why not */
    char *broken_text = mx_xasprintf("%s[servers.x\n", text);
    assert_unreadable_listen("broken.toml", broken_text, ":4:");
    assert_unreadable_listen("badlisten.toml", "[listen]\naddress = \"127.0.0.1\"\n",
                             ":2:11: 'address'");

    free(broken_text);
    free(bad_text);
    free(bad);
    free(text);
    free(good);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_it_status_url_from_anywhere, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_status_tls_trust, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_status_no_gateway, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_status_config_with_unrelated_error, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
