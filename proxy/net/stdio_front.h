/* SPDX-License-Identifier: MIT */
/*
 * The merged /mcp endpoint over stdio (MCP 2025-06-18, Transports, stdio):
 * newline-delimited JSON-RPC messages read from one descriptor and written
 * to another, for clients that only launch commands. Each message the
 * client sends becomes a request to the same code that serves POST /mcp
 * (the handler given at creation) through a protocol front end of its own (req_int.h), as http1.c
 * and http2.c are; the answers, JSON or SSE, go back out as lines. After
 * initialize a GET stream is opened on the session, so requests and
 * notifications from upstreams (sampling, elicitation, roots, list_changed,
 * logging) reach the client too. At the end the session is deleted, as a
 * client's DELETE /mcp would.
 *
 * The front end owns its requests and its output buffer; it does not own
 * the descriptors (the caller closes them) or the aggregate.
 */
#ifndef MX_STDIO_FRONT_H
#define MX_STDIO_FRONT_H

#include <stddef.h>

#include <ev.h>

#include "req.h"

struct mx_stdio_front;

typedef void (*mx_stdio_front_done_cb)(struct mx_stdio_front *f, void *data);

struct mx_stdio_front_opts {
    int in_fd;       /* messages from the client; made non-blocking */
    int out_fd;      /* messages to the client, nothing else; made non-blocking */
    size_t max_line; /* longest message taken from the client, newline excluded */
    double drain_s;  /* at the end, how long requests in flight may take to finish */
};

/*
 * Serve the client on |o|'s descriptors: each request made from its
 * messages goes to |serve| with |serve_data|, which must outlive the front
 * end. |done| runs once, from the loop, when the front end has ended
 * (end of input, mx_stdio_front_close(), or the output descriptor failed):
 * the session is deleted and every byte for the client is written or given
 * up on. It never runs inside a call into this module.
 */
struct mx_stdio_front *mx_stdio_front_new(struct ev_loop *loop, mx_req_cb serve, void *serve_data,
                                          const struct mx_stdio_front_opts *o,
                                          mx_stdio_front_done_cb done, void *data);

/*
 * End as at end of input: stop reading, let requests in flight finish (at
 * most |o->drain_s|), delete the session, write what is left. Called again
 * while requests are still finishing, it stops waiting for them.
 */
void mx_stdio_front_close(struct mx_stdio_front *f);

/* Tell every request still open that its client is gone, free them, and put
 * the descriptors' flags back; accepts NULL. Call before the aggregate is
 * freed. */
void mx_stdio_front_free(struct mx_stdio_front *f);

#endif
