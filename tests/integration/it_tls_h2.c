/* SPDX-License-Identifier: MIT */
/*
 * TLS and HTTP/2 end to end: mcplex with tls = true (certificates made by
 * `mcplex certs init`, or on first run in the state dir) in front of
 * sandbox-sim. curl over HTTP/1.1 and HTTP/2 with --cacert; the TypeScript
 * SDK client with NODE_EXTRA_CA_CERTS; nghttp with 100 concurrent tools/call
 * streams on one connection; h2load; and a small nghttp2 client of our own
 * for what the tools cannot do: time an SSE stream's first event against its
 * end, reset a stream mid-call while keeping the connection, and watch the
 * GOAWAY of a draining mcplex. Also: an untrusted CA fails the handshake,
 * and plain listeners take HTTP/2 with prior knowledge.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <jansson.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "alloc.h"
#include "buf.h"
#include "call.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 60000
#define INIT_BODY                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"     \
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}"
#define INITIALIZED_BODY "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
#define ADD_BODY                                                                                   \
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"add\","        \
    "\"arguments\":{\"a\":2,\"b\":3}}}"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    int port;
    pid_t sim;
    pid_t mcplex;
    char *dir; /* certificate directory */
    char *ca;  /* the CA clients must trust */
    char *cfg; /* config path */
    char *log; /* mcplex log */
    char session[128];
};

static char *bin(const char *name)
{
    return mx_xasprintf("%s/%s", mx_it_build_dir(), name);
}

static void world_free(struct world *w)
{
    free(w->dir);
    free(w->ca);
    free(w->cfg);
    free(w->log);
}

/* `mcplex certs init --dir <test>/|name|`; returns the directory. */
static char *certs_init(const char *name)
{
    char *dir = mx_it_path(name);
    char *mcplex = bin("mcplex");
    char *out = NULL;
    const char *argv[] = {mcplex, "certs", "init", "--dir", dir, NULL};
    int rc = mx_it_run("certs-init", argv, NULL, RUN_TIMEOUT_MS, &out);
    if (rc != 0)
        fprintf(stderr, "certs init: %s\n", out);
    assert_int_equal(rc, 0);
    free(out);
    free(mcplex);
    return dir;
}

/*
 * sandbox-sim and mcplex in front of it. |tls|: a TLS listener with the pair
 * from `mcplex certs init` (|explicit_certs|) or the state-dir default.
 */
static void start_world(struct world *w, bool tls, bool explicit_certs)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->token, sizeof(w->token));
    w->sim = mx_it_start_sim("sim", w->token, NULL, &w->sim_port);
    assert_true(w->sim > 0);
    char *secret = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(secret, w->token, strlen(w->token)), 0);
    char *state = mx_it_path("state");
    char *certs = mx_xstrdup("");
    if (tls && explicit_certs) {
        w->dir = certs_init("certs");
        free(certs);
        certs = mx_xasprintf("cert = \"%s/localhost.pem\"\nkey = \"%s/localhost.key\"\n", w->dir,
                             w->dir);
    } else if (tls) {
        w->dir = mx_xasprintf("%s/certs", state);
    }
    w->ca = w->dir ? mx_xasprintf("%s/ca.pem", w->dir) : NULL;
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\n"
                             "address = \"127.0.0.1:%d\"\n"
                             "tls = %s\n"
                             "%s"
                             "[proxy]\n"
                             "state_dir = \"%s\"\n"
                             "[servers.sim]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, tls ? "true" : "false", certs, state, w->sim_port, secret);
    w->cfg = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg, cfg, strlen(cfg)), 0);
    w->mcplex =
        tls ? mx_it_start_mcplex_tls(w->cfg, w->port, w->ca) : mx_it_start_mcplex(w->cfg, w->port);
    assert_true(w->mcplex > 0);
    w->log = mx_it_path("mcplex.log");
    free(cfg);
    free(certs);
    free(state);
    free(secret);
}

static char *gw_url(const struct world *w, const char *path)
{
    return mx_xasprintf("https://127.0.0.1:%d%s", w->port, path);
}

/* initialize + notifications/initialized over HTTP/1.1; keeps the session id. */
static void mcp_session(struct world *w)
{
    char *url = gw_url(w, "/mcp/sim");
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    long status = 0;
    char *resp_h = NULL, *body = NULL;
    assert_int_equal(mx_it_http_full("POST", url, hdrs, INIT_BODY, 10000, &status, &resp_h, &body),
                     0);
    assert_int_equal(status, 200);
    mx_it_header_value(resp_h, "mcp-session-id", w->session, sizeof(w->session));
    assert_true(strlen(w->session) > 0);
    free(resp_h);
    free(body);
    char sid[200];
    snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", w->session);
    const char *h2[] = {"Content-Type: application/json",
                        "Accept: application/json, text/event-stream", sid,
                        "MCP-Protocol-Version: 2025-06-18", NULL};
    assert_int_equal(mx_it_http("POST", url, h2, INITIALIZED_BODY, &status, NULL), 0);
    assert_int_equal(status, 202);
    free(url);
}

/* A number from mcplex's /health or the sim's /__stats. */
static long long json_num(const char *url, const char *bearer, const char *key)
{
    char auth[128];
    const char *hdrs[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer ? bearer : "");
    if (mx_it_http("GET", url, bearer ? hdrs : NULL, NULL, &status, &body) != 0 || status != 200) {
        free(body);
        return -1;
    }
    json_t *o = json_loads(body, 0, NULL);
    long long v = (long long)json_integer_value(json_object_get(o, key));
    json_decref(o);
    free(body);
    return v;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a small blocking HTTP/2 client over TLS ---- */

struct h2cli {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    nghttp2_session *ngh;
    struct mx_buf out;
    int32_t id;
    int status;
    struct mx_buf body;
    bool closed;
    uint32_t error;
    bool goaway;
    uint32_t goaway_error;
    double first_data_at; /* when body bytes first arrived */
    double closed_at;
};

static ssize_t cli_send(nghttp2_session *s, const uint8_t *d, size_t len, int flags, void *ud)
{
    struct h2cli *c = ud;
    (void)s;
    (void)flags;
    return mx_buf_append(&c->out, d, len) ? NGHTTP2_ERR_CALLBACK_FAILURE : (ssize_t)len;
}

static int cli_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                      void *ud)
{
    struct h2cli *c = ud;
    (void)s;
    (void)flags;
    if (fr->hd.stream_id == c->id && namelen == 7 && memcmp(name, ":status", 7) == 0 &&
        valuelen == 3)
        c->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return 0;
}

static int cli_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                    void *ud)
{
    struct h2cli *c = ud;
    (void)s;
    (void)flags;
    if (id != c->id)
        return 0;
    if (c->first_data_at == 0)
        c->first_data_at = now_s();
    mx_buf_append(&c->body, d, len);
    return 0;
}

static int cli_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
    struct h2cli *c = ud;
    (void)s;
    if (id == c->id) {
        c->closed = true;
        c->error = err;
        c->closed_at = now_s();
    }
    return 0;
}

static int cli_frame(nghttp2_session *s, const nghttp2_frame *fr, void *ud)
{
    struct h2cli *c = ud;
    (void)s;
    if (fr->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = true;
        c->goaway_error = fr->goaway.error_code;
    }
    return 0;
}

static void cli_connect(struct h2cli *c, int port, const char *ca)
{
    struct sockaddr_in sa = {0};
    struct timeval tv = {5, 0};
    static const unsigned char alpn[] = "\x02h2";
    nghttp2_session_callbacks *cbs;
    const unsigned char *sel = NULL;
    unsigned sel_len = 0;

    memset(c, 0, sizeof(*c));
    mx_buf_init(&c->out, 1 << 20);
    mx_buf_init(&c->body, 1 << 20);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    c->ctx = SSL_CTX_new(TLS_client_method());
    assert_int_equal(SSL_CTX_load_verify_locations(c->ctx, ca, NULL), 1);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    c->ssl = SSL_new(c->ctx);
    SSL_set_fd(c->ssl, c->fd);
    SSL_set1_host(c->ssl, "127.0.0.1");
    SSL_set_alpn_protos(c->ssl, alpn, sizeof(alpn) - 1);
    assert_int_equal(SSL_connect(c->ssl), 1);
    SSL_get0_alpn_selected(c->ssl, &sel, &sel_len);
    assert_int_equal(sel_len, 2);
    assert_memory_equal(sel, "h2", 2);

    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, cli_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, cli_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cli_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cli_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cli_frame);
    assert_int_equal(nghttp2_session_client_new(&c->ngh, cbs, c), 0);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(c->ngh, NGHTTP2_FLAG_NONE, NULL, 0);
}

static void cli_free(struct h2cli *c)
{
    nghttp2_session_del(c->ngh);
    SSL_free(c->ssl);
    SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
    mx_buf_clear(&c->out);
    mx_buf_clear(&c->body);
    ERR_clear_error();
}

/* Send what is queued, then read for up to |wait_ms|. Returns false at EOF. */
static bool cli_io(struct h2cli *c, int wait_ms)
{
    uint8_t buf[16384];
    assert_int_equal(nghttp2_session_send(c->ngh), 0);
    while (mx_buf_len(&c->out)) {
        int n = SSL_write(c->ssl, mx_buf_data(&c->out), (int)mx_buf_len(&c->out));
        if (n <= 0)
            return false;
        mx_buf_consume(&c->out, (size_t)n);
    }
    struct pollfd pfd = {c->fd, POLLIN, 0};
    if (SSL_pending(c->ssl) == 0 && poll(&pfd, 1, wait_ms) <= 0)
        return true;
    int n = SSL_read(c->ssl, buf, sizeof(buf));
    if (n <= 0)
        return false;
    assert_int_equal(nghttp2_session_mem_recv(c->ngh, buf, (size_t)n), n);
    return true;
}

struct upload {
    const char *p;
    size_t len;
    size_t off;
};

static ssize_t cli_upload(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                          nghttp2_data_source *src, void *ud)
{
    struct upload *u = src->ptr;
    size_t n = u->len - u->off;
    (void)s;
    (void)id;
    (void)ud;
    if (n > len)
        n = len;
    memcpy(buf, u->p + u->off, n);
    u->off += n;
    if (u->off == u->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* POST |body_json| to /mcp/sim in the world's MCP session. */
static void cli_post(struct h2cli *c, const struct world *w, struct upload *u,
                     const char *body_json)
{
#define NV(a, b) {(uint8_t *)(uintptr_t)(a), (uint8_t *)(uintptr_t)(b), strlen(a), strlen(b), 0}
    nghttp2_nv nv[] = {
        NV(":method", "POST"),
        NV(":scheme", "https"),
        NV(":authority", "127.0.0.1"),
        NV(":path", "/mcp/sim"),
        NV("content-type", "application/json"),
        NV("accept", "application/json, text/event-stream"),
        NV("mcp-session-id", w->session),
        NV("mcp-protocol-version", "2025-06-18"),
    };
#undef NV
    u->p = body_json;
    u->len = strlen(body_json);
    u->off = 0;
    nghttp2_data_provider prd = {.source.ptr = u, .read_callback = cli_upload};
    c->id = nghttp2_submit_request(c->ngh, NULL, nv, sizeof(nv) / sizeof(nv[0]), &prd, NULL);
    assert_true(c->id > 0);
    c->status = 0;
    c->closed = false;
    c->first_data_at = 0;
    mx_buf_reset(&c->body);
}

/* GET /health on a new stream; returns its id. */
static int32_t cli_get_health(struct h2cli *c)
{
#define NV(a, b) {(uint8_t *)(uintptr_t)(a), (uint8_t *)(uintptr_t)(b), strlen(a), strlen(b), 0}
    nghttp2_nv nv[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "127.0.0.1"),
                       NV(":path", "/health")};
#undef NV
    c->id = nghttp2_submit_request(c->ngh, NULL, nv, sizeof(nv) / sizeof(nv[0]), NULL, NULL);
    assert_true(c->id > 0);
    c->status = 0;
    c->closed = false;
    mx_buf_reset(&c->body);
    return c->id;
}

static bool cli_body_has(const struct h2cli *c, const char *s)
{
    return memmem(mx_buf_data(&c->body), mx_buf_len(&c->body), s, strlen(s)) != NULL;
}

/* Run the client until |s| is in the body or the stream closed, up to |ms|. */
static void cli_wait_body(struct h2cli *c, const char *s, int ms)
{
    double end = now_s() + ms / 1000.0;
    while (now_s() < end && !cli_body_has(c, s) && !c->closed)
        if (!cli_io(c, 50))
            break;
}

static void cli_wait_closed(struct h2cli *c, int ms)
{
    double end = now_s() + ms / 1000.0;
    while (now_s() < end && !c->closed)
        if (!cli_io(c, 50))
            break;
}

/* A tools/call of the sim's slow tool with a progress token: SSE. */
static char *slow_call(int id, int steps, int interval_ms)
{
    return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                        "\"name\":\"slow\",\"arguments\":{\"steps\":%d,\"interval_ms\":%d},"
                        "\"_meta\":{\"progressToken\":\"p%d\"}}}",
                        id, steps, interval_ms, id);
}

/* ---- tests ---- */

static void test_tls_h2_curl_http11_and_http2(void **state)
{
    struct world w;
    (void)state;
    start_world(&w, true, true);
    mcp_session(&w);
    char *url = gw_url(&w, "/mcp/sim");
    char sid[200];
    snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", w.session);
    const char *versions[] = {"--http1.1", "--http2"};
    const char *want[] = {"v=1.1", "v=2"};
    for (int i = 0; i < 2; i++) {
        char *out = NULL;
        const char *argv[] = {"curl",
                              "-sS",
                              "--noproxy",
                              "*",
                              versions[i],
                              "--cacert",
                              w.ca,
                              "-H",
                              "Content-Type: application/json",
                              "-H",
                              "Accept: application/json, text/event-stream",
                              "-H",
                              sid,
                              "-H",
                              "MCP-Protocol-Version: 2025-06-18",
                              "-d",
                              ADD_BODY,
                              "-w",
                              "\\nstatus=%{http_code} v=%{http_version}\\n",
                              url,
                              NULL};
        assert_int_equal(mx_it_run("curl", argv, NULL, RUN_TIMEOUT_MS, &out), 0);
        assert_non_null(strstr(out, "status=200"));
        assert_non_null(strstr(out, want[i]));
        assert_non_null(strstr(out, "\"text\":\"5\""));
        free(out);
    }
    free(url);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_untrusted_ca_fails(void **state)
{
    struct world w;
    char *out = NULL;
    (void)state;
    start_world(&w, true, true);
    char *url = gw_url(&w, "/health");
    /* A client that trusts only another CA (made the same way) refuses us. */
    char *other = certs_init("other-certs");
    char *other_ca = mx_xasprintf("%s/ca.pem", other);
    const char *argv[] = {"curl", "-sS", "--noproxy", "*", "--cacert", other_ca, url, NULL};
    assert_int_equal(mx_it_run("curl", argv, NULL, RUN_TIMEOUT_MS, &out), 60);
    free(out);
    /* And one with only the system store. */
    const char *argv2[] = {"curl", "-sS", "--noproxy", "*", "--http2", url, NULL};
    assert_int_equal(mx_it_run("curl", argv2, NULL, RUN_TIMEOUT_MS, &out), 60);
    free(out);
    /* The log tells the user what to do about it. */
    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "does not trust this certificate"));
    free(log);
    free(other);
    free(other_ca);
    free(url);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_sdk_client_smoke_and_progress(void **state)
{
    struct world w;
    json_t *out = NULL;
    (void)state;
    start_world(&w, true, true);
    char *url = gw_url(&w, "/mcp/sim");
    assert_int_equal(setenv("NODE_EXTRA_CA_CERTS", w.ca, 1), 0);
    assert_int_equal(mx_it_client(url, "smoke", "{\"message\":\"hello over tls\"}", NULL, &out), 0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    json_t *content = json_object_get(json_object_get(out, "echo"), "content");
    const char *text = json_string_value(json_object_get(json_array_get(content, 0), "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "hello over tls"));
    json_decref(out);
    assert_int_equal(mx_it_client(url, "progress",
                                  "{\"name\":\"slow\",\"arguments\":{\"steps\":4,"
                                  "\"interval_ms\":300}}",
                                  NULL, &out),
                     0);
    json_t *progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 4);
    double first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    double done = json_number_value(json_object_get(out, "result_t_ms"));
    assert_true(done - first >= 600.0);
    json_decref(out);
    unsetenv("NODE_EXTRA_CA_CERTS");
    free(url);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_nghttp_100_streams(void **state)
{
    struct world w;
    char *out = NULL;
    (void)state;
    start_world(&w, true, true);
    char *url = gw_url(&w, "/mcp/sim");
    char *data = mx_it_path("call.json");
    /* The same request on every stream: stateless (MCP 2026-07-28) ones, as
     * a 2025 session must not have two requests with one id in flight. */
    static const char body[] =
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"add\","
        "\"arguments\":{\"a\":2,\"b\":3},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    assert_int_equal(mx_it_write_file(data, body, strlen(body)), 0);
    /* One connection (nghttp never opens more), 100 streams at once. */
    const char *argv[] = {"nghttp", "-s",
                          "-m",     "100",
                          "-d",     data,
                          "-H",     "content-type: application/json",
                          "-H",     "accept: application/json, text/event-stream",
                          "-H",     "mcp-protocol-version: 2026-07-28",
                          "-H",     "mcp-method: tools/call",
                          "-H",     "mcp-name: add",
                          url,      NULL};
    assert_int_equal(mx_it_run("nghttp", argv, NULL, RUN_TIMEOUT_MS, &out), 0);
    assert_int_equal(count_of(out, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{"
                                   "\"type\":\"text\",\"text\":\"5\"}]"),
                     100);
    /* the statistics table: one row per stream, each with status 200 */
    assert_int_equal(count_of(out, " 200 "), 100);
    assert_null(strstr(out, "not processed"));
    free(out);
    free(data);
    free(url);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_h2load_no_errors(void **state)
{
    struct world w;
    char *out = NULL;
    (void)state;
    start_world(&w, true, true);
    mcp_session(&w);
    char *url = gw_url(&w, "/mcp/sim");
    char *data = mx_it_path("call.json");
    assert_int_equal(mx_it_write_file(data, ADD_BODY, strlen(ADD_BODY)), 0);
    char sid[200];
    snprintf(sid, sizeof(sid), "mcp-session-id: %s", w.session);
    const char *argv[] = {"h2load",
                          "-n",
                          "2000",
                          "-c",
                          "1",
                          "-m",
                          "100",
                          "-d",
                          data,
                          "-H",
                          "content-type: application/json",
                          "-H",
                          "accept: application/json, text/event-stream",
                          "-H",
                          sid,
                          "-H",
                          "mcp-protocol-version: 2025-06-18",
                          url,
                          NULL};
    assert_int_equal(mx_it_run("h2load", argv, NULL, RUN_TIMEOUT_MS, &out), 0);
    assert_non_null(strstr(out, "Application protocol: h2"));
    assert_non_null(strstr(out, "2000 succeeded, 0 failed, 0 errored, 0 timeout"));
    assert_non_null(strstr(out, "status codes: 2000 2xx"));
    free(out);
    free(data);
    free(url);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_sse_first_event_before_end(void **state)
{
    struct world w;
    struct h2cli c;
    struct upload u;
    (void)state;
    start_world(&w, true, true);
    mcp_session(&w);
    cli_connect(&c, w.port, w.ca);
    char *call = slow_call(21, 4, 400);
    cli_post(&c, &w, &u, call);
    cli_wait_closed(&c, 15000);
    assert_true(c.closed);
    assert_int_equal(c.error, NGHTTP2_NO_ERROR);
    assert_int_equal(c.status, 200);
    assert_true(cli_body_has(&c, "notifications/progress"));
    assert_true(cli_body_has(&c, "done after 4 steps"));
    /* The first event came as a DATA frame about three intervals before the end. */
    assert_true(c.first_data_at > 0);
    assert_true(c.closed_at - c.first_data_at >= 1.0);
    free(call);
    cli_free(&c);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_reset_stream_cancels_upstream(void **state)
{
    struct world w;
    struct h2cli c;
    struct upload u;
    (void)state;
    start_world(&w, true, true);
    mcp_session(&w);
    char *health = gw_url(&w, "/health");
    char *stats = mx_xasprintf("http://127.0.0.1:%d/__stats", w.sim_port);
    cli_connect(&c, w.port, w.ca);
    char *call = slow_call(31, 100, 100);
    cli_post(&c, &w, &u, call);
    cli_wait_body(&c, "notifications/progress", 10000);
    assert_true(cli_body_has(&c, "notifications/progress"));
    assert_false(c.closed);
    assert_int_equal(json_num(health, NULL, "inflight"), 1);
    assert_int_equal(json_num(stats, w.token, "streams"), 1);

    /* Reset the stream, keep the connection. */
    assert_int_equal(nghttp2_submit_rst_stream(c.ngh, NGHTTP2_FLAG_NONE, c.id, NGHTTP2_CANCEL), 0);
    assert_true(cli_io(&c, 0));
    long long inflight = -1, streams = -1;
    /* the stream was resumable: the client had MX_CALL_RESUME_GRACE_S to
     * come back with Last-Event-ID before the call was cancelled */
    double end = now_s() + MX_CALL_RESUME_GRACE_S + 5.0;
    while (now_s() < end) {
        inflight = json_num(health, NULL, "inflight");
        streams = json_num(stats, w.token, "streams");
        if (inflight == 0 && streams == 0)
            break;
        cli_io(&c, 50);
    }
    /* mcplex let go of the call once the client did not resume it, and the
     * upstream request ended with it: the upstream heard
     * notifications/cancelled (MCP 2025-06-18: a disconnect is not a
     * cancel) and ended its stream */
    assert_int_equal(inflight, 0);
    assert_int_equal(streams, 0);
    char *sim_log_path = mx_it_path("sim.log");
    char *sim_log = mx_it_read_file(sim_log_path, NULL);
    free(sim_log_path);
    assert_non_null(sim_log);
    assert_non_null(strstr(sim_log, "cancelled by the client after"));
    free(sim_log);

    /* The same connection carries the next call. */
    cli_post(&c, &w, &u, ADD_BODY);
    cli_wait_closed(&c, 10000);
    assert_int_equal(c.status, 200);
    assert_true(cli_body_has(&c, "\"text\":\"5\""));
    assert_false(c.goaway);
    free(call);
    free(stats);
    free(health);
    cli_free(&c);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_goaway_on_sigterm_finishes_stream(void **state)
{
    struct world w;
    struct h2cli c;
    struct upload u;
    (void)state;
    start_world(&w, true, true);
    mcp_session(&w);
    cli_connect(&c, w.port, w.ca);
    char *call = slow_call(41, 5, 200);
    cli_post(&c, &w, &u, call);
    cli_wait_body(&c, "notifications/progress", 10000);
    assert_false(c.closed);
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    cli_wait_closed(&c, 10000);
    /* GOAWAY came, and the stream in flight still ended with its result. */
    assert_true(c.goaway);
    assert_true(c.closed);
    assert_int_equal(c.error, NGHTTP2_NO_ERROR);
    assert_true(cli_body_has(&c, "done after 5 steps"));
    int st = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(st >= 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    free(call);
    cli_free(&c);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_default_certs_made_on_first_run(void **state)
{
    struct world w;
    char *out = NULL;
    (void)state;
    start_world(&w, true, false);
    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(strstr(log, "created a local CA"));
    free(log);
    char *url = gw_url(&w, "/health");
    const char *argv[] = {"curl", "-sS", "--noproxy", "*", "--http2", "--cacert", w.ca, url, NULL};
    assert_int_equal(mx_it_run("curl", argv, NULL, RUN_TIMEOUT_MS, &out), 0);
    assert_non_null(strstr(out, "\"status\":\"ok\""));
    free(out);
    /* A second start uses the same pair and says nothing about creating one. */
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(w.mcplex, 15000) >= 0);
    char *log2 = mx_it_path("mcplex-2.log");
    char *mcplex = bin("mcplex");
    const char *sargv[] = {mcplex, "serve", "-c", w.cfg, NULL};
    pid_t p2 = mx_it_spawn("mcplex-2", sargv, NULL, log2);
    assert_true(p2 > 0);
    assert_int_equal(mx_it_wait_http_status(url, 200, MX_IT_START_TIMEOUT_MS), 0);
    log = mx_it_read_file(log2, NULL);
    assert_null(strstr(log, "created a local CA"));
    free(log);
    free(log2);
    free(mcplex);
    free(url);
    world_free(&w);
    mx_it_pass();
}

static void test_tls_h2_plain_listener_h2c_prior_knowledge(void **state)
{
    struct world w;
    char *out = NULL;
    (void)state;
    start_world(&w, false, false);
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", w.port);
    const char *argv[] = {
        "curl", "-sS", "--noproxy", "*", "--http2-prior-knowledge", "-w", "\\nv=%{http_version}\\n",
        url,    NULL};
    assert_int_equal(mx_it_run("curl", argv, NULL, RUN_TIMEOUT_MS, &out), 0);
    assert_non_null(strstr(out, "\"status\":\"ok\""));
    assert_non_null(strstr(out, "v=2"));
    free(out);
    const char *argv1[] = {
        "curl", "-sS", "--noproxy", "*", "--http1.1", "-w", "\\nv=%{http_version}\\n", url, NULL};
    assert_int_equal(mx_it_run("curl", argv1, NULL, RUN_TIMEOUT_MS, &out), 0);
    assert_non_null(strstr(out, "v=1.1"));
    free(out);
    free(url);
    world_free(&w);
    mx_it_pass();
}

/* libcurl resets every stream once it has read the answer. Those resets
 * cost mcplex nothing and must not count as an attack: 1,300 calls on one
 * connection, each followed by its reset, all answered, no GOAWAY. */
static void test_tls_h2_resets_after_answers_are_fine(void **state)
{
    struct world w;
    struct h2cli c;
    (void)state;
    start_world(&w, true, true);
    cli_connect(&c, w.port, w.ca);
    for (int i = 0; i < 1300; i++) {
        int32_t id = cli_get_health(&c);
        cli_wait_closed(&c, 10000);
        if (c.status != 200 || c.goaway)
            fail_msg("call %d: status %d, goaway %d (error %u)", i, c.status, c.goaway,
                     c.goaway_error);
        assert_int_equal(
            nghttp2_submit_rst_stream(c.ngh, NGHTTP2_FLAG_NONE, id, NGHTTP2_STREAM_CLOSED), 0);
    }
    assert_true(cli_io(&c, 100));
    assert_false(c.goaway);
    cli_free(&c);
    world_free(&w);
    mx_it_pass();
}

/* HTTP/2 rapid reset (CVE-2023-44487): streams opened and reset at once,
 * faster than the limit, end the connection with ENHANCE_YOUR_CALM; the
 * next connection is served. */
static void test_tls_h2_rapid_reset_is_cut(void **state)
{
    struct world w;
    struct h2cli c;
    (void)state;
    start_world(&w, true, true);
    cli_connect(&c, w.port, w.ca);
    int sent = 0;
#define NV(a, b) {(uint8_t *)(uintptr_t)(a), (uint8_t *)(uintptr_t)(b), strlen(a), strlen(b), 0}
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", "127.0.0.1"),
                       NV(":path", "/mcp/sim"), NV("content-type", "application/json")};
#undef NV
    for (int batch = 0; batch < 60 && !c.goaway; batch++) {
        /* requests whose body never comes: open at mcplex until reset */
        int32_t ids[50];
        for (int k = 0; k < 50; k++) {
            ids[k] = nghttp2_submit_headers(c.ngh, NGHTTP2_FLAG_NONE, -1, NULL, nv,
                                            sizeof(nv) / sizeof(nv[0]), NULL);
            assert_true(ids[k] > 0);
        }
        if (!cli_io(&c, 0))
            break;
        for (int k = 0; k < 50; k++) {
            nghttp2_submit_rst_stream(c.ngh, NGHTTP2_FLAG_NONE, ids[k], NGHTTP2_CANCEL);
            sent++;
        }
        if (!cli_io(&c, 5))
            break;
    }
    double end = now_s() + 5.0;
    while (!c.goaway && now_s() < end)
        if (!cli_io(&c, 50))
            break;
    if (!c.goaway)
        fail_msg("no GOAWAY after %d streams reset at once", sent);
    assert_int_equal(c.goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_true(sent > 1000); /* the burst is allowed */
    cli_free(&c);
    char *health = gw_url(&w, "/health");
    assert_int_equal(mx_it_wait_http_status(health, 200, 5000), 0);
    free(health);
    world_free(&w);
    mx_it_pass();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tls_h2_curl_http11_and_http2, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_untrusted_ca_fails, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_sdk_client_smoke_and_progress, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_nghttp_100_streams, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_h2load_no_errors, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_sse_first_event_before_end, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_reset_stream_cancels_upstream, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_goaway_on_sigterm_finishes_stream, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_default_certs_made_on_first_run, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_resets_after_answers_are_fine, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_rapid_reset_is_cut, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tls_h2_plain_listener_h2c_prior_knowledge, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
