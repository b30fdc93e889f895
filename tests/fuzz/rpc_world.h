/* SPDX-License-Identifier: MIT */
/*
 * An in-process /mcp for the JSON-RPC router fuzz targets: a config with
 * one upstream, a gateway assembled by hand (no listener, no socket), the
 * real struct mx_mcp on libev's default loop, and requests made with a
 * front end that keeps the response in memory. The upstream is marked
 * retired (as a reload leaves a removed server until its requests end):
 * /mcp never starts a catalogue refresh or a call to it, so nothing ever
 * leaves the process, while messages from it can still be fed to the
 * router by hand. One client session is opened by a
 * real initialize at first use and reused by every input.
 *
 * Header-only (static functions) so that each fuzz_<target>.c stays one
 * file for the build and for replay.c.
 */
#ifndef MX_FUZZ_RPC_WORLD_H
#define MX_FUZZ_RPC_WORLD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "gateway.h"
#include "log.h"
#include "front_int.h"
#include "mcp.h"
#include "metrics.h"
#include "req_int.h"
#include "rpc.h"
#include "session.h"

#define WORLD_BODY_CAP (1u << 20)

/* The revision the world's client session negotiates; a target may name
 * another before including this file. */
#ifndef WORLD_VERSION
#define WORLD_VERSION "2025-06-18"
#endif

struct world_resp {
    int status;
    bool started;
    bool ended;
    bool sid_seen;
    char sid[MX_SESSION_ID_LEN + 1];
    struct mx_buf body;
};

struct world {
    struct ev_loop *loop;
    struct mx_config *cfg;
    struct mx_gateway gw;
    struct mx_cfg_gen gen;
    struct mx_mcp *m;
    char sid[MX_SESSION_ID_LEN + 1];
};

static struct world world_g;

static int world_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                       long long body_len)
{
    struct world_resp *r = req->conn;
    (void)body_len;
    MX_ASSERT(!r->started);
    r->started = true;
    r->status = status;
    for (size_t i = 0; i < cnt; i++) {
        if (strcmp(hdrs[i].name, "Mcp-Session-Id") == 0 &&
            strlen(hdrs[i].value) == MX_SESSION_ID_LEN) {
            memcpy(r->sid, hdrs[i].value, MX_SESSION_ID_LEN + 1);
            r->sid_seen = true;
        }
    }
    return 0;
}

static int world_write(struct mx_req *req, const void *p, size_t len)
{
    struct world_resp *r = req->conn;
    MX_ASSERT(r->started && !r->ended);
    /* a client that stopped reading: what does not fit is dropped */
    mx_buf_append(&r->body, p, len);
    return 0;
}

static void world_end(struct mx_req *req)
{
    struct world_resp *r = req->conn;
    MX_ASSERT(r->started && !r->ended);
    r->ended = true;
}

static void world_reset(struct mx_req *req)
{
    struct world_resp *r = req->conn;
    r->ended = true;
}

static const struct mx_req_proto world_proto = {world_start, world_write, world_end, world_reset};

static void world_header(struct mx_req *req, const char *name, const char *value)
{
    MX_ASSERT(mx_req_add_header_piece(req, true, name, strlen(name)) == 0);
    MX_ASSERT(mx_req_add_header_piece(req, false, value, strlen(value)) == 0);
}

/* Turn the loop a few times without blocking: timers due now, deferred frees. */
static void world_spin(void)
{
    for (int i = 0; i < 4; i++)
        ev_run(world_g.loop, EVRUN_NOWAIT);
}

/*
 * POST /mcp with |body|, in session |sid| (NULL: none). The response ends,
 * or the client is made to go away; |r| holds what was answered. Returns
 * the status (0: nothing was started).
 */
static int world_post(const char *sid, const void *body, size_t len, struct world_resp *r)
{
    memset(r, 0, sizeof(*r));
    mx_buf_init(&r->body, WORLD_BODY_CAP);
    struct mx_req *req = mx_req_new(&world_proto, r, 64 * 1024, 4u * 1024 * 1024);
    snprintf(req->method, sizeof(req->method), "POST");
    req->version = 11;
    mx_buf_append(&req->url, "/mcp", 4);
    world_header(req, "Host", "127.0.0.1");
    world_header(req, "Content-Type", "application/json");
    world_header(req, "Accept", "application/json, text/event-stream");
    if (sid) {
        world_header(req, "Mcp-Session-Id", sid);
        world_header(req, "MCP-Protocol-Version", WORLD_VERSION);
    }
    mx_req_finish_head(req);
    if (mx_buf_append(&req->body, body, len) != 0) {
        mx_req_free(req);
        return 0;
    }
    mx_mcp_serve(world_g.m, req);
    world_spin();
    if (!r->ended)
        mx_req_notify_abort(req); /* the client goes; its calls must end */
    world_spin();
    mx_req_free(req);
    return r->status;
}

/* Every body mcplex answers with JSON is one JSON-RPC message. */
static void world_check_json(const struct world_resp *r)
{
    if (!r->ended || r->status == 202 || mx_buf_len(&r->body) == 0)
        return;
    struct mx_str b = mx_buf_str(&r->body);
    if (b.len >= 6 && memcmp(b.p, "event:", 6) == 0)
        return; /* an SSE stream: its events were checked by the encoder */
    json_t *msg = mx_rpc_parse(b);
    MX_ASSERT(msg != NULL);
    MX_ASSERT(json_is_object(msg));
    MX_ASSERT(mx_rpc_classify(msg) == MX_RPC_RESPONSE || json_object_get(msg, "error") != NULL);
    json_decref(msg);
}

static void world_init(void)
{
    static const char cfg_text[] = "[listen]\naddress = \"127.0.0.1:0\"\ntls = false\n"
                                   "[proxy]\nstate_dir = \"/nonexistent/mcplex-fuzz\"\n"
                                   "[servers.up]\nurl = \"http://127.0.0.1:9/mcp\"\n"
                                   "transport = \"sse\"\nauth = \"none\"\n";
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
        "\"protocolVersion\":\"" WORLD_VERSION "\",\"capabilities\":{\"sampling\":{},"
        "\"elicitation\":{},\"roots\":{}},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}";
    struct mx_diag diag;
    struct world *w = &world_g;
    if (w->m)
        return;
    mx_log_set_level(getenv("MX_FUZZ_LOG") ? MX_LOG_DEBUG : MX_LOG_ERR);
    w->loop = ev_default_loop(0);
    MX_ASSERT(mx_config_parse("fuzz.toml", cfg_text, sizeof(cfg_text) - 1, &w->cfg, &diag) == 0);
    struct mx_gateway *gw = &w->gw;
    gw->loop = w->loop;
    gw->cfg = w->cfg;
    w->gen.cfg = w->cfg;
    gw->gens = &w->gen;
    gw->metrics = mx_metrics_new(NULL);
    for (size_t i = 0; i < w->cfg->server_cnt; i++)
        MX_ASSERT(mx_gateway_slot_add(gw, &w->cfg->servers[i], &w->gen) != NULL);
    gw->upstreams[0]->retired = true;
    gw->uclient = mx_uclient_new(w->loop);
    struct mx_front_env env = {w->loop,     w->cfg, gw->upstreams, gw->upstream_cnt,
                               gw->uclient, {0},    NULL};
    w->m = mx_mcp_new(&env);
    gw->mcp = w->m;
    struct world_resp r;
    MX_ASSERT(world_post(NULL, init, sizeof(init) - 1, &r) == 200);
    MX_ASSERT(r.sid_seen);
    memcpy(w->sid, r.sid, sizeof(w->sid));
    mx_buf_clear(&r.body);
    /* MCP 2025-06-18, Lifecycle: the client confirms */
    static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    MX_ASSERT(world_post(w->sid, note, sizeof(note) - 1, &r) == 202);
    mx_buf_clear(&r.body);
}

/* The open client session (it may have been closed by an input: then a
 * new one is opened). */
static struct mx_session *world_session(void)
{
    struct world *w = &world_g;
    struct mx_session *s = mx_session_find(w->m->sessions, mx_str_cstr(w->sid));
    if (s == NULL) {
        mx_mcp_free(w->m);
        w->m = NULL;
        mx_uclient_free(w->gw.uclient);
        for (size_t i = 0; i < w->gw.upstream_cnt; i++) {
            mx_upstream_clear(w->gw.upstreams[i]);
            free(w->gw.upstreams[i]);
        }
        free(w->gw.upstreams);
        mx_metrics_free(w->gw.metrics);
        mx_config_free(w->cfg);
        memset(w, 0, sizeof(*w));
        world_init();
        s = mx_session_find(w->m->sessions, mx_str_cstr(w->sid));
    }
    MX_ASSERT(s != NULL);
    return s;
}

/* One fuzz input as the body of a POST in the world's session: never
 * crashes, a JSON answer is one JSON-RPC message, and once the request is
 * over no call is left in the id map. */
static inline void world_fuzz_post(const uint8_t *data, size_t size)
{
    struct world_resp r;
    world_init();
    world_session();
    int status = world_post(world_g.sid, data, size, &r);
    MX_ASSERT(status == 0 || (status >= 200 && status < 600));
    world_check_json(&r);
    mx_buf_clear(&r.body);
    MX_ASSERT(mx_idmap_call_cnt(world_g.m->ids) == 0);
}

#endif
