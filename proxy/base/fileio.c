/* SPDX-License-Identifier: MIT */
/* File helpers: whole writes, private directories, files written through temp files. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "err.h"
#include "fileio.h"
#include "rand.h"

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

int mx_file_fail(const char *path, const char *what, struct mx_diag *diag)
{
    int e = errno;
    mx_diag_set(diag, path, 0, 0, "%s: %s", what, strerror(e));
    int rc = mx_err_from_errno(e);
    return rc == MX_EPERM || rc == MX_ENOTFOUND || rc == MX_EEXIST ? rc : MX_EIO;
}

int mx_dir_private(const char *dir, struct mx_diag *diag)
{
    struct stat st;
    char *p = mx_xstrdup(dir);
    int rc = 0;
    size_t len = strlen(p);

    for (size_t i = 1; i <= len && rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char saved = p[i];
        p[i] = '\0';
        if (stat(p, &st) != 0) {
            if (errno != ENOENT || (mkdir(p, 0700) != 0 && errno != EEXIST))
                rc = mx_file_fail(p, "cannot create directory", diag);
            else if (chmod(p, 0700) != 0)
                rc = mx_file_fail(p, "cannot set the mode of", diag);
        } else if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            rc = mx_file_fail(p, "cannot create directory", diag);
        }
        p[i] = saved;
    }
    if (rc == 0 && stat(p, &st) != 0) {
        rc = mx_file_fail(p, "cannot use directory", diag);
    } else if (rc == 0 && st.st_uid != geteuid()) {
        mx_diag_set(diag, p, 0, 0,
                    "directory is owned by uid %u, not by this user (uid %u); "
                    "choose a directory of your own",
                    (unsigned)st.st_uid, (unsigned)geteuid());
        rc = MX_EPERM;
    } else if (rc == 0 && (st.st_mode & (S_IWGRP | S_IWOTH))) {
        mx_diag_set(diag, p, 0, 0,
                    "directory is writable by group or others (mode %04o); "
                    "chmod 700 it or choose another",
                    (unsigned)(st.st_mode & 07777));
        rc = MX_EPERM;
    }
    free(p);
    return rc;
}

/* fsync the directory holding |path|, so a rename or link survives a crash. */
static int sync_parent(const char *path, struct mx_diag *diag)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash == NULL   ? mx_xstrdup(".")
                : slash == path ? mx_xstrdup("/")
                                : mx_xstrndup(path, (size_t)(slash - path));
    int rc = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = mx_file_fail(dir, "cannot sync directory", diag);
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

int mx_file_write(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                  struct mx_diag *diag)
{
    char hex[17];
    int rc = 0;
    bool replace = flags & MX_FILE_REPLACE, sync = flags & MX_FILE_SYNC;

    mx_rand_hex(hex, sizeof(hex));
    char *tmp = mx_xasprintf("%s.tmp-%s", path, hex);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc = mx_file_fail(tmp, "cannot create", diag);
        free(tmp);
        return rc;
    }
    if (fchmod(fd, mode) != 0 || mx_write_all(fd, data, len) != 0 || (sync && fsync(fd) != 0)) {
        rc = mx_file_fail(tmp, "cannot write", diag);
        close(fd);
        goto out;
    }
    if (close(fd) != 0) {
        rc = mx_file_fail(tmp, "cannot write", diag);
        goto out;
    }
    if (replace ? rename(tmp, path) != 0 : link(tmp, path) != 0) {
        rc = mx_file_fail(path, replace ? "cannot replace" : "cannot create", diag);
        goto out;
    }
    if (sync)
        rc = sync_parent(path, diag);
out:
    /* After a rename there is nothing left to remove; ENOENT is expected. */
    unlink(tmp);
    free(tmp);
    return rc;
}

int mx_file_save_private(const char *path, const void *data, size_t len, struct mx_diag *diag)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? mx_xstrndup(path, (size_t)(slash - path)) : mx_xstrdup(".");
    int rc = mx_dir_private(dir, diag);
    if (rc == 0)
        rc = mx_file_write(path, data, len, 0600, MX_FILE_REPLACE, diag);
    free(dir);
    return rc;
}
