/* SPDX-License-Identifier: MIT */
/*
 * The stateless revision's request checks on arbitrary input: three header
 * lines (MCP-Protocol-Version, Mcp-Method, Mcp-Name; an empty line means
 * absent) and a JSON body. Never crashes; an accepted request names a
 * supported version and its method equals Mcp-Method; a refusal carries a
 * 4xx status and a code; a decoded header value fits its buffer. The same
 * body is checked once more as if it came over stdio (no headers).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "revision.h"
#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next line of |*rest| (without the newline). */
static struct mx_str next_line(struct mx_str *rest)
{
    const char *nl = memchr(rest->p, '\n', rest->len);
    size_t n = nl ? (size_t)(nl - rest->p) : rest->len;
    struct mx_str line = mx_str_make(rest->p, n);
    rest->p += nl ? n + 1 : n;
    rest->len -= nl ? n + 1 : n;
    return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mx_str rest = mx_str_make((const char *)data, size);
    struct mx_str v = next_line(&rest), m = next_line(&rest), n = next_line(&rest);
    char out[64];
    int dn = mx_rev_header_decode(n, out, sizeof(out));
    MX_ASSERT(dn == MX_EINVAL || dn == MX_ELIMIT || (dn >= 0 && (size_t)dn < sizeof(out)));
    json_t *msg = mx_rpc_parse(rest);
    if (msg == NULL)
        return 0;
    struct mx_rev_hdrs h = {v.len ? &v : NULL, m.len ? &m : NULL, n.len ? &n : NULL, false, false};
    (void)mx_rev_is_modern(msg, &h);
    struct mx_rev_error err;
    if (json_is_object(msg) && mx_rev_check(msg, &h, &err) == 0) {
        json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
        MX_ASSERT(mx_rev_version_supported(
            json_string_value(json_object_get(meta, MX_REV_META_VERSION))));
        MX_ASSERT(m.len == strlen(json_string_value(json_object_get(msg, "method"))));
    } else if (json_is_object(msg)) {
        MX_ASSERT(err.status >= 400 && err.status < 500 && err.code < 0);
        json_decref(err.data);
    }
    /* the same body over stdio: no headers, _meta alone counts */
    struct mx_rev_hdrs none = {NULL, NULL, NULL, false, true};
    if (json_is_object(msg) && mx_rev_check(msg, &none, &err) == 0) {
        json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
        MX_ASSERT(mx_rev_version_supported(
            json_string_value(json_object_get(meta, MX_REV_META_VERSION))));
    } else if (json_is_object(msg)) {
        MX_ASSERT(err.status >= 400 && err.status < 500 && err.code < 0);
        json_decref(err.data);
    }
    json_decref(msg);
    return 0;
}
