/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim: a small MCP server (Streamable HTTP) that behaves like one
 * running in a cloud sandbox: a credential checked at the edge, a pause after
 * idle time that holds or refuses requests until woken, and faults switched on
 * by flags or at runtime. This header holds the state its files share; it is a
 * test fixture and demo, not part of the gateway.
 *
 * Files: main.c (CLI), server.c (HTTP routing and the MCP session flow),
 * mcp.c (methods, pure), rev.c (protocol revisions, pure), check.c (header
 * checks, pure), session.c (session table), fault.c (pause/wake state machine,
 * error injection), stream.c (the slow tool's SSE responses), control.c
 * (/__control, /__stats, /__wake and the settings table).
 */
#ifndef MX_SIM_H
#define MX_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "conf.h"
#include "httpd.h"
#include "mcp.h"
#include "req.h"

#define MX_SIM_MAX_SESSIONS 1024
#define MX_SIM_MAX_BODY     ((size_t)1024 * 1024)
#define MX_SIM_SESSION_ID   33 /* 128 bits as hex, and a NUL */

enum mx_sim_pause_mode {
    MX_SIM_PAUSE_HOLD = 0,   /* hold the next request, then serve it (Sandboxer) */
    MX_SIM_PAUSE_REFUSE = 1, /* answer refuse_status until woken (E2B, Cube) */
};

enum mx_sim_state {
    MX_SIM_AWAKE = 0,
    MX_SIM_PAUSED = 1,
    MX_SIM_WAKING = 2,
};

enum mx_sim_auth_mode {
    MX_SIM_AUTH_NONE = 0,
    MX_SIM_AUTH_BEARER = 1,
    MX_SIM_AUTH_COOKIE = 2,
};

/* What the fault layer says about a request to /mcp. */
enum mx_sim_gate {
    MX_SIM_GO = 0,
    MX_SIM_HOLD = 1,
    MX_SIM_REFUSE = 2,
};

/* Switches settable by flag and by POST /__control (table in control.c). */
struct mx_sim_settings {
    int64_t pause_after_ms; /* 0: never pause */
    int64_t pause_mode;     /* enum mx_sim_pause_mode */
    int64_t hold_ms;
    int64_t refuse_status;
    int64_t wake_ms;
    double error_rate;             /* 0..1: share of /mcp requests answered 503 */
    int64_t seed;                  /* of the error-rate PRNG */
    int64_t retry_after;           /* refuse mode: Retry-After seconds on the refusal; -1: none */
    int64_t gone;                  /* 1: the sandbox was deleted: every /mcp request gets 410 */
    int64_t unauthorized_delay_ms; /* a wrong credential's 401 comes this late */
};

struct mx_sim_stats {
    uint64_t requests;         /* HTTP requests to /mcp, whatever the outcome */
    uint64_t control_requests; /* to /__stats, /__control, /__wake */
    uint64_t status[600];      /* /mcp answers by HTTP status */
    uint64_t methods[MX_SIM_M_CNT];
    uint64_t tools[MX_SIM_T_CNT];
    uint64_t wakes;         /* paused -> waking transitions */
    uint64_t wake_requests; /* POST /__wake and control "wake", woken or not */
    uint64_t held;
    uint64_t refused;
    uint64_t injected; /* 503s from error_rate */
    uint64_t gone;     /* 410s while gone */
    uint64_t dropped;  /* connections dropped by a drop switch */
    uint64_t cancelled;
    uint64_t unauthorized;
    uint64_t sessions_created;
    uint64_t sessions_expired; /* by expire_sessions or eviction */
    uint64_t sessions_deleted; /* by DELETE /mcp */
    uint64_t get_opened;       /* standalone GET streams opened (--get-stream) */
    uint64_t tasks_get;        /* tasks/get requests served in a session */
    uint64_t tasks_result;     /* tasks/result requests served in a session */
};

struct mx_sim_session {
    struct mx_sim_session *prev;
    struct mx_sim_session *next;
    char id[MX_SIM_SESSION_ID];
    char revision[16];
    bool initialized;             /* notifications/initialized seen */
    struct mx_sim_conf_sess conf; /* conformance mode only */
};

struct mx_sim_held;    /* fault.c */
struct mx_sim_slow401; /* server.c */
struct mx_sim_call;    /* stream.c */
struct mx_sim_poll;    /* stream.c */
struct mx_sim_wait;    /* stream.c */

struct mx_sim {
    struct ev_loop *loop;
    struct mx_httpd *httpd;
    char *name;
    int64_t extra_tools;   /* --extra-tools */
    int64_t huge_pages;    /* --huge-pages */
    const char *claim_uri; /* --claim-uri (points into argv), or NULL */

    enum mx_sim_auth_mode auth_mode;
    char *cookie_name;
    unsigned char *secret; /* wiped on exit; never logged */
    size_t secret_len;

    struct mx_sim_settings set;
    struct mx_sim_stats stats;

    enum mx_sim_state state;
    ev_timer idle_timer; /* AWAKE -> PAUSED after pause_after_ms without requests */
    ev_timer wake_timer; /* WAKING -> AWAKE */
    struct mx_sim_held *held_head;
    struct mx_sim_held *held_tail;
    size_t held_cnt;
    struct mx_sim_slow401 *slow401; /* 401s waiting for unauthorized_delay_ms */
    const struct mx_req *releasing; /* the held request being served now, for its log line */
    size_t busy;                    /* streams in flight; the sim does not pause under them */
    size_t get_streams;             /* standalone GET streams open now (of busy) */
    bool get_stream;                /* --get-stream: GET /mcp opens one (else 405) */
    uint64_t rng;

    int64_t drop_after_events; /* next SSE response is dropped after this many; -1: off */
    int64_t list_ttl_ms;       /* ttlMs on list results; 0: none */
    bool drop_before_response; /* next /mcp request runs, then the connection drops */
    bool whoami_credential;    /* whoami echoes the credential header (leak tests) */
    int64_t forge_progress;    /* slow streams also send progress for tokens 0..N; -1: off */
    const char *bad_header;    /* --bad-header: this header's value gets a bare CR */

    struct mx_sim_session *sessions; /* most recently used first */
    size_t session_cnt;
    struct mx_sim_call *calls;
    struct mx_sim_poll *polls; /* test_reconnection answers awaiting a resume (stream.c) */
    struct mx_sim_wait *waits; /* tasks/result requests held until their task ends */
    uint64_t polls_made;
    uint64_t asks; /* requests sent to clients, for their ids */

    /* --conformance: the conformance catalogue (conf.c), and Host and Origin
     * must name the loopback (MCP 2025-11-25, Streamable HTTP, Security). */
    bool conformance;
    bool modern_only; /* --modern-only: no 2025 session, no initialize */
    unsigned char state_key[MX_SIM_STATE_KEY_LEN]; /* signs requestState (2026-07-28) */
    /* task table (tasks.c): the 2026-07-28 tasks extension in --conformance,
     * the 2025-11-25 tasks of the slow tool otherwise */
    struct mx_sim_tasks *tasks;
};

/* ---- server.c ---- */

/* Listen on |address|; returns 0 and |*port|, or MX_EINVAL / MX_EIO with |err|. */
int mx_sim_start(struct mx_sim *sim, const char *address, int *port, char *err, size_t errcap);
/* Close connections and free everything the sim holds; accepts a sim never started. */
void mx_sim_stop(struct mx_sim *sim);
/* Serve a /mcp request that passed the pause gate (also called for held requests). */
void mx_sim_serve_mcp(struct mx_sim *sim, struct mx_req *req);
/* One log line for |req| (never a header value), and the /mcp status count. */
void mx_sim_log_req(struct mx_sim *sim, const struct mx_req *req, int status, const char *what);
/* Log, then answer |req| with |body| as JSON (stolen; NULL: empty body). */
void mx_sim_respond(struct mx_sim *sim, struct mx_req *req, int status,
                    const struct mx_hdr_out *hdrs, size_t cnt, json_t *body, const char *what);

/* ---- session.c ---- */

/* A new session at |revision|; evicts the least recently used one when full. */
struct mx_sim_session *mx_sim_session_new(struct mx_sim *sim, const char *revision);
/* The session with id |id|, or NULL; marks it used. */
struct mx_sim_session *mx_sim_session_find(struct mx_sim *sim, struct mx_str id);
void mx_sim_session_delete(struct mx_sim *sim, struct mx_sim_session *s);
/* Drop every session; returns how many there were. */
size_t mx_sim_session_expire_all(struct mx_sim *sim);

/* ---- fault.c ---- */

void mx_sim_fault_init(struct mx_sim *sim);
/* Stop timers and reset requests still held (none left once mx_httpd_free
 * has closed the connections, which aborts them). */
void mx_sim_fault_clear(struct mx_sim *sim);
/* Decide what happens to a /mcp request now; counts activity and may start a wake. */
enum mx_sim_gate mx_sim_fault_gate(struct mx_sim *sim);
/* Keep |req| until the wake in progress completes, then serve it. */
void mx_sim_fault_hold(struct mx_sim *sim, struct mx_req *req);
/* Start a wake of |ms| if paused; returns true if this call started it. */
bool mx_sim_fault_wake(struct mx_sim *sim, int64_t ms);
/* Pause now if awake. */
void mx_sim_fault_pause(struct mx_sim *sim);
/* A stream started (+1) or ended (-1); the idle countdown waits for none. */
void mx_sim_fault_busy(struct mx_sim *sim, int delta);
/* Apply changed settings: idle timer and PRNG seed. */
void mx_sim_fault_reconfigure(struct mx_sim *sim, bool reseed);
/* Draw from the seeded PRNG: true if this request gets an injected 503. */
bool mx_sim_fault_inject(struct mx_sim *sim);
const char *mx_sim_state_name(enum mx_sim_state s);
/* splitmix64: small, seedable, repeatable across platforms. */
uint64_t mx_sim_rng_next(uint64_t *state);

/* ---- stream.c ---- */

/*
 * Answer the deferred slow call in |reply| on |req| as an SSE stream: a
 * progress event per step when a token was given, then the result, then the
 * end. Takes over |req|. |id| is borrowed; |session| names the session.
 */
void mx_sim_stream_start(struct mx_sim *sim, struct mx_req *req, json_t *id, const char *session,
                         const struct mx_sim_reply *reply);
/*
 * Play the scripted conformance tool in |reply| (conf.h) on |req| as an SSE
 * stream; takes over |req| and |reply|'s events and result.
 */
void mx_sim_stream_script(struct mx_sim *sim, struct mx_req *req, json_t *id, const char *session,
                          struct mx_sim_reply *reply);
/* Polled answers kept per sim (the newest), and the retry field of their
 * priming event. */
#define MX_SIM_POLLS_KEPT    16
#define MX_SIM_POLL_RETRY_MS 500
/*
 * test_reconnection in a 2025 session (MX_SIM_SCRIPT_POLL): answer |req|
 * with SSE that holds only a priming event (an event id, the retry field,
 * empty data), end it, and keep |reply|'s result (taken over) for the GET
 * that resumes the stream.
 */
void mx_sim_stream_poll(struct mx_sim *sim, struct mx_req *req, json_t *id, const char *session,
                        struct mx_sim_reply *reply);
/* A GET of |session| with Last-Event-ID |last_event_id|: when that id names
 * a polled answer, |req| gets it as SSE and ends. Returns false (|req|
 * untouched) when it names none. */
bool mx_sim_stream_resume(struct mx_sim *sim, struct mx_req *req, const char *session,
                          struct mx_str last_event_id);
/* A client's |response| (borrowed) to a request a scripted call sent in
 * |session|: the call answers and ends. Returns true if one was waiting. */
bool mx_sim_stream_answer(struct mx_sim *sim, const char *session, json_t *response);
/*
 * subscriptions/listen (2026-07-28): an SSE stream that starts with the
 * acknowledgement of |mask| (enum mx_sim_changed bits) and then carries the
 * list_changed notifications it opted in to, tagged with |id|. |task_ids|
 * (borrowed; NULL: no taskIds filter) are the known tasks it follows
 * (mx_sim_tasks_known): the acknowledgement lists them, and each later
 * status change of one is sent once as notifications/tasks (SEP-2663).
 * Following adds nothing to the pause rule: the stream counts as any listen
 * stream does.
 */
void mx_sim_stream_listen(struct mx_sim *sim, struct mx_req *req, json_t *id, unsigned mask,
                          json_t *task_ids);
/* A 2025 session's standalone GET stream (--get-stream): SSE that stays
 * open and carries the tools and prompts list_changed notifications. */
void mx_sim_stream_get(struct mx_sim *sim, struct mx_req *req, const char *session);
/* Tell every listen and GET stream that opted in to |mask| that those lists
 * changed. */
void mx_sim_stream_list_changed(struct mx_sim *sim, unsigned mask);
/* notifications/cancelled: end the stream of |request_id| in |session| without
 * a result (MCP 2025-06-18, Cancellation). Returns true if one was found. */
bool mx_sim_stream_cancel(struct mx_sim *sim, const char *session, json_t *request_id);
/*
 * tasks/result of a task still working, as |reply| says (task_wait): hold
 * |req| until the task is due, then answer it as JSON. |id| is borrowed. The
 * sim does not pause while a request is held; a client that leaves is
 * forgotten.
 */
void mx_sim_stream_task_wait(struct mx_sim *sim, struct mx_req *req, json_t *id,
                             const struct mx_sim_reply *reply);
/* Task |task_id| changed (cancelled, or its input answered): its held
 * tasks/result requests are answered, and the listen streams that follow it
 * told, on the next loop iteration. */
void mx_sim_stream_task_changed(struct mx_sim *sim, const char *task_id);
/* Stop and free every stream (at exit). */
void mx_sim_stream_clear(struct mx_sim *sim);

/* ---- modern.c (2026-07-28, conformance mode) ---- */

/* Whether |msg| on |req| takes the stateless path: its _meta names a
 * version, or (without a session) its MCP-Protocol-Version is no 2025 one. */
bool mx_sim_modern_is(const struct mx_req *req, json_t *msg);
/* Validate and answer a stateless request (|msg| borrowed). */
void mx_sim_modern_post(struct mx_sim *sim, struct mx_req *req, json_t *msg);

/* ---- control.c ---- */

void mx_sim_settings_default(struct mx_sim_settings *set);
/* Set setting |name| ("pause_after_ms") from the text |value|. Returns 0,
 * MX_ENOTFOUND (no such setting) or MX_EINVAL (bad value), with |err|. */
int mx_sim_setting_parse(struct mx_sim_settings *set, const char *name, const char *value,
                         char *err, size_t errcap);
/* The settings in effect and the armed drops, as a new JSON object. */
json_t *mx_sim_settings_json(const struct mx_sim *sim);
/* Route /__stats, /__control, /__wake; anything else under /__ is a 404. */
void mx_sim_control_route(struct mx_sim *sim, struct mx_req *req);

#endif
