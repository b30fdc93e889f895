/* SPDX-License-Identifier: MIT */
/*
 * The start the gateway's commands share (cmdline.h): their getopt_long
 * frame and the steps from the command line to a config with its secrets.
 * The messages are the commands' own, on stderr, as "mcplex: ...".
 */
#include <getopt.h>
#include <stdio.h>

#include <curl/curl.h>

#include "cmdline.h"
#include "diag.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "model.h"
#include "secret.h"

int mx_cmdline_parse(const struct mx_cmdline *cl, int argc, char **argv, void *data)
{
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, cl->shortopts, cl->longopts, NULL)) != -1) {
        if (ch == 'h') {
            cl->usage(stdout);
            return 0;
        }
        if (ch == '?' || ch == ':') {
            cl->usage(stderr);
            return 2;
        }
        int rc = cl->opt(ch, optarg, data);
        if (rc != 0)
            return rc;
    }
    if (optind != argc || (cl->fits && !cl->fits(data))) {
        cl->usage(stderr);
        return 2;
    }
    return MX_CMDLINE_RUN;
}

int mx_cmdline_run_opt(int ch, const char *arg, void *data)
{
    struct mx_cmdline_run *r = data;
    enum mx_log_format fmt;
    switch (ch) {
    case 'c':
        r->cfg = arg;
        break;
    case 'l':
        r->level = arg;
        break;
    case 'f':
        if (mx_log_format_parse(arg, &fmt) != 0) {
            fprintf(stderr, "mcplex: --log-format must be text or json\n");
            return 2;
        }
        mx_log_set_format(fmt);
        break;
    case 'a':
        mx_log_set_access(true);
        break;
    }
    return 0;
}

struct mx_config *mx_cmdline_config(const char *cfg_arg)
{
    struct mx_diag diag = {0};
    struct mx_config *cfg = NULL;
    char msg[1024];
    if (mx_config_open(cfg_arg, &cfg, &diag) != 0) {
        fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, msg, sizeof(msg)));
        return NULL;
    }
    return cfg;
}

int mx_cmdline_log_level(const char *level_arg, const struct mx_config *cfg)
{
    enum mx_log_level level = MX_LOG_INFO;
    const char *lv = level_arg ? level_arg : cfg->proxy.log_level;
    if (lv && mx_log_level_parse(lv, &level) != 0) {
        fprintf(stderr, "mcplex: unknown log level '%s'\n", lv);
        return MX_EINVAL;
    }
    mx_log_set_level(level);
    return 0;
}

int mx_cmdline_secrets(struct mx_config *cfg, const char *subsys)
{
    struct mx_diag diag = {0};
    char msg[1024];
    const char *why;
    if (mx_secret_protect_process(&why) != 0)
        mx_log_warn(subsys, "%s", why);
    int rc = mx_config_resolve_secrets(cfg, &diag);
    if (rc != 0)
        fprintf(stderr, "mcplex: %s\n", mx_diag_format(&diag, msg, sizeof(msg)));
    return rc;
}

int mx_cmdline_state_dir(const struct mx_config *cfg)
{
    struct mx_diag diag = {0};
    char msg[1024];
    /* The certs and the catalogue live there: someone else who can write to
     * it could swap the CA key or what clients are told about the tools. */
    if (cfg->proxy.state_dir == NULL || mx_dir_private(cfg->proxy.state_dir, &diag) == 0)
        return 0;
    fprintf(stderr, "mcplex: %s: [proxy] state_dir: %s\n", cfg->path,
            mx_diag_format(&diag, msg, sizeof(msg)));
    return -1;
}

int mx_cmdline_curl_init(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "mcplex: libcurl initialisation failed\n");
        return -1;
    }
    return 0;
}
