/* SPDX-License-Identifier: MIT */
/*
 * The conformance catalogue: tools, prompts, resources, a resource template,
 * completion, logging levels and resource subscriptions under the names the
 * conformance suite's server scenarios call, with the answers their
 * descriptions ask for. Pure; sessions and streams belong to server.c and
 * stream.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "alloc.h"
#include "conf.h"
#include "mcp.h"
#include "tasks.h"

/* A 1x1 red PNG and a short 8 kHz silent WAV, both made for this file. */
#define PNG_B64                                                                                    \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
#define WAV_B64 "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="

/* Gap between the messages of a talking tool (the scenarios ask for ~50 ms). */
#define STEP_MS 50

/* How long test_reconnection runs in 2026-07-28, which has no resumable
 * streams: longer than the second a gateway in front may wait before it
 * primes its own stream toward a 2025-11-25 client. */
#define RECONNECT_MS 1500

enum tool {
    T_SIMPLE_TEXT = 0,
    T_IMAGE,
    T_AUDIO,
    T_EMBEDDED,
    T_MIXED,
    T_LOGGING,
    T_ERROR,
    T_PROGRESS,
    T_SAMPLING,
    T_ELICITATION,
    T_ELICIT_DEFAULTS,
    T_ELICIT_ENUMS,
    T_JSON_SCHEMA,
    T_RECONNECT,
    /* 2026-07-28 only: diagnostics of server-stateless, and input-required results */
    T_MISSING_CAP,
    T_STREAM_ELICIT,
    T_LOGGING_TOOL,
    T_TRIGGER_TOOLS,
    T_TRIGGER_PROMPTS,
    T_IRR_ELICIT,
    T_IRR_SAMPLING,
    T_IRR_ROOTS,
    T_IRR_STATE,
    T_IRR_MULTI,
    T_IRR_ROUNDS,
    T_IRR_TAMPERED,
    T_IRR_CAPS,
    T_HEADER_PARAM,
    /* 2026-07-28 tasks extension (SEP-2663) */
    T_GREET,
    T_SLOW_COMPUTE,
    T_FAILING_JOB,
    T_PROTOCOL_ERROR_JOB,
    T_CONFIRM_DELETE,
    T_MULTI_INPUT,
    T_TOOL_WITH_TASK,
    T_CNT
};

enum era { BOTH = 0, LEGACY = 1, MODERN = 2 };

/* execution.taskSupport of a tool (SEP-2663): may it, or must it, run as a task. */
enum task_support { FORBIDDEN = 0, OPTIONAL = 1, REQUIRED = 2 };

struct tool_def {
    const char *name;
    const char *description;
    const char *arg; /* the one required string argument, or NULL */
    enum era era;    /* which revisions list and run it */
    enum task_support task;
};

static const struct tool_def conf_tools[T_CNT] = {
    [T_SIMPLE_TEXT] = {"test_simple_text", "Returns one text item.", NULL, BOTH, FORBIDDEN},
    [T_IMAGE] = {"test_image_content", "Returns a 1x1 PNG image.", NULL, BOTH, FORBIDDEN},
    [T_AUDIO] = {"test_audio_content", "Returns a short WAV clip.", NULL, BOTH, FORBIDDEN},
    [T_EMBEDDED] = {"test_embedded_resource", "Returns an embedded text resource.", NULL, BOTH,
                    FORBIDDEN},
    [T_MIXED] = {"test_multiple_content_types", "Returns text, an image and a resource.", NULL,
                 BOTH, FORBIDDEN},
    [T_LOGGING] = {"test_tool_with_logging", "Sends three log messages while it runs.", NULL, BOTH,
                   FORBIDDEN},
    [T_ERROR] = {"test_error_handling", "Always fails with a tool error.", NULL, BOTH, FORBIDDEN},
    [T_PROGRESS] = {"test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", NULL, BOTH,
                    FORBIDDEN},
    [T_SAMPLING] = {"test_sampling", "Asks the client's model to answer a prompt.", "prompt", BOTH,
                    FORBIDDEN},
    [T_ELICITATION] = {"test_elicitation", "Asks the user for a username and an email.", "message",
                       BOTH, FORBIDDEN},
    [T_ELICIT_DEFAULTS] = {"test_elicitation_sep1034_defaults",
                           "Asks the user for fields that all have defaults.", NULL, BOTH,
                           FORBIDDEN},
    [T_ELICIT_ENUMS] = {"test_elicitation_sep1330_enums",
                        "Asks the user to pick from the five kinds of enum.", NULL, BOTH,
                        FORBIDDEN},
    [T_JSON_SCHEMA] = {"json_schema_2020_12_tool",
                       "Takes arguments described with JSON Schema 2020-12 keywords.", NULL, BOTH,
                       FORBIDDEN},
    [T_RECONNECT] = {"test_reconnection",
                     "Closes its stream before it answers; the answer comes when the client "
                     "resumes the stream.",
                     NULL, BOTH, FORBIDDEN},
    [T_MISSING_CAP] = {"test_missing_capability",
                       "Needs the sampling capability declared in the request.", NULL, MODERN,
                       FORBIDDEN},
    [T_STREAM_ELICIT] = {"test_streaming_elicitation",
                         "Asks the user to confirm, as an input-required result.", NULL, MODERN,
                         FORBIDDEN},
    [T_LOGGING_TOOL] = {"test_logging_tool",
                        "Logs three messages when the request asks for a log level.", NULL, MODERN,
                        FORBIDDEN},
    [T_TRIGGER_TOOLS] = {"test_trigger_tool_change",
                         "Tells open subscriptions that the tool list changed.", NULL, MODERN,
                         FORBIDDEN},
    [T_TRIGGER_PROMPTS] = {"test_trigger_prompt_change",
                           "Tells open subscriptions that the prompt list changed.", NULL, MODERN,
                           FORBIDDEN},
    [T_IRR_ELICIT] = {"test_input_required_result_elicitation",
                      "Asks for the user's name, then greets them.", NULL, MODERN, FORBIDDEN},
    [T_IRR_SAMPLING] = {"test_input_required_result_sampling",
                        "Asks the client's model a question, then returns its answer.", NULL,
                        MODERN, FORBIDDEN},
    [T_IRR_ROOTS] = {"test_input_required_result_list_roots",
                     "Asks for the client's roots, then lists them.", NULL, MODERN, FORBIDDEN},
    [T_IRR_STATE] = {"test_input_required_result_request_state",
                     "Asks for a confirmation with a signed requestState.", NULL, MODERN,
                     FORBIDDEN},
    [T_IRR_MULTI] = {"test_input_required_result_multiple_inputs",
                     "Asks for a name, a greeting and the roots at once.", NULL, MODERN, FORBIDDEN},
    [T_IRR_ROUNDS] = {"test_input_required_result_multi_round",
                      "Asks for a name, then a colour, then answers.", NULL, MODERN, FORBIDDEN},
    [T_IRR_TAMPERED] = {"test_input_required_result_tampered_state",
                        "Refuses a requestState whose signature does not match.", NULL, MODERN,
                        FORBIDDEN},
    [T_IRR_CAPS] = {"test_input_required_result_capabilities",
                    "Asks only what the request's client capabilities allow.", NULL, MODERN,
                    FORBIDDEN},
    [T_HEADER_PARAM] = {"test_header_param",
                        "Echoes its region, which also travels in the Mcp-Param-Region header.",
                        "region", MODERN, FORBIDDEN},
    [T_GREET] = {"greet", "Greets {name}, at once.", "name", MODERN, FORBIDDEN},
    [T_SLOW_COMPUTE] = {"slow_compute", "Computes for {seconds} seconds, as a task when it can.",
                        NULL, MODERN, OPTIONAL},
    [T_FAILING_JOB] = {"failing_job", "A task that ends with a tool error after a second.", NULL,
                       MODERN, REQUIRED},
    [T_PROTOCOL_ERROR_JOB] = {"protocol_error_job", "A task that fails with a protocol error.",
                              NULL, MODERN, OPTIONAL},
    [T_CONFIRM_DELETE] = {"confirm_delete", "Asks the user to confirm deleting {filename}.",
                          "filename", MODERN, OPTIONAL},
    [T_MULTI_INPUT] = {"multi_input", "A task that asks the user two questions at once.", NULL,
                       MODERN, REQUIRED},
    [T_TOOL_WITH_TASK] = {"test_tool_with_task",
                          "Asks for the user's name, then greets them from a task.", NULL, MODERN,
                          REQUIRED},
};

static const char *const task_support_names[] = {"forbidden", "optional", "required"};

/* The x-mcp-header of tool |t|'s argument (2026-07-28, SEP-2243), or NULL. */
static const char *arg_header(int t)
{
    return t == T_HEADER_PARAM ? "Region" : NULL;
}

/* Resources; the bit of each in mx_sim_conf_sess.subs is its index. */
enum res { R_TEXT = 0, R_BINARY, R_WATCHED, R_CNT };

static const char *const res_uris[R_CNT] = {
    [R_TEXT] = "test://static-text",
    [R_BINARY] = "test://static-binary",
    [R_WATCHED] = "test://watched-resource",
};

#define TEMPLATE        "test://template/{id}/data"
#define TEMPLATE_PREFIX "test://template/"
#define TEMPLATE_SUFFIX "/data"

static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

int mx_sim_conf_log_level(const char *name)
{
    for (size_t i = 0; name && i < sizeof(log_levels) / sizeof(log_levels[0]); i++) {
        if (strcmp(name, log_levels[i]) == 0)
            return (int)i;
    }
    return -1;
}

static bool str_is(json_t *v, const char *want)
{
    return json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}

static const char *or_else(const char *s, const char *dflt)
{
    return s ? s : dflt;
}

static json_t *text_item(const char *text)
{
    return json_pack("{s:s,s:s}", "type", "text", "text", text);
}

static json_t *image_item(void)
{
    return json_pack("{s:s,s:s,s:s}", "type", "image", "data", PNG_B64, "mimeType", "image/png");
}

static json_t *resource_item(const char *uri, const char *mime, const char *text)
{
    return json_pack("{s:s,s:{s:s,s:s,s:s}}", "type", "resource", "resource", "uri", uri,
                     "mimeType", mime, "text", text);
}

static json_t *content(json_t *items)
{
    return json_pack("{s:o}", "content", items);
}

/* ---- lists ---- */

/* An input schema using the 2020-12 keywords SEP-1613 and SEP-2106 name:
 * $schema, $defs with an $anchor, composition and conditionals. */
static json_t *schema_2020_12(void)
{
    json_t *s = json_pack(
        "{s:s,s:s,s:{s:{s:s,s:s,s:{s:{s:s},s:{s:s}},s:[s]}},s:{s:{s:s},s:{s:s},s:{s:s}},s:b}",
        "$schema", "https://json-schema.org/draft/2020-12/schema", "type", "object", "$defs",
        "address", "$anchor", "address", "type", "object", "properties", "street", "type", "string",
        "city", "type", "string", "required", "city", "properties", "name", "type", "string",
        "kind", "type", "string", "address", "$ref", "#/$defs/address", "additionalProperties", 0);
    json_object_set_new(
        s, "allOf",
        json_pack("[{s:[{s:[s]},{s:[s]}]}]", "anyOf", "required", "name", "required", "address"));
    json_object_set_new(s, "if",
                        json_pack("{s:{s:{s:s}}}", "properties", "kind", "const", "company"));
    json_object_set_new(s, "then", json_pack("{s:[s]}", "required", "address"));
    json_object_set_new(s, "else", json_pack("{s:[s]}", "required", "name"));
    return s;
}

static json_t *tool_schema(const struct tool_def *t)
{
    if (t == &conf_tools[T_JSON_SCHEMA])
        return schema_2020_12();
    if (t->arg == NULL)
        return json_pack("{s:s,s:{}}", "type", "object", "properties");
    json_t *s = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", t->arg, "type",
                          "string", "required", t->arg);
    /* 2026-07-28, Streamable HTTP (SEP-2243): the client mirrors the
     * argument into Mcp-Param-<header>, which the server checks. */
    const char *header = arg_header((int)(t - conf_tools));
    if (header)
        json_object_set_new(json_object_get(json_object_get(s, "properties"), t->arg),
                            "x-mcp-header", json_string(header));
    return s;
}

/* Whether tool |t| exists in the revision of this request. */
static bool tool_in_era(int t, bool modern)
{
    return conf_tools[t].era == BOTH || conf_tools[t].era == (modern ? MODERN : LEGACY);
}

static json_t *conf_tools_list(bool modern)
{
    json_t *a = json_array();
    for (int i = 0; i < T_CNT; i++) {
        if (!tool_in_era(i, modern))
            continue;
        json_t *tool =
            json_pack("{s:s,s:s,s:o}", "name", conf_tools[i].name, "description",
                      conf_tools[i].description, "inputSchema", tool_schema(&conf_tools[i]));
        if (conf_tools[i].task != FORBIDDEN)
            json_object_set_new(
                tool, "execution",
                json_pack("{s:s}", "taskSupport", task_support_names[conf_tools[i].task]));
        json_array_append_new(a, tool);
    }
    return json_pack("{s:o}", "tools", a);
}

static json_t *arg_def(const char *name, const char *description)
{
    return json_pack("{s:s,s:s,s:b}", "name", name, "description", description, "required", 1);
}

static json_t *conf_prompts_list(bool modern)
{
    json_t *r = json_pack(
        "{s:[{s:s,s:s},{s:s,s:s,s:[o,o]},{s:s,s:s,s:[o]},{s:s,s:s}]}", "prompts", "name",
        "test_simple_prompt", "description", "A prompt without arguments.", "name",
        "test_prompt_with_arguments", "description", "A prompt with two arguments.", "arguments",
        arg_def("arg1", "First test argument"), arg_def("arg2", "Second test argument"), "name",
        "test_prompt_with_embedded_resource", "description", "A prompt that embeds a resource.",
        "arguments", arg_def("resourceUri", "URI of the resource to embed"), "name",
        "test_prompt_with_image", "description", "A prompt with an image.");
    if (modern)
        json_array_append_new(json_object_get(r, "prompts"),
                              json_pack("{s:s,s:s}", "name", "test_input_required_result_prompt",
                                        "description", "Asks the user for context first."));
    return r;
}

static json_t *conf_resources_list(void)
{
    return json_pack("{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}", "resources",
                     "uri", res_uris[R_TEXT], "name", "static-text", "description",
                     "A fixed text resource.", "mimeType", "text/plain", "uri", res_uris[R_BINARY],
                     "name", "static-binary", "description", "A fixed PNG image.", "mimeType",
                     "image/png", "uri", res_uris[R_WATCHED], "name", "watched-resource",
                     "description", "A resource clients may subscribe to.", "mimeType",
                     "text/plain");
}

static json_t *conf_templates_list(void)
{
    return json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "resourceTemplates", "uriTemplate", TEMPLATE,
                     "name", "template-data", "description", "JSON data for any id.", "mimeType",
                     "application/json");
}

/* ---- tools ---- */

static json_t *log_message(const char *text)
{
    return mx_sim_rpc_notification(
        "notifications/message",
        json_pack("{s:s,s:s,s:s}", "level", "info", "logger", "conformance", "data", text));
}

static json_t *progress_message(json_t *token, int progress)
{
    return mx_sim_rpc_notification(
        "notifications/progress",
        json_pack("{s:O,s:i,s:i}", "progressToken", token, "progress", progress, "total", 100));
}

static json_t *elicit_defaults_schema(void)
{
    return json_pack(
        "{s:s,s:{s:{s:s,s:s},s:{s:s,s:i},s:{s:s,s:f},s:{s:s,s:[s,s,s],s:s},s:{s:s,s:b}}}", "type",
        "object", "properties", "name", "type", "string", "default", "John Doe", "age", "type",
        "integer", "default", 30, "score", "type", "number", "default", 95.5, "status", "type",
        "string", "enum", "active", "inactive", "pending", "default", "active", "verified", "type",
        "boolean", "default", 1);
}

static json_t *choice(const char *value, const char *title)
{
    return json_pack("{s:s,s:s}", "const", value, "title", title);
}

static json_t *elicit_enums_schema(void)
{
    json_t *props = json_object();
    json_object_set_new(
        props, "untitledSingle",
        json_pack("{s:s,s:[s,s,s]}", "type", "string", "enum", "option1", "option2", "option3"));
    json_object_set_new(
        props, "titledSingle",
        json_pack("{s:s,s:[o,o,o]}", "type", "string", "oneOf", choice("value1", "First Option"),
                  choice("value2", "Second Option"), choice("value3", "Third Option")));
    json_object_set_new(props, "legacyEnum",
                        json_pack("{s:s,s:[s,s,s],s:[s,s,s]}", "type", "string", "enum", "opt1",
                                  "opt2", "opt3", "enumNames", "Option One", "Option Two",
                                  "Option Three"));
    json_object_set_new(props, "untitledMulti",
                        json_pack("{s:s,s:{s:s,s:[s,s,s]}}", "type", "array", "items", "type",
                                  "string", "enum", "option1", "option2", "option3"));
    json_object_set_new(props, "titledMulti",
                        json_pack("{s:s,s:{s:[o,o,o]}}", "type", "array", "items", "anyOf",
                                  choice("value1", "First Choice"),
                                  choice("value2", "Second Choice"),
                                  choice("value3", "Third Choice")));
    return json_pack("{s:s,s:o}", "type", "object", "properties", props);
}

static json_t *elicit(const char *message, json_t *schema)
{
    return json_pack("{s:s,s:{s:s,s:o}}", "method", "elicitation/create", "params", "message",
                     message, "requestedSchema", schema);
}

/* ---- input-required results (2026-07-28, SEP-2322) ---- */

/* requestState is "<payload>.<hex HMAC-SHA256 of payload>": opaque to the
 * client, and a changed byte fails the check. */
static char *state_make(const struct mx_sim_conf_sess *st, const char *payload)
{
    unsigned char mac[32];
    unsigned int mac_len = sizeof(mac);
    char hex[65];
    HMAC(EVP_sha256(), st->state_key, MX_SIM_STATE_KEY_LEN, (const unsigned char *)payload,
         strlen(payload), mac, &mac_len);
    for (unsigned i = 0; i < mac_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    return mx_xasprintf("%s.%s", payload, hex);
}

/* The payload of a well-signed |state| that starts with |prefix|, or NULL. */
static char *state_open(const struct mx_sim_conf_sess *st, const char *state, const char *prefix)
{
    const char *dot = state ? strrchr(state, '.') : NULL;
    if (dot == NULL || strncmp(state, prefix, strlen(prefix)) != 0)
        return NULL;
    char *payload = mx_xstrndup(state, (size_t)(dot - state));
    char *want = state_make(st, payload);
    bool ok = strlen(want) == strlen(state) && CRYPTO_memcmp(want, state, strlen(state)) == 0;
    free(want);
    if (!ok) {
        free(payload);
        return NULL;
    }
    return payload;
}

static json_t *elicit_one(const char *message, const char *field, const char *type)
{
    return elicit(message, json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties",
                                     field, "type", type, "required", field));
}

static json_t *sample(const char *text, int max_tokens)
{
    return json_pack("{s:s,s:{s:[{s:s,s:{s:s,s:s}}],s:i}}", "method", "sampling/createMessage",
                     "params", "messages", "role", "user", "content", "type", "text", "text", text,
                     "maxTokens", max_tokens);
}

static json_t *roots_request(void)
{
    return json_pack("{s:s,s:{}}", "method", "roots/list", "params");
}

/* Make |out| an InputRequiredResult asking |requests| (stolen), with a signed
 * requestState carrying |payload| when it is not NULL. */
static void input_required(const struct mx_sim_conf_sess *st, struct mx_sim_reply *out,
                           json_t *requests, const char *payload)
{
    out->result = json_pack("{s:s,s:o}", "resultType", "input_required", "inputRequests", requests);
    if (payload) {
        char *state = state_make(st, payload);
        json_object_set_new(out->result, "requestState", json_string(state));
        free(state);
    }
}

/* inputResponses[key] when it is an object (a client's result), else NULL. */
static json_t *answer_of(json_t *params, const char *key)
{
    json_t *r = json_object_get(json_object_get(params, "inputResponses"), key);
    return json_is_object(r) ? r : NULL;
}

/* The accepted elicitation field |field| of answer |key|, or NULL. */
static const char *elicited(json_t *params, const char *key, const char *field)
{
    json_t *a = answer_of(params, key);
    if (!str_is(json_object_get(a, "action"), "accept"))
        return NULL;
    return json_string_value(json_object_get(json_object_get(a, "content"), field));
}

static const char *sampled(json_t *params, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(answer_of(params, key), "content"), "text"));
}

static void complete_text(struct mx_sim_reply *out, const char *text)
{
    out->result = content(json_pack("[o]", text_item(text)));
}

/* A requestState that is missing or fails its signature: -32602. */
static bool state_required(const struct mx_sim_conf_sess *st, json_t *params, const char *prefix,
                           char **payload, struct mx_sim_reply *out)
{
    *payload = state_open(st, json_string_value(json_object_get(params, "requestState")), prefix);
    if (*payload == NULL)
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "requestState is missing or failed its integrity check", NULL);
    return *payload != NULL;
}

/* inputResponses, when present, is an object (2026-07-28, Multi Round-Trip
 * Requests); anything else is -32602. */
static bool responses_valid(json_t *params, struct mx_sim_reply *out)
{
    json_t *responses = json_object_get(params, "inputResponses");
    if (responses == NULL || json_is_object(responses))
        return true;
    mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "inputResponses must be an object", NULL);
    return false;
}

/* 2026-07-28, Missing Required Client Capabilities: -32021 with HTTP 400
 * when the request's clientCapabilities lack |cap|. */
static void missing_cap(struct mx_sim_reply *out, const char *cap)
{
    char msg[120];
    snprintf(msg, sizeof(msg),
             "this tool needs the %s capability, which the request's clientCapabilities do not "
             "declare",
             cap);
    mx_sim_reply_error(out, MX_SIM_RPC_NOCAP, msg,
                       json_pack("{s:{s:{}}}", "requiredCapabilities", cap));
    out->http_status = 400;
}

/*
 * One question |request| (stolen) of a 2026-07-28 tool, under |key|: the
 * client's answer when the retry carries it (borrowed from |params|), else
 * NULL with |out| made what the request gets instead: -32021 when it does not
 * declare |cap| (|capable| false), an input-required result asking |request|
 * otherwise.
 */
static json_t *mrtr_ask(const struct mx_sim_conf_sess *st, bool capable, const char *cap,
                        const char *key, json_t *params, json_t *request, struct mx_sim_reply *out)
{
    json_t *answer = NULL;
    if (!capable) {
        missing_cap(out, cap);
    } else if (responses_valid(params, out)) {
        answer = answer_of(params, key);
        if (answer == NULL) {
            input_required(st, out, json_pack("{s:o}", key, request), NULL);
            return NULL;
        }
    }
    json_decref(request);
    return answer;
}

/* The CallToolResult of tool |tool| for the client's |result| to its question,
 * the same in both revisions: the sampled text, or the elicitation's action
 * and content. */
static json_t *answer_result(int tool, json_t *result)
{
    char *text;
    if (tool == T_SAMPLING) {
        const char *said =
            json_string_value(json_object_get(json_object_get(result, "content"), "text"));
        text = mx_xasprintf("LLM response: %.1000s", said ? said : "(no text)");
    } else {
        const char *action = json_string_value(json_object_get(result, "action"));
        json_t *c = json_object_get(result, "content");
        char *dump = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        text = mx_xasprintf("%s: action=%.20s, content=%.1000s",
                            tool == T_ELICITATION ? "User response" : "Elicitation completed",
                            action ? action : "(none)", dump ? dump : "{}");
        free(dump);
    }
    json_t *r = mx_sim_text_result(text, false);
    free(text);
    return r;
}

/*
 * A tool that asks the client |request| (stolen), then answers with
 * answer_result(). 2025: the request goes on the call's SSE stream (stream.c
 * plays it), and a session that did not declare |cap| gets a tool error.
 * 2026-07-28, which has no server-to-client requests: an input-required
 * result under the key |cap|, finished by the retry that carries the answer.
 */
static void ask(const struct mx_sim_conf_sess *st, json_t *params, bool capable, const char *cap,
                json_t *request, struct mx_sim_reply *out)
{
    if (st->modern) {
        json_t *answer = mrtr_ask(st, capable, cap, cap, params, request, out);
        if (answer)
            out->result = answer_result(out->conf_tool, answer);
        return;
    }
    if (!capable) {
        char msg[120];
        json_decref(request);
        snprintf(msg, sizeof(msg), "the client did not declare the %s capability", cap);
        out->result = mx_sim_text_result(msg, true);
        return;
    }
    out->script = MX_SIM_SCRIPT_ASK;
    out->ask = request;
}

static void irr_tool(const struct mx_sim_conf_sess *st, int t, json_t *params,
                     struct mx_sim_reply *out)
{
    json_t *responses = json_object_get(params, "inputResponses");
    char *payload = NULL;
    char *text = NULL;

    if (!responses_valid(params, out))
        return;
    switch (t) {
    case T_IRR_ELICIT: {
        const char *name = elicited(params, "user_name", "name");
        if (name == NULL) {
            input_required(
                st, out,
                json_pack("{s:o}", "user_name", elicit_one("What is your name?", "name", "string")),
                NULL);
            return;
        }
        text = mx_xasprintf("Hello, %.200s!", name);
        break;
    }
    case T_IRR_SAMPLING: {
        const char *said = sampled(params, "capital_question");
        if (said == NULL) {
            input_required(st, out,
                           json_pack("{s:o}", "capital_question",
                                     sample("What is the capital of France?", 100)),
                           NULL);
            return;
        }
        text = mx_xasprintf("The model said: %.500s", said);
        break;
    }
    case T_IRR_ROOTS: {
        json_t *roots = json_object_get(answer_of(params, "client_roots"), "roots");
        if (!json_is_array(roots)) {
            input_required(st, out, json_pack("{s:o}", "client_roots", roots_request()), NULL);
            return;
        }
        json_t *uris = json_array();
        size_t i;
        json_t *r;
        json_array_foreach(roots, i, r)
        {
            if (json_is_string(json_object_get(r, "uri")))
                json_array_append(uris, json_object_get(r, "uri"));
        }
        char *list = json_dumps(uris, JSON_COMPACT);
        json_decref(uris);
        text = mx_xasprintf("Client roots: %.1000s", list ? list : "[]");
        free(list);
        break;
    }
    case T_IRR_STATE:
    case T_IRR_TAMPERED: {
        const char *prefix = t == T_IRR_STATE ? "request_state" : "tampered_state";
        if (responses == NULL || json_object_get(params, "requestState") == NULL) {
            input_required(
                st, out,
                json_pack("{s:o}", "confirm", elicit_one("Please confirm", "ok", "boolean")),
                prefix);
            return;
        }
        if (!state_required(st, params, prefix, &payload, out))
            return;
        if (answer_of(params, "confirm") == NULL) {
            input_required(
                st, out,
                json_pack("{s:o}", "confirm", elicit_one("Please confirm", "ok", "boolean")),
                payload);
            free(payload);
            return;
        }
        text = mx_xstrdup("state-ok: the requestState came back intact");
        break;
    }
    case T_IRR_MULTI: {
        static const char *const keys[] = {"user_name", "greeting", "client_roots"};
        json_t *missing = json_object();
        if (responses && !state_required(st, params, "multiple_inputs", &payload, out)) {
            json_decref(missing);
            return;
        }
        for (size_t k = 0; k < 3; k++) {
            if (answer_of(params, keys[k]))
                continue;
            json_object_set_new(missing, keys[k],
                                k == 0   ? elicit_one("What is your name?", "name", "string")
                                : k == 1 ? sample("Generate a greeting", 50)
                                         : roots_request());
        }
        if (json_object_size(missing) > 0) {
            input_required(st, out, missing, "multiple_inputs");
            free(payload);
            return;
        }
        json_decref(missing);
        text = mx_xasprintf("All inputs received: name=%.100s, greeting=%.200s",
                            or_else(elicited(params, "user_name", "name"), "(declined)"),
                            or_else(sampled(params, "greeting"), "(none)"));
        break;
    }
    case T_IRR_ROUNDS: {
        const char *name = elicited(params, "step1", "name");
        const char *color = elicited(params, "step2", "color");
        if (responses == NULL || (name == NULL && color == NULL)) {
            input_required(st, out,
                           json_pack("{s:o}", "step1",
                                     elicit_one("Step 1: What is your name?", "name", "string")),
                           "multi_round:1");
            return;
        }
        if (!state_required(st, params, "multi_round:", &payload, out))
            return;
        if (strcmp(payload, "multi_round:1") == 0 && name) {
            char *next = mx_xasprintf("multi_round:2:%.100s", name);
            input_required(
                st, out,
                json_pack("{s:o}", "step2",
                          elicit_one("Step 2: What is your favorite color?", "color", "string")),
                next);
            free(next);
            free(payload);
            return;
        }
        if (strncmp(payload, "multi_round:2:", 14) == 0 && color) {
            text = mx_xasprintf("Round 3: %.100s likes %.100s", payload + 14, color);
            break;
        }
        free(payload);
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "inputResponses do not answer this round's request", NULL);
        return;
    }
    case T_IRR_CAPS: {
        json_t *req = json_object();
        if (responses) {
            complete_text(out, "Inputs received for the declared capabilities");
            return;
        }
        if (st->elicitation)
            json_object_set_new(req, "user_name",
                                elicit_one("What is your name?", "name", "string"));
        if (st->sampling)
            json_object_set_new(req, "greeting", sample("Generate a greeting", 50));
        if (st->roots)
            json_object_set_new(req, "client_roots", roots_request());
        if (json_object_size(req) == 0) {
            json_decref(req);
            complete_text(out, "The client declared nothing this tool could ask for");
            return;
        }
        input_required(st, out, req, NULL);
        return;
    }
    default:
        return;
    }
    complete_text(out, text);
    free(text);
    free(payload);
}

/* ---- tasks (2026-07-28 extension, SEP-2663) ---- */

/* -32021 naming the tasks extension: a request that did not declare it asked
 * for a task method, or for a tool that only runs as a task. */
static void missing_tasks_ext(struct mx_sim_reply *out, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof(msg),
             "%s needs the " MX_SIM_TASKS_EXT " extension; declare it in the request's "
             "clientCapabilities.extensions",
             what);
    mx_sim_reply_error(
        out, MX_SIM_RPC_NOCAP, msg,
        json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", MX_SIM_TASKS_EXT));
    out->http_status = 400;
}

static json_t *confirm_request(const char *message)
{
    return elicit_one(message, "confirm", "boolean");
}

/*
 * The task-supporting tools. With the extension declared they answer with a
 * CreateTaskResult (test_tool_with_task first asks for a name in an
 * input-required round, then creates its task); without it, a tool whose
 * taskSupport is required is -32021 and the others run at once.
 */
static void task_tool(const struct mx_sim_conf_sess *st, int t, json_t *args, json_t *params,
                      const char *arg, struct mx_sim_reply *out)
{
    char *text = NULL;
    if (conf_tools[t].task == REQUIRED && !st->tasks_ext) {
        missing_tasks_ext(out, conf_tools[t].name);
        return;
    }
    switch (t) {
    case T_GREET:
        text = mx_xasprintf("Hello, %.200s!", arg);
        complete_text(out, text);
        break;
    case T_SLOW_COMPUTE: {
        json_t *secs = json_object_get(args, "seconds");
        const char *label = or_else(json_string_value(json_object_get(args, "label")), "job");
        if (!json_is_number(secs) || json_number_value(secs) < 0 ||
            json_number_value(secs) > 3600) {
            out->result =
                mx_sim_text_result("argument 'seconds' must be a number from 0 to 3600", true);
            return;
        }
        text = mx_xasprintf("Computed %.100s in %g s", label, json_number_value(secs));
        if (st->tasks_ext)
            mx_sim_tasks_create(st->tasks, MX_SIM_TASK_RESULT, text,
                                (int64_t)(json_number_value(secs) * 1000), NULL, out);
        else
            complete_text(out, text);
        break;
    }
    case T_FAILING_JOB:
        mx_sim_tasks_create(st->tasks, MX_SIM_TASK_TOOL_ERROR, "failing_job failed on purpose",
                            1000, NULL, out);
        break;
    case T_PROTOCOL_ERROR_JOB:
        if (st->tasks_ext)
            mx_sim_tasks_create(st->tasks, MX_SIM_TASK_PROTOCOL,
                                "protocol_error_job failed on purpose (a simulated internal error)",
                                500, NULL, out);
        else
            mx_sim_reply_error(out, MX_SIM_RPC_INTERNAL,
                               "protocol_error_job failed on purpose (a simulated internal error)",
                               NULL);
        break;
    case T_CONFIRM_DELETE: {
        char *ask_text = mx_xasprintf("Delete %.200s?", arg);
        text = mx_xasprintf("Deleted %.200s", arg);
        if (st->tasks_ext) {
            mx_sim_tasks_create(st->tasks, MX_SIM_TASK_RESULT, text, 0,
                                json_pack("{s:o}", "confirm", confirm_request(ask_text)), out);
        } else {
            json_t *answer = mrtr_ask(st, st->elicitation, "elicitation", "confirm", params,
                                      confirm_request(ask_text), out);
            if (answer)
                complete_text(out, str_is(json_object_get(answer, "action"), "accept")
                                       ? text
                                       : "Nothing was deleted");
        }
        free(ask_text);
        break;
    }
    case T_MULTI_INPUT:
        mx_sim_tasks_create(st->tasks, MX_SIM_TASK_RESULT, "Both answers received", 0,
                            json_pack("{s:o,s:o}", "name",
                                      elicit_one("What is your name?", "name", "string"), "confirm",
                                      confirm_request("Go ahead?")),
                            out);
        break;
    case T_TOOL_WITH_TASK: {
        /* SEP-2663 with SEP-2322: input rounds first, the task on the last. */
        if (!responses_valid(params, out))
            return;
        const char *name = elicited(params, "user_name", "name");
        if (name == NULL) {
            input_required(
                st, out,
                json_pack("{s:o}", "user_name", elicit_one("What is your name?", "name", "string")),
                NULL);
            return;
        }
        text = mx_xasprintf("Hello, %.200s, from a task!", name);
        mx_sim_tasks_create(st->tasks, MX_SIM_TASK_RESULT, text, 300, NULL, out);
        break;
    }
    default:
        break;
    }
    free(text);
}

/* tasks/get, tasks/update, tasks/cancel: only for requests that declare the
 * extension (SEP-2663, Required Capabilities). */
static void conf_tasks(const struct mx_sim_conf_sess *st, const char *method, json_t *params,
                       struct mx_sim_reply *out)
{
    if (!st->tasks_ext) {
        missing_tasks_ext(out, method);
        return;
    }
    if (strcmp(method, "tasks/get") == 0)
        mx_sim_tasks_get(st->tasks, params, out);
    else if (strcmp(method, "tasks/update") == 0)
        mx_sim_tasks_update(st->tasks, params, out);
    else
        mx_sim_tasks_cancel(st->tasks, params, out);
}

static void run_tool(const struct mx_sim_mcp_ctx *ctx, int t, json_t *args, json_t *params,
                     struct mx_sim_reply *out)
{
    const char *arg =
        conf_tools[t].arg ? json_string_value(json_object_get(args, conf_tools[t].arg)) : NULL;
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");

    if (conf_tools[t].arg && arg == NULL) {
        char msg[120];
        snprintf(msg, sizeof(msg), "argument '%s' must be a string", conf_tools[t].arg);
        out->result = mx_sim_text_result(msg, true);
        return;
    }
    out->conf_tool = t;
    switch ((enum tool)t) {
    case T_SIMPLE_TEXT:
        out->result = content(json_pack("[o]", text_item("This is a simple text response for "
                                                         "testing.")));
        return;
    case T_IMAGE:
        out->result = content(json_pack("[o]", image_item()));
        return;
    case T_AUDIO:
        out->result = content(json_pack("[{s:s,s:s,s:s}]", "type", "audio", "data", WAV_B64,
                                        "mimeType", "audio/wav"));
        return;
    case T_EMBEDDED:
        out->result =
            content(json_pack("[o]", resource_item("test://embedded-resource", "text/plain",
                                                   "This is an embedded resource "
                                                   "content.")));
        return;
    case T_MIXED:
        out->result =
            content(json_pack("[o,o,o]", text_item("Multiple content types test:"), image_item(),
                              resource_item("test://mixed-content-resource", "application/json",
                                            "{\"test\":\"data\",\"value\":123}")));
        return;
    case T_ERROR:
        out->result =
            mx_sim_text_result("This tool intentionally returns an error for testing", true);
        return;
    case T_LOGGING:
        out->script = MX_SIM_SCRIPT_EVENTS;
        out->interval_ms = STEP_MS;
        out->events = json_array();
        /* MCP 2025-11-25, Logging: only messages at or above the session's level. */
        if (ctx->conf->log_level <= 1) {
            json_array_append_new(out->events, log_message("Tool execution started"));
            json_array_append_new(out->events, log_message("Tool processing data"));
            json_array_append_new(out->events, log_message("Tool execution completed"));
        }
        out->result = content(json_pack("[o]", text_item("Tool with logging executed")));
        return;
    case T_PROGRESS:
        out->script = MX_SIM_SCRIPT_EVENTS;
        out->interval_ms = STEP_MS;
        out->events = json_array();
        /* MCP 2025-11-25, Progress: a token is a string or an integer. */
        if (json_is_string(token) || json_is_integer(token)) {
            for (int p = 0; p <= 100; p += 50)
                json_array_append_new(out->events, progress_message(token, p));
        }
        out->result = content(json_pack("[o]", text_item("Tool with progress executed")));
        return;
    case T_SAMPLING:
        ask(ctx->conf, params, ctx->conf->sampling, "sampling",
            json_pack("{s:s,s:{s:[{s:s,s:{s:s,s:s}}],s:i}}", "method", "sampling/createMessage",
                      "params", "messages", "role", "user", "content", "type", "text", "text", arg,
                      "maxTokens", 100),
            out);
        return;
    case T_ELICITATION:
        ask(ctx->conf, params, ctx->conf->elicitation, "elicitation",
            elicit(arg, json_pack("{s:s,s:{s:{s:s,s:s},s:{s:s,s:s}},s:[s,s]}", "type", "object",
                                  "properties", "username", "type", "string", "description",
                                  "User's response", "email", "type", "string", "description",
                                  "User's email address", "required", "username", "email")),
            out);
        return;
    case T_ELICIT_DEFAULTS:
        ask(ctx->conf, params, ctx->conf->elicitation, "elicitation",
            elicit("Please review these values; each has a default.", elicit_defaults_schema()),
            out);
        return;
    case T_ELICIT_ENUMS:
        ask(ctx->conf, params, ctx->conf->elicitation, "elicitation",
            elicit("Please pick from each list.", elicit_enums_schema()), out);
        return;
    case T_RECONNECT:
        out->result =
            content(json_pack("[o]", text_item("Reconnection test completed successfully")));
        if (ctx->conf->modern) {
            out->script = MX_SIM_SCRIPT_EVENTS;
            out->interval_ms = RECONNECT_MS;
            out->events = json_array();
        } else {
            /* MCP 2025-11-25, Streamable HTTP (SEP-1699): prime, close, and
             * answer on the GET that resumes the stream */
            out->script = MX_SIM_SCRIPT_POLL;
        }
        return;
    case T_JSON_SCHEMA: {
        char *dump = args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        char *text = mx_xasprintf("arguments: %.1000s", dump ? dump : "{}");
        out->result = content(json_pack("[o]", text_item(text)));
        free(dump);
        free(text);
        return;
    }
    case T_MISSING_CAP:
        if (!ctx->conf->sampling) {
            missing_cap(out, "sampling");
            return;
        }
        complete_text(out, "sampling is declared");
        return;
    case T_STREAM_ELICIT:
        if (mrtr_ask(ctx->conf, ctx->conf->elicitation, "elicitation", "confirm", params,
                     elicit_one("Continue?", "ok", "boolean"), out))
            complete_text(out, "confirmed");
        return;
    case T_LOGGING_TOOL:
        out->script = MX_SIM_SCRIPT_EVENTS;
        out->interval_ms = STEP_MS;
        out->events = json_array();
        /* 2026-07-28, Logging: no level in the request's _meta, no messages. */
        if (ctx->conf->log_level <= 1) {
            json_array_append_new(out->events, log_message("Tool execution started"));
            json_array_append_new(out->events, log_message("Tool execution completed"));
        }
        out->result = content(json_pack("[o]", text_item("Logging tool executed")));
        return;
    case T_TRIGGER_TOOLS:
    case T_TRIGGER_PROMPTS:
        out->changed = t == T_TRIGGER_TOOLS ? MX_SIM_CHANGED_TOOLS : MX_SIM_CHANGED_PROMPTS;
        complete_text(out,
                      t == T_TRIGGER_TOOLS ? "The tool list changed" : "The prompt list changed");
        return;
    case T_IRR_ELICIT:
    case T_IRR_SAMPLING:
    case T_IRR_ROOTS:
    case T_IRR_STATE:
    case T_IRR_MULTI:
    case T_IRR_ROUNDS:
    case T_IRR_TAMPERED:
    case T_IRR_CAPS:
        irr_tool(ctx->conf, t, params, out);
        return;
    case T_HEADER_PARAM: {
        /* modern.c checked the header against |arg| before the call */
        char *text = mx_xasprintf("Region: %.200s", arg);
        complete_text(out, text);
        free(text);
        return;
    }
    case T_GREET:
    case T_SLOW_COMPUTE:
    case T_FAILING_JOB:
    case T_PROTOCOL_ERROR_JOB:
    case T_CONFIRM_DELETE:
    case T_MULTI_INPUT:
    case T_TOOL_WITH_TASK:
        task_tool(ctx->conf, t, args, params, arg, out);
        return;
    case T_CNT:
        break;
    }
}

json_t *mx_sim_conf_answer(int tool, json_t *response)
{
    json_t *result = json_object_get(response, "result");
    json_t *err = json_object_get(response, "error");
    char *text;

    if (result == NULL) {
        const char *m = json_string_value(json_object_get(err, "message"));
        text = mx_xasprintf("The client refused the request: %.200s", m ? m : "(no message)");
        json_t *r = mx_sim_text_result(text, true);
        free(text);
        return r;
    }
    return answer_result(tool, result);
}

static void conf_tools_call(const struct mx_sim_mcp_ctx *ctx, json_t *params,
                            struct mx_sim_reply *out)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    char msg[160];

    if (name == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params.name must be a string", NULL);
        return;
    }
    if (args != NULL && !json_is_null(args) && !json_is_object(args)) {
        out->result = mx_sim_text_result("arguments must be an object", true);
        return;
    }
    for (int t = 0; t < T_CNT; t++) {
        if (tool_in_era(t, ctx->conf->modern) && strcmp(name, conf_tools[t].name) == 0) {
            run_tool(ctx, t, args, params, out);
            return;
        }
    }
    snprintf(msg, sizeof(msg), "Unknown tool: %.100s", name);
    mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, msg, NULL);
}

/* ---- prompts ---- */

static json_t *user_message(json_t *item)
{
    return json_pack("{s:s,s:o}", "role", "user", "content", item);
}

static void conf_prompts_get(const struct mx_sim_conf_sess *st, json_t *params,
                             struct mx_sim_reply *out)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    char msg[160];
    char text[400];

    if (name == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params.name must be a string", NULL);
        return;
    }
    if (strcmp(name, "test_simple_prompt") == 0) {
        out->result = json_pack("{s:[o]}", "messages",
                                user_message(text_item("This is a simple prompt for testing.")));
        return;
    }
    if (strcmp(name, "test_prompt_with_arguments") == 0) {
        const char *a1 = json_string_value(json_object_get(args, "arg1"));
        const char *a2 = json_string_value(json_object_get(args, "arg2"));
        if (a1 == NULL || a2 == NULL) {
            mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "arguments arg1 and arg2 are required",
                               NULL);
            return;
        }
        snprintf(text, sizeof(text), "Prompt with arguments: arg1='%.150s', arg2='%.150s'", a1, a2);
        out->result = json_pack("{s:[o]}", "messages", user_message(text_item(text)));
        return;
    }
    if (strcmp(name, "test_prompt_with_embedded_resource") == 0) {
        const char *uri = json_string_value(json_object_get(args, "resourceUri"));
        if (uri == NULL) {
            mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "argument resourceUri is required", NULL);
            return;
        }
        out->result =
            json_pack("{s:[o,o]}", "messages",
                      user_message(resource_item(uri, "text/plain",
                                                 "Embedded resource content for testing.")),
                      user_message(text_item("Please process the embedded resource above.")));
        return;
    }
    if (strcmp(name, "test_prompt_with_image") == 0) {
        out->result = json_pack("{s:[o,o]}", "messages", user_message(image_item()),
                                user_message(text_item("Please analyze the image above.")));
        return;
    }
    if (st->modern && strcmp(name, "test_input_required_result_prompt") == 0) {
        const char *ctx_text = elicited(params, "user_context", "context");
        if (ctx_text == NULL) {
            input_required(
                st, out,
                json_pack("{s:o}", "user_context",
                          elicit_one("What context should the prompt use?", "context", "string")),
                NULL);
            return;
        }
        snprintf(text, sizeof(text), "Answer with this context in mind: %.300s", ctx_text);
        out->result = json_pack("{s:[o]}", "messages", user_message(text_item(text)));
        return;
    }
    snprintf(msg, sizeof(msg), "Unknown prompt: %.100s", name);
    mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, msg, NULL);
}

/* ---- resources ---- */

static int res_find(const char *uri)
{
    for (int i = 0; uri && i < R_CNT; i++) {
        if (strcmp(uri, res_uris[i]) == 0)
            return i;
    }
    return -1;
}

/* The {id} of "test://template/{id}/data": 1-64 characters, no '/'. */
static bool template_id(const char *uri, char *id, size_t cap)
{
    size_t pl = strlen(TEMPLATE_PREFIX), sl = strlen(TEMPLATE_SUFFIX), n;
    if (uri == NULL || strncmp(uri, TEMPLATE_PREFIX, pl) != 0)
        return false;
    n = strlen(uri + pl);
    if (n <= sl || n - sl > 64 || n - sl >= cap || strcmp(uri + pl + n - sl, TEMPLATE_SUFFIX) != 0)
        return false;
    memcpy(id, uri + pl, n - sl);
    id[n - sl] = '\0';
    return strchr(id, '/') == NULL;
}

static void not_found(struct mx_sim_reply *out, const char *uri)
{
    /* MCP 2025-11-25, Resources: -32002 for a resource that does not exist. */
    mx_sim_reply_error(out, MX_SIM_RPC_NORES, "Resource not found", json_pack("{s:s}", "uri", uri));
}

static void conf_resources_read(json_t *params, struct mx_sim_reply *out)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    char id[80];

    if (uri == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params.uri must be a string", NULL);
        return;
    }
    switch (res_find(uri)) {
    case R_TEXT:
        out->result =
            json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "text/plain",
                      "text", "This is the content of the static text resource.");
        return;
    case R_BINARY:
        out->result = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                                "image/png", "blob", PNG_B64);
        return;
    case R_WATCHED:
        out->result = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                                "text/plain", "text", "Watched resource content.");
        return;
    default:
        break;
    }
    if (!template_id(uri, id, sizeof(id))) {
        not_found(out, uri);
        return;
    }
    json_t *doc =
        json_pack("{s:s,s:b,s:s+}", "id", id, "templateTest", 1, "data", "Data for ID: ", id);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    out->result = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
                            "application/json", "text", text);
    free(text);
}

static void subscribe(struct mx_sim_conf_sess *st, json_t *params, bool on,
                      struct mx_sim_reply *out)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    int r = res_find(uri);
    if (uri == NULL) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "params.uri must be a string", NULL);
        return;
    }
    if (r < 0) {
        not_found(out, uri);
        return;
    }
    if (on) {
        st->subs |= 1u << r;
        st->subs_cnt++;
    } else {
        st->subs &= ~(1u << r);
    }
    out->result = json_object();
}

/* ---- completion and logging ---- */

static void complete(json_t *params, struct mx_sim_reply *out)
{
    static const char *const words[] = {"paris", "park", "party", "pasta", "hello", "world"};
    json_t *ref = json_object_get(params, "ref");
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *arg =
        json_string_value(json_object_get(json_object_get(params, "argument"), "name"));
    const char *value =
        json_string_value(json_object_get(json_object_get(params, "argument"), "value"));
    json_t *values = json_array();

    if (type == NULL || arg == NULL || value == NULL) {
        json_decref(values);
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "params.ref.type, argument.name and argument.value are required", NULL);
        return;
    }
    if (strcmp(type, "ref/prompt") == 0 &&
        str_is(json_object_get(ref, "name"), "test_prompt_with_arguments")) {
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
            if (strncmp(words[i], value, strlen(value)) == 0)
                json_array_append_new(values, json_string(words[i]));
        }
    } else if (strcmp(type, "ref/resource") == 0 && str_is(json_object_get(ref, "uri"), TEMPLATE) &&
               strcmp(arg, "id") == 0) {
        for (int i = 1; i <= 3; i++) {
            char id[8];
            snprintf(id, sizeof(id), "%d", i * 100 + 23);
            if (strncmp(id, value, strlen(value)) == 0)
                json_array_append_new(values, json_string(id));
        }
    }
    out->result = json_pack("{s:{s:O,s:I,s:b}}", "completion", "values", values, "total",
                            (json_int_t)json_array_size(values), "hasMore", 0);
    json_decref(values);
}

static void set_level(struct mx_sim_conf_sess *st, json_t *params, struct mx_sim_reply *out)
{
    int l = mx_sim_conf_log_level(json_string_value(json_object_get(params, "level")));
    if (l < 0) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "params.level must be one of debug, info, notice, warning, error, "
                           "critical, alert, emergency",
                           NULL);
        return;
    }
    st->log_level = l;
    out->result = json_object();
}

static json_t *initialize(const struct mx_sim_mcp_ctx *ctx, json_t *params)
{
    json_t *caps = json_object_get(params, "capabilities");
    ctx->conf->sampling = json_is_object(json_object_get(caps, "sampling"));
    ctx->conf->elicitation = json_is_object(json_object_get(caps, "elicitation"));
    ctx->conf->log_level = 1; /* info until the client says otherwise */
    return json_pack("{s:s,s:{s:{s:b},s:{s:b},s:{s:b,s:b},s:{},s:{}},s:{s:s,s:s}}",
                     "protocolVersion", ctx->revision, "capabilities", "tools", "listChanged", 0,
                     "prompts", "listChanged", 0, "resources", "subscribe", 1, "listChanged", 0,
                     "logging", "completions", "serverInfo", "name", ctx->name, "version",
                     MX_VERSION);
}

const char *mx_sim_conf_param_header(const char *tool, const char **arg)
{
    for (int t = 0; tool && t < T_CNT; t++) {
        if (arg_header(t) && tool_in_era(t, true) && strcmp(tool, conf_tools[t].name) == 0) {
            *arg = conf_tools[t].arg;
            return arg_header(t);
        }
    }
    return NULL;
}

json_t *mx_sim_conf_discover(void)
{
    return json_pack("{s:[s],s:{s:{s:b},s:{s:b},s:{},s:{},s:{s:{}}},s:s}", "supportedVersions",
                     "2026-07-28", "capabilities", "tools", "listChanged", 1, "prompts",
                     "listChanged", 1, "resources", "completions", "extensions", MX_SIM_TASKS_EXT,
                     "instructions",
                     "The fixture set of the MCP conformance suite, served by sandbox-sim.");
}

bool mx_sim_conf_request(const struct mx_sim_mcp_ctx *ctx, const char *method, json_t *params,
                         struct mx_sim_reply *out)
{
    if (strcmp(method, "initialize") == 0)
        out->result = initialize(ctx, params);
    else if (strcmp(method, "tools/list") == 0)
        out->result = conf_tools_list(ctx->conf->modern);
    else if (strcmp(method, "tools/call") == 0)
        conf_tools_call(ctx, params, out);
    else if (strcmp(method, "prompts/list") == 0)
        out->result = conf_prompts_list(ctx->conf->modern);
    else if (strcmp(method, "prompts/get") == 0)
        conf_prompts_get(ctx->conf, params, out);
    else if (strcmp(method, "resources/list") == 0)
        out->result = conf_resources_list();
    else if (strcmp(method, "resources/templates/list") == 0)
        out->result = conf_templates_list();
    else if (strcmp(method, "resources/read") == 0)
        conf_resources_read(params, out);
    else if (strcmp(method, "resources/subscribe") == 0)
        subscribe(ctx->conf, params, true, out);
    else if (strcmp(method, "resources/unsubscribe") == 0)
        subscribe(ctx->conf, params, false, out);
    else if (strcmp(method, "completion/complete") == 0)
        complete(params, out);
    else if (strcmp(method, "logging/setLevel") == 0)
        set_level(ctx->conf, params, out);
    else if (ctx->conf->modern && ctx->conf->tasks &&
             (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
              strcmp(method, "tasks/cancel") == 0))
        conf_tasks(ctx->conf, method, params, out);
    else
        return false;
    return true;
}
