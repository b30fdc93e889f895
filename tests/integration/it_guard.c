/* SPDX-License-Identifier: MIT */
/*
 * The local endpoint under attack: client token (403, never 401 and never
 * WWW-Authenticate), Host and Origin checks (DNS rebinding), an oversized
 * body, and 500 connections that send half a header while a normal client
 * keeps being served. Real mcplex and sandbox-sim processes on 127.0.0.1.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define SLOW_CONNS 500

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

struct world {
    char upstream[MX_IT_CANARY_SIZE];
    char token[MX_IT_CANARY_SIZE];
    int port;
    char *url;
    char *health;
};

static void start(struct world *w)
{
    int sim_port;
    mx_it_canary(w->upstream, sizeof(w->upstream));
    mx_it_canary(w->token, sizeof(w->token));
    assert_true(mx_it_start_sim("sim", w->upstream, NULL, &sim_port) > 0);
    char *up = mx_it_path("up.secret");
    char *tok = mx_it_path("client.secret");
    assert_int_equal(mx_it_write_file(up, w->upstream, strlen(w->upstream)), 0);
    assert_int_equal(mx_it_write_file(tok, w->token, strlen(w->token)), 0);
    assert_int_equal(chmod(up, 0600), 0);
    assert_int_equal(chmod(tok, 0600), 0);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "client_token = \"file:%s\"\n"
                             "allowed_origins = [\"http://localhost:3000\"]\n"
                             "max_body = 1048576\nheader_timeout = \"2s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             w->port, tok, sim_port, up);
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(path, w->port) > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp/sim", w->port);
    w->health = mx_xasprintf("http://127.0.0.1:%d/health", w->port);
    free(up);
    free(tok);
    free(cfg);
    free(path);
}

static void stop(struct world *w)
{
    free(w->url);
    free(w->health);
}

/* POST initialize with |extra| headers; returns the status, fills headers/body. */
static long post_init(const struct world *w, const char *const *extra, char **hdrs, char **body)
{
    const char *h[12];
    size_t n = 0;
    h[n++] = "Content-Type: application/json";
    h[n++] = "Accept: application/json, text/event-stream";
    for (const char *const *e = extra; e && *e && n < 11; e++)
        h[n++] = *e;
    h[n] = NULL;
    long status = 0;
    assert_int_equal(mx_it_http_full("POST", w->url, h, init_body, 5000, &status, hdrs, body), 0);
    return status;
}

static void test_guard_token_host_origin(void **state)
{
    struct world w = {0};
    char *hdrs = NULL, *body = NULL;
    (void)state;
    start(&w);
    char *bearer = mx_xasprintf("Authorization: Bearer %s", w.token);
    char *wrong = mx_xasprintf("Authorization: Bearer %s-x", w.token);

    /* no token, wrong token: 403 with a JSON body and no WWW-Authenticate */
    const char *none[] = {NULL};
    const char *bad[] = {wrong, NULL};
    const char *const *cases[] = {none, bad};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(post_init(&w, cases[i], &hdrs, &body), 403);
        assert_null(strcasestr(hdrs, "WWW-Authenticate"));
        assert_non_null(strstr(body, "client token"));
        assert_null(strstr(body, w.token));
        free(hdrs);
        free(body);
    }
    /* the right token: through to the upstream, which gets its own credential */
    const char *good[] = {bearer, NULL};
    assert_int_equal(post_init(&w, good, &hdrs, &body), 200);
    assert_non_null(strcasestr(hdrs, "Mcp-Session-Id"));
    assert_non_null(strstr(body, "\"result\""));
    free(hdrs);
    free(body);

    /* /health needs no token */
    long status = 0;
    assert_int_equal(mx_it_http("GET", w.health, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    free(body);

    /* DNS rebinding: a foreign Host is refused even with the token */
    const char *evil_host[] = {bearer, "Host: evil.example", NULL};
    assert_int_equal(post_init(&w, evil_host, &hdrs, &body), 403);
    free(hdrs);
    free(body);
    const char *evil_host_port[] = {bearer, "Host: evil.example:8443", NULL};
    assert_int_equal(post_init(&w, evil_host_port, &hdrs, &body), 403);
    free(hdrs);
    free(body);
    /* a loopback Host with the port is fine */
    char *lh = mx_xasprintf("Host: localhost:%d", w.port);
    const char *local_host[] = {bearer, lh, NULL};
    assert_int_equal(post_init(&w, local_host, &hdrs, &body), 200);
    free(hdrs);
    free(body);
    free(lh);

    /* browsers: a foreign Origin is refused, an allowed one gets CORS headers */
    const char *evil_origin[] = {bearer, "Origin: http://evil.example", NULL};
    assert_int_equal(post_init(&w, evil_origin, &hdrs, &body), 403);
    assert_null(strcasestr(hdrs, "Access-Control-Allow-Origin"));
    free(hdrs);
    free(body);
    const char *ok_origin[] = {bearer, "Origin: http://localhost:3000", NULL};
    assert_int_equal(post_init(&w, ok_origin, &hdrs, &body), 200);
    assert_non_null(strcasestr(hdrs, "Access-Control-Allow-Origin: http://localhost:3000"));
    free(hdrs);
    free(body);

    /* nothing mcplex wrote holds the token or the upstream secret */
    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, NULL};
    assert_int_equal(mx_it_scan_for(files, w.token, NULL), 0);
    assert_int_equal(mx_it_scan_for(files, w.upstream, NULL), 0);
    free(log);
    free(bearer);
    free(wrong);
    stop(&w);
    mx_it_pass();
}

static void test_guard_big_body_and_slowloris(void **state)
{
    struct world w = {0};
    char *hdrs = NULL, *body = NULL;
    (void)state;
    start(&w);
    char *bearer = mx_xasprintf("Authorization: Bearer %s", w.token);

    /* 10 MiB against a 1 MiB cap: 413, and the next request works */
    size_t big_len = 10u * 1024 * 1024;
    char *big = mx_xmalloc(big_len + 1);
    memset(big, ' ', big_len);
    big[big_len] = '\0';
    const char *h[] = {"Content-Type: application/json", bearer, NULL};
    long status = 0;
    int rc = mx_it_http_full("POST", w.url, h, big, 10000, &status, NULL, NULL);
    free(big);
    /* the answer, never a reset while curl is still uploading (lingering close) */
    assert_int_equal(rc, 0);
    assert_int_equal(status, 413);
    const char *good[] = {bearer, NULL};
    assert_int_equal(post_init(&w, good, &hdrs, &body), 200);
    free(hdrs);
    free(body);

    /* 500 connections that send half a header */
    int fds[SLOW_CONNS];
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)w.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < SLOW_CONNS; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fds[i] >= 0);
        assert_int_equal(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_true(write(fds[i], "POST /mcp/sim HTTP/1.1\r\nHost: 127", 33) == 33);
    }
    /* a normal client is still served, within a second */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(post_init(&w, good, &hdrs, &body), 200);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 1.0);
    free(hdrs);
    free(body);

    /* the header timeout (2 s) closes every one of them */
    int closed = 0;
    for (int tries = 0; tries < 60 && closed < SLOW_CONNS; tries++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        closed = 0;
        for (int i = 0; i < SLOW_CONNS; i++) {
            char buf[512];
            fcntl(fds[i], F_SETFL, O_NONBLOCK);
            ssize_t n;
            while ((n = read(fds[i], buf, sizeof(buf))) > 0)
                ;
            if (n == 0)
                closed++;
        }
    }
    assert_int_equal(closed, SLOW_CONNS);
    for (int i = 0; i < SLOW_CONNS; i++)
        close(fds[i]);
    free(bearer);
    stop(&w);
    mx_it_pass();
}

static void test_guard_remote_needs_token(void **state)
{
    (void)state;
    char *cfg_path = mx_it_path("remote.toml");
    const char *cfg = "[listen]\naddress = \"0.0.0.0:0\"\ntls = false\nallow_remote = true\n";
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "serve", "-c", cfg_path, NULL};
    char *out = NULL;
    assert_int_equal(mx_it_run("serve-remote", argv, NULL, 10000, &out), 1);
    assert_non_null(strstr(out, "client_token"));
    free(out);
    free(bin);
    free(cfg_path);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_guard_token_host_origin, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_guard_big_body_and_slowloris, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_guard_remote_needs_token, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
