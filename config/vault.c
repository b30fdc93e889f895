/* SPDX-License-Identifier: MIT */
/*
 * The vault file: parsing, lookups and atomic rewrites (format in vault.h).
 * Buffers that held the file are wiped before they are freed, since every
 * one of them carries every secret.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "err.h"
#include "fileio.h"
#include "path.h"
#include "secret_int.h"
#include "vault.h"

#define VAULT_HEADER "# mcplex vault v1: NAME=base64 value; edit with `mcplex vault`\n"

struct entry {
    const char *name;
    size_t name_len;
    const char *b64;
    size_t b64_len;
};

struct vault {
    char *data; /* the whole file; entries point into it */
    size_t len;
    struct entry *entries;
    size_t cnt;
};

static bool name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

static bool name_ok(const char *p, size_t len)
{
    if (len == 0 || len > MX_VAULT_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!name_char(p[i]))
            return false;
    }
    return true;
}

char *mx_vault_default_path(void)
{
    return mx_path_xdg("XDG_CONFIG_HOME", "~/.config", "mcplex/vault");
}

bool mx_vault_name_is_valid(const char *name)
{
    return name != NULL && name_ok(name, strlen(name));
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static size_t b64_encoded_len(size_t len)
{
    return (len + 2) / 3 * 4;
}

static void b64_encode(const unsigned char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = b64_alphabet[(v >> 18) & 63];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? b64_alphabet[v & 63] : '=';
    }
}

/* Strict: whole quads, padding only at the end. Returns bytes written or -1. */
static long b64_decode(const char *in, size_t len, unsigned char *out)
{
    size_t o = 0;
    if (len % 4)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        bool last = i + 4 == len;
        int a = b64_val(in[i]), b = b64_val(in[i + 1]);
        int c = in[i + 2] == '=' && last ? -2 : b64_val(in[i + 2]);
        int d = in[i + 3] == '=' && last ? -2 : b64_val(in[i + 3]);
        if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2))
            return -1;
        unsigned v = (unsigned)a << 18 | (unsigned)b << 12;
        out[o++] = (unsigned char)(v >> 16);
        if (c >= 0) {
            v |= (unsigned)c << 6;
            out[o++] = (unsigned char)(v >> 8);
        }
        if (d >= 0) {
            v |= (unsigned)d;
            out[o++] = (unsigned char)v;
        }
    }
    return (long)o;
}

static bool b64_ok(const char *p, size_t len)
{
    if (len == 0 || len % 4)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (b64_val(p[i]) < 0 && !(p[i] == '=' && i >= len - 2))
            return false;
    }
    return !(p[len - 2] == '=' && p[len - 1] != '=');
}

static void vault_clear(struct vault *v)
{
    if (v->data) {
        OPENSSL_cleanse(v->data, v->len);
        free(v->data);
    }
    free(v->entries);
    memset(v, 0, sizeof(*v));
}

static int parse(struct vault *v, const char *path, struct mx_diag *diag)
{
    size_t cap = 0;
    int line = 0;
    for (size_t pos = 0; pos < v->len;) {
        const char *s = v->data + pos;
        const char *nl = memchr(s, '\n', v->len - pos);
        size_t n = nl ? (size_t)(nl - s) : v->len - pos;
        pos += n + (nl ? 1 : 0);
        line++;
        if (n && s[n - 1] == '\r')
            n--;
        if (n == 0 || s[0] == '#')
            continue;
        const char *eq = memchr(s, '=', n);
        if (eq == NULL || !name_ok(s, (size_t)(eq - s)) ||
            !b64_ok(eq + 1, n - (size_t)(eq - s) - 1)) {
            mx_diag_set(diag, path, line, 1, "malformed vault entry (expected NAME=BASE64)");
            return MX_EINVAL;
        }
        struct entry e = {s, (size_t)(eq - s), eq + 1, n - (size_t)(eq - s) - 1};
        for (size_t i = 0; i < v->cnt; i++) {
            if (v->entries[i].name_len == e.name_len &&
                memcmp(v->entries[i].name, s, e.name_len) == 0) {
                mx_diag_set(diag, path, line, 1, "duplicate vault entry '%.*s'", (int)e.name_len,
                            s);
                return MX_EINVAL;
            }
        }
        if (v->cnt == cap) {
            cap = cap ? cap * 2 : 16;
            v->entries = mx_xrealloc(v->entries, cap * sizeof(*v->entries));
        }
        v->entries[v->cnt++] = e;
    }
    return 0;
}

/* Loads and parses; a missing file is an empty vault when |missing_ok|. */
static int load(struct vault *v, const char *path, bool missing_ok, struct mx_diag *diag)
{
    char why[256];
    memset(v, 0, sizeof(*v));
    int rc =
        mx_private_file_read(path, "vault", MX_VAULT_MAX_FILE, &v->data, &v->len, why, sizeof(why));
    if (rc == MX_ENOTFOUND && missing_ok)
        return 0;
    if (rc == MX_ENOTFOUND) {
        mx_diag_set(diag, path, 0, 0,
                    "vault does not exist (add a secret with: mcplex vault set NAME)");
        return rc;
    }
    if (rc) {
        mx_diag_set(diag, path, 0, 0, "%s", why);
        return rc;
    }
    rc = parse(v, path, diag);
    if (rc)
        vault_clear(v);
    return rc;
}

static const struct entry *find(const struct vault *v, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < v->cnt; i++) {
        if (v->entries[i].name_len == len && memcmp(v->entries[i].name, name, len) == 0)
            return &v->entries[i];
    }
    return NULL;
}

static int bad_name(const char *path, const char *name, struct mx_diag *diag)
{
    mx_diag_set(diag, path, 0, 0,
                "invalid vault entry name '%.64s' (1 to 64 characters from A-Za-z0-9_.-)",
                name ? name : "");
    return MX_EINVAL;
}

int mx_vault_get(const char *path, const char *name, struct mx_secret **out, struct mx_diag *diag)
{
    struct vault v;
    *out = NULL;
    if (!mx_vault_name_is_valid(name))
        return bad_name(path, name, diag);
    int rc = load(&v, path, false, diag);
    if (rc)
        return rc;
    const struct entry *e = find(&v, name);
    if (e == NULL) {
        mx_diag_set(diag, path, 0, 0,
                    "no entry '%s' in the vault (add it with: mcplex vault set %s)", name, name);
        vault_clear(&v);
        return MX_ENOTFOUND;
    }
    unsigned char *buf = mx_xmalloc(e->b64_len / 4 * 3 + 1);
    long n = b64_decode(e->b64, e->b64_len, buf);
    const char *why = n < 0 ? "bad base64" : mx_secret_value_check((const char *)buf, (size_t)n);
    if (why) {
        mx_diag_set(diag, path, 0, 0, "vault entry '%s' is unusable: %s", name, why);
        rc = MX_EINVAL;
    } else {
        *out = mx_secret_new((const char *)buf, (size_t)n);
    }
    OPENSSL_cleanse(buf, e->b64_len / 4 * 3 + 1);
    free(buf);
    vault_clear(&v);
    return rc;
}

int mx_vault_list(const char *path, char ***names, size_t *cnt, struct mx_diag *diag)
{
    struct vault v;
    *names = NULL;
    *cnt = 0;
    int rc = load(&v, path, true, diag);
    if (rc)
        return rc;
    char **out = mx_xcalloc(v.cnt ? v.cnt : 1, sizeof(*out));
    for (size_t i = 0; i < v.cnt; i++)
        out[i] = mx_xstrndup(v.entries[i].name, v.entries[i].name_len);
    *names = out;
    *cnt = v.cnt;
    vault_clear(&v);
    return 0;
}

void mx_vault_names_free(char **names, size_t cnt)
{
    if (names == NULL)
        return;
    for (size_t i = 0; i < cnt; i++)
        free(names[i]);
    free(names);
}

/*
 * Rewrites the vault with |name| set to |value| (or removed when |value| is
 * NULL), under an exclusive lock on the directory.
 */
static int rewrite(const char *path_arg, const char *name, const char *value, size_t value_len,
                   struct mx_diag *diag)
{
    struct vault v;
    char *out = NULL;
    size_t out_cap = 0, len = 0;
    int rc, dir_fd = -1;

    /* Rewrite a symlinked vault where it really lives, not over the link. */
    char *path = realpath(path_arg, NULL);
    if (path == NULL)
        path = mx_xstrdup(path_arg);
    char *slash = strrchr(path, '/');
    char *dir = slash == NULL   ? mx_xstrdup(".")
                : slash == path ? mx_xstrdup("/")
                                : mx_xstrndup(path, (size_t)(slash - path));
    memset(&v, 0, sizeof(v));
    /* Whoever can write to the directory could swap the vault. */
    rc = mx_dir_private(dir, diag);
    if (rc)
        goto out;
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        rc = mx_file_fail(dir, "cannot open directory", diag);
        goto out;
    }
    while (flock(dir_fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            rc = mx_file_fail(dir, "cannot lock directory", diag);
            goto out;
        }
    }
    rc = load(&v, path, value != NULL, diag);
    if (rc)
        goto out;
    const struct entry *old = find(&v, name);
    if (value == NULL && old == NULL) {
        mx_diag_set(diag, path, 0, 0, "no entry '%s' in the vault", name);
        rc = MX_ENOTFOUND;
        goto out;
    }
    /* Sized once, so no realloc leaves a copy of the secrets behind. */
    out_cap = sizeof(VAULT_HEADER);
    for (size_t i = 0; i < v.cnt; i++)
        out_cap += v.entries[i].name_len + v.entries[i].b64_len + 2;
    if (value)
        out_cap += strlen(name) + b64_encoded_len(value_len) + 2;
    if (out_cap > MX_VAULT_MAX_FILE) {
        mx_diag_set(diag, path, 0, 0, "the vault would grow past %d bytes", MX_VAULT_MAX_FILE);
        rc = MX_ELIMIT;
        goto out;
    }
    out = mx_xmalloc(out_cap);
    memcpy(out, VAULT_HEADER, sizeof(VAULT_HEADER) - 1);
    len = sizeof(VAULT_HEADER) - 1;
    bool placed = false;
    for (size_t i = 0; i < v.cnt; i++) {
        const struct entry *e = &v.entries[i];
        if (e == old && value == NULL)
            continue;
        memcpy(out + len, e->name, e->name_len);
        len += e->name_len;
        out[len++] = '=';
        if (e == old) {
            b64_encode((const unsigned char *)value, value_len, out + len);
            len += b64_encoded_len(value_len);
            placed = true;
        } else {
            memcpy(out + len, e->b64, e->b64_len);
            len += e->b64_len;
        }
        out[len++] = '\n';
    }
    if (value && !placed) {
        size_t n = strlen(name);
        memcpy(out + len, name, n);
        len += n;
        out[len++] = '=';
        b64_encode((const unsigned char *)value, value_len, out + len);
        len += b64_encoded_len(value_len);
        out[len++] = '\n';
    }
    rc = mx_file_write(path, out, len, 0600, MX_FILE_REPLACE | MX_FILE_SYNC, diag);
out:
    if (out) {
        OPENSSL_cleanse(out, out_cap);
        free(out);
    }
    vault_clear(&v);
    if (dir_fd >= 0)
        close(dir_fd); /* releases the lock */
    free(dir);
    free(path);
    return rc;
}

int mx_vault_set(const char *path, const char *name, const char *value, size_t len,
                 struct mx_diag *diag)
{
    if (!mx_vault_name_is_valid(name))
        return bad_name(path, name, diag);
    const char *why = value ? mx_secret_value_check(value, len) : "no value";
    if (why) {
        mx_diag_set(diag, path, 0, 0, "cannot store '%s': %s", name, why);
        return MX_EINVAL;
    }
    return rewrite(path, name, value, len, diag);
}

int mx_vault_remove(const char *path, const char *name, struct mx_diag *diag)
{
    if (!mx_vault_name_is_valid(name))
        return bad_name(path, name, diag);
    return rewrite(path, name, NULL, 0, diag);
}
