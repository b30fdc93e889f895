/* SPDX-License-Identifier: MIT */
/*
 * stdio upstream processes on the loop, with small real commands (sh, cat,
 * env): lines both ways with CRLF and a last line without LF, the exact
 * environment given, the working directory, the exit status, pause and
 * resume in order, a stdin queue with a cap that never blocks the loop, a
 * closed child's whole process group ended, and a command that does not
 * exist refused without a callback. Every wait is bounded.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "alloc.h"
#include "child.h"
#include "err.h"

#define MAX_LINES 4096

struct rec {
    struct mx_child *c;
    char *lines[MAX_LINES];
    size_t cnt;
    bool pause_each; /* answer every line with MX_EAGAIN */
    bool exited;
    int status;
    int drains;
    bool close_on_exit;
};

static struct ev_loop *loop;

static void rec_clear(struct rec *r)
{
    for (size_t i = 0; i < r->cnt; i++)
        free(r->lines[i]);
    r->cnt = 0;
}

static int on_line(struct mx_child *c, struct mx_str line, void *data)
{
    struct rec *r = data;
    (void)c;
    assert_true(r->cnt < MAX_LINES);
    r->lines[r->cnt] = mx_xstrndup(line.p, line.len);
    assert_non_null(r->lines[r->cnt]);
    r->cnt++;
    return r->pause_each ? MX_EAGAIN : 0;
}

static void on_drain(struct mx_child *c, void *data)
{
    struct rec *r = data;
    (void)c;
    r->drains++;
}

static void on_exit_cb(struct mx_child *c, int status, void *data)
{
    struct rec *r = data;
    assert_false(r->exited);
    r->exited = true;
    r->status = status;
    if (r->close_on_exit) {
        mx_child_close(c); /* inside its own callback */
        r->c = NULL;
    }
}

static const struct mx_child_cbs cbs = {on_line, on_drain, on_exit_cb};

static void timeout_cb(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(l, EVBREAK_ONE);
}

struct cond {
    bool (*done)(void *);
    void *arg;
};

static void tick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
    const struct cond *c = w->data;
    (void)revents;
    if (c->done(c->arg))
        ev_break(l, EVBREAK_ONE);
}

/* Run the loop until |done(arg)| or |limit_s| passed; returns done(arg). */
static bool run_until(bool (*done)(void *), void *arg, double limit_s)
{
    ev_timer limit, tick;
    struct cond c = {done, arg};
    if (done(arg))
        return true;
    ev_timer_init(&limit, timeout_cb, limit_s, 0.0);
    ev_timer_init(&tick, tick_cb, 0.01, 0.01);
    tick.data = &c;
    ev_timer_start(loop, &limit);
    ev_timer_start(loop, &tick);
    ev_run(loop, 0);
    ev_timer_stop(loop, &limit);
    ev_timer_stop(loop, &tick);
    return done(arg);
}

static bool is_exited(void *arg)
{
    return ((struct rec *)arg)->exited;
}

static bool none_live(void *arg)
{
    (void)arg;
    return mx_child_live_cnt() == 0;
}

static struct mx_child *start(const char *const *argv, const char *cwd, char *const *envp,
                              size_t in_cap, struct rec *r)
{
    struct mx_child_opts o = {0};
    char why[256];
    o.name = "t";
    o.argv = (char *const *)(uintptr_t)argv;
    o.cwd = cwd;
    o.envp = envp;
    o.max_line = 1024;
    o.in_cap = in_cap;
    int rc = mx_child_start(loop, &o, &cbs, r, &r->c, why, sizeof(why));
    if (rc)
        fail_msg("start: %s", why);
    return r->c;
}

static void finish(struct rec *r)
{
    mx_child_close(r->c);
    r->c = NULL;
    assert_true(run_until(none_live, NULL, 10.0));
    rec_clear(r);
}

static void test_child_lines_and_exit(void **state)
{
    static const char *const argv[] = {
        "/bin/sh", "-c", "printf 'one\\r\\ntwo\\n\\nthree'; echo oops >&2; exit 3", NULL};
    struct rec r = {0};
    (void)state;
    start(argv, NULL, NULL, 4096, &r);
    assert_true(mx_child_pid(r.c) > 0);
    assert_true(run_until(is_exited, &r, 10.0));
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 3);
    /* every line, the empty one and the last one without LF, before the exit */
    assert_int_equal(r.cnt, 4);
    assert_string_equal(r.lines[0], "one");
    assert_string_equal(r.lines[1], "two");
    assert_string_equal(r.lines[2], "");
    assert_string_equal(r.lines[3], "three");
    assert_int_equal(mx_child_write(r.c, "x", 1), MX_ECLOSED);
    finish(&r);
}

static bool has_lines(void *arg)
{
    struct rec *r = arg;
    return r->cnt >= 3;
}

static void test_child_echo_through_cat(void **state)
{
    static const char *const argv[] = {"cat", NULL};
    static char path[] = "PATH=/usr/bin:/bin";
    char *envp[] = {path, NULL};
    struct rec r = {0};
    (void)state;
    start(argv, NULL, envp, 4096, &r);
    assert_int_equal(mx_child_write(r.c, "{\"a\":1}", 7), 0);
    assert_int_equal(mx_child_write(r.c, "second", 6), 0);
    assert_int_equal(mx_child_write(r.c, "", 0), 0);
    assert_true(run_until(has_lines, &r, 10.0));
    assert_string_equal(r.lines[0], "{\"a\":1}");
    assert_string_equal(r.lines[1], "second");
    assert_string_equal(r.lines[2], "");
    assert_false(r.exited);
    /* closing ends it: stdin closed, cat exits; no callback after close */
    finish(&r);
    assert_false(r.exited);
}

static void test_child_exact_env_and_cwd(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "pwd; /usr/bin/env", NULL};
    static char a[] = "ONLY_THIS=1";
    static char b[] = "AND_THIS=two words";
    char *envp[] = {a, b, NULL};
    struct rec r = {0};
    (void)state;
    start(argv, "/", envp, 4096, &r);
    assert_true(run_until(is_exited, &r, 10.0));
    assert_int_equal(WEXITSTATUS(r.status), 0);
    assert_string_equal(r.lines[0], "/");
    /* sh adds PWD (and maybe more) to what it exports: the two given ones
     * are there, nothing of the test's own environment is */
    bool saw_a = false, saw_b = false;
    for (size_t i = 1; i < r.cnt; i++) {
        saw_a = saw_a || strcmp(r.lines[i], a) == 0;
        saw_b = saw_b || strcmp(r.lines[i], b) == 0;
        assert_true(strncmp(r.lines[i], "HOME=", 5) != 0);
        assert_true(strncmp(r.lines[i], "MX_CHILD_TEST_STRAY=", 20) != 0);
    }
    assert_true(saw_a && saw_b);
    finish(&r);
}

static void test_child_env_exactly(void **state)
{
    /* env itself adds nothing: its output is exactly envp */
    static const char *const argv[] = {"/usr/bin/env", NULL};
    static char a[] = "X=1";
    char *envp[] = {a, NULL};
    struct rec r = {0};
    (void)state;
    start(argv, NULL, envp, 4096, &r);
    assert_true(run_until(is_exited, &r, 10.0));
    assert_int_equal(r.cnt, 1);
    assert_string_equal(r.lines[0], "X=1");
    finish(&r);
}

static bool cnt_at_least_1(void *arg)
{
    return ((struct rec *)arg)->cnt >= 1;
}

static size_t want_cnt;

static bool cnt_reached(void *arg)
{
    return ((struct rec *)arg)->cnt >= want_cnt;
}

static bool never(void *arg)
{
    (void)arg;
    return false;
}

static void test_child_pause_resume(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c",
                                       "i=0; while [ $i -lt 50 ]; do "
                                       "echo line$i; i=$((i+1)); done",
                                       NULL};
    struct rec r = {0};
    (void)state;
    r.pause_each = true;
    start(argv, NULL, NULL, 4096, &r);
    assert_true(run_until(cnt_at_least_1, &r, 10.0));
    /* paused: no more lines however long the loop runs, and the exit of
     * the process (long done) waits for the owner to take its output */
    run_until(never, NULL, 1.5);
    assert_int_equal(r.cnt, 1);
    assert_false(r.exited);
    for (size_t i = 1; i < 50; i++) {
        mx_child_resume(r.c);
        assert_int_equal(r.cnt, i); /* never inside the call */
        want_cnt = i + 1;
        assert_true(run_until(cnt_reached, &r, 5.0));
        run_until(never, NULL, 0.002);
        assert_int_equal(r.cnt, i + 1); /* one line per resume */
    }
    assert_int_equal(r.cnt, 50);
    for (int i = 0; i < 50; i++) {
        char want[16];
        snprintf(want, sizeof(want), "line%d", i);
        assert_string_equal(r.lines[i], want);
    }
    mx_child_resume(r.c);
    assert_true(run_until(is_exited, &r, 10.0));
    finish(&r);
}

static void test_child_input_cap_never_blocks(void **state)
{
    /* a process that never reads its stdin */
    static const char *const argv[] = {"sleep", "30", NULL};
    static char path[] = "PATH=/usr/bin:/bin";
    char *envp[] = {path, NULL};
    struct rec r = {0};
    char chunk[4000];
    (void)state;
    memset(chunk, 'x', sizeof(chunk));
    start(argv, NULL, envp, 256 * 1024, &r);
    int rc = 0;
    size_t writes = 0;
    while (rc == 0 && writes < 1000) {
        rc = mx_child_write(r.c, chunk, sizeof(chunk));
        writes++;
    }
    /* the pipe took its share, the queue filled to its cap, nothing blocked */
    assert_int_equal(rc, MX_ELIMIT);
    assert_true(mx_child_queued(r.c) > 200 * 1024);
    assert_true(mx_child_queued(r.c) <= 256 * 1024);
    assert_int_equal(r.drains, 0);
    pid_t pid = mx_child_pid(r.c);
    /* closing a process that ignores EOF: SIGTERM ends it */
    finish(&r);
    assert_true(kill(pid, 0) != 0 && errno == ESRCH);
}

static void test_child_group_killed(void **state)
{
    /* the child starts a grandchild that ignores SIGTERM and outlives it */
    static const char *const argv[] = {
        "/bin/sh", "-c", "(trap '' TERM; exec sleep 60) & echo $!; exec sleep 60", NULL};
    static char path[] = "PATH=/usr/bin:/bin";
    char *envp[] = {path, NULL};
    struct rec r = {0};
    (void)state;
    start(argv, NULL, envp, 4096, &r);
    assert_true(run_until(cnt_at_least_1, &r, 10.0));
    pid_t grandchild = (pid_t)strtol(r.lines[0], NULL, 10);
    assert_true(grandchild > 0);
    assert_int_equal(getpgid(grandchild), mx_child_pid(r.c));
    /* SIGTERM, then SIGKILL to the whole group */
    finish(&r);
    for (int i = 0; i < 100 && kill(grandchild, 0) == 0; i++)
        usleep(20 * 1000); /* reparented: its zombie is reaped by init */
    assert_true(kill(grandchild, 0) != 0 && errno == ESRCH);
}

static void test_child_close_on_exit_inside_callback(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "echo bye", NULL};
    struct rec r = {0};
    (void)state;
    r.close_on_exit = true;
    start(argv, NULL, NULL, 4096, &r);
    assert_true(run_until(is_exited, &r, 10.0));
    assert_null(r.c);
    assert_true(run_until(none_live, NULL, 10.0));
    assert_int_equal(r.cnt, 1);
    rec_clear(&r);
}

static void test_child_not_found(void **state)
{
    static const char *const argv[] = {"mcplex-no-such-command-xyz", NULL};
    static const char *const empty[] = {"", NULL};
    struct mx_child_opts o = {0};
    struct mx_child *c = NULL;
    struct rec r = {0};
    char why[256] = "";
    (void)state;
    o.name = "t";
    o.argv = (char *const *)(uintptr_t)argv;
    o.max_line = 1024;
    o.in_cap = 1024;
    assert_int_equal(mx_child_start(loop, &o, &cbs, &r, &c, why, sizeof(why)), MX_ENOTFOUND);
    assert_null(c);
    assert_non_null(strstr(why, "mcplex-no-such-command-xyz"));
    o.argv = (char *const *)(uintptr_t)empty;
    assert_int_equal(mx_child_start(loop, &o, &cbs, &r, &c, why, sizeof(why)), MX_ENOTFOUND);
    /* a working directory that does not exist */
    static const char *const sh[] = {"/bin/sh", "-c", "true", NULL};
    o.argv = (char *const *)(uintptr_t)sh;
    o.cwd = "/nonexistent/mcplex-dir";
    assert_int_equal(mx_child_start(loop, &o, &cbs, &r, &c, why, sizeof(why)), MX_ENOTFOUND);
    assert_non_null(strstr(why, "/nonexistent/mcplex-dir"));
    assert_int_equal(mx_child_live_cnt(), 0);
    assert_int_equal(r.cnt, 0);
    assert_false(r.exited);
}

static void test_child_shutdown(void **state)
{
    static const char *const argv[] = {"sleep", "30", NULL};
    static char path[] = "PATH=/usr/bin:/bin";
    char *envp[] = {path, NULL};
    struct rec a = {0}, b = {0};
    (void)state;
    start(argv, NULL, envp, 4096, &a);
    start(argv, NULL, envp, 4096, &b);
    pid_t pa = mx_child_pid(a.c), pb = mx_child_pid(b.c);
    assert_int_equal(mx_child_live_cnt(), 2);
    /* at exit: every child ended, within the bound */
    mx_child_shutdown(loop, 5.0);
    assert_int_equal(mx_child_live_cnt(), 0);
    assert_true(kill(pa, 0) != 0 && errno == ESRCH);
    assert_true(kill(pb, 0) != 0 && errno == ESRCH);
}

static int setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN); /* as mcplex does; the children get it back */
    setenv("MX_CHILD_TEST_STRAY", "must-not-pass", 1);
    loop = ev_default_loop(0);
    return loop ? 0 : -1;
}

static int teardown_each(void **state)
{
    (void)state;
    assert_int_equal(mx_child_live_cnt(), 0);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_child_lines_and_exit, teardown_each),
        cmocka_unit_test_teardown(test_child_echo_through_cat, teardown_each),
        cmocka_unit_test_teardown(test_child_exact_env_and_cwd, teardown_each),
        cmocka_unit_test_teardown(test_child_env_exactly, teardown_each),
        cmocka_unit_test_teardown(test_child_pause_resume, teardown_each),
        cmocka_unit_test_teardown(test_child_input_cap_never_blocks, teardown_each),
        cmocka_unit_test_teardown(test_child_group_killed, teardown_each),
        cmocka_unit_test_teardown(test_child_close_on_exit_inside_callback, teardown_each),
        cmocka_unit_test_teardown(test_child_not_found, teardown_each),
        cmocka_unit_test_teardown(test_child_shutdown, teardown_each),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
