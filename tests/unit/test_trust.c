/* SPDX-License-Identifier: MIT */
/*
 * certs/trust.c without touching any store: the argv of each step for each
 * kind of system (sudo only when asked), the shell form they are printed in,
 * the short fingerprint, which bundle and anchor files hold a CA, which NSS
 * databases a home has, finding tools outside PATH, and running a step.
 */
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
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "alloc.h"
#include "certs.h"
#include "certs_int.h"
#include "err.h"
#include "trust.h"

static char tmp[64];

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
    snprintf(tmp, sizeof(tmp), "/tmp/test_trust-XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A CA made as `certs init` makes it, in <tmp>/|name|; its ca.pem loaded into |ca|. */
static void make_ca(const char *name, struct mx_trust_ca *ca)
{
    struct mx_certs_paths p;
    struct mx_diag d = {0};
    char *dir = mx_xasprintf("%s/%s", tmp, name);
    mx_certs_paths_init(&p, dir);
    assert_int_equal(mx_certs_init(&p, false, &d), 0);
    assert_int_equal(mx_trust_ca_load(ca, p.ca_cert, &d), 0);
    mx_certs_paths_clear(&p);
    free(dir);
}

static char *format(const struct mx_trust_cmd *c)
{
    char buf[1024];
    mx_trust_cmd_format(c, buf, sizeof(buf));
    return mx_xstrdup(buf);
}

static void assert_cmd(const struct mx_trust_cmd *c, const char *want)
{
    char *got = format(c);
    assert_string_equal(got, want);
    free(got);
}

static void test_trust_fingerprint(void **state)
{
    (void)state;
    struct mx_trust_ca ca;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char hex[17];

    make_ca("a", &ca);
    assert_int_equal(X509_digest(ca.cert, EVP_sha256(), md, &n), 1);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    assert_string_equal(ca.fp, hex);
    char *nick = mx_xasprintf("mcplex local CA %s", hex);
    assert_string_equal(ca.nss_name, nick);
    free(nick);
    mx_trust_ca_clear(&ca);

    struct mx_diag d = {0};
    char *missing = mx_xasprintf("%s/none.pem", tmp);
    assert_int_equal(mx_trust_ca_load(&ca, missing, &d), MX_ENOTFOUND);
    free(missing);
}

static void test_trust_system_steps(void **state)
{
    (void)state;
    struct mx_trust_ca ca;
    struct mx_trust_cmd s[2];
    make_ca("a", &ca);
    char *anchor;

    /* Debian, as root and not */
    const struct mx_trust_sys *deb = mx_trust_sys_get(MX_TRUST_SYS_DEBIAN);
    anchor = mx_trust_anchor_path(deb, &ca);
    char *want = mx_xasprintf("/usr/local/share/ca-certificates/mcplex-%s.crt", ca.fp);
    assert_string_equal(anchor, want);
    free(want);
    for (int sudo = 0; sudo <= 1; sudo++) {
        assert_int_equal(mx_trust_sys_steps(deb, &ca, false, NULL, 0, sudo, s), 2);
        want = mx_xasprintf("%sinstall -m 644 %s %s", sudo ? "sudo " : "", ca.path, anchor);
        assert_cmd(&s[0], want);
        free(want);
        assert_cmd(&s[1], sudo ? "sudo update-ca-certificates" : "update-ca-certificates");
        mx_trust_cmd_clear(&s[0]);
        mx_trust_cmd_clear(&s[1]);
    }
    const char *rm[] = {"/usr/local/share/ca-certificates/mcplex-local-ca.crt", anchor};
    assert_int_equal(mx_trust_sys_steps(deb, &ca, true, rm, 2, true, s), 2);
    want =
        mx_xasprintf("sudo rm -f /usr/local/share/ca-certificates/mcplex-local-ca.crt %s", anchor);
    assert_cmd(&s[0], want);
    free(want);
    assert_cmd(&s[1], "sudo update-ca-certificates");
    mx_trust_cmd_clear(&s[0]);
    mx_trust_cmd_clear(&s[1]);
    free(anchor);

    /* Fedora */
    const struct mx_trust_sys *fed = mx_trust_sys_get(MX_TRUST_SYS_FEDORA);
    anchor = mx_trust_anchor_path(fed, &ca);
    want = mx_xasprintf("/etc/pki/ca-trust/source/anchors/mcplex-%s.pem", ca.fp);
    assert_string_equal(anchor, want);
    free(want);
    assert_int_equal(mx_trust_sys_steps(fed, &ca, false, NULL, 0, false, s), 2);
    assert_cmd(&s[1], "update-ca-trust extract");
    mx_trust_cmd_clear(&s[0]);
    mx_trust_cmd_clear(&s[1]);
    free(anchor);

    /* Arch: p11-kit stores the anchor itself */
    const struct mx_trust_sys *arch = mx_trust_sys_get(MX_TRUST_SYS_ARCH);
    assert_null(mx_trust_anchor_path(arch, &ca));
    assert_int_equal(mx_trust_sys_steps(arch, &ca, false, NULL, 0, true, s), 1);
    want = mx_xasprintf("sudo trust anchor --store %s", ca.path);
    assert_cmd(&s[0], want);
    free(want);
    mx_trust_cmd_clear(&s[0]);
    assert_int_equal(mx_trust_sys_steps(arch, &ca, true, NULL, 0, false, s), 1);
    want = mx_xasprintf("trust anchor --remove %s", ca.path);
    assert_cmd(&s[0], want);
    free(want);
    mx_trust_cmd_clear(&s[0]);
    mx_trust_ca_clear(&ca);
}

static void test_trust_nss_steps(void **state)
{
    (void)state;
    struct mx_trust_ca ca;
    struct mx_trust_cmd c;
    make_ca("a", &ca);
    mx_trust_nss_step("/home/u/.pki/nssdb", &ca, MX_TRUST_NSS_ADD, &c);
    /* separate arguments, so the nickname's spaces are one argument, not a shell's business */
    assert_string_equal(c.argv[7], ca.nss_name);
    char *want =
        mx_xasprintf("certutil -A -d sql:/home/u/.pki/nssdb -t C,, -n 'mcplex local CA %s' -i %s",
                     ca.fp, ca.path);
    assert_cmd(&c, want);
    free(want);
    mx_trust_cmd_clear(&c);
    mx_trust_nss_step("/home/u/.pki/nssdb", &ca, MX_TRUST_NSS_DEL, &c);
    want = mx_xasprintf("certutil -D -d sql:/home/u/.pki/nssdb -n 'mcplex local CA %s'", ca.fp);
    assert_cmd(&c, want);
    free(want);
    mx_trust_cmd_clear(&c);
    mx_trust_ca_clear(&ca);
}

static void test_trust_format_quotes(void **state)
{
    (void)state;
    struct mx_trust_cmd c = {0};
    c.argv[0] = mx_xstrdup("cp");
    c.argv[1] = mx_xstrdup("/a b/it's.pem");
    c.argv[2] = mx_xstrdup("");
    c.argv[3] = mx_xstrdup("/x/$HOME;rm");
    assert_cmd(&c, "cp '/a b/it'\\''s.pem' '' '/x/$HOME;rm'");
    char small[8];
    mx_trust_cmd_format(&c, small, sizeof(small));
    assert_string_equal(small, "cp '/a ");
    mx_trust_cmd_clear(&c);
}

static void write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
}

static void append_cert(const char *path, X509 *x)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    fclose(f);
}

static void test_trust_bundle_and_anchors(void **state)
{
    (void)state;
    struct mx_trust_ca a, b;
    char **files;
    make_ca("a", &a);
    make_ca("b", &b);

    char *bundle = mx_xasprintf("%s/bundle.pem", tmp);
    write_file(bundle, "# a comment, as some bundles have\n");
    append_cert(bundle, b.cert);
    assert_false(mx_trust_bundle_has(bundle, a.cert));
    assert_true(mx_trust_bundle_has(bundle, b.cert));
    append_cert(bundle, a.cert);
    assert_true(mx_trust_bundle_has(bundle, a.cert));
    char *none = mx_xasprintf("%s/no-bundle.pem", tmp);
    assert_false(mx_trust_bundle_has(none, a.cert));

    /* the anchors dir: files holding a's certificate, sorted; not b's, not a symlink to a's */
    char *dir = mx_xasprintf("%s/anchors", tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(mx_trust_anchor_files(dir, a.cert, &files), 0);
    char *f1 = mx_xasprintf("%s/mcplex-%s.crt", dir, a.fp);
    char *f2 = mx_xasprintf("%s/mcplex-local-ca.crt", dir);
    char *f3 = mx_xasprintf("%s/other.crt", dir);
    char *f4 = mx_xasprintf("%s/link.crt", dir);
    append_cert(f1, a.cert);
    append_cert(f2, a.cert);
    append_cert(f3, b.cert);
    assert_int_equal(symlink(f1, f4), 0);
    size_t n = mx_trust_anchor_files(dir, a.cert, &files);
    assert_int_equal(n, 2);
    assert_string_equal(files[0], f1);
    assert_string_equal(files[1], f2);
    mx_trust_list_free(files, n);
    assert_int_equal(mx_trust_anchor_files("/nonexistent-dir", a.cert, &files), 0);

    free(f1);
    free(f2);
    free(f3);
    free(f4);
    free(dir);
    free(none);
    free(bundle);
    mx_trust_ca_clear(&a);
    mx_trust_ca_clear(&b);
}

static void touch(const char *path)
{
    write_file(path, "");
}

static void test_trust_nss_dbs(void **state)
{
    (void)state;
    char **dbs;
    char *home = mx_xasprintf("%s/home", tmp);
    assert_int_equal(mx_trust_nss_dbs(home, &dbs), 0);
    const char *dirs[] = {"",
                          "/.pki",
                          "/.pki/nssdb",
                          "/.mozilla",
                          "/.mozilla/firefox",
                          "/.mozilla/firefox/b.default",
                          "/.mozilla/firefox/a.dev",
                          "/.mozilla/firefox/c.nodb",
                          "/snap",
                          "/snap/firefox",
                          "/snap/firefox/common",
                          "/snap/firefox/common/.mozilla",
                          "/snap/firefox/common/.mozilla/firefox",
                          "/snap/firefox/common/.mozilla/firefox/s.default",
                          NULL};
    for (const char *const *d = dirs; *d; d++) {
        char *p = mx_xasprintf("%s%s", home, *d);
        assert_int_equal(mkdir(p, 0700), 0);
        free(p);
    }
    const char *dbfiles[] = {"/.pki/nssdb", "/.mozilla/firefox/b.default",
                             "/.mozilla/firefox/a.dev",
                             "/snap/firefox/common/.mozilla/firefox/s.default", NULL};
    for (const char *const *d = dbfiles; *d; d++) {
        char *p = mx_xasprintf("%s%s/cert9.db", home, *d);
        touch(p);
        free(p);
    }
    /* an old-format (cert8.db) profile is not NSS's sql format: left out */
    char *old = mx_xasprintf("%s/.mozilla/firefox/c.nodb/cert8.db", home);
    touch(old);
    free(old);
    size_t n = mx_trust_nss_dbs(home, &dbs);
    assert_int_equal(n, 4);
    const char *want[] = {"/.pki/nssdb", "/.mozilla/firefox/a.dev", "/.mozilla/firefox/b.default",
                          "/snap/firefox/common/.mozilla/firefox/s.default"};
    for (size_t i = 0; i < n; i++) {
        char *p = mx_xasprintf("%s%s", home, want[i]);
        assert_string_equal(dbs[i], p);
        free(p);
    }
    mx_trust_list_free(dbs, n);
    /* a home with glob characters is not searched, rather than searched wrongly */
    assert_int_equal(mx_trust_nss_dbs("/tmp/x*", &dbs), 0);
    free(home);
}

/* A tool in an sbin directory that PATH lacks is named by its absolute path. */
static void test_trust_resolve_outside_path(void **state)
{
    (void)state;
    const char *tool = NULL;
    char *saved = mx_xstrdup(getenv("PATH") ? getenv("PATH") : "");
    static const char *const candidates[] = {"/usr/sbin/update-ca-certificates",
                                             "/usr/sbin/ldconfig", "/sbin/ldconfig"};
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        if (access(candidates[i], X_OK) == 0) {
            tool = candidates[i];
            break;
        }
    }
    assert_non_null(tool);
    struct mx_trust_cmd c = {0};
    c.argv[0] = mx_xstrdup("sudo");
    c.argv[1] = mx_xstrdup(strrchr(tool, '/') + 1);
    setenv("PATH", "/usr/bin:/bin", 1);
    bool have_sudo = mx_trust_have("sudo");
    assert_int_equal(mx_trust_cmd_resolve(&c), have_sudo);
    if (have_sudo)
        assert_string_equal(c.argv[1], tool);
    mx_trust_cmd_clear(&c);
    c.argv[0] = mx_xstrdup(strrchr(tool, '/') + 1);
    assert_true(mx_trust_cmd_resolve(&c));
    assert_string_equal(c.argv[0], tool);
    mx_trust_cmd_clear(&c);
    /* in PATH: the bare name, as it is printed */
    c.argv[0] = mx_xstrdup("sh");
    assert_true(mx_trust_cmd_resolve(&c));
    assert_string_equal(c.argv[0], "sh");
    mx_trust_cmd_clear(&c);
    c.argv[0] = mx_xstrdup("no-such-tool-for-mcplex");
    assert_false(mx_trust_cmd_resolve(&c));
    assert_false(mx_trust_have("no-such-tool-for-mcplex"));
    mx_trust_cmd_clear(&c);
    setenv("PATH", saved, 1);
    free(saved);
}

static void test_trust_run(void **state)
{
    (void)state;
    char out[64];
    struct mx_trust_cmd c = {0};
    c.argv[0] = mx_xstrdup("sh");
    c.argv[1] = mx_xstrdup("-c");
    c.argv[2] = mx_xstrdup("echo to-stdout; echo to-stderr >&2; exit 3");
    assert_int_equal(mx_trust_run(&c, out, sizeof(out)), 3);
    assert_string_equal(out, "to-stdout\nto-stderr\n");
    mx_trust_cmd_clear(&c);

    /* output past the cap is dropped, and the child still runs to its end */
    c.argv[0] = mx_xstrdup("sh");
    c.argv[1] = mx_xstrdup("-c");
    c.argv[2] = mx_xstrdup("i=0; while [ $i -lt 1000 ]; do echo 0123456789; i=$((i+1)); done");
    assert_int_equal(mx_trust_run(&c, out, sizeof(out)), 0);
    assert_int_equal(strlen(out), sizeof(out) - 1);
    mx_trust_cmd_clear(&c);

    c.argv[0] = mx_xstrdup("sh");
    c.argv[1] = mx_xstrdup("-c");
    c.argv[2] = mx_xstrdup("kill -TERM $$");
    assert_int_equal(mx_trust_run(&c, out, sizeof(out)), -1);
    assert_non_null(strstr(out, "killed by signal 15"));
    mx_trust_cmd_clear(&c);

    c.argv[0] = mx_xstrdup("no-such-tool-for-mcplex");
    assert_int_equal(mx_trust_run(&c, out, sizeof(out)), -1);
    assert_non_null(strstr(out, "cannot run no-such-tool-for-mcplex"));
    mx_trust_cmd_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trust_fingerprint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_system_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_nss_steps, setup, teardown),
        cmocka_unit_test(test_trust_format_quotes),
        cmocka_unit_test_setup_teardown(test_trust_bundle_and_anchors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trust_nss_dbs, setup, teardown),
        cmocka_unit_test(test_trust_resolve_outside_path),
        cmocka_unit_test(test_trust_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
