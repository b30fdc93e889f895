/* SPDX-License-Identifier: MIT */
/*
 * Small file helpers shared by the vault, the certificate store, the
 * catalogue and others: whole writes, private directories, and files written
 * through a temp file so no reader sees half of one and no planted name is
 * followed.
 */
#ifndef MX_FILEIO_H
#define MX_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

#include "diag.h"

/* Write all |len| bytes of |p| to |fd|, retrying on EINTR and short writes.
 * Returns 0, or -1 with errno set. */
int mx_write_all(int fd, const void *p, size_t len);

/*
 * Set |diag| to "|what|: <strerror(errno)>" about |path| and map errno:
 * returns MX_EPERM, MX_ENOTFOUND, MX_EEXIST, or MX_EIO for anything else.
 */
int mx_file_fail(const char *path, const char *what, struct mx_diag *diag);

/*
 * Make sure |dir| is a directory only this user can change: mkdir -p, each
 * directory it creates made exactly 0700 (a umask may only take bits away);
 * then |dir| itself (created or found) must be owned by the effective user
 * and not writable by group or others, since whoever can write to it can
 * swap or plant the files in it. Returns 0, or MX_EPERM (|dir| belongs to
 * another user or is group/world-writable, or a permission error), MX_EIO
 * (a component is not a directory, another error) with |diag| naming it.
 */
int mx_dir_private(const char *dir, struct mx_diag *diag);

/* Flags of mx_file_write(). */
#define MX_FILE_REPLACE 0x1u /* an existing |path| is replaced (else: MX_EEXIST, untouched) */
#define MX_FILE_SYNC    0x2u /* fsync the file and its directory before returning */

/*
 * Write |len| bytes of |data| to |path| with mode |mode|: into a temp file of
 * a random name in the same directory, created with O_EXCL|O_NOFOLLOW (so a
 * symlink or file planted under any name is never followed or truncated) as
 * 0600, set to |mode|, then renamed over |path| (MX_FILE_REPLACE) or linked
 * to it (which fails with EEXIST instead of clobbering, closing the gap
 * between a check and the write). The temp file never outlives the call.
 * Returns 0, MX_EEXIST, MX_EPERM or MX_EIO with |diag| set.
 */
int mx_file_write(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                  struct mx_diag *diag);

/*
 * Replace |path| with |len| bytes of |data|, mode 0600, in its directory
 * made private first (mx_dir_private, then mx_file_write with
 * MX_FILE_REPLACE): how mcplex keeps its own state files. Returns as they do.
 */
int mx_file_save_private(const char *path, const void *data, size_t len, struct mx_diag *diag);

#endif
