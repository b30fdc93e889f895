/* SPDX-License-Identifier: MIT */
/*
 * The stateless revision 2026-07-28 of sandbox-sim --conformance: no
 * session, every request carries its own _meta (version, client
 * capabilities, optional log level), the headers MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name mirror the body, and every result says its
 * resultType. Validation follows the order the revision's Streamable HTTP
 * page gives (header, _meta, mismatch, version, method); the methods
 * themselves are conf.c's, and streams are stream.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "alloc.h"
#include "log.h"
#include "rev.h"
#include "sim.h"
#include "tasks.h"

#define MODERN_VERSION "2026-07-28"
#define META_VERSION   "io.modelcontextprotocol/protocolVersion"
#define META_CAPS      "io.modelcontextprotocol/clientCapabilities"
#define META_LOG       "io.modelcontextprotocol/logLevel"
#define META_SERVER    "io.modelcontextprotocol/serverInfo"

/* How long a client may reuse a list or a read (SEP-2549); the catalogue
 * only changes through the trigger tools, which tell listen streams. */
#define TTL_MS 5000

static const char *const methods[] = {
    "server/discover",     "tools/list",           "tools/call",     "prompts/list",
    "prompts/get",         "resources/list",       "resources/read", "resources/templates/list",
    "completion/complete", "subscriptions/listen", "tasks/get",      "tasks/update",
    "tasks/cancel",
};

static const char *const cacheable[] = {
    "server/discover", "tools/list",     "prompts/list",
    "resources/list",  "resources/read", "resources/templates/list",
};

static bool str_eq(json_t *v, const char *want)
{
    return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}

static bool in(const char *m, const char *const *set, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++) {
        if (strcmp(m, set[i]) == 0)
            return true;
    }
    return false;
}

bool mx_sim_modern_is(const struct mx_req *req, json_t *msg)
{
    const struct mx_str *v = mx_req_header(req, "MCP-Protocol-Version");
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    /* A request's own _meta decides; legacy requests may carry _meta too
     * (progressToken), so only the version key counts. */
    if (json_object_get(meta, META_VERSION))
        return true;
    if (mx_req_header(req, "Mcp-Session-Id") || v == NULL)
        return false;
    return !mx_sim_rev_is_supported(mx_str_trim(*v));
}

static void fail(struct mx_sim *sim, struct mx_req *req, int status, json_t *id, int code,
                 const char *msg, json_t *data, const char *what)
{
    mx_sim_respond(sim, req, status, NULL, 0, mx_sim_rpc_error(id, code, msg, data), what);
}

/*
 * A header value as the client meant it: trimmed, and a "=?base64?...?="
 * value decoded (SEP-2243 uses it for values HTTP cannot carry). Returns a
 * new string, or NULL for a malformed sentinel.
 */
static char *header_value(struct mx_str v)
{
    static const char pre[] = "=?base64?", post[] = "?=";
    v = mx_str_trim(v);
    if (v.len < sizeof(pre) - 1 + sizeof(post) - 1 || memcmp(v.p, pre, sizeof(pre) - 1) != 0 ||
        memcmp(v.p + v.len - 2, post, 2) != 0)
        return mx_xstrndup(v.p, v.len);
    const char *b = v.p + sizeof(pre) - 1;
    size_t n = v.len - (sizeof(pre) - 1) - 2;
    if (n % 4 != 0)
        return NULL;
    unsigned char *out = mx_xmalloc(n / 4 * 3 + 1);
    int len = EVP_DecodeBlock(out, (const unsigned char *)b, (int)n);
    if (len < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    for (size_t i = n; i > 0 && b[i - 1] == '=' && len > 0; i--)
        len--;
    out[len] = '\0';
    if (strlen((char *)out) != (size_t)len) {
        free(out);
        return NULL;
    }
    return (char *)out;
}

/* Whether header |name| is present and equals |want| after decoding. */
static bool header_is(const struct mx_req *req, const char *name, const char *want)
{
    const struct mx_str *h = mx_req_header(req, name);
    char *v = h ? header_value(*h) : NULL;
    bool ok = v && want && strcmp(v, want) == 0;
    free(v);
    return ok;
}

/*
 * 2026-07-28, Streamable HTTP (SEP-2243): a tools/call argument whose schema
 * names an x-mcp-header travels in Mcp-Param-<name> as well. The header must
 * be there exactly when the body has the argument, and equal it once decoded
 * (a malformed base64 sentinel equals nothing).
 */
static bool param_headers_match(const struct mx_req *req, json_t *params)
{
    const char *arg = NULL;
    const char *header =
        mx_sim_conf_param_header(json_string_value(json_object_get(params, "name")), &arg);
    char name[96];
    if (header == NULL)
        return true;
    snprintf(name, sizeof(name), "Mcp-Param-%s", header);
    json_t *v = json_object_get(json_object_get(params, "arguments"), arg);
    if (v == NULL || json_is_null(v))
        return mx_req_header(req, name) == NULL;
    return header_is(req, name, json_string_value(v));
}

/* resultType on every result; ttlMs and cacheScope on cacheable ones; the
 * server's identity in _meta (2026-07-28, Basic). */
static json_t *decorate(const struct mx_sim *sim, const char *method, json_t *result)
{
    if (json_object_get(result, "resultType") == NULL)
        json_object_set_new(result, "resultType", json_string("complete"));
    if (in(method, cacheable, sizeof(cacheable) / sizeof(cacheable[0])) &&
        strcmp(json_string_value(json_object_get(result, "resultType")), "complete") == 0) {
        json_object_set_new(result, "ttlMs", json_integer(TTL_MS));
        json_object_set_new(result, "cacheScope", json_string("public"));
    }
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, META_SERVER,
                        json_pack("{s:s,s:s}", "name", sim->name, "version", MX_VERSION));
    return result;
}

/* The notification types of a listen request this server honors. */
static unsigned listen_filter(json_t *params)
{
    json_t *n = json_object_get(params, "notifications");
    unsigned mask = 0;
    if (json_is_true(json_object_get(n, "toolsListChanged")))
        mask |= MX_SIM_CHANGED_TOOLS;
    if (json_is_true(json_object_get(n, "promptsListChanged")))
        mask |= MX_SIM_CHANGED_PROMPTS;
    return mask;
}

/* The tasks a listen request follows (SEP-2663): its notifications.taskIds,
 * an array, honoured when the request declares the tasks extension; the
 * known ones as a new array, or NULL when it asked for none. */
static json_t *listen_task_ids(const struct mx_sim_conf_sess *st, json_t *params)
{
    json_t *ids = json_object_get(json_object_get(params, "notifications"), "taskIds");
    if (!st->tasks_ext || st->tasks == NULL || !json_is_array(ids))
        return NULL;
    return mx_sim_tasks_known(st->tasks, ids);
}

/* Checks of 2026-07-28, Streamable HTTP, in its order; false once answered. */
static bool validate(struct mx_sim *sim, struct mx_req *req, const char *method, json_t *id,
                     json_t *params, json_t **meta_out)
{
    const struct mx_str *hv = mx_req_header(req, "MCP-Protocol-Version");
    json_t *meta = json_object_get(params, "_meta");
    const char *version = json_string_value(json_object_get(meta, META_VERSION));
    const char *name_field = NULL;
    char *hver;

    if (hv == NULL) {
        fail(sim, req, 400, id, MX_SIM_RPC_MISMATCH,
             "Header mismatch: the MCP-Protocol-Version header is required", NULL, "no version");
        return false;
    }
    if (!json_is_object(meta) || version == NULL ||
        !json_is_object(json_object_get(meta, META_CAPS))) {
        fail(sim, req, 400, id, MX_SIM_RPC_PARAMS,
             "Invalid params: _meta must carry " META_VERSION " and " META_CAPS, NULL, "bad _meta");
        return false;
    }
    hver = header_value(*hv);
    bool same = hver && strcmp(hver, version) == 0;
    free(hver);
    if (!same) {
        fail(sim, req, 400, id, MX_SIM_RPC_MISMATCH,
             "Header mismatch: MCP-Protocol-Version differs from _meta", NULL, "version mismatch");
        return false;
    }
    if (!header_is(req, "Mcp-Method", method)) {
        fail(sim, req, 400, id, MX_SIM_RPC_MISMATCH,
             "Header mismatch: Mcp-Method is missing or differs from the body's method", NULL,
             "method mismatch");
        return false;
    }
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        name_field = "name";
    else if (strcmp(method, "resources/read") == 0)
        name_field = "uri";
    else if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
             strcmp(method, "tasks/cancel") == 0) /* SEP-2663, Routing Headers */
        name_field = "taskId";
    if (name_field &&
        !header_is(req, "Mcp-Name", json_string_value(json_object_get(params, name_field)))) {
        fail(sim, req, 400, id, MX_SIM_RPC_MISMATCH,
             "Header mismatch: Mcp-Name is missing or differs from the body", NULL,
             "name mismatch");
        return false;
    }
    if (strcmp(version, MODERN_VERSION) != 0) {
        fail(sim, req, 400, id, MX_SIM_RPC_UNSUPPORTED, "Unsupported protocol version",
             json_pack("{s:[s],s:s}", "supported", MODERN_VERSION, "requested", version),
             "unsupported version");
        return false;
    }
    if (!in(method, methods, sizeof(methods) / sizeof(methods[0]))) {
        char msg[160];
        snprintf(msg, sizeof(msg), "Method not found: %.100s", method);
        fail(sim, req, 404, id, MX_SIM_RPC_NOMETHOD, msg, NULL, "unknown method");
        return false;
    }
    if (strcmp(method, "tools/call") == 0 && !param_headers_match(req, params)) {
        fail(sim, req, 400, id, MX_SIM_RPC_MISMATCH,
             "Header mismatch: an Mcp-Param header is missing, malformed or differs from its "
             "argument",
             NULL, "param mismatch");
        return false;
    }
    json_t *level = json_object_get(meta, META_LOG);
    if (level && mx_sim_conf_log_level(json_string_value(level)) < 0) {
        fail(sim, req, 400, id, MX_SIM_RPC_PARAMS, "Invalid params: unknown " META_LOG, NULL,
             "bad log level");
        return false;
    }
    *meta_out = meta;
    return true;
}

void mx_sim_modern_post(struct mx_sim *sim, struct mx_req *req, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *meta = NULL;
    struct mx_sim_reply r;
    char what[96];

    if (!json_is_object(msg) || !str_eq(json_object_get(msg, "jsonrpc"), "2.0") ||
        (id && !json_is_string(id) && !json_is_integer(id)) ||
        (json_object_get(msg, "method") && method == NULL)) {
        fail(sim, req, 400, json_is_string(id) || json_is_integer(id) ? id : NULL,
             MX_SIM_RPC_INVALID, "Invalid Request", NULL, "invalid");
        return;
    }
    if (method == NULL || id == NULL) {
        /* No client notification means anything here; accept and ignore. */
        mx_sim_respond(sim, req, 202, NULL, 0, NULL, "notification (2026-07-28)");
        return;
    }
    if (params != NULL && !json_is_object(params)) {
        fail(sim, req, 400, id, MX_SIM_RPC_PARAMS, "Invalid params: params must be an object", NULL,
             "bad params");
        return;
    }
    if (!validate(sim, req, method, id, params, &meta))
        return;
    sim->stats.methods[mx_sim_method_find(method)]++;

    json_t *caps = json_object_get(meta, META_CAPS);
    json_t *level = json_object_get(meta, META_LOG);
    struct mx_sim_conf_sess st = {
        .log_level = level ? mx_sim_conf_log_level(json_string_value(level)) : MX_SIM_LOG_NONE,
        .sampling = json_is_object(json_object_get(caps, "sampling")),
        .elicitation = json_is_object(json_object_get(caps, "elicitation")),
        .roots = json_is_object(json_object_get(caps, "roots")),
        .modern = true,
        .state_key = sim->state_key,
        .tasks = sim->tasks,
        .tasks_ext =
            json_is_object(json_object_get(json_object_get(caps, "extensions"), MX_SIM_TASKS_EXT)),
    };
    struct mx_sim_mcp_ctx ctx = {.name = sim->name, .revision = MODERN_VERSION, .conf = &st};

    if (strcmp(method, "subscriptions/listen") == 0) {
        json_t *task_ids = listen_task_ids(&st, params);
        mx_sim_stream_listen(sim, req, id, listen_filter(params), task_ids);
        json_decref(task_ids);
        return;
    }
    if (strcmp(method, "server/discover") == 0) {
        mx_sim_respond(sim, req, 200, NULL, 0,
                       mx_sim_rpc_result(id, decorate(sim, method, mx_sim_conf_discover())),
                       "server/discover");
        return;
    }
    mx_sim_mcp_request(&ctx, method, params, &r);
    snprintf(what, sizeof(what), "%.60s (2026-07-28)%s", method, r.result ? "" : " (error)");
    if (r.changed)
        mx_sim_stream_list_changed(sim, (unsigned)r.changed);
    if (r.result && (strcmp(method, "tasks/cancel") == 0 || strcmp(method, "tasks/update") == 0))
        mx_sim_stream_task_changed(sim, json_string_value(json_object_get(params, "taskId")));
    if (r.result == NULL) {
        int code = r.err_code;
        /* 2026-07-28, Resources: a missing resource is -32602 (with data.uri). */
        if (code == MX_SIM_RPC_NORES)
            code = MX_SIM_RPC_PARAMS;
        int status = r.http_status ? r.http_status : code == MX_SIM_RPC_NOMETHOD ? 404 : 200;
        fail(sim, req, status, id, code, r.err_msg, json_incref(r.err_data), what);
    } else if (r.script == MX_SIM_SCRIPT_EVENTS) {
        decorate(sim, method, r.result);
        mx_sim_stream_script(sim, req, id, "", &r);
    } else {
        mx_sim_respond(sim, req, 200, NULL, 0,
                       mx_sim_rpc_result(id, decorate(sim, method, json_incref(r.result))), what);
    }
    mx_sim_reply_clear(&r);
}
