/* SPDX-License-Identifier: MIT */
/*
 * The MCP methods of sandbox-sim, with no I/O: a method name and its params
 * in, a result or a JSON-RPC error out. Owns the catalogue (tools, the greet
 * prompt, two resources) and the JSON-RPC envelopes. Sessions, HTTP and
 * timers live elsewhere; the slow tool only says how it wants to be streamed.
 */
#ifndef MX_SIM_MCP_H
#define MX_SIM_MCP_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* JSON-RPC 2.0 and MCP error codes (MCP 2025-06-18, Basic, Lifecycle, Resources). */
#define MX_SIM_RPC_PARSE     -32700
#define MX_SIM_RPC_INVALID   -32600
#define MX_SIM_RPC_NOMETHOD  -32601
#define MX_SIM_RPC_PARAMS    -32602
#define MX_SIM_RPC_INTERNAL  -32603
#define MX_SIM_RPC_SERVER    -32000
#define MX_SIM_RPC_NOSESSION -32001
#define MX_SIM_RPC_NORES     -32002
/* 2026-07-28 */
#define MX_SIM_RPC_MISMATCH    -32020
#define MX_SIM_RPC_NOCAP       -32021
#define MX_SIM_RPC_UNSUPPORTED -32022

/* Methods the sim counts by name; anything else counts as "other". */
enum mx_sim_method {
    MX_SIM_M_INITIALIZE = 0,
    MX_SIM_M_PING,
    MX_SIM_M_TOOLS_LIST,
    MX_SIM_M_TOOLS_CALL,
    MX_SIM_M_PROMPTS_LIST,
    MX_SIM_M_PROMPTS_GET,
    MX_SIM_M_RESOURCES_LIST,
    MX_SIM_M_RESOURCES_READ,
    MX_SIM_M_TEMPLATES_LIST,
    MX_SIM_M_N_INITIALIZED,
    MX_SIM_M_N_CANCELLED,
    MX_SIM_M_RESPONSE, /* a JSON-RPC response posted by the client */
    MX_SIM_M_OTHER,
    MX_SIM_M_CNT
};

enum mx_sim_tool {
    MX_SIM_T_ECHO = 0,
    MX_SIM_T_ADD,
    MX_SIM_T_SLOW,
    MX_SIM_T_GET_ENV,
    MX_SIM_T_WHOAMI,
    MX_SIM_T_CNT
};

/* Bounds of the slow tool's arguments. */
#define MX_SIM_SLOW_MAX_STEPS    1000
#define MX_SIM_SLOW_MAX_INTERVAL 60000

/* What a method needs from the running server. */
struct mx_sim_mcp_ctx {
    const char *name;     /* serverInfo.name and the whoami answer */
    const char *revision; /* the revision to put in an initialize result */
    /* The sim://config document; a new reference, or NULL when unset. */
    json_t *(*config_json)(void *arg);
    void *config_arg;
    /* Conformance mode: the session's state; NULL in the normal mode. */
    struct mx_sim_conf_sess *conf;
    int64_t list_ttl_ms;   /* ttlMs on every list result (a freshness hint); 0: none */
    int64_t extra_tools;   /* generated tools gen-1 … gen-N (a large catalogue) */
    int64_t huge_pages;    /* > 0: tools/list pages without end, each with one tool
                            * whose description is this many bytes (a hostile server) */
    const char *claim_uri; /* also list this resource (a hostile server); NULL: none */
    /* MCP 2025-11-25 tasks (tasks.h): the sim's table in a session of that
     * revision (normal mode); NULL: no tasks capability, no tasks/... */
    struct mx_sim_tasks *tasks;
};

/* Largest description --huge-pages may ask for. */
#define MX_SIM_HUGE_PAGE_MAX (64 * 1024 * 1024)

/* Most generated tools --extra-tools may ask for. */
#define MX_SIM_EXTRA_TOOLS_MAX 100000

/*
 * The outcome of one request. Exactly one of |result| (success) or
 * |err_code| != 0 (JSON-RPC error) is set, unless |deferred| is true: then
 * the slow tool asks the caller to stream |steps| steps |interval_ms| apart,
 * with progress to |progress_token| when it is not NULL.
 */
struct mx_sim_tasks;

struct mx_sim_reply {
    json_t *result; /* owned */
    int err_code;
    char err_msg[200];
    json_t *err_data; /* owned, may be NULL */
    int tool;         /* enum mx_sim_tool called, or -1 */
    bool deferred;
    int64_t steps;
    int64_t interval_ms;
    json_t *progress_token; /* owned, may be NULL */
    /* Conformance mode (conf.h): a scripted tool, played by stream.c. */
    int script;      /* enum mx_sim_script */
    int changed;     /* enum mx_sim_changed bits: lists this call changed */
    int http_status; /* 2026-07-28: the status an error needs (0: the default) */
    int conf_tool;   /* which conformance tool, for mx_sim_conf_answer */
    json_t *events;  /* owned: messages to write, interval_ms apart */
    json_t *ask;     /* owned: {method, params} of a request to the client */
    /* tasks/result of a task still working (MCP 2025-11-25): nothing else is
     * set; hold the request |wait_ms| and ask again for |task_id|. */
    bool task_wait;
    int64_t wait_ms;
    char task_id[33];
};

enum mx_sim_method mx_sim_method_find(const char *name);
const char *mx_sim_method_name(enum mx_sim_method m);
const char *mx_sim_tool_name(enum mx_sim_tool t);

/*
 * Run request |method| with |params| (an object or NULL; borrowed) and fill
 * |out|, which the caller clears with mx_sim_reply_clear(). Tool argument
 * problems give a result with isError true; unknown names give -32602,
 * unknown resources -32002, unknown methods -32601.
 */
void mx_sim_mcp_request(const struct mx_sim_mcp_ctx *ctx, const char *method, json_t *params,
                        struct mx_sim_reply *out);
void mx_sim_reply_clear(struct mx_sim_reply *r);
/* Make |out| a JSON-RPC error |code| with |msg| and |data| (stolen, may be NULL). */
void mx_sim_reply_error(struct mx_sim_reply *out, int code, const char *msg, json_t *data);

/* Tool result with one text item. */
json_t *mx_sim_text_result(const char *text, bool is_error);

/* JSON-RPC envelopes; |id| is borrowed (NULL or absent: no id member). */
json_t *mx_sim_rpc_result(json_t *id, json_t *result);                         /* steals |result| */
json_t *mx_sim_rpc_error(json_t *id, int code, const char *msg, json_t *data); /* steals |data| */
json_t *mx_sim_rpc_notification(const char *method, json_t *params);           /* steals |params| */

#endif
