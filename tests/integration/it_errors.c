/* SPDX-License-Identifier: MIT */
/*
 * Errors that teach, with real processes, each message asserted verbatim:
 * serve without servers warns what to add; /mcp/<unknown> lists the
 * configured servers (never their URLs or secrets); plain HTTP sent to the
 * TLS port gets a 400 that says to use https, then a clean close (curl sees
 * the answer, not a reset); a second serve on a port an mcplex already
 * serves exits at once naming that mcplex's pid, and a port another
 * program holds is named as such.
 */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define NO_SERVERS_HINT                                                                            \
    "no [servers.NAME] table, so mcplex serves no upstream; add a server: [servers.NAME] with "    \
    "url = \"https://HOST/mcp\" (or command = [\"PROGRAM\"])"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *write_config(const char *text)
{
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, text, strlen(text)), 0);
    return path;
}

/* POST an initialize to |url|; fails unless the answer is |status| with the
 * body |want_body| byte for byte. */
static void expect_answer(const char *url, long status, const char *want_body)
{
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    long got = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("POST", url, hdrs,
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                                "\"params\":{\"protocolVersion\":\"2025-11-25\","
                                "\"capabilities\":{},\"clientInfo\":{\"name\":\"e\","
                                "\"version\":\"1\"}}}",
                                &got, &body),
                     0);
    if (got != status || body == NULL || strcmp(body, want_body) != 0)
        fail_msg("%s: HTTP %ld\n  got  %s\n  want %s", url, got, body ? body : "(none)", want_body);
    free(body);
}

static void test_errors_serve_without_servers(void **state)
{
    (void)state;
    int port = mx_it_free_port();
    char *text = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                              "[proxy]\nstate_dir = \"%s\"\n",
                              port, mx_it_dir());
    char *cfg = write_config(text);
    assert_true(mx_it_start_mcplex(cfg, port) > 0);
    char *log = mx_it_path("mcplex.log");
    char *want = mx_xasprintf(" warn  serve    %s: " NO_SERVERS_HINT "\n", cfg);
    char *got = mx_it_read_file(log, NULL);
    if (got == NULL || strstr(got, want) == NULL)
        fail_msg("no warning line%s in the log:\n%s", want, got ? got : "(unreadable)");

    /* /mcp/<name> with none configured says what to add */
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/files", port);
    expect_answer(url, 404,
                  "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"no "
                  "server 'files': none is configured; add a [servers.NAME] table to the "
                  "config\",\"data\":{\"servers\":[]}}}");
    free(url);
    free(got);
    free(want);
    free(log);
    free(cfg);
    free(text);
    mx_it_pass();
}

static void test_errors_unknown_server(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE], url_canary[MX_IT_CANARY_SIZE];
    int sim_port;
    mx_it_canary(token, sizeof(token));
    mx_it_canary(url_canary, sizeof(url_canary));
    const char *sim_args[] = {"--name", "files", NULL};
    assert_true(mx_it_start_sim("files", token, sim_args, &sim_port) > 0);
    char *secret = mx_it_secret_file("files.secret", token);
    int port = mx_it_free_port();
    /* web's URL carries a key in its query: it must not be listed either */
    char *text = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                              "[proxy]\nstate_dir = \"%s\"\n"
                              "[servers.files]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                              "secret = \"file:%s\"\n"
                              "[servers.web]\nurl = \"http://127.0.0.1:%d/mcp?key=%s\"\n",
                              port, mx_it_dir(), sim_port, secret, mx_it_free_port(), url_canary);
    char *cfg = write_config(text);
    assert_true(mx_it_start_mcplex(cfg, port) > 0);

    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/fiels", port);
    expect_answer(url, 404,
                  "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"no "
                  "server 'fiels'; did you mean /mcp/files? The configured servers are: files, "
                  "web (all of them at /mcp)\",\"data\":{\"servers\":[\"files\",\"web\"]}}}");
    free(url);
    url = mx_xasprintf("http://127.0.0.1:%d/mcp/database", port);
    expect_answer(url, 404,
                  "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"no "
                  "server 'database'; the configured servers are: files, web (all of them at "
                  "/mcp)\",\"data\":{\"servers\":[\"files\",\"web\"]}}}");
    free(url);
    /* a name no server could have is not echoed */
    url = mx_xasprintf("http://127.0.0.1:%d/mcp/a%%22b", port);
    expect_answer(url, 404,
                  "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"no "
                  "such server; the configured servers are: files, web (all of them at /mcp)\","
                  "\"data\":{\"servers\":[\"files\",\"web\"]}}}");
    free(url);

    /* the configured one still serves */
    url = mx_xasprintf("http://127.0.0.1:%d/mcp/files", port);
    json_t *out =
        mx_it_client_ok(url, "call", "{\"name\":\"echo\",\"arguments\":{\"message\":\"hi\"}}");
    const char *said = mx_it_result_text(out);
    if (said == NULL || strcmp(said, "hi") != 0)
        fail_msg("files answered \"%s\"", said ? said : "(nothing)");
    json_decref(out);

    const char *canaries[] = {token, url_canary};
    char *logs = mx_it_path("mcplex.log");
    const char *scan[] = {logs, NULL};
    assert_int_equal(mx_it_canary_hits(scan, canaries, 2), 0);
    free(logs);
    free(url);
    free(cfg);
    free(text);
    free(secret);
    mx_it_pass();
}

/* A TLS mcplex with no upstream on a free port; returns the port and the
 * config path (caller frees) in *cfg_out. */
static int start_tls_mcplex(char **cfg_out, pid_t *pid_out)
{
    int port = mx_it_free_port();
    char *text = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n"
                              "[proxy]\nstate_dir = \"%s\"\n",
                              port, mx_it_dir());
    char *cfg = write_config(text);
    char *ca = mx_it_path("certs/ca.pem");
    pid_t pid = mx_it_start_mcplex_tls(cfg, port, ca);
    assert_true(pid > 0);
    free(ca);
    free(text);
    *cfg_out = cfg;
    *pid_out = pid;
    return port;
}

static void test_errors_plain_http_to_tls(void **state)
{
    (void)state;
    char *cfg;
    pid_t pid;
    int port = start_tls_mcplex(&cfg, &pid);
    char *want_body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                                   "\"message\":\"plain HTTP sent to an HTTPS port: use "
                                   "https://127.0.0.1:%d/\"}}",
                                   port);

    /* curl itself: exit 0 (an answer, not a reset), the status line, the
     * close, the body */
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    const char *argv[] = {"curl", "-sS", "-i", "--max-time", "10", url, NULL};
    char *out = NULL;
    int rc = mx_it_run("curl", argv, NULL, 15000, &out);
    if (rc != 0 || strncmp(out, "HTTP/1.1 400 Bad Request\r\n", 26) != 0 ||
        strstr(out, "\r\nConnection: close\r\n") == NULL ||
        strstr(out, "\r\nContent-Type: application/json\r\n") == NULL ||
        strstr(out, want_body) == NULL)
        fail_msg("curl exit %d:\n%s", rc, out ? out : "");
    free(out);

    /* an upload is read off and dropped, so the answer still arrives */
    size_t big = 256 * 1024;
    char *body = mx_xmalloc(big + 1);
    memset(body, 'x', big);
    body[big] = '\0';
    long status = 0;
    char *headers = NULL, *resp = NULL;
    assert_int_equal(mx_it_http_full("POST", url, NULL, body, 10000, &status, &headers, &resp), 0);
    if (status != 400 || resp == NULL || strcmp(resp, want_body) != 0)
        fail_msg("POST over plain HTTP: %ld %s", status, resp ? resp : "(none)");
    free(headers);
    free(resp);
    free(body);

    /* the TLS port still serves TLS */
    char *health = mx_xasprintf("https://127.0.0.1:%d/health", port);
    assert_int_equal(mx_it_wait_http_status(health, 200, 5000), 0);
    free(health);
    free(url);
    free(want_body);
    free(cfg);
    mx_it_pass();
}

/* Run `mcplex serve -c |cfg|`; fails unless it exits non-zero within
 * |limit_s| with |want| as a line of its output. */
static void expect_serve_refused(const char *cfg, const char *want, double limit_s)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "serve", "-c", cfg, NULL};
    char *out = NULL;
    double t0 = now_s();
    int rc = mx_it_run("serve2", argv, NULL, 15000, &out);
    double secs = now_s() - t0;
    char *line = mx_xasprintf("%s\n", want);
    fprintf(stderr, "# second serve: exit %d after %.2f s\n", rc, secs);
    if (rc <= 0 || strstr(out, line) == NULL || secs > limit_s)
        fail_msg("exit %d after %.2f s; want a line\n  %s\ngot:\n%s", rc, secs, want, out);
    free(line);
    free(out);
    free(bin);
}

/* serve on |port|, which something other than mcplex holds, is refused
 * saying so (rewrites the config |cfg|). */
static void expect_other_program(const char *cfg, int port, bool tls)
{
    char *text = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = %s\n"
                              "[proxy]\nstate_dir = \"%s\"\n",
                              port, tls ? "true" : "false", mx_it_dir());
    assert_int_equal(mx_it_write_file(cfg, text, strlen(text)), 0);
    char *want = mx_xasprintf("mcplex: 127.0.0.1:%d is in use by another program; choose "
                              "another [listen] address",
                              port);
    expect_serve_refused(cfg, want, 4.0);
    free(want);
    free(text);
}

static void test_errors_second_serve(void **state)
{
    (void)state;
    char *cfg;
    pid_t pid;
    int port = start_tls_mcplex(&cfg, &pid);
    char *want = mx_xasprintf("mcplex (pid %ld) already serves 127.0.0.1:%d; use `mcplex reload` "
                              "or `mcplex status`",
                              (long)pid, port);
    expect_serve_refused(cfg, want, 2.0);
    free(want);
    /* the first one is untouched */
    char *health = mx_xasprintf("https://127.0.0.1:%d/health", port);
    assert_int_equal(mx_it_wait_http_status(health, 200, 5000), 0);
    free(health);

    /* a port an HTTP server that is not mcplex holds */
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    mx_it_canary(token, sizeof(token));
    assert_true(mx_it_start_sim("other", token, NULL, &sim_port) > 0);
    expect_other_program(cfg, sim_port, true);

    /* a listener that never answers */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {0};
    socklen_t sl = sizeof(sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    expect_other_program(cfg, ntohs(sa.sin_port), false);
    close(fd);
    free(cfg);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_errors_serve_without_servers, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_errors_unknown_server, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_errors_plain_http_to_tls, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_errors_second_serve, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
