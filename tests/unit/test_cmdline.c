/* SPDX-License-Identifier: MIT */
/*
 * What the gateway's commands share before they run (ops/cmdline.c): the
 * getopt_long frame (help, unknown options, stray arguments, options that
 * do not go together, an option's own refusal, a second run in the same
 * process), the options of the commands that run the gateway, the log level
 * and the -c / --url / --ca rule of status and reload, and the /health URL
 * of what is given as --url.
 */
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmd_status.h"
#include "cmdline.h"
#include "diag.h"
#include "err.h"
#include "log.h"
#include "model.h"

static int usage_out, usage_err;

static void usage(FILE *f)
{
    if (f == stdout)
        usage_out++;
    else
        usage_err++;
}

struct seen {
    struct mx_status_where where;
    int count;
};

static int seen_opt(int ch, const char *arg, void *data)
{
    struct seen *s = data;
    s->count++;
    if (ch == 'x')
        return 3;
    return mx_status_where_opt(ch, arg, &s->where);
}

static bool seen_fits(const void *data)
{
    const struct seen *s = data;
    return mx_status_where_fits(&s->where);
}

static const struct option opts[] = {MX_STATUS_WHERE_OPTIONS,
                                     {"refuse", no_argument, NULL, 'x'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};

/* Parses |args| (NULL-ended, without argv[0]) into |s|. */
static int parse(struct seen *s, ...)
{
    static const struct mx_cmdline cl = {"c:h", opts, usage, seen_opt, seen_fits};
    char *argv[16] = {(char *)(uintptr_t) "test"};
    int argc = 1;
    va_list ap;
    va_start(ap, s);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 15;)
        argv[argc++] = (char *)(uintptr_t)a;
    va_end(ap);
    memset(s, 0, sizeof(*s));
    usage_out = usage_err = 0;
    return mx_cmdline_parse(&cl, argc, argv, s);
}

static void test_cmdline_frame(void **state)
{
    struct seen s;
    (void)state;
    assert_int_equal(parse(&s, "-c", "a.toml", NULL), MX_CMDLINE_RUN);
    assert_string_equal(s.where.cfg, "a.toml");
    assert_int_equal(usage_out + usage_err, 0);
    /* again in the same process: getopt starts over */
    assert_int_equal(parse(&s, "--url", "http://127.0.0.1:1", "--cacert", "ca.pem", NULL),
                     MX_CMDLINE_RUN);
    assert_string_equal(s.where.url, "http://127.0.0.1:1");
    assert_string_equal(s.where.ca, "ca.pem");
    assert_int_equal(s.count, 2);

    assert_int_equal(parse(&s, "--help", NULL), 0);
    assert_int_equal(usage_out, 1);
    assert_int_equal(usage_err, 0);
    assert_int_equal(s.count, 0);

    assert_int_equal(parse(&s, "--bogus", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&s, "-c", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&s, "stray", NULL), 2);
    assert_int_equal(usage_err, 1);
    /* an option's own refusal is its exit status, without the usage */
    assert_int_equal(parse(&s, "--refuse", "-c", "a", NULL), 3);
    assert_int_equal(usage_out + usage_err, 0);
    assert_int_equal(s.count, 1);
}

static void test_cmdline_where_fits(void **state)
{
    struct seen s;
    (void)state;
    assert_int_equal(parse(&s, NULL), MX_CMDLINE_RUN);
    assert_int_equal(parse(&s, "-c", "a", "--url", "http://h:1", NULL), 2);
    assert_int_equal(usage_err, 1);
    assert_int_equal(parse(&s, "--cacert", "ca.pem", NULL), 2);
    assert_int_equal(parse(&s, "-c", "a", "--cacert", "ca.pem", NULL), 2);
    assert_int_equal(parse(&s, "--url", "http://h:1", NULL), MX_CMDLINE_RUN);
    /* --ca is --cacert's other name */
    assert_int_equal(parse(&s, "--ca", "ca.pem", NULL), 2);
    assert_int_equal(parse(&s, "--url", "https://h:1", "--ca", "ca.pem", NULL), MX_CMDLINE_RUN);
    assert_string_equal(s.where.ca, "ca.pem");
}

/* The /health URL of what a user passes as --url: the base, the /mcp URL
 * serve gives clients, /mcp/<server>, or /health itself. */
static void test_cmdline_health_url(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"https://127.0.0.1:8443", "https://127.0.0.1:8443/health"},
        {"https://127.0.0.1:8443/", "https://127.0.0.1:8443/health"},
        {"https://127.0.0.1:8443/mcp", "https://127.0.0.1:8443/health"},
        {"https://127.0.0.1:8443/mcp/", "https://127.0.0.1:8443/health"},
        {"https://127.0.0.1:8443/mcp/files", "https://127.0.0.1:8443/health"},
        {"https://127.0.0.1:8443/mcp/files/", "https://127.0.0.1:8443/health"},
        {"https://127.0.0.1:8443/health", "https://127.0.0.1:8443/health"},
        {"http://[::1]:8080/mcp?x=1#f", "http://[::1]:8080/health"},
        {"HTTPS://localhost:8443/mcp", "HTTPS://localhost:8443/health"},
        /* behind a path prefix, the prefix stays */
        {"https://h.example/gw/mcp/files", "https://h.example/gw/health"},
        {"https://h.example/gw/mcp", "https://h.example/gw/health"},
        {"https://h.example/gw", "https://h.example/gw/health"},
        /* "mcp" only as a whole segment */
        {"https://h.example/xmcp", "https://h.example/xmcp/health"},
        {"https://h.example/mcpx/files", "https://h.example/mcpx/files/health"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = mx_status_health_url(cases[i].in);
        if (got == NULL || strcmp(got, cases[i].want) != 0)
            fail_msg("%s: got %s, want %s", cases[i].in, got ? got : "NULL", cases[i].want);
        free(got);
    }
    static const char *const bad[] = {"127.0.0.1:8443", "ftp://h/mcp", "https://", "https:///mcp",
                                      ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *got = mx_status_health_url(bad[i]);
        if (got != NULL)
            fail_msg("%s: got %s, want NULL", bad[i], got);
    }
}

static void test_cmdline_run_opts(void **state)
{
    struct mx_cmdline_run r = {0};
    (void)state;
    assert_int_equal(mx_cmdline_run_opt('c', "x.toml", &r), 0);
    assert_int_equal(mx_cmdline_run_opt('l', "debug", &r), 0);
    assert_string_equal(r.cfg, "x.toml");
    assert_string_equal(r.level, "debug");
    assert_int_equal(mx_cmdline_run_opt('f', "xml", &r), 2);
    assert_int_equal(mx_cmdline_run_opt('f', "json", &r), 0);
    assert_int_equal(mx_log_get_format(), MX_LOG_JSON);
    assert_int_equal(mx_cmdline_run_opt('f', "text", &r), 0);
    assert_int_equal(mx_log_get_format(), MX_LOG_TEXT);
}

static void test_cmdline_log_level(void **state)
{
    struct mx_config *cfg = NULL;
    struct mx_diag d = {0};
    static const char toml[] = "[proxy]\nlog_level = \"warn\"\n";
    (void)state;
    assert_int_equal(mx_config_parse("t.toml", toml, strlen(toml), &cfg, &d), 0);
    /* the flag wins over the config */
    assert_int_equal(mx_cmdline_log_level("debug", cfg), 0);
    assert_true(mx_log_enabled(MX_LOG_DEBUG));
    assert_int_equal(mx_cmdline_log_level(NULL, cfg), 0);
    assert_false(mx_log_enabled(MX_LOG_INFO));
    assert_true(mx_log_enabled(MX_LOG_WARN));
    assert_int_equal(mx_cmdline_log_level("loud", cfg), MX_EINVAL);
    mx_config_free(cfg);
    mx_log_set_level(MX_LOG_INFO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmdline_frame),      cmocka_unit_test(test_cmdline_where_fits),
        cmocka_unit_test(test_cmdline_health_url), cmocka_unit_test(test_cmdline_run_opts),
        cmocka_unit_test(test_cmdline_log_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
