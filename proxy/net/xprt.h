/* SPDX-License-Identifier: MIT */
/*
 * The byte transport under a connection: plain sockets (xprt_plain.c) and
 * TLS (tls.c) behind one ops table, so the HTTP code never asks which one
 * it has. A transport moves bytes and says which socket event an operation
 * that returned MX_EAGAIN waits for (TLS may need to write to read); it
 * knows nothing of HTTP beyond reporting the ALPN result.
 */
#ifndef MX_XPRT_H
#define MX_XPRT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Socket events, as bits. */
enum mx_xprt_event {
    MX_XPRT_READ = 1,
    MX_XPRT_WRITE = 2,
};

struct mx_xprt;

struct mx_xprt_ops {
    const char *name;
    /* Read may leave bytes in the transport that the socket no longer
     * signals (TLS records decrypted ahead): read until MX_EAGAIN. */
    bool holds_input;
    /*
     * Advance the handshake (plain: nothing to do). Returns 0 when done,
     * MX_EAGAIN (then wait for the events wants(x, MX_XPRT_READ) names),
     * MX_ENOTTLS when the peer sent plain text instead (nothing of it was
     * read: the socket may be handed to a plain transport to answer it), or
     * MX_EPROTO / MX_ECLOSED / MX_EIO when the connection is unusable.
     */
    int (*handshake)(struct mx_xprt *x);
    /*
     * Read up to |len| bytes. Returns the count (> 0), 0 at the peer's
     * orderly end, MX_EAGAIN, or MX_ECLOSED / MX_EPROTO / MX_EIO.
     */
    ssize_t (*read)(struct mx_xprt *x, void *buf, size_t len);
    /*
     * Write up to |len| (> 0) bytes. Returns the count written (> 0),
     * MX_EAGAIN, or MX_ECLOSED / MX_EPROTO / MX_EIO. After MX_EAGAIN the next
     * call must offer at least the same bytes again (TLS record retry).
     */
    ssize_t (*write)(struct mx_xprt *x, const void *buf, size_t len);
    /*
     * The socket events (MX_XPRT_READ / MX_XPRT_WRITE bits) that the last
     * |op| (MX_XPRT_READ for handshake and read, MX_XPRT_WRITE for write)
     * that returned MX_EAGAIN waits for.
     */
    unsigned (*wants)(const struct mx_xprt *x, unsigned op);
    /*
     * The protocol agreed during the handshake: "h2" or "http/1.1", or NULL
     * when the transport has no negotiation (then the bytes decide).
     */
    const char *(*alpn)(const struct mx_xprt *x);
    /* A short reason for the last failure, for logs ("" when none). */
    const char *(*error)(const struct mx_xprt *x);
    /* Best-effort orderly end of our sending side (TLS close_notify, then
     * a TCP half-close); reading may go on. Never blocks. */
    void (*shutdown)(struct mx_xprt *x);
    /* Close the socket; the object stays until free. Idempotent. */
    void (*close)(struct mx_xprt *x);
    /* Free the transport (closing first if needed); accepts NULL. */
    void (*free)(struct mx_xprt *x);
};

/* The common head of every transport. */
struct mx_xprt {
    const struct mx_xprt_ops *ops;
    int fd; /* -1 once closed */
};

/* Makes a transport over a connected non-blocking socket |fd| (takes
 * ownership of |fd|). |ctx| is the factory's own context. */
typedef struct mx_xprt *(*mx_xprt_new_cb)(void *ctx, int fd);

/*
 * Read and drop up to |len| bytes below any TLS (after shutdown, when only
 * the peer's unread upload is left). Returns the count (> 0), 0 at the
 * peer's end, MX_EAGAIN, or MX_ECLOSED / MX_EIO.
 */
ssize_t mx_xprt_discard(struct mx_xprt *x, size_t len);

/* A plain-socket transport; |ctx| is unused. Never NULL (aborts on OOM). */
struct mx_xprt *mx_xprt_plain_new(void *ctx, int fd);

#endif
