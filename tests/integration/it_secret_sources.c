/* SPDX-License-Identifier: MIT */
/*
 * Secret sources people already use: keyring:SERVICE/ACCOUNT against a real
 * Secret Service (gnome-keyring-daemon on a private D-Bus session made by
 * dbus-run-session, the item stored by secret-tool) and cred:NAME from a
 * systemd-style $CREDENTIALS_DIRECTORY. Two sandbox-sims, each requiring its
 * own canary token, are reached through /mcp/<server>; `mcplex check`
 * explains a missing item, a missing Secret Service and a missing
 * credentials directory with the messages below, verbatim; no token shows
 * in any output.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static char *who(const char *base, const char *server)
{
    char *url = mx_xasprintf("%s/mcp/%s", base, server);
    json_t *out = mx_it_client_ok(url, "call", "{\"name\":\"whoami\"}");
    char *name = mx_xstrdup(mx_it_result_text(out) ? mx_it_result_text(out) : "(none)");
    json_decref(out);
    free(url);
    return name;
}

static void test_keyring_and_cred(void **state)
{
    char ta[MX_IT_CANARY_SIZE], tb[MX_IT_CANARY_SIZE];
    int pa, pb, port;
    (void)state;
    mx_it_canary(ta, sizeof(ta));
    mx_it_canary(tb, sizeof(tb));
    const char *a_args[] = {"--name", "sim-a", NULL};
    const char *b_args[] = {"--name", "sim-b", NULL};
    assert_true(mx_it_start_sim("sim-a", ta, a_args, &pa) > 0);
    assert_true(mx_it_start_sim("sim-b", tb, b_args, &pb) > 0);
    port = mx_it_free_port();
    assert_true(port > 0);

    /* the keyring item's value comes from a file on secret-tool's stdin;
     * the credential is a 0600 file in its own directory */
    char *ka = mx_it_secret_file("a.keyring-value", ta);
    char *creds = mx_it_path("credentials");
    assert_int_equal(mkdir(creds, 0700), 0);
    char *cred_file = mx_xasprintf("%s/b-token", creds);
    assert_int_equal(mx_it_write_file(cred_file, tb, strlen(tb)), 0);
    assert_int_equal(chmod(cred_file, 0600), 0);

    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"keyring:mcplex-it/alice\"\n"
                             "[servers.b]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"cred:b-token\"\n",
                             port, pa, pb);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *missing = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                                 "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                 "secret = \"keyring:mcplex-it/nobody\"\n",
                                 port, pa);
    char *missing_path = mx_it_path("missing.toml");
    assert_int_equal(mx_it_write_file(missing_path, missing, strlen(missing)), 0);

    /* the session: a keyring unlocked with a throwaway password, the item
     * stored, `mcplex check` of an item that is not there, then mcplex */
    char *home = mx_it_path("home");
    char *pidfile = mx_it_path("mcplex.pid");
    char *check_out = mx_it_path("check-missing.out");
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *script = mx_xasprintf(
        "set -e\n"
        "mkdir -p '%s'\n"
        "export HOME='%s'\n"
        "eval \"$(printf throwaway | gnome-keyring-daemon --unlock --components=secrets)\"\n"
        "secret-tool store --label 'mcplex test' service mcplex-it account alice < '%s'\n"
        "'%s' check -c '%s' > '%s' 2>&1 || true\n"
        "CREDENTIALS_DIRECTORY='%s' '%s' serve -c '%s' &\n"
        "echo $! > '%s'\n"
        "wait $!\n",
        home, home, ka, bin, missing_path, check_out, creds, bin, cfg_path, pidfile);
    char *script_path = mx_it_path("session.sh");
    assert_int_equal(mx_it_write_file(script_path, script, strlen(script)), 0);
    const char *argv[] = {"dbus-run-session", "--", "sh", script_path, NULL};
    const char *env[] = {"DBUS_SESSION_BUS_ADDRESS", "DISPLAY", NULL};
    pid_t session = mx_it_spawn("session", argv, env, NULL);
    assert_true(session > 0);
    char *base = mx_xasprintf("http://127.0.0.1:%d", port);
    char *health = mx_xasprintf("%s/health", base);
    assert_int_equal(mx_it_wait_http(health, 30000), 200);

    char *w = who(base, "a");
    assert_string_equal(w, "sim-a"); /* the keyring's token was accepted */
    free(w);
    w = who(base, "b");
    assert_string_equal(w, "sim-b"); /* the credential's */
    free(w);

    char *out = mx_it_read_file(check_out, NULL);
    assert_non_null(out);
    assert_non_null(strstr(out, "secret keyring:mcplex-it/nobody: no item with service "
                                "'mcplex-it' and account 'nobody' in the keyring; store one with "
                                "`secret-tool store --label mcplex service mcplex-it account "
                                "nobody`"));
    free(out);

    /* mcplex ends; the session (keyring daemon and bus) ends with it */
    char *pid_text = mx_it_read_file(pidfile, NULL);
    assert_non_null(pid_text);
    pid_t mcplex = (pid_t)strtol(pid_text, NULL, 10);
    assert_true(mcplex > 0);
    assert_int_equal(kill(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(session, 15000) >= 0);
    free(pid_text);

    /* outside any D-Bus session, without a credentials directory */
    const char *bare[] = {"DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "CREDENTIALS_DIRECTORY", NULL};
    const char *check[] = {bin, "check", "-c", cfg_path, NULL};
    char *text = NULL;
    assert_int_equal(mx_it_run("check-bare", check, bare, 30000, &text), 1);
    assert_non_null(strstr(text, "secret keyring:mcplex-it/alice: no Secret Service answered ("));
    assert_non_null(strstr(text, "); start one (gnome-keyring-daemon, KeePassXC) in this session, "
                                 "or use vault:NAME"));
    assert_non_null(strstr(text, "secret cred:b-token: $CREDENTIALS_DIRECTORY is not set; cred: "
                                 "works in a systemd unit with LoadCredential=b-token:PATH or "
                                 "LoadCredentialEncrypted=b-token:PATH"));
    free(text);

    char *log = mx_it_path("session.log");
    const char *files[] = {log, check_out, NULL};
    const char *canaries[] = {ta, tb};
    assert_int_equal(mx_it_canary_hits(files, canaries, 2), 0);
    free(log);
    free(base);
    free(health);
    free(script);
    free(script_path);
    free(bin);
    free(check_out);
    free(pidfile);
    free(home);
    free(missing);
    free(missing_path);
    free(cfg);
    free(cfg_path);
    free(cred_file);
    free(creds);
    free(ka);
    mx_it_pass();
}

/* Well-formed references only: the command line says what a good one is. */
static void test_reference_syntax(void **state)
{
    (void)state;
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:1\"\ntls = false\n"
                             "[servers.a]\nurl = \"http://127.0.0.1:2/mcp\"\n"
                             "secret = \"keyring:no-account\"\n"
                             "[servers.b]\nurl = \"http://127.0.0.1:3/mcp\"\n"
                             "secret = \"cred:../escape\"\n");
    char *cfg_path = mx_it_path("bad.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    const char *check[] = {bin, "check", "-c", cfg_path, NULL};
    char *text = NULL;
    assert_int_equal(mx_it_run("check-syntax", check, NULL, 30000, &text), 1);
    assert_non_null(strstr(text, "keyring: needs SERVICE/ACCOUNT (the item's service and "
                                 "account attributes)"));
    free(text);
    cfg[0] = '\0';
    free(cfg);
    cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:1\"\ntls = false\n"
                       "[servers.b]\nurl = \"http://127.0.0.1:3/mcp\"\n"
                       "secret = \"cred:../escape\"\n");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_int_equal(mx_it_run("check-syntax-2", check, NULL, 30000, &text), 1);
    assert_non_null(
        strstr(text, "cred: needs a credential name of 1 to 255 characters from A-Za-z0-9_.:-"));
    free(text);
    free(cfg);
    free(cfg_path);
    free(bin);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keyring_and_cred, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_reference_syntax, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
