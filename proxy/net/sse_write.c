/* SPDX-License-Identifier: MIT */
/* SSE responses to clients (sse_write.h). */
#include "err.h"
#include "req.h"
#include "sse.h"
#include "sse_write.h"

int mx_sse_start(struct mx_req *req)
{
    static const struct mx_hdr_out hdrs[] = {
        {"Content-Type", "text/event-stream"},
        {"Cache-Control", "no-cache"},
        {"X-Accel-Buffering", "no"},
    };
    return mx_req_start(req, 200, hdrs, sizeof(hdrs) / sizeof(hdrs[0]), -1);
}

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
