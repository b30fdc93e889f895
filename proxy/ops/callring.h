/* SPDX-License-Identifier: MIT */
/*
 * The last calls, for the status page: a fixed ring of MX_CALLRING_CNT
 * records (time, client session, method, server, tool or prompt name, the
 * duration split into wait, wake and upstream, outcome), never arguments
 * nor results. Keeping one costs a few bounded copies and no allocation,
 * so it is kept whether or not anyone watches; it is turned into JSON only
 * when the page or its feed asks.
 */
#ifndef MX_CALLRING_H
#define MX_CALLRING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define MX_CALLRING_CNT 100

struct mx_callrec {
    uint64_t seq;      /* 1, 2, ... in the order calls ended */
    double at;         /* wall clock (seconds since the epoch) it ended */
    uint32_t session;  /* a hash of the client session's id (0: none); the id is never kept */
    bool modern;       /* a 2026-07-28 (stateless) request */
    int status;        /* HTTP status the client got; 0: none */
    double wait_s;     /* in mcplex before and after the upstream side; < 0: unknown */
    double wake_s;     /* of the upstream time, spent while the upstream woke */
    double upstream_s; /* the rest of the upstream time; < 0: none */
    double total_s;    /* the request complete until its end */
    char method[40];
    char server[40];
    char target[64]; /* the tool or prompt name; "" none */
    char outcome[24];
};

struct mx_callring {
    struct mx_callrec rec[MX_CALLRING_CNT];
    size_t next; /* where the next record goes */
    size_t cnt;  /* records held, up to MX_CALLRING_CNT */
    uint64_t seq;
};

/* Copy the NUL-terminated |src| (NULL: "") into |dst| of |cap| bytes, cut
 * to fit at a UTF-8 character boundary. */
void mx_callring_copy(char *dst, size_t cap, const char *src);
/* A 32-bit label of |id| (FNV-1a; never 0), or 0 for NULL. */
uint32_t mx_callring_session_hash(const char *id);
/* Keep |r| (copied), numbering it; the oldest record goes when full. */
void mx_callring_push(struct mx_callring *ring, const struct mx_callrec *r);
/* The record as the page's JSON: {"seq","at" (ISO 8601 with ms),
 * "session" ("s-1a2b3c4d" or null), "era", "method", "server", "target",
 * "wait_ms", "wake_ms", "upstream_ms", "total_ms", "status", "outcome"}. */
json_t *mx_callrec_json(const struct mx_callrec *r);
/* |s| seconds as milliseconds to the microsecond, or null when < 0. */
json_t *mx_callring_ms(double s);
/* Every record, oldest first, as a JSON array. */
json_t *mx_callring_json(const struct mx_callring *ring);

/*
 * Where a call's time went: |t_recv| the request was complete, the
 * upstream side ran from |t_up_start| to |t_up_done| (0 for what did not
 * happen), |now| the answer was sent; |wake_from|, |wake_to| the upstream's
 * last |wake_cnt| wakes (a wake still running has |wake_to| 0 and counts
 * to |now|). The wake time is the part of the upstream side a wake
 * overlapped; wait is what lies outside the upstream side; all of it is
 * wait for an answer mcplex gave by itself. Unknown parts are -1.
 */
struct mx_callsplit {
    double wait_s, wake_s, upstream_s;
};
void mx_callring_split(double t_recv, double t_up_start, double t_up_done, double now,
                       const double *wake_from, const double *wake_to, size_t wake_cnt,
                       struct mx_callsplit *out);
#endif
