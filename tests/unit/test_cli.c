/* SPDX-License-Identifier: MIT */
/*
 * The command line of the config-side commands (config/cli.c): value
 * options in their three spellings, a missing or empty value, flags,
 * positional arguments up to the command's limit, help, and the usage text
 * on the right stream.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"

static int usage_out, usage_err;

static void usage(FILE *f)
{
    if (f == stdout)
        usage_out++;
    else
        usage_err++;
}

struct parsed {
    const char *cfg;
    const char *dir;
    bool renew;
    const char *pos[2];
    int npos;
};

/* Parses |args| (NULL-ended, without argv[0]) as a command with -c/--config,
 * --dir, the flags --renew and --force, and at most |pos_max| positionals. */
static int parse(struct parsed *p, int pos_max, ...)
{
    char *argv[16] = {(char *)(uintptr_t) "test"};
    int argc = 1;
    va_list ap;
    va_start(ap, pos_max);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 15;)
        argv[argc++] = (char *)(uintptr_t)a;
    va_end(ap);
    memset(p, 0, sizeof(*p));
    usage_out = usage_err = 0;
    const struct mx_cli_opt opts[] = {{"-c", "--config", &p->cfg, NULL},
                                      {NULL, "--dir", &p->dir, NULL},
                                      {NULL, "--renew", NULL, &p->renew},
                                      {NULL, "--force", NULL, &p->renew},
                                      {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"test", usage, opts, p->pos, pos_max, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    p->npos = cli.pos_cnt;
    return rc;
}

static void test_cli_values(void **state)
{
    struct parsed p;
    (void)state;
    assert_int_equal(parse(&p, 0, "-c", "a.toml", NULL), MX_CLI_RUN);
    assert_string_equal(p.cfg, "a.toml");
    assert_int_equal(parse(&p, 0, "--config", "b.toml", "--dir", "d", NULL), MX_CLI_RUN);
    assert_string_equal(p.cfg, "b.toml");
    assert_string_equal(p.dir, "d");
    assert_int_equal(parse(&p, 0, "--config=c.toml", NULL), MX_CLI_RUN);
    assert_string_equal(p.cfg, "c.toml");
    /* the last one given wins */
    assert_int_equal(parse(&p, 0, "-c", "x", "-c", "y", NULL), MX_CLI_RUN);
    assert_string_equal(p.cfg, "y");
    assert_int_equal(usage_out + usage_err, 0);

    /* a value missing or empty: exit status 2, no usage text */
    assert_int_equal(parse(&p, 0, "-c", NULL), 2);
    assert_int_equal(parse(&p, 0, "--config=", NULL), 2);
    assert_int_equal(parse(&p, 0, "--dir", "", NULL), 2);
    assert_int_equal(usage_out + usage_err, 0);
}

static void test_cli_flags_and_positionals(void **state)
{
    struct parsed p;
    (void)state;
    assert_int_equal(parse(&p, 1, "init", "--renew", NULL), MX_CLI_RUN);
    assert_true(p.renew);
    assert_int_equal(p.npos, 1);
    assert_string_equal(p.pos[0], "init");
    assert_int_equal(parse(&p, 2, "--force", "set", "NAME", NULL), MX_CLI_RUN);
    assert_true(p.renew);
    assert_int_equal(p.npos, 2);
    assert_string_equal(p.pos[1], "NAME");

    /* a flag takes no value; an unknown option or one positional too many is
     * unexpected, with the usage on stderr */
    assert_int_equal(parse(&p, 1, "--renew=yes", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&p, 1, "--bogus", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&p, 1, "init", "show", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&p, 0, "init", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&p, 2, "-", NULL), 2);
    assert_int_equal(usage_err, 1);
}

static void test_cli_help(void **state)
{
    struct parsed p;
    (void)state;
    assert_int_equal(parse(&p, 0, "-h", NULL), 0);
    assert_int_equal(usage_out, 1);
    assert_int_equal(parse(&p, 0, "-c", "a", "--help", "ignored", NULL), 0);
    assert_int_equal(usage_out, 1);
    assert_int_equal(usage_err, 0);
    /* what comes first decides */
    assert_int_equal(parse(&p, 0, "--bogus", "-h", NULL), 2);
    assert_int_equal(usage_out, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_values),
        cmocka_unit_test(test_cli_flags_and_positionals),
        cmocka_unit_test(test_cli_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
