/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 server fed arbitrary bytes over a socketpair: whatever comes
 * in, it answers or closes without crashing, leaking or overrunning a cap.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "httpd.h"
#include "log.h"
#include "req_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_request(struct mx_req *req, void *data)
{
    (void)data;
    struct mx_str b = mx_req_body(req);
    const struct mx_str *h = mx_req_header(req, "Host");
    mx_req_start(req, 200, NULL, 0, -1);
    mx_req_write(req, b.p, b.len);
    if (h)
        mx_req_write(req, h->p, h->len);
    mx_req_end(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ev_loop *loop;
    int sv[2];
    char buf[65536];
    if (loop == NULL) {
        loop = ev_loop_new(EVFLAG_AUTO);
        mx_log_set_level(MX_LOG_ERR);
    }
    if (size > 60000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    struct mx_httpd_opts o;
    mx_httpd_opts_default(&o);
    o.max_header = 2048;
    o.max_body = 4096;
    struct mx_httpd *s = mx_httpd_new(loop, &o, on_request, NULL);
    mx_httpd_adopt(s, sv[0], "fuzz");
    if (write(sv[1], data, size) < 0) {
        /* the socketpair buffer is larger than any input we accept */
    }
    shutdown(sv[1], SHUT_WR);
    for (int i = 0; i < 16; i++) {
        ev_run(loop, EVRUN_NOWAIT);
        while (read(sv[1], buf, sizeof(buf)) > 0)
            ;
    }
    mx_httpd_free(s);
    close(sv[1]);
    MX_ASSERT(mx_req_live_cnt() == 0);
    return 0;
}
