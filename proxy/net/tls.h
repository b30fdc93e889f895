/* SPDX-License-Identifier: MIT */
/*
 * TLS for the listener (OpenSSL): the server context (TLS 1.2 and 1.3 only,
 * ECDHE with AES-GCM or ChaCha20-Poly1305, no compression, no
 * renegotiation, ALPN "h2" then "http/1.1") and a transport over SSL
 * (xprt.h) with a non-blocking handshake. This is the only module that sees
 * SSL errors; it turns WANT_READ/WANT_WRITE into the events a transport
 * operation waits for. It does not make or renew certificates (certs/ does).
 */
#ifndef MX_TLS_H
#define MX_TLS_H

#include <stddef.h>

#include "xprt.h"

struct mx_tls;

/*
 * A server context serving the PEM certificate chain at |cert_path| with
 * the private key at |key_path| (both read now, at start). Returns 0 and
 * |*out| (free with mx_tls_free), or MX_EIO (a file cannot be read or is not
 * PEM) / MX_EINVAL (the key does not match the certificate) with the reason
 * in |err|.
 */
int mx_tls_new(const char *cert_path, const char *key_path, struct mx_tls **out, char *err,
               size_t errcap);

/* Accepts NULL. Transports made from |t| keep it alive until they are freed. */
void mx_tls_free(struct mx_tls *t);

/*
 * An mx_xprt_new_cb: a server-side TLS transport over the connected
 * non-blocking socket |fd| (takes ownership), |ctx| being a struct mx_tls.
 * The handshake runs through the transport's handshake op.
 */
struct mx_xprt *mx_tls_xprt_new(void *ctx, int fd);

/* Protocol version of an established TLS transport ("TLSv1.3"), for logs
 * and tests; "" for a transport that is not TLS or not established. */
const char *mx_tls_xprt_version(const struct mx_xprt *x);

#endif
