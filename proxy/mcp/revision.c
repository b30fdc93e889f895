/* SPDX-License-Identifier: MIT */
/*
 * Classifying /mcp POSTs by revision and the request checks of MCP
 * 2026-07-28, Streamable HTTP ("Server Validation") and Versioning. The
 * order of the checks follows the MCP checklist §3.3, which is also what the
 * conformance suite expects.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "err.h"
#include "num.h"
#include "revision.h"
#include "rpc.h"

#define NAME_MAX_LEN 4096

static const char *const supported[] = {MX_REV_MODERN, NULL};

/* MCP 2026-07-28, schema: the client requests of the core protocol, and of
 * the tasks extension (SEP-2663) that mcplex carries. */
static const char *const methods[] = {"server/discover",
                                      "subscriptions/listen",
                                      "tools/list",
                                      "tools/call",
                                      "prompts/list",
                                      "prompts/get",
                                      "resources/list",
                                      "resources/read",
                                      "resources/templates/list",
                                      "completion/complete",
                                      "tasks/get",
                                      "tasks/update",
                                      "tasks/cancel",
                                      NULL};

static bool date_at_least(struct mx_str v, const char *min)
{
    size_t n = strlen(min);
    if (v.len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = v.p[i];
        if (min[i] == '-' ? c != '-' : (c < '0' || c > '9'))
            return false;
    }
    return memcmp(v.p, min, n) >= 0;
}

bool mx_rev_is_modern(const json_t *msg, const struct mx_rev_hdrs *h)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    if (json_object_get(meta, MX_REV_META_VERSION))
        return true;
    if (h->session)
        return false;
    return h->version && date_at_least(*h->version, MX_REV_MODERN);
}

const char *const mx_rev_session_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                               "2024-11-05", NULL};

bool mx_rev_session_version_known(const char *v)
{
    for (size_t i = 0; v && mx_rev_session_versions[i]; i++) {
        if (strcmp(v, mx_rev_session_versions[i]) == 0)
            return true;
    }
    return false;
}

bool mx_rev_version_supported(const char *v)
{
    for (size_t i = 0; v && supported[i]; i++) {
        if (strcmp(v, supported[i]) == 0)
            return true;
    }
    return false;
}

static bool method_known(const char *m)
{
    for (size_t i = 0; methods[i]; i++) {
        if (strcmp(m, methods[i]) == 0)
            return true;
    }
    return false;
}

static int refuse(struct mx_rev_error *err, int status, int code, json_t *data, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));

static int refuse(struct mx_rev_error *err, int status, int code, json_t *data, const char *fmt,
                  ...)
{
    va_list ap;
    err->status = status;
    err->code = code;
    err->data = data;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return MX_EPROTO;
}

/* Whether the parameters |params| of one Accept member say q=0. */
static bool q_zero(struct mx_str params)
{
    while (params.len) {
        const char *semi = memchr(params.p, ';', params.len);
        size_t n = semi ? (size_t)(semi - params.p) : params.len;
        struct mx_str p = mx_str_trim(mx_str_make(params.p, n));
        if (p.len >= 2 && (p.p[0] == 'q' || p.p[0] == 'Q') && p.p[1] == '=') {
            /* RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" ... ) */
            size_t i = 2;
            if (i == p.len || p.p[i] != '0')
                return false;
            for (i++; i < p.len; i++) {
                if (p.p[i] != '.' && p.p[i] != '0')
                    return false;
            }
            return true;
        }
        params = semi ? mx_str_make(semi + 1, params.len - n - 1) : mx_str_make(params.p, 0);
    }
    return false;
}

/* Whether the media range |range| is the wildcard range of |want|'s type. */
static bool sub_wildcard(struct mx_str range, const char *want)
{
    const char *slash = strchr(want, '/');
    size_t tl = slash ? (size_t)(slash - want) : 0;
    return slash && range.len == tl + 2 && strncasecmp(range.p, want, tl) == 0 &&
           range.p[tl] == '/' && range.p[tl + 1] == '*';
}

bool mx_rev_accepts(const struct mx_str *accept, const char *want, bool wildcards)
{
    if (accept == NULL)
        return false;
    struct mx_str rest = *accept;
    while (rest.len) {
        const char *comma = memchr(rest.p, ',', rest.len);
        size_t n = comma ? (size_t)(comma - rest.p) : rest.len;
        struct mx_str member = mx_str_make(rest.p, n);
        const char *semi = memchr(member.p, ';', member.len);
        size_t tl = semi ? (size_t)(semi - member.p) : member.len;
        struct mx_str type = mx_str_trim(mx_str_make(member.p, tl));
        struct mx_str params =
            semi ? mx_str_make(semi + 1, member.len - tl - 1) : mx_str_make("", 0);
        bool match = mx_str_caseeq_cstr(type, want) ||
                     (wildcards && (mx_str_caseeq_cstr(type, "*/*") || sub_wildcard(type, want)));
        if (match && !q_zero(params))
            return true;
        rest = comma ? mx_str_make(comma + 1, rest.len - n - 1) : mx_str_make(rest.p, 0);
    }
    return false;
}

int mx_rev_check_media(const struct mx_str *content_type, const struct mx_str *accept,
                       struct mx_rev_error *err)
{
    static const char json[] = "application/json";
    size_t jl = sizeof(json) - 1;
    const struct mx_str *ct = content_type;
    bool is_json = ct && ct->len >= jl && strncasecmp(ct->p, json, jl) == 0 &&
                   (ct->len == jl || ct->p[jl] == ';' || ct->p[jl] == ' ');
    err->data = NULL;
    if (!is_json)
        return refuse(err, 415, MX_RPC_INVALID_REQUEST, NULL,
                      "Unsupported Media Type: Content-Type must be application/json");
    if (!mx_rev_accepts(accept, json, true) || !mx_rev_accepts(accept, "text/event-stream", true))
        return refuse(err, 406, MX_RPC_INVALID_REQUEST, NULL,
                      "Not Acceptable: Accept must list application/json and text/event-stream");
    return 0;
}

int mx_rev_header_decode(struct mx_str v, char *out, size_t cap)
{
    static const char pre[] = "=?base64?";
    static const char suf[] = "?=";
    size_t pl = sizeof(pre) - 1, sl = sizeof(suf) - 1;
    if (v.len >= pl + sl && memcmp(v.p, pre, pl) == 0 && memcmp(v.p + v.len - sl, suf, sl) == 0) {
        /* MCP 2026-07-28, Streamable HTTP, Value Encoding: the UTF-8 bytes
         * in standard base64 between the case-sensitive markers */
        const char *b = v.p + pl;
        size_t bl = v.len - pl - sl;
        if (bl % 4 != 0)
            return MX_EINVAL;
        if (bl / 4 * 3 + 1 > cap)
            return MX_ELIMIT;
        for (size_t i = 0; i < bl; i++) {
            char c = b[i];
            bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '+' || c == '/' || (c == '=' && i >= bl - 2);
            if (!ok)
                return MX_EINVAL;
        }
        int n = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)b, (int)bl);
        if (n < 0)
            return MX_EINVAL;
        /* EVP_DecodeBlock counts the padding as zero bytes */
        if (bl >= 1 && b[bl - 1] == '=')
            n--;
        if (bl >= 2 && b[bl - 2] == '=')
            n--;
        if (memchr(out, '\0', (size_t)n))
            return MX_EINVAL;
        out[n] = '\0';
        return n;
    }
    if (v.len + 1 > cap)
        return MX_ELIMIT;
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.p[i];
        if (c < 0x20 || c > 0x7e)
            return MX_EINVAL;
    }
    memcpy(out, v.p, v.len);
    out[v.len] = '\0';
    return (int)v.len;
}

#define PARAM_VALUE_MAX 8192

/* Whether |name| may follow "Mcp-Param-" (an RFC 9110 token). */
static bool param_name_ok(const char *name)
{
    if (*name == '\0' || strlen(name) > 64)
        return false;
    for (const char *p = name; *p; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *p)))
            return false;
    }
    return true;
}

/* Whether the decoded header |h| (|len| bytes) says what |v| is. */
static bool param_matches(const char *h, size_t len, const json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) == len && memcmp(json_string_value(v), h, len) == 0;
    if (json_is_boolean(v))
        return strcmp(h, json_is_true(v) ? "true" : "false") == 0;
    if (json_is_integer(v)) {
        int64_t n;
        return mx_num_parse(h, len, INT64_MIN, INT64_MAX, &n) == 0 && n == json_integer_value(v);
    }
    return false;
}

int mx_rev_check_params(const json_t *input_schema, const json_t *arguments, mx_rev_header_fn get,
                        const void *ctx, struct mx_rev_error *err)
{
    char buf[PARAM_VALUE_MAX];
    const char *prop;
    json_t *schema;
    err->data = NULL;
    json_object_foreach(json_object_get(input_schema, "properties"), prop, schema)
    {
        const char *name = json_string_value(json_object_get(schema, "x-mcp-header"));
        const char *type = json_string_value(json_object_get(schema, "type"));
        if (name == NULL || !param_name_ok(name) || type == NULL ||
            (strcmp(type, "string") != 0 && strcmp(type, "integer") != 0 &&
             strcmp(type, "boolean") != 0))
            continue;
        char hname[80];
        snprintf(hname, sizeof(hname), "Mcp-Param-%s", name);
        const struct mx_str *h = get(ctx, hname);
        const json_t *v = json_object_get(arguments, prop);
        bool has_value = v != NULL && !json_is_null(v);
        if (h == NULL && !has_value)
            continue;
        if (h == NULL)
            return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                          "Bad Request: header %s is required: arguments.%.100s is set", hname,
                          prop);
        if (!has_value)
            return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                          "Bad Request: header %s is sent but arguments.%.100s is not", hname,
                          prop);
        int n = mx_rev_header_decode(*h, buf, sizeof(buf));
        if (n < 0)
            return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                          "Bad Request: header %s is not a valid value", hname);
        if (!param_matches(buf, (size_t)n, v))
            return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                          "Bad Request: header %s does not match arguments.%.100s", hname, prop);
    }
    return 0;
}

/* The body value Mcp-Name mirrors, or NULL for methods without one. */
static const char *name_source(const char *method, bool *needed)
{
    *needed = true;
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        return "name";
    if (strcmp(method, "resources/read") == 0)
        return "uri";
    /* SEP-2663, Streamable HTTP: Routing Headers */
    if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
        strcmp(method, "tasks/cancel") == 0)
        return "taskId";
    *needed = false;
    return NULL;
}

static int check_name(const json_t *params, const char *method, const struct mx_rev_hdrs *h,
                      struct mx_rev_error *err)
{
    bool needed;
    const char *key = name_source(method, &needed);
    if (!needed)
        return 0;
    if (h->name == NULL)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: the Mcp-Name header is required for %s", method);
    char name[NAME_MAX_LEN];
    int n = mx_rev_header_decode(*h->name, name, sizeof(name));
    if (n < 0)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: the Mcp-Name header is malformed");
    json_t *body = json_object_get(params, key);
    if (!json_is_string(body) || json_string_length(body) != (size_t)n ||
        memcmp(json_string_value(body), name, (size_t)n) != 0)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: Mcp-Name does not match params.%s", key);
    return 0;
}

/* The last two checks: version |v| supported (-32022), method known (404). */
static int check_version_method(const char *v, const char *method, struct mx_rev_error *err)
{
    if (!mx_rev_version_supported(v)) {
        json_t *list = json_array();
        for (size_t i = 0; supported[i]; i++)
            json_array_append_new(list, json_string(supported[i]));
        return refuse(err, 400, MX_REV_UNSUPPORTED_VERSION,
                      json_pack("{s:o, s:s}", "supported", list, "requested", v),
                      "Unsupported protocol version: %.60s (supported: %s)", v, MX_REV_MODERN);
    }
    /* MCP 2026-07-28, Streamable HTTP: an unknown method is 404; initialize,
     * ping, logging/setLevel and resources/(un)subscribe no longer exist */
    if (!method_known(method))
        return refuse(err, 404, MX_RPC_METHOD_NOT_FOUND, NULL, "Method not found: %.100s", method);
    return 0;
}

/* MCP 2026-07-28 over stdio: no headers, so _meta alone says the version. */
static int check_meta_only(const json_t *msg, const char *method, struct mx_rev_error *err)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    json_t *mv = json_object_get(meta, MX_REV_META_VERSION);
    if (!json_is_string(mv) || !json_is_object(json_object_get(meta, MX_REV_META_CAPS)))
        return refuse(err, 400, MX_RPC_INVALID_PARAMS, NULL,
                      "Invalid params: params._meta must carry %s and %s", MX_REV_META_VERSION,
                      MX_REV_META_CAPS);
    char v[64];
    snprintf(v, sizeof(v), "%s", json_string_value(mv));
    return check_version_method(v, method, err);
}

int mx_rev_check(const json_t *msg, const struct mx_rev_hdrs *h, struct mx_rev_error *err)
{
    char hv[64], hm[128];
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    json_t *meta = json_object_get(params, "_meta");
    json_t *mv = json_object_get(meta, MX_REV_META_VERSION);
    memset(err, 0, sizeof(*err));
    if (method == NULL)
        return refuse(err, 400, MX_RPC_INVALID_REQUEST, NULL, "Invalid Request");
    if (h->no_headers)
        return check_meta_only(msg, method, err);
    if (h->version == NULL)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: the MCP-Protocol-Version header is required");
    if (!json_is_object(params) || !json_is_object(meta) || !json_is_string(mv) ||
        !json_is_object(json_object_get(meta, MX_REV_META_CAPS)))
        return refuse(err, 400, MX_RPC_INVALID_PARAMS, NULL,
                      "Invalid params: params._meta must carry %s and %s", MX_REV_META_VERSION,
                      MX_REV_META_CAPS);
    if (mx_rev_header_decode(*h->version, hv, sizeof(hv)) < 0 ||
        strcmp(hv, json_string_value(mv)) != 0)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: MCP-Protocol-Version does not match %s",
                      MX_REV_META_VERSION);
    if (h->method == NULL)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: the Mcp-Method header is required");
    if (mx_rev_header_decode(*h->method, hm, sizeof(hm)) < 0 || strcmp(hm, method) != 0)
        return refuse(err, 400, MX_REV_HEADER_MISMATCH, NULL,
                      "Header mismatch: Mcp-Method does not match the method %.100s", method);
    if (check_name(params, method, h, err))
        return MX_EPROTO;
    return check_version_method(hv, method, err);
}
