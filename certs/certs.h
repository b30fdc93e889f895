/* SPDX-License-Identifier: MIT */
/*
 * The local CA and the localhost leaf certificate: generation (ECDSA P-256),
 * loading, expiry checks and renewal. Files live in one directory (by default
 * <state_dir>/certs): ca.pem, ca.key, localhost.pem, localhost.key; keys are
 * 0600 and never overwritten silently.
 */
#ifndef MX_CERTS_H
#define MX_CERTS_H

#include <stdbool.h>
#include <time.h>

#include "diag.h"

/* `serve` renews a leaf with fewer days left than this. */
#define MX_CERTS_RENEW_DAYS 30

struct mx_certs_paths {
    char *dir;
    char *ca_cert;
    char *ca_key;
    char *leaf_cert;
    char *leaf_key;
};

/* Fill |p| for |dir| (strings owned by |p|; release with mx_certs_paths_clear). */
void mx_certs_paths_init(struct mx_certs_paths *p, const char *dir);
void mx_certs_paths_clear(struct mx_certs_paths *p);

/* "<|state_dir|>/certs", the default directory; caller frees. */
char *mx_certs_default_dir(const char *state_dir);

/*
 * Create the CA and the leaf in |p->dir| (made 0700 if missing). Refuses with
 * MX_EEXIST when any of the files exists, unless |renew| (then all four are
 * replaced: a new CA); the refusal names `--renew`, and says why a CA of the
 * old kind (IP-address name constraints) must be replaced. Returns 0 or a
 * negative mx_err with |diag| set: MX_EEXIST; MX_EPERM (an existing directory
 * owned by another user or writable by group or others, or a permission
 * error); MX_EIO; MX_EINVAL
 * (OpenSSL refused to make a key or certificate).
 */
int mx_certs_init(const struct mx_certs_paths *p, bool renew, struct mx_diag *diag);

/*
 * For `serve`: make sure a usable leaf exists. Missing CA and leaf: create
 * both (|*created| = true). Leaf expiring within |renew_days| (0..180), or
 * expired, or not chaining to the CA, or not matching its key: re-issue it
 * from the CA with a new key (|*renewed| = true); the CA is never replaced.
 * A CA of the old kind (IP-address name constraints) is still used, with a
 * warning in the log that says how to replace it. Holds a lock on the
 * directory meanwhile. Returns 0 or a negative mx_err
 * with |diag| set: MX_ENOTFOUND (only some of the four files exist);
 * MX_EINVAL (a file does not parse, the CA key does not match the CA, the CA
 * is expired or not yet valid, bad |renew_days|); MX_EPERM (a key open to
 * group or others or owned by another user, an unsafe directory); MX_EIO.
 */
int mx_certs_ensure(const struct mx_certs_paths *p, int renew_days, bool *created, bool *renewed,
                    struct mx_diag *diag);

#endif
