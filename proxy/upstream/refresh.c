/* SPDX-License-Identifier: MIT */
/* The refresh command of one upstream and the credential it prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cmdrun.h"
#include "err.h"
#include "log.h"
#include "refresh.h"
#include "secret_ref.h"

struct mx_refresh {
    struct mx_upstream *up;
    struct mx_cmdrun *run;
    mx_refresh_done_cb done;
};

const char *mx_refresh_ref(const struct mx_server_cfg *cfg)
{
    if (cfg->refresh)
        return cfg->refresh;
    if (cfg->secret_ref && strncmp(cfg->secret_ref, "cmd:", 4) == 0)
        return cfg->secret_ref;
    return NULL;
}

/* |up|'s refresh ended: |why| is NULL for a new credential. */
static void ended(struct mx_upstream *up, const char *shown, const char *why)
{
    up->refreshes++;
    up->refresh_ok = why == NULL;
    if (why) {
        mx_log_warn("upstream", "up:%s running %s again gave no new credential (%s)", up->cfg->name,
                    shown, why);
        /* for the clients' error; a very long program path is cut there */
        if (snprintf(up->refresh_why, sizeof(up->refresh_why),
                     "running %s again gave no new credential (%s)", shown,
                     why) >= (int)sizeof(up->refresh_why))
            memcpy(up->refresh_why + sizeof(up->refresh_why) - 4, "...", 4);
    } else {
        up->refresh_why[0] = '\0';
        mx_log_info("upstream", "up:%s has a new credential from %s", up->cfg->name, shown);
    }
}

static void run_done(int err, const char *why, struct mx_str out, void *data)
{
    struct mx_refresh *r = data;
    struct mx_upstream *up = r->up;
    mx_refresh_done_cb done = r->done;
    char shown[160];
    struct mx_secret *fresh = NULL;
    mx_secret_ref_show(mx_refresh_ref(up->cfg), shown, sizeof(shown));
    up->refresh = NULL;
    free(r);
    if (err == 0) {
        /* the rules of a cmd: secret; the reason names no byte of it */
        why = mx_secret_from_output(out.p, out.len, &fresh);
        if (why && out.len == 0)
            why = "it printed nothing";
    }
    if (fresh) {
        mx_secret_free(up->secret); /* wipes the one it replaces */
        up->secret = fresh;
    }
    ended(up, shown, err == 0 && fresh ? NULL : why);
    done(up);
}

int mx_refresh_start(struct ev_loop *loop, struct mx_upstream *up, mx_refresh_done_cb done)
{
    char shown[160], label[256], why[160];
    const char *ref = mx_refresh_ref(up->cfg);
    MX_ASSERT(ref != NULL && up->refresh == NULL);
    mx_secret_ref_show(ref, shown, sizeof(shown));
    snprintf(label, sizeof(label), "up:%s refresh command %s", up->cfg->name, shown);
    long timeout_ms = up->cfg->wake_timeout_ms < MX_REFRESH_TIMEOUT_MS
                          ? (long)up->cfg->wake_timeout_ms
                          : MX_REFRESH_TIMEOUT_MS;
    /* a secret source: the environment it had when first resolved, and its
     * stderr kept out of the log (as at start and reload) */
    struct mx_cmdrun_opts o = {ref + 4, label, timeout_ms, MX_SECRET_MAX_LEN, true, false};
    struct mx_refresh *r = mx_xcalloc(1, sizeof(*r));
    r->up = up;
    r->done = done;
    mx_log_info("upstream", "up:%s refused its credential: running %s again", up->cfg->name, shown);
    int rc = mx_cmdrun_start(loop, &o, run_done, r, &r->run, why, sizeof(why));
    if (rc) {
        free(r);
        ended(up, shown, why);
        return rc;
    }
    up->refresh = r;
    return 0;
}

void mx_refresh_clear(struct mx_upstream *up)
{
    if (up->refresh) {
        mx_cmdrun_cancel(up->refresh->run);
        free(up->refresh);
        up->refresh = NULL;
    }
    mx_secret_free(up->secret);
    up->secret = NULL;
}
