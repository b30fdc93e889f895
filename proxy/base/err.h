/* SPDX-License-Identifier: MIT */
/*
 * Error codes shared by every module. Functions return 0 or a negative
 * enum mx_err; errno is mapped once, where the syscall happens.
 */
#ifndef MX_ERR_H
#define MX_ERR_H

enum mx_err {
    MX_OK = 0,
    MX_EAGAIN = -1,     /* try again later; not an error */
    MX_ENOMEM = -2,     /* allocation refused (only where we do not abort) */
    MX_ELIMIT = -3,     /* a configured cap was reached */
    MX_EPROTO = -4,     /* peer violated the protocol */
    MX_ETIMEDOUT = -5,  /* a timer fired first */
    MX_EAUTH = -6,      /* credential refused */
    MX_EUPSTREAM = -7,  /* upstream failed */
    MX_EIO = -8,        /* system call failed */
    MX_EINVAL = -9,     /* bad argument or input */
    MX_ENOTFOUND = -10, /* no such name, file or entry */
    MX_EPERM = -11,     /* refused by policy (file mode, owner, origin) */
    MX_ECLOSED = -12,   /* the other side went away */
    MX_EEXIST = -13,    /* already exists */
    MX_ENOTTLS = -14,   /* plain text came where a TLS handshake was due */
};

/* A fixed English string for |err|; never NULL. */
const char *mx_strerror(int err);

/* Map a positive errno value to the closest mx_err. */
int mx_err_from_errno(int errnum);

#endif
