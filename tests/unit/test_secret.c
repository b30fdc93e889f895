/* SPDX-License-Identifier: MIT */
/*
 * Secret references (env:, file:, cmd:, vault:), the file permission rule,
 * value normalisation, and the operations on a secret. A random canary is the
 * value throughout; no diagnostic may ever contain it.
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/crypto.h>

#include "err.h"
#include "rand.h"
#include "secret.h"
#include "secret_int.h"
#include "secret_ref.h"
#include "vault.h"

static char tmp_dir[64];
static char canary[33];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/mx-test-secret-XXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
        return -1;
    setenv("HOME", tmp_dir, 1);
    mx_rand_hex(canary, sizeof(canary));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A path in the test directory, by value so that nothing overwrites it. */
struct path {
    char s[256];
};

static struct path tmp_path(const char *name)
{
    struct path p;
    snprintf(p.s, sizeof(p.s), "%s/%s", tmp_dir, name);
    return p;
}

static void write_file(const char *path, const char *p, size_t len, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    write_file(path, text, strlen(text), mode);
}

/* Resolve |ref| expecting |want_rc|; the diagnostic must not hold the canary. */
static struct mx_secret *resolve(const char *ref, int want_rc, const char *want_msg)
{
    struct mx_secret *s = NULL;
    struct mx_diag d;
    memset(&d, 0, sizeof(d));
    int rc = mx_secret_resolve(ref, tmp_path("vault").s, NULL, &s, &d);
    if (rc != want_rc || (want_msg && strstr(d.msg, want_msg) == NULL))
        print_error("%s: rc %d (want %d), msg \"%s\" (want \"%s\")\n", ref, rc, want_rc, d.msg,
                    want_msg ? want_msg : "");
    assert_int_equal(rc, want_rc);
    if (want_msg)
        assert_non_null(strstr(d.msg, want_msg));
    assert_null(strstr(d.msg, canary));
    assert_null(strstr(d.file, canary));
    if (rc)
        assert_null(s);
    else
        assert_non_null(s);
    return s;
}

static void expect_canary(const char *ref)
{
    struct mx_secret *s = resolve(ref, 0, NULL);
    assert_true(mx_secret_equal(s, canary, strlen(canary)));
    mx_secret_free(s);
}

static void test_secret_env(void **state)
{
    char v[64];
    (void)state;
    setenv("MX_S_ENV", canary, 1);
    expect_canary("env:MX_S_ENV");
    snprintf(v, sizeof(v), "%s\n", canary);
    setenv("MX_S_ENV", v, 1);
    expect_canary("env:MX_S_ENV");
    unsetenv("MX_S_UNSET");
    resolve("env:MX_S_UNSET", MX_ENOTFOUND,
            "env:MX_S_UNSET: environment variable MX_S_UNSET is not set");
    setenv("MX_S_EMPTY", "", 1);
    resolve("env:MX_S_EMPTY", MX_EINVAL, "environment variable MX_S_EMPTY is empty");
    snprintf(v, sizeof(v), "a\n%s", canary);
    setenv("MX_S_ENV", v, 1);
    resolve("env:MX_S_ENV", MX_EINVAL, "env:MX_S_ENV: the value contains a line break");
    snprintf(v, sizeof(v), "%s\r", canary);
    setenv("MX_S_ENV", v, 1);
    resolve("env:MX_S_ENV", MX_EINVAL, "line break");
}

static void test_secret_file(void **state)
{
    char ref[300], v[64];
    (void)state;
    struct path path_p = tmp_path("sec");
    const char *path = path_p.s;
    snprintf(ref, sizeof(ref), "file:%s", path);

    write_text(path, canary, 0600);
    expect_canary(ref);
    snprintf(v, sizeof(v), "%s\n", canary);
    write_text(path, v, 0400);
    expect_canary(ref);
    snprintf(v, sizeof(v), "%s\r\n", canary);
    write_text(path, v, 0600);
    expect_canary(ref);
    expect_canary("file:~/sec");

    /* only one trailing line break is dropped */
    snprintf(v, sizeof(v), "%s\n\n", canary);
    write_text(path, v, 0600);
    resolve(ref, MX_EINVAL, "the value contains a line break");
    snprintf(v, sizeof(v), "%s\nsecond line", canary);
    write_text(path, v, 0600);
    resolve(ref, MX_EINVAL, "line break");
    write_file(path, "a\0b", 3, 0600);
    resolve(ref, MX_EINVAL, "the value contains a NUL byte");
    write_text(path, "", 0600);
    resolve(ref, MX_EINVAL, "the value is empty");
    write_text(path, "\n", 0600);
    resolve(ref, MX_EINVAL, "the value is empty");

    size_t big = 64 * 1024 + 1;
    char *buf = malloc(big);
    assert_non_null(buf);
    memset(buf, 'x', big);
    write_file(path, buf, big - 1, 0600);
    struct mx_secret *s = resolve(ref, 0, NULL);
    mx_secret_free(s);
    write_file(path, buf, big, 0600);
    resolve(ref, MX_ELIMIT, "larger than");
    free(buf);
}

static void test_secret_file_refused_when_open_to_others(void **state)
{
    char ref[300], want[512];
    (void)state;
    struct path path_p = tmp_path("shared");
    const char *path = path_p.s;
    snprintf(ref, sizeof(ref), "file:%s", path);
    write_text(path, canary, 0644);
    snprintf(want, sizeof(want),
             "file:%s: secret file is readable by group or others (mode 0644); chmod 600 it", path);
    resolve(ref, MX_EPERM, want);
    write_text(path, canary, 0640);
    resolve(ref, MX_EPERM, "readable by group or others (mode 0640)");
    write_text(path, canary, 0604);
    resolve(ref, MX_EPERM, "(mode 0604)");
    write_text(path, canary, 0620);
    resolve(ref, MX_EPERM, "accessible by group or others (mode 0620)");
    write_text(path, canary, 0601);
    resolve(ref, MX_EPERM, "(mode 0601)");

    resolve("file:/nonexistent/mx/secret", MX_ENOTFOUND,
            "file:/nonexistent/mx/secret: cannot open secret file: No such file or directory");
    snprintf(ref, sizeof(ref), "file:%s", tmp_dir);
    chmod(tmp_dir, 0700);
    resolve(ref, MX_EPERM, "secret file is not a regular file");
}

/* A relative file: path is taken in the directory given (a config's), else
 * the working directory; a failure names the absolute path it tried. */
static void test_secret_file_relative(void **state)
{
    char cwd[1024], want[512];
    struct mx_secret *s = NULL;
    struct mx_diag d;
    (void)state;
    memset(&d, 0, sizeof(d));
    assert_int_equal(mkdir(tmp_path("rel").s, 0700), 0);
    write_text(tmp_path("rel/tok").s, canary, 0600);
    assert_int_equal(mx_secret_resolve("file:tok", NULL, tmp_path("rel").s, &s, &d), 0);
    assert_true(mx_secret_equal(s, canary, strlen(canary)));
    mx_secret_free(s);
    assert_int_equal(mx_secret_resolve("file:./tok", NULL, tmp_path("rel").s, &s, &d), 0);
    mx_secret_free(s);

    assert_int_equal(mx_secret_resolve("file:gone", NULL, tmp_path("rel").s, &s, &d), MX_ENOTFOUND);
    snprintf(want, sizeof(want), "file:gone: cannot open secret file %s: No such file",
             tmp_path("rel/gone").s);
    if (strstr(d.msg, want) == NULL)
        fail_msg("\"%s\" lacks \"%s\"", d.msg, want);
    assert_null(strstr(d.msg, canary));

    /* no directory: the working one */
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(tmp_path("rel").s), 0);
    int rc = mx_secret_resolve("file:tok", NULL, NULL, &s, &d);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    mx_secret_free(s);
}

static void test_secret_cmd(void **state)
{
    char ref[300], script[512];
    (void)state;
    snprintf(ref, sizeof(ref), "cmd:echo %s", canary);
    expect_canary(ref);
    snprintf(ref, sizeof(ref), "cmd:printf  %%s \t %s", canary);
    expect_canary(ref);
    /* no shell: quotes and $ reach the program as they are */
    struct mx_secret *s = resolve("cmd:echo '$HOME'", 0, NULL);
    assert_true(mx_secret_equal(s, "'$HOME'", 7));
    mx_secret_free(s);

    resolve("cmd:false", MX_EIO, "cmd:false: command exited with status 1");
    resolve("cmd:/nonexistent/mx-cmd --flag", MX_ENOTFOUND,
            "command '/nonexistent/mx-cmd' not found");
    resolve("cmd:true", MX_EINVAL, "cmd:true: the value is empty");
    /* stderr is discarded and a failing command's stdout never shows */
    struct path path_p = tmp_path("fail.sh");
    const char *path = path_p.s;
    snprintf(script, sizeof(script), "#!/bin/sh\necho %s\necho %s >&2\nexit 3\n", canary, canary);
    write_text(path, script, 0700);
    snprintf(ref, sizeof(ref), "cmd:%s", path);
    resolve(ref, MX_EIO, "command exited with status 3");
    snprintf(script, sizeof(script), "#!/bin/sh\necho %s >&2\necho %s\n", canary, canary);
    write_text(path, script, 0700);
    expect_canary(ref);
    /* something left running in the background does not hold the answer up */
    snprintf(script, sizeof(script), "#!/bin/sh\nsleep 30 &\necho %s\n", canary);
    write_text(path, script, 0700);
    time_t t0 = time(NULL);
    expect_canary(ref);
    assert_true(time(NULL) - t0 < 3);
    resolve("cmd:head -c 70000 /dev/zero", MX_ELIMIT, "printed more than");
}

/* The rule a cmd: or file: output and a refresh command's output share. */
static void test_secret_from_output(void **state)
{
    static const struct {
        const char *p;
        size_t len;
        const char *value; /* NULL: refused */
        const char *why;
    } cases[] = {
        {"tok\n", 4, "tok", NULL},
        {"tok\r\n", 5, "tok", NULL},
        {"tok", 3, "tok", NULL},
        {"", 0, NULL, "the value is empty"},
        {"\n", 1, NULL, "the value is empty"},
        {"tok\n\n", 5, NULL, "the value contains a line break"},
        {"a\nb", 3, NULL, "the value contains a line break"},
        {"a\rb\n", 4, NULL, "the value contains a line break"},
        {"a\0b", 3, NULL, "the value contains a NUL byte"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_secret *s = (struct mx_secret *)1;
        const char *why = mx_secret_from_output(cases[i].p, cases[i].len, &s);
        if (cases[i].value) {
            assert_null(why);
            assert_true(mx_secret_equal(s, cases[i].value, strlen(cases[i].value)));
            mx_secret_free(s);
        } else {
            assert_null(s);
            assert_non_null(why);
            assert_string_equal(why, cases[i].why);
        }
    }
}

static void test_secret_cmd_timeout(void **state)
{
    (void)state;
    time_t t0 = time(NULL);
    resolve("cmd:sleep 30", MX_ETIMEDOUT, "cmd:sleep: command timed out after 5 s");
    time_t took = time(NULL) - t0;
    assert_true(took >= 4 && took <= 8);
}

static void test_secret_vault(void **state)
{
    struct mx_diag d;
    (void)state;
    resolve("vault:missing", MX_ENOTFOUND, "vault does not exist");
    assert_int_equal(mx_vault_set(tmp_path("vault").s, "tok", canary, strlen(canary), &d), 0);
    expect_canary("vault:tok");
    resolve("vault:other", MX_ENOTFOUND, "vault:other: ");
    resolve("vault:other", MX_ENOTFOUND, "no entry 'other' in the vault");
    chmod(tmp_path("vault").s, 0640);
    resolve("vault:tok", MX_EPERM,
            "vault is readable by group or others (mode 0640); chmod 600 it");
    chmod(tmp_path("vault").s, 0600);
}

static void test_secret_bad_references(void **state)
{
    (void)state;
    resolve("", MX_EINVAL, "empty secret reference");
    resolve("hunter2", MX_EINVAL, "unknown kind of secret reference");
    resolve("Env:X", MX_EINVAL, "unknown kind");
    resolve("env:", MX_EINVAL, "env: needs a variable name");
    resolve("env:A-B", MX_EINVAL, "env: needs a variable name");
    resolve("vault:", MX_EINVAL, "vault: needs an entry name");
    resolve("vault:a/b", MX_EINVAL, "vault: needs an entry name");
    resolve("file:", MX_EINVAL, "file: needs a path");
    resolve("cmd:  ", MX_EINVAL, "cmd: needs a command");
    struct mx_secret *dummy = mx_secret_new("x", 1), *s = dummy;
    struct mx_diag d;
    assert_int_equal(mx_secret_resolve(NULL, NULL, NULL, &s, &d), MX_EINVAL);
    assert_null(s);
    mx_secret_free(dummy);
}

static void test_secret_header_new(void **state)
{
    (void)state;
    struct mx_secret *s = mx_secret_new("t0k", 3);
    char *h = mx_secret_header_new(s, MX_AUTH_BEARER, NULL);
    assert_string_equal(h, "Authorization: Bearer t0k");
    mx_secret_wipe_free(h);
    h = mx_secret_header_new(s, MX_AUTH_COOKIE, "__sbx_auth");
    assert_string_equal(h, "Cookie: __sbx_auth=t0k");
    mx_secret_wipe_free(h);
    h = mx_secret_header_new(s, MX_AUTH_HEADER, "X-Api-Key");
    assert_string_equal(h, "X-Api-Key: t0k");
    mx_secret_wipe_free(h);
    assert_null(mx_secret_header_new(s, MX_AUTH_NONE, NULL));
    assert_null(mx_secret_header_new(s, MX_AUTH_COOKIE, NULL));
    assert_null(mx_secret_header_new(s, MX_AUTH_HEADER, NULL));
    assert_null(mx_secret_header_new(NULL, MX_AUTH_BEARER, NULL));
    mx_secret_wipe_free(NULL);
    mx_secret_free(s);
}

static void test_secret_env_new(void **state)
{
    (void)state;
    struct mx_secret *s = mx_secret_new("t0k=x", 5);
    char *e = mx_secret_env_new(s, "API_KEY");
    assert_string_equal(e, "API_KEY=t0k=x");
    mx_secret_wipe_free(e);
    assert_null(mx_secret_env_new(s, NULL));
    assert_null(mx_secret_env_new(s, ""));
    assert_null(mx_secret_env_new(s, "A=B"));
    assert_null(mx_secret_env_new(NULL, "API_KEY"));
    mx_secret_free(s);
}

static void test_secret_redact(void **state)
{
    (void)state;
    struct mx_secret *s = mx_secret_new("SECRET", 6);
    char buf[] = "xxSECRETyySECRETzzSECRE";
    assert_int_equal(mx_secret_redact(s, buf, strlen(buf)), 2);
    assert_string_equal(buf, "xx******yy******zzSECRE");
    /* a match across the end of the given length is not one */
    char cut[] = "SECRET";
    assert_int_equal(mx_secret_redact(s, cut, 5), 0);
    assert_string_equal(cut, "SECRET");
    assert_int_equal(mx_secret_redact(s, buf, 0), 0);
    assert_int_equal(mx_secret_redact(NULL, buf, strlen(buf)), 0);
    mx_secret_free(s);

    s = mx_secret_new("aa", 2);
    char rep[] = "aaaaa";
    assert_int_equal(mx_secret_redact(s, rep, 5), 2);
    assert_string_equal(rep, "****a");
    mx_secret_free(s);
    s = mx_secret_new("", 0);
    assert_int_equal(mx_secret_redact(s, rep, 5), 0);
    mx_secret_free(s);
}

/* Every JSON-escaped form of a value with '"', '\\', a tab and a control
 * byte is masked too, as jansson, node or a hostile peer would write it. */
static void test_secret_redact_json_escaped(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"raw a\"b\\c\td\001e.", "raw *********."},
        {"jansson \"a\\\"b\\\\c\\td\\u0001e\"", "jansson \"*****************\""},
        {"node a\\\"b\\\\c\\td\\u0001e", "node *****************"},
        {"upper a\\u0022b\\u005Cc\\u0009d\\u0001e", "upper *****************************"},
        {"all \\u0061\\u0022\\u0062\\u005c\\u0063\\u0009\\u0064\\u0001\\u0065!",
         "all ******************************************************!"},
        {"cut a\\\"b\\\\c\\td\\u000", "cut a\\\"b\\\\c\\td\\u000"},
        {"other a\\\"b\\\\c\\td\\u0002e", "other a\\\"b\\\\c\\td\\u0002e"},
    };
    struct mx_secret *s = mx_secret_new("a\"b\\c\td\001e", 9);
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *buf = strdup(cases[i].text);
        size_t n = mx_secret_redact(s, buf, strlen(buf));
        if (strcmp(buf, cases[i].want) != 0)
            fail_msg("case %zu: %s (%zu masked)", i, buf, n);
        assert_int_equal(n, strcmp(cases[i].text, cases[i].want) != 0 ? 1 : 0);
        free(buf);
    }
    mx_secret_free(s);
    /* non-ASCII through \\u and a surrogate pair */
    s = mx_secret_new("\xc3\xa9\xf0\x9f\x98\x80", 6);
    char pair[] = "x\\u00e9\\ud83d\\ude00y";
    assert_int_equal(mx_secret_redact(s, pair, strlen(pair)), 1);
    assert_string_equal(pair, "x******************y");
    mx_secret_free(s);
}

static void test_secret_ref_show(void **state)
{
    static const struct {
        const char *ref, *shown;
    } cases[] = {
        {"vault:files", "vault:files"},
        {"env:EVERY_TOKEN", "env:EVERY_TOKEN"},
        {"file:/run/tok", "file:/run/tok"},
        {"cmd:pass show api/key", "cmd:pass"},
        {"cmd:  /bin/echo\tsecret-arg", "cmd:/bin/echo"},
        {"cmd:/usr/bin/op", "cmd:/usr/bin/op"},
        {"hunter2", "(not a secret reference)"},
        {"env:1BAD", "(not a secret reference)"},
        {"", "(not a secret reference)"},
    };
    char out[64];
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(mx_secret_ref_show(cases[i].ref, out, sizeof(out)), cases[i].shown);
    assert_string_equal(mx_secret_ref_show(NULL, out, sizeof(out)), "(not a secret reference)");
    /* bounded by |cap| */
    assert_string_equal(mx_secret_ref_show("vault:abcdefgh", out, 8), "vault:a");
}

/* Messages about a cmd: reference name its program, not its arguments. */
static void test_secret_cmd_arguments_not_shown(void **state)
{
    char ref[128];
    (void)state;
    snprintf(ref, sizeof(ref), "cmd:false %s", canary);
    resolve(ref, MX_EIO, "cmd:false: command exited with status 1");
    snprintf(ref, sizeof(ref), "cmd:/nonexistent/mx-cmd %s", canary);
    resolve(ref, MX_ENOTFOUND, "cmd:/nonexistent/mx-cmd: command");
    snprintf(ref, sizeof(ref), "cmd:/bin/true %s", canary);
    resolve(ref, MX_EINVAL, "cmd:/bin/true: the value is empty");
}

static void test_secret_equal(void **state)
{
    (void)state;
    struct mx_secret *s = mx_secret_new("abc\0def", 7);
    assert_true(mx_secret_equal(s, "abc\0def", 7));
    assert_false(mx_secret_equal(s, "abc\0dex", 7));
    assert_false(mx_secret_equal(s, "abc", 3));
    assert_false(mx_secret_equal(s, "abc\0defg", 8));
    assert_false(mx_secret_equal(s, "", 0));
    assert_false(mx_secret_equal(s, NULL, 0));
    assert_false(mx_secret_equal(NULL, "abc", 3));
    mx_secret_free(s);
    s = mx_secret_new("", 0);
    assert_true(mx_secret_equal(s, "", 0));
    assert_false(mx_secret_equal(s, "a", 1));
    mx_secret_free(s);
    mx_secret_free(NULL);
}

static int no_leaks(void **state)
{
    (void)state;
    return mx_secret_live_cnt() == 0 ? 0 : -1;
}

/* Last: it changes the process. Non-dumpable afterwards, the secure heap
 * up, and secrets still made, compared and wiped as before. */
static void test_secret_protect_process(void **state)
{
    const char *why = "unset";
    (void)state;
    assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
    assert_int_equal(mx_secret_protect_process(&why), 0);
    assert_null(why);
    assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
    assert_true(CRYPTO_secure_malloc_initialized());
    size_t used = CRYPTO_secure_used();
    struct mx_secret *s = mx_secret_new("locked-value", 12);
    assert_true(CRYPTO_secure_used() > used); /* the value went to the locked heap */
    assert_true(mx_secret_equal(s, "locked-value", 12));
    mx_secret_free(s);
    assert_int_equal(CRYPTO_secure_used(), used);
    /* twice is fine */
    assert_int_equal(mx_secret_protect_process(&why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_secret_env, no_leaks),
        cmocka_unit_test_teardown(test_secret_file, no_leaks),
        cmocka_unit_test_teardown(test_secret_file_refused_when_open_to_others, no_leaks),
        cmocka_unit_test_teardown(test_secret_file_relative, no_leaks),
        cmocka_unit_test_teardown(test_secret_cmd, no_leaks),
        cmocka_unit_test_teardown(test_secret_cmd_timeout, no_leaks),
        cmocka_unit_test_teardown(test_secret_from_output, no_leaks),
        cmocka_unit_test_teardown(test_secret_vault, no_leaks),
        cmocka_unit_test_teardown(test_secret_bad_references, no_leaks),
        cmocka_unit_test_teardown(test_secret_header_new, no_leaks),
        cmocka_unit_test_teardown(test_secret_env_new, no_leaks),
        cmocka_unit_test_teardown(test_secret_redact, no_leaks),
        cmocka_unit_test_teardown(test_secret_equal, no_leaks),
        cmocka_unit_test_teardown(test_secret_redact_json_escaped, no_leaks),
        cmocka_unit_test_teardown(test_secret_ref_show, no_leaks),
        cmocka_unit_test_teardown(test_secret_cmd_arguments_not_shown, no_leaks),
        cmocka_unit_test_teardown(test_secret_protect_process, no_leaks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
