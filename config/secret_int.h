/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared inside config/ (model, vault, secret, the commands): the
 * syntax of secret references and values, and reading a file that must be
 * private to the user. Not for the proxy, which sees only secret.h.
 */
#ifndef MX_SECRET_INT_H
#define MX_SECRET_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "secret.h"

/*
 * NULL when |len| bytes of |p| can be a secret value (non-empty, at most
 * MX_SECRET_MAX_LEN, no CR, LF or NUL), else a sentence saying why not.
 */
const char *mx_secret_value_check(const char *p, size_t len);

/* Secrets not yet freed; tests assert it returns to zero. */
size_t mx_secret_live_cnt(void);

/* [A-Za-z_][A-Za-z0-9_]*, the environment variable names we accept. */
bool mx_env_name_is_valid(const char *p, size_t len);

/*
 * Read at most |max| bytes of |path|, which must be a regular file owned by
 * the effective uid with no group or other permission bits. Returns 0 and
 * |*out| (|*out_len| bytes plus a NUL; wipe it with OPENSSL_cleanse before
 * free), or MX_ENOTFOUND, MX_EPERM, MX_ELIMIT, MX_EIO with a sentence about
 * |what| ("secret file", "vault") in |why|.
 */
int mx_private_file_read(const char *path, const char *what, size_t max, char **out,
                         size_t *out_len, char *why, size_t why_cap);

#endif
