/* SPDX-License-Identifier: MIT */
/*
 * SSE decoder: any bytes, split at a point chosen by the input, must decode
 * to the same events as the unsplit stream, within the caps.
 */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int collect(const struct mx_sse_event *ev, void *ud)
{
    struct mx_buf *b = ud;
    mx_buf_append(b, ev->event.p, ev->event.len);
    mx_buf_append(b, "|", 1);
    mx_buf_append(b, ev->data.p, ev->data.len);
    mx_buf_append(b, "|", 1);
    mx_buf_append(b, ev->id.p, ev->id.len);
    mx_buf_printf(b, "|%ld\n", ev->retry_ms);
    return 0;
}

static int decode(const char *p, size_t len, size_t split, struct mx_buf *out)
{
    struct mx_sse_decoder d;
    mx_sse_decoder_init(&d, 4096, collect, out);
    int rc = mx_sse_decode(&d, p, split);
    if (rc == 0)
        rc = mx_sse_decode(&d, p + split, len - split);
    mx_sse_decoder_clear(&d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t split = data[0] % size;
    const char *p = (const char *)data + 1;
    size_t len = size - 1;
    if (split > len)
        split = len;
    struct mx_buf a, b;
    mx_buf_init(&a, 1 << 22);
    mx_buf_init(&b, 1 << 22);
    int ra = decode(p, len, 0, &a);
    int rb = decode(p, len, split, &b);
    if (ra == 0 && rb == 0) {
        MX_ASSERT(mx_buf_len(&a) == mx_buf_len(&b));
        MX_ASSERT(memcmp(mx_buf_data(&a), mx_buf_data(&b), mx_buf_len(&a)) == 0);
    }
    mx_buf_clear(&a);
    mx_buf_clear(&b);
    return 0;
}
