/* SPDX-License-Identifier: MIT */
/* The command line of `mcplex check`, `mcplex vault` and `mcplex certs`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/*
 * If argv[*i] is the value option |o|, set its value, advance |*i| past a
 * separate value and return 1. Returns 0 when argv[*i] is another argument,
 * -1 when the value is missing or empty (after saying so on stderr).
 */
static int take_value(const char *cmd, int argc, char **argv, int *i, const struct mx_cli_opt *o)
{
    const char *a = argv[*i];
    size_t n = o->long_opt ? strlen(o->long_opt) : 0;
    if (o->long_opt && strncmp(a, o->long_opt, n) == 0 && a[n] == '=') {
        *o->val = a + n + 1;
    } else if ((o->short_opt && strcmp(a, o->short_opt) == 0) ||
               (o->long_opt && strcmp(a, o->long_opt) == 0)) {
        *o->val = *i + 1 < argc ? argv[++*i] : "";
    } else {
        return 0;
    }
    if (**o->val == '\0') {
        fprintf(stderr, "mcplex %s: %s needs a value\n", cmd,
                o->long_opt ? o->long_opt : o->short_opt);
        return -1;
    }
    return 1;
}

static bool is_flag(const char *a, const struct mx_cli_opt *o)
{
    return (o->short_opt && strcmp(a, o->short_opt) == 0) ||
           (o->long_opt && strcmp(a, o->long_opt) == 0);
}

/* Whether argv[*i] is one of |c|'s options (taken, 1), not one (0), or one
 * without its value (-1). */
static int take_opt(const struct mx_cli *c, int argc, char **argv, int *i)
{
    for (const struct mx_cli_opt *o = c->opts; o->short_opt || o->long_opt; o++) {
        if (o->val == NULL && is_flag(argv[*i], o)) {
            *o->flag = true;
            return 1;
        }
        if (o->val != NULL) {
            int r = take_value(c->cmd, argc, argv, i, o);
            if (r != 0)
                return r;
        }
    }
    return 0;
}

int mx_cli_parse(struct mx_cli *c, int argc, char **argv)
{
    c->pos_cnt = 0;
    for (int i = 1; i < argc; i++) {
        int r = take_opt(c, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            c->usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' || c->pos_cnt == c->pos_max) {
            fprintf(stderr, "mcplex %s: unexpected argument '%s'\n", c->cmd, argv[i]);
            c->usage(stderr);
            return 2;
        }
        c->pos[c->pos_cnt++] = argv[i];
    }
    return MX_CLI_RUN;
}
