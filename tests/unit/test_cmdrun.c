/* SPDX-License-Identifier: MIT */
/*
 * Helper commands on the loop (wake hooks, credential refreshes), with
 * small real commands: stdout captured whole, at its cap and one byte past
 * it; the exit status and a signal; the timeout, which kills the command's
 * whole process group; something left running in the background does not
 * hold the answer up; the environment (PATH alone, or mcplex's own); a
 * program that does not exist refused without a callback; a cancelled
 * command never calls back. Every wait is bounded.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "alloc.h"
#include "cmdrun.h"
#include "err.h"

static struct ev_loop *loop;

struct rec {
    bool done;
    int err;
    char why[128];
    char *out;
    size_t len;
};

static void on_done(int err, const char *why, struct mx_str out, void *data)
{
    struct rec *r = data;
    assert_false(r->done); /* exactly once */
    r->done = true;
    r->err = err;
    snprintf(r->why, sizeof(r->why), "%s", why);
    r->out = mx_xstrndup(out.p, out.len);
    r->len = out.len;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the loop until |r| is done or |max_s| passed; the time it took. */
static double wait_done(struct rec *r, double max_s)
{
    double t0 = now_s();
    while (!r->done && now_s() - t0 < max_s)
        ev_run(loop, EVRUN_ONCE);
    return now_s() - t0;
}

/* Run |cmd| to its end; with |late_ms| the loop reads nothing for that
 * long first (a busy loop: the command fills the pipe meanwhile). */
static double run_late(const char *cmd, long timeout_ms, size_t cap, bool inherit_env, long late_ms,
                       struct rec *r)
{
    char why[128] = "";
    struct mx_cmdrun *c = NULL;
    struct mx_cmdrun_opts o = {cmd, "test command", timeout_ms, cap, inherit_env, false};
    memset(r, 0, sizeof(*r));
    assert_int_equal(mx_cmdrun_start(loop, &o, on_done, r, &c, why, sizeof(why)), 0);
    assert_non_null(c);
    assert_false(r->done); /* never from inside the start */
    if (late_ms > 0)
        usleep((useconds_t)late_ms * 1000);
    double took = wait_done(r, 10.0);
    assert_true(r->done);
    return took;
}

static double run(const char *cmd, long timeout_ms, size_t cap, bool inherit_env, struct rec *r)
{
    return run_late(cmd, timeout_ms, cap, inherit_env, 0, r);
}

static void rec_clear(struct rec *r)
{
    free(r->out);
    r->out = NULL;
}

static void test_cmdrun_output(void **state)
{
    struct rec r;
    (void)state;
    run("printf %s\\n canary-token", 5000, 4096, false, &r);
    assert_int_equal(r.err, 0);
    assert_string_equal(r.out, "canary-token\n");
    rec_clear(&r);
    /* not captured: nothing comes back */
    run("echo hidden", 5000, 0, false, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.len, 0);
    rec_clear(&r);
    /* more than a pipe holds while the loop reads nothing: the command's
     * stdout blocks until it does, it never fails with EAGAIN */
    run_late("head -c 200000 /dev/zero", 5000, 262144, false, 300, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.len, 200000);
    rec_clear(&r);
    /* at the cap, and one byte past it */
    run("head -c 65536 /dev/zero", 5000, 65536, false, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.len, 65536);
    rec_clear(&r);
    run("head -c 65537 /dev/zero", 5000, 65536, false, &r);
    assert_int_equal(r.err, MX_ELIMIT);
    assert_string_equal(r.why, "printed more than 65536 bytes");
    assert_int_equal(r.len, 0);
    rec_clear(&r);
}

static void test_cmdrun_status(void **state)
{
    struct rec r;
    (void)state;
    run("false", 5000, 64, false, &r);
    assert_int_equal(r.err, MX_EUPSTREAM);
    assert_string_equal(r.why, "exited with status 1");
    rec_clear(&r);
    /* what a failing command printed is not handed on */
    run("cat /nonexistent/mx-file", 5000, 64, false, &r);
    assert_int_equal(r.err, MX_EUPSTREAM);
    assert_int_equal(r.len, 0);
    rec_clear(&r);
    run("kill -TERM 0", 5000, 64, false, &r);
    assert_int_equal(r.err, MX_EUPSTREAM);
    assert_string_equal(r.why, "was killed by signal 15");
    rec_clear(&r);
}

static void test_cmdrun_timeout(void **state)
{
    struct rec r;
    (void)state;
    double took = run("sleep 30", 200, 64, false, &r);
    assert_int_equal(r.err, MX_ETIMEDOUT);
    assert_string_equal(r.why, "did not finish within 0.2 s");
    assert_true(took < 2.0);
    rec_clear(&r);
}

/* A script: |body| after the shebang, executable; its path (caller frees). */
static char *script(const char *body)
{
    char tmpl[] = "/tmp/mx-cmdrun-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    char *text = mx_xasprintf("#!/bin/sh\n%s", body);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(text);
    assert_int_equal(chmod(tmpl, 0700), 0);
    return mx_xstrdup(tmpl);
}

static void test_cmdrun_background_and_group(void **state)
{
    struct rec r;
    (void)state;
    /* the background child keeps the pipe open: the exit is enough */
    char *bg = script("sleep 30 &\necho quick\n");
    double took = run(bg, 5000, 64, false, &r);
    assert_int_equal(r.err, 0);
    assert_string_equal(r.out, "quick\n");
    assert_true(took < 2.0);
    rec_clear(&r);
    /* at the timeout the whole group goes: the grandchild's pid is gone */
    char pid_file[] = "/tmp/mx-cmdrun-pid-XXXXXX";
    int fd = mkstemp(pid_file);
    assert_true(fd >= 0);
    close(fd);
    char *body = mx_xasprintf("sleep 30 &\necho $! > %s\nwait\n", pid_file);
    char *hang = script(body);
    run(hang, 300, 64, false, &r);
    assert_int_equal(r.err, MX_ETIMEDOUT);
    rec_clear(&r);
    FILE *f = fopen(pid_file, "r");
    assert_non_null(f);
    long pid = 0;
    assert_int_equal(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; i++) {
        ev_run(loop, EVRUN_NOWAIT); /* libev reaps */
        gone = kill((pid_t)pid, 0) != 0;
        if (!gone)
            usleep(20000);
    }
    assert_true(gone);
    unlink(pid_file);
    unlink(bg);
    unlink(hang);
    free(body);
    free(bg);
    free(hang);
}

static void test_cmdrun_env(void **state)
{
    struct rec r;
    (void)state;
    setenv("MX_CMDRUN_TEST", "seen", 1);
    run("env", 5000, 65536, false, &r);
    assert_int_equal(r.err, 0);
    assert_non_null(strstr(r.out, "PATH="));
    assert_null(strstr(r.out, "MX_CMDRUN_TEST"));
    rec_clear(&r);
    run("env", 5000, 65536, true, &r);
    assert_non_null(strstr(r.out, "MX_CMDRUN_TEST=seen"));
    rec_clear(&r);
    unsetenv("MX_CMDRUN_TEST");
}

static void test_cmdrun_refused_and_cancelled(void **state)
{
    char why[128] = "";
    struct rec r = {0};
    struct mx_cmdrun *c = NULL;
    (void)state;
    struct mx_cmdrun_opts o = {
        "/nonexistent/mx-cmd --key sekrit", "test command", 1000, 64, false, false};
    assert_int_equal(mx_cmdrun_start(loop, &o, on_done, &r, &c, why, sizeof(why)), MX_ENOTFOUND);
    assert_non_null(strstr(why, "/nonexistent/mx-cmd"));
    assert_null(strstr(why, "sekrit")); /* the arguments may hold a key */
    o.cmd = " \t ";
    assert_int_equal(mx_cmdrun_start(loop, &o, on_done, &r, &c, why, sizeof(why)), MX_EINVAL);
    o.cmd = "sleep 30";
    assert_int_equal(mx_cmdrun_start(loop, &o, on_done, &r, &c, why, sizeof(why)), 0);
    mx_cmdrun_cancel(c);
    mx_cmdrun_cancel(NULL);
    double t0 = now_s();
    while (now_s() - t0 < 0.3)
        ev_run(loop, EVRUN_NOWAIT);
    assert_false(r.done);
}

int main(void)
{
    loop = ev_default_loop(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmdrun_output),  cmocka_unit_test(test_cmdrun_status),
        cmocka_unit_test(test_cmdrun_timeout), cmocka_unit_test(test_cmdrun_background_and_group),
        cmocka_unit_test(test_cmdrun_env),     cmocka_unit_test(test_cmdrun_refused_and_cancelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
