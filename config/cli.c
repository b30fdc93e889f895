/* SPDX-License-Identifier: MIT */
/* The command line of `mcplex check`, `mcplex vault` and `mcplex certs`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "cli.h"
#include "secret_int.h"

#define SECRET_CAP (MX_SECRET_MAX_LEN + 4) /* the value, CR, LF, a byte to see more, NUL */

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

/* Everything up to EOF from a pipe or file, one line from a terminal (echo
 * off). Returns the length, or -1 when it does not fit in |cap|. */
static long read_value(const char *name, char *buf, size_t cap)
{
    struct termios old, quiet;
    bool tty = isatty(0) && tcgetattr(0, &old) == 0;
    size_t len = 0;

    if (tty) {
        fprintf(stderr, "value for %s (not echoed): ", name);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(0, TCSAFLUSH, &quiet);
    }
    while (len < cap) {
        ssize_t n = read(0, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        char *nl = tty ? memchr(buf, '\n', len) : NULL;
        if (nl) {
            len = (size_t)(nl - buf) + 1;
            break;
        }
    }
    if (tty) {
        tcsetattr(0, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (len == cap)
        return -1;
    return (long)len;
}

char *mx_cli_read_secret(const char *cmd, const char *name, size_t *len)
{
    char *buf = mx_xmalloc(SECRET_CAP);
    long n = read_value(name, buf, SECRET_CAP - 1);
    if (n < 0) {
        fprintf(stderr, "mcplex %s: the value is larger than %d bytes\n", cmd, MX_SECRET_MAX_LEN);
        mx_cli_secret_free(buf);
        return NULL;
    }
    size_t l = (size_t)n;
    if (l && buf[l - 1] == '\n') {
        l--;
        if (l && buf[l - 1] == '\r')
            l--;
    }
    if (l == 0) {
        fprintf(stderr, "mcplex %s: refusing an empty value for '%s'\n", cmd, name);
        mx_cli_secret_free(buf);
        return NULL;
    }
    buf[l] = '\0';
    *len = l;
    return buf;
}

void mx_cli_secret_free(char *value)
{
    if (value == NULL)
        return;
    OPENSSL_cleanse(value, SECRET_CAP);
    free(value);
}
