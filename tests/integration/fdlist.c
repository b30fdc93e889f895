/* SPDX-License-Identifier: MIT */
/*
 * it-fdlist OUT [PRINT]: a child for it_child_fds. Writes the file
 * descriptors it was started with to OUT, one "N TARGET" line each (its
 * own handle on /proc/self/fd left out), then prints PRINT and a newline
 * on stdout when given (a cmd: secret's value) and exits 0. OUT appears
 * whole (written beside it, then renamed).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char list[16384];
    size_t n = 0;
    if (argc < 2)
        return 2;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 1;
    int own = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end != '\0' || fd == own)
            continue;
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
        ssize_t tl = readlink(link, target, sizeof(target) - 1);
        target[tl > 0 ? tl : 0] = '\0';
        int w = snprintf(list + n, sizeof(list) - n, "%ld %s\n", fd, target);
        if (w < 0 || (size_t)w >= sizeof(list) - n)
            break;
        n += (size_t)w;
    }
    closedir(d);
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fwrite(list, 1, n, f) != n || fclose(f) != 0 || rename(tmp, argv[1]) != 0)
        return 1;
    if (argc > 2)
        printf("%s\n", argv[2]);
    return 0;
}
