/* SPDX-License-Identifier: MIT */
/*
 * The stateless revision (MCP 2026-07-28) at /mcp, bridged to the 2025-era
 * upstreams (MCP checklist §2.5, "modern client → legacy upstream"). Each
 * request is checked against its headers (revision.c), then answered from
 * the merged views (server/discover, the four lists with signed cursors),
 * routed through the upstream's shared session (tools/call, prompts/get,
 * resources/read, completion/complete), or held open as a
 * subscriptions/listen stream (list changes, and resource updates through
 * resources/subscribe on the shared sessions). Nothing here depends on an earlier request of
 * the same client, except a call parked for a Multi Round-Trip retry, which
 * the client names with the requestState it was given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "mcp_int.h"
#include "revision.h"
#include "rpc.h"
#include "sse.h"
#include "sse_write.h"

#define SUBSYS SUBSYS_MCP

#define SSE_OUT_CAP     (16u * 1024 * 1024)
#define MRTR_WAIT_MAX_S 60.0 /* a parked upstream call waits this long at most for the retry */
#define MRTR_MAX_ROUNDS 16   /* input_required results for one call */
#define MRTR_MAX_ASKED  16   /* open questions of one call */
#define MAX_CALLS       1024 /* modern calls running or parked */
#define MAX_LISTENS     256
#define KEEPALIVE_S     15.0
#define MAX_LISTEN_URIS 64 /* resourceSubscriptions honoured per listen stream */
#define STATE_KEY_LEN   32
#define CURSOR_SCOPED   0x10 /* in a cursor's kind: a list of /mcp/<server> */
#define HANDLE_LEN      32   /* hex of 128 random bits */

struct mcall;
struct listen;
struct fan;

struct mcp_modern {
    struct mx_mcp *m;
    uint8_t key[STATE_KEY_LEN]; /* signs requestState */
    struct mcall *calls;
    size_t call_cnt;
    struct listen *listens;
    size_t listen_cnt;
    struct rsub *rsubs; /* resources the shared upstream sessions are subscribed to */
    struct fan *fans;
};

/* A routed request (tools/call, prompts/get, resources/read, completion). */
struct mcall {
    struct mcp_modern *mm;
    struct mcall *next;
    int refs;
    struct mx_mcpup *u;
    struct mx_mcpup *scope; /* /mcp/<server>: that upstream; NULL at /mcp */
    struct upctx *via;
    struct mx_uprpc *rpc;
    struct mx_req *req; /* the client request being answered; NULL while parked */
    json_t *client_id;
    json_t *token; /* the client's progress token, or NULL */
    json_t *caps;  /* clientCapabilities of the current client request */
    int log_level; /* from _meta logLevel; -1: no log messages */
    json_t *up_id; /* "mcplex-<n>": upstream request id and progress token */
    char *method;
    char *name; /* what a retry must repeat: tool or prompt name, or uri */
    char handle[HANDLE_LEN + 1];
    bool sse;
    bool blocked;
    bool orphan;  /* nobody will take the answer */
    bool parked;  /* answered input_required; waits for the retry */
    bool counted; /* in gw->inflight: a client request is attached */
    bool freed;
    json_t *asked;   /* key -> {"id", "method", "params"} the upstream waits for */
    uint64_t up_key; /* the upstream session that asked */
    unsigned next_q;
    int rounds;
    json_t *final; /* the answer that came while parked */
    ev_timer park;
    ev_timer ask_soon;     /* asks once the questions that came together are in */
    long long last_expiry; /* of the last requestState: each round's differs */
    ev_timer wait_tick;    /* "still waking" progress while the upstream wakes */
    int wait_n;
};

/* A resource some listen stream follows: subscribed upstream once. */
struct rsub {
    struct rsub *next;
    size_t up;
    char *uri;
    size_t refs;
};

/* A subscriptions/listen stream. */
struct listen {
    struct mcp_modern *mm;
    struct listen *next;
    struct mx_req *req;
    json_t *id;
    struct mx_mcpup *scope;         /* /mcp/<server>: changes of that upstream only */
    uint32_t seen[MX_AGG_KIND_CNT]; /* with a scope: the list generations announced */
    bool want[MX_AGG_KIND_CNT];
    struct rsub **subs; /* the honoured resourceSubscriptions */
    size_t sub_cnt;
    ev_timer keepalive;
};

enum fan_what {
    F_DISCOVER = 0,
    F_LIST = 1,
    F_ROUTE = 2, /* a listen stream following resources: dispatched again after */
};

/* A request waiting (bounded) for upstream catalogues. */
struct fan {
    struct mcp_modern *mm;
    struct fan *next;
    struct mx_req *req;
    json_t *msg;
    enum fan_what what;
    enum mx_agg_kind kind;
    struct mx_mcpup *scope; /* /mcp/<server>: waits for that upstream alone */
    ev_timer timer;
    struct upwaits ups;
};

static void dispatch(struct mcp_modern *mm, struct mx_req *req, json_t *msg, bool may_wait,
                     struct mx_mcpup *scope);

/* The only place that indexes the upstream table. */
static struct mx_mcpup *up_at(struct mx_mcp *m, size_t i)
{
    return m->ups[i];
}

/* ---- answering ---- */

static void trace(struct mx_mcp *m, const char *dir, struct mx_str msg)
{
    mx_trace_msg(m->gw->trace, dir, NULL, NULL, msg);
}

static void send_json(struct mx_mcp *m, struct mx_req *req, int status, json_t *body)
{
    char *text = mx_rpc_dump(body);
    json_decref(body);
    trace(m, "s2c", mx_str_cstr(text));
    mx_req_respond(req, status, NULL, 0, "application/json", text, strlen(text));
    free(text);
}

static void send_error(struct mx_mcp *m, struct mx_req *req, int status, const json_t *id, int code,
                       const char *msg, json_t *data)
{
    send_json(m, req, status, mx_rpc_error_new(id, code, msg, data));
}

static json_t *server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "mcplex", "title", "mcplex MCP gateway", "version",
                     MX_VERSION);
}

/*
 * MCP 2026-07-28, Result: every result says what it is (resultType) and
 * SHOULD name the server; cacheable ones carry ttlMs and cacheScope. mcplex
 * reaches every upstream with its own credential, so what it serves is
 * "private" to the local principal (MCP checklist §11).
 */
static void finish_result(json_t *result, bool cacheable, json_int_t ttl_ms)
{
    if (!json_is_string(json_object_get(result, "resultType")))
        json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, MX_REV_META_SERVER_INFO, server_info());
    if (cacheable) {
        json_object_set_new(result, "ttlMs", json_integer(ttl_ms < 0 ? 0 : ttl_ms));
        json_object_set_new(result, "cacheScope", json_string("private"));
    }
}

static void send_result(struct mx_mcp *m, struct mx_req *req, const json_t *id, json_t *result)
{
    send_json(m, req, 200,
              json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static int sse_send(struct mx_mcp *m, struct mx_req *req, const json_t *msg)
{
    char *text = mx_rpc_dump(msg);
    trace(m, "s2c", mx_str_cstr(text));
    int rc = mx_sse_write_event(req, mx_str_cstr(text), SSE_OUT_CAP);
    free(text);
    if (rc == MX_ELIMIT) {
        mx_log_warn(SUBSYS, "a message over %u bytes for a client was dropped", SSE_OUT_CAP);
        rc = 0;
    }
    return rc;
}

/* ---- requestState: MCP 2026-07-28, Multi Round-Trip Requests ---- */

/* The client echoes it untouched; mcplex must not trust it (MCP checklist
 * §7.2): an HMAC over the call's handle, the expiry and the method and
 * name the retry must repeat. */
static void state_mac(const struct mcp_modern *mm, const char *handle, long long expiry,
                      const char *method, const struct mx_mcpup *scope, const char *name,
                      char out[33])
{
    char buf[2048];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    /* the endpoint too: a retry goes where the request went */
    int n = snprintf(buf, sizeof(buf), "%s\n%lld\n%s\n%s\n%s", handle, expiry, method,
                     scope ? scope->cfg->name : "", name);
    if (n < 0 || (size_t)n >= sizeof(buf))
        n = (int)sizeof(buf) - 1;
    HMAC(EVP_sha256(), mm->key, STATE_KEY_LEN, (const unsigned char *)buf, (size_t)n, md, &mdlen);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static double park_s_for(const struct mx_mcpup *u)
{
    double t = MRTR_WAIT_MAX_S;
    int64_t rt = u->cfg->request_timeout_ms;
    if (rt > 0 && (double)rt / 1000.0 < t)
        t = (double)rt / 1000.0;
    return t;
}

/* How long a parked call of |c|'s upstream waits: never past the bound of
 * the upstream request itself. */
static double park_s(const struct mcall *c)
{
    return park_s_for(c->u);
}

static char *state_new(struct mcall *c, double wait_s)
{
    char mac[33];
    long long expiry = (long long)(ev_now(c->mm->m->loop) + wait_s) + 1;
    /* MCP 2026-07-28, MRTR: a new round gets a new requestState */
    if (expiry <= c->last_expiry)
        expiry = c->last_expiry + 1;
    c->last_expiry = expiry;
    state_mac(c->mm, c->handle, expiry, c->method, c->scope, c->name, mac);
    return mx_xasprintf("%s.%lld.%s", c->handle, expiry, mac);
}

enum state_verdict {
    STATE_OK = 0,
    STATE_BAD = 1,     /* not made by this mcplex for this method and name */
    STATE_EXPIRED = 2, /* genuine, but the wait for the retry is over */
};

static enum state_verdict state_check(const struct mcp_modern *mm, const char *state,
                                      const char *method, const struct mx_mcpup *scope,
                                      const char *name, char handle[HANDLE_LEN + 1])
{
    const char *d1 = strchr(state, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (d1 == NULL || d2 == NULL || d1 - state != HANDLE_LEN || strlen(d2 + 1) != 32 ||
        d2 - d1 - 1 < 1 || d2 - d1 - 1 > 12)
        return STATE_BAD;
    char num[16];
    memcpy(num, d1 + 1, (size_t)(d2 - d1 - 1));
    num[d2 - d1 - 1] = '\0';
    char *end = NULL;
    long long expiry = strtoll(num, &end, 10);
    if (end == NULL || *end != '\0' || expiry <= 0)
        return STATE_BAD;
    memcpy(handle, state, HANDLE_LEN);
    handle[HANDLE_LEN] = '\0';
    char mac[33];
    state_mac(mm, handle, expiry, method, scope, name, mac);
    if (CRYPTO_memcmp(mac, d2 + 1, 32) != 0)
        return STATE_BAD;
    return ev_now(mm->m->loop) > (double)expiry ? STATE_EXPIRED : STATE_OK;
}

/* ---- calls ---- */

static void call_hold(struct mcall *c)
{
    c->refs++;
}

static void call_release(struct mcall *c)
{
    if (--c->refs > 0)
        return;
    json_decref(c->client_id);
    json_decref(c->token);
    json_decref(c->caps);
    json_decref(c->up_id);
    json_decref(c->asked);
    json_decref(c->final);
    free(c->method);
    free(c->name);
    free(c);
}

/* A parked call has no client request: it must not hold up a drain. */
static void call_count(struct mcall *c, bool on)
{
    if (c->counted == on)
        return;
    c->counted = on;
    if (on)
        c->mm->m->gw->inflight++;
    else
        c->mm->m->gw->inflight--;
}

/* Forget the call: no answer reaches anyone after this. */
static void call_free(struct mcall *c)
{
    struct mcp_modern *mm = c->mm;
    if (c->freed)
        return;
    c->freed = true;
    ev_timer_stop(mm->m->loop, &c->park);
    ev_timer_stop(mm->m->loop, &c->ask_soon);
    ev_timer_stop(mm->m->loop, &c->wait_tick);
    for (struct mcall **pp = &mm->calls; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    mm->call_cnt--;
    mx_upstream_release(c->u->up);
    if (c->rpc) {
        mx_uprpc_cancel(c->rpc);
        c->rpc = NULL;
    }
    if (c->req)
        mx_req_set_handler(c->req, NULL, NULL, NULL);
    c->req = NULL;
    call_count(c, false);
    call_release(c);
}

static void reply_upstream(struct mcall *c, json_t *id, json_t *result, int code, const char *msg)
{
    json_t *r;
    if (result)
        r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    else
        r = mx_rpc_error_new(id, code, msg, NULL);
    if (c->via->s)
        mx_upsess_send(c->via->s, r, c->up_key);
    json_decref(r);
}

/*
 * MCP 2026-07-28: closing the response stream is the cancel. The 2025
 * upstream hears notifications/cancelled (a disconnect is not a cancel
 * there) and every question it still waits for is refused; its stream is
 * then read to its end and dropped.
 */
static void call_orphan(struct mcall *c, const char *reason)
{
    if (c->orphan || c->freed)
        return;
    c->orphan = true;
    ev_timer_stop(c->mm->m->loop, &c->park);
    ev_timer_stop(c->mm->m->loop, &c->ask_soon);
    ev_timer_stop(c->mm->m->loop, &c->wait_tick);
    if (c->req)
        mx_req_set_handler(c->req, NULL, NULL, NULL);
    c->req = NULL;
    const char *k;
    json_t *q;
    json_object_foreach(c->asked, k, q)
    {
        reply_upstream(c, json_object_get(q, "id"), NULL, MX_RPC_INVALID_REQUEST, reason);
    }
    json_object_clear(c->asked);
    if (c->rpc == NULL) {
        call_free(c);
        return;
    }
    if (!c->mm->m->shutting_down && c->via->s) {
        json_t *note =
            json_pack("{s:s, s:s, s:{s:O, s:s}}", "jsonrpc", "2.0", "method",
                      "notifications/cancelled", "params", "requestId", c->up_id, "reason", reason);
        mx_upsess_send(c->via->s, note, 0);
        json_decref(note);
    }
    c->blocked = false;
    mx_uprpc_resume(c->rpc);
}

/* Send |msg| on the call's stream. Returns 0, MX_EAGAIN or MX_ECLOSED. */
static int call_send(struct mcall *c, const json_t *msg)
{
    if (c->freed || c->orphan || c->req == NULL)
        return MX_ECLOSED;
    if (!c->sse) {
        if (mx_sse_start(c->req) != 0) {
            c->req = NULL;
            call_orphan(c, "the client went away");
            return MX_ECLOSED;
        }
        c->sse = true;
    }
    int rc = sse_send(c->mm->m, c->req, msg);
    if (rc == MX_EAGAIN) {
        c->blocked = true;
    } else if (rc) {
        c->req = NULL;
        call_orphan(c, "the client went away");
        return MX_ECLOSED;
    }
    return rc;
}

/* End the current client request with |result| (a response's "result" or
 * "error" member; |is_error|), borrowed. */
static void call_reply(struct mcall *c, json_t *payload, bool is_error)
{
    struct mx_req *req = c->req;
    if (req == NULL)
        return;
    json_t *r = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", c->client_id,
                          is_error ? "error" : "result", payload);
    call_hold(c);
    if (c->sse) {
        if (call_send(c, r) != MX_ECLOSED && c->req) {
            c->req = NULL;
            mx_req_set_handler(req, NULL, NULL, NULL);
            mx_req_end(req);
        }
    } else {
        /* MCP 2026-07-28: an upstream's -32021 (a capability this request
         * did not declare) keeps its HTTP 400 */
        bool caps = is_error && json_integer_value(json_object_get(payload, "code")) ==
                                    MX_REV_MISSING_CAPABILITY;
        c->req = NULL;
        mx_req_set_handler(req, NULL, NULL, NULL);
        send_json(c->mm->m, req, caps ? 400 : 200, json_incref(r));
    }
    json_decref(r);
    call_release(c);
}

static void park_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mcall *c = mx_container_of(w, struct mcall, park);
    (void)loop;
    (void)revents;
    mx_log_info(SUBSYS, "up:%s no retry of an input_required %s within %.0f s; cancelled",
                c->u->cfg->name, c->method, park_s(c));
    if (c->final) {
        call_free(c);
        return;
    }
    call_orphan(c, "the client did not answer in time");
}

/* Ask the client what the upstream asked: an input_required result ends
 * this client request; its retry continues the call. */
static void call_ask(struct mcall *c)
{
    if (c->req == NULL || json_object_size(c->asked) == 0)
        return;
    if (++c->rounds > MRTR_MAX_ROUNDS) {
        json_t *e = json_pack("{s:i, s:s}", "code", MX_RPC_INTERNAL_ERROR, "message",
                              "too many input rounds for one request; cancelled");
        call_hold(c);
        call_reply(c, e, true);
        json_decref(e);
        call_orphan(c, "too many input rounds");
        call_release(c);
        return;
    }
    json_t *reqs = json_object();
    const char *k;
    json_t *q;
    json_object_foreach(c->asked, k, q)
    {
        json_object_set_new(reqs, k,
                            json_pack("{s:O, s:O}", "method", json_object_get(q, "method"),
                                      "params", json_object_get(q, "params")));
    }
    double wait = park_s(c);
    char *state = state_new(c, wait);
    json_t *result = json_pack("{s:s, s:o, s:s}", "resultType", "input_required", "inputRequests",
                               reqs, "requestState", state);
    free(state);
    finish_result(result, false, 0);
    c->parked = true;
    call_count(c, false);
    ev_timer_set(&c->park, wait, 0.0);
    ev_timer_start(c->mm->m->loop, &c->park);
    call_reply(c, result, false);
    json_decref(result);
}

static void ask_soon_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mcall *c = mx_container_of(w, struct mcall, ask_soon);
    (void)loop;
    (void)revents;
    call_hold(c);
    call_ask(c);
    call_release(c);
}

/* A request from the upstream on this call's stream. */
static void call_question(struct mcall *c, uint64_t key, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    char text[200];
    c->up_key = key;
    if (strcmp(method, "ping") == 0) {
        reply_upstream(c, id, json_object(), 0, NULL);
        return;
    }
    if (c->orphan) {
        reply_upstream(c, id, NULL, MX_RPC_INVALID_REQUEST, "the request this belongs to ended");
        return;
    }
    /* MCP 2026-07-28, MRTR: only these, and only when this request's
     * clientCapabilities declare them */
    const char *cap = strcmp(method, "sampling/createMessage") == 0 ? "sampling"
                      : strcmp(method, "elicitation/create") == 0   ? "elicitation"
                      : strcmp(method, "roots/list") == 0           ? "roots"
                                                                    : NULL;
    if (cap == NULL) {
        reply_upstream(c, id, NULL, MX_RPC_METHOD_NOT_FOUND, "Method not found");
        return;
    }
    if (!json_is_object(json_object_get(c->caps, cap))) {
        snprintf(text, sizeof(text), "the client did not declare the %s capability", cap);
        reply_upstream(c, id, NULL, MX_RPC_METHOD_NOT_FOUND, text);
        return;
    }
    if (json_object_size(c->asked) >= MRTR_MAX_ASKED) {
        reply_upstream(c, id, NULL, MX_RPC_INVALID_REQUEST, "too many open questions");
        return;
    }
    /* a 2026 upstream's own key, which the client sees (MCP 2026-07-28,
     * MRTR: keys are the server's), else one of mcplex's */
    char k[72];
    const char *uk = mx_uprpc_input_key(c->rpc, id);
    if (uk && *uk && strlen(uk) < sizeof(k) && json_object_get(c->asked, uk) == NULL) {
        snprintf(k, sizeof(k), "%s", uk);
    } else {
        do
            snprintf(k, sizeof(k), "%s-%u", cap, ++c->next_q);
        while (json_object_get(c->asked, k));
    }
    json_t *params = json_object_get(msg, "params");
    json_object_set_new(c->asked, k,
                        json_pack("{s:O, s:s, s:o}", "id", id, "method", method, "params",
                                  params ? json_deep_copy(params) : json_object()));
    /* from the loop: questions that come together (a 2026 upstream's
     * input_required asks them at once) go to the client in one round */
    if (!ev_is_active(&c->ask_soon))
        ev_timer_start(c->mm->m->loop, &c->ask_soon);
}

/* The upstream withdrew a question (MCP 2025-06-18, Cancellation). */
static void call_withdrawn(struct mcall *c, json_t *msg)
{
    json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
    const char *k;
    void *tmp;
    json_t *q;
    json_object_foreach_safe(c->asked, tmp, k, q)
    {
        if (json_equal(json_object_get(q, "id"), rid))
            json_object_del(c->asked, k);
    }
}

static int call_on_message(struct mx_uprpc *rpc, uint64_t key, json_t *msg, void *data)
{
    struct mcall *c = data;
    (void)rpc;
    ev_timer_stop(c->mm->m->loop, &c->wait_tick); /* it is awake */
    call_hold(c);
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (kind == MX_RPC_REQUEST) {
        call_question(c, key, msg);
    } else if (kind != MX_RPC_NOTIFICATION) {
        /* nothing else belongs on a request's stream */
    } else if (strstr(method, "list_changed") ||
               strcmp(method, "notifications/resources/updated") == 0) {
        mcp_up_unsolicited(c->via, key, msg); /* about everyone */
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        call_withdrawn(c, msg);
    } else if (strcmp(method, "notifications/progress") == 0) {
        /* MCP 2026-07-28, Progress: only while the request is active, with
         * the client's own token */
        if (c->token && c->req && !c->orphan) {
            json_t *out = json_deep_copy(msg);
            json_object_set(json_object_get(out, "params"), "progressToken", c->token);
            call_send(c, out);
            json_decref(out);
        }
    } else if (strcmp(method, "notifications/message") == 0) {
        /* MCP 2026-07-28, Logging: only for a request that set a level */
        json_t *params = json_object_get(msg, "params");
        int level = mcp_log_level(json_string_value(json_object_get(params, "level")));
        if (c->req && c->log_level >= 0 && level >= c->log_level) {
            json_t *out = json_deep_copy(msg);
            const char *logger = json_string_value(json_object_get(params, "logger"));
            /* at /mcp/<server> the server's own logger names */
            if (c->scope == NULL) {
                char *name = logger ? mx_xasprintf("%s/%s", c->u->cfg->alias, logger)
                                    : mx_xstrdup(c->u->cfg->alias);
                json_object_set_new(json_object_get(out, "params"), "logger", json_string(name));
                free(name);
            }
            call_send(c, out);
            json_decref(out);
        }
    }
    int rc = !c->freed && c->blocked ? MX_EAGAIN : 0;
    call_release(c);
    return rc;
}

/* The upstream's answer as a 2026 client reads it: resultType and
 * serverInfo added, resources/read cacheable, a missing resource MX_RPC_INVALID_PARAMS
 * with data.uri (MCP 2026-07-28, Resources). */
static json_t *modern_answer(struct mcall *c, json_t *resp, bool *is_error)
{
    json_t *err = json_object_get(resp, "error");
    if (json_is_object(err)) {
        json_t *out = json_deep_copy(err);
        *is_error = true;
        if (json_integer_value(json_object_get(out, "code")) == MX_RPC_NO_RESOURCE &&
            strcmp(c->method, "resources/read") == 0) {
            json_object_set_new(out, "code", json_integer(MX_RPC_INVALID_PARAMS));
            json_t *d = json_object_get(out, "data");
            if (!json_is_object(d)) {
                d = json_object();
                json_object_set_new(out, "data", d);
            }
            if (!json_object_get(d, "uri"))
                json_object_set_new(d, "uri", json_string(c->name));
        }
        return out;
    }
    json_t *result = json_object_get(resp, "result");
    json_t *out = json_is_object(result) ? json_deep_copy(result) : json_object();
    *is_error = false;
    finish_result(out, strcmp(c->method, "resources/read") == 0, 0);
    return out;
}

static void call_on_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                         void *data)
{
    struct mcall *c = data;
    (void)rpc;
    c->rpc = NULL;
    ev_timer_stop(c->mm->m->loop, &c->wait_tick);
    if (c->orphan) {
        call_free(c);
        return;
    }
    bool is_error = true;
    json_t *out;
    if (resp) {
        mcp_up_note_ok(c->u);
        out = modern_answer(c, resp, &is_error);
    } else {
        mcp_up_note_fail(c->u, fail);
        out = mx_upfail_error(c->u->cfg, fail);
    }
    json_object_clear(c->asked); /* the upstream no longer waits */
    if (c->req == NULL) {
        /* parked: the retry gets it */
        json_decref(c->final);
        c->final = json_pack("{s:o, s:b}", "payload", out, "error", is_error);
        return;
    }
    call_hold(c);
    call_reply(c, out, is_error);
    json_decref(out);
    call_free(c);
    call_release(c);
}

static void send_wait_progress(struct mcall *c)
{
    char text[160];
    snprintf(text, sizeof(text), "waiting for sandbox '%s' to wake (%d s)", c->u->cfg->name,
             c->wait_n * 2);
    json_t *n = json_pack("{s:s, s:s, s:{s:O, s:i, s:s}}", "jsonrpc", "2.0", "method",
                          "notifications/progress", "params", "progressToken", c->token, "progress",
                          c->wait_n, "message", text);
    c->wait_n++;
    call_send(c, n);
    json_decref(n);
}

static void wait_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mcall *c = mx_container_of(w, struct mcall, wait_tick);
    (void)loop;
    (void)revents;
    if (c->token == NULL || c->req == NULL) {
        ev_timer_stop(c->mm->m->loop, &c->wait_tick);
        return;
    }
    call_hold(c);
    send_wait_progress(c);
    call_release(c);
}

/* The upstream is waking (wake-on-use) and the request asked for progress:
 * say so every 2 s until it answers, as for 2025 clients. */
static void call_on_wait(struct mx_uprpc *rpc, void *data)
{
    struct mcall *c = data;
    (void)rpc;
    if (c->token == NULL || c->req == NULL || c->orphan || ev_is_active(&c->wait_tick))
        return;
    call_hold(c);
    send_wait_progress(c);
    if (!c->freed && !c->orphan) {
        ev_timer_set(&c->wait_tick, 2.0, 2.0);
        ev_timer_start(c->mm->m->loop, &c->wait_tick);
    }
    call_release(c);
}

static void call_drain(struct mx_req *req, void *data)
{
    struct mcall *c = data;
    (void)req;
    c->blocked = false;
    if (c->rpc)
        mx_uprpc_resume(c->rpc);
}

static void call_abort(struct mx_req *req, void *data)
{
    struct mcall *c = data;
    (void)req;
    c->req = NULL;
    mx_log_debug(SUBSYS, "up:%s a 2026 client closed its %s stream; cancelling", c->u->cfg->name,
                 c->method);
    call_orphan(c, "the client closed the request");
}

/* The client request |msg| now drives call |c|. */
static void call_attach(struct mcall *c, struct mx_req *req, json_t *msg)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    json_t *token = json_object_get(meta, "progressToken");
    json_decref(c->client_id);
    json_decref(c->token);
    json_decref(c->caps);
    c->client_id = json_incref(json_object_get(msg, "id"));
    c->token = json_is_string(token) || json_is_integer(token) ? json_incref(token) : NULL;
    c->caps = json_incref(json_object_get(meta, MX_REV_META_CAPS));
    c->log_level = mcp_log_level(json_string_value(json_object_get(meta, MX_REV_META_LOG_LEVEL)));
    c->req = req;
    c->sse = false;
    c->blocked = false;
    c->parked = false;
    call_count(c, true);
    ev_timer_stop(c->mm->m->loop, &c->park);
    mx_req_set_handler(req, call_drain, call_abort, c);
}

/*
 * What an upstream sees of a modern request: mcplex's own id (also its
 * progress token), and of the 2026 keys only the client's capabilities (MCP
 * checklist §8: _meta is rebuilt per upstream; a legacy upstream has its
 * session instead, and upsess_http.c drops them for it).
 */
static void upstream_shape(json_t *upmsg, json_t *up_id, bool progress)
{
    json_t *params = json_object_get(upmsg, "params");
    json_t *meta = json_object_get(params, "_meta");
    json_object_set(upmsg, "id", up_id);
    json_object_del(params, "inputResponses");
    json_object_del(params, "requestState");
    if (json_is_object(meta)) {
        const char *k;
        void *tmp;
        json_t *v;
        json_object_foreach_safe(meta, tmp, k, v)
        {
            /* clientCapabilities and the log level stay for a 2026
             * upstream (upsess_http.c drops them for a 2025 one; the level's
             * messages are filtered here either way) */
            if ((strncmp(k, "io.modelcontextprotocol/", 24) == 0 &&
                 strcmp(k, MX_REV_META_CAPS) != 0 && strcmp(k, MX_REV_META_LOG_LEVEL) != 0) ||
                strcmp(k, "progressToken") == 0)
                json_object_del(meta, k);
        }
        if (progress)
            json_object_set(meta, "progressToken", up_id);
        if (json_object_size(meta) == 0)
            json_object_del(params, "_meta");
    }
}

/* Route |msg| to |u| as |upmsg| (owned); |name| is what a retry repeats,
 * |scope| the endpoint (NULL: /mcp). */
static void call_start(struct mcp_modern *mm, struct mx_req *req, json_t *msg, struct mx_mcpup *u,
                       json_t *upmsg, const char *name, struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    json_t *id = json_object_get(msg, "id");
    if (mm->call_cnt >= MAX_CALLS) {
        json_decref(upmsg);
        send_error(m, req, 200, id, MX_RPC_INTERNAL_ERROR, "too many requests in flight", NULL);
        return;
    }
    uint8_t rnd[HANDLE_LEN / 2];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        mx_fatal(SUBSYS, "RAND_bytes failed");
    struct mcall *c = mx_xcalloc(1, sizeof(*c));
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(c->handle + 2 * i, 3, "%02x", rnd[i]);
    c->mm = mm;
    c->refs = 1;
    c->u = u;
    c->scope = scope;
    mx_upstream_hold(u->up); /* a reload retires the upstream only after this */
    c->up_id = mcp_internal_id(m);
    c->method = mx_xstrdup(json_string_value(json_object_get(msg, "method")));
    c->name = mx_xstrdup(name ? name : "");
    c->asked = json_object();
    c->log_level = -1;
    ev_init(&c->park, park_cb);
    ev_timer_init(&c->ask_soon, ask_soon_cb, 0.0, 0.0);
    ev_init(&c->wait_tick, wait_tick_cb);
    c->next = mm->calls;
    mm->calls = c;
    mm->call_cnt++;
    call_attach(c, req, msg);

    upstream_shape(upmsg, c->up_id, c->token != NULL);
    c->via = mcp_up_session(u, NULL); /* stateless clients share one session */
    static const struct mx_uprpc_cbs cbs = {call_on_message, call_on_done, call_on_wait};
    int rc =
        mx_upsess_request(c->via->s, upmsg, (long)u->cfg->request_timeout_ms, &cbs, c, &c->rpc);
    json_decref(upmsg);
    if (rc) {
        struct mx_upfail fail;
        mx_upfail_proto(u->cfg, "its session is closed", &fail);
        json_t *e = mx_upfail_error(u->cfg, &fail);
        call_hold(c);
        call_reply(c, e, true);
        json_decref(e);
        call_free(c);
        call_release(c);
    }
}

static struct mcall *call_by_handle(struct mcp_modern *mm, const char *handle)
{
    for (struct mcall *c = mm->calls; c; c = c->next) {
        if (!c->freed && !c->orphan && strcmp(c->handle, handle) == 0)
            return c;
    }
    return NULL;
}

/* A retry carrying requestState (and usually inputResponses). */
static void call_retry(struct mcp_modern *mm, struct mx_req *req, json_t *msg,
                       const struct mx_mcpup *u, const char *name, const struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *state = json_string_value(json_object_get(params, "requestState"));
    char handle[HANDLE_LEN + 1];
    char text[300];
    enum state_verdict v =
        state ? state_check(mm, state, method, scope, name ? name : "", handle) : STATE_BAD;
    struct mcall *c = v == STATE_OK ? call_by_handle(mm, handle) : NULL;
    if (c && c->scope != scope)
        c = NULL;
    if (v == STATE_BAD) {
        send_error(m, req, 200, id, MX_RPC_INVALID_PARAMS,
                   "Invalid params: requestState was not issued by this mcplex for this request",
                   NULL);
        return;
    }
    if (c == NULL) {
        snprintf(text, sizeof(text),
                 "Invalid params: the request this requestState continues has ended (mcplex "
                 "waits %.0f s for the retry of an input_required result from %s); send the "
                 "request again without requestState",
                 park_s_for(u), u->cfg->name);
        send_error(m, req, 200, id, MX_RPC_INVALID_PARAMS, text, NULL);
        return;
    }
    if (c->req) {
        send_error(m, req, 200, id, MX_RPC_INVALID_REQUEST,
                   "Invalid Request: a retry of this request is already in flight", NULL);
        return;
    }
    call_hold(c);
    call_attach(c, req, msg);
    if (c->final) {
        json_t *f = c->final;
        c->final = NULL;
        call_reply(c, json_object_get(f, "payload"), json_is_true(json_object_get(f, "error")));
        json_decref(f);
        call_free(c);
        call_release(c);
        return;
    }
    /* MCP 2026-07-28, MRTR: answers to what was asked go to the waiting
     * upstream; unknown keys are ignored; what is still missing is asked
     * again */
    json_t *answers = json_object_get(params, "inputResponses");
    const char *k;
    void *tmp;
    json_t *q;
    json_object_foreach_safe(c->asked, tmp, k, q)
    {
        json_t *a = json_object_get(answers, k);
        if (!json_is_object(a))
            continue;
        reply_upstream(c, json_object_get(q, "id"), json_incref(a), 0, NULL);
        json_object_del(c->asked, k);
    }
    call_ask(c);
    call_release(c);
}

/* ---- routing ---- */

/* Whether an upstream (|scope| alone, when not NULL) must be asked first. */
static bool any_needs(struct mx_mcp *m, unsigned kinds, const struct mx_mcpup *scope)
{
    for (size_t i = 0; i < m->up_cnt; i++) {
        if ((scope == NULL || up_at(m, i) == scope) && mcp_up_needs(up_at(m, i), kinds, true))
            return true;
    }
    return false;
}

static void fan_start(struct mcp_modern *mm, struct mx_req *req, json_t *msg, enum fan_what what,
                      enum mx_agg_kind kind, unsigned kinds, struct mx_mcpup *scope);

static void parked_retry(struct mx_mcp *m, struct mx_req *req, json_t *msg, void *data)
{
    (void)m;
    dispatch(data, req, msg, false, NULL);
}

/* A stateless client may call before anyone listed, or while the upstream
 * that holds the name is still starting or waking: wait for its lists
 * (mcp_park), then look again. Returns true when the request was parked. */
static bool park(struct mcp_modern *mm, struct mx_req *req, json_t *msg, enum mx_agg_kind kind,
                 const char *name, bool may_wait)
{
    return may_wait && mcp_park(mm->m, NULL, req, msg, kind, name, parked_retry, mm);
}

/* tools/call, prompts/get and completion's ref/prompt: by exposed name. */
static const struct mx_agg_entry *lookup(struct mcp_modern *mm, struct mx_req *req, json_t *msg,
                                         enum mx_agg_kind kind, const char *name, bool may_wait)
{
    struct mx_mcp *m = mm->m;
    const struct mx_agg_entry *e =
        name ? mx_agg_lookup(mcp_view(m, kind), mx_str_make(name, strlen(name))) : NULL;
    if (e || park(mm, req, msg, kind, name, may_wait))
        return e;
    char text[300];
    /* MCP 2026-07-28, Tools: an unknown tool is -32602 */
    snprintf(text, sizeof(text), "Unknown %s: %.200s", kind == MX_AGG_TOOLS ? "tool" : "prompt",
             name ? name : "(none)");
    send_error(m, req, 200, json_object_get(msg, "id"), MX_RPC_INVALID_PARAMS, text, NULL);
    return NULL;
}

static const struct mx_str *req_header(const void *ctx, const char *name)
{
    return mx_req_header(ctx, name);
}

/*
 * MCP 2026-07-28, Streamable HTTP, Custom Headers: a tools/call carries the
 * arguments its tool's schema (|tool|, the upstream's item; NULL when not
 * known) mirrors into Mcp-Param-* headers, checked as the last of the
 * header checks. Returns false after answering the refusal.
 */
static bool params_pass(struct mx_mcp *m, struct mx_req *req, const json_t *msg, const json_t *tool)
{
    struct mx_rev_error err;
    json_t *params = json_object_get(msg, "params");
    if (tool == NULL || mx_req_http_version(req) == 0 || /* stdio: no headers */
        mx_rev_check_params(json_object_get(tool, "inputSchema"),
                            json_object_get(params, "arguments"), req_header, req, &err) == 0)
        return true;
    send_error(m, req, err.status, json_object_get(msg, "id"), err.code, err.message, NULL);
    return false;
}

static void route_named(struct mcp_modern *mm, struct mx_req *req, json_t *msg,
                        enum mx_agg_kind kind, bool may_wait)
{
    json_t *params = json_object_get(msg, "params");
    const char *name = json_string_value(json_object_get(params, "name"));
    const struct mx_agg_entry *e = lookup(mm, req, msg, kind, name, may_wait);
    if (e == NULL || (kind == MX_AGG_TOOLS && !params_pass(mm->m, req, msg, e->item)))
        return;
    if (json_object_get(params, "requestState")) {
        call_retry(mm, req, msg, up_at(mm->m, e->src), name, NULL);
        return;
    }
    json_t *upmsg = json_deep_copy(msg);
    json_object_set_new(json_object_get(upmsg, "params"), "name", json_string(e->orig));
    call_start(mm, req, msg, up_at(mm->m, e->src), upmsg, name, NULL);
}

/* The upstream for |uri|, or NULL after answering (or waiting). */
static struct mx_mcpup *route_uri(struct mcp_modern *mm, struct mx_req *req, json_t *msg,
                                  const char *uri, bool as_template, bool may_wait)
{
    struct mx_mcp *m = mm->m;
    json_t *id = json_object_get(msg, "id");
    struct mx_uriroute_result r;
    char text[400];
    if (uri == NULL) {
        send_error(m, req, 200, id, MX_RPC_INVALID_PARAMS, "params.uri must be a string", NULL);
        return NULL;
    }
    r.cnt = 0;
    if (as_template)
        mx_uriroute_find_template(mcp_uris(m), mx_str_cstr(uri), &r);
    if (r.cnt == 0)
        mx_uriroute_find(mcp_uris(m), mx_str_cstr(uri), &r);
    if (r.cnt == 1)
        return up_at(m, r.cands[0]);
    if (r.cnt == 0 && park(mm, req, msg, MX_AGG_RESOURCES, uri, may_wait))
        return NULL;
    if (r.cnt == 0) {
        struct mx_mcpup *only = NULL;
        size_t with = 0;
        for (size_t i = 0; i < m->up_cnt; i++) {
            json_t *caps = json_object_get(up_at(m, i)->init, "capabilities");
            if (!up_at(m, i)->up->retired && json_is_object(json_object_get(caps, "resources"))) {
                only = up_at(m, i);
                with++;
            }
        }
        if (with == 1)
            return only;
        /* MCP 2026-07-28, Resources: not found is -32602 with data.uri */
        snprintf(text, sizeof(text),
                 "Resource not found: no upstream lists %.200s or a template that matches it", uri);
        send_error(m, req, 200, id, MX_RPC_INVALID_PARAMS, text, json_pack("{s:s}", "uri", uri));
        return NULL;
    }
    send_json(m, req, 200, mcp_uri_ambiguous(m, id, uri, &r));
    return NULL;
}

static void route_read(struct mcp_modern *mm, struct mx_req *req, json_t *msg, bool may_wait)
{
    json_t *params = json_object_get(msg, "params");
    const char *uri = json_string_value(json_object_get(params, "uri"));
    struct mx_mcpup *u = route_uri(mm, req, msg, uri, false, may_wait);
    if (u == NULL)
        return;
    if (json_object_get(params, "requestState"))
        call_retry(mm, req, msg, u, uri, NULL);
    else
        call_start(mm, req, msg, u, json_deep_copy(msg), uri, NULL);
}

static void route_completion(struct mcp_modern *mm, struct mx_req *req, json_t *msg, bool may_wait)
{
    json_t *ref = json_object_get(json_object_get(msg, "params"), "ref");
    const char *type = json_string_value(json_object_get(ref, "type"));
    if (type && strcmp(type, "ref/prompt") == 0) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        const struct mx_agg_entry *e = lookup(mm, req, msg, MX_AGG_PROMPTS, name, may_wait);
        if (e == NULL)
            return;
        json_t *upmsg = json_deep_copy(msg);
        json_object_set_new(json_object_get(json_object_get(upmsg, "params"), "ref"), "name",
                            json_string(e->orig));
        call_start(mm, req, msg, up_at(mm->m, e->src), upmsg, name, NULL);
        return;
    }
    if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        struct mx_mcpup *u = route_uri(mm, req, msg, uri, true, may_wait);
        if (u)
            call_start(mm, req, msg, u, json_deep_copy(msg), uri, NULL);
        return;
    }
    send_error(mm->m, req, 200, json_object_get(msg, "id"), MX_RPC_INVALID_PARAMS,
               "params.ref.type must be ref/prompt or ref/resource", NULL);
}

/* ---- server/discover and the lists: answered from the catalogues ---- */

/*
 * /mcp/<server> when its upstream cannot be shown (down, refusing its
 * credential, not answered within the wait): the JSON-RPC error naming it,
 * as a call would get (MCP checklist §9.2; never the upstream's 401).
 * Returns true when |req| was answered so.
 */
static bool scope_unready(struct mx_mcp *m, struct mx_req *req, const json_t *msg,
                          const struct mx_mcpup *u, int kind)
{
    if (mcp_up_visible(u) && u->init && (kind < 0 || u->lists[kind]))
        return false;
    struct mx_upfail fail;
    if (u->state == UPS_FAILED)
        fail = u->fail;
    else
        mx_upfail_transport(u->cfg, MX_ETIMEDOUT, NULL, &fail);
    send_json(m, req, 200,
              json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"),
                        "error", mx_upfail_error(u->cfg, &fail)));
    return true;
}

/* What one upstream offers, of what mcplex serves for it: listChanged on
 * each list, since mcplex reports any change it sees (also after the
 * upstream restarted); resources.subscribe as the upstream says. */
static json_t *scope_caps(const struct mx_mcpup *u)
{
    static const char *const keys[] = {"tools", "prompts", "resources", "completions", "logging"};
    json_t *caps = json_object_get(u->init, "capabilities");
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(caps, keys[i]);
        if (!json_is_object(v))
            continue;
        json_t *c = json_deep_copy(v);
        if (i < 3)
            json_object_set_new(c, "listChanged", json_true());
        json_object_set_new(out, keys[i], c);
    }
    return out;
}

static void respond_discover(struct mcp_modern *mm, struct mx_req *req, json_t *msg,
                             const struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    if (scope && scope_unready(m, req, msg, scope, -1))
        return;
    json_t *caps = scope ? scope_caps(scope) : mcp_merged_caps(m);
    /* resources.subscribe: resourceSubscriptions of subscriptions/listen */
    json_t *result =
        json_pack("{s:[s], s:o}", "supportedVersions", MX_REV_MODERN, "capabilities", caps);
    json_t *ins = NULL;
    if (scope == NULL)
        ins = mcp_merged_instructions(m);
    else if (json_is_string(json_object_get(scope->init, "instructions")))
        ins = json_deep_copy(json_object_get(scope->init, "instructions"));
    if (ins)
        json_object_set_new(result, "instructions", ins);
    /* capabilities change as upstreams come and go: no reuse */
    finish_result(result, true, 0);
    send_result(m, req, json_object_get(msg, "id"), result);
}

/* MCP 2026-07-28, Caching: a hint counts from when it was received, the
 * merged list is as fresh as its stalest source, and a source without a
 * hint (most 2025 upstreams) counts as 0. */
static json_int_t list_ttl(struct mx_mcp *m, enum mx_agg_kind kind, const struct mx_mcpup *scope)
{
    json_int_t min = -1;
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = up_at(m, i);
        if (!mcp_up_visible(u) || u->lists[kind] == NULL || (scope && u != scope))
            continue;
        double age_ms = (ev_now(m->loop) - u->ttl_at[kind]) * 1000.0;
        json_int_t left = (json_int_t)((double)u->ttl_ms[kind] - age_ms);
        if (left < 0)
            left = 0;
        if (min < 0 || left < min)
            min = left;
    }
    return min < 0 ? 0 : min;
}

/*
 * One page of one upstream's own list, in its order and with its names. The
 * cursor is one of /mcp's with a single source and the kind marked, so that
 * neither endpoint takes the other's.
 */
static json_t *scope_page(struct mx_mcp *m, const struct mx_mcpup *u, enum mx_agg_kind kind,
                          const json_t *params, const char **why)
{
    json_t *all = u->lists[kind];
    json_t *cur = json_object_get(params, "cursor");
    uint8_t ckind = (uint8_t)(kind | CURSOR_SCOPED);
    struct mx_cursor c;
    size_t pos = 0;
    if (cur) {
        const char *t = json_string_value(cur);
        if (t == NULL ||
            mx_cursor_decode(mx_str_make(t, json_string_length(cur)), m->cursor_key, &c) != 0 ||
            c.kind != ckind || c.cnt != 1 || c.v[0].src != u->idx) {
            *why = "Invalid cursor";
            return NULL;
        }
        if (c.v[0].gen != u->gen[kind]) {
            *why = "Invalid cursor: the list changed since; list again from the start";
            return NULL;
        }
        pos = c.v[0].pos;
    }
    size_t n = json_array_size(all);
    /* a slot past what a cursor can name gets the list on one page */
    size_t page = u->idx < MX_CURSOR_MAX_SOURCES ? (size_t)m->cfg->proxy.page_size : n;
    json_t *items = json_array();
    for (size_t i = pos; i < n && i - pos < page; i++)
        json_array_append(items, json_array_get(all, i));
    json_t *result = json_pack("{s:o}", mx_agg_list_key(kind), items);
    if (pos + page < n) {
        char text[MX_CURSOR_TEXT_MAX];
        memset(&c, 0, sizeof(c));
        c.kind = ckind;
        c.cnt = 1;
        c.v[0].src = (uint8_t)u->idx;
        c.v[0].gen = u->gen[kind];
        c.v[0].pos = (uint32_t)(pos + page);
        if (mx_cursor_encode(&c, m->cursor_key, text, sizeof(text)) > 0)
            json_object_set_new(result, "nextCursor", json_string(text));
    }
    return result;
}

static void respond_list(struct mcp_modern *mm, struct mx_req *req, json_t *msg,
                         enum mx_agg_kind kind, const struct mx_mcpup *scope)
{
    static const char *const caps[MX_AGG_KIND_CNT] = {"tools", "prompts", "resources", "resources"};
    const char *why = NULL;
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    json_t *result;
    if (scope == NULL) {
        result = mcp_list_page(mm->m, kind, params, &why);
    } else {
        if (scope_unready(mm->m, req, msg, scope, (int)kind))
            return;
        /* MCP 2026-07-28, Server Discovery: what is not advertised is not
         * there */
        if (!json_is_object(
                json_object_get(json_object_get(scope->init, "capabilities"), caps[kind]))) {
            send_error(mm->m, req, 404, id, MX_RPC_METHOD_NOT_FOUND, "Method not found", NULL);
            return;
        }
        result = scope_page(mm->m, scope, kind, params, &why);
    }
    if (result == NULL) {
        /* MCP 2026-07-28, Pagination: an invalid cursor is -32602 */
        send_error(mm->m, req, 200, id, MX_RPC_INVALID_PARAMS, why, NULL);
        return;
    }
    finish_result(result, true, list_ttl(mm->m, kind, scope));
    send_result(mm->m, req, id, result);
}

static void fan_free(struct fan *f)
{
    struct mcp_modern *mm = f->mm;
    ev_timer_stop(mm->m->loop, &f->timer);
    mcp_upwaits_clear(&f->ups, mm->m);
    for (struct fan **pp = &mm->fans; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    if (f->req)
        mx_req_set_handler(f->req, NULL, NULL, NULL);
    json_decref(f->msg);
    free(f);
}

static void fan_finish(struct fan *f)
{
    struct mx_req *req = f->req;
    json_t *msg = json_incref(f->msg);
    enum fan_what what = f->what;
    enum mx_agg_kind kind = f->kind;
    struct mx_mcpup *scope = f->scope;
    struct mcp_modern *mm = f->mm;
    f->req = NULL;
    if (req)
        mx_req_set_handler(req, NULL, NULL, NULL);
    fan_free(f);
    if (req == NULL) {
        json_decref(msg);
        return;
    }
    if (what == F_DISCOVER)
        respond_discover(mm, req, msg, scope);
    else if (what == F_LIST)
        respond_list(mm, req, msg, kind, scope);
    else
        dispatch(mm, req, msg, false, scope);
    json_decref(msg);
}

static void fan_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct fan *f = mx_container_of(w, struct fan, timer);
    (void)loop;
    (void)revents;
    fan_finish(f);
}

static void fan_up_done(struct upwaits *ws)
{
    if (ws->waiting == 0)
        fan_finish(mx_container_of(ws, struct fan, ups));
}

static void fan_abort(struct mx_req *req, void *data)
{
    struct fan *f = data;
    (void)req;
    f->req = NULL;
    fan_free(f);
}

/* How long /mcp/<server> waits for its upstream's catalogue: as long as a
 * request to it may take, a wake included (the refresh ends sooner, and
 * says why when it fails). */
static double scope_wait_s(const struct mx_mcpup *u)
{
    int64_t rt = u->cfg->request_timeout_ms > 0 ? u->cfg->request_timeout_ms : 300000;
    return (double)(rt + u->cfg->wake_timeout_ms) / 1000.0 + 1.0;
}

/*
 * Wait for the upstreams whose catalogue of |kinds| is missing or stale,
 * through their shared sessions, at most fanout_timeout (MCP checklist
 * §9.2: one slow upstream must not hang the answer); then answer. With a
 * |scope| (/mcp/<server>) that upstream alone, as long as it may take.
 */
static void fan_start(struct mcp_modern *mm, struct mx_req *req, json_t *msg, enum fan_what what,
                      enum mx_agg_kind kind, unsigned kinds, struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    struct fan *f = mx_xcalloc(1, sizeof(*f));
    f->mm = mm;
    f->req = req;
    f->msg = json_incref(msg);
    f->what = what;
    f->kind = kind;
    f->scope = scope;
    mcp_upwaits_init(&f->ups, m, fan_up_done);
    f->next = mm->fans;
    mm->fans = f;
    ev_timer_init(&f->timer, fan_timer,
                  scope ? scope_wait_s(scope) : (double)m->cfg->proxy.fanout_timeout_ms / 1000.0,
                  0.0);
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = up_at(m, i);
        if (kinds == 0 || (scope && u != scope) || !mcp_up_needs(u, kinds, true))
            continue;
        mcp_upwaits_add(&f->ups, u, mcp_up_session(u, NULL), kinds);
    }
    if (mcp_upwaits_started(&f->ups) == 0) {
        fan_finish(f);
        return;
    }
    ev_timer_start(m->loop, &f->timer);
    mx_req_set_handler(req, NULL, fan_abort, f);
}

/* ---- subscriptions/listen ---- */

static void rsub_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail, void *data)
{
    (void)rpc;
    (void)resp;
    (void)fail;
    (void)data;
}

/* resources/subscribe or unsubscribe on |u|'s shared session (MCP
 * 2025-06-18, Resources): the 2025 way to hear notifications/resources/updated. */
static void rsub_send(struct mx_mcpup *u, const char *method, const char *uri)
{
    static const struct mx_uprpc_cbs cbs = {NULL, rsub_done, NULL};
    struct mx_uprpc *rpc;
    struct upctx *ctx = mcp_up_session(u, NULL);
    json_t *msg = json_pack("{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id",
                            mcp_internal_id(u->m), "method", method, "params", "uri", uri);
    mx_upsess_request(ctx->s, msg, (long)u->cfg->request_timeout_ms, &cbs, NULL, &rpc);
    json_decref(msg);
}

/* Whether a 2025 client session of |m| holds |uri| of upstream |up| on the
 * shared session (then it is subscribed upstream already). */
static bool legacy_subscribed(struct mx_mcp *m, size_t up, const char *uri)
{
    if (up_at(m, up)->cfg->session != MX_SESSION_SHARED)
        return false; /* theirs are on their own upstream sessions */
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        struct sessx *sx = s->owner;
        for (struct sub *b = sx ? sx->subs : NULL; b; b = b->next) {
            if (b->up == up && strcmp(b->uri, uri) == 0)
                return true;
        }
    }
    return false;
}

static struct rsub *rsub_ref(struct mcp_modern *mm, size_t up, const char *uri)
{
    for (struct rsub *r = mm->rsubs; r; r = r->next) {
        if (r->up == up && strcmp(r->uri, uri) == 0) {
            r->refs++;
            return r;
        }
    }
    struct rsub *r = mx_xcalloc(1, sizeof(*r));
    r->up = up;
    r->uri = mx_xstrdup(uri);
    r->refs = 1;
    r->next = mm->rsubs;
    mm->rsubs = r;
    if (!legacy_subscribed(mm->m, up, uri))
        rsub_send(up_at(mm->m, up), "resources/subscribe", uri);
    return r;
}

static void rsub_unref(struct mcp_modern *mm, struct rsub *r)
{
    if (--r->refs > 0)
        return;
    for (struct rsub **pp = &mm->rsubs; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    }
    if (!mm->m->shutting_down && !legacy_subscribed(mm->m, r->up, r->uri))
        rsub_send(up_at(mm->m, r->up), "resources/unsubscribe", r->uri);
    free(r->uri);
    free(r);
}

size_t mcp_modern_subscribed(struct mx_mcp *m, size_t up, const char *uri)
{
    struct mcp_modern *mm = m->modern;
    for (struct rsub *r = mm ? mm->rsubs : NULL; r; r = r->next) {
        if (r->up == up && strcmp(r->uri, uri) == 0)
            return 1;
    }
    return 0;
}

static void listen_free(struct listen *l)
{
    struct mcp_modern *mm = l->mm;
    ev_timer_stop(mm->m->loop, &l->keepalive);
    for (size_t i = 0; i < l->sub_cnt; i++)
        rsub_unref(mm, l->subs[i]);
    free(l->subs);
    for (struct listen **pp = &mm->listens; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    mm->listen_cnt--;
    if (l->req)
        mx_req_set_handler(l->req, NULL, NULL, NULL);
    json_decref(l->id);
    free(l);
}

/* MCP 2026-07-28, Subscriptions: a graceful end is a result. */
static void listen_end(struct listen *l)
{
    json_t *result = json_pack("{s:{s:O}}", "_meta", MX_REV_META_SUBSCRIPTION_ID, l->id);
    finish_result(result, false, 0);
    json_t *r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", l->id, "result", result);
    if (sse_send(l->mm->m, l->req, r) != MX_ECLOSED)
        mx_req_end(l->req);
    json_decref(r);
    l->req = NULL;
    listen_free(l);
}

static void listen_abort(struct mx_req *req, void *data)
{
    struct listen *l = data;
    (void)req;
    l->req = NULL;
    listen_free(l);
}

static void listen_keepalive(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct listen *l = mx_container_of(w, struct listen, keepalive);
    (void)loop;
    (void)revents;
    int rc = mx_req_write(l->req, ": keepalive\n\n", 13);
    if (rc == MX_ECLOSED) {
        l->req = NULL;
        listen_free(l);
    }
}

/* A notification on the stream, tagged with the subscription (MCP
 * 2026-07-28, Subscriptions). Returns false when the stream is gone. */
static bool listen_send(struct listen *l, const char *method, json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    json_object_set(meta, MX_REV_META_SUBSCRIPTION_ID, l->id);
    json_t *n = json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
    int rc = sse_send(l->mm->m, l->req, n);
    json_decref(n);
    if (rc == MX_ECLOSED || rc == MX_EINVAL) {
        l->req = NULL;
        listen_free(l);
        return false;
    }
    return true;
}

static const char *const want_keys[MX_AGG_KIND_CNT] = {"toolsListChanged", "promptsListChanged",
                                                       "resourcesListChanged", NULL};

/* The one upstream serving |uri| that offers resources/subscribe, or NULL. */
static struct mx_mcpup *subscribable(struct mx_mcp *m, const char *uri, struct mx_mcpup *scope)
{
    struct mx_uriroute_result r;
    struct mx_mcpup *u = scope;
    if (scope == NULL) {
        mx_uriroute_find(mcp_uris(m), mx_str_cstr(uri), &r);
        if (r.cnt == 1)
            u = up_at(m, r.cands[0]);
    }
    json_t *res = json_object_get(json_object_get(u ? u->init : NULL, "capabilities"), "resources");
    return json_is_true(json_object_get(res, "subscribe")) ? u : NULL;
}

/* A scoped stream's view of |u|'s list |k| (resources with templates):
 * generations only grow, so a changed sum is a changed list. */
static uint32_t listen_gen(const struct mx_mcpup *u, int k)
{
    return k == MX_AGG_RESOURCES ? u->gen[k] + u->gen[MX_AGG_TEMPLATES] : u->gen[k];
}

static void listen_start(struct mcp_modern *mm, struct mx_req *req, json_t *msg, bool may_wait,
                         struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    json_t *id = json_object_get(msg, "id");
    json_t *filter = json_object_get(json_object_get(msg, "params"), "notifications");
    if (!json_is_object(filter)) {
        send_error(m, req, 200, id, MX_RPC_INVALID_PARAMS,
                   "Invalid params: subscriptions/listen needs params.notifications", NULL);
        return;
    }
    if (mm->listen_cnt >= MAX_LISTENS) {
        send_error(m, req, 200, id, MX_RPC_INTERNAL_ERROR, "too many listen streams are open",
                   NULL);
        return;
    }
    /* resources are found through the catalogues: load them first */
    unsigned res = KIND_BIT(MX_AGG_RESOURCES) | KIND_BIT(MX_AGG_TEMPLATES);
    if (may_wait && json_array_size(json_object_get(filter, "resourceSubscriptions")) &&
        any_needs(m, res, scope)) {
        fan_start(mm, req, msg, F_ROUTE, MX_AGG_RESOURCES, res, scope);
        return;
    }
    if (mx_sse_start(req) != 0)
        return;
    struct listen *l = mx_xcalloc(1, sizeof(*l));
    l->mm = mm;
    l->req = req;
    l->id = json_incref(id);
    l->scope = scope;
    for (int k = 0; scope && k < MX_AGG_KIND_CNT; k++)
        l->seen[k] = listen_gen(scope, k);
    l->next = mm->listens;
    mm->listens = l;
    mm->listen_cnt++;
    ev_timer_init(&l->keepalive, listen_keepalive, KEEPALIVE_S, KEEPALIVE_S);
    ev_timer_start(m->loop, &l->keepalive);
    mx_req_set_handler(req, NULL, listen_abort, l);
    /* the acknowledgement first, naming what is honoured: the list changes,
     * and the resources one upstream serves and lets subscribe to */
    json_t *honoured = json_object();
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (want_keys[k] && json_is_true(json_object_get(filter, want_keys[k]))) {
            l->want[k] = true;
            json_object_set_new(honoured, want_keys[k], json_true());
        }
    }
    json_t *uris = json_object_get(filter, "resourceSubscriptions");
    json_t *kept = json_array();
    size_t i;
    json_t *v;
    l->subs = mx_xcalloc(MAX_LISTEN_URIS, sizeof(*l->subs));
    json_array_foreach(uris, i, v)
    {
        const char *uri = json_string_value(v);
        struct mx_mcpup *u =
            uri && l->sub_cnt < MAX_LISTEN_URIS ? subscribable(m, uri, scope) : NULL;
        if (u == NULL)
            continue;
        l->subs[l->sub_cnt++] = rsub_ref(mm, u->idx, uri);
        json_array_append(kept, v);
    }
    if (json_array_size(kept))
        json_object_set(honoured, "resourceSubscriptions", kept);
    json_decref(kept);
    if (!listen_send(l, "notifications/subscriptions/acknowledged",
                     json_pack("{s:o}", "notifications", honoured)))
        return;
    /* changes reach mcplex on the upstreams' shared sessions: open them */
    for (size_t k = 0; k < m->up_cnt; k++) {
        struct mx_mcpup *u = up_at(m, k);
        if ((scope == NULL || u == scope) && mcp_up_needs(u, KINDS_ALL, true))
            mcp_up_refresh(u, mcp_up_session(u, NULL), KINDS_ALL, NULL);
    }
}

void mcp_modern_announce(struct mx_mcp *m, const bool *changed)
{
    static const char *const methods[MX_AGG_KIND_CNT] = {
        "notifications/tools/list_changed", "notifications/prompts/list_changed",
        "notifications/resources/list_changed", NULL};
    struct mcp_modern *mm = m->modern;
    if (mm == NULL)
        return;
    struct listen *next;
    for (struct listen *l = mm->listens; l; l = next) {
        next = l->next;
        for (int k = 0; k < MX_AGG_TEMPLATES; k++) {
            bool now = changed[k];
            if (l->scope) {
                /* /mcp/<server>: what that upstream's own list did */
                now = listen_gen(l->scope, k) != l->seen[k];
                l->seen[k] = listen_gen(l->scope, k);
            }
            if (now && l->want[k] && !listen_send(l, methods[k], json_object()))
                break;
        }
    }
}

void mcp_modern_resource_updated(struct mx_mcp *m, size_t up, json_t *msg)
{
    struct mcp_modern *mm = m->modern;
    const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
    if (mm == NULL || uri == NULL)
        return;
    struct listen *next;
    for (struct listen *l = mm->listens; l; l = next) {
        next = l->next;
        for (size_t i = 0; i < l->sub_cnt; i++) {
            if (l->subs[i]->up == up && strcmp(l->subs[i]->uri, uri) == 0) {
                listen_send(l, "notifications/resources/updated", json_pack("{s:s}", "uri", uri));
                break;
            }
        }
    }
}

/* ---- the request ---- */

/*
 * /mcp/<server>: a routed request goes to that upstream as the client sent
 * it, with its own names, unknown ones included (the upstream answers for
 * them, as it does for a 2025 client relayed there); |name| is what a retry
 * must repeat.
 */
static void route_scoped(struct mcp_modern *mm, struct mx_req *req, json_t *msg, struct mx_mcpup *u,
                         const char *name)
{
    if (strcmp(json_string_value(json_object_get(msg, "method")), "tools/call") == 0) {
        /* the tool as the upstream listed it, when mcplex has its list */
        const json_t *tool = NULL;
        size_t i;
        json_t *t;
        json_array_foreach(u->lists[MX_AGG_TOOLS], i, t)
        {
            const char *tn = json_string_value(json_object_get(t, "name"));
            if (name && tn && strcmp(tn, name) == 0) {
                tool = t;
                break;
            }
        }
        if (!params_pass(mm->m, req, msg, tool))
            return;
    }
    if (json_object_get(json_object_get(msg, "params"), "requestState"))
        call_retry(mm, req, msg, u, name, u);
    else
        call_start(mm, req, msg, u, json_deep_copy(msg), name, u);
}

/* The name or URI a routed request of /mcp/<server> is about. */
static const char *scoped_name(const char *method, json_t *params)
{
    if (strcmp(method, "resources/read") == 0)
        return json_string_value(json_object_get(params, "uri"));
    if (strcmp(method, "completion/complete") == 0) {
        json_t *ref = json_object_get(params, "ref");
        json_t *n = json_object_get(ref, "name");
        return json_string_value(n ? n : json_object_get(ref, "uri"));
    }
    return json_string_value(json_object_get(params, "name"));
}

static void dispatch(struct mcp_modern *mm, struct mx_req *req, json_t *msg, bool may_wait,
                     struct mx_mcpup *scope)
{
    static const char *const lists[MX_AGG_KIND_CNT] = {
        "tools/list", "prompts/list", "resources/list", "resources/templates/list"};
    const char *method = json_string_value(json_object_get(msg, "method"));
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (strcmp(method, lists[k]) == 0) {
            fan_start(mm, req, msg, F_LIST, (enum mx_agg_kind)k, KIND_BIT(k), scope);
            return;
        }
    }
    bool routed = strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0 ||
                  strcmp(method, "resources/read") == 0 ||
                  strcmp(method, "completion/complete") == 0;
    if (strcmp(method, "server/discover") == 0) {
        fan_start(mm, req, msg, F_DISCOVER, MX_AGG_TOOLS, may_wait ? KINDS_ALL : 0, scope);
    } else if (strcmp(method, "subscriptions/listen") == 0) {
        listen_start(mm, req, msg, may_wait, scope);
    } else if (routed && scope) {
        route_scoped(mm, req, msg, scope, scoped_name(method, json_object_get(msg, "params")));
    } else if (strcmp(method, "tools/call") == 0) {
        route_named(mm, req, msg, MX_AGG_TOOLS, may_wait);
    } else if (strcmp(method, "prompts/get") == 0) {
        route_named(mm, req, msg, MX_AGG_PROMPTS, may_wait);
    } else if (strcmp(method, "resources/read") == 0) {
        route_read(mm, req, msg, may_wait);
    } else if (strcmp(method, "completion/complete") == 0) {
        route_completion(mm, req, msg, may_wait);
    }
}

static void get_headers(const struct mx_req *req, struct mx_rev_hdrs *h)
{
    h->version = mx_req_header(req, "MCP-Protocol-Version");
    h->method = mx_req_header(req, "Mcp-Method");
    h->name = mx_req_header(req, "Mcp-Name");
    h->session = mx_req_header(req, "Mcp-Session-Id") != NULL;
    h->no_headers = mx_req_http_version(req) == 0; /* mcplex stdio */
}

bool mcp_modern_claims(const struct mx_req *req, const json_t *msg)
{
    struct mx_rev_hdrs h;
    get_headers(req, &h);
    return mx_rev_is_modern(msg, &h);
}

bool mcp_modern_refuses(struct mx_mcp *m, struct mx_req *req)
{
    static const struct mx_hdr_out allow[] = {{"Allow", "POST"}};
    struct mx_rev_hdrs h;
    get_headers(req, &h);
    if (mx_str_eq(mx_req_method(req), MX_STR_LIT("POST")) || h.session ||
        !mx_rev_is_modern(NULL, &h))
        return false;
    /* MCP 2026-07-28, Streamable HTTP: POST only */
    json_t *err = mx_rpc_error_new(NULL, MX_RPC_INVALID_REQUEST,
                                   "Method Not Allowed: MCP 2026-07-28 is POST only", NULL);
    char *text = mx_rpc_dump(err);
    json_decref(err);
    trace(m, "s2c", mx_str_cstr(text));
    mx_req_respond(req, 405, allow, 1, "application/json", text, strlen(text));
    free(text);
    return true;
}

static void modern_post(struct mx_mcp *m, struct mx_req *req, json_t *msg, struct mx_mcpup *scope)
{
    struct mcp_modern *mm = m->modern;
    trace(m, "c2s", mx_req_body(req));
    if (mx_rpc_classify(msg) != MX_RPC_REQUEST) {
        /* MCP 2026-07-28: no client notification is defined over HTTP;
         * accepted and ignored */
        mx_req_respond(req, 202, NULL, 0, NULL, NULL, 0);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    struct mx_rev_hdrs h;
    struct mx_rev_error err;
    get_headers(req, &h);
    if (mx_rev_check(msg, &h, &err) != 0) {
        send_error(m, req, err.status, id, err.code, err.message, err.data);
        return;
    }
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    json_t *lv = json_object_get(meta, MX_REV_META_LOG_LEVEL);
    if (lv && mcp_log_level(json_string_value(lv)) < 0) {
        send_error(m, req, 200, id, MX_RPC_INVALID_PARAMS, "Invalid params: unknown logLevel",
                   NULL);
        return;
    }
    dispatch(mm, req, msg, true, scope);
}

void mcp_modern_post(struct mx_mcp *m, struct mx_req *req, json_t *msg)
{
    modern_post(m, req, msg, NULL);
}

bool mx_mcp_modern_serve_one(struct mx_mcp *m, struct mx_upstream *up, struct mx_req *req,
                             json_t *msg)
{
    if (!mx_str_eq(mx_req_method(req), MX_STR_LIT("POST")))
        return mcp_modern_refuses(m, req);
    if (!json_is_object(msg)) {
        /* a body that is no JSON-RPC message, sent as 2026-07-28 (its
         * version header, no session): refused as /mcp refuses it, not
         * relayed */
        struct mx_rev_hdrs h;
        get_headers(req, &h);
        if (h.session || !mx_rev_is_modern(NULL, &h))
            return false;
        send_error(m, req, 400, NULL, msg ? MX_RPC_INVALID_REQUEST : MX_RPC_PARSE_ERROR,
                   msg ? "Invalid Request: one JSON-RPC message per POST" : "Parse error", NULL);
        return true;
    }
    if (!mcp_modern_claims(req, msg))
        return false;
    struct mx_mcpup *u = up->idx < m->up_cnt ? up_at(m, up->idx) : NULL;
    struct mx_rev_error err;
    if (mx_rev_check_media(mx_req_header(req, "Content-Type"), mx_req_header(req, "Accept"),
                           &err) != 0) {
        send_error(m, req, err.status, NULL, err.code, err.message, NULL);
    } else if (mx_rpc_classify(msg) == MX_RPC_INVALID) {
        json_t *id = json_object_get(msg, "id");
        send_error(m, req, 400, json_is_string(id) || json_is_integer(id) ? id : NULL,
                   MX_RPC_INVALID_REQUEST, "Invalid Request", NULL);
    } else if (u == NULL || u->up != up) {
        /* a reload is replacing the slot */
        send_error(m, req, 503, json_object_get(msg, "id"), MX_RPC_INTERNAL_ERROR,
                   "the server is being reloaded; try again", NULL);
    } else {
        modern_post(m, req, msg, u);
    }
    return true;
}

void mx_mcp_modern_retired(struct mx_mcp *m, size_t idx)
{
    struct mcp_modern *mm = m->modern;
    if (mm == NULL || idx >= m->up_cnt)
        return;
    struct mx_mcpup *u = up_at(m, idx);
    struct listen *next;
    for (struct listen *l = mm->listens; l; l = next) {
        next = l->next;
        if (l->scope == u)
            listen_end(l);
    }
    struct fan *fnext;
    for (struct fan *f = mm->fans; f; f = fnext) {
        fnext = f->next;
        if (f->scope == u) {
            if (f->req)
                send_error(m, f->req, 503, json_object_get(f->msg, "id"), MX_RPC_INTERNAL_ERROR,
                           "the server left the config at a reload", NULL);
            f->req = NULL;
            fan_free(f);
        }
    }
}

/* ---- setup ---- */

struct mcp_modern *mcp_modern_new(struct mx_mcp *m)
{
    struct mcp_modern *mm = mx_xcalloc(1, sizeof(*mm));
    mm->m = m;
    /* a requestState is good for this process only */
    if (RAND_bytes(mm->key, sizeof(mm->key)) != 1)
        mx_fatal(SUBSYS, "RAND_bytes failed");
    return mm;
}

static void parked_stopping(struct mx_mcp *m, struct mx_req *req, json_t *msg, void *data)
{
    (void)data;
    send_error(m, req, 503, json_object_get(msg, "id"), MX_RPC_INTERNAL_ERROR, "mcplex is stopping",
               NULL);
}

void mcp_modern_free(struct mcp_modern *mm)
{
    if (mm == NULL)
        return;
    mm->m->modern = NULL; /* 2025 sessions closing after this count no listens */
    mcp_park_drop(mm->m, NULL, parked_stopping, mm);
    while (mm->fans) {
        struct fan *f = mm->fans;
        if (f->req)
            send_error(mm->m, f->req, 503, json_object_get(f->msg, "id"), MX_RPC_INTERNAL_ERROR,
                       "mcplex is stopping", NULL);
        f->req = NULL;
        fan_free(f);
    }
    while (mm->listens)
        listen_end(mm->listens);
    while (mm->calls) {
        struct mcall *c = mm->calls;
        c->orphan = true;
        if (c->req) {
            struct mx_req *req = c->req;
            c->req = NULL;
            mx_req_set_handler(req, NULL, NULL, NULL);
            if (c->sse)
                mx_req_end(req);
            else
                send_error(mm->m, req, 503, c->client_id, MX_RPC_INTERNAL_ERROR,
                           "mcplex is stopping", NULL);
        }
        call_free(c);
    }
    free(mm);
}
