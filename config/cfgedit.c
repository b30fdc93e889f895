/* SPDX-License-Identifier: MIT */
/* Line edits of TOML files (cfgedit.h): a table's span, cut, append, write. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "cfgedit.h"
#include "err.h"
#include "fileio.h"
#include "model.h"
#include "model_int.h"

enum line_kind {
    LINE_BLANK,
    LINE_COMMENT,
    LINE_HEADER,
    LINE_OTHER, /* a key, a value's continuation, a line inside a multi-line string */
};

struct line {
    size_t begin; /* first byte */
    size_t end;   /* after its newline (or the text's end) */
    enum line_kind kind;
    char name[128]; /* LINE_HEADER: the table's dotted name, blanks removed */
};

static size_t count(const char *p, size_t n, const char *what)
{
    size_t c = 0, w = strlen(what);
    for (size_t i = 0; i + w <= n; i++) {
        if (memcmp(p + i, what, w) == 0) {
            c++;
            i += w - 1;
        }
    }
    return c;
}

/* A header line: "[name]" or "[[name]]", then blanks or a comment. */
static bool header_name(const char *p, size_t n, char *name, size_t cap)
{
    size_t i = 0, o = 0;
    bool dbl = n > 1 && p[1] == '[';
    i = dbl ? 2 : 1;
    for (; i < n && p[i] != ']'; i++) {
        if (p[i] == ' ' || p[i] == '\t')
            continue;
        if (p[i] == '#' || p[i] == '[' || o + 1 >= cap)
            return false;
        name[o++] = p[i];
    }
    name[o] = '\0';
    if (i == n || o == 0)
        return false;
    i += dbl ? 2 : 1;
    if (dbl && (i > n || p[i - 1] != ']'))
        return false;
    for (; i < n; i++) {
        if (p[i] == '#' || p[i] == '\r' || p[i] == '\n')
            return true;
        if (p[i] != ' ' && p[i] != '\t')
            return false;
    }
    return true;
}

/* Split |text| into classified lines; caller frees. */
static struct line *split(const char *text, size_t len, size_t *cnt)
{
    size_t n = 0, cap = 16;
    struct line *v = mx_xmalloc(cap * sizeof(*v));
    bool in_basic = false, in_literal = false; /* inside a """ or ''' string */
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) + 1 : len;
        if (n == cap) {
            cap *= 2;
            v = mx_xrealloc(v, cap * sizeof(*v));
        }
        struct line *l = &v[n++];
        l->begin = at;
        l->end = end;
        l->name[0] = '\0';
        size_t i = at;
        while (i < end && (text[i] == ' ' || text[i] == '\t'))
            i++;
        bool inside = in_basic || in_literal;
        if (inside)
            l->kind = LINE_OTHER;
        else if (i == end || text[i] == '\n' || text[i] == '\r')
            l->kind = LINE_BLANK;
        else if (text[i] == '#')
            l->kind = LINE_COMMENT;
        else if (text[i] == '[' && header_name(text + i, end - i, l->name, sizeof(l->name)))
            l->kind = LINE_HEADER;
        else
            l->kind = LINE_OTHER;
        if (l->kind == LINE_OTHER) {
            /* an odd count of delimiters opens or closes a multi-line string */
            if (!in_literal && count(text + at, end - at, "\"\"\"") % 2)
                in_basic = !in_basic;
            else if (!in_basic && count(text + at, end - at, "'''") % 2)
                in_literal = !in_literal;
        }
        at = end;
    }
    *cnt = n;
    return v;
}

/* Whether |h| is |name| or one of its sub-tables. */
static bool owns(const char *h, const char *name)
{
    size_t n = strlen(name);
    return strncmp(h, name, n) == 0 && (h[n] == '\0' || h[n] == '.');
}

int mx_cfgedit_find(const char *text, size_t len, const char *name, struct mx_cfgedit_span *span)
{
    size_t n, h;
    struct line *l = split(text, len, &n);
    for (h = 0; h < n; h++) {
        if (l[h].kind == LINE_HEADER && strcmp(l[h].name, name) == 0)
            break;
    }
    if (h == n) {
        free(l);
        return MX_ENOTFOUND;
    }
    size_t b = h;
    while (b > 0 && l[b - 1].kind == LINE_COMMENT)
        b--;
    size_t next = h + 1; /* the next header not of this table, or n */
    while (next < n && !(l[next].kind == LINE_HEADER && !owns(l[next].name, name)))
        next++;
    size_t attached = next; /* first comment line directly above it */
    while (next < n && attached > h + 1 && l[attached - 1].kind == LINE_COMMENT)
        attached--;
    size_t last = h;
    for (size_t i = h + 1; i < attached; i++) {
        if (l[i].kind == LINE_OTHER || l[i].kind == LINE_HEADER ||
            (l[i].kind == LINE_COMMENT && last == i - 1))
            last = i;
    }
    size_t e = last + 1;
    while (e < n && l[e].kind == LINE_BLANK)
        e++;
    if (e == n) {
        while (b > 0 && l[b - 1].kind == LINE_BLANK)
            b--;
    }
    span->begin = l[b].begin;
    span->end = e == n ? len : l[e].begin;
    free(l);
    return 0;
}

char *mx_cfgedit_cut(const char *text, size_t len, const struct mx_cfgedit_span *span,
                     size_t *out_len)
{
    size_t n = len - (span->end - span->begin);
    char *out = mx_xmalloc(n + 1);
    memcpy(out, text, span->begin);
    memcpy(out + span->begin, text + span->end, len - span->end);
    out[n] = '\0';
    *out_len = n;
    return out;
}

char *mx_cfgedit_append(const char *text, size_t len, const char *block, size_t *out_len)
{
    size_t blen = strlen(block);
    char *out = mx_xmalloc(len + blen + 3);
    size_t n = len;
    memcpy(out, text, len);
    if (n && out[n - 1] != '\n')
        out[n++] = '\n';
    bool blank_end = n == 0 || (n >= 2 && out[n - 2] == '\n') || n == 1;
    if (!blank_end)
        out[n++] = '\n';
    memcpy(out + n, block, blen);
    n += blen;
    out[n] = '\0';
    *out_len = n;
    return out;
}

char *mx_cfgedit_quote(const char *s)
{
    size_t n = strlen(s);
    char *out = mx_xmalloc(n * 6 + 3);
    size_t o = 0;
    out[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p == '\t') {
            out[o++] = '\\';
            out[o++] = 't';
        } else if (*p < 0x20 || *p == 0x7f) {
            o += (size_t)snprintf(out + o, 7, "\\u%04x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

int mx_cfgedit_read(const char *path, size_t cap, char **text, size_t *len, struct mx_diag *diag)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return mx_file_fail(path, "cannot read", diag);
    char *buf = mx_xmalloc(cap + 1);
    size_t n = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, cap + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = mx_file_fail(path, "cannot read", diag);
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > cap) {
            mx_diag_set(diag, path, 0, 0, "larger than %zu bytes", cap);
            rc = MX_ELIMIT;
            break;
        }
    }
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

int mx_cfgedit_write(const char *path, const char *text, size_t len, struct mx_diag *diag)
{
    struct stat st;
    mode_t mode = 0600;
    char *real = realpath(path, NULL);
    const char *target = real ? real : path;
    if (stat(target, &st) == 0)
        mode = st.st_mode & 07777;
    int rc = mx_file_write(target, text, len, mode, MX_FILE_REPLACE | MX_FILE_SYNC, diag);
    free(real);
    return rc;
}

/* Resolve every reference of |s|, dropping the values. */
static int resolve_server(const struct mx_config *cfg, const struct mx_server_cfg *s,
                          struct mx_diag *diag)
{
    for (size_t i = 0; i <= s->env.cnt; i++) {
        size_t idx = i == s->env.cnt ? MX_CONFIG_REF_SECRET : i;
        if (idx != MX_CONFIG_REF_SECRET && strchr(s->env.v[i], '=') == NULL)
            continue;
        if (idx == MX_CONFIG_REF_SECRET && s->secret_ref == NULL)
            continue;
        struct mx_secret *sec = NULL;
        int rc = mx_config_resolve_ref(cfg, s, idx, &sec, diag);
        mx_secret_free(sec);
        if (rc)
            return MX_EINVAL;
    }
    return 0;
}

int mx_config_commit(const char *path, const char *text, size_t len, const char *const *names,
                     size_t cnt, struct mx_diag *diag)
{
    struct mx_config *cfg = NULL;
    int rc = mx_config_parse(path, text, len, &cfg, diag);
    for (size_t i = 0; rc == 0 && i < cnt; i++) {
        const struct mx_server_cfg *s = mx_config_server(cfg, names[i]);
        if (s == NULL) {
            mx_diag_set(diag, path, 0, 0, "server '%s' is missing from the edited config",
                        names[i]);
            rc = MX_EINVAL;
        } else {
            rc = resolve_server(cfg, s, diag);
        }
    }
    mx_config_free(cfg);
    if (rc)
        return MX_EINVAL;
    return mx_cfgedit_write(path, text, len, diag);
}
