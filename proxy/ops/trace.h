/* SPDX-License-Identifier: MIT */
/*
 * The JSONL trace: one line per JSON-RPC message that crosses mcplex
 * ({"ts","dir","server","session","msg"}). Every line passes through the
 * gateway's redaction (the one the log uses: every configured secret of
 * every config generation in use, and every refreshed credential), so a
 * token an upstream echoes back never lands in the file.
 */
#ifndef MX_TRACE_H
#define MX_TRACE_H

#include "diag.h"
#include "log.h"
#include "str.h"

struct mx_trace;

/* Open |path| for appending (created 0600). |redact| blanks every secret
 * in a text, with |data|, which must outlive the trace. Returns NULL with
 * |diag| set. */
struct mx_trace *mx_trace_open(const char *path, mx_log_redact_cb redact, void *data,
                               struct mx_diag *diag);

/*
 * Record one message. |dir| is "c2s" (client to server) or "s2c"; |server|
 * and |session| may be NULL. |msg| is the message text; valid JSON is
 * embedded as is, anything else as a string.
 */
void mx_trace_msg(struct mx_trace *t, const char *dir, const char *server, const char *session,
                  struct mx_str msg);

void mx_trace_close(struct mx_trace *t);

#endif
