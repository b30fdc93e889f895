/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server: listening sockets and connections on the libev loop,
 * plain or TLS, speaking HTTP/1.1 (keep-alive, Content-Length and chunked
 * request bodies, limits) or HTTP/2 (ALPN "h2" on TLS, prior knowledge on
 * plain sockets), handing each complete request to one callback as a
 * struct mx_req (req.h) that looks the same for both. Used by the gateway
 * and by sandbox-sim.
 */
#ifndef MX_HTTPD_H
#define MX_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "req.h"

struct mx_httpd;
struct mx_tls;

typedef void (*mx_httpd_request_cb)(struct mx_req *req, void *data);

struct mx_httpd_opts {
    size_t max_header;            /* bytes of request line + headers; 431 above */
    size_t max_body;              /* bytes of request body; 413 above */
    size_t max_connections;       /* accepted at once; more are closed at accept */
    size_t max_per_client;        /* open from one peer address; 0: no cap; more closed at accept */
    double header_timeout_s;      /* head + body must arrive within this; 408 after */
    double idle_timeout_s;        /* keep-alive idle close */
    size_t max_requests_per_conn; /* 0: unlimited; then Connection: close / GOAWAY */
    size_t h2_max_streams;        /* SETTINGS_MAX_CONCURRENT_STREAMS */
};

/* Defaults: 64 KiB head, 4 MiB body, 1024 connections, 10 s, 120 s, 128 streams. */
void mx_httpd_opts_default(struct mx_httpd_opts *o);

/* Create a server; |on_request| is called for every complete request. */
struct mx_httpd *mx_httpd_new(struct ev_loop *loop, const struct mx_httpd_opts *opts,
                              mx_httpd_request_cb on_request, void *data);

/*
 * Serve every connection accepted or adopted from now on over TLS with
 * |tls| (borrowed; it must outlive the server). Without this call the
 * server speaks plain HTTP.
 */
void mx_httpd_set_tls(struct mx_httpd *s, struct mx_tls *tls);

/*
 * Bind and listen on |address| ("127.0.0.1:8443", "[::1]:0", "localhost:0").
 * Returns 0 and the bound port in |*port|, or MX_EINVAL (bad address) /
 * MX_EIO (bind failed; |err| gets the reason).
 */
int mx_httpd_listen(struct mx_httpd *s, const char *address, int *port, char *err, size_t errcap);

/*
 * Serve an already connected, non-blocking socket |fd| (takes ownership);
 * |peer| is the address text for logs. Used for socketpairs in tests.
 */
void mx_httpd_adopt(struct mx_httpd *s, int fd, const char *peer);

/*
 * Stop accepting. HTTP/1.1 connections finish their current request and
 * close; HTTP/2 connections get GOAWAY, finish their open streams and close.
 */
void mx_httpd_stop_accepting(struct mx_httpd *s);

/* Connections accepted (or adopted) since start. */
uint64_t mx_httpd_accepted_cnt(const struct mx_httpd *s);

/* Number of open connections. */
size_t mx_httpd_conn_cnt(const struct mx_httpd *s);

/* Connections closed at accept since start: over max_connections, and over
 * max_per_client. */
uint64_t mx_httpd_refused_cnt(const struct mx_httpd *s);
uint64_t mx_httpd_refused_per_client_cnt(const struct mx_httpd *s);

/* Close everything and free; accepts NULL. */
void mx_httpd_free(struct mx_httpd *s);

#endif
