/* SPDX-License-Identifier: MIT */
/*
 * Internals of struct mx_req shared by req.c and the protocol front ends
 * (http1.c, http2.c). Routing and the MCP layer use req.h only.
 */
#ifndef MX_REQ_INT_H
#define MX_REQ_INT_H

#include <stdbool.h>

#include "buf.h"
#include "req.h"

/* What a protocol front end does with a response. */
struct mx_req_proto {
    int (*start)(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                 long long body_len);
    int (*write)(struct mx_req *req, const void *p, size_t len);
    void (*end)(struct mx_req *req);
    void (*reset)(struct mx_req *req);
};

struct mx_req {
    const struct mx_req_proto *proto;
    void *conn; /* the front end's connection or stream; back-pointer, not owned */
    unsigned long id;
    int version; /* 10, 11 or 20 */
    char peer[64];

    struct mx_buf url;  /* request target as received */
    struct mx_buf head; /* header names and values, back to back */
    struct mx_buf body;
    struct mx_header *headers; /* slices into head, valid once the head is complete */
    size_t header_cnt;
    size_t header_cap;
    size_t *header_offs; /* name_off, name_len, value_off, value_len per header */
    char method[16];

    mx_req_cb on_drain;
    mx_req_cb on_abort;
    void *data;
    bool started;
    bool ended;
    /* headers every response of the request carries (mx_req_add_response_header) */
    char *extra_name[MX_REQ_EXTRA_MAX];
    char *extra_value[MX_REQ_EXTRA_MAX];
    size_t extra_cnt;
};

/* A new request for |proto| on |conn|; caps for the head and the body. */
struct mx_req *mx_req_new(const struct mx_req_proto *proto, void *conn, size_t max_head,
                          size_t max_body);
void mx_req_free(struct mx_req *req);

/* Header accumulation for parsers that deliver names and values in pieces. */
int mx_req_add_header_piece(struct mx_req *req, bool is_name, const char *p, size_t len);
/* Turn the accumulated pieces into slices; call once the head is complete. */
void mx_req_finish_head(struct mx_req *req);

/* Tell the handler the client is gone (once, and only before end). */
void mx_req_notify_abort(struct mx_req *req);
void mx_req_notify_drain(struct mx_req *req);

/* Live request objects, for leak checks in tests. */
size_t mx_req_live_cnt(void);

#endif
