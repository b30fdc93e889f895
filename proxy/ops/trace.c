/* SPDX-License-Identifier: MIT */
/* JSONL trace writer with redaction. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc.h"
#include "log.h"
#include "trace.h"

struct mx_trace {
    int fd;
    mx_log_redact_cb redact;
    void *redact_data;
};

struct mx_trace *mx_trace_open(const char *path, mx_log_redact_cb redact, void *data,
                               struct mx_diag *diag)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        mx_diag_set(diag, path, 0, 0, "cannot open trace file: %s", strerror(errno));
        return NULL;
    }
    struct mx_trace *t = mx_xcalloc(1, sizeof(*t));
    t->fd = fd;
    t->redact = redact;
    t->redact_data = data;
    return t;
}

/* The one place trace text is cleaned: every secret mcplex holds. */
static void redact(const struct mx_trace *t, char *p, size_t len)
{
    t->redact(p, len, t->redact_data);
}

void mx_trace_msg(struct mx_trace *t, const char *dir, const char *server, const char *session,
                  struct mx_str msg)
{
    char ts[64];
    struct timeval tv;
    struct tm tm;
    json_error_t err;
    if (t == NULL)
        return;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof(ts) - n, ".%06ldZ", (long)tv.tv_usec);

    /* Redact the raw text too: JSON escaping could change how a secret
     * with unusual bytes looks in the final line. */
    char *raw = mx_xstrndup(msg.p, msg.len);
    redact(t, raw, msg.len);
    json_t *m = json_loadb(raw, msg.len, JSON_DECODE_ANY, &err);
    if (m == NULL)
        m = json_stringn_nocheck(raw, msg.len);
    free(raw);
    json_t *line = json_pack("{s:s, s:s, s:s?, s:s?, s:o}", "ts", ts, "dir", dir, "server", server,
                             "session", session, "msg", m);
    char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
    json_decref(line);
    if (text == NULL)
        return;
    size_t len = strlen(text);
    redact(t, text, len);
    text[len] = '\n';
    /* One write per line with O_APPEND keeps lines whole. */
    ssize_t w = write(t->fd, text, len + 1);
    if (w < 0)
        mx_log_warn("trace", "write failed: %s", strerror(errno));
    free(text);
}

void mx_trace_close(struct mx_trace *t)
{
    if (t == NULL)
        return;
    close(t->fd);
    free(t);
}
