/* SPDX-License-Identifier: MIT */
/*
 * `mcplex bench --html FILE`: one self-contained page (inline SVG and
 * style, no script, well-formed XHTML) with the latency distribution (CDF)
 * of each measured row direct vs through the gateway, what the gateway
 * added, and the wake timeline when --wake ran. Pure: rows in, text out.
 */
#ifndef MX_BENCHREPORT_H
#define MX_BENCHREPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct mx_benchreport_row {
    const char *server;
    const char *measure; /* "ping", "tools/call", "wake: ping", ... */
    size_t conc;
    bool wake;            /* a wake row: its samples are rounds, in order */
    const int64_t *us[2]; /* samples of the direct [0] and gateway [1] side, in arrival order */
    size_t cnt[2];
    size_t errors[2];
};

struct mx_benchreport {
    const char *version;
    const char *gateway;  /* the gateway's base URL */
    const char *endpoint; /* "/mcp" or "/mcp/<server>" */
    const char *call;     /* the --call tool, or NULL */
    const char *when;     /* a date for the heading */
    size_t n, conc;
    const struct mx_benchreport_row *rows;
    size_t cnt;
};

/* The page into |b|. Returns 0 or MX_ELIMIT (|b|'s cap). */
int mx_benchreport_html(struct mx_buf *b, const struct mx_benchreport *r);
#endif
