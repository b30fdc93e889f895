/* SPDX-License-Identifier: MIT */
/*
 * Upstreams that are not ready when the first client comes: a stdio server
 * behind a wrapper that sleeps 4 s before it execs server-everything (as npx
 * fetching a package does), and a sandbox-sim paused at the client's
 * initialize (holding the request, or refusing until its wake hook wakes
 * it). The client's initialize is answered after fanout_timeout without
 * them; its first calls to their tools, prompts and resources wait for
 * their lists and get the real answers: a 2025 client at /mcp, a 2026-07-28
 * client at /mcp and a client of `mcplex stdio`. list_changed follows; once
 * every upstream has listed, a name none holds is refused at once; a client
 * that gives up while its call waits leaves nothing behind (mcplex exits 0
 * on SIGTERM, which under ASan includes the leak check).
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "err.h"
#include "harness.h"

#define SLOW_START_S "4"   /* the wrapper's sleep */
#define FANOUT       "2s"  /* fanout_timeout: shorter than the slow start */
#define FANOUT_S     1.9   /* an initialize that took this long waited for the bound */
#define CALL_LIMIT_S 20.0  /* a parked call is answered well within this */
#define QUICK_S      1.0   /* "at once" */
#define LINE_WAIT_MS 30000 /* one line from `mcplex stdio` */

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

static const char meta26[] = "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                             "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}";

struct world {
    char sim_token[MX_IT_CANARY_SIZE];
    int sim_port;
    char *sim_url;
    int port;
    pid_t mcplex;
    char *url; /* mcplex /mcp */
    char *cfg_path;
    char session[128];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void start_sim(struct world *w, const char *const *args)
{
    mx_it_canary(w->sim_token, sizeof(w->sim_token));
    assert_true(mx_it_start_sim("sim", w->sim_token, args, &w->sim_port) > 0);
    w->sim_url = mx_xasprintf("http://127.0.0.1:%d", w->sim_port);
}

/* The config: the sim, and with |slow_ev| server-everything behind the
 * sleeping wrapper; |sim_extra| more keys of [servers.sim]. */
static void write_config(struct world *w, bool slow_ev, const char *sim_extra)
{
    char *sec = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(sec, w->sim_token, strlen(w->sim_token)), 0);
    assert_int_equal(chmod(sec, 0600), 0);
    char *ev = NULL;
    if (slow_ev)
        ev = mx_xasprintf("[servers.ev]\ncommand = [\"/bin/sh\", "
                          "\"%s/tests/integration/stdio-child.sh\", \"--sleep\", \"%s\", \"--\", "
                          "\"node\", \"%s/tests/js/node_modules/@modelcontextprotocol/"
                          "server-everything/dist/index.js\", \"stdio\"]\nenv = [\"PATH\"]\n",
                          mx_it_source_dir(), SLOW_START_S, mx_it_source_dir());
    char *state = mx_it_path("state");
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nfanout_timeout = \"%s\"\nrequest_timeout = \"30s\"\n"
                             "state_dir = \"%s\"\n%s"
                             "[servers.sim]\nurl = \"%s/mcp\"\nsecret = \"file:%s\"\n%s",
                             w->port, FANOUT, state, ev ? ev : "", w->sim_url, sec,
                             sim_extra ? sim_extra : "");
    free(state);
    w->cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    free(ev);
    free(cfg);
    free(sec);
}

static void start_mcplex(struct world *w)
{
    w->mcplex = mx_it_start_mcplex(w->cfg_path, w->port);
    assert_true(w->mcplex > 0);
}

/* SIGTERM drains and exits 0; under ASan a leak would make it 23. */
static void stop_mcplex(struct world *w)
{
    assert_int_equal(mx_it_signal(w->mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w->mcplex, 15000);
    assert_true(st >= 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void free_world(struct world *w)
{
    free(w->sim_url);
    free(w->url);
    free(w->cfg_path);
}

/* POST |body| to /mcp in the world's 2025 session (none yet: none sent),
 * waiting at most |timeout_ms|; returns what mx_it_http_full() returns. */
static int post(struct world *w, const char *body, int timeout_ms, struct mx_it_answer *a)
{
    char *sid = w->session[0] ? mx_xasprintf("Mcp-Session-Id: %s", w->session) : NULL;
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream",
                       "MCP-Protocol-Version: 2025-06-18", sid, NULL};
    memset(a, 0, sizeof(*a));
    int rc =
        mx_it_http_full("POST", w->url, h, body, timeout_ms, &a->status, &a->headers, &a->body);
    mx_it_answer_parse(a);
    free(sid);
    return rc;
}

/* initialize and notifications/initialized; returns how long initialize took. */
static double open_session(struct world *w)
{
    struct mx_it_answer a;
    double t0 = now_s();
    assert_int_equal(post(w, init_body, 30000, &a), 0);
    double secs = now_s() - t0;
    assert_int_equal(a.status, 200);
    char sid[sizeof(w->session)];
    mx_it_header_value(a.headers, "Mcp-Session-Id", sid, sizeof(sid));
    assert_true(sid[0] != '\0');
    memcpy(w->session, sid, sizeof(sid));
    mx_it_answer_clear(&a);
    assert_int_equal(
        post(w, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 10000, &a), 0);
    assert_int_equal(a.status, 202);
    mx_it_answer_clear(&a);
    return secs;
}

/* tools/call |name| with |args| in the 2025 session; its answer in |a|, and
 * how long it took. Fails unless it was answered. */
static double call_tool(struct world *w, int id, const char *name, const char *args,
                        struct mx_it_answer *a)
{
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
                              id, name, args);
    double t0 = now_s();
    int rc = post(w, body, (int)(CALL_LIMIT_S * 1000), a);
    double secs = now_s() - t0;
    free(body);
    assert_int_equal(rc, 0);
    assert_int_equal(a->status, 200);
    return secs;
}

/* Fail unless |a| is the tool result whose first text is |want|. */
static void assert_text(const struct mx_it_answer *a, const char *want)
{
    const char *text = mx_it_first_text(mx_it_result(a));
    if (text == NULL || strcmp(text, want) != 0)
        fail_msg("wanted \"%s\", got %s", want, a->body ? a->body : "(no body)");
}

/* What the session's GET stream holds (queued while it was absent). */
static char *get_stream(struct world *w, int ms)
{
    char *sid = mx_xasprintf("Mcp-Session-Id: %s", w->session);
    const char *h[] = {"Accept: text/event-stream", "MCP-Protocol-Version: 2025-06-18", sid, NULL};
    long status = 0;
    char *body = NULL;
    int rc = mx_it_http_full("GET", w->url, h, NULL, ms, &status, NULL, &body);
    assert_true(rc == 0 || rc == MX_ETIMEDOUT);
    free(sid);
    return body;
}

/* ---- a slow stdio upstream, 2025 client at /mcp ---- */

static void test_slow_stdio_2025(void **state)
{
    struct world w = {0};
    (void)state;
    start_sim(&w, NULL);
    write_config(&w, true, NULL);
    start_mcplex(&w);

    double init_s = open_session(&w);
    fprintf(stderr, "# initialize answered after %.2f s (fanout_timeout %s)\n", init_s, FANOUT);
    assert_true(init_s >= FANOUT_S); /* the stdio server was not there yet */

    /* a client that gives up while its call waits */
    struct mx_it_answer gone;
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"get-sum\",\"arguments\":{\"a\":1,\"b\":1}}}");
    int gone_rc = post(&w, body, 300, &gone);
    free(body);

    /* the first call to a tool of the slow upstream waits for its lists */
    struct mx_it_answer a;
    double call_s = call_tool(&w, 3, "get-sum", "{\"a\":2,\"b\":3}", &a);
    fprintf(stderr, "# first tools/call get-sum answered after %.2f s: %s\n", call_s, a.body);
    assert_text(&a, "The sum of 2 and 3 is 5.");
    assert_true(call_s < CALL_LIMIT_S);
    mx_it_answer_clear(&a);
    assert_int_equal(gone_rc, MX_ETIMEDOUT); /* it was parked, not refused */
    mx_it_answer_clear(&gone);

    /* both have listed now: a name neither holds is refused at once */
    double bad_s = call_tool(&w, 4, "no-such-tool", "{}", &a);
    fprintf(stderr, "# unknown tool refused after %.3f s\n", bad_s);
    assert_int_equal(mx_it_error_code(&a), -32602);
    assert_non_null(strstr(a.body, "Unknown tool: no-such-tool"));
    assert_true(bad_s < QUICK_S);
    mx_it_answer_clear(&a);

    /* the colliding echo is prefixed on both now, and each reaches its own */
    call_tool(&w, 5, "ev_echo", "{\"message\":\"late\"}", &a);
    assert_text(&a, "Echo: late");
    mx_it_answer_clear(&a);

    /* the late lists were announced */
    char *events = get_stream(&w, 1500);
    assert_non_null(events);
    assert_non_null(strstr(events, "notifications/tools/list_changed"));
    free(events);

    stop_mcplex(&w);
    free_world(&w);
    mx_it_pass();
}

/* ---- the same upstream, a 2026-07-28 client (no initialize) ---- */

static void test_slow_stdio_2026(void **state)
{
    struct world w = {0};
    (void)state;
    start_sim(&w, NULL);
    write_config(&w, true, NULL);
    start_mcplex(&w);

    /* "ev_echo" is a name only ev's late list can make: sim lists fast and
     * holds "echo" alone until then; the call waits for ev */
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"ev_echo\",\"arguments\":{\"message\":"
                              "\"first\"},%s}}",
                              meta26);
    const char *h[] = {"Content-Type: application/json",
                       "Accept: application/json, text/event-stream",
                       "MCP-Protocol-Version: 2026-07-28",
                       "Mcp-Method: tools/call",
                       "Mcp-Name: ev_echo",
                       NULL};
    struct mx_it_answer a = {0};
    double t0 = now_s();
    assert_int_equal(mx_it_http_full("POST", w.url, h, body, (int)(CALL_LIMIT_S * 1000), &a.status,
                                     &a.headers, &a.body),
                     0);
    double secs = now_s() - t0;
    mx_it_answer_parse(&a);
    fprintf(stderr, "# 2026 first tools/call ev_echo answered after %.2f s: %s\n", secs, a.body);
    assert_int_equal(a.status, 200);
    assert_text(&a, "Echo: first");
    mx_it_answer_clear(&a);
    free(body);

    stop_mcplex(&w);
    free_world(&w);
    mx_it_pass();
}

/* ---- the same upstream behind `mcplex stdio` ---- */

static void send_text(int fd, const char *text)
{
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
}

static void test_slow_stdio_front(void **state)
{
    struct world w = {0};
    static struct mx_it_lines out;
    int in;
    (void)state;
    start_sim(&w, NULL);
    write_config(&w, true, NULL);

    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *err_path = mx_it_path("mcplex-stdio.log");
    const char *argv[] = {bin, "stdio", "-c", w.cfg_path, NULL};
    pid_t pid = mx_it_spawn_piped("mcplex-stdio", argv, NULL, err_path, &in, &out.fd);
    assert_true(pid > 0);
    double t0 = now_s();
    send_text(in, init_body);
    send_text(in, "\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    json_t *m = mx_it_lines_next(&out, LINE_WAIT_MS);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 1);
    json_decref(m);
    double init_s = now_s() - t0;
    assert_true(init_s >= FANOUT_S);

    /* a tool, a prompt and a resource of the late upstream, and a name
     * nobody holds, all before it listed */
    t0 = now_s();
    send_text(in, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                  "\"name\":\"get-sum\",\"arguments\":{\"a\":20,\"b\":22}}}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/get\",\"params\":{"
                  "\"name\":\"simple-prompt\"}}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/read\",\"params\":{"
                  "\"uri\":\"demo://resource/static/document/features.md\"}}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
                  "\"name\":\"nobody-has-it\",\"arguments\":{}}}\n");
    bool seen[6] = {false};
    bool changed = false;
    int answered = 0;
    for (int i = 0; i < 64 && (answered < 4 || !changed); i++) {
        m = mx_it_lines_next(&out, LINE_WAIT_MS);
        const char *method = json_string_value(json_object_get(m, "method"));
        json_int_t id = json_integer_value(json_object_get(m, "id"));
        json_t *result = json_object_get(m, "result");
        char *text = json_dumps(m, JSON_COMPACT);
        if (method && strcmp(method, "notifications/tools/list_changed") == 0) {
            changed = true;
        } else if (method == NULL && id >= 2 && id <= 5 && !seen[id]) {
            seen[id] = true;
            answered++;
            fprintf(stderr, "# id %d answered after %.2f s: %.160s\n", (int)id, now_s() - t0, text);
            if (id == 2)
                assert_non_null(strstr(text, "The sum of 20 and 22 is 42."));
            else if (id == 3)
                assert_non_null(json_object_get(result, "messages"));
            else if (id == 4)
                assert_non_null(strstr(text, "demo://resource/static/document/features.md"));
            else
                assert_non_null(strstr(text, "Unknown tool: nobody-has-it"));
            if (id < 5)
                assert_non_null(result);
        }
        free(text);
        json_decref(m);
    }
    assert_int_equal(answered, 4);
    assert_true(changed);

    close(in); /* the client is done: mcplex stdio ends, with 0 */
    for (int i = 0; i < 64 && (m = mx_it_lines_next(&out, LINE_WAIT_MS)) != NULL; i++)
        json_decref(m); /* list_changed of the other kinds */
    int st = mx_it_wait_exit(pid, 10000);
    close(out.fd);
    assert_true(st >= 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    free(bin);
    free(err_path);
    free_world(&w);
    mx_it_pass();
}

/* ---- an HTTP upstream waking at the client's initialize ---- */

static void waking_call(struct world *w)
{
    double init_s = open_session(w);
    fprintf(stderr, "# initialize answered after %.2f s\n", init_s);
    assert_true(init_s >= FANOUT_S);
    struct mx_it_answer a;
    double secs = call_tool(w, 2, "echo", "{\"message\":\"awake\"}", &a);
    fprintf(stderr, "# first tools/call echo answered after %.2f s: %s\n", secs, a.body);
    assert_text(&a, "awake");
    mx_it_answer_clear(&a);
    char *events = get_stream(w, 1500);
    assert_non_null(events);
    assert_non_null(strstr(events, "notifications/tools/list_changed"));
    free(events);
}

/* Sandboxer style: the paused sim holds the first request (initialize). */
static void test_waking_hold_at_initialize(void **state)
{
    struct world w = {0};
    (void)state;
    const char *args[] = {
        "--pause-after-ms", "100", "--pause-mode", "hold", "--hold-ms", "4000", NULL};
    start_sim(&w, args);
    write_config(&w, false, NULL);
    start_mcplex(&w);
    struct timespec idle = {0, 300 * 1000 * 1000};
    nanosleep(&idle, NULL); /* paused */
    waking_call(&w);
    stop_mcplex(&w);

    /* Started again with the sim paused: its names come from the on-disk
     * catalogue, so nothing waits for lists. A name it lacks is refused at
     * once; a call of its own waits only for the wake. */
    nanosleep(&idle, NULL);
    start_mcplex(&w);
    w.session[0] = '\0';
    double init_s = open_session(&w);
    fprintf(stderr, "# with the catalogue: initialize answered after %.2f s\n", init_s);
    assert_true(init_s < QUICK_S);
    struct mx_it_answer a;
    double bad_s = call_tool(&w, 2, "no-such-tool", "{}", &a);
    fprintf(stderr, "# with the catalogue: unknown tool refused after %.3f s\n", bad_s);
    assert_int_equal(mx_it_error_code(&a), -32602);
    assert_true(bad_s < QUICK_S);
    mx_it_answer_clear(&a);
    double secs = call_tool(&w, 3, "echo", "{\"message\":\"again\"}", &a);
    fprintf(stderr, "# with the catalogue: echo answered after %.2f s (the wake)\n", secs);
    assert_text(&a, "again");
    mx_it_answer_clear(&a);
    stop_mcplex(&w);
    free_world(&w);
    mx_it_pass();
}

/* E2B style: the paused sim refuses until its wake hook runs, then takes
 * 4 s to wake. */
static void test_waking_refuse_at_initialize(void **state)
{
    struct world w = {0};
    (void)state;
    const char *args[] = {
        "--pause-after-ms", "600000", "--pause-mode", "refuse", "--wake-ms", "4000", NULL};
    start_sim(&w, args);
    char *hdr_file = mx_it_path("wake.hdr");
    char *hdr = mx_xasprintf("Authorization: Bearer %s\n", w.sim_token);
    assert_int_equal(mx_it_write_file(hdr_file, hdr, strlen(hdr)), 0);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w.sim_token);
    char *control = mx_xasprintf("%s/__control", w.sim_url);
    const char *h[] = {auth, "Content-Type: application/json", NULL};
    long status = 0;
    assert_int_equal(mx_it_http("POST", control, h, "{\"action\":\"pause\"}", &status, NULL), 0);
    assert_int_equal(status, 200);
    char *extra =
        mx_xasprintf("wake = \"cmd:curl -sf -X POST -H @%s %s/__wake\"\nwake_timeout = \"20s\"\n",
                     hdr_file, w.sim_url);
    write_config(&w, false, extra);
    start_mcplex(&w);
    waking_call(&w);
    stop_mcplex(&w);
    free(extra);
    free(control);
    free(auth);
    free(hdr);
    free(hdr_file);
    free_world(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slow_stdio_2025, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_slow_stdio_2026, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_slow_stdio_front, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_waking_hold_at_initialize, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_waking_refuse_at_initialize, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
