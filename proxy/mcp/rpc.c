/* SPDX-License-Identifier: MIT */
/* JSON-RPC 2.0 message helpers. */
#include <string.h>

#include "rpc.h"

enum mx_rpc_kind mx_rpc_classify(const json_t *msg)
{
    if (!json_is_object(msg))
        return MX_RPC_INVALID;
    const json_t *v = json_object_get(msg, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
        return MX_RPC_INVALID;
    const json_t *method = json_object_get(msg, "method");
    const json_t *id = json_object_get(msg, "id");
    if (method) {
        if (!json_is_string(method))
            return MX_RPC_INVALID;
        if (id == NULL)
            return MX_RPC_NOTIFICATION;
        return json_is_string(id) || json_is_integer(id) ? MX_RPC_REQUEST : MX_RPC_INVALID;
    }
    if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        return MX_RPC_RESPONSE;
    return MX_RPC_INVALID;
}

json_t *mx_rpc_parse(struct mx_str body)
{
    json_error_t err;
    return json_loadb(body.p, body.len, JSON_REJECT_DUPLICATES, &err);
}

json_t *mx_rpc_error_new(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (data)
        json_object_set_new(e, "data", data);
    json_t *r = json_pack("{s:s}", "jsonrpc", "2.0");
    if (id)
        json_object_set_new(r, "id", json_deep_copy(id));
    json_object_set_new(r, "error", e);
    return r;
}

char *mx_rpc_dump(const json_t *msg)
{
    return json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
}
