/* SPDX-License-Identifier: MIT */
/* Diagnostics with positions. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

void mx_diag_set(struct mx_diag *d, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    if (d == NULL)
        return;
    snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
    d->line = line;
    d->col = col;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    va_end(ap);
}

const char *mx_diag_format(const struct mx_diag *d, char *out, unsigned long cap)
{
    if (d->file[0] && d->line > 0)
        snprintf(out, cap, "%s:%d:%d: %s", d->file, d->line, d->col, d->msg);
    else if (d->file[0])
        snprintf(out, cap, "%s: %s", d->file, d->msg);
    else
        snprintf(out, cap, "%s", d->msg);
    return out;
}
