/* SPDX-License-Identifier: MIT */
/*
 * The local CA and the localhost leaf: the fields of both certificates, file
 * and directory modes, init refusing to overwrite, ensure creating, renewing
 * and leaving alone, verification with OpenSSL's own verifier (including
 * the name constraints refusing a leaf for another host), TLS handshakes over
 * a socketpair, and `mcplex certs` end to end with stdout captured.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certs.h"
#include "certs_int.h"
#include "cmd_certs.h"
#include "err.h"

#define DAY MX_CERTS_DAY_SEC
/* Slack for the seconds between making a certificate and looking at it. */
#define SLACK 300L

static char tmp_dir[64];
static char certs_dir[128];
static char start_dir[512];
static struct mx_certs_paths paths;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/mx-test-certs-XXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
        return -1;
    snprintf(certs_dir, sizeof(certs_dir), "%s/certs", tmp_dir);
    mx_certs_paths_init(&paths, certs_dir);
    setenv("HOME", tmp_dir, 1);
    unsetenv("MCPLEX_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
    /* No ./mcplex.toml from wherever the test runs may change the defaults. */
    if (getcwd(start_dir, sizeof(start_dir)) == NULL || chdir(tmp_dir) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mx_certs_paths_clear(&paths);
    if (chdir(start_dir) != 0)
        return -1;
    return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static void init_ok(void)
{
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    int rc = mx_certs_init(&paths, false, &d);
    if (rc != 0)
        fail_msg("init: %s", d.msg);
}

static X509 *load_cert(const char *path)
{
    struct mx_diag d;
    X509 *x;
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_read_cert(path, &x, NULL, &d), 0);
    return x;
}

static EVP_PKEY *load_key(const char *path)
{
    struct mx_diag d;
    EVP_PKEY *k;
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_read_key(path, &k, NULL, &d), 0);
    return k;
}

/* Whole file as a new string. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static long secs_from_now(const ASN1_TIME *t)
{
    int days, secs;
    assert_int_equal(ASN1_TIME_diff(&days, &secs, NULL, t), 1);
    return (long)days * DAY + secs;
}

static void assert_near(long got, long want)
{
    if (got < want - SLACK || got > want + SLACK)
        fail_msg("%ld is not within %ld of %ld", got, SLACK, want);
}

static void assert_p256(X509 *x)
{
    char group[64];
    EVP_PKEY *pk = X509_get0_pubkey(x);
    assert_non_null(pk);
    assert_true(EVP_PKEY_is_a(pk, "EC"));
    assert_int_equal(EVP_PKEY_get_group_name(pk, group, sizeof(group), NULL), 1);
    assert_string_equal(group, "prime256v1");
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
}

/* Positive and exactly 128 bits. */
static void assert_serial_128(X509 *x)
{
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    assert_non_null(bn);
    assert_false(BN_is_negative(bn));
    assert_int_equal(BN_num_bits(bn), 128);
    BN_free(bn);
}

static int ext_critical(X509 *x, int nid)
{
    int loc = X509_get_ext_by_NID(x, nid, -1);
    assert_true(loc >= 0);
    return X509_EXTENSION_get_critical(X509_get_ext(x, loc));
}

static void cn_of(X509 *x, char *out, int cap)
{
    assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out, cap) > 0);
}

static void test_certs_ca_fields(void **state)
{
    (void)state;
    char cn[128];
    int crit = -1;

    init_ok();
    X509 *ca = load_cert(paths.ca_cert);
    cn_of(ca, cn, sizeof(cn));
    assert_memory_equal(cn, MX_CERTS_CA_CN_PREFIX, strlen(MX_CERTS_CA_CN_PREFIX));
    assert_int_equal(strlen(cn), strlen(MX_CERTS_CA_CN_PREFIX) + 8);
    assert_int_equal(X509_get_version(ca), X509_VERSION_3);
    assert_int_equal(X509_self_signed(ca, 1), 1);
    assert_p256(ca);
    assert_serial_128(ca);

    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(ca, NID_basic_constraints, &crit, NULL);
    assert_non_null(bc);
    assert_int_equal(crit, 1);
    assert_true(bc->ca);
    assert_non_null(bc->pathlen);
    assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
    BASIC_CONSTRAINTS_free(bc);
    assert_int_equal(X509_check_ca(ca), 1);

    assert_int_equal(ext_critical(ca, NID_key_usage), 1);
    assert_int_equal(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
    assert_non_null(X509_get0_subject_key_id(ca));

    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, &crit, NULL);
    assert_non_null(nc);
    assert_int_equal(crit, 1);
    assert_null(nc->excludedSubtrees);
    /* One DNS subtree and no IP one: BoringSSL refuses a CA with IP constraints. */
    assert_int_equal(sk_GENERAL_SUBTREE_num(nc->permittedSubtrees), 1);
    int type;
    const ASN1_STRING *s =
        GENERAL_NAME_get0_value(sk_GENERAL_SUBTREE_value(nc->permittedSubtrees, 0)->base, &type);
    assert_int_equal(type, GEN_DNS);
    assert_int_equal(ASN1_STRING_length(s), 9);
    assert_memory_equal(ASN1_STRING_get0_data(s), "localhost", 9);
    assert_false(mx_certs_ca_is_legacy(ca));
    NAME_CONSTRAINTS_free(nc);

    /* Back-dated an hour for clock skew, ten years ahead. */
    assert_near(secs_from_now(X509_get0_notBefore(ca)), -3600);
    assert_near(secs_from_now(X509_get0_notAfter(ca)), MX_CERTS_CA_DAYS * DAY);

    /* The key on disk is the CA's. */
    EVP_PKEY *key = load_key(paths.ca_key);
    assert_int_equal(X509_check_private_key(ca, key), 1);
    EVP_PKEY_free(key);
    X509_free(ca);
}

static void test_certs_leaf_fields(void **state)
{
    (void)state;
    char cn[128];
    int crit = -1, type;

    init_ok();
    X509 *ca = load_cert(paths.ca_cert);
    X509 *leaf = load_cert(paths.leaf_cert);
    cn_of(leaf, cn, sizeof(cn));
    assert_string_equal(cn, "localhost");
    assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(ca)), 0);
    assert_int_equal(X509_get_version(leaf), X509_VERSION_3);
    assert_p256(leaf);
    assert_serial_128(leaf);

    GENERAL_NAMES *names = X509_get_ext_d2i(leaf, NID_subject_alt_name, &crit, NULL);
    assert_non_null(names);
    assert_int_equal(sk_GENERAL_NAME_num(names), 3);
    const ASN1_STRING *s = GENERAL_NAME_get0_value(sk_GENERAL_NAME_value(names, 0), &type);
    assert_int_equal(type, GEN_DNS);
    assert_int_equal(ASN1_STRING_length(s), 9);
    assert_memory_equal(ASN1_STRING_get0_data(s), "localhost", 9);
    s = GENERAL_NAME_get0_value(sk_GENERAL_NAME_value(names, 1), &type);
    assert_int_equal(type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(s), 4);
    assert_memory_equal(ASN1_STRING_get0_data(s), "\x7f\0\0\x01", 4);
    s = GENERAL_NAME_get0_value(sk_GENERAL_NAME_value(names, 2), &type);
    assert_int_equal(type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(s), 16);
    assert_memory_equal(ASN1_STRING_get0_data(s), "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
    GENERAL_NAMES_free(names);

    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(leaf, NID_basic_constraints, &crit, NULL);
    assert_non_null(bc);
    assert_false(bc->ca);
    BASIC_CONSTRAINTS_free(bc);
    assert_int_equal(X509_check_ca(leaf), 0);
    assert_int_equal(ext_critical(leaf, NID_key_usage), 1);
    assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
    assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
    assert_int_equal(X509_check_purpose(leaf, X509_PURPOSE_SSL_SERVER, 0), 1);

    /* The authority key id names the CA's key. */
    const ASN1_OCTET_STRING *akid = X509_get0_authority_key_id(leaf);
    assert_non_null(akid);
    assert_int_equal(ASN1_OCTET_STRING_cmp(akid, X509_get0_subject_key_id(ca)), 0);

    assert_near(secs_from_now(X509_get0_notBefore(leaf)), -3600);
    assert_near(secs_from_now(X509_get0_notAfter(leaf)), MX_CERTS_LEAF_DAYS * DAY);
    /* CA/Browser Forum: at most 397 days from notBefore to notAfter. */
    int days, secs;
    assert_int_equal(
        ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(leaf), X509_get0_notAfter(leaf)), 1);
    assert_true(days < 397);

    EVP_PKEY *key = load_key(paths.leaf_key);
    assert_int_equal(X509_check_private_key(leaf, key), 1);
    EVP_PKEY_free(key);
    X509_free(leaf);
    X509_free(ca);
}

/* Entries of |dir| other than . and .. */
static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    }
    closedir(d);
    return n;
}

static void test_certs_file_modes(void **state)
{
    (void)state;
    struct mx_certs_paths deep;
    struct mx_diag d;
    char dir[192], mid[192];

    /* With no umask at all, nothing may come out wider than intended. */
    mode_t old = umask(0);
    init_ok();
    snprintf(dir, sizeof(dir), "%s/a/b/certs", tmp_dir);
    snprintf(mid, sizeof(mid), "%s/a", tmp_dir);
    mx_certs_paths_init(&deep, dir);
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_init(&deep, false, &d), 0);
    umask(old);

    assert_int_equal(mode_of(paths.dir), 0700);
    assert_int_equal(mode_of(paths.ca_key), 0600);
    assert_int_equal(mode_of(paths.leaf_key), 0600);
    assert_int_equal(mode_of(paths.ca_cert), 0644);
    assert_int_equal(mode_of(paths.leaf_cert), 0644);
    assert_int_equal(mode_of(mid), 0700);
    assert_int_equal(mode_of(deep.dir), 0700);
    assert_int_equal(mode_of(deep.ca_key), 0600);
    /* No temp files left behind. */
    assert_int_equal(count_entries(paths.dir), 4);
    assert_int_equal(count_entries(deep.dir), 4);
    mx_certs_paths_clear(&deep);

    /* A directory others may write to is refused: they could swap the files. */
    char open_dir[192];
    struct mx_certs_paths p;
    snprintf(open_dir, sizeof(open_dir), "%s/open", tmp_dir);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    mx_certs_paths_init(&p, open_dir);
    assert_int_equal(mx_certs_init(&p, false, &d), MX_EPERM);
    assert_non_null(strstr(d.msg, "writable by group or others"));
    /* Sticky does not help: others could plant the files before we write ours. */
    assert_int_equal(chmod(open_dir, 01777), 0);
    assert_int_equal(mx_certs_init(&p, false, &d), MX_EPERM);
    assert_int_equal(count_entries(open_dir), 0);
    mx_certs_paths_clear(&p);
}

static void test_certs_init_refuses_overwrite(void **state)
{
    (void)state;
    struct mx_diag d;

    init_ok();
    char *ca_before = slurp(paths.ca_cert);
    char *key_before = slurp(paths.ca_key);
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_init(&paths, false, &d), MX_EEXIST);
    assert_non_null(strstr(d.msg, "--renew"));
    char *ca_after = slurp(paths.ca_cert);
    char *key_after = slurp(paths.ca_key);
    assert_string_equal(ca_before, ca_after);
    assert_string_equal(key_before, key_after);
    free(ca_after);
    free(key_after);

    /* Any one file is enough to refuse. */
    assert_int_equal(unlink(paths.ca_cert), 0);
    assert_int_equal(unlink(paths.ca_key), 0);
    assert_int_equal(unlink(paths.leaf_cert), 0);
    assert_int_equal(mx_certs_init(&paths, false, &d), MX_EEXIST);
    assert_string_equal(d.file, paths.leaf_key);
    assert_int_equal(access(paths.ca_cert, F_OK), -1);

    /* --renew replaces everything with a new CA. */
    assert_int_equal(mx_certs_init(&paths, true, &d), 0);
    ca_after = slurp(paths.ca_cert);
    assert_string_not_equal(ca_before, ca_after);
    assert_int_equal(mode_of(paths.ca_key), 0600);
    assert_int_equal(mode_of(paths.leaf_key), 0600);
    assert_int_equal(count_entries(paths.dir), 4);
    X509 *ca = load_cert(paths.ca_cert);
    X509 *leaf = load_cert(paths.leaf_cert);
    assert_int_equal(mx_certs_check_leaf(ca, leaf, &d), 0);
    X509_free(ca);
    X509_free(leaf);
    free(ca_before);
    free(key_before);
    free(ca_after);
}

/*
 * OpenSSL's verifier, set up here rather than through the module, as a client
 * would: trust |ca| only, purpose sslserver, and |host| or |ip| when given.
 * Returns the X509_V_* result.
 */
static int verify(X509 *ca, X509 *leaf, const char *host, const char *ip)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    assert_non_null(store);
    assert_non_null(ctx);
    assert_int_equal(X509_STORE_add_cert(store, ca), 1);
    assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
    X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(ctx);
    assert_int_equal(X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER), 1);
    X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_X509_STRICT);
    if (host)
        assert_int_equal(X509_VERIFY_PARAM_set1_host(vp, host, 0), 1);
    if (ip)
        assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(vp, ip), 1);
    int ok = X509_verify_cert(ctx);
    int err = X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    ERR_clear_error();
    assert_true(ok == 1 ? err == X509_V_OK : err != X509_V_OK);
    return err;
}

static void test_certs_leaf_verifies(void **state)
{
    (void)state;
    init_ok();
    X509 *ca = load_cert(paths.ca_cert);
    X509 *leaf = load_cert(paths.leaf_cert);
    assert_int_equal(verify(ca, leaf, "localhost", NULL), X509_V_OK);
    assert_int_equal(verify(ca, leaf, NULL, "127.0.0.1"), X509_V_OK);
    assert_int_equal(verify(ca, leaf, NULL, "::1"), X509_V_OK);
    /* The check does check: other names and addresses fail. */
    assert_int_equal(verify(ca, leaf, "example.com", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
    assert_int_equal(verify(ca, leaf, NULL, "127.0.0.2"), X509_V_ERR_IP_ADDRESS_MISMATCH);
    X509_free(leaf);
    X509_free(ca);
}

static X509 *issue(X509 *ca, EVP_PKEY *ca_key, const char *cn, const char *san, long from, long to,
                   EVP_PKEY **key_out)
{
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    EVP_PKEY *key = mx_certs_key_new();
    assert_non_null(key);
    X509 *x = mx_certs_leaf_new(ca, ca_key, key, cn, san, from, to, &d);
    if (x == NULL)
        fail_msg("leaf: %s", d.msg);
    if (key_out)
        *key_out = key;
    else
        EVP_PKEY_free(key);
    return x;
}

/*
 * The point of the name constraints: whoever holds ca.key can still not make
 * a certificate that a client trusting the CA accepts for another DNS name.
 */
static void test_certs_name_constraints_refuse_other_hosts(void **state)
{
    (void)state;
    static const struct {
        const char *cn;
        const char *san;
    } evil[] = {
        {"evil.example", "DNS:evil.example"},
        {"localhost", "DNS:localhost,DNS:evil.example"},
        {"localhost.evil.example", "DNS:localhost.evil.example"},
        {"localhost", "DNS:localhost,DNS:www.example.com"},
        {"localhost", "DNS:localhost,IP:127.0.0.1,DNS:*.example.com"},
        /* No SAN: OpenSSL then holds the CN to the DNS constraints. */
        {"evil.example", NULL},
    };
    init_ok();
    X509 *ca = load_cert(paths.ca_cert);
    EVP_PKEY *ca_key = load_key(paths.ca_key);

    for (size_t i = 0; i < sizeof(evil) / sizeof(evil[0]); i++) {
        X509 *x = issue(ca, ca_key, evil[i].cn, evil[i].san, -60, DAY, NULL);
        int err = verify(ca, x, NULL, NULL);
        if (err != X509_V_ERR_PERMITTED_VIOLATION)
            fail_msg("%s / %s: got %s", evil[i].cn, evil[i].san ? evil[i].san : "(no SAN)",
                     X509_verify_cert_error_string(err));
        X509_free(x);
    }
    /* Control: the same path with permitted names verifies, so the failures above are the
     * constraints and nothing else. */
    X509 *good =
        issue(ca, ca_key, "localhost", "DNS:localhost,IP:127.9.9.9,IP:::1", -60, DAY, NULL);
    assert_int_equal(verify(ca, good, "localhost", NULL), X509_V_OK);
    assert_int_equal(verify(ca, good, NULL, "127.9.9.9"), X509_V_OK);
    X509_free(good);
    /* What a DNS-only constraint leaves open (RFC 5280 §4.2.1.10: a name type
     * with no subtree is unconstrained): a leaf for a bare address. Pinned
     * here so that a change of MX_CERTS_CA_NAME_CONSTRAINTS is seen. */
    X509 *ip = issue(ca, ca_key, "localhost", "IP:10.0.0.1", -60, DAY, NULL);
    assert_int_equal(verify(ca, ip, NULL, "10.0.0.1"), X509_V_OK);
    X509_free(ip);
    EVP_PKEY_free(ca_key);
    X509_free(ca);
}

static void ensure_ok(int renew_days, bool want_created, bool want_renewed)
{
    struct mx_diag d;
    bool created = !want_created, renewed = !want_renewed;
    memset(&d, 0, sizeof(d));
    int rc = mx_certs_ensure(&paths, renew_days, &created, &renewed, &d);
    if (rc != 0)
        fail_msg("ensure: %s", d.msg);
    assert_int_equal(created, want_created);
    assert_int_equal(renewed, want_renewed);
}

static void test_certs_ensure_creates_then_leaves_alone(void **state)
{
    (void)state;
    struct stat st1, st2;

    ensure_ok(MX_CERTS_RENEW_DAYS, true, false);
    assert_int_equal(mode_of(paths.dir), 0700);
    assert_int_equal(mode_of(paths.ca_key), 0600);
    assert_int_equal(mode_of(paths.leaf_key), 0600);
    char *leaf_before = slurp(paths.leaf_cert);
    assert_int_equal(stat(paths.leaf_cert, &st1), 0);

    ensure_ok(MX_CERTS_RENEW_DAYS, false, false);
    char *leaf_after = slurp(paths.leaf_cert);
    assert_int_equal(stat(paths.leaf_cert, &st2), 0);
    assert_string_equal(leaf_before, leaf_after);
    assert_int_equal(st1.st_ino, st2.st_ino);
    free(leaf_before);
    free(leaf_after);
}

/* Replace the leaf pair on disk with |leaf| and |key|. */
static void plant_leaf(X509 *leaf, EVP_PKEY *key)
{
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_write_cert(paths.leaf_cert, leaf, true, &d), 0);
    if (key)
        assert_int_equal(mx_certs_write_key(paths.leaf_key, key, true, &d), 0);
}

/* After a renewal: a fresh 180-day leaf with a new key, from the unchanged CA. */
static void assert_fresh_leaf(const char *ca_before, EVP_PKEY *old_key)
{
    struct mx_diag d;
    char *ca_now = slurp(paths.ca_cert);
    assert_string_equal(ca_before, ca_now);
    free(ca_now);
    X509 *ca = load_cert(paths.ca_cert);
    X509 *leaf = load_cert(paths.leaf_cert);
    EVP_PKEY *key = load_key(paths.leaf_key);
    assert_near(secs_from_now(X509_get0_notAfter(leaf)), MX_CERTS_LEAF_DAYS * DAY);
    assert_int_equal(X509_check_private_key(leaf, key), 1);
    assert_int_not_equal(EVP_PKEY_eq(key, old_key), 1);
    assert_int_equal(verify(ca, leaf, "localhost", NULL), X509_V_OK);
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_check_leaf(ca, leaf, &d), 0);
    assert_int_equal(mode_of(paths.leaf_key), 0600);
    assert_int_equal(count_entries(paths.dir), 4);
    EVP_PKEY_free(key);
    X509_free(leaf);
    X509_free(ca);
}

static void test_certs_ensure_renews_expiring_leaf(void **state)
{
    (void)state;
    EVP_PKEY *key;

    init_ok();
    char *ca_pem = slurp(paths.ca_cert);
    X509 *ca = load_cert(paths.ca_cert);
    EVP_PKEY *ca_key = load_key(paths.ca_key);
    X509 *leaf = issue(ca, ca_key, "localhost", MX_CERTS_LEAF_SAN, -DAY, 2 * DAY, &key);
    plant_leaf(leaf, key);

    /* Two days left: within a one-day window it stays, within thirty it goes. */
    ensure_ok(1, false, false);
    ensure_ok(MX_CERTS_RENEW_DAYS, false, true);
    assert_fresh_leaf(ca_pem, key);
    /* And once renewed it is left alone. */
    ensure_ok(MX_CERTS_RENEW_DAYS, false, false);

    X509_free(leaf);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
    X509_free(ca);
    free(ca_pem);
}

static void test_certs_ensure_renews_bad_leaf(void **state)
{
    (void)state;
    EVP_PKEY *key;
    struct mx_diag d;

    init_ok();
    char *ca_pem = slurp(paths.ca_cert);
    X509 *ca = load_cert(paths.ca_cert);
    EVP_PKEY *ca_key = load_key(paths.ca_key);

    /* Already expired. */
    X509 *leaf = issue(ca, ca_key, "localhost", MX_CERTS_LEAF_SAN, -10 * DAY, -DAY, &key);
    plant_leaf(leaf, key);
    ensure_ok(MX_CERTS_RENEW_DAYS, false, true);
    assert_fresh_leaf(ca_pem, key);
    X509_free(leaf);
    EVP_PKEY_free(key);

    /* Signed by some other CA. */
    EVP_PKEY *other_key = mx_certs_key_new();
    memset(&d, 0, sizeof(d));
    X509 *other = mx_certs_ca_new(other_key, -60, DAY, MX_CERTS_CA_NAME_CONSTRAINTS, &d);
    assert_non_null(other);
    leaf = issue(other, other_key, "localhost", MX_CERTS_LEAF_SAN, -60, 100 * DAY, &key);
    plant_leaf(leaf, key);
    ensure_ok(MX_CERTS_RENEW_DAYS, false, true);
    assert_fresh_leaf(ca_pem, key);
    X509_free(leaf);
    EVP_PKEY_free(key);

    /* Missing a name: a good chain but not valid for ::1. */
    leaf = issue(ca, ca_key, "localhost", "DNS:localhost,IP:127.0.0.1", -60, 100 * DAY, &key);
    plant_leaf(leaf, key);
    ensure_ok(MX_CERTS_RENEW_DAYS, false, true);
    assert_fresh_leaf(ca_pem, key);
    X509_free(leaf);
    EVP_PKEY_free(key);

    /* A key that does not match (as after a stop between the two renames). */
    key = mx_certs_key_new();
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_write_key(paths.leaf_key, key, true, &d), 0);
    ensure_ok(MX_CERTS_RENEW_DAYS, false, true);
    assert_fresh_leaf(ca_pem, key);
    EVP_PKEY_free(key);

    X509_free(other);
    EVP_PKEY_free(other_key);
    EVP_PKEY_free(ca_key);
    X509_free(ca);
    free(ca_pem);
}

static void test_certs_ensure_refuses(void **state)
{
    (void)state;
    struct mx_diag d;
    bool created, renewed;

    /* Half a set is not guessed at. */
    init_ok();
    assert_int_equal(unlink(paths.leaf_key), 0);
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_certs_ensure(&paths, 30, &created, &renewed, &d), MX_ENOTFOUND);
    assert_false(created);
    assert_false(renewed);
    assert_non_null(strstr(d.msg, paths.leaf_key));
    assert_int_equal(access(paths.leaf_key, F_OK), -1);
    assert_int_equal(count_entries(paths.dir), 3);

    /* A key open to others. */
    assert_int_equal(mx_certs_init(&paths, true, &d), 0);
    assert_int_equal(chmod(paths.ca_key, 0640), 0);
    assert_int_equal(mx_certs_ensure(&paths, 30, &created, &renewed, &d), MX_EPERM);
    assert_string_equal(d.file, paths.ca_key);
    assert_int_equal(chmod(paths.ca_key, 0600), 0);

    /* A CA key that is not the CA's. */
    EVP_PKEY *k = mx_certs_key_new();
    assert_int_equal(mx_certs_write_key(paths.ca_key, k, true, &d), 0);
    EVP_PKEY_free(k);
    assert_int_equal(mx_certs_ensure(&paths, 30, &created, &renewed, &d), MX_EINVAL);
    assert_non_null(strstr(d.msg, "does not match"));

    /* Garbage where a certificate should be. */
    assert_int_equal(mx_certs_init(&paths, true, &d), 0);
    FILE *f = fopen(paths.leaf_cert, "w");
    assert_non_null(f);
    fputs("not a certificate\n", f);
    fclose(f);
    assert_int_equal(mx_certs_ensure(&paths, 30, &created, &renewed, &d), MX_EINVAL);
    assert_string_equal(d.file, paths.leaf_cert);

    assert_int_equal(mx_certs_ensure(&paths, -1, &created, &renewed, &d), MX_EINVAL);
}

/*
 * One TLS handshake over a socketpair, both ends in this thread with
 * non-blocking sockets. Returns true when both sides finished; |*verify_result|
 * is the client's view of the server certificate.
 */
static bool handshake(SSL_CTX *sctx, SSL_CTX *cctx, const char *host, const char *ip,
                      long *verify_result)
{
    int sv[2];
    bool cdone = false, sdone = false, failed = false;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(fcntl(sv[i], F_SETFL, fcntl(sv[i], F_GETFL) | O_NONBLOCK), 0);
    SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
    assert_non_null(s);
    assert_non_null(c);
    assert_int_equal(SSL_set_fd(s, sv[0]), 1);
    assert_int_equal(SSL_set_fd(c, sv[1]), 1);
    SSL_set_accept_state(s);
    SSL_set_connect_state(c);
    if (host)
        assert_int_equal(SSL_set1_host(c, host), 1);
    if (ip)
        assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c), ip), 1);
    for (int i = 0; i < 50 && !(cdone && sdone) && !failed; i++) {
        SSL *ends[2] = {c, s};
        bool *done[2] = {&cdone, &sdone};
        for (int e = 0; e < 2 && !failed; e++) {
            if (*done[e])
                continue;
            int r = SSL_do_handshake(ends[e]);
            int err = SSL_get_error(ends[e], r);
            if (r == 1)
                *done[e] = true;
            else if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
                failed = true;
        }
    }
    *verify_result = SSL_get_verify_result(c);
    if (cdone && sdone) {
        /* Application data flows too. */
        char buf[8];
        assert_int_equal(SSL_write(c, "ping", 4), 4);
        int n = -1;
        for (int i = 0; i < 10 && n <= 0; i++)
            n = SSL_read(s, buf, sizeof(buf));
        assert_int_equal(n, 4);
        assert_memory_equal(buf, "ping", 4);
    }
    ERR_clear_error();
    SSL_free(s);
    SSL_free(c);
    close(sv[0]);
    close(sv[1]);
    return cdone && sdone && !failed;
}

static SSL_CTX *client_ctx(X509 *trust)
{
    SSL_CTX *c = SSL_CTX_new(TLS_client_method());
    assert_non_null(c);
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
    assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(c), trust), 1);
    /* As strict as Python 3.13's default context. */
    X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(c), X509_V_FLAG_X509_STRICT);
    return c;
}

static void test_certs_tls_handshake(void **state)
{
    (void)state;
    struct mx_diag d;
    long vr;

    init_ok();
    SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
    assert_non_null(sctx);
    assert_int_equal(SSL_CTX_use_certificate_chain_file(sctx, paths.leaf_cert), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey_file(sctx, paths.leaf_key, SSL_FILETYPE_PEM), 1);
    assert_int_equal(SSL_CTX_check_private_key(sctx), 1);

    X509 *ca = load_cert(paths.ca_cert);
    SSL_CTX *good = client_ctx(ca);
    assert_true(handshake(sctx, good, "localhost", NULL, &vr));
    assert_int_equal(vr, X509_V_OK);
    assert_true(handshake(sctx, good, NULL, "127.0.0.1", &vr));
    assert_int_equal(vr, X509_V_OK);
    assert_true(handshake(sctx, good, NULL, "::1", &vr));
    assert_int_equal(vr, X509_V_OK);
    /* Trusted CA, wrong name. */
    assert_false(handshake(sctx, good, "example.com", NULL, &vr));
    assert_int_equal(vr, X509_V_ERR_HOSTNAME_MISMATCH);

    /* A client that trusts a different, freshly made CA refuses the server. */
    EVP_PKEY *other_key = mx_certs_key_new();
    memset(&d, 0, sizeof(d));
    X509 *other = mx_certs_ca_new(other_key, -60, DAY, MX_CERTS_CA_NAME_CONSTRAINTS, &d);
    assert_non_null(other);
    SSL_CTX *bad = client_ctx(other);
    assert_false(handshake(sctx, bad, "localhost", NULL, &vr));
    assert_int_equal(vr, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);

    SSL_CTX_free(bad);
    SSL_CTX_free(good);
    SSL_CTX_free(sctx);
    X509_free(other);
    EVP_PKEY_free(other_key);
    X509_free(ca);
}

struct run {
    int rc;
    char *out;
    char *err;
};

/* Runs `mcplex certs ...` in-process with stdout and stderr captured. */
static struct run run_certs(const char *a1, const char *a2, const char *a3, const char *a4)
{
    char out_path[192], err_path[192];
    char *argv[6];
    int argc = 0;
    struct run r;

    snprintf(out_path, sizeof(out_path), "%s/stdout", tmp_dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", tmp_dir);
    argv[argc++] = (char *)(uintptr_t) "certs";
    const char *args[4] = {a1, a2, a3, a4};
    for (int i = 0; i < 4 && args[i]; i++)
        argv[argc++] = (char *)(uintptr_t)args[i];
    argv[argc] = NULL;

    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved_out >= 0 && saved_err >= 0 && fo >= 0 && fe >= 0);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    r.rc = mx_cmd_certs(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    unlink(out_path);
    unlink(err_path);
    return r;
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static void test_certs_command(void **state)
{
    (void)state;
    char want[512];

    struct run r = run_certs("init", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 0);
    snprintf(want, sizeof(want), "export NODE_EXTRA_CA_CERTS=%s\n", paths.ca_cert);
    assert_contains(r.out, want);
    snprintf(want, sizeof(want), "    mcplex certs trust --dir %s\n", certs_dir);
    assert_contains(r.out, want);
    assert_contains(r.out, "update-ca-certificates");
    assert_contains(r.out, "SSL_CERT_FILE=");
    assert_contains(r.out, "REQUESTS_CA_BUNDLE=");
    assert_contains(r.out, "replace the default bundle");
    snprintf(want, sizeof(want), "curl --cacert %s https://127.0.0.1:8443/", paths.ca_cert);
    assert_contains(r.out, want);
    assert_contains(r.out, paths.leaf_cert);
    assert_contains(r.out, paths.leaf_key);
    assert_null(strstr(r.out, "PRIVATE"));
    run_free(&r);

    /* A second init without --renew: exit 1, a clear message, nothing touched. */
    char *ca_pem = slurp(paths.ca_cert);
    r = run_certs("init", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 1);
    assert_contains(r.err, "already exists");
    assert_contains(r.err, "--renew");
    char *now = slurp(paths.ca_cert);
    assert_string_equal(ca_pem, now);
    free(now);
    run_free(&r);

    r = run_certs("show", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, "CN=mcplex local CA ");
    assert_contains(r.out, "CN=localhost");
    assert_contains(r.out, "DNS:localhost, IP:127.0.0.1, IP:::1");
    assert_contains(r.out, "permitted DNS:localhost\n");
    assert_null(strstr(r.out, "IP:127.0.0.0"));
    assert_contains(r.out, "critical");
    assert_contains(r.out, "day(s) left");
    assert_contains(r.out, "verifies against the CA");
    assert_contains(r.out, "0600");
    assert_null(strstr(r.out, "PRIVATE"));
    run_free(&r);

    r = run_certs("init", "--renew", "--dir", certs_dir);
    assert_int_equal(r.rc, 0);
    now = slurp(paths.ca_cert);
    assert_string_not_equal(ca_pem, now);
    free(now);
    run_free(&r);
    /* --force, the older name, does the same. */
    r = run_certs("init", "--force", "--dir", certs_dir);
    assert_int_equal(r.rc, 0);
    free(ca_pem);
    ca_pem = slurp(paths.ca_cert);
    free(ca_pem);
    run_free(&r);

    /* show notices trouble and says so in its exit status. */
    assert_int_equal(unlink(paths.leaf_cert), 0);
    r = run_certs("show", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 1);
    assert_contains(r.out, "missing");
    run_free(&r);

    r = run_certs("frobnicate", NULL, NULL, NULL);
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = run_certs("show", "--renew", NULL, NULL);
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = run_certs("--help", NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, "usage: mcplex certs");
    run_free(&r);
}

/*
 * A CA made before IP-address name constraints were dropped: init refuses
 * and says to run `--renew`, ensure keeps serving it, show flags it (exit 1),
 * and init --renew replaces CA and leaf with ones of the new kind.
 */
static void test_certs_legacy_ca(void **state)
{
    (void)state;
    struct mx_diag d;
    bool created, renewed;

    memset(&d, 0, sizeof(d));
    assert_int_equal(mkdir(paths.dir, 0700), 0);
    if (mx_certs_create(&paths, MX_CERTS_CA_NAME_CONSTRAINTS_V1, false, &d) != 0)
        fail_msg("create: %s", d.msg);
    X509 *ca = load_cert(paths.ca_cert);
    assert_true(mx_certs_ca_is_legacy(ca));
    X509_free(ca);
    char *ca_before = slurp(paths.ca_cert);

    assert_int_equal(mx_certs_init(&paths, false, &d), MX_EEXIST);
    assert_string_equal(d.file, paths.ca_cert);
    assert_non_null(strstr(d.msg, "IP-address name constraints"));
    assert_non_null(strstr(d.msg, "mcplex certs init --renew"));
    assert_int_equal(mx_certs_ensure(&paths, 30, &created, &renewed, &d), 0);
    assert_false(created);
    assert_false(renewed);
    char *now = slurp(paths.ca_cert);
    assert_string_equal(ca_before, now);
    free(now);

    struct run r = run_certs("show", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 1);
    assert_contains(r.out, "IP:127.0.0.0/8");
    assert_contains(r.out, "mcplex certs init --renew");
    run_free(&r);
    r = run_certs("init", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 1);
    assert_contains(r.err, "unsupported name constraint type");
    assert_contains(r.err, "mcplex certs init --renew");
    run_free(&r);

    r = run_certs("init", "--renew", "--dir", certs_dir);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    now = slurp(paths.ca_cert);
    assert_string_not_equal(ca_before, now);
    free(now);
    assert_int_equal(mode_of(paths.ca_key), 0600);
    assert_int_equal(mode_of(paths.leaf_key), 0600);
    assert_int_equal(mode_of(paths.dir), 0700);
    assert_int_equal(count_entries(paths.dir), 4);
    ca = load_cert(paths.ca_cert);
    X509 *leaf = load_cert(paths.leaf_cert);
    assert_false(mx_certs_ca_is_legacy(ca));
    assert_int_equal(mx_certs_check_leaf(ca, leaf, &d), 0);
    X509_free(leaf);
    X509_free(ca);
    r = run_certs("show", "--dir", certs_dir, NULL);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "--renew"));
    run_free(&r);
    free(ca_before);

    /* An excluded IP subtree is an IP constraint too. */
    EVP_PKEY *k = mx_certs_key_new();
    ca = mx_certs_ca_new(k, -60, DAY,
                         "critical,permitted;DNS:localhost,excluded;IP:10.0.0.0/255.0.0.0", &d);
    assert_non_null(ca);
    assert_true(mx_certs_ca_is_legacy(ca));
    X509_free(ca);
    ca = mx_certs_ca_new(k, -60, DAY, NULL, &d);
    assert_non_null(ca);
    assert_false(mx_certs_ca_is_legacy(ca));
    X509_free(ca);
    EVP_PKEY_free(k);
}

/* Without --dir: <state_dir>/certs, from the config if there is one, else the default. */
static void test_certs_command_default_dir(void **state)
{
    (void)state;
    char want[256], cfg[192];

    struct run r = run_certs("init", NULL, NULL, NULL);
    assert_int_equal(r.rc, 0);
    snprintf(want, sizeof(want), "%s/.local/state/mcplex/certs/ca.pem", tmp_dir);
    assert_int_equal(access(want, F_OK), 0);
    assert_contains(r.out, want);
    run_free(&r);

    snprintf(cfg, sizeof(cfg), "%s/mcplex-test.toml", tmp_dir);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "[listen]\naddress = \"127.0.0.1:9443\"\n[proxy]\nstate_dir = \"~/st\"\n");
    fclose(f);
    r = run_certs("init", "-c", cfg, NULL);
    assert_int_equal(r.rc, 0);
    snprintf(want, sizeof(want), "%s/st/certs/localhost.key", tmp_dir);
    assert_int_equal(mode_of(want), 0600);
    assert_contains(r.out, "https://127.0.0.1:9443/health");
    run_free(&r);
    r = run_certs("show", "--config", cfg, NULL);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, want);
    run_free(&r);

    /* A broken config named with -c is an error, not a silent default. */
    f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "[proxy]\nnot_a_key = 1\n");
    fclose(f);
    r = run_certs("show", "-c", cfg, NULL);
    assert_int_equal(r.rc, 1);
    assert_contains(r.err, "--dir");
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_certs_ca_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_leaf_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_file_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_init_refuses_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_leaf_verifies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_name_constraints_refuse_other_hosts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_certs_ensure_creates_then_leaves_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_certs_ensure_renews_expiring_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_ensure_renews_bad_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_ensure_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_tls_handshake, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_command_default_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certs_legacy_ca, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
