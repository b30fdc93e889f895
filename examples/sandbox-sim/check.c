/* SPDX-License-Identifier: MIT */
/* Header value checks for sandbox-sim: media types and credentials. */
#include <openssl/crypto.h>

#include "check.h"
#include "guard.h"

/* The next |sep|-separated item of |*rest|, trimmed; advances |*rest|. */
static struct mx_str next_item(struct mx_str *rest, char sep)
{
    const char *p = memchr(rest->p, sep, rest->len);
    struct mx_str item;
    if (p == NULL) {
        item = *rest;
        *rest = mx_str_make(rest->p + rest->len, 0);
    } else {
        item = mx_str_make(rest->p, (size_t)(p - rest->p));
        *rest = mx_str_make(p + 1, rest->len - item.len - 1);
    }
    return mx_str_trim(item);
}

/* "type/subtype; q=0.9" -> "type/subtype" */
static struct mx_str media_type(struct mx_str v)
{
    const char *semi = memchr(v.p, ';', v.len);
    if (semi)
        v.len = (size_t)(semi - v.p);
    return mx_str_trim(v);
}

bool mx_sim_accept_has(struct mx_str accept, const char *type)
{
    struct mx_str rest = accept;
    while (rest.len) {
        if (mx_str_caseeq_cstr(media_type(next_item(&rest, ',')), type))
            return true;
    }
    return false;
}

bool mx_sim_ctype_is(struct mx_str ctype, const char *type)
{
    return mx_str_caseeq_cstr(media_type(ctype), type);
}

bool mx_sim_secret_eq(struct mx_str got, const unsigned char *want, size_t want_len)
{
    /* The length is not secret here; the bytes are. */
    if (want_len == 0 || got.len != want_len)
        return false;
    return CRYPTO_memcmp(got.p, want, want_len) == 0;
}

bool mx_sim_bearer_ok(struct mx_str authz, const unsigned char *want, size_t want_len)
{
    static const char scheme[] = "Bearer";
    size_t n = sizeof(scheme) - 1;
    /* RFC 9110 §11.1: the scheme is case-insensitive; RFC 6750 §2.1: one space. */
    if (authz.len <= n || !mx_str_caseeq(mx_str_make(authz.p, n), mx_str_make(scheme, n)) ||
        authz.p[n] != ' ')
        return false;
    return mx_sim_secret_eq(mx_str_trim(mx_str_make(authz.p + n + 1, authz.len - n - 1)), want,
                            want_len);
}

bool mx_sim_cookie_ok(struct mx_str cookies, const char *name, const unsigned char *want,
                      size_t want_len)
{
    struct mx_str rest = cookies;
    struct mx_str want_name = mx_str_cstr(name);
    while (rest.len) {
        struct mx_str pair = next_item(&rest, ';');
        const char *eq = memchr(pair.p, '=', pair.len);
        if (eq == NULL)
            continue;
        size_t nlen = (size_t)(eq - pair.p);
        struct mx_str n = mx_str_trim(mx_str_make(pair.p, nlen));
        struct mx_str v = mx_str_trim(mx_str_make(eq + 1, pair.len - nlen - 1));
        if (!mx_str_eq(n, want_name))
            continue;
        if (v.len >= 2 && v.p[0] == '"' && v.p[v.len - 1] == '"')
            v = mx_str_make(v.p + 1, v.len - 2);
        if (mx_sim_secret_eq(v, want, want_len))
            return true;
    }
    return false;
}

bool mx_sim_host_origin_ok(const struct mx_str *host, const struct mx_str *origin)
{
    static const struct mx_str schemes[] = {{"http://", 7}, {"https://", 8}};
    if (host == NULL || !mx_guard_host_is_loopback(*host))
        return false;
    if (origin == NULL)
        return true;
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        struct mx_str s = schemes[i];
        if (origin->len > s.len && mx_str_caseeq(mx_str_make(origin->p, s.len), s))
            return mx_guard_host_is_loopback(mx_str_make(origin->p + s.len, origin->len - s.len));
    }
    return false;
}
