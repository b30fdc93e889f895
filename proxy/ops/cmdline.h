/* SPDX-License-Identifier: MIT */
/*
 * What the commands built on the gateway (serve, stdio, status, reload and
 * bench) share before they do their own work: the getopt_long frame of the
 * command line (help, usage errors, stray arguments), the options of the
 * commands that run the gateway, loading the config, the log level, secrets
 * and libcurl's start. Each command keeps its options table, its usage text
 * and what it does with the values.
 */
#ifndef MX_CMDLINE_H
#define MX_CMDLINE_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

struct mx_config;

/* A command's command line, for mx_cmdline_parse. */
struct mx_cmdline {
    const char *shortopts;         /* getopt_long's, with "h" */
    const struct option *longopts; /* getopt_long's, with "help" as 'h' */
    void (*usage)(FILE *f);        /* prints the command's help text on |f| */
    /*
     * Called for each option but -h with getopt_long's |ch| and optarg, and
     * the |data| given to mx_cmdline_parse: returns 0, or the exit status
     * after printing why.
     */
    int (*opt)(int ch, const char *arg, void *data);
    /* NULL, or whether the options given go together. */
    bool (*fits)(const void *data);
};

/* mx_cmdline_parse's answer when the command goes on. */
#define MX_CMDLINE_RUN (-1)

/*
 * Parse |argv| with getopt_long as |cl| says. Returns MX_CMDLINE_RUN, or the
 * exit status the command returns at once: 0 after printing the usage on
 * stdout for -h; 2 after printing it on stderr for an unknown option or a
 * missing value (getopt_long has said which), an argument that is no
 * option, or options that do not fit; or what |cl->opt| returned.
 */
int mx_cmdline_parse(const struct mx_cmdline *cl, int argc, char **argv, void *data);

/*
 * The options of the commands that run the gateway, as getopt_long returns
 * them: 'c' (-c, --config), 'l' (--log-level), 'f' (--log-format) and 'a'
 * (--access-log); a command lists in its table those it takes.
 */
struct mx_cmdline_run {
    const char *cfg;   /* -c: the config, for mx_cmdline_config */
    const char *level; /* --log-level: wins over [proxy] log_level */
};

/*
 * An |opt| callback for those options, |data| a struct mx_cmdline_run.
 * --log-format and --access-log take effect at once, before the config is
 * read. Returns 0, or 2 after printing why (a --log-format that is neither
 * text nor json).
 */
int mx_cmdline_run_opt(int ch, const char *arg, void *data);

/* The config |cfg_arg| names (mx_config_open), or NULL after printing why. */
struct mx_config *mx_cmdline_config(const char *cfg_arg);

/*
 * Set the log level: |level_arg| when given, else [proxy] log_level of
 * |cfg|, else info. Returns 0, or MX_EINVAL after printing why.
 */
int mx_cmdline_log_level(const char *level_arg, const struct mx_config *cfg);

/*
 * For a process that serves with the secrets of |cfg|: protect it
 * (mx_secret_protect_process; where that fails, a warning logged under
 * |subsys| and on), then resolve every secret. Returns 0, or the error
 * after printing why.
 */
int mx_cmdline_secrets(struct mx_config *cfg, const char *subsys);

/*
 * [proxy] state_dir made 0700 when missing, and refused when another user
 * owns it or group or others may write to it (mx_dir_private). Returns 0, or
 * -1 after printing why.
 */
int mx_cmdline_state_dir(const struct mx_config *cfg);

/* curl_global_init; returns 0, or -1 after printing why. */
int mx_cmdline_curl_init(void);

#endif
