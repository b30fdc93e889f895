/* SPDX-License-Identifier: MIT */
/*
 * Opaque list cursors for /mcp: which list, and for each upstream in it the
 * generation of its list and how many of its items the client has seen.
 * Encoded as base64url (no padding) of a compact binary form with a version
 * byte and a truncated HMAC-SHA-256 under a key only this process knows, so
 * a cursor cannot be forged, and one from an earlier run is refused. Pure:
 * the key comes from the caller. Decoding refuses anything but the exact
 * canonical text of a cursor this module made with that key.
 */
#ifndef MX_CURSOR_H
#define MX_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "str.h"

#define MX_CURSOR_VERSION 2
/* Every upstream slot (MX_GATEWAY_MAX_SLOTS): a source index is one byte,
 * so all 256 of them, and the count takes two bytes. */
#define MX_CURSOR_MAX_SOURCES 256
#define MX_CURSOR_KEY_LEN     32
#define MX_CURSOR_MAC_LEN     8
/* Longest text: base64url of 4 + 256 * 9 + 8 bytes, and a NUL. */
#define MX_CURSOR_TEXT_MAX 3089

struct mx_cursor_pos {
    uint8_t src;  /* upstream index */
    uint32_t gen; /* generation of that upstream's list */
    uint32_t pos; /* items of that upstream already returned */
};

struct mx_cursor {
    uint8_t kind; /* enum mx_agg_kind */
    uint16_t cnt; /* entries in |v|, sources strictly increasing */
    struct mx_cursor_pos v[MX_CURSOR_MAX_SOURCES];
};

/*
 * Write the text form of |c| and a NUL to |out| (|cap| bytes, at least
 * MX_CURSOR_TEXT_MAX is always enough). Returns its length, or MX_EINVAL when
 * the sources are not strictly increasing or more than MX_CURSOR_MAX_SOURCES,
 * MX_ELIMIT when |cap| is too small.
 */
int mx_cursor_encode(const struct mx_cursor *c, const uint8_t key[MX_CURSOR_KEY_LEN], char *out,
                     size_t cap);

/*
 * Parse |text| into |out|. Returns 0, or MX_EINVAL for anything that is not
 * the canonical encoding of a cursor made with |key| (bad characters or
 * length, unknown version, sources out of order, wrong MAC).
 */
int mx_cursor_decode(struct mx_str text, const uint8_t key[MX_CURSOR_KEY_LEN],
                     struct mx_cursor *out);

/*
 * The seal under both cursors and task ids (taskid.h): append the first
 * MX_CURSOR_MAC_LEN bytes of HMAC-SHA-256 under |key| to the |n| bytes of
 * |raw| (which has that much room after them) and write the base64url text
 * (no padding) and a NUL to |out| (|cap| bytes). Returns the text's length,
 * or MX_ELIMIT when |cap| is too small. The first byte of |raw| tells the
 * kinds of sealed thing apart.
 */
int mx_cursor_seal(uint8_t *raw, size_t n, const uint8_t key[MX_CURSOR_KEY_LEN], char *out,
                   size_t cap);

/*
 * Undo mx_cursor_seal: decode |text| into |raw| (|cap| bytes) and check its
 * MAC. Returns the length before the MAC (at least 1), or MX_EINVAL for text
 * that is not canonical base64url, too long for |cap|, or wrongly sealed.
 */
long mx_cursor_open(struct mx_str text, const uint8_t key[MX_CURSOR_KEY_LEN], uint8_t *raw,
                    size_t cap);

#endif
