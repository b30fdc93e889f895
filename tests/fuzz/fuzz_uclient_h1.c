/* SPDX-License-Identifier: MIT */
/*
 * The upstream's answer, any bytes, to mcplex's own HTTP/1.1 client: a
 * listener on 127.0.0.1 writes the input (in two pieces, split where its
 * first byte says) to the connection the client opens, then ends its side.
 * The request must end exactly once, with no more body delivered than the
 * upstream sent, at most one head, and nothing left running; the consumer
 * pauses on every other piece (the second byte's low bit) and resumes from
 * the loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "err.h"
#include "log.h"
#include "uclient.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
    struct mx_ureq *u;
    ev_timer resume;
    size_t body;
    int heads;
    int dones;
    bool pause_every_other;
    unsigned pieces;
};

static struct ev_loop *loop;
static int lfd = -1;
static int port;

static void on_head(struct mx_ureq *u, long status, const struct mx_header *h, size_t n, void *d)
{
    struct run *r = d;
    (void)u;
    (void)h;
    (void)n;
    if (status < 200 || status > 999)
        abort();
    r->heads++;
}

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *d)
{
    struct run *r = d;
    (void)u;
    (void)p;
    r->body += len;
    if (r->pause_every_other && (r->pieces++ % 2) == 0) {
        ev_timer_set(&r->resume, 0.0, 0.0);
        ev_timer_start(loop, &r->resume);
        return MX_EAGAIN;
    }
    return 0;
}

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *d)
{
    struct run *r = d;
    (void)u;
    (void)err;
    (void)info;
    r->dones++;
    r->u = NULL;
    ev_timer_stop(loop, &r->resume);
}

static void resume_cb(struct ev_loop *l, ev_timer *w, int revents)
{
    struct run *r = w->data;
    (void)l;
    (void)revents;
    if (r->u)
        mx_ureq_resume(r->u);
}

static void setup_once(void)
{
    if (loop)
        return;
    mx_log_set_level(MX_LOG_ERR);
    loop = ev_loop_new(EVFLAG_AUTO);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
        abort();
    port = ntohs(sa.sin_port);
}

/* The upstream's side: accept, write the answer in two pieces, end. */
static int serve(const uint8_t *data, size_t size, size_t split)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return -1;
    const uint8_t *piece[2] = {data, data + split};
    size_t len[2] = {split, size - split};
    for (int i = 0; i < 2; i++) {
        size_t off = 0;
        while (off < len[i]) {
            ssize_t n = send(fd, piece[i] + off, len[i] - off, MSG_NOSIGNAL);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
    }
    shutdown(fd, SHUT_WR);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 32 * 1024)
        return 0;
    setup_once();
    size_t split = size > 2 ? 2 + (size_t)data[0] % (size - 2) : 2;
    struct run r = {0};
    r.pause_every_other = (data[1] & 1) != 0;
    ev_timer_init(&r.resume, resume_cb, 0.0, 0.0);
    r.resume.data = &r;

    struct mx_uclient *c = mx_uclient_new(loop);
    if (!c)
        abort();
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    static const char *const hdrs[] = {"Content-Type: application/json"};
    struct mx_ureq_opts o = {0};
    o.method = "POST";
    o.url = url;
    o.headers = hdrs;
    o.header_cnt = 1;
    o.body = "{}";
    o.body_len = 2;
    o.timeout_ms = 2000;
    static const struct mx_ureq_cbs cbs = {on_head, on_data, on_done};
    if (mx_ureq_start(c, &o, &cbs, &r, &r.u) != 0)
        abort();
    int fd = -1;
    for (int i = 0; i < 100000 && r.dones == 0; i++) {
        ev_run(loop, EVRUN_NOWAIT);
        if (fd < 0)
            fd = serve(data + 2, size - 2, split - 2);
        if (fd >= 0 && r.dones == 0)
            ev_run(loop, EVRUN_ONCE);
    }
    if (r.dones != 1 || r.heads > 1 || r.body > size || mx_uclient_active(c) != 0)
        abort();
    mx_uclient_free(c);
    if (fd >= 0)
        close(fd);
    return 0;
}
