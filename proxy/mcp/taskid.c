/* SPDX-License-Identifier: MIT */
/*
 * Task id wire form: MX_TASKID_VERSION, the alias's length (one byte) and
 * bytes, the upstream task id's length (big-endian 16 bits) and bytes, then
 * the seal of cursor.c (truncated HMAC-SHA-256, base64url).
 */
#include <string.h>

#include "err.h"
#include "taskid.h"

#define RAW_MAX (1 + 1 + MX_TASKID_ALIAS_MAX + 2 + MX_TASKID_UP_MAX + MX_CURSOR_MAC_LEN)

int mx_taskid_encode(struct mx_str alias, struct mx_str up, const uint8_t key[MX_CURSOR_KEY_LEN],
                     char *out, size_t cap)
{
    uint8_t raw[RAW_MAX];
    size_t n = 0;
    if (alias.len == 0 || alias.len > MX_TASKID_ALIAS_MAX || up.len == 0 ||
        up.len > MX_TASKID_UP_MAX || memchr(alias.p, '\0', alias.len) || memchr(up.p, '\0', up.len))
        return MX_EINVAL;
    raw[n++] = MX_TASKID_VERSION;
    raw[n++] = (uint8_t)alias.len;
    memcpy(raw + n, alias.p, alias.len);
    n += alias.len;
    raw[n++] = (uint8_t)(up.len >> 8);
    raw[n++] = (uint8_t)up.len;
    memcpy(raw + n, up.p, up.len);
    n += up.len;
    return mx_cursor_seal(raw, n, key, out, cap);
}

int mx_taskid_decode(struct mx_str text, const uint8_t key[MX_CURSOR_KEY_LEN],
                     struct mx_taskid *out)
{
    uint8_t raw[RAW_MAX];
    long n = mx_cursor_open(text, key, raw, sizeof(raw));
    if (n < 2 || raw[0] != MX_TASKID_VERSION)
        return MX_EINVAL;
    size_t alen = raw[1];
    if (alen == 0 || alen > MX_TASKID_ALIAS_MAX || (size_t)n < 2 + alen + 2)
        return MX_EINVAL;
    const uint8_t *u = raw + 2 + alen;
    size_t ulen = (size_t)u[0] << 8 | u[1];
    if (ulen == 0 || ulen > MX_TASKID_UP_MAX || (size_t)n != 2 + alen + 2 + ulen ||
        memchr(raw + 2, '\0', alen) || memchr(u + 2, '\0', ulen))
        return MX_EINVAL;
    memcpy(out->alias, raw + 2, alen);
    out->alias[alen] = '\0';
    memcpy(out->up, u + 2, ulen);
    out->up[ulen] = '\0';
    out->up_len = ulen;
    return 0;
}
