/* SPDX-License-Identifier: MIT */
/* Upstream request headers and failure descriptions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "guard.h"
#include "rpc.h"
#include "secret.h"
#include "secret_ref.h"
#include "upreq.h"

void mx_upreq_hdrs_init(struct mx_upreq_hdrs *h)
{
    memset(h, 0, sizeof(*h));
}

int mx_upreq_hdrs_add(struct mx_upreq_hdrs *h, const char *name, struct mx_str value)
{
    if (h->cnt == MX_UPREQ_MAX_HEADERS)
        return MX_ELIMIT;
    if (!mx_guard_header_value_ok(value))
        return MX_EINVAL;
    /* libcurl drops a "Name:" line with nothing after it (that is how its
     * own headers are removed) and sends "Name;" as an empty header */
    size_t nl = strlen(name);
    char *line = mx_xmalloc(nl + 2 + value.len + 1);
    memcpy(line, name, nl);
    if (value.len == 0) {
        line[nl] = ';';
        line[nl + 1] = '\0';
    } else {
        memcpy(line + nl, ": ", 2);
        memcpy(line + nl + 2, value.p, value.len);
        line[nl + 2 + value.len] = '\0';
    }
    h->owned[h->cnt] = line;
    h->lines[h->cnt] = h->owned[h->cnt];
    h->cnt++;
    return 0;
}

int mx_upreq_hdrs_auth(struct mx_upreq_hdrs *h, const struct mx_upstream *up)
{
    if (h->cnt == MX_UPREQ_MAX_HEADERS)
        return MX_ELIMIT;
    char *line = mx_secret_header_new(mx_upstream_secret(up), up->cfg->auth, up->cfg->auth_name);
    if (line == NULL)
        return 0;
    h->owned[h->cnt] = line;
    h->lines[h->cnt] = line;
    h->cnt++;
    return 0;
}

void mx_upreq_hdrs_clear(struct mx_upreq_hdrs *h)
{
    /* Every line is wiped: which one holds the credential is not tracked. */
    for (size_t i = 0; i < h->cnt; i++)
        mx_secret_wipe_free(h->owned[i]);
    memset(h, 0, sizeof(*h));
}

/* "check vault entry files" or "check the secret env:TOKEN" */
static void check_hint(const struct mx_server_cfg *cfg, char *out, size_t cap)
{
    const char *ref = cfg->secret_ref;
    char shown[256];
    if (ref == NULL)
        snprintf(out, cap, "no secret is configured for it");
    else if (strncmp(ref, "vault:", 6) == 0)
        snprintf(out, cap, "check vault entry %s", ref + 6);
    else
        snprintf(out, cap, "check the secret %s", mx_secret_ref_show(ref, shown, sizeof(shown)));
}

static void upfail(struct mx_upfail *out, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void upfail(struct mx_upfail *out, int code, const char *reason, const char *fmt, ...)
{
    va_list ap;
    memset(out, 0, sizeof(*out));
    out->code = code;
    out->reason = reason;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
}

/* RFC 9110 §15.5.11: the resource is gone for good; for a sandbox, it was
 * deleted, and a new one has a new address. */
static void gone(const struct mx_server_cfg *cfg, struct mx_upfail *out)
{
    upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "gone",
           "upstream '%s': the sandbox is gone (410 from upstream); recreate it and update its "
           "url in the config",
           cfg->name);
}

/* |cause|: what else happened ("" for nothing). */
static void auth_refused(const struct mx_server_cfg *cfg, long status, const char *cause,
                         struct mx_upfail *out)
{
    char hint[256];
    check_hint(cfg, hint, sizeof(hint));
    upfail(out, MX_RPC_UPSTREAM_AUTH, "auth-failed",
           "upstream '%s' auth-failed: it refused its credential (HTTP %ld); %s%s%s", cfg->name,
           status, cause, cause[0] ? "; " : "", hint);
}

void mx_upfail_status(const struct mx_server_cfg *cfg, long status, struct mx_upfail *out)
{
    if (status == 410) {
        gone(cfg, out);
        return;
    }
    if (status == 401 || status == 403) {
        auth_refused(cfg, status, "", out);
        return;
    }
    for (size_t i = 0; i < cfg->retry_on_cnt; i++) {
        if (cfg->retry_on[i] == status) {
            upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "not-awake", "upstream '%s' answered HTTP %ld",
                   cfg->name, status);
            return;
        }
    }
    upfail(out, MX_RPC_UPSTREAM_HTTP, "http-error", "upstream '%s' answered HTTP %ld", cfg->name,
           status);
}

void mx_upfail_transport(const struct mx_server_cfg *cfg, int err, const struct mx_ureq_info *info,
                         struct mx_upfail *out)
{
    if (err == MX_EAUTH)
        auth_refused(cfg, info && info->http_status ? info->http_status : 401,
                     info ? info->cause : "", out);
    else if (info && info->wake_timeout)
        upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "not-awake",
               "upstream '%s' did not wake within %lld s", cfg->name,
               (long long)(cfg->wake_timeout_ms / 1000));
    else if (info && info->gone)
        gone(cfg, out);
    else if (info && info->retry_after_s > 0)
        upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "retry-after",
               "upstream '%s' asked to retry after %lld s (HTTP %ld with Retry-After), longer "
               "than a call waits for it (wake_timeout %lld s); try again then",
               cfg->name, (long long)info->retry_after_s, info->http_status,
               (long long)(cfg->wake_timeout_ms / 1000));
    else if (info && info->no_connection && info->tls && info->cause[0])
        upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable",
               "upstream '%s' is unreachable: tls: %s; if its certificate is right, give the CA "
               "that signed it as the server's 'ca'",
               cfg->name, info->cause);
    else if (info && info->no_connection && info->cause[0])
        upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", "upstream '%s' is unreachable: %s",
               cfg->name, info->cause);
    else if (err == MX_EPROTO)
        upfail(out, MX_RPC_UPSTREAM_HTTP, "invalid-header",
               "upstream '%s' sent an invalid header (a control character in a header value); "
               "its answer was refused, and the request may have run",
               cfg->name);
    else if (err == MX_ETIMEDOUT)
        upfail(out, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", "upstream '%s' timed out after %lld s",
               cfg->name, (long long)(cfg->request_timeout_ms / 1000));
    else if (info && info->body_sent)
        upfail(out, MX_RPC_OUTCOME_UNKNOWN, "outcome-unknown",
               "upstream '%s' closed the connection after the request was sent; its outcome "
               "is unknown, so it was not repeated",
               cfg->name);
    else
        upfail(out, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", "upstream '%s' is unreachable (%s)",
               cfg->name, mx_strerror(err));
}

void mx_upfail_proto(const struct mx_server_cfg *cfg, const char *what, struct mx_upfail *out)
{
    upfail(out, MX_RPC_UPSTREAM_HTTP, "protocol-error", "upstream '%s' broke the protocol: %s",
           cfg->name, what);
}

json_t *mx_upfail_error(const struct mx_server_cfg *cfg, const struct mx_upfail *f)
{
    return json_pack("{s:i, s:s, s:{s:s, s:s}}", "code", f->code, "message", f->message, "data",
                     "server", cfg->name, "reason", f->reason ? f->reason : "error");
}
