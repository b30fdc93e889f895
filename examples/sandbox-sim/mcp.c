/* SPDX-License-Identifier: MIT */
/*
 * The sim's MCP methods and catalogue: initialize, ping, tools, prompts and
 * resources. Pure: no sockets, no timers, no global state. The HTTP side
 * (server.c) decides sessions and transport; the slow tool is returned as a
 * deferred reply for stream.c to run on the loop.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "conf.h"
#include "mcp.h"
#include "num.h"
#include "tasks.h"

static const char *const method_names[MX_SIM_M_CNT] = {
    [MX_SIM_M_INITIALIZE] = "initialize",
    [MX_SIM_M_PING] = "ping",
    [MX_SIM_M_TOOLS_LIST] = "tools/list",
    [MX_SIM_M_TOOLS_CALL] = "tools/call",
    [MX_SIM_M_PROMPTS_LIST] = "prompts/list",
    [MX_SIM_M_PROMPTS_GET] = "prompts/get",
    [MX_SIM_M_RESOURCES_LIST] = "resources/list",
    [MX_SIM_M_RESOURCES_READ] = "resources/read",
    [MX_SIM_M_TEMPLATES_LIST] = "resources/templates/list",
    [MX_SIM_M_N_INITIALIZED] = "notifications/initialized",
    [MX_SIM_M_N_CANCELLED] = "notifications/cancelled",
    [MX_SIM_M_RESPONSE] = "response",
    [MX_SIM_M_OTHER] = "other",
};

static const char *const tool_names[MX_SIM_T_CNT] = {
    [MX_SIM_T_ECHO] = "echo",       [MX_SIM_T_ADD] = "add",       [MX_SIM_T_SLOW] = "slow",
    [MX_SIM_T_GET_ENV] = "get-env", [MX_SIM_T_WHOAMI] = "whoami",
};

#define README_URI "sim://readme"
#define CONFIG_URI "sim://config"

enum mx_sim_method mx_sim_method_find(const char *name)
{
    /* "response" and "other" are labels, not methods a client can send. */
    for (int m = 0; m < MX_SIM_M_RESPONSE; m++) {
        if (strcmp(name, method_names[m]) == 0)
            return (enum mx_sim_method)m;
    }
    return MX_SIM_M_OTHER;
}

const char *mx_sim_method_name(enum mx_sim_method m)
{
    return m < MX_SIM_M_CNT ? method_names[m] : "other";
}

const char *mx_sim_tool_name(enum mx_sim_tool t)
{
    return t < MX_SIM_T_CNT ? tool_names[t] : "?";
}

/* ---- envelopes ---- */

json_t *mx_sim_rpc_result(json_t *id, json_t *result)
{
    json_t *m = json_pack("{s:s}", "jsonrpc", "2.0");
    if (id)
        json_object_set(m, "id", id);
    json_object_set_new(m, "result", result);
    return m;
}

json_t *mx_sim_rpc_error(json_t *id, int code, const char *msg, json_t *data)
{
    json_t *e = json_pack("{s:i,s:s}", "code", code, "message", msg);
    if (data)
        json_object_set_new(e, "data", data);
    json_t *m = json_pack("{s:s}", "jsonrpc", "2.0");
    /* MCP 2025-11-25 makes an unknown id optional rather than null: omit it. */
    if (id)
        json_object_set(m, "id", id);
    json_object_set_new(m, "error", e);
    return m;
}

json_t *mx_sim_rpc_notification(const char *method, json_t *params)
{
    return json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

json_t *mx_sim_text_result(const char *text, bool is_error)
{
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError",
                     is_error);
}

void mx_sim_reply_clear(struct mx_sim_reply *r)
{
    json_decref(r->result);
    json_decref(r->err_data);
    json_decref(r->progress_token);
    json_decref(r->events);
    json_decref(r->ask);
    memset(r, 0, sizeof(*r));
    r->tool = -1;
}

void mx_sim_reply_error(struct mx_sim_reply *out, int code, const char *msg, json_t *data)
{
    out->err_code = code;
    snprintf(out->err_msg, sizeof(out->err_msg), "%s", msg);
    out->err_data = data;
}

/* ---- catalogue ---- */

static json_t *schema(json_t *properties, json_t *required)
{
    return json_pack("{s:s,s:o,s:o,s:b}", "type", "object", "properties", properties, "required",
                     required, "additionalProperties", 0);
}

/* gen-<i>: a tool of the generated catalogue; answers its own name. */
static json_t *gen_tool(int64_t i)
{
    char name[32], desc[80];
    snprintf(name, sizeof(name), "gen-%lld", (long long)i);
    snprintf(desc, sizeof(desc), "Generated tool %lld of a large catalogue; answers its name.",
             (long long)i);
    return json_pack("{s:s,s:s,s:o}", "name", name, "description", desc, "inputSchema",
                     schema(json_object(), json_array()));
}

/* The index of a generated tool named |name| ("gen-<1..n>"), or 0. */
static int64_t gen_index(const char *name, int64_t n)
{
    int64_t i;
    if (n <= 0 || strncmp(name, "gen-", 4) != 0 ||
        mx_num_parse(name + 4, strlen(name + 4), 1, n, &i) != 0)
        return 0;
    return i;
}

static json_t *tools_list(const struct mx_sim_mcp_ctx *ctx)
{
    json_t *tools = json_array();
    json_array_append_new(
        tools, json_pack("{s:s,s:s,s:s,s:o}", "name", "echo", "title", "Echo", "description",
                         "Returns the message it is given.", "inputSchema",
                         schema(json_pack("{s:{s:s,s:s}}", "message", "type", "string",
                                          "description", "Text to send back"),
                                json_pack("[s]", "message"))));
    json_array_append_new(
        tools, json_pack("{s:s,s:s,s:s,s:o}", "name", "add", "title", "Add", "description",
                         "Adds two numbers and returns the sum as text.", "inputSchema",
                         schema(json_pack("{s:{s:s},s:{s:s}}", "a", "type", "number", "b", "type",
                                          "number"),
                                json_pack("[s,s]", "a", "b"))));
    json_t *slow =
        json_pack("{s:s,s:s,s:s,s:o}", "name", "slow", "title", "Slow", "description",
                  "Takes steps * interval_ms to finish, reporting progress after each step "
                  "when the request carries a progressToken.",
                  "inputSchema",
                  schema(json_pack("{s:{s:s,s:i,s:i,s:i},s:{s:s,s:i,s:i,s:i}}", "steps", "type",
                                   "integer", "minimum", 0, "maximum", MX_SIM_SLOW_MAX_STEPS,
                                   "default", 3, "interval_ms", "type", "integer", "minimum", 0,
                                   "maximum", MX_SIM_SLOW_MAX_INTERVAL, "default", 100),
                         json_array()));
    /* MCP 2025-11-25, Tasks, Tool-Level Negotiation: the one tool that may
     * run as a task; the others say nothing, which means forbidden. */
    if (ctx->tasks)
        json_object_set_new(slow, "execution", json_pack("{s:s}", "taskSupport", "optional"));
    json_array_append_new(tools, slow);
    json_array_append_new(
        tools,
        json_pack("{s:s,s:s,s:s,s:o}", "name", "get-env", "title", "Get environment variable",
                  "description",
                  "Returns the value of an environment variable of the server process, "
                  "or (unset).",
                  "inputSchema",
                  schema(json_pack("{s:{s:s,s:i}}", "name", "type", "string", "minLength", 1),
                         json_pack("[s]", "name"))));
    json_array_append_new(tools, json_pack("{s:s,s:s,s:s,s:o}", "name", "whoami", "title",
                                           "Who am I", "description",
                                           "Returns this server's name, to tell upstreams apart.",
                                           "inputSchema", schema(json_object(), json_array())));
    for (int64_t i = 1; i <= ctx->extra_tools; i++)
        json_array_append_new(tools, gen_tool(i));
    return json_pack("{s:o}", "tools", tools);
}

/*
 * --huge-pages: page |cursor| ("page-<n>", none for the first) of a tools
 * list that never ends, one tool per page with a description of
 * ctx->huge_pages bytes, so a client that keeps every page grows without
 * bound.
 */
static json_t *huge_page(const struct mx_sim_mcp_ctx *ctx, json_t *params)
{
    const char *cur = json_string_value(json_object_get(params, "cursor"));
    long long n = cur && strncmp(cur, "page-", 5) == 0 ? strtoll(cur + 5, NULL, 10) : 0;
    char name[32], next[32];
    size_t len = (size_t)ctx->huge_pages;
    char *desc = mx_xmalloc(len + 1);
    memset(desc, 'x', len);
    desc[len] = '\0';
    snprintf(name, sizeof(name), "huge-%lld", n);
    snprintf(next, sizeof(next), "page-%lld", n + 1);
    json_t *tool = json_pack("{s:s,s:s,s:o}", "name", name, "description", desc, "inputSchema",
                             schema(json_object(), json_array()));
    free(desc);
    return json_pack("{s:[o],s:s}", "tools", tool, "nextCursor", next);
}

static json_t *prompts_list(void)
{
    return json_pack("{s:[{s:s,s:s,s:s,s:[{s:s,s:s,s:b}]}]}", "prompts", "name", "greet", "title",
                     "Greeting", "description", "Asks the model to greet someone by name.",
                     "arguments", "name", "name", "description", "Who to greet", "required", 1);
}

static json_t *resources_list(const struct mx_sim_mcp_ctx *ctx)
{
    json_t *list =
        json_pack("{s:[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}]}", "resources", "uri",
                  README_URI, "name", "readme", "title", "About this server", "description",
                  "What sandbox-sim is and what it offers.", "mimeType", "text/plain", "uri",
                  CONFIG_URI, "name", "config", "title", "Current settings", "description",
                  "The fault switches in effect right now.", "mimeType", "application/json");
    /* --claim-uri: a URI another upstream may serve through a template */
    if (ctx->claim_uri)
        json_array_append_new(json_object_get(list, "resources"),
                              json_pack("{s:s,s:s,s:s}", "uri", ctx->claim_uri, "name", "claimed",
                                        "mimeType", "text/plain"));
    return list;
}

/* ---- tools ---- */

/* Argument problems are tool errors, not protocol errors (MCP 2025-06-18, Tools). */
static json_t *tool_error(const char *msg)
{
    return mx_sim_text_result(msg, true);
}

/* Enforce additionalProperties: false from the schemas above. */
static json_t *check_args(json_t *args, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i]; i++)
            ok = ok || strcmp(key, allowed[i]) == 0;
        if (!ok) {
            char msg[200];
            snprintf(msg, sizeof(msg), "unknown argument '%.100s'", key);
            return tool_error(msg);
        }
    }
    return NULL;
}

static json_t *tool_add(json_t *args)
{
    static const char *const allowed[] = {"a", "b", NULL};
    json_t *a = json_object_get(args, "a"), *b = json_object_get(args, "b");
    json_t *bad = check_args(args, allowed);
    char text[64];
    if (bad)
        return bad;
    if (!json_is_number(a) || !json_is_number(b))
        return tool_error("arguments 'a' and 'b' must be numbers");
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t s;
        if (!__builtin_add_overflow(json_integer_value(a), json_integer_value(b), &s)) {
            snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, s);
            return mx_sim_text_result(text, false);
        }
    }
    double sum = json_number_value(a) + json_number_value(b);
    if (!isfinite(sum))
        return tool_error("the sum is not a finite number");
    snprintf(text, sizeof(text), "%.15g", sum);
    return mx_sim_text_result(text, false);
}

static json_t *tool_get_env(json_t *args)
{
    static const char *const allowed[] = {"name", NULL};
    json_t *bad = check_args(args, allowed);
    const char *name = json_string_value(json_object_get(args, "name"));
    if (bad)
        return bad;
    if (name == NULL || name[0] == '\0' || strchr(name, '='))
        return tool_error("argument 'name' must be a variable name");
    const char *v = getenv(name);
    return mx_sim_text_result(v ? v : "(unset)", false);
}

/* Reads an integer argument within [0, max]; returns false on a bad value. */
static bool int_arg(json_t *args, const char *key, int64_t def, int64_t max, int64_t *out)
{
    json_t *v = json_object_get(args, key);
    if (v == NULL) {
        *out = def;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return false;
    *out = json_integer_value(v);
    return true;
}

static void tool_slow(json_t *args, json_t *params, struct mx_sim_reply *out)
{
    static const char *const allowed[] = {"steps", "interval_ms", NULL};
    json_t *bad = check_args(args, allowed);
    if (bad) {
        out->result = bad;
        return;
    }
    if (!int_arg(args, "steps", 3, MX_SIM_SLOW_MAX_STEPS, &out->steps)) {
        out->result = tool_error("argument 'steps' must be an integer from 0 to 1000");
        return;
    }
    if (!int_arg(args, "interval_ms", 100, MX_SIM_SLOW_MAX_INTERVAL, &out->interval_ms)) {
        out->result = tool_error("argument 'interval_ms' must be an integer from 0 to 60000");
        return;
    }
    /* MCP 2025-06-18, Progress: the token is a string or an integer. */
    json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (json_is_string(tok) || json_is_integer(tok))
        out->progress_token = json_incref(tok);
    out->deferred = true;
}

/*
 * slow with params.task (MCP 2025-11-25): the same call as a task that runs
 * steps * interval_ms instead of a stream, answered with its CreateTaskResult.
 * Bad arguments make a task that failed at once with the tool error. There
 * is no stream, so no progress.
 */
static void slow_task(const struct mx_sim_mcp_ctx *ctx, json_t *task, struct mx_sim_reply *out)
{
    char text[200];
    bool is_error = !out->deferred;
    int64_t run_ms = 0;

    if (is_error) {
        json_t *item = json_array_get(json_object_get(out->result, "content"), 0);
        snprintf(text, sizeof(text), "%s", json_string_value(json_object_get(item, "text")));
    } else {
        snprintf(text, sizeof(text), "done after %lld steps", (long long)out->steps);
        run_ms = out->steps * out->interval_ms;
    }
    int tool = out->tool;
    mx_sim_reply_clear(out);
    out->tool = tool;
    mx_sim_tasks_create_2025(ctx->tasks, text, is_error, run_ms, task, out);
}

static void tools_call(const struct mx_sim_mcp_ctx *ctx, json_t *params, struct mx_sim_reply *out)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    json_t *task = ctx->tasks ? json_object_get(params, "task") : NULL;
    json_t *empty = NULL;
    char msg[200];
    int t;

    if (json_is_null(task))
        task = NULL;

    if (name == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params.name must be a string", NULL);
        return;
    }
    for (t = 0; t < MX_SIM_T_CNT; t++) {
        if (strcmp(name, tool_names[t]) == 0)
            break;
    }
    /* MCP 2025-11-25, Tasks, Tool-Level Negotiation: a task on a tool
     * without task support gets -32601. A session without the capability
     * ignores params.task (Task Support and Handling). */
    if (task && t != MX_SIM_T_SLOW && (t < MX_SIM_T_CNT || gen_index(name, ctx->extra_tools) > 0)) {
        snprintf(msg, sizeof(msg), "Method not found: tool %.100s does not support tasks", name);
        mx_sim_reply_error(out, MX_SIM_RPC_NOMETHOD, msg, NULL);
        return;
    }
    if (t == MX_SIM_T_CNT && gen_index(name, ctx->extra_tools) > 0) {
        out->result = mx_sim_text_result(name, false);
        return;
    }
    if (t == MX_SIM_T_CNT) {
        snprintf(msg, sizeof(msg), "Unknown tool: %.100s", name);
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, msg, NULL);
        return;
    }
    out->tool = t;
    if (args == NULL || json_is_null(args))
        args = empty = json_object();
    if (!json_is_object(args)) {
        out->result = tool_error("arguments must be an object");
        return;
    }
    switch ((enum mx_sim_tool)t) {
    case MX_SIM_T_ECHO: {
        static const char *const allowed[] = {"message", NULL};
        const char *m = json_string_value(json_object_get(args, "message"));
        out->result = check_args(args, allowed);
        if (out->result == NULL)
            out->result = m ? mx_sim_text_result(m, false)
                            : tool_error("argument 'message' must be a string");
        break;
    }
    case MX_SIM_T_ADD:
        out->result = tool_add(args);
        break;
    case MX_SIM_T_SLOW:
        tool_slow(args, params, out);
        if (task)
            slow_task(ctx, task, out);
        break;
    case MX_SIM_T_GET_ENV:
        out->result = tool_get_env(args);
        break;
    case MX_SIM_T_WHOAMI: {
        static const char *const allowed[] = {NULL};
        out->result = check_args(args, allowed);
        if (out->result == NULL)
            out->result = mx_sim_text_result(ctx->name, false);
        break;
    }
    case MX_SIM_T_CNT:
        break;
    }
    json_decref(empty);
}

/* ---- prompts and resources ---- */

static void prompts_get(const struct mx_sim_mcp_ctx *ctx, json_t *params, struct mx_sim_reply *out)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    const char *who = json_string_value(json_object_get(args, "name"));
    char text[400];

    if (name == NULL || strcmp(name, "greet") != 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "Unknown prompt: %.100s", name ? name : "(none)");
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, msg, NULL);
        return;
    }
    if (who == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "Missing required argument: name", NULL);
        return;
    }
    snprintf(text, sizeof(text), "Please greet %.200s warmly, on behalf of %.100s.", who,
             ctx->name);
    out->result = json_pack("{s:s,s:[{s:s,s:{s:s,s:s}}]}", "description",
                            "Asks the model to greet someone by name.", "messages", "role", "user",
                            "content", "type", "text", "text", text);
}

static void resources_read(const struct mx_sim_mcp_ctx *ctx, json_t *params,
                           struct mx_sim_reply *out)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    char *text = NULL;
    const char *mime;

    if (uri == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params.uri must be a string", NULL);
        return;
    }
    if (strcmp(uri, README_URI) == 0) {
        mime = "text/plain";
        text = mx_xasprintf("%s is a simulated sandboxed MCP server for testing MCP gateways.\n"
                            "Tools: echo, add, slow, get-env, whoami.\n"
                            "Prompt: greet. Resources: %s, %s.\n",
                            ctx->name, README_URI, CONFIG_URI);
    } else if (strcmp(uri, CONFIG_URI) == 0) {
        json_t *cfg = ctx->config_json ? ctx->config_json(ctx->config_arg) : NULL;
        mime = "application/json";
        text = cfg ? json_dumps(cfg, JSON_INDENT(2) | JSON_SORT_KEYS) : mx_xstrdup("{}");
        json_decref(cfg);
    } else if (ctx->claim_uri && strcmp(uri, ctx->claim_uri) == 0) {
        mime = "text/plain";
        text = mx_xasprintf("claimed by %s", ctx->name);
    } else {
        /* MCP 2025-06-18, Resources: -32002 for a resource that does not exist. */
        mx_sim_reply_error(out, MX_SIM_RPC_NORES, "Resource not found",
                           json_pack("{s:s}", "uri", uri));
        return;
    }
    if (text == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_INTERNAL, "out of memory", NULL);
        return;
    }
    out->result =
        json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", mime, "text", text);
    free(text);
}

static json_t *initialize_result(const struct mx_sim_mcp_ctx *ctx)
{
    json_t *r = json_pack("{s:s,s:{s:{s:b},s:{s:b},s:{s:b,s:b}},s:{s:s,s:s},s:s}",
                          "protocolVersion", ctx->revision, "capabilities", "tools", "listChanged",
                          0, "prompts", "listChanged", 0, "resources", "subscribe", 0,
                          "listChanged", 0, "serverInfo", "name", ctx->name, "version", MX_VERSION,
                          "instructions", "A simulated sandboxed MCP server for testing gateways.");
    /* MCP 2025-11-25, Tasks, Server Capabilities */
    if (ctx->tasks)
        json_object_set_new(
            json_object_get(r, "capabilities"), "tasks",
            json_pack("{s:{},s:{},s:{s:{s:{}}}}", "list", "cancel", "requests", "tools", "call"));
    return r;
}

/* tasks/get, tasks/result, tasks/list, tasks/cancel (MCP 2025-11-25);
 * returns false for any other method. */
static bool tasks_request(const struct mx_sim_mcp_ctx *ctx, const char *method, json_t *params,
                          struct mx_sim_reply *out)
{
    if (strcmp(method, "tasks/get") == 0)
        mx_sim_tasks_get_2025(ctx->tasks, params, out);
    else if (strcmp(method, "tasks/result") == 0)
        mx_sim_tasks_result_2025(ctx->tasks, params, out);
    else if (strcmp(method, "tasks/list") == 0)
        mx_sim_tasks_list_2025(ctx->tasks, params, out);
    else if (strcmp(method, "tasks/cancel") == 0)
        mx_sim_tasks_cancel_2025(ctx->tasks, params, out);
    else
        return false;
    return true;
}

static void list_hint(const struct mx_sim_mcp_ctx *ctx, struct mx_sim_reply *out)
{
    /* MCP 2026-07-28, Caching: a freshness hint a 2025 client ignores */
    if (ctx->list_ttl_ms > 0 && out->result)
        json_object_set_new(out->result, "ttlMs", json_integer((json_int_t)ctx->list_ttl_ms));
}

void mx_sim_mcp_request(const struct mx_sim_mcp_ctx *ctx, const char *method, json_t *params,
                        struct mx_sim_reply *out)
{
    char msg[200];

    memset(out, 0, sizeof(*out));
    out->tool = -1;
    if (params != NULL && !json_is_object(params)) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params must be an object", NULL);
        return;
    }
    if (ctx->conf && mx_sim_conf_request(ctx, method, params, out))
        return;
    switch (mx_sim_method_find(method)) {
    case MX_SIM_M_INITIALIZE:
        out->result = initialize_result(ctx);
        return;
    case MX_SIM_M_PING:
        out->result = json_object();
        return;
    case MX_SIM_M_TOOLS_LIST:
        out->result = ctx->huge_pages > 0 ? huge_page(ctx, params) : tools_list(ctx);
        list_hint(ctx, out);
        return;
    case MX_SIM_M_TOOLS_CALL:
        tools_call(ctx, params, out);
        return;
    case MX_SIM_M_PROMPTS_LIST:
        out->result = prompts_list();
        list_hint(ctx, out);
        return;
    case MX_SIM_M_PROMPTS_GET:
        prompts_get(ctx, params, out);
        return;
    case MX_SIM_M_RESOURCES_LIST:
        out->result = resources_list(ctx);
        list_hint(ctx, out);
        return;
    case MX_SIM_M_RESOURCES_READ:
        resources_read(ctx, params, out);
        return;
    case MX_SIM_M_TEMPLATES_LIST:
        out->result = json_pack("{s:[]}", "resourceTemplates");
        list_hint(ctx, out);
        return;
    default:
        if (ctx->tasks && tasks_request(ctx, method, params, out))
            return;
        break;
    }
    snprintf(msg, sizeof(msg), "Method not found: %.100s", method);
    mx_sim_reply_error(out, MX_SIM_RPC_NOMETHOD, msg, NULL);
}
