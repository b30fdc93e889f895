/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher of upstream sessions: the table of transports, indexed by
 * the server's `transport` config value, and the public functions of
 * upsess.h, each handing its object to the ops the object carries
 * (upsess_int.h). It also owns what every session has in common: filling
 * and freeing struct mx_upsess, the live count, tracing, and dropping a
 * message for a session that is gone. It knows no transport but through
 * the table; the transports themselves are in upsess_http.c (with
 * upsess_http26.c), upsess_sse.c and upsess_stdio.c.
 */
#include <stdlib.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "upsess_int.h"

/* One row per `transport` value (config/model.h). */
static const struct mx_upsess_ops *const transports[] = {
    [MX_TRANSPORT_HTTP] = &mx_upsess_http_ops,
    [MX_TRANSPORT_SSE] = &mx_upsess_sse_ops,
    [MX_TRANSPORT_STDIO] = &mx_upsess_stdio_ops,
};

#define TRANSPORT_CNT (sizeof(transports) / sizeof(transports[0]))

static size_t live_cnt;

static const struct mx_upsess_ops *ops_of(const struct mx_server_cfg *cfg)
{
    size_t t = (size_t)cfg->transport;
    MX_ASSERT(t < TRANSPORT_CNT && transports[t] != NULL);
    return transports[t];
}

unsigned mx_upsess_caps(const struct mx_server_cfg *cfg)
{
    return ops_of(cfg)->caps;
}

const char *mx_upsess_transport_label(const struct mx_server_cfg *cfg)
{
    return ops_of(cfg)->label;
}

/* ---- what every session has ---- */

void mx_upsess_base_init(struct mx_upsess *s, const struct mx_upsess_ops *ops,
                         struct mx_upsess_env *env, const json_t *caps, const char *trace_session,
                         const struct mx_upsess_cbs *cbs, void *data)
{
    s->ops = ops;
    s->env = env;
    s->cbs = *cbs;
    s->data = data;
    s->caps = caps ? json_deep_copy(caps) : json_object();
    s->init_result = NULL;
    s->key = 0;
    s->ready = false;
    s->trace_session = trace_session ? mx_xstrdup(trace_session) : NULL;
    live_cnt++;
}

void mx_upsess_base_clear(struct mx_upsess *s)
{
    json_decref(s->caps);
    s->caps = NULL;
    json_decref(s->init_result);
    s->init_result = NULL;
    free(s->trace_session);
    s->trace_session = NULL;
    live_cnt--;
}

void mx_upsess_live_inc(void)
{
    live_cnt++;
}

void mx_upsess_live_dec(void)
{
    MX_ASSERT(live_cnt > 0);
    live_cnt--;
}

size_t mx_upsess_live_cnt(void)
{
    return live_cnt;
}

void mx_upsess_trace(const struct mx_upsess *s, const char *dir, struct mx_str msg)
{
    mx_upstream_report_msg(s->env->up, dir, s->trace_session, msg);
}

/* ---- public ---- */

struct mx_upsess *mx_upsess_new(struct mx_upsess_env *env, const json_t *caps,
                                const char *trace_session, const struct mx_upsess_cbs *cbs,
                                void *data)
{
    return ops_of(env->up->cfg)->open(env, caps, trace_session, cbs, data);
}

void mx_upsess_close(struct mx_upsess *s)
{
    if (s)
        s->ops->close(s);
}

uint64_t mx_upsess_key(const struct mx_upsess *s)
{
    return s && s->ready ? s->key : 0;
}

bool mx_upsess_is_ready(const struct mx_upsess *s)
{
    return s && s->ready;
}

void mx_upsess_keep(struct mx_upsess *s, bool on, const char *sid, const char *version,
                    const json_t *init)
{
    if (s && s->ops->keep)
        s->ops->keep(s, on, sid, version, init);
}

const char *mx_upsess_session_id(const struct mx_upsess *s, const char **version)
{
    *version = NULL;
    return s && s->ready && s->ops->session_id ? s->ops->session_id(s, version) : NULL;
}

json_t *mx_upsess_init_result(const struct mx_upsess *s)
{
    return s ? s->init_result : NULL;
}

int mx_upsess_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                      const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    *out = NULL;
    if (s == NULL || cbs == NULL || cbs->on_done == NULL ||
        (msg && json_object_get(msg, "id") == NULL))
        return MX_EINVAL;
    return s->ops->request(s, msg, timeout_ms, cbs, data, out);
}

void mx_uprpc_cancel(struct mx_uprpc *r)
{
    if (r)
        r->ops->cancel(r);
}

void mx_uprpc_resume(struct mx_uprpc *r)
{
    if (r)
        r->ops->resume(r);
}

void mx_uprpc_want_raw(struct mx_uprpc *r)
{
    r->want_raw = true;
}

struct mx_str mx_uprpc_raw_result(const struct mx_uprpc *r)
{
    return r->raw;
}

void mx_uprpc_give_text(struct mx_uprpc *r, char *text, size_t len)
{
    free(r->text);
    r->text = text;
    r->text_len = len;
}

void mx_uprpc_base_clear(struct mx_uprpc *r)
{
    free(r->text);
    r->text = NULL;
}

const char *mx_uprpc_input_key(const struct mx_uprpc *r, const json_t *id)
{
    if (r == NULL || r->ops->input_key == NULL)
        return NULL;
    return r->ops->input_key(r, id);
}

void mx_upsess_send(struct mx_upsess *s, json_t *msg, uint64_t key)
{
    if (s == NULL)
        return;
    if (!s->ready || (key && key != s->key)) {
        mx_log_debug(s->ops->subsys, "up:%s message for a session that is gone; dropped",
                     s->env->up->cfg->name);
        return;
    }
    s->ops->send(s, msg);
}

void mx_upsess_env_clear(struct mx_upsess_env *env)
{
    for (size_t i = 0; i < TRANSPORT_CNT; i++) {
        if (transports[i] && transports[i]->env_clear)
            transports[i]->env_clear(env);
    }
}
