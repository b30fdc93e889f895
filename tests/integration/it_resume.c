/* SPDX-License-Identifier: MIT */
/*
 * Resumable streams toward clients (MCP 2025-03-26, Resumability and
 * Redelivery; 2025-11-25 priming). A raw fetch client (tests/js/resume.mjs)
 * calls sandbox-sim's slow tool through mcplex's /mcp, is killed (SIGKILL)
 * in the middle of the SSE answer, and a second one comes back with GET and
 * the last Last-Event-ID the first printed: together they see every
 * progress event and the answer exactly once, with contiguous ids after a
 * priming event. Past the stream's buffer ([listen] stream_buffer_events)
 * and for an id the session never gave, the GET gets a 400 that says so.
 * With [listen] stream_poll mcplex itself closes a POST's answer before its
 * end, and the client's GET with Last-Event-ID gets the rest.
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

#define BUFFER_EVENTS 6
#define LINE_WAIT_MS  15000

struct world {
    char token[MX_IT_CANARY_SIZE];
    int port;
    char *url;
};

/* |listen_extra|: more [listen] lines ("" for none). */
static void world_start_with(struct world *w, const char *listen_extra)
{
    int sim_port;
    mx_it_canary(w->token, sizeof(w->token));
    const char *sim_args[] = {"--name", "sim", NULL};
    assert_true(mx_it_start_sim("sim", w->token, sim_args, &sim_port) > 0);
    char *secret = mx_it_secret_file("sim.secret", w->token);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "stream_buffer_events = %d\n%s"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, BUFFER_EVENTS, listen_extra, sim_port, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, w->port) > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    free(cfg_path);
    free(cfg);
    free(secret);
}

static void world_start(struct world *w)
{
    world_start_with(w, "");
}

/* node tests/js/resume.mjs |a| ... with its stdout on a pipe. */
static pid_t client(const char *name, const char *mode, const char *url, const char *a1,
                    const char *a2, int *out_fd)
{
    char *script = mx_xasprintf("%s/tests/js/resume.mjs", mx_it_source_dir());
    char *err = mx_it_path(name);
    const char *argv[] = {"node", script, mode, url, a1, a2, NULL};
    int in_fd;
    pid_t pid = mx_it_spawn_piped(name, argv, NULL, err, &in_fd, out_fd);
    assert_true(pid > 0);
    close(in_fd);
    free(script);
    free(err);
    return pid;
}

/* What the clients saw of one call. */
struct seen {
    char session[64];
    char last_id[64];
    int progress[64]; /* times each progress value came */
    int answers;
    int events;
    long long stream; /* the stream number of the ids */
    long long next_seq;
    bool primed;
};

/* Take one event line: ids "<stream>-<seq>" contiguous, a priming event
 * (no data) first. */
static void note_event(struct seen *s, const json_t *line)
{
    const char *id = json_string_value(json_object_get(line, "id"));
    json_t *data = json_object_get(line, "data");
    long long no = -1, seq = -1;
    assert_non_null(id);
    assert_int_equal(sscanf(id, "%lld-%lld", &no, &seq), 2);
    if (json_is_null(data)) {
        /* priming: the id of the event it follows */
        s->primed = true;
        if (s->stream < 0)
            s->stream = no;
        assert_int_equal(no, s->stream);
        assert_int_equal(seq, s->next_seq - 1);
        return;
    }
    assert_int_equal(no, s->stream);
    if (seq != s->next_seq)
        fail_msg("event %s came where %lld-%lld was due", id, s->stream, s->next_seq);
    s->next_seq++;
    s->events++;
    snprintf(s->last_id, sizeof(s->last_id), "%s", id);
    const char *method = json_string_value(json_object_get(data, "method"));
    if (method && strcmp(method, "notifications/progress") == 0) {
        json_int_t p =
            json_integer_value(json_object_get(json_object_get(data, "params"), "progress"));
        assert_true(p >= 0 && p < 64);
        s->progress[p]++;
    } else if (json_object_get(data, "result")) {
        s->answers++;
    }
}

/* Read the call client's lines until |progress_cnt| progress events came. */
static void read_until(struct mx_it_lines *l, struct seen *s, int progress_cnt)
{
    for (int n = 0; n < 200; n++) {
        int got = 0;
        for (int i = 0; i < 64; i++)
            got += s->progress[i];
        if (got >= progress_cnt)
            return;
        json_t *line = mx_it_lines_next(l, LINE_WAIT_MS);
        assert_non_null(line);
        const char *sid = json_string_value(json_object_get(line, "session"));
        if (sid)
            snprintf(s->session, sizeof(s->session), "%s", sid);
        else if (json_object_get(line, "status"))
            assert_int_equal(json_integer_value(json_object_get(line, "status")), 200);
        else if (json_object_get(line, "error"))
            fail_msg("the client failed: %s", json_string_value(json_object_get(line, "error")));
        else if (json_object_get(line, "id"))
            note_event(s, line);
        json_decref(line);
    }
    fail_msg("no %d progress events within 200 lines", progress_cnt);
}

/* Start a call of slow with |steps| and |interval_ms|, kill its client
 * after |kill_after| progress events; |s| has what it saw. */
static void call_and_kill(struct world *w, struct seen *s, int steps, int interval_ms,
                          int kill_after)
{
    struct mx_it_lines *l = mx_xcalloc(1, sizeof(*l));
    char args[96];
    memset(s, 0, sizeof(*s));
    s->stream = -1;
    s->next_seq = 1;
    snprintf(args, sizeof(args), "{\"steps\":%d,\"interval_ms\":%d}", steps, interval_ms);
    pid_t pid = client("call.log", "call", w->url, "slow", args, &l->fd);
    read_until(l, s, kill_after);
    assert_int_equal(mx_it_signal(pid, SIGKILL), 0);
    mx_it_wait_exit(pid, 5000);
    close(l->fd);
    free(l);
    assert_true(s->primed);
    assert_true(s->session[0] != '\0');
}

/* Resume |s|'s stream with GET and its last id until the answer; then
 * every one of the |steps| progress events and the answer came once. */
static void resume_to_end(struct world *w, struct seen *s, int steps)
{
    struct mx_it_lines *l = mx_xcalloc(1, sizeof(*l));
    pid_t pid = client("resume.log", "resume", w->url, s->session, s->last_id, &l->fd);
    bool done = false;
    for (int n = 0; n < 100 && !done; n++) {
        json_t *line = mx_it_lines_next(l, LINE_WAIT_MS);
        assert_non_null(line);
        if (json_object_get(line, "status"))
            fail_msg("the resume was refused: %s", json_dumps(line, 0));
        else if (json_object_get(line, "done"))
            done = true;
        else if (json_object_get(line, "id"))
            note_event(s, line);
        json_decref(line);
    }
    assert_true(done);
    assert_int_equal(mx_it_wait_exit(pid, 5000), 0);
    close(l->fd);
    free(l);
    for (int p = 1; p <= steps; p++) {
        if (s->progress[p] != 1)
            fail_msg("progress %d came %d times", p, s->progress[p]);
    }
    assert_int_equal(s->answers, 1);
    assert_int_equal(s->events, steps + 1);
}

static void test_resume_every_event_once(void **state)
{
    struct world w;
    struct seen s;
    (void)state;
    world_start(&w);
    /* 10 steps of 400 ms: the buffer of 6 covers 2.4 s after the kill */
    call_and_kill(&w, &s, 10, 400, 3);
    fprintf(stderr, "# killed after %d events, the last %s\n", s.events, s.last_id);

    resume_to_end(&w, &s, 10);
    free(w.url);
    mx_it_pass();
}

static void test_resume_past_buffer(void **state)
{
    struct world w;
    struct seen s;
    (void)state;
    world_start(&w);
    /* 20 steps of 20 ms, killed after 2: the call ends on its own and the
     * buffer keeps only its last 6 events */
    call_and_kill(&w, &s, 20, 20, 2);
    for (int i = 0; i < 100; i++) {
        json_t *h = mx_it_health(w.port, NULL);
        json_int_t inflight = json_integer_value(json_object_get(h, "inflight"));
        json_decref(h);
        if (inflight == 0)
            break;
        usleep(50 * 1000);
    }

    char hdr_sid[128], hdr_last[128];
    snprintf(hdr_sid, sizeof(hdr_sid), "Mcp-Session-Id: %s", s.session);
    snprintf(hdr_last, sizeof(hdr_last), "Last-Event-ID: %s", s.last_id);
    const char *hdrs[] = {"Accept: text/event-stream", "MCP-Protocol-Version: 2025-11-25", hdr_sid,
                          hdr_last, NULL};
    struct mx_it_answer a = {0};
    assert_int_equal(
        mx_it_http_full("GET", w.url, hdrs, NULL, 10000, &a.status, &a.headers, &a.body), 0);
    fprintf(stderr, "# past the buffer: %ld %s\n", a.status, a.body);
    assert_int_equal(a.status, 400);
    assert_non_null(strstr(a.body, "no longer kept"));
    assert_non_null(strstr(a.body, "stream_buffer_events = 6"));
    mx_it_answer_clear(&a);

    /* an id this session never gave */
    snprintf(hdr_last, sizeof(hdr_last), "Last-Event-ID: 99-1");
    memset(&a, 0, sizeof(a));
    assert_int_equal(
        mx_it_http_full("GET", w.url, hdrs, NULL, 10000, &a.status, &a.headers, &a.body), 0);
    assert_int_equal(a.status, 400);
    assert_non_null(strstr(a.body, "names no stream or event of this session"));
    mx_it_answer_clear(&a);

    /* the sim's credential never reached a log or an output */
    char *mlog = mx_it_path("mcplex.log"), *clog = mx_it_path("call.log");
    const char *files[] = {mlog, clog, NULL};
    const char *canaries[] = {w.token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);
    free(mlog);
    free(clog);
    free(w.url);
    mx_it_pass();
}

/*
 * [listen] stream_poll (MCP 2025-11-25, SEP-1699 polling): a POST's SSE
 * answer still running that long after it began ends without the answer;
 * the client comes back with GET and the last id it saw, and gets the rest
 * and the answer on that stream, every event once.
 */
static void test_resume_polled_answer(void **state)
{
    struct world w;
    struct seen s;
    (void)state;
    world_start_with(&w, "stream_poll = \"500ms\"\n");
    memset(&s, 0, sizeof(s));
    s.stream = -1;
    s.next_seq = 1;

    /* 8 steps of 300 ms: the answer begins with the first progress event
     * at 0.3 s and is closed at 0.8 s, 1.6 s before the call ends */
    struct mx_it_lines *l = mx_xcalloc(1, sizeof(*l));
    pid_t pid =
        client("call.log", "call", w.url, "slow", "{\"steps\":8,\"interval_ms\":300}", &l->fd);
    bool ended = false;
    for (int n = 0; n < 100 && !ended; n++) {
        json_t *line = mx_it_lines_next(l, LINE_WAIT_MS);
        if (line == NULL) {
            ended = true; /* the stream ended and the client left */
            break;
        }
        const char *sid = json_string_value(json_object_get(line, "session"));
        if (sid)
            snprintf(s.session, sizeof(s.session), "%s", sid);
        else if (json_object_get(line, "done"))
            fail_msg("the POST's stream carried the answer; it was not closed");
        else if (json_object_get(line, "error"))
            fail_msg("the client failed: %s", json_string_value(json_object_get(line, "error")));
        else if (json_object_get(line, "id"))
            note_event(&s, line);
        json_decref(line);
    }
    assert_true(ended);
    assert_int_equal(mx_it_wait_exit(pid, 5000), 0);
    close(l->fd);
    assert_true(s.primed);
    assert_int_equal(s.answers, 0);
    assert_true(s.events >= 1 && s.events < 8);
    fprintf(stderr, "# the POST's stream ended after %d events, the last %s\n", s.events,
            s.last_id);

    free(l);
    resume_to_end(&w, &s, 8);
    free(w.url);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resume_every_event_once, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_resume_past_buffer, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_resume_polled_answer, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
