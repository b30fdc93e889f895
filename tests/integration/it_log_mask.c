/* SPDX-License-Identifier: MIT */
/*
 * The trace and the log mask every form of a secret, and an upstream
 * cannot forge log lines. Two hostile stdio upstreams (it-hostile): "echo"
 * holds a credential with '"', '\', a tab and a control character, writes
 * it to its stderr and answers every call with it (JSON-escaped on the
 * wire); "forge" answers initialize with an error message that holds a
 * line break and a whole forged log line, and "echo" lists a tool whose
 * name does the same. Once with text logs and once with JSON logs: no
 * piece of the credential may be in the log or the trace (where the
 * answer must still be, masked), no line of the text log may be the
 * forged one, and every line of the JSON log must parse.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define PIECES    5
#define PIECE_LEN 8

struct world {
    char pieces[PIECES][PIECE_LEN + 1]; /* random hex between the odd bytes */
    char token[PIECES * (PIECE_LEN + 1)];
    char nonce[MX_IT_CANARY_SIZE];
    int port;
    pid_t mcplex;
    char *log;
    char *trace;
    char *sid_hdr;
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* piece0 " piece1 \ piece2 TAB piece3 0x01 piece4 */
static void make_token(struct world *w)
{
    static const char seps[PIECES - 1] = {'"', '\\', '\t', '\x01'};
    char can[MX_IT_CANARY_SIZE];
    size_t n = 0;
    for (size_t i = 0; i < PIECES; i++) {
        mx_it_canary(can, sizeof(can));
        memcpy(w->pieces[i], can + strlen("canary-"), PIECE_LEN);
        w->pieces[i][PIECE_LEN] = '\0';
        memcpy(w->token + n, w->pieces[i], PIECE_LEN);
        n += PIECE_LEN;
        if (i + 1 < PIECES)
            w->token[n++] = seps[i];
    }
    w->token[n] = '\0';
}

static char *post(struct world *w, const char *body, bool session)
{
    const char *h[5];
    size_t n = 0;
    h[n++] = "Content-Type: application/json";
    h[n++] = "Accept: application/json, text/event-stream";
    if (session && w->sid_hdr) {
        h[n++] = w->sid_hdr;
        h[n++] = "MCP-Protocol-Version: 2025-06-18";
    }
    h[n] = NULL;
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    long status = 0;
    char *head = NULL, *resp = NULL;
    assert_int_equal(mx_it_http_full("POST", url, h, body, 20000, &status, &head, &resp), 0);
    if (status >= 300)
        fail_msg("POST %s: %ld %s", body, status, resp ? resp : "");
    if (!session) {
        char sid[128];
        mx_it_header_value(head, "Mcp-Session-Id", sid, sizeof(sid));
        assert_true(sid[0] != '\0');
        free(w->sid_hdr);
        w->sid_hdr = mx_xasprintf("Mcp-Session-Id: %s", sid);
    }
    free(head);
    free(url);
    return resp ? resp : mx_xstrdup("");
}

static void start(struct world *w, bool json_logs)
{
    make_token(w);
    mx_it_canary(w->nonce, sizeof(w->nonce));
    char *hostile = mx_xasprintf("%s/tests/it-hostile", mx_it_build_dir());
    w->trace = mx_it_path("trace.jsonl");
    w->log = mx_it_path("mcplex.log");
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\nstate_dir = \"%s\"\n"
                             "[servers.echo]\ncommand = [\"%s\", \"echo\"]\n"
                             "env = [\"HOSTILE_TOKEN=env:MX_HOSTILE_TOKEN\"]\n"
                             "[servers.forge]\ncommand = [\"%s\", \"forge\", \"%s\"]\n",
                             w->port, w->trace, mx_it_dir(), hostile, hostile, w->nonce);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *env_tok = mx_xasprintf("MX_HOSTILE_TOKEN=%s", w->token);
    const char *env[] = {env_tok, NULL};
    const char *argv[] = {bin, "serve", "-c", cfg_path, "--log-format", json_logs ? "json" : "text",
                          NULL};
    w->mcplex = mx_it_spawn("mcplex", argv, env, w->log);
    assert_true(w->mcplex > 0);
    char *health = mx_xasprintf("http://127.0.0.1:%d/health", w->port);
    assert_int_equal(mx_it_wait_http_status(health, 200, MX_IT_START_TIMEOUT_MS), 0);
    free(health);
    free(env_tok);
    free(bin);
    free(cfg_path);
    free(cfg);
    free(hostile);
}

/* Wait until the log holds |needle|. */
static void wait_log(const struct world *w, const char *needle)
{
    for (int waited = 0;; waited += 50) {
        char *text = mx_it_read_file(w->log, NULL);
        bool found = text && strstr(text, needle);
        free(text);
        if (found)
            return;
        if (waited > 15000)
            fail_msg("the log never said %s", needle);
        sleep_ms(50);
    }
}

static void run_scenario(struct world *w)
{
    char *r = post(w,
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                   "\"name\":\"mask\",\"version\":\"1\"}}}",
                   false);
    free(r);
    free(post(w, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", true));
    r = post(w, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", true);
    if (strstr(r, "whoami") == NULL)
        fail_msg("tools/list: %s", r);
    free(r);
    /* the client gets the credential (tool content passes through) */
    r = post(w,
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"whoami\",\"arguments\":{}}}",
             true);
    if (strstr(r, w->pieces[0]) == NULL)
        fail_msg("tools/call whoami: %s", r);
    free(r);
    char *forged = mx_xasprintf("forged-%s", w->nonce);
    wait_log(w, forged);
    wait_log(w, "my credential is");
    free(forged);
    assert_int_equal(mx_it_signal(w->mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(w->mcplex, 10000) >= 0);
}

static void assert_masked(const struct world *w)
{
    const char *paths[] = {w->log, w->trace, NULL};
    int hits = 0;
    for (size_t i = 0; i < PIECES; i++) {
        char **files = NULL;
        int n = mx_it_scan_for(paths, w->pieces[i], &files);
        assert_true(n >= 0);
        for (char **f = files; f && *f; f++)
            fprintf(stderr, "credential piece %zu found in %s\n", i, *f);
        mx_it_strv_free(files);
        hits += n;
    }
    fprintf(stderr, "mask: %d file hits for the credential's pieces\n", hits);
    assert_int_equal(hits, 0);
    /* the answer is in the trace, masked: redaction, not a missing line */
    char *trace = mx_it_read_file(w->trace, NULL);
    assert_non_null(trace);
    assert_non_null(strstr(trace, "got *"));
    free(trace);
}

static void assert_no_forged_line(const struct world *w, bool json_logs)
{
    char *text = mx_it_read_file(w->log, NULL);
    int lines = 0;
    assert_non_null(text);
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lines++;
        if (strncmp(line, "2026-01-01T00:00:00.000Z", 24) == 0)
            fail_msg("a forged line in the log: %s", line);
        if (json_logs) {
            json_t *j = json_loads(line, 0, NULL);
            if (!json_is_object(j))
                fail_msg("a JSON log line that is no object: %s", line);
            json_decref(j);
        } else if (line[0] == '{') {
            fail_msg("a JSON line in the text log: %s", line);
        }
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    fprintf(stderr, "mask: %d log lines, none forged\n", lines);
    free(text);
}

static void run(bool json_logs)
{
    struct world w;
    memset(&w, 0, sizeof(w));
    start(&w, json_logs);
    run_scenario(&w);
    assert_masked(&w);
    assert_no_forged_line(&w, json_logs);
    free(w.log);
    free(w.trace);
    free(w.sid_hdr);
}

static void test_log_mask_text(void **state)
{
    (void)state;
    run(false);
    mx_it_pass();
}

static void test_log_mask_json(void **state)
{
    (void)state;
    run(true);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_log_mask_text, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_log_mask_json, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
