/* SPDX-License-Identifier: MIT */
/*
 * Internals of the certs module, shared by ca.c, store.c, cmd_certs.c and the
 * unit tests: key and certificate construction with chosen names and
 * validity windows, PEM file reading and writing, and the check a leaf must
 * pass to be served. Not for use outside certs/ and tests/.
 */
#ifndef MX_CERTS_INT_H
#define MX_CERTS_INT_H

#include <stdbool.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "certs.h"
#include "diag.h"

#define MX_CERTS_CA_DAYS      3650
#define MX_CERTS_LEAF_DAYS    180
#define MX_CERTS_BACKDATE_SEC 3600L
#define MX_CERTS_DAY_SEC      86400L
#define MX_CERTS_CA_CN_PREFIX "mcplex local CA "
#define MX_CERTS_LEAF_CN      "localhost"
/* OpenSSL v3 config syntax, as given to X509V3_EXT_nconf_nid(). */
#define MX_CERTS_LEAF_SAN "DNS:localhost,IP:127.0.0.1,IP:::1"
/*
 * DNS names only. A CA constraint on iPAddress names (RFC 5280 §4.2.1.10) is
 * refused outright by BoringSSL-based clients (Claude Code among them:
 * "unsupported name constraint type") when the leaf carries an IP SAN, and an
 * excluded IP subtree is as much an IP constraint as a permitted one. So the
 * CA is held to localhost (and names under it, RFC 6761 §6.3) and no public
 * DNS name; IP SANs are unconstrained, which leaves a bare public address as
 * the one thing a stolen ca.key could vouch for.
 */
#define MX_CERTS_CA_NAME_CONSTRAINTS "critical,permitted;DNS:localhost"
/* What CAs made before carried; tests use it to make a CA of the old kind. */
#define MX_CERTS_CA_NAME_CONSTRAINTS_V1                                                            \
    "critical,permitted;DNS:localhost,permitted;IP:127.0.0.0/255.0.0.0,"                           \
    "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
/* What `init` and `serve` say about a CA of the old kind. */
#define MX_CERTS_LEGACY_ADVICE                                                                     \
    "this CA has IP-address name constraints, which Claude Code and other BoringSSL-based "        \
    "clients refuse (\"unsupported name constraint type\"); run `mcplex certs init --renew` to "   \
    "replace the CA and the leaf, then make clients trust the new CA"

/* A new ECDSA P-256 key, or NULL (OpenSSL error queue set). Caller frees with EVP_PKEY_free. */
EVP_PKEY *mx_certs_key_new(void);

/*
 * A self-signed CA certificate for |key|: subject "CN=mcplex local CA <hex>",
 * basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
 * keyCertSign+cRLSign, subjectKeyIdentifier, nameConstraints |constraints|
 * (OpenSSL config syntax; MX_CERTS_CA_NAME_CONSTRAINTS for every CA mcplex
 * makes, other values in tests), random 128-bit serial, SHA-256. Valid from
 * now + |not_before_sec| to now + |not_after_sec| (negative: in the past).
 * Returns NULL on failure with |diag| set. Caller frees with X509_free.
 */
X509 *mx_certs_ca_new(EVP_PKEY *key, long not_before_sec, long not_after_sec,
                      const char *constraints, struct mx_diag *diag);

/* Whether |ca| has a name constraint (permitted or excluded) on IP addresses: a CA of the old kind.
 */
bool mx_certs_ca_is_legacy(X509 *ca);

/*
 * A leaf for |key| signed by |ca| / |ca_key|: subject CN=|cn|, subjectAltName
 * |san| (OpenSSL config syntax, NULL for none), basicConstraints critical
 * CA:FALSE, keyUsage critical digitalSignature, extendedKeyUsage serverAuth,
 * subject and authority key identifiers, random 128-bit serial, SHA-256.
 * Validity as for mx_certs_ca_new. Tests use |cn| and |san| to make leaves the
 * CA must not be able to vouch for. Returns NULL on failure with |diag| set.
 */
X509 *mx_certs_leaf_new(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key, const char *cn, const char *san,
                        long not_before_sec, long not_after_sec, struct mx_diag *diag);

/*
 * A new CA (name constraints |constraints|, as for mx_certs_ca_new) and a
 * leaf from it, written to the four files of |p| (whose directory must
 * exist), replacing them with |replace|. init and ensure use it with
 * MX_CERTS_CA_NAME_CONSTRAINTS; tests with others. Returns as
 * mx_certs_write_cert, or MX_EINVAL when a key or certificate cannot be made.
 */
int mx_certs_create(const struct mx_certs_paths *p, const char *constraints, bool replace,
                    struct mx_diag *diag);

/*
 * Read one PEM certificate or private key from |path|. |st| (may be NULL)
 * receives the file's stat. Returns 0, MX_ENOTFOUND, MX_EIO, or MX_EINVAL
 * when the file holds no usable PEM object; |diag| names the file.
 */
int mx_certs_read_cert(const char *path, X509 **out, struct stat *st, struct mx_diag *diag);
int mx_certs_read_key(const char *path, EVP_PKEY **out, struct stat *st, struct mx_diag *diag);

/*
 * Write |x| (mode 0644) or |key| (mode 0600, PKCS#8 PEM, unencrypted) to
 * |path| through a temp file in the same directory, so a reader never sees a
 * partial file. With |replace| an existing file is replaced atomically;
 * without it an existing file is left alone and MX_EEXIST returned. Returns 0,
 * MX_EEXIST, MX_EPERM or MX_EIO with |diag| set.
 */
int mx_certs_write_cert(const char *path, X509 *x, bool replace, struct mx_diag *diag);
int mx_certs_write_key(const char *path, EVP_PKEY *key, bool replace, struct mx_diag *diag);

/*
 * The checks a leaf must pass to be served: it chains to |ca| (sslserver
 * purpose, X509_V_FLAG_X509_STRICT, current time) and is valid for
 * localhost, 127.0.0.1 and ::1. Returns 0 or MX_EINVAL with |diag| saying
 * why.
 */
int mx_certs_check_leaf(X509 *ca, X509 *leaf, struct mx_diag *diag);

/* Seconds from now until |x|'s notAfter (negative once expired); 0 and false on a bad time. */
bool mx_certs_secs_left(X509 *x, long *secs);

/* Set |diag| to "|what|: <first OpenSSL error>" and clear the error queue. */
void mx_certs_ssl_diag(struct mx_diag *diag, const char *file, const char *what);

#endif
