/* SPDX-License-Identifier: MIT */
/*
 * Bounded lists. Behind /mcp: "good", a plain sandbox-sim, and "hoard", a
 * sandbox-sim whose tools/list never ends, every page one tool with a 4 MiB
 * description. mcplex keeps what fits of hoard's lists within max_list_bytes
 * (the default, 16 MiB), stops fetching, says so in /health and the log, and
 * good keeps serving. mcplex's memory stays bounded: its peak resident size
 * (VmHWM) grows by less than CAP_GROWTH over what it was before the lists
 * were fetched, where keeping every page would take hundreds of MiB. The
 * catalogue on disk obeys the same cap: restarted with a smaller
 * max_list_bytes for hoard, mcplex ignores the file it saved before.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define PAGE_BYTES (4 * 1024 * 1024)
#define CAP_BYTES  (16 * 1024 * 1024)
#define CAP_GROWTH (128LL * 1024 * 1024)

/* A "VmRSS:" or "VmHWM:" line of /proc/<pid>/status, in bytes; -1 if absent. */
static long long proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    long long v = -1;
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, strlen(field)) == 0) {
            v = strtoll(line + strlen(field), NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

/* hoard's entry of GET /health once its tools are in (its list fetch ended),
 * or NULL after |timeout_ms|. */
static json_t *hoard_health(const char *health_url, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 100) {
        long status = 0;
        char *body = NULL;
        if (mx_it_http("GET", health_url, NULL, NULL, &status, &body) == 0 && status == 200) {
            json_t *h = json_loads(body, 0, NULL);
            json_t *ups = json_object_get(json_object_get(h, "mcp"), "upstreams");
            size_t i;
            json_t *u;
            json_array_foreach(ups, i, u)
            {
                if (strcmp(json_string_value(json_object_get(u, "name")), "hoard") == 0 &&
                    json_object_get(u, "tools")) {
                    json_t *out = json_incref(u);
                    json_decref(h);
                    free(body);
                    return out;
                }
            }
            json_decref(h);
        }
        free(body);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void call_echo(const char *url, const char *message)
{
    char *args = mx_xasprintf("{\"name\":\"echo\",\"arguments\":{\"message\":\"%s\"}}", message);
    json_t *out = mx_it_client_ok(url, "call", args);
    const char *text = mx_it_result_text(out);
    if (text == NULL || strcmp(text, message) != 0)
        fail_msg("echo through good answered \"%s\"", text ? text : "(nothing)");
    json_decref(out);
    free(args);
}

/*
 * Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
 * default) before it is reused, which a sanitizer build of mcplex would
 * show as resident; keep it small so its RSS means the same as in a
 * normal build. Other programs ignore the variable.
 */
static void small_asan_quarantine(void)
{
    const char *old = getenv("ASAN_OPTIONS");
    char *v = mx_xasprintf("%s%squarantine_size_mb=4:thread_local_quarantine_size_kb=64",
                           old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", v, 1);
    free(v);
}

static void test_list_cap(void **state)
{
    (void)state;
    small_asan_quarantine();
    char good_token[MX_IT_CANARY_SIZE], hoard_token[MX_IT_CANARY_SIZE], page[16];
    int good_port, hoard_port;
    mx_it_canary(good_token, sizeof(good_token));
    mx_it_canary(hoard_token, sizeof(hoard_token));
    snprintf(page, sizeof(page), "%d", PAGE_BYTES);
    const char *good_args[] = {"--name", "good", NULL};
    const char *hoard_args[] = {"--name", "hoard", "--huge-pages", page, NULL};
    assert_true(mx_it_start_sim("good", good_token, good_args, &good_port) > 0);
    assert_true(mx_it_start_sim("hoard", hoard_token, hoard_args, &hoard_port) > 0);

    char *gs = mx_it_secret_file("good.secret", good_token);
    char *hs = mx_it_secret_file("hoard.secret", hoard_token);
    char *state_dir = mx_it_path("state");
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.good]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.hoard]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, state_dir, good_port, gs, hoard_port, hs);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    char *health_url = mx_xasprintf("http://127.0.0.1:%d/health", port);

    long long rss0 = proc_kb(mcplex, "VmRSS:"), hwm0 = proc_kb(mcplex, "VmHWM:");
    assert_true(rss0 > 0 && hwm0 > 0);
    /* the first client makes mcplex fetch every upstream's lists */
    call_echo(url, "first");
    json_t *h = hoard_health(health_url, 60000);
    if (h == NULL)
        fail_msg("hoard's list fetch did not end within 60 s");
    long long rss1 = proc_kb(mcplex, "VmRSS:"), hwm1 = proc_kb(mcplex, "VmHWM:");
    fprintf(stderr, "mcplex VmRSS %lld KiB -> %lld KiB, VmHWM %lld KiB -> %lld KiB\n", rss0 / 1024,
            rss1 / 1024, hwm0 / 1024, hwm1 / 1024);
    if (hwm1 - hwm0 >= CAP_GROWTH)
        fail_msg("mcplex's peak RSS grew by %lld MiB fetching hoard's lists (cap %lld MiB)",
                 (hwm1 - hwm0) >> 20, CAP_GROWTH >> 20);

    /* what fits is kept, and /health says the list was cut */
    json_int_t tools = json_integer_value(json_object_get(h, "tools"));
    if (tools < 1 || tools * PAGE_BYTES > CAP_BYTES)
        fail_msg("hoard kept %lld tools of %d bytes under a %d byte cap", (long long)tools,
                 PAGE_BYTES, CAP_BYTES);
    const char *why = json_string_value(json_object_get(json_object_get(h, "lists_cut"), "tools"));
    if (why == NULL || strstr(why, "max_list_bytes") == NULL)
        fail_msg("/health does not say why hoard's tools were cut: %s", why ? why : "(nothing)");
    json_decref(h);
    char *log = mx_it_path("mcplex.log");
    const char *paths[] = {log, NULL};
    assert_true(mx_it_scan_for(paths, "max_list_bytes", NULL) == 1);

    /* the others keep serving */
    call_echo(url, "second");

    /* a restart with a smaller cap does not read the catalogue saved under
     * the larger one */
    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(mcplex, 10000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *small = mx_xasprintf("%smax_list_bytes = 1048576\n", cfg);
    assert_int_equal(mx_it_write_file(cfg_path, small, strlen(small)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    char *log2 = mx_it_path("mcplex-2.log");
    const char *paths2[] = {log2, NULL};
    assert_true(mx_it_scan_for(paths2, "ignoring the catalogue", NULL) == 1);
    free(log2);
    free(small);

    free(log);
    free(health_url);
    free(url);
    free(cfg_path);
    free(cfg);
    free(state_dir);
    free(gs);
    free(hs);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_cap, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
