/* SPDX-License-Identifier: MIT */
/*
 * Length-carrying slices for wire data. A slice never owns its bytes and is
 * never assumed to be NUL-terminated.
 */
#ifndef MX_STR_H
#define MX_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

struct mx_str {
    const char *p;
    size_t len;
};

#define MX_STR_LIT(s) ((struct mx_str){(s), sizeof(s) - 1})

static inline struct mx_str mx_str_make(const char *p, size_t len)
{
    struct mx_str s = {p, len};
    return s;
}

static inline struct mx_str mx_str_cstr(const char *s)
{
    return mx_str_make(s, s ? strlen(s) : 0);
}

static inline bool mx_str_eq(struct mx_str a, struct mx_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static inline bool mx_str_caseeq(struct mx_str a, struct mx_str b)
{
    return a.len == b.len && (a.len == 0 || strncasecmp(a.p, b.p, a.len) == 0);
}

static inline bool mx_str_caseeq_cstr(struct mx_str a, const char *b)
{
    return mx_str_caseeq(a, mx_str_cstr(b));
}

static inline bool mx_str_has_prefix(struct mx_str a, struct mx_str prefix)
{
    return a.len >= prefix.len && (prefix.len == 0 || memcmp(a.p, prefix.p, prefix.len) == 0);
}

/* Drop leading and trailing spaces and tabs (RFC 9110 OWS). */
static inline struct mx_str mx_str_trim(struct mx_str s)
{
    while (s.len && (s.p[0] == ' ' || s.p[0] == '\t')) {
        s.p++;
        s.len--;
    }
    while (s.len && (s.p[s.len - 1] == ' ' || s.p[s.len - 1] == '\t'))
        s.len--;
    return s;
}

#endif
