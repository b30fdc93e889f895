/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr, one line per event: time, level, subsystem, message;
 * as text for a terminal or as JSON lines (one object per line: ts, level,
 * sub, msg, plus named fields for access lines) for a collector. Nothing
 * here accepts a secret; callers pass names, never values, and a redaction
 * hook masks what text from outside may still carry. A text line escapes
 * control characters, so text from outside cannot start a line of its own.
 */
#ifndef MX_LOG_H
#define MX_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum mx_log_level {
    MX_LOG_ERR = 0,
    MX_LOG_WARN = 1,
    MX_LOG_INFO = 2,
    MX_LOG_DEBUG = 3,
};

enum mx_log_format {
    MX_LOG_TEXT = 0,
    MX_LOG_JSON = 1,
};

void mx_log_set_level(enum mx_log_level level);
void mx_log_set_format(enum mx_log_format format);
enum mx_log_format mx_log_get_format(void);
bool mx_log_enabled(enum mx_log_level level);
/* Parse "error", "warn", "info", "debug"; returns 0 or MX_EINVAL. */
int mx_log_level_parse(const char *s, enum mx_log_level *out);
/* Parse "text", "json"; returns 0 or MX_EINVAL. */
int mx_log_format_parse(const char *s, enum mx_log_format *out);

/*
 * One finished client request, for the access line. Strings are borrowed
 * and may be NULL (left out); none may hold a secret or a query string.
 */
struct mx_log_access {
    const char *method;     /* HTTP method */
    const char *path;       /* "/mcp/<server>", "/mcp" */
    const char *rpc_method; /* JSON-RPC method label (metrics.h) */
    const char *server;     /* upstream name */
    int status;             /* HTTP status sent to the client; 0: none was */
    const char *outcome;    /* outcome label (metrics.h) */
    double total_ms;        /* request complete to response ended */
    double upstream_ms;     /* < 0: not known */
    unsigned long req_id;
};

/*
 * The per-request access line goes out at info when |on| (serve
 * --access-log), else at debug, the default: STYLE.md keeps per-message
 * lines off the info level of the hot path unless the user asks.
 */
void mx_log_set_access(bool on);
/* Whether an access line would be written now (test before preparing one). */
bool mx_log_access_enabled(void);
void mx_log_access(const struct mx_log_access *a);

/*
 * A function that masks secrets in a formatted message in place (|len|
 * bytes, NUL after them); the log calls it on every message before it is
 * written, in both formats. NULL removes it. The log itself knows no
 * secrets: whoever holds them (the gateway) installs one.
 */
typedef void (*mx_log_redact_cb)(char *msg, size_t len, void *data);
void mx_log_set_redact(mx_log_redact_cb cb, void *data);

void mx_log(enum mx_log_level level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mx_fatal(const char *subsys, const char *fmt, ...) __attribute__((format(printf, 2, 3)))
__attribute__((noreturn));

#define mx_log_err(sub, ...)  mx_log(MX_LOG_ERR, (sub), __VA_ARGS__)
#define mx_log_warn(sub, ...) mx_log(MX_LOG_WARN, (sub), __VA_ARGS__)
#define mx_log_info(sub, ...) mx_log(MX_LOG_INFO, (sub), __VA_ARGS__)
/* Tested before the arguments are evaluated or formatted. */
#define mx_log_debug(sub, ...)                                                                     \
    do {                                                                                           \
        if (mx_log_enabled(MX_LOG_DEBUG))                                                          \
            mx_log(MX_LOG_DEBUG, (sub), __VA_ARGS__);                                              \
    } while (0)

/* Always on: invariants only, never input checks. */
#define MX_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            mx_fatal("assert", "%s:%d: %s", __FILE__, __LINE__, #cond);                            \
    } while (0)

#endif
