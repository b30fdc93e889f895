/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "err.h"
#include "procstat.h"

static void read_memory(struct mx_procstat *out)
{
    unsigned long long pages = 0, resident = 0;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "re");
    if (f == NULL)
        return;
    if (fscanf(f, "%llu %llu", &pages, &resident) == 2 && page > 0) {
        out->virtual_bytes = (uint64_t)pages * (uint64_t)page;
        out->resident_bytes = (uint64_t)resident * (uint64_t)page;
    }
    fclose(f);
}

/* Entries of /proc/self/fd, less the one the listing itself holds open. */
static void count_fds(struct mx_procstat *out)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    uint64_t n = 0;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.')
            n++;
    }
    closedir(d);
    out->open_fds = n ? n - 1 : 0;
}

int mx_procstat_read(struct mx_procstat *out)
{
    struct rusage ru;
    struct rlimit rl;
    memset(out, 0, sizeof(*out));
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        out->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        out->max_fds = (uint64_t)rl.rlim_cur;
    read_memory(out);
    count_fds(out);
    return out->resident_bytes || out->open_fds || out->cpu_seconds > 0.0 ? 0 : MX_EIO;
}
