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
#define VALUE_CAP        8192 /* longest Mcp-Param-* value sent (before encoding) */
#define HEADER_NAME_CAP  64   /* longest x-mcp-header name */
#define PARAMS_CAP       32   /* x-mcp-header parameters of one tool */

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

/* The keys of |o| as an array. */
static json_t *keys_of(json_t *o)
{
    json_t *list = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        (void)v;
        json_array_append_new(list, json_string(k));
    }
    return list;
}

json_t *mx_up26_listen(json_t *id, const json_t *server_caps, json_t *uris, json_t *tasks,
                       const json_t *caps)
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
    if (json_object_size(uris))
        json_object_set_new(want, "resourceSubscriptions", keys_of(uris));
    if (json_object_size(tasks))
        json_object_set_new(want, "taskIds", keys_of(tasks));
    if (json_object_size(want) == 0) {
        json_decref(want);
        return NULL;
    }
    json_t *meta = meta_new(caps);
    /* following tasks is the extension's (SEP-2663): declared with them */
    if (json_object_size(tasks)) {
        json_t *mine = json_object_get(meta, MX_REV_META_CAPS);
        json_t *ext = json_object_get(mine, "extensions");
        if (!json_is_object(ext)) {
            ext = json_object();
            json_object_set_new(mine, "extensions", ext);
        }
        json_object_set_new(ext, MX_REV_EXT_TASKS, json_object());
    }
    return json_pack("{s:s, s:O, s:s, s:{s:o, s:o}}", "jsonrpc", "2.0", "id", id, "method",
                     "subscriptions/listen", "params", "notifications", want, "_meta", meta);
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
        /* of the extensions, the one mcplex carries: tasks (front/tasks.c) */
        if (json_is_object(json_object_get(json_object_get(given, "extensions"), MX_REV_EXT_TASKS)))
            json_object_set_new(mine, "extensions", json_pack("{s:{}}", MX_REV_EXT_TASKS));
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

/* Add header |name| with value |v| (|n| bytes), in the "=?base64?...?="
 * form when it cannot go as it is (MCP 2026-07-28, Streamable HTTP, Value
 * Encoding). */
static int add_encoded(struct mx_upreq_hdrs *h, const char *name, const char *v, size_t n)
{
    if (n > VALUE_CAP)
        return MX_ELIMIT;
    if (plain(v, n))
        return mx_upreq_hdrs_add(h, name, (struct mx_str){v, n});
    /* "=?base64?" + 4 per 3 bytes + "?=" */
    size_t cap = 9 + (n + 2) / 3 * 4 + 2 + 1;
    char *enc = mx_xmalloc(cap);
    memcpy(enc, "=?base64?", 9);
    int len = EVP_EncodeBlock((unsigned char *)enc + 9, (const unsigned char *)v, (int)n);
    memcpy(enc + 9 + len, "?=", 3);
    int rc = mx_upreq_hdrs_add(h, name, mx_str_cstr(enc));
    free(enc);
    return rc;
}

/* The Mcp-Param-* headers of a tools/call whose tool maps argument names to
 * header names in |map|: strings as they are (or encoded), integers in
 * decimal, booleans as true/false; null or absent arguments get none. */
static int add_params(json_t *map, const json_t *args, struct mx_upreq_hdrs *h)
{
    const char *arg;
    json_t *hname;
    json_object_foreach(map, arg, hname)
    {
        json_t *v = json_object_get(args, arg);
        char num[40];
        const char *p = NULL;
        size_t n = 0;
        if (json_is_string(v)) {
            p = json_string_value(v);
            n = json_string_length(v);
        } else if (json_is_integer(v)) {
            n = (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            p = num;
        } else if (json_is_real(v)) {
            n = (size_t)snprintf(num, sizeof(num), "%.17g", json_real_value(v));
            p = num;
        } else if (json_is_boolean(v)) {
            p = json_is_true(v) ? "true" : "false";
            n = strlen(p);
        }
        if (p == NULL)
            continue; /* null, absent, or not a primitive: nothing to mirror */
        char name[16 + HEADER_NAME_CAP];
        snprintf(name, sizeof(name), "Mcp-Param-%s", json_string_value(hname));
        int rc = add_encoded(h, name, p, n);
        if (rc)
            return rc;
    }
    return 0;
}

int mx_up26_headers(const json_t *msg, json_t *params_map, struct mx_upreq_hdrs *h)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    const char *field = NULL;
    int rc = mx_upreq_hdrs_add(h, "MCP-Protocol-Version", MX_STR_LIT(MX_UP26_VERSION));
    if (rc == 0 && method)
        rc = mx_upreq_hdrs_add(h, "Mcp-Method", mx_str_cstr(method));
    if (rc || method == NULL)
        return rc;
    bool call = strcmp(method, "tools/call") == 0;
    if (call || strcmp(method, "prompts/get") == 0)
        field = "name";
    else if (strcmp(method, "resources/read") == 0)
        field = "uri";
    else if (strncmp(method, "tasks/", 6) == 0) /* SEP-2663: Mcp-Name is the taskId */
        field = "taskId";
    const json_t *v = field ? json_object_get(params, field) : NULL;
    if (json_is_string(v)) {
        if (json_string_length(v) > NAME_CAP)
            return MX_ELIMIT;
        rc = add_encoded(h, "Mcp-Name", json_string_value(v), json_string_length(v));
    }
    if (rc == 0 && call && json_is_object(params_map))
        rc = add_params(params_map, json_object_get(params, "arguments"), h);
    return rc;
}

/* RFC 9110 §5.6.2: a header name is a token. */
static bool is_token(const char *s, size_t n)
{
    if (n == 0 || n > HEADER_NAME_CAP)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              strchr("!#$%&'*+-.^_`|~", c) != NULL))
            return false;
    }
    return true;
}

json_t *mx_up26_param_map(const json_t *tool)
{
    json_t *props = json_object_get(json_object_get(tool, "inputSchema"), "properties");
    json_t *map = json_object();
    json_t *seen = json_object(); /* lower-cased header names */
    const char *arg;
    json_t *p;
    bool ok = true;
    json_object_foreach(props, arg, p)
    {
        json_t *hn = json_object_get(p, "x-mcp-header");
        if (hn == NULL)
            continue;
        const char *type = json_string_value(json_object_get(p, "type"));
        /* a name that is a token, unique regardless of case, on a parameter
         * whose value a header can carry (MCP 2026-07-28, Tools, x-mcp-header) */
        if (!json_is_string(hn) || !is_token(json_string_value(hn), json_string_length(hn)) ||
            type == NULL ||
            (strcmp(type, "string") != 0 && strcmp(type, "integer") != 0 &&
             strcmp(type, "boolean") != 0) ||
            json_object_size(map) == PARAMS_CAP) {
            ok = false;
            break;
        }
        char low[HEADER_NAME_CAP + 1];
        size_t n = json_string_length(hn);
        for (size_t i = 0; i < n; i++) {
            char c = json_string_value(hn)[i];
            low[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        low[n] = '\0';
        if (json_object_get(seen, low)) {
            ok = false;
            break;
        }
        json_object_set_new(seen, low, json_true());
        json_object_set(map, arg, hn);
    }
    json_decref(seen);
    if (!ok) {
        json_decref(map);
        return NULL;
    }
    return map;
}

json_t *mx_up26_tools_seen(json_t *result, json_t *maps, json_t *dropped)
{
    json_t *out = json_copy(result);
    json_t *kept = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(result, "tools"), i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        json_t *map = mx_up26_param_map(t);
        if (map == NULL) {
            if (dropped && name)
                json_array_append_new(dropped, json_string(name));
            continue;
        }
        if (name && maps) {
            if (json_object_size(map))
                json_object_set(maps, name, map);
            else
                json_object_del(maps, name);
        }
        json_decref(map);
        json_array_append(kept, t);
    }
    json_object_set_new(out, "tools", kept);
    return out;
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
    if (mx_up26_wrong_version(answer) &&
        lists_modern(json_object_get(json_object_get(error, "data"), "supported")))
        return MX_UP26_RETRY;
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

void mx_up26_legacy_result(json_t *result)
{
    if (!json_is_object(result))
        return;
    json_object_del(result, "resultType");
    json_object_del(result, "ttlMs");
    json_object_del(result, "cacheScope");
    json_t *meta = json_object_get(result, "_meta");
    json_object_del(meta, MX_REV_META_SERVER_INFO);
    if (json_is_object(meta) && json_object_size(meta) == 0)
        json_object_del(result, "_meta");
}
