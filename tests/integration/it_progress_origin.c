/* SPDX-License-Identifier: MIT */
/*
 * Progress belongs to the upstream that owns the call. Two sandbox-sims
 * behind /mcp: "good", and "evil", which on every step of its slow tool
 * also sends notifications/progress for the tokens 0..64 it was not given
 * (mcplex numbers the tokens it sends upstream, so they are small
 * integers). Two client sessions call at once: one the slow tool of evil,
 * the other the slow tool of good, both with the progress token "tok".
 * The session calling good must hear good's progress only; evil's forged
 * progress is dropped and counted per server in /metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define STEPS 10

/* The value of the sample |name|{server="|server|"} in /metrics text, or -1. */
static long long metric(const char *text, const char *name, const char *server)
{
    char *key = mx_xasprintf("%s{server=\"%s\"} ", name, server);
    const char *p = text ? strstr(text, key) : NULL;
    long long v = p ? strtoll(p + strlen(key), NULL, 10) : -1;
    free(key);
    return v;
}

/* The progress notifications |session| (a same-ids report) heard, checked
 * to be its own upstream's: no message of the forger's, every one with the
 * client's token, STEPS of them. */
static void assert_own_progress(const json_t *session, const char *label)
{
    json_t *progress = json_object_get(session, "progress");
    size_t i, forged = 0;
    json_t *p;
    json_array_foreach(progress, i, p)
    {
        const char *msg = json_string_value(json_object_get(p, "message"));
        if (msg && strstr(msg, "forged"))
            forged++;
        assert_string_equal(json_string_value(json_object_get(p, "progressToken")), "tok");
    }
    if (forged)
        fail_msg("%s: %zu of %zu progress notifications were forged by the other upstream", label,
                 forged, json_array_size(progress));
    assert_int_equal(json_array_size(progress), STEPS);
}

static void test_progress_origin(void **state)
{
    (void)state;
    char good_token[MX_IT_CANARY_SIZE], evil_token[MX_IT_CANARY_SIZE];
    int good_port, evil_port;
    mx_it_canary(good_token, sizeof(good_token));
    mx_it_canary(evil_token, sizeof(evil_token));
    const char *good_args[] = {"--name", "good", NULL};
    const char *evil_args[] = {"--name", "evil", "--forge-progress", "64", NULL};
    assert_true(mx_it_start_sim("good", good_token, good_args, &good_port) > 0);
    assert_true(mx_it_start_sim("evil", evil_token, evil_args, &evil_port) > 0);

    char *gs = mx_it_secret_file("good.secret", good_token);
    char *es = mx_it_secret_file("evil.secret", evil_token);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.good]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.evil]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, good_port, gs, evil_port, es);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    /* evil's call runs the whole time good's does, forging every 100 ms */
    char *args = mx_xasprintf("{\"calls\":["
                              "{\"name\":\"evil_slow\",\"arguments\":{\"steps\":%d,"
                              "\"interval_ms\":100}},"
                              "{\"name\":\"good_slow\",\"arguments\":{\"steps\":%d,"
                              "\"interval_ms\":120}}]}",
                              STEPS + 2, STEPS);
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url, "same-ids", args, NULL, &out), 0);
    json_t *sessions = json_object_get(out, "sessions");
    assert_int_equal(json_array_size(sessions), 2);
    json_t *to_evil = json_array_get(sessions, 0), *to_good = json_array_get(sessions, 1);
    const char *text = json_string_value(json_object_get(to_good, "text"));
    if (text == NULL || strcmp(text, "done after 10 steps") != 0)
        fail_msg("good_slow answered \"%s\"", text ? text : "(nothing)");
    assert_own_progress(to_good, "the session calling good");
    /* evil's own call hears its own progress, and not the forgeries
     * either: they name no call of evil's */
    json_t *evil_progress = json_object_get(to_evil, "progress");
    size_t i;
    json_t *p;
    json_array_foreach(evil_progress, i, p)
    {
        const char *msg = json_string_value(json_object_get(p, "message"));
        if (msg && strstr(msg, "forged"))
            fail_msg("the session calling evil heard a forged progress: %s", msg);
    }
    assert_int_equal(json_array_size(evil_progress), STEPS + 2);

    /* dropped, and counted against the upstream that sent them */
    char *murl = mx_xasprintf("http://127.0.0.1:%d/metrics", port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", murl, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    long long evil_drops = metric(body, "mcplex_upstream_notifications_dropped_total", "evil");
    long long good_drops = metric(body, "mcplex_upstream_notifications_dropped_total", "good");
    if (evil_drops < STEPS)
        fail_msg("evil's forged progress counted %lld times, want at least %d", evil_drops, STEPS);
    assert_int_equal(good_drops, 0);

    json_decref(out);
    free(body);
    free(murl);
    free(args);
    free(url);
    free(cfg_path);
    free(cfg);
    free(gs);
    free(es);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_progress_origin, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
