/* SPDX-License-Identifier: MIT */
/*
 * What the process itself costs, as the standard process_* metrics report
 * it: CPU time, resident and virtual memory, open and allowed descriptors.
 * Linux: /proc/self, getrusage and getrlimit; a few system calls per read.
 */
#ifndef MX_PROCSTAT_H
#define MX_PROCSTAT_H

#include <stdint.h>

struct mx_procstat {
    double cpu_seconds;      /* user + system */
    uint64_t resident_bytes; /* 0: not known */
    uint64_t virtual_bytes;  /* 0: not known */
    uint64_t open_fds;       /* 0: not known */
    uint64_t max_fds;        /* the soft limit; 0: not known or unlimited */
};

/* Fill |out|; fields that cannot be read stay 0. Returns 0, or MX_EIO when
 * nothing at all could be read. */
int mx_procstat_read(struct mx_procstat *out);

#endif
