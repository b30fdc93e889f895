/* SPDX-License-Identifier: MIT */
/*
 * `mcplex doctor` on a healthy setup and on a broken one, with real
 * processes: a TLS gateway serving a sandbox-sim (its pid named, the local
 * CA seen by Node through NODE_EXTRA_CA_CERTS, a real initialize and
 * tools/list timed), exit 0; then a wrong token, a dead port, a vault other
 * users can read and the [listen] port held by another program: each a FAIL
 * line with its fix, exit 1. No token in any output.
 */
#include <setjmp.h>
#include <signal.h>
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

static int doctor(const char *cfg, const char *const *env, char **out)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "doctor", "-c", cfg, NULL};
    int rc = mx_it_run("doctor", argv, env, 60000, out);
    free(bin);
    fprintf(stderr, "--- mcplex doctor (exit %d)\n%s", rc, *out);
    return rc;
}

static void test_doctor(void **state)
{
    char tok[MX_IT_CANARY_SIZE], wrong[MX_IT_CANARY_SIZE];
    int sp, port, dead = mx_it_free_port();
    (void)state;
    mx_it_canary(tok, sizeof(tok));
    mx_it_canary(wrong, sizeof(wrong));
    const char *sim_args[] = {"--name", "sim-a", NULL};
    assert_true(mx_it_start_sim("sim-a", tok, sim_args, &sp) > 0);
    port = mx_it_free_port();
    assert_true(port > 0 && dead > 0);

    char *good = mx_it_secret_file("good.secret", tok);
    char *state_dir = mx_it_path("state");
    char *vault = mx_it_path("vault");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n"
                             "[proxy]\nstate_dir = \"%s\"\nvault = \"%s\"\n"
                             "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, state_dir, vault, sp, good);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *ca = mx_xasprintf("%s/certs/ca.pem", state_dir);
    pid_t gw = mx_it_start_mcplex_tls(cfg_path, port, ca);
    assert_true(gw > 0);

    /* 1. healthy: warnings at most, exit 0 */
    char *node_ca = mx_xasprintf("NODE_EXTRA_CA_CERTS=%s", ca);
    const char *env[] = {node_ca, NULL};
    char *out = NULL;
    assert_int_equal(doctor(cfg_path, env, &out), 0);
    char *line =
        mx_xasprintf("ok    gateway: mcplex (pid %d) serves 127.0.0.1:%d\n", (int)gw, port);
    assert_non_null(strstr(out, line));
    free(line);
    assert_non_null(strstr(out, "ok    CA: Node-based clients see it (NODE_EXTRA_CA_CERTS)\n"));
    assert_non_null(strstr(out, "ok    upstream a: initialize "));
    assert_non_null(strstr(out, " ms, 5 tools (secret file:"));
    assert_non_null(strstr(out, "doctor: 0 problems"));
    free(out);

    /* 2. broken: b's token is wrong, c's port is dead, the vault is
     * readable by others, and another program holds [listen] */
    assert_int_equal(mx_it_signal(gw, SIGTERM), 0);
    assert_true(mx_it_wait_exit(gw, 15000) >= 0);
    const char *hold_args[] = {"--listen", NULL, "--name", "squatter", NULL};
    char *listen = mx_xasprintf("127.0.0.1:%d", port);
    hold_args[1] = listen;
    int got = 0;
    assert_true(mx_it_start_sim("squatter", NULL, hold_args, &got) > 0);
    char *bad = mx_it_secret_file("bad.secret", wrong);
    assert_int_equal(mx_it_write_file(vault, "{}", 2), 0);
    assert_int_equal(chmod(vault, 0644), 0);
    free(cfg);
    cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n"
                       "[proxy]\nstate_dir = \"%s\"\nvault = \"%s\"\n"
                       "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
                       "[servers.b]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
                       "[servers.c]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
                       port, state_dir, vault, sp, good, sp, bad, dead, good);
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_int_equal(doctor(cfg_path, NULL, &out), 1);
    line =
        mx_xasprintf("FAIL  vault %s: mode 0644 lets others in; fix: chmod 600 %s\n", vault, vault);
    assert_non_null(strstr(out, line));
    free(line);
    line = mx_xasprintf("FAIL  gateway: 127.0.0.1:%d is taken by another program, not mcplex; "
                        "fix: stop it, or choose another [listen] address\n",
                        port);
    assert_non_null(strstr(out, line));
    free(line);
    assert_non_null(strstr(out, "ok    upstream a: initialize "));
    assert_non_null(strstr(out, "FAIL  upstream b: initialize failed after "));
    line = mx_xasprintf("HTTP 401 (secret file:%s); fix: write the right token to %s (mode "
                        "0600)\n",
                        bad, bad);
    assert_non_null(strstr(out, line));
    free(line);
    assert_non_null(strstr(out, "FAIL  upstream c: initialize failed after "));
    assert_non_null(strstr(out, "fix: start the sandbox (or its wake hook), or correct its url\n"));
    assert_non_null(strstr(out, "CA: Node-based clients (Claude Code, the SDK) ignore the system "
                                "store; fix: export NODE_EXTRA_CA_CERTS="));
    assert_non_null(strstr(out, "doctor: 4 problems"));
    assert_null(strstr(out, tok));
    assert_null(strstr(out, wrong));
    free(out);

    free(bad);
    free(listen);
    free(node_ca);
    free(ca);
    free(cfg);
    free(cfg_path);
    free(vault);
    free(state_dir);
    free(good);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_doctor, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
