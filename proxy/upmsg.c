/* SPDX-License-Identifier: MIT */
/* Shared by the stdio and HTTP+SSE upstream sessions (see upmsg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rpc.h"
#include "upmsg.h"

const char *const mx_upmsg_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                         NULL};

json_t *mx_upmsg_initialize(const json_t *caps, const char *id)
{
    return json_pack("{s:s, s:s, s:s, s:{s:s, s:O, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", id,
                     "method", "initialize", "params", "protocolVersion", mx_upmsg_versions[0],
                     "capabilities", caps, "clientInfo", "name", "mcplex", "version", MX_VERSION);
}

json_t *mx_upmsg_initialized(void)
{
    return json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
}

json_t *mx_upmsg_ping_answer(const json_t *req)
{
    return json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", json_object_get(req, "id"),
                     "result");
}

json_t *mx_upmsg_cancelled(const json_t *id, const char *reason)
{
    return json_pack("{s:s, s:s, s:{s:O, s:s}}", "jsonrpc", "2.0", "method",
                     "notifications/cancelled", "params", "requestId", id, "reason", reason);
}

static bool version_known(const char *v)
{
    for (size_t i = 0; mx_upmsg_versions[i]; i++) {
        if (strcmp(v, mx_upmsg_versions[i]) == 0)
            return true;
    }
    return false;
}

bool mx_upmsg_init_ok(const struct mx_server_cfg *cfg, const json_t *msg, struct mx_upfail *f)
{
    json_t *result = json_object_get(msg, "result");
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    if (json_is_object(result) && v != NULL && version_known(v))
        return true;
    const char *m = json_string_value(json_object_get(json_object_get(msg, "error"), "message"));
    if (!json_is_object(result))
        mx_upmsg_fail(cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", f,
                      "broke the protocol: initialize failed: %.150s", m ? m : "no result");
    else
        mx_upmsg_fail(cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", f,
                      "broke the protocol: initialize answered protocol version %.40s, which "
                      "mcplex does not speak",
                      v ? v : "(none)");
    return false;
}

bool mx_upmsg_may_ask(const char *method)
{
    static const char *const quiet[] = {"initialize",
                                        "ping",
                                        "logging/setLevel",
                                        "completion/complete",
                                        "resources/subscribe",
                                        "resources/unsubscribe",
                                        NULL};
    size_t n = method ? strlen(method) : 0;
    if (n == 0 || (n >= 5 && strcmp(method + n - 5, "/list") == 0))
        return false;
    for (size_t i = 0; quiet[i]; i++) {
        if (strcmp(method, quiet[i]) == 0)
            return false;
    }
    return true;
}

void mx_upmsg_fail(const struct mx_server_cfg *cfg, int code, const char *reason,
                   struct mx_upfail *f, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    memset(f, 0, sizeof(*f));
    f->code = code;
    f->reason = reason;
    snprintf(f->message, sizeof(f->message), "upstream '%s' %s", cfg->name, what);
}
