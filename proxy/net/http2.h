/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 front end (nghttp2) on a connection: each stream becomes an
 * mx_req, so handlers cannot tell it from HTTP/1.1. The front end itself is
 * mx_http2_proto (conn.h); this header holds its limits, which tests use.
 *
 * Output per stream: mx_req_write() queues bytes for the stream's data
 * provider; above MX_H2_STREAM_OUT_HIGH it returns MX_EAGAIN, and on_drain
 * follows once the peer's flow-control window let the queue fall to
 * MX_H2_STREAM_OUT_LOW. A stream whose queue passes MX_H2_STREAM_OUT_CAP
 * (a producer ignoring MX_EAGAIN) is reset and its writer gets MX_ECLOSED.
 * Request bodies past max_body are answered 413; all request bodies held on
 * one connection together stay under MX_H2_CONN_BODY_CAP (503 past it).
 */
#ifndef MX_HTTP2_H
#define MX_HTTP2_H

#define MX_H2_STREAM_OUT_HIGH (128 * 1024)
#define MX_H2_STREAM_OUT_LOW  (32 * 1024)
#define MX_H2_STREAM_OUT_CAP  (4 * 1024 * 1024)
#define MX_H2_CONN_BODY_CAP   (64 * 1024 * 1024)
/* Resets of streams still in progress a client may send: a burst, then a
 * rate per second (the figures of nghttp2's own limit, which counts every
 * reset and so also cut off clients that reset each stream once read). */
#define MX_H2_RESET_BURST 1000.0
#define MX_H2_RESET_RATE  33.0

#endif
