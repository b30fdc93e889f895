/* SPDX-License-Identifier: MIT */
/*
 * The vault: one file of named secrets that only its owner can read. This
 * module reads, lists and rewrites it; secret_ref.c turns "vault:NAME"
 * references into values through mx_vault_get().
 *
 * File format, version 1: UTF-8 text, one entry per line.
 *
 *     # mcplex vault v1
 *     files=c2VjcmV0LXZhbHVl
 *
 * An entry is NAME=VALUE where NAME matches [A-Za-z0-9_.-]{1,64} and VALUE
 * is the secret in standard base64 with padding (RFC 4648 §4), so any bytes
 * survive and a glance at the file does not show a token in clear. Blank
 * lines and lines starting with '#' are ignored; any other line, a duplicate
 * name or bad base64 makes the whole file invalid. A rewrite keeps the
 * entries in order and drops comments.
 *
 * The file must be a regular file owned by the effective uid with mode 0600
 * (no group or other bits); anything else is refused, never repaired. Writes
 * build the new file under a random name in the same directory (O_EXCL,
 * 0600), fsync it, rename it over the old one and fsync the directory, while
 * holding flock() on the directory so two writers cannot lose an update. A
 * missing parent directory is created with mode 0700.
 */
#ifndef MX_VAULT_H
#define MX_VAULT_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "secret.h"

#define MX_VAULT_NAME_MAX 64
#define MX_VAULT_MAX_FILE (1024 * 1024)

/* $XDG_CONFIG_HOME/mcplex/vault, else ~/.config/mcplex/vault; caller frees. */
char *mx_vault_default_path(void);

/* True when |name| matches [A-Za-z0-9_.-]{1,64}. */
bool mx_vault_name_is_valid(const char *name);

/*
 * Look |name| up in the vault at |path|. Returns 0 and |*out| (free with
 * mx_secret_free), or MX_EINVAL (bad name, malformed file, unusable value),
 * MX_ENOTFOUND (no file, no entry), MX_EPERM (mode or owner), MX_ELIMIT,
 * MX_EIO. |diag| names the vault file (and line for a malformed entry),
 * never a value.
 */
int mx_vault_get(const char *path, const char *name, struct mx_secret **out, struct mx_diag *diag);

/*
 * The names in the vault at |path|, in file order. A missing file is an empty
 * vault. Returns 0 and |*names| (|*cnt| strings; free with
 * mx_vault_names_free), or the errors of mx_vault_get.
 */
int mx_vault_list(const char *path, char ***names, size_t *cnt, struct mx_diag *diag);

/* Frees what mx_vault_list returned; accepts NULL. */
void mx_vault_names_free(char **names, size_t cnt);

/*
 * Store |len| bytes of |value| under |name|, replacing an entry of that name,
 * creating the file (and its directory) when missing. The value must pass the
 * secret rules (non-empty, no CR, LF or NUL). Returns 0, MX_EINVAL, MX_EPERM,
 * MX_ELIMIT or MX_EIO.
 */
int mx_vault_set(const char *path, const char *name, const char *value, size_t len,
                 struct mx_diag *diag);

/* Remove |name|. Returns 0, MX_ENOTFOUND (no file or no such entry), or as mx_vault_set. */
int mx_vault_remove(const char *path, const char *name, struct mx_diag *diag);

#endif
