/* SPDX-License-Identifier: MIT */
/*
 * The vault file: set/get/list/rm round trips, the atomic rewrite leaving
 * mode 0600 and no stray files, refusal of a vault open to group or others,
 * malformed files, and `mcplex vault` end to end with stdin redirected.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "cmd_config.h"
#include "err.h"
#include "rand.h"
#include "secret.h"
#include "secret_int.h"
#include "vault.h"

static char tmp_dir[64];
static char vault[128];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A fresh directory per test, so every test starts without a vault. */
static int setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/mx-test-vault-XXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
        return -1;
    snprintf(vault, sizeof(vault), "%s/vault", tmp_dir);
    setenv("HOME", tmp_dir, 1);
    unsetenv("MCPLEX_CONFIG");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (mx_secret_live_cnt() != 0)
        return -1;
    return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

/* Entries of |dir| other than . and .. */
static int dir_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    }
    closedir(d);
    return n;
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void set_ok(const char *name, const char *value)
{
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    int rc = mx_vault_set(vault, name, value, strlen(value), &d);
    if (rc)
        print_error("set %s: %s\n", name, d.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(mode_of(vault), 0600);
}

static void get_eq(const char *name, const char *value)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    int rc = mx_vault_get(vault, name, &s, &d);
    if (rc)
        print_error("get %s: %s\n", name, d.msg);
    assert_int_equal(rc, 0);
    assert_true(mx_secret_equal(s, value, strlen(value)));
    mx_secret_free(s);
}

static void list_eq(const char *const *want, size_t want_cnt)
{
    char **names;
    size_t cnt;
    struct mx_diag d;
    assert_int_equal(mx_vault_list(vault, &names, &cnt, &d), 0);
    assert_int_equal(cnt, want_cnt);
    for (size_t i = 0; i < cnt; i++)
        assert_string_equal(names[i], want[i]);
    mx_vault_names_free(names, cnt);
}

static void test_vault_round_trip(void **state)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    (void)state;
    list_eq(NULL, 0);
    set_ok("files", "cookie-value");
    set_ok("e2b", "k");
    set_ok("client.token-1_x", "t=o/k+e n==");
    get_eq("files", "cookie-value");
    get_eq("e2b", "k");
    get_eq("client.token-1_x", "t=o/k+e n==");
    static const char *const three[] = {"files", "e2b", "client.token-1_x"};
    list_eq(three, 3);

    /* replacing keeps the order */
    set_ok("files", "new\xc3\xa9value");
    get_eq("files", "new\xc3\xa9value");
    list_eq(three, 3);

    assert_int_equal(mx_vault_remove(vault, "e2b", &d), 0);
    assert_int_equal(mode_of(vault), 0600);
    static const char *const two[] = {"files", "client.token-1_x"};
    list_eq(two, 2);
    assert_int_equal(mx_vault_get(vault, "e2b", &s, &d), MX_ENOTFOUND);
    assert_null(s);
    assert_string_equal(d.file, vault);
    assert_non_null(strstr(d.msg, "no entry 'e2b' in the vault"));
    assert_int_equal(mx_vault_remove(vault, "e2b", &d), MX_ENOTFOUND);
    /* the rewrite left no temporary file behind */
    assert_int_equal(dir_entries(tmp_dir), 1);
}

/* |len| bytes from 0x01..0xfa without CR or LF, then a NUL. */
static void fill_value(char *v, int len)
{
    for (int i = 0; i < len; i++) {
        v[i] = (char)(1 + (i * 37 + len) % 250);
        if (v[i] == '\n' || v[i] == '\r')
            v[i] = 'x';
    }
    v[len] = '\0';
}

static void test_vault_value_lengths(void **state)
{
    char name[16], value[80];
    (void)state;
    /* every base64 padding case, and bytes that are not text */
    for (int len = 1; len <= 70; len++) {
        fill_value(value, len);
        snprintf(name, sizeof(name), "v%d", len);
        set_ok(name, value);
    }
    for (int len = 1; len <= 70; len++) {
        fill_value(value, len);
        snprintf(name, sizeof(name), "v%d", len);
        get_eq(name, value);
    }
}

static void test_vault_creates_private_dir(void **state)
{
    struct mx_diag d;
    char dir[160], path[200];
    (void)state;
    snprintf(dir, sizeof(dir), "%s/a/b", tmp_dir);
    snprintf(path, sizeof(path), "%s/vault", dir);
    assert_int_equal(mx_vault_set(path, "x", "1", 1, &d), 0);
    assert_int_equal(mode_of(dir), 0700);
    snprintf(dir, sizeof(dir), "%s/a", tmp_dir);
    assert_int_equal(mode_of(dir), 0700);
    assert_int_equal(mode_of(path), 0600);
    /* an existing directory keeps its mode */
    assert_int_equal(chmod(tmp_dir, 0755), 0);
    set_ok("y", "2");
    assert_int_equal(mode_of(tmp_dir), 0755);
}

static void test_vault_refuses_open_mode(void **state)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    char **names = NULL;
    size_t cnt = 0;
    (void)state;
    set_ok("a", "secret-a");
    assert_int_equal(chmod(vault, 0644), 0);
    assert_int_equal(mx_vault_get(vault, "a", &s, &d), MX_EPERM);
    assert_null(s);
    assert_string_equal(d.file, vault);
    assert_string_equal(d.msg, "vault is readable by group or others (mode 0644); chmod 600 it");
    assert_int_equal(mx_vault_list(vault, &names, &cnt, &d), MX_EPERM);
    assert_int_equal(mx_vault_set(vault, "b", "x", 1, &d), MX_EPERM);
    assert_int_equal(mx_vault_remove(vault, "a", &d), MX_EPERM);
    /* refused, not repaired */
    assert_int_equal(mode_of(vault), 0644);
    assert_int_equal(chmod(vault, 0660), 0);
    assert_int_equal(mx_vault_get(vault, "a", &s, &d), MX_EPERM);
    assert_non_null(strstr(d.msg, "(mode 0660)"));
    assert_int_equal(chmod(vault, 0600), 0);
    get_eq("a", "secret-a");

    assert_int_equal(mx_vault_get(tmp_dir, "a", &s, &d), MX_EPERM);
    assert_non_null(strstr(d.msg, "not a regular file"));
}

static void test_vault_names_and_values(void **state)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    char long_name[80];
    (void)state;
    memset(long_name, 'n', 64);
    long_name[64] = '\0';
    set_ok(long_name, "v");
    get_eq(long_name, "v");
    long_name[64] = 'n';
    long_name[65] = '\0';
    const char *const bad[] = {"", "a/b", "a b", "a=b", "\xc3\xa9", long_name};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mx_vault_set(vault, bad[i], "v", 1, &d), MX_EINVAL);
        assert_non_null(strstr(d.msg, "invalid vault entry name"));
        assert_int_equal(mx_vault_get(vault, bad[i], &s, &d), MX_EINVAL);
        assert_int_equal(mx_vault_remove(vault, bad[i], &d), MX_EINVAL);
    }
    assert_int_equal(mx_vault_set(vault, NULL, "v", 1, &d), MX_EINVAL);
    assert_int_equal(mx_vault_set(vault, "e", "", 0, &d), MX_EINVAL);
    assert_non_null(strstr(d.msg, "the value is empty"));
    assert_int_equal(mx_vault_set(vault, "e", "a\nb", 3, &d), MX_EINVAL);
    assert_non_null(strstr(d.msg, "line break"));
    assert_int_equal(mx_vault_set(vault, "e", "a\0b", 3, &d), MX_EINVAL);
    assert_non_null(strstr(d.msg, "NUL"));
    assert_int_equal(mx_vault_set(vault, "e", NULL, 0, &d), MX_EINVAL);
    assert_false(mx_vault_name_is_valid(NULL));
    assert_true(mx_vault_name_is_valid("A-z_0.9"));
}

static void test_vault_malformed_file(void **state)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    (void)state;
    write_text(vault, "# comment\n\nok=YQ==\nbad line\n", 0600);
    assert_int_equal(mx_vault_get(vault, "ok", &s, &d), MX_EINVAL);
    assert_string_equal(d.file, vault);
    assert_int_equal(d.line, 4);
    assert_non_null(strstr(d.msg, "malformed vault entry"));
    write_text(vault, "ok=YQ==\r\nok=Yg==\n", 0600);
    assert_int_equal(mx_vault_get(vault, "ok", &s, &d), MX_EINVAL);
    assert_int_equal(d.line, 2);
    assert_non_null(strstr(d.msg, "duplicate vault entry 'ok'"));
    static const char *const bad_b64[] = {"x=YQ=\n",  "x=Y===\n", "x=\n",
                                          "x=YQ=a\n", "x=Y!==\n", "=YQ==\n"};
    for (size_t i = 0; i < sizeof(bad_b64) / sizeof(bad_b64[0]); i++) {
        write_text(vault, bad_b64[i], 0600);
        assert_int_equal(mx_vault_get(vault, "x", &s, &d), MX_EINVAL);
        assert_int_equal(d.line, 1);
    }
    /* decodes, but to a value no header may carry */
    write_text(vault, "x=YQpi\n", 0600);
    assert_int_equal(mx_vault_get(vault, "x", &s, &d), MX_EINVAL);
    assert_non_null(strstr(d.msg, "line break"));
    /* CRLF files written by hand are fine, and a rewrite drops comments */
    write_text(vault, "# mine\r\nx=YWJj\r\n", 0600);
    get_eq("x", "abc");
    set_ok("y", "d");
    get_eq("x", "abc");
    assert_null(s);
}

static void test_vault_missing_file(void **state)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    (void)state;
    assert_int_equal(mx_vault_get(vault, "x", &s, &d), MX_ENOTFOUND);
    assert_non_null(strstr(d.msg, "vault does not exist"));
    assert_int_equal(mx_vault_remove(vault, "x", &d), MX_ENOTFOUND);
    list_eq(NULL, 0);
    assert_int_equal(dir_entries(tmp_dir), 0);
}

static void test_vault_symlink_is_rewritten_in_place(void **state)
{
    char real[160];
    (void)state;
    snprintf(real, sizeof(real), "%s/real-vault", tmp_dir);
    write_text(real, "a=YQ==\n", 0600);
    assert_int_equal(symlink(real, vault), 0);
    set_ok("b", "bb");
    struct stat st;
    assert_int_equal(lstat(vault, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    get_eq("a", "a");
    get_eq("b", "bb");
    assert_int_equal(mode_of(real), 0600);
}

/* Runs mx_cmd_vault with stdin from |input| and stdout/stderr into |out|. */
static int run_vault(const char *input, char *out, size_t out_cap, ...)
{
    char *argv[16], in_path[160], out_path[160];
    int argc = 0;
    va_list ap;
    va_start(ap, out_cap);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 15;)
        argv[argc++] = strdup(a);
    va_end(ap);
    argv[argc] = NULL;

    snprintf(in_path, sizeof(in_path), "%s/.stdin", tmp_dir);
    snprintf(out_path, sizeof(out_path), "%s/.out", tmp_dir);
    write_text(in_path, input, 0600);
    fflush(stdout);
    fflush(stderr);
    int saved[3] = {dup(0), dup(1), dup(2)};
    int in = open(in_path, O_RDONLY);
    int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(in >= 0 && o >= 0);
    dup2(in, 0);
    dup2(o, 1);
    dup2(o, 2);
    close(in);
    close(o);
    int status = mx_cmd_vault(argc, argv);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 3; i++) {
        dup2(saved[i], i);
        close(saved[i]);
    }
    int fd = open(out_path, O_RDONLY);
    ssize_t n = read(fd, out, out_cap - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    unlink(in_path);
    unlink(out_path);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return status;
}

static void test_vault_command(void **state)
{
    char out[4096], canary[33], input[64], cfg[200], text[300];
    (void)state;
    mx_rand_hex(canary, sizeof(canary));
    snprintf(input, sizeof(input), "%s\n", canary);
    assert_int_equal(
        run_vault(input, out, sizeof(out), "vault", "--vault", vault, "set", "tok", NULL), 0);
    assert_null(strstr(out, canary));
    get_eq("tok", canary);
    assert_int_equal(
        run_vault("v2\r\n", out, sizeof(out), "vault", "set", "--vault", vault, "other", NULL), 0);
    get_eq("other", "v2");
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "list", "--vault=", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "list", "--vault", vault, NULL), 0);
    assert_string_equal(out, "tok\nother\n");

    /* the vault named by a config's [proxy] vault, given with -c */
    snprintf(cfg, sizeof(cfg), "%s/mcplex.toml", tmp_dir);
    snprintf(text, sizeof(text), "[proxy]\nvault = \"%s\"\n", vault);
    write_text(cfg, text, 0644);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "-c", cfg, "rm", "other", NULL), 0);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "list", "-c", cfg, NULL), 0);
    assert_string_equal(out, "tok\n");
    /* ... or found through $MCPLEX_CONFIG */
    setenv("MCPLEX_CONFIG", cfg, 1);
    assert_int_equal(run_vault("x", out, sizeof(out), "vault", "set", "found", NULL), 0);
    get_eq("found", "x");
    unsetenv("MCPLEX_CONFIG");
    /* no config anywhere: the default under $HOME */
    assert_int_equal(run_vault("d", out, sizeof(out), "vault", "set", "dflt", NULL), 0);
    snprintf(text, sizeof(text), "%s/.config/mcplex/vault", tmp_dir);
    assert_int_equal(mode_of(text), 0600);

    /* failures and usage */
    assert_int_equal(run_vault("\n", out, sizeof(out), "vault", "--vault", vault, "set", "e", NULL),
                     1);
    assert_non_null(strstr(out, "refusing an empty value"));
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "--vault", vault, "rm", "nope", NULL),
                     1);
    assert_non_null(strstr(out, "no entry 'nope'"));
    write_text(cfg, "[proxy]\nvault = 1\n", 0644);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "-c", cfg, "list", NULL), 1);
    assert_non_null(strstr(out, "mcplex.toml:2:9:"));
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "--help", NULL), 0);
    assert_non_null(strstr(out, "usage: mcplex vault"));
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "set", "--help", NULL), 0);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "set", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "set", "a", "b", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "list", "x", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "get", "x", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "--bogus", "list", NULL), 2);
    assert_int_equal(run_vault("", out, sizeof(out), "vault", "list", "--vault", NULL), 2);
    assert_int_equal(
        run_vault("v", out, sizeof(out), "vault", "--vault", vault, "set", "a/b", NULL), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vault_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_value_lengths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_creates_private_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_refuses_open_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_names_and_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_malformed_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_symlink_is_rewritten_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vault_command, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
