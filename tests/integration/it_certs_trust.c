/* SPDX-License-Identifier: MIT */
/*
 * `mcplex certs trust` and `untrust`, the real binary on this (Debian)
 * machine, with a test HOME that holds NSS databases made by certutil: a
 * Chromium one (~/.pki/nssdb) and a Firefox profile, beside a profile
 * without cert9.db that must be left out.
 *
 * Run with no argument: the --dry-run plans, asserted verbatim, and that
 * they change nothing; serve's banner asks for `mcplex certs trust` while
 * the system lacks the CA. Run as `it_certs_trust system` (its own ctest
 * test): the real round trip through the system store, which runs only with
 * MX_SYSTEM_TRUST_TEST=1 and as root (CI sets it: its machines are
 * throwaway) and otherwise exits 77, which ctest shows as Skipped. The round
 * trip takes the CA out again in its teardown, whatever failed.
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

#define RUN_TIMEOUT_MS 60000
#define SKIP_EXIT      77
#define BUNDLE         "/etc/ssl/certs/ca-certificates.crt"
#define ANCHOR_DIR     "/usr/local/share/ca-certificates"

/* The CA of the test: made by `certs init` in <test dir>/certs. */
struct ca {
    char *dir, *pem, *leaf, *fp, *anchor, *nssdb, *firefox;
};

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

/* `mcplex certs <args...>`; its exit status, output in *|out| (caller frees). */
static int certs(const char *name, const char *sub, const char *dir, const char *flag, char **out)
{
    char *mcplex = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {mcplex, "certs", sub, "--dir", dir, flag, NULL};
    int rc = mx_it_run(name, argv, NULL, RUN_TIMEOUT_MS, out);
    free(mcplex);
    assert_true(rc >= 0);
    return rc;
}

static int run_quiet(const char *name, const char *const *argv, char **out)
{
    int rc = mx_it_run(name, argv, NULL, RUN_TIMEOUT_MS, out);
    assert_true(rc >= 0);
    return rc;
}

/* An empty NSS database in |dir| (made, with its parents). */
static void make_nssdb(const char *dir)
{
    char *sql = mx_xasprintf("sql:%s", dir);
    char *mk = mx_xasprintf("mkdir -p '%s'", dir);
    const char *mkdir_argv[] = {"sh", "-c", mk, NULL};
    assert_int_equal(run_quiet("mkdir", mkdir_argv, NULL), 0);
    const char *argv[] = {"certutil", "-N", "--empty-password", "-d", sql, NULL};
    assert_int_equal(run_quiet("certutil-N", argv, NULL), 0);
    free(sql);
    free(mk);
}

/*
 * The short fingerprint as the openssl tool computes it: the first 8 bytes
 * of the SHA-256 fingerprint, lowercase hex (caller frees).
 */
static char *short_fp(const char *pem)
{
    char *out = NULL;
    const char *argv[] = {"openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", pem, NULL};
    assert_int_equal(run_quiet("fingerprint", argv, &out), 0);
    const char *eq = strchr(out, '=');
    assert_non_null(eq);
    char fp[17];
    size_t n = 0;
    for (const char *p = eq + 1; *p && n < 16; p++) {
        if (*p == ':')
            continue;
        fp[n++] = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    }
    fp[n] = '\0';
    assert_int_equal(n, 16);
    free(out);
    return mx_xstrdup(fp);
}

/* `certs init` in the test directory and a HOME with two NSS databases. */
static void ca_make(struct ca *c)
{
    char *out = NULL;
    memset(c, 0, sizeof(*c));
    c->dir = mx_it_path("certs");
    c->pem = mx_xasprintf("%s/ca.pem", c->dir);
    c->leaf = mx_xasprintf("%s/localhost.pem", c->dir);
    assert_int_equal(certs("init", "init", c->dir, NULL, &out), 0);
    free(out);
    c->fp = short_fp(c->pem);
    c->anchor = mx_xasprintf(ANCHOR_DIR "/mcplex-%s.crt", c->fp);
    /* the harness made the test directory HOME */
    c->nssdb = mx_xasprintf("%s/.pki/nssdb", mx_it_dir());
    c->firefox = mx_xasprintf("%s/.mozilla/firefox/ab12cd34.default-release", mx_it_dir());
    make_nssdb(c->nssdb);
    make_nssdb(c->firefox);
    char *empty = mx_xasprintf("%s/.mozilla/firefox/zz.no-db", mx_it_dir());
    assert_int_equal(mkdir(empty, 0700), 0);
    free(empty);
}

static void ca_clear(struct ca *c)
{
    free(c->dir);
    free(c->pem);
    free(c->leaf);
    free(c->fp);
    free(c->anchor);
    free(c->nssdb);
    free(c->firefox);
    memset(c, 0, sizeof(*c));
}

/* Whether certutil -L on |db| lists the CA's nickname. */
static bool nss_lists(const char *db, const struct ca *c)
{
    char *out = NULL;
    char *sql = mx_xasprintf("sql:%s", db);
    const char *argv[] = {"certutil", "-L", "-d", sql, NULL};
    assert_int_equal(run_quiet("certutil-L", argv, &out), 0);
    char *nick = mx_xasprintf("mcplex local CA %s", c->fp);
    bool has = strstr(out, nick) != NULL;
    free(nick);
    free(sql);
    free(out);
    return has;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static const char *sudo(void)
{
    return geteuid() == 0 ? "" : "sudo ";
}

static void test_it_certs_trust_dry_run(void **state)
{
    (void)state;
    struct ca c;
    char *out = NULL;

    ca_make(&c);
    char *want = mx_xasprintf(
        "dry run: nothing is changed; the steps `mcplex certs trust` would run:\n"
        "CA %s (mcplex local CA %s)\n"
        "system store (Debian/Ubuntu): not trusted yet\n"
        "  $ %sinstall -m 644 %s %s\n"
        "  $ %supdate-ca-certificates\n"
        "NSS database %s: not trusted yet\n"
        "  $ certutil -A -d sql:%s -t C,, -n 'mcplex local CA %s' -i %s\n"
        "NSS database %s: not trusted yet\n"
        "  $ certutil -A -d sql:%s -t C,, -n 'mcplex local CA %s' -i %s\n"
        "\n"
        "Node-based clients (Claude Code, the MCP TypeScript SDK, the Inspector) do not read "
        "the system store; start them with\n"
        "  export NODE_EXTRA_CA_CERTS=%s\n"
        "or, from Node 22.19 and 24.6 on, with NODE_USE_SYSTEM_CA=1 once the system trusts the "
        "CA.\n"
        "dry run: nothing was changed.\n",
        c.pem, c.fp, sudo(), c.pem, c.anchor, sudo(), c.nssdb, c.nssdb, c.fp, c.pem, c.firefox,
        c.firefox, c.fp, c.pem, c.pem);
    assert_int_equal(certs("trust-dry", "trust", c.dir, "--dry-run", &out), 0);
    assert_string_equal(out, want);
    free(out);
    free(want);
    /* nothing changed: no anchor file, no nickname in either database */
    assert_false(exists(c.anchor));
    assert_false(nss_lists(c.nssdb, &c));
    assert_false(nss_lists(c.firefox, &c));

    want =
        mx_xasprintf("dry run: nothing is changed; the steps `mcplex certs untrust` would run:\n"
                     "CA %s (mcplex local CA %s)\n"
                     "system store (Debian/Ubuntu): not trusted; nothing to remove\n"
                     "NSS database %s: not trusted; nothing to remove\n"
                     "NSS database %s: not trusted; nothing to remove\n"
                     "\n"
                     "Where NODE_EXTRA_CA_CERTS=%s is set for Node-based clients, unset it too.\n"
                     "dry run: nothing was changed.\n",
                     c.pem, c.fp, c.nssdb, c.firefox, c.pem);
    assert_int_equal(certs("untrust-dry", "untrust", c.dir, "--dry-run", &out), 0);
    assert_string_equal(out, want);
    free(out);
    free(want);

    /* --dry-run belongs to trust and untrust */
    assert_int_equal(certs("show-dry", "show", c.dir, "--dry-run", &out), 2);
    assert_contains(out, "--dry-run is for trust and untrust only");
    free(out);
    ca_clear(&c);
    mx_it_pass();
}

/* No CA yet: trust says so and what to run, and changes nothing. */
static void test_it_certs_trust_without_ca(void **state)
{
    (void)state;
    char *out = NULL;
    char *dir = mx_it_path("no-certs");
    assert_int_equal(certs("trust-none", "trust", dir, NULL, &out), 1);
    char *want = mx_xasprintf("%s/ca.pem", dir);
    assert_contains(out, want);
    assert_contains(out, "run `mcplex certs init` first");
    free(want);
    free(out);
    free(dir);
    mx_it_pass();
}

/* serve's banner: the trust step while the system lacks the CA, and Node's variable. */
static void test_it_certs_trust_serve_banner(void **state)
{
    (void)state;
    char *ca = NULL;
    mx_it_start_sim_behind_mcplex("", &ca);
    char *log_path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(log_path, NULL);
    assert_non_null(log);
    assert_contains(log, "The local CA is not trusted by the system yet: run `mcplex certs "
                         "trust` (`--dry-run` shows the steps first).\n");
    char *node = mx_xasprintf("export NODE_EXTRA_CA_CERTS=%s\n", ca);
    assert_contains(log, node);
    free(node);
    free(log);
    free(log_path);
    free(ca);
    mx_it_pass();
}

/* ---- the round trip through the system store --------------------------- */

/* The round trip's CA, outside its stack frame: a failed assertion leaves that frame before
 * teardown runs. |live| while the system may hold the CA. */
static struct ca sys_ca;
static bool live;

static int openssl_verify(const char *leaf)
{
    char *out = NULL;
    /* the bundle alone: no CA directory, wherever SSL_CERT_DIR points */
    const char *argv[] = {"openssl", "verify", "-no-CApath", "-CAfile", BUNDLE, leaf, NULL};
    int rc = run_quiet("verify", argv, &out);
    free(out);
    return rc;
}

static void test_it_certs_trust_system_round_trip(void **state)
{
    (void)state;
    struct ca c;
    char *out = NULL;

    ca_make(&sys_ca);
    c = sys_ca;
    live = true;
    assert_int_not_equal(openssl_verify(c.leaf), 0);

    assert_int_equal(certs("trust", "trust", c.dir, NULL, &out), 0);
    assert_contains(out, "system store (Debian/Ubuntu): not trusted yet\n");
    assert_contains(out, "done: " BUNDLE " holds the CA\n");
    char *node = mx_xasprintf("export NODE_EXTRA_CA_CERTS=%s\n", c.pem);
    assert_contains(out, node);
    free(node);
    free(out);
    /* the system bundle vouches for mcplex's leaf; both NSS databases list the CA */
    assert_int_equal(openssl_verify(c.leaf), 0);
    assert_true(exists(c.anchor));
    assert_true(nss_lists(c.nssdb, &c));
    assert_true(nss_lists(c.firefox, &c));

    /* serve with this CA: no trust step in its banner, and curl with the system store alone */
    char *ca = NULL;
    int port = mx_it_start_sim_behind_mcplex("", &ca);
    char *log_path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(log_path, NULL);
    assert_non_null(log);
    assert_contains(log, "export NODE_EXTRA_CA_CERTS=");
    assert_null(strstr(log, "not trusted by the system"));
    free(log);
    free(log_path);
    /* the state dir is the test directory: serve uses the CA that certs init made */
    assert_string_equal(ca, c.pem);
    free(ca);
    char *url = mx_xasprintf("https://localhost:%d/health", port);
    const char *curl[] = {"curl",      "-sS",        "-4", "--noproxy", "*", "-o",
                          "/dev/null", "--max-time", "10", url,         NULL};
    const char *system_store_only[] = {"CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", NULL};
    assert_int_equal(mx_it_run("curl-system", curl, system_store_only, RUN_TIMEOUT_MS, NULL), 0);
    free(url);

    assert_int_equal(certs("trust-again", "trust", c.dir, NULL, &out), 0);
    char *again = mx_xasprintf("system store (Debian/Ubuntu): already trusted (%s)\n"
                               "NSS database %s: already trusted\n"
                               "NSS database %s: already trusted\n",
                               c.anchor, c.nssdb, c.firefox);
    assert_contains(out, again);
    assert_null(strstr(out, "  $ "));
    free(again);
    free(out);

    assert_int_equal(certs("untrust", "untrust", c.dir, NULL, &out), 0);
    assert_contains(out, "system store (Debian/Ubuntu): trusted; removing\n");
    assert_contains(out, "done: " BUNDLE " no longer holds the CA\n");
    free(out);
    live = false;
    assert_int_not_equal(openssl_verify(c.leaf), 0);
    assert_false(exists(c.anchor));
    assert_false(nss_lists(c.nssdb, &c));
    assert_false(nss_lists(c.firefox, &c));

    assert_int_equal(certs("untrust-again", "untrust", c.dir, NULL, &out), 0);
    assert_contains(out, "system store (Debian/Ubuntu): not trusted; nothing to remove\n");
    free(out);
    mx_it_pass();
}

/*
 * Whatever failed, take the test's CA out of the system store: through
 * `certs untrust`, and should that fail, by removing its anchor file and
 * rebuilding the bundle by hand.
 */
static int teardown_system(void **state)
{
    if (live) {
        char *out = NULL;
        fprintf(stderr, "it_certs_trust: the round trip stopped midway; untrusting its CA\n");
        char *mcplex = mx_xasprintf("%s/mcplex", mx_it_build_dir());
        const char *argv[] = {mcplex, "certs", "untrust", "--dir", sys_ca.dir, NULL};
        int rc = mx_it_run("teardown-untrust", argv, NULL, RUN_TIMEOUT_MS, &out);
        fprintf(stderr, "%s", out ? out : "");
        if (rc != 0) {
            unlink(sys_ca.anchor);
            const char *update[] = {"update-ca-certificates", NULL};
            mx_it_run("teardown-update", update, NULL, RUN_TIMEOUT_MS, NULL);
        }
        free(out);
        free(mcplex);
        live = false;
    }
    ca_clear(&sys_ca);
    return mx_it_teardown(state);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "system") == 0) {
        const char *on = getenv("MX_SYSTEM_TRUST_TEST");
        if (on == NULL || strcmp(on, "1") != 0 || geteuid() != 0) {
            printf("it_certs_trust system: NOT RUN: it changes the system trust store, so it "
                   "runs only as root with MX_SYSTEM_TRUST_TEST=1 (CI sets it)\n");
            return SKIP_EXIT;
        }
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_it_certs_trust_system_round_trip, mx_it_setup,
                                            teardown_system),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_it_certs_trust_dry_run, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_certs_trust_without_ca, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_certs_trust_serve_banner, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
