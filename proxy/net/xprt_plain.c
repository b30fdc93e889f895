/* SPDX-License-Identifier: MIT */
/*
 * The plain-socket transport: read/send on a non-blocking socket, errno
 * mapped to mx_err here. No handshake and no ALPN: on a plain listener the
 * first bytes decide between HTTP/1.1 and HTTP/2 with prior knowledge.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "xprt.h"

static int map_errno(int e)
{
    if (e == EAGAIN || e == EWOULDBLOCK)
        return MX_EAGAIN;
    if (e == ECONNRESET || e == EPIPE || e == ENOTCONN || e == ESHUTDOWN)
        return MX_ECLOSED;
    return MX_EIO;
}

static int plain_handshake(struct mx_xprt *x)
{
    (void)x;
    return 0;
}

static ssize_t plain_read(struct mx_xprt *x, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = read(x->fd, buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return map_errno(errno);
    }
}

static ssize_t plain_write(struct mx_xprt *x, const void *buf, size_t len)
{
    for (;;) {
        /* MSG_NOSIGNAL: a peer that left must not kill us with SIGPIPE. */
        ssize_t n = send(x->fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(x->fd, buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return map_errno(errno);
    }
}

static unsigned plain_wants(const struct mx_xprt *x, unsigned op)
{
    (void)x;
    return op;
}

static const char *plain_alpn(const struct mx_xprt *x)
{
    (void)x;
    return NULL;
}

static const char *plain_error(const struct mx_xprt *x)
{
    (void)x;
    return "";
}

static void plain_shutdown(struct mx_xprt *x)
{
    if (x->fd >= 0)
        shutdown(x->fd, SHUT_WR);
}

ssize_t mx_xprt_discard(struct mx_xprt *x, size_t len)
{
    char buf[16384];
    /* x->fd is the socket under any transport. */
    return plain_read(x, buf, len < sizeof(buf) ? len : sizeof(buf));
}

static void plain_close(struct mx_xprt *x)
{
    if (x->fd >= 0)
        close(x->fd);
    x->fd = -1;
}

static void plain_free(struct mx_xprt *x)
{
    if (x == NULL)
        return;
    plain_close(x);
    free(x);
}

static const struct mx_xprt_ops plain_ops = {
    .name = "tcp",
    .handshake = plain_handshake,
    .read = plain_read,
    .write = plain_write,
    .wants = plain_wants,
    .alpn = plain_alpn,
    .error = plain_error,
    .shutdown = plain_shutdown,
    .close = plain_close,
    .free = plain_free,
};

struct mx_xprt *mx_xprt_plain_new(void *ctx, int fd)
{
    struct mx_xprt *x = mx_xcalloc(1, sizeof(*x));
    (void)ctx;
    x->ops = &plain_ops;
    x->fd = fd;
    return x;
}
