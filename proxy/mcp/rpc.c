/* SPDX-License-Identifier: MIT */
/* JSON-RPC 2.0 message helpers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "jscan.h"
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

json_t *mx_rpc_own(json_t *parent, const char *key, bool make)
{
    json_t *v = json_object_get(parent, key);
    json_t *own;
    if (json_is_object(v))
        own = json_copy(v);
    else if (make)
        own = json_object();
    else
        return NULL;
    json_object_set_new(parent, key, own);
    return own;
}

/* One change of a text: |len| bytes at |at| become |with|. */
struct cut {
    const char *at;
    size_t len;
    const char *with;
    size_t with_len;
};

static bool member(struct mx_str obj, const char *key, struct mx_str *out)
{
    const char *const keys[] = {key};
    return mx_jscan_object(obj, keys, 1, out) && out->p != NULL;
}

char *mx_rpc_splice(struct mx_str text, const struct mx_rpc_edits *ed, size_t *len)
{
    static const char *const top_keys[] = {"id", "params"};
    static const char *const param_keys[] = {"_meta", "name"};
    struct mx_str top[2], par[2], tok;
    struct cut cuts[3];
    size_t n = 0;
    char id[24];
    int id_len = snprintf(id, sizeof(id), "%" PRIu64, ed->id);
    char *name = NULL;

    if (!mx_jscan_object(text, top_keys, 2, top) || top[0].p == NULL)
        return NULL;
    cuts[n++] = (struct cut){top[0].p, top[0].len, id, (size_t)id_len};
    if (ed->token || ed->name) {
        if (top[1].p == NULL || !mx_jscan_object(top[1], param_keys, 2, par))
            return NULL;
        if (ed->token) {
            if (par[0].p == NULL || !member(par[0], "progressToken", &tok))
                return NULL;
            cuts[n++] = (struct cut){tok.p, tok.len, id, (size_t)id_len};
        }
        if (ed->name) {
            json_t *s = json_string(ed->name);
            name = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
            json_decref(s);
            if (par[1].p == NULL || name == NULL) {
                free(name);
                return NULL;
            }
            cuts[n++] = (struct cut){par[1].p, par[1].len, name, strlen(name)};
        }
    }
    /* in the order of the text (the members of params precede or follow
     * the id, and _meta and name are siblings): at most three */
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && cuts[j].at < cuts[j - 1].at; j--) {
            struct cut t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    }
    size_t total = text.len;
    for (size_t i = 0; i < n; i++)
        total = total - cuts[i].len + cuts[i].with_len;
    char *out = mx_xmalloc(total + 1);
    char *w = out;
    const char *r = text.p;
    for (size_t i = 0; i < n; i++) {
        memcpy(w, r, (size_t)(cuts[i].at - r));
        w += cuts[i].at - r;
        memcpy(w, cuts[i].with, cuts[i].with_len);
        w += cuts[i].with_len;
        r = cuts[i].at + cuts[i].len;
    }
    memcpy(w, r, (size_t)(text.p + text.len - r));
    w += text.p + text.len - r;
    *w = '\0';
    *len = total;
    free(name);
    return out;
}
