/* SPDX-License-Identifier: MIT */
/*
 * A message arriving from an upstream outside any answer: arbitrary bytes
 * parsed as the upstream's session layer does (mx_rpc_parse, objects only),
 * then handed to the router (mcp_up_unsolicited) once as if from the shared
 * upstream session and once from the client's own per-client session:
 * requests to the client (sampling, elicitation, roots, ping, anything),
 * notifications (progress, logging, list_changed, resources/updated,
 * cancelled) and stray responses. Whatever reaches the client's GET stream
 * is read back and every request in it answered, as a client would; then
 * no upstream request is left waiting in the id map.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rpc_world.h"
#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The client answers each request it got on its GET stream. */
static int answer_event(const struct mx_sse_event *ev, void *arg)
{
    (void)arg;
    json_t *msg = mx_rpc_parse(ev->data);
    MX_ASSERT(msg != NULL); /* mcplex only writes JSON on the stream */
    if (mx_rpc_classify(msg) == MX_RPC_REQUEST) {
        json_t *id = json_object_get(msg, "id");
        MX_ASSERT(json_is_integer(id)); /* ids toward clients are mcplex's own */
        char body[128];
        int n = snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
                         (long long)json_integer_value(id));
        struct world_resp r;
        MX_ASSERT(world_post(world_g.sid, body, (size_t)n, &r) == 202);
        world_check_json(&r);
        mx_buf_clear(&r.body);
    }
    json_decref(msg);
    return 0;
}

/* Open a GET stream on |s|, which takes what was queued, and answer it. */
static void drain_get_stream(struct mx_session *s)
{
    struct world_resp r;
    memset(&r, 0, sizeof(r));
    mx_buf_init(&r.body, WORLD_BODY_CAP);
    struct mx_req *req = mx_req_new(&world_proto, &r, 1024, 1024);
    snprintf(req->method, sizeof(req->method), "GET");
    mx_req_finish_head(req);
    MX_ASSERT(mx_session_attach_get(s, req) == 0);
    mx_session_end_get(s);
    mx_req_free(req);
    struct mx_sse_decoder d;
    mx_sse_decoder_init(&d, WORLD_BODY_CAP, answer_event, NULL);
    mx_sse_decode(&d, mx_buf_data(&r.body), mx_buf_len(&r.body));
    mx_sse_decoder_clear(&d);
    mx_buf_clear(&r.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    world_init();
    struct mx_session *s = world_session();
    struct mx_mcp *m = world_g.m;
    json_t *msg = mx_rpc_parse(mx_str_make((const char *)data, size));
    if (msg == NULL || !json_is_object(msg)) {
        json_decref(msg);
        return 0;
    }
    struct mx_mcpup *u = m->ups[0];
    /* from the shared session, then from this client's own session */
    mcp_up_unsolicited(&u->shared, 1, msg);
    world_spin();
    struct upctx mine = {{NULL, 0}, u, s};
    mcp_up_unsolicited(&mine, 2, msg);
    world_spin();
    json_decref(msg);
    drain_get_stream(s);
    world_spin();
    MX_ASSERT(mx_idmap_s2c_cnt(m->ids) == 0);
    return 0;
}
