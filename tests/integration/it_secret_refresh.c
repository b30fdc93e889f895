/* SPDX-License-Identifier: MIT */
/*
 * Credentials that expire. A sandbox-sim whose accepted token rotates at
 * run time (POST /__control {"credential": ...}) behind mcplex, with a
 * secret that a small script prints from a token file, counting its runs
 * in another file.
 *
 * - A `cmd:` secret: after a rotation a call through /mcp gets 401, the
 *   script runs once more and the call succeeds with the new token; one
 *   through /mcp/<server> then needs no other run. After the next, five
 *   calls sent together through /mcp/<server> all get 401, the script runs
 *   exactly once more, and all five succeed (each run once by the sim);
 *   /mcp needs no other run. A reload whose `cmd:` prints the refreshed
 *   token leaves the server unchanged (its sessions go on).
 *   The sim echoes the credential it got (--whoami-credential): the trace
 *   shows the refreshed token masked.
 * - A `refresh = "cmd:..."` key beside a `file:` secret: the same renewal;
 *   and when the command fails, prints nothing, prints a token the sim
 *   refuses too, or hangs past its bound, the call fails with -32011
 *   naming the server and its secret reference, having been sent once
 *   (twice for the refused new token, never more).
 *
 * No token appears in any log, the trace, or anything the test kept.
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
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define CALLS 5 /* sent together after the rotation */

static const char *const json_hdrs[] = {"Content-Type: application/json",
                                        "Accept: application/json, text/event-stream", NULL};

/* What one test sets up: the files outside the test directory (they hold
 * tokens), the sim and mcplex. */
struct rig {
    char tok[3][MX_IT_CANARY_SIZE]; /* the tokens the sim accepts in turn */
    char *dir;                      /* <test dir>.cfg */
    char *token_path;               /* what the script prints */
    char *mode_path;                /* "ok", "fail", "empty", "slow" */
    char *count_path;               /* one line per run, in the test directory */
    char *script;
    char *cfg_path;
    char *trace_path;
    int sim_port;
    int port;
    pid_t mcplex;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_text(const char *path, const char *text)
{
    assert_int_equal(mx_it_write_file(path, text, strlen(text)), 0);
}

/* Three random tokens; the token file holds the first. The script counts
 * its run, then prints the token file (or fails, prints nothing, or hangs,
 * as the mode file says). */
static void rig_files(struct rig *r)
{
    for (int i = 0; i < 3; i++)
        mx_it_canary(r->tok[i], sizeof(r->tok[i]));
    r->dir = mx_xasprintf("%s.cfg", mx_it_dir());
    char *cmd = mx_xasprintf("rm -rf '%s' && mkdir -m 700 '%s'", r->dir, r->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    r->token_path = mx_xasprintf("%s/token", r->dir);
    r->mode_path = mx_xasprintf("%s/mode", r->dir);
    r->count_path = mx_it_path("runs.txt");
    r->script = mx_xasprintf("%s/print-token.sh", r->dir);
    r->cfg_path = mx_xasprintf("%s/mcplex.toml", r->dir);
    r->trace_path = mx_it_path("trace.jsonl");
    write_text(r->token_path, r->tok[0]);
    write_text(r->mode_path, "ok");
    write_text(r->count_path, "");
    write_text(r->script, "#!/bin/sh\n"
                          "echo run >> \"$1\"\n"
                          "case \"$(cat \"$3\")\" in\n"
                          "fail) exit 1 ;;\n"
                          "empty) exit 0 ;;\n"
                          "slow) exec sleep 30 ;;\n"
                          "esac\n"
                          "sleep 0.3\n" /* calls refused meanwhile join this run */
                          "exec cat \"$2\"\n");
    assert_int_equal(chmod(r->script, 0700), 0);
}

static void rig_clear(struct rig *r)
{
    char *cmd = mx_xasprintf("rm -rf '%s'", r->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(r->dir);
    free(r->token_path);
    free(r->mode_path);
    free(r->count_path);
    free(r->script);
    free(r->cfg_path);
    free(r->trace_path);
}

static int runs(const struct rig *r)
{
    char *text = mx_it_read_file(r->count_path, NULL);
    assert_non_null(text);
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    free(text);
    return n;
}

/* mcplex in front of the sim as server |name|: |secret_lines| the server's
 * credential keys. */
static void rig_start(struct rig *r, const char *name, const char *secret_lines)
{
    r->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\ntrace = \"%s\"\nlog_level = \"debug\"\n"
                             "[servers.%s]\nurl = \"http://127.0.0.1:%d/mcp\"\n%s",
                             r->port, mx_it_dir(), r->trace_path, name, r->sim_port, secret_lines);
    write_text(r->cfg_path, cfg);
    free(cfg);
    r->mcplex = mx_it_start_mcplex(r->cfg_path, r->port);
    assert_true(r->mcplex > 0);
}

/* The sim accepts |next| from now on (and answers a wrong one after
 * |delay_ms|), and with |file_too| the script prints it. */
static void rotate(const struct rig *r, const char *current, const char *next, bool file_too,
                   int delay_ms)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__control", r->sim_port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", current);
    const char *hdrs[] = {"Content-Type: application/json", auth, NULL};
    char *body =
        mx_xasprintf("{\"credential\":\"%s\",\"unauthorized_delay_ms\":%d}", next, delay_ms);
    long status = 0;
    char *resp = NULL;
    assert_int_equal(mx_it_http("POST", url, hdrs, body, &status, &resp), 0);
    if (status != 200)
        fail_msg("the sim did not take the new credential: HTTP %ld", status);
    if (file_too)
        write_text(r->token_path, next);
    free(resp);
    free(body);
    free(auth);
    free(url);
}

static char *call_body(int id, const char *tool, const char *message)
{
    if (message == NULL)
        return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
                            "{\"name\":\"%s\",\"arguments\":{}}}",
                            id, tool);
    return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"%s\",\"arguments\":{\"message\":\"%s\"}}}",
                        id, tool, message);
}

/* One tools/call on session |sid| at |url|. */
static void call(const char *url, const char *sid, int id, const char *tool, const char *message,
                 struct mx_it_answer *a)
{
    char *sid_h = mx_xasprintf("Mcp-Session-Id: %s", sid);
    const char *hdrs[] = {json_hdrs[0], json_hdrs[1], sid_h, NULL};
    char *body = call_body(id, tool, message);
    memset(a, 0, sizeof(*a));
    assert_int_equal(
        mx_it_http_full("POST", url, hdrs, body, 30000, &a->status, &a->headers, &a->body), 0);
    mx_it_answer_parse(a);
    free(body);
    free(sid_h);
}

static void expect_echo(struct mx_it_answer *a, const char *want)
{
    const char *text = mx_it_first_text(mx_it_result(a));
    if (text == NULL || strcmp(text, want) != 0)
        fail_msg("echo %s answered HTTP %ld: %s", want, a->status, a->body ? a->body : "");
}

static void echo_ok(const char *url, const char *sid, int id, const char *message)
{
    struct mx_it_answer a;
    call(url, sid, id, "echo", message, &a);
    expect_echo(&a, message);
    mx_it_answer_clear(&a);
}

/* ---- calls in flight while the test does something else ---- */

struct pending {
    CURL *h;
    struct curl_slist *hdrs;
    char *body;
    char *resp;
    size_t len;
};

struct batch {
    CURLM *m;
    int cnt;
    int running;
    struct pending q[CALLS];
};

static size_t collect(char *p, size_t size, size_t n, void *data)
{
    struct pending *q = data;
    size_t add = size * n;
    q->resp = mx_xrealloc(q->resp, q->len + add + 1);
    memcpy(q->resp + q->len, p, add);
    q->len += add;
    q->resp[q->len] = '\0';
    return add;
}

/* Send |cnt| echo calls, "<prefix><i>", on session |sid| without waiting
 * for their answers. */
static void batch_start(struct batch *b, const char *url, const char *sid, const char *prefix,
                        int cnt)
{
    char *sid_h = mx_xasprintf("Mcp-Session-Id: %s", sid);
    assert_true(cnt <= CALLS);
    memset(b, 0, sizeof(*b));
    b->m = curl_multi_init();
    b->cnt = cnt;
    b->running = cnt;
    for (int i = 0; i < cnt; i++) {
        struct pending *q = &b->q[i];
        char msg[32];
        snprintf(msg, sizeof(msg), "%s%d", prefix, i);
        q->body = call_body(100 + i, "echo", msg);
        q->hdrs = curl_slist_append(NULL, json_hdrs[0]);
        q->hdrs = curl_slist_append(q->hdrs, json_hdrs[1]);
        q->hdrs = curl_slist_append(q->hdrs, sid_h);
        q->h = curl_easy_init();
        curl_easy_setopt(q->h, CURLOPT_URL, url);
        curl_easy_setopt(q->h, CURLOPT_POSTFIELDS, q->body);
        curl_easy_setopt(q->h, CURLOPT_HTTPHEADER, q->hdrs);
        curl_easy_setopt(q->h, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(q->h, CURLOPT_WRITEDATA, q);
        curl_easy_setopt(q->h, CURLOPT_TIMEOUT_MS, 30000L);
        curl_multi_add_handle(b->m, q->h);
    }
    free(sid_h);
}

/* Move the calls on for up to |max_s|, or until all are answered. */
static void batch_run(struct batch *b, double max_s)
{
    double deadline = now_s() + max_s;
    do {
        assert_int_equal(curl_multi_perform(b->m, &b->running), CURLM_OK);
        if (b->running > 0)
            assert_int_equal(curl_multi_poll(b->m, NULL, 0, 20, NULL), CURLM_OK);
    } while (b->running > 0 && now_s() < deadline);
}

/* Call |i|'s answer, once all are in; the caller clears it. */
static void batch_answer(struct batch *b, int i, struct mx_it_answer *a)
{
    struct pending *q = &b->q[i];
    memset(a, 0, sizeof(*a));
    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &a->status);
    a->body = q->resp ? q->resp : mx_xstrdup("");
    q->resp = NULL;
    mx_it_answer_parse(a);
}

static void batch_clear(struct batch *b)
{
    for (int i = 0; i < b->cnt; i++) {
        struct pending *q = &b->q[i];
        curl_multi_remove_handle(b->m, q->h);
        curl_easy_cleanup(q->h);
        curl_slist_free_all(q->hdrs);
        free(q->body);
        free(q->resp);
    }
    curl_multi_cleanup(b->m);
}

/* |cnt| echo calls "c<i>" on session |sid|, all sent before any answer is
 * read; each must answer its own message. */
static void echo_together(const char *url, const char *sid, int cnt)
{
    struct batch b;
    batch_start(&b, url, sid, "c", cnt);
    batch_run(&b, 40.0);
    assert_int_equal(b.running, 0);
    for (int i = 0; i < cnt; i++) {
        char want[16];
        struct mx_it_answer a;
        snprintf(want, sizeof(want), "c%d", i);
        batch_answer(&b, i, &a);
        expect_echo(&a, want);
        mx_it_answer_clear(&a);
    }
    batch_clear(&b);
}

/* ---- what the sim saw ---- */

static json_int_t stat_of(const struct rig *r, const char *token, const char *group,
                          const char *key)
{
    json_t *s = mx_it_sim_stats(r->sim_port, token);
    assert_non_null(s);
    json_t *v = group ? json_object_get(json_object_get(s, group), key) : json_object_get(s, key);
    json_int_t n = json_integer_value(v);
    json_decref(s);
    return n;
}

/* No token in any file of the test directory (logs, the trace, the runs
 * file); the files that hold them on purpose live elsewhere. */
static void assert_no_tokens(const char *const *tokens, size_t cnt)
{
    const char *paths[] = {mx_it_dir(), NULL};
    assert_int_equal(mx_it_canary_hits(paths, tokens, cnt), 0);
}

/* Stop mcplex, then no token may be in the test directory; the files
 * that held them go. */
static void rig_stop(struct rig *r)
{
    const char *tokens[] = {r->tok[0], r->tok[1], r->tok[2]};
    assert_int_equal(mx_it_signal(r->mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(r->mcplex, 10000) >= 0);
    assert_no_tokens(tokens, 3);
    rig_clear(r);
}

/* Fail unless /health shows the one upstream in |want|. */
static void assert_state(const struct rig *r, const char *want)
{
    json_t *h = mx_it_health(r->port, NULL);
    const char *state = json_string_value(
        json_object_get(json_array_get(json_object_get(h, "upstreams"), 0), "state"));
    if (state == NULL || strcmp(state, want) != 0)
        fail_msg("the upstream is %s, not %s", state ? state : "(none)", want);
    json_decref(h);
}

/* ---- the scenarios ---- */

static void test_cmd_secret_rotates(void **state)
{
    (void)state;
    struct rig r = {0};
    rig_files(&r);
    const char *t1 = r.tok[0], *t2 = r.tok[1], *t3 = r.tok[2];
    const char *sim_args[] = {"--name", "rot", "--whoami-credential", "yes", NULL};
    assert_true(mx_it_start_sim("rot", t1, sim_args, &r.sim_port) > 0);
    char *secret = mx_xasprintf("secret = \"cmd:%s %s %s %s\"\n", r.script, r.count_path,
                                r.token_path, r.mode_path);
    rig_start(&r, "rot", secret);
    assert_int_equal(runs(&r), 1); /* resolved at start */

    /* a session at each endpoint, each with its upstream session open */
    char *one = mx_xasprintf("http://127.0.0.1:%d/mcp/rot", r.port);
    char *all = mx_xasprintf("http://127.0.0.1:%d/mcp", r.port);
    char sid[128], sid_all[128];
    mx_it_open_session(one, "refresh-one", sid, sizeof(sid));
    mx_it_open_session(all, "refresh-all", sid_all, sizeof(sid_all));
    echo_ok(one, sid, 2, "before");
    echo_ok(all, sid_all, 2, "merged before");

    /* the token expires: a call through /mcp renews it, and one through
     * /mcp/<server> then needs no other run */
    rotate(&r, t1, t2, true, 0);
    echo_ok(all, sid_all, 3, "merged after");
    assert_int_equal(runs(&r), 2);
    echo_ok(one, sid, 3, "after");
    assert_int_equal(runs(&r), 2);

    /* it expires again while five calls go out together: the sim answers
     * their 401s 300 ms late, so all five are refused at once; one run for
     * all, and each call sent twice at most */
    json_int_t refused_before = stat_of(&r, t2, NULL, "unauthorized");
    rotate(&r, t2, t3, true, 300);
    echo_together(one, sid, CALLS);
    if (runs(&r) != 3)
        fail_msg("the command ran %d times after %d calls were refused together, not once",
                 runs(&r) - 2, CALLS);
    /* each call ran once: a 401 means it did not run */
    assert_int_equal(stat_of(&r, t3, "tools", "echo"), 4 + CALLS);
    assert_int_equal(stat_of(&r, t3, NULL, "unauthorized") - refused_before, CALLS);
    echo_ok(all, sid_all, 4, "merged again");
    assert_int_equal(runs(&r), 3);

    /* the sim hands its credential back: the client sees it (a tool result
     * is passed through), the trace has it masked */
    struct mx_it_answer a;
    call(one, sid, 4, "whoami", NULL, &a);
    const char *text = mx_it_first_text(mx_it_result(&a));
    assert_non_null(text);
    assert_non_null(strstr(text, "rot got: Bearer "));
    if (strstr(text, t3) == NULL)
        fail_msg("whoami did not answer the refreshed credential");
    mx_it_answer_clear(&a);
    if (mx_it_trace_wait(r.trace_path, "s2c", "rot", "rot got: Bearer ***", 1, 5000) < 1)
        fail_msg("the trace does not show the refreshed credential masked");

    /* a reload whose cmd: prints the refreshed token: the server is unchanged */
    assert_int_equal(mx_it_signal(r.mcplex, SIGHUP), 0);
    json_int_t ok = 0;
    for (int i = 0; i < 200 && ok == 0; i++) {
        json_t *h = mx_it_health(r.port, NULL);
        ok = json_integer_value(json_object_get(json_object_get(h, "reload"), "ok"));
        json_decref(h);
        if (ok == 0) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(ok, 1);
    assert_int_equal(runs(&r), 4); /* resolved by the reload */
    char *log_path = mx_it_path("mcplex.log");
    char *log = mx_it_read_file(log_path, NULL);
    free(log_path);
    assert_non_null(log);
    if (strstr(log, "1 upstreams unchanged, 0 joined, 0 retiring") == NULL)
        fail_msg("the reload took the refreshed credential for a changed server");
    free(log);
    echo_ok(one, sid, 5, "after reload");
    assert_int_equal(runs(&r), 4);
    assert_state(&r, "up");

    rig_stop(&r);
    free(one);
    free(all);
    free(secret);
    mx_it_pass();
}

/* One call that must fail as auth-failed, naming the server, its secret
 * reference and |why|, having reached the sim |sent| times. While its
 * command runs, /health still answers at once: nothing waits on the
 * command but the call. */
static void refused_call(const struct rig *r, const char *url, const char *sid, const char *token,
                         const char *why, int sent, double max_s)
{
    json_int_t before = stat_of(r, token, NULL, "unauthorized");
    int runs_before = runs(r);
    struct batch b;
    struct mx_it_answer a;
    double t0 = now_s();
    batch_start(&b, url, sid, "refused", 1);
    while (runs(r) == runs_before && b.running > 0 && now_s() - t0 < 5.0)
        batch_run(&b, 0.02);
    double h0 = now_s();
    json_decref(mx_it_health(r->port, NULL));
    double health_s = now_s() - h0;
    batch_run(&b, 30.0);
    double secs = now_s() - t0;
    assert_int_equal(b.running, 0);
    batch_answer(&b, 0, &a);
    const char *msg =
        json_string_value(json_object_get(json_object_get(a.msg, "error"), "message"));
    fprintf(stderr, "# %.2f s (/health meanwhile: %.3f s): %s\n", secs, health_s,
            msg ? msg : "(no error)");
    if (mx_it_error_code(&a) != -32011 || msg == NULL || strstr(msg, "'keyed'") == NULL ||
        strstr(msg, "auth-failed") == NULL || strstr(msg, "check the secret file:") == NULL ||
        strstr(msg, why) == NULL)
        fail_msg("expected -32011 naming 'keyed', its secret and \"%s\": %s", why,
                 a.body ? a.body : "");
    if (secs > max_s)
        fail_msg("the refused call took %.2f s, more than %.1f s", secs, max_s);
    if (health_s > 0.5)
        fail_msg("/health took %.2f s while the refresh command ran", health_s);
    mx_it_answer_clear(&a);
    batch_clear(&b);
    json_int_t sent_now = stat_of(r, token, NULL, "unauthorized") - before;
    if (sent_now != sent)
        fail_msg("the refused call reached the sim %lld times, not %d", (long long)sent_now, sent);
}

static void test_refresh_key_and_failures(void **state)
{
    (void)state;
    struct rig r = {0};
    rig_files(&r);
    const char *t1 = r.tok[0], *t2 = r.tok[1], *t3 = r.tok[2];
    assert_int_equal(chmod(r.token_path, 0600), 0);
    assert_true(mx_it_start_sim("keyed", t1, NULL, &r.sim_port) > 0);
    /* the refresh is bounded by wake_timeout (2 s) */
    char *keys = mx_xasprintf("secret = \"file:%s\"\nrefresh = \"cmd:%s %s %s %s\"\n"
                              "wake_timeout = \"2s\"\n",
                              r.token_path, r.script, r.count_path, r.token_path, r.mode_path);
    rig_start(&r, "keyed", keys);
    assert_int_equal(runs(&r), 0); /* a refresh command runs only when refused */

    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/keyed", r.port);
    char sid[128];
    mx_it_open_session(url, "refresh-key", sid, sizeof(sid));
    echo_ok(url, sid, 2, "first");

    rotate(&r, t1, t2, true, 0);
    echo_ok(url, sid, 3, "renewed");
    assert_int_equal(runs(&r), 1);

    /* the sim moves on to t3; the file still holds t2 */
    rotate(&r, t2, t3, false, 0);
    static const struct {
        const char *mode;
        const char *why; /* in the error */
        int sent;        /* times the call reached the sim */
        double max_s;
    } fails[] = {
        {"fail", "exited with status 1", 1, 5.0},
        {"empty", "printed nothing", 1, 5.0},
        /* a new token the sim refuses too: one retry, then the answer is final */
        {"ok", "print-token.sh printed was refused too", 2, 5.0},
        {"slow", "did not finish within 2 s", 1, 4.0},
    };
    for (size_t i = 0; i < sizeof(fails) / sizeof(fails[0]); i++) {
        write_text(r.mode_path, fails[i].mode);
        refused_call(&r, url, sid, t3, fails[i].why, fails[i].sent, fails[i].max_s);
        assert_int_equal(runs(&r), 2 + (int)i); /* once per refused call */
    }
    assert_state(&r, "auth-failed");

    /* the command prints the sim's token again: back in service */
    write_text(r.token_path, t3);
    write_text(r.mode_path, "ok");
    echo_ok(url, sid, 8, "recovered");
    assert_int_equal(runs(&r), 6);
    assert_state(&r, "up");

    rig_stop(&r);
    free(url);
    free(keys);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cmd_secret_rotates, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_refresh_key_and_failures, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
