/* SPDX-License-Identifier: MIT */
/*
 * The freshness hints of upstream lists (MCP 2026-07-28, Caching: ttlMs)
 * govern mcplex's list cache: two sandbox-sims behind /mcp, one that puts
 * ttlMs 700 on its lists and one that gives none (as 2025 servers do). A
 * client's tools/list within the hint is served from the cache (neither
 * upstream is asked); past it, the hinted upstream is listed again and the
 * other is not (its list stands until its list_changed). A stateless
 * client's list then carries a ttlMs no larger than what is left of the
 * hint.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define TTL_MS 700

struct world {
    char a_token[MX_IT_CANARY_SIZE];
    char b_token[MX_IT_CANARY_SIZE];
    int a_port;
    int b_port;
    char *url;
    char sid[128];
};

static void start_world(struct world *w)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->a_token, sizeof(w->a_token));
    mx_it_canary(w->b_token, sizeof(w->b_token));
    const char *a_args[] = {"--name", "hinted", "--list-ttl-ms", "700", NULL};
    const char *b_args[] = {"--name", "plain", NULL};
    assert_true(mx_it_start_sim("hinted", w->a_token, a_args, &w->a_port) > 0);
    assert_true(mx_it_start_sim("plain", w->b_token, b_args, &w->b_port) > 0);
    char *a_secret = mx_it_secret_file("a.secret", w->a_token);
    char *b_secret = mx_it_secret_file("b.secret", w->b_token);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.hinted]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.plain]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, w->a_port, a_secret, w->b_port, b_secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    free(cfg);
    free(cfg_path);
    free(a_secret);
    free(b_secret);
}

static char *post(const struct world *w, const char *const *extra, const char *body, long *status,
                  char **headers)
{
    const char *hdrs[8] = {"Content-Type: application/json",
                           "Accept: application/json, text/event-stream"};
    size_t n = 2;
    for (size_t i = 0; extra && extra[i] && n < 7; i++)
        hdrs[n++] = extra[i];
    hdrs[n] = NULL;
    char *resp = NULL;
    assert_int_equal(mx_it_http_full("POST", w->url, hdrs, body, 10000, status, headers, &resp), 0);
    return resp ? resp : mx_xstrdup("");
}

/* tools/list in the session; the number of tools listed. */
static size_t list_tools(const struct world *w)
{
    char sid_h[160];
    snprintf(sid_h, sizeof(sid_h), "Mcp-Session-Id: %s", w->sid);
    const char *extra[] = {sid_h, "MCP-Protocol-Version: 2025-11-25", NULL};
    long status = 0;
    char *r =
        post(w, extra, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &status, NULL);
    assert_int_equal(status, 200);
    const char *data = strstr(r, "data: ");
    json_t *msg = json_loads(data ? data + 6 : r, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(msg);
    size_t n = json_array_size(json_object_get(json_object_get(msg, "result"), "tools"));
    json_decref(msg);
    free(r);
    return n;
}

/* A stateless client's tools/list: its ttlMs. */
static json_int_t modern_ttl(const struct world *w)
{
    const char *extra[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list", NULL};
    long status = 0;
    char *r = post(w, extra,
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                   "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                   &status, NULL);
    assert_int_equal(status, 200);
    const char *data = strstr(r, "data: ");
    json_t *msg = json_loads(data ? data + 6 : r, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(msg);
    json_t *ttl = json_object_get(json_object_get(msg, "result"), "ttlMs");
    assert_true(json_is_integer(ttl));
    json_int_t v = json_integer_value(ttl);
    json_decref(msg);
    free(r);
    return v;
}

static void test_list_ttl_governs_the_cache(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    mx_it_open_session(w.url, "ttl-test", w.sid, sizeof(w.sid));
    size_t tools = list_tools(&w);
    assert_true(tools >= 10); /* both sims' tools (prefixed where they collide) */
    json_int_t a0 = mx_it_sim_method_count(w.a_port, w.a_token, "tools/list");
    json_int_t b0 = mx_it_sim_method_count(w.b_port, w.b_token, "tools/list");
    assert_true(a0 >= 1);
    assert_true(b0 >= 1);
    /* within the hint: from the cache, neither is asked */
    assert_int_equal(list_tools(&w), tools);
    assert_int_equal(mx_it_sim_method_count(w.a_port, w.a_token, "tools/list"), a0);
    assert_int_equal(mx_it_sim_method_count(w.b_port, w.b_token, "tools/list"), b0);
    /* past it: the hinted one is listed again, the other is not */
    usleep((TTL_MS + 300) * 1000);
    assert_int_equal(list_tools(&w), tools);
    assert_int_equal(mx_it_sim_method_count(w.a_port, w.a_token, "tools/list"), a0 + 1);
    assert_int_equal(mx_it_sim_method_count(w.b_port, w.b_token, "tools/list"), b0);
    /* and once more within the new hint: cached again */
    assert_int_equal(list_tools(&w), tools);
    assert_int_equal(mx_it_sim_method_count(w.a_port, w.a_token, "tools/list"), a0 + 1);
    /* a stateless client hears what is left of the smallest hint (the
     * unhinted upstream counts as 0) */
    assert_int_equal(modern_ttl(&w), 0);
    free(w.url);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_ttl_governs_the_cache, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
