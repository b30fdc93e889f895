/* SPDX-License-Identifier: MIT */
/*
 * httpd's private part: one accepted connection, shared by the server core (httpd.c) and the two
 * HTTP front ends (http1.c, http2.c); routing and the MCP layer never see it.
 * The core owns the socket, the transport, the TLS handshake, the watchers,
 * a capped input and output buffer and the close/reap lifecycle; the front
 * end chosen after the handshake (ALPN, or the HTTP/2 preface on plain
 * sockets) consumes input and queues output through the functions below.
 */
#ifndef MX_HTTPD_INT_H
#define MX_HTTPD_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

#include "buf.h"
#include "httpd.h"
#include "xprt.h"

#define MX_CONN_READ_CHUNK 16384
#define MX_CONN_OUT_HIGH   (256 * 1024)       /* above: producers are told to wait */
#define MX_CONN_OUT_LOW    (64 * 1024)        /* below: they are told to go on */
#define MX_CONN_OUT_CAP    (64 * 1024 * 1024) /* a producer ignoring the above: close */
#define MX_CONN_DIRECT_MIN (64 * 1024)        /* a write this large skips the buffer when it can */

/* Lingering close (mx_conn_linger_close): how long and how much of a peer's
 * unread upload is read and dropped after our answer, at most. */
#define MX_CONN_LINGER_S      5.0                 /* in all */
#define MX_CONN_LINGER_IDLE_S 2.0                 /* without a byte from the peer */
#define MX_CONN_LINGER_BYTES  (64u * 1024 * 1024) /* then close anyway */

enum mx_conn_state {
    MX_CONN_HANDSHAKE = 0, /* transport handshake (TLS) in progress */
    MX_CONN_SNIFF = 1,     /* plain socket: waiting for enough bytes to tell h2 from h1 */
    MX_CONN_OPEN = 2,      /* a front end is attached */
    MX_CONN_LINGER = 3,    /* answered and our side ended: dropping what the peer still sends */
    MX_CONN_CLOSED = 4,    /* closed, waiting for the reaper */
};

struct mx_conn;

/*
 * What a front end does on a connection. Every hook is called by the core
 * from a libev callback (never from inside another hook's call to the core),
 * except closed(), which runs inside mx_conn_close() wherever that is called.
 */
struct mx_conn_proto {
    const char *name;
    /* Attach: allocate state; c->in may already hold bytes. */
    void (*start)(struct mx_conn *c);
    /* New bytes were appended to c->in; consume what can be consumed. */
    void (*input)(struct mx_conn *c);
    /* Output went below MX_CONN_OUT_LOW after being above it, or emptied. */
    void (*drained)(struct mx_conn *c);
    /* The zero-delay timer asked for with mx_conn_kick() fired. */
    void (*kick)(struct mx_conn *c);
    /* c->timer fired. */
    void (*timeout)(struct mx_conn *c);
    /* The server stops: finish what is in flight, take nothing new. */
    void (*stop)(struct mx_conn *c);
    /* The connection is closing: tell the handlers of open requests
     * (unless they are inside one of their own calls). No I/O. */
    void (*closed)(struct mx_conn *c);
    /* Free the front end's state (from the reaper). */
    void (*free)(struct mx_conn *c);
};

struct mx_conn {
    struct mx_httpd *srv;
    struct ev_loop *loop;
    struct mx_conn *next; /* live list or reap list */
    struct mx_conn *prev;
    unsigned long id;
    char peer[64];
    struct mx_xprt *x;
    enum mx_conn_state state;
    ev_io io;
    ev_timer timer; /* the front end's: header, idle */
    ev_timer kick;  /* zero delay: work for the next loop turn */
    struct mx_buf in;
    struct mx_buf out;
    const struct mx_conn_proto *proto;
    void *proto_data;
    bool read_paused; /* the front end does not want input now */
    bool out_high;    /* output went above MX_CONN_OUT_HIGH since the last drained() */
    bool close_after; /* close once the output is written */
    bool eof;         /* the peer ended its side */
    bool linger;      /* mx_conn_linger_close(): linger once the output is written */
    bool not_tls;     /* plain HTTP came to a TLS listener: every answer is 400 */
    int in_call;      /* depth of handler calls into the front end */
};

const char *mx_conn_state_name(enum mx_conn_state st);

/* "127.0.0.1:8443" or "[::1]:8443": the address the peer connected to, or "". */
void mx_conn_local_name(const struct mx_conn *c, char *out, size_t cap);

/* Server-wide values a front end needs. */
const struct mx_httpd_opts *mx_conn_opts(const struct mx_conn *c);
void mx_conn_dispatch(struct mx_conn *c, struct mx_req *req);

/* Close now (idempotent): stop watchers, call proto->closed, queue for the reaper. */
void mx_conn_close(struct mx_conn *c);
/* Close once the queued output is written. */
void mx_conn_close_after(struct mx_conn *c);
/*
 * Close once the queued output is written, gracefully for a peer that may
 * still be sending (a refused upload): end our side (TLS close_notify, then
 * a TCP half-close) and read and drop what arrives until the peer closes or
 * the MX_CONN_LINGER_* bounds, so that closing with unread bytes does not
 * reset the connection and destroy the answer before the peer reads it
 * (RFC 9112 §9.6). The front end is told the connection closed (proto->closed)
 * when lingering starts and sees it closed from then on.
 */
void mx_conn_linger_close(struct mx_conn *c);
/* Closed, or lingering: the front end can do nothing more with it. */
bool mx_conn_is_closed(const struct mx_conn *c);

/*
 * The body of an answer a front end gives by itself, before any handler
 * (limits, timeouts, malformed requests): a JSON-RPC error with id null
 * (JSON-RPC 2.0 §5: the request could not be read), since MCP clients read
 * errors from the body. The message is |what|, or for a NULL |what| one
 * derived from |status| that names the [listen] key of a size limit.
 * Returns its length (at most |cap| - 1).
 */
size_t mx_conn_refusal_body(const struct mx_conn *c, int status, const char *what, char *buf,
                            size_t cap);

/*
 * Queue |len| bytes. Returns 0, or MX_ECLOSED when the connection is closed
 * or the output cap was passed (the connection is then closed).
 */
int mx_conn_write(struct mx_conn *c, const void *p, size_t len);
/* Write queued output before the loop next blocks (once per loop turn, so a
 * response's pieces leave in one write). */
void mx_conn_flush_soon(struct mx_conn *c);
/* Write queued output now, as far as the socket takes it; never calls the
 * front end. The connection may be closed on return (check mx_conn_is_closed). */
void mx_conn_flush(struct mx_conn *c);
static inline size_t mx_conn_out_len(const struct mx_conn *c)
{
    return mx_buf_len(&c->out);
}

/* Stop or resume reading (buffered input stays in c->in). Resuming reads
 * what the transport already holds on the next loop turn. */
void mx_conn_pause_read(struct mx_conn *c, bool paused);
/* Call proto->kick on the next loop turn. */
void mx_conn_kick(struct mx_conn *c);
/* (Re)arm c->timer for |seconds|; 0 or less stops it. */
void mx_conn_set_timer(struct mx_conn *c, double seconds);

extern const struct mx_conn_proto mx_http1_proto;
extern const struct mx_conn_proto mx_http2_proto;

#endif
