/* SPDX-License-Identifier: MIT */
/*
 * Upstream failures that explain themselves, with real sandbox-sims behind
 * mcplex. An https upstream whose certificate does not verify fails within
 * 2 s with the TLS cause; /health and `mcplex status` show the last error
 * of each upstream (unreachable, auth-failed, tls) and its age, and drop it
 * once the upstream answers again. A provider's Retry-After on 503 or 429
 * paces the probes (the sim counts them), and one past the call's wake time
 * fails it at once; 410 Gone fails at once, shows `gone`, and is never
 * woken. No token and no query string of a URL reaches /health, status or
 * the log.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* POST |body| to |url| (in session |sid| when not NULL); the answer in
 * |a|, its time in *|secs|. */
static void post(const char *url, const char *sid, const char *body, struct mx_it_answer *a,
                 double *secs)
{
    char *sid_h = sid ? mx_xasprintf("Mcp-Session-Id: %s", sid) : NULL;
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", sid_h, NULL};
    double t0 = now_s();
    memset(a, 0, sizeof(*a));
    assert_int_equal(
        mx_it_http_full("POST", url, hdrs, body, 40000, &a->status, &a->headers, &a->body), 0);
    *secs = now_s() - t0;
    mx_it_answer_parse(a);
    free(sid_h);
}

#define INIT_BODY                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"     \
    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"uperr\",\"version\":\"1\"}}}"
#define ECHO_BODY                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","       \
    "\"arguments\":{\"message\":\"hi\"}}}"

/* The error message of a POST of |body| to |url|, or NULL when it
 * succeeded (caller frees); its time in *|secs|. */
static char *call_error(const char *url, const char *sid, const char *body, double *secs)
{
    struct mx_it_answer a;
    post(url, sid, body, &a, secs);
    json_t *err = json_object_get(a.msg, "error");
    const char *m = json_string_value(json_object_get(err, "message"));
    char *out = err ? mx_xstrdup(m ? m : "(an error without a message)") : NULL;
    if (err == NULL && json_object_get(a.msg, "result") == NULL)
        out =
            mx_xasprintf("(HTTP %ld, no JSON-RPC answer: %.200s)", a.status, a.body ? a.body : "");
    fprintf(stderr, "# %s: %.2f s: %s\n", url, *secs, out ? out : "ok");
    mx_it_answer_clear(&a);
    return out;
}

/* Fail unless a POST of |body| to |url| (in session |sid|) fails within
 * |within_s| with an error message holding |want|; |what| names the case. */
static void assert_fails_at_once(const char *what, const char *url, const char *sid,
                                 const char *body, const char *want, double within_s)
{
    double secs;
    char *msg = call_error(url, sid, body, &secs);
    if (msg == NULL || strstr(msg, want) == NULL)
        fail_msg("%s: the call did not fail with \"%s\": %s", what, want, msg ? msg : "(ok)");
    if (secs >= within_s)
        fail_msg("%s: the call failed after %.2f s, not within %.1f s", what, secs, within_s);
    free(msg);
}

/* GET /health of the gateway on |port|; its body in *|raw| (caller frees). */
static json_t *health(int port, char **raw)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *h = json_loads(body, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null(h);
    *raw = body;
    free(url);
    return h;
}

/* /health's entry of upstream |name| (borrowed from |h|). */
static json_t *health_up(json_t *h, const char *name)
{
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(h, "upstreams"), i, u)
    {
        if (strcmp(json_string_value(json_object_get(u, "name")), name) == 0)
            return u;
    }
    fail_msg("/health lists no upstream '%s'", name);
    return NULL;
}

/* Fail unless /health's last error of |name| is of |class| and its
 * message starts with |prefix|, with an age of 0 to 60 s. */
static void assert_last_error(json_t *h, const char *name, const char *class, const char *prefix)
{
    json_t *e = json_object_get(health_up(h, name), "last_error");
    const char *c = json_string_value(json_object_get(e, "class"));
    const char *m = json_string_value(json_object_get(e, "message"));
    json_t *age = json_object_get(e, "age_s");
    if (c == NULL || strcmp(c, class) != 0 || m == NULL || strncmp(m, prefix, strlen(prefix)) != 0)
        fail_msg("/health: the last error of '%s' is %s: %s, not %s: %s...", name, c ? c : "(none)",
                 m ? m : "(none)", class, prefix);
    if (!json_is_integer(age) || json_integer_value(age) < 0 || json_integer_value(age) > 60)
        fail_msg("/health: the last error of '%s' has no age in seconds", name);
    if (json_object_get(e, "at") == NULL)
        fail_msg("/health: the last error of '%s' does not say when", name);
}

static void assert_no_error(json_t *h, const char *name)
{
    json_t *e = json_object_get(health_up(h, name), "last_error");
    if (!json_is_null(e))
        fail_msg("/health: '%s' still shows a last error: %s", name,
                 json_string_value(json_object_get(e, "message")));
}

/* `mcplex status --url` of the gateway on |port|: its output (caller frees). */
static char *status_of(int port)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *url = mx_xasprintf("http://127.0.0.1:%d", port);
    const char *argv[] = {bin, "status", "--url", url, NULL};
    char *out = NULL;
    assert_int_equal(mx_it_run("status", argv, NULL, 20000, &out), 0);
    fprintf(stderr, "%s", out);
    free(url);
    free(bin);
    return out;
}

/* The line of `mcplex status` that tells |name|'s last error ("  NAME
 * CLASS: ... (N s ago)"), or NULL (caller frees). */
static char *status_error_line(const char *out, const char *name)
{
    const char *sec = strstr(out, "\nLAST ERROR\n");
    size_t n = strlen(name);
    for (const char *p = sec ? sec + 12 : NULL; p && *p && *p != '\n';
         p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *q = p + strspn(p, " ");
        if (strncmp(q, name, n) == 0 && q[n] == ' ')
            return mx_xstrndup(p, strcspn(p, "\n"));
    }
    return NULL;
}

static void assert_status_error(const char *out, const char *name, const char *text)
{
    char *line = status_error_line(out, name);
    if (line == NULL || strstr(line, text) == NULL || strstr(line, " s ago)") == NULL)
        fail_msg("`mcplex status` does not show '%s' with \"%s\" and its age: %s", name, text,
                 line ? line : "(no line)");
    free(line);
}

/* sandbox-sim over TLS with |cert| and |key| on 127.0.0.1:|want| (0: any),
 * requiring |token|; its port in *|port|. */
static pid_t start_tls_sim(const char *name, const char *token, const char *cert, const char *key,
                           int want, int *port)
{
    char *bin = mx_xasprintf("%s/sandbox-sim", mx_it_build_dir());
    char *pf = mx_xasprintf("%s/%s.port", mx_it_dir(), name);
    char *listen = mx_xasprintf("127.0.0.1:%d", want);
    char *env0 = mx_xasprintf("MX_SIM_BEARER=%s", token);
    const char *argv[] = {
        bin,         "--listen", listen,         "--port-file",   pf,       "--tls-cert", cert,
        "--tls-key", key,        "--bearer-env", "MX_SIM_BEARER", "--name", name,         NULL};
    const char *env[] = {env0, NULL};
    unlink(pf);
    pid_t pid = mx_it_spawn(name, argv, env, NULL);
    assert_true(pid > 0);
    *port = mx_it_port_file(pid, pf, 10000);
    assert_true(*port > 0);
    free(env0);
    free(listen);
    free(pf);
    free(bin);
    return pid;
}

static void stop(pid_t pid)
{
    assert_int_equal(mx_it_signal(pid, SIGTERM), 0);
    assert_true(mx_it_wait_exit(pid, 5000) >= 0);
}

/* A private CA and its localhost leaf in <test dir>/|dir|. */
static void make_certs(const char *dir, char **ca, char **cert, char **key)
{
    char *path = mx_it_path(dir);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    const char *argv[] = {bin, "certs", "init", "--dir", path, NULL};
    assert_int_equal(mx_it_run("certs", argv, NULL, 20000, NULL), 0);
    *ca = mx_xasprintf("%s/ca.pem", path);
    *cert = mx_xasprintf("%s/localhost.pem", path);
    *key = mx_xasprintf("%s/localhost.key", path);
    free(bin);
    free(path);
}

/* Fail if a canary appears in |text|. */
static void assert_clean(const char *what, const char *text, const char *const *canaries,
                         size_t cnt)
{
    for (size_t i = 0; i < cnt; i++) {
        if (strstr(text, canaries[i]))
            fail_msg("%s holds canary #%zu", what, i);
    }
}

/* mcplex on a free port of 127.0.0.1 (plain HTTP) with the [servers.*]
 * tables |servers| (taken: freed here); returns its port. */
static int serve(char *servers)
{
    int port = mx_it_free_port();
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n%s", port, servers);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    free(cfg_path);
    free(cfg);
    free(servers);
    return port;
}

static void test_last_error_shown_and_cleared(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE], wrong[MX_IT_CANARY_SIZE], query[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    mx_it_canary(wrong, sizeof(wrong));
    mx_it_canary(query, sizeof(query));
    char *ca_good, *cert_good, *key_good, *ca_bad, *cert_bad, *key_bad;
    make_certs("certs-good", &ca_good, &cert_good, &key_good);
    make_certs("certs-bad", &ca_bad, &cert_bad, &key_bad);

    int dead_port = mx_it_free_port(); /* nothing listens there, yet */
    int locked_port, tls_port;
    const char *locked_args[] = {"--name", "locked", NULL};
    pid_t locked = mx_it_start_sim("locked", wrong, locked_args, &locked_port);
    assert_true(locked > 0);
    /* signed by a CA mcplex does not trust for it */
    pid_t tls = start_tls_sim("tlsbox", token, cert_bad, key_bad, 0, &tls_port);

    char *secret = mx_it_secret_file("sim.secret", token);
    int port = serve(mx_xasprintf("[servers.dead]\nurl = \"http://127.0.0.1:%d/mcp?sig=%s\"\n"
                                  "secret = \"file:%s\"\nwake_timeout = \"10s\"\n"
                                  "[servers.locked]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                  "secret = \"file:%s\"\nwake_timeout = \"10s\"\n"
                                  "[servers.tlsbox]\nurl = \"https://127.0.0.1:%d/mcp\"\n"
                                  "ca = \"%s\"\nsecret = \"file:%s\"\nwake_timeout = \"10s\"\n",
                                  dead_port, query, secret, locked_port, secret, tls_port, ca_good,
                                  secret));
    char *dead_url = mx_xasprintf("http://127.0.0.1:%d/mcp/dead", port);
    char *locked_url = mx_xasprintf("http://127.0.0.1:%d/mcp/locked", port);
    char *tls_url = mx_xasprintf("http://127.0.0.1:%d/mcp/tlsbox", port);

    /* the TLS failure is a cause, given within 2 s, as is a refused port */
    char want[160];
    snprintf(want, sizeof(want),
             "'tlsbox' is unreachable: tls: certificate verify failed at https://127.0.0.1:%d",
             tls_port);
    assert_fails_at_once("tls", tls_url, NULL, INIT_BODY, want, 2.0);
    snprintf(want, sizeof(want), "'dead' is unreachable: connection refused at 127.0.0.1:%d",
             dead_port);
    assert_fails_at_once("refused", dead_url, NULL, INIT_BODY, want, 2.0);
    assert_fails_at_once("wrong token", locked_url, NULL, INIT_BODY, "'locked' auth-failed", 1.0);

    /* /health and `mcplex status` say what went wrong, classified, and when */
    char *raw;
    json_t *h = health(port, &raw);
    fprintf(stderr, "# /health: %s\n", raw);
    char dead_cause[96], tls_cause[128];
    snprintf(dead_cause, sizeof(dead_cause), "unreachable: connection refused at 127.0.0.1:%d",
             dead_port);
    snprintf(tls_cause, sizeof(tls_cause), "tls: certificate verify failed at https://127.0.0.1:%d",
             tls_port);
    assert_last_error(h, "dead", "unreachable", dead_cause);
    assert_last_error(h, "locked", "auth-failed", "auth-failed: 401 from locked");
    assert_last_error(h, "tlsbox", "tls", tls_cause);
    assert_string_equal(json_string_value(json_object_get(health_up(h, "locked"), "state")),
                        "auth-failed");
    const char *canaries[] = {token, wrong, query};
    assert_clean("/health", raw, canaries, 3);
    json_decref(h);
    free(raw);
    char *out = status_of(port);
    assert_status_error(out, "dead", dead_cause);
    assert_status_error(out, "locked", "auth-failed: 401 from locked");
    assert_status_error(out, "tlsbox", tls_cause);
    assert_clean("mcplex status", out, canaries, 3);
    free(out);

    /* each comes back: the sim listens on the dead port, the locked one
     * takes mcplex's token, the TLS one shows a certificate it trusts */
    int p;
    char listen[32];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", dead_port);
    const char *dead_args[] = {"--name", "dead", "--listen", listen, NULL};
    assert_true(mx_it_start_sim("dead", token, dead_args, &p) > 0);
    assert_int_equal(p, dead_port);
    stop(locked);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", locked_port);
    const char *back_args[] = {"--name", "locked", "--listen", listen, NULL};
    assert_true(mx_it_start_sim("locked-back", token, back_args, &p) > 0);
    assert_int_equal(p, locked_port);
    stop(tls);
    start_tls_sim("tlsbox-back", token, cert_good, key_good, tls_port, &p);
    assert_int_equal(p, tls_port);

    /* a failed upstream is asked again after 5 s (README, Errors clients
     * see): until then its failure is the answer */
    const char *urls[] = {dead_url, locked_url, tls_url};
    char *msg;
    double secs;
    for (size_t i = 0; i < 3; i++) {
        double until = now_s() + 20.0;
        while ((msg = call_error(urls[i], NULL, INIT_BODY, &secs)) != NULL && now_s() < until) {
            free(msg);
            usleep(250 * 1000);
        }
        if (msg)
            fail_msg("%s did not answer within 20 s of being back: %s", urls[i], msg);
    }
    h = health(port, &raw);
    fprintf(stderr, "# /health: %s\n", raw);
    assert_no_error(h, "dead");
    assert_no_error(h, "locked");
    assert_no_error(h, "tlsbox");
    json_decref(h);
    free(raw);
    out = status_of(port);
    const char *names[] = {"dead", "locked", "tlsbox"};
    for (size_t i = 0; i < 3; i++) {
        char *line = status_error_line(out, names[i]);
        if (line)
            fail_msg("`mcplex status` still shows an error once '%s' is back: %s", names[i], line);
    }
    free(out);

    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, NULL};
    assert_int_equal(mx_it_canary_hits(files, canaries, 3), 0);
    free(log);
    free(tls_url);
    free(locked_url);
    free(dead_url);
    free(secret);
    free(ca_good);
    free(cert_good);
    free(key_good);
    free(ca_bad);
    free(cert_bad);
    free(key_bad);
    mx_it_pass();
}

static void sim_control(int sim_port, const char *token, const char *body)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__control", sim_port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", token);
    const char *hdrs[] = {auth, "Content-Type: application/json", NULL};
    long status = 0;
    char *resp = NULL;
    assert_int_equal(mx_it_http("POST", url, hdrs, body, &status, &resp), 0);
    if (status != 200)
        fail_msg("POST /__control %s: %ld %s", body, status, resp ? resp : "");
    free(resp);
    free(auth);
    free(url);
}

static json_int_t sim_stat(int sim_port, const char *token, const char *key)
{
    json_t *st = mx_it_sim_stats(sim_port, token);
    assert_non_null(st);
    json_int_t n = json_integer_value(json_object_get(st, key));
    json_decref(st);
    return n;
}

/* Wait (at most 10 s) until the gateway on |port| holds every list of
 * upstream |name|, so that it sends nothing more by itself. */
static void wait_lists(int port, const char *name)
{
    double until = now_s() + 10.0;
    for (;;) {
        char *raw;
        json_t *h = health(port, &raw);
        bool all = false;
        size_t i;
        json_t *u;
        json_array_foreach(json_object_get(json_object_get(h, "mcp"), "upstreams"), i, u)
        {
            if (strcmp(json_string_value(json_object_get(u, "name")), name) == 0)
                all = json_object_get(u, "resourceTemplates") != NULL;
        }
        json_decref(h);
        free(raw);
        if (all)
            return;
        if (now_s() > until)
            fail_msg("the lists of '%s' did not arrive within 10 s", name);
        usleep(20 * 1000);
    }
}

static void test_retry_after_paces(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    int paced_port, limited_port;
    /* refuse mode: 503 (429) with Retry-After until woken; a wake takes 2.5 s */
    const char *paced_args[] = {"--name",        "paced",     "--pause-mode",
                                "refuse",        "--wake-ms", "2500",
                                "--retry-after", "1",         NULL};
    const char *limited_args[] = {
        "--name", "limited",       "--pause-mode", "refuse", "--refuse-status",
        "429",    "--retry-after", "30",           NULL};
    assert_true(mx_it_start_sim("paced", token, paced_args, &paced_port) > 0);
    assert_true(mx_it_start_sim("limited", token, limited_args, &limited_port) > 0);
    char *secret = mx_it_secret_file("sim.secret", token);
    int port = serve(mx_xasprintf("[servers.paced]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                  "secret = \"file:%s\"\nwake_timeout = \"10s\"\n"
                                  "wake = \"url:http://127.0.0.1:%d/__wake\"\n"
                                  "[servers.limited]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                  "secret = \"file:%s\"\nwake_timeout = \"10s\"\n",
                                  paced_port, secret, paced_port, limited_port, secret));
    char *paced_url = mx_xasprintf("http://127.0.0.1:%d/mcp/paced", port);
    char *limited_url = mx_xasprintf("http://127.0.0.1:%d/mcp/limited", port);

    /* paused: the wake hook starts a 2.5 s wake at the first refusal, and
     * every refusal asks for a second; probes go about 1 s apart, not every
     * 10 to 50 ms */
    sim_control(paced_port, token, "{\"action\":[\"pause\",\"reset_stats\"]}");
    double secs;
    char *msg = call_error(paced_url, NULL, INIT_BODY, &secs);
    if (msg)
        fail_msg("the paced call failed: %s", msg);
    json_int_t refused = sim_stat(paced_port, token, "refused");
    fprintf(stderr, "# paced: %lld refusals in %.2f s\n", (long long)refused, secs);
    if (refused < 2 || refused > 4)
        fail_msg("the sim refused %lld probes in %.2f s; with Retry-After: 1 and a 2.5 s wake "
                 "it should see 3",
                 (long long)refused, secs);
    if (secs < 2.5 || secs > 5.0)
        fail_msg("the paced call took %.2f s, not about 3 s", secs);

    /* a Retry-After past what is left of wake_timeout: the call fails at
     * once, after one request, and the next one does not ask again */
    char sid[128];
    mx_it_open_session(paced_url, "paced", sid, sizeof(sid));
    wait_lists(port, "paced");
    sim_control(paced_port, token,
                "{\"retry_after\":30,\"wake_ms\":60000,\"action\":[\"pause\",\"reset_stats\"]}");
    assert_fails_at_once("503 with Retry-After: 30", paced_url, sid, ECHO_BODY,
                         "'paced' asked to retry after 30 s", 1.0);
    assert_int_equal(sim_stat(paced_port, token, "refused"), 1);
    assert_fails_at_once("a second call within the Retry-After", paced_url, sid, ECHO_BODY,
                         "'paced' asked to retry after", 1.0);
    assert_int_equal(sim_stat(paced_port, token, "refused"), 1);

    /* 429 with Retry-After is honoured the same way */
    sim_control(limited_port, token, "{\"action\":[\"pause\",\"reset_stats\"]}");
    assert_fails_at_once("429 with Retry-After: 30", limited_url, NULL, INIT_BODY,
                         "'limited' asked to retry after 30 s", 1.0);
    assert_int_equal(sim_stat(limited_port, token, "refused"), 1);

    free(limited_url);
    free(paced_url);
    free(secret);
    mx_it_pass();
}

static void test_gone(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    int sim_port;
    const char *args[] = {"--name", "box", NULL};
    pid_t sim = mx_it_start_sim("box", token, args, &sim_port);
    assert_true(sim > 0);
    char *secret = mx_it_secret_file("sim.secret", token);
    char *hook_ran = mx_it_path("hook-ran");
    int port = serve(mx_xasprintf("[servers.box]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                  "secret = \"file:%s\"\nwake_timeout = \"10s\"\n"
                                  "wake = \"cmd:/usr/bin/touch %s\"\n",
                                  sim_port, secret, hook_ran));
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/box", port);
    char sid[128];
    mx_it_open_session(url, "gone", sid, sizeof(sid));
    wait_lists(port, "box");

    /* the sandbox is deleted: 410 fails the call at once, naming the server */
    sim_control(sim_port, token, "{\"gone\":true,\"action\":\"reset_stats\"}");
    const char *want = "'box': the sandbox is gone (410 from upstream); recreate it and update "
                       "its url";
    assert_fails_at_once("410", url, sid, ECHO_BODY, want, 0.5);
    assert_int_equal(sim_stat(sim_port, token, "gone"), 1);
    char *raw;
    json_t *h = health(port, &raw);
    fprintf(stderr, "# /health: %s\n", raw);
    assert_string_equal(json_string_value(json_object_get(health_up(h, "box"), "state")), "gone");
    assert_last_error(h, "box", "gone", "gone: 410 from box");
    json_decref(h);
    free(raw);
    char *out = status_of(port);
    assert_status_error(out, "box", "gone: 410 from box");
    free(out);

    /* nothing is left at its address: still gone, at once, and never woken */
    stop(sim);
    assert_fails_at_once("gone, and nothing listens", url, sid, ECHO_BODY, want, 0.5);
    if (access(hook_ran, F_OK) == 0)
        fail_msg("the wake hook of a gone upstream ran");

    free(url);
    free(hook_ran);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_last_error_shown_and_cleared, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_paces, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_gone, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
