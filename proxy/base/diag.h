/* SPDX-License-Identifier: MIT */
/*
 * User-facing diagnostics for config and command-line errors: a message with
 * the file, line and column it is about. Rendered as "file:line:col: msg".
 */
#ifndef MX_DIAG_H
#define MX_DIAG_H

struct mx_diag {
    char file[256]; /* empty when the error is not about a file */
    int line;       /* 1-based; 0 when unknown */
    int col;        /* 1-based; 0 when unknown */
    char msg[512];
};

void mx_diag_set(struct mx_diag *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* "file:line:col: msg", "file: msg" or "msg" into |out|. */
const char *mx_diag_format(const struct mx_diag *d, char *out, unsigned long cap);

#endif
