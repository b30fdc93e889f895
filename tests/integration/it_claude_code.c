/* SPDX-License-Identifier: MIT */
/*
 * Clients that verify TLS with something other than OpenSSL, against the
 * real `mcplex serve` and the CA it made on first run: Claude Code (the npm
 * package pinned in tests/js, a native build whose TLS stack is BoringSSL)
 * with `claude mcp add --transport http` and `claude mcp list`, whose health
 * check must report the server connected; and GnuTLS's gnutls-cli, for
 * localhost and 127.0.0.1. Without the CA both must refuse. Claude Code runs
 * with HOME, XDG dirs and CLAUDE_CONFIG_DIR in the test directory and with
 * auto-update and non-essential traffic off; no account is needed for these
 * two commands. A CA of the old kind (IP-address name constraints) is what
 * Claude Code refused; serve warns about one, and `certs init --renew`
 * replaces it.
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
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "certs_int.h"
#include "harness.h"

/* One claude or gnutls-cli run; `claude mcp list` takes well under a second here. */
#define RUN_TIMEOUT_MS 30000

struct world {
    int port;
    pid_t mcplex;
    char *state; /* state_dir */
    char *ca;    /* <state>/certs/ca.pem */
    char *cfg;
    char *home; /* HOME for claude */
    char *url;  /* https://127.0.0.1:<port>/mcp */
};

static char *bin(const char *name)
{
    return mx_xasprintf("%s/%s", mx_it_build_dir(), name);
}

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static void world_free(struct world *w)
{
    free(w->state);
    free(w->ca);
    free(w->cfg);
    free(w->home);
    free(w->url);
}

/* A config for a TLS listener whose certificates are the state dir's defaults. */
static void world_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    w->state = mx_it_path("state");
    w->ca = mx_xasprintf("%s/certs/ca.pem", w->state);
    w->home = mx_it_path("home");
    w->port = mx_it_free_port();
    assert_true(w->port > 0);
    w->url = mx_xasprintf("https://127.0.0.1:%d/mcp", w->port);
    char *cfg = mx_xasprintf("[listen]\n"
                             "address = \"127.0.0.1:%d\"\n"
                             "tls = true\n"
                             "[proxy]\n"
                             "state_dir = \"%s\"\n",
                             w->port, w->state);
    w->cfg = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg, cfg, strlen(cfg)), 0);
    free(cfg);
}

/*
 * `claude <args>` with its config in the test directory; with |ca| it
 * trusts that CA (NODE_EXTRA_CA_CERTS). Returns the exit status; the output
 * in *|out|.
 */
static int claude(const struct world *w, const char *name, const char *const *args, const char *ca,
                  char **out)
{
    const char *argv[16];
    size_t n = 0;
    char *exe = mx_xasprintf("%s/tests/js/node_modules/.bin/claude", mx_it_source_dir());
    if (access(exe, X_OK) != 0)
        fail_msg("%s is missing: run `npm ci` in tests/js", exe);
    argv[n++] = exe;
    for (; *args && n < 15; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    char *home = mx_xasprintf("HOME=%s", w->home);
    char *cfg_dir = mx_xasprintf("CLAUDE_CONFIG_DIR=%s/.claude", w->home);
    char *xdg_config = mx_xasprintf("XDG_CONFIG_HOME=%s/.config", w->home);
    char *xdg_cache = mx_xasprintf("XDG_CACHE_HOME=%s/.cache", w->home);
    char *xdg_data = mx_xasprintf("XDG_DATA_HOME=%s/.local/share", w->home);
    char *xdg_state = mx_xasprintf("XDG_STATE_HOME=%s/.local/state", w->home);
    char *extra =
        ca ? mx_xasprintf("NODE_EXTRA_CA_CERTS=%s", ca) : mx_xstrdup("NODE_EXTRA_CA_CERTS");
    const char *env[] = {
        home, cfg_dir, xdg_config, xdg_cache, xdg_data, xdg_state, extra, "DISABLE_AUTOUPDATER=1",
        "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
        /* Nothing of the user's account or network setup leaks in. */
        "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
        "http_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", NULL};
    int rc = mx_it_run(name, argv, env, RUN_TIMEOUT_MS, out);
    assert_true(rc >= 0);
    free(exe);
    free(home);
    free(cfg_dir);
    free(xdg_config);
    free(xdg_cache);
    free(xdg_data);
    free(xdg_state);
    free(extra);
    return rc;
}

/* `claude mcp list` with |ca| trusted (NULL: none); its output. */
static char *mcp_list(const struct world *w, const char *name, const char *ca)
{
    static const char *const args[] = {"mcp", "list", NULL};
    char *out = NULL;
    claude(w, name, args, ca, &out);
    fprintf(stderr, "it_claude_code: %s:\n%s\n", name, out);
    return out;
}

static void mcp_add(const struct world *w)
{
    const char *args[] = {"mcp",  "add",    "-s",   "user", "--transport",
                          "http", "mcplex", w->url, NULL};
    char *out = NULL;
    int rc = claude(w, "claude-add", args, NULL, &out);
    if (rc != 0)
        fail_msg("claude mcp add: exit %d:\n%s", rc, out);
    free(out);
}

/* gnutls-cli against |host| on the listener, trusting |ca|; its output. */
static int gnutls(const struct world *w, const char *name, const char *host, const char *ca,
                  char **out)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", w->port);
    const char *argv[] = {"gnutls-cli", "--x509cafile", ca, "-p", port, host, NULL};
    int rc = mx_it_run(name, argv, NULL, RUN_TIMEOUT_MS, out);
    assert_true(rc >= 0);
    return rc;
}

/* mcplex makes its CA on first run; Claude Code and GnuTLS accept what it serves. */
static void test_it_claude_code_connects(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL;

    world_init(&w);
    w.mcplex = mx_it_start_mcplex_tls(w.cfg, w.port, w.ca);
    assert_true(w.mcplex > 0);
    mcp_add(&w);

    out = mcp_list(&w, "claude-list", w.ca);
    assert_contains(out, w.url);
    assert_contains(out, "(HTTP) - ✔ Connected");
    assert_null(strstr(out, "Failed"));
    free(out);
    /* The check does check: without the CA the same server fails. */
    out = mcp_list(&w, "claude-list-untrusted", NULL);
    assert_contains(out, "Failed to connect");
    assert_null(strstr(out, "Connected"));
    free(out);

    static const char *const hosts[] = {"localhost", "127.0.0.1"};
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        assert_int_equal(gnutls(&w, "gnutls", hosts[i], w.ca, &out), 0);
        assert_contains(out, "The certificate is trusted");
        assert_contains(out, "Handshake was completed");
        free(out);
    }
    /* A CA that did not sign the leaf: GnuTLS refuses the handshake. */
    char *other = mx_it_path("other");
    char *mcplex = bin("mcplex");
    const char *init[] = {mcplex, "certs", "init", "--dir", other, NULL};
    assert_int_equal(mx_it_run("certs-init-other", init, NULL, RUN_TIMEOUT_MS, NULL), 0);
    char *other_ca = mx_xasprintf("%s/ca.pem", other);
    assert_int_not_equal(gnutls(&w, "gnutls-untrusted", "localhost", other_ca, &out), 0);
    assert_contains(out, "The certificate is NOT trusted");
    free(out);
    free(other_ca);
    free(mcplex);
    free(other);
    world_free(&w);
    mx_it_pass();
}

/* How often |needle| occurs in |hay|. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* A CA of the old kind in the state dir: serve warns, Claude Code refuses it, --renew fixes it. */
static void test_it_claude_code_legacy_ca(void **state)
{
    (void)state;
    struct world w;
    struct mx_certs_paths p;
    struct mx_diag d = {0};
    char *out = NULL;

    world_init(&w);
    char *certs = mx_xasprintf("%s/certs", w.state);
    assert_int_equal(mkdir(w.state, 0700), 0);
    assert_int_equal(mkdir(certs, 0700), 0);
    mx_certs_paths_init(&p, certs);
    if (mx_certs_create(&p, MX_CERTS_CA_NAME_CONSTRAINTS_V1, false, &d) != 0)
        fail_msg("create: %s", d.msg);
    mx_certs_paths_clear(&p);

    w.mcplex = mx_it_start_mcplex_tls(w.cfg, w.port, w.ca);
    assert_true(w.mcplex > 0);
    char *log_path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(log_path, NULL);
    assert_non_null(log);
    assert_contains(log, "IP-address name constraints");
    assert_contains(log, "run `mcplex certs init --renew`");
    free(log);
    mcp_add(&w);
    out = mcp_list(&w, "claude-list-legacy", w.ca);
    assert_contains(out, "Failed to connect");
    assert_contains(out, "UNSUPPORTED_CONSTRAINT_TYPE");
    free(out);
    /* GnuTLS evaluates IP constraints, and takes the old CA. */
    assert_int_equal(gnutls(&w, "gnutls-legacy", "127.0.0.1", w.ca, &out), 0);
    assert_contains(out, "The certificate is trusted");
    free(out);
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(w.mcplex, 10000) >= 0);

    char *mcplex = bin("mcplex");
    const char *init[] = {mcplex, "certs", "init", "-c", w.cfg, NULL};
    assert_int_equal(mx_it_run("certs-init", init, NULL, RUN_TIMEOUT_MS, &out), 1);
    assert_contains(out, "mcplex certs init --renew");
    free(out);
    const char *renew[] = {mcplex, "certs", "init", "--renew", "-c", w.cfg, NULL};
    assert_int_equal(mx_it_run("certs-renew", renew, NULL, RUN_TIMEOUT_MS, NULL), 0);

    w.mcplex = mx_it_start_mcplex_tls(w.cfg, w.port, w.ca);
    assert_true(w.mcplex > 0);
    log = mx_it_read_file(log_path, NULL);
    assert_non_null(log);
    assert_int_equal(count_of(log, "IP-address name constraints"), 1);
    free(log);
    out = mcp_list(&w, "claude-list-renewed", w.ca);
    assert_contains(out, "(HTTP) - ✔ Connected");
    free(out);
    free(mcplex);
    free(log_path);
    free(certs);
    world_free(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_it_claude_code_connects, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_it_claude_code_legacy_ca, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
