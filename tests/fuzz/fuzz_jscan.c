/* SPDX-License-Identifier: MIT */
/*
 * The cheap JSON check against the full parser on arbitrary input: never
 * crashes; whatever it accepts, mx_rpc_parse accepts too, and each member
 * span it gives parses to exactly the member the full parser sees (and a
 * member it says is absent is absent).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "log.h"
#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_splice(struct mx_str text, const json_t *full, bool token, const char *name)
{
    struct mx_rpc_edits ed = {UINT64_C(9007199254740993), token, name};
    size_t len;
    char *out = mx_rpc_splice(text, &ed, &len);
    if (out == NULL)
        return;
    MX_ASSERT(strlen(out) == len);
    json_t *want = json_deep_copy(full);
    json_object_set_new(want, "id", json_integer((json_int_t)ed.id));
    json_t *params = json_object_get(want, "params");
    if (token)
        json_object_set_new(json_object_get(params, "_meta"), "progressToken",
                            json_integer((json_int_t)ed.id));
    if (name)
        json_object_set_new(params, "name", json_string(name));
    json_t *got = json_loads(out, JSON_REJECT_DUPLICATES, NULL);
    MX_ASSERT(got != NULL && json_equal(got, want));
    json_decref(got);
    json_decref(want);
    free(out);
}

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
    check_splice(text, full, false, NULL);
    check_splice(text, full, true, "t\u00e9\"\n<x>");
    json_decref(full);
    return 0;
}
