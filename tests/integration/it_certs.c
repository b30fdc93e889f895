/* SPDX-License-Identifier: MIT */
/*
 * `mcplex certs init` and `show` run as the real binary, and the files they
 * make trusted by real clients no one here wrote: curl with --cacert, node
 * with NODE_EXTRA_CA_CERTS and Python's ssl module in strict mode, each
 * against `openssl s_server` serving the leaf (a stand-in for the TLS
 * listener, so this checks the certificates and not mcplex's TLS code). The
 * same clients without the CA must refuse. And the CA's name constraint:
 * a leaf for a public DNS name, signed with ca.key by the openssl tool, is
 * refused by OpenSSL's and GnuTLS's verifiers alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 30000

/* Runs |argv| to its end; returns its exit status, or -1 when killed. */
static int run(const char *name, const char *const *argv, const char *const *env)
{
    pid_t pid = mx_it_spawn(name, argv, env, NULL);
    assert_true(pid > 0);
    int st = mx_it_wait_exit(pid, RUN_TIMEOUT_MS);
    assert_true(st >= 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool have(const char *tool)
{
    char *cmd = mx_xasprintf("command -v %s", tool);
    const char *argv[] = {"sh", "-c", cmd, NULL};
    bool ok = run("which", argv, NULL) == 0;
    free(cmd);
    if (!ok)
        fprintf(stderr, "it_certs: %s not installed; its checks are skipped\n", tool);
    return ok;
}

/* The log mx_it_spawn() wrote for |name|'s first run. */
static char *log_of(const char *name)
{
    char *file = mx_xasprintf("%s.log", name);
    char *path = mx_it_path(file);
    char *text = mx_it_read_file(path, NULL);
    assert_non_null(text);
    free(file);
    free(path);
    return text;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static const char node_get[] =
    "const [port, host, family] = process.argv.slice(1);"
    "require('https').get({host, port: +port, family: +family, path: '/'}, r => {"
    "  r.resume(); process.exit(r.statusCode === 200 ? 0 : 2);"
    "}).on('error', e => { console.error(e.code || e.message); process.exit(1); });";

static const char python_get[] =
    "import socket, ssl, sys\n"
    "port, ca = int(sys.argv[1]), sys.argv[2]\n"
    "ctx = ssl.create_default_context(cafile=ca)\n"
    "ctx.verify_flags |= ssl.VERIFY_X509_STRICT\n"
    "for name in ('localhost', '127.0.0.1'):\n"
    "    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:\n"
    "        with ctx.wrap_socket(s, server_hostname=name) as t:\n"
    "            print(name, t.version())\n";

static void test_it_certs_real_clients(void **state)
{
    (void)state;
    char port_s[16], url_name[64], url_ip[64];

    char *mcplex = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *dir = mx_it_path("certs");
    char *ca = mx_xasprintf("%s/ca.pem", dir);
    char *leaf = mx_xasprintf("%s/localhost.pem", dir);
    char *leaf_key = mx_xasprintf("%s/localhost.key", dir);

    const char *init[] = {mcplex, "certs", "init", "--dir", dir, NULL};
    assert_int_equal(run("init", init, NULL), 0);
    char *out = log_of("init");
    assert_contains(out, "NODE_EXTRA_CA_CERTS=");
    assert_contains(out, "mcplex certs trust --dir ");
    assert_null(strstr(out, "PRIVATE KEY"));
    free(out);
    assert_int_equal(run("init-again", init, NULL), 1);
    out = log_of("init-again");
    assert_contains(out, "already exists");
    free(out);
    const char *show[] = {mcplex, "certs", "show", "--dir", dir, NULL};
    assert_int_equal(run("show", show, NULL), 0);
    out = log_of("show");
    assert_contains(out, "permitted DNS:localhost\n");
    assert_null(strstr(out, "PRIVATE KEY"));
    free(out);

    if (!have("openssl")) {
        mx_it_pass();
        goto out;
    }
    int port = mx_it_free_port();
    assert_true(port > 0);
    snprintf(port_s, sizeof(port_s), "%d", port);
    char *accept = mx_xasprintf("127.0.0.1:%d", port);
    const char *server[] = {"openssl", "s_server", "-quiet", "-www",   "-accept", accept,
                            "-cert",   leaf,       "-key",   leaf_key, NULL};
    pid_t s_server = mx_it_spawn("s_server", server, NULL, NULL);
    assert_true(s_server > 0);
    free(accept);
    mx_it_wait_listening(s_server, port, RUN_TIMEOUT_MS);

    if (have("curl")) {
        snprintf(url_name, sizeof(url_name), "https://localhost:%d/", port);
        snprintf(url_ip, sizeof(url_ip), "https://127.0.0.1:%d/", port);
        const char *by_name[] = {"curl", "-sS",      "-4", "-o",     "/dev/null", "--max-time",
                                 "10",   "--cacert", ca,   url_name, NULL};
        const char *by_ip[] = {"curl", "-sS",      "-o", "/dev/null", "--max-time",
                               "10",   "--cacert", ca,   url_ip,      NULL};
        /* 60: peer certificate cannot be authenticated with known CA certificates. */
        const char *untrusted[] = {"curl",       "-sS", "-o",   "/dev/null",
                                   "--max-time", "10",  url_ip, NULL};
        const char *no_bundle_env[] = {"CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", NULL};
        assert_int_equal(run("curl-name", by_name, NULL), 0);
        assert_int_equal(run("curl-ip", by_ip, NULL), 0);
        assert_int_equal(run("curl-untrusted", untrusted, no_bundle_env), 60);
    }
    if (have("node")) {
        char *extra = mx_xasprintf("NODE_EXTRA_CA_CERTS=%s", ca);
        const char *env[] = {extra, NULL};
        const char *no_env[] = {"NODE_EXTRA_CA_CERTS", NULL};
        const char *by_name[] = {"node", "-e", node_get, port_s, "localhost", "4", NULL};
        const char *by_ip[] = {"node", "-e", node_get, port_s, "127.0.0.1", "4", NULL};
        assert_int_equal(run("node-name", by_name, env), 0);
        assert_int_equal(run("node-ip", by_ip, env), 0);
        assert_int_equal(run("node-untrusted", by_ip, no_env), 1);
        /* UNABLE_TO_VERIFY_LEAF_SIGNATURE or _GET_ISSUER_CERT_LOCALLY: a verify error. */
        out = log_of("node-untrusted");
        assert_contains(out, "UNABLE_TO_");
        free(out);
        free(extra);
    }
    if (have("python3")) {
        const char *py[] = {"python3", "-c", python_get, port_s, ca, NULL};
        assert_int_equal(run("python", py, NULL), 0);
        out = log_of("python");
        assert_contains(out, "localhost TLSv1.");
        assert_contains(out, "127.0.0.1 TLSv1.");
        free(out);
    }
    mx_it_pass();
out:
    free(mcplex);
    free(dir);
    free(ca);
    free(leaf);
    free(leaf_key);
}

/* Exit status of |argv| run to its end; its output in *|out|. */
static int run_out(const char *name, const char *const *argv, char **out)
{
    int rc = mx_it_run(name, argv, NULL, RUN_TIMEOUT_MS, out);
    assert_true(rc >= 0);
    return rc;
}

/*
 * Whoever holds ca.key signs a leaf for a public name: `openssl verify` and
 * GnuTLS's `certtool --verify` refuse it for the name constraint, and take
 * mcplex's own leaf from the same CA (so the refusal is the constraint).
 */
static void test_it_certs_constraint_refuses_public_name(void **state)
{
    (void)state;
    char *out = NULL;

    if (!have("openssl") || !have("certtool"))
        fail_msg("openssl and certtool (Debian gnutls-bin) are needed; .ci/setup installs them");
    char *mcplex = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *dir = mx_it_path("certs");
    char *ca = mx_xasprintf("%s/ca.pem", dir);
    char *leaf = mx_xasprintf("%s/localhost.pem", dir);
    char *evil = NULL, *evil_key = NULL;
    const char *init[] = {mcplex, "certs", "init", "--dir", dir, NULL};
    assert_int_equal(run("init", init, NULL), 0);
    mx_it_sign_leaf(dir, "evil", "www.example.com", "DNS:www.example.com", &evil, &evil_key);

    const char *ossl_evil[] = {"openssl", "verify", "-CAfile", ca, evil, NULL};
    assert_int_not_equal(run_out("verify-evil", ossl_evil, &out), 0);
    assert_contains(out, "permitted subtree violation");
    free(out);
    const char *ossl_good[] = {"openssl", "verify", "-CAfile", ca, leaf, NULL};
    assert_int_equal(run_out("verify-good", ossl_good, &out), 0);
    free(out);
    const char *gnutls_evil[] = {"certtool", "--verify", "--load-ca-certificate", ca, "--infile",
                                 evil,       NULL};
    assert_int_not_equal(run_out("certtool-evil", gnutls_evil, &out), 0);
    assert_contains(out, "violates the signer's constraints");
    free(out);
    const char *gnutls_good[] = {"certtool", "--verify", "--load-ca-certificate", ca, "--infile",
                                 leaf,       NULL};
    assert_int_equal(run_out("certtool-good", gnutls_good, &out), 0);
    assert_contains(out, "The certificate is trusted");
    free(out);
    free(mcplex);
    free(dir);
    free(ca);
    free(leaf);
    free(evil_key);
    free(evil);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_it_certs_real_clients, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_certs_constraint_refuses_public_name, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
