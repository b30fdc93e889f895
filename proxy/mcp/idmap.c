/* SPDX-License-Identifier: MIT */
/*
 * Id tables as chained hash tables, two indexes per entry kind. Upstream ids
 * and client-side ids come from counters that never repeat within a
 * process, so an id is never reused across upstream sessions or
 * connections (MCP checklist §2.5: "never reuse a client id or an upstream
 * id across connections"). Client ids are compared by their compact JSON
 * text, which tells 1 from "1".
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "idmap.h"
#include "log.h"

struct call_ent {
    struct mx_idmap_call pub;
    char *cid_text;
    struct call_ent *next_up;
    struct call_ent *next_cl;
};

struct s2c_ent {
    struct mx_idmap_s2c pub;
    char *upid_text;
    struct s2c_ent *next_cl;
    struct s2c_ent *next_up;
};

struct mx_idmap {
    struct call_ent **call_up; /* by up_id */
    struct call_ent **call_cl; /* by (session, client id) */
    size_t call_size;          /* buckets, a power of two */
    size_t call_cnt;
    struct s2c_ent **s2c_cl; /* by client_id */
    struct s2c_ent **s2c_up; /* by (upsess, upstream id) */
    size_t s2c_size;
    size_t s2c_cnt;
    uint64_t next_up_id;
    uint64_t next_client_id;
};

static uint64_t mix(uint64_t x)
{
    /* splitmix64's finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t hash_text(uint64_t key, const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ mix(key);
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return mix(h);
}

static bool id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* A key text per id, one per value and kind: an integer in decimal, a
 * string as '"' and its bytes, a string holding NUL as 'j' and its JSON. */
static char *id_text(const json_t *id)
{
    if (json_is_integer(id))
        return mx_xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(id));
    size_t len = json_string_length(id);
    const char *s = json_string_value(id);
    if (s && memchr(s, '\0', len) == NULL) {
        char *t = mx_xmalloc(len + 2);
        t[0] = '"';
        memcpy(t + 1, s, len + 1);
        return t;
    }
    char *j = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
    if (j == NULL)
        mx_fatal("idmap", "out of memory");
    char *t = mx_xasprintf("j%s", j);
    free(j);
    return t;
}

struct mx_idmap *mx_idmap_new(void)
{
    struct mx_idmap *m = mx_xcalloc(1, sizeof(*m));
    m->call_size = 64;
    m->call_up = mx_xcalloc(m->call_size, sizeof(*m->call_up));
    m->call_cl = mx_xcalloc(m->call_size, sizeof(*m->call_cl));
    m->s2c_size = 64;
    m->s2c_cl = mx_xcalloc(m->s2c_size, sizeof(*m->s2c_cl));
    m->s2c_up = mx_xcalloc(m->s2c_size, sizeof(*m->s2c_up));
    m->next_up_id = 1;
    m->next_client_id = 1;
    return m;
}

static void call_ent_free(struct call_ent *e)
{
    json_decref(e->pub.client_id);
    json_decref(e->pub.client_token);
    free(e->cid_text);
    free(e);
}

static void s2c_ent_free(struct s2c_ent *e)
{
    json_decref(e->pub.up_id);
    free(e->upid_text);
    free(e);
}

void mx_idmap_free(struct mx_idmap *m)
{
    if (m == NULL)
        return;
    for (size_t b = 0; b < m->call_size; b++) {
        struct call_ent *e = m->call_up[b];
        while (e) {
            struct call_ent *n = e->next_up;
            call_ent_free(e);
            e = n;
        }
    }
    for (size_t b = 0; b < m->s2c_size; b++) {
        struct s2c_ent *e = m->s2c_cl[b];
        while (e) {
            struct s2c_ent *n = e->next_cl;
            s2c_ent_free(e);
            e = n;
        }
    }
    free(m->call_up);
    free(m->call_cl);
    free(m->s2c_cl);
    free(m->s2c_up);
    free(m);
}

/* ---- calls ---- */

static size_t call_up_slot(const struct mx_idmap *m, uint64_t up_id)
{
    return (size_t)(mix(up_id) & (m->call_size - 1));
}

static size_t call_cl_slot(const struct mx_idmap *m, uint64_t session, const char *text)
{
    return (size_t)(hash_text(session, text) & (m->call_size - 1));
}

static void call_link(struct mx_idmap *m, struct call_ent *e)
{
    size_t a = call_up_slot(m, e->pub.up_id), b = call_cl_slot(m, e->pub.session, e->cid_text);
    e->next_up = m->call_up[a];
    m->call_up[a] = e;
    e->next_cl = m->call_cl[b];
    m->call_cl[b] = e;
}

static void call_grow(struct mx_idmap *m)
{
    struct call_ent *all = NULL;
    for (size_t b = 0; b < m->call_size; b++) {
        struct call_ent *e = m->call_up[b];
        while (e) {
            struct call_ent *n = e->next_up;
            e->next_up = all;
            all = e;
            e = n;
        }
    }
    free(m->call_up);
    free(m->call_cl);
    m->call_size *= 2;
    m->call_up = mx_xcalloc(m->call_size, sizeof(*m->call_up));
    m->call_cl = mx_xcalloc(m->call_size, sizeof(*m->call_cl));
    while (all) {
        struct call_ent *n = all->next_up;
        call_link(m, all);
        all = n;
    }
}

static struct call_ent *find_call_cl(const struct mx_idmap *m, uint64_t session, const char *text)
{
    for (struct call_ent *e = m->call_cl[call_cl_slot(m, session, text)]; e; e = e->next_cl) {
        if (e->pub.session == session && strcmp(e->cid_text, text) == 0)
            return e;
    }
    return NULL;
}

int mx_idmap_call_add(struct mx_idmap *m, uint64_t session, const json_t *client_id,
                      const json_t *client_token, size_t upstream, uint64_t upsess, void *data,
                      const struct mx_idmap_call **out)
{
    *out = NULL;
    if (session == 0 || upsess == 0 || !id_ok(client_id) || (client_token && !id_ok(client_token)))
        return MX_EINVAL;
    if (m->call_cnt >= MX_IDMAP_MAX)
        return MX_ELIMIT;
    char *text = id_text(client_id);
    if (find_call_cl(m, session, text)) {
        free(text);
        return MX_EEXIST;
    }
    if (m->call_cnt + 1 > m->call_size)
        call_grow(m);
    struct call_ent *e = mx_xcalloc(1, sizeof(*e));
    e->pub.up_id = m->next_up_id++;
    e->pub.session = session;
    e->pub.client_id = json_deep_copy(client_id);
    e->pub.client_token = client_token ? json_deep_copy(client_token) : NULL;
    e->pub.upstream = upstream;
    e->pub.upsess = upsess;
    e->pub.data = data;
    e->cid_text = text;
    call_link(m, e);
    m->call_cnt++;
    *out = &e->pub;
    return 0;
}

const struct mx_idmap_call *mx_idmap_call_by_up(const struct mx_idmap *m, uint64_t up_id)
{
    for (struct call_ent *e = m->call_up[call_up_slot(m, up_id)]; e; e = e->next_up) {
        if (e->pub.up_id == up_id)
            return &e->pub;
    }
    return NULL;
}

const struct mx_idmap_call *mx_idmap_call_by_up_json(const struct mx_idmap *m, const json_t *id)
{
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        return NULL;
    return mx_idmap_call_by_up(m, (uint64_t)json_integer_value(id));
}

int mx_idmap_call_from(const struct mx_idmap *m, size_t upstream, uint64_t upsess,
                       const json_t *token, const struct mx_idmap_call **out)
{
    const struct mx_idmap_call *c = mx_idmap_call_by_up_json(m, token);
    *out = NULL;
    if (c == NULL || c->client_token == NULL)
        return MX_ENOTFOUND;
    if (c->upstream != upstream || c->upsess != upsess)
        return MX_EPERM;
    *out = c;
    return 0;
}

const struct mx_idmap_call *mx_idmap_call_by_client(const struct mx_idmap *m, uint64_t session,
                                                    const json_t *client_id)
{
    if (!id_ok(client_id))
        return NULL;
    char *text = id_text(client_id);
    struct call_ent *e = find_call_cl(m, session, text);
    free(text);
    return e ? &e->pub : NULL;
}

static void call_unlink(struct mx_idmap *m, struct call_ent *e)
{
    struct call_ent **pp = &m->call_up[call_up_slot(m, e->pub.up_id)];
    while (*pp != e)
        pp = &(*pp)->next_up;
    *pp = e->next_up;
    pp = &m->call_cl[call_cl_slot(m, e->pub.session, e->cid_text)];
    while (*pp != e)
        pp = &(*pp)->next_cl;
    *pp = e->next_cl;
    m->call_cnt--;
}

void mx_idmap_call_remove(struct mx_idmap *m, uint64_t up_id)
{
    for (struct call_ent *e = m->call_up[call_up_slot(m, up_id)]; e; e = e->next_up) {
        if (e->pub.up_id == up_id) {
            call_unlink(m, e);
            call_ent_free(e);
            return;
        }
    }
}

/* ---- server to client ---- */

static size_t s2c_cl_slot(const struct mx_idmap *m, uint64_t client_id)
{
    return (size_t)(mix(client_id) & (m->s2c_size - 1));
}

static size_t s2c_up_slot(const struct mx_idmap *m, uint64_t upsess, const char *text)
{
    return (size_t)(hash_text(upsess, text) & (m->s2c_size - 1));
}

static void s2c_link(struct mx_idmap *m, struct s2c_ent *e)
{
    size_t a = s2c_cl_slot(m, e->pub.client_id), b = s2c_up_slot(m, e->pub.upsess, e->upid_text);
    e->next_cl = m->s2c_cl[a];
    m->s2c_cl[a] = e;
    e->next_up = m->s2c_up[b];
    m->s2c_up[b] = e;
}

static void s2c_grow(struct mx_idmap *m)
{
    struct s2c_ent *all = NULL;
    for (size_t b = 0; b < m->s2c_size; b++) {
        struct s2c_ent *e = m->s2c_cl[b];
        while (e) {
            struct s2c_ent *n = e->next_cl;
            e->next_cl = all;
            all = e;
            e = n;
        }
    }
    free(m->s2c_cl);
    free(m->s2c_up);
    m->s2c_size *= 2;
    m->s2c_cl = mx_xcalloc(m->s2c_size, sizeof(*m->s2c_cl));
    m->s2c_up = mx_xcalloc(m->s2c_size, sizeof(*m->s2c_up));
    while (all) {
        struct s2c_ent *n = all->next_cl;
        s2c_link(m, all);
        all = n;
    }
}

static struct s2c_ent *find_s2c_up(const struct mx_idmap *m, uint64_t upsess, const char *text)
{
    for (struct s2c_ent *e = m->s2c_up[s2c_up_slot(m, upsess, text)]; e; e = e->next_up) {
        if (e->pub.upsess == upsess && strcmp(e->upid_text, text) == 0)
            return e;
    }
    return NULL;
}

int mx_idmap_s2c_add(struct mx_idmap *m, uint64_t session, uint64_t upsess, size_t upstream,
                     const json_t *up_id, uint64_t call, const struct mx_idmap_s2c **out)
{
    *out = NULL;
    if (session == 0 || upsess == 0 || !id_ok(up_id))
        return MX_EINVAL;
    if (m->s2c_cnt >= MX_IDMAP_MAX)
        return MX_ELIMIT;
    char *text = id_text(up_id);
    if (find_s2c_up(m, upsess, text)) {
        free(text);
        return MX_EEXIST;
    }
    if (m->s2c_cnt + 1 > m->s2c_size)
        s2c_grow(m);
    struct s2c_ent *e = mx_xcalloc(1, sizeof(*e));
    e->pub.client_id = m->next_client_id++;
    e->pub.session = session;
    e->pub.upsess = upsess;
    e->pub.upstream = upstream;
    e->pub.up_id = json_deep_copy(up_id);
    e->pub.call = call;
    e->upid_text = text;
    s2c_link(m, e);
    m->s2c_cnt++;
    *out = &e->pub;
    return 0;
}

const struct mx_idmap_s2c *mx_idmap_s2c_by_client(const struct mx_idmap *m, uint64_t session,
                                                  const json_t *id)
{
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        return NULL;
    uint64_t cid = (uint64_t)json_integer_value(id);
    for (struct s2c_ent *e = m->s2c_cl[s2c_cl_slot(m, cid)]; e; e = e->next_cl) {
        if (e->pub.client_id == cid)
            return e->pub.session == session ? &e->pub : NULL;
    }
    return NULL;
}

const struct mx_idmap_s2c *mx_idmap_s2c_by_up(const struct mx_idmap *m, uint64_t upsess,
                                              const json_t *up_id)
{
    if (!id_ok(up_id))
        return NULL;
    char *text = id_text(up_id);
    struct s2c_ent *e = find_s2c_up(m, upsess, text);
    free(text);
    return e ? &e->pub : NULL;
}

static void s2c_unlink(struct mx_idmap *m, struct s2c_ent *e)
{
    struct s2c_ent **pp = &m->s2c_cl[s2c_cl_slot(m, e->pub.client_id)];
    while (*pp != e)
        pp = &(*pp)->next_cl;
    *pp = e->next_cl;
    pp = &m->s2c_up[s2c_up_slot(m, e->pub.upsess, e->upid_text)];
    while (*pp != e)
        pp = &(*pp)->next_up;
    *pp = e->next_up;
    m->s2c_cnt--;
}

void mx_idmap_s2c_remove(struct mx_idmap *m, uint64_t client_id)
{
    for (struct s2c_ent *e = m->s2c_cl[s2c_cl_slot(m, client_id)]; e; e = e->next_cl) {
        if (e->pub.client_id == client_id) {
            s2c_unlink(m, e);
            s2c_ent_free(e);
            return;
        }
    }
}

/* ---- bulk ---- */

size_t mx_idmap_drop_session(struct mx_idmap *m, uint64_t session,
                             void (*fn)(const struct mx_idmap_call *c, void *arg),
                             void (*s2c_fn)(const struct mx_idmap_s2c *e, void *arg), void *arg)
{
    size_t n = 0;
    for (size_t b = 0; b < m->call_size; b++) {
        struct call_ent *e = m->call_up[b];
        while (e) {
            struct call_ent *next = e->next_up;
            if (e->pub.session == session) {
                if (fn)
                    fn(&e->pub, arg);
                call_unlink(m, e);
                call_ent_free(e);
                n++;
            }
            e = next;
        }
    }
    for (size_t b = 0; b < m->s2c_size; b++) {
        struct s2c_ent *e = m->s2c_cl[b];
        while (e) {
            struct s2c_ent *next = e->next_cl;
            if (e->pub.session == session) {
                if (s2c_fn)
                    s2c_fn(&e->pub, arg);
                s2c_unlink(m, e);
                s2c_ent_free(e);
                n++;
            }
            e = next;
        }
    }
    return n;
}

size_t mx_idmap_drop_upsess(struct mx_idmap *m, uint64_t upsess)
{
    size_t n = 0;
    for (size_t b = 0; b < m->s2c_size; b++) {
        struct s2c_ent *e = m->s2c_cl[b];
        while (e) {
            struct s2c_ent *next = e->next_cl;
            if (e->pub.upsess == upsess) {
                s2c_unlink(m, e);
                s2c_ent_free(e);
                n++;
            }
            e = next;
        }
    }
    return n;
}

size_t mx_idmap_call_cnt(const struct mx_idmap *m)
{
    return m ? m->call_cnt : 0;
}

size_t mx_idmap_s2c_cnt(const struct mx_idmap *m)
{
    return m ? m->s2c_cnt : 0;
}
