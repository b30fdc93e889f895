/* SPDX-License-Identifier: MIT */
/*
 * The certs directory: paths, PEM files written through temp files with
 * exact modes, `init` (make everything, never clobbering silently) and
 * `ensure` (what `serve` calls: create on first run, re-issue a leaf that is
 * close to expiry or no longer matches its CA). Certificate contents come
 * from ca.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "alloc.h"
#include "certs.h"
#include "certs_int.h"
#include "err.h"
#include "fileio.h"
#include "log.h"

/* A PEM certificate or key is a few KiB; anything much larger is not ours. */
#define PEM_MAX ((size_t)64 * 1024)

void mx_certs_paths_init(struct mx_certs_paths *p, const char *dir)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    p->dir = mx_xstrndup(dir, len);
    p->ca_cert = mx_xasprintf("%s/ca.pem", p->dir);
    p->ca_key = mx_xasprintf("%s/ca.key", p->dir);
    p->leaf_cert = mx_xasprintf("%s/localhost.pem", p->dir);
    p->leaf_key = mx_xasprintf("%s/localhost.key", p->dir);
}

void mx_certs_paths_clear(struct mx_certs_paths *p)
{
    if (p == NULL)
        return;
    free(p->dir);
    free(p->ca_cert);
    free(p->ca_key);
    free(p->leaf_cert);
    free(p->leaf_key);
    memset(p, 0, sizeof(*p));
}

char *mx_certs_default_dir(const char *state_dir)
{
    size_t len = strlen(state_dir);
    while (len > 1 && state_dir[len - 1] == '/')
        len--;
    return mx_xasprintf("%.*s/certs", (int)len, state_dir);
}

/*
 * An exclusive lock on the directory itself (no lock file to leave behind),
 * so two `serve` processes starting together do not both create or renew.
 * Returns the fd or a negative mx_err.
 */
static int lock_dir(const char *dir, struct mx_diag *diag)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return mx_file_fail(dir, "cannot open directory", diag);
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            int rc = mx_file_fail(dir, "cannot lock directory", diag);
            close(fd);
            return rc;
        }
    }
    return fd;
}

static int write_bio(const char *path, BIO *b, mode_t mode, bool replace, struct mx_diag *diag)
{
    char *data = NULL;
    long len = BIO_get_mem_data(b, &data);
    if (len <= 0 || data == NULL) {
        mx_certs_ssl_diag(diag, path, "cannot encode");
        return MX_EINVAL;
    }
    return mx_file_write(path, data, (size_t)len, mode,
                         (replace ? MX_FILE_REPLACE : 0) | MX_FILE_SYNC, diag);
}

int mx_certs_write_cert(const char *path, X509 *x, bool replace, struct mx_diag *diag)
{
    BIO *b = BIO_new(BIO_s_mem());
    int rc = MX_EINVAL;
    if (b == NULL || PEM_write_bio_X509(b, x) != 1)
        mx_certs_ssl_diag(diag, path, "cannot encode certificate");
    else
        rc = write_bio(path, b, 0644, replace, diag);
    BIO_free(b);
    return rc;
}

int mx_certs_write_key(const char *path, EVP_PKEY *key, bool replace, struct mx_diag *diag)
{
    /* A secure-heap memory BIO is wiped when freed; the key leaves no copy behind. */
    BIO *b = BIO_new(BIO_s_secmem());
    int rc = MX_EINVAL;
    if (b == NULL || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)
        mx_certs_ssl_diag(diag, path, "cannot encode key");
    else
        rc = write_bio(path, b, 0600, replace, diag);
    BIO_free(b);
    return rc;
}

/* Reads all of |path| (at most PEM_MAX bytes) into a new buffer. */
static int read_small(const char *path, char **out, size_t *out_len, struct stat *st,
                      struct mx_diag *diag)
{
    struct stat tmp_st;
    size_t len = 0;

    if (st == NULL)
        st = &tmp_st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return mx_file_fail(path, "cannot read", diag);
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        mx_diag_set(diag, path, 0, 0, "cannot read: not a regular file");
        close(fd);
        return MX_EIO;
    }
    char *buf = mx_xmalloc(PEM_MAX);
    for (;;) {
        ssize_t n = read(fd, buf + len, PEM_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = mx_file_fail(path, "cannot read", diag);
            OPENSSL_cleanse(buf, PEM_MAX);
            free(buf);
            close(fd);
            return rc;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == PEM_MAX) {
            mx_diag_set(diag, path, 0, 0, "too large for a PEM certificate or key");
            OPENSSL_cleanse(buf, PEM_MAX);
            free(buf);
            close(fd);
            return MX_EINVAL;
        }
    }
    close(fd);
    *out = buf;
    *out_len = len;
    return 0;
}

/* An encrypted key is not ours; fail instead of prompting on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static void *pem_cert(BIO *b)
{
    return PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
}

static void *pem_key(BIO *b)
{
    return PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
}

/*
 * Reads |path| (read_small) and decodes it with |decode|. The bytes are
 * wiped after: they may be a key. Returns 0 with the object in |*out|, or
 * the error with |diag| set, |not_pem| when the bytes do not decode.
 */
static int read_pem(const char *path, void *(*decode)(BIO *b), const char *not_pem, void **out,
                    struct stat *st, struct mx_diag *diag)
{
    char *buf;
    size_t len;

    *out = NULL;
    int rc = read_small(path, &buf, &len, st, diag);
    if (rc)
        return rc;
    BIO *b = BIO_new_mem_buf(buf, (int)len);
    if (b)
        *out = decode(b);
    BIO_free(b);
    OPENSSL_cleanse(buf, len);
    free(buf);
    if (*out == NULL) {
        mx_certs_ssl_diag(diag, path, not_pem);
        return MX_EINVAL;
    }
    return 0;
}

int mx_certs_read_cert(const char *path, X509 **out, struct stat *st, struct mx_diag *diag)
{
    void *obj;
    int rc = read_pem(path, pem_cert, "not a PEM certificate", &obj, st, diag);
    *out = obj;
    return rc;
}

int mx_certs_read_key(const char *path, EVP_PKEY **out, struct stat *st, struct mx_diag *diag)
{
    void *obj;
    int rc = read_pem(path, pem_key, "not an unencrypted PEM private key", &obj, st, diag);
    *out = obj;
    return rc;
}

int mx_certs_check_leaf(X509 *ca, X509 *leaf, struct mx_diag *diag)
{
    static const char *const ips[] = {"127.0.0.1", "::1"};
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *sctx = X509_STORE_CTX_new();
    int rc = MX_EINVAL;

    if (store == NULL || sctx == NULL || X509_STORE_add_cert(store, ca) != 1 ||
        X509_STORE_CTX_init(sctx, store, leaf, NULL) != 1) {
        mx_certs_ssl_diag(diag, NULL, "cannot set up verification");
        goto out;
    }
    X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(sctx);
    X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
    /* Strict: what Python 3.13 clients check by default. */
    X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_X509_STRICT);
    X509_VERIFY_PARAM_set1_host(vp, MX_CERTS_LEAF_CN, 0);
    if (X509_verify_cert(sctx) != 1) {
        int e = X509_STORE_CTX_get_error(sctx);
        mx_diag_set(diag, NULL, 0, 0, "does not verify against the CA: %s",
                    X509_verify_cert_error_string(e));
        ERR_clear_error();
        goto out;
    }
    for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++) {
        if (X509_check_ip_asc(leaf, ips[i], 0) != 1) {
            mx_diag_set(diag, NULL, 0, 0, "is not valid for %s", ips[i]);
            goto out;
        }
    }
    rc = 0;
out:
    X509_STORE_CTX_free(sctx);
    X509_STORE_free(store);
    return rc;
}

/* Is |path| there (as anything, even a dangling symlink)? -1 with |diag| when we cannot tell. */
static int exists(const char *path, struct mx_diag *diag)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        return 1;
    if (errno == ENOENT)
        return 0;
    mx_file_fail(path, "cannot look up", diag);
    return -1;
}

/* A new leaf key and certificate from |ca|, written over the old pair. */
static int issue_leaf(const struct mx_certs_paths *p, X509 *ca, EVP_PKEY *ca_key, bool replace,
                      struct mx_diag *diag)
{
    long life = MX_CERTS_LEAF_DAYS * MX_CERTS_DAY_SEC, ca_left;
    X509 *leaf = NULL;
    int rc = MX_EINVAL;

    /* A leaf that outlives its CA would only fail later, and less clearly. */
    if (mx_certs_secs_left(ca, &ca_left) && ca_left < life)
        life = ca_left;
    EVP_PKEY *key = mx_certs_key_new();
    if (key == NULL) {
        mx_certs_ssl_diag(diag, NULL, "cannot make a key");
        return MX_EINVAL;
    }
    leaf = mx_certs_leaf_new(ca, ca_key, key, MX_CERTS_LEAF_CN, MX_CERTS_LEAF_SAN,
                             -MX_CERTS_BACKDATE_SEC, life, diag);
    if (leaf == NULL)
        goto out;
    /*
     * Key first, then certificate: each rename is atomic, and if we stop in
     * between, the next ensure sees a key that does not match and re-issues.
     */
    rc = mx_certs_write_key(p->leaf_key, key, replace, diag);
    if (rc == 0)
        rc = mx_certs_write_cert(p->leaf_cert, leaf, replace, diag);
out:
    X509_free(leaf);
    EVP_PKEY_free(key);
    return rc;
}

int mx_certs_create(const struct mx_certs_paths *p, const char *constraints, bool replace,
                    struct mx_diag *diag)
{
    X509 *ca = NULL;
    int rc = MX_EINVAL;

    EVP_PKEY *ca_key = mx_certs_key_new();
    if (ca_key == NULL) {
        mx_certs_ssl_diag(diag, NULL, "cannot make a key");
        return MX_EINVAL;
    }
    ca = mx_certs_ca_new(ca_key, -MX_CERTS_BACKDATE_SEC, MX_CERTS_CA_DAYS * MX_CERTS_DAY_SEC,
                         constraints, diag);
    if (ca == NULL)
        goto out;
    rc = mx_certs_write_key(p->ca_key, ca_key, replace, diag);
    if (rc == 0)
        rc = mx_certs_write_cert(p->ca_cert, ca, replace, diag);
    if (rc == 0)
        rc = issue_leaf(p, ca, ca_key, replace, diag);
out:
    X509_free(ca);
    EVP_PKEY_free(ca_key);
    return rc;
}

static void file_list(const struct mx_certs_paths *p, const char *out[4])
{
    out[0] = p->ca_cert;
    out[1] = p->ca_key;
    out[2] = p->leaf_cert;
    out[3] = p->leaf_key;
}

/* Why init refuses when |file| exists: a CA of the old kind says what to do about it. */
static void init_refusal(const struct mx_certs_paths *p, const char *file, struct mx_diag *diag)
{
    struct mx_diag ignored;
    X509 *ca = NULL;

    if (mx_certs_read_cert(p->ca_cert, &ca, NULL, &ignored) == 0 && mx_certs_ca_is_legacy(ca))
        mx_diag_set(diag, p->ca_cert, 0, 0, "%s", MX_CERTS_LEGACY_ADVICE);
    else
        mx_diag_set(diag, file, 0, 0,
                    "already exists; pass --renew to replace the CA and the leaf "
                    "(clients must then trust the new CA)");
    X509_free(ca);
}

int mx_certs_init(const struct mx_certs_paths *p, bool renew, struct mx_diag *diag)
{
    const char *files[4];
    int rc = mx_dir_private(p->dir, diag);
    if (rc)
        return rc;
    int dir_fd = lock_dir(p->dir, diag);
    if (dir_fd < 0)
        return dir_fd;
    file_list(p, files);
    for (size_t i = 0; i < 4 && !renew; i++) {
        int e = exists(files[i], diag);
        if (e < 0) {
            rc = MX_EIO;
            goto out;
        }
        if (e > 0) {
            init_refusal(p, files[i], diag);
            rc = MX_EEXIST;
            goto out;
        }
    }
    rc = mx_certs_create(p, MX_CERTS_CA_NAME_CONSTRAINTS, renew, diag);
out:
    close(dir_fd);
    return rc;
}

/* Keys must be the user's alone, as the vault must. */
static int check_key_file(const char *path, const struct stat *st, struct mx_diag *diag)
{
    if (st->st_uid != geteuid()) {
        mx_diag_set(diag, path, 0, 0, "key is owned by uid %u, not by this user",
                    (unsigned)st->st_uid);
        return MX_EPERM;
    }
    if (st->st_mode & 077) {
        mx_diag_set(diag, path, 0, 0, "key is open to group or others (mode %04o); chmod 600 it",
                    (unsigned)(st->st_mode & 07777));
        return MX_EPERM;
    }
    return 0;
}

struct loaded {
    X509 *ca, *leaf;
    EVP_PKEY *ca_key, *leaf_key;
};

static int load_all(const struct mx_certs_paths *p, struct loaded *l, struct mx_diag *diag)
{
    struct stat st;
    int rc;

    if ((rc = mx_certs_read_cert(p->ca_cert, &l->ca, NULL, diag)) != 0 ||
        (rc = mx_certs_read_key(p->ca_key, &l->ca_key, &st, diag)) != 0 ||
        (rc = check_key_file(p->ca_key, &st, diag)) != 0 ||
        (rc = mx_certs_read_cert(p->leaf_cert, &l->leaf, NULL, diag)) != 0 ||
        (rc = mx_certs_read_key(p->leaf_key, &l->leaf_key, &st, diag)) != 0 ||
        (rc = check_key_file(p->leaf_key, &st, diag)) != 0)
        return rc;
    return 0;
}

/* The CA must be usable to sign: ours, matching its key, inside its validity. */
static int check_ca(const struct mx_certs_paths *p, const struct loaded *l, struct mx_diag *diag)
{
    long left;
    if (X509_check_private_key(l->ca, l->ca_key) != 1) {
        ERR_clear_error();
        mx_diag_set(diag, p->ca_key, 0, 0, "does not match %s", p->ca_cert);
        return MX_EINVAL;
    }
    if (X509_check_ca(l->ca) != 1) {
        mx_diag_set(diag, p->ca_cert, 0, 0, "is not a CA certificate");
        return MX_EINVAL;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(l->ca)) >= 0) {
        mx_diag_set(diag, p->ca_cert, 0, 0, "is not valid yet; is the clock right?");
        return MX_EINVAL;
    }
    if (!mx_certs_secs_left(l->ca, &left) || left <= 0) {
        mx_diag_set(diag, p->ca_cert, 0, 0,
                    "the CA has expired; run `mcplex certs init --renew` and trust the new CA");
        return MX_EINVAL;
    }
    return 0;
}

/* NULL when the leaf is fine, else why it must be re-issued (in |why|). */
static const char *leaf_problem(const struct loaded *l, int renew_days, char *why, size_t cap)
{
    struct mx_diag d;
    long left;

    memset(&d, 0, sizeof(d));
    if (X509_check_private_key(l->leaf, l->leaf_key) != 1) {
        ERR_clear_error();
        snprintf(why, cap, "its key does not match it");
        return why;
    }
    if (mx_certs_check_leaf(l->ca, l->leaf, &d) != 0) {
        snprintf(why, cap, "it %s", d.msg);
        return why;
    }
    if (!mx_certs_secs_left(l->leaf, &left) || left < (long)renew_days * MX_CERTS_DAY_SEC) {
        snprintf(why, cap, "it expires in %ld day(s)", left / MX_CERTS_DAY_SEC);
        return why;
    }
    return NULL;
}

static void loaded_clear(struct loaded *l)
{
    X509_free(l->ca);
    X509_free(l->leaf);
    EVP_PKEY_free(l->ca_key);
    EVP_PKEY_free(l->leaf_key);
    memset(l, 0, sizeof(*l));
}

int mx_certs_ensure(const struct mx_certs_paths *p, int renew_days, bool *created, bool *renewed,
                    struct mx_diag *diag)
{
    const char *files[4];
    struct loaded l;
    char why[640], missing[1024];
    int rc, n = 0;
    size_t off = 0;

    *created = false;
    *renewed = false;
    memset(&l, 0, sizeof(l));
    if (renew_days < 0 || renew_days > MX_CERTS_LEAF_DAYS) {
        mx_diag_set(diag, NULL, 0, 0, "renew_days must be within 0..%d", MX_CERTS_LEAF_DAYS);
        return MX_EINVAL;
    }
    if ((rc = mx_dir_private(p->dir, diag)) != 0)
        return rc;
    int dir_fd = lock_dir(p->dir, diag);
    if (dir_fd < 0)
        return dir_fd;
    file_list(p, files);
    missing[0] = '\0';
    for (size_t i = 0; i < 4; i++) {
        int e = exists(files[i], diag);
        if (e < 0) {
            rc = MX_EIO;
            goto out;
        }
        if (e == 0 && off < sizeof(missing)) {
            int w =
                snprintf(missing + off, sizeof(missing) - off, "%s%s", off ? ", " : "", files[i]);
            off += w > 0 ? (size_t)w : 0;
        }
        n += e;
    }
    if (n == 0) {
        rc = mx_certs_create(p, MX_CERTS_CA_NAME_CONSTRAINTS, false, diag);
        *created = rc == 0;
        goto out;
    }
    if (n < 4) {
        /* Half a set: a guess could throw away a CA clients already trust. */
        mx_diag_set(diag, p->dir, 0, 0,
                    "incomplete certificate set, missing %s; restore it, or run "
                    "`mcplex certs init --renew` (a new CA that clients must trust again)",
                    missing);
        rc = MX_ENOTFOUND;
        goto out;
    }
    if ((rc = load_all(p, &l, diag)) != 0 || (rc = check_ca(p, &l, diag)) != 0)
        goto out;
    /* Still served: OpenSSL-based clients take it; the others need the new CA. */
    if (mx_certs_ca_is_legacy(l.ca))
        mx_log_warn("certs", "%s: %s", p->ca_cert, MX_CERTS_LEGACY_ADVICE);
    if (leaf_problem(&l, renew_days, why, sizeof(why)) == NULL)
        goto out;
    mx_log_info("certs", "re-issuing %s from the CA: %s", p->leaf_cert, why);
    rc = issue_leaf(p, l.ca, l.ca_key, true, diag);
    *renewed = rc == 0;
out:
    loaded_clear(&l);
    close(dir_fd);
    return rc;
}
