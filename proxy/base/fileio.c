/* SPDX-License-Identifier: MIT */
/* File helpers. */
#include <errno.h>
#include <unistd.h>

#include "fileio.h"

int mx_write_all(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len) {
        ssize_t n = write(fd, c, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        c += n;
        len -= (size_t)n;
    }
    return 0;
}
