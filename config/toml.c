/* SPDX-License-Identifier: MIT */
/*
 * TOML-subset parser: a hand-written recursive descent over the bytes, with
 * the line and column tracked as it advances so every error can point at the
 * character that caused it. Syntax only; model.c gives keys their meaning.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "num.h"
#include "toml.h"
#include "utf8.h"

struct parser {
    const char *file;
    const char *p;
    size_t len;
    size_t pos;
    int line;
    int col;
    struct mx_diag *diag;
    struct mx_toml_table *root;
    struct mx_toml_table *cur;
    const char *key;          /* whose value is being read */
    int array_line;           /* where the array being read opened */
    mx_toml_show_cb may_show; /* NULL: no value is quoted back */
};

static size_t live_cnt; /* tables */

static int peek(const struct parser *ps)
{
    return ps->pos < ps->len ? (unsigned char)ps->p[ps->pos] : -1;
}

static int peek_at(const struct parser *ps, size_t k)
{
    return ps->pos + k < ps->len ? (unsigned char)ps->p[ps->pos + k] : -1;
}

/* Columns count characters, so UTF-8 continuation bytes do not move them. */
static void adv(struct parser *ps)
{
    unsigned char c = (unsigned char)ps->p[ps->pos++];
    if (c == '\n') {
        ps->line++;
        ps->col = 1;
    } else if ((c & 0xc0) != 0x80) {
        ps->col++;
    }
}

static void adv_n(struct parser *ps, size_t n)
{
    while (n--)
        adv(ps);
}

static int vfail(struct parser *ps, int err, int line, int col, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

static int vfail(struct parser *ps, int err, int line, int col, const char *fmt, va_list ap)
{
    char msg[sizeof(ps->diag->msg)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    mx_diag_set(ps->diag, ps->file, line, col, "%s", msg);
    return err;
}

static int fail_at(struct parser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_here(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int limit_at(struct parser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(struct parser *ps, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(ps, MX_EINVAL, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

static int fail_here(struct parser *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(ps, MX_EINVAL, ps->line, ps->col, fmt, ap);
    va_end(ap);
    return rc;
}

static int limit_at(struct parser *ps, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(ps, MX_ELIMIT, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

/* The character at the cursor, as a message fragment. */
static const char *describe(const struct parser *ps, char *buf, size_t cap)
{
    int c = peek(ps);
    if (c == -1)
        return "end of file";
    if (c == '\n' || (c == '\r' && peek_at(ps, 1) == '\n'))
        return "end of line";
    if (c == '\r')
        return "carriage return";
    if (c == ' ' || c == '\t')
        return "whitespace";
    if (c > 0x20 && c < 0x7f) {
        snprintf(buf, cap, "'%c'", c);
        return buf;
    }
    if (c < 0x20 || c == 0x7f) {
        snprintf(buf, cap, "control character U+%04X", (unsigned)c);
        return buf;
    }
    return "non-ASCII character";
}

static bool is_key_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Length of the valid UTF-8 sequence at |s|, or 0 (RFC 3629 §4). */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    }
    return n;
}

static void skip_ws(struct parser *ps)
{
    while (peek(ps) == ' ' || peek(ps) == '\t')
        adv(ps);
}

/* Consumes "\n" or "\r\n"; false when the cursor is not at a line end. */
static bool eat_newline(struct parser *ps)
{
    if (peek(ps) == '\n') {
        adv(ps);
        return true;
    }
    if (peek(ps) == '\r' && peek_at(ps, 1) == '\n') {
        adv_n(ps, 2);
        return true;
    }
    return false;
}

/* From '#' up to (not including) the line end. */
static int skip_comment(struct parser *ps)
{
    adv(ps);
    for (;;) {
        int c = peek(ps);
        if (c == -1 || c == '\n' || (c == '\r' && peek_at(ps, 1) == '\n'))
            return 0;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail_here(ps, "control character U+%04X in comment", (unsigned)c);
        if (c >= 0x80) {
            size_t n = utf8_len((const unsigned char *)ps->p + ps->pos, ps->len - ps->pos);
            if (n == 0)
                return fail_here(ps, "invalid UTF-8 in comment");
            adv_n(ps, n);
            continue;
        }
        adv(ps);
    }
}

/* Whitespace, an optional comment, then a line end or the end of input. */
static int end_of_line(struct parser *ps, const char *after)
{
    char buf[32];
    skip_ws(ps);
    if (peek(ps) == '#') {
        int rc = skip_comment(ps);
        if (rc)
            return rc;
    }
    if (peek(ps) == -1 || eat_newline(ps))
        return 0;
    return fail_here(ps, "unexpected %s after %s", describe(ps, buf, sizeof(buf)), after);
}

/* Inside arrays: any mix of whitespace, line ends and comments. */
static int skip_blank(struct parser *ps)
{
    for (;;) {
        skip_ws(ps);
        if (peek(ps) == '#') {
            int rc = skip_comment(ps);
            if (rc)
                return rc;
        }
        if (!eat_newline(ps))
            return 0;
    }
}

static char *scan_key(struct parser *ps)
{
    size_t start = ps->pos;
    while (is_key_char(peek(ps)))
        adv(ps);
    return mx_xstrndup(ps->p + start, ps->pos - start);
}

static void value_clear(struct mx_toml_value *v);

static void table_free(struct mx_toml_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->cnt; i++) {
        free(t->entries[i].key);
        value_clear(&t->entries[i].val);
    }
    free(t->entries);
    free(t->name);
    free(t);
    live_cnt--;
}

static void value_clear(struct mx_toml_value *v)
{
    free(v->str);
    for (size_t i = 0; i < v->item_cnt; i++)
        value_clear(&v->items[i]);
    free(v->items);
    table_free(v->table);
    memset(v, 0, sizeof(*v));
}

void mx_toml_free(struct mx_toml_table *t)
{
    table_free(t);
}

static size_t find_index(const struct mx_toml_table *t, const char *key)
{
    size_t i;
    for (i = 0; i < t->cnt; i++) {
        if (strcmp(t->entries[i].key, key) == 0)
            break;
    }
    return i;
}

const struct mx_toml_entry *mx_toml_find(const struct mx_toml_table *t, const char *key)
{
    size_t i = find_index(t, key);
    return i < t->cnt ? &t->entries[i] : NULL;
}

const char *mx_toml_type_name(enum mx_toml_type type)
{
    switch (type) {
    case MX_TOML_STRING:
        return "a string";
    case MX_TOML_INT:
        return "an integer";
    case MX_TOML_BOOL:
        return "a boolean";
    case MX_TOML_ARRAY:
        return "an array";
    case MX_TOML_TABLE:
        return "a table";
    }
    return "a value";
}

size_t mx_toml_live_cnt(void)
{
    return live_cnt;
}

static struct mx_toml_table *table_new(const char *name)
{
    struct mx_toml_table *t = mx_xcalloc(1, sizeof(*t));
    t->name = mx_xstrdup(name);
    live_cnt++;
    return t;
}

/* Appends an entry that takes ownership of |key| (even on failure). */
static int table_add(struct parser *ps, struct mx_toml_table *t, char *key, int line, int col,
                     struct mx_toml_entry **out)
{
    if (t->cnt == MX_TOML_MAX_KEYS) {
        free(key);
        return limit_at(ps, line, col, "more than %d keys in one table", MX_TOML_MAX_KEYS);
    }
    if (t->cnt == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->entries = mx_xrealloc(t->entries, t->cap * sizeof(*t->entries));
    }
    struct mx_toml_entry *e = &t->entries[t->cnt++];
    memset(e, 0, sizeof(*e));
    e->key = key;
    e->line = line;
    e->col = col;
    *out = e;
    return 0;
}

static struct mx_toml_entry *table_find(struct mx_toml_table *t, const char *key)
{
    size_t i = find_index(t, key);
    return i < t->cnt ? &t->entries[i] : NULL;
}

struct strbuf {
    char *p;
    size_t len;
    size_t cap;
};

static void sb_add(struct strbuf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap)
            b->cap = b->cap ? b->cap * 2 : 32;
        b->p = mx_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_add_utf8(struct strbuf *b, uint32_t cp)
{
    unsigned char u[4];
    size_t n = mx_utf8_put(cp, u);
    sb_add(b, (const char *)u, n);
}

/* At the backslash; appends the escaped character. */
static int parse_escape(struct parser *ps, struct strbuf *b, int open_line, int open_col)
{
    int line = ps->line, col = ps->col;
    adv(ps);
    int e = peek(ps);
    char c;
    switch (e) {
    case '"':
    case '\\':
        c = (char)e;
        break;
    case 'n':
        c = '\n';
        break;
    case 't':
        c = '\t';
        break;
    case 'r':
        c = '\r';
        break;
    case 'b':
        c = '\b';
        break;
    case 'f':
        c = '\f';
        break;
    case 'u':
    case 'U': {
        size_t digits = e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t i = 1; i <= digits; i++) {
            int h = mx_hex_digit(peek_at(ps, i));
            if (h < 0)
                return fail_at(ps, line, col, "invalid \\%c escape: expected %zu hex digits", e,
                               digits);
            cp = cp << 4 | (uint32_t)h;
        }
        if (cp == 0)
            return fail_at(ps, line, col, "NUL (\\%c0000) is not allowed in strings", e);
        if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return fail_at(ps, line, col, "\\%c escape is not a Unicode scalar value", e);
        adv_n(ps, digits + 1);
        sb_add_utf8(b, cp);
        return 0;
    }
    case -1:
    case '\n':
        return fail_at(ps, open_line, open_col, "unterminated string");
    default:
        if (e > 0x20 && e < 0x7f)
            return fail_at(ps, line, col, "invalid escape sequence '\\%c'", e);
        return fail_at(ps, line, col, "invalid escape sequence");
    }
    adv(ps);
    sb_add(b, &c, 1);
    return 0;
}

static int parse_string(struct parser *ps, struct mx_toml_value *v)
{
    int open_line = ps->line, open_col = ps->col;
    struct strbuf b = {NULL, 0, 0};
    int rc;

    if (peek_at(ps, 1) == '"' && peek_at(ps, 2) == '"')
        return fail_here(ps, "multi-line strings (\"\"\") are not supported");
    adv(ps);
    sb_add(&b, "", 0);
    for (;;) {
        int c = peek(ps);
        if (c == -1 || c == '\n' || (c == '\r' && peek_at(ps, 1) == '\n')) {
            rc = fail_at(ps, open_line, open_col, "unterminated string");
            goto fail;
        }
        if (c == '"') {
            adv(ps);
            break;
        }
        if (c == '\\') {
            rc = parse_escape(ps, &b, open_line, open_col);
            if (rc)
                goto fail;
            continue;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            rc = fail_here(ps, "control character U+%04X in string; use an escape", (unsigned)c);
            goto fail;
        }
        size_t n = 1;
        if (c >= 0x80) {
            n = utf8_len((const unsigned char *)ps->p + ps->pos, ps->len - ps->pos);
            if (n == 0) {
                rc = fail_here(ps, "invalid UTF-8 in string");
                goto fail;
            }
        }
        sb_add(&b, ps->p + ps->pos, n);
        adv_n(ps, n);
    }
    v->type = MX_TOML_STRING;
    v->str = b.p;
    v->str_len = b.len;
    return 0;
fail:
    free(b.p);
    return rc;
}

/* Where a value written without quotes ends: at a blank, a line end, a
 * comment, or the ',' or ']' of an array. */
static size_t bare_end(const struct parser *ps)
{
    size_t end = ps->pos;
    while (end < ps->len) {
        unsigned char c = (unsigned char)ps->p[end];
        if (c <= 0x20 || c == 0x7f || c == ',' || c == ']' || c == '#')
            break;
        end++;
    }
    return end;
}

static size_t digits_at(const char *s, size_t i, size_t end)
{
    size_t n = 0;
    while (i + n < end && is_digit((unsigned char)s[i + n]))
        n++;
    return n;
}

/* [digits] "." digits, then an optional exponent, as TOML floats are written. */
static bool is_float_shape(const char *s, size_t i, size_t end)
{
    bool frac = false, exp = false;
    i += digits_at(s, i, end);
    if (i < end && s[i] == '.') {
        size_t n = digits_at(s, i + 1, end);
        if (n == 0)
            return false;
        i += 1 + n;
        frac = true;
    }
    if (i < end && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < end && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t n = digits_at(s, i, end);
        if (n == 0)
            return false;
        i += n;
        exp = true;
    }
    return i == end && (frac || exp);
}

/* 1979-05-27... or 07:32... */
static bool is_date_shape(const char *s, size_t i, size_t end)
{
    if (digits_at(s, i, end) == 4 && i + 7 < end && s[i + 4] == '-' &&
        digits_at(s, i + 5, end) == 2 && s[i + 7] == '-')
        return true;
    return digits_at(s, i, end) == 2 && i + 4 < end && s[i + 2] == ':' &&
           digits_at(s, i + 3, end) == 2;
}

/* Whether a message may quote |n| bytes at |s| back as "...": printable
 * ASCII that stays one basic string once quoted. */
static bool is_showable(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\')
            return false;
    }
    return true;
}

/*
 * A string written without quotes. The value is quoted back only when the
 * model says its key never holds a secret (mx_toml_show_cb): the parser
 * alone cannot tell a token from an address.
 */
static int need_quotes(struct parser *ps, size_t end, bool in_array)
{
    const char *w = ps->p + ps->pos;
    int n = (int)(end - ps->pos);
    bool show = ps->may_show && ps->may_show(ps->cur->name, ps->key) && is_showable(w, (size_t)n);
    if (in_array && show)
        return fail_here(ps, "strings need double quotes, also in arrays: write \"%.*s\"", n, w);
    if (in_array)
        return fail_here(
            ps, "strings need double quotes, also in arrays: write %s = [\"...\", ...]", ps->key);
    if (show)
        return fail_here(ps, "strings need double quotes: write %s = \"%.*s\"", ps->key, n, w);
    return fail_here(ps, "strings need double quotes: write %s = \"...\"", ps->key);
}

/*
 * A value that starts like a number. Decimal integers are values; what TOML
 * reads as a float, date, time or another base is named; anything else
 * (an address, "30s") is a string without its quotes (returns 1).
 */
static int parse_number(struct parser *ps, struct mx_toml_value *v, size_t end)
{
    int line = ps->line, col = ps->col;
    size_t start = ps->pos;
    const char *s = ps->p;
    char buf[32];

    size_t first = start;
    if (s[first] == '+' || s[first] == '-')
        first++;
    size_t digits = digits_at(s, first, end), i = first + digits;
    const char *why = NULL;
    size_t at = i;
    if (first == end) {
        adv_n(ps, first - start);
        return fail_here(ps, "expected a digit, found %s", describe(ps, buf, sizeof(buf)));
    }
    if (i == end) {
        if (digits > 1 && s[first] == '0') {
            adv_n(ps, first - start);
            return fail_here(ps, "leading zeros are not allowed in integers");
        }
        if (mx_num_parse(s + start, end - start, INT64_MIN, INT64_MAX, &v->i) != 0)
            return fail_at(ps, line, col, "integer out of range (must fit in 64 bits)");
        adv_n(ps, end - start);
        v->type = MX_TOML_INT;
        return 0;
    }
    if (is_float_shape(s, first, end)) {
        why = "floats are not supported";
    } else if (is_date_shape(s, first, end)) {
        why = "dates and times are not supported";
    } else if (digits == 1 && s[first] == '0' && (s[i] == 'x' || s[i] == 'o' || s[i] == 'b')) {
        why = "only decimal integers are supported";
    } else if (digits > 0 && s[i] == '_') {
        size_t k = i;
        while (k < end && (is_digit((unsigned char)s[k]) || s[k] == '_'))
            k++;
        if (k == end)
            why = "underscores in integers are not supported";
    }
    if (why == NULL)
        return 1;
    adv_n(ps, at - start);
    return fail_here(ps, "%s", why);
}

/* true, false, a number, or a string that lost its quotes. */
static int parse_bare(struct parser *ps, struct mx_toml_value *v, bool in_array)
{
    size_t end = bare_end(ps), n = end - ps->pos;
    const char *w = ps->p + ps->pos;
    /* the input is not NUL-terminated: nothing at or past |n| is read */
    size_t sign = (n > 0 && (w[0] == '+' || w[0] == '-')) ? 1 : 0;
    unsigned char first = sign < n ? (unsigned char)w[sign] : 0;

    if ((n == 4 && memcmp(w, "true", 4) == 0) || (n == 5 && memcmp(w, "false", 5) == 0)) {
        v->b = n == 4;
        v->type = MX_TOML_BOOL;
        adv_n(ps, n);
        return 0;
    }
    if (n == sign + 3 && (memcmp(w + sign, "inf", 3) == 0 || memcmp(w + sign, "nan", 3) == 0)) {
        adv_n(ps, sign);
        return fail_here(ps, "floats are not supported");
    }
    if (is_digit(first) || (first == '.' && is_digit(peek_at(ps, sign + 1))) || n == sign) {
        int rc = parse_number(ps, v, end);
        if (rc <= 0)
            return rc;
    }
    if (in_array) {
        /* an array left open runs into the next line's key */
        size_t k = 0;
        while (k < n && is_key_char((unsigned char)w[k]))
            k++;
        size_t after = end;
        while (after < ps->len && (ps->p[after] == ' ' || ps->p[after] == '\t'))
            after++;
        if (k == n && after < ps->len && ps->p[after] == '=')
            return fail_here(ps,
                             "key '%.*s' inside an array: close the array opened at line %d "
                             "with ']'",
                             (int)n, w, ps->array_line);
    }
    return need_quotes(ps, end, in_array);
}

static int parse_value(struct parser *ps, struct mx_toml_value *v, bool in_array);

/*
 * Skips blanks and comments inside the array opened at |line|:|col|, and its
 * closing ']' when that comes next (|*closed|). Returns 0 or the error.
 */
static int array_skip(struct parser *ps, int line, int col, bool *closed)
{
    int rc = skip_blank(ps);
    if (rc)
        return rc;
    if (peek(ps) == -1)
        return fail_at(ps, line, col, "unterminated array");
    *closed = peek(ps) == ']';
    if (*closed)
        adv(ps);
    return 0;
}

static int parse_array(struct parser *ps, struct mx_toml_value *v)
{
    int open_line = ps->line, open_col = ps->col;
    struct mx_toml_value *items = NULL;
    size_t cnt = 0, cap = 0;
    char buf[32];
    bool closed;
    int rc;

    ps->array_line = open_line;
    adv(ps);
    for (;;) {
        rc = array_skip(ps, open_line, open_col, &closed);
        if (rc)
            goto fail;
        if (closed)
            break;
        if (cnt == MX_TOML_MAX_ITEMS) {
            rc = limit_at(ps, ps->line, ps->col, "more than %d items in one array",
                          MX_TOML_MAX_ITEMS);
            goto fail;
        }
        struct mx_toml_value item;
        memset(&item, 0, sizeof(item));
        rc = parse_value(ps, &item, true);
        if (rc)
            goto fail;
        if (item.type == MX_TOML_BOOL) {
            rc = fail_at(ps, item.line, item.col,
                         "arrays may hold only strings or integers, not booleans");
            value_clear(&item);
            goto fail;
        }
        if (cnt > 0 && item.type != items[0].type) {
            rc = fail_at(ps, item.line, item.col, "mixed types in array: expected %s, found %s",
                         mx_toml_type_name(items[0].type), mx_toml_type_name(item.type));
            value_clear(&item);
            goto fail;
        }
        if (cnt == cap) {
            cap = cap ? cap * 2 : 4;
            items = mx_xrealloc(items, cap * sizeof(*items));
        }
        items[cnt++] = item;
        rc = array_skip(ps, open_line, open_col, &closed);
        if (rc)
            goto fail;
        if (closed)
            break;
        if (peek(ps) == ',') {
            adv(ps);
            continue;
        }
        rc = fail_here(ps,
                       "expected ',' or ']' after array item, found %s (array opened at line %d)",
                       describe(ps, buf, sizeof(buf)), open_line);
        goto fail;
    }
    v->type = MX_TOML_ARRAY;
    v->items = items;
    v->item_cnt = cnt;
    return 0;
fail:
    for (size_t i = 0; i < cnt; i++)
        value_clear(&items[i]);
    free(items);
    return rc;
}

static int parse_value(struct parser *ps, struct mx_toml_value *v, bool in_array)
{
    char buf[32];
    int c = peek(ps);

    v->line = ps->line;
    v->col = ps->col;
    if (c == '"')
        return parse_string(ps, v);
    if (c == '\'')
        return fail_here(ps, "literal strings ('...') are not supported; use \"...\"");
    if (c == '[') {
        if (in_array)
            return fail_here(ps, "nested arrays are not supported");
        return parse_array(ps, v);
    }
    if (c == '{')
        return fail_here(ps, "inline tables are not supported; use a [table] header");
    if (!in_array && (c == -1 || c == '#' || c == '\n' || c == '\r'))
        return fail_here(ps, "missing value after '='");
    if (c > 0x20 && c != 0x7f && c != ',' && c != ']' && c != '=' && c != '}' && c != '#')
        return parse_bare(ps, v, in_array);
    return fail_here(ps, "expected a value, found %s", describe(ps, buf, sizeof(buf)));
}

static int parse_keyval(struct parser *ps)
{
    int line = ps->line, col = ps->col;
    char buf[32];
    struct mx_toml_value v;
    struct mx_toml_entry *e;
    int rc;

    char *key = scan_key(ps);
    int c = peek(ps);
    if (c == '.') {
        rc = fail_here(ps, "dotted keys are not supported; use a [table] header");
        goto fail;
    }
    if (c != ' ' && c != '\t' && c != '=' && c != -1 && c != '\n' && c != '\r' && c != '#') {
        rc = fail_here(ps, "invalid character %s in key", describe(ps, buf, sizeof(buf)));
        goto fail;
    }
    skip_ws(ps);
    if (peek(ps) != '=') {
        rc = fail_here(ps, "expected '=' after key '%s', found %s", key,
                       describe(ps, buf, sizeof(buf)));
        goto fail;
    }
    adv(ps);
    e = table_find(ps->cur, key);
    if (e) {
        rc = fail_at(ps, line, col, "duplicate key '%s', first defined at line %d", key, e->line);
        goto fail;
    }
    skip_ws(ps);
    memset(&v, 0, sizeof(v));
    ps->key = key;
    rc = parse_value(ps, &v, false);
    if (rc)
        goto fail;
    rc = end_of_line(ps, "value");
    if (rc) {
        value_clear(&v);
        goto fail;
    }
    rc = table_add(ps, ps->cur, key, line, col, &e);
    if (rc) {
        value_clear(&v);
        return rc;
    }
    MX_ASSERT(e != NULL);
    e->val = v;
    return 0;
fail:
    free(key);
    return rc;
}

struct segment {
    char *key;
    int line;
    int col;
};

/* Walks (and creates) the tables a header names; takes the keys of |segs|. */
static int open_table(struct parser *ps, struct segment *segs, size_t n, int line, int col)
{
    struct mx_toml_table *t = ps->root;
    for (size_t i = 0; i < n; i++) {
        struct mx_toml_entry *e = table_find(t, segs[i].key);
        if (e == NULL) {
            char *name =
                t->name[0] ? mx_xasprintf("%s.%s", t->name, segs[i].key) : mx_xstrdup(segs[i].key);
            int rc = table_add(ps, t, segs[i].key, segs[i].line, segs[i].col, &e);
            segs[i].key = NULL;
            if (rc) {
                free(name);
                return rc;
            }
            MX_ASSERT(e != NULL);
            e->val.type = MX_TOML_TABLE;
            e->val.line = line;
            e->val.col = col;
            e->val.table = table_new(name);
            free(name);
        } else if (e->val.type != MX_TOML_TABLE) {
            return fail_at(ps, segs[i].line, segs[i].col,
                           "'%s' is already defined as a value at line %d", segs[i].key, e->line);
        }
        t = e->val.table;
    }
    if (t->defined)
        return fail_at(ps, line, col, "duplicate table [%s], first defined at line %d", t->name,
                       t->line);
    t->defined = true;
    t->line = line;
    ps->cur = t;
    return 0;
}

static int parse_header(struct parser *ps)
{
    int line = ps->line, col = ps->col;
    struct segment segs[MX_TOML_MAX_DEPTH];
    size_t n = 0;
    char buf[32];
    int rc;

    adv(ps);
    if (peek(ps) == '[')
        return fail_at(ps, line, col, "arrays of tables ([[...]]) are not supported");
    for (;;) {
        skip_ws(ps);
        int c = peek(ps);
        if (!is_key_char(c)) {
            if (c == '"' || c == '\'')
                rc = fail_here(ps, "quoted keys are not supported; use bare keys (A-Za-z0-9_-)");
            else if (c == ']' && n == 0)
                rc = fail_here(ps, "empty table name");
            else
                rc = fail_here(ps, "expected a table name, found %s",
                               describe(ps, buf, sizeof(buf)));
            goto out;
        }
        if (n == MX_TOML_MAX_DEPTH) {
            rc = limit_at(ps, ps->line, ps->col, "table nesting deeper than %d levels",
                          MX_TOML_MAX_DEPTH);
            goto out;
        }
        segs[n].line = ps->line;
        segs[n].col = ps->col;
        segs[n].key = scan_key(ps);
        n++;
        c = peek(ps);
        if (c != ' ' && c != '\t' && c != '.' && c != ']' && c != -1 && c != '\n' && c != '\r') {
            rc =
                fail_here(ps, "invalid character %s in table name", describe(ps, buf, sizeof(buf)));
            goto out;
        }
        skip_ws(ps);
        c = peek(ps);
        if (c == '.') {
            adv(ps);
            continue;
        }
        if (c == ']') {
            adv(ps);
            break;
        }
        rc = fail_here(ps, "expected '.' or ']' in table header, found %s",
                       describe(ps, buf, sizeof(buf)));
        goto out;
    }
    rc = open_table(ps, segs, n, line, col);
    if (rc == 0)
        rc = end_of_line(ps, "table header");
out:
    for (size_t i = 0; i < n; i++)
        free(segs[i].key);
    return rc;
}

int mx_toml_parse(const char *file, const char *text, size_t len, struct mx_toml_table **out,
                  struct mx_diag *diag)
{
    return mx_toml_parse_shown(file, text, len, NULL, out, diag);
}

int mx_toml_parse_shown(const char *file, const char *text, size_t len, mx_toml_show_cb may_show,
                        struct mx_toml_table **out, struct mx_diag *diag)
{
    struct parser ps;
    char buf[32];
    int rc = 0;

    *out = NULL;
    if (len > MX_TOML_MAX_INPUT) {
        mx_diag_set(diag, file, 0, 0, "file is larger than %d bytes", MX_TOML_MAX_INPUT);
        return MX_ELIMIT;
    }
    memset(&ps, 0, sizeof(ps));
    ps.file = file;
    ps.p = text;
    ps.len = len;
    ps.line = 1;
    ps.col = 1;
    ps.diag = diag;
    ps.may_show = may_show;
    ps.root = table_new("");
    ps.cur = ps.root;
    /* A UTF-8 byte order mark is allowed by TOML 1.0 and invisible to editors. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        ps.pos = 3;
    while (rc == 0) {
        skip_ws(&ps);
        int c = peek(&ps);
        if (c == -1)
            break;
        if (c == '\r' && peek_at(&ps, 1) != '\n')
            rc = fail_here(&ps, "carriage return without a line feed");
        else if (c == '#' || c == '\n' || c == '\r')
            rc = end_of_line(&ps, "comment");
        else if (c == '[')
            rc = parse_header(&ps);
        else if (is_key_char(c))
            rc = parse_keyval(&ps);
        else if (c == '"' || c == '\'')
            rc = fail_here(&ps, "quoted keys are not supported; use bare keys (A-Za-z0-9_-)");
        else if (c == '=')
            rc = fail_here(&ps, "missing key before '='");
        else
            rc = fail_here(&ps, "expected a key or a [table] header, found %s",
                           describe(&ps, buf, sizeof(buf)));
    }
    if (rc) {
        table_free(ps.root);
        return rc;
    }
    *out = ps.root;
    return 0;
}
