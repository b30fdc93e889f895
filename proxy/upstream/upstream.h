/* SPDX-License-Identifier: MIT */
/*
 * One configured upstream server at run time: its health state machine
 * (unknown → up / waking / down / auth-failed / gone), the time of the last
 * change and counters, and the one classification of its last error
 * (unreachable, tls, auth-failed, gone) that /health and `mcplex status`
 * show. Transitions happen in one function and are logged. It also
 * owns the upstream observer: how the upstream layer tells the layers above
 * (ops: metrics and the trace) what happened, without including them.
 */
#ifndef MX_UPSTREAM_H
#define MX_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <ev.h>

#include "model.h"
#include "str.h"

struct mx_metrics;
struct mx_cfg_gen;
struct mx_upstream;
struct mx_upool;
struct mx_upcall;
struct mx_refresh;

enum mx_upstream_state {
    MX_UPSTREAM_UNKNOWN = 0, /* not contacted since start: a paused sandbox stays paused */
    MX_UPSTREAM_UP = 1,
    MX_UPSTREAM_WAKING = 2,
    MX_UPSTREAM_DOWN = 3,
    MX_UPSTREAM_AUTH_FAILED = 4,
    MX_UPSTREAM_GONE = 5, /* answered 410: the sandbox was deleted; left only for up */
};

/* Why the upstream cannot serve anyone, as /health shows it; NONE once it
 * answers again. */
enum mx_upstream_fault {
    MX_UPSTREAM_FAULT_NONE = 0,
    MX_UPSTREAM_FAULT_UNREACHABLE = 1, /* no connection: refused, no route, no such host */
    MX_UPSTREAM_FAULT_TLS = 2,         /* the handshake failed or the certificate did not verify */
    MX_UPSTREAM_FAULT_AUTH = 3,        /* 401 or 403: the credential was refused */
    MX_UPSTREAM_FAULT_GONE = 4,        /* 410: the sandbox is gone */
};

/*
 * What the upstream layer reports, installed with the upstream by the code
 * that makes it (ops/reload.c: metrics and the trace). Every callback is
 * optional, and an upstream without an observer reports nothing (tests).
 * |data| is the observer's own. Callbacks only count or record: they never
 * call back into the upstream layer.
 */
struct mx_upstream_obs {
    /* An attempt failed before it reached the sandbox and will be sent again. */
    void (*retry)(struct mx_upstream *u, void *data);
    /* Body bytes sent to / received from the upstream (every attempt). */
    void (*bytes)(struct mx_upstream *u, uint64_t sent, uint64_t received, void *data);
    /* A wake began (the upstream entered the waking state). */
    void (*wake_start)(struct mx_upstream *u, void *data);
    /* A wake ended after |duration_s|: |woke| the sandbox answered, or it
     * went down instead. */
    void (*wake_end)(struct mx_upstream *u, double duration_s, bool woke, void *data);
    /* One JSON-RPC message crossed to or from this upstream: |dir| "c2s" or
     * "s2c", |session| the label of the upstream session (may be NULL),
     * |msg| its text (borrowed for the call). */
    void (*traced)(struct mx_upstream *u, const char *dir, const char *session, struct mx_str msg,
                   void *data);
};

/* What a finished upstream exchange tells about the server. */
enum mx_upstream_event {
    MX_UPSTREAM_EV_OK = 0,       /* answered with a non-error status */
    MX_UPSTREAM_EV_AUTH_REFUSED, /* 401 or 403 */
    MX_UPSTREAM_EV_UNREACHABLE,  /* refused, reset, closed before answering */
    MX_UPSTREAM_EV_NOT_AWAKE,    /* a retry_on status */
    MX_UPSTREAM_EV_TIMEOUT,
    MX_UPSTREAM_EV_GONE, /* 410 */
};

struct mx_upstream {
    const struct mx_server_cfg *cfg; /* borrowed from the config generation it came with */
    size_t idx;                      /* slot in the gateway; stable for its life */
    /* Reload (reload.c): a removed or changed upstream is retired: hidden
     * from new requests at once, freed once |refs| (requests holding it)
     * drops to zero. */
    bool retired;
    bool retire_noted; /* still busy long after: logged once */
    ev_tstamp retired_at;
    size_t refs;
    struct mx_cfg_gen *gen;
    char host[256]; /* URL host[:port] or the command name, for /health */
    enum mx_upstream_state state;
    time_t since; /* wall clock of the last change */
    uint64_t requests;
    uint64_t failures;

    /* wake-on-use and concurrency (upcall.c owns these) */
    struct mx_upcall *q_head; /* calls waiting for a wake or a free slot */
    struct mx_upcall *q_tail;
    struct mx_upcall *probe; /* the one call retrying while the upstream wakes */
    size_t q_bypass;         /* queued calls that take no slot (streams, slot held) */
    struct mx_wake_hook *hook;
    bool hook_started; /* in the current wake */
    size_t inflight;   /* calls holding a concurrency slot */
    uint64_t wakes;    /* wakes started */
    ev_tstamp waking_since;
    ev_tstamp last_activity; /* last answer from the upstream */
    /* since when no connection could be made (0: one was); why is |fault| */
    ev_tstamp unreachable_since;
    /* the last error, classified (mx_upstream_note*), its words without
     * the class ("connection refused at 127.0.0.1:9999", "401 from files":
     * no secret, no userinfo, path or query of the URL), and when */
    enum mx_upstream_fault fault;
    char fault_detail[200];
    time_t fault_at;
    /* Retry-After of a 503 or 429 (RFC 9110 §10.2.3): no request goes to
     * it before |retry_after_until| (0: none asked) */
    ev_tstamp retry_after_until;
    long retry_after_status;
    /* idle_close (upcall.c): the upstream's own connections, and the
     * streams it holds open for the upstream's messages, which are closed
     * once no call has used it for idle_close */
    struct mx_upool *pool;     /* NULL until the first call */
    struct mx_upcall *streams; /* calls with on_idle */
    size_t calls;              /* other calls, in any state */
    /* credential refresh (refresh.c; upcall.c makes calls wait for it):
     * the value the refresh command printed last, used in place of
     * cfg->secret once set (mx_upstream_secret), wiped when replaced and
     * when the upstream goes; it never enters the config, so a reload
     * does not see it */
    struct mx_secret *secret;
    struct mx_refresh *refresh; /* the one in flight, or NULL */
    uint64_t refreshes;         /* refreshes ended, whatever their outcome */
    bool refresh_ok;            /* the last one gave a new credential */
    char refresh_why[160];      /* else what went wrong, naming no value */

    const struct mx_upstream_obs *obs; /* borrowed; NULL: nothing reported */
    void *obs_data;
    /* The ops layer's (metrics.h), kept here for its own use (/health, the
     * calls front counts); the upstream layer never reads them. */
    struct mx_metrics *metrics;
    size_t metrics_slot;
};

/* What a slot whose upstream left points at: it has no url, no command and
 * no secret, so nothing can reach a server through it. */
extern const struct mx_server_cfg mx_upstream_gone_cfg;

void mx_upstream_init(struct mx_upstream *u, const struct mx_server_cfg *cfg);
/* Cancel what is still waiting (at shutdown); accepts an idle upstream. */
void mx_upstream_clear(struct mx_upstream *u);
/* A request starts or stops using |u| (forwarded requests, calls). */
static inline void mx_upstream_hold(struct mx_upstream *u)
{
    u->refs++;
}
static inline void mx_upstream_release(struct mx_upstream *u)
{
    u->refs--;
}
const char *mx_upstream_state_name(enum mx_upstream_state s);
/* Apply |ev| to the state machine (and counters). */
void mx_upstream_note(struct mx_upstream *u, enum mx_upstream_event ev);
/* Classify an HTTP status from the upstream. */
enum mx_upstream_event mx_upstream_classify_status(const struct mx_upstream *u, long status);
/* The upstream answered HTTP |status|: classified, noted, and the fault it
 * shows (401, 403, 410) set or, for an answer, cleared. */
void mx_upstream_note_status(struct mx_upstream *u, long status);
/* No connection could be made at |now| for |cause| (uclient's words, see
 * mx_ureq_info), |tls| when the TLS handshake or the certificate failed.
 * Sets the fault, not the state (the caller notes the event when it gives
 * up); a gone upstream stays gone. */
void mx_upstream_note_no_connection(struct mx_upstream *u, ev_tstamp now, bool tls,
                                    const char *cause);
/* A connection was made: a fault about connecting is over. */
void mx_upstream_note_connected(struct mx_upstream *u);
/* Whether the sandbox behind |u| may be asleep at |now|: mcplex has not
 * heard from it since it started, or not for idle_close (it let go of its
 * connections then, so a sandbox that pauses when idle may have). */
bool mx_upstream_may_sleep(const struct mx_upstream *u, ev_tstamp now);
/* "unreachable", "tls", "auth-failed", "gone" ("" for none). */
const char *mx_upstream_fault_name(enum mx_upstream_fault f);
/* The last error as shown: "unreachable: connection refused at
 * 127.0.0.1:9999" into |out|; "" when there is none. */
void mx_upstream_fault_text(const struct mx_upstream *u, char *out, size_t cap);
/*
 * A Retry-After value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date,
 * as seconds from |now| (a date in the past is 0). Returns 0 with *|secs|,
 * or MX_EINVAL when it is neither.
 */
int mx_upstream_retry_after_parse(struct mx_str value, time_t now, int64_t *secs);

/* The credential requests to |u| carry: the refreshed one, else its
 * config's (NULL: none). */
const struct mx_secret *mx_upstream_secret(const struct mx_upstream *u);
/* Blank |u|'s refreshed credential in |p|,|len| (mx_secret_redact): the
 * log and the trace redact it as they do config secrets. */
void mx_upstream_redact(const struct mx_upstream *u, char *p, size_t len);

/* Tell |u|'s observer (struct mx_upstream_obs; nothing without one). */
void mx_upstream_report_retry(struct mx_upstream *u);
void mx_upstream_report_bytes(struct mx_upstream *u, uint64_t sent, uint64_t received);
void mx_upstream_report_msg(struct mx_upstream *u, const char *dir, const char *session,
                            struct mx_str msg);

#endif
