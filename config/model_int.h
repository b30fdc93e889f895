/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared inside config/ (model, the check command and tests): URL
 * checks and resolving one secret reference with a diagnostic that points
 * at where the reference sits in the config file.
 */
#ifndef MX_MODEL_INT_H
#define MX_MODEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "str.h"

/* |env_idx| value that selects a server's "secret" rather than an env entry. */
#define MX_CONFIG_REF_SECRET SIZE_MAX

/* Configs not yet freed; tests assert it returns to zero. */
size_t mx_config_live_cnt(void);

/*
 * NULL when |url| is an http:// or https:// URL we accept (host present, no
 * user:password@, no #fragment, no spaces or control characters), else a
 * sentence saying why not. On success |host|, if not NULL, is the host part
 * (without brackets for IPv6) as a slice of |url|.
 */
const char *mx_url_check(const char *url, struct mx_str *host);

/*
 * Resolve one reference of |cfg|: the client token when |srv| is NULL, else
 * |srv|'s secret when |env_idx| is MX_CONFIG_REF_SECRET, else its env entry
 * |env_idx|. Returns 0 and |*out| (NULL when that slot holds no reference),
 * or the errors of mx_secret_resolve with |diag| at the file, line and column
 * of the reference and the message of mx_secret_resolve (which names the
 * reference, never the value).
 */
int mx_config_resolve_ref(const struct mx_config *cfg, const struct mx_server_cfg *srv,
                          size_t env_idx, struct mx_secret **out, struct mx_diag *diag);

#endif
