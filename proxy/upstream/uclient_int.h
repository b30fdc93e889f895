/* SPDX-License-Identifier: MIT */
/*
 * Inside the upstream HTTP client: what its two files share. uclient.c is
 * the client (requests, pools, response heads, completion) and its libcurl
 * engine; uclient_h1.c is the engine of its own for plain HTTP/1.1 to an
 * address given as an IP literal, a keep-alive connection pool on
 * http-parser that writes a request with one sendmsg and watches idle
 * connections for the server's close, so it needs no liveness check before
 * reuse. Both see the objects defined here; mx_uc_* functions are
 * uclient.c's, mx_uc_h1_* uclient_h1.c's. Only for those two files.
 */
#ifndef MX_UCLIENT_INT_H
#define MX_UCLIENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <curl/curl.h>
#include <ev.h>

#include "buf.h"
#include "str.h"
#include "uclient.h"

/* finished easy handles kept for the next requests, over all upstreams */
#define UCLIENT_MAX_SPARE 16
/* idle upstream connections kept for reuse, over all upstreams */
#define UCLIENT_MAX_IDLE_CONNS 1024
/* A circular doubly linked list with a sentinel: unlinking needs no head. */
struct link {
    struct link *prev;
    struct link *next;
};

static inline void link_init(struct link *l)
{
    l->prev = l->next = l;
}

static inline bool link_empty(const struct link *l)
{
    return l->next == l;
}

static inline void link_add_tail(struct link *head, struct link *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

static inline void link_del(struct link *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    link_init(l);
}

/* Move every entry of |from| to the empty list |to|. */
static inline void link_splice(struct link *from, struct link *to)
{
    link_init(to);
    if (link_empty(from))
        return;
    to->next = from->next;
    to->prev = from->prev;
    to->next->prev = to;
    to->prev->next = to;
    link_init(from);
}

enum mx_ureq_state {
    MX_UREQ_PENDING,   /* created; added to the multi handle at the next safe point */
    MX_UREQ_RUNNING,   /* in the multi handle */
    MX_UREQ_CANCELLED, /* cancelled inside a curl call; removed at the next safe point */
    MX_UREQ_DONE,      /* removed from the multi handle; on_done is running */
};

/* Where a response header sits in mx_ureq.head. */
struct hdr_pos {
    size_t name_off;
    size_t name_len;
    size_t value_off;
    size_t value_len;
};

struct mx_ureq {
    struct mx_uclient *c;
    struct link node; /* in c->reqs */
    struct link todo; /* in c->todo while it waits for the next safe point */
    enum mx_ureq_state state;
    unsigned long id;
    CURL *easy;
    struct curl_slist *hdrs; /* lines[] or NULL; may hold credentials: wiped */
    size_t hdrs_size;        /* bytes of lines[] and their text, for the wipe */
    struct mx_ureq_cbs cbs;
    void *data;

    char *body; /* our copy (after the header text), fed to libcurl by read_cb */
    size_t body_len;
    size_t read_pos;
    bool has_body;      /* POST-style request: the body goes through read_cb */
    bool may_repeat;    /* a rewind or a second attempt is allowed */
    bool body_handed;   /* every body byte was handed to libcurl in some attempt */
    unsigned attempts;  /* times libcurl was about to send the request */
    bool retry_refused; /* prereq_cb refused a second attempt */

    bool resp_started;
    bool in_head;    /* a status line was seen; collecting its header block */
    bool head_done;  /* on_head was called */
    bool bad_header; /* a header value held a control byte: the answer is refused */
    long status;
    struct mx_buf head;
    struct hdr_pos *pos;
    size_t pos_cnt;

    struct mx_upool *pool; /* NULL: the multi's common connection cache */
    bool stream;           /* opts.stream */
    bool held;             /* a stream whose head came: held, not use of the pool */

    bool consumer_paused; /* on_data returned MX_EAGAIN and no resume came yet */
    bool curl_paused;     /* we answered CURL_WRITEFUNC_PAUSE: libcurl holds the bytes */

    char errbuf[CURL_ERROR_SIZE];
    CURLcode result; /* how the transfer ended */

    /* Sent by mcplex's own HTTP/1.1 engine (uclient_h1.c), not libcurl:
     * |easy| and |hdrs| are NULL, and the tail holds the request's bytes. */
    struct mx_uc_h1req *h1;

    /* One allocation with the request: the header list (libcurl only reads
     * it, so it need not come from curl_slist_append), the text of its lines,
     * then the body. */
    struct curl_slist lines[];
};

/*
 * A socket libcurl told sock_cb about. When libcurl lets go of it (the
 * connection went back to the cache: CURL_POLL_REMOVE) it stays watched
 * for reading, parked: libcurl takes the same connection back for the next
 * request, and then nothing changes in epoll (stopping and starting the
 * watcher cost an epoll_ctl per call, one of them failing). Every socket
 * libcurl opens and closes goes through open_sock and close_sock, so a
 * parked socket is dropped before its descriptor is closed, and one found
 * with a new socket's number is dropped as stale.
 */
struct sock {
    ev_io io;
    curl_socket_t fd;
    struct mx_uclient *c;
    struct link node; /* in c->socks */
    bool parked;      /* libcurl let go of it; watched for reading only */
};

/* What open_sock and close_sock are given: the client, and the pool that
 * counts the socket (NULL: none). */
struct sockctx {
    struct mx_uclient *c;
    struct mx_upool *p;
};

struct mx_upool {
    struct mx_uclient *c;
    struct sockctx ctx; /* {c, this} */
    struct link node;   /* in c->pools */
    CURLSH *share;      /* its connection cache; NULL until used, and after each close */
    struct mx_upool_cbs cbs;
    void *data;
    ev_timer idle;
    double idle_s;
    bool dead;    /* its owner let go: no callbacks, freed once nothing uses it */
    bool closing; /* idle: close every connection once no transfer uses the share */
    size_t users; /* live transfers whose easy handle has the share */
    size_t busy;  /* of those, the ones that are use (not held streams) */
    size_t conns; /* sockets open, counted by open_sock and close_sock */
    size_t streams;
    time_t held_since;
    time_t idle_closed;
    struct link h1_idle; /* its idle connections of the engine of its own */
};

struct mx_uclient {
    struct ev_loop *loop;
    CURLM *multi;
    ev_timer timer;   /* libcurl's single timeout */
    ev_prepare kick;  /* runs c->todo at the start of the next loop iteration */
    struct link reqs; /* every live mx_ureq */
    struct link todo; /* requests to add or to unpause */
    struct link socks;
    struct sockctx ctx; /* {this, NULL} */
    struct link pools;
    size_t active;
    size_t zombies;   /* requests in MX_UREQ_CANCELLED */
    unsigned in_curl; /* depth of our calls into libcurl that may run callbacks */
    unsigned in_done; /* on_done is running */
    unsigned long next_id;
    CURL *spare[UCLIENT_MAX_SPARE]; /* reset, outside any share, for the next requests */
    size_t spare_cnt;
    /* the engine of its own: idle connections outside any pool, the count
     * of idle ones over all pools, its read buffer, and whether it is used */
    struct link h1_idle;
    size_t h1_idle_cnt;
    char *h1_rbuf;
    bool h1_off;
};

/* ---- uclient.c, for the engine of its own ---- */

void mx_uc_ureq_free(struct mx_ureq *u);
/* on_done with |err| and the info of |u|, then free it. */
void mx_uc_deliver_done(struct mx_ureq *u, int err);
/* Run |u| in on_kick at the start of the next loop pass. */
void mx_uc_schedule(struct mx_ureq *u);
void mx_uc_pool_check(struct mx_upool *p);
void mx_uc_held_note(struct mx_upool *p);
void mx_uc_head_reset(struct mx_ureq *u);
/* One response header, name and value as the parser gave them; MX_EPROTO
 * (a control byte in the value) or MX_ELIMIT (over the caps). */
int mx_uc_head_field(struct mx_ureq *u, struct mx_str name, struct mx_str value);
void mx_uc_deliver_head(struct mx_ureq *u);
void mx_uc_set_state(struct mx_ureq *u, enum mx_ureq_state s);

/* ---- uclient_h1.c ---- */

/* Whether |url| goes to the engine of its own: plain http to an IP literal
 * (or localhost), no userinfo or fragment, a path of printable bytes. */
bool mx_uc_h1_wants(const char *url);
/* Set |u| up from |opts| (the caller checked them): its request bytes in
 * |tail|, which has mx_uc_h1_size() bytes. Returns 0 or MX_EINVAL. */
size_t mx_uc_h1_size(const struct mx_ureq_opts *opts);
int mx_uc_h1_setup(struct mx_ureq *u, const struct mx_ureq_opts *opts, char *tail);
/* From on_kick: a pending request starts; a running one resumes. */
void mx_uc_h1_begin(struct mx_ureq *u);
void mx_uc_h1_resume(struct mx_ureq *u);
/* Drop |u|'s connection (the request is being freed before its end). */
void mx_uc_h1_abort(struct mx_ureq *u);
/* mx_ureq_cancel() of a running request: freed now, or, when the engine
 * is delivering one of its callbacks, as soon as that returns. */
void mx_uc_h1_cancel(struct mx_ureq *u);
/* Fill what only the engine knows: timings, reuse, why no connection. */
void mx_uc_h1_info(const struct mx_ureq *u, struct mx_ureq_info *info);
/* Close |p|'s idle connections (|p| NULL: the common ones). */
void mx_uc_h1_close_idle(struct mx_uclient *c, struct mx_upool *p);

#endif
