/* SPDX-License-Identifier: MIT */
/* One SSE event onto a streamed response. */
#include "err.h"
#include "req.h"
#include "sse.h"

int mx_sse_write_event(struct mx_req *req, struct mx_str data, size_t cap)
{
    struct mx_buf b;
    mx_buf_init(&b, cap);
    int rc = mx_sse_encode(&b, "message", NULL, data);
    if (rc == 0)
        rc = mx_req_write(req, mx_buf_data(&b), mx_buf_len(&b));
    mx_buf_clear(&b);
    return rc;
}
