/* SPDX-License-Identifier: MIT */
/*
 * The cheap JSON check (jscan.h): one pass over the bytes with an explicit
 * stack, RFC 8259's grammar with the full parser's extra refusals (jansson
 * with JSON_REJECT_DUPLICATES: invalid UTF-8, UTF-8 or \u surrogates that
 * do not pair, \u0000, duplicate keys at any depth, integers outside int64,
 * reals that overflow). What it cannot decide in bounded work it declines.
 */
#include "jscan.h"

#include <stdint.h>
#include <string.h>

#include "utf8.h"

struct scan {
    const unsigned char *p, *end;
    int depth;
    unsigned char stack[MX_JSCAN_MAX_DEPTH]; /* '{' or '[' */
    size_t key_base[MX_JSCAN_MAX_DEPTH];     /* where an object's keys start in keys[] */
    struct mx_str keys[MX_JSCAN_MAX_KEYS];   /* the keys of the open objects */
    size_t nkeys;
};

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* One UTF-8 sequence of two to four bytes at s->p: well formed, shortest
 * form, no surrogate, at most U+10FFFF. */
static bool utf8_seq(struct scan *s)
{
    const unsigned char *p = s->p;
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07u;
    } else {
        return false;
    }
    if ((size_t)(s->end - p) < n)
        return false;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0u) != 0x80u)
            return false;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
        return false;
    if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))
        return false;
    s->p += n;
    return true;
}

/* Four hex digits after "\u" at s->p; advances past them. */
static bool hex4(struct scan *s, uint32_t *out)
{
    if (s->end - s->p < 4)
        return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = mx_hex_digit(s->p[i]);
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    s->p += 4;
    *out = v;
    return true;
}

/* The escape after a backslash at s->p. */
static bool escape(struct scan *s)
{
    if (s->p == s->end)
        return false;
    unsigned char c = *s->p++;
    if (strchr("\"\\/bfnrt", c) != NULL && c != '\0')
        return true;
    uint32_t cp, lo;
    if (c != 'u' || !hex4(s, &cp) || cp == 0)
        return false; /* \u0000: jansson refuses it without JSON_ALLOW_NUL */
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u')
            return false;
        s->p += 2;
        if (!hex4(s, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return false;
    }
    return true;
}

/* A string at s->p (its opening quote): its contents in |*out|, and
 * whether it holds an escape. */
static bool string(struct scan *s, struct mx_str *out, bool *escaped)
{
    const unsigned char *start = ++s->p;
    *escaped = false;
    while (s->p < s->end) {
        unsigned char c = *s->p;
        if (c == '"') {
            *out = mx_str_make((const char *)start, (size_t)(s->p - start));
            s->p++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            s->p++;
            *escaped = true;
            if (!escape(s))
                return false;
        } else if (c >= 0x80) {
            if (!utf8_seq(s))
                return false;
        } else {
            s->p++;
        }
    }
    return false;
}

static size_t digits(struct scan *s)
{
    const unsigned char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return (size_t)(s->p - start);
}

/*
 * A number at s->p. Declined when it might not fit: an integer of more
 * than 18 digits (int64 holds every one of 18), a real whose magnitude
 * could reach DBL_MAX (more than 300 integer digits, or an exponent over
 * 250 with more than 50 of them). Underflow is no error to jansson.
 */
static bool number(struct scan *s)
{
    if (*s->p == '-')
        s->p++;
    if (s->p == s->end)
        return false;
    size_t int_digits;
    if (*s->p == '0') {
        s->p++;
        int_digits = 1;
    } else {
        int_digits = digits(s);
        if (int_digits == 0)
            return false;
    }
    bool real = false;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (digits(s) == 0)
            return false;
        real = true;
    }
    long exp = 0;
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        bool neg = false;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            neg = *s->p++ == '-';
        const unsigned char *e = s->p;
        size_t n = digits(s);
        if (n == 0)
            return false;
        for (size_t i = 0; i < n && exp < 100000; i++)
            exp = exp * 10 + (e[i] - '0');
        if (neg)
            exp = -exp;
        real = true;
    }
    if (!real)
        return int_digits <= 18;
    if (exp > 250)
        return false;
    return int_digits <= (exp > 0 ? 50 : 300);
}

static bool literal(struct scan *s, const char *word, size_t len)
{
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, word, len) != 0)
        return false;
    s->p += len;
    return true;
}

static bool scalar(struct scan *s)
{
    struct mx_str str;
    bool escaped;
    switch (*s->p) {
    case '"':
        return string(s, &str, &escaped);
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    default:
        return (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) && number(s);
    }
}

static bool push(struct scan *s, unsigned char kind)
{
    if (s->depth == MX_JSCAN_MAX_DEPTH)
        return false;
    s->stack[s->depth] = kind;
    s->key_base[s->depth] = s->nkeys;
    s->depth++;
    s->p++;
    return true;
}

static void pop(struct scan *s)
{
    s->depth--;
    s->nkeys = s->key_base[s->depth];
    s->p++;
}

/* A key of the innermost object: plain (unescaped) and not seen in it. */
static bool key(struct scan *s, struct mx_str *out)
{
    bool escaped;
    if (s->p == s->end || *s->p != '"' || !string(s, out, &escaped) || escaped)
        return false;
    for (size_t i = s->key_base[s->depth - 1]; i < s->nkeys; i++) {
        if (mx_str_eq(s->keys[i], *out))
            return false;
    }
    if (s->nkeys == MX_JSCAN_MAX_KEYS)
        return false;
    s->keys[s->nkeys++] = *out;
    return true;
}

bool mx_jscan_object(struct mx_str text, const char *const *keys, size_t n, struct mx_str *vals)
{
    struct scan s;
    enum { VALUE, KEY, AFTER } st = VALUE;
    int want = -1; /* the wanted top-level member being read */
    const unsigned char *vstart = NULL;
    s.p = (const unsigned char *)text.p;
    s.end = s.p + text.len;
    s.depth = 0;
    s.nkeys = 0;
    for (size_t i = 0; i < n; i++)
        vals[i] = mx_str_make(NULL, 0);
    skip_ws(&s);
    if (s.p == s.end || *s.p != '{')
        return false;
    for (;;) {
        skip_ws(&s);
        if (st == KEY) {
            struct mx_str k;
            if (!key(&s, &k))
                return false;
            if (s.depth == 1) {
                for (size_t i = 0; i < n; i++) {
                    if (mx_str_eq(k, mx_str_cstr(keys[i])))
                        want = (int)i;
                }
            }
            skip_ws(&s);
            if (s.p == s.end || *s.p != ':')
                return false;
            s.p++;
            skip_ws(&s);
            if (s.depth == 1)
                vstart = s.p;
            st = VALUE;
            continue;
        }
        if (s.p == s.end)
            return st == AFTER && s.depth == 0;
        unsigned char c = *s.p;
        if (st == VALUE) {
            if (c == '{' || c == '[') {
                if (!push(&s, c))
                    return false;
                skip_ws(&s);
                if (s.p < s.end && *s.p == (c == '{' ? '}' : ']')) {
                    pop(&s);
                } else {
                    st = c == '{' ? KEY : VALUE;
                    continue;
                }
            } else if (!scalar(&s)) {
                return false;
            }
        } else if (s.depth == 0) {
            return false; /* something after the object */
        } else if (c == ',') {
            s.p++;
            st = s.stack[s.depth - 1] == '{' ? KEY : VALUE;
            continue;
        } else if (c == (s.stack[s.depth - 1] == '{' ? '}' : ']')) {
            pop(&s);
        } else {
            return false;
        }
        /* a value ended */
        st = AFTER;
        if (s.depth == 1 && want >= 0) {
            vals[want] = mx_str_make((const char *)vstart, (size_t)(s.p - vstart));
            want = -1;
        }
    }
}

bool mx_jscan_has_newline(struct mx_str text)
{
    return memchr(text.p, '\n', text.len) != NULL || memchr(text.p, '\r', text.len) != NULL;
}
