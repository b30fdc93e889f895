/* SPDX-License-Identifier: MIT */
/*
 * Request shaping and revision verdicts for 2026-07-28 upstreams (up2026.h).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "alloc.h"
#include "err.h"
#include "revision.h"
#include "up2026.h"

#define META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define NAME_CAP         4096 /* longest Mcp-Name value sent (before encoding) */

static json_t *meta_new(const json_t *caps)
{
    return json_pack("{s:s, s:{s:s, s:s}, s:o}", MX_REV_META_VERSION, MX_UP26_VERSION,
                     META_CLIENT_INFO, "name", "mcplex", "version", MX_VERSION, MX_REV_META_CAPS,
                     json_is_object(caps) ? json_deep_copy(caps) : json_object());
}

json_t *mx_up26_discover(json_t *id, const json_t *caps)
{
    return json_pack("{s:s, s:O, s:s, s:{s:o}}", "jsonrpc", "2.0", "id", id, "method",
                     "server/discover", "params", "_meta", meta_new(caps));
}

static bool list_changed(const json_t *server_caps, const char *kind)
{
    return json_is_true(json_object_get(json_object_get(server_caps, kind), "listChanged"));
}

json_t *mx_up26_listen(json_t *id, const json_t *server_caps, json_t *uris, const json_t *caps)
{
    static const struct {
        const char *cap;
        const char *key;
    } kinds[] = {{"tools", "toolsListChanged"},
                 {"prompts", "promptsListChanged"},
                 {"resources", "resourcesListChanged"}};
    json_t *want = json_object();
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (list_changed(server_caps, kinds[i].cap))
            json_object_set_new(want, kinds[i].key, json_true());
    }
    /* MCP 2026-07-28, Subscriptions: resourceSubscriptions replaces
     * resources/subscribe */
    if (json_object_size(uris)) {
        json_t *list = json_array();
        const char *uri;
        json_t *v;
        json_object_foreach(uris, uri, v)
        {
            (void)v;
            json_array_append_new(list, json_string(uri));
        }
        json_object_set_new(want, "resourceSubscriptions", list);
    }
    if (json_object_size(want) == 0) {
        json_decref(want);
        return NULL;
    }
    return json_pack("{s:s, s:O, s:s, s:{s:o, s:o}}", "jsonrpc", "2.0", "id", id, "method",
                     "subscriptions/listen", "params", "notifications", want, "_meta",
                     meta_new(caps));
}

bool mx_up26_honoured(const json_t *ack, const char *uri)
{
    const json_t *n = json_object_get(json_object_get(ack, "params"), "notifications");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(n, "resourceSubscriptions"), i, v)
    {
        if (uri && json_is_string(v) && strcmp(json_string_value(v), uri) == 0)
            return true;
    }
    return false;
}

json_t *mx_up26_request(const json_t *msg, const json_t *caps)
{
    json_t *out = json_deep_copy(msg);
    json_t *params = json_object_get(out, "params");
    if (!json_is_object(params)) {
        params = json_object();
        json_object_set_new(out, "params", params);
    }
    json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    /* the caller's own capabilities for this request, when it gives them
     * (a stateless client's), limited to what mcplex relays */
    json_t *given = json_object_get(meta, MX_REV_META_CAPS);
    json_t *mine = NULL;
    if (json_is_object(given)) {
        static const char *const relayed[] = {"sampling", "elicitation", "roots"};
        mine = json_object();
        for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++) {
            json_t *v = json_object_get(given, relayed[i]);
            if (json_is_object(v))
                json_object_set(mine, relayed[i], v);
        }
        caps = mine;
    }
    json_t *ours = meta_new(caps);
    json_decref(mine);
    json_object_update(meta, ours);
    json_decref(ours);
    return out;
}

/* Whether |v| can go in a header as it is: visible ASCII, spaces inside. */
static bool plain(const char *v, size_t n)
{
    if (n == 0)
        return true;
    if (v[0] == ' ' || v[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c > 0x7e)
            return false;
    }
    return true;
}

int mx_up26_headers(const json_t *msg, struct mx_upreq_hdrs *h)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    const char *field = NULL;
    int rc = mx_upreq_hdrs_add(h, "MCP-Protocol-Version", MX_STR_LIT(MX_UP26_VERSION));
    if (rc == 0 && method)
        rc = mx_upreq_hdrs_add(h, "Mcp-Method", mx_str_cstr(method));
    if (rc || method == NULL)
        return rc;
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        field = "name";
    else if (strcmp(method, "resources/read") == 0)
        field = "uri";
    const char *v = field ? json_string_value(json_object_get(params, field)) : NULL;
    if (v == NULL)
        return 0;
    size_t n = strlen(v);
    if (n > NAME_CAP)
        return MX_ELIMIT;
    if (plain(v, n))
        return mx_upreq_hdrs_add(h, "Mcp-Name", mx_str_cstr(v));
    /* "=?base64?" + 4 per 3 bytes + "?=" */
    size_t cap = 9 + (n + 2) / 3 * 4 + 2 + 1;
    char *enc = mx_xmalloc(cap);
    memcpy(enc, "=?base64?", 9);
    int len = EVP_EncodeBlock((unsigned char *)enc + 9, (const unsigned char *)v, (int)n);
    memcpy(enc + 9 + len, "?=", 3);
    rc = mx_upreq_hdrs_add(h, "Mcp-Name", mx_str_cstr(enc));
    free(enc);
    return rc;
}

static bool lists_modern(const json_t *versions)
{
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), MX_UP26_VERSION) == 0)
            return true;
    }
    return false;
}

enum mx_up26_verdict mx_up26_verdict(long status, const json_t *answer)
{
    const json_t *result = json_object_get(answer, "result");
    const json_t *error = json_object_get(answer, "error");
    if (status >= 200 && status < 300) {
        if (json_is_object(result))
            return lists_modern(json_object_get(result, "supportedVersions")) ? MX_UP26_MODERN
                                                                              : MX_UP26_LEGACY;
        /* an error answer: unknown method, or a version it does not speak */
        return json_is_object(error) ? MX_UP26_LEGACY : MX_UP26_UNKNOWN;
    }
    if (status == 400 || status == 404 || status == 405)
        return MX_UP26_LEGACY;
    return MX_UP26_UNKNOWN;
}

json_t *mx_up26_init_result(const json_t *result)
{
    json_t *caps = json_object_get(result, "capabilities");
    json_t *info = json_object_get(json_object_get(result, "_meta"), MX_REV_META_SERVER_INFO);
    json_t *instr = json_object_get(result, "instructions");
    json_t *out = json_pack("{s:s, s:o}", "protocolVersion", MX_UP26_VERSION, "capabilities",
                            json_is_object(caps) ? json_deep_copy(caps) : json_object());
    if (json_is_object(info))
        json_object_set(out, "serverInfo", info);
    if (json_is_string(instr))
        json_object_set(out, "instructions", instr);
    return out;
}

bool mx_up26_wrong_version(const json_t *answer)
{
    json_t *code = json_object_get(json_object_get(answer, "error"), "code");
    return json_is_integer(code) && json_integer_value(code) == MX_REV_UNSUPPORTED_VERSION;
}

bool mx_up26_input_required(const json_t *result)
{
    const char *t = json_string_value(json_object_get(result, "resultType"));
    return t && strcmp(t, "input_required") == 0;
}

json_t *mx_up26_strip(json_t *msg)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    if (json_object_get(meta, MX_REV_META_CAPS) == NULL &&
        json_object_get(meta, MX_REV_META_LOG_LEVEL) == NULL)
        return json_incref(msg);
    json_t *out = json_deep_copy(msg);
    json_t *params = json_object_get(out, "params");
    meta = json_object_get(params, "_meta");
    json_object_del(meta, MX_REV_META_CAPS);
    /* a 2025 session has its level from logging/setLevel */
    json_object_del(meta, MX_REV_META_LOG_LEVEL);
    if (json_object_size(meta) == 0)
        json_object_del(params, "_meta");
    return out;
}
