/* SPDX-License-Identifier: MIT */
/*
 * struct mx_secret, a value held apart from other memory, and the few
 * things a secret can be used for (a header, an environment entry, a
 * comparison, masking in text), with the checks of what a value and a
 * private file may be. Resolving references is secret_ref.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "err.h"
#include "secret.h"
#include "secret_int.h"
#include "utf8.h"

struct mx_secret {
    char *p;
    size_t len;
};

static size_t live_cnt;

size_t mx_secret_live_cnt(void)
{
    return live_cnt;
}

/* The OpenSSL secure heap of a protected process (mx_secret_protect_process). */
#define SECURE_HEAP_SIZE (256 * 1024)

int mx_secret_protect_process(const char **why)
{
    int rc = 0;
    *why = NULL;
    /* prctl(2): no core file, and no ptrace or /proc/<pid>/mem for other
     * processes of this user. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        *why = "cannot make the process non-dumpable";
        rc = MX_EIO;
    }
    /* Secret values then live in a locked arena (mlock, MADV_DONTDUMP, guard
     * pages) that never reaches swap; values too big for it use the heap. */
    if (!CRYPTO_secure_malloc_initialized() &&
        CRYPTO_secure_malloc_init(SECURE_HEAP_SIZE, 32) != 1) {
        *why = "secrets are not in locked memory (RLIMIT_MEMLOCK too low?)";
        rc = MX_EIO;
    }
    return rc;
}

static char *value_alloc(size_t len)
{
    char *p = CRYPTO_secure_malloc_initialized() ? OPENSSL_secure_malloc(len) : NULL;
    return p ? p : mx_xmalloc(len);
}

static void value_free(char *p, size_t len)
{
    if (p && CRYPTO_secure_allocated(p)) {
        OPENSSL_secure_clear_free(p, len);
        return;
    }
    OPENSSL_cleanse(p, len);
    free(p);
}

struct mx_secret *mx_secret_new(const char *p, size_t len)
{
    struct mx_secret *s = mx_xmalloc(sizeof(*s));
    s->p = value_alloc(len ? len : 1);
    if (len)
        memcpy(s->p, p, len);
    s->len = len;
    live_cnt++;
    return s;
}

void mx_secret_free(struct mx_secret *s)
{
    if (s == NULL)
        return;
    value_free(s->p, s->len ? s->len : 1);
    free(s);
    live_cnt--;
}

bool mx_secret_equal(const struct mx_secret *s, const char *p, size_t len)
{
    if (s == NULL || p == NULL)
        return false;
    /* Compare the same number of bytes whether or not the lengths match, so
     * the time taken depends on the secret's length only. */
    bool same_len = len == s->len;
    const char *other = same_len ? p : s->p;
    int diff = CRYPTO_memcmp(s->p, other, s->len);
    return same_len & (diff == 0);
}

bool mx_secret_same(const struct mx_secret *a, const struct mx_secret *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return mx_secret_equal(a, b->p, b->len);
}

char *mx_secret_header_new(const struct mx_secret *s, enum mx_auth_kind kind, const char *name)
{
    char *prefix;
    if (s == NULL)
        return NULL;
    switch (kind) {
    case MX_AUTH_BEARER:
        prefix = mx_xstrdup("Authorization: Bearer ");
        break;
    case MX_AUTH_COOKIE:
        if (name == NULL)
            return NULL;
        prefix = mx_xasprintf("Cookie: %s=", name);
        break;
    case MX_AUTH_HEADER:
        if (name == NULL)
            return NULL;
        prefix = mx_xasprintf("%s: ", name);
        break;
    default:
        return NULL;
    }
    /* Sized once: a realloc could leave a copy of the value in freed memory. */
    size_t plen = strlen(prefix);
    char *line = mx_xmalloc(plen + s->len + 1);
    memcpy(line, prefix, plen);
    memcpy(line + plen, s->p, s->len);
    line[plen + s->len] = '\0';
    free(prefix);
    return line;
}

char *mx_secret_env_new(const struct mx_secret *s, const char *name)
{
    if (s == NULL || name == NULL || name[0] == '\0' || strchr(name, '=') != NULL)
        return NULL;
    /* Sized once, as for a header line: no copy of the value left behind. */
    size_t nlen = strlen(name);
    char *entry = mx_xmalloc(nlen + 1 + s->len + 1);
    memcpy(entry, name, nlen);
    entry[nlen] = '=';
    memcpy(entry + nlen + 1, s->p, s->len);
    entry[nlen + 1 + s->len] = '\0';
    return entry;
}

void mx_secret_wipe_free(char *p)
{
    if (p == NULL)
        return;
    OPENSSL_cleanse(p, strlen(p));
    free(p);
}

/* The 4 hex digits of a \u escape at |p|, or -1. */
static long hex4(const char *p, size_t len)
{
    long v = 0;
    if (len < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        int h = mx_hex_digit(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/*
 * Decodes one JSON string character (RFC 8259 §7) at |p|: a raw byte, or
 * an escape, \uXXXX and surrogate pairs included. Its UTF-8 goes to
 * |out|; returns the bytes consumed, or 0 for a malformed escape.
 */
static size_t json_char(const char *p, size_t len, unsigned char *out, size_t *out_len)
{
    static const char from[] = "\"\\/bfnrt";
    static const char to[] = "\"\\/\b\f\n\r\t";
    *out_len = 1;
    if (p[0] != '\\') {
        out[0] = (unsigned char)p[0];
        return 1;
    }
    if (len < 2)
        return 0;
    const char *e = p[1] ? strchr(from, p[1]) : NULL;
    if (e) {
        out[0] = (unsigned char)to[e - from];
        return 2;
    }
    if (p[1] != 'u')
        return 0;
    long cp = hex4(p + 2, len - 2);
    size_t used = 6;
    if (cp < 0)
        return 0;
    if (cp >= 0xd800 && cp <= 0xdbff && len >= 12 && p[6] == '\\' && p[7] == 'u') {
        long lo = hex4(p + 8, len - 8);
        if (lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            used = 12;
        }
    }
    *out_len = mx_utf8_put((uint32_t)cp, out);
    return used;
}

/* The length of a JSON-escaped form of the secret (any mix of raw bytes
 * and escapes) starting at |p|, or 0. */
static size_t escaped_match(const struct mx_secret *s, const char *p, size_t len)
{
    size_t i = 0, j = 0;
    while (j < s->len) {
        unsigned char ch[4];
        size_t n;
        if (i >= len)
            return 0;
        size_t used = json_char(p + i, len - i, ch, &n);
        if (used == 0 || n > s->len - j || memcmp(ch, s->p + j, n) != 0)
            return 0;
        i += used;
        j += n;
    }
    return i;
}

size_t mx_secret_redact(const struct mx_secret *s, char *p, size_t len)
{
    size_t n = 0, off = 0;
    if (s == NULL || p == NULL || s->len == 0)
        return 0;
    while (off < len) {
        char *hit = memmem(p + off, len - off, s->p, s->len);
        if (hit == NULL)
            break;
        memset(hit, '*', s->len);
        n++;
        off = (size_t)(hit - p) + s->len;
    }
    /* The same value inside a JSON string: '"' as \", a control byte as
     * \u0001 or \t, or any byte as \uXXXX, as a peer may have escaped it. */
    for (off = 0; off < len;) {
        size_t m = (p[off] == s->p[0] || p[off] == '\\') ? escaped_match(s, p + off, len - off) : 0;
        if (m == 0) {
            off++;
            continue;
        }
        memset(p + off, '*', m);
        n++;
        off += m;
    }
    return n;
}

bool mx_env_name_is_valid(const char *p, size_t len)
{
    if (len == 0 || (p[0] >= '0' && p[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

const char *mx_secret_value_check(const char *p, size_t len)
{
    if (len == 0)
        return "the value is empty";
    if (len > MX_SECRET_MAX_LEN)
        return "the value is larger than 64 KiB";
    if (memchr(p, '\r', len) || memchr(p, '\n', len))
        return "the value contains a line break";
    if (memchr(p, '\0', len))
        return "the value contains a NUL byte";
    return NULL;
}

int mx_private_file_read(const char *path, const char *what, size_t max, char **out,
                         size_t *out_len, char *why, size_t why_cap)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    *out_len = 0;
    /* O_NONBLOCK: a FIFO planted at the path must not hang start-up. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        rc = mx_err_from_errno(e);
        if (rc != MX_ENOTFOUND && rc != MX_EPERM)
            rc = MX_EIO;
        snprintf(why, why_cap, "cannot open %s: %s", what, strerror(e));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_cap, "cannot stat %s: %s", what, strerror(errno));
        rc = MX_EIO;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_cap, "%s is not a regular file", what);
        rc = MX_EPERM;
        goto out;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, why_cap, "%s is owned by uid %u, not by you (uid %u)", what,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        rc = MX_EPERM;
        goto out;
    }
    if (st.st_mode & 077) {
        unsigned mode = (unsigned)(st.st_mode & 07777);
        snprintf(why, why_cap, "%s is %s by group or others (mode %04o); chmod 600 it", what,
                 (st.st_mode & 044) ? "readable" : "accessible", mode);
        rc = MX_EPERM;
        goto out;
    }
    if (st.st_size < 0 || (size_t)st.st_size > max) {
        snprintf(why, why_cap, "%s is larger than %zu bytes", what, max);
        rc = MX_ELIMIT;
        goto out;
    }
    /* One allocation of the final size, so no partial copy is left behind. */
    buf = mx_xmalloc(max + 1);
    for (;;) {
        ssize_t n = read(fd, buf + len, max + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, why_cap, "cannot read %s: %s", what, strerror(errno));
            rc = MX_EIO;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max) {
            snprintf(why, why_cap, "%s is larger than %zu bytes", what, max);
            rc = MX_ELIMIT;
            goto out;
        }
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    buf = NULL;
    rc = 0;
out:
    if (buf) {
        OPENSSL_cleanse(buf, len);
        free(buf);
    }
    close(fd);
    return rc;
}
