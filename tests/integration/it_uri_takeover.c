/* SPDX-License-Identifier: MIT */
/*
 * No URI takeover. Two sandbox-sims behind /mcp: "victim" (conformance
 * mode) serves the template test://template/{id}/data, and "hostile"
 * lists the exact resource test://template/taken/data, which that
 * template matches, and answers its read with "claimed by hostile". A
 * listed URI must not silently beat another upstream's matching
 * template: a 2025 session's resources/read and resources/subscribe of
 * the claimed URI, and a 2026-07-28 stateless read of it, get the
 * ambiguity error (-32602) whose data names both servers, and the
 * hostile upstream is never asked. A URI only the template matches
 * still reaches the victim on both eras.
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

#define TEMPLATE "test://template/{id}/data"
#define CLAIMED  "test://template/taken/data"
#define OTHER    "test://template/42/data"

struct world {
    char victim_token[MX_IT_CANARY_SIZE];
    char hostile_token[MX_IT_CANARY_SIZE];
    int hostile_port;
    char *url;
    char sid[128];
};

static void start_world(struct world *w)
{
    int victim_port;
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->victim_token, sizeof(w->victim_token));
    mx_it_canary(w->hostile_token, sizeof(w->hostile_token));
    const char *victim_args[] = {"--conformance", "--name", "victim", NULL};
    const char *hostile_args[] = {"--name", "hostile", "--claim-uri", CLAIMED, NULL};
    assert_true(mx_it_start_sim("victim", w->victim_token, victim_args, &victim_port) > 0);
    assert_true(mx_it_start_sim("hostile", w->hostile_token, hostile_args, &w->hostile_port) > 0);
    char *vs = mx_it_secret_file("victim.secret", w->victim_token);
    char *hs = mx_it_secret_file("hostile.secret", w->hostile_token);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.victim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.hostile]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, victim_port, vs, w->hostile_port, hs);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    free(cfg);
    free(cfg_path);
    free(vs);
    free(hs);
}

/* POST |body| to /mcp with the request headers |extra| (NULL-terminated,
 * at most 4) into |a|, which must be JSON. */
static void post(const struct world *w, const char *const *extra, const char *body,
                 struct mx_it_answer *a)
{
    const char *hdrs[7] = {"Content-Type: application/json",
                           "Accept: application/json, text/event-stream"};
    size_t n = 2;
    for (size_t i = 0; extra && extra[i] && n < 6; i++)
        hdrs[n++] = extra[i];
    hdrs[n] = NULL;
    memset(a, 0, sizeof(*a));
    assert_int_equal(
        mx_it_http_full("POST", w->url, hdrs, body, 10000, &a->status, &a->headers, &a->body), 0);
    mx_it_answer_parse(a);
}

/* A request |method| with params |params| (JSON text) in the session. */
static void call25(const struct world *w, const char *method, const char *params,
                   struct mx_it_answer *a)
{
    char sid_h[160];
    snprintf(sid_h, sizeof(sid_h), "Mcp-Session-Id: %s", w->sid);
    const char *extra[] = {sid_h, "MCP-Protocol-Version: 2025-11-25", NULL};
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}",
                              method, params);
    post(w, extra, body, a);
    free(body);
    assert_int_equal(a->status, 200);
    if (a->msg == NULL)
        fail_msg("%s: not JSON: %s", method, a->body ? a->body : "(no body)");
}

/* A stateless 2026-07-28 resources/read of |uri|. */
static void read26(const struct world *w, const char *uri, struct mx_it_answer *a)
{
    char *name = mx_xasprintf("Mcp-Name: %s", uri);
    const char *extra[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: resources/read", name,
                           NULL};
    char *body = mx_xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"%s\","
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        uri);
    post(w, extra, body, a);
    free(body);
    free(name);
    assert_int_equal(a->status, 200);
    if (a->msg == NULL)
        fail_msg("2026 resources/read: not JSON: %s", a->body ? a->body : "(no body)");
}

/* Fail unless |a| is the ambiguity error for CLAIMED naming both servers,
 * and nothing of the hostile server's answer. */
static void assert_ambiguous(const struct mx_it_answer *a, const char *label)
{
    if (strstr(a->body, "claimed by"))
        fail_msg("%s: the hostile upstream took the URI over: %s", label, a->body);
    json_t *err = json_object_get(a->msg, "error");
    if (err == NULL)
        fail_msg("%s: no error: %s", label, a->body);
    assert_int_equal(mx_it_error_code(a), -32602);
    const char *msg = json_string_value(json_object_get(err, "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "Ambiguous resource URI"));
    json_t *data = json_object_get(err, "data");
    assert_string_equal(json_string_value(json_object_get(data, "uri")), CLAIMED);
    json_t *cands = json_object_get(data, "candidates");
    assert_int_equal(json_array_size(cands), 2);
    assert_true(mx_it_has_string(cands, "victim"));
    assert_true(mx_it_has_string(cands, "hostile"));
}

/* Fail unless |a| holds the victim's template data for id 42. */
static void assert_victim_data(const struct mx_it_answer *a, const char *label)
{
    json_t *r = json_object_get(a->msg, "result");
    if (r == NULL)
        fail_msg("%s: no result: %s", label, a->body);
    json_t *c = json_array_get(json_object_get(r, "contents"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "uri")), OTHER);
    const char *text = json_string_value(json_object_get(c, "text"));
    if (text == NULL || strstr(text, "Data for ID: 42") == NULL)
        fail_msg("%s: not the victim's data: %s", label, a->body);
}

/* The setup holds: the merged lists show the template and the claimed URI. */
static void assert_both_listed(const struct world *w)
{
    struct mx_it_answer a;
    size_t i;
    json_t *e;
    bool tpl = false, claimed = false;
    call25(w, "resources/templates/list", "{}", &a);
    json_array_foreach(json_object_get(mx_it_result(&a), "resourceTemplates"), i, e)
    {
        tpl = tpl || strcmp(json_string_value(json_object_get(e, "uriTemplate")), TEMPLATE) == 0;
    }
    mx_it_answer_clear(&a);
    call25(w, "resources/list", "{}", &a);
    json_array_foreach(json_object_get(mx_it_result(&a), "resources"), i, e)
    {
        claimed = claimed || strcmp(json_string_value(json_object_get(e, "uri")), CLAIMED) == 0;
    }
    mx_it_answer_clear(&a);
    assert_true(tpl);
    assert_true(claimed);
}

static void test_listed_uri_does_not_take_over_a_template(void **state)
{
    struct world w;
    struct mx_it_answer a;
    (void)state;
    start_world(&w);
    mx_it_open_session(w.url, "takeover-test", w.sid, sizeof(w.sid));
    assert_both_listed(&w);

    call25(&w, "resources/read", "{\"uri\":\"" CLAIMED "\"}", &a);
    assert_ambiguous(&a, "2025 resources/read");
    mx_it_answer_clear(&a);
    call25(&w, "resources/subscribe", "{\"uri\":\"" CLAIMED "\"}", &a);
    assert_ambiguous(&a, "2025 resources/subscribe");
    mx_it_answer_clear(&a);
    call25(&w, "resources/read", "{\"uri\":\"" OTHER "\"}", &a);
    assert_victim_data(&a, "2025 resources/read of another id");
    mx_it_answer_clear(&a);

    read26(&w, CLAIMED, &a);
    assert_ambiguous(&a, "2026-07-28 resources/read");
    mx_it_answer_clear(&a);
    read26(&w, OTHER, &a);
    assert_victim_data(&a, "2026-07-28 resources/read of another id");
    mx_it_answer_clear(&a);

    /* the claimed URI never reached the hostile upstream */
    assert_int_equal(mx_it_sim_method_count(w.hostile_port, w.hostile_token, "resources/read"), 0);
    free(w.url);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listed_uri_does_not_take_over_a_template, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
