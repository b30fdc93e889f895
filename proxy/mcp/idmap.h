/* SPDX-License-Identifier: MIT */
/*
 * The id tables of the aggregate (MCP protocol checklist §8): a client
 * request forwarded upstream gets a fresh upstream id, and its progress token
 * (if any) a fresh token, so that equal ids or tokens from two clients never
 * meet upstream; a request from an upstream to a client (sampling,
 * elicitation, roots) gets a fresh id in the client's direction. Every entry
 * is found by its id on either side. Pure data structure: no I/O, no JSON
 * parsing beyond comparing ids; sessions and upstream sessions are named by
 * caller-chosen non-zero 64-bit keys, never by pointers.
 */
#ifndef MX_IDMAP_H
#define MX_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct mx_idmap;

/* A client request in flight upstream. */
struct mx_idmap_call {
    uint64_t up_id;       /* the id sent upstream; also its progress token there */
    uint64_t session;     /* key of the client session */
    json_t *client_id;    /* the client's id (owned by the map) */
    json_t *client_token; /* the client's progress token, or NULL */
    size_t upstream;      /* upstream index */
    uint64_t upsess;      /* key of the upstream session it went over */
    void *data;           /* the caller's object for this call */
};

/* A request from an upstream waiting for a client's answer. */
struct mx_idmap_s2c {
    uint64_t client_id; /* the id the client sees (an integer) */
    uint64_t session;   /* key of the client session it was sent to */
    uint64_t upsess;    /* key of the upstream session it came from */
    size_t upstream;
    json_t *up_id; /* the upstream's id (owned by the map) */
    uint64_t call; /* up_id of the call it belongs to; 0 if none */
};

/* Cap on entries of each kind; adds past it fail with MX_ELIMIT. */
#define MX_IDMAP_MAX 65536

struct mx_idmap *mx_idmap_new(void);
/* Frees every entry; accepts NULL. */
void mx_idmap_free(struct mx_idmap *m);

/*
 * Register a call from |session| with the client's |client_id| (a string or
 * integer) and |client_token| (a string, an integer or NULL); both are
 * copied. It goes to |upstream| over the upstream session |upsess| (a key
 * that stays the same while that session lives, across its
 * re-initializations). Returns 0 and |*out| (valid until removed),
 * MX_EEXIST when that session already has a call with that id in flight,
 * MX_EINVAL for a bad id or token, or MX_ELIMIT.
 */
int mx_idmap_call_add(struct mx_idmap *m, uint64_t session, const json_t *client_id,
                      const json_t *client_token, size_t upstream, uint64_t upsess, void *data,
                      const struct mx_idmap_call **out);
/* By the id sent upstream; NULL if unknown. */
const struct mx_idmap_call *mx_idmap_call_by_up(const struct mx_idmap *m, uint64_t up_id);
/* By an id as an upstream wrote it back (a JSON integer); NULL if not ours. */
const struct mx_idmap_call *mx_idmap_call_by_up_json(const struct mx_idmap *m, const json_t *id);
/*
 * The call a progress token names, as upstream |upstream| wrote it on its
 * session |upsess|. Upstream tokens are mcplex's small integers, easy to
 * guess, so a token is taken only from the upstream session its call went
 * over (MCP checklist §8: two upstreams never cross). Returns 0 and |*out|;
 * MX_ENOTFOUND when it names no call in flight that asked for progress;
 * MX_EPERM when it names a call that went to another upstream or upstream
 * session. |*out| is NULL unless 0 is returned.
 */
int mx_idmap_call_from(const struct mx_idmap *m, size_t upstream, uint64_t upsess,
                       const json_t *token, const struct mx_idmap_call **out);
/* By the client's own id within |session|; NULL if unknown. */
const struct mx_idmap_call *mx_idmap_call_by_client(const struct mx_idmap *m, uint64_t session,
                                                    const json_t *client_id);
/* Forget a call; no-op when unknown. */
void mx_idmap_call_remove(struct mx_idmap *m, uint64_t up_id);

/*
 * Register a request from upstream session |upsess| with the upstream's id
 * |up_id| (copied), to be sent to |session|; |call| names the call whose
 * stream carried it (0: none). Returns 0 and |*out| with a fresh client_id,
 * MX_EEXIST when |upsess| already has a request with that id waiting,
 * MX_EINVAL, or MX_ELIMIT.
 */
int mx_idmap_s2c_add(struct mx_idmap *m, uint64_t session, uint64_t upsess, size_t upstream,
                     const json_t *up_id, uint64_t call, const struct mx_idmap_s2c **out);
/* By the id a client answered with (it must be one we sent to |session|). */
const struct mx_idmap_s2c *mx_idmap_s2c_by_client(const struct mx_idmap *m, uint64_t session,
                                                  const json_t *id);
/* By the upstream's id within |upsess|. */
const struct mx_idmap_s2c *mx_idmap_s2c_by_up(const struct mx_idmap *m, uint64_t upsess,
                                              const json_t *up_id);
void mx_idmap_s2c_remove(struct mx_idmap *m, uint64_t client_id);

/*
 * Forget every entry of |session|. |fn| and |s2c_fn| (each may be NULL) see
 * each call and each waiting request before it goes, so the caller can tell
 * the upstream. Returns how many entries went. The callbacks must not change
 * the map.
 */
size_t mx_idmap_drop_session(struct mx_idmap *m, uint64_t session,
                             void (*fn)(const struct mx_idmap_call *c, void *arg),
                             void (*s2c_fn)(const struct mx_idmap_s2c *e, void *arg), void *arg);
/* Forget every request that came from upstream session |upsess|. */
size_t mx_idmap_drop_upsess(struct mx_idmap *m, uint64_t upsess);

size_t mx_idmap_call_cnt(const struct mx_idmap *m);
size_t mx_idmap_s2c_cnt(const struct mx_idmap *m);

#endif
