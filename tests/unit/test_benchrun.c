/* SPDX-License-Identifier: MIT */
/* What `mcplex bench` counts as a successful answer (mx_bench_rpc_ok). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "benchrun.h"

static void test_benchrun_rpc_ok_cases(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int64_t id;
        bool ok;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", 7, true},
        {"  \r\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"tools\":[]}}", 7, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", 7, false},     /* another id */
        {"{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}", 7, false}, /* a string id */
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601}}", 7, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":true}}", 7, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":false}}", 7, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":5}", 7, false}, /* not an object */
        {"", 7, false},
        {"not json", 7, false},
        {"{\"id\":7,\"result\":{}", 7, false}, /* cut short */
        /* SSE: a progress notification first, then the answer */
        {"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
         "event: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n",
         3, true},
        /* CRLF lines, no space after the colon, no final blank line */
        {"event: message\r\ndata:{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n", 3, true},
        /* one message over two data lines (joined with a newline) */
        {"data: {\"jsonrpc\":\"2.0\",\n"
         "data: \"id\":4,\"result\":{}}\n\n",
         4, true},
        /* a stream that never answers this id */
        {"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n", 4, false},
        {": a comment\n\n", 4, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = mx_bench_rpc_ok(cases[i].body, strlen(cases[i].body), cases[i].id);
        if (got != cases[i].ok)
            fail_msg("case %zu: got %d", i, got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_benchrun_rpc_ok_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
