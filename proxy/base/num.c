/* SPDX-License-Identifier: MIT */
/* Bounded parsing: wire and config numbers never go through atoi. */
#include "err.h"
#include "num.h"

int mx_num_parse(const char *p, size_t len, int64_t min, int64_t max, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    uint64_t v = 0;
    /* magnitude limit for the sign we parse: |INT64_MIN| fits in uint64 */
    uint64_t lim;

    if (len == 0)
        return MX_EINVAL;
    if (p[0] == '-') {
        neg = 1;
        i = 1;
    } else if (p[0] == '+') {
        i = 1;
    }
    if (i == len)
        return MX_EINVAL;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return MX_EINVAL;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (lim - d) / 10)
            return MX_ELIMIT;
        v = v * 10 + d;
    }
    int64_t r;
    if (neg)
        r = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        r = (int64_t)v;
    if (r < min || r > max)
        return MX_ELIMIT;
    *out = r;
    return 0;
}

int mx_duration_parse(const char *p, size_t len, int64_t max_ms, int64_t *out_ms)
{
    size_t n = 0;
    int64_t v, mult;
    int rc;

    while (n < len && p[n] >= '0' && p[n] <= '9')
        n++;
    if (n == 0)
        return MX_EINVAL;
    const char *u = p + n;
    size_t ulen = len - n;
    if (ulen == 0) {
        /* a bare number is allowed only for zero: "0" */
        mult = 0;
    } else if (ulen == 2 && u[0] == 'm' && u[1] == 's') {
        mult = 1;
    } else if (ulen == 1 && u[0] == 's') {
        mult = 1000;
    } else if (ulen == 1 && u[0] == 'm') {
        mult = 60000;
    } else if (ulen == 1 && u[0] == 'h') {
        mult = 3600000;
    } else {
        return MX_EINVAL;
    }
    rc = mx_num_parse(p, n, 0, INT64_MAX, &v);
    if (rc)
        return rc;
    if (mult == 0) {
        if (v != 0)
            return MX_EINVAL;
        *out_ms = 0;
        return 0;
    }
    if (v > max_ms / mult)
        return MX_ELIMIT;
    *out_ms = v * mult;
    return 0;
}
