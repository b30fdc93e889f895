/* SPDX-License-Identifier: MIT */
/*
 * The cheap JSON check against the full parser on arbitrary input: never
 * crashes; whatever it accepts, mx_rpc_parse accepts too, and each member
 * span it gives parses to exactly the member the full parser sees (and a
 * member it says is absent is absent).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jscan.h"
#include "log.h"
#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const keys[] = {"jsonrpc", "id", "result", "error", "method", "a"};
    enum { N = sizeof(keys) / sizeof(keys[0]) };
    struct mx_str text = mx_str_make((const char *)data, size);
    struct mx_str vals[N];
    bool ok = mx_jscan_object(text, keys, N, vals);
    (void)mx_jscan_has_newline(text);
    if (!ok)
        return 0;
    json_t *full = mx_rpc_parse(text);
    MX_ASSERT(full != NULL && json_is_object(full));
    for (size_t i = 0; i < N; i++) {
        json_t *member = json_object_get(full, keys[i]);
        if (vals[i].p == NULL) {
            MX_ASSERT(member == NULL);
            continue;
        }
        MX_ASSERT(member != NULL);
        json_error_t err;
        json_t *v =
            json_loadb(vals[i].p, vals[i].len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
        MX_ASSERT(v != NULL && json_equal(v, member));
        /* the span is the value alone: no space around it */
        MX_ASSERT(vals[i].len > 0 && vals[i].p[0] != ' ' && vals[i].p[vals[i].len - 1] != ' ');
        json_decref(v);
    }
    json_decref(full);
    return 0;
}
