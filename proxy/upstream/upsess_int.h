/* SPDX-License-Identifier: MIT */
/*
 * Inside upsess: the seam between the dispatcher (upsess.c) and the
 * transports. A transport is one file that fills one struct mx_upsess_ops
 * (upsess_http.c, upsess_sse.c, upsess_stdio.c); upsess.c picks it from its
 * table by the server's `transport` config value and reaches a transport
 * only through it. Every session object of a transport starts with struct
 * mx_upsess and every request object with struct mx_uprpc, which carry the
 * ops, so each public mx_upsess_* and mx_uprpc_* function finds the
 * transport of the object it is given. What every session has (its env,
 * callbacks, capabilities, initialize result, key, readiness, trace label)
 * is in struct mx_upsess, with the helpers that fill and free it. Only for upsess.c and
 * the transports; nothing outside proxy/upstream/ includes it.
 */
#ifndef MX_UPSESS_INT_H
#define MX_UPSESS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "str.h"
#include "upsess.h"

/*
 * One transport. The functions are those of upsess.h of the same names,
 * for sessions and requests made by |open| and |request| of this table;
 * upsess.c calls them with objects that are not NULL, and |request| with
 * callbacks and a message (if any) upsess.h allows; each keeps the rest of
 * the contract of upsess.h itself.
 */
struct mx_upsess_ops {
    const char *label;  /* mx_upsess_transport_label() */
    const char *subsys; /* its log subsystem, for the lines upsess.c writes for it */
    unsigned caps;      /* enum mx_upsess_cap bits */
    struct mx_upsess *(*open)(struct mx_upsess_env *env, const json_t *caps,
                              const char *trace_session, const struct mx_upsess_cbs *cbs,
                              void *data);
    void (*close)(struct mx_upsess *s);
    int (*request)(struct mx_upsess *s, json_t *msg, long timeout_ms,
                   const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
    /* Called only when the session is ready and the message is for its
     * current upstream session (upsess.c drops the others). */
    void (*send)(struct mx_upsess *s, json_t *msg);
    void (*cancel)(struct mx_uprpc *r);
    void (*resume)(struct mx_uprpc *r);
    /* Optional: NULL when the transport never asks questions this way. */
    const char *(*input_key)(const struct mx_uprpc *r, const json_t *id);
    /* Optional: drop what this transport keeps in |env| (mx_upsess_env_clear
     * calls it for every env, whatever the transport of its upstream). */
    void (*env_clear)(struct mx_upsess_env *env);
    /* Optional (mx_upsess_keep): NULL where there is no session to keep. */
    void (*keep)(struct mx_upsess *s, bool on, const char *sid, const char *version,
                 const json_t *init);
    const char *(*session_id)(const struct mx_upsess *s, const char **version);
};

/* The transports (the table in upsess.c). */
extern const struct mx_upsess_ops mx_upsess_http_ops;  /* upsess_http.c */
extern const struct mx_upsess_ops mx_upsess_sse_ops;   /* upsess_sse.c */
extern const struct mx_upsess_ops mx_upsess_stdio_ops; /* upsess_stdio.c */

/* The first member of every session object. */
struct mx_upsess {
    const struct mx_upsess_ops *ops;
    struct mx_upsess_env *env;
    struct mx_upsess_cbs cbs;
    void *data;
    json_t *caps;        /* the client capabilities it declares (a copy) */
    json_t *init_result; /* the last initialize result (mx_upsess_init_result), or NULL */
    uint64_t key;        /* of the current upstream session (mx_upsess_key) while ready */
    bool ready;          /* kept by the transport's set_state() with its own state */
    char *trace_session; /* the label of its trace lines, or NULL */
};

/* The first member of every request object. */
struct mx_uprpc {
    const struct mx_upsess_ops *ops;
    bool want_raw;     /* mx_uprpc_want_raw() */
    struct mx_str raw; /* during on_done: the result as bytes (mx_uprpc_raw_result) */
    char *text;        /* mx_uprpc_give_text(), or NULL */
    size_t text_len;
};

/* Free what the request's base holds; each transport's free calls it. */
void mx_uprpc_base_clear(struct mx_uprpc *r);

/* Fill |s| for a new session of |ops| (|caps| and |trace_session| are
 * copied, as mx_upsess_new says) and count it live. */
void mx_upsess_base_init(struct mx_upsess *s, const struct mx_upsess_ops *ops,
                         struct mx_upsess_env *env, const json_t *caps, const char *trace_session,
                         const struct mx_upsess_cbs *cbs, void *data);
/* Free what mx_upsess_base_init and the session kept in |s|, and count it
 * gone. */
void mx_upsess_base_clear(struct mx_upsess *s);

/* A request object more, or one fewer (mx_upsess_live_cnt). */
void mx_upsess_live_inc(void);
void mx_upsess_live_dec(void);

/* Trace |msg| (borrowed), sent ("c2s") or received ("s2c") on |s|. */
void mx_upsess_trace(const struct mx_upsess *s, const char *dir, struct mx_str msg);

#endif
