/* SPDX-License-Identifier: MIT */
/*
 * The conformance catalogue of sandbox-sim (--conformance): the fixed tool,
 * prompt and resource names the official MCP conformance suite calls in
 * server mode, answered the way its scenario descriptions ask. Pure: a method
 * and its params in, a reply out. Tools that talk while they run (logging,
 * progress) or, in the 2025 revisions, ask the client something (sampling,
 * elicitation) come back as a script for stream.c to play on the loop; in
 * 2026-07-28 the asking tools answer with input-required results instead.
 */
#ifndef MX_SIM_CONF_H
#define MX_SIM_CONF_H

#include <stdbool.h>

#include <jansson.h>

struct mx_sim_mcp_ctx;
struct mx_sim_reply;
struct mx_sim_tasks;

/* Per-session state of conformance mode. */
struct mx_sim_conf_sess {
    int log_level;     /* lowest level sent, 0 (debug) .. 7 (emergency); 8: none */
    bool sampling;     /* the client declared the sampling capability */
    bool elicitation;  /* ... and elicitation */
    bool roots;        /* ... and roots */
    unsigned subs;     /* subscribed resources, one bit per catalogue entry */
    unsigned subs_cnt; /* subscribe calls accepted, for the log */
    /* 2026-07-28 (stateless): this state lives for one request, built from its
     * _meta; |state_key| signs the requestState of input-required results. */
    bool modern;
    const unsigned char *state_key; /* MX_SIM_STATE_KEY_LEN bytes */
    /* The tasks extension (SEP-2663): the server's task table, and whether
     * the request's clientCapabilities.extensions declare it. */
    struct mx_sim_tasks *tasks;
    bool tasks_ext;
};

#define MX_SIM_STATE_KEY_LEN 32
#define MX_SIM_LOG_NONE      8

/* What a reply asks the server to tell open subscriptions/listen streams. */
enum mx_sim_changed {
    MX_SIM_CHANGED_TOOLS = 1,
    MX_SIM_CHANGED_PROMPTS = 2,
};

/* What a scripted reply asks of the stream player. */
enum mx_sim_script {
    MX_SIM_SCRIPT_NONE = 0,
    MX_SIM_SCRIPT_EVENTS = 1, /* write |events| |interval_ms| apart, then |result| */
    MX_SIM_SCRIPT_ASK = 2,    /* send |ask| to the client, answer with its response */
    MX_SIM_SCRIPT_POLL = 3,   /* prime the stream, end it, keep |result| for the resume */
};

/*
 * Run |method| in conformance mode. Returns false for methods this catalogue
 * leaves to mcp.c (ping and unknown ones). |ctx->conf| is the session's state
 * (for initialize, the new session's); it is read and updated here.
 */
bool mx_sim_conf_request(const struct mx_sim_mcp_ctx *ctx, const char *method, json_t *params,
                         struct mx_sim_reply *out);

/*
 * The tool result for the client's |response| (a JSON-RPC response object,
 * borrowed) to the server request that tool |tool| sent. Returns a new
 * CallToolResult.
 */
json_t *mx_sim_conf_answer(int tool, json_t *response);

/*
 * The x-mcp-header name of tool |tool|'s argument in 2026-07-28 (SEP-2243):
 * the argument travels in the header Mcp-Param-<name> too. Sets |arg| to the
 * argument's name. NULL for an unknown tool or one without such an argument.
 */
const char *mx_sim_conf_param_header(const char *tool, const char **arg);

/* The server/discover result of the stateless revision (without the fields
 * every 2026-07-28 result gets; modern.c adds those). */
json_t *mx_sim_conf_discover(void);

/* "info" -> 1; -1 for a name that is no RFC 5424 level of MCP logging. */
int mx_sim_conf_log_level(const char *name);

#endif
