/* SPDX-License-Identifier: MIT */
/*
 * Cursor wire form: version, kind, count (big-endian 16 bits), then per
 * source its index and two big-endian 32-bit numbers, then the first MX_CURSOR_MAC_LEN bytes of
 * HMAC-SHA-256(key, everything before). base64url without padding (RFC 4648
 * §5): the text is safe in JSON and URLs as it is.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cursor.h"
#include "err.h"

#define ENTRY_LEN 9
#define HEAD_LEN  4
#define RAW_MAX   (HEAD_LEN + MX_CURSOR_MAX_SOURCES * ENTRY_LEN + MX_CURSOR_MAC_LEN)

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void mac(const uint8_t *key, const uint8_t *p, size_t len, uint8_t out[MX_CURSOR_MAC_LEN])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    HMAC(EVP_sha256(), key, MX_CURSOR_KEY_LEN, p, len, md, &mdlen);
    memcpy(out, md, MX_CURSOR_MAC_LEN);
}

static size_t b64_len(size_t n)
{
    return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

static void b64_encode(const uint8_t *p, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
    }
    out[o] = '\0';
}

static int b64_val(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '-')
        return 62;
    if (ch == '_')
        return 63;
    return -1;
}

/* Returns the byte count, or -1. Refuses non-zero padding bits so that one
 * cursor has one text. */
static long b64_decode(struct mx_str t, uint8_t *out, size_t cap)
{
    if (t.len % 4 == 1)
        return -1;
    size_t n = t.len / 4 * 3 + (t.len % 4 ? t.len % 4 - 1 : 0);
    if (n > cap)
        return -1;
    uint32_t acc = 0;
    size_t bits = 0, o = 0;
    for (size_t i = 0; i < t.len; i++) {
        int v = b64_val(t.p[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0)
        return -1;
    return (long)o;
}

int mx_cursor_seal(uint8_t *raw, size_t n, const uint8_t key[MX_CURSOR_KEY_LEN], char *out,
                   size_t cap)
{
    mac(key, raw, n, raw + n);
    n += MX_CURSOR_MAC_LEN;
    if (b64_len(n) + 1 > cap)
        return MX_ELIMIT;
    b64_encode(raw, n, out);
    return (int)b64_len(n);
}

long mx_cursor_open(struct mx_str text, const uint8_t key[MX_CURSOR_KEY_LEN], uint8_t *raw,
                    size_t cap)
{
    uint8_t want[MX_CURSOR_MAC_LEN];
    if (text.len == 0 || text.len > b64_len(cap))
        return MX_EINVAL;
    long n = b64_decode(text, raw, cap);
    if (n < 1 + MX_CURSOR_MAC_LEN)
        return MX_EINVAL;
    size_t body = (size_t)n - MX_CURSOR_MAC_LEN;
    mac(key, raw, body, want);
    if (CRYPTO_memcmp(want, raw + body, MX_CURSOR_MAC_LEN) != 0)
        return MX_EINVAL;
    return (long)body;
}

int mx_cursor_encode(const struct mx_cursor *c, const uint8_t key[MX_CURSOR_KEY_LEN], char *out,
                     size_t cap)
{
    uint8_t raw[RAW_MAX];
    size_t n = 0;
    if (c->cnt > MX_CURSOR_MAX_SOURCES)
        return MX_EINVAL;
    raw[n++] = MX_CURSOR_VERSION;
    raw[n++] = c->kind;
    raw[n++] = (uint8_t)(c->cnt >> 8);
    raw[n++] = (uint8_t)c->cnt;
    for (size_t i = 0; i < c->cnt; i++) {
        if (i && c->v[i].src <= c->v[i - 1].src)
            return MX_EINVAL;
        raw[n++] = c->v[i].src;
        put32(raw + n, c->v[i].gen);
        put32(raw + n + 4, c->v[i].pos);
        n += 8;
    }
    return mx_cursor_seal(raw, n, key, out, cap);
}

int mx_cursor_decode(struct mx_str text, const uint8_t key[MX_CURSOR_KEY_LEN],
                     struct mx_cursor *out)
{
    uint8_t raw[RAW_MAX];
    long n = mx_cursor_open(text, key, raw, sizeof(raw));
    if (n < HEAD_LEN || raw[0] != MX_CURSOR_VERSION)
        return MX_EINVAL;
    size_t cnt = (size_t)raw[2] << 8 | raw[3];
    if (cnt > MX_CURSOR_MAX_SOURCES || (size_t)n != HEAD_LEN + cnt * ENTRY_LEN)
        return MX_EINVAL;
    memset(out, 0, sizeof(*out));
    out->kind = raw[1];
    out->cnt = (uint16_t)cnt;
    for (size_t i = 0; i < cnt; i++) {
        const uint8_t *e = raw + HEAD_LEN + i * ENTRY_LEN;
        out->v[i].src = e[0];
        out->v[i].gen = get32(e + 1);
        out->v[i].pos = get32(e + 5);
        if (i && out->v[i].src <= out->v[i - 1].src)
            return MX_EINVAL;
    }
    return 0;
}
