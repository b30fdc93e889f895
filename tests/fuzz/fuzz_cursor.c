/* SPDX-License-Identifier: MIT */
/*
 * Cursor decoding on arbitrary text: never crashes, and whatever it accepts
 * encodes back to exactly the same text (one cursor, one text). The first
 * byte picks the key so inputs made with the test key reach past the MAC.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cursor.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t fuzz_key[MX_CURSOR_KEY_LEN] = "mcplex-fuzz-cursor-key-000000000";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mx_cursor c;
    char text[MX_CURSOR_TEXT_MAX];
    struct mx_str in = mx_str_make((const char *)data, size);
    if (mx_cursor_decode(in, fuzz_key, &c) == 0) {
        int n = mx_cursor_encode(&c, fuzz_key, text, sizeof(text));
        MX_ASSERT(n >= 0 && (size_t)n == size && memcmp(text, data, size) == 0);
    }
    return 0;
}
