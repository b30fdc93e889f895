/* SPDX-License-Identifier: MIT */
/*
 * Multiplexing over an HTTP/2 upstream: sandbox-sim serving https (h2 by
 * ALPN, a private CA that mcplex trusts through the server's `ca` key), and
 * 50 concurrent client sessions at /mcp sharing one upstream session over
 * one TCP connection.
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

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static json_t *sim_stats(int port, const char *token)
{
    char *url = mx_xasprintf("https://127.0.0.1:%d/__stats", port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", token);
    const char *h[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, h, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    free(body);
    free(auth);
    free(url);
    return j;
}

static void test_h2_upstream_one_connection(void **state)
{
    char token[MX_IT_CANARY_SIZE];
    (void)state;
    mx_it_canary(token, sizeof(token));

    /* a private CA and a localhost certificate for the sandbox */
    char *dir = mx_it_path("certs");
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *init[] = {bin, "certs", "init", "--dir", dir, NULL};
    assert_int_equal(mx_it_run("certs", init, NULL, 20000, NULL), 0);
    char *ca = mx_xasprintf("%s/ca.pem", dir);
    char *cert = mx_xasprintf("%s/localhost.pem", dir);
    char *key = mx_xasprintf("%s/localhost.key", dir);
    mx_it_set_ca_file(ca);

    /* sandbox-sim over TLS */
    char *sim_bin = mx_xasprintf("%s/sandbox-sim", mx_it_build_dir());
    char *port_file = mx_it_path("sim.port");
    char *bearer_env = mx_xasprintf("MX_SIM_BEARER=%s", token);
    const char *sim_argv[] = {
        sim_bin, "--listen",  "127.0.0.1:0", "--port-file",  port_file,       "--tls-cert",
        cert,    "--tls-key", key,           "--bearer-env", "MX_SIM_BEARER", NULL};
    const char *sim_env[] = {bearer_env, NULL};
    pid_t sim = mx_it_spawn("sim", sim_argv, sim_env, NULL);
    assert_true(sim > 0);
    int sim_port = mx_it_port_file(sim, port_file, 10000);
    assert_true(sim_port > 0);

    /* mcplex in front, trusting the private CA for this upstream only */
    char *secret = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(secret, token, strlen(token)), 0);
    assert_int_equal(chmod(secret, 0600), 0);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.box]\nurl = \"https://127.0.0.1:%d/mcp\"\n"
                             "ca = \"%s\"\nsecret = \"file:%s\"\nsession = \"shared\"\n"
                             "max_concurrency = 64\n",
                             port, sim_port, ca, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);

    /* fifty concurrent client sessions, each initializing and calling */
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url, "many", "{\"count\":50,\"tool\":\"echo\"}", NULL, &out), 0);
    assert_int_equal(json_integer_value(json_object_get(out, "succeeded")), 50);
    json_decref(out);

    json_t *st = sim_stats(sim_port, token);
    /* one upstream session and one TCP connection (plus this stats request's own) */
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(st, "methods"), "initialize")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "tools"), "echo")), 50);
    assert_int_equal(json_integer_value(json_object_get(st, "connections")), 2);
    json_decref(st);

    free(url);
    free(cfg_path);
    free(cfg);
    free(secret);
    free(bearer_env);
    free(port_file);
    free(sim_bin);
    free(key);
    free(cert);
    free(ca);
    free(bin);
    free(dir);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_h2_upstream_one_connection, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
