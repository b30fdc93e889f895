/* SPDX-License-Identifier: MIT */
/*
 * The TLS listener over a socketpair, with an OpenSSL client as the peer and
 * a throwaway CA and localhost leaf made here (so this test does not depend
 * on certs/): the non-blocking handshake, ALPN choosing h2 or HTTP/1.1 (and
 * both served), TLS 1.3 by default, TLS 1.2 with modern ciphers only, TLS
 * 1.1 and weak ciphers refused, a client that trusts another CA refusing us,
 * a silent client timed out, plain HTTP on the TLS port refused, and bad
 * key/certificate files reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "buf.h"
#include "err.h"
#include "httpd.h"
#include "log.h"
#include "req_int.h"
#include "tls.h"

struct pki {
    char dir[256];
    char ca[300];
    char other_ca[300];
    char leaf[300];
    char leaf_key[300];
    char other_key[300];
};

static struct pki pki;

struct fx {
    struct ev_loop *loop;
    struct mx_httpd *srv;
    struct mx_tls *tls;
    int peer;
    SSL_CTX *cctx;
    SSL *ssl;
    int requests;
    int last_version;
};

/* ---- a throwaway PKI ---- */

static void add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    assert_non_null(ext);
    assert_int_equal(X509_add_ext(cert, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

/* A certificate for |key| named |cn|, signed by |issuer| (NULL: self). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key)
{
    static long serial = 1;
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    if (issuer == NULL) {
        add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
        add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
        add_ext(x, x, NID_subject_key_identifier, "hash");
    } else {
        add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE");
        add_ext(x, issuer, NID_key_usage, "critical,digitalSignature");
        add_ext(x, issuer, NID_ext_key_usage, "serverAuth");
        add_ext(x, issuer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
        add_ext(x, issuer, NID_authority_key_identifier, "keyid");
    }
    assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    return x;
}

static void write_cert(const char *path, X509 *x)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    fclose(f);
}

static void write_key(const char *path, EVP_PKEY *k)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
}

static int pki_setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(pki.dir, sizeof(pki.dir), "%s/mx-test-tls-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(pki.dir));
    snprintf(pki.ca, sizeof(pki.ca), "%s/ca.pem", pki.dir);
    snprintf(pki.other_ca, sizeof(pki.other_ca), "%s/other-ca.pem", pki.dir);
    snprintf(pki.leaf, sizeof(pki.leaf), "%s/localhost.pem", pki.dir);
    snprintf(pki.leaf_key, sizeof(pki.leaf_key), "%s/localhost.key", pki.dir);
    snprintf(pki.other_key, sizeof(pki.other_key), "%s/other.key", pki.dir);
    EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *leaf_key = EVP_EC_gen("P-256");
    EVP_PKEY *other_key = EVP_EC_gen("P-256");
    X509 *ca = make_cert(ca_key, "test CA", NULL, NULL);
    X509 *other = make_cert(other_key, "other CA", NULL, NULL);
    X509 *leaf = make_cert(leaf_key, "localhost", ca, ca_key);
    write_cert(pki.ca, ca);
    write_cert(pki.other_ca, other);
    write_cert(pki.leaf, leaf);
    write_key(pki.leaf_key, leaf_key);
    write_key(pki.other_key, other_key);
    X509_free(ca);
    X509_free(other);
    X509_free(leaf);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(leaf_key);
    EVP_PKEY_free(other_key);
    return 0;
}

static int pki_teardown(void **state)
{
    const char *files[] = {pki.ca, pki.other_ca, pki.leaf, pki.leaf_key, pki.other_key};
    (void)state;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        unlink(files[i]);
    rmdir(pki.dir);
    return 0;
}

/* ---- server ---- */

static void on_request(struct mx_req *req, void *data)
{
    struct fx *f = data;
    char out[512];
    struct mx_str m = mx_req_method(req), p = mx_req_path(req);
    f->requests++;
    f->last_version = mx_req_http_version(req);
    int n = snprintf(out, sizeof(out), "%.*s %.*s v=%d", (int)m.len, m.p, (int)p.len, p.p,
                     f->last_version);
    mx_req_respond(req, 200, NULL, 0, "text/plain", out, (size_t)n);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    int sv[2];
    char err[256];
    struct mx_httpd_opts o;
    f->loop = ev_loop_new(EVFLAG_AUTO);
    mx_httpd_opts_default(&o);
    o.header_timeout_s = 0.3;
    f->srv = mx_httpd_new(f->loop, &o, on_request, f);
    assert_int_equal(mx_tls_new(pki.leaf, pki.leaf_key, &f->tls, err, sizeof(err)), 0);
    mx_httpd_set_tls(f->srv, f->tls);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    mx_httpd_adopt(f->srv, sv[0], "test");
    f->peer = sv[1];
    f->cctx = SSL_CTX_new(TLS_client_method());
    assert_int_equal(SSL_CTX_load_verify_locations(f->cctx, pki.ca, NULL), 1);
    SSL_CTX_set_verify(f->cctx, SSL_VERIFY_PEER, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    SSL_free(f->ssl);
    SSL_CTX_free(f->cctx);
    if (f->peer >= 0)
        close(f->peer);
    mx_httpd_free(f->srv);
    mx_tls_free(f->tls);
    ev_loop_destroy(f->loop);
    ERR_clear_error();
    assert_int_equal(mx_req_live_cnt(), 0);
    free(f);
    return 0;
}

/* ---- client ---- */

static void client_new(struct fx *f, const unsigned char *alpn, unsigned alpn_len)
{
    char sni[] = "localhost"; /* the OpenSSL macro takes a non-const pointer */
    f->ssl = SSL_new(f->cctx);
    SSL_set_fd(f->ssl, f->peer);
    SSL_set_tlsext_host_name(f->ssl, sni);
    SSL_set1_host(f->ssl, "localhost");
    if (alpn)
        assert_int_equal(SSL_set_alpn_protos(f->ssl, alpn, alpn_len), 0);
}

/* Drive the client handshake with the server's loop; 1 done, 0 failed. */
static int handshake(struct fx *f)
{
    ev_tstamp end = ev_time() + 3;
    while (ev_time() < end) {
        ERR_clear_error();
        int rc = SSL_connect(f->ssl);
        if (rc == 1)
            return 1;
        int e = SSL_get_error(f->ssl, rc);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return 0;
        ev_run(f->loop, EVRUN_NOWAIT);
        usleep(500);
    }
    fail_msg("handshake neither finished nor failed");
    return 0;
}

static const char *alpn_of(struct fx *f)
{
    static char out[32];
    const unsigned char *p = NULL;
    unsigned len = 0;
    SSL_get0_alpn_selected(f->ssl, &p, &len);
    snprintf(out, sizeof(out), "%.*s", (int)len, p ? (const char *)p : "");
    return out;
}

/* HTTP/1.1 GET over the client's TLS; returns the response text (static). */
static const char *h1_get(struct fx *f, const char *path)
{
    static char buf[4096];
    char req[256];
    size_t got = 0;
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
    assert_int_equal(SSL_write(f->ssl, req, n), n);
    buf[0] = '\0';
    for (int i = 0; i < 4000 && !strstr(buf, " v="); i++) {
        ev_run(f->loop, EVRUN_NOWAIT);
        int r = SSL_read(f->ssl, buf + got, (int)(sizeof(buf) - 1 - got));
        if (r > 0) {
            got += (size_t)r;
            buf[got] = '\0';
        }
        usleep(500);
    }
    return buf;
}

struct h2c {
    struct mx_buf out;
    int status;
    char body[256];
    size_t body_len;
    bool closed;
};

static ssize_t h2c_send(nghttp2_session *s, const uint8_t *d, size_t len, int flags, void *ud)
{
    struct h2c *c = ud;
    (void)s;
    (void)flags;
    assert_int_equal(mx_buf_append(&c->out, d, len), 0);
    return (ssize_t)len;
}

static int h2c_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                      void *ud)
{
    struct h2c *c = ud;
    (void)s;
    (void)fr;
    (void)flags;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0 && valuelen == 3)
        c->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return 0;
}

static int h2c_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                    void *ud)
{
    struct h2c *c = ud;
    (void)s;
    (void)flags;
    (void)id;
    if (len > sizeof(c->body) - 1 - c->body_len)
        len = sizeof(c->body) - 1 - c->body_len;
    memcpy(c->body + c->body_len, d, len);
    c->body_len += len;
    c->body[c->body_len] = '\0';
    return 0;
}

static int h2c_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
    struct h2c *c = ud;
    (void)s;
    (void)id;
    (void)err;
    c->closed = true;
    return 0;
}

/* One HTTP/2 GET over the client's TLS with an nghttp2 client session. */
static void h2_get(struct fx *f, const char *path, struct h2c *c)
{
    nghttp2_session_callbacks *cbs;
    nghttp2_session *ngh;
    uint8_t buf[16384];
    memset(c, 0, sizeof(*c));
    mx_buf_init(&c->out, 1 << 20);
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, h2c_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, h2c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2c_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2c_close);
    assert_int_equal(nghttp2_session_client_new(&ngh, cbs, c), 0);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(ngh, NGHTTP2_FLAG_NONE, NULL, 0);
    nghttp2_nv nv[] = {
        {(uint8_t *)(uintptr_t) ":method", (uint8_t *)(uintptr_t) "GET", 7, 3, 0},
        {(uint8_t *)(uintptr_t) ":scheme", (uint8_t *)(uintptr_t) "https", 7, 5, 0},
        {(uint8_t *)(uintptr_t) ":authority", (uint8_t *)(uintptr_t) "localhost", 10, 9, 0},
        {(uint8_t *)(uintptr_t) ":path", (uint8_t *)(uintptr_t)path, 5, strlen(path), 0},
    };
    assert_true(nghttp2_submit_request(ngh, NULL, nv, 4, NULL, NULL) > 0);
    for (int i = 0; i < 4000 && !c->closed; i++) {
        assert_int_equal(nghttp2_session_send(ngh), 0);
        if (mx_buf_len(&c->out)) {
            int w = SSL_write(f->ssl, mx_buf_data(&c->out), (int)mx_buf_len(&c->out));
            if (w > 0)
                mx_buf_consume(&c->out, (size_t)w);
        }
        ev_run(f->loop, EVRUN_NOWAIT);
        int r = SSL_read(f->ssl, buf, sizeof(buf));
        if (r > 0)
            assert_int_equal(nghttp2_session_mem_recv(ngh, buf, (size_t)r), r);
        usleep(500);
    }
    nghttp2_session_del(ngh);
    mx_buf_clear(&c->out);
}

/* Wait for the server to close the socket; 1 when it did. */
static int server_closed(struct fx *f)
{
    char b[4096];
    for (int i = 0; i < 2000; i++) {
        ev_run(f->loop, EVRUN_NOWAIT);
        ssize_t n = read(f->peer, b, sizeof(b));
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return 1;
        usleep(500);
    }
    return 0;
}

/* ---- tests ---- */

static const unsigned char alpn_both[] = "\x02h2\x08http/1.1";
static const unsigned char alpn_h1[] = "\x08http/1.1";

static void test_tls_alpn_h2_serves_http2(void **state)
{
    struct fx *f = *state;
    struct h2c c;
    client_new(f, alpn_both, sizeof(alpn_both) - 1);
    assert_int_equal(handshake(f), 1);
    assert_string_equal(alpn_of(f), "h2");
    assert_int_equal(SSL_version(f->ssl), TLS1_3_VERSION);
    assert_int_equal(SSL_get_verify_result(f->ssl), X509_V_OK);
    h2_get(f, "/over-h2", &c);
    assert_true(c.closed);
    assert_int_equal(c.status, 200);
    assert_string_equal(c.body, "GET /over-h2 v=20");
}

static void test_tls_alpn_http11(void **state)
{
    struct fx *f = *state;
    client_new(f, alpn_h1, sizeof(alpn_h1) - 1);
    assert_int_equal(handshake(f), 1);
    assert_string_equal(alpn_of(f), "http/1.1");
    const char *resp = h1_get(f, "/one");
    assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(resp, "GET /one v=11"));
}

static void test_tls_no_alpn_is_http11(void **state)
{
    struct fx *f = *state;
    client_new(f, NULL, 0);
    assert_int_equal(handshake(f), 1);
    assert_string_equal(alpn_of(f), "");
    const char *resp = h1_get(f, "/plain-alpn");
    assert_non_null(strstr(resp, "GET /plain-alpn v=11"));
}

static void test_tls_tls12_modern_cipher_accepted(void **state)
{
    struct fx *f = *state;
    SSL_CTX_set_max_proto_version(f->cctx, TLS1_2_VERSION);
    assert_int_equal(SSL_CTX_set_cipher_list(f->cctx, "ECDHE-ECDSA-CHACHA20-POLY1305"), 1);
    client_new(f, alpn_both, sizeof(alpn_both) - 1);
    assert_int_equal(handshake(f), 1);
    assert_int_equal(SSL_version(f->ssl), TLS1_2_VERSION);
    assert_string_equal(SSL_get_cipher_name(f->ssl), "ECDHE-ECDSA-CHACHA20-POLY1305");
    assert_null(SSL_get_current_compression(f->ssl));
}

static void test_tls_tls12_weak_cipher_refused(void **state)
{
    struct fx *f = *state;
    SSL_CTX_set_max_proto_version(f->cctx, TLS1_2_VERSION);
    /* CBC with SHA-1 MACs: offered by old clients, refused by us. */
    assert_int_equal(SSL_CTX_set_cipher_list(f->cctx, "ECDHE-ECDSA-AES128-SHA:AES128-SHA"), 1);
    client_new(f, NULL, 0);
    assert_int_equal(handshake(f), 0);
    assert_int_equal(server_closed(f), 1);
    assert_int_equal(f->requests, 0);
}

static void test_tls_tls11_refused(void **state)
{
    struct fx *f = *state;
    /* Make the client willing to speak TLS 1.1 at all (OpenSSL 3 forbids it
     * by default); the server must still refuse it. */
    SSL_CTX_set_security_level(f->cctx, 0);
    SSL_CTX_set_min_proto_version(f->cctx, TLS1_1_VERSION);
    SSL_CTX_set_max_proto_version(f->cctx, TLS1_1_VERSION);
    assert_int_equal(SSL_CTX_set_cipher_list(f->cctx, "DEFAULT@SECLEVEL=0"), 1);
    client_new(f, NULL, 0);
    assert_int_equal(handshake(f), 0);
    assert_int_equal(server_closed(f), 1);
}

static void test_tls_client_with_other_ca_refuses(void **state)
{
    struct fx *f = *state;
    SSL_CTX_free(f->cctx);
    f->cctx = SSL_CTX_new(TLS_client_method());
    assert_int_equal(SSL_CTX_load_verify_locations(f->cctx, pki.other_ca, NULL), 1);
    SSL_CTX_set_verify(f->cctx, SSL_VERIFY_PEER, NULL);
    client_new(f, alpn_both, sizeof(alpn_both) - 1);
    assert_int_equal(handshake(f), 0);
    assert_int_not_equal(SSL_get_verify_result(f->ssl), X509_V_OK);
    assert_int_equal(server_closed(f), 1);
    assert_int_equal(f->requests, 0);
}

static void test_tls_wrong_hostname_refused(void **state)
{
    struct fx *f = *state;
    client_new(f, NULL, 0);
    SSL_set1_host(f->ssl, "example.com");
    assert_int_equal(handshake(f), 0);
    assert_int_equal(SSL_get_verify_result(f->ssl), X509_V_ERR_HOSTNAME_MISMATCH);
}

static void test_tls_silent_client_timed_out(void **state)
{
    struct fx *f = *state;
    /* Connected, never says hello: closed after the header timeout. */
    assert_int_equal(server_closed(f), 1);
    assert_int_equal(mx_httpd_conn_cnt(f->srv), 0);
}

/* Plain HTTP to the TLS port is answered in plain HTTP, as nginx does: 400,
 * why, Connection: close, then the close; the handler never sees it. */
static void test_tls_plain_http_on_tls_port_refused(void **state)
{
    struct fx *f = *state;
    const char *r = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    char got[4096];
    size_t len = 0;
    bool closed = false;
    assert_int_equal(write(f->peer, r, strlen(r)), (ssize_t)strlen(r));
    for (int i = 0; i < 2000 && !closed; i++) {
        ev_run(f->loop, EVRUN_NOWAIT);
        ssize_t n = read(f->peer, got + len, sizeof(got) - 1 - len);
        if (n > 0)
            len += (size_t)n;
        closed = n == 0 || (n < 0 && errno != EAGAIN) || len == sizeof(got) - 1;
        if (!closed)
            usleep(500);
    }
    got[len] = '\0';
    assert_true(closed);
    assert_string_equal(got, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                             "Content-Length: 110\r\nConnection: close\r\n\r\n"
                             "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                             "\"message\":\"plain HTTP sent to an HTTPS port: use https://\"}}");
    assert_int_equal(f->requests, 0);
}

static void test_tls_bad_files_reported(void **state)
{
    struct mx_tls *t = NULL;
    char err[512];
    (void)state;
    assert_int_equal(mx_tls_new("/nonexistent/cert.pem", pki.leaf_key, &t, err, sizeof(err)),
                     MX_EIO);
    assert_null(t);
    assert_non_null(strstr(err, "/nonexistent/cert.pem"));
    assert_int_equal(mx_tls_new(pki.leaf, pki.other_key, &t, err, sizeof(err)), MX_EINVAL);
    assert_null(t);
    assert_non_null(strstr(err, "does not match"));
    assert_int_equal(mx_tls_new(pki.leaf_key, pki.leaf_key, &t, err, sizeof(err)), MX_EIO);
    ERR_clear_error();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    mx_log_set_level(getenv("MX_TEST_DEBUG") ? MX_LOG_DEBUG : MX_LOG_WARN);
    if (getenv("MX_TEST_FILTER"))
        cmocka_set_test_filter(getenv("MX_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tls_alpn_h2_serves_http2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_alpn_http11, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_no_alpn_is_http11, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_tls12_modern_cipher_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_tls12_weak_cipher_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_tls11_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_client_with_other_ca_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_wrong_hostname_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_silent_client_timed_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_plain_http_on_tls_port_refused, setup, teardown),
        cmocka_unit_test(test_tls_bad_files_reported),
    };
    return cmocka_run_group_tests(tests, pki_setup, pki_teardown);
}
