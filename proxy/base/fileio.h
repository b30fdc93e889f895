/* SPDX-License-Identifier: MIT */
/* Small file helpers shared by the vault, the certificate store and others. */
#ifndef MX_FILEIO_H
#define MX_FILEIO_H

#include <stddef.h>

/* Write all |len| bytes of |p| to |fd|, retrying on EINTR and short writes.
 * Returns 0, or -1 with errno set. */
int mx_write_all(int fd, const void *p, size_t len);

#endif
