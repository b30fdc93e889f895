/* SPDX-License-Identifier: MIT */
/* Error strings and errno mapping. */
#include <errno.h>

#include "err.h"

const char *mx_strerror(int err)
{
    switch (err) {
    case MX_OK:
        return "success";
    case MX_EAGAIN:
        return "try again";
    case MX_ENOMEM:
        return "out of memory";
    case MX_ELIMIT:
        return "limit reached";
    case MX_EPROTO:
        return "protocol error";
    case MX_ETIMEDOUT:
        return "timed out";
    case MX_EAUTH:
        return "authentication failed";
    case MX_EUPSTREAM:
        return "upstream failed";
    case MX_EIO:
        return "input/output error";
    case MX_EINVAL:
        return "invalid input";
    case MX_ENOTFOUND:
        return "not found";
    case MX_EPERM:
        return "not permitted";
    case MX_ECLOSED:
        return "connection closed";
    case MX_EEXIST:
        return "already exists";
    case MX_ENOTTLS:
        return "plain text where TLS was expected";
    default:
        return "unknown error";
    }
}

int mx_err_from_errno(int errnum)
{
    switch (errnum) {
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case EINTR:
        return MX_EAGAIN;
    case ENOMEM:
        return MX_ENOMEM;
    case ENOENT:
        return MX_ENOTFOUND;
    case EACCES:
    case EPERM:
        return MX_EPERM;
    case EEXIST:
        return MX_EEXIST;
    case ETIMEDOUT:
        return MX_ETIMEDOUT;
    case EPIPE:
    case ECONNRESET:
        return MX_ECLOSED;
    case EINVAL:
        return MX_EINVAL;
    default:
        return MX_EIO;
    }
}
