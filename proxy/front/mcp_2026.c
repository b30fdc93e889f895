/* SPDX-License-Identifier: MIT */
/*
 * The stateless revision (MCP 2026-07-28) at /mcp and at /mcp/<server>,
 * over the same upstreams, catalogues and merged views as the 2025
 * sessions, whatever each upstream speaks (MCP checklist §2.5). Each
 * request is checked against its headers (revision.c), then answered from
 * the catalogues (server/discover, the four lists with signed cursors),
 * routed through the upstream's shared session (tools/call, prompts/get,
 * resources/read, completion/complete: a view over the call core,
 * call.h), or held open as a subscriptions/listen stream (list changes,
 * and resource updates through resources/subscribe on the shared
 * sessions). Nothing here depends on an earlier request of the same
 * client, except a call parked for a Multi Round-Trip retry, which the
 * client names with the requestState it was given.
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
#include "front_int.h"
#include "log.h"
#include "revision.h"
#include "rpc.h"
#include "sse.h"
#include "sse_write.h"
#include "tasks.h"

#define SUBSYS SUBSYS_MCP

#define SSE_OUT_CAP      (16u * 1024 * 1024)
#define MRTR_WAIT_MAX_S  60.0 /* a parked upstream call waits this long at most for the retry */
#define MRTR_MAX_ROUNDS  16   /* input_required results for one call */
#define MRTR_MAX_ASKED   16   /* open questions of one call */
#define MAX_CALLS        1024 /* modern calls running or parked */
#define MAX_LISTENS      256
#define KEEPALIVE_S      15.0
#define MAX_LISTEN_URIS  64 /* resourceSubscriptions honoured per listen stream */
#define MAX_LISTEN_TASKS 64 /* taskIds (SEP-2663) honoured per listen stream */
#define STATE_KEY_LEN    32
#define HANDLE_LEN       32 /* hex of 128 random bits */

/* A wait's |what| (mcp_wait_new), besides a list kind. */
#define F_DISCOVER (-1)
#define F_ROUTE    (-2) /* a listen stream following resources: dispatched again after */

struct mcall;
struct listen;

struct mcp_modern {
    struct mx_mcp *m;
    uint8_t key[STATE_KEY_LEN]; /* signs requestState */
    struct mcall *calls;
    size_t call_cnt;
    struct listen *listens;
    size_t listen_cnt;
    struct rsub *rsubs; /* resources the shared upstream sessions are subscribed to */
    struct tsub *tsubs; /* tasks 2026-07-28 upstreams' listen streams follow */
};

/* What a routed modern call keeps besides the core's (its view data). */
struct mcall {
    struct mx_call *c; /* back-pointer: the call owns this */
    struct mcp_modern *mm;
    struct mcall *next;
    struct mx_mcpup *u;
    struct mx_mcpup *scope; /* /mcp/<server>: that upstream; NULL at /mcp */
    json_t *caps;           /* clientCapabilities of the current client request */
    int log_level;          /* from _meta logLevel; -1: no log messages */
    char *method;
    char *name; /* what a retry must repeat: tool or prompt name, or uri */
    char handle[HANDLE_LEN + 1];
    bool parked;     /* answered input_required; waits for the retry */
    json_t *asked;   /* key -> {"id", "method", "params"} the upstream waits for */
    uint64_t up_key; /* the upstream session that asked */
    unsigned next_q;
    int rounds;
    json_t *final; /* the answer that came while parked */
    ev_timer park;
    ev_timer ask_soon;     /* asks once the questions that came together are in */
    long long last_expiry; /* of the last requestState: each round's differs */
};

/* A resource some listen stream follows: subscribed upstream once. */
struct rsub {
    struct rsub *next;
    size_t up;
    char *uri;
    size_t refs;
};

/* A task of a 2026-07-28 upstream that listen streams follow: followed on
 * its shared session's listen stream once. */
struct tsub {
    struct tsub *next;
    size_t up;
    char *up_id;
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
    json_t *task_ids;    /* the honoured taskIds, sealed */
    struct tsub **tsubs; /* those of 2026-07-28 upstreams */
    size_t tsub_cnt;
    ev_timer keepalive;
};

static void dispatch(struct mcp_modern *mm, struct mx_call *c, json_t *msg, bool may_wait,
                     struct mx_mcpup *scope);

/* The only place that indexes the upstream table. */
static struct mx_mcpup *up_at(struct mx_mcp *m, size_t i)
{
    return m->ups[i];
}

/* ---- answering ---- */

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

void mcp_modern_finish(json_t *result)
{
    finish_result(result, false, 0);
}

static int sse_send(struct mx_mcp *m, struct mx_req *req, const json_t *msg)
{
    char *text = mx_rpc_dump(msg);
    mx_callhub_trace(m->hub, "s2c", NULL, mx_str_cstr(text));
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

/* How long a parked call of |mc|'s upstream waits: never past the bound of
 * the upstream request itself. */
static double park_s(const struct mcall *mc)
{
    return park_s_for(mc->u);
}

static char *state_new(struct mcall *mc, double wait_s)
{
    char mac[33];
    long long expiry = (long long)(ev_now(mc->mm->m->loop) + wait_s) + 1;
    /* MCP 2026-07-28, MRTR: a new round gets a new requestState */
    if (expiry <= mc->last_expiry)
        expiry = mc->last_expiry + 1;
    mc->last_expiry = expiry;
    state_mac(mc->mm, mc->handle, expiry, mc->method, mc->scope, mc->name, mac);
    return mx_xasprintf("%s.%lld.%s", mc->handle, expiry, mac);
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

/* ---- routed calls: the view ---- */

static struct mcall *mcall_of(struct mx_call *c)
{
    return c->data;
}

static void reply_upstream(struct mcall *mc, json_t *id, json_t *result, int code, const char *msg)
{
    mx_call_upstream_reply(mc->c, mc->up_key, id, result, code, msg);
}

static void stop_timers(struct mcall *mc)
{
    struct ev_loop *loop = mc->mm->m->loop;
    ev_timer_stop(loop, &mc->park);
    ev_timer_stop(loop, &mc->ask_soon);
}

/*
 * MCP 2026-07-28: closing the response stream is the cancel. Every question
 * the upstream still waits for is refused; the core tells a 2025 upstream
 * with notifications/cancelled (a disconnect is not a cancel there).
 */
static void mcall_orphaned(struct mx_call *c, const char *reason)
{
    struct mcall *mc = mcall_of(c);
    stop_timers(mc);
    const char *k;
    json_t *q;
    json_object_foreach(mc->asked, k, q)
    {
        reply_upstream(mc, json_object_get(q, "id"), NULL, MX_RPC_INVALID_REQUEST, reason);
    }
    json_object_clear(mc->asked);
}

static void park_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mcall *mc = mx_container_of(w, struct mcall, park);
    (void)loop;
    (void)revents;
    mx_log_info(SUBSYS, "up:%s no retry of an input_required %s within %.0f s; cancelled",
                mc->u->cfg->name, mc->method, park_s(mc));
    if (mc->final)
        mx_call_end(mc->c);
    else
        mx_call_cancel(mc->c, "the client did not answer in time");
}

/* Ask the client what the upstream asked: an input_required result ends
 * this client request; its retry continues the call. */
static void call_ask(struct mcall *mc)
{
    struct mx_call *c = mc->c;
    if (c->req == NULL || json_object_size(mc->asked) == 0)
        return;
    mx_call_hold(c);
    if (++mc->rounds > MRTR_MAX_ROUNDS) {
        json_t *e = json_pack("{s:i, s:s}", "code", MX_RPC_INTERNAL_ERROR, "message",
                              "too many input rounds for one request; cancelled");
        mx_call_reply(c, e, true, 200);
        json_decref(e);
        mx_call_cancel(c, "too many input rounds");
        mx_call_release(c);
        return;
    }
    json_t *reqs = json_object();
    const char *k;
    json_t *q;
    json_object_foreach(mc->asked, k, q)
    {
        json_object_set_new(reqs, k,
                            json_pack("{s:O, s:O}", "method", json_object_get(q, "method"),
                                      "params", json_object_get(q, "params")));
    }
    double wait = park_s(mc);
    char *state = state_new(mc, wait);
    json_t *result = json_pack("{s:s, s:o, s:s}", "resultType", "input_required", "inputRequests",
                               reqs, "requestState", state);
    free(state);
    finish_result(result, false, 0);
    mc->parked = true;
    mx_call_detach(c); /* a parked call must not hold up a drain */
    ev_timer_set(&mc->park, wait, 0.0);
    ev_timer_start(mc->mm->m->loop, &mc->park);
    mx_call_reply(c, result, false, 200);
    json_decref(result);
    mx_call_release(c);
}

static void ask_soon_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mcall *mc = mx_container_of(w, struct mcall, ask_soon);
    (void)loop;
    (void)revents;
    call_ask(mc);
}

/* A request from the upstream on this call's stream. */
static void mcall_question(struct mx_call *c, uint64_t key, json_t *msg)
{
    struct mcall *mc = mcall_of(c);
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    char text[200];
    mc->up_key = key;
    /* MCP 2026-07-28, MRTR: only these, and only when this request's
     * clientCapabilities declare them */
    const char *cap = strcmp(method, "sampling/createMessage") == 0 ? "sampling"
                      : strcmp(method, "elicitation/create") == 0   ? "elicitation"
                      : strcmp(method, "roots/list") == 0           ? "roots"
                                                                    : NULL;
    if (cap == NULL) {
        reply_upstream(mc, id, NULL, MX_RPC_METHOD_NOT_FOUND, "Method not found");
        return;
    }
    if (!json_is_object(json_object_get(mc->caps, cap))) {
        snprintf(text, sizeof(text), "the client did not declare the %s capability", cap);
        reply_upstream(mc, id, NULL, MX_RPC_METHOD_NOT_FOUND, text);
        return;
    }
    if (json_object_size(mc->asked) >= MRTR_MAX_ASKED) {
        reply_upstream(mc, id, NULL, MX_RPC_INVALID_REQUEST, "too many open questions");
        return;
    }
    /* a 2026 upstream's own key, which the client sees (MCP 2026-07-28,
     * MRTR: keys are the server's), else one of mcplex's */
    char k[72];
    const char *uk = c->rpc ? mx_callhub_ops(c->hub)->input_key(c->rpc, id) : NULL;
    if (uk && *uk && strlen(uk) < sizeof(k) && json_object_get(mc->asked, uk) == NULL) {
        snprintf(k, sizeof(k), "%s", uk);
    } else {
        do
            snprintf(k, sizeof(k), "%s-%u", cap, ++mc->next_q);
        while (json_object_get(mc->asked, k));
    }
    json_t *params = json_object_get(msg, "params");
    json_object_set_new(mc->asked, k,
                        json_pack("{s:O, s:s, s:o}", "id", id, "method", method, "params",
                                  params ? json_deep_copy(params) : json_object()));
    /* from the loop: questions that come together (a 2026 upstream's
     * input_required asks them at once) go to the client in one round */
    if (!ev_is_active(&mc->ask_soon))
        ev_timer_start(mc->mm->m->loop, &mc->ask_soon);
}

/* The upstream withdrew a question (MCP 2025-06-18, Cancellation). */
static void mcall_withdrawn(struct mx_call *c, uint64_t key, json_t *msg)
{
    struct mcall *mc = mcall_of(c);
    json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
    const char *k;
    void *tmp;
    json_t *q;
    (void)key;
    json_object_foreach_safe(mc->asked, tmp, k, q)
    {
        if (json_equal(json_object_get(q, "id"), rid))
            json_object_del(mc->asked, k);
    }
}

static void mcall_broadcast(struct mx_call *c, uint64_t key, json_t *msg)
{
    mcp_up_unsolicited(mcp_ctx_of(c->via), key, msg); /* about everyone */
}

/* MCP 2026-07-28, Logging: only for a request that set a level. */
static bool mcall_wants_log(struct mx_call *c, int level)
{
    const struct mcall *mc = mcall_of(c);
    return mc->log_level >= 0 && level >= mc->log_level;
}

/* The upstream's answer as a 2026 client reads it: resultType and
 * serverInfo added, resources/read cacheable, a missing resource -32602
 * with data.uri (MCP 2026-07-28, Resources); an upstream's -32021 (a
 * capability this request did not declare) keeps its HTTP 400. */
static json_t *mcall_answer(struct mx_call *c, json_t *resp, const struct mx_upfail *fail,
                            bool *is_error, int *status)
{
    struct mcall *mc = mcall_of(c);
    json_object_clear(mc->asked); /* the upstream no longer waits */
    if (resp == NULL) {
        mcp_up_note_fail(mc->u, fail);
        *is_error = true;
        return mx_upfail_error(mc->u->cfg, fail);
    }
    mcp_up_note_ok(mc->u);
    json_t *err = json_object_get(resp, "error");
    if (json_is_object(err)) {
        json_t *out = json_deep_copy(err);
        struct mx_taskid t;
        *is_error = true;
        /* the client named the task by its sealed id (mcall's name) */
        if (mcp_tasks_method(mc->method) &&
            mcp_tasks_upstream(mc->mm->m, mc->name, NULL, &t) == mc->u)
            out = mcp_tasks_scrub(mc->mm->m, mc->u, t.up, out);
        json_int_t code = json_integer_value(json_object_get(out, "code"));
        if (code == MX_REV_MISSING_CAPABILITY)
            *status = 400;
        if (code == MX_RPC_NO_RESOURCE && strcmp(mc->method, "resources/read") == 0) {
            json_object_set_new(out, "code", json_integer(MX_RPC_INVALID_PARAMS));
            json_t *d = json_object_get(out, "data");
            if (!json_is_object(d)) {
                d = json_object();
                json_object_set_new(out, "data", d);
            }
            if (!json_object_get(d, "uri"))
                json_object_set_new(d, "uri", json_string(mc->name));
        }
        return out;
    }
    json_t *result = json_object_get(resp, "result");
    json_t *out = json_is_object(result) ? json_deep_copy(result) : json_object();
    *is_error = false;
    if (!mcp_tasks_modern(mc->u))
        mcp_tasks26_from25(mc->method, &out);
    mcp_tasks_seal(mc->mm->m, mc->u, mc->method, out);
    finish_result(out, strcmp(mc->method, "resources/read") == 0, 0);
    return out;
}

/* The answer came while the call was parked: the retry gets it. */
static bool mcall_keep(struct mx_call *c, json_t *payload, bool is_error)
{
    struct mcall *mc = mcall_of(c);
    if (!mc->parked)
        return false;
    json_decref(mc->final);
    mc->final = json_pack("{s:O, s:b}", "payload", payload, "error", is_error);
    return true;
}

static void mcall_ended(struct mx_call *c)
{
    struct mcall *mc = mcall_of(c);
    struct mcp_modern *mm = mc->mm;
    stop_timers(mc);
    for (struct mcall **pp = &mm->calls; *pp; pp = &(*pp)->next) {
        if (*pp == mc) {
            *pp = mc->next;
            mm->call_cnt--;
            break;
        }
    }
}

static void mcall_clear(struct mx_call *c)
{
    struct mcall *mc = mcall_of(c);
    json_decref(mc->caps);
    json_decref(mc->asked);
    json_decref(mc->final);
    free(mc->method);
    free(mc->name);
    free(mc);
}

static const struct mx_call_view modern_view = {
    .question = mcall_question,
    .withdrawn = mcall_withdrawn,
    .broadcast = mcall_broadcast,
    .wants_log = mcall_wants_log,
    .answer = mcall_answer,
    .keep = mcall_keep,
    .orphaned = mcall_orphaned,
    .ended = mcall_ended,
    .clear = mcall_clear,
    .pass_other = false, /* MCP 2026-07-28: only progress and logs on a request's stream */
    .gone_reason = "the client closed the request",
};

/* The client request |msg| (of the call) now drives |mc|. */
static void mcall_attach(struct mcall *mc, json_t *msg)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    json_decref(mc->caps);
    mc->caps = json_incref(json_object_get(meta, MX_REV_META_CAPS));
    mc->log_level =
        mx_call_log_level(json_string_value(json_object_get(meta, MX_REV_META_LOG_LEVEL)));
    mc->parked = false;
    ev_timer_stop(mc->mm->m->loop, &mc->park);
}

/*
 * What an upstream sees of a modern request: mcplex's own id (also its
 * progress token, which the core puts in), and of the 2026 keys only the
 * client's capabilities (MCP checklist §8: _meta is rebuilt per upstream; a
 * legacy upstream has its session instead, and upsess_http.c drops them for it).
 */
static void upstream_shape(json_t *upmsg)
{
    json_t *params = json_object_get(upmsg, "params");
    json_t *meta = json_object_get(params, "_meta");
    /* a Multi Round-Trip retry's answers are mcplex's to relay; tasks/update
     * carries the task's answers as they are (SEP-2663) */
    if (strcmp(json_string_value(json_object_get(upmsg, "method")), "tasks/update") != 0)
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
             * messages are filtered here either way); a progress token
             * the core does not take never leaves */
            if ((strncmp(k, "io.modelcontextprotocol/", 24) == 0 &&
                 strcmp(k, MX_REV_META_CAPS) != 0 && strcmp(k, MX_REV_META_LOG_LEVEL) != 0) ||
                (strcmp(k, "progressToken") == 0 && !json_is_string(v) && !json_is_integer(v)))
                json_object_del(meta, k);
        }
        if (json_object_size(meta) == 0)
            json_object_del(params, "_meta");
    }
}

/* Route call |c| (request |msg|) to |u| as |upmsg| (owned); |name| is what
 * a retry repeats, |scope| the endpoint (NULL: /mcp). */
static void call_start(struct mcp_modern *mm, struct mx_call *c, json_t *msg, struct mx_mcpup *u,
                       json_t *upmsg, const char *name, struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    if (mm->call_cnt >= MAX_CALLS) {
        json_decref(upmsg);
        mx_call_error(c, 200, MX_RPC_INTERNAL_ERROR, "too many requests in flight", NULL);
        return;
    }
    uint8_t rnd[HANDLE_LEN / 2];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        mx_fatal(SUBSYS, "RAND_bytes failed");
    struct mcall *mc = mx_xcalloc(1, sizeof(*mc));
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(mc->handle + 2 * i, 3, "%02x", rnd[i]);
    mc->c = c;
    mc->mm = mm;
    mc->u = u;
    mc->scope = scope;
    mc->method = mx_xstrdup(json_string_value(json_object_get(msg, "method")));
    mc->name = mx_xstrdup(name ? name : "");
    mc->asked = json_object();
    mc->log_level = -1;
    ev_init(&mc->park, park_cb);
    ev_timer_init(&mc->ask_soon, ask_soon_cb, 0.0, 0.0);
    mc->next = mm->calls;
    mm->calls = mc;
    mm->call_cnt++;
    mx_call_set_view(c, &modern_view, mc);
    /* at /mcp/<server> the server's own logger names */
    c->log_prefix = scope ? NULL : u->cfg->alias;
    mcall_attach(mc, msg);
    upstream_shape(upmsg);
    /* a 2025 server's tool that runs only as a task */
    if (strcmp(mc->method, "tools/call") == 0 &&
        mcp_tasks26_wanted(
            u, msg, json_string_value(json_object_get(json_object_get(upmsg, "params"), "name"))))
        json_object_set_new(mx_rpc_own(upmsg, "params", true), "task", json_object());
    /* stateless clients share one upstream session; their ids never meet */
    struct upctx *via = mcp_up_session(u, NULL);
    mx_call_route(c, &via->v, u->idx, u->up, upmsg, NULL, mx_callhub_key(m->hub),
                  (long)u->cfg->request_timeout_ms);
}

static struct mcall *call_by_handle(struct mcp_modern *mm, const char *handle)
{
    for (struct mcall *mc = mm->calls; mc; mc = mc->next) {
        if (!mc->c->ended && !mc->c->orphan && strcmp(mc->handle, handle) == 0)
            return mc;
    }
    return NULL;
}

/* A retry carrying requestState (and usually inputResponses). */
static void call_retry(struct mcp_modern *mm, struct mx_call *c, json_t *msg,
                       const struct mx_mcpup *u, const char *name, const struct mx_mcpup *scope)
{
    json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *state = json_string_value(json_object_get(params, "requestState"));
    char handle[HANDLE_LEN + 1];
    char text[300];
    enum state_verdict v =
        state ? state_check(mm, state, method, scope, name ? name : "", handle) : STATE_BAD;
    struct mcall *mc = v == STATE_OK ? call_by_handle(mm, handle) : NULL;
    if (mc && mc->scope != scope)
        mc = NULL;
    if (v == STATE_BAD) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                      "Invalid params: requestState was not issued by this mcplex for this request",
                      NULL);
        return;
    }
    if (mc == NULL) {
        snprintf(text, sizeof(text),
                 "Invalid params: the request this requestState continues has ended (mcplex "
                 "waits %.0f s for the retry of an input_required result from %s); send the "
                 "request again without requestState",
                 park_s_for(u), u->cfg->name);
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, text, NULL);
        return;
    }
    if (mc->c->req) {
        mx_call_error(c, 200, MX_RPC_INVALID_REQUEST,
                      "Invalid Request: a retry of this request is already in flight", NULL);
        return;
    }
    struct mx_call *pc = mc->c;
    mx_call_hold(pc);
    mx_call_adopt(pc, c);
    mcall_attach(mc, msg);
    if (mc->final) {
        json_t *f = mc->final;
        mc->final = NULL;
        pc->kept = false;
        mx_call_reply(pc, json_object_get(f, "payload"), json_is_true(json_object_get(f, "error")),
                      200);
        json_decref(f);
        mx_call_release(pc);
        return;
    }
    /* MCP 2026-07-28, MRTR: answers to what was asked go to the waiting
     * upstream; unknown keys are ignored; what is still missing is asked
     * again */
    json_t *answers = json_object_get(params, "inputResponses");
    const char *k;
    void *tmp;
    json_t *q;
    json_object_foreach_safe(mc->asked, tmp, k, q)
    {
        json_t *a = json_object_get(answers, k);
        if (!json_is_object(a))
            continue;
        reply_upstream(mc, json_object_get(q, "id"), json_incref(a), 0, NULL);
        json_object_del(mc->asked, k);
    }
    call_ask(mc);
    mx_call_release(pc);
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

static void fan_start(struct mcp_modern *mm, struct mx_call *c, json_t *msg, int what,
                      unsigned kinds, struct mx_mcpup *scope);

static void parked_retry(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                         struct mx_mcpup *scope, enum mcp_wait_end end, void *data)
{
    (void)what;
    if (end == MCP_WAIT_READY)
        dispatch(data, c, msg, false, scope);
    else
        mx_call_error(c, 503, MX_RPC_INTERNAL_ERROR, "mcplex is stopping", NULL);
    (void)m;
}

/* A stateless client may call before anyone listed, or while the upstream
 * that holds the name is still starting or waking: wait for its lists
 * (mcp_park), then look again. Returns true when the request waits. */
static bool park(struct mcp_modern *mm, struct mx_call *c, json_t *msg, enum mx_agg_kind kind,
                 const char *name, bool may_wait)
{
    return may_wait && mcp_park(mm->m, NULL, c, msg, kind, name, parked_retry, mm);
}

/* tools/call, prompts/get and completion's ref/prompt: by exposed name. */
static const struct mx_agg_entry *lookup(struct mcp_modern *mm, struct mx_call *c, json_t *msg,
                                         enum mx_agg_kind kind, const char *name, bool may_wait)
{
    struct mx_mcp *m = mm->m;
    const struct mx_agg_entry *e =
        name ? mx_agg_lookup(mcp_view(m, kind), mx_str_make(name, strlen(name))) : NULL;
    if (e || park(mm, c, msg, kind, name, may_wait))
        return e;
    mcp_unknown_name(m, c, kind, name);
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
static bool params_pass(struct mx_call *c, const json_t *msg, const json_t *tool)
{
    struct mx_rev_error err;
    json_t *params = json_object_get(msg, "params");
    if (tool == NULL || mx_req_http_version(c->req) == 0 || /* stdio: no headers */
        mx_rev_check_params(json_object_get(tool, "inputSchema"),
                            json_object_get(params, "arguments"), req_header, c->req, &err) == 0)
        return true;
    mx_call_error(c, err.status, err.code, err.message, NULL);
    return false;
}

static void route_named(struct mcp_modern *mm, struct mx_call *c, json_t *msg,
                        enum mx_agg_kind kind, bool may_wait)
{
    json_t *params = json_object_get(msg, "params");
    const char *name = json_string_value(json_object_get(params, "name"));
    const struct mx_agg_entry *e = lookup(mm, c, msg, kind, name, may_wait);
    if (e == NULL || (kind == MX_AGG_TOOLS && !params_pass(c, msg, e->item)))
        return;
    if (json_object_get(params, "requestState")) {
        call_retry(mm, c, msg, up_at(mm->m, e->src), name, NULL);
        return;
    }
    json_t *upmsg = json_deep_copy(msg);
    json_object_set_new(json_object_get(upmsg, "params"), "name", json_string(e->orig));
    call_start(mm, c, msg, up_at(mm->m, e->src), upmsg, name, NULL);
}

/* The upstream for |uri|, or NULL after answering (or waiting). */
static struct mx_mcpup *route_uri(struct mcp_modern *mm, struct mx_call *c, json_t *msg,
                                  const char *uri, bool as_template, bool may_wait)
{
    struct mx_mcp *m = mm->m;
    struct mx_uriroute_result r;
    if (uri == NULL) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, "params.uri must be a string", NULL);
        return NULL;
    }
    struct mx_mcpup *u = mcp_uri_target(m, uri, as_template, &r);
    if (u || (r.cnt == 0 && park(mm, c, msg, MX_AGG_RESOURCES, uri, may_wait)))
        return u;
    if (r.cnt == 0 && (u = mcp_uri_only(m)) != NULL)
        return u;
    /* MCP 2026-07-28, Resources: not found is -32602 with data.uri */
    mcp_uri_refuse(m, c, uri, &r, MX_RPC_INVALID_PARAMS);
    return NULL;
}

static void route_read(struct mcp_modern *mm, struct mx_call *c, json_t *msg, bool may_wait)
{
    json_t *params = json_object_get(msg, "params");
    const char *uri = json_string_value(json_object_get(params, "uri"));
    struct mx_mcpup *u = route_uri(mm, c, msg, uri, false, may_wait);
    if (u == NULL)
        return;
    if (json_object_get(params, "requestState"))
        call_retry(mm, c, msg, u, uri, NULL);
    else
        call_start(mm, c, msg, u, json_deep_copy(msg), uri, NULL);
}

static void route_completion(struct mcp_modern *mm, struct mx_call *c, json_t *msg, bool may_wait)
{
    json_t *ref = json_object_get(json_object_get(msg, "params"), "ref");
    const char *type = json_string_value(json_object_get(ref, "type"));
    if (type && strcmp(type, "ref/prompt") == 0) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        const struct mx_agg_entry *e = lookup(mm, c, msg, MX_AGG_PROMPTS, name, may_wait);
        if (e == NULL)
            return;
        json_t *upmsg = json_deep_copy(msg);
        json_object_set_new(json_object_get(json_object_get(upmsg, "params"), "ref"), "name",
                            json_string(e->orig));
        call_start(mm, c, msg, up_at(mm->m, e->src), upmsg, name, NULL);
        return;
    }
    if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        struct mx_mcpup *u = route_uri(mm, c, msg, uri, true, may_wait);
        if (u)
            call_start(mm, c, msg, u, json_deep_copy(msg), uri, NULL);
        return;
    }
    mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                  "params.ref.type must be ref/prompt or ref/resource", NULL);
}

/* ---- server/discover and the lists: answered from the catalogues ---- */

/* /mcp/<server> when its upstream cannot be shown: the JSON-RPC error
 * naming it, as a call would get (MCP checklist §9.2; never the upstream's
 * 401). Returns true when |c| was answered so. */
static bool scope_unready(struct mx_call *c, const struct mx_mcpup *u, int kind)
{
    struct mx_upfail fail;
    if (!mcp_scope_unready(u, kind, &fail))
        return false;
    mx_call_note_fail(c, &fail);
    json_t *e = mx_upfail_error(u->cfg, &fail);
    mx_call_reply(c, e, true, 200);
    json_decref(e);
    return true;
}

static void respond_discover(struct mcp_modern *mm, struct mx_call *c, const struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    if (scope && scope_unready(c, scope, -1))
        return;
    json_t *caps = scope ? mcp_scope_caps(scope) : mcp_merged_caps(m);
    mcp_tasks_caps(m, scope, caps);
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
    mx_call_result(c, result);
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

static void respond_list(struct mcp_modern *mm, struct mx_call *c, json_t *msg,
                         enum mx_agg_kind kind, const struct mx_mcpup *scope)
{
    static const char *const caps[MX_AGG_KIND_CNT] = {"tools", "prompts", "resources", "resources"};
    const char *why = NULL;
    json_t *params = json_object_get(msg, "params");
    if (scope) {
        if (scope_unready(c, scope, (int)kind))
            return;
        /* MCP 2026-07-28, Server Discovery: what is not advertised is not
         * there */
        if (!json_is_object(
                json_object_get(json_object_get(scope->init, "capabilities"), caps[kind]))) {
            mx_call_error(c, 404, MX_RPC_METHOD_NOT_FOUND, "Method not found", NULL);
            return;
        }
    }
    json_t *result = mcp_list_page(mm->m, kind, params, scope, &why);
    if (result == NULL) {
        /* MCP 2026-07-28, Pagination: an invalid cursor is -32602 */
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, why, NULL);
        return;
    }
    finish_result(result, true, list_ttl(mm->m, kind, scope));
    mx_call_result(c, result);
}

static void fan_done(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                     struct mx_mcpup *scope, enum mcp_wait_end end, void *data)
{
    struct mcp_modern *mm = data;
    (void)m;
    if (end == MCP_WAIT_RETIRED) {
        mx_call_error(c, 503, MX_RPC_INTERNAL_ERROR, "the server left the config at a reload",
                      NULL);
    } else if (end != MCP_WAIT_READY) {
        mx_call_error(c, 503, MX_RPC_INTERNAL_ERROR, "mcplex is stopping", NULL);
    } else if (what == F_DISCOVER) {
        respond_discover(mm, c, scope);
    } else if (what == F_ROUTE) {
        dispatch(mm, c, msg, false, scope);
    } else {
        respond_list(mm, c, msg, (enum mx_agg_kind)what, scope);
    }
}

/*
 * Wait for the upstreams whose catalogue of |kinds| is missing or stale,
 * through their shared sessions, at most fanout_timeout (MCP checklist
 * §9.2: one slow upstream must not hang the answer); then answer. With a
 * |scope| (/mcp/<server>) that upstream alone, as long as it may take.
 */
static void fan_start(struct mcp_modern *mm, struct mx_call *c, json_t *msg, int what,
                      unsigned kinds, struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    struct mcp_wait *w = mcp_wait_new(m, c, msg, what, scope, fan_done, mm);
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = up_at(m, i);
        if (kinds == 0 || (scope && u != scope) || !mcp_up_needs(u, kinds, true))
            continue;
        mcp_wait_add(w, u, mcp_up_session(u, NULL), kinds);
    }
    mcp_wait_start(w, scope ? mcp_scope_wait_s(scope)
                            : (double)m->cfg->proxy.fanout_timeout_ms / 1000.0);
}

/* ---- subscriptions/listen ---- */

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
    /* a 2025 session holding it has it subscribed on the shared session already */
    if (mcp_legacy_subscribers(mm->m, NULL, up, uri) == 0)
        mcp_up_subscribe(up_at(mm->m, up), "resources/subscribe", uri);
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
    if (!mm->m->shutting_down && mcp_legacy_subscribers(mm->m, NULL, r->up, r->uri) == 0)
        mcp_up_subscribe(up_at(mm->m, r->up), "resources/unsubscribe", r->uri);
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

static struct tsub *tsub_ref(struct mcp_modern *mm, struct mx_mcpup *u, const char *up_id)
{
    for (struct tsub *t = mm->tsubs; t; t = t->next) {
        if (t->up == u->idx && strcmp(t->up_id, up_id) == 0) {
            t->refs++;
            return t;
        }
    }
    struct tsub *t = mx_xcalloc(1, sizeof(*t));
    t->up = u->idx;
    t->up_id = mx_xstrdup(up_id);
    t->refs = 1;
    t->next = mm->tsubs;
    mm->tsubs = t;
    mcp_up_task_watch(u, true, up_id);
    return t;
}

static void tsub_unref(struct mcp_modern *mm, struct tsub *t)
{
    if (--t->refs > 0)
        return;
    for (struct tsub **pp = &mm->tsubs; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    struct mx_mcpup *u = up_at(mm->m, t->up);
    if (!mm->m->shutting_down && !u->up->retired)
        mcp_up_task_watch(u, false, t->up_id);
    free(t->up_id);
    free(t);
}

static void listen_free(struct listen *l)
{
    struct mcp_modern *mm = l->mm;
    ev_timer_stop(mm->m->loop, &l->keepalive);
    for (size_t i = 0; i < l->sub_cnt; i++)
        rsub_unref(mm, l->subs[i]);
    free(l->subs);
    for (size_t i = 0; i < l->tsub_cnt; i++)
        tsub_unref(mm, l->tsubs[i]);
    free(l->tsubs);
    json_decref(l->task_ids);
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

static void listen_start(struct mcp_modern *mm, struct mx_call *c, json_t *msg, bool may_wait,
                         struct mx_mcpup *scope)
{
    struct mx_mcp *m = mm->m;
    json_t *filter = json_object_get(json_object_get(msg, "params"), "notifications");
    if (!json_is_object(filter)) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                      "Invalid params: subscriptions/listen needs params.notifications", NULL);
        return;
    }
    if (mm->listen_cnt >= MAX_LISTENS) {
        mx_call_error(c, 200, MX_RPC_INTERNAL_ERROR, "too many listen streams are open", NULL);
        return;
    }
    /* resources are found through the catalogues: load them first */
    unsigned res = KIND_BIT(MX_AGG_RESOURCES) | KIND_BIT(MX_AGG_TEMPLATES);
    if (may_wait && json_array_size(json_object_get(filter, "resourceSubscriptions")) &&
        any_needs(m, res, scope)) {
        fan_start(mm, c, msg, F_ROUTE, res, scope);
        return;
    }
    /* a stream of its own from now on; the call is counted as it opens */
    struct mx_req *req = c->req;
    mx_call_handoff(c, 200);
    if (mx_sse_start(req) != 0)
        return;
    struct listen *l = mx_xcalloc(1, sizeof(*l));
    l->mm = mm;
    l->req = req;
    l->id = json_incref(json_object_get(msg, "id"));
    l->scope = scope;
    for (int k = 0; scope && k < MX_AGG_KIND_CNT; k++)
        l->seen[k] = mcp_scope_gen(scope, k);
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
    /* SEP-2663: the tasks it follows, by their sealed ids; a 2026-07-28
     * upstream's on its own listen stream, a 2025 one's status
     * notifications come anyway */
    l->task_ids = json_array();
    l->tsubs = mx_xcalloc(MAX_LISTEN_TASKS, sizeof(*l->tsubs));
    json_array_foreach(json_object_get(filter, "taskIds"), i, v)
    {
        struct mx_taskid t;
        struct mx_mcpup *u = json_array_size(l->task_ids) < MAX_LISTEN_TASKS
                                 ? mcp_tasks_upstream(m, json_string_value(v), scope, &t)
                                 : NULL;
        if (u == NULL)
            continue;
        json_array_append(l->task_ids, v);
        if (mcp_tasks_modern(u))
            l->tsubs[l->tsub_cnt++] = tsub_ref(mm, u, t.up);
    }
    if (json_array_size(l->task_ids))
        json_object_set(honoured, "taskIds", l->task_ids);
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
                now = mcp_scope_gen(l->scope, k) != l->seen[k];
                l->seen[k] = mcp_scope_gen(l->scope, k);
            }
            if (now && l->want[k] && !listen_send(l, methods[k], json_object()))
                break;
        }
    }
}

void mcp_modern_task_status(struct mx_mcp *m, const json_t *task)
{
    struct mcp_modern *mm = m->modern;
    const char *id = json_string_value(json_object_get(task, "taskId"));
    if (mm == NULL || id == NULL)
        return;
    struct listen *next;
    for (struct listen *l = mm->listens; l; l = next) {
        next = l->next;
        size_t i;
        json_t *v;
        json_array_foreach(l->task_ids, i, v)
        {
            if (strcmp(json_string_value(v), id) == 0) {
                listen_send(l, "notifications/tasks", json_deep_copy(task));
                break;
            }
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
 * them, as it does for a 2025 client there); |name| is what a retry must
 * repeat.
 */
static void route_scoped(struct mcp_modern *mm, struct mx_call *c, json_t *msg, struct mx_mcpup *u,
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
        if (!params_pass(c, msg, tool))
            return;
    }
    if (json_object_get(json_object_get(msg, "params"), "requestState"))
        call_retry(mm, c, msg, u, name, u);
    else
        call_start(mm, c, msg, u, json_deep_copy(msg), name, u);
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

/* A tasks/get, update or cancel: to the upstream the sealed id names, once
 * the revision it speaks is known (|may_wait|: it may be learnt first). */
static void route_task(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                       struct mx_mcpup *scope, bool may_wait);

static void route_task_then(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                            struct mx_mcpup *scope)
{
    route_task(m, s, c, msg, scope, false);
}

static void route_task(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                       struct mx_mcpup *scope, bool may_wait)
{
    json_t *upmsg = NULL;
    struct mx_mcpup *u = mcp_tasks_route(m, c, msg, scope, &upmsg);
    if (u &&
        !mcp_tasks_take(m, s, c, u, msg, upmsg, scope, true, may_wait ? route_task_then : NULL))
        call_start(m->modern, c, msg, u, upmsg,
                   json_string_value(json_object_get(json_object_get(msg, "params"), "taskId")),
                   scope);
}
static void dispatch(struct mcp_modern *mm, struct mx_call *c, json_t *msg, bool may_wait,
                     struct mx_mcpup *scope)
{
    static const char *const lists[MX_AGG_KIND_CNT] = {
        "tools/list", "prompts/list", "resources/list", "resources/templates/list"};
    const char *method = json_string_value(json_object_get(msg, "method"));
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (strcmp(method, lists[k]) == 0) {
            fan_start(mm, c, msg, k, KIND_BIT(k), scope);
            return;
        }
    }
    bool routed = strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0 ||
                  strcmp(method, "resources/read") == 0 ||
                  strcmp(method, "completion/complete") == 0;
    if (strcmp(method, "server/discover") == 0) {
        fan_start(mm, c, msg, F_DISCOVER, may_wait ? KINDS_ALL : 0, scope);
    } else if (strcmp(method, "subscriptions/listen") == 0) {
        listen_start(mm, c, msg, may_wait, scope);
    } else if (mcp_tasks_method(method)) {
        route_task(mm->m, NULL, c, msg, scope, true);
    } else if (routed && scope) {
        route_scoped(mm, c, msg, scope, scoped_name(method, json_object_get(msg, "params")));
    } else if (strcmp(method, "tools/call") == 0) {
        route_named(mm, c, msg, MX_AGG_TOOLS, may_wait);
    } else if (strcmp(method, "prompts/get") == 0) {
        route_named(mm, c, msg, MX_AGG_PROMPTS, may_wait);
    } else if (strcmp(method, "resources/read") == 0) {
        route_read(mm, c, msg, may_wait);
    } else if (strcmp(method, "completion/complete") == 0) {
        route_completion(mm, c, msg, may_wait);
    } else {
        /* mx_rev_check() refused the rest already */
        mx_call_error(c, 404, MX_RPC_METHOD_NOT_FOUND, "Method not found", NULL);
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

bool mcp_modern_refuses(struct mx_mcp *m, struct mx_call *c)
{
    static const struct mx_hdr_out allow[] = {{"Allow", "POST"}};
    struct mx_rev_hdrs h;
    (void)m;
    get_headers(c->req, &h);
    if (mx_str_eq(mx_req_method(c->req), MX_STR_LIT("POST")) || h.session ||
        !mx_rev_is_modern(NULL, &h))
        return false;
    mx_call_note(c, c->http_method, NULL, NULL);
    /* MCP 2026-07-28, Streamable HTTP: POST only */
    mx_call_json(c, 405,
                 mx_rpc_error_new(NULL, MX_RPC_INVALID_REQUEST,
                                  "Method Not Allowed: MCP 2026-07-28 is POST only", NULL),
                 allow, 1);
    return true;
}

void mcp_modern_post(struct mx_mcp *m, struct mx_call *c, json_t *msg, struct mx_mcpup *scope)
{
    struct mcp_modern *mm = m->modern;
    const char *method = json_string_value(json_object_get(msg, "method"));
    mx_callhub_trace(m->hub, "c2s", NULL, mx_req_body(c->req));
    if (mx_rpc_classify(msg) != MX_RPC_REQUEST) {
        /* MCP 2026-07-28: no client notification is defined over HTTP;
         * accepted and ignored */
        mx_call_note(c, method ? method : "response", NULL, NULL);
        mx_call_status(c, 202);
        return;
    }
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    mx_call_note(c, method, json_object_get(msg, "id"), meta);
    mx_call_note_target(c, json_object_get(msg, "params"), true);
    struct mx_rev_hdrs h;
    struct mx_rev_error err;
    get_headers(c->req, &h);
    if (mx_rev_check(msg, &h, &err) != 0) {
        mx_call_error(c, err.status, err.code, err.message, err.data);
        return;
    }
    json_t *lv = json_object_get(meta, MX_REV_META_LOG_LEVEL);
    if (lv && mx_call_log_level(json_string_value(lv)) < 0) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, "Invalid params: unknown logLevel", NULL);
        return;
    }
    dispatch(mm, c, msg, true, scope);
}

void mcp_modern_retired(struct mx_mcp *m, size_t idx)
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

void mcp_modern_free(struct mcp_modern *mm)
{
    if (mm == NULL)
        return;
    while (mm->listens)
        listen_end(mm->listens);
    while (mm->calls)
        mx_call_close(mm->calls->c, "mcplex is stopping", 503, MX_RPC_INTERNAL_ERROR,
                      "mcplex is stopping");
    mm->m->modern = NULL; /* 2025 sessions closing after this count no listens */
    free(mm);
}
