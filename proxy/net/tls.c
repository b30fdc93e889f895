/* SPDX-License-Identifier: MIT */
/*
 * OpenSSL server context and the TLS transport. Every SSL call starts with a
 * clean error queue and ends by turning SSL_get_error() into an mx_err plus,
 * for MX_EAGAIN, the socket event the call waits for; reasons are kept per
 * transport for the connection's log line and the queue is cleared again.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "tls.h"

/* RFC 9113 §9.2.2 requires ephemeral key exchange and an AEAD for h2 over
 * TLS 1.2; we offer nothing else on either version. */
#define TLS12_CIPHERS "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL"
#define TLS13_SUITES  "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define TLS_GROUPS    "X25519:P-256:P-384"

/* ALPN wire format, in our order of preference (RFC 7301 §3.1). */
static const unsigned char alpn_prefs[] = "\x02h2\x08http/1.1";

struct mx_tls {
    SSL_CTX *ctx;
};

struct tls_xprt {
    struct mx_xprt base;
    SSL *ssl;
    unsigned rd_want; /* events the pending handshake/read waits for */
    unsigned wr_want; /* events the pending write waits for */
    bool broken;      /* a fatal error happened: no close_notify */
    bool sniffed;     /* the first byte was seen to start a TLS record */
    char err[256];
};

static const struct mx_xprt_ops tls_ops;

static const struct tls_xprt *cx(const struct mx_xprt *base)
{
    return (const struct tls_xprt *)(const void *)((const char *)base -
                                                   offsetof(struct tls_xprt, base));
}

/* Text of the oldest queued OpenSSL error, then an empty queue. */
static void take_error(char *out, size_t cap, const char *what)
{
    unsigned long e = ERR_get_error();
    char reason[128] = "";
    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    snprintf(out, cap, "%s%s%s", what, e ? ": " : "", reason);
    ERR_clear_error();
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    unsigned char *sel = NULL;
    unsigned char sel_len = 0;
    (void)ssl;
    (void)arg;
    if (SSL_select_next_proto(&sel, &sel_len, alpn_prefs, sizeof(alpn_prefs) - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK; /* no overlap: carry on without ALPN, HTTP/1.1 */
    *out = sel;
    *outlen = sel_len;
    return SSL_TLSEXT_ERR_OK;
}

int mx_tls_new(const char *cert_path, const char *key_path, struct mx_tls **out, char *err,
               size_t errcap)
{
    struct mx_tls *t = mx_xcalloc(1, sizeof(*t));
    char groups[] = TLS_GROUPS; /* the OpenSSL macro takes a non-const pointer */
    int rc = MX_EIO;

    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_server_method());
    if (t->ctx == NULL) {
        take_error(err, errcap, "cannot create the TLS context");
        goto fail;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(t->ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(t->ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                    SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
    /* HTTP frames its own messages, so a peer that drops the TCP
     * connection without close_notify (most clients) is an ordinary end. */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_set_cipher_list(t->ctx, TLS12_CIPHERS) != 1 ||
        SSL_CTX_set_ciphersuites(t->ctx, TLS13_SUITES) != 1 ||
        SSL_CTX_set1_groups_list(t->ctx, groups) != 1) {
        take_error(err, errcap, "cannot set the TLS ciphers");
        goto fail;
    }
    SSL_CTX_set_session_id_context(t->ctx, (const unsigned char *)"mcplex", 6);
    SSL_CTX_set_alpn_select_cb(t->ctx, alpn_select, NULL);
    if (SSL_CTX_use_certificate_chain_file(t->ctx, cert_path) != 1) {
        char why[160];
        take_error(why, sizeof(why), "not a PEM certificate chain");
        snprintf(err, errcap, "cannot load certificate %s (%s)", cert_path, why);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(t->ctx, key_path, SSL_FILETYPE_PEM) != 1) {
        char why[160];
        unsigned long e = ERR_peek_error();
        if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            snprintf(err, errcap, "private key %s does not match certificate %s", key_path,
                     cert_path);
            rc = MX_EINVAL;
            goto fail;
        }
        take_error(why, sizeof(why), "not a PEM private key");
        snprintf(err, errcap, "cannot load private key %s (%s)", key_path, why);
        goto fail;
    }
    if (SSL_CTX_check_private_key(t->ctx) != 1) {
        ERR_clear_error();
        snprintf(err, errcap, "private key %s does not match certificate %s", key_path, cert_path);
        rc = MX_EINVAL;
        goto fail;
    }
    *out = t;
    return 0;
fail:
    mx_tls_free(t);
    *out = NULL;
    return rc;
}

void mx_tls_free(struct mx_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

struct mx_xprt *mx_tls_xprt_new(void *ctx, int fd)
{
    struct mx_tls *t = ctx;
    struct tls_xprt *x = mx_xcalloc(1, sizeof(*x));
    x->base.ops = &tls_ops;
    x->base.fd = fd;
    x->rd_want = MX_XPRT_READ;
    x->wr_want = MX_XPRT_WRITE;
    ERR_clear_error();
    x->ssl = SSL_new(t->ctx);
    MX_ASSERT(x->ssl != NULL); /* fails only when out of memory */
    SSL_set_fd(x->ssl, fd);
    SSL_set_accept_state(x->ssl);
    return &x->base;
}

/*
 * Map the outcome |ret| of an SSL call on |x|. Returns MX_EAGAIN with
 * |*want| set, MX_ECLOSED for an orderly or abrupt end (0 for reads when
 * |eof_is_zero|), or MX_EPROTO / MX_EIO with the reason kept.
 */
static int map_ssl(struct tls_xprt *x, int ret, unsigned *want, bool eof_is_zero, const char *what)
{
    int e = SSL_get_error(x->ssl, ret);
    int saved = errno;
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *want = MX_XPRT_READ;
        return MX_EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        *want = MX_XPRT_WRITE;
        return MX_EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return eof_is_zero ? 0 : MX_ECLOSED;
    case SSL_ERROR_SYSCALL:
        x->broken = true;
        if (ERR_peek_error() == 0) {
            snprintf(x->err, sizeof(x->err), "%s: %s", what,
                     saved ? strerror(saved) : "connection closed");
            return saved == 0 && eof_is_zero ? 0 : MX_ECLOSED;
        }
        take_error(x->err, sizeof(x->err), what);
        return MX_EIO;
    default: {
        int r = ERR_GET_REASON(ERR_peek_error());
        bool distrust = r == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
                        r == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
                        r == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN;
        x->broken = true;
        take_error(x->err, sizeof(x->err), what);
        if (distrust) {
            size_t len = strlen(x->err);
            snprintf(x->err + len, sizeof(x->err) - len, "%s",
                     " (the client does not trust this certificate: see `mcplex certs show`)");
        }
        return MX_EPROTO;
    }
    }
}

/*
 * Whether the first byte the peer sent starts a TLS handshake record (RFC
 * 8446 §5.1: content type 22). An ASCII capital is an HTTP method: plain
 * HTTP sent to this port, which the caller answers in plain HTTP (as nginx
 * does) rather than resetting. Anything else goes to OpenSSL as before.
 * Peeked, so OpenSSL still reads every byte. Returns 0, MX_EAGAIN,
 * MX_ENOTTLS or MX_ECLOSED.
 */
static int sniff_record(struct tls_xprt *x)
{
    unsigned char b;
    ssize_t n = recv(x->base.fd, &b, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        x->rd_want = MX_XPRT_READ;
        return MX_EAGAIN;
    }
    if (n <= 0) {
        snprintf(x->err, sizeof(x->err), "TLS handshake failed: %s",
                 n == 0 ? "connection closed" : strerror(errno));
        x->broken = true;
        return MX_ECLOSED;
    }
    if (b >= 'A' && b <= 'Z') {
        snprintf(x->err, sizeof(x->err), "plain HTTP sent to the TLS port");
        x->broken = true;
        return MX_ENOTTLS;
    }
    x->sniffed = true;
    return 0;
}

static int tls_handshake(struct mx_xprt *base)
{
    struct tls_xprt *x = mx_container_of(base, struct tls_xprt, base);
    if (!x->sniffed) {
        int rc = sniff_record(x);
        if (rc)
            return rc;
    }
    ERR_clear_error();
    int ret = SSL_do_handshake(x->ssl);
    if (ret == 1)
        return 0;
    int rc = map_ssl(x, ret, &x->rd_want, false, "TLS handshake failed");
    return rc == 0 ? MX_ECLOSED : rc;
}

static ssize_t tls_read(struct mx_xprt *base, void *buf, size_t len)
{
    struct tls_xprt *x = mx_container_of(base, struct tls_xprt, base);
    size_t n = 0;
    ERR_clear_error();
    int ret = SSL_read_ex(x->ssl, buf, len, &n);
    if (ret == 1)
        return (ssize_t)n;
    return map_ssl(x, ret, &x->rd_want, true, "TLS read failed");
}

static ssize_t tls_write(struct mx_xprt *base, const void *buf, size_t len)
{
    struct tls_xprt *x = mx_container_of(base, struct tls_xprt, base);
    size_t n = 0;
    ERR_clear_error();
    int ret = SSL_write_ex(x->ssl, buf, len, &n);
    if (ret == 1)
        return (ssize_t)n;
    int rc = map_ssl(x, ret, &x->wr_want, false, "TLS write failed");
    return rc == 0 ? MX_ECLOSED : rc;
}

static unsigned tls_wants(const struct mx_xprt *base, unsigned op)
{
    const struct tls_xprt *x = cx(base);
    return op == MX_XPRT_WRITE ? x->wr_want : x->rd_want;
}

static const char *tls_alpn(const struct mx_xprt *base)
{
    const struct tls_xprt *x = cx(base);
    const unsigned char *p = NULL;
    unsigned int len = 0;
    SSL_get0_alpn_selected(x->ssl, &p, &len);
    if (len == 2 && memcmp(p, "h2", 2) == 0)
        return "h2";
    return "http/1.1"; /* selected, or no ALPN at all (RFC 7301: HTTP/1.1 then) */
}

static const char *tls_error(const struct mx_xprt *base)
{
    const struct tls_xprt *x = cx(base);
    return x->err;
}

static void tls_shutdown(struct mx_xprt *base)
{
    struct tls_xprt *x = mx_container_of(base, struct tls_xprt, base);
    if (x->broken || x->base.fd < 0 || !SSL_is_init_finished(x->ssl))
        return;
    /* One attempt to send close_notify; we do not wait for the peer's. */
    ERR_clear_error();
    SSL_shutdown(x->ssl);
    ERR_clear_error();
    shutdown(x->base.fd, SHUT_WR);
}

static void tls_close(struct mx_xprt *base)
{
    if (base->fd >= 0)
        close(base->fd);
    base->fd = -1;
}

static void tls_free(struct mx_xprt *base)
{
    if (base == NULL)
        return;
    struct tls_xprt *x = mx_container_of(base, struct tls_xprt, base);
    tls_close(base);
    SSL_free(x->ssl);
    free(x);
}

static const struct mx_xprt_ops tls_ops = {
    .name = "tls",
    .holds_input = true,
    .handshake = tls_handshake,
    .read = tls_read,
    .write = tls_write,
    .wants = tls_wants,
    .alpn = tls_alpn,
    .error = tls_error,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .free = tls_free,
};

const char *mx_tls_xprt_version(const struct mx_xprt *base)
{
    if (base == NULL || base->ops != &tls_ops || !SSL_is_init_finished(cx(base)->ssl))
        return "";
    return SSL_get_version(cx(base)->ssl);
}
