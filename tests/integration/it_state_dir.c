/* SPDX-License-Identifier: MIT */
/*
 * `mcplex serve`, `mcplex stdio` and their state_dir: a missing one is made
 * 0700 and the command starts; one that group or others can write to, or
 * that belongs to another user, is refused at start with a message naming
 * it and the fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "harness.h"

/* A refusal comes before anything is bound; a start that was not refused is killed then. */
#define RUN_TIMEOUT_MS 10000

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

/* A plain-HTTP config on a free port with |state| as state_dir; its path. */
static char *config(const char *state, int *port)
{
    *port = mx_it_free_port();
    assert_true(*port > 0);
    char *cfg = mx_xasprintf("[listen]\n"
                             "address = \"127.0.0.1:%d\"\n"
                             "tls = false\n"
                             "[proxy]\n"
                             "state_dir = \"%s\"\n",
                             *port, state);
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    free(cfg);
    return path;
}

/* `mcplex <cmd>` (serve, or stdio with no input) run to its end; its exit
 * status and output. */
static int run(const char *name, const char *cmd, const char *cfg, char **out)
{
    char *mcplex = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {mcplex, cmd, "-c", cfg, NULL};
    int rc = mx_it_run(name, argv, NULL, RUN_TIMEOUT_MS, out);
    free(mcplex);
    return rc;
}

/* `mcplex serve` and `mcplex stdio` must each refuse |state|: exit 1, |why|
 * in the output. */
static void assert_refused(const char *name, const char *cfg, const char *state, const char *why)
{
    static const char *const cmds[] = {"serve", "stdio"};
    for (size_t i = 0; i < 2; i++) {
        char *label = mx_xasprintf("%s-%s", cmds[i], name);
        char *out = NULL;
        int rc = run(label, cmds[i], cfg, &out);
        if (rc != 1)
            fail_msg("%s with state_dir %s: exit %d, want 1:\n%s", cmds[i], state, rc, out);
        assert_contains(out, "state_dir");
        assert_contains(out, state);
        assert_contains(out, why);
        free(out);
        free(label);
    }
}

static void test_it_state_dir_refused(void **state)
{
    (void)state;
    int port;
    char *dir = mx_it_path("state");
    char *cfg = config(dir, &port);
    assert_int_equal(mkdir(dir, 0700), 0);

    assert_int_equal(chmod(dir, 0770), 0);
    assert_refused("serve-group", cfg, dir, "writable by group or others (mode 0770)");
    assert_int_equal(chmod(dir, 0703), 0);
    assert_refused("serve-others", cfg, dir, "writable by group or others (mode 0703)");
    assert_int_equal(chmod(dir, 0700), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 1, 1), 0);
        assert_refused("serve-owner", cfg, dir, "owned by uid 1, not by this user");
    }
    free(cfg);
    free(dir);
    mx_it_pass();
}

static void test_it_state_dir_made(void **state)
{
    (void)state;
    struct stat st;
    int port;
    char *dir = mx_it_path("new/state");
    char *cfg = config(dir, &port);
    assert_true(mx_it_start_mcplex(cfg, port) > 0);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(st.st_uid, geteuid());

    /* mcplex stdio makes its missing state_dir the same way */
    char *dir2 = mx_it_path("new2/state");
    int port2;
    char *cfg2 = config(dir2, &port2);
    char *out = NULL;
    int rc = run("stdio-made", "stdio", cfg2, &out);
    if (rc != 0)
        fail_msg("stdio with a missing state_dir: exit %d, want 0:\n%s", rc, out);
    if (stat(dir2, &st) != 0)
        fail_msg("stdio did not make its state_dir %s:\n%s", dir2, out);
    assert_int_equal(st.st_mode & 07777, 0700);
    free(out);
    free(cfg2);
    free(dir2);
    free(cfg);
    free(dir);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_it_state_dir_refused, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_state_dir_made, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
