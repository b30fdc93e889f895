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

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void mx_log_set_level(enum mx_log_level level)
{
    cur_level = level;
}

void mx_log_set_format(enum mx_log_format format)
{
    cur_format = format;
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

static void json_escape_to(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

static void vlog(enum mx_log_level level, const char *subsys, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void vlog(enum mx_log_level level, const char *subsys, const char *fmt, va_list ap)
{
    char msg[2048];
    char ts[64];
    struct timeval tv;
    struct tm tm;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", (long)(tv.tv_usec / 1000));

    flockfile(stderr);
    if (cur_format == MX_LOG_JSON) {
        fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"sub\":\"", ts, level_names[level]);
        json_escape_to(stderr, subsys);
        fputs("\",\"msg\":\"", stderr);
        json_escape_to(stderr, msg);
        fputs("\"}\n", stderr);
    } else {
        fprintf(stderr, "%s %-5s %-8s %s\n", ts, level_names[level], subsys, msg);
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
