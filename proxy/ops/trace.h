/* SPDX-License-Identifier: MIT */
/*
 * The JSONL trace: one line per JSON-RPC message that crosses mcplex
 * ({"ts","dir","server","session","msg"}). Every line passes through one
 * redaction function that blanks every configured secret value, so a
 * token an upstream echoes back never lands in the file.
 */
#ifndef MX_TRACE_H
#define MX_TRACE_H

#include "diag.h"
#include "model.h"
#include "str.h"

struct mx_trace;

/* Open |path| for appending (created 0600). |cfg| lends the secrets to
 * redact and must outlive the trace (or be removed first). Returns NULL
 * with |diag| set. */
struct mx_trace *mx_trace_open(const char *path, const struct mx_config *cfg, struct mx_diag *diag);
/* After a reload several config generations are in use at once: the trace
 * redacts the secrets of each one it was given. Both accept a NULL trace. */
void mx_trace_add_config(struct mx_trace *t, const struct mx_config *cfg);
void mx_trace_remove_config(struct mx_trace *t, const struct mx_config *cfg);

/*
 * Record one message. |dir| is "c2s" (client to server) or "s2c"; |server|
 * and |session| may be NULL. |msg| is the message text; valid JSON is
 * embedded as is, anything else as a string.
 */
void mx_trace_msg(struct mx_trace *t, const char *dir, const char *server, const char *session,
                  struct mx_str msg);

void mx_trace_close(struct mx_trace *t);

#endif
