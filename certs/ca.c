/* SPDX-License-Identifier: MIT */
/*
 * Key and certificate construction: ECDSA P-256 keys, the name-constrained
 * local CA and leaves it signs. Everything here works on OpenSSL objects in
 * memory; files, modes and renewal policy live in store.c.
 */
#include <stdio.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certs_int.h"
#include "rand.h"

void mx_certs_ssl_diag(struct mx_diag *diag, const char *file, const char *what)
{
    char buf[256];
    unsigned long e = ERR_peek_last_error();
    if (e == 0) {
        mx_diag_set(diag, file, 0, 0, "%s", what);
    } else {
        ERR_error_string_n(e, buf, sizeof(buf));
        mx_diag_set(diag, file, 0, 0, "%s: %s", what, buf);
    }
    ERR_clear_error();
}

EVP_PKEY *mx_certs_key_new(void)
{
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0 ||
        EVP_PKEY_CTX_set_group_name(ctx, "P-256") <= 0 || EVP_PKEY_generate(ctx, &key) <= 0) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}

/*
 * RFC 5280 §4.1.2.2: positive, at most 20 octets. 128 random bits (top bit set,
 * so every serial has the same length) make collisions between CAs of the
 * same name, and guessable serials, a non-issue.
 */
static int set_serial(X509 *x)
{
    BIGNUM *bn = BN_new();
    int rc = -1;
    if (bn && BN_rand(bn, 128, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) == 1 &&
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL)
        rc = 0;
    BN_free(bn);
    return rc;
}

static int set_cn(X509_NAME *name, const char *cn)
{
    return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                      0) == 1
               ? 0
               : -1;
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
    if (ext == NULL)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

/* Version, serial, validity and public key: what CA and leaf share. */
static X509 *cert_base(EVP_PKEY *key, long not_before_sec, long not_after_sec)
{
    X509 *x = X509_new();
    if (x == NULL || X509_set_version(x, X509_VERSION_3) != 1 || set_serial(x) != 0 ||
        X509_time_adj_ex(X509_getm_notBefore(x), 0, not_before_sec, NULL) == NULL ||
        X509_time_adj_ex(X509_getm_notAfter(x), 0, not_after_sec, NULL) == NULL ||
        X509_set_pubkey(x, key) != 1) {
        X509_free(x);
        return NULL;
    }
    return x;
}

X509 *mx_certs_ca_new(EVP_PKEY *key, long not_before_sec, long not_after_sec,
                      const char *constraints, struct mx_diag *diag)
{
    X509V3_CTX ctx;
    char suffix[9], cn[64];

    /*
     * A random suffix keeps two CAs (another machine's, or this one's before
     * `init --renew`) apart in trust stores and in chain building, which
     * matches issuers by name before it checks keys.
     */
    mx_rand_hex(suffix, sizeof(suffix));
    snprintf(cn, sizeof(cn), "%s%s", MX_CERTS_CA_CN_PREFIX, suffix);
    X509 *x = cert_base(key, not_before_sec, not_after_sec);
    if (x == NULL || set_cn(X509_get_subject_name(x), cn) != 0 ||
        X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
        goto fail;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    /*
     * pathlen:0: the CA signs leaves only, never another CA. The name
     * constraints (RFC 5280 §4.2.1.10) are what make it safe to trust: a
     * stolen ca.key can sign for localhost and no public DNS name (see
     * MX_CERTS_CA_NAME_CONSTRAINTS for what that leaves). Critical, so a
     * client that cannot enforce them must reject the CA.
     */
    if (add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") != 0 ||
        add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") != 0 ||
        add_ext(x, &ctx, NID_subject_key_identifier, "hash") != 0 ||
        (constraints && add_ext(x, &ctx, NID_name_constraints, constraints) != 0))
        goto fail;
    if (X509_sign(x, key, EVP_sha256()) <= 0)
        goto fail;
    return x;
fail:
    mx_certs_ssl_diag(diag, NULL, "cannot make the CA certificate");
    X509_free(x);
    return NULL;
}

X509 *mx_certs_leaf_new(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key, const char *cn, const char *san,
                        long not_before_sec, long not_after_sec, struct mx_diag *diag)
{
    X509V3_CTX ctx;

    X509 *x = cert_base(key, not_before_sec, not_after_sec);
    if (x == NULL || set_cn(X509_get_subject_name(x), cn) != 0 ||
        X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1)
        goto fail;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    /*
     * Clients match the SAN only (RFC 6125 §6.4.4; browsers ignore the CN).
     * The authority key identifier lets strict verifiers (Python 3.13 sets
     * VERIFY_X509_STRICT) pick the issuer by key, not only by name.
     */
    if (add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
        add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") != 0 ||
        add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") != 0 ||
        add_ext(x, &ctx, NID_subject_key_identifier, "hash") != 0 ||
        add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") != 0)
        goto fail;
    if (san && add_ext(x, &ctx, NID_subject_alt_name, san) != 0)
        goto fail;
    if (X509_sign(x, ca_key, EVP_sha256()) <= 0)
        goto fail;
    return x;
fail:
    mx_certs_ssl_diag(diag, NULL, "cannot make the leaf certificate");
    X509_free(x);
    return NULL;
}

static bool has_ip_subtree(STACK_OF(GENERAL_SUBTREE) * trees)
{
    for (int i = 0; i < sk_GENERAL_SUBTREE_num(trees); i++) {
        if (sk_GENERAL_SUBTREE_value(trees, i)->base->type == GEN_IPADD)
            return true;
    }
    return false;
}

bool mx_certs_ca_is_legacy(X509 *ca)
{
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, NULL, NULL);
    bool legacy =
        nc && (has_ip_subtree(nc->permittedSubtrees) || has_ip_subtree(nc->excludedSubtrees));
    NAME_CONSTRAINTS_free(nc);
    return legacy;
}

bool mx_certs_secs_left(X509 *x, long *secs)
{
    int days, s;
    *secs = 0;
    if (ASN1_TIME_diff(&days, &s, NULL, X509_get0_notAfter(x)) != 1)
        return false;
    *secs = (long)days * MX_CERTS_DAY_SEC + s;
    return true;
}
