/* SPDX-License-Identifier: MIT */
/* stderr logger; text for terminals, JSON lines for collectors. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "err.h"
#include "log.h"

static enum mx_log_level cur_level = MX_LOG_INFO;
static enum mx_log_format cur_format = MX_LOG_TEXT;
static enum mx_log_level access_level = MX_LOG_DEBUG;
static mx_log_redact_cb redact_cb;
static void *redact_data;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void mx_log_set_level(enum mx_log_level level)
{
    cur_level = level;
}

void mx_log_set_format(enum mx_log_format format)
{
    cur_format = format;
}

enum mx_log_format mx_log_get_format(void)
{
    return cur_format;
}

bool mx_log_enabled(enum mx_log_level level)
{
    return level <= cur_level;
}

int mx_log_level_parse(const char *s, enum mx_log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum mx_log_level)i;
            return 0;
        }
    }
    return MX_EINVAL;
}

int mx_log_format_parse(const char *s, enum mx_log_format *out)
{
    if (strcmp(s, "text") == 0)
        *out = MX_LOG_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = MX_LOG_JSON;
    else
        return MX_EINVAL;
    return 0;
}

void mx_log_set_redact(mx_log_redact_cb cb, void *data)
{
    redact_cb = cb;
    redact_data = data;
}

void mx_log_set_access(bool on)
{
    access_level = on ? MX_LOG_INFO : MX_LOG_DEBUG;
}

bool mx_log_access_enabled(void)
{
    return mx_log_enabled(access_level);
}

/* Length of the valid UTF-8 sequence at |s| (RFC 3629 §4: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* A JSON string body (RFC 8259 §7); bytes that are not UTF-8 (a message cut
 * at the buffer's end, bytes from a peer) become U+FFFD so every line parses. */
static void json_escape_to(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char c = *p;
        size_t n = utf8_len(p);
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
        } else if (n == 0) {
            fputs("\\ufffd", f);
            n = 1;
        } else {
            fwrite(p, 1, n, f);
        }
        p += n;
    }
}

/*
 * A text line's message: control characters (C0, DEL and, in UTF-8, C1)
 * as \n, \r, \t or \xNN, so that a tool name or an upstream's message
 * cannot end the line and forge the next one, nor drive a terminal.
 */
static void text_escape_to(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (; *p; p++) {
        unsigned char c = *p;
        if (c == '\n')
            fputs("\\n", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else if (c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            fprintf(f, "\\u%04x", *++p);
        else
            fputc(c, f);
    }
}

static void text_line(const char *ts, enum mx_log_level level, const char *subsys, const char *msg)
{
    fprintf(stderr, "%s %-5s %-8s ", ts, level_names[level], subsys);
    text_escape_to(stderr, msg);
    fputc('\n', stderr);
}

static void redact(char *msg)
{
    if (redact_cb)
        redact_cb(msg, strlen(msg), redact_data);
}

static void vlog(enum mx_log_level level, const char *subsys, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void timestamp(char *ts, size_t cap)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(ts, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, cap - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

/* The opening of a JSON line, up to and including the msg member; the
 * caller adds members and closes it. Under flockfile(stderr). */
static void json_head(const char *ts, enum mx_log_level level, const char *subsys, const char *msg)
{
    fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"sub\":\"", ts, level_names[level]);
    json_escape_to(stderr, subsys);
    fputs("\",\"msg\":\"", stderr);
    json_escape_to(stderr, msg);
    fputc('"', stderr);
}

static void vlog(enum mx_log_level level, const char *subsys, const char *fmt, va_list ap)
{
    char msg[2048];
    char ts[64];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    redact(msg);
    timestamp(ts, sizeof(ts));
    flockfile(stderr);
    if (cur_format == MX_LOG_JSON) {
        json_head(ts, level, subsys, msg);
        fputs("}\n", stderr);
    } else {
        text_line(ts, level, subsys, msg);
    }
    funlockfile(stderr);
}

static void json_str_member(const char *key, const char *v)
{
    if (v == NULL)
        return;
    fprintf(stderr, ",\"%s\":\"", key);
    json_escape_to(stderr, v);
    fputc('"', stderr);
}

void mx_log_access(const struct mx_log_access *a)
{
    char msg[512];
    char up[48] = "";
    char ts[64];

    if (!mx_log_enabled(access_level))
        return;
    /* JSON has no NaN: anything but a real duration is logged as 0. */
    double total_ms = a->total_ms >= 0.0 && a->total_ms < 1e12 ? a->total_ms : 0.0;
    if (a->upstream_ms >= 0.0 && a->upstream_ms < 1e12)
        snprintf(up, sizeof(up), " (upstream %.3f ms)", a->upstream_ms);
    snprintf(msg, sizeof(msg), "%s %s %s %d %s %.3f ms%s req#%lu", a->method ? a->method : "-",
             a->path ? a->path : "-", a->rpc_method ? a->rpc_method : "-", a->status,
             a->outcome ? a->outcome : "-", total_ms, up, a->req_id);
    redact(msg);
    timestamp(ts, sizeof(ts));
    flockfile(stderr);
    if (cur_format == MX_LOG_JSON) {
        /* The message for people, the members for queries. */
        json_head(ts, access_level, "access", msg);
        json_str_member("method", a->method);
        json_str_member("path", a->path);
        json_str_member("rpc_method", a->rpc_method);
        json_str_member("server", a->server);
        fprintf(stderr, ",\"status\":%d", a->status);
        json_str_member("outcome", a->outcome);
        fprintf(stderr, ",\"latency_ms\":%.3f", total_ms);
        if (a->upstream_ms >= 0.0 && a->upstream_ms < 1e12)
            fprintf(stderr, ",\"upstream_ms\":%.3f", a->upstream_ms);
        fprintf(stderr, ",\"req\":%lu}\n", a->req_id);
    } else {
        text_line(ts, access_level, "access", msg);
    }
    funlockfile(stderr);
}

void mx_log(enum mx_log_level level, const char *subsys, const char *fmt, ...)
{
    if (!mx_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, subsys, fmt, ap);
    va_end(ap);
}

void mx_fatal(const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(MX_LOG_ERR, subsys, fmt, ap);
    va_end(ap);
    abort();
}
